#!/usr/bin/env python3
"""Invariant over boundary specs: whatever flashc accepts compiles.

Each spec sits at an edge of what flash.attention / flash.ffn allow: the
smallest and largest supported head dims, a value head dim apart from the key
head dim, odd static (ragged) sizes, causal / sliding-window masks and a
softcap, bf16 and f16, grouped-query attention, FFNs gated and with biases,
the smallest 16-bit FFN sizes, FFN widths that are not multiples of 8 (100,
333, 1001, 77, 1), and a d_out the fused kernel cannot take. For
each architecture flashc compiles the whole pipeline (forward and backward
kernels) to a cubin through NVRTC: an accepted spec must compile (no GPU
needed). Specs just past an edge (`reject`) must fail with a diagnostic,
exit status 1 and no crash. Prints one line per (spec, architecture) and a
`N passed, N failed` summary; exit status 1 on any failure. Runs two flashc
processes at a time to stay within a CI budget of two cores.
"""
import argparse
import concurrent.futures
import os
import subprocess
import sys
import tempfile


def attention(d=64, dv=None, t="bf16", hq=4, hkv=4, b="?", sq="?", sk="?",
              mask="#flash.mask<causal>", softcap=None):
    dv = d if dv is None else dv
    q = f"tensor<{b}x{hq}x{sq}x{d}x{t}>"
    k = f"tensor<{b}x{hkv}x{sk}x{d}x{t}>"
    v = f"tensor<{b}x{hkv}x{sk}x{dv}x{t}>"
    o = f"tensor<{b}x{hq}x{sq}x{dv}x{t}>"
    lse = f"tensor<{b}x{hq}x{sq}xf32>"
    cap = f" softcap = {softcap}" if softcap else ""
    return (f"func.func @attention(%q: {q}, %k: {k}, %v: {v}) -> ({o}, {lse}) {{\n"
            f"  %o, %lse = flash.attention %q, %k, %v scale = {1.0 / d ** 0.5} mask = {mask}{cap}"
            f" num_kv_heads = {hkv} : ({q}, {k}, {v}) -> ({o}, {lse})\n"
            f"  return %o, %lse : {o}, {lse}\n}}\n")


def ffn(d=64, h=256, dout=None, t="bf16", act="gelu_tanh", gated=False, bias=False, m="?", batch=None):
    dout = d if dout is None else dout
    lead = f"{batch}x" if batch is not None else ""
    x, y = f"tensor<{lead}{m}x{d}x{t}>", f"tensor<{lead}{m}x{dout}x{t}>"
    w1, w2 = f"tensor<{d}x{h}x{t}>", f"tensor<{h}x{dout}x{t}>"
    args, operands, types = [f"%x: {x}", f"%w1: {w1}"], "%x, %w1", [x, w1]
    if bias and not gated:
        args.append(f"%b1: tensor<{h}x{t}>"), types.append(f"tensor<{h}x{t}>")
        operands += " bias %b1"
    if gated:
        args.append(f"%wu: {w1}"), types.append(w1)
        operands += " up %wu"
    args.append(f"%w2: {w2}"), types.append(w2)
    operands += ", %w2"
    if bias:
        args.append(f"%b2: tensor<{dout}x{t}>"), types.append(f"tensor<{dout}x{t}>")
        operands += " bias %b2"
    return (f"func.func @ffn({', '.join(args)}) -> {y} {{\n"
            f"  %y = flash.ffn {act} {operands} : ({', '.join(types)}) -> {y}\n"
            f"  return %y : {y}\n}}\n")


WINDOW = "#flash.mask<sliding_window, left = 37, right = 5>"

# name -> (spec, expected: "compile" or "reject")
SPECS = {
    "attn_d8_smallest": (attention(d=8), "compile"),
    "attn_d32": (attention(d=32), "compile"),
    # Head dims padded to whole swizzle rows (not multiples of 32), Dv != D among them.
    "attn_d248_largest_padded": (attention(d=248, mask="#flash.mask<none>"), "compile"),
    "attn_d72_dv40_gqa": (attention(d=72, dv=40, hq=8, hkv=2, mask=WINDOW), "compile"),
    "ffn_dout200_fused_padded": (ffn(d=200, h=328, dout=200), "compile"),
    "attn_d256_largest_f16": (attention(d=256, t="f16", mask="#flash.mask<none>"), "compile"),
    "attn_d160": (attention(d=160), "compile"),
    "attn_d64_dv128": (attention(d=64, dv=128), "compile"),
    "attn_ragged_static": (attention(b=3, hq=6, hkv=3, sq=37, sk=129, mask=WINDOW), "compile"),
    "attn_gqa_softcap_f16": (attention(d=128, t="f16", hq=8, hkv=2, softcap=30.0), "compile"),
    "ffn_gated": (ffn(d=64, h=192, act="silu", gated=True), "compile"),
    "ffn_bias_ragged": (ffn(d=40, h=72, dout=64, bias=True, m=37, batch=3, t="f16"), "compile"),
    "ffn_smallest": (ffn(d=8, h=8, dout=32, act="relu"), "compile"),
    "ffn_dout40": (ffn(d=64, h=256, dout=40, bias=True), "compile"),
    # Widths that are not multiples of 8 (#22): rows end inside a 16-byte copy chunk.
    "ffn_d100_h1001_dout77": (ffn(d=100, h=1001, dout=77, bias=True), "compile"),
    "ffn_gated_d333_h1001_f16": (ffn(d=333, h=1001, act="silu", gated=True, t="f16"), "compile"),
    "ffn_widths_1": (ffn(d=1, h=1, dout=1, act="relu", m=5), "compile"),
    "ffn_h12": (ffn(h=12), "compile"),
    # Just past an edge: refused with a diagnostic.
    "attn_d12": (attention(d=12), "reject"),
    "attn_d288": (attention(d=288), "reject"),
    "attn_seq_2_31": (attention(sq=2 ** 31), "reject"),
    "ffn_dout_2_31": (ffn(dout=2 ** 31), "reject"),
}


def run_one(flashc, workdir, name, arch):
    spec, expected = SPECS[name]
    path = os.path.join(workdir, name + ".mlir")
    out = os.path.join(workdir, f"{name}.{arch}.cubin")
    proc = subprocess.run([flashc, path, "--emit=cubin", "--arch=" + arch, "-o", out],
                          capture_output=True, text=True)
    tail = proc.stderr.strip().splitlines()[-6:]
    if expected == "compile":
        ok = proc.returncode == 0 and os.path.getsize(out) > 0
        why = "flashc or NVRTC failed"
    else:
        ok = proc.returncode == 1 and "error:" in proc.stderr
        why = f"expected a diagnostic and exit status 1, got {proc.returncode}"
    return name, arch, ok, why, tail


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--flashc", required=True)
    parser.add_argument("--archs", default="sm_80,sm_90a")
    parser.add_argument("--jobs", type=int, default=2)
    args = parser.parse_args()
    passed = failed = 0
    with tempfile.TemporaryDirectory() as workdir:
        for name, (spec, _) in SPECS.items():
            with open(os.path.join(workdir, name + ".mlir"), "w") as f:
                f.write(spec)
        jobs = [(name, arch) for arch in args.archs.split(",") for name in SPECS]
        with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
            results = list(pool.map(lambda job: run_one(args.flashc, workdir, *job), jobs))
    for name, arch, ok, why, tail in results:
        if ok:
            passed += 1
            print(f"ok   {arch} {name} ({SPECS[name][1]})")
        else:
            failed += 1
            print(f"FAIL {arch} {name}: {why}")
            for line in tail:
                print("     " + line)
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
