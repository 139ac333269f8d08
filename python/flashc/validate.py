"""Argument checks for flashc.torch, written without torch so they are tested
everywhere. A tensor is described by TensorInfo(shape, dtype, device) with
torch's spellings ('torch.bfloat16', 'cuda:0'); the checks return the op's
configuration or raise InvalidArgumentError with a PyTorch-style message."""

import collections
import operator

from .errors import InvalidArgumentError
from .spec import ACTIVATIONS, AttentionConfig, FfnConfig

TensorInfo = collections.namedtuple("TensorInfo", "shape dtype device")

SUPPORTED_DTYPES = {"torch.bfloat16": "bf16", "torch.float16": "f16"}


def _fail(op, message):
    raise InvalidArgumentError("flashc.%s: %s" % (op, message))


def _shape(t):
    return "(" + ", ".join(str(d) for d in t.shape) + ("," if len(t.shape) == 1 else "") + ")"


def _common_dtype_device(op, named):
    """All tensors share one supported dtype and one CUDA device; returns the flashc dtype name."""
    names = [n for n, _ in named]
    dtypes = [str(t.dtype) for _, t in named]
    if len(set(dtypes)) > 1:
        _fail(op, "expected %s to have the same dtype, but got %s instead" % (
            _join(names), _join(["%s.dtype: %s" % (n, d) for n, d in zip(names, dtypes)])))
    devices = [str(t.device) for _, t in named]
    if len(set(devices)) > 1:
        _fail(op, "expected %s to be on the same device, but got %s instead" % (
            _join(names), _join(["%s.device: %s" % (n, d) for n, d in zip(names, devices)])))
    if not devices[0].startswith("cuda"):
        _fail(op, "expected CUDA tensors, but got %s on device %s" % (_join(names), devices[0]))
    if dtypes[0] not in SUPPORTED_DTYPES:
        _fail(op, "expected %s of dtype torch.bfloat16 or torch.float16, but got %s" % (_join(names), dtypes[0]))
    return SUPPORTED_DTYPES[dtypes[0]]


def _join(items):
    items = list(items)
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


INT32_MIN, INT32_MAX = -2 ** 31, 2 ** 31 - 1


def key_offset_value(op, value):
    """A run-time key offset (the key position of query row 0) as a Python int: an integer (not a bool) within
    int32, the kernels' parameter type. None stays None (the bottom-right alignment, Sk - Sq)."""
    if value is None:
        return None
    if isinstance(value, int) and not isinstance(value, bool):
        as_int = value  # (not operator.index: under torch.compile a symbolic int would be specialised to its value)
    else:
        try:
            if isinstance(value, bool) or isinstance(value, float):
                raise TypeError
            as_int = operator.index(value)
        except TypeError:
            _fail(op, "key_offset must be an integer (the key position of query row 0) or None, but got %s"
                  % type(value).__name__)
    if not INT32_MIN <= as_int <= INT32_MAX:
        _fail(op, "key_offset must fit in int32 [%d, %d], but got %d" % (INT32_MIN, INT32_MAX, as_int))
    return as_int


def attention_config(q, k, v, causal=False, scale=None, window=None, softcap=None, enable_gqa=False,
                     backward_form="auto", key_offset=False, mask_mod=None, score_mod=None):
    """Check q [B,Hq,Sq,D], k [B,Hkv,Sk,D], v [B,Hkv,Sk,Dv] and return their AttentionConfig (key_offset: the
    configuration that takes a run-time key offset; its value is checked by key_offset_value)."""
    op = "attention"
    for name, t in (("query", q), ("key", k), ("value", v)):
        if len(t.shape) != 4:
            _fail(op, "expected %s to be a 4-D tensor [B, H, S, D], but got a %d-D tensor of shape %s"
                  % (name, len(t.shape), _shape(t)))
    bq, hq, sq, d = q.shape
    bk, hkv, sk, dk = k.shape
    bv, hv, sv, dv = v.shape
    if not (bq == bk == bv):
        _fail(op, "expected query, key and value to have the same batch size, but got query.size(0): %d, "
              "key.size(0): %d and value.size(0): %d instead" % (bq, bk, bv))
    if (hkv, sk) != (hv, sv):
        _fail(op, "expected key and value to have the same number of heads and sequence length, but got key "
              "shape %s and value shape %s" % (_shape(k), _shape(v)))
    if d != dk:
        _fail(op, "expected query and key to have the same head dimension, but got query.size(-1): %d and "
              "key.size(-1): %d instead" % (d, dk))
    if min(hq, hkv, d, dv) < 1:
        _fail(op, "heads and head dimensions must be positive, but got query shape %s, key shape %s and value "
              "shape %s" % (_shape(q), _shape(k), _shape(v)))
    if hq != hkv:
        if not enable_gqa:
            _fail(op, "query has %d heads but key and value have %d; pass enable_gqa=True for grouped-query "
                  "attention" % (hq, hkv))
        if hq % hkv:
            _fail(op, "number of heads in query (%d) must be divisible by the number of heads in key and value "
                  "(%d) when enable_gqa=True" % (hq, hkv))
    dtype = _common_dtype_device(op, (("query", q), ("key", k), ("value", v)))
    if softcap is not None and not isinstance(softcap, (int, float)):
        _fail(op, "softcap must be a number or None, got %s" % type(softcap).__name__)
    if scale is not None and (isinstance(scale, bool) or not isinstance(scale, (int, float))):
        _fail(op, "scale must be a number or None, got %s" % type(scale).__name__)
    try:
        return AttentionConfig(dtype=dtype, num_heads=hq, num_kv_heads=hkv, head_dim=d, value_head_dim=dv,
                               causal=bool(causal), window=window, softcap=softcap, scale=scale,
                               backward_form=backward_form, key_offset=bool(key_offset), mask_mod=mask_mod,
                               score_mod=score_mod)
    except InvalidArgumentError as e:
        _fail(op, str(e))


def ffn_config(x, w1, b1=None, w2=None, b2=None, activation="gelu_tanh", w_gate=None):
    """Check x [..., d], w1 [d, h] (the up projection when w_gate [d, h] is given), b1 [h], w2 [h, d_out],
    b2 [d_out], and return their FfnConfig."""
    op = "ffn"
    if activation not in ACTIVATIONS:
        _fail(op, "activation must be one of %s, but got %r" % (", ".join(repr(a) for a in ACTIVATIONS), activation))
    if w2 is None:
        _fail(op, "w2 is required")
    if len(x.shape) < 1:
        _fail(op, "expected x to have at least 1 dimension [..., d], but got a 0-D tensor")
    for name, t in (("w1", w1), ("w2", w2)) + ((("w_gate", w_gate),) if w_gate is not None else ()):
        if len(t.shape) != 2:
            _fail(op, "expected %s to be a 2-D tensor, but got a %d-D tensor of shape %s" % (name, len(t.shape), _shape(t)))
    for name, t in (("b1", b1), ("b2", b2)):
        if t is not None and len(t.shape) != 1:
            _fail(op, "expected %s to be a 1-D tensor, but got a %d-D tensor of shape %s" % (name, len(t.shape), _shape(t)))
    if w_gate is not None and b1 is not None:
        _fail(op, "a gated FFN (w_gate given) takes no b1")
    named = [("x", x), ("w1", w1)] + ([("w_gate", w_gate)] if w_gate is not None else []) + \
            ([("b1", b1)] if b1 is not None else []) + [("w2", w2)] + ([("b2", b2)] if b2 is not None else [])
    d = x.shape[-1]
    if w1.shape[0] != d:
        _fail(op, "x.size(-1) (%d) must match w1.size(0) (%d): w1 is [d, h] (x @ w1)" % (d, w1.shape[0]))
    h = w1.shape[1]
    if w_gate is not None and tuple(w_gate.shape) != tuple(w1.shape):
        _fail(op, "expected w_gate to have the shape of w1 %s, but got %s" % (_shape(w1), _shape(w_gate)))
    if b1 is not None and b1.shape[0] != h:
        _fail(op, "expected b1 of shape (%d,) to match w1.size(1), but got %s" % (h, _shape(b1)))
    if w2.shape[0] != h:
        _fail(op, "w2.size(0) (%d) must match the hidden size w1.size(1) (%d): w2 is [h, d_out]" % (w2.shape[0], h))
    d_out = w2.shape[1]
    if b2 is not None and b2.shape[0] != d_out:
        _fail(op, "expected b2 of shape (%d,) to match w2.size(1), but got %s" % (d_out, _shape(b2)))
    if min(d, h, d_out) < 1:
        _fail(op, "d, h and d_out must be positive, got %d, %d and %d" % (d, h, d_out))
    dtype = _common_dtype_device(op, named)
    return FfnConfig(dtype=dtype, d_model=d, d_hidden=h, d_out=d_out, activation=activation,
                     has_b1=b1 is not None, has_b2=b2 is not None, gated=w_gate is not None)
