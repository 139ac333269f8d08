#!/usr/bin/env python3
"""Mixture-of-experts benchmark: flashc.torch.moe (flash.moe compiled: router, routing, grouped expert GEMMs,
combine) against PyTorch's compositions of the same layer (bench/kernel_lab/moe_lab.py's torch_moe: router matmul,
f32 softmax, topk, a sort by expert, the expert FFNs by torch._grouped_mm or a loop, the weighted index_add), forward,
16k tokens, bf16, on issue #23's layers (flashc.configs.BENCH_MOE). do_bench medians, implementations interleaved in
rounds (bench_common.interleaved); flashc's y compared with PyTorch's on the same routing.

  python3 bench/bench_moe.py [--out DIR] [--tokens N]
Bundles: python -m flashc.prebuild --out DIR bench-moe (FLASHC_BUNDLE_PATH).
"""
import argparse
import os
import sys

import bench_common as bc

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "kernel_lab"))


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out")
    p.add_argument("--tokens", type=int, default=16384)
    p.add_argument("--rounds", type=int, default=3)
    args = p.parse_args(argv)
    import torch
    import flashc.torch as ft
    from flashc import configs
    from moe_lab import torch_moe
    out = bc.out_dir(args.out)
    env = bc.environment(torch)
    rows = []
    for c in configs.BENCH_MOE:
        g = torch.Generator(device="cuda").manual_seed(0)
        d, h, e, k, T = c.model_dim, c.hidden_dim, c.experts, c.top_k, args.tokens
        rand = lambda *shape, scale=1.0: (torch.randn(*shape, device="cuda", generator=g) * scale).to(torch.bfloat16)
        x, router = rand(T, d), rand(d, e, scale=d ** -0.5)
        w_gate, w_up, w_down = rand(e, d, h, scale=d ** -0.5), rand(e, d, h, scale=d ** -0.5), rand(e, h, d, scale=h ** -0.5)
        w_gu = torch.cat([w_gate, w_up], dim=2)
        with torch.no_grad():
            mine = lambda: ft.moe(x, router, w_gate, w_down, w_up=w_up, top_k=k, renormalize=c.renormalize)
            y = mine()
            peer = torch_moe(x, router, w_gu, w_down, k, c.renormalize, grouped=True)
            diff = (y.float() - peer.float()).abs().max().item()
            measures = {"flashc": {"fwd": (mine, None)},
                        "torch_grouped_mm": {"fwd": (lambda: torch_moe(x, router, w_gu, w_down, k, c.renormalize, True), None)},
                        "torch_loop": {"fwd": (lambda: torch_moe(x, router, w_gu, w_down, k, c.renormalize, False), None)}}
            timed = bc.interleaved(measures, rounds=args.rounds)
        flops = 2.0 * T * k * (d * 2 * h + h * d) + 2.0 * T * d * e
        row = {"config": c.describe(), "tokens": T, "max_diff_vs_torch": diff}
        for name, t in timed.items():
            row[name] = {"fwd_ms": t.get("fwd"), "error": t.get("error")}
            if t.get("fwd"):
                row[name]["tflops"] = bc.tflops(flops, t["fwd"])
        best = min(t["fwd"] for n, t in timed.items() if n != "flashc" and t.get("fwd"))
        row["best_torch_over_flashc"] = best / timed["flashc"]["fwd"] if timed["flashc"].get("fwd") else None
        print(row, flush=True)
        rows.append(row)
        del x, router, w_gate, w_up, w_down, w_gu
        torch.cuda.empty_cache()
    header = ["layer", "flashc ms (TFLOP/s)", "torch grouped_mm ms", "torch loop ms", "best torch / flashc", "max |y - torch|"]
    table = bc.markdown_table(header, [[r["config"], "%.3f (%.0f)" % (r["flashc"]["fwd_ms"], r["flashc"]["tflops"]),
                                        "%.3f" % r["torch_grouped_mm"]["fwd_ms"], "%.3f" % r["torch_loop"]["fwd_ms"],
                                        "%.2f" % r["best_torch_over_flashc"], "%.3g" % r["max_diff_vs_torch"]]
                                       for r in rows])
    print(table)
    bc.write_outputs(out, "bench_moe", env, table, rows,
                     "Forward of the whole layer, %d tokens, bf16; do_bench medians (L2 flushed), implementations "
                     "interleaved in %d rounds; TFLOP/s on the routed rows' GEMMs and the router." % (args.tokens, args.rounds))


if __name__ == "__main__":
    sys.exit(main())
