#!/bin/bash
# Session 59, call 3: kernel lab run 32 — rotated walks in the grid form (attention_bwd_ws.cuh kRotateWalk): key block
# j of n starts its walk at query block j * num_m / n, so that a head's key blocks, which run side by side and (unmasked)
# walk the query blocks in the same order, no longer all add their dQ into the same rows at the same time.
# Predicted (H100, whole backward): -1 to -5 %, more at 16k (up to ~130 blocks of one head in flight) than at 1k (8).
set -u
R=$OUT; mkdir -p $R
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader > $R/gpu.txt 2>&1; cat $R/gpu.txt
export PYTHONUNBUFFERED=1
ALL=d128_bwdws_ends,d128_bwdws_rotate,d64_bwdws_ends,d64_bwdws_rotate,d256_bwdws,d256_bwdws_rotate,d128_f16_gqa4_win100_bwdws_rotate
TIMED=d128_bwdws_ends,d128_bwdws_rotate,d64_bwdws_ends,d64_bwdws_rotate,d256_bwdws,d256_bwdws_rotate
timeout -k 10 280 python3 bench/kernel_lab/lab.py --out $R/lab --only $ALL --bench $TIMED --seqs 1024,16384 \
  > $R/lab.log 2>&1
echo "lab rc=$? (124: a hang)"
grep -E "ptxas bwd.*rotate|FAIL|check summary|ALL CHECKS|SOME CHECKS" $R/lab.log | head -20
grep "^| " $R/lab/bench.md 2>/dev/null
