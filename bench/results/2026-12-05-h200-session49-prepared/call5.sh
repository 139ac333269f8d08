#!/bin/bash
# Session 49, call 5 (H100): the runtime's new argument checks (90796f6: outputs with stride 0 refused, sizes bounded
# in bytes, num_sms bound before the expressions, files read as regular files only, variants compared) under the
# whole GPU suite: ctest (the runtime's GPU tests and the Python GPU tests, which launch every kind of program through
# flashc.torch) on the carried bundles (.carry/t48, 4a5318e's compiler: the runtime checks them at open and launch).
# Prediction: everything passes as in session 48 call 3 (no caller passes an output broadcast or a size past 2^60).
set -u
R=$OUT; mkdir -p $R
export FLASHC_DEVICE_WORK=/tmp/fd49
t0=$SECONDS
nvidia-smi --query-gpu=name --format=csv,noheader | tee $R/gpu.txt
OUT=$R/build timeout 150 scripts/device-bench.sh .carry/t48 --steps build > $R/build.txt 2>&1
echo "build rc=$? ($((SECONDS-t0)) s)"
export FLASHC_BUNDLE_PATH=$PWD/.carry/t48 FLASHC_RUNTIME_LIB=$PWD/build-dev/runtime/libflashc_runtime.so \
  PYTHONPATH=$PWD/python FLASHC_CACHE_DIR=/tmp/mc49
left=$((420 - SECONDS + t0))
timeout $left ctest --test-dir build-dev --output-on-failure > $R/ctest.txt 2>&1
echo "ctest rc=$? ($((SECONDS-t0)) s)"; grep -E "tests passed|tests failed|Failed|\*\*\*|Not Run" $R/ctest.txt | head -20
grep -E "^(FAIL|ERROR)|Error|error:" $R/ctest.txt | head -15
rm -rf $R/build
