#!/bin/bash
# Session 41 call 3: the deferred dQ with four dSᵀ buffers (store before the dQ product: .carry/n4) and with the
# warpgroups a phase apart (.carry/n4s) against HEAD (.carry/o): main-kernel timelines alternated twice; flashc-run
# float64 checks of both variants' D = 128 / D = 64 bundles.
cd "$(dirname "$0")/.."
R=/tmp/r3; rm -rf $R; mkdir -p $R
export FLASHC_DEVICE_WORK=/tmp/fd
[ -x build-dev/bin/flashc-run ] || { OUT=$R/dr timeout 200 scripts/device-bench.sh .carry/o --steps build > $R/build.txt 2>&1; echo "build rc=$?"; rm -rf $R/dr; }
export FLASHC_RUNTIME_LIB=$PWD/build-dev/runtime/libflashc_runtime.so PYTHONPATH=$PWD/python
for D in n4 n4s; do for A in .carry/$D/attn_bf16_h16kv16_d128_causal_eee2f65cd550 .carry/$D/attn_bf16_h16kv16_d128_causal_score88d67213_ccdf479122ef .carry/$D/attn_bf16_h32kv32_d64_causal_51def23d234b; do
  timeout 60 build-dev/bin/flashc-run $A --require-gpu --batch 1 --seq-q 300 --seq-k 333 > $R/run_${D}_$(basename $A).txt 2>&1; echo "flashc-run $D $(basename $A): rc=$? $(grep -E 'checks' $R/run_${D}_$(basename $A).txt | tail -1)"
done; done
for round in 1 2; do for D in o n4 n4s; do
  line="== $round $D"
  for row in causal alibi window_attr document; do
    FLASHC_BUNDLE_PATH=$PWD/.carry/$D FLASHC_CACHE_DIR=/tmp/mc_$D timeout 60 python3 bench/probes/mask_mod_profile.py $row 5 --timeline > $R/tl_${row}_${D}_$round.txt 2>&1
    line="$line $row: $(grep -E 'attention_bwd ' $R/tl_${row}_${D}_$round.txt | awk '{print $(NF-1)}')"
  done; echo "$line"
done; done
tar czf $OUT/call3.tgz -C $R .
