"""flashc.measure's float64 check of an attention result (the benchmarks' and the tuner's), on the CPU: its bound
comes from a peer's error, or without one from the same math unfused in the inputs' precision; a wrong result fails."""

import unittest

from _support import HAVE_TORCH, requires_torch

if HAVE_TORCH:
    import torch
    from flashc import measure
    from flashc.testing import attention_reference


@requires_torch
class CheckAttentionTest(unittest.TestCase):
    def setUp(self):
        g = torch.Generator().manual_seed(7)
        self.q, self.k, self.v, self.do = (torch.randn(2, 4, 96, 32, generator=g).to(torch.bfloat16) for _ in range(4))

    def fused(self, shift=0.0):
        """A correct implementation in bf16 (the reference in float32, rounded), or one whose o is off by `shift`."""
        def run(q, k, v, do):
            leaves = [t.float().requires_grad_() for t in (q, k, v)]
            o, _ = attention_reference(*leaves, causal=True, dtype=torch.float32)
            grads = torch.autograd.grad(o, leaves, do.float())
            return [(o.detach() + shift).to(q.dtype)] + [g.to(q.dtype) for g in grads]
        return run

    def test_without_a_peer_the_unfused_math_bounds_the_error(self):
        ok, detail = measure.check_attention(self.fused(), self.q, self.k, self.v, self.do, causal=True)
        self.assertTrue(ok, detail)
        self.assertEqual({r["peer"] for r in detail.values()}, {"unfused bfloat16"})
        self.assertTrue(all(r["tol"] is not None and r["peer_err"] > 0 for r in detail.values()))
        ok, detail = measure.check_attention(self.fused(0.1), self.q, self.k, self.v, self.do, causal=True)
        self.assertFalse(ok)
        self.assertFalse(detail["o[b=1,h=3]"]["pass"])
        self.assertTrue(detail["dq[b=1,h=3]"]["pass"])

    def test_the_unfused_bound_sees_each_slices_modifiers(self):
        # A document mask and ALiBi (the tuner's check of #16's rows): the bound's unfused math and the float64
        # reference both read the last slice's own head (slopes[3]); a result computed with head 0's slope fails.
        from flashc import configs, modifier_inputs
        from flashc.spec import AttentionConfig
        from flashc.tune import device
        config = AttentionConfig("bf16", 4, 4, 32, causal=True, mask_mod=configs.DOCUMENT_MASK,
                                 score_mod=configs.ALIBI_SCORE)
        args = device._reference_modifiers(config, modifier_inputs.tensors_for(config, 2, 96, device="cpu"))

        def run_with(mods):
            def run(q, k, v, do):
                leaves = [t.float().requires_grad_() for t in (q, k, v)]
                o, _ = attention_reference(*leaves, causal=True, dtype=torch.float32, **mods)
                grads = torch.autograd.grad(o, leaves, do.float())
                return [o.detach().to(q.dtype)] + [g.to(q.dtype) for g in grads]
            return run

        ok, detail = measure.check_attention(run_with(args), self.q, self.k, self.v, self.do, causal=True,
                                             reference_args=args)
        self.assertTrue(ok, detail)
        self.assertEqual({r["peer"] for r in detail.values()}, {"unfused bfloat16"})
        # The same math with every head reading head 0's slope: right on head 0, wrong on head 3.
        wrong = dict(args, score_mod=args["score_mod"].with_tensors(args["score_mod"].tensors[0][:1].expand(4)))
        ok, detail = measure.check_attention(run_with(wrong), self.q, self.k, self.v, self.do, causal=True,
                                             reference_args=args)
        self.assertFalse(ok)
        self.assertTrue(detail["o[b=0,h=0]"]["pass"])
        self.assertFalse(detail["o[b=1,h=3]"]["pass"])

    def test_a_peer_gives_the_bound_when_it_ran(self):
        ok, detail = measure.check_attention(self.fused(), self.q, self.k, self.v, self.do, causal=True,
                                             peer_run=self.fused(), peer_name="twin")
        self.assertTrue(ok, detail)
        self.assertEqual({r["peer"] for r in detail.values()}, {"twin"})


if __name__ == "__main__":
    unittest.main()
