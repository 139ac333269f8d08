#!/bin/bash
# Session 45, third device call (prepared): kernel lab run 18 (bench/kernel_lab/NOTES.md), dQ's first writer stores
# instead of the preprocess zeroing dq_accum (docs/design/backward-ends.md, lever 1; the device library's opt-in
# kDqFirstStore, which the compiler never sets). No carry (the lab builds its kernels with nvcc on the device).
# Predictions (NOTES.md run 18): every check passes; racecheck / memcheck / synccheck clean; the preprocess 68 -> ~35 us;
# _dqstore against _ends: causal -0.5 to -1 % of the backward at 16k, window 1024 -3 to -4 %, 1k rows -3 to -4 %;
# unmasked 2-6 % slower (its key blocks reach each query tile nearly in step and wait on the first writer's store).
# Lever 1b (_zeroahead: the producer warpgroup's second warp zeroes the tiles ahead): the same preprocess gain, the
# main kernel within 1 % in all three masks, unmasked included.
cd "$(dirname "$0")/../../.."
R=$OUT; mkdir -p $R
export PYTHONUNBUFFERED=1
LAB=d128_bwdws_ends,d128_bwdws_dqstore,d128_bwdws_zeroahead,d128_causal_bwdws_ends,d128_causal_bwdws_dqstore,d128_causal_bwdws_zeroahead,d128_win1024_bwdws_ends,d128_win1024_bwdws_dqstore,d128_win1024_bwdws_zeroahead,d128_f16_gqa4_win100_bwdws_dqstore,d128_f16_gqa4_win100_bwdws_zeroahead,d64_causal_bwdws_ends,d64_causal_bwdws_dqstore,d64_causal_bwdws_zeroahead,d128_causal_bwdws
# (a flag protocol bug hangs: timeout)
timeout -k 10 540 python3 bench/kernel_lab/lab.py --out $R/lab --only $LAB > $R/lab.log 2>&1
echo "lab rc=$? (124: a hang)"; grep -E "FAIL|ok$" $R/lab.log | tail -40 | cut -c1-160
ls $R/lab | head; grep -h "bwd" $R/lab/*.md 2>/dev/null | grep -E "bwdws_(ends|dqstore|zeroahead)|d128_causal_bwdws " | cut -c1-200
