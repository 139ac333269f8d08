# Host time per call of flashc.torch.attention / ffn on CPU, with the bundle and its launch stubbed out (no GPU,
# no compiler): the Python and dispatch overhead of the binding alone (validation cache, autograd plumbing, output
# allocation, argument mapping). The device check is bypassed by describing the CPU tensors as on cuda:0.
# Usage: PYTHONPATH=python python bench/probes/host_overhead_cpu.py [N]
import sys
import time

import torch

import flashc
import flashc.torch as ft
from flashc import cache

N = int(sys.argv[1]) if len(sys.argv) > 1 else 20000


class NoOpBundle:
    def __init__(self, config):
        self.path, self.kernels = "<no-op>", []
        self.names = {config.forward_program: config.forward_params(), config.backward_program: config.backward_params()}
        if hasattr(config, "forward_train_program"):  # FFN: the training forward (saves what the backward reads)
            self.names[config.forward_train_program] = config.forward_train_params()
        self.programs = list(self.names)

    def params(self, name):
        return [flashc.Param(n, True, "bf16", "in", ()) for n in self.names[name]]

    def launch(self, name, stream=None, **args):
        pass


cache.load_bundle = NoOpBundle
ft._launch = lambda bundle, program, device, args: bundle.launch(program, **args)
real_info = ft._info
ft._info = lambda *args: real_info(*args)._replace(device="cuda:0")


def per_call(f, n=N):
    for _ in range(200):
        f()
    best = float("inf")
    for _ in range(5):
        t0 = time.perf_counter()
        for _ in range(n // 5):
            f()
        best = min(best, (time.perf_counter() - t0) * 1e6 / (n // 5))
    return best


bf = torch.bfloat16
x = torch.randn(16, 64, dtype=bf)
w1 = torch.randn(64, 128, dtype=bf)
w2 = torch.randn(128, 64, dtype=bf)
q, k, v = (torch.randn(1, 2, 16, 64, dtype=bf) for _ in range(3))
xg = x.clone().requires_grad_()
qg = q.clone().requires_grad_()
dy = torch.ones(16, 64, dtype=bf)
do = torch.ones_like(q)
cases = (
    ("ffn no grad", lambda: ft.ffn(x, w1, w2=w2)),
    ("ffn x.requires_grad", lambda: ft.ffn(xg, w1, w2=w2)),  # (the training forward: two more outputs)
    ("ffn fwd + bwd", lambda: ft.ffn(xg, w1, w2=w2).backward(dy)),
    ("attention no grad", lambda: ft.attention(q, k, v, causal=True)),
    ("attention q.requires_grad", lambda: ft.attention(qg, k, v, causal=True)),
    ("attention fwd + bwd", lambda: ft.attention(qg, k, v, causal=True).backward(do)),
    ("torch.empty x2 (floor)", lambda: (torch.empty(16, 64, dtype=bf), torch.empty(16, dtype=torch.float32))),
)
print("torch %s, host us/call (best of 5 x %d, launches stubbed):" % (torch.__version__, N // 5))
print("  %-28s %8s %8s" % ("", "Function", "op"))
use_ops = getattr(ft, "_use_ops", None)
for name, f in cases:
    row = [per_call(f)]
    if use_ops is not None:  # the same call forced through torch.ops.flashc (the torch.compile path), eagerly
        ft._use_ops = lambda t: True
        row.append(per_call(f))
        ft._use_ops = use_ops
    print("  %-28s" % name + "".join(" %8.2f" % t for t in row))
