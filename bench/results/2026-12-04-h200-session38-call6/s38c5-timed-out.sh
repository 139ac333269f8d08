#!/bin/bash
# Session 38 call 5: the final table's bundles (tests-attention, the benchmark grids, the examples) against float64
# with flashc-run, on both sides of every key-length bound (1024, 4096). One archive back.
cd "$(dirname "$0")/.."
R=/tmp/r5; rm -rf $R; mkdir -p $R
export FLASHC_DEVICE_WORK=/tmp/fd
OUT=$R/dr timeout 150 scripts/device-bench.sh .carry/s38f --steps build > $R/build.txt 2>&1; echo "build rc=$?" >> $R/build.txt; rm -rf $R/dr
B=build-dev/bin/flashc-run
{
for b in .carry/s38f/*; do
  [ -f $b/manifest.flashc ] || continue
  echo "== $(basename $b)"
  for sz in "2 257 257" "1 77 200" "1 300 1100" "1 300 4200"; do
    set -- $sz; timeout 60 $B $b --require-gpu --batch $1 --seq-q $2 --seq-k $3 --tokens 33 2>&1 | tail -1
  done
done
} > $R/checks.txt 2>&1
echo "runs: $(grep -c ', 0 failed' $R/checks.txt) passed, $(grep -c '^==' $R/checks.txt) bundles; other lines:"; grep -v ', 0 failed' $R/checks.txt | grep -v '^==' | head -10
tar czf $OUT/call5.tgz -C $R .
