#!/bin/bash
# Session 48, call 6: kernel lab run 21 (bench/kernel_lab/NOTES.md, predictions there): the backward's blocks leave
# once their last dQ reductions have read shared memory (_exitread) instead of once they have completed (_ends_g1 /
# _ends_g4), checked against float64 and timed (do_bench, then the kernels' timeline at 1k and 16k); synccheck and
# memcheck on the small shapes.
set -u
R=$OUT; mkdir -p $R
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name --format=csv,noheader
A=d128_bwdws_ends_g1,d128_bwdws_exitread,d64_bwdws_ends_g1,d64_bwdws_exitread
A=$A,d128_causal_bwdws_ends_g4,d128_causal_bwdws_exitread_g4,d128_win1024_bwdws_ends_g4,d128_win1024_bwdws_exitread_g4
A=$A,d64_causal_bwdws_ends_g4,d64_causal_bwdws_exitread_g4,d128_f16_gqa4_win100_bwdws_exitread
t0=$SECONDS
timeout -k 10 300 python3 bench/kernel_lab/lab.py --out $R/lab --only $A > $R/lab.log 2>&1
echo "lab rc=$? ($((SECONDS-t0)) s)"
grep -E "check summary|FAIL|ALL CHECKS|SOME CHECKS" $R/lab.log | head -5
grep "bwdws" $R/lab/bench.md | awk -F'|' '{print $2,$4,$10}'
timeout 120 python3 bench/kernel_lab/timeline.py --seqlens 1024,16384 --only $(echo $A | cut -d, -f1-10) > $R/timeline.txt 2>&1
echo "timeline rc=$? ($((SECONDS-t0)) s)"; grep "S=" $R/timeline.txt | sed 's/  (10 calls.*//'
for tool in synccheck memcheck; do
  left=$((540 - SECONDS + t0)); [ $left -gt 20 ] || break
  FLASHC_LAB_SMALL=1 timeout $((left < 60 ? left : 60)) compute-sanitizer --tool $tool --print-limit 20 \
    python3 bench/kernel_lab/lab.py --out $R/san_$tool --skip-bench --reuse-build \
    --only d128_f16_gqa4_win100_bwdws_exitread,d64_causal_bwdws_exitread_g4 > $R/san_$tool.log 2>&1
  echo "$tool rc=$? $(grep -E 'ERROR SUMMARY|check summary' $R/san_$tool.log | tr '\n' ' ')"
done
