#!/bin/bash
# Session 51, call 1 (the H200 if lent; else any): (a) session 50's last commit (06ffa38: the device-memory rule for
# tensors and workspace in one function, messages meant unchanged) on a GPU: ctest of the device build and
# test_gpu_bundle.py (it checks the workspace's first- and last-byte messages); (b) bench/probes/bwd_ends_rate.cu:
# the backward preprocess's rate against the memory's, and three other ways of moving its bytes.
# Predictions: ctest 22/22; test_gpu_bundle exits 0. Probe (H200): library 69 us (3.9 TB/s), copy of as many bytes
# ~63 us (4.27 TB/s), memset 134 MB ~30 us, delta only 33-40 us, streaming / bulk / split 63-66 us (each passes its
# check), postprocess 48 us. On an H100 every time ~1.4x (3.35 TB/s memory).
set -u
R=$OUT; mkdir -p $R
t0=$SECONDS
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader > $R/gpu.txt 2>&1; cat $R/gpu.txt
nvcc -O3 -std=c++17 -arch=sm_90a -I runtime/device/include bench/probes/bwd_ends_rate.cu -o /tmp/bwd_ends_rate > $R/probe_build.txt 2>&1
echo "probe build rc=$? ($((SECONDS-t0)) s)"
/tmp/bwd_ends_rate 16384 16 40 > $R/probe1.txt 2>&1; echo "probe rc=$?"; cat $R/probe1.txt
/tmp/bwd_ends_rate 16384 16 40 > $R/probe2.txt 2>&1; echo "probe (again) rc=$?"; cat $R/probe2.txt
OUT=$R/build timeout 150 scripts/device-bench.sh .carry/t48 --steps build > $R/build.txt 2>&1
echo "build rc=$? ($((SECONDS-t0)) s)"
(cd build-dev && timeout 150 ctest --output-on-failure > $R/ctest.txt 2>&1); echo "ctest rc=$? ($((SECONDS-t0)) s)"
grep -E "tests passed|Failed|\*\*\*" $R/ctest.txt | head -10
OUT=$R/suite timeout 120 scripts/device-bench.sh .carry/t48 --steps test --tests "test_gpu_bundle.py" > $R/pytests.txt 2>&1
echo "pytests rc=$? ($((SECONDS-t0)) s)"; grep -E "^=== .*exit" $R/pytests.txt
grep -hE "^(FAIL|ERROR):" /tmp/flashc-device/logs/python_*.log 2>/dev/null | head -10
rm -rf $R/build $R/suite/device-logs.tgz
