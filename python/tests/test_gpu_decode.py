"""flashc.torch.decode_attention and kv_append on the GPU against float64 PyTorch math on the gathered cache.

Bundles: python -m flashc.prebuild --out DIR tests-decode (or the compiler). Lengths 0, 1, the capacity and ragged
ones; paged caches in shuffled pages, two sequences sharing some; contiguous caches in flash-attn's [B, S, H, D]
layout; NaN in every unused cache row (a kernel that read past a sequence would show it); outputs poisoned. A bad
length or page id must raise naming the sequence. The append (alone, or fused before the decode with k= and v=)
must write exactly the new rows (compared bit for bit with PyTorch's copy) and nothing on a bad table.
"""

import math
import unittest

from _support import requires_cuda

from flashc import configs

try:
    import torch
    import flashc.torch as ft
    from flashc.errors import InvalidArgumentError
    from flashc.spec import DecodeConfig
    from _gpu import missing_bundle_skip, setup_gpu_suite
except ImportError:
    pass

DTYPES = {"bf16": "bfloat16", "f16": "float16"}


def make_case(config, batch, capacity, seed):
    g = torch.Generator(device="cuda").manual_seed(seed)
    dtype = getattr(torch, DTYPES[config.dtype])
    hq, hkv, t, d, dv, page = (config.num_heads, config.num_kv_heads, config.queries, config.head_dim,
                               config.value_head_dim, config.page_size)
    if page:
        capacity = -(-capacity // page) * page
    lens = [capacity, 0, 1] + [int(x) for x in torch.randint(0, capacity + 1, (max(0, batch - 3),), generator=g,
                                                               device="cuda").tolist()]
    lens = lens[:batch]
    q = torch.randn(batch, t, hq, d, device="cuda", generator=g).to(dtype)
    if page:
        width = capacity // page
        pages = batch * width + 3
        k = torch.randn(pages, page, hkv, d, device="cuda", generator=g).to(dtype)
        v = torch.randn(pages, page, hkv, dv, device="cuda", generator=g).to(dtype)
        table = torch.randperm(pages, device="cuda", generator=g)[: batch * width].view(batch, width)
        if batch > 1:
            table[1, : width // 2] = table[0, : width // 2]  # pages shared by two sequences
        for b, n in enumerate(lens):  # unused rows and table entries: NaN and garbage, never read
            used = -(-n // page)
            if n % page:
                k[table[b, used - 1], n % page:] = float("nan")
                v[table[b, used - 1], n % page:] = float("nan")
        table = table.to(torch.int32)
        # keys as [B, Hkv, capacity, D] for the reference (gathered through the table)
        kd = k[table.long()].reshape(batch, capacity, hkv, d).transpose(1, 2)
        vd = v[table.long()].reshape(batch, capacity, hkv, dv).transpose(1, 2)
        for b, n in enumerate(lens):
            table[b, -(-n // page):] = -5
    else:
        table = None
        k = torch.randn(batch, capacity, hkv, d, device="cuda", generator=g).to(dtype)
        v = torch.randn(batch, capacity, hkv, dv, device="cuda", generator=g).to(dtype)
        for b, n in enumerate(lens):
            k[b, n:] = float("nan")
            v[b, n:] = float("nan")
        kd, vd = k.transpose(1, 2), v.transpose(1, 2)
    return q, k, v, torch.tensor(lens, dtype=torch.int32, device="cuda"), table, kd, vd


def reference(config, q, kd, vd, lens):
    """out [B, T, Hq, Dv], lse [B, Hq, T] in float64."""
    group = config.num_heads // config.num_kv_heads
    kd = torch.nan_to_num(kd.double()).repeat_interleave(group, 1)
    vd = torch.nan_to_num(vd.double()).repeat_interleave(group, 1)
    s = torch.einsum("bthd,bhjd->bhtj", q.double(), kd) * config.scale
    j = torch.arange(kd.shape[2], device="cuda").view(1, 1, 1, -1)
    n = lens.long().view(-1, 1, 1, 1)
    visible = j < n
    if config.causal:
        visible = visible & (j <= n - config.queries + torch.arange(config.queries, device="cuda").view(1, 1, -1, 1))
    s = s.masked_fill(~visible, -math.inf)
    lse = torch.logsumexp(s, -1)
    p = torch.exp(s - lse.unsqueeze(-1)).nan_to_num(0.0)
    return torch.einsum("bhtj,bhjd->bthd", p, vd), lse


def make_append_case(dtype, hkv, d, dv, page, tokens, batch, capacity, seed):
    """Caches, new tokens [B, T, Hkv, D / Dv] and lengths before the append (capacity - T, 0 and ragged); a paged
    cache's pages a shuffle (no two sequences write one row); contiguous rows past the appended lengths NaN."""
    g = torch.Generator(device="cuda").manual_seed(seed)
    dtype = getattr(torch, DTYPES[dtype])
    if page:
        capacity = -(-capacity // page) * page
    before = [capacity - tokens, 0] + [int(x) for x in torch.randint(0, capacity - tokens + 1, (max(0, batch - 2),),
                                                                      generator=g, device="cuda").tolist()]
    before = before[:batch]
    if page:
        width = capacity // page
        pages = batch * width + 3
        k = torch.randn(pages, page, hkv, d, device="cuda", generator=g).to(dtype)
        v = torch.randn(pages, page, hkv, dv, device="cuda", generator=g).to(dtype)
        table = torch.randperm(pages, device="cuda", generator=g)[: batch * width].view(batch, width).to(torch.int32)
    else:
        table = None
        k = torch.randn(batch, capacity, hkv, d, device="cuda", generator=g).to(dtype)
        v = torch.randn(batch, capacity, hkv, dv, device="cuda", generator=g).to(dtype)
        for b, n in enumerate(before):
            k[b, n + tokens:] = float("nan")
            v[b, n + tokens:] = float("nan")
    k_new = torch.randn(batch, tokens, hkv, d, device="cuda", generator=g).to(dtype)
    v_new = torch.randn(batch, tokens, hkv, dv, device="cuda", generator=g).to(dtype)
    return k, v, k_new, v_new, torch.tensor(before, dtype=torch.int32, device="cuda"), table


def appended(k, v, k_new, v_new, before, table):
    """The caches with token t of sequence b at row before[b] + t (PyTorch's copy: the reference)."""
    k, v = k.clone(), v.clone()
    for b, n in enumerate(before.tolist()):
        for t in range(k_new.shape[1]):
            if table is not None:
                page = k.shape[1]
                at = (int(table[b, (n + t) // page]), (n + t) % page)
            else:
                at = (b, n + t)
            k[at] = k_new[b, t]
            v[at] = v_new[b, t]
    return k, v


def gathered(k, v, table):
    """A cache as [B, Hkv, capacity, D] (a paged one through its table)."""
    if table is None:
        return k.transpose(1, 2), v.transpose(1, 2)
    batch, width = table.shape
    page = k.shape[1]
    kd = k[table.long()].reshape(batch, width * page, k.shape[2], k.shape[3]).transpose(1, 2)
    vd = v[table.long()].reshape(batch, width * page, v.shape[2], v.shape[3]).transpose(1, 2)
    return kd, vd


def same_bits(a, b):
    return torch.equal(a.view(torch.int16), b.view(torch.int16))


@requires_cuda
class DecodeGpuTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        setup_gpu_suite()

    def run_config(self, config, batch, capacity, seed):
        q, k, v, lens, table, kd, vd = make_case(config, batch, capacity, seed)
        try:
            out, lse = ft.decode_attention(q, k, v, lens, block_table=table, causal=config.causal, scale=config.scale,
                                           return_lse=True)
        except Exception as e:  # noqa: BLE001
            if type(e).__name__ == "BundleNotFoundError":
                missing_bundle_skip(self, e, optional=False)
            raise
        ref_out, ref_lse = reference(config, q, kd, vd, lens)
        self.assertFalse(torch.isnan(out).any(), "NaN in the output (poison left, or a read past a sequence)")
        err = (out.double() - ref_out).abs().max().item()
        self.assertLess(err, 2e-2 if config.dtype == "bf16" else 4e-3, "%s: out error %.3g" % (config.describe(), err))
        self.assertTrue(torch.equal(torch.isinf(lse), torch.isinf(ref_lse)), "rows that see no key: lse -inf")
        finite = torch.isfinite(ref_lse)
        if finite.any():
            self.assertLess((lse.double()[finite] - ref_lse[finite]).abs().max().item(), 2e-3)
        return q, k, v, lens, table

    def test_configs(self):
        for i, config in enumerate(configs.TEST_DECODE):
            for batch, capacity in ((3, 300), (1, 4097), (17, 1000)):
                with self.subTest(config=config.describe(), batch=batch, capacity=capacity):
                    self.run_config(config, batch, capacity, seed=i * 10 + batch)

    def setUp(self):
        self.deferred = ft._defer_checks
        ft.defer_checks(False)  # the tests below read each call's verdict at once (test_deferred: the default)

    def tearDown(self):
        ft.defer_checks(self.deferred)

    def test_bad_tables(self):
        for config in configs.TEST_DECODE[:2]:
            q, k, v, lens, table = self.run_config(config, 3, 300, seed=5)
            if table is not None:
                table[2, 0] = k.shape[0] + 3  # a page past the cache, which sequence 2 (length 1) uses
                expected = "block_table[2][0] = %d is not a page of the cache" % (k.shape[0] + 3)
            else:
                lens[2] = k.shape[1] + 1
                expected = "cache_seqlens[2] = %d is over the cache's %d rows" % (k.shape[1] + 1, k.shape[1])
            with self.assertRaises(InvalidArgumentError) as raised:
                ft.decode_attention(q, k, v, lens, block_table=table, causal=config.causal, scale=config.scale)
            self.assertIn(expected, str(raised.exception))
            self.assertIn("this op's outputs hold NaN and nothing else was written", str(raised.exception))

    def test_deferred(self):
        # The default: a bad table's call returns at once with out and lse NaN (and, fused, the cache not written);
        # the next call of the configuration raises (and is not made), as check_deferred() does.
        ft.defer_checks(True)
        config = configs.TEST_APPEND[0]
        k, v, k_new, v_new, before, table = make_append_case(config.dtype, config.num_kv_heads, config.head_dim,
                                                              config.value_head_dim, config.page_size, 1, 3, 300, 9)
        q = torch.randn(3, 1, config.num_heads, config.head_dim, device="cuda").to(k.dtype)
        table[2, 0] = k.shape[0] + 7
        k0 = k.clone()
        out, lse = ft.decode_attention(q, k, v, before, block_table=table, k=k_new, v=v_new, return_lse=True)
        torch.cuda.synchronize()
        self.assertTrue(bool(torch.isnan(out).all()) and bool(torch.isnan(lse).all()), "outputs of a rejected call")
        self.assertTrue(same_bits(k, k0), "a rejected append wrote the cache")
        with self.assertRaisesRegex(InvalidArgumentError, "block_table\\[2\\]\\[0\\] = %d" % (k.shape[0] + 7)):
            ft.check_deferred()
        table[2, 0] = 0
        ft.decode_attention(q, k, v, before, block_table=table, k=k_new, v=v_new)
        ft.check_deferred()

    def test_append(self):
        for i, config in enumerate(configs.TEST_APPEND):
            fused = isinstance(config, DecodeConfig)
            tokens = config.queries if fused else 5  # (the append alone: any number; 5 is two blocks of 4)
            hkv = config.num_kv_heads
            for batch, capacity in ((3, 300), (17, 1000)):
                with self.subTest(config=config.describe(), batch=batch, capacity=capacity):
                    k, v, k_new, v_new, before, table = make_append_case(
                        config.dtype, hkv, config.head_dim, config.value_head_dim, config.page_size, tokens, batch,
                        capacity, seed=i * 10 + batch)
                    ref_k, ref_v = appended(k, v, k_new, v_new, before, table)
                    try:
                        if fused:
                            g = torch.Generator(device="cuda").manual_seed(i)
                            q = torch.randn(batch, tokens, config.num_heads, config.head_dim, device="cuda",
                                            generator=g).to(k.dtype)
                            out, lse = ft.decode_attention(q, k, v, before, block_table=table, causal=config.causal,
                                                           scale=config.scale, return_lse=True, k=k_new, v=v_new)
                        else:
                            ft.kv_append(k, v, k_new, v_new, before, block_table=table)
                    except Exception as e:  # noqa: BLE001
                        if type(e).__name__ == "BundleNotFoundError":
                            missing_bundle_skip(self, e, optional=False)
                        raise
                    self.assertTrue(same_bits(k, ref_k) and same_bits(v, ref_v),
                                    "the caches after the append are not PyTorch's copy")
                    if fused:
                        kd, vd = gathered(ref_k, ref_v, table)
                        ref_out, ref_lse = reference(config, q, kd, vd, before + tokens)
                        err = (out.double() - ref_out).abs().max().item()
                        self.assertLess(err, 2e-2 if config.dtype == "bf16" else 4e-3, "out error %.3g" % err)
                        self.assertLess((lse.double() - ref_lse).abs().max().item(), 2e-3)

    def test_append_bad_tables(self):
        for config in (configs.TEST_APPEND[2], configs.TEST_APPEND[3], configs.TEST_APPEND[0]):
            fused = isinstance(config, DecodeConfig)
            tokens = config.queries if fused else 3
            k, v, k_new, v_new, before, table = make_append_case(
                config.dtype, config.num_kv_heads, config.head_dim, config.value_head_dim, config.page_size, tokens,
                3, 300, seed=3)
            capacity = table.shape[1] * k.shape[1] if table is not None else k.shape[1]
            if table is not None:
                table[1, 0] = k.shape[0] + 3  # a page past the cache, which sequence 1 (0 + T rows) uses
                expected = "block_table[1][0] = %d is not a page of the cache" % (k.shape[0] + 3)
            else:
                before[1] = capacity - tokens + 1
                expected = "cache_seqlens[1] = %d (the length with the new tokens) is over the cache's %d rows" % (
                    capacity + 1, capacity)
            k0, v0 = k.clone(), v.clone()
            with self.subTest(config=config.describe()), self.assertRaises(InvalidArgumentError) as raised:
                if fused:
                    q = torch.randn(3, tokens, config.num_heads, config.head_dim, device="cuda").to(k.dtype)
                    ft.decode_attention(q, k, v, before, block_table=table, k=k_new, v=v_new)
                else:
                    ft.kv_append(k, v, k_new, v_new, before, block_table=table)
            self.assertIn(expected, str(raised.exception))
            self.assertIn("sequence 1", str(raised.exception))
            self.assertTrue(same_bits(k, k0) and same_bits(v, v0), "a bad table wrote the caches")

    def test_wrong_arguments(self):
        config = configs.TEST_DECODE[1]
        q, k, v, lens, _, _, _ = make_case(config, 2, 128, seed=1)
        with self.assertRaisesRegex(InvalidArgumentError, "cache_seqlens must be int32"):
            ft.decode_attention(q, k, v, lens.long())
        with self.assertRaisesRegex(InvalidArgumentError, "must be a multiple of the cache's kv heads"):
            ft.decode_attention(q[:, :, :30], k[:, :, :8], v[:, :, :8], lens)
        with self.assertRaisesRegex(InvalidArgumentError, "head_dim must be a multiple of 64"):
            ft.decode_attention(q[..., :96], k[..., :96], v[..., :96], lens)
        k_new = torch.zeros(2, config.queries, config.num_kv_heads, config.head_dim, device="cuda", dtype=k.dtype)
        with self.assertRaisesRegex(InvalidArgumentError, "k and v come together"):
            ft.decode_attention(q, k, v, lens, k=k_new)
        with self.assertRaisesRegex(InvalidArgumentError, r"k \[2, 2, 8, 128\] and v .* must be \[batch, new tokens"):
            ft.decode_attention(q, k, v, lens, k=k_new.repeat(1, 2, 1, 1), v=k_new)
        with self.assertRaisesRegex(InvalidArgumentError, "kv_append: k and v must have the cache's dtype"):
            ft.kv_append(k, v, k_new.float(), k_new.float(), lens)
        with self.assertRaisesRegex(InvalidArgumentError, "kv_append: cache_seqlens must be int32"):
            ft.kv_append(k, v, k_new, k_new, lens.long())


if __name__ == "__main__":
    unittest.main()
