#!/bin/bash
# Session 47, call 7: gpu.segment_plan_test again after its fix (call 6: the first case's buffers were allocated
# before any context existed, "null data pointer"; the test now prepares the bundle first), and the backward keys'
# tuner again with its table and progress packed into one file (call 6's came back as the log only: the device tool
# returns at most 8 files). Prediction: segment_plan_test passes all 17 checks; the tuner writes call 6's two D = 64
# entries again (ping_pong=1 at 128 queries a step, 1.03-1.05x) or drops them below its margin.
set -u
R=$OUT; mkdir -p $R
t0=$SECONDS
OUT=$R/b timeout 150 scripts/device-bench.sh --steps build > $R/build.txt 2>&1; echo "build rc=$? ($((SECONDS-t0)) s)"; rm -rf $R/b
timeout 60 ctest --test-dir build-dev -R segment_plan --output-on-failure > $R/ctest.txt 2>&1
echo "segment_plan_test rc=$?"; tail -5 $R/ctest.txt
mkdir -p /tmp/t7
FLASHC_DEVICE_WORK=/tmp/fd3 OUT=/tmp/t7 timeout 300 scripts/device-bench.sh --steps tune --tune-plan .carry/tune47b \
  --tune-args "--budget 240" > /tmp/t7/tune.txt 2>&1
echo "tune rc=$? ($((SECONDS-t0)) s)"; grep -E "^sm_90a" /tmp/t7/tune.txt | head -14
tar -czf $R/tune.tgz -C /tmp/t7 .
