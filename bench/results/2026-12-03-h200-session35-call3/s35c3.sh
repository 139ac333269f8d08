#!/bin/bash
# Session 35 call 3: the programmable rows under tuning-space points (timelines, flashc only).
cd "$(dirname "$0")/.."
R=$OUT; mkdir -p $R
export FLASHC_DEVICE_WORK=/tmp/fd
OUT=$R/dr timeout 240 scripts/device-bench.sh .carry/s35t --steps build,run > $R/build_run.txt 2>&1; echo "build/run rc=$?" >> $R/build_run.txt
mkdir -p /tmp/drl; tar xzf $R/dr/device-logs.tgz -C /tmp/drl 2>/dev/null; grep -h "checks, " /tmp/drl/logs/flashc_run/*.log | awk '{c+=$1; f+=$3} END {print NR" runs,", c" checks,", f" failed"}' | tee $R/flashc_run_summary.txt
CS=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer | head -1)
b=$(ls -d .carry/s35t/attn_bf16_h2kv2_d72v40_causal_*); timeout 60 $CS --tool memcheck --error-exitcode 3 build-dev/bin/flashc-run $b --batch 2 --seq-q 300 --seq-k 333 > $R/sanitize.txt 2>&1 || echo "FAILED: memcheck" >> $R/sanitize.txt
export FLASHC_RUNTIME_LIB=$PWD/build-dev/runtime/libflashc_runtime.so PYTHONPATH=$PWD/python
for row in document window_attr prefix_lm alibi; do
  for v in bp0 bpa bpb bpc bp0; do
    echo "=== $row $v" >> $R/timeline.txt
    FLASHC_BUNDLE_PATH=$PWD/.carry/$v FLASHC_CACHE_DIR=/tmp/nc_$v timeout 60 python3 bench/probes/mask_mod_profile.py $row 5 --timeline 2>&1 | grep -E "flashc_|Error|error" >> $R/timeline.txt
  done
done
grep -E "^===|attention_bwd |attention_fwd " $R/timeline.txt | awk '{print $1, $2, $3, $(NF-1), $NF}' | head -80
tar czf $R/logs.tgz -C $R dr 2>/dev/null; rm -rf $R/dr
