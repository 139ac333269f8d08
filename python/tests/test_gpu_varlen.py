"""flashc.torch.varlen_attention on the GPU against float64 PyTorch math, sequence by sequence.

Bundles: python -m flashc.prebuild --out DIR tests-varlen (or the compiler). Packings with lengths 0, 1, ragged and
tile-sized ones, Lq != Lk (bottom-right aligned masks), NaN in the rows after the last sequence (a kernel that read
them into a result would show it), outputs poisoned (FLASHC_POISON in setup_gpu_suite). Bad offsets must raise naming
the entry and leave the outputs unwritten.
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
PACKINGS = (
    ([1, 0, 300, 129, 128, 1000], [1, 5, 300, 129, 200, 1000]),
    ([2048, 77], [2048, 77]),
    ([5, 64, 0, 191], [3000, 64, 9, 191]),
    ([513] * 3 + [1] * 7, [513] * 3 + [2] * 7),
)


def make_case(config, lens_q, lens_k, seed, tail=23):
    g = torch.Generator(device="cuda").manual_seed(seed)
    dtype = getattr(torch, DTYPES[config.dtype])
    tq, tk = sum(lens_q), sum(lens_k)
    q = torch.randn(tq + tail, config.num_heads, config.head_dim, device="cuda", generator=g).to(dtype)
    k = torch.randn(tk + tail, config.num_kv_heads, config.head_dim, device="cuda", generator=g).to(dtype)
    v = torch.randn(tk + tail, config.num_kv_heads, config.value_head_dim, device="cuda", generator=g).to(dtype)
    for t, n in ((q, tq), (k, tk), (v, tk)):
        t[n:] = float("nan")
    cu_q = torch.tensor([0] + torch.tensor(lens_q).cumsum(0).tolist(), dtype=torch.int32, device="cuda")
    cu_k = torch.tensor([0] + torch.tensor(lens_k).cumsum(0).tolist(), dtype=torch.int32, device="cuda")
    return q, k, v, cu_q, cu_k


def reference(config, q, k, v, lq, lk):
    """One sequence: out [lq, Hq, Dv], lse [Hq, lq] in float64."""
    group = config.num_heads // config.num_kv_heads
    kd = k.double().repeat_interleave(group, 1)
    vd = v.double().repeat_interleave(group, 1)
    s = torch.einsum("ihd,jhd->hij", q.double(), kd) * config.scale
    if config.softcap:
        s = config.softcap * torch.tanh(s / config.softcap)
    pos = torch.arange(lq, device="cuda").view(-1, 1) + (lk - lq)
    j = torch.arange(lk, device="cuda").view(1, -1)
    visible = torch.ones(lq, lk, dtype=torch.bool, device="cuda")
    if config.window is not None:
        left, right = config.window
        if left >= 0:
            visible &= j >= pos - left
        if right >= 0:
            visible &= j <= pos + right
    elif config.causal:
        visible &= j <= pos
    s = s.masked_fill(~visible, -math.inf)
    lse = torch.logsumexp(s, -1)
    p = torch.exp(s - lse.unsqueeze(-1)).nan_to_num(0.0)
    return torch.einsum("hij,jhd->ihd", p, vd), lse


@requires_cuda
class VarlenGpuTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        setup_gpu_suite()

    def call(self, config, q, k, v, cu_q, cu_k):
        try:
            return ft.varlen_attention(q, k, v, cu_q, cu_k, causal=config.causal,
                                       window_size=config.window or (-1, -1), softcap=config.softcap or 0.0,
                                       scale=config.scale, return_lse=True)
        except Exception as e:  # noqa: BLE001
            if type(e).__name__ == "BundleNotFoundError":
                missing_bundle_skip(self, e, optional=False)
            raise

    def test_configs(self):
        for i, config in enumerate(configs.TEST_VARLEN):
            for j, (lens_q, lens_k) in enumerate(PACKINGS):
                with self.subTest(config=config.describe(), packing=j):
                    q, k, v, cu_q, cu_k = make_case(config, lens_q, lens_k, seed=10 * i + j)
                    out, lse = self.call(config, q, k, v, cu_q, cu_k)
                    for b in range(len(lens_q)):
                        a, e = cu_q[b].item(), cu_q[b + 1].item()
                        ka, ke = cu_k[b].item(), cu_k[b + 1].item()
                        if a == e:
                            continue
                        ref_out, ref_lse = reference(config, q[a:e], k[ka:ke], v[ka:ke], e - a, ke - ka)
                        got = out[a:e]
                        self.assertFalse(torch.isnan(got).any(), "sequence %d: NaN (poison left, or a read past "
                                         "the sequence)" % b)
                        err = (got.double() - ref_out).abs().max().item()
                        self.assertLess(err, 2e-2 if config.dtype == "bf16" else 4e-3,
                                        "%s sequence %d: out error %.3g" % (config.describe(), b, err))
                        got_lse = lse[:, a:e].double()
                        self.assertTrue(torch.equal(torch.isinf(got_lse), torch.isinf(ref_lse)),
                                        "rows that see no key: lse -inf")
                        finite = torch.isfinite(ref_lse)
                        if finite.any():
                            self.assertLess((got_lse[finite] - ref_lse[finite]).abs().max().item(), 2e-3)

    def test_gradients(self):
        for i, config in enumerate(c for c in configs.TEST_VARLEN if not c.softcap):
            for j, (lens_q, lens_k) in enumerate(PACKINGS[:3]):
                with self.subTest(config=config.describe(), packing=j):
                    q, k, v, cu_q, cu_k = make_case(config, lens_q, lens_k, seed=100 + 10 * i + j)
                    tq, tk = cu_q[-1].item(), cu_k[-1].item()
                    for t, n in ((q, tq), (k, tk), (v, tk)):  # finite rows after the sequences (their grad: 0)
                        t[n:] = 0.5
                    q, k, v = (t.clone().requires_grad_() for t in (q, k, v))
                    try:
                        out = ft.varlen_attention(q, k, v, cu_q, cu_k, causal=config.causal,
                                                  window_size=config.window or (-1, -1), scale=config.scale)
                    except Exception as e:  # noqa: BLE001
                        if type(e).__name__ == "BundleNotFoundError":
                            missing_bundle_skip(self, e, optional=False)
                        raise
                    g = torch.Generator(device="cuda").manual_seed(7)
                    dout = torch.randn(out.shape, device="cuda", generator=g).to(out.dtype)
                    out.backward(dout)
                    for b in range(len(lens_q)):
                        a, e = cu_q[b].item(), cu_q[b + 1].item()
                        ka, ke = cu_k[b].item(), cu_k[b + 1].item()
                        qd, kd, vd = (t.detach()[s].double().requires_grad_()
                                      for t, s in ((q, slice(a, e)), (k, slice(ka, ke)), (v, slice(ka, ke))))
                        ref_out, _ = reference(config, qd, kd, vd, e - a, ke - ka)
                        (ref_out * dout[a:e].double()).sum().backward()
                        for name, got, want in (("dq", q.grad[a:e], qd.grad), ("dk", k.grad[ka:ke], kd.grad),
                                                ("dv", v.grad[ka:ke], vd.grad)):
                            if want.numel() == 0:
                                continue
                            self.assertFalse(torch.isnan(got).any(), "%s of sequence %d: NaN" % (name, b))
                            err = (got.double() - want).abs().max().item() / max(1.0, want.abs().max().item())
                            self.assertLess(err, 2e-2 if config.dtype == "bf16" else 5e-3,
                                            "%s %s of sequence %d: error %.3g" % (config.describe(), name, b, err))
                    for name, grad, n in (("dq", q.grad, tq), ("dk", k.grad, tk), ("dv", v.grad, tk)):
                        self.assertTrue(bool((grad[n:] == 0).all()), "%s past the last sequence: not 0" % name)

    def test_bad_offsets(self):
        config = configs.TEST_VARLEN[0]
        cases = (("cu_q", 2, 5, "cu_seqlens_q[2] = 5 is below cu_seqlens_q[1]"),
                 ("cu_k", 3, 100000, "cu_seqlens_k[3] = 100000 is past the"),
                 ("cu_q", 0, -3, "cu_seqlens_q[0] = -3 is negative"))
        deferred = ft._defer_checks
        ft.defer_checks(False)  # each call waits for its verdict
        try:
            for which, index, value, expected in cases:
                with self.subTest(expected=expected):
                    q, k, v, cu_q, cu_k = make_case(config, [100, 200, 50], [100, 200, 50], seed=3, tail=0)
                    (cu_q if which == "cu_q" else cu_k)[index] = value
                    with self.assertRaises(InvalidArgumentError) as raised:
                        ft.varlen_attention(q, k, v, cu_q, cu_k, causal=True)
                    self.assertIn(expected, str(raised.exception))
                    self.assertIn("this op's outputs hold NaN and nothing else was written", str(raised.exception))
        finally:
            ft.defer_checks(deferred)

    def test_deferred_checks(self):
        config = configs.TEST_VARLEN[0]
        q, k, v, cu_q, cu_k = make_case(config, [100, 200, 50], [100, 200, 50], seed=4, tail=0)
        bad = cu_q.clone()
        bad[2] = 5
        deferred = ft._defer_checks
        ft.defer_checks(True)  # (the default)
        try:
            self.call(config, q, k, v, cu_q, cu_k)  # good: no wait
            out, lse = ft.varlen_attention(q, k, v, bad, cu_k, causal=True, return_lse=True)  # bad: returns at once
            self.assertTrue(bool(torch.isnan(out).all()) and bool(torch.isnan(lse).all()),
                            "a rejected call's outputs must be NaN")
            with self.assertRaises(InvalidArgumentError) as raised:
                torch.cuda.synchronize()
                ft.varlen_attention(q, k, v, cu_q, cu_k, causal=True)  # the next call reports it, and is not made
            self.assertIn("an earlier launch of program 'varlen'", str(raised.exception))
            self.assertIn("cu_seqlens_q[2] = 5 is below cu_seqlens_q[1]", str(raised.exception))
            ft.varlen_attention(q, k, v, bad, cu_k, causal=True)
            with self.assertRaisesRegex(InvalidArgumentError, "cu_seqlens_q\\[2\\] = 5"):
                ft.check_deferred()
            ft.check_deferred()  # reported once
            out, lse = self.call(config, q, k, v, cu_q, cu_k)  # good calls go on
            ft.check_deferred()
            # A training step: the bad forward's verdict raises at its backward (the backward program is not made).
            qg, kg, vg = (t.detach().clone().requires_grad_() for t in (q, k, v))
            out = ft.varlen_attention(qg, kg, vg, bad, cu_k, causal=True)
            with self.assertRaisesRegex(InvalidArgumentError, "cu_seqlens_q\\[2\\] = 5"):
                out.float().sum().backward()
            ft.check_deferred()
        finally:
            ft.defer_checks(deferred)

    def test_wrong_arguments(self):
        config = configs.TEST_VARLEN[0]
        q, k, v, cu_q, cu_k = make_case(config, [10, 20], [10, 20], seed=1)
        with self.assertRaisesRegex(InvalidArgumentError, "cu_seqlens_q must be int32"):
            ft.varlen_attention(q, k, v, cu_q.long(), cu_k)
        with self.assertRaisesRegex(InvalidArgumentError, "the same length"):
            ft.varlen_attention(q, k, v, cu_q, cu_k[:2])
        with self.assertRaisesRegex(InvalidArgumentError, r"packed \[total tokens"):
            ft.varlen_attention(q.unsqueeze(0), k, v, cu_q, cu_k)


if __name__ == "__main__":
    unittest.main()
