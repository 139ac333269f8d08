"""Packed variable-length attention forward (device library varlen.cuh + attention_fwd_ws_varlen): build, float64
check, timing.

python3 bench/kernel_lab/varlen_lab.py --out DIR [--only a,b] [--skip-bench]
Configs build with nvcc (launch_varlen.cu around test/GPU/golden/attention_fwd_ws.cu, -D macros). The check packs
random sequences (lengths 0, 1, ragged, Lq != Lk) with NaN in the rows after the last sequence and compares every
sequence against float64; bad offsets (decreasing, past the rows, negative) must leave o and lse untouched and name
the entry in the status. The bench times 16k packed tokens (32 heads x D = 128, bf16) of equal lengths against the
same build's dense kernel on [B, H, S, D] (the issue's bar: varlen >= 0.95x dense on the same visible FLOPs), and
of mixed lengths against FlashAttention-2's varlen (torch.ops.aten._flash_attention_forward) in this process."""
import argparse
import ctypes
import json
import math
import os
import random
import subprocess
import sys

import torch

sys.path.insert(0, os.path.dirname(__file__))
from abi import TensorArg, tensor_arg  # noqa: E402

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
# name: (D, heads_q, group, f16, causal, window_left, consumers, stages)
CONFIGS = {
    "d128_causal": (128, 32, 1, 0, 1, -1, 2, 2),
    "d128": (128, 32, 1, 0, 0, -1, 2, 2),
    "d64_causal": (64, 32, 1, 0, 1, -1, 3, 2),
    "d128_gqa4_causal_f16": (128, 8, 4, 1, 1, -1, 2, 2),
    "d64_gqa2_win37": (64, 4, 2, 0, 0, 37, 3, 2),
    "d256_causal": (256, 4, 1, 0, 1, -1, 2, 1),
}
BENCH = ["d128_causal", "d128", "d64_causal"]


def build(name, cfg, build_dir):
    d, hq, g, f16, causal, wl, consumers, stages = cfg
    out = os.path.join(build_dir, f"varlen_{name}.so")
    block_n = 64 if d > 128 else 128
    cmd = ["nvcc", "-std=c++17", "-O3", "-gencode=arch=compute_90a,code=sm_90a", "-Xptxas", "-v", "-shared",
           "-Xcompiler", "-fPIC", "-I", os.path.join(ROOT, "runtime", "device", "include"),
           "-I", os.path.join(ROOT, "bench", "kernel_lab"), "-I", os.path.join(ROOT, "test", "GPU", "golden"),
           f"-DFLASHC_HEAD_DIM={d}", f"-DFLASHC_HEADS_Q={hq}", f"-DFLASHC_GQA_GROUP={g}", f"-DFLASHC_F16={f16}",
           f"-DFLASHC_CAUSAL={causal}", f"-DFLASHC_WINDOW_LEFT={wl}", f"-DFLASHC_WS_CONSUMERS={consumers}",
           f"-DFLASHC_WS_STAGES={stages}", f"-DFLASHC_WS_BLOCK_N={block_n}", "-DFLASHC_WS_PERSISTENT=0",
           os.path.join(ROOT, "bench", "kernel_lab", "launch_varlen.cu"), "-o", out]
    p = subprocess.run(cmd, capture_output=True, text=True)
    return (out if p.returncode == 0 else None), p.stdout + p.stderr


class Varlen:
    def __init__(self, so):
        self.lib = ctypes.CDLL(so)
        self.lib.flashc_lab_varlen.argtypes = [TensorArg] * 9 + [ctypes.c_int, ctypes.c_void_p]
        self.lib.flashc_lab_varlen_tiles.argtypes = [ctypes.c_longlong, ctypes.c_longlong]
        self.lib.flashc_lab_varlen_tiles.restype = ctypes.c_longlong
        self.maps = {}
        self.lib.flashc_lab_varlen.restype = ctypes.c_int
        self.lib.flashc_lab_fwd.argtypes = [TensorArg] * 5 + [ctypes.c_void_p]
        self.lib.flashc_lab_fwd.restype = ctypes.c_int

    def __call__(self, q, k, v, o, lse, cu_q, cu_k, status, check=True):
        """check: run the plan (offsets checked, tile map written) first; False reuses the last map of this size."""
        tiles = self.lib.flashc_lab_varlen_tiles(q.shape[0], cu_q.shape[0] - 1)
        if tiles not in self.maps:
            self.maps[tiles] = torch.empty(max(tiles, 1), 2, device="cuda", dtype=torch.int32)
        tile_map = self.maps[tiles][:tiles]
        if check:
            status.zero_()
        rc = self.lib.flashc_lab_varlen(*[tensor_arg(x) for x in (q, k, v, o, lse, cu_q, cu_k, tile_map, status)],
                                        int(check), ctypes.c_void_p(torch.cuda.current_stream().cuda_stream))
        if rc != 0:
            raise RuntimeError(f"varlen launch failed: rc={rc}")

    def dense(self, q, k, v, o, lse):
        rc = self.lib.flashc_lab_fwd(*[tensor_arg(x) for x in (q, k, v, o, lse)],
                                     ctypes.c_void_p(torch.cuda.current_stream().cuda_stream))
        if rc != 0:
            raise RuntimeError(f"dense launch failed: rc={rc}")


def visible(lq, lk, causal, wl):
    """[lq, lk] bool: bottom-right aligned window (causal right = 0)."""
    i = torch.arange(lq, device="cuda").view(-1, 1) + (lk - lq)
    j = torch.arange(lk, device="cuda").view(1, -1)
    m = torch.ones(lq, lk, dtype=torch.bool, device="cuda")
    if causal:
        m &= j <= i
    if wl >= 0:
        m &= j >= i - wl
    return m


def reference(q, k, v, lq, lk, causal, wl, scale):
    """float64 of one sequence: q [lq, Hq, D], k/v [lk, Hkv, D] -> o [lq, Hq, D], lse [Hq, lq]."""
    hq, hkv = q.shape[1], k.shape[1]
    kd = k.double().repeat_interleave(hq // hkv, 1)
    vd = v.double().repeat_interleave(hq // hkv, 1)
    s = torch.einsum("ihd,jhd->hij", q.double(), kd) * scale
    s = s.masked_fill(~visible(lq, lk, causal, wl), -math.inf)
    lse = torch.logsumexp(s, -1)
    p = torch.exp(s - lse.unsqueeze(-1)).nan_to_num(0.0)
    return torch.einsum("hij,jhd->ihd", p, vd), lse


def make_case(cfg, lens_q, lens_k, tail=37, seed=0):
    d, hq, g, f16 = cfg[:4]
    dtype = torch.float16 if f16 else torch.bfloat16
    gen = torch.Generator(device="cuda").manual_seed(seed)
    tq, tk = sum(lens_q), sum(lens_k)
    q = torch.randn(tq + tail, hq, d, device="cuda", dtype=dtype, generator=gen)
    k = torch.randn(tk + tail, hq // g, d, device="cuda", dtype=dtype, generator=gen)
    v = torch.randn(tk + tail, hq // g, d, device="cuda", dtype=dtype, generator=gen)
    for t, n in ((q, tq), (k, tk), (v, tk)):  # rows after the last sequence: nothing may leak from them
        t[n:] = float("nan")
    cu_q = torch.tensor([0] + list(torch.tensor(lens_q).cumsum(0).tolist()), device="cuda", dtype=torch.int32)
    cu_k = torch.tensor([0] + list(torch.tensor(lens_k).cumsum(0).tolist()), device="cuda", dtype=torch.int32)
    return q, k, v, cu_q, cu_k


def check_config(name, cfg, kern, log):
    d, hq, g, f16, causal, wl = cfg[:6]
    scale = 1.0 / math.sqrt(d)
    failures = 0
    cases = [
        ([1, 0, 300, 129, 128, 1000], [1, 5, 300, 129, 200, 1000]),
        ([2048, 77], [2048, 77]),
        ([5, 64, 0, 191], [3000, 64, 9, 191]),
        ([0], [0]),
        ([513] * 3 + [1] * 7, [513] * 3 + [2] * 7),
    ]
    for i, (lq, lk) in enumerate(cases):
        q, k, v, cu_q, cu_k = make_case(cfg, lq, lk, seed=i)
        o = torch.full((q.shape[0], hq, d), float("nan"), device="cuda", dtype=q.dtype)
        lse = torch.full((hq, q.shape[0]), float("nan"), device="cuda", dtype=torch.float32)
        status = torch.zeros(4, device="cuda", dtype=torch.int32)
        kern(q, k, v, o, lse, cu_q, cu_k, status)
        torch.cuda.synchronize()
        err_o, err_l, ok = 0.0, 0.0, status.abs().sum().item() == 0
        for b in range(len(lq)):
            a, e = cu_q[b].item(), cu_q[b + 1].item()
            ka, ke = cu_k[b].item(), cu_k[b + 1].item()
            if e == a:
                continue
            ro, rl = reference(q[a:e], k[ka:ke], v[ka:ke], e - a, ke - ka, causal, wl, scale)
            got_o, got_l = o[a:e].double(), lse[:, a:e].double()
            fin = torch.isfinite(rl)
            if not torch.equal(torch.isfinite(got_l), fin) or torch.isnan(got_o).any():
                ok = False
                continue
            err_o = max(err_o, (got_o - ro).abs().max().item())
            if fin.any():
                err_l = max(err_l, (got_l[fin] - rl[fin]).abs().max().item())
        tail_untouched = bool(torch.isnan(o[cu_q[-1].item():]).all())
        ok = ok and err_o < (2e-2 if not f16 else 4e-3) and err_l < 2e-3 and tail_untouched
        failures += 0 if ok else 1
        log(f"  {name} case {i} lens_q={lq} lens_k={lk}: out err {err_o:.2e} lse err {err_l:.2e} "
            f"tail untouched {tail_untouched} -> {'ok' if ok else 'FAIL'}")
    # Bad offsets: nothing written, the status names the entry.
    for what, cu_fix, want in (("decreasing cu_q", lambda cq, ck: cq.__setitem__(2, 5), (4, 2, 0)),
                               ("cu_k past k's rows", lambda cq, ck: ck.__setitem__(3, 100000), (5, 3, 1)),
                               ("negative cu_q[0]", lambda cq, ck: cq.__setitem__(0, -3), (6, 0, 0))):
        q, k, v, cu_q, cu_k = make_case(cfg, [100, 200, 50], [100, 200, 50], tail=0)
        cu_fix(cu_q, cu_k)
        o = torch.full((q.shape[0], hq, d), 7.0, device="cuda", dtype=q.dtype)
        lse = torch.full((hq, q.shape[0]), 7.0, device="cuda", dtype=torch.float32)
        status = torch.zeros(4, device="cuda", dtype=torch.int32)
        kern(q, k, v, o, lse, cu_q, cu_k, status)
        torch.cuda.synchronize()
        st = status.tolist()
        untouched = bool((o == 7).all() and (lse == 7).all())
        ok = untouched and tuple(st[:3]) == want
        failures += 0 if ok else 1
        log(f"  {name} {what}: status {st} (want {list(want)}..), untouched {untouched} -> {'ok' if ok else 'FAIL'}")
    return failures


def visible_pairs(lq, lk, causal, wl):
    if not causal and wl < 0:
        return lq * lk
    return int(visible(lq, lk, causal, wl).sum().item())


def bench(kerns, log):
    from triton.testing import do_bench
    rows = []
    for name in BENCH:
        if name not in kerns:
            continue
        d, hq, g, f16, causal, wl = CONFIGS[name][:6]
        hkv = hq // g
        dtype = torch.bfloat16
        total = 16384
        random.seed(1)
        mixed = []
        while sum(mixed) < total:
            mixed.append(min(random.choice([137, 512, 1000, 2048, 3100, 4096, 777, 64]), total - sum(mixed)))
        for label, lens in (("equal 1k", [1024] * 16), ("equal 2k", [2048] * 8), ("equal 4k", [4096] * 4),
                            ("equal 8k", [8192] * 2), ("mixed", mixed), ("equal 128", [128] * 128),
                            ("equal 16", [16] * 1024)):
            q = torch.randn(total, hq, d, device="cuda", dtype=dtype)
            k = torch.randn(total, hkv, d, device="cuda", dtype=dtype)
            v = torch.randn(total, hkv, d, device="cuda", dtype=dtype)
            o = torch.empty_like(q)
            lse = torch.empty(hq, total, device="cuda", dtype=torch.float32)
            cu = torch.tensor([0] + torch.tensor(lens).cumsum(0).tolist(), device="cuda", dtype=torch.int32)
            status = torch.zeros(4, device="cuda", dtype=torch.int32)
            flops = sum(4 * hq * d * visible_pairs(L, L, causal, wl) for L in lens)
            row = {"config": name, "lengths": label, "sequences": len(lens), "tokens": total}
            kern_call(kerns[name], q, k, v, o, lse, cu, status, True)  # the plan: the unplanned timing reuses its map
            row["varlen_ms"] = do_bench(lambda: kern_call(kerns[name], q, k, v, o, lse, cu, status, False),
                                        warmup=25, rep=200, return_mode="median")
            row["varlen_checked_ms"] = do_bench(lambda: kern_call(kerns[name], q, k, v, o, lse, cu, status, True),
                                                warmup=25, rep=200, return_mode="median")
            if label.startswith("equal"):
                L = lens[0]
                qd = q.view(len(lens), L, hq, d).transpose(1, 2)
                kd = k.view(len(lens), L, hkv, d).transpose(1, 2)
                vd = v.view(len(lens), L, hkv, d).transpose(1, 2)
                od = torch.empty(len(lens), hq, L, d, device="cuda", dtype=dtype)
                lsed = torch.empty(len(lens), hq, L, device="cuda", dtype=torch.float32)
                row["dense_ms"] = do_bench(lambda: kerns[name].dense(qd, kd, vd, od, lsed), warmup=25, rep=200,
                                           return_mode="median")
                # numerics: varlen == dense on the same data
                kern_call(kerns[name], q, k, v, o, lse, cu, status, True)
                kerns[name].dense(qd, kd, vd, od, lsed)
                torch.cuda.synchronize()
                row["varlen_vs_dense_max_diff"] = (o.view(len(lens), L, hq, d).transpose(1, 2).float() -
                                                   od.float()).abs().max().item()
                if wl < 0:
                    try:
                        import torch.nn.functional as F
                        from torch.nn.attention import SDPBackend, sdpa_kernel
                        with sdpa_kernel([SDPBackend.CUDNN_ATTENTION]):
                            row["cudnn_dense_ms"] = do_bench(
                                lambda: F.scaled_dot_product_attention(qd, kd, vd, is_causal=bool(causal),
                                                                       enable_gqa=g > 1),
                                warmup=25, rep=200, return_mode="median")
                    except Exception as e:  # noqa: BLE001
                        row["cudnn_error"] = str(e)[:200]
            if wl < 0:
                try:
                    fa = torch.ops.aten._flash_attention_forward
                    row["fa2_varlen_ms"] = do_bench(
                        lambda: fa(q, k, v, cu, cu, max(lens), max(lens), 0.0, bool(causal), False,
                                   scale=1.0 / math.sqrt(d)), warmup=25, rep=200, return_mode="median")
                except Exception as e:  # noqa: BLE001
                    row["fa2_error"] = str(e)[:200]
            for key in ("varlen_ms", "varlen_checked_ms", "dense_ms", "cudnn_dense_ms", "fa2_varlen_ms"):
                if key in row:
                    row[key.replace("_ms", "_tflops")] = flops / (row[key] * 1e-3) / 1e12
            if "dense_ms" in row:
                row["varlen_over_dense"] = row["dense_ms"] / row["varlen_ms"]
            rows.append(row)
            log("  " + " ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}" for k, v in row.items()))
    return rows


def kern_call(kern, q, k, v, o, lse, cu, status, check):
    kern(q, k, v, o, lse, cu, cu, status, check=check)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--only", default="")
    ap.add_argument("--skip-bench", action="store_true")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    logf = open(os.path.join(args.out, "varlen_lab.log"), "a")

    def log(s):
        print(s, flush=True)
        logf.write(s + "\n")
        logf.flush()

    names = [n for n in CONFIGS if not args.only or n in args.only.split(",")]
    import concurrent.futures as cf
    with cf.ThreadPoolExecutor(8) as ex:
        built = dict(zip(names, ex.map(lambda n: build(n, CONFIGS[n], args.out), names)))
    kerns, failures = {}, 0
    for n in names:
        so, text = built[n]
        open(os.path.join(args.out, f"ptxas_{n}.txt"), "w").write(text)
        if not so:
            log(f"BUILD FAIL {n}:\n{text[-3000:]}")
            failures += 1
            continue
        spills = [line.strip() for line in text.splitlines() if "spill" in line and "varlen" in text]
        log(f"built {n}: " + "; ".join(sorted(set(s for s in spills if "bytes spill" in s)))[:300])
        kerns[n] = Varlen(so)
    for n in kerns:
        failures += check_config(n, CONFIGS[n], kerns[n], log)
    rows = [] if args.skip_bench else bench(kerns, log)
    json.dump({"gpu": torch.cuda.get_device_name(), "torch": torch.__version__, "rows": rows, "failures": failures},
              open(os.path.join(args.out, "varlen_lab.json"), "w"), indent=1)
    log(f"failures: {failures}")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
