#!/bin/bash
# Session 50, call 6 (any GPU): the second review's fixes: a context is dead only when cuCtxGetId says destroyed /
# invalid or gives another ID (a sticky fault leaves it alive); a dead context's code is no longer erased while
# another thread may hold it. ctest again (runtime_context_test covers the reset and re-created contexts).
# Prediction: 22/22.
set -u
R=$OUT; mkdir -p $R
t0=$SECONDS
nvidia-smi --query-gpu=name --format=csv,noheader > $R/gpu.txt 2>&1; cat $R/gpu.txt
OUT=$R/build timeout 150 scripts/device-bench.sh --steps build > $R/build.txt 2>&1
echo "build rc=$? ($((SECONDS-t0)) s)"
(cd build-dev && timeout 120 ctest --output-on-failure > $R/ctest.txt 2>&1); echo "ctest rc=$? ($((SECONDS-t0)) s)"
grep -E "tests passed|Failed|FAIL" $R/ctest.txt | head -10
rm -rf $R/build
