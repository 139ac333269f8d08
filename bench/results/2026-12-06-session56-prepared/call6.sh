#!/bin/bash
# Session 56, call 6: #16's rows on an H200 if one is lent (bench_programmable with call 4's bundles: no kernel of
# those rows changed this session, so they measure session 55's staged key split on the H200); on an H100 nothing
# (session 55 ran them there). Predictions (H200, backward kernels flashc / Flex): window ~0.75, document ~0.68,
# ALiBi ~0.69, prefix-LM ~0.70; forwards <= 0.70.
set -u
R=$OUT; mkdir -p $R
t0=$SECONDS
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader > $R/gpu.txt 2>&1; cat $R/gpu.txt
grep -q H200 $R/gpu.txt || { echo "not an H200: nothing run"; exit 0; }
[ -d .carry/t56 ] || tar -xJf .carry/t56.tar.xz -C .carry
OUT=$R/b timeout 60 scripts/device-bench.sh .carry/t56 --steps build > $R/build.txt 2>&1
echo "build rc=$? ($((SECONDS-t0)) s)"
FLASHC_BUNDLE_PATH=$PWD/.carry/t56 FLASHC_CACHE_DIR=/tmp/mc56d timeout 420 python3 bench/bench_programmable.py \
  --lead-us auto --kernel-times 5 --out $R/bp > $R/bp.log 2>&1
echo "bench_programmable rc=$? ($((SECONDS-t0)) s)"; grep "^| " $R/bp/bench_programmable.md 2>/dev/null | cut -d'|' -f1-8
rm -f $R/*/device-logs.tgz
