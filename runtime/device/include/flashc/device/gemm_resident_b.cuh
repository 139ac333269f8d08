// GEMM with B resident in shared memory (sm_90a, 16-bit): C = act(alpha · A · op(B) + bias), or the FFN backward's
// dpre = (alpha · A · op(B)) ∘ act'(P) (kActGrad), for a short contraction (K ≤ kResidentK, at most 256).
//
// Why: at K = 256 the persistent GEMM (gemm_ws) reloads a [K, kBlockN] slab of B from L2 for every 64-row tile, 4x
// the bytes of A's tile, and its epilogue reads and writes a tile of the same size: the kernel runs at L2 / DRAM
// latency rather than at the tensor cores. Here a block takes a contiguous run of output tiles in column-block-major
// order, so it keeps one column block of B (all of K) in shared memory for the whole run (at most one reload where
// the run crosses into the next column block), and streams only A's tiles (all of K at once) and, for kActGrad, P's.
//   * One producer thread: B's slab when a run enters a column block (after both consumers are done with the old
//     one: an empty barrier that each warp of its last two tiles arrives on), then per tile A's 64 rows into a ring of kStages slots and P's tile into the
//     taking warpgroup's next buffer (two a warpgroup).
//   * Two consumer warpgroups take the 64-row tiles in turn (ping-pong: a named barrier each, as gemm_ws), so one's
//     epilogue runs under the other's products and each ring slot is waited by one warpgroup in ring order.
//   * Epilogue: each thread reads its elements of P from the buffer, writes C over them, and one thread stores the
//     tile by TMA; the buffer goes back to the producer once that store has read it.
// Config (static members): Elem (bf16 | f16), kTransB (B stored [N, K], else [K, N]), kAct, kBias, kActGrad,
// kBlockN (128 or 256 columns a tile), kResidentK (the largest K, a multiple of 64), kStages (A ring slots),
// kProducerRegs, kConsumerRegs. A is stored [M, K].
// Launch: grid (min(tiles, SMs)), GemmResidentBPlan<Config>::kThreads (384) threads, kSmemBytes dynamic shared
// memory. Maps (128-byte swizzle, innermost first): A box 64 x 64; B kBlockN x 64 ([N, K]) or 64 x 64 ([K, N]);
// C and P 64 x 64. Rows and columns past C are clipped by TMA, K past A's columns reads as zeros.
#pragma once
#include "flashc/device/activation.cuh"
#include "flashc/device/emitter_api.cuh"
#include "flashc/device/mbarrier.cuh"
#include "flashc/device/panel.cuh"
#include "flashc/device/regtile.cuh"
#include "flashc/device/tensor.cuh"
#include "flashc/device/tma.cuh"
#include "flashc/device/types.cuh"
#include "flashc/device/wgmma.cuh"
#include "flashc/device/wgmma_tile.cuh"

namespace flashc {
namespace device {

template <class Config>
struct GemmResidentBPlan {
  using Elem = typename Config::Elem;
  static constexpr bool kTransB = Config::kTransB, kActGrad = Config::kActGrad;
  static_assert(!(kActGrad && Config::kBias), "resident-B GEMM: C = A·B ∘ act'(P) has no bias");
  static constexpr int kBlockM = 64, kBlockN = Config::kBlockN, kBlockK = 64, kStages = Config::kStages;
  static constexpr int kKBlocks = Config::kResidentK / kBlockK;
  static_assert(Config::kResidentK % kBlockK == 0 && kKBlocks >= 1 && kKBlocks <= 4,
                "resident-B GEMM: K up to 256, whole blocks of 64");
  static_assert(kBlockN == 128 || kBlockN == 256, "resident-B GEMM: 128 or 256 columns a tile");
  static_assert(kStages >= 2 && kStages <= 4, "resident-B GEMM: 2-4 slots of A");
  static constexpr int kWarps = 8, kThreads = kWarps * 32 + 128, kProducer = kWarps / 4;
  static_assert(warpgroup_budgets_fit(Config::kProducerRegs, Config::kConsumerRegs),
                "setmaxnreg budgets: multiples of 8 within the 168 a thread has at launch (384 threads)");
  using ATile = SmemPanelTile<Elem, kBlockM, kBlockK>;  // one K block of a tile's rows
  using BTile = typename Select<kTransB, SmemPanelTile<Elem, kBlockN, kBlockK>, SmemPanelTile<Elem, kBlockK, kBlockN>>::type;
  using PieceTile = SmemPanelTile<Elem, 64, 64>;
  static constexpr int kPieces = kBlockN / 64;  // 64 x 64 pieces of a tile of C (and P)
  static constexpr int kBuffers = 2;            // tile buffers a consumer warpgroup
  static constexpr int kSmemB = 0, kSmemA = kKBlocks * BTile::kBytes;
  static constexpr int kSmemOut = kSmemA + kStages * kKBlocks * ATile::kBytes;
  static constexpr int kSmemBar = kSmemOut + 2 * kBuffers * kPieces * PieceTile::kBytes;
  // Barriers: B's slab landed / released; A's ring; each consumer's tile buffers (P landed / C stored).
  static constexpr int kBarBFull = 0, kBarBEmpty = 1, kBarAFull = 2, kBarAEmpty = 2 + kStages,
                       kBarOutFull = 2 + 2 * kStages, kBarOutEmpty = kBarOutFull + 2 * kBuffers,
                       kNumBars = kBarOutEmpty + 2 * kBuffers;
  static constexpr int kSmemBytes = kSmemBar + 8 * kNumBars + 1024;  // + slack to align the base
  static_assert(kSmemBytes <= 227 * 1024, "resident-B GEMM: shared memory plan exceeds 227 KB");
  static constexpr int kBarEpilogue = 1;  // named barriers 1, 2: one a consumer warpgroup
  static constexpr int kBarTurn = 3;      // 3, 4: a warpgroup's turn at the tensor cores
};

// The body; call it from a __launch_bounds__(kThreads, 1) kernel whose maps are `const __grid_constant__`
// parameters. a [M, K] gives M and K, b gives N; map_pre is read only with kActGrad, bias only with kBias.
template <class Config>
__device__ __forceinline__ void gemm_resident_b(const TmaDescriptor& map_a, const TmaDescriptor& map_b,
                                                const TmaDescriptor& map_c, const TmaDescriptor& map_pre,
                                                const TensorArg& a, const TensorArg& b, const TensorArg& bias,
                                                float alpha) {
  using P = GemmResidentBPlan<Config>;
  using Elem = typename P::Elem;
  using ATile = typename P::ATile;
  using BTile = typename P::BTile;
  using PieceTile = typename P::PieceTile;
  constexpr int kBlockM = P::kBlockM, kBlockN = P::kBlockN, kBlockK = P::kBlockK, kStages = P::kStages;
  constexpr int kPieces = P::kPieces;

  extern __shared__ __align__(1024) unsigned char smem_raw[];
  unsigned char* smem = align_smem_1024(smem_raw);

  const int M = static_cast<int>(a.shape[0]), K = static_cast<int>(a.shape[1]);
  const int N = static_cast<int>(b.shape[P::kTransB ? 0 : 1]);
  if (K > Config::kResidentK) __trap();  // the plan's bound (the runtime checks shapes against the manifest first)
  const int k_blocks = (K + kBlockK - 1) / kBlockK;
  const int tiles_m = (M + kBlockM - 1) / kBlockM, tiles_n = (N + kBlockN - 1) / kBlockN;
  // This block's run: tiles [first, end) in column-block-major order (tile t: column block t / tiles_m).
  const long long tiles = static_cast<long long>(tiles_m) * tiles_n;
  const int first = static_cast<int>(tiles * blockIdx.x / gridDim.x);
  const int count = static_cast<int>(tiles * (blockIdx.x + 1) / gridDim.x) - first;
  auto column_block = [&](int i) { return (first + i) / tiles_m; };
  auto row_block = [&](int i) { return (first + i) % tiles_m; };
  const int warpgroup = warp_id() / 4;

  auto a_tile = [&](int s, int kb) {
    return ATile{reinterpret_cast<Elem*>(smem + P::kSmemA + (s * P::kKBlocks + kb) * ATile::kBytes)};
  };
  auto b_tile = [&](int kb) { return BTile{reinterpret_cast<Elem*>(smem + P::kSmemB + kb * BTile::kBytes)}; };
  // Piece j of tile buffer q of consumer warpgroup w.
  auto piece_tile = [&](int w, int q, int j) {
    return PieceTile{reinterpret_cast<Elem*>(smem + P::kSmemOut + ((w * P::kBuffers + q) * kPieces + j) * PieceTile::kBytes)};
  };
  auto bar = [&](int i) { return smem_u32(smem + P::kSmemBar) + 8u * i; };

  if (threadIdx.x == 0) {
    mbarrier_init(bar(P::kBarBFull), 1);
    mbarrier_init(bar(P::kBarBEmpty), 8);  // each warp of the column block's last two tiles
    for (int s = 0; s < kStages; ++s) {
      mbarrier_init(bar(P::kBarAFull + s), 1);
      mbarrier_init(bar(P::kBarAEmpty + s), 4);
    }
    for (int q = 0; q < 2 * P::kBuffers; ++q) {
      mbarrier_init(bar(P::kBarOutFull + q), 1);
      mbarrier_init(bar(P::kBarOutEmpty + q), 1);
    }
    mbarrier_init_fence();
  }
  __syncthreads();

  // =============================== producer warpgroup ===============================
  if (warpgroup == P::kProducer) {
    warpgroup_reg_dealloc<Config::kProducerRegs>();
    if (threadIdx.x == P::kProducer * 128) {
      tma_prefetch_descriptor(&map_a);
      tma_prefetch_descriptor(&map_b);
      if constexpr (P::kActGrad) tma_prefetch_descriptor(&map_pre);
      RingPosition<kStages> slot;
      unsigned b_phase = 0;
      for (int i = 0; i < count; ++i) {
        const int n0 = column_block(i) * kBlockN, m0 = row_block(i) * kBlockM;
        if (i == 0 || column_block(i) != column_block(i - 1)) {  // B's slab for this column block
          if (i > 0) {
            mbarrier_wait(bar(P::kBarBEmpty), b_phase);
            b_phase ^= 1u;
          }
          const unsigned full = bar(P::kBarBFull);
          mbarrier_arrive_expect_tx(full, P::kKBlocks * BTile::kBytes);
#pragma unroll
          for (int kb = 0; kb < P::kKBlocks; ++kb) {
            const BTile bt = b_tile(kb);
            if constexpr (P::kTransB) {  // [N, K]: kBlockN rows of one 64-column panel of K
              tma_load_2d(bt.base(), &map_b, full, kb * kBlockK, n0);
            } else {
#pragma unroll
              for (int p = 0; p < BTile::kPanels; ++p) tma_load_2d(bt.base() + p * BTile::kPanelBytes, &map_b, full, n0 + 64 * p, kb * kBlockK);
            }
          }
        }
        {  // A's rows m0.. (all of K)
          mbarrier_wait(bar(P::kBarAEmpty + slot.stage), slot.phase ^ 1u);
          const unsigned full = bar(P::kBarAFull + slot.stage);
          mbarrier_arrive_expect_tx(full, P::kKBlocks * ATile::kBytes);
#pragma unroll
          for (int kb = 0; kb < P::kKBlocks; ++kb) tma_load_2d(a_tile(slot.stage, kb).base(), &map_a, full, kb * kBlockK, m0);
          slot.advance();
        }
        // (A piece wholly past N is loaded too: TMA fills it with zeros and counts its bytes; never stored.)
        if constexpr (P::kActGrad) {  // P's tile into the taking warpgroup's buffer (its (i / 2)-th tile)
          const int w = i & 1, q = (i >> 1) & 1;
          const unsigned parity = static_cast<unsigned>(i >> 2) & 1u;
          mbarrier_wait(bar(P::kBarOutEmpty + w * P::kBuffers + q), parity ^ 1u);
          const unsigned full = bar(P::kBarOutFull + w * P::kBuffers + q);
          mbarrier_arrive_expect_tx(full, kPieces * PieceTile::kBytes);
#pragma unroll
          for (int j = 0; j < kPieces; ++j) tma_load_2d(piece_tile(w, q, j).base(), &map_pre, full, n0 + 64 * j, m0);
        }
      }
    }
    return;
  }

  // =============================== consumer warpgroups ==============================
  warpgroup_reg_alloc<Config::kConsumerRegs>();
  using Acc = RegTileF32<kBlockM, kBlockN, 4>;
  Acc acc;
  const bool elected = threadIdx.x % 128 == 0;
  const Elem* bias_data = static_cast<const Elem*>(bias.data);
  const long long bias_stride = Config::kBias ? bias.stride[0] : 0;
  int stored = -1;  // this warpgroup's buffer whose store is in flight (its release pending), or -1
  auto release_stored = [&]() {  // the store has read its buffer: it goes back to the producer
    if (stored >= 0 && elected) {
      tma_wait_group<0>();
      if constexpr (P::kActGrad) mbarrier_arrive(bar(P::kBarOutEmpty + warpgroup * P::kBuffers + stored));
    }
    stored = -1;
  };

  for (int i = warpgroup; i < count; i += 2) {
    const int n0 = column_block(i) * kBlockN, m0 = row_block(i) * kBlockM;
    const int segment_first = i == 0 || column_block(i) != column_block(i - 1);
    // The tiles of this column block in the run: the last two release B's slab once their products are done.
    const bool last = i + 1 == count || column_block(i + 1) != column_block(i);
    const bool second_last = !last && (i + 2 == count || column_block(i + 2) != column_block(i));
    const bool alone = last && segment_first;  // the only tile of its column block: releases for both
    RingPosition<kStages> slot;
    slot.stage = i % kStages;
    slot.phase = static_cast<unsigned>(i / kStages) & 1u;
    if (i > 0) named_barrier_sync(P::kBarTurn + warpgroup, 256);  // the other warpgroup's products are issued
    if (segment_first) mbarrier_wait(bar(P::kBarBFull), static_cast<unsigned>(column_block(i) - column_block(0)) & 1u);
    mbarrier_wait(bar(P::kBarAFull + slot.stage), slot.phase);
    fill(acc, 0.f);
    wgmma_fence_operand(acc);
    for (int kb = 0; kb < k_blocks; ++kb) {
      if constexpr (P::kTransB)
        wgmma_matmul_tb<false>(acc, a_tile(slot.stage, kb), b_tile(kb));
      else
        wgmma_matmul<false>(acc, a_tile(slot.stage, kb), b_tile(kb));
    }
    if (i + 1 < count) named_barrier_arrive(P::kBarTurn + (warpgroup ^ 1), 256);  // the next tile may start
    release_stored();  // the previous tile's store, under these products
    wgmma_wait<0>();
    if (lane_id() == 0) {  // each warp's products are done with the slot (and B's slab)
      mbarrier_arrive(bar(P::kBarAEmpty + slot.stage));
      if (last || second_last) mbarrier_arrive(bar(P::kBarBEmpty));
      if (alone) mbarrier_arrive(bar(P::kBarBEmpty));
    }

    // Epilogue: C = act(alpha · acc + bias) or (alpha · acc) ∘ act'(P), written over this tile's buffer.
    const int q = (i >> 1) & 1;
    // (Without P: the buffer's last store, two tiles back, was waited for before the previous tile's barrier.)
    if constexpr (P::kActGrad)
      mbarrier_wait(bar(P::kBarOutFull + warpgroup * P::kBuffers + q), static_cast<unsigned>(i >> 2) & 1u);
    const int r0 = Acc::row(0, 0);
#pragma unroll
    for (int j = 0; j < kPieces; ++j) {
      const PieceTile buf = piece_tile(warpgroup, q, j);
      auto word = [&](int t, int h) {  // this thread's pair of elements (row r0 + 8h, n8 tile t) of the piece
        return reinterpret_cast<unsigned*>(reinterpret_cast<unsigned char*>(buf.data) + PieceTile::elem_offset(r0 + 8 * h, Acc::col(t, 0)));
      };
      // P's words first, all of them, then the arithmetic (a load per pair before its ~15 dependent operations
      // would expose the shared-memory latency to each).
      unsigned p_words[P::kActGrad ? 8 : 1][2];
      if constexpr (P::kActGrad) {
#pragma unroll
        for (int t = 0; t < 8; ++t)
#pragma unroll
          for (int h = 0; h < 2; ++h) p_words[t][h] = *word(t, h);
      }
#pragma unroll
      for (int t = 0; t < 8; ++t) {
        const int nt = 8 * j + t;
        float bias_lo = 0.f, bias_hi = 0.f;
        if constexpr (Config::kBias) {
          const int col = n0 + 64 * j + Acc::col(t, 0);
          if (col < N) bias_lo = to_float(bias_data[col * bias_stride]);
          if (col + 1 < N) bias_hi = to_float(bias_data[(col + 1) * bias_stride]);
        }
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          float lo = fmaf(acc.v[0][nt][2 * h], alpha, bias_lo), hi = fmaf(acc.v[0][nt][2 * h + 1], alpha, bias_hi);
          if constexpr (P::kActGrad) {
            const float2 p = ElemTraits<Elem>::unpack(p_words[t][h]);
            lo *= act_grad<Config::kAct, true>(p.x);
            hi *= act_grad<Config::kAct, true>(p.y);
          } else {
            lo = act<Config::kAct, true>(lo);
            hi = act<Config::kAct, true>(hi);
          }
          *word(t, h) = ElemTraits<Elem>::pack(lo, hi);
        }
      }
    }
    fence_async_shared();
    named_barrier_sync(P::kBarEpilogue + warpgroup, 128);
    if (elected) {
#pragma unroll
      for (int j = 0; j < kPieces; ++j)
        if (n0 + 64 * j < N) tma_store_2d(&map_c, piece_tile(warpgroup, q, j).base(), n0 + 64 * j, m0);
      tma_commit_group();
    }
    stored = q;
  }
  if (elected) tma_wait_group<0, false>();  // the last stores leave shared memory before the block does
}

}  // namespace device
}  // namespace flashc
