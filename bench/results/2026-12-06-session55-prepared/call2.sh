#!/bin/bash
# Session 55, call 2: the phase probe (bench/kernel_lab/phases.py) on the window-1024 and causal D = 128 backward main
# kernels at 16k and 4k tokens, and timeline.py's A/B of each probe build against the same kernel without the probe
# (the probe must not move the main kernel by more than ~1 %), and of the K / V prefetch a wave ahead (`_kvahead`:
# the producer warms the block 132 launch indices later in L2).
# Predictions (16k, per key block, window): K / V wait 1.5-2.5 us, fill 0.5-1 us, walk ~40 us (18 steps), drain
# ~1 us, epilogue 1-2 us, between blocks 1-2 us; outside the walk ~10-14 % of SMs x span against ~2-3 % for the
# causal kernel, whose longest walks' steps are ~10 % shorter than the window's. _kvahead: the window's main kernel
# shorter by about the K / V wait's share beyond an L2 hit's (1-4 %), the causal one level (within 0.5 %).
set -u
R=$OUT; mkdir -p $R
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader > $R/gpu.txt 2>&1; cat $R/gpu.txt
t0=$SECONDS
timeout 240 python3 bench/kernel_lab/phases.py --only d128_win1024_bwdws_probe,d128_causal_bwdws_probe \
  --seqlens 16384,4096 --json $R/phases.json > $R/phases.txt 2>&1
echo "phases rc=$? ($((SECONDS-t0)) s)"; cat $R/phases.txt | grep -v '^==' | tail -40
timeout 240 python3 bench/kernel_lab/timeline.py --only \
  d128_win1024_bwdws_ends,d128_win1024_bwdws_probe,d128_win1024_bwdws_kvahead,d128_causal_bwdws_ends,d128_causal_bwdws_probe,d128_causal_bwdws_kvahead \
  --seqlens 16384 --calls 10 > $R/timeline.txt 2>&1
echo "timeline rc=$? ($((SECONDS-t0)) s)"; grep -E 'S= ' $R/timeline.txt
