#!/usr/bin/env python3
"""Context-parallel ring attention (flashc.ring.ring_attention) across the GPUs of one host, one process per GPU
(NCCL, NVLink multicast off), against single-GPU flashc at the same total length.

  python3 bench/bench_ring.py [--world 2] [--seqs 32768,65536,131072] [--window W [--path auto|ring]] [--out DIR]
                              [--dry-run]

bf16, B = 1, H = 16, D = 128 (the attention benchmark's H·D = 2048). Per sequence length and mask (--window W:
sliding windows instead, causal (W, 0) and non-causal (W, W), contiguous shards: ring_attention's halo path (the
neighbours' edge W rows in, one key-offset launch per rank, the halo rows' dK/dV back) when W fits in a shard, else
the ring, whose blocks are key-offset launches of the pairs of chunks that see a key; --path ring: the ring
regardless; the JSON's "path" says which ran. Single-GPU flashc runs the static window; bundles: prebuild
bench-ring-window for the default W = 4096, else the two config pairs printed by --dry-run):
- single: flashc.torch.attention on the whole sequence on GPU 0 (the other ranks wait);
- ring: ring_attention, zig-zag layout when causal without a window, contiguous shards otherwise; time = slowest
  rank;
- compute only: the same launches with the local K/V in place of the received ones (no traffic; halo path: local
  rows stand in for the halo rows);
- traffic only: the same point-to-point transfers with no launches (halo path: the halo rows of K/V, and of dK/dV);
- hidden = (compute + traffic - ring) / traffic: the share of the K/V (and dK/dV) exchange hidden behind compute
  (the halo path overlaps nothing: about 0).
Speed-up = single time / ring time (tokens per second at the same total length). Times: CUDA events, median of
--reps after one warm-up.
Checks: the ring's o / dq / dk / dv (gathered and unsharded on rank 0) against single-GPU flashc (max |diff| over
max |single|), and at the shortest length against float64 on one head — o and dq on sampled query rows, dk and dv on
sampled key rows, computed exactly from the whole sequence — where the ring's error must stay within 2 x single
flashc's error + a floor.
"""

import argparse
import json
import os
import statistics
import sys
import tempfile
import traceback

import bench_common as bc

HEADS, HEAD_DIM = 16, 128


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--world", type=int, default=2)
    p.add_argument("--seqs", default="32768,65536,131072")
    p.add_argument("--reps", type=int, default=5)
    p.add_argument("--window", type=int, default=None,
                   help="sliding window W: causal (W, 0) and non-causal (W, W) instead of the full masks")
    p.add_argument("--path", choices=("auto", "ring"), default="auto",
                   help="with --window: auto (the halo path where it applies) or ring (the ring regardless)")
    p.add_argument("--out", default=None)
    p.add_argument("--dry-run", action="store_true")
    args = p.parse_args(argv)
    args.seqs = [int(s) for s in args.seqs.split(",") if s]
    if args.window is not None and args.window < 0:
        p.error("--window must be >= 0 (keys each side of the diagonal), got %d" % args.window)
    return args


def window_of(args, causal):
    """The (left, right) window of a run, or None (full masks)."""
    if args.window is None:
        return None
    return (args.window, 0 if causal else args.window)


def visible_pairs(seq, causal, window):
    """Number of (query, key) pairs visible in self-attention over `seq` tokens (the FLOP count's area): causal
    j <= i, window (left, right): i - left <= j <= i + right."""
    if window is None:
        return seq * (seq + 1) // 2 if causal else seq * seq
    left, right = window
    right = 0 if causal else right
    upper = _count_le(seq, seq if right < 0 else right)  # j <= i + right
    lower = 0 if left < 0 else _count_le(seq, -left - 1)  # j < i - left
    return upper - lower


def _count_le(seq, offset):
    """#pairs (i, j) in [0, seq)^2 with j <= i + offset."""
    if offset >= seq - 1:
        return seq * seq
    if offset <= -seq:
        return 0
    if offset >= 0:  # rows i < seq - offset have i + offset + 1 keys, the rest all seq
        rows = seq - offset
        return (offset + 1 + seq) * rows // 2 + offset * seq
    n = seq + offset  # rows i >= -offset have i + offset + 1 keys (1 .. seq + offset)
    return n * (n + 1) // 2



def _time(torch, fn, reps):
    fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times)


def _slowest(torch, dist, ms):
    t = torch.tensor([ms], dtype=torch.float64, device="cuda")
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    return float(t.item())


def _hidden(causal, window, i, j):
    """[len(i), len(j)] bool: key positions j masked out for query positions i (self-attention)."""
    hidden = j[None, :] > i[:, None] if causal else None
    if window is not None:
        left, right = window
        for side in ((j[None, :] < i[:, None] - left) if left >= 0 else None,
                     (j[None, :] > i[:, None] + right) if right >= 0 and not causal else None):
            if side is not None:
                hidden = side if hidden is None else hidden | side
    return hidden


def _sampled_reference(torch, q, k, v, do, causal, scale, rows, cols, chunk=2048, window=None):
    """Float64 attention of one (batch, head) slice [S, D]: o, dq on query `rows`, dk, dv on key `cols`, exact over
    the whole sequence (lse and D = rowsum(dO * O) of every row, computed in chunks). window: (left, right) or None.
    Every row sees at least its own key, so no row is empty."""
    q, k, v, do = (t.double() for t in (q, k, v, do))
    S = q.shape[0]
    pos = torch.arange(S, device=q.device)
    lse = torch.empty(S, dtype=torch.float64, device=q.device)
    delta = torch.empty(S, dtype=torch.float64, device=q.device)

    def masked(s, i, j):
        hidden = _hidden(causal, window, i, j)
        return s if hidden is None else s.masked_fill(hidden, float("-inf"))

    for r0 in range(0, S, chunk):
        s = masked((q[r0:r0 + chunk] @ k.T) * scale, pos[r0:r0 + chunk], pos)
        lse[r0:r0 + chunk] = torch.logsumexp(s, dim=1)
        o = torch.softmax(s, dim=1) @ v
        delta[r0:r0 + chunk] = (o * do[r0:r0 + chunk]).sum(1)
    s = masked((q[rows] @ k.T) * scale, rows, pos)
    p = torch.exp(s - lse[rows, None])
    o_rows = p @ v
    ds = p * (do[rows] @ v.T - delta[rows, None])
    dq_rows = (ds @ k) * scale
    s = masked((q @ k[cols].T) * scale, pos, cols)
    p = torch.exp(s - lse[:, None])
    ds = p * (do @ v[cols].T - delta[:, None])
    return o_rows, dq_rows, (ds.T @ q) * scale, p.T @ do


def _rel(torch, got, ref):
    return float((got.double() - ref.double()).abs().max() / ref.double().abs().max().clamp_min(1e-30))


def _worker(rank, world, init_file, args, results):
    try:
        import torch
        import torch.distributed as dist
        from flashc import ring  # sets NCCL_NVLS_ENABLE=0 before the process group exists
        import flashc.torch as ft
        torch.cuda.set_device(rank)
        dist.init_process_group("nccl", init_method="file://" + init_file, rank=rank, world_size=world)
        rows_out = []
        for seq in args.seqs:
            for causal in (False, True):
                row = _measure(torch, dist, ring, ft, rank, world, seq, causal, args, check64=seq == min(args.seqs))
                if rank == 0:
                    rows_out.append(row)
                    print("  %s" % json.dumps(row), flush=True)
                torch.cuda.empty_cache()
        dist.destroy_process_group()
        results.put((rank, rows_out))
    except BaseException:
        results.put((rank, traceback.format_exc()))


def _measure(torch, dist, ring, ft, rank, world, seq, causal, args, check64):
    g = torch.Generator(device="cuda").manual_seed(seq + causal)  # every rank draws the same full tensors
    full = lambda: torch.randn(1, HEADS, seq, HEAD_DIM, device="cuda", generator=g).to(torch.bfloat16)
    q, k, v, do = full(), full(), full(), full()
    window = window_of(args, causal)
    zigzag = causal and window is None  # windows: contiguous shards, causal or not
    shard = (lambda t: ring.zigzag_shard(t, world, rank)) if zigzag else (lambda t: t.chunk(world, dim=2)[rank])
    ql, kl, vl, dol = (shard(t).contiguous() for t in (q, k, v, do))
    leaves = [t.requires_grad_() for t in (ql, kl, vl)]
    # FLOPs of the visible area: S²/2 causal, S² full (as the attention benchmark counts them), the exact number of
    # visible pairs under a window (about S·(W+1) causal).
    fwd_flops = (4.0 * HEADS * seq * seq * HEAD_DIM / (2 if causal else 1) if window is None
                 else 4.0 * HEADS * HEAD_DIM * visible_pairs(seq, causal, window))
    config = ring._config("bench", ql, kl, vl, causal, None, None, False, window)
    layout = ring.ring_layout(world, causal, [ql.shape[2]] * world, [kl.shape[2]] * world, config.window)
    plans = ring.halo_plans(layout) if args.path == "auto" else None
    path = "halo" if plans is not None else "ring"
    row = dict(seq=seq, causal=causal, world=world, window=list(window) if window else None, path=path)
    if args.path == "auto":
        attend = lambda: ring.ring_attention(ql, kl, vl, causal=causal, return_lse=True, window=window, path="auto")
    else:  # the ring regardless (the halo path's fallback), through ring_attention's internal entry
        attend = lambda: ring._ring_apply(ql, kl, vl, config, path=args.path)

    # Ring: o, lse and gradients (kept for the checks), then timings.
    o, lse = attend()
    grads = torch.autograd.grad(o, leaves, dol)
    ring_fwd = _slowest(torch, dist, _time(torch, attend, args.reps))
    ring_all = _slowest(torch, dist, _time(torch, lambda: torch.autograd.grad(attend()[0], leaves, dol), args.reps))

    # The same launches without traffic, and the traffic without compute.
    steps = ring.ring_schedule(layout, rank)
    cfgs = ring._configs(config)
    kc, vc = kl.detach(), vl.detach()
    if plans is not None:
        return _measure_halo(torch, dist, ring, ft, rank, world, seq, causal, args, check64, row, plans, cfgs,
                             (q, k, v, do), (ql, kc, vc, dol), o, lse, grads, ring_fwd, ring_all, fwd_flops, window)

    def compute_fwd():
        acc_o, acc_lse = ring._accumulators(torch, ql, vc)
        for step in steps:
            ring._forward_blocks(cfgs, ql.detach(), kc, vc, step.blocks, acc_o, acc_lse)

    def compute_bwd():
        dq = torch.zeros(ql.shape, dtype=torch.float32, device="cuda")
        for step in steps:
            dk = torch.zeros(kc.shape, dtype=torch.float32, device="cuda")
            dv = torch.zeros(vc.shape, dtype=torch.float32, device="cuda")
            ring._backward_blocks(cfgs, ql.detach(), kc, vc, o.detach(), lse, dol, step.blocks, dq, dk, dv)

    nxt, prv = (rank + 1) % world, (rank - 1) % world
    rk, rv = torch.empty_like(kc), torch.empty_like(vc)
    gk, gv = torch.zeros(kc.shape, dtype=torch.float32, device="cuda"), torch.zeros(vc.shape, dtype=torch.float32,
                                                                                       device="cuda")
    rgk, rgv = torch.empty_like(gk), torch.empty_like(gv)

    def traffic(with_grads):
        for _ in range(world - 1):
            ring._wait(ring._p2p(dist, None, [(kc, nxt), (vc, nxt)], [(rk, prv), (rv, prv)]))
        if with_grads:  # backward: K/V again, and the float32 dK/dV accumulators once around the ring
            for _ in range(world - 1):
                ring._wait(ring._p2p(dist, None, [(kc, nxt), (vc, nxt)], [(rk, prv), (rv, prv)]))
            for _ in range(world):
                ring._wait(ring._p2p(dist, None, [(gk, nxt), (gv, nxt)], [(rgk, prv), (rgv, prv)]))

    comp_fwd = _slowest(torch, dist, _time(torch, compute_fwd, args.reps))
    comp_bwd = _slowest(torch, dist, _time(torch, compute_bwd, args.reps))
    comm_fwd = _slowest(torch, dist, _time(torch, lambda: traffic(False), args.reps))
    comm_all = _slowest(torch, dist, _time(torch, lambda: traffic(True), args.reps))
    _timings(row, ring_fwd, ring_all, comp_fwd, comp_bwd, comm_fwd, comm_all)
    return _compare(torch, dist, ring, ft, rank, world, seq, causal, args, check64, row, (q, k, v, do), o, grads,
                    fwd_flops, window, zigzag)


def _timings(row, ring_fwd, ring_all, comp_fwd, comp_bwd, comm_fwd, comm_all):
    ring_bwd = ring_all - ring_fwd
    row.update(ring_fwd_ms=ring_fwd, ring_bwd_ms=ring_bwd, compute_fwd_ms=comp_fwd, compute_bwd_ms=comp_bwd,
               traffic_fwd_ms=comm_fwd, traffic_fwdbwd_ms=comm_all,
               hidden_fwd=max(0.0, min(1.0, (comp_fwd + comm_fwd - ring_fwd) / comm_fwd)) if comm_fwd else None,
               hidden_fwdbwd=max(0.0, min(1.0, (comp_fwd + comp_bwd + comm_all - ring_all) / comm_all))
               if comm_all else None)


def _measure_halo(torch, dist, ring, ft, rank, world, seq, causal, args, check64, row, plans, cfgs, full, local, o,
                  lse, grads, ring_fwd, ring_all, fwd_flops, window):
    """The halo path's compute only (one launch each way over [halo, local, halo] built from local rows) and
    traffic only (the halo rows of K/V forward; of dK/dV backward, the K/V halos being kept from the forward)."""
    ql, kc, vc, dol = local
    m, plan = kc.shape[2], plans[rank]
    halo = lambda t: torch.cat([t[:, :, m - plan.prev:], t, t[:, :, :plan.next]], dim=2)  # stand-in rows
    k_ext, v_ext = halo(kc), halo(vc)
    qd, od = ql.detach(), o.detach()
    comp_fwd = _slowest(torch, dist, _time(torch, lambda: (halo(kc), halo(vc), ring._halo_forward(
        cfgs, plan, qd, k_ext, v_ext)), args.reps))
    comp_bwd = _slowest(torch, dist, _time(torch, lambda: (halo(kc), halo(vc), ring._launch_backward(
        cfgs[2], qd, k_ext, v_ext, od, lse, dol, plan.key_offset)), args.reps))
    r = rank
    rows = lambda t, n: torch.empty(t.shape[:2] + (n,) + t.shape[3:], dtype=t.dtype, device=t.device)

    def exchange(send_prev, send_next, recv_prev, recv_next):
        sends = [(t[:, :, :send_prev], r - 1) for t in (kc, vc)] + [(t[:, :, m - send_next:], r + 1) for t in (kc, vc)]
        recvs = [(rows(t, recv_prev), r - 1) for t in (kc, vc)] + [(rows(t, recv_next), r + 1) for t in (kc, vc)]
        ring._wait(ring._neighbour_p2p(dist, None, sends, recvs))

    fwd = lambda: exchange(plan.send_prev, plan.send_next, plan.prev, plan.next)
    bwd = lambda: exchange(plan.prev, plan.next, plan.send_prev, plan.send_next)  # halo gradients go home
    comm_fwd = _slowest(torch, dist, _time(torch, fwd, args.reps))
    comm_all = _slowest(torch, dist, _time(torch, lambda: (fwd(), bwd()), args.reps))
    _timings(row, ring_fwd, ring_all, comp_fwd, comp_bwd, comm_fwd, comm_all)
    row["halo_rows"] = [[p.prev, p.next] for p in plans]  # per rank: rows received from the previous / next rank
    return _compare(torch, dist, ring, ft, rank, world, seq, causal, args, check64, row, full, o, grads, fwd_flops,
                    window, False)


def _compare(torch, dist, ring, ft, rank, world, seq, causal, args, check64, row, full, o, grads, fwd_flops, window,
             zigzag):
    """Gather the ring's results on rank 0; single-GPU flashc there while the other ranks wait; the checks."""
    q, k, v, do = full
    ring_fwd, ring_all = row["ring_fwd_ms"], row["ring_fwd_ms"] + row["ring_bwd_ms"]
    parts = {}
    for name, t in (("o", o), ("dq", grads[0]), ("dk", grads[1]), ("dv", grads[2])):
        got = [torch.empty_like(t) for _ in range(world)] if rank == 0 else None
        dist.gather(t.detach().contiguous(), got, dst=0)
        if rank == 0:
            parts[name] = ring.zigzag_unshard(got) if zigzag else torch.cat(got, dim=2)
    if rank == 0:
        qf, kf, vf = (t.clone().requires_grad_() for t in (q, k, v))
        so = ft.attention(qf, kf, vf, causal=causal, window=window)
        sg = torch.autograd.grad(so, (qf, kf, vf), do)
        single_fwd = _time(torch, lambda: ft.attention(qf, kf, vf, causal=causal, window=window), args.reps)
        single_all = _time(torch, lambda: torch.autograd.grad(ft.attention(qf, kf, vf, causal=causal, window=window),
                                                              (qf, kf, vf), do), args.reps)
        single_bwd = single_all - single_fwd
        row.update(single_fwd_ms=single_fwd, single_bwd_ms=single_bwd,
                   single_fwd_tflops=bc.tflops(fwd_flops, single_fwd),
                   single_bwd_tflops=bc.tflops(2.5 * fwd_flops, single_bwd),
                   ring_fwd_tflops_per_gpu=bc.tflops(fwd_flops / world, ring_fwd),
                   ring_bwd_tflops_per_gpu=bc.tflops(2.5 * fwd_flops / world, ring_bwd),
                   speedup_fwd=single_fwd / ring_fwd, speedup_bwd=single_bwd / ring_bwd,
                   speedup_fwdbwd=single_all / ring_all)
        vs_single = {n: _rel(torch, parts[n], ref) for n, ref in zip(("o", "dq", "dk", "dv"), [so] + list(sg))}
        row["vs_single"] = vs_single
        # Ring and single agree to the roundings sharding adds (one bf16 ulp per partial, see flashc.ring).
        row["check_single"] = all(e <= 2.0 ** -6 for e in vs_single.values())
        if check64:
            head = 3
            sel = torch.linspace(0, seq - 1, 192, device="cuda").long()
            ref = _sampled_reference(torch, q[0, head], k[0, head], v[0, head], do[0, head], causal,
                                     HEAD_DIM ** -0.5, sel, sel, window=window)
            pick = lambda t: t[0, head][sel]
            ring_err = [_rel(torch, pick(t), r) for t, r in zip((parts["o"], parts["dq"], parts["dk"], parts["dv"]), ref)]
            single_err = [_rel(torch, pick(t), r) for t, r in zip([so] + list(sg), ref)]
            row["vs_float64"] = dict(ring=ring_err, single=single_err)
            row["check_float64"] = all(r <= 2 * s + 2.0 ** -8 for r, s in zip(ring_err, single_err))
    dist.barrier()
    return row


def table(rows):
    header = ["S", "causal", "window", "single fwd / bwd ms", "ring fwd / bwd ms", "speed-up fwd / bwd / both",
              "ring TFLOP/s per GPU fwd / bwd", "traffic hidden fwd / fwd+bwd", "check vs single / float64"]
    out = []
    for r in rows:
        pct = lambda x: "—" if x is None else "%.0f %%" % (100 * x)
        out.append([r["seq"], "yes" if r["causal"] else "no",
                    "—" if not r.get("window") else "(%d, %d) %s" % (tuple(r["window"]) + (r.get("path", "ring"),)),
                    "%.2f / %.2f" % (r["single_fwd_ms"], r["single_bwd_ms"]),
                    "%.2f / %.2f" % (r["ring_fwd_ms"], r["ring_bwd_ms"]),
                    "%.2f / %.2f / %.2f" % (r["speedup_fwd"], r["speedup_bwd"], r["speedup_fwdbwd"]),
                    "%s / %s" % (bc.fmt(r["ring_fwd_tflops_per_gpu"]), bc.fmt(r["ring_bwd_tflops_per_gpu"])),
                    "%s / %s" % (pct(r["hidden_fwd"]), pct(r["hidden_fwdbwd"])),
                    "%s / %s" % ("pass" if r["check_single"] else "FAIL",
                                 {True: "pass", False: "FAIL"}.get(r.get("check_float64"), "—"))])
    return bc.markdown_table(header, out)


NOTES = ("bf16, B = 1, H = 16, D = 128; ring = flashc.ring.ring_attention, one process per GPU over NCCL "
         "(NCCL_NVLS_ENABLE=0); causal shards zig-zag, windowed runs contiguous shards. Window (left, right): path "
         "halo = the neighbours' edge rows exchanged, one key-offset launch per rank; path ring = each pair of "
         "chunks that sees a key is one key-offset launch. Speed-up = single-GPU flashc time / ring time at the "
         "same total length. TFLOP/s per GPU count the whole problem's FLOPs / world (forward 4·H·S²·D, halved "
         "causal, 4·H·D·(visible pairs) under a window; backward 2.5x). hidden = (compute-only + traffic-only - "
         "ring) / traffic-only. CUDA-event medians.")


def main(argv=None):
    args = parse_args(argv)
    out = bc.out_dir(args.out)
    if args.dry_run:
        print("bench_ring: dry run: world %d, seqs %s, window %s -> %s" % (args.world, args.seqs, args.window, out))
        if args.window is not None:
            from flashc import configs
            for causal, static, koff in configs.bench_ring_window_configs(args.window):
                print("  bundles (%s): %s  %s" % ("causal" if causal else "non-causal", configs.format_config(static),
                                                  configs.format_config(koff)))
        return 0
    import multiprocessing
    import torch
    os.environ.setdefault("NCCL_NVLS_ENABLE", "0")
    os.environ.setdefault("TORCH_SYMM_MEM_DISABLE_MULTICAST", "1")
    if torch.cuda.device_count() < args.world:
        print("bench_ring: SKIPPED: %d GPU(s), the ring needs %d" % (torch.cuda.device_count(), args.world))
        return 0
    ctx = multiprocessing.get_context("spawn")
    results = ctx.Queue()
    with tempfile.TemporaryDirectory() as tmp:
        procs = [ctx.Process(target=_worker, args=(r, args.world, os.path.join(tmp, "init"), args, results))
                 for r in range(args.world)]
        for p in procs:
            p.start()
        got = dict(results.get(timeout=1800) for _ in procs)
        for p in procs:
            p.join(timeout=60)
    failed = {r: v for r, v in got.items() if isinstance(v, str)}
    if failed:
        for r, v in failed.items():
            print("bench_ring: rank %d failed:\n%s" % (r, v), file=sys.stderr)
        return 1
    rows = got[0]
    env = bc.environment(torch)
    md = table(rows)
    bc.write_outputs(out, "bench_ring", env, md, rows, NOTES)
    print(md)
    ok = all(r["check_single"] and r.get("check_float64", True) for r in rows)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
