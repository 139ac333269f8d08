//===- Target.h - GPU target descriptions for tiling ----------*- C++ -*-===//
//
// What the tile level needs to know about a GPU: shared memory per block,
// registers, the MMA shape and the codegen strategy; and the default block
// sizes per kernel recipe. flash-tile builds kernels at these defaults and
// flash-plan-memory re-plans (and checks) them.
//
//===----------------------------------------------------------------------===//
#ifndef FLASHC_COMPILER_TARGET_H
#define FLASHC_COMPILER_TARGET_H

#include "flashc/Compiler/ScheduleDefaults.h"
#include "flashc/Compiler/TileKernels.h"

#include "llvm/ADT/StringRef.h"

#include <optional>
#include <string>

namespace flashc {

struct TargetDescription {
  llvm::StringLiteral name;     // "sm_80", "sm_90a"
  int64_t sharedMemoryPerBlock; // bytes of dynamic shared memory one block may use
  int64_t registersPerThread;   // architectural maximum
  int64_t mmaM, mmaN, mmaK;     // mma.sync shape (m16n8k16)
  mlir::tile::Strategy strategy;
};

/// The description of `name` ("sm_80", "sm_90a") or null.
const TargetDescription *lookupTarget(llvm::StringRef name);

/// Comma-separated list of known targets, for diagnostics.
std::string knownTargetNames();

/// Why `arch` (an architecture without a description) cannot be planned, and
/// what to give instead: never a silent fallback to another target's plan.
std::string unknownTargetMessage(llvm::StringRef arch);

/// Whether the wgmma_sm90 attention kernels (the cp.async forward, the Sᵀ
/// backward) take head dims D and Dv: D = Dv in {64, 128}.
bool wgmmaAttentionTakes(int64_t headDim, int64_t valueDim);

/// Whether the wgmma_ws_sm90 forward takes head dims D (Q, K) and Dv (V, O):
/// multiples of 8 up to 256, D above 32. Its tiles are padded (the TMA
/// zero-fills the columns past the tensors', the epilogue stores Dv).
bool wsForwardTakes(int64_t headDim, int64_t valueDim);

/// Its Q/K tile width: D rounded up to whole 64-column panels.
int64_t wsForwardHeadTile(int64_t headDim);

/// Its V/O tile width, the N of the P·V wgmma: 64, 128 or 256.
int64_t wsForwardValueTile(int64_t valueDim);

/// The register budget of each of its `consumerWarpgroups` consumer
/// warpgroups beside a 24-register producer: 240 (two), 160 (three).
int64_t wsConsumerRegisters(int64_t consumerWarpgroups);

/// Whether its consumer registers hold O, S and P at these sizes (the device
/// library's AttentionFwdWsPlan static_assert; Dv padded to its tile): 64 or
/// 128 keys a block within 176 registers (two consumer warpgroups); the wide
/// key block (kWideForwardBlockN) within 208, on two.
bool wsForwardFitsRegisters(int64_t valueDim, int64_t blockN, int64_t consumerWarpgroups = 2);

/// The warp-specialised attention forward's wide key block: 192 keys
/// (FlashAttention-3's wide tile at D <= 128: fewer O rescales and turn
/// hand-overs a key), on two consumer warpgroups with Dv <= 128, where the
/// softmax holds nothing else (no softcap, no score modifier but a separable
/// one, no mask modifier that reads tensors) and the fused FFN never
/// (WsForwardSizes::wideKeys).
constexpr int64_t kWideForwardBlockN = 192;

/// The attention forward's default consumer warpgroups (64 query rows each):
/// three (192 rows a tile, FlashAttention-3's at head dims <= 64) where both
/// head dims are at most 64, else two. The fused FFN's form has two.
int64_t wsForwardConsumerWarpgroups(int64_t headDim, int64_t valueDim);

/// Its default keys per block: 128 where the registers and two K/V stages
/// fit, else 64 (D = Dv = 256).
int64_t wsForwardBlockN(int64_t headDim, int64_t valueDim, const TargetDescription &target,
                        int64_t consumerWarpgroups = 2);

/// Dynamic shared memory of the wgmma_ws_sm90 forward: Q [blockM x max(D, Dv)]
/// (also the epilogue's O staging), `stages` K [blockN x D] and V [blockN x
/// Dv] slots, 8-byte mbarriers (`residentBarriers` for the resident tile --
/// the attention forward: 2, Q landed and Q free again for a persistent
/// block's next tile; the fused FFN: 1 -- and full and empty per slot of K and
/// V) and 1024 bytes to align the base; the device library's
/// AttentionFwdWsPlan / FfnFwdWsPlan::kSmemBytes (the emitted source
/// static_asserts both agree).
int64_t wsForwardSharedBytes(int64_t headDim, int64_t valueDim, int64_t blockN, int64_t stages,
                             int64_t elementBytes, int64_t residentBarriers, int64_t blockM = 128);

/// Whether the wgmma_ws_sm90 fused FFN takes model width `inputDim` (x, W1
/// rows), hidden width `hiddenDim` and output width `outputDim`: 16-bit, not
/// gated, d and d_out multiples of 8 up to 256 (its x and W2 tiles are the
/// attention forward's Q and V tiles: wsForwardHeadTile / wsForwardValueTile,
/// and its ring the same bytes: wsForwardSharedBytes), h a multiple of 8.
bool wsFfnTakes(int64_t inputDim, int64_t hiddenDim, int64_t outputDim, mlir::Type element,
                bool gated);

/// Contraction rows a split-K slice covers (gemm_split_k: its grid's z, and
/// the warp-specialised form's kSplitK), whole block_k steps.
inline constexpr int64_t kSplitKRows = 4096;

/// Whether `gemm`'s role is one the warp-specialised persistent GEMM serves:
/// gemm, gated_gemm or gemm_split_k (wsGemmRefusal says whether it takes the
/// kernel).
bool isWsGemmRole(mlir::tile::GemmSpecAttr gemm);

/// Why the warp-specialised persistent GEMM (the device library's gemm_ws)
/// does not take a kernel of recipe `spec` with arguments `argTypes`, or
/// nothing when it does: role gemm, gated_gemm or gemm_split_k (a weight
/// gradient: A [K, M] transposed, B [K, N], an f32 C added into), 16-bit (accumulating into C:
/// a plain GEMM that saves nothing), A, C
/// (and the saved tensors) of rank 2 or 3 (a batch first; A not transposed
/// then), rank-2 weights, A and B not both transposed (gated: neither), and
/// every tensor's rows a static multiple of 8 elements (16 bytes: what a TMA
/// map describes).
std::optional<std::string> wsGemmRefusal(mlir::Attribute spec, llvm::ArrayRef<mlir::Type> argTypes);

/// The tiles a wgmma_ws_sm90 GEMM's epilogue reads (C += ...: C; act_grad:
/// P; the gated act_grad: g and u): it then holds a buffer for each 64-column
/// piece of each.
int64_t wsGemmTilesRead(mlir::tile::GemmSpecAttr gemm);

/// Whether the persistent GEMM's consumer warpgroups may ping-pong (take
/// 64-row tiles in turn, one's epilogue under the other's products): its plain
/// and gated forms; not split over K (whose units add from registers).
bool wsGemmPingPongTakes(mlir::tile::GemmSpecAttr gemm);

/// Whether they do: the kernel's tuning-table knob where it has one, else the
/// hand rule (the fused dpre, C = A·Bᵀ ∘ act'(P), at a static K of at most
/// 256, whose epilogue outlasts its products); never where the form does not
/// take it. `argTypes`: the kernel's (A first).
bool wsGemmPingPong(mlir::tile::GemmSpecAttr gemm, llvm::ArrayRef<mlir::Type> argTypes,
                    std::optional<bool> tableKnob);

/// The largest contraction the resident-B GEMM (gemm_resident_b.cuh) keeps in
/// shared memory.
inline constexpr int64_t kResidentBMaxK = 256;

/// The contraction a resident-B GEMM of `gemm` over `argTypes` holds (K
/// rounded up to whole 64-column blocks), or 0 where the form does not take
/// the kernel: role gemm (not gated, not accumulating, saving nothing), A [M,
/// K] of rank 2 not transposed, and a static K of at most kResidentBMaxK.
int64_t wsGemmResidentK(mlir::tile::GemmSpecAttr gemm, llvm::ArrayRef<mlir::Type> argTypes);

/// Whether the persistent GEMM keeps B's column block resident (the
/// resident-B form: a block's run of 64-row tiles in column-block-major order
/// against one slab of B, its consumers taking the tiles in turn): the
/// kernel's tuning-table knob where it has one (a point of the gemm space;
/// the hand rule keeps gemm_ws); never where the form does not take it.
bool wsGemmResidentB(mlir::tile::GemmSpecAttr gemm, llvm::ArrayRef<mlir::Type> argTypes,
                     std::optional<bool> tableKnob);

/// A table entry's schedule knobs for the persistent GEMM (none: the hand
/// rules').
struct WsGemmKnobs {
  std::optional<bool> pingPong, residentB;
};

/// The persistent GEMM's form: whether its consumers take 64-row tiles in
/// turn, and the contraction B's resident slab holds (0: B streams through
/// the ring with A; > 0: the resident-B form, whose consumers always take
/// turns).
struct WsGemmForm {
  bool pingPong = false;
  int64_t residentK = 0;
};

/// The form `knobs` or the hand rules (wsGemmResidentB, wsGemmPingPong) give
/// `gemm` over `argTypes`: the one decision flash-plan-memory,
/// flash-warp-specialize and the FFN backward's fusion choice share.
WsGemmForm wsGemmFormOf(mlir::tile::GemmSpecAttr gemm, llvm::ArrayRef<mlir::Type> argTypes,
                        WsGemmKnobs knobs = {});

/// Whether a wgmma_ws_sm90 plan for `gemm` has the library's shape in `form`:
/// 128 rows on 8 consumer warps (two warpgroups; ping-pong: 64-row tiles, one
/// a warpgroup), 128 or 256 columns (gated: 128 of each weight), 64 of K, 2-4
/// stages (resident-B: A's slots), within 227 KB of shared memory.
bool wsGemmPlanTakes(mlir::tile::GemmSpecAttr gemm, int64_t blockM, int64_t blockN, int64_t blockK,
                     int64_t warps, int64_t stages, WsGemmForm form = {});

/// The deepest ring (4, 3 or 2 stages; resident-B: 3 or 2, its space's) with
/// which a wgmma_ws_sm90 plan of `gemm` at blockN columns in `form` fits;
/// none when even 2 do not. The hand rule's depth, and a table entry's where
/// it gives none.
std::optional<int64_t> wsGemmDeepestStages(mlir::tile::GemmSpecAttr gemm, int64_t blockN, WsGemmForm form);

/// Whether the persistent GEMM takes `plan` (a hand rule's, with a table
/// entry's fields applied) for `gemm` over `argTypes`, its consumers
/// ping-ponging and B resident as `knobs` or the hand rules say
/// (wsGemmPingPong, wsGemmResidentB); where no width was given (`widthGiven`
/// false) a resident-B plan takes 128 columns where the hand rule's do not
/// fit, and where no stage count was given (`stagesGiven` false) the plan
/// takes the deepest ring that fits, since the hand rule chose them for the
/// hand rule's form. flash-plan-memory and the FFN backward's fusion choice
/// ask the same.
bool wsGemmFitPlan(mlir::tile::GemmSpecAttr gemm, llvm::ArrayRef<mlir::Type> argTypes, WsGemmKnobs knobs,
                   bool widthGiven, bool stagesGiven, TilePlan &plan);

/// Its dynamic shared memory: `stages` slots of A [128 x 64] (ping-pong: its
/// 64-row tiles' [64 x 64]) and B [64 x blockN] (gated: both weights' blockN
/// columns), the 64 x 64 epilogue pieces (two a consumer warpgroup, or
/// blockN / 64 for each tile the epilogue reads, each with an mbarrier; none
/// split over K, whose sums leave by reductions from registers), 2·stages
/// ring mbarriers and 1024 bytes to align the base: GemmWsPlan::kSmemBytes
/// (the emitted source static_asserts both agree).
int64_t wsGemmSharedBytes(int64_t blockN, int64_t stages, int64_t elementBytes, bool gated, int64_t tilesRead,
                          bool splitK = false, bool pingPong = false);

/// The resident-B form's: B's slab [residentK x blockN], `stages` slots of A's
/// 64-row tiles (all of residentK), two tile buffers [64 x blockN] a consumer
/// warpgroup, 2 + 2·stages + 8 mbarriers and 1024 bytes to align the base:
/// GemmResidentBPlan::kSmemBytes.
int64_t wsGemmResidentSharedBytes(int64_t blockN, int64_t stages, int64_t residentK, int64_t elementBytes);

/// A plan's dynamic shared memory in `form`: wsGemmResidentSharedBytes or
/// wsGemmSharedBytes.
int64_t wsGemmPlanSharedBytes(mlir::tile::GemmSpecAttr gemm, int64_t blockN, int64_t stages, WsGemmForm form);

/// The sizes a warp-specialised forward kernel's tiles come from: the
/// attention forward's D and Dv, or the fused FFN's d (x, W1 rows) and d_out
/// (W2, y); none for other recipes.
struct WsForwardSizes {
  int64_t headDim, valueDim, elementBytes;
  int64_t residentBarriers; // wsForwardSharedBytes' argument for this kernel
  int64_t maxConsumerWarpgroups; // the attention forward: 3; the fused FFN: 2
  bool wideKeys; // kWideForwardBlockN keys a block may be planned
};
std::optional<WsForwardSizes> wsForwardSizes(mlir::Attribute spec,
                                             llvm::ArrayRef<mlir::Type> argTypes);

/// Whether a wgmma_ws_sm90 forward plan has the device library's shape: 64
/// query rows (x rows) on 4 warps a consumer warpgroup, 2 (or, for the
/// attention forward, 3) of them; 64 or 128 keys a block (or, where
/// sizes.wideKeys, kWideForwardBlockN) whose O, S and P fit the consumers'
/// registers; a ring of 1-4 stages. flash-plan-memory and the
/// emitter check plans against this one rule.
bool wsForwardPlanTakes(const WsForwardSizes &sizes, int64_t blockM, int64_t blockN, int64_t warps,
                        int64_t stages);

/// The warp-specialised TMA attention backward (the device library's
/// attention_bwd_ws) takes these head dims: multiples of 8 up to 256, one of
/// them above 32 (D = 32 keeps mma.sync: a 64-column tile would double it).
bool wsBackwardTakes(int64_t headDim, int64_t valueDim);
/// Its consumer split, the hand rule: by keys (128 a block, each warpgroup
/// holding dK and dV of its 64 keys) up to D = 192 with Dv <= 128, else by
/// role (64 keys a block, one accumulator a warpgroup).
bool wsBackwardKeySplit(int64_t headDim, int64_t valueDim);
/// Where each split can run (a tuning point): the key split up to D = 192 with
/// Dv <= 128 (at D = 192 the scores in two halves of 32 queries), the role
/// split where a head dim is above 128.
bool wsBackwardKeySplitTakes(int64_t headDim, int64_t valueDim);
bool wsBackwardRoleSplitTakes(int64_t headDim, int64_t valueDim);
/// Its key block: 128 (key split) or 64 (role split).
int64_t wsBackwardBlockN(bool keySplit);
/// Its queries a step: 128 where both head dims are at most 64 (the key
/// split's 128 x 128 tile, FlashAttention-3's at D = 64; dQ split by rows),
/// else 64.
int64_t wsBackwardBlockM(int64_t headDim, int64_t valueDim);
/// Whether `spec` is a main backward kernel's recipe (dK, dV and dQ by
/// atomics: the roles attention_bwd_ws can replace).
bool isWsBackward(mlir::Attribute spec);
/// Whether an attention's key blocks can differ in work: a window (causal
/// included) or a mask modifier (unmasked, every key block walks every query).
bool keyBlocksDiffer(mlir::tile::AttentionSpecAttr attention);
/// ... and this main-kernel recipe (16-bit, no softcap, no score modifier but one whose derivative is 1
/// (#tile.attention score_additive), and the head dims): the hand rule.
bool takesWsBackward(mlir::tile::AttentionSpecAttr attention);
/// Its Q/K tile width (64 at 128 queries a step, else 128, 192 under the key
/// split or 256; V's is wsForwardValueTile) and shared memory in bytes
/// (AttentionBwdWsPlan::kSmemBytes).
/// `turns`: whether its consumers take turns (wsBackwardTurnsTake; the hand
/// rule wsBackwardTakesTurns where not given), which sets dSᵀ's buffers.
int64_t wsBackwardHeadTile(int64_t headDim, int64_t valueDim, bool keySplit);
int64_t wsBackwardSharedBytes(int64_t headDim, int64_t valueDim, int64_t stages,
                              int64_t elementBytes, bool keySplit,
                              std::optional<bool> turns = std::nullopt);
/// Whether it adds dQ by TMA tensor reductions through shared memory (two
/// 16 KB boxes): the key split always, the role split where they fit beside
/// its tiles and ring in the library's 227 KB (D = 192 / Dv = 128 at 2 stages;
/// not D = 256), else by the consumers' red.v4.
bool wsBackwardDqTma(int64_t headDim, int64_t valueDim, int64_t stages, int64_t elementBytes,
                     bool keySplit);
/// Whether its consumer warpgroups can take turns (#tile.warp_specialized
/// ping_pong; AttentionBwdWsPlan::kDeferDq): under the key split but at D = 192
/// (whose single dSᵀ buffer leaves room for spare dQ boxes), a step's dQ is
/// issued in the next step and the warpgroups' exponentials alternate; in
/// the other form both meet at one barrier a step before their dQ products.
bool wsBackwardTurnsTake(int64_t headDim, int64_t valueDim, bool keySplit);
/// The hand rule: they take turns at 64 queries a step where a ring of four
/// dSᵀ buffers fits beside the rest (D = 96-128 at two stages: measured -2.6
/// to -3.7 % against meeting, session 41). Elsewhere turns are a tuning point
/// (`ping_pong=1` in an attention_backward entry): two buffers, each
/// warpgroup's dQ read of a step complete before it stores its next rows.
bool wsBackwardTakesTurns(int64_t headDim, int64_t valueDim, int64_t stages, int64_t elementBytes,
                          bool keySplit);
/// Whether a plan is one of its forms for this recipe: block_n 128 on 8 warps
/// (the key split, the Sᵀ form's kernel) or 64 on 4 (the role split), its
/// queries a step, 1-4 ring stages.
bool wsBackwardPlanTakes(mlir::tile::AttentionSpecAttr attention, const TilePlan &plan);
/// Whether a ws-backward plan splits its consumers by keys (its block_n).
bool wsBackwardPlanSplitsKeys(const TilePlan &plan);

/// Default plan (the hand rules) for a kernel recipe (#tile.attention or
/// #tile.gemm); the kernel's argument types where a plan depends on its sizes
/// (the ws FFN). A tuning-table entry replaces it (Tuning.h); the forms the
/// rules do not pick are points of the kinds' tuning spaces (TuningSpace.cpp).
TilePlan defaultPlan(const TargetDescription &target, mlir::Attribute spec,
                     llvm::ArrayRef<mlir::Type> argTypes = {});

/// Whether `--backward-form=auto` picks the Sᵀ backward for an attention whose
/// transposed main-kernel recipe is `spec`: where its plan is the wgmma form,
/// measured faster than the row form on the H200.
bool prefersTransposedBackward(const TargetDescription &target, mlir::Attribute spec);

/// Whether the FFN backward computes dpre = (dy·W2ᵀ) ∘ act'(pre) as one GEMM
/// with the derivative in its epilogue (`actGradSpec`, a #tile.gemm with
/// act_grad, over `argTypes` = dy, W2, pre, dpre; gated: dy, W2, g, u, dg, du)
/// rather than the plain GEMM dh = dy·W2ᵀ and the elementwise
/// ffn_activation_grad: where its plan is the warp-specialised GEMM (sm_90a,
/// 16-bit), which loads the tile of pre under the product; measured
/// 1.05-1.19x eager's two kernels on the H200. The cp.async wgmma form with the
/// derivative ran at 0.5-0.7x a plain GEMM. Never the gated FFN's by hand (it
/// measured slower than the split form at d = 4096: a table entry plans it).
bool prefersFusedActivationGrad(const TargetDescription &target, mlir::Attribute actGradSpec,
                                llvm::ArrayRef<mlir::Type> argTypes);

/// Rough per-thread register need of a kernel built from `spec` with `plan`
/// (f32 accumulators and score tiles spread over the block, plus addressing).
int64_t estimateRegistersPerThread(mlir::Attribute spec, const TilePlan &plan,
                                   llvm::ArrayRef<mlir::Type> argTypes);

/// Whether the back-to-back fused FFN (hidden tile kept on chip, output row
/// block [Bm x d_out] accumulated in registers; `gated` adds the up
/// projection) fits `target` for this output width; `reason` says why not.
bool fusedFfnFits(const TargetDescription &target, int64_t outputDim, mlir::Type element,
                  bool gated, const TilePlan &plan, std::string &reason);

} // namespace flashc

#endif // FLASHC_COMPILER_TARGET_H
