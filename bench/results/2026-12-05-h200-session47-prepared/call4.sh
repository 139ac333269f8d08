#!/bin/bash
# Session 47, call 4: the GPU suite at the tree after the deletion (ctest: runtime GPU tests, gpu.segment_plan_test,
# the Python GPU tests; gpu.generated_kernels needs flashc and runs only in a full build), then device-bench's `run`
# step over the `tests` and `bench-programmable` bundles built at that tree, its second size now with every program's
# scratch NaN-poisoned (--poison-scratch). Run from the repository root. Carry: .carry/t47b (160 bundles).
# Predictions: ctest all pass (segment_plan_test's first run: the documents' order against the CPU); flashc-run
# every check passes, poisoned included (session 46: the 46 bundles that kept the fill passed poisoned; the other 75
# ran the zero-ahead form then, so their default programs meet poisoned scratch here for the first time).
set -u
R=$OUT; mkdir -p $R
export FLASHC_DEVICE_WORK=/tmp/fd
t0=$SECONDS
OUT=$R/suite timeout 560 scripts/device-bench.sh .carry/t47b --steps build,test,run > $R/suite.txt 2>&1
echo "suite rc=$? ($((SECONDS-t0)) s)"; grep -E "^=== |tests passed|tests failed|FAILED|Failed|SKIP|skipped" $R/suite.txt | head -40
grep -h "checks, " /tmp/fd/logs/flashc_run/*.log 2>/dev/null | awk '{c+=$1; f+=$3} END {print "flashc-run: " c " checks, " f " failed"}'
tar -czf $R/fd-logs.tgz -C /tmp/fd logs 2>/dev/null
