# Where the d = 256 FFN backward's wall clock goes (bench_ffn: forward + backward 0.98 ms of wall clock where its
# kernels take 0.55): per step at M = 65536, d = 256, h = 1024, the host time inside flashc.torch._launch for each
# program and the step's wall clock, with the backward's scratch (dpre, 134 MB, and the f32 weight-gradient
# accumulators) from the device's default pool (release threshold 0) and from FLASHC_SCRATCH_POOL=keep (read at each
# launch), alternating, in one process. Needs FLASHC_BUNDLE_PATH with the bench-ffn bundles.
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import bench_common as bc  # noqa: E402  (puts python/ on the path too)

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import flashc.torch as ft  # noqa: E402

M, d, h = 65536, 256, 1024
x, w1, w2, _, dy = bc.ffn_inputs(torch, M, d, h, False)
inner, restore_launch = bc.time_flashc_launches(ft)
steps = {"flashc": lambda: ft.ffn(x, w1, w2=w2, activation="gelu_tanh").backward(dy),
         "eager": lambda: (F.gelu(x @ w1, approximate="tanh") @ w2).backward(dy)}
for pool in ("default", "keep", "default", "keep"):
    if pool == "keep":
        os.environ["FLASHC_SCRATCH_POOL"] = "keep"
    else:
        os.environ.pop("FLASHC_SCRATCH_POOL", None)
    for name, step in steps.items():
        if name == "eager" and pool == "keep":
            continue
        for _ in range(5):
            step()
        torch.cuda.synchronize()
        inner.clear()
        n = 30
        t0 = time.perf_counter()
        for _ in range(n):
            step()
        t1 = time.perf_counter()
        torch.cuda.synchronize()
        t2 = time.perf_counter()
        launches = " ".join("%s %.0f" % (p.split("_")[-1] if "_" in p else p, sorted(v)[len(v) // 2] * 1e6)
                            for p, v in sorted(inner.items()))
        print("%-7s %-6s step wall %7.1f us (host enqueue %7.1f) | inside _launch, median us: %s"
              % (pool, name, (t2 - t0) * 1e6 / n, (t1 - t0) * 1e6 / n, launches), flush=True)
# The Python side of a flashc step (tottime, top 15).
import cProfile  # noqa: E402
import pstats  # noqa: E402

os.environ.pop("FLASHC_SCRATCH_POOL", None)
restore_launch()
prof = cProfile.Profile()
prof.enable()
for _ in range(20):
    steps["flashc"]()
prof.disable()
torch.cuda.synchronize()
pstats.Stats(prof).sort_stats("tottime").print_stats(15)
