#!/bin/bash
# Session 56, call 7: what a mask modifier costs beside the window attribute (bench/probes/mask_form_overhead.py).
# bench_programmable (session 55, H100) had prefix-LM's backward kernels at 1.127x ALiBi's for 1.0625x the blocks.
# Rows: causal (window attribute), causal_mod (k <= q: folded into the window), prefix0 ((k < 0) | (k <= q): the
# causal mask kept as ModMask), prefix_lm, alibi; kernel medians by torch.profiler, rows in turn, 2 rounds.
# Predictions (backward main kernel against causal): causal_mod 1.00x; prefix0 1.03-1.06x (the modifier form's
# per-step classification); prefix_lm 1.09-1.12x; alibi 1.00-1.03x.
set -u
R=$OUT; mkdir -p $R
t0=$SECONDS
for t in t56 t56p; do [ -d .carry/$t ] || tar -xJf .carry/$t.tar.xz -C .carry; done
cp -r .carry/t56p/attn_* .carry/t56/
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader > $R/gpu.txt 2>&1; cat $R/gpu.txt
OUT=$R/b timeout 60 scripts/device-bench.sh .carry/t56 --steps build > $R/build.txt 2>&1
echo "build rc=$? ($((SECONDS-t0)) s)"
FLASHC_BUNDLE_PATH=$PWD/.carry/t56 FLASHC_CACHE_DIR=/tmp/mc56e timeout 300 python3 bench/probes/mask_form_overhead.py \
  --calls 10 --rounds 2 > $R/probe.txt 2>&1
echo "probe rc=$? ($((SECONDS-t0)) s)"; cat $R/probe.txt | tail -40
rm -f $R/*/device-logs.tgz
