"""flashc.modifier_inputs (the tensors the benchmark's modifiers read, for bench_programmable and the tuner) and the
float64 reference's view of a slice's batch and head (what the tuner's check of a modifier configuration needs), on
the CPU."""

import unittest

from _support import HAVE_TORCH, requires_torch

from flashc import InvalidArgumentError, configs, modifier_inputs
from flashc.spec import AttentionConfig

if HAVE_TORCH:
    import torch
    from flashc.testing import attention_reference
    from flashc.tune import device


class DocumentLengthsTest(unittest.TestCase):
    def test_the_benchmark_documents_are_the_ones_every_session_measured(self):
        # bench_programmable's 13 documents at 16k tokens (sessions 30-35's document row): drawn by the same seed.
        self.assertEqual(modifier_inputs.document_lengths(16384),
                         [1985, 1044, 1808, 1117, 338, 786, 1303, 1251, 1085, 1861, 1955, 877, 974])

    def test_documents_fill_any_length_within_their_bounds(self):
        for seq in (1, 100, 255, 256, 1000, 4096, 5000, 16384, 40000):
            lengths = modifier_inputs.document_lengths(seq)
            self.assertEqual(sum(lengths), seq, seq)
            self.assertTrue(all(min(256, seq) <= n <= 2048 or len(lengths) == 1 for n in lengths), (seq, lengths))
        with self.assertRaises(InvalidArgumentError):
            modifier_inputs.document_lengths(0)


@requires_torch
class ModifierTensorsTest(unittest.TestCase):
    def test_document_ids_follow_the_lengths(self):
        ids, lengths = modifier_inputs.document_ids(1000, device="cpu")
        self.assertEqual(ids.dtype, torch.int32)
        self.assertEqual(ids.tolist(), [d for d, n in enumerate(lengths) for _ in range(n)])

    def test_each_modifier_gets_its_tensors_in_the_programs_order(self):
        doc = AttentionConfig("bf16", 4, 4, 128, causal=True, mask_mod=configs.DOCUMENT_MASK)
        (ids,) = modifier_inputs.tensors_for(doc, 2, 700, device="cpu")
        self.assertEqual(tuple(ids.shape), (700,))
        alibi = AttentionConfig("bf16", 4, 4, 128, causal=True, score_mod=configs.ALIBI_SCORE)
        (slopes,) = modifier_inputs.tensors_for(alibi, 2, 700, device="cpu")
        self.assertEqual(slopes.tolist(), [2.0 ** (-8.0 * (i + 1) / 4) for i in range(4)])
        both = AttentionConfig("bf16", 4, 2, 128, causal=True, mask_mod=configs.DOCUMENT_MASK,
                               score_mod=configs.ALIBI_SCORE)
        ids, slopes = modifier_inputs.tensors_for(both, 1, 300, device="cpu")
        self.assertEqual((ids.dtype, tuple(slopes.shape)), (torch.int32, (4,)))
        sparse = AttentionConfig("bf16", 3, 3, 128, mask_mod=configs.BENCH_BLOCK_SPARSE_MASK)
        (layout,) = modifier_inputs.tensors_for(sparse, 1, 1000, device="cpu")
        self.assertEqual(tuple(layout.shape), (3, 8, 8))
        self.assertTrue(bool(torch.diagonal(layout, dim1=1, dim2=2).all()))
        # Modifiers that read nothing need nothing; one that reads a tensor of unknown meaning is refused.
        window = AttentionConfig("bf16", 4, 4, 128, mask_mod=configs.bench_window_mod)
        self.assertEqual(modifier_inputs.tensors_for(window, 1, 100, device="cpu"), [])
        counts = AttentionConfig("bf16", 4, 2, 128, mask_mod=configs.KEY_COUNT_MASK)
        with self.assertRaisesRegex(InvalidArgumentError, "no inputs are known for the modifier"):
            modifier_inputs.tensors_for(counts, 1, 100, device="cpu")

    def test_a_slice_reference_sees_the_calls_batch_and_head(self):
        # The tuner checks (b, h) slices against float64: ALiBi reads slopes[h] and a layout reads layout[h], so a
        # slice's reference must see its own head, not 0.
        config = AttentionConfig("bf16", 4, 4, 64, causal=True, mask_mod=configs.BLOCK_SPARSE_MASK,
                                 score_mod=configs.ALIBI_SCORE)
        mods = modifier_inputs.tensors_for(config, 2, 200, device="cpu")
        args = device._reference_modifiers(config, mods)
        g = torch.Generator().manual_seed(3)
        q, k, v = (torch.randn(2, 4, 200, 64, generator=g, dtype=torch.float64) for _ in range(3))
        full, _ = attention_reference(q, k, v, causal=True, **args)
        for b, h in ((0, 0), (1, 3), (1, 2)):
            part, _ = attention_reference(q[b:b + 1, h:h + 1], k[b:b + 1, h:h + 1], v[b:b + 1, h:h + 1], causal=True,
                                          first_batch=b, first_head=h, **args)
            self.assertTrue(torch.equal(part, full[b:b + 1, h:h + 1]), (b, h))
        # (Without the offsets the last head's slice would read head 0's slopes and layout.)
        wrong, _ = attention_reference(q[1:2, 3:4], k[1:2, 3:4], v[1:2, 3:4], causal=True, **args)
        self.assertFalse(torch.equal(wrong, full[1:2, 3:4]))


if __name__ == "__main__":
    unittest.main()
