#!/bin/bash
# Session 40 call 4: exponentials on the FMA pipe in the backward. Checks of e2 (half of them moved) over the attention
# and score-modifier test bundles; kernel timelines (full, causal, ALiBi) of vs (HEAD: none moved), e4 (a quarter),
# e2 (a half), alternated twice; bench_attention D = 64 vs / e4.
cd "$(dirname "$0")/.."
R=/tmp/r4; rm -rf $R; mkdir -p $R
export FLASHC_DEVICE_WORK=/tmp/fd FLASHC_COMMIT=${FLASHC_COMMIT:-unknown}
[ -x build-dev/bin/flashc-run ] || { OUT=$R/dr timeout 150 scripts/device-bench.sh .carry/vs --steps build > $R/build.txt 2>&1; rm -rf $R/dr; }
export FLASHC_RUNTIME_LIB=$PWD/build-dev/runtime/libflashc_runtime.so PYTHONPATH=$PWD/python
B=build-dev/bin/flashc-run
{
for b in .carry/e2/attn_*; do
  case $b in *h16kv16_d128_*|*h32kv32_d64*) continue;; esac
  echo "== $(basename $b)"
  for sz in "1 300 300" "2 77 200" "1 700 1000"; do
    set -- $sz; timeout 60 $B $b --require-gpu --batch $1 --seq-q $2 --seq-k $3 --tokens 33 2>&1 | tail -1
  done
done
} > $R/checks.txt 2>&1
echo "checks (e2): $(grep -c ', 0 failed' $R/checks.txt) runs passed; other lines:"; grep -v ', 0 failed' $R/checks.txt | grep -v '^==' | head -8
for round in 1 2; do for D in vs e4 e2; do
  line="== $round $D"
  for row in full causal alibi; do
    FLASHC_BUNDLE_PATH=$PWD/.carry/$D FLASHC_CACHE_DIR=/tmp/mc_$D timeout 100 python3 bench/probes/mask_mod_profile.py $row 5 --timeline > $R/tl_${row}_${D}_$round.txt 2>&1
    line="$line $row: $(grep -E 'attention_bwd ' $R/tl_${row}_${D}_$round.txt | awk '{print $(NF-1)}')"
  done
  echo "$line"
done; done
for D in e4 vs; do
  FLASHC_BUNDLE_PATH=$PWD/.carry/$D FLASHC_CACHE_DIR=/tmp/nc_$D timeout 140 python3 bench/bench_attention.py --head-dims 64 --causal both \
    --seqs 1024,4096,16384 --peers flashc,cudnn --no-load-time --rounds 2 --out $R/ba_${D}64 > $R/ba_${D}64.log 2>&1
  echo "== $D D=64 (rc=$?)"; grep "^|" $R/ba_${D}64/bench_attention.md 2>/dev/null | tail -n +3 | cut -d'|' -f2-9
done
tar czf $OUT/call4.tgz -C $R .
