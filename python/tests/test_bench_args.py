"""The attention benchmark's command line (CPU only): head dims as D or D:Dv, --heads, and the errors it gives; the
ring benchmark's --window, its FLOP count and its sampled float64 reference under a window."""

import contextlib
import io
import os
import sys
import unittest

from _support import TEST_INSTALLED, requires_torch

if TEST_INSTALLED:
    # The bench scripts put the source tree's python/ first on sys.path: they test the checkout, not a package.
    sys.stderr.write("SKIPPED: test_bench_args: the bench scripts import the source tree's flashc\n")
    raise unittest.SkipTest("FLASHC_TEST_INSTALLED=1: the bench scripts import the source tree's flashc")

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench"))
import bench_attention  # noqa: E402
import bench_common  # noqa: E402
import bench_ffn  # noqa: E402
import bench_programmable  # noqa: E402
import bench_ring  # noqa: E402

from flashc import configs  # noqa: E402


class BenchArgsTest(unittest.TestCase):
    def test_value_head_dim_rows(self):
        args = bench_attention.parse_args(["--head-dims", "256,192:128", "--seqs", "4096", "--causal", "no"])
        rows = bench_attention.rows_of(args)
        self.assertEqual([(r["D"], r["Dv"], r["H"], r["B"]) for r in rows], [(256, 256, 8, 4), (192, 128, 16, 4)])
        config = rows[1]["configs"]["flashc"]
        self.assertEqual((config.head_dim, config.value_head_dim, config.num_heads), (192, 128, 16))
        # FLOPs count Q·Kᵀ over D and P·V over Dv.
        self.assertEqual(bench_attention.fwd_flops(rows[1]), 2.0 * 4 * 16 * 4096 ** 2 * (192 + 128))

    def test_equal_heads_for_padded_pairs(self):
        args = bench_attention.parse_args(["--head-dims", "80,96", "--heads", "16", "--seqs", "4096", "--causal", "yes"])
        self.assertEqual([(r["D"], r["H"]) for r in bench_attention.rows_of(args)], [(80, 16), (96, 16)])

    def test_ffn_rows_by_model_dim(self):
        args = bench_ffn.parse_args(["--model-dims", "256,1024"])
        self.assertEqual([(r["M"], r["d"], r["h"]) for r in bench_ffn.rows(args.model_dims)],
                         [(16384, 1024, 4096), (65536, 256, 1024)])
        self.assertEqual(len(bench_ffn.rows(bench_ffn.parse_args([]).model_dims)), len(configs.BENCH_FFN))
        for value in ("512", "x"):
            with contextlib.redirect_stderr(io.StringIO()) as err, self.assertRaises(SystemExit):
                bench_ffn.parse_args(["--model-dims", value])
            self.assertIn("--model-dims", err.getvalue())

    def test_programmable_lead(self):
        # bench_programmable takes the same --lead-us (bench_common's one argument): issue #16 asks for kernel times.
        self.assertEqual(bench_programmable.parse_args([]).lead_us, 0)
        self.assertEqual(bench_programmable.parse_args(["--lead-us", "auto", "--rows", "document"]).lead_us, "auto")
        self.assertEqual(bench_programmable.parse_args(["--lead-us", "400"]).lead_us, 400.0)
        # --kernel-times: off unless asked; a count of calls.
        self.assertEqual(bench_programmable.parse_args([]).kernel_times, 0)
        self.assertEqual(bench_programmable.parse_args(["--kernel-times", "5"]).kernel_times, 5)
        for value in ("-1", "soon"):
            err = io.StringIO()
            with contextlib.redirect_stderr(err), self.assertRaises(SystemExit):
                bench_programmable.parse_args(["--lead-us", value])
            self.assertIn("--lead-us", err.getvalue())

    def test_programmable_kernel_times(self):
        err = io.StringIO()
        with contextlib.redirect_stderr(err), self.assertRaises(SystemExit):
            bench_programmable.parse_args(["--kernel-times", "-1"])
        self.assertIn("--kernel-times", err.getvalue())
        # The table gains the kernel ratios only when a row has them.
        entry = lambda fwd, bwd, **extra: dict(status="ok", fwd_ms=fwd, bwd_ms=bwd, **extra)
        plain = [{"row": "alibi", "impls": {"flashc": entry(1.8, 5.0), "flex": entry(3.0, 7.2)},
                  "fwd_vs_flex": 0.6, "bwd_vs_flex": 0.694}]
        self.assertNotIn("kernels", bench_programmable.table(plain))
        timed = [dict(plain[0], fwd_kernel_vs_flex=0.61, bwd_kernel_vs_flex=0.7049)]
        text = bench_programmable.table(timed)
        self.assertIn("kernels: flashc / Flex bwd", text)
        self.assertIn("| 0.705 |", text)

    def test_ffn_lead(self):
        # --lead-us: 0 (default), a positive number of microseconds or "auto"; anything else is refused by name.
        self.assertEqual(bench_ffn.parse_args([]).lead_us, 0)
        self.assertEqual(bench_ffn.parse_args(["--lead-us", "250"]).lead_us, 250.0)
        self.assertEqual(bench_ffn.parse_args(["--lead-us", "auto"]).lead_us, "auto")
        for value in ("-5", "x", "nan"):
            with contextlib.redirect_stderr(io.StringIO()) as err, self.assertRaises(SystemExit):
                bench_ffn.parse_args(["--lead-us", value])
            self.assertIn("--lead-us", err.getvalue())

    def test_interleaved_rounds(self):
        # The implementations take turns, round r rotated by r (each takes every turn once in three rounds), each
        # value the median of its rounds; one that raises is reported and left out of later rounds. (do_bench
        # replaced: no GPU here.)
        order, clock = [], iter(range(100))

        def fake_do_bench(fn, grad_to_none=None, warmup=25, rep=100, lead_us=0):
            return fn()

        def timed(name):
            def fn():
                order.append(name)
                return float(next(clock))
            return fn

        def broken():
            order.append("c")
            raise RuntimeError("no kernel for this size\nmore")
        saved = bench_common.do_bench
        bench_common.do_bench = fake_do_bench
        try:
            result = bench_common.interleaved({"a": {"fwd": (timed("a"), None)}, "b": {"fwd": (timed("b"), None)},
                                               "c": {"fwd": (broken, None)}}, rounds=3)
        finally:
            bench_common.do_bench = saved
        self.assertEqual(order, ["a", "b", "c", "b", "a", "a", "b"])
        self.assertEqual(result["a"], {"fwd": 3.0})  # a's rounds read 0, 3, 4
        self.assertEqual(result["b"], {"fwd": 2.0})  # b's: 1, 2, 5
        self.assertEqual(result["c"], {"error": "no kernel for this size"})
        # Three that run: a b c, b c a, c a b.
        order.clear()
        bench_common.do_bench = fake_do_bench
        try:
            bench_common.interleaved({n: {"fwd": (timed(n), None)} for n in "abc"}, rounds=3)
        finally:
            bench_common.do_bench = saved
        self.assertEqual(order, list("abcbcacab"))

    def test_bad_arguments_are_refused(self):
        for argv, words in ((["--head-dims", "1:2:3"], "D:Dv"), (["--head-dims", "x"], "D:Dv"),
                            (["--head-dims", "80"], "not a multiple of value head dim 80"),
                            (["--heads", "-1"], "--heads must be >= 0")):
            with self.subTest(argv=argv):
                err = io.StringIO()
                with contextlib.redirect_stderr(err), self.assertRaises(SystemExit) as exit:
                    bench_attention.parse_args(argv)
                self.assertEqual(exit.exception.code, 2)
                self.assertIn(words, err.getvalue())


class BenchRingArgsTest(unittest.TestCase):
    def test_window(self):
        args = bench_ring.parse_args(["--window", "4096"])
        self.assertEqual((bench_ring.window_of(args, True), bench_ring.window_of(args, False)),
                         ((4096, 0), (4096, 4096)))
        self.assertIsNone(bench_ring.window_of(bench_ring.parse_args([]), True))
        err = io.StringIO()
        with contextlib.redirect_stderr(err), self.assertRaises(SystemExit) as exit:
            bench_ring.parse_args(["--window", "-1"])
        self.assertEqual(exit.exception.code, 2)
        self.assertIn("--window must be >= 0", err.getvalue())
        # the default window's bundles are the prebuild set bench-ring-window
        self.assertEqual(args.window, configs.BENCH_RING_WINDOW_DEFAULT)
        made = [c for _, static, koff in configs.bench_ring_window_configs(args.window) for c in (static, koff)]
        self.assertEqual(set(made), set(configs.SETS["bench-ring-window"]))

    def test_visible_pairs(self):
        for seq in range(0, 10):
            for causal in (False, True):
                for window in (None, (0, 0), (1, 1), (2, 5), (3, 0), (-1, 2), (2, -1), (20, 20)):
                    r = 0 if causal else (window[1] if window else -1)
                    want = sum(1 for i in range(seq) for j in range(seq)
                               if (not causal or j <= i) and (window is None or (
                                   (window[0] < 0 or j >= i - window[0]) and (r < 0 or j <= i + r))))
                    self.assertEqual(bench_ring.visible_pairs(seq, causal, window), want, (seq, causal, window))
        self.assertEqual(bench_ring.visible_pairs(131072, True, (4096, 0)), 131072 * 4097 - 4096 * 4097 // 2)

    @requires_torch
    def test_sampled_reference_under_a_window(self):
        import torch
        from flashc.testing import attention_reference
        torch.manual_seed(0)
        S, D = 37, 8
        q, k, v, do = (torch.randn(S, D, dtype=torch.float64) for _ in range(4))
        rows = cols = torch.tensor([0, 5, 17, 36])
        for causal, window in ((True, (4, 0)), (False, (3, 6)), (True, None), (False, None)):
            leaves = [t.clone().requires_grad_() for t in (q, k, v)]
            o, _ = attention_reference(*(t[None, None] for t in leaves), causal=causal, window=window, scale=0.3)
            grads = torch.autograd.grad(o, leaves, do[None, None])
            got = bench_ring._sampled_reference(torch, q, k, v, do, causal, 0.3, rows, cols, chunk=10, window=window)
            want = (o[0, 0][rows], grads[0][rows], grads[1][cols], grads[2][cols])
            for name, g, w in zip(("o", "dq", "dk", "dv"), got, want):
                self.assertTrue(torch.allclose(g, w), (causal, window, name))


if __name__ == "__main__":
    unittest.main()
