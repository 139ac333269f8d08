#!/bin/bash
# Session 52, call 1c (call 1b cut to what ~400 s of device budget allow, cold start included; call 1's machine stopped
# answering and took 360 s): this session's code on a GPU. ctest of the device build (bundle_fuzz_test among them);
# the Python GPU tests that trace modifiers (attention: mask_mod / score_mod through the changed tracer) and open
# bundles; flashc-run over HEAD's bundles with modifiers (renamed modifier symbols, the separable verdict).
# Predictions: ctest all pass; both Python files exit 0; flashc-run 0 failed.
set -u
R=$OUT; mkdir -p $R
t0=$SECONDS
[ -d .carry/t52 ] || tar -xJf .carry/t52.tar.xz -C .carry
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader > $R/gpu.txt 2>&1; cat $R/gpu.txt
OUT=$R/build timeout 120 scripts/device-bench.sh .carry/t52 --steps build > $R/build.txt 2>&1
echo "build rc=$? ($((SECONDS-t0)) s)"
(cd build-dev && timeout 90 ctest --output-on-failure > $R/ctest.txt 2>&1); echo "ctest rc=$? ($((SECONDS-t0)) s)"
grep -E "tests passed|Failed|\*\*\*" $R/ctest.txt | head -10
OUT=$R/suite timeout 80 scripts/device-bench.sh .carry/t52 --steps test --tests "test_gpu_attention.py" > $R/pytests.txt 2>&1
echo "pytests rc=$? ($((SECONDS-t0)) s)"; grep -E "^=== .*exit" $R/pytests.txt
grep -hE "^(FAIL|ERROR):" /tmp/flashc-device/logs/python_*.log 2>/dev/null | head -10
mkdir -p /tmp/slice52; for b in $(ls .carry/t52 | grep -E "mod|score" ); do ln -sfn $PWD/.carry/t52/$b /tmp/slice52/$b; done
left=$((200 - (SECONDS - t0))); [ $left -gt 20 ] && { OUT=$R/run timeout $left scripts/device-bench.sh /tmp/slice52 --steps run > $R/run.txt 2>&1; echo "flashc-run rc=$? ($(ls /tmp/slice52 | wc -l) bundles, $((SECONDS-t0)) s)"; grep -E "checks, .* failed|=== flashc_run" $R/run.txt | tail -3; }
rm -rf $R/build $R/suite/device-logs.tgz $R/run/device-logs.tgz
tar -czf $R/call1c.tgz -C $R --exclude=call1c.tgz . 2>/dev/null
find $R -type f ! -name call1c.tgz ! -name gpu.txt -delete
