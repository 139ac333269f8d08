"""flashc.score_mod on the CPU: Python score modifiers traced into score programs (the indices as a mask modifier's,
floats for the score), the text form round-trips, configurations key on it and refuse what the dialect refuses, the
spec text is a region flash-run-tile runs against the float64 reference (forward and backward: the reference
differentiates by central differences, the tile programs by the compiler's forward-mode rules), and unsupported uses
say what is supported."""

import math
import os
import re
import subprocess
import sys
import tempfile
import unittest

from _support import find_tool

from flashc import configs
from flashc.errors import InvalidArgumentError
from flashc.score_mod import ScoreProgram, exp, maximum, minimum, tanh, trace, where
from flashc.spec import AttentionConfig

FLASH_RUN_TILE = find_tool("flash-run-tile", "FLASHC_FLASH_RUN_TILE")
FLASHC = find_tool("flashc", "FLASHC_COMPILER")
FLASH_OPT = find_tool("flash-opt", "FLASHC_FLASH_OPT")

SCORES = {
    "distance": lambda s, q, k: s - (q - k) * 0.25,
    "softcap": lambda s, q, k: 2.0 * tanh(s / 2.0),
    "clip_and_branch": lambda s, q, k: where(s > 0.5, minimum(s, 1.0), -s * 2.0) + (q % 3) / 4,
    "hide_neighbour": lambda s, b, h, q, k: where(k == q + 1, float("-inf"), maximum(s, -1.0) * exp(s / 8.0)),
    "by_head": lambda s, b, h, q, k: where(h == 0, s, s / 2.0 + 1.0),
}


class ScoreModTest(unittest.TestCase):
    def test_trace_text(self):
        self.assertEqual(trace(SCORES["distance"]).text,
                         "v0 = sub q k; v1 = itof v0; v2 = mulf v1 f:0x1.0000000000000p-2; v3 = subf s v2; yield v3")
        self.assertEqual(trace(SCORES["softcap"]).text,
                         "v0 = divf s f:0x1.0000000000000p+1; v1 = tanh v0; v2 = mulf f:0x1.0000000000000p+1 v1; "
                         "yield v2")
        # Constants are f32: 0.1 is the nearest f32, and the same function traces alike every time.
        p = trace(lambda s, q, k: s * 0.1)
        self.assertEqual(p, trace(lambda s, q, k: s * 0.1))
        self.assertIn("f:0x1.99999a0000000p-4", p.text)
        # A constant score and an index alone are scores too.
        self.assertEqual(trace(lambda s, q, k: 1.5).text, "yield f:0x1.8000000000000p+0")
        self.assertEqual(trace(lambda s, q, k: q - k).text, "v0 = sub q k; v1 = itof v0; yield v1")

    def test_text_round_trip(self):
        for name, fn in SCORES.items():
            with self.subTest(name=name):
                p = trace(fn)
                self.assertEqual(ScoreProgram.parse(p.text), p)
        p = ScoreProgram.parse(configs.ALIBI_SCORE)
        self.assertEqual(p.tensor_kinds, ("f32",))
        self.assertEqual(p.tensor_ranks, (1,))
        self.assertEqual(p.text, configs.ALIBI_SCORE)
        # The C++ printer's hex floats (%a) parse to the same constants.
        self.assertEqual(ScoreProgram.parse("v0 = mulf s f:0x1.ep+4; yield v0"),
                         ScoreProgram.parse("v0 = mulf s f:0x1.e000000000000p+4; yield v0"))

    def test_constants_past_f32_and_names(self):
        # Past the f32 range a constant rounds to +-inf (IEEE); past a float at all it is refused.
        self.assertIn("f:inf", trace(lambda s, q, k: s * 1e39).text)
        self.assertIn("f:-inf", trace(lambda s, q, k: s + -1e39).text)
        with self.assertRaisesRegex(InvalidArgumentError, "does not fit a float"):
            trace(lambda s, q, k: s + 2 ** 2000)
        # int() and round() of a traced score (a raw TypeError before).
        with self.assertRaisesRegex(InvalidArgumentError, "is not a Python number"):
            trace(lambda s, q, k: s + int(s))
        with self.assertRaisesRegex(InvalidArgumentError, "is not a Python number"):
            trace(lambda s, q, k: round(s))
        # ... and in a program's text (a raw OverflowError from float.fromhex before).
        with self.assertRaisesRegex(InvalidArgumentError, "'f:0x1p\\+2000' is not an f32 constant"):
            ScoreProgram.parse("v0 = addf s f:0x1p+2000; yield v0")
        with self.assertRaisesRegex(InvalidArgumentError, "\\*\\* is not supported"):
            trace(lambda s, q, k: s ** 2)
        # The module's functions on plain numbers (a modifier's constants) compute as the kernel's floats do: log(0) is
        # -inf, a negative number's log or square root NaN, exp past the range inf (math's errors before).
        from flashc import score_mod
        self.assertEqual(score_mod.log(0.0), -math.inf)
        self.assertTrue(math.isnan(score_mod.log(-1.0)) and math.isnan(score_mod.sqrt(-4)))
        self.assertEqual(score_mod.exp(1000.0), math.inf)
        self.assertEqual((score_mod.sqrt(4), score_mod.exp(0), score_mod.tanh(0.0)), (2.0, 1.0, 0.0))
        self.assertIn("f:-inf", trace(lambda s, q, k: s + score_mod.log(0.0)).text)
        # A hand-written text whose names meet the region's helper values: still one definition each.
        region = ScoreProgram.parse("a = itof q; a_i = itof k; r = addf a a_i; yield r").region_text()
        names = [line.split("=")[0].strip() for line in region.splitlines()[1:] if "=" in line]
        self.assertEqual(len(names), len(set(names)), region)

    def test_region_text(self):
        region = trace(SCORES["hide_neighbour"]).region_text()
        self.assertIn("^bb0(%s: f32, %b: index, %h: index, %q_idx: index, %kv_idx: index):", region)
        self.assertIn("arith.constant 0xFF800000 : f32", region)  # -inf, exactly
        self.assertIn("math.exp", region)
        self.assertIn("arith.maximumf", region)
        self.assertIn("flash.yield", region)
        region = ScoreProgram.parse(configs.RELATIVE_BIAS_SCORE).region_text()
        self.assertIn("tensor.extract %t0[%h, %v_v3] : tensor<?x?xf32>", region)

    def test_config_keys_and_refusals(self):
        a = AttentionConfig("bf16", 2, 2, 64, score_mod=SCORES["distance"])
        b = AttentionConfig("bf16", 2, 2, 64, score_mod=trace(SCORES["distance"]).text)
        c = AttentionConfig("bf16", 2, 2, 64, score_mod=SCORES["softcap"])
        self.assertEqual(a.key, b.key)
        self.assertNotEqual(a.key, c.key)
        self.assertIn("score_mod {", a.spec_text())
        alibi = AttentionConfig("bf16", 4, 2, 64, causal=True, score_mod=configs.ALIBI_SCORE)
        self.assertEqual(alibi.score_tensor_names(), ("score_t0",))
        self.assertEqual(alibi.forward_params(), ("q", "k", "v", "score_t0", "o", "lse"))
        both = configs.TEST_ATTENTION_SCORE_MOD[7]  # documents + ALiBi
        self.assertEqual(both.modifier_tensor_names(), ("mask_t0", "score_t0"))
        self.assertIn("score_mod(%score_t0) {", both.spec_text())
        with self.assertRaisesRegex(InvalidArgumentError, "not combined with softcap"):
            AttentionConfig("bf16", 2, 2, 64, softcap=30.0, score_mod=SCORES["softcap"])
        with self.assertRaisesRegex(InvalidArgumentError, "not combined with key_offset"):
            AttentionConfig("bf16", 2, 2, 64, key_offset=True, score_mod=SCORES["softcap"])

    def test_unsupported_uses(self):
        cases = [
            (lambda s, q, k: s > 0, "must return the modified score"),
            (lambda s, q, k: s // 2, "integer division"),
            (lambda s, q, k: s if s > 0 else -s, "no Python truth value"),
            (lambda s, a, b, c: s, "takes \\(score, b, h, q_idx, kv_idx\\)"),
            (lambda s, q, k: (q < k) + s, "got a condition"),
            (lambda s, q, k: float(s), "not a Python float"),
            (lambda s, q, k: s + {0.5: 1.0}.get(s, 0.0), "cannot be a dict key or a set member"),
            (lambda s, q, k: s.clamp(-5.0, 5.0), "no method .clamp"),
            (lambda s, q, k: s[0], "cannot be indexed"),
        ]
        for fn, message in cases:
            with self.subTest(message=message):
                with self.assertRaisesRegex(InvalidArgumentError, message):
                    trace(fn)
        for text, message in [("v0 = addf s 1; yield v0", "takes floats"), ("yield q", "not an integer|an integer"),
                              ("v0 = read t0 h; yield v0", "kind"), ("v0 = sinf s; yield v0", "unknown op")]:
            with self.subTest(text=text):
                with self.assertRaisesRegex(InvalidArgumentError, message):
                    ScoreProgram.parse(text)

    def test_not_equal_is_unordered(self):
        """Python's and torch's != is true where either side is NaN (a NaN scrub `where(s != s, 0, s)` works): traced
        as not (a == b), never the ordered nef, for a score, a float read and an index met by a float."""
        for fn in (lambda s, q, k: where(s != s, 0.0, s), lambda s, q, k: where(s != 1.0, s, 0.0),
                   lambda s, q, k: where(q != s, s, 0.0)):
            text = trace(fn).text
            self.assertIn("eqf", text)
            self.assertNotIn("nef", text)
        try:
            import torch
        except ImportError:
            sys.stderr.write("SKIPPED: test_not_equal_is_unordered's evaluation: torch is not installed\n")
            return
        nan = torch.tensor(float("nan"), dtype=torch.float64)
        self.assertEqual(float(trace(lambda s, q, k: where(s != s, 0.0, s)).evaluate(nan, 0, 0)), 0.0)
        self.assertTrue(torch.isnan(trace(lambda s, q, k: where(s != 1.0, s, 0.0)).evaluate(nan, 0, 0)))
        self.assertTrue(torch.isnan(trace(lambda s, q, k: where(q != s, s, 0.0)).evaluate(nan, 0, 0)))
        # torch functions of an index in a score modifier are floats, as in torch (torch.exp of an int tensor).
        self.assertEqual(trace(lambda s, q, k: s + torch.exp(q - k)).text,
                         "v0 = sub q k; v1 = itof v0; v2 = exp v1; v3 = addf s v2; yield v3")

    def test_spec_region_against_float64_on_the_tile_programs(self):
        """Each modifier's region (as flashc.torch compiles it, but f32 and static sizes) through flash-run-tile."""
        if not FLASH_RUN_TILE:
            sys.stderr.write("SKIPPED: test_score_mod: flash-run-tile is not built\n")
            self.skipTest("flash-run-tile is not built")
        for name, fn in SCORES.items():
            region = trace(fn).region_text()
            spec = ("func.func @%s(%%q: tensor<1x2x61x32xf32>, %%k: tensor<1x2x61x32xf32>, %%v: tensor<1x2x61x32xf32>)"
                    " -> tensor<1x2x61x32xf32> {\n"
                    "  %%o, %%lse = flash.attention %%q, %%k, %%v scale = 0.17677669 mask = #flash.mask<causal> "
                    "num_kv_heads = 2 score_mod {\n  %s\n  } : (tensor<1x2x61x32xf32>, tensor<1x2x61x32xf32>, "
                    "tensor<1x2x61x32xf32>) -> (tensor<1x2x61x32xf32>, tensor<1x2x61xf32>)\n"
                    "  return %%o : tensor<1x2x61x32xf32>\n}\n" % (name, region))
            self._run_tile(name, spec)
        # ALiBi reading its slopes (flash-run-tile gives the f32 argument values in [-1, 1]).
        region = ScoreProgram.parse(configs.ALIBI_SCORE).region_text().replace("tensor<?xf32>", "tensor<2xf32>")
        spec = ("func.func @alibi(%q: tensor<1x2x61x32xf32>, %k: tensor<1x2x61x32xf32>, %v: tensor<1x2x61x32xf32>,"
                " %slopes: tensor<2xf32>) -> tensor<1x2x61x32xf32> {\n"
                "  %o, %lse = flash.attention %q, %k, %v scale = 0.17677669 mask = #flash.mask<causal> "
                "num_kv_heads = 2 score_mod(%slopes) {\n  " + region +
                "\n  } : (tensor<1x2x61x32xf32>, tensor<1x2x61x32xf32>, tensor<1x2x61x32xf32>, tensor<2xf32>) -> "
                "(tensor<1x2x61x32xf32>, tensor<1x2x61xf32>)\n  return %o : tensor<1x2x61x32xf32>\n}\n")
        self._run_tile("alibi", spec)

    def test_configs_compile_to_valid_specs(self):
        """Every score-modifier configuration's spec text passes the dialect's verifier."""
        if not FLASH_OPT:
            sys.stderr.write("SKIPPED: test_score_mod: flash-opt is not built\n")
            self.skipTest("flash-opt is not built")
        for config in configs.TEST_ATTENTION_SCORE_MOD + tuple(c for c in configs.BENCH_PROGRAMMABLE if c.score_mod):
            with self.subTest(config=config.describe()), tempfile.TemporaryDirectory() as tmp:
                path = os.path.join(tmp, "spec.mlir")
                with open(path, "w") as f:
                    f.write(config.spec_text())
                run = subprocess.run([FLASH_OPT, path], capture_output=True, text=True, timeout=120)
                self.assertEqual(run.returncode, 0, run.stderr)

    def test_separable_verdict_against_float64(self):
        """The compiler's separable verdict (the printed struct's kSeparable: scoreBiasSeparable) against the float64
        evaluator. A modifier called separable is s + T with T(q, k) = T(q', k) + T(q, k') - T(q', k') (T = score(0,
        ...)), the identity the kernels' key and query parts rest on, at random points and tensors; the relative-bias
        table (a clamped distance) is refused and breaks the identity, so the check can fail. The verdict comes from
        the compiler where it is built, else from the config's carried bundle (its kernels.cu; the GPU machine has
        torch and the bundles but no compiler)."""
        try:
            import torch
        except ImportError:
            sys.stderr.write("SKIPPED: test_score_mod: the separable check's float64 evaluator needs torch\n")
            self.skipTest("torch is not installed")
        from flashc import cache
        from flashc.errors import BundleNotFoundError

        def emitted_cuda(config, tmp):
            if FLASHC:
                path = os.path.join(tmp, "spec.mlir")
                with open(path, "w") as f:
                    f.write(config.spec_text())
                run = subprocess.run([FLASHC, path, "--emit=cuda", "-o", "-"], capture_output=True, text=True,
                                     timeout=120)
                self.assertEqual(run.returncode, 0, run.stderr)
                return run.stdout
            try:
                bundle = cache.bundle_dir(config, compile=False)
            except BundleNotFoundError:
                sys.stderr.write("SKIPPED: test_score_mod: neither flashc nor a bundle for %s\n" % config.key)
                self.skipTest("neither flashc nor a carried bundle for %s" % config.key)
            with open(os.path.join(bundle, "kernels.cu")) as f:
                return f.read()

        g = torch.Generator().manual_seed(5)
        seen = set()
        for config in configs.TEST_ATTENTION_SCORE_MOD + tuple(c for c in configs.BENCH_PROGRAMMABLE if c.score_mod):
            if config.score_mod is None or not isinstance(config.score_mod, str) or config.score_mod in seen:
                continue
            seen.add(config.score_mod)
            with self.subTest(score_mod=config.score_mod), tempfile.TemporaryDirectory() as tmp:
                verdicts = set(re.findall(r"kSeparable = (true|false)", emitted_cuda(config, tmp)))
                self.assertEqual(len(verdicts), 1, "one verdict a modifier")
                separable = verdicts.pop() == "true"
                program = ScoreProgram.parse(config.score_mod)
                tensors = [torch.randint(0, 5000, (4096,), generator=g, dtype=torch.int32) if kind == "i32" else
                           torch.rand((config.num_heads,) if rank == 1 else (config.num_heads, 33), generator=g,
                                      dtype=torch.float64) - 0.5
                           for rank, kind in zip(program.tensor_ranks, program.tensor_kinds)]
                h = torch.randint(0, config.num_heads, (512,), generator=g)
                q, k, q2, k2 = (torch.randint(0, 4096, (512,), generator=g) for _ in range(4))
                term = lambda qi, ki: program.evaluate(torch.zeros(512, dtype=torch.float64), qi, ki, h=h,
                                                       tensors=tensors)
                gap = (term(q, k) - (term(q2, k) + term(q, k2) - term(q2, k2))).abs().max().item()
                if separable:
                    self.assertLess(gap, 1e-6)
                    s = torch.rand(512, dtype=torch.float64, generator=g)
                    self.assertLess((program.evaluate(s, q, k, h=h, tensors=tensors) - s - term(q, k)).abs().max()
                                    .item(), 1e-9)
                if config.score_mod == configs.RELATIVE_BIAS_SCORE:
                    self.assertFalse(separable)
                    self.assertGreater(gap, 1e-3)
        self.assertIn(configs.ALIBI_SCORE, seen)

    def _run_tile(self, name, spec):
        with self.subTest(name=name), tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "spec.mlir")
            with open(path, "w") as f:
                f.write(spec)
            run = subprocess.run([FLASH_RUN_TILE, path, "--backward", "--block-m=16", "--block-n=16", "--warps=1",
                                  "--input-range=2"], capture_output=True, text=True, timeout=300)
            self.assertEqual(run.returncode, 0, run.stdout + run.stderr)
            self.assertNotIn("FAIL", run.stdout)
            self.assertIn("backward d_v", run.stdout)


if __name__ == "__main__":
    unittest.main()
