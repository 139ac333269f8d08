#!/bin/bash
# Session 48, call 2: kernel lab run 20 (bench/kernel_lab/NOTES.md, predictions there): the dQ hand-off
# (dq_ready.cuh) against the library's ends in the same grid order, checked against float64, timed against the
# peers; then compute-sanitizer on the small ragged shapes of the hand-off's GQA and role-split configurations.
set -u
R=$OUT; mkdir -p $R
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,clocks.max.sm,memory.total --format=csv | tee $R/gpu.txt
A=d128_bwdws_ends,d128_bwdws_ready,d64_bwdws_ends,d64_bwdws_ready
A=$A,d128_causal_bwdws_ends_g4,d128_causal_bwdws_ready_g4,d128_win1024_bwdws_ends_g4,d128_win1024_bwdws_ready_g4
A=$A,d64_causal_bwdws_ends_g4,d64_causal_bwdws_ready_g4,d128_f16_gqa4_win100_bwdws_ready,d256_causal_bwdws_ready
t0=$SECONDS
timeout -k 10 400 python3 bench/kernel_lab/lab.py --out $R/lab --only $A > $R/lab.log 2>&1
echo "lab rc=$? ($((SECONDS-t0)) s)"
grep -E "ptxas bwd|check summary|FAIL|ALL CHECKS|SOME CHECKS" $R/lab.log | head -40
cat $R/lab/*.md 2>/dev/null | head -60
for tool in racecheck synccheck memcheck; do
  left=$((560 - SECONDS + t0)); [ $left -gt 20 ] || break
  FLASHC_LAB_SMALL=1 timeout $((left < 60 ? left : 60)) compute-sanitizer --tool $tool --print-limit 20 \
    python3 bench/kernel_lab/lab.py --out $R/san_$tool --skip-bench --reuse-build \
    --only d128_f16_gqa4_win100_bwdws_ready,d256_causal_bwdws_ready,d64_causal_bwdws_ready_g4 > $R/san_$tool.log 2>&1
  echo "$tool rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|check summary' $R/san_$tool.log | tr '\n' ' ')"
done
