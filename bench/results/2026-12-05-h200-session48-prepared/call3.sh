#!/bin/bash
# Session 48, call 3: why run 20's hand-off did not gain (predicted -2 to -4 % on the window row, measured +0.5 %):
# the backward's kernels on the GPU's clock (bench/kernel_lab/timeline.py, torch.profiler's CUPTI records), _ends
# against _ready: does the postprocess start before the main kernel ends (a negative gap), and how much longer does
# the main kernel run with the arrivals (each block waits for its last reductions to complete)? Predicted: the
# postprocess overlaps by 20-40 us at 16k; the main kernel +1-2 us a wave. Then call 1 (the verification session 47
# left) in what remains of the call.
set -u
R=$OUT; mkdir -p $R
export PYTHONUNBUFFERED=1
t0=$SECONDS
timeout 170 python3 bench/kernel_lab/timeline.py --seqlens 1024,16384 \
  --only d128_win1024_bwdws_ends_g4,d128_win1024_bwdws_ready_g4,d64_bwdws_ends,d64_bwdws_ready,d128_causal_bwdws_ends_g4,d128_causal_bwdws_ready_g4 \
  > $R/timeline.txt 2>&1
echo "timeline rc=$? ($((SECONDS-t0)) s)"; grep -E "S=|Error|error" $R/timeline.txt | head -30
CALL1_SANITIZE=0 CALL1_BUDGET=$((560 - SECONDS)) OUT=$R/call1 bash bench/results/2026-12-05-h200-session48-prepared/call1.sh
