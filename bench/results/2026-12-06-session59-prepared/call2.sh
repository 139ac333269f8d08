#!/bin/bash
# Session 59, call 2: kernel lab run 31 — the cluster form of the backward (attention_bwd_ws.cuh kClusterDq): a head's
# key blocks one thread block cluster; each block stores dQ on its own share of the query blocks (walked first), the
# blocks meet (remote mbarrier arrivals), then add by TMA; at the walk's end they meet again and each converts its share.
# No zero fill, no postprocess; the grid form's L2 sharing kept. Unmasked MHA only, up to 16 key blocks (S <= 2k).
# Predicted (H100, whole backward against _ends): 1k D = 128 0.834 -> ~0.78 ms (-6 %), D = 64 0.928 -> ~0.87 (-6 %);
# 2k about -3.5 % (the same ~55 us saved of a longer backward), if 16-block clusters launch at all.
set -u
R=$OUT; mkdir -p $R
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader > $R/gpu.txt 2>&1; cat $R/gpu.txt
export PYTHONUNBUFFERED=1
ALL=d128_bwdws_ends,d128_bwdws_cluster,d64_bwdws_ends,d64_bwdws_cluster,d128_f16_bwdws_cluster
TIMED=d128_bwdws_ends,d128_bwdws_cluster,d64_bwdws_ends,d64_bwdws_cluster
timeout -k 10 300 python3 bench/kernel_lab/lab.py --out $R/lab --only $ALL --bench $TIMED --seqs 1024 > $R/lab.log 2>&1
echo "lab rc=$? (124: a hang)"
grep -E "ptxas bwd|FAIL|check summary|ALL CHECKS|SOME CHECKS" $R/lab.log | head -30
grep "^| " $R/lab/bench.md 2>/dev/null
timeout -k 10 150 python3 bench/kernel_lab/lab.py --out $R/lab2k --only $TIMED --bench $TIMED --seqs 2048 --skip-check \
  --reuse-build > $R/lab2k.log 2>&1
echo "lab 2k rc=$?"; grep "^| " $R/lab2k/bench.md 2>/dev/null; tail -3 $R/lab2k.log
for tool in racecheck synccheck memcheck; do
  FLASHC_LAB_SMALL=1 timeout 100 compute-sanitizer --tool $tool --print-limit 10 python3 bench/kernel_lab/lab.py \
    --out $R/san_$tool --skip-bench --reuse-build --only d128_bwdws_cluster,d64_bwdws_cluster > $R/san_$tool.log 2>&1
  echo "$tool rc=$?: $(grep -E "ERROR SUMMARY|RACECHECK SUMMARY" $R/san_$tool.log | head -2 | tr '\n' ' ')"
done
