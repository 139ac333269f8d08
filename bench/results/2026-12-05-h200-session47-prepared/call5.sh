#!/bin/bash
# Session 47, call 5: the tuner over the attention grid's backward keys (#19), from the repository root. The device
# budget left after call 4 holds the backward half of call2.sh's plan only: the backward keys were last tuned over the
# grid in session 36, before the consumers took turns (session 41) and their form became a point (session 42); the
# forwards were tuned in session 38. Plan, built here at the tree (no zero-ahead points left):
#   PYTHONPATH=python python3 -m flashc.tune plan --compiler build/bin/flashc --kinds attention_backward \
#     --out .carry/tune47b tune-attention       (12 configurations, 12 keys, 142 bundles, 95 s here)
# Predictions: call2.sh's (the hand rules hold within 1-3 %; #19's count stays 10-12 of 72).
# Carry: .carry/tune47b (a progress.jsonl in it is resumed).
set -u
R=$OUT; mkdir -p $R
t0=$SECONDS
FLASHC_DEVICE_WORK=/tmp/fd2 OUT=$R timeout 580 scripts/device-bench.sh --steps build,tune --tune-plan .carry/tune47b \
  --tune-args "--budget 500" > $R/tune.txt 2>&1
echo "tune rc=$? ($((SECONDS-t0)) s)"; tail -15 $R/tune.txt
