"""flashc.Bundle with torch CUDA tensors on the hand-written bundle test/Runtime/bundles/basic (JIT-compiled
through NVRTC): launches on torch's current stream, strided rows, raw pointer tuples, scalars, a program with
scratch, outputs allocated from flashc_bundle_param_shape, and launch-time errors raised as exceptions."""

import unittest

from _support import BASIC_BUNDLE, requires_cuda

import flashc

try:
    import torch
except ImportError:
    pass


@requires_cuda
class BundleGpuTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        flashc.check_device()
        cls.bundle = flashc.Bundle(BASIC_BUNDLE)

    def test_vector_add_and_fill(self):
        a = torch.randn(1000, device="cuda")
        b = torch.randn(1000, device="cuda")
        c = torch.full_like(a, float("nan"))
        self.bundle.launch("vector_add", a=a, b=b, c=c)
        torch.cuda.synchronize()
        self.assertTrue(torch.equal(c, a + b))
        out = torch.full((777,), -5, dtype=torch.int32, device="cuda")
        self.bundle.launch("fill", out=out, value=3)
        self.assertTrue(torch.equal(out.cpu(), torch.arange(777, dtype=torch.int32) + 3))

    def test_row_scale_strided_and_raw_pointers(self):
        base = torch.randn(5, 72, device="cuda").to(torch.bfloat16)
        x = base[:, 4:68]  # row stride 72 elements, last dim contiguous
        s = torch.randn(5, device="cuda")
        outs = self.bundle.allocate_outputs("row_scale", fill=float("nan"), x=x, s=s, alpha=0.5)
        self.assertEqual(list(outs), ["y"])
        self.assertEqual(tuple(outs["y"].shape), (5, 64))
        self.bundle.launch("row_scale", x=x, s=s, y=outs["y"], alpha=0.5)
        expected = (x.float() * s[:, None] * 0.5).to(torch.bfloat16)
        torch.cuda.synchronize()
        self.assertTrue(torch.equal(outs["y"], expected))
        y2 = torch.empty(5, 64, dtype=torch.bfloat16, device="cuda")
        self.bundle.launch("row_scale", stream=torch.cuda.current_stream(),
                           x=(x.data_ptr(), "bf16", (5, 64), (72, 1)), s=(s.data_ptr(), torch.float32, (5,)),
                           y=(y2.data_ptr(), "bf16", (5, 64)), alpha=0.5)
        torch.cuda.synchronize()
        self.assertTrue(torch.equal(y2, expected))

    def test_program_with_scratch_on_a_side_stream(self):
        x = torch.randn(4097, device="cuda")
        b = torch.randn(4097, device="cuda")
        out = torch.full_like(x, float("nan"))
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            self.bundle.launch("scale_then_add", x=x, b=b, out=out, alpha=2.0)
        side.synchronize()
        self.assertTrue(torch.allclose(out, 2.0 * x + b))

    def test_program_with_a_workspace(self):
        """The program's scratch (tmp, N f32, zero-filled) in memory the caller lends (what flashc.torch does with
        torch's caching allocator): sized by workspace_bytes, checked at launch, its garbage zero-filled."""
        x = torch.randn(4097, device="cuda")
        b = torch.randn(4097, device="cuda")
        out = torch.full_like(x, float("nan"))
        args = dict(x=x, b=b, out=out, alpha=2.0)
        need = self.bundle.workspace_bytes("scale_then_add", **args)
        self.assertEqual(need, 16640)  # 4097 * 4 bytes, rounded up to 256
        self.assertEqual(self.bundle.workspace_bytes("vector_add", a=x, b=b, c=out), 0)
        workspace = torch.full((need + 512,), 0xAB, dtype=torch.uint8, device="cuda")
        self.bundle.launch("scale_then_add", workspace=workspace, **args)
        torch.cuda.synchronize()
        self.assertTrue(torch.allclose(out, 2.0 * x + b))
        self.bundle.launch("scale_then_add", workspace=(workspace.data_ptr(), need), **args)
        torch.cuda.synchronize()
        self.assertTrue(torch.allclose(out, 2.0 * x + b))
        with self.assertRaisesRegex(flashc.InvalidArgumentError, "the workspace has 16384 bytes, its scratch needs 16640"):
            self.bundle.launch("scale_then_add", workspace=workspace[:16384], **args)
        with self.assertRaisesRegex(flashc.InvalidArgumentError, "the workspace must be 256-byte aligned"):
            self.bundle.launch("scale_then_add", workspace=workspace[16:], **args)
        with self.assertRaisesRegex(flashc.InvalidArgumentError, "first byte .* is not device memory known to CUDA"):
            self.bundle.launch("scale_then_add", workspace=(256 * 1000, need), **args)
        with self.assertRaisesRegex(flashc.InvalidArgumentError, "last byte .* is not device memory known to CUDA"):
            self.bundle.launch("scale_then_add", workspace=(workspace.data_ptr(), 1 << 44), **args)
        with self.assertRaisesRegex(flashc.InvalidArgumentError, "run past the end of the address space"):
            self.bundle.launch("scale_then_add", workspace=(2 ** 64 - 256, need), **args)
        with self.assertRaisesRegex(flashc.InvalidArgumentError, "expected a contiguous CUDA tensor"):
            self.bundle.launch("scale_then_add", workspace=torch.empty(need, dtype=torch.uint8), **args)

    def test_large_dynamic_shared_memory(self):
        x = torch.randn(3, 20000, device="cuda")  # 80 000 bytes of dynamic shared memory per block
        y = torch.empty_like(x)
        self.bundle.launch("row_reverse", x=x, y=y)
        torch.cuda.synchronize()
        self.assertTrue(torch.equal(y, x.flip(1)))

    def test_launch_errors(self):
        x = torch.randn(4, 6, device="cuda").to(torch.bfloat16)
        s = torch.randn(4, device="cuda")
        y = torch.empty(4, 6, dtype=torch.bfloat16, device="cuda")
        with self.assertRaisesRegex(flashc.InvalidArgumentError, "argument 's'"):
            self.bundle.launch("row_scale", x=x, s=torch.randn(5, device="cuda"), y=y, alpha=1.0)
        with self.assertRaisesRegex(flashc.InvalidArgumentError, "dtype|'x'"):
            self.bundle.launch("row_scale", x=x.float(), s=s, y=y, alpha=1.0)
        with self.assertRaisesRegex(flashc.InvalidArgumentError, "requirement 'N % 2 == 0'|stride"):
            odd = torch.empty(4, 5, dtype=torch.bfloat16, device="cuda")
            self.bundle.launch("row_scale", x=odd, s=s, y=odd, alpha=1.0)
        with self.assertRaisesRegex(flashc.InvalidArgumentError, "expected a CUDA tensor"):
            self.bundle.launch("vector_add", a=torch.zeros(4), b=torch.zeros(4), c=torch.zeros(4))


if __name__ == "__main__":
    unittest.main()
