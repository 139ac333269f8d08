# Does a training loop that synchronises every step pay for the FFN backward's scratch each step? The runtime
# allocates it stream-ordered (cuMemAllocAsync) from the device's default pool, whose release threshold is 0: at a
# synchronisation the pool may hand freed memory back, and the next allocation maps it again (h and dpre are
# M x h x 2 bytes each: 1 GiB together at M = 16384, h = 16384). Compares the per-step time with and without a
# torch.cuda.synchronize() after each step, for flashc and for PyTorch eager (which pays only the sync).
# Needs FLASHC_BUNDLE_PATH with the bench-ffn bundles.
import time

import torch
import torch.nn.functional as F

import flashc.torch as ft

M, d, h = 16384, 4096, 16384
g = torch.Generator(device="cuda").manual_seed(0)
x = torch.randn(M, d, device="cuda", generator=g).to(torch.bfloat16).requires_grad_()
w1 = (torch.randn(d, h, device="cuda", generator=g) * d ** -0.5).to(torch.bfloat16).requires_grad_()
w2 = (torch.randn(h, d, device="cuda", generator=g) * h ** -0.5).to(torch.bfloat16).requires_grad_()
dy = torch.randn(M, d, device="cuda", generator=g).to(torch.bfloat16)
steps = {"flashc": lambda: ft.ffn(x, w1, w2=w2, activation="gelu_tanh").backward(dy),
         "eager": lambda: (F.gelu(x @ w1, approximate="tanh") @ w2).backward(dy)}
for name, step in steps.items():
    for sync in (False, True, False, True):
        for _ in range(3):
            step()
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(10):
            step()
            if sync:
                torch.cuda.synchronize()
        torch.cuda.synchronize()
        print("%-7s sync each step %-5s %7.3f ms a step" % (name, sync, (time.perf_counter() - t0) * 100))
