#!/bin/bash
# Session 50, call 3 (any GPU): after call 1's one failure (a test whose workspace ran past its allocation, not the
# check), ctest again, and the Python GPU tests whose launches pass torch's workspaces through the new overlap check
# (the review's fix: a caller's workspace may not overlap a tensor argument).
# Predictions: ctest 22/22; every Python file exits 0.
set -u
R=$OUT; mkdir -p $R
t0=$SECONDS
nvidia-smi --query-gpu=name --format=csv,noheader > $R/gpu.txt 2>&1; cat $R/gpu.txt
OUT=$R/build timeout 150 scripts/device-bench.sh .carry/t48 --steps build > $R/build.txt 2>&1
echo "build rc=$? ($((SECONDS-t0)) s)"
(cd build-dev && timeout 150 ctest --output-on-failure > $R/ctest.txt 2>&1); echo "ctest rc=$? ($((SECONDS-t0)) s)"
grep -E "tests passed|Failed|FAIL" $R/ctest.txt | head -10
tests="test_gpu_bundle.py test_gpu_attention.py test_gpu_varlen.py test_gpu_decode.py test_gpu_moe.py test_gpu_ffn_native.py"
OUT=$R/suite timeout 300 scripts/device-bench.sh .carry/t48 --steps test --tests "$tests" > $R/pytests.txt 2>&1
echo "pytests rc=$? ($((SECONDS-t0)) s)"; grep -E "^=== .*exit" $R/pytests.txt
grep -hE "^(FAIL|ERROR):" /tmp/flashc-device/logs/python_*.log 2>/dev/null | head -10
rm -rf $R/build $R/suite/device-logs.tgz
tar -czf $R/call3.tgz -C $R --exclude=call3.tgz . 2>/dev/null
find $R -type f ! -name call3.tgz ! -name gpu.txt -delete
