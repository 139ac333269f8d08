#!/bin/bash
# Session 44, third device call: the segment form as the default for document compares (the hand rule) with the
# block-class kernels' grid fixed (their grid had the segment kernels' quarter more: rows past the table written
# where the plan fell back) and the plan kernel's shuffle scan. .carry/t44: the `tests` bundles rebuilt with the
# default; .carry/bp44: bench-programmable's. Predictions: every check passes; the document row's plan kernel
# 13.8 -> ~4-5 us (shuffle scans, the maps filled a row a thread by bisection); bench_programmable document forward ~0.67, backward ~0.74 (kernel times).
cd "$(dirname "$0")/../../.."
R=$OUT; mkdir -p $R
export FLASHC_DEVICE_WORK=/tmp/fd
t0=$SECONDS
[ -x build-dev/bin/flashc-run ] || { OUT=$R/dr timeout 200 scripts/device-bench.sh .carry/t44 --steps build > $R/build.txt 2>&1; echo "build rc=$? $((SECONDS-t0)) s"; rm -rf $R/dr; }
export FLASHC_RUNTIME_LIB=$PWD/build-dev/runtime/libflashc_runtime.so PYTHONPATH=$PWD/python
run_doc() {
  local b="$1" R="$2"
  { timeout 40 build-dev/bin/flashc-run $b --require-gpu --batch 2 --seq-q 1000 --seq-k 1000 &&
    timeout 40 build-dev/bin/flashc-run $b --require-gpu --batch 1 --seq-q 257 --seq-k 300 &&
    timeout 60 build-dev/bin/flashc-run $b --require-gpu --batch 1 --seq-q 3000 --seq-k 3000; } > $R/run_$(basename $b).txt 2>&1 ||
    echo "FAIL $(basename $b)"
}
export -f run_doc
DOCS=$(ls -d .carry/t44/attn_*mod6ac147f1* .carry/t44/attn_*mod650faa1f*)
echo "$DOCS" | xargs -P 6 -I{} bash -c 'run_doc "$1" "$2"' _ {} $R
echo "flashc-run over $(echo "$DOCS" | wc -l) document bundles: $(cat $R/run_attn_*.txt | grep -E 'checks, ' | awk '{c+=$1; f+=$3} END {print c " checks, " f " failed"}') ($((SECONDS-t0)) s)"
mkdir -p $R/keep; cat $R/run_attn_*.txt > $R/keep/flashc_run_docs.txt; rm -f $R/run_attn_*.txt
CS=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer | head -1)
B=$(echo "$DOCS" | grep h4kv2_d128_causal | head -1)
timeout 90 $CS --tool memcheck --error-exitcode 3 build-dev/bin/flashc-run $B --batch 1 --seq-q 3000 --seq-k 3000 > $R/keep/memcheck_fallback.txt 2>&1
echo "memcheck fallback $(basename $B): rc=$? $(grep -E 'SUMMARY' $R/keep/memcheck_fallback.txt | head -1) ($((SECONDS-t0)) s)"
FLASHC_BUNDLE_PATH=$PWD/.carry/t44 timeout 230 python3 -m unittest discover -s python/tests -p test_gpu_attention.py -v > $R/keep/gpu_attention.txt 2>&1
echo "test_gpu_attention rc=$? $(grep -E '^Ran|^OK|^FAILED' $R/keep/gpu_attention.txt | tr '\n' ' ') ($((SECONDS-t0)) s)"
grep -E "^(FAIL|ERROR):" $R/keep/gpu_attention.txt | head -10
FLASHC_BUNDLE_PATH=$PWD/.carry/bp44 FLASHC_CACHE_DIR=/tmp/mc_bp44 timeout 60 python3 bench/probes/mask_mod_profile.py document 5 --timeline > $R/keep/tl_doc.txt 2>&1
echo "== doc: $(grep -E 'attention_fwd|segments|mask_blocks|attention_bwd' $R/keep/tl_doc.txt | awk '{print $1 " " $(NF-1)}' | tr '\n' ' ')"
FLASHC_BUNDLE_PATH=$PWD/.carry/bp44 FLASHC_CACHE_DIR=/tmp/mc_bp44 timeout 170 python3 bench/bench_programmable.py --lead-us auto --kernel-times 5 --out $R/keep/bp > $R/keep/bp.log 2>&1
echo "bench_programmable rc=$? ($((SECONDS-t0)) s)"; grep "^|" $R/keep/bp/bench_programmable.md 2>/dev/null | cut -d'|' -f1-8
echo "total $((SECONDS-t0)) s"; tar czf $R/keep.tgz -C $R keep && rm -rf $R/keep
