"""Named sets of configurations (what the benchmark and the GPU tests launch)
and a one-line text form for the command line:

  attention:dtype=bf16,heads=16,kv_heads=16,head_dim=128,causal=1[,value_head_dim=N][,window=L:R][,softcap=C][,scale=S]
            [,backward=auto|rows|transposed][,key_offset=1]
  ffn:dtype=bf16,d=1024,h=4096[,d_out=N],act=gelu_tanh[,b1=1][,b2=1][,gated=1]
  decode:dtype=bf16,heads=32,kv_heads=8,head_dim=128[,value_head_dim=N],queries=1,page_size=64,causal=1[,scale=S]
"""

import dataclasses

from .errors import InvalidArgumentError
from .spec import AttentionConfig, DecodeConfig, FfnConfig, KvAppendConfig, MoeConfig, VarlenConfig, format_f32

# Benchmark: bf16, heads x head_dim = 2048, D in {64, 128}, causal and not (bench/README.md, "Method").
BENCH_ATTENTION = tuple(AttentionConfig("bf16", 2048 // d, 2048 // d, d, causal=c) for d in (64, 128) for c in (False, True))
# Large head dims (bench_attention.py --head-dims 256,192:128): Gemma-style D = 256 and DeepSeek-MLA-style D = 192 with
# Dv = 128, H*Dv = 2048, causal and not.
LARGE_HEAD_DIMS = ((256, 256), (192, 128))
BENCH_ATTENTION_LARGE = tuple(AttentionConfig("bf16", 2048 // dv, 2048 // dv, d, causal=c, value_head_dim=dv)
                              for d, dv in LARGE_HEAD_DIMS for c in (False, True))
# A padded head dim beside the size it pads to: D = 80 computes on 96-column tiles, so it should cost no more than
# D = 96. Equal heads (16, not H*D = 2048, which 80 does not divide), so the two rows differ only by D:
# bench_attention.py --head-dims 80,96 --heads 16 (bench/README.md). Every backward form the default peers time.
BENCH_ATTENTION_PADDED = tuple(AttentionConfig("bf16", 16, 16, d, causal=c, backward_form=f)
                               for d in (80, 96) for c in (False, True) for f in ("auto", "rows", "transposed"))
# FFN rows: y = gelu_tanh(x W1) W2, no biases (the peers' published rows), and a Llama-style gated row,
# y = (silu(x W_gate) * (x W_up)) W2 at M = 16384, d = 4096, h = 11008.
BENCH_FFN_SHAPES = ((16384, 4096, 16384), (16384, 1024, 4096), (65536, 256, 1024), (16384, 4096, 11008))  # (M, d, h)
BENCH_FFN = (tuple(FfnConfig("bf16", d, h, activation="gelu_tanh") for _, d, h in BENCH_FFN_SHAPES[:3])
             + (FfnConfig("bf16", 4096, 11008, activation="silu", gated=True),))

# GPU tests (python/tests/test_gpu_*.py): two query heads so B*H > 1 with B = 2.
TEST_HEAD_DIMS = (32, 64, 96, 128, 256)
TEST_ATTENTION = tuple(
    [AttentionConfig("bf16", 2, 2, d, causal=c) for d in TEST_HEAD_DIMS for c in (False, True)]
    + [AttentionConfig("f16", 2, 2, d, causal=c) for d in (64, 128) for c in (False, True)]
    + [AttentionConfig("bf16", 2, 2, 64, causal=True, window=(16, 0)),
       AttentionConfig("bf16", 2, 2, 64, window=(8, 8)),
       AttentionConfig("bf16", 2, 2, 64, softcap=30.0),
       AttentionConfig("bf16", 2, 2, 64, causal=True, softcap=5.0, scale=0.3),
       AttentionConfig("bf16", 4, 1, 64, causal=True),
       AttentionConfig("f16", 6, 2, 128),
       AttentionConfig("bf16", 2, 2, 128, value_head_dim=64),
       # Large head dims: D = 256 in f16 with GQA and a window; D = 192 with Dv = 128 (MLA-style).
       AttentionConfig("f16", 4, 2, 256, causal=True, window=(100, 0)),
       AttentionConfig("bf16", 2, 2, 192, value_head_dim=128),
       AttentionConfig("bf16", 2, 2, 192, causal=True, value_head_dim=128),
       AttentionConfig("f16", 4, 1, 192, value_head_dim=128, softcap=30.0),
       # Padded to the warp-specialised backward's 256-column tiles; the forced Sᵀ form (the same kernel).
       AttentionConfig("bf16", 2, 2, 160, causal=True, value_head_dim=136),
       AttentionConfig("bf16", 2, 2, 256, causal=True, backward_form="transposed")])
# The Sᵀ backward form (flashc --backward-form=transposed) over head dims, masks, dtypes and GQA.
TEST_ATTENTION_TRANSPOSED = tuple(
    [AttentionConfig("bf16", 2, 2, d, causal=c, backward_form="transposed") for d in (32, 64, 96, 128) for c in (False, True)]
    + [AttentionConfig("f16", 2, 2, 128, causal=True, backward_form="transposed"),
       AttentionConfig("bf16", 2, 2, 64, causal=True, window=(16, 0), backward_form="transposed"),
       AttentionConfig("bf16", 2, 2, 64, softcap=30.0, backward_form="transposed"),
       AttentionConfig("bf16", 4, 1, 128, causal=True, backward_form="transposed")])
# Mask modifiers (flashc.mask_mod) on every kernel form: prefix-LM, chunked local attention, strided keys with the
# diagonal (interior blocks hidden in part), a causal sliding window with keys at even distance only, rows that see
# no key (every fifth), a softcap; head dims 32 (the op-by-op kernels), 64 / 128 (the warp-specialised forward and
# key-split backward), 256 (the role-split backward), GQA, f16, and the Sᵀ and row backward forms; bands of diagonals,
# which run as windows.
_PREFIX_LM = lambda q, k: (k < 100) | (k <= q)
BY_HEAD_MASK = lambda b, h, q_idx, kv_idx: (h == 0) | (kv_idx <= q_idx)
TEST_ATTENTION_MASK_MOD = (
    AttentionConfig("bf16", 2, 2, 64, mask_mod=_PREFIX_LM),
    AttentionConfig("bf16", 2, 2, 128, mask_mod=lambda q, k: q // 96 == k // 96),
    AttentionConfig("bf16", 4, 2, 64, mask_mod=lambda q, k: (k % 3 == 0) | (q == k)),
    AttentionConfig("bf16", 2, 2, 128, causal=True, window=(128, 0), mask_mod=lambda q, k: (q - k) % 2 == 0),
    AttentionConfig("f16", 2, 2, 64, mask_mod=lambda q, k: (q % 5 != 0) & (abs(q - k) <= 40)),
    AttentionConfig("bf16", 2, 2, 128, softcap=30.0, mask_mod=_PREFIX_LM),
    AttentionConfig("bf16", 2, 2, 32, mask_mod=_PREFIX_LM),
    AttentionConfig("f16", 4, 2, 256, mask_mod=_PREFIX_LM),
    AttentionConfig("bf16", 2, 2, 64, mask_mod=_PREFIX_LM, backward_form="transposed"),
    AttentionConfig("bf16", 2, 2, 128, mask_mod=lambda q, k: q // 96 == k // 96, backward_form="rows"),
    # the batch and head indices (FlexAttention's b, h): causal but for head 0
    AttentionConfig("bf16", 2, 2, 64, mask_mod=BY_HEAD_MASK),
    # bands of diagonals (only q - k bounded): the window's kernels on the modifier's row positions (DiagonalBand.h),
    # a causal window under GQA and a two-sided band in f16
    AttentionConfig("bf16", 4, 2, 128, mask_mod=lambda q, k: (q >= k) & (q - k <= 300)),
    AttentionConfig("f16", 2, 2, 64, mask_mod=lambda q, k: (k - q <= 16) & (q - k < 100)))

# Modifiers that read tensors (text forms: the tensors are the call's, IndexProgram.with_tensors): a causal mask
# within documents (t0: each token's document id) at every kernel form (head dims 64 / 128 / 256, GQA, f16, both
# backward forms) and a per-(batch, head) key count (t0: [B, Hq] lengths, reading
# b and h). test_gpu_attention's test_document_masks gives them random documents.
DOCUMENT_MASK = "v0 = read t0 q; v1 = read t0 k; v2 = eq v0 v1; yield v2"
# FlexAttention's document_causal (the causality in the modifier): the segment form's other spelling.
FLEX_DOCUMENT_MASK = "v0 = read t0 q; v1 = read t0 k; v2 = eq v0 v1; v3 = ge q k; v4 = and v2 v3; yield v4"
KEY_COUNT_MASK = "v0 = read t0 b h; v1 = lt k v0; yield v1"
TEST_ATTENTION_MASK_TENSORS = (
    AttentionConfig("bf16", 2, 2, 64, causal=True, mask_mod=DOCUMENT_MASK),
    AttentionConfig("bf16", 4, 2, 128, causal=True, mask_mod=DOCUMENT_MASK),
    AttentionConfig("f16", 2, 2, 128, mask_mod=DOCUMENT_MASK),
    AttentionConfig("bf16", 4, 2, 256, causal=True, mask_mod=DOCUMENT_MASK),
    AttentionConfig("bf16", 2, 2, 64, causal=True, mask_mod=DOCUMENT_MASK, backward_form="transposed"),
    AttentionConfig("bf16", 2, 2, 128, mask_mod=DOCUMENT_MASK, backward_form="rows"),
    AttentionConfig("bf16", 4, 2, 128, mask_mod=KEY_COUNT_MASK),
    AttentionConfig("bf16", 4, 2, 128, mask_mod=FLEX_DOCUMENT_MASK))
# Block-sparse layouts (flashc.mask_mod.block_sparse: layout[h, q // 64, k // 64] != 0, a [Hq, query blocks, key
# blocks] tensor of the call): test_gpu_attention's test_block_sparse_layouts gives them random layouts.
BLOCK_SPARSE_MASK = "v0 = floordiv q 64; v1 = floordiv k 64; v2 = read t0 h v0 v1; v3 = ne v2 0; yield v3"
TEST_ATTENTION_BLOCK_SPARSE = (
    AttentionConfig("bf16", 4, 2, 128, mask_mod=BLOCK_SPARSE_MASK),
    AttentionConfig("bf16", 2, 2, 64, causal=True, mask_mod=BLOCK_SPARSE_MASK),
    AttentionConfig("f16", 2, 2, 256, mask_mod=BLOCK_SPARSE_MASK))
# Score modifiers (flashc.score_mod) on every kernel form (the warp-specialised forward at head dims 64 / 128 / 256,
# the op-by-op backward in both forms), text forms where they read tensors (test_gpu_attention's test_score_modifiers
# gives them values): ALiBi (t0: a slope per query head), Gemma-2's soft cap written as a modifier, a learned
# relative-position bias (t0: [Hq, 33] buckets of k - q clamped to +-16) with a per-head temperature, ALiBi under
# a document mask (two modifiers, two tensors) and a key + query bias (two [Hq, 33] tables: apart, but not separable
# for the kernels, whose query part would turn a table's -inf into NaN).
ALIBI_SCORE = "v0 = read t0 h; v1 = sub k q; v2 = itof v1; v3 = mulf v0 v2; v4 = addf s v3; yield v4 | f32"
RELATIVE_BIAS_SCORE = ("v0 = sub k q; v1 = max v0 -16; v2 = min v1 16; v3 = add v2 16; v4 = read t0 h v3; "
                       "v5 = read t0 h 0; v6 = exp v5; v7 = mulf s v6; v8 = addf v7 v4; yield v8 | f32")
# ALiBi over positions read from an i32 tensor (packed or padded sequences): s + slope[h] · (pos[k] - pos[q]), separable
# (integers and a factor: the kernels' one-FFMA form with a query part through lse).
ALIBI_POSITIONS_SCORE = ("v0 = read t0 h; v1 = read t1 k; v2 = read t1 q; v3 = sub v1 v2; v4 = itof v3; v5 = mulf v0 v4; "
                         "v6 = addf s v5; yield v6 | f32 i32")
# A key bias plus a query bias: two [Hq, 33] tables read at k mod 33 and q mod 33 (s + A(q) + B(k), but f32 tables may
# hold -inf: the element-wise form, scoreBiasSeparable).
KEY_QUERY_BIAS_SCORE = ("v0 = rem k 33; v1 = read t0 h v0; v2 = addf s v1; v3 = rem q 33; v4 = read t1 h v3; "
                        "v5 = addf v2 v4; yield v5 | f32 f32")


def key_position_score(score, q_idx, kv_idx):
    """A bias that grows with the key's position (not shift-invariant: a kernel that placed a document's keys at its own
    positions would get it wrong): the segment form's score modifier check."""
    return score + kv_idx * 0.015625


def softcap_score(score, q_idx, kv_idx):
    from .score_mod import tanh
    return 30.0 * tanh(score / 30.0)


TEST_ATTENTION_SCORE_MOD = (
    AttentionConfig("bf16", 4, 2, 128, causal=True, score_mod=ALIBI_SCORE),
    AttentionConfig("bf16", 2, 2, 64, score_mod=ALIBI_SCORE),
    AttentionConfig("f16", 2, 2, 128, causal=True, window=(96, 0), score_mod=softcap_score),
    AttentionConfig("bf16", 4, 2, 256, causal=True, score_mod=ALIBI_SCORE),
    AttentionConfig("bf16", 2, 2, 32, score_mod=softcap_score),
    AttentionConfig("bf16", 2, 2, 128, score_mod=RELATIVE_BIAS_SCORE, backward_form="rows"),
    AttentionConfig("bf16", 2, 2, 64, causal=True, score_mod=ALIBI_SCORE, backward_form="transposed"),
    AttentionConfig("bf16", 4, 2, 128, causal=True, mask_mod=DOCUMENT_MASK, score_mod=ALIBI_SCORE),
    # test_flex_attention_port: FlexAttention's causal document mask (the causality in the modifier) with ALiBi, and
    # Flex's causal mask_mod on the dedicated causal path.
    AttentionConfig("bf16", 4, 2, 128, mask_mod=FLEX_DOCUMENT_MASK, score_mod=ALIBI_SCORE),
    AttentionConfig("bf16", 4, 2, 128, causal=True),
    # The key + query bias (the element-wise form; ALiBi's configurations take the separable one), ALiBi over
    # positions (separable, i32 reads), and ALiBi at D = 192 / Dv = 128 (the key split's score halves).
    AttentionConfig("bf16", 4, 2, 128, causal=True, score_mod=KEY_QUERY_BIAS_SCORE),
    AttentionConfig("bf16", 4, 4, 64, score_mod=ALIBI_POSITIONS_SCORE),
    AttentionConfig("bf16", 2, 2, 192, causal=True, value_head_dim=128, score_mod=ALIBI_SCORE),
    # A document mask with a bias of the key's position (the segment form's score modifier at the sequence's
    # positions, segments.cuh).
    AttentionConfig("bf16", 2, 2, 64, causal=True, mask_mod=DOCUMENT_MASK, score_mod=key_position_score))
# bench/bench_programmable.py (issue #16's rows against FlexAttention: B = 1, H = 16, D = 128, S = 16k): a causal
# sliding window of 1024 keys as a modifier and as the window attribute, prefix-LM over 4096 keys. The benchmark
# traces these same functions, so its configurations are these bundles.
def bench_window_mod(b, h, q_idx, kv_idx):
    return (q_idx >= kv_idx) & (q_idx - kv_idx <= 1024)


def bench_prefix_lm_mod(b, h, q_idx, kv_idx):
    return (kv_idx < 4096) | (kv_idx <= q_idx)


# The block-sparse row: flashc.mask_mod.block_sparse(layout, 128) (Flex's block size), a layout of the call's.
BENCH_BLOCK_SPARSE_MASK = BLOCK_SPARSE_MASK.replace("floordiv q 64", "floordiv q 128").replace("floordiv k 64",
                                                                                               "floordiv k 128")


BENCH_PROGRAMMABLE = (AttentionConfig("bf16", 16, 16, 128, causal=True, mask_mod=DOCUMENT_MASK),
                      AttentionConfig("bf16", 16, 16, 128, causal=True, score_mod=ALIBI_SCORE),
                      AttentionConfig("bf16", 16, 16, 128, mask_mod=bench_window_mod),
                      AttentionConfig("bf16", 16, 16, 128, causal=True, window=(1024, 0)),
                      AttentionConfig("bf16", 16, 16, 128, mask_mod=bench_prefix_lm_mod),
                      AttentionConfig("bf16", 16, 16, 128, mask_mod=BENCH_BLOCK_SPARSE_MASK))
# The row form where auto picks Sᵀ (sm_90a, 16-bit, D = 64/128), so both stay tested.
TEST_ATTENTION_ROWS = (AttentionConfig("bf16", 2, 2, 128, causal=True, backward_form="rows"),
                       AttentionConfig("f16", 6, 2, 128, backward_form="rows"),
                       AttentionConfig("bf16", 2, 2, 64, causal=True, window=(16, 0), backward_form="rows"))
TEST_FFN = (
    FfnConfig("bf16", 64, 256, activation="gelu_tanh", has_b1=True, has_b2=True),
    FfnConfig("bf16", 64, 256, activation="gelu_tanh"),
    FfnConfig("f16", 128, 512, activation="gelu_erf", has_b1=True),
    FfnConfig("bf16", 64, 192, d_out=32, activation="relu", has_b2=True),
    FfnConfig("bf16", 64, 256, activation="silu", gated=True),
    FfnConfig("f16", 64, 128, activation="silu", gated=True, has_b2=True),
    # Too wide an output for the fused forward (two GEMM kernels), and ragged in K, N and d_out.
    FfnConfig("bf16", 200, 328, d_out=360, activation="gelu_tanh", has_b1=True, has_b2=True),
)

# Head dims that are not multiples of 32 (the kernels pad their tiles to whole 64-byte swizzle rows and limit every
# load and store to the true width): Stable Diffusion's 40, DiT's 72, Phi-2's 80, 112, and the edges 8, 136, 200, 248;
# bf16 and f16, causal and not, GQA, Dv != D, both backward forms (test_gpu_attention's padded test).
TEST_PADDED_HEAD_DIMS = (8, 40, 72, 80, 112, 136, 200, 248)
TEST_ATTENTION_PADDED = tuple(
    [AttentionConfig("bf16", 2, 2, d, causal=c) for d in TEST_PADDED_HEAD_DIMS for c in (False, True)]
    + [AttentionConfig("f16", 2, 2, d, causal=c) for d in (40, 80, 136) for c in (False, True)]
    + [AttentionConfig("bf16", 4, 1, 80, causal=True),
       AttentionConfig("f16", 6, 2, 72),
       AttentionConfig("bf16", 2, 2, 72, value_head_dim=40, causal=True),
       AttentionConfig("bf16", 2, 2, 40, causal=True, window=(16, 0)),
       AttentionConfig("bf16", 2, 2, 80, causal=True, backward_form="transposed"),
       AttentionConfig("f16", 4, 2, 112, backward_form="transposed")])
# FFN widths that are not multiples of 16 or 32: d = d_out = 200 (the fused kernel, d_out padded to 224), 328 and
# 1000 (two GEMM kernels, ragged in every dimension), gated; forward and backward (test_gpu_ffn's padded test).
TEST_FFN_PADDED = (
    FfnConfig("bf16", 200, 328, activation="gelu_tanh"),
    FfnConfig("f16", 200, 1000, activation="gelu_erf", has_b1=True, has_b2=True),
    FfnConfig("bf16", 328, 1000, activation="gelu_tanh", has_b1=True, has_b2=True),
    FfnConfig("bf16", 1000, 200, activation="relu", has_b2=True),
    FfnConfig("bf16", 1000, 328, d_out=200, activation="silu", gated=True),
)

# FFN widths that are not multiples of 8 (#22: any width): rows copied up to the width inside a 16-byte chunk,
# stored element by element; flashc.torch pads the rows (not the widths) to 16 bytes. d = 100 / 333, h = 1001,
# d_out = 77: the fused kernel (d_out 77), the two GEMMs (d_out 333), gated and not, bf16 and f16, forward and
# backward (split-K weight gradients into f32 accumulators of 77 / 1001 columns); test_gpu_ffn's any-width tests.
TEST_FFN_ANY_WIDTH = (
    FfnConfig("bf16", 100, 1001, d_out=77, activation="gelu_tanh", has_b1=True, has_b2=True),
    FfnConfig("f16", 333, 1001, activation="gelu_erf", has_b1=True),
    FfnConfig("bf16", 333, 1001, d_out=77, activation="silu", gated=True),
    FfnConfig("bf16", 100, 1001, activation="silu", gated=True, has_b2=True),
)

# The run-time key offset (AttentionConfig.key_offset: query i at key position i + key_offset instead of i + Sk - Sq):
# test_gpu_key_offset's flashc.torch.attention(key_offset=...) over offsets from -2^31 to 2^31-1, and
# test_gpu_ring's sliding windows, whose sharded blocks all launch a key-offset config of the window. bf16 and f16,
# D 64 and 128, every mask (none, causal, causal window 16 and 96 - smaller and larger than the test chunks -, the
# non-causal window (64, 32)), softcap, GQA.
TEST_ATTENTION_KEY_OFFSET = (
    AttentionConfig("bf16", 2, 2, 64, causal=True, key_offset=True),
    AttentionConfig("f16", 2, 2, 128, causal=True, key_offset=True),
    AttentionConfig("bf16", 2, 2, 128, key_offset=True),
    AttentionConfig("bf16", 2, 2, 64, causal=True, window=(96, 0), key_offset=True),
    AttentionConfig("f16", 2, 2, 64, causal=True, window=(16, 0), key_offset=True),
    AttentionConfig("bf16", 2, 2, 128, window=(64, 32), key_offset=True),
    AttentionConfig("bf16", 2, 2, 64, causal=True, softcap=5.0, scale=0.3, key_offset=True),
    AttentionConfig("bf16", 4, 1, 128, causal=True, window=(96, 0), softcap=30.0, key_offset=True),
    # the warp-specialised backward (D > 128) with a run-time offset
    AttentionConfig("bf16", 4, 2, 256, causal=True, window=(96, 0), key_offset=True),
)

# python/tests/test_gpu_transformers.py: small transformers models (8 query heads, 2 key/value heads, head dim 64,
# bf16) through flashc.integrations.transformers. Llama (causal), Mistral (sliding_window 64: window (63, 0)) and
# Gemma 2 (softcap 50, scaling 256^-0.5, sliding and full layers). Scale 64^-0.5 is the default.
TEST_TRANSFORMERS = (
    AttentionConfig("bf16", 8, 2, 64, causal=True),
    AttentionConfig("bf16", 8, 2, 64, causal=True, window=(63, 0)),
    AttentionConfig("bf16", 8, 2, 64, causal=True, softcap=50.0, scale=0.0625),
    AttentionConfig("bf16", 8, 2, 64, causal=True, window=(63, 0), softcap=50.0, scale=0.0625),
)
# bench_ring.py --window W (default 4096): the ring's blocks (key-offset configs) and single-GPU flashc (the static
# window), causal window (W, 0) and non-causal (W, W); H = 16, D = 128, bf16.
BENCH_RING_WINDOW_DEFAULT = 4096


def bench_ring_window_configs(window=BENCH_RING_WINDOW_DEFAULT):
    """[(causal, static config, key-offset config)] that bench_ring.py --window `window` launches."""
    out = []
    for causal in (False, True):
        static = AttentionConfig("bf16", 16, 16, 128, causal=causal, window=(window, 0 if causal else window))
        out.append((causal, static, dataclasses.replace(static, key_offset=True)))
    return out


BENCH_RING_WINDOW = tuple(c for _, static, koff in bench_ring_window_configs() for c in (static, koff))

# Context-parallel attention (flashc.ring) runs a causal config's off-diagonal shard pairs with the
# unmasked twin of the same config: the sharded GPU tests need both bundles.
RING_TWINS = tuple(dataclasses.replace(c, causal=False) for c in TEST_ATTENTION
                   if c.causal and c.window is None and dataclasses.replace(c, causal=False) not in TEST_ATTENTION)

# Both backward forms of the benchmark configurations (bench_attention.py's flashc_rows and flashc_st
# columns beside flashc, whose form the compiler picks).
BENCH_ATTENTION_ROWS = tuple(dataclasses.replace(c, backward_form="rows") for c in BENCH_ATTENTION)
BENCH_ATTENTION_TRANSPOSED = tuple(dataclasses.replace(c, backward_form="transposed") for c in BENCH_ATTENTION)
# python -m flashc.tune's default configurations (the tuning keys of the benchmark rows): the attention benchmark's
# D = 64 / 128, the large D = 256 and D = 192 / Dv = 128 and the padded D = 80 / 96 (the form flashc picks), causal
# and not; the FFN benchmark's rows. flashc.tune times each at the benchmark's sizes (flashc.tune.SHAPES).
TUNE_ATTENTION = (BENCH_ATTENTION + BENCH_ATTENTION_LARGE
                  + tuple(c for c in BENCH_ATTENTION_PADDED if c.backward_form == "auto"))
TUNE_FFN = BENCH_FFN

# Decode over a KV cache (flashc.torch.decode_attention, python/tests/test_gpu_decode.py): one token at
# Llama's heads over a paged and a contiguous cache; 4 causal tokens, GQA 4, 16-row pages; 3 tokens MQA, f16,
# Dv = 64, not causal; 16 tokens x 8 heads a kv head at D = 256 (8 row groups).
TEST_DECODE = (DecodeConfig("bf16", 32, 8, 128, page_size=64), DecodeConfig("bf16", 32, 8, 128),
               DecodeConfig("bf16", 8, 2, 128, queries=4, page_size=16),
               DecodeConfig("f16", 6, 1, 128, value_head_dim=64, queries=3, causal=False),
               DecodeConfig("bf16", 16, 2, 256, queries=16, page_size=256))

# Appending new tokens' K/V into the cache (flashc.torch.kv_append, decode_attention(..., k=, v=)): the decode step
# of Llama's heads over 64-row pages with its append fused in; 4 tokens, GQA 4, f16, a contiguous cache; the append
# alone over 16-row pages and, contiguous, at D = 64 / Dv = 40 (rows of 16-byte pieces no decode kernel takes).
TEST_APPEND = (DecodeConfig("bf16", 32, 8, 128, page_size=64, append=True),
               DecodeConfig("f16", 8, 2, 64, queries=4, append=True),
               KvAppendConfig("bf16", 8, 128, page_size=16), KvAppendConfig("f16", 2, 64, value_head_dim=40))

# Packed variable-length sequences (flashc.torch.varlen_attention, python/tests/test_gpu_varlen.py): Llama's heads
# causal and not; GQA 2 with a window and a softcap in f16 at D = 64 (three consumer warpgroups; forward only);
# D = 256 causal (the backward's role split); GQA 2, f16, D = 64 with a two-sided window (gradients).
TEST_VARLEN = (VarlenConfig("bf16", 32, 8, 128, causal=True), VarlenConfig("bf16", 16, 16, 128),
               VarlenConfig("f16", 4, 2, 64, window=37, softcap=30.0),
               VarlenConfig("bf16", 4, 4, 256, causal=True), VarlenConfig("f16", 4, 2, 64, window=(37, 5)))

# A mixture of experts (flashc.torch.moe, python/tests/test_gpu_moe.py): Mixtral's routing (8 experts, the top 2
# renormalised, gated SiLU); fine-grained (64 experts, top-6, plain GeLU, f16, h = 136: a partial column tile);
# sigmoid scores renormalised over the top 4 of 16 (DeepSeek-V3's), gated ReLU, d_out != d.
TEST_MOE = (MoeConfig("bf16", 128, 256, 8, 2, renormalize=True),
            MoeConfig("f16", 256, 136, 64, 6, out_dim=64, activation="gelu_tanh", gated=False),
            MoeConfig("bf16", 64, 200, 16, 4, out_dim=72, gating="sigmoid", renormalize=True, activation="relu"))

# bench/bench_moe.py: issue #23's layers, Mixtral-like (8 experts, top-2 renormalised, d = 4096, h = 14336, SwiGLU)
# and fine-grained (64 experts, top-6, d = 2048, h = 1408).
BENCH_MOE = (MoeConfig("bf16", 4096, 14336, 8, 2, renormalize=True), MoeConfig("bf16", 2048, 1408, 64, 6))

# bench/bench_varlen.py: packed sequences at the attention benchmark's heads (H*D = 2048), causal and not, beside the
# dense forward's bundles (BENCH_ATTENTION) it is compared with.
BENCH_VARLEN = tuple(VarlenConfig("bf16", 2048 // d, 2048 // d, d, causal=c) for d in (64, 128) for c in (False, True))

SETS = {
    "bench": BENCH_ATTENTION + BENCH_FFN,
    "bench-varlen": BENCH_VARLEN + BENCH_ATTENTION,
    "bench-attention": BENCH_ATTENTION,
    "bench-attention-rows": BENCH_ATTENTION_ROWS,
    "bench-attention-transposed": BENCH_ATTENTION_TRANSPOSED,
    "bench-attention-large": BENCH_ATTENTION_LARGE,
    "bench-ffn": BENCH_FFN,
    "bench-attention-padded": BENCH_ATTENTION_PADDED,
    "tests": (TEST_ATTENTION + RING_TWINS + TEST_ATTENTION_TRANSPOSED + TEST_ATTENTION_ROWS + TEST_FFN
              + TEST_ATTENTION_PADDED + TEST_FFN_PADDED + TEST_FFN_ANY_WIDTH + TEST_ATTENTION_KEY_OFFSET
              + TEST_ATTENTION_MASK_MOD + TEST_ATTENTION_MASK_TENSORS + TEST_ATTENTION_SCORE_MOD
              + TEST_ATTENTION_BLOCK_SPARSE + TEST_DECODE + TEST_APPEND + TEST_VARLEN + TEST_MOE),
    "tests-moe": TEST_MOE,
    "bench-moe": BENCH_MOE,
    "tests-attention": TEST_ATTENTION,
    "tests-decode": TEST_DECODE + TEST_APPEND,
    "tests-varlen": TEST_VARLEN,
    "tests-mask-mod": TEST_ATTENTION_MASK_MOD + TEST_ATTENTION_MASK_TENSORS,
    "tests-mask-tensors": TEST_ATTENTION_MASK_TENSORS,
    "tests-score-mod": TEST_ATTENTION_SCORE_MOD,
    "tests-block-sparse": TEST_ATTENTION_BLOCK_SPARSE,
    "tests-attention-rows": TEST_ATTENTION_ROWS,
    "tests-attention-transposed": TEST_ATTENTION_TRANSPOSED,
    "tests-ffn": TEST_FFN,
    "tests-attention-padded": TEST_ATTENTION_PADDED,
    "tests-ffn-padded": TEST_FFN_PADDED,
    "tests-ffn-any-width": TEST_FFN_ANY_WIDTH,
    "tests-key-offset": TEST_ATTENTION_KEY_OFFSET,
    "tests-transformers": TEST_TRANSFORMERS,
    "bench-ring-window": BENCH_RING_WINDOW,
    "bench-programmable": BENCH_PROGRAMMABLE,
    "tune": TUNE_ATTENTION + TUNE_FFN,
    "tune-attention": TUNE_ATTENTION,
    "tune-ffn": TUNE_FFN,
}
# Every benchmark's and GPU test's configurations (bench_programmable's, bench_moe's and bench_varlen's among them:
# a runbook's `prebuild all` left those three to fail with BundleNotFoundError on the GPU machine).
SETS["all"] = (SETS["bench"] + SETS["tests"] + BENCH_ATTENTION_PADDED + BENCH_ATTENTION_ROWS + BENCH_ATTENTION_TRANSPOSED
               + BENCH_ATTENTION_LARGE + TEST_ATTENTION_KEY_OFFSET + BENCH_RING_WINDOW + TEST_TRANSFORMERS
               + BENCH_PROGRAMMABLE + BENCH_MOE + BENCH_VARLEN)

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off"}


def _bool(key, text):
    t = text.lower()
    if t in _TRUE:
        return True
    if t in _FALSE:
        return False
    raise InvalidArgumentError("config field %s: expected 0/1, got %r" % (key, text))


def _int(key, text):
    try:
        return int(text)
    except ValueError:
        raise InvalidArgumentError("config field %s: expected an integer, got %r" % (key, text))


def _float(key, text):
    try:
        return float(text)
    except ValueError:
        raise InvalidArgumentError("config field %s: expected a number, got %r" % (key, text))


def _attention_fields(text, fields):
    """The fields an attention and a packed-sequences config share, from their text form."""
    for required in ("heads", "head_dim"):
        if required not in fields:
            raise InvalidArgumentError("config %r: missing field %s" % (text, required))
    heads = _int("heads", fields["heads"])
    window = None
    if "window" in fields:
        left, colon, right = fields["window"].partition(":")
        window = (_int("window", left), _int("window", right)) if colon else _int("window", left)
    return dict(
        dtype=fields.get("dtype", "bf16"), num_heads=heads,
        num_kv_heads=_int("kv_heads", fields["kv_heads"]) if "kv_heads" in fields else heads,
        head_dim=_int("head_dim", fields["head_dim"]),
        value_head_dim=_int("value_head_dim", fields["value_head_dim"]) if "value_head_dim" in fields else None,
        causal=_bool("causal", fields.get("causal", "0")), window=window,
        softcap=_float("softcap", fields["softcap"]) if "softcap" in fields else None,
        scale=_float("scale", fields["scale"]) if "scale" in fields else None)


def parse_config(text):
    """An AttentionConfig, FfnConfig, DecodeConfig, KvAppendConfig, VarlenConfig or MoeConfig from its one-line text
    form."""
    kind, sep, body = text.partition(":")
    if not sep or kind not in ("attention", "ffn", "decode", "kv_append", "varlen", "moe"):
        raise InvalidArgumentError("config %r: expected 'attention:key=value,...', 'ffn:key=value,...', "
                                   "'decode:key=value,...', 'kv_append:key=value,...', 'varlen:key=value,...' or "
                                   "'moe:key=value,...'" % text)
    fields = {}
    for item in filter(None, body.split(",")):
        key, eq, value = item.partition("=")
        if not eq:
            raise InvalidArgumentError("config %r: field %r is not key=value" % (text, item))
        if key.strip() in fields:  # (the last one silently won before)
            raise InvalidArgumentError("config %r: field %r is given twice" % (text, key.strip()))
        fields[key.strip()] = value.strip()
    allowed = {"attention": {"dtype", "heads", "kv_heads", "head_dim", "value_head_dim", "causal", "window", "softcap",
                             "scale", "backward", "key_offset", "mask_mod", "score_mod"},
               "ffn": {"dtype", "d", "h", "d_out", "act", "b1", "b2", "gated"},
               "decode": {"dtype", "heads", "kv_heads", "head_dim", "value_head_dim", "queries", "page_size", "causal",
                          "scale", "append"},
               "kv_append": {"dtype", "kv_heads", "head_dim", "value_head_dim", "page_size"},
               "varlen": {"dtype", "heads", "kv_heads", "head_dim", "value_head_dim", "causal", "window", "softcap",
                          "scale"},
               "moe": {"dtype", "d", "h", "d_out", "experts", "top_k", "gating", "renormalize", "act", "gated"}}[kind]
    unknown = sorted(set(fields) - allowed)
    if unknown:
        raise InvalidArgumentError("config %r: unknown field%s %s (known: %s)" % (
            text, "s" if len(unknown) > 1 else "", ", ".join(unknown), ", ".join(sorted(allowed))))
    try:
        if kind == "decode":
            for required in ("heads", "head_dim"):
                if required not in fields:
                    raise InvalidArgumentError("config %r: missing field %s" % (text, required))
            heads = _int("heads", fields["heads"])
            return DecodeConfig(
                dtype=fields.get("dtype", "bf16"), num_heads=heads,
                num_kv_heads=_int("kv_heads", fields["kv_heads"]) if "kv_heads" in fields else heads,
                head_dim=_int("head_dim", fields["head_dim"]),
                value_head_dim=_int("value_head_dim", fields["value_head_dim"]) if "value_head_dim" in fields else None,
                queries=_int("queries", fields.get("queries", "1")),
                page_size=_int("page_size", fields.get("page_size", "0")),
                causal=_bool("causal", fields.get("causal", "1")),
                scale=_float("scale", fields["scale"]) if "scale" in fields else None,
                append=_bool("append", fields.get("append", "0")))
        if kind == "kv_append":
            for required in ("kv_heads", "head_dim"):
                if required not in fields:
                    raise InvalidArgumentError("config %r: missing field %s" % (text, required))
            return KvAppendConfig(
                dtype=fields.get("dtype", "bf16"), num_kv_heads=_int("kv_heads", fields["kv_heads"]),
                head_dim=_int("head_dim", fields["head_dim"]),
                value_head_dim=_int("value_head_dim", fields["value_head_dim"]) if "value_head_dim" in fields else None,
                page_size=_int("page_size", fields.get("page_size", "0")))
        if kind == "varlen":
            return VarlenConfig(**_attention_fields(text, fields))
        if kind == "moe":
            for required in ("d", "h", "experts", "top_k"):
                if required not in fields:
                    raise InvalidArgumentError("config %r: missing field %s" % (text, required))
            return MoeConfig(dtype=fields.get("dtype", "bf16"), model_dim=_int("d", fields["d"]),
                             hidden_dim=_int("h", fields["h"]), experts=_int("experts", fields["experts"]),
                             top_k=_int("top_k", fields["top_k"]),
                             out_dim=_int("d_out", fields["d_out"]) if "d_out" in fields else None,
                             gating=fields.get("gating", "softmax"),
                             renormalize=_bool("renormalize", fields.get("renormalize", "0")),
                             activation=fields.get("act", "silu"), gated=_bool("gated", fields.get("gated", "1")))
        if kind == "attention":
            return AttentionConfig(
                **_attention_fields(text, fields),
                backward_form=fields.get("backward", "auto"),
                key_offset=_bool("key_offset", fields.get("key_offset", "0")), mask_mod=fields.get("mask_mod"),
                score_mod=fields.get("score_mod"))
        for required in ("d", "h"):
            if required not in fields:
                raise InvalidArgumentError("config %r: missing field %s" % (text, required))
        return FfnConfig(dtype=fields.get("dtype", "bf16"), d_model=_int("d", fields["d"]), d_hidden=_int("h", fields["h"]),
                         d_out=_int("d_out", fields["d_out"]) if "d_out" in fields else None,
                         activation=fields.get("act", "gelu_tanh"), has_b1=_bool("b1", fields.get("b1", "0")),
                         has_b2=_bool("b2", fields.get("b2", "0")), gated=_bool("gated", fields.get("gated", "0")))
    except InvalidArgumentError as e:
        if str(e).startswith("config "):
            raise
        raise InvalidArgumentError("config %r: %s" % (text, e))


def _attention_field_texts(config):
    """The text of the fields attention and packed-sequences configs share (_attention_fields reads them)."""
    parts = ["dtype=%s" % config.dtype, "heads=%d" % config.num_heads, "kv_heads=%d" % config.num_kv_heads,
             "head_dim=%d" % config.head_dim]
    if config.value_head_dim != config.head_dim:
        parts.append("value_head_dim=%d" % config.value_head_dim)
    parts.append("causal=%d" % int(config.causal))
    if config.window is not None:
        parts.append("window=%d:%d" % config.window)
    if config.softcap:
        parts.append("softcap=%s" % format_f32(config.softcap))
    parts.append("scale=%s" % format_f32(config.scale))
    return parts


def format_config(config):
    """The one-line text form (parse_config(format_config(c)) == c)."""
    if isinstance(config, DecodeConfig):
        parts = ["dtype=%s" % config.dtype, "heads=%d" % config.num_heads, "kv_heads=%d" % config.num_kv_heads,
                 "head_dim=%d" % config.head_dim]
        if config.value_head_dim != config.head_dim:
            parts.append("value_head_dim=%d" % config.value_head_dim)
        parts += ["queries=%d" % config.queries, "page_size=%d" % config.page_size, "causal=%d" % int(config.causal),
                  "scale=%s" % format_f32(config.scale)]
        if config.append:
            parts.append("append=1")
        return "decode:" + ",".join(parts)
    if isinstance(config, KvAppendConfig):
        parts = ["dtype=%s" % config.dtype, "kv_heads=%d" % config.num_kv_heads, "head_dim=%d" % config.head_dim]
        if config.value_head_dim != config.head_dim:
            parts.append("value_head_dim=%d" % config.value_head_dim)
        parts.append("page_size=%d" % config.page_size)
        return "kv_append:" + ",".join(parts)
    if isinstance(config, VarlenConfig):
        return "varlen:" + ",".join(_attention_field_texts(config))
    if isinstance(config, MoeConfig):
        return "moe:" + ",".join(["dtype=%s" % config.dtype, "d=%d" % config.model_dim, "h=%d" % config.hidden_dim,
                                  "d_out=%d" % config.out_dim, "experts=%d" % config.experts,
                                  "top_k=%d" % config.top_k, "gating=%s" % config.gating,
                                  "renormalize=%d" % int(config.renormalize), "act=%s" % config.activation,
                                  "gated=%d" % int(config.gated)])
    if isinstance(config, AttentionConfig):
        parts = _attention_field_texts(config)
        if config.backward_form != "auto":
            parts.append("backward=%s" % config.backward_form)
        if config.key_offset:
            parts.append("key_offset=1")
        if config.mask_mod is not None:
            parts.append("mask_mod=%s" % config.mask_mod)  # (its text has no commas)
        if config.score_mod is not None:
            parts.append("score_mod=%s" % config.score_mod)  # (nor has this one)
        return "attention:" + ",".join(parts)
    parts = ["dtype=%s" % config.dtype, "d=%d" % config.d_model, "h=%d" % config.d_hidden]
    if config.d_out != config.d_model:
        parts.append("d_out=%d" % config.d_out)
    parts.append("act=%s" % config.activation)
    for name in ("b1", "b2", "gated"):
        if getattr(config, "has_" + name if name != "gated" else name):
            parts.append("%s=1" % name)
    return "ffn:" + ",".join(parts)


def resolve(items):
    """Configurations named by set names (see SETS) and/or config texts, without duplicates, in order."""
    out, seen = [], set()
    for item in items:
        configs = SETS.get(item)
        if configs is None:
            if ":" not in item:
                raise InvalidArgumentError("unknown config set %r (sets: %s; or a config such as "
                                           "'attention:heads=16,head_dim=128,causal=1')" % (item, ", ".join(SETS)))
            configs = (parse_config(item),)
        for c in configs:
            if c.key not in seen:
                seen.add(c.key)
                out.append(c)
    return out
