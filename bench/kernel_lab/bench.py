"""Timing of the golden kernels vs PyTorch SDPA (flash, cuDNN) in one process (see lab.py); the golden configs of
one length are timed in interleaved rounds (time_interleaved).
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


class LabInputs:
    """One config's tensors at length S (16k tokens): bf16 [16k / S, Hq, S, D] for q, k, v and dO alike (GQA and f16
    configs are timed as their Hq and D in bf16), the outputs, and the backward's scratch. The forward runs once
    here, so that the backward reads a real O and lse (never time on garbage)."""

    def __init__(self, kern, config, S):
        d, hq = config[0], config[1]
        self.kern, self.B = kern, 16384 // S
        self.q, self.k, self.v, self.do = (torch.randn(self.B, hq, S, d, device="cuda", dtype=torch.bfloat16)
                                           for _ in range(4))
        self.o, self.dq, self.dk, self.dv = (torch.empty_like(self.q) for _ in range(4))
        self.lse = torch.empty(self.B, hq, S, device="cuda", dtype=torch.float32)
        self.delta = torch.empty_like(self.lse)
        self.dq_accum = torch.empty(self.B, hq, S, d, device="cuda", dtype=torch.float32)
        self.sem = torch.empty(self.B, hq, (S + 63) // 64, device="cuda", dtype=torch.int32)
        self.forward()

    def forward(self):
        self.kern.forward(self.q, self.k, self.v, self.o, self.lse)

    def backward(self):
        self.kern.backward(self.q, self.k, self.v, self.o, self.do, self.lse, self.delta, self.dq_accum, self.dq,
                           self.dk, self.dv, self.sem)


def time_interleaved(calls, rounds):
    """{name: [ms per round]}: each round times every call once (do_bench median), the order reversed every other
    round, so that a drift over the run (the clocks settling) does not favour whichever config comes first (session
    48: timed one after another, the second of an A/B read 2-5 % slower at 4k-16k)."""
    times = {name: [] for name in calls}
    for r in range(rounds):
        for name in (list(calls) if r % 2 == 0 else list(reversed(calls))):
            times[name].append(do_bench(calls[name], warmup=25, rep=100, return_mode="median"))
    return times


def peer_times(setup, causal):
    """(fwd ms, bwd ms) of SDPA's flash and cuDNN backends on the setup's inputs; NaN for a missing backend."""
    peers = {}
    for pname, backend in (("flash", SDPBackend.FLASH_ATTENTION), ("cudnn", SDPBackend.CUDNN_ATTENTION)):
        qg, kg, vg = (t.detach().clone().requires_grad_(True) for t in (setup.q, setup.k, setup.v))
        try:
            with sdpa_kernel(backend):
                f = lambda: F.scaled_dot_product_attention(qg, kg, vg, is_causal=bool(causal))
                tf = do_bench(f, warmup=25, rep=100, return_mode="median")
                def fb():
                    out = F.scaled_dot_product_attention(qg, kg, vg, is_causal=bool(causal))
                    out.backward(setup.do)
                tfb = do_bench(fb, warmup=25, rep=100, return_mode="median", grad_to_none=[qg, kg, vg])
            peers[pname] = (tf, tfb - tf)
        except Exception as e:  # a missing backend is reported, not fatal
            print(f"{pname} unavailable: {e}")
            peers[pname] = (float("nan"), float("nan"))
    return peers


def run_bench(libs, configs, names, out_dir, seqlens=(1024, 4096, 16384), rounds=4):
    """Every config at every length: ours interleaved across the configs (`rounds` rounds, the min kept), the peers
    once a (D, S, causal) shape."""
    by_name = {name: [] for name in names}
    peer_cache = {}  # (D, S, causal) -> peers: measured once per shape
    torch.manual_seed(0)
    for S in seqlens:
        setups = {name: LabInputs(Kernels(libs[("fwd", name)], libs.get(("bwd", name))), configs[name], S)
                  for name in names}
        torch.cuda.synchronize()
        fwd = time_interleaved({n: st.forward for n, st in setups.items()}, rounds)
        bwd = time_interleaved({n: st.backward for n, st in setups.items() if configs[n][8]}, rounds)
        for name, st in setups.items():
            d, hq, group, f16, causal, window, softcap, _, has_bwd = configs[name]
            peers = peer_cache.get((d, S, causal))
            if peers is None:
                peers = peer_cache[(d, S, causal)] = peer_times(st, causal)
            ours_f, ours_b = fwd[name], bwd.get(name, [float("nan")] * 2)
            flops = 4 * st.B * hq * S * S * d / (2 if causal else 1)
            row = dict(name=name, D=d, S=S, B=st.B, H=hq, causal=causal,
                       ours_fwd_ms=min(ours_f), ours_fwd_ms_spread=max(ours_f) - min(ours_f),
                       ours_bwd_ms=min(ours_b), ours_bwd_ms_spread=max(ours_b) - min(ours_b),
                       ours_fwd=tflops(flops, min(ours_f)), ours_bwd=tflops(2.5 * flops, min(ours_b)),
                       flash_fwd=tflops(flops, peers["flash"][0]), flash_bwd=tflops(2.5 * flops, peers["flash"][1]),
                       cudnn_fwd=tflops(flops, peers["cudnn"][0]), cudnn_bwd=tflops(2.5 * flops, peers["cudnn"][1]))
            by_name[name].append(row)
            print(row, flush=True)
        del setups
        torch.cuda.empty_cache()
    rows = [r for name in names for r in by_name[name]]
    hdr = ("| config | D | S | causal | ours fwd | FA2 fwd | cuDNN fwd | ours/FA2 | ours bwd | FA2 bwd | cuDNN bwd | ours/FA2 |\n"
           "|---|---|---|---|---|---|---|---|---|---|---|---|")
    lines = [hdr]
    for r in rows:
        lines.append(f"| {r['name']} | {r['D']} | {r['S']} | {'yes' if r['causal'] else 'no'} | {r['ours_fwd']:.0f} | {r['flash_fwd']:.0f} | "
                     f"{r['cudnn_fwd']:.0f} | {r['ours_fwd'] / r['flash_fwd']:.2f} | {r['ours_bwd']:.0f} | "
                     f"{r['flash_bwd']:.0f} | {r['cudnn_bwd']:.0f} | {r['ours_bwd'] / r['flash_bwd']:.2f} |")
    table = "\n".join(lines)
    with open(os.path.join(out_dir, "bench.md"), "w") as f:
        f.write("TFLOP/s, bf16, do_bench medians (ours: the min of %d interleaved rounds)\n\n" % rounds + table + "\n")
        for r in rows:
            f.write(repr(r) + "\n")
    print("\nTFLOP/s (bf16, B*S=16k, Hq*D=2048)\n" + table, flush=True)
    return rows
