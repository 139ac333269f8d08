#!/bin/bash
# Session 47, call 5: the tuner over the attention grid (#19), call2.sh's plan and predictions, from the repository
# root (the kernels are f1ed0cc's, the same code as the tree's: the plan's cubins came from f1ed0cc's device library).
# Carry: .carry/tune47 (a progress.jsonl in it is resumed).
set -u
R=$OUT; mkdir -p $R
t0=$SECONDS
FLASHC_DEVICE_WORK=/tmp/fd2 OUT=$R timeout 580 scripts/device-bench.sh --steps build,tune --tune-plan .carry/tune47 \
  --tune-args "--budget 500" > $R/tune.txt 2>&1
echo "tune rc=$? ($((SECONDS-t0)) s)"; tail -15 $R/tune.txt
