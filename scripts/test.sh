#!/bin/bash
# Installs what is missing, configures (once), builds everything and runs
# every test through ctest (the lit suite is one ctest test). The output ends
# with ctest's summary; the exit status is ctest's.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/build-common.sh"

"$flashc_root/scripts/setup.sh"
flashc_configure
flashc_build_targets
ctest --test-dir "$flashc_build" --output-on-failure
