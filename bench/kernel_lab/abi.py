"""ctypes view of the kernel ABI (flashc::TensorArg) and the lab's launch wrappers."""
import ctypes

import torch


class TensorArg(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("shape", ctypes.c_int64 * 4), ("stride", ctypes.c_int64 * 4)]


assert ctypes.sizeof(TensorArg) == 72


def tensor_arg(t: torch.Tensor) -> TensorArg:
    assert t.dim() <= 4 and (t.dim() == 0 or t.stride(-1) == 1), "inner dim must have stride 1"
    shape = list(t.shape) + [1] * (4 - t.dim())
    stride = list(t.stride()) + [0] * (4 - t.dim())
    return TensorArg(ctypes.c_void_p(t.data_ptr()), (ctypes.c_int64 * 4)(*shape), (ctypes.c_int64 * 4)(*stride))


class Kernels:
    """Forward/backward entry points of one compiled config."""

    def __init__(self, fwd_so, bwd_so=None):
        self.fwd_lib = ctypes.CDLL(fwd_so)
        self.fwd_lib.flashc_lab_fwd.argtypes = [TensorArg] * 5 + [ctypes.c_void_p]
        self.fwd_lib.flashc_lab_fwd.restype = ctypes.c_int
        self.bwd_lib = None
        if bwd_so:
            self.bwd_lib = ctypes.CDLL(bwd_so)
            self.bwd_lib.flashc_lab_bwd.argtypes = [TensorArg] * 12 + [ctypes.c_void_p]
            self.bwd_lib.flashc_lab_bwd.restype = ctypes.c_int

    def forward(self, q, k, v, o, lse):
        rc = self.fwd_lib.flashc_lab_fwd(*[tensor_arg(t) for t in (q, k, v, o, lse)],
                                         ctypes.c_void_p(torch.cuda.current_stream().cuda_stream))
        if rc != 0:
            raise RuntimeError(f"forward launch failed: rc={rc}")

    def backward(self, q, k, v, o, do, lse, delta, dq_accum, dq, dk, dv, dq_semaphore=None):
        """dq_semaphore: int32 [B, Hq, ceil(Sq/64)] workspace, used by deterministic builds only."""
        if dq_semaphore is None:
            dq_semaphore = torch.empty(q.shape[0], q.shape[1], (q.shape[2] + 63) // 64, device=q.device,
                                       dtype=torch.int32)
        rc = self.bwd_lib.flashc_lab_bwd(*[tensor_arg(t) for t in (q, k, v, o, do, lse, delta, dq_accum, dq, dk, dv,
                                                                  dq_semaphore)],
                                         ctypes.c_void_p(torch.cuda.current_stream().cuda_stream))
        if rc != 0:
            raise RuntimeError(f"backward launch failed: rc={rc}")
