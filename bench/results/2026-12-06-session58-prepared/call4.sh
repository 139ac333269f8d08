#!/bin/bash
# Session 58, call 4: HEAD's runtime (bindTensor now refuses a dim above 2^31 - 1) on the GPU: ctest of the runtime
# build (unit + GPU tests) and test_gpu_attention over `prebuild all` (.carry/t57: the default kernels' bundles are
# unchanged by this session's compiler commits, which only refuse more). On an H200 (none since session 50):
# bench_programmable with the default kernels, #16's standing rows. Predictions: ctest and the suite pass; on an H200
# backward kernels window ~0.75, document ~0.68, ALiBi ~0.69, prefix-LM ~0.70, forwards 0.60-0.66.
set -u
R=$OUT; mkdir -p $R
t0=$SECONDS
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader > $R/gpu.txt 2>&1; cat $R/gpu.txt
[ -d .carry/t57 ] || tar -xJf .carry/t57.tar.xz -C .carry
OUT=/tmp/c4 timeout 300 scripts/device-bench.sh .carry/t57 --steps build,test > $R/ctest.txt 2>&1
echo "build,ctest rc=$? ($((SECONDS-t0)) s)"; grep -E "tests passed|tests failed|^=== .*exit" $R/ctest.txt | head -8
OUT=/tmp/c4s timeout 120 scripts/device-bench.sh .carry/t57 --steps test --tests test_gpu_attention.py > $R/suite.txt 2>&1
echo "suite rc=$? ($((SECONDS-t0)) s)"; grep -E "^=== .*exit" $R/suite.txt
left=$((570 - (SECONDS - t0)))
if grep -q H200 $R/gpu.txt && [ $left -ge 200 ]; then
  FLASHC_BUNDLE_PATH=$PWD/.carry/t57 FLASHC_CACHE_DIR=/tmp/mc58b timeout $left python3 bench/bench_programmable.py \
    --lead-us auto --kernel-times 5 --out /tmp/bp > $R/bp.log 2>&1
  echo "bench_programmable rc=$? ($((SECONDS-t0)) s)"; grep "^| " /tmp/bp/bench_programmable.md 2>/dev/null | cut -d'|' -f1-8
  tar -czf $R/bp.tgz -C /tmp bp
fi
