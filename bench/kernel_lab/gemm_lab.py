"""Kernel lab for the device library's warp-specialised persistent GEMM (gemm_ws.cuh): build each config with nvcc,
check it against float64 (ragged M, N, K; transposes; bias, activation, saved pre-activation; blocks that take many
tiles), and time it against cuBLAS (torch.matmul, with eager PyTorch's epilogue kernels where the config has one) in
the same process on the FFN's GEMM shapes. One device call:
    python3 bench/kernel_lab/gemm_lab.py --out $OUT
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

# name -> (nvcc -D flags); ta/tb: A stored [K, M] / B stored [N, K].
CONFIGS = {
    "nn256": [],
    "tb256": ["GEMM_TRANS_B"],
    "ta256": ["GEMM_TRANS_A"],
    "nn256_bias_gelu_save": ["GEMM_BIAS", "GEMM_ACT=GeluTanh", "GEMM_SAVE_PRE"],
    "nn256_bias_silu": ["GEMM_BIAS", "GEMM_ACT=Silu"],
    "nn128": ["GEMM_BLOCK_N=128"],
    "tb128": ["GEMM_TRANS_B", "GEMM_BLOCK_N=128"],
    "nn256_f16_bias_relu": ["GEMM_F16", "GEMM_BIAS", "GEMM_ACT=Relu"],
    "tb256_s3": ["GEMM_TRANS_B", "GEMM_STAGES=3"],
    "tb256_acc": ["GEMM_TRANS_B", "GEMM_ACCUMULATE", "GEMM_STAGES=3"],
    "tb128_acc": ["GEMM_TRANS_B", "GEMM_ACCUMULATE", "GEMM_BLOCK_N=128"],
    "tb256_gelu_grad": ["GEMM_TRANS_B", "GEMM_ACT=GeluTanh", "GEMM_ACT_GRAD", "GEMM_STAGES=3"],
    "tb128_gelu_grad": ["GEMM_TRANS_B", "GEMM_ACT=GeluTanh", "GEMM_ACT_GRAD", "GEMM_BLOCK_N=128"],
    # Ping-pong: 64-row tiles taken by the two consumer warpgroups in turn (one's epilogue under the other's
    # products); the read-tile forms keep 4 stages (a 64-row tile's A slot is half as large).
    "nn256_pp": ["GEMM_PINGPONG"],
    "tb256_pp": ["GEMM_TRANS_B", "GEMM_PINGPONG"],
    "ta256_pp": ["GEMM_TRANS_A", "GEMM_PINGPONG"],
    "nn256_bias_gelu_save_pp": ["GEMM_BIAS", "GEMM_ACT=GeluTanh", "GEMM_SAVE_PRE", "GEMM_PINGPONG"],
    "tb256_gelu_grad_pp": ["GEMM_TRANS_B", "GEMM_ACT=GeluTanh", "GEMM_ACT_GRAD", "GEMM_PINGPONG"],
    "tb256_acc_pp": ["GEMM_TRANS_B", "GEMM_ACCUMULATE", "GEMM_PINGPONG"],
    # The same two read-tile forms built against a baseline tree's headers (LAB_BASELINE: an A/B in one process).
    "tb256_gelu_grad_pp_base": ["GEMM_TRANS_B", "GEMM_ACT=GeluTanh", "GEMM_ACT_GRAD", "GEMM_PINGPONG", "LAB_BASELINE"],
    "tb256_acc_pp_base": ["GEMM_TRANS_B", "GEMM_ACCUMULATE", "GEMM_PINGPONG", "LAB_BASELINE"],
    # Resident B (gemm_resident_b.cuh): K <= 256, B's column block in shared memory over a block's run of tiles,
    # A's 64-row tiles (all of K) through a ring of GEMM_STAGES slots.
    "tb128_rb": ["GEMM_TRANS_B", "GEMM_BLOCK_N=128", "GEMM_RESIDENT_K=256", "GEMM_STAGES=3"],
    "nn128_rb_bias_gelu": ["GEMM_BLOCK_N=128", "GEMM_RESIDENT_K=256", "GEMM_STAGES=3", "GEMM_BIAS", "GEMM_ACT=GeluTanh"],
    "tb128_gelu_grad_rb": ["GEMM_TRANS_B", "GEMM_ACT=GeluTanh", "GEMM_ACT_GRAD", "GEMM_BLOCK_N=128",
                           "GEMM_RESIDENT_K=256", "GEMM_STAGES=3"],
    "tb128_gelu_grad_rb2": ["GEMM_TRANS_B", "GEMM_ACT=GeluTanh", "GEMM_ACT_GRAD", "GEMM_BLOCK_N=128",
                            "GEMM_RESIDENT_K=256", "GEMM_STAGES=2"],
    "tb256_gelu_grad_rb128": ["GEMM_TRANS_B", "GEMM_ACT=GeluTanh", "GEMM_ACT_GRAD", "GEMM_BLOCK_N=256",
                              "GEMM_RESIDENT_K=128", "GEMM_STAGES=2"],
    "f16_tb128_gelu_grad_rb": ["GEMM_F16", "GEMM_TRANS_B", "GEMM_ACT=GeluTanh", "GEMM_ACT_GRAD", "GEMM_BLOCK_N=128",
                               "GEMM_RESIDENT_K=256", "GEMM_STAGES=3"],
}

# (name, M, N, K, layout): the FFN's GEMMs at d = 256 (h 1024, 65536 rows), d = 1024 (h 4096) and d = 4096.
BENCH = [
    ("d256 dh = dy·W2ᵀ", 65536, 1024, 256, "tb"),
    ("d256 dx = dpre·W1ᵀ", 65536, 256, 1024, "tb"),
    ("d256 up x·W1", 65536, 1024, 256, "nn"),
    ("d1024 up x·W1", 16384, 4096, 1024, "nn"),
    ("d1024 down h·W2", 16384, 1024, 4096, "nn"),
    ("d1024 dh = dy·W2ᵀ", 16384, 4096, 1024, "tb"),
    ("d1024 dx = dpre·W1ᵀ", 16384, 1024, 4096, "tb"),
    ("d1024 dW1 = xᵀ·dpre", 1024, 4096, 16384, "ta"),
    ("d4096 up x·W1", 16384, 16384, 4096, "nn"),
    ("d4096 dh = dy·W2ᵀ", 16384, 16384, 4096, "tb"),
    ("d4096 dW1 = xᵀ·dpre", 4096, 16384, 16384, "ta"),
    ("d4096 down h·W2", 16384, 4096, 16384, "nn"),
    ("d4096 dx = dpre·W1ᵀ", 16384, 4096, 16384, "tb"),
    ("gated dWg = xᵀ·dg", 4096, 11008, 16384, "ta"),
    ("gated dx = dg·Wgᵀ", 16384, 4096, 11008, "tb"),
]


def build(name, flags, work):
    """A config whose flags hold LAB_BASELINE builds against the device headers under $GEMM_LAB_BASELINE_INCLUDE
    first (a copy of an earlier tree's, for an A/B in one process)."""
    out = os.path.join(work, f"gemm_{name}.so")
    baseline = ["-I" + os.environ["GEMM_LAB_BASELINE_INCLUDE"]] if "LAB_BASELINE" in flags else []
    cmd = ["nvcc", "-std=c++17", "-gencode", "arch=compute_90a,code=sm_90a", "-O3", "-Xptxas", "-v", "-shared",
           "-Xcompiler", "-fPIC", *baseline, "-I" + os.path.join(ROOT, "runtime/device/include"), "-I" + HERE,
           *[f"-D{f}" for f in flags if f != "LAB_BASELINE"], os.path.join(HERE, "launch_gemm.cu"), "-o", out]
    r = subprocess.run(cmd, capture_output=True, text=True)
    log = r.stdout + r.stderr
    ptxas = [l.strip() for l in log.splitlines() if "registers" in l or "spill" in l]
    return name, (out if r.returncode == 0 else None), log if r.returncode else "\n".join(ptxas)


class Gemm:
    def __init__(self, path, flags):
        self.lib = ctypes.CDLL(path)
        self.lib.flashc_lab_gemm.restype = ctypes.c_int
        self.lib.flashc_lab_gemm.argtypes = [ctypes.c_void_p] * 5 + [ctypes.c_longlong] * 3 + [
            ctypes.c_float, ctypes.c_int, ctypes.c_void_p]
        self.ta = "GEMM_TRANS_A" in flags
        self.tb = "GEMM_TRANS_B" in flags
        self.bias = "GEMM_BIAS" in flags
        self.save = "GEMM_SAVE_PRE" in flags
        self.f16 = "GEMM_F16" in flags
        self.acc = "GEMM_ACCUMULATE" in flags
        self.act_grad = "GEMM_ACT_GRAD" in flags
        self.act = next((f.split("=")[1] for f in flags if f.startswith("GEMM_ACT=")), "Identity")
        self.resident_k = int(next((f.split("=")[1] for f in flags if f.startswith("GEMM_RESIDENT_K=")), "0"))

    def __call__(self, a, b, bias, c, pre, M, N, K, alpha=1.0, max_blocks=0):
        import torch
        rc = self.lib.flashc_lab_gemm(a.data_ptr(), b.data_ptr(), bias.data_ptr() if bias is not None else None,
                                      c.data_ptr(), pre.data_ptr() if pre is not None else None, M, N, K, alpha,
                                      max_blocks, torch.cuda.current_stream().cuda_stream)
        if rc != 0:
            raise RuntimeError(f"flashc_lab_gemm returned {rc}")


def act_ref(x, act):
    import torch
    if act == "GeluTanh":
        return torch.nn.functional.gelu(x, approximate="tanh")
    if act == "Silu":
        return torch.nn.functional.silu(x)
    if act == "Relu":
        return torch.relu(x)
    return x


def act_grad_ref(x, act):
    """act'(x) in float64 (GELU tanh form)."""
    import torch
    assert act == "GeluTanh"
    c = 0.7978845608028654
    t = torch.tanh(c * (x + 0.044715 * x ** 3))
    return 0.5 * (1 + t) + 0.5 * x * (1 - t * t) * c * (1 + 3 * 0.044715 * x * x)


def operands(g, M, N, K, dtype, gen):
    import torch
    a = torch.randn((K, M) if g.ta else (M, K), device="cuda", dtype=dtype, generator=gen)
    b = torch.randn((N, K) if g.tb else (K, N), device="cuda", dtype=dtype, generator=gen) / K ** 0.5
    bias = torch.randn(N, device="cuda", dtype=dtype, generator=gen) if g.bias else None
    return a, b, bias


def check(name, g):
    import torch
    dtype = torch.float16 if g.f16 else torch.bfloat16
    gen = torch.Generator(device="cuda").manual_seed(1)
    failures = []
    # (M, N, K, alpha, max_blocks): ragged everything; 1 row; blocks that take many tiles (ring reuse across tiles).
    cases = [(300, 200, 136, 1.0, 0), (1, 8, 8, 0.5, 0), (129, 264, 64, 1.0, 0), (1000, 520, 1000, 0.25, 3),
             (4096, 1024, 512, 1.0, 0), (640, 768, 200, 1.0, 1)]
    if g.resident_k:  # K up to the resident bound; runs crossing column blocks (few blocks, N of many blocks)
        cases = [(300, 200, min(136, g.resident_k), 1.0, 0), (1, 8, 8, 0.5, 0), (129, 264, 64, 1.0, 0),
                 (1000, 520, g.resident_k, 0.25, 3), (4096, 1024, g.resident_k - 56, 1.0, 0),
                 (640, 768, 200 if g.resident_k >= 200 else 120, 1.0, 1), (64, 1000, 64, 1.0, 5),
                 (9000, 1024, g.resident_k, 1.0, 0), (200, 1304, g.resident_k, 1.0, 7)]
    for M, N, K, alpha, max_blocks in cases:
        if g.ta:  # A stored [K, M]: TMA needs rows of 16-byte multiples, so M a multiple of 8 (K stays ragged)
            M = (M + 7) // 8 * 8
        a, b, bias = operands(g, M, N, K, dtype, gen)
        c = (torch.randn((M, N), device="cuda", dtype=dtype, generator=gen) if g.acc
             else torch.full((M, N), float("nan"), device="cuda", dtype=dtype))
        old = c.double() if g.acc else 0
        pre = torch.full((M, N), float("nan"), device="cuda", dtype=dtype) if g.save else None
        if g.act_grad:  # P, read: the saved pre-activation
            pre = torch.randn((M, N), device="cuda", dtype=dtype, generator=gen) * 2
        g(a, b, bias, c, pre, M, N, K, alpha, max_blocks)
        torch.cuda.synchronize()
        a64 = (a.t() if g.ta else a).double()
        b64 = (b.t() if g.tb else b).double()
        pre64 = alpha * (a64 @ b64) + (bias.double() if bias is not None else 0)
        ref = pre64 * act_grad_ref(pre.double(), g.act) if g.act_grad else act_ref(pre64, g.act) + old
        # Tolerance: twice the error of the same product computed by cuBLAS in this dtype (f32 accumulation, one
        # rounding of the result), plus a floor.
        a16, b16 = (a.t() if g.ta else a), (b.t() if g.tb else b)
        if g.act_grad:  # eager: the GEMM in the dtype, then PyTorch's gelu backward in the dtype
            peer = torch.ops.aten.gelu_backward((alpha * (a16 @ b16).float()).to(dtype), pre,
                                                approximate="tanh").double()
        else:
            peer = act_ref((alpha * (a16 @ b16).float() + (bias.float() if bias is not None else 0)).to(dtype).double(), g.act) + old
        tol = 2 * (peer - ref).abs().max().item() + 1e-2
        for what, got, want in [("C", c, ref)] + ([("pre", pre, pre64)] if g.save and not g.act_grad else []):
            err = (got.double() - want).abs().max().item()
            ok = err <= tol and not torch.isnan(got).any().item()
            print(f"  {name} {what} M={M} N={N} K={K} alpha={alpha} blocks={max_blocks or 'SMs'}: "
                  f"max err {err:.3g} (tol {tol:.3g}) {'ok' if ok else 'FAIL'}", flush=True)
            if not ok:
                failures.append((name, what, M, N, K))
    return failures


def bench(gemms, out):
    import torch
    from triton.testing import do_bench
    rows = []
    gen = torch.Generator(device="cuda").manual_seed(0)
    for label, M, N, K, layout in BENCH:
        row = {"shape": label, "M": M, "N": N, "K": K, "layout": layout}
        flops = 2 * M * N * K
        for name, g in gemms.items():
            if (name.startswith(layout) and not g.f16 and not g.bias and not g.acc and not g.act_grad
                    and (not g.resident_k or K <= g.resident_k)):
                a, b, _ = operands(g, M, N, K, torch.bfloat16, gen)
                c = torch.empty(M, N, device="cuda", dtype=torch.bfloat16)
                ms = do_bench(lambda: g(a, b, None, c, None, M, N, K), warmup=25, rep=200, return_mode="median")
                row[name] = flops / ms / 1e9
                if name == "nn256" or name == layout + "256":
                    pa, pb = (a.t() if g.ta else a), (b.t() if g.tb else b)
                    ms_peer = do_bench(lambda: pa @ pb, warmup=25, rep=200, return_mode="median")
                    row["cublas"] = flops / ms_peer / 1e9
        saves = [n for n in ("nn256_bias_gelu_save", "nn256_bias_gelu_save_pp") if n in gemms]
        if layout == "nn" and saves:
            for name in saves:
                g = gemms[name]
                a, b, bias = operands(g, M, N, K, torch.bfloat16, gen)
                c = torch.empty(M, N, device="cuda", dtype=torch.bfloat16)
                pre = torch.empty_like(c)
                ms = do_bench(lambda: g(a, b, bias, c, pre, M, N, K), warmup=25, rep=200, return_mode="median")
                row[name.replace("nn256_", "")] = flops / ms / 1e9

            def eager():
                p = torch.addmm(bias, a, b)
                return torch.nn.functional.gelu(p, approximate="tanh")
            ms_peer = do_bench(eager, warmup=25, rep=200, return_mode="median")
            row["eager_addmm_gelu"] = flops / ms_peer / 1e9
        grads = [n for n, g in gemms.items() if g.act_grad and n.startswith(layout) and not g.f16
                 and (not g.resident_k or K <= g.resident_k)]
        for name in grads:  # dpre = (dy·W2ᵀ) ∘ gelu'(pre) in one kernel vs two
            g = gemms[name]
            a, b, _ = operands(g, M, N, K, torch.bfloat16, gen)
            pre = torch.randn(M, N, device="cuda", dtype=torch.bfloat16, generator=gen)
            c = torch.empty(M, N, device="cuda", dtype=torch.bfloat16)
            ms = do_bench(lambda: g(a, b, None, c, pre, M, N, K), warmup=25, rep=200, return_mode="median")
            row[name] = flops / ms / 1e9
        for name in [n for n, g in gemms.items() if g.acc and n.startswith(layout)]:  # C += A·Bᵀ
            g = gemms[name]
            a, b, _ = operands(g, M, N, K, torch.bfloat16, gen)
            c = torch.zeros(M, N, device="cuda", dtype=torch.bfloat16)
            ms = do_bench(lambda: g(a, b, None, c, None, M, N, K), warmup=25, rep=200, return_mode="median")
            row[name] = flops / ms / 1e9
            ms_peer = do_bench(lambda: c.addmm_(a, b.t()), warmup=25, rep=200, return_mode="median")
            row["eager_addmm_"] = flops / ms_peer / 1e9
        if grads:
            ms_peer = do_bench(lambda: torch.ops.aten.gelu_backward(a @ b.t(), pre, approximate="tanh"), warmup=25,
                               rep=200, return_mode="median")
            row["eager_mm_gelu_backward"] = flops / ms_peer / 1e9
        print(json.dumps(row), flush=True)
        rows.append(row)
    plain = ["nn256", "nn128", "tb256", "tb128", "tb256_s3", "ta256", "nn256_pp", "tb256_pp", "ta256_pp", "tb128_rb"]
    cols = plain + ["cublas", "bias_gelu_save", "bias_gelu_save_pp", "eager_addmm_gelu", "tb256_gelu_grad",
                    "tb128_gelu_grad", "tb256_gelu_grad_pp", "tb128_gelu_grad_rb", "tb128_gelu_grad_rb2",
                    "tb256_gelu_grad_rb128", "tb256_gelu_grad_pp_base", "eager_mm_gelu_backward", "tb256_acc",
                    "tb128_acc", "tb256_acc_pp", "tb256_acc_pp_base", "eager_addmm_"]
    table = "| shape | M · N · K | " + " | ".join(cols) + " | best ws / cuBLAS |\n|---|---|" + "---|" * (len(cols) + 1) + "\n"
    for r in rows:
        best = max((r[c] for c in plain if c in r), default=float("nan"))
        table += f"| {r['shape']} | {r['M']} · {r['N']} · {r['K']} | " + " | ".join(
            f"{r[c]:.0f}" if c in r else "" for c in cols) + f" | {best / r.get('cublas', float('nan')):.2f} |\n"
    print(table)
    with open(os.path.join(out, "gemm_lab.json"), "w") as f:
        json.dump(rows, f, indent=1)
    with open(os.path.join(out, "gemm_lab.md"), "w") as f:
        f.write("TFLOP/s, bf16, triton do_bench medians; cuBLAS = torch.matmul in the same layout\n\n" + table)


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--out", default="/tmp/gemm_lab")
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
    gemms = {n: Gemm(libs[n], CONFIGS[n]) for n in names if n in libs}
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
