# Per-kernel GPU time of one flashc attention forward + backward (torch.profiler) beside its wall time per call, for
# the benchmark's shapes (bf16, H = 2048 / D heads, B = 16384 / S: bench_attention's defaults, whose bundles it loads): is a row GPU-bound, or does the host set its time?
# Needs FLASHC_BUNDLE_PATH with the bench-attention bundles.
#   python3 bench/probes/attention_kernel_times.py D S causal [D S causal ...]
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import bench_common as bc  # noqa: E402  (puts python/ on the path too)

import torch  # noqa: E402

import flashc.torch as ft  # noqa: E402


def main(argv):
    if len(argv) % 3 != 0 or not argv:
        sys.exit("usage: attention_kernel_times.py D S causal [D S causal ...]")
    for i in range(0, len(argv), 3):
        d, s, causal = int(argv[i]), int(argv[i + 1]), bool(int(argv[i + 2]))
        b, h = max(1, 16384 // s), max(1, 2048 // d)
        torch.manual_seed(0)
        q, k, v = (torch.randn(b, h, s, d, device="cuda").to(torch.bfloat16).requires_grad_() for _ in range(3))
        do = torch.randn(b, h, s, d, device="cuda").to(torch.bfloat16)

        def step():
            for t in (q, k, v):
                t.grad = None
            ft.attention(q, k, v, causal=causal).backward(do)

        for _ in range(5):
            step()
        torch.cuda.synchronize()
        n = 50
        t0 = time.perf_counter()
        for _ in range(n):
            step()
        torch.cuda.synchronize()
        wall = (time.perf_counter() - t0) / n * 1e6
        times = bc.cuda_kernel_times(step, n)
        print("D=%d S=%d causal=%d (B=%d, H=%d): wall %.0f us per forward + backward, kernels %.0f us" % (
            d, s, causal, b, h, wall, sum(times.values())))
        for name, us in sorted(times.items(), key=lambda kv: -kv[1])[:8]:
            print("  %8.0f us  %s" % (us, name[:100]))
        sys.stdout.flush()


if __name__ == "__main__":
    main(sys.argv[1:])
