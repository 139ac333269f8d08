"""Kernel lab for a mixture of experts' expert GEMMs (issue #23): the grouped form of the device library's
warp-specialised persistent GEMM (gemm_ws_grouped) over rows permuted by expert, each expert's rows from a multiple
of 128. Builds each config with nvcc, checks it against float64 (experts with no row, one row, ragged row counts,
ragged N and K, blocks that take many tiles across experts; rows past the blocks in use left unwritten), and times
the expert GEMMs of a Mixtral-like and a fine-grained layer against a PyTorch loop over the experts and
torch._grouped_mm in the same process. One device call:
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


def check(name, g):
    import torch
    dtype = torch.bfloat16
    gen = torch.Generator(device="cuda").manual_seed(1)
    failures = []
    # (counts per expert, N, K, max_blocks): experts without rows and with one; ragged N and K; many tiles a block.
    cases = [([0, 1, 130, 257, 64], 200, 136, 0), ([300], 264, 64, 0), ([5, 0, 0, 700, 128, 129], 128, 520, 3),
             ([1000, 17, 0, 385], 512, 1000, 1), ([1] * 9, 8, 8, 0)]
    for counts, N, K, max_blocks in cases:
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


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--out", default="/tmp/moe_lab")
    p.add_argument("--only", default="")
    p.add_argument("--skip-bench", action="store_true")
    args = p.parse_args()
    os.makedirs(args.out, exist_ok=True)
    work = os.path.join(args.out, "build")
    os.makedirs(work, exist_ok=True)
    names = [n for n in CONFIGS if not args.only or n in args.only.split(",")]
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
        failures += check(n, g)
    print(f"checks: {len(failures)} failures {failures}", flush=True)
    if failures:
        status = 1
    if not args.skip_bench:
        bench({n: g for n, g in gemms.items() if not any(f[0] == n for f in failures)}, args.out)
    return status


if __name__ == "__main__":
    sys.exit(main())
