#!/bin/bash
# Session 36 call 3: the backward's head groups as a tuning dimension (attention grid and #16's rows); #16's rows at
# HEAD (the document forward's entry); flashc-run over the mask-modifier tests with the table.
cd "$(dirname "$0")/.."
R=$OUT; mkdir -p $R
export FLASHC_DEVICE_WORK=/tmp/fd
OUT=$R/dr timeout 200 scripts/device-bench.sh .carry/s36bp --steps build,run > $R/build_run.txt 2>&1; echo "build/run rc=$?" >> $R/build_run.txt
mkdir -p /tmp/drl; tar xzf $R/dr/device-logs.tgz -C /tmp/drl 2>/dev/null; grep -h "checks, " /tmp/drl/logs/flashc_run/*.log | awk '{c+=$1; f+=$3} END {print NR" runs,", c" checks,", f" failed"}' | tee $R/flashc_run_summary.txt
rm -rf $R/dr
for p in tuneb tunebp; do
  OUT=$R/d$p timeout 170 scripts/device-bench.sh --steps tune --tune-plan .carry/$p --tune-args "--budget 120" > $R/$p.txt 2>&1; echo "tune rc=$?" >> $R/$p.txt
  cp $R/d$p/tune/progress.jsonl $R/progress_$p.jsonl 2>/dev/null; cp $R/d$p/tune/tune-report.md $R/report_$p.md 2>/dev/null
  grep -E "^sm_90a|rc=" $R/$p.txt | cut -c1-260; rm -rf $R/d$p
done
export FLASHC_RUNTIME_LIB=$PWD/build-dev/runtime/libflashc_runtime.so PYTHONPATH=$PWD/python
[ $SECONDS -lt 430 ] && FLASHC_BUNDLE_PATH=$PWD/.carry/s36bp FLASHC_CACHE_DIR=/tmp/nc_bp timeout $((580 - SECONDS)) python3 bench/bench_programmable.py --lead-us auto --out $R/bp > $R/bp.log 2>&1; echo "bp rc=$?" >> $R/bp.log
grep "^|" $R/bp/bench_programmable.md | head -9
cp $R/bp/bench_programmable.json $R/ 2>/dev/null; tar czf $R/bp.tgz -C $R bp bp.log 2>/dev/null; rm -rf $R/bp
