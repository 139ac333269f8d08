#!/bin/bash
# Session 44, first device call: session 43's open bug (cudaErrorIllegalInstruction when test_document_masks's calls
# run before test_document_segments's fallback case on the segment bundles). Replays it with bench/probes/
# segments_repro.py: plain, with CUDA_LAUNCH_BLOCKING=1, without the kernel cache, then under compute-sanitizer.
cd "$(dirname "$0")/../../.."
R=$OUT; mkdir -p $R
export FLASHC_DEVICE_WORK=/tmp/fd
t0=$SECONDS
OUT=$R/dr timeout 200 scripts/device-bench.sh .carry/seg --steps build > $R/build.txt 2>&1; echo "build rc=$? $((SECONDS-t0)) s"; rm -rf $R/dr
export FLASHC_RUNTIME_LIB=$PWD/build-dev/runtime/libflashc_runtime.so PYTHONPATH=$PWD/python
export FLASHC_BUNDLE_PATH=$PWD/.carry/seg:$PWD/.carry/t42
rp() { local name=$1 lim=$2; shift 2; t1=$SECONDS; timeout $lim "$@" > $R/$name.txt 2>&1; echo "$name rc=$? $((SECONDS-t1)) s: $(grep -E 'ok$|Error|error|ERROR' $R/$name.txt | tail -3 | tr '\n' ' ')"; }
rp plain 70 python3 bench/probes/segments_repro.py
rp blocking 70 env CUDA_LAUNCH_BLOCKING=1 python3 bench/probes/segments_repro.py
rp segonly 60 python3 bench/probes/segments_repro.py segments-only
CS=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer | head -1)
rp memcheck 180 $CS --tool memcheck --print-limit 20 python3 bench/probes/segments_repro.py
grep -E "=========" $R/memcheck.txt | head -30
rp synccheck 120 $CS --tool synccheck --print-limit 20 python3 bench/probes/segments_repro.py
grep -E "=========" $R/synccheck.txt | head -20
echo "total $((SECONDS-t0)) s"
