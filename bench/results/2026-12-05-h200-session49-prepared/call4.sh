#!/bin/bash
# Session 49, call 4 (H100): bench_programmable's block-sparse row, whose Flex block-mask build ran out of memory on
# the 80 GB card in call 1; bench_programmable now retries it with Flex's compiled builder (_compile=True).
# Prediction: the row completes, its Flex build marked "(compiled builder)"; flashc's forward and backward kernel ratios
# near the H200's (0.77 / 0.92 in session 41).
set -u
R=$OUT; mkdir -p $R
export FLASHC_DEVICE_WORK=/tmp/fd49
t0=$SECONDS
nvidia-smi --query-gpu=name --format=csv,noheader | tee $R/gpu.txt
OUT=$R/build timeout 150 scripts/device-bench.sh --steps build > $R/build.txt 2>&1
echo "build rc=$? ($((SECONDS-t0)) s)"
export FLASHC_RUNTIME_LIB=$PWD/build-dev/runtime/libflashc_runtime.so PYTHONPATH=$PWD/python
FLASHC_BUNDLE_PATH=$PWD/.carry/t48 FLASHC_CACHE_DIR=/tmp/mc49 timeout 300 python3 bench/bench_programmable.py \
  --rows block_sparse --lead-us auto --kernel-times 5 --out $R/bp > $R/bp.log 2>&1
echo "bench_programmable rc=$? ($((SECONDS-t0)) s)"; grep "^| " $R/bp/bench_programmable.md 2>/dev/null
grep -i "error\|Traceback" $R/bp.log | head -5
rm -rf $R/build
