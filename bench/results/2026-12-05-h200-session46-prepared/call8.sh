#!/bin/bash
# Session 46 (prepared): dq_fill=convert through the compiler (lever 2: dQ converted in the main kernel), to run only
# after kernel lab run 19 (call7) has passed its checks. Bundles, built here (README.md):
#   .carry/t46c  = the `tests` set's 121 attention configs with convert.txt (the key split at 64 queries a step converts;
#                  D <= 64 and the role split zero ahead only; the rest keep the fill);
#   .carry/ba46c = bench-attention bench-attention-padded with convert.txt (call6's .carry/ba46 / ba46z beside it).
# carry: [".carry/t46c", ".carry/ba46c", ".carry/ba46"]
# Predictions: flashc-run --poison-scratch: every check passes (a part converted early, or a count that never reaches
# its last reduction and leaves the part to the postprocess, shows only in the first case: wrong dQ); bench_attention:
# the backward rows of D = 80 / 96 / 128 a further -35 to -45 us over zero-ahead alone (the postprocess's 48 us less
# its flag reads), S = 1k causal +10-12 % over the hand rules in all.
cd "$(dirname "$0")/../../.."
R=$OUT; mkdir -p $R
export FLASHC_DEVICE_WORK=/tmp/fd
[ -x build-dev/bin/flashc-run ] || { OUT=$R/dr timeout 200 scripts/device-bench.sh --steps build > $R/build.txt 2>&1; echo "build rc=$?"; rm -rf $R/dr; }
export FLASHC_RUNTIME_LIB=$PWD/build-dev/runtime/libflashc_runtime.so PYTHONPATH=$PWD/python
t0=$SECONDS
run_poisoned() {
  local b="$1" R="$2"
  { timeout 40 build-dev/bin/flashc-run $b --require-gpu --poison-scratch &&
    timeout 60 build-dev/bin/flashc-run $b --require-gpu --poison-scratch --batch 1 --seq-q 1000 --seq-k 700; } \
    > $R/run_$(basename $b).txt 2>&1 || echo "FAIL $(basename $b)"
}
export -f run_poisoned
ls -d .carry/t46c/attn_* | xargs -P 6 -I{} bash -c 'run_poisoned "$1" "$2"' _ {} $R
echo "flashc-run --poison-scratch over $(ls -d .carry/t46c/attn_* | wc -l) convert bundles: $(cat $R/run_*.txt | grep -E 'checks, ' | awk '{c+=$1; f+=$3} END {print c " checks, " f " failed"}') ($((SECONDS-t0)) s)"
cat $R/run_*.txt > $R/flashc_run_t46c.txt; rm -f $R/run_*.txt
for round in 1 2; do for B in ba46 ba46c; do
  for dims in "64,128" "80,96 --heads 16"; do
    tag=${B}_${round}_$(echo $dims | cut -d' ' -f1 | tr ',' '-')
    FLASHC_BUNDLE_PATH=$PWD/.carry/$B FLASHC_CACHE_DIR=/tmp/mc_$B timeout 200 python3 bench/bench_attention.py \
      --peers flashc --head-dims $dims --rounds 1 --check-heads 0 --no-load-time --out $R/ba_$tag > $R/ba_$tag.log 2>&1
    echo "== round $round $B D=$dims rc=$? ($((SECONDS-t0)) s)"
    grep -E "^\| [0-9]" $R/ba_$tag/bench_attention.md 2>/dev/null | cut -d'|' -f1-5
  done
done; done
