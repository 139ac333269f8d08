# Where a flashc forward + backward spends host time, per program: flashc.Bundle's argument binding (Python +
# ctypes), the runtime's flashc_launch (C++: planning, checks, scratch, driver calls), and for the backward the
# whole autograd Function.backward; medians over 200 FFN and 200 attention forward + backward calls at sizes
# whose GPU time is negligible. Needs FLASHC_BUNDLE_PATH with the bench-ffn and bench-attention bundles.
import time

import torch

import flashc.torch as ft
from flashc import bundle as fb

spans = {}


def record(name, t0):
    spans.setdefault(name, []).append(time.perf_counter() - t0)


bind = fb.Bundle._bind


def timed_bind(self, name, args, partial):
    t0 = time.perf_counter()
    try:
        return bind(self, name, args, partial)
    finally:
        record("bind " + name, t0)


class TimedLib:
    def __init__(self, lib):
        self.lib = lib

    def __getattr__(self, attr):
        fn = getattr(self.lib, attr)
        if attr != "flashc_launch":
            return fn

        def timed(handle, name, *rest):
            t0 = time.perf_counter()
            try:
                return fn(handle, name, *rest)
            finally:
                record("flashc_launch " + name.decode(), t0)
        return timed


fb.Bundle._bind = timed_bind
for cls, label in ((ft._Ffn, "ffn"), (ft._AttentionOutput, "attention")):
    original = cls.backward

    def wrapped(ctx, *grads, _original=original, _label=label):
        t0 = time.perf_counter()
        try:
            return _original(ctx, *grads)
        finally:
            record("Function.backward " + _label, t0)
    cls.backward = staticmethod(wrapped)

torch.manual_seed(0)
x = torch.randn(256, 256, device="cuda", dtype=torch.bfloat16, requires_grad=True)
w1 = (torch.randn(256, 1024, device="cuda", dtype=torch.bfloat16) / 16).requires_grad_()
w2 = (torch.randn(1024, 256, device="cuda", dtype=torch.bfloat16) / 32).requires_grad_()
dy = torch.randn(256, 256, device="cuda", dtype=torch.bfloat16)
q, k, v = (torch.randn(1, 16, 256, 128, device="cuda", dtype=torch.bfloat16, requires_grad=True) for _ in range(3))
do = torch.randn(1, 16, 256, 128, device="cuda", dtype=torch.bfloat16)
ft.ffn(x, w1, w2=w2).backward(dy)
ft.attention(q, k, v).backward(do)
for b in list(ft._resolved.values()):
    b[0]._lib = TimedLib(b[0]._lib)
torch.cuda.synchronize()
spans.clear()
t0 = time.perf_counter()
for _ in range(200):
    t1 = time.perf_counter()
    ft.ffn(x, w1, w2=w2).backward(dy)
    record("ffn forward + backward (whole)", t1)
    t1 = time.perf_counter()
    ft.attention(q, k, v).backward(do)
    record("attention forward + backward (whole)", t1)
torch.cuda.synchronize()
for name, times in sorted(spans.items()):
    times = sorted(times)
    print("%-42s median %7.1f us  p90 %7.1f us  (%d)" % (name, times[len(times) // 2] * 1e6,
                                                         times[len(times) * 9 // 10] * 1e6, len(times)))
