# Per-kernel GPU time of one FFN forward + backward on the benchmark rows (flashc.configs.BENCH_FFN), flashc's
# kernels and the peers' (PyTorch eager: cuBLAS; torch.compile) side by side, from torch.profiler: which kernel holds
# the time. Rows without a carried bundle are skipped. Needs FLASHC_BUNDLE_PATH with the bench-ffn bundles.
#   python3 bench/probes/ffn_kernel_times.py [--out FILE.json] [--iters N] [--model-dims 256,1024]
#                                            [--impls flashc,eager,compile] [--flush]
# --flush: as the benchmark times a call, the L2 evicted (a 256 MB write) before each step; the steps are then also
# measured as spans (the first kernel's start to the last one's end): a span longer than its kernels' sum means the
# GPU waited between them (the host's launch path, a synchronisation).
import argparse
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import bench_common as bc  # noqa: E402  (puts python/ on the path too)

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import flashc.torch as ft  # noqa: E402
from flashc import configs  # noqa: E402


def step_spans(fn, iters):
    """As bc.cuda_kernel_times, the flush and the markers left out, and each step's span and gap: [{span_us,
    busy_us, gap_us}] (a step: the kernels after a marker, torch.cuda._sleep's)."""
    from torch.profiler import ProfilerActivity, profile
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(iters):
            fn()
        torch.cuda.synchronize()
    kernels = sorted((e.time_range.start, e.time_range.end, e.name) for e in prof.events()
                     if e.device_type == torch.autograd.DeviceType.CUDA)
    steps = []  # each step's kernels: (start, end, name)
    for start, end, name in kernels:
        if "sleep" in name or "spin" in name:
            if steps:
                steps[-1].pop()  # the last kernel before a marker is the next step's flush
            steps.append([])
        elif steps:
            steps[-1].append((start, end, name))
    times = {}
    for ranges in steps:
        for start, end, name in ranges:
            times[name] = times.get(name, 0.0) + (end - start) / iters
    spans = []
    for ranges in steps:
        if not ranges:
            continue
        span = max(e for _, e, _ in ranges) - min(s for s, _, _ in ranges)
        busy = sum(e - s for s, e, _ in ranges)
        spans.append({"span_us": span, "busy_us": busy, "gap_us": span - busy})
    return times, spans


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--out")
    p.add_argument("--iters", type=int, default=5)
    p.add_argument("--model-dims", default="", help="comma-separated d of the rows to run (default: every row)")
    p.add_argument("--impls", default="flashc,eager", help="comma-separated of flashc, eager, compile")
    p.add_argument("--flush", action="store_true", help="evict the L2 before each step; report spans and gaps")
    args = p.parse_args()
    impls = [v for v in args.impls.split(",") if v]
    unknown = [v for v in impls if v not in ("flashc", "eager", "compile")]
    if unknown:
        p.error("--impls: unknown %s (known: flashc, eager, compile)" % ", ".join(unknown))
    flush = torch.empty(256 * 1024 * 1024 // 4, dtype=torch.int32, device="cuda") if args.flush else None
    dims = {int(v) for v in args.model_dims.split(",") if v}
    results = []
    for (m, d, h), config in zip(configs.BENCH_FFN_SHAPES, configs.BENCH_FFN):
        if dims and d not in dims:
            continue
        x, w1, w2, wg, dy = bc.ffn_inputs(torch, m, d, h, config.gated)
        leaves = [t for t in (x, w1, w2, wg) if t is not None]

        def step(forward):
            for t in leaves:
                t.grad = None
            if flush is not None:
                flush.zero_()
                torch.cuda._sleep(1000)  # the step's marker: its kernels follow this one's
            forward().backward(dy)

        flashc_fwd = lambda: ft.ffn(x, w1, w2=w2, activation=config.activation, w_gate=wg)  # noqa: E731
        if config.gated:
            eager_fwd = lambda: (F.silu(x @ wg) * (x @ w1)) @ w2  # noqa: E731
        else:
            eager_fwd = lambda: F.gelu(x @ w1, approximate="tanh") @ w2  # noqa: E731
        forwards = {"flashc": flashc_fwd, "eager": eager_fwd}
        if "compile" in impls:
            forwards["compile"] = torch.compile(eager_fwd)
        row = {"M": m, "d": d, "h": h, "gated": bool(config.gated)}
        try:
            for name in impls:
                fwd = forwards[name]
                for _ in range(3):
                    step(fwd)
                torch.cuda.synchronize()
                if flush is None:
                    row[name] = bc.cuda_kernel_times(lambda: step(fwd), args.iters)
                else:
                    row[name], row[name + "_steps"] = step_spans(lambda: step(fwd), args.iters)
        except Exception as e:  # e.g. no bundle carried for this row: the other rows still run
            print("M=%d d=%d h=%d: skipped (%s)" % (m, d, h, str(e).splitlines()[0][:200]))
            continue
        results.append(row)
        print("M=%d d=%d h=%d%s" % (m, d, h, " gated" if config.gated else ""))
        for name in impls:
            total = sum(row[name].values())
            print("  %s: %.0f us per forward + backward" % (name, total))
            if name + "_steps" in row:
                spans = row[name + "_steps"]
                print("    spans (us): %s; kernels' sum less than the span by %s" % (
                    " ".join("%.0f" % s["span_us"] for s in spans), " ".join("%.0f" % s["gap_us"] for s in spans)))
            for kernel, us in sorted(row[name].items(), key=lambda kv: -kv[1])[:12]:
                print("    %8.0f us  %5.1f %%  %s" % (us, 100.0 * us / total, kernel[:110]))
        sys.stdout.flush()
    if args.out:
        with open(args.out, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
