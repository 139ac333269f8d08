# A model of a one-tile-a-block attention forward's kernel time (no GPU): each query tile takes a + b x (the key
# blocks it walks), tiles are list-scheduled in the launch order over the SMs (one resident block each), the time is
# the last SM's. With b from the dense causal forward (1.64 us a 128 x 128 block at D = 128: 1.64 ms over 15.5 tiles
# an SM of 64.5 blocks) and a from the window attribute (3.5 us: 276 us for 8.7 blocks a tile), session 41's kernel
# times give: the window attribute 284 us (measured 276), the 13-document row 253 us (measured 337), the window as a
# modifier 284 us (measured 344): what a row costs beyond its blocks and its order is what its mask path costs. (Rows
# of long walks are over-predicted: the dense causal forward 1819 us against 1640, a tile's fixed part overlapping
# more of them; compare rows of like walks, as the window's 8.7 blocks a tile and the documents' 7.1.)
# Kinds `segments` (a document's tiles, its longest first, documents in order: segments.cuh's default map) and
# `segments-longest` (every tile by non-increasing work across documents: session 45's `segment_order=longest`,
# measured level in session 46 and deleted in session 47; kept here as the model that predicted it). --backward models
# the ws backward's key tiles instead: a 128-key tile of a causal document walks its queries from its first key to the
# document's end, 64 a step (a + b x steps; b from the documents' backward main kernel, 611 us, session 44), its grid
# read in groups of 4 heads (tile_schedule.cuh's head groups). Session 45: the documents' backward 3.8 % and forward
# 3.1 % shorter longest first (2.3-6.2 % / 1.4-3.5 % over other draws of 13 documents: --draws).
#   python3 bench/probes/tile_time_model.py [--a-us 3.5] [--b-us 1.64] [--seq 16384] [--heads 16] [--sms 132]
#                                           [--backward] [--draws N]
import argparse
import heapq
import os
import random
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
from flashc.modifier_inputs import document_lengths  # noqa: E402


def segment_walk(lengths, block, unit, longest):
    """A document's tiles of `block` rows, each walking `unit`-row steps of the other side under the causal corner
    (forward: query tile m of 128 sees m + 1 key blocks; backward: key tile n its queries from 128 n, 64 a step), its
    longest first; `longest`: every tile by non-increasing walk across documents."""
    walk = []
    for n in lengths:
        count = -(-n // block)
        walk += [-(-(n - block * i) // unit) for i in range(count)]
    return sorted(walk, reverse=True) if longest else walk


def walks(kind, seq, block, lengths=None, backward=False):
    """Key blocks each query tile of `block` rows walks (causal rows): 'window' (1024 keys), 'documents' (13
    documents of bench_programmable, the table walk's tiles), 'segments' (the same documents, tiles aligned to each
    document's start), 'segments-longest' (those tiles longest first across documents), 'causal'. backward: the key
    tiles' query steps of 64 rows ('segments' kinds only)."""
    lengths = lengths or document_lengths(seq)
    if kind.startswith("segments"):
        return segment_walk(lengths, block, 64 if backward else block, kind == "segments-longest")
    tiles = seq // block
    if kind == "causal":
        return [t + 1 for t in range(tiles)]
    if kind == "window":
        return [min(t + 1, 1024 // block + 1) for t in range(tiles)]
    ids = [d for d, n in enumerate(lengths) for _ in range(n)]
    start = {}
    for i, d in enumerate(ids):
        start.setdefault(d, i)
    return [t - start[ids[t * block]] // block + 1 for t in range(tiles)]


def makespan(walk, a, b, heads, sms, group=1):
    """The last SM's finish: tiles in the launch order (the forward: row block fastest, then head; the backward: groups
    of `group` heads, the tile slowest inside a group), each to the first free SM."""
    free = [0.0] * sms
    heapq.heapify(free)
    for _ in range(heads // group):
        for blocks in walk:
            for _ in range(group):
                heapq.heappush(free, heapq.heappop(free) + a + b * blocks)
    return max(free)


def draws(seq, count):
    """bench_programmable's documents, then other draws of 13 lengths in [256, 2048] that fill `seq`."""
    yield document_lengths(seq)
    rng = random.Random(1)
    while count > 1:
        lengths = [rng.randint(256, 2048) for _ in range(12)]
        if 256 <= seq - sum(lengths) <= 2048:
            count -= 1
            yield lengths + [seq - sum(lengths)]


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--a-us", type=float, default=None, help="a tile's fixed time (us; 3.5 forward, 5 backward)")
    p.add_argument("--b-us", type=float, default=None, help="a key block's (backward: a step's) time (us)")
    p.add_argument("--seq", type=int, default=16384)
    p.add_argument("--heads", type=int, default=16)
    p.add_argument("--sms", type=int, default=132)
    p.add_argument("--block", type=int, default=128)
    p.add_argument("--backward", action="store_true", help="the ws backward's key tiles (segments kinds)")
    p.add_argument("--draws", type=int, default=1, help="document draws for the segments kinds (the first: the bench's)")
    args = p.parse_args()
    a = args.a_us if args.a_us is not None else 5.0 if args.backward else 3.5
    b = args.b_us if args.b_us is not None else 2.5 if args.backward else 1.64
    kinds = ("segments", "segments-longest") if args.backward else ("causal", "window", "documents", "segments",
                                                                    "segments-longest")
    for i, lengths in enumerate(draws(args.seq, args.draws)):
        for kind in kinds:
            if i and not kind.startswith("segments"):
                continue
            walk = walks(kind, args.seq, args.block, lengths, args.backward)
            t = makespan(walk, a, b, args.heads, args.sms, group=4 if args.backward else 1)
            print("%sdraw %d %-16s %6d %s a head, %5.2f a tile: %7.1f us" % (
                "backward " if args.backward else "", i, kind, sum(walk),
                "query steps" if args.backward else "block pairs", sum(walk) / len(walk), t))


if __name__ == "__main__":
    main()
