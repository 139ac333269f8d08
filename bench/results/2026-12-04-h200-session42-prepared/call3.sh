#!/bin/bash
# Prepared in session 42 (no device was lent): a device call after call2.sh (nvidia-h200, ~8 min). Carry: .carry/ab
# (`prebuild --out .carry/ab bench-programmable bench-attention` at the session's last commit), .carry/wf (the same
# with walk-first-block.patch applied to the device headers), this script.
#  1. A/B of walk-first-block.patch: the document row's forward and backward main kernels (torch.profiler), alternated
#     twice (predicted: forward -1 to -3 %, backward 0 to -1 %);
#  2. Nsight Compute, source level (SASS with stall samples), of the forward kernels of the document row and the window
#     attribute: where the table path's time goes (model: +84 us over the attribute's rate on the same blocks);
#  3. bench_programmable with kernel times: #16's rows, the window written as a modifier now on the window
#     attribute's kernels (predicted: that row 0.64 / 0.77 like the attribute's, within the runs' 2 % spread).
cd "$(dirname "$0")/../../.."
R=$OUT; mkdir -p $R
export FLASHC_DEVICE_WORK=/tmp/fd
[ -x build-dev/bin/flashc-run ] || { OUT=$R/dr timeout 200 scripts/device-bench.sh .carry/ab --steps build > $R/build.txt 2>&1; echo "build rc=$?"; rm -rf $R/dr; }
export FLASHC_RUNTIME_LIB=$PWD/build-dev/runtime/libflashc_runtime.so PYTHONPATH=$PWD/python
for round in 1 2; do for D in ab wf; do
  FLASHC_BUNDLE_PATH=$PWD/.carry/$D FLASHC_CACHE_DIR=/tmp/mc_$D timeout 60 python3 bench/probes/mask_mod_profile.py document 5 --timeline > $R/tl_doc_${D}_$round.txt 2>&1
  echo "== $round $D doc fwd: $(grep -E 'attention_fwd ' $R/tl_doc_${D}_$round.txt | awk '{print $(NF-1)}') bwd: $(grep -E 'attention_bwd ' $R/tl_doc_${D}_$round.txt | awk '{print $(NF-1)}')"
done; done
NCU="ncu --clock-control none --section WarpStateStats --section SchedulerStats --section InstructionStats --section SourceCounters --section LaunchStats --section SpeedOfLight"
for row in document window_attr; do
  FLASHC_BUNDLE_PATH=$PWD/.carry/ab FLASHC_CACHE_DIR=/tmp/mc_ab timeout 100 $NCU --kernel-name regex:'flashc_attention_attention_fwd$' --launch-skip 1 --launch-count 1 -o $R/ncu_$row python3 bench/probes/mask_mod_profile.py $row 2 > $R/ncu_${row}_log.txt 2>&1
  echo "ncu $row rc=$?"
  ncu -i $R/ncu_$row.ncu-rep --page details > $R/ncu_${row}_details.txt 2>&1
  ncu -i $R/ncu_$row.ncu-rep --page raw --csv > $R/ncu_${row}_raw.csv 2>&1
  ncu -i $R/ncu_$row.ncu-rep --page source --csv --print-source sass > $R/ncu_${row}_sass.csv 2>&1
  echo "  $(grep -E 'Duration|Executed Instructions  ' $R/ncu_${row}_details.txt | tr -s ' ' | tr '\n' ';') sass rows $(wc -l < $R/ncu_${row}_sass.csv)"
done
FLASHC_BUNDLE_PATH=$PWD/.carry/ab FLASHC_CACHE_DIR=/tmp/mc_ab timeout 120 python3 bench/bench_programmable.py --lead-us auto --kernel-times 5 --out $R/bp > $R/bp.log 2>&1
echo "bench_programmable rc=$?"; grep "^|" $R/bp/bench_programmable.md 2>/dev/null | cut -d'|' -f1-8
