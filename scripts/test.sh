#!/bin/bash
# Installs what is missing, configures (once), builds everything and runs
# every test through ctest (the lit suite is one ctest test). The output ends
# with ctest's summary; the exit status is ctest's.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/build-common.sh"

"$flashc_root/scripts/setup.sh"
flashc_configure
flashc_build_targets
if ! nvidia-smi -L > /dev/null 2>&1; then
  echo "flashc: no GPU on this machine: the gpu.* tests are skipped (ctest lists them as Skipped);" \
       "the H200 runs them through scripts/device-bench.sh"
fi
ctest --test-dir "$flashc_build" --output-on-failure
