#!/bin/bash
# One device call: environment facts, build + check + bench, logs under $OUT.
set -o pipefail
OUT=${OUT:-/tmp/flashc_lab_out}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,driver_version --format=csv | tee "$OUT/env.txt"
python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__, 'cudnn', torch.backends.cudnn.version())" | tee -a "$OUT/env.txt"
DET=d128_causal_det,d64_gqa2_win37_det,d128_det
WG=d64_causal_emitstyle,d128_gqa2_emitstyle,d128_wg,d128_causal_wg,d64_wg,d64_causal_wg,d128_gqa4_win100_wg,d64_softcap30_wg,d128_wg_vswap,d128_causal_wg_vswap,d128_wg_bn64
WS=d128_ws,d128_causal_ws,d64_ws,d64_causal_ws,d128_f16_causal_ws,d128_gqa4_causal_ws,d64_f16_gqa2_ws,d128_gqa4_win100_ws,d64_softcap30_ws,d128_ws_nopp,d128_causal_ws_nopp,d64_ws_st4,d128_ws_pers,d128_causal_ws_pers,d64_causal_ws_pers,d128_gqa4_win100_ws_pers,d64_ws_g3,d64_causal_ws_g3,d64_f16_gqa2_ws_g3,d64_softcap30_ws_g3
BWDWS=d256_bwdws,d256_causal_bwdws,d256_f16_gqa2_win100_bwdws,d256_gqa4_win37_bwdws,d256_bwdws_dq128,d128_bwdws,d128_causal_bwdws,d128_f16_gqa4_win100_bwdws,d128_causal_bwdws_st3,d128_bwdws_roles
# LAB_PART=bwdws: only the warp-specialized TMA backward (a barrier bug hangs: timeout), then its sanitizers.
if [ "$LAB_PART" = bwdws ]; then
  timeout -k 10 420 python3 bench/kernel_lab/lab.py --out "$OUT/bwdws" --only $BWDWS "$@" 2>&1 | tee "$OUT/bwdws.log"
  echo "bwdws lab exit status ${PIPESTATUS[0]} (124 = timed out: a hang)" | tee -a "$OUT/bwdws.log"
  for tool in memcheck racecheck synccheck; do
    FLASHC_LAB_SMALL=1 timeout 90 compute-sanitizer --tool $tool --print-limit 20 \
      python3 bench/kernel_lab/lab.py --out "$OUT/bwdws_$tool" --skip-bench --reuse-build \
      --only d256_causal_bwdws,d128_f16_gqa4_win100_bwdws 2>&1 | tail -15 | tee "$OUT/bwdws_$tool.log"
  done
  exit 0
fi
# LAB_PART=ws: only the TMA / warp-specialized forward, beside the wgmma forward it replaces (same session).
if [ "$LAB_PART" = ws ]; then
  timeout -k 10 120 python3 bench/kernel_lab/lab.py --out "$OUT/wg" --only d128_wg,d128_causal_wg,d64_wg,d64_causal_wg "$@" 2>&1 | tee "$OUT/wg.log"
else
python3 bench/kernel_lab/lab.py --out "$OUT" --exclude $DET,$WG,$WS,$BWDWS "$@" 2>&1 | tee "$OUT/lab.log"
# Deterministic dQ variants in their own process under a timeout (a turn-taking bug would hang),
# wgmma variants in theirs (a faulting kernel poisons the CUDA context of its process).
timeout 100 python3 bench/kernel_lab/lab.py --out "$OUT/det" --only $DET "$@" 2>&1 | tee "$OUT/det.log"
timeout 150 python3 bench/kernel_lab/lab.py --out "$OUT/wg" --only $WG "$@" 2>&1 | tee "$OUT/wg.log"
fi
# TMA + warp-specialized forward in its own process (a barrier bug hangs: timeout; a fault poisons the context).
timeout -k 10 240 python3 bench/kernel_lab/lab.py --out "$OUT/ws" --only $WS "$@" 2>&1 | tee "$OUT/ws.log"
WS_RC=${PIPESTATUS[0]}
echo "ws lab exit status $WS_RC (124 = timed out: a hang)" | tee -a "$OUT/ws.log"
if [ -z "$SKIP_SANITIZER" ] && [ "$WS_RC" != 124 ]; then
  FLASHC_LAB_SMALL=1 timeout 60 compute-sanitizer --tool memcheck --print-limit 20 \
    python3 bench/kernel_lab/lab.py --out "$OUT/ws_sanitizer" --skip-bench --reuse-build \
    --only d128_causal_ws,d64_f16_gqa2_ws 2>&1 | tail -25 | tee "$OUT/ws_sanitizer.log"
fi
[ "$LAB_PART" = ws ] && exit 0
# Memory checker on small ragged shapes (reuses the builds above), capped so timings come first.
if [ -z "$SKIP_SANITIZER" ]; then
  FLASHC_LAB_SMALL=1 timeout 60 compute-sanitizer --tool memcheck --print-limit 20 \
    python3 bench/kernel_lab/lab.py --out "$OUT/sanitizer" --skip-bench --reuse-build \
    --only d128_causal_bulk,d64_causal_wg 2>&1 | tail -25 | tee "$OUT/sanitizer.log"
fi
