"""Spec text and cache keys of configurations, the config text form, and (when flash-opt is built) that every
spec the package can generate parses and verifies."""

import os
import subprocess
import tempfile
import unittest

from _support import find_tool, skip_loudly

from flashc import InvalidArgumentError, configs
from flashc.spec import AttentionConfig, DecodeConfig, FfnConfig, KvAppendConfig, MoeConfig, VarlenConfig, format_f32

FLASH_OPT = find_tool("flash-opt", "FLASHC_FLASH_OPT")
FLASHC = find_tool("flashc", "FLASHC_COMPILER")


class AttentionSpecTest(unittest.TestCase):
    def test_spec_text_of_the_gpt_attention(self):
        c = AttentionConfig("bf16", 16, 16, 128, causal=True)
        t = "tensor<?x16x?x128xbf16>"
        lse = "tensor<?x16x?xf32>"
        self.assertIn("func.func @attention(%%q: %s, %%k: %s, %%v: %s) -> (%s, %s) {" % (t, t, t, t, lse),
                      c.spec_text())
        self.assertIn("  %%o, %%lse = flash.attention %%q, %%k, %%v scale = 0.088388346 mask = #flash.mask<causal> "
                      "num_kv_heads = 16 : (%s, %s, %s) -> (%s, %s)\n" % (t, t, t, t, lse), c.spec_text())
        self.assertIn("  return %%o, %%lse : %s, %s\n}" % (t, lse), c.spec_text())

    def test_gqa_window_softcap_and_value_dim(self):
        c = AttentionConfig("f16", 8, 2, 64, value_head_dim=32, window=(16, 4), softcap=30.0, scale=0.125)
        text = c.spec_text()
        self.assertIn("%k: tensor<?x2x?x64xf16>", text)
        self.assertIn("%v: tensor<?x2x?x32xf16>", text)
        self.assertIn("-> (tensor<?x8x?x32xf16>, tensor<?x8x?xf32>)", text)
        self.assertIn("scale = 0.125 mask = #flash.mask<sliding_window, left = 16, right = 4> softcap = 30.0 "
                      "num_kv_heads = 2 :", text)

    def test_key_offset_spec(self):
        c = AttentionConfig("bf16", 4, 4, 64, causal=True, scale=0.125, key_offset=True)
        t, lse = "tensor<?x4x?x64xbf16>", "tensor<?x4x?xf32>"
        text = c.spec_text()
        # The i32 argument comes last; its operand right after %v, its type after the tensors'.
        self.assertIn("func.func @attention(%%q: %s, %%k: %s, %%v: %s, %%key_offset: i32) -> (%s, %s) {"
                      % (t, t, t, t, lse), text)
        self.assertIn("  %%o, %%lse = flash.attention %%q, %%k, %%v key_offset = %%key_offset scale = 0.125 mask = "
                      "#flash.mask<causal> num_kv_heads = 4 : (%s, %s, %s, i32) -> (%s, %s)\n" % (t, t, t, t, lse), text)
        self.assertEqual(c.forward_params(), ("q", "k", "v", "o", "lse", "key_offset"))
        self.assertEqual(c.backward_params(), ("q", "k", "v", "o", "lse", "do", "dq", "dk", "dv", "key_offset"))
        self.assertEqual(c.input_names(), ("q", "k", "v", "key_offset"))
        static = AttentionConfig("bf16", 4, 4, 64, causal=True, scale=0.125)
        self.assertNotIn("key_offset", static.spec_text())
        self.assertEqual(static.forward_params(), ("q", "k", "v", "o", "lse"))
        self.assertIn("_causal_koff_", c.key)
        self.assertIn("causal_koff", c.describe())
        self.assertNotEqual(c.key, static.key)
        w = AttentionConfig("f16", 8, 2, 64, window=(64, 32), softcap=30.0, key_offset=True)
        self.assertIn("%v key_offset = %key_offset scale = 0.125 mask = #flash.mask<sliding_window, left = 64, "
                      "right = 32> softcap = 30.0 num_kv_heads = 2 :", w.spec_text())
        self.assertIn("_win64_32_koff_", w.key)
        with self.assertRaisesRegex(InvalidArgumentError, "key_offset must be True or False"):
            AttentionConfig("bf16", 2, 2, 64, key_offset=3)

    def test_defaults(self):
        c = AttentionConfig("bf16", 4, 4, 64)
        self.assertEqual(c.scale, 0.125)
        self.assertEqual(c.value_head_dim, 64)
        self.assertEqual(c.softcap, 0.0)
        self.assertIn("mask = #flash.mask<none> num_kv_heads = 4", c.spec_text())
        self.assertNotIn("softcap", c.spec_text())

    def test_window_normalisation(self):
        self.assertEqual(AttentionConfig("bf16", 2, 2, 64, causal=True, window=32).window, (32, 0))
        self.assertEqual(AttentionConfig("bf16", 2, 2, 64, window=32).window, (32, 32))
        self.assertEqual(AttentionConfig("bf16", 2, 2, 64, causal=True, window=(8, -1)).window, (8, 0))
        self.assertIsNone(AttentionConfig("bf16", 2, 2, 64, window=(-1, -1)).window)
        self.assertIsNone(AttentionConfig("bf16", 2, 2, 64, causal=True, window=(-1, 0)).window)
        self.assertEqual(AttentionConfig("bf16", 2, 2, 64, causal=True, window=(-1, 0)),
                         AttentionConfig("bf16", 2, 2, 64, causal=True))

    def test_bad_configs(self):
        cases = [
            (dict(dtype="f32", num_heads=2, num_kv_heads=2, head_dim=64), "dtype must be one of bf16, f16, got 'f32'"),
            (dict(dtype="bf16", num_heads=6, num_kv_heads=4, head_dim=64), "query heads (6) must be a multiple"),
            (dict(dtype="bf16", num_heads=2, num_kv_heads=2, head_dim=0), "head_dim must be an integer >= 1"),
            (dict(dtype="bf16", num_heads=2, num_kv_heads=2, head_dim=64, causal=True, window=(4, 4)),
             "causal=True allows no keys right of the diagonal"),
            (dict(dtype="bf16", num_heads=2, num_kv_heads=2, head_dim=64, window=(4, -2)), "window must be None"),
            (dict(dtype="bf16", num_heads=2, num_kv_heads=2, head_dim=64, softcap=-1.0), "softcap must be"),
            (dict(dtype="bf16", num_heads=2, num_kv_heads=2, head_dim=64, scale=float("nan")), "scale must be finite"),
            # (A raw OverflowError from struct.pack before.)
            (dict(dtype="bf16", num_heads=2, num_kv_heads=2, head_dim=64, scale=1e39),
             "scale of 1e+39 is beyond float32's range"),
            (dict(dtype="bf16", num_heads=2, num_kv_heads=2, head_dim=64, softcap=1e39),
             "softcap of 1e+39 is beyond float32's range"),
        ]
        for kwargs, message in cases:
            with self.assertRaises(InvalidArgumentError) as ctx:
                AttentionConfig(**kwargs)
            self.assertIn(message, str(ctx.exception))


class FfnSpecTest(unittest.TestCase):
    def test_plain_with_biases(self):
        c = FfnConfig("bf16", 64, 256, activation="gelu_tanh", has_b1=True, has_b2=True)
        self.assertIn("func.func @ffn(%x: tensor<?x64xbf16>, %w1: tensor<64x256xbf16>, %b1: tensor<256xbf16>, "
                      "%w2: tensor<256x64xbf16>, %b2: tensor<64xbf16>) -> tensor<?x64xbf16>", c.spec_text())
        self.assertIn("%y = flash.ffn gelu_tanh %x, %w1 bias %b1, %w2 bias %b2 : (", c.spec_text())
        self.assertEqual(c.forward_params(), ("x", "w1", "b1", "w2", "b2", "y"))
        # The training forward also writes what the backward reads: pre = x·w1 + b1 and h = act(pre).
        self.assertEqual(c.saved_names(), ("pre", "h"))
        self.assertEqual(c.forward_train_program, "ffn0_forward_train")
        self.assertEqual(c.forward_train_params(), ("x", "w1", "b1", "w2", "b2", "y", "pre", "h"))
        self.assertEqual(c.backward_params(), ("x", "w1", "b1", "w2", "b2", "pre", "h", "dy", "dx", "dw1", "db1",
                                               "dw2", "db2"))

    def test_gated(self):
        c = FfnConfig("f16", 64, 128, d_out=32, activation="silu", gated=True, has_b2=True)
        self.assertIn("%y = flash.ffn silu %x, %w_gate up %w_up, %w2 bias %b2 : (tensor<?x64xf16>, "
                      "tensor<64x128xf16>, tensor<64x128xf16>, tensor<128x32xf16>, tensor<32xf16>) -> "
                      "tensor<?x32xf16>", c.spec_text())
        self.assertEqual(c.forward_params(), ("x", "w_gate", "w_up", "w2", "b2", "y"))
        self.assertEqual(c.saved_names(), ("gate", "up", "h"))
        self.assertEqual(c.forward_train_params(), ("x", "w_gate", "w_up", "w2", "b2", "y", "gate", "up", "h"))
        self.assertEqual(c.backward_params(), ("x", "w_gate", "w_up", "w2", "b2", "gate", "up", "h", "dy", "dx",
                                               "dw_gate", "dw_up", "dw2", "db2"))

    def test_bad_configs(self):
        with self.assertRaisesRegex(InvalidArgumentError, "activation must be one of gelu_tanh, gelu_erf, silu, relu"):
            FfnConfig("bf16", 64, 256, activation="tanh")
        with self.assertRaisesRegex(InvalidArgumentError, "gated FFN takes no b1"):
            FfnConfig("bf16", 64, 256, gated=True, has_b1=True)
        with self.assertRaisesRegex(InvalidArgumentError, "d_hidden must be an integer >= 1"):
            FfnConfig("bf16", 64, 0)


class KeyTest(unittest.TestCase):
    def test_deterministic_and_distinct(self):
        base = dict(dtype="bf16", num_heads=16, num_kv_heads=16, head_dim=128)
        variants = [dict(), dict(causal=True), dict(dtype="f16"), dict(num_heads=32, num_kv_heads=16),
                    dict(num_kv_heads=8), dict(head_dim=64), dict(value_head_dim=64), dict(window=(64, 0)),
                    dict(window=(64, 64)), dict(softcap=30.0), dict(softcap=50.0), dict(scale=0.1),
                    dict(archs=("sm_80",)), dict(backward_form="transposed"), dict(backward_form="rows"),
                    dict(key_offset=True), dict(causal=True, key_offset=True), dict(window=(64, 0), key_offset=True)]
        keys = [AttentionConfig(**dict(base, **v)).key for v in variants]
        self.assertEqual(len(set(keys)), len(keys), keys)
        self.assertEqual(AttentionConfig(**base).key, AttentionConfig(**base).key)
        # The default scale is 1/sqrt(D): spelling it out is the same configuration.
        self.assertEqual(AttentionConfig(**base).key, AttentionConfig(scale=128 ** -0.5, **base).key)
        for key in keys + [c.key for c in configs.SETS["all"]]:
            self.assertRegex(key, r"^[A-Za-z0-9_.]+$")

    def test_known_key_is_stable(self):
        # Bundles are carried between machines by key: the key of a configuration must not drift silently.
        # (If the spec text changes on purpose, bump spec.KEY_VERSION and update this value.)
        self.assertRegex(AttentionConfig("bf16", 16, 16, 128, causal=True).key, r"^attn_bf16_h16kv16_d128_causal_[0-9a-f]{12}$")
        self.assertEqual(AttentionConfig("bf16", 16, 16, 128, causal=True).key, "attn_bf16_h16kv16_d128_causal_eee2f65cd550")

    def test_backward_form(self):
        auto = AttentionConfig("bf16", 2, 2, 128, causal=True)
        rows = AttentionConfig("bf16", 2, 2, 128, causal=True, backward_form="rows")
        transposed = AttentionConfig("bf16", 2, 2, 128, causal=True, backward_form="transposed")
        # A compiler option, not part of the spec: same spec text, its own bundle key and flags.
        self.assertEqual(auto.spec_text().splitlines()[1:], transposed.spec_text().splitlines()[1:])
        self.assertEqual(auto.spec_text().splitlines()[1:], rows.spec_text().splitlines()[1:])
        self.assertIn("_bwdtransposed_", transposed.key)
        self.assertIn("_bwdrows_", rows.key)
        self.assertNotIn("_bwd", auto.key)
        self.assertEqual(auto.compiler_flags, ())
        self.assertEqual(rows.compiler_flags, ("--backward-form=rows",))
        self.assertEqual(transposed.compiler_flags, ("--backward-form=transposed",))
        self.assertIn("backward=transposed", transposed.describe())
        self.assertNotIn("backward=", auto.describe())
        with self.assertRaisesRegex(InvalidArgumentError, "backward_form must be one of auto, rows, transposed"):
            AttentionConfig("bf16", 2, 2, 128, backward_form="columns")

    def test_experiments_are_retired(self):
        # The forms flashc --experiment selected are gone or points of the tuning space (flashc.tune): neither the
        # configurations nor their text form take them.
        with self.assertRaises(TypeError):
            AttentionConfig("bf16", 2, 2, 128, experiments=("cp-async-forward",))
        with self.assertRaisesRegex(InvalidArgumentError, "unknown field experiments"):
            configs.parse_config("ffn:d=64,h=256,experiments=mma-gemm")
        self.assertFalse([name for name in configs.SETS if "experiment" in name])

    def test_a_field_given_twice_is_refused(self):
        with self.assertRaisesRegex(InvalidArgumentError, "field 'heads' is given twice"):
            configs.parse_config("attention:heads=16,heads=8,head_dim=64")

    def test_format_f32(self):
        self.assertEqual(format_f32(0.125), "0.125")
        self.assertEqual(format_f32(1), "1.0")
        self.assertEqual(format_f32(30), "30.0")
        self.assertEqual(format_f32(1e-8), "1e-08")
        self.assertEqual(format_f32(128 ** -0.5), "0.088388346")


class ConfigTextTest(unittest.TestCase):
    def test_round_trip_of_every_named_config(self):
        for name, items in configs.SETS.items():
            for c in items:
                self.assertEqual(configs.parse_config(configs.format_config(c)), c, name)

    def test_parse(self):
        c = configs.parse_config("attention:heads=8,kv_heads=2,head_dim=64,causal=1,window=32:0,softcap=20")
        self.assertEqual(c, AttentionConfig("bf16", 8, 2, 64, causal=True, window=(32, 0), softcap=20.0))
        c = configs.parse_config("attention:heads=2,head_dim=64,window=64:32,key_offset=1")
        self.assertEqual(c, AttentionConfig("bf16", 2, 2, 64, window=(64, 32), key_offset=True))
        self.assertEqual(configs.format_config(c), "attention:dtype=bf16,heads=2,kv_heads=2,head_dim=64,causal=0,"
                                                   "window=64:32,scale=0.125,key_offset=1")
        self.assertFalse(configs.parse_config("attention:heads=2,head_dim=64,key_offset=0").key_offset)
        f = configs.parse_config("ffn:dtype=f16,d=64,h=256,act=silu,gated=1")
        self.assertEqual(f, FfnConfig("f16", 64, 256, activation="silu", gated=True))

    def test_parse_errors(self):
        cases = [("attn:heads=2", "expected 'attention:key=value"),
                 ("attention:heads=2", "missing field head_dim"),
                 ("attention:heads=2,head_dim=x", "head_dim: expected an integer"),
                 ("attention:heads=2,head_dim=64,mask=causal", "unknown field mask"),
                 ("attention:heads=2,head_dim=64,causal=maybe", "causal: expected 0/1"),
                 ("attention:heads=2,head_dim=64,key_offset=2", "key_offset: expected 0/1"),
                 ("attention:heads=3,kv_heads=2,head_dim=64", "must be a multiple"),
                 ("ffn:d=64", "missing field h"),
                 ("ffn:d=64,h=128,act=swish", "activation must be one of"),
                 ("ffn:d=64,h=128 junk", "expected an integer")]
        for text, message in cases:
            with self.assertRaises(InvalidArgumentError, msg=text) as ctx:
                configs.parse_config(text)
            self.assertIn(message, str(ctx.exception))

    def test_resolve(self):
        self.assertEqual(len(configs.resolve(["bench", "bench-attention"])), len(configs.SETS["bench"]))
        with self.assertRaisesRegex(InvalidArgumentError, "unknown config set 'nope'"):
            configs.resolve(["nope"])

    def test_all_holds_every_benchmark_and_test_set(self):
        # The runbook's `prebuild all` is what the GPU machine's benchmarks and tests load (bench_programmable's
        # rows were missing from it); only the tuner's sets, built by python -m flashc.tune plan, stay out.
        every = {c.key for c in configs.SETS["all"]}
        for name, items in configs.SETS.items():
            if not name.startswith("tune"):
                self.assertEqual([c.key for c in items if c.key not in every], [], name)

    def test_key_offset_sets(self):
        koff = configs.SETS["tests-key-offset"]
        self.assertTrue(all(c.key_offset for c in koff))
        self.assertLessEqual(len(koff), 10)
        self.assertEqual({c.dtype for c in koff}, {"bf16", "f16"})
        self.assertEqual({c.head_dim for c in koff}, {64, 128, 256})  # 256: the warp-specialised backward
        self.assertTrue(any(c.window is None and not c.causal for c in koff))  # the plain mask
        self.assertTrue(any(c.window is None and c.causal for c in koff))
        self.assertTrue(any(c.window is not None and c.causal for c in koff))
        self.assertTrue(any(c.window is not None and not c.causal for c in koff))
        self.assertTrue(any(c.softcap for c in koff) and any(c.num_heads != c.num_kv_heads for c in koff))
        self.assertTrue(set(koff) <= set(configs.SETS["tests"]))
        # bench_ring.py --window (default): the static window (single GPU) and its key-offset twin (the ring).
        bench = configs.SETS["bench-ring-window"]
        self.assertEqual({(c.causal, c.window, c.key_offset) for c in bench},
                         {(False, (4096, 4096), False), (False, (4096, 4096), True), (True, (4096, 0), False),
                          (True, (4096, 0), True)})
        self.assertTrue(all((c.dtype, c.num_heads, c.head_dim) == ("bf16", 16, 128) for c in bench))

    def test_bench_set_matches_the_benchmark(self):
        for c in configs.BENCH_ATTENTION:
            self.assertEqual(c.num_heads * c.head_dim, 2048)
            self.assertEqual(c.dtype, "bf16")
        self.assertEqual(sorted({(c.head_dim, c.causal) for c in configs.BENCH_ATTENTION}),
                         [(64, False), (64, True), (128, False), (128, True)])


@unittest.skipIf(FLASH_OPT is None, "flash-opt is not built (build/bin/flash-opt): generated specs not verified")
class SpecVerifiesTest(unittest.TestCase):
    """Every spec the package generates is valid flash-dialect input (parsed and verified by flash-opt)."""

    def test_every_named_config_and_edge_cases(self):
        extra = [AttentionConfig("bf16", 8, 2, 64, value_head_dim=32, window=(16, 4), softcap=30.0, scale=0.125),
                 AttentionConfig("f16", 2, 2, 64, causal=True, window=(7, 0)),
                 FfnConfig("f16", 64, 128, d_out=32, activation="relu", gated=True, has_b2=True)]
        with tempfile.TemporaryDirectory() as tmp:
            for i, c in enumerate(list(configs.SETS["all"]) + extra):
                path = os.path.join(tmp, "%d.mlir" % i)
                with open(path, "w") as f:
                    f.write(c.spec_text())
                proc = subprocess.run([FLASH_OPT, path], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                      universal_newlines=True)
                self.assertEqual(proc.returncode, 0, "%s\n%s\n%s" % (c.describe(), c.spec_text(), proc.stderr))
                op = ("flash.attention" if isinstance(c, AttentionConfig) else
                      "flash.decode_attention" if isinstance(c, DecodeConfig) else
                      "flash.kv_append" if isinstance(c, KvAppendConfig) else
                      "flash.varlen_attention" if isinstance(c, VarlenConfig) else
                      "flash.moe" if isinstance(c, MoeConfig) else "flash.ffn")
                self.assertIn(op, proc.stdout)
                if isinstance(c, DecodeConfig) and c.append:
                    self.assertIn("flash.kv_append", proc.stdout)


if FLASH_OPT is None:
    skip_loudly("flash-opt not built: SpecVerifiesTest skipped")


if __name__ == "__main__":
    unittest.main()
