# Where a flashc launch spends host time: per-call enqueue time of flashc.torch.ffn / attention on shapes whose GPU
# time is negligible (so the host is the only cost), the same through Bundle.launch with the arguments ready, and a
# cProfile of the Python side. Session 7: the fused FFN kernel ran 116 us in Nsight Compute but the benchmark read
# 194 us a forward, i.e. the host was slower than the GPU. Needs FLASHC_BUNDLE_PATH with the bench-ffn and
# bench-attention bundles (d = 256 / h = 1024 FFN, D = 128 16-head attention).
import cProfile
import os
import pstats
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import bench_common as bc  # noqa: E402  (puts python/ on the path too)

import torch  # noqa: E402

import flashc.torch as ft  # noqa: E402
from flashc import configs  # noqa: E402

torch.manual_seed(0)
N = 300


def per_call(f, n=N):
    for _ in range(20):
        f()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(n):
        f()
    t1 = time.perf_counter()
    torch.cuda.synchronize()
    return (t1 - t0) * 1e6 / n


x = torch.randn(256, 256, device="cuda", dtype=torch.bfloat16)
w1 = torch.randn(256, 1024, device="cuda", dtype=torch.bfloat16) / 16
w2 = torch.randn(1024, 256, device="cuda", dtype=torch.bfloat16) / 32
q, k, v = (torch.randn(1, 16, 256, 128, device="cuda", dtype=torch.bfloat16) for _ in range(3))
ffn = lambda: ft.ffn(x, w1, w2=w2, activation="gelu_tanh")
attention = lambda: ft.attention(q, k, v)
xg = x.clone().requires_grad_()
ffn_grad = lambda: ft.ffn(xg, w1, w2=w2, activation="gelu_tanh")
y = torch.empty(256, 256, device="cuda", dtype=torch.bfloat16)
config = configs.BENCH_FFN[2]
# The inference forward program (an FFN bundle also holds the training forward and the backward), its parameters in
# the bundle's spelling.
bundle, program, mapping = ft._program(config, "forward")
raw_args = {mapping[k]: t for k, t in dict(x=x, w1=w1, w2=w2, y=y).items()}
raw = lambda: bundle.launch(program, **raw_args)
torch_mm = lambda: torch.nn.functional.gelu(x @ w1, approximate="tanh") @ w2
dy = torch.randn(256, 256, device="cuda", dtype=torch.bfloat16)
ffn_fwd_bwd = lambda: ft.ffn(xg, w1, w2=w2, activation="gelu_tanh").backward(dy)
qg = q.clone().requires_grad_()
attention_fwd_bwd = lambda: ft.attention(qg, k, v).backward(torch.ones_like(q))
dev = x.device


def device_switch():
    with torch.cuda.device(dev):
        pass


print("host enqueue us/call (GPU time negligible at these sizes):")
print("  %-28s %8.1f" % ("with torch.cuda.device(d)", per_call(device_switch)))
print("  %-28s %8.1f" % ("current_stream(d).cuda_stream", per_call(lambda: torch.cuda.current_stream(dev).cuda_stream)))
for name, f in (("ft.ffn no grad", ffn), ("ft.ffn x.requires_grad", ffn_grad), ("Bundle.launch ffn", raw),
                ("ft.attention D128 S256", attention), ("torch eager gelu(x@w1)@w2", torch_mm),
                ("ft.ffn forward + backward", ffn_fwd_bwd), ("ft.attention fwd + bwd", attention_fwd_bwd)):
    print("  %-28s %8.1f" % (name, per_call(f)))
# Of each call, the time inside flashc.torch._launch (argument binding + the runtime's flashc_launch) per program.
inner, restore_launch = bc.time_flashc_launches(ft)
for f in (ffn_fwd_bwd, attention_fwd_bwd):
    inner.clear()
    per_call(f, 100)
    for program, times in sorted(inner.items()):
        times = sorted(times)[len(times) // 10:]  # drop the warm-up tail
        print("  inside _launch %-24s %8.1f us (median %d calls)" % (program, times[len(times) // 2] * 1e6, len(times)))
restore_launch()
prof = cProfile.Profile()
prof.enable()
for _ in range(N):
    ffn()
prof.disable()
torch.cuda.synchronize()
print("cProfile of %d ft.ffn calls (tottime, top 18):" % N)
pstats.Stats(prof).sort_stats("tottime").print_stats(18)
prof = cProfile.Profile()
prof.enable()
for _ in range(100):
    ffn_fwd_bwd()
prof.disable()
torch.cuda.synchronize()
print("cProfile of 100 ft.ffn forward + backward calls (tottime, top 12):")
pstats.Stats(prof).sort_stats("tottime").print_stats(12)
