# Host time of an FFN training step (y = flashc.torch.ffn(x, w1, w2); y.backward(dy)) on flashc.torch's native path
# (FLASHC_NATIVE=1: the C++ autograd Function, flashc._native) against its Python autograd Function (FLASHC_NATIVE=0)
# and eager PyTorch, at bench_ffn's d = 256, h = 1024 row: M = 256 with every step synchronised (GPU time negligible:
# the host's cost alone, forward and backward apart) and M = 65536 free-running as a training loop runs (the step's
# wall clock: the host's or the GPU's, whichever is longer). Blocks of steps alternate between the paths in one
# process (the order reversed every block); medians over blocks. Gradients are set to None before each step, as
# bench_ffn does. Needs FLASHC_BUNDLE_PATH with the bench-ffn bundles.
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import bench_common as bc  # noqa: E402,F401  (puts python/ on the path too)

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import flashc.torch as ft  # noqa: E402
from flashc import configs  # noqa: E402

BLOCKS, STEPS = 8, 30
config = next(c for c in configs.BENCH_FFN if c.d_model == 256 and not c.gated)
now = time.perf_counter


def inputs(rows):
    torch.manual_seed(0)
    x = torch.randn(rows, 256, device="cuda", dtype=torch.bfloat16).requires_grad_()
    w1 = (torch.randn(256, 1024, device="cuda", dtype=torch.bfloat16) / 16).requires_grad_()
    w2 = (torch.randn(1024, 256, device="cuda", dtype=torch.bfloat16) / 32).requires_grad_()
    dy = torch.randn(rows, 256, device="cuda", dtype=torch.bfloat16)
    return x, w1, w2, dy


def flashc_forward(x, w1, w2):
    return ft.ffn(x, w1, w2=w2, activation=config.activation)


def eager_forward(x, w1, w2):
    return F.gelu(x @ w1, approximate="tanh") @ w2


PATHS = {"native": ("1", flashc_forward), "python": ("0", flashc_forward), "eager": (None, eager_forward)}


def use(path):
    env = PATHS[path][0]
    if env is None:
        os.environ.pop("FLASHC_NATIVE", None)
    else:
        os.environ["FLASHC_NATIVE"] = env
    return PATHS[path][1]


def clear(leaves):
    for t in leaves:
        t.grad = None


def synced_block(forward, x, w1, w2, dy):
    """Per step (µs): the forward call's and the backward call's host time, each step after a synchronisation."""
    fwd, bwd = [], []
    for _ in range(STEPS):
        clear((x, w1, w2))
        torch.cuda.synchronize()
        t0 = now()
        y = forward(x, w1, w2)
        t1 = now()
        y.backward(dy)
        t2 = now()
        fwd.append((t1 - t0) * 1e6)
        bwd.append((t2 - t1) * 1e6)
    return statistics.median(fwd), statistics.median(bwd)


def free_block(forward, x, w1, w2, dy):
    """Wall clock a step (µs) over STEPS steps enqueued back to back."""
    torch.cuda.synchronize()
    t0 = now()
    for _ in range(STEPS):
        clear((x, w1, w2))
        forward(x, w1, w2).backward(dy)
    torch.cuda.synchronize()
    return (now() - t0) * 1e6 / STEPS


def main():
    for rows, synced in ((256, True), (65536, False)):
        x, w1, w2, dy = inputs(rows)
        for path in PATHS:  # first calls: bundles, the native build, torch's kernels
            forward = use(path)
            for _ in range(5):
                clear((x, w1, w2))
                forward(x, w1, w2).backward(dy)
        torch.cuda.synchronize()
        results = {p: [] for p in PATHS}
        order = list(PATHS)
        for block in range(BLOCKS):
            for path in (order if block % 2 == 0 else order[::-1]):
                forward = use(path)
                results[path].append((synced_block if synced else free_block)(forward, x, w1, w2, dy))
        os.environ.pop("FLASHC_NATIVE", None)
        print("M = %d, d = 256, h = 1024, %s (µs, median of %d blocks of %d steps):"
              % (rows, "every step synchronised: host time" if synced else "free-running: wall clock a step",
                 BLOCKS, STEPS))
        for path, samples in results.items():
            if synced:
                fwd = statistics.median(s[0] for s in samples)
                bwd = statistics.median(s[1] for s in samples)
                print("  %-7s forward %7.1f  backward %7.1f  step %7.1f" % (path, fwd, bwd, fwd + bwd))
            else:
                print("  %-7s step %8.1f  (blocks %s)" % (path, statistics.median(samples),
                                                          " ".join("%.0f" % s for s in samples)))
        grad_fn = use("native") and flashc_forward(x, w1, w2).grad_fn
        print("  native path's node: %s" % (grad_fn.name() if grad_fn is not None else None))
        os.environ.pop("FLASHC_NATIVE", None)


if __name__ == "__main__":
    main()
