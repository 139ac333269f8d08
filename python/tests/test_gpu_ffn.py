"""flashc.torch.ffn on the GPU against PyTorch float64 math on upcast inputs (outputs poisoned; error within 2x
of the unfused same-precision computation). gradcheck is not applicable to bf16/f16 kernels (see
test_gpu_attention); gradients are checked against float64 autograd and as a directional derivative."""

import unittest

from _support import requires_cuda

from flashc import configs

try:
    import torch
    import flashc.torch as ft
    from flashc.testing import activation_fn, ffn_reference
    from _gpu import assert_close_to_reference, setup_gpu_suite
except ImportError:
    pass

ROWS = [(1,), (77,), (256,), (3, 50)]  # leading dims of x


def make_inputs(config, lead, seed):
    g = torch.Generator(device="cuda").manual_seed(seed)
    dtype = {"bf16": torch.bfloat16, "f16": torch.float16}[config.dtype]
    d, h, o = config.d_model, config.d_hidden, config.d_out

    def rnd(*shape, scale=1.0):
        return (torch.randn(*shape, device="cuda", generator=g) * scale).to(dtype).requires_grad_()

    x = rnd(*lead, d)
    w1 = rnd(d, h, scale=d ** -0.5)
    b1 = rnd(h, scale=0.1) if config.has_b1 else None
    w2 = rnd(h, o, scale=h ** -0.5)
    b2 = rnd(o, scale=0.1) if config.has_b2 else None
    w_gate = rnd(d, h, scale=d ** -0.5) if config.gated else None
    return x, w1, b1, w2, b2, w_gate


def leaves(args):
    return [t for t in args if t is not None]


def reference(config, args, dy, dtype):
    copies = [None if t is None else t.detach().to(dtype).requires_grad_() for t in args]
    y = ffn_reference(*copies[:5], activation=config.activation, w_gate=copies[5], dtype=dtype)
    grads = torch.autograd.grad(y, leaves(copies), dy.to(dtype))
    return y, grads


def check_against_reference(test, config, lead):
    """flashc.torch.ffn's y and every gradient for `config` with x [*lead, d], against float64."""
    names = ("x", "w1", "b1", "w2", "b2", "w_gate")
    args = make_inputs(config, lead, seed=len(lead) * 1000 + lead[0])
    y = ft.ffn(args[0], args[1], args[2], args[3], args[4], activation=config.activation, w_gate=args[5])
    # Seeded like the inputs: the result must not depend on what ran before (an unseeded dy made a bound check
    # pass in one run and fail in the next, session 7).
    g = torch.Generator(device="cuda").manual_seed(len(lead) * 1000 + lead[0] + 1)
    dy = torch.randn(y.shape, device="cuda", generator=g).to(y.dtype)
    grads = torch.autograd.grad(y, leaves(args), dy)
    y64, g64 = reference(config, args, dy, torch.float64)
    y_lp, g_lp = reference(config, args, dy, y.dtype)
    label = "%s x%s" % (config.describe(), lead)
    test.assertEqual(tuple(y.shape), tuple(lead) + (config.d_out,))
    assert_close_to_reference(test, label + " y", y, y_lp, y64)
    present = [n for n, t in zip(names, args) if t is not None]
    for name, got, base, ref in zip(present, grads, g_lp, g64):
        test.assertEqual(got.shape, ref.shape, name)
        assert_close_to_reference(test, label + " d" + name, got, base, ref)


def saved_reference(config, args, dtype):
    """The activations the training forward saves (FfnConfig.saved_names), [rows, h] each, computed in `dtype`: pre =
    x·w1 + b1 and h = act(pre); gated gate = x·w_gate, up = x·w_up (w1) and h = act(gate) * up."""
    x, w1, b1, _, _, w_gate = [None if t is None else t.detach().to(dtype) for t in args]
    x = x.reshape(-1, x.shape[-1])
    act = activation_fn(config.activation)
    if config.gated:
        gate, up = x @ w_gate, x @ w1
        return {"gate": gate, "up": up, "h": act(gate) * up}
    pre = x @ w1 if b1 is None else x @ w1 + b1
    return {"pre": pre, "h": act(pre)}


def _nan_padded_view(t):
    """t's values in rows of a wider buffer whose extra columns hold NaN (rows 16-byte aligned, at least 8 columns
    more, so that flashc.torch passes the view as it is): a view of the first t.size(-1) columns (1-D tensors are
    returned as copies)."""
    if t.dim() < 2:
        return t.clone()
    width = t.shape[-1]
    padded = width + (-width) % 8 + 8  # 16-bit elements
    storage = torch.full(tuple(t.shape[:-1]) + (padded,), float("nan"), dtype=t.dtype, device=t.device)
    view = storage[..., :width]
    view.copy_(t)
    return view


def _padding_of(t):
    """The padding between the rows of a row-padded 2-D output (rows stride(0) apart, wider than the width; the
    last row's end is the storage's), else None."""
    t2 = t.reshape(-1, t.shape[-1]) if t.dim() > 2 else t
    if t2.dim() != 2 or t2.stride(-1) != 1 or t2.stride(0) <= t2.shape[1] or t2.shape[0] < 2:
        return None
    return t2.as_strided((t2.shape[0] - 1, t2.stride(0)), (t2.stride(0), 1))[:, t2.shape[1]:]


@requires_cuda
class FfnGpuTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        setup_gpu_suite()

    def test_named_configs(self):
        for config in configs.TEST_FFN:
            for lead in ROWS:
                with self.subTest(config=config.describe(), lead=lead):
                    check_against_reference(self, config, lead)

    def test_padded_widths(self):
        """FFN widths that are not multiples of 16 or 32 (200, 328, 1000: the fused kernel's output tiles padded,
        the GEMMs ragged in every dimension), forward and every gradient against float64."""
        for config in configs.TEST_FFN_PADDED:
            for lead in ROWS:
                with self.subTest(config=config.describe(), lead=lead):
                    check_against_reference(self, config, lead)

    def test_any_width(self):
        """FFN widths that are not multiples of 8 (d = 100 / 333, h = 1001, d_out = 77; #22): rows whose width ends
        inside a 16-byte copy chunk, gated and not, fused and two-GEMM plans, forward and every gradient against
        float64."""
        for config in configs.TEST_FFN_ANY_WIDTH:
            for lead in ROWS:
                with self.subTest(config=config.describe(), lead=lead):
                    check_against_reference(self, config, lead)

    def test_any_width_touches_only_the_width(self):
        """Inputs that are views of wider rows whose padding holds NaN (the kernels must never read past the width)
        and outputs whose padding stays poisoned (never written past it), for each any-width config."""
        for config in configs.TEST_FFN_ANY_WIDTH:
            with self.subTest(config=config.describe()):
                args = make_inputs(config, (77,), seed=11)
                nan_padded = [None if t is None else _nan_padded_view(t.detach()).requires_grad_() for t in args]
                y = ft.ffn(nan_padded[0], nan_padded[1], nan_padded[2], nan_padded[3], nan_padded[4],
                           activation=config.activation, w_gate=nan_padded[5])
                torch.manual_seed(11)  # dy and everything after it independent of the tests before
                dy = torch.randn_like(y)
                grads = torch.autograd.grad(y, leaves(nan_padded), dy)
                y64, g64 = reference(config, args, dy, torch.float64)
                y_lp, g_lp = reference(config, args, dy, y.dtype)
                assert_close_to_reference(self, config.describe() + " y (NaN-padded inputs)", y, y_lp, y64)
                for got, base, ref in zip(grads, g_lp, g64):
                    assert_close_to_reference(self, config.describe() + " gradient (NaN-padded inputs)", got, base,
                                              ref)
                for name, out in [("y", y)] + [("gradient %d" % i, g) for i, g in enumerate(grads)]:
                    padding = _padding_of(out)
                    if padding is not None:
                        self.assertTrue(bool(torch.isnan(padding).all()),
                                        "%s: %s wrote past its width into the rows' padding" % (config.describe(), name))

    def test_training_forward_saves_the_activations(self):
        """The training forward (what flashc.torch.ffn runs when an input requires a gradient) writes y and the
        activations the backward reads, [rows, h] each in x's dtype, every one within the error bound of the unfused
        same-precision computation, and never past their width (padding stays poisoned); the inference forward
        (torch.no_grad()) saves nothing and gives y within the same bound. Plain, gated, two-GEMM and any-width
        configurations."""
        for config in (configs.TEST_FFN[0], configs.TEST_FFN[4], configs.TEST_FFN[6], configs.TEST_FFN_ANY_WIDTH[0],
                       configs.TEST_FFN_ANY_WIDTH[2]):
            with self.subTest(config=config.describe()):
                args = make_inputs(config, (3, 50), seed=21)
                plain = [None if t is None else t.detach() for t in args]
                label = config.describe()
                y64 = ffn_reference(*plain[:5], activation=config.activation, w_gate=plain[5])
                y_lp = ffn_reference(*plain[:5], activation=config.activation, w_gate=plain[5],
                                     dtype=plain[0].dtype)
                y, inputs, saved = ft._ffn_forward(config, *plain, train=True)
                self.assertEqual(len(inputs), 6)
                assert_close_to_reference(self, label + " y (training forward)", y, y_lp, y64)
                self.assertEqual(len(saved), len(config.saved_names()))
                want64, want_lp = saved_reference(config, args, torch.float64), saved_reference(config, args, y.dtype)
                for name, t in zip(config.saved_names(), saved):
                    self.assertEqual((tuple(t.shape), t.dtype), ((150, config.d_hidden), y.dtype), name)
                    assert_close_to_reference(self, "%s saved %s" % (label, name), t, want_lp[name], want64[name])
                    padding = _padding_of(t)
                    if padding is not None:
                        self.assertTrue(bool(torch.isnan(padding).all()),
                                        "%s: the training forward wrote past the width of %s" % (label, name))
                y_inference, _, nothing = ft._ffn_forward(config, *plain)
                self.assertEqual(nothing, ())
                assert_close_to_reference(self, label + " y (inference forward)", y_inference, y_lp, y64)
                with torch.no_grad():
                    y_no_grad = ft.ffn(args[0], args[1], args[2], args[3], args[4], activation=config.activation,
                                       w_gate=args[5])
                self.assertFalse(y_no_grad.requires_grad)
                assert_close_to_reference(self, label + " y (torch.no_grad())", y_no_grad, y_lp, y64)

    def test_weight_gradients_split_over_k(self):
        """Rows enough that the weight gradients split their contraction (slices of 4096 rows: 2 and 3 slices, the
        last ragged), plain with biases, f16, gated: every gradient against float64."""
        for config in (configs.TEST_FFN[0], configs.TEST_FFN[2], configs.TEST_FFN[4]):
            for lead in ((5000,), (3, 3001)):
                with self.subTest(config=config.describe(), lead=lead):
                    check_against_reference(self, config, lead)

    def test_backward_reads_the_saved_activations(self):
        """The backward program reads h from the training forward instead of recomputing it: with the saved h
        replaced by zeros, dW2 = hᵀ·dy is exactly zero while db2 (the column sums of dy) is unchanged; with the saved
        activations as written, the gradients are those of flashc.torch.ffn's autograd within the error bound."""
        for config in (configs.TEST_FFN[0], configs.TEST_FFN[4], configs.TEST_FFN_ANY_WIDTH[3]):
            with self.subTest(config=config.describe()):
                args = make_inputs(config, (77,), seed=31)
                plain = [None if t is None else t.detach() for t in args]
                y, inputs, saved = ft._ffn_forward(config, *plain, train=True)
                torch.manual_seed(31)
                dy = torch.randn_like(y)
                _, g64 = reference(config, args, dy, torch.float64)
                _, g_lp = reference(config, args, dy, y.dtype)
                grads = ft._ffn_backward(config, (77,), *inputs, saved, dy)
                order = {"x": 0, "w1": 1, "b1": 2, "w2": 3, "b2": 4, "w_gate": 5}
                present = [n for n, t in zip(("x", "w1", "b1", "w2", "b2", "w_gate"), args) if t is not None]
                for name, base, ref in zip(present, g_lp, g64):
                    assert_close_to_reference(self, "%s d%s (saved activations)" % (config.describe(), name),
                                              grads[order[name]], base, ref)
                zero_h = ft._output(saved[-1].shape, saved[-1].dtype, saved[-1].device, pad_rows=True)
                zero_h.zero_()
                grads = ft._ffn_backward(config, (77,), *inputs, saved[:-1] + (zero_h,), dy)
                torch.cuda.synchronize()
                self.assertEqual(float(grads[3].abs().max()), 0.0, "dW2 with a zero saved h: the backward did not "
                                                                  "read the saved h")
                if config.has_b2:
                    assert_close_to_reference(self, config.describe() + " db2 (zero saved h)", grads[4],
                                              g_lp[present.index("b2")], g64[present.index("b2")])

    def test_directional_derivative(self):
        for config in (configs.TEST_FFN[0], configs.TEST_FFN[4], configs.TEST_FFN_PADDED[0]):
            with self.subTest(config=config.describe()):
                args = make_inputs(config, (33,), seed=7)
                y = ft.ffn(args[0], args[1], args[2], args[3], args[4], activation=config.activation, w_gate=args[5])
                torch.manual_seed(7)
                w = torch.randn_like(y)
                grads = torch.autograd.grad(y, leaves(args), w)
                _, grads_lp = reference(config, args, w, y.dtype)
                base = [None if t is None else t.detach().double() for t in args]
                direction = [None if t is None else torch.randn_like(t) for t in base]

                def loss(step):
                    moved = [None if b is None else b + step * d for b, d in zip(base, direction)]
                    out = ffn_reference(*moved[:5], activation=config.activation, w_gate=moved[5])
                    return float((out * w.double()).sum())

                eps = 1e-6
                fd = (loss(eps) - loss(-eps)) / (2 * eps)
                dirs = leaves(direction)
                dot = lambda gs: sum(float((g.double() * d).sum()) for g, d in zip(gs, dirs))
                got, baseline = dot(grads), dot(grads_lp)
                tol = max(2 * abs(baseline - fd), 1e-2 * abs(fd), 1e-3)
                self.assertLessEqual(abs(got - fd), tol, "directional derivative %.6g vs finite differences %.6g "
                                                         "(unfused: %.6g)" % (got, fd, baseline))


if __name__ == "__main__":
    unittest.main()
