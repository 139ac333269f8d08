#!/bin/bash
# Session 41 call 5: the final tree (deferred dQ with turns at D = 96-128; the old form elsewhere). bench_programmable
# with kernel times first, then racecheck on the deferred form, then flashc-run over the 150 tests bundles and the GPU
# Python tests. Results go to $OUT as they come (the device budget is nearly spent).
cd "$(dirname "$0")/.."
export FLASHC_DEVICE_WORK=/tmp/fd
[ -x build-dev/bin/flashc-run ] || { OUT=/tmp/dr timeout 120 scripts/device-bench.sh .carry/fin --steps build > $OUT/build.txt 2>&1; echo "build rc=$?"; }
export FLASHC_RUNTIME_LIB=$PWD/build-dev/runtime/libflashc_runtime.so PYTHONPATH=$PWD/python
FLASHC_BUNDLE_PATH=$PWD/.carry/fin FLASHC_CACHE_DIR=/tmp/mc_f timeout 90 python3 bench/bench_programmable.py --lead-us auto --kernel-times 5 --out $OUT/bp > $OUT/bp.log 2>&1
echo "bench_programmable rc=$?"; grep "^|" $OUT/bp/bench_programmable.md 2>/dev/null | cut -d'|' -f1-8
A=.carry/t/attn_bf16_h4kv2_d128_causal_score88d67213_59dd16e22c42
timeout 30 compute-sanitizer --tool racecheck build-dev/bin/flashc-run $A --require-gpu --batch 1 --seq-q 300 --seq-k 333 > $OUT/san_race.txt 2>&1
echo "racecheck $(basename $A): rc=$? $(grep -E 'RACECHECK SUMMARY' $OUT/san_race.txt | head -1)"
OUT=$OUT/dt timeout 130 scripts/device-bench.sh .carry/t --steps test,run --tests "test_gpu_attention.py test_score_mod.py" > $OUT/test_run.txt 2>&1
echo "test,run rc=$?"; grep -E "^=== .*exit|FAILED|Ran |^OK|FAILED \(" $OUT/test_run.txt | tail -8
grep -E "checks, " $OUT/test_run.txt | awk "{c+=\$1; f+=\$3} END {print \"flashc-run: \" c \" checks, \" f \" failed\"}"
