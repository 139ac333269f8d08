// Attention backward, warp-specialised TMA form (sm_90a): one block owns a key block of one KV head
// and loops over the query blocks (and the query heads of its GQA group). Two consumer splits:
//
// Key split (head dims up to 192 with Dv <= 128; FlashAttention-3's form): 128 keys a block, consumer warpgroup
// g owns keys 64g.. and runs the whole chain on them, holding both its dK and dV accumulators:
//   Sᵀ = K Qᵀ, dPᵀ = V dOᵀ (issued together) -> Pᵀ -> dV += Pᵀ dO (RS) -> dSᵀ -> dQ, dK += dSᵀ Q (RS);
//   dSᵀ of both warpgroups meets in shared memory, and warpgroup g reduces dQ[:, 64g..] += dS K[:, 64g..] over all
//   128 keys: through shared memory by two TMA tensor reductions into dq_accum's map (tma_dq), under dK's product.
//   Where the schedule says (kDeferDq: the hand rule at D = 96-128, two stages) a step's dQ is issued in the next
//   step (a ring of four dSᵀ buffers, or two where four do not fit) and the warpgroups' exponentials take turns;
//   elsewhere both meet at one named barrier a step (two buffers) before their dQ.
//   At D = 192 (dK + dV 160 floats a thread) a step's scores go in two halves of 32 queries, with one dSᵀ buffer
//   and dQ's three 64-column products taken 2 / 1 by the warpgroups (kSubM, kSpareDqBoxes below).
//   Registers: dK + dV (128 floats a thread at D = 128), Sᵀ + dPᵀ (64), Pᵀ / dSᵀ in 16 bits: 0 spills at 240.
//   At D = 64 a step is 128 queries (FlashAttention-3's 128 x 128 tile there): Sᵀ and dPᵀ 64 floats each, dK
//   + dV 64, and dQ (64 columns: no halves) splits by rows instead, warpgroup g reducing dQ[64g.., :] over all
//   128 keys.
//
// Role split (head dims above 128): 64 keys a block; the two
// consumer warpgroups split the work by role rather than by rows, so that each holds one
// 64 x D accumulator instead of two (the split that lets D = 256 keep dK and dV in registers):
//   warpgroup 0 (probabilities):  Sᵀ = K Qᵀ  ->  Pᵀ = exp(scale Sᵀ - lse)  ->  dV += Pᵀ dO   (RS)
//   warpgroup 1 (score gradient): dPᵀ = V dOᵀ -> dSᵀ = Pᵀ (dPᵀ - D)       ->  dK += dSᵀ Q   (RS)
//   both:                         dQ[:, half g] += dS K[:, half g]  (SS from dSᵀ in shared memory;
//                                 f32 reductions into dq_accum, scaled by the postprocess)
// Pᵀ crosses from warpgroup 0 to 1 through shared memory in f32 (dSᵀ from the unrounded Pᵀ, as the
// float64 checks want at D = 192) and register-fragment order (both hold the 64 x 64 tile in the same
// wgmma C layout, so each thread reads back exactly what its twin wrote).
//   * TMA: K and V once per block; Q and dO per query block through a ring of kStages slots (full /
//     empty mbarriers; every consumer thread arrives on empty); the producer warp's lanes copy the block's 64 lse and D values into the slot
//     and arrive on its full barrier (33 arrivals: one with the TMA byte count, one per lane).
//   * Named barriers (256 consumer threads): kBarP (Pᵀ in shared memory: warpgroup 0 arrives,
//     1 waits) and kBarDs (dSᵀ in shared memory: both wait). One buffer each suffices: warpgroup 0
//     reaches the next Pᵀ store only past kBarDs, which warpgroup 1 reaches after reading Pᵀ;
//     warpgroup 1 reaches the next dSᵀ store only past kBarP, which warpgroup 0 reaches after its
//     dQ product has completed.
//   (The key split meets at kBarDs once more after its walk where dK is wider than V: dK then stages in K's tile,
//   which every dQ product of both warpgroups reads.)
//
// Config (static members):
//   using Elem = bf16 | f16;
//   kHeadDim              Q/K tile width: 64, 128, 192 or 256 (the N of dK's RS product; up to 192 under the key
//                         split, 128 or 256 under the role split)
//   kValueDim             V/dO tile width: 64, 128 or 256 (the N of dV's RS product)
//   kHeadCols, kValueCols the tensors' widths (multiples of 8 up to the tiles'): the TMA zero-fills
//                         the padding, which adds nothing; dQ, dK and dV are stored without it
//   kGroup                query heads per KV head (0: q.shape[1] / k.shape[1] at run time)
//   kWindowLeft, kWindowRight, kScale   Window<L, R> mask, softmax scale (no softcap in this form)
//   ScoreMod (optional)   a score modifier whose derivative is 1 (score_mod.cuh; ALiBi, bias tables)
//   kDqScale              factor on dQ before its reduction (the scale, or 1 where a postprocess scales); the
//                         consumers fold the scale into dS itself (dSᵀ = Pᵀ (scale dPᵀ - scale D), the producer
//                         staging scale D), so that dK needs no scaling and dQ only kDqScale / kScale
//   kStages               Q/dO ring depth (2 at D = 256: 223 KB; D = 128 key split: 166 KB, 3 fit)
//   kDqCols               dQ columns a product: D / 2 or less (registers: 64 x kDqCols / 128 a thread);
//                         64 under the key split
//   kKeySplit             split the consumers by keys (kHeadDim up to 192, kValueDim <= 128) or by role (kHeadDim 128
//                         or 256)
//   kDqTma                dQ by TMA tensor reductions through shared memory (the key split always; the role
//                         split where two 16 KB boxes fit), else the consumers' red.v4
//   kBlockM               queries a step: 64, or 128 at kHeadDim 64 (key split; dQ by row halves)
//   kProducerRegs, kConsumerRegs   setmaxnreg budgets
//   kPingPong (optional)  the schedule's ping_pong: whether the consumers take turns (kDeferDq below; without it, the
//                         compiler's hand rule)
//   kGridHeadGroup (optional, 1 when absent)   the grid read in groups of that many (head, batch) pairs, key
//                         blocks slowest inside a group (#tile.grid_order<head_groups>; tile_schedule.cuh)
//   kRotateWalk (optional, false when absent; the kernel lab's, not yet timed)   key block j of n walks its query
//                         blocks from j * num_m / n on, so that a head's key blocks add into different dQ rows at once
// Launch: grid (ceil(Sk / kBlockN), heads_kv, batch), kBlockN = 128 (key split) or 64; kThreads (384) threads;
// kSmemBytes dynamic shared memory. The maps: 4-D (D, S, H, B) of q and dO with box (64, kBlockM, 1, 1), of k and v
// with box (64, kBlockN, 1, 1), all with the 128B swizzle.
// lse [B, Hq, Sq] (natural log), delta = rowsum(dO O) [B, Hq, Sq] and dq_accum [B, Hq, Sq, D] f32
// (zeroed) come from the preprocess; dk [B, Hkv, Sk, D], dv [B, Hkv, Sk, Dv] are written here.
#pragma once
#include "flashc/device/backward.cuh"
#include "flashc/device/emitter_api.cuh"
#include "flashc/device/mask.cuh"
#include "flashc/device/mask_blocks.cuh"
#include "flashc/device/mbarrier.cuh"
#include "flashc/device/panel.cuh"
#include "flashc/device/regtile.cuh"
#include "flashc/device/score_mod.cuh"
#include "flashc/device/segments.cuh"
#include "flashc/device/tensor.cuh"
#include "flashc/device/tile_schedule.cuh"
#include "flashc/device/tma.cuh"
#include "flashc/device/types.cuh"
#include "flashc/device/varlen.cuh"
#include "flashc/device/wgmma_tile.cuh"
#include "flashc/device/ws_epilogue.cuh"

// A point of a block's timeline for the kernel lab's phase probe (bench/kernel_lab/phases.py defines it to record the
// SM's clock: entry, K / V ready, first step ready, walk done, reductions done, dK / dV stored); empty otherwise.
#ifndef FLASHC_BWD_WS_PROBE
#define FLASHC_BWD_WS_PROBE(point) \
  do {                            \
  } while (0)
#endif

namespace flashc {
namespace device {

template <class Config>
struct AttentionBwdWsPlan {
  using Elem = typename Config::Elem;
  static constexpr int kHeadDim = Config::kHeadDim, kValueDim = Config::kValueDim;
  // dQ is split by column halves of at least 64 (a wgmma N), or at D = 64 (128 queries a step) by row halves.
  static_assert(kHeadDim == 64 || kHeadDim == 128 || kHeadDim == 192 || kHeadDim == 256,
                "ws backward: head dim 64, 128, 192 or 256");
  static_assert(kValueDim == 64 || kValueDim == 128 || kValueDim == 256, "ws backward: value dim 64, 128 or 256");
  // Key split while one warpgroup holds dK and dV of its 64 keys (96 + 64 floats a thread at most).
  static constexpr bool kKeySplit = Config::kKeySplit;
  static_assert(kKeySplit ? kHeadDim <= 192 && kValueDim <= 128 : kHeadDim == 128 || kHeadDim == 256,
                "ws backward: key split up to D = 192 (Dv <= 128), role split on 128- or 256-column tiles");
  static constexpr int kHeadCols = Config::kHeadCols, kValueCols = Config::kValueCols;
  // The dense grid's order: groups of kGridHeadGroup (head, batch) pairs, key blocks slowest inside one
  // (tile_schedule.cuh; the Config's optional kGridHeadGroup, 1: the launch order).
  static constexpr int kGridHeadGroup = GridHeadGroupOf<Config>::value;
  static_assert(kGridHeadGroup >= 1 && kGridHeadGroup <= 64, "ws backward: 1-64 (head, batch) pairs a group");
  static_assert(kHeadCols > 0 && kHeadCols <= kHeadDim && kHeadCols % 8 == 0 && kValueCols > 0 &&
                    kValueCols <= kValueDim && kValueCols % 8 == 0,
                "ws backward: the tensors' widths within the tiles, 16-byte rows");
  static constexpr int kGroup = Config::kGroup;
  using Mask = typename MaskSpecOf<Config>::type;
  using WindowMask = Window<Config::kWindowLeft, Config::kWindowRight>;
  // A modifier that reads tensors: its block-class table (mask_blocks.cuh, rows of keys) gives the
  // query blocks of each key block.
  static constexpr bool kMaskTable = MaskReadsTensors<Config>::value;
  // Documents as segments (segments.cuh): key tiles from the segment plan where the ids are sorted, else the table.
  static constexpr bool kSegments = SegmentsOf<Config>::value;
  static constexpr float kScale = Config::kScale;
  static constexpr float kScaleLog2 = kScale * kLog2e;
  // dQ's factor before its reduction: dS carries the scale already (1 where the Config asks for the scale).
  static constexpr float kDqFactor = Config::kDqScale / kScale;
  // A score modifier (Config::ScoreMod) whose derivative is 1: applied to scale · Sᵀ where the scores are
  // recomputed (the scale inside it, Pᵀ = exp(S' - lse)); dSᵀ passes through it unchanged.
  using ScoreMod = typename ScoreModOf<Config>::type;
  static constexpr bool kScoreMod = ScoreModOf<Config>::kPresent;
  static_assert(ScoreDerivativeIsOne<ScoreMod>::value,
                "ws backward: only a score modifier whose derivative is 1 (#tile.attention score_additive)");
  static constexpr float kProbsScaleLog2 = kScoreMod ? kLog2e : kScaleLog2;
  // s + A(b, h, q) + B(b, h, k) (ALiBi): B a key row's one evaluation, A folded into the step's lse by the producer
  // (score_mod.cuh): scale · Sᵀ + B is one FFMA an element.
  static constexpr bool kSeparableScore = ScoreSeparable<ScoreMod>::value;
  // ---- schedule ----
  static constexpr int kBlockN = kKeySplit ? 128 : 64;  // keys a block (the M of every product but dQ's)
  static constexpr int kBlockM = Config::kBlockM;  // queries a step
  static_assert(kBlockM == 64 || (kBlockM == 128 && kKeySplit && kHeadDim == 64),
                "ws backward: 64 queries a step, or 128 under the key split at D = 64");
  // The kernel lab's kRotateWalk (for_each_query_step): each key block's walk starts at its own query block.
  static constexpr bool kRotateWalk = RotateWalkOf<Config>::value;
  static constexpr bool kDqByRows = kBlockM == 128;  // warpgroup g: dQ rows 64g.. (else columns 64g..)
  // Queries a score product. The key split at D = 192 forms Sᵀ, dPᵀ, Pᵀ and dSᵀ in two halves of 32 queries
  // (16 floats a thread each) beside dK + dV's 160: 64 queries spilled there.
  static constexpr int kSubM = kKeySplit && kHeadDim == 192 ? 32 : kBlockM;
  // dQ products of 64 columns a step (the key split's: 3 at D = 192, which the warpgroups take 2 / 1 and
  // 1 / 2 on alternate steps; 2 at D = 128, one each).
  static constexpr int kDqProducts = kHeadDim / 64;
  // 128 queries a step, where registers peak at the 64 x 128 f32 score tiles: dV's product is issued after dSᵀ
  // is formed (so Pᵀ's f32 registers are free before its 16-bit copy is live), and where a window's or causal
  // mask's code is in the loop, dPᵀ's after Sᵀ's mask and exponentials. With both products early NVRTC's ptxas
  // spilled 32 bytes (16 with dV late under a mask; nvcc none); without a window dPᵀ under the exponentials
  // measured +3.4-3.9 % (session 13 call 11).
  static constexpr bool kLateDv = kDqByRows;
  static constexpr bool kLateDp = kLateDv && Mask::kElementMaskInLoop;
  static constexpr int kStages = Config::kStages;
  static constexpr int kDqCols = Config::kDqCols;
  static_assert(kDqByRows ? kDqCols == kHeadDim
                : kKeySplit ? kDqCols == 64
                            : (kDqCols == 64 || kDqCols == 128) && (kHeadDim / 2) % kDqCols == 0,
                "ws backward: dQ products of 64 columns under the key split (all of D by rows), of 64 or 128 dividing "
                "half the head dim under the role split");
  static constexpr int kWarps = 8;                    // consumer warps
  // A register tile's row bands: both warpgroups' (key split: warpgroup g holds rows 64g..) or one's (roles).
  static constexpr int kTileWarps = kKeySplit ? 8 : 4;
  static constexpr int kThreads = kWarps * 32 + 128;  // + the producer warpgroup (one warp works)
  static constexpr int kProducer = 2;                 // its warpgroup index
  static constexpr int kProducerRegs = Config::kProducerRegs, kConsumerRegs = Config::kConsumerRegs;
  static_assert(warpgroup_budgets_fit(kProducerRegs, kConsumerRegs), "setmaxnreg budgets");
  // ---- memory plan (panel tiles 1024-byte aligned) ----
  using KTile = SmemPanelTile<Elem, kBlockN, kHeadDim>;
  using VTile = SmemPanelTile<Elem, kBlockN, kValueDim>;
  using QTile = SmemPanelTile<Elem, kBlockM, kHeadDim>;
  using DOTile = SmemPanelTile<Elem, kBlockM, kValueDim>;
  using DSTile = SmemPanelTile<Elem, kBlockN, kBlockM>;  // dSᵀ [key][query]
  // Key split: two dSᵀ buffers (a warpgroup writes step i + 1's while the other may still read step i's), but
  // at D = 192 (score halves) one dSᵀ buffer, freed by a barrier of both warpgroups each step (kBarDsFree), so that
  // a third pair of dQ boxes fits: the warpgroup with two dQ products a step reduces the second through the spare
  // pair without waiting for the first's read (session 21: that wait made named barriers the top stall).
  static constexpr bool kSpareDqBoxes = kSubM < kBlockM;
  // dQ through shared memory and TMA tensor reductions (two boxes of 64 rows x 32 f32 columns a warpgroup,
  // 128B swizzle) into dq_accum's map: the key split always (+2-8 % over the consumers' red.v4, kernel lab run
  // 15), the role split where the boxes fit beside its tiles (D = 192 / Dv = 128; not D = 256).
  static constexpr bool kDqTma = Config::kDqTma;
  static_assert((!kKeySplit || kDqTma) && (!kDqTma || kDqCols == 64),
                "ws backward: the key split reduces dQ by TMA, in 64-column products");
  static constexpr int kDqBoxBytes = 64 * 128;
  static constexpr int kPBytes = kKeySplit ? 0 : 128 * 32 * 4;  // role split: Pᵀ in f32, 32 floats a thread
  static constexpr int kBarKV = 0, kBarFull = 1, kBarEmpty = 1 + kStages, kNumBars = 1 + 2 * kStages;
  static constexpr int kDqBoxesBytes = kDqTma ? (kSpareDqBoxes ? 6 : 4) * kDqBoxBytes : 0;
  // Every byte but the dSᵀ buffers' (+ slack to align the base to 1024 B).
  static constexpr int kSmemBesideDs = KTile::kBytes + VTile::kBytes + kStages * (QTile::kBytes + DOTile::kBytes) +
                                       kPBytes + kDqBoxesBytes + 2 * kStages * kBlockM * 4 + 8 * kNumBars + 1024;
  // The deferred form (the schedule's ping_pong; without one the compiler's hand rule, wsBackwardTakesTurns: where
  // four dSᵀ buffers fit): step i's dQ is issued in step i + 1 and the warpgroups' exponentials take turns (the
  // consumers' loop). Four buffers where they fit (64 queries a step, two stages: D = 96-128): a warpgroup stores
  // step i + 1's rows before it issues step i's dQ; buffer i mod 4 was last read by step i - 4's dQ, which the
  // other warpgroup completed before it stored step i - 2's rows, which this one waited for a step ago. Else two
  // (a tuning point: 128 queries a step, three stages): a warpgroup stores step i + 1's rows after its own dQ of
  // step i - 1 has completed; buffer (i + 1) mod 2 was last read by step i - 1's dQ, which the other warpgroup
  // completed before it stored step i's rows, which this one waited for before that dQ. The other form: two
  // buffers and one barrier a step that both warpgroups meet at before their dQ products.
  static constexpr bool kFourDsBuffersFit = kBlockM == 64 && kSmemBesideDs + 4 * DSTile::kBytes <= 227 * 1024;
  static constexpr bool kDeferDq = PingPongOr<Config, kKeySplit && !kSpareDqBoxes && kFourDsBuffersFit>::value;
  static_assert(!kDeferDq || (kKeySplit && !kSpareDqBoxes),
                "ws backward: the consumers take turns (ping_pong) only under the key split below D = 192 (the "
                "compiler's wsBackwardTurnsTake)");
  static constexpr int kDsBuffers = kDeferDq && kFourDsBuffersFit ? 4 : kKeySplit && !kSpareDqBoxes ? 2 : 1;
  static constexpr int kSmemK = 0;
  static constexpr int kSmemV = kSmemK + KTile::kBytes;
  static constexpr int kSmemQ = kSmemV + VTile::kBytes;                // kStages slots
  static constexpr int kSmemDO = kSmemQ + kStages * QTile::kBytes;     // kStages slots
  static constexpr int kSmemDS = kSmemDO + kStages * DOTile::kBytes;
  static constexpr int kSmemP = kSmemDS + kDsBuffers * DSTile::kBytes;
  static constexpr int kSmemDq = kSmemP + kPBytes;  // kDqTma: 2 boxes a warpgroup (+ 2 spare: kSpareDqBoxes)
  static constexpr int kSmemLse = kSmemDq + kDqBoxesBytes;              // float[kBlockM] a slot
  static constexpr int kSmemDelta = kSmemLse + kStages * kBlockM * 4;  // float[kBlockM] a slot
  static constexpr int kSmemBar = kSmemDelta + kStages * kBlockM * 4;
  static constexpr int kSmemBytes = kSmemBar + 8 * kNumBars + 1024;  // + slack to align the base to 1024 B
  static_assert(kSmemBytes == kSmemBesideDs + kDsBuffers * DSTile::kBytes, "ws backward: the byte count beside dSᵀ");
  static_assert(kSmemBytes <= 227 * 1024, "shared memory plan exceeds 227 KB");
  // Named barriers (3, 4: a warpgroup's dQ boxes, and its dK / dV staging in the epilogue; kBarTail: packed
  // sequences' rows cleared past the sequence).
  // kDeferDq: kBarDsReady + 3 g + (step mod 3), warpgroup g's dSᵀ rows of a step stored (it arrives, the other syncs
  // a step later); kBarTurn + g, warpgroup g's turn to start a step (the other's exponentials of the step before are
  // done). Three ids a warpgroup, not two: where the rows are stored before the other's are waited for (four
  // buffers), warpgroup 0 may start step i + 2 once warpgroup 1's exponentials of step i + 1 are done, which is before
  // warpgroup 1 waits for warpgroup 0's rows of step i; with two ids warpgroup 0's arrival of step i + 2 could then
  // complete the barrier of step i by itself. Step i + 3 starts only after warpgroup 1's turn of step i + 2, after
  // its wait of step i + 1. (A named barrier counts arrivals; it keeps no generations.)
  static constexpr int kDsReadyIds = 3;
  static constexpr int kBarP = 1, kBarDs = 2, kBarDsFree = 5, kBarTail = 6, kBarDsReady = 7,
                       kBarTurn = kBarDsReady + 2 * kDsReadyIds;
  static_assert(kBarTurn + 1 <= 15, "ws backward: named barrier ids are 0-15");
};

namespace detail {
// dQ leaves through shared memory by two TMA tensor reductions a warpgroup: this warpgroup's 64 rows of `dq` (64
// columns) into two 128B-swizzled boxes of 64 rows x 32 columns at `buffer`, added into dq_accum's map at (row0,
// col0). `first`: no earlier reduction of this warpgroup can still be reading the buffer. Named barrier
// 3 + warpgroup (its 128 threads); kAligned: both consumer warpgroups run this from the same code (the key
// split), else the non-.aligned form (the role split calls it from each role's own code).
template <bool kAligned, int kBoxBytes, bool kPacked = false, int M, int N, int W>
__device__ __forceinline__ void reduce_dq_tma(const RegTileF32<M, N, W>& dq, unsigned buffer, const TmaDescriptor* tma_dq,
                                              int col0, int row0, int head, int batch, int warpgroup, bool first) {
  static_assert(N == 64, "dQ by TMA: 64 columns a product");
  auto sync_warpgroup = [&] {
    if constexpr (kAligned) named_barrier_sync(3 + warpgroup, 128);
    else named_barrier_sync_unaligned(3 + warpgroup, 128);
  };
  const bool issuer = threadIdx.x % 128 == 0;
  if (issuer && !first) tma_wait_group<0>();  // the previous reduction has read the buffer
  sync_warpgroup();
  // Fragment (row r, column c) -> box c / 32, 16-byte chunk (c % 32) / 4 of row r at chunk ^ (r % 8)
  // (r within this warpgroup's 64 rows).
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const int r = dq.row(0, h) % 64;
#pragma unroll
    for (int nt = 0; nt < RegTileF32<M, N, W>::kNT; ++nt) {
      const int c = dq.col(nt, 0), cc = c % 32;
      const unsigned at = buffer + (c / 32) * kBoxBytes + r * 128 + ((((cc / 4) ^ (r % 8))) << 4) + (cc % 4) * 4;
      asm volatile("st.shared.v2.f32 [%0], {%1, %2};\n" ::"r"(at), "f"(dq.v[0][nt][2 * h]), "f"(dq.v[0][nt][2 * h + 1])
                   : "memory");
    }
  }
  fence_async_shared();  // generic-proxy stores -> the TMA engine's reads
  sync_warpgroup();
  if (issuer) {
    tma_reduce_rows<kPacked>(tma_dq, buffer, col0, row0, head, batch);
    tma_reduce_rows<kPacked>(tma_dq, buffer + kBoxBytes, col0 + 32, row0, head, batch);
    tma_commit_group();
  }
}
// A separable modifier's key parts for the keys of st (rows k0..) against the reference row k0, read while Sᵀ's
// product runs so that their tensor reads are not on the step's path (nothing for any other modifier).
struct NoKeyParts {};
template <class P, int R, int C, int W>
__device__ __forceinline__ auto step_key_parts(const RegTileF32<R, C, W>& st, int k0, const MaskEnv& score_env,
                                               const MaskEnv& step) {
  if constexpr (P::kSeparableScore)
    return score_key_parts<typename P::ScoreMod, true>(st, /*q_ref=*/k0, k0,
                                                        with_batch_head(score_env, step.batch, step.head));
  else
    return NoKeyParts{};
}
// Sᵀ' = mod(scale · Sᵀ) of the tile st (keys k0.., queries q0..), its batch and head from the step's mask env. A
// separable modifier adds only its key parts (step_key_parts: a row's one evaluation); the producer put the query
// part into the step's lse (query_part_log2).
template <class P, int R, int C, int W, class KeyParts>
__device__ __forceinline__ void modify_scores(RegTileF32<R, C, W>& st, int q0, int k0, int Sq, const MaskEnv& score_env,
                                              const MaskEnv& step, const KeyParts& key_parts) {
  if constexpr (P::kSeparableScore)
    add_score_key_parts<true>(st, key_parts, P::kScale);
  else if constexpr (P::kScoreMod)
    score_mod<typename P::ScoreMod, true>(st, q0, k0, Sq, P::kScale,
                                          with_batch_head(score_env, step.batch, step.head));
}
// log2e · the query part of a separable modifier at query row q (reference row k0; 0 for any other modifier): what
// the producer takes from the row's lse bias, so that exp2(log2e (scale s + key part) - bias) is the probability.
template <class P>
__device__ __forceinline__ float query_part_log2(int q, int k0, int batch, int head, const MaskEnv& score_env) {
  if constexpr (P::kSeparableScore) {
    return kLog2e * score_query_part<typename P::ScoreMod>(q, k0, with_batch_head(score_env, batch, head));
  } else {
    return 0.f;
  }
}
}  // namespace detail

// The steps of one key block (keys [k0, k0 + kBlockN) of kv head kv_head): the (query head, query block)
// pairs of its GQA group, head-major, each as body(it, head, q0, parts, env): `it` counts steps (the ring's
// slot and phase), `parts` the parts of its mask the block needs (kMaskWindow | kMaskModifier; 0: none), env
// what the mask modifier sees.
// Producer and consumers walk the same steps.
template <class P, class F>
__device__ __forceinline__ void for_each_query_step(int k0, int kv_head, int batch, int group, int Sq, int Sk,
                                                    int offset, const MaskEnv& mask_env,
                                                    const TensorArg* mask_blocks, F&& body) {
  using Mask = typename P::Mask;
  constexpr int kBlockM = P::kBlockM, kBlockN = P::kBlockN;
  int it = 0;
  for (int member = 0; member < group; ++member) {
    const int head = kv_head * group + member;
    MaskEnv env = with_batch_head(mask_env, batch, head);
    if constexpr (P::kMaskTable) {
      using W = typename P::WindowMask;
      if constexpr (P::kSegments) {
        if (mask_blocks == nullptr) {  // a document's key tile (segments.cuh): its queries whole, the window's run
          const int m_end = W::query_block_end(k0, kBlockN, kBlockM, Sq, offset);
          for (int m = W::query_block_begin(k0, kBlockN, kBlockM, Sq, offset); m < m_end; ++m, ++it) {
            const int q0 = m * kBlockM;
            body(it, head, q0, table_mask_parts(W::needs_mask(q0, kBlockM, k0, kBlockN, Sk, offset), kBlockShown),
                 env);
          }
          continue;
        }
      }
      const MaskBlockWalk<kBlockN / kMaskBlock, kBlockM / kMaskBlock> walk(
          *mask_blocks, mask_block_slice(*mask_blocks, batch, head), k0,
          W::query_block_begin(k0, kBlockN, kBlockM, Sq, offset), W::query_block_end(k0, kBlockN, kBlockM, Sq, offset));
      for (int m = walk.next(walk.begin); m < walk.end; m = walk.next(m + 1), ++it) {
        const int q0 = m * kBlockM;
        body(it, head, q0, table_mask_parts(W::needs_mask(q0, kBlockM, k0, kBlockN, Sk, offset), walk.cls(m)), env);
      }
    } else if constexpr (!MaskUsesHead<Mask>::value) {
      // The same query blocks for every head: one flat loop over (head, block) pairs (the form the kernel had
      // before modifiers; nesting it cost the causal D = 64 backward a spill).
      const int m_begin = Mask::query_block_begin(k0, kBlockN, kBlockM, Sq, offset, env);
      const int m_end = Mask::query_block_end(k0, kBlockN, kBlockM, Sq, offset, env);
      const int num_m = m_end > m_begin ? m_end - m_begin : 0;
      const int num_steps = group * num_m;
      // (kRotateWalk, the kernel lab's: key block j of n starts at query block j * num_m / n, so that a head's key
      // blocks, running side by side, add into different dQ rows at a time instead of all into the same.)
      const int rotate =
          P::kRotateWalk ? static_cast<int>(static_cast<long long>(k0 / kBlockN) * num_m / ((Sk + kBlockN - 1) / kBlockN))
                         : 0;
      for (int step = 0; step < num_steps; ++step) {
        const int m = P::kRotateWalk ? (step % num_m + rotate) % num_m : step % num_m;
        const int step_head = kv_head * group + step / num_m, q0 = (m_begin + m) * kBlockM;
        env.head = step_head;
        body(step, step_head, q0, Mask::mask_parts(q0, kBlockM, k0, kBlockN, Sk, offset, env), env);
      }
      return;
    } else {
      const int m_begin = Mask::query_block_begin(k0, kBlockN, kBlockM, Sq, offset, env);
      const int m_end = Mask::query_block_end(k0, kBlockN, kBlockM, Sq, offset, env);
      for (int m = m_begin; m < m_end; ++m, ++it) {
        const int q0 = m * kBlockM;
        body(it, head, q0, Mask::mask_parts(q0, kBlockM, k0, kBlockN, Sk, offset, env), env);
      }
    }
  }
}

namespace detail {

// The body over dense [B, H, S, D] tensors (a block a key tile of the grid, tile_schedule.cuh) or (kPacked) over packed sequences
// (the key tile `packed` found in the plan's key-tile map: q, k, v, dO [T, H, D] with 3-D maps, lse / delta [H, T],
// dq_accum [Tq, Hq, D] f32, dk, dv [Tk, Hkv, D]).
template <class Config, bool kPacked>
__device__ __forceinline__ void attention_bwd_ws_body(const TmaDescriptor& tma_q, const TmaDescriptor& tma_k,
                                                      const TmaDescriptor& tma_v, const TmaDescriptor& tma_do,
                                                      const TensorArg& q, const TensorArg& k, const TensorArg& lse,
                                                      const TensorArg& delta, const TensorArg& dq_accum,
                                                      const TensorArg& dk, const TensorArg& dv, int key_offset,
                                                      const TmaDescriptor* tma_dq, const MaskEnv& mask_env,
                                                      const TensorArg* mask_blocks, const MaskEnv& score_env,
                                                      const PackedQueryTiles& packed) {
  using P = AttentionBwdWsPlan<Config>;
  using Elem = typename P::Elem;
  using Mask = typename P::Mask;
  using KTile = typename P::KTile;
  using VTile = typename P::VTile;
  using QTile = typename P::QTile;
  using DOTile = typename P::DOTile;
  using DSTile = typename P::DSTile;
  constexpr int kHeadDim = P::kHeadDim, kValueDim = P::kValueDim, kBlockM = P::kBlockM, kBlockN = P::kBlockN,
                kStages = P::kStages, kWarps = P::kWarps, kTileWarps = P::kTileWarps, kDqCols = P::kDqCols;

  extern __shared__ __align__(1024) unsigned char smem_raw[];
  unsigned char* smem = align_smem_1024(smem_raw);

  // Dense: [0, Sq) x [0, Sk) of the tile's batch; packed: the key tile's sequence (rows from q_start / k_start of
  // the packed tensors, batch 0 for the views), each aligned at its bottom-right corner.
  // Segments (P::kSegments): the key tile's document (dense rows from its first one) where the plan took the segment
  // form, else the dense span; either way `packed` holds the tile.
  const bool segment = P::kSegments && packed.segment;
  const SequenceSpan span = kPacked || segment
                                ? packed.span
                                : SequenceSpan{0, static_cast<int>(q.shape[2]), 0, static_cast<int>(k.shape[2])};
  const int Sq = span.q_len, Sk = span.k_len, q_start = span.q_start, k_start = span.k_start;
  const int offset = Mask::clamp_offset(kPacked || segment ? Sk - Sq : key_offset, Sq, Sk);
  const int group = P::kGroup > 0 ? P::kGroup : static_cast<int>(q.shape[1] / k.shape[1]);
  // (key block, kv head, batch): packed, the plan's key tile and blockIdx.y; dense, the grid's in head groups
  // (tile_schedule.cuh; unused when packed); segments, the tile the entry found from the grid's.
  const QueryTile grid_tile = grid_tile_in_head_groups<P::kGridHeadGroup>();
  const int k0 = (kPacked || P::kSegments ? packed.tile.m_block : grid_tile.m_block) * kBlockN;
  const int kv_head = kPacked ? static_cast<int>(blockIdx.y) : P::kSegments ? packed.tile.head : grid_tile.head;
  const int batch = kPacked ? 0 : P::kSegments ? packed.tile.batch : grid_tile.batch;
  // A document's key tile walks its queries whole: no table (for_each_query_step's segment walk); its mask and score
  // modifier see the sequence's positions (queries and keys shifted alike: the window's part as it was).
  const TensorArg* walk_table = segment ? nullptr : mask_blocks;
  const int shift = segment ? k_start : 0;
  const int warpgroup = warp_id() / 4;
  const KTile Ks{reinterpret_cast<Elem*>(smem + P::kSmemK)};
  const VTile Vs{reinterpret_cast<Elem*>(smem + P::kSmemV)};
  auto ds_tile = [&](int b) { return DSTile{reinterpret_cast<Elem*>(smem + P::kSmemDS + b * DSTile::kBytes)}; };
  const DSTile dSs = ds_tile(0);
  float4* p_exchange = reinterpret_cast<float4*>(smem + P::kSmemP);
  auto q_tile = [&](int s) { return QTile{reinterpret_cast<Elem*>(smem + P::kSmemQ + s * QTile::kBytes)}; };
  auto do_tile = [&](int s) { return DOTile{reinterpret_cast<Elem*>(smem + P::kSmemDO + s * DOTile::kBytes)}; };
  auto lse_log2_slot = [&](int s) { return reinterpret_cast<float*>(smem + P::kSmemLse + s * kBlockM * 4); };
  auto delta_slot = [&](int s) { return reinterpret_cast<float*>(smem + P::kSmemDelta + s * kBlockM * 4); };
  auto bar = [&](int i) { return smem_u32(smem + P::kSmemBar) + 8u * i; };
  auto phase = [](int it) { return static_cast<unsigned>(it / kStages) & 1u; };
  // Sᵀ' = mod(scale · Sᵀ) of a step's queries q0.. (its batch and head from the mask's env), before the mask.
  using ScoreTile = RegTileF32<kBlockN, P::kSubM, kTileWarps>;
  using KeyParts = decltype(detail::step_key_parts<P>(ScoreTile{}, 0, MaskEnv{}, MaskEnv{}));
  auto key_parts = [&](const ScoreTile& st, const MaskEnv& step) {
    return detail::step_key_parts<P>(st, k0 + shift, score_env, step);
  };
  auto modify_scores = [&](ScoreTile& st, int q0, const MaskEnv& step, const KeyParts& score_keys) {
    detail::modify_scores<P>(st, q0 + shift, k0 + shift, Sq + shift, score_env, step, score_keys);
  };

  if (threadIdx.x == 0) {
    mbarrier_init(bar(P::kBarKV), 1);
    for (int s = 0; s < kStages; ++s) {
      mbarrier_init(bar(P::kBarFull + s), 1 + 32);   // the TMA arrival + one per producer lane
      mbarrier_init(bar(P::kBarEmpty + s), kWarps * 32);  // every consumer thread
    }
    mbarrier_init_fence();
  }
  __syncthreads();  // the last block-wide barrier

  // =============================== producer warp ===============================
  if (warpgroup == P::kProducer) {
    warpgroup_reg_dealloc<P::kProducerRegs>();
    if (warp_id() != P::kProducer * 4) return;
    const int lane = lane_id();
    if (lane == 0) {
      if constexpr (!kPacked) {  // (a packed program's empty q has an all-zero map: never touched)
        tma_prefetch_descriptor(&tma_q);
        tma_prefetch_descriptor(&tma_do);
      }
      mbarrier_arrive_expect_tx(bar(P::kBarKV), KTile::kBytes + VTile::kBytes);
      tma_load_rows<kPacked>(Ks, &tma_k, bar(P::kBarKV), k_start + k0, kv_head, batch);
      tma_load_rows<kPacked>(Vs, &tma_v, bar(P::kBarKV), k_start + k0, kv_head, batch);
    }
    for_each_query_step<P>(k0, kv_head, batch, group, Sq, Sk, offset, mask_env, walk_table, [&](int it, int head, int q0, int, const MaskEnv&) {
      const int s = it % kStages;
      mbarrier_wait(bar(P::kBarEmpty + s), phase(it) ^ 1);  // slot free (first pass: at once)
      if (lane == 0) {
        mbarrier_arrive_expect_tx(bar(P::kBarFull + s), QTile::kBytes + DOTile::kBytes);
        tma_load_rows<kPacked>(q_tile(s), &tma_q, bar(P::kBarFull + s), q_start + q0, head, batch);
        tma_load_rows<kPacked>(do_tile(s), &tma_do, bar(P::kBarFull + s), q_start + q0, head, batch);
      }
      // lse as the exponent's bias, lse · log2e (+inf past Sq and for rows with no visible key: P = 0 there; less a
      // separable modifier's query part), and D (0), kBlockM / 32 rows a lane: the consumers' exponent is one FFMA
      // (their per-column -inf test moved here).
      const GlobalVector<float> lse_v = sequence_stats<kPacked>(lse, q_start, Sq, batch, head);
      const GlobalVector<float> delta_v = sequence_stats<kPacked>(delta, q_start, Sq, batch, head);
#pragma unroll
      for (int h = 0; h < kBlockM / 32; ++h) {
        const int r = lane + 32 * h, row = q0 + r;
        lse_log2_slot(s)[r] = row < Sq ? lse_bias_log2(lse_v.base[row * lse_v.stride]) -
                                             detail::query_part_log2<P>(row + shift, k0 + shift, batch, head,
                                                                        score_env)
                                       : INFINITY;
        delta_slot(s)[r] = row < Sq ? P::kScale * delta_v.base[row * delta_v.stride] : 0.f;  // scale D
      }
      mbarrier_arrive(bar(P::kBarFull + s));  // releases this lane's shared stores
    });
    return;
  }

  // =============================== consumer warpgroups ==============================
  warpgroup_reg_alloc<P::kConsumerRegs>();
  const int wg_thread = threadIdx.x % 128;
  FLASHC_BWD_WS_PROBE(0);
  // Every consumer thread arrives to free slot s: its Q and dO were read by completed wgmma, and each
  // thread's own lse / D reads are released by its own arrival (an mbarrier arrival releases only the
  // arriving thread's accesses: one lane's would leave the others' reads unordered before the
  // producer's next stores; racecheck flagged exactly that).
  auto release = [&](int s) { mbarrier_arrive(bar(P::kBarEmpty + s)); };
  // The two roles meet on one barrier from different code: the non-aligned barrier forms.
  auto sync_roles = [](int id) { named_barrier_sync_unaligned(id, 256); };
  auto arrive_roles = [](int id) { named_barrier_arrive_unaligned(id, 256); };

  // This warpgroup's two dQ boxes (kDqTma).
  const unsigned dq_buffer = smem_u32(smem + P::kSmemDq) + warpgroup * 2 * P::kDqBoxBytes;

  mbarrier_wait(bar(P::kBarKV), 0);
  FLASHC_BWD_WS_PROBE(1);
  // Packed: rows past the sequence are the next sequence's, or whatever follows the last one. Their scores are
  // masked and their probabilities 0, but 0 x NaN is NaN in dQ = dS K and in dPᵀ = V dOᵀ: the consumers clear
  // K and V past Sk once, and each step's Q and dO past Sq, ordering the stores before the tensor cores' reads.
  // (Named barrier 6 of all consumer threads: the roles reach it from their own code, so the non-aligned form.)
  if constexpr (kPacked) {
    if (k0 + kBlockN > Sk) {
      zero_rows_from<kWarps * 32>(Ks, Sk - k0, static_cast<int>(threadIdx.x));
      zero_rows_from<kWarps * 32>(Vs, Sk - k0, static_cast<int>(threadIdx.x));
      fence_async_shared();
      named_barrier_sync(P::kBarTail, kWarps * 32);
    }
  }
  auto clear_query_tail = [&](int s, int q0) {
    if constexpr (kPacked) {
      if (q0 + kBlockM > Sq) {
        zero_rows_from<kWarps * 32>(q_tile(s), Sq - q0, static_cast<int>(threadIdx.x));
        zero_rows_from<kWarps * 32>(do_tile(s), Sq - q0, static_cast<int>(threadIdx.x));
        fence_async_shared();
        named_barrier_sync_unaligned(P::kBarTail, kWarps * 32);
      }
    }
  };
  if constexpr (P::kKeySplit) {
    // ---- key split: warpgroup g owns keys k0 + 64g.. (its rows of every 128-row tile) ----
    RegTileF32<kBlockN, kValueDim, kTileWarps> acc_dv;
    RegTileF32<kBlockN, kHeadDim, kTileWarps> acc_dk;
    fill(acc_dv, 0.f);
    fill(acc_dk, 0.f);
    // The fences keep the zero fills where they are: without them ptxas serializes every wgmma of the
    // kernel ("insufficient register resources") and spills dQ. (The per-step products, Sᵀ, dPᵀ and dQ, overwrite
    // instead: no fill to move.)
    wgmma_fence_operand(acc_dv);
    wgmma_fence_operand(acc_dk);
    // kDeferDq: dQ over all 128 keys needs both warpgroups' dSᵀ rows, so step i's dQ is issued in step i + 1, once
    // this warpgroup's next rows are stored (four buffers; with two, once that dQ has completed, before they are
    // stored): each warpgroup arrives on its own barrier when its rows are stored and waits on the other's a step
    // later. Freed of meeting every step, the warpgroups take turns instead: warpgroup 1
    // starts step i once warpgroup 0's exponentials of step i are done, warpgroup 0 step i + 1 once warpgroup 1's
    // are, so that one's exponentials run under the other's products (the forward's ping-pong). Meeting every step
    // they ran their exponentials together while the tensor cores waited: 2.6-3.7 % of the main kernel at D = 128
    // (session 41; without the turns the same deferral lost 2-3.5 %).
    struct DqStep { int q0, head, it; };
    DqStep prev{0, 0, -1};
    using DqTile = RegTileF32<kBlockM, kDqCols, P::kDqByRows ? 8 : 4>;
    bool dq_first = true;  // no TMA reduction of this warpgroup issued yet
    // dQ[:, 64g..] (or rows 64g.. at 128 queries a step) over all 128 keys, of the step prev.
    auto issue_prev_dq = [&](DqTile& dq) {
      named_barrier_sync(P::kBarDsReady + P::kDsReadyIds * (1 - warpgroup) + prev.it % P::kDsReadyIds,
                         kWarps * 32);  // the other's dSᵀ rows
      wgmma_matmul_ta<false, true>(dq, ds_tile(prev.it % P::kDsBuffers), Ks, P::kDqByRows ? 0 : warpgroup * kDqCols);
    };
    auto reduce_prev_dq = [&](DqTile& dq) {
      if constexpr (P::kDqFactor != 1.f) scale(dq, P::kDqFactor);
      detail::reduce_dq_tma<true, P::kDqBoxBytes, kPacked>(dq, dq_buffer, tma_dq, P::kDqByRows ? 0 : warpgroup * 64,
                                                           q_start + prev.q0 + (P::kDqByRows ? warpgroup * 64 : 0),
                                                           prev.head, batch, warpgroup, dq_first);
      dq_first = false;
    };
    for_each_query_step<P>(k0, kv_head, batch, group, Sq, Sk, offset, mask_env, walk_table, [&](int it, int head, int q0, int parts, const MaskEnv& env) {
      const int s = it % kStages;
      const DSTile ds_step = ds_tile(it % P::kDsBuffers);
      mbarrier_wait(bar(P::kBarFull + s), phase(it));
      if (it == 0) FLASHC_BWD_WS_PROBE(2);
      clear_query_tail(s, q0);
      if constexpr (P::kSubM < kBlockM) {
        // ---- D = 192: the scores in two halves of 32 queries; half 0's dV and dK products run under half 1's
        // Sᵀ product (the wait for it retires them), half 1's dK under dQ's first product ----
        // dQ[:, 64j..] += dS K[:, 64j..] over all 128 keys, product j of the step from dSᵀ in shared memory,
        // issued here and reduced by TMA into dq_accum once complete.
        auto issue_dq = [&](DqTile& dq, int j) { wgmma_matmul_ta<false, true>(dq, ds_step, Ks, j * kDqCols); };
        // The boxes: this warpgroup's pair, or the spare pair (the second product of the warpgroup that has two).
        // Both are free: the last reductions through them were waited for before kBarDsFree.
        auto reduce_dq = [&](DqTile& dq, int j, bool spare) {
          if constexpr (P::kDqFactor != 1.f) scale(dq, P::kDqFactor);
          const unsigned boxes = spare ? smem_u32(smem + P::kSmemDq) + 4 * P::kDqBoxBytes : dq_buffer;
          detail::reduce_dq_tma<true, P::kDqBoxBytes, kPacked>(dq, boxes, tma_dq, j * kDqCols, q_start + q0, head,
                                                               batch, warpgroup, /*first=*/true);
        };
        RegTile16<Elem, kBlockN, P::kSubM, kTileWarps> pt16[2], dst16[2];
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          const int qh = h * P::kSubM;
          RegTileF32<kBlockN, P::kSubM, kTileWarps> st, dpt;
          wgmma_matmul_tb<false, true>(st, Ks, q_tile(s), qh);    // Sᵀ_h = K Q_hᵀ
          const KeyParts score_keys = key_parts(st, env);         // under Sᵀ_h's product
          wgmma_wait<0>();                                        // Sᵀ_h (and half 0's products)
          wgmma_matmul_tb<false, true>(dpt, Vs, do_tile(s), qh);  // dPᵀ_h = V dO_hᵀ
          modify_scores(st, q0 + qh, env, score_keys);
          if (parts) {
            device::mask_parts<Mask, P::kMaskTable ? MaskForm::kColumns : MaskForm::kRows, true>(
                parts, st, k0 + shift, q0 + qh + shift, Sk + shift, offset, env);
          }
          recompute_probs_cols_log2(st, lse_log2_slot(s) + qh, P::kProbsScaleLog2);  // Pᵀ_h, kept in f32 for dSᵀ_h
          convert(pt16[h], st);
          wgmma_matmul<false>(acc_dv, pt16[h], do_tile(s), qh);  // dV += Pᵀ_h dO_h
          wgmma_wait<1>();                                       // dPᵀ_h
          softmax_grad_cols(dpt, st, delta_slot(s) + qh, P::kScale);  // dSᵀ_h = Pᵀ_h (scale dPᵀ_h - scale D)
          convert(dst16[h], dpt);
          if (h == 0) {
            // dSᵀ's one buffer and the dQ boxes are free once both warpgroups are past the last step's dQ products
            // and their reductions have read the boxes (the spare pair changes hands every step).
            if (wg_thread == 0) tma_wait_group<0>();
            named_barrier_sync(P::kBarDsFree, kWarps * 32);
          }
          store_fragments(ds_step, dst16[h], qh);
          if (h == 0) wgmma_matmul<false>(acc_dk, dst16[0], q_tile(s), 0);  // dK += dSᵀ_0 Q_0
        }
        fence_async_shared();                        // generic-proxy stores -> dQ's wgmma reads
        named_barrier_sync(P::kBarDs, kWarps * 32);  // both warpgroups' dSᵀ rows stored
        // Three products of 64 columns: this warpgroup takes j and j + 2 (2 / 1, swapped every step).
        const int j = (warpgroup + it) & 1;
        {
          DqTile dq;
          issue_dq(dq, j);
          wgmma_matmul<false>(acc_dk, dst16[1], q_tile(s), P::kSubM);  // dK += dSᵀ_1 Q_1, under dQ's reduction
          wgmma_wait<1>();                                              // dQ's product
          reduce_dq(dq, j, false);
        }
        if (j + 2 < P::kDqProducts) {
          DqTile dq;
          issue_dq(dq, j + 2);
          wgmma_wait<0>();
          reduce_dq(dq, j + 2, true);
        }
        wgmma_wait<0>();
        release(s);
      } else {
        RegTileF32<kBlockN, kBlockM, kTileWarps> st, dpt;
        if constexpr (P::kDeferDq) {
          if (it > 0 || warpgroup == 1) named_barrier_sync(P::kBarTurn + warpgroup, kWarps * 32);  // this one's turn
        }
        wgmma_matmul_tb<false, true>(st, Ks, q_tile(s));  // Sᵀ = K Qᵀ
        if constexpr (!P::kLateDp) wgmma_matmul_tb<false, true>(dpt, Vs, do_tile(s));  // dPᵀ = V dOᵀ, under the exponentials
        const KeyParts score_keys = key_parts(st, env);  // under Sᵀ's product
        wgmma_wait<P::kLateDp ? 0 : 1>();
        modify_scores(st, q0, env, score_keys);
        if (parts) {
          // (A modifier that reads tensors: column by column. ptxas spills, row by row / by columns / rolled: 32 / 0
          // / - bytes at D = 64, 0-60 / 0-8 / 256 at D = 128 (GQA the most): mask.cuh.)
          device::mask_parts<Mask, P::kMaskTable ? MaskForm::kColumns : MaskForm::kRows, true>(
              parts, st, k0 + shift, q0 + shift, Sk + shift, offset, env);
        }
        recompute_probs_cols_log2(st, lse_log2_slot(s), P::kProbsScaleLog2);  // Pᵀ = exp(scale Sᵀ - lse), kept in f32 for dSᵀ
        if constexpr (P::kDeferDq) named_barrier_arrive(P::kBarTurn + (1 - warpgroup), kWarps * 32);  // the other's turn
        RegTile16<Elem, kBlockN, kBlockM, kTileWarps> pt16;
        if constexpr (!P::kLateDv) {
          convert(pt16, st);
          wgmma_matmul<false>(acc_dv, pt16, do_tile(s));  // dV += Pᵀ dO
          wgmma_wait<1>();                                 // dPᵀ (dV may still run)
        } else {
          if constexpr (P::kLateDp) wgmma_matmul_tb<false, true>(dpt, Vs, do_tile(s));  // dPᵀ = V dOᵀ
          wgmma_wait<0>();
        }
        softmax_grad_cols(dpt, st, delta_slot(s), P::kScale);  // dSᵀ = Pᵀ (scale dPᵀ - scale D)
        if constexpr (P::kLateDv) {
          convert(pt16, st);
          wgmma_matmul<false>(acc_dv, pt16, do_tile(s));  // dV += Pᵀ dO
        }
        RegTile16<Elem, kBlockN, kBlockM, kTileWarps> dst16;
        convert(dst16, dpt);
        if constexpr (P::kDeferDq) {
          // This step's dSᵀ rows to shared memory (with two buffers: after the previous step's dQ, which reads the
          // other one), the previous step's dQ (both warpgroups' rows of it are there by now unless the other runs a
          // step behind) and dK += dSᵀ Q (dS scaled) under dQ's reduction.
          auto store_ds = [&] {
            store_fragments(ds_step, dst16);
            fence_async_shared();  // generic-proxy stores -> dQ's wgmma reads
            named_barrier_arrive(P::kBarDsReady + P::kDsReadyIds * warpgroup + it % P::kDsReadyIds,
                                 kWarps * 32);  // this warpgroup's rows
          };
          if constexpr (P::kDsBuffers == 4) store_ds();
          // (Each path's products in straight-line code: a product issued under a condition that a later wait
          // and read share made ptxas serialize every wgmma, C7514.)
          if (it > 0) {
            DqTile dq;
            issue_prev_dq(dq);
            if constexpr (P::kDsBuffers == 2) {
              wgmma_wait<0>();  // dV and the previous step's dQ: its read of the buffer stored next is done
              store_ds();
            }
            wgmma_matmul<false>(acc_dk, dst16, q_tile(s));
            wgmma_wait<1>();  // dV, dQ (with two buffers: done already)
            reduce_prev_dq(dq);
          } else {
            if constexpr (P::kDsBuffers == 2) store_ds();
            wgmma_matmul<false>(acc_dk, dst16, q_tile(s));
          }
        } else {
          store_fragments(ds_step, dst16);
          fence_async_shared();                            // generic-proxy stores -> dQ's wgmma reads
          // dQ[:, 64g..] (or rows 64g.. at 128 queries a step) over all 128 keys
          DqTile dq;
          // dQ's product before dK's so that its reductions run under dK's (FA3's order: +4-8 % over dK first,
          // kernel lab run 11).
          named_barrier_sync(P::kBarDs, kWarps * 32);      // both warpgroups' dSᵀ rows stored
          wgmma_matmul_ta<false, true>(dq, ds_step, Ks, P::kDqByRows ? 0 : warpgroup * kDqCols);
          wgmma_wait<1>();                                 // dV done (dQ may still run)
          wgmma_matmul<false>(acc_dk, dst16, q_tile(s));   // dK += dSᵀ Q (dS scaled)
          wgmma_wait<1>();                                 // dQ done
          if constexpr (P::kDqFactor != 1.f) scale(dq, P::kDqFactor);
          detail::reduce_dq_tma<true, P::kDqBoxBytes, kPacked>(dq, dq_buffer, tma_dq, P::kDqByRows ? 0 : warpgroup * 64,
                                                               q_start + q0 + (P::kDqByRows ? warpgroup * 64 : 0), head,
                                                               batch, warpgroup, it == 0);
        }
        wgmma_wait<0>();
        release(s);
        if constexpr (P::kDeferDq) prev = {q0, head, it};
      }
    });
    if constexpr (P::kDeferDq) {
      if (warpgroup == 0 && prev.it >= 0) named_barrier_sync(P::kBarTurn, kWarps * 32);  // warpgroup 1's last turn
      if (prev.it >= 0) {
        DqTile dq;  // the last step's dQ
        issue_prev_dq(dq);
        wgmma_wait<0>();
        reduce_prev_dq(dq);
      }
    }
    FLASHC_BWD_WS_PROBE(3);
    if (wg_thread == 0) tma_wait_group<0, false>();  // shared memory stays until the reductions are done
    FLASHC_BWD_WS_PROBE(4);
    const GlobalMatrix<Elem> dk_rows = sequence_rows<kPacked, Elem>(dk, k_start, Sk, batch, kv_head);
    const GlobalMatrix<Elem> dv_rows = sequence_rows<kPacked, Elem>(dv, k_start, Sk, batch, kv_head);
    RegTile16<Elem, kBlockN, kHeadDim, kTileWarps> dk16;
    convert(dk16, acc_dk);
    RegTile16<Elem, kBlockN, kValueDim, kTileWarps> dv16;
    convert(dv16, acc_dv);
    // dV, then dK (where it is as wide as V; else through K's tile, below), leave through this warpgroup's own rows of
    // V's tile (its own dPᵀ products, their only readers, are complete) as 16-byte row chunks. Fragment stores
    // straight to global (64 4-byte stores a thread, 16 bytes of 8 rows each an instruction) took 3.3 us a key block,
    // 7 % of the window row's main kernel: session 55's phase probe; this form 1.3 us, main kernel window -3.8 %,
    // causal -2.3 % at 16k (H100). Barrier 3 + g: its dQ boxes'.
    store_warpgroup_rows<P::kValueCols>(Vs, dv16, dv_rows, k0, Sk, warpgroup, 3 + warpgroup);
    if constexpr (kHeadDim == kValueDim) {
      named_barrier_sync(3 + warpgroup, 128);  // dV's chunks read before dK's fragments overwrite the rows
      store_warpgroup_rows<P::kHeadCols>(KTile{reinterpret_cast<Elem*>(smem + P::kSmemV)}, dk16, dk_rows, k0, Sk,
                                         warpgroup, 3 + warpgroup);
    } else {
      // dK's width is not V's (D = 192 / Dv = 128, D = 128 / Dv = 64, D = 64 / Dv = 128): through K's tile, whose 128
      // rows every dQ product of both warpgroups reads, once both are past their last (each waited for its own).
      named_barrier_sync(P::kBarDs, kWarps * 32);
      store_warpgroup_rows<P::kHeadCols>(Ks, dk16, dk_rows, k0, Sk, warpgroup, 3 + warpgroup);
    }
    FLASHC_BWD_WS_PROBE(5);
  } else {
    // Pᵀ in fragment order: float4 j of thread t at (j * 128 + t), conflict-free 16-byte accesses.
    auto store_p = [&](const RegTileF32<kBlockN, kBlockM, kTileWarps>& pt) {
#pragma unroll
      for (int nt = 0; nt < 8; ++nt)
        p_exchange[nt * 128 + wg_thread] = make_float4(pt.v[0][nt][0], pt.v[0][nt][1], pt.v[0][nt][2], pt.v[0][nt][3]);
    };
    auto load_p = [&](RegTileF32<kBlockN, kBlockM, kTileWarps>& pt) {
#pragma unroll
      for (int nt = 0; nt < 8; ++nt) {
        const float4 x = p_exchange[nt * 128 + wg_thread];
        pt.v[0][nt][0] = x.x, pt.v[0][nt][1] = x.y, pt.v[0][nt][2] = x.z, pt.v[0][nt][3] = x.w;
      }
    };
    // dQ[:, half] += dS K[:, half] in products of kDqCols columns, each reduced into dq_accum: by TMA
    // (kDqTma) or by the consumers' red.v4.
    bool dq_first = true;  // no TMA reduction of this warpgroup issued yet
    auto dq_half = [&](int head, int q0) {
      const GlobalMatrix<float> dq_rows = sequence_rows<kPacked, float>(dq_accum, q_start, Sq, batch, head);
#pragma unroll 1
      // (Columns past the tensor's width, the padding of D = 192 to 256, have no product.)
      for (int c = warpgroup * (kHeadDim / 2); c < (warpgroup + 1) * (kHeadDim / 2) && (P::kDqTma || c < P::kHeadCols);
           c += kDqCols) {
        if (P::kDqTma && c >= P::kHeadCols) {
          // Past the tensor's width: no product, but the TMA path's two warpgroup barriers all the same, so that
          // both roles pass as many a step. With fewer on one side, compute-sanitizer's racecheck reported the
          // Pᵀ exchange (arrive -> sync between the roles) as a RAW hazard; adding barriers cannot create a
          // race, and with equal counts it reports none (session 13, calls 7-9).
          named_barrier_sync_unaligned(3 + warpgroup, 128);
          named_barrier_sync_unaligned(3 + warpgroup, 128);
          continue;
        }
        RegTileF32<kBlockM, kDqCols, 4> dq;
        wgmma_matmul_ta<true, true>(dq, dSs, Ks, c);
        if constexpr (P::kDqFactor != 1.f) scale(dq, P::kDqFactor);
        if constexpr (P::kDqTma) {
          detail::reduce_dq_tma<false, P::kDqBoxBytes, kPacked>(dq, dq_buffer, tma_dq, c, q_start + q0, head, batch,
                                                                warpgroup, dq_first);
          dq_first = false;
        } else {
          // 64-byte row segments: the 8-byte form was L2-request-bound (kernel lab run 10: +14-18 %).
          atomic_add_row_segments(tile_window(dq_rows, c, Sq, P::kHeadCols), q0, dq);
        }
      }
    };
    if (warpgroup == 0) {
      // ---- probabilities: Pᵀ, dV ----
      RegTileF32<kBlockN, kValueDim, kTileWarps> acc_dv;
      fill(acc_dv, 0.f);
      for_each_query_step<P>(k0, kv_head, batch, group, Sq, Sk, offset, mask_env, walk_table, [&](int it, int head, int q0, int parts, const MaskEnv& env) {
        const int s = it % kStages;
        mbarrier_wait(bar(P::kBarFull + s), phase(it));
        clear_query_tail(s, q0);
        RegTile16<Elem, kBlockN, kBlockM, kTileWarps> pt16;
        {
          RegTileF32<kBlockN, kBlockM, kTileWarps> st;
          wgmma_matmul_tb<true, true>(st, Ks, q_tile(s));  // Sᵀ = K Qᵀ
          modify_scores(st, q0, env, key_parts(st, env));
          if (parts) {  // (a modifier that reads tensors: the rolled form, which spills none here; mask.cuh)
            device::mask_parts<Mask, P::kMaskTable ? MaskForm::kRolled : MaskForm::kRows, true>(
                parts, st, k0 + shift, q0 + shift, Sk + shift, offset, env);
          }
          recompute_probs_cols_log2(st, lse_log2_slot(s), P::kProbsScaleLog2);  // Pᵀ = exp(scale Sᵀ - lse)
          store_p(st);
          convert(pt16, st);
        }
        arrive_roles(P::kBarP);
        wgmma_matmul<false>(acc_dv, pt16, do_tile(s));  // dV += Pᵀ dO, while warpgroup 1 forms dSᵀ
        sync_roles(P::kBarDs);
        wgmma_wait<0>();
        dq_half(head, q0);
        release(s);
      });
      if (P::kDqTma && wg_thread == 0) tma_wait_group<0, false>();  // shared memory stays until the reductions are done
      RegTile16<Elem, kBlockN, kValueDim, kTileWarps> dv16;
      convert(dv16, acc_dv);
      // dV leaves through V's tile as 16-byte row chunks: only warpgroup 1's dPᵀ products read the tile, and each was
      // complete before warpgroup 1 reached the barrier (kBarDs) that this warpgroup passed last. Fragment stores
      // straight to global cost the D = 256 main kernel 7-10 % at 1k, 2-4 % at 4k (session 56, kernel lab run 29).
      store_warpgroup_rows<P::kValueCols>(Vs, dv16, sequence_rows<kPacked, Elem>(dv, k_start, Sk, batch, kv_head),
                                          k0, Sk, /*warpgroup (its tile's rows 0..)=*/0, 3);
    } else {
      // ---- score gradient: dSᵀ, dK ----
      RegTileF32<kBlockN, kHeadDim, kTileWarps> acc_dk;
      fill(acc_dk, 0.f);
      int steps = 0;
      for_each_query_step<P>(k0, kv_head, batch, group, Sq, Sk, offset, mask_env, walk_table, [&](int it, int head, int q0, int, const MaskEnv&) {
        const int s = it % kStages;
        steps = it + 1;
        mbarrier_wait(bar(P::kBarFull + s), phase(it));
        clear_query_tail(s, q0);
        RegTileF32<kBlockN, kBlockM, kTileWarps> dpt;
        wgmma_matmul_tb<false, true>(dpt, Vs, do_tile(s));  // dPᵀ = V dOᵀ
        RegTile16<Elem, kBlockN, kBlockM, kTileWarps> dst16;
        {
          RegTileF32<kBlockN, kBlockM, kTileWarps> pt;
          sync_roles(P::kBarP);
          load_p(pt);
          wgmma_wait<0>();
          softmax_grad_cols(dpt, pt, delta_slot(s), P::kScale);  // dSᵀ = Pᵀ (scale dPᵀ - scale D)
          convert(dst16, dpt);
        }
        store_fragments(dSs, dst16);
        fence_async_shared();  // generic-proxy stores -> the wgmma (async proxy) reads of dQ
        wgmma_matmul<false>(acc_dk, dst16, q_tile(s));  // dK += dSᵀ Q (dS scaled)
        sync_roles(P::kBarDs);
        wgmma_wait<0>();
        dq_half(head, q0);
        release(s);
      });
      if (P::kDqTma && wg_thread == 0) tma_wait_group<0, false>();  // shared memory stays until the reductions are done
      RegTile16<Elem, kBlockN, kHeadDim, kTileWarps> dk16;
      convert(dk16, acc_dk);
      // dK through the Q slot of the step before the last (in a walk of 0 or 1 steps, one never loaded): both roles
      // finished that step before this warpgroup passed the last step's kBarP, and the producer loads no later step.
      const int spent = ((steps - 2) % kStages + kStages) % kStages;
      store_warpgroup_rows<P::kHeadCols>(q_tile(spent), dk16,
                                         sequence_rows<kPacked, Elem>(dk, k_start, Sk, batch, kv_head), k0, Sk,
                                         /*warpgroup (its tile's rows 0..)=*/0, 4);
    }
  }
}

}  // namespace detail

// The whole kernel body; call it from a __launch_bounds__(kThreads, 1) kernel whose maps are
// `const __grid_constant__` parameters. key_offset: the key position of query row 0 (clamped).
// mask_env: the tensors a mask modifier reads; mask_blocks: their block-class table, rows of keys; score_env: the
// tensors the score modifier reads.
template <class Config>
__device__ __forceinline__ void attention_bwd_ws(const TmaDescriptor& tma_q, const TmaDescriptor& tma_k,
                                                 const TmaDescriptor& tma_v, const TmaDescriptor& tma_do,
                                                 const TensorArg& q, const TensorArg& k, const TensorArg& lse,
                                                 const TensorArg& delta, const TensorArg& dq_accum,
                                                 const TensorArg& dk, const TensorArg& dv, int key_offset,
                                                 const TmaDescriptor* tma_dq = nullptr,
                                                 const MaskEnv& mask_env = MaskEnv(),
                                                 const TensorArg* mask_blocks = nullptr,
                                                 const MaskEnv& score_env = MaskEnv()) {
  static_assert(!AttentionBwdWsPlan<Config>::kSegments, "ws backward: a segment Config takes attention_bwd_ws_segments");
  detail::attention_bwd_ws_body<Config, false>(tma_q, tma_k, tma_v, tma_do, q, k, lse, delta, dq_accum, dk, dv,
                                               key_offset, tma_dq, mask_env, mask_blocks, score_env,
                                               PackedQueryTiles());
}

// The segment form (Config::kSegments, segments.cuh): a document modifier's backward over dense tensors whose key
// tiles come from attention_segment_plan's `plan` (the other arguments as the dense form's). Launch: grid
// (segment_tile_bound(Sk, kBlockN), heads_kv, batch), read in head groups as the dense grid; where the plan fell
// back, tiles x < ceil(Sk / kBlockN) are the dense grid's and walk the table, the others leave.
template <class Config>
__device__ __forceinline__ void attention_bwd_ws_segments(const TmaDescriptor& tma_q, const TmaDescriptor& tma_k,
                                                          const TmaDescriptor& tma_v, const TmaDescriptor& tma_do,
                                                          const TensorArg& q, const TensorArg& k, const TensorArg& lse,
                                                          const TensorArg& delta, const TensorArg& dq_accum,
                                                          const TensorArg& dk, const TensorArg& dv, int key_offset,
                                                          const TmaDescriptor* tma_dq, const MaskEnv& mask_env,
                                                          const TensorArg* mask_blocks, const TensorArg& plan,
                                                          const MaskEnv& score_env = MaskEnv()) {
  using P = AttentionBwdWsPlan<Config>;
  static_assert(P::kSegments && P::kMaskTable, "ws backward: the segment form is a document modifier's (a table)");
  const QueryTile grid_tile = grid_tile_in_head_groups<P::kGridHeadGroup>();
  const SegmentTile found = SegmentTile::find<P::kBlockN, /*kLongestFirst=*/false, /*kKeyTiles=*/true>(
      plan, static_cast<int>(q.shape[2]), static_cast<int>(k.shape[2]), grid_tile.m_block, grid_tile.head,
      grid_tile.batch);
  if (!found.valid()) return;  // past the last key tile
  PackedQueryTiles tile;
  tile.tile = found.tile;
  tile.span = found.span;
  tile.segment = found.segment;
  detail::attention_bwd_ws_body<Config, false>(tma_q, tma_k, tma_v, tma_do, q, k, lse, delta, dq_accum, dk, dv,
                                               key_offset, tma_dq, mask_env, mask_blocks, score_env, tile);
}

// Packed variable-length sequences (varlen.cuh): q, k, v, dO [T, H, D] with 3-D maps (box (64, 1, rows)), lse and
// delta = rowsum(dO O) [Hq, Tq] f32, dq_accum [Tq, Hq, D] f32 (zeroed; tma_dq its 3-D map, box (32, 1, 64)), dk,
// dv [Tk, Hkv, D]; key_map and status from attention_varlen_plan(..., kBlockN, key_tiles = true) (dk and dv set to
// NaN when the status is set). Launch: grid (packed_tile_bound(Tk, B, kBlockN), Hkv, 1).
template <class Config>
__device__ __forceinline__ void attention_bwd_ws_varlen(const TmaDescriptor& tma_q, const TmaDescriptor& tma_k,
                                                        const TmaDescriptor& tma_v, const TmaDescriptor& tma_do,
                                                        const TensorArg& q, const TensorArg& k, const TensorArg& lse,
                                                        const TensorArg& delta, const TensorArg& dq_accum,
                                                        const TensorArg& dk, const TensorArg& dv,
                                                        const TensorArg& cu_q, const TensorArg& cu_k,
                                                        const TensorArg& key_map, const int* status,
                                                        const TmaDescriptor* tma_dq) {
  using P = AttentionBwdWsPlan<Config>;
  if (varlen_rejected(status)) {
    varlen_poison_rows<typename Config::Elem>(dk, nullptr, P::kBlockN);
    return varlen_poison_rows<typename Config::Elem>(dv, nullptr, P::kBlockN);
  }
  const PackedQueryTiles packed =
      PackedQueryTiles::find<false, /*kKeyTiles=*/true>(cu_q, cu_k, key_map, P::kBlockN, status);
  if (!packed.valid()) return;  // past the last key tile
  detail::attention_bwd_ws_body<Config, true>(tma_q, tma_k, tma_v, tma_do, q, k, lse, delta, dq_accum, dk, dv, 0,
                                              tma_dq, MaskEnv(), nullptr, MaskEnv(), packed);
}

}  // namespace device
}  // namespace flashc
