#!/bin/bash
# Session 40 call 2: dS carries the scale, and the warpgroup index is uniform (wgmma descriptors in uniform
# registers). Timing first: the ALiBi / causal kernels old (.carry/new) / new (.carry/b) alternated; bench_attention
# D = 128 new / old with cuDNN. Then the checks: flashc-run over every test bundle (.carry/t), the GPU Python tests
# for attention, score modifiers and the FFN, racecheck / memcheck.
cd "$(dirname "$0")/.."
R=/tmp/r2; rm -rf $R; mkdir -p $R
export FLASHC_DEVICE_WORK=/tmp/fd FLASHC_COMMIT=${FLASHC_COMMIT:-unknown}
[ -x build-dev/bin/flashc-run ] || { OUT=$R/dr timeout 150 scripts/device-bench.sh .carry/t --steps build > $R/build.txt 2>&1; rm -rf $R/dr; }
export FLASHC_RUNTIME_LIB=$PWD/build-dev/runtime/libflashc_runtime.so PYTHONPATH=$PWD/python
for tag in o n o n; do
  [ $tag = o ] && D=new || D=b
  FLASHC_BUNDLE_PATH=$PWD/.carry/$D FLASHC_CACHE_DIR=/tmp/mc_$tag timeout 100 python3 bench/probes/mask_mod_profile.py causal 5 --timeline > $R/tl_causal_$tag.txt 2>&1
  FLASHC_BUNDLE_PATH=$PWD/.carry/$D FLASHC_CACHE_DIR=/tmp/mc_$tag timeout 100 python3 bench/probes/mask_mod_profile.py alibi 5 --timeline > $R/tl_alibi_$tag.txt 2>&1
  echo "== $tag causal: $(grep -E 'attention_bwd |attention_fwd ' $R/tl_causal_$tag.txt | awk '{print $1"="$(NF-1)}' | tr '\n' ' ')  alibi: $(grep -E 'attention_bwd |attention_fwd ' $R/tl_alibi_$tag.txt | awk '{print $1"="$(NF-1)}' | tr '\n' ' ')"
done | sed 's/flashc_attention_attention_//g'
for run in "n 128" "o 128"; do
  set -- $run; [ $1 = o ] && D=new || D=b
  FLASHC_BUNDLE_PATH=$PWD/.carry/$D FLASHC_CACHE_DIR=/tmp/nc_$1 timeout 140 python3 bench/bench_attention.py --head-dims $2 --causal both \
    --seqs 1024,4096,16384 --peers flashc,cudnn --no-load-time --rounds 2 --out $R/ba_$1$2 > $R/ba_$1$2.log 2>&1
  echo "== $1 D=$2 (rc=$?)"; grep "^|" $R/ba_$1$2/bench_attention.md 2>/dev/null | tail -n +3 | cut -d'|' -f2-9
done
OUT=$R/dt timeout 330 scripts/device-bench.sh .carry/t --steps test,run --tests "test_gpu_attention.py test_score_mod.py test_gpu_ffn.py" > $R/test_run.txt 2>&1
echo "test,run rc=$?"; grep -E "^=== .*exit|FAILED|Ran |^OK|FAILED \(" $R/test_run.txt | tail -14
A=$(ls -d .carry/t/attn_bf16_h4kv2_d128_causal_score88d67213_* | head -1)
B=build-dev/bin/flashc-run
timeout 60 compute-sanitizer --tool racecheck $B $A --require-gpu --batch 1 --seq-q 300 --seq-k 300 > $R/san_race.txt 2>&1
echo "racecheck ($(basename $A)): $(grep -E 'RACECHECK SUMMARY' $R/san_race.txt | head -1)"
timeout 60 compute-sanitizer --tool memcheck $B $A --require-gpu --batch 2 --seq-q 77 --seq-k 200 > $R/san_mem.txt 2>&1
echo "memcheck: $(grep -E 'ERROR SUMMARY' $R/san_mem.txt | head -1)"
tar czf $OUT/call2.tgz -C $R .
