"""What a mask modifier costs the attention kernels beside the window attribute that expresses the same mask.

Session 56's reading of bench_programmable (session 55, H100): prefix-LM's backward kernels take 1.127x ALiBi's,
where prefix-LM walks 6.25 % more key-query blocks than a causal mask and ALiBi adds a score modifier. This times,
in one process and by torch.profiler's kernel records (each kernel's median over --calls calls, the rows in turn
for --rounds rounds), B = 1, H = 16, D = 128, S = 16k, bf16:
  causal      causal=True (the window attribute: Window<-1, 0>)
  causal_mod  mask_mod k <= q (the compiler folds it into the same window: a check that it did)
  prefix0     mask_mod (k < 0) | (k <= q): the causal mask as a modifier the compiler keeps (ModMask), same blocks
  prefix_lm   mask_mod (k < 4096) | (k <= q): bench_programmable's row (+6.25 % of the blocks)
  alibi       causal=True with ALiBi's score modifier: bench_programmable's row
prefix0 against causal is the modifier form's own cost; prefix_lm against prefix0 is the prefix's work.
Bundles: FLASHC_BUNDLE_PATH must hold them (prebuild bench-programmable and the two texts printed by --print-configs).

    python3 bench/probes/mask_form_overhead.py [--calls 10] [--rounds 2] [--rows causal,prefix0]
"""
import argparse
import os
import statistics
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))

ROWS = ["causal", "causal_mod", "prefix0", "prefix_lm", "alibi"]


def causal_mod(b, h, q_idx, kv_idx):
    return kv_idx <= q_idx


def prefix0_mod(b, h, q_idx, kv_idx):
    return (kv_idx < 0) | (kv_idx <= q_idx)


def row_kwargs(name, heads):
    from flashc import configs
    from flashc.modifier_inputs import alibi_slopes
    if name == "causal":
        return dict(causal=True)
    if name == "causal_mod":
        return dict(mask_mod=causal_mod)
    if name == "prefix0":
        return dict(mask_mod=prefix0_mod)
    if name == "prefix_lm":
        return dict(mask_mod=configs.bench_prefix_lm_mod)
    slopes = alibi_slopes(heads)
    return dict(causal=True, score_mod=lambda score, b, h, q_idx, kv_idx: score + slopes[h] * (kv_idx - q_idx))


def kernel_times(torch, bc, fn, calls):
    """{kernel name: [us per call, one a call]}."""
    samples = {}
    for _ in range(calls):
        for name, us in bc.cuda_kernel_times(fn, 1).items():
            samples.setdefault(name, []).append(us)
    return samples


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", default=",".join(ROWS))
    ap.add_argument("--seq", type=int, default=16384)
    ap.add_argument("--heads", type=int, default=16)
    ap.add_argument("--calls", type=int, default=10)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--print-configs", action="store_true", help="the config texts of the rows' bundles (no GPU)")
    args = ap.parse_args(argv)
    rows = [r for r in args.rows.split(",") if r]
    if args.print_configs:
        from flashc import configs
        for f in (causal_mod, prefix0_mod):
            print(configs.format_config(configs.AttentionConfig("bf16", args.heads, args.heads, 128, mask_mod=f)))
        return 0
    import torch
    import bench_common as bc
    import flashc.torch as ft
    S, H, D = args.seq, args.heads, 128
    g = torch.Generator(device="cuda").manual_seed(0)
    q, k, v, do = (torch.randn(1, H, S, D, device="cuda", generator=g, dtype=torch.bfloat16) for _ in range(4))
    for t in (q, k, v):
        t.requires_grad_()

    def step(kwargs):
        def run():
            for t in (q, k, v):
                t.grad = None
            ft.attention(q, k, v, **kwargs).backward(do)
        return run

    results = {r: {} for r in rows}
    for _ in range(args.rounds):
        for r in rows:
            fn = step(row_kwargs(r, H))
            fn()
            torch.cuda.synchronize()
            for name, us in kernel_times(torch, bc, fn, args.calls).items():
                results[r].setdefault(name, []).extend(us)
    print("| row | kernel | median us | calls |")
    print("|---|---|---|---|")
    totals = {}
    for r in rows:
        for name, us in sorted(results[r].items()):
            med = statistics.median(us)
            totals[r] = totals.get(r, 0.0) + med
            print("| %s | %s | %.1f | %d |" % (r, name[:60], med, len(us)))
    print()
    base = totals.get("causal")
    for r in rows:
        print("%-10s all kernels %.1f us%s" % (r, totals[r], " (%.3fx causal)" % (totals[r] / base) if base else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
