#!/usr/bin/env python3
"""Attention benchmark: flashc against PyTorch SDPA (flash, cuDNN, memory-efficient backends), FlexAttention
(torch.compile'd) and naive eager, in one process on one GPU (method: bench/README.md).

bf16, B*S = 16k tokens, H*Dv = 2048, D in {64, 128}, S in {1k, 4k, 16k}, causal and not (--head-dims takes D or
D:Dv, e.g. 256,192:128 for the large head dims). TFLOP/s with FLOPs = 2*B*H*S^2*(D+Dv) (/2 causal), backward = 2.5x forward FLOPs, backward time = (fwd+bwd) - fwd, medians of
triton.testing.do_bench, inputs rotated among a few sets, the implementations timed in interleaved rounds (each the
median of its rounds' medians: bench_common.interleaved). Also: peak memory, every flashc output and gradient
checked against float64 math on two heads (error within 2x of SDPA-flash bf16's + floor), and bundle
load+compile time (cold/warm JIT through NVRTC and the cubin path) in fresh processes.

  python3 bench/bench_attention.py [--out DIR] [--dry-run] [--head-dims 64,128[,D:Dv]] [--seqs 1024,4096,16384] [--heads H]
A padded head dim beside the tile width it pads to (bundles: prebuild bench-attention-padded):
  python3 bench/bench_attention.py --head-dims 80,96 --heads 16
Bundles: FLASHC_BUNDLE_PATH (python -m flashc.prebuild --out DIR bench). Writes DIR/bench_attention.{md,json,png}
and DIR/results/<date>-<gpu>-bench_attention.md (DIR: --out, else $OUT, else out/bench).
"""

import argparse
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import time
import traceback

import bench_common as bc

# flashc: the backward form the compiler picks (--backward-form=auto); flashc_rows / flashc_st: the row
# and the Sᵀ backward kernels (--backward-form=rows / transposed), timed beside it. (Other plans of the same
# kernels are points of their tuning spaces, timed by python -m flashc.tune.)
DEFAULT_PEERS = ["flashc", "flashc_rows", "flashc_st", "cudnn", "sdpa_flash", "flex", "sdpa_efficient", "naive"]
PEERS = DEFAULT_PEERS
# name -> backward form
FLASHC_FORMS = {"flashc": "auto", "flashc_rows": "rows", "flashc_st": "transposed"}
FLASHC_CHECKS = ["check" if name == "flashc" else "check_" + name for name in FLASHC_FORMS]
PEER_TITLES = {"flashc": "flashc", "flashc_rows": "flashc (row bwd)", "flashc_st": "flashc (Sᵀ bwd)",
               "cudnn": "cuDNN",
               "sdpa_flash": "FA2 (SDPA flash)",
               "flex": "FlexAttention",
               "sdpa_efficient": "SDPA mem-efficient", "naive": "naive eager"}


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", help="output directory (default $OUT, else bench/out)")
    p.add_argument("--dry-run", action="store_true", help="check arguments, imports and bundles; no CUDA needed")
    p.add_argument("--head-dims", default="64,128", help="D or D:Dv (query/key and value head dims), comma-separated")
    p.add_argument("--seqs", default="1024,4096,16384")
    p.add_argument("--causal", default="both", choices=["both", "yes", "no"])
    p.add_argument("--tokens", type=int, default=16384, help="B*S")
    p.add_argument("--hidden", type=int, default=2048, help="H*Dv")
    p.add_argument("--heads", type=int, default=0,
                   help="H for every head dim instead of hidden / Dv (0): rows that differ only by D, such as the "
                        "padded pair --head-dims 80,96 --heads 16 (D = 80 runs on 96-column tiles)")
    p.add_argument("--peers", default=",".join(DEFAULT_PEERS),
                   help="comma-separated subset of " + ",".join(PEERS) + " (default: all)")
    p.add_argument("--input-sets", type=int, default=3, help="input sets rotated so L2 does not flatter")
    p.add_argument("--naive-max-seq", type=int, default=8192, help="skip naive eager above this S (memory)")
    p.add_argument("--check-heads", type=int, default=2, help="(b, h) slices checked against float64 (0: none)")
    p.add_argument("--no-load-time", action="store_true", help="skip bundle load/compile timing")
    p.add_argument("--load-time-max", type=int, default=2,
                   help="time loading for at most this many bundles (each costs an NVRTC compile)")
    p.add_argument("--warmup", type=int, default=25, help="do_bench warmup ms")
    p.add_argument("--rep", type=int, default=100, help="do_bench repetition ms")
    p.add_argument("--rounds", type=int, default=3,
                   help="rounds taking the implementations in turn (bench_common.interleaved; default 3)")
    p.add_argument("--measure-load", nargs=2, metavar=("BUNDLE_DIR", "CACHE_DIR"), help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    try:
        dims = [tuple(int(y) for y in x.split(":")) for x in args.head_dims.split(",") if x]
        args.seqs = [int(x) for x in args.seqs.split(",") if x]
    except ValueError:
        dims = [()]
    if any(len(x) not in (1, 2) for x in dims):
        p.error("--head-dims takes comma-separated D or D:Dv, --seqs comma-separated integers")
    args.head_dims = [(x[0], x[-1]) for x in dims]
    args.causals = {"both": [False, True], "yes": [True], "no": [False]}[args.causal]
    args.peers = [x for x in args.peers.split(",") if x]
    unknown = [x for x in args.peers if x not in PEERS]
    if unknown:
        p.error("unknown peer(s) %s (known: %s)" % (", ".join(unknown), ", ".join(PEERS)))
    if args.heads < 0:
        p.error("--heads must be >= 0 (0: hidden / value head dim)")
    for d, dv in args.head_dims:
        if d <= 0 or dv <= 0 or (not args.heads and args.hidden % dv):
            p.error("--hidden %d is not a multiple of value head dim %d (or give --heads)" % (args.hidden, dv))
    for s in args.seqs:
        if s <= 0 or args.tokens % s:
            p.error("--tokens %d is not a multiple of sequence length %d" % (args.tokens, s))
    return args


def rows_of(args):
    from flashc.spec import AttentionConfig
    rows = []
    for d, dv in args.head_dims:
        for s in args.seqs:
            for causal in args.causals:
                heads = args.heads or args.hidden // dv
                rows.append(dict(D=d, Dv=dv, S=s, B=args.tokens // s, H=heads, causal=causal,
                                 configs={name: AttentionConfig("bf16", heads, heads, d, causal=causal,
                                                                value_head_dim=dv, backward_form=form)
                                          for name, form in FLASHC_FORMS.items()}))
    return rows


def fwd_flops(row):
    f = 2.0 * row["B"] * row["H"] * row["S"] ** 2 * (row["D"] + row["Dv"])
    return f / 2 if row["causal"] else f


# ------------------------------------------------------------ load timing
def measure_load(bundle_dir, cache_dir):
    """Child process: open + prepare one bundle with an explicit cache dir; prints JSON seconds."""
    import flashc
    t0 = time.perf_counter()
    b = flashc.Bundle(bundle_dir, cache_dir=cache_dir)
    t1 = time.perf_counter()
    b.prepare()
    t2 = time.perf_counter()
    print(json.dumps({"open_s": t1 - t0, "prepare_s": t2 - t1, "total_s": t2 - t0}))


def strip_cubins(src, dst):
    """A copy of bundle src without cubins, so loading it takes the NVRTC (JIT) path."""
    shutil.copytree(src, dst)
    manifest = os.path.join(dst, "manifest.flashc")
    with open(manifest) as f:
        lines = f.readlines()
    with open(manifest, "w") as f:
        f.writelines(l for l in lines if not l.strip().startswith("cubin "))
    for name in os.listdir(dst):
        if name.endswith(".cubin"):
            os.remove(os.path.join(dst, name))


def load_times(bundle_dir):
    def child(path, cache):
        env = dict(os.environ, PYTHONPATH=os.path.join(bc.REPO_ROOT, "python"))
        proc = subprocess.run([sys.executable, os.path.abspath(__file__), "--measure-load", path, cache],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, env=env,
                              timeout=900)
        if proc.returncode != 0:
            return {"error": proc.stderr.strip()[-500:]}
        return json.loads(proc.stdout.strip().splitlines()[-1])

    work = tempfile.mkdtemp(prefix="flashc-load-")
    try:
        out = {}
        has_cubin = any(n.endswith(".cubin") for n in os.listdir(bundle_dir))
        out["cubin"] = child(bundle_dir, os.path.join(work, "cache-cubin")) if has_cubin else {"error": "no cubin"}
        jit = os.path.join(work, "jit")
        strip_cubins(bundle_dir, jit)
        cache = os.path.join(work, "cache-jit")
        out["jit_cold"] = child(jit, cache)   # empty cache: NVRTC compiles
        out["jit_warm"] = child(jit, cache)   # same cache, new process: from disk
        return out
    finally:
        shutil.rmtree(work, ignore_errors=True)


# ------------------------------------------------------------- the peers
def make_impls(torch, row, names):
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel
    causal, S = row["causal"], row["S"]
    impls = {}

    def sdpa(backend):
        def run(q, k, v):
            with sdpa_kernel([backend]):
                return F.scaled_dot_product_attention(q, k, v, is_causal=causal)
        return run

    for name in FLASHC_FORMS:
        if name in names:
            import flashc.torch as ft
            c = row["configs"][name]
            impls[name] = lambda q, k, v, c=c: ft.attention(q, k, v, causal=causal, backward_form=c.backward_form)
    if "cudnn" in names:
        impls["cudnn"] = sdpa(SDPBackend.CUDNN_ATTENTION)
    if "sdpa_flash" in names:
        impls["sdpa_flash"] = sdpa(SDPBackend.FLASH_ATTENTION)
    if "sdpa_efficient" in names:
        impls["sdpa_efficient"] = sdpa(SDPBackend.EFFICIENT_ATTENTION)
    if "flex" in names:
        impls["flex"] = make_flex(torch, row)
    if "naive" in names:
        scale = 1.0 / math.sqrt(row["D"])
        mask = torch.ones(S, S, dtype=torch.bool, device="cuda").triu(1) if causal else None

        def naive(q, k, v):
            s = torch.matmul(q, k.transpose(-1, -2)) * scale
            if mask is not None:
                s = s.masked_fill(mask, float("-inf"))
            return torch.matmul(torch.softmax(s.float(), dim=-1).to(q.dtype), v)
        impls["naive"] = naive
    return impls


_flex_compiled = None


def make_flex(torch, row):
    """torch.compile'd flex_attention, with the recompile limit raised and fallback made an error."""
    global _flex_compiled
    from torch.nn.attention.flex_attention import create_block_mask, flex_attention
    import torch._dynamo
    cfg = torch._dynamo.config
    for name in ("recompile_limit", "cache_size_limit"):
        if hasattr(cfg, name):
            setattr(cfg, name, 1024)
    if hasattr(cfg, "accumulated_recompile_limit"):
        cfg.accumulated_recompile_limit = 8192
    if hasattr(cfg, "accumulated_cache_size_limit"):
        cfg.accumulated_cache_size_limit = 8192
    if hasattr(cfg, "fail_on_recompile_limit_hit"):
        cfg.fail_on_recompile_limit_hit = True  # never fall back to unfused code silently
    if _flex_compiled is None:
        _flex_compiled = torch.compile(flex_attention, fullgraph=True, dynamic=False)
    block_mask = None
    if row["causal"]:
        block_mask = create_block_mask(lambda b, h, q_idx, kv_idx: q_idx >= kv_idx, B=None, H=None,
                                       Q_LEN=row["S"], KV_LEN=row["S"], device="cuda")
    return lambda q, k, v: _flex_compiled(q, k, v, block_mask=block_mask)


def dynamo_graph_count(torch):
    from torch._dynamo.utils import counters
    return sum(counters["stats"].values()) if "stats" in counters else 0, dict(counters.get("graph_break", {}))


# ----------------------------------------------------------- measurement
def input_sets(torch, row, count, grad=True):
    sets = []
    shapes = [(row["B"], row["H"], row["S"], d) for d in (row["D"], row["D"], row["Dv"], row["Dv"])]
    for i in range(count):
        g = torch.Generator(device="cuda").manual_seed(1000 + i)
        q, k, v, do = (torch.randn(shape, device="cuda", generator=g, dtype=torch.bfloat16) for shape in shapes)
        sets.append((q.requires_grad_(grad), k.requires_grad_(grad), v.requires_grad_(grad), do))
    return sets


def prepare(torch, fn, sets):
    """The timed calls of one implementation (fwd, fwd+bwd over the rotated input sets), its gradient leaves, and the
    peak extra MiB of one fwd+bwd (after a first call of each: compiled / loaded outside the timing)."""
    counter = [0]

    def pick():
        counter[0] = (counter[0] + 1) % len(sets)
        return sets[counter[0]]

    def fwd():
        q, k, v, _ = pick()
        fn(q, k, v)

    def fwd_bwd():
        q, k, v, do = pick()
        fn(q, k, v).backward(do)

    leaves = [t for s in sets for t in s[:3]]
    fwd()
    fwd_bwd()
    torch.cuda.synchronize()
    for t in leaves:
        t.grad = None
    torch.cuda.reset_peak_memory_stats()
    before = torch.cuda.memory_allocated()
    fwd_bwd()
    torch.cuda.synchronize()
    peak = (torch.cuda.max_memory_allocated() - before) / 2 ** 20
    for t in leaves:
        t.grad = None
    return fwd, fwd_bwd, leaves, peak


def check_flashc(torch, row, impls, sets, heads, flashc_name="flashc", ran=()):
    """Max errors of flashc's o, dq, dk, dv on `heads` (b, h) slices vs float64, and the bf16 error of the first
    peer that ran this row (SDPA flash, cuDNN, FlexAttention, SDPA mem-efficient; D != Dv rules out some), or with
    none (--peers flashc) of the unfused math in bf16 on the slices: flashc.measure.check_attention."""
    from flashc import measure
    q, k, v, do = [t.detach() for t in sets[0]]

    def runner(name):
        def run(q, k, v, do):
            qq, kk, vv = (t.clone().requires_grad_() for t in (q, k, v))
            o = impls[name](qq, kk, vv)
            o.backward(do)
            return [o.detach(), qq.grad, kk.grad, vv.grad]
        return run

    peer_name = next((p for p in ("sdpa_flash", "cudnn", "flex", "sdpa_efficient") if p in impls and p in ran), None)
    return measure.check_attention(runner(flashc_name), q, k, v, do, causal=row["causal"], heads=heads,
                                   peer_run=runner(peer_name) if peer_name else None, peer_name=peer_name)


def run_row(torch, row, args, load_cache):
    from flashc import cache
    result = {k: row[k] for k in ("D", "Dv", "S", "B", "H", "causal")}
    result["impls"] = {}
    names = list(args.peers)
    if "naive" in names and row["S"] > args.naive_max_seq:
        names.remove("naive")
        result["impls"]["naive"] = {"status": "skipped (S > --naive-max-seq: memory)"}
    for flashc_name in FLASHC_FORMS:
        if flashc_name not in names:
            continue
        config = row["configs"][flashc_name]
        bundle = cache.find_bundle_dir(config)
        result[flashc_name + "_key"] = config.key
        if bundle is None and cache.find_compiler() is None:
            names.remove(flashc_name)
            result["impls"][flashc_name] = {"status": "no bundle %s (prebuild it)" % config.key}
        elif (flashc_name == "flashc" and bundle and not args.no_load_time and bundle not in load_cache
              and len(load_cache) < args.load_time_max):
            print("  timing bundle load (cubin, JIT cold, JIT warm) of %s" % bundle, flush=True)
            load_cache[bundle] = load_times(bundle)
        if flashc_name == "flashc" and bundle:
            result["load"] = load_cache.get(bundle)
    impls = {}
    for name in names:  # one peer that cannot be set up (e.g. no FlexAttention) must not stop the others
        try:
            impls.update(make_impls(torch, row, [name]))
        except Exception as e:
            result["impls"][name] = {"status": "error: %s" % str(e).splitlines()[0][:300]}
            traceback.print_exc()
    sets = input_sets(torch, row, args.input_sets)
    flops = fwd_flops(row)

    def failure(e):
        if isinstance(e, torch.cuda.OutOfMemoryError) or "out of memory" in str(e):
            return {"status": "out of memory"}
        return {"status": "error: %s" % str(e).splitlines()[0][:300]}
    # Each implementation set up (first calls, peak memory), then all timed in interleaved rounds
    # (bench_common.interleaved: the GPU's clocks settle over back-to-back runs; taking turns evens that out).
    measures, peaks, graphs_before = {}, {}, dynamo_graph_count(torch) if "flex" in impls else (0, {})
    for name, fn in impls.items():
        try:
            fwd, fwd_bwd, leaves, peaks[name] = prepare(torch, fn, sets)
            measures[name] = {"fwd": (fwd, None), "fwdbwd": (fwd_bwd, leaves)}
        except Exception as e:  # a failing peer must not take the whole benchmark down
            result["impls"][name] = failure(e)
            traceback.print_exc()
            torch.cuda.empty_cache()
    timed = bc.interleaved(measures, rounds=args.rounds, warmup=args.warmup, rep=args.rep)
    for name in measures:
        if "error" in timed[name]:
            entry = failure(RuntimeError(timed[name]["error"]))
        else:
            t_fwd, t_fb = timed[name]["fwd"], timed[name]["fwdbwd"]
            entry = dict(fwd_ms=t_fwd, fwdbwd_ms=t_fb, bwd_ms=t_fb - t_fwd, peak_mib=peaks[name],
                         fwd_tflops=bc.tflops(flops, t_fwd), bwd_tflops=bc.tflops(2.5 * flops, t_fb - t_fwd),
                         status="ok")
            if name == "flex":
                graphs_after, breaks_after = dynamo_graph_count(torch)
                entry["dynamo_new_graph_stats"] = graphs_after - graphs_before[0]
                if breaks_after != graphs_before[1]:
                    entry["status"] = "graph breaks: %s" % breaks_after
        result["impls"][name] = entry
        print("  %-15s %s" % (name, {k: (round(v, 3) if isinstance(v, float) else v) for k, v in entry.items()}),
              flush=True)
    for name in impls:
        if name not in measures:
            print("  %-15s %s" % (name, result["impls"][name]), flush=True)
    torch.cuda.empty_cache()
    # Outputs: flashc checked against float64; Flex compared with SDPA flash (no silent unfused fallback).
    for flashc_name in FLASHC_FORMS:
        if flashc_name in impls and result["impls"][flashc_name].get("status") == "ok" and args.check_heads > 0:
            where = FLASHC_CHECKS[list(FLASHC_FORMS).index(flashc_name)]
            try:
                ran = [n for n, e in result["impls"].items() if e.get("status") == "ok"]
                ok, detail = check_flashc(torch, row, impls, sets, args.check_heads, flashc_name, ran)
                result[where] = {"pass": ok, "detail": detail}
            except Exception as e:
                result[where] = {"pass": False, "detail": "error: %s" % e}
                traceback.print_exc()
    if ("flex" in impls and "sdpa_flash" in impls and result["impls"]["flex"].get("status") == "ok"
            and result["impls"]["sdpa_flash"].get("status") == "ok"):  # SDPA flash refuses D != Dv
        q, k, v, _ = [t.detach() for t in sets[0]]
        with torch.no_grad():
            diff = float((impls["flex"](q, k, v).float() - impls["sdpa_flash"](q, k, v).float()).abs().max())
        result["impls"]["flex"]["max_diff_vs_sdpa_flash"] = diff
        if not diff < 0.05:
            result["impls"]["flex"]["status"] = "output differs from SDPA flash by %.3g" % diff
    del sets
    torch.cuda.empty_cache()
    return result


# ---------------------------------------------------------------- report
def best_peer(result, key):
    values = [(e.get(key), n) for n, e in result["impls"].items() if n not in FLASHC_FORMS and e.get(key) is not None]
    return max(values) if values else (None, None)


def table(results, peers):
    header = ["D", "S", "causal"] + ["%s fwd / bwd" % PEER_TITLES[p] for p in peers] + \
             ["flashc/best fwd", "flashc/best bwd", "flashc peak MiB", "best-peer peak MiB", "flashc check",
              "load cubin / JIT cold / JIT warm s"]
    rows = []
    for r in results:
        cells = [r["D"] if r.get("Dv", r["D"]) == r["D"] else "%d / %d" % (r["D"], r["Dv"]), r["S"],
                 "yes" if r["causal"] else "no"]
        for p in peers:
            e = r["impls"].get(p, {})
            cells.append("%s / %s" % (bc.fmt(e.get("fwd_tflops")), bc.fmt(e.get("bwd_tflops"))) if e.get("status") == "ok"
                         else e.get("status", "—").split(":")[0])
        f = r["impls"].get("flashc", {})
        ratios = []
        for key in ("fwd_tflops", "bwd_tflops"):
            best, name = best_peer(r, key)
            mine = f.get(key)
            ratios.append("%.2f (%s)" % (mine / best, PEER_TITLES[name]) if mine and best else "—")
        cells += ratios
        cells.append(bc.fmt(f.get("peak_mib")))
        peaks = [e.get("peak_mib") for n, e in r["impls"].items() if n not in FLASHC_FORMS and e.get("status") == "ok"]
        cells.append(bc.fmt(min(peaks)) if peaks else "—")
        checks = [r.get(c) for c in FLASHC_CHECKS]
        cells.append(" / ".join("—" if c is None else ("pass" if c["pass"] else "FAIL") for c in checks))
        load = r.get("load") or {}
        cells.append(" / ".join(bc.fmt(load.get(k, {}).get("total_s"), 2) for k in ("cubin", "jit_cold", "jit_warm"))
                     if load else "—")
        rows.append(cells)
    return bc.markdown_table(header, rows)


def plot(path, results, peers):
    labels = ["D%d%s S%d%s" % (r["D"], "" if r.get("Dv", r["D"]) == r["D"] else "/%d" % r["Dv"], r["S"],
                               " c" if r["causal"] else "") for r in results]
    series = {}
    for p in peers:
        series[PEER_TITLES[p] + " fwd"] = [r["impls"].get(p, {}).get("fwd_tflops") for r in results]
    return bc.bar_plot(path, "attention forward, bf16, H*D=2048, 16k tokens", labels, series)


NOTES = ("TFLOP/s: fwd FLOPs 2*B*H*S^2*(D+Dv) (/2 causal); bwd FLOPs 2.5x fwd over (fwd+bwd - fwd) time; "
         "triton do_bench medians; peak MiB: max_memory_allocated during one fwd+bwd above what was allocated "
         "before it; flashc check (default / row backward / Sᵀ backward): o, dq, dk, dv on two heads vs float64, "
         "error <= 2x SDPA-flash bf16 error + 1e-4; flashc: the backward form flashc picks (--backward-form=auto); "
         "flashc (row bwd) / (Sᵀ bwd): --backward-form=rows / transposed kernels; "
         "load: open+prepare in a fresh process (cubin; JIT with an empty NVRTC cache; JIT again warm).")


def main(argv=None):
    args = parse_args(argv)
    if args.measure_load:
        measure_load(*args.measure_load)
        return 0
    out = bc.out_dir(args.out)
    import flashc  # noqa: F401
    from flashc import cache
    rows = rows_of(args)
    if args.dry_run:
        print("dry run: %d rows, peers %s, output %s" % (len(rows), ", ".join(args.peers), out))
        for mod in ("torch", "triton", "matplotlib"):
            try:
                __import__(mod)
                print("  import %s: ok" % mod)
            except ImportError:
                print("  import %s: MISSING (needed on the device)" % mod)
        for r in rows:
            for name, config in r["configs"].items():
                found = cache.find_bundle_dir(config)
                print("  D=%d Dv=%d S=%d B=%d H=%d causal=%s %s bundle %s: %s" % (
                    r["D"], r["Dv"], r["S"], r["B"], r["H"], r["causal"], name, config.key, found or "MISSING"))
        # Exercise the writers with empty measurements.
        fake = [{**{k: r[k] for k in ("D", "Dv", "S", "B", "H", "causal")}, "impls": {p: {"status": "dry-run"}
                                                                             for p in args.peers}} for r in rows]
        env = bc.environment()
        md = table(fake, args.peers)
        report = bc.write_outputs(out, "bench_attention", env, md, fake, NOTES + " (dry run: nothing measured)")
        plot(os.path.join(out, "bench_attention.png"), fake, args.peers)
        print(md)
        print("dry run wrote %s" % report)
        return 0
    import torch
    if not torch.cuda.is_available():
        print("bench_attention: no CUDA device (use --dry-run to check the setup without one)", file=sys.stderr)
        return 1
    env = bc.environment(torch)
    print("environment: %s" % env, flush=True)
    results, load_cache = [], {}
    for row in rows:
        print("row D=%d Dv=%d S=%d B=%d H=%d causal=%s" % (row["D"], row["Dv"], row["S"], row["B"], row["H"],
                                                          row["causal"]), flush=True)
        results.append(run_row(torch, row, args, load_cache))
        # Written after every row: a run cut short still leaves its numbers.
        bc.write_outputs(out, "bench_attention", env, table(results, args.peers), results, NOTES)
    md = table(results, args.peers)
    report = bc.write_outputs(out, "bench_attention", env, md, results, NOTES)
    png = plot(os.path.join(out, "bench_attention.png"), results, args.peers)
    print("\nwrote %s%s" % (report, (" and " + png) if png else " (no matplotlib: no plot)"))
    print(md)
    failed = [r for r in results if any(r.get(c) and not r[c]["pass"] for c in FLASHC_CHECKS)]
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
