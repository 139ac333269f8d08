"""flashc.ring without a GPU: the exact merge, the causal pair classification, the sharding plans and the ring's
per-step schedule (pure functions), and the sharded / ring autograd functions run on CPU float64 tensors against a
stand-in bundle (test_torch_cpu's FakeBundle mechanism) whose backward program computes exactly what the kernel
does from the o and lse it is given (P = exp(S - lse), D = rowsum(dO * O)), so that passing the *global* o and lse
of a row to every block is what is checked. The ring runs over torch.distributed's gloo backend: in this process
with one rank, and in spawned processes with 2, 3 and 4 ranks.

Run: PYTHONPATH=python python -m unittest python/tests/test_ring_cpu.py -v (torch optional: skipped without it).
"""

import dataclasses
import math
import os
import sys
import tempfile
import traceback
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from _support import HAVE_TORCH, EnvPatch, requires_torch  # noqa: E402

import flashc  # noqa: E402
from flashc import ring  # noqa: E402  (pure parts import without torch)

if HAVE_TORCH:
    import torch
    import flashc.torch as ft
    from flashc import cache
    from flashc.spec import AttentionConfig
    from flashc.testing import attention_reference, visible_mask
    from test_torch_cpu import FakeBundle


# ------------------------------------------------------------ stand-in kernels
def kernel_backward(q, k, v, o, lse, do, causal, scale, softcap, window=None, key_offset=None):
    """The backward program's math in float64, from the o and lse it is passed (not recomputed)."""
    q, k, v, o, lse, do = (t.double() for t in (q, k, v, o, lse, do))
    group = q.shape[1] // k.shape[1]
    kr, vr = k.repeat_interleave(group, dim=1), v.repeat_interleave(group, dim=1)
    s = q @ kr.transpose(-1, -2)
    if softcap:
        capped = softcap * torch.tanh(s * scale / softcap)
        z = capped
    else:
        z = s * scale
    z = z.masked_fill(~visible_mask(q.shape[2], k.shape[2], causal, window, key_offset=key_offset), -math.inf)
    dead = torch.isinf(lse).unsqueeze(-1)
    p = torch.where(dead, torch.zeros_like(z), torch.exp(z - torch.where(dead, torch.zeros_like(lse.unsqueeze(-1)),
                                                                          lse.unsqueeze(-1))))
    dp = do @ vr.transpose(-1, -2)
    d = (do * o).sum(-1, keepdim=True)
    ds = p * (dp - d)
    if softcap:
        ds = ds * (1 - (capped / softcap) ** 2)
    ds = ds * scale
    dq = ds @ kr
    b, hkv = k.shape[:2]
    dk = (ds.transpose(-1, -2) @ q).reshape(b, hkv, group, k.shape[2], -1).sum(2)
    dv = (p.transpose(-1, -2) @ do).reshape(b, hkv, group, k.shape[2], -1).sum(2)
    return dq, dk, dv


if HAVE_TORCH:
    class KernelFaithfulBundle(FakeBundle):
        """FakeBundle whose attention backward uses the o and lse arguments as the kernel does."""

        def _attention(self, name, a):
            c = self.config
            if name == c.forward_program:
                return FakeBundle._attention(self, name, a)
            dq, dk, dv = kernel_backward(a["q"], a["k"], a["v"], a["o"], a["lse"], a["do"], c.causal, c.scale,
                                         c.softcap, c.window, a.get("key_offset"))
            a["dq"].copy_(dq)
            a["dk"].copy_(dk)
            a["dv"].copy_(dv)


class _Unit:
    """The assertion methods FakeBundle needs, outside a TestCase (spawned ring ranks)."""

    def assertEqual(self, a, b, msg=None):
        assert a == b, msg or "%r != %r" % (a, b)

    def assertTrue(self, a, msg=None):
        assert a, msg


def install_stand_in(test):
    """Route flashc.torch's bundle lookup and launches to KernelFaithfulBundle; returns (fakes, restore)."""
    fakes = {}
    saved = (cache.load_bundle, ft._launch)
    cache.load_bundle = lambda config: fakes.setdefault(config.key, KernelFaithfulBundle(config, test))
    ft._launch = lambda bundle, program, device, args: bundle.launch(program, **args)
    ft._resolved.clear()

    def restore():
        cache.load_bundle, ft._launch = saved
        ft._resolved.clear()

    return fakes, restore


def reference(config, q, k, v, do):
    leaves = [t.detach().double().requires_grad_() for t in (q, k, v)]
    o, lse = attention_reference(*leaves, causal=config.causal, scale=config.scale, softcap=config.softcap,
                                 window=config.window)
    grads = torch.autograd.grad(o, leaves, do.double())
    return o.detach(), lse.detach(), grads


def randn(*shape):
    return torch.randn(*shape, dtype=torch.float64)


def visible(p, j, causal, window):
    """Whether query position p sees key j (j within the sequence): causal j <= p; window (left, right), -1
    unbounded: p - left <= j <= p + right (flashc's mask, written out)."""
    if causal and j > p:
        return False
    if window is not None:
        left, right = window
        if left >= 0 and j < p - left:
            return False
        if right >= 0 and j > p + right:
            return False
    return True


# Windows (left, right) of the coverage tests: smaller than, equal to and larger than the chunks (3 to 14 rows),
# a single key, one side unbounded. Causal ones have right = 0 (AttentionConfig's normal form).
CAUSAL_WINDOWS = [(0, 0), (1, 0), (2, 0), (3, 0), (5, 0), (6, 0), (7, 0), (12, 0), (40, 0)]
WINDOWS = [(0, 0), (2, 1), (1, 4), (5, 5), (6, 6), (-1, 2), (3, -1), (13, 2), (40, 40)]


# ------------------------------------------------------------ pure parts (no torch)
class ClassifyTest(unittest.TestCase):
    def test_table(self):
        # (q0, n, k0, m) -> kind, for 'query p sees key j <= p'
        table = [
            ((8, 4, 0, 4), ring.FULL), ((8, 4, 4, 4), ring.FULL), ((8, 4, 5, 4), ring.FULL), ((8, 4, 6, 4), ring.PARTIAL),
            ((8, 4, 8, 4), ring.DIAGONAL), ((8, 4, 8, 3), ring.PARTIAL), ((8, 4, 8, 5), ring.PARTIAL),
            ((8, 4, 12, 4), ring.SKIP), ((8, 4, 11, 4), ring.PARTIAL), ((8, 4, 0, 9), ring.FULL),
            ((8, 4, 0, 10), ring.PARTIAL), ((0, 1, 0, 1), ring.FULL), ((0, 2, 0, 2), ring.DIAGONAL), ((3, 0, 0, 2), ring.SKIP),
            ((3, 2, 1, 0), ring.SKIP), ((0, 5, 2, 1), ring.PARTIAL),
        ]
        for args, kind in table:
            self.assertEqual(ring.classify(*args), kind, args)

    def test_classify_agrees_with_the_mask(self):
        for q0, n, k0, m in [(a, b, c, d) for a in range(0, 6) for b in range(0, 4) for c in range(0, 6)
                             for d in range(0, 4)]:
            seen = [[j <= p for j in range(k0, k0 + m)] for p in range(q0, q0 + n)]
            flat = [x for row in seen for x in row]
            kind = ring.classify(q0, n, k0, m)
            if not flat or not any(flat):
                self.assertEqual(kind, ring.SKIP)
            elif all(flat):
                self.assertEqual(kind, ring.FULL)
            elif q0 == k0 and n == m:  # the causal kernel's (bottom-right = top-left) mask
                self.assertEqual(kind, ring.DIAGONAL)
                self.assertEqual(seen, [[j <= i for j in range(m)] for i in range(n)])
            else:
                self.assertEqual(kind, ring.PARTIAL, (q0, n, k0, m))

    def test_partial_is_split_by_rows(self):
        # queries at positions 4..7 against keys 2..5: rows 5.. see every key (non-causal), row 4 keys 2..4
        # (a causal launch over keys [2, 5) whose bottom-right alignment is 4 - 2 = 2); nothing is refused.
        self.assertEqual(ring.plan_blocks([(4, 4)], [(2, 4)], causal=True),
                         [ring.Block(1, 4, 0, 4, False), ring.Block(0, 1, 0, 3, True)])
        self.assertEqual(ring.plan_blocks([(4, 4)], [(2, 4)], causal=False), [ring.Block(0, 4, 0, 4, False)])
        # every pair of small chunks, any query offset: each visible (query, key) exactly once, each launch's own
        # bottom-right mask equal to the global one
        for q0, n, k0, m, off in [(a, b, c, d, o) for a in range(0, 5) for b in range(1, 4) for c in range(0, 5)
                                  for d in range(1, 4) for o in (-2, 0, 3)]:
            count = {}
            for blk in ring.plan_blocks([(q0, n)], [(k0, m)], True, q_offset=off):
                nq, nk = blk.q_hi - blk.q_lo, blk.k_hi - blk.k_lo
                for i in range(nq):
                    for j in range(nk):
                        if (not blk.causal) or j <= i + nk - nq:
                            key = (q0 + blk.q_lo + i, k0 + blk.k_lo + j)
                            self.assertLessEqual(key[1], key[0] + off, (q0, n, k0, m, off, blk))
                            count[key] = count.get(key, 0) + 1
            want = {(p, j) for p in range(q0, q0 + n) for j in range(k0, k0 + m) if j <= p + off}
            self.assertEqual(set(count), want, (q0, n, k0, m, off))
            self.assertTrue(all(c == 1 for c in count.values()), (q0, n, k0, m, off))

    def test_chunk_bounds(self):
        self.assertEqual(ring.chunk_bounds(10, 4), [(0, 3), (3, 3), (6, 3), (9, 1)])
        self.assertEqual(ring.chunk_bounds(8, 4), [(0, 2), (2, 2), (4, 2), (6, 2)])
        self.assertEqual(ring.chunk_bounds(5, 4), [(0, 2), (2, 2), (4, 1), (5, 0)])


class ScheduleTest(unittest.TestCase):
    """ring_schedule: element-level coverage, exactness of every launch's own mask, the messages, the balance."""

    LAYOUTS = [
        ("contiguous", lambda n, causal: ring.sharded_layout(24, 24, n, causal)),
        ("ragged", lambda n, causal: ring.sharded_layout(23, 23, n, causal)),
        ("ring", lambda n, causal: ring.ring_layout(n, causal, [6] * n, [6] * n)),
        # Sq != Sk: causal rows bottom-right aligned (query i at key position i + Sk - Sq); pairs cut the diagonal
        ("fewer queries", lambda n, causal: ring.sharded_layout(17, 29, n, causal)),
        ("more queries", lambda n, causal: ring.sharded_layout(29, 17, n, causal)),
    ]

    def check_layout(self, layout, label):
        window = layout.window
        world = len(layout.q_chunks)
        sq = sum(n for c in layout.q_chunks for _, n in c)
        sk = sum(n for c in layout.k_chunks for _, n in c)
        count = [[0] * sk for _ in range(sq)]
        schedules = [ring.ring_schedule(layout, r) for r in range(world)]

        def globals_of(chunks):
            return [s + i for s, n in chunks for i in range(n)]

        for r, steps in enumerate(schedules):
            self.assertEqual(len(steps), world, label)
            gq = globals_of(layout.q_chunks[r])
            for t, step in enumerate(steps):
                self.assertEqual(step.kv_owner, (r - t) % world)
                gk = globals_of(layout.k_chunks[step.kv_owner])
                if window is not None:  # at most one launch per pair of chunks
                    pairs = len(layout.q_chunks[r]) * len(layout.k_chunks[step.kv_owner])
                    self.assertLessEqual(len(step.blocks), pairs)
                for b in step.blocks:
                    nq, nk = b.q_hi - b.q_lo, b.k_hi - b.k_lo
                    self.assertEqual(b.key_offset is not None, window is not None, label)
                    rows_seeing, keys_seen = set(), set()
                    for i in range(nq):
                        for j in range(nk):
                            if b.key_offset is not None:  # the key-offset kernel: row i at key position i + offset
                                kernel = visible(i + b.key_offset, j, layout.causal, window)
                            else:
                                kernel = (not b.causal) or j <= i + nk - nq  # the kernel's bottom-right mask
                            gi, gj = gq[b.q_lo + i], gk[b.k_lo + j]
                            want = visible(gi + layout.q_offset, gj, layout.causal, window)
                            self.assertEqual(kernel, want, "%s rank %d step %d block %s: query %d key %d"
                                             % (label, r, t, b, gi, gj))
                            count[gi][gj] += kernel
                            if kernel:
                                rows_seeing.add(i)
                                keys_seen.add(j)
                    if window is not None:  # trimmed: every row sees a key, every key is seen
                        self.assertEqual((len(rows_seeing), len(keys_seen)), (nq, nk), "%s block %s" % (label, b))
        for i in range(sq):
            for j in range(sk):
                self.assertEqual(count[i][j], int(visible(i + layout.q_offset, j, layout.causal, window)),
                                 "%s: query %d key %d covered %d times" % (label, i, j, count[i][j]))
        # Messages: what r sends at step t is what r+1 receives at step t, and holds at step t+1.
        for r, steps in enumerate(schedules):
            nxt = (r + 1) % world
            for t, step in enumerate(steps):
                if t == world - 1:
                    self.assertIsNone(step.send_to)
                    self.assertIsNone(step.recv_from)
                else:
                    self.assertEqual(step.send_to, nxt)
                    self.assertEqual(schedules[nxt][t].recv_from, r)
                    self.assertEqual(schedules[nxt][t].next_kv_owner, step.kv_owner)
                    self.assertEqual(schedules[nxt][t + 1].kv_owner, step.kv_owner)
                if world > 1:  # dK/dV accumulators follow their K/V, and the last hop brings them home
                    self.assertEqual(step.grad_send_to, nxt)
                    self.assertEqual(schedules[nxt][t].grad_recv_from, r)
                    if t == world - 1:
                        self.assertEqual((step.kv_owner - 0) % world, nxt)
                else:
                    self.assertIsNone(step.grad_send_to)

    def test_coverage_and_messages(self):
        for world in (1, 2, 3, 4):
            for causal in (False, True):
                for name, make in self.LAYOUTS:
                    label = "%s world=%d causal=%s" % (name, world, causal)
                    with self.subTest(label):
                        self.check_layout(make(world, causal), label)
        with self.subTest("ragged non-causal ring, Sq != Sk"):
            self.check_layout(ring.ring_layout(3, False, [3, 5, 2], [4, 1, 6]), "ragged ring")

    def test_window_coverage(self):
        """Sliding windows: every (global query, global key) pair computed by exactly one launch iff visible, each
        launch's own key-offset mask equal to the global one (the ring's schedule, which runs when the halo path
        does not apply); 1-4 ranks, causal and not (contiguous chunks), windows smaller than, equal to and larger
        than the chunks, Sq != Sk."""
        layouts = [
            ("contiguous", lambda n, c, w: ring.sharded_layout(24, 24, n, c, w)),
            ("ragged", lambda n, c, w: ring.sharded_layout(23, 23, n, c, w)),
            ("ring", lambda n, c, w: ring.ring_layout(n, c, [6] * n, [6] * n, w)),
            ("fewer queries", lambda n, c, w: ring.sharded_layout(17, 29, n, c, w)),
            ("more queries", lambda n, c, w: ring.sharded_layout(29, 17, n, c, w)),
        ]
        for world in (1, 2, 3, 4):
            for causal in (False, True):
                for window in CAUSAL_WINDOWS if causal else WINDOWS:
                    for name, make in layouts:
                        label = "%s world=%d causal=%s window=%s" % (name, world, causal, window)
                        with self.subTest(label):
                            self.check_layout(make(world, causal, window), label)
        for window in WINDOWS:
            with self.subTest("ragged non-causal ring, Sq != Sk, window %s" % (window,)):
                self.check_layout(ring.ring_layout(3, False, [3, 5, 2], [4, 1, 6], window), "ragged ring")

    def test_window_layouts(self):
        # Any window: contiguous chunks, causal or not (the halo path needs one chunk per rank); the window and the
        # bottom-right offset Sk - Sq ride along.
        self.assertEqual(ring.sharded_layout(8, 8, 2, True, (3, 0)),
                         ring.Layout(True, [[(0, 4)], [(4, 4)]], [[(0, 4)], [(4, 4)]], 0, (3, 0)))
        self.assertEqual(ring.sharded_layout(7, 7, 3, True, (3, 0)).q_chunks, [[(0, 3)], [(3, 3)], [(6, 1)]])
        self.assertEqual(ring.sharded_layout(8, 6, 2, True, (3, 0)), ring.Layout(True, [[(0, 4)], [(4, 4)]],
                                                                                [[(0, 3)], [(3, 3)]], -2, (3, 0)))
        self.assertEqual(ring.sharded_layout(8, 12, 2, False, (3, 1)), ring.Layout(False, [[(0, 4)], [(4, 4)]],
                                                                                  [[(0, 6)], [(6, 6)]], 4, (3, 1)))
        self.assertEqual(ring.ring_layout(2, False, [3, 4], [6, 2], (3, 1)).q_offset, 1)
        self.assertEqual(ring.ring_layout(2, True, [4, 4], [4, 4], (3, 0)),
                         ring.Layout(True, [[(0, 4)], [(4, 4)]], [[(0, 4)], [(4, 4)]], 0, (3, 0)))
        # a causal window takes any lengths (the zig-zag's equal even lengths are not needed)
        self.assertEqual(ring.ring_layout(2, True, [3, 6], [3, 6], (3, 0)).k_chunks, [[(0, 3)], [(3, 6)]])
        # Without a window, plans and blocks are today's (key_offset None).
        self.assertEqual(ring.Block(0, 1, 0, 1, True).key_offset, None)
        self.assertEqual(ring.plan_blocks([(0, 4)], [(0, 4)], True), [ring.Block(0, 4, 0, 4, True)])

    def test_window_blocks_by_example(self):
        # The ring fallback's blocks. Contiguous halves of 32 rows, causal window 4: rank 0's step 0 is its own
        # chunk; at step 1 (rank 1's keys 16..31) nothing is visible. Rank 1's step 1 (rank 0's keys): rows 16..19
        # (local 0..3) see keys 12..15 (local 12..15): row 16 at key position 16, first key 12: offset 4.
        layout = ring.sharded_layout(32, 32, 2, True, (4, 0))
        self.assertEqual(ring.ring_schedule(layout, 0)[0].blocks, (ring.Block(0, 16, 0, 16, False, 0),))
        self.assertEqual(ring.ring_schedule(layout, 0)[1].blocks, ())
        self.assertEqual(ring.ring_schedule(layout, 1)[1].blocks, (ring.Block(0, 4, 12, 16, False, 4),))
        # Non-causal window (2, 3) over contiguous halves of 16: rank 1's rows 8..9 against rank 0's keys 6..7,
        # rank 0's rows 5..7 against keys 8..10; Sq != Sk moves the rows (query i at key position i + Sk - Sq).
        layout = ring.sharded_layout(16, 16, 2, False, (2, 3))
        self.assertEqual(ring.ring_schedule(layout, 1)[1].blocks, (ring.Block(0, 2, 6, 8, False, 2),))
        self.assertEqual(ring.ring_schedule(layout, 0)[1].blocks, (ring.Block(5, 8, 0, 3, False, -3),))
        self.assertEqual(ring.plan_blocks([(0, 4)], [(0, 10)], False, 6, (1, 0)),
                         [ring.Block(0, 4, 5, 10, False, 1)])
        self.assertEqual(ring.plan_blocks([(0, 4)], [(0, 10)], False, 20, (1, 0)), [])

    def test_window_rows_and_keys_is_exact(self):
        for window in set(CAUSAL_WINDOWS + WINDOWS):
            for p0, n, k0, m in [(a, b, c, d) for a in range(-3, 8) for b in range(0, 4) for c in range(0, 7)
                                 for d in range(0, 4)]:
                pairs = [(p, j) for p in range(p0, p0 + n) for j in range(k0, k0 + m) if visible(p, j, False, window)]
                got = ring.window_rows_and_keys(p0, n, k0, m, window)
                if not pairs:
                    self.assertIsNone(got, (window, p0, n, k0, m))
                    continue
                rows, keys = [p for p, _ in pairs], [j for _, j in pairs]
                self.assertEqual(got, ((min(rows), max(rows)), (min(keys), max(keys))), (window, p0, n, k0, m))
                # every row between sees a key (the rows a launch gets never come back empty)
                self.assertEqual(set(rows), set(range(min(rows), max(rows) + 1)))

    def test_zigzag_is_one_balanced_launch_per_step(self):
        for world in (1, 2, 3, 4):
            layout = ring.ring_layout(world, True, [8] * world, [8] * world)
            for r in range(world):
                steps = ring.ring_schedule(layout, r)
                for t, step in enumerate(steps):
                    self.assertEqual(len(step.blocks), 1, (world, r, t))
                    b = step.blocks[0]
                    self.assertEqual(b.causal, t == 0)
                    # every rank does the same work at every step: 8x8 causal, then 8x4 or 4x8 (32 elements)
                    self.assertEqual((b.q_hi - b.q_lo) * (b.k_hi - b.k_lo), 64 if t == 0 else 32)
                    owner = step.kv_owner
                    if t > 0:
                        self.assertEqual((b.q_lo, b.q_hi, b.k_lo, b.k_hi), (0, 8, 0, 4) if owner < r else (4, 8, 0, 8))

    def test_ring_layout_checks(self):
        with self.assertRaisesRegex(flashc.InvalidArgumentError, "zig-zag"):
            ring.ring_layout(2, True, [4, 6], [4, 6])
        with self.assertRaisesRegex(flashc.InvalidArgumentError, "zig-zag"):
            ring.ring_layout(2, True, [5, 5], [5, 5])
        self.assertEqual(ring.sharded_layout(8, 6, 2, True), ring.Layout(True, [[(0, 4)], [(4, 4)]], [[(0, 3)], [(3, 3)]], -2))
        with self.assertRaisesRegex(flashc.InvalidArgumentError, "rank"):
            ring.ring_schedule(ring.ring_layout(2, False, [1, 1], [1, 1]), 2)

    HALO_LAYOUTS = [
        ("contiguous", lambda n, c, w: ring.sharded_layout(24, 24, n, c, w)),
        ("ragged", lambda n, c, w: ring.sharded_layout(23, 23, n, c, w)),
        ("ring", lambda n, c, w: ring.ring_layout(n, c, [6] * n, [6] * n, w)),
        ("ragged ring", lambda n, c, w: ring.ring_layout(n, c, [3, 5, 2, 4][:n], [4, 1, 6, 3][:n], w)),
        ("ragged ring 2", lambda n, c, w: ring.ring_layout(n, c, [5, 7, 6, 4][:n], [5, 7, 6, 4][:n], w)),
        ("fewer queries", lambda n, c, w: ring.sharded_layout(17, 29, n, c, w)),
        ("more queries", lambda n, c, w: ring.sharded_layout(29, 17, n, c, w)),
    ]

    def check_halo(self, layout, label):
        """The halo plans against brute force: whether the path applies (every rank's visible keys within its
        neighbours' chunks, bounded sides over 2+ ranks), every visible (global query, global key) computed exactly
        once by its query's rank and nothing else, each launch's key-offset mask equal to the global one, and the
        messages: what a rank sends is what its neighbour receives."""
        world, causal, window = len(layout.q_chunks), layout.causal, layout.window
        (q_chunks, k_chunks) = ([c for (c,) in layout.q_chunks], [c for (c,) in layout.k_chunks])
        sq, sk = sum(n for _, n in q_chunks), sum(m for _, m in k_chunks)
        owner = [r for r, (_, m) in enumerate(k_chunks) for _ in range(m)]
        fits = world == 1 or (window[0] >= 0 and (causal or window[1] >= 0))
        for r, (q0, n) in enumerate(q_chunks):
            for i in range(q0, q0 + n):
                for j in range(sk):
                    if visible(i + layout.q_offset, j, causal, window) and abs(owner[j] - r) > 1:
                        fits = False
        plans = ring.halo_plans(layout)
        self.assertEqual(plans is not None, fits, label)
        if plans is None:
            self.assertIsNone(ring.halo_plan(layout, 0), label)
            return
        self.assertEqual([ring.halo_plan(layout, r) for r in range(world)], plans)
        count = {}
        for r, plan in enumerate(plans):
            (q0, n), (k0, m) = q_chunks[r], k_chunks[r]
            self.assertEqual(plan.rank, r)
            # the extended keys: the last `prev` rows of rank r-1, rank r's own, the first `next` rows of rank r+1
            self.assertTrue(plan.prev == 0 or (r > 0 and plan.prev <= k_chunks[r - 1][1]), (label, plan))
            self.assertTrue(plan.next == 0 or (r < world - 1 and plan.next <= k_chunks[r + 1][1]), (label, plan))
            ext = list(range(k0 - plan.prev, k0 + m + plan.next))
            # messages
            self.assertEqual(plan.send_next, plans[r + 1].prev if r < world - 1 else 0, label)
            self.assertEqual(plan.send_prev, plans[r - 1].next if r > 0 else 0, label)
            for i in range(n):
                for e, j in enumerate(ext):
                    kernel = visible(i + plan.key_offset, e, causal, window)  # row i at key position i + offset
                    self.assertEqual(kernel, visible(q0 + i + layout.q_offset, j, causal, window),
                                     "%s rank %d: query %d key %d" % (label, r, q0 + i, j))
                    if kernel:
                        count[q0 + i, j] = count.get((q0 + i, j), 0) + 1
        want = {(i, j) for i in range(sq) for j in range(sk) if visible(i + layout.q_offset, j, causal, window)}
        self.assertEqual(set(count), want, label)
        self.assertTrue(all(c == 1 for c in count.values()), label)

    def test_halo_plan_coverage(self):
        for world in (1, 2, 3, 4):
            for causal in (False, True):
                for window in CAUSAL_WINDOWS if causal else WINDOWS + [(0, 3), (4, 0), (0, 8), (0, 9)]:
                    for name, make in self.HALO_LAYOUTS:
                        label = "%s world=%d causal=%s window=%s" % (name, world, causal, window)
                        with self.subTest(label):
                            self.check_halo(make(world, causal, window), label)

    def test_halo_plan_by_example(self):
        # 24 rows over 3 ranks (chunks of 8). A causal window of 8 (a whole chunk) fits: ranks 1 and 2 get the
        # previous rank's last 8 rows; local row 0 then sits at key position 8 of [halo, local]. 9 does not fit.
        plans = ring.halo_plans(ring.sharded_layout(24, 24, 3, True, (8, 0)))
        self.assertEqual(plans, [ring.HaloPlan(0, 0, 0, 0, 8, 0), ring.HaloPlan(1, 8, 0, 0, 8, 8),
                                 ring.HaloPlan(2, 8, 0, 0, 0, 8)])
        self.assertIsNone(ring.halo_plans(ring.sharded_layout(24, 24, 3, True, (9, 0))))
        # Non-causal (2, 3): 2 rows from the previous rank, 3 from the next; one-sided (0, 8) / (5, 0).
        plans = ring.halo_plans(ring.sharded_layout(24, 24, 3, False, (2, 3)))
        self.assertEqual(plans, [ring.HaloPlan(0, 0, 3, 0, 2, 0), ring.HaloPlan(1, 2, 3, 3, 2, 2),
                                 ring.HaloPlan(2, 2, 0, 3, 0, 2)])
        self.assertEqual([(p.prev, p.next) for p in ring.halo_plans(ring.sharded_layout(24, 24, 3, False, (0, 8)))],
                         [(0, 8), (0, 8), (0, 0)])
        self.assertEqual([(p.prev, p.next) for p in ring.halo_plans(ring.sharded_layout(24, 24, 3, False, (5, 0)))],
                         [(0, 0), (5, 0), (5, 0)])
        self.assertIsNone(ring.halo_plans(ring.sharded_layout(24, 24, 3, False, (0, 9))))
        # Unbounded sides: the ring over 2+ ranks; one rank: one launch with key_offset = Sk - Sq.
        self.assertIsNone(ring.halo_plans(ring.sharded_layout(24, 24, 2, False, (-1, 2))))
        self.assertEqual(ring.halo_plans(ring.sharded_layout(20, 24, 1, False, (-1, 2))),
                         [ring.HaloPlan(0, 0, 0, 0, 0, 4)])
        # Sq != Sk (bottom-right: query i at key position i + 12): rank 0's rows 12..17 see keys 8..17 (8 of rank
        # 1's first rows), rank 1's rows 18..23 keys 14..23 (4 of rank 2's).
        plans = ring.halo_plans(ring.sharded_layout(17, 29, 3, True, (4, 0)))
        self.assertEqual(plans, [ring.HaloPlan(0, 0, 8, 0, 0, 12), ring.HaloPlan(1, 0, 4, 8, 0, 8),
                                 ring.HaloPlan(2, 0, 0, 4, 0, 4)])
        # No window, or the zig-zag: never the halo path.
        self.assertIsNone(ring.halo_plans(ring.sharded_layout(24, 24, 3, True)))
        self.assertIsNone(ring.halo_plans(ring.sharded_layout(24, 24, 3, False)))
        with self.assertRaisesRegex(flashc.InvalidArgumentError, "rank"):
            ring.halo_plan(ring.sharded_layout(24, 24, 3, True, (8, 0)), 3)

    def test_nvls_is_off_by_default(self):
        self.assertIn("NCCL_NVLS_ENABLE", os.environ)


# ------------------------------------------------------------ torch parts
@requires_torch
class MergeTest(unittest.TestCase):
    @staticmethod
    def partial(q, k, v, visible):
        """(o, lse) of softmax attention restricted to `visible` [Sq, Sk]; rows with none: 0 and -inf."""
        s = (q @ k.transpose(-1, -2)).masked_fill(~visible, -math.inf)
        lse = torch.logsumexp(s, dim=-1)
        safe = torch.where(torch.isinf(lse), torch.zeros_like(lse), lse)
        p = torch.exp(s - safe.unsqueeze(-1))
        return p @ v, lse

    def test_exact_over_disjoint_shards_with_dead_rows(self):
        torch.manual_seed(0)
        q, k, v = randn(2, 3, 7, 5), randn(2, 3, 11, 5), randn(2, 3, 11, 4)
        visible = torch.rand(7, 11) > 0.3
        visible[0] = False          # a row that sees no key at all
        visible[1] = False
        visible[1, 10] = True       # a row that sees one key, in the last shard only
        o_full, lse_full = self.partial(q, k, v, visible)
        perm = torch.randperm(11)   # shards need not be contiguous, only disjoint
        for shards in (2, 3, 4):
            with self.subTest(shards=shards):
                outs, lses = [], []
                for idx in perm.tensor_split(shards):
                    mask = torch.zeros_like(visible)
                    mask[:, idx] = visible[:, idx]
                    o, lse = self.partial(q, k, v, mask)
                    outs.append(o)
                    lses.append(lse)
                self.assertTrue(bool(torch.isinf(torch.stack(lses)[:, :, :, 0]).all()))
                o, lse = ring.merge_partials(outs, lses)
                self.assertEqual(o.dtype, torch.float64)
                self.assertEqual(lse.dtype, torch.float32)
                self.assertFalse(bool(torch.isnan(o).any()) or bool(torch.isnan(lse).any()))
                self.assertTrue(bool((o[:, :, 0] == 0).all()))
                self.assertTrue(bool((lse[:, :, 0] == -math.inf).all()))
                self.assertTrue(torch.allclose(o, o_full, atol=1e-6))  # f32 combine
                self.assertTrue(torch.allclose(lse.double(), lse_full, atol=1e-5))
                self.assertTrue(torch.equal(torch.isinf(lse), torch.isinf(lse_full)))
                # low precision partials come back in their dtype
                ob, _ = ring.merge_partials([x.bfloat16() for x in outs], lses)
                self.assertEqual(ob.dtype, torch.bfloat16)
                self.assertTrue(torch.allclose(ob.double(), o_full, atol=3e-2))

    def test_all_dead(self):
        outs = [torch.zeros(1, 1, 3, 2) for _ in range(3)]
        lses = [torch.full((1, 1, 3), -math.inf) for _ in range(3)]
        o, lse = ring.merge_partials(outs, lses)
        self.assertTrue(bool((o == 0).all()) and bool((lse == -math.inf).all()))
        with self.assertRaises(flashc.InvalidArgumentError):
            ring.merge_partials([], [])

    def test_online_merge_is_exact_for_rows_that_saw_no_key(self):
        """A window block's rows may see no key of it (lse = -inf, o = 0): merging it leaves the accumulator
        bit-for-bit as it was, before any data (0 and -inf, no NaN) and after; then real data merges exactly."""
        torch.manual_seed(5)
        for dtype in (torch.float32, torch.float64):
            acc_o, acc_lse = torch.zeros(1, 2, 4, 3, dtype=dtype), torch.full((1, 2, 4), -math.inf, dtype=dtype)
            dead_o, dead_lse = torch.zeros(1, 2, 4, 3, dtype=dtype), torch.full((1, 2, 4), -math.inf)
            ring._merge_into(acc_o, acc_lse, dead_o, dead_lse)
            self.assertTrue(bool((acc_o == 0).all()) and bool((acc_lse == -math.inf).all()))
            o1, lse1 = randn(1, 2, 4, 3).to(dtype), randn(1, 2, 4).float()
            lse1[0, 1, 2] = -math.inf  # one row still dead after this block
            o1[0, 1, 2] = 0
            ring._merge_into(acc_o, acc_lse, o1, lse1)
            self.assertTrue(torch.equal(acc_o, o1))
            self.assertTrue(torch.equal(acc_lse, lse1.to(dtype)))
            before = acc_o.clone(), acc_lse.clone()
            ring._merge_into(acc_o, acc_lse, dead_o, dead_lse)
            self.assertTrue(torch.equal(acc_o, before[0]) and torch.equal(acc_lse, before[1]))

    def test_online_merge_matches(self):
        torch.manual_seed(1)
        outs = [randn(1, 2, 4, 3) for _ in range(3)]
        lses = [randn(1, 2, 4) for _ in range(3)]
        lses[1][0, 0, 0] = -math.inf
        o, lse = ring.merge_partials(outs, lses)
        acc_o, acc_lse = torch.zeros(1, 2, 4, 3), torch.full((1, 2, 4), -math.inf)
        for x, l in zip(outs, lses):
            ring._merge_into(acc_o, acc_lse, x, l)
        self.assertTrue(torch.allclose(acc_o.double(), o, atol=1e-6))
        self.assertTrue(torch.allclose(acc_lse, lse, atol=1e-6))


@requires_torch
class StandInTest(unittest.TestCase):
    def test_kernel_backward_matches_autograd_with_local_o_lse(self):
        torch.manual_seed(2)
        for causal, softcap, sq, sk in ((False, 0.0, 5, 7), (True, 0.0, 7, 5), (True, 2.0, 6, 6)):
            q, k, v, do = randn(2, 4, sq, 8), randn(2, 2, sk, 8), randn(2, 2, sk, 3), randn(2, 4, sq, 3)
            config = AttentionConfig("bf16", 4, 2, 8, value_head_dim=3, causal=causal, softcap=softcap)
            o, lse, grads = reference(config, q, k, v, do)
            got = kernel_backward(q, k, v, o, lse, do, causal, config.scale, config.softcap)
            for g, w in zip(got, grads):
                self.assertTrue(torch.allclose(g, w), (causal, softcap))


@requires_torch
class ShardedTest(unittest.TestCase):
    def setUp(self):
        self.fakes, self.restore = install_stand_in(self)
        torch.manual_seed(3)

    def tearDown(self):
        self.restore()

    def check(self, config, batch, sq, sk, shards, poison=False, path="auto"):
        """path: "auto" (sharded_attention's choice: the halo path where it applies), "ring" (the ring's schedule
        regardless), "halo" (asserts that the halo path applies)."""
        q = randn(batch, config.num_heads, sq, config.head_dim).requires_grad_()
        k = randn(batch, config.num_kv_heads, sk, config.head_dim).requires_grad_()
        v = randn(batch, config.num_kv_heads, sk, config.value_head_dim).requires_grad_()
        layout = ring.sharded_layout(sq, sk, shards, config.causal, config.window)
        if path == "halo":
            self.assertIsNotNone(ring.halo_plans(layout), "the halo path should apply")
        with EnvPatch(FLASHC_POISON_OUTPUTS="1" if poison else None):
            o, lse = ring._sharded_apply(q, k, v, config, layout, path="ring" if path == "ring" else "auto")
            do = randn(*o.shape)
            grads = torch.autograd.grad(o, (q, k, v), do)
        o_ref, lse_ref, grads_ref = reference(config, q, k, v, do)
        self.assertTrue(torch.allclose(o, o_ref, atol=1e-6), "o")
        self.assertTrue(torch.allclose(lse.double(), lse_ref, atol=1e-5), "lse")
        self.assertFalse(lse.requires_grad)
        for name, g, w in zip(("dq", "dk", "dv"), grads, grads_ref):
            self.assertEqual(g.shape, w.shape, name)
            self.assertTrue(torch.allclose(g, w, atol=1e-6), "%s max err %g" % (name, float((g - w).abs().max())))

    def test_shards_causal_and_not(self):
        for shards in (1, 2, 3, 4):
            for causal in (False, True):
                config = AttentionConfig("bf16", 2, 2, 8, causal=causal)
                with self.subTest(shards=shards, causal=causal):
                    self.check(config, 2, 24, 24, shards, poison=True)

    def test_ragged(self):
        for shards in (2, 3, 4):
            with self.subTest(shards=shards, causal=False):
                self.check(AttentionConfig("bf16", 2, 2, 8), 1, 23, 17, shards)
            with self.subTest(shards=shards, causal=True):  # ceil-sized zig-zag chunks, a short last one
                self.check(AttentionConfig("bf16", 2, 2, 8, causal=True), 1, 21, 21, shards)
            with self.subTest(shards=shards, causal=True, cross=True):  # Sq != Sk: pairs that cut the diagonal
                self.check(AttentionConfig("bf16", 2, 2, 8, causal=True), 1, 13, 23, shards)
                self.check(AttentionConfig("bf16", 2, 2, 8, causal=True), 1, 23, 13, shards)

    def test_gqa_softcap_scale_value_dim(self):
        for shards in (2, 3, 4):
            for causal in (False, True):
                config = AttentionConfig("f16", 4, 2, 8, value_head_dim=5, causal=causal, softcap=3.0, scale=0.4)
                with self.subTest(shards=shards, causal=causal):
                    self.check(config, 2, 16, 16, shards)
                self.check(AttentionConfig("bf16", 6, 1, 8, causal=causal), 1, 16, 16, shards)

    def test_windows(self):
        """Sliding windows against the float64 reference, forward and backward: causal and not (contiguous chunks),
        windows smaller than, equal to and larger than the chunks, one side unbounded, Sq != Sk both ways (rows
        that see no key at all: zeros, -inf, no gradient), 1-4 shards; sharded_attention's path (the halo path
        where it applies, else the ring) and the ring's schedule on the same layouts."""
        cases = [(True, w) for w in ((3, 0), (6, 0), (13, 0), (40, 0))] + \
                [(False, w) for w in ((0, 0), (2, 5), (6, 6), (-1, 3), (4, -1), (0, 6), (7, 0))]
        for causal, window in cases:
            config = AttentionConfig("bf16", 2, 2, 8, causal=causal, window=window)
            for sq, sk, all_shards in ((24, 24, (1, 2, 3, 4)), (23, 13, (2, 3)), (13, 23, (2, 4))):
                for shards in all_shards:
                    for path in ("auto", "ring"):
                        with self.subTest(causal=causal, window=window, sq=sq, sk=sk, shards=shards, path=path):
                            self.check(config, 1, sq, sk, shards, poison=shards == 3, path=path)

    def test_halo_windows(self):
        """The halo path against the float64 reference: windows equal to a chunk (both neighbours use all of a
        rank's rows), one-sided, ragged chunks, Sq != Sk, GQA with a softcap, 2-4 shards."""
        cases = [(True, (6, 0), 24, 24, (2, 3, 4)), (False, (6, 6), 24, 24, (2, 3, 4)), (False, (0, 5), 24, 24, (3,)),
                 (False, (5, 0), 23, 23, (3, 4)), (True, (5, 0), 23, 23, (2, 4)), (True, (3, 0), 17, 29, (3,)),
                 (False, (2, 3), 29, 17, (2, 3))]
        for causal, window, sq, sk, all_shards in cases:
            for config in (AttentionConfig("bf16", 2, 2, 8, causal=causal, window=window),
                           AttentionConfig("f16", 4, 2, 8, value_head_dim=5, causal=causal, window=window,
                                           softcap=3.0, scale=0.4)):
                for shards in all_shards:
                    with self.subTest(config=config.describe(), sq=sq, sk=sk, shards=shards):
                        self.check(config, 2, sq, sk, shards, poison=True, path="halo")

    def test_window_gqa_softcap_scale_value_dim(self):
        for causal, window in ((True, (5, 0)), (False, (3, 4))):
            config = AttentionConfig("f16", 4, 2, 8, value_head_dim=5, causal=causal, window=window, softcap=3.0,
                                     scale=0.4)
            for shards in (2, 3):
                with self.subTest(causal=causal, shards=shards):
                    self.check(config, 2, 16, 16, shards)

    def test_window_launches_are_key_offset_blocks(self):
        # Halo path: chunks of 8 rows, window 4: one launch per shard, forward and backward, no merges.
        config = AttentionConfig("bf16", 2, 2, 8, causal=True, window=(4, 0))
        self.check(config, 1, 24, 24, 3, path="halo")
        koff = AttentionConfig("bf16", 2, 2, 8, causal=True, window=(4, 0), key_offset=True)
        self.assertEqual(list(self.fakes), [koff.key])  # nothing but the key-offset twin is loaded
        launches = self.fakes[koff.key].launches
        self.assertEqual([n for n, _ in launches], ["attention0_forward"] * 3 + ["attention0_backward"] * 3)
        self.assertTrue(all("key_offset" in names for _, names in launches))
        # The ring fallback (window 9 > a chunk of 8): one launch per pair of chunks that sees a key.
        config = AttentionConfig("bf16", 2, 2, 8, causal=True, window=(9, 0))
        self.check(config, 1, 24, 24, 3)
        koff = AttentionConfig("bf16", 2, 2, 8, causal=True, window=(9, 0), key_offset=True)
        launches = self.fakes[koff.key].launches
        layout = ring.sharded_layout(24, 24, 3, True, (9, 0))
        self.assertIsNone(ring.halo_plans(layout))
        blocks = sum(len(step.blocks) for r in range(3) for step in ring.ring_schedule(layout, r))
        self.assertEqual([n for n, _ in launches], ["attention0_forward"] * blocks + ["attention0_backward"] * blocks)
        # the 3 diagonal pairs, 2 pairs of neighbours, and rank 2's first row against rank 0's last key
        self.assertEqual(blocks, 6)

    def test_launches(self):
        config = AttentionConfig("bf16", 2, 2, 8, causal=True)
        self.check(config, 1, 24, 24, 3)
        causal = self.fakes[config.key].launches
        full = self.fakes[AttentionConfig("bf16", 2, 2, 8).key].launches
        # 3 ranks x 3 steps, one launch each: 3 causal (step 0) + 6 full, forward and backward
        self.assertEqual([n for n, _ in causal], ["attention0_forward"] * 3 + ["attention0_backward"] * 3)
        self.assertEqual([n for n, _ in full], ["attention0_forward"] * 6 + ["attention0_backward"] * 6)

    def test_public_function_validates(self):
        q = torch.zeros(1, 2, 8, 8, dtype=torch.bfloat16)
        with self.assertRaisesRegex(flashc.InvalidArgumentError, "expected CUDA tensors"):
            ring.sharded_attention(q, q, q, 2, causal=True)
        with self.assertRaisesRegex(flashc.InvalidArgumentError, "expected CUDA tensors"):
            ring.ring_attention(q, q, q)
        with self.assertRaisesRegex(flashc.InvalidArgumentError, "expected CUDA tensors"):
            ring.sharded_attention(q, q, q, 2, causal=True, window=4)
        with self.assertRaisesRegex(flashc.InvalidArgumentError, "expected CUDA tensors"):
            ring.ring_attention(q, q, q, window=(4, 2))
        with self.assertRaisesRegex(flashc.InvalidArgumentError, "path must be 'auto' or 'ring'"):
            ring._ring_apply(q, q, q, AttentionConfig("bf16", 2, 2, 8, window=(4, 2)), path="halo")

    def test_zigzag_shard_roundtrip(self):
        x = torch.arange(16).reshape(1, 1, 16, 1)
        parts = [ring.zigzag_shard(x, 4, r) for r in range(4)]
        self.assertEqual(parts[1].flatten().tolist(), [2, 3, 12, 13])
        self.assertTrue(torch.equal(ring.zigzag_unshard(parts), x))


# ------------------------------------------------------------ the ring over gloo
RING_CASES = [
    # (name, config kwargs, batch, local query lengths, local key lengths)
    ("full", dict(num_heads=2, num_kv_heads=2, head_dim=8), 2, None, None),
    ("causal", dict(num_heads=2, num_kv_heads=2, head_dim=8, causal=True), 2, None, None),
    ("causal-gqa-softcap", dict(num_heads=4, num_kv_heads=2, head_dim=8, value_head_dim=5, causal=True,
                                softcap=3.0), 1, None, None),
    ("ragged", dict(num_heads=4, num_kv_heads=1, head_dim=8), 1, [3, 5, 2, 4], [4, 1, 6, 3]),
    # Sliding windows (contiguous chunks, causal or not). The halo path: a causal window of 4 over chunks of 6, a
    # non-causal (6, 2) (a whole chunk on the left), ragged chunks with a one-sided window. The ring fallback: a
    # causal window of 7 (> a chunk), a non-causal window over ragged ranks with Sq != Sk.
    ("causal-window", dict(num_heads=2, num_kv_heads=2, head_dim=8, causal=True, window=(4, 0)), 2, None, None),
    ("window-halo", dict(num_heads=4, num_kv_heads=2, head_dim=8, window=(6, 2), softcap=3.0), 2, None, None),
    ("window-halo-ragged", dict(num_heads=2, num_kv_heads=1, head_dim=8, window=(0, 3)), 1, [5, 7, 6, 4],
     [5, 7, 6, 4]),
    ("causal-window-wide", dict(num_heads=2, num_kv_heads=2, head_dim=8, causal=True, window=(7, 0)), 2, None,
     None),
    ("window-unbounded", dict(num_heads=2, num_kv_heads=2, head_dim=8, window=(-1, 2)), 1, None, None),
    ("window-ragged", dict(num_heads=4, num_kv_heads=2, head_dim=8, window=(3, 2), softcap=3.0), 1,
     [3, 5, 2, 4], [4, 1, 6, 3]),
]
# The cases the halo path must take (at every world size), and those it must not: {name: from which world size}
# (a causal window of 7 over chunks of 6 fits 2 ranks: rank 1's window stops at key 0).
HALO_CASES = {"causal-window", "window-halo", "window-halo-ragged"}
RING_FALLBACK_CASES = {"causal-window-wide": 3, "window-unbounded": 2}


def ring_case(test, rank, world, group, case, seed, fakes=None, path="auto"):
    """One ring_attention call on this rank, checked against the float64 reference of the whole sequence. Causal
    without a window: zig-zag shards; otherwise contiguous. fakes (the stand-in bundles): also check the halo path's
    one launch forward and one backward, for HALO_CASES."""
    name, kw, batch, q_lens, k_lens = case
    config = AttentionConfig("bf16", **kw)
    causal = config.causal and config.window is None  # the zig-zag layout
    if q_lens is None:
        q_lens = k_lens = [6] * world
    q_lens, k_lens = q_lens[:world], k_lens[:world]
    layout = ring.ring_layout(world, config.causal, q_lens, k_lens, config.window)
    if name in HALO_CASES:
        test.assertTrue(ring.halo_plans(layout) is not None, "%s: the halo path should apply" % name)
    if world >= RING_FALLBACK_CASES.get(name, world + 1):
        test.assertTrue(ring.halo_plans(layout) is None, "%s: the ring should run" % name)
    koff = AttentionConfig("bf16", key_offset=True, **kw).key if config.window is not None else None
    before = len(fakes[koff].launches) if fakes is not None and koff in fakes else 0
    g = torch.Generator().manual_seed(seed)
    sq, sk = sum(q_lens), sum(k_lens)
    q = torch.randn(batch, config.num_heads, sq, config.head_dim, generator=g, dtype=torch.float64)
    k = torch.randn(batch, config.num_kv_heads, sk, config.head_dim, generator=g, dtype=torch.float64)
    v = torch.randn(batch, config.num_kv_heads, sk, config.value_head_dim, generator=g, dtype=torch.float64)
    do = torch.randn(batch, config.num_heads, sq, config.value_head_dim, generator=g, dtype=torch.float64)
    if causal:
        shard = lambda t: ring.zigzag_shard(t, world, rank)
    else:
        shard_q = lambda t: t[:, :, sum(q_lens[:rank]):sum(q_lens[:rank + 1])]
        shard_k = lambda t: t[:, :, sum(k_lens[:rank]):sum(k_lens[:rank + 1])]
    sq_, sk_ = (shard, shard) if causal else (shard_q, shard_k)
    ql, kl, vl = (sq_(q).clone().requires_grad_(), sk_(k).clone().requires_grad_(), sk_(v).clone().requires_grad_())
    o, lse = ring._ring_apply(ql, kl, vl, config, group, path=path)
    grads = torch.autograd.grad(o, (ql, kl, vl), sq_(do))
    if fakes is not None and name in HALO_CASES and path == "auto":
        test.assertEqual([n for n, _ in fakes[koff].launches[before:]], ["attention0_forward", "attention0_backward"],
                         "%s: the halo path is one launch each way" % name)
    o_ref, lse_ref, (dq_ref, dk_ref, dv_ref) = reference(config, q, k, v, do)
    label = "%s rank %d/%d" % (name, rank, world)
    test.assertTrue(torch.allclose(o, sq_(o_ref), atol=1e-6), label + " o")
    test.assertTrue(torch.allclose(lse.double(), sq_(lse_ref.unsqueeze(-1)).squeeze(-1), atol=1e-5), label + " lse")
    for n, got, want in zip(("dq", "dk", "dv"), grads, (sq_(dq_ref), sk_(dk_ref), sk_(dv_ref))):
        test.assertTrue(torch.allclose(got, want, atol=1e-6),
                        "%s %s max err %g" % (label, n, float((got - want).abs().max())))


def _ring_worker(rank, world, init_file, results):
    try:
        import torch.distributed as dist
        torch.set_num_threads(1)
        dist.init_process_group("gloo", init_method="file://" + init_file, rank=rank, world_size=world)
        test = _Unit()
        fakes, restore = install_stand_in(test)
        try:
            for i, case in enumerate(RING_CASES):
                ring_case(test, rank, world, None, case, seed=10 + i, fakes=fakes)
                if case[0] in HALO_CASES:  # the ring on the same contiguous windowed layout
                    ring_case(test, rank, world, None, case, seed=10 + i, path="ring")
        finally:
            restore()
            dist.destroy_process_group()
        results.put((rank, "ok"))
    except BaseException:
        results.put((rank, traceback.format_exc()))


@requires_torch
class RingGlooTest(unittest.TestCase):
    def test_world_size_one_is_the_plain_call(self):
        import torch.distributed as dist
        if not dist.is_available() or not dist.is_gloo_available():
            raise unittest.SkipTest("torch.distributed with gloo is not available")
        fakes, restore = install_stand_in(self)
        with tempfile.TemporaryDirectory() as tmp:
            dist.init_process_group("gloo", init_method="file://" + os.path.join(tmp, "init"), rank=0, world_size=1)
            try:
                for causal in (False, True):
                    config = AttentionConfig("bf16", 4, 2, 8, causal=causal)
                    torch.manual_seed(4)
                    q = randn(2, 4, 10, 8).requires_grad_()
                    k, v = randn(2, 2, 10, 8).requires_grad_(), randn(2, 2, 10, 8).requires_grad_()
                    do = randn(2, 4, 10, 8)
                    o, lse = ring._ring_apply(q, k, v, config)
                    grads = torch.autograd.grad(o, (q, k, v), do)
                    o_p, lse_p = ft._Attention.apply(q, k, v, config)
                    grads_p = torch.autograd.grad(o_p, (q, k, v), do)
                    self.assertTrue(torch.equal(o, o_p))
                    self.assertTrue(torch.equal(lse, lse_p))
                    for g, w in zip(grads, grads_p):
                        self.assertTrue(torch.equal(g, w))
                    # one launch of the configuration itself, forward and backward, per call
                    self.assertEqual([n for n, _ in fakes[config.key].launches],
                                     ["attention0_forward", "attention0_backward"] * 2)
                    ring_case(self, 0, 1, None, RING_CASES[2 if causal else 3], seed=5)
                # A window on one rank: one key-offset launch each way with key_offset = Sk - Sq, as
                # flashc.torch.attention(key_offset=Sk - Sq) computes it.
                config = AttentionConfig("bf16", 4, 2, 8, causal=True, window=(3, 0))
                q = randn(1, 4, 7, 8).requires_grad_()
                k, v = randn(1, 2, 10, 8).requires_grad_(), randn(1, 2, 10, 8).requires_grad_()
                do = randn(1, 4, 7, 8)
                o, lse = ring._ring_apply(q, k, v, config)
                grads = torch.autograd.grad(o, (q, k, v), do)
                koff = dataclasses.replace(config, key_offset=True)
                o_p, lse_p = ft._Attention.apply(q, k, v, koff, 3)
                grads_p = torch.autograd.grad(o_p, (q, k, v), do)
                self.assertTrue(torch.equal(o, o_p) and torch.equal(lse, lse_p))
                for g, w in zip(grads, grads_p):
                    self.assertTrue(torch.equal(g, w))
                self.assertEqual([n for n, _ in fakes[koff.key].launches], ["attention0_forward",
                                                                           "attention0_backward"] * 2)
                for i, case in enumerate(RING_CASES):
                    if case[0] in HALO_CASES:
                        ring_case(self, 0, 1, None, case, seed=20 + i, fakes=fakes)
            finally:
                dist.destroy_process_group()
                restore()

    def test_ring_over_processes(self):
        import multiprocessing
        import torch.distributed as dist
        if not dist.is_available() or not dist.is_gloo_available():
            raise unittest.SkipTest("torch.distributed with gloo is not available")
        ctx = multiprocessing.get_context("spawn")
        for world in (2, 3, 4):
            with self.subTest(world=world), tempfile.TemporaryDirectory() as tmp:
                results = ctx.Queue()
                procs = [ctx.Process(target=_ring_worker, args=(r, world, os.path.join(tmp, "init"), results))
                         for r in range(world)]
                for p in procs:
                    p.start()
                got = {}
                try:
                    for _ in range(world):
                        rank, outcome = results.get(timeout=180)
                        got[rank] = outcome
                finally:
                    for p in procs:
                        p.join(timeout=30)
                        if p.is_alive():
                            p.terminate()
                for rank in range(world):
                    self.assertEqual(got.get(rank), "ok", "rank %d of %d: %s" % (rank, world, got.get(rank)))


if __name__ == "__main__":
    unittest.main()
