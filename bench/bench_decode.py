"""Decode attention over a KV cache: flashc's bundles (flash.decode_attention) against SDPA's cuDNN and flash
backends in the same process, bandwidth = K + V bytes of the visible keys / time.

  python3 bench/bench_decode.py --prebuild DIR        (the dev machine: writes the specs and compiles them with
                                                        flashc, one bundle a cache layout)
  python3 bench/bench_decode.py --bundles DIR [--out DIR] [--rows 1x32768,16x8192,...]   (the GPU machine)

Rows: 1 new token, 32 query / 8 kv heads, D = 128, bf16 (issue #17's grid), a contiguous cache and a paged one
(64-row pages in a shuffled order), and the paged step with the new token's K/V appended first in the same program
(flash.kv_append: what a serving loop runs; its check replaces the decode's). Each call is timed two ways: per call (CUDA events around the launch, L2
flushed: includes the host's launch overhead, which a 30 µs decode step shows) and as CUDA-graph replays (the
GPU alone, as a serving loop that replays graphs sees it). SDPA takes the contiguous cache with enable_gqa."""
import argparse
import os
import subprocess
import sys

import bench_common as common

HQ, HKV, D = 32, 8, 128
LAYOUTS = {"contiguous": 0, "paged64": 64, "paged64_append": 64}


def spec_text(page, append=False):
    q = f"tensor<?x{HQ}x1x{D}xbf16>"
    if append:
        cache, new = f"tensor<?x{page}x{HKV}x{D}xbf16>", f"tensor<?x{HKV}x1x{D}xbf16>"
        return (f"func.func @decode(%q: {q}, %k_new: {new}, %v_new: {new}, %k: {cache}, %v: {cache}, "
                f"%lens: tensor<?xi32>, %table: tensor<?x?xi32>) -> ({q}, tensor<?x{HQ}x1xf32>) {{\n"
                f"  %k2, %v2 = flash.kv_append %k_new, %v_new into %k, %v, %lens page_size = {page} block_table %table"
                f"\n      : ({new}, {new}, {cache}, {cache}, tensor<?xi32>, tensor<?x?xi32>) -> ({cache}, {cache})\n"
                f"  %out, %lse = flash.decode_attention %q, %k2, %v2, %lens block_table %table scale = {D ** -0.5:.9f}"
                f" causal page_size = {page} num_kv_heads = {HKV}\n"
                f"      : ({q}, {cache}, {cache}, tensor<?xi32>, tensor<?x?xi32>) -> ({q}, tensor<?x{HQ}x1xf32>)\n"
                f"  return %out, %lse : {q}, tensor<?x{HQ}x1xf32>\n}}\n")
    if page:
        cache = f"tensor<?x{page}x{HKV}x{D}xbf16>"
        return (f"func.func @decode(%q: {q}, %k: {cache}, %v: {cache}, %lens: tensor<?xi32>, %table: tensor<?x?xi32>)"
                f" -> ({q}, tensor<?x{HQ}x1xf32>) {{\n"
                f"  %out, %lse = flash.decode_attention %q, %k, %v, %lens block_table %table scale = {D ** -0.5:.9f}"
                f" causal page_size = {page} num_kv_heads = {HKV}\n"
                f"      : ({q}, {cache}, {cache}, tensor<?xi32>, tensor<?x?xi32>) -> ({q}, tensor<?x{HQ}x1xf32>)\n"
                f"  return %out, %lse : {q}, tensor<?x{HQ}x1xf32>\n}}\n")
    cache = f"tensor<?x{HKV}x?x{D}xbf16>"
    return (f"func.func @decode(%q: {q}, %k: {cache}, %v: {cache}, %lens: tensor<?xi32>)"
            f" -> ({q}, tensor<?x{HQ}x1xf32>) {{\n"
            f"  %out, %lse = flash.decode_attention %q, %k, %v, %lens scale = {D ** -0.5:.9f} causal"
            f" num_kv_heads = {HKV}\n"
            f"      : ({q}, {cache}, {cache}, tensor<?xi32>) -> ({q}, tensor<?x{HQ}x1xf32>)\n"
            f"  return %out, %lse : {q}, tensor<?x{HQ}x1xf32>\n}}\n")


def prebuild(directory, flashc):
    os.makedirs(directory, exist_ok=True)
    for name, page in LAYOUTS.items():
        spec = os.path.join(directory, f"decode_{name}.mlir")
        with open(spec, "w") as f:
            f.write(spec_text(page, name.endswith("_append")))
        subprocess.run([flashc, spec, "--emit=bundle", "-o", os.path.join(directory, f"decode_{name}")], check=True)
        print("built", os.path.join(directory, f"decode_{name}"))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--prebuild", help="write the specs and bundles into this directory (needs flashc)")
    ap.add_argument("--flashc", default=os.path.join(common.REPO_ROOT, "build", "bin", "flashc"))
    ap.add_argument("--bundles", help="directory holding decode_contiguous/, decode_paged64/ and "
                    "decode_paged64_append/")
    ap.add_argument("--rows", default="1x32768,16x8192,64x4096,128x2048")
    ap.add_argument("--out")
    args = ap.parse_args()
    if args.prebuild:
        return prebuild(args.prebuild, args.flashc)
    import torch
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel
    from triton.testing import do_bench_cudagraph
    from flashc.bundle import Bundle

    out = common.out_dir(args.out)
    env = common.environment(torch)
    bundles = {name: Bundle(os.path.join(args.bundles, f"decode_{name}")) for name in LAYOUTS}

    def timed(f):
        f()
        return common.do_bench(f, warmup=25, rep=200), do_bench_cudagraph(f, rep=200, return_mode="median")

    rows, table = [], []
    for row in args.rows.split(","):
        B, ctx = (int(x) for x in row.split("x"))
        kv_bytes = 2 * B * HKV * ctx * D * 2
        tbps = lambda ms: kv_bytes / (ms * 1e-3) / 1e12
        q = torch.randn(B, HQ, 1, D, device="cuda", dtype=torch.bfloat16)
        k = torch.randn(B, HKV, ctx, D, device="cuda", dtype=torch.bfloat16)
        v = torch.randn(B, HKV, ctx, D, device="cuda", dtype=torch.bfloat16)
        lens = torch.full((B,), ctx, device="cuda", dtype=torch.int32)
        result = {"batch": B, "context": ctx, "kv_bytes": kv_bytes}
        ref = None
        for peer, backend in (("cudnn", SDPBackend.CUDNN_ATTENTION), ("flash", SDPBackend.FLASH_ATTENTION)):
            try:
                with sdpa_kernel(backend):
                    f = lambda: F.scaled_dot_product_attention(q, k, v, enable_gqa=True)
                    ref = f() if ref is None else ref
                    per_call, graph = timed(f)
                result[peer], result[peer + "_graph"] = tbps(per_call), tbps(graph)
            except Exception as e:  # noqa: BLE001
                result[peer] = result[peer + "_graph"] = None
                print(f"{peer} {row}: {type(e).__name__}: {str(e)[:160]}")
        k_new = torch.randn(B, HKV, 1, D, device="cuda", dtype=torch.bfloat16)  # (the append's: rows ctx - 1)
        v_new = torch.randn_like(k_new)
        o = torch.empty(B, HQ, 1, D, device="cuda", dtype=torch.bfloat16)
        lse = torch.empty(B, HQ, 1, device="cuda", dtype=torch.float32)
        for name, page in LAYOUTS.items():
            if page:  # the same keys, in shuffled 64-row pages
                width = ctx // page
                perm = torch.randperm(B * width, device="cuda")
                kp = torch.empty(B * width, page, HKV, D, device="cuda", dtype=torch.bfloat16)
                vp = torch.empty_like(kp)
                kp[perm] = k.view(B, HKV, width, page, D).permute(0, 2, 3, 1, 4).reshape(B * width, page, HKV, D)
                vp[perm] = v.view(B, HKV, width, page, D).permute(0, 2, 3, 1, 4).reshape(B * width, page, HKV, D)
                block_table = perm.view(B, width).to(torch.int32)
                call = dict(q=q, k_cache=kp, v_cache=vp, cache_seqlens=lens, block_table=block_table, out=o, lse=lse)
                if name.endswith("_append"):
                    call.update(k_new=k_new, v_new=v_new)
            else:
                call = dict(q=q, k_cache=k, v_cache=v, cache_seqlens=lens, out=o, lse=lse)
            f = lambda: bundles[name].launch("decode", **call)
            f()
            torch.cuda.synchronize()
            # (the append overwrote each sequence's last key and value: no comparison with SDPA's out)
            err = (o.float() - ref.float()).abs().max().item() if ref is not None and "append" not in name \
                else float("nan")
            per_call, graph = timed(f)
            result[name], result[name + "_graph"], result[name + "_maxerr_vs_cudnn"] = tbps(per_call), tbps(graph), err
            # The table check's verdict read at a later launch (Bundle.defer_checks): no stream synchronization a call.
            bundles[name].defer_checks(True)
            result[name + "_deferred"] = tbps(common.do_bench(f, warmup=25, rep=200))
            bundles[name].check_deferred()
            bundles[name].defer_checks(False)
            if page:
                del kp, vp
        rows.append(result)
        fmt = lambda x: "—" if x is None else f"{x:.2f}"
        table.append([f"{B} x {ctx}", fmt(result["cudnn"]) + " / " + fmt(result["cudnn_graph"]),
                      fmt(result["flash"]) + " / " + fmt(result["flash_graph"]),
                      fmt(result["contiguous"]) + " / " + fmt(result["contiguous_deferred"]) + " / " +
                      fmt(result["contiguous_graph"]),
                      fmt(result["paged64"]) + " / " + fmt(result["paged64_deferred"]) + " / " +
                      fmt(result["paged64_graph"]),
                      fmt(result["paged64_append_deferred"]) + " / " + fmt(result["paged64_append_graph"]),
                      fmt(result["contiguous_graph"] / result["cudnn_graph"]) if result["cudnn_graph"] else "—",
                      f"{result['contiguous_maxerr_vs_cudnn']:.1e}"])
        print(table[-1], flush=True)
        del k, v
    md = common.markdown_table(["B x context", "cuDNN", "FA2 (SDPA flash)", "flashc contiguous", "flashc paged 64",
                                "flashc paged 64 + append (deferred / graph)", "flashc / cuDNN (graph)",
                                "max |out - cuDNN|"], table)
    notes = ("TB/s of K + V bytes: per call / CUDA-graph replay (flashc: per call waiting for the table check's "
             "verdict / per call with it deferred / graph). 1 token, 32 query / 8 kv heads, D = 128, bf16, causal "
             "(one token: every key visible). + append: the same step with the new token's K/V written into the cache "
             "by the program first (bandwidth over the same K + V bytes).")
    print(common.write_outputs(out, "decode", env, md, rows, notes))


if __name__ == "__main__":
    sys.exit(main())
