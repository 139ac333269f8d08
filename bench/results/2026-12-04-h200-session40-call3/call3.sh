#!/bin/bash
# Session 40 call 3: the two changes apart. Kernel timelines of the dense causal and ALiBi rows under 4 bundle sets
# (new = neither, vu = uniform warpgroup index, vs = dS carries the scale, b = both), alternated twice; bench_attention
# D = 64 both / neither; bench_ffn flashc both (.carry/b) / neither (.carry/fo).
cd "$(dirname "$0")/.."
R=/tmp/r3; rm -rf $R; mkdir -p $R
export FLASHC_DEVICE_WORK=/tmp/fd FLASHC_COMMIT=${FLASHC_COMMIT:-unknown}
[ -x build-dev/bin/flashc-run ] || { OUT=$R/dr timeout 150 scripts/device-bench.sh .carry/b --steps build > $R/build.txt 2>&1; rm -rf $R/dr; }
export FLASHC_RUNTIME_LIB=$PWD/build-dev/runtime/libflashc_runtime.so PYTHONPATH=$PWD/python
for round in 1 2; do for D in new vu vs b; do
  for row in causal alibi; do
    FLASHC_BUNDLE_PATH=$PWD/.carry/$D FLASHC_CACHE_DIR=/tmp/mc_$D timeout 100 python3 bench/probes/mask_mod_profile.py $row 5 --timeline > $R/tl_${row}_${D}_$round.txt 2>&1
  done
  echo "== $round $D causal: $(grep -E 'attention_bwd |attention_fwd ' $R/tl_causal_${D}_$round.txt | awk '{print $1"="$(NF-1)}' | tr '\n' ' ')  alibi: $(grep -E 'attention_bwd |attention_fwd ' $R/tl_alibi_${D}_$round.txt | awk '{print $1"="$(NF-1)}' | tr '\n' ' ')"
done; done | sed 's/flashc_attention_attention_//g'
for run in "b 64" "new 64"; do
  set -- $run
  FLASHC_BUNDLE_PATH=$PWD/.carry/$1 FLASHC_CACHE_DIR=/tmp/nc_$1 timeout 140 python3 bench/bench_attention.py --head-dims $2 --causal both \
    --seqs 1024,4096,16384 --peers flashc,cudnn --no-load-time --rounds 2 --out $R/ba_$1$2 > $R/ba_$1$2.log 2>&1
  echo "== $1 D=$2 (rc=$?)"; grep "^|" $R/ba_$1$2/bench_attention.md 2>/dev/null | tail -n +3 | cut -d'|' -f2-9
done
for D in b fo; do
  FLASHC_BUNDLE_PATH=$PWD/.carry/$D FLASHC_CACHE_DIR=/tmp/fc_$D timeout 200 python3 bench/bench_ffn.py --impls flashc,eager --rounds 2 --out $R/bf_$D > $R/bf_$D.log 2>&1
  echo "== ffn $D (rc=$?)"; grep "^|" $R/bf_$D/bench_ffn.md 2>/dev/null | head -12 | cut -c1-200
done
tar czf $OUT/call3.tgz -C $R .
