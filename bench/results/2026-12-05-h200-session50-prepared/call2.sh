#!/bin/bash
# Session 50, call 2 (any GPU): the runtime's new launch checks (a tensor's last byte, written tensors overlapping
# another argument), code per context ID, a poisoned cache entry compiled again. ctest of the device build (22 tests:
# the new gpu.runtime_context_test among them), the Python GPU tests that pass flashc.torch's tensors through the
# checks, and flashc-run over a slice of the carried bundles.
# Predictions: ctest 22/22 (the context test's IDs differ after the reset); every Python file exits 0 (no binding
# passes an output that overlaps another argument); flashc-run 0 failed.
set -u
R=$OUT; mkdir -p $R
t0=$SECONDS
nvidia-smi --query-gpu=name --format=csv,noheader > $R/gpu.txt 2>&1; cat $R/gpu.txt
OUT=$R/build timeout 150 scripts/device-bench.sh .carry/t48 --steps build > $R/build.txt 2>&1
echo "build rc=$? ($((SECONDS-t0)) s)"
(cd build-dev && timeout 150 ctest --output-on-failure > $R/ctest.txt 2>&1); echo "ctest rc=$? ($((SECONDS-t0)) s)"
grep -E "tests passed|Failed|\*\*\*" $R/ctest.txt | head -10
grep -E "context IDs|created contexts" $R/ctest.txt build-dev/Testing/Temporary/LastTest.log 2>/dev/null | head -3
tests="test_gpu_attention.py test_gpu_decode.py test_gpu_varlen.py test_gpu_moe.py test_gpu_key_offset.py test_gpu_bundle.py test_gpu_ffn_native.py test_gpu_ffn.py"
OUT=$R/suite timeout 240 scripts/device-bench.sh .carry/t48 --steps test --tests "$tests" > $R/pytests.txt 2>&1
echo "pytests rc=$? ($((SECONDS-t0)) s)"; grep -E "^=== .*exit" $R/pytests.txt
grep -hE "^(FAIL|ERROR):" /tmp/flashc-device/logs/python_*.log 2>/dev/null | head -10
# A quarter of the carried bundles (every fourth), through device-bench's run step (its sizes, poisoned scratch).
mkdir -p /tmp/slice50; for b in $(ls .carry/t48 | grep -v INDEX | awk 'NR % 4 == 1'); do ln -sfn $PWD/.carry/t48/$b /tmp/slice50/$b; done
OUT=$R/run timeout $((585 - (SECONDS - t0))) scripts/device-bench.sh /tmp/slice50 --steps run > $R/run.txt 2>&1
echo "flashc-run rc=$? ($(ls /tmp/slice50 | wc -l) bundles, $((SECONDS-t0)) s)"; grep -c "^ok\|passed" $R/run.txt; grep FAILED $R/run.txt | head
rm -rf $R/build $R/suite/device-logs.tgz $R/run/device-logs.tgz
tar -czf $R/call2.tgz -C $R --exclude=call2.tgz . 2>/dev/null
find $R -type f ! -name call2.tgz ! -name gpu.txt -delete
