#!/bin/bash
# Session 44, fourth device call: the tuner over the document row's forward and backward keys (session 43's call 2,
# rebuilt with the segment form the hand rule: each ws one-tile-a-block point named with segments=1 and =0; 49
# bundles: `PYTHONPATH=python python3 -m flashc.tune plan --out .carry/tune44 --kinds attention_forward,
# attention_backward --seqs 16384 "<bench-programmable's document config text>"`). Resumable: carry the progress back
# into the plan directory. A winning entry goes into compiler/tuning/sm_90a.txt with `flashc.tune table --write`.
# Prediction: the hand rule's points (segments=1, the tuned block sizes) stay within 2 % of the best; segments=0
# points lose 20-25 % on the forward (session 43's A/B), ~3 % on the backward.
cd "$(dirname "$0")/../../.."
R=$OUT; mkdir -p $R
export FLASHC_DEVICE_WORK=/tmp/fd
[ -x build-dev/bin/flashc-run ] || { OUT=$R/dr timeout 200 scripts/device-bench.sh --steps build > $R/build.txt 2>&1; echo "build rc=$?"; rm -rf $R/dr; }
export FLASHC_RUNTIME_LIB=$PWD/build-dev/runtime/libflashc_runtime.so PYTHONPATH=$PWD/python
t0=$SECONDS
# First the plan kernel's contiguous reads (two 16-byte loads a thread; the document bundles of .carry/t44 and
# .carry/bp44 rebuilt with it): predicted 9.1 -> ~3-4 us a launch, every check passing.
run_doc() {
  local b="$1" R="$2"
  { timeout 40 build-dev/bin/flashc-run $b --require-gpu --batch 2 --seq-q 1000 --seq-k 1000 &&
    timeout 60 build-dev/bin/flashc-run $b --require-gpu --batch 1 --seq-q 3000 --seq-k 3000; } > $R/run_$(basename $b).txt 2>&1 ||
    echo "FAIL $(basename $b)"
}
export -f run_doc
ls -d .carry/t44/attn_*mod6ac147f1* .carry/t44/attn_*mod650faa1f* | xargs -P 6 -I{} bash -c 'run_doc "$1" "$2"' _ {} $R
echo "flashc-run over the document bundles: $(cat $R/run_attn_*.txt | grep -E 'checks, ' | awk '{c+=$1; f+=$3} END {print c " checks, " f " failed"}') ($((SECONDS-t0)) s)"
cat $R/run_attn_*.txt > $R/flashc_run_docs.txt; rm -f $R/run_attn_*.txt
FLASHC_BUNDLE_PATH=$PWD/.carry/t44 timeout 100 python3 -m unittest discover -s python/tests -p test_gpu_attention.py -k document -v > $R/gpu_documents.txt 2>&1
echo "test_gpu_attention -k document rc=$? $(grep -E '^Ran|^OK|^FAILED' $R/gpu_documents.txt | tr '\n' ' ') ($((SECONDS-t0)) s)"
FLASHC_BUNDLE_PATH=$PWD/.carry/bp44 FLASHC_CACHE_DIR=/tmp/mc_bp44 timeout 60 python3 bench/probes/mask_mod_profile.py document 5 --timeline > $R/tl_doc.txt 2>&1
echo "== doc: $(grep -E 'attention_fwd|segments|mask_blocks|attention_bwd' $R/tl_doc.txt | awk '{print $1 " " $(NF-1)}' | tr '\n' ' ') ($((SECONDS-t0)) s)"
OUT=$R/t_tune44 timeout 260 scripts/device-bench.sh --steps tune --tune-plan .carry/tune44 --tune-args "--budget 220 --lead-us auto" > $R/tune_tune44.txt 2>&1; echo "tune tune44 rc=$?"
cp $R/t_tune44/tune/progress.jsonl $R/progress_tune44.jsonl 2>/dev/null; cp $R/t_tune44/tune/tune-report.md $R/report_tune44.md 2>/dev/null
tail -6 $R/tune_tune44.txt
tar czf $R/logs.tgz -C $R $(cd $R && ls -d t_* 2>/dev/null) 2>/dev/null; rm -rf $R/t_*
