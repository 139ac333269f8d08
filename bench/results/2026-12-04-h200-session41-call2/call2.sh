#!/bin/bash
# Session 41 call 2: the key split's dQ deferred a step (the warpgroups no longer meet at one barrier every step).
# Main-kernel timelines old (.carry/o, HEAD) / new (.carry/n) alternated twice over five rows; racecheck / memcheck on
# key-split bundles; flashc-run over the rebuilt test bundles (.carry/t) and the GPU Python tests.
cd "$(dirname "$0")/.."
R=/tmp/r2; rm -rf $R; mkdir -p $R
export FLASHC_DEVICE_WORK=/tmp/fd
[ -x build-dev/bin/flashc-run ] || { OUT=$R/dr timeout 200 scripts/device-bench.sh .carry/n --steps build > $R/build.txt 2>&1; echo "build rc=$?"; rm -rf $R/dr; }
export FLASHC_RUNTIME_LIB=$PWD/build-dev/runtime/libflashc_runtime.so PYTHONPATH=$PWD/python
B=build-dev/bin/flashc-run
for A in .carry/t/attn_bf16_h4kv2_d128_causal_score88d67213_59dd16e22c42 .carry/t/attn_bf16_h2kv2_d64_causal_6b477467c99f; do
  timeout 60 compute-sanitizer --tool racecheck $B $A --require-gpu --batch 1 --seq-q 300 --seq-k 333 > $R/san_race_$(basename $A).txt 2>&1
  echo "racecheck $(basename $A): rc=$? $(grep -E 'RACECHECK SUMMARY' $R/san_race_$(basename $A).txt | head -1)"
  timeout 60 compute-sanitizer --tool memcheck $B $A --require-gpu --batch 2 --seq-q 77 --seq-k 200 > $R/san_mem_$(basename $A).txt 2>&1
  echo "memcheck: rc=$? $(grep -E 'ERROR SUMMARY' $R/san_mem_$(basename $A).txt | head -1)"
done
for round in 1 2; do for D in o n; do
  line="== $round $D"
  for row in causal alibi document window_attr prefix_lm; do
    FLASHC_BUNDLE_PATH=$PWD/.carry/$D FLASHC_CACHE_DIR=/tmp/mc_$D timeout 60 python3 bench/probes/mask_mod_profile.py $row 5 --timeline > $R/tl_${row}_${D}_$round.txt 2>&1
    line="$line $row: $(grep -E 'attention_bwd ' $R/tl_${row}_${D}_$round.txt | awk '{print $(NF-1)}')"
  done; echo "$line"
done; done
OUT=$R/dt timeout 300 scripts/device-bench.sh .carry/t --steps test,run --tests "test_gpu_attention.py test_score_mod.py" > $R/test_run.txt 2>&1
echo "test,run rc=$?"; grep -E "^=== .*exit|FAILED|Ran |^OK|FAILED \(|checks" $R/test_run.txt | tail -14
tar czf $OUT/call2.tgz -C $R .
