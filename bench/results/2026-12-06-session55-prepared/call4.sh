#!/bin/bash
# Session 55, call 4: the staged dK / dV epilogue as the default (every compiled ws backward) and the launch check of a
# modifier table's extent, on the bundles `prebuild all` builds at this commit: flashc-run over the attention and
# varlen bundles (the MoE, FFN and decode ones have no attention backward; call 1 ran them), then #16's rows
# (bench_programmable, kernel times) with the time left.
# Before: rm -rf .carry/t55b .carry/t55b.tar.xz && PYTHONPATH=python python3 -m flashc.prebuild --out .carry/t55b all
#         && (cd .carry && tar -cJf t55b.tar.xz t55b && rm -rf t55b)        [carry .carry/t55b.tar.xz]
# Predictions: flashc-run 0 failed; bench_programmable on an H100 against session 54's H100 rows: backward kernels
# window 0.817 -> ~0.79, prefix-LM 0.736 -> ~0.72, document 0.746 -> ~0.73, ALiBi 0.725 -> ~0.71 (the main kernels
# -2 to -4 %), forwards unchanged.
set -u
R=$OUT; mkdir -p $R
t0=$SECONDS
[ -d .carry/t55b ] || tar -xJf .carry/t55b.tar.xz -C .carry
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader > $R/gpu.txt 2>&1; cat $R/gpu.txt
mkdir -p /tmp/attn55; for b in $(ls .carry/t55b | grep -E "^(attn|varlen)_"); do ln -sfn $PWD/.carry/t55b/$b /tmp/attn55/$b; done
OUT=$R/rs timeout 200 scripts/device-bench.sh /tmp/attn55 --steps build,run > $R/run.txt 2>&1
echo "build,run rc=$? ($(ls /tmp/attn55 | wc -l) bundles, $((SECONDS-t0)) s)"
grep -E "^=== .*exit|FAILED" $R/run.txt | head; awk '/^[0-9]+ checks, [0-9]+ failed/{c+=$1; f+=$3} END{print c " checks, " f " failed (in the log tail)"}' $R/run.txt
cat /tmp/flashc-device/logs/flashc_run.log 2>/dev/null | awk '/^[0-9]+ checks, [0-9]+ failed/{c+=$1; f+=$3; n++} END{print n " bundle runs: " c " checks, " f " failed"}'
left=$((440 - (SECONDS - t0)))
if [ $left -ge 120 ]; then
  FLASHC_BUNDLE_PATH=$PWD/.carry/t55b FLASHC_CACHE_DIR=/tmp/mc55 timeout $left python3 bench/bench_programmable.py \
    --lead-us auto --kernel-times 5 --out $R/bp > $R/bp.log 2>&1
  echo "bench_programmable rc=$? ($((SECONDS-t0)) s)"; grep "^| " $R/bp/bench_programmable.md 2>/dev/null | cut -d'|' -f1-8
else
  echo "bench_programmable skipped ($left s left)"
fi
cp /tmp/flashc-device/logs/flashc_run.log $R/flashc_run.log 2>/dev/null; gzip -f $R/flashc_run.log
rm -rf $R/rs/device-logs.tgz
