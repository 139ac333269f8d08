#!/usr/bin/env bash
# Runtime check on a GPU machine (CUDA, cmake, ninja; no MLIR needed):
# builds the runtime alone, runs every runtime test (CPU and GPU; the GPU ones
# must pass, not skip), runs the GPU tests under compute-sanitizer, and builds
# and runs examples/embed against an installed copy (the runtime.embed_example test).
#   usage: scripts/device-runtime-check.sh [build-dir]     (logs under $OUT or ./out/device-runtime)
set -uo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build-rt}
LOGS=${OUT:-$PWD/out/device-runtime}
mkdir -p "$LOGS"
status=0

nvidia-smi --query-gpu=name,driver_version,compute_cap --format=csv 2>&1 | tee "$LOGS/gpu.txt"

if ! cmake -G Ninja -S . -B "$BUILD" -DFLASHC_RUNTIME_ONLY=ON >"$LOGS/configure.log" 2>&1; then
  tail -30 "$LOGS/configure.log"; echo "configure FAILED"; exit 1
fi
if ! ninja -C "$BUILD" >"$LOGS/build.log" 2>&1; then
  grep -E "error|FAILED" -A5 "$LOGS/build.log" | head -60; echo "build FAILED"; exit 1
fi
echo "build ok"

# Every test, verbose output kept; GPU tests must not be skipped here.
ctest --test-dir "$BUILD" --output-on-failure -V >"$LOGS/ctest.log" 2>&1 || status=1
grep -E "^ *[0-9]+/[0-9]+ Test|tests passed|FAIL" "$LOGS/ctest.log"
if grep -q "Skipped" "$LOGS/ctest.log"; then
  echo "GPU tests were SKIPPED on a GPU machine"; status=1
fi
grep -E "^[0-9]+: (ok|FAIL|device|opt-in|PASSED|no GPU)" "$LOGS/ctest.log" | grep -E "FAIL|device|opt-in|PASSED|no GPU" | head -40

# compute-sanitizer (memcheck) over the launch and shared-memory tests. API
# errors are not reported: the tests provoke some on purpose (a host pointer
# handed to cuPointerGetAttribute must come back as a clear runtime error).
if command -v compute-sanitizer >/dev/null 2>&1; then
  for t in runtime_launch_test runtime_smem_test; do
    if FLASHC_CACHE_DIR="$PWD/$BUILD/sanitizer-cache" timeout 300 compute-sanitizer --tool memcheck --report-api-errors no --error-exitcode 9 \
        "$BUILD/test/GPU/$t" >"$LOGS/sanitizer-$t.log" 2>&1; then
      echo "compute-sanitizer memcheck $t: clean ($(grep -c '^ok' "$LOGS/sanitizer-$t.log") checks ok)"
    else
      echo "compute-sanitizer memcheck $t: FAILED"; tail -30 "$LOGS/sanitizer-$t.log"; status=1
    fi
  done
fi
[ $status -eq 0 ] && echo "device runtime check PASSED" || echo "device runtime check FAILED"
exit $status
