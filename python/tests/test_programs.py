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
        # The FFN's training forward: the forward's parameters, then the activations it saves (pre, h), which the
        # backward reads after the inputs.
        f = StubBundle({"ffn": ["input0", "input1", "input2", "input3", "input4", "result0"],
                        "ffn_forward_train": ["input0", "input1", "input2", "input3", "input4", "result0", "pre", "h"],
                        "ffn_backward": ["x", "w1", "b1", "w2", "b2", "pre", "h", "d_y", "d_x", "d_w1", "d_b1", "d_w2",
                                         "d_b2"]})
        self.assertEqual(programs.resolve(f, FFN, "forward"),
                         ("ffn", {"x": "input0", "w1": "input1", "b1": "input2", "w2": "input3", "b2": "input4",
                                  "y": "result0"}))
        self.assertEqual(programs.resolve(f, FFN, "forward_train"),
                         ("ffn_forward_train", {"x": "input0", "w1": "input1", "b1": "input2", "w2": "input3",
                                                "b2": "input4", "y": "result0", "pre": "pre", "h": "h"}))
        program, mapping = programs.resolve(f, FFN, "backward")
        self.assertEqual(program, "ffn_backward")
        self.assertEqual((mapping["db2"], mapping["pre"], mapping["h"]), ("d_b2", "pre", "h"))

    def test_flashc_ffn_programs(self):
        # Parameter lists as flashc writes them (the compiler's bundles of these configurations, in its order): the
        # backward reads neither bias (it reads the saved pre = x·w1 + b1 instead of recomputing it; db2 is dy's
        # column sums), the gated form names its gate w1.
        biased = StubBundle({"ffn": ["x", "w1", "b1", "w2", "b2", "y"],
                             "ffn_forward_train": ["x", "w1", "b1", "pre", "h", "w2", "b2", "y"],
                             "ffn_backward": ["dy", "w2", "pre", "h", "dw2", "x", "dw1", "w1", "dx", "db2", "db1"]})
        program, mapping = programs.resolve(biased, FFN, "backward")
        self.assertEqual(program, "ffn_backward")
        self.assertNotIn("b1", mapping)
        self.assertNotIn("b2", mapping)
        self.assertEqual((mapping["db1"], mapping["db2"]), ("db1", "db2"))
        self.assertEqual(programs.resolve(biased, FFN, "forward_train")[0], "ffn_forward_train")
        gated_cfg = FfnConfig("bf16", 64, 256, activation="silu", has_b2=True, gated=True)
        gated = StubBundle({"ffn": ["x", "w1", "w_up", "w2", "b2", "y"],
                            "ffn_forward_train": ["x", "w1", "w_up", "gate", "up", "h", "w2", "b2", "y"],
                            "ffn_backward": ["dy", "w2", "gate", "up", "h", "dw2", "x", "dw1", "w1", "dx", "dw_up",
                                             "w_up", "db2"]})
        self.assertEqual(programs.resolve(gated, gated_cfg, "forward")[1],
                         {"x": "x", "w_gate": "w1", "w_up": "w_up", "w2": "w2", "b2": "b2", "y": "y"})
        self.assertEqual(programs.resolve(gated, gated_cfg, "forward_train"),
                         ("ffn_forward_train", {"x": "x", "w_gate": "w1", "w_up": "w_up", "w2": "w2", "b2": "b2",
                                                "y": "y", "gate": "gate", "up": "up", "h": "h"}))
        mapping = programs.resolve(gated, gated_cfg, "backward")[1]
        self.assertEqual((mapping["dw_gate"], mapping["gate"], mapping["up"], mapping["h"]), ("dw1", "gate", "up", "h"))
        # An output the binding allocates must be a parameter: a backward without db2 is refused.
        with self.assertRaisesRegex(InvalidBundleError, "program 'ffn_backward' has parameters"):
            programs.resolve(StubBundle({"ffn_backward": ["x", "w1", "b1", "w2", "pre", "h", "dy", "dw2", "dw1", "dx",
                                                          "db1"]}), FFN, "backward")

    def test_ffn_saved_activations_are_required(self):
        """The backward no longer recomputes the pre-activation: a bundle of the old contract (a backward without
        the saved pre and h, no training forward) is refused, as is a training forward that saves only part."""
        old = StubBundle({"ffn": ["x", "w1", "b1", "w2", "b2", "y"],
                          "ffn_backward": ["x", "w1", "b1", "w2", "dy", "dw2", "dw1", "dx", "db2", "db1"]})
        with self.assertRaisesRegex(InvalidBundleError, r"program 'ffn_backward' has parameters \(x, w1, b1, w2, dy, "
                                                        r"dw2, dw1, dx, db2, db1\) but flashc.torch passes \(x, w1, "
                                                        r"b1, w2, b2, pre, h, dy, "):
            programs.resolve(old, FFN, "backward")
        with self.assertRaisesRegex(InvalidBundleError, "has no forward_train program: looked for ffn0_forward_train, "
                                                        "ffn_forward_train; it has ffn, ffn_backward"):
            programs.resolve(old, FFN, "forward_train")
        self.assertEqual(programs.resolve(old, FFN, "forward")[0], "ffn")  # inference still resolves
        partial = StubBundle({"ffn_forward_train": ["x", "w1", "b1", "w2", "b2", "y", "h"]})
        with self.assertRaisesRegex(InvalidBundleError, "program 'ffn_forward_train' has parameters"):
            programs.resolve(partial, FFN, "forward_train")
        # b2 may be left out of the backward only, never out of the training forward (it writes y).
        no_b2 = StubBundle({"ffn_forward_train": ["x", "w1", "b1", "w2", "y", "pre", "h"]})
        with self.assertRaisesRegex(InvalidBundleError, "program 'ffn_forward_train' has parameters"):
            programs.resolve(no_b2, FFN, "forward_train")

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
