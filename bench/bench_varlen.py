#!/usr/bin/env python3
"""Packed variable-length attention forward: flashc.torch.varlen_attention against flashc's dense forward on the
same tokens, FlashAttention-2's varlen forward (torch.ops.aten._flash_attention_forward with cumulative offsets) and
SDPA's cuDNN on the dense batch, in one process.

bf16, 16k packed tokens, H*D = 2048 (D = 128: 16 heads, D = 64: 32), causal and not. Packings: equal lengths 1k,
2k, 4k, 8k (the dense kernel runs the same tokens as [B, H, S, D]: the same visible FLOPs exactly), 128 x 128, and
a mixed packing of 64- to 4096-token sequences. For the mixed packing the dense kernel's time is composed: each
length's share of the tokens at the dense kernel's measured time per token at that length (a full 16k batch of it),
i.e. what the dense kernel would take running each sequence at its own length at full occupancy. FLOPs count visible
scores only: 4 * H * D * (visible pairs). Medians of flashc.measure (CUDA events, L2 flushed).

  python3 bench/bench_varlen.py [--out DIR] [--head-dims 64,128]
Bundles: FLASHC_BUNDLE_PATH (python -m flashc.prebuild --out DIR bench-varlen). Writes DIR/bench_varlen.{md,json}
and DIR/results/<date>-<gpu>-bench_varlen.md.
"""
import argparse
import math
import random

import bench_common as bc

TOKENS = 16384


def mixed_lengths(seed=1):
    rng = random.Random(seed)
    lens = []
    while sum(lens) < TOKENS:
        lens.append(min(rng.choice([64, 137, 512, 777, 1000, 2048, 3100, 4096]), TOKENS - sum(lens)))
    return lens


def visible_pairs(length, causal):
    return length * (length + 1) // 2 if causal else length * length


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=None)
    ap.add_argument("--head-dims", default="128,64")
    args = ap.parse_args()
    import torch
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel
    import flashc.torch as ft

    out = bc.out_dir(args.out)
    env = bc.environment(torch)
    packings = [("equal %d" % L, [L] * (TOKENS // L)) for L in (1024, 2048, 4096, 8192)]
    packings += [("128 x 128", [128] * 128), ("mixed", mixed_lengths())]
    rows, data = [], []
    for d in (int(x) for x in args.head_dims.split(",")):
        heads = 2048 // d
        for causal in (False, True):
            dense_ms_per_token = {}

            def dense_time(L):
                if L not in dense_ms_per_token:
                    B = max(1, TOKENS // L)
                    q, k, v = (torch.randn(B, L, heads, d, device="cuda", dtype=torch.bfloat16).transpose(1, 2)
                               for _ in range(3))
                    with torch.no_grad():
                        ms = bc.do_bench(lambda: ft.attention(q, k, v, causal=causal))
                    dense_ms_per_token[L] = ms / (B * L)
                return dense_ms_per_token[L]

            for label, lens in packings:
                total = sum(lens)
                q, k, v = (torch.randn(total, heads, d, device="cuda", dtype=torch.bfloat16) for _ in range(3))
                cu = torch.tensor([0] + torch.tensor(lens).cumsum(0).tolist(), device="cuda", dtype=torch.int32)
                flops = sum(4 * heads * d * visible_pairs(L, causal) for L in lens)
                r = {"head_dim": d, "heads": heads, "causal": causal, "packing": label, "sequences": len(lens),
                     "tokens": total}
                with torch.no_grad():
                    # The binding's default: the offsets' verdict read at a later call (no stream synchronization)
                    ft.defer_checks(True)
                    r["flashc_varlen_ms"] = bc.do_bench(lambda: ft.varlen_attention(q, k, v, cu, cu, causal=causal))
                    ft.check_deferred()
                    ft.defer_checks(False)  # each call waiting for its verdict
                    r["flashc_varlen_waiting_ms"] = bc.do_bench(
                        lambda: ft.varlen_attention(q, k, v, cu, cu, causal=causal))
                    ft.defer_checks(True)
                    r["flashc_dense_ms"] = sum(dense_time(L) * L for L in lens)
                    try:
                        fa = torch.ops.aten._flash_attention_forward
                        r["fa2_varlen_ms"] = bc.do_bench(lambda: fa(q, k, v, cu, cu, max(lens), max(lens), 0.0,
                                                                    causal, False, scale=d ** -0.5))
                    except Exception as e:  # noqa: BLE001
                        r["fa2_error"] = str(e)[:200]
                    if len(set(lens)) == 1:
                        L = lens[0]
                        qd, kd, vd = (t.view(len(lens), L, heads, d).transpose(1, 2) for t in (q, k, v))
                        try:
                            with sdpa_kernel([SDPBackend.CUDNN_ATTENTION]):
                                r["cudnn_dense_ms"] = bc.do_bench(
                                    lambda: F.scaled_dot_product_attention(qd, kd, vd, is_causal=causal))
                        except Exception as e:  # noqa: BLE001
                            r["cudnn_error"] = str(e)[:200]
                        # the same tokens, two ways: the results agree
                        o_var = ft.varlen_attention(q, k, v, cu, cu, causal=causal)
                        o_dense = ft.attention(qd, kd, vd, causal=causal)
                        r["varlen_vs_dense_max_diff"] = (o_var.view(len(lens), L, heads, d).transpose(1, 2).float()
                                                         - o_dense.float()).abs().max().item()
                # Backward (deferred checks): (forward + backward) - forward, as the peers' (bench/README.md).
                qg, kg, vg = (t.clone().requires_grad_() for t in (q, k, v))
                dout = torch.randn_like(q)
                ft.defer_checks(True)

                def varlen_fwd_bwd():
                    ft.varlen_attention(qg, kg, vg, cu, cu, causal=causal).backward(dout)
                r["flashc_varlen_bwd_ms"] = bc.do_bench(varlen_fwd_bwd, grad_to_none=[qg, kg, vg]) - \
                    r["flashc_varlen_ms"]
                ft.check_deferred()
                try:
                    fa_bwd = torch.ops.aten._flash_attention_backward
                    with torch.no_grad():
                        fo = torch.ops.aten._flash_attention_forward(q, k, v, cu, cu, max(lens), max(lens), 0.0,
                                                                     causal, False, scale=d ** -0.5)
                        r["fa2_varlen_bwd_ms"] = bc.do_bench(
                            lambda: fa_bwd(dout, q, k, v, fo[0], fo[1], cu, cu, max(lens), max(lens), 0.0, causal,
                                           fo[2], fo[3], scale=d ** -0.5))
                except Exception as e:  # noqa: BLE001
                    r["fa2_bwd_error"] = str(e)[:200]
                if len(set(lens)) == 1:
                    L = lens[0]
                    qd, kd, vd = (t.detach().view(len(lens), L, heads, d).transpose(1, 2).requires_grad_()
                                  for t in (q, k, v))
                    dd = dout.view(len(lens), L, heads, d).transpose(1, 2)
                    dense_fwd = bc.do_bench(lambda: ft.attention(qd.detach(), kd.detach(), vd.detach(), causal=causal))
                    r["flashc_dense_bwd_ms"] = bc.do_bench(
                        lambda: ft.attention(qd, kd, vd, causal=causal).backward(dd), grad_to_none=[qd, kd, vd]) - \
                        dense_fwd
                bwd_flops = 2.5 * flops
                for key in ("flashc_varlen_bwd_ms", "fa2_varlen_bwd_ms", "flashc_dense_bwd_ms"):
                    if key in r and r[key] > 0:
                        r[key.replace("_ms", "_tflops")] = bc.tflops(bwd_flops, r[key])
                if "flashc_dense_bwd_ms" in r:
                    r["varlen_bwd_over_dense"] = r["flashc_dense_bwd_ms"] / r["flashc_varlen_bwd_ms"]
                for key in ("flashc_varlen_ms", "flashc_varlen_waiting_ms", "flashc_dense_ms", "fa2_varlen_ms",
                            "cudnn_dense_ms"):
                    if key in r:
                        r[key.replace("_ms", "_tflops")] = bc.tflops(flops, r[key])
                r["varlen_over_dense"] = r["flashc_dense_ms"] / r["flashc_varlen_ms"]
                r["waiting_over_dense"] = r["flashc_dense_ms"] / r["flashc_varlen_waiting_ms"]
                data.append(r)
                rows.append([d, "causal" if causal else "full", label, len(lens),
                             bc.fmt(r.get("flashc_varlen_tflops")), bc.fmt(r.get("flashc_varlen_waiting_tflops")),
                             bc.fmt(r.get("flashc_dense_tflops")), "%.3f" % r["varlen_over_dense"],
                             "%.3f" % r["waiting_over_dense"], bc.fmt(r.get("fa2_varlen_tflops")),
                             bc.fmt(r.get("cudnn_dense_tflops")), bc.fmt(r.get("flashc_varlen_bwd_tflops")),
                             bc.fmt(r.get("flashc_dense_bwd_tflops")), bc.fmt(r.get("fa2_varlen_bwd_tflops"))])
                print(rows[-1], flush=True)
    table = bc.markdown_table(["D", "mask", "packing", "sequences", "flashc varlen TFLOP/s",
                               "varlen, waiting", "flashc dense TFLOP/s", "varlen / dense",
                               "waiting / dense", "FA2 varlen TFLOP/s", "cuDNN dense TFLOP/s",
                               "flashc varlen bwd TFLOP/s", "flashc dense bwd TFLOP/s", "FA2 varlen bwd TFLOP/s"],
                              rows)
    notes = ("Dense for the mixed packing: each length at the dense kernel's time per token at that length (a full "
             "16k batch of it). Visible FLOPs only. 'varlen' reads the offsets' verdict at a later call (the binding's "
             "default, flashc.torch.defer_checks); 'waiting' waits for it each call (defer_checks(False): a stream "
             "synchronization).")
    print(bc.write_outputs(out, "bench_varlen", env, table, data, notes))


if __name__ == "__main__":
    main()
