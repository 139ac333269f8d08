"""The tensors that the benchmark's modifiers read, drawn with fixed seeds so that every process sees the same data:
each token's document id, ALiBi's slopes, a block-sparse layout. bench/bench_programmable.py (issue #16's rows) and
`python -m flashc.tune time` (which tunes those rows' kernels) both take them from here.

tensors_for(config, batch, seq) gives a configuration's tensors by its modifiers' text (configs.DOCUMENT_MASK,
configs.ALIBI_SCORE, ...), in the order the programs read them (config.modifier_tensor_names()).
"""

import random

from . import configs
from .errors import InvalidArgumentError


def document_lengths(seq, documents=13, shortest=256, longest=2048, seed=0):
    """Lengths of documents that fill `seq` tokens: `documents` of them (fewer where `seq` holds fewer of the
    shortest, more where it needs more of the longest), each a random length in [shortest, longest] (longest at most
    `seq`), the last one whatever is left, redrawn until it too is in range (equal lengths if no draw of 10000 fits).
    At seq = 16384 with the defaults: the benchmark's 13 documents."""
    if seq < 1:
        raise InvalidArgumentError("document_lengths: seq must be positive, got %d" % seq)
    shortest = min(shortest, seq)
    longest = min(longest, seq)
    count = max(1, min(documents, seq // shortest), -(-seq // longest))
    rng = random.Random(seed)
    for _ in range(10000):
        lengths = [rng.randint(shortest, longest) for _ in range(count - 1)]
        last = seq - sum(lengths)
        if shortest <= last <= longest:
            return lengths + [last]
    # No draw fits: equal lengths (count lies between seq / longest and seq / shortest, so they are in range).
    return [seq // count + (1 if i < seq % count else 0) for i in range(count)]


def document_ids(seq, device="cuda", **kwargs):
    """(ids, lengths): each of `seq` tokens' document (int32 on `device`) for document_lengths(seq, **kwargs)."""
    import torch
    lengths = document_lengths(seq, **kwargs)
    ids = [d for d, n in enumerate(lengths) for _ in range(n)]
    return torch.tensor(ids, dtype=torch.int32, device=device), lengths


def alibi_slopes(heads, device="cuda"):
    """ALiBi's slope of each query head, 2^(-8 (i + 1) / H) (float32 on `device`)."""
    import torch
    return torch.tensor([2.0 ** (-8.0 * (i + 1) / heads) for i in range(heads)], device=device)


def block_sparse_layout(heads, seq, block=128, density=0.2, seed=0, device="cuda"):
    """[heads, ceil(seq / block), ceil(seq / block)] int32 on `device`: each block visible with probability `density`,
    and the diagonal (so no query row is empty), drawn with a fixed seed (a different pattern per head)."""
    import torch
    n = -(-seq // block)
    g = torch.Generator().manual_seed(seed)
    layout = (torch.rand(heads, n, n, generator=g) < density) | torch.eye(n, dtype=torch.bool)
    return layout.to(torch.int32).to(device)


def bias_table(heads, width=33, seed=0, device="cuda"):
    """[heads, width] float32 on `device`, uniform in [-0.5, 0.5), drawn with a fixed seed: a relative-position (or
    per-position) bias table."""
    import torch
    g = torch.Generator().manual_seed(seed)
    return (torch.rand(heads, width, generator=g) - 0.5).to(device)


def _known():
    """{modifier text: (what it reads, tensors(config, batch, seq, device))}."""
    documents = ("each token's document id", lambda c, b, s, d: [document_ids(s, device=d)[0]])
    return {
        configs.DOCUMENT_MASK: documents,
        configs.FLEX_DOCUMENT_MASK: documents,
        configs.BENCH_BLOCK_SPARSE_MASK: ("a layout of 128-token blocks",
                                          lambda c, b, s, d: [block_sparse_layout(c.num_heads, s, 128, device=d)]),
        configs.BLOCK_SPARSE_MASK: ("a layout of 64-token blocks",
                                    lambda c, b, s, d: [block_sparse_layout(c.num_heads, s, 64, device=d)]),
        configs.ALIBI_SCORE: ("ALiBi's slopes", lambda c, b, s, d: [alibi_slopes(c.num_heads, device=d)]),
        configs.RELATIVE_BIAS_SCORE: ("a relative-position bias table [Hq, 33]",
                                      lambda c, b, s, d: [bias_table(c.num_heads, device=d)]),
        configs.KEY_QUERY_BIAS_SCORE: ("a key and a query bias table [Hq, 33]",
                                       lambda c, b, s, d: [bias_table(c.num_heads, device=d),
                                                           bias_table(c.num_heads, seed=1, device=d)]),
    }


def tensors_for(config, batch, seq, device="cuda"):
    """The tensors config's mask and score modifiers read at [batch, heads, seq] (mask's first, as the programs take
    them); [] for modifiers that read none. A modifier that reads tensors and is not one of the benchmark's is refused:
    its tensors' meaning is the caller's."""
    known = _known()
    tensors = []
    for text, names in ((config.mask_mod, config.mask_tensor_names()), (config.score_mod, config.score_tensor_names())):
        if text is None or not names:
            continue
        if text not in known:
            raise InvalidArgumentError(
                "no inputs are known for the modifier %r (it reads %d tensor(s)); the benchmark's modifiers are: %s"
                % (text, len(names), "; ".join("%s (%s)" % (t, what) for t, (what, _) in known.items())))
        tensors += known[text][1](config, batch, seq, device)
    return tensors
