#!/bin/bash
# Session 38 call 3: the wide key block under causal masks and windows — checks, sanitizers, then the tuner over the
# causal forwards (D = 128 / 80 / 96) and the f16 unmasked D = 128 forward. Everything lands in one archive (the device
# returns 8 files).
cd "$(dirname "$0")/.."
R=/tmp/r3; rm -rf $R; mkdir -p $R
export FLASHC_DEVICE_WORK=/tmp/fd FLASHC_COMMIT=${FLASHC_COMMIT:-unknown}
OUT=$R/dr timeout 150 scripts/device-bench.sh .carry/s38w2 --steps build > $R/build.txt 2>&1; echo "build rc=$?" >> $R/build.txt; rm -rf $R/dr
B=build-dev/bin/flashc-run
{
for b in .carry/s38w2/*.bundle; do
  echo "== $(basename $b)"
  for sz in "2 257 257" "1 77 200" "2 300 1000" "1 700 300" "1 1 1"; do
    set -- $sz; $B $b --require-gpu --batch $1 --seq-q $2 --seq-k $3 --tokens 33 2>&1 | tail -1
  done
  case "$(basename $b)" in attention_key_offset_*)
    for off in -100 150 2147483647 -2147483648; do $B $b --require-gpu --batch 1 --seq-q 77 --seq-k 200 --key-offset $off 2>&1 | tail -1; done ;;
  esac
done
cs="$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -1)"
for tool in memcheck racecheck synccheck; do
  echo "== $tool wide causal d128 gqa"
  timeout 120 $cs --tool $tool --error-exitcode 3 $B .carry/s38w2/attention_gqa_causal_d128_bf16.wide-keys.bundle --require-gpu --batch 1 --seq-q 333 --seq-k 533 --tokens 33 2>&1 | tail -2
done
} > $R/checks.txt 2>&1
echo "checks: $(grep -c ', 0 failed' $R/checks.txt) runs passed; other lines:"; grep -v ', 0 failed' $R/checks.txt | grep -v '^==' | head -12
export FLASHC_RUNTIME_LIB=$PWD/build-dev/runtime/libflashc_runtime.so PYTHONPATH=$PWD/python
mkdir -p $R/tune
timeout 330 python3 -m flashc.tune time .carry/s38t2 --progress $R/tune/progress.jsonl --out $R/tune --work /tmp/tw --budget 300 > $R/tune.txt 2>&1; echo "tune rc=$?" >> $R/tune.txt
grep -E "^sm_90a|tune rc" $R/tune.txt | cut -c1-420
tar czf $OUT/call3.tgz -C $R .
cp $R/tune/tune-report.md $OUT/ 2>/dev/null; cp $R/tune/progress.jsonl $OUT/ 2>/dev/null
