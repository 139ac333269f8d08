#!/usr/bin/env python3
"""Compiles every supported attention configuration through flashc to cubins
with NVRTC (no GPU needed) and checks ptxas' resource report.

Each configuration is a one-op spec (flash.attention with the given head dim,
dtype, mask and GQA ratio). flashc runs the whole pipeline (fusion, backward
generation, tiling, memory planning, CUDA emission) and NVRTC compiles the
forward and backward kernels for each architecture. A configuration fails
when flashc fails, when a kernel of a main configuration (head dim <= 128)
spills registers (beyond the budgets below), or when ptxas serializes wgmma instructions (an accumulator or
A fragment touched before its wait, or too few registers: the asynchronous
products would then run one by one without an error). Prints one line per (configuration, architecture) and a
`N passed, N failed` summary; exit status 1 on any failure.
"""
import argparse
import itertools
import os
import re
import subprocess
import sys
import tempfile

SPEC = """func.func @attention(%q: tensor<?x{hq}x?x{d}x{t}>, %k: tensor<?x{hkv}x?x{d}x{t}>, %v: tensor<?x{hkv}x?x{d}x{t}>) -> (tensor<?x{hq}x?x{d}x{t}>, tensor<?x{hq}x?xf32>) {{
  %o, %lse = flash.attention %q, %k, %v scale = {scale} mask = {mask} num_kv_heads = {hkv} : (tensor<?x{hq}x?x{d}x{t}>, tensor<?x{hkv}x?x{d}x{t}>, tensor<?x{hkv}x?x{d}x{t}>) -> (tensor<?x{hq}x?x{d}x{t}>, tensor<?x{hq}x?xf32>)
  return %o, %lse : tensor<?x{hq}x?x{d}x{t}>, tensor<?x{hq}x?xf32>
}}
"""

# A document mask (FlexAttention's `doc[q] == doc[k]`, each token's document id an operand) for the segment form.
SPEC_DOCUMENT = """func.func @attention(%q: tensor<?x{hq}x?x{d}x{t}>, %k: tensor<?x{hkv}x?x{d}x{t}>, %v: tensor<?x{hkv}x?x{d}x{t}>, %doc: tensor<?xi32>) -> (tensor<?x{hq}x?x{d}x{t}>, tensor<?x{hq}x?xf32>) {{
  %o, %lse = flash.attention %q, %k, %v scale = {scale} mask = {mask} num_kv_heads = {hkv} mask_mod(%doc) {{
  ^bb0(%qi: index, %ki: index, %ids: tensor<?xi32>):
    %a32 = tensor.extract %ids[%qi] : tensor<?xi32>
    %b32 = tensor.extract %ids[%ki] : tensor<?xi32>
    %a = arith.index_cast %a32 : i32 to index
    %b = arith.index_cast %b32 : i32 to index
    %same = arith.cmpi eq, %a, %b : index
    flash.yield %same : i1
  }} : (tensor<?x{hq}x?x{d}x{t}>, tensor<?x{hkv}x?x{d}x{t}>, tensor<?x{hkv}x?x{d}x{t}>, tensor<?xi32>) -> (tensor<?x{hq}x?x{d}x{t}>, tensor<?x{hq}x?xf32>)
  return %o, %lse : tensor<?x{hq}x?x{d}x{t}>, tensor<?x{hq}x?xf32>
}}
"""

# A causal mask written as a mask modifier (FlexAttention's `q >= k`): flash-fuse-attention folds the band into the
# window with top-left rows, whose kernels take the key offset as a literal 0.
SPEC_BAND = """func.func @attention(%q: tensor<?x{hq}x?x{d}x{t}>, %k: tensor<?x{hkv}x?x{d}x{t}>, %v: tensor<?x{hkv}x?x{d}x{t}>) -> (tensor<?x{hq}x?x{d}x{t}>, tensor<?x{hq}x?xf32>) {{
  %o, %lse = flash.attention %q, %k, %v scale = {scale} mask = {mask} num_kv_heads = {hkv} mask_mod {{
  ^bb0(%qi: index, %ki: index):
    %seen = arith.cmpi sle, %ki, %qi : index
    flash.yield %seen : i1
  }} : (tensor<?x{hq}x?x{d}x{t}>, tensor<?x{hkv}x?x{d}x{t}>, tensor<?x{hkv}x?x{d}x{t}>) -> (tensor<?x{hq}x?x{d}x{t}>, tensor<?x{hq}x?xf32>)
  return %o, %lse : tensor<?x{hq}x?x{d}x{t}>, tensor<?x{hq}x?xf32>
}}
"""

# Prefix-LM (`(k < 64) | (k <= q)`): a mask modifier of indices alone (no table), which may take the wide key block.
SPEC_PREFIX = """func.func @attention(%q: tensor<?x{hq}x?x{d}x{t}>, %k: tensor<?x{hkv}x?x{d}x{t}>, %v: tensor<?x{hkv}x?x{d}x{t}>) -> (tensor<?x{hq}x?x{d}x{t}>, tensor<?x{hq}x?xf32>) {{
  %o, %lse = flash.attention %q, %k, %v scale = {scale} mask = {mask} num_kv_heads = {hkv} mask_mod {{
  ^bb0(%qi: index, %ki: index):
    %prefix = arith.constant 64 : index
    %in_prefix = arith.cmpi slt, %ki, %prefix : index
    %seen = arith.cmpi sle, %ki, %qi : index
    %visible = arith.ori %in_prefix, %seen : i1
    flash.yield %visible : i1
  }} : (tensor<?x{hq}x?x{d}x{t}>, tensor<?x{hkv}x?x{d}x{t}>, tensor<?x{hkv}x?x{d}x{t}>) -> (tensor<?x{hq}x?x{d}x{t}>, tensor<?x{hq}x?xf32>)
  return %o, %lse : tensor<?x{hq}x?x{d}x{t}>, tensor<?x{hq}x?xf32>
}}
"""

MASKS = {
    "none": "#flash.mask<none>",
    "causal": "#flash.mask<causal>",
    "window": "#flash.mask<sliding_window, left = 128, right = 0>",
}


def configs(full):
    head_dims = [32, 64, 96, 128, 256]
    dtypes = ["bf16", "f16"] if full else ["bf16"]
    for d, t, mask in itertools.product(head_dims, dtypes, MASKS):
        yield dict(d=d, t=t, mask=mask, hq=8, hkv=8)
    # GQA and MQA, one dtype and mask each.
    yield dict(d=128, t="bf16", mask="causal", hq=8, hkv=2)
    yield dict(d=64, t="f16", mask="none", hq=8, hkv=1)
    # The Sᵀ backward form (flashc --backward-form=transposed), head dims the plan keeps in registers.
    for d, mask in itertools.product([64, 96, 128], MASKS):
        yield dict(d=d, t="bf16", mask=mask, hq=8, hkv=8, transposed=True)
    yield dict(d=128, t="bf16", mask="causal", hq=8, hkv=2, transposed=True)
    # The row form where auto picks Sᵀ (sm_90a, D = 64/128).
    for d, mask in itertools.product([64, 128], MASKS):
        yield dict(d=d, t="bf16", mask=mask, hq=8, hkv=8, form="rows")
    # The cp.async forward the warp-specialised TMA forward (the sm_90a default: every row above) replaced as the
    # default: a point of the forward's tuning space, selected by a tuning-table entry.
    yield dict(d=128, t="bf16", mask="causal", hq=8, hkv=2, forward=WGMMA_FORWARD)
    yield dict(d=64, t="f16", mask="window", hq=8, hkv=8, forward=WGMMA_FORWARD)
    # The ws backward's consumers in the form the hand rule does not take (a tuning point, `ping_pong`): taking turns
    # with two dSᵀ buffers (three stages; 128 queries a step at D <= 64), meeting every step where four would fit.
    yield dict(d=128, t="bf16", mask="causal", hq=8, hkv=2, backward=TURNS_THREE_STAGES)
    yield dict(d=96, t="f16", mask="window", hq=8, hkv=8, backward=TURNS_THREE_STAGES)
    yield dict(d=64, t="bf16", mask="causal", hq=8, hkv=8, backward="ping_pong=1")
    yield dict(d=64, t="f16", mask="none", hq=8, hkv=1, backward="ping_pong=1")
    yield dict(d=128, t="bf16", mask="window", hq=8, hkv=8, backward="stages=2 ping_pong=0")
    # A document mask's forward and backward in the segment form (a tuning point, `segments`): tiles aligned to each
    # document's start where the ids are sorted, the table walk where not; two and three consumer warpgroups (128 /
    # 192 rows), the backward's key split (64 and 128 keys) and role split (D = 256).
    yield dict(d=128, t="bf16", mask="causal", hq=8, hkv=8, document=True, forward="segments=1", backward="segments=1")
    yield dict(d=64, t="f16", mask="causal", hq=8, hkv=2, document=True, forward="segments=1", backward="segments=1")
    yield dict(d=256, t="bf16", mask="causal", hq=8, hkv=8, document=True, forward="segments=1", backward="segments=1")
    yield dict(d=64, t="f16", mask="none", hq=8, hkv=2, document=True, forward="segments=1", backward="segments=1")
    yield dict(d=128, t="bf16", mask="none", hq=8, hkv=8, document=True, forward="segments=1", backward="segments=1")
    yield dict(d=64, t="bf16", mask="causal", hq=8, hkv=8, document=True,
               forward="strategy=wgmma_ws_sm90 block_m=192 block_n=128 warps=12 stages=2 ping_pong=1 segments=1")
    # The causal band as a mask modifier: its forward takes the wide key block above 4k keys, as causal=True does,
    # with the key offset a literal 0 (session 56: specialised on it the 192-key loop spilled 300 bytes under nvcc).
    yield dict(d=128, t="bf16", mask="none", hq=8, hkv=8, band=True)
    # Prefix-LM's modifier (indices alone) in the wide key block (a tuning point since session 57: its element mask
    # column by column; row by row NVRTC's ptxas spilled 164 bytes at D = 128).
    yield dict(d=128, t="bf16", mask="none", hq=8, hkv=8, prefix=True, forward=WIDE_FORWARD)
    yield dict(d=80, t="f16", mask="none", hq=8, hkv=2, prefix=True, forward=WIDE_FORWARD)
    # Head dims that are not multiples of 32 (tiles padded to whole swizzle rows, TilePadding.h): the
    # models' 40, 72, 80, 112 and the edges 8, 136, 200, 248; GQA and the Sᵀ backward form.
    for d in PADDED_HEAD_DIMS:
        yield dict(d=d, t="bf16", mask="causal", hq=8, hkv=8)
    yield dict(d=80, t="f16", mask="none", hq=8, hkv=2)
    yield dict(d=40, t="bf16", mask="window", hq=8, hkv=8)
    for d in (72, 112):
        yield dict(d=d, t="bf16", mask="causal", hq=8, hkv=8, transposed=True)


PADDED_HEAD_DIMS = [8, 40, 72, 80, 112, 136, 200, 248]
# A tuning-table point of the sm_90a attention forward (D = Dv in {64, 128}): the cp.async wgmma kernel.
WGMMA_FORWARD = "strategy=wgmma_sm90 block_m=128 block_n=128 warps=8 stages=2"
# The forward's wide key block (192 keys), a point of its tuning space.
WIDE_FORWARD = "strategy=wgmma_ws_sm90 block_m=128 block_n=192 warps=8 stages=2 ping_pong=1"
# A tuning-table point of the ws attention backward: three stages, the consumers taking turns (two dSᵀ buffers).
TURNS_THREE_STAGES = "stages=3 ping_pong=1"


def padded(head_dim):
    """The tile width of a 16-bit head dim: the next multiple of 32 (compiler/lib/Kernels/TilePadding.cpp)."""
    return -(-head_dim // 32) * 32


def spill_budget(head_dim, kernel):
    """Bytes of spills a kernel may report (see the module docstring): by the tile width, the padded
    head dim, which is what the kernel holds."""
    head_dim = padded(head_dim)
    if head_dim > 128:
        return float("inf")
    if not kernel.endswith("_bwd"):
        return 0
    # D <= 64: the ws key split's 128-query step under a mask keeps four registers of loop state in local
    # memory under NVRTC's ptxas (16 bytes; 0 unmasked, 0 under nvcc).
    return 16 if head_dim <= 64 else 128


# The forward's wide key block (192 keys, a tuning point the built-in table takes for long keys) under a causal mask or
# window: NVRTC's ptxas keeps loop state in local memory around the element mask (20 bytes, 4 accesses a key block;
# measured 3-7 % faster than 128-key blocks at 16k keys all the same, bench/results/2026-12-04-h200-session38.md).
WIDE_FORWARD_SPILL_BUDGET = 20
# A document mask's segment form (session 43, opt-in: its tuning entry decides) with three consumer warpgroups at
# D = 64 and no mask: the forward keeps 4 bytes of a document tile's state in local memory (the segment shift of its
# positions beside the table walk's state); 0 in every two-warpgroup configuration.
SEGMENT_FORWARD_SPILL_BUDGET = 4
WIDE_TILE = re.compile(r"tile\.kernel @(\w+)\((?:(?!tile\.kernel).)*?block_n = 192 : i64", re.S)


SPILL = re.compile(r"(\d+) bytes spill stores, (\d+) bytes spill loads")
SERIALIZED = re.compile(r"wgmma.mma_async instructions are serialized.*")
FUNC = re.compile(r"Compiling entry function '(\w+)'")


def config_name(cfg):
    return "d{d}_{t}_{mask}_h{hq}kv{hkv}".format(**cfg) + ("_transposed" if cfg.get("transposed") else "") \
        + ("_" + cfg["form"] if cfg.get("form") else "") \
        + ("_fwd_" + cfg["forward"].replace(" ", "_").replace("=", "") if cfg.get("forward") else "") \
        + ("_bwd_" + cfg["backward"].replace(" ", "_").replace("=", "") if cfg.get("backward") else "") \
        + ("_document" if cfg.get("document") else "") + ("_band" if cfg.get("band") else "") \
        + ("_prefix" if cfg.get("prefix") else "")


def compile_one(flashc, cfg, arch, workdir):
    name = config_name(cfg)
    spec = os.path.join(workdir, name + ".mlir")
    with open(spec, "w") as f:
        template = (SPEC_DOCUMENT if cfg.get("document") else SPEC_BAND if cfg.get("band")
                    else SPEC_PREFIX if cfg.get("prefix") else SPEC)
        f.write(template.format(scale=1.0 / cfg["d"] ** 0.5, mask=MASKS[cfg["mask"]], d=cfg["d"], t=cfg["t"],
                                hq=cfg["hq"], hkv=cfg["hkv"]))
    out = os.path.join(workdir, name + "." + arch + ".cubin")
    flags = ["--backward-form=transposed"] if cfg.get("transposed") else []
    flags += ["--backward-form=" + cfg["form"]] if cfg.get("form") else []
    entries = [(kind, cfg[key]) for kind, key in (("attention_forward", "forward"), ("attention_backward", "backward"))
               if cfg.get(key)]
    if entries:
        table = os.path.join(workdir, name + ".tuning.txt")
        with open(table, "w") as f:
            for kind, point in entries:
                f.write("sm_90a %s * * * -> %s\n" % (kind, point))
        flags += ["--tuning-table=" + table]
    proc = subprocess.run([flashc, spec, "--emit=cubin", "--arch=" + arch, "--ptxas-report",
                           "-o", out] + flags, capture_output=True, text=True)
    if proc.returncode != 0:
        return name, None, proc.stderr.strip().splitlines()[-20:], set()
    spills = {}
    current = None
    for line in proc.stderr.splitlines():
        m = FUNC.search(line)
        if m:
            current = m.group(1)
        m = SPILL.search(line)
        if m and current:
            spills[current] = max(int(m.group(1)), int(m.group(2)))
    serialized = [m.group(0) for m in SERIALIZED.finditer(proc.stderr)]
    # Which kernels the plan gave the wide key block (their tile IR; the cubin's function is flashc_<kernel>).
    wide = set()
    if arch == "sm_90a":
        tile = subprocess.run([flashc, spec, "--emit=tile", "--arch=" + arch, "-o", "-"] + flags, capture_output=True,
                              text=True)
        wide = {"flashc_" + m.group(1) for m in WIDE_TILE.finditer(tile.stdout)}
        # A tuning point that the kernels did not take would pass without compiling it: each entry must be named by
        # a kernel of its kind (flash-plan-memory's `tuning` attribute).
        for kind, point in entries:
            if 'key = "sm_90a %s ' % kind not in tile.stdout:
                serialized.append("the %s entry was taken by no kernel (tile IR without its key)" % kind)
            if "segments=1" in point and not re.search(r"role = %s[^>]*segments = true" %
                                                         ("attention_forward" if kind == "attention_forward"
                                                          else "attention_backward"), tile.stdout):
                serialized.append("the %s did not take the segment form (tile IR without segments = true)" % kind)
    return name, spills, serialized, wide


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--flashc", required=True)
    parser.add_argument("--archs", default="sm_80,sm_90a")
    parser.add_argument("--full", action="store_true", help="every dtype (default: bf16 + one f16)")
    parser.add_argument("--only", default="", help="the configurations whose name contains this text")
    args = parser.parse_args()
    passed = failed = 0
    with tempfile.TemporaryDirectory() as workdir:
        for arch in args.archs.split(","):
            for cfg in configs(args.full or arch == "sm_90a"):
                if args.only and args.only not in config_name(cfg):
                    continue
                if (cfg.get("document") or cfg.get("band") or cfg.get("prefix")) and arch != "sm_90a":  # (the ws forms)
                    continue
                name, spills, errors, wide = compile_one(args.flashc, cfg, arch, workdir)
                if spills is None:
                    failed += 1
                    print(f"FAIL {arch} {name}: flashc failed")
                    for line in errors:
                        print("     " + line)
                    continue
                spilled = {k: v for k, v in spills.items() if v > 0}
                segment_forward = "segments=1" in (cfg.get("forward") or "")
                over = {k: v for k, v in spilled.items()
                        if v > (WIDE_FORWARD_SPILL_BUDGET if k in wide
                                else SEGMENT_FORWARD_SPILL_BUDGET if segment_forward and k.endswith("_fwd")
                                else spill_budget(cfg["d"], k))}
                if errors:  # compiled, but ptxas serialized wgmma
                    failed += 1
                    print(f"FAIL {arch} {name}: {errors[0]}")
                elif over:
                    failed += 1
                    print(f"FAIL {arch} {name}: spills {spilled}")
                else:
                    passed += 1
                    note = f" (spills {spilled}, within budget)" if spilled else ""
                    print(f"ok   {arch} {name}: {len(spills)} kernels{note}")
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
