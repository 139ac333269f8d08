#!/bin/bash
# Session 48, call 5: the attention grid's 12 forward keys through the tuner (item 4 of session 47's prepared list;
# last tuned in session 38, on the H200), plan .carry/tune48 (220 bundles; remade with HEAD's
# compiler at the end of session 48). Predicted: the entries of sessions 36-38 confirmed (their keys' best points within 2 % of the
# table's), no new entry above the 2 % margin: the forward spaces were exhausted in session 38.
set -u
R=$OUT; mkdir -p $R
export FLASHC_DEVICE_WORK=/tmp/fd5
t0=$SECONDS
nvidia-smi --query-gpu=name --format=csv,noheader
OUT=$R timeout 120 scripts/device-bench.sh --steps build > $R/build.txt 2>&1
echo "build rc=$? ($((SECONDS-t0)) s)"
left=$((500 - SECONDS + t0))
OUT=$R timeout $((left + 40)) scripts/device-bench.sh --steps tune --tune-plan .carry/tune48 --tune-args "--budget $left" \
  > $R/tune.txt 2>&1
echo "tune rc=$? budget $left s ($((SECONDS-t0)) s)"; tail -15 $R/tune.txt
rm -f $R/device-logs.tgz
