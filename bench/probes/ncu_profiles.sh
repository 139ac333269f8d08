#!/bin/bash
# Nsight Compute evidence for what limits the slow kernels (one device call, ~2 min): the D = 128 and D = 256
# attention backward and the FFN backward at the benchmark's largest shape. Needs FLASHC_BUNDLE_PATH with the
# bench-attention, bench-attention-large and bench-ffn bundles and FLASHC_RUNTIME_LIB. Writes $OUT/ncu_*.txt.
OUT=${OUT:-/tmp/ncu_out}
export PYTHONPATH="$PWD/python${PYTHONPATH:+:$PYTHONPATH}"
mkdir -p "$OUT"
NCU="ncu --clock-control none --section SpeedOfLight --section WarpStateStats --section LaunchStats --section Occupancy"
# Attention: every flashc kernel of the 4th (warm) forward + backward at S = 4k.
timeout 150 $NCU --kernel-name regex:flashc_ --launch-skip 12 --launch-count 4 \
  python3 bench/probes/profile_attention.py 128 4096 0 > "$OUT/ncu_attention_d128.txt" 2>&1
timeout 150 $NCU --kernel-name regex:flashc_ --launch-skip 12 --launch-count 4 \
  python3 bench/probes/profile_attention.py 256 4096 0 > "$OUT/ncu_attention_d256.txt" 2>&1
# FFN: the 6 kernels of the second forward + backward (up, down; hidden, dw2, dw1, dx).
timeout 200 $NCU --kernel-name regex:flashc_ --launch-skip 6 --launch-count 6 \
  python3 bench/probes/profile_ffn.py 16384 4096 16384 > "$OUT/ncu_ffn_d4096.txt" 2>&1
for f in "$OUT"/ncu_*.txt; do
  echo "== $f"
  grep -E "^  flashc_|Duration|Compute \(SM\) Throughput|Memory Throughput|Registers Per|Achieved Occupancy|Issued Warp|No Eligible|Stall" "$f" | head -80
done
