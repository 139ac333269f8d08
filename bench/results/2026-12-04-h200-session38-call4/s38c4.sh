#!/bin/bash
# Session 38 call 4: the confirmation rounds for call 3's split winners on both sides (resumed), flashc-run over the
# new table's causal benchmark bundles on both sides of the bounds, bench_attention causal (D = 128 / 80 / 96) with
# the new table and with call 2's, alternated. One archive back.
cd "$(dirname "$0")/.."
R=/tmp/r4; rm -rf $R; mkdir -p $R
export FLASHC_DEVICE_WORK=/tmp/fd FLASHC_COMMIT=${FLASHC_COMMIT:-unknown}
OUT=$R/dr timeout 150 scripts/device-bench.sh .carry/s38b2 --steps build > $R/build.txt 2>&1; echo "build rc=$?" >> $R/build.txt; rm -rf $R/dr
export FLASHC_RUNTIME_LIB=$PWD/build-dev/runtime/libflashc_runtime.so PYTHONPATH=$PWD/python
mkdir -p $R/tune; cp .carry/s38t2/progress.jsonl $R/tune/progress.jsonl
timeout 200 python3 -m flashc.tune time .carry/s38t2 --progress $R/tune/progress.jsonl --out $R/tune --work /tmp/tw --budget 180 > $R/tune.txt 2>&1; echo "tune rc=$?" >> $R/tune.txt
grep -E "^sm_90a|tune rc" $R/tune.txt | cut -c1-500
B=build-dev/bin/flashc-run
{
for b in .carry/s38b2/*causal*; do
  echo "== $(basename $b)"
  for sz in "1 300 1000" "1 300 4000" "1 300 4200" "1 77 200"; do
    set -- $sz; $B $b --require-gpu --batch $1 --seq-q $2 --seq-k $3 --tokens 33 2>&1 | tail -1
  done
done
} > $R/checks.txt 2>&1
echo "checks: $(grep -c ', 0 failed' $R/checks.txt) runs passed; other lines:"; grep -v ', 0 failed' $R/checks.txt | grep -v '^==' | head -5
for run in "b1 --head-dims 128" "o1 --head-dims 128" "b1p --head-dims 80,96 --heads 16" "o1p --head-dims 80,96 --heads 16"; do
  set -- $run; tag=$1; shift; t=${tag:0:1}
  FLASHC_BUNDLE_PATH=$PWD/.carry/s38${t}2 FLASHC_CACHE_DIR=/tmp/nc_$t timeout 150 python3 bench/bench_attention.py "$@" --causal yes \
    --seqs 1024,4096,16384 --peers flashc,cudnn,sdpa_flash --no-load-time --rounds 2 --out $R/ba_$tag > $R/ba_$tag.log 2>&1
  echo "== $tag: $* (rc=$?)"; grep "^|" $R/ba_$tag/bench_attention.md 2>/dev/null | tail -n +3 | cut -d'|' -f2-9
done
tar czf $OUT/call4.tgz -C $R .
