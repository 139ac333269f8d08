# A forward of bench_programmable's rows (B = 1, H = 16, D = 128, S = 16k, bf16) for Nsight Compute: the causal
# sliding window of 1024 keys as a mask modifier (ModMask: loop bounds and block classification by interval
# arithmetic, element mask by the modifier) and as the window attribute (Window<1024, 0>), so their kernels can be
# compared counter by counter; the document row (causal within 13 documents, ids read by index). Usage:
#   python3 bench/probes/mask_mod_profile.py window|window_attr|prefix_lm|document|alibi|block_sparse|causal|full [calls]
#       [--timeline | --backward]
# (--timeline: a forward + backward's kernels and their GPU times, torch.profiler; --backward: `calls` forward +
# backward calls and nothing else, for Nsight Compute, which cannot share CUPTI with torch.profiler).
# Needs FLASHC_BUNDLE_PATH with the bench-programmable bundles.
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import bench_common  # noqa: E402,F401  (puts python/ on the path)

import torch  # noqa: E402

import flashc.torch as ft  # noqa: E402
from flashc import configs  # noqa: E402

from flashc.modifier_inputs import alibi_slopes, block_sparse_layout, document_ids  # noqa: E402
from flashc.mask_mod import block_sparse  # noqa: E402

row = sys.argv[1]
calls = int(sys.argv[2]) if len(sys.argv) > 2 else 3
doc, _ = document_ids(16384)


def row_kwargs(row):
    """flashc.torch.attention's keyword arguments for one of bench_programmable's rows (the same modifiers)."""
    if row == "window":
        return dict(mask_mod=configs.bench_window_mod)
    if row == "window_attr":
        return dict(causal=True, window=(1024, 0))
    if row == "prefix_lm":
        return dict(mask_mod=configs.bench_prefix_lm_mod)
    if row == "document":
        return dict(causal=True, mask_mod=lambda b, h, q, k: doc[q] == doc[k])
    if row == "alibi":  # bench_programmable's slopes 2^(-8 (i + 1) / H)
        slopes = alibi_slopes(16)
        return dict(causal=True, score_mod=lambda s, b, h, q, k: s + slopes[h] * (k - q))
    if row == "block_sparse":
        return dict(mask_mod=block_sparse(block_sparse_layout(16, 16384), 128))
    if row == "full":  # no mask, no modifier: the dense non-causal kernels
        return dict()
    if row == "causal":  # no modifier: the dense causal kernels the modified rows are compared with
        return dict(causal=True)
    sys.exit("mask_mod_profile: unknown row %r (known: window, window_attr, prefix_lm, document, alibi, block_sparse, "
             "causal)" % row)


kwargs = row_kwargs(row)
g = torch.Generator(device="cuda").manual_seed(0)
q, k, v = (torch.randn(1, 16, 16384, 128, device="cuda", generator=g, dtype=torch.bfloat16) for _ in range(3))
if "--backward" in sys.argv:  # forward + backward calls alone (Nsight Compute picks the kernels)
    for t in (q, k, v):
        t.requires_grad_()
    do = torch.randn_like(q)
    for _ in range(calls):
        ft.attention(q, k, v, **kwargs).backward(do)
    torch.cuda.synchronize()
    sys.exit(0)
if "--timeline" in sys.argv:  # every kernel of a forward + backward, its GPU time (torch.profiler)
    for t in (q, k, v):
        t.requires_grad_()
    do = torch.randn_like(q)
    for _ in range(2):
        ft.attention(q, k, v, **kwargs).backward(do)
    torch.cuda.synchronize()
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        for _ in range(calls):
            ft.attention(q, k, v, **kwargs).backward(do)
        torch.cuda.synchronize()
    print(prof.key_averages().table(sort_by="cuda_time_total", row_limit=15))
    sys.exit(0)
with torch.no_grad():
    for _ in range(calls):
        ft.attention(q, k, v, **kwargs)
torch.cuda.synchronize()
