# Why bench_ffn's gated backward reads 0.88x eager (session 16 call 7) while the steady training loop's GPU timeline
# (ffn_gpu_gaps.py) has flashc 1.06x faster: the benchmark's own loop (flashc.measure / triton do_bench: grads set
# to None, a 256 MB L2 flush, CUDA events around each call), 6 calls of forward + backward under torch.profiler, for
# flashc and eager on the gated row (M 16384, d 4096, h 11008): the event times, the GPU idle time inside each timed
# call, and the largest gaps with what ran on each side. Needs FLASHC_BUNDLE_PATH with the bench-ffn bundles.
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import bench_common as bc  # noqa: E402  (puts python/ on the path too)

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from torch.profiler import ProfilerActivity, profile  # noqa: E402

import flashc.torch as ft  # noqa: E402

M, d, h = 16384, 4096, 11008
x, w1, w2, wg, dy = bc.ffn_inputs(torch, M, d, h, True)
leaves = [x, w1, w2, wg]
fns = {"flashc": lambda: ft.ffn(x, w1, w2=w2, activation="silu", w_gate=wg).backward(dy),
       "eager": lambda: ((F.silu(x @ wg) * (x @ w1)) @ w2).backward(dy)}
flush = torch.empty(256 * 1024 * 1024 // 4, dtype=torch.int32, device="cuda")
for name, fn in fns.items():
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    n = 6
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(n)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(n)]
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for i in range(n):
            for t in leaves:
                t.grad = None
            flush.zero_()
            starts[i].record()
            fn()
            ends[i].record()
        torch.cuda.synchronize()
    times = [s.elapsed_time(e) for s, e in zip(starts, ends)]
    events = sorted((e for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA),
                    key=lambda e: e.time_range.start)
    busy = sum(e.time_range.end - e.time_range.start for e in events)
    span = events[-1].time_range.end - events[0].time_range.start
    gaps = sorted(((b.time_range.start - a.time_range.end, a.name[:50], b.name[:50])
                   for a, b in zip(events, events[1:]) if b.time_range.start > a.time_range.end), reverse=True)
    print("%s: event times (ms) %s; GPU span of the 6 calls %.0f us, busy %.0f, idle %.0f" % (
        name, " ".join("%.2f" % t for t in times), span, busy, span - busy))
    for gap, before, after in gaps[:8]:
        print("    gap %7.0f us  after %-50s before %s" % (gap, before, after))
    sys.stdout.flush()
