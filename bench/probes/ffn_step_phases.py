# Where the host time of one FFN training step (y = flashc.torch.ffn(x, w1, w2); y.backward(dy)) goes, phase by
# phase, at M = 65536, d = 256, h = 1024 (bench_ffn's host-bound row) and at M = 256 (GPU time negligible): the
# autograd engine's entry and exit around flashc's backward, the Python around the launches, the argument binding,
# the workspace, and the runtime's C call, each a median over steady steps. Two modes: every step synchronised
# (pure host cost: the GPU never holds the host back) and free-running (as bench_ffn runs). Beside it, eager's
# forward and backward host time, and the runtime's C launch alone in a loop with its arguments bound once.
# Needs FLASHC_BUNDLE_PATH with the bench-ffn bundles and the d = 256 / M = 256 FFN (the same bundle).
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import bench_common as bc  # noqa: E402  (puts python/ on the path too)

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import flashc.torch as ft  # noqa: E402
from flashc import bundle as fb  # noqa: E402

now = time.perf_counter_ns
samples = {}  # phase -> [ns]
marks = {}


def record(name, ns):
    samples.setdefault(name, []).append(ns)


def timed(name, fn):
    def wrapper(*args, **kwargs):
        t0 = now()
        try:
            return fn(*args, **kwargs)
        finally:
            record(name, now() - t0)
    return wrapper


# Wrap each layer (module globals are looked up at call time, so patching the module is enough).
ft._ffn_forward = timed("_ffn_forward", ft._ffn_forward)
_allocator = ft._allocator
ft._allocator = lambda device: timed("workspace allocation (torch.empty)", _allocator(device))
_launch = ft._launch


def launch_by_program(bundle, program, device, args):
    t0 = now()
    _launch(bundle, program, device, args)
    record("_launch " + program, now() - t0)


ft._launch = launch_by_program
fb.Bundle._bind = timed("Bundle._bind (ctypes args)", fb.Bundle._bind)
fb.Bundle._kept_args = timed("Bundle._kept_args (kept handle filled)", fb.Bundle._kept_args)
_ffn_backward = ft._ffn_backward


def ffn_backward_marked(*args):
    marks["bwd_in"] = now()
    t0 = now()
    try:
        return _ffn_backward(*args)
    finally:
        record("_ffn_backward", now() - t0)
        marks["bwd_out"] = now()


ft._ffn_backward = ffn_backward_marked


def wrap_c(lib, name):
    fn = getattr(lib, name)

    def wrapper(*args):
        t0 = now()
        rc = fn(*args)
        record("C " + name, now() - t0)
        return rc
    setattr(lib, name, wrapper)


def median_us(values):
    values = sorted(values)
    return values[len(values) // 2] / 1e3 if values else float("nan")


def run(M, d=256, h=1024, steps=60, synced=True):
    x, w1, w2, _, dy = bc.ffn_inputs(torch, M, d, h, False)
    leaves = (x, w1, w2)

    def flashc_step():
        for t in leaves:
            t.grad = None
        t0 = now()
        y = ft.ffn(x, w1, w2=w2, activation="gelu_tanh")
        t1 = now()
        y.backward(dy)
        t2 = now()
        record("forward (ft.ffn)", t1 - t0)
        record("backward (y.backward)", t2 - t1)
        record("engine: entry to flashc's backward", marks["bwd_in"] - t1)
        record("engine: flashc's backward return to exit", t2 - marks["bwd_out"])

    def eager_step():
        for t in leaves:
            t.grad = None
        t0 = now()
        y = F.gelu(x @ w1, approximate="tanh") @ w2
        t1 = now()
        y.backward(dy)
        t2 = now()
        record("eager forward", t1 - t0)
        record("eager backward", t2 - t1)

    for step in (flashc_step, eager_step):
        for _ in range(10):
            step()
        torch.cuda.synchronize()
        samples.clear()
        t0 = now()
        for _ in range(steps):
            step()
            if synced:
                torch.cuda.synchronize()
        torch.cuda.synchronize()
        record("wall a step" if step is flashc_step else "eager wall a step", (now() - t0) // steps)
        phases = dict(samples)
        for name, values in phases.items():
            print("  %-48s %8.1f us" % (name, median_us(values)))
        if step is flashc_step:
            print("  %-48s" % "--- eager")


lib = fb._lib.load()
for fn_name in ("flashc_launch", "flashc_launch_workspace", "flashc_workspace_bytes", "flashc_args_set_tensors",
                "flashc_args_create", "flashc_args_destroy"):
    wrap_c(lib, fn_name)

for M in (65536, 256):
    for synced in (True, False):
        print("M = %d, d = 256, h = 1024, %s:" % (M, "each step synchronised" if synced else "free-running"),
              flush=True)
        run(M, synced=synced)

# The runtime's C launch of the backward program alone: arguments bound once, workspace lent once.
x, w1, w2, _, dy = bc.ffn_inputs(torch, 65536, 256, 1024, False)
captured = {}


def capture(bundle, program, device, args):
    captured[program] = (bundle, args)
    _launch(bundle, program, device, args)


ft._launch = capture
ft.ffn(x, w1, w2=w2, activation="gelu_tanh").backward(dy)
torch.cuda.synchronize()
ft._launch = launch_by_program
stream = torch.cuda.current_stream().cuda_stream
import ctypes  # noqa: E402

for program, (bundle, args) in sorted(captured.items()):
    nbytes = bundle.workspace_bytes(program, **args)
    workspace = torch.empty(max(nbytes, 1), dtype=torch.uint8, device="cuda")
    bound = bundle._bind(program, args, partial=False)
    name = program.encode()
    times = []
    for i in range(200):
        t0 = now()
        fb._lib.check(lib.flashc_launch_workspace(bundle._handle, name, bound.handle, ctypes.c_void_p(stream),
                                                  ctypes.c_void_p(workspace.data_ptr()), nbytes))
        times.append(now() - t0)
        if i % 4 == 3:
            torch.cuda.synchronize()
    bound.close()
    print("runtime C launch of %-24s alone (bound once): %8.1f us median of 200" % (program, median_us(times[20:])))
