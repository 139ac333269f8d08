"""flashc's kernels as registered PyTorch custom ops, so that torch.compile(fullgraph=True) keeps them in its graph.

    torch.ops.flashc.attention_fwd(q, k, v, options: str, key_offset: int?) -> (o, lse)
    torch.ops.flashc.attention_bwd(q, k, v, o, lse, do, options: str, key_offset: int?) -> (dq, dk, dv)
    torch.ops.flashc.ffn_fwd(x, w1, b1?, w2, b2?, w_gate?, options: str, train: bool) -> (y, s0, s1, s2)
    torch.ops.flashc.ffn_bwd(dy, x, w1, b1?, w2, b2?, w_gate?, saved: [Tensor], options: str)
        -> [dx, dw1, (db1), dw2, (db2), (dw_gate)]
    torch.ops.flashc.moe_fwd(x, router, w1, w2, w_up?, options: str, train: bool) -> (y, s0, ..., s11)
    torch.ops.flashc.moe_bwd(dy, x, router, w1, w2, w_up?, saved: [Tensor], options: str)
        -> [dx, drouter, dw1, dw2, (dw_up)]

flashc.torch.attention / ffn call them under torch.compile (and for tensor subclasses); eager calls on plain tensors
take flashc.torch's autograd.Function, which costs less host time. `options` is the repr of the Python options:
attention (causal, scale, window, softcap, enable_gqa, backward_form), FFN (activation,), mixture of experts (top_k,
gating, renormalize, activation).
A string keeps every option a constant of the graph whatever its type (window: None, an int or a pair) and leaves
one place that checks them: flashc.validate, called here with the tensors' shapes, in the real implementations
and in the fake ones (so torch.compile reports a bad argument while tracing, with flashc's message). The
configurations are cached by flashc.torch._signature (a dict lookup per call). ffn_fwd with train=True runs the
training forward: s0, s1 (gated: s0, s1, s2) are the activations the backward reads (FfnConfig.saved_names), the
others empty; train=False (no input wanted a gradient) leaves all three empty and has no backward. ffn_bwd returns
the gradients of the inputs that are present, in that order.

The fake implementations allocate as the real ones do (flashc.torch._empty): o [B, H, Sq, Dv] and lse float32
[B, H, Sq], contiguous; FFN results of a width that is not whole 16-byte rows have padded row strides.
"""

import ast
from typing import List, Optional, Tuple

import torch

from . import torch as ft
from .errors import InvalidArgumentError

Tensor = torch.Tensor

_parsed = {}


def _options(op, text):
    """The options tuple that `text` (its repr) spells; parsed once per string."""
    found = _parsed.get(text)
    if found is None:
        try:
            found = ast.literal_eval(text)
        except (ValueError, SyntaxError):
            found = None
        if not isinstance(found, tuple):
            raise InvalidArgumentError("flashc.%s: the options %s are not Python literals (bool, int, float, str, "
                                       "None, tuples): torch.compile passes them to torch.ops.flashc as a literal"
                                       % (op, text))
        _parsed[text] = found
    return found


def _attention_config(q, k, v, options, has_offset):
    key = ft._signature((q, k, v), ("attention-op", options, has_offset))

    def make():
        causal, scale, window, softcap, enable_gqa, backward_form, mask_mod, score_mod = _options("attention", options)
        return ft.attention_config(
            ft._info("attention", "query", q, (1, 3)), ft._info("attention", "key", k, (1, 3)),
            ft._info("attention", "value", v, (1, 3)), causal=causal, scale=scale, window=window, softcap=softcap,
            enable_gqa=enable_gqa, backward_form=backward_form, key_offset=has_offset, mask_mod=mask_mod,
            score_mod=score_mod)
    return ft._memo_config(key, make)


def _ffn_config(x, w1, b1, w2, b2, w_gate, options):
    key = ft._signature((w1, b1, w2, b2, w_gate), ("ffn-op", options, x.shape[-1] if x.dim() else None, x.dtype,
                                                   x.device))

    def make():
        activation, = _options("ffn", options)
        infos = [None if t is None else ft._info("ffn", name, t, (0, 1))
                 for name, t in (("w1", w1), ("b1", b1), ("w2", w2), ("b2", b2), ("w_gate", w_gate))]
        return ft.ffn_config(ft._info("ffn", "x", x, (-1,)), *infos[:4], activation=activation, w_gate=infos[4])
    return ft._memo_config(key if x.dim() else None, make)


# ------------------------------------------------------------------ attention
@torch.library.custom_op("flashc::attention_fwd", mutates_args=())
def attention_fwd(q: Tensor, k: Tensor, v: Tensor, options: str, key_offset: Optional[int]) -> Tuple[Tensor, Tensor]:
    config = _attention_config(q, k, v, options, key_offset is not None)
    _, _, _, o, lse = ft._attention_forward(config, q, k, v, key_offset)
    return o, lse


@attention_fwd.register_fake
def _attention_fwd_fake(q, k, v, options, key_offset):
    _attention_config(q, k, v, options, key_offset is not None)
    batch, heads, seq_q, _ = q.shape
    return (ft._empty((batch, heads, seq_q, v.shape[3]), q.dtype, q.device),
            ft._empty((batch, heads, seq_q), torch.float32, q.device))


@torch.library.custom_op("flashc::attention_bwd", mutates_args=())
def attention_bwd(q: Tensor, k: Tensor, v: Tensor, o: Tensor, lse: Tensor, do: Tensor, options: str,
                  key_offset: Optional[int]) -> Tuple[Tensor, Tensor, Tensor]:
    config = _attention_config(q, k, v, options, key_offset is not None)
    layout = ft._kernel_layout
    return ft._attention_backward(config, key_offset, layout(q), layout(k), layout(v), layout(o), layout(lse), do)


@attention_bwd.register_fake
def _attention_bwd_fake(q, k, v, o, lse, do, options, key_offset):
    _attention_config(q, k, v, options, key_offset is not None)
    return tuple(ft._empty(t.shape, t.dtype, t.device) for t in (q, k, v))


def _attention_setup(ctx, inputs, output):
    q, k, v, options, key_offset = inputs
    o, lse = output
    ctx.save_for_backward(q, k, v, o, lse)
    ctx.options, ctx.key_offset = options, key_offset
    ctx.mark_non_differentiable(lse)


def _attention_grad(ctx, do, _dlse):
    q, k, v, o, lse = ctx.saved_tensors
    dq, dk, dv = torch.ops.flashc.attention_bwd(q, k, v, o, lse, do, ctx.options, ctx.key_offset)
    return dq, dk, dv, None, None


attention_fwd.register_autograd(_attention_grad, setup_context=_attention_setup)


# ------------------------------------------------------------------------ FFN
_FFN_SAVED_SLOTS = 3  # ffn_fwd's fixed outputs after y: the most saved activations an FFN has (gated)


def _ffn_saved_slots(saved, empty):
    return tuple(saved) + tuple(empty() for _ in range(_FFN_SAVED_SLOTS - len(saved)))


@torch.library.custom_op("flashc::ffn_fwd", mutates_args=())
def ffn_fwd(x: Tensor, w1: Tensor, b1: Optional[Tensor], w2: Tensor, b2: Optional[Tensor], w_gate: Optional[Tensor],
            options: str, train: bool) -> Tuple[Tensor, Tensor, Tensor, Tensor]:
    config = _ffn_config(x, w1, b1, w2, b2, w_gate, options)
    y, _, saved = ft._ffn_forward(config, x, w1, b1, w2, b2, w_gate, train=train)
    return (y,) + _ffn_saved_slots(saved, lambda: x.new_empty(0))


@ffn_fwd.register_fake
def _ffn_fwd_fake(x, w1, b1, w2, b2, w_gate, options, train):
    config = _ffn_config(x, w1, b1, w2, b2, w_gate, options)
    lead = tuple(x.shape[:-1])
    rows = 1
    for n in lead:
        rows = rows * n
    y = ft._empty((rows, config.d_out), x.dtype, x.device, pad_rows=True).reshape(lead + (config.d_out,))
    saved = [ft._empty((rows, config.d_hidden), x.dtype, x.device, pad_rows=True)
             for _ in config.saved_names()] if train else []
    return (y,) + _ffn_saved_slots(saved, lambda: x.new_empty(0))


@torch.library.custom_op("flashc::ffn_bwd", mutates_args=())
def ffn_bwd(dy: Tensor, x: Tensor, w1: Tensor, b1: Optional[Tensor], w2: Tensor, b2: Optional[Tensor],
            w_gate: Optional[Tensor], saved: List[Tensor], options: str) -> List[Tensor]:
    config = _ffn_config(x, w1, b1, w2, b2, w_gate, options)
    layout = ft._kernel_layout
    x2 = layout(x.reshape(-1, config.d_model), pad_rows=True)
    grads = ft._ffn_backward(config, tuple(x.shape[:-1]), x2, layout(w1, pad_rows=True),
                             None if b1 is None else layout(b1), layout(w2, pad_rows=True),
                             None if b2 is None else layout(b2), None if w_gate is None else layout(w_gate, pad_rows=True),
                             tuple(saved[:len(config.saved_names())]), dy)
    return [g for g in grads if g is not None]


@ffn_bwd.register_fake
def _ffn_bwd_fake(dy, x, w1, b1, w2, b2, w_gate, saved, options):
    config = _ffn_config(x, w1, b1, w2, b2, w_gate, options)
    lead = tuple(x.shape[:-1])
    rows = 1
    for n in lead:
        rows = rows * n
    dx = ft._empty((rows, config.d_model), x.dtype, x.device, pad_rows=True).reshape(lead + (config.d_model,))
    grads = [dx] + [ft._empty(t.shape, t.dtype, t.device, pad_rows=t.dim() == 2) for t in (w1, b1, w2, b2, w_gate)
                    if t is not None]
    return grads


def _saving_setup(ctx, inputs, output):
    """setup_context of an op (inputs: tensors..., options, train; output: y, then the saved activations) whose
    backward reads its tensor inputs and what its training forward saved."""
    *tensors, options, train = inputs
    ctx.save_for_backward(*tensors, *output[1:])
    ctx.options, ctx.train = options, train
    ctx.mark_non_differentiable(*output[1:])


def _require_training_forward(ctx, op):
    if not ctx.train:
        raise InvalidArgumentError("flashc.%s: a gradient was asked of a call that ran the inference forward (no "
                                   "input required a gradient when it was called), which saves nothing to "
                                   "differentiate" % op)


def _ffn_grad(ctx, dy, *_saved_grads):
    _require_training_forward(ctx, "ffn")
    x, w1, b1, w2, b2, w_gate, *saved = ctx.saved_tensors
    grads = iter(torch.ops.flashc.ffn_bwd(dy, x, w1, b1, w2, b2, w_gate, saved, ctx.options))
    return tuple(None if t is None else next(grads) for t in (x, w1, b1, w2, b2, w_gate)) + (None, None)


ffn_fwd.register_autograd(_ffn_grad, setup_context=_saving_setup)


# ---------------------------------------------------------- mixture of experts
_MOE_SAVED_SLOTS = 12  # moe_fwd's fixed outputs after y: a gated layer's training forward fills 12, a plain one's 11, the rest empty


def _moe_config(x, router, w1, w2, w_up, options):
    top_k, gating, renormalize, activation = _options("moe", options)
    return ft._moe_memo_config(x, router, w1, w2, w_up, top_k, gating, renormalize, activation)


@torch.library.custom_op("flashc::moe_fwd", mutates_args=())
def moe_fwd(x: Tensor, router: Tensor, w1: Tensor, w2: Tensor, w_up: Optional[Tensor], options: str,
            train: bool) -> Tuple[Tensor, Tensor, Tensor, Tensor, Tensor, Tensor, Tensor, Tensor, Tensor, Tensor,
                                  Tensor, Tensor, Tensor]:
    config = _moe_config(x, router, w1, w2, w_up, options)
    x, router, w1, w2 = (t.contiguous() for t in (x, router, w1, w2))
    w_up = None if w_up is None else w_up.contiguous()
    y, saved = ft._moe_forward(config, x, router, w1, w2, w_up, train)
    return (y,) + tuple(saved) + tuple(x.new_empty(0) for _ in range(_MOE_SAVED_SLOTS - len(saved)))


@moe_fwd.register_fake
def _moe_fwd_fake(x, router, w1, w2, w_up, options, train):
    config = _moe_config(x, router, w1, w2, w_up, options)
    tokens = x.shape[0]
    y = x.new_empty((tokens, config.out_dim))
    saved = [torch.empty(shape, dtype=ft._SAVED_DTYPES.get(dtype, x.dtype), device=x.device)
             for _, shape, dtype in config.saved(tokens)] if train else []
    return (y,) + tuple(saved) + tuple(x.new_empty(0) for _ in range(_MOE_SAVED_SLOTS - len(saved)))


@torch.library.custom_op("flashc::moe_bwd", mutates_args=())
def moe_bwd(dy: Tensor, x: Tensor, router: Tensor, w1: Tensor, w2: Tensor, w_up: Optional[Tensor],
            saved: List[Tensor], options: str) -> List[Tensor]:
    config = _moe_config(x, router, w1, w2, w_up, options)
    x, router, w1, w2 = (t.contiguous() for t in (x, router, w1, w2))  # (the kernels' layout; grads like it)
    w_up = None if w_up is None else w_up.contiguous()
    return ft._moe_backward(config, x, router, w1, w2, w_up, saved[:len(config.saved(x.shape[0]))], dy)


@moe_bwd.register_fake
def _moe_bwd_fake(dy, x, router, w1, w2, w_up, saved, options):
    _moe_config(x, router, w1, w2, w_up, options)
    return [torch.empty(t.shape, dtype=t.dtype, device=t.device) for t in (x, router, w1, w2, w_up) if t is not None]


def _moe_grad(ctx, dy, *_saved_grads):
    _require_training_forward(ctx, "moe")
    x, router, w1, w2, w_up, *saved = ctx.saved_tensors
    grads = torch.ops.flashc.moe_bwd(dy, x, router, w1, w2, w_up, saved, ctx.options)
    return grads[0], grads[1], grads[2], grads[3], grads[4] if w_up is not None else None, None, None


moe_fwd.register_autograd(_moe_grad, setup_context=_saving_setup)

