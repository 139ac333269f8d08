#!/bin/bash
# Session 51, call 2 (any GPU): (a) ctest of the device build at the manifest-dim change (a parenthesized symbol or
# literal dim is that symbol or literal) with the new bundle_fuzz_test; (b) Nsight Compute on the ws backward's main
# kernel, window 1024 against causal at S = 16k (kernel lab, library ends): session 50 left "a step lasts one
# warpgroup's dependent chain, not the tensor cores' total work" unchecked.
# Predictions: ctest all pass. ncu: the causal main kernel's tensor pipe busier than the window's (window: short
# walks, 4 of 18 steps masked, a prologue and an epilogue every 18 steps); both stall most on the consumers' waits
# for wgmma results and named barriers (the turns), not on memory; issue slots < 60 % used in both.
set -u
R=$OUT; mkdir -p $R
t0=$SECONDS
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader > $R/gpu.txt 2>&1; cat $R/gpu.txt
OUT=$R/build timeout 150 scripts/device-bench.sh --steps build > $R/build.txt 2>&1
echo "build rc=$? ($((SECONDS-t0)) s)"
(cd build-dev && timeout 150 ctest --output-on-failure > $R/ctest.txt 2>&1); echo "ctest rc=$? ($((SECONDS-t0)) s)"
grep -E "tests passed|Failed|\*\*\*|bundle_fuzz" $R/ctest.txt | head -10
NCU="ncu --clock-control none --section SpeedOfLight --section ComputeWorkloadAnalysis --section WarpStateStats --section SchedulerStats --section Occupancy --section LaunchStats --section SourceCounters"
for cfg in d128_win1024_bwdws_ends d128_causal_bwdws_ends; do
  timeout 200 $NCU --kernel-name regex:_bwd_ws\$ --launch-skip 3 --launch-count 1 \
    python3 bench/kernel_lab/timeline.py --only $cfg --seqlens 16384 --calls 1 > $R/ncu_$cfg.txt 2>&1
  echo "ncu $cfg rc=$? ($((SECONDS-t0)) s)"
  grep -E "Duration|Compute \(SM\) Throughput|Memory Throughput|Issue Slots Busy|Issued Ipc|No Eligible|Warp Cycles Per Issued|Executed Ipc|Tensor|Registers Per|Achieved Occupancy|Stall|stall" $R/ncu_$cfg.txt | head -40
done
