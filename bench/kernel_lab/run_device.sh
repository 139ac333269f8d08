#!/bin/bash
# One device call: environment facts, build + check + bench, logs under $OUT.
set -o pipefail
OUT=${OUT:-/tmp/flashc_lab_out}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,driver_version --format=csv | tee "$OUT/env.txt"
python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__, 'cudnn', torch.backends.cudnn.version())" | tee -a "$OUT/env.txt"
DET=d128_causal_det,d64_gqa2_win37_det,d128_det
python3 bench/kernel_lab/lab.py --out "$OUT" --exclude $DET "$@" 2>&1 | tee "$OUT/lab.log"
# Deterministic dQ variants separately, under a timeout: a turn-taking bug would hang, not crash.
timeout 120 python3 bench/kernel_lab/lab.py --out "$OUT/det" --only $DET "$@" 2>&1 | tee "$OUT/det.log"
# Memory checker on small ragged shapes (reuses the builds above), capped so timings come first.
if [ -z "$SKIP_SANITIZER" ]; then
  FLASHC_LAB_SMALL=1 timeout 150 compute-sanitizer --tool memcheck --print-limit 20 \
    python3 bench/kernel_lab/lab.py --out "$OUT/sanitizer" --skip-bench --reuse-build \
    --only d64_causal,d128_gqa4_causal,d64_win20_right5,d128_causal_rows 2>&1 | tail -25 | tee "$OUT/sanitizer.log"
fi
