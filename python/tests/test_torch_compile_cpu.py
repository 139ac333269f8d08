"""flashc.torch's custom ops (torch.ops.flashc.*) and torch.compile without a GPU: the ops are registered,
torch.library.opcheck passes on them (schema, fake implementations, autograd registration, AOT dispatch static and
dynamic), the fakes give the real ops' shapes, dtypes and strides (padded rows for FFN widths that are not whole
16 bytes), torch.compile(fullgraph=True) traces flashc.torch.attention and ffn with no graph break, and the compiled
function gives the eager outputs and gradients. The real ops run on CPU float64 tensors against test_torch_cpu's
stand-in bundle (the float64 reference as 'kernels'); flashc.torch._info is patched to describe the tensors as
bfloat16 on cuda:0, so that flashc.validate's checks run as on a GPU."""

import contextlib
import unittest

from _support import HAVE_TORCH, requires_torch

import flashc

if HAVE_TORCH:
    import torch
    import flashc.torch as ft
    from flashc import cache
    from flashc.spec import FfnConfig
    from flashc.testing import attention_reference, ffn_reference
    from test_torch_cpu import FakeBundle

OPS = ("attention_fwd", "attention_bwd", "ffn_fwd", "ffn_bwd", "moe_fwd", "moe_bwd")


@requires_torch
class RegisteredOpsTest(unittest.TestCase):
    def test_ops_are_registered(self):
        for name in OPS:
            with self.subTest(op=name):
                self.assertTrue(hasattr(torch.ops.flashc, name), "torch.ops.flashc.%s" % name)
        schema = str(torch.ops.flashc.attention_fwd.default._schema)
        self.assertRegex(schema, r"str options, (SymInt|int)\? key_offset")
        ffn_fwd = str(torch.ops.flashc.ffn_fwd.default._schema)
        self.assertIn("Tensor? b1", ffn_fwd)
        self.assertRegex(ffn_fwd, r"str options, bool train\) -> \(Tensor, Tensor, Tensor, Tensor\)")
        self.assertIn("Tensor[] saved, str options", str(torch.ops.flashc.ffn_bwd.default._schema))
        moe_fwd = str(torch.ops.flashc.moe_fwd.default._schema)
        self.assertIn("Tensor? w_up, str options, bool train", moe_fwd)
        self.assertIn("Tensor[] saved, str options) -> Tensor[]", str(torch.ops.flashc.moe_bwd.default._schema))

    def test_fakes_give_the_real_layouts(self):
        """On fake CUDA tensors (no GPU needed): o and lse (float32 [B, H, Sq]) contiguous; FFN outputs and
        gradients of widths 100 / 1001 / 77 with rows padded to 16 bytes, as flashc.torch._output allocates them."""
        from torch._subclasses.fake_tensor import FakeTensorMode
        with FakeTensorMode():
            bf = dict(dtype=torch.bfloat16, device="cuda")
            q = torch.empty(2, 4, 9, 64, **bf)
            k = torch.empty(2, 2, 11, 64, **bf)
            v = torch.empty(2, 2, 11, 32, **bf)
            o, lse = ft.attention(q, k, v, causal=True, enable_gqa=True, return_lse=True)  # a subclass: the ops
            self.assertEqual((tuple(o.shape), o.stride(), o.dtype), ((2, 4, 9, 32), (1152, 288, 32, 1), torch.bfloat16))
            self.assertEqual((tuple(lse.shape), lse.stride(), lse.dtype), ((2, 4, 9), (36, 9, 1), torch.float32))
            grads = torch.ops.flashc.attention_bwd(q, k, v, o, lse, torch.empty_like(o), repr(
                (True, None, None, None, True, "auto", None, None)), None)
            self.assertEqual([tuple(g.shape) for g in grads], [(2, 4, 9, 64), (2, 2, 11, 64), (2, 2, 11, 32)])
            x = torch.empty(3, 5, 100, **bf)
            w1, b1 = torch.empty(100, 1001, **bf), torch.empty(1001, **bf)
            w2, b2 = torch.empty(1001, 77, **bf), torch.empty(77, **bf)
            y = ft.ffn(x, w1, b1, w2, b2)
            self.assertEqual((tuple(y.shape), y.stride()), ((3, 5, 77), (400, 80, 1)))
            self.assertEqual(y.stride(), ft._output((15, 77), torch.bfloat16, "cpu", pad_rows=True)
                             .reshape(3, 5, 77).stride())
            options = repr(("gelu_tanh",))
            # The inference forward (train=False) saves nothing: three empty slots after y.
            outs = torch.ops.flashc.ffn_fwd(x, w1, b1, w2, b2, None, options, False)
            self.assertEqual([tuple(t.shape) for t in outs], [(3, 5, 77), (0,), (0,), (0,)])
            # The training forward: pre and h [rows, h] with padded rows, the third slot (gated: h) empty.
            y, *saved = torch.ops.flashc.ffn_fwd(x, w1, b1, w2, b2, None, options, True)
            self.assertEqual((tuple(y.shape), y.stride()), ((3, 5, 77), (400, 80, 1)))
            self.assertEqual([(tuple(t.shape), t.stride(), t.dtype) for t in saved],
                             [((15, 1001), (1008, 1), torch.bfloat16)] * 2 + [((0,), (1,), torch.bfloat16)])
            wg = torch.empty(100, 1001, **bf)
            _, *gated = torch.ops.flashc.ffn_fwd(x, w1, None, w2, b2, wg, repr(("silu",)), True)
            self.assertEqual([(tuple(t.shape), t.stride()) for t in gated], [((15, 1001), (1008, 1))] * 3)
            grads = torch.ops.flashc.ffn_bwd(y, x, w1, b1, w2, b2, None, saved, options)
            self.assertEqual([(tuple(g.shape), g.stride()) for g in grads],
                             [((3, 5, 100), (520, 104, 1)), ((100, 1001), (1008, 1)), ((1001,), (1,)),
                              ((1001, 77), (80, 1)), ((77,), (1,))])

    def test_moe_fakes(self):
        """The mixture of experts' ops on fake CUDA tensors: y [T, d_out]; the training forward's saved tensors in
        MoeConfig.saved's shapes and dtypes (sized by the padded capacity), the inference forward's slots empty; the
        backward's gradients shaped like x, the router and the weights; a bad argument refused with flashc's message."""
        from torch._subclasses.fake_tensor import FakeTensorMode
        from flashc.spec import MoeConfig
        with FakeTensorMode():
            bf = dict(dtype=torch.bfloat16, device="cuda")
            x, router = torch.empty(300, 64, **bf), torch.empty(64, 8, **bf)
            w1, w_up, w2 = torch.empty(8, 64, 96, **bf), torch.empty(8, 64, 96, **bf), torch.empty(8, 96, 40, **bf)
            y = ft.moe(x, router, w1, w2, w_up=w_up, top_k=2, renormalize=True)  # a subclass: the ops
            self.assertEqual((tuple(y.shape), y.dtype), ((300, 40), torch.bfloat16))
            options = repr((2, "softmax", True, "silu"))
            outs = torch.ops.flashc.moe_fwd(x, router, w1, w2, w_up, options, False)
            self.assertEqual([tuple(t.shape) for t in outs[1:]], [(0,)] * 12)
            y, *saved = torch.ops.flashc.moe_fwd(x, router, w1, w2, w_up, options, True)
            config = MoeConfig("bf16", 64, 96, 8, 2, out_dim=40, renormalize=True)
            capacity = config.capacity(300)
            self.assertEqual(capacity, (300 * 2 + 127 * 8) // 128 * 128)
            dtypes = {"i32": torch.int32, "f32": torch.float32}
            self.assertEqual([(tuple(t.shape), t.dtype) for t in saved],
                             [(shape, dtypes.get(dtype, torch.bfloat16)) for _, shape, dtype in config.saved(300)])
            self.assertEqual(saved[7].shape, (capacity, 64))  # permuted
            grads = torch.ops.flashc.moe_bwd(y, x, router, w1, w2, w_up, saved, options)
            self.assertEqual([tuple(g.shape) for g in grads], [(300, 64), (64, 8), (8, 64, 96), (8, 96, 40),
                                                               (8, 64, 96)])
            with self.assertRaisesRegex(flashc.InvalidArgumentError, "moe top_k must be in"):
                ft.moe(x, router, w1, w2, w_up=w_up, top_k=9)
            with self.assertRaisesRegex(flashc.InvalidArgumentError, "moe: w2 must be"):
                ft.moe(x, router, w1, torch.empty(8, 64, 40, **bf), w_up=w_up)

    def test_fakes_check_arguments_like_eager(self):
        from torch._subclasses.fake_tensor import FakeTensorMode
        with FakeTensorMode():
            q = torch.empty(1, 4, 8, 64, dtype=torch.bfloat16, device="cuda")
            k = torch.empty(1, 2, 8, 64, dtype=torch.bfloat16, device="cuda")
            with self.assertRaisesRegex(flashc.InvalidArgumentError, "query has 4 heads but key and value have 2; "
                                                                     "pass enable_gqa=True"):
                ft.attention(q, k, k)
            with self.assertRaisesRegex(flashc.InvalidArgumentError, "flashc.attention: window must be None"):
                ft.attention(q, k, k, enable_gqa=True, window=(1, 2, 3))
            x = torch.empty(3, 64, dtype=torch.bfloat16, device="cuda")
            with self.assertRaisesRegex(flashc.InvalidArgumentError, "flashc.ffn: activation must be one of"):
                ft.ffn(x, torch.empty(64, 128, dtype=torch.bfloat16, device="cuda"),
                       w2=torch.empty(128, 64, dtype=torch.bfloat16, device="cuda"), activation="tanh")
            with self.assertRaisesRegex(flashc.InvalidArgumentError, "not Python literals"):
                torch.ops.flashc.ffn_fwd(x, x, None, x, None, None, "object()", False)


@requires_torch
class StandInTest(unittest.TestCase):
    """The real ops on CPU float64 tensors against FakeBundle (bundle lookup, launch and the device check patched)."""

    def setUp(self):
        self.fakes = {}
        self.saved = (cache.load_bundle, ft._launch, ft._info)
        test = self

        def load_bundle(config):
            return test.fakes.setdefault(config.key, FakeBundle(config, test))

        def launch(bundle, program, device, args):
            bundle.launch(program, **args)

        real_info = ft._info

        def info(*args):
            return real_info(*args)._replace(dtype="torch.bfloat16", device="cuda:0")

        cache.load_bundle, ft._launch, ft._info = load_bundle, launch, info
        ft._resolved.clear()
        ft._configs.clear()
        torch.manual_seed(0)

    def tearDown(self):
        cache.load_bundle, ft._launch, ft._info = self.saved
        ft._resolved.clear()
        ft._configs.clear()
        torch._dynamo.reset()


@requires_torch
class OpcheckTest(StandInTest):
    def opcheck(self, op, args):
        result = torch.library.opcheck(op, args, raise_exception=False)
        for test, status in result.items():
            self.assertEqual(status, "SUCCESS", "%s %s: %s" % (op, test, status))

    def test_attention_ops(self):
        f = lambda *s: torch.randn(*s, dtype=torch.float64, requires_grad=True)
        for options, key_offset, hq in ((repr((True, None, (3, 0), 2.0, True, "auto", None, None)), None, 4),
                                        (repr((False, 0.3, None, None, False, "rows", None, None)), None, 2),
                                        (repr((True, None, None, None, False, "auto", None, None)), -2, 2)):
            with self.subTest(options=options, key_offset=key_offset):
                q, k, v = f(2, hq, 5, 16), f(2, 2, 7, 16), f(2, 2, 7, 8)
                self.opcheck(torch.ops.flashc.attention_fwd.default, (q, k, v, options, key_offset))
                o, lse = torch.ops.flashc.attention_fwd(q, k, v, options, key_offset)
                args = [t.detach() for t in (q, k, v, o, lse)] + [torch.randn_like(o), options, key_offset]
                self.opcheck(torch.ops.flashc.attention_bwd.default, tuple(args))

    def test_ffn_ops(self):
        f = lambda *s: torch.randn(*s, dtype=torch.float64, requires_grad=True)
        # Plain with biases (widths 7 / 13 / 5: rows padded), gated with b2, no bias with 1-D x.
        for x, w1, b1, w2, b2, w_gate, activation in (
                (f(2, 3, 7), f(7, 13), f(13), f(13, 5), f(5), None, "gelu_tanh"),
                (f(5, 8), f(8, 16), None, f(16, 8), f(8), f(8, 16), "silu"),
                (f(8), f(8, 16), None, f(16, 8), None, None, "relu")):
            with self.subTest(x=tuple(x.shape), gated=w_gate is not None):
                options = repr((activation,))
                inputs = (x, w1, b1, w2, b2, w_gate)
                detached = tuple(None if t is None else t.detach() for t in inputs)
                # The training forward (with the autograd checks: inputs that require a gradient), and the inference
                # forward, whose inputs need none (it saves nothing to differentiate).
                self.opcheck(torch.ops.flashc.ffn_fwd.default, inputs + (options, True))
                self.opcheck(torch.ops.flashc.ffn_fwd.default, detached + (options, False))
                y, *saved = torch.ops.flashc.ffn_fwd(*detached, options, True)
                args = (torch.randn_like(y),) + detached + (saved, options)
                self.opcheck(torch.ops.flashc.ffn_bwd.default, args)

    def test_ffn_backward_of_an_inference_forward_is_refused(self):
        """ffn_fwd(train=False) keeps nothing for a backward: asking one of it raises flashc's error, not a launch
        with missing arguments."""
        f = lambda *s: torch.randn(*s, dtype=torch.float64, requires_grad=True)
        x, w1, w2 = f(4, 8), f(8, 16), f(16, 8)
        y = torch.ops.flashc.ffn_fwd(x, w1, None, w2, None, None, repr(("relu",)), False)[0]
        with self.assertRaisesRegex(flashc.InvalidArgumentError, "ran the inference forward"):
            y.sum().backward()

    def test_moe_backward_of_an_inference_forward_is_refused(self):
        """moe_fwd(train=False) saves nothing either: its backward refuses before reading the (empty) saved slots."""
        import types
        from flashc import _torch_ops
        with self.assertRaisesRegex(flashc.InvalidArgumentError, "flashc.moe: .*ran the inference forward"):
            _torch_ops._moe_grad(types.SimpleNamespace(train=False), None)


@requires_torch
class OpPathTrainingTest(StandInTest):
    """flashc.torch.ffn through the custom ops (as under torch.compile; forced here with _use_ops): inputs that
    require a gradient run the training forward and the backward gets the saved activations it wrote; without a
    gradient (none required, or torch.no_grad()) the inference forward runs and nothing is saved."""

    def setUp(self):
        super().setUp()
        real = ft._use_ops
        ft._use_ops = lambda t: True
        self.addCleanup(setattr, ft, "_use_ops", real)

    def calls(self):
        (fake,) = self.fakes.values()
        return fake, [c[:2] for c in fake.calls]

    def test_training_forward_and_backward(self):
        f = lambda *s: torch.randn(*s, dtype=torch.float64, requires_grad=True)
        for args, activation in (((f(2, 3, 7), f(7, 13), f(13), f(13, 5), f(5), None), "gelu_tanh"),
                                 ((f(5, 8), f(8, 16), None, f(16, 8), f(8), f(8, 16)), "silu")):
            with self.subTest(gated=args[5] is not None):
                self.fakes.clear()
                ft._resolved.clear()
                x, w1, b1, w2, b2, w_gate = args
                y = ft.ffn(x, w1, b1, w2, b2, activation=activation, w_gate=w_gate)
                fake, calls = self.calls()
                config = fake.config
                self.assertEqual(calls, [(config.forward_train_program, "forward_train")])
                dy = torch.randn_like(y)
                leaves = [t for t in args if t is not None]
                grads = torch.autograd.grad(y, leaves, dy)
                fake, calls = self.calls()
                self.assertEqual(calls, [(config.forward_train_program, "forward_train"),
                                         (config.backward_program, "backward")])
                forward, backward = fake.calls[0][2], fake.calls[1][2]
                rows = x.numel() // x.shape[-1]
                for n in config.saved_names():
                    self.assertEqual(tuple(forward[n].shape), (rows, config.d_hidden), n)
                    self.assertEqual((backward[n].data_ptr(), backward[n].stride()),
                                     (forward[n].data_ptr(), forward[n].stride()), n)
                copies = [None if t is None else t.detach().clone().requires_grad_() for t in args]
                y_ref = ffn_reference(*copies[:5], activation=activation, w_gate=copies[5])
                self.assertTrue(torch.allclose(y, y_ref))
                for g, r in zip(grads, torch.autograd.grad(y_ref, [c for c in copies if c is not None], dy)):
                    self.assertTrue(torch.allclose(g, r))

    def test_no_gradient_runs_the_inference_forward(self):
        base = [torch.randn(*s, dtype=torch.float64) for s in ((4, 8), (8, 16), (16, 8))]
        for label, requires_grad, mode in (("no input requires grad", False, contextlib.nullcontext),
                                           ("torch.no_grad()", True, torch.no_grad)):
            with self.subTest(label):
                self.fakes.clear()
                ft._resolved.clear()
                x, w1, w2 = (t.clone().requires_grad_(requires_grad) for t in base)
                with mode():
                    y = ft.ffn(x, w1, w2=w2, activation="relu")
                self.assertFalse(y.requires_grad)
                fake, calls = self.calls()
                self.assertEqual(calls, [(fake.config.forward_program, "forward")])
                self.assertTrue(torch.allclose(y, ffn_reference(x.detach(), w1.detach(), w2=w2.detach(),
                                                                activation="relu")))


@requires_torch
class CompileTest(StandInTest):
    @staticmethod
    def model(q, k, v, x, w1, b1, w2, w_gate, w3, offset=None):
        o = ft.attention(q, k, v, causal=True, window=(4, 0), softcap=2.0, enable_gqa=True, key_offset=offset)
        y = ft.ffn(x, w1, b1, w2, activation="gelu_erf")
        z = ft.ffn(y.relu() * 2, w_gate.t(), w2=w3, w_gate=w_gate.t(), activation="silu")
        return o.sin(), z

    def inputs(self, seq=9):
        f = lambda *s: torch.randn(*s, dtype=torch.float64, requires_grad=True)
        return (f(2, 4, seq, 16), f(2, 2, seq + 2, 16), f(2, 2, seq + 2, 16), f(3, 5, 7), f(7, 13), f(13), f(13, 6),
                f(10, 6), f(10, 6))

    def check(self, fn, args, **kw):
        """fn's outputs and gradients equal those of eager flashc (the autograd.Function path) and of the float64
        reference."""
        eager = [t.detach().clone().requires_grad_() for t in args]
        got = fn(*args, **kw)
        want = self.model(*eager, **kw)
        grads = torch.autograd.grad(sum(t.sum() for t in got), args)
        want_grads = torch.autograd.grad(sum(t.sum() for t in want), eager)
        for name, g, w in zip(("o", "z"), got, want):
            self.assertTrue(torch.allclose(g, w), name)
        for i, (g, w) in enumerate(zip(grads, want_grads)):
            self.assertEqual(g.shape, w.shape)
            self.assertTrue(torch.allclose(g, w), "gradient %d" % i)
        q, k, v, x, w1, b1, w2, w_gate, w3 = (t.detach().clone().requires_grad_() for t in args)
        o, _ = attention_reference(q, k, v, causal=True, window=(4, 0), softcap=2.0, key_offset=kw.get("offset"))
        y = ffn_reference(x, w1, b1, w2, activation="gelu_erf")
        z = ffn_reference(y.relu() * 2, w_gate.t(), w2=w3, w_gate=w_gate.t(), activation="silu")
        self.assertTrue(torch.allclose(got[0], o.sin()) and torch.allclose(got[1], z))
        ref_grads = torch.autograd.grad(o.sin().sum() + z.sum(), (q, k, v, x, w1, b1, w2, w_gate, w3))
        for g, r in zip(grads, ref_grads):
            self.assertTrue(torch.allclose(g, r))

    def test_eager_plain_tensors_take_the_function_path(self):
        o, z = self.model(*self.inputs())
        # (attention without return_lse: the one-output Function)
        self.assertEqual(type(o.grad_fn.next_functions[0][0]).__name__, "_AttentionOutputBackward")
        self.assertIn("_FfnBackward", type(z.grad_fn).__name__)

    def test_no_graph_break(self):
        explain = torch._dynamo.explain(self.model)(*self.inputs())
        self.assertEqual((explain.graph_count, explain.graph_break_count), (1, 0), explain.break_reasons)
        targets = [str(n.target).replace(".default", "") for g in explain.graphs for n in g.graph.nodes
                   if n.op == "call_function"]
        self.assertEqual([t for t in targets if t.startswith("flashc.")],
                         ["flashc.attention_fwd", "flashc.ffn_fwd", "flashc.ffn_fwd"])
        # Inputs that require a gradient: both FFNs trace the training forward (train=True, a constant of the graph).
        trains = [n.args[7] for g in explain.graphs for n in g.graph.nodes
                  if n.op == "call_function" and str(n.target).startswith("flashc.ffn_fwd")]
        self.assertEqual(trains, [True, True])

    def test_compiled_without_gradient_runs_the_inference_forward(self):
        """Under torch.no_grad() the compiled model's FFNs run the inference forward (no training forward, no
        saved activations, no backward), with the eager outputs."""
        compiled = torch.compile(self.model, fullgraph=True, backend="aot_eager")
        args = self.inputs()
        with torch.no_grad():
            got = compiled(*args)
            want = self.model(*[t.detach() for t in args])
        for g, w in zip(got, want):
            self.assertTrue(torch.allclose(g, w))
        ffn_calls = [c[:2] for fake in self.fakes.values() if isinstance(fake.config, FfnConfig)
                     for c in fake.calls]
        self.assertTrue(ffn_calls)
        self.assertEqual({d for _, d in ffn_calls}, {"forward"})

    def test_compiled_matches_eager_and_reference(self):
        for backend in ("eager", "aot_eager"):
            with self.subTest(backend=backend):
                torch._dynamo.reset()
                compiled = torch.compile(self.model, fullgraph=True, backend=backend)
                self.check(compiled, self.inputs())
                self.check(compiled, self.inputs(), offset=-3)  # key_offset given: another configuration

    def test_dynamic_sequence_length(self):
        """dynamic=True: batch and sequence lengths stay symbolic (one graph for every length), heads and widths
        are specialised (they select the configuration)."""
        from torch._dynamo.utils import counters
        counters.clear()
        compiled = torch.compile(self.model, fullgraph=True, backend="aot_eager", dynamic=True)
        for seq in (9, 12, 5):
            self.check(compiled, self.inputs(seq))
        self.assertEqual(counters["stats"]["unique_graphs"], 1)
        # A key offset that changes from call to call (flashc.ring's blocks): a symbolic int, one more graph.
        for offset in (-3, 4, 100):
            self.check(compiled, self.inputs(7), offset=offset)
        self.assertEqual(counters["stats"]["unique_graphs"], 2)

    def test_bad_arguments_under_compile(self):
        compiled = torch.compile(lambda q, k: ft.attention(q, k, k), fullgraph=True, backend="eager")
        q = torch.randn(1, 4, 8, 16, dtype=torch.float64)
        with self.assertRaisesRegex(Exception, "flashc.attention: query has 4 heads but key and value have 2"):
            compiled(q, torch.randn(1, 2, 8, 16, dtype=torch.float64))


if __name__ == "__main__":
    unittest.main()
