#!/bin/bash
# Session 35 call 5: head groups as emitted (HEAD): tests, #16's table, D = 64 A/B.
cd "$(dirname "$0")/.."
R=$OUT; mkdir -p $R
export FLASHC_DEVICE_WORK=/tmp/fd
OUT=$R/dr timeout 150 scripts/device-bench.sh .carry/th --steps build,run > $R/build_run.txt 2>&1; echo "build/run rc=$?" >> $R/build_run.txt
mkdir -p /tmp/drl; tar xzf $R/dr/device-logs.tgz -C /tmp/drl 2>/dev/null; grep -h "checks, " /tmp/drl/logs/flashc_run/*.log | awk '{c+=$1; f+=$3} END {print NR" runs,", c" checks,", f" failed"}' | tee $R/flashc_run_summary.txt
tar czf $R/logs.tgz -C $R dr 2>/dev/null; rm -rf $R/dr
export FLASHC_RUNTIME_LIB=$PWD/build-dev/runtime/libflashc_runtime.so PYTHONPATH=$PWD/python
FLASHC_BUNDLE_PATH=$PWD/.carry/bh FLASHC_CACHE_DIR=/tmp/nc_bh timeout 130 python3 bench/bench_programmable.py --lead-us auto --out $R/bp > $R/bp.log 2>&1; echo "bp rc=$?" >> $R/bp.log
grep "^|" $R/bp/bench_programmable.md | head -9
for v in bg1 bh; do
  FLASHC_BUNDLE_PATH=$PWD/.carry/$v FLASHC_CACHE_DIR=/tmp/nc_$v timeout 45 python3 bench/bench_attention.py --head-dims 64 --seqs 1024,4096,16384 --causal yes --peers flashc --no-load-time --rounds 1 --check-heads 1 --out $R/ba64_$v > $R/ba64_$v.log 2>&1
  echo "== $v"; grep "^| 64" $R/ba64_$v/bench_attention.md | cut -d'|' -f2-5
done
