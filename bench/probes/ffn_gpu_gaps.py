# Where a flashc FFN step's wall clock goes beyond its kernels (session 16 call 3: at d = 4096 and gated, flashc's
# forward + backward takes ~1.8 ms more wall clock than its kernels' sum, eager ~0.7): per benchmark row, the GPU
# timeline of 3 steps (torch.profiler, CUDA activity): the span from the first kernel or memset to the last, the busy
# time, and the largest idle gaps with what ran on each side. Needs FLASHC_BUNDLE_PATH with the bench-ffn bundles.
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import bench_common as bc  # noqa: E402  (puts python/ on the path too)

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from torch.profiler import ProfilerActivity, profile  # noqa: E402

import flashc.torch as ft  # noqa: E402
from flashc import configs  # noqa: E402

STEPS = 3
for (m, d, h), config in zip(configs.BENCH_FFN_SHAPES, configs.BENCH_FFN):
    x, w1, w2, wg, dy = bc.ffn_inputs(torch, m, d, h, config.gated)
    leaves = [t for t in (x, w1, w2, wg) if t is not None]
    flashc_fwd = lambda: ft.ffn(x, w1, w2=w2, activation=config.activation, w_gate=wg)  # noqa: E731
    if config.gated:
        eager_fwd = lambda: (F.silu(x @ wg) * (x @ w1)) @ w2  # noqa: E731
    else:
        eager_fwd = lambda: F.gelu(x @ w1, approximate="tanh") @ w2  # noqa: E731
    for name, fwd in (("flashc", flashc_fwd), ("eager", eager_fwd)):
        def step():
            for t in leaves:
                t.grad = None
            fwd().backward(dy)
        for _ in range(3):
            step()
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            for _ in range(STEPS):
                step()
            torch.cuda.synchronize()
        events = sorted((e for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA),
                        key=lambda e: e.time_range.start)
        if not events:
            continue
        span = (events[-1].time_range.end - events[0].time_range.start) / STEPS
        busy = sum(e.time_range.end - e.time_range.start for e in events) / STEPS
        gaps = []
        for a, b in zip(events, events[1:]):
            gap = b.time_range.start - a.time_range.end
            if gap > 0:
                gaps.append((gap, a.name[:60], b.name[:60]))
        gaps.sort(reverse=True)
        print("M=%d d=%d h=%d%s %-6s: span %.0f us a step, busy %.0f, idle %.0f" % (
            m, d, h, " gated" if config.gated else "", name, span, busy, span - busy))
        for gap, before, after in gaps[:6]:
            print("    gap %7.0f us  after %-60s before %s" % (gap, before, after))
        sys.stdout.flush()
