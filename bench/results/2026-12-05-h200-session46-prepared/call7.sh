#!/bin/bash
# Session 46 (prepared): kernel lab run 19 (bench/kernel_lab/NOTES.md), dQ converted in the main kernel (lever 2 on lever
# 1b's flags: Config::kDqConvert, which the compiler never sets) against run 18's `_zeroahead` and `_ends`. No carry
# (the lab builds its kernels with nvcc on the device). Run after session 45's call3 (run 18), or instead of it when
# time is short: it times `_ends` and `_zeroahead` too.
# Predictions (NOTES.md run 19): every check passes (dq_accum NaN-poisoned: a part converted before its last reduction
# or never shows); the postprocess 48 -> ~3 us at 16k tokens (H = 16, D = 128); the main kernel within +1 % of
# `_zeroahead`; the backward -70 to -80 us against `_ends` at 16k (its ends' 116 us: the preprocess's zero fill and the
# postprocess), 1k rows -10 to -12 %.
cd "$(dirname "$0")/../../.."
R=$OUT; mkdir -p $R
export PYTHONUNBUFFERED=1
LAB=d128_bwdws_ends,d128_bwdws_zeroahead,d128_bwdws_convert,d128_causal_bwdws_ends,d128_causal_bwdws_zeroahead,d128_causal_bwdws_convert,d128_win1024_bwdws_ends,d128_win1024_bwdws_zeroahead,d128_win1024_bwdws_convert,d128_f16_gqa4_win100_bwdws_zeroahead,d128_f16_gqa4_win100_bwdws_convert,d64_causal_bwdws_ends,d64_causal_bwdws_zeroahead,d64_causal_bwdws_convert
# (a counting or queue bug hangs: timeout)
timeout -k 10 540 python3 bench/kernel_lab/lab.py --out $R/lab --only $LAB > $R/lab.log 2>&1
echo "lab rc=$? (124: a hang)"; grep -E "FAIL|ok$" $R/lab.log | tail -40 | cut -c1-160
grep -h "bwd" $R/lab/*.md 2>/dev/null | grep -E "bwdws_(ends|zeroahead|convert)" | cut -c1-200
