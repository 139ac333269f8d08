#!/bin/bash
# Session 40 call 5: bench_programmable over every #16 row at the session's final device library (.carry/f).
cd "$(dirname "$0")/.."
R=/tmp/r5; rm -rf $R; mkdir -p $R
export FLASHC_DEVICE_WORK=/tmp/fd FLASHC_COMMIT=${FLASHC_COMMIT:-unknown}
[ -x build-dev/bin/flashc-run ] || { OUT=$R/dr timeout 150 scripts/device-bench.sh .carry/f --steps build > $R/build.txt 2>&1; rm -rf $R/dr; }
export FLASHC_RUNTIME_LIB=$PWD/build-dev/runtime/libflashc_runtime.so PYTHONPATH=$PWD/python
FLASHC_BUNDLE_PATH=$PWD/.carry/f FLASHC_CACHE_DIR=/tmp/mc_f timeout 280 python3 bench/bench_programmable.py --lead-us auto --out $R/bp > $R/bp.log 2>&1
echo "bench_programmable rc=$?"; grep "^|" $R/bp/bench_programmable.md 2>/dev/null | head -10
tar czf $OUT/call5.tgz -C $R .
