#!/bin/bash
# Session 56, call 4: session 55's prepared next-call1 (bench/results/2026-12-06-session55-prepared/next-call1.sh) on
# bundles built with the role split's staged dK / dV (call 3, now the default; `prebuild all` carried as
# .carry/t56.tar.xz): the sanitizers over the compiled bundles with both staged epilogues (the key split's since
# ed7bfd1), the attention GPU suite (test_gpu_attention: a document-id table shorter than the sequence is now a launch
# error), then on an H200 #16's rows (bench_programmable); on an H100 the D = 256 rows of bench_attention beside cuDNN
# and FlashAttention-2, then the run step over every bundle.
# Predictions: sanitize 0 errors, 0 hazards; test_gpu_attention OK; bench_programmable (H200) backward kernels window
# ~0.75, document ~0.68, ALiBi ~0.69, prefix-LM ~0.70, forwards <= 0.70; flashc-run (H100) 0 failed.
set -u
R=$OUT; mkdir -p $R
t0=$SECONDS
[ -d .carry/t56 ] || tar -xJf .carry/t56.tar.xz -C .carry
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader > $R/gpu.txt 2>&1; cat $R/gpu.txt
OUT=$R/san timeout 200 scripts/device-bench.sh .carry/t56 --steps build,sanitize > $R/san.txt 2>&1
echo "build,sanitize rc=$? ($((SECONDS-t0)) s)"; grep -E "^=== .*exit|FAILED" $R/san.txt | head
OUT=$R/suite timeout 120 scripts/device-bench.sh .carry/t56 --steps test --tests "test_gpu_attention.py" > $R/pytests.txt 2>&1
echo "test_gpu_attention rc=$? ($((SECONDS-t0)) s)"; grep -E "^=== .*exit" $R/pytests.txt
grep -hE "^(FAIL|ERROR):" /tmp/flashc-device/logs/python_*.log 2>/dev/null | head -10
left=$((570 - (SECONDS - t0)))
if grep -q H200 $R/gpu.txt && [ $left -ge 200 ]; then
  FLASHC_BUNDLE_PATH=$PWD/.carry/t56 FLASHC_CACHE_DIR=/tmp/mc56b timeout $left python3 bench/bench_programmable.py \
    --lead-us auto --kernel-times 5 --out $R/bp > $R/bp.log 2>&1
  echo "bench_programmable rc=$? ($((SECONDS-t0)) s)"; grep "^| " $R/bp/bench_programmable.md 2>/dev/null | cut -d'|' -f1-8
else
  FLASHC_BUNDLE_PATH=$PWD/.carry/t56 FLASHC_CACHE_DIR=/tmp/mc56b timeout 170 python3 bench/bench_attention.py \
    --head-dims 256 --seqs 1024,4096,16384 --peers flashc,cudnn,sdpa_flash --no-load-time --out $R/ba > $R/ba.log 2>&1
  echo "bench_attention D=256 rc=$? ($((SECONDS-t0)) s)"; grep "^| " $R/ba/*.md 2>/dev/null | head -20
  left=$((570 - (SECONDS - t0)))
fi
if ! grep -q H200 $R/gpu.txt && [ $left -ge 120 ]; then
  OUT=$R/rs timeout $left scripts/device-bench.sh .carry/t56 --steps run > $R/run.txt 2>&1
  echo "run rc=$? ($((SECONDS-t0)) s)"; grep -E "^=== .*exit|FAILED" $R/run.txt | head
else
  echo "nothing more ($left s left)"
fi
rm -f $R/*/device-logs.tgz
