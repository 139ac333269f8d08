#!/bin/bash
# Prepared in session 42 (no device was lent): the first device call (nvidia-h200, ~8 min), correctness of what
# session 42 built. Carry: .carry/t42 (`prebuild --out .carry/t42 tests` at the session's last commit: every default,
# the three ready-barrier ids of the turns and the band modifiers run as windows among them), .carry/tturns2 (the
# `tests` bundles built with turns-everywhere.txt whose backward takes turns with two dSᵀ buffers), this script.
#  1. flashc-run's float64 checks over every t42 bundle (device-bench's run step: two sizes each);
#  2. the same over tturns2 at three sizes (1000 x 1000: each ready barrier's id reused many times);
#  3. racecheck: the default turns (D = 128 GQA causal), two-buffer turns (D = 128 three stages; D = 64 document
#     mask), a band modifier run as a window (D = 128 GQA, Sq != Sk);
#  4. the GPU Python tests of attention and mask modifiers (the band configurations through flashc.torch).
cd "$(dirname "$0")/../../.."
R=$OUT; mkdir -p $R
export FLASHC_DEVICE_WORK=/tmp/fd
OUT=$R/dr timeout 200 scripts/device-bench.sh .carry/t42 --steps build > $R/build.txt 2>&1; echo "build rc=$?"
export FLASHC_RUNTIME_LIB=$PWD/build-dev/runtime/libflashc_runtime.so PYTHONPATH=$PWD/python
OUT=$R/drun timeout 240 scripts/device-bench.sh .carry/t42 --steps run > $R/run_t42.txt 2>&1; echo "run t42 rc=$?"
grep -E "FAILED|exit" $R/run_t42.txt | tail -5
# (six at a time: each float64 reference runs on one CPU core; ~4 min serially)
run_turns() {
  local b="$1" R="$2"
  { timeout 40 build-dev/bin/flashc-run $b --require-gpu --batch 2 --seq-q 257 --seq-k 257 &&
    timeout 40 build-dev/bin/flashc-run $b --require-gpu --batch 1 --seq-q 77 --seq-k 200 &&
    timeout 60 build-dev/bin/flashc-run $b --require-gpu --batch 1 --seq-q 1000 --seq-k 1000; } > $R/run_$(basename $b).txt 2>&1 ||
    echo "FAIL $(basename $b)"
}
export -f run_turns
ls -d .carry/tturns2/attn_* | xargs -P 6 -I{} bash -c 'run_turns "$1" "$2"' _ {} $R
echo "flashc-run over $(ls -d .carry/tturns2/attn_* | wc -l) two-buffer-turns bundles: $(cat $R/run_attn_*.txt | grep -E 'checks, ' | awk '{c+=$1; f+=$3} END {print c " checks, " f " failed"}')"
CS=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer | head -1)
for b in t42/attn_bf16_h4kv2_d128_causal_152253bdd0ad tturns2/attn_bf16_h4kv2_d128_causal_152253bdd0ad \
         tturns2/attn_bf16_h2kv2_d64_causal_mod6ac147f1_fb189282e007 t42/attn_bf16_h4kv2_d128_full_modb56ceed0_40e70ed5168a; do
  timeout 60 $CS --tool racecheck --error-exitcode 3 build-dev/bin/flashc-run .carry/$b --batch 1 --seq-q 300 --seq-k 333 > $R/race_$(echo $b | tr / _).txt 2>&1
  echo "racecheck $b: rc=$? $(grep -E 'RACECHECK SUMMARY' $R/race_$(echo $b | tr / _).txt | head -1)"
done
OUT=$R/dt timeout 150 scripts/device-bench.sh .carry/t42 --steps test --tests "test_gpu_attention.py test_mask_mod.py" > $R/test.txt 2>&1; echo "tests rc=$?"
grep -E "^=== .*exit|Ran |^OK|FAILED" $R/test.txt | tail -6
tar czf $R/logs.tgz -C $R $(cd $R && ls -d dr drun dt 2>/dev/null) 2>/dev/null; rm -rf $R/dr $R/drun $R/dt
