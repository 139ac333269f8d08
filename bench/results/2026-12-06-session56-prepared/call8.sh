#!/bin/bash
# Session 56, call 8: call 7 again after the fix. Call 7 found the causal mask written as a mask modifier (k <= q,
# folded into the window with top-left rows) 13 % slower in the forward than causal=True although both bundles hold
# the same plan: its kernels pass the key offset as a literal 0, and specialised on it nvcc's ptxas spills 300 bytes in
# the 192-key causal forward (16 with a run-time offset). attention_fwd_ws_body now keeps the offset opaque to the
# optimizer (an empty asm); the two modifier bundles (.carry/t56p) are rebuilt with it.
# Predictions (forward kernel): causal_mod 1761 -> ~1558 us (causal's); prefix0 unchanged (~1775: 128-key blocks, no
# spill before or after); backward kernels unchanged.
set -u
R=$OUT; mkdir -p $R
t0=$SECONDS
for t in t56 t56p; do [ -d .carry/$t ] || tar -xJf .carry/$t.tar.xz -C .carry; done
cp -r .carry/t56p/attn_* .carry/t56/
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader > $R/gpu.txt 2>&1; cat $R/gpu.txt
OUT=$R/b timeout 60 scripts/device-bench.sh .carry/t56 --steps build > $R/build.txt 2>&1
echo "build rc=$? ($((SECONDS-t0)) s)"
FLASHC_BUNDLE_PATH=$PWD/.carry/t56 FLASHC_CACHE_DIR=/tmp/mc56f timeout 200 python3 bench/probes/mask_form_overhead.py \
  --calls 10 --rounds 2 --rows causal_mod,causal,prefix0 > $R/probe.txt 2>&1
echo "probe rc=$? ($((SECONDS-t0)) s)"; grep -v Warn $R/probe.txt | tail -20
OUT=$R/k timeout 60 scripts/device-bench.sh .carry/t56p --steps run > $R/run.txt 2>&1
echo "flashc-run rc=$? ($((SECONDS-t0)) s)"; grep -E "^=== .*exit|FAILED" $R/run.txt | head
rm -f $R/*/device-logs.tgz
