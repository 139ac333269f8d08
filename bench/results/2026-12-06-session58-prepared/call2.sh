#!/bin/bash
# Session 58, call 2. Call 1 (session 57's call1.sh, on an H100) checked and timed the wide key block for the prefix-LM
# forward (`+indexmod`): every candidate passed float64; 192 keys 1.048x the hand rule at 16k keys, level at 4k, 0.95x
# at 1k (predicted 1.08-1.14x / 1.03-1.08x / 0.94-0.98x). Its tune files did not come back (too many files), so:
# (a) the tuner's GPU half again over the same plan (the second run, for `tune table --also-run`), its files in one
# archive; (b) #16's rows (bench_programmable) with the prefix-LM forward in the wide block (.carry/t57w), on whatever
# GPU came. Predictions: (a) 192 keys 1.04-1.06x at 16k, level at 4k; (b) on an H100, against session 55's H100 run:
# backward kernels unchanged within 2 % (window 0.773, document 0.711, ALiBi 0.713, prefix-LM 0.740), the prefix-LM
# forward 0.67 -> ~0.64 (its forward kernel -4.5 %); on an H200 the backwards ~0.75 / 0.68 / 0.69 / 0.70.
set -u
R=$OUT; mkdir -p $R
t0=$SECONDS
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader > $R/gpu.txt 2>&1; cat $R/gpu.txt
[ -d .carry/t57 ] || tar -xJf .carry/t57.tar.xz -C .carry
OUT=/tmp/tp2 timeout 200 scripts/device-bench.sh .carry/t57 --steps build,tune --tune-plan .carry/tunep \
  --tune-args "--budget 150" > $R/tune.txt 2>&1
echo "build,tune rc=$? ($((SECONDS-t0)) s)"; tail -3 $R/tune.txt
rm -f /tmp/tp2/device-logs.tgz; tar -czf $R/tp2.tgz -C /tmp tp2
left=$((580 - (SECONDS - t0)))
FLASHC_BUNDLE_PATH=$PWD/.carry/t57w FLASHC_CACHE_DIR=/tmp/mc58 timeout $left python3 bench/bench_programmable.py \
  --lead-us auto --kernel-times 5 --out /tmp/bp > $R/bp.log 2>&1
echo "bench_programmable rc=$? ($((SECONDS-t0)) s)"; grep "^| " /tmp/bp/bench_programmable.md 2>/dev/null | cut -d'|' -f1-9
tar -czf $R/bp.tgz -C /tmp bp
