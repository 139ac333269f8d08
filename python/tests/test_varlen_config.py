"""flashc.spec.VarlenConfig (flashc.torch.varlen_attention's configurations): the text form round-trips, bad
configurations are refused with the rule they break, and the spec compiles (when flashc is here) into a bundle
whose program says what it computes."""

import os
import tempfile
import unittest

import _support  # noqa: F401  (sys.path)
from flashc import cache, configs
from flashc.errors import InvalidArgumentError
from flashc.spec import VarlenConfig


class VarlenConfigTest(unittest.TestCase):
    def test_text_form_round_trips(self):
        for c in configs.TEST_VARLEN + configs.BENCH_VARLEN:
            text = configs.format_config(c)
            self.assertTrue(text.startswith("varlen:"))
            self.assertEqual(configs.parse_config(text), c)
        c = configs.parse_config("varlen:heads=32,kv_heads=8,head_dim=128,causal=1")
        self.assertEqual((c.causal, c.window, c.dtype, c.value_head_dim), (True, None, "bf16", 128))
        self.assertIn("flash.varlen_attention", c.spec_text())
        self.assertIn("mask = #flash.mask<causal>", c.spec_text())
        w = VarlenConfig("f16", 4, 2, 64, window=(37, 5), softcap=30.0)
        self.assertIn("sliding_window, left = 37, right = 5", w.spec_text())
        self.assertIn("softcap = 30", w.spec_text())

    def test_keys_differ(self):
        distinct = set(configs.TEST_VARLEN + configs.BENCH_VARLEN)  # (one config is in both sets)
        self.assertEqual(len({c.key for c in distinct}), len(distinct))
        self.assertNotEqual(VarlenConfig("bf16", 8, 2, 128, causal=True).key, VarlenConfig("bf16", 8, 2, 128).key)

    def test_bad_configurations(self):
        cases = [
            (dict(head_dim=100), "head_dim must be a multiple of 8 up to 256, got 100"),
            (dict(head_dim=32), "head_dim must be above 32"),
            (dict(num_heads=6, num_kv_heads=4), "must be a multiple of the number of key/value heads"),
            (dict(dtype="f32"), "varlen dtype must be bf16 or f16"),
            (dict(archs=("sm_80",)), "sm_90a only"),
            (dict(causal=True, window=(4, 2)), "causal=True allows no keys right of the diagonal"),
        ]
        for change, message in cases:
            fields = dict(dtype="bf16", num_heads=8, num_kv_heads=2, head_dim=128)
            fields.update(change)
            with self.subTest(change=change), self.assertRaisesRegex(InvalidArgumentError, message):
                VarlenConfig(**fields)
        with self.assertRaisesRegex(InvalidArgumentError, "unknown field"):
            configs.parse_config("varlen:heads=8,head_dim=128,page_size=16")

    def test_compiles(self):
        compiler = cache.find_compiler()
        if not compiler:
            self.skipTest("no flashc compiler here")
        with tempfile.TemporaryDirectory() as tmp:
            out = cache.compile_bundle(configs.TEST_VARLEN[2], os.path.join(tmp, "bundle"), compiler=compiler)
            manifest = open(os.path.join(out, "manifest.flashc")).read()
        self.assertIn("meta op attention_varlen", manifest)
        self.assertIn("meta status status", manifest)
        self.assertIn("tensor cu_seqlens_q i32 in [B1]", manifest)
        self.assertIn("tensormap q_map of q box [192, 1, 64] swizzle 128", manifest)


if __name__ == "__main__":
    unittest.main()
