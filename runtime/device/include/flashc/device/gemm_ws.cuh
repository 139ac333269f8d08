// GEMM, warp-specialised persistent TMA form (sm_90a, 16-bit): C = act(alpha · op(A) · op(B) + bias), or gated
// C = act(A · Bg) ⊙ (A · Bu) (kGated: the gated FFN's up projection).
//   * A persistent grid: block b takes output tiles b, b + gridDim.x, ... of the kBlockM x kBlockN tile grid (128
//     rows; ping-pong 64), in groups of kGroup row blocks of one column block (the tiles in flight share A rows and B
//     columns in L2).
//   * One producer thread streams the K blocks (64 columns of K) of A and B through a ring of kStages slots by TMA
//     (full barrier: the bytes landed; empty barrier: every consumer warp's products that read the slot are done),
//     running on into the next tile while the consumers finish this one.
//   * Two consumer warpgroups of 64 rows keep one wgmma group in flight across ring slots. Cooperative (default):
//     both work on one 128-row tile, then both run its epilogue. Ping-pong (kPingPong): tiles of 64 rows, taken
//     by the warpgroups in turn, so one's epilogue runs under the other's products (the tensor cores do not idle
//     through epilogues: what a short K, a read tile or a saved pre-activation makes long).
//   * The epilogue leaves through shared memory: each warpgroup writes 64 x 64 pieces (bias, activation, the
//     element type) into two alternating buffers, and one thread stores each piece by TMA while the next is
//     written; the stores run on under the next tile's main loop. A form that reads a tensor in its epilogue (C, or
//     P; the gated act_grad P and U, writing C and C2 over them) has a buffer for each piece of each read tile and
//     loads them all by TMA during the tile's main loop, so the epilogue never waits on a DRAM load. Rows and columns
//     past C are clipped by TMA, K past A's columns reads as zeros, so ragged M, N and K need no masks.
//
// Config (static members):
//   using Elem = bf16 | f16;   kAct = Act::...;   kBias (bias [N] given)
//   kTransA   A is stored [K, M] (an MN-major operand: weight gradients xᵀ·dy), else [M, K]
//   kTransB   B is stored [N, K] (K-major: dy·W2ᵀ), else [K, N]; not both transposed
//   kBlockN   128 or 256 columns a tile;   kStages   ring depth;   kGroup   row blocks a raster group
//   kSavePre  also store pre = alpha · op(A) · op(B) + bias before the activation (a training forward)
//   kGated    B is two weights [K, N], Bg and Bu: a slot holds kBlockN columns of each side by side, one
//             m64n(2 kBlockN) product computes both, C = act(g) ⊙ u; kSavePre stores g and u (pre, pre2)
//   kAccumulate  C += act(alpha · op(A) · op(B) + bias): the tile of C is read by TMA into the piece buffers
//   kActGrad  (optional member, default false) C = alpha · op(A) · op(B) ∘ act'(P), the tile of P read through
//             map_pre as kAccumulate reads C: the FFN backward's dpre = (dy·W2ᵀ) ∘ act'(pre) in one kernel
//   kGatedActGrad (optional member, default false; with kActGrad; gemm_ws_gated_act_grad) the gated FFN's: D =
//             alpha · op(A) · op(B), C = (D ∘ U) ∘ act'(P) and C2 = D ∘ act(P), P (g) and U (u) read through map_pre
//             and map_pre2 into a buffer a piece each, C (dg) and C2 (du) written from them in place
//   kBatched  A, C (and pre) are [B, M, *] (3-D maps; B stays [K, N] or [N, K]); not with kTransA. Row blocks
//             are numbered across the batches (batch = row block / ceil(M / 128)), so a tile never spans two.
//   kPingPong (optional member, default false) the ping-pong form above; A's box is 64 rows (cooperative: 128)
//   kGrouped  (optional member, default false; gemm_ws_grouped) the expert GEMMs of a mixture of experts: A and C
//             are the permuted rows of every expert, each expert's rows starting at a multiple of 128 (padded), B
//             one weight an expert, [E, K, N] (kTransB: [E, N, K]; 3-D maps, box (64, rows, 1)). `groups` (int32,
//             device) holds the 128-row blocks in use, then each block's expert: a tile loads its expert's B. Not
//             with kTransA, kBatched or kBias. Row blocks past A's rows are never taken; an expert id outside the
//             weights reads zeros (TMA's bounds).
//   kGroupedK (optional member, default false; gemm_ws_grouped_k) the experts' weight gradients: C [E, M, N] (3-D
//             map), C[e] = op(A)[:, rows of e] · B[rows of e, :] with A stored [rows, M] (kTransA) and B [rows, N],
//             the rows permuted by expert as above; `groups` (int32 [E + 1], device) each expert's first row, every
//             one a multiple of 64 (the padded layout). An expert without rows gets zeros. Not with the other forms.
//   kSplitK   (optional member, default 0; gemm_ws_split_k) weight gradients whose output tiles are too few for the
//             GPU: C (f32, [M, N], zeroed by the caller) += alpha · op(A) · B over slices of kSplitK rows of K (a
//             multiple of 64), a unit being a (slice, tile) pair; A stored [K, M] (kTransA), B [K, N], each unit's
//             sum added from registers by 16-byte reductions (no shared-memory epilogue). Not with the other forms.
//   kProducerRegs, kConsumerRegs   the warpgroups' register budgets (setmaxnreg)
// Launch: grid (min(tiles, SMs)), GemmWsPlan<Config>::kThreads (384) threads, kSmemBytes dynamic shared memory.
// Maps (box, innermost last; 128-byte swizzle): A (1,) kBlockM x 64 ([(B,) M, K]) or 64 x 64 ([K, M]); B 64 x 64
// ([K, N]) or kBlockN x 64 ([N, K]); Bu as Bg (gated); C, C2 (the gated act_grad's), pre and pre2 (1,) 64 x 64.
#pragma once
#include "flashc/device/activation.cuh"
#include "flashc/device/backward.cuh"
#include "flashc/device/emitter_api.cuh"
#include "flashc/device/mbarrier.cuh"
#include "flashc/device/moe_layout.h"
#include "flashc/device/optional_member.cuh"
#include "flashc/device/panel.cuh"
#include "flashc/device/regtile.cuh"
#include "flashc/device/tensor.cuh"
#include "flashc/device/tma.cuh"
#include "flashc/device/types.cuh"
#include "flashc/device/wgmma.cuh"
#include "flashc/device/wgmma_tile.cuh"

namespace flashc {
namespace device {

// The optional members of a Config (optional_member.cuh).
FLASHC_OPTIONAL_MEMBER(ActGradOf, kActGrad, bool, false)
FLASHC_OPTIONAL_MEMBER(GatedActGradOf, kGatedActGrad, bool, false)
FLASHC_OPTIONAL_MEMBER(PingPongOf, kPingPong, bool, false)
FLASHC_OPTIONAL_MEMBER(GroupedOf, kGrouped, bool, false)
FLASHC_OPTIONAL_MEMBER(SplitKOf, kSplitK, int, 0)
FLASHC_OPTIONAL_MEMBER(GroupedKOf, kGroupedK, bool, false)

template <class Config>
struct GemmWsPlan {
  using Elem = typename Config::Elem;
  static constexpr bool kTransA = Config::kTransA, kTransB = Config::kTransB;
  static_assert(!(kTransA && kTransB), "ws GEMM: A and B not both transposed (no wgmma form reads that pair)");
  static_assert(!(kTransA && Config::kBatched), "ws GEMM: a batched A is [B, M, K]");
  static_assert(!(Config::kAccumulate && (Config::kSavePre || Config::kGated)), "ws GEMM: C += ... is a plain GEMM");
  static_assert(!(Config::kGated && Config::kBias), "ws GEMM, gated: no bias (as gated_gemm's op-by-op form)");
  static constexpr bool kActGrad = ActGradOf<Config>::value;
  static_assert(!(kActGrad && (Config::kAccumulate || Config::kSavePre || Config::kGated || Config::kBias)),
                "ws GEMM: C = A·B ∘ act'(P) is a plain GEMM without bias");
  static constexpr bool kGatedActGrad = GatedActGradOf<Config>::value;
  static_assert(!kGatedActGrad || kActGrad, "ws GEMM: the gated act_grad is an act_grad form");
  // The epilogue reads the tile of a tensor (C, or P; the gated act_grad: P and U) into its piece buffers, one a
  // piece, loaded during the main loop; the other forms alternate two buffers a warpgroup.
  static constexpr bool kReadPiece = Config::kAccumulate || kActGrad;
  static constexpr int kTilesRead = kGatedActGrad ? 2 : kReadPiece ? 1 : 0;
  static constexpr bool kPingPong = PingPongOf<Config>::value;
  static constexpr bool kGrouped = GroupedOf<Config>::value;
  static_assert(!(kPingPong && GroupedKOf<Config>::value), "ws GEMM: grouped over K takes cooperative tiles");
  static_assert(!(kGrouped && (kTransA || Config::kBatched || Config::kBias)),
                "ws GEMM, grouped: A [rows, K] (not transposed, not batched), no bias");
  static constexpr int kGroupRows = kMoeGroupRows;  // grouped: each expert's rows start at a multiple of this
  static constexpr bool kGroupedK = GroupedKOf<Config>::value;
  static_assert(!kGroupedK || (kTransA && !kTransB && !Config::kBatched && !kGrouped && !Config::kBias &&
                               !Config::kGated && !Config::kAccumulate && !Config::kSavePre && !kActGrad),
                "ws GEMM, grouped over K (weight gradients): A [rows, M] (kTransA), B [rows, N], no epilogue extras");
  static constexpr int kSplitK = SplitKOf<Config>::value;
  static_assert(kSplitK == 0 || (kSplitK % 64 == 0 && kTransA && !kTransB && !Config::kBatched && !kGrouped &&
                                 !kGroupedK && !Config::kBias && !Config::kGated && !Config::kAccumulate &&
                                 !Config::kSavePre && !kActGrad && !kPingPong),
                "ws GEMM, split over K (weight gradients): A [K, M] (kTransA), B [K, N], slices of whole K blocks, "
                "cooperative tiles, no epilogue extras");
  // Rows a tile: both warpgroups' 64 (cooperative), or one warpgroup's (ping-pong).
  static constexpr int kBlockM = kPingPong ? 64 : 128, kBlockN = Config::kBlockN, kBlockK = 64, kStages = Config::kStages;
  static_assert(kBlockN == 128 || kBlockN == 256, "ws GEMM: 128 or 256 columns a tile");
  static_assert(!Config::kGated || (kBlockN == 128 && !kTransA && !kTransB),
                "ws GEMM, gated: 128 columns of each weight a tile, [M, K] · [K, N] operands");
  // Columns a slot and the accumulator hold: the tile's, or both weights' (gated).
  static constexpr int kBColumns = Config::kGated ? 2 * kBlockN : kBlockN;
  static_assert(kStages >= 2 && kStages <= 8, "ws GEMM: 2-8 ring slots");
  static constexpr int kWarps = 8, kThreads = kWarps * 32 + 128, kProducer = kWarps / 4;
  // Warps whose products read a ring slot (its empty barrier's count): both warpgroups, or the tile's one.
  static constexpr int kSlotReaders = kPingPong ? 4 : kWarps;
  static_assert(warpgroup_budgets_fit(Config::kProducerRegs, Config::kConsumerRegs),
                "setmaxnreg budgets: multiples of 8 within the 168 a thread has at launch (384 threads)");
  using ATile = typename Select<kTransA, SmemPanelTile<Elem, kBlockK, kBlockM>, SmemPanelTile<Elem, kBlockM, kBlockK>>::type;
  using BTile = typename Select<kTransB, SmemPanelTile<Elem, kBlockN, kBlockK>, SmemPanelTile<Elem, kBlockK, kBColumns>>::type;
  using PieceTile = SmemPanelTile<Elem, 64, 64>;  // a warpgroup's 64 x 64 piece of the epilogue
  // A consumer warpgroup's piece buffers (split over K: none, its sums leave by reductions from registers).
  static constexpr int kPieceBuffers = kReadPiece ? kTilesRead * (kBlockN / 64) : kSplitK ? 0 : 2;
  static constexpr int kSmemA = 0, kSmemB = kStages * ATile::kBytes;
  static constexpr int kSmemPieces = kSmemB + kStages * BTile::kBytes;
  static constexpr int kSmemBar = kSmemPieces + 2 * kPieceBuffers * PieceTile::kBytes;
  // Ring barriers; with kReadPiece one more a piece buffer (its piece of C or P landed).
  static constexpr int kBarFull = 0, kBarEmpty = kStages, kBarPiece = 2 * kStages,
                       kNumBars = 2 * kStages + (kReadPiece ? 2 * kPieceBuffers : 0);
  static constexpr int kStageBytes = ATile::kBytes + BTile::kBytes;
  static constexpr int kSmemBytes = kSmemBar + 8 * kNumBars + 1024;  // + slack to align the base
  static_assert(kSmemBytes <= 227 * 1024, "ws GEMM: shared memory plan exceeds 227 KB");
  static constexpr int kBarEpilogue = 1;  // named barriers 1, 2: one a consumer warpgroup
  static constexpr int kBarTurn = 3;      // ping-pong: 3, 4: a warpgroup's turn at the tensor cores
};

// Output tile p of a tiles_m x tiles_n grid, taken in groups of `group` row blocks of one column block.
__device__ __forceinline__ int2 grouped_tile(int p, int tiles_m, int tiles_n, int group) {
  const int per_group = group * tiles_n, first_m = (p / per_group) * group;
  const int rows = min(tiles_m - first_m, group), in_group = p % per_group;
  return make_int2(first_m + in_group % rows, in_group / rows);
}

namespace detail {

// The body of gemm_ws and gemm_ws_grouped (groups: the grouped form's row-block table, else unused).
template <class Config>
__device__ __forceinline__ void gemm_ws_body(const TmaDescriptor& map_a, const TmaDescriptor& map_b,
                                             const TmaDescriptor& map_b2, const TmaDescriptor& map_c,
                                             const TmaDescriptor& map_pre, const TmaDescriptor& map_pre2,
                                             const TensorArg& a, const TensorArg& b, const TensorArg& bias,
                                             const int* groups, int group_count, float alpha,
                                             const TensorArg& c_f32 = TensorArg(),
                                             const TmaDescriptor* map_c2 = nullptr) {
  using P = GemmWsPlan<Config>;
  using Elem = typename P::Elem;
  using ATile = typename P::ATile;
  using BTile = typename P::BTile;
  using PieceTile = typename P::PieceTile;
  constexpr int kBlockM = P::kBlockM, kBlockN = P::kBlockN, kBlockK = P::kBlockK, kStages = P::kStages;
  constexpr bool kTransA = P::kTransA, kTransB = P::kTransB;

  extern __shared__ __align__(1024) unsigned char smem_raw[];
  unsigned char* smem = align_smem_1024(smem_raw);

  constexpr bool kGroupedK = P::kGroupedK;
  constexpr bool kBatched = Config::kBatched;  // (kGroupedK: C is [E, M, N] as a batched C)
  constexpr bool kBatchedC = kBatched || kGroupedK;
  const int M = static_cast<int>(kBatched ? a.shape[1] : kTransA ? a.shape[1] : a.shape[0]);
  const int K = static_cast<int>(kBatched ? a.shape[2] : kTransA ? a.shape[0] : a.shape[1]);
  constexpr bool kGrouped = P::kGrouped;
  const int N = static_cast<int>(b.shape[(kGrouped ? 1 : 0) + (kTransB ? 0 : 1)]);
  constexpr int kSplitK = P::kSplitK;  // (split over K: the slices are the batches, of one C)
  const int batches = kBatched ? static_cast<int>(a.shape[0]) : kGroupedK ? group_count
                      : kSplitK ? (K + kSplitK - 1) / kSplitK : 1;
  int blocks_m = (M + kBlockM - 1) / kBlockM;  // row blocks of one batch
  if constexpr (kGrouped) {  // the row blocks in use (never past A's rows)
    constexpr int kTilesPerGroupBlock = P::kGroupRows / kBlockM;
    const int in_use = groups[0], capacity = M / P::kGroupRows;
    blocks_m = (in_use < 0 ? 0 : in_use < capacity ? in_use : capacity) * kTilesPerGroupBlock;
  }
  const int tiles_m = blocks_m * batches, tiles_n = (N + kBlockN - 1) / kBlockN;
  const int tiles = tiles_m * tiles_n;
  // The K blocks of a tile: all of K, (kGroupedK) the rows of the tile's expert from its first, or (kSplitK) its
  // slice's.
  auto k_range = [&](int batch) {
    if constexpr (kGroupedK) return make_int2(groups[batch], (groups[batch + 1] - groups[batch] + kBlockK - 1) / kBlockK);
    else if constexpr (kSplitK != 0) return make_int2(batch * kSplitK, (min(kSplitK, K - batch * kSplitK) + kBlockK - 1) / kBlockK);
    else return make_int2(0, (K + kBlockK - 1) / kBlockK);
  };
  const int k_blocks = k_range(0).y;  // (every tile's but kGroupedK's)
  const int warpgroup = warp_id() / 4;

  auto a_slot = [&](int s) { return ATile{reinterpret_cast<Elem*>(smem + P::kSmemA + s * ATile::kBytes)}; };
  auto b_slot = [&](int s) { return BTile{reinterpret_cast<Elem*>(smem + P::kSmemB + s * BTile::kBytes)}; };
  auto bar = [&](int i) { return smem_u32(smem + P::kSmemBar) + 8u * i; };

  if (threadIdx.x == 0) {
    for (int s = 0; s < kStages; ++s) {
      mbarrier_init(bar(P::kBarFull + s), 1);
      mbarrier_init(bar(P::kBarEmpty + s), P::kSlotReaders);
    }
    if constexpr (P::kReadPiece)
      for (int b = 0; b < 2 * P::kPieceBuffers; ++b) mbarrier_init(bar(P::kBarPiece + b), 1);
    mbarrier_init_fence();
  }
  __syncthreads();

  // =============================== producer warpgroup ===============================
  if (warpgroup == P::kProducer) {
    warpgroup_reg_dealloc<Config::kProducerRegs>();
    if (threadIdx.x == P::kProducer * 128) {
      tma_prefetch_descriptor(&map_a);
      tma_prefetch_descriptor(&map_b);
      if constexpr (Config::kGated) tma_prefetch_descriptor(&map_b2);
      RingPosition<kStages> slot;
      for (int tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
        const int2 mn = grouped_tile(tile, tiles_m, tiles_n, Config::kGroup);
        const int batch = mn.x / blocks_m, m0 = (mn.x % blocks_m) * kBlockM, n0 = mn.y * kBlockN;
        const int expert = kGrouped ? groups[1 + m0 / P::kGroupRows] : 0;
        const int2 ks = k_range(batch);
        for (int kb = 0; kb < ks.y; ++kb, slot.advance()) {
          const int k0 = ks.x + kb * kBlockK;
          const unsigned full = bar(P::kBarFull + slot.stage);
          mbarrier_wait(bar(P::kBarEmpty + slot.stage), slot.phase ^ 1u);
          mbarrier_arrive_expect_tx(full, P::kStageBytes);
          const ATile as = a_slot(slot.stage);
          const BTile bs = b_slot(slot.stage);
          if constexpr (kTransA) {  // [K, M]: 64 K rows of each 64-column panel of M
#pragma unroll
            for (int p = 0; p < ATile::kPanels; ++p) tma_load_2d(as.base() + p * ATile::kPanelBytes, &map_a, full, m0 + 64 * p, k0);
          } else if constexpr (kBatched) {
            tma_load_3d(as.base(), &map_a, full, k0, m0, batch);
          } else {
            tma_load_2d(as.base(), &map_a, full, k0, m0);
          }
          if constexpr (kTransB) {  // [N, K]: kBlockN rows of one 64-column panel of K
            if constexpr (kGrouped)
              tma_load_3d(bs.base(), &map_b, full, k0, n0, expert);
            else
              tma_load_2d(bs.base(), &map_b, full, k0, n0);
          } else {
            // kBlockN / 64 panels of B (gated: of Bg, then as many of Bu).
#pragma unroll
            for (int p = 0; p < BTile::kPanels; ++p) {
              const bool up = Config::kGated && p >= kBlockN / 64;
              const unsigned dst = bs.base() + p * BTile::kPanelBytes;
              const int col = n0 + 64 * (up ? p - kBlockN / 64 : p);
              if constexpr (kGrouped)
                tma_load_3d(dst, up ? &map_b2 : &map_b, full, col, k0, expert);
              else
                tma_load_2d(dst, up ? &map_b2 : &map_b, full, col, k0);
            }
          }
        }
      }
    }
    return;
  }

  // =============================== consumer warpgroups ==============================
  warpgroup_reg_alloc<Config::kConsumerRegs>();
  constexpr bool kPingPong = P::kPingPong;
  // Cooperative: the 128-row accumulator of both warpgroups (each holds its 64 rows); ping-pong: this one's tile.
  using Acc = RegTileF32<kBlockM, P::kBColumns, kPingPong ? 4 : P::kWarps>;
  Acc acc;
  RingPosition<kStages> slot;
  const int wg_row0 = kPingPong ? 0 : 64 * warpgroup;  // this warpgroup's first row in the tile
  const bool elected = threadIdx.x % 128 == 0;
  int piece = 0;  // pieces this warpgroup has stored: buffer piece & 1 (forms that read no tile)
  unsigned piece_phases = 0;  // kReadPiece: bit j, the phase of piece buffer j's barrier (pieces past N are skipped)

  auto release = [&](int stage) {
    if (lane_id() == 0) mbarrier_arrive(bar(P::kBarEmpty + stage));
  };
  auto issue = [&](int stage) {
    if constexpr (kTransA)
      wgmma_matmul_ta<false>(acc, a_slot(stage), b_slot(stage));
    else if constexpr (kTransB)
      wgmma_matmul_tb<false>(acc, a_slot(stage), b_slot(stage));
    else
      wgmma_matmul<false>(acc, a_slot(stage), b_slot(stage));
  };
  const Elem* bias_data = static_cast<const Elem*>(bias.data);
  const long long bias_stride = Config::kBias ? bias.stride[0] : 0;
  // A saving plain GEMM's accumulator holds pre = alpha · acc + bias once its pre piece is stored (that pass writes
  // it back): the activation's pass then starts from it instead of computing it again.
  constexpr bool kPreInAcc = Config::kSavePre && !Config::kGated;
  // What a piece stores: pre (alpha · acc + bias), act(pre), or act(g) ⊙ u (gated: g the accumulator's column,
  // u kBlockN columns further).
  enum Piece { kPre, kActivated, kGatedProduct };
  auto piece_buffer = [&](int b) {
    return PieceTile{reinterpret_cast<Elem*>(smem + P::kSmemPieces + (P::kPieceBuffers * warpgroup + b) * PieceTile::kBytes)};
  };
  // kReadPiece: the elected thread loads this warpgroup's rows of the tile of C (or P) into the piece buffers, one
  // a 64-column piece, once the previous tile's stores have read them.
  auto load_tile_pieces = [&](int batch, int m0, int n0) {
    if constexpr (P::kReadPiece) {
      if (!elected) return;
      tma_wait_group<0>();
      // Buffer j: the tile's j-th piece of C or P; the gated act_grad's U pieces follow its P pieces.
#pragma unroll
      for (int j = 0; j < P::kPieceBuffers; ++j) {
        constexpr int kPerTile = kBlockN / 64;
        const bool second = P::kGatedActGrad && j >= kPerTile;
        const int col0 = n0 + 64 * (second ? j - kPerTile : j);
        if (col0 >= N) continue;
        const TmaDescriptor* read = second ? &map_pre2 : P::kActGrad ? &map_pre : &map_c;
        const unsigned landed = bar(P::kBarPiece + P::kPieceBuffers * warpgroup + j);
        mbarrier_arrive_expect_tx(landed, PieceTile::kBytes);
        if constexpr (kBatchedC)
          tma_load_3d(piece_buffer(j).base(), read, landed, col0, m0 + wg_row0, batch);
        else
          tma_load_2d(piece_buffer(j).base(), read, landed, col0, m0 + wg_row0);
      }
    }
  };
  // One 64 x 64 piece (the tile's j-th) of this warpgroup's rows, the accumulator's columns from n8 tile nt0 on,
  // for output columns col0.., staged in a buffer, then stored by TMA at (col0, m0 + wg_row0) of `map`.
  // Forms that read no tile alternate two buffers: the elected thread waits for the previous piece's store to have
  // read its buffer before the barrier, so that after it the other buffer (two pieces back) is free.
  auto store_piece = [&](const TmaDescriptor& map, int batch, int m0, int col0, int j, int nt0, Piece what) {
    // The bias of this thread's 16 columns of the piece, read once (columns past N: 0; they are not stored).
    float bias_cols[8][2];
    const bool computes_pre = what == kPre || !kPreInAcc;
    if constexpr (Config::kBias) {
#pragma unroll
      for (int t = 0; t < 8; ++t)
#pragma unroll
        for (int e = 0; e < 2; ++e) {
          const int col = col0 + Acc::col(t, e);
          bias_cols[t][e] = computes_pre && col < N ? to_float(bias_data[col * bias_stride]) : 0.f;
        }
    }
    // Element i of n8 tile t: pre = alpha · acc + bias (a gated GEMM's g and u are the products themselves:
    // gated_gemm has no alpha or bias, as its op-by-op form), then what the piece stores.
    auto value = [&](int t, int i) {
      const int nt = nt0 + t;
      float x = acc.v[0][nt][i];
      if (!Config::kGated && computes_pre) {
        if constexpr (Config::kBias)
          x = fmaf(x, alpha, bias_cols[t][i & 1]);
        else
          x *= alpha;
        if (kPreInAcc && what == kPre) acc.v[0][nt][i] = x;
      }
      if (what == kPre) return x;
      if constexpr (Config::kGated) {
        if (what == kGatedProduct) return act<Config::kAct, true>(x) * acc.v[0][nt + kBlockN / 8][i];
      }
      return act<Config::kAct, true>(x);
    };
    const PieceTile buf = piece_buffer(P::kReadPiece ? j : piece & 1);
    // The gated act_grad's U piece (buffer kBlockN / 64 + j), where du is written in place.
    constexpr int kUp = P::kGatedActGrad ? kBlockN / 64 : 0;
    const PieceTile buf_up = piece_buffer(kUp + j);
    const int r0 = Acc::row(0, 0) - wg_row0;
    // The piece of C (or P, and U) loaded during the main loop; each thread combines its own elements in place.
    if constexpr (P::kReadPiece) {
      mbarrier_wait(bar(P::kBarPiece + P::kPieceBuffers * warpgroup + j), (piece_phases >> j) & 1u);
      piece_phases ^= 1u << j;
      if constexpr (P::kGatedActGrad) {
        mbarrier_wait(bar(P::kBarPiece + P::kPieceBuffers * warpgroup + kUp + j), (piece_phases >> (kUp + j)) & 1u);
        piece_phases ^= 1u << (kUp + j);
      }
    }
    // This thread's words (element pairs) of the piece: at[t][h] in buf, (gated act_grad) at_up[t][h] in buf_up.
    auto word = [&](const PieceTile& tile, int t, int h) {
      return reinterpret_cast<unsigned*>(reinterpret_cast<unsigned char*>(tile.data) + PieceTile::elem_offset(r0 + 8 * h, Acc::col(t, 0)));
    };
    // The read tile's words first, all of them, then the arithmetic: loads and stores interleaved pair by pair
    // would leave each pair's ~15 dependent operations waiting on its own shared load.
    unsigned read[P::kReadPiece ? 8 : 1][2], read_up[P::kGatedActGrad ? 8 : 1][2];
    if constexpr (P::kReadPiece) {
#pragma unroll
      for (int t = 0; t < 8; ++t)
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          read[t][h] = *word(buf, t, h);
          if constexpr (P::kGatedActGrad) read_up[t][h] = *word(buf_up, t, h);
        }
    }
#pragma unroll
    for (int t = 0; t < 8; ++t) {
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        float lo = value(t, 2 * h), hi = value(t, 2 * h + 1);
        if constexpr (Config::kAccumulate) {
          const float2 old = ElemTraits<Elem>::unpack(read[t][h]);
          lo += old.x;
          hi += old.y;
        }
        if constexpr (P::kGatedActGrad) {  // D = alpha · acc: dg = (D ∘ u) ∘ act'(g) over g, du = D ∘ act(g) over u
          const float2 g = ElemTraits<Elem>::unpack(read[t][h]), u = ElemTraits<Elem>::unpack(read_up[t][h]);
          *word(buf_up, t, h) = ElemTraits<Elem>::pack(lo * act<Config::kAct, true>(g.x), hi * act<Config::kAct, true>(g.y));
          lo *= u.x * act_grad<Config::kAct, true>(g.x);
          hi *= u.y * act_grad<Config::kAct, true>(g.y);
        } else if constexpr (P::kActGrad) {  // value() gave alpha · acc here (kPre)
          const float2 p = ElemTraits<Elem>::unpack(read[t][h]);
          lo *= act_grad<Config::kAct, true>(p.x);
          hi *= act_grad<Config::kAct, true>(p.y);
        }
        *word(buf, t, h) = ElemTraits<Elem>::pack(lo, hi);
      }
    }
    fence_async_shared();
    if (!P::kReadPiece && elected) tma_wait_group<0>();
    named_barrier_sync(P::kBarEpilogue + warpgroup, 128);
    if (elected) {
      if constexpr (kBatchedC)
        tma_store_3d(&map, buf.base(), col0, m0 + wg_row0, batch);
      else
        tma_store_2d(&map, buf.base(), col0, m0 + wg_row0);
      if constexpr (P::kGatedActGrad) {
        if constexpr (kBatchedC)
          tma_store_3d(map_c2, buf_up.base(), col0, m0 + wg_row0, batch);
        else
          tma_store_2d(map_c2, buf_up.base(), col0, m0 + wg_row0);
      }
      tma_commit_group();
    }
    ++piece;
  };

  // The block's i-th tile is blockIdx.x + i · gridDim.x. Ping-pong: warpgroup w takes i = w, w + 2, ...; the
  // producer fills the ring in tile order, so that tile's first slot is ring position i · k_blocks. The
  // warpgroups take turns at the main loop (named barriers kBarTurn + w): a warpgroup waits for a slot's fill
  // only after the other has waited for every earlier fill, so no wait runs two phases ahead of its barrier
  // (a parity wait could not tell those apart), and the tensor cores serve one main loop at a time.
  auto tile_of = [&](int i) { return static_cast<int>(blockIdx.x) + i * static_cast<int>(gridDim.x); };
  for (int i = kPingPong ? warpgroup : 0; tile_of(i) < tiles; i += kPingPong ? 2 : 1) {
    const int2 mn = grouped_tile(tile_of(i), tiles_m, tiles_n, Config::kGroup);
    const int batch = mn.x / blocks_m, m0 = (mn.x % blocks_m) * kBlockM, n0 = mn.y * kBlockN;
    if constexpr (kPingPong) {
      const long long position = static_cast<long long>(i) * k_blocks;
      slot.stage = static_cast<int>(position % kStages);
      slot.phase = static_cast<unsigned>(position / kStages) & 1u;
      if (i > 0) named_barrier_sync(P::kBarTurn + warpgroup, 256);  // the other warpgroup's main loop is issued
    }
    fill(acc, 0.f);
    wgmma_fence_operand(acc);
    int previous = -1;
    const int tile_k_blocks = kGroupedK || kSplitK != 0 ? k_range(batch).y : k_blocks;
    if (tile_k_blocks == 0) load_tile_pieces(batch, m0, n0);
    for (int kb = 0; kb < tile_k_blocks; ++kb, slot.advance()) {
      mbarrier_wait(bar(P::kBarFull + slot.stage), slot.phase);
      issue(slot.stage);
      if (kb == 0) load_tile_pieces(batch, m0, n0);  // under the first products
      wgmma_wait<1>();  // the previous K block's products are done: its slot goes back
      if (previous >= 0) release(previous);
      previous = slot.stage;
    }
    // Ping-pong: the next tile's warpgroup may start (every fill of this tile has landed); its main loop runs
    // under this one's epilogue.
    if constexpr (kPingPong)
      if (tile_of(i + 1) < tiles) named_barrier_arrive(P::kBarTurn + (warpgroup ^ 1), 256);
    wgmma_wait<0>();
    if (previous >= 0) release(previous);

    if constexpr (kSplitK != 0) {  // this slice's sum into C (f32, zeroed by the caller): rows past M skipped
      if (alpha != 1.f)
#pragma unroll
        for (int nt = 0; nt < Acc::kNT; ++nt)
#pragma unroll
          for (int e = 0; e < 4; ++e) acc.v[0][nt][e] *= alpha;
      const GlobalMatrix<float> c_tile{static_cast<float*>(c_f32.data) + n0, c_f32.stride[0], M, N - n0};
      atomic_add_row_segments(c_tile, m0, acc);
    } else {
      // Epilogue: pre (stored when kSavePre; gated: g and u), C = act(pre) (gated: act(g) ⊙ u). Pieces past N are
      // skipped.
#pragma unroll
      for (int j = 0; j < kBlockN / 64; ++j) {
        const int col0 = n0 + 64 * j;
        if (col0 >= N) break;
        if constexpr (Config::kSavePre) {
          store_piece(map_pre, batch, m0, col0, j, 8 * j, kPre);
          if constexpr (Config::kGated) store_piece(map_pre2, batch, m0, col0, j, kBlockN / 8 + 8 * j, kPre);
        }
        store_piece(map_c, batch, m0, col0, j, 8 * j, Config::kGated ? kGatedProduct : P::kActGrad ? kPre : kActivated);
      }
    }
  }
  if (elected) tma_wait_group<0, false>();  // the last stores leave shared memory before the block does
}

}  // namespace detail

// The kernel body; call it from a __launch_bounds__(kThreads, 1) kernel whose maps are `const __grid_constant__`
// parameters. a gives M and K (transposed: [K, M]), b gives N; map_b2 / bias / map_pre / map_pre2 may be unused.
template <class Config>
__device__ __forceinline__ void gemm_ws(const TmaDescriptor& map_a, const TmaDescriptor& map_b,
                                        const TmaDescriptor& map_b2, const TmaDescriptor& map_c,
                                        const TmaDescriptor& map_pre, const TmaDescriptor& map_pre2, const TensorArg& a,
                                        const TensorArg& b, const TensorArg& bias, float alpha) {
  static_assert(!GemmWsPlan<Config>::kGrouped && !GemmWsPlan<Config>::kGroupedK && GemmWsPlan<Config>::kSplitK == 0 &&
                    !GemmWsPlan<Config>::kGatedActGrad,
                "ws GEMM: a grouped, split or gated act_grad Config runs through gemm_ws_grouped, gemm_ws_grouped_k, "
                "gemm_ws_split_k or gemm_ws_gated_act_grad");
  detail::gemm_ws_body<Config>(map_a, map_b, map_b2, map_c, map_pre, map_pre2, a, b, bias, nullptr, 0, alpha);
}

// The gated FFN's act_grad (Config::kGatedActGrad): from D = alpha · op(a) · op(b), dg = (D ∘ u) ∘ act'(g) through
// map_dg and du = D ∘ act(g) through map_du, g and u read through map_g and map_u (64 x 64 boxes, as C's).
template <class Config>
__device__ __forceinline__ void gemm_ws_gated_act_grad(const TmaDescriptor& map_a, const TmaDescriptor& map_b,
                                                       const TmaDescriptor& map_dg, const TmaDescriptor& map_du,
                                                       const TmaDescriptor& map_g, const TmaDescriptor& map_u,
                                                       const TensorArg& a, const TensorArg& b, float alpha) {
  static_assert(GemmWsPlan<Config>::kGatedActGrad, "ws GEMM: gemm_ws_gated_act_grad takes a gated act_grad Config");
  detail::gemm_ws_body<Config>(map_a, map_b, map_b, map_dg, map_g, map_u, a, b, TensorArg(), nullptr, 0, alpha,
                               TensorArg(), &map_du);
}

// The form split over K (Config::kSplitK): c (f32 [M, N], zeroed) += alpha · aᵀ · b with a [K, M], b [K, N]. Launch:
// grid (min(tiles · cdiv(K, kSplitK), SMs)).
template <class Config>
__device__ __forceinline__ void gemm_ws_split_k(const TmaDescriptor& map_a, const TmaDescriptor& map_b,
                                                const TensorArg& a, const TensorArg& b, const TensorArg& c,
                                                float alpha) {
  static_assert(GemmWsPlan<Config>::kSplitK != 0, "ws GEMM: gemm_ws_split_k takes a Config split over K");
  detail::gemm_ws_body<Config>(map_a, map_b, map_b, map_a, map_a, map_a, a, b, TensorArg(), nullptr, 0, alpha, c);
}

// The grouped form (Config::kGrouped): a [rows, K] the permuted rows (each expert's from a multiple of 128), b [E, K,
// N] (kTransB: [E, N, K]) with 3-D maps map_b / map_b2, groups int32 [1 + rows / 128]: the row blocks in use, then
// each block's expert. Launch: grid (min(tiles of the rows' upper bound, SMs)); blocks past the ones in use idle.
template <class Config>
__device__ __forceinline__ void gemm_ws_grouped(const TmaDescriptor& map_a, const TmaDescriptor& map_b,
                                                const TmaDescriptor& map_b2, const TmaDescriptor& map_c,
                                                const TmaDescriptor& map_pre, const TmaDescriptor& map_pre2,
                                                const TensorArg& a, const TensorArg& b, const TensorArg& groups,
                                                float alpha) {
  static_assert(GemmWsPlan<Config>::kGrouped, "ws GEMM: gemm_ws_grouped takes a grouped Config");
  detail::gemm_ws_body<Config>(map_a, map_b, map_b2, map_c, map_pre, map_pre2, a, b, TensorArg(),
                               static_cast<const int*>(groups.data), 0, alpha);
}

// The grouped-over-K form (Config::kGroupedK): c[e] = alpha · a[rows of e, :]ᵀ · b[rows of e, :] for the experts' weight
// gradients. a [rows, M] (map: box 64 x 64 of [rows, M]), b [rows, N], map_c 3-D over c [E, M, N], groups int32
// [E + 1] each expert's first row (multiples of 64; groups[E] the rows in use). Launch: grid (min(E · tiles of
// [M, N], SMs)).
template <class Config>
__device__ __forceinline__ void gemm_ws_grouped_k(const TmaDescriptor& map_a, const TmaDescriptor& map_b,
                                                  const TmaDescriptor& map_c, const TensorArg& a, const TensorArg& b,
                                                  const TensorArg& groups, float alpha) {
  static_assert(GemmWsPlan<Config>::kGroupedK, "ws GEMM: gemm_ws_grouped_k takes a Config grouped over K");
  detail::gemm_ws_body<Config>(map_a, map_b, map_b, map_c, map_c, map_c, a, b, TensorArg(),
                               static_cast<const int*>(groups.data), static_cast<int>(groups.shape[0]) - 1, alpha);
}

}  // namespace device
}  // namespace flashc
