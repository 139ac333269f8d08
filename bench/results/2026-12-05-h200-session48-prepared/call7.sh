#!/bin/bash
# Session 48, call 7: what one counted arrival a block costs the backward's main kernel (kernel lab run 22,
# bench/kernel_lab/NOTES.md): call7-counted-arrival.patch, applied here and never committed to the library, adds to
# the key split's end, after the existing wait for the last dQ reductions to complete, what a head-granular dQ
# conversion needs: the issuing thread's async-proxy fence and one atom.add.acq_rel.gpu (its value consumed), then a
# barrier of the warpgroup that broadcasts the value. No conversion: only the protocol's price. Against the same
# kernel without it (_ends). Predicted: the main kernel +0.5-1.5 us a wave: D = 64 unmasked 1k (31 waves) +15-45 us,
# D = 128 1k (15.5 waves) +8-25 us, D = 64 causal 1k +15-45 us; 4k about half of that in relative terms. The lead
# (docs/design/backward-ends.md) stays worth building if the arrival costs well under the postprocess's 67 us (H100).
set -u
R=$OUT; mkdir -p $R
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name --format=csv,noheader
git apply bench/results/2026-12-05-h200-session48-prepared/call7-counted-arrival.patch || { echo "patch failed"; exit 1; }
A=d64_bwdws_ends,d64_bwdws_arrive,d128_bwdws_ends,d128_bwdws_arrive,d64_causal_bwdws_ends,d64_causal_bwdws_arrive
t0=$SECONDS
timeout 150 python3 bench/kernel_lab/timeline.py --seqlens 1024,4096 --calls 20 --only $A > $R/timeline.txt 2>&1
echo "timeline rc=$? ($((SECONDS-t0)) s)"; grep "S=" $R/timeline.txt | sed 's/  (20 calls.*//'
# the reverse order too (the lab's order effect)
timeout 100 python3 bench/kernel_lab/timeline.py --seqlens 1024 --calls 20 \
  --only d64_bwdws_arrive,d64_bwdws_ends,d128_bwdws_arrive,d128_bwdws_ends > $R/timeline-reversed.txt 2>&1
echo "reversed rc=$? ($((SECONDS-t0)) s)"; grep "S=" $R/timeline-reversed.txt | sed 's/  (20 calls.*//'
FLASHC_LAB_SMALL=1 timeout 60 python3 bench/kernel_lab/lab.py --out $R/check --skip-bench --reuse-build \
  --only d64_bwdws_arrive,d64_causal_bwdws_arrive > $R/check.log 2>&1
echo "check rc=$? $(grep 'check summary' $R/check.log)"
