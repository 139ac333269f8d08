#!/bin/bash
# Session 58, call 3: Nsight Compute on the prefix-LM forward (bench_programmable's row, S = 16k), the hand rule's
# 128-key block (.carry/t57) beside the 192-key candidate (.carry/t57w), because call 2's gain (2.7 %, the tuner 0-5 %)
# disagreed with the prediction (8-14 %). Predicted: the 192-key kernel issues ~8 % fewer instructions per key
# (one softmax rescale a 192-key block instead of a 128-key one) but its element mask (column by column, 8 bytes of
# spills) and the diagonal blocks' masked share (192-key blocks reach further past the diagonal: 1.5x the masked
# keys) take most of it back; tensor pipe utilisation within 3 % of each other.
set -u
R=$OUT; mkdir -p $R
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader > $R/gpu.txt 2>&1; cat $R/gpu.txt
[ -d .carry/t57 ] || tar -xJf .carry/t57.tar.xz -C .carry
( [ -d build-dev ] || cmake -G Ninja -S . -B build-dev -DFLASHC_RUNTIME_ONLY=ON >/dev/null ) && ninja -C build-dev >/dev/null
export FLASHC_RUNTIME_LIB=$PWD/build-dev/runtime/libflashc_runtime.so PYTHONPATH=$PWD/python
NCU="ncu --clock-control none --section SpeedOfLight --section WarpStateStats --section LaunchStats --section Occupancy --section InstructionStats --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis"
for form in t57 t57w; do
  FLASHC_BUNDLE_PATH=$PWD/.carry/$form FLASHC_CACHE_DIR=/tmp/mc-$form timeout 200 $NCU --kernel-name regex:flashc_ \
    --launch-skip 2 --launch-count 1 python3 bench/probes/mask_mod_profile.py prefix_lm 3 > $R/ncu_prefix_$form.txt 2>&1
  echo "== $form rc=$?"
  grep -E "^  [a-z_]*flashc|Duration|Compute \(SM\) Throughput|Executed Ipc A|Issue Slots Busy|Executed Instructions  |Registers Per|Local Memory|Stall|No Eligible|Warp Cycles Per Issued" $R/ncu_prefix_$form.txt | head -30
done
