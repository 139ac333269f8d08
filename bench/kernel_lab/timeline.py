"""The backward's kernels on the GPU's clock: when each starts and ends, for lab configurations side by side.

The lent machine has no Nsight Systems; torch.profiler reads the same CUPTI activity records. For every config and
length this prints the median over calls of each kernel's duration and of the gaps between them (negative: the kernel
started before the one before it ended, a programmatic launch's overlap), and the span from the preprocess's start to
the postprocess's end. The configs' calls are interleaved (one of each in turn), so that an A/B is not an order effect
(session 48: bench.py's do_bench, then timing configs one after another, read the second 2-5 % slower at 4k-16k;
bench.py interleaves too since session 49).

    python3 bench/kernel_lab/timeline.py --only d128_win1024_bwdws_ends,d128_causal_bwdws_ends --seqlens 1024,16384

Limits: the backward must be the lab's three kernels (a preprocess, a main kernel, a postprocess: `flashc_*` entries
whose names end in _preprocess / _postprocess); the inputs are bf16 [16k / S, Hq, S, D] with the config's Hq and D
for q, k and v alike (bench.py's simplification: GQA and f16 configurations are not what they say here); builds
already in --build-dir are reused as they are (delete them after changing a kernel).
"""
import argparse, os, statistics, sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch
from torch.profiler import ProfilerActivity, profile

from abi import Kernels
from bench import LabInputs
from lab import CONFIGS, build_one


def kernel_intervals(prof):
    """(name, start us, end us) of every lab kernel (`flashc_*`) on the GPU, in start order."""
    out = []
    for e in prof.events():
        if (e.device_type == torch.autograd.DeviceType.CUDA and e.name.startswith("flashc_")
                and e.time_range.elapsed_us() > 0):
            out.append((e.name, e.time_range.start, e.time_range.end))
    return sorted(out, key=lambda t: t[1])


def backward_calls(kernels, calls):
    """The records split into one (preprocess, main, postprocess) triple a call; an error if they are not that."""
    if len(kernels) != 3 * calls:
        raise RuntimeError(f"expected {3 * calls} kernels ({calls} backwards of 3), got {len(kernels)}: "
                           f"{sorted({n for n, _, _ in kernels})}")
    triples = [kernels[i:i + 3] for i in range(0, len(kernels), 3)]
    for (pre, _, _), (main, _, _), (post, _, _) in triples:
        if not (pre.endswith("_preprocess") and post.endswith("_postprocess") and not main.endswith("process")):
            raise RuntimeError(f"a backward's kernels out of order: {pre}, {main}, {post}")
    return triples


def prepare(name, libs, S):
    """A closure that runs config `name`'s backward once at length S (16k tokens), on bench.py's inputs."""
    return LabInputs(Kernels(libs[("fwd", name)], libs[("bwd", name)]), CONFIGS[name], S).backward


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", required=True)
    ap.add_argument("--seqlens", default="1024,16384")
    ap.add_argument("--calls", type=int, default=10)
    ap.add_argument("--build-dir", default="/tmp/flashc_lab_build")
    args = ap.parse_args()
    names = args.only.split(",")
    os.makedirs(args.build_dir, exist_ok=True)
    libs = {}
    for n in names:
        for kind in ("fwd", "bwd"):
            _, _, path, log = build_one(n, CONFIGS[n], args.build_dir, kind, reuse=True)
            if path is None:
                print(log[-2000:])
                return 1
            libs[(kind, n)] = path
    torch.manual_seed(0)
    for S in (int(s) for s in args.seqlens.split(",")):
        runs = [prepare(name, libs, S) for name in names]
        for run in runs:  # (warm-up)
            for _ in range(3):
                run()
        torch.cuda.synchronize()
        # Interleaved, one call of each config in turn, so that the machine's drift over the run (its clocks
        # warming) falls on every config alike.
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            for _ in range(args.calls):
                for run in runs:
                    run()
                    torch.cuda.synchronize()
        calls = backward_calls(kernel_intervals(prof), args.calls * len(names))
        for i, name in enumerate(names):
            own = calls[i::len(names)]
            pre = [a1 - a0 for (_, a0, a1), _, _ in own]
            main_ = [b1 - b0 for _, (_, b0, b1), _ in own]
            post = [c1 - c0 for _, _, (_, c0, c1) in own]
            gap1 = [b0 - a1 for (_, _, a1), (_, b0, _), _ in own]
            gap2 = [c0 - b1 for _, (_, _, b1), (_, c0, _) in own]
            spans = [c1 - a0 for (_, a0, _), _, (_, _, c1) in own]
            med = statistics.median
            print(f"{name:32} S={S:6} pre {med(pre):7.1f} | gap {med(gap1):6.1f} | main {med(main_):8.1f} | "
                  f"gap {med(gap2):7.1f} | post {med(post):6.1f} | span {med(spans):8.1f} us  ({len(spans)} calls; "
                  f"kernels {', '.join(n for n, _, _ in own[0])})")
        del runs
        torch.cuda.empty_cache()
    return 0


if __name__ == "__main__":
    sys.exit(main())
