#!/bin/bash
# Session 49, call 6 (H100): call 5 ran ctest only (the runtime's and device tests, 21/21); the Python GPU tests,
# which pass flashc.torch's tensors through the new checks (decode's append writes its cache inout; varlen, MoE,
# attention, key offsets, bundles), in what the device budget leaves. Prediction: every file exits 0.
set -u
R=$OUT; mkdir -p $R
t0=$SECONDS
OUT=$R/build timeout 120 scripts/device-bench.sh .carry/t48 --steps build > $R/build.txt 2>&1
echo "build rc=$? ($((SECONDS-t0)) s)"
tests="test_gpu_decode.py test_gpu_attention.py test_gpu_varlen.py test_gpu_moe.py test_gpu_key_offset.py test_gpu_bundle.py test_gpu_ffn_native.py"
OUT=$R/suite timeout 170 scripts/device-bench.sh .carry/t48 --steps test --tests "$tests" > $R/pytests.txt 2>&1
echo "pytests rc=$? ($((SECONDS-t0)) s)"; grep -E "^=== .*exit" $R/pytests.txt
grep -hE "^(FAIL|ERROR):" /tmp/flashc-device/logs/python_*.log 2>/dev/null | head -10
rm -rf $R/build $R/suite/device-logs.tgz
