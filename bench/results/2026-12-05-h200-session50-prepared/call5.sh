#!/bin/bash
# Session 50, call 5: kernel lab run 24 (bench/kernel_lab/NOTES.md, predictions there): the key split's hidden
# halves skipped (_skip, opt-in) against the same kernel without (_ends; the GQA window config against its default),
# checked against float64, timed (do_bench, then the kernels' timeline at 1k and 16k); synccheck and racecheck on
# the small shapes.
set -u
R=$OUT; mkdir -p $R
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name --format=csv,noheader
A=d128_win1024_bwdws_ends,d128_win1024_bwdws_skip,d128_causal_bwdws_ends,d128_causal_bwdws_skip
A=$A,d128_f16_gqa4_win100_bwdws,d128_f16_gqa4_win100_bwdws_skip
t0=$SECONDS
timeout -k 10 240 python3 bench/kernel_lab/lab.py --out $R/lab --only $A > $R/lab.log 2>&1
echo "lab rc=$? ($((SECONDS-t0)) s)"
grep -E "ptxas bwd|check summary|FAIL|ALL CHECKS|SOME CHECKS" $R/lab.log | head -12
grep "bwdws" $R/lab/bench.md | awk -F'|' '{print $2,$4,$5,$10}'
timeout 100 python3 bench/kernel_lab/timeline.py --seqlens 1024,16384 --only $(echo $A | cut -d, -f1-4) > $R/timeline.txt 2>&1
echo "timeline rc=$? ($((SECONDS-t0)) s)"; grep "S=" $R/timeline.txt | sed 's/  (10 calls.*//'
for tool in synccheck racecheck; do
  left=$((440 - SECONDS + t0)); [ $left -gt 20 ] || break
  FLASHC_LAB_SMALL=1 timeout $((left < 70 ? left : 70)) compute-sanitizer --tool $tool --print-limit 20 \
    python3 bench/kernel_lab/lab.py --out $R/san_$tool --skip-bench --reuse-build \
    --only d128_f16_gqa4_win100_bwdws_skip,d128_win1024_bwdws_skip > $R/san_$tool.log 2>&1
  echo "$tool rc=$? $(grep -E 'ERROR SUMMARY|check summary' $R/san_$tool.log | tr '\n' ' ')"
done
tar -czf $R/call5.tgz -C $R . 2>/dev/null; find $R -type f ! -name call5.tgz -delete
