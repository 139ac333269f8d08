#!/bin/bash
# Session 50, call 4 (any GPU): call 3's one failure was the message's subject (the output named first, the workspace
# second); checkCallerOverlaps now names the workspace first. ctest again. Prediction: 22/22.
set -u
R=$OUT; mkdir -p $R
t0=$SECONDS
nvidia-smi --query-gpu=name --format=csv,noheader > $R/gpu.txt 2>&1; cat $R/gpu.txt
OUT=$R/build timeout 150 scripts/device-bench.sh .carry/t48 --steps build > $R/build.txt 2>&1
echo "build rc=$? ($((SECONDS-t0)) s)"
(cd build-dev && timeout 150 ctest --output-on-failure > $R/ctest.txt 2>&1); echo "ctest rc=$? ($((SECONDS-t0)) s)"
grep -E "tests passed|Failed|FAIL" $R/ctest.txt | head -10
rm -rf $R/build
