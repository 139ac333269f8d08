#!/bin/bash
# For the next session's first GPU call. Session 56 changed, without a GPU run after the last of them:
#   - the float64 references (flashc.testing.attention_reference) now refuse a modifier table shorter than the index
#     it is read at: the Python GPU suites that use them (attention, key offset, compile, ring) have not run since;
#   - attention_fwd_ws_body keeps the key offset opaque (calls 7-8 ran its two modifier bundles, not the rest).
# This runs the sanitizers and those suites on `prebuild all` at HEAD, then on an H200 #16's rows (bench_programmable;
# no kernel of theirs changed since session 55, whose H100 rows stand), on an H100 the run step over every bundle.
# Before: rm -rf .carry/t57 && PYTHONPATH=python python3 -m flashc.prebuild --out .carry/t57 all
#         && (cd .carry && tar -cJf t57.tar.xz t57)        [carry .carry/t57.tar.xz; ~5 minutes here]
# Predictions: sanitize 0 errors, 0 hazards; the four suites OK; bench_programmable (H200) backward kernels window
# ~0.75, document ~0.68, ALiBi ~0.69, prefix-LM ~0.70, forwards <= 0.70; flashc-run (H100) 0 failed.
set -u
R=$OUT; mkdir -p $R
t0=$SECONDS
[ -d .carry/t57 ] || tar -xJf .carry/t57.tar.xz -C .carry
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader > $R/gpu.txt 2>&1; cat $R/gpu.txt
OUT=$R/san timeout 200 scripts/device-bench.sh .carry/t57 --steps build,sanitize > $R/san.txt 2>&1
echo "build,sanitize rc=$? ($((SECONDS-t0)) s)"; grep -E "^=== .*exit|FAILED" $R/san.txt | head
OUT=$R/suite timeout 200 scripts/device-bench.sh .carry/t57 --steps test \
  --tests "test_gpu_attention.py test_gpu_key_offset.py test_gpu_compile.py test_gpu_ring.py" > $R/pytests.txt 2>&1
echo "python suites rc=$? ($((SECONDS-t0)) s)"; grep -E "^=== .*exit" $R/pytests.txt
grep -hE "^(FAIL|ERROR):" /tmp/flashc-device/logs/python_*.log 2>/dev/null | head -10
left=$((570 - (SECONDS - t0)))
if grep -q H200 $R/gpu.txt && [ $left -ge 200 ]; then
  FLASHC_BUNDLE_PATH=$PWD/.carry/t57 FLASHC_CACHE_DIR=/tmp/mc57 timeout $left python3 bench/bench_programmable.py \
    --lead-us auto --kernel-times 5 --out $R/bp > $R/bp.log 2>&1
  echo "bench_programmable rc=$? ($((SECONDS-t0)) s)"; grep "^| " $R/bp/bench_programmable.md 2>/dev/null | cut -d'|' -f1-8
elif [ $left -ge 150 ]; then
  OUT=$R/rs timeout $left scripts/device-bench.sh .carry/t57 --steps run > $R/run.txt 2>&1
  echo "run rc=$? ($((SECONDS-t0)) s)"; grep -E "^=== .*exit|FAILED" $R/run.txt | head
else
  echo "nothing more ($left s left)"
fi
rm -f $R/*/device-logs.tgz
