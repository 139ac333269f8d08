#!/bin/bash
# Session 35 call 4: one-tile grids in groups of heads. flashc-run (G = 8), timelines and bench_attention (G = 1/4/8).
cd "$(dirname "$0")/.."
R=$OUT; mkdir -p $R
export FLASHC_DEVICE_WORK=/tmp/fd
OUT=$R/dr timeout 200 scripts/device-bench.sh .carry/tg8 --steps build,run > $R/build_run.txt 2>&1; echo "build/run rc=$?" >> $R/build_run.txt
mkdir -p /tmp/drl; tar xzf $R/dr/device-logs.tgz -C /tmp/drl 2>/dev/null; grep -h "checks, " /tmp/drl/logs/flashc_run/*.log | awk '{c+=$1; f+=$3} END {print NR" runs,", c" checks,", f" failed"}' | tee $R/flashc_run_summary.txt
CS=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer | head -1)
for b in $(ls -d .carry/tg8/attn_*mod* | head -2); do echo "--- $(basename $b)" >> $R/sanitize.txt; timeout 60 $CS --tool memcheck --error-exitcode 3 build-dev/bin/flashc-run $b --batch 3 --seq-q 300 --seq-k 333 >> $R/sanitize.txt 2>&1 || echo "FAILED: memcheck" >> $R/sanitize.txt; done
export FLASHC_RUNTIME_LIB=$PWD/build-dev/runtime/libflashc_runtime.so PYTHONPATH=$PWD/python
for row in document prefix_lm window_attr alibi; do
  for v in bg1 bg4 bg8 bg1; do
    echo "=== $row $v" >> $R/timeline.txt
    FLASHC_BUNDLE_PATH=$PWD/.carry/$v FLASHC_CACHE_DIR=/tmp/nc_$v timeout 60 python3 bench/probes/mask_mod_profile.py $row 5 --timeline 2>&1 | grep -E "flashc_|Error|error" >> $R/timeline.txt
  done
done
grep -E "^===|attention_bwd |attention_fwd " $R/timeline.txt | awk '{print $1, $2, $3, $(NF-1), $NF}'
for v in bg1 bg4 bg8; do
  FLASHC_BUNDLE_PATH=$PWD/.carry/$v FLASHC_CACHE_DIR=/tmp/nc_$v timeout 100 python3 bench/bench_attention.py --head-dims 128 --seqs 1024,4096,16384 --causal yes --peers flashc --no-load-time --rounds 1 --check-heads 1 --out $R/ba_$v > $R/ba_$v.log 2>&1
  echo "== $v"; grep "^| 128" $R/ba_$v/bench_attention.md | cut -d'|' -f2-6
done
tar czf $R/logs.tgz -C $R dr 2>/dev/null; rm -rf $R/dr
