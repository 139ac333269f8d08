"""Kernel lab for a mixture of experts' expert GEMMs (issue #23): the grouped form of the device library's
warp-specialised persistent GEMM (gemm_ws_grouped) over rows permuted by expert, each expert's rows from a multiple
of 128. Builds each config with nvcc, checks it against float64 (experts with no row, one row, ragged row counts,
ragged N and K, blocks that take many tiles across experts; rows past the blocks in use left unwritten), and times
the expert GEMMs of a Mixtral-like and a fine-grained layer against a PyTorch loop over the experts and
torch._grouped_mm in the same process. Then the whole forward layer from the device library (launch_moe.cu: router
logits by the ws GEMM, moe_routing.cuh's select / plan / permute / combine around the grouped GEMMs): checked against
float64 (logits, the top-k choice and weights on the kernel's logits, the output; softmax and sigmoid gating, with
and without renormalisation) and timed against PyTorch's compositions of the same layer. One device call:
    python3 bench/kernel_lab/moe_lab.py --out $OUT
Exit status non-zero if a build or a check fails."""
import argparse
import concurrent.futures
import ctypes
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
GROUP_ROWS = 128  # each expert's rows start at a multiple of this (gemm_ws.cuh, kGroupRows)

# name -> nvcc -D flags (launch_grouped_gemm.cu).
CONFIGS = {
    "up_gated": ["GEMM_GATED", "GEMM_BLOCK_N=128"],
    "up_gated_s3": ["GEMM_GATED", "GEMM_BLOCK_N=128", "GEMM_STAGES=3"],
    "up_gated_save": ["GEMM_GATED", "GEMM_BLOCK_N=128", "GEMM_SAVE_PRE"],
    "down256": [],
    "down128": ["GEMM_BLOCK_N=128"],
    "down256_pp": ["GEMM_PINGPONG"],
    "tb256": ["GEMM_TRANS_B"],
}

# (label, tokens, experts, top_k, d, h): the layers of issue #23.
LAYERS = [
    ("Mixtral-like", 16384, 8, 2, 4096, 14336),
    ("fine-grained", 16384, 64, 6, 2048, 1408),
]


def build(name, flags, work):
    out = os.path.join(work, f"grouped_{name}.so")
    cmd = ["nvcc", "-std=c++17", "-gencode", "arch=compute_90a,code=sm_90a", "-O3", "-Xptxas", "-v", "-shared",
           "-Xcompiler", "-fPIC", "-I" + os.path.join(ROOT, "runtime/device/include"), "-I" + HERE,
           *[f"-D{f}" for f in flags], os.path.join(HERE, "launch_grouped_gemm.cu"), "-o", out]
    r = subprocess.run(cmd, capture_output=True, text=True)
    log = r.stdout + r.stderr
    ptxas = [l.strip() for l in log.splitlines() if "registers" in l or "spill" in l]
    return name, (out if r.returncode == 0 else None), log if r.returncode else "\n".join(ptxas)


class GroupedGemm:
    def __init__(self, path, flags):
        self.lib = ctypes.CDLL(path)
        self.lib.flashc_lab_grouped_gemm.restype = ctypes.c_int
        self.lib.flashc_lab_grouped_gemm.argtypes = [ctypes.c_void_p] * 7 + [ctypes.c_longlong] * 4 + [
            ctypes.c_float, ctypes.c_int, ctypes.c_void_p]
        self.gated = "GEMM_GATED" in flags
        self.tb = "GEMM_TRANS_B" in flags
        self.save = "GEMM_SAVE_PRE" in flags

    def __call__(self, a, b, b2, c, groups, N, K, pre=None, pre2=None, alpha=1.0, max_blocks=0):
        import torch
        ptr = lambda t: t.data_ptr() if t is not None else None
        rc = self.lib.flashc_lab_grouped_gemm(ptr(a), ptr(b), ptr(b2), ptr(c), ptr(pre), ptr(pre2), ptr(groups),
                                              a.shape[0], N, K, b.shape[0], alpha, max_blocks,
                                              torch.cuda.current_stream().cuda_stream)
        if rc != 0:
            raise RuntimeError(f"flashc_lab_grouped_gemm returned {rc}")


class Routing:
    """Rows grouped by expert: `counts[e]` rows of expert e, exact (`offsets`, the peers' layout) and padded to
    GROUP_ROWS (`padded`, the kernel's), with the kernel's row-block table `groups`."""

    def __init__(self, counts):
        import torch
        self.counts = [int(c) for c in counts]
        self.offsets, self.padded = [0], [0]
        for c in self.counts:
            self.offsets.append(self.offsets[-1] + c)
            self.padded.append(self.padded[-1] + (c + GROUP_ROWS - 1) // GROUP_ROWS * GROUP_ROWS)
        self.rows, self.padded_rows = self.offsets[-1], self.padded[-1]
        blocks = [e for e, c in enumerate(self.counts) for _ in range((c + GROUP_ROWS - 1) // GROUP_ROWS)]
        self.groups = torch.tensor([len(blocks)] + blocks, dtype=torch.int32, device="cuda")
        self.offs = torch.tensor(self.offsets[1:], dtype=torch.int32, device="cuda")  # torch._grouped_mm's ends

    @staticmethod
    def of_tokens(tokens, experts, top_k, gen):
        """Top-k of random router logits: the counts a real router gives at initialisation."""
        import torch
        logits = torch.randn(tokens, experts, device="cuda", generator=gen)
        ids = logits.topk(top_k, dim=1).indices.flatten()
        return Routing(torch.bincount(ids, minlength=experts).tolist())

    def pad(self, x, extra_blocks=0):
        """x [rows, K] exact -> the padded layout (padding rows zero), `extra_blocks` blocks of NaN past them."""
        import torch
        out = torch.zeros(self.padded_rows + extra_blocks * GROUP_ROWS, x.shape[1], device=x.device, dtype=x.dtype)
        for e, c in enumerate(self.counts):
            out[self.padded[e]:self.padded[e] + c] = x[self.offsets[e]:self.offsets[e] + c]
        if extra_blocks:
            out[self.padded_rows:] = float("nan")
        return out

    def unpad(self, y):
        import torch
        return torch.cat([y[self.padded[e]:self.padded[e] + c] for e, c in enumerate(self.counts)])


def silu(x):
    import torch
    return torch.nn.functional.silu(x)


def reference(g, routing, a, b, b2, dtype):
    """float64 result and the same product in the dtype by PyTorch (the tolerance's yardstick), exact rows."""
    import torch
    want, peer = [], []
    for e, c in enumerate(routing.counts):
        x = a[routing.offsets[e]:routing.offsets[e] + c]
        w = b[e].t() if g.tb else b[e]
        if g.gated:
            want.append(silu(x.double() @ w.double()) * (x.double() @ b2[e].double()))
            peer.append((silu((x @ w).float()) * (x @ b2[e]).float()).to(dtype).double())
        else:
            want.append(x.double() @ w.double())
            peer.append((x @ w).double())
    return torch.cat(want), torch.cat(peer)


def check(name, g, small=False):
    import torch
    dtype = torch.bfloat16
    gen = torch.Generator(device="cuda").manual_seed(1)
    failures = []
    # (counts per expert, N, K, max_blocks): experts without rows and with one; ragged N and K; many tiles a block.
    cases = [([0, 1, 130, 257, 64], 200, 136, 0), ([300], 264, 64, 0), ([5, 0, 0, 700, 128, 129], 128, 520, 3),
             ([1000, 17, 0, 385], 512, 1000, 1), ([1] * 9, 8, 8, 0)]
    for counts, N, K, max_blocks in cases[:3] if small else cases:
        r = Routing(counts)
        E = len(counts)
        a = torch.randn(r.rows, K, device="cuda", dtype=dtype, generator=gen)
        shape = (E, N, K) if g.tb else (E, K, N)
        b = torch.randn(shape, device="cuda", dtype=dtype, generator=gen) / K ** 0.5
        b2 = torch.randn(shape, device="cuda", dtype=dtype, generator=gen) / K ** 0.5 if g.gated else None
        # Two blocks past the padded rows: never in use, they must stay NaN.
        c = torch.full((r.padded_rows + 2 * GROUP_ROWS, N), float("nan"), device="cuda", dtype=dtype)
        pre = torch.full_like(c, float("nan")) if g.save else None
        pre2 = torch.full_like(c, float("nan")) if g.save and g.gated else None
        g(r.pad(a, extra_blocks=2), b, b2, c, r.groups, N, K, pre=pre, pre2=pre2, max_blocks=max_blocks)
        torch.cuda.synchronize()
        want, peer = reference(g, r, a, b, b2, dtype)
        tol = 2 * (peer - want).abs().max().item() + 1e-2 if r.rows else 0
        got = r.unpad(c).double()
        err = (got - want).abs().max().item() if r.rows else 0.0
        untouched = torch.isnan(c[r.padded_rows:]).all().item()
        ok = err <= tol and not torch.isnan(got).any().item() and untouched
        if g.save and r.rows:  # the saved pre-activations: g (and u) as products
            for what, saved, w in [("pre", pre, b)] + ([("pre2", pre2, b2)] if g.gated else []):
                ref = torch.cat([a[r.offsets[e]:r.offsets[e] + n].double() @ w[e].double() for e, n in enumerate(counts)])
                perr = (r.unpad(saved).double() - ref).abs().max().item()
                ok = ok and perr <= tol
                err = max(err, perr)
        print(f"  {name} counts={counts} N={N} K={K} blocks={max_blocks or 'SMs'}: max err {err:.3g} (tol {tol:.3g})"
              f"{'' if untouched else ' WROTE PAST THE BLOCKS IN USE'} {'ok' if ok else 'FAIL'}", flush=True)
        if not ok:
            failures.append((name, tuple(counts), N, K))
    return failures


def bench(gemms, out):
    import torch
    from triton.testing import do_bench
    bench_ms = lambda f: do_bench(f, warmup=25, rep=300, return_mode="median")
    gen = torch.Generator(device="cuda").manual_seed(0)
    rows = []
    for label, tokens, E, k, d, h in LAYERS:
        r = Routing.of_tokens(tokens, E, k, gen)
        dtype = torch.bfloat16
        x = torch.randn(r.rows, d, device="cuda", dtype=dtype, generator=gen)
        w_gate = torch.randn(E, d, h, device="cuda", dtype=dtype, generator=gen) / d ** 0.5
        w_up = torch.randn(E, d, h, device="cuda", dtype=dtype, generator=gen) / d ** 0.5
        w_gu = torch.cat([w_gate, w_up], dim=2)  # the peers' one up GEMM of both weights
        w_down = torch.randn(E, h, d, device="cuda", dtype=dtype, generator=gen) / h ** 0.5
        hid = torch.randn(r.rows, h, device="cuda", dtype=dtype, generator=gen)
        up_flops, down_flops = 2 * r.rows * d * 2 * h, 2 * r.rows * h * d
        row = {"layer": label, "tokens": tokens, "experts": E, "top_k": k, "d": d, "h": h, "rows": r.rows,
               "padded_rows": r.padded_rows, "min_rows": min(r.counts), "max_rows": max(r.counts)}
        xp, hp = r.pad(x), r.pad(hid)
        for name, g in gemms.items():
            if g.tb or g.save:
                continue
            if g.gated:
                c = torch.empty(r.padded_rows, h, device="cuda", dtype=dtype)
                row[name] = up_flops / bench_ms(lambda: g(xp, w_gate, w_up, c, r.groups, h, d)) / 1e9
            else:
                c = torch.empty(r.padded_rows, d, device="cuda", dtype=dtype)
                row[name] = down_flops / bench_ms(lambda: g(hp, w_down, None, c, r.groups, d, h)) / 1e9
        spans = [(r.offsets[e], r.offsets[e + 1]) for e in range(E)]

        def loop_up(act=True):
            for e, (s, t) in enumerate(spans):
                gu = x[s:t] @ w_gu[e]
                if act:
                    silu(gu[:, :h]) * gu[:, h:]

        def loop_down():
            for e, (s, t) in enumerate(spans):
                hid[s:t] @ w_down[e]

        def grouped_up(act=True):
            gu = torch._grouped_mm(x, w_gu, offs=r.offs)
            if act:
                silu(gu[:, :h]) * gu[:, h:]

        row["loop_up"] = up_flops / bench_ms(loop_up) / 1e9
        row["loop_up_gemm"] = up_flops / bench_ms(lambda: loop_up(False)) / 1e9
        row["loop_down"] = down_flops / bench_ms(loop_down) / 1e9
        try:
            row["grouped_mm_up"] = up_flops / bench_ms(grouped_up) / 1e9
            row["grouped_mm_up_gemm"] = up_flops / bench_ms(lambda: grouped_up(False)) / 1e9
            row["grouped_mm_down"] = down_flops / bench_ms(lambda: torch._grouped_mm(hid, w_down, offs=r.offs)) / 1e9
        except (AttributeError, RuntimeError) as e:
            row["grouped_mm_error"] = str(e)[:200]
        # The two GEMMs together (time-weighted): each side's best form.
        total = up_flops + down_flops
        best = lambda keys: max((row[k] for k in keys if k in row), default=float("nan"))
        ours_up, ours_down = best(["up_gated", "up_gated_s3"]), best(["down256", "down128", "down256_pp"])
        row["flashc_total"] = total / (up_flops / ours_up + down_flops / ours_down)
        for peer in ("loop", "grouped_mm"):
            if f"{peer}_up" in row:
                row[f"{peer}_total"] = total / (up_flops / row[f"{peer}_up"] + down_flops / row[f"{peer}_down"])
        print(json.dumps(row), flush=True)
        rows.append(row)
    cols = ["up_gated", "up_gated_s3", "loop_up", "grouped_mm_up", "loop_up_gemm", "grouped_mm_up_gemm", "down256",
            "down128", "down256_pp", "loop_down", "grouped_mm_down", "flashc_total", "loop_total", "grouped_mm_total"]
    table = ("| layer | rows (padded) | " + " | ".join(cols) + " | flashc / best peer |\n|---|---|" +
             "---|" * (len(cols) + 1) + "\n")
    for row in rows:
        peer = max((row[k] for k in ("loop_total", "grouped_mm_total") if k in row), default=float("nan"))
        table += (f"| {row['layer']} | {row['rows']} ({row['padded_rows']}) | " +
                  " | ".join(f"{row[c]:.0f}" if c in row else "" for c in cols) +
                  f" | {row['flashc_total'] / peer:.2f} |\n")
    print(table)
    with open(os.path.join(out, "moe_lab.json"), "w") as f:
        json.dump(rows, f, indent=1)
    with open(os.path.join(out, "moe_lab.md"), "w") as f:
        f.write("TFLOP/s on the routed rows (T * top_k), bf16, triton do_bench medians (L2 flushed). flashc: the grouped "
                "ws GEMM on rows padded to 128 an expert, the gated up projection with silu(g) * u in its epilogue. "
                "Peers: a loop over the experts of torch.matmul on one [d, 2h] weight, then silu(g) * u; "
                "torch._grouped_mm likewise; *_gemm without the activation.\n\n" + table)


# ---------------------------------------------------------------- the whole forward layer (launch_moe.cu)

def build_layer(work):
    out = os.path.join(work, "moe_layer.so")
    cmd = ["nvcc", "-std=c++17", "-gencode", "arch=compute_90a,code=sm_90a", "-O3", "-Xptxas", "-v", "-shared",
           "-Xcompiler", "-fPIC", "-I" + os.path.join(ROOT, "runtime/device/include"), "-I" + HERE,
           os.path.join(HERE, "launch_moe.cu"), "-o", out]
    r = subprocess.run(cmd, capture_output=True, text=True)
    spills = [l.strip() for l in (r.stdout + r.stderr).splitlines() if "spill" in l and not l.strip().startswith("0 bytes")]
    return (out if r.returncode == 0 else None), (r.stdout + r.stderr if r.returncode else "\n".join(spills) or "no spills")


class MoeLayer:
    """flashc's forward of a gated (SiLU) mixture-of-experts layer, its workspaces allocated per shape."""

    def __init__(self, path):
        self.lib = ctypes.CDLL(path)
        self.lib.flashc_lab_moe_forward.restype = ctypes.c_int
        self.lib.flashc_lab_moe_forward.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.POINTER(ctypes.c_longlong),
                                                    ctypes.c_int, ctypes.c_int, ctypes.c_int,
                                                    ctypes.POINTER(ctypes.c_void_p), ctypes.c_void_p]
        self.lib.flashc_lab_moe_backward.restype = ctypes.c_int
        self.lib.flashc_lab_moe_backward.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.POINTER(ctypes.c_longlong),
                                                     ctypes.c_int, ctypes.c_int, ctypes.POINTER(ctypes.c_void_p),
                                                     ctypes.POINTER(ctypes.c_void_p), ctypes.c_void_p]
        self.lib.flashc_lab_moe_capacity.restype = ctypes.c_longlong
        self.lib.flashc_lab_moe_capacity.argtypes = [ctypes.c_longlong, ctypes.c_int]

    def prepare(self, x, router, w_gate, w_up, w_down, top_k):
        import torch
        T, d = x.shape
        E, _, h = w_gate.shape
        d_out = w_down.shape[2]
        cap = self.lib.flashc_lab_moe_capacity(T * top_k, E)
        dev, bf = x.device, torch.bfloat16
        i32 = lambda n: torch.zeros(n, dtype=torch.int32, device=dev)
        self.ws = {"y": torch.empty(T, d_out, dtype=bf, device=dev), "logits": torch.empty(T, E, dtype=bf, device=dev),
                   "counts": i32(E), "ids": i32(T * top_k), "weights": torch.zeros(T * top_k, device=dev),
                   "ranks": i32(T * top_k), "offsets": i32(E + 1), "groups": i32(1 + cap // GROUP_ROWS),
                   "permuted": torch.full((cap, d), float("nan"), dtype=bf, device=dev),
                   "hidden": torch.empty(cap, h, dtype=bf, device=dev),
                   "expert_out": torch.empty(cap, d_out, dtype=bf, device=dev)}
        order = [x, router, w_gate, w_up, w_down] + [self.ws[n] for n in (
            "y", "logits", "counts", "ids", "weights", "ranks", "offsets", "groups", "permuted", "hidden", "expert_out")]
        self.ptrs = (ctypes.c_void_p * len(order))(*[t.data_ptr() for t in order])
        self.sizes = (ctypes.c_longlong * 6)(T, d, h, d_out, E, top_k)
        self.keep = order
        self.grads = None

    def prepare_backward(self):
        """The training forward's saved g and u, the backward's outputs and workspaces."""
        import torch
        x, router, w_gate, w_up, w_down = self.keep[:5]
        T, d = x.shape
        E, _, h = w_gate.shape
        d_out = w_down.shape[2]
        cap, k = self.ws["permuted"].shape[0], self.sizes[5]
        bf, dev = torch.bfloat16, x.device
        self.saved = [torch.empty(cap, h, dtype=bf, device=dev) for _ in range(2)]
        g = {"dy": torch.empty(T, d_out, dtype=bf, device=dev), "dx": torch.empty(T, d, dtype=bf, device=dev),
             "d_router": torch.empty(d, E, dtype=bf, device=dev), "d_w_gate": torch.empty_like(w_gate),
             "d_w_up": torch.empty_like(w_up), "d_w_down": torch.empty_like(w_down),
             "d_expert_out": torch.empty(cap, d_out, dtype=bf, device=dev),
             "d_weights": torch.empty(T * k, device=dev), "dh": torch.empty(cap, h, dtype=bf, device=dev),
             "dg": torch.empty(cap, h, dtype=bf, device=dev), "du": torch.empty(cap, h, dtype=bf, device=dev),
             "dx_perm": torch.empty(cap, d, dtype=bf, device=dev), "d_logits": torch.empty(T, E, dtype=bf, device=dev),
             "dx_router": torch.empty(T, d, dtype=bf, device=dev)}
        self.grads = g
        self.saved_ptrs = (ctypes.c_void_p * 2)(*[t.data_ptr() for t in self.saved])
        self.grad_ptrs = (ctypes.c_void_p * len(g))(*[t.data_ptr() for t in g.values()])

    def __call__(self, sigmoid=False, renormalize=False, stop_after=0, training=False):
        import torch
        rc = self.lib.flashc_lab_moe_forward(self.ptrs, self.sizes, int(sigmoid), int(renormalize), stop_after,
                                             self.saved_ptrs if training else None,
                                             torch.cuda.current_stream().cuda_stream)
        if rc != 0:
            raise RuntimeError(f"flashc_lab_moe_forward returned {rc}")
        return self.ws["y"]

    def backward(self, sigmoid=False, renormalize=False):
        """After a training forward; dy in self.grads["dy"]."""
        import torch
        rc = self.lib.flashc_lab_moe_backward(self.ptrs, self.sizes, int(sigmoid), int(renormalize), self.saved_ptrs,
                                              self.grad_ptrs, torch.cuda.current_stream().cuda_stream)
        if rc != 0:
            raise RuntimeError(f"flashc_lab_moe_backward returned {rc}")
        return self.grads


def layer_weights(T, E, d, h, d_out, gen, logit_scale=1.0):
    import torch
    bf = torch.bfloat16
    x = torch.randn(T, d, device="cuda", dtype=bf, generator=gen)
    router = (torch.randn(d, E, device="cuda", generator=gen) * logit_scale / d ** 0.5).to(bf)
    w_gate = torch.randn(E, d, h, device="cuda", dtype=bf, generator=gen) / d ** 0.5
    w_up = torch.randn(E, d, h, device="cuda", dtype=bf, generator=gen) / d ** 0.5
    w_down = torch.randn(E, h, d_out, device="cuda", dtype=bf, generator=gen) / h ** 0.5
    return x, router, w_gate, w_up, w_down


def check_layer(layer, small=False):
    """Against float64: the logits; the choice and weights from the kernel's own (bf16) logits; the output."""
    import torch
    gen = torch.Generator(device="cuda").manual_seed(3)
    failures = []
    cases = [(300, 8, 2, 136, 200, 72, False, True), (257, 16, 4, 64, 96, 64, True, True), (1, 8, 8, 8, 8, 8, False, False),
             (1000, 64, 6, 128, 136, 128, False, False), (77, 256, 8, 72, 64, 16, True, False)]
    for T, E, k, d, h, d_out, sigmoid, renorm in cases[:2] if small else cases:
        x, router, w_gate, w_up, w_down = layer_weights(T, E, d, h, d_out, gen)
        layer.prepare(x, router, w_gate, w_up, w_down, k)
        y = layer(sigmoid, renorm).double()
        torch.cuda.synchronize()
        ws = layer.ws
        logits64 = x.double() @ router.double()
        peer_logits = (x @ router).double()
        logit_err = (ws["logits"].double() - logits64).abs().max().item()
        logit_tol = 2 * (peer_logits - logits64).abs().max().item() + 1e-3
        got = ws["logits"].double()
        scores = torch.sigmoid(got) if sigmoid else torch.softmax(got, dim=1)
        top, ids = torch.sort(scores, dim=1, descending=True, stable=True)
        top, ids = top[:, :k], ids[:, :k]
        weights = top / top.sum(1, keepdim=True) if renorm else top
        ids_ok = torch.equal(ids.int().flatten(), ws["ids"])
        w_err = (ws["weights"].double() - weights.flatten()).abs().max().item()
        counts_ok = torch.equal(ws["counts"].long(), torch.bincount(ids.flatten(), minlength=E))
        # The expert FFNs in float64, and in bf16 as PyTorch computes them (the tolerance's yardstick).
        y64 = torch.zeros(T, d_out, dtype=torch.float64, device="cuda")
        peer = torch.zeros_like(y64)
        for e in range(E):
            tok, slot = (ids == e).nonzero(as_tuple=True)
            if tok.numel() == 0:
                continue
            xe = x[tok]
            f64 = (torch.nn.functional.silu(xe.double() @ w_gate[e].double()) * (xe.double() @ w_up[e].double())) @ w_down[e].double()
            hid = (torch.nn.functional.silu((xe @ w_gate[e]).float()) * (xe @ w_up[e]).float()).to(x.dtype)
            y64.index_add_(0, tok, weights[tok, slot, None] * f64)
            peer.index_add_(0, tok, weights[tok, slot, None] * (hid @ w_down[e]).double())
        peer = peer.to(x.dtype).double()
        tol = 2 * (peer - y64).abs().max().item() + 1e-2
        err = (y - y64).abs().max().item()
        offsets = ws["offsets"].tolist()
        pad_ok = all(ws["permuted"][offsets[e] + c:offsets[e + 1]].eq(0).all().item()
                     for e, c in enumerate(ws["counts"].tolist()))
        ok = (logit_err <= logit_tol and ids_ok and w_err <= 1e-5 and counts_ok and err <= tol and pad_ok
              and not torch.isnan(y).any().item())
        print(f"  layer T={T} E={E} k={k} d={d} h={h} d_out={d_out} {'sigmoid' if sigmoid else 'softmax'}"
              f"{' renorm' if renorm else ''}: logits {logit_err:.3g} (tol {logit_tol:.3g}), choice "
              f"{'same' if ids_ok else 'DIFFERS'}, weights {w_err:.2g}, counts {'ok' if counts_ok else 'BAD'}, "
              f"padding {'zero' if pad_ok else 'NOT ZERO'}, y {err:.3g} (tol {tol:.3g}) {'ok' if ok else 'FAIL'}", flush=True)
        if not ok:
            failures.append(("layer", T, E, k))
    return failures


def moe_fixed_choice(x, router, w_gate, w_up, w_down, ids, sigmoid, renorm):
    """The layer with the experts' choice held fixed (ids [T, k]), differentiable; float64 inputs give the reference,
    16-bit ones PyTorch's computation (scores in f32)."""
    import torch
    l = (x @ router).to(torch.float64 if x.dtype == torch.float64 else torch.float32)
    scores = torch.sigmoid(l) if sigmoid else torch.softmax(l, dim=1)
    w = scores.gather(1, ids)
    if renorm:
        w = w / w.sum(1, keepdim=True)
    y = torch.zeros(x.shape[0], w_down.shape[2], dtype=x.dtype, device=x.device)
    for e in range(w_gate.shape[0]):
        tok, slot = (ids == e).nonzero(as_tuple=True)
        if tok.numel() == 0:
            continue
        xe = x[tok]
        he = torch.nn.functional.silu(xe @ w_gate[e]) * (xe @ w_up[e])
        y = y.index_add(0, tok, w[tok, slot, None].to(x.dtype) * (he @ w_down[e]))
    return y


def check_layer_backward(layer, small=False):
    """The backward against float64 autograd of the layer with the kernel's choice of experts."""
    import torch
    gen = torch.Generator(device="cuda").manual_seed(5)
    failures = []
    cases = [(300, 8, 2, 136, 200, 72, False, True), (257, 16, 4, 64, 96, 64, True, True),
             (1000, 64, 6, 128, 136, 128, False, False), (77, 32, 8, 72, 64, 16, True, False)]
    for T, E, k, d, h, d_out, sigmoid, renorm in cases[:2] if small else cases:
        x, router, w_gate, w_up, w_down = layer_weights(T, E, d, h, d_out, gen)
        layer.prepare(x, router, w_gate, w_up, w_down, k)
        layer.prepare_backward()
        dy = torch.randn(T, d_out, device="cuda", dtype=torch.bfloat16, generator=gen)
        layer.grads["dy"].copy_(dy)
        layer(sigmoid, renorm, training=True)
        grads = layer.backward(sigmoid, renorm)
        torch.cuda.synchronize()
        ids = layer.ws["ids"].view(T, k).long()
        results = {}
        for name, dtype in (("ref", torch.float64), ("peer", torch.bfloat16)):
            leaves = [t.detach().to(dtype).requires_grad_() for t in (x, router, w_gate, w_up, w_down)]
            y = moe_fixed_choice(*leaves, ids, sigmoid, renorm)
            y.backward(dy.to(dtype))
            results[name] = [t.grad.double() for t in leaves]
        report, ok = [], True
        for i, what in enumerate(("dx", "d_router", "d_w_gate", "d_w_up", "d_w_down")):
            ref, peer, got = results["ref"][i], results["peer"][i], grads[what].double()
            err = (got - ref).abs().max().item()
            tol = 2 * (peer - ref).abs().max().item() + 1e-3 * ref.abs().max().item()
            good = err <= tol and not torch.isnan(got).any().item()
            ok = ok and good
            report.append(f"{what} {err:.3g}/{tol:.3g}{'' if good else ' FAIL'}")
        print(f"  backward T={T} E={E} k={k} d={d} h={h} d_out={d_out} {'sigmoid' if sigmoid else 'softmax'}"
              f"{' renorm' if renorm else ''}: " + ", ".join(report) + (" ok" if ok else " FAIL"), flush=True)
        if not ok:
            failures.append(("backward", T, E, k))
    return failures


def torch_moe(x, router, w_gu, w_down, k, renorm, grouped):
    """PyTorch's composition of the layer: router, softmax, top-k, a sort by expert, the expert FFNs (one GEMM of
    both up weights, silu(g) * u, the down GEMM) by torch._grouped_mm or a loop, the weighted scatter-add back."""
    import torch
    T, E, h = x.shape[0], router.shape[1], w_down.shape[1]
    probs = (x @ router).float().softmax(dim=1)
    w, ids = probs.topk(k, dim=1)
    if renorm:
        w = w / w.sum(1, keepdim=True)
    flat = ids.flatten()
    order = flat.argsort(stable=True)
    token = order // k
    xs = x[token]
    counts = torch.bincount(flat, minlength=E)
    if grouped:
        offs = counts.cumsum(0).to(torch.int32)
        gu = torch._grouped_mm(xs, w_gu, offs=offs)
        ys = torch._grouped_mm(torch.nn.functional.silu(gu[:, :h]) * gu[:, h:], w_down, offs=offs)
    else:
        ends = counts.cumsum(0).tolist()  # (one host sync: the loop needs the counts)
        ys = torch.empty(xs.shape[0], w_down.shape[2], dtype=x.dtype, device=x.device)
        start = 0
        for e, end in enumerate(ends):
            gu = xs[start:end] @ w_gu[e]
            ys[start:end] = (torch.nn.functional.silu(gu[:, :h]) * gu[:, h:]) @ w_down[e]
            start = end
    ys = ys * w.flatten()[order, None].to(ys.dtype)
    return torch.zeros(T, w_down.shape[2], dtype=x.dtype, device=x.device).index_add_(0, token, ys)


def bench_layer(layer, out):
    import torch
    from triton.testing import do_bench
    bench_ms = lambda f: do_bench(f, warmup=10, rep=300, return_mode="median")
    gen = torch.Generator(device="cuda").manual_seed(0)
    rows = []
    for (label, T, E, k, d, h), renorm in zip(LAYERS, (True, False)):
        x, router, w_gate, w_up, w_down = layer_weights(T, E, d, h, d, gen)
        w_gu = torch.cat([w_gate, w_up], dim=2)
        layer.prepare(x, router, w_gate, w_up, w_down, k)
        row = {"layer": label, "tokens": T, "experts": E, "top_k": k, "d": d, "h": h, "renormalize": renorm}
        row["flashc_ms"] = bench_ms(lambda: layer(False, renorm))
        row["flashc_routing_ms"] = bench_ms(lambda: layer(False, renorm, stop_after=1))
        row["flashc_to_up_ms"] = bench_ms(lambda: layer(False, renorm, stop_after=2))
        ref = torch_moe(x, router, w_gu, w_down, k, renorm, grouped=True)
        got = layer(False, renorm)
        row["max_diff_vs_torch"] = (got.float() - ref.float()).abs().max().item()
        for name, grouped in (("torch_grouped_mm_ms", True), ("torch_loop_ms", False)):
            try:
                row[name] = bench_ms(lambda: torch_moe(x, router, w_gu, w_down, k, renorm, grouped))
            except (AttributeError, RuntimeError) as e:
                row[name + "_error"] = str(e)[:200]
        # Training: flashc's forward (saving g and u) then backward, against PyTorch's autograd of its compositions.
        layer.prepare_backward()
        layer.grads["dy"].normal_(generator=gen)
        row["flashc_train_fwd_ms"] = bench_ms(lambda: layer(False, renorm, training=True))

        def flashc_step():
            layer(False, renorm, training=True)
            layer.backward(False, renorm)
        row["flashc_fwd_bwd_ms"] = bench_ms(flashc_step)
        leaves = [t.detach().requires_grad_() for t in (x, router, w_gu, w_down)]
        dy = layer.grads["dy"]
        for name, grouped in (("torch_grouped_mm", True), ("torch_loop", False)):
            def torch_step():
                for t in leaves:
                    t.grad = None
                torch_moe(*leaves, k, renorm, grouped).backward(dy)
            try:
                row[name + "_fwd_bwd_ms"] = bench_ms(torch_step)
            except (AttributeError, RuntimeError) as e:
                row[name + "_fwd_bwd_error"] = str(e)[:200]
        del leaves
        row["flashc_bwd_ms"] = row["flashc_fwd_bwd_ms"] - row["flashc_train_fwd_ms"]
        peer_step = min(row.get("torch_grouped_mm_fwd_bwd_ms", float("inf")), row.get("torch_loop_fwd_bwd_ms", float("inf")))
        row["step_speedup_vs_best_torch"] = peer_step / row["flashc_fwd_bwd_ms"]
        layer.grads = None
        routed = T * k
        row["gemm_tflop"] = (2 * routed * d * 2 * h + 2 * routed * h * d + 2 * T * d * E) / 1e12
        peer = min(row.get("torch_grouped_mm_ms", float("inf")), row.get("torch_loop_ms", float("inf")))
        row["speedup_vs_best_torch"] = peer / row["flashc_ms"]
        print(json.dumps(row), flush=True)
        rows.append(row)
    table = ("| layer | flashc ms (routing / to up / all) | torch grouped_mm ms | torch loop ms | flashc TFLOP/s | "
             "best torch / flashc | flashc fwd+bwd ms (train fwd / bwd) | torch grouped_mm fwd+bwd | torch loop fwd+bwd | "
             "best torch / flashc, fwd+bwd |\n|---|---|---|---|---|---|---|---|---|---|\n")
    nan = float("nan")
    for r in rows:
        table += (f"| {r['layer']} | {r['flashc_routing_ms']:.3f} / {r['flashc_to_up_ms']:.3f} / {r['flashc_ms']:.3f} | "
                  f"{r.get('torch_grouped_mm_ms', nan):.3f} | {r.get('torch_loop_ms', nan):.3f} | "
                  f"{r['gemm_tflop'] / r['flashc_ms'] * 1e3:.0f} | {r['speedup_vs_best_torch']:.2f} | "
                  f"{r['flashc_fwd_bwd_ms']:.3f} ({r['flashc_train_fwd_ms']:.3f} / {r['flashc_bwd_ms']:.3f}) | "
                  f"{r.get('torch_grouped_mm_fwd_bwd_ms', nan):.3f} | {r.get('torch_loop_fwd_bwd_ms', nan):.3f} | "
                  f"{r['step_speedup_vs_best_torch']:.2f} |\n")
    print(table)
    with open(os.path.join(out, "moe_layer.json"), "w") as f:
        json.dump(rows, f, indent=1)
    with open(os.path.join(out, "moe_layer.md"), "w") as f:
        f.write("Forward of the whole layer, bf16, 16k tokens, triton do_bench medians (L2 flushed). flashc: router GEMM, "
                "select, plan, permute, gated up and down grouped GEMMs, combine (8 launches + a memset). torch: the "
                "same layer composed of PyTorch ops (torch_moe in moe_lab.py), expert FFNs by torch._grouped_mm or a "
                "loop over experts; fwd+bwd: flashc's training forward (saving g and u) and backward against PyTorch "
                "autograd of its compositions (all inputs and weights require gradients).\n\n" + table)


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--out", default="/tmp/moe_lab")
    p.add_argument("--only", default="")
    p.add_argument("--skip-bench", action="store_true")
    p.add_argument("--skip-gemms", action="store_true", help="only the whole layer")
    p.add_argument("--skip-layer", action="store_true", help="only the grouped GEMMs")
    p.add_argument("--small", action="store_true", help="the first checks only, no timing (for compute-sanitizer)")
    args = p.parse_args()
    os.makedirs(args.out, exist_ok=True)
    work = os.path.join(args.out, "build")
    os.makedirs(work, exist_ok=True)
    names = [] if args.skip_gemms else [n for n in CONFIGS if not args.only or n in args.only.split(",")]
    status = 0
    libs = {}
    with concurrent.futures.ThreadPoolExecutor(max_workers=8) as pool:
        for name, path, log in pool.map(lambda n: build(n, CONFIGS[n], work), names):
            print(f"build {name}: {'ok' if path else 'FAILED'}\n{log}", flush=True)
            if path:
                libs[name] = path
            else:
                status = 1
    gemms = {n: GroupedGemm(libs[n], CONFIGS[n]) for n in names if n in libs}
    failures = []
    for n, g in gemms.items():
        failures += check(n, g, args.small)
    print(f"checks: {len(failures)} failures {failures}", flush=True)
    if failures:
        status = 1
    args.skip_bench |= args.small
    if not args.skip_bench and gemms:
        bench({n: g for n, g in gemms.items() if not any(f[0] == n for f in failures)}, args.out)
    if not args.skip_layer:
        path, log = build_layer(work)
        print(f"build moe_layer: {'ok' if path else 'FAILED'}\n{log}", flush=True)
        if not path:
            return 1
        layer = MoeLayer(path)
        layer_failures = check_layer(layer, args.small) + check_layer_backward(layer, args.small)
        print(f"layer checks: {len(layer_failures)} failures {layer_failures}", flush=True)
        if layer_failures:
            status = 1
        elif not args.skip_bench:
            bench_layer(layer, args.out)
    return status


if __name__ == "__main__":
    sys.exit(main())
