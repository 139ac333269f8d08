#!/bin/bash
# Session 48, call 4: call 3's timeline again (its build directory was missing). Predictions: call3.sh's.
set -u
R=$OUT; mkdir -p $R
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name --format=csv,noheader
timeout 240 python3 bench/kernel_lab/timeline.py --seqlens 1024,16384 \
  --only d128_win1024_bwdws_ends_g4,d128_win1024_bwdws_ready_g4,d64_bwdws_ends,d64_bwdws_ready,d128_causal_bwdws_ends_g4,d128_causal_bwdws_ready_g4 \
  > $R/timeline.txt 2>&1
echo "timeline rc=$?"; grep -E "S=|rror" $R/timeline.txt | head -30
