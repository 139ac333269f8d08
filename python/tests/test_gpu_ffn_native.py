"""flashc.torch.ffn's native path (flashc._native: the C++ autograd Function) on the GPU: the outputs and every gradient
against float64 as test_gpu_ffn checks the Python path, the path actually taken, inputs in layouts the kernels do not
read as they are, no rows, gradients wanted of some inputs only, inference, and a failed launch raising flashc's error.
On a GPU machine the extension must build (torch.utils.cpp_extension, a C++ compiler, the CUDA headers): a build
failure fails these tests."""

import os
import unittest

from _support import requires_cuda

from flashc import configs

try:
    import torch
    import flashc.torch as ft
    from flashc import _native
    from flashc.errors import NotFoundError
    from _gpu import setup_gpu_suite
    from test_gpu_ffn import ROWS, check_against_reference, leaves, make_inputs, reference
    from _gpu import assert_close_to_reference
except ImportError:
    pass


def _takes_native(y):
    """True when y came from the native Function (its node is the C++ one, not flashc.torch._Ffn's)."""
    return y.grad_fn is not None and "_Ffn" not in y.grad_fn.name() and "FfnFunction" in y.grad_fn.name()


@requires_cuda
class FfnNativeGpuTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        setup_gpu_suite()
        cls._saved_env = os.environ.get(_native.ENV_NATIVE)
        os.environ[_native.ENV_NATIVE] = "1"
        cls.module = _native.module()

    @classmethod
    def tearDownClass(cls):
        if cls._saved_env is None:
            os.environ.pop(_native.ENV_NATIVE, None)
        else:
            os.environ[_native.ENV_NATIVE] = cls._saved_env

    def setUp(self):
        self.assertIsNotNone(self.module, "the native extension did not build: %s" % _native._failed)

    def test_named_and_padded_configs(self):
        """Every named FFN configuration and the padded widths (multiples of 8: the native path takes them), over
        the leading shapes of test_gpu_ffn, forward and every gradient against float64."""
        for config in configs.TEST_FFN + configs.TEST_FFN_PADDED:
            self.assertIsNotNone(ft._native_ffn(config), config.describe())
            for lead in ROWS:
                with self.subTest(config=config.describe(), lead=lead):
                    check_against_reference(self, config, lead)

    def test_path_taken(self):
        """The native Function runs where it should and the Python one where widths need padding (d = 100 ...)."""
        config = configs.TEST_FFN[0]
        args = make_inputs(config, (5,), seed=3)
        y = ft.ffn(args[0], args[1], args[2], args[3], args[4], activation=config.activation, w_gate=args[5])
        self.assertTrue(_takes_native(y), y.grad_fn.name())
        for config in configs.TEST_FFN_ANY_WIDTH:
            with self.subTest(config=config.describe()):
                self.assertIsNone(ft._native_ffn(config))
                args = make_inputs(config, (5,), seed=3)
                y = ft.ffn(args[0], args[1], args[2], args[3], args[4], activation=config.activation,
                           w_gate=args[5])
                self.assertIn("_Ffn", y.grad_fn.name())

    def test_layouts_the_kernels_do_not_read(self):
        """x transposed (not contiguous), x at an odd element offset (data not 16-byte aligned) and w1 as a
        transposed view: copied into the kernels' layout, results against float64."""
        config = configs.TEST_FFN[0]
        base = make_inputs(config, (64,), seed=11)
        d = config.d_model
        x_t = base[0].detach().t().contiguous().t()  # [64, d] with strides (1, 64)
        storage = torch.empty(64 * d + 1, dtype=x_t.dtype, device="cuda")
        x_odd = storage[1:].view(64, d)
        x_odd.copy_(base[0].detach())
        w1_t = base[1].detach().t().contiguous().t()
        cases = (("x transposed", x_t, base[1].detach()), ("x misaligned", x_odd, base[1].detach()),
                 ("w1 transposed", base[0].detach(), w1_t))
        for name, x, w1 in cases:
            with self.subTest(layout=name):
                args = (x.requires_grad_(), w1.requires_grad_()) + tuple(
                    None if t is None else t.detach().requires_grad_() for t in base[2:])
                y = ft.ffn(args[0], args[1], args[2], args[3], args[4], activation=config.activation,
                           w_gate=args[5])
                self.assertTrue(_takes_native(y))
                dy = torch.randn_like(y)
                grads = torch.autograd.grad(y, leaves(args), dy)
                y64, g64 = reference(config, args, dy, torch.float64)
                y_lp, g_lp = reference(config, args, dy, y.dtype)
                assert_close_to_reference(self, name + " y", y, y_lp, y64)
                for i, (got, lp, ref) in enumerate(zip(grads, g_lp, g64)):
                    self.assertEqual(got.shape, ref.shape)
                    assert_close_to_reference(self, "%s grad %d" % (name, i), got, lp, ref)

    def test_no_rows_and_inference(self):
        config = configs.TEST_FFN[0]
        args = make_inputs(config, (3,), seed=5)
        empty = args[0].detach()[:0].requires_grad_()
        y = ft.ffn(empty, args[1], args[2], args[3], args[4], activation=config.activation, w_gate=args[5])
        self.assertEqual(tuple(y.shape), (0, config.d_out))
        grads = torch.autograd.grad(y, leaves((empty,) + args[1:]), torch.zeros_like(y))
        torch.cuda.synchronize()
        for g in grads[1:]:  # weight gradients of no rows: zeros, not poison
            self.assertEqual(float(g.float().abs().max()), 0.0)
        with torch.no_grad():
            y = ft.ffn(args[0], args[1], args[2], args[3], args[4], activation=config.activation, w_gate=args[5])
        self.assertIsNone(y.grad_fn)
        y64, _ = reference(config, args, torch.zeros(y.shape, device="cuda"), torch.float64)
        y_lp, _ = reference(config, args, torch.zeros(y.shape, device="cuda"), y.dtype)
        assert_close_to_reference(self, "inference y", y, y_lp, y64)

    def test_gradients_of_some_inputs(self):
        """Only the weights want gradients (x is data): the training forward runs, x gets none."""
        config = configs.TEST_FFN[4] if len(configs.TEST_FFN) > 4 else configs.TEST_FFN[0]
        args = list(make_inputs(config, (40,), seed=9))
        args[0] = args[0].detach()
        y = ft.ffn(args[0], args[1], args[2], args[3], args[4], activation=config.activation, w_gate=args[5])
        self.assertTrue(_takes_native(y))
        dy = torch.randn_like(y)
        wanted = [t for t in args[1:] if t is not None]
        grads = torch.autograd.grad(y, wanted, dy)
        _, g64 = reference(config, args, dy, torch.float64)
        _, g_lp = reference(config, args, dy, y.dtype)
        # reference() differentiates every input, x first: skip its gradient.
        for i, (got, lp, ref) in enumerate(zip(grads, g_lp[1:], g64[1:])):
            assert_close_to_reference(self, "%s weight grad %d" % (config.describe(), i), got, lp, ref)

    def test_double_backward_is_refused(self):
        """A backward with create_graph=True through the native Function raises (its gradients would carry no
        history), naming the reason; the first-order gradients of the same call still come out."""
        config = configs.TEST_FFN[0]
        args = make_inputs(config, (16,), seed=4)
        y = ft.ffn(args[0], args[1], args[2], args[3], args[4], activation=config.activation, w_gate=args[5])
        self.assertTrue(_takes_native(y))
        dy = torch.randn_like(y)
        with self.assertRaisesRegex(RuntimeError, "not differentiable"):
            torch.autograd.grad(y, leaves(args), dy, create_graph=True, retain_graph=True)
        grads = torch.autograd.grad(y, leaves(args), dy)
        self.assertEqual(len(grads), len(leaves(args)))

    def test_failed_launch_raises_flashcs_error(self):
        """A plan naming a program the bundle does not have: the runtime's NOT_FOUND as flashc's NotFoundError
        (through _native.raise_launch_error), with the runtime's message."""
        config = configs.TEST_FFN[0]
        _, plan, bundle = ft._native_ffn(config)
        slots = [""] * len(self.module.SLOTS)
        slots[self.module.SLOTS.index("x")] = "x"
        bogus = self.module.FfnPlan(bundle._require().value, "no_such_program", slots, "no_such_program", slots,
                                    "no_such_program", slots, d_model=config.d_model, d_hidden=config.d_hidden,
                                    d_out=config.d_out, gated=config.gated, saved_count=0)
        args = make_inputs(config, (4,), seed=1)
        with self.assertRaises(NotFoundError) as caught:
            try:
                self.module.ffn(bogus, args[0].detach(), args[1].detach(), None, args[3].detach(), None, None, False)
            except self.module.LaunchError as e:
                _native.raise_launch_error(e)
        self.assertIn("no_such_program", str(caught.exception))


if __name__ == "__main__":
    unittest.main()
