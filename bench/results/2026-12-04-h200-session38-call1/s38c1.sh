#!/bin/bash
# Session 38 call 1: the forward's wide key blocks (192 keys) — checks, sanitizers, then the tuner over the unmasked
# forwards' spaces (D = 64 / 128 / 80 / 96, S = 1k / 4k / 16k) with the new points.
cd "$(dirname "$0")/.."
R=$OUT; mkdir -p $R
export FLASHC_DEVICE_WORK=/tmp/fd FLASHC_COMMIT=${FLASHC_COMMIT:-unknown}
OUT=$R/dr timeout 150 scripts/device-bench.sh .carry/s38w --steps build > $R/build.txt 2>&1; echo "build rc=$?" >> $R/build.txt; rm -rf $R/dr
B=build-dev/bin/flashc-run
{
for b in .carry/s38w/*.bundle; do
  echo "== $(basename $b)"
  $B $b --require-gpu --batch 2 --seq-q 257 --seq-k 257 --tokens 96 2>&1 | tail -2
  $B $b --require-gpu --batch 1 --seq-q 77 --seq-k 200 --tokens 33 2>&1 | tail -2
  $B $b --require-gpu --batch 2 --seq-q 300 --seq-k 1000 --tokens 33 2>&1 | tail -2
  $B $b --require-gpu --batch 1 --seq-q 1 --seq-k 1 --tokens 33 2>&1 | tail -2
done
cs="$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -1)"
for tool in memcheck racecheck synccheck; do
  echo "== $tool wide d128"
  timeout 120 $cs --tool $tool --error-exitcode 3 $B .carry/s38w/attention_gqa_d128_bf16.wide-keys.bundle --require-gpu --batch 1 --seq-q 77 --seq-k 533 --tokens 33 2>&1 | tail -3
done
} > $R/checks.txt 2>&1
grep -E "failed|FAIL|ERROR|error" $R/checks.txt | head -20; grep -c "ok\|passed" $R/checks.txt
export FLASHC_RUNTIME_LIB=$PWD/build-dev/runtime/libflashc_runtime.so PYTHONPATH=$PWD/python
mkdir -p $R/tune
timeout 330 python3 -m flashc.tune time .carry/s38t --progress $R/tune/progress.jsonl --out $R/tune --work /tmp/tw --budget 300 > $R/tune.txt 2>&1; echo "tune rc=$?" >> $R/tune.txt
tail -25 $R/tune.txt
