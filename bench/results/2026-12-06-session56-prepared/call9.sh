#!/bin/bash
# Session 56, call 9: the review's gap in call 5: racecheck and synccheck (and memcheck) over the bundles whose key
# split stages dK in K's tile in the deferred and meeting forms (D = 128 / Dv = 64, D = 72 / Dv = 40), at call 5's
# sizes and at the ring-reuse size. Prediction: 0 hazards, 0 errors.
set -u
R=$OUT; mkdir -p $R
t0=$SECONDS
[ -d .carry/t56k ] || tar -xJf .carry/t56k.tar.xz -C .carry
OUT=$R/b timeout 60 scripts/device-bench.sh .carry/t56k --steps build > $R/build.txt 2>&1
echo "build rc=$? ($((SECONDS-t0)) s)"
cs="$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -1)"
BIN=build-dev/bin/flashc-run
rc=0
for b in .carry/t56k/attn_bf16_h2kv2_d128v64_full_* .carry/t56k/attn_bf16_h2kv2_d72v40_causal_*; do
  for tool in memcheck racecheck synccheck; do
    for size in "--seq-q 77 --seq-k 133" "--seq-q 300 --seq-k 140"; do
      timeout 60 "$cs" --tool $tool --error-exitcode 3 "$BIN" "$b" --batch 1 $size --tokens 77 > $R/san.log 2>&1 \
        || { echo "FAILED: $tool $(basename $b) $size"; tail -5 $R/san.log; rc=1; }
      grep -hE "SUMMARY" $R/san.log | sed "s|^|$tool $(basename $b) $size: |"
    done
  done
done
echo "sanitizers rc=$rc ($((SECONDS-t0)) s)"
