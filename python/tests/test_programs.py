"""Resolving the programs and parameter names a bundle uses onto the logical names flashc.torch passes
(torch-free, so it runs in CI)."""

import unittest

import _support  # noqa: F401  (sys.path)
from flashc import InvalidBundleError, Param, programs
from flashc.spec import AttentionConfig, FfnConfig


class StubBundle:
    def __init__(self, params):
        self.path = "<stub>"
        self.programs = list(params)
        self.kernels = []
        self._params = params

    def params(self, name):
        return [Param(n, True, "bf16", "in", ()) for n in self._params[name]]


ATTN = AttentionConfig("bf16", 2, 2, 64, causal=True)
FFN = FfnConfig("bf16", 64, 256, has_b1=True, has_b2=True)


class ResolveTest(unittest.TestCase):
    def test_logical_names(self):
        b = StubBundle({"attention0_forward": ["q", "k", "v", "o", "lse"],
                        "attention0_backward": ["q", "k", "v", "o", "lse", "do", "dq", "dk", "dv"]})
        program, mapping = programs.resolve(b, ATTN, "forward")
        self.assertEqual(program, "attention0_forward")
        self.assertEqual(mapping, {n: n for n in "q k v o lse".split()})
        self.assertEqual(programs.resolve(b, ATTN, "backward")[0], "attention0_backward")

    def test_compiler_names(self):
        b = StubBundle({"attention": ["input0", "input1", "input2", "result0", "result1"],
                        "attention_backward": ["q", "k", "v", "out", "lse", "d_out", "d_q", "d_k", "d_v"]})
        self.assertEqual(programs.resolve(b, ATTN, "forward"),
                         ("attention", {"q": "input0", "k": "input1", "v": "input2", "o": "result0", "lse": "result1"}))
        program, mapping = programs.resolve(b, ATTN, "backward")
        self.assertEqual(program, "attention_backward")
        self.assertEqual(mapping["do"], "d_out")
        self.assertEqual(mapping["o"], "out")
        f = StubBundle({"ffn": ["input0", "input1", "input2", "input3", "input4", "result0"],
                        "ffn_backward": ["x", "w1", "b1", "w2", "b2", "d_y", "d_x", "d_w1", "d_b1", "d_w2", "d_b2"]})
        self.assertEqual(programs.resolve(f, FFN, "forward")[1],
                         {"x": "input0", "w1": "input1", "b1": "input2", "w2": "input3", "b2": "input4", "y": "result0"})
        self.assertEqual(programs.resolve(f, FFN, "backward")[1]["db2"], "d_b2")

    def test_flashc_ffn_programs(self):
        # Parameter lists as flashc writes them: the backward reads no b2, the gated form names its gate w1.
        biased = StubBundle({"ffn": ["x", "w1", "b1", "w2", "b2", "y"],
                             "ffn_backward": ["x", "w1", "b1", "w2", "dy", "dw2", "dw1", "dx", "db2", "db1"]})
        program, mapping = programs.resolve(biased, FFN, "backward")
        self.assertEqual(program, "ffn_backward")
        self.assertNotIn("b2", mapping)
        self.assertEqual(mapping["db2"], "db2")
        gated_cfg = FfnConfig("bf16", 64, 256, activation="silu", has_b2=True, gated=True)
        gated = StubBundle({"ffn": ["x", "w1", "w_up", "w2", "b2", "y"],
                            "ffn_backward": ["x", "w1", "w_up", "w2", "dy", "dw2", "dw1", "dx", "dw_up", "db2"]})
        self.assertEqual(programs.resolve(gated, gated_cfg, "forward")[1],
                         {"x": "x", "w_gate": "w1", "w_up": "w_up", "w2": "w2", "b2": "b2", "y": "y"})
        self.assertEqual(programs.resolve(gated, gated_cfg, "backward")[1]["dw_gate"], "dw1")
        # An output the binding allocates must be a parameter: a backward without db2 is refused.
        with self.assertRaisesRegex(InvalidBundleError, "program 'ffn_backward' has parameters"):
            programs.resolve(StubBundle({"ffn_backward": ["x", "w1", "b1", "w2", "dy", "dw2", "dw1", "dx", "db1"]}),
                             FFN, "backward")

    def test_refusals(self):
        with self.assertRaisesRegex(InvalidBundleError, "has no forward program: looked for attention0_forward, "
                                                        "attention, attention_forward; it has ffn"):
            programs.resolve(StubBundle({"ffn": ["x"]}), ATTN, "forward")
        with self.assertRaisesRegex(InvalidBundleError, r"program 'attention' has parameters \(input0, input1, "
                                                        r"result0, result1\) but flashc.torch passes \(q, k, v, o, lse\)"):
            programs.resolve(StubBundle({"attention": ["input0", "input1", "result0", "result1"]}), ATTN, "forward")
        with self.assertRaisesRegex(InvalidBundleError, "but flashc.torch passes"):  # two spellings of one name
            programs.resolve(StubBundle({"attention": ["q", "input0", "k", "v", "o", "lse"]}), ATTN, "forward")


if __name__ == "__main__":
    unittest.main()
