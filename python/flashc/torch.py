"""PyTorch autograd functions over flashc bundles.

    flashc.torch.attention(q, k, v, causal=False, scale=None, window=None, softcap=None, enable_gqa=False,
                           key_offset=None, mask_mod=None, score_mod=None)
    flashc.torch.flex_attention(q, k, v, score_mod=None, block_mask=None, scale=None, enable_gqa=False,
                                return_lse=False), flashc.torch.create_block_mask(mask_mod, B, H, Q_LEN, KV_LEN)
                           (FlexAttention's names: a port changes the import)
    flashc.torch.ffn(x, w1, b1=None, w2=..., b2=None, activation="gelu_tanh", w_gate=None)
    flashc.torch.decode_attention(q, k_cache, v_cache, cache_seqlens, block_table=None, causal=True, scale=None)
    flashc.torch.varlen_attention(q, k, v, cu_seqlens_q, cu_seqlens_k, ..., causal=False, window_size=(-1, -1))
                           (flash-attn's flash_attn_with_kvcache layout; inference only)

Each distinct configuration maps to one bundle (flashc.cache): found in
FLASHC_BUNDLE_PATH or the cache, or compiled when the flashc compiler is here.
Both are torch.compile-able with no graph break (registered custom ops torch.ops.flashc.*: flashc._torch_ops).
Kernels run on torch.cuda.current_stream(). Set FLASHC_POISON_OUTPUTS=1 to fill
every output with NaN before the launch (tests: a kernel that skips an element
shows up). FLASHC_DEFER_CHECKS=1 is defer_checks(True) from the start: decode's and
varlen's input checks on the GPU are read at a later call instead of each call
waiting for them.
"""

import math
import os
import threading

import torch

from . import _native, cache, programs
from .bundle import Bundle
from .mask_mod import trace as trace_mask_mod
from .score_mod import trace as trace_score_mod
from .errors import InvalidArgumentError, InvalidBundleError
from .spec import DecodeConfig, KvAppendConfig, MoeConfig, VarlenConfig
from .validate import TensorInfo, attention_config, ffn_config, key_offset_value

__all__ = ["attention", "ffn", "flex_attention", "create_block_mask", "BlockMask", "decode_attention", "varlen_attention",
           "defer_checks", "check_deferred"]

_TORCH_DTYPES = {"bf16": torch.bfloat16, "f16": torch.float16, "f32": torch.float32, "i32": torch.int32}


# Validated configurations by their inputs' signature (shapes, dtypes, devices and options): a launch asks for its
# configuration on every call, and checking the inputs and building it again cost more host time than the kernel
# at small sizes (bench/probes/host_overhead.py). Only successes are kept; any input that is not a tensor, or an
# unhashable option, takes the full path, which raises the user-facing error.
_configs = {}
_MAX_CONFIGS = 4096


def _signature(tensors, options):
    try:
        key = tuple(None if t is None else (tuple(t.shape), t.dtype, t.device) for t in tensors) + tuple(options)
        hash(key)
        return key
    except (AttributeError, TypeError):
        return None


def _memo_config(key, make):
    config = _configs.get(key) if key is not None else None
    if config is None:
        config = make()
        if key is not None:
            if len(_configs) >= _MAX_CONFIGS:
                _configs.clear()
            _configs[key] = config
    return config


def _info(op, name, t, static=None):
    """TensorInfo of t for flashc.validate. static (the custom ops, flashc._torch_ops): indices of sizes that enter
    the configuration (heads, head and model dims), made plain ints: under torch.compile's symbolic shapes they are
    specialised (guarded), the others (batch, sequence, rows) stay symbolic."""
    if not isinstance(t, torch.Tensor):
        raise TypeError("flashc.%s: expected %s to be a torch.Tensor, but got %s" % (op, name, type(t).__name__))
    shape = tuple(t.shape)
    if static:
        shape = tuple(int(d) if i in static or i - len(shape) in static else d for i, d in enumerate(shape))
    return TensorInfo(shape, str(t.dtype), str(t.device))


def _poison_enabled():
    return os.environ.get("FLASHC_POISON_OUTPUTS", "") not in ("", "0")


def _padded_width(width, dtype):
    """width rounded up to whole 16-byte rows of dtype (the row stride the kernels need)."""
    per_16_bytes = max(1, 16 // dtype.itemsize)
    return -(-width // per_16_bytes) * per_16_bytes


def _empty(shape, dtype, device, pad_rows=False):
    """An uninitialised output tensor. pad_rows: a width whose rows are not whole 16 bytes (an FFN width such as
    1001 bf16) gets rows padded to 16 bytes (torch.empty_strided: strides (1008, 1) for [M, 1001]; not
    contiguous). The custom ops' fake implementations (flashc._torch_ops) allocate through it too, so that
    torch.compile sees the strides the real op returns."""
    shape = tuple(shape)
    if pad_rows and len(shape) >= 2 and _padded_width(shape[-1], dtype) != shape[-1]:
        strides, step = [1] * len(shape), _padded_width(shape[-1], dtype)
        for i in range(len(shape) - 2, -1, -1):
            strides[i] = step
            if i > 0:  # (not for the outermost size: a symbolic row count under torch.compile stays unguarded)
                step *= max(shape[i], 1)
        return torch.empty_strided(shape, tuple(strides), dtype=dtype, device=device)
    return torch.empty(shape, dtype=dtype, device=device)


def _output(shape, dtype, device, pad_rows=False):
    """An output tensor (_empty), filled with NaN when FLASHC_POISON_OUTPUTS is set."""
    t = _empty(shape, dtype, device, pad_rows)
    if _poison_enabled():  # the whole storage, rows' padding too: a kernel that wrote there shows up in tests
        t.as_strided((t.untyped_storage().nbytes() // t.element_size(),), (1,), 0).fill_(
            float("nan") if dtype.is_floating_point else -1)
    return t


def _kernel_layout(t, pad_rows=False):
    """t in a layout every kernel accepts (last dim contiguous, 16-byte aligned rows), copying only if needed.

    pad_rows: rows that cannot be 16-byte aligned in a dense layout (an FFN width such as 1001 bf16) are copied
    into rows padded to 16 bytes (_output; the kernels never touch the padding); a tensor whose rows already
    are (e.g. a view of the first columns of a wider buffer) is passed as it is."""
    if t.dim() == 0:
        return t
    size = t.element_size()
    # The common case first (a dense tensor of whole 16-byte rows): one call into torch each.
    if t.is_contiguous() and t.data_ptr() % 16 == 0 and (t.shape[-1] * size) % 16 == 0:
        return t
    rows_aligned = all((s * size) % 16 == 0 for s, n in zip(t.stride()[:-1], t.shape[:-1]) if n > 1)
    if t.stride(-1) == 1 and t.data_ptr() % 16 == 0 and rows_aligned:
        return t
    if pad_rows and t.dim() >= 2:
        copy = _output(t.shape, t.dtype, t.device, pad_rows=True)
        copy.copy_(t)
        return copy
    if not t.is_contiguous():
        t = t.contiguous()
    if t.data_ptr() % 16:
        t = t.clone()
    return t


_resolved = {}


def _program(config, direction):
    """(bundle, program name, {logical: bundle parameter name}) for config's forward or backward."""
    found = _resolved.get((config.key, direction))
    if found is None:
        bundle = cache.load_bundle(config)
        program, mapping = programs.resolve(bundle, config, direction)
        found = _resolved[(config.key, direction)] = (bundle, program, mapping)
    return found


def _run(config, direction, device, args):
    bundle, program, mapping = _program(config, direction)
    # Inputs the program does not read (absent from mapping) are not passed.
    _launch(bundle, program, device, {mapping[k]: v for k, v in args.items() if k in mapping})


# The raw cudaStream_t of a device's current stream: torch's own accessor where there is one (what Triton calls; the
# public torch.cuda.current_stream builds a Stream object and resolves the device twice: ~20 us a call here).
_raw_stream = getattr(torch._C, "_cuda_getCurrentRawStream", None)


_allocators = {}  # device -> allocate(nbytes)


def _allocator(device):
    """allocate(nbytes) of a program's scratch on `device` from torch's caching allocator: stream-ordered on the
    current stream like the launch, reused from torch's cache instead of mapped again by the driver's pool (the FFN
    backward's scratch at d <= 1024 left the GPU idle 100-600 us a step waiting for its remap:
    bench/results/2026-12-02-h200-session16.md call 6). Bundle.launch calls it only for a program that has scratch,
    with the bytes the runtime's plan for these arguments needs."""
    allocate = _allocators.get(device)
    if allocate is None:
        def allocate(nbytes):
            return torch.empty(nbytes, dtype=torch.uint8, device=device)
        _allocators[device] = allocate
    return allocate


def _launch(bundle, program, device, args):
    index = device.index if device.index is not None else torch.cuda.current_device()
    stream = _raw_stream(index) if _raw_stream else torch.cuda.current_stream(index).cuda_stream
    if index == torch.cuda.current_device():  # the runtime launches in the current context: no switch needed
        bundle.launch(program, stream=stream, workspace=_allocator(device), **args)
        return
    with torch.cuda.device(index):
        bundle.launch(program, stream=stream, workspace=_allocator(device), **args)


# Two paths to the same kernels. Eager calls on plain tensors take the autograd.Function below (the least host time
# a call: bench/probes/host_overhead_cpu.py). Under torch.compile (and for tensor subclasses: FakeTensor,
# FunctionalTensor, torch.export) the calls go through the registered custom ops torch.ops.flashc.* (_torch_ops),
# which torch.compile keeps in its graph. Both launch through _attention_forward/_attention_backward and
# _ffn_forward/_ffn_backward, with configurations from flashc.validate.
if hasattr(torch, "compiler") and hasattr(torch.compiler, "is_compiling"):
    _is_compiling = torch.compiler.is_compiling
else:  # pragma: no cover (torch < 2.3)
    _is_compiling = torch._dynamo.is_compiling


def _use_ops(t):
    """Whether a call on t goes through the custom ops: under torch.compile, or t a tensor subclass."""
    return _is_compiling() or (type(t) is not torch.Tensor and isinstance(t, torch.Tensor))


# ---------------------------------------------------------------- attention
_INT32_MIN, _INT32_MAX = -(1 << 31), (1 << 31) - 1


def _as_kernel_tensor(i, t, what="mask_mod"):
    """A modifier's tensor as the kernels read it: int32, contiguous (a copy only where the caller's is not). Wider
    integers are checked to fit (a wrapped id would join two documents silently); that check reads the tensor's
    range back to the host: pass int32 to skip it."""
    if t.dtype in (getattr(torch, "uint16", None), getattr(torch, "uint32", None)):
        t = t.to(torch.int64)  # (torch's reductions do not take these: widened, no value changes)
    elif t.dtype == getattr(torch, "uint64", None):
        raise InvalidArgumentError("%s's tensor t%d is uint64, which the kernels do not read: pass int32 (or int64, "
                                   "uint8, int16, uint16, uint32 whose values fit int32)" % (what, i))
    if t.dtype != torch.int32:
        if t.numel():
            lo, hi = int(t.min()), int(t.max())
            if lo < _INT32_MIN or hi > _INT32_MAX:
                raise InvalidArgumentError("%s's tensor t%d holds values outside int32 (%d..%d): the kernels "
                                           "read int32" % (what, i, lo, hi))
        t = t.to(torch.int32)
    return t.contiguous()


def _mask_tensors(config, tensors):
    """{mask_t0: ..., score_t0: ...}: the tensors config's modifiers read (already as the kernels read them)."""
    return dict(zip(config.modifier_tensor_names(), tensors))


def _attention_forward(config, q, k, v, key_offset, mask_tensors=()):
    """(q, k, v in the kernels' layout, o, lse) of config's forward (key_offset: its run-time offset or None;
    mask_tensors: the tensors its mask modifier reads)."""
    batch, heads, seq_q, _ = q.shape
    seq_k, dv = k.shape[2], v.shape[3]
    q, k, v = _kernel_layout(q), _kernel_layout(k), _kernel_layout(v)
    o = _output((batch, heads, seq_q, dv), q.dtype, q.device)
    lse = _output((batch, heads, seq_q), torch.float32, q.device)
    if o.numel() > 0:
        if seq_k == 0:  # no visible key: the op defines out = 0, lse = -inf
            o.zero_()
            lse.fill_(-math.inf)
        else:
            _run(config, "forward", q.device,
                 _with_offset(dict(q=q, k=k, v=v, o=o, lse=lse, **_mask_tensors(config, mask_tensors)), key_offset))
    return q, k, v, o, lse


def _attention_backward(config, key_offset, q, k, v, o, lse, do, mask_tensors=()):
    """(dq, dk, dv); q, k, v, o and lse in the kernels' layout (as _attention_forward returns them)."""
    dq = _output(q.shape, q.dtype, q.device)
    dk = _output(k.shape, k.dtype, k.device)
    dv = _output(v.shape, v.dtype, v.device)
    if q.numel() == 0 or k.shape[2] == 0:
        for g in (dq, dk, dv):
            g.zero_()
    else:
        _run(config, "backward", q.device, _with_offset(
            dict(q=q, k=k, v=v, o=o, lse=lse, do=_kernel_layout(do), dq=dq, dk=dk, dv=dv,
                 **_mask_tensors(config, mask_tensors)), key_offset))
    return dq, dk, dv


def _attention_save(ctx, config, key_offset, saved, mask_tensors=()):
    # The modifier's tensors are saved too: changed in place before the backward, autograd says so.
    ctx.config, ctx.key_offset, ctx.mask_count = config, key_offset, len(mask_tensors)
    ctx.save_for_backward(*saved, *mask_tensors)
    # No zero-filled gradient for an output the loss does not use (a kernel launch and an allocation a call).
    ctx.set_materialize_grads(False)


def _attention_grads(ctx, do):
    if do is None:  # o did not reach the loss
        return None, None, None
    saved = ctx.saved_tensors
    n = len(saved) - ctx.mask_count
    return _attention_backward(ctx.config, ctx.key_offset, *saved[:n], do, saved[n:])


class _Attention(torch.autograd.Function):
    """(o, lse); key_offset: None, or the run-time key offset (an int) of a config with key_offset=True;
    mask_tensors: the tensors its mask modifier reads (no gradient)."""

    @staticmethod
    def forward(ctx, q, k, v, config, key_offset=None, mask_tensors=()):
        q, k, v, o, lse = _attention_forward(config, q, k, v, key_offset, mask_tensors)
        _attention_save(ctx, config, key_offset, (q, k, v, o, lse), mask_tensors)
        ctx.mark_non_differentiable(lse)
        return o, lse

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, do, _dlse):
        return _attention_grads(ctx, do) + (None, None, None)


class _AttentionOutput(torch.autograd.Function):
    """o alone (lse kept for the backward only): one output less for autograd to track, which is host time a call
    (bench/probes/attention_host_time.py)."""

    @staticmethod
    def forward(ctx, q, k, v, config, key_offset=None, mask_tensors=()):
        q, k, v, o, lse = _attention_forward(config, q, k, v, key_offset, mask_tensors)
        _attention_save(ctx, config, key_offset, (q, k, v, o, lse), mask_tensors)
        return o

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, do):
        return _attention_grads(ctx, do) + (None, None, None)


def _mask_mod_text(mask_mod):
    """The text form of a mask modifier (traced when a function). Under torch.compile the trace runs once, when the
    call is traced: its result is a constant of the graph (assume_constant_result), not Python dynamo follows."""
    return trace_mask_mod(mask_mod).text


def _mask_mod_program(mask_mod, q):
    """The traced modifier: its text and the tensors it reads (checked: integers on q's device)."""
    program = trace_mask_mod(mask_mod)
    ranks = program.tensor_ranks
    if len(program.tensors) != len(ranks):
        raise InvalidArgumentError("mask_mod reads %d tensor(s) but has %d (a text form's tensors: "
                                   "IndexProgram.parse(text).with_tensors(...))" % (len(ranks), len(program.tensors)))
    for i, (t, rank) in enumerate(zip(program.tensors, ranks)):
        if not isinstance(t, torch.Tensor) or t.dtype.is_floating_point or t.dtype.is_complex or t.dtype == torch.bool:
            raise InvalidArgumentError("mask_mod's tensor t%d must be a torch tensor of integers, got %s"
                                       % (i, getattr(t, "dtype", type(t).__name__)))
        if t.dim() != rank:
            raise InvalidArgumentError("mask_mod reads t%d with %d position(s), but it has rank %d" % (i, rank, t.dim()))
        if t.device != q.device:
            raise InvalidArgumentError("mask_mod reads a tensor on %s (t%d), but q is on %s" % (t.device, i, q.device))
    return program.text, tuple(_as_kernel_tensor(i, t) for i, t in enumerate(program.tensors))


def _modifier(name, fn, program_of, text_of, q):
    """(text, tensors) of a mask or score modifier (None, () without one): traced with its tensors eagerly; its text
    alone through the custom ops (torch.compile, tensor subclasses), which take no modifier tensors yet."""
    if fn is None:
        return None, ()
    if not _use_ops(q):
        return program_of(fn, q)
    text = text_of(fn)
    if "read" in text.split():
        raise InvalidArgumentError("%s: a modifier that reads tensors runs eagerly only for now (not under "
                                   "torch.compile or on tensor subclasses)" % name)
    return text, ()


def _score_mod_text(score_mod):
    """The text form of a score modifier (traced when a function); a constant under torch.compile as the mask's."""
    return trace_score_mod(score_mod).text


def _score_mod_program(score_mod, q):
    """The traced score modifier: its text and the tensors it reads (float ones as float32, integer ones as int32,
    contiguous, on q's device)."""
    program = trace_score_mod(score_mod)
    ranks = program.tensor_ranks
    if len(program.tensors) != len(ranks):
        raise InvalidArgumentError("score_mod reads %d tensor(s) but has %d (a text form's tensors: "
                                   "ScoreProgram.parse(text).with_tensors(...))" % (len(ranks), len(program.tensors)))
    tensors = []
    for i, (t, rank, kind) in enumerate(zip(program.tensors, ranks, program.tensor_kinds)):
        if not isinstance(t, torch.Tensor) or t.dtype.is_complex or t.dtype == torch.bool:
            raise InvalidArgumentError("score_mod's tensor t%d must be a torch tensor of floats or integers, got %s"
                                       % (i, getattr(t, "dtype", type(t).__name__)))
        if t.dim() != rank:
            raise InvalidArgumentError("score_mod reads t%d with %d position(s), but it has rank %d" % (i, rank, t.dim()))
        if t.device != q.device:
            raise InvalidArgumentError("score_mod reads a tensor on %s (t%d), but q is on %s" % (t.device, i, q.device))
        if (kind == "f32") != t.dtype.is_floating_point:
            raise InvalidArgumentError("score_mod's tensor t%d is read as %s, but it holds %s" % (i, kind, t.dtype))
        if t.requires_grad and torch.is_grad_enabled():  # (silently untrained otherwise: refused)
            raise InvalidArgumentError("score_mod reads t%d, which requires a gradient: flashc's backward gives none "
                                       "to a modifier's tensors (detach it, or train it elsewhere)" % i)
        tensors.append(t.to(torch.float32).contiguous() if kind == "f32" else _as_kernel_tensor(i, t, "score_mod"))
    return program.text, tuple(tensors)


if hasattr(torch, "compiler") and hasattr(torch.compiler, "assume_constant_result"):
    _mask_mod_text = torch.compiler.assume_constant_result(_mask_mod_text)
    _score_mod_text = torch.compiler.assume_constant_result(_score_mod_text)


def _with_offset(args, key_offset):
    """The programs' arguments plus the scalar key_offset (configs with key_offset=True only)."""
    if key_offset is not None:
        args["key_offset"] = key_offset
    return args


def attention(q, k, v, causal=False, scale=None, window=None, softcap=None, enable_gqa=False, return_lse=False,
              backward_form="auto", key_offset=None, mask_mod=None, score_mod=None):
    """Fused attention, shaped like torch.nn.functional.scaled_dot_product_attention.

    q [B, Hq, Sq, D], k [B, Hkv, Sk, D], v [B, Hkv, Sk, Dv] on one CUDA device, bfloat16 or float16, any strides
    (e.g. a [B, S, H, D] tensor's .transpose(1, 2)). Returns o [B, Hq, Sq, Dv] (and the log-sum-exp
    [B, Hq, Sq] float32 when return_lse=True).

    scale: default 1/sqrt(D). softcap: scores become softcap * tanh(scores / softcap). window: an int or a
    (left, right) pair of visible keys each side of the diagonal (-1: unbounded). Masks are bottom-right
    aligned (query i sits at key position i + Sk - Sq, as in FlashAttention); PyTorch's is_causal is
    top-left aligned, so the two differ when Sq != Sk. enable_gqa: Hq may be a multiple of Hkv (query head h
    uses key/value head h // (Hq / Hkv)). A row with no visible key gives zeros (lse = -inf).
    backward_form: "auto" (default: the backward kernels flashc picks for the GPU), "rows" or "transposed" (the
    Sᵀ backward kernels); flashc --backward-form.
    key_offset: an int (int32) replaces Sk - Sq as the key position of query row 0: query i sits at key position
    i + key_offset for the causal mask and the window (any value; rows that then see no key give zeros). It is a
    run-time argument of one compiled configuration (every value shares the bundle), e.g. a chunk of queries
    against a key chunk that starts elsewhere in the sequence (flashc.ring's sliding windows).
    mask_mod: a mask modifier hiding more keys, as FlexAttention's: a function mask_mod(b, h, q_idx, kv_idx) (or of
    (q_idx, kv_idx)) returning whether key kv_idx is visible from query q_idx (row indices, top-left: q_idx and
    kv_idx count from 0 in q and k), traced on every call into an index program (flashc.mask_mod: arithmetic,
    comparisons, & | ~, torch.where, the batch and head indices, integer tensors it reads by index such as a
    per-token document id, which it finds among its globals and closure variables: doc[q_idx]); or the program
    itself. A key is visible when causal / window and the modifier both allow it. Its text is part of the
    configuration: each modifier is its own bundle; the tensors' values are arguments of the call (read as int32;
    a computed position outside a tensor reads 0, but a tensor read at an index itself, doc[q_idx] or slopes[h], must
    hold that index's whole range: a shorter one is refused at launch, naming it). Not with key_offset.
    Tensor-reading modifiers run eagerly for now. One that
    only bounds q_idx - kv_idx (causal as q_idx >= kv_idx, a sliding window, abs(q_idx - kv_idx) <= w), with causal and
    window left unset, runs as the window's own kernels on its row positions (the compiler reads the band off the
    traced program).
    score_mod: a score modifier, as FlexAttention's: a function score_mod(score, b, h, q_idx, kv_idx) (or of
    (score, q_idx, kv_idx)) returning the score the softmax sees (score = scale * q·k), traced on every call
    (flashc.score_mod: float arithmetic, torch.tanh / exp / log / sqrt / where / minimum / maximum, the indices as
    in a mask modifier, float and integer tensors it reads by index such as ALiBi's per-head slopes: slopes[h]);
    the compiler differentiates it for the backward. Not with softcap (write the cap in it) or key_offset.
    """
    op = "attention"
    offset = key_offset_value(op, key_offset)  # checked on every call: the value is not part of the configuration
    mod, mask_tensors = _modifier("mask_mod", mask_mod, _mask_mod_program, _mask_mod_text, q)
    score, score_tensors = _modifier("score_mod", score_mod, _score_mod_program, _score_mod_text, q)
    if _use_ops(q):  # torch.compile: the options travel as one literal string (_torch_ops validates them)
        o, lse = torch.ops.flashc.attention_fwd(
            q, k, v, repr((causal, scale, window, softcap, enable_gqa, backward_form, mod, score)), offset)
        return (o, lse) if return_lse else o
    key = _signature((q, k, v), ("attention", causal, scale, window, softcap, enable_gqa, backward_form,
                                 offset is not None, mod, score))
    config = _memo_config(key, lambda: attention_config(
        _info(op, "query", q), _info(op, "key", k), _info(op, "value", v), causal=causal, scale=scale, window=window,
        softcap=softcap, enable_gqa=enable_gqa, backward_form=backward_form, key_offset=offset is not None,
        mask_mod=mod, score_mod=score))
    mask_tensors = mask_tensors + score_tensors  # (the programs' order: the mask modifier's, then the score's)
    if return_lse:
        return _Attention.apply(q, k, v, config, offset, mask_tensors)
    return _AttentionOutput.apply(q, k, v, config, offset, mask_tensors)


# ---------------------------------------------------------------------- decode over a KV cache
# The 16-bit dtypes the decode, append, packed-sequences and mixture-of-experts programs take, by spec name.
_HALF_DTYPES = {torch.bfloat16: "bf16", torch.float16: "f16"}


def _check_block_table(need, block_table, k_cache, batch, batch_of):
    """A paged cache's block table [B, W] (int32, on the GPU), or a contiguous cache of `batch_of`'s batch."""
    if block_table is not None:
        need(isinstance(block_table, torch.Tensor) and block_table.is_cuda and block_table.dtype == torch.int32
             and block_table.dim() == 2 and block_table.shape[0] == batch,
             "block_table must be an int32 CUDA tensor [batch, pages a sequence] = [%d, W]" % batch)
    else:
        need(k_cache.shape[0] == batch, "a contiguous k_cache must have %s's batch %d, got %d (a paged cache needs "
             "its block_table)" % (batch_of, batch, k_cache.shape[0]))


def _check_new_tokens(need, k, v, k_cache, v_cache, batch, tokens=None):
    """The new tokens' k and v [B, T, Hkv, D / Dv] against the cache (and T, when the decode's q fixes it)."""
    for name, t in (("k", k), ("v", v)):
        need(isinstance(t, torch.Tensor) and t.is_cuda and t.dim() == 4,
             "%s must be a CUDA tensor [batch, new tokens, kv_heads, head_dim]" % name)
    need(k.dtype == k_cache.dtype and v.dtype == k_cache.dtype,
         "k and v must have the cache's dtype %s, got %s and %s" % (k_cache.dtype, k.dtype, v.dtype))
    want_t = k.shape[1] if tokens is None else tokens
    need(tuple(k.shape) == (batch, want_t, k_cache.shape[2], k_cache.shape[3]) and
         tuple(v.shape) == (batch, want_t, v_cache.shape[2], v_cache.shape[3]),
         "k %s and v %s must be [batch, new tokens, kv_heads, head_dim] = [%d, %d, %d, %d / %d]" % (
             list(k.shape), list(v.shape), batch, want_t, k_cache.shape[2], k_cache.shape[3], v_cache.shape[3]))


def _decode_config(q, k_cache, v_cache, cache_seqlens, block_table, causal, scale, k=None, v=None):
    def need(cond, text):
        if not cond:
            raise InvalidArgumentError("decode_attention: " + text)
    for name, t in (("q", q), ("k_cache", k_cache), ("v_cache", v_cache), ("cache_seqlens", cache_seqlens)):
        need(isinstance(t, torch.Tensor), "%s must be a tensor, got %s" % (name, type(t).__name__))
        need(t.is_cuda, "%s must be on a CUDA device, got %s" % (name, t.device))
    need(q.dim() == 4, "q must be [batch, new tokens, heads, head_dim], got shape %s" % list(q.shape))
    need(k_cache.dim() == 4 and v_cache.dim() == 4,
         "k_cache and v_cache must be [batch, capacity, kv_heads, head_dim] (or [pages, page_size, kv_heads, "
         "head_dim] with a block_table), got %s and %s" % (list(k_cache.shape), list(v_cache.shape)))
    need(q.dtype in _HALF_DTYPES, "q must be bfloat16 or float16, got %s" % q.dtype)
    need(k_cache.dtype == q.dtype and v_cache.dtype == q.dtype,
         "k_cache and v_cache must have q's dtype %s, got %s and %s" % (q.dtype, k_cache.dtype, v_cache.dtype))
    need(cache_seqlens.dtype == torch.int32 and cache_seqlens.dim() == 1 and cache_seqlens.shape[0] == q.shape[0],
         "cache_seqlens must be int32 [batch] = [%d], got %s %s" % (q.shape[0], cache_seqlens.dtype,
                                                                      list(cache_seqlens.shape)))
    batch, tokens, heads, dim = q.shape
    kv_heads = k_cache.shape[2]
    need(k_cache.shape[:3] == v_cache.shape[:3] and k_cache.shape[3] == dim,
         "k_cache %s and v_cache %s must agree with each other and with q's head_dim %d" % (
             list(k_cache.shape), list(v_cache.shape), dim))
    _check_block_table(need, block_table, k_cache, batch, "q")
    need(heads % kv_heads == 0, "q's heads (%d) must be a multiple of the cache's kv heads (%d)" % (heads, kv_heads))
    need((k is None) == (v is None), "k and v come together (the new tokens' keys and values), or neither")
    if k is not None:
        _check_new_tokens(need, k, v, k_cache, v_cache, batch, tokens)
    return DecodeConfig(_HALF_DTYPES[q.dtype], heads, kv_heads, dim, value_head_dim=v_cache.shape[3], queries=tokens,
                        page_size=k_cache.shape[1] if block_table is not None else 0, causal=causal, scale=scale,
                        append=k is not None)


def decode_attention(q, k_cache, v_cache, cache_seqlens, block_table=None, causal=True, scale=None, return_lse=False,
                     k=None, v=None):
    """Attention of a few new tokens against a KV cache, shaped like flash-attn's flash_attn_with_kvcache.

    Without k and v, the new tokens' K/V are already in the cache and cache_seqlens count them. With k and v
    [B, T, Hkv, D / Dv] (flash-attn's contract), cache_seqlens are the lengths before them: one program first writes
    them into the cache in place at rows cache_seqlens[b] .. + T - 1 (kv_append), then attends over
    cache_seqlens + T keys; cache_seqlens itself is not changed.

    q [B, T, Hq, D] (1-16 new tokens), k_cache / v_cache [B, S, Hkv, D / Dv] or, with block_table [B, W] (int32
    page ids), a paged cache [pages, page_size, Hkv, D / Dv] (page_size a power of two from 16 to 256): key j of
    sequence b is row j % page_size of page block_table[b, j // page_size]. cache_seqlens [B] (int32): sequence b's
    keys are rows 0 .. cache_seqlens[b] - 1; query token t sits at position cache_seqlens[b] - T + t (causal: it
    sees the keys up to there). bfloat16 or float16, D and Dv multiples of 64 up to 256, sm_90a. Returns out
    [B, T, Hq, Dv] (and lse [B, Hq, T] float32 when return_lse). A length outside [0, capacity] or a page id outside
    the cache among those a sequence uses raises InvalidArgumentError naming the sequence (see defer_checks: at
    once, or at the next call); out and lse are then NaN and nothing else is written.
    Inference only: no gradient.
    """
    key = _signature((q, k_cache, v_cache, cache_seqlens, block_table, k, v), ("decode", causal, scale))
    config = _memo_config(key, lambda: _decode_config(q, k_cache, v_cache, cache_seqlens, block_table, causal, scale,
                                                      k, v))
    batch, tokens, heads, _ = q.shape
    out = torch.empty(batch, tokens, heads, config.value_head_dim, dtype=q.dtype, device=q.device)
    lse = torch.empty(batch, heads, tokens, dtype=torch.float32, device=q.device)
    if _poison_enabled():
        out.fill_(float("nan"))
        lse.fill_(float("nan"))
    paged = block_table is not None
    args = dict(q=q.transpose(1, 2), k_cache=k_cache if paged else k_cache.transpose(1, 2),
                v_cache=v_cache if paged else v_cache.transpose(1, 2), cache_seqlens=cache_seqlens,
                out=out.transpose(1, 2), lse=lse)
    if paged:
        args["block_table"] = block_table
    if k is not None:  # the program's lengths count the new tokens
        args.update(k_new=k.transpose(1, 2), v_new=v.transpose(1, 2), cache_seqlens=cache_seqlens + tokens)
    _launch_checked(cache.load_bundle(config), config.program, q.device, args)
    return (out, lse) if return_lse else out


def _kv_append_config(k, v, k_cache, v_cache, cache_seqlens, block_table):
    def need(cond, text):
        if not cond:
            raise InvalidArgumentError("kv_append: " + text)
    for name, t in (("k_cache", k_cache), ("v_cache", v_cache), ("cache_seqlens", cache_seqlens)):
        need(isinstance(t, torch.Tensor) and t.is_cuda, "%s must be a CUDA tensor" % name)
    need(k_cache.dim() == 4 and v_cache.dim() == 4 and k_cache.shape[:3] == v_cache.shape[:3],
         "k_cache and v_cache must be [batch, capacity, kv_heads, head_dim] (or [pages, page_size, kv_heads, "
         "head_dim] with a block_table) alike, got %s and %s" % (list(k_cache.shape), list(v_cache.shape)))
    need(k_cache.dtype in _HALF_DTYPES and v_cache.dtype == k_cache.dtype,
         "the caches must be bfloat16 or float16 alike, got %s and %s" % (k_cache.dtype, v_cache.dtype))
    need(isinstance(k, torch.Tensor) and k.dim() == 4, "k must be a CUDA tensor [batch, new tokens, kv_heads, "
         "head_dim]")
    batch = k.shape[0]
    need(cache_seqlens.dtype == torch.int32 and tuple(cache_seqlens.shape) == (batch,),
         "cache_seqlens must be int32 [batch] = [%d], got %s %s" % (batch, cache_seqlens.dtype,
                                                                      list(cache_seqlens.shape)))
    _check_new_tokens(need, k, v, k_cache, v_cache, batch)
    _check_block_table(need, block_table, k_cache, batch, "k")
    return KvAppendConfig(_HALF_DTYPES[k_cache.dtype], k_cache.shape[2], k_cache.shape[3],
                          value_head_dim=v_cache.shape[3], page_size=k_cache.shape[1] if block_table is not None else 0)


def kv_append(k_cache, v_cache, k, v, cache_seqlens, block_table=None):
    """Writes new tokens' keys and values into a KV cache in place (the append of flash-attn's
    flash_attn_with_kvcache, as its own call; decode_attention(..., k=, v=) fuses it with the decode).

    k_cache / v_cache [B, S, Hkv, D / Dv] or, with block_table [B, W] (int32 page ids), paged [pages, page_size, Hkv,
    D / Dv]; k / v [B, T, Hkv, D / Dv], any T; cache_seqlens [B] (int32) the lengths before the append: token t of
    sequence b goes to row cache_seqlens[b] + t (through the block table when paged). D and Dv multiples of 8,
    bfloat16 or float16. A length that would pass the capacity, or a page id outside the cache among those the
    sequence uses, raises InvalidArgumentError naming the sequence (see defer_checks), and nothing is written.
    Returns the caches.
    cache_seqlens is not changed (add T yourself once the step is done)."""
    key = _signature((k_cache, v_cache, k, v, cache_seqlens, block_table), ("kv_append",))
    config = _memo_config(key, lambda: _kv_append_config(k, v, k_cache, v_cache, cache_seqlens, block_table))
    if k.shape[1] == 0:
        return k_cache, v_cache
    paged = block_table is not None
    # (the program's lengths count the new tokens: rows length - T .. are written)
    args = dict(k_new=k.transpose(1, 2), v_new=v.transpose(1, 2), k_cache=k_cache if paged else k_cache.transpose(1, 2),
                v_cache=v_cache if paged else v_cache.transpose(1, 2), cache_seqlens=cache_seqlens + k.shape[1])
    if paged:
        args["block_table"] = block_table
    _launch_checked(cache.load_bundle(config), config.program, k.device, args)
    return k_cache, v_cache


# Programs that check their inputs on the device (decode's lengths and pages, varlen's offsets): whether a call waits
# for the verdict (raising at once) or defers it (raising at the next such call or at check_deferred()). Deferred by
# default, as PyTorch reports its own device-side checks: a stream synchronization a call would cost the packed
# forward 5-25 % of its throughput (docs/design/varlen-attention.md), and a rejected call's outputs are NaN.
_defer_checks = os.environ.get("FLASHC_DEFER_CHECKS", "1") not in ("", "0")
_checked_bundles = {}  # bundle -> the defer setting it was given


def defer_checks(defer=True):
    """decode_attention, kv_append and varlen_attention check their tables / offsets on the GPU. By default
    (defer_checks(True)) a call returns at once, as CUDA and PyTorch's device-side checks do: a bad entry raises
    InvalidArgumentError at the next such call of the same configuration (which is then not made; a varlen forward's
    backward is one) or at check_deferred(), and the bad call's outputs are NaN (its inputs, a KV cache included,
    are not written). defer_checks(False) (or FLASHC_DEFER_CHECKS=0) makes each call wait for its verdict and raise
    at once (a stream synchronization a call). Under CUDA-graph capture nothing is checked at launch either way."""
    global _defer_checks
    _defer_checks = bool(defer)


def check_deferred(wait=True):
    """Raises the first bad verdict of the calls made under defer_checks(True) (wait: after they finish)."""
    for bundle in list(_checked_bundles):
        bundle.check_deferred(wait)


def _launch_checked(bundle, program, device, args):
    if _checked_bundles.get(bundle) is not _defer_checks:
        bundle.defer_checks(_defer_checks)
        _checked_bundles[bundle] = _defer_checks
    _launch(bundle, program, device, args)


def _varlen_config(q, k, v, cu_seqlens_q, cu_seqlens_k, causal, window, softcap, scale):
    def need(cond, text):
        if not cond:
            raise InvalidArgumentError("varlen_attention: " + text)
    for name, t in (("q", q), ("k", k), ("v", v), ("cu_seqlens_q", cu_seqlens_q), ("cu_seqlens_k", cu_seqlens_k)):
        need(isinstance(t, torch.Tensor), "%s must be a tensor, got %s" % (name, type(t).__name__))
        need(t.is_cuda, "%s must be on a CUDA device, got %s" % (name, t.device))
    need(q.dim() == 3 and k.dim() == 3 and v.dim() == 3,
         "q, k and v must be packed [total tokens, heads, head_dim], got %s, %s and %s" % (
             list(q.shape), list(k.shape), list(v.shape)))
    need(q.dtype in _HALF_DTYPES, "q must be bfloat16 or float16, got %s" % q.dtype)
    need(k.dtype == q.dtype and v.dtype == q.dtype, "k and v must have q's dtype %s, got %s and %s" % (
        q.dtype, k.dtype, v.dtype))
    for name, cu in (("cu_seqlens_q", cu_seqlens_q), ("cu_seqlens_k", cu_seqlens_k)):
        need(cu.dtype == torch.int32 and cu.dim() == 1 and cu.shape[0] >= 1,
             "%s must be int32 [batch + 1], got %s %s" % (name, cu.dtype, list(cu.shape)))
    need(cu_seqlens_q.shape[0] == cu_seqlens_k.shape[0], "cu_seqlens_q and cu_seqlens_k must have the same length "
         "(batch + 1), got %d and %d" % (cu_seqlens_q.shape[0], cu_seqlens_k.shape[0]))
    need(k.shape[:2] == v.shape[:2] and k.shape[2] == q.shape[2],
         "k %s and v %s must agree with each other and with q's head_dim %d" % (list(k.shape), list(v.shape),
                                                                              q.shape[2]))
    need(q.shape[1] % k.shape[1] == 0, "q's heads (%d) must be a multiple of k's (%d)" % (q.shape[1], k.shape[1]))
    return VarlenConfig(_HALF_DTYPES[q.dtype], q.shape[1], k.shape[1], q.shape[2], value_head_dim=v.shape[2],
                        causal=causal, window=window, softcap=softcap or None, scale=scale)


def varlen_attention(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q=None, max_seqlen_k=None, causal=False,
                     window_size=(-1, -1), softcap=0.0, scale=None, return_lse=False):
    """Attention over packed variable-length sequences, shaped like flash-attn's flash_attn_varlen_func.

    q [total_q, Hq, D], k / v [total_k, Hkv, D / Dv]; cu_seqlens_q / cu_seqlens_k int32 [batch + 1]: sequence b's
    queries are rows cu_seqlens_q[b] .. cu_seqlens_q[b + 1] - 1, its keys rows cu_seqlens_k[b] .. cu_seqlens_k[b + 1]
    - 1. max_seqlen_q / max_seqlen_k are accepted for flash-attn's signature and not needed (the kernels walk each
    sequence's own tiles). causal / window_size (left, right; -1 unbounded) align each sequence's bottom-right corner.
    bfloat16 or float16, head dims multiples of 8 from 40 to 256, sm_90a. Returns out [total_q, Hq, Dv] (rows
    outside every sequence are not written) and, with return_lse, lse [Hq, total_q] float32 (natural log).
    Differentiable in q, k and v (no softcap); rows outside every sequence get gradient 0. Offsets that decrease,
    start below 0 or reach past the rows raise InvalidArgumentError naming the entry (see defer_checks: at once, or
    at the next call, the backward included); out and lse (and the gradients) are then NaN.
    """
    window = None if tuple(window_size) == (-1, -1) else tuple(window_size)
    key = _signature((q, k, v, cu_seqlens_q, cu_seqlens_k), ("varlen", causal, window, softcap, scale))
    config = _memo_config(key, lambda: _varlen_config(q, k, v, cu_seqlens_q, cu_seqlens_k, causal, window, softcap,
                                                      scale))
    if torch.is_grad_enabled() and any(t.requires_grad for t in (q, k, v)):
        if config.softcap:
            raise InvalidArgumentError("varlen_attention: no gradient with a softcap yet (call it under "
                                       "torch.no_grad() for the forward)")
        out, lse = _VarlenOutput.apply(q, k, v, cu_seqlens_q, cu_seqlens_k, config)
    else:
        out, lse = _varlen_forward(config, q, k, v, cu_seqlens_q, cu_seqlens_k)
    return (out, lse) if return_lse else out


def _varlen_forward(config, q, k, v, cu_seqlens_q, cu_seqlens_k):
    out = torch.empty(q.shape[0], q.shape[1], config.value_head_dim, dtype=q.dtype, device=q.device)
    lse = torch.empty(q.shape[1], q.shape[0], dtype=torch.float32, device=q.device)
    if _poison_enabled():
        out.fill_(float("nan"))
        lse.fill_(float("nan"))
    _launch_checked(cache.load_bundle(config), config.program, q.device,
                    dict(q=q, k=k, v=v, cu_seqlens_q=cu_seqlens_q, cu_seqlens_k=cu_seqlens_k, out=out, lse=lse))
    return out, lse


class _VarlenOutput(torch.autograd.Function):
    """out and lse of packed sequences; the backward program (delta, the key plan, the warp-specialised backward,
    dQ's conversion) gives dq, dk, dv."""

    @staticmethod
    def forward(ctx, q, k, v, cu_seqlens_q, cu_seqlens_k, config):
        out, lse = _varlen_forward(config, q, k, v, cu_seqlens_q, cu_seqlens_k)
        ctx.config = config
        ctx.save_for_backward(q, k, v, cu_seqlens_q, cu_seqlens_k, out, lse)
        ctx.mark_non_differentiable(lse)
        ctx.set_materialize_grads(False)
        return out, lse

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, dout, _dlse):
        if dout is None:
            return None, None, None, None, None, None
        q, k, v, cu_q, cu_k, out, lse = ctx.saved_tensors
        # dk, dv zeroed: the kernels write the rows of sequences only, and a row outside every sequence has gradient 0
        # (dq's conversion writes every row).
        dq = _output(q.shape, q.dtype, q.device)
        dk, dv = torch.zeros_like(k), torch.zeros_like(v)
        _launch_checked(cache.load_bundle(ctx.config), ctx.config.program + "_backward", q.device,
                        dict(q=q, k=k, v=v, cu_seqlens_q=cu_q, cu_seqlens_k=cu_k, out=out, lse=lse,
                             dout=dout.contiguous(), dq=dq, dk=dk, dv=dv))
        return dq, dk, dv, None, None, None


# ---------------------------------------------------------------------- FlexAttention's names
class BlockMask:
    """What flashc.torch.create_block_mask returns: the mask_mod and the sizes it was made for. Nothing is built:
    the kernels classify the blocks themselves (by interval arithmetic over a block's indices, or, for a modifier
    that reads tensors, with a small kernel of the bundle run before the attention)."""

    def __init__(self, mask_mod, batch, heads, q_len, kv_len):
        self.mask_mod, self.seq_lengths = mask_mod, (q_len, kv_len)
        self.shape = (batch, heads, q_len, kv_len)

    def __repr__(self):
        return "flashc.torch.BlockMask(shape=%s, mask_mod=%s)" % (self.shape, getattr(self.mask_mod, "__name__", "?"))


def create_block_mask(mask_mod, B, H, Q_LEN, KV_LEN, device="cuda", BLOCK_SIZE=128, _compile=False):
    """FlexAttention's create_block_mask: keeps mask_mod(b, h, q_idx, kv_idx) for flex_attention (B, H may be None:
    every batch / head). Costs nothing: no mask is evaluated here."""
    if not callable(mask_mod) and not isinstance(mask_mod, str):
        raise InvalidArgumentError("create_block_mask: mask_mod must be a function of (b, h, q_idx, kv_idx), got %s"
                                   % type(mask_mod).__name__)
    for name, n in (("Q_LEN", Q_LEN), ("KV_LEN", KV_LEN)):
        if not isinstance(n, int) or n < 0:
            raise InvalidArgumentError("create_block_mask: %s must be an int >= 0, got %r" % (name, n))
    return BlockMask(mask_mod, B, H, Q_LEN, KV_LEN)


# Causal masks spelled as a modifier: the dedicated causal path instead (its loop bounds need no interval analysis).
_CAUSAL_TEXTS = ("v0 = ge q k; yield v0", "v0 = le k q; yield v0")


def flex_attention(query, key, value, score_mod=None, block_mask=None, scale=None, enable_gqa=False,
                   return_lse=False, kernel_options=None):
    """FlexAttention's flex_attention on flashc's kernels: score_mod(score, b, h, q_idx, kv_idx) and the block mask's
    mask_mod(b, h, q_idx, kv_idx) are traced into the compiled configuration (flashc.score_mod, flashc.mask_mod);
    the tensors they read are the call's arguments. Indices are top-left (q_idx, kv_idx count from 0), as Flex's.
    kernel_options are Flex's and ignored. Returns out, or (out, lse) with return_lse (lse in natural log)."""
    causal, mask_mod = False, None
    if block_mask is not None:
        if not isinstance(block_mask, BlockMask):
            raise InvalidArgumentError("flex_attention: block_mask must come from flashc.torch.create_block_mask "
                                       "(a FlexAttention BlockMask holds a built mask flashc does not read), got %s"
                                       % type(block_mask).__name__)
        q_len, kv_len = block_mask.seq_lengths
        if (q_len, kv_len) != (query.shape[-2], key.shape[-2]):
            raise InvalidArgumentError("flex_attention: the block mask is for Q_LEN=%d, KV_LEN=%d, the inputs have "
                                       "%d queries and %d keys" % (q_len, kv_len, query.shape[-2], key.shape[-2]))
        mask_mod = block_mask.mask_mod
        # (flashc's causal is bottom-right aligned: the same keys as Flex's top-left q_idx >= kv_idx when Sq == Sk)
        if q_len == kv_len and not isinstance(mask_mod, str) and _mask_mod_text(mask_mod) in _CAUSAL_TEXTS:
            causal, mask_mod = True, None
    return attention(query, key, value, causal=causal, scale=scale, enable_gqa=enable_gqa, return_lse=return_lse,
                     mask_mod=mask_mod, score_mod=score_mod)


# ---------------------------------------------------------------------- FFN
def _ffn_inputs(config, x, w1, b1, w2, b2, w_gate):
    if config.gated:
        args = dict(x=x, w_gate=w_gate, w_up=w1, w2=w2)
    else:
        args = dict(x=x, w1=w1, w2=w2)
        if b1 is not None:
            args["b1"] = b1
    if b2 is not None:
        args["b2"] = b2
    return args


def _ffn_forward(config, x, w1, b1, w2, b2, w_gate, train=False):
    """(y [..., d_out], the inputs in the kernels' layout: x as [rows, d], w1, b1, w2, b2, w_gate, and the saved
    activations: train=True runs the training forward, which also writes what the backward reads
    (config.saved_names(), [rows, h] each); else an empty tuple)."""
    lead = tuple(x.shape[:-1])
    # Any width: rows that are not whole 16 bytes (d, h or d_out such as 100, 1001, 77 in bf16) are padded
    # copies, outputs get padded row strides (_kernel_layout, _output).
    x2 = _kernel_layout(x.reshape(-1, config.d_model), pad_rows=True)
    w1, w2 = _kernel_layout(w1, pad_rows=True), _kernel_layout(w2, pad_rows=True)
    b1 = None if b1 is None else _kernel_layout(b1)
    b2 = None if b2 is None else _kernel_layout(b2)
    w_gate = None if w_gate is None else _kernel_layout(w_gate, pad_rows=True)
    rows = x2.shape[0]
    y = _output((rows, config.d_out), x.dtype, x.device, pad_rows=True)
    saved = tuple(_output((rows, config.d_hidden), x.dtype, x.device, pad_rows=True)
                  for _ in config.saved_names()) if train else ()
    if rows > 0:
        args = _ffn_inputs(config, x2, w1, b1, w2, b2, w_gate)
        args["y"] = y
        args.update(zip(config.saved_names(), saved))
        _run(config, "forward_train" if train else "forward", x.device, args)
    return y.reshape(lead + (config.d_out,)), (x2, w1, b1, w2, b2, w_gate), saved


def _ffn_backward(config, lead, x2, w1, b1, w2, b2, w_gate, saved, dy):
    """(dx [*lead, d], dw1, db1, dw2, db2, dw_gate), None for an absent input; the inputs in the kernels' layout
    and the saved activations (as _ffn_forward(train=True) returns them). dw1 is the up projection's gradient of a
    gated FFN."""
    dev, dt = x2.device, x2.dtype
    grads = {"dx": _output(x2.shape, dt, dev, pad_rows=True), "dw2": _output(w2.shape, dt, dev, pad_rows=True)}
    if config.gated:
        grads["dw_gate"] = _output(w_gate.shape, dt, dev, pad_rows=True)
        grads["dw_up"] = _output(w1.shape, dt, dev, pad_rows=True)
    else:
        grads["dw1"] = _output(w1.shape, dt, dev, pad_rows=True)
        if b1 is not None:
            grads["db1"] = _output(b1.shape, dt, dev)
    if b2 is not None:
        grads["db2"] = _output(b2.shape, dt, dev)
    if x2.shape[0] == 0:
        for g in grads.values():
            g.zero_()
    else:
        names = config.saved_names()
        if len(saved) != len(names):  # e.g. the forward ran without a gradient wanted: nothing was saved
            raise InvalidArgumentError("flashc.ffn backward: the training forward's saved activations (%s) are "
                                       "missing (got %d tensors); run the forward with a gradient wanted"
                                       % (", ".join(names), len(saved)))
        args = _ffn_inputs(config, x2, w1, b1, w2, b2, w_gate)
        args.update(zip(names, saved))
        args["dy"] = _kernel_layout(dy.reshape(-1, config.d_out), pad_rows=True)
        args.update(grads)
        _run(config, "backward", dev, args)
    dx = grads["dx"].reshape(tuple(lead) + (config.d_model,))
    dw1 = grads["dw_up"] if config.gated else grads["dw1"]
    return dx, dw1, grads.get("db1"), grads["dw2"], grads.get("db2"), grads.get("dw_gate")


class _Ffn(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, w1, b1, w2, b2, w_gate, config, train=None):
        # The training forward (it saves the activations the backward reads) only when a gradient is wanted: ffn()
        # decides it before apply, from the grad mode too (forward runs with grad mode off, and ctx.needs_input_grad
        # is each input's requires_grad whatever the mode: under torch.no_grad() it would still say True).
        if train is None:
            train = any(ctx.needs_input_grad[:6])
        y, inputs, saved = _ffn_forward(config, x, w1, b1, w2, b2, w_gate, train=train)
        ctx.config = config
        ctx.lead = tuple(x.shape[:-1])
        ctx.save_for_backward(*inputs, *saved)
        ctx.set_materialize_grads(False)
        return y

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, dy):
        if dy is None:  # y did not reach the loss
            return (None,) * 8
        tensors = ctx.saved_tensors
        return _ffn_backward(ctx.config, ctx.lead, *tensors[:6], tensors[6:], dy) + (None, None)


def ffn(x, w1, b1=None, w2=None, b2=None, activation="gelu_tanh", w_gate=None):
    """Fused feed-forward network y = act(x @ w1 + b1) @ w2 + b2.

    x [..., d], w1 [d, h], b1 [h], w2 [h, d_out], b2 [d_out] (weights as in x @ w, i.e. nn.Linear's weight
    transposed), bfloat16 or float16 on one CUDA device; d, h and d_out may be any size. The kernels read rows
    16-byte aligned: a tensor whose width is not a multiple of 8 (d = 100, h = 1001, ...) is copied into rows
    padded to the next multiple of 8 unless its rows already are (a view such as
    torch.empty(d, 1008)[:, :1001]: keep weights that way to avoid the copy), and y and the gradients of such
    widths have padded row strides (not contiguous). activation: "gelu_tanh", "gelu_erf", "silu" or "relu".
    Gated (w_gate [d, h] given; w1 is then the up projection; no b1):
    y = (act(x @ w_gate) * (x @ w1)) @ w2 + b2.
    """
    op = "ffn"
    if w2 is None:
        raise InvalidArgumentError("flashc.ffn: w2 is required")
    if _use_ops(x):  # torch.compile: the options travel as one literal string (_torch_ops validates them)
        train = torch.is_grad_enabled() and any(t is not None and t.requires_grad for t in (x, w1, b1, w2, b2, w_gate))
        return torch.ops.flashc.ffn_fwd(x, w1, b1, w2, b2, w_gate, repr((activation,)), train)[0]

    def make():
        infos = {}
        for name, t in (("x", x), ("w1", w1), ("b1", b1), ("w2", w2), ("b2", b2), ("w_gate", w_gate)):
            infos[name] = None if t is None else _info(op, name, t)
        return ffn_config(infos["x"], infos["w1"], infos["b1"], infos["w2"], infos["b2"], activation=activation,
                          w_gate=infos["w_gate"])

    # x's leading dims (the rows) do not enter the configuration: only its width, dtype and device.
    x_sig = (x.shape[-1], x.dtype, x.device) if isinstance(x, torch.Tensor) and x.dim() > 0 else None
    key = _signature((w1, b1, w2, b2, w_gate), ("ffn", x_sig, activation))
    key = key if x_sig is not None else None
    config = _memo_config(key, make)
    train = torch.is_grad_enabled() and any(t is not None and t.requires_grad for t in (x, w1, b1, w2, b2, w_gate))
    native = _native_ffn(config) if key is not None and x.is_cuda else None
    if native is not None:
        module, plan, _ = native
        try:
            return module.ffn(plan, x, w1, b1, w2, b2, w_gate, train)
        except module.LaunchError as e:
            _native.raise_launch_error(e)
    return _Ffn.apply(x, w1, b1, w2, b2, w_gate, config, train)


# The native path's tensor slots (csrc/ffn_native.cpp's Slot) of each logical name a program's mapping holds.
_NATIVE_SLOTS = {"x": "x", "w1": "w1", "w_up": "w1", "b1": "b1", "w2": "w2", "b2": "b2", "w_gate": "w_gate",
                 "y": "y", "dy": "dy", "dx": "dx", "dw1": "dw1", "dw_up": "dw1", "db1": "db1", "dw2": "dw2",
                 "db2": "db2", "dw_gate": "dw_gate"}
# FfnConfig.key -> (extension, FfnPlan, its bundle) or None. A plan is never freed: a pending backward holds a raw
# pointer to it (the C++ node's saved data), so one replaced (another bundle resolved for the key after
# cache.clear_loaded) goes to _native_retired; of two threads making a key's plan, the first to take the lock
# publishes it and the other returns that one (its own was never launched).
_native_plans = {}
_native_retired = []
_native_lock = threading.Lock()


def _native_ffn(config):
    """(the native extension, config's FfnPlan, its bundle), or None where flashc.torch.ffn keeps the Python Function:
    FLASHC_NATIVE=0, the extension did not build, or a width is not whole 16-byte rows (the Python path pads
    those)."""
    if not _native.enabled():  # (read at each call: a benchmark times both paths in one process)
        return None
    found = _native_plans.get(config.key, False)
    if found is None:
        return None
    if found is not False:
        resolved = _resolved.get((config.key, "forward"))
        if resolved is not None and resolved[0] is found[2]:
            return found
        # (cache.clear_loaded forgot the bundle, or another one resolved: plan again, as the Python path loads again)
    plan = _make_native_plan(config)
    with _native_lock:
        current = _native_plans.get(config.key, False)
        if current is not False and current is not found:  # another thread published first
            return current
        if found:
            _native_retired.append(found)
        _native_plans[config.key] = plan
    return plan


def _make_native_plan(config):
    dtype = _TORCH_DTYPES.get(config.dtype)
    widths = (config.d_model, config.d_hidden, config.d_out)
    if dtype is None or any(w != _padded_width(w, dtype) for w in widths):
        return None
    try:
        resolved = [_program(config, d) for d in ("forward", "forward_train", "backward")]
    except InvalidBundleError:  # a bundle without one of them: the Python path says so when it is needed
        return None
    bundle = resolved[0][0]
    # (A stand-in bundle, the CPU tests' fakes, has no runtime handle: the Python path.)
    if not all(r[0] is bundle for r in resolved) or not isinstance(bundle, Bundle):
        return None
    module = _native.module()
    if module is None:
        return None
    slots = dict(_NATIVE_SLOTS, **{name: "saved%d" % i for i, name in enumerate(config.saved_names())})
    programs = []
    for _, program, mapping in resolved:
        params = {slots[k]: v for k, v in mapping.items()}
        programs += [program, [params.get(slot, "") for slot in module.SLOTS]]
    plan = module.FfnPlan(bundle._require().value, *programs, d_model=config.d_model, d_hidden=config.d_hidden,
                          d_out=config.d_out, gated=config.gated, saved_count=len(config.saved_names()))
    return (module, plan, bundle)  # (the bundle kept, and so its handle open, while the plan lives)


from . import _torch_ops  # noqa: E402,F401  (registers torch.ops.flashc.*; it uses the functions above)


def _moe_config(x, router, w1, w2, w_up, top_k, gating, renormalize, activation):
    def need(cond, text):
        if not cond:
            raise InvalidArgumentError("moe: " + text)
    for name, t in (("x", x), ("router", router), ("w1", w1), ("w2", w2)) + ((("w_up", w_up),) if w_up is not None
                                                                             else ()):
        need(isinstance(t, torch.Tensor), "%s must be a tensor, got %s" % (name, type(t).__name__))
        need(t.is_cuda, "%s must be on a CUDA device, got %s" % (name, t.device))
        need(t.dtype == x.dtype, "%s must have x's dtype %s, got %s" % (name, x.dtype, t.dtype))
    need(x.dtype in _HALF_DTYPES, "x must be bfloat16 or float16, got %s" % x.dtype)
    need(x.dim() == 2, "x must be [tokens, d], got %s" % list(x.shape))
    d = x.shape[1]
    need(router.dim() == 2 and router.shape[0] == d, "router must be [d, experts] = [%d, E], got %s" % (
        d, list(router.shape)))
    experts = router.shape[1]
    need(w1.dim() == 3 and w1.shape[:2] == (experts, d), "w1 must be [experts, d, h] = [%d, %d, h], got %s" % (
        experts, d, list(w1.shape)))
    h = w1.shape[2]
    need(w_up is None or tuple(w_up.shape) == tuple(w1.shape), "w_up must be w1's shape %s, got %s" % (
        list(w1.shape), list(w_up.shape) if w_up is not None else None))
    need(w2.dim() == 3 and w2.shape[:2] == (experts, h), "w2 must be [experts, h, d_out] = [%d, %d, d_out], got %s" % (
        experts, h, list(w2.shape)))
    return MoeConfig(_HALF_DTYPES[x.dtype], d, h, experts, top_k, out_dim=w2.shape[2], gating=gating,
                     renormalize=renormalize, activation=activation, gated=w_up is not None)


_SAVED_DTYPES = {"i32": torch.int32, "f32": torch.float32}


def _moe_inputs(x, router, w1, w2, w_up):
    args = dict(x=x, router=router, w1=w1, w2=w2)
    if w_up is not None:
        args["w_up"] = w_up
    return args


def _moe_forward(config, x, router, w1, w2, w_up, train):
    """(y [T, d_out], the saved tensors: MoeConfig.saved's, written by the training forward when `train`, else an
    empty list)."""
    tokens = x.shape[0]
    y = torch.empty(tokens, config.out_dim, dtype=x.dtype, device=x.device)
    layout = config.saved(tokens) if train else []
    saved = [torch.empty(shape, dtype=_SAVED_DTYPES.get(dtype, x.dtype), device=x.device) for _, shape, dtype in layout]
    if tokens == 0:
        return y, saved
    args = _moe_inputs(x, router, w1, w2, w_up)
    args["y"] = y
    args.update((name, t) for (name, _, _), t in zip(layout, saved))
    _launch(cache.load_bundle(config), config.forward_train_program if train else config.program, x.device, args)
    return y, saved


def _moe_backward(config, x, router, w1, w2, w_up, saved, dy):
    """[dx, drouter, dw1, dw2] (+ [dw_up] when gated) from the training forward's saved tensors."""
    grads = {"dx": torch.empty_like(x), "drouter": torch.empty_like(router), "dw1": torch.empty_like(w1),
             "dw2": torch.empty_like(w2)}
    if w_up is not None:
        grads["dw_up"] = torch.empty_like(w_up)
    if x.shape[0] == 0:
        for g in grads.values():
            g.zero_()
    else:
        layout = config.saved(x.shape[0])
        if len(saved) != len(layout):
            raise InvalidArgumentError("flashc.moe backward: the training forward's saved tensors are missing (got %d); "
                                       "run the forward with a gradient wanted" % len(saved))
        args = _moe_inputs(x, router, w1, w2, w_up)
        args.update((name, t) for (name, _, _), t in zip(layout, saved))
        args["dy"] = dy.contiguous()
        args.update(grads)
        _launch(cache.load_bundle(config), config.backward_program, x.device, args)
    return [grads["dx"], grads["drouter"], grads["dw1"], grads["dw2"]] + ([grads["dw_up"]] if w_up is not None else [])


class _Moe(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, router, w1, w2, w_up, config, train):
        y, saved = _moe_forward(config, x, router, w1, w2, w_up, train)
        ctx.config = config
        ctx.set_materialize_grads(False)
        ctx.save_for_backward(x, router, w1, w2, w_up, *saved)
        return y

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, dy):
        if dy is None:  # y did not reach the loss
            return (None,) * 7
        x, router, w1, w2, w_up, *saved = ctx.saved_tensors
        grads = _moe_backward(ctx.config, x, router, w1, w2, w_up, saved, dy)
        return tuple(grads[:4]) + (grads[4] if w_up is not None else None, None, None)


def moe(x, router, w1, w2, w_up=None, top_k=2, gating="softmax", renormalize=False, activation="silu"):
    """A mixture-of-experts layer (flash.moe; docs/design/moe.md): each token of x [T, d] goes to the top_k experts by
    the softmax (or sigmoid) of its router logits x · router [d, E] (the logits in x's dtype, as a bf16 router matmul
    gives them: the experts are chosen on those values), weighted by those scores (divided by their sum with
    renormalize: Mixtral's routing; sigmoid + renormalize: DeepSeek-V3's); expert e is act(x · w1[e]) · w2[e], or
    with w_up (act(x · w1[e]) ⊙ (x · w_up[e])) · w2[e] (SwiGLU with silu); y [T, d_out] is the weighted sum.
    w1 / w_up [E, d, h], w2 [E, h, d_out]; bfloat16 or float16, contiguous; E a multiple of 8 up to 256, top_k up to
    32, d, h, d_out multiples of 8; sm_90a. Differentiable in x, router and the weights: the training forward saves
    the routing and the experts' activations, and the backward takes the gradient through the routing weights, the
    gating and the router (the top-k choice itself is piecewise constant: no gradient through it)."""
    train = torch.is_grad_enabled() and any(t is not None and t.requires_grad for t in (x, router, w1, w2, w_up))
    if _use_ops(x):  # torch.compile: the options travel as one literal string (_torch_ops checks them)
        return torch.ops.flashc.moe_fwd(x, router, w1, w2, w_up, repr((top_k, gating, renormalize, activation)),
                                        train)[0]
    config = _moe_memo_config(x, router, w1, w2, w_up, top_k, gating, renormalize, activation)
    for name, t in (("x", x), ("router", router), ("w1", w1), ("w2", w2), ("w_up", w_up)):
        if t is not None and not t.is_contiguous():
            raise InvalidArgumentError("moe: %s must be contiguous" % name)
    return _Moe.apply(x, router, w1, w2, w_up, config, train)


def _moe_memo_config(x, router, w1, w2, w_up, top_k, gating, renormalize, activation):
    """moe's configuration, memoised on everything but x's token count (which does not enter it)."""
    x_sig = (x.dim(), x.shape[-1], x.dtype, x.device) if isinstance(x, torch.Tensor) and x.dim() > 0 else None
    key = _signature((router, w1, w2, w_up), ("moe", x_sig, top_k, gating, renormalize, activation))
    return _memo_config(key if x_sig is not None else None,
                        lambda: _moe_config(x, router, w1, w2, w_up, top_k, gating, renormalize, activation))
