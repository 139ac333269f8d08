#!/bin/bash
# Session 45, first device call (prepared; no device was lent in session 45): the segment form's tiles longest first
# across documents (`segment_order=longest`, segments.cuh's counting sort; opt-in). Bundles, built here:
#   .carry/t45l  = `prebuild --tuning-table bench/results/2026-12-05-h200-session45-prepared/segments-longest.txt` of
#                  the `tests` set's 10 document-compare configs (the same configs as session 44's .carry/t44);
#   .carry/bp45l = the same table, `bench-programmable`;
#   .carry/bp45  = `prebuild bench-programmable` at the documents' order (the default; kernels.cu as session 44's bp44).
# carry: [".carry/t45l", ".carry/bp45l", ".carry/bp45", ".carry/t44"] (t44: the other bundles test_gpu_attention's
# document tests open).
# Predictions (written before the run):
#  - segment_plan_test (the plan kernel against the CPU): 0 failed.
#  - flashc-run over the 10 bundles in the longest-first order: every check passes (the map is a permutation of the
#    same tiles; the fallback at ids that go down is unchanged). racecheck / memcheck of the plan kernel: 0 hazards.
#  - test_gpu_attention -k document: OK.
#  - The plan kernel: 6.9 -> 7-8 us (a histogram, a 2048-bucket scan and a placement pass a map).
#  - Document row (H = 16, S = 16k, 13 documents), kernel times: backward main 611 -> 585-595 us (-2.5 to -4 %: the
#    greedy-scheduler model, bench/probes/tile_time_model.py --backward, gives 612 -> 590 us, -3.7 %), forward
#    257 -> 248-252 us (-2 to -3.5 %; the model: -3.1 %); bench_programmable's document row 0.673 / ~0.72 (documents' order, after
#    session 44's table change) -> ~0.655 / ~0.70 x Flex.
cd "$(dirname "$0")/../../.."
R=$OUT; mkdir -p $R
export FLASHC_DEVICE_WORK=/tmp/fd
[ -x build-dev/bin/flashc-run ] || { OUT=$R/dr timeout 200 scripts/device-bench.sh --steps build > $R/build.txt 2>&1; echo "build rc=$?"; rm -rf $R/dr; }
export FLASHC_RUNTIME_LIB=$PWD/build-dev/runtime/libflashc_runtime.so PYTHONPATH=$PWD/python
t0=$SECONDS
# The plan kernel alone against the CPU (test/GPU/segment_plan_test.cpp: every order's maps, weights non-increasing
# longest first, a document of 2100 tiles past the last bucket, the fallbacks).
timeout 60 build-dev/test/GPU/segment_plan_test > $R/segment_plan_test.txt 2>&1
echo "segment_plan_test rc=$? $(tail -1 $R/segment_plan_test.txt) ($((SECONDS-t0)) s)"
run_doc() {
  local b="$1" R="$2"
  { timeout 40 build-dev/bin/flashc-run $b --require-gpu --batch 2 --seq-q 1000 --seq-k 1000 &&
    timeout 60 build-dev/bin/flashc-run $b --require-gpu --batch 1 --seq-q 3000 --seq-k 3000; } > $R/run_$(basename $b).txt 2>&1 ||
    echo "FAIL $(basename $b)"
}
export -f run_doc
ls -d .carry/t45l/attn_* | xargs -P 6 -I{} bash -c 'run_doc "$1" "$2"' _ {} $R
echo "flashc-run over $(ls -d .carry/t45l/attn_* | wc -l) longest-first bundles: $(cat $R/run_attn_*.txt | grep -E 'checks, ' | awk '{c+=$1; f+=$3} END {print c " checks, " f " failed"}') ($((SECONDS-t0)) s)"
cat $R/run_attn_*.txt > $R/flashc_run_longest.txt; rm -f $R/run_attn_*.txt
CS=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer | head -1)
for tool in racecheck memcheck; do
  timeout 90 $CS --tool $tool --error-exitcode 3 --kernel-regex kns=segments build-dev/bin/flashc-run \
    .carry/t45l/attn_bf16_h4kv2_d128_causal_mod6ac147f1_740e3d93d1a3 --batch 1 --seq-q 3000 --seq-k 3000 > $R/${tool}_plan.txt 2>&1
  echo "$tool (the plan kernels) rc=$? $(grep -E 'SUMMARY' $R/${tool}_plan.txt | head -1)"
done
FLASHC_BUNDLE_PATH=$PWD/.carry/t45l:$PWD/.carry/t44 timeout 120 python3 -m unittest discover -s python/tests \
  -p test_gpu_attention.py -k document -v > $R/gpu_documents.txt 2>&1
echo "test_gpu_attention -k document rc=$? $(grep -E '^Ran|^OK|^FAILED' $R/gpu_documents.txt | tr '\n' ' ') ($((SECONDS-t0)) s)"
# The A/B: the document row's kernels in both orders, alternating, twice.
for round in 1 2; do for B in bp45 bp45l; do
  FLASHC_BUNDLE_PATH=$PWD/.carry/$B FLASHC_CACHE_DIR=/tmp/mc_$B timeout 60 python3 bench/probes/mask_mod_profile.py document 5 --timeline > $R/tl_doc_${B}_$round.txt 2>&1
  echo "== $round $B: $(grep -E 'attention_fwd|segments|mask_blocks|attention_bwd' $R/tl_doc_${B}_$round.txt | awk '{print $1 " " $(NF-1)}' | tr '\n' ' ')"
done; done
for B in bp45 bp45l; do
  FLASHC_BUNDLE_PATH=$PWD/.carry/$B FLASHC_CACHE_DIR=/tmp/mc_$B timeout 150 python3 bench/bench_programmable.py --rows document --lead-us auto --kernel-times 5 --out $R/bp_$B > $R/bp_$B.log 2>&1
  echo "bench_programmable $B rc=$?"; grep "^| document" $R/bp_$B/bench_programmable.md 2>/dev/null | cut -d'|' -f1-8
done
echo "($((SECONDS-t0)) s)"
