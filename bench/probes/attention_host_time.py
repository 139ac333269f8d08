# Host time of one flashc attention forward + backward where the GPU time is negligible (B = 1, 16 heads, S = 256,
# D = 128), beside PyTorch's SDPA (cuDNN) of the same shape, and where it goes: the autograd call as a whole, the
# forward and backward paths called directly (_attention_forward / _attention_backward), their argument binding
# (Bundle._bind) and flashc_launch, and a cProfile of the direct paths (the autograd engine runs the backward on
# its own thread, which cProfile does not see). Needs FLASHC_BUNDLE_PATH with the bench-attention bundles.
import cProfile
import pstats
import time

import torch
import torch.nn.functional as F

import flashc.torch as ft
from flashc import bundle as fb

N = 300
torch.manual_seed(0)
q, k, v = (torch.randn(1, 16, 256, 128, device="cuda", dtype=torch.bfloat16, requires_grad=True) for _ in range(3))
do = torch.randn(1, 16, 256, 128, device="cuda", dtype=torch.bfloat16)


def median_us(f, n=N):
    for _ in range(20):
        f()
    torch.cuda.synchronize()
    times = []
    for _ in range(n):
        t0 = time.perf_counter()
        f()
        times.append(time.perf_counter() - t0)
    torch.cuda.synchronize()
    times.sort()
    return times[len(times) // 2] * 1e6


def sdpa_cudnn():
    with torch.nn.attention.sdpa_kernel(torch.nn.attention.SDPBackend.CUDNN_ATTENTION):
        F.scaled_dot_product_attention(q, k, v).backward(do)


def sdpa_fwd():
    with torch.nn.attention.sdpa_kernel(torch.nn.attention.SDPBackend.CUDNN_ATTENTION):
        F.scaled_dot_product_attention(q, k, v)


def flashc_both():
    ft.attention(q, k, v).backward(do)


def flashc_fwd():
    ft.attention(q, k, v)


ft.attention(q, k, v).backward(do)
config = next(iter(ft._configs.values()))
qd, kd, vd = q.detach(), k.detach(), v.detach()
_, _, _, o, lse = ft._attention_forward(config, qd, kd, vd, None)
bundle_b, program_b, mapping_b = ft._program(config, "backward")
bundle_f, program_f, mapping_f = ft._program(config, "forward")
args_f = {mapping_f[n]: t for n, t in dict(q=qd, k=kd, v=vd, o=o, lse=lse).items() if n in mapping_f}
dq, dk, dv = torch.empty_like(qd), torch.empty_like(kd), torch.empty_like(vd)
args_b = {mapping_b[n]: t for n, t in dict(q=qd, k=kd, v=vd, o=o, lse=lse, do=do, dq=dq, dk=dk, dv=dv).items()
          if n in mapping_b}
stream = torch.cuda.current_stream().cuda_stream

rows = [
    ("SDPA cuDNN forward + backward (autograd)", sdpa_cudnn),
    ("SDPA cuDNN forward", sdpa_fwd),
    ("flashc forward + backward (autograd)", flashc_both),
    ("flashc forward (autograd)", flashc_fwd),
    ("flashc _attention_forward (direct)", lambda: ft._attention_forward(config, qd, kd, vd, None)),
    ("flashc _attention_backward (direct)", lambda: ft._attention_backward(config, None, qd, kd, vd, o, lse, do)),
    ("Bundle.launch forward program", lambda: bundle_f.launch(program_f, stream=stream, **args_f)),
    ("Bundle.launch backward program", lambda: bundle_b.launch(program_b, stream=stream, **args_b)),
    ("Bundle._bind forward program", lambda: bundle_f._bind(program_f, args_f, False).close()),
    ("Bundle._bind backward program", lambda: bundle_b._bind(program_b, args_b, False).close()),
    ("torch.empty x 5", lambda: [torch.empty_like(qd) for _ in range(5)]),
]


class _Identity(torch.autograd.Function):
    """A Python autograd Function that does nothing: the engine's cost of calling one."""

    @staticmethod
    def forward(ctx, x):
        return x.view_as(x)

    @staticmethod
    def backward(ctx, g):
        return g


backward_times = []
original_backward = ft._AttentionOutput.backward  # what ft.attention(...) without return_lse runs


def timed_backward(ctx, *grads):
    t0 = time.perf_counter()
    try:
        return original_backward(ctx, *grads)
    finally:
        backward_times.append(time.perf_counter() - t0)


def single_thread(f):
    def run():
        with torch.autograd.set_multithreading_enabled(False):
            f()
    return run


class _Shaped(torch.autograd.Function):
    """The two-output Function's structure (flashc.torch._Attention, return_lse=True) without kernels: 3 inputs,
    (o, lse) out with lse non-differentiable, saved tensors, once_differentiable, fresh gradient tensors."""

    @staticmethod
    def forward(ctx, q, k, v):
        o, lse = torch.empty_like(q), torch.empty(q.shape[:3], device=q.device, dtype=torch.float32)
        ctx.save_for_backward(q, k, v, o, lse)
        ctx.mark_non_differentiable(lse)
        return o, lse

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, do, _dlse):
        q, k, v, o, lse = ctx.saved_tensors
        return torch.empty_like(q), torch.empty_like(k), torch.empty_like(v)


def median_backward_us(make, n=N):
    """Median host time of out.backward(do) alone (the forward made just before, untimed)."""
    times = []
    for i in range(n + 20):
        out = make()
        t0 = time.perf_counter()
        out.backward(do)
        if i >= 20:
            times.append(time.perf_counter() - t0)
    torch.cuda.synchronize()
    times.sort()
    return times[len(times) // 2] * 1e6


rows += [
    ("_Attention-shaped Function, no kernels", lambda: _Shaped.apply(q, k, v)[0].backward(do)),
    ("identity Function forward + backward", lambda: _Identity.apply(q).backward(do)),
    ("flashc fwd + bwd, autograd on this thread", single_thread(flashc_both)),
    ("SDPA cuDNN fwd + bwd, autograd on this thread", single_thread(sdpa_cudnn)),
]
for name, f in rows:
    print("%-44s median %7.1f us" % (name, median_us(f)))
print("%-44s median %7.1f us" % ("flashc backward only (autograd)", median_backward_us(lambda: ft.attention(q, k, v))))
with torch.nn.attention.sdpa_kernel(torch.nn.attention.SDPBackend.CUDNN_ATTENTION):
    print("%-44s median %7.1f us" % ("SDPA cuDNN backward only (autograd)",
                                     median_backward_us(lambda: F.scaled_dot_product_attention(q, k, v))))
ft._AttentionOutput.backward = staticmethod(timed_backward)
whole = median_us(flashc_both)
backward_times.sort()
print("%-44s median %7.1f us (whole %.1f)" % ("_AttentionOutput.backward body (engine thread)",
                                               backward_times[len(backward_times) // 2] * 1e6, whole))
ft._AttentionOutput.backward = staticmethod(original_backward)

for label, f in (("_attention_forward", rows[4][1]), ("_attention_backward", rows[5][1])):
    prof = cProfile.Profile()
    prof.enable()
    for _ in range(N):
        f()
    prof.disable()
    torch.cuda.synchronize()
    print("\ncProfile of %d x %s (tottime, top 18)" % (N, label))
    pstats.Stats(prof).sort_stats("tottime").print_stats(18)
