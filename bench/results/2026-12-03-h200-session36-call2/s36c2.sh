#!/bin/bash
# Session 36 call 2: the tuned table's entries as built-in (D = 80 / 96 / 192:128 / 256 forwards, 4 split by key
# length): flashc-run on both sides of the bounds; bench_attention new table against the hand rules.
cd "$(dirname "$0")/.."
R=$OUT; mkdir -p $R
export FLASHC_DEVICE_WORK=/tmp/fd
OUT=$R/dr timeout 260 scripts/device-bench.sh .carry/s36t --steps build,run > $R/build_run.txt 2>&1; echo "build/run rc=$?" >> $R/build_run.txt
mkdir -p /tmp/drl; tar xzf $R/dr/device-logs.tgz -C /tmp/drl 2>/dev/null; grep -h "checks, " /tmp/drl/logs/flashc_run/*.log | awk '{c+=$1; f+=$3} END {print NR" runs,", c" checks,", f" failed"}' | tee $R/flashc_run_summary.txt
grep -h "FAILED" /tmp/drl/logs/flashc_run/*.log | head
# The long side of each bound (keys above 4096 / 1024): the hand rule's kernel of the split bundles.
for b in attn_bf16_h2kv2_d256_causal_083486177b50 attn_bf16_h2kv2_d80_causal_61205ac6e5da attn_bf16_h2kv2_d192v128_causal_39794aba1cd3 attn_bf16_h4kv1_d64_causal_c07799d33738; do
  (timeout 150 build-dev/bin/flashc-run .carry/s36t/$b --batch 1 --seq-q 4500 --seq-k 4500 > $R/long_$b.log 2>&1; echo "rc=$?" >> $R/long_$b.log) &
done; wait
for f in $R/long_*.log; do echo "$(basename $f): $(grep -h 'checks, ' $f | tail -1) $(tail -1 $f)"; done | tee $R/long_summary.txt; rm -f $R/long_*.log
tar czf $R/logs.tgz -C $R dr 2>/dev/null; rm -rf $R/dr
export FLASHC_RUNTIME_LIB=$PWD/build-dev/runtime/libflashc_runtime.so PYTHONPATH=$PWD/python
# The tuner over #16's rows (bench-programmable at S = 16k: the modifier inputs of flashc.modifier_inputs).
OUT=$R/dt timeout 200 scripts/device-bench.sh --steps tune --tune-plan .carry/tunep --tune-args "--budget 150" > $R/tunep.txt 2>&1; echo "tune rc=$?" >> $R/tunep.txt
cp $R/dt/tune/progress.jsonl $R/progress_p.jsonl 2>/dev/null; cp $R/dt/tune/tune-report.md $R/tune-report-p.md 2>/dev/null
grep -E "^sm_90a|rc=" $R/tunep.txt | cut -c1-250; rm -rf $R/dt
for v in s36h s36t s36h s36t; do
  for dims in "80,96 --heads 16" "256,192:128"; do
    [ $v$dims = "s36h256,192:128" ] && [ -f $R/ba_s36h-256_192_128.log ] && continue
    [ $v$dims = "s36t256,192:128" ] && [ -f $R/ba_s36t-256_192_128.log ] && continue
    [ $SECONDS -gt 520 ] && break 2
    n=$v-$(echo $dims | cut -d' ' -f1 | tr ',:' '__')
    FLASHC_BUNDLE_PATH=$PWD/.carry/$v FLASHC_CACHE_DIR=/tmp/nc_$v timeout 70 python3 bench/bench_attention.py --head-dims $dims --peers flashc --no-load-time --rounds 1 --check-heads 1 --out $R/ba/$n > $R/ba_$n.log 2>&1; echo "rc=$?" >> $R/ba_$n.log
    echo "== $n $(tail -1 $R/ba_$n.log)"; grep "^| [0-9]" $R/ba/$n/bench_attention.md | cut -d'|' -f2-5,10
  done
done > $R/ba_summary.txt 2>&1
cat $R/ba_summary.txt
tar czf $R/ba.tgz -C $R ba $(cd $R && ls ba_*.log) 2>/dev/null; rm -rf $R/ba $R/ba_*.log
