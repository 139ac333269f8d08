"""Helpers of the GPU tests: random attention inputs, the accuracy criterion and bundle availability."""

import os
import sys
import unittest

import _support  # noqa: F401  (sys.path)
import flashc
from flashc.testing import max_abs_error


TORCH_DTYPES = {"bf16": "bfloat16", "f16": "float16"}


def attention_inputs(config, batch, seq_q, seq_k, seed):
    """Seeded q, k, v (leaves requiring grad) and an upstream gradient dO for an AttentionConfig, on the GPU."""
    import torch
    g = torch.Generator(device="cuda").manual_seed(seed)
    dtype = getattr(torch, TORCH_DTYPES[config.dtype])
    make = lambda h, s, d: torch.randn(batch, h, s, d, device="cuda", generator=g).to(dtype).requires_grad_()
    q = make(config.num_heads, seq_q, config.head_dim)
    k = make(config.num_kv_heads, seq_k, config.head_dim)
    v = make(config.num_kv_heads, seq_k, config.value_head_dim)
    do = torch.randn(batch, config.num_heads, seq_q, config.value_head_dim, device="cuda", generator=g).to(dtype)
    return q, k, v, do


def assert_close_to_reference(test, name, got, baseline, reference, floor=1e-4):
    """flashc's error against the float64 reference must be within 2x the error of an unfused computation in the
    inputs' precision (plus a floor far below one bf16/f16 ulp of the data). NaN left by a poisoned output fails."""
    err = max_abs_error(got, reference)
    base = max_abs_error(baseline, reference)
    scale = float(reference[reference.isfinite()].abs().max()) if bool(reference.isfinite().any()) else 1.0
    tol = 2 * base + floor * max(1.0, scale)
    test.assertLessEqual(err, tol, "%s: max error %.3g vs float64 exceeds %.3g (2 x unfused same-precision error "
                                   "%.3g + floor)" % (name, err, tol, base))


def setup_gpu_suite():
    """Poison every output; make sure the runtime sees the device torch sees."""
    os.environ["FLASHC_POISON_OUTPUTS"] = "1"
    flashc.check_device()  # NoDriverError/NoDeviceError here means the runtime and torch disagree: a real failure


def missing_bundle_skip(test, error, optional):
    """A missing optional bundle (e.g. head dim 256) skips loudly; any other is a failure."""
    if optional:
        sys.stderr.write("SKIPPED (optional configuration): %s\n" % error)
        raise unittest.SkipTest(str(error))
    raise error
