#!/bin/bash
# Session 36 call 4: the final table (with the backward's tuned head groups) over the test bundles; sanitizers on the
# group-8 document backward and the D = 64 causal one (launch order); D = 64 causal against cuDNN.
cd "$(dirname "$0")/.."
R=$OUT; mkdir -p $R
export FLASHC_DEVICE_WORK=/tmp/fd
OUT=$R/dr timeout 260 scripts/device-bench.sh .carry/s36f --steps build,run > $R/build_run.txt 2>&1; echo "build/run rc=$?" >> $R/build_run.txt
mkdir -p /tmp/drl; tar xzf $R/dr/device-logs.tgz -C /tmp/drl 2>/dev/null; grep -h "checks, " /tmp/drl/logs/flashc_run/*.log | awk '{c+=$1; f+=$3} END {print NR" runs,", c" checks,", f" failed"}' | tee $R/flashc_run_summary.txt
grep -h "FAILED" /tmp/drl/logs/flashc_run/*.log | head; rm -rf $R/dr
CS=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer | head -1)
for b in attn_bf16_h4kv2_d128_causal_mod6ac147f1_740e3d93d1a3 attn_bf16_h2kv2_d64_causal_bwdtransposed_35b2b0829189; do
  for tool in memcheck racecheck; do
    echo "--- $b $tool" >> $R/sanitize.txt
    timeout 80 $CS --tool $tool --error-exitcode 3 build-dev/bin/flashc-run .carry/s36f/$b --batch 3 --seq-q 300 --seq-k 333 >> $R/sanitize.txt 2>&1; echo "rc=$?" >> $R/sanitize.txt
  done
done
grep -E "^---|rc=|SUMMARY" $R/sanitize.txt
export FLASHC_RUNTIME_LIB=$PWD/build-dev/runtime/libflashc_runtime.so PYTHONPATH=$PWD/python
FLASHC_BUNDLE_PATH=$PWD/.carry/s36f FLASHC_CACHE_DIR=/tmp/nc_f timeout 150 python3 bench/bench_attention.py --head-dims 64 --causal yes --peers flashc,cudnn,sdpa_flash --no-load-time --rounds 2 --check-heads 1 --out $R/ba64 > $R/ba64.log 2>&1; echo "rc=$?" >> $R/ba64.log
grep "^| 64" $R/ba64/bench_attention.md | cut -d'|' -f2-7,10; tail -1 $R/ba64.log
