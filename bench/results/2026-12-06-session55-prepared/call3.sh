#!/bin/bash
# Session 55, call 3: dK / dV through shared memory in 16-byte row chunks (`_staged`, kStagedDkDv), after call 2's
# phase probe put the fragment-store epilogue at 7 % of the window row's main kernel (3.3 us a block).
# 1. float64 checks of the staged kernels (lab.py, ragged Sq / Sk, bhsd / bshd, f16 GQA window, D = 64), then
#    racecheck and synccheck on small shapes;
# 2. the phase probe with the staged epilogue (window 16k);
# 3. timeline.py A/B at 16k: window, causal and D = 64 causal, each `_ends` against `_staged`.
# Predictions: checks pass, sanitizers clean; the probe's epilogue 3.3 -> ~1 us a block; main kernel window -4 to
# -5 %, causal (16k) -0.5 to -1 %, D = 64 causal -0.5 to -1 %.
set -u
R=$OUT; mkdir -p $R
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader > $R/gpu.txt 2>&1; cat $R/gpu.txt
t0=$SECONDS
S=d128_win1024_bwdws_staged,d128_causal_bwdws_staged,d64_causal_bwdws_staged,d128_f16_gqa4_win100_bwdws_staged
timeout -k 10 200 python3 bench/kernel_lab/lab.py --out $R/check --only $S --skip-bench > $R/check.log 2>&1
echo "check rc=$? ($((SECONDS-t0)) s)"; grep -E 'FAIL|fail|error|ok|PASS' $R/check.log | grep -v ptxas | tail -20
for tool in racecheck synccheck; do
  FLASHC_LAB_SMALL=1 timeout 90 compute-sanitizer --tool $tool --print-limit 20 python3 bench/kernel_lab/lab.py \
    --out $R/san_$tool --skip-bench --reuse-build --only d128_win1024_bwdws_staged,d128_f16_gqa4_win100_bwdws_staged \
    > $R/san_$tool.log 2>&1
  echo "$tool rc=$? ($((SECONDS-t0)) s)"; grep -E 'SUMMARY|FAIL' $R/san_$tool.log | head -5
done
timeout 120 python3 bench/kernel_lab/phases.py --only d128_win1024_bwdws_probe,d128_win1024_bwdws_probe_staged \
  --seqlens 16384 --json $R/phases.json > $R/phases.txt 2>&1
echo "phases rc=$? ($((SECONDS-t0)) s)"; grep -v '^==' $R/phases.txt | grep -E 'probe|epilogue|kv wait|walk|between|a step'
timeout 240 python3 bench/kernel_lab/timeline.py --only \
  d128_win1024_bwdws_ends,d128_win1024_bwdws_staged,d128_causal_bwdws_ends,d128_causal_bwdws_staged,d64_causal_bwdws_ends,d64_causal_bwdws_staged \
  --seqlens 16384 --calls 10 > $R/timeline.txt 2>&1
echo "timeline rc=$? ($((SECONDS-t0)) s)"; grep -E 'S= ' $R/timeline.txt | cut -c1-110
