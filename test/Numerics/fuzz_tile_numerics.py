#!/usr/bin/env python3
"""Random attention and FFN specs through flash-run-tile (CPU tile executor vs
float64): random batch, heads (GQA), ragged Sq != Sk, head dims, masks
(none, causal, sliding windows), softcap, block sizes, deterministic and S^T
backward forms; FFN plain/gated, biases, activations, rank 2/3, fused and
two-kernel plans. f32 everywhere, bound 1e-5 (max |tile - ref| / max |ref|).

usage: fuzz_tile_numerics.py --runner PATH/flash-run-tile [--seed N] [--cases N]
Prints one line per failing case and a final "N cases, M failed" line; exits
1 when a case fails.
"""
import argparse
import math
import os
import random
import subprocess
import sys
import tempfile


def attention_case(rng):
    b, hkv = rng.choice([1, 2]), rng.choice([1, 2])
    hq = hkv * rng.choice([1, 2, 3])
    sq, sk = rng.randint(1, 150), rng.randint(1, 150)
    d = rng.choice([8, 16, 20, 32, 40, 48, 64, 72])  # 8, 20, 40, 72: tiles padded (TilePadding.h)
    dv = rng.choice([d, 16, 32, 36])
    kind = rng.choice(["none", "causal", "window"])
    if kind == "none":
        mask = "#flash.mask<none>"
    elif kind == "causal":
        mask = "#flash.mask<causal>"
    else:
        left = rng.choice([-1, 0, 1, 5, 17, 60])
        right = rng.choice([-1, 0, 2, 9]) if left >= 0 else rng.choice([0, 2, 9])
        mask = f"#flash.mask<sliding_window, left = {left}, right = {right}>"
    softcap = f" softcap = 3.0" if rng.random() < 0.25 else ""
    qt, kt = f"tensor<{b}x{hq}x{sq}x{d}xf32>", f"tensor<{b}x{hkv}x{sk}x{d}xf32>"
    vt, ot = f"tensor<{b}x{hkv}x{sk}x{dv}xf32>", f"tensor<{b}x{hq}x{sq}x{dv}xf32>"
    lt = f"tensor<{b}x{hq}x{sq}xf32>"
    spec = (f"func.func @f(%q: {qt}, %k: {kt}, %v: {vt}) -> {ot} {{\n"
            f"  %out, %lse = flash.attention %q, %k, %v scale = {1 / math.sqrt(d)!r} "
            f"mask = {mask}{softcap} num_kv_heads = {hkv}\n"
            f"      : ({qt}, {kt}, {vt}) -> ({ot}, {lt})\n"
            f"  return %out : {ot}\n}}\n")
    opts = [f"--block-m={rng.choice([16, 32, 64])}", f"--block-n={rng.choice([16, 32, 64])}",
            "--warps=1"]
    if rng.random() < 0.5:
        opts.append("--deterministic")
    if rng.random() < 0.5:
        opts.append("--backward-form=transposed")
    return spec, opts


def ffn_case(rng):
    rank3 = rng.random() < 0.3
    # Widths of whole chunks and any others (#22: 13, 37, 21, 101, 5, 77).
    m, d = rng.randint(1, 90), rng.choice([16, 24, 40, 64, 13, 37])
    h, n = rng.choice([16, 48, 80, 96, 21, 101]), rng.choice([8, 24, 40, 64, 5, 77])
    act = rng.choice(["gelu_tanh", "gelu_erf", "silu", "relu"])
    gated = rng.random() < 0.4
    b1, b2 = (not gated) and rng.random() < 0.5, rng.random() < 0.5
    batch = rng.choice([1, 2, 3])
    xs = f"tensor<{batch}x{m}x{d}xf32>" if rank3 else f"tensor<{m}x{d}xf32>"
    ys = f"tensor<{batch}x{m}x{n}xf32>" if rank3 else f"tensor<{m}x{n}xf32>"
    args, types = [f"%x: {xs}", f"%w1: tensor<{d}x{h}xf32>"], [xs, f"tensor<{d}x{h}xf32>"]
    op = f"flash.ffn {act} %x, %w1"
    if b1:
        args.append(f"%b1: tensor<{h}xf32>"); types.append(f"tensor<{h}xf32>"); op += " bias %b1"
    if gated:
        args.append(f"%wu: tensor<{d}x{h}xf32>"); types.append(f"tensor<{d}x{h}xf32>"); op += " up %wu"
    args.append(f"%w2: tensor<{h}x{n}xf32>"); types.append(f"tensor<{h}x{n}xf32>"); op += ", %w2"
    if b2:
        args.append(f"%b2: tensor<{n}xf32>"); types.append(f"tensor<{n}xf32>"); op += " bias %b2"
    spec = (f"func.func @f({', '.join(args)}) -> {ys} {{\n"
            f"  %y = {op} : ({', '.join(types)}) -> {ys}\n  return %y : {ys}\n}}\n")
    opts = [f"--block-m={rng.choice([16, 32])}", f"--block-n={rng.choice([16, 32, 64])}",
            f"--block-k={rng.choice([16, 32])}", "--warps=1",
            f"--ffn-plan={rng.choice(['fused', 'two-kernel'])}"]
    return spec, opts


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--runner", required=True)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--cases", type=int, default=50)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    failed = 0
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "case.mlir")
        for case in range(args.cases):
            spec, opts = (attention_case if case % 2 == 0 else ffn_case)(rng)
            with open(path, "w") as f:
                f.write(spec)
            cmd = [args.runner, path, "--backward", "--tolerance=1e-5", f"--seed={case}"] + opts
            run = subprocess.run(cmd, capture_output=True, text=True)
            if run.returncode != 0:
                failed += 1
                print(f"case {case} FAILED: {' '.join(opts)}\n{spec}{run.stdout}{run.stderr}")
    print(f"{args.cases} cases, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
