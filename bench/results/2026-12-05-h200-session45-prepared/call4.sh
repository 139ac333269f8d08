#!/bin/bash
# Session 45, fourth device call (prepared; right after call3.sh on the same machine: it reuses the lab's builds in
# /tmp/flashc_lab_build, or builds the six it needs): compute-sanitizer over kernel lab run 18's new forms on small
# ragged shapes (FLASHC_LAB_SMALL). racecheck sees shared memory only: the flags' ordering across blocks is what
# check.py's NaN-poisoned dq_accum tests in call3. Prediction: 0 errors, 0 hazards.
cd "$(dirname "$0")/../../.."
R=$OUT; mkdir -p $R
export PYTHONUNBUFFERED=1
for tool in memcheck racecheck synccheck; do
  FLASHC_LAB_SMALL=1 timeout 180 compute-sanitizer --tool $tool --print-limit 20 python3 bench/kernel_lab/lab.py \
    --out $R/lab_$tool --skip-bench --reuse-build --only d128_bwdws_dqstore,d128_f16_gqa4_win100_bwdws_dqstore,d64_causal_bwdws_dqstore,d128_bwdws_zeroahead,d128_f16_gqa4_win100_bwdws_zeroahead,d64_causal_bwdws_zeroahead \
    > $R/lab_$tool.log 2>&1
  echo "$tool rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $R/lab_$tool.log | head -1)"
done
