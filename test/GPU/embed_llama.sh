#!/bin/bash
# GPU test of examples/embed_llama: installs this build (runtime, compiler,
# CMake package), builds the example against it with find_package(flashc)
# (which compiles examples/llama_block.mlir at build time and embeds the
# bundle), and runs it: forward and backward on the GPU against float64.
# Install, configure and build failures fail the test everywhere; without a
# GPU the example prints SKIPPED and exits 77 (ctest: skipped).
#   embed_llama.sh CMAKE GENERATOR BUILD_DIR SOURCE_DIR WORK_DIR [example options]
set -u
cmake="$1" generator="$2" build="$3" source="$4" work="$5"
shift 5 # the rest: the example's options
rm -rf "$work"
step() {
  local what="$1"
  shift
  if ! "$@" > "$work.log" 2>&1; then
    cat "$work.log"
    echo "FAIL: $what"
    exit 1
  fi
}
mkdir -p "$work"
step "install" "$cmake" --install "$build" --prefix "$work/prefix"
step "configure examples/embed_llama" "$cmake" -G "$generator" -S "$source/examples/embed_llama" -B "$work/build" \
  -DCMAKE_PREFIX_PATH="$work/prefix" -DCMAKE_BUILD_TYPE=Release
step "build examples/embed_llama" "$cmake" --build "$work/build"
echo "built examples/embed_llama against the installed package (llama_block compiled and embedded)"
FLASHC_CACHE_DIR="$work/cache" "$work/build/embed_llama" "$@"
status=$?
[ "$status" = 0 ] && rm -rf "$work" "$work.log"
exit "$status"
