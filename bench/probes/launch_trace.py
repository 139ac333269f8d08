# The CUDA driver calls behind flashc's launch path, for Nsight Systems' API summary (session 7: a forward +
# backward of a small FFN costs ~16x PyTorch eager's forward on the host):
#   nsys profile -t cuda,osrt -o /tmp/trace python3 bench/probes/launch_trace.py && nsys stats -r cuda_api_sum /tmp/trace.nsys-rep
# Needs FLASHC_BUNDLE_PATH with the bench-ffn and bench-attention bundles.
import torch

import flashc.torch as ft

torch.manual_seed(0)
x = torch.randn(256, 256, device="cuda", dtype=torch.bfloat16, requires_grad=True)
w1 = (torch.randn(256, 1024, device="cuda", dtype=torch.bfloat16) / 16).requires_grad_()
w2 = (torch.randn(1024, 256, device="cuda", dtype=torch.bfloat16) / 32).requires_grad_()
dy = torch.randn(256, 256, device="cuda", dtype=torch.bfloat16)
q, k, v = (torch.randn(1, 16, 256, 128, device="cuda", dtype=torch.bfloat16, requires_grad=True) for _ in range(3))
do = torch.randn(1, 16, 256, 128, device="cuda", dtype=torch.bfloat16)
for _ in range(200):
    ft.ffn(x, w1, w2=w2, activation="gelu_tanh").backward(dy)
    ft.attention(q, k, v).backward(do)
torch.cuda.synchronize()
print("traced 200 FFN and 200 attention forward + backward calls")
