"""The attention benchmark's command line (CPU only): head dims as D or D:Dv, --heads, and the errors it gives."""

import contextlib
import io
import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench"))
import bench_attention  # noqa: E402


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


if __name__ == "__main__":
    unittest.main()
