"""flashc.spec.DecodeConfig and KvAppendConfig (flashc.torch.decode_attention's and kv_append's configurations):
the text form round-trips, bad configurations are refused with the rule they break, and the spec compiles (when
flashc is here) into a bundle whose program says what it computes."""

import os
import tempfile
import unittest

import _support  # noqa: F401  (sys.path)
from flashc import cache, configs
from flashc.errors import FlashcError, InvalidArgumentError
from flashc.spec import DecodeConfig, KvAppendConfig


class DecodeConfigTest(unittest.TestCase):
    def test_text_form_round_trips(self):
        for c in configs.TEST_DECODE:
            text = configs.format_config(c)
            self.assertTrue(text.startswith("decode:"))
            self.assertEqual(configs.parse_config(text), c)
        c = configs.parse_config("decode:heads=32,kv_heads=8,head_dim=128,page_size=64")
        self.assertEqual((c.queries, c.causal, c.page_size, c.dtype), (1, True, 64, "bf16"))
        self.assertIn("flash.decode_attention", c.spec_text())
        self.assertIn("block_table %table", c.spec_text())
        self.assertNotIn("block_table", DecodeConfig("bf16", 32, 8, 128).spec_text())

    def test_append_text_forms_round_trip(self):
        for c in configs.TEST_APPEND:
            text = configs.format_config(c)
            self.assertEqual(configs.parse_config(text), c, text)
        fused = configs.parse_config("decode:heads=32,kv_heads=8,head_dim=128,page_size=64,append=1")
        self.assertTrue(fused.append)
        self.assertIn("flash.kv_append %k_new, %v_new into %k, %v, %lens page_size = 64 block_table %table",
                      fused.spec_text())
        self.assertIn("flash.decode_attention %q, %k2, %v2, %lens", fused.spec_text())
        alone = configs.parse_config("kv_append:kv_heads=2,head_dim=64,value_head_dim=40")
        self.assertEqual((alone.page_size, alone.value_head_dim, alone.dtype), (0, 40, "bf16"))
        self.assertIn("tensor<?x2x?x64xbf16>", alone.spec_text())  # any number of new tokens
        self.assertNotEqual(DecodeConfig("bf16", 8, 2, 128, append=True).key, DecodeConfig("bf16", 8, 2, 128).key)
        for change, message in ((dict(head_dim=36), "head_dim must be a positive multiple of 8"),
                                (dict(page_size=8), "page_size must be 0"), (dict(dtype="f32"), "kv_append dtype")):
            fields = dict(dtype="bf16", num_kv_heads=2, head_dim=64)
            fields.update(change)
            with self.subTest(change=change), self.assertRaisesRegex(InvalidArgumentError, message):
                KvAppendConfig(**fields)
        with self.assertRaisesRegex(InvalidArgumentError, "missing field kv_heads"):
            configs.parse_config("kv_append:head_dim=64")

    def test_keys_differ_by_layout_and_tokens(self):
        keys = {c.key for c in configs.TEST_DECODE}
        self.assertEqual(len(keys), len(configs.TEST_DECODE))
        self.assertNotEqual(DecodeConfig("bf16", 8, 2, 128, queries=2).key, DecodeConfig("bf16", 8, 2, 128).key)

    def test_bad_configurations(self):
        cases = [
            (dict(head_dim=96), "head_dim must be a multiple of 64 up to 256, got 96"),
            (dict(queries=17), "1 to 16 new tokens"),
            (dict(page_size=48), r"page_size must be 0 \(a contiguous cache\) or a power of two from 16 to 256"),
            (dict(num_heads=6, num_kv_heads=4), "must be a multiple of the number of key/value heads"),
            (dict(dtype="f32"), "decode dtype must be one of bf16, f16"),
            (dict(archs=("sm_80",)), "sm_90a only"),
            (dict(scale=-1.0), "scale must be finite and positive"),
        ]
        for change, message in cases:
            fields = dict(dtype="bf16", num_heads=8, num_kv_heads=2, head_dim=128)
            fields.update(change)
            with self.subTest(change=change), self.assertRaisesRegex(InvalidArgumentError, message):
                DecodeConfig(**fields)
        with self.assertRaisesRegex(InvalidArgumentError, "unknown field"):
            configs.parse_config("decode:heads=8,head_dim=128,window=3")

    def test_compiles(self):
        compiler = cache.find_compiler()
        if not compiler:
            self.skipTest("no flashc compiler here")
        with tempfile.TemporaryDirectory() as tmp:
            out = cache.compile_bundle(configs.TEST_DECODE[2], os.path.join(tmp, "bundle"), compiler=compiler)
            manifest = open(os.path.join(out, "manifest.flashc")).read()
        self.assertIn("meta op attention_decode", manifest)
        self.assertIn("meta status status", manifest)
        self.assertIn("tensor block_table i32 in [B, W]", manifest)

    def test_append_compiles(self):
        compiler = cache.find_compiler()
        if not compiler:
            self.skipTest("no flashc compiler here")
        with tempfile.TemporaryDirectory() as tmp:
            fused_dir = cache.compile_bundle(configs.TEST_APPEND[0], os.path.join(tmp, "a"), compiler=compiler)
            fused = open(os.path.join(fused_dir, "manifest.flashc")).read()
            alone = open(os.path.join(cache.compile_bundle(configs.TEST_APPEND[3], os.path.join(tmp, "b"),
                                                           compiler=compiler), "manifest.flashc")).read()
            # The program's parameters (the runtime's view, no GPU needed): the caches, read by the append's check
            # and written by its copy, are inout; no output stands for them.
            try:
                import flashc
                with flashc.Bundle(fused_dir) as bundle:
                    params = {p.name: p.direction for p in bundle.params("decode") if p.is_tensor}
            except (ImportError, OSError, FlashcError) as e:  # no runtime library here (ctest always gives one)
                if os.environ.get("FLASHC_RUNTIME_LIB"):
                    raise
                params = None
                print("runtime library not loadable (%s): program directions not checked" % e)
            if params is not None:
                self.assertEqual((params["k_cache"], params["v_cache"], params["k_new"], params["out"]),
                                 ("inout", "inout", "in", "out"))
        self.assertIn("meta append 1", fused)
        self.assertIn("meta status status_append", fused)
        self.assertIn("tensor k_cache bf16 inout", fused)
        self.assertIn("meta op kv_append", alone)
        self.assertIn("tensor v_new f16 in [B, 2, T, 40]", alone)


if __name__ == "__main__":
    unittest.main()
