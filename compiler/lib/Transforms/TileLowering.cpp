//===- TileLowering.cpp - shared helpers of flash -> tile passes ----------===//
#include "TileLowering.h"

#include "flashc/device/moe_layout.h"  // (the permuted layout the kernels read: plain C++)

#include "flashc/Dialect/Tile/IR/TileLimits.h"
#include "flashc/Dialect/Tile/IR/TileOps.h"

#include "flashc/Dialect/Common/DiagonalBand.h"
#include "flashc/Dialect/Common/DocumentIds.h"
#include "flashc/Dialect/Common/IndexFunction.h"
#include "flashc/Dialect/Common/ScoreFunction.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/xxhash.h"

using namespace mlir;
using namespace mlir::tile;

namespace flashc {

bool hasFusedOps(func::FuncOp func) {
  bool found = false;
  func.walk([&](Operation *op) {
    if (llvm::isa<flash::AttentionOp, flash::FfnOp, flash::DecodeAttentionOp, flash::VarlenAttentionOp,
                  flash::KvAppendOp, flash::MoeOp>(op))
      found = true;
  });
  return found;
}

namespace {
/// The module's symbol holding a copy of modifier region `region` as a
/// `ModifierOp` (tile.mask_mod, tile.score_mod), made on first use. Named by
/// the body's content: the same modifier gets the same symbol from every
/// kernel of the attention and from the op's clones. A region without batch
/// and head gets unused ones at `indexArg` (tile modifiers always take them).
template <class ModifierOp>
FlatSymbolRefAttr modifierSymbol(flash::AttentionOp op, Region &region, StringRef prefix, bool hasBatchAndHead,
                                 unsigned indexArg) {
  // The modifier, built unattached and printed once to name it (printing op by op with a local scope numbers the
  // whole region for every op: quadratic, minutes at 10^4 ops).
  OpBuilder b(op.getContext());
  auto modifier = b.create<ModifierOp>(op.getLoc(), prefix);
  IRMapping mapping;
  region.cloneInto(&modifier.getBody(), mapping);
  Block &body = modifier.getBody().front();
  if (!hasBatchAndHead) {
    body.insertArgument(indexArg, b.getIndexType(), op.getLoc());
    body.insertArgument(indexArg, b.getIndexType(), op.getLoc());
  }
  Operation *yield = body.getTerminator();
  b.setInsertionPoint(yield);
  b.create<YieldOp>(yield->getLoc(), yield->getOperand(0));
  yield->erase();
  std::string text;
  llvm::raw_string_ostream os(text);
  modifier->print(os, OpPrintingFlags().printGenericOpForm().useLocalScope());
  std::string name = llvm::formatv("{0}_{1:x-}", prefix, llvm::xxh3_64bits(text)).str();
  auto module = op->getParentOfType<ModuleOp>();
  if (SymbolTable::lookupSymbolIn(module, name)) {
    modifier->erase();
  } else {
    modifier.setSymName(name);
    module.getBody()->push_back(modifier);
  }
  return FlatSymbolRefAttr::get(op.getContext(), name);
}
} // namespace

FlatSymbolRefAttr maskModSymbol(flash::AttentionOp op) {
  if (!op.hasMaskMod())
    return {};
  return modifierSymbol<MaskModOp>(op, op.getMaskMod(), "mask_mod",
                                   flashc::indexFunctionLayout(op.getMaskMod()).hasBatchAndHead(), 0);
}

FlatSymbolRefAttr scoreModSymbol(flash::AttentionOp op) {
  if (!op.hasScoreMod())
    return {};
  return modifierSymbol<ScoreModOp>(op, op.getScoreMod(), "score_mod",
                                    flashc::scoreFunctionLayout(op.getScoreMod()).hasBatchAndHead(), 1);
}

std::optional<std::pair<int64_t, int64_t>> maskModWindow(flash::AttentionOp op) {
  // Only over no mask: the modifier sees row indices (top-left), a mask attribute bottom-right aligned positions,
  // which differ where Sq != Sk, so the two do not merge into one window.
  if (!op.hasMaskMod() || !op.getMaskOperands().empty() || !op.getMask().isNone())
    return std::nullopt;
  std::optional<flashc::DiagonalBand> band = flashc::diagonalBand(op.getMaskMod());
  // visible where lo <= q - k <= hi  <=>  q - hi <= k <= q - lo: a window of hi keys to the left, -lo to the right
  // (each side >= 0, or unbounded): a band off the diagonal (a query that never sees its own position) stays a
  // modifier, as does one wider than the kernels' window sides.
  if (!band || (band->hi && *band->hi < 0) || (band->lo && *band->lo > 0))
    return std::nullopt;
  int64_t left = band->hi ? *band->hi : -1, right = band->lo ? -*band->lo : -1;
  if (left > limits::kMaxWindowSide || right > limits::kMaxWindowSide)
    return std::nullopt;
  return std::pair{left, right};
}

AttentionSpecAttr attentionSpec(flash::AttentionOp op, KernelRole role, bool blockTable, bool segments) {
  MLIRContext *ctx = op.getContext();
  flash::MaskAttr mask = op.getMask();
  int64_t left = -1, right = -1;
  if (mask.isCausal())
    right = 0;
  else if (mask.isSlidingWindow()) {
    left = mask.getWindowLeft();
    right = mask.getWindowRight();
  }
  // A modifier that is a band of diagonals: the window's kernels instead, on the modifier's positions.
  std::optional<std::pair<int64_t, int64_t>> band = maskModWindow(op);
  if (band)
    std::tie(left, right) = *band;
  // FlexAttention's document_causal, (t[q] == t[k]) & (q >= k) over no mask, in the segment form: the causal window
  // on the modifier's positions (top-left) as well, which the modifier's own q >= k makes redundant for the table
  // walk and a document's tile needs (it masks the window's part alone).
  segments = segments && (AttentionSpecAttr::isSegmentMainRole(role) || role == KernelRole::AttentionMaskBlocks ||
                          role == KernelRole::AttentionMaskBlocksTransposed);
  bool causalModifier = false;
  if (segments && mask.isNone())
    if (std::optional<flashc::DocumentCompare> documents = flashc::documentCompare(op.getMaskMod());
        documents && documents->causal) {
      right = 0;
      causalModifier = true;
    }
  Builder b(ctx);
  // (the kernels that read only the mask modifier's tensors: its block classes, a document modifier's segments)
  bool classifies = role == KernelRole::AttentionMaskBlocks || role == KernelRole::AttentionMaskBlocksTransposed ||
                    role == KernelRole::AttentionSegmentPlan;
  bool noScores = role == KernelRole::AttentionBackwardPreprocess || role == KernelRole::AttentionBackwardPostprocess;
  // The score modifier's form, for the roles that compute scores (s + A(q) + B(k) is also of derivative 1).
  bool scoreAdditive = !noScores && !classifies && op.hasScoreMod() && flashc::scoreDerivativeIsOne(op.getScoreMod());
  bool scoreSeparable = scoreAdditive && flashc::scoreBiasSeparable(op.getScoreMod());
  return AttentionSpecAttr::get(ctx, role, op.getHeadDim(), op.getValueHeadDim(),
                                b.getF64FloatAttr(op.getScaleValue()),
                                b.getF64FloatAttr(op.getSoftcapValue()), left, right,
                                TypeAttr::get(op.getQuery().getType().getElementType()),
                                /*keyOffset=*/static_cast<bool>(op.getKeyOffset()),
                                // (pre- and postprocessing compute no scores: no modifier)
                                noScores || band ? FlatSymbolRefAttr() : maskModSymbol(op),
                                /*maskBlocks=*/blockTable && !noScores && !classifies && maskModReadsTensors(op),
                                noScores || classifies ? FlatSymbolRefAttr() : scoreModSymbol(op),
                                scoreAdditive, scoreSeparable, /*topLeft=*/band.has_value() || causalModifier,
                                segments);
}

std::optional<unsigned> documentSegments(flash::AttentionOp op) {
  // Over no mask or a causal one: the attribute's (bottom-right: Sq = Sk where the form is taken) or the modifier's
  // own (FlexAttention's document_causal over no mask: the kernels then get the causal window on its top-left
  // positions, attentionSpec). A document's tile masks and modifies scores at the sequence's positions (segments.cuh).
  if (!maskModReadsTensors(op) || op.getKeyOffset())
    return std::nullopt;
  std::optional<flashc::DocumentCompare> documents = flashc::documentCompare(op.getMaskMod());
  if (!documents || !(op.getMask().isNone() || (!documents->causal && op.getMask().isCausal())))
    return std::nullopt;
  return documents->operand;
}

/// The table's entries that plan `op`'s kernel of `role` under the segment form's key: the key's unbounded entry,
/// then its bounded (@s<=N) one, where they exist and are of the kernel's backward form (flash-plan-memory passes
/// over an entry of the other form).
static SmallVector<const TuningEntry *, 2> segmentKernelEntries(flash::AttentionOp op, KernelRole role,
                                                                 const TargetDescription &target,
                                                                 const TuningTable &table) {
  // (the key of the kernel the form would build: FlexAttention's spelling gets the causal window, so the attribute
  // spelling's entries serve both)
  std::optional<TuningKey> key = tuningKeyOf(target, attentionSpec(op, role, /*blockTable=*/true, true), {});
  StringRef form = role == KernelRole::AttentionBackwardTransposed ? "transposed" : "rows";
  SmallVector<const TuningEntry *, 2> entries;
  for (const TuningEntry *entry : {key ? table.lookup(*key) : nullptr, key ? table.lookupBounded(*key) : nullptr})
    if (entry && (!entry->point.form || *entry->point.form == form))
      entries.push_back(entry);
  return entries;
}

bool takesSegments(flash::AttentionOp op, KernelRole role, const TargetDescription &target,
                   const TuningTable &table) {
  if (!documentSegments(op))
    return false;
  // Hand rule: on wherever the kernel is the warp-specialised one with a tile a block, the form's only kernel
  // (H200, sessions 43-44: the document row's forward kernel 339 -> 257 us; the tuner: 25-28 % forward, 14-17 %
  // backward over the table walk at every plan). Every entry that plans a length range of the kernel must allow it
  // (the short-keys kernel of a split by key length keeps `segments`): none says segments=0, persistent=1 or a
  // strategy other than the warp-specialised one, and a range planned by the hand rule needs the hand rule's
  // strategy to be that one, unless an entry asks for the form (segments=1: the CPU executor's f32 kernels; a GPU
  // kernel that is not warp-specialised is refused at code generation).
  bool handWs =
      defaultPlan(target, attentionSpec(op, role, /*blockTable=*/true, true), {}).strategy == Strategy::WgmmaWsSm90;
  bool asked = false, wholeRange = false;
  for (const TuningEntry *entry : segmentKernelEntries(op, role, target, table)) {
    wholeRange |= !entry->keysAtMost;
    const TuningPoint &point = entry->point;
    if (!point.segments.value_or(true) || point.persistent.value_or(false) ||
        (point.strategy && *point.strategy != Strategy::WgmmaWsSm90) ||
        (!point.segments && !point.strategy && !handWs))
      return false;
    asked |= point.segments.value_or(false);
  }
  return asked || wholeRange || handWs;
}

FailureOr<Value> ProgramBuilder::launchSegmentPlan(flash::AttentionOp op, Location loc, StringRef baseName, Value q,
                                                   Value k, Value ids, StringRef name) {
  MLIRContext *ctx = op.getContext();
  // rows = 1 + bound(64) + bound(128) + bound(192), bound(M) = ceil(Sq / M) + ceil(ceil(Sq / M) / 4): the device
  // library's segment_plan_rows (segment_layout.h; the executor checks the size against it).
  auto constant = [&](int64_t v) { return builder->create<arith::ConstantIndexOp>(loc, v).getResult(); };
  Value sq = dim(q, 2);
  auto bound = [&](int64_t blockM) {
    Value blocks = builder->create<arith::CeilDivSIOp>(loc, sq, constant(blockM));
    Value quarter = builder->create<arith::CeilDivSIOp>(loc, blocks, constant(4));
    return builder->create<arith::AddIOp>(loc, blocks, quarter).getResult();
  };
  Value maps = bound(64);
  for (int64_t blockRows : {128, 192})
    maps = builder->create<arith::AddIOp>(loc, maps, bound(blockRows));
  Value rows = builder->create<arith::AddIOp>(loc, maps, constant(1));
  auto type = GlobalTensorType::get(ctx, {ShapedType::kDynamic, 4}, IntegerType::get(ctx, 32));
  auto alloc = builder->create<AllocTensorOp>(program.getLoc(), type, ValueRange{rows});
  alloc->setAttr("tile.name", builder->getStringAttr(name));
  if (failed(launch(loc, baseName, attentionSpec(op, KernelRole::AttentionSegmentPlan), {q, k, ids, alloc})))
    return failure();
  return Value(alloc);
}

bool maskModReadsTensors(flash::AttentionOp op) { return op.hasMaskMod() && !op.getMaskOperands().empty(); }

FailureOr<Value> ProgramBuilder::launchMaskBlocks(flash::AttentionOp op, Location loc, StringRef baseName,
                                                  Value q, Value k, ValueRange tensors, bool transposed,
                                                  StringRef name, Value segmentPlan) {
  MLIRContext *ctx = op.getContext();
  // One slice per batch / head only where the modifier reads them.
  Block &region = op.getMaskMod().front();
  bool fourIndices = flashc::indexFunctionLayout(op.getMaskMod()).hasBatchAndHead();
  bool perBatch = fourIndices && !region.getArgument(0).use_empty();
  bool perHead = fourIndices && !region.getArgument(1).use_empty();
  auto qType = llvm::cast<GlobalTensorType>(q.getType());
  int64_t dyn = ShapedType::kDynamic;
  int64_t batchSize = perBatch ? qType.getShape()[0] : 1, headSize = perHead ? qType.getShape()[1] : 1;
  auto type = GlobalTensorType::get(ctx, {batchSize, headSize, dyn, dyn}, IntegerType::get(ctx, 32));
  // rows = ceil(S / 64); a row: its bounds, then a class and a "next shown" entry per column block:
  // 2 * ceil(S' / 64) + 2 (tile.classify_blocks)
  Value rowsOf = transposed ? k : q, columnsOf = transposed ? q : k;
  auto constant = [&](int64_t v) { return builder->create<arith::ConstantIndexOp>(loc, v); };
  auto blocks = [&](Value tensor) {
    return builder->create<arith::CeilDivSIOp>(loc, dim(tensor, 2), constant(64)).getResult();
  };
  SmallVector<Value> sizes;
  if (ShapedType::isDynamic(batchSize))
    sizes.push_back(dim(q, 0));
  sizes.push_back(blocks(rowsOf));
  Value columns = blocks(columnsOf), two = constant(2);  // one at a time: the IR's order is fixed
  Value entries = builder->create<arith::MulIOp>(loc, two, columns);
  sizes.push_back(builder->create<arith::AddIOp>(loc, entries, two));
  auto alloc = builder->create<AllocTensorOp>(program.getLoc(), type, sizes);
  alloc->setAttr("tile.name", builder->getStringAttr(name));
  SmallVector<Value> args = {q, k};
  args.append(tensors.begin(), tensors.end());
  args.push_back(alloc);
  if (segmentPlan)
    args.push_back(segmentPlan);
  if (failed(launch(loc, baseName,
                    attentionSpec(op, transposed ? KernelRole::AttentionMaskBlocksTransposed
                                                 : KernelRole::AttentionMaskBlocks,
                                  /*blockTable=*/true, /*segments=*/static_cast<bool>(segmentPlan)),
                    args)))
    return failure();
  return Value(alloc);
}

// (the tile op's index is the analysis's, value for value)
static_assert(static_cast<int>(tile::ModifierIndex::Batch) == static_cast<int>(flashc::ModifierIndex::Batch) &&
              static_cast<int>(tile::ModifierIndex::Key) == static_cast<int>(flashc::ModifierIndex::Key));

void ProgramBuilder::requireTableExtents(flash::AttentionOp op, Value q, Value k, ValueRange maskTensors,
                                         ValueRange scoreTensors) {
  // One check per (table, dimension, index), though a body may read ids[q] twice.
  llvm::DenseSet<std::tuple<Value, unsigned, unsigned>> seen;
  auto require = [&](Region &body, unsigned firstIndex, ValueRange tensors, Modifier modifier) {
    for (const flashc::IndexArgumentRead &read : flashc::indexArgumentReads(body, firstIndex)) {
      Value table = tensors[read.operand];
      unsigned index = static_cast<unsigned>(read.index);
      if (!seen.insert({table, read.dim, index}).second)
        continue;
      auto which = static_cast<tile::ModifierIndex>(index);
      Value range = which == tile::ModifierIndex::Key ? k : q;
      int64_t rangeDim = RequireExtentOp::rangeDimOf(which);
      int64_t size = llvm::cast<GlobalTensorType>(table.getType()).getShape()[read.dim];
      int64_t extent = llvm::cast<GlobalTensorType>(range.getType()).getShape()[rangeDim];
      // (both static: flash.attention's verifier has checked it)
      if (!ShapedType::isDynamic(size) && !ShapedType::isDynamic(extent))
        continue;
      builder->create<RequireExtentOp>(op.getLoc(), table, read.dim, range, rangeDim, modifier, which);
    }
  };
  if (op.hasMaskMod())
    require(op.getMaskMod(), 0, maskTensors, Modifier::Mask);
  if (op.hasScoreMod())
    require(op.getScoreMod(), 1, scoreTensors, Modifier::Score);
}

LogicalResult ProgramBuilder::launchDecode(flash::DecodeAttentionOp op, StringRef baseName, StringRef suffix,
                                           Value q, Value k,
                                           Value v, Value lens, Value table, Value out, Value lse, Value checked) {
  MLIRContext *ctx = op.getContext();
  Location loc = op.getLoc();
  if (target.sharedMemoryPerBlock < 200000)
    return op.emitError() << "flash-tile: flash.decode_attention needs a Hopper target (sm_90a: TMA loads of the "
                             "cache), not "
                          << target.name;
  Builder b(ctx);
  auto spec = [&](KernelRole role) {
    return DecodeSpecAttr::get(ctx, role, op.getHeadDim(), op.getValueHeadDim(), op.getQueryTokens(),
                               op.getGroup(), op.isPaged() ? *op.getPageSize() : 0, op.getCausal(),
                               b.getF64FloatAttr(op.getScale().convertToDouble()),
                               TypeAttr::get(op.getQuery().getType().getElementType()));
  };
  DecodeSpecAttr split = spec(KernelRole::DecodeSplit);
  auto constant = [&](int64_t c) { return builder->create<arith::ConstantIndexOp>(loc, c).getResult(); };
  // splits = max(1, num_sms / (B * Hkv * row groups)): at most one block an SM in all, so that the split kernel
  // is one wave (a split runs over each sequence's own tiles: a short sequence in a long cache still spreads,
  // and splits past its tiles write an empty partial). 17 splits at 1 x 32k (136 blocks: 4 SMs ran a second
  // round) measured 2.57 TB/s through the runtime, 16 splits 3.12 in the kernel lab (session 22). Every kernel of
  // the program binds B, so the combine sizes its workspace too.
  Value batch = dim(q, 0);
  int64_t kvHeads = static_cast<int64_t>(op.getNumKvHeads());
  Value blocks = builder->create<arith::MulIOp>(loc, batch, constant(kvHeads * split.rowGroups()));
  Value sms = builder->create<SmCountOp>(loc, b.getIndexType());
  Value perSm = builder->create<arith::DivSIOp>(loc, sms, builder->create<arith::MaxSIOp>(loc, blocks, constant(1)));
  Value splits = builder->create<arith::MaxSIOp>(loc, perSm, constant(1));
  auto f32 = Float32Type::get(ctx);
  int64_t dyn = ShapedType::kDynamic, rows = op.getQuery().getType().getDimSize(1) * op.getQueryTokens();
  auto oPart = builder->create<AllocTensorOp>(loc, GlobalTensorType::get(ctx, {dyn, dyn, rows, op.getValueHeadDim()}, f32),
                                              ValueRange{batch, splits});
  oPart->setAttr("tile.name", b.getStringAttr("o_part" + suffix.str()));
  auto lsePart = builder->create<AllocTensorOp>(loc, GlobalTensorType::get(ctx, {dyn, dyn, rows}, f32),
                                                ValueRange{batch, splits});
  lsePart->setAttr("tile.name", b.getStringAttr("lse_part" + suffix.str()));
  Value status = checked;
  if (!status) {
    auto alloc = builder->create<AllocTensorOp>(loc, GlobalTensorType::get(ctx, {4}, IntegerType::get(ctx, 32)),
                                                ValueRange{});
    alloc->setAttr("tile.name", b.getStringAttr("status" + suffix.str()));
    alloc->setAttr("tile.zero_fill", b.getUnitAttr());
    status = alloc;
  }
  SmallVector<Value> checkArgs = {k, lens};
  SmallVector<Value> splitArgs = {q, k, v, lens};
  if (table) {
    checkArgs.push_back(table);
    splitArgs.push_back(table);
  }
  checkArgs.push_back(status);
  splitArgs.append({out, lse, oPart, lsePart, status});
  if ((!checked && failed(launch(loc, (baseName + "_check").str(), spec(KernelRole::DecodeCheck), checkArgs))) ||
      failed(launch(loc, (baseName + "_split").str(), split, splitArgs)) ||
      failed(launch(loc, (baseName + "_combine").str(), spec(KernelRole::DecodeCombine),
                    ValueRange{oPart, lsePart, out, lse, status})))
    return failure();
  return success();
}

FailureOr<Value> ProgramBuilder::launchKvAppend(flash::KvAppendOp op, StringRef baseName, StringRef suffix,
                                                Value key, Value value, Value kCache, Value vCache, Value lens,
                                                Value table) {
  MLIRContext *ctx = op.getContext();
  Location loc = op.getLoc();
  Builder b(ctx);
  int64_t tokens = op.getKey().getType().getDimSize(2);
  auto spec = [&](KernelRole role) {
    return DecodeSpecAttr::get(ctx, role, op.getHeadDim(), op.getValueHeadDim(),
                               ShapedType::isDynamic(tokens) ? 0 : tokens, /*group=*/1,
                               op.isPaged() ? *op.getPageSize() : 0, /*causal=*/false, b.getF64FloatAttr(1.0),
                               TypeAttr::get(op.getKey().getType().getElementType()));
  };
  auto status = builder->create<AllocTensorOp>(loc, GlobalTensorType::get(ctx, {4}, IntegerType::get(ctx, 32)),
                                               ValueRange{});
  status->setAttr("tile.name", b.getStringAttr("status_append" + suffix.str()));
  status->setAttr("tile.zero_fill", b.getUnitAttr());
  SmallVector<Value> checkArgs = {key, kCache, lens};
  SmallVector<Value> appendArgs = {key, value, kCache, vCache, lens};
  if (table) {
    checkArgs.push_back(table);
    appendArgs.push_back(table);
  }
  checkArgs.push_back(status);
  appendArgs.push_back(status);
  if (failed(launch(loc, (baseName + "_check").str(), spec(KernelRole::KvAppendCheck), checkArgs)) ||
      failed(launch(loc, baseName.str(), spec(KernelRole::KvAppend), appendArgs)))
    return failure();
  return Value(status);
}

LogicalResult ProgramBuilder::launchVarlen(flash::VarlenAttentionOp op, StringRef baseName, StringRef suffix,
                                           Value q, Value k, Value v, Value cuQ, Value cuK, Value out, Value lse) {
  Location loc = op.getLoc();
  if (target.sharedMemoryPerBlock < 200000)
    return op.emitError() << "flash-tile: flash.varlen_attention needs a Hopper target (sm_90a: TMA loads of the "
                             "packed tensors), not "
                          << target.name;
  // Query tiles of the warp-specialised forward's rows: three consumer warpgroups (192) at head dims <= 64.
  int64_t blockM = 64 * wsForwardConsumerWarpgroups(op.getHeadDim(), op.getValueHeadDim());
  auto [tileMap, status] = varlenPlanWorkspaces(op, q, cuQ, blockM, "tile_map" + suffix.str(), "status" + suffix.str());
  if (failed(launch(loc, (baseName + "_plan").str(), varlenSpec(op, KernelRole::VarlenPlan, blockM),
                    ValueRange{cuQ, cuK, q, k, tileMap, status})) ||
      failed(launch(loc, (baseName + "_fwd").str(), varlenSpec(op, KernelRole::VarlenForward, blockM),
                    ValueRange{q, k, v, cuQ, cuK, tileMap, status, out, lse})))
    return failure();
  return success();
}

VarlenSpecAttr ProgramBuilder::varlenSpec(flash::VarlenAttentionOp op, KernelRole role, int64_t blockM) {
  MLIRContext *ctx = op.getContext();
  Builder b(ctx);
  flash::MaskAttr mask = op.getMask();
  int64_t left = mask.isNone() ? -1 : mask.isCausal() ? -1 : mask.getWindowLeft();
  int64_t right = mask.isNone() ? -1 : mask.isCausal() ? 0 : mask.getWindowRight();
  return VarlenSpecAttr::get(ctx, role, op.getHeadDim(), op.getValueHeadDim(), op.getGroup(), blockM, left, right,
                             b.getF64FloatAttr(op.getScale().convertToDouble()),
                             b.getF64FloatAttr(op.getSoftcap().convertToDouble()),
                             TypeAttr::get(op.getQuery().getType().getElementType()));
}

std::pair<Value, Value> ProgramBuilder::varlenPlanWorkspaces(flash::VarlenAttentionOp op, Value rows, Value cu,
                                                             int64_t blockM, StringRef mapName, StringRef statusName) {
  MLIRContext *ctx = op.getContext();
  Location loc = op.getLoc();
  Builder b(ctx);
  auto constant = [&](int64_t c) { return builder->create<arith::ConstantIndexOp>(loc, c).getResult(); };
  // tiles = max(1, (T + B (M - 1)) / M) with B = the offsets' length - 1: every sequence's tiles of M rows fit
  // (sum ceil(L_b / M) <= (T + B (M - 1)) / M); the grid that walks the map is this length.
  Value sequences = builder->create<arith::SubIOp>(loc, dim(cu, 0), constant(1));
  Value padded = builder->create<arith::AddIOp>(
      loc, dim(rows, 0), builder->create<arith::MulIOp>(loc, sequences, constant(blockM - 1)));
  Value tiles = builder->create<arith::MaxSIOp>(loc, builder->create<arith::DivSIOp>(loc, padded, constant(blockM)),
                                                constant(1));
  auto i32 = IntegerType::get(ctx, 32);
  auto map = builder->create<AllocTensorOp>(loc, GlobalTensorType::get(ctx, {ShapedType::kDynamic, 2}, i32),
                                            ValueRange{tiles});
  map->setAttr("tile.name", b.getStringAttr(mapName));
  auto status = builder->create<AllocTensorOp>(loc, GlobalTensorType::get(ctx, {4}, i32), ValueRange{});
  status->setAttr("tile.name", b.getStringAttr(statusName));
  status->setAttr("tile.zero_fill", b.getUnitAttr());
  return {map, status};
}

LogicalResult ProgramBuilder::launchVarlenBackward(flash::VarlenAttentionOp op, StringRef baseName, StringRef suffix,
                                                   Value q, Value k, Value v, Value cuQ, Value cuK, Value out,
                                                   Value lse, Value dOut, Value dQ, Value dK, Value dV) {
  MLIRContext *ctx = op.getContext();
  Location loc = op.getLoc();
  if (target.sharedMemoryPerBlock < 200000)
    return op.emitError() << "flash-generate-backward: flash.varlen_attention needs a Hopper target (sm_90a), not "
                          << target.name;
  auto f32 = Float32Type::get(ctx);
  int64_t heads = op.getQuery().getType().getDimSize(1), d = op.getHeadDim(), dyn = ShapedType::kDynamic;
  Value delta = alloc(GlobalTensorType::get(ctx, {heads, dyn}, f32), {{q, 1}, {q, 0}}, "delta" + suffix.str());
  Value dqAccum = alloc(GlobalTensorType::get(ctx, {dyn, heads, d}, f32), {{q, 0}, {q, 1}, {q, 2}},
                        "dq_accum" + suffix.str());
  // Key tiles of the warp-specialised backward (128 keys under the key split, 64 under the role split).
  int64_t blockN = wsBackwardBlockN(wsBackwardKeySplit(op.getHeadDim(), op.getValueHeadDim()));
  auto [keyMap, status] = varlenPlanWorkspaces(op, k, cuK, blockN, "key_map" + suffix.str(), "status" + suffix.str());
  if (failed(launch(loc, (baseName + "_bwd_prepare").str(), varlenSpec(op, KernelRole::VarlenBwdPrepare, 64),
                    ValueRange{out, dOut, delta, dqAccum})) ||
      failed(launch(loc, (baseName + "_key_plan").str(), varlenSpec(op, KernelRole::VarlenKeyPlan, blockN),
                    ValueRange{cuQ, cuK, q, k, keyMap, status})) ||
      failed(launch(loc, (baseName + "_bwd").str(), varlenSpec(op, KernelRole::VarlenBackward, blockN),
                    ValueRange{q, k, v, dOut, lse, delta, dqAccum, dK, dV, cuQ, cuK, keyMap, status})) ||
      failed(launch(loc, (baseName + "_bwd_finish").str(), varlenSpec(op, KernelRole::VarlenBwdFinish, 64),
                    ValueRange{dqAccum, status, dQ})))
    return failure();
  return success();
}

GemmSpecAttr gemmSpec(MLIRContext *ctx, KernelRole role, Activation activation, bool transposeA,
                      bool transposeB, bool bias1, bool bias2, Type element, bool gated,
                      bool accumulate, bool savePre, bool actGrad) {
  Builder b(ctx);
  return GemmSpecAttr::get(ctx, role, activation, b.getBoolAttr(transposeA),
                           b.getBoolAttr(transposeB), b.getBoolAttr(bias1), b.getBoolAttr(bias2),
                           b.getBoolAttr(gated), b.getBoolAttr(accumulate), b.getF64FloatAttr(1.0),
                           /*blockK=*/32, TypeAttr::get(element),
                           savePre ? b.getBoolAttr(true) : BoolAttr(),
                           actGrad ? b.getBoolAttr(true) : BoolAttr());
}

unsigned appendSavedActivations(flash::FfnOp ffn, StringRef suffix, ArrayRef<std::string> xDims,
                                function_ref<std::string(const std::string &)> unique,
                                SmallVectorImpl<Type> &types, SmallVectorImpl<std::string> &names,
                                SmallVectorImpl<SmallVector<std::string, 4>> &dims) {
  static constexpr llvm::StringLiteral kPlain[] = {"pre", "h"}, kGated[] = {"gate", "up", "h"};
  unsigned first = types.size();
  for (StringRef base : ffn.isGated() ? ArrayRef<llvm::StringLiteral>(kGated)
                                      : ArrayRef<llvm::StringLiteral>(kPlain)) {
    types.push_back(hiddenTensorType(ffn));
    names.push_back(unique((base + suffix).str()));
    dims.emplace_back(xDims.begin(), xDims.end());
  }
  return first;
}

GlobalTensorType hiddenTensorType(flash::FfnOp ffn) {
  RankedTensorType x = ffn.getInput().getType();
  SmallVector<int64_t> shape(x.getShape());
  shape.back() = ffn.getHiddenDim();
  return GlobalTensorType::get(ffn.getContext(), shape, x.getElementType());
}

Activation toTileActivation(flash::Activation activation) {
  switch (activation) {
  case flash::Activation::GeluTanh:
    return Activation::GeluTanh;
  case flash::Activation::GeluErf:
    return Activation::GeluErf;
  case flash::Activation::Silu:
    return Activation::Silu;
  case flash::Activation::Relu:
    return Activation::Relu;
  }
  return Activation::Identity;
}

llvm::DenseMap<Operation *, std::string> attentionSuffixes(Block &body) {
  llvm::DenseMap<Operation *, std::string> suffix;
  unsigned count = 0;
  SmallVector<flash::KvAppendOp> feeding;  // appends a decode reads: named after that decode
  for (Operation &op : body) {
    if (auto append = llvm::dyn_cast<flash::KvAppendOp>(op))
      if (llvm::any_of(append->getUsers(), [](Operation *user) { return llvm::isa<flash::DecodeAttentionOp>(user); })) {
        feeding.push_back(append);
        continue;
      }
    if (llvm::isa<flash::AttentionOp, flash::DecodeAttentionOp, flash::VarlenAttentionOp, flash::KvAppendOp>(op))
      suffix[&op] = count++ ? std::to_string(count) : "";
  }
  for (flash::KvAppendOp append : feeding)
    for (Operation *user : append->getUsers())
      if (llvm::isa<flash::DecodeAttentionOp>(user)) {
        suffix[append] = suffix[user];
        break;
      }
  return suffix;
}

llvm::DenseMap<Value, ValueLabel> labelFusedValues(Block &body) {
  llvm::DenseMap<Value, ValueLabel> labels;
  llvm::DenseMap<Operation *, std::string> suffixes = attentionSuffixes(body);
  auto label = [&](Value v, const std::string &name, ArrayRef<std::string> symbols) {
    if (v && !labels.count(v))
      labels[v] = {name, dimSymbols(v.getType(), symbols)};
  };
  // FFNs and mixtures of experts share one numbering (both name their input x, their weights w1 / w2 and their
  // result y): the second of either kind is x2, w12, y2, ...
  unsigned denseOps = 0;
  // A KV cache's operands (decode, append): k_cache / v_cache over pages (paged) or [B, Hkv, S, D], the block
  // table [B, W], cache_seqlens [B].
  auto labelCache = [&](auto op, const std::string &sfx) {
    std::string b = "B" + sfx;
    if (op.isPaged()) {
      label(op.getKeyCache(), "k_cache" + sfx, {"pages" + sfx, "", "", ""});
      label(op.getValueCache(), "v_cache" + sfx, {"pages" + sfx, "", "", ""});
      label(op.getBlockTable(), "block_table" + sfx, {b, "W" + sfx});
    } else {
      label(op.getKeyCache(), "k_cache" + sfx, {b, "", "S" + sfx, ""});
      label(op.getValueCache(), "v_cache" + sfx, {b, "", "S" + sfx, ""});
    }
    label(op.getCacheSeqlens(), "cache_seqlens" + sfx, {b});
  };
  for (Operation &op : body) {
    if (auto attention = llvm::dyn_cast<flash::AttentionOp>(op)) {
      std::string sfx = suffixes.lookup(&op);
      std::string b = "B" + sfx, sq = "Sq" + sfx, sk = "Sk" + sfx;
      label(attention.getQuery(), "q" + sfx, {b, "", sq, ""});
      label(attention.getKey(), "k" + sfx, {b, "", sk, ""});
      label(attention.getValue(), "v" + sfx, {b, "", sk, ""});
      label(attention.getOutput(), "out" + sfx, {b, "", sq, ""});
      label(attention.getLse(), "lse" + sfx, {b, "", sq});
      label(attention.getKeyOffset(), "key_offset" + sfx, {});
      // A mask modifier's tensors: mask_t0, ... over symbols of their own
      // (no size equals another's: one read at an index itself holds at
      // least its range, tile.require_extent's `requires` line).
      for (auto [i, tensor] : llvm::enumerate(attention.getMaskOperands())) {
        std::string name = "mask_t" + std::to_string(i) + sfx;
        SmallVector<std::string> symbols;
        for (int64_t d = 0; d < llvm::cast<RankedTensorType>(tensor.getType()).getRank(); ++d)
          symbols.push_back(name + "_d" + std::to_string(d));
        label(tensor, name, symbols);
      }
      // A score modifier's tensors: score_t0, ... (the same rule).
      for (auto [i, tensor] : llvm::enumerate(attention.getScoreOperands())) {
        std::string name = "score_t" + std::to_string(i) + sfx;
        SmallVector<std::string> symbols;
        for (int64_t d = 0; d < llvm::cast<RankedTensorType>(tensor.getType()).getRank(); ++d)
          symbols.push_back(name + "_d" + std::to_string(d));
        label(tensor, name, symbols);
      }
    } else if (auto decode = llvm::dyn_cast<flash::DecodeAttentionOp>(op)) {
      std::string sfx = suffixes.lookup(&op);
      std::string b = "B" + sfx;
      label(decode.getQuery(), "q" + sfx, {b, "", "", ""});
      labelCache(decode, sfx);
      label(decode.getOutput(), "out" + sfx, {b, "", "", ""});
      label(decode.getLse(), "lse" + sfx, {b, "", ""});
    } else if (auto append = llvm::dyn_cast<flash::KvAppendOp>(op)) {
      // An append that feeds a decode shares its names and size symbols (one cache); its new rows are k_new,
      // v_new [B, Hkv, T, D] (T dynamic or not).
      std::string sfx = suffixes.lookup(&op);
      std::string b = "B" + sfx;
      label(append.getKey(), "k_new" + sfx, {b, "", "T" + sfx, ""});
      label(append.getValue(), "v_new" + sfx, {b, "", "T" + sfx, ""});
      labelCache(append, sfx);
    } else if (auto varlen = llvm::dyn_cast<flash::VarlenAttentionOp>(op)) {
      std::string sfx = suffixes.lookup(&op);
      std::string tq = "Tq" + sfx, tk = "Tk" + sfx;
      label(varlen.getQuery(), "q" + sfx, {tq, "", ""});
      label(varlen.getKey(), "k" + sfx, {tk, "", ""});
      label(varlen.getValue(), "v" + sfx, {tk, "", ""});
      label(varlen.getCuSeqlensQ(), "cu_seqlens_q" + sfx, {"B1" + sfx});
      label(varlen.getCuSeqlensK(), "cu_seqlens_k" + sfx, {"B1" + sfx});
      label(varlen.getOutput(), "out" + sfx, {tq, "", ""});
      label(varlen.getLse(), "lse" + sfx, {"", tq});
    } else if (auto moe = llvm::dyn_cast<flash::MoeOp>(op)) {
      std::string sfx = denseOps ? std::to_string(denseOps + 1) : "";
      ++denseOps;
      label(moe.getInput(), "x" + sfx, {"T" + sfx, ""});
      label(moe.getRouter(), "router" + sfx, {"", ""});
      label(moe.getW1(), "w1" + sfx, {"", "", ""});
      label(moe.getWUp(), "w_up" + sfx, {"", "", ""});
      label(moe.getW2(), "w2" + sfx, {"", "", ""});
      label(moe.getResult(), "y" + sfx, {"T" + sfx, ""});
    } else if (auto ffn = llvm::dyn_cast<flash::FfnOp>(op)) {
      std::string sfx = denseOps ? std::to_string(denseOps + 1) : "";
      ++denseOps;
      SmallVector<std::string> rows;
      if (ffn.getInput().getType().getRank() == 3)
        rows = {"Bf" + sfx, "M" + sfx, ""};
      else
        rows = {"M" + sfx, ""};
      label(ffn.getInput(), "x" + sfx, rows);
      label(ffn.getW1(), "w1" + sfx, {});
      label(ffn.getB1(), "b1" + sfx, {});
      label(ffn.getWUp(), "w_up" + sfx, {});
      label(ffn.getW2(), "w2" + sfx, {});
      label(ffn.getB2(), "b2" + sfx, {});
      label(ffn.getResult(), "y" + sfx, rows);
    }
  }
  return labels;
}

FailureOr<GlobalTensorType> toProgramTensor(Operation *op, Type type, StringRef what) {
  auto ranked = llvm::dyn_cast<RankedTensorType>(type);
  if (!ranked || ranked.getRank() < 1 || ranked.getRank() > 4) {
    op->emitError() << what << " must be a ranked tensor of rank 1 to 4 for tiling, got " << type;
    return failure();
  }
  Type element = ranked.getElementType();
  if (!element.isBF16() && !element.isF16() && !element.isF32() && !element.isSignlessInteger(32)) {
    op->emitError() << what << " must have element type bf16, f16, f32 or i32, got " << type;
    return failure();
  }
  return toGlobalTensorType(ranked);
}

SmallVector<std::string, 4> dimSymbols(Type type, ArrayRef<std::string> symbols) {
  SmallVector<std::string, 4> dims;
  ArrayRef<int64_t> shape;
  if (auto tensor = llvm::dyn_cast<GlobalTensorType>(type))
    shape = tensor.getShape();
  else if (auto ranked = llvm::dyn_cast<RankedTensorType>(type))
    shape = ranked.getShape();
  for (auto [d, size] : llvm::enumerate(shape))
    dims.push_back(ShapedType::isDynamic(size) && d < symbols.size() ? symbols[d] : "");
  return dims;
}

func::FuncOp ProgramBuilder::create(Operation *anchor, Location loc, StringRef name,
                                    ArrayRef<Type> argTypes, ArrayRef<std::string> argNames,
                                    ArrayRef<SmallVector<std::string, 4>> argDims) {
  ownedBuilder = std::make_unique<OpBuilder>(anchor);
  builder = ownedBuilder.get();
  program = builder->create<func::FuncOp>(loc, name, builder->getFunctionType(argTypes, {}));
  program->setAttr(kProgramAttrName, builder->getUnitAttr());
  for (auto [index, argName] : llvm::enumerate(argNames))
    program.setArgAttr(index, "tile.name", builder->getStringAttr(argName));
  for (auto [index, dims] : llvm::enumerate(argDims)) {
    if (llvm::all_of(dims, [](const std::string &d) { return d.empty(); }))
      continue;
    SmallVector<Attribute> names;
    for (const std::string &dim : dims)
      names.push_back(builder->getStringAttr(dim));
    program.setArgAttr(index, "tile.dims", builder->getArrayAttr(names));
  }
  Block *body = program.addEntryBlock();
  builder->setInsertionPointToStart(body);
  builder->create<func::ReturnOp>(loc);
  builder->setInsertionPointToStart(body);
  return program;
}

Value ProgramBuilder::dim(Value tensor, int64_t d) {
  return builder->create<DimOp>(program.getLoc(), builder->getIndexType(), tensor,
                                builder->getI64IntegerAttr(d));
}

MoeSaved MoeSaved::fromArgs(ValueRange args, unsigned first, bool gated) {
  MoeSaved s;
  unsigned i = first;
  for (Value *v : {&s.logits, &s.counts, &s.ids, &s.weights, &s.ranks, &s.offsets, &s.groups, &s.permuted, &s.pre})
    *v = args[i++];
  if (gated)
    s.up = args[i++];
  s.hidden = args[i++];
  s.expertOut = args[i++];
  return s;
}

unsigned appendMoeSaved(flash::MoeOp op, StringRef suffix, StringRef tokens,
                        function_ref<std::string(const std::string &)> unique, SmallVectorImpl<Type> &types,
                        SmallVectorImpl<std::string> &names, SmallVectorImpl<SmallVector<std::string, 4>> &dims) {
  MLIRContext *ctx = op.getContext();
  Type element = op.getInput().getType().getElementType();
  Type i32 = IntegerType::get(ctx, 32), f32 = Float32Type::get(ctx);
  int64_t experts = op.getExperts(), topK = static_cast<int64_t>(op.getTopK());
  int64_t rowsT = op.getInput().getType().getShape()[0];
  bool dynamic = ShapedType::isDynamic(rowsT);
  constexpr int64_t rowsABlock = device::kMoeGroupRows;
  int64_t padding = (rowsABlock - 1) * (experts - 1);
  // Sizes over T: [static size, the runtime's expression] (docs/bundle.md: an expression dim).
  std::string routedText = (tokens + " * " + Twine(topK)).str();
  std::string blocksText = "cdiv(" + routedText + " + " + std::to_string(padding) + ", " + std::to_string(rowsABlock) + ")";
  struct Size {
    int64_t value;
    std::string text;
  };
  auto sized = [&](int64_t value, std::string text) { return dynamic ? Size{ShapedType::kDynamic, text} : Size{value, ""}; };
  int64_t routed = dynamic ? 0 : rowsT * topK;
  int64_t rows = dynamic ? 0 : device::moe_padded_capacity(routed, static_cast<int>(experts));
  Size tokensSize = sized(rowsT, tokens.str()), routedSize = sized(routed, routedText);
  Size capacity = sized(rows, std::to_string(rowsABlock) + " * " + blocksText);
  Size groupEntries = sized(rows / rowsABlock + 1, blocksText + " + 1");
  auto fixed = [](int64_t n) { return Size{n, ""}; };
  unsigned first = types.size();
  auto add = [&](StringRef name, ArrayRef<Size> shape, Type type) {
    SmallVector<int64_t> extents;
    SmallVector<std::string, 4> symbols;
    for (const Size &size : shape) {
      extents.push_back(size.value);
      symbols.push_back(size.text);
    }
    types.push_back(GlobalTensorType::get(ctx, extents, type));
    names.push_back(unique((name + suffix).str()));
    dims.push_back(symbols);
  };
  add("logits", {tokensSize, fixed(experts)}, element);
  add("expert_counts", {fixed(experts)}, i32);
  add("ids", {routedSize}, i32);
  add("route_weights", {routedSize}, f32);
  add("ranks", {routedSize}, i32);
  add("offsets", {fixed(experts + 1)}, i32);
  add("groups", {groupEntries}, i32);
  add("permuted", {capacity, fixed(op.getModelDim())}, element);
  // (expert_*: apart from an FFN's pre / gate / up beside it)
  static constexpr llvm::StringLiteral kPlain[] = {"expert_pre"}, kGated[] = {"expert_gate", "expert_up"};
  for (StringRef name : op.isGated() ? ArrayRef<llvm::StringLiteral>(kGated) : ArrayRef<llvm::StringLiteral>(kPlain))
    add(name, {capacity, fixed(op.getHiddenDim())}, element);
  add("hidden", {capacity, fixed(op.getHiddenDim())}, element);
  add("expert_out", {capacity, fixed(op.getOutputDim())}, element);
  return first;
}

MoeSpecAttr ProgramBuilder::moeSpec(flash::MoeOp op, tile::KernelRole role, bool train) {
  return MoeSpecAttr::get(op.getContext(), role, op.getExperts(), static_cast<int64_t>(op.getTopK()),
                          op.getGating() == flash::MoeGating::Sigmoid, op.getRenormalize(),
                          toTileActivation(op.getActivation()), op.isGated(),
                          TypeAttr::get(op.getInput().getType().getElementType()), train);
}

LogicalResult ProgramBuilder::checkMoe(flash::MoeOp op, StringRef pass) {
  Type element = op.getInput().getType().getElementType();
  int64_t experts = op.getExperts(), topK = static_cast<int64_t>(op.getTopK());
  // What the device code takes (moe_routing.cuh, gemm_ws.cuh): said in the spec's terms.
  if (target.sharedMemoryPerBlock < 200000)
    return op.emitError() << pass << ": flash.moe needs a Hopper target (sm_90a: the grouped expert GEMMs are "
                             "warp-specialised TMA kernels), not "
                          << target.name;
  if (!element.isBF16() && !element.isF16())
    return op.emitError() << pass << ": flash.moe takes bf16 or f16 tensors, got " << element;
  if (experts % 8 != 0 || experts > 256)
    return op.emitError() << pass << ": flash.moe needs a multiple of 8 experts up to 256 (the router's logits rows "
                             "are 16-byte pieces; a warp scores 256 at most), got "
                          << experts;
  if (topK > 32)
    return op.emitError() << pass << ": flash.moe takes top_k up to 32, got " << topK;
  for (auto [name, size] : {std::pair<const char *, int64_t>{"d", op.getModelDim()}, {"h", op.getHiddenDim()},
                            {"d_out", op.getOutputDim()}})
    if (size % 8 != 0)
      return op.emitError() << pass << ": flash.moe needs " << name
                            << " a multiple of 8 (rows of 16-byte pieces: TMA), got " << size;
  return success();
}

LogicalResult ProgramBuilder::launchMoe(flash::MoeOp op, StringRef baseName, StringRef suffix, Value x, Value router,
                                        Value w1, Value wUp, Value w2, Value y, const MoeSaved *saved) {
  MLIRContext *ctx = op.getContext();
  Location loc = op.getLoc();
  Type element = op.getInput().getType().getElementType();
  int64_t experts = op.getExperts(), topK = static_cast<int64_t>(op.getTopK());
  int64_t d = op.getModelDim(), h = op.getHiddenDim(), dOut = op.getOutputDim();
  if (failed(checkMoe(op, "flash-tile")))
    return failure();
  Builder b(ctx);
  bool train = saved != nullptr;
  auto spec = [&](tile::KernelRole role) {
    return moeSpec(op, role, train && (role == KernelRole::MoePlan || role == KernelRole::MoeUp));
  };
  auto constant = [&](int64_t c) { return builder->create<arith::ConstantIndexOp>(loc, c).getResult(); };
  int64_t dyn = ShapedType::kDynamic;
  Type i32 = IntegerType::get(ctx, 32), f32 = Float32Type::get(ctx);
  auto workspace = [&](ArrayRef<int64_t> shape, Type type, ValueRange sizes, StringRef name, bool zero = false) {
    auto alloc = builder->create<AllocTensorOp>(loc, GlobalTensorType::get(ctx, shape, type), sizes);
    alloc->setAttr("tile.name", b.getStringAttr(name.str() + suffix.str()));
    if (zero)
      alloc->setAttr("tile.zero_fill", b.getUnitAttr());
    return alloc.getResult();
  };
  // (A training forward's atomic counts stay a zeroed workspace: the plan copies them into the saved tensor.)
  Value counts = workspace({experts}, i32, {}, "counts", /*zero=*/true);
  MoeSaved w;
  if (saved) {
    w = *saved;
  } else {
    Value tokens = dim(x, 0);
    Value routed = builder->create<arith::MulIOp>(loc, tokens, constant(topK));
    // C = device::moe_padded_capacity(T k, E), in IR: kMoeGroupRows ceil((T k + (kMoeGroupRows - 1) (E - 1)) / ...)
    constexpr int64_t rowsABlock = device::kMoeGroupRows;
    Value padded = builder->create<arith::AddIOp>(loc, routed, constant((rowsABlock - 1) * (experts - 1)));
    Value blocks = builder->create<arith::CeilDivSIOp>(loc, padded, constant(rowsABlock));
    Value capacity = builder->create<arith::MulIOp>(loc, blocks, constant(rowsABlock));
    Value groupEntries = builder->create<arith::AddIOp>(loc, blocks, constant(1));
    w.logits = workspace({dyn, experts}, element, {tokens}, "logits");
    w.ids = workspace({dyn}, i32, {routed}, "ids");
    w.weights = workspace({dyn}, f32, {routed}, "route_weights");
    w.ranks = workspace({dyn}, i32, {routed}, "ranks");
    w.offsets = workspace({experts + 1}, i32, {}, "offsets");
    w.groups = workspace({dyn}, i32, {groupEntries}, "groups");
    w.permuted = workspace({dyn, d}, element, {capacity}, "permuted");
    w.hidden = workspace({dyn, h}, element, {capacity}, "hidden");
    w.expertOut = workspace({dyn, dOut}, element, {capacity}, "expert_out");
  }
  // (The plan and the GEMMs take the logits for their rows: T, which sizes their workspaces.)
  SmallVector<Value> plan = {w.logits, counts, w.offsets, w.groups};
  if (train)
    plan.push_back(w.counts);
  SmallVector<Value> up = {w.logits, w.permuted, w1};
  if (wUp)
    up.push_back(wUp);
  up.append({w.groups, w.hidden});
  if (train) {
    up.push_back(w.pre);
    if (wUp)
      up.push_back(w.up);
  }
  using tile::KernelRole;
  std::string base = baseName.str();
  if (failed(launch(loc, base + "_router", spec(KernelRole::MoeRouter), ValueRange{x, router, w.logits})) ||
      failed(launch(loc, base + "_select", spec(KernelRole::MoeSelect),
                    ValueRange{w.logits, counts, w.ids, w.weights, w.ranks})) ||
      failed(launch(loc, base + "_plan", spec(KernelRole::MoePlan), plan)) ||
      failed(launch(loc, base + "_permute", spec(KernelRole::MoePermute),
                    ValueRange{x, counts, w.ids, w.ranks, w.offsets, w.permuted})) ||
      failed(launch(loc, base + "_up", spec(KernelRole::MoeUp), up)) ||
      failed(launch(loc, base + "_down", spec(KernelRole::MoeDown),
                    ValueRange{w.logits, w.hidden, w2, w.groups, w.expertOut})) ||
      failed(launch(loc, base + "_combine", spec(KernelRole::MoeCombine),
                    ValueRange{w.expertOut, w.ids, w.weights, w.ranks, w.offsets, y})))
    return failure();
  return success();
}

Value ProgramBuilder::alloc(GlobalTensorType type, ArrayRef<std::pair<Value, int64_t>> sources,
                            StringRef name) {
  SmallVector<Value> sizes;
  for (auto [d, size] : llvm::enumerate(type.getShape()))
    if (ShapedType::isDynamic(size))
      sizes.push_back(dim(sources[d].first, sources[d].second));
  auto alloc = builder->create<AllocTensorOp>(program.getLoc(), type, sizes);
  if (!name.empty())
    alloc->setAttr("tile.name", builder->getStringAttr(name));
  return alloc;
}

LogicalResult ProgramBuilder::launch(Location loc, StringRef baseName, Attribute spec,
                                     ValueRange args) {
  SmallVector<Type> argTypes(args.getTypes());
  OpBuilder kernelBuilder(program);
  KernelOp kernel =
      buildKernel(kernelBuilder, loc, baseName, spec, argTypes, defaultPlan(target, spec));
  if (!kernel)
    return failure();
  symbols.insert(kernel); // renames on collision
  builder->create<LaunchOp>(loc, kernel.getSymName(), args);
  return success();
}

} // namespace flashc
