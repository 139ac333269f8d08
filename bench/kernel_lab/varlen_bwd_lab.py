"""Packed variable-length attention backward, main kernel (device library attention_bwd_ws_varlen + the key-tile
plan of varlen.cuh): build, float64 check, timing.

python3 bench/kernel_lab/varlen_bwd_lab.py --out DIR [--only a,b] [--skip-bench]
Configs build with nvcc (launch_varlen_bwd.cu around test/GPU/golden/attention_bwd_ws.cu, -D macros): the key split
(D = 64, 128) and the role split (D = 128 forced, D = 256). delta = rowsum(dO O) and dQ = scale dq_accum are
computed here with torch (the pre/postprocess are elementwise). The check packs random sequences (lengths 0, 1,
ragged, Lq != Lk) with NaN in the rows after the last sequence (of q, k, v and dO), and compares dQ, dK, dV of every
sequence against float64 autograd; dK / dV rows outside every sequence must stay as they were; bad offsets must leave
everything unwritten. The bench times the main kernel at 16k packed tokens of equal lengths beside the same build's
dense backward (preprocess + main + postprocess: flashc_lab_bwd) and FlashAttention-2's varlen backward."""
import argparse
import concurrent.futures as cf
import ctypes
import json
import math
import os
import subprocess
import sys

import torch

sys.path.insert(0, os.path.dirname(__file__))
from abi import TensorArg, tensor_arg  # noqa: E402

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
# name: (D, heads_q, group, f16, causal, window_left, extra -D)
CONFIGS = {
    "d128_causal": (128, 16, 1, 0, 1, -1, {}),
    "d128_gqa4_f16": (128, 8, 4, 1, 0, -1, {}),
    "d64_causal": (64, 32, 1, 0, 1, -1, {}),
    "d64_gqa2_win37": (64, 4, 2, 0, 0, 37, {}),
    "d128_roles_causal": (128, 8, 1, 0, 1, -1, {"FLASHC_BWD_WS_KEY_SPLIT": 0}),
    "d256_causal": (256, 4, 1, 0, 1, -1, {}),
}
BENCH = ["d128_causal", "d64_causal"]


def build(name, cfg, build_dir):
    d, hq, g, f16, causal, wl, extra = cfg
    out = os.path.join(build_dir, f"varlen_bwd_{name}.so")
    cmd = ["nvcc", "-std=c++17", "-O3", "-gencode=arch=compute_90a,code=sm_90a", "-Xptxas", "-v", "-shared",
           "-Xcompiler", "-fPIC", "-I", os.path.join(ROOT, "runtime", "device", "include"),
           "-I", os.path.join(ROOT, "bench", "kernel_lab"), "-I", os.path.join(ROOT, "test", "GPU", "golden"),
           f"-DFLASHC_HEAD_DIM={d}", f"-DFLASHC_HEADS_Q={hq}", f"-DFLASHC_GQA_GROUP={g}", f"-DFLASHC_F16={f16}",
           f"-DFLASHC_CAUSAL={causal}", f"-DFLASHC_WINDOW_LEFT={wl}"] + [f"-D{k}={v}" for k, v in extra.items()] + [
           os.path.join(ROOT, "bench", "kernel_lab", "launch_varlen_bwd.cu"), "-o", out]
    p = subprocess.run(cmd, capture_output=True, text=True)
    return (out if p.returncode == 0 else None), p.stdout + p.stderr


class VarlenBwd:
    def __init__(self, so):
        self.lib = ctypes.CDLL(so)
        self.lib.flashc_lab_varlen_bwd.argtypes = [TensorArg] * 13 + [ctypes.c_void_p]
        self.lib.flashc_lab_varlen_bwd.restype = ctypes.c_int
        self.lib.flashc_lab_varlen_key_tiles.argtypes = [ctypes.c_longlong, ctypes.c_longlong]
        self.lib.flashc_lab_varlen_key_tiles.restype = ctypes.c_longlong
        self.lib.flashc_lab_bwd.argtypes = [TensorArg] * 12 + [ctypes.c_void_p]
        self.lib.flashc_lab_bwd.restype = ctypes.c_int

    def __call__(self, q, k, v, do, lse, delta, dq_accum, dk, dv, cu_q, cu_k, status):
        tiles = self.lib.flashc_lab_varlen_key_tiles(k.shape[0], cu_k.shape[0] - 1)
        key_map = torch.empty(max(tiles, 1), 2, device="cuda", dtype=torch.int32)[:tiles]
        rc = self.lib.flashc_lab_varlen_bwd(*[tensor_arg(x) for x in (q, k, v, do, lse, delta, dq_accum, dk, dv, cu_q,
                                                                      cu_k, key_map, status)],
                                            ctypes.c_void_p(torch.cuda.current_stream().cuda_stream))
        if rc != 0:
            raise RuntimeError(f"varlen backward launch failed: rc={rc}")

    def dense(self, q, k, v, o, do, lse, delta, dq_accum, dq, dk, dv):
        sem = torch.empty(1, device="cuda", dtype=torch.int32)
        rc = self.lib.flashc_lab_bwd(*[tensor_arg(x) for x in (q, k, v, o, do, lse, delta, dq_accum, dq, dk, dv, sem)],
                                     ctypes.c_void_p(torch.cuda.current_stream().cuda_stream))
        if rc != 0:
            raise RuntimeError(f"dense backward launch failed: rc={rc}")


def visible(lq, lk, causal, wl):
    i = torch.arange(lq, device="cuda").view(-1, 1) + (lk - lq)
    j = torch.arange(lk, device="cuda").view(1, -1)
    m = torch.ones(lq, lk, dtype=torch.bool, device="cuda")
    if causal:
        m &= j <= i
    if wl >= 0:  # the golden configs' window: left only (FLASHC_WINDOW_RIGHT -1: unbounded on the right)
        m &= j >= i - wl
    return m


def reference(q, k, v, do, lq, lk, causal, wl, scale):
    """float64 forward and gradients of one sequence: o [lq, Hq, D], lse [Hq, lq], dq, dk, dv."""
    hq, hkv = q.shape[1], k.shape[1]
    qd, kd, vd = (t.double().requires_grad_() for t in (q, k, v))
    kr = kd.repeat_interleave(hq // hkv, 1)
    vr = vd.repeat_interleave(hq // hkv, 1)
    s = torch.einsum("ihd,jhd->hij", qd, kr) * scale
    s = s.masked_fill(~visible(lq, lk, causal, wl), -math.inf)
    lse = torch.logsumexp(s, -1)
    p = torch.exp(s - lse.unsqueeze(-1)).nan_to_num(0.0)
    o = torch.einsum("hij,jhd->ihd", p, vr)
    (o * do.double()).sum().backward()
    return o.detach(), lse.detach(), qd.grad, kd.grad, vd.grad


def make_case(cfg, lens_q, lens_k, tail=29, seed=0):
    d, hq, g, f16 = cfg[:4]
    dtype = torch.float16 if f16 else torch.bfloat16
    gen = torch.Generator(device="cuda").manual_seed(seed)
    tq, tk = sum(lens_q), sum(lens_k)
    q = torch.randn(tq + tail, hq, d, device="cuda", dtype=dtype, generator=gen)
    k = torch.randn(tk + tail, hq // g, d, device="cuda", dtype=dtype, generator=gen)
    v = torch.randn(tk + tail, hq // g, d, device="cuda", dtype=dtype, generator=gen)
    do = torch.randn(tq + tail, hq, d, device="cuda", dtype=dtype, generator=gen)
    for t, n in ((q, tq), (k, tk), (v, tk), (do, tq)):
        t[n:] = float("nan")
    cu_q = torch.tensor([0] + torch.tensor(lens_q).cumsum(0).tolist(), device="cuda", dtype=torch.int32)
    cu_k = torch.tensor([0] + torch.tensor(lens_k).cumsum(0).tolist(), device="cuda", dtype=torch.int32)
    return q, k, v, do, cu_q, cu_k


def run_case(kern, cfg, q, k, v, do, cu_q, cu_k, status=None, references=True):
    """Forward in float64 (o, lse), the lab's backward; returns dq, dk, dv and the references."""
    d, hq, g, f16, causal, wl = cfg[:6]
    scale = 1.0 / math.sqrt(d)
    lens = (cu_q[1:] - cu_q[:-1]).tolist()
    o = torch.zeros_like(q)
    lse = torch.full((hq, q.shape[0]), -math.inf, device="cuda", dtype=torch.float32)
    refs = []
    for b in range(len(lens) if references else 0):
        a, e, ka, ke = cu_q[b].item(), cu_q[b + 1].item(), cu_k[b].item(), cu_k[b + 1].item()
        if e == a:
            refs.append(None)
            continue
        ro, rl, rdq, rdk, rdv = reference(q[a:e], k[ka:ke], v[ka:ke], do[a:e], e - a, ke - ka, causal, wl, scale)
        o[a:e] = ro.to(q.dtype)
        lse[:, a:e] = rl.float()
        refs.append((rdq, rdk, rdv))
    delta = (do.float().nan_to_num(0.0) * o.float()).sum(-1).t().contiguous()  # [Hq, T]
    dq_accum = torch.zeros(q.shape[0], hq, d, device="cuda", dtype=torch.float32)
    dk = torch.full_like(k, float("nan"))
    dv = torch.full_like(v, float("nan"))
    status = torch.zeros(4, device="cuda", dtype=torch.int32) if status is None else status
    kern(q, k, v, do, lse, delta, dq_accum, dk, dv, cu_q, cu_k, status)
    torch.cuda.synchronize()
    return dq_accum * scale, dk, dv, refs, status


def check_config(name, cfg, kern, log):
    f16 = cfg[3]
    bound = 5e-3 if f16 else 2e-2
    failures = 0
    cases = [([1, 0, 300, 129, 128, 1000], [1, 5, 300, 129, 200, 1000]), ([700, 77], [700, 77]),
             ([5, 64, 0, 191], [900, 64, 9, 191]), ([513] * 3 + [1] * 5, [513] * 3 + [2] * 5)]
    for i, (lq, lk) in enumerate(cases):
        q, k, v, do, cu_q, cu_k = make_case(cfg, lq, lk, seed=i)
        dq, dk, dv, refs, status = run_case(kern, cfg, q, k, v, do, cu_q, cu_k)
        errs, ok = [0.0, 0.0, 0.0], status.abs().sum().item() == 0
        for b, r in enumerate(refs):
            a, e, ka, ke = cu_q[b].item(), cu_q[b + 1].item(), cu_k[b].item(), cu_k[b + 1].item()
            if r is None:
                continue
            for j, (got, want) in enumerate(((dq[a:e], r[0]), (dk[ka:ke], r[1]), (dv[ka:ke], r[2]))):
                if want.numel() == 0:
                    continue
                if torch.isnan(got).any():
                    ok = False
                    errs[j] = float("nan")
                    continue
                scale_ = max(1.0, want.abs().max().item())
                errs[j] = max(errs[j], (got.double() - want).abs().max().item() / scale_)
        # keys of sequences with no queries get zero gradients (written); rows after the last sequence stay NaN
        tail = cu_k[-1].item()
        untouched = bool(torch.isnan(dk[tail:]).all() and torch.isnan(dv[tail:]).all())
        ok = ok and all(e < bound for e in errs) and untouched
        failures += 0 if ok else 1
        log(f"  {name} case {i} lens_q={lq} lens_k={lk}: dq {errs[0]:.2e} dk {errs[1]:.2e} dv {errs[2]:.2e} "
            f"tail untouched {untouched} -> {'ok' if ok else 'FAIL'}")
    q, k, v, do, cu_q, cu_k = make_case(cfg, [100, 200, 50], [100, 200, 50], tail=0)
    cu_k[2] = 5
    dq, dk, dv, _, status = run_case(kern, cfg, q, k, v, do, cu_q, cu_k, references=False)
    st = status.tolist()
    untouched = bool(torch.isnan(dk).all() and torch.isnan(dv).all() and (dq == 0).all())
    ok = untouched and st[:3] == [4, 2, 1]
    failures += 0 if ok else 1
    log(f"  {name} decreasing cu_k: status {st}, untouched {untouched} -> {'ok' if ok else 'FAIL'}")
    return failures


def bench(kerns, log):
    from triton.testing import do_bench
    rows = []
    for name in BENCH:
        if name not in kerns:
            continue
        d, hq, g, f16, causal, wl = CONFIGS[name][:6]
        hkv = hq // g
        dtype = torch.bfloat16
        for L in (1024, 2048, 4096):
            B, total = 16384 // L, 16384
            q, k, v, do = (torch.randn(total, h, d, device="cuda", dtype=dtype) for h in (hq, hkv, hkv, hq))
            o = torch.randn_like(q)
            lse = torch.randn(hq, total, device="cuda", dtype=torch.float32).abs() + 5.0
            delta = torch.randn(hq, total, device="cuda", dtype=torch.float32)
            dq_accum = torch.zeros(total, hq, d, device="cuda", dtype=torch.float32)
            dk, dv = torch.empty_like(k), torch.empty_like(v)
            cu = torch.tensor([L * i for i in range(B + 1)], device="cuda", dtype=torch.int32)
            status = torch.zeros(4, device="cuda", dtype=torch.int32)
            pairs = L * (L + 1) // 2 if causal else L * L
            flops = 2.5 * 4 * hq * d * pairs * B
            row = {"config": name, "seq": L, "batch": B}
            row["varlen_main_ms"] = do_bench(lambda: kern_call(kerns[name], q, k, v, do, lse, delta, dq_accum, dk, dv,
                                                               cu, status), warmup=25, rep=100, return_mode="median")
            qd, kd, vd, dod, od = (t.view(B, L, -1, d).transpose(1, 2) for t in (q, k, v, do, o))
            lsed = lse.view(hq, B, L).permute(1, 0, 2).contiguous()
            deltad = delta.view(hq, B, L).permute(1, 0, 2).contiguous()
            dq_acc_d = torch.zeros(B, hq, L, d, device="cuda", dtype=torch.float32)
            dqd = torch.empty(B, hq, L, d, device="cuda", dtype=dtype)
            dkd, dvd = torch.empty(B, hkv, L, d, device="cuda", dtype=dtype), torch.empty(B, hkv, L, d, device="cuda",
                                                                                        dtype=dtype)
            row["dense_full_ms"] = do_bench(lambda: kerns[name].dense(qd, kd, vd, od, dod, lsed, deltad, dq_acc_d, dqd,
                                                                      dkd, dvd), warmup=25, rep=100,
                                            return_mode="median")
            try:
                fa = torch.ops.aten._flash_attention_backward
                fo = torch.ops.aten._flash_attention_forward(q, k, v, cu, cu, L, L, 0.0, bool(causal), False,
                                                             scale=d ** -0.5)
                row["fa2_varlen_bwd_ms"] = do_bench(
                    lambda: fa(do, q, k, v, fo[0], fo[1], cu, cu, L, L, 0.0, bool(causal), fo[2], fo[3],
                               scale=d ** -0.5), warmup=25, rep=100, return_mode="median")
            except Exception as e:  # noqa: BLE001
                row["fa2_error"] = str(e)[:300]
            for key in ("varlen_main_ms", "dense_full_ms", "fa2_varlen_bwd_ms"):
                if key in row:
                    row[key.replace("_ms", "_tflops")] = flops / (row[key] * 1e-3) / 1e12
            rows.append(row)
            log("  " + " ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}" for k, v in row.items()))
    return rows


def kern_call(kern, q, k, v, do, lse, delta, dq_accum, dk, dv, cu, status):
    kern(q, k, v, do, lse, delta, dq_accum, dk, dv, cu, cu, status)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--only", default="")
    ap.add_argument("--skip-bench", action="store_true")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    logf = open(os.path.join(args.out, "varlen_bwd_lab.log"), "a")

    def log(s):
        print(s, flush=True)
        logf.write(s + "\n")
        logf.flush()

    names = [n for n in CONFIGS if not args.only or n in args.only.split(",")]
    with cf.ThreadPoolExecutor(8) as ex:
        built = dict(zip(names, ex.map(lambda n: build(n, CONFIGS[n], args.out), names)))
    kerns, failures = {}, 0
    for n in names:
        so, text = built[n]
        if not so:
            log(f"BUILD FAIL {n}:\n{text[-3000:]}")
            failures += 1
            continue
        spills = sorted(set(line.strip() for line in text.splitlines() if "bytes spill" in line))
        log(f"built {n}: " + "; ".join(spills)[:300])
        kerns[n] = VarlenBwd(so)
    for n in kerns:
        try:
            failures += check_config(n, CONFIGS[n], kerns[n], log)
        except Exception as e:  # noqa: BLE001
            log(f"  {n}: EXCEPTION {e}")
            failures += 1
    rows = [] if args.skip_bench else bench(kerns, log)
    json.dump({"gpu": torch.cuda.get_device_name(), "torch": torch.__version__, "rows": rows, "failures": failures},
              open(os.path.join(args.out, "varlen_bwd_lab.json"), "w"), indent=1)
    log(f"failures: {failures}")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
