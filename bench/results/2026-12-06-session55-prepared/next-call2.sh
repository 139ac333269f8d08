#!/bin/bash
# For the next session, after next-call1.sh: the phase probe (kernel lab, bench/kernel_lab/phases.py) on the card lent,
# with the staged dK / dV epilogue as the lab's default, window 1024 and causal D = 128 at 16k and 4k; the per-block
# costs a persistent key split would address (docs/design/wgmma-backward.md, session 55's lead), measured on an H200
# if one is lent (session 55's run 26-27 numbers are an H100's).
# Predictions (H200 like the H100's run 27): window 16k epilogue ~1.3 us, K / V wait ~1.5, between blocks ~1.1 us a
# block, a step ~2.2 us; outside the walk ~11 % of SMs x span for the window, ~3 % causal.
set -u
R=$OUT; mkdir -p $R
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader > $R/gpu.txt 2>&1; cat $R/gpu.txt
t0=$SECONDS
timeout 240 python3 bench/kernel_lab/phases.py --only d128_win1024_bwdws_probe,d128_causal_bwdws_probe \
  --seqlens 16384,4096 --json $R/phases.json > $R/phases.txt 2>&1
echo "phases rc=$? ($((SECONDS-t0)) s)"; grep -v '^==' $R/phases.txt | grep -E 'probe|kv wait|walk|epilogue|between|tail|a step'
