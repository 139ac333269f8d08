"""flashc.torch under torch.compile(fullgraph=True) on the GPU: a small transformer block (projections, GQA causal
attention, a gated FFN, residuals) and an any-width FFN with a key-offset attention give the outputs and gradients
of eager flashc and of float64 PyTorch math (error within 2x of the unfused same-precision computation). The
backend is inductor unless FLASHC_COMPILE_BACKEND names another (e.g. aot_eager where Triton is missing).
Configurations: in flashc.configs' test sets (python -m flashc.prebuild --out DIR tests)."""

import os
import unittest

from _support import requires_cuda

try:
    import torch
    import flashc.torch as ft
    from flashc.testing import attention_reference, ffn_reference
    from _gpu import assert_close_to_reference, setup_gpu_suite
except ImportError:
    pass

D_MODEL, HEADS, KV_HEADS, HEAD_DIM, HIDDEN = 64, 4, 1, 64, 256  # AttentionConfig("bf16", 4, 1, 64, causal=True),
# FfnConfig("bf16", 64, 256, activation="silu", gated=True) of flashc.configs.TEST_ATTENTION / TEST_FFN


def block(params, x, attention, ffn):
    """x [B, S, D_MODEL] -> same; attention(q, k, v) and ffn(x, w_up, w2, w_gate) are flashc's or the reference."""
    b, s, _ = x.shape
    q = (x @ params["wq"]).view(b, s, HEADS, HEAD_DIM).transpose(1, 2)
    k = (x @ params["wk"]).view(b, s, KV_HEADS, HEAD_DIM).transpose(1, 2)
    v = (x @ params["wv"]).view(b, s, KV_HEADS, HEAD_DIM).transpose(1, 2)
    o = attention(q, k, v).transpose(1, 2).reshape(b, s, HEADS * HEAD_DIM)
    h = x + o @ params["wo"]
    return h + ffn(h, params["w_up"], params["w2"], params["w_gate"])


def flashc_block(params, x):
    return block(params, x, lambda q, k, v: ft.attention(q, k, v, causal=True, enable_gqa=True),
                 lambda h, w_up, w2, w_gate: ft.ffn(h, w_up, w2=w2, w_gate=w_gate, activation="silu"))


def reference_block(params, x, dtype):
    def attention(q, k, v):
        rep = HEADS // KV_HEADS
        return attention_reference(q, k.repeat_interleave(rep, 1), v.repeat_interleave(rep, 1), causal=True,
                                   dtype=dtype)[0].to(dtype)

    def ffn(h, w_up, w2, w_gate):
        return ffn_reference(h, w_up, w2=w2, w_gate=w_gate, activation="silu", dtype=dtype).to(dtype)
    return block(params, x, attention, ffn)


def any_width(x, w1, b1, w2, b2, q, k, v, offset):
    """An FFN of widths 100 / 1001 / 77 (y returned as the op gives it: padded row strides; and read by a fused
    kernel, which must see those strides too), and a key-offset attention."""
    y = ft.ffn(x, w1, b1, w2, b2, activation="gelu_tanh")
    o = ft.attention(q, k, v, causal=True, key_offset=offset)
    return y, (y * 2).sum(-1), o.float().square()


def any_width_reference(x, w1, b1, w2, b2, q, k, v, offset, dtype):
    y = ffn_reference(x, w1, b1, w2, b2, activation="gelu_tanh", dtype=dtype).to(dtype)
    o = attention_reference(q, k, v, causal=True, key_offset=offset, dtype=dtype)[0].to(dtype)
    return y, (y * 2).sum(-1), o.float().square() if dtype != torch.float64 else o.square()


@requires_cuda
class CompileGpuTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        setup_gpu_suite()
        cls.backend = os.environ.get("FLASHC_COMPILE_BACKEND", "inductor")

    def setUp(self):
        torch._dynamo.reset()

    def leaves(self, shapes, seed):
        g = torch.Generator(device="cuda").manual_seed(seed)
        return {n: (torch.randn(*s, device="cuda", generator=g) * scale).to(torch.bfloat16).requires_grad_()
                for n, (s, scale) in shapes.items()}

    def compare(self, label, compiled, eager, reference_fn, leaves):
        """compiled(leaves) against eager(leaves) and reference_fn(leaves, dtype) in float64 (and in bf16 for the
        error bound): outputs and gradients of every leaf."""
        def run(fn, dtype=None):
            copies = [t.detach().clone().requires_grad_() if dtype is None else t.detach().to(dtype).requires_grad_()
                      for t in leaves]
            outs = fn(copies) if dtype is None else reference_fn(copies, dtype)
            g = torch.Generator(device="cuda").manual_seed(7)
            seeds = [torch.randn(o.shape, device="cuda", generator=g).to(o.dtype) for o in outs]
            grads = torch.autograd.grad(outs, copies, seeds)
            return [o.detach() for o in outs], list(grads)

        got, got_grads = run(compiled)
        eager_out, eager_grads = run(eager)
        ref, ref_grads = run(None, torch.float64)
        low, low_grads = run(None, torch.bfloat16)
        for i, (c, e, r, b) in enumerate(zip(got + got_grads, eager_out + eager_grads, ref + ref_grads,
                                             low + low_grads)):
            name = "%s %s %d" % (label, "output" if i < len(got) else "gradient", i)
            self.assertEqual(c.shape, e.shape, name)
            assert_close_to_reference(self, name + " (compiled)", c, b, r)
            assert_close_to_reference(self, name + " (eager)", e, b, r)

    def test_block_compiled_fullgraph(self):
        shapes = {"wq": ((D_MODEL, HEADS * HEAD_DIM), D_MODEL ** -0.5),
                  "wk": ((D_MODEL, KV_HEADS * HEAD_DIM), D_MODEL ** -0.5),
                  "wv": ((D_MODEL, KV_HEADS * HEAD_DIM), D_MODEL ** -0.5),
                  "wo": ((HEADS * HEAD_DIM, D_MODEL), (HEADS * HEAD_DIM) ** -0.5),
                  "w_up": ((D_MODEL, HIDDEN), D_MODEL ** -0.5), "w_gate": ((D_MODEL, HIDDEN), D_MODEL ** -0.5),
                  "w2": ((HIDDEN, D_MODEL), HIDDEN ** -0.5)}
        compiled_block = torch.compile(flashc_block, fullgraph=True, backend=self.backend)
        for batch, seq in ((2, 128), (1, 77)):
            with self.subTest(batch=batch, seq=seq):
                params = self.leaves(shapes, seed=seq)
                x = self.leaves({"x": ((batch, seq, D_MODEL), 1.0)}, seed=seq + 1)["x"]
                names = list(params)

                def call(fn):
                    return lambda ts: (fn(dict(zip(names, ts[:-1])), ts[-1]),)
                self.compare("block B=%d S=%d" % (batch, seq), call(compiled_block), call(flashc_block),
                             lambda ts, dtype: (reference_block(dict(zip(names, ts[:-1])), ts[-1], dtype),),
                             list(params.values()) + [x])

    def test_any_width_ffn_and_key_offset_compiled(self):
        # FfnConfig("bf16", 100, 1001, d_out=77, gelu_tanh, b1, b2) (TEST_FFN_ANY_WIDTH) and
        # AttentionConfig("bf16", 2, 2, 64, causal=True, key_offset=True) (TEST_ATTENTION_KEY_OFFSET).
        shapes = {"x": ((3, 50, 100), 1.0), "w1": ((100, 1001), 0.1), "b1": ((1001,), 0.1), "w2": ((1001, 77), 1 / 32),
                  "b2": ((77,), 0.1), "q": ((2, 2, 40, 64), 1.0), "k": ((2, 2, 96, 64), 1.0),
                  "v": ((2, 2, 96, 64), 1.0)}
        compiled = torch.compile(any_width, fullgraph=True, backend=self.backend)
        for offset in (0, 30, -5):
            with self.subTest(offset=offset):
                leaves = list(self.leaves(shapes, seed=offset + 100).values())
                y = compiled(*leaves, offset)[0]
                self.assertEqual(y.stride(), any_width(*leaves, offset)[0].stride())  # padded rows, as eager
                self.compare("any width, key_offset=%d" % offset, lambda ts: compiled(*ts, offset),
                             lambda ts: any_width(*ts, offset),
                             lambda ts, dtype: any_width_reference(*ts, offset, dtype), leaves)

    def test_mask_modifier_compiled(self):
        # AttentionConfig("bf16", 2, 2, 64, mask_mod=prefix-LM over 100 keys) (TEST_ATTENTION_MASK_MOD): the modifier
        # is traced once while torch.compile traces the call (a constant of the graph), fullgraph.
        from flashc import configs
        prefix = lambda b, h, q_idx, kv_idx: (kv_idx < 100) | (kv_idx <= q_idx)
        self.assertEqual(configs.TEST_ATTENTION_MASK_MOD[0].mask_mod,
                         configs.AttentionConfig("bf16", 2, 2, 64, mask_mod=prefix).mask_mod)
        fn = lambda q, k, v: (ft.attention(q, k, v, mask_mod=prefix).float().square(),)
        compiled = torch.compile(fn, fullgraph=True, backend=self.backend)
        shapes = {"q": ((2, 2, 150, 64), 1.0), "k": ((2, 2, 150, 64), 1.0), "v": ((2, 2, 150, 64), 1.0)}
        leaves = list(self.leaves(shapes, seed=7).values())
        self.compare("mask_mod prefix-LM", lambda ts: compiled(*ts), lambda ts: fn(*ts),
                     lambda ts, dtype: (attention_reference(*ts, mask_mod=prefix, dtype=dtype)[0].to(dtype).float()
                                        .square(),),
                     leaves)

    def test_compiled_ffn_without_gradient_runs_the_inference_forward(self):
        """torch.compile'd flashc.torch.ffn under torch.no_grad() launches the inference forward (train=False is a
        constant of that graph), with inputs that require a gradient the training forward (grad mode is guarded: a
        second graph); both give y within the error bound against float64."""
        shapes = {"x": ((3, 50, 100), 1.0), "w1": ((100, 1001), 0.1), "b1": ((1001,), 0.1), "w2": ((1001, 77), 1 / 32),
                  "b2": ((77,), 0.1)}
        fn = lambda x, w1, b1, w2, b2: ft.ffn(x, w1, b1, w2, b2, activation="gelu_tanh")  # noqa: E731
        compiled = torch.compile(fn, fullgraph=True, backend=self.backend)
        leaves = list(self.leaves(shapes, seed=5).values())
        launched, run = [], ft._run

        def recording_run(config, direction, device, args):
            launched.append(direction)
            run(config, direction, device, args)

        ft._run = recording_run
        try:
            with torch.no_grad():
                y_inference = compiled(*leaves)
            y_train = compiled(*leaves)
        finally:
            ft._run = run
        self.assertEqual(launched, ["forward", "forward_train"])
        self.assertFalse(y_inference.requires_grad)
        self.assertTrue(y_train.requires_grad)
        plain = [t.detach() for t in leaves]
        ref = ffn_reference(*plain, activation="gelu_tanh", dtype=torch.float64)
        low = ffn_reference(*plain, activation="gelu_tanh", dtype=torch.bfloat16).to(torch.bfloat16)
        assert_close_to_reference(self, "compiled ffn under torch.no_grad()", y_inference, low, ref)
        assert_close_to_reference(self, "compiled ffn (training forward)", y_train, low, ref)

    def test_moe_compiled_fullgraph(self):
        """A mixture of experts (flashc.configs.TEST_MOE[0]: bf16, d 128, h 256, 8 experts, top-2 renormalised, SwiGLU)
        under torch.compile(fullgraph=True): torch.ops.flashc.moe_fwd / moe_bwd in the graph, y and every gradient
        within the layer's bound of float64 autograd with the choice held fixed (test_gpu_moe's references), as
        eager flashc is."""
        from flashc import configs
        from test_gpu_moe import make_case, reference, reference_grads
        config = configs.TEST_MOE[0]
        fn = lambda x, r, w1, w2, wu: ft.moe(x, r, w1, w2, w_up=wu, top_k=config.top_k,  # noqa: E731
                                              renormalize=config.renormalize, activation=config.activation)
        compiled = torch.compile(fn, fullgraph=True, backend=self.backend)
        for tokens in (17, 300):
            with self.subTest(tokens=tokens):
                case = make_case(config, tokens, seed=tokens)
                leaves = [t.clone().requires_grad_() for t in case]
                y = compiled(*leaves)
                want = reference(config, *case[:4], case[4])
                peer = reference(config, *case[:4], case[4], act_dtype=torch.float32)
                tol = 2 * (peer - want).abs().max().item() + 1e-3 * want.abs().max().item() + 1e-4
                self.assertLessEqual((y.double() - want).abs().max().item(), tol)
                dy = torch.randn_like(y)
                y.backward(dy)
                ref = reference_grads(config, *case[:4], case[4], dy)
                for name, t in zip(("x", "router", "w1", "w2", "w_up"), leaves):
                    err = ((t.grad.double() - ref[name]).norm() / ref[name].norm()).item()
                    self.assertLessEqual(err, 2e-2, "d%s relative error %.3g" % (name, err))


if __name__ == "__main__":
    unittest.main()
