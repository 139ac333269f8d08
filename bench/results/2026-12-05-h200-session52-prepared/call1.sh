#!/bin/bash
# Session 52, call 1 (the H200): (a) session 51's code on a GPU: ctest of the device build (bundle_fuzz_test among
# them) and the Python GPU tests, on bundles built at HEAD (.carry/t52, 195 bundles); (b) the window backward's
# per-step excess over the causal one, split: the kernel lab's main kernel at 16k with the element mask never applied
# (_nomask, timing only), with 33 heads (32 whole waves, _h33), against _ends and causal; (c) Nsight Compute on the
# window and causal main kernels (session 51's call 2, never run).
# Predictions: ctest all pass; every Python file exits 0. Timeline (H200, 16k, main kernel): window _ends 740-800 us;
# _nomask 3-6 % shorter (4 of 18 steps masked); _h33 per head 2-3.5 % shorter than _ends' (16 heads: 15.5 waves, the
# last half empty); causal 4.5-4.9 ms. ncu: the causal kernel's tensor pipe busier than the window's; both stall
# most on wgmma waits and named barriers, not memory; issue slots < 60 % used in both.
set -u
R=$OUT; mkdir -p $R
t0=$SECONDS
[ -d .carry/t52 ] || tar -xJf .carry/t52.tar.xz -C .carry  # (carried packed: the tree and 42 MB of bundles pass 64 MiB)
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader > $R/gpu.txt 2>&1; cat $R/gpu.txt
CFGS=d128_win1024_bwdws_ends,d128_win1024_bwdws_nomask,d128_win1024_h33_bwdws_ends,d128_causal_bwdws_ends
# The lab's builds in the background (16 cores) while the runtime builds and its tests run.
(timeout 300 python3 bench/kernel_lab/lab.py --only $CFGS --skip-bench --skip-check --out /tmp/labout > $R/lab_build.txt 2>&1; echo "lab build rc=$?" >> $R/lab_build.txt) &
LAB=$!
OUT=$R/build timeout 150 scripts/device-bench.sh .carry/t52 --steps build > $R/build.txt 2>&1
echo "build rc=$? ($((SECONDS-t0)) s)"
(cd build-dev && timeout 150 ctest --output-on-failure > $R/ctest.txt 2>&1); echo "ctest rc=$? ($((SECONDS-t0)) s)"
grep -E "tests passed|Failed|\*\*\*" $R/ctest.txt | head -10
tests="test_gpu_attention.py test_gpu_decode.py test_gpu_varlen.py test_gpu_moe.py test_gpu_key_offset.py test_gpu_bundle.py test_gpu_ffn_native.py test_gpu_ffn.py"
OUT=$R/suite timeout 240 scripts/device-bench.sh .carry/t52 --steps test --tests "$tests" > $R/pytests.txt 2>&1
echo "pytests rc=$? ($((SECONDS-t0)) s)"; grep -E "^=== .*exit" $R/pytests.txt
grep -hE "^(FAIL|ERROR):" /tmp/flashc-device/logs/python_*.log 2>/dev/null | head -10
wait $LAB; tail -1 $R/lab_build.txt; grep -E "_bwd_ws'|spill" $R/lab_build.txt | head -16
timeout 120 python3 bench/kernel_lab/timeline.py --only $CFGS --seqlens 16384 --calls 10 > $R/timeline.txt 2>&1
echo "timeline rc=$? ($((SECONDS-t0)) s)"; cat $R/timeline.txt | grep -v Warning | tail -6
NCU="ncu --clock-control none --section SpeedOfLight --section ComputeWorkloadAnalysis --section WarpStateStats --section SchedulerStats --section Occupancy --section LaunchStats"
for cfg in d128_win1024_bwdws_ends d128_causal_bwdws_ends; do
  left=$((585 - (SECONDS - t0))); [ $left -lt 40 ] && { echo "ncu $cfg skipped (time)"; continue; }
  timeout $left $NCU --kernel-name regex:_bwd_ws\$ --launch-skip 3 --launch-count 1 \
    python3 bench/kernel_lab/timeline.py --only $cfg --seqlens 16384 --calls 1 > $R/ncu_$cfg.txt 2>&1
  echo "ncu $cfg rc=$? ($((SECONDS-t0)) s)"
  grep -E "Duration|Compute \(SM\) Throughput|Memory Throughput|Issue Slots Busy|Issued Ipc|No Eligible|Warp Cycles Per Issued|Executed Ipc|Registers Per|Achieved Occupancy|Active Warps Per|Eligible Warps" $R/ncu_$cfg.txt | head -20
done
rm -rf $R/build $R/suite/device-logs.tgz
tar -czf $R/call1.tgz -C $R --exclude=call1.tgz . 2>/dev/null
find $R -type f ! -name call1.tgz ! -name gpu.txt ! -name timeline.txt -delete
