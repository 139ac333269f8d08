#!/bin/bash
# For the next session's first GPU call (session 53 had no device time left for it): the MoE routing change on a GPU
# (moe_routing.cuh: the top k by logit, the sigmoid's derivative as σ(l) σ(-l); test_gpu_moe's new saturated-sigmoid
# case, whose experts the old code chose wrongly), ctest, the attention suite, flashc-run over the MoE bundles, then
# #16's rows (bench_programmable: its bundles are in `prebuild all` since bda46ad) with the time left.
# Before: rm -rf .carry/t53 .carry/t53.tar.xz && PYTHONPATH=python python3 -m flashc.prebuild --out .carry/t53 all
#         && (cd .carry && tar -cJf t53.tar.xz t53 && rm -rf t53)        [carry .carry/t53.tar.xz]
# Predictions: ctest all pass; test_gpu_moe and test_gpu_attention exit 0 (the saturated case among them);
# flashc-run 0 failed; bench_programmable (H200) backward kernels window 0.77-0.79, document 0.70-0.72, prefix-LM
# 0.70-0.72, ALiBi 0.69-0.71, forwards <= 0.70.
set -u
R=$OUT; mkdir -p $R
t0=$SECONDS
[ -d .carry/t53 ] || tar -xJf .carry/t53.tar.xz -C .carry
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader > $R/gpu.txt 2>&1; cat $R/gpu.txt
OUT=$R/build timeout 120 scripts/device-bench.sh .carry/t53 --steps build > $R/build.txt 2>&1
echo "build rc=$? ($((SECONDS-t0)) s)"
(cd build-dev && timeout 120 ctest --output-on-failure > $R/ctest.txt 2>&1); echo "ctest rc=$? ($((SECONDS-t0)) s)"
grep -E "tests passed|Failed|\*\*\*" $R/ctest.txt | head -10
OUT=$R/suite timeout 120 scripts/device-bench.sh .carry/t53 --steps test --tests "test_gpu_moe.py test_gpu_attention.py" \
  > $R/pytests.txt 2>&1
echo "pytests rc=$? ($((SECONDS-t0)) s)"; grep -E "^=== .*exit" $R/pytests.txt
grep -hE "^(FAIL|ERROR):" /tmp/flashc-device/logs/python_*.log 2>/dev/null | head -10
mkdir -p /tmp/moe53; for b in $(ls .carry/t53 | grep -E "^moe_"); do ln -sfn $PWD/.carry/t53/$b /tmp/moe53/$b; done
OUT=$R/run timeout 90 scripts/device-bench.sh /tmp/moe53 --steps run > $R/run.txt 2>&1
echo "flashc-run rc=$? ($(ls /tmp/moe53 | wc -l) MoE bundles, $((SECONDS-t0)) s)"; grep -E "=== flashc_run" $R/run.txt | tail -1
left=$((580 - (SECONDS - t0)))
if [ $left -ge 200 ]; then
  FLASHC_BUNDLE_PATH=$PWD/.carry/t53 FLASHC_CACHE_DIR=/tmp/mc54 timeout $left python3 bench/bench_programmable.py \
    --lead-us auto --kernel-times 5 --out $R/bp > $R/bp.log 2>&1
  echo "bench_programmable rc=$? ($((SECONDS-t0)) s)"; grep "^| " $R/bp/bench_programmable.md 2>/dev/null | cut -d'|' -f1-8
else
  echo "bench_programmable skipped ($left s left)"
fi
rm -rf $R/build $R/suite/device-logs.tgz $R/run/device-logs.tgz
tar -czf $R/next-call1.tgz -C $R --exclude=next-call1.tgz . 2>/dev/null
find $R -type f ! -name next-call1.tgz ! -name gpu.txt -delete
