# Per-kernel GPU time of one FFN forward + backward on the benchmark rows (flashc.configs.BENCH_FFN), flashc's
# kernels and PyTorch eager's (cuBLAS) side by side, from torch.profiler: which kernel holds the time.
# Needs FLASHC_BUNDLE_PATH with the bench-ffn bundles.
#   python3 bench/probes/ffn_kernel_times.py [--out FILE.json] [--iters N]
import argparse
import json
import sys

import torch
import torch.nn.functional as F
from torch.profiler import ProfilerActivity, profile

import flashc.torch as ft
from flashc import configs


def kernel_times(fn, iters):
    """{kernel name: microseconds per call of fn}, summed over the kernels of that name."""
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(iters):
            fn()
        torch.cuda.synchronize()
    times = {}
    for event in prof.events():
        if event.device_type == torch.autograd.DeviceType.CUDA:
            times[event.name] = times.get(event.name, 0.0) + event.device_time / iters
    return times


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--out")
    p.add_argument("--iters", type=int, default=5)
    args = p.parse_args()
    results = []
    for (m, d, h), config in zip(configs.BENCH_FFN_SHAPES, configs.BENCH_FFN):
        g = torch.Generator(device="cuda").manual_seed(0)
        x = torch.randn(m, d, device="cuda", generator=g).to(torch.bfloat16).requires_grad_()
        w1 = (torch.randn(d, h, device="cuda", generator=g) * d ** -0.5).to(torch.bfloat16).requires_grad_()
        w2 = (torch.randn(h, d, device="cuda", generator=g) * h ** -0.5).to(torch.bfloat16).requires_grad_()
        wg = (torch.randn(d, h, device="cuda", generator=g) * d ** -0.5).to(torch.bfloat16).requires_grad_() \
            if config.gated else None
        dy = torch.randn(m, d, device="cuda", generator=g).to(torch.bfloat16)
        leaves = [t for t in (x, w1, w2, wg) if t is not None]

        def step(forward):
            for t in leaves:
                t.grad = None
            forward().backward(dy)

        flashc_fwd = lambda: ft.ffn(x, w1, w2=w2, activation=config.activation, w_gate=wg)  # noqa: E731
        if config.gated:
            eager_fwd = lambda: (F.silu(x @ wg) * (x @ w1)) @ w2  # noqa: E731
        else:
            eager_fwd = lambda: F.gelu(x @ w1, approximate="tanh") @ w2  # noqa: E731
        row = {"M": m, "d": d, "h": h, "gated": bool(config.gated)}
        try:
            for name, fwd in (("flashc", flashc_fwd), ("eager", eager_fwd)):
                row[name] = kernel_times(lambda: step(fwd), args.iters)
        except Exception as e:  # e.g. no bundle carried for this row: the other rows still run
            print("M=%d d=%d h=%d: skipped (%s)" % (m, d, h, str(e).splitlines()[0][:200]))
            continue
        results.append(row)
        print("M=%d d=%d h=%d%s" % (m, d, h, " gated" if config.gated else ""))
        for name in ("flashc", "eager"):
            total = sum(row[name].values())
            print("  %s: %.0f us per forward + backward" % (name, total))
            for kernel, us in sorted(row[name].items(), key=lambda kv: -kv[1])[:12]:
                print("    %8.0f us  %5.1f %%  %s" % (us, 100.0 * us / total, kernel[:110]))
        sys.stdout.flush()
    if args.out:
        with open(args.out, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
