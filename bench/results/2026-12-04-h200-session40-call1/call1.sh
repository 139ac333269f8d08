#!/bin/bash
# Session 40 call 1: session 39's pending checks (tests-score-mod's new configs, test_score_mod's verdict check) and
# the backward's key parts read under Sᵀ's product: checks over the score-modifier / attention test bundles, racecheck,
# the ALiBi / causal backward kernels old (.carry/new) / new (.carry/k) alternated, bench_programmable (all rows).
cd "$(dirname "$0")/.."
R=/tmp/r1; rm -rf $R; mkdir -p $R
export FLASHC_DEVICE_WORK=/tmp/fd FLASHC_COMMIT=${FLASHC_COMMIT:-unknown}
OUT=$R/dr timeout 200 scripts/device-bench.sh .carry/k --steps build,test --tests "test_gpu_attention.py test_score_mod.py" > $R/build_test.txt 2>&1
echo "build,test rc=$?"; cp -r $R/dr $R/dr_keep 2>/dev/null; grep -E "passed|failed|skipped|OK|FAIL|Error|error" $R/build_test.txt | tail -12
export FLASHC_RUNTIME_LIB=$PWD/build-dev/runtime/libflashc_runtime.so PYTHONPATH=$PWD/python
B=build-dev/bin/flashc-run
{
for b in .carry/k/attn_*; do
  case $b in *h16kv16_d128_*) continue;; esac   # (the benchmark bundles: timed below)
  echo "== $(basename $b)"
  for sz in "1 300 300" "2 77 200" "1 700 1000"; do
    set -- $sz; timeout 60 $B $b --require-gpu --batch $1 --seq-q $2 --seq-k $3 --tokens 33 2>&1 | tail -1
  done
done
} > $R/checks.txt 2>&1
echo "checks: $(grep -c ', 0 failed' $R/checks.txt) runs passed; other lines:"; grep -v ', 0 failed' $R/checks.txt | grep -v '^==' | head -8
A=$(ls -d .carry/k/attn_bf16_h4kv2_d128_causal_score88d67213_* | head -1)
timeout 120 compute-sanitizer --tool racecheck $B $A --require-gpu --batch 1 --seq-q 300 --seq-k 300 > $R/san_race.txt 2>&1
echo "racecheck ($(basename $A)): $(grep -E 'RACECHECK SUMMARY' $R/san_race.txt | head -1)"
timeout 120 compute-sanitizer --tool memcheck $B $A --require-gpu --batch 2 --seq-q 77 --seq-k 200 > $R/san_mem.txt 2>&1
echo "memcheck: $(grep -E 'ERROR SUMMARY' $R/san_mem.txt | head -1)"
for tag in o n o n; do
  [ $tag = o ] && D=new || D=k
  FLASHC_BUNDLE_PATH=$PWD/.carry/$D FLASHC_CACHE_DIR=/tmp/mc_$tag timeout 100 python3 bench/probes/mask_mod_profile.py causal 5 --timeline > $R/tl_causal_$tag.txt 2>&1
  FLASHC_BUNDLE_PATH=$PWD/.carry/$D FLASHC_CACHE_DIR=/tmp/mc_$tag timeout 100 python3 bench/probes/mask_mod_profile.py alibi 5 --timeline > $R/tl_alibi_$tag.txt 2>&1
  echo "== $tag causal: $(grep -E 'attention_bwd ' $R/tl_causal_$tag.txt | awk '{print $(NF-1)}')  alibi: $(grep -E 'attention_bwd |attention_fwd ' $R/tl_alibi_$tag.txt | awk '{print $(NF-1)}' | tr '\n' ' ')"
done
FLASHC_BUNDLE_PATH=$PWD/.carry/k FLASHC_CACHE_DIR=/tmp/mc_n timeout 300 python3 bench/bench_programmable.py --lead-us auto --out $R/bp > $R/bp.log 2>&1
echo "bench_programmable rc=$?"; grep "^|" $R/bp/bench_programmable.md 2>/dev/null | head -10
tar czf $OUT/call1.tgz -C $R .
