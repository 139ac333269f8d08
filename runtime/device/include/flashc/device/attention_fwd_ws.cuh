// Attention forward, warp-specialised TMA form (FlashAttention-3 style, sm_90a): the body of the
// golden kernel test/GPU/golden/attention_fwd_ws.cu as one device function, so that the lab's
// golden kernel and the compiler's emitted warp-specialised forward are the same code.
//   * TMA: Q, K, V arrive by cp.async.bulk.tensor from 4-D tensor maps (D, S, H, B) with the 128B
//     swizzle, i.e. straight into the SmemPanelTile layout the wgmma descriptors read; completion is
//     counted on mbarriers (expect_tx). Rows past Sq/Sk are zero-filled by the TMA unit.
//   * Warp specialisation: the last warpgroup is the producer (one thread issues every copy, the
//     warpgroup gives its registers back: setmaxnreg.dec); the kConsumerWarpgroups before it consume,
//     64 query rows each (setmaxnreg.inc). K and V sit in a ring of kStages slots, each with a full
//     barrier (TMA bytes landed) and an empty barrier (every consumer warp done reading).
//   * Overlap inside a warpgroup: S_j = Q K_j^T is issued, then O += P_{j-1} V_{j-1}; the softmax
//     of S_j runs while the P V product is still in the tensor cores (wgmma.wait_group 1).
//   * Ping-pong between the consumer warpgroups (named barriers 1.., round robin): a warpgroup issues
//     its two GEMMs only in its turn, so one's softmax overlaps the others' GEMMs.
//
// Config (a struct with these static members; AttentionFwdWsPlan derives the rest):
//   using Elem = bf16 | f16;
//   kHeadDim        Q/K tile width: a multiple of 64 up to 256 (whole 128-byte panels)
//   kValueDim       V/O tile width: 64, 128 or 256 (the N of the P V wgmma)
//   kValueCols      o's columns (<= kValueDim, a multiple of 8): a head dim below the tile width is padded:
//                   the TMA zero-fills Q, K, V past the tensors' columns (zeros add nothing to Q K^T or P V)
//                   and the epilogue stores kValueCols
//   kBlockN         keys per block: 64 or 128 (D = Dv = 256: 64, or the accumulators spill), or 192 (Dv <= 128, two
//                   consumer warpgroups, no softcap, no modifier that reads tensors or is not separable)
//   kStages         K/V ring depth (D = 128: 2 fits 227 KB; D = 64 can take 3-4)
//   kGroup          query heads per KV head (GQA); 0: q.shape[1] / k.shape[1] at run time
//   kWindowLeft, kWindowRight   Window<L, R> mask (causal: -1, 0; none: -1, -1)
//   kScale, kSoftcap            softmax scale; tanh softcap (0: none)
//   ScoreMod (optional)         a score modifier (score_mod.cuh: a printed tile.score_mod), not with a softcap
//   kPingPong       the consumer warpgroups take turns issuing their GEMMs
//   kLongestFirst   the grid takes the last query-row blocks first (causal: the longest)
//   kPersistent     a grid of min(units, SMs) blocks that loop over pairs of query-row blocks
//                   (tile_schedule.cuh); a block's next tile loads under its last tile's epilogue
//   kProducerRegs, kConsumerRegs   setmaxnreg budgets (e.g. 24, 240: 128 x 24 + 256 x 240 <= 384 x 168)
//   kConsumerWarpgroups   2 (128 query rows a tile) or 3 (192 rows: FlashAttention-3's tile at head dims <= 96;
//                   512 threads, so the budgets come from 128 a thread: e.g. 24, 160). The turns go round robin.
// (flash-warp-specialize decides the last four for the compiler's kernels: #tile.warp_specialized.)
// Launch: grid (ceil(Sq / kBlockM), heads_q, batch), or persistent (min(persistent_units(ceil(Sq / kBlockM),
// heads_q, batch), SMs), 1, 1); AttentionFwdWsPlan<Config>::kThreads (384, or 512 with three consumer
// warpgroups) threads; kSmemBytes dynamic shared memory. The maps: 4-D (D, S, H, B) of q, k, v with box
// (64, kBlockM or kBlockN, 1, 1) and the 128B swizzle; o [B, H, Sq, Dv] row-contiguous, lse [B, H, Sq] f32
// (natural log).
#pragma once
#include "flashc/device/mask.cuh"
#include "flashc/device/mask_blocks.cuh"
#include "flashc/device/mbarrier.cuh"
#include "flashc/device/panel.cuh"
#include "flashc/device/regtile.cuh"
#include "flashc/device/score_mod.cuh"
#include "flashc/device/segments.cuh"
#include "flashc/device/smem.cuh"
#include "flashc/device/softmax.cuh"
#include "flashc/device/tensor.cuh"
#include "flashc/device/tile_schedule.cuh"
#include "flashc/device/tma.cuh"
#include "flashc/device/types.cuh"
#include "flashc/device/varlen.cuh"
#include "flashc/device/wgmma.cuh"
#include "flashc/device/wgmma_tile.cuh"
#include "flashc/device/ws_epilogue.cuh"

namespace flashc {
namespace device {

// Schedule and memory plan of the ws forward for one Config.
template <class Config>
struct AttentionFwdWsPlan {
  using Elem = typename Config::Elem;
  static constexpr int kHeadDim = Config::kHeadDim, kValueDim = Config::kValueDim, kValueCols = Config::kValueCols;
  static_assert(kValueCols > 0 && kValueCols <= kValueDim && kValueCols % 8 == 0,
                "ws forward: o's columns within the V tile, 16-byte chunks");
  static_assert(kHeadDim % 64 == 0 && kHeadDim <= 256, "ws forward: Q/K head dim a multiple of 64 up to 256");
  static_assert(kValueDim == 64 || kValueDim == 128 || kValueDim == 256, "ws forward: V head dim 64, 128 or 256");
  static constexpr int kGroup = Config::kGroup;
  static constexpr float kScale = Config::kScale;
  static constexpr float kSoftcap = Config::kSoftcap;
  using Mask = typename MaskSpecOf<Config>::type;
  using WindowMask = Window<Config::kWindowLeft, Config::kWindowRight>;
  using ScoreMod = typename ScoreModOf<Config>::type;
  // A modifier that reads tensors: its block-class table (mask_blocks.cuh) gives the key blocks.
  static constexpr bool kMaskTable = MaskReadsTensors<Config>::value;
  // A score modifier (Config::ScoreMod), applied like the softcap: to scale · S, the softmax then at scale 1.
  static constexpr bool kScoreMod = ScoreModOf<Config>::kPresent;
  static_assert(!(kScoreMod && kSoftcap > 0.f), "ws forward: a score modifier or a softcap, not both");
  // s + A(b, h, q) + B(b, h, k) (ALiBi): each column's key part once (both of a thread's rows), the query part left
  // to lse: scale · S + B is one FFMA an element (score_mod.cuh).
  static constexpr bool kSeparableScore = ScoreSeparable<ScoreMod>::value;
  static constexpr float kSoftmaxScale = kSoftcap > 0.f || kScoreMod ? 1.f : kScale;
  static constexpr float kScaleLog2 = kSoftmaxScale * kLog2e;  // folded exponent scale
  static constexpr bool kLongestFirst = Config::kLongestFirst;
  static constexpr bool kPersistent = Config::kPersistent;
  // Documents as segments (segments.cuh): tiles from the segment plan where the ids are sorted, else the table walk.
  static constexpr bool kSegments = SegmentsOf<Config>::value;
  static_assert(!kSegments || (kMaskTable && !kPersistent),
                "ws forward: the segment form is a document modifier's (a table), one tile a block");
  // ---- schedule ----
  static constexpr int kConsumerWarpgroups = Config::kConsumerWarpgroups;
  static_assert(kConsumerWarpgroups == 2 || kConsumerWarpgroups == 3, "ws forward: 2 or 3 consumer warpgroups");
  static constexpr int kBlockM = 64 * kConsumerWarpgroups;  // 64 query rows a consumer warpgroup
  static constexpr int kBlockN = Config::kBlockN;
  static_assert(kBlockN == 64 || kBlockN == 128 || kBlockN == 192, "ws forward: 64, 128 or 192 keys per block");
  // Live f32/packed registers of a consumer thread: O (Dv / 2), S (kBlockN / 2), P (kBlockN / 4);
  // the rest go to addresses, row statistics and the mask. Measured: 176 of 240 runs at D = 256 (two consumer
  // warpgroups); three get 160 each, of which FlashAttention-3 gives 128 to O, S and P at D = 64 (ptxas decides).
  static constexpr int kProducerRegs = Config::kProducerRegs, kConsumerRegs = Config::kConsumerRegs;
  // Wide key blocks (192: FlashAttention-3's wide tile at D <= 128, fewer rescales and hand-overs a key) hold O, S
  // and P in 208 registers: two consumer warpgroups, Dv <= 128, nothing else live in the softmax (no softcap, no
  // score modifier but a separable one, no mask modifier but one of indices alone, masked column by column below;
  // ptxas: 0 spills at D = 64-128 unmasked, 12-20 bytes under a causal mask, 8 under prefix-LM's modifier).
  static constexpr bool kWideKeys = kBlockN == 192;
  static_assert(!kWideKeys || (kConsumerWarpgroups == 2 && kValueDim <= 128 && kSoftcap == 0.f &&
                               (!kScoreMod || kSeparableScore) && !kMaskTable),
                "ws forward: 192 keys a block need two consumer warpgroups, Dv <= 128, no softcap and no modifier "
                "but a separable score modifier or a mask modifier that reads no tensor");
  static_assert(kValueDim / 2 + kBlockN * 3 / 4 <= (kWideKeys ? 208 : kConsumerWarpgroups == 2 ? 176 : kConsumerRegs - 32),
                "ws forward: O, S and P overflow the consumer registers");
  static constexpr int kStages = Config::kStages;
  static constexpr bool kPingPong = Config::kPingPong;
  static constexpr int kWarps = 4 * kConsumerWarpgroups;  // consumer warps: row bands of the register tiles
  static constexpr int kThreads = kWarps * 32 + 128;      // + the producer warpgroup (the last one)
  static constexpr int kProducer = kWarps / 4;            // warpgroup index of the producer
  static_assert(warpgroup_budgets_fit(kProducerRegs, kConsumerRegs, kConsumerWarpgroups),
                "setmaxnreg budgets: multiples of 8 within what a thread has at launch (168 at 384 threads, "
                "128 at 512)");
  // ---- memory plan (panel tiles 1024-byte aligned: the 128B swizzle repeats every 8 rows of 128 B) ----
  using QTile = SmemPanelTile<Elem, kBlockM, kHeadDim>;
  using OTile = SmemPanelTile<Elem, kBlockM, kValueDim>;  // the epilogue's staging, over Q
  using KTile = SmemPanelTile<Elem, kBlockN, kHeadDim>;
  using VTile = SmemPanelTile<Elem, kBlockN, kValueDim>;
  static constexpr int kSmemQ = 0;  // Q; reused as this warpgroup's O staging in the epilogue
  static constexpr int kSmemK = kSmemQ + (QTile::kBytes > OTile::kBytes ? QTile::kBytes : OTile::kBytes);
  static constexpr int kSmemV = kSmemK + kStages * KTile::kBytes;
  static constexpr int kSmemBar = kSmemV + kStages * VTile::kBytes;  // mbarriers, 8 bytes each
  static constexpr int kBarQ = 0, kBarQEmpty = 1, kBarKFull = 2, kBarKEmpty = kBarKFull + kStages,
                       kBarVFull = kBarKEmpty + kStages, kBarVEmpty = kBarVFull + kStages,
                       kNumBars = kBarVEmpty + kStages;
  static constexpr int kSmemBytes = kSmemBar + 8 * kNumBars + 1024;  // + slack to align the base to 1024 B
  static_assert(kSmemBytes <= 227 * 1024, "shared memory plan exceeds 227 KB");
  // Named barriers: 1 + g = warpgroup g's turn to issue GEMMs; 1 + kConsumerWarpgroups + g = its epilogue
  // staging; then every consumer's: a packed sequence's last V tile cleared past the sequence.
  static constexpr int kBarTurn = 1, kBarEpilogue = 1 + kConsumerWarpgroups, kBarVTail = 1 + 2 * kConsumerWarpgroups;
};

// The key blocks one query tile walks: the window's run [begin, end) (a modifier that reads no tensor
// narrows it by interval analysis, mask_mod.cuh); with a block-class table the hidden blocks inside
// are skipped too (MaskBlockWalk).
struct WindowBlocks {
  int begin, end;
  __device__ __forceinline__ int next(int n) const { return n; }
};

// A segment-form forward's walk: a document's tile takes the window's run whole (its keys are its document's: the
// modifier shows every one), a fallback tile the table's walk.
template <class TableWalk>
struct SegmentWalk {
  TableWalk table;
  bool whole;
  int begin, end;
  __device__ __forceinline__ int next(int n) const { return whole ? n : table.next(n); }
  __device__ __forceinline__ int row_cls(int i, int n) const { return whole ? kBlockShown : table.row_cls(i, n); }
};

// The whole kernel body; call it from a __launch_bounds__(kThreads, 1) kernel whose maps are
// `const __grid_constant__` parameters (their addresses go to the TMA unit). q and k give Sq and
// Sk (and the GQA group when Config::kGroup is 0); V is read through its map only. key_offset: the
// key position of query row 0 (any int; the mask clamps it), Sk - Sq when not given. mask_env: the
// tensors a mask modifier reads; mask_blocks: their block-class table (a modifier that reads tensors);
// score_env: the tensors the score modifier reads.
template <class Config>
__device__ __forceinline__ void attention_fwd_ws(const TmaDescriptor& tma_q, const TmaDescriptor& tma_k,
                                                 const TmaDescriptor& tma_v, const TensorArg& q, const TensorArg& k,
                                                 const TensorArg& o, const TensorArg& lse, int key_offset,
                                                 const MaskEnv& mask_env = MaskEnv(),
                                                 const TensorArg* mask_blocks = nullptr,
                                                 const MaskEnv& score_env = MaskEnv());

template <class Config>
__device__ __forceinline__ void attention_fwd_ws(const TmaDescriptor& tma_q, const TmaDescriptor& tma_k,
                                                 const TmaDescriptor& tma_v, const TensorArg& q, const TensorArg& k,
                                                 const TensorArg& o, const TensorArg& lse) {
  attention_fwd_ws<Config>(tma_q, tma_k, tma_v, q, k, o, lse, static_cast<int>(k.shape[2] - q.shape[2]));
}

namespace detail {

// The body over dense [B, H, S, D] tensors (kPacked false: the tiles of for_each_query_tile) or over packed
// sequences (kPacked: the one tile `packed` found, varlen.cuh; q, k, o [T, H, D], lse [H, T]).
template <class Config, bool kPacked>
__device__ __forceinline__ void attention_fwd_ws_body(const TmaDescriptor& tma_q, const TmaDescriptor& tma_k,
                                                      const TmaDescriptor& tma_v, const TensorArg& q,
                                                      const TensorArg& k, const TensorArg& o, const TensorArg& lse,
                                                      int key_offset, const MaskEnv& mask_env,
                                                      const TensorArg* mask_blocks, const MaskEnv& score_env,
                                                      const PackedQueryTiles& packed) {
  using P = AttentionFwdWsPlan<Config>;
  static_assert(!(kPacked && P::kPersistent), "ws forward: packed sequences take one tile a block");
  // The key offset stays a run-time value to the optimizer: a band modifier's kernels pass a literal 0 (top-left
  // rows), and specialised on it the 192-key causal loop spilled 300 bytes where the run-time form spills 16, its
  // forward 13 % slower (session 56, bench/probes/mask_form_overhead.py).
  asm volatile("" : "+r"(key_offset));
  using Elem = typename P::Elem;
  using Mask = typename P::Mask;
  using QTile = typename P::QTile;
  using OTile = typename P::OTile;
  using KTile = typename P::KTile;
  using VTile = typename P::VTile;
  constexpr int kValueDim = P::kValueDim, kBlockM = P::kBlockM, kBlockN = P::kBlockN, kStages = P::kStages,
                kWarps = P::kWarps, kProducer = P::kProducer;
  constexpr int kSmemQ = P::kSmemQ, kSmemK = P::kSmemK, kSmemV = P::kSmemV, kSmemBar = P::kSmemBar;
  constexpr int kBarQ = P::kBarQ, kBarQEmpty = P::kBarQEmpty, kBarKFull = P::kBarKFull, kBarKEmpty = P::kBarKEmpty,
                kBarVFull = P::kBarVFull, kBarVEmpty = P::kBarVEmpty, kBarTurn = P::kBarTurn,
                kBarEpilogue = P::kBarEpilogue;
  constexpr bool kPingPong = P::kPingPong;
  constexpr float kScale = P::kScale, kSoftcap = P::kSoftcap, kScaleLog2 = P::kScaleLog2;

  extern __shared__ __align__(1024) unsigned char smem_raw[];
  unsigned char* smem = align_smem_1024(smem_raw);

  // Dense: every tile's sequence is [0, Sq) x [0, Sk) of its batch; packed: the tile's own; segments: the tile's
  // document (dense addressing) or, in the fallback form, the dense span.
  constexpr bool kMapped = kPacked || P::kSegments;
  const int dense_sq = static_cast<int>(q.shape[kPacked ? 0 : 2]), dense_sk = static_cast<int>(k.shape[kPacked ? 0 : 2]);
  const int heads = static_cast<int>(q.shape[1]), batches = kPacked ? 1 : static_cast<int>(q.shape[0]);
  const int row_blocks = (dense_sq + kBlockM - 1) / kBlockM;
  auto span_of = [&](const QueryTile&) -> SequenceSpan {
    if constexpr (kMapped) return packed.span;
    else return SequenceSpan{0, dense_sq, 0, dense_sk};
  };
  // The tile's key position of query row 0, clamped: packed sequences (and documents) align their bottom-right
  // corners.
  auto offset_of = [&](const SequenceSpan& span) {
    return Mask::clamp_offset(kPacked || (P::kSegments && packed.segment) ? span.k_len - span.q_len : key_offset,
                              span.q_len, span.k_len);
  };
  const int group = P::kGroup > 0 ? P::kGroup : static_cast<int>(q.shape[1] / k.shape[1]);
  const int warpgroup = warp_id() / 4;
  // What the modifier sees in a tile: its batch, query head and tensors.
  auto tile_env = [&](const QueryTile& tile) { return with_batch_head(mask_env, tile.batch, tile.head); };
  // The key blocks of the query rows from q0 (the same for every warpgroup).
  using TableWalk = MaskBlockWalk<kBlockM / kMaskBlock, kBlockN / kMaskBlock>;
  using KeyWalk = typename Select<P::kMaskTable, typename Select<P::kSegments, SegmentWalk<TableWalk>, TableWalk>::type,
                                  WindowBlocks>::type;
  auto key_walk = [&](const QueryTile& tile, int q0, const MaskEnv& env, int Sk, int offset) -> KeyWalk {
    if constexpr (P::kMaskTable) {
      using W = typename P::WindowMask;
      if constexpr (P::kSegments) {
        const int lo = W::key_block_begin(q0, kBlockM, kBlockN, Sk, offset),
                  hi = W::key_block_end(q0, kBlockM, kBlockN, Sk, offset);
        if (packed.segment) return KeyWalk{TableWalk(), true, lo, hi};
        const TableWalk table(*mask_blocks, mask_block_slice(*mask_blocks, tile.batch, tile.head), q0, lo, hi);
        return KeyWalk{table, false, table.begin, table.end};
      } else {
        return KeyWalk(*mask_blocks, mask_block_slice(*mask_blocks, tile.batch, tile.head), q0,
                       W::key_block_begin(q0, kBlockM, kBlockN, Sk, offset),
                       W::key_block_end(q0, kBlockM, kBlockN, Sk, offset));
      }
    } else {
      return KeyWalk{Mask::key_block_begin(q0, kBlockM, kBlockN, Sk, offset, env),
                     Mask::key_block_end(q0, kBlockM, kBlockN, Sk, offset, env)};
    }
  };

  const QTile Qs{reinterpret_cast<Elem*>(smem + kSmemQ)};
  auto k_tile = [&](int stage) { return KTile{reinterpret_cast<Elem*>(smem + kSmemK + stage * KTile::kBytes)}; };
  auto v_tile = [&](int stage) { return VTile{reinterpret_cast<Elem*>(smem + kSmemV + stage * VTile::kBytes)}; };
  auto bar = [&](int i) { return smem_u32(smem + kSmemBar) + 8u * i; };
  // Positions in the K/V ring run on over the block's whole sequence of tiles.
  using Ring = RingPosition<kStages>;

  if (threadIdx.x == 0) {
    mbarrier_init(bar(kBarQ), 1);           // the producer's arrival (+ TMA bytes when the tile sees keys)
    mbarrier_init(bar(kBarQEmpty), kWarps);  // lane 0 of every consumer warp, after its epilogue
    for (int s = 0; s < kStages; ++s) {
      mbarrier_init(bar(kBarKFull + s), 1);  // the producer's expect_tx arrival (+ TMA bytes)
      mbarrier_init(bar(kBarVFull + s), 1);
      mbarrier_init(bar(kBarKEmpty + s), kWarps);  // lane 0 of every consumer warp
      mbarrier_init(bar(kBarVEmpty + s), kWarps);
    }
    mbarrier_init_fence();
  }
  __syncthreads();  // the last block-wide barrier: the warpgroups part ways here

  // =============================== producer warpgroup ===============================
  if (warpgroup == kProducer) {
    warpgroup_reg_dealloc<P::kProducerRegs>();
    if (threadIdx.x == kProducer * 128) {
      if constexpr (!kPacked) {  // (a packed program's empty k or v has an all-zero map: never touched)
        tma_prefetch_descriptor(&tma_q);
        tma_prefetch_descriptor(&tma_k);
        tma_prefetch_descriptor(&tma_v);
      }
      Ring ring;  // the next key block's slot
      for_each_tile<kMapped, P::kPersistent, P::kLongestFirst>(packed, row_blocks, heads, batches, [&](int j, QueryTile tile) {
        const int q0 = tile.m_block * kBlockM, kv_head = tile.head / group;
        const SequenceSpan span = span_of(tile);
        const KeyWalk keys = key_walk(tile, q0, tile_env(tile), span.k_len, offset_of(span));
        const int n_first = keys.next(keys.begin);
        const bool no_keys = n_first >= keys.end;
        // Q of tile j goes where tile j-1's epilogue stages O: wait for its consumers to leave. A tile without
        // keys still arrives (no bytes), so the consumers' Q phases count tiles.
        auto load_q = [&] {
          if (j > 0) mbarrier_wait(bar(kBarQEmpty), static_cast<unsigned>(j - 1) & 1u);
          if (no_keys) {
            mbarrier_arrive(bar(kBarQ));
            return;
          }
          mbarrier_arrive_expect_tx(bar(kBarQ), QTile::kBytes);
          tma_load_rows<kPacked>(Qs, &tma_q, bar(kBarQ), span.q_start + q0, tile.head, tile.batch);
        };
        if (no_keys) load_q();
        for (int n = n_first, it = 0; n < keys.end; ++it, ring.advance(), n = keys.next(n + 1)) {
          const int s = ring.stage, row = span.k_start + n * kBlockN;
          mbarrier_wait(bar(kBarKEmpty + s), ring.phase ^ 1);  // slot free (first pass: at once)
          mbarrier_arrive_expect_tx(bar(kBarKFull + s), KTile::kBytes);
          tma_load_rows<kPacked>(k_tile(s), &tma_k, bar(kBarKFull + s), row, kv_head, tile.batch);
          if (it == 0) load_q();  // after K_0, which may land under the previous tile's epilogue
          mbarrier_wait(bar(kBarVEmpty + s), ring.phase ^ 1);
          mbarrier_arrive_expect_tx(bar(kBarVFull + s), VTile::kBytes);
          tma_load_rows<kPacked>(v_tile(s), &tma_v, bar(kBarVFull + s), row, kv_head, tile.batch);
        }
      });
    }
    return;  // every copy completes on a barrier the consumers wait for before they exit
  }

  // =============================== consumer warpgroups ==============================
  warpgroup_reg_alloc<P::kConsumerRegs>();
  RegTileF32<kBlockM, kValueDim, kWarps> acc_o;  // this warpgroup's 64 rows: the P V accumulator
  RegTileF32<kBlockM, kBlockN, kWarps> s;       // scores of the current key block (the Q K^T accumulator)
  RegTile16<Elem, kBlockM, kBlockN, kWarps> p;  // probabilities of the previous block (P V's A operand)
  RegRowVec<kBlockM, kWarps> row_m, row_l, corr;

  // One arrival per warp releases a slot (the wgmma reading it has completed: waited before).
  auto release = [&](int b) {
    if (lane_id() == 0) mbarrier_arrive(bar(b));
  };
  // Ping-pong: wait for this warpgroup's turn / hand the turn to the next one (round robin). The last
  // warpgroup's opening arrival lets the first go first; it skips its last hand-over so that every
  // bar.sync is matched by exactly one bar.arrive (within each tile: a tile ends with the turns even).
  auto turn_wait = [&] {
    if (kPingPong) named_barrier_sync(kBarTurn + warpgroup, 256);
  };
  auto turn_pass = [&](bool last) {
    constexpr int kLast = P::kConsumerWarpgroups - 1;
    const int next = kLast == 1 ? warpgroup ^ 1 : (warpgroup == kLast ? 0 : warpgroup + 1);
    if (kPingPong && !(warpgroup == kLast && last)) named_barrier_arrive(kBarTurn + next, 256);
  };
  // S = Q K^T (SS: this warpgroup's 64 rows of Q, the kBlockN keys of slot `stage`, both K-major) and
  // O += P V (RS: P from registers, V MN-major): the tile ops' wgmma forms, issued without waiting.
  auto issue_qk = [&](int stage) {
    fill(s, 0.f);
    wgmma_matmul_tb<false>(s, Qs, k_tile(stage));
  };
  auto issue_pv = [&](int stage) { wgmma_matmul<false>(acc_o, p, v_tile(stage)); };

  Ring ring;  // the next key block's slot
  for_each_tile<kMapped, P::kPersistent, P::kLongestFirst>(packed, row_blocks, heads, batches, [&](int j, QueryTile tile) {
    const int q0 = tile.m_block * kBlockM;
    const SequenceSpan span = span_of(tile);
    const int Sq = span.q_len, Sk = span.k_len, offset = offset_of(span);
    const MaskEnv env = tile_env(tile);
    const MaskEnv tile_score_env = with_batch_head(score_env, tile.batch, tile.head);
    const KeyWalk keys = key_walk(tile, q0, env, Sk, offset);
    // A document's tile (segments.cuh): its mask and score modifier see the sequence's positions, queries and keys
    // shifted alike by the document's start (the window's part as it was; a document's query and key starts are one).
    const int shift = P::kSegments && packed.segment ? span.q_start : 0;
    const int q_ref = q0 + shift + warpgroup * 64;  // a separable modifier's reference row: this warpgroup's first
    fill(acc_o, 0.f);
    fill(row_m, -INFINITY);
    fill(row_l, 0.f);
    // The parts of the mask key block n needs in this warpgroup's rows (kMaskWindow | kMaskModifier, 0: none).
    // With a block-class table it is a load: asked for before the wait for the block's scores, so that its latency
    // hides under the GEMMs.
    auto block_mask_parts = [&](int n) {
      const int k0 = n * kBlockN;
      if constexpr (P::kMaskTable)
        return table_mask_parts(P::WindowMask::needs_mask(q0 + warpgroup * 64, 64, k0, kBlockN, Sk, offset),
                                keys.row_cls(warpgroup, n));
      else
        return Mask::mask_parts(q0 + warpgroup * 64, 64, k0, kBlockN, Sk, offset, env);
    };
    // Online softmax of the scores of key block n (in place: s becomes unnormalized P in f32);
    // corr = exp(m_old - m_new), applied to O just before the next P V.
    auto softmax_block = [&](int n, int parts) {
      const int k0 = n * kBlockN;
      if constexpr (kSoftcap > 0.f) softcap(s, kScale, kSoftcap);
      // No query limit: rows past Sq (the last query block's padding) are never stored, and a row's softmax stays
      // in its row, so the forward skips the backward's -inf on them (a select an element fewer, folded away;
      // ALiBi's forward -1.2 %, session 37).
      if constexpr (P::kSeparableScore)
        score_mod_key_part<typename P::ScoreMod>(s, q_ref, k0 + shift, kScale, tile_score_env);
      else if constexpr (P::kScoreMod)
        score_mod<typename P::ScoreMod>(s, q0 + shift, k0 + shift, kNoQueryLimit, kScale, tile_score_env);
      if (parts) {
        // A modifier that reads tensors: column by column (each value read once, few live), or with three
        // consumer warpgroups (160 registers) the rolled form; ptxas spills at D = 128 / 64: row by row 0 / 540
        // bytes, by columns 0 / 68, rolled - / 20 (mask.cuh). A modifier of indices in the wide key block: by
        // columns too (prefix-LM at D = 128, NVRTC: row by row 164 bytes, rolled 16, by columns 8).
        constexpr bool kModifierColumns = P::kMaskTable || (P::kWideKeys && MaskHasModifier<Config>::value);
        constexpr MaskForm kForm = !kModifierColumns               ? MaskForm::kRows
                                   : P::kConsumerWarpgroups == 3 ? MaskForm::kRolled
                                                                 : MaskForm::kColumns;
        device::mask_parts<Mask, kForm>(parts, s, q0 + shift, k0 + shift, Sk + shift, offset, env);
      }
      const RegRowVec<kBlockM, kWarps> m_new = row_max(s, row_m);
      corr = softmax_correction(row_m, m_new, kScaleLog2);
      exp2(s, m_new, kScaleLog2);
      row_l = online_sum(row_l, corr, s);
      row_m = m_new;
    };

    mbarrier_wait(bar(kBarQ), static_cast<unsigned>(j) & 1u);  // Q landed; the staging rows are ours again
    int n = keys.next(keys.begin);
    if (n < keys.end) {
      // The block after n (keys.end or past it: n is the last), looked up a block ahead: whether a block is the
      // last decides the turn's hand-over, and the loads hide under the waits.
      int n_after = keys.next(n + 1);
      if (kPingPong && warpgroup == P::kConsumerWarpgroups - 1) named_barrier_arrive(kBarTurn + 0, 256);
      // ---- block 0: S_0, softmax, P_0 (nothing to overlap with yet) ----
      Ring cur = ring, prev;  // key blocks it and it - 1
      mbarrier_wait(bar(kBarKFull + cur.stage), cur.phase);
      turn_wait();
      issue_qk(cur.stage);
      turn_pass(n_after >= keys.end);
      int parts = block_mask_parts(n);
      wgmma_wait<0>();
      release(kBarKEmpty + cur.stage);
      softmax_block(n, parts);
      convert(p, s);
      // ---- steady state: S_it and P_{it-1} V_{it-1} in flight together; softmax of S_it under P V ----
      while (n_after < keys.end) {
        n = n_after;
        prev = cur;
        cur.advance();
        mbarrier_wait(bar(kBarKFull + cur.stage), cur.phase);
        turn_wait();
        issue_qk(cur.stage);
        rescale(acc_o, corr);  // O *= exp(m_{it-2} - m_{it-1}) while Q K^T runs
        mbarrier_wait(bar(kBarVFull + prev.stage), prev.phase);
        issue_pv(prev.stage);
        n_after = keys.next(n + 1);
        turn_pass(n_after >= keys.end);
        parts = block_mask_parts(n);
        wgmma_wait<1>();  // S_it is complete (the older group); P V may still run
        release(kBarKEmpty + cur.stage);
        softmax_block(n, parts);
        wgmma_wait<0>();  // P_{it-1} V_{it-1} complete: p may be overwritten, V slot free
        release(kBarVEmpty + prev.stage);
        convert(p, s);
      }
      // ---- last P V ----
      rescale(acc_o, corr);
      mbarrier_wait(bar(kBarVFull + cur.stage), cur.phase);
      if constexpr (kPacked) {
        // Rows past a packed sequence hold the next one's values or whatever follows the last (P is 0 there, but
        // 0 x NaN is NaN): the consumers clear them (the last block is the only one that reaches past Sk), order
        // the writes before the tensor cores' reads and meet. (A document's are its batch's next rows, which the
        // table form multiplies by P = 0 as well: left as they are.)
        if ((n + 1) * kBlockN > Sk) {
          zero_rows_from<kWarps * 32>(v_tile(cur.stage), Sk - n * kBlockN, static_cast<int>(threadIdx.x));
          fence_async_shared();
          named_barrier_sync(P::kBarVTail, kWarps * 32);
        }
      }
      issue_pv(cur.stage);
      wgmma_wait<0>();
      release(kBarVEmpty + cur.stage);
      cur.advance();
      ring = cur;
    }

    // =============================== epilogue ==============================
    // O / l (rows without a visible key: l = 0 -> O = 0, lse = -inf), lse in natural log.
    normalize(acc_o, row_l);
    const GlobalMatrix<Elem> o_rows = sequence_rows<kPacked, Elem>(o, span.q_start, Sq, tile.batch, tile.head);
    RegRowVec<kBlockM, kWarps> row_lse = logsumexp(row_m, row_l, P::kSoftmaxScale);
    if constexpr (P::kSeparableScore) {
      // The scores lacked their rows' query parts: lse takes them (-inf stays).
#pragma unroll
      for (int mt = 0; mt < row_lse.kMT; ++mt)
#pragma unroll
        for (int h = 0; h < 2; ++h)
          row_lse.v[mt][h] +=
              score_query_part<typename P::ScoreMod>(q0 + shift + row_lse.row(mt, h), q_ref, tile_score_env);
    }
    store_rows(sequence_stats<kPacked>(lse, span.q_start, Sq, tile.batch, tile.head), q0, Sq, row_lse);
    RegTile16<Elem, kBlockM, kValueDim, kWarps> o_out;
    convert(o_out, acc_o);
    // Staged in this warpgroup's own rows of the Q tile (its last Q K^T has completed; the other warpgroup
    // reads only its own rows); rows >= Sq and padded columns are not stored.
    store_warpgroup_rows<P::kValueCols>(OTile{reinterpret_cast<Elem*>(smem + kSmemQ)}, o_out,
                                        o_rows, q0, Sq, warpgroup,
                                        kBarEpilogue + warpgroup);
    // The next tile's Q (the TMA unit: the async proxy) or its staging may overwrite these rows: every thread
    // orders its reads before the async proxy's writes, then the warpgroup meets (the next tile's fragment writes of
    // another warp come after it too) before its warps release the tile.
    fence_async_shared();
    named_barrier_sync(kBarEpilogue + warpgroup, 128);
    release(kBarQEmpty);
  });
}

}  // namespace detail

template <class Config>
__device__ __forceinline__ void attention_fwd_ws(const TmaDescriptor& tma_q, const TmaDescriptor& tma_k,
                                                 const TmaDescriptor& tma_v, const TensorArg& q, const TensorArg& k,
                                                 const TensorArg& o, const TensorArg& lse, int key_offset,
                                                 const MaskEnv& mask_env, const TensorArg* mask_blocks,
                                                 const MaskEnv& score_env) {
  static_assert(!AttentionFwdWsPlan<Config>::kSegments, "ws forward: a segment Config takes attention_fwd_ws_segments");
  detail::attention_fwd_ws_body<Config, false>(tma_q, tma_k, tma_v, q, k, o, lse, key_offset, mask_env, mask_blocks,
                                               score_env, PackedQueryTiles());
}

// The segment form (Config::kSegments, segments.cuh): a document modifier's forward over dense tensors whose tiles
// come from attention_segment_plan's `plan` (the other arguments as the dense form's). Launch: grid
// (segment_tile_bound(Sq, kBlockM), heads_q, batch); where the plan fell back, blocks x < ceil(Sq / kBlockM) take
// the dense tiles and walk the table, the others leave.
template <class Config>
__device__ __forceinline__ void attention_fwd_ws_segments(const TmaDescriptor& tma_q, const TmaDescriptor& tma_k,
                                                          const TmaDescriptor& tma_v, const TensorArg& q,
                                                          const TensorArg& k, const TensorArg& o, const TensorArg& lse,
                                                          int key_offset, const MaskEnv& mask_env,
                                                          const TensorArg* mask_blocks, const TensorArg& plan,
                                                          const MaskEnv& score_env = MaskEnv()) {
  using P = AttentionFwdWsPlan<Config>;
  static_assert(P::kSegments, "ws forward: attention_fwd_ws_segments needs Config::kSegments");
  const SegmentTile found = SegmentTile::find<P::kBlockM, P::kLongestFirst>(
      plan, static_cast<int>(q.shape[2]), static_cast<int>(k.shape[2]), static_cast<int>(blockIdx.x),
      static_cast<int>(blockIdx.y), static_cast<int>(blockIdx.z));
  if (!found.valid()) return;  // past the last tile
  PackedQueryTiles tile;
  tile.tile = found.tile;
  tile.span = found.span;
  tile.segment = found.segment;
  detail::attention_fwd_ws_body<Config, false>(tma_q, tma_k, tma_v, q, k, o, lse, key_offset, mask_env, mask_blocks,
                                               score_env, tile);
}

// Packed variable-length sequences (varlen.cuh): q [Tq, Hq, D], k [Tk, Hkv, D] (their 3-D maps; v's too),
// o [Tq, Hq, Dv], lse [Hq, Tq] f32, cu_q / cu_k [B + 1] int32, tile_map and status from attention_varlen_plan
// (block_m = kBlockM; o and lse set to NaN when the status is set). Launch: grid (packed_tile_bound(Tq, B, kBlockM),
// Hq, 1); the plan's threads and shared memory as the dense form (kPersistent false).
template <class Config>
__device__ __forceinline__ void attention_fwd_ws_varlen(const TmaDescriptor& tma_q, const TmaDescriptor& tma_k,
                                                        const TmaDescriptor& tma_v, const TensorArg& q,
                                                        const TensorArg& k, const TensorArg& o, const TensorArg& lse,
                                                        const TensorArg& cu_q, const TensorArg& cu_k,
                                                        const TensorArg& tile_map, const int* status) {
  if (varlen_rejected(status))
    return varlen_poison_rows<typename Config::Elem>(o, &lse, AttentionFwdWsPlan<Config>::kBlockM);
  const PackedQueryTiles packed = PackedQueryTiles::find<AttentionFwdWsPlan<Config>::kLongestFirst>(
      cu_q, cu_k, tile_map, AttentionFwdWsPlan<Config>::kBlockM, status);
  if (!packed.valid()) return;  // past the last tile
  detail::attention_fwd_ws_body<Config, true>(tma_q, tma_k, tma_v, q, k, o, lse, 0, MaskEnv(), nullptr, MaskEnv(),
                                              packed);
}

}  // namespace device
}  // namespace flashc
