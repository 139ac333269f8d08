"""flashc as an attention implementation of Hugging Face transformers models (transformers >= 4.48).

    import flashc.integrations.transformers as fc_hf
    name = fc_hf.register()                                   # "fc_attention"
    model = AutoModelForCausalLM.from_config(cfg, attn_implementation=name, dtype=torch.bfloat16)
    model.set_attn_implementation(name)                       # or switch a loaded model

register() puts one function in transformers' AttentionInterface and, where transformers has it (>= 4.53),
a mask function in its AttentionMaskInterface under the same name, so that models built on
transformers.masking_utils hand flashc no mask at all for the patterns flashc computes itself.

What it maps (the attention function's contract: query [B, Hq, Sq, D], key/value [B, Hkv, Sk, D], output
[B, Sq, Hq, Dv] and no attention weights):
- causal: the `is_causal` argument, else `module.is_causal`; grouped-query attention: key/value are passed
  with their own Hkv heads (flashc's enable_gqa, never repeated).
- `scaling` -> scale, `softcap` (Gemma 2) -> softcap, `sliding_window` W -> window (W - 1, 0) when causal
  (a query sees itself and the W - 1 keys before it, transformers' sliding_window_overlay), (W, W) otherwise
  (transformers' bidirectional window: |q - k| <= W).
- a mask tensor (4-D, boolean or additive 0 / -inf): used only to check that it is exactly the pattern above,
  bottom-right aligned (key columns after the last visible one, the unused slots of a static cache, are cut
  off first). Any other mask raises instead of being ignored: padding and packed sequences ("padding masks
  need the variable-length path (issue #17), not supported yet"), arbitrary patterns and additive biases.
  The verdict is kept per mask tensor, so a model checks each mask once per forward, not once per layer.
- dtypes: bfloat16 and float16. float32 inputs are cast to the autocast dtype inside an enabled
  torch.autocast region (the output stays in that dtype, as autocast's own ops do) and are an error
  otherwise: flashc has no float32 kernels, and a silent cast would change a float32 model's numerics.
- dropout > 0 (a model in training mode with attention dropout) raises: flashc has no attention dropout.
- attention sinks (`s_aux`), position biases (`position_bias`) and packed-sequence lengths (`cu_seq_lens_*`)
  raise; `output_attentions` gives no weights (None), as with sdpa.

The name must not contain "flash", "sdpa", "flex_attention" or "paged": transformers treats any name containing
"flash" as a FlashAttention kernel (it tries to load it from the kernels hub), and the others select its own
backends' checks. Masks given as None by transformers follow flashc's bottom-right alignment: the registered
mask function gives None only when that alignment holds (q_offset + Sq == kv_offset + Sk).

Nothing here is imported by `import flashc` or `import flashc.integrations`; torch and transformers are
imported when register() or the attention function runs.
"""

import weakref

__all__ = ["DEFAULT_NAME", "register", "attention_forward", "make_attention_forward", "mask_function",
           "PADDING_MESSAGE"]

DEFAULT_NAME = "fc_attention"
# Substrings of attention implementation names that transformers interprets (utils.generic
# .is_flash_attention_requested: "flash" in the name; modeling_utils: "sdpa", "flex_attention", "paged|").
_RESERVED_SUBSTRINGS = ("flash", "sdpa", "flex_attention", "paged")
_RESERVED_NAMES = ("eager",)

PADDING_MESSAGE = ("padding masks need the variable-length path (issue #17), not supported yet: the attention "
                   "mask hides keys that the %s pattern shows (a padded batch, packed sequences, or a window "
                   "flashc was not told about); run unpadded sequences (batch size 1 or equal lengths without "
                   "padding) or another attn_implementation")

_MIN_VERSION = (4, 48)


def _errors():
    from .. import errors
    return errors


def _unsupported(message):
    return _errors().UnsupportedError("flashc (transformers attention): " + message)


def _invalid(message):
    return _errors().InvalidArgumentError("flashc (transformers attention): " + message)


# ------------------------------------------------------------------------------------------ registration
def _version_tuple(text):
    parts = []
    for piece in text.split(".")[:2]:
        digits = "".join(ch for ch in piece if ch.isdigit())
        parts.append(int(digits) if digits else 0)
    return tuple(parts)


def _check_name(name):
    if not isinstance(name, str) or not name:
        raise _invalid("the attention implementation name must be a non-empty string, got %r" % (name,))
    lowered = name.lower()
    bad = [s for s in _RESERVED_SUBSTRINGS if s in lowered]
    if bad or lowered in _RESERVED_NAMES or "/" in name or ":" in name:
        raise _invalid("cannot register %r: transformers reserves names %s (its own backends: any name with "
                       "\"flash\" is loaded as a FlashAttention kernel, \"sdpa\"/\"flex_attention\"/\"paged\" "
                       "select their checks, \"org/name\" is a hub kernel); pick another, e.g. %r"
                       % (name, "containing " + ", ".join(repr(s) for s in _RESERVED_SUBSTRINGS)
                          + ", equal to 'eager' or with '/' or ':'", DEFAULT_NAME))


def register(name=DEFAULT_NAME, attention=None):
    """Register flashc as transformers attention implementation `name` (default "fc_attention") and return
    the name, for `attn_implementation=name` / `model.set_attn_implementation(name)`.

    attention: the function that computes attention, called as
    attention(q, k, v, causal=, scale=, window=, softcap=, enable_gqa=True) with q [B, Hq, Sq, D] and k, v
    [B, Hkv, Sk, D], returning [B, Hq, Sq, Dv]; default flashc.torch.attention (looked up at each call). Tests
    pass a stand-in. Registering the same name again replaces the earlier functions."""
    _check_name(name)
    try:
        import transformers
    except ImportError as e:
        raise ImportError("flashc.integrations.transformers.register needs the transformers package "
                          "(pip install 'transformers>=4.48'): %s" % e) from e
    if _version_tuple(transformers.__version__) < _MIN_VERSION:
        raise ImportError("flashc.integrations.transformers needs transformers >= %d.%d (AttentionInterface), "
                          "found %s" % (_MIN_VERSION + (transformers.__version__,)))
    from transformers import AttentionInterface
    AttentionInterface.register(name, make_attention_forward(attention))
    try:  # transformers >= 4.53: masks come from the implementation's mask function
        from transformers.masking_utils import AttentionMaskInterface
    except ImportError:  # older: models build a 4-D additive mask, which the attention function checks
        AttentionMaskInterface = None
    if AttentionMaskInterface is not None:
        AttentionMaskInterface.register(name, mask_function)
    return name


# ---------------------------------------------------------------------------------------- mask function
def _key_range_unpadded(attention_mask, kv_length, kv_offset):
    """Whether the 2-D padding mask [B, L] (None: none) shows every key of kv_offset .. kv_offset + kv_length
    (positions past L count as padding, as transformers' prepare_padding_mask pads them)."""
    if attention_mask is None:
        return True
    if attention_mask.dim() != 2 or attention_mask.shape[-1] < kv_offset + kv_length:
        return False
    return bool(attention_mask[:, kv_offset:kv_offset + kv_length].all())


def mask_function(batch_size, q_length, kv_length, q_offset=0, kv_offset=0, mask_function=None,
                  attention_mask=None, local_size=None, allow_is_causal_skip=True,
                  allow_is_bidirectional_skip=False, **kwargs):
    """transformers AttentionMaskInterface function: None where flashc computes the mask itself (a plain causal
    or bidirectional mask, no padding in the keys, no local pattern that reaches the keys (sliding window or
    chunk: local_size <= Sk), and for causal masks the bottom-right alignment q_offset + Sq == kv_offset + Sk),
    else the boolean 4-D mask of transformers.masking_utils.sdpa_mask, which the attention function checks."""
    from transformers.masking_utils import sdpa_mask, causal_mask_function
    local_reaches = local_size is not None and kv_length >= local_size
    if (allow_is_causal_skip or allow_is_bidirectional_skip) and not local_reaches:
        kv_offset_i = int(kv_offset)
        if _key_range_unpadded(attention_mask, kv_length, kv_offset_i):
            # causal (allow_is_causal_skip: create_causal_mask's plain pattern) needs bottom-right alignment;
            # bidirectional needs none.
            if allow_is_bidirectional_skip or int(q_offset) + q_length == kv_offset_i + kv_length:
                return None
    if mask_function is None:
        mask_function = causal_mask_function
    return sdpa_mask(batch_size=batch_size, q_length=q_length, kv_length=kv_length, q_offset=q_offset,
                     kv_offset=kv_offset, mask_function=mask_function, attention_mask=attention_mask,
                     local_size=local_size, allow_is_causal_skip=False, allow_is_bidirectional_skip=False,
                     **kwargs)


# ----------------------------------------------------------------------------------------- mask checking
# Verdicts per mask tensor: {id: (weakref, version, pattern key, keys kept or the error)}. A forward hands every
# layer the same mask object, so the check (one device synchronisation) runs once per mask, not per layer.
_verdicts = {}
_MAX_VERDICTS = 16


def _pattern_name(causal, window):
    if window is None:
        return "causal" if causal else "full (no mask)"
    return "%s sliding-window (left %d, right %d)" % ("causal" if causal else "bidirectional", window[0], window[1])


def _visible(mask):
    """A 4-D mask as booleans (True: visible). Additive masks must be 0 (visible) or <= half the dtype's lowest
    value / -inf (hidden): other values are a bias flashc cannot apply."""
    import torch
    if mask.dtype == torch.bool:
        return mask
    if not mask.is_floating_point():
        raise _unsupported("the attention mask has dtype %s; expected a boolean or an additive floating-point "
                           "mask" % mask.dtype)
    visible = mask == 0
    hidden = mask <= torch.finfo(mask.dtype).min / 2
    if not bool((visible | hidden).all()):
        raise _unsupported("the additive attention mask holds values other than 0 and -inf (an attention bias, "
                           "e.g. ALiBi or relative positions); flashc applies no bias")
    return visible


def _pattern(seq_q, seq_k, causal, window, device):
    """[Sq, Sk] bool: the keys flashc shows each query (bottom-right aligned: query i at key position
    p = i + Sk - Sq; causal: keys <= p; window (left, right): p - left <= key <= p + right)."""
    import torch
    p = torch.arange(seq_q, device=device).unsqueeze(1) + (seq_k - seq_q)
    j = torch.arange(seq_k, device=device).unsqueeze(0)
    visible = torch.ones(seq_q, seq_k, dtype=torch.bool, device=device)
    if causal:
        visible &= j <= p
    if window is not None:
        visible &= j >= p - window[0]
        if not causal:
            visible &= j <= p + window[1]
    return visible


def _check_mask(mask, seq_q, seq_k, causal, window):
    """The number of keys to keep (trailing keys no query sees are cut) when `mask` is exactly flashc's pattern
    (causal, window) bottom-right aligned over the kept keys; else raises. mask: [B or 1, H or 1, Sq, Sk]."""
    if mask.dim() != 4 or mask.shape[-2] != seq_q or mask.shape[-1] != seq_k:
        raise _unsupported("expected a 4-D attention mask [B, 1, %d, %d] (or None), got shape %s"
                           % (seq_q, seq_k, tuple(mask.shape)))
    visible = _visible(mask)
    pattern = _pattern_name(causal, window)
    # Trailing key columns hidden from every query: a static cache's unused slots (keys past the sequence).
    seen = visible.reshape(-1, seq_k).any(dim=0)
    kept = int(seen.nonzero().max()) + 1 if bool(seen.any()) else seq_k
    expected = _pattern(seq_q, kept, causal, window, mask.device)
    trimmed = visible[..., :kept]
    if bool((trimmed == expected).all()):
        return kept
    # Not flashc's pattern. Keys hidden beyond it (the mask is a subset of the pattern, over the kept keys or
    # all of them): padding or packing. Anything else: a pattern flashc does not compute.
    if not bool((trimmed & ~expected).any()) or not bool(
            (visible & ~_pattern(seq_q, seq_k, causal, window, mask.device)).any()):
        raise _unsupported(PADDING_MESSAGE % pattern)
    raise _unsupported("the attention mask is not the %s pattern flashc computes (bottom-right aligned: query i "
                       "at key position i + Sk - Sq); its mask shows keys outside it (e.g. bidirectional "
                       "blocks, chunked attention or a rotated sliding-window cache)" % pattern)


def _version(t):
    try:
        return t._version
    except RuntimeError:  # an inference tensor (torch.inference_mode) has no version counter: no caching
        return None


def _keys_to_keep(mask, seq_q, seq_k, causal, window):
    key = (tuple(mask.shape), seq_q, seq_k, causal, window)
    version = _version(mask)
    entry = _verdicts.get(id(mask))
    if entry is not None and version is not None:
        ref, cached_version, pattern_key, verdict = entry
        if ref() is mask and cached_version == version and pattern_key == key:
            if isinstance(verdict, Exception):
                raise verdict
            return verdict
    try:
        verdict = _check_mask(mask, seq_q, seq_k, causal, window)
    except _errors().FlashcError as e:
        verdict = e
    if version is not None:
        if len(_verdicts) >= _MAX_VERDICTS:
            _verdicts.clear()
        try:
            _verdicts[id(mask)] = (weakref.ref(mask), version, key, verdict)
        except TypeError:  # not weak-referenceable: no caching
            pass
    if isinstance(verdict, Exception):
        raise verdict
    return verdict


# ------------------------------------------------------------------------------------ attention function
def _window(sliding_window, causal):
    if sliding_window is None:
        return None
    if isinstance(sliding_window, bool) or not isinstance(sliding_window, int) or sliding_window < 1:
        raise _invalid("sliding_window must be a positive int (the number of keys a query sees, itself "
                       "included), got %r" % (sliding_window,))
    return (sliding_window - 1, 0) if causal else (sliding_window, sliding_window)


def _dtype_policy(query, key, value):
    """(q, k, v) in a 16-bit dtype: float32 is cast to the autocast dtype inside an enabled autocast region,
    and is an error otherwise."""
    import torch
    sixteen = (torch.bfloat16, torch.float16)
    if query.dtype in sixteen and key.dtype == query.dtype and value.dtype == query.dtype:
        return query, key, value
    device_type = query.device.type
    if all(t.dtype in sixteen + (torch.float32,) for t in (query, key, value)) and \
            torch.is_autocast_enabled(device_type):
        target = torch.get_autocast_dtype(device_type)
        if target in sixteen:
            return query.to(target), key.to(target), value.to(target)
    raise _invalid("query/key/value have dtypes %s/%s/%s; flashc computes in bfloat16 or float16: load the model "
                   "with dtype=torch.bfloat16 (or float16), or run it under torch.autocast(dtype=torch."
                   "bfloat16)" % (query.dtype, key.dtype, value.dtype))


def _default_attention(q, k, v, **options):
    from .. import torch as flashc_torch  # looked up per call: a monkeypatched flashc.torch.attention is seen
    return flashc_torch.attention(q, k, v, **options)


def make_attention_forward(attention=None):
    """The transformers attention function over `attention` (default flashc.torch.attention); see register()."""
    compute = attention if attention is not None else _default_attention

    def flashc_attention_forward(module, query, key, value, attention_mask, scaling=None, dropout=0.0,
                                 sliding_window=None, softcap=None, is_causal=None, **kwargs):
        return _forward(compute, module, query, key, value, attention_mask, scaling=scaling, dropout=dropout,
                        sliding_window=sliding_window, softcap=softcap, is_causal=is_causal, **kwargs)

    flashc_attention_forward.__doc__ = attention_forward.__doc__
    return flashc_attention_forward


def _forward(compute, module, query, key, value, attention_mask, scaling=None, dropout=0.0, sliding_window=None,
             softcap=None, is_causal=None, **kwargs):
    if dropout:
        raise _unsupported("attention dropout %g is not supported (flashc has no dropout): call model.eval(), or "
                           "set the config's attention_dropout to 0 for training" % dropout)
    for name in ("s_aux", "sinks", "position_bias"):
        if kwargs.get(name) is not None:
            raise _unsupported("%r is not supported (flashc computes no attention sinks or position biases)" % name)
    if kwargs.get("cu_seq_lens_q") is not None or kwargs.get("cu_seq_lens_k") is not None:
        raise _unsupported("packed sequences (cu_seq_lens_q/k): " + PADDING_MESSAGE % "causal")
    if query.dim() != 4 or key.dim() != 4 or value.dim() != 4:
        raise _invalid("expected query/key/value of 4 dimensions [B, H, S, D], got shapes %s, %s, %s"
                       % (tuple(query.shape), tuple(key.shape), tuple(value.shape)))
    causal = bool(is_causal if is_causal is not None else getattr(module, "is_causal", True))
    window = _window(sliding_window, causal)
    seq_q, seq_k = query.shape[2], key.shape[2]
    if attention_mask is not None:
        kept = _keys_to_keep(attention_mask, seq_q, seq_k, causal, window)
        if kept < seq_k:
            key, value = key[:, :, :kept], value[:, :, :kept]
    elif causal and seq_k < seq_q:
        # Without a mask the causal pattern is bottom-right aligned (see mask_function); with fewer keys than
        # queries the first rows would see no key, which no transformers model asks for.
        raise _unsupported("a causal attention without a mask and fewer keys (%d) than queries (%d) is ambiguous "
                           "(top-left vs bottom-right alignment); pass the attention mask" % (seq_k, seq_q))
    query, key, value = _dtype_policy(query, key, value)
    softcap = float(softcap) if softcap else None
    out = compute(query, key, value, causal=causal, scale=scaling, window=window, softcap=softcap, enable_gqa=True)
    return out.transpose(1, 2).contiguous(), None


def attention_forward(module, query, key, value, attention_mask, scaling=None, dropout=0.0, sliding_window=None,
                      softcap=None, is_causal=None, **kwargs):
    """transformers attention function computing with flashc.torch.attention: query [B, Hq, Sq, D], key/value
    [B, Hkv, Sk, D] -> ([B, Sq, Hq, Dv], None). See the module's docstring for what is mapped and what raises."""
    return _forward(_default_attention, module, query, key, value, attention_mask, scaling=scaling,
                    dropout=dropout, sliding_window=sliding_window, softcap=softcap, is_causal=is_causal, **kwargs)
