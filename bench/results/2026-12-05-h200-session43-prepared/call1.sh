#!/bin/bash
# Prepared in session 43 (no device was lent): the first device call of the next session (nvidia-h200, ~8 min), the
# document mask's segment form (segments.cuh) checked and timed. Carry: .carry/seg (the 10 document-mask bundles of
# the `tests` and `bench-programmable` sets, FlexAttention's document_causal spelling and two score modifiers among
# them, built with
# segments-everywhere.txt; rebuild:
#   grep the keys with `prebuild --list tests bench-programmable | grep -E 'mod6ac147f1|mod650faa1f_612c'`, then
#   PYTHONPATH=python FLASHC_COMPILER=build/bin/flashc python3 -m flashc.prebuild --out .carry/seg \
#     --tuning-table bench/results/2026-12-05-h200-session43-prepared/segments-everywhere.txt <their config texts>),
# .carry/ab (session 42's `prebuild --out .carry/ab bench-programmable bench-attention`: the default forms), this script.
#  1. flashc-run's float64 checks over every .carry/seg bundle at sizes that take the segment form (sorted ids, few
#     documents: 1000 x 1000 and 300 x 300 with flashc-run's runs of 1-600 ids) and the fallback (Sq != Sk; 3000 x 3000,
#     whose ids wrap around 8 and so go down);
#  2. racecheck and memcheck on the bench's document bundle (segment form) and a D = 64 one;
#  3. test_document_segments and test_document_masks with the segment bundles first on the path;
#  4. the A/B: the document row's kernels (torch.profiler), default (.carry/ab) and segment form (.carry/seg), twice;
#  5. bench_programmable --kernel-times with the segment form's document bundle;
#  6. Nsight Compute (details and SASS source counters) of the segment form's document forward, and the plan kernel's
#     duration, so that a miss of the prediction has its evidence in the same call.
cd "$(dirname "$0")/../../.."
R=$OUT; mkdir -p $R
export FLASHC_DEVICE_WORK=/tmp/fd
OUT=$R/dr timeout 200 scripts/device-bench.sh .carry/seg --steps build > $R/build.txt 2>&1; echo "build rc=$?"; rm -rf $R/dr
export FLASHC_RUNTIME_LIB=$PWD/build-dev/runtime/libflashc_runtime.so PYTHONPATH=$PWD/python
run_seg() {
  local b="$1" R="$2"
  { timeout 40 build-dev/bin/flashc-run $b --require-gpu --batch 2 --seq-q 1000 --seq-k 1000 &&
    timeout 40 build-dev/bin/flashc-run $b --require-gpu --batch 1 --seq-q 300 --seq-k 300 &&
    timeout 40 build-dev/bin/flashc-run $b --require-gpu --batch 1 --seq-q 257 --seq-k 300 &&
    timeout 60 build-dev/bin/flashc-run $b --require-gpu --batch 1 --seq-q 3000 --seq-k 3000; } > $R/run_$(basename $b).txt 2>&1 ||
    echo "FAIL $(basename $b)"
}
export -f run_seg
ls -d .carry/seg/attn_* | xargs -P 6 -I{} bash -c 'run_seg "$1" "$2"' _ {} $R
echo "flashc-run over $(ls -d .carry/seg/attn_* | wc -l) segment bundles: $(cat $R/run_attn_*.txt | grep -E 'checks, ' | awk '{c+=$1; f+=$3} END {print c " checks, " f " failed"}')"
CS=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer | head -1)
for b in attn_bf16_h16kv16_d128_causal_mod6ac147f1_37f54dd5325d attn_bf16_h2kv2_d64_causal_mod6ac147f1_fb189282e007; do
  for tool in racecheck memcheck; do
    timeout 90 $CS --tool $tool --error-exitcode 3 build-dev/bin/flashc-run .carry/seg/$b --batch 1 --seq-q 1000 --seq-k 1000 > $R/${tool}_$b.txt 2>&1
    echo "$tool $b: rc=$? $(grep -E 'SUMMARY' $R/${tool}_$b.txt | head -1)"
  done
done
FLASHC_BUNDLE_PATH=$PWD/.carry/seg:$PWD/.carry/t42 timeout 150 python3 -m unittest discover -s python/tests \
  -p test_gpu_attention.py -k test_document_segments -k test_document_masks -k test_score_modifiers -v > $R/unittest.txt 2>&1
echo "unittest rc=$? $(tail -1 $R/unittest.txt)"
for round in 1 2; do for D in ab seg; do
  FLASHC_BUNDLE_PATH=$PWD/.carry/$D:$PWD/.carry/ab FLASHC_CACHE_DIR=/tmp/mc_$D timeout 60 python3 bench/probes/mask_mod_profile.py document 5 --timeline > $R/tl_doc_${D}_$round.txt 2>&1
  echo "== $round $D doc: $(grep -E 'attention_fwd|segments|mask_blocks' $R/tl_doc_${D}_$round.txt | awk '{print $1 " " $(NF-1)}' | tr '\n' ' ')"
done; done
FLASHC_BUNDLE_PATH=$PWD/.carry/seg:$PWD/.carry/ab FLASHC_CACHE_DIR=/tmp/mc_seg timeout 150 python3 bench/bench_programmable.py --lead-us auto --kernel-times 5 --out $R/bp > $R/bp.log 2>&1
echo "bench_programmable rc=$?"; grep "^|" $R/bp/bench_programmable.md 2>/dev/null | cut -d'|' -f1-8
NCU="ncu --clock-control none --section WarpStateStats --section SchedulerStats --section InstructionStats --section SourceCounters --section LaunchStats --section SpeedOfLight"
FLASHC_BUNDLE_PATH=$PWD/.carry/seg:$PWD/.carry/ab FLASHC_CACHE_DIR=/tmp/mc_seg timeout 100 $NCU --kernel-name regex:'flashc_attention_attention_(fwd|fwd_segments|bwd_segments)$' --launch-skip 2 --launch-count 2 -o $R/ncu_doc_seg python3 bench/probes/mask_mod_profile.py document 2 > $R/ncu_doc_seg_log.txt 2>&1
echo "ncu rc=$?"
ncu -i $R/ncu_doc_seg.ncu-rep --page details > $R/ncu_doc_seg_details.txt 2>&1
ncu -i $R/ncu_doc_seg.ncu-rep --page source --csv --print-source sass > $R/ncu_doc_seg_sass.csv 2>&1
grep -E "flashc_attention|Duration|Executed Instructions  " $R/ncu_doc_seg_details.txt | tr -s ' ' | head -8
