#!/bin/bash
# Session 44, fifth device call (the budget's last minutes): the document row after the built-in table lost its bf16
# d128 causal+mod entries (the hand rule in the segment form; .carry/bp44 rebuilt). Predicted: backward kernels
# ~742 -> ~715 us (~0.72x Flex), forward ~0.67x.
cd "$(dirname "$0")/../../.."
R=$OUT; mkdir -p $R
export FLASHC_DEVICE_WORK=/tmp/fd
[ -x build-dev/bin/flashc-run ] || { OUT=$R/dr timeout 120 scripts/device-bench.sh .carry/bp44 --steps build > $R/build.txt 2>&1; echo "build rc=$?"; rm -rf $R/dr; }
export FLASHC_RUNTIME_LIB=$PWD/build-dev/runtime/libflashc_runtime.so PYTHONPATH=$PWD/python
FLASHC_BUNDLE_PATH=$PWD/.carry/bp44 FLASHC_CACHE_DIR=/tmp/mc_bp44 timeout 150 python3 bench/bench_programmable.py --rows document --lead-us auto --kernel-times 5 --out $R/bp > $R/bp.log 2>&1
echo "bench_programmable rc=$?"; grep "^|" $R/bp/bench_programmable.md 2>/dev/null | cut -d'|' -f1-8
