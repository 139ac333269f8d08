#!/bin/bash
# Session 48, call 1: the verification session 47 left (its prepared README, items 1 and 3), on bundles built at
# HEAD 4a5318e (.carry/t48: tests + bench-programmable + tests-transformers + tests-key-offset, 164 bundles; the
# bf16 D = 64 backwards now take the consumers' turns with two dSᵀ buffers through the built-in table).
# Predictions: flashc-run 0 failed (the turns form passed the tuner's float64 checks twice); sanitizers clean (the
# two-buffer turns form's barrier protocol is the one session 42 reviewed); Python GPU tests all pass
# (test_gpu_transformers failed in session 47's call 8 only because its bundles were not carried).
set -u
R=$OUT; mkdir -p $R
export FLASHC_DEVICE_WORK=/tmp/fd
t0=$SECONDS
nvidia-smi --query-gpu=name,clocks.max.sm,memory.total --format=csv > $R/gpu.txt 2>&1; cat $R/gpu.txt
OUT=$R/suite timeout 150 scripts/device-bench.sh .carry/t48 --steps build > $R/build.txt 2>&1
echo "build rc=$? ($((SECONDS-t0)) s)"
timeout 120 ctest --test-dir build-dev -E python --output-on-failure > $R/ctest.txt 2>&1
echo "ctest rc=$? ($((SECONDS-t0)) s)"; grep -E "tests passed|tests failed|\*\*\*" $R/ctest.txt | head -10
OUT=$R/suite timeout 200 scripts/device-bench.sh .carry/t48 --steps run > $R/run.txt 2>&1
echo "run rc=$? ($((SECONDS-t0)) s)"; grep -E "^=== |FAILED" $R/run.txt | head -20
grep -h "checks, " /tmp/fd/logs/flashc_run/*.log 2>/dev/null | awk '{c+=$1; f+=$3} END {print "flashc-run: " c " checks, " f " failed"}'
grep -h "scratch poisoned" /tmp/fd/logs/flashc_run/*.log 2>/dev/null | wc -l | sed 's/^/poisoned-scratch runs: /'
# The D = 64 backwards that the table entries changed (turns, two buffers): racecheck / synccheck / memcheck, with
# enough query blocks that the dSᵀ buffers and the ring are reused (300 queries: 3 steps of 128).
CS=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer | head -1)
for b in .carry/t48/attn_bf16_h2kv2_d64_causal_6b477467c99f .carry/t48/attn_bf16_h2kv2_d64_full_90a2a7cd6eb1; do
  [ -f $b/manifest.flashc ] || continue
  grep -q "kPingPong = true" $b/kernels.cu && echo "$(basename $b): backward takes turns"
  for tool in racecheck synccheck; do
    timeout 90 $CS --tool $tool --error-exitcode 3 build-dev/bin/flashc-run $b --batch 1 --seq-q 300 --seq-k 140 --tokens 77 \
      > $R/san-$tool-$(basename $b).txt 2>&1
    echo "$tool $(basename $b) rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $R/san-$tool-$(basename $b).txt | tr '\n' ' ')"
  done
done
echo "d64 sanitizers done ($((SECONDS-t0)) s)"
if [ "${CALL1_SANITIZE:-1}" = 1 ]; then  # (call 3 leaves it: session 44 ran it on the same kernels but D = 64's)
  OUT=$R/suite timeout 130 scripts/device-bench.sh .carry/t48 --steps sanitize > $R/sanitize.txt 2>&1
  echo "sanitize rc=$? ($((SECONDS-t0)) s)"; grep -E "^=== |FAILED" $R/sanitize.txt | head -20
fi
left=$((${CALL1_BUDGET:-570} - SECONDS + t0))
echo "python tests with $left s left"
tests="test_gpu_transformers.py test_gpu_decode.py test_gpu_ffn.py test_gpu_ffn_native.py test_gpu_key_offset.py test_gpu_varlen.py test_gpu_moe.py test_gpu_ring.py test_gpu_attention.py test_gpu_bundle.py test_gpu_compile.py"
[ $left -gt 30 ] && OUT=$R/suite timeout $left scripts/device-bench.sh .carry/t48 --steps test --tests "$tests" > $R/pytests.txt 2>&1
echo "pytests rc=$? ($((SECONDS-t0)) s)"; grep -E "^=== .*exit" $R/pytests.txt
tar -czf $R/fd-logs.tgz -C /tmp/fd logs 2>/dev/null; rm -rf $R/suite/device-logs.tgz
