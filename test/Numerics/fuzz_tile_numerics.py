#!/usr/bin/env python3
"""Random attention and FFN specs through flash-run-tile (CPU tile executor vs
float64): random batch, heads (GQA), ragged Sq != Sk, head dims, masks
(none, causal, sliding windows), softcap, block sizes, deterministic and S^T
backward forms; FFN plain/gated, biases, activations, rank 2/3, fused and
two-kernel plans. f32 everywhere, bound 1e-5 (max |tile - ref| / max |ref|).
Inference attention (every third case): decode over a contiguous or paged
cache, with or without the new tokens' append; the append alone; packed
variable-length sequences with their backward. bf16 / f16 (their kernels'
types), bound 2e-2.

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


def band_modifier(rng):
    """A mask_mod region (text after num_kv_heads) bounding d = q - k to [lo, hi], each bound spelled one of four ways
    (d >= lo; k - q <= -lo; 2q + (1 - 2 lo) > 2k, i.e. 2d > 2 lo - 1; q + 7 >= k + 7 + lo; a symmetric one as
    |q - k| <= hi, the select abs() traces to), either side sometimes open,
    sometimes off the diagonal (lo > 0: stays a modifier) or joined by an `ori` with a prefix (not a band)."""
    lo, hi = rng.choice([None, -9, -2, 0, 0, 1]), rng.choice([None, 0, 2, 3, 9, 17, 60])
    if lo is None and hi is None:
        hi = 5
    lines, n = [], [0]

    def value(text):
        n[0] += 1
        lines.append(f"    %v{n[0]} = {text}")
        return f"%v{n[0]}"

    def const(c):
        return value(f"arith.constant {c} : index")

    def lower(bound):  # q - k >= bound
        form = rng.randrange(4)
        if form == 0:
            return value(f"arith.cmpi sge, {value('arith.subi %i, %j : index')}, {const(bound)} : index")
        if form == 1:
            return value(f"arith.cmpi sle, {value('arith.subi %j, %i : index')}, {const(-bound)} : index")
        if form == 2:
            q2 = value(f"arith.muli %i, {const(2)} : index")
            lhs = value(f"arith.addi {q2}, {const(1 - 2 * bound)} : index")
            return value(f"arith.cmpi sgt, {lhs}, {value(f'arith.muli {const(2)}, %j : index')} : index")
        lhs = value(f"arith.addi %i, {const(7)} : index")
        return value(f"arith.cmpi sge, {lhs}, {value(f'arith.addi %j, {const(7 + bound)} : index')} : index")

    def upper(bound):  # q - k <= bound
        if rng.random() < 0.5:
            return value(f"arith.cmpi slt, {value('arith.subi %i, %j : index')}, {const(bound + 1)} : index")
        return value(f"arith.cmpi sge, {value('arith.subi %j, %i : index')}, {const(-bound)} : index")

    if lo is not None and hi is not None and lo == -hi and rng.random() < 0.5:  # |q - k| <= hi, as abs() traces
        d = value("arith.subi %i, %j : index")
        zero = const(0)
        absolute = value(f"arith.select {value(f'arith.cmpi slt, {d}, {zero} : index')}, "
                         f"{value(f'arith.subi {zero}, {d} : index')}, {d} : index")
        atoms = [value(f"arith.cmpi sle, {absolute}, {const(hi)} : index")]
    else:
        atoms = ([lower(lo)] if lo is not None else []) + ([upper(hi)] if hi is not None else [])
    visible = atoms[0] if len(atoms) == 1 else value(f"arith.andi {atoms[0]}, {atoms[1]} : i1")
    if rng.random() < 0.2:
        visible = value(f"arith.ori {visible}, {value(f'arith.cmpi slt, %j, {const(3)} : index')} : i1")
    body = "\n".join(lines)
    return f" mask_mod {{\n  ^bb0(%i: index, %j: index):\n{body}\n    flash.yield {visible} : i1\n  }}"


# The segment form for every document modifier's forward and backward (written into the run's temporary directory).
SEGMENTS_TABLE = ""
SEGMENTS_ENTRIES = "".join("sm_90a %s * * %s -> segments=1\n" % (kind, mask) for kind in
                           ("attention_forward", "attention_backward")
                           for mask in ("causal+mod", "causal+softcap+mod", "none+mod", "none+softcap+mod"))


def attention_case(rng):
    b, hkv = rng.choice([1, 2]), rng.choice([1, 2])
    hq = hkv * rng.choice([1, 2, 3])
    sq, sk = rng.randint(1, 150), rng.randint(1, 150)
    d = rng.choice([8, 16, 20, 32, 40, 48, 64, 72])  # 8, 20, 40, 72: tiles padded (TilePadding.h)
    dv = rng.choice([d, 16, 32, 36])
    kind = rng.choice(["none", "causal", "window", "band", "documents"])
    mask_mod, operands, operand_types = "", "", ""
    if kind == "none":
        mask = "#flash.mask<none>"
    elif kind == "causal":
        mask = "#flash.mask<causal>"
    elif kind == "window":
        left = rng.choice([-1, 0, 1, 5, 17, 60])
        right = rng.choice([-1, 0, 2, 9]) if left >= 0 else rng.choice([0, 2, 9])
        mask = f"#flash.mask<sliding_window, left = {left}, right = {right}>"
    elif kind == "band":  # a mask modifier bounding q - k (DiagonalBand.h: the window's kernels, top-left), or not
        mask, mask_mod = "#flash.mask<none>", band_modifier(rng)
    else:  # a document mask, the attribute's causality or FlexAttention's (DocumentIds.h; its segment form below)
        flex = rng.random() < 0.5
        mask = "#flash.mask<none>" if flex or rng.random() < 0.5 else "#flash.mask<causal>"
        visible = ("    %before = arith.cmpi sge, %i, %j : index\n    %both = arith.andi %s, %before : i1\n    flash.yield %both : i1"
                   if flex else "    flash.yield %s : i1")
        mask_mod = (" mask_mod(%doc) {\n  ^bb0(%i: index, %j: index, %t: tensor<?xi32>):\n"
                    "    %a = tensor.extract %t[%i] : tensor<?xi32>\n    %b = tensor.extract %t[%j] : tensor<?xi32>\n"
                    "    %ai = arith.index_cast %a : i32 to index\n    %bi = arith.index_cast %b : i32 to index\n"
                    "    %s = arith.cmpi eq, %ai, %bi : index\n" + visible + "\n  }")
        operands, operand_types = ", %doc: tensor<?xi32>", ", tensor<?xi32>"
    softcap = f" softcap = 3.0" if rng.random() < 0.25 else ""
    qt, kt = f"tensor<{b}x{hq}x{sq}x{d}xf32>", f"tensor<{b}x{hkv}x{sk}x{d}xf32>"
    vt, ot = f"tensor<{b}x{hkv}x{sk}x{dv}xf32>", f"tensor<{b}x{hq}x{sq}x{dv}xf32>"
    lt = f"tensor<{b}x{hq}x{sq}xf32>"
    spec = (f"func.func @f(%q: {qt}, %k: {kt}, %v: {vt}{operands}) -> {ot} {{\n"
            f"  %out, %lse = flash.attention %q, %k, %v scale = {1 / math.sqrt(d)!r} "
            f"mask = {mask}{softcap} num_kv_heads = {hkv}{mask_mod}\n"
            f"      : ({qt}, {kt}, {vt}{operand_types}) -> ({ot}, {lt})\n"
            f"  return %out : {ot}\n}}\n")
    opts = [f"--block-m={rng.choice([16, 32, 64])}", f"--block-n={rng.choice([16, 32, 64])}",
            "--warps=1"]
    if rng.random() < 0.5:
        opts.append("--deterministic")
    if rng.random() < 0.5:
        opts.append("--backward-form=transposed")
    if kind == "documents" and rng.random() < 0.5:  # the segment form's programs (FlexAttention's: a causal window)
        opts.append("--tuning-table=" + SEGMENTS_TABLE)
    if kind == "documents":  # an id per query and key row (the ids are the only dynamic size; read at q and k)
        opts.append(f"--dynamic-size={max(sq, sk)}")
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


def _t(shape, elem):
    return "tensor<" + "x".join(str(s) for s in shape) + "x" + elem + ">"


def inference_case(rng):
    """(spec, options, backward?, tolerance): a decode step (maybe appending first), an append alone, or packed
    sequences. Sizes through --dynamic-size n (the batch; a contiguous cache's capacity is static)."""
    elem = rng.choice(["bf16", "f16"])
    n = rng.randint(1, 7)
    kind = rng.choice(["decode", "decode", "append", "varlen"])
    opts = [f"--dynamic-size={n}"]
    if kind == "varlen":
        hkv = rng.choice([1, 2])
        hq = hkv * rng.choice([1, 2, 3])
        d = rng.choice([64, 128])
        dv = rng.choice([d, 64])
        seqs = rng.randint(1, 6)
        tq, tk = rng.randint(1, 260), rng.randint(1, 260)
        kind_mask = rng.choice(["none", "causal", "window"])
        mask = {"none": "#flash.mask<none>", "causal": "#flash.mask<causal>",
                "window": f"#flash.mask<sliding_window, left = {rng.choice([0, 7, 40])}, right = "
                          f"{rng.choice([0, 3])}>"}[kind_mask]
        backward = dv == d and rng.random() < 0.6
        softcap = " softcap = 20.0" if not backward and rng.random() < 0.3 else ""
        q, k, v = _t([tq, hq, d], elem), _t([tk, hkv, d], elem), _t([tk, hkv, dv], elem)
        o, lse, cu = _t([tq, hq, dv], elem), _t([hq, tq], "f32"), _t([seqs + 1], "i32")
        spec = (f"func.func @f(%q: {q}, %k: {k}, %v: {v}, %cq: {cu}, %ck: {cu}) -> ({o}, {lse}) {{\n"
                f"  %o, %l = flash.varlen_attention %q, %k, %v, %cq, %ck scale = {1 / math.sqrt(d)!r} mask = {mask}"
                f"{softcap} num_kv_heads = {hkv}\n      : ({q}, {k}, {v}, {cu}, {cu}) -> ({o}, {lse})\n"
                f"  return %o, %l : {o}, {lse}\n}}\n")
        return spec, opts, backward, 2e-2
    hkv = rng.choice([1, 2, 4])
    d = rng.choice([64, 128])
    dv = rng.choice([d, 64])
    tokens = rng.choice([1, 2, 3, 5])  # (the append's blocks take 4)
    page = rng.choice([0, 16, 32])
    width = rng.randint(1, 3)  # pages a sequence
    # A paged cache with enough pages that no two sequences share one (their appends write distinct rows).
    if page:
        kc, vc = _t([n * width + 2, page, hkv, d], elem), _t([n * width + 2, page, hkv, dv], elem)
        table_arg, table_type, table_op, page_attr = f", %t: {_t(['?', width], 'i32')}", \
            f", {_t(['?', width], 'i32')}", " block_table %t", f" page_size = {page}"
        capacity = width * page
    else:
        capacity = rng.randint(tokens, 70)
        kc, vc = _t(["?", hkv, capacity, d], elem), _t(["?", hkv, capacity, dv], elem)
        table_arg = table_type = table_op = page_attr = ""
    kn, vn = _t(["?", hkv, tokens, d], elem), _t(["?", hkv, tokens, dv], elem)
    append = (f"  %k2, %v2 = flash.kv_append %kn, %vn into %k, %v, %lens{page_attr}{table_op}\n"
              f"      : ({kn}, {vn}, {kc}, {vc}, tensor<?xi32>{table_type}) -> ({kc}, {vc})\n")
    new_args = f"%kn: {kn}, %vn: {vn}, "
    if kind == "append":
        spec = (f"func.func @f({new_args}%k: {kc}, %v: {vc}, %lens: tensor<?xi32>{table_arg}) -> ({kc}, {vc}) {{\n"
                f"{append}  return %k2, %v2 : {kc}, {vc}\n}}\n")
        return spec, opts, False, 2e-2
    hq = hkv * rng.choice([1, 2, 4])
    appending = rng.random() < 0.5
    causal = " causal" if rng.random() < 0.7 else ""
    q, o, lse = _t(["?", hq, tokens, d], elem), _t(["?", hq, tokens, dv], elem), _t(["?", hq, tokens], "f32")
    caches = "%k2, %v2" if appending else "%k, %v"
    spec = (f"func.func @f(%q: {q}, {new_args if appending else ''}%k: {kc}, %v: {vc}, %lens: tensor<?xi32>"
            f"{table_arg}) -> ({o}, {lse}) {{\n{append if appending else ''}"
            f"  %o, %l = flash.decode_attention %q, {caches}, %lens{table_op} scale = {1 / math.sqrt(d)!r}{causal}"
            f"{page_attr} num_kv_heads = {hkv}\n"
            f"      : ({q}, {kc}, {vc}, tensor<?xi32>{table_type}) -> ({o}, {lse})\n"
            f"  return %o, %l : {o}, {lse}\n}}\n")
    return spec, opts, False, 2e-2


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
        global SEGMENTS_TABLE
        SEGMENTS_TABLE = os.path.join(tmp, "segments.txt")
        with open(SEGMENTS_TABLE, "w") as f:
            f.write(SEGMENTS_ENTRIES)
        for case in range(args.cases):
            if case % 3 == 2:
                spec, opts, backward, tolerance = inference_case(rng)
            else:
                spec, opts = (attention_case if case % 3 == 0 else ffn_case)(rng)
                backward, tolerance = True, 1e-5
            with open(path, "w") as f:
                f.write(spec)
            cmd = [args.runner, path, f"--tolerance={tolerance}", f"--seed={case}"] + opts
            if backward:
                cmd.append("--backward")
            run = subprocess.run(cmd, capture_output=True, text=True)
            if run.returncode != 0:
                failed += 1
                print(f"case {case} FAILED: {' '.join(opts)}\n{spec}{run.stdout}{run.stderr}")
    print(f"{args.cases} cases, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
