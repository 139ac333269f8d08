#!/bin/bash
# For the next session's first GPU call (session 55 ran out of device time): the sanitizers over the compiled bundles
# with the staged dK / dV epilogue (ed7bfd1; the lab's racecheck / synccheck passed, the compiled kernels have not been
# under the sanitizers), the attention GPU suite (test_gpu_attention: a document-id table shorter than the sequence is
# now a launch error), then on an H200 #16's rows (bench_programmable, kernel times), on an H100 the run step over
# every bundle instead.
# Before: rm -rf .carry/t55b .carry/t55b.tar.xz && PYTHONPATH=python python3 -m flashc.prebuild --out .carry/t55b all
#         && (cd .carry && tar -cJf t55b.tar.xz t55b && rm -rf t55b)        [carry .carry/t55b.tar.xz]
# Predictions: sanitize 0 errors, 0 hazards; test_gpu_attention OK; bench_programmable (H200) backward kernels window
# ~0.75, document ~0.68, ALiBi ~0.69, prefix-LM ~0.70, forwards <= 0.70; flashc-run (H100) 0 failed.
set -u
R=$OUT; mkdir -p $R
t0=$SECONDS
[ -d .carry/t55b ] || tar -xJf .carry/t55b.tar.xz -C .carry
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader > $R/gpu.txt 2>&1; cat $R/gpu.txt
OUT=$R/san timeout 200 scripts/device-bench.sh .carry/t55b --steps build,sanitize > $R/san.txt 2>&1
echo "build,sanitize rc=$? ($((SECONDS-t0)) s)"; grep -E "^=== .*exit|FAILED" $R/san.txt | head
OUT=$R/suite timeout 120 scripts/device-bench.sh .carry/t55b --steps test --tests "test_gpu_attention.py" > $R/pytests.txt 2>&1
echo "test_gpu_attention rc=$? ($((SECONDS-t0)) s)"; grep -E "^=== .*exit" $R/pytests.txt
grep -hE "^(FAIL|ERROR):" /tmp/flashc-device/logs/python_*.log 2>/dev/null | head -10
left=$((570 - (SECONDS - t0)))
if grep -q H200 $R/gpu.txt && [ $left -ge 200 ]; then
  FLASHC_BUNDLE_PATH=$PWD/.carry/t55b FLASHC_CACHE_DIR=/tmp/mc56 timeout $left python3 bench/bench_programmable.py \
    --lead-us auto --kernel-times 5 --out $R/bp > $R/bp.log 2>&1
  echo "bench_programmable rc=$? ($((SECONDS-t0)) s)"; grep "^| " $R/bp/bench_programmable.md 2>/dev/null | cut -d'|' -f1-8
elif [ $left -ge 180 ]; then
  OUT=$R/rs timeout $left scripts/device-bench.sh .carry/t55b --steps run > $R/run.txt 2>&1
  echo "run rc=$? ($((SECONDS-t0)) s)"; grep -E "^=== .*exit|FAILED" $R/run.txt | head
else
  echo "nothing more ($left s left)"
fi
rm -f $R/*/device-logs.tgz
