//===- TileOps.cpp - tile op verifiers and custom syntax -------------------===//
#include "flashc/Dialect/Tile/IR/TileOps.h"
#include "flashc/Dialect/Common/IndexFunction.h"
#include "flashc/Dialect/Common/ScoreFunction.h"
#include "flashc/Dialect/Tile/IR/TileLimits.h"

#include "mlir/IR/BuiltinTypes.h"
#include "mlir/Interfaces/FunctionImplementation.h"

using namespace mlir;
using namespace mlir::tile;

//===----------------------------------------------------------------------===//
// Shared checks
//===----------------------------------------------------------------------===//

namespace {
/// Checks a tile against the layout an op needs; `what` names the operand.
LogicalResult expectTile(Operation *op, Type type, StringRef what, int64_t rank,
                         std::optional<MemorySpace> space, bool mustBeF32) {
  auto tile = llvm::cast<TileType>(type);
  if (tile.getRank() != rank)
    return op->emitOpError() << what << " must be a "
                             << (rank == 1 ? "row vector (rank 1)" : "rank-2 tile") << ", got "
                             << type;
  if (space && tile.getSpace() != *space)
    return op->emitOpError() << what << " must be a " << stringifyMemorySpace(*space)
                             << " tile, got " << type;
  if (mustBeF32 && !tile.getElementType().isF32())
    return op->emitOpError() << what << " must have element type f32, got " << type;
  return success();
}

LogicalResult expectRegisterF32Tile(Operation *op, Type type, StringRef what) {
  return expectTile(op, type, what, 2, MemorySpace::Register, true);
}

LogicalResult expectRowVector(Operation *op, Type type, StringRef what, int64_t rows) {
  if (failed(expectTile(op, type, what, 1, MemorySpace::Register, true)))
    return failure();
  if (llvm::cast<TileType>(type).getRows() != rows)
    return op->emitOpError() << what << " must have " << rows << " rows to match the tile, got "
                             << type;
  return success();
}

LogicalResult verifyIndices(Operation *op, GlobalTensorType tensor, size_t numIndices,
                            int64_t minRank) {
  if (tensor.getRank() < minRank)
    return op->emitOpError() << "needs a tensor of rank >= " << minRank << ", got " << tensor;
  if (static_cast<int64_t>(numIndices) != tensor.getRank())
    return op->emitOpError() << "needs one index per tensor dimension (" << tensor.getRank()
                             << "), got " << numIndices;
  return success();
}

/// An optional integer attribute in [lo, hi]; `name` is the attribute's.
LogicalResult expectInRange(Operation *op, StringRef name, std::optional<int64_t> value, int64_t lo,
                            int64_t hi) {
  if (value && (*value < lo || *value > hi))
    return op->emitOpError() << name << " must be in [" << lo << ", " << hi << "], got " << *value;
  return success();
}

/// A scale-like float attribute (TileLimits.h: finite, |x| <= 1e30).
LogicalResult expectBoundedScale(Operation *op, StringRef name, APFloat value) {
  if (!limits::isBoundedScale(value.convertToDouble()))
    return op->emitOpError() << name << " must be finite and at most " << limits::kMaxScale
                             << " in magnitude, got " << value.convertToDouble();
  return success();
}

LogicalResult verifyGlobalTileAccess(Operation *op, TileType tile, GlobalTensorType tensor,
                                     size_t numIndices) {
  if (failed(verifyIndices(op, tensor, numIndices, 1)))
    return failure();
  if (tile.getRank() != 2)
    return op->emitOpError() << "needs a rank-2 tile, got " << tile;
  if (tile.getElementType() != tensor.getElementType())
    return op->emitOpError() << "tile element type " << tile.getElementType()
                             << " differs from tensor element type " << tensor.getElementType()
                             << " (convert first)";
  return success();
}
} // namespace

//===----------------------------------------------------------------------===//
// tile.kernel
//===----------------------------------------------------------------------===//

ParseResult KernelOp::parse(OpAsmParser &parser, OperationState &result) {
  auto buildType = [](Builder &builder, ArrayRef<Type> args, ArrayRef<Type> results,
                      function_interface_impl::VariadicFlag,
                      std::string &) { return builder.getFunctionType(args, results); };
  return function_interface_impl::parseFunctionOp(
      parser, result, /*allowVariadic=*/false, getFunctionTypeAttrName(result.name), buildType,
      getArgAttrsAttrName(result.name), getResAttrsAttrName(result.name));
}

void KernelOp::print(OpAsmPrinter &printer) {
  function_interface_impl::printFunctionOp(printer, *this, /*isVariadic=*/false,
                                           getFunctionTypeAttrName(), getArgAttrsAttrName(),
                                           getResAttrsAttrName());
}

LogicalResult KernelOp::verify() {
  FunctionType type = getFunctionType();
  if (type.getNumResults() != 0)
    return emitOpError("kernels return nothing: outputs are tensor arguments");
  // Tensors, then i32 scalars (the ABI's order).
  SmallVector<GlobalTensorType> args;
  for (auto [index, argType] : llvm::enumerate(type.getInputs())) {
    auto tensor = llvm::dyn_cast<GlobalTensorType>(argType);
    if (tensor && args.size() != index)
      return emitOpError() << "argument " << index
                           << " is a tensor after a scalar; tensors come first";
    if (tensor)
      args.push_back(tensor);
    else if (!argType.isSignlessInteger(32))
      return emitOpError() << "argument " << index << " must be a !tile.tensor or an i32, got "
                           << argType;
  }
  if (getGrid().size() != 3)
    return emitOpError() << "grid must list 3 axes (x, y, z), got " << getGrid().size();
  if (RunIfAttr runIf = getRunIfAttr()) {
    if (runIf.getArg() < 0 || runIf.getArg() >= static_cast<int64_t>(args.size()))
      return emitOpError() << "run_if refers to argument " << runIf.getArg() << " but the kernel has "
                           << args.size() << " tensor arguments";
    if (runIf.getDim() < 0 || runIf.getDim() >= args[runIf.getArg()].getRank())
      return emitOpError() << "run_if refers to dimension " << runIf.getDim() << " of a rank-"
                           << args[runIf.getArg()].getRank() << " argument";
  }
  for (auto [axis, attr] : llvm::enumerate(getGrid().getAsRange<GridAttr>())) {
    if (attr.isConstant())
      continue;
    if (attr.getArgIndex() >= static_cast<int64_t>(args.size()))
      return emitOpError() << "grid axis " << axis << " refers to argument " << attr.getArgIndex()
                           << " but the kernel has " << args.size() << " tensor arguments";
    if (attr.getDimIndex() < 0 || attr.getDimIndex() >= args[attr.getArgIndex()].getRank())
      return emitOpError() << "grid axis " << axis << " refers to dimension " << attr.getDimIndex()
                           << " of a rank-" << args[attr.getArgIndex()].getRank() << " argument";
  }
  // Only the warp-specialised attention forward's and GEMM's library forms
  // loop over a persistent grid; every other kernel takes one tile a block.
  if (GridOrderAttr order = getGridOrderAttr(); order && order.getOrder() == BlockOrder::Persistent) {
    auto attention = llvm::dyn_cast_or_null<AttentionSpecAttr>(getSpecAttr());
    auto gemm = llvm::dyn_cast_or_null<GemmSpecAttr>(getSpecAttr());
    auto moe = llvm::dyn_cast_or_null<MoeSpecAttr>(getSpecAttr());
    if (getStrategy() != Strategy::WgmmaWsSm90 ||
        !((attention && attention.getRole() == KernelRole::AttentionForward) ||
          (gemm && (gemm.getRole() == KernelRole::Gemm || gemm.getRole() == KernelRole::GatedGemm ||
                    gemm.getRole() == KernelRole::GemmSplitK)) ||
          (moe && moe.isGemm())))
      return emitOpError("has a persistent grid order, which only a warp-specialised attention forward "
                         "or GEMM (strategy wgmma_ws_sm90, #tile.attention<role = attention_forward>, "
                         "#tile.gemm<role = gemm / gated_gemm / gemm_split_k> or a #tile.moe GEMM role) "
                         "takes; other kernels take one tile a block");
    // With three consumer warpgroups (160 registers each) the tile loop spills.
    if (getWarps() != 8)
      return emitOpError() << "has a persistent grid order on " << getWarps()
                           << " consumer warps; the persistent forward has two consumer warpgroups "
                              "(8 warps)";
  }
  // Head groups remap a dense one-tile grid in the warp-specialised backward's library form only.
  if (GridOrderAttr order = getGridOrderAttr(); order && order.getOrder() == BlockOrder::HeadGroups) {
    auto attention = llvm::dyn_cast_or_null<AttentionSpecAttr>(getSpecAttr());
    if (getStrategy() != Strategy::WgmmaWsSm90 || !attention ||
        (attention.getRole() != KernelRole::AttentionBackward &&
         attention.getRole() != KernelRole::AttentionBackwardTransposed))
      return emitOpError("has a head_groups grid order, which only a warp-specialised attention backward's "
                         "main kernel (strategy wgmma_ws_sm90, #tile.attention<role = attention_backward or "
                         "attention_backward_transposed>) takes");
  }
  int64_t warps = static_cast<int64_t>(getWarps());
  // (A packed-sequences forward is the warp-specialised forward's body, one library call: its warps too.)
  bool warpSpecialised = getStrategy() == Strategy::WgmmaWsSm90 || llvm::isa_and_nonnull<VarlenSpecAttr>(getSpecAttr());
  if (!limits::isWarpCount(warps, warpSpecialised))
    return emitOpError() << "warps must be a power of two in [1, " << limits::kMaxWarps << "]"
                         << (warpSpecialised ? " or whole warpgroups below it (wgmma_ws_sm90)" : "")
                         << ", got " << warps;
  if (failed(expectInRange(*this, "block_m", static_cast<int64_t>(getBlockM()), 1,
                           limits::kMaxBlock)) ||
      failed(expectInRange(*this, "block_n", static_cast<int64_t>(getBlockN()), 1,
                           limits::kMaxBlock)) ||
      failed(expectInRange(*this, "stages", static_cast<int64_t>(getStages()), 1,
                           limits::kMaxStages)) ||
      failed(expectInRange(*this, "smem_bytes", getSmemBytes(), 0, limits::kMaxInt32)))
    return failure();
  // flash-plan-memory rebuilds a kernel from its recipe.
  if (Attribute spec = getSpecAttr();
      spec && !llvm::isa<AttentionSpecAttr, GemmSpecAttr, DecodeSpecAttr, VarlenSpecAttr, MoeSpecAttr>(spec))
    return emitOpError() << "spec must be a #tile.attention, #tile.gemm, #tile.decode, #tile.varlen or #tile.moe "
                            "recipe, got "
                         << spec;
  // flash-warp-specialize's schedule describes this kernel's plan: its
  // consumers are the plan's warps, its ring the plan's stages.
  if (WarpSpecializedAttr schedule = getScheduleAttr()) {
    if (getStrategy() != Strategy::WgmmaWsSm90)
      return emitOpError() << "has a #tile.warp_specialized schedule but strategy "
                           << stringifyStrategy(getStrategy())
                           << "; only wgmma_ws_sm90 kernels are warp-specialised";
    // Split by rows, the consumers are the plan's warps; split by roles, each
    // consumer warpgroup holds the plan's whole tiles (one warpgroup's warps).
    if (schedule.getRoleSplit() ? warps != 4 : schedule.getConsumerWarpgroups() * 4 != warps)
      return emitOpError() << "schedule has " << schedule.getConsumerWarpgroups()
                           << " consumer warpgroups"
                           << (schedule.getRoleSplit() ? " split by roles" : "") << " but the plan "
                           << warps << " warps ("
                           << (schedule.getRoleSplit() ? "4: each warpgroup holds whole tiles"
                                                       : "4 a warpgroup")
                           << ")";
    if (schedule.getRingStages() != static_cast<int64_t>(getStages()))
      return emitOpError() << "schedule has " << schedule.getRingStages()
                           << " ring stages but the plan " << getStages();
    // A GEMM split over K adds each unit's sum from registers: its consumers
    // never take turns at tiles.
    if (auto gemm = llvm::dyn_cast_or_null<GemmSpecAttr>(getSpecAttr());
        gemm && gemm.getRole() == KernelRole::GemmSplitK && schedule.getPingPong())
      return emitOpError("schedule ping-pongs, which a GEMM split over K (#tile.gemm<role = gemm_split_k>) does "
                         "not: its units' sums leave from registers, never by turns");
    // A GEMM with B resident (the resident-B form): its consumers take the tiles in turn.
    if (auto gemm = llvm::dyn_cast_or_null<GemmSpecAttr>(getSpecAttr());
        gemm && gemm.getRole() != KernelRole::FfnFused && !schedule.getResident().empty() &&
        !schedule.getPingPong())
      return emitOpError("schedule keeps a GEMM operand resident but does not ping-pong: the resident-B GEMM's "
                         "consumers take its tiles in turn");
  }
  // The tuning-table entry a plan came from, and its schedule knobs.
  if (DictionaryAttr tuning = getTuningAttr()) {
    for (NamedAttribute field : tuning) {
      StringRef name = field.getName().getValue();
      bool ok = name == "entry" || name == "key" ? llvm::isa<StringAttr>(field.getValue())
                : name == "ping_pong" || name == "persistent" || name == "resident_b"
                    ? llvm::isa<BoolAttr>(field.getValue())
                : name == "group"                 ? llvm::isa<IntegerAttr>(field.getValue())
                                                  : false;
      if (!ok)
        return emitOpError() << "tuning attribute field '" << name
                             << "' is unknown or of the wrong type (entry and key: strings, "
                                "ping_pong, persistent and resident_b: bool, group: integer)";
    }
    if (!tuning.getAs<StringAttr>("entry"))
      return emitOpError("tuning attribute needs the entry it names (entry = \"<file>:<line>\")");
    if (auto group = tuning.getAs<IntegerAttr>("group");
        group && (group.getInt() < 1 || group.getInt() > 64))
      return emitOpError() << "tuning group must be in [1, 64], got " << group.getInt();
  }
  if (getBody().empty())
    return emitOpError("needs a body");
  Block &entry = getBody().front();
  if (entry.getNumArguments() != type.getNumInputs() ||
      !llvm::equal(entry.getArgumentTypes(), type.getInputs()))
    return emitOpError("entry block arguments must match the signature");
  return success();
}

LogicalResult LaunchOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  auto kernel = symbolTable.lookupNearestSymbolFrom<KernelOp>(*this, getKernelAttr());
  if (!kernel)
    return emitOpError() << "'" << getKernel() << "' does not name a tile.kernel";
  ArrayRef<Type> params = kernel.getFunctionType().getInputs();
  if (params.size() != getArgs().size())
    return emitOpError() << "kernel @" << getKernel() << " takes " << params.size()
                         << " arguments, got " << getArgs().size();
  for (auto [index, pair] : llvm::enumerate(llvm::zip(params, getArgs().getTypes()))) {
    auto [param, arg] = pair;
    auto want = llvm::dyn_cast<GlobalTensorType>(param), got = llvm::dyn_cast<GlobalTensorType>(arg);
    if (!want || !got) {
      if (param != arg)
        return emitOpError() << "argument " << index << " has type " << arg << " but kernel @"
                             << getKernel() << " expects " << param;
      continue;
    }
    bool compatible =
        want.getRank() == got.getRank() && want.getElementType() == got.getElementType();
    for (int64_t d = 0; compatible && d < want.getRank(); ++d)
      if (!ShapedType::isDynamic(want.getShape()[d]) && !ShapedType::isDynamic(got.getShape()[d]) &&
          want.getShape()[d] != got.getShape()[d])
        compatible = false;
    if (!compatible)
      return emitOpError() << "argument " << index << " has type " << arg << " but kernel @"
                           << getKernel() << " expects " << param;
  }
  return success();
}

bool AllocTensorOp::startsZeroed() {
  // A workspace a kernel reads before anything writes it (a decode program's status) asks by name.
  if ((*this)->hasAttr("tile.zero_fill"))
    return true;
  // An accumulator the program's first kernel zeroes itself (the attention backward's preprocess).
  if ((*this)->hasAttr(kZeroedInProgram))
    return false;
  for (OpOperand &use : getResult().getUses()) {
    auto launch = llvm::dyn_cast<LaunchOp>(use.getOwner());
    if (!launch)
      continue;
    auto kernel = SymbolTable::lookupNearestSymbolFrom<KernelOp>(launch, launch.getKernelAttr());
    if (!kernel || kernel.getBody().empty() || use.getOperandNumber() >= kernel.getBody().front().getNumArguments())
      continue;  // (a malformed launch: its verifier's error)
    Value param = kernel.getBody().front().getArgument(use.getOperandNumber());
    if (llvm::any_of(param.getUsers(), [](Operation *user) { return llvm::isa<AtomicAddOp>(user); }))
      return true;
  }
  return false;
}

LogicalResult AllocTensorOp::verify() {
  int64_t dynamic = llvm::count_if(getType().getShape(), ShapedType::isDynamic);
  if (dynamic != static_cast<int64_t>(getDynamicSizes().size()))
    return emitOpError() << "needs one size per dynamic dimension (" << dynamic << "), got "
                         << getDynamicSizes().size();
  // A workspace the program zeroes itself: the first kernel launched with it must store into it (the runtime no
  // longer zero-fills it; a kernel that only added into it would add into garbage).
  if ((*this)->hasAttr(kZeroedInProgram)) {
    LaunchOp first;
    unsigned operand = 0;
    for (OpOperand &use : getResult().getUses())
      if (auto launch = llvm::dyn_cast<LaunchOp>(use.getOwner()))
        if (launch->getBlock() == (*this)->getBlock() && (!first || launch->isBeforeInBlock(first)))
          first = launch, operand = use.getOperandNumber();
    auto kernel = first ? SymbolTable::lookupNearestSymbolFrom<KernelOp>(first, first.getKernelAttr()) : KernelOp();
    if (!kernel)
      return emitOpError() << "carries " << kZeroedInProgram.str()
                           << " but no kernel of its block is launched with it (nothing would zero it)";
    // The program verifies before the kernel and its launch: a kernel without a body or with fewer parameters
    // than the launch passes is their verifiers' error, not a parameter to read here.
    if (kernel.getBody().empty() || operand >= kernel.getBody().front().getNumArguments())
      return success();
    Value param = kernel.getBody().front().getArgument(operand);
    if (llvm::none_of(param.getUsers(), [](Operation *user) { return llvm::isa<StoreOp>(user); }))
      return emitOpError() << "carries " << kZeroedInProgram.str() << " but @" << kernel.getSymName()
                           << ", the first kernel launched with it, stores nothing into it (nothing would zero it)";
  }
  return success();
}

LogicalResult DecodeBlockOp::verify() {
  auto kernel = (*this)->getParentOfType<KernelOp>();
  auto spec = kernel ? llvm::dyn_cast_or_null<DecodeSpecAttr>(kernel.getSpecAttr()) : DecodeSpecAttr();
  if (!spec)
    return emitOpError() << "must be in a tile.kernel with a #tile.decode spec";
  unsigned want = spec.tensorCount();
  if (getTensors().size() != want)
    return emitOpError() << stringifyKernelRole(spec.getRole()) << " takes " << want << " tensors"
                         << (spec.isPaged() ? " (a paged cache: the block table included)" : "") << ", got "
                         << getTensors().size();
  // Each tensor's rank, as the kernels and the CPU executor index it: 4 for queries, keys, values, caches, outputs
  // and partial outputs, 3 for lse rows, 2 for the block table, 1 for lengths and the status.
  SmallVector<int64_t> ranks;
  auto table = [&] {
    if (spec.isPaged())
      ranks.push_back(2);
  };
  switch (spec.getRole()) {
  case KernelRole::DecodeCheck:
    ranks = {4, 1}, table(), ranks.push_back(1);
    break;
  case KernelRole::DecodeSplit:
    ranks = {4, 4, 4, 1}, table(), ranks.append({4, 3, 4, 3, 1});
    break;
  case KernelRole::KvAppendCheck:
    ranks = {4, 4, 1}, table(), ranks.push_back(1);
    break;
  case KernelRole::KvAppend:
    ranks = {4, 4, 4, 4, 1}, table(), ranks.push_back(1);
    break;
  default:
    ranks = {4, 3, 4, 3, 1};
    break;
  }
  for (auto [index, tensor, rank] : llvm::enumerate(getTensors(), ranks))
    if (auto type = llvm::dyn_cast<GlobalTensorType>(tensor.getType()); type && type.getRank() != rank)
      return emitOpError() << stringifyKernelRole(spec.getRole()) << " takes a rank-" << rank << " tensor #" << index
                           << ", got " << tensor.getType();
  return success();
}

LogicalResult MoeBlockOp::verify() {
  auto kernel = (*this)->getParentOfType<KernelOp>();
  auto spec = kernel ? llvm::dyn_cast_or_null<MoeSpecAttr>(kernel.getSpecAttr()) : MoeSpecAttr();
  if (!spec)
    return emitOpError() << "must be in a tile.kernel with a #tile.moe spec";
  unsigned want = spec.tensorCount();
  if (getTensors().size() != want)
    return emitOpError() << stringifyKernelRole(spec.getRole()) << " takes " << want << " tensors"
                         << (spec.getRole() == KernelRole::MoeUp ? (spec.getGated() ? " (gated: w_up included)" : "")
                                                                 : "")
                         << ", got " << getTensors().size();
  // Each tensor's rank and element type, as the kernels and the CPU executor index it, a letter a tensor: 'i' an
  // i32 table (counts, ids, ranks, offsets, groups), 'f' the routed rows' f32 weights (or their gradients), 'r' rows
  // (rank 2: x, the logits, the router, the permuted layout's workspaces), 'w' the experts' weights [E, K, N] or
  // their gradients. (A float tensor read as a table, or a rank-1 one as rows, was read past its values.)
  bool gated = spec.getGated(), train = spec.getTrain();
  std::string codes;
  switch (spec.getRole()) {
  case KernelRole::MoeRouter: // x, router, logits
    codes = "rrr";
    break;
  case KernelRole::MoePlan: // logits, counts, offsets, groups, [saved_counts]
    codes = train ? "riiii" : "riii";
    break;
  case KernelRole::MoeSelect: // logits, counts, ids, weights, ranks
    codes = "riifi";
    break;
  case KernelRole::MoeUp: // logits, permuted, w1, [w_up], groups, hidden, [pre | gate, up]
    codes = std::string(gated ? "rrww" : "rrw") + "ir" + (train ? (gated ? "rr" : "r") : "");
    break;
  case KernelRole::MoeDown:               // logits, hidden, w2, groups, expert_out
  case KernelRole::MoeDataGrad:           // logits, a, w, groups, c
  case KernelRole::MoeDataGradAccumulate: // logits, a, w, groups, c
    codes = "rrwir";
    break;
  case KernelRole::MoeWeightGrad: // logits, a, b, offsets, dw
    codes = "rrriw";
    break;
  case KernelRole::MoeSelectGrad: // logits, ids, weights, d_weights, d_logits
    codes = "riffr";
    break;
  case KernelRole::MoeGatherGrad: // dx_perm, ids, ranks, offsets, dx
    codes = "riiir";
    break;
  case KernelRole::MoeScatterGrad: // dy, expert_out, counts, ids, weights, ranks, offsets, d_expert_out, d_weights
    codes = "rriifiirf";
    break;
  case KernelRole::MoeActivationGrad: // logits, pre, [up], dh, offsets, d_pre, [d_up]
    codes = gated ? "rrrrirr" : "rrrir";
    break;
  case KernelRole::MoePermute: // x, counts, ids, ranks, offsets, permuted
    codes = "riiiir";
    break;
  default: // the combine: expert_out, ids, weights, ranks, offsets, y
    codes = "rifiir";
    break;
  }
  for (auto [index, tensor, code] : llvm::enumerate(getTensors(), codes)) {
    auto type = llvm::dyn_cast<GlobalTensorType>(tensor.getType());
    if (!type)
      continue;
    int64_t rank = code == 'w' ? 3 : code == 'r' ? 2 : 1;
    Type element = type.getElementType();
    bool table = code == 'i', routed = code == 'f';
    bool typed = table ? element.isInteger(32) : routed ? element.isF32() : llvm::isa<FloatType>(element);
    if (type.getRank() != rank || !typed)
      return emitOpError() << stringifyKernelRole(spec.getRole()) << " takes a rank-" << rank << " "
                           << (table ? "i32" : routed ? "f32" : "float") << " tensor #" << index << ", got "
                           << tensor.getType();
  }
  return success();
}

LogicalResult VarlenBlockOp::verify() {
  auto kernel = (*this)->getParentOfType<KernelOp>();
  auto spec = kernel ? llvm::dyn_cast_or_null<VarlenSpecAttr>(kernel.getSpecAttr()) : VarlenSpecAttr();
  if (!spec)
    return emitOpError() << "must be in a tile.kernel with a #tile.varlen spec";
  unsigned want = spec.tensorCount();
  if (getTensors().size() != want)
    return emitOpError() << stringifyKernelRole(spec.getRole()) << " takes " << want << " tensors, got "
                         << getTensors().size();
  return success();
}

LogicalResult DimOp::verify() {
  int64_t rank = getTensor().getType().getRank();
  int64_t index = static_cast<int64_t>(getIndex());
  if (index < 0 || index >= rank)
    return emitOpError() << "dimension " << getIndex() << " out of range for rank " << rank;
  return success();
}

LogicalResult RequireExtentOp::verify() {
  auto table = getTable().getType(), range = getRange().getType();
  int64_t tableDim = static_cast<int64_t>(getTableDim()), rangeDim = static_cast<int64_t>(getRangeDim());
  if (tableDim < 0 || tableDim >= table.getRank())
    return emitOpError() << "table dimension " << tableDim << " out of range for rank " << table.getRank();
  if (!table.getElementType().isSignlessInteger(32) && !table.getElementType().isF32())
    return emitOpError() << "table must hold i32 or f32 (a modifier's tensor), got " << table.getElementType();
  int64_t wanted = rangeDimOf(getIndex());
  if (range.getRank() != 4 || rangeDim != wanted)
    return emitOpError() << "the " << stringifyModifierIndex(getIndex()) << " index ranges over dimension " << wanted
                         << " of a [B, H, S, D] tensor, got dimension " << rangeDim << " of " << range;
  int64_t size = table.getShape()[tableDim], extent = range.getShape()[rangeDim];
  if (!ShapedType::isDynamic(size) && !ShapedType::isDynamic(extent) && size < extent)
    return emitOpError() << "never holds: the table's dimension " << tableDim << " is " << size << ", the "
                         << stringifyModifierIndex(getIndex()) << " index ranges over " << extent;
  return success();
}

std::string RequireExtentOp::shortfallMessage(StringRef tableName, StringRef size, StringRef range) {
  static const char *const kIndices[4] = {"batch index, which ranges over B", "query head index, which ranges over Hq",
                                          "query index, which ranges over Sq", "key index, which ranges over Sk"};
  return ("argument '" + tableName + "' dim " + Twine(getTableDim()) + " is " + size + ", but the " +
          (getModifier() == Modifier::Mask ? "mask" : "score") + " modifier reads it at the " +
          kIndices[static_cast<unsigned>(getIndex())] + " = " + range)
      .str();
}

//===----------------------------------------------------------------------===//
// Global memory
//===----------------------------------------------------------------------===//

LogicalResult LoadOp::verify() {
  auto tile = llvm::cast<TileType>(getResult().getType());
  if (!tile.isShared())
    return emitOpError() << "loads into shared memory, got " << tile;
  // `buffers` is the pipeline depth the emitter software-pipelines with.
  if (failed(expectInRange(*this, "buffers", getBuffers(), 1, limits::kMaxStages)) ||
      failed(expectInRange(*this, "smem_offset", getSmemOffset(), 0, limits::kMaxInt32)))
    return failure();
  return verifyGlobalTileAccess(*this, tile, getSource().getType(), getIndices().size());
}

LogicalResult StoreOp::verify() {
  return verifyGlobalTileAccess(*this, llvm::cast<TileType>(getValue().getType()),
                                getDest().getType(), getIndices().size());
}

LogicalResult AtomicAddOp::verify() {
  if (failed(expectRegisterF32Tile(*this, getValue().getType(), "value")))
    return failure();
  return verifyGlobalTileAccess(*this, llvm::cast<TileType>(getValue().getType()),
                                getDest().getType(), getIndices().size());
}

LogicalResult LoadRowsOp::verify() {
  auto tile = llvm::cast<TileType>(getResult().getType());
  if (failed(expectTile(*this, tile, "result", 1, std::nullopt, true)))
    return failure();
  if (!getSource().getType().getElementType().isF32())
    return emitOpError("reads f32 row data (lse, D)");
  return verifyIndices(*this, getSource().getType(), getIndices().size(), 1);
}

LogicalResult StoreRowsOp::verify() {
  auto tile = llvm::cast<TileType>(getValue().getType());
  if (failed(expectTile(*this, tile, "value", 1, MemorySpace::Register, true)))
    return failure();
  if (!getDest().getType().getElementType().isF32())
    return emitOpError("writes f32 row data (lse, D)");
  return verifyIndices(*this, getDest().getType(), getIndices().size(), 1);
}

LogicalResult AddBiasOp::verify() {
  if (failed(expectRegisterF32Tile(*this, getAcc().getType(), "accumulator")))
    return failure();
  if (getBias().getType().getRank() != 1)
    return emitOpError() << "bias must be a rank-1 tensor, got " << getBias().getType();
  return success();
}

//===----------------------------------------------------------------------===//
// Tile math
//===----------------------------------------------------------------------===//

LogicalResult FillOp::verify() {
  auto tile = llvm::cast<TileType>(getType());
  if (!tile.isRegister())
    return emitOpError() << "fills register tiles, got " << tile;
  // -inf seeds running maxima; NaN has no use and no CUDA literal.
  if (getValue().isNaN())
    return emitOpError("fill value must not be NaN");
  return success();
}

LogicalResult CopyOp::verify() {
  auto source = llvm::cast<TileType>(getSource().getType());
  auto result = llvm::cast<TileType>(getType());
  if (failed(expectTile(*this, source, "source", 2, MemorySpace::Register, false)) ||
      failed(expectTile(*this, result, "result", 2, MemorySpace::Shared, false)) ||
      failed(expectInRange(*this, "smem_offset", getSmemOffset(), 0, limits::kMaxInt32)))
    return failure();
  if (source.getShape() != result.getShape() || source.getElementType() != result.getElementType())
    return emitOpError("copies keep shape and element type");
  return success();
}

LogicalResult ConvertOp::verify() {
  auto source = llvm::cast<TileType>(getSource().getType());
  auto result = llvm::cast<TileType>(getType());
  if (!result.isRegister())
    return emitOpError() << "converts into a register tile, got " << result;
  if (source.getShape() != result.getShape())
    return emitOpError("conversion keeps the shape");
  return success();
}

LogicalResult MatmulOp::verify() {
  auto a = llvm::cast<TileType>(getA().getType());
  auto b = llvm::cast<TileType>(getB().getType());
  auto acc = llvm::cast<TileType>(getAcc().getType());
  if (a.getRank() != 2 || b.getRank() != 2)
    return emitOpError("operands must be rank-2 tiles");
  if (failed(expectRegisterF32Tile(*this, acc, "accumulator")))
    return failure();
  if (!b.isShared())
    return emitOpError() << "operand b must be a shared tile, got " << b;
  if (getTransposeA() && !a.isShared())
    return emitOpError() << "a transposed operand a must be a shared tile, got " << a;
  if (a.getElementType() != b.getElementType())
    return emitOpError() << "operands must share an element type, got " << a.getElementType()
                         << " and " << b.getElementType();
  int64_t m = getTransposeA() ? a.getCols() : a.getRows();
  int64_t ka = getTransposeA() ? a.getRows() : a.getCols();
  int64_t kb = getTransposeB() ? b.getCols() : b.getRows();
  int64_t n = getTransposeB() ? b.getRows() : b.getCols();
  if (ka != kb)
    return emitOpError() << "contraction sizes differ: " << ka << " vs " << kb;
  if (acc.getRows() != m || acc.getCols() != n)
    return emitOpError() << "accumulator must be " << m << "x" << n << ", got " << acc;
  return success();
}

LogicalResult MaskOp::verify() {
  if (static_cast<int64_t>(getWindowLeft()) < -1 || static_cast<int64_t>(getWindowRight()) < -1)
    return emitOpError("window sides must be >= -1 (-1: unbounded)");
  // The device library takes the sides as int template arguments and adds
  // them to 32-bit positions (the flash mask attribute has the same bound).
  if (static_cast<int64_t>(getWindowLeft()) > limits::kMaxWindowSide ||
      static_cast<int64_t>(getWindowRight()) > limits::kMaxWindowSide)
    return emitOpError() << "window sides must be at most " << limits::kMaxWindowSide
                         << " (-1: unbounded)";
  return expectRegisterF32Tile(*this, getType(), "scores");
}

// The arguments a use of a modifier @sym (its body `body`, tensor arguments from `firstTensor`) passes: the
// batch and head (index), then one !tile.tensor per tensor argument of @sym, of its rank and element type with
// matching static sizes.
static LogicalResult verifyModifierArgs(Operation *op, FlatSymbolRefAttr sym, Block &body, unsigned firstTensor,
                                        ValueRange args) {
  unsigned tensors = body.getNumArguments() - firstTensor;
  if (args.size() != 2 + tensors || !args[0].getType().isIndex() || !args[1].getType().isIndex())
    return op->emitOpError() << "mod " << sym << " takes (batch, head" << (tensors ? ", " : "")
                             << (tensors ? std::to_string(tensors) + " tensor(s)" : std::string()) << "), got "
                             << args.size() << " argument(s)";
  for (unsigned i = 0; i < tensors; ++i) {
    auto want = llvm::cast<RankedTensorType>(body.getArgument(firstTensor + i).getType());
    auto got = llvm::dyn_cast<GlobalTensorType>(args[2 + i].getType());
    bool fits = got && got.getElementType() == want.getElementType() && got.getRank() == want.getRank();
    for (int64_t d = 0; fits && d < want.getRank(); ++d)
      fits = ShapedType::isDynamic(want.getDimSize(d)) || want.getDimSize(d) == got.getShape()[d];
    if (!fits)
      return op->emitOpError() << "mod " << sym << " tensor " << i << " must be a !tile.tensor like " << want
                               << ", got " << args[2 + i].getType();
  }
  return success();
}

// A use of mask modifier @sym (b, h, q, k, tensors...).
static LogicalResult verifyModifierUse(Operation *op, FlatSymbolRefAttr sym, ValueRange args,
                                       SymbolTableCollection &symbolTable) {
  auto maskMod = symbolTable.lookupNearestSymbolFrom<MaskModOp>(op, sym);
  if (!maskMod)
    return op->emitOpError() << "mod " << sym << " does not name a tile.mask_mod of the module";
  return verifyModifierArgs(op, sym, maskMod.getBody().front(), 4, args);
}

LogicalResult MaskOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  FlatSymbolRefAttr sym = getMaskModAttr();
  if (!sym)
    return getModArgs().empty() ? success() : emitOpError("has modifier arguments but no mod");
  return verifyModifierUse(*this, sym, getModArgs(), symbolTable);
}

LogicalResult ClassifyBlocksOp::verify() {
  auto table = llvm::cast<GlobalTensorType>(getTable().getType());
  if (table.getRank() != 4 || !table.getElementType().isSignlessInteger(32))
    return emitOpError() << "table must be a rank-4 i32 !tile.tensor [B or 1, H or 1, rows, 2 + 2 * columns], got "
                         << table;
  int64_t width = table.getShape()[3];
  if (!ShapedType::isDynamic(width) && (width < 2 || width % 2 != 0))
    return emitOpError() << "table rows must be 2 + 2 * columns wide (bounds, classes, next shown), got " << width;
  return success();
}

LogicalResult PlanSegmentsOp::verify() {
  auto ids = llvm::cast<GlobalTensorType>(getIds().getType());
  if (ids.getRank() != 1 || !ids.getElementType().isSignlessInteger(32))
    return emitOpError() << "ids must be a rank-1 i32 !tile.tensor (each token's document), got " << ids;
  auto plan = llvm::cast<GlobalTensorType>(getPlan().getType());
  if (plan.getRank() != 2 || !plan.getElementType().isSignlessInteger(32) || plan.getShape()[1] != 4)
    return emitOpError() << "plan must be a [rows, 4] i32 !tile.tensor (a header, then the tile maps), got " << plan;
  return success();
}

LogicalResult ClassifyBlocksOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  return verifyModifierUse(*this, getMaskModAttr(), getModArgs(), symbolTable);
}

LogicalResult MaskModOp::verify() {
  SmallVector<Type> tensors;
  if (!getBody().empty())
    for (BlockArgument arg : getBody().front().getArguments())
      if (!arg.getType().isIndex())
        tensors.push_back(arg.getType());
  if (failed(flashc::verifyIndexFunction(*this, getBody(), tensors, "the mask modifier's body")))
    return failure();
  if (!flashc::indexFunctionLayout(getBody()).hasBatchAndHead())
    return emitOpError() << "the mask modifier's body takes four indices (batch, head, query, key), then its "
                            "tensors";
  return success();
}

// A use of score modifier @sym (s, b, h, q, k, tensors...).
static LogicalResult verifyScoreModUse(Operation *op, FlatSymbolRefAttr sym, ValueRange args,
                                       SymbolTableCollection &symbolTable) {
  auto scoreMod = symbolTable.lookupNearestSymbolFrom<ScoreModOp>(op, sym);
  if (!scoreMod)
    return op->emitOpError() << "mod " << sym << " does not name a tile.score_mod of the module";
  return verifyModifierArgs(op, sym, scoreMod.getBody().front(), 5, args);
}

LogicalResult ScoreModOp::verify() {
  SmallVector<Type> tensors;
  if (!getBody().empty())
    for (BlockArgument arg : getBody().front().getArguments().drop_front())
      if (!arg.getType().isIndex())
        tensors.push_back(arg.getType());
  if (failed(flashc::verifyScoreFunction(*this, getBody(), tensors, "the score modifier's body")))
    return failure();
  if (!flashc::scoreFunctionLayout(getBody()).hasBatchAndHead())
    return emitOpError() << "the score modifier's body takes the score, four indices (batch, head, query, key), "
                            "then its tensors";
  return success();
}

LogicalResult ScoreOp::verify() {
  if (failed(expectBoundedScale(*this, "scale", getScale())))
    return failure();
  return expectRegisterF32Tile(*this, getType(), "scores");
}

LogicalResult ScoreOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  return verifyScoreModUse(*this, getScoreModAttr(), getModArgs(), symbolTable);
}

LogicalResult ScoreGradOp::verify() {
  if (failed(expectBoundedScale(*this, "scale", getScale())))
    return failure();
  return expectRegisterF32Tile(*this, getType(), "gradient");
}

LogicalResult ScoreGradOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  return verifyScoreModUse(*this, getScoreModAttr(), getModArgs(), symbolTable);
}

LogicalResult SoftcapOp::verify() {
  if (!(getCap().convertToDouble() > 0.0))
    return emitOpError("cap must be positive");
  if (failed(expectBoundedScale(*this, "scale", getScale())) ||
      failed(expectBoundedScale(*this, "cap", getCap())))
    return failure();
  return expectRegisterF32Tile(*this, getType(), "scores");
}

LogicalResult SoftcapGradOp::verify() {
  if (!(getCap().convertToDouble() > 0.0))
    return emitOpError("cap must be positive");
  if (failed(expectBoundedScale(*this, "cap", getCap())))
    return failure();
  return expectRegisterF32Tile(*this, getType(), "gradient");
}

LogicalResult ScaleOp::verify() {
  if (failed(expectBoundedScale(*this, "factor", getFactor())))
    return failure();
  return expectRegisterF32Tile(*this, getType(), "source");
}
LogicalResult MulOp::verify() { return expectRegisterF32Tile(*this, getType(), "operand"); }
LogicalResult ActivationOp::verify() { return expectRegisterF32Tile(*this, getType(), "source"); }
LogicalResult ActivationGradOp::verify() {
  if (failed(expectRegisterF32Tile(*this, getType(), "gradient")) ||
      failed(expectTile(*this, getPreactivation().getType(), "pre-activation", 2,
                        MemorySpace::Register, false)))
    return failure();
  auto grad = llvm::cast<TileType>(getType());
  auto pre = llvm::cast<TileType>(getPreactivation().getType());
  if (pre.getShape() != grad.getShape())
    return emitOpError() << "pre-activation " << pre << " must have the gradient's shape "
                         << grad.getShape()[0] << "x" << grad.getShape()[1];
  Type element = pre.getElementType();
  if (!element.isF32() && !element.isBF16() && !element.isF16())
    return emitOpError() << "pre-activation must be f32, bf16 or f16, got " << pre;
  return success();
}

LogicalResult RowMaxOp::verify() {
  if (failed(expectRegisterF32Tile(*this, getScores().getType(), "scores")))
    return failure();
  return expectRowVector(*this, getType(), "running max",
                         llvm::cast<TileType>(getScores().getType()).getRows());
}

LogicalResult Exp2Op::verify() {
  if (failed(expectBoundedScale(*this, "scale", getScale())))
    return failure();
  if (failed(expectRegisterF32Tile(*this, getScores().getType(), "scores")))
    return failure();
  return expectRowVector(*this, getMax().getType(), "row max",
                         llvm::cast<TileType>(getScores().getType()).getRows());
}

LogicalResult SoftmaxCorrectionOp::verify() {
  if (failed(expectBoundedScale(*this, "scale", getScale())))
    return failure();
  return expectTile(*this, getType(), "row max", 1, MemorySpace::Register, true);
}

LogicalResult OnlineSumOp::verify() {
  if (failed(expectRegisterF32Tile(*this, getProbs().getType(), "probabilities")))
    return failure();
  return expectRowVector(*this, getType(), "row sum",
                         llvm::cast<TileType>(getProbs().getType()).getRows());
}

LogicalResult RowSumOp::verify() {
  if (failed(expectTile(*this, getSource().getType(), "source", 2, std::nullopt, true)))
    return failure();
  return expectRowVector(*this, getType(), "result",
                         llvm::cast<TileType>(getSource().getType()).getRows());
}

LogicalResult RescaleOp::verify() {
  if (failed(expectRegisterF32Tile(*this, getAcc().getType(), "accumulator")))
    return failure();
  return expectRowVector(*this, getCorrection().getType(), "correction",
                         llvm::cast<TileType>(getAcc().getType()).getRows());
}

LogicalResult NormalizeOp::verify() {
  if (failed(expectRegisterF32Tile(*this, getAcc().getType(), "accumulator")))
    return failure();
  return expectRowVector(*this, getSum().getType(), "row sum",
                         llvm::cast<TileType>(getAcc().getType()).getRows());
}

LogicalResult LseOp::verify() {
  if (failed(expectBoundedScale(*this, "scale", getScale())))
    return failure();
  return expectTile(*this, getType(), "row statistics", 1, MemorySpace::Register, true);
}

//===----------------------------------------------------------------------===//
// Backward helpers
//===----------------------------------------------------------------------===//

LogicalResult RowDotOp::verify() {
  auto lhs = llvm::cast<TileType>(getLhs().getType());
  auto rhs = llvm::cast<TileType>(getRhs().getType());
  if (lhs.getRank() != 2 || rhs.getRank() != 2 || lhs.getShape() != rhs.getShape())
    return emitOpError() << "operands must be rank-2 tiles of one shape, got " << lhs << " and "
                         << rhs;
  return expectRowVector(*this, getType(), "result", lhs.getRows());
}

/// A per-row statistic of `tile`: a row vector (register, one value per row)
/// or a column vector (shared, one value per column, S^T form).
static LogicalResult expectRowOrColumnVector(Operation *op, Type type, StringRef what,
                                             TileType tile) {
  auto vector = llvm::cast<TileType>(type);
  if (vector.getRank() != 1 || !vector.getElementType().isF32())
    return op->emitOpError() << what << " must be an f32 row vector (register) or column vector "
                             << "(shared), got " << type;
  int64_t want = vector.isShared() ? tile.getCols() : tile.getRows();
  if (vector.getRows() != want)
    return op->emitOpError() << what << " must have " << want << " values ("
                             << (vector.isShared() ? "one per column" : "one per row") << "), got "
                             << type;
  return success();
}

LogicalResult RecomputeProbsOp::verify() {
  if (failed(expectBoundedScale(*this, "scale", getScale())))
    return failure();
  if (failed(expectRegisterF32Tile(*this, getScores().getType(), "scores")))
    return failure();
  return expectRowOrColumnVector(*this, getLse().getType(), "lse",
                                 llvm::cast<TileType>(getScores().getType()));
}

LogicalResult SoftmaxGradOp::verify() {
  if (failed(expectRegisterF32Tile(*this, getProbs().getType(), "probabilities")))
    return failure();
  return expectRowOrColumnVector(*this, getDelta().getType(), "delta",
                                 llvm::cast<TileType>(getProbs().getType()));
}

#define GET_OP_CLASSES
#include "flashc/Dialect/Tile/IR/TileOps.cpp.inc"
