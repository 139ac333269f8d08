#!/bin/bash
# Session 47, call 1: the default path's GPU suite at f1ed0cc (the tree before session 47's deletion of the losing
# dQ-fill forms; the default kernels' emitted CUDA and cubins are byte-identical before and after it), its sanitizers,
# and #16's rows on the H200 as they stand.
# Carry: .carry/src47.tgz (git archive of f1ed0cc without bench/results), .carry/t47 (the `tests`
# and `bench-programmable` bundle sets built at f1ed0cc).
# Predictions (written before the run):
#  - ctest (runtime GPU tests, gpu.generated_kernels, gpu.segment_plan_test, the Python GPU tests): all pass; the
#    suite has not run since session 44 on the default kernels, and segment_plan_test never ran.
#  - compute-sanitizer memcheck / racecheck / synccheck on device-bench's representative bundles: 0 errors.
#  - bench_programmable --kernel-times 5 (H200): forwards <= 0.70 x Flex on every row; backwards window ~0.78-0.79,
#    prefix-LM ~0.73, document ~0.71, ALiBi ~0.69-0.71 (session 46: 0.714 document).
set -u
ROOT=$PWD; R=$OUT; mkdir -p $R /tmp/s47
tar -xzf .carry/src47.tgz -C /tmp/s47 && cd /tmp/s47 || exit 1
export FLASHC_COMMIT=f1ed0cc FLASHC_DEVICE_WORK=/tmp/fd
t0=$SECONDS
OUT=$R/suite timeout 430 scripts/device-bench.sh $ROOT/.carry/t47 --steps build,test,sanitize > $R/suite.txt 2>&1
echo "suite rc=$? ($((SECONDS-t0)) s)"; grep -E "^=== |tests passed|tests failed|FAILED|Skipped|SKIP" $R/suite.txt | head -40
export FLASHC_RUNTIME_LIB=$PWD/build-dev/runtime/libflashc_runtime.so PYTHONPATH=$PWD/python
FLASHC_BUNDLE_PATH=$ROOT/.carry/t47 FLASHC_CACHE_DIR=/tmp/mc47 timeout 200 python3 bench/bench_programmable.py \
  --lead-us auto --kernel-times 5 --out $R/bp > $R/bp.log 2>&1
echo "bench_programmable rc=$? ($((SECONDS-t0)) s)"; grep "^| " $R/bp/bench_programmable.md 2>/dev/null | cut -d'|' -f1-9
tar -czf $R/fd-logs.tgz -C /tmp/fd logs 2>/dev/null
