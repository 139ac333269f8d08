# Per-kernel GPU time of one FFN forward + backward on the benchmark rows (flashc.configs.BENCH_FFN), flashc's
# kernels and PyTorch eager's (cuBLAS) side by side, from torch.profiler: which kernel holds the time. Rows without a
# carried bundle are skipped. Needs FLASHC_BUNDLE_PATH with the bench-ffn bundles.
#   python3 bench/probes/ffn_kernel_times.py [--out FILE.json] [--iters N] [--model-dims 256,1024]
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


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--out")
    p.add_argument("--iters", type=int, default=5)
    p.add_argument("--model-dims", default="", help="comma-separated d of the rows to run (default: every row)")
    args = p.parse_args()
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
            forward().backward(dy)

        flashc_fwd = lambda: ft.ffn(x, w1, w2=w2, activation=config.activation, w_gate=wg)  # noqa: E731
        if config.gated:
            eager_fwd = lambda: (F.silu(x @ wg) * (x @ w1)) @ w2  # noqa: E731
        else:
            eager_fwd = lambda: F.gelu(x @ w1, approximate="tanh") @ w2  # noqa: E731
        row = {"M": m, "d": d, "h": h, "gated": bool(config.gated)}
        try:
            for name, fwd in (("flashc", flashc_fwd), ("eager", eager_fwd)):
                for _ in range(3):
                    step(fwd)
                torch.cuda.synchronize()
                row[name] = bc.cuda_kernel_times(lambda: step(fwd), args.iters)
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
