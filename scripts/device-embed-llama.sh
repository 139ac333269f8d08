#!/usr/bin/env bash
# examples/embed_llama on the GPU machine (no MLIR there): the runtime alone is
# built and installed, and the example embeds a llama_block bundle compiled on
# the dev machine (flashc examples/llama_block.mlir -o BUNDLE_DIR --arch=sm_90a).
#   usage: scripts/device-embed-llama.sh BUNDLE_DIR [build-dir] [-- example options]
# Exit status: the example's (0 every output matches float64; 1 a mismatch or error; 77 no GPU).
set -uo pipefail
cd "$(dirname "$0")/.."
bundle="${1:?usage: scripts/device-embed-llama.sh BUNDLE_DIR [build-dir] [-- example options]}"
shift
BUILD=build-rt
if [ $# -gt 0 ] && [ "$1" != "--" ]; then BUILD="$1"; shift; fi
[ "${1:-}" = "--" ] && shift
WORK=${FLASHC_DEVICE_WORK:-/tmp/flashc-device}/embed-llama
rm -rf "$WORK"
mkdir -p "$WORK"
run() {
  local what="$1"; shift
  if ! "$@" >"$WORK/$what.log" 2>&1; then tail -40 "$WORK/$what.log"; echo "$what FAILED"; exit 1; fi
}
[ -f "$BUILD/build.ninja" ] || run configure-runtime cmake -G Ninja -S . -B "$BUILD" -DFLASHC_RUNTIME_ONLY=ON
run build-runtime cmake --build "$BUILD" --target flashc_runtime flashc-pack
run install cmake --install "$BUILD" --prefix "$WORK/prefix"
run configure cmake -G Ninja -S examples/embed_llama -B "$WORK/build" -DCMAKE_PREFIX_PATH="$WORK/prefix" \
  -DLLAMA_BUNDLE_DIR="$(cd "$bundle" && pwd)" -DCMAKE_BUILD_TYPE=Release
run build cmake --build "$WORK/build"
FLASHC_CACHE_DIR="$WORK/cache" "$WORK/build/embed_llama" "$@"
