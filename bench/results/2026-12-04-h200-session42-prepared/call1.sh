#!/bin/bash
# Prepared in session 42 (no device was lent), for the next device call (nvidia-h200, ~8 min). Carry: .carry/tturns
# (the tests set built with turns-everywhere.txt), .carry/tune42b (bench-programmable's backward keys at S = 16k),
# .carry/tune42a (the tune set's backward keys), and this script. Steps, results to $OUT as they come:
#  1. flashc-run's float64 checks over the bundles whose backward takes turns with two dSᵀ buffers (D <= 64, or three
#     stages), then racecheck on two of them (D = 128 GQA causal three-stage; D = 64 document mask);
#  2. the tuner over #16's backward keys (documents' entry re-tuned with the new points), then the tune set's
#     (D = 64 turns; three-stage turns at D = 80-128), resumable (--budget).
cd "$(dirname "$0")/../../.."
R=$OUT; mkdir -p $R
export FLASHC_DEVICE_WORK=/tmp/fd
[ -x build-dev/bin/flashc-run ] || { OUT=$R/dr timeout 200 scripts/device-bench.sh .carry/tturns --steps build > $R/build.txt 2>&1; echo "build rc=$?"; }
export FLASHC_RUNTIME_LIB=$PWD/build-dev/runtime/libflashc_runtime.so PYTHONPATH=$PWD/python
n=0; fails=0
for b in .carry/tturns/attn_*; do
  awk '/attention_bwd_config \{/,/^}/' $b/kernels.cu | grep -q "kPingPong = true" || continue
  awk '/attention_bwd_config \{/,/^}/' $b/kernels.cu | grep -qE "kStages = 3|kBlockM = 128" || continue
  n=$((n+1))
  # (the run step's two sizes, and 1000 x 1000: 8-16 query steps, each parity of the ready barriers many times)
  { timeout 40 build-dev/bin/flashc-run $b --require-gpu --batch 2 --seq-q 257 --seq-k 257 &&
    timeout 40 build-dev/bin/flashc-run $b --require-gpu --batch 1 --seq-q 77 --seq-k 200 &&
    timeout 60 build-dev/bin/flashc-run $b --require-gpu --batch 1 --seq-q 1000 --seq-k 1000; } > $R/run_$(basename $b).txt 2>&1 ||
    { fails=$((fails+1)); echo "FAIL $(basename $b)"; }
done
echo "flashc-run over $n two-buffer-turns bundles: $fails failed; $(cat $R/run_*.txt | grep -E 'checks' | awk '{c+=$1; f+=$3} END {print c " checks, " f " failed"}')"
CS=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer | head -1)
for b in attn_bf16_h4kv2_d128_causal_152253bdd0ad attn_bf16_h2kv2_d64_causal_mod6ac147f1_fb189282e007; do
  timeout 60 $CS --tool racecheck --error-exitcode 3 build-dev/bin/flashc-run .carry/tturns/$b --batch 1 --seq-q 300 --seq-k 333 > $R/race_$b.txt 2>&1
  echo "racecheck $b: rc=$? $(grep -E 'RACECHECK SUMMARY' $R/race_$b.txt | head -1)"
done
for plan in tune42b tune42a; do
  OUT=$R/t_$plan timeout 200 scripts/device-bench.sh --steps tune --tune-plan .carry/$plan --tune-args "--budget 150 --lead-us auto" > $R/tune_$plan.txt 2>&1; echo "tune $plan rc=$?"
  cp $R/t_$plan/tune/progress.jsonl $R/progress_$plan.jsonl 2>/dev/null; cp $R/t_$plan/tune/tune-report.md $R/report_$plan.md 2>/dev/null
  tail -4 $R/tune_$plan.txt
done
tar czf $R/logs.tgz -C $R $(cd $R && ls -d dr t_* 2>/dev/null) 2>/dev/null; rm -rf $R/dr $R/t_*
