"""One launch of each named lab config of gemm_ws on one FFN GEMM shape, for Nsight Compute (a launch each, L2 warm
from one untimed launch before):

    ncu --kernel-name regex:lab_gemm ... python3 bench/kernel_lab/gemm_profile.py CONFIG[,CONFIG...] M N K
"""
import os
import sys
import tempfile

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gemm_lab  # noqa: E402


def main():
    names, (M, N, K) = sys.argv[1].split(","), map(int, sys.argv[2:5])
    work = tempfile.mkdtemp(prefix="gemm_profile_")
    gen = torch.Generator(device="cuda").manual_seed(0)
    for name in names:
        flags = gemm_lab.CONFIGS[name]
        _, path, log = gemm_lab.build(name, flags, work)
        if path is None:
            sys.exit(f"build {name} failed:\n{log}")
        g = gemm_lab.Gemm(path, flags)
        a, b, bias = gemm_lab.operands(g, M, N, K, torch.bfloat16, gen)
        c = torch.empty(M, N, device="cuda", dtype=torch.bfloat16)
        pre = torch.randn(M, N, device="cuda", dtype=torch.bfloat16, generator=gen) if (g.save or g.act_grad) else None
        for _ in range(2):  # the first warms L2 and the module; ncu skips it (--launch-skip 1 per config is not
            g(a, b, bias if g.bias else None, c, pre, M, N, K)  # possible across configs: profile both)
        torch.cuda.synchronize()
        print(f"{name}: ran", flush=True)


if __name__ == "__main__":
    main()
