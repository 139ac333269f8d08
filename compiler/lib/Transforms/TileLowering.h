//===- TileLowering.h - shared helpers of flash -> tile passes -*- C++ -*-===//
//
// Internal to compiler/lib: recipes from flash ops and a builder of tile
// programs (func.func marked tile.program: workspaces + launches), used by
// flash-tile and flash-generate-backward.
//
//===----------------------------------------------------------------------===//
#ifndef FLASHC_COMPILER_LIB_TILELOWERING_H
#define FLASHC_COMPILER_LIB_TILELOWERING_H

#include "flashc/Compiler/Target.h"
#include "flashc/Compiler/TileKernels.h"
#include "flashc/Compiler/Tuning.h"
#include "flashc/Dialect/Flash/IR/FlashOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/SymbolTable.h"

#include <string>

namespace flashc {

enum class FfnPlanChoice { Auto, Fused, TwoKernel };

/// True when `func` contains a flash.attention or flash.ffn.
bool hasFusedOps(mlir::func::FuncOp func);

/// The module's tile.mask_mod holding `op`'s mask_mod region (made on first
/// use, named by its content, so that the forward and backward kernels and the
/// op's clones share it); null when `op` has none.
mlir::FlatSymbolRefAttr maskModSymbol(mlir::flash::AttentionOp op);

/// The module's tile.score_mod holding `op`'s score_mod region (the same
/// rules); null when `op` has none.
mlir::FlatSymbolRefAttr scoreModSymbol(mlir::flash::AttentionOp op);

/// Does `op`'s mask modifier read tensors (its operands)? Then its kernels
/// take the table of the modifier's 64 x 64 block classes, which a kernel of
/// role attention_mask_blocks(_transposed) writes before them.
bool maskModReadsTensors(mlir::flash::AttentionOp op);
/// The window (left, right; -1 unbounded) of a mask modifier that is a band of
/// diagonals around the main one (flashc::diagonalBand), over no mask
/// attribute: the kernels then run that window on the modifier's top-left
/// positions (#tile.attention top_left) and not the modifier.
std::optional<std::pair<int64_t, int64_t>> maskModWindow(mlir::flash::AttentionOp op);

/// Checks that the kernels can honour the sizes of fused op `op`
/// (flash.attention or flash.ffn; others pass): static sizes within the
/// kernels' 32-bit indices, head dims and 16-bit row lengths the device
/// library's tile layouts hold. Reports on `op`, prefixed with `pass`
/// (KernelLimits.cpp).
mlir::LogicalResult checkKernelLimits(mlir::Operation *op, llvm::StringRef pass);

/// Marks flash-generate-backward's clone `<func>_forward_train` of a forward
/// function: flash-tile lowers it to a forward program that also saves, per
/// flash.ffn, what the backward reads instead of recomputing it
/// (savedActivationNames).
constexpr llvm::StringLiteral kTrainForwardAttrName = "flash.train_forward";

/// Appends to a program signature the activations a training forward saves
/// for one flash.ffn's backward, in program order: plain pre = x·W1 + b1 and
/// h = act(pre); gated g = x·Wg, u = x·Wu and h = act(g) ∘ u (`suffix` names
/// the n-th FFN of a function; `unique` makes a name unique in the program),
/// [..., M, H] over x's size symbols `xDims`. flash-tile's training forward
/// and flash-generate-backward's backward both call it, so the two programs
/// name them alike. Returns the index of the first.
unsigned appendSavedActivations(mlir::flash::FfnOp ffn, llvm::StringRef suffix,
                                llvm::ArrayRef<std::string> xDims,
                                llvm::function_ref<std::string(const std::string &)> unique,
                                llvm::SmallVectorImpl<mlir::Type> &types,
                                llvm::SmallVectorImpl<std::string> &names,
                                llvm::SmallVectorImpl<llvm::SmallVector<std::string, 4>> &dims);

/// What a training forward saves for one flash.moe's backward (program tensors, in this order): logits [T, E],
/// expert_counts [E], ids, route_weights (f32), ranks [T k], offsets [E + 1], groups [1 + C / 128], permuted [C, d],
/// expert_pre [C, h] (gated: expert_gate and expert_up), hidden [C, h], expert_out [C, d_out], C the padded capacity
/// (device::moe_padded_capacity). Sizes over T (x's size symbol `tokens`, or its static size).
struct MoeSaved {
  mlir::Value logits, counts, ids, weights, ranks, offsets, groups, permuted, pre, up, hidden, expertOut;
  /// The saved tensors from `first` on among `args` (gated: pre is the gate).
  static MoeSaved fromArgs(mlir::ValueRange args, unsigned first, bool gated);
};

/// Appends MoeSaved's tensors of `op` to a program signature (flash-tile's training forward and
/// flash-generate-backward's backward both call it, so the two programs name them alike); returns the index of the
/// first.
unsigned appendMoeSaved(mlir::flash::MoeOp op, llvm::StringRef suffix, llvm::StringRef tokens,
                        llvm::function_ref<std::string(const std::string &)> unique,
                        llvm::SmallVectorImpl<mlir::Type> &types, llvm::SmallVectorImpl<std::string> &names,
                        llvm::SmallVectorImpl<llvm::SmallVector<std::string, 4>> &dims);

/// The type of an FFN's hidden tensors [..., M, H]: x's rows, the hidden
/// width, x's element type.
mlir::tile::GlobalTensorType hiddenTensorType(mlir::flash::FfnOp ffn);

/// Builds the forward tile program replacing `func` (FlashTile.cpp); a
/// function marked kTrainForwardAttrName gets the training form.
/// `table` (may be null): the tuning table whose attention_forward entries
/// say where a document modifier's forward takes the segment form.
mlir::LogicalResult lowerForwardFunction(mlir::func::FuncOp func, mlir::SymbolTable &symbols,
                                         const TargetDescription &target, FfnPlanChoice choice,
                                         const TuningTable *table = nullptr);

/// The #tile.attention recipe of `op` for kernel `role`.
/// `blockTable`: whether a kernel of a scoring role takes the block-class
/// table of a modifier that reads tensors (false where no kernel can read it:
/// the deterministic backward's, never warp-specialised).
/// `segments`: a forward or backward main kernel that takes the segment plan
/// (documentSegments).
mlir::tile::AttentionSpecAttr attentionSpec(mlir::flash::AttentionOp op,
                                            mlir::tile::KernelRole role, bool blockTable = true,
                                            bool segments = false);

/// Whether `op`'s forward may take the segment form: its mask modifier is a
/// document compare `t[q] == t[k]` (flashc::documentCompare) over no mask or a
/// causal one, or FlexAttention's `(t[q] == t[k]) & (q >= k)` over none,
/// without a run-time key offset. The
/// index of the ids among the modifier's tensors, or none.
std::optional<unsigned> documentSegments(mlir::flash::AttentionOp op);
/// Whether `op`'s kernel of `role` (the forward, or the backward's main
/// kernel) on `target` takes the segment form, where documentSegments allows
/// it: yes unless `table`'s entry for it says segments=0.
bool takesSegments(mlir::flash::AttentionOp op, mlir::tile::KernelRole role, const TargetDescription &target,
                   const TuningTable &table);

/// A #tile.gemm recipe.
mlir::tile::GemmSpecAttr gemmSpec(mlir::MLIRContext *ctx, mlir::tile::KernelRole role,
                                  mlir::tile::Activation activation, bool transposeA,
                                  bool transposeB, bool bias1, bool bias2, mlir::Type element,
                                  bool gated = false, bool accumulate = false,
                                  bool savePre = false, bool actGrad = false);

mlir::tile::Activation toTileActivation(mlir::flash::Activation activation);

/// `tile.dims` of a tensor: `symbols[d]` for dynamic dims, "" for static ones.
llvm::SmallVector<std::string, 4> dimSymbols(mlir::Type type, llvm::ArrayRef<std::string> symbols);

/// Name and run-time size symbols (`tile.dims`) of a graph value that becomes
/// a program tensor.
struct ValueLabel {
  std::string name;
  llvm::SmallVector<std::string, 4> dims;
};

/// Labels the operands and results of the fused ops of `body`: attention
/// q, k, v, out, lse over symbols B, Sq, Sk; FFN x, w1, b1, w_up, w2, b2, y
/// over M (rank 3: Bf, M). The n-th op of a kind (n >= 2) suffixes names and
/// symbols with n, so unrelated ops never share a symbol. First label wins.
llvm::DenseMap<mlir::Value, ValueLabel> labelFusedValues(mlir::Block &body);

/// The name suffix ("", "2", "3", ...) of each attention, decode, packed-sequences or cache-append op of `body`
/// (one numbering, in order), so that no two ops share a tensor name or a size symbol; an append whose caches a
/// decode reads takes that decode's suffix (one cache, one set of names). labelFusedValues and the workspaces'
/// names both use it.
llvm::DenseMap<mlir::Operation *, std::string> attentionSuffixes(mlir::Block &body);

/// Checks that `type` can be a tile-program tensor (ranked, rank 1-4,
/// bf16/f16/f32, or i32: a mask modifier's tensors); reports on `op` naming
/// `what` otherwise.
mlir::FailureOr<mlir::tile::GlobalTensorType> toProgramTensor(mlir::Operation *op, mlir::Type type,
                                                              llvm::StringRef what);

/// Builds one tile program and the kernels it launches.
class ProgramBuilder {
public:
  ProgramBuilder(mlir::SymbolTable &symbols, const TargetDescription &target)
      : symbols(symbols), target(target) {}

  /// Creates the program func `name` before `anchor` (module level) with
  /// arguments named `argNames` (`tile.name`) whose dynamic dimensions carry
  /// the run-time size symbols `argDims` (`tile.dims`, "" for static or
  /// unnamed dims; may be empty), and positions the builder in its body.
  mlir::func::FuncOp create(mlir::Operation *anchor, mlir::Location loc, llvm::StringRef name,
                            llvm::ArrayRef<mlir::Type> argTypes,
                            llvm::ArrayRef<std::string> argNames,
                            llvm::ArrayRef<llvm::SmallVector<std::string, 4>> argDims = {});

  mlir::Value arg(unsigned i) { return program.getArgument(i); }

  /// Runtime size of dimension `d` of a program tensor.
  mlir::Value dim(mlir::Value tensor, int64_t d);

  /// Workspace of `type`; `sources[i]` = (tensor, dim) giving the size of
  /// dimension i when it is dynamic.
  mlir::Value alloc(mlir::tile::GlobalTensorType type,
                    llvm::ArrayRef<std::pair<mlir::Value, int64_t>> sources,
                    llvm::StringRef name = "");

  /// Builds kernel `<baseName>` (unique in the module) from `spec` at the
  /// target's default plan for the argument types and launches it.
  mlir::LogicalResult launch(mlir::Location loc, llvm::StringRef baseName, mlir::Attribute spec,
                             mlir::ValueRange args);

  /// The block-class table of `op`'s mask modifier (a workspace
  /// [B or 1, Hq or 1, ceil(rows / 64), ceil(columns / 64) + 2] of i32, rows
  /// query blocks or, `transposed`, key blocks) and the launch of the kernel
  /// `<baseName>` that fills it from q, k and the modifier's tensors.
  /// The segment plan of `op`'s document modifier (a workspace
  /// [segment_plan_rows(Sq), 4] of i32: a header and the tile maps at 128 and
  /// 192 query rows) and the launch of the kernel `<baseName>` that writes it
  /// from the ids (role attention_segment_plan, `tile.plan_segments`).
  mlir::FailureOr<mlir::Value> launchSegmentPlan(mlir::flash::AttentionOp op, mlir::Location loc,
                                                 llvm::StringRef baseName, mlir::Value q, mlir::Value k,
                                                 mlir::Value ids, llvm::StringRef name);

  /// `segmentPlan` (may be null): a document modifier's segment plan, launched
  /// before: the kernel does nothing where the plan's segment form serves
  /// every kernel after it (the table is then never read).
  mlir::FailureOr<mlir::Value> launchMaskBlocks(mlir::flash::AttentionOp op, mlir::Location loc,
                                                llvm::StringRef baseName, mlir::Value q, mlir::Value k,
                                                mlir::ValueRange tensors, bool transposed,
                                                llvm::StringRef name, mlir::Value segmentPlan = {});

  /// A tile.require_extent for each read of `op`'s modifiers' tensors (`maskTensors`, `scoreTensors`: the
  /// program's) at an index argument itself whose sizes are not both static: the table must hold the index's range
  /// (b, h, q: dims 0-2 of `q`; k: dim 2 of `k`), which the runtime and the CPU executor check before the
  /// launches that follow.
  void requireTableExtents(mlir::flash::AttentionOp op, mlir::Value q, mlir::Value k, mlir::ValueRange maskTensors,
                           mlir::ValueRange scoreTensors);

  /// The three launches of a decode-attention op (#tile.decode: the table
  /// check, the split kernel, the combine) with their workspaces: a zeroed
  /// status [4] (i32) and the splits' partials o_part [B, splits, Hq·T, Dv],
  /// lse_part [B, splits, Hq·T] (f32), splits = max(1, min(cdiv(num_sms,
  /// B·Hkv·row groups), cdiv(capacity, 512))). `table` is null for a
  /// contiguous cache. `checked`: the status of an append that checked these caches, lengths and table already
  /// (its check covers the decode's): no check kernel then, the split and combine read that status.
  mlir::LogicalResult launchDecode(mlir::flash::DecodeAttentionOp op, llvm::StringRef baseName,
                                   llvm::StringRef suffix, mlir::Value q,
                                   mlir::Value k, mlir::Value v, mlir::Value lens, mlir::Value table,
                                   mlir::Value out, mlir::Value lse, mlir::Value checked = {});

  /// The two launches of flash.kv_append (#tile.decode roles kv_append_check and kv_append) with a zeroed
  /// status [4] (i32) named `status_append` + `suffix`, returned: the caches `kCache`, `vCache` are written in
  /// place.
  mlir::FailureOr<mlir::Value> launchKvAppend(mlir::flash::KvAppendOp op, llvm::StringRef baseName, llvm::StringRef suffix,
                                     mlir::Value key, mlir::Value value, mlir::Value kCache, mlir::Value vCache,
                                     mlir::Value lens, mlir::Value table);

  /// flash.varlen_attention (packed sequences) as its plan and forward
  /// kernels (#tile.varlen): the workspaces tile_map [tiles, 2] (i32, tiles
  /// = max(1, (Tq + B (M - 1)) / M) for M-row query tiles) and status [4]
  /// (zeroed), named with `suffix` (a program's second op: "2").
  mlir::LogicalResult launchVarlen(mlir::flash::VarlenAttentionOp op, llvm::StringRef baseName,
                                   llvm::StringRef suffix, mlir::Value q, mlir::Value k, mlir::Value v,
                                   mlir::Value cuQ, mlir::Value cuK, mlir::Value out, mlir::Value lse);

  /// The backward of flash.varlen_attention: delta = rowsum(dO O) and a
  /// zeroed dQ accumulator (f32 workspaces delta [Hq, Tq], dq_accum [Tq, Hq,
  /// D]), the plan of key tiles (workspaces key_map, status), the main kernel
  /// (dK, dV; dQ added into the accumulator) and dQ's conversion.
  mlir::LogicalResult launchVarlenBackward(mlir::flash::VarlenAttentionOp op, llvm::StringRef baseName,
                                           llvm::StringRef suffix, mlir::Value q, mlir::Value k, mlir::Value v,
                                           mlir::Value cuQ, mlir::Value cuK, mlir::Value out, mlir::Value lse,
                                           mlir::Value dOut, mlir::Value dQ, mlir::Value dK, mlir::Value dV);

  /// flash.moe (docs/design/moe.md) as its seven kernels (#tile.moe: router, select, plan, permute, up, down,
  /// combine) with their workspaces, named with `suffix`: logits [T, E], counts [E] (zeroed), ids, weights (f32),
  /// ranks [T k], offsets [E + 1], groups [1 + C / 128], permuted [C, d], hidden [C, h], expert_out [C, d_out] with
  /// C = 128 ceil((T k + 127 (E - 1)) / 128), every expert's rows padded to a multiple of 128. A training
  /// forward (`saved`) writes them, and the up projection's pre-activations, into the saved program tensors
  /// instead (the counts stay a zeroed workspace: the plan copies them).
  mlir::LogicalResult launchMoe(mlir::flash::MoeOp op, llvm::StringRef baseName, llvm::StringRef suffix,
                                mlir::Value x, mlir::Value router, mlir::Value w1, mlir::Value wUp, mlir::Value w2,
                                mlir::Value y, const MoeSaved *saved = nullptr);

  /// The #tile.moe recipe of `op` for `role` (`train`: the training forward's plan and up projection).
  mlir::tile::MoeSpecAttr moeSpec(mlir::flash::MoeOp op, mlir::tile::KernelRole role, bool train = false);

  /// Checks that the device code takes `op` (Hopper, 16-bit, the experts, top_k and widths), in the spec's terms
  /// (errors prefixed with `pass`).
  mlir::LogicalResult checkMoe(mlir::flash::MoeOp op, llvm::StringRef pass);

  mlir::func::FuncOp getProgram() { return program; }

private:
  /// #tile.varlen of `op` for `role`, tiles of `blockM` rows.
  mlir::tile::VarlenSpecAttr varlenSpec(mlir::flash::VarlenAttentionOp op, mlir::tile::KernelRole role,
                                        int64_t blockM);
  /// A tile map [max(1, (T + B (blockM - 1)) / blockM), 2] over the rows of `rows` (dim 0) and the offsets `cu`,
  /// and a zeroed status [4] (i32 workspaces).
  std::pair<mlir::Value, mlir::Value> varlenPlanWorkspaces(mlir::flash::VarlenAttentionOp op, mlir::Value rows,
                                                           mlir::Value cu, int64_t blockM, llvm::StringRef mapName,
                                                           llvm::StringRef statusName);

public:
  const TargetDescription &getTarget() const { return target; }

private:
  mlir::SymbolTable &symbols;
  const TargetDescription &target;
  mlir::func::FuncOp program;
  mlir::OpBuilder *builder = nullptr;
  std::unique_ptr<mlir::OpBuilder> ownedBuilder;
};

} // namespace flashc

#endif // FLASHC_COMPILER_LIB_TILELOWERING_H
