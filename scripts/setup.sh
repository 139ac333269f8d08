#!/bin/bash
# Installs flashc's build dependencies with apt-get, only those missing.
# Idempotent: a second run only checks (well under a second).
set -euo pipefail

packages=(
  libmlir-19-dev mlir-19-tools llvm-19-dev llvm-19-tools
  libboost-program-options-dev ninja-build cmake python3
)

if ! command -v dpkg-query >/dev/null 2>&1; then
  echo "setup: dpkg-query not found; install by hand: ${packages[*]}" >&2
  exit 1
fi

missing=()
for package in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$package")
  fi
done

if ((${#missing[@]} == 0)); then
  echo "setup: build dependencies present"
  exit 0
fi

echo "setup: installing ${missing[*]}"
sudo=()
if [ "$(id -u)" -ne 0 ]; then
  sudo=(sudo)
fi
"${sudo[@]}" apt-get update -qq
DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
