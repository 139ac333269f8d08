#!/bin/bash
# The host code (compiler, runtime, tools) under AddressSanitizer and UndefinedBehaviorSanitizer, in a Debug build
# whose MLIR header assertions are on: the lit suite, the runtime's ctest executables, the bundle fuzzer and the
# inputs fuzzer. Not part of scripts/test.sh: the build alone takes about 40 minutes on 2 cores, the whole run about
# an hour. Session 51's first run found an invalid !tile.tile the fused FFN's builder made (flash-tile now refuses
# it), and a manifest dim that changed in the writer's round trip (the bundle fuzzer).
#   scripts/sanitize-host.sh [--runs N]     (N: the inputs fuzzer's runs, default 1500)
# FLASHC_SANITIZE_DIR overrides the build directory (default build-sanitize), FLASHC_JOBS the parallelism.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/build-common.sh"
runs=1500
while [ $# -gt 0 ]; do
  case "$1" in
    --runs)
      [ $# -ge 2 ] && [[ "$2" =~ ^[1-9][0-9]*$ ]] || { echo "sanitize-host: --runs takes a positive count" >&2; exit 2; }
      runs="$2"; shift 2 ;;
    *) echo "sanitize-host: unknown argument '$1' (--runs N)" >&2; exit 2 ;;
  esac
done
dir="${FLASHC_SANITIZE_DIR:-$flashc_root/build-sanitize}"
"$flashc_root/scripts/setup.sh"
flags="-O1 -g -fsanitize=address,undefined -fno-sanitize=vptr -fno-omit-frame-pointer"
if [ ! -f "$dir/build.ninja" ]; then
  cmake -G Ninja -S "$flashc_root" -B "$dir" -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS="$flags" \
    -DCMAKE_C_FLAGS="$flags" -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=address,undefined" \
    -DCMAKE_SHARED_LINKER_FLAGS="-fsanitize=address,undefined"
fi
cmake --build "$dir" -j "$flashc_jobs"

# - detect_container_overflow, allow_user_poisoning off: LLVM and MLIR come from Debian uninstrumented, and the
#   allocator and container annotations our code instantiates from their headers would flag their writes;
# - detect_leaks off: MLIR keeps its contexts' storage to exit;
# - protect_shadow_gap off: the CUDA driver maps memory there, on a machine that has one;
# - abort_on_error / halt_on_error: a finding is a signal, which the fuzzers count as a crash.
export ASAN_OPTIONS=detect_container_overflow=0:detect_leaks=0:abort_on_error=1:allow_user_poisoning=0:protect_shadow_gap=0
export UBSAN_OPTIONS=halt_on_error=1:abort_on_error=1:print_stacktrace=1
status=0
# ctest's lit, the dialects' and the runtime's executables with the bundle fuzzer (FLASHC_BUNDLE_FUZZ_RUNS runs a
# target); not embed_example and cmake_bundle, whose applications are built without the sanitizers, nor the Python
# and GPU tests.
FLASHC_BUNDLE_FUZZ_RUNS=100000 \
  ctest --test-dir "$dir" -R "^lit$|^dialect\.|^runtime\.|^reference\." -E "embed_example|cmake_bundle" \
  --output-on-failure || status=1
# The inputs fuzzer outside ctest (whose 20-minute limit a long run under the sanitizers passes), with a longer
# limit a run.
python3 "$flashc_root/test/Fuzz/fuzz_inputs.py" --flashc "$dir/bin/flashc" --flash-opt "$dir/bin/flash-opt" \
  --src-root "$flashc_root" --runs "$runs" --jobs "$flashc_jobs" --timeout 120 --out "$dir/fuzz-failures" \
  | tail -3 || status=1
exit $status
