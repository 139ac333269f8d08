#!/bin/bash
# call1.sh cut to what a short lease holds (the session's device time ran down in failed starts): the tuner's GPU
# half over the prefix-LM forward's key (.carry/tunep), then the four Python GPU suites if time is left.
# Predictions as call1.sh's.
set -u
R=$OUT; mkdir -p $R
t0=$SECONDS
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader > $R/gpu.txt 2>&1; cat $R/gpu.txt
[ -d .carry/t57 ] || tar -xJf .carry/t57.tar.xz -C .carry
OUT=$R/tp timeout 170 scripts/device-bench.sh .carry/t57 --steps build,tune --tune-plan .carry/tunep \
  --tune-args "--budget 120" > $R/tune.txt 2>&1
echo "build,tune rc=$? ($((SECONDS-t0)) s)"; tail -4 $R/tune.txt
grep -E "^\| " $R/tp/tune/tune-report.md 2>/dev/null | head -30
left=$((230 - (SECONDS - t0)))
[ $left -ge 40 ] && OUT=$R/suite timeout $left scripts/device-bench.sh .carry/t57 --steps test \
  --tests "test_gpu_attention.py test_gpu_key_offset.py test_gpu_compile.py test_gpu_ring.py" > $R/pytests.txt 2>&1
echo "python suites rc=$? ($((SECONDS-t0)) s)"; grep -E "^=== .*exit" $R/pytests.txt 2>/dev/null
grep -hE "^(FAIL|ERROR):" /tmp/flashc-device/logs/python_*.log 2>/dev/null | head -10
rm -f $R/*/device-logs.tgz
