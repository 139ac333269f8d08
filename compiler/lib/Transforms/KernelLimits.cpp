//===- KernelLimits.cpp - sizes the generated kernels can honour ----------===//
//
// A graph-level spec may be valid flash IR and still ask for sizes no kernel
// of the device library can run (every fused op's 32-bit indices; attention's
// head dims). flash-tile and flash-generate-backward both
// check the fused ops here before building kernels, so the user reads which
// dimension of which op is out of range (and what is supported) at the spec
// line instead of a crash in a kernel builder or an NVRTC error at the end.
//
//===----------------------------------------------------------------------===//
#include "TileLowering.h"

#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;

namespace flashc {

namespace {

/// The kernels index tensors with 32-bit ints (GlobalMatrix rows/cols, tile
/// coordinates); larger static sizes would be truncated.
constexpr int64_t kMaxStaticSize = 2147483647;
/// Largest head dim: register tiles [block x D] and shared K/V tiles of the
/// backward kernels stop fitting the targets past it.
constexpr int64_t kMaxHeadDim = 256;
/// 16-bit attention head dims: multiples of 8 elements, whole 16-byte chunks,
/// which the attention kernels (the warp-specialised forward's TMA boxes, the
/// padded tiles of TilePadding.h) are built and measured for. (FFN widths may
/// be anything: see checkFfn.)
constexpr int64_t kRowMultiple16Bit = 8;

bool isSixteenBit(Type element) { return element.isBF16() || element.isF16(); }

/// Reports the first static size of `type` above kMaxStaticSize; `symbols`
/// names the dimensions (aligned at the end, e.g. {"M", "d"} for [..., M, d]).
LogicalResult checkIndexable(Operation *op, StringRef pass, StringRef name, Type type,
                             ArrayRef<StringRef> symbols) {
  auto ranked = llvm::dyn_cast<RankedTensorType>(type);
  if (!ranked)
    return success();
  int64_t rank = ranked.getRank();
  for (auto [dim, size] : llvm::enumerate(ranked.getShape())) {
    if (ShapedType::isDynamic(size) || size <= kMaxStaticSize)
      continue;
    int64_t symbol = static_cast<int64_t>(dim) - rank + static_cast<int64_t>(symbols.size());
    InFlightDiagnostic diag = op->emitError() << pass << ": " << name << " " << ranked
                                              << " has a static size " << size;
    if (symbol >= 0)
      diag << " (" << symbols[symbol] << ")";
    else
      diag << " (dimension " << dim << ")";
    return diag << " above " << kMaxStaticSize
                << ", the largest size the kernels' 32-bit indices can address";
  }
  return success();
}

LogicalResult checkAttention(flash::AttentionOp op, StringRef pass) {
  Type element = op.getQuery().getType().getElementType();
  bool sixteenBit = isSixteenBit(element);
  for (auto [symbol, operand, size] :
       {std::tuple<StringRef, StringRef, int64_t>{"D", "query and key", op.getHeadDim()},
        {"Dv", "value", op.getValueHeadDim()}}) {
    bool inRange = size >= 1 && size <= kMaxHeadDim;
    if (inRange && (!sixteenBit || size % kRowMultiple16Bit == 0))
      continue;
    InFlightDiagnostic diag = op.emitError()
                              << pass << ": head dim " << symbol << " = " << size << " (" << operand
                              << ") is not supported by the kernels: ";
    if (sixteenBit)
      return diag << element << " attention takes head dims that are multiples of "
                  << kRowMultiple16Bit << " from " << kRowMultiple16Bit << " to " << kMaxHeadDim
                  << " (rows are copied in 16-byte chunks of " << kRowMultiple16Bit
                  << " elements; the tiles are padded to the next multiple of 32)";
    return diag << "head dims range from 1 to " << kMaxHeadDim;
  }
  if (failed(checkIndexable(op, pass, "query", op.getQuery().getType(), {"B", "Hq", "Sq", "D"})) ||
      failed(checkIndexable(op, pass, "key", op.getKey().getType(), {"B", "Hkv", "Sk", "D"})) ||
      failed(checkIndexable(op, pass, "value", op.getValue().getType(), {"B", "Hkv", "Sk", "Dv"})))
    return failure();
  return success();
}

/// Any FFN width d, h, d_out is served, in every dtype: a 16-bit width that is
/// not a multiple of 8 elements ends inside a 16-byte copy chunk, which the
/// device library reads up to the width (cp.async src-size, zero-filled past
/// it: contractions stay exact) and stores element by element; the rows stay
/// 16-byte aligned (the runtime asks for row strides of whole 16 bytes and
/// pads its own scratch rows). What remains refused is what the 32-bit
/// indices cannot address.
LogicalResult checkFfn(flash::FfnOp op, StringRef pass) {
  if (failed(checkIndexable(op, pass, "input", op.getInput().getType(), {"M", "d"})) ||
      failed(checkIndexable(op, pass, "w1", op.getW1().getType(), {"d", "h"})) ||
      failed(checkIndexable(op, pass, "w2", op.getW2().getType(), {"h", "d_out"})))
    return failure();
  return success();
}

/// The library-block ops (decode, append, packed sequences, mixture of
/// experts) take their sizes from the tensors' shapes as 32-bit ints too.
LogicalResult checkOperands(Operation *op, StringRef pass, ArrayRef<std::pair<StringRef, Value>> operands) {
  for (auto [name, value] : operands)
    if (value && failed(checkIndexable(op, pass, name, value.getType(), {})))
      return failure();
  return success();
}

/// A paged cache's capacity (pages a sequence x page size) is a 32-bit int in
/// the kernels as well.
LogicalResult checkPagedCapacity(Operation *op, StringRef pass, Value blockTable, std::optional<uint64_t> pageSize) {
  auto table = blockTable ? llvm::dyn_cast<RankedTensorType>(blockTable.getType()) : RankedTensorType();
  if (!table || !pageSize || table.getRank() != 2 || table.isDynamicDim(1))
    return success();
  if (table.getDimSize(1) <= kMaxStaticSize / static_cast<int64_t>(std::max<uint64_t>(*pageSize, 1)))
    return success();
  return op->emitError() << pass << ": block_table " << table << " gives each sequence " << table.getDimSize(1)
                         << " pages of " << *pageSize << " rows, a capacity above " << kMaxStaticSize
                         << ", the largest the kernels' 32-bit indices can address";
}

} // namespace

LogicalResult checkKernelLimits(Operation *op, StringRef pass) {
  return llvm::TypeSwitch<Operation *, LogicalResult>(op)
      .Case([&](flash::AttentionOp attention) { return checkAttention(attention, pass); })
      .Case([&](flash::FfnOp ffn) { return checkFfn(ffn, pass); })
      .Case([&](flash::DecodeAttentionOp decode) -> LogicalResult {
        if (failed(checkOperands(decode, pass,
                                 {{"query", decode.getQuery()},
                                  {"key_cache", decode.getKeyCache()},
                                  {"value_cache", decode.getValueCache()},
                                  {"cache_seqlens", decode.getCacheSeqlens()},
                                  {"block_table", decode.getBlockTable()}})))
          return failure();
        return checkPagedCapacity(decode, pass, decode.getBlockTable(), decode.getPageSize());
      })
      .Case([&](flash::KvAppendOp append) -> LogicalResult {
        if (failed(checkOperands(append, pass,
                                 {{"key", append.getKey()},
                                  {"value", append.getValue()},
                                  {"key_cache", append.getKeyCache()},
                                  {"value_cache", append.getValueCache()},
                                  {"cache_seqlens", append.getCacheSeqlens()},
                                  {"block_table", append.getBlockTable()}})))
          return failure();
        return checkPagedCapacity(append, pass, append.getBlockTable(), append.getPageSize());
      })
      .Case([&](flash::VarlenAttentionOp varlen) {
        return checkOperands(varlen, pass,
                             {{"query", varlen.getQuery()},
                              {"key", varlen.getKey()},
                              {"value", varlen.getValue()},
                              {"cu_seqlens_q", varlen.getCuSeqlensQ()},
                              {"cu_seqlens_k", varlen.getCuSeqlensK()}});
      })
      .Case([&](flash::MoeOp moe) -> LogicalResult {
        if (failed(checkOperands(moe, pass,
                                 {{"input", moe.getInput()},
                                  {"router", moe.getRouter()},
                                  {"w1", moe.getW1()},
                                  {"w_up", moe.getWUp()},
                                  {"w2", moe.getW2()}})))
          return failure();
        // Each token's top_k copies are rows of the experts' GEMMs (input [T, d]: the verifier).
        int64_t tokens = moe.getInput().getType().getDimSize(0);
        int64_t topK = static_cast<int64_t>(moe.getTopK());
        if (ShapedType::isDynamic(tokens) || tokens <= kMaxStaticSize / std::max<int64_t>(topK, 1))
          return success();
        return moe.emitError() << pass << ": " << tokens << " tokens x top_k = " << topK
                               << " expert rows exceed " << kMaxStaticSize
                               << ", the largest count the kernels' 32-bit indices can address";
      })
      .Default([](Operation *) { return success(); });
}

} // namespace flashc
