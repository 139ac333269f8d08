"""flashc.Bundle over the runtime's C ABI with the hand-written bundle test/Runtime/bundles/basic: listing,
parameters, shapes, and runtime errors surfaced as FlashcError subclasses with status and message."""

import os
import subprocess
import sys
import unittest

from _support import BAD_VERSION_BUNDLE, BASIC_BUNDLE, PYTHON_DIR, TMA_BUNDLE, python_env, requires_runtime

import flashc
from flashc import Param


@requires_runtime
class BundleIntrospectionTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.bundle = flashc.Bundle(BASIC_BUNDLE)

    @classmethod
    def tearDownClass(cls):
        cls.bundle.close()

    def test_kernels_and_programs(self):
        self.assertEqual(self.bundle.kernels, ["vector_add", "row_scale", "row_reverse", "fill", "scale_accumulate",
                                               "add_into"])
        self.assertEqual(self.bundle.programs, ["scale_then_add"])
        self.assertFalse(self.bundle.is_program("row_scale"))
        self.assertTrue(self.bundle.is_program("scale_then_add"))
        with self.assertRaises(flashc.NotFoundError) as ctx:
            self.bundle.is_program("nope")
        self.assertEqual(ctx.exception.status, 7)
        self.assertIn("has no kernel or program 'nope'", str(ctx.exception))

    def test_params(self):
        self.assertEqual(self.bundle.params("row_scale"), [
            Param("x", True, "bf16", "in", ("M", "N")), Param("s", True, "f32", "in", ("M",)),
            Param("y", True, "bf16", "out", ("M", "N")), Param("alpha", False, "f32", None, ())])
        # A program's parameters: the union by name over its kernels, minus scratch ('tmp').
        self.assertEqual([p.name for p in self.bundle.params("scale_then_add")], ["x", "b", "out", "alpha"])
        self.assertEqual(self.bundle.params("fill")[1], Param("value", False, "i32", None, ()))
        with self.assertRaises(flashc.NotFoundError) as ctx:
            self.bundle.params("missing_kernel")
        self.assertIn("no kernel or program 'missing_kernel'", str(ctx.exception))

    def test_tensor_maps_are_not_parameters(self):
        # `tensormap` lines are derived by the runtime from their tensors: the user passes x, y, swizzled only.
        with flashc.Bundle(TMA_BUNDLE) as tma:
            self.assertEqual(tma.params("tma_copy"), [
                Param("x", True, "bf16", "in", ("M", "N")), Param("y", True, "bf16", "out", ("P", "Q")),
                Param("swizzled", False, "i32", None, ())])

    def test_param_shape(self):
        x = (0x10000, "bf16", (3, 8))
        self.assertEqual(self.bundle.param_shape("row_scale", "y", x=x), (3, 8))
        self.assertEqual(self.bundle.param_shape("scale_then_add", "out", x=(0x10000, "f32", (77,))), (77,))
        with self.assertRaises(flashc.InvalidArgumentError) as ctx:
            self.bundle.param_shape("row_scale", "y", x=x, s=(0x20000, "f32", (4,)))
        self.assertEqual(ctx.exception.status, 1)
        self.assertIn("'s'", str(ctx.exception))
        with self.assertRaises(flashc.NotFoundError) as ctx:
            self.bundle.param_shape("row_scale", "z", x=x)
        self.assertIn("no tensor parameter 'z'", str(ctx.exception))

    def test_python_side_argument_errors(self):
        ref = (0x10000, "f32", (4,))
        cases = [
            (dict(a=ref, b=ref, c=ref, d=ref), flashc.InvalidArgumentError, "'vector_add' has no parameter 'd' "
                                                                            "(parameters: a, b, c)"),
            (dict(a=ref, b=ref), flashc.InvalidArgumentError, "'vector_add' is missing argument 'c'"),
            (dict(a=ref), flashc.InvalidArgumentError, "missing arguments 'b', 'c'"),
            (dict(a=ref, b=ref, c=1.0), flashc.InvalidArgumentError, "argument 'c': expected a torch tensor or a "
                                                                     "(ptr, dtype, shape[, strides]) tuple"),
            (dict(a=(0x1000, "f64", (4,)), b=ref, c=ref), flashc.InvalidArgumentError, "argument 'a': unknown dtype"),
            (dict(a=(0x1000, "f32", (4,), (1, 1)), b=ref, c=ref), flashc.InvalidArgumentError,
             "argument 'a': 2 strides for a rank-1 shape"),
            (dict(a=("x", "f32", (4,)), b=ref, c=ref), flashc.InvalidArgumentError, "integer pointer"),
        ]
        for args, cls, message in cases:
            with self.assertRaises(cls, msg=str(args)) as ctx:
                self.bundle.launch("vector_add", **args)
            self.assertIn(message, str(ctx.exception))
        with self.assertRaisesRegex(flashc.InvalidArgumentError, "argument 'value': scalar parameter of type i32 "
                                                                 "needs an int, got 2.5"):
            self.bundle.launch("fill", out=(0x1000, "i32", (4,)), value=2.5)
        with self.assertRaisesRegex(flashc.InvalidArgumentError, "argument 'alpha': expected a Python number"):
            self.bundle.launch("row_scale", x=(0x1000, "bf16", (2, 2)), s=(0x1000, "f32", (2,)),
                               y=(0x1000, "bf16", (2, 2)), alpha="2")
        with self.assertRaisesRegex(flashc.InvalidArgumentError, "stream: expected None, an int"):
            self.bundle.launch("vector_add", stream="s", a=ref, b=ref, c=ref)

    def test_runtime_rejects_rank(self):
        # Rank 5 passes Python's checks and is refused by the runtime's flashc_args_set_tensor.
        with self.assertRaises(flashc.InvalidArgumentError) as ctx:
            self.bundle.launch("vector_add", a=(0x1000, "f32", (1, 1, 1, 1, 4)), b=(0x1000, "f32", (4,)),
                               c=(0x1000, "f32", (4,)))
        self.assertIn("argument 'a': rank 5 is outside 0..4", str(ctx.exception))

    def test_workspace_arguments(self):
        """A kernel needs no workspace (no device needed to say so); a workspace of the wrong kind is refused before
        anything reaches the runtime."""
        vec = (0x1000, "f32", (4,))
        self.assertEqual(self.bundle.workspace_bytes("vector_add", a=vec, b=vec, c=vec), 0)
        with self.assertRaisesRegex(flashc.NotFoundError, "nope"):
            self.bundle.workspace_bytes("nope", a=vec)
        for bad in ("x", (0x1000,), (0x1000, -1), 3.5):
            with self.assertRaisesRegex(flashc.InvalidArgumentError, "workspace: expected None, a torch CUDA tensor"):
                self.bundle.launch("scale_then_add", workspace=bad, x=vec, b=vec, out=vec, alpha=1.0)

    def test_torch_tensors_bind_in_one_call(self):
        """Plain CUDA torch tensors take flashc_args_set_tensors (ctypes arrays cached per argument names and filled
        anew each call); anything else takes the tensor-by-tensor path with its errors. A stand-in torch module
        (no GPU, no torch needed) supplies the tensors."""
        import sys as _sys
        import types

        from flashc import bundle as fb

        class Dtype:
            def __init__(self, name):
                self.name = name

            def __str__(self):
                return "torch." + self.name

        class Tensor:
            def __init__(self, ptr, dtype, shape, cuda=True):
                self.ptr, self.dtype, self.shape, self.is_cuda = ptr, dtype, tuple(shape), cuda
                self.device = types.SimpleNamespace(type="cuda" if cuda else "cpu")
                strides, step = [], 1
                for n in reversed(self.shape):
                    strides.insert(0, step)
                    step *= n
                self.strides = tuple(strides)

            def stride(self):
                return self.strides

            def data_ptr(self):
                return self.ptr

        bf16, f64 = Dtype("bfloat16"), Dtype("float64")
        fake = types.SimpleNamespace(Tensor=Tensor)
        one_by_one = []
        saved_torch, saved_set = _sys.modules.get("torch"), fb._Args.set_tensor

        def counting_set(self, name, *fields):
            one_by_one.append(name)
            return saved_set(self, name, *fields)

        _sys.modules["torch"], fb._Args.set_tensor = fake, counting_set
        try:
            self.assertEqual(self.bundle.param_shape("row_scale", "y", x=Tensor(0x10000, bf16, (3, 8))), (3, 8))
            # The same argument names again: the cached arrays get the new shape.
            self.assertEqual(self.bundle.param_shape("row_scale", "s", x=Tensor(0x10000, bf16, (5, 8))), (5,))
            self.assertEqual(one_by_one, [])
            with self.assertRaisesRegex(flashc.InvalidArgumentError, "argument 'x': dtype torch.float64 is not "
                                                                     "supported by flashc"):
                self.bundle.param_shape("row_scale", "y", x=Tensor(0x10000, f64, (3, 8)))
            with self.assertRaisesRegex(flashc.InvalidArgumentError, "argument 'x': expected a CUDA tensor"):
                self.bundle.param_shape("row_scale", "y", x=Tensor(0x10000, bf16, (3, 8), cuda=False))
            with self.assertRaisesRegex(flashc.InvalidArgumentError, "argument 'x': rank 5 is outside 0..4"):
                self.bundle.param_shape("row_scale", "y", x=Tensor(0x10000, bf16, (1, 1, 1, 3, 8)))
            # A tensor beside a (ptr, dtype, shape) tuple: every tensor one by one, the same shapes.
            one_by_one.clear()
            self.assertEqual(self.bundle.param_shape("row_scale", "y", x=Tensor(0x10000, bf16, (7, 8)),
                                                     s=(0x20000, "f32", (7,))), (7, 8))
            self.assertEqual(sorted(one_by_one), ["s", "x"])
        finally:
            fb._Args.set_tensor = saved_set
            if saved_torch is None:
                del _sys.modules["torch"]
            else:
                _sys.modules["torch"] = saved_torch

    def test_closed_bundle(self):
        b = flashc.Bundle(BASIC_BUNDLE)
        b.close()
        b.close()  # idempotent
        with self.assertRaisesRegex(flashc.InvalidArgumentError, "is closed"):
            b.params("vector_add")


@requires_runtime
class OpenErrorsTest(unittest.TestCase):
    def test_missing_bundle(self):
        with self.assertRaises(flashc.NotFoundError) as ctx:
            flashc.Bundle("/nonexistent/bundle")
        self.assertEqual(ctx.exception.status, 7)
        self.assertIn("bundle directory /nonexistent/bundle does not exist", str(ctx.exception))

    def test_unsupported_version(self):
        with self.assertRaises(flashc.UnsupportedError) as ctx:
            flashc.Bundle(BAD_VERSION_BUNDLE)
        self.assertEqual(ctx.exception.status, 8)
        self.assertIn("bundle format version 3 is not supported", str(ctx.exception))

    def test_directory_without_manifest(self):
        with self.assertRaises(flashc.InvalidBundleError) as ctx:
            flashc.Bundle(PYTHON_DIR)
        self.assertEqual(ctx.exception.status, 2)
        self.assertIn("has no manifest.flashc", str(ctx.exception))

    def test_no_driver_is_reported_not_crashed(self):
        # A subprocess, so the missing driver library cannot leak into GPU tests of this process.
        code = ("import flashc\n"
                "b = flashc.Bundle(%r)\n"
                "print('device', flashc.device_available())\n"
                "try:\n"
                "    b.launch('vector_add', a=(0x1000, 'f32', (4,)), b=(0x1000, 'f32', (4,)), c=(0x1000, 'f32', (4,)))\n"
                "except flashc.NoDriverError as e:\n"
                "    print('status', e.status, e)\n"
                "try:\n"
                "    b.prepare()\n"
                "except flashc.NoDriverError as e:\n"
                "    print('prepare', e.status)\n" % BASIC_BUNDLE)
        env = python_env(FLASHC_DRIVER_LIBRARY="libcuda-flashc-test-missing.so.1",
                         FLASHC_RUNTIME_LIB=flashc.runtime_library_path())
        proc = subprocess.run([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              universal_newlines=True, env=env)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertIn("device False", proc.stdout)
        self.assertIn("status 3 ", proc.stdout)
        self.assertIn("prepare 3", proc.stdout)


@requires_runtime
class VersionTest(unittest.TestCase):
    def test_version(self):
        self.assertRegex(flashc.runtime_version(), r"^\d+\.\d+\.\d+")
        self.assertTrue(flashc.runtime_library_path().endswith(".so") or ".so." in flashc.runtime_library_path())


if __name__ == "__main__":
    unittest.main()
