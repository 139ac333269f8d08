"""Programmable attention against FlexAttention in one process (issue #16's rows): B = 1, H = 16, D = 128, S = 16k,
bf16; forward and backward time of flashc with a mask modifier (flashc.torch.attention(mask_mod=...)) and of
torch.compile'd flex_attention with the same mask_mod and its block mask, plus Flex's block-mask build time and
flashc's first-call time (load of the bundle, or its compile when no bundle is found) beside them.

Rows (the modifiers of flashc.configs.BENCH_PROGRAMMABLE, prebuilt by `python -m flashc.prebuild ... bench-programmable`):
a causal sliding window of 1024 keys (also with flashc's window attribute; since session 42 the modifier, which only
bounds q - k, compiles to the attribute's kernels on its own row positions), prefix-LM over 4096 keys,
causal attention over 13 documents of random lengths 256-2048 (each token's document id read by index: flashc's
modifier doc[q] == doc[k] with causal=True, Flex's (doc[q] == doc[k]) & (q >= k)), causal ALiBi (a score modifier
reading a slope per head: score + slopes[h] * (kv_idx - q_idx), the same function for both; Flex with its causal
block mask), a block-sparse layout of 128 x 128 blocks (a random fifth of each head's blocks plus the diagonal:
flashc.mask_mod.block_sparse(layout, 128), the same function for both). Outputs are checked: flashc against Flex (max abs difference, bf16), and both against float64 on the first and last
512 query rows of four heads (the modifiers evaluated on index tensors).

    python3 bench/bench_programmable.py [--rows window,prefix_lm] [--seq 16384] [--out DIR]
"""

import argparse
import os
import sys
import time
import traceback

import bench_common as bc

ROWS = ("window", "window_attr", "prefix_lm", "document", "alibi", "block_sparse")
# Rows whose mask reads the head: Flex's block mask needs H (with H=None it is built for head 0 and broadcast, which
# gave the block-sparse row a float64 error of 0.19, session 20 call 3).
PER_HEAD_MASK_ROWS = ("block_sparse",)


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rows", default=",".join(ROWS), help="comma-separated subset of %s" % ",".join(ROWS))
    p.add_argument("--seq", type=int, default=16384)
    p.add_argument("--heads", type=int, default=16)
    p.add_argument("--head-dim", type=int, default=128)
    p.add_argument("--out")
    p.add_argument("--warmup", type=int, default=25)
    p.add_argument("--rep", type=int, default=100)
    bc.add_lead_us_argument(p)  # issue #16 asks for kernel times: a short row's forward can be host-bound otherwise
    p.add_argument("--kernel-times", type=int, default=0, metavar="CALLS",
                   help="also give each implementation's forward and backward as the sum of its CUDA kernels' times "
                        "(torch.profiler over CALLS calls; the backward's as forward + backward less forward, kernels "
                        "only): issue #16's kernel time without the event timings' gaps and run-to-run swings "
                        "(default 0: off)")
    args = bc.lead_us_from(p, p.parse_args(argv))
    if args.kernel_times < 0:
        p.error("--kernel-times: a number of calls >= 0")
    args.rows = [r for r in args.rows.split(",") if r]
    bad = [r for r in args.rows if r not in ROWS]
    if bad:
        p.error("unknown row(s) %s (known: %s)" % (", ".join(bad), ", ".join(ROWS)))
    return args


def mods(args, torch):
    """{row: (flex mask_mod, flashc attention kwargs or None when flashc cannot express it yet, why, score_mod or
    None)}. The modifiers are flashc.configs' (BENCH_PROGRAMMABLE: the prebuilt bundles are theirs)."""
    from flashc import configs
    from flashc.modifier_inputs import alibi_slopes, block_sparse_layout, document_ids
    window, prefix_lm = configs.bench_window_mod, configs.bench_prefix_lm_mod
    w = 1024
    causal = lambda b, h, q, k: q >= k
    doc, _ = document_ids(args.seq)
    same_document = lambda b, h, q, k: doc[q] == doc[k]  # configs.DOCUMENT_MASK, with causal=True
    document_causal = lambda b, h, q, k: (doc[q] == doc[k]) & (q >= k)
    # ALiBi's slopes 2^(-8 (i + 1) / H) (configs.ALIBI_SCORE with causal=True).
    slopes = alibi_slopes(args.heads)
    alibi = lambda score, b, h, q_idx, kv_idx: score + slopes[h] * (kv_idx - q_idx)
    from flashc.mask_mod import block_sparse
    sparse = block_sparse(block_sparse_layout(args.heads, args.seq), 128)  # configs.BENCH_BLOCK_SPARSE_MASK
    return {
        "block_sparse": (sparse, dict(mask_mod=sparse), None, None),
        "window": (window, dict(mask_mod=window), None, None),
        "window_attr": (window, dict(causal=True, window=(w, 0)), None, None),
        "prefix_lm": (prefix_lm, dict(mask_mod=prefix_lm), None, None),
        "document": (document_causal, dict(causal=True, mask_mod=same_document), None, None),
        "alibi": (causal, dict(causal=True, score_mod=alibi), None, alibi),
    }


def flex_setup(torch):
    from torch.nn.attention.flex_attention import create_block_mask, flex_attention
    import torch._dynamo
    cfg = torch._dynamo.config
    for name in ("recompile_limit", "cache_size_limit"):
        if hasattr(cfg, name):
            setattr(cfg, name, 1024)
    return create_block_mask, torch.compile(flex_attention, fullgraph=True, dynamic=False)


def run_row(torch, name, args, flex, results):
    import flashc.torch as ft
    create_block_mask, flex_attention = flex
    flex_mod, flashc_kwargs, unsupported, score_mod = mods(args, torch)[name]
    S, H, D = args.seq, args.heads, args.head_dim
    g = torch.Generator(device="cuda").manual_seed(0)
    q, k, v, do = (torch.randn(1, H, S, D, device="cuda", generator=g, dtype=torch.bfloat16) for _ in range(4))
    for t in (q, k, v):
        t.requires_grad_()
    row = {"row": name, "B": 1, "H": H, "S": S, "D": D, "impls": {}}
    # Flex: block-mask build (median of 3 after one warm-up), then its kernels.
    try:
        mask_heads = H if name in PER_HEAD_MASK_ROWS else None
        build_options = {}
        build = lambda: create_block_mask(flex_mod, B=None, H=mask_heads, Q_LEN=S, KV_LEN=S, device="cuda",
                                          **build_options)
        try:
            build()
        except torch.cuda.OutOfMemoryError:
            # Flex's eager builder materialises a per-head mask's index tensors whole ([H, S, S] int64: 32 GiB at
            # H = 16, S = 16k), more than an 80 GB card holds beside them (session 49, H100); its compiled builder
            # does not. The build time is then the compiled builder's, and the row says so.
            build_options = {"_compile": True}
        if build_options:  # (retried here, once the failed attempt's frames are released)
            torch.cuda.empty_cache()
            build()
        builds = []
        for _ in range(3):
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            block_mask = build()
            torch.cuda.synchronize()
            builds.append((time.perf_counter() - t0) * 1e3)
        fn = lambda: flex_attention(q, k, v, score_mod=score_mod, block_mask=block_mask)
        row["impls"]["flex"] = timed(torch, fn, do, (q, k, v), args)
        row["impls"]["flex"]["block_mask_build_ms"] = sorted(builds)[1]
        row["impls"]["flex"]["block_mask_compiled"] = bool(build_options)
        flex_out = fn().detach()
    except Exception as e:
        row["impls"]["flex"] = {"status": "error: %s" % str(e).splitlines()[0][:300]}
        traceback.print_exc()
        flex_out = None
    if unsupported:
        row["impls"]["flashc"] = {"status": "not supported: " + unsupported}
    else:
        try:
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            out = ft.attention(q, k, v, **flashc_kwargs)
            torch.cuda.synchronize()
            first_ms = (time.perf_counter() - t0) * 1e3
            fn = lambda: ft.attention(q, k, v, **flashc_kwargs)
            entry = timed(torch, fn, do, (q, k, v), args)
            entry["first_call_ms"] = first_ms
            if flex_out is not None:
                entry["max_abs_diff_vs_flex"] = float((out.float() - flex_out.float()).abs().max())
            entry["max_abs_err_vs_float64"] = float64_error(torch, q, k, v, out, flex_mod, score_mod)
            if flex_out is not None:
                row["impls"]["flex"]["max_abs_err_vs_float64"] = float64_error(torch, q, k, v, flex_out, flex_mod,
                                                                               score_mod)
            row["impls"]["flashc"] = entry
        except Exception as e:
            row["impls"]["flashc"] = {"status": "error: %s" % str(e).splitlines()[0][:300]}
            traceback.print_exc()
    f, x = row["impls"].get("flashc", {}), row["impls"].get("flex", {})
    if f.get("status") == "ok" and x.get("status") == "ok":
        row["fwd_vs_flex"] = f["fwd_ms"] / x["fwd_ms"]
        row["bwd_vs_flex"] = f["bwd_ms"] / x["bwd_ms"]
        if "fwd_kernel_ms" in f and "fwd_kernel_ms" in x:
            row["fwd_kernel_vs_flex"] = f["fwd_kernel_ms"] / x["fwd_kernel_ms"]
            row["bwd_kernel_vs_flex"] = f["bwd_kernel_ms"] / x["bwd_kernel_ms"]
    results.append(row)
    print("%-12s %s" % (name, row), flush=True)


def float64_error(torch, q, k, v, out, mask_mod, score_mod, rows=512):
    """Max |out - float64 attention| over the first and the last `rows` query rows of heads 0, 1, H/2 and H - 1
    (every key), the row's modifiers evaluated on broadcast index tensors (the functions Flex is given)."""
    H, S = q.shape[1], q.shape[2]
    heads = sorted({0, 1, H // 2, H - 1} & set(range(H)))
    error = 0.0
    with torch.no_grad():
        for row0 in sorted({0, max(0, S - rows)}):
            n = min(rows, S - row0)
            at = lambda lo, count: torch.arange(lo, lo + count, device=q.device)
            b = at(0, 1)[:, None, None, None]
            h = torch.tensor(heads, device=q.device)[None, :, None, None]
            qi, ki = at(row0, n)[None, None, :, None], at(0, S)[None, None, None, :]
            qs = q.detach()[:, heads, row0:row0 + n].double()
            s = qs @ k.detach()[:, heads].double().transpose(-1, -2) / q.shape[-1] ** 0.5
            if score_mod is not None:
                s = score_mod(s, b, h, qi, ki)
            s = s.masked_fill(~mask_mod(b, h, qi, ki), float("-inf"))
            ref = torch.softmax(s, dim=-1) @ v.detach()[:, heads].double()
            error = max(error, float((out.detach()[:, heads, row0:row0 + n].double() - ref).abs().max()))
    return error


def timed(torch, fn, do, leaves, args):
    fwd = bc.do_bench(fn, warmup=args.warmup, rep=args.rep, lead_us=args.lead_us)
    fb = bc.do_bench(lambda: fn().backward(do), grad_to_none=list(leaves), warmup=args.warmup, rep=args.rep,
                     lead_us=args.lead_us)
    entry = {"status": "ok", "fwd_ms": fwd, "fwdbwd_ms": fb, "bwd_ms": fb - fwd}
    if args.kernel_times:
        def kernels_ms(call):
            def one():
                for t in leaves:
                    t.grad = None  # (no gradient accumulation kernels in the sums)
                call()
            return sum(bc.cuda_kernel_times(one, args.kernel_times).values()) / 1e3
        entry["fwd_kernel_ms"] = kernels_ms(fn)
        entry["bwd_kernel_ms"] = kernels_ms(lambda: fn().backward(do)) - entry["fwd_kernel_ms"]
    return entry


def table(results):
    header = ["row", "flashc fwd / bwd ms", "Flex fwd / bwd ms", "flashc / Flex fwd", "flashc / Flex bwd",
              "Flex block mask ms", "flashc first call ms", "check"]
    kernels = any("fwd_kernel_vs_flex" in r for r in results)
    if kernels:
        header[5:5] = ["kernels: flashc / Flex fwd", "kernels: flashc / Flex bwd"]
    rows = []
    for r in results:
        f, x = r["impls"].get("flashc", {}), r["impls"].get("flex", {})
        pair = lambda e: ("%.3f / %.3f" % (e["fwd_ms"], e["bwd_ms"])) if e.get("status") == "ok" else e.get("status", "—")
        check = ("|Δ flex| %.2g, |err f64| flashc %.2g, Flex %.2g" % (
            f["max_abs_diff_vs_flex"], f["max_abs_err_vs_float64"], x.get("max_abs_err_vs_float64", float("nan")))
                 if f.get("status") == "ok" and "max_abs_diff_vs_flex" in f else "—")
        cells = [r["row"], pair(f), pair(x), bc.fmt(r.get("fwd_vs_flex"), 2), bc.fmt(r.get("bwd_vs_flex"), 2),
                 bc.fmt(x.get("block_mask_build_ms"), 2) + (" (compiled builder)" if x.get("block_mask_compiled") else ""),
                 bc.fmt(f.get("first_call_ms"), 1), check]
        if kernels:
            cells[5:5] = [bc.fmt(r.get("fwd_kernel_vs_flex"), 3), bc.fmt(r.get("bwd_kernel_vs_flex"), 3)]
        rows.append(cells)
    return bc.markdown_table(header, rows)


def main(argv=None):
    args = parse_args(argv)
    out = bc.out_dir(args.out)
    import torch
    if not torch.cuda.is_available():
        print("bench_programmable: no CUDA device", file=sys.stderr)
        return 1
    flex = flex_setup(torch)
    results = []
    for name in args.rows:
        run_row(torch, name, args, flex, results)
    md = table(results)
    print(md)
    lead = ("; a GPU spin of %s µs before each timed call (--lead-us): the GPU's time, not the host's enqueueing"
            % args.lead_us) if args.lead_us else ""
    notes = ("Times: medians (flashc.measure.time_ms: CUDA events, L2 flushed%s). bwd = fwd+bwd - fwd. Flex: " % lead +
             "torch.compile'd flex_attention with create_block_mask's mask (build time: median of 3 after a warm-up). "
             "flashc first call: its bundle loaded (or compiled) in this process." +
             (" Kernels (--kernel-times %d): the sums of each call's CUDA kernel times (torch.profiler), the backward's "
              "as forward + backward less forward." % args.kernel_times if args.kernel_times else ""))
    print("wrote %s" % bc.write_outputs(out, "bench_programmable", bc.environment(torch), md, results, notes))
    return 0


if __name__ == "__main__":
    sys.exit(main())
