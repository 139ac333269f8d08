#!/bin/bash
# Session 45, second device call (prepared): the tuner over the document row's forward and backward keys with the
# segment form's order a dimension (each warp-specialised one-tile-a-block point in the segment form, in it longest
# first, and with the table walk): `PYTHONPATH=python python3 -m flashc.tune plan --out .carry/tune45 --kinds
# attention_forward,attention_backward --seqs 16384 "<bench-programmable's document config text>"`. carry:
# [".carry/tune45"]. Every point is checked against float64 before it is timed (the longest-first plans' check on a
# ragged size). Resumable: carry the progress back into the plan directory. Winners go into
# compiler/tuning/sm_90a.txt with `flashc.tune table --write`; if the longest-first points win every row they become
# the hand rule instead (docs/tuning.md, "A default is what ran"), and the documents' order is deleted.
# Predictions: each longest-first point 2.5-4 % faster than its documents'-order twin on the backward, 1.5-3.5 % on the
# forward; the hand rule's plan in the longest-first order the best point of each key.
cd "$(dirname "$0")/../../.."
R=$OUT; mkdir -p $R
export FLASHC_DEVICE_WORK=/tmp/fd
[ -x build-dev/bin/flashc-run ] || { OUT=$R/dr timeout 200 scripts/device-bench.sh --steps build > $R/build.txt 2>&1; echo "build rc=$?"; rm -rf $R/dr; }
OUT=$R/t_tune45 timeout 500 scripts/device-bench.sh --steps tune --tune-plan .carry/tune45 --tune-args "--budget 460 --lead-us auto" > $R/tune_tune45.txt 2>&1; echo "tune tune45 rc=$?"
cp $R/t_tune45/tune/progress.jsonl $R/progress_tune45.jsonl 2>/dev/null; cp $R/t_tune45/tune/tune-report.md $R/report_tune45.md 2>/dev/null
tail -6 $R/tune_tune45.txt
tar czf $R/logs.tgz -C $R $(cd $R && ls -d t_* 2>/dev/null) 2>/dev/null; rm -rf $R/t_*
