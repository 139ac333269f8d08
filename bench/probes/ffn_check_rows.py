# flashc's FFN forward and backward (y, dx and every weight gradient) on the benchmark's configurations at chosen
# row counts, against float64 math on the GPU over all the rows (flashc.measure.check_ffn: the bound is twice eager
# PyTorch's error in the inputs' precision): the sizes at which the GEMMs' last waves split over K, which the small
# test bundles never reach. Needs FLASHC_BUNDLE_PATH with the bench-ffn bundles. Exit 1 on a failed check.
#   python3 bench/probes/ffn_check_rows.py [--model-dims 1024,4096] [--rows 9000,16384] [--out FILE.json]
import argparse
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import bench_common as bc  # noqa: E402  (puts python/ on the path too)

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import flashc.torch as ft  # noqa: E402
from flashc import configs, measure  # noqa: E402


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--model-dims", default="1024,4096")
    p.add_argument("--rows", default="9000,16384")
    p.add_argument("--out")
    args = p.parse_args()
    dims = {int(v) for v in args.model_dims.split(",") if v}
    row_counts = [int(v) for v in args.rows.split(",") if v]
    results, failed = [], 0
    for (_, d, h), config in zip(configs.BENCH_FFN_SHAPES, configs.BENCH_FFN):
        if d not in dims:
            continue
        for m in row_counts:
            x, w1, w2, wg, dy = bc.ffn_inputs(torch, m, d, h, config.gated)
            leaves = [t for t in (x, w1, w2, wg) if t is not None]

            def grads(forward):
                # (check_ffn passes x's first `rows` rows: rows=m below, all of them, so the leaves here are its inputs.)
                def run(x_, w1_, w2_, dy_):
                    for t in leaves:
                        t.grad = None
                    y = forward()
                    y.backward(dy_)
                    return [y.detach(), x.grad, w1.grad, w2.grad] + ([wg.grad] if wg is not None else [])
                return run

            flashc_run = grads(lambda: ft.ffn(x, w1, w2=w2, activation=config.activation, w_gate=wg))
            if config.gated:
                eager_run = grads(lambda: (F.silu(x @ wg) * (x @ w1)) @ w2)
            else:
                eager_run = grads(lambda: F.gelu(x @ w1, approximate="tanh") @ w2)
            ok, detail = measure.check_ffn(flashc_run, eager_run, x, w1, w2, w_gate=wg, activation=config.activation,
                                           dy=dy, rows=m)
            failed += not ok
            results.append({"M": m, "d": d, "h": h, "gated": bool(config.gated), "pass": ok, "detail": detail})
            print("M=%d d=%d h=%d%s: %s  %s" % (m, d, h, " gated" if config.gated else "", "pass" if ok else "FAIL",
                                                " ".join("%s %.3g/%.3g" % (k, v["err"], v["tol"])
                                                         for k, v in detail.items())), flush=True)
            del x, w1, w2, wg, dy, leaves
            torch.cuda.empty_cache()
    if args.out:
        with open(args.out, "w") as f:
            json.dump(results, f, indent=1)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
