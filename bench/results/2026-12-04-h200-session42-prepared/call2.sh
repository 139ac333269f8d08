#!/bin/bash
# Prepared in session 42 (no device was lent): the tuner over the backward keys (nvidia-h200, ~9 min; resumable: run
# again with the progress files carried back into the plan directories). Carry: .carry/tune42b (`tune plan --kinds
# attention_backward --seqs 16384 bench-programmable`: #16's rows, the documents' entry among them), .carry/tune42a
# (`tune plan --kinds attention_backward tune`: the attention grid's backwards), this script.
cd "$(dirname "$0")/../../.."
R=$OUT; mkdir -p $R
export FLASHC_DEVICE_WORK=/tmp/fd
[ -x build-dev/bin/flashc-run ] || { OUT=$R/dr timeout 200 scripts/device-bench.sh --steps build > $R/build.txt 2>&1; echo "build rc=$?"; rm -rf $R/dr; }
export FLASHC_RUNTIME_LIB=$PWD/build-dev/runtime/libflashc_runtime.so PYTHONPATH=$PWD/python
for plan in tune42b tune42a; do
  OUT=$R/t_$plan timeout 260 scripts/device-bench.sh --steps tune --tune-plan .carry/$plan --tune-args "--budget 200 --lead-us auto" > $R/tune_$plan.txt 2>&1; echo "tune $plan rc=$?"
  cp $R/t_$plan/tune/progress.jsonl $R/progress_$plan.jsonl 2>/dev/null; cp $R/t_$plan/tune/tune-report.md $R/report_$plan.md 2>/dev/null
  tail -4 $R/tune_$plan.txt
done
tar czf $R/logs.tgz -C $R $(cd $R && ls -d t_* 2>/dev/null) 2>/dev/null; rm -rf $R/t_*
