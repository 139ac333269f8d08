#!/usr/bin/env python3
"""FFN benchmark: flashc.torch.ffn vs PyTorch eager (cuBLAS) and torch.compile on the benchmark FFN rows
(flashc.configs.BENCH_FFN): y = gelu_tanh(x W1) W2 and the gated y = (silu(x W_gate) * (x W_up)) W2, bf16,
TFLOP/s counting 4*M*d*h (forward; 6*M*d*h gated) and twice that for the backward (dx and the weight
gradients), do_bench medians, the implementations interleaved in rounds (bench_common.interleaved: each the median of
its rounds' medians); flashc's y checked against float64 on 256 rows (error <= 2x eager bf16's + floor).
The forward is timed under torch.no_grad() (flashc's inference forward); the backward as forward + backward less the
forward with gradients (flashc's training forward, which also writes the activations the backward reads).

  python3 bench/bench_ffn.py [--out DIR] [--dry-run]
"""

import argparse
import os
import sys
import traceback

import bench_common as bc

DEFAULT_IMPLS = ["flashc", "eager", "compile"]
# (Other plans of flashc's kernels are points of their tuning spaces, timed by python -m flashc.tune.)
# flashc-native / flashc-python: flashc.torch.ffn with FLASHC_NATIVE=1 / 0 (its C++ autograd Function or the Python
# one, flashc._native; read at each call), timed in the same process as flashc for the A/B of that path.
FLASHC_VARIANTS = {"flashc": {}, "flashc-native": {"FLASHC_NATIVE": "1"}, "flashc-python": {"FLASHC_NATIVE": "0"}}
IMPLS = DEFAULT_IMPLS + ["flashc-native", "flashc-python"]
FLASHC_IMPLS = tuple(FLASHC_VARIANTS)


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out")
    p.add_argument("--dry-run", action="store_true")
    p.add_argument("--impls", default=",".join(DEFAULT_IMPLS),
                   help="comma-separated subset of %s (default: all)" % ",".join(IMPLS))
    p.add_argument("--model-dims", default="",
                   help="comma-separated model dims d: only the rows of these (default: every row)")
    p.add_argument("--warmup", type=int, default=25)
    p.add_argument("--rep", type=int, default=100)
    p.add_argument("--rounds", type=int, default=3,
                   help="rounds taking the implementations in turn, each rotated by one (bench_common.interleaved; "
                        "default 3: with three implementations each takes every turn once)")
    bc.add_lead_us_argument(p)
    args = bc.lead_us_from(p, p.parse_args(argv))
    args.impls = [x for x in args.impls.split(",") if x]
    try:
        args.model_dims = [int(x) for x in args.model_dims.split(",") if x]
    except ValueError:
        p.error("--model-dims: expected comma-separated integers, got %r" % args.model_dims)
    from flashc import configs
    known = sorted({d for _, d, _ in configs.BENCH_FFN_SHAPES})
    if any(d not in known for d in args.model_dims):
        p.error("--model-dims: the rows have d in %s, got %s" % (known, args.model_dims))
    bad = [x for x in args.impls if x not in IMPLS]
    if bad:
        p.error("unknown impl(s) %s (known: %s)" % (", ".join(bad), ", ".join(IMPLS)))
    return args


def rows(model_dims=()):
    """The benchmark's rows, those with d in model_dims when given."""
    from flashc import configs
    return [dict(M=m, d=d, h=h, config=c) for (m, d, h), c in zip(configs.BENCH_FFN_SHAPES, configs.BENCH_FFN)
            if not model_dims or d in model_dims]


def run_row(torch, row, args):
    import torch.nn.functional as F
    M, d, h, config = row["M"], row["d"], row["h"], row["config"]
    x, w1, w2, wg, dy = bc.ffn_inputs(torch, M, d, h, config.gated)
    if config.gated:
        eager = lambda x, w1, w2: (F.silu(x @ wg) * (x @ w1)) @ w2
    else:
        eager = lambda x, w1, w2: F.gelu(x @ w1, approximate="tanh") @ w2
    fns = {}
    for name in FLASHC_VARIANTS:
        if name in args.impls:
            import flashc.torch as ft
            fns[name] = lambda x, w1, w2: ft.ffn(x, w1, w2=w2, activation=config.activation, w_gate=wg)
    if "eager" in args.impls:
        fns["eager"] = eager
    if "compile" in args.impls:
        fns["compile"] = torch.compile(eager)
    flops = (6.0 if config.gated else 4.0) * M * d * h
    result = {"M": M, "d": d, "h": h, "key": row["config"].key, "impls": {}}
    leaves = [t for t in (x, w1, w2, wg) if t is not None]

    saved_env = {k: os.environ.get(k) for v in FLASHC_VARIANTS.values() for k in v}

    def variant_env(name):  # each call under its implementation's settings (the default's: as the caller set them)
        for k, v in saved_env.items():
            value = FLASHC_VARIANTS.get(name, {}).get(k, v)
            if value is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = value

    def guarded(name, fn, no_grad):  # each call under its implementation's settings
        def call():
            variant_env(name)
            if no_grad:
                with torch.no_grad():
                    return fn()
            return fn()
        return call

    measures, failed = {}, {}
    for name, fn in fns.items():
        variant_env(name)
        try:  # first calls: bundles loaded, torch.compile's graphs compiled (with and without gradients)
            fn(x, w1, w2).backward(dy)
            with torch.no_grad():
                fn(x, w1, w2)
            torch.cuda.synchronize()
        except Exception as e:
            failed[name] = {"status": "error: %s" % str(e).splitlines()[0][:300]}
            traceback.print_exc()
            continue
        measures[name] = {
            # inference: flashc's forward program, no activation saved
            "fwd": (guarded(name, lambda fn=fn: fn(x, w1, w2), True), None),
            # with gradients: flashc's training forward (it also writes pre / gate and up for the backward)
            "fwd_train": (guarded(name, lambda fn=fn: fn(x, w1, w2), False), None),
            "fwdbwd": (guarded(name, lambda fn=fn: fn(x, w1, w2).backward(dy), False), leaves),
        }
    timed = bc.interleaved(measures, rounds=args.rounds, warmup=args.warmup, rep=args.rep, lead_us=args.lead_us)
    variant_env("flashc")
    for name in fns:
        if name in failed:
            entry = failed[name]
        elif "error" in timed[name]:
            entry = {"status": "error: %s" % timed[name]["error"]}
        else:
            t_f, t_ft, t_fb = timed[name]["fwd"], timed[name]["fwd_train"], timed[name]["fwdbwd"]
            entry = dict(status="ok", fwd_ms=t_f, fwd_train_ms=t_ft, fwdbwd_ms=t_fb, fwd_tflops=bc.tflops(flops, t_f),
                         fwd_train_tflops=bc.tflops(flops, t_ft), bwd_tflops=bc.tflops(2 * flops, t_fb - t_ft))
        result["impls"][name] = entry
        print("  %-8s %s" % (name, entry), flush=True)
    checked = [n for n in FLASHC_IMPLS if n in fns and result["impls"][n].get("status") == "ok"]
    if checked and "eager" in fns:
        from flashc import measure
        with torch.no_grad():
            for name in checked:  # y on 256 rows (flashc.measure.check_ffn), under the variant's settings
                variant_env(name)
                ok, detail = measure.check_ffn(lambda x, w1, w2, dy: [fns[name](x, w1, w2)],
                                               lambda x, w1, w2, dy: [eager(x, w1, w2)], x, w1, w2, w_gate=wg,
                                               activation=config.activation)
                result["check" if name == "flashc" else "check_" + name] = {"pass": ok, "detail": detail}
        variant_env("flashc")
    return result


def table(results, impls):
    titles = {"flashc": "flashc", "flashc-native": "flashc (native path)", "flashc-python": "flashc (Python path)",
              "eager": "PyTorch eager (cuBLAS)",
              "compile": "torch.compile"}
    header = ["M", "d", "h"] + ["%s fwd / bwd" % titles[i] for i in impls] + ["flashc/best fwd", "flashc check"]
    out = []
    for r in results:
        cells = [r["M"], r["d"], r["h"]]
        for i in impls:
            e = r["impls"].get(i, {})
            cells.append("%s / %s" % (bc.fmt(e.get("fwd_tflops")), bc.fmt(e.get("bwd_tflops"))) if e.get("status") == "ok"
                         else e.get("status", "—").split(":")[0])
        mine = next((r["impls"][n].get("fwd_tflops") for n in FLASHC_IMPLS if n in r["impls"]), None)
        peers = [e.get("fwd_tflops") for n, e in r["impls"].items() if n not in FLASHC_IMPLS and e.get("fwd_tflops")]
        cells.append("%.2f" % (mine / max(peers)) if mine and peers else "—")
        checks = [r.get("check" if n == "flashc" else "check_" + n) for n in FLASHC_IMPLS if n in impls]
        cells.append(" / ".join("—" if c is None else ("pass" if c["pass"] else "FAIL") for c in checks) or "—")
        out.append(cells)
    return bc.markdown_table(header, out)


NOTES = ("TFLOP/s: fwd 4*M*d*h (gated 6*M*d*h) under torch.no_grad() (flashc's inference forward), bwd twice that "
         "over (fwd+bwd - fwd with gradients, i.e. flashc's training forward: fwd_train_ms in the JSON); triton "
         "do_bench medians, the implementations interleaved in rounds (each the median of its rounds' medians); no "
         "biases; flashc check: y on 256 rows vs float64, error <= 2x eager bf16's + floor.")


def main(argv=None):
    args = parse_args(argv)
    out = bc.out_dir(args.out)
    from flashc import cache
    rs = rows(args.model_dims)
    if args.dry_run:
        for r in rs:
            print("  M=%d d=%d h=%d bundle %s: %s" % (r["M"], r["d"], r["h"], r["config"].key,
                                                     cache.find_bundle_dir(r["config"]) or "MISSING"))
        fake = [{"M": r["M"], "d": r["d"], "h": r["h"], "impls": {i: {"status": "dry-run"} for i in args.impls}}
                for r in rs]
        md = table(fake, args.impls)
        print(md)
        print("dry run wrote %s" % bc.write_outputs(out, "bench_ffn", bc.environment(), md, fake, NOTES + " (dry run)"))
        return 0
    import torch
    if not torch.cuda.is_available():
        print("bench_ffn: no CUDA device (use --dry-run without one)", file=sys.stderr)
        return 1
    env = bc.environment(torch)
    results = []
    for r in rs:
        print("row M=%d d=%d h=%d" % (r["M"], r["d"], r["h"]), flush=True)
        results.append(run_row(torch, r, args))
        bc.write_outputs(out, "bench_ffn", env, table(results, args.impls), results, NOTES)
    md = table(results, args.impls)
    report = bc.write_outputs(out, "bench_ffn", env, md, results, NOTES)
    labels = ["M%d d%d h%d" % (r["M"], r["d"], r["h"]) for r in results]
    bc.bar_plot(os.path.join(out, "bench_ffn.png"), "FFN forward, bf16", labels,
                {i: [r["impls"].get(i, {}).get("fwd_tflops") for r in results] for i in args.impls})
    print("\nwrote %s" % report)
    print(md)
    return 1 if any(not c["pass"] for r in results for k, c in r.items() if k.startswith("check")) else 0


if __name__ == "__main__":
    sys.exit(main())
