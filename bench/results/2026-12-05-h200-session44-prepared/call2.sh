#!/bin/bash
# Session 44, second device call (same warm machine: build-dev kept): the plan kernel's coalesced passes
# (.carry/seg2: the 10 segment bundles rebuilt with them) checked against float64 and timed against .carry/seg's.
# Predicted: plan kernel 19 us -> 3-4 us; the document row's forward kernels 278 -> ~263 us (-5 %), backward -15 us.
cd "$(dirname "$0")/../../.."
R=$OUT; mkdir -p $R
export FLASHC_DEVICE_WORK=/tmp/fd
t0=$SECONDS
[ -x build-dev/bin/flashc-run ] || { OUT=$R/dr timeout 200 scripts/device-bench.sh .carry/seg2 --steps build > $R/build.txt 2>&1; echo "build rc=$?"; rm -rf $R/dr; }
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
ls -d .carry/seg2/attn_* | xargs -P 6 -I{} bash -c 'run_seg "$1" "$2"' _ {} $R
echo "flashc-run over $(ls -d .carry/seg2/attn_* | wc -l) segment bundles: $(cat $R/run_attn_*.txt | grep -E 'checks, ' | awk '{c+=$1; f+=$3} END {print c " checks, " f " failed"}') ($((SECONDS-t0)) s)"
FLASHC_BUNDLE_PATH=$PWD/.carry/seg2:$PWD/.carry/t42 timeout 200 python3 -m unittest discover -s python/tests \
  -p test_gpu_attention.py -k test_document_segments -v > $R/unittest_segments.txt 2>&1
echo "test_document_segments rc=$? $(tail -1 $R/unittest_segments.txt) ($((SECONDS-t0)) s)"
for round in 1 2; do for D in seg seg2; do
  FLASHC_BUNDLE_PATH=$PWD/.carry/$D:$PWD/.carry/ab FLASHC_CACHE_DIR=/tmp/mc_$D timeout 60 python3 bench/probes/mask_mod_profile.py document 5 --timeline > $R/tl_doc_${D}_$round.txt 2>&1
  echo "== $round $D doc: $(grep -E 'attention_fwd|segments|mask_blocks|attention_bwd' $R/tl_doc_${D}_$round.txt | awk '{print $1 " " $(NF-1)}' | tr '\n' ' ')"
done; done
echo "total $((SECONDS-t0)) s"
