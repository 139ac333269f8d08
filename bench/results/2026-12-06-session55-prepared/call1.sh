#!/bin/bash
# Session 55's first GPU call: every bundle of `prebuild all` (the 205, with bench-moe's) through
# device-bench's run step as session 54 changed it (bench_moe's d=4096 MoE skipped, the d=2048 one at 17 / 5 rows), then
# on an H200 #16's rows (bench_programmable, kernel times: the last H200 numbers are session 50's), on an H100 the
# sanitize step instead (session 54 measured #16's rows on an H100).
# Before: rm -rf .carry/t55 .carry/t55.tar.xz && PYTHONPATH=python python3 -m flashc.prebuild --out .carry/t55 all
#         && (cd .carry && tar -cJf t55.tar.xz t55 && rm -rf t55)        [carry .carry/t55.tar.xz]
# Predictions: build and ctest pass; flashc-run 0 failed, the run step done in under 200 s; bench_programmable (H200)
# backward kernels window 0.77-0.79, document 0.70-0.72, prefix-LM 0.70-0.72, ALiBi 0.69-0.71, forwards <= 0.70;
# sanitize (H100) 0 errors, 0 hazards.
set -u
R=$OUT; mkdir -p $R
t0=$SECONDS
[ -d .carry/t55 ] || tar -xJf .carry/t55.tar.xz -C .carry
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader > $R/gpu.txt 2>&1; cat $R/gpu.txt
OUT=$R/rs timeout 330 scripts/device-bench.sh .carry/t55 --steps build,run > $R/run.txt 2>&1
echo "build,run rc=$? ($((SECONDS-t0)) s)"
grep -E "^=== |checks, .* failed|FAILED|skipped:" $R/run.txt | sort | uniq -c | sort -rn | head -20
left=$((570 - (SECONDS - t0)))
if grep -q H200 $R/gpu.txt && [ $left -ge 200 ]; then
  FLASHC_BUNDLE_PATH=$PWD/.carry/t55 FLASHC_CACHE_DIR=/tmp/mc55 timeout $left python3 bench/bench_programmable.py \
    --lead-us auto --kernel-times 5 --out $R/bp > $R/bp.log 2>&1
  echo "bench_programmable rc=$? ($((SECONDS-t0)) s)"; grep "^| " $R/bp/bench_programmable.md 2>/dev/null | cut -d'|' -f1-8
elif [ $left -ge 120 ]; then
  OUT=$R/san timeout $left scripts/device-bench.sh .carry/t55 --steps sanitize > $R/san.txt 2>&1
  echo "sanitize rc=$? ($((SECONDS-t0)) s)"; grep -E "ERROR SUMMARY|hazard|FAILED" $R/san.txt | sort | uniq -c | head
else
  echo "nothing more ($left s left)"
fi
rm -f $R/rs/device-logs.tgz $R/san/device-logs.tgz
tar -czf $R/next-call1.tgz -C $R --exclude=next-call1.tgz . 2>/dev/null
find $R -type f ! -name next-call1.tgz ! -name gpu.txt -delete
