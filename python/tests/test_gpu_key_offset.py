"""flashc.torch.attention(key_offset=...) on the GPU against PyTorch float64 math: query row i at key position
i + key_offset instead of i + Sk - Sq, for the causal mask and sliding windows (configs.TEST_ATTENTION_KEY_OFFSET:
bf16 and f16, D 64 and 128, no mask, causal, causal windows 16 and 96, the non-causal window (64, 32), softcap,
GQA), forward (o, lse) and backward (dq, dk, dv).

Offsets: 0, Sk - Sq (the static alignment), small negative and positive ones, past Sk (causal: every row sees
every key; windows: rows see none), below -Sq (causal: no row sees a key), and the int32 extremes
(+-(2^31 - 1), -2^31): rows that see no key must give o = 0, lse = -inf and no gradient. The kernels clamp the
offset internally; the result must be exact for any value. One bundle serves every offset: each config is loaded
once. Bundles come from FLASHC_BUNDLE_PATH / the cache (python -m flashc.prebuild --out DIR tests-key-offset; the
set is part of 'tests') or the compiler. Every output is poisoned with NaN before each launch.
"""

import unittest

from _support import requires_cuda

from flashc import configs

try:
    import torch
    import flashc.torch as ft
    from flashc.testing import attention_reference
    from _gpu import assert_close_to_reference, attention_inputs, setup_gpu_suite
except ImportError:
    pass

# (B, Sq, Sk): Sq == Sk, fewer and more queries than keys, a single query.
SHAPES = [(2, 128, 128), (1, 77, 200), (2, 200, 65), (1, 1, 77)]
INT32_MAX = 2 ** 31 - 1


def offsets(seq_q, seq_k):
    """The key offsets checked for one shape, without repeats."""
    values = [0, seq_k - seq_q, -1, -37, 5, 100, seq_k + 3, -seq_q - 2, -seq_q, INT32_MAX, -INT32_MAX, -INT32_MAX - 1]
    return list(dict.fromkeys(values))


def reference(config, q, k, v, do, key_offset, dtype):
    leaves = [t.detach().to(dtype).requires_grad_() for t in (q, k, v)]
    o, lse = attention_reference(*leaves, causal=config.causal, scale=config.scale, window=config.window,
                                 softcap=config.softcap, dtype=dtype, key_offset=key_offset)
    return o, lse, torch.autograd.grad(o, leaves, do.to(dtype))


@requires_cuda
class KeyOffsetGpuTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        setup_gpu_suite()

    def check(self, config, batch, seq_q, seq_k, key_offset, seed=0):
        label = "%s B=%d Sq=%d Sk=%d key_offset=%d" % (config.describe(), batch, seq_q, seq_k, key_offset)
        q, k, v, do = attention_inputs(config, batch, seq_q, seq_k, seed)
        o, lse = ft.attention(q, k, v, causal=config.causal, scale=config.scale, window=config.window,
                              softcap=config.softcap or None, enable_gqa=config.num_heads != config.num_kv_heads,
                              return_lse=True, key_offset=key_offset)
        grads = torch.autograd.grad(o, (q, k, v), do)
        torch.cuda.synchronize()
        o64, lse64, grads64 = reference(config, q, k, v, do, key_offset, torch.float64)
        o_lp, lse_lp, grads_lp = reference(config, q, k, v, do, key_offset, q.dtype)
        self.assertEqual(o.dtype, q.dtype)
        # Rows that see no key: exactly 0 and -inf (max_abs_error also requires -inf where the reference has it).
        dead = torch.isinf(lse64)
        if bool(dead.any()):
            self.assertTrue(bool((o[dead] == 0).all()), label + ": rows that see no key must give o = 0")
        assert_close_to_reference(self, label + " o", o, o_lp, o64)
        assert_close_to_reference(self, label + " lse", lse, lse_lp, lse64, floor=1e-3)
        for name, got, base, ref in zip(("dq", "dk", "dv"), grads, grads_lp, grads64):
            self.assertEqual(got.shape, ref.shape, name)
            assert_close_to_reference(self, label + " " + name, got, base, ref)

    def test_configs_shapes_and_offsets(self):
        for config in configs.TEST_ATTENTION_KEY_OFFSET:
            for batch, seq_q, seq_k in SHAPES:
                for key_offset in offsets(seq_q, seq_k):
                    with self.subTest(config=config.describe(), batch=batch, seq_q=seq_q, seq_k=seq_k,
                                      key_offset=key_offset):
                        self.check(config, batch, seq_q, seq_k, key_offset)

    def test_one_bundle_for_every_offset(self):
        config = configs.TEST_ATTENTION_KEY_OFFSET[0]
        q, k, v, _ = attention_inputs(config, 1, 64, 64, seed=1)
        before = set(ft._resolved)
        for key_offset in (0, -3, 17, INT32_MAX):
            ft.attention(q, k, v, causal=config.causal, key_offset=key_offset)
        self.assertIn((config.key, "forward"), ft._resolved)
        self.assertLessEqual({key for key, _ in set(ft._resolved) - before}, {config.key})


if __name__ == "__main__":
    unittest.main()
