# A model of a one-tile-a-block attention forward's kernel time (no GPU): each query tile takes a + b x (the key
# blocks it walks), tiles are list-scheduled in the launch order over the SMs (one resident block each), the time is
# the last SM's. With b from the dense causal forward (1.64 us a 128 x 128 block at D = 128: 1.64 ms over 15.5 tiles
# an SM of 64.5 blocks) and a from the window attribute (3.5 us: 276 us for 8.7 blocks a tile), session 41's kernel
# times give: the window attribute 284 us (measured 276), the 13-document row 253 us (measured 337), the window as a
# modifier 284 us (measured 344): what a row costs beyond its blocks and its order is what its mask path costs. (Rows
# of long walks are over-predicted: the dense causal forward 1819 us against 1640, a tile's fixed part overlapping
# more of them; compare rows of like walks, as the window's 8.7 blocks a tile and the documents' 7.1.)
#   python3 bench/probes/tile_time_model.py [--a-us 3.5] [--b-us 1.64] [--seq 16384] [--heads 16] [--sms 132]
import argparse
import heapq
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
from flashc.modifier_inputs import document_lengths  # noqa: E402


def walks(kind, seq, block):
    """Key blocks each query tile of `block` rows walks (causal rows): 'window' (1024 keys), 'documents' (13
    documents of bench_programmable, the table walk's tiles), 'segments' (the same documents, tiles aligned to each
    document's start), 'causal'."""
    tiles = seq // block
    if kind == "causal":
        return [t + 1 for t in range(tiles)]
    if kind == "window":
        return [min(t + 1, 1024 // block + 1) for t in range(tiles)]
    if kind == "segments":  # session 43's segment form: tiles aligned to each document's start, its longest first
        walk = []
        for n in document_lengths(seq):
            count = -(-n // block)
            walk += [count - i for i in range(count)]
        return walk
    ids = [d for d, n in enumerate(document_lengths(seq)) for _ in range(n)]
    start = {}
    for i, d in enumerate(ids):
        start.setdefault(d, i)
    return [t - start[ids[t * block]] // block + 1 for t in range(tiles)]


def makespan(walk, a, b, heads, sms):
    """The last SM's finish: tiles in the launch order (row block fastest, then head), each to the first free SM."""
    free = [0.0] * sms
    heapq.heapify(free)
    for _ in range(heads):
        for blocks in walk:
            heapq.heappush(free, heapq.heappop(free) + a + b * blocks)
    return max(free)


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--a-us", type=float, default=3.5, help="a tile's fixed time (us)")
    p.add_argument("--b-us", type=float, default=1.64, help="a key block's time (us)")
    p.add_argument("--seq", type=int, default=16384)
    p.add_argument("--heads", type=int, default=16)
    p.add_argument("--sms", type=int, default=132)
    p.add_argument("--block", type=int, default=128)
    args = p.parse_args()
    for kind in ("causal", "window", "documents", "segments"):
        walk = walks(kind, args.seq, args.block)
        t = makespan(walk, args.a_us, args.b_us, args.heads, args.sms)
        print("%-9s %6d block pairs a head, %5.2f a tile: %7.1f us" % (kind, sum(walk), sum(walk) / len(walk), t))


if __name__ == "__main__":
    main()
