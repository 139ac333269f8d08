#!/usr/bin/env python3
"""Probe: is the warp-specialised backward's dK/dV repeatable, and how do its float64 errors compare with cuDNN's
slice by slice? dK and dV take no atomics in flashc's backward, so two runs on the same inputs must agree bit for
bit; a difference means a race. Per (b, h) slice: max |dk - dk64| for flashc and cuDNN (SDPA), and their ratio.
    python3 bench/probes/bwd_repeatability.py [--shapes D:Dv:S:causal,...] [--runs N] [--slices N]
Needs flashc bundles for the shapes (bench-attention-large) on FLASHC_BUNDLE_PATH."""
import argparse

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

import flashc.torch as ft
from flashc.testing import attention_reference, max_abs_error


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--shapes", default="192:128:4096:1,256:256:4096:1,192:128:1024:0")
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--slices", type=int, default=16)
    args = p.parse_args()
    torch.manual_seed(0)
    for shape in args.shapes.split(","):
        d, dv, s, causal = (int(x) for x in shape.split(":"))
        h = 2048 // dv
        b = 16384 // s
        q, k = (torch.randn(b, h, s, d, device="cuda", dtype=torch.bfloat16) for _ in range(2))
        v, do = (torch.randn(b, h, s, dv, device="cuda", dtype=torch.bfloat16) for _ in range(2))

        def grads(fn):
            qq, kk, vv = (t.clone().requires_grad_() for t in (q, k, v))
            fn(qq, kk, vv).backward(do)
            return qq.grad, kk.grad, vv.grad

        def flashc_fn(qq, kk, vv):
            return ft.attention(qq, kk, vv, causal=bool(causal))

        def cudnn_fn(qq, kk, vv):
            with sdpa_kernel([SDPBackend.CUDNN_ATTENTION]):
                return F.scaled_dot_product_attention(qq, kk, vv, is_causal=bool(causal))

        first = grads(flashc_fn)
        differing = {"dk": 0, "dv": 0}
        for _ in range(args.runs - 1):
            again = grads(flashc_fn)
            for name, i in (("dk", 1), ("dv", 2)):
                differing[name] += int((again[i] != first[i]).any().item())
        peer = grads(cudnn_fn)
        ratios = []
        worst = None
        for idx in range(min(args.slices, b * h)):
            bi, hi = divmod((idx * 7919) % (b * h), h)
            ref_in = [t[bi:bi + 1, hi:hi + 1].double().requires_grad_() for t in (q, k, v)]
            o_ref, _ = attention_reference(*ref_in, causal=bool(causal))
            ref = torch.autograd.grad(o_ref, ref_in, do[bi:bi + 1, hi:hi + 1].double())
            ours = max_abs_error(first[1][bi:bi + 1, hi:hi + 1], ref[1])
            theirs = max_abs_error(peer[1][bi:bi + 1, hi:hi + 1], ref[1])
            ratios.append(ours / theirs)
            if worst is None or ours / theirs > worst[0]:
                err = (first[1][bi, hi].double() - ref[1][0, 0]).abs()
                row = int(err.max(dim=1).values.argmax())
                worst = (ours / theirs, bi, hi, ours, theirs, row, float(ref[1][0, 0, row].abs().max()))
        ratios.sort()
        print("D=%d Dv=%d S=%d causal=%d: runs=%d with dk differing %d, dv differing %d; dk error / cuDNN's over %d "
              "slices: min %.2f median %.2f max %.2f; worst slice b=%d h=%d (%.2e vs %.2e) at key %d (|dk64| max %.2e)"
              % (d, dv, s, causal, args.runs, differing["dk"], differing["dv"], len(ratios), ratios[0],
                 ratios[len(ratios) // 2], ratios[-1], *worst[1:]), flush=True)


if __name__ == "__main__":
    main()
