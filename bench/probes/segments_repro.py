# Session 43's open bug: an illegal instruction when test_document_masks's calls run before test_document_segments's
# fallback case, on the segment bundles (bench/results/2026-12-05-h200-session43.md). This replays both on one
# configuration (D = 128 GQA causal documents) so that compute-sanitizer can watch a short process:
#   FLASHC_BUNDLE_PATH=.carry/seg python3 bench/probes/segments_repro.py [masks-first|segments-only]
import os
import sys
import unittest

here = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.join(here, "..", "..", "python", "tests"), os.path.join(here, "..", "..", "python")]
import torch  # noqa: E402
import test_gpu_attention as t  # noqa: E402
from flashc import configs  # noqa: E402
from flashc.mask_mod import IndexProgram  # noqa: E402

config = configs.TEST_ATTENTION_MASK_TENSORS[1]  # bf16 4 / 2, D = 128, causal documents
program = IndexProgram.parse(config.mask_mod)
tc = unittest.TestCase()
g = torch.Generator(device="cuda").manual_seed(11)
if sys.argv[1:] != ["segments-only"]:
    for batch, seq_q, seq_k in t.SHAPES + [(1, 700, 700), (1, 300, 650), (2, 1000, 1000)]:
        n = max(seq_q, seq_k)
        lengths = torch.randint(1, 300, (n,), generator=g, device="cuda")
        ids = torch.searchsorted(torch.cumsum(lengths, 0), torch.arange(n, device="cuda"), right=True)
        t.check_against_reference(tc, config, batch, seq_q, seq_k, mask_mod=program.with_tensors(ids.to(torch.int32)))
        torch.cuda.synchronize()
        print("masks", batch, seq_q, seq_k, "ok", flush=True)
starts = torch.cumsum(torch.tensor([137, 600, 263], device="cuda"), 0)
ids = torch.searchsorted(starts, torch.arange(1000, device="cuda"), right=True).to(torch.int32)
for batch, flip in ((2, False), (1, True)):
    use = torch.flip(ids, (0,)) if flip else ids
    t.check_against_reference(tc, config, batch, 1000, 1000, mask_mod=program.with_tensors(use))
    torch.cuda.synchronize()
    print("segments", batch, "flipped" if flip else "sorted", "ok", flush=True)
