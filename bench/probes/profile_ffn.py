# Runs one flashc FFN forward + backward twice, so that Nsight Compute can profile its kernels:
#   ncu --clock-control none --kernel-name regex:flashc_ --launch-count 12 --section SpeedOfLight \
#       python3 bench/probes/profile_ffn.py M d h
# Needs FLASHC_BUNDLE_PATH with the benchmark bundle of y = gelu_tanh(x W1) W2 (bf16, no biases).
import sys

import torch

import flashc.torch as ft

m, d, h = (int(x) for x in sys.argv[1:4])
torch.manual_seed(0)
x = torch.randn(m, d, device="cuda", dtype=torch.bfloat16, requires_grad=True)
w1 = (torch.randn(d, h, device="cuda", dtype=torch.bfloat16) / d ** 0.5).requires_grad_()
w2 = (torch.randn(h, d, device="cuda", dtype=torch.bfloat16) / h ** 0.5).requires_grad_()
dy = torch.randn(m, d, device="cuda", dtype=torch.bfloat16)
for _ in range(2):
    ft.ffn(x, w1, w2=w2, activation="gelu_tanh").backward(dy)
torch.cuda.synchronize()
print("profiled M=%d d=%d h=%d" % (m, d, h))
