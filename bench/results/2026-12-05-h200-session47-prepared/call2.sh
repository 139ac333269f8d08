#!/bin/bash
# Session 47, call 2: the tuner over the attention grid (issue #19) at f1ed0cc's kernels, the first run over the whole
# grid since the backward's consumers take turns (session 41) and their form became a point (`ping_pong`, session 42);
# session 38 was the last grid run of the forwards.
# Plan, built here: PYTHONPATH=python python3 -m flashc.tune plan --compiler <f1ed0cc's flashc> \
#   --kinds attention_forward,attention_backward --out .carry/tune47 tune-attention
#   (12 configurations, 24 keys, 378 bundles, 332 s here; FLASHC_DEVICE_INCLUDE = f1ed0cc's device library). The 28
#   dq_fill=zero_ahead points are still in it: they are measured once more, then gone with the form.
# Carry: .carry/src47.tgz, .carry/tune47.
# Predictions (written before the run): every candidate passes its float64 check; the table keeps session 38's
# forward entries (192 keys above 1-4k, within 1 %); the backward keys with two stages take turns by the hand rule
# already, so the grid finds at most 1-3 % there (the ping_pong=0 points behind, as session 41 measured); #19's count
# stays 10-12 of 72 rows >= 5 %; about 15-20 s of GPU time a configuration.
set -u
ROOT=$PWD; R=$OUT; mkdir -p $R /tmp/s47
[ -d /tmp/s47/scripts ] || tar -xzf .carry/src47.tgz -C /tmp/s47 || exit 1
cd /tmp/s47
export FLASHC_COMMIT=f1ed0cc FLASHC_DEVICE_WORK=/tmp/fd2
t0=$SECONDS
[ -f $ROOT/.carry/tune47/progress.jsonl ] && echo "resuming: $(wc -l < $ROOT/.carry/tune47/progress.jsonl) tasks done"
OUT=$R timeout 570 scripts/device-bench.sh --steps build,tune --tune-plan $ROOT/.carry/tune47 --tune-args "--budget 470" \
  > $R/tune.txt 2>&1
echo "tune rc=$? ($((SECONDS-t0)) s)"; tail -25 $R/tune.txt
