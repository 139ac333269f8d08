// The persistent GEMM's walk with its last, partial wave split over K (stream-K on the tail).
//
// A persistent grid of G blocks over T output tiles takes ceil(T / G) tile-times when every tile is whole: with
// T = 15.5 G (a d = 4096 FFN's GEMMs of 2048 128 x 256 tiles on 132 SMs) half the SMs idle through the last
// tile-time, 3 % of the kernel. Here the first W = floor(T / G) waves stay whole (block b takes tiles b, b + G, ...)
// and the K blocks of the R = T - W·G tiles left are dealt out evenly, a contiguous run of L of them to each of S
// blocks (the tail's iterations, tile after tile): the kernel then takes W + L / k_blocks tile-times.
//
// A tile of the tail is summed by the blocks whose runs cross it. The one holding its last K block finishes it (the
// epilogue); each other one leaves its partial sum in its own f32 slot of `partials` and raises its flag; the
// finisher waits for the flags of the blocks before it that touch the tile and adds their slots. A block's run
// covers at most two tiles (L <= k_blocks), so it has at most one partial: slot = block. It takes its partial
// first, then the piece it finishes, so that no block waits on a block that is itself waiting; a block only waits
// on lower-numbered blocks, which the GPU starts first.
//
// Plain C++ on the host too (the runtime's unit test walks every block's units by brute force).
#pragma once

#if defined(__CUDACC__)
#define FLASHC_TAIL_FN __host__ __device__ __forceinline__
#else
#define FLASHC_TAIL_FN inline
#endif

namespace flashc {
namespace device {

// One unit of a block's walk: K blocks [k_begin, k_end) of `tile`; `finishes`: it holds the tile's last K block and
// runs the epilogue, after adding the partials of blocks [first_contributor, this block) (none when k_begin = 0).
struct GemmUnit {
  int tile, k_begin, k_end;
  bool finishes;
  int first_contributor;
};

struct TailSplit {
  static constexpr int kMinBlocks = 4;  // the shortest run worth a partial's write and read (K blocks)
  static constexpr int kMaxShare = 4;   // blocks a tail tile is split over, at most (the finisher reads 3 slots)

  int tiles, k_blocks;
  int whole_tiles;  // W · G, taken whole (all of them without a split)
  int run;          // L: K blocks a tail block takes (0: no split)
  int tail_blocks;  // S: blocks with a run

  // The split for `tiles` tiles of `k_blocks` K blocks on `blocks` blocks with `slots` partial slots: none (run = 0)
  // where every block has the same number of tiles, the last wave is nearly full (whole tiles then cost little
  // more), the runs would be short, or the grid has more blocks than slots.
  FLASHC_TAIL_FN static TailSplit plan(int tiles, int k_blocks, int blocks, int slots) {
    TailSplit s{tiles, k_blocks, tiles, 0, 0};
    if (blocks <= 0 || blocks > slots || tiles < blocks) return s;
    const int rest = tiles % blocks;
    if (rest == 0 || 4 * rest > 3 * blocks) return s;
    const int spread = rest * kMaxShare < blocks ? rest * kMaxShare : blocks;
    const long long iterations = static_cast<long long>(rest) * k_blocks;
    const int run = static_cast<int>((iterations + spread - 1) / spread);
    if (run < kMinBlocks || run >= k_blocks) return s;
    s.whole_tiles = tiles - rest;
    s.run = run;
    s.tail_blocks = static_cast<int>((iterations + run - 1) / run);
    return s;
  }

  // Units this block takes: its whole tiles, then 0-2 pieces of the tail.
  FLASHC_TAIL_FN int units(int block, int blocks) const {
    const int whole = block < whole_tiles ? (whole_tiles - 1 - block) / blocks + 1 : 0;
    if (run == 0 || block >= tail_blocks) return whole;
    const int begin = block * run, end = min_int(begin + run, (tiles - whole_tiles) * k_blocks);
    return whole + ((end - 1) / k_blocks != begin / k_blocks ? 2 : 1);
  }

  // The block's u-th unit (u < units(block, blocks)). Every thread of the block computes the same sequence.
  FLASHC_TAIL_FN GemmUnit unit(int u, int block, int blocks) const {
    const int whole = block < whole_tiles ? (whole_tiles - 1 - block) / blocks + 1 : 0;
    if (u < whole) return GemmUnit{block + u * blocks, 0, k_blocks, true, block};
    // The run [begin, end) of the tail's iterations: one piece, or the end of tile t and the start of t + 1.
    const int begin = block * run, end = min_int(begin + run, (tiles - whole_tiles) * k_blocks);
    const int t = begin / k_blocks, t_last = (end - 1) / k_blocks;
    GemmUnit first{whole_tiles + t, begin - t * k_blocks, t == t_last ? end - t * k_blocks : k_blocks, false,
                   (t * k_blocks) / run};  // the block holding the tile's first K block
    first.finishes = first.k_end == k_blocks;
    if (t == t_last) return first;
    // Two pieces: the first finishes its tile. The second starts t + 1: the block's partial unless the run ends
    // with that tile too; a partial is taken first.
    GemmUnit second{whole_tiles + t_last, 0, end - t_last * k_blocks, false, block};
    second.finishes = second.k_end == k_blocks;
    return (u == whole) == !second.finishes ? second : first;
  }

 private:
  FLASHC_TAIL_FN static int min_int(int a, int b) { return a < b ? a : b; }
};

#if defined(__CUDACC__)
// A partial's flag: raised (release: the slot's stores before it) by the block that wrote the slot, read (acquire)
// by the block that finishes the tile.
__device__ __forceinline__ void atomic_store_release_gpu(int* flag, int value) {
  asm volatile("st.release.gpu.global.b32 [%0], %1;" ::"l"(flag), "r"(value) : "memory");
}
__device__ __forceinline__ int atomic_load_acquire_gpu(const int* flag) {
  int value;
  asm volatile("ld.acquire.gpu.global.b32 %0, [%1];" : "=r"(value) : "l"(flag) : "memory");
  return value;
}
#endif

}  // namespace device
}  // namespace flashc

#undef FLASHC_TAIL_FN
