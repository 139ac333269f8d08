#!/usr/bin/env python3
"""Kernel lab: build the golden attention kernels, check them against float64, time them.

Run on the device machine from the repository root:
    python3 bench/kernel_lab/lab.py [--out DIR] [--skip-bench] [--only NAME,...]
Phases: (1) build every config with nvcc in parallel (ptxas -v report saved), (2) correctness of
forward and backward against a float64 PyTorch reference with poisoned outputs, error bounded by
2x the error of an unfused bf16/f16 PyTorch computation, (3) timing vs SDPA flash and cuDNN.
Exit status is non-zero if any build or check fails.
"""
import argparse, concurrent.futures as cf, ctypes, math, os, subprocess, sys, time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))

# name: (head_dim, heads_q, gqa_group, f16, causal, window_left, softcap, extra -D overrides, bwd)
# Overrides: FLASHC_FWD_BLOCK_M/_N, FLASHC_FWD_WARPS, FLASHC_FWD_Q_IN_REGS (forward tiling),
# FLASHC_BWD_BLOCK_N (backward keys per block: 64 -> 4 warps, 128 -> 8 warps).
def fwd_tiling(bm, bn, warps, q_in_regs):
    return {"FLASHC_FWD_BLOCK_M": bm, "FLASHC_FWD_BLOCK_N": bn, "FLASHC_FWD_WARPS": warps,
            "FLASHC_FWD_Q_IN_REGS": q_in_regs}


CONFIGS = {
    "d64_causal":      (64, 32, 1, 0, 1, -1, 0.0, {}, True),
    "d64":             (64, 32, 1, 0, 0, -1, 0.0, {}, True),
    "d128_causal":     (128, 16, 1, 0, 1, -1, 0.0, {}, True),
    "d128":            (128, 16, 1, 0, 0, -1, 0.0, {}, True),
    "d128_f16_causal": (128, 4, 1, 1, 1, -1, 0.0, {}, True),
    "d32_causal":      (32, 4, 1, 0, 1, -1, 0.0, {}, True),
    "d96":             (96, 4, 1, 0, 0, -1, 0.0, {}, True),
    "d256_causal":     (256, 2, 1, 0, 1, -1, 0.0, {}, False),
    "d128_win100_causal": (128, 4, 1, 0, 1, 100, 0.0, {}, True),
    "d64_win37":       (64, 4, 1, 0, 0, 37, 0.0, {}, True),
    "d64_win20_right5": (64, 4, 1, 0, 0, 20, 0.0, {"FLASHC_WINDOW_RIGHT": 5}, True),
    "d128_gqa4_causal": (128, 8, 4, 0, 1, -1, 0.0, {}, True),
    "d64_f16_gqa2":    (64, 4, 2, 1, 0, -1, 0.0, {}, True),
    "d64_softcap30_causal": (64, 4, 1, 0, 1, -1, 30.0, {}, True),
}
# Tuning variants (checked like the rest, timed beside the defaults).
VARIANTS = {
    # backward main kernel in the tile dialect's row form (attention_bwd_rows.cu)
    "d64_rows": (64, 32, 1, 0, 0, -1, 0.0, {"FLASHC_BWD_ROWS": 1}, True),
    "d128_causal_rows": (128, 16, 1, 0, 1, -1, 0.0, {"FLASHC_BWD_ROWS": 1}, True),
    "d128_gqa4_causal_rows": (128, 8, 4, 0, 1, -1, 0.0, {"FLASHC_BWD_ROWS": 1}, True),
    "d64_softcap30_win37_rows": (64, 4, 1, 0, 0, 37, 30.0, {"FLASHC_BWD_ROWS": 1}, True),
    "d96_f16_rows": (96, 4, 1, 1, 1, -1, 0.0, {"FLASHC_BWD_ROWS": 1}, True),
    # backward BN = 64 / 4 warps (the previous default)
    "d128_bwd64": (128, 16, 1, 0, 0, -1, 0.0, {"FLASHC_BWD_BLOCK_N": 64}, True),
    # 16-byte dQ atomics (red.global.add.v4.f32 after a lane-pair shuffle)
    "d128_wide": (128, 16, 1, 0, 0, -1, 0.0, {"FLASHC_BWD_WIDE_ATOMIC": 1}, True),
    "d128_causal_wide": (128, 16, 1, 0, 1, -1, 0.0, {"FLASHC_BWD_WIDE_ATOMIC": 1}, True),
    "d64_wide": (64, 32, 1, 0, 0, -1, 0.0, {"FLASHC_BWD_WIDE_ATOMIC": 1}, True),
    "d64_gqa2_win37_wide": (64, 4, 2, 0, 0, 37, 0.0, {"FLASHC_BWD_WIDE_ATOMIC": 1}, True),
    # dQ through a shared f32 tile and cp.reduce.async.bulk (TMA reduce-add), FA3-style
    "d128_bulk": (128, 16, 1, 0, 0, -1, 0.0, {"FLASHC_BWD_DQ_BULK": 1}, True),
    "d128_causal_bulk": (128, 16, 1, 0, 1, -1, 0.0, {"FLASHC_BWD_DQ_BULK": 1}, True),
    "d64_bulk": (64, 32, 1, 0, 0, -1, 0.0, {"FLASHC_BWD_DQ_BULK": 1}, True),
    "d64_causal_bulk": (64, 32, 1, 0, 1, -1, 0.0, {"FLASHC_BWD_DQ_BULK": 1}, True),
    "d96_gqa2_win37_bulk": (96, 4, 2, 0, 0, 37, 0.0, {"FLASHC_BWD_DQ_BULK": 1}, True),
    # deterministic dQ (key blocks add in order, per-query-block turn counters)
    "d128_causal_det": (128, 16, 1, 0, 1, -1, 0.0, {"FLASHC_BWD_DETERMINISTIC": 1}, True),
    "d64_gqa2_win37_det": (64, 4, 2, 0, 0, 37, 0.0, {"FLASHC_BWD_DETERMINISTIC": 1}, True),
    "d128_det": (128, 16, 1, 0, 0, -1, 0.0, {"FLASHC_BWD_DETERMINISTIC": 1}, True),
    # forward in the emitter's exact call forms (bf16, Br = Bc = 64, 4 warps)
    "d64_causal_emitstyle": (64, 4, 1, 0, 1, -1, 0.0, {"FLASHC_FWD_EMITSTYLE": 1}, False),
    "d128_gqa2_emitstyle": (128, 4, 2, 0, 0, -1, 0.0, {"FLASHC_FWD_EMITSTYLE": 1}, False),
    # wgmma_sm90 forward (attention_fwd_wgmma.cu); *_vswap: V descriptor LBO/SBO swapped (hedge)
    "d128_wg": (128, 16, 1, 0, 0, -1, 0.0, {"FLASHC_FWD_WGMMA": 1}, False),
    "d128_causal_wg": (128, 16, 1, 0, 1, -1, 0.0, {"FLASHC_FWD_WGMMA": 1}, False),
    "d64_wg": (64, 32, 1, 0, 0, -1, 0.0, {"FLASHC_FWD_WGMMA": 1}, False),
    "d64_causal_wg": (64, 32, 1, 0, 1, -1, 0.0, {"FLASHC_FWD_WGMMA": 1}, False),
    "d128_gqa4_win100_wg": (128, 8, 4, 1, 1, 100, 0.0, {"FLASHC_FWD_WGMMA": 1}, False),
    "d64_softcap30_wg": (64, 4, 1, 0, 0, -1, 30.0, {"FLASHC_FWD_WGMMA": 1}, False),
    "d128_wg_vswap": (128, 16, 1, 0, 0, -1, 0.0, {"FLASHC_FWD_WGMMA": 1, "FLASHC_WG_V_SWAP": 1}, False),
    "d128_causal_wg_vswap": (128, 16, 1, 0, 1, -1, 0.0, {"FLASHC_FWD_WGMMA": 1, "FLASHC_WG_V_SWAP": 1}, False),
    "d128_wg_bn64": (128, 16, 1, 0, 0, -1, 0.0, {"FLASHC_FWD_WGMMA": 1, "FLASHC_WG_BLOCK_N": 64}, False),
    # TMA + warp-specialized forward (attention_fwd_ws.cu, FlashAttention-3 style): producer warpgroup,
    # K/V mbarrier ring, intra-warpgroup overlap + ping-pong; *_nopp: ping-pong off (ablation)
    "d128_ws": (128, 16, 1, 0, 0, -1, 0.0, {"FLASHC_FWD_WS": 1}, False),
    "d128_causal_ws": (128, 16, 1, 0, 1, -1, 0.0, {"FLASHC_FWD_WS": 1}, False),
    "d64_ws": (64, 32, 1, 0, 0, -1, 0.0, {"FLASHC_FWD_WS": 1}, False),
    "d64_causal_ws": (64, 32, 1, 0, 1, -1, 0.0, {"FLASHC_FWD_WS": 1}, False),
    "d128_f16_causal_ws": (128, 4, 1, 1, 1, -1, 0.0, {"FLASHC_FWD_WS": 1}, False),
    "d128_gqa4_causal_ws": (128, 8, 4, 0, 1, -1, 0.0, {"FLASHC_FWD_WS": 1}, False),
    "d64_f16_gqa2_ws": (64, 4, 2, 1, 0, -1, 0.0, {"FLASHC_FWD_WS": 1}, False),
    "d128_gqa4_win100_ws": (128, 8, 4, 1, 1, 100, 0.0, {"FLASHC_FWD_WS": 1}, False),
    "d64_softcap30_ws": (64, 4, 1, 0, 0, -1, 30.0, {"FLASHC_FWD_WS": 1}, False),
    "d128_ws_nopp": (128, 16, 1, 0, 0, -1, 0.0, {"FLASHC_FWD_WS": 1, "FLASHC_WS_PINGPONG": 0}, False),
    "d128_causal_ws_nopp": (128, 16, 1, 0, 1, -1, 0.0, {"FLASHC_FWD_WS": 1, "FLASHC_WS_PINGPONG": 0}, False),
    "d64_ws_st4": (64, 32, 1, 0, 0, -1, 0.0, {"FLASHC_FWD_WS": 1, "FLASHC_WS_STAGES": 4}, False),
    # _g3: three consumer warpgroups, 192 query rows a tile (FlashAttention-3's tile at D <= 64; 512 threads,
    # setmaxnreg 24 / 160; the turns go round robin)
    "d64_ws_g3": (64, 32, 1, 0, 0, -1, 0.0, {"FLASHC_FWD_WS": 1, "FLASHC_WS_CONSUMERS": 3}, False),
    "d64_causal_ws_g3": (64, 32, 1, 0, 1, -1, 0.0, {"FLASHC_FWD_WS": 1, "FLASHC_WS_CONSUMERS": 3}, False),
    "d64_f16_gqa2_ws_g3": (64, 4, 2, 1, 0, -1, 0.0, {"FLASHC_FWD_WS": 1, "FLASHC_WS_CONSUMERS": 3}, False),
    "d64_softcap30_ws_g3": (64, 4, 1, 0, 0, -1, 30.0, {"FLASHC_FWD_WS": 1, "FLASHC_WS_CONSUMERS": 3}, False),
    # _pers: the persistent grid (tile_schedule.cuh: min(units, SMs) blocks over pairs of query-row blocks)
    "d128_ws_pers": (128, 16, 1, 0, 0, -1, 0.0, {"FLASHC_FWD_WS": 1, "FLASHC_WS_PERSISTENT": 1}, False),
    "d128_causal_ws_pers": (128, 16, 1, 0, 1, -1, 0.0, {"FLASHC_FWD_WS": 1, "FLASHC_WS_PERSISTENT": 1}, False),
    "d64_causal_ws_pers": (64, 32, 1, 0, 1, -1, 0.0, {"FLASHC_FWD_WS": 1, "FLASHC_WS_PERSISTENT": 1}, False),
    "d128_gqa4_win100_ws_pers": (128, 8, 4, 1, 1, 100, 0.0, {"FLASHC_FWD_WS": 1, "FLASHC_WS_PERSISTENT": 1}, False),
    # Warp-specialised TMA backward (attention_bwd_ws.cu -> the library's attention_bwd_ws.cuh): a producer warp
    # loads Q, dO (TMA ring), lse and D; 64 keys a block, consumer warpgroups split by role (Pᵀ + dV, dSᵀ + dK), dQ
    # by column halves. _dq128: dQ in one 128-column product a warpgroup; _st3: a 3-slot ring.
    "d256_bwdws": (256, 8, 1, 0, 0, -1, 0.0, {"FLASHC_BWD_WS": 1}, True),
    "d256_causal_bwdws": (256, 8, 1, 0, 1, -1, 0.0, {"FLASHC_BWD_WS": 1}, True),
    "d256_f16_gqa2_win100_bwdws": (256, 8, 2, 1, 1, 100, 0.0, {"FLASHC_BWD_WS": 1}, True),
    "d256_gqa4_win37_bwdws": (256, 8, 4, 0, 0, 37, 0.0, {"FLASHC_BWD_WS": 1}, True),
    "d256_bwdws_dq128": (256, 8, 1, 0, 0, -1, 0.0, {"FLASHC_BWD_WS": 1, "FLASHC_BWD_WS_DQ_COLS": 128}, True),
    # D = 64: the key split with 128 queries a step (FA3's 128 x 128 tile at D = 64), dQ split by rows.
    "d64_bwdws": (64, 32, 1, 0, 0, -1, 0.0, {"FLASHC_BWD_WS": 1}, True),
    "d64_causal_bwdws": (64, 32, 1, 0, 1, -1, 0.0, {"FLASHC_BWD_WS": 1}, True),
    "d64_f16_gqa2_win37_bwdws": (64, 8, 2, 1, 0, 37, 0.0, {"FLASHC_BWD_WS": 1}, True),
    "d128_bwdws": (128, 16, 1, 0, 0, -1, 0.0, {"FLASHC_BWD_WS": 1}, True),
    "d128_causal_bwdws": (128, 16, 1, 0, 1, -1, 0.0, {"FLASHC_BWD_WS": 1}, True),
    "d128_f16_gqa4_win100_bwdws": (128, 8, 4, 1, 1, 100, 0.0, {"FLASHC_BWD_WS": 1}, True),
    "d128_causal_bwdws_st3": (128, 16, 1, 0, 1, -1, 0.0, {"FLASHC_BWD_WS": 1, "FLASHC_BWD_WS_STAGES": 3}, True),
    # D = 128 splits the consumers by keys (128 a block; dQ's product before dK's since run 11); _roles: the role
    # split at D = 128 (runs 9-10) for the A/B.
    "d128_bwdws_roles": (128, 16, 1, 0, 0, -1, 0.0, {"FLASHC_BWD_WS": 1, "FLASHC_BWD_WS_KEY_SPLIT": 0}, True),
    # The same kernel with the device library's pre/postprocess (FLASHC_BWD_WS_LIBRARY_ENDS: attention_bwd_ends.cuh,
    # the preprocess zeroing dq_accum, what the compiler emits) instead of attention_bwd.cu's: the baseline of the
    # backward's ends (docs/design/backward-ends.md).
    "d128_bwdws_ends": (128, 16, 1, 0, 0, -1, 0.0, {"FLASHC_BWD_WS": 1, "FLASHC_BWD_WS_LIBRARY_ENDS": 1}, True),
    "d128_causal_bwdws_ends": (128, 16, 1, 0, 1, -1, 0.0, {"FLASHC_BWD_WS": 1, "FLASHC_BWD_WS_LIBRARY_ENDS": 1}, True),
    "d128_win1024_bwdws_ends": (128, 16, 1, 0, 1, 1024, 0.0, {"FLASHC_BWD_WS": 1, "FLASHC_BWD_WS_LIBRARY_ENDS": 1},
                                True),
    "d64_causal_bwdws_ends": (64, 32, 1, 0, 1, -1, 0.0, {"FLASHC_BWD_WS": 1, "FLASHC_BWD_WS_LIBRARY_ENDS": 1}, True),
    # The window row's per-step excess over the causal one, split (session 52): _nomask never applies the element mask
    # (timing only); _h33 runs 33 heads, 4224 key blocks at 16k = 32 whole waves on 132 SMs (16 heads: 15.5 waves).
    "d128_win1024_bwdws_nomask": (128, 16, 1, 0, 1, 1024, 0.0, {"FLASHC_BWD_WS": 1, "FLASHC_BWD_WS_LIBRARY_ENDS": 1,
                                                                  "FLASHC_LAB_SKIP_ELEMENT_MASK": 1}, True),
    "d128_win1024_h33_bwdws_ends": (128, 33, 1, 0, 1, 1024, 0.0, {"FLASHC_BWD_WS": 1, "FLASHC_BWD_WS_LIBRARY_ENDS": 1},
                                    True),
    # The phase probe (session 55, phases.py): the same kernels recording each block's timeline (entry, K / V ready,
    # first step, walk done, reductions done, stored), the window row's against a long causal walk's.
    "d128_win1024_bwdws_probe": (128, 16, 1, 0, 1, 1024, 0.0, {"FLASHC_BWD_WS": 1, "FLASHC_BWD_WS_LIBRARY_ENDS": 1,
                                                                 "FLASHC_LAB_PHASE_PROBE": 1}, True),
    "d128_causal_bwdws_probe": (128, 16, 1, 0, 1, -1, 0.0, {"FLASHC_BWD_WS": 1, "FLASHC_BWD_WS_LIBRARY_ENDS": 1,
                                                             "FLASHC_LAB_PHASE_PROBE": 1}, True),
    # Session 59: each key block's walk over the query blocks starts at its own (kRotateWalk), so that a head's key
    # blocks do not all add into the same dQ rows at once (unmasked: every block walks every query block in order).
    "d64_bwdws_ends": (64, 32, 1, 0, 0, -1, 0.0, {"FLASHC_BWD_WS": 1, "FLASHC_BWD_WS_LIBRARY_ENDS": 1}, True),
    "d64_bwdws_rotate": (64, 32, 1, 0, 0, -1, 0.0, {"FLASHC_BWD_WS": 1, "FLASHC_BWD_WS_LIBRARY_ENDS": 1,
                                                    "FLASHC_BWD_WS_ROTATE_WALK": 1}, True),
    "d128_bwdws_rotate": (128, 16, 1, 0, 0, -1, 0.0, {"FLASHC_BWD_WS": 1, "FLASHC_BWD_WS_LIBRARY_ENDS": 1,
                                                      "FLASHC_BWD_WS_ROTATE_WALK": 1}, True),
    "d128_f16_gqa4_win100_bwdws_rotate": (128, 8, 4, 1, 1, 100, 0.0, {"FLASHC_BWD_WS": 1, "FLASHC_BWD_WS_LIBRARY_ENDS": 1,
                                                                       "FLASHC_BWD_WS_ROTATE_WALK": 1}, True),
    "d256_bwdws_rotate": (256, 8, 1, 0, 0, -1, 0.0, {"FLASHC_BWD_WS": 1, "FLASHC_BWD_WS_ROTATE_WALK": 1}, True),
    # timing-only stage ablations (wrong results by construction, never checked)
    "d128_nodqatomic": (128, 16, 1, 0, 0, -1, 0.0, {"FLASHC_LAB_SKIP_DQ_ATOMIC": 1}, True),
    "d128_nodq": (128, 16, 1, 0, 0, -1, 0.0, {"FLASHC_LAB_SKIP_DQ": 1}, True),
}
TIMING_ONLY = {"d128_nodqatomic", "d128_nodq", "d128_win1024_bwdws_nomask"}
CONFIGS.update(VARIANTS)
BENCH_CONFIGS = ["d64", "d64_causal", "d128", "d128_causal", "d128_wide", "d128_bulk",
                 "d128_causal_bulk", "d128_det",
                 "d128_wg", "d128_causal_wg", "d64_wg", "d64_causal_wg", "d128_wg_vswap", "d128_causal_wg_vswap",
                 "d128_wg_bn64",
                 "d128_ws", "d128_causal_ws", "d64_ws", "d64_causal_ws", "d128_ws_nopp", "d128_causal_ws_nopp",
                 "d64_ws_st4", "d64_ws_g3", "d64_causal_ws_g3", "d256_bwdws", "d256_causal_bwdws", "d256_bwdws_dq128",
                 "d128_bwdws", "d128_causal_bwdws",
                 "d128_causal_bwdws_st3", "d128_bwdws_roles", "d64_bwdws", "d64_causal_bwdws",
                 "d128_bwdws_ends", "d128_causal_bwdws_ends", "d128_win1024_bwdws_ends", "d64_causal_bwdws_ends"]

def build_one(name, cfg, build_dir, kind, reuse=False):
    d, hq, group, f16, causal, window, softcap, extra, _ = cfg
    src = os.path.join(ROOT, "bench", "kernel_lab", f"launch_{kind}.cu")
    out = os.path.join(build_dir, f"{kind}_{name}.so")
    defs = [f"-DFLASHC_HEAD_DIM={d}", f"-DFLASHC_HEADS_Q={hq}", f"-DFLASHC_GQA_GROUP={group}",
            f"-DFLASHC_F16={f16}", f"-DFLASHC_CAUSAL={causal}", f"-DFLASHC_WINDOW_LEFT={window}",
            f"-DFLASHC_SOFTCAP={softcap}f"] + [f"-D{k}={v}" for k, v in extra.items()]
    cmd = ["nvcc", "-std=c++17", "-O3", "-gencode=arch=compute_90a,code=sm_90a", "-Xptxas", "-v",
           "-shared", "-Xcompiler", "-fPIC", "-diag-suppress", "177",
           "-I", os.path.join(ROOT, "runtime", "device", "include"),
           "-I", os.path.join(ROOT, "test", "GPU", "golden")] + defs + [src, "-o", out]
    if reuse and os.path.exists(out):
        return name, kind, out, f"== {kind} {name}: reused {out}\n"
    t0 = time.time()
    p = subprocess.run(cmd, capture_output=True, text=True)
    log = f"== {kind} {name} ({time.time() - t0:.1f}s) rc={p.returncode}\n{' '.join(cmd)}\n{p.stdout}{p.stderr}"
    return name, kind, out if p.returncode == 0 else None, log


def summarize_ptxas(log):
    """(entry, registers, spill bytes) lines from a ptxas -v log."""
    res, entry = [], None
    for line in log.splitlines():
        if "Compiling entry function" in line:
            entry = line.split("'")[1]
        elif "spill stores" in line and entry:
            spill = line.strip().split(",")[1].strip().split()[0]
            res.append([entry, None, spill])
        elif "Used" in line and "registers" in line and res and res[-1][1] is None:
            res[-1][1] = line.split("Used")[1].split("registers")[0].strip()
    return res


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.environ.get("OUT", "/tmp/flashc_lab_out"))
    ap.add_argument("--build-dir", default="/tmp/flashc_lab_build")
    ap.add_argument("--skip-bench", action="store_true")
    ap.add_argument("--skip-check", action="store_true")
    ap.add_argument("--only", default="")
    ap.add_argument("--exclude", default="")
    ap.add_argument("--reuse-build", action="store_true", help="keep .so files already built")
    ap.add_argument("--bench", default="", help="configs to time (default: BENCH_CONFIGS among --only's)")
    ap.add_argument("--seqs", default="1024,4096,16384", help="sequence lengths to time at 16k tokens")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    os.makedirs(args.build_dir, exist_ok=True)
    names = [n for n in CONFIGS if not args.only or n in args.only.split(",")]
    if args.exclude:
        names = [n for n in names if n not in args.exclude.split(",")]

    # ---- build ----
    jobs = []
    with cf.ThreadPoolExecutor(max_workers=os.cpu_count() or 4) as ex:
        for n in names:
            jobs.append(ex.submit(build_one, n, CONFIGS[n], args.build_dir, "fwd", args.reuse_build))
            if CONFIGS[n][8]:
                jobs.append(ex.submit(build_one, n, CONFIGS[n], args.build_dir, "bwd", args.reuse_build))
        results = [j.result() for j in jobs]
    libs, failed = {}, []
    with open(os.path.join(args.out, "ptxas.log"), "w") as f:
        for name, kind, path, log in results:
            f.write(log + "\n")
            if path is None:
                failed.append(f"{kind}:{name}")
                print(log[-3000:])
            else:
                libs[(kind, name)] = path
                for entry, regs, spill in summarize_ptxas(log):
                    if not entry.endswith("process"):
                        print(f"ptxas {kind:3} {name:24} regs={regs:>4} spill={spill}B")
    if failed:
        print("BUILD FAILED:", failed)
        return 1

    import torch
    from check import run_checks
    from bench import run_bench
    ok = True
    passed = {}
    if not args.skip_check:
        passed = run_checks(libs, CONFIGS, [n for n in names if n not in TIMING_ONLY], args.out)
        ok = all(passed.values())
        print("check summary:", " ".join(f"{n}={'ok' if v else 'FAIL'}" for n, v in passed.items()))
    if not args.skip_bench:  # only configs that passed (or timing-only ablations)
        timed = args.bench.split(",") if args.bench else BENCH_CONFIGS
        run_bench(libs, CONFIGS, [n for n in timed if n in names and passed.get(n, n in TIMING_ONLY or args.skip_check)],
                  args.out, seqlens=tuple(int(x) for x in args.seqs.split(",")))
    print("ALL CHECKS PASSED" if ok else "SOME CHECKS FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    sys.exit(main())
