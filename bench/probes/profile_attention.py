# Runs one flashc attention forward + backward a few times, so that Nsight Compute can profile its kernels:
#   ncu --clock-control none --kernel-name regex:attention_bwd --launch-skip 2 --launch-count 1 \
#       --section SpeedOfLight --section WarpStateStats python3 bench/probes/profile_attention.py D [Dv] S causal
# Needs FLASHC_BUNDLE_PATH with the benchmark bundle of that config (bf16, H*Dv = 2048 heads, 16k tokens).
import sys

import torch

import flashc.torch as ft

d = int(sys.argv[1])
dv = int(sys.argv[2]) if len(sys.argv) > 4 else d
s, causal = int(sys.argv[-2]), sys.argv[-1] in ("1", "yes", "causal")
heads, batch = 2048 // dv, 16384 // s
torch.manual_seed(0)
q, k = (torch.randn(batch, heads, s, d, device="cuda", dtype=torch.bfloat16, requires_grad=True) for _ in range(2))
v = torch.randn(batch, heads, s, dv, device="cuda", dtype=torch.bfloat16, requires_grad=True)
do = torch.randn(batch, heads, s, dv, device="cuda", dtype=torch.bfloat16)
for _ in range(4):
    ft.attention(q, k, v, causal=causal).backward(do)
torch.cuda.synchronize()
print("profiled D=%d Dv=%d S=%d causal=%s" % (d, dv, s, causal))
