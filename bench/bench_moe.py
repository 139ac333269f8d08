#!/usr/bin/env python3
"""Mixture-of-experts benchmark: flashc.torch.moe (flash.moe compiled: router, routing, grouped expert GEMMs,
combine) against PyTorch's compositions of the same layer (bench/kernel_lab/moe_lab.py's torch_moe: router matmul,
f32 softmax, topk, a sort by expert, the expert FFNs by torch._grouped_mm or a loop, the weighted index_add), forward
(under torch.no_grad()) and a training step (forward with gradients + backward of x, the router and every weight:
flashc's training forward and compiled backward against PyTorch's autograd), 16k tokens, bf16, on issue #23's layers
(flashc.configs.BENCH_MOE). do_bench medians, implementations interleaved in rounds (bench_common.interleaved);
flashc's y compared with PyTorch's on the same routing.

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
        dy = rand(T, d)

        def no_grad(fn):
            def run():
                with torch.no_grad():
                    return fn()
            return run
        mine = no_grad(lambda: ft.moe(x, router, w_gate, w_down, w_up=w_up, top_k=k, renormalize=c.renormalize))
        y = mine()
        peer = no_grad(lambda: torch_moe(x, router, w_gu, w_down, k, c.renormalize, grouped=True))()
        diff = (y.float() - peer.float()).abs().max().item()
        del y, peer
        # The training step's leaves (gradients reset by do_bench's grad_to_none).
        mx, mr, mg, mu, md = (t.detach().clone().requires_grad_() for t in (x, router, w_gate, w_up, w_down))
        tx, tr, tgu, td = (t.detach().clone().requires_grad_() for t in (x, router, w_gu, w_down))
        mine_step = lambda: ft.moe(mx, mr, mg, md, w_up=mu, top_k=k, renormalize=c.renormalize).backward(dy)
        peer_step = lambda grouped: (lambda: torch_moe(tx, tr, tgu, td, k, c.renormalize, grouped).backward(dy))
        # The forward with gradients wanted (flashc's training forward, PyTorch's autograd graph): the backward alone
        # is the step less it.
        mine_train = lambda: ft.moe(mx, mr, mg, md, w_up=mu, top_k=k, renormalize=c.renormalize)
        peer_train = lambda grouped: (lambda: torch_moe(tx, tr, tgu, td, k, c.renormalize, grouped))
        measures = {"flashc": {"fwd": (mine, None), "train_fwd": (mine_train, None),
                               "step": (mine_step, [mx, mr, mg, mu, md])},
                    "torch_grouped_mm": {"fwd": (no_grad(lambda: torch_moe(x, router, w_gu, w_down, k, c.renormalize,
                                                                           True)), None),
                                         "train_fwd": (peer_train(True), None),
                                         "step": (peer_step(True), [tx, tr, tgu, td])},
                    "torch_loop": {"fwd": (no_grad(lambda: torch_moe(x, router, w_gu, w_down, k, c.renormalize,
                                                                     False)), None),
                                   "train_fwd": (peer_train(False), None),
                                   "step": (peer_step(False), [tx, tr, tgu, td])}}
        timed = bc.interleaved(measures, rounds=args.rounds)
        flops = 2.0 * T * k * (d * 2 * h + h * d) + 2.0 * T * d * e
        row = {"config": c.describe(), "tokens": T, "max_diff_vs_torch": diff}
        for name, t in timed.items():
            row[name] = {"fwd_ms": t.get("fwd"), "train_fwd_ms": t.get("train_fwd"), "step_ms": t.get("step"),
                         "bwd_ms": t["step"] - t["train_fwd"] if t.get("step") and t.get("train_fwd") else None,
                         "error": t.get("error")}
            if t.get("fwd"):
                row[name]["tflops"] = bc.tflops(flops, t["fwd"])
            if t.get("step"):  # forward + backward: three times the forward's FLOPs
                row[name]["step_tflops"] = bc.tflops(3 * flops, t["step"])
        for what in ("fwd", "step", "bwd"):
            best = min((r[what + "_ms"] for n, r in row.items() if isinstance(r, dict) and n != "flashc" and
                        r.get(what + "_ms")), default=None)
            mine_ms = row["flashc"].get(what + "_ms")
            row["best_torch_over_flashc_" + what] = best / mine_ms if best and mine_ms else None
        row["best_torch_over_flashc"] = row["best_torch_over_flashc_fwd"]
        print(row, flush=True)
        rows.append(row)
        del x, router, w_gate, w_up, w_down, w_gu, dy, mx, mr, mg, mu, md, tx, tr, tgu, td
        torch.cuda.empty_cache()
    ms = lambda v: "%.3f" % v if v else "-"
    ratio = lambda v: "%.2f" % v if v else "-"
    header = ["layer", "flashc fwd ms (TFLOP/s)", "torch grouped_mm fwd", "torch loop fwd", "best torch / flashc fwd",
              "flashc step ms (TFLOP/s)", "torch grouped_mm step", "torch loop step", "best torch / flashc step",
              "flashc bwd ms", "best torch / flashc bwd", "max |y - torch|"]
    table = bc.markdown_table(header, [[r["config"], "%.3f (%.0f)" % (r["flashc"]["fwd_ms"], r["flashc"]["tflops"]),
                                        ms(r["torch_grouped_mm"]["fwd_ms"]), ms(r["torch_loop"]["fwd_ms"]),
                                        ratio(r["best_torch_over_flashc_fwd"]),
                                        "%s (%.0f)" % (ms(r["flashc"]["step_ms"]), r["flashc"].get("step_tflops", 0)),
                                        ms(r["torch_grouped_mm"]["step_ms"]), ms(r["torch_loop"]["step_ms"]),
                                        ratio(r["best_torch_over_flashc_step"]), ms(r["flashc"]["bwd_ms"]),
                                        ratio(r["best_torch_over_flashc_bwd"]), "%.3g" % r["max_diff_vs_torch"]]
                                       for r in rows])
    print(table)
    bc.write_outputs(out, "bench_moe", env, table, rows,
                     "The whole layer, %d tokens, bf16: fwd under torch.no_grad(), step = forward with gradients + "
                     "backward (x, router and every weight), bwd = step - the forward with gradients wanted; do_bench medians (L2 flushed), implementations interleaved "
                     "in %d rounds; TFLOP/s on the routed rows' GEMMs and the router (step: 3x the forward's)."
                     % (args.tokens, args.rounds))


if __name__ == "__main__":
    sys.exit(main())
