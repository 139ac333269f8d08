#!/bin/bash
# One device call: environment facts, build + check + bench, logs under $OUT.
set -o pipefail
OUT=${OUT:-/tmp/flashc_lab_out}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,driver_version --format=csv | tee "$OUT/env.txt"
python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__, 'cudnn', torch.backends.cudnn.version())" | tee -a "$OUT/env.txt"
python3 bench/kernel_lab/lab.py --out "$OUT" "$@" 2>&1 | tee "$OUT/lab.log"
