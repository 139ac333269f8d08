#!/bin/bash
# Session 56, call 3 (kernel lab run 29): the role split's dK / dV through shared memory (`_staged`,
# Config::kStagedRoleEpilogue): warpgroup 0 stages dV in V's tile, warpgroup 1 dK in the Q slot of the step before the
# last, each stores 16-byte row chunks (store_warpgroup_rows) instead of 4-byte fragment stores.
# 1. float64 checks (lab.py: D = 256 unmasked / causal / f16 GQA window 100 / GQA window 37, the D = 128 role split;
#    varlen_bwd_lab.py: packed D = 256 causal and D = 128 roles causal), racecheck / synccheck on small shapes;
# 2. timeline.py A/B (main kernel), D = 256 unmasked and causal at 1k / 4k / 16k.
# Predictions (main kernel, D = 256): 1k causal -5 to -8 %, 1k -3 to -5 %, 4k causal -2 to -3 %, 4k -1 to -1.5 %,
# 16k about -0.3 %.
set -u
R=$OUT; mkdir -p $R
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader > $R/gpu.txt 2>&1; cat $R/gpu.txt
t0=$SECONDS
S=d256_bwdws_staged,d256_causal_bwdws_staged,d256_f16_gqa2_win100_bwdws_staged,d256_gqa4_win37_bwdws_staged,d128_bwdws_roles_staged
timeout -k 10 200 python3 bench/kernel_lab/lab.py --out $R/check --only $S --skip-bench > $R/check.log 2>&1
echo "check rc=$? ($((SECONDS-t0)) s)"; grep -E 'check summary|ALL|FAIL' $R/check.log | tail -5
timeout -k 10 150 python3 bench/kernel_lab/varlen_bwd_lab.py --out $R/varlen --only d256_causal_staged,d128_roles_causal_staged \
  --skip-bench > $R/varlen.log 2>&1
echo "varlen rc=$? ($((SECONDS-t0)) s)"; grep -iE 'summary|fail|passed|ok$' $R/varlen.log | tail -6
for tool in racecheck synccheck; do
  FLASHC_LAB_SMALL=1 timeout 90 compute-sanitizer --tool $tool --print-limit 20 python3 bench/kernel_lab/lab.py \
    --out $R/san_$tool --skip-bench --reuse-build --only d256_f16_gqa2_win100_bwdws_staged,d256_causal_bwdws_staged \
    > $R/san_$tool.log 2>&1
  echo "$tool rc=$? ($((SECONDS-t0)) s)"; grep -E 'SUMMARY|FAIL' $R/san_$tool.log | head -5
done
timeout 260 python3 bench/kernel_lab/timeline.py --only \
  d256_bwdws,d256_bwdws_staged,d256_causal_bwdws,d256_causal_bwdws_staged \
  --seqlens 1024,4096,16384 --calls 10 > $R/timeline.txt 2>&1
echo "timeline rc=$? ($((SECONDS-t0)) s)"; grep -E 'S= ' $R/timeline.txt | cut -c1-110
