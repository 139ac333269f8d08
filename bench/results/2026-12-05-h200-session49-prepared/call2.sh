#!/bin/bash
# Session 49, call 2: the kernel lab's timing after its refactor (bench.py: LabInputs shared with timeline.py, our
# configs timed in interleaved rounds, the order reversed every other round).
# Predictions (written before the run):
#  - lab.py --only d128_bwdws,d128_causal_bwdws: builds, float64 checks pass, bench table printed (the path runs);
#  - A/A: d128_bwdws against an identical copy under another name, through run_bench: within 1 % at every length
#    (timed one after another, session 48 saw the second 2-5 % slower at 4k-16k);
#  - timeline.py over the same two configs at 1k: three kernels a call, as in session 48.
set -u
R=$OUT; mkdir -p $R
t0=$SECONDS
nvidia-smi --query-gpu=name --format=csv,noheader | tee $R/gpu.txt
timeout 300 python3 bench/kernel_lab/lab.py --only d128_bwdws,d128_causal_bwdws --out $R/lab > $R/lab.txt 2>&1
echo "lab rc=$? ($((SECONDS-t0)) s)"; grep -E "check summary|ALL CHECKS|SOME CHECKS|^\| " $R/lab.txt | head -12
cd bench/kernel_lab
timeout 200 python3 - > $R/aa.txt 2>&1 <<'PY'
import os, sys
sys.path.insert(0, os.getcwd())
import lab
lab.CONFIGS["d128_bwdws_again"] = lab.CONFIGS["d128_bwdws"]
libs = {}
for n in ("d128_bwdws", "d128_bwdws_again"):
    for kind in ("fwd", "bwd"):
        _, _, path, log = lab.build_one(n, lab.CONFIGS[n], "/tmp/flashc_lab_build", kind, reuse=True)
        assert path, log[-2000:]
        libs[(kind, n)] = path
from bench import run_bench
out = os.environ["OUT"] + "/aa"
os.makedirs(out, exist_ok=True)
rows = run_bench(libs, lab.CONFIGS, ["d128_bwdws", "d128_bwdws_again"], out)
for S in (1024, 4096, 16384):
    a, b = [r for r in rows if r["S"] == S]
    print(f"A/A S={S}: fwd {b['ours_fwd_ms'] / a['ours_fwd_ms']:.4f}  bwd {b['ours_bwd_ms'] / a['ours_bwd_ms']:.4f}"
          f"  (spreads fwd {a['ours_fwd_ms_spread']:.4f} / {b['ours_fwd_ms_spread']:.4f} ms,"
          f" bwd {a['ours_bwd_ms_spread']:.4f} / {b['ours_bwd_ms_spread']:.4f} ms)")
PY
echo "aa rc=$? ($((SECONDS-t0)) s)"; grep "A/A" $R/aa.txt; tail -3 $R/aa.txt
timeout 120 python3 timeline.py --only d128_bwdws,d128_causal_bwdws --seqlens 1024 > $R/timeline.txt 2>&1
echo "timeline rc=$? ($((SECONDS-t0)) s)"; tail -4 $R/timeline.txt
