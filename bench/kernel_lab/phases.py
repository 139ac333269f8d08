"""Where a backward main kernel's time goes, block by block: the phase probe's timelines (session 55).

Configs built with FLASHC_LAB_PHASE_PROBE (lab.py's `*_probe` ones) record, in each consumer warpgroup's first
thread, the SM's clock at the library's six timeline points (attention_bwd_ws.cuh's FLASHC_BWD_WS_PROBE: entry, K / V
ready, first step ready, walk done, reductions done, dK / dV stored) and the global timer at entry and end. One
backward's records (after warm-up calls) give, per key block and summed over the grid:

  kv wait     entry -> K and V in shared memory (the prologue's loads)
  fill        K / V ready -> the first step's Q / dO ready (the ring's first stage)
  walk        the steps (per step: walk / steps)
  drain       walk done -> the last dQ reductions read (tma wait)
  epilogue    dK / dV converted and stored
  between     on one SM, a block's end to the next block's entry (exit, launch, barrier init, the producer's start)
  tail        an SM's last block's end to the kernel's last end (the grid's last wave)

as shares of SMs x span (the span: first entry to last end on the global timer), and each SM's clock rate from the
two timers. The probe costs each block 8 stores of one thread a warpgroup.

    python3 bench/kernel_lab/phases.py --only d128_win1024_bwdws_probe,d128_causal_bwdws_probe --seqlens 16384
"""
import argparse, ctypes, os, statistics, sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import numpy as np
import torch

from abi import Kernels
from bench import LabInputs
from lab import CONFIGS, build_one

SLOTS = 9  # attention_bwd_ws.cu's kProbeSlots: clocks at points 0-5, global timer at 0 and 5, the SM


def read_probe(lib):
    lib.flashc_lab_probe_bytes.restype = ctypes.c_size_t
    nbytes = lib.flashc_lab_probe_bytes()
    buf = np.zeros(nbytes // 8, dtype=np.uint64)
    rc = lib.flashc_lab_probe_read(buf.ctypes.data_as(ctypes.c_void_p))
    if rc != 0:
        raise RuntimeError(f"probe read failed: {rc}")
    return buf.reshape(-1, 2, SLOTS).astype(np.int64)


def walk_steps(k0, S, block_m, window):
    """Query steps of key block k0..k0+127 under a causal mask (window < 0) or a causal window of `window` keys."""
    begin = k0 // block_m
    end = (S + block_m - 1) // block_m
    if window >= 0:
        end = min(end, (k0 + 127 + window) // block_m + 1)
    return max(end - begin, 0)


def analyse(name, rec, S, heads, block_m, window):
    wg0 = rec[:, 0, :]
    used = wg0[:, 6] != 0
    n = int(used.sum())
    r0 = wg0[used]
    t0, t1 = r0[:, 6], r0[:, 7]
    span = int(t1.max() - t0.min())
    ghz = (r0[:, 5] - r0[:, 0]) / np.maximum(t1 - t0, 1)  # cycles per ns
    us = lambda cycles: cycles / ghz / 1000.0
    phases = {
        "kv wait": us(r0[:, 1] - r0[:, 0]),
        "fill": us(r0[:, 2] - r0[:, 1]),
        "walk": us(r0[:, 3] - r0[:, 2]),
        "drain": us(r0[:, 4] - r0[:, 3]),
        "epilogue": us(r0[:, 5] - r0[:, 4]),
    }
    sms = r0[:, 8]
    between, tail = [], []
    for sm in np.unique(sms):
        order = np.argsort(t0[sms == sm])
        starts, ends = t0[sms == sm][order], t1[sms == sm][order]
        between.extend((starts[1:] - ends[:-1]) / 1000.0)
        tail.append((t1.max() - ends[-1]) / 1000.0)
    n_sms = len(np.unique(sms))
    gx = (S + 127) // 128
    blocks = np.nonzero(used)[0]
    steps = np.array([walk_steps(int(b % gx) * 128, S, block_m, window) for b in blocks])
    total = n_sms * span / 1000.0  # SM-us
    print(f"\n{name}  S={S}  {n} key blocks on {n_sms} SMs, span {span / 1000:.1f} us, "
          f"clock {statistics.median(ghz):.3f} GHz, steps a block {steps.mean():.1f} (max {steps.max()})")
    print(f"  {'phase':10} {'us a block':>11} {'share of SMs x span':>20}")
    for k, v in phases.items():
        print(f"  {k:10} {v.mean():11.2f} {v.sum() / total:19.1%}")
    print(f"  {'between':10} {np.mean(between) if between else 0:11.2f} {np.sum(between) / total:19.1%}")
    print(f"  {'tail':10} {np.mean(tail):11.2f} {np.sum(tail) / total:19.1%}")
    per_step = phases["walk"] / np.maximum(steps, 1)
    full = steps == steps.max()
    print(f"  a step: {per_step[full].mean() * 1000:.0f} ns (blocks with the longest walk), "
          f"{per_step.mean() * 1000:.0f} ns (all)")
    return {"name": name, "S": S, "blocks": n, "sms": n_sms, "span_us": span / 1000,
            "phases_us": {k: float(v.mean()) for k, v in phases.items()},
            "shares": {**{k: float(v.sum() / total) for k, v in phases.items()},
                       "between": float(np.sum(between) / total), "tail": float(np.sum(tail) / total)},
            "step_ns_longest": float(per_step[full].mean() * 1000), "steps_max": int(steps.max())}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", required=True)
    ap.add_argument("--seqlens", default="16384")
    ap.add_argument("--build-dir", default="/tmp/flashc_lab_build")
    ap.add_argument("--json", default="")
    args = ap.parse_args()
    names = args.only.split(",")
    os.makedirs(args.build_dir, exist_ok=True)
    out = []
    for name in names:
        cfg = CONFIGS[name]
        if "FLASHC_LAB_PHASE_PROBE" not in cfg[7]:
            print(f"{name}: not a probe config (FLASHC_LAB_PHASE_PROBE)")
            return 1
        libs = {}
        for kind in ("fwd", "bwd"):
            _, _, path, log = build_one(name, cfg, args.build_dir, kind, reuse=True)
            if path is None:
                print(log[-2000:])
                return 1
            libs[kind] = path
        kern = Kernels(libs["fwd"], libs["bwd"])
        torch.manual_seed(0)
        for S in (int(s) for s in args.seqlens.split(",")):
            run = LabInputs(kern, cfg, S)
            for _ in range(5):
                run.backward()
            torch.cuda.synchronize()
            kern.bwd_lib.flashc_lab_probe_clear()
            run.backward()
            torch.cuda.synchronize()
            block_m = 128 if cfg[0] == 64 else 64
            out.append(analyse(name, read_probe(kern.bwd_lib), S, cfg[1], block_m, cfg[5] if cfg[4] else -1))
            del run
            torch.cuda.empty_cache()
    if args.json:
        import json
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
