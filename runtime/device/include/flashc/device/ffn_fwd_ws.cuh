// Fused FFN forward, warp-specialised TMA form (sm_90a): y = act(x·W1 + b1)·W2 + b2 for model widths
// d <= 256 and d_out <= 256, the hidden activation never leaving the SM. The attention forward's
// schedule (attention_fwd_ws.cuh) with the activation in place of the online softmax:
//   * x's 128-row block is resident (TMA, once); W1's columns and W2's rows of one hidden block of
//     kBlockN stream through a ring of kStages slots (full barrier: TMA bytes landed; empty barrier:
//     every consumer warp done reading). Both weight tiles are MN-major wgmma operands ([K][N] rows,
//     N contiguous), as V is in attention.
//   * Two consumer warpgroups of 64 rows: H_j = x·W1_j is issued (SS), then y += P_{j-1}·W2_{j-1}
//     (RS, P in registers); the bias and activation of H_j run while that product is in flight.
//     Optional ping-pong between the warpgroups (named barriers), as in attention.
//   * Hidden columns past h and rows past d read as zeros (the TMA zero-fills out-of-bounds boxes);
//     act(0) = 0 for every activation here, so the padding adds nothing to y.
//
// Config (static members):
//   using Elem = bf16 | f16;   kAct = Act::...;   kBias1, kBias2 (b1 [h], b2 [d_out] given)
//   kInDim      x / W1 tile width: a multiple of 64 up to 256 (d padded to whole panels)
//   kOutDim     W2 / y tile width: 64, 128 or 256 (the N of the P·W2 wgmma)
//   kOutCols    y's columns (d_out <= kOutDim, a multiple of 8)
//   kBlockN     hidden columns a block: 64 or 128
//   kStages     W1/W2 ring depth
//   kBatched    x and y are [B, M, *] (grid z = batch), else [M, *]
//   kSavePre    the training forward: pre = x·W1 + b1 and h = act(pre) [(B,) M, hidden] are stored too,
//               from the registers as each hidden block is activated (h a multiple of 8)
//   kPingPong, kProducerRegs, kConsumerRegs   the schedule (#tile.warp_specialized)
// Launch: grid (ceil(M / 128), 1, batch); FfnFwdWsPlan<Config>::kThreads (384) threads; kSmemBytes
// dynamic shared memory. Maps (box, innermost last): x (1,) 128 x 64, W1 kInDim x 64, W2 kBlockN x 64,
// 128B swizzle.
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
#include "flashc/device/ws_epilogue.cuh"

namespace flashc {
namespace device {

template <class Config>
struct FfnFwdWsPlan {
  using Elem = typename Config::Elem;
  static constexpr int kInDim = Config::kInDim, kOutDim = Config::kOutDim, kOutCols = Config::kOutCols;
  static_assert(kInDim % 64 == 0 && kInDim <= 256, "ws FFN: d tile a multiple of 64 up to 256");
  static_assert(kOutDim == 64 || kOutDim == 128 || kOutDim == 256, "ws FFN: d_out tile 64, 128 or 256");
  static_assert(kOutCols > 0 && kOutCols <= kOutDim && kOutCols % 8 == 0, "ws FFN: y's columns, 16-byte chunks");
  static constexpr int kBlockM = 128, kBlockN = Config::kBlockN, kStages = Config::kStages;
  static_assert(kBlockN == 64 || kBlockN == 128, "ws FFN: 64 or 128 hidden columns a block");
  // A consumer thread holds y (kOutDim / 2 floats), H (kBlockN / 2) and P (kBlockN / 4 packed).
  static_assert(kOutDim / 2 + kBlockN * 3 / 4 <= 176, "ws FFN: y, H and P overflow the consumer registers");
  static constexpr int kWarps = 8, kThreads = kWarps * 32 + 128, kProducer = kWarps / 4;
  static_assert(warpgroup_budgets_fit(Config::kProducerRegs, Config::kConsumerRegs),
                "setmaxnreg budgets: multiples of 8 within the 168 a thread has at launch (384 threads)");
  using XTile = SmemPanelTile<Elem, kBlockM, kInDim>;
  using YTile = SmemPanelTile<Elem, kBlockM, kOutDim>;  // the epilogue's staging, over x
  using W1Tile = SmemPanelTile<Elem, kInDim, kBlockN>;  // [d][hidden block]
  using W2Tile = SmemPanelTile<Elem, kBlockN, kOutDim>;  // [hidden block][d_out]
  static constexpr int kSmemX = 0;
  static constexpr int kSmemW1 = XTile::kBytes > YTile::kBytes ? XTile::kBytes : YTile::kBytes;
  static constexpr int kSmemW2 = kSmemW1 + kStages * W1Tile::kBytes;
  static constexpr int kSmemBar = kSmemW2 + kStages * W2Tile::kBytes;
  static constexpr int kBarX = 0, kBarW1Full = 1, kBarW1Empty = kBarW1Full + kStages,
                       kBarW2Full = kBarW1Empty + kStages, kBarW2Empty = kBarW2Full + kStages,
                       kNumBars = kBarW2Empty + kStages;
  static constexpr int kSmemBytes = kSmemBar + 8 * kNumBars + 1024;  // + slack to align the base
  static_assert(kSmemBytes <= 227 * 1024, "ws FFN: shared memory plan exceeds 227 KB");
  static constexpr int kBarTurn = 1, kBarEpilogue = 3;  // named barriers, as attention_fwd_ws
};

// Rows [row, row + box) of a 2-D (cols, rows) or 3-D (cols, rows, batch) map into every panel.
template <bool kBatched, class Tile>
__device__ __forceinline__ void tma_load_row_panels(Tile dst, const TmaDescriptor* map, unsigned bar, int row,
                                                    int batch) {
#pragma unroll
  for (int p = 0; p < Tile::kPanels; ++p) {
    if constexpr (kBatched)
      tma_load_3d(dst.base() + p * Tile::kPanelBytes, map, bar, 64 * p, row, batch);
    else
      tma_load_2d(dst.base() + p * Tile::kPanelBytes, map, bar, 64 * p, row);
  }
}

// The kernel body; call it from a __launch_bounds__(kThreads, 1) kernel whose maps are
// `const __grid_constant__` parameters. x gives M, w1 gives h; b1 / b2 / pre / h_out may be unused
// arguments.
template <class Config>
__device__ __forceinline__ void ffn_fwd_ws(const TmaDescriptor& tma_x, const TmaDescriptor& tma_w1,
                                           const TmaDescriptor& tma_w2, const TensorArg& x, const TensorArg& w1,
                                           const TensorArg& b1, const TensorArg& b2, const TensorArg& y,
                                           const TensorArg& pre, const TensorArg& h_out) {
  using P = FfnFwdWsPlan<Config>;
  using Elem = typename P::Elem;
  using XTile = typename P::XTile;
  using YTile = typename P::YTile;
  using W1Tile = typename P::W1Tile;
  using W2Tile = typename P::W2Tile;
  constexpr int kBlockM = P::kBlockM, kBlockN = P::kBlockN, kStages = P::kStages, kWarps = P::kWarps;
  constexpr bool kBatched = Config::kBatched, kPingPong = Config::kPingPong;

  extern __shared__ __align__(1024) unsigned char smem_raw[];
  unsigned char* smem = align_smem_1024(smem_raw);

  const int M = static_cast<int>(kBatched ? x.shape[1] : x.shape[0]);
  const int hidden = static_cast<int>(w1.shape[1]);
  const int batch = blockIdx.z, m0 = blockIdx.x * kBlockM;
  const int n_blocks = (hidden + kBlockN - 1) / kBlockN;
  const int warpgroup = warp_id() / 4;

  const XTile Xs{reinterpret_cast<Elem*>(smem + P::kSmemX)};
  auto w1_tile = [&](int s) { return W1Tile{reinterpret_cast<Elem*>(smem + P::kSmemW1 + s * W1Tile::kBytes)}; };
  auto w2_tile = [&](int s) { return W2Tile{reinterpret_cast<Elem*>(smem + P::kSmemW2 + s * W2Tile::kBytes)}; };
  auto bar = [&](int i) { return smem_u32(smem + P::kSmemBar) + 8u * i; };
  auto phase = [](int it) { return static_cast<unsigned>(it / kStages) & 1u; };

  if (threadIdx.x == 0) {
    mbarrier_init(bar(P::kBarX), 1);
    for (int s = 0; s < kStages; ++s) {
      mbarrier_init(bar(P::kBarW1Full + s), 1);
      mbarrier_init(bar(P::kBarW2Full + s), 1);
      mbarrier_init(bar(P::kBarW1Empty + s), kWarps);
      mbarrier_init(bar(P::kBarW2Empty + s), kWarps);
    }
    mbarrier_init_fence();
  }
  __syncthreads();

  // =============================== producer warpgroup ===============================
  if (warpgroup == P::kProducer) {
    warpgroup_reg_dealloc<Config::kProducerRegs>();
    if (threadIdx.x == P::kProducer * 128) {
      tma_prefetch_descriptor(&tma_x);
      tma_prefetch_descriptor(&tma_w1);
      tma_prefetch_descriptor(&tma_w2);
      mbarrier_arrive_expect_tx(bar(P::kBarX), XTile::kBytes);
      tma_load_row_panels<kBatched>(Xs, &tma_x, bar(P::kBarX), m0, batch);
      for (int it = 0; it < n_blocks; ++it) {
        const int s = it % kStages, n0 = it * kBlockN;
        mbarrier_wait(bar(P::kBarW1Empty + s), phase(it) ^ 1);
        mbarrier_arrive_expect_tx(bar(P::kBarW1Full + s), W1Tile::kBytes);
#pragma unroll
        for (int p = 0; p < W1Tile::kPanels; ++p)  // W1[0:d, n0 + 64p ..]: columns of the hidden block
          tma_load_2d(w1_tile(s).base() + p * W1Tile::kPanelBytes, &tma_w1, bar(P::kBarW1Full + s), n0 + 64 * p, 0);
        mbarrier_wait(bar(P::kBarW2Empty + s), phase(it) ^ 1);
        mbarrier_arrive_expect_tx(bar(P::kBarW2Full + s), W2Tile::kBytes);
        tma_load_row_panels<false>(w2_tile(s), &tma_w2, bar(P::kBarW2Full + s), n0, 0);
      }
    }
    return;
  }

  // =============================== consumer warpgroups ==============================
  warpgroup_reg_alloc<Config::kConsumerRegs>();
  RegTileF32<kBlockM, P::kOutDim, kWarps> acc_y;   // this warpgroup's 64 rows of y
  RegTileF32<kBlockM, kBlockN, kWarps> h;          // x·W1 of the current hidden block
  RegTile16<Elem, kBlockM, kBlockN, kWarps> p;     // act(h + b1) of the previous block (A of P·W2)
  fill(acc_y, 0.f);

  auto release = [&](int b) {
    if (lane_id() == 0) mbarrier_arrive(bar(b));
  };
  auto turn_wait = [&] {
    if (kPingPong) named_barrier_sync(P::kBarTurn + warpgroup, 256);
  };
  auto turn_pass = [&](bool last) {
    if (kPingPong && !(warpgroup == 1 && last)) named_barrier_arrive(P::kBarTurn + (warpgroup ^ 1), 256);
  };
  // H = x·W1_j (SS: x K-major, this warpgroup's 64 rows; W1_j MN-major) and y += P·W2_j (RS: P from
  // registers, W2_j MN-major): the tile ops' wgmma forms, issued without waiting.
  auto issue_xw1 = [&](int stage) {
    fill(h, 0.f);
    wgmma_matmul<false>(h, Xs, w1_tile(stage));
  };
  auto issue_pw2 = [&](int stage) { wgmma_matmul<false>(acc_y, p, w2_tile(stage)); };
  // Columns it * kBlockN.. of a saved [(B,) M, hidden] tensor (the training forward).
  auto saved_block = [&](const TensorArg& t, int it) {
    GlobalMatrix<Elem> m = kBatched ? matrix_at<Elem>(t, batch) : matrix_at<Elem>(t);
    m.base += it * kBlockN;
    m.cols -= it * kBlockN;
    return m;
  };
  // H = act(H + b1) over hidden columns it * kBlockN.. (past h: H = 0, b1 skipped, act(0) = 0).
  auto activate = [&](int it) {
    if constexpr (Config::kBias1) add_bias(h, vector_at<Elem>(b1), it * kBlockN, hidden);
    if constexpr (Config::kSavePre) store_fragments_converted(saved_block(pre, it), m0, h);
    activation<Config::kAct, true>(h);  // 16-bit results: SFU tanh, fast divide
  };
  // P = H in the element type, the A operand of P·W2 (the training forward also stores it: h).
  auto convert_p = [&](int it) {
    convert(p, h);
    if constexpr (Config::kSavePre) store_fragments(saved_block(h_out, it), m0, p);
  };

  if (n_blocks > 0) {
    if (kPingPong && warpgroup == 1) named_barrier_arrive(P::kBarTurn + 0, 256);
    mbarrier_wait(bar(P::kBarX), 0);
    mbarrier_wait(bar(P::kBarW1Full + 0), 0);
    turn_wait();
    issue_xw1(0);
    turn_pass(n_blocks == 1);
    wgmma_wait<0>();
    release(P::kBarW1Empty + 0);
    activate(0);
    convert_p(0);
    for (int it = 1; it < n_blocks; ++it) {
      const int cur = it % kStages, prev = (it - 1) % kStages;
      mbarrier_wait(bar(P::kBarW1Full + cur), phase(it));
      turn_wait();
      issue_xw1(cur);
      mbarrier_wait(bar(P::kBarW2Full + prev), phase(it - 1));
      issue_pw2(prev);
      turn_pass(it == n_blocks - 1);
      wgmma_wait<1>();  // H_it complete; P_{it-1}·W2 may still run
      release(P::kBarW1Empty + cur);
      activate(it);
      wgmma_wait<0>();  // p is free again, the W2 slot too
      release(P::kBarW2Empty + prev);
      convert_p(it);
    }
    const int last = (n_blocks - 1) % kStages;
    mbarrier_wait(bar(P::kBarW2Full + last), phase(n_blocks - 1));
    issue_pw2(last);
    wgmma_wait<0>();
    release(P::kBarW2Empty + last);
  }

  // =============================== epilogue ==============================
  if constexpr (Config::kBias2) add_bias(acc_y, vector_at<Elem>(b2), 0, P::kOutCols);
  RegTile16<Elem, kBlockM, P::kOutDim, kWarps> y_out;
  convert(y_out, acc_y);
  // Staged in this warpgroup's own rows of the x tile (its last x·W1 has completed); rows >= M and padded
  // columns are not stored.
  store_warpgroup_rows<P::kOutCols>(YTile{reinterpret_cast<Elem*>(smem + P::kSmemX)}, y_out,
                                    kBatched ? matrix_at<Elem>(y, batch) : matrix_at<Elem>(y), m0, M, warpgroup,
                                    P::kBarEpilogue + warpgroup);
}

}  // namespace device
}  // namespace flashc
