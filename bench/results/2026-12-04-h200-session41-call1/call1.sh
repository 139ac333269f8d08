#!/bin/bash
# Session 41 call 1: bench_programmable with --kernel-times 5 (first run) beside --lead-us auto; timelines of the
# window attribute and document rows (the backward's fixed part).
cd "$(dirname "$0")/.."
R=/tmp/r1; rm -rf $R; mkdir -p $R
export FLASHC_DEVICE_WORK=/tmp/fd
[ -x build-dev/bin/flashc-run ] || { OUT=$R/dr timeout 200 scripts/device-bench.sh .carry/f --steps build > $R/build.txt 2>&1; echo "build rc=$?"; rm -rf $R/dr; }
export FLASHC_RUNTIME_LIB=$PWD/build-dev/runtime/libflashc_runtime.so PYTHONPATH=$PWD/python
export FLASHC_BUNDLE_PATH=$PWD/.carry/f FLASHC_CACHE_DIR=/tmp/mc_f
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv > $R/gpu.txt
timeout 330 python3 bench/bench_programmable.py --lead-us auto --kernel-times 5 --out $R/bp > $R/bp.log 2>&1
echo "bench_programmable rc=$?"; grep "^|" $R/bp/bench_programmable.md 2>/dev/null | head -30
for row in window_attr document; do timeout 60 python3 bench/probes/mask_mod_profile.py $row 5 --timeline > $R/tl_$row.txt 2>&1; echo "$row rc=$?"; done
tail -25 $R/tl_*.txt
tar czf $OUT/call1.tgz -C $R .
