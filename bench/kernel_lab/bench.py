"""Timing of the golden kernels vs PyTorch SDPA (flash, cuDNN) in one process (see lab.py).
bf16, B*S = 16k tokens, Hq*D = 2048. FLOPs: fwd 4*B*H*S^2*D (/2 causal), bwd 2.5x fwd.
Peer backward time = (fwd+bwd) - fwd, as in bench/README.md ("Method"); ours is the backward launch alone
(preprocess + main + postprocess)."""
import os

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel
from triton.testing import do_bench

from abi import Kernels


def tflops(flops, ms):
    return flops / (ms * 1e-3) / 1e12


def run_bench(libs, configs, names, out_dir, seqlens=(1024, 4096, 16384)):
    rows = []
    peer_cache = {}  # (D, S, causal) -> peers: measured once per shape
    torch.manual_seed(0)
    for name in names:
        d, hq, group, f16, causal, window, softcap, _, has_bwd = configs[name]
        kern = Kernels(libs[("fwd", name)], libs.get(("bwd", name)))
        for S in seqlens:
            B = 16384 // S
            q, k, v, do = (torch.randn(B, hq, S, d, device="cuda", dtype=torch.bfloat16) for _ in range(4))
            o = torch.empty_like(q)
            lse = torch.empty(B, hq, S, device="cuda", dtype=torch.float32)
            dq, dk, dv = torch.empty_like(q), torch.empty_like(k), torch.empty_like(v)
            delta = torch.empty_like(lse)
            dq_accum = torch.empty(B, hq, S, d, device="cuda", dtype=torch.float32)
            sem = torch.empty(B, hq, (S + 63) // 64, device="cuda", dtype=torch.int32)
            flops = 4 * B * hq * S * S * d / (2 if causal else 1)
            ours_f = [do_bench(lambda: kern.forward(q, k, v, o, lse), warmup=25, rep=100, return_mode="median")
                      for _ in range(2)]
            kern.forward(q, k, v, o, lse)  # real lse/O for the backward (never time on garbage)
            torch.cuda.synchronize()
            ours_b = [float("nan")] * 2
            if has_bwd:
                ours_b = [do_bench(lambda: kern.backward(q, k, v, o, do, lse, delta, dq_accum, dq, dk, dv, sem),
                                   warmup=25, rep=100, return_mode="median") for _ in range(2)]
            key = (d, S, causal)
            peers = peer_cache.setdefault(key, {})
            for pname, backend in (("flash", SDPBackend.FLASH_ATTENTION), ("cudnn", SDPBackend.CUDNN_ATTENTION)):
                if pname in peers:
                    continue
                qg, kg, vg = (t.detach().clone().requires_grad_(True) for t in (q, k, v))
                try:
                    with sdpa_kernel(backend):
                        f = lambda: F.scaled_dot_product_attention(qg, kg, vg, is_causal=bool(causal))
                        tf = do_bench(f, warmup=25, rep=100, return_mode="median")
                        def fb():
                            out = F.scaled_dot_product_attention(qg, kg, vg, is_causal=bool(causal))
                            out.backward(do)
                        tfb = do_bench(fb, warmup=25, rep=100, return_mode="median", grad_to_none=[qg, kg, vg])
                    peers[pname] = (tf, tfb - tf)
                except Exception as e:  # a missing backend is reported, not fatal
                    print(f"{pname} unavailable: {e}")
                    peers[pname] = (float("nan"), float("nan"))
            row = dict(name=name, D=d, S=S, B=B, H=hq, causal=causal,
                       ours_fwd_ms=min(ours_f), ours_fwd_ms_spread=abs(ours_f[0] - ours_f[1]),
                       ours_bwd_ms=min(ours_b), ours_bwd_ms_spread=abs(ours_b[0] - ours_b[1]),
                       ours_fwd=tflops(flops, min(ours_f)), ours_bwd=tflops(2.5 * flops, min(ours_b)),
                       flash_fwd=tflops(flops, peers["flash"][0]), flash_bwd=tflops(2.5 * flops, peers["flash"][1]),
                       cudnn_fwd=tflops(flops, peers["cudnn"][0]), cudnn_bwd=tflops(2.5 * flops, peers["cudnn"][1]))
            rows.append(row)
            print(row, flush=True)
            del q, k, v, do, o, lse, dq, dk, dv, delta, dq_accum
            torch.cuda.empty_cache()
    hdr = ("| config | D | S | causal | ours fwd | FA2 fwd | cuDNN fwd | ours/FA2 | ours bwd | FA2 bwd | cuDNN bwd | ours/FA2 |\n"
           "|---|---|---|---|---|---|---|---|---|---|---|---|")
    lines = [hdr]
    for r in rows:
        lines.append(f"| {r['name']} | {r['D']} | {r['S']} | {'yes' if r['causal'] else 'no'} | {r['ours_fwd']:.0f} | {r['flash_fwd']:.0f} | "
                     f"{r['cudnn_fwd']:.0f} | {r['ours_fwd'] / r['flash_fwd']:.2f} | {r['ours_bwd']:.0f} | "
                     f"{r['flash_bwd']:.0f} | {r['cudnn_bwd']:.0f} | {r['ours_bwd'] / r['flash_bwd']:.2f} |")
    table = "\n".join(lines)
    with open(os.path.join(out_dir, "bench.md"), "w") as f:
        f.write("TFLOP/s, bf16, do_bench medians (min of two runs for ours)\n\n" + table + "\n")
        for r in rows:
            f.write(repr(r) + "\n")
    print("\nTFLOP/s (bf16, B*S=16k, Hq*D=2048)\n" + table, flush=True)
    return rows
