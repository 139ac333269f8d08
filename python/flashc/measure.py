"""GPU timing and float64 checks shared by the benchmarks (bench/) and the tuner (flashc.tune); needs torch and CUDA.

time_ms(fn): CUDA events around each call of fn, the L2 flushed before each (triton.testing.do_bench when Triton is
installed, the same loop in torch otherwise), repeated for `rep` ms after `warmup` ms; the median, every sample and the
outliers (outside the quartiles' 1.5 x IQR fences), so a run disturbed by something else on the GPU shows.
time_ms(fn, lead_us=...) puts a GPU spin between the flush and each call (the torch loop), so that the host has
enqueued the call's launches before the GPU reaches them: a program of short kernels is timed at the GPU's pace, not
at its launch path's ("auto": 1.5x the host's own time for a call, measured first). Opt-in (bench_programmable's
--lead-us auto, used for #16's rows since session 32).

check_attention / check_ffn: a flashc result against float64 math on a few slices, passing when its error is within
2x that of a same-precision peer (PyTorch's SDPA, eager; for attention without a peer, the unfused math in the inputs'
precision) plus a floor.
"""

import collections
import math

Timing = collections.namedtuple("Timing", "median_ms samples_ms outliers")
Timing.__doc__ = "median_ms: the median; samples_ms: every timed call; outliers: the samples outside the fences."


def outliers(samples):
    """The samples outside [Q1 - 1.5 IQR, Q3 + 1.5 IQR] (none with fewer than 4 samples)."""
    if len(samples) < 4:
        return []
    ordered = sorted(samples)
    q1, q3 = _quantile(ordered, 0.25), _quantile(ordered, 0.75)
    low, high = q1 - 1.5 * (q3 - q1), q3 + 1.5 * (q3 - q1)
    return [s for s in samples if s < low or s > high]


def _quantile(ordered, q):
    position = q * (len(ordered) - 1)
    below = int(math.floor(position))
    above = min(below + 1, len(ordered) - 1)
    return ordered[below] + (ordered[above] - ordered[below]) * (position - below)


def median(samples):
    return _quantile(sorted(samples), 0.5)


def time_ms(fn, warmup=25, rep=100, grad_to_none=None, lead_us=0):
    """Timing of fn (milliseconds): CUDA events, L2 flushed before each call, `rep` ms of calls after `warmup` ms.
    lead_us: a GPU spin of that many microseconds (or "auto") before each call's start event (the torch loop)."""
    lead_us = parse_lead_us(lead_us)
    try:
        import triton.testing
    except ImportError:
        triton = None
    samples = None
    if triton is not None and not lead_us:
        try:
            samples = triton.testing.do_bench(fn, warmup=warmup, rep=rep, grad_to_none=grad_to_none,
                                              return_mode="all")
        except (TypeError, AssertionError, ValueError) as e:  # a Triton without return_mode="all"
            if "return_mode" not in str(e) and not isinstance(e, TypeError):
                raise
    if samples is None:
        samples = _time_with_torch(fn, warmup, rep, grad_to_none, lead_us)
    samples = [float(s) for s in samples]
    return Timing(median(samples), samples, outliers(samples))


def parse_lead_us(lead_us):
    """lead_us checked: 0 (none), a positive number of microseconds, or "auto"."""
    if lead_us in (None, 0, "0"):
        return 0
    if lead_us == "auto":
        return "auto"
    try:
        value = float(lead_us)
    except (TypeError, ValueError):
        value = -1.0
    if not (value > 0 and math.isfinite(value)):
        raise ValueError("lead_us must be a positive number of microseconds, 0 or 'auto', got %r" % (lead_us,))
    return value


def host_us(fn, calls=5):
    """The host's time to enqueue one call of fn (microseconds, the fastest of `calls`; the GPU kept busy meanwhile
    so that no launch waits on a full queue)."""
    import time
    import torch
    best = float("inf")
    for _ in range(calls):
        torch.cuda.synchronize()
        torch.cuda._sleep(_spin_cycles(20000.0))  # 20 ms of GPU work ahead: the launches below never wait on it
        t0 = time.perf_counter()
        fn()
        best = min(best, (time.perf_counter() - t0) * 1e6)
    torch.cuda.synchronize()
    return best


_CYCLES_PER_US = None


def _spin_cycles(us):
    """Cycles of torch.cuda._sleep that take about `us` microseconds (its rate measured once with events)."""
    global _CYCLES_PER_US
    import torch
    if _CYCLES_PER_US is None:
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        torch.cuda._sleep(1000000)  # warm
        start.record()
        torch.cuda._sleep(10000000)
        end.record()
        torch.cuda.synchronize()
        _CYCLES_PER_US = 10000000 / max(start.elapsed_time(end) * 1000.0, 1.0)
    return max(1, int(us * _CYCLES_PER_US))


def _time_with_torch(fn, warmup, rep, grad_to_none, lead_us=0):
    """triton.testing.do_bench's loop in torch: a 256 MB write before each call evicts the L2; with lead_us a GPU
    spin after it, before the start event."""
    import torch
    flush = torch.empty(256 * 1024 * 1024 // 4, dtype=torch.int32, device="cuda")
    fn()
    torch.cuda.synchronize()
    spin = 0
    if lead_us:
        spin = _spin_cycles(1.5 * host_us(fn) if lead_us == "auto" else lead_us)
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(5):
        flush.zero_()
        fn()
    end.record()
    torch.cuda.synchronize()
    estimate = max(start.elapsed_time(end) / 5, 1e-3)
    for _ in range(max(1, int(warmup / estimate))):
        fn()
    count = max(1, int(rep / (estimate + (spin / _CYCLES_PER_US / 1000.0 if spin else 0.0))))
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(count)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(count)]
    for i in range(count):
        for t in grad_to_none or ():
            t.grad = None
        flush.zero_()
        if spin:
            torch.cuda._sleep(spin)
        starts[i].record()
        fn()
        ends[i].record()
    torch.cuda.synchronize()
    return [s.elapsed_time(e) for s, e in zip(starts, ends)]


def _compare(results, names, got, peer, refs, where, peer_name):
    """Adds one record per tensor to `results`; True when every error is within the bound."""
    from .testing import max_abs_error
    ok = True
    for name, g, p, r in zip(names, got, peer if peer else [None] * len(names), refs):
        err = max_abs_error(g, r)
        base = max_abs_error(p, r) if p is not None else None
        tol = None if base is None else 2 * base + 1e-4 * max(1.0, float(r.abs().max()))
        passed = tol is not None and err <= tol
        ok = ok and passed
        results["%s%s" % (name, where)] = {"err": err, "peer": peer_name, "peer_err": base, "tol": tol,
                                           "pass": passed}
    return ok


def check_attention(run, q, k, v, do, causal=False, heads=2, peer_run=None, peer_name=None, reference_args=None):
    """(ok, detail): run(q, k, v, do) -> [o, dq, dk, dv] (flashc's) against float64 math on `heads` (b, h) slices
    (the first and the last), with peer_run's (same signature, same precision) error as the bound's base; without a
    peer, the same math unfused in the inputs' precision on each slice (peer "unfused <dtype>"). reference_args:
    flashc.testing.attention_reference's scale / window / softcap / modifiers (which see each slice's own batch and
    head). With grouped heads (GQA) only o and dq are compared: dk and dv sum over a group, the slice's reference over
    one head."""
    import torch
    from .testing import attention_reference
    got = run(q, k, v, do)
    peer = peer_run(q, k, v, do) if peer_run else None
    batch, heads_q = q.shape[0], q.shape[1]
    group = heads_q // k.shape[1]
    names = ["o", "dq", "dk", "dv"] if group == 1 else ["o", "dq"]
    slices = [(0, 0), (batch - 1, heads_q - 1)][:heads]
    results, ok = {}, True
    for b, h in slices:
        kv = h // group
        ref_in = [t[b:b + 1, i:i + 1].double().requires_grad_() for t, i in ((q, h), (k, kv), (v, kv))]
        o_ref, _ = attention_reference(*ref_in, causal=causal, first_batch=b, first_head=h, **(reference_args or {}))
        grads = torch.autograd.grad(o_ref, ref_in, do[b:b + 1, h:h + 1].double())
        refs = ([o_ref.detach()] + list(grads))[:len(names)]
        del o_ref, grads
        pick = lambda ts: [t[b:b + 1, h:h + 1] for t in ts[:len(names)]]
        if peer is not None:
            base, base_name = pick(peer), peer_name
        else:  # the slice's unfused math in the inputs' precision (the error a plain implementation makes)
            slice_in = [t[b:b + 1, i:i + 1].detach().requires_grad_() for t, i in ((q, h), (k, kv), (v, kv))]
            o_unfused, _ = attention_reference(*slice_in, causal=causal, dtype=q.dtype, first_batch=b, first_head=h,
                                               **(reference_args or {}))
            base = ([o_unfused.detach()] + list(torch.autograd.grad(o_unfused, slice_in, do[b:b + 1, h:h + 1])))
            base, base_name = base[:len(names)], "unfused %s" % str(q.dtype).replace("torch.", "")
        ok = _compare(results, names, pick(got), base, refs, "[b=%d,h=%d]" % (b, h), base_name) and ok
        del refs, ref_in
        torch.cuda.empty_cache()
    return ok, results


def check_ffn(run, eager_run, x, w1, w2, w_gate=None, activation="gelu_tanh", dy=None, rows=256, b1=None, b2=None):
    """(ok, detail): run(x, w1, w2, dy) -> [y] or, with dy, [y, dx, dw1, dw2(, dw_gate)] (flashc's) against float64
    math on the first `rows` rows of x (the weight gradients of those rows alone), with eager_run's (same signature,
    the inputs' precision) error as the bound's base. b1, b2: the biases both take (their gradients not compared)."""
    import torch
    from .testing import ffn_reference
    x = x[:min(x.shape[0], rows)].detach()
    dy = None if dy is None else dy[:x.shape[0]]
    names = ["y"] + (["dx", "dw1", "dw2"] + (["dw_gate"] if w_gate is not None else []) if dy is not None else [])
    got = run(x, w1, w2, dy)
    peer = eager_run(x, w1, w2, dy)
    leaves = [t.detach().double().requires_grad_() for t in (x, w1, w2) + ((w_gate,) if w_gate is not None else ())]
    y_ref = ffn_reference(leaves[0], leaves[1], b1, leaves[2], b2, activation=activation,
                          w_gate=leaves[3] if w_gate is not None else None)
    refs = [y_ref.detach()]
    if dy is not None:
        refs += list(torch.autograd.grad(y_ref, leaves, dy.double()))
    results = {}
    ok = _compare(results, names, got, peer, refs, "", "eager")
    return ok, results
