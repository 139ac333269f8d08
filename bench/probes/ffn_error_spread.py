# How far flashc's FFN gradients sit from float64 relative to an unfused computation in the inputs' precision
# (the GPU tests' bound: error <= 2 x unfused error + floor), over several random upstream gradients dy. Session 7:
# test_any_width failed once at 2.15x on dw_gate of the gated d = 100 / h = 1001 FFN with an unseeded dy after
# passing the call before. Prints err / unfused-err per gradient and seed. Needs FLASHC_BUNDLE_PATH with the tests set.
import sys

import torch

sys.path.insert(0, "python/tests")
import flashc.torch as ft  # noqa: E402
from flashc import configs  # noqa: E402
from test_gpu_ffn import make_inputs, reference, leaves  # noqa: E402
from flashc.testing import max_abs_error  # noqa: E402

for config in configs.TEST_FFN_ANY_WIDTH + configs.TEST_FFN[4:6]:
    names = [n for n, t in zip(("x", "w1", "b1", "w2", "b2", "w_gate"), make_inputs(config, (77,), 0)) if t is not None]
    worst = {}
    for seed in range(8):
        args = make_inputs(config, (77,), seed=1077)
        y = ft.ffn(args[0], args[1], args[2], args[3], args[4], activation=config.activation, w_gate=args[5])
        g = torch.Generator(device="cuda").manual_seed(seed)
        dy = torch.randn(y.shape, device="cuda", generator=g).to(y.dtype)
        grads = torch.autograd.grad(y, leaves(args), dy)
        _, g64 = reference(config, args, dy, torch.float64)
        _, glp = reference(config, args, dy, y.dtype)
        for name, got, base, ref in zip(names, grads, glp, g64):
            r = max_abs_error(got, ref) / max(max_abs_error(base, ref), 1e-12)
            worst.setdefault(name, []).append(r)
    print(config.describe(), " ".join("d%s %.2f-%.2f" % (n, min(v), max(v)) for n, v in worst.items()))
