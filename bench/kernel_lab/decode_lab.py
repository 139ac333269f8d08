"""Decode attention over a KV cache (device library attention_decode.cuh): build, float64 check, timing.

python3 bench/kernel_lab/decode_lab.py --out DIR [--only a,b] [--skip-bench]
Configs build with nvcc (launch_decode.cu around test/GPU/golden/attention_decode.cu, -D macros); the check covers random sequence lengths (0, 1, ragged,
full), contiguous caches in bhsd and bshd strides, paged caches with shuffled and shared pages, 1-16 query
tokens, GQA / MQA, causal or not, a bad table (nothing written, status names the sequence). The bench times
1-token decode at 32 query / 8 kv heads, D = 128, bf16 against SDPA's cuDNN and flash backends in this
process (triton do_bench medians per call, L2 flushed, and CUDA-graph replay medians); bandwidth = K + V bytes of the visible keys / time."""
import argparse
import ctypes
import json
import math
import os
import subprocess
import sys
import time

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(__file__))
from abi import TensorArg, tensor_arg  # noqa: E402

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
# name: (D, group, queries, page, causal, stages, f16)
CONFIGS = {
    "d128_g4_t1": (128, 4, 1, 0, 1, 4, 0),
    "d128_g4_t1_st3": (128, 4, 1, 0, 1, 3, 0),
    "d128_g4_t1_p64": (128, 4, 1, 64, 1, 4, 0),
    "d128_g4_t1_p64_st3": (128, 4, 1, 64, 1, 3, 0),
    "d128_g4_t1_p16": (128, 4, 1, 16, 1, 4, 0),
    "d128_g4_t1_p256": (128, 4, 1, 256, 1, 4, 0),
    "d128_g4_t4_causal": (128, 4, 4, 0, 1, 4, 0),
    "d128_g8_t16_p32_causal": (128, 8, 16, 32, 1, 3, 0),
    "d64_g1_t3_nc_f16": (64, 1, 3, 0, 0, 4, 1),
    "d256_g32_t1_p128_f16": (256, 32, 1, 128, 1, 2, 1),
}
BENCH = ["d128_g4_t1", "d128_g4_t1_p64"]


def build(name, cfg, build_dir):
    d, g, t, page, causal, stages, f16 = cfg[:7]
    out = os.path.join(build_dir, f"decode_{name}.so")
    cmd = ["nvcc", "-std=c++17", "-O3", "-gencode=arch=compute_90a,code=sm_90a", "-Xptxas", "-v", "-shared",
           "-Xcompiler", "-fPIC", "-I", os.path.join(ROOT, "runtime", "device", "include"),
           "-I", os.path.join(ROOT, "bench", "kernel_lab"), "-I", os.path.join(ROOT, "test", "GPU", "golden"),
           f"-DFLASHC_HEAD_DIM={d}", f"-DFLASHC_GQA_GROUP={g}", f"-DFLASHC_DEC_QUERIES={t}", f"-DFLASHC_DEC_PAGE={page}",
           f"-DFLASHC_CAUSAL={causal}", f"-DFLASHC_DEC_STAGES={stages}", f"-DFLASHC_F16={f16}", os.path.join(ROOT, "bench", "kernel_lab", "launch_decode.cu"),
           "-o", out]
    p = subprocess.run(cmd, capture_output=True, text=True)
    return (out if p.returncode == 0 else None), p.stdout + p.stderr


class Decode:
    def __init__(self, so, cfg):
        self.cfg = cfg
        self.lib = ctypes.CDLL(so)
        self.lib.flashc_lab_decode.argtypes = [TensorArg] * 10 + [ctypes.c_void_p]
        self.lib.flashc_lab_decode.restype = ctypes.c_int
        info = (ctypes.c_int * 3)()
        self.lib.flashc_lab_decode_info(ctypes.byref(info, 0), ctypes.byref(info, 4), ctypes.byref(info, 8))
        self.threads, self.smem, self.row_groups = info[0], info[1], info[2]

    def splits_for(self, B, hkv, capacity, sms):
        blocks = B * hkv * self.row_groups
        return max(1, min(-(-2 * sms // blocks), max(1, -(-capacity // 512))))

    def workspace(self, B, hq, t, dv, splits):
        o_part = torch.empty(B, splits, hq * t, dv, device="cuda", dtype=torch.float32)
        lse_part = torch.empty(B, splits, hq * t, device="cuda", dtype=torch.float32)
        status = torch.zeros(4, device="cuda", dtype=torch.int32)
        return o_part, lse_part, status

    def __call__(self, q, k, v, seqlens, table, out, lse, ws):
        ws[2].zero_()
        rc = self.lib.flashc_lab_decode(*[tensor_arg(x) for x in (q, k, v, seqlens, table, out, lse, *ws)],
                                        ctypes.c_void_p(torch.cuda.current_stream().cuda_stream))
        if rc != 0:
            raise RuntimeError(f"decode launch failed: rc={rc}")


def dense_cache(k, table, page, B, capacity):
    """[B, Hkv, capacity, D] view of a cache (paged: gathered through the table)."""
    if page == 0:
        return k
    pages = table.long().clamp(min=0)  # [B, P]
    g = k[pages]  # [B, P, page, Hkv, D]
    return g.reshape(B, -1, k.shape[2], k.shape[3]).transpose(1, 2)[:, :, :capacity]


def reference(q, kd, vd, seqlens, causal, scale):
    """float64: q [B, Hq, T, D], kd/vd [B, Hkv, cap, D] -> out [B, Hq, T, D], lse [B, Hq, T]."""
    B, hq, T, _ = q.shape
    hkv = kd.shape[1]
    kd = kd.double().repeat_interleave(hq // hkv, 1)
    vd = vd.double().repeat_interleave(hq // hkv, 1)
    s = torch.einsum("bhtd,bhjd->bhtj", q.double(), kd) * scale
    j = torch.arange(kd.shape[2], device=q.device)
    L = seqlens.long().view(B, 1, 1, 1)
    visible = j.view(1, 1, 1, -1) < L
    if causal:
        pos = L - T + torch.arange(T, device=q.device).view(1, 1, T, 1)
        visible = visible & (j.view(1, 1, 1, -1) <= pos)
    s = s.masked_fill(~visible, -math.inf)
    lse = torch.logsumexp(s, -1)
    p = torch.exp(s - lse.unsqueeze(-1)).nan_to_num(0.0)
    out = torch.einsum("bhtj,bhjd->bhtd", p, vd)
    return out, lse


def make_case(cfg, B, capacity, seqlens, layout="bhsd", hkv=2, shared_pages=False, poison=True, seed=0):
    d, g, t, page, causal, stages, f16 = cfg[:7]
    dtype = torch.float16 if f16 else torch.bfloat16
    gen = torch.Generator(device="cuda").manual_seed(seed)
    hq = hkv * g
    q = torch.randn(B, t, hq, d, device="cuda", dtype=dtype, generator=gen).transpose(1, 2)  # bshd strides
    if page == 0:
        if layout == "bshd":
            k = torch.randn(B, capacity, hkv, d, device="cuda", dtype=dtype, generator=gen).transpose(1, 2)
            v = torch.randn(B, capacity, hkv, d, device="cuda", dtype=dtype, generator=gen).transpose(1, 2)
        else:
            k = torch.randn(B, hkv, capacity, d, device="cuda", dtype=dtype, generator=gen)
            v = torch.randn(B, hkv, capacity, d, device="cuda", dtype=dtype, generator=gen)
        table = torch.zeros(1, 1, device="cuda", dtype=torch.int32)
        if poison:  # rows past each sequence hold NaN: nothing may leak
            for b in range(B):
                k[b, :, seqlens[b]:] = float("nan")
                v[b, :, seqlens[b]:] = float("nan")
    else:
        per_seq = -(-capacity // page)
        pages = B * per_seq + 3
        k = torch.randn(pages, page, hkv, d, device="cuda", dtype=dtype, generator=gen)
        v = torch.randn(pages, page, hkv, d, device="cuda", dtype=dtype, generator=gen)
        perm = torch.randperm(pages, device="cuda", generator=gen)[: B * per_seq].view(B, per_seq)
        if shared_pages and B > 1:
            perm[1, : per_seq // 2] = perm[0, : per_seq // 2]  # prefix pages shared by two sequences
        table = perm.to(torch.int32).contiguous()
        if poison:
            for b in range(B):
                used = -(-seqlens[b] // page)
                table[b, used:] = -7  # entries past the sequence are never read
                if seqlens[b] % page:
                    k[table[b, used - 1].item(), seqlens[b] % page:] = float("nan")
                    v[table[b, used - 1].item(), seqlens[b] % page:] = float("nan")
            if shared_pages and B > 1:  # a shared page must hold real keys for both sequences
                pass
    sl = torch.tensor(seqlens, device="cuda", dtype=torch.int32)
    return q, k, v, sl, table, hq


def check_config(name, cfg, kern, log):
    d, g, t, page, causal, stages, f16 = cfg[:7]
    scale = 1.0 / math.sqrt(d)
    failures = 0
    cases = [
        (3, 300, [0, 1, 300], "bhsd", 1),
        (4, 1000, [999, 17, 64, 1000], "bshd", 2),
        (2, 4096, [4096, 2500], "bhsd", 5),
        (1, 70, [65], "bshd", 1),
    ]
    for i, (B, cap, lens, layout, splits) in enumerate(cases):
        if page:
            cap = -(-cap // page) * page
        shared = page > 0 and i == 2
        if shared:
            lens = [cap, cap]
        q, k, v, sl, table, hq = make_case(cfg, B, cap, lens, layout, hkv=2 if g < 32 else 1, shared_pages=shared,
                                           seed=i)
        out = torch.full((B, hq, t, d), float("nan"), device="cuda", dtype=q.dtype)
        lse = torch.full((B, hq, t), float("nan"), device="cuda", dtype=torch.float32)
        ws = kern.workspace(B, hq, t, d, splits)
        kern(q, k, v, sl, table, out, lse, ws)
        torch.cuda.synchronize()
        kd = dense_cache(k, table, page, B, cap)
        vd = dense_cache(v, table, page, B, cap)
        kd = torch.nan_to_num(kd.double())  # the reference never reads past seqlen anyway
        vd = torch.nan_to_num(vd.double())
        ro, rl = reference(q, kd, vd, sl, causal, scale)
        visible = torch.isfinite(rl)
        err_o = (out.double() - ro).abs().max().item()
        lse_ok = torch.equal(torch.isfinite(lse), visible) and (
            (lse[visible].double() - rl[visible]).abs().max().item() if visible.any() else 0.0) < 2e-3
        ok = err_o < (2e-2 if not f16 else 4e-3) and lse_ok and not torch.isnan(out).any()
        failures += 0 if ok else 1
        log(f"  {name} case {i} B={B} cap={cap} lens={lens} {layout} splits={splits}: out err {err_o:.2e} "
            f"lse ok {lse_ok} -> {'ok' if ok else 'FAIL'}")
    # A bad table: nothing written, status names the sequence.
    B, cap = 2, 256
    q, k, v, sl, table, hq = make_case(cfg, B, cap, [100, 200], "bhsd", hkv=2 if g < 32 else 1, poison=False)
    if page:
        table[1, 0] = k.shape[0] + 5
    else:
        sl[1] = cap + 1
    out = torch.full((B, hq, t, d), 7.0, device="cuda", dtype=q.dtype)
    lse = torch.full((B, hq, t), 7.0, device="cuda", dtype=torch.float32)
    ws = kern.workspace(B, hq, t, d, 2)
    kern(q, k, v, sl, table, out, lse, ws)
    torch.cuda.synchronize()
    st = ws[2].tolist()
    untouched = bool((out == 7).all() and (lse == 7).all())
    expect = [3, 1, 0, k.shape[0] + 5] if page else [2, 1, cap, cap + 1]
    ok = untouched and st == expect
    failures += 0 if ok else 1
    log(f"  {name} bad table: status {st} (expected {expect}), output untouched {untouched} -> {'ok' if ok else 'FAIL'}")
    return failures


def bench(kerns, log):
    from torch.nn.attention import SDPBackend, sdpa_kernel
    from triton.testing import do_bench, do_bench_cudagraph

    def timed(f):
        """(events per call, CUDA-graph replay) medians in ms: a decode step is microseconds of GPU work, so the
        per-call figure includes the host's launch overhead (ctypes here, the dispatcher for SDPA); the graph one
        is the GPU's alone, as a serving loop that replays graphs sees it."""
        return (do_bench(f, warmup=25, rep=200, return_mode="median"),
                do_bench_cudagraph(f, rep=200, return_mode="median"))
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    rows = []
    hq, hkv, d = 32, 8, 128
    for B, ctx in ((1, 32768), (16, 8192), (64, 4096), (128, 2048)):
        kv_bytes = 2 * B * hkv * ctx * d * 2
        q = torch.randn(B, hq, 1, d, device="cuda", dtype=torch.bfloat16)
        k = torch.randn(B, hkv, ctx, d, device="cuda", dtype=torch.bfloat16)
        v = torch.randn(B, hkv, ctx, d, device="cuda", dtype=torch.bfloat16)
        row = {"batch": B, "context": ctx, "kv_bytes": kv_bytes}
        for pname, backend in (("cudnn", SDPBackend.CUDNN_ATTENTION), ("flash", SDPBackend.FLASH_ATTENTION)):
            try:
                with sdpa_kernel(backend):
                    f = lambda: F.scaled_dot_product_attention(q, k, v, enable_gqa=True)
                    f()
                    ms, ms_graph = timed(f)
                row[pname] = kv_bytes / (ms * 1e-3) / 1e12
                row[pname + "_graph"] = kv_bytes / (ms_graph * 1e-3) / 1e12
            except Exception as e:  # noqa: BLE001
                row[pname] = None
                log(f"  {pname} B={B} ctx={ctx}: {type(e).__name__}: {str(e)[:200]}")
                try:  # the backend without GQA: K and V expanded to the query heads (bytes still counted at 8 heads)
                    ke, ve = k.repeat_interleave(hq // hkv, 1), v.repeat_interleave(hq // hkv, 1)
                    with sdpa_kernel(backend):
                        f = lambda: F.scaled_dot_product_attention(q, ke, ve)
                        f()
                        ms = do_bench(f, warmup=25, rep=200, return_mode="median")
                    row[pname + "_expanded"] = kv_bytes / (ms * 1e-3) / 1e12
                    del ke, ve
                except Exception as e2:  # noqa: BLE001
                    log(f"  {pname} expanded: {type(e2).__name__}: {str(e2)[:200]}")
        for name, (kern, cfg) in kerns.items():
            page = cfg[3]
            seqlens = [ctx] * B
            qq, kk, vv, sl, table, _ = make_case(cfg, B, ctx, seqlens, hkv=hkv, poison=False)
            splits = kern.splits_for(B, hkv, ctx, sms)
            out = torch.empty(B, hq, 1, d, device="cuda", dtype=torch.bfloat16)
            lse = torch.empty(B, hq, 1, device="cuda", dtype=torch.float32)
            ws = kern.workspace(B, hq, 1, d, splits)
            f = lambda: kern(qq, kk, vv, sl, table, out, lse, ws)
            f()
            ms, ms_graph = timed(f)
            row[name] = kv_bytes / (ms * 1e-3) / 1e12
            row[name + "_graph"] = kv_bytes / (ms_graph * 1e-3) / 1e12
            row[name + "_splits"] = splits
            for alt in ((16, 66, 132) if B == 1 else ()):  # how the 1-sequence row responds to the split count
                ws_alt = kern.workspace(B, hq, 1, d, alt)
                g = lambda: kern(qq, kk, vv, sl, table, out, lse, ws_alt)
                g()
                row[f"{name}_s{alt}_graph"] = kv_bytes / (timed(g)[1] * 1e-3) / 1e12
            del kk, vv
        rows.append(row)
        log("  " + json.dumps({k: (round(x, 3) if isinstance(x, float) else x) for k, x in row.items()}))
    return rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.environ.get("OUT", "/tmp/decode_lab"))
    ap.add_argument("--only", default="")
    ap.add_argument("--skip-bench", action="store_true")
    ap.add_argument("--skip-check", action="store_true")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    logf = open(os.path.join(args.out, "decode_lab.log"), "a")

    def log(s):
        print(s, flush=True)
        logf.write(s + "\n")
        logf.flush()

    names = [n for n in CONFIGS if not args.only or n in args.only.split(",")]
    build_dir = "/tmp/decode_lab_build"
    os.makedirs(build_dir, exist_ok=True)
    from concurrent.futures import ThreadPoolExecutor
    t0 = time.time()
    with ThreadPoolExecutor(8) as ex:
        built = dict(zip(names, ex.map(lambda n: build(n, CONFIGS[n], build_dir), names)))
    log(f"built {len(names)} configs in {time.time() - t0:.0f}s")
    with open(os.path.join(args.out, "ptxas.log"), "w") as f:
        for n, (so, text) in built.items():
            f.write(f"== {n}\n{text}\n")
    failures = 0
    kerns = {}
    for n in names:
        so, text = built[n]
        if not so:
            log(f"BUILD FAIL {n}:\n{text[-2000:]}")
            failures += 1
            continue
        kerns[n] = (Decode(so, CONFIGS[n]), CONFIGS[n])
        if not args.skip_check:
            failures += check_config(n, CONFIGS[n], kerns[n][0], log)
    rows = []
    if not args.skip_bench:
        rows = bench({n: kerns[n] for n in BENCH if n in kerns}, log)
    json.dump({"failures": failures, "rows": rows, "gpu": torch.cuda.get_device_name(0), "torch": torch.__version__,
               "cudnn": torch.backends.cudnn.version()}, open(os.path.join(args.out, "decode_lab.json"), "w"), indent=1)
    log(f"failures: {failures}")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
