"""A model of the segment form's grid tail: the greedy block scheduler (each block to the first free SM, one block an
SM, in launch order) over a document row's tiles, in the documents' order and longest first across documents
(`segment_order=longest`, segments.cuh). A block's time is its steps plus a fixed overhead (K / V or Q loads, the
epilogue), in units of one step. It predicts; the H200 measures (bench/results/*-session45-prepared/).

    PYTHONPATH=python python3 bench/probes/segment_order_model.py [--seq 16384] [--heads 16] [--sms 132]
"""
import argparse
import heapq
import math
import random

from flashc.modifier_inputs import document_lengths


def makespan(blocks, sms):
    free = [0.0] * sms
    for b in blocks:
        heapq.heappush(free, heapq.heappop(free) + b)
    return max(free)


def backward_tiles(lengths, overhead, block_n=128, step=64):
    """Key tile n of a causal document of L tokens walks the queries from 128 n to L, 64 a step."""
    return [[math.ceil((length - block_n * n) / step) + overhead for n in range(math.ceil(length / block_n))]
            for length in lengths]


def forward_tiles(lengths, overhead, block_m=128, block_n=128):
    """Query tile m of a causal document sees m + 1 key blocks (the forward launches a document's longest first)."""
    return [[m + 1 + overhead for m in reversed(range(math.ceil(length / block_m)))] for length in lengths]


def grid(per_document, heads, group, longest):
    """The launch order: the map (documents in order, or every tile by non-increasing work), read by the backward in
    groups of `group` (head, batch) pairs with the tile slowest inside a group (the forward: group 1, a head's tiles
    together)."""
    tiles = [t for doc in per_document for t in doc]
    if longest:
        tiles = sorted(tiles, reverse=True)
    return [t for _ in range(heads // group) for t in tiles for _ in range(group)]


def draws(seq, count):
    yield document_lengths(seq)
    rng = random.Random(1)
    while count > 1:
        lengths = [rng.randint(256, 2048) for _ in range(12)]
        if 256 <= seq - sum(lengths) <= 2048:
            count -= 1
            yield lengths + [seq - sum(lengths)]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seq", type=int, default=16384)
    parser.add_argument("--heads", type=int, default=16)
    parser.add_argument("--sms", type=int, default=132)
    parser.add_argument("--draws", type=int, default=5)
    args = parser.parse_args()
    print("| documents | pass | overhead (steps) | ideal | documents' order | longest first | gain |")
    print("|---|---|---|---|---|---|---|")
    for i, lengths in enumerate(draws(args.seq, args.draws)):
        for name, tiles, group in (("backward", backward_tiles, 4), ("forward", forward_tiles, 1)):
            for overhead in (1, 2):
                per_document = tiles(lengths, overhead)
                total = sum(t for doc in per_document for t in doc) * args.heads / args.sms
                ordered = makespan(grid(per_document, args.heads, group, False), args.sms)
                longest = makespan(grid(per_document, args.heads, group, True), args.sms)
                print(f"| draw {i} ({len(lengths)}) | {name} | {overhead} | {total:.1f} | {ordered:.1f} | {longest:.1f} "
                      f"| {100 * (ordered / longest - 1):.1f} % |")


if __name__ == "__main__":
    main()
