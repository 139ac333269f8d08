#!/bin/bash
# Session 41 call 4: the deferred dQ with a first-step offset (.carry/s1) and with the exponentials taking turns every
# step (.carry/s2) against HEAD (.carry/o): main-kernel timelines alternated twice; flashc-run float64 checks of s2.
cd "$(dirname "$0")/.."
R=/tmp/r4; rm -rf $R; mkdir -p $R
export FLASHC_DEVICE_WORK=/tmp/fd
[ -x build-dev/bin/flashc-run ] || { OUT=$R/dr timeout 200 scripts/device-bench.sh .carry/o --steps build > $R/build.txt 2>&1; echo "build rc=$?"; rm -rf $R/dr; }
export FLASHC_RUNTIME_LIB=$PWD/build-dev/runtime/libflashc_runtime.so PYTHONPATH=$PWD/python
for A in .carry/s2/attn_bf16_h16kv16_d128_causal_eee2f65cd550 .carry/s2/attn_bf16_h16kv16_d128_causal_score88d67213_ccdf479122ef .carry/s2/attn_bf16_h32kv32_d64_causal_51def23d234b .carry/s2/attn_bf16_h16kv16_d128_causal_mod6ac147f1_37f54dd5325d; do
  timeout 60 build-dev/bin/flashc-run $A --require-gpu --batch 1 --seq-q 300 --seq-k 333 > $R/run_$(basename $A).txt 2>&1; echo "flashc-run s2 $(basename $A): rc=$? $(grep -E 'checks' $R/run_$(basename $A).txt | tail -1)"
done
for round in 1 2; do for D in o s1 s2; do
  line="== $round $D"
  rows="causal alibi"; [ $round = 1 ] && rows="causal alibi prefix_lm window_attr"
  for row in $rows; do
    FLASHC_BUNDLE_PATH=$PWD/.carry/$D FLASHC_CACHE_DIR=/tmp/mc_$D timeout 60 python3 bench/probes/mask_mod_profile.py $row 5 --timeline > $R/tl_${row}_${D}_$round.txt 2>&1
    line="$line $row: $(grep -E 'attention_bwd ' $R/tl_${row}_${D}_$round.txt | awk '{print $(NF-1)}')"
  done; echo "$line"
done; done
tar czf $OUT/call4.tgz -C $R .
