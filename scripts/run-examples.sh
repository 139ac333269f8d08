#!/bin/bash
# Installs what is missing, builds flashc and compiles every examples/*.mlir,
# printing what it produced. Outputs go to out/examples/ (FLASHC_OUT overrides).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/build-common.sh"

"$flashc_root/scripts/setup.sh"
flashc_configure
flashc_build_targets flashc

out="${FLASHC_OUT:-$flashc_root/out/examples}"
mkdir -p "$out"
status=0
for spec in "$flashc_root"/examples/*.mlir; do
  name="$(basename "$spec" .mlir)"
  graph="$out/$name.graph.mlir"
  echo "== $name: flashc --emit=graph -> $graph"
  if "$flashc_build/bin/flashc" "$spec" --emit=graph -o "$graph"; then
    cat "$graph"
    echo "-- $name: $(grep -c 'flash.attention' "$graph" || true) flash.attention," \
         "$(grep -c 'flash.ffn' "$graph" || true) flash.ffn"
  else
    echo "-- $name: FAILED" >&2
    status=1
  fi
done
exit "$status"
