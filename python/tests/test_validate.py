"""Argument checks of flashc.torch (written without torch, so they run everywhere): each wrong argument gives a
PyTorch-style message naming it."""

import unittest

import _support  # noqa: F401  (sys.path)
from flashc import InvalidArgumentError
from flashc.spec import AttentionConfig, FfnConfig
from flashc.validate import TensorInfo, attention_config, ffn_config, key_offset_value

BF16, F16, F32 = "torch.bfloat16", "torch.float16", "torch.float32"


def t(*shape, dtype=BF16, device="cuda:0"):
    return TensorInfo(tuple(shape), dtype, device)


class AttentionArgumentsTest(unittest.TestCase):
    def check(self, message, q, k, v, **kwargs):
        with self.assertRaises(InvalidArgumentError) as ctx:
            attention_config(q, k, v, **kwargs)
        self.assertIn(message, str(ctx.exception))
        self.assertTrue(str(ctx.exception).startswith("flashc.attention: "), str(ctx.exception))

    def test_valid(self):
        c = attention_config(t(2, 8, 100, 64), t(2, 2, 37, 64), t(2, 2, 37, 32), causal=True, enable_gqa=True,
                             softcap=30)
        self.assertEqual(c, AttentionConfig("bf16", 8, 2, 64, value_head_dim=32, causal=True, softcap=30.0))
        self.assertEqual(attention_config(t(1, 4, 5, 128, dtype=F16), t(1, 4, 5, 128, dtype=F16),
                                          t(1, 4, 5, 128, dtype=F16)).dtype, "f16")

    def test_key_offset(self):
        c = attention_config(t(1, 2, 5, 64), t(1, 2, 9, 64), t(1, 2, 9, 64), causal=True, window=8, key_offset=True)
        self.assertEqual(c, AttentionConfig("bf16", 2, 2, 64, causal=True, window=(8, 0), key_offset=True))
        for good in (0, -7, 2 ** 31 - 1, -2 ** 31, None):
            self.assertEqual(key_offset_value("attention", good), good)
        for bad, message in ((True, "key_offset must be an integer (the key position of query row 0) or None, but "
                                    "got bool"),
                             (2.0, "but got float"), ([1], "but got list"),
                             (2 ** 31, "key_offset must fit in int32 [-2147483648, 2147483647], but got 2147483648"),
                             (-2 ** 31 - 1, "but got -2147483649")):
            with self.subTest(bad=bad), self.assertRaises(InvalidArgumentError) as ctx:
                key_offset_value("attention", bad)
            self.assertIn(message, str(ctx.exception))
            self.assertTrue(str(ctx.exception).startswith("flashc.attention: "))

    def test_rank(self):
        self.check("expected query to be a 4-D tensor [B, H, S, D], but got a 3-D tensor of shape (8, 100, 64)",
                   t(8, 100, 64), t(2, 8, 37, 64), t(2, 8, 37, 64))
        self.check("expected value to be a 4-D tensor [B, H, S, D], but got a 5-D tensor",
                   t(2, 8, 100, 64), t(2, 8, 37, 64), t(1, 2, 8, 37, 64))

    def test_dtype(self):
        self.check("expected query, key and value to have the same dtype, but got query.dtype: torch.bfloat16, "
                   "key.dtype: torch.float16 and value.dtype: torch.bfloat16 instead",
                   t(2, 8, 10, 64), t(2, 8, 10, 64, dtype=F16), t(2, 8, 10, 64))
        self.check("expected query, key and value of dtype torch.bfloat16 or torch.float16, but got torch.float32",
                   t(2, 8, 10, 64, dtype=F32), t(2, 8, 10, 64, dtype=F32), t(2, 8, 10, 64, dtype=F32))

    def test_device(self):
        self.check("expected CUDA tensors, but got query, key and value on device cpu",
                   t(2, 8, 10, 64, device="cpu"), t(2, 8, 10, 64, device="cpu"), t(2, 8, 10, 64, device="cpu"))
        self.check("expected query, key and value to be on the same device, but got query.device: cuda:0, "
                   "key.device: cuda:1 and value.device: cuda:0 instead",
                   t(2, 8, 10, 64), t(2, 8, 10, 64, device="cuda:1"), t(2, 8, 10, 64))

    def test_shapes(self):
        self.check("same batch size, but got query.size(0): 2, key.size(0): 3 and value.size(0): 3",
                   t(2, 8, 10, 64), t(3, 8, 10, 64), t(3, 8, 10, 64))
        self.check("expected key and value to have the same number of heads and sequence length, but got key "
                   "shape (2, 8, 10, 64) and value shape (2, 8, 11, 64)",
                   t(2, 8, 10, 64), t(2, 8, 10, 64), t(2, 8, 11, 64))
        self.check("same head dimension, but got query.size(-1): 64 and key.size(-1): 128",
                   t(2, 8, 10, 64), t(2, 8, 10, 128), t(2, 8, 10, 128))
        self.check("heads and head dimensions must be positive", t(2, 0, 10, 64), t(2, 0, 10, 64), t(2, 0, 10, 64))

    def test_gqa(self):
        self.check("query has 8 heads but key and value have 2; pass enable_gqa=True",
                   t(2, 8, 10, 64), t(2, 2, 10, 64), t(2, 2, 10, 64))
        self.check("number of heads in query (6) must be divisible by the number of heads in key and value (4) "
                   "when enable_gqa=True", t(2, 6, 10, 64), t(2, 4, 10, 64), t(2, 4, 10, 64), enable_gqa=True)

    def test_options(self):
        q = t(2, 2, 10, 64)
        self.check("causal=True allows no keys right of the diagonal", q, q, q, causal=True, window=(4, 4))
        self.check("softcap must be a number or None, got str", q, q, q, softcap="30")
        self.check("scale must be a number or None, got bool", q, q, q, scale=True)
        self.check("softcap must be a finite number >= 0", q, q, q, softcap=-3.0)


class FfnArgumentsTest(unittest.TestCase):
    def check(self, message, *args, **kwargs):
        with self.assertRaises(InvalidArgumentError) as ctx:
            ffn_config(*args, **kwargs)
        self.assertIn(message, str(ctx.exception))
        self.assertTrue(str(ctx.exception).startswith("flashc.ffn: "), str(ctx.exception))

    def test_valid(self):
        c = ffn_config(t(4, 7, 64), t(64, 256), t(256), t(256, 32), t(32), activation="gelu_erf")
        self.assertEqual(c, FfnConfig("bf16", 64, 256, d_out=32, activation="gelu_erf", has_b1=True, has_b2=True))
        g = ffn_config(t(9, 64), t(64, 256), None, t(256, 64), None, activation="silu", w_gate=t(64, 256))
        self.assertEqual(g, FfnConfig("bf16", 64, 256, activation="silu", gated=True))

    def test_errors(self):
        self.check("activation must be one of 'gelu_tanh', 'gelu_erf', 'silu', 'relu', but got 'gelu'",
                   t(4, 64), t(64, 256), None, t(256, 64), activation="gelu")
        self.check("w2 is required", t(4, 64), t(64, 256))
        self.check("expected w1 to be a 2-D tensor, but got a 3-D tensor", t(4, 64), t(1, 64, 256), None, t(256, 64))
        self.check("expected b1 to be a 1-D tensor, but got a 2-D tensor", t(4, 64), t(64, 256), t(1, 256), t(256, 64))
        self.check("x.size(-1) (32) must match w1.size(0) (64)", t(4, 32), t(64, 256), None, t(256, 64))
        self.check("expected b1 of shape (256,) to match w1.size(1), but got (128,)", t(4, 64), t(64, 256), t(128),
                   t(256, 64))
        self.check("w2.size(0) (128) must match the hidden size w1.size(1) (256)", t(4, 64), t(64, 256), None,
                   t(128, 64))
        self.check("expected b2 of shape (64,) to match w2.size(1), but got (65,)", t(4, 64), t(64, 256), None,
                   t(256, 64), t(65))
        self.check("expected w_gate to have the shape of w1 (64, 256), but got (64, 128)", t(4, 64), t(64, 256), None,
                   t(256, 64), w_gate=t(64, 128))
        self.check("a gated FFN (w_gate given) takes no b1", t(4, 64), t(64, 256), t(256), t(256, 64),
                   w_gate=t(64, 256))
        self.check("expected x, w1 and w2 to have the same dtype, but got x.dtype: torch.bfloat16, w1.dtype: "
                   "torch.float32 and w2.dtype: torch.bfloat16", t(4, 64), t(64, 256, dtype=F32), None, t(256, 64))
        self.check("expected CUDA tensors, but got x, w1 and w2 on device cpu", t(4, 64, device="cpu"),
                   t(64, 256, device="cpu"), None, t(256, 64, device="cpu"))
        self.check("expected x to have at least 1 dimension", t(), t(64, 256), None, t(256, 64))


if __name__ == "__main__":
    unittest.main()
