"""flashc.mask_mod on the CPU: Python modifiers traced into index programs that mean what the function means, the
text form round-trips, the configurations key on it, the spec text is a region flash-run-tile evaluates against the
float64 reference (forward and backward), and every unsupported use is refused with what to write instead."""

import itertools
import os
import subprocess
import sys
import tempfile
import unittest

from _support import find_tool

from flashc import configs
from flashc.errors import InvalidArgumentError
from flashc.mask_mod import (IndexProgram, check_table_extents, index_argument_reads, maximum, minimum, read,
                             trace, where)
from flashc.spec import AttentionConfig

FLASH_RUN_TILE = find_tool("flash-run-tile", "FLASHC_FLASH_RUN_TILE")

MODS = {
    "causal": lambda q, k: k <= q,
    "prefix_lm": lambda b, h, q, k: (k < 20) | (k <= q),
    "chunked": lambda q, k: q // 24 == k // 24,
    "strided_or_diagonal": lambda q, k: (k % 3 == 0) | (q == k),
    "even_distance": lambda q, k: (q - k) % 2 == 0,
    "band": lambda q, k: (q % 5 != 0) & (abs(q - k) <= 9),
    "select_min_max": lambda q, k: where(q < 10, k <= q, (k >= q // 4) & (k <= minimum(-(-q // 3) + minimum(q, 7),
                                                                                        maximum(q, 30)))),
    "xor": lambda q, k: (k > q) ^ (k < 5),
    "constant": lambda q, k: True,
    "select_constants": lambda q, k: where(k < 10, True, where(q < 3, k <= q, False)),
}


def python_value(fn, q, k):
    """The modifier evaluated directly on Python ints (what it means)."""
    try:
        return bool(fn(0, 0, q, k))
    except TypeError:
        return bool(fn(q, k))


class _IntTensor:
    """A stand-in for a torch tensor of int32 (what a modifier reads), for tracing without torch."""
    __module__ = "torch.stand_in"  # (tensors are told apart by their type's module)
    dtype = "torch.int32"

    def __init__(self, values):
        self.values = values
        shape, v = [], values
        while isinstance(v, list):
            shape.append(len(v))
            v = v[0]
        self.shape = tuple(shape)

    def dim(self):
        return len(self.shape)

    def __getitem__(self, index):
        index = index if isinstance(index, tuple) else (index,)
        value = self.values
        for i in index:
            value = value[i]
        return value


_DOCS = _IntTensor([0, 0, 0, 1, 1, 2, 2, 2, 2])


def _global_document_mask(q, k):
    return _DOCS[q] == _DOCS[k]


class MaskModTest(unittest.TestCase):
    def test_traced_program_means_the_function(self):
        for name, fn in MODS.items():
            program = trace(fn)
            with self.subTest(name=name, program=program.text):
                for q, k in itertools.product(range(-3, 60), range(-3, 60)):
                    self.assertEqual(bool(program.evaluate(q, k)), python_value(fn, q, k), (q, k))

    def test_not(self):
        # ~ is logical not on a traced condition (as on torch's bool tensors), not Python's int inversion.
        program = trace(lambda q, k: ~(k < 5) & ~(q == k))
        for q, k in itertools.product(range(12), range(12)):
            self.assertEqual(bool(program.evaluate(q, k)), not (k < 5) and q != k, (q, k))
        # Also where a Python bool folded a condition to a constant (FlexAttention's `~((k > q) & causal)` with
        # causal = False shows every key): the constant stays a condition, so ~ is still logical.
        causal, force = False, True
        self.assertEqual(trace(lambda q, k: ~((k > q) & causal)), IndexProgram([], True))
        self.assertEqual(trace(lambda q, k: ~((q >= 0) | force)), IndexProgram([], False))
        self.assertEqual(trace(lambda q, k: (k <= q) & ~((q < 0) & causal)), trace(MODS["causal"]))
        self.assertEqual(trace(lambda q, k: k >= where(~((q >= 0) | force), 0, 3)).text, "v0 = ge k 3; yield v0")

    def test_callables_of_either_signature(self):
        # Functions (their code object's arity), bound methods and partials (their signature) of 2 or 4 indices.
        import functools

        class Masks:
            def causal(self, q_idx, kv_idx):
                return kv_idx <= q_idx

            def causal4(self, b, h, q_idx, kv_idx):
                return kv_idx <= q_idx
        want = trace(MODS["causal"])
        self.assertEqual(trace(Masks().causal), want)
        self.assertEqual(trace(Masks().causal4), want)
        self.assertEqual(trace(functools.partial(lambda limit, q, k: (k <= q) & (k < limit), 7)),
                         trace(lambda q, k: (k <= q) & (k < 7)))

        # A decorated modifier (functools.wraps): the wrapped function's signature, not the wrapper's (*args).
        def logged(fn):
            @functools.wraps(fn)
            def wrapper(*args, **kwargs):
                return fn(*args, **kwargs)
            return wrapper
        self.assertEqual(trace(logged(lambda b, h, q_idx, kv_idx: kv_idx <= q_idx)), want)
        self.assertEqual(trace(logged(MODS["causal"])), want)

    def test_text_round_trip(self):
        for name, fn in MODS.items():
            program = trace(fn)
            with self.subTest(name=name):
                again = IndexProgram.parse(program.text)
                self.assertEqual(again, program)
                self.assertEqual(trace(program.text), program)
                self.assertEqual(hash(again), hash(program))

    def test_compiler_rules(self):
        # div / rem truncate toward zero (arith.divsi / remsi); a zero divisor gives 0; Python's // and % floor.
        p = IndexProgram.parse("v0 = div q k; v1 = rem q k; v2 = floordiv q k; v3 = ceildiv q k; "
                               "v4 = add v0 v1; v5 = add v4 v2; v6 = add v5 v3; v7 = eq v6 0; yield v7")
        self.assertTrue(p.evaluate(7, 0))  # every quotient and remainder 0
        div = lambda q, k: IndexProgram.parse("v0 = div q k; v1 = eq v0 %d; yield v1" % (q // k if q * k >= 0 else
                                                                                     -(abs(q) // abs(k))))
        for q, k in ((-7, 2), (7, -2), (-7, -2), (7, 2)):
            self.assertTrue(div(q, k).evaluate(q, k), (q, k))
        self.assertTrue(IndexProgram.parse("v0 = rem q k; v1 = eq v0 -1; yield v1").evaluate(-7, 2))
        self.assertTrue(trace(lambda q, k: q % k == 1).evaluate(-7, 2))  # Python's %: the divisor's sign

    def test_tensor_evaluator_matches_ints(self):
        """IndexProgram.evaluate on int64 torch tensors (the float64 references' masks) gives the int evaluator's
        values on every op's edge cases: INT64_MIN, -1 and 0 divisors, signs (needs torch; skipped without)."""
        try:
            import torch
        except ImportError:
            sys.stderr.write("SKIPPED: test_tensor_evaluator_matches_ints: torch is not installed\n")
            self.skipTest("torch is not installed")
        values = [-(1 << 63), -(1 << 62), -7, -2, -1, 0, 1, 2, 7, (1 << 62), (1 << 63) - 1]
        for op in ("add", "sub", "mul", "div", "floordiv", "ceildiv", "rem", "min", "max"):
            program = IndexProgram.parse("v0 = %s q k; yield true" % op)
            rows = torch.tensor(values, dtype=torch.int64)[:, None]
            cols = torch.tensor(values, dtype=torch.int64)[None, :]
            with self.subTest(op=op):
                from flashc.mask_mod import _IntOps, _TensorOps
                got = getattr(_TensorOps(rows), op)(rows, cols)
                for i, a in enumerate(values):
                    for j, b in enumerate(values):
                        self.assertEqual(int(got[i, j]), getattr(_IntOps, op)(a, b), (op, a, b))

    def test_configs_key_on_the_modifier(self):
        a = AttentionConfig("bf16", 2, 2, 64, mask_mod=MODS["prefix_lm"])
        b = AttentionConfig("bf16", 2, 2, 64, mask_mod=trace(MODS["prefix_lm"]).text)
        c = AttentionConfig("bf16", 2, 2, 64, mask_mod=MODS["chunked"])
        plain = AttentionConfig("bf16", 2, 2, 64)
        self.assertEqual(a, b)
        self.assertEqual(a.key, b.key)
        self.assertEqual(len({a.key, c.key, plain.key}), 3)
        self.assertIn("_mod", a.key)
        text = configs.format_config(a)
        self.assertEqual(configs.parse_config(text), a)
        self.assertIn("mask_mod {", a.spec_text())
        with self.assertRaisesRegex(InvalidArgumentError, "not combined with key_offset"):
            AttentionConfig("bf16", 2, 2, 64, mask_mod=MODS["causal"], key_offset=True)
        self.assertTrue(all(c.mask_mod for c in configs.TEST_ATTENTION_MASK_MOD))
        self.assertIn(configs.TEST_ATTENTION_MASK_MOD[0], configs.SETS["tests"])

    def test_refusals_say_what_to_write(self):
        cases = [
            (lambda q, k: q and k, "no Python truth value"),
            (lambda q, k: (k <= q) and (k > 2), "use &, |, ~"),
            (lambda q, k: q / 2 < k, "use '//'"),
            (lambda b, h, q, k: _DOCS[q, k] == 0, "rank 1 is read with 2 position"),
            (lambda q, k: _DOCS.shape[0] > q, "supports indexing only"),
            (lambda q, k: q + k, "must return a condition"),
            (lambda q: q > 0, "takes \\(b, h, q_idx, kv_idx\\) or \\(q_idx, kv_idx\\)"),
            (lambda q, k: (q < k) + 1, "an integer was expected, got a condition"),
            (lambda q, k: q < 2 ** 70, "does not fit 64 bits"),
            (lambda q, k: q < "x", "expected an integer"),
            # Formatting an index traced to a constant (a mask hiding every key, no error); a keyword-only parameter
            # the trace cannot pass (a raw TypeError).
            (lambda q, k: str(q) == "3", "has no text"),
            # Python's own False, which no traced condition reached (isinstance of a traced index; the constant
            # `yield false`, every key hidden, without a word before).
            (lambda q, k: isinstance(q, int) and q > k, "returned Python's False"),
            (lambda b, h, q, k: False, "returned Python's False"),
            (lambda q, k: f"{q}" == "3", "has no text"),
            (lambda q, k, *, x: q > k, "keyword-only parameter x has no default"),
            # A traced value in a dict or a set would be looked up by identity (the default, or False, for every row).
            (lambda b, h, q, k: (k <= q) & (k > q - {0: 4, 1: 8}.get(h, 2)), "cannot be a dict key or a set member"),
            (lambda b, h, q, k: (k <= q) | (h in {0, 2}), "cannot be a dict key or a set member"),
            # Integer operators outside the index language, methods, and indexing a traced value.
            (lambda q, k: (q & 1) == 0, "operator is not supported"),
            (lambda q, k: (q >> 2) == k, "operator is not supported"),
            (lambda q, k: ~q < k, "operator is not supported"),
            (lambda q, k: q ** 2 < k, "operator is not supported"),
            (lambda q, k: (q - k).abs() < 3, "no method .abs"),
            (lambda q, k: (q < k).int() == 1, "no method .int"),
            (lambda q, k: q[0] < k, "cannot be indexed"),
            (lambda q, k: _DOCS[q][0] == 0, "cannot be indexed"),
            (lambda q, k: len(_DOCS) > q, "not len\\(\\)"),
            # A constant negative position reads 0 here (outside the tensor), never Python's last element.
            (lambda q, k: _DOCS[-1] == _DOCS[k], "negative position -1"),
        ]
        for fn, words in cases:
            with self.subTest(words=words):
                with self.assertRaisesRegex(InvalidArgumentError, words):
                    trace(fn)
        for text, words in (("", "expected an index program"), ("v0 = lt k q", "no 'yield"),
                            ("v0 = frob k q; yield v0", "unknown op 'frob'"), ("yield v0", "used before"),
                            ("v0 = add k q; yield v0", "must give a condition"),
                            ("v0 = and k q; yield v0", "and takes two conditions"),
                            ("v0 = lt k q; v0 = lt q k; yield v0", "cannot name a value"),
                            ("v0 = lt k q; yield v0; yield v0", "must be the last statement")):
            with self.subTest(text=text):
                with self.assertRaisesRegex(InvalidArgumentError, words):
                    IndexProgram.parse(text)
        for text, words in (("v0 = read q k; v1 = eq v0 0; yield v1", "read takes a tensor"),
                            ("v0 = read t1 k; v1 = eq v0 0; yield v1", "t0, t1, ... without gaps"),
                            ("v0 = read t0 k; v1 = read t0 q k; v2 = eq v0 v1; yield v2", "read with 1 and 2"),
                            ("v0 = lt k q; v1 = read t0 v0; v2 = eq v1 0; yield v2", "positions are integers")):
            with self.subTest(text=text):
                with self.assertRaisesRegex(InvalidArgumentError, words):
                    IndexProgram.parse(text)

    def test_batch_and_head(self):
        # FlexAttention's b and h: traced, evaluated at the (batch, head) given.
        fn = lambda b, h, q, k: (k <= q) | ((h % 2 == 1) & (b < 2))
        program = trace(fn)
        self.assertEqual(program.text, "v0 = le k q; v1 = floordiv h 2; v2 = mul v1 2; v3 = sub h v2; v4 = eq v3 1; "
                                       "v5 = lt b 2; v6 = and v4 v5; v7 = or v0 v6; yield v7")
        for b, h, q, k in itertools.product(range(3), range(3), range(5), range(5)):
            self.assertEqual(bool(program.evaluate(q, k, b, h)), bool(fn(b, h, q, k)), (b, h, q, k))
        self.assertIn("^bb0(%b: index, %h: index, %q_idx: index, %kv_idx: index):", program.region_text())

    def test_tensor_reads(self):
        # A tensor the modifier indexes (a global or a closure variable) is read, t0, t1, ... in first-read order;
        # the tensors are the call's (not part of the program's text), a read outside a tensor gives 0.
        docs, heads = _DOCS, _IntTensor([[3, 5], [7, 9]])
        program = trace(lambda b, h, q, k: (docs[q] == docs[k]) & (k < heads[b, h]))
        self.assertEqual(program.text, "v0 = read t0 q; v1 = read t0 k; v2 = eq v0 v1; v3 = read t1 b h; "
                                       "v4 = lt k v3; v5 = and v2 v4; yield v5")
        self.assertEqual(program.tensor_ranks, (1, 2))
        self.assertIs(program.tensors[0], docs)
        self.assertIs(program.tensors[1], heads)
        self.assertEqual(IndexProgram.parse(program.text), program)
        for b, h, q, k in itertools.product(range(2), range(2), range(-1, 10), range(-1, 10)):
            doc = lambda i: docs.values[i] if 0 <= i < len(docs.values) else 0
            want = doc(q) == doc(k) and k < heads.values[b][h]
            self.assertEqual(bool(program.evaluate(q, k, b, h)), want, (b, h, q, k))
        # Through a global, and through read() where indexing cannot be seen (an attribute).
        self.assertEqual(trace(_global_document_mask).text, "v0 = read t0 q; v1 = read t0 k; v2 = eq v0 v1; yield v2")
        holder = type("Holder", (), {"docs": docs})()
        self.assertEqual(trace(lambda q, k: read(holder.docs, q) == read(holder.docs, k)).text,
                         "v0 = read t0 q; v1 = read t0 k; v2 = eq v0 v1; yield v2")
        # read() at constant positions inside a trace records a read too (the call's value, not the trace's).
        self.assertEqual(trace(lambda q, k: read(holder.docs, q) == read(holder.docs, 0)).text,
                         "v0 = read t0 q; v1 = read t0 0; v2 = eq v0 v1; yield v2")
        self.assertEqual(read(holder.docs, 4), 1)  # (outside a trace: the element)
        region = program.region_text()
        self.assertIn("%t0: tensor<?xi32>, %t1: tensor<?x?xi32>", region)
        self.assertIn("tensor.extract %t1[%b, %h] : tensor<?x?xi32>", region)
        config = AttentionConfig("bf16", 2, 2, 64, causal=True, mask_mod=program)
        self.assertEqual(config.mask_tensor_names(), ("mask_t0", "mask_t1"))
        self.assertIn("mask_t0", config.forward_params())
        self.assertIn("mask_mod(%mask_t0, %mask_t1) {", config.spec_text())

    def test_table_extents(self):
        # The reads at an index argument itself (ids[q], ids[k], a [B, H] table at b and h), each (tensor, dim, index)
        # once; a read at a computed position (ids[q + 1]) or a constant is not one: it reads 0 past the table.
        program = IndexProgram.parse("v0 = read t0 q; v1 = read t0 k; v2 = eq v0 v1; v3 = read t1 b h; "
                                     "v4 = lt k v3; v5 = read t0 q; v6 = and v2 v4; yield v6")
        self.assertEqual(index_argument_reads(program.statements), [(0, 0, "q"), (0, 0, "k"), (1, 0, "b"), (1, 1, "h")])
        shifted = IndexProgram.parse("v0 = add q 1; v1 = read t0 v0; v2 = read t0 0; v3 = eq v1 v2; yield v3")
        self.assertEqual(index_argument_reads(shifted.statements), [])
        # The references' check (flashc.testing.attention_reference): a table shorter than its index's range is
        # refused in the compiler's words, before any element is read.
        ranges = {"b": 2, "h": 2, "q": 9, "k": 12}
        check_table_extents("mask_mod", program.statements, [_IntTensor([0] * 12), _IntTensor([[1, 2], [3, 4]])],
                            ranges)
        with self.assertRaisesRegex(InvalidArgumentError, r"mask_mod reads tensor t0 \[9\] at the key index k along "
                                                          r"dimension 0: it holds 9 entries, the key index k ranges "
                                                          r"over 12"):
            check_table_extents("mask_mod", program.statements, [_DOCS, _IntTensor([[1, 2], [3, 4]])], ranges)
        with self.assertRaisesRegex(InvalidArgumentError, "t1 \\[2, 1\\] at the query head h along dimension 1: it "
                                                          "holds 1 entries"):
            check_table_extents("mask_mod", program.statements, [_IntTensor([0] * 12), _IntTensor([[1], [3]])],
                                ranges)
        check_table_extents("mask_mod", shifted.statements, [_IntTensor([0])], ranges)  # (nothing to check)

    def test_block_sparse(self):
        # A per-(head, query block, key block) layout with the block size in the program (block-sparse attention).
        from flashc.mask_mod import block_sparse
        layout = _IntTensor([[[1, 0], [1, 1]], [[0, 1], [1, 0]]])  # [Hq = 2, 2 query blocks, 2 key blocks]
        program = trace(block_sparse(layout, 64))
        self.assertEqual(program.text, "v0 = floordiv q 64; v1 = floordiv k 64; v2 = read t0 h v0 v1; v3 = ne v2 0; "
                                       "yield v3")
        self.assertEqual(program.tensor_ranks, (3,))
        self.assertIs(program.tensors[0], layout)
        for h, q, k in itertools.product(range(2), range(0, 140, 7), range(0, 140, 7)):
            qb, kb = q // 64, k // 64
            want = qb < 2 and kb < 2 and layout.values[h][qb][kb] != 0
            self.assertEqual(bool(program.evaluate(q, k, 0, h)), want, (h, q, k))
        with self.assertRaisesRegex(InvalidArgumentError, "block_size must be a positive int"):
            block_sparse(layout, 0)
        with self.assertRaisesRegex(InvalidArgumentError, "rank 1"):
            block_sparse(_DOCS, 64)

    def test_spec_region_against_float64_on_the_tile_programs(self):
        """The spec text of a modifier (as flashc.torch compiles it, but f32 and static sizes) through flash-run-tile:
        the tile programs on the CPU against the float64 reference that evaluates the same region."""
        if not FLASH_RUN_TILE:
            sys.stderr.write("SKIPPED: test_mask_mod: flash-run-tile is not built\n")
            self.skipTest("flash-run-tile is not built")
        for name in ("prefix_lm", "chunked", "band", "select_min_max", "select_constants"):
            region = trace(MODS[name]).region_text()
            spec = ("func.func @%s(%%q: tensor<1x2x61x32xf32>, %%k: tensor<1x2x61x32xf32>, %%v: tensor<1x2x61x32xf32>)"
                    " -> tensor<1x2x61x32xf32> {\n"
                    "  %%o, %%lse = flash.attention %%q, %%k, %%v scale = 0.17677669 mask = #flash.mask<none> "
                    "num_kv_heads = 2 mask_mod {\n  %s\n  } : (tensor<1x2x61x32xf32>, tensor<1x2x61x32xf32>, "
                    "tensor<1x2x61x32xf32>) -> (tensor<1x2x61x32xf32>, tensor<1x2x61xf32>)\n"
                    "  return %%o : tensor<1x2x61x32xf32>\n}\n" % (name, region))
            self._run_tile(name, spec)
        # A modifier that reads a tensor: flash-run-tile gives the i32 argument random runs of document ids.
        region = trace(lambda b, h, q, k: (_DOCS[q] == _DOCS[k]) & ((h == 0) | (k <= q))).region_text()
        spec = ("func.func @documents(%q: tensor<2x2x61x32xf32>, %k: tensor<2x2x61x32xf32>, %v: tensor<2x2x61x32xf32>,"
                " %doc: tensor<61xi32>) -> tensor<2x2x61x32xf32> {\n"
                "  %o, %lse = flash.attention %q, %k, %v scale = 0.17677669 mask = #flash.mask<none> "
                "num_kv_heads = 2 mask_mod(%doc) {\n  " + region.replace("tensor<?xi32>", "tensor<61xi32>") +
                "\n  } : (tensor<2x2x61x32xf32>, tensor<2x2x61x32xf32>, tensor<2x2x61x32xf32>, tensor<61xi32>) -> "
                "(tensor<2x2x61x32xf32>, tensor<2x2x61xf32>)\n  return %o : tensor<2x2x61x32xf32>\n}\n")
        self._run_tile("documents", spec)

    def _run_tile(self, name, spec):
        if True:
            with self.subTest(name=name), tempfile.TemporaryDirectory() as tmp:
                path = os.path.join(tmp, "spec.mlir")
                with open(path, "w") as f:
                    f.write(spec)
                run = subprocess.run([FLASH_RUN_TILE, path, "--backward", "--block-m=16", "--block-n=16", "--warps=1"],
                                     capture_output=True, text=True, timeout=300)
                self.assertEqual(run.returncode, 0, run.stdout + run.stderr)
                self.assertNotIn("FAIL", run.stdout)
                self.assertIn("backward d_v", run.stdout)


if __name__ == "__main__":
    unittest.main()
