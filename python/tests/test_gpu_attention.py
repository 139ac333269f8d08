"""flashc.torch.attention on the GPU against PyTorch float64 math on upcast inputs.

Bundles come from FLASHC_BUNDLE_PATH / the cache (python -m flashc.prebuild --out DIR tests) or the compiler.
Every output is poisoned with NaN before each launch. torch.autograd.gradcheck is not applicable: it needs
float64 (or at least float32) kernels, and these are bf16/f16 kernels whose rounding dwarfs gradcheck's finite
differences. Gradients are instead checked element-wise against float64 autograd of the reference, and as a
directional derivative against float64 central finite differences of the reference loss.
"""

import unittest

from _support import requires_cuda

import flashc
import flashc.score_mod
from flashc import configs

try:
    import torch
    import flashc.torch as ft
    from flashc.testing import attention_reference
    from _gpu import assert_close_to_reference, missing_bundle_skip, setup_gpu_suite
except ImportError:
    pass

DTYPES = {"bf16": "bfloat16", "f16": "float16"}
# (B, Sq, Sk): ragged tails, a single query/key, Sq != Sk both ways, B*H > 1.
SHAPES = [(2, 128, 128), (2, 113, 113), (1, 1, 1), (1, 1, 77), (2, 65, 200), (2, 200, 65), (3, 257, 257)]


def inputs(config, batch, seq_q, seq_k, seed, bshd=False):
    g = torch.Generator(device="cuda").manual_seed(seed)
    dtype = getattr(torch, DTYPES[config.dtype])

    def make(heads, seq, dim):
        if bshd:  # PyTorch's usual [B, S, H, D] storage viewed as [B, H, S, D]
            t = torch.randn(batch, seq, heads, dim, device="cuda", generator=g).to(dtype).transpose(1, 2)
        else:
            t = torch.randn(batch, heads, seq, dim, device="cuda", generator=g).to(dtype)
        return t.requires_grad_()

    return (make(config.num_heads, seq_q, config.head_dim), make(config.num_kv_heads, seq_k, config.head_dim),
            make(config.num_kv_heads, seq_k, config.value_head_dim))


def run_flashc(config, q, k, v, do, mask_mod=None, score_mod=None):
    mask_mod = config.mask_mod if mask_mod is None else mask_mod
    score_mod = config.score_mod if score_mod is None else score_mod
    o, lse = ft.attention(q, k, v, causal=config.causal, scale=config.scale, window=config.window,
                          softcap=config.softcap or None, enable_gqa=config.num_heads != config.num_kv_heads,
                          return_lse=True, backward_form=config.backward_form, mask_mod=mask_mod,
                          score_mod=score_mod)
    grads = torch.autograd.grad(o, (q, k, v), do)
    return o, lse, grads


def run_reference(config, q, k, v, do, dtype, mask_mod=None, score_mod=None):
    mask_mod = config.mask_mod if mask_mod is None else mask_mod
    score_mod = config.score_mod if score_mod is None else score_mod
    leaves = [t.detach().to(dtype).requires_grad_() for t in (q, k, v)]
    o, lse = attention_reference(*leaves, causal=config.causal, scale=config.scale, window=config.window,
                                 softcap=config.softcap, dtype=dtype, mask_mod=mask_mod, score_mod=score_mod)
    grads = torch.autograd.grad(o, leaves, do.to(dtype))
    return o, lse, grads


def check_against_reference(test, config, batch, seq_q, seq_k, seed=0, bshd=False, mask_mod=None, score_mod=None):
    """flashc's o, lse, dq, dk, dv for `config` on one shape, each within twice the unfused computation's error
    against float64. mask_mod / score_mod: the config's modifiers with the tensors they read (default: the
    config's)."""
    label = "%s B=%d Sq=%d Sk=%d%s" % (config.describe(), batch, seq_q, seq_k, " bshd" if bshd else "")
    mask_mod = config.mask_mod if mask_mod is None else mask_mod
    q, k, v = inputs(config, batch, seq_q, seq_k, seed, bshd)
    g = torch.Generator(device="cuda").manual_seed(seed + 1)
    do = torch.randn(batch, config.num_heads, seq_q, config.value_head_dim, device="cuda", generator=g).to(q.dtype)
    try:
        o, lse, grads = run_flashc(config, q, k, v, do, mask_mod, score_mod)
    except flashc.BundleNotFoundError as e:
        missing_bundle_skip(test, e, optional=config.head_dim > 128)
    torch.cuda.synchronize()
    o64, lse64, grads64 = run_reference(config, q, k, v, do, torch.float64, mask_mod, score_mod)
    o_lp, lse_lp, grads_lp = run_reference(config, q, k, v, do, q.dtype, mask_mod, score_mod)
    test.assertEqual(o.dtype, q.dtype)
    test.assertEqual(tuple(lse.shape), (batch, config.num_heads, seq_q))
    assert_close_to_reference(test, label + " o", o, o_lp, o64)
    assert_close_to_reference(test, label + " lse", lse, lse_lp, lse64, floor=1e-3)
    for name, got, base, ref in zip(("dq", "dk", "dv"), grads, grads_lp, grads64):
        test.assertEqual(got.shape, ref.shape, name)
        assert_close_to_reference(test, label + " " + name, got, base, ref)


@requires_cuda
class AttentionGpuTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        setup_gpu_suite()

    def test_named_configs_over_ragged_shapes(self):
        for config in configs.TEST_ATTENTION + configs.TEST_ATTENTION_TRANSPOSED + configs.TEST_ATTENTION_ROWS:
            for batch, seq_q, seq_k in SHAPES:
                with self.subTest(config=config.describe(), batch=batch, seq_q=seq_q, seq_k=seq_k):
                    check_against_reference(self, config, batch, seq_q, seq_k)

    def test_padded_head_dims(self):
        """Head dims that are not multiples of 32 (8, 40, 72, 80, 112, 136, 200, 248; the kernels compute on tiles
        padded to whole swizzle rows): o, lse, dq, dk, dv against float64 over the ragged shapes, bf16 and f16,
        causal and not, GQA, Dv != D, a window, both backward forms."""
        for config in configs.TEST_ATTENTION_PADDED:
            for batch, seq_q, seq_k in SHAPES:
                with self.subTest(config=config.describe(), batch=batch, seq_q=seq_q, seq_k=seq_k):
                    check_against_reference(self, config, batch, seq_q, seq_k)

    def test_mask_modifiers(self):
        """Mask modifiers (flashc.mask_mod) against float64 with the same modifier: prefix-LM, chunked, strided with
        the diagonal, window + modifier, rows that see no key (zeros, lse -inf, zero gradients), softcap, head dims
        32 / 64 / 128 / 256, GQA, f16, both backward forms; over the ragged shapes and a longer sequence (several
        key and query blocks, blocks hidden whole trimmed from the loops, blocks shown whole unmasked)."""
        for config in configs.TEST_ATTENTION_MASK_MOD:
            for batch, seq_q, seq_k in SHAPES + [(1, 700, 700), (1, 300, 650)]:
                with self.subTest(config=config.describe(), batch=batch, seq_q=seq_q, seq_k=seq_k):
                    check_against_reference(self, config, batch, seq_q, seq_k)

    def test_document_masks(self):
        """Modifiers that read tensors (configs.TEST_ATTENTION_MASK_TENSORS): a causal mask within documents of
        random lengths (1 to 300 tokens, ids as int64 and int32), and a per-(batch, head) key count reading b and h,
        against float64 over the ragged shapes and longer sequences: the block-class kernel's table (hidden blocks
        skipped, shown ones unmasked) must keep every visible pair, rows that see no key give zeros."""
        from flashc.mask_mod import IndexProgram
        g = torch.Generator(device="cuda").manual_seed(11)
        for config in configs.TEST_ATTENTION_MASK_TENSORS:
            program = IndexProgram.parse(config.mask_mod)
            for batch, seq_q, seq_k in SHAPES + [(1, 700, 700), (1, 300, 650), (2, 1000, 1000)]:
                if program.tensor_ranks == (1,):  # document ids of every token (at least max(Sq, Sk) of them)
                    n = max(seq_q, seq_k)
                    lengths = torch.randint(1, 300, (n,), generator=g, device="cuda")
                    starts = torch.cumsum(lengths, 0)
                    ids = torch.searchsorted(starts, torch.arange(n, device="cuda"), right=True)
                    tensor = ids if seq_q % 2 else ids.to(torch.int32)
                else:  # keys each (batch, head) sees, 0 (no key) included
                    tensor = torch.randint(0, seq_k + 20, (batch, config.num_heads), generator=g, device="cuda")
                with self.subTest(config=config.describe(), batch=batch, seq_q=seq_q, seq_k=seq_k):
                    check_against_reference(self, config, batch, seq_q, seq_k, mask_mod=program.with_tensors(tensor))

    def test_document_segments(self):
        """The document mask's segment form (a tuning point, `segments`; segments.cuh): over sorted ids with few enough
        documents the forward takes tiles aligned to each document's start, else (ids that go down somewhere, more
        documents than a quarter of the row blocks plus one, Sq != Sk) it walks its table. Both against float64, at
        sizes that take each: with bundles built with the segment form (bench/results/2026-12-05-h200-session43-prepared
        /segments-everywhere.txt) the first group runs the segment form; with the default bundles every case is the
        table's, which must agree all the same."""
        from flashc.mask_mod import IndexProgram

        def ids_of(lengths, n):
            starts = torch.cumsum(torch.tensor(lengths, device="cuda"), 0)
            return torch.searchsorted(starts, torch.arange(n, device="cuda"), right=True).to(torch.int32)

        cases = [  # (batch, Sq, Sk, ids): the segment form: sorted ids, at most ceil(row blocks / 4) + 1 documents
            (2, 1000, 1000, ids_of([137, 600, 263], 1000)),        # tiles ending mid-document, one of 263 rows
            (1, 4096, 4096, ids_of([1024, 1, 127, 2000, 944], 4096)),  # a one-token document, one of 127
            (1, 777, 777, ids_of([777], 777)),                    # one document: the causal mask's tiles
            (2, 300, 300, ids_of([128, 172], 300)),               # a document of exactly one tile
            # past the plan kernel's first pass of 8192 positions: a document starting at it, one across it
            (1, 9000, 9000, ids_of([4000, 4192, 808], 9000)),
            (1, 8300, 8300, ids_of([5000, 3300], 8300)),
            # a view one element into its storage: 4-byte aligned, so the plan reads it an element at a time
            (2, 1000, 1000, torch.cat([ids_of([137, 600, 263], 1000)[:1], ids_of([137, 600, 263], 1000)])[1:]),
            # the fallback: ids that go down, a document too many, Sq != Sk
            (1, 1000, 1000, torch.flip(ids_of([137, 600, 263], 1000), (0,))),
            (1, 9000, 9000, ids_of([4000, 4300, 700], 9000) % 2),  # going down only in the plan's second pass
            (1, 1000, 1000, ids_of([100] * 10, 1000)),
            (1, 600, 900, ids_of([300, 300, 300], 900))]
        for config in configs.TEST_ATTENTION_MASK_TENSORS:
            program = IndexProgram.parse(config.mask_mod)
            if program.tensor_ranks != (1,):
                continue
            for batch, seq_q, seq_k, ids in cases:
                with self.subTest(config=config.describe(), batch=batch, seq_q=seq_q, seq_k=seq_k):
                    check_against_reference(self, config, batch, seq_q, seq_k, mask_mod=program.with_tensors(ids))
            # ids shorter than the sequence: refused at launch, naming the tensor (the kernels would read the missing
            # ids as 0, a mask the caller never asked for)
            with self.assertRaisesRegex(flashc.InvalidArgumentError, "argument 'mask_t0' dim 0 is 800, but the mask "
                                        "modifier reads it at the query index, which ranges over Sq = 1000"):
                check_against_reference(self, config, 1, 1000, 1000,
                                        mask_mod=program.with_tensors(ids_of([500, 300], 800) + 1))

    def test_document_mask_as_function(self):
        """The FlexAttention spelling of a document mask: a function that indexes a tensor of its closure; new ids
        (the same bundle, no recompile) change the result as the reference does."""
        config = configs.TEST_ATTENTION_MASK_TENSORS[1]  # causal, configs.DOCUMENT_MASK
        q, k, v = inputs(config, 1, 513, 513, seed=5)
        for ids in (torch.arange(513, device="cuda") // 100, torch.arange(513, device="cuda") // 7):
            documents = lambda b, h, q_idx, kv_idx: ids[q_idx] == ids[kv_idx]
            o = ft.attention(q, k, v, causal=True, enable_gqa=True, mask_mod=documents)
            torch.cuda.synchronize()
            ref, _ = attention_reference(q, k, v, causal=True, mask_mod=documents)
            self.assertLess(float((o.double() - ref).abs().max()), 0.05)
        with self.assertRaisesRegex(flashc.InvalidArgumentError, "reads 1 tensor\\(s\\) but has 0"):
            ft.attention(q, k, v, causal=True, enable_gqa=True, mask_mod=config.mask_mod)
        wide = torch.arange(513, device="cuda") * (1 << 24)  # past int32: refused, not wrapped
        with self.assertRaisesRegex(flashc.InvalidArgumentError, "outside int32"):
            ft.attention(q, k, v, causal=True, enable_gqa=True, mask_mod=lambda b, h, q_idx, kv_idx:
                         wide[q_idx] == wide[kv_idx])
        # The ids changed in place between the forward and the backward: autograd says so.
        ids = (torch.arange(513, device="cuda") // 50).to(torch.int32)
        o = ft.attention(q, k, v, causal=True, enable_gqa=True, mask_mod=lambda b, h, q_idx, kv_idx:
                         ids[q_idx] == ids[kv_idx])
        ids.add_(1)
        with self.assertRaisesRegex(RuntimeError, "modified by an inplace operation"):
            o.sum().backward()

    def test_block_sparse_layouts(self):
        """Block-sparse layouts (configs.TEST_ATTENTION_BLOCK_SPARSE: layout[h, q // 64, k // 64] != 0) with random
        layouts (about half the blocks on, whole rows off included) against float64 over the ragged shapes and longer
        sequences; the same layout through flashc.mask_mod.block_sparse gives the same bundle and result."""
        from flashc.mask_mod import IndexProgram, block_sparse
        g = torch.Generator(device="cuda").manual_seed(23)
        for config in configs.TEST_ATTENTION_BLOCK_SPARSE:
            program = IndexProgram.parse(config.mask_mod)
            for batch, seq_q, seq_k in SHAPES + [(1, 700, 700), (1, 300, 650)]:
                blocks = (config.num_heads, -(-seq_q // 64), -(-seq_k // 64))
                layout = (torch.rand(blocks, generator=g, device="cuda") < 0.5).to(torch.int32)
                layout[:, 0, :] = 0  # the first query block sees no key: zeros, lse -inf
                with self.subTest(config=config.describe(), batch=batch, seq_q=seq_q, seq_k=seq_k):
                    check_against_reference(self, config, batch, seq_q, seq_k,
                                            mask_mod=program.with_tensors(layout))
        config = configs.TEST_ATTENTION_BLOCK_SPARSE[0]
        q, k, v = inputs(config, 1, 300, 300, seed=4)
        layout = (torch.rand((4, 5, 5), generator=g, device="cuda") < 0.5).to(torch.int32)
        o1 = ft.attention(q, k, v, enable_gqa=True, mask_mod=block_sparse(layout, 64))
        o2 = ft.attention(q, k, v, enable_gqa=True, mask_mod=IndexProgram.parse(config.mask_mod).with_tensors(layout))
        self.assertTrue(torch.equal(o1, o2))

    def test_score_modifiers(self):
        """Score modifiers (configs.TEST_ATTENTION_SCORE_MOD) against float64 autograd of the same modifier (not the
        compiler's derivative): ALiBi with random slopes of both signs, the soft cap as a modifier, a relative-position
        bias table with a per-head temperature, ALiBi under a document mask, a key + query bias, ALiBi over positions
        read from an i32 tensor (the kernels' separable form, as ALiBi's); head dims 32 / 64 / 128 / 256, GQA, f16,
        both backward forms; over the ragged shapes and longer sequences."""
        from flashc.mask_mod import IndexProgram
        from flashc.score_mod import ScoreProgram
        g = torch.Generator(device="cuda").manual_seed(17)
        for config in configs.TEST_ATTENTION_SCORE_MOD:
            if config.score_mod is None:  # (test_flex_attention_port's plain causal twin)
                continue
            program = ScoreProgram.parse(config.score_mod)
            for batch, seq_q, seq_k in SHAPES + [(1, 700, 700), (1, 300, 650)]:
                tensors = []
                for rank, kind in zip(program.tensor_ranks, program.tensor_kinds):
                    if kind == "i32":  # positions of every row (ALiBi over positions): increasing, with gaps
                        steps = torch.randint(0, 3, (max(seq_q, seq_k),), generator=g, device="cuda")
                        tensors.append(torch.cumsum(steps, 0).to(torch.int32))
                        continue
                    shape = (config.num_heads,) if rank == 1 else (config.num_heads, 33)  # slopes [Hq]; a table
                    tensors.append((torch.rand(shape, generator=g, device="cuda") - 0.5) * 0.5)
                score = program.with_tensors(*tensors) if tensors else None
                mask = None
                if config.mask_mod is not None:
                    n = max(seq_q, seq_k)
                    ids = torch.arange(n, device="cuda") // 97
                    mask = IndexProgram.parse(config.mask_mod).with_tensors(ids)
                with self.subTest(config=config.describe(), batch=batch, seq_q=seq_q, seq_k=seq_k):
                    check_against_reference(self, config, batch, seq_q, seq_k, mask_mod=mask, score_mod=score)

    def test_score_modifier_as_function(self):
        """The FlexAttention spelling of ALiBi: score_mod(score, b, h, q_idx, kv_idx) reading a closure's slopes;
        new slopes (the same bundle, no recompile) change the result as the reference does; a slope tensor changed in
        place before the backward is caught; an unsupported op says what is supported."""
        config = configs.TEST_ATTENTION_SCORE_MOD[0]  # causal, GQA 4 / 2, D = 128, configs.ALIBI_SCORE
        q, k, v = inputs(config, 1, 300, 300, seed=9)
        for slopes in (torch.linspace(0.01, 0.3, 4, device="cuda"), torch.linspace(-0.2, 0.2, 4, device="cuda")):
            alibi = lambda score, b, h, q_idx, kv_idx: score + slopes[h] * (kv_idx - q_idx)
            o = ft.attention(q, k, v, causal=True, enable_gqa=True, score_mod=alibi)
            torch.cuda.synchronize()
            ref, _ = attention_reference(q, k, v, causal=True, score_mod=alibi)
            self.assertLess(float((o.double() - ref).abs().max()), 0.05)
        o2 = ft.attention(q, k, v, causal=True, enable_gqa=True,
                          score_mod=flashc.score_mod.ScoreProgram.parse(config.score_mod).with_tensors(slopes))
        self.assertTrue(torch.equal(o, o2))  # one text, one bundle, one result
        slopes = torch.linspace(0.01, 0.3, 4, device="cuda")
        o = ft.attention(q, k, v, causal=True, enable_gqa=True,
                         score_mod=lambda score, b, h, q_idx, kv_idx: score + slopes[h] * (kv_idx - q_idx))
        slopes.mul_(2)
        with self.assertRaisesRegex(RuntimeError, "modified by an inplace operation"):
            o.sum().backward()
        with self.assertRaisesRegex(flashc.InvalidArgumentError, "not supported on a traced score"):
            ft.attention(q, k, v, causal=True, enable_gqa=True, score_mod=lambda s, q_idx, kv_idx: torch.sin(s))

    def test_flex_attention_port(self):
        """FlexAttention's names (flashc.torch.flex_attention, create_block_mask): a causal document mask with ALiBi
        and a prefix-LM mask against float64, forward and backward; Flex's causal mask_mod takes the dedicated causal
        path (the same result as the modifier); a block mask for other lengths is refused."""
        config = configs.TEST_ATTENTION_SCORE_MOD[8]  # bf16 4 / 2, D = 128, Flex's causal documents + ALiBi
        q, k, v = inputs(config, 1, 333, 333, seed=21)
        ids = torch.arange(333, device="cuda") // 90
        slopes = torch.linspace(0.02, 0.2, 4, device="cuda")
        documents = lambda b, h, q_idx, kv_idx: (ids[q_idx] == ids[kv_idx]) & (q_idx >= kv_idx)
        alibi = lambda score, b, h, q_idx, kv_idx: score + slopes[h] * (kv_idx - q_idx)
        block_mask = ft.create_block_mask(documents, None, None, 333, 333)
        o = ft.flex_attention(q, k, v, score_mod=alibi, block_mask=block_mask, enable_gqa=True)
        torch.cuda.synchronize()
        ref, _ = attention_reference(q, k, v, mask_mod=documents, score_mod=alibi)
        self.assertLess(float((o.double() - ref).abs().max()), 0.05)
        do = torch.randn_like(o)
        grads = torch.autograd.grad(o, (q, k, v), do)
        leaves = [t.detach().double().requires_grad_() for t in (q, k, v)]
        ref, _ = attention_reference(*leaves, mask_mod=documents, score_mod=alibi)
        ref_grads = torch.autograd.grad(ref, leaves, do.double())
        for name, got, want in zip(("dq", "dk", "dv"), grads, ref_grads):
            self.assertLess(float((got.double() - want).abs().max()), 0.05 * max(1.0, float(want.abs().max())), name)
        causal = ft.create_block_mask(lambda b, h, q_idx, kv_idx: q_idx >= kv_idx, None, None, 333, 333)
        o1 = ft.flex_attention(q, k, v, block_mask=causal, enable_gqa=True)
        o2 = ft.attention(q, k, v, causal=True, enable_gqa=True)
        self.assertTrue(torch.equal(o1, o2))
        with self.assertRaisesRegex(flashc.InvalidArgumentError, "Q_LEN=100, KV_LEN=333"):
            ft.flex_attention(q, k, v, block_mask=ft.create_block_mask(documents, None, None, 100, 333),
                              enable_gqa=True)

    def test_mask_modifier_as_function(self):
        """The FlexAttention spelling: mask_mod(b, h, q_idx, kv_idx) with torch.where, traced on every call; the
        same modifier as a text form gives the same bundle; an unsupported use says what to write instead."""
        config = configs.TEST_ATTENTION_MASK_MOD[0]
        q, k, v = inputs(config, 2, 150, 150, seed=3)
        prefix = lambda b, h, q_idx, kv_idx: torch.where(kv_idx < 100, True, kv_idx <= q_idx)
        o1 = ft.attention(q, k, v, mask_mod=prefix)
        o2 = ft.attention(q, k, v, mask_mod=config.mask_mod)
        torch.cuda.synchronize()
        ref, _ = attention_reference(q, k, v, mask_mod=prefix)
        self.assertLess(float((o1.double() - ref).abs().max()), 0.05)
        self.assertTrue(torch.equal(o1, o2))  # one text, one bundle, one result
        by_head = configs.BY_HEAD_MASK  # (the batch and head indices: causal but for head 0)
        o3 = ft.attention(q, k, v, mask_mod=by_head)
        torch.cuda.synchronize()
        ref3, _ = attention_reference(q, k, v, mask_mod=by_head)
        self.assertLess(float((o3.double() - ref3).abs().max()), 0.05)
        with self.assertRaisesRegex(flashc.InvalidArgumentError, "use &, |, ~"):
            ft.attention(q, k, v, mask_mod=lambda b, h, q_idx, kv_idx: (kv_idx < 5) or (kv_idx <= q_idx))

    def test_bshd_layout(self):
        for config in (configs.TEST_ATTENTION[2], configs.TEST_ATTENTION[-3]):
            with self.subTest(config=config.describe()):
                check_against_reference(self, config, 2, 97, 131, seed=1, bshd=True)

    def test_runs_on_the_current_stream(self):
        config = configs.TEST_ATTENTION[2]
        q, k, v = inputs(config, 2, 256, 256, seed=2)
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            o = ft.attention(q, k, v, causal=config.causal)
            o_again = ft.attention(q, k, v, causal=config.causal)
        side.synchronize()
        o_lp, _ = attention_reference(q, k, v, causal=config.causal, dtype=q.dtype)
        o64, _ = attention_reference(q, k, v, causal=config.causal)
        assert_close_to_reference(self, "side stream", o, o_lp, o64)
        self.assertTrue(torch.equal(o, o_again), "two launches on the same inputs differ")

    def test_directional_derivative(self):
        """d/dt L(q + t·a, k + t·b, v + t·c) at t = 0, L = <o, w>: flashc's gradients dotted with the direction
        against float64 central finite differences of the reference. Four directions: q, k, v alone (a bug
        confined to one gradient is not diluted by the others) and all three together."""
        for config in (configs.TEST_ATTENTION[3], configs.TEST_ATTENTION[-3], configs.TEST_ATTENTION[-5],
                       configs.TEST_ATTENTION[-6], configs.TEST_ATTENTION_PADDED[7]):
            q, k, v = inputs(config, 2, 77, 77, seed=3)
            g = torch.Generator(device="cuda").manual_seed(4)
            w = torch.randn(2, config.num_heads, 77, config.value_head_dim, device="cuda", generator=g).to(q.dtype)
            _, _, grads = run_flashc(config, q, k, v, w)
            _, _, grads_lp = run_reference(config, q, k, v, w, q.dtype)
            _, _, grads64 = run_reference(config, q, k, v, w, torch.float64)
            kw = dict(causal=config.causal, scale=config.scale, window=config.window, softcap=config.softcap)
            base = [t.detach().double() for t in (q, k, v)]
            for moved in ((0,), (1,), (2,), (0, 1, 2)):
                with self.subTest(config=config.describe(), moved="".join("qkv"[i] for i in moved)):
                    direction = [torch.randn(t.shape, dtype=torch.float64, device="cuda", generator=g) * (i in moved)
                                 for i, t in enumerate(base)]

                    def loss(step):
                        o, _ = attention_reference(*[b + step * d for b, d in zip(base, direction)], **kw)
                        return float((o * w.double()).sum())

                    eps = 1e-6
                    fd = (loss(eps) - loss(-eps)) / (2 * eps)
                    dot = lambda gs: sum(float((x.double() * d).sum()) for x, d in zip(gs, direction))
                    got, baseline = dot(grads), dot(grads_lp)
                    # Bounded by the unfused computation's error along a direction: twice its error along this
                    # one, or four times its rms error along a random direction, sqrt(sum (g_lp - g64)^2 d^2)
                    # (the actual error can cancel to near zero by chance; 4 sigma keeps 16 subtests from
                    # failing by chance while a gradient 5 % off still fails most of them).
                    rms = sum(float((((x.double() - y) * d) ** 2).sum())
                              for x, y, d in zip(grads_lp, grads64, direction))
                    tol = max(2 * abs(baseline - fd), 4 * rms ** 0.5, 1e-3)
                    self.assertLessEqual(abs(got - fd), tol, "directional derivative %.6g vs finite differences "
                                                             "%.6g (unfused %s: %.6g)" % (got, fd, config.dtype,
                                                                                          baseline))

    def test_launch_errors_are_exceptions(self):
        config = configs.TEST_ATTENTION[2]
        q, k, v = inputs(config, 1, 16, 16, seed=4)
        with self.assertRaisesRegex(flashc.InvalidArgumentError, "same device|expected CUDA tensors"):
            ft.attention(q, k.detach().cpu(), v)
        if not _any_compiler():  # with no compiler, an unbuilt configuration names its key and the fix
            odd = torch.zeros(1, 3, 4, 40, device="cuda", dtype=torch.bfloat16)
            with self.assertRaisesRegex(flashc.BundleNotFoundError, "python -m flashc.prebuild"):
                ft.attention(odd, odd, odd, scale=0.123456)


def _any_compiler():
    from flashc import cache
    return cache.find_compiler() is not None


if __name__ == "__main__":
    unittest.main()
