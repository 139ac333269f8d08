#!/bin/bash
# Session 53, call 2 (session 52's call 2, never run, then #16's rows at HEAD): every bundle of .carry/t52 (HEAD's
# compiler) through flashc-run against float64 at device-bench's two sizes (the second with poisoned scratch), then
# device-bench's sanitize step (memcheck, racecheck, synccheck on small ragged shapes of representative bundles); then,
# with the time left (a 400 s cap: the budget left), bench_programmable (#16's rows, kernel times) on HEAD's bundles.
# Predictions: flashc-run 0 failed over 194 bundles; sanitize 0 errors, 0 hazards; bench_programmable as session 50
# (backward kernels: window 0.77-0.79, document 0.70-0.72, prefix-LM 0.70-0.72, ALiBi 0.69-0.71; forwards <= 0.70).
set -u
R=$OUT; mkdir -p $R
t0=$SECONDS
[ -d .carry/t52 ] || tar -xJf .carry/t52.tar.xz -C .carry
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader > $R/gpu.txt 2>&1; cat $R/gpu.txt
OUT=$R/rs timeout 300 scripts/device-bench.sh .carry/t52 --steps build,run,sanitize > $R/run.txt 2>&1
echo "build,run,sanitize rc=$? ($((SECONDS-t0)) s)"
grep -E "^=== |checks, .* failed|FAILED|ERROR SUMMARY|hazard" $R/run.txt | sort | uniq -c | sort -rn | head -20
left=$((400 - (SECONDS - t0)))
if [ $left -ge 150 ]; then
  FLASHC_BUNDLE_PATH=$PWD/.carry/t52 FLASHC_CACHE_DIR=/tmp/mc53 timeout $left python3 bench/bench_programmable.py \
    --lead-us auto --kernel-times 5 --out $R/bp > $R/bp.log 2>&1
  echo "bench_programmable rc=$? ($((SECONDS-t0)) s)"; grep "^| " $R/bp/bench_programmable.md 2>/dev/null | cut -d'|' -f1-8
else
  echo "bench_programmable skipped ($left s left)"
fi
rm -f $R/rs/device-logs.tgz
tar -czf $R/call2.tgz -C $R --exclude=call2.tgz . 2>/dev/null
find $R -type f ! -name call2.tgz ! -name gpu.txt -delete
