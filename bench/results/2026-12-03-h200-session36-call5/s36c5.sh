#!/bin/bash
# Session 36 call 5: #16's rows at HEAD (the table's document forward and backward entries), with the kernel timelines.
cd "$(dirname "$0")/.."
R=$OUT; mkdir -p $R
export FLASHC_DEVICE_WORK=/tmp/fd
OUT=$R/dr timeout 120 scripts/device-bench.sh .carry/s36bp2 --steps build > $R/build.txt 2>&1; echo "build rc=$?" >> $R/build.txt; rm -rf $R/dr
export FLASHC_RUNTIME_LIB=$PWD/build-dev/runtime/libflashc_runtime.so PYTHONPATH=$PWD/python FLASHC_BUNDLE_PATH=$PWD/.carry/s36bp2 FLASHC_CACHE_DIR=/tmp/nc_bp2
timeout 150 python3 bench/bench_programmable.py --lead-us auto --out $R/bp > $R/bp.log 2>&1; echo "bp rc=$?" >> $R/bp.log
grep "^|" $R/bp/bench_programmable.md | head -9; tail -1 $R/bp.log
for row in document; do timeout 40 python3 bench/probes/mask_mod_profile.py $row 5 --timeline 2>&1 | grep -E "flashc_" | awk '{print $1, $(NF-1), $NF}'; done | tee $R/timeline.txt
cp $R/bp/bench_programmable.json $R/bp/bench_programmable.md $R/ 2>/dev/null; rm -rf $R/bp
