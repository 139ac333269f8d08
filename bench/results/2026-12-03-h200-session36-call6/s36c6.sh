#!/bin/bash
# Session 36 call 6: flashc.measure's check without a peer (the unfused bf16 math bounds it): its CPU tests with torch,
# and bench_attention with flashc alone.
cd "$(dirname "$0")/.."
R=$OUT; mkdir -p $R
export FLASHC_DEVICE_WORK=/tmp/fd
OUT=$R/dr timeout 100 scripts/device-bench.sh .carry/s36f --steps build > $R/build.txt 2>&1; echo "build rc=$?" >> $R/build.txt; rm -rf $R/dr
export FLASHC_RUNTIME_LIB=$PWD/build-dev/runtime/libflashc_runtime.so PYTHONPATH=$PWD/python
for t in test_measure.py test_modifier_inputs.py; do timeout 60 python3 -m unittest discover -s python/tests -p $t -v 2>&1 | tail -4; done | tee $R/tests.txt
FLASHC_BUNDLE_PATH=$PWD/.carry/s36f FLASHC_CACHE_DIR=/tmp/nc_f timeout 90 python3 bench/bench_attention.py --head-dims 64 --seqs 1024,4096 --peers flashc --no-load-time --rounds 1 --check-heads 2 --out $R/ba > $R/ba.log 2>&1; echo "rc=$?" >> $R/ba.log
grep "^| 64" $R/ba/bench_attention.md | cut -d'|' -f2-5,9; tail -1 $R/ba.log
python3 -c "
import json; d=json.load(open('$R/ba/bench_attention.json'))
for r in d['results']:
    c=r['check']; print(r['S'], r['causal'], c['pass'], sorted({v['peer'] for v in c['detail'].values()}), max(v['err']/v['tol'] for v in c['detail'].values()))
" | tee $R/check.txt
cp $R/ba/bench_attention.json $R/ 2>/dev/null; rm -rf $R/ba
