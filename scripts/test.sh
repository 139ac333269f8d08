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
if ! "${FLASHC_PIP_PYTHON:-python3}" -c "import pip, scikit_build_core" > /dev/null 2>&1; then
  echo "flashc: scikit-build-core is not installed: python.pip_install is skipped (ctest lists it as Skipped;" \
       "pip install scikit-build-core, or FLASHC_PIP_PYTHON=<venv python with it>, runs it)"
fi
ctest --test-dir "$flashc_build" --output-on-failure
