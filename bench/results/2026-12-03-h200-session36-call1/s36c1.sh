#!/bin/bash
# Session 36 call 1: racecheck on head-grouped backwards; modifier-inputs tests; the full `tune` set (resumable).
cd "$(dirname "$0")/.."
R=$OUT; mkdir -p $R
export FLASHC_DEVICE_WORK=/tmp/fd
OUT=$R/dr timeout 100 scripts/device-bench.sh .carry/th --steps build > $R/build.txt 2>&1; echo "build rc=$?" >> $R/build.txt
tail -2 $R/build.txt
export FLASHC_RUNTIME_LIB=$PWD/build-dev/runtime/libflashc_runtime.so PYTHONPATH=$PWD/python
timeout 60 python3 -m unittest discover -s python/tests -p test_modifier_inputs.py -v > $R/tests.txt 2>&1; echo "tests rc=$?" >> $R/tests.txt
tail -4 $R/tests.txt
CS=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer | head -1)
for b in attn_bf16_h4kv2_d128_causal_mod6ac147f1_740e3d93d1a3 attn_bf16_h2kv2_d64_causal_mod6ac147f1_fb189282e007; do
  echo "--- $b" >> $R/sanitize.txt
  timeout 80 $CS --tool racecheck --error-exitcode 3 build-dev/bin/flashc-run .carry/th/$b --batch 2 --seq-q 300 --seq-k 333 >> $R/sanitize.txt 2>&1; echo "racecheck rc=$?" >> $R/sanitize.txt
done
grep -E "^---|rc=|RACECHECK SUMMARY|hazard" $R/sanitize.txt | head -12
OUT=$R/dt timeout 400 scripts/device-bench.sh --steps tune --tune-plan .carry/tunea --tune-args "--budget 330" > $R/tune.txt 2>&1; echo "tune rc=$?" >> $R/tune.txt
cp $R/dt/tune/progress.jsonl $R/progress.jsonl 2>/dev/null; cp $R/dt/tune/tune-report.md $R/tune-report.md 2>/dev/null
grep -c '"task"' $R/progress.jsonl; grep -c '"pass": false' $R/progress.jsonl; grep -c '"status": "error' $R/progress.jsonl
tail -3 $R/tune.txt
tar czf $R/logs.tgz -C $R dr dt 2>/dev/null; rm -rf $R/dr $R/dt
