"""flashc.Bundle with torch CUDA tensors on the hand-written bundle test/Runtime/bundles/basic (JIT-compiled
through NVRTC): launches on torch's current stream, strided rows, raw pointer tuples, scalars, a program with
scratch, outputs allocated from flashc_bundle_param_shape, and launch-time errors raised as exceptions."""

import ctypes
import unittest

from _support import BASIC_BUNDLE, requires_cuda

import flashc

try:
    import torch
except ImportError:
    pass


class _Location(ctypes.Structure):  # CUmemLocation
    _fields_ = [("type", ctypes.c_int), ("id", ctypes.c_int)]


class _AllocationProp(ctypes.Structure):  # CUmemAllocationProp
    _fields_ = [("type", ctypes.c_int), ("requestedHandleTypes", ctypes.c_int), ("location", _Location),
                ("win32HandleMetaData", ctypes.c_void_p), ("compressionType", ctypes.c_ubyte),
                ("gpuDirectRDMACapable", ctypes.c_ubyte), ("usage", ctypes.c_ushort), ("reserved", ctypes.c_ubyte * 4)]


class _AccessDesc(ctypes.Structure):  # CUmemAccessDesc
    _fields_ = [("location", _Location), ("flags", ctypes.c_int)]


class _HalfMappedRange:
    """Two granules of reserved device address space of which only the first is mapped (the driver's virtual
    memory API through ctypes): yields (base, granule); the bytes from base + granule on are not device memory."""

    def __enter__(self):
        cuda = self.cuda = ctypes.CDLL("libcuda.so.1")
        u64, size = ctypes.c_uint64, ctypes.c_size_t
        device = _Location(1, torch.cuda.current_device())  # CU_MEM_LOCATION_TYPE_DEVICE
        prop = _AllocationProp(1, 0, device)  # CU_MEM_ALLOCATION_TYPE_PINNED, no shareable handle
        granule, base, handle = size(), u64(), u64()
        self._check(cuda.cuMemGetAllocationGranularity(ctypes.byref(granule), ctypes.byref(prop), 0))
        self.granule = granule.value
        self._check(cuda.cuMemAddressReserve(ctypes.byref(base), size(2 * self.granule), size(0), u64(0), u64(0)))
        self.base = base.value
        self._check(cuda.cuMemCreate(ctypes.byref(handle), size(self.granule), ctypes.byref(prop), u64(0)))
        self.handle = handle.value
        self._check(cuda.cuMemMap(u64(self.base), size(self.granule), size(0), u64(self.handle), u64(0)))
        access = _AccessDesc(device, 3)  # CU_MEM_ACCESS_FLAGS_PROT_READWRITE
        self._check(cuda.cuMemSetAccess(u64(self.base), size(self.granule), ctypes.byref(access), size(1)))
        return self.base, self.granule

    def __exit__(self, *exc):
        u64, size = ctypes.c_uint64, ctypes.c_size_t
        self.cuda.cuMemUnmap(u64(self.base), size(self.granule))
        self.cuda.cuMemRelease(u64(self.handle))
        self.cuda.cuMemAddressFree(u64(self.base), size(2 * self.granule))

    @staticmethod
    def _check(rc):
        if rc != 0:
            raise RuntimeError("CUDA driver call failed with CUresult %d" % rc)


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
        # Only the bytes the scratch needs are checked: a larger claim on good memory is fine.
        self.bundle.launch("scale_then_add", workspace=(workspace.data_ptr(), 1 << 44), **args)
        torch.cuda.synchronize()
        with _HalfMappedRange() as (base, granule):  # the scratch's first byte mapped, its last byte not
            with self.assertRaisesRegex(flashc.InvalidArgumentError, "last byte .* is not device memory known to CUDA"):
                self.bundle.launch("scale_then_add", workspace=(base + granule - 256, need), **args)
        with self.assertRaisesRegex(flashc.InvalidArgumentError, "run past the end of the address space"):
            self.bundle.launch("scale_then_add", workspace=(2 ** 64 - 256, need), **args)
        with self.assertRaisesRegex(flashc.InvalidArgumentError, "expected a contiguous CUDA tensor"):
            self.bundle.launch("scale_then_add", workspace=torch.empty(need, dtype=torch.uint8), **args)

    def test_workspace_allocated_on_demand(self):
        """workspace=allocate: called with what the arguments need, only for a program that has scratch."""
        asked = []

        def allocate(nbytes):
            asked.append(nbytes)
            return torch.empty(nbytes, dtype=torch.uint8, device="cuda")

        for n in (4097, 100, 4097):
            x, b = torch.randn(n, device="cuda"), torch.randn(n, device="cuda")
            out = torch.full_like(x, float("nan"))
            self.bundle.launch("scale_then_add", workspace=allocate, x=x, b=b, out=out, alpha=2.0)
            torch.cuda.synchronize()
            self.assertTrue(torch.allclose(out, 2.0 * x + b))
        self.assertEqual(asked, [16640, 512, 16640])  # n * 4 bytes, rounded up to 256
        a = torch.randn(10, device="cuda")
        c = torch.empty_like(a)
        self.bundle.launch("vector_add", workspace=allocate, a=a, b=a, c=c)
        torch.cuda.synchronize()
        self.assertEqual(len(asked), 3)  # no scratch: not called
        self.assertTrue(torch.equal(c, a + a))

    def test_repeated_launches(self):
        """A launch repeated with the same argument names reuses its argument handle and the runtime's plan: new
        pointers, new shapes, new scalars, and bad values in between are each taken or refused as on a first
        launch."""
        results = []
        for rows, alpha in ((5, 0.5), (5, 0.5), (7, 0.5), (5, 2.0), (5, 0.5)):
            x = torch.randn(rows, 64, device="cuda").to(torch.bfloat16)
            s = torch.randn(rows, device="cuda")
            y = torch.full((rows, 64), float("nan"), dtype=torch.bfloat16, device="cuda")
            self.bundle.launch("row_scale", x=x, s=s, y=y, alpha=alpha)
            results.append((y, (x.float() * s[:, None] * alpha).to(torch.bfloat16)))
            if rows == 7:  # bad values under the same names: the same errors as a first launch
                with self.assertRaisesRegex(flashc.InvalidArgumentError, "argument 's'"):
                    self.bundle.launch("row_scale", x=x, s=torch.randn(rows + 1, device="cuda"), y=y, alpha=1.0)
                with self.assertRaisesRegex(flashc.InvalidArgumentError, "needs an int|expected a Python number"):
                    self.bundle.launch("row_scale", x=x, s=s, y=y, alpha="1")
                with self.assertRaisesRegex(flashc.InvalidArgumentError, "expected a CUDA tensor"):
                    self.bundle.launch("row_scale", x=x.cpu(), s=s, y=y, alpha=1.0)
                with self.assertRaisesRegex(flashc.InvalidArgumentError, "not aligned"):
                    self.bundle.launch("row_scale", x=x.view(-1)[1:].view(-1)[:rows * 64 - 64].view(rows - 1, 64),
                                       s=s[:rows - 1], y=y[:rows - 1], alpha=1.0)
        torch.cuda.synchronize()
        for y, expected in results:
            self.assertTrue(torch.allclose(y.float(), expected.float(), rtol=1e-2, atol=1e-2))

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
