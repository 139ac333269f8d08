#!/bin/bash
# Session 58, call 5: #16's rows on an H200 if one came (none since session 50), the default kernels (.carry/t57);
# on an H100 nothing runs (its rows are call 2's). Predictions as call4.sh's.
set -u
R=$OUT; mkdir -p $R
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader > $R/gpu.txt 2>&1; cat $R/gpu.txt
grep -q H200 $R/gpu.txt || { echo "not an H200: nothing run"; exit 0; }
[ -d .carry/t57 ] || tar -xJf .carry/t57.tar.xz -C .carry
( cmake -G Ninja -S . -B build-dev -DFLASHC_RUNTIME_ONLY=ON >/dev/null && ninja -C build-dev >/dev/null ) || exit 1
export FLASHC_RUNTIME_LIB=$PWD/build-dev/runtime/libflashc_runtime.so PYTHONPATH=$PWD/python
FLASHC_BUNDLE_PATH=$PWD/.carry/t57 FLASHC_CACHE_DIR=/tmp/mc58c timeout 330 python3 bench/bench_programmable.py \
  --lead-us auto --kernel-times 5 --out /tmp/bp > $R/bp.log 2>&1
echo "bench_programmable rc=$?"; grep "^| " /tmp/bp/bench_programmable.md 2>/dev/null | cut -d'|' -f1-8
tar -czf $R/bp.tgz -C /tmp bp
