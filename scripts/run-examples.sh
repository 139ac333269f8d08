#!/bin/bash
# The main job: installs what is missing, builds flashc, compiles every
# examples/*.mlir and examples/*/*.mlir (the decode loop's step) into a bundle (fused, tiled, forward + backward, CUDA C++ and
# an sm_90a cubin), prints what each bundle holds, and — where a GPU exists —
# runs every program of every bundle against a float64 CPU reference with
# flashc-run. Outputs go to out/examples/ (FLASHC_OUT overrides); FLASHC_ARCH
# picks the architectures (default sm_90a).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/build-common.sh"

"$flashc_root/scripts/setup.sh"
flashc_configure
flashc_build_targets flashc flashc-run

out="${FLASHC_OUT:-$flashc_root/out/examples}"
arch="${FLASHC_ARCH:-sm_90a}"
mkdir -p "$out"
status=0
for spec in "$flashc_root"/examples/*.mlir "$flashc_root"/examples/*/*.mlir; do
  name="$(basename "$spec" .mlir)"
  bundle="$out/$name.bundle"
  echo "== $name: flashc $spec -o $bundle --arch=$arch"
  if ! "$flashc_build/bin/flashc" "$spec" -o "$bundle" --arch="$arch"; then
    echo "-- $name: FAILED to compile" >&2
    status=1
    continue
  fi
  "$flashc_build/bin/flashc" "$spec" --emit=graph -o "$out/$name.graph.mlir"
  echo "-- fused graph: $(grep -c 'flash.attention' "$out/$name.graph.mlir" || true) flash.attention," \
       "$(grep -c 'flash.decode_attention' "$out/$name.graph.mlir" || true) flash.decode_attention," \
       "$(grep -c 'flash.ffn' "$out/$name.graph.mlir" || true) flash.ffn"
  echo "-- bundle: $(ls "$bundle" | tr '\n' ' ')"
  awk '/^kernel /{k=$2} /^  role /{r=$2} /^  block /{b=$2; sub(",", "", b)} /^  shared /{printf "   kernel %-40s %-32s threads %-5s shared %s\n", k, r, b, $2}
       /^program /{printf "   program %s:", $2} /^  kernel /&&p{printf " %s", $2} /^program /{p=1} /^end/&&p{printf "\n"; p=0}' \
      "$bundle/manifest.flashc"
  # Runs on the GPU when there is one; says SKIPPED (exit 0) otherwise.
  if ! "$flashc_build/bin/flashc-run" "$bundle" --batch 2 --seq-q 200 --seq-k 200 --tokens 64; then
    status=1
  fi
done
exit "$status"
