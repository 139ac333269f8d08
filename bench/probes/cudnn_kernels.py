# Which kernels cuDNN's fused attention runs for a shape, with their launch shape and time (torch.profiler's trace):
# the tile sizes in a kernel's name and its grid say what form a peer picked (e.g. why cuDNN's causal backward at
# D = 192 / Dv = 128 outruns its own non-causal one). bf16, H * Dv = 2048 heads, 16k tokens, like the benchmark.
#   python3 bench/probes/cudnn_kernels.py D Dv S causal [D Dv S causal ...]
import json
import os
import sys
import tempfile

import torch
from torch.nn.attention import SDPBackend, sdpa_kernel
from torch.nn.functional import scaled_dot_product_attention as sdpa


def profile(d, dv, s, causal):
    heads, batch = 2048 // dv, max(1, 16384 // s)
    torch.manual_seed(0)
    q, k = (torch.randn(batch, heads, s, d, device="cuda", dtype=torch.bfloat16, requires_grad=True) for _ in range(2))
    v = torch.randn(batch, heads, s, dv, device="cuda", dtype=torch.bfloat16, requires_grad=True)
    do = torch.randn(batch, heads, s, dv, device="cuda", dtype=torch.bfloat16)

    def step():
        with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
            sdpa(q, k, v, is_causal=causal).backward(do)

    for _ in range(3):
        step()
    torch.cuda.synchronize()
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        step()
        torch.cuda.synchronize()
    path = os.path.join(tempfile.mkdtemp(), "trace.json")
    prof.export_chrome_trace(path)
    with open(path) as f:
        events = json.load(f)["traceEvents"]
    print("D=%d Dv=%d S=%d causal=%d (B=%d, H=%d)" % (d, dv, s, causal, batch, heads))
    for e in events:
        if e.get("cat") != "kernel":
            continue
        a = e.get("args", {})
        print("  %8.1f us  grid %-14s block %-12s regs %-4s smem %-7s %s" % (
            e.get("dur", 0), a.get("grid"), a.get("block"), a.get("registers per thread"),
            a.get("shared memory"), e["name"][:160]))


def main(argv):
    if len(argv) % 4 != 0 or not argv:
        sys.exit("usage: cudnn_kernels.py D Dv S causal [D Dv S causal ...]")
    for i in range(0, len(argv), 4):
        profile(int(argv[i]), int(argv[i + 1]), int(argv[i + 2]), bool(int(argv[i + 3])))


if __name__ == "__main__":
    main(sys.argv[1:])
