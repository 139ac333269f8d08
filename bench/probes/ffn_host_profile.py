# The host side of the d = 256 FFN training step (M = 65536, h = 1024: host-bound, session 16 call 4): torch.profiler's
# CPU operators over 20 steps of flashc and of eager PyTorch, by self CPU time, with the flashc launches timed by a
# record_function around each program. Needs FLASHC_BUNDLE_PATH with the bench-ffn bundles.
import torch
import torch.nn.functional as F
from torch.profiler import ProfilerActivity, profile, record_function

import flashc.torch as ft

M, d, h = 65536, 256, 1024
g = torch.Generator(device="cuda").manual_seed(0)
x = torch.randn(M, d, device="cuda", generator=g).to(torch.bfloat16).requires_grad_()
w1 = (torch.randn(d, h, device="cuda", generator=g) * d ** -0.5).to(torch.bfloat16).requires_grad_()
w2 = (torch.randn(h, d, device="cuda", generator=g) * h ** -0.5).to(torch.bfloat16).requires_grad_()
dy = torch.randn(M, d, device="cuda", generator=g).to(torch.bfloat16)
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
