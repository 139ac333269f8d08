#!/bin/bash
# Prepared in session 43 (no device was lent): the tuner over the document row's forward and backward keys, the segment
# form among their points (nvidia-h200, ~6 min; resumable: run again with the progress files carried back into the
# plan directory). Carry: .carry/tune43 (`PYTHONPATH=python python3 -m flashc.tune plan --out .carry/tune43 --kinds
# attention_forward,attention_backward --seqs 16384 "<bench-programmable's document config text>"`: each
# warp-specialised one-tile-a-block point also with segments=1, 25 + 25 candidates), this script. Run after call1.sh
# has checked the segment form; a winning entry goes into compiler/tuning/sm_90a.txt with `flashc.tune table --write`.
cd "$(dirname "$0")/../../.."
R=$OUT; mkdir -p $R
export FLASHC_DEVICE_WORK=/tmp/fd
[ -x build-dev/bin/flashc-run ] || { OUT=$R/dr timeout 200 scripts/device-bench.sh --steps build > $R/build.txt 2>&1; echo "build rc=$?"; rm -rf $R/dr; }
export FLASHC_RUNTIME_LIB=$PWD/build-dev/runtime/libflashc_runtime.so PYTHONPATH=$PWD/python
OUT=$R/t_tune43 timeout 330 scripts/device-bench.sh --steps tune --tune-plan .carry/tune43 --tune-args "--budget 280 --lead-us auto" > $R/tune_tune43.txt 2>&1; echo "tune tune43 rc=$?"
cp $R/t_tune43/tune/progress.jsonl $R/progress_tune43.jsonl 2>/dev/null; cp $R/t_tune43/tune/tune-report.md $R/report_tune43.md 2>/dev/null
tail -6 $R/tune_tune43.txt
tar czf $R/logs.tgz -C $R $(cd $R && ls -d t_* 2>/dev/null) 2>/dev/null; rm -rf $R/t_*
