"""Context-parallel attention built from the existing flashc kernels.

    merge_partials(outs, lses)                           exact combine of partial results over disjoint key shards
    classify(q0, n, k0, m)                               FULL / DIAGONAL / SKIP / PARTIAL for causal chunk pairs
    sharded_attention(q, k, v, num_shards, causal, ..., window=None)  one-device simulation of the ring (same
                                                         schedule, merges)
    ring_attention(q_local, k_local, v_local, group, causal, ..., window=None)  torch.distributed ring (NCCL)
    ring_schedule(layout, rank)                          the ring's per-step plan, a pure function (tested on CPU)
    halo_plans(layout) / halo_plan(layout, rank)         the halo path of sliding windows (no ring), pure functions

Every block of work is one launch of the ordinary forward program (q, k, v -> o, lse) or backward program
(q, k, v, o, lse, do -> dq, dk, dv) of a flashc attention bundle, through flashc.torch's launch path (sliding
windows: of the config's key-offset twin, with the block's key offset).

Exactness. A query row's result over the whole key sequence follows from its results over disjoint key shards:
lse = logsumexp_i lse_i and o = sum_i exp(lse_i - lse) o_i (merge_partials). The backward program only needs the
row's *global* o and lse: it recomputes P = exp(S - lse) and D = rowsum(dO * O), so per-block launches given the
global o and lse produce exact partial gradients; dq sums over key blocks, dk/dv over query blocks. Partial outputs
are rounded to the input dtype by the kernel before the merge (the merge itself runs in float32), and block
gradients are accumulated in float32; these are the only roundings beyond a single-kernel call.

Causal masks. flashc's causal mask is bottom-right aligned: query row i of Sq sits at key position
i + (Sk - Sq), and query position p sees key j <= p (self-attention: Sq == Sk, position = row). A query chunk at
positions [q0, q0+n) against a key chunk [k0, k0+m) is
  FULL      every key visible            (k0 + m - 1 <= q0)           -> non-causal kernel
  DIAGONAL  the same chunk               (q0 == k0 and n == m)        -> causal kernel, exact since Sq == Sk locally
  SKIP      no key visible               (k0 > q0 + n - 1, or empty)  -> no launch
  PARTIAL   anything else (the chunks cut the diagonal at different places): split by rows, with no kernel change.
            Rows p >= k0 + m - 1 see the whole key chunk (non-causal kernel). Rows p in [max(q0, k0), k0 + m - 1)
            see keys k0..p: a causal launch over those rows against the keys [k0, last row + 1), whose own
            bottom-right alignment (Sk - Sq = first row - k0) is exactly the global staircase. Rows p < k0 see none.

Sliding windows (left L, right R, -1 = unbounded; causal: R = 0). Query position p sees keys
[p - L, p + R] (within the sequence). A window pair of query chunk [q0, q0+n) (positions P0 = q0 + q_offset ..
P1 = P0 + n - 1) and key chunk [k0, k0+m) sees keys at all iff k0 <= P1 + R and k0 + m - 1 >= P0 - L (the union of
the rows' windows is [P0 - L, P1 + R]); pairs that see none are skipped. A visible pair is one launch of the
key-offset twin of the config (AttentionConfig.key_offset: query row i of the launch at key position
i + key_offset instead of i + Sk - Sq), trimmed to the rows that see a key of the chunk (p in
[max(P0, k0 - R), min(P1, k0 + m - 1 + L)]) and the keys some of those rows see: with the launch's first row at
position P and first key at K, key_offset = P - K puts every row's window exactly where it is globally (the
mask only depends on p - j). Every row of such a launch sees at least one key, and a launch never crosses a pair,
so each visible (query, key) is computed once.

Halo path (sliding windows). When every rank holds one contiguous chunk and the keys its rows see reach at most
into its neighbours' chunks (window sides bounded, L <= the previous rank's chunk and R <= the next one's, for
Sq == Sk), no ring runs: rank r receives the last `prev` K/V rows of rank r-1 and the first `next` rows of rank
r+1 (only those rows; batched isend/irecv; the first and last rank receive nothing on their missing side),
concatenates [prev halo, local, next halo] along the sequence and runs ONE launch of the key-offset config over its
local query rows: key_offset = (key position of local query row 0, q0 + Sk - Sq) - (position of the first extended
key) puts every row's window exactly where it is globally, so nothing merges. The backward is one backward launch
over the same extended K/V (saved by the forward in place of K/V); the halo rows' dK/dV go back to their owners in
the input dtype (the kernel's output, already rounded to it) and are added there in float32, rounded once. Every
(query, key) pair is computed by the rank owning the query, once. halo_plans(layout) is None when this does not
apply (no window, an unbounded side over 2+ ranks, a halo larger than the neighbour's chunk): the ring below runs.
One rank: one launch with key_offset = Sk - Sq (the plain kernel's mask).

Layouts. Non-causal, and any window (causal or not): rank r holds one contiguous chunk (lengths may differ: ragged).
Causal without a window: the load-balanced zig-zag layout: the sequence is cut into 2N equal chunks and rank r holds
chunks r and 2N-1-r (concatenated in that order); every ring step then costs each rank the same work, and each step
is a single launch (step 0: the causal kernel on the local buffers; kv owner o < r: all local queries against o's
first chunk; o > r: the second query chunk against all of o's keys). A window's ring fallback runs its contiguous
chunks through the same ring (up to one key-offset launch per pair of chunks). `zigzag_shard` / `zigzag_unshard`
convert a full sequence to and from the zig-zag layout.

NVLink multicast (NVLS) stays off: ring_attention only uses point-to-point sends, NVLS buffers cost GPU memory and
its setup has been unreliable on the lent machines, so `os.environ.setdefault("NCCL_NVLS_ENABLE", "0")` runs when
this module is imported, i.e. before the caller's dist.init_process_group (an explicit setting by the user wins).
Import flashc.ring before initialising NCCL.
"""

import math
import os
from collections import namedtuple

os.environ.setdefault("NCCL_NVLS_ENABLE", "0")

from .errors import InvalidArgumentError  # noqa: E402

FULL, DIAGONAL, SKIP, PARTIAL = "full", "diagonal", "skip", "partial"

__all__ = ["FULL", "DIAGONAL", "SKIP", "PARTIAL", "classify", "chunk_bounds", "Layout", "sharded_layout",
           "ring_layout", "window_rows_and_keys", "plan_blocks", "Block", "RingStep", "ring_schedule",
           "HaloPlan", "halo_plan", "halo_plans",
           "merge_partials", "sharded_attention",
           "ring_attention", "zigzag_shard", "zigzag_unshard"]


# ------------------------------------------------------------ pure planning (no torch)
def classify(q0, n, k0, m):
    """Kind of the causal (query p sees key j <= p, global positions) pair: query rows [q0, q0+n) against keys
    [k0, k0+m). An empty chunk is SKIP."""
    if n <= 0 or m <= 0 or k0 > q0 + n - 1:
        return SKIP
    if k0 + m - 1 <= q0:
        return FULL
    if q0 == k0 and n == m:
        return DIAGONAL
    return PARTIAL


def chunk_bounds(length, count):
    """`count` chunks of a sequence of `length`: ceil(length / count) each, the last ones shorter (possibly empty).
    Returns [(start, length)]."""
    if count < 1:
        raise InvalidArgumentError("number of chunks must be >= 1, got %r" % count)
    size = -(-length // count) if length else 0
    return [(min(c * size, length), max(0, min((c + 1) * size, length) - min(c * size, length))) for c in range(count)]


# q_chunks[r] / k_chunks[r]: the global (start, length) chunks rank r holds, in the order of its local buffer (query
# and key row indices); q_offset: the key position of query row 0 (Sk - Sq: flashc's bottom-right causal alignment);
# window: None or the config's (left, right) sliding window (AttentionConfig.window, normalised).
Layout = namedtuple("Layout", "causal q_chunks k_chunks q_offset window", defaults=(0, None))


def sharded_layout(seq_q, seq_k, num_shards, causal, window=None):
    """How sharded_attention splits a sequence over `num_shards` ranks (see the module doc). window: the
    normalised (left, right) of AttentionConfig.window, or None."""
    if isinstance(num_shards, bool) or not isinstance(num_shards, int) or num_shards < 1:
        raise InvalidArgumentError("num_shards must be an integer >= 1, got %r" % (num_shards,))
    if window is not None:  # contiguous chunks, causal or not (the halo path needs one chunk per rank)
        base = sharded_layout(seq_q, seq_k, num_shards, False)
        return base._replace(causal=causal, q_offset=seq_k - seq_q, window=tuple(window))
    if causal and seq_q != seq_k:
        # Query row i at key position i + Sk - Sq: contiguous chunks of each cut the diagonal at different places
        # (PARTIAL pairs, split by plan_blocks).
        return Layout(True, [[c] for c in chunk_bounds(seq_q, num_shards)], [[c] for c in chunk_bounds(seq_k, num_shards)],
                      seq_k - seq_q)
    if causal:
        chunks = chunk_bounds(seq_q, 2 * num_shards)
        owned = [[chunks[r], chunks[2 * num_shards - 1 - r]] for r in range(num_shards)]
        return Layout(True, owned, owned)
    return Layout(False, [[c] for c in chunk_bounds(seq_q, num_shards)], [[c] for c in chunk_bounds(seq_k, num_shards)])


def ring_layout(world_size, causal, local_q_lengths, local_k_lengths, window=None):
    """The layout ring_attention runs: rank r's local sequence lengths as given (non-causal, and any window: contiguous
    chunks in rank order, any lengths; causal without a window: zig-zag, every rank the same even length). window:
    the normalised (left, right) of AttentionConfig.window, or None."""
    if window is not None:  # contiguous chunks, causal or not (the halo path needs one chunk per rank)
        base = ring_layout(world_size, False, local_q_lengths, local_k_lengths)
        return base._replace(causal=causal, q_offset=sum(local_k_lengths) - sum(local_q_lengths), window=tuple(window))
    if causal:
        lengths = set(local_q_lengths) | set(local_k_lengths)
        if len(lengths) != 1 or next(iter(lengths)) % 2:
            raise InvalidArgumentError("causal ring attention without a window uses the zig-zag layout: every rank "
                                       "must hold the same even number of query and key rows (chunks r and 2N-1-r of "
                                       "2N equal chunks), got query lengths %s and key lengths %s"
                                       % (list(local_q_lengths), list(local_k_lengths)))
        half = next(iter(lengths)) // 2
        owned = [[(r * half, half), ((2 * world_size - 1 - r) * half, half)] for r in range(world_size)]
        return Layout(True, owned, owned)

    def contiguous(lengths):
        starts = [sum(lengths[:r]) for r in range(world_size)]
        return [[(s, n)] for s, n in zip(starts, lengths)]

    return Layout(False, contiguous(list(local_q_lengths)), contiguous(list(local_k_lengths)))


# One launch: local query rows [q_lo, q_hi) against local key rows [k_lo, k_hi) of the kv buffer held at that step;
# causal: use the causal kernel (exact only because the plan checked it). key_offset: None (the static kernels), or
# the launch's run-time key offset (the key-offset twin of the config, whose mask - causal or window - it takes).
Block = namedtuple("Block", "q_lo q_hi k_lo k_hi causal key_offset", defaults=(None,))


def _offsets(chunks):
    out, at = [], 0
    for _, n in chunks:
        out.append(at)
        at += n
    return out


def window_rows_and_keys(p0, n, k0, m, window):
    """Under `window` (left, right; -1 unbounded), the query positions [p0, p0+n) that see some key of [k0, k0+m)
    and the keys some of those see, as ((first row, last row), (first key, last key)) in global positions, or None
    when no key is visible (exact integer arithmetic)."""
    left, right = window
    if n <= 0 or m <= 0:
        return None
    rows_lo, rows_hi = p0, p0 + n - 1
    if right >= 0:
        rows_lo = max(rows_lo, k0 - right)  # p + right >= k0
    if left >= 0:
        rows_hi = min(rows_hi, k0 + m - 1 + left)  # p - left <= k0 + m - 1
    if rows_lo > rows_hi:
        return None
    keys_lo = k0 if left < 0 else max(k0, rows_lo - left)
    keys_hi = k0 + m - 1 if right < 0 else min(k0 + m - 1, rows_hi + right)
    return (rows_lo, rows_hi), (keys_lo, keys_hi)


def _window_blocks(q_chunks, k_chunks, q_offset, window):
    """One key-offset block per (query chunk, key chunk) pair that sees a key under the window (module doc)."""
    qo, ko = _offsets(q_chunks), _offsets(k_chunks)
    blocks = []
    for (q0, n), qa in zip(q_chunks, qo):
        p0 = q0 + q_offset
        for (k0, m), kb in zip(k_chunks, ko):
            seen = window_rows_and_keys(p0, n, k0, m, window)
            if seen is None:
                continue
            (r_lo, r_hi), (j_lo, j_hi) = seen
            blocks.append(Block(qa + r_lo - p0, qa + r_hi - p0 + 1, kb + j_lo - k0, kb + j_hi - k0 + 1, False,
                                r_lo - j_lo))
    return blocks


def plan_blocks(q_chunks, k_chunks, causal, q_offset=0, window=None):
    """The launches that cover every visible (query chunk, key chunk) pair once: [Block] in local coordinates.

    q_offset: the key position of query row 0 (Sk - Sq). window: None or (left, right) (-1 unbounded; causal: the
    right side is 0): one key-offset block per pair that sees a key (module doc). Otherwise: non-causal, one block
    over everything. Causal: pairs are
    classified; when the query and key chunks are the same list and ordered so that the whole local problem is
    causal (earlier chunks FULL, same chunk DIAGONAL, later chunks SKIP), one causal block; otherwise DIAGONAL pairs
    get causal blocks, PARTIAL pairs are split by rows (module doc), and FULL pairs are coalesced into blocks over
    contiguous runs of local key chunks, and runs of query chunks with the same key runs."""
    nq, nk = sum(n for _, n in q_chunks), sum(n for _, n in k_chunks)
    if nq == 0 or nk == 0:
        return []
    if window is not None:
        left, right = window
        return _window_blocks(q_chunks, k_chunks, q_offset, (left, 0 if causal else right))
    if not causal:
        return [Block(0, nq, 0, nk, False)]
    qo, ko = _offsets(q_chunks), _offsets(k_chunks)
    kinds = [[classify(q0 + q_offset, n, k0, m) for (k0, m) in k_chunks] for (q0, n) in q_chunks]
    blocks = []
    for a, row in enumerate(kinds):
        p0, n = q_chunks[a][0] + q_offset, q_chunks[a][1]  # key position of the chunk's first row
        for b, kind in enumerate(row):
            if kind != PARTIAL:
                continue
            k0, m = k_chunks[b]
            full_lo = max(p0, k0 + m - 1)  # rows that see every key of the chunk
            if full_lo < p0 + n:
                blocks.append(Block(qo[a] + full_lo - p0, qo[a] + n, ko[b], ko[b] + m, False))
            lo, hi = max(p0, k0), min(p0 + n, k0 + m - 1)  # rows that see keys k0..p
            if hi > lo:
                blocks.append(Block(qo[a] + lo - p0, qo[a] + hi - p0, ko[b], ko[b] + hi - k0, True))
    if list(q_chunks) == list(k_chunks) and q_offset == 0:
        want = lambda a, b: SKIP if q_chunks[a][1] == 0 else (FULL if b < a else DIAGONAL if a == b else SKIP)
        if all(kinds[a][b] == want(a, b) or k_chunks[b][1] == 0 for a in range(len(q_chunks))
               for b in range(len(k_chunks))):
            return [Block(0, nq, 0, nk, True)]
    runs_of = []
    for a, row in enumerate(kinds):
        runs, start = [], None
        for b, kind in enumerate(row + [SKIP]):
            empty = b < len(row) and k_chunks[b][1] == 0  # an empty key chunk neither starts nor breaks a run
            if kind == FULL or (empty and start is not None):
                start = b if start is None else start
                continue
            if start is not None:
                runs.append((ko[start], ko[b - 1] + k_chunks[b - 1][1]))
                start = None
        runs_of.append(tuple(runs))
        for b, kind in enumerate(row):
            if kind == DIAGONAL:
                blocks.append(Block(qo[a], qo[a] + q_chunks[a][1], ko[b], ko[b] + k_chunks[b][1], True))
    a = 0
    while a < len(q_chunks):  # merge consecutive query chunks with the same key runs
        e = a + 1
        while e < len(q_chunks) and runs_of[e] == runs_of[a]:
            e += 1
        for lo, hi in runs_of[a]:
            if hi > lo:
                blocks.append(Block(qo[a], qo[e - 1] + q_chunks[e - 1][1], lo, hi, False))
        a = e
    return [b for b in blocks if b.q_hi > b.q_lo]


# Step `step` of rank `rank`: it holds the K/V (and, backward, the dK/dV accumulators) of `kv_owner`, computes
# `blocks` against them, and passes them on to `send_to`, receiving the next owner's from `recv_from`. In the forward
# the last step sends nothing (send_to/recv_from None at step N-1); in the backward the accumulators travel one hop
# more (back to their owner), given by `grad_send_to` / `grad_recv_from` at every step.
RingStep = namedtuple("RingStep", "step kv_owner blocks send_to recv_from next_kv_owner grad_send_to grad_recv_from")


def ring_schedule(layout, rank):
    """The per-step plan of `rank` on the ring of len(layout.q_chunks) ranks: [RingStep]."""
    world = len(layout.q_chunks)
    if not 0 <= rank < world:
        raise InvalidArgumentError("rank %r is not in a ring of %d" % (rank, world))
    nxt, prev = (rank + 1) % world, (rank - 1) % world
    steps = []
    for t in range(world):
        owner = (rank - t) % world
        last = t == world - 1
        steps.append(RingStep(t, owner, tuple(plan_blocks(layout.q_chunks[rank], layout.k_chunks[owner],
                                                          layout.causal, layout.q_offset, layout.window)),
                              None if last else nxt, None if last else prev,
                              None if last else (rank - t - 1) % world, nxt if world > 1 else None,
                              prev if world > 1 else None))
    return steps


# The halo path of rank `rank` (module doc): it receives the last `prev` key/value rows of rank-1 and the first `next`
# rows of rank+1, sends its first `send_prev` rows to rank-1 and its last `send_next` rows to rank+1 (the backward
# returns the gradients of those rows the same way back), and runs one launch of the key-offset config over its
# local query rows against [prev halo, local keys, next halo] with `key_offset` (the key position of local query
# row 0 in that extended buffer).
HaloPlan = namedtuple("HaloPlan", "rank prev next send_prev send_next key_offset")


def _halo_needs(layout):
    """[(prev, next)] per rank: the key rows each rank needs from its neighbours, or None when the halo path does not
    apply (no window, not one contiguous chunk per rank, an unbounded side over more than one rank, or rows needed
    from beyond a neighbour's chunk)."""
    if layout.window is None:
        return None
    world = len(layout.q_chunks)
    if any(len(c) != 1 for c in layout.q_chunks) or any(len(c) != 1 for c in layout.k_chunks):
        return None
    k_starts = [c[0][0] for c in layout.k_chunks]
    k_lens = [c[0][1] for c in layout.k_chunks]
    if any(k_starts[r] != sum(k_lens[:r]) for r in range(world)):
        return None
    left, right = layout.window
    right = 0 if layout.causal else right
    if world > 1 and (left < 0 or right < 0):
        return None  # unbounded: a rank would need keys beyond its neighbours (the ring handles it)
    sk = sum(k_lens)
    needs = []
    for r, ((q0, n),) in enumerate(layout.q_chunks):
        p0 = q0 + layout.q_offset
        lo = 0 if left < 0 else max(0, p0 - left)  # first and last key any local row sees (within the sequence)
        hi = sk - 1 if right < 0 else min(sk - 1, p0 + n - 1 + right)
        if n == 0 or lo > hi:
            needs.append((0, 0))
            continue
        prev = max(0, k_starts[r] - lo)
        nxt = max(0, hi + 1 - (k_starts[r] + k_lens[r]))
        if (prev and (r == 0 or prev > k_lens[r - 1])) or (nxt and (r == world - 1 or nxt > k_lens[r + 1])):
            return None
        needs.append((prev, nxt))
    return needs


def halo_plan(layout, rank):
    """The halo plan (HaloPlan) of `rank`, or None when the layout takes the ring (see halo_plans)."""
    plans = halo_plans(layout)
    if plans is not None and not 0 <= rank < len(plans):
        raise InvalidArgumentError("rank %r is not in a ring of %d" % (rank, len(plans)))
    return None if plans is None else plans[rank]


def halo_plans(layout):
    """Every rank's HaloPlan when the whole layout can take the halo path (a window; one contiguous chunk per rank;
    every rank's window within its neighbours' chunks), else None: then ring_schedule's ring runs. A pure function:
    every rank decides alike."""
    needs = _halo_needs(layout)
    if needs is None:
        return None
    world = len(needs)
    plans = []
    for r, (prev, nxt) in enumerate(needs):
        (q0, _), = layout.q_chunks[r]
        (k0, _), = layout.k_chunks[r]
        plans.append(HaloPlan(r, prev, nxt, needs[r - 1][1] if r > 0 else 0, needs[r + 1][0] if r < world - 1 else 0,
                              q0 + layout.q_offset - (k0 - prev)))
    return plans


# ------------------------------------------------------------ torch parts
def _torch():
    import torch
    return torch


def merge_partials(outs, lses):
    """Exact softmax combine of attention results over disjoint key shards.

    outs: [..., S, Dv] tensors (any float dtype), lses: [..., S] natural-log log-sum-exps (-inf: the row saw no key
    of that shard). Returns (out in outs[0].dtype, lse float32): lse = logsumexp_i lse_i, out = sum_i
    exp(lse_i - lse) out_i computed in float32. Rows with every lse_i = -inf give lse = -inf and out = 0, never NaN."""
    torch = _torch()
    if len(outs) != len(lses) or not outs:
        raise InvalidArgumentError("merge_partials: expected as many outputs as log-sum-exps (at least one), got %d "
                                   "and %d" % (len(outs), len(lses)))
    stacked = torch.stack([l.float() for l in lses])
    lse = torch.logsumexp(stacked, dim=0)
    safe = torch.where(torch.isinf(lse) & (lse < 0), torch.zeros_like(lse), lse)
    out = None
    for o, l in zip(outs, stacked):
        w = torch.exp(l - safe)  # exp(-inf) = 0: shards (or rows) that saw no key contribute nothing
        term = o.float() * w.unsqueeze(-1)
        out = term if out is None else out + term
    return out.to(outs[0].dtype), lse


def _merge_into(acc_o, acc_lse, o, lse, fresh=False):
    """In-place online merge of (o, lse) into the accumulators (float32, or float64 for float64 inputs; views allowed).
    fresh: the accumulator rows hold nothing yet (lse = -inf), so the merge is a copy. The merge reads and writes the
    float32 accumulator twice (scale, then fused multiply-add): it is memory-bound, and at 32k rows a pass costs as
    much as a few percent of a ring step's attention."""
    torch = _torch()
    if fresh:
        acc_o.copy_(o)
        acc_lse.copy_(lse)
        return
    lse = lse.to(acc_lse.dtype)
    new = torch.logaddexp(acc_lse, lse)
    safe = torch.where(torch.isinf(new) & (new < 0), torch.zeros_like(new), new)
    acc_o.mul_(torch.exp(acc_lse - safe).unsqueeze(-1)).addcmul_(o, torch.exp(lse - safe).unsqueeze(-1))
    acc_lse.copy_(new)


def _ft():
    from . import torch as ft
    return ft


def _seq(t, lo, hi):
    return t[:, :, lo:hi]


def _launch_forward(config, q, k, v, key_offset=None):
    """(o, lse) of one block through flashc.torch's forward program path (key_offset: that of a key-offset config)."""
    torch, ft = _torch(), _ft()
    q, k, v = ft._kernel_layout(q), ft._kernel_layout(k), ft._kernel_layout(v)
    o = ft._output((q.shape[0], q.shape[1], q.shape[2], v.shape[3]), q.dtype, q.device)
    lse = ft._output(q.shape[:3], torch.float32, q.device)
    if o.numel() > 0:
        ft._run(config, "forward", q.device, ft._with_offset(dict(q=q, k=k, v=v, o=o, lse=lse), key_offset))
    return o, lse


def _launch_backward(config, q, k, v, o, lse, do, key_offset=None):
    ft = _ft()
    q, k, v = ft._kernel_layout(q), ft._kernel_layout(k), ft._kernel_layout(v)
    dq = ft._output(q.shape, q.dtype, q.device)
    dk = ft._output(k.shape, k.dtype, k.device)
    dv = ft._output(v.shape, v.dtype, v.device)
    if q.numel() > 0 and k.shape[2] > 0:
        ft._run(config, "backward", q.device, ft._with_offset(
            dict(q=q, k=k, v=v, o=ft._kernel_layout(o), lse=ft._kernel_layout(lse), do=ft._kernel_layout(do), dq=dq,
                 dk=dk, dv=dv), key_offset))
    else:
        for g in (dq, dk, dv):
            g.zero_()
    return dq, dk, dv


def _configs(config):
    """(non-causal config, causal config, key-offset config) for the blocks of a sharded call (_block_config). Only
    the bundles of the blocks' configs are loaded: a window's blocks all use its key-offset twin, a causal call's
    its causal config and non-causal twin."""
    import dataclasses
    config = dataclasses.replace(config, key_offset=False)
    if config.window is not None:  # the static twins of a window are never launched (nor always valid configs)
        return None, None, dataclasses.replace(config, key_offset=True)
    return dataclasses.replace(config, causal=False), dataclasses.replace(config, causal=True), None


def _block_config(configs, block):
    return configs[2] if block.key_offset is not None else configs[block.causal]


def _forward_blocks(configs, q, k, v, blocks, acc_o, acc_lse, fresh=False):
    """Launch each block and merge it into the accumulators. fresh: nothing was merged into them yet (the first ring
    step), so a block whose query rows no earlier block of this call wrote is copied, not merged."""
    written = []
    for b in blocks:
        o, lse = _launch_forward(_block_config(configs, b), _seq(q, b.q_lo, b.q_hi), _seq(k, b.k_lo, b.k_hi),
                                 _seq(v, b.k_lo, b.k_hi), b.key_offset)
        first = fresh and all(b.q_hi <= lo or hi <= b.q_lo for lo, hi in written)
        _merge_into(_seq(acc_o, b.q_lo, b.q_hi), acc_lse[:, :, b.q_lo:b.q_hi], o, lse, fresh=first)
        written.append((b.q_lo, b.q_hi))


def _backward_blocks(configs, q, k, v, o, lse, do, blocks, dq_acc, dk_acc, dv_acc):
    for b in blocks:
        qs = slice(b.q_lo, b.q_hi)
        dq, dk, dv = _launch_backward(_block_config(configs, b), q[:, :, qs], _seq(k, b.k_lo, b.k_hi),
                                      _seq(v, b.k_lo, b.k_hi), o[:, :, qs], lse[:, :, qs], do[:, :, qs], b.key_offset)
        dq_acc[:, :, qs] += dq.to(dq_acc.dtype)
        _seq(dk_acc, b.k_lo, b.k_hi).add_(dk.to(dk_acc.dtype))
        _seq(dv_acc, b.k_lo, b.k_hi).add_(dv.to(dv_acc.dtype))


def _acc_dtype(t):
    """float32 for bf16/f16 tensors (float64 ones, as in the CPU tests, keep float64)."""
    torch = _torch()
    return torch.promote_types(t.dtype, torch.float32)


def _accumulators(torch, q, v):
    acc_o = torch.zeros(q.shape[:3] + (v.shape[3],), dtype=_acc_dtype(q), device=q.device)
    acc_lse = torch.full(q.shape[:3], -math.inf, dtype=_acc_dtype(q), device=q.device)
    return acc_o, acc_lse


def _gather(t, chunks):
    torch = _torch()
    return torch.cat([t[:, :, s:s + n] for s, n in chunks], dim=2)


def _scatter(dst, local, chunks):
    at = 0
    for s, n in chunks:
        dst[:, :, s:s + n] = local[:, :, at:at + n]
        at += n


def _cat_seq(prev, local, nxt):
    """[prev, local, next] along the sequence (no copy when both halos are empty)."""
    parts = [t for t in (prev, local, nxt) if t is local or t.shape[2] > 0]
    return local if len(parts) == 1 else _torch().cat(parts, dim=2)


def _halo_forward(configs, plan, q, k_ext, v_ext):
    """(o, lse) of the local queries: one key-offset launch against the extended keys (no merge)."""
    torch = _torch()
    if k_ext.shape[2] == 0:  # no key at all (an empty chunk without halos): every row sees none
        o = torch.zeros(q.shape[:3] + (v_ext.shape[3],), dtype=q.dtype, device=q.device)
        return o, torch.full(q.shape[:3], -math.inf, dtype=torch.float32, device=q.device)
    return _launch_forward(configs[2], q, k_ext, v_ext, plan.key_offset)


def _split_ext(d_ext, plan, m):
    """The gradient of the extended keys as (rows of rank-1, this rank's m rows, rows of rank+1) views."""
    return _seq(d_ext, 0, plan.prev), _seq(d_ext, plan.prev, plan.prev + m), _seq(d_ext, plan.prev + m,
                                                                                    d_ext.shape[2])


def _add_halo_grads(local, from_prev, from_next):
    """Add into `local` (this rank's key rows' gradient, in place) the gradients of its first rows that rank-1
    computed (from_prev) and of its last rows that rank+1 computed (from_next); None or empty: nothing. The sum runs
    in float32 (float64 stays float64) and is rounded once per row, as the ring's float32 accumulators are."""
    m = local.shape[2]
    a = 0 if from_prev is None else from_prev.shape[2]
    b = 0 if from_next is None else from_next.shape[2]
    acc = _acc_dtype(local)
    if a and b and m - b < a:  # both neighbours used some of the same rows (a window as long as the chunk)
        total = local.to(acc)
        total[:, :, :a] += from_prev.to(acc)
        total[:, :, m - b:] += from_next.to(acc)
        local.copy_(total)
        return
    if a:
        seg = _seq(local, 0, a)
        seg.copy_(seg.to(acc) + from_prev.to(acc))
    if b:
        seg = _seq(local, m - b, m)
        seg.copy_(seg.to(acc) + from_next.to(acc))


def _make_sharded_halo():
    torch = _torch()

    class _ShardedHalo(torch.autograd.Function):
        """One-device simulation of the halo path: every rank's local buffers, halo rows 'received' by slicing the
        neighbours' local buffers, halo gradients 'returned' by adding them into the neighbours'."""

        @staticmethod
        def forward(ctx, q, k, v, config, layout, plans):
            configs = _configs(config)
            ks = [_gather(k, c) for c in layout.k_chunks]
            vs = [_gather(v, c) for c in layout.k_chunks]
            o = torch.empty(q.shape[:3] + (v.shape[3],), dtype=q.dtype, device=q.device)
            lse = torch.empty(q.shape[:3], dtype=torch.float32, device=q.device)
            for r, plan in enumerate(plans):
                k_ext, v_ext = _sim_extended(ks, plan), _sim_extended(vs, plan)
                ol, lsel = _halo_forward(configs, plan, _gather(q, layout.q_chunks[r]), k_ext, v_ext)
                _scatter(o, ol, layout.q_chunks[r])
                _scatter(lse, lsel.float(), layout.q_chunks[r])
            ctx.config, ctx.layout, ctx.plans = config, layout, plans
            ctx.save_for_backward(q, k, v, o, lse)
            ctx.mark_non_differentiable(lse)
            return o, lse

        @staticmethod
        @torch.autograd.function.once_differentiable
        def backward(ctx, do, _dlse):
            q, k, v, o, lse = ctx.saved_tensors
            layout, plans, configs = ctx.layout, ctx.plans, _configs(ctx.config)
            ks = [_gather(k, c) for c in layout.k_chunks]
            vs = [_gather(v, c) for c in layout.k_chunks]
            dq = torch.zeros(q.shape, dtype=q.dtype, device=q.device)
            ext = []
            for r, plan in enumerate(plans):
                c = layout.q_chunks[r]
                dq_r, dk_e, dv_e = _launch_backward(configs[2], _gather(q, c), _sim_extended(ks, plan),
                                                    _sim_extended(vs, plan), _gather(o, c), _gather(lse, c),
                                                    _gather(do, c), plan.key_offset)
                _scatter(dq, dq_r, c)
                ext.append((dk_e, dv_e))
            dk, dv = torch.zeros_like(k), torch.zeros_like(v)
            world = len(plans)
            for r, plan in enumerate(plans):
                m = ks[r].shape[2]
                for i, (dst, mine) in enumerate(((dk, ks), (dv, vs))):
                    local = _split_ext(ext[r][i], plan, m)[1]
                    from_prev = _split_ext(ext[r - 1][i], plans[r - 1], mine[r - 1].shape[2])[2] if r > 0 else None
                    from_next = (_split_ext(ext[r + 1][i], plans[r + 1], mine[r + 1].shape[2])[0]
                                 if r < world - 1 else None)
                    _add_halo_grads(local, from_prev, from_next)
                    _scatter(dst, local, layout.k_chunks[r])
            return dq, dk, dv, None, None, None

    return _ShardedHalo


def _sim_extended(locals_, plan):
    """[last plan.prev rows of rank-1, rank's own, first plan.next rows of rank+1] of the simulated local buffers."""
    r, own = plan.rank, locals_[plan.rank]
    prev = _seq(locals_[r - 1], locals_[r - 1].shape[2] - plan.prev, locals_[r - 1].shape[2]) if plan.prev else \
        _seq(own, 0, 0)
    nxt = _seq(locals_[r + 1], 0, plan.next) if plan.next else _seq(own, 0, 0)
    return _cat_seq(prev, own, nxt)


def _sharded_apply(q, k, v, config, layout, path="auto"):
    """sharded_attention with a given configuration and layout: the halo path when the layout allows it, else the
    ring's schedule. path "ring": the ring's schedule regardless (tests, benchmarks)."""
    plans = halo_plans(layout) if path == "auto" else None
    if plans is not None:
        return _cls("sharded_halo", _make_sharded_halo).apply(q, k, v, config, layout, plans)
    return _cls("sharded", _make_sharded).apply(q, k, v, config, layout)


def _make_sharded():
    torch = _torch()

    class _Sharded(torch.autograd.Function):
        """One-device simulation of ring_attention: every rank's local buffers, every ring step of ring_schedule,
        K/V 'received' by indexing the owner's local buffers."""

        @staticmethod
        def forward(ctx, q, k, v, config, layout):
            configs = _configs(config)
            world = len(layout.q_chunks)
            ks = [_gather(k, layout.k_chunks[r]) for r in range(world)]
            vs = [_gather(v, layout.k_chunks[r]) for r in range(world)]
            o = torch.empty(q.shape[:3] + (v.shape[3],), dtype=q.dtype, device=q.device)
            lse = torch.empty(q.shape[:3], dtype=torch.float32, device=q.device)
            for r in range(world):
                ql = _gather(q, layout.q_chunks[r])
                acc_o, acc_lse = _accumulators(torch, ql, v)
                for i, step in enumerate(ring_schedule(layout, r)):
                    _forward_blocks(configs, ql, ks[step.kv_owner], vs[step.kv_owner], step.blocks, acc_o, acc_lse,
                                    fresh=i == 0)
                _scatter(o, acc_o.to(q.dtype), layout.q_chunks[r])
                _scatter(lse, acc_lse.float(), layout.q_chunks[r])
            ctx.config, ctx.layout = config, layout
            ctx.save_for_backward(q, k, v, o, lse)
            ctx.mark_non_differentiable(lse)
            return o, lse

        @staticmethod
        @torch.autograd.function.once_differentiable
        def backward(ctx, do, _dlse):
            q, k, v, o, lse = ctx.saved_tensors
            layout, configs = ctx.layout, _configs(ctx.config)
            world = len(layout.q_chunks)
            ks = [_gather(k, layout.k_chunks[r]) for r in range(world)]
            vs = [_gather(v, layout.k_chunks[r]) for r in range(world)]
            dks = [torch.zeros(t.shape, dtype=_acc_dtype(t), device=t.device) for t in ks]
            dvs = [torch.zeros(t.shape, dtype=_acc_dtype(t), device=t.device) for t in vs]
            dq = torch.zeros(q.shape, dtype=q.dtype, device=q.device)
            for r in range(world):
                c = layout.q_chunks[r]
                ql, ol, lsel, dol = _gather(q, c), _gather(o, c), _gather(lse, c), _gather(do, c)
                dq_acc = torch.zeros(ql.shape, dtype=_acc_dtype(q), device=q.device)
                for step in ring_schedule(layout, r):
                    w = step.kv_owner
                    _backward_blocks(configs, ql, ks[w], vs[w], ol, lsel, dol, step.blocks, dq_acc, dks[w], dvs[w])
                _scatter(dq, dq_acc.to(q.dtype), c)
            dk, dv = torch.zeros_like(k), torch.zeros_like(v)
            for r in range(world):
                _scatter(dk, dks[r].to(k.dtype), layout.k_chunks[r])
                _scatter(dv, dvs[r].to(v.dtype), layout.k_chunks[r])
            return dq, dk, dv, None, None

    return _Sharded


_classes = {}


def _cls(name, make):
    if name not in _classes:
        _classes[name] = make()
    return _classes[name]


def _config(op, q, k, v, causal, scale, softcap, enable_gqa, window=None):
    from .validate import attention_config
    ft = _ft()
    return attention_config(ft._info(op, "query", q), ft._info(op, "key", k), ft._info(op, "value", v),
                            causal=causal, scale=scale, window=window, softcap=softcap, enable_gqa=enable_gqa)


def sharded_attention(q, k, v, num_shards, causal=False, scale=None, softcap=None, enable_gqa=False,
                      return_lse=False, window=None, path="ring"):
    """flashc.torch.attention computed as ring_attention would over `num_shards` ranks, on one device.

    Arguments as flashc.torch.attention. Non-causal: query and key sequences are each cut into `num_shards` chunks
    (ceil-sized, the last ones shorter). Causal self-attention (Sq == Sk): the zig-zag layout over 2 * num_shards
    chunks. Causal with Sq != Sk (bottom-right aligned, e.g. new queries against a longer cache): contiguous chunks
    of each, whose pairs cut the diagonal (split by rows, module doc). window (an int or (left, right), as
    flashc.torch.attention's): contiguous chunks of each, causal or not; the halo path when it applies (one
    key-offset launch per shard over its keys and its neighbours' edge rows, module doc), else the ring's schedule,
    where every pair of chunks that sees a key under the window is one launch of the config's key-offset twin, the
    others none. Every block is a launch of the forward / backward program; results merge exactly
    (merge_partials); the backward uses the global o and lse. Differentiable in q, k and v. path: "ring" (default)
    or "auto" (the halo path where it applies; opt-in, see ring_attention)."""
    config = _config("sharded_attention", q, k, v, causal, scale, softcap, enable_gqa, window)
    layout = sharded_layout(q.shape[2], k.shape[2], num_shards, config.causal, config.window)
    o, lse = _sharded_apply(q, k, v, config, layout, path=path)
    return (o, lse) if return_lse else o


# ------------------------------------------------------------ the distributed ring
def _p2p(dist, group, sends, recvs):
    """Post isend/irecv pairs (peer ranks are group ranks) as one batch; returns the requests to wait on."""
    ops = []
    for t, peer in sends:
        ops.append(dist.P2POp(dist.isend, t, _global_rank(dist, group, peer), group))
    for t, peer in recvs:
        ops.append(dist.P2POp(dist.irecv, t, _global_rank(dist, group, peer), group))
    return dist.batch_isend_irecv(ops) if ops else []


def _global_rank(dist, group, rank):
    if group is None or group is dist.group.WORLD:
        return rank
    return dist.get_global_rank(group, rank)


def _wait(reqs):
    for r in reqs:
        r.wait()


def _empty_kv(torch, like, length):
    return torch.empty(like.shape[:2] + (length,) + like.shape[3:], dtype=like.dtype, device=like.device)


def _make_ring():
    torch = _torch()
    import torch.distributed as dist

    class _Ring(torch.autograd.Function):
        @staticmethod
        def forward(ctx, q, k, v, config, layout, group, rank):
            configs = _configs(config)
            steps = ring_schedule(layout, rank)
            k_len = [sum(n for _, n in c) for c in layout.k_chunks]
            k, v = k.contiguous(), v.contiguous()
            acc_o, acc_lse = _accumulators(torch, q, v)
            cur_k, cur_v = k, v
            for i, step in enumerate(steps):
                reqs = []
                if step.send_to is not None:  # post the next hop first: it overlaps this step's launches
                    nk = _empty_kv(torch, k, k_len[step.next_kv_owner])
                    nv = _empty_kv(torch, v, k_len[step.next_kv_owner])
                    reqs = _p2p(dist, group, [(cur_k, step.send_to), (cur_v, step.send_to)],
                                [(nk, step.recv_from), (nv, step.recv_from)])
                _forward_blocks(configs, q, cur_k, cur_v, step.blocks, acc_o, acc_lse, fresh=i == 0)
                _wait(reqs)
                if step.send_to is not None:
                    cur_k, cur_v = nk, nv
            o, lse = acc_o.to(q.dtype), acc_lse.float()
            ctx.config, ctx.layout, ctx.group, ctx.rank = config, layout, group, rank
            ctx.save_for_backward(q, k, v, o, lse)
            ctx.mark_non_differentiable(lse)
            return o, lse

        @staticmethod
        @torch.autograd.function.once_differentiable
        def backward(ctx, do, _dlse):
            q, k, v, o, lse = ctx.saved_tensors
            layout, group, rank, configs = ctx.layout, ctx.group, ctx.rank, _configs(ctx.config)
            steps = ring_schedule(layout, rank)
            k_len = [sum(n for _, n in c) for c in layout.k_chunks]
            do = do.contiguous()
            dq_acc = torch.zeros(q.shape, dtype=_acc_dtype(q), device=q.device)
            f32 = lambda t, n: torch.empty(t.shape[:2] + (n,) + t.shape[3:], dtype=_acc_dtype(t), device=t.device)
            zeros32 = lambda t, n: torch.zeros(t.shape[:2] + (n,) + t.shape[3:], dtype=_acc_dtype(t), device=t.device)
            cur_k, cur_v = k, v
            grad_reqs, in_dk, in_dv = [], None, None  # the accumulators arriving for this step's owner
            for step in steps:
                n = k_len[step.kv_owner]
                reqs = []
                if step.send_to is not None:  # K/V of the next step: independent of this step's compute
                    nk, nv = _empty_kv(torch, k, k_len[step.next_kv_owner]), _empty_kv(torch, v, k_len[step.next_kv_owner])
                    reqs = _p2p(dist, group, [(cur_k, step.send_to), (cur_v, step.send_to)],
                                [(nk, step.recv_from), (nv, step.recv_from)])
                dk_t, dv_t = zeros32(k, n), zeros32(v, n)
                _backward_blocks(configs, q, cur_k, cur_v, o, lse, do, step.blocks, dq_acc, dk_t, dv_t)
                _wait(grad_reqs)  # the owner's accumulator, sent by the previous rank after its step
                if in_dk is not None:
                    dk_t += in_dk
                    dv_t += in_dv
                if step.grad_send_to is not None:
                    owner_next = (step.kv_owner - 1) % len(k_len)  # what the previous rank holds now
                    in_dk, in_dv = f32(k, k_len[owner_next]), f32(v, k_len[owner_next])
                    grad_reqs = _p2p(dist, group, [(dk_t, step.grad_send_to), (dv_t, step.grad_send_to)],
                                     [(in_dk, step.grad_recv_from), (in_dv, step.grad_recv_from)])
                else:
                    in_dk, in_dv = dk_t, dv_t  # one rank: nothing travels
                _wait(reqs)
                if step.send_to is not None:
                    cur_k, cur_v = nk, nv
            _wait(grad_reqs)  # our own accumulators, back from their trip around the ring
            return dq_acc.to(q.dtype), in_dk.to(k.dtype), in_dv.to(v.dtype), None, None, None, None

    return _Ring


def _make_halo():
    torch = _torch()
    import torch.distributed as dist

    class _Halo(torch.autograd.Function):
        """The halo path of ring_attention (module doc): neighbours' edge rows in, one launch, halo gradients out."""

        @staticmethod
        def forward(ctx, q, k, v, config, plan, group):
            configs = _configs(config)
            k, v = k.contiguous(), v.contiguous()
            m, r = k.shape[2], plan.rank
            pk, pv, nk, nv = (_empty_kv(torch, t, n) for t, n in ((k, plan.prev), (v, plan.prev), (k, plan.next),
                                                                  (v, plan.next)))
            sends = [(_seq(t, 0, plan.send_prev), r - 1) for t in (k, v)] + \
                    [(_seq(t, m - plan.send_next, m), r + 1) for t in (k, v)]
            _wait(_neighbour_p2p(dist, group, sends, [(pk, r - 1), (pv, r - 1), (nk, r + 1), (nv, r + 1)]))
            k_ext, v_ext = _cat_seq(pk, k, nk), _cat_seq(pv, v, nv)
            o, lse = _halo_forward(configs, plan, q, k_ext, v_ext)
            ctx.config, ctx.plan, ctx.group, ctx.m = config, plan, group, m
            # The extended K/V in place of k and v (k is usually held by nothing else: about the same memory, plus
            # the halos): the backward needs neither a second exchange nor a second copy.
            ctx.save_for_backward(q, k_ext, v_ext, o, lse)
            ctx.mark_non_differentiable(lse)
            return o, lse

        @staticmethod
        @torch.autograd.function.once_differentiable
        def backward(ctx, do, _dlse):
            q, k_ext, v_ext, o, lse = ctx.saved_tensors
            plan, group, configs = ctx.plan, ctx.group, _configs(ctx.config)
            m, r = ctx.m, plan.rank
            k, v = _seq(k_ext, plan.prev, plan.prev + m), _seq(v_ext, plan.prev, plan.prev + m)  # shapes and dtypes
            dq, dk_e, dv_e = _launch_backward(configs[2], q, k_ext, v_ext, o, lse, do.contiguous(), plan.key_offset)
            (dk_p, dk, dk_n), (dv_p, dv, dv_n) = _split_ext(dk_e, plan, m), _split_ext(dv_e, plan, m)
            # The halo rows' gradients go home in the input dtype: they are the kernel's outputs, already rounded to
            # it, so float32 transport would carry no more precision (the owner sums in float32, _add_halo_grads).
            in_kp, in_vp = _empty_kv(torch, k, plan.send_prev), _empty_kv(torch, v, plan.send_prev)
            in_kn, in_vn = _empty_kv(torch, k, plan.send_next), _empty_kv(torch, v, plan.send_next)
            _wait(_neighbour_p2p(dist, group, [(dk_p, r - 1), (dv_p, r - 1), (dk_n, r + 1), (dv_n, r + 1)],
                                 [(in_kp, r - 1), (in_vp, r - 1), (in_kn, r + 1), (in_vn, r + 1)]))
            _add_halo_grads(dk, in_kp, in_kn)
            _add_halo_grads(dv, in_vp, in_vn)
            # The local rows of the extended gradients, without a copy; detached: a view made (and written) here
            # under no_grad must not carry its view history into the caller's graph.
            return dq, dk.detach(), dv.detach(), None, None, None

    return _Halo


def _neighbour_p2p(dist, group, sends, recvs):
    """_p2p without the zero-row tensors (both sides of a message skip alike: the plans agree on every size); sends
    made contiguous (rows of a [B, H, S, D] buffer are not, for B * H > 1)."""
    sends = [(t.contiguous(), p) for t, p in sends if t.shape[2] > 0]
    return _p2p(dist, group, sends, [(t, p) for t, p in recvs if t.shape[2] > 0])


def _ring_apply(q, k, v, config, group=None, path="auto"):
    """ring_attention with a given configuration (tests build CPU configurations directly). path "auto": the halo
    path where it applies, else the ring; "ring": the ring regardless (tests and benchmarks of the fallback)."""
    if path not in ("auto", "ring"):
        raise InvalidArgumentError("path must be 'auto' or 'ring', got %r" % (path,))
    torch = _torch()
    import torch.distributed as dist
    world = dist.get_world_size(group) if dist.is_initialized() else 1
    rank = dist.get_rank(group) if dist.is_initialized() else 0
    if world > 1:
        mine = torch.tensor([q.shape[2], k.shape[2]], dtype=torch.int64, device=q.device)
        everyone = [torch.empty_like(mine) for _ in range(world)]
        dist.all_gather(everyone, mine, group=group)
        lengths = [tuple(int(x) for x in t.tolist()) for t in everyone]
    else:
        lengths = [(q.shape[2], k.shape[2])]
    layout = ring_layout(world, config.causal, [l[0] for l in lengths], [l[1] for l in lengths], config.window)
    plans = halo_plans(layout) if path == "auto" else None
    if plans is not None:
        return _cls("halo", _make_halo).apply(q, k, v, config, plans[rank], group)
    return _cls("ring", _make_ring).apply(q, k, v, config, layout, group, rank)


def ring_attention(q_local, k_local, v_local, group=None, causal=False, scale=None, softcap=None, enable_gqa=False,
                   return_lse=False, window=None, path="ring"):
    """Context-parallel attention over the ranks of `group` (torch.distributed, NCCL; default: the world).

    Rank r holds its query rows and key/value rows of one sequence ([B, H, S_local, D] each, one CUDA device per
    rank): non-causal, contiguous chunk r (lengths may differ between ranks); causal without a window, the zig-zag
    layout (chunks r and 2N-1-r of 2N equal chunks, see zigzag_shard). K/V rotate around the ring with batched
    isend/irecv, each hop posted before the current block's launches so that transfer and compute overlap; partial
    results merge exactly. Backward rotates K/V again, accumulates dq locally and sends float32 dK/dV accumulators
    around the ring with their K/V, so they arrive back at their owner. Returns this rank's o (and lse). One rank:
    the plain kernel.

    window (an int or (left, right), as flashc.torch.attention's): rank r holds contiguous chunk r, causal or not
    (any lengths). path="auto" (opt-in: checked on two H200s against float64, not yet timed — its benchmark did
    not complete, session 8): when every rank's window reaches no further than its neighbours' chunks (both sides
    bounded), the halo path runs (module doc): the neighbours' edge rows of K/V come in, one key-offset launch, no merges;
    backward: one launch, the halo rows' dK/dV go back to their owners. Otherwise the ring runs, each pair of a
    local query chunk and a received key chunk that sees a key under the window being one launch of the key-offset
    twin of the config, the others none. One rank: one launch with key_offset = Sk - Sq.
    NCCL_NVLS_ENABLE defaults to 0 (see the module doc)."""
    config = _config("ring_attention", q_local, k_local, v_local, causal, scale, softcap, enable_gqa, window)
    o, lse = _ring_apply(q_local, k_local, v_local, config, group, path=path)
    return (o, lse) if return_lse else o


def zigzag_shard(x, world_size, rank, dim=2):
    """Rank `rank`'s part of a full sequence tensor in the causal zig-zag layout: chunks rank and
    2*world_size-1-rank of 2*world_size equal chunks along `dim`, concatenated."""
    torch = _torch()
    if x.shape[dim] % (2 * world_size):
        raise InvalidArgumentError("zig-zag sharding needs the sequence length (%d) to be a multiple of 2 x world size "
                                   "(%d)" % (x.shape[dim], 2 * world_size))
    chunks = x.chunk(2 * world_size, dim=dim)
    return torch.cat([chunks[rank], chunks[2 * world_size - 1 - rank]], dim=dim)


def zigzag_unshard(parts, dim=2):
    """The full sequence from every rank's zig-zag part (list in rank order)."""
    torch = _torch()
    firsts = [p.chunk(2, dim=dim)[0] for p in parts]
    seconds = [p.chunk(2, dim=dim)[1] for p in parts]
    return torch.cat(firsts + seconds[::-1], dim=dim)
