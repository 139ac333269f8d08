#!/bin/bash
# Session 52, call 2 (right after call 1, on the warm machine; build-dev kept): every bundle of .carry/t52 (HEAD's
# compiler: the d64 none forwards back on the hand rule since session 50's table change, checkPlannedTiles,
# Dim::fromExpr) through flashc-run against float64 at device-bench's two sizes (the second with poisoned scratch), then
# device-bench's sanitize step (memcheck, racecheck, synccheck on small ragged shapes of representative bundles).
# Predictions: flashc-run 0 failed over 194 bundles; sanitize 0 errors, 0 hazards.
set -u
R=$OUT; mkdir -p $R
t0=$SECONDS
[ -d .carry/t52 ] || tar -xJf .carry/t52.tar.xz -C .carry
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader > $R/gpu.txt 2>&1; cat $R/gpu.txt
OUT=$R/rs timeout 570 scripts/device-bench.sh .carry/t52 --steps build,run,sanitize > $R/run.txt 2>&1
echo "build,run,sanitize rc=$? ($((SECONDS-t0)) s)"
grep -E "^=== |checks, .* failed|FAILED|ERROR SUMMARY|hazard" $R/run.txt | sort | uniq -c | sort -rn | head -20
rm -f $R/rs/device-logs.tgz
tar -czf $R/call2.tgz -C $R --exclude=call2.tgz . 2>/dev/null
find $R -type f ! -name call2.tgz ! -name gpu.txt -delete
