# Runs cuDNN's fused attention (PyTorch SDPA, cuDNN backend) forward + backward a few times at the benchmark's shapes,
# so that Nsight Compute can profile its kernels beside flashc's (profile_attention.py):
#   ncu --clock-control none --kernel-name regex:cudnn --launch-skip 4 --launch-count 2 \
#       --section SpeedOfLight --section WarpStateStats python3 bench/probes/profile_cudnn_attention.py D [Dv] S causal
import sys

import torch
from torch.nn.attention import SDPBackend, sdpa_kernel

d = int(sys.argv[1])
dv = int(sys.argv[2]) if len(sys.argv) > 4 else d
s, causal = int(sys.argv[-2]), sys.argv[-1] in ("1", "yes", "causal")
heads, batch = 2048 // dv, 16384 // s  # (profile_attention.py's shapes)
torch.manual_seed(0)
q, k = (torch.randn(batch, heads, s, d, device="cuda", dtype=torch.bfloat16, requires_grad=True) for _ in range(2))
v = torch.randn(batch, heads, s, dv, device="cuda", dtype=torch.bfloat16, requires_grad=True)
do = torch.randn(batch, heads, s, dv, device="cuda", dtype=torch.bfloat16)
with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
    for _ in range(4):
        torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal).backward(do)
torch.cuda.synchronize()
print("profiled cuDNN D=%d Dv=%d S=%d causal=%s" % (d, dv, s, causal))
