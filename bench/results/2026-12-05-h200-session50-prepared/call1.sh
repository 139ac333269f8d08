#!/bin/bash
# Session 50, call 1 (needs_h200: the benchmark's GPU; sessions 47-49 got only H100s): #16's rows and the two bf16
# D = 64 backward keys at 64a0b8b (session 49's call 3, never run), then the runtime's ctest on the commits after
# session 49's last GPU run (the deferred-check loop, the variant comparison). Carried: .carry/t48 (4a5318e's
# bundles; no kernel changed since) and .carry/tune49b64.
# Predictions (H200): bench_programmable backward kernels window ~0.78-0.79, prefix-LM ~0.73, document ~0.71, ALiBi
# ~0.69-0.71, forwards <= 0.70; d64 none's turns 1.02-1.05x; d64 causal's turns within 2 % of the hand rule at every
# size (three runs disagree at 16k: 1.04, 1.04, 0.96); ctest 21/21.
set -u
R=$OUT; mkdir -p $R
export FLASHC_DEVICE_WORK=/tmp/fd50
t0=$SECONDS
nvidia-smi --query-gpu=name,clocks.max.sm,memory.total --format=csv > $R/gpu.txt 2>&1; cat $R/gpu.txt
OUT=$R/build timeout 150 scripts/device-bench.sh --steps build > $R/build.txt 2>&1
echo "build rc=$? ($((SECONDS-t0)) s)"
(cd build-dev && timeout 120 ctest --output-on-failure > $R/ctest.txt 2>&1); echo "ctest rc=$? ($((SECONDS-t0)) s)"
tail -3 $R/ctest.txt
export FLASHC_RUNTIME_LIB=$PWD/build-dev/runtime/libflashc_runtime.so PYTHONPATH=$PWD/python
FLASHC_BUNDLE_PATH=$PWD/.carry/t48 FLASHC_CACHE_DIR=/tmp/mc50 timeout 220 python3 bench/bench_programmable.py \
  --lead-us auto --kernel-times 5 --out $R/bp > $R/bp.log 2>&1
echo "bench_programmable rc=$? ($((SECONDS-t0)) s)"; grep "^| " $R/bp/bench_programmable.md 2>/dev/null | cut -d'|' -f1-8
FLASHC_DEVICE_WORK=/tmp/fd50b OUT=$R/b64 timeout 120 scripts/device-bench.sh --steps tune --tune-plan .carry/tune49b64 \
  --tune-args "--budget 90" > $R/b64.txt 2>&1
echo "tune b64 rc=$? ($((SECONDS-t0)) s)"; grep "^sm_90a" $R/b64.txt
rm -f $R/*/device-logs.tgz
tar -czf $R/call1.tgz -C $R --exclude=call1.tgz . 2>/dev/null
find $R -type f ! -name call1.tgz ! -name gpu.txt -delete
