#!/bin/bash
# Session 56, calls 1-2 (kernel lab run 28; call 2 after the loop split): a consumer warpgroup skips the steps whose queries its 64 keys do not see
# (`_skip`, Config::kSkipHiddenSteps: the causal diagonal's first step for warpgroup 1, a window's last for warpgroup
# 0), storing zero dSᵀ rows for the other's dQ.
# 1. float64 checks (lab.py: ragged Sq / Sk, bhsd / bshd; window 1024, causal, f16 GQA window 100, D = 64 causal and
#    a two-sided window 37 where the skip is compiled out), then racecheck and synccheck on small shapes;
# 2. timeline.py A/B, each base against `_skip`, at 1k and 16k;
# 3. the phase probe with the skip (window 16k), if time is left.
# Predictions (main kernel): window 16k -3 to -4.5 %, 1k -3 to -5 %; causal 16k -0.2 to -0.5 %, causal 1k -3 to -5 %;
# D = 64 causal level (compiled out). Probe: the window's walk 38.8 -> ~37.2 us a block.
set -u
R=$OUT; mkdir -p $R
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader > $R/gpu.txt 2>&1; cat $R/gpu.txt
t0=$SECONDS
S=d128_win1024_bwdws_ends_skip,d128_causal_bwdws_ends_skip,d64_causal_bwdws_ends_skip,d128_f16_gqa4_win100_bwdws_skip,d64_f16_gqa2_win37_bwdws_skip
timeout -k 10 200 python3 bench/kernel_lab/lab.py --out $R/check --only $S --skip-bench > $R/check.log 2>&1
echo "check rc=$? ($((SECONDS-t0)) s)"; grep -E 'FAIL|fail|error|ok|PASS' $R/check.log | grep -v ptxas | tail -20
for tool in racecheck synccheck; do
  FLASHC_LAB_SMALL=1 timeout 90 compute-sanitizer --tool $tool --print-limit 20 python3 bench/kernel_lab/lab.py \
    --out $R/san_$tool --skip-bench --reuse-build --only d128_win1024_bwdws_ends_skip,d128_f16_gqa4_win100_bwdws_skip \
    > $R/san_$tool.log 2>&1
  echo "$tool rc=$? ($((SECONDS-t0)) s)"; grep -E 'SUMMARY|FAIL' $R/san_$tool.log | head -5
done
timeout 240 python3 bench/kernel_lab/timeline.py --only \
  d128_win1024_bwdws_ends,d128_win1024_bwdws_ends_skip,d128_causal_bwdws_ends,d128_causal_bwdws_ends_skip \
  --seqlens 1024,16384 --calls 10 > $R/timeline.txt 2>&1
echo "timeline rc=$? ($((SECONDS-t0)) s)"; grep -E 'S= ' $R/timeline.txt | cut -c1-110
left=$((560 - (SECONDS - t0)))
if [ $left -ge 60 ]; then
  timeout $left python3 bench/kernel_lab/phases.py --only d128_win1024_bwdws_probe,d128_win1024_bwdws_probe_skip \
    --seqlens 16384 --json $R/phases.json > $R/phases.txt 2>&1
  echo "phases rc=$? ($((SECONDS-t0)) s)"; grep -v '^==' $R/phases.txt | grep -E 'probe|epilogue|kv wait|walk|between|a step'
fi
