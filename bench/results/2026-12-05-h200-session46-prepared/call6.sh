#!/bin/bash
# Session 46 (prepared): #19's attention grid with dq_accum zeroed ahead against the hand rules (the zero fill), flashc
# alone, the two bundle sets alternating in separate processes, twice. The grid's backward rows whose kernel takes the
# form: D = 64, 128 (bench-attention) and 80, 96 (bench-attention-padded, H = 16), causal and not, S = 1k / 4k / 16k (B x
# S = 16k tokens, so the ends are ~116 us at every length while the main kernel grows with S).
#   .carry/ba46  = prebuild bench-attention bench-attention-padded (built-in table)
#   .carry/ba46z = the same with bench/results/2026-12-05-h200-session46-prepared/zero-ahead.txt
# carry: [".carry/ba46", ".carry/ba46z"]
# Predictions (written before the run): forward columns level (the tables differ only on attention_backward); the
# backward -30 to -34 us a row: at S = 1k causal ~0.60 -> ~0.57 ms (+5 to +6 % TFLOP/s), 1k non-causal +3 %, 4k +1-2 %,
# 16k +0.5 % — that is, 8 configurations x 1k causal / not: 4 rows at >= 5 % (the causal 1k ones), none slower. With
# kernel lab run 18 and call5 this decides whether zero-ahead becomes the hand rule (#19's count moves by the rows that
# gain >= 5 % over the table as it is: the causal 1k backwards).
cd "$(dirname "$0")/../../.."
R=$OUT; mkdir -p $R
export FLASHC_DEVICE_WORK=/tmp/fd
[ -x build-dev/bin/flashc-run ] || { OUT=$R/dr timeout 200 scripts/device-bench.sh --steps build > $R/build.txt 2>&1; echo "build rc=$?"; rm -rf $R/dr; }
export FLASHC_RUNTIME_LIB=$PWD/build-dev/runtime/libflashc_runtime.so PYTHONPATH=$PWD/python
t0=$SECONDS
for round in 1 2; do for B in ba46 ba46z; do
  for dims in "64,128" "80,96 --heads 16"; do
    tag=${B}_${round}_$(echo $dims | cut -d' ' -f1 | tr ',' '-')
    FLASHC_BUNDLE_PATH=$PWD/.carry/$B FLASHC_CACHE_DIR=/tmp/mc_$B timeout 200 python3 bench/bench_attention.py \
      --peers flashc --head-dims $dims --rounds 1 --check-heads 0 --no-load-time --out $R/ba_$tag > $R/ba_$tag.log 2>&1
    echo "== round $round $B D=$dims rc=$? ($((SECONDS-t0)) s)"
    grep -E "^\| [0-9]" $R/ba_$tag/bench_attention.md 2>/dev/null | cut -d'|' -f1-5
  done
done; done
