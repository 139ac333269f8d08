#!/bin/bash
# Session 57, call 1. (a) The wide key block for a forward whose mask modifier reads indices alone (new tuning points:
# prefix-LM's forward, 192 keys, its element mask column by column): the tuner's GPU half over the prefix-LM row's
# forward key (`.carry/tunep`: `flashc.tune plan --kinds attention_forward --seqs 1024,4096,16384 --tokens 16384`
# over bench_programmable's prefix-LM configuration, 21 candidates). (b) Session 56's unrun checks
# (next-call1.sh): the sanitizers over `prebuild all` at HEAD (.carry/t57), then the four Python GPU suites whose
# float64 references now refuse short modifier tables.
# (c) On an H200, bench_programmable (#16's rows; predicted from session 50's H200 rows and the H100's changes since:
# backward kernels window ~0.75, document ~0.68, ALiBi ~0.69, prefix-LM ~0.70; forwards <= 0.70).
# Predictions: every candidate passes its float64 check; the 192-key points (ping-pong) 1.08-1.14x the hand rule
# (128 keys) at 16k keys, 1.03-1.08x at 4k (fully visible there: the unmasked row's wide-block gain), 0.94-0.98x at
# 1k, so the tuner splits the key at 1k or 4k keys; sanitize 0 errors, 0 hazards; the four suites OK.
set -u
R=$OUT; mkdir -p $R
t0=$SECONDS
[ -d .carry/t57 ] || tar -xJf .carry/t57.tar.xz -C .carry
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader > $R/gpu.txt 2>&1; cat $R/gpu.txt
OUT=$R/tp timeout 220 scripts/device-bench.sh .carry/t57 --steps build,tune --tune-plan .carry/tunep \
  --tune-args "--budget 170" > $R/tune.txt 2>&1
echo "build,tune rc=$? ($((SECONDS-t0)) s)"; tail -5 $R/tune.txt
grep -E "^\| " $R/tp/tune/tune-report.md 2>/dev/null | head -30
OUT=$R/suite timeout 150 scripts/device-bench.sh .carry/t57 --steps test \
  --tests "test_gpu_attention.py test_gpu_key_offset.py test_gpu_compile.py test_gpu_ring.py" > $R/pytests.txt 2>&1
echo "python suites rc=$? ($((SECONDS-t0)) s)"; grep -E "^=== .*exit" $R/pytests.txt
grep -hE "^(FAIL|ERROR):" /tmp/flashc-device/logs/python_*.log 2>/dev/null | head -10
OUT=$R/san timeout 180 scripts/device-bench.sh .carry/t57 --steps sanitize > $R/san.txt 2>&1
echo "sanitize rc=$? ($((SECONDS-t0)) s)"; grep -E "^=== .*exit|FAILED" $R/san.txt | head
# #16's rows on the benchmark's GPU (none since session 50), if an H200 came: the default kernels, but the prefix-LM
# row's forward in the candidate wide key block (.carry/t57w: `prebuild --tuning-table tuning-wide-prefix.txt
# bench-programmable`, the built-in table and one line for `none+indexmod`); the tune step above is its A/B.
left=$((585 - (SECONDS - t0)))
if grep -q H200 $R/gpu.txt && [ $left -ge 200 ]; then
  FLASHC_BUNDLE_PATH=$PWD/.carry/t57w FLASHC_CACHE_DIR=/tmp/mc57 timeout $left python3 bench/bench_programmable.py \
    --lead-us auto --kernel-times 5 --out $R/bp > $R/bp.log 2>&1
  echo "bench_programmable rc=$? ($((SECONDS-t0)) s)"; grep "^| " $R/bp/bench_programmable.md 2>/dev/null | cut -d'|' -f1-8
fi
rm -f $R/*/device-logs.tgz
