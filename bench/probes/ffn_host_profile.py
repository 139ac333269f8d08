# The host side of the d = 256 FFN training step (M = 65536, h = 1024: host-bound, session 16 call 4): torch.profiler's
# CPU operators over 20 steps of flashc and of eager PyTorch, by self CPU time, with the flashc launches timed by a
# record_function around each program. Needs FLASHC_BUNDLE_PATH with the bench-ffn bundles.
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import bench_common as bc  # noqa: E402  (puts python/ on the path too)

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from torch.profiler import ProfilerActivity, profile, record_function  # noqa: E402

import flashc.torch as ft  # noqa: E402

M, d, h = 65536, 256, 1024
x, w1, w2, _, dy = bc.ffn_inputs(torch, M, d, h, False)
launch = ft._launch


def traced_launch(bundle, program, device, args):
    with record_function("flashc::" + program):
        launch(bundle, program, device, args)


ft._launch = traced_launch
steps = {"flashc": lambda: ft.ffn(x, w1, w2=w2, activation="gelu_tanh").backward(dy),
         "eager": lambda: (F.gelu(x @ w1, approximate="tanh") @ w2).backward(dy)}
for name, step in steps.items():
    for _ in range(10):
        step()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        for _ in range(20):
            with record_function("step"):
                step()
        torch.cuda.synchronize()
    print("==== %s: 20 steps, CPU time by operator (self), top 25" % name)
    print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=25, max_name_column_width=60))
    print("==== %s: by total CPU time, top 25" % name)
    print(prof.key_averages().table(sort_by="cpu_time_total", row_limit=25, max_name_column_width=60))
