#!/bin/bash
# Session 44, fourth device call: the tuner over the document row's forward and backward keys (session 43's call 2,
# rebuilt with the segment form the hand rule: each ws one-tile-a-block point named with segments=1 and =0; 49
# bundles: `PYTHONPATH=python python3 -m flashc.tune plan --out .carry/tune44 --kinds attention_forward,
# attention_backward --seqs 16384 "<bench-programmable's document config text>"`). Resumable: carry the progress back
# into the plan directory. A winning entry goes into compiler/tuning/sm_90a.txt with `flashc.tune table --write`.
# Prediction: the hand rule's points (segments=1, the tuned block sizes) stay within 2 % of the best; segments=0
# points lose 20-25 % on the forward (session 43's A/B), ~3 % on the backward.
cd "$(dirname "$0")/../../.."
R=$OUT; mkdir -p $R
export FLASHC_DEVICE_WORK=/tmp/fd
[ -x build-dev/bin/flashc-run ] || { OUT=$R/dr timeout 200 scripts/device-bench.sh --steps build > $R/build.txt 2>&1; echo "build rc=$?"; rm -rf $R/dr; }
export FLASHC_RUNTIME_LIB=$PWD/build-dev/runtime/libflashc_runtime.so PYTHONPATH=$PWD/python
OUT=$R/t_tune44 timeout 360 scripts/device-bench.sh --steps tune --tune-plan .carry/tune44 --tune-args "--budget 300 --lead-us auto" > $R/tune_tune44.txt 2>&1; echo "tune tune44 rc=$?"
cp $R/t_tune44/tune/progress.jsonl $R/progress_tune44.jsonl 2>/dev/null; cp $R/t_tune44/tune/tune-report.md $R/report_tune44.md 2>/dev/null
tail -6 $R/tune_tune44.txt
tar czf $R/logs.tgz -C $R $(cd $R && ls -d t_* 2>/dev/null) 2>/dev/null; rm -rf $R/t_*
