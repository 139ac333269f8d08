#!/bin/bash
# Session 47, call 3: calls 1 and 2 in one (device starts kept failing; one call must hold what matters most):
# the GPU suite at f1ed0cc (ctest: runtime GPU tests, gpu.generated_kernels, gpu.segment_plan_test, the Python GPU
# tests), then the tuner over the attention grid for the rest of the call (resumable: progress.jsonl comes back).
# Predictions: call1.sh's and call2.sh's. Carry: .carry/src47.tgz, .carry/t47, .carry/tune47.
set -u
ROOT=$PWD; R=$OUT; mkdir -p $R /tmp/s47
[ -d /tmp/s47/scripts ] || tar -xzf .carry/src47.tgz -C /tmp/s47 || exit 1
cd /tmp/s47
export FLASHC_COMMIT=f1ed0cc FLASHC_DEVICE_WORK=/tmp/fd
t0=$SECONDS
OUT=$R/suite timeout 300 scripts/device-bench.sh $ROOT/.carry/t47 --steps build,test > $R/suite.txt 2>&1
echo "suite rc=$? ($((SECONDS-t0)) s)"; grep -E "^=== |tests passed|tests failed|FAILED|Failed|SKIP|skipped" $R/suite.txt | head -40
tar -czf $R/fd-logs.tgz -C /tmp/fd logs 2>/dev/null
left=$((560 - SECONDS + t0 - 30))
FLASHC_DEVICE_WORK=/tmp/fd2 OUT=$R timeout $((left + 25)) scripts/device-bench.sh --steps build,tune --tune-plan $ROOT/.carry/tune47 \
  --tune-args "--budget $left" > $R/tune.txt 2>&1
echo "tune rc=$? budget $left s ($((SECONDS-t0)) s)"; tail -15 $R/tune.txt
