#!/bin/bash
# Session 47, call 6: calls 4 and 5 in one call, as the device budget left allows (~14 min with a cold start):
# the runtime build, the runtime's GPU ctest (not the Python GPU tests: python/ and runtime/ are unchanged since
# session 44's suite passed; segment_plan_test changed), device-bench's `run` over the 160 bundles (second size
# poisoned), then the tuner over the backward keys for what is left of the call. Predictions: call4.sh's, call5.sh's.
# Carry: .carry/t47b, .carry/tune47b.
set -u
R=$OUT; mkdir -p $R
export FLASHC_DEVICE_WORK=/tmp/fd
t0=$SECONDS
OUT=$R/suite timeout 150 scripts/device-bench.sh .carry/t47b --steps build > $R/build.txt 2>&1
echo "build rc=$? ($((SECONDS-t0)) s)"
timeout 120 ctest --test-dir build-dev -E python --output-on-failure > $R/ctest.txt 2>&1
echo "ctest rc=$? ($((SECONDS-t0)) s)"; grep -E "tests passed|tests failed|Failed|Not Run|Skipped|\*\*\*" $R/ctest.txt | head -20
OUT=$R/suite timeout 260 scripts/device-bench.sh .carry/t47b --steps run > $R/run.txt 2>&1
echo "run rc=$? ($((SECONDS-t0)) s)"; grep -E "^=== |FAILED" $R/run.txt | head -20
grep -h "checks, " /tmp/fd/logs/flashc_run/*.log 2>/dev/null | awk '{c+=$1; f+=$3} END {print "flashc-run: " c " checks, " f " failed"}'
grep -c "poison" /tmp/fd/logs/flashc_run/*.log 2>/dev/null | awk -F: '{s+=$2} END {print "poisoned-scratch lines: " s}'
tar -czf $R/fd-logs.tgz -C /tmp/fd logs 2>/dev/null
left=$((585 - SECONDS + t0 - 40))
[ $left -gt 45 ] || { echo "no time left for the tuner"; exit 0; }
FLASHC_DEVICE_WORK=/tmp/fd2 OUT=$R timeout $((left + 30)) scripts/device-bench.sh --steps tune --tune-plan .carry/tune47b \
  --tune-args "--budget $left" > $R/tune.txt 2>&1
echo "tune rc=$? budget $left s ($((SECONDS-t0)) s)"; tail -12 $R/tune.txt
