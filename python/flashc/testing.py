"""Reference math for tests and benchmarks (needs torch): the flash.attention and
flash.ffn definitions written plainly, in any precision (float64 for references,
the inputs' own precision for the 'unfused same-precision' baseline)."""

import math

import torch
import torch.nn.functional as F

from .mask_mod import check_table_extents


def visible_mask(seq_q, seq_k, causal=False, window=None, device=None, key_offset=None):
    """[Sq, Sk] bool: key j visible from query i. Bottom-right aligned: query i sits at key
    position p = i + Sk - Sq (key_offset given: p = i + key_offset); causal: j <= p; window (left, right):
    p - left <= j <= p + right (-1 unbounded)."""
    i = torch.arange(seq_q, device=device, dtype=torch.int64).unsqueeze(1)
    j = torch.arange(seq_k, device=device, dtype=torch.int64).unsqueeze(0)
    p = i + (seq_k - seq_q if key_offset is None else int(key_offset))  # int64: exact for any int32 offset
    visible = torch.ones(seq_q, seq_k, dtype=torch.bool, device=device)
    if causal:
        visible &= j <= p
    if window is not None:
        left, right = window
        if left >= 0:
            visible &= j >= p - left
        if right >= 0:
            visible &= j <= p + right
    return visible


def attention_reference(q, k, v, causal=False, scale=None, window=None, softcap=None, dtype=torch.float64,
                        key_offset=None, mask_mod=None, score_mod=None, first_batch=0, first_head=0):
    """(o, lse) of flash.attention computed in `dtype` (differentiable). q [B,Hq,Sq,D], k/v [B,Hkv,Sk,*].
    key_offset: the key position of query row 0 (None: Sk - Sq, the bottom-right alignment). mask_mod: a mask
    modifier (flashc.mask_mod: a function, an IndexProgram or its text), evaluated on every (batch, head, query, key)
    by the compiler's rules (IndexProgram.evaluate), reading the tensors the trace found as int32. score_mod: a score
    modifier (flashc.score_mod), evaluated in `dtype` on the scaled scores (ScoreProgram.evaluate: its backward is
    torch's autograd, not the compiler's derivative), reading float tensors as float32 and integer ones as int32.
    first_batch, first_head: where q's first batch and head sit in the call's tensors (a slice's reference: the
    modifiers see the call's b and h). A modifier's tensor read at an index itself (ids[q], slopes[h]) must hold that
    index's range, as the kernels check at launch: a shorter one raises InvalidArgumentError here too, where reading
    0 past it would make a reference no kernel agrees with."""
    q, k, v = q.to(dtype), k.to(dtype), v.to(dtype)
    heads, kv_heads = q.shape[1], k.shape[1]
    if heads != kv_heads:
        k = k.repeat_interleave(heads // kv_heads, dim=1)
        v = v.repeat_interleave(heads // kv_heads, dim=1)
    if scale is None:
        scale = 1.0 / math.sqrt(q.shape[-1])
    if causal and window is not None:
        window = (window[0], 0)
    s = torch.matmul(q, k.transpose(-1, -2)) * scale
    if softcap:
        s = softcap * torch.tanh(s / softcap)
    arange = lambda n: torch.arange(n, device=q.device, dtype=torch.int64)
    batch = (arange(q.shape[0]) + first_batch)[:, None, None, None]
    head = (arange(q.shape[1]) + first_head)[None, :, None, None]
    rows = arange(q.shape[2])[None, None, :, None]
    cols = arange(k.shape[2])[None, None, None, :]
    # What the modifiers' tables must hold where they are read at an index itself (the kernels' launch check).
    ranges = {"b": first_batch + q.shape[0], "h": first_head + q.shape[1], "q": q.shape[2], "k": k.shape[2]}
    if score_mod is not None:
        from .score_mod import trace as trace_score
        program = trace_score(score_mod)
        tensors = [t.to(torch.float32) if kind == "f32" else t.to(torch.int32)
                   for t, kind in zip(program.tensors, program.tensor_kinds)]
        check_table_extents("score_mod", program.statements, tensors, ranges)
        s = program.evaluate(s, rows, cols, batch, head, tensors).to(dtype)
    visible = visible_mask(q.shape[2], k.shape[2], causal, window, device=q.device, key_offset=key_offset)
    if mask_mod is not None:
        from .mask_mod import trace
        # The modifier's tensors as the kernels read them: int32.
        program = trace(mask_mod)
        tensors = [t.to(torch.int32) for t in program.tensors]
        check_table_extents("mask_mod", program.statements, tensors, ranges)
        visible = visible & program.evaluate(rows, cols, batch, head, tensors)
    s = s.masked_fill(~visible, -math.inf)
    m = s.amax(dim=-1, keepdim=True) if s.shape[-1] else torch.full(s.shape[:-1] + (1,), -math.inf, dtype=dtype,
                                                                     device=s.device)
    m_safe = torch.where(torch.isinf(m), torch.zeros_like(m), m)
    p = torch.exp(s - m_safe)
    l = p.sum(dim=-1, keepdim=True)
    l_safe = torch.where(l == 0, torch.ones_like(l), l)
    o = torch.matmul(p / l_safe, v)
    lse = (m_safe + torch.log(l)).squeeze(-1)  # log(0) = -inf for rows with no visible key
    return o, lse.float() if dtype != torch.float64 else lse


def activation_fn(name):
    return {"gelu_tanh": lambda t: F.gelu(t, approximate="tanh"), "gelu_erf": F.gelu, "silu": F.silu,
            "relu": F.relu}[name]


def ffn_reference(x, w1, b1=None, w2=None, b2=None, activation="gelu_tanh", w_gate=None, dtype=torch.float64):
    """flash.ffn in `dtype`: act(x w1 + b1) w2 + b2, or gated (act(x w_gate) * (x w1)) w2 + b2."""
    cast = lambda t: None if t is None else t.to(dtype)
    x, w1, b1, w2, b2, w_gate = map(cast, (x, w1, b1, w2, b2, w_gate))
    act = activation_fn(activation)
    if w_gate is not None:
        hidden = act(x @ w_gate) * (x @ w1)
    else:
        hidden = x @ w1
        if b1 is not None:
            hidden = hidden + b1
        hidden = act(hidden)
    y = hidden @ w2
    if b2 is not None:
        y = y + b2
    return y


def max_abs_error(actual, expected):
    """max |actual - expected| in float64 (inf if shapes differ or NaN appears)."""
    if tuple(actual.shape) != tuple(expected.shape):
        return math.inf
    if actual.numel() == 0:
        return 0.0
    a, e = actual.detach().double(), expected.detach().double()
    finite = torch.isfinite(e)
    if not torch.equal(torch.isfinite(a), finite):
        return math.inf
    if bool((a[~finite] != e[~finite]).any()):
        return math.inf
    return float((a[finite] - e[finite]).abs().max()) if bool(finite.any()) else 0.0
