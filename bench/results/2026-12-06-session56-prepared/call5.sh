#!/bin/bash
# Session 56, call 5: the key split's dK through K's tile where its width is not V's (D = 192 / Dv = 128, D = 128 /
# Dv = 64, D = 72 / Dv = 40): both warpgroups meet once past their last dQ products (which read all of K), then each
# stages its rows of dK in its rows of K's tile and stores 16-byte row chunks, instead of 4-byte fragment stores.
# .carry/t56k: the 8 bundles with such kernels, rebuilt; .carry/t56: call 4's bundles (before).
# 1. flashc-run over the 8 rebuilt bundles (float64 checks) and the sanitizers' D = 192 / 128 causal bundle;
# 2. bench_attention D = 192:128 (16 heads, 16k tokens) with the bundles before and after, twice in alternation, cuDNN
#    in each process as the yardstick.
# Predictions (flashc backward, D = 192 / 128): 1k causal +3 to +5 %, 1k +2 to +3 %, 4k +1 to +2 %, 16k +0 to 0.5 %;
# checks pass, sanitizers clean.
set -u
R=$OUT; mkdir -p $R
t0=$SECONDS
for t in t56 t56k; do [ -d .carry/$t ] || tar -xJf .carry/$t.tar.xz -C .carry; done
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader > $R/gpu.txt 2>&1; cat $R/gpu.txt
OUT=$R/k timeout 240 scripts/device-bench.sh .carry/t56k --steps build,run,sanitize > $R/k.txt 2>&1
echo "build,run,sanitize rc=$? ($((SECONDS-t0)) s)"; grep -E "^=== .*exit|FAILED" $R/k.txt | head
for round in 1 2; do
  for t in t56 t56k; do
    FLASHC_BUNDLE_PATH=$PWD/.carry/$t FLASHC_CACHE_DIR=/tmp/mc56c timeout 100 python3 bench/bench_attention.py \
      --head-dims 192:128 --seqs 1024,4096,16384 --peers flashc,cudnn --no-load-time --out $R/ba_${t}_$round \
      > $R/ba_${t}_$round.log 2>&1
    echo "bench_attention $t round $round rc=$? ($((SECONDS-t0)) s)"
    grep "^| 192" $R/ba_${t}_$round/bench_attention.md 2>/dev/null | cut -d'|' -f2-9
  done
done
rm -f $R/*/device-logs.tgz $R/*/*.png
