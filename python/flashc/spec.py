"""Configurations of the fused ops flashc.torch launches, the flash-dialect
spec text compiled for each, and a deterministic cache key naming its bundle.

Batch and sequence lengths are dynamic in every spec, so one bundle serves all
of them; everything else (heads, head dims, dtype, mask, softcap, scale, FFN
sizes and activation) is part of the configuration and of the key.
"""

import hashlib
import math
import struct
from dataclasses import dataclass, field
from functools import cached_property
from typing import Optional, Tuple

from .errors import InvalidArgumentError

# Bump when the spec text or key scheme changes meaning, so old cache entries
# are never picked up for a new meaning.
KEY_VERSION = 3  # 2: the default backward form became "auto" (compiler-chosen); 3: FFN training forward
DEFAULT_ARCHS = ("sm_90a",)

# Names of the programs and parameters the compiler gives a spec with one
# flash.attention / flash.ffn op (op index 0).
ATTENTION_FORWARD = "attention0_forward"
ATTENTION_BACKWARD = "attention0_backward"
FFN_FORWARD = "ffn0_forward"
FFN_FORWARD_TRAIN = "ffn0_forward_train"
FFN_BACKWARD = "ffn0_backward"

DTYPES = ("bf16", "f16")
BACKWARD_FORMS = ("auto", "rows", "transposed")
ACTIVATIONS = ("gelu_tanh", "gelu_erf", "silu", "relu")


def f32(value, what="a value"):
    """value rounded to the nearest float32 (as a Python float); a finite value past float32's range is refused
    (`what` names it in the error)."""
    try:
        return struct.unpack("<f", struct.pack("<f", float(value)))[0]
    except OverflowError:
        raise InvalidArgumentError("%s of %r is beyond float32's range (magnitudes up to 3.4028235e+38)"
                                   % (what, value)) from None


def format_f32(value):
    """Shortest decimal that reads back as the same float32, always with a '.' or an exponent."""
    v = f32(value)
    for digits in range(6, 10):
        text = "%.*g" % (digits, v)
        if f32(float(text)) == v:
            break
    if "." not in text and "e" not in text and "inf" not in text and "nan" not in text:
        text += ".0"
    return text


def _tensor_type(dims, dtype):
    return "tensor<%sx%s>" % ("x".join(str(d) for d in dims), dtype)


def _short_hash(*parts):
    h = hashlib.sha256()
    for p in parts:
        h.update(p.encode())
        h.update(b"\0")
    return h.hexdigest()[:12]


def _check_int(name, value, minimum):
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise InvalidArgumentError("%s must be an integer >= %d, got %r" % (name, minimum, value))


@dataclass(frozen=True)
class AttentionConfig:
    """One flash.attention configuration (q [B,Hq,Sq,D], k [B,Hkv,Sk,D], v [B,Hkv,Sk,Dv]).

    window: None, or (left, right) keys visible on each side of a query's diagonal
    (bottom-right aligned; -1 = unbounded on that side). With causal=True the right side is 0.
    scale None means 1/sqrt(D). softcap 0/None means none.
    backward_form: "auto" (the compiler picks the faster backward kernels for the target), "rows" or
    "transposed" (the Sᵀ form) — flashc --backward-form; a compiler choice, so part of the key but
    not of the spec. (The plans of the kernels come from the compiler's tuning table: python -m flashc.tune.)
    key_offset: the spec takes a run-time i32 `key_offset` (the last function argument, the programs' last
    parameter) that replaces Sk - Sq as the key position of query row 0 (query i sits at i + key_offset; any int32;
    flashc.ring's blocks and flashc.torch.attention(key_offset=...)); one bundle serves every offset.
    mask_mod: None, or a mask modifier (flashc.mask_mod: a traced function, an IndexProgram or its text form; kept
    as the text) hiding more keys: key k is visible from query row q when the mask above and the modifier both allow
    it (row indices, as FlexAttention's q_idx and kv_idx; not with key_offset).
    score_mod: None, or a score modifier (flashc.score_mod: a traced function, a ScoreProgram or its text form; kept
    as the text) rewriting each score scale · q·k before the mask and the softmax (not with softcap or key_offset).
    """
    dtype: str
    num_heads: int
    num_kv_heads: int
    head_dim: int
    value_head_dim: Optional[int] = None
    causal: bool = False
    window: Optional[Tuple[int, int]] = None
    softcap: Optional[float] = None
    scale: Optional[float] = None
    archs: Tuple[str, ...] = field(default=DEFAULT_ARCHS)
    backward_form: str = "auto"
    key_offset: bool = False
    mask_mod: Optional[str] = None
    score_mod: Optional[str] = None

    def __post_init__(self):
        if self.score_mod is not None:
            from .score_mod import trace as trace_score
            object.__setattr__(self, "score_mod", trace_score(self.score_mod).text)
            if self.key_offset:
                raise InvalidArgumentError("score_mod is not combined with key_offset (the modifier sees row "
                                           "indices, not key positions)")
            if self.softcap:
                raise InvalidArgumentError("score_mod is not combined with softcap (write the cap in the modifier: "
                                           "cap * torch.tanh(score / cap))")
        if self.mask_mod is not None:
            from .mask_mod import trace
            object.__setattr__(self, "mask_mod", trace(self.mask_mod).text)
            if self.key_offset:
                raise InvalidArgumentError("mask_mod is not combined with key_offset (the modifier sees row indices, "
                                           "not key positions)")
        if not isinstance(self.key_offset, bool):
            raise InvalidArgumentError("key_offset must be True or False (whether the spec takes a run-time key "
                                       "offset), got %r" % (self.key_offset,))
        if self.backward_form not in BACKWARD_FORMS:
            raise InvalidArgumentError("backward_form must be one of %s, got %r" % (
                ", ".join(BACKWARD_FORMS), self.backward_form))
        if self.dtype not in DTYPES:
            raise InvalidArgumentError("attention dtype must be one of %s, got %r" % (", ".join(DTYPES), self.dtype))
        _check_int("num_heads", self.num_heads, 1)
        _check_int("num_kv_heads", self.num_kv_heads, 1)
        _check_int("head_dim", self.head_dim, 1)
        if self.num_heads % self.num_kv_heads:
            raise InvalidArgumentError("number of query heads (%d) must be a multiple of the number of key/value "
                                       "heads (%d)" % (self.num_heads, self.num_kv_heads))
        dv = self.head_dim if self.value_head_dim is None else self.value_head_dim
        _check_int("value_head_dim", dv, 1)
        object.__setattr__(self, "value_head_dim", dv)
        object.__setattr__(self, "causal", bool(self.causal))
        window = self.window
        if window is not None:
            if isinstance(window, int) and not isinstance(window, bool):
                window = (window, 0 if self.causal else window)
            if (not isinstance(window, (tuple, list)) or len(window) != 2
                    or not all(isinstance(w, int) and not isinstance(w, bool) and w >= -1 for w in window)):
                raise InvalidArgumentError("window must be None, an int or a (left, right) pair of ints >= -1 "
                                           "(-1 = unbounded), got %r" % (self.window,))
            left, right = window
            if self.causal:
                if right not in (0, -1):
                    raise InvalidArgumentError("causal=True allows no keys right of the diagonal, but window=%r "
                                               "has right=%d" % (self.window, right))
                right = 0
            window = (left, right)
            # Unbounded windows are plain masks.
            if window == (-1, -1) or (self.causal and left == -1):
                window = None
        object.__setattr__(self, "window", window)
        softcap = float(self.softcap or 0.0)
        if not math.isfinite(softcap) or softcap < 0:
            raise InvalidArgumentError("softcap must be a finite number >= 0 (0 or None: none), got %r" % self.softcap)
        object.__setattr__(self, "softcap", f32(softcap, "softcap"))
        scale = 1.0 / math.sqrt(self.head_dim) if self.scale is None else float(self.scale)
        if not math.isfinite(scale):
            raise InvalidArgumentError("scale must be finite, got %r" % self.scale)
        object.__setattr__(self, "scale", f32(scale, "scale"))
        object.__setattr__(self, "archs", tuple(self.archs))

    @property
    def mask_attr(self):
        if self.window is not None:
            return "#flash.mask<sliding_window, left = %d, right = %d>" % self.window
        return "#flash.mask<causal>" if self.causal else "#flash.mask<none>"

    @property
    def mask_tag(self):
        if self.window is not None:
            tag = "win%s_%s" % tuple("inf" if w < 0 else str(w) for w in self.window)
        else:
            tag = "causal" if self.causal else "full"
        if self.mask_mod is not None:
            tag += "_mod" + _short_hash(self.mask_mod)[:8]
        if self.score_mod is not None:
            tag += "_score" + _short_hash(self.score_mod)[:8]
        return tag + "_koff" if self.key_offset else tag

    def spec_text(self):
        t, hq, hkv, d, dv = self.dtype, self.num_heads, self.num_kv_heads, self.head_dim, self.value_head_dim
        q_t = _tensor_type(["?", hq, "?", d], t)
        k_t = _tensor_type(["?", hkv, "?", d], t)
        v_t = _tensor_type(["?", hkv, "?", dv], t)
        o_t = _tensor_type(["?", hq, "?", dv], t)
        lse_t = _tensor_type(["?", hq, "?"], "f32")
        softcap = " softcap = %s" % format_f32(self.softcap) if self.softcap else ""
        # The run-time key offset: an i32 argument after the tensors, its operand right after %v.
        offset_arg = ", %key_offset: i32" if self.key_offset else ""
        offset_operand = " key_offset = %key_offset" if self.key_offset else ""
        offset_type = ", i32" if self.key_offset else ""
        mask_mod = ""
        if self.mask_mod is not None:
            from .mask_mod import IndexProgram, tensor_type
            program = IndexProgram.parse(self.mask_mod)
            # The tensors the modifier reads: arguments after v (mask_t0, ...), the op's mask_mod operands.
            types = [tensor_type(r) for r in program.tensor_ranks]
            names = ["%%%s" % n for n in self.mask_tensor_names()]
            offset_arg = "".join(", %s: %s" % (n, t) for n, t in zip(names, types)) + offset_arg
            offset_type = "".join(", " + t for t in types) + offset_type
            operands = "(%s)" % ", ".join(names) if names else ""
            mask_mod = " mask_mod%s {\n  // %s\n  %s\n  }" % (operands, self.mask_mod, program.region_text())
        if self.score_mod is not None:
            from .score_mod import ScoreProgram
            program = ScoreProgram.parse(self.score_mod)
            # Its tensors: arguments after the mask modifier's (score_t0, ...), the op's score_mod operands.
            types = program.tensor_types()
            names = ["%%%s" % n for n in self.score_tensor_names()]
            score_args = "".join(", %s: %s" % (n, t) for n, t in zip(names, types))
            score_types = "".join(", " + t for t in types)
            # (after the mask modifier's tensors, before the key offset)
            if self.key_offset:
                offset_arg = offset_arg[:-len(", %key_offset: i32")] + score_args + ", %key_offset: i32"
                offset_type = offset_type[:-len(", i32")] + score_types + ", i32"
            else:
                offset_arg += score_args
                offset_type += score_types
            operands = "(%s)" % ", ".join(names) if names else ""
            mask_mod += " score_mod%s {\n  // %s\n  %s\n  }" % (operands, self.score_mod, program.region_text())
        return (
            "// Generated by flashc.spec for flashc.torch.attention: %s\n"
            "func.func @attention(%%q: %s, %%k: %s, %%v: %s%s) -> (%s, %s) {\n"
            "  %%o, %%lse = flash.attention %%q, %%k, %%v%s scale = %s mask = %s%s num_kv_heads = %d%s"
            " : (%s, %s, %s%s) -> (%s, %s)\n"
            "  return %%o, %%lse : %s, %s\n"
            "}\n" % (self.describe(), q_t, k_t, v_t, offset_arg, o_t, lse_t, offset_operand, format_f32(self.scale),
                     self.mask_attr, softcap, hkv, mask_mod, q_t, k_t, v_t, offset_type, o_t, lse_t, o_t, lse_t))

    def mask_tensor_names(self):
        """The programs' parameters of the tensors the mask modifier reads: mask_t0, mask_t1, ..."""
        if self.mask_mod is None:
            return ()
        from .mask_mod import IndexProgram
        return tuple("mask_t%d" % i for i in range(len(IndexProgram.parse(self.mask_mod).tensor_ranks)))

    def score_tensor_names(self):
        """The programs' parameters of the tensors the score modifier reads: score_t0, score_t1, ..."""
        if self.score_mod is None:
            return ()
        from .score_mod import ScoreProgram
        return tuple("score_t%d" % i for i in range(len(ScoreProgram.parse(self.score_mod).tensor_ranks)))

    def modifier_tensor_names(self):
        """The mask modifier's tensors' parameters, then the score modifier's (the programs' order)."""
        return self.mask_tensor_names() + self.score_tensor_names()

    def describe(self):
        parts = ["%s" % self.dtype, "Hq=%d" % self.num_heads, "Hkv=%d" % self.num_kv_heads, "D=%d" % self.head_dim]
        if self.value_head_dim != self.head_dim:
            parts.append("Dv=%d" % self.value_head_dim)
        parts.append(self.mask_tag)
        if self.softcap:
            parts.append("softcap=%s" % format_f32(self.softcap))
        parts.append("scale=%s" % format_f32(self.scale))
        if self.backward_form != "auto":
            parts.append("backward=%s" % self.backward_form)
        return " ".join(parts)

    @property
    def compiler_flags(self):
        """flashc options this configuration is compiled with (besides --arch)."""
        return () if self.backward_form == "auto" else ("--backward-form=" + self.backward_form,)

    @cached_property
    def key(self):  # cached: a spec text and a hash, asked for on every launch
        dv = "" if self.value_head_dim == self.head_dim else "v%d" % self.value_head_dim
        cap = "_cap%s" % format_f32(self.softcap) if self.softcap else ""
        form = "" if self.backward_form == "auto" else "_bwd" + self.backward_form
        return "attn_%s_h%dkv%d_d%d%s_%s%s%s_%s" % (
            self.dtype, self.num_heads, self.num_kv_heads, self.head_dim, dv, self.mask_tag, cap, form,
            _short_hash("v%d" % KEY_VERSION, ",".join(self.archs), self.spec_text(), *self.compiler_flags))

    forward_program = ATTENTION_FORWARD
    backward_program = ATTENTION_BACKWARD

    def input_names(self):
        return ("q", "k", "v") + self.modifier_tensor_names() + (("key_offset",) if self.key_offset else ())

    def output_names(self):
        return ("o", "lse")

    def _scalars(self):
        return ("key_offset",) if self.key_offset else ()

    def forward_params(self):
        return ("q", "k", "v") + self.modifier_tensor_names() + ("o", "lse") + self._scalars()

    def backward_params(self):
        return ("q", "k", "v") + self.modifier_tensor_names() + ("o", "lse", "do", "dq", "dk", "dv") + self._scalars()


@dataclass(frozen=True)
class FfnConfig:
    """One flash.ffn configuration: y = act(x·w1 + b1)·w2 + b2 with x [M, d], w1 [d, h], w2 [h, d_out];
    gated: y = (act(x·w_gate) ⊙ (x·w_up))·w2 + b2 (no b1)."""
    dtype: str
    d_model: int
    d_hidden: int
    d_out: Optional[int] = None
    activation: str = "gelu_tanh"
    has_b1: bool = False
    has_b2: bool = False
    gated: bool = False
    archs: Tuple[str, ...] = field(default=DEFAULT_ARCHS)

    def __post_init__(self):
        if self.dtype not in DTYPES:
            raise InvalidArgumentError("ffn dtype must be one of %s, got %r" % (", ".join(DTYPES), self.dtype))
        if self.activation not in ACTIVATIONS:
            raise InvalidArgumentError("activation must be one of %s, got %r" % (", ".join(ACTIVATIONS), self.activation))
        _check_int("d_model", self.d_model, 1)
        _check_int("d_hidden", self.d_hidden, 1)
        d_out = self.d_model if self.d_out is None else self.d_out
        _check_int("d_out", d_out, 1)
        object.__setattr__(self, "d_out", d_out)
        for name in ("has_b1", "has_b2", "gated"):
            object.__setattr__(self, name, bool(getattr(self, name)))
        if self.gated and self.has_b1:
            raise InvalidArgumentError("a gated FFN takes no b1 (y = (act(x·w_gate) * (x·w_up))·w2 + b2)")
        object.__setattr__(self, "archs", tuple(self.archs))

    @property
    def compiler_flags(self):
        """flashc options this configuration is compiled with (besides --arch)."""
        return ()

    def input_names(self):
        if self.gated:
            names = ["x", "w_gate", "w_up", "w2"]
        else:
            names = ["x", "w1"] + (["b1"] if self.has_b1 else []) + ["w2"]
        return tuple(names + (["b2"] if self.has_b2 else []))

    def _types(self):
        t, d, h, o = self.dtype, self.d_model, self.d_hidden, self.d_out
        return {"x": _tensor_type(["?", d], t), "w1": _tensor_type([d, h], t), "w_gate": _tensor_type([d, h], t),
                "w_up": _tensor_type([d, h], t), "b1": _tensor_type([h], t), "w2": _tensor_type([h, o], t),
                "b2": _tensor_type([o], t), "y": _tensor_type(["?", o], t)}

    def spec_text(self):
        types = self._types()
        names = self.input_names()
        if self.gated:
            operands = "%x, %w_gate up %w_up, %w2"
        else:
            operands = "%x, %w1" + (" bias %b1" if self.has_b1 else "") + ", %w2"
        if self.has_b2:
            operands += " bias %b2"
        arg_list = ", ".join("%%%s: %s" % (n, types[n]) for n in names)
        in_types = ", ".join(types[n] for n in names)
        return ("// Generated by flashc.spec for flashc.torch.ffn: %s\n"
                "func.func @ffn(%s) -> %s {\n"
                "  %%y = flash.ffn %s %s : (%s) -> %s\n"
                "  return %%y : %s\n"
                "}\n" % (self.describe(), arg_list, types["y"], self.activation, operands, in_types, types["y"],
                         types["y"]))

    def describe(self):
        parts = [self.dtype, "d=%d" % self.d_model, "h=%d" % self.d_hidden]
        if self.d_out != self.d_model:
            parts.append("d_out=%d" % self.d_out)
        parts.append(self.activation + (" gated" if self.gated else ""))
        parts.append("bias=" + ("b1" if self.has_b1 else "") + ("b2" if self.has_b2 else "") if (self.has_b1 or self.has_b2)
                     else "no-bias")
        return " ".join(parts)

    @cached_property
    def key(self):  # cached: a spec text and a hash, asked for on every launch
        out = "" if self.d_out == self.d_model else "o%d" % self.d_out
        bias = ("b1" if self.has_b1 else "") + ("b2" if self.has_b2 else "")
        return "ffn_%s_d%dh%d%s_%s%s%s_%s" % (
            self.dtype, self.d_model, self.d_hidden, out, self.activation, "_gated" if self.gated else "",
            "_" + bias if bias else "",
            _short_hash("v%d" % KEY_VERSION, ",".join(self.archs), self.spec_text(), *self.compiler_flags))

    forward_program = FFN_FORWARD
    forward_train_program = FFN_FORWARD_TRAIN
    backward_program = FFN_BACKWARD

    def output_names(self):
        return ("y",)

    def saved_names(self):
        """What the training forward saves for the backward, [M, h] each: pre = x·w1 + b1 and h = act(pre); gated
        gate = x·w_gate, up = x·w_up and h = act(gate) * up."""
        return ("gate", "up", "h") if self.gated else ("pre", "h")

    def forward_params(self):
        return self.input_names() + ("y",)

    def forward_train_params(self):
        return self.forward_params() + self.saved_names()

    def backward_params(self):
        grads = ["dx"]
        if self.gated:
            grads += ["dw_gate", "dw_up"]
        else:
            grads += ["dw1"] + (["db1"] if self.has_b1 else [])
        grads += ["dw2"] + (["db2"] if self.has_b2 else [])
        return self.input_names() + self.saved_names() + ("dy",) + tuple(grads)


@dataclass(frozen=True)
class DecodeConfig:
    """One flash.decode_attention configuration: `queries` new tokens a sequence (q [B, Hq, T, D]) against a KV
    cache, contiguous (page_size 0: k [B, Hkv, S, D]) or paged (k [pages, page_size, Hkv, D] with a block table).
    Inference only (no backward), sm_90a only (the kernels load the cache by TMA). scale None means 1/sqrt(D).
    append: the program first writes the new tokens' K/V (k_new / v_new [B, Hkv, T, D]) into the cache in place
    (flash.kv_append), then attends over it."""
    dtype: str
    num_heads: int
    num_kv_heads: int
    head_dim: int
    value_head_dim: Optional[int] = None
    queries: int = 1
    page_size: int = 0
    causal: bool = True
    scale: Optional[float] = None
    archs: Tuple[str, ...] = field(default=("sm_90a",))
    append: bool = False

    def __post_init__(self):
        if self.dtype not in DTYPES:
            raise InvalidArgumentError("decode dtype must be one of %s, got %r" % (", ".join(DTYPES), self.dtype))
        _check_int("queries", self.queries, 1)
        _check_int("page_size", self.page_size, 0)
        object.__setattr__(self, "value_head_dim", _check_heads_and_dims("decode", self, 64))
        if self.queries > 16:
            raise InvalidArgumentError("decode takes 1 to 16 new tokens a sequence, got %d" % self.queries)
        _check_page_size(self.page_size)
        if tuple(self.archs) != ("sm_90a",):
            raise InvalidArgumentError("decode runs on sm_90a only (TMA loads of the cache), got archs %r" % (
                self.archs,))
        object.__setattr__(self, "causal", bool(self.causal))
        object.__setattr__(self, "append", bool(self.append))
        scale = 1.0 / math.sqrt(self.head_dim) if self.scale is None else float(self.scale)
        if not math.isfinite(scale) or scale <= 0:
            raise InvalidArgumentError("scale must be finite and positive, got %r" % self.scale)
        object.__setattr__(self, "scale", f32(scale, "scale"))
        object.__setattr__(self, "archs", tuple(self.archs))

    def spec_text(self):
        t, hq, hkv, d, dv, tq = (self.dtype, self.num_heads, self.num_kv_heads, self.head_dim, self.value_head_dim,
                                 self.queries)
        q_t = _tensor_type(["?", hq, tq, d], t)
        o_t = _tensor_type(["?", hq, tq, dv], t)
        lse_t = _tensor_type(["?", hq, tq], "f32")
        k_t, v_t, table_arg, table_operand, table_type, page = _cache_types(t, hkv, d, dv, self.page_size)
        new_args = append = ""
        cache_k = cache_v = "%k"
        if self.append:
            new_args = "%%k_new: %s, %%v_new: %s, " % (_tensor_type(["?", hkv, tq, d], t),
                                                       _tensor_type(["?", hkv, tq, dv], t))
            append = _kv_append_text(t, hkv, tq, d, dv, self.page_size)
            cache_k, cache_v = "%k2", "%v2"
        else:
            cache_v = "%v"
        return (
            "// Generated by flashc.spec for flashc.torch.decode_attention: %s\n"
            "func.func @decode(%%q: %s, %s%%k: %s, %%v: %s, %%lens: tensor<?xi32>%s) -> (%s, %s) {\n"
            "%s"
            "  %%o, %%lse = flash.decode_attention %%q, %s, %s, %%lens%s scale = %s%s%s num_kv_heads = %d"
            " : (%s, %s, %s, tensor<?xi32>%s) -> (%s, %s)\n"
            "  return %%o, %%lse : %s, %s\n"
            "}\n" % (self.describe(), q_t, new_args, k_t, v_t, table_arg, o_t, lse_t, append, cache_k, cache_v,
                     table_operand, format_f32(self.scale), " causal" if self.causal else "", page, hkv, q_t, k_t,
                     v_t, table_type, o_t, lse_t, o_t, lse_t))

    def describe(self):
        parts = ["decode", self.dtype, "Hq=%d" % self.num_heads, "Hkv=%d" % self.num_kv_heads, "D=%d" % self.head_dim]
        if self.value_head_dim != self.head_dim:
            parts.append("Dv=%d" % self.value_head_dim)
        parts += ["T=%d" % self.queries, "page=%d" % self.page_size if self.page_size else "contiguous",
                  "causal" if self.causal else "full", "scale=%s" % format_f32(self.scale)]
        if self.append:
            parts.append("append")
        return " ".join(parts)

    compiler_flags = ()

    @cached_property
    def key(self):
        dv, layout = _cache_key_parts(self)
        return "decode_%s_h%dkv%d_d%d%s_t%d_%s_%s%s_%s" % (
            self.dtype, self.num_heads, self.num_kv_heads, self.head_dim, dv, self.queries, layout,
            "causal" if self.causal else "full", "_append" if self.append else "",
            _short_hash("v%d" % KEY_VERSION, ",".join(self.archs), self.spec_text()))

    program = "decode"


def _check_page_size(page):
    if page and (page < 16 or page > 256 or page & (page - 1)):
        raise InvalidArgumentError("page_size must be 0 (a contiguous cache) or a power of two from 16 to 256, "
                                   "got %d" % page)


def _cache_key_parts(config):
    """A cache config's key pieces: the value head dim when it differs ("v64", or ""), the layout ("p64", "contig")."""
    dv = "" if config.value_head_dim == config.head_dim else "v%d" % config.value_head_dim
    return dv, "p%d" % config.page_size if config.page_size else "contig"


def _cache_types(t, hkv, d, dv, page_size):
    """A KV cache's MLIR types and its block table's argument, operand and type texts (contiguous: page_size 0)."""
    if page_size:
        return (_tensor_type(["?", page_size, hkv, d], t), _tensor_type(["?", page_size, hkv, dv], t),
                ", %table: tensor<?x?xi32>", " block_table %table", ", tensor<?x?xi32>", " page_size = %d" % page_size)
    return (_tensor_type(["?", hkv, "?", d], t), _tensor_type(["?", hkv, "?", dv], t), "", "", "", "")


def _kv_append_text(t, hkv, tokens, d, dv, page_size):
    """`%k2, %v2 = flash.kv_append %k_new, %v_new into %k, %v, %lens ...` (tokens: an int, or "?")."""
    k_t, v_t, _, table_operand, table_type, page = _cache_types(t, hkv, d, dv, page_size)
    kn_t, vn_t = _tensor_type(["?", hkv, tokens, d], t), _tensor_type(["?", hkv, tokens, dv], t)
    return ("  %%k2, %%v2 = flash.kv_append %%k_new, %%v_new into %%k, %%v, %%lens%s%s"
            " : (%s, %s, %s, %s, tensor<?xi32>%s) -> (%s, %s)\n" % (
                page, table_operand, kn_t, vn_t, k_t, v_t, table_type, k_t, v_t))


@dataclass(frozen=True)
class KvAppendConfig:
    """One flash.kv_append configuration: any number of new tokens' keys and values (k_new / v_new [B, Hkv, T, D])
    written into a KV cache in place, contiguous (page_size 0: [B, Hkv, S, D]) or paged ([pages, page_size, Hkv, D]
    with a block table). The program's cache_seqlens count the new tokens (rows cache_seqlens - T .. are written)."""
    dtype: str
    num_kv_heads: int
    head_dim: int
    value_head_dim: Optional[int] = None
    page_size: int = 0
    archs: Tuple[str, ...] = field(default=("sm_90a",))

    def __post_init__(self):
        if self.dtype not in DTYPES:
            raise InvalidArgumentError("kv_append dtype must be one of %s, got %r" % (", ".join(DTYPES), self.dtype))
        _check_int("num_kv_heads", self.num_kv_heads, 1)
        _check_int("page_size", self.page_size, 0)
        dv = self.head_dim if self.value_head_dim is None else self.value_head_dim
        for name, d in (("head_dim", self.head_dim), ("value_head_dim", dv)):
            if not isinstance(d, int) or d <= 0 or d % 8:
                raise InvalidArgumentError("kv_append %s must be a positive multiple of 8, got %r" % (name, d))
        object.__setattr__(self, "value_head_dim", dv)
        _check_page_size(self.page_size)
        object.__setattr__(self, "archs", tuple(self.archs))

    def spec_text(self):
        t, hkv, d, dv = self.dtype, self.num_kv_heads, self.head_dim, self.value_head_dim
        k_t, v_t, table_arg, _, _, _ = _cache_types(t, hkv, d, dv, self.page_size)
        kn_t, vn_t = _tensor_type(["?", hkv, "?", d], t), _tensor_type(["?", hkv, "?", dv], t)
        return ("// Generated by flashc.spec for flashc.torch.kv_append: %s\n"
                "func.func @kv_append(%%k_new: %s, %%v_new: %s, %%k: %s, %%v: %s, %%lens: tensor<?xi32>%s)"
                " -> (%s, %s) {\n%s  return %%k2, %%v2 : %s, %s\n}\n" % (
                    self.describe(), kn_t, vn_t, k_t, v_t, table_arg, k_t, v_t,
                    _kv_append_text(t, hkv, "?", d, dv, self.page_size), k_t, v_t))

    def describe(self):
        parts = ["kv_append", self.dtype, "Hkv=%d" % self.num_kv_heads, "D=%d" % self.head_dim]
        if self.value_head_dim != self.head_dim:
            parts.append("Dv=%d" % self.value_head_dim)
        parts.append("page=%d" % self.page_size if self.page_size else "contiguous")
        return " ".join(parts)

    compiler_flags = ()

    @cached_property
    def key(self):
        dv, layout = _cache_key_parts(self)
        return "kv_append_%s_kv%d_d%d%s_%s_%s" % (
            self.dtype, self.num_kv_heads, self.head_dim, dv, layout,
            _short_hash("v%d" % KEY_VERSION, ",".join(self.archs), self.spec_text()))

    program = "kv_append"


def _check_heads_and_dims(kind, config, multiple):
    """A decode or packed-sequences config's heads (kv heads dividing the query heads) and head dims (multiples of
    `multiple` up to 256); returns the value head dim (the head dim when not given)."""
    _check_int("num_heads", config.num_heads, 1)
    _check_int("num_kv_heads", config.num_kv_heads, 1)
    if config.num_heads % config.num_kv_heads:
        raise InvalidArgumentError("number of query heads (%d) must be a multiple of the number of key/value "
                                   "heads (%d)" % (config.num_heads, config.num_kv_heads))
    dv = config.head_dim if config.value_head_dim is None else config.value_head_dim
    for name, d in (("head_dim", config.head_dim), ("value_head_dim", dv)):
        if not isinstance(d, int) or d <= 0 or d % multiple or d > 256:
            raise InvalidArgumentError("%s %s must be a multiple of %d up to 256, got %r" % (kind, name, multiple, d))
    return dv


@dataclass(frozen=True)
class VarlenConfig:
    """One flash.varlen_attention configuration: packed variable-length sequences (flash-attn's varlen contract),
    q [Tq, Hq, D], k / v [Tk, Hkv, D / Dv] with int32 offsets cu_seqlens_q / cu_seqlens_k [B + 1]. The mask aligns
    each sequence's bottom-right corner. sm_90a only (TMA loads of the packed tensors); the backward program
    (`varlen_backward`) is generated without a softcap. scale None means 1/sqrt(D); window as AttentionConfig's."""
    dtype: str
    num_heads: int
    num_kv_heads: int
    head_dim: int
    value_head_dim: Optional[int] = None
    causal: bool = False
    window: Optional[Tuple[int, int]] = None
    softcap: Optional[float] = None
    scale: Optional[float] = None
    archs: Tuple[str, ...] = field(default=("sm_90a",))

    def __post_init__(self):
        if self.dtype not in ("bf16", "f16"):
            raise InvalidArgumentError("varlen dtype must be bf16 or f16, got %r" % (self.dtype,))
        object.__setattr__(self, "value_head_dim", _check_heads_and_dims("varlen", self, 8))
        if self.head_dim <= 32:
            raise InvalidArgumentError("varlen head_dim must be above 32, got %d" % self.head_dim)
        if tuple(self.archs) != ("sm_90a",):
            raise InvalidArgumentError("varlen runs on sm_90a only (TMA loads), got archs %r" % (self.archs,))
        # The window and mask rules are AttentionConfig's.
        probe = AttentionConfig(self.dtype, self.num_heads, self.num_kv_heads, self.head_dim, causal=self.causal,
                                window=self.window, softcap=self.softcap, scale=self.scale)
        object.__setattr__(self, "causal", probe.causal)
        object.__setattr__(self, "window", probe.window)
        object.__setattr__(self, "softcap", probe.softcap)
        object.__setattr__(self, "scale", probe.scale)
        object.__setattr__(self, "archs", tuple(self.archs))

    def _mask_text(self):
        if self.window is not None:
            return "#flash.mask<sliding_window, left = %d, right = %d>" % self.window
        return "#flash.mask<causal>" if self.causal else "#flash.mask<none>"

    def spec_text(self):
        t, hq, hkv, d, dv = self.dtype, self.num_heads, self.num_kv_heads, self.head_dim, self.value_head_dim
        q_t, k_t = _tensor_type(["?", hq, d], t), _tensor_type(["?", hkv, d], t)
        v_t, o_t = _tensor_type(["?", hkv, dv], t), _tensor_type(["?", hq, dv], t)
        lse_t = _tensor_type([hq, "?"], "f32")
        softcap = " softcap = %s" % format_f32(self.softcap) if self.softcap else ""
        return (
            "// Generated by flashc.spec for flashc.torch.varlen_attention: %s\n"
            "func.func @varlen(%%q: %s, %%k: %s, %%v: %s, %%cu_q: tensor<?xi32>, %%cu_k: tensor<?xi32>) -> (%s, %s) {\n"
            "  %%o, %%lse = flash.varlen_attention %%q, %%k, %%v, %%cu_q, %%cu_k scale = %s mask = %s%s num_kv_heads = %d"
            " : (%s, %s, %s, tensor<?xi32>, tensor<?xi32>) -> (%s, %s)\n"
            "  return %%o, %%lse : %s, %s\n"
            "}\n" % (self.describe(), q_t, k_t, v_t, o_t, lse_t, format_f32(self.scale), self._mask_text(), softcap,
                     hkv, q_t, k_t, v_t, o_t, lse_t, o_t, lse_t))

    def describe(self):
        parts = ["varlen", self.dtype, "Hq=%d" % self.num_heads, "Hkv=%d" % self.num_kv_heads, "D=%d" % self.head_dim]
        if self.value_head_dim != self.head_dim:
            parts.append("Dv=%d" % self.value_head_dim)
        parts.append("window=%d:%d" % self.window if self.window else "causal" if self.causal else "full")
        if self.softcap:
            parts.append("softcap=%s" % format_f32(self.softcap))
        parts.append("scale=%s" % format_f32(self.scale))
        return " ".join(parts)

    compiler_flags = ()

    @cached_property
    def key(self):
        dv = "" if self.value_head_dim == self.head_dim else "v%d" % self.value_head_dim
        mask = "w%d_%d" % self.window if self.window else "causal" if self.causal else "full"
        return "varlen_%s_h%dkv%d_d%d%s_%s_%s" % (
            self.dtype, self.num_heads, self.num_kv_heads, self.head_dim, dv, mask,
            _short_hash("v%d" % KEY_VERSION, ",".join(self.archs), self.spec_text()))

    program = "varlen"


MOE_GATINGS = ("softmax", "sigmoid")


@dataclass(frozen=True)
class MoeConfig:
    """One flash.moe configuration (a mixture-of-experts layer, docs/design/moe.md): x [T, d], router [d, E], w1 (and
    w_up when gated) [E, d, h], w2 [E, h, d_out]; each token goes to its top_k experts by softmax or sigmoid scores of
    its router logits (renormalised over the chosen when `renormalize`), y [T, d_out] their weighted sum. E a multiple
    of 8 up to 256, top_k <= 32, d, h and d_out multiples of 8; sm_90a only. Its bundle holds the forward, the
    training forward (which also saves what the backward reads: `saved`) and the backward."""
    dtype: str
    model_dim: int
    hidden_dim: int
    experts: int
    top_k: int
    out_dim: Optional[int] = None
    gating: str = "softmax"
    renormalize: bool = False
    activation: str = "silu"
    gated: bool = True
    archs: Tuple[str, ...] = field(default=("sm_90a",))

    def __post_init__(self):
        if self.dtype not in DTYPES:
            raise InvalidArgumentError("moe dtype must be one of %s, got %r" % (", ".join(DTYPES), self.dtype))
        out = self.model_dim if self.out_dim is None else self.out_dim
        for name, v in (("model_dim", self.model_dim), ("hidden_dim", self.hidden_dim), ("out_dim", out)):
            if not isinstance(v, int) or v <= 0 or v % 8:
                raise InvalidArgumentError("moe %s must be a positive multiple of 8, got %r" % (name, v))
        if not isinstance(self.experts, int) or self.experts < 8 or self.experts > 256 or self.experts % 8:
            raise InvalidArgumentError("moe experts must be a multiple of 8 from 8 to 256, got %r" % (self.experts,))
        if not isinstance(self.top_k, int) or not 1 <= self.top_k <= min(32, self.experts):
            raise InvalidArgumentError("moe top_k must be in [1, min(32, experts)], got %r" % (self.top_k,))
        if self.gating not in MOE_GATINGS:
            raise InvalidArgumentError("moe gating must be one of %s, got %r" % (", ".join(MOE_GATINGS), self.gating))
        if self.activation not in ACTIVATIONS:
            raise InvalidArgumentError("moe activation must be one of %s, got %r" % (", ".join(ACTIVATIONS),
                                                                                   self.activation))
        object.__setattr__(self, "out_dim", out)
        object.__setattr__(self, "renormalize", bool(self.renormalize))
        object.__setattr__(self, "gated", bool(self.gated))
        object.__setattr__(self, "archs", tuple(self.archs))

    def spec_text(self):
        t, d, h, e, n = self.dtype, self.model_dim, self.hidden_dim, self.experts, self.out_dim
        x_t, r_t = _tensor_type(["?", d], t), _tensor_type([d, e], t)
        w1_t, w2_t, y_t = _tensor_type([e, d, h], t), _tensor_type([e, h, n], t), _tensor_type(["?", n], t)
        up_arg, up_use, up_type = (", %%w_up: %s" % w1_t, " up %w_up", ", " + w1_t) if self.gated else ("", "", "")
        return ("// Generated by flashc.spec for flashc.torch.moe: %s\n"
                "func.func @moe(%%x: %s, %%router: %s, %%w1: %s%s, %%w2: %s) -> %s {\n"
                "  %%y = flash.moe %s %%x, %%router, %%w1%s, %%w2 top_k = %d gating = %s%s\n"
                "      : (%s, %s, %s%s, %s) -> %s\n"
                "  return %%y : %s\n}\n" % (
                    self.describe(), x_t, r_t, w1_t, up_arg, w2_t, y_t, self.activation, up_use, self.top_k,
                    self.gating, " renormalize" if self.renormalize else "", x_t, r_t, w1_t, up_type, w2_t, y_t, y_t))

    def describe(self):
        return "moe %s d=%d h=%d d_out=%d E=%d top%d %s%s %s%s" % (
            self.dtype, self.model_dim, self.hidden_dim, self.out_dim, self.experts, self.top_k, self.gating,
            " renormalized" if self.renormalize else "", self.activation, " gated" if self.gated else "")

    compiler_flags = ()

    @cached_property
    def key(self):
        # ("backward": its bundles hold the training forward and the backward since they were built.)
        return "moe_%s_d%dh%do%d_e%dk%d_%s_%s" % (
            self.dtype, self.model_dim, self.hidden_dim, self.out_dim, self.experts, self.top_k, self.gating,
            _short_hash("v%d" % KEY_VERSION, "backward", ",".join(self.archs), self.spec_text()))

    program = "moe"
    forward_train_program = "moe_forward_train"
    backward_program = "moe_backward"

    def capacity(self, tokens):
        """The permuted layout's rows for `tokens` tokens: T top_k routed rows, each expert's padded to a multiple of
        128 (the device library's moe_padded_capacity)."""
        return (tokens * self.top_k + 127 * self.experts) // 128 * 128

    def saved(self, tokens):
        """(name, shape, dtype name) of each tensor the training forward saves for the backward, in program order
        (flash-tile's MoeSaved): the routing, the permuted rows and the experts' activations."""
        t, e, k, c = tokens, self.experts, self.top_k, self.capacity(tokens)
        rows = ([("expert_gate", (c, self.hidden_dim)), ("expert_up", (c, self.hidden_dim))] if self.gated
                else [("expert_pre", (c, self.hidden_dim))])
        return ([("logits", (t, e), self.dtype), ("expert_counts", (e,), "i32"), ("ids", (t * k,), "i32"),
                 ("route_weights", (t * k,), "f32"), ("ranks", (t * k,), "i32"), ("offsets", (e + 1,), "i32"),
                 ("groups", (c // 128 + 1,), "i32"), ("permuted", (c, self.model_dim), self.dtype)] +
                [(name, shape, self.dtype) for name, shape in rows] +
                [("hidden", (c, self.hidden_dim), self.dtype), ("expert_out", (c, self.out_dim), self.dtype)])
