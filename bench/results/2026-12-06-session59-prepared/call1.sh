#!/bin/bash
# Session 59, call 1: kernel lab run 30 — the owned-dQ backward (attention_bwd_ws.cuh kOwnedDq): one block a
# (kv head, batch) walks every key block, the first writer of a dQ tile stores, the last converts; no zero fill, no
# postprocess. Checks (float64, NaN-poisoned dq_accum / dQ, ragged, Sq > Sk causal, GQA windows), then the whole
# backward timed against the _ends form at S = 1k / 2k (16k tokens), then racecheck / synccheck / memcheck.
# Predicted (H100, whole backward, from session 48's timeline: ends 97 + 67 us, main 702 / 445 / 800 / 556 us):
#   D = 128 none  -9 to -12 %, causal -13 to -17 %, D = 64 none -9 to -11 %, causal -12 to -15 % at 1k;
#   2k (B = 8: D = 128 128 blocks, one wave) a few per cent less. Correct everywhere, sanitizers clean.
set -u
R=$OUT; mkdir -p $R
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader > $R/gpu.txt 2>&1; cat $R/gpu.txt
export PYTHONUNBUFFERED=1
OWN=d64_bwdws_owned,d64_causal_bwdws_owned,d128_bwdws_owned,d128_causal_bwdws_owned,d128_f16_gqa4_win100_bwdws_owned,d64_f16_gqa2_win37_bwdws_owned
BASE=d64_bwdws_ends,d64_causal_bwdws_ends,d128_bwdws_ends,d128_causal_bwdws_ends
TIMED=d128_bwdws_ends,d128_bwdws_owned,d128_causal_bwdws_ends,d128_causal_bwdws_owned,d64_bwdws_ends,d64_bwdws_owned,d64_causal_bwdws_ends,d64_causal_bwdws_owned
timeout -k 10 400 python3 bench/kernel_lab/lab.py --out $R/lab --only $OWN,$BASE --bench $TIMED --seqs 1024,2048 \
  > $R/lab.log 2>&1
echo "lab rc=$? (124: a hang)"
grep -E "ptxas bwd|FAIL|check summary|ALL CHECKS|SOME CHECKS" $R/lab.log | head -40
grep "^| " $R/lab/bench.md 2>/dev/null
for tool in racecheck synccheck memcheck; do
  FLASHC_LAB_SMALL=1 timeout 100 compute-sanitizer --tool $tool --print-limit 10 python3 bench/kernel_lab/lab.py \
    --out $R/san_$tool --skip-bench --reuse-build --only d128_causal_bwdws_owned,d64_f16_gqa2_win37_bwdws_owned \
    > $R/san_$tool.log 2>&1
  echo "$tool rc=$?: $(grep -E "ERROR SUMMARY|RACECHECK SUMMARY|hazard" $R/san_$tool.log | head -3 | tr '\n' ' ')"
done
