"""flashc.torch without a GPU: argument errors through the public functions, and the autograd plumbing
(argument names, output shapes, saved log-sum-exp, the FFN's training forward and the activations it saves for
the backward, gradient routing for GQA, biases and gated FFNs, strided inputs, output poisoning) checked against a
stand-in bundle whose 'kernels' are the float64 reference."""

import contextlib
import os
import unittest

from _support import HAVE_TORCH, EnvPatch, requires_torch

import flashc

if HAVE_TORCH:
    import torch
    import flashc.torch as ft
    from flashc import cache, programs
    from flashc.testing import activation_fn, attention_reference, ffn_reference
    from flashc.spec import AttentionConfig, FfnConfig


if HAVE_TORCH:
    _DEFAULT_DISPATCH_TLS = (torch._C._dispatch_tls_local_include_set(), torch._C._dispatch_tls_local_exclude_set())


class FakeBundle:
    """Implements the programs flashc.torch launches with the reference math, on CPU tensors. An FFN bundle has three
    programs, as the compiler writes them: the inference forward, the training forward (y and the activations the
    backward reads: FfnConfig.saved_names) and the backward (which checks that those activations are this call's)."""

    def __init__(self, config, test, compiler_names=False):
        self.config, self.test = config, test
        self.path = "<fake %s>" % config.key
        self.kernels = []
        self.launches = []  # (program, sorted parameter names) per launch
        self.calls = []  # (program, direction, {logical name: tensor or scalar}) per launch
        self.names = {}  # program -> parameter names, in the bundle's spelling
        self.directions = {}  # program -> forward, forward_train or backward
        attention = isinstance(config, AttentionConfig)
        if compiler_names:  # as flash-tile / flash-generate-backward name them
            func = "attention" if attention else "ffn"
            ins = ["input%d" % i for i in range(len(config.input_names()))]
            self.names[func] = ins + ["result0", "result1"] if attention else ins + ["result0"]
            self.directions[func] = "forward"
            if not attention:  # flash-tile's training form of the clone @ffn_forward_train: saved activations last
                self.names[func + "_forward_train"] = ins + ["result0"] + list(config.saved_names())
                self.directions[func + "_forward_train"] = "forward_train"
            rename = {"o": "out", "do": "d_out"}
            self.names[func + "_backward"] = [rename.get(n, "d_" + n[1:] if n.startswith("d") and n != "do" else n)
                                              for n in config.backward_params()]
            self.directions[func + "_backward"] = "backward"
        else:
            for direction in ("forward", "backward") if attention else ("forward", "forward_train", "backward"):
                program = programs.program_candidates(config, direction)[0]
                self.names[program] = list(programs.logical_params(config, direction))
                self.directions[program] = direction
        self.programs = list(self.names)

    def params(self, name):
        return [flashc.Param(n, True, "bf16", "in", ()) for n in self.names[name]]

    def launch(self, name, stream=None, **args):
        self.launches.append((name, sorted(args)))
        self.test.assertEqual(sorted(args), sorted(self.names[name]))
        direction = self.directions[name]
        _, mapping = programs.resolve(self, self.config, direction)
        args = {logical: args[actual] for logical, actual in mapping.items()}
        self.calls.append((name, direction, dict(args)))
        name = getattr(self.config, direction + "_program")  # the program's flashc name, whatever its spelling
        saved = () if isinstance(self.config, AttentionConfig) else self.config.saved_names()
        if direction == "backward":
            outputs = {"dq", "dk", "dv", "dx", "dw1", "db1", "dw2", "db2", "dw_gate", "dw_up"}
        else:
            outputs = {"o", "lse", "y"} | (set(saved) if direction == "forward_train" else set())
        for n, t in args.items():
            if n == "key_offset":  # the one scalar (AttentionConfig.key_offset): a Python int
                self.test.assertTrue(self.config.key_offset and type(t) is int, "key_offset %r" % (t,))
                continue
            self.test.assertEqual(t.stride(-1), 1, n)
            if n in outputs and os.environ.get("FLASHC_POISON_OUTPUTS"):
                self.test.assertTrue(bool(torch.isnan(t).all()), "output %s was not poisoned" % n)
        # The backward runs with grad mode off, and a custom op's implementation (torch.ops.flashc, torch.compile's
        # path) below the Autograd dispatch keys: the reference needs autograd, so both come back here, on detached
        # views (a kernel's writes record no autograd history).
        args = {n: t.detach() if isinstance(t, torch.Tensor) else t for n, t in args.items()}
        with torch._C._ForceDispatchKeyGuard(*_DEFAULT_DISPATCH_TLS), torch.enable_grad():
            if isinstance(self.config, AttentionConfig):
                self._attention(name, args)
            else:
                self._ffn(name, args)

    def _attention(self, name, a):
        c = self.config
        kw = dict(causal=c.causal, scale=c.scale, window=c.window, softcap=c.softcap, key_offset=a.get("key_offset"))
        if name == c.forward_program:
            o, lse = attention_reference(a["q"], a["k"], a["v"], **kw)
            a["o"].copy_(o)
            a["lse"].copy_(lse)
            return
        q, k, v = (a[n].detach().double().requires_grad_() for n in ("q", "k", "v"))
        o, lse = attention_reference(q, k, v, **kw)
        # The kernel gets o and lse back from the forward: they must be this call's.
        tol = {} if a["o"].dtype == torch.float64 else dict(rtol=2e-2, atol=2e-2)  # o stored in bf16/f16
        self.test.assertTrue(torch.allclose(a["o"].double(), o.detach(), **tol))
        self.test.assertTrue(torch.allclose(a["lse"].double(), lse.detach(), **tol))
        dq, dk, dv = torch.autograd.grad(o, (q, k, v), a["do"].double())
        a["dq"].copy_(dq)
        a["dk"].copy_(dk)
        a["dv"].copy_(dv)

    def _ffn_saved(self, inputs):
        """The activations the training forward saves (FfnConfig.saved_names), from the float64 inputs."""
        c = self.config
        act = activation_fn(c.activation)
        x = inputs["x"]
        if c.gated:
            gate, up = x @ inputs["w_gate"], x @ inputs["w1"]
            return {"gate": gate, "up": up, "h": act(gate) * up}
        pre = x @ inputs["w1"]
        if "b1" in inputs:
            pre = pre + inputs["b1"]
        return {"pre": pre, "h": act(pre)}

    def _ffn(self, name, a):
        c = self.config
        if c.gated:
            names = dict(w1="w_up", w_gate="w_gate")
        else:
            names = dict(w1="w1", b1="b1")
        # Autograd for the backward only (a forward may run under torch.inference_mode(), on inference tensors).
        grad = name == c.backward_program
        inputs = {k: a[v].detach().double().requires_grad_(grad) for k, v in names.items() if v in a}
        inputs["x"] = a["x"].detach().double().requires_grad_(grad)
        inputs["w2"] = a["w2"].detach().double().requires_grad_(grad)
        if "b2" in a:
            inputs["b2"] = a["b2"].detach().double().requires_grad_(grad)
        y = ffn_reference(activation=c.activation, **inputs)
        if name in (c.forward_program, c.forward_train_program):
            a["y"].copy_(y)
            if name == c.forward_train_program:
                for n, t in self._ffn_saved(inputs).items():
                    a[n].copy_(t)
            return
        # The backward reads the activations the training forward saved (it recomputes nothing): they must be this
        # call's, [rows, h] each.
        tol = {} if a["x"].dtype == torch.float64 else dict(rtol=2e-2, atol=2e-2)
        rows = a["x"].shape[0]
        for n, t in self._ffn_saved(inputs).items():
            self.test.assertEqual(tuple(a[n].shape), (rows, c.d_hidden), n)
            self.test.assertTrue(torch.allclose(a[n].double(), t.detach(), **tol), "saved %s is not this call's" % n)
        keys = sorted(inputs)
        grads = torch.autograd.grad(y, [inputs[k] for k in keys], a["dy"].double())
        grad_names = dict(x="dx", w2="dw2", b2="db2", b1="db1", w_gate="dw_gate", w1="dw_up" if c.gated else "dw1")
        for k, g in zip(keys, grads):
            a[grad_names[k]].copy_(g)


@requires_torch
class TorchArgumentErrorsTest(unittest.TestCase):
    def test_attention_on_cpu_is_refused(self):
        q = torch.zeros(1, 2, 4, 64, dtype=torch.bfloat16)
        with self.assertRaisesRegex(flashc.InvalidArgumentError, "flashc.attention: expected CUDA tensors, but got "
                                                                 "query, key and value on device cpu"):
            ft.attention(q, q, q)

    def test_attention_messages_come_from_the_checks(self):
        q = torch.zeros(1, 2, 4, 64, dtype=torch.bfloat16)
        with self.assertRaisesRegex(flashc.InvalidArgumentError, "expected query to be a 4-D tensor"):
            ft.attention(q[0], q, q)
        with self.assertRaisesRegex(flashc.InvalidArgumentError, "same dtype, but got query.dtype: torch.bfloat16, "
                                                                 "key.dtype: torch.float32"):
            ft.attention(q, q.float(), q)
        with self.assertRaisesRegex(TypeError, "flashc.attention: expected key to be a torch.Tensor, but got list"):
            ft.attention(q, [1], q)

    def test_key_offset_must_be_an_int32(self):
        q = torch.zeros(1, 2, 4, 64, dtype=torch.bfloat16)
        for bad, words in ((True, "key_offset must be an integer .* but got bool"),
                           (1.0, "key_offset must be an integer .* but got float"),
                           ("3", "key_offset must be an integer .* but got str"),
                           (2 ** 31, r"key_offset must fit in int32 \[-2147483648, 2147483647\], but got 2147483648"),
                           (-2 ** 31 - 1, "key_offset must fit in int32 .* but got -2147483649")):
            with self.subTest(bad=bad), self.assertRaisesRegex(flashc.InvalidArgumentError,
                                                               "flashc.attention: " + words):
                ft.attention(q, q, q, causal=True, key_offset=bad)
        # Valid values get past the check (to the device check of these CPU tensors).
        for good in (0, -2 ** 31, 2 ** 31 - 1, torch.tensor(5)):
            with self.subTest(good=good), self.assertRaisesRegex(flashc.InvalidArgumentError, "expected CUDA tensors"):
                ft.attention(q, q, q, causal=True, key_offset=good)

    def test_modifier_tensors_of_every_integer_dtype(self):
        """A modifier's tensor becomes the kernels' int32 from any integer dtype whose values fit (unsigned 16- and
        32-bit too, which torch's reductions do not take); uint64 and values past int32 are refused by name."""
        q = torch.zeros(1)  # (the device the tensors must be on)
        program_of = lambda fn: ft._mask_mod_program(fn, q)
        for dtype in (torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64) + tuple(
                getattr(torch, n) for n in ("uint16", "uint32") if hasattr(torch, n)):
            docs = torch.tensor([0, 0, 1, 1, 2], dtype=dtype)
            with self.subTest(dtype=dtype):
                _, tensors = program_of(lambda q, k: docs[q] == docs[k])
                self.assertEqual(tensors[0].dtype, torch.int32)
                self.assertEqual(tensors[0].tolist(), [0, 0, 1, 1, 2])
        big = torch.tensor([0, 2 ** 40])
        with self.assertRaisesRegex(flashc.InvalidArgumentError, "holds values outside int32"):
            program_of(lambda q, k: big[q] == big[k])
        if hasattr(torch, "uint64"):
            wide = torch.tensor([0, 1], dtype=torch.uint64)
            with self.assertRaisesRegex(flashc.InvalidArgumentError, "is uint64, which the kernels do not read"):
                program_of(lambda q, k: wide[q] == wide[k])

    def test_key_offset_config_is_cached_once_for_every_value(self):
        """The signature key tells key_offset=None from an int, but not one int from another: the configuration
        (and bundle) is the same for every offset, the value goes with each call."""
        built, applied = [], []
        saved = (ft.attention_config, ft._AttentionOutput.apply)

        def config_of(*args, **kw):
            built.append(kw["key_offset"])
            return AttentionConfig("bf16", 2, 2, 64, causal=kw["causal"], key_offset=kw["key_offset"])

        def apply(q, k, v, config, offset, *modifier_tensors):
            applied.append((config, offset))
            return q

        ft.attention_config, ft._AttentionOutput.apply = config_of, apply
        ft._configs.clear()
        try:
            q = torch.zeros(1, 2, 4, 64, dtype=torch.bfloat16)
            for offset in (7, -3, None, 2 ** 31 - 1, None, 0):
                ft.attention(q, q, q, causal=True, key_offset=offset)
        finally:
            ft.attention_config, ft._AttentionOutput.apply = saved
            ft._configs.clear()
        self.assertEqual(built, [True, False])  # one configuration each, built once
        self.assertEqual([o for _, o in applied], [7, -3, None, 2 ** 31 - 1, None, 0])
        self.assertEqual([c.key_offset for c, _ in applied], [True, True, False, True, False, True])

    def test_ffn_messages(self):
        x = torch.zeros(3, 64, dtype=torch.bfloat16)
        w1 = torch.zeros(64, 128, dtype=torch.bfloat16)
        w2 = torch.zeros(128, 64, dtype=torch.bfloat16)
        with self.assertRaisesRegex(flashc.InvalidArgumentError, "flashc.ffn: w2 is required"):
            ft.ffn(x, w1)
        with self.assertRaisesRegex(flashc.InvalidArgumentError, r"x.size\(-1\) \(64\) must match w1.size\(0\) \(128\)"):
            ft.ffn(x, w2, w2=w1)
        with self.assertRaisesRegex(flashc.InvalidArgumentError, "expected CUDA tensors"):
            ft.ffn(x, w1, w2=w2)


@requires_torch
class PlumbingTest(unittest.TestCase):
    """The autograd functions, run on CPU float64 tensors against FakeBundle (launch and bundle lookup patched)."""

    def setUp(self):
        self.fakes = {}
        self.saved = (cache.load_bundle, ft._launch)
        test = self

        def load_bundle(config):
            return test.fakes.setdefault(config.key, FakeBundle(config, test, test.compiler_names))

        def launch(bundle, program, device, args):
            bundle.launch(program, **args)

        cache.load_bundle = load_bundle
        ft._launch = launch
        ft._resolved.clear()
        self.compiler_names = False
        torch.manual_seed(0)

    def tearDown(self):
        cache.load_bundle, ft._launch = self.saved

    def run_attention(self, config, q, k, v, key_offset=None):
        o, lse = ft._Attention.apply(q, k, v, config, key_offset)
        do = torch.randn_like(o)
        o.backward(do)
        qr, kr, vr = (t.detach().clone().requires_grad_() for t in (q, k, v))
        o_ref, lse_ref = attention_reference(qr, kr, vr, causal=config.causal, scale=config.scale,
                                             window=config.window, softcap=config.softcap, key_offset=key_offset)
        o_ref.backward(do)
        self.assertTrue(torch.allclose(o, o_ref))
        self.assertTrue(torch.equal(torch.isinf(lse), torch.isinf(lse_ref)))
        for got, want in ((q.grad, qr.grad), (k.grad, kr.grad), (v.grad, vr.grad)):
            self.assertEqual(got.shape, want.shape)
            self.assertTrue(torch.allclose(got, want))
        self.assertFalse(lse.requires_grad)
        return o, lse

    def test_attention_gqa_strided_poisoned(self):
        config = AttentionConfig("bf16", 4, 2, 16, causal=True, window=(3, 0), softcap=2.0)
        # [B, S, H, D] storage seen as [B, H, S, D], as PyTorch models lay out heads.
        q = torch.randn(2, 5, 4, 16, dtype=torch.float64).transpose(1, 2).requires_grad_()
        k = torch.randn(2, 7, 2, 16, dtype=torch.float64).transpose(1, 2).requires_grad_()
        v = torch.randn(2, 7, 2, 16, dtype=torch.float64).transpose(1, 2).requires_grad_()
        with EnvPatch(FLASHC_POISON_OUTPUTS="1"):
            self.run_attention(config, q, k, v)
        fake = self.fakes[config.key]
        self.assertEqual([n for n, _ in fake.launches], ["attention0_forward", "attention0_backward"])

    def test_key_offset_is_passed_forward_and_backward(self):
        """A key-offset configuration gets its scalar in both programs; o, lse and the gradients follow the reference
        with that offset (rows that see no key: zeros and -inf), for offsets inside, before and past the keys."""
        for config in (AttentionConfig("bf16", 2, 2, 8, causal=True, key_offset=True),
                       AttentionConfig("bf16", 4, 2, 8, window=(2, 3), softcap=2.0, key_offset=True),
                       AttentionConfig("f16", 2, 2, 8, causal=True, window=(4, 0), key_offset=True),
                       AttentionConfig("bf16", 2, 2, 8, key_offset=True)):
            for offset in (0, 3, -2, -6, 9, 12, -2 ** 31, 2 ** 31 - 1):
                with self.subTest(config=config.describe(), offset=offset):
                    self.fakes.clear()
                    ft._resolved.clear()
                    q = torch.randn(2, config.num_heads, 6, 8, dtype=torch.float64, requires_grad=True)
                    k = torch.randn(2, config.num_kv_heads, 9, 8, dtype=torch.float64, requires_grad=True)
                    v = torch.randn(2, config.num_kv_heads, 9, 8, dtype=torch.float64, requires_grad=True)
                    with EnvPatch(FLASHC_POISON_OUTPUTS="1"):
                        self.run_attention(config, q, k, v, key_offset=offset)
                    launches = self.fakes[config.key].launches
                    self.assertEqual([n for n, _ in launches], ["attention0_forward", "attention0_backward"])
                    self.assertTrue(all("key_offset" in names for _, names in launches))
        # The compiler's spelling: the i32 argument is input3 of the spec function.
        self.compiler_names = True
        self.fakes.clear()
        ft._resolved.clear()
        config = AttentionConfig("bf16", 2, 2, 8, causal=True, key_offset=True)
        q, k, v = (torch.randn(1, 2, 5, 8, dtype=torch.float64, requires_grad=True) for _ in range(3))
        self.run_attention(config, q, k, v, key_offset=-1)
        self.assertEqual(self.fakes[config.key].launches[0][1], sorted(["input0", "input1", "input2", "input3",
                                                                        "result0", "result1"]))

    def test_compiler_spelling_of_programs_and_parameters(self):
        # Programs named after the spec function, parameters input<i>/result<i>, out, d_out, d_q, ...
        self.compiler_names = True
        config = AttentionConfig("bf16", 4, 2, 16, causal=True)
        q = torch.randn(2, 4, 9, 16, dtype=torch.float64, requires_grad=True)
        k = torch.randn(2, 2, 9, 16, dtype=torch.float64, requires_grad=True)
        v = torch.randn(2, 2, 9, 16, dtype=torch.float64, requires_grad=True)
        self.run_attention(config, q, k, v)
        fake = self.fakes[config.key]
        self.assertEqual(fake.launches[0], ("attention", ["input0", "input1", "input2", "result0", "result1"]))
        self.assertEqual(fake.launches[1][0], "attention_backward")
        self.assertIn("d_out", fake.launches[1][1])
        ffn_config = FfnConfig("bf16", 8, 16, activation="gelu_tanh", has_b1=True, has_b2=True)
        f = lambda *s: torch.randn(*s, dtype=torch.float64, requires_grad=True)
        self.check_ffn(ffn_config, f(5, 8), f(8, 16), f(16), f(16, 8), f(8), None)
        launches = self.fakes[ffn_config.key].launches
        # Inputs that require a gradient: the training forward (flash-generate-backward's clone @ffn_forward_train,
        # its saved activations named pre and h), then the backward, which reads them.
        self.assertEqual(launches[0], ("ffn_forward_train", sorted(["input0", "input1", "input2", "input3", "input4",
                                                                    "result0", "pre", "h"])))
        self.assertEqual(launches[1][0], "ffn_backward")
        self.assertIn("d_w1", launches[1][1])
        self.assertLessEqual({"pre", "h"}, set(launches[1][1]))

    def test_attention_row_without_keys_and_empty_sizes(self):
        config = AttentionConfig("bf16", 2, 2, 8, causal=True)
        # Sq > Sk with a bottom-right causal mask: the first Sq - Sk rows see no key.
        q = torch.randn(1, 2, 5, 8, dtype=torch.float64, requires_grad=True)
        k = torch.randn(1, 2, 3, 8, dtype=torch.float64, requires_grad=True)
        v = torch.randn(1, 2, 3, 8, dtype=torch.float64, requires_grad=True)
        o, lse = self.run_attention(config, q, k, v)
        self.assertTrue(bool((o[:, :, :2] == 0).all()))
        self.assertTrue(bool(torch.isinf(lse[:, :, :2]).all()))
        # Zero keys: no launch, zeros and -inf; zero batch: empty results, no launch.
        self.fakes.clear()
        q0 = torch.randn(1, 2, 3, 8, dtype=torch.float64, requires_grad=True)
        k0 = torch.zeros(1, 2, 0, 8, dtype=torch.float64, requires_grad=True)
        o0, lse0 = ft._Attention.apply(q0, k0, k0, config)
        o0.sum().backward()
        self.assertTrue(bool((o0 == 0).all()) and bool(torch.isinf(lse0).all()))
        self.assertTrue(bool((q0.grad == 0).all()))
        e = torch.zeros(0, 2, 3, 8, dtype=torch.float64, requires_grad=True)
        o_e, _ = ft._Attention.apply(e, e, e, config)
        self.assertEqual(tuple(o_e.shape), (0, 2, 3, 8))
        self.assertEqual(self.fakes, {})

    def check_ffn(self, config, x, w1, b1, w2, b2, w_gate):
        y = ft._Ffn.apply(x, w1, b1, w2, b2, w_gate, config)
        dy = torch.randn_like(y)
        y.backward(dy)
        self.assert_ffn_matches_reference((x, w1, b1, w2, b2, w_gate), config.activation, y, dy)

    def assert_ffn_matches_reference(self, args, activation, y, dy):
        """y, and the .grad of each of args (x, w1, b1, w2, b2, w_gate) that requires a gradient after
        y.backward(dy), against the float64 reference."""
        leaves = [t for t in args if t is not None and t.requires_grad]
        copies = [None if t is None else t.detach().clone().requires_grad_(t.requires_grad) for t in args]
        y_ref = ffn_reference(copies[0], copies[1], copies[2], copies[3], copies[4], activation=activation,
                              w_gate=copies[5])
        self.assertEqual(y.shape, y_ref.shape)
        self.assertTrue(torch.allclose(y, y_ref))
        if dy is None:
            return
        y_ref.backward(dy)
        for t, r in zip(leaves, [c for c in copies if c is not None and c.requires_grad]):
            self.assertEqual(t.grad.shape, t.shape)
            self.assertTrue(torch.allclose(t.grad, r.grad))

    def describe_as_gpu(self):
        """Let flashc.torch.ffn itself (its configuration from flashc.validate) take these CPU float64 tensors: _info
        describes them as bfloat16 on cuda:0, as test_torch_compile_cpu does; undone at the end of the test."""
        real_info = ft._info
        ft._info = lambda *args: real_info(*args)._replace(dtype="torch.bfloat16", device="cuda:0")
        ft._configs.clear()

        def restore():
            ft._info = real_info
            ft._configs.clear()
        self.addCleanup(restore)

    def test_ffn_training_forward_saves_what_the_backward_reads(self):
        """flashc.torch.ffn with an input that requires a gradient runs the training forward, which writes y and the
        activations the backward reads (pre and h; gated gate, up and h), [rows, h] each; the backward program gets
        those very tensors (it recomputes nothing; the stand-in checks their values are this call's), and y and the
        gradients follow the reference. Also when only a weight requires a gradient."""
        self.describe_as_gpu()
        f = lambda *s: torch.randn(*s, dtype=torch.float64, requires_grad=True)
        no_grad = lambda *s: torch.randn(*s, dtype=torch.float64)
        cases = (("gelu_erf", (f(2, 3, 8), f(8, 16), f(16), f(16, 4), f(4), None), ("pre", "h")),
                 ("silu", (f(5, 8), f(8, 16), None, f(16, 8), f(8), f(8, 16)), ("gate", "up", "h")),
                 ("relu", (no_grad(4, 8), no_grad(8, 16), None, f(16, 8), None, None), ("pre", "h")),
                 ("gelu_tanh", (f(6, 7), f(7, 13), f(13), f(13, 5), f(5), None), ("pre", "h")))  # rows padded
        for activation, args, saved_names in cases:
            with self.subTest(activation=activation, x=tuple(args[0].shape)):
                self.fakes.clear()
                ft._resolved.clear()
                x, w1, b1, w2, b2, w_gate = args
                y = ft.ffn(x, w1, b1, w2, b2, activation=activation, w_gate=w_gate)
                self.assertTrue(y.requires_grad)
                (fake,) = self.fakes.values()
                config = fake.config
                self.assertEqual(config.saved_names(), saved_names)
                rows = x.numel() // x.shape[-1]
                self.assertEqual([c[:2] for c in fake.calls], [(config.forward_train_program, "forward_train")])
                forward = fake.calls[0][2]
                for n in saved_names:
                    self.assertEqual(tuple(forward[n].shape), (rows, config.d_hidden), n)
                    self.assertEqual(forward[n].dtype, x.dtype, n)
                    self.assertEqual(forward[n].stride(0), ft._padded_width(config.d_hidden, x.dtype), n)
                dy = torch.randn_like(y)
                y.backward(dy)
                self.assertEqual([c[:2] for c in fake.calls], [(config.forward_train_program, "forward_train"),
                                                               (config.backward_program, "backward")])
                backward = fake.calls[1][2]
                for n in saved_names:
                    got, want = backward[n], forward[n]
                    self.assertEqual((got.data_ptr(), tuple(got.shape), got.stride()),
                                     (want.data_ptr(), tuple(want.shape), want.stride()),
                                     "the backward's %s is not the tensor the training forward wrote" % n)
                self.assert_ffn_matches_reference(args, activation, y, dy)

    def test_ffn_without_a_gradient_runs_the_inference_forward(self):
        """No input requiring a gradient, or a call under torch.no_grad() / torch.inference_mode() (inputs that do
        require one: a module's weights in evaluation), runs the inference forward: the plain program, no saved
        activation written or kept, the reference's y."""
        self.describe_as_gpu()
        base = [torch.randn(*s, dtype=torch.float64) for s in ((2, 3, 8), (8, 16), (16,), (16, 4), (4,))] + [None]
        for label, requires_grad, mode in (("no input requires grad", False, contextlib.nullcontext),
                                           ("torch.no_grad()", True, torch.no_grad),
                                           ("torch.inference_mode()", True, torch.inference_mode)):
            with self.subTest(label):
                self.fakes.clear()
                ft._resolved.clear()
                args = [None if t is None else t.clone().requires_grad_(requires_grad) for t in base]
                with mode():
                    y = ft.ffn(args[0], args[1], args[2], args[3], args[4], activation="gelu_erf")
                self.assertFalse(y.requires_grad)
                (fake,) = self.fakes.values()
                config = fake.config
                self.assertEqual([c[:2] for c in fake.calls], [(config.forward_program, "forward")])
                self.assertFalse(set(config.saved_names()) & set(fake.calls[0][2]))
                self.assert_ffn_matches_reference(args, "gelu_erf", y, None)
        # The launch path itself: train=False allocates and returns no saved activation, train=True one [rows, h]
        # tensor per FfnConfig.saved_names (row strides padded to 16 bytes).
        config = FfnConfig("bf16", 8, 13, d_out=4, activation="relu", has_b1=True, has_b2=True)
        x, w1, b1, w2, b2 = (torch.randn(*s, dtype=torch.float64) for s in ((2, 3, 8), (8, 13), (13,), (13, 4), (4,)))
        self.fakes.clear()
        ft._resolved.clear()
        y, inputs, saved = ft._ffn_forward(config, x, w1, b1, w2, b2, None)
        self.assertEqual((saved, len(inputs), tuple(y.shape)), ((), 6, (2, 3, 4)))
        y, inputs, saved = ft._ffn_forward(config, x, w1, b1, w2, b2, None, train=True)
        self.assertEqual([(tuple(t.shape), t.stride()) for t in saved], [((6, 13), (14, 1))] * 2)
        self.assertEqual([c[:2] for c in self.fakes[config.key].calls],
                         [(config.forward_program, "forward"), (config.forward_train_program, "forward_train")])
        dx, dw1, db1, dw2, db2, dw_gate = ft._ffn_backward(config, (2, 3), *inputs, saved, torch.randn_like(y))
        self.assertEqual([tuple(g.shape) for g in (dx, dw1, db1, dw2, db2)], [(2, 3, 8), (8, 13), (13,), (13, 4), (4,)])
        self.assertIsNone(dw_gate)
        self.assertIs(self.fakes[config.key].calls[2][2]["h"], saved[1])
        # The inference forward's empty tuple is not the saved activations: refused before any launch.
        calls = len(self.fakes[config.key].calls)
        with self.assertRaisesRegex(flashc.InvalidArgumentError, r"saved activations \(pre, h\) are missing \(got 0"):
            ft._ffn_backward(config, (2, 3), *inputs, (), torch.randn_like(y))
        self.assertEqual(len(self.fakes[config.key].calls), calls)

    def test_ffn_plain_with_biases_and_3d_input(self):
        config = FfnConfig("bf16", 8, 16, d_out=4, activation="gelu_erf", has_b1=True, has_b2=True)
        f = lambda *s: torch.randn(*s, dtype=torch.float64, requires_grad=True)
        with EnvPatch(FLASHC_POISON_OUTPUTS="1"):
            self.check_ffn(config, f(2, 3, 8), f(8, 16), f(16), f(16, 4), f(4), None)

    def test_ffn_gated_routes_gate_and_up_gradients(self):
        config = FfnConfig("bf16", 8, 16, activation="silu", gated=True, has_b2=True)
        f = lambda *s: torch.randn(*s, dtype=torch.float64, requires_grad=True)
        # w1 transposed storage: the function copies it to a row-major layout for the kernel.
        w1 = torch.randn(16, 8, dtype=torch.float64).t().requires_grad_()
        self.check_ffn(config, f(5, 8), w1, None, f(16, 8), f(8), f(8, 16))

    def test_ffn_any_width_pads_rows(self):
        """Widths whose rows are not whole 16 bytes (float64 widths 7, 13, 5 here; bf16 100, 1001, 77 on the GPU)
        reach the kernels with 16-byte aligned row strides: inputs copied into padded rows, outputs and gradients
        allocated padded and returned as views of their first columns; values and gradients as the reference."""
        config = FfnConfig("bf16", 7, 13, d_out=5, activation="gelu_tanh", has_b1=True, has_b2=True)
        f = lambda *s: torch.randn(*s, dtype=torch.float64, requires_grad=True)
        seen = {}

        def launch(bundle, program, device, args):
            for name, t in args.items():
                seen[(program, name)] = (tuple(t.shape), t.stride())
            bundle.launch(program, **args)

        ft._launch = launch
        with EnvPatch(FLASHC_POISON_OUTPUTS="1"):
            self.check_ffn(config, f(2, 3, 7), f(7, 13), f(13), f(13, 5), f(5), None)
        self.assertTrue(seen)
        for (program, name), (shape, stride) in seen.items():
            if len(shape) >= 2:
                self.assertTrue(all(s * 8 % 16 == 0 for s in stride[:-1]), "%s %s: strides %s" % (program, name, stride))
                self.assertEqual(stride[-1], 1)
        # (Inputs that require a gradient: the training forward.)
        x_shape, x_stride = seen[(config.forward_train_program, "x")]
        self.assertEqual((x_shape, x_stride), ((6, 7), (8, 1)))
        y_shape, y_stride = seen[(config.forward_train_program, "y")]
        self.assertEqual((y_shape, y_stride), ((6, 5), (6, 1)))
        # The saved activations [rows, h]: written padded by the training forward, read as such by the backward.
        for program in (config.forward_train_program, config.backward_program):
            for n in config.saved_names():
                self.assertEqual(seen[(program, n)], ((6, 13), (14, 1)), (program, n))

    def test_kernel_layout_pads_rows_only_when_asked(self):
        t = torch.arange(3 * 1001, dtype=torch.float32).reshape(3, 1001).to(torch.bfloat16)
        padded = ft._kernel_layout(t, pad_rows=True)
        self.assertEqual((tuple(padded.shape), padded.stride()), ((3, 1001), (1008, 1)))
        self.assertTrue(torch.equal(padded, t))
        self.assertIs(ft._kernel_layout(padded, pad_rows=True), padded)  # already padded: passed as it is
        self.assertEqual(ft._kernel_layout(t).stride(), (1001, 1))  # attention's tensors are left alone
        out = ft._output((4, 77), torch.float16, "cpu", pad_rows=True)
        self.assertEqual((tuple(out.shape), out.stride()), ((4, 77), (80, 1)))
        self.assertEqual(ft._output((4, 80), torch.float16, "cpu", pad_rows=True).stride(), (80, 1))

    def test_ffn_empty_batch(self):
        config = FfnConfig("bf16", 8, 16, activation="relu")
        f = lambda *s: torch.randn(*s, dtype=torch.float64, requires_grad=True)
        x, w1, w2 = f(0, 8), f(8, 16), f(16, 8)
        y = ft._Ffn.apply(x, w1, None, w2, None, None, config)
        y.sum().backward()
        self.assertEqual(tuple(y.shape), (0, 8))
        self.assertTrue(bool((w1.grad == 0).all()))
        self.assertEqual(self.fakes, {})

    def test_bundle_with_other_parameter_names_is_refused(self):
        config = AttentionConfig("bf16", 2, 2, 8)
        fake = FakeBundle(config, self)
        fake.names[config.forward_program] = ["q", "k", "v", "out", "lse", "extra"]
        self.fakes[config.key] = fake
        q = torch.randn(1, 2, 3, 8, dtype=torch.float64)
        with self.assertRaisesRegex(flashc.InvalidBundleError, "program 'attention0_forward' has parameters "
                                                               r"\(q, k, v, out, lse, extra\) but flashc.torch passes"):
            ft._Attention.apply(q, q, q, config)


if __name__ == "__main__":
    unittest.main()
