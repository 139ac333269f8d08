"""flashc.torch.decode_attention on the GPU against float64 PyTorch math on the gathered cache.

Bundles: python -m flashc.prebuild --out DIR tests-decode (or the compiler). Lengths 0, 1, the capacity and ragged
ones; paged caches in shuffled pages, two sequences sharing some; contiguous caches in flash-attn's [B, S, H, D]
layout; NaN in every unused cache row (a kernel that read past a sequence would show it); outputs poisoned. A bad
length or page id must raise naming the sequence.
"""

import math
import unittest

from _support import requires_cuda

from flashc import configs

try:
    import torch
    import flashc.torch as ft
    from flashc.errors import InvalidArgumentError
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
            self.assertIn("nothing was written", str(raised.exception))  # (flashc-run checks the output is as it was)

    def test_wrong_arguments(self):
        config = configs.TEST_DECODE[1]
        q, k, v, lens, _, _, _ = make_case(config, 2, 128, seed=1)
        with self.assertRaisesRegex(InvalidArgumentError, "cache_seqlens must be int32"):
            ft.decode_attention(q, k, v, lens.long())
        with self.assertRaisesRegex(InvalidArgumentError, "must be a multiple of the cache's kv heads"):
            ft.decode_attention(q[:, :, :30], k[:, :, :8], v[:, :, :8], lens)
        with self.assertRaisesRegex(InvalidArgumentError, "head_dim must be a multiple of 64"):
            ft.decode_attention(q[..., :96], k[..., :96], v[..., :96], lens)


if __name__ == "__main__":
    unittest.main()
