//===- FlashOps.cpp - flash op verifiers ----------------------------------===//
//
// Every verifier names the offending operand and the expected shape, written
// symbolically ([B, Hkv, Sk, D]) and with the sizes already known filled in.
//
//===----------------------------------------------------------------------===//
#include "flashc/Dialect/Flash/IR/FlashOps.h"
#include "flashc/Dialect/Common/IndexFunction.h"
#include "flashc/Dialect/Common/ScoreFunction.h"

#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpImplementation.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/raw_ostream.h"

#include <array>
#include <cmath>
#include <string>

using namespace mlir;
using namespace mlir::flash;

namespace {

/// An expected size that accepts any size, static or dynamic (ShapedType::kDynamic expects a dynamic one).
constexpr int64_t kAnySize = -2;

/// "[2, ?, 128]"
std::string formatShape(ArrayRef<int64_t> shape) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << "[";
  llvm::interleaveComma(shape, os, [&](int64_t size) {
    if (ShapedType::isDynamic(size))
      os << "?";
    else if (size == kAnySize)
      os << "*";
    else
      os << size;
  });
  os << "]";
  return text;
}

/// Graph ops' sizes agree unless both are known and differ (the fusions check what the fused op needs).
bool sizesCompatible(int64_t a, int64_t b) {
  return ShapedType::isDynamic(a) || ShapedType::isDynamic(b) || a == b;
}

/// Why two sizes of one symbol disagree, for the messages: the expected sizes come from the op's other operands,
/// so a size static on either side is named as such, not blamed on this tensor.
std::string staticnessHint(ArrayRef<int64_t> actual, ArrayRef<int64_t> expected) {
  for (auto [dim, sizes] : llvm::enumerate(llvm::zip(actual, expected))) {
    auto [a, b] = sizes;
    if (a == b || b == kAnySize || (!ShapedType::isDynamic(a) && !ShapedType::isDynamic(b)))
      continue;
    std::string where = ShapedType::isDynamic(a)
                            ? "dynamic here and " + std::to_string(b) + " in another operand"
                            : std::to_string(a) + " here and dynamic in another operand";
    return " (dimension " + std::to_string(dim) + " is " + where +
           ": a size must be static in every tensor that has it, or dynamic in all)";
  }
  return "";
}

/// Checks that `type` has the rank of `expected` and its sizes (kAnySize accepts anything). `symbolic` spells the
/// shape, e.g. "[B, Hq, Sq]". A fused op's sizes of one symbol (B, Sq, d, ...) must be the same number or dynamic in
/// every tensor: each tensor's sizes are checked at launch on their own, so a run-time batch of 2 beside a key
/// declared with batch 1 would pass, and the kernels would read the key past its end. A graph op's (the spec's own
/// spelling, evaluated on the CPU) agree unless both are known and differ: the fusions check what they build.
LogicalResult checkShape(Operation *op, StringRef name, ShapedType type, ArrayRef<int64_t> expected,
                         StringRef symbolic, bool graphOp = false) {
  if (type.getRank() != static_cast<int64_t>(expected.size()))
    return op->emitOpError() << name << " must have rank " << expected.size()
                             << " " << symbolic << ", got " << type;
  for (auto [actual, wanted] : llvm::zip_equal(type.getShape(), expected))
    if (wanted != kAnySize && (graphOp ? !sizesCompatible(actual, wanted) : actual != wanted))
      return op->emitOpError() << name << " has shape " << formatShape(type.getShape()) << ", expected " << symbolic
                               << " = " << formatShape(expected)
                               << (graphOp ? "" : staticnessHint(type.getShape(), expected));
  return success();
}

LogicalResult checkGraphShape(Operation *op, StringRef name, ShapedType type, ArrayRef<int64_t> expected,
                              StringRef symbolic) {
  return checkShape(op, name, type, expected, symbolic, /*graphOp=*/true);
}

/// A modifier's table read at an index argument itself (slopes[h], ids[q]) holds that index's range where both are
/// static: the kernels read a shorter one's missing entries as 0 (the device library's reads check bounds), a silent
/// bias. (Where either is dynamic the compiled programs check it at launch: tile.require_extent.) `ranges`: those of
/// (b, h, q, k); the body's index arguments start at `firstIndex` (after a score's).
LogicalResult checkTableReads(Region &body, unsigned firstIndex, ArrayRef<int64_t> ranges, StringRef what) {
  for (const flashc::IndexArgumentRead &read : flashc::indexArgumentReads(body, firstIndex)) {
    auto type = llvm::cast<RankedTensorType>(llvm::cast<tensor::ExtractOp>(read.read).getTensor().getType());
    int64_t size = type.getDimSize(read.dim), range = ranges[static_cast<unsigned>(read.index)];
    if (ShapedType::isDynamic(size) || ShapedType::isDynamic(range) || size >= range)
      continue;
    std::string typeText;
    llvm::raw_string_ostream(typeText) << "('" << type << "')";  // (as a diagnostic prints a type)
    return read.read->emitOpError() << flashc::describeShortTableRead(read, what, typeText, size, range);
  }
  return success();
}

/// The (b, h, q, k) ranges of a graph mask or score over `scores` ([B, H, Sq, Sk], or fewer leading dims).
std::array<int64_t, 4> scoreRanges(RankedTensorType scores) {
  ArrayRef<int64_t> s = scores.getShape();
  int64_t rank = s.size();
  return {rank == 4 ? s[0] : ShapedType::kDynamic, rank >= 3 ? s[rank - 3] : ShapedType::kDynamic,
          rank >= 2 ? s[rank - 2] : ShapedType::kDynamic, s[rank - 1]};
}

LogicalResult checkRank(Operation *op, StringRef name, ShapedType type,
                        int64_t minRank, int64_t maxRank, StringRef symbolic) {
  if (type.getRank() < minRank || type.getRank() > maxRank) {
    InFlightDiagnostic diag = op->emitOpError() << name << " must have rank ";
    if (minRank == maxRank)
      diag << minRank;
    else if (maxRank == INT64_MAX)
      diag << ">= " << minRank;
    else
      diag << minRank << " to " << maxRank;
    return diag << " " << symbolic << ", got " << type;
  }
  return success();
}

/// The KV-cache operands of flash.decode_attention and flash.kv_append: key
/// [B, Hkv, S, D] and value [B, Hkv, S, Dv] contiguous, or with `pageSize`
/// key [pages, P, Hkv, D] and value [pages, P, Hkv, Dv] through `blockTable`
/// [B, W]; cache_seqlens [B].
LogicalResult checkCacheLayout(Operation *op, RankedTensorType keyType, RankedTensorType valueType,
                               std::optional<uint64_t> pageSize, TypedValue<RankedTensorType> blockTable,
                               TypedValue<RankedTensorType> cacheSeqlens, int64_t batch, int64_t kvHeads,
                               int64_t headDim, int64_t valueHeadDim) {
  if (pageSize) {
    int64_t page = static_cast<int64_t>(*pageSize);
    if (page < 16 || page > 256 || (page & (page - 1)) != 0)
      return op->emitOpError() << "page_size = " << page << " must be a power of two from 16 to 256";
    if (failed(checkShape(op, "key cache", keyType, {kAnySize, page, kvHeads, headDim}, "[pages, P, Hkv, D]")) ||
        failed(checkShape(op, "value cache", valueType, {keyType.getDimSize(0), page, kvHeads, valueHeadDim},
                          "[pages, P, Hkv, Dv]")))
      return failure();
    if (!blockTable)
      return op->emitOpError() << "a paged cache (page_size = " << page
                               << ") needs a block_table [B, pages a sequence]";
    if (failed(checkRank(op, "block_table", blockTable.getType(), 2, 2, "[B, W]")) ||
        failed(checkShape(op, "block_table", blockTable.getType(), {batch, kAnySize}, "[B, W]")))
      return failure();
  } else {
    if (blockTable)
      return op->emitOpError() << "block_table is for a paged cache: set page_size, or drop the table";
    if (failed(checkShape(op, "key cache", keyType, {batch, kvHeads, kAnySize, headDim}, "[B, Hkv, S, D]")) ||
        failed(checkShape(op, "value cache", valueType, {batch, kvHeads, keyType.getDimSize(2), valueHeadDim},
                          "[B, Hkv, S, Dv]")))
      return failure();
  }
  if (failed(checkRank(op, "cache_seqlens", cacheSeqlens.getType(), 1, 1, "[B]")) ||
      failed(checkShape(op, "cache_seqlens", cacheSeqlens.getType(), {batch}, "[B]")))
    return failure();
  return success();
}


LogicalResult checkSameElementType(Operation *op, StringRef name,
                                   ShapedType type, StringRef referenceName,
                                   ShapedType reference) {
  if (type.getElementType() != reference.getElementType())
    return op->emitOpError()
           << name << " has element type " << type.getElementType()
           << ", expected " << reference.getElementType() << " (that of "
           << referenceName << ")";
  return success();
}

/// Rejects a static size of 0 in `type`, naming the dimension by its symbol
/// in `symbolic` ("[B, Hq, Sq, D]").
LogicalResult checkNoZeroSize(Operation *op, StringRef name, ShapedType type,
                              StringRef symbolic) {
  SmallVector<StringRef> symbols;
  symbolic.trim("[]").split(symbols, ", ");
  for (auto [dim, size] : llvm::enumerate(type.getShape())) {
    if (size != 0)
      continue;
    InFlightDiagnostic diag = op->emitOpError()
                              << name << " " << symbolic << " has a static size of 0";
    // "[..., M, d]" names the trailing dimensions only.
    int64_t symbol = symbols.front() == "..."
                         ? static_cast<int64_t>(dim) - type.getRank() +
                               static_cast<int64_t>(symbols.size())
                         : static_cast<int64_t>(dim);
    if (symbol >= 0 && symbol < static_cast<int64_t>(symbols.size()) &&
        symbols[symbol] != "...")
      diag << " (" << symbols[symbol] << ")";
    else
      diag << " (dimension " << dim << ")";
    return diag << " in " << type
                << ": static sizes must be positive (use ? for a size that may "
                   "be 0 at run time)";
  }
  return success();
}

} // namespace

//===----------------------------------------------------------------------===//
// MatmulOp
//===----------------------------------------------------------------------===//

LogicalResult MatmulOp::verify() {
  Operation *op = getOperation();
  RankedTensorType lhsType = getLhs().getType();
  RankedTensorType rhsType = getRhs().getType();
  RankedTensorType resultType = getResult().getType();
  StringRef lhsSpelling = getTransposeA() ? "[..., K, M]" : "[..., M, K]";
  StringRef rhsSpelling = getTransposeB() ? "[..., N, K]" : "[..., K, N]";
  if (failed(checkRank(op, "lhs", lhsType, 2, 4, lhsSpelling)) ||
      failed(checkRank(op, "rhs", rhsType, 2, 4, rhsSpelling)))
    return failure();
  int64_t lhsRank = lhsType.getRank(), rhsRank = rhsType.getRank();
  if (rhsRank != 2 && rhsRank != lhsRank)
    return emitOpError() << "rhs must have rank 2 (shared by every lhs batch "
                            "slice) or the rank of lhs ("
                         << lhsRank << "), got " << rhsType;
  if (failed(checkSameElementType(op, "rhs", rhsType, "lhs", lhsType)) ||
      failed(checkSameElementType(op, "result", resultType, "lhs", lhsType)))
    return failure();

  ArrayRef<int64_t> lhs = lhsType.getShape(), rhs = rhsType.getShape();
  int64_t m = getTransposeA() ? lhs[lhsRank - 1] : lhs[lhsRank - 2];
  int64_t lhsK = getTransposeA() ? lhs[lhsRank - 2] : lhs[lhsRank - 1];
  int64_t rhsK = getTransposeB() ? rhs[rhsRank - 1] : rhs[rhsRank - 2];
  int64_t n = getTransposeB() ? rhs[rhsRank - 2] : rhs[rhsRank - 1];
  if (!sizesCompatible(lhsK, rhsK))
    return emitOpError() << "contraction sizes differ: lhs "
                         << formatShape(lhs) << " read as " << lhsSpelling
                         << " has K = " << lhsK << ", rhs " << formatShape(rhs)
                         << " read as " << rhsSpelling << " has K = " << rhsK;

  SmallVector<int64_t> expected(lhs.begin(), lhs.end() - 2);
  if (rhsRank == lhsRank) {
    for (int64_t dim = 0; dim < lhsRank - 2; ++dim) {
      int64_t lhsSize = lhs[dim], rhsSize = rhs[dim];
      if (ShapedType::isDynamic(lhsSize) || ShapedType::isDynamic(rhsSize))
        continue;
      bool grouped = rhsSize > 0 && lhsSize % rhsSize == 0;
      if (!grouped && lhsSize != rhsSize)
        return emitOpError()
               << "batch dimension " << dim << ": lhs size " << lhsSize
               << " must equal rhs size " << rhsSize
               << " or be a multiple of it (grouped broadcast)";
    }
  }
  expected.push_back(m);
  expected.push_back(n);
  return checkGraphShape(op, "result", resultType, expected, "[..., M, N]");
}

//===----------------------------------------------------------------------===//
// Elementwise and normalization ops
//===----------------------------------------------------------------------===//

LogicalResult ScaleOp::verify() {
  double factor = getFactor().convertToDouble();
  if (!std::isfinite(factor))
    return emitOpError() << "factor must be finite, got " << factor;
  return success();
}

LogicalResult MaskOp::verify() {
  if (failed(checkRank(getOperation(), "input", getInput().getType(), 2, INT64_MAX, "[..., Sq, Sk]")))
    return failure();
  if (!hasMaskMod())
    return getMaskOperands().empty() ? success()
                                     : emitOpError() << "has operands for a mask modifier but no `mod` region";
  return success();
}

// The region's function is checked once its ops have been verified (an op in generic form may lack the operands or
// properties the checks read).
LogicalResult MaskOp::verifyRegions() {
  if (!hasMaskMod())
    return success();
  if (failed(flashc::verifyIndexFunction(getOperation(), getMaskMod(), getMaskOperands().getTypes(), "mod")))
    return failure();
  if (flashc::indexFunctionLayout(getMaskMod()).hasBatchAndHead() && getInput().getType().getRank() != 4)
    return emitOpError() << "mod of four indices (batch, head, query, key) needs a [B, H, Sq, Sk] input, got "
                         << getInput().getType();
  return checkTableReads(getMaskMod(), 0, scoreRanges(getInput().getType()), "mod");
}

LogicalResult ScoreOp::verify() {
  if (failed(checkRank(getOperation(), "input", getInput().getType(), 2, INT64_MAX, "[..., Sq, Sk]")))
    return failure();
  if (getScoreOperands().size() > 4)
    return emitOpError() << "reads " << getScoreOperands().size() << " tensors: at most 4";
  return success();
}

LogicalResult ScoreOp::verifyRegions() {  // (after the region's ops: MaskOp::verifyRegions)
  if (failed(flashc::verifyScoreFunction(getOperation(), getScoreMod(), getScoreOperands().getTypes(), "mod")))
    return failure();
  if (flashc::scoreFunctionLayout(getScoreMod()).hasBatchAndHead() && getInput().getType().getRank() != 4)
    return emitOpError() << "mod of four indices (batch, head, query, key) needs a [B, H, Sq, Sk] input, got "
                         << getInput().getType();
  return checkTableReads(getScoreMod(), 1, scoreRanges(getInput().getType()), "mod");
}

LogicalResult SoftmaxOp::verify() {
  return checkRank(getOperation(), "input", getInput().getType(), 1, INT64_MAX,
                   "[..., N]");
}

LogicalResult AddOp::verify() {
  RankedTensorType lhsType = getLhs().getType();
  RankedTensorType rhsType = getRhs().getType();
  if (failed(checkSameElementType(getOperation(), "rhs", rhsType, "lhs",
                                  lhsType)))
    return failure();
  ArrayRef<int64_t> lhs = lhsType.getShape(), rhs = rhsType.getShape();
  bool trailingMatch = rhs.size() <= lhs.size();
  for (size_t i = 0; trailingMatch && i < rhs.size(); ++i)
    trailingMatch =
        sizesCompatible(rhs[i], lhs[lhs.size() - rhs.size() + i]);
  if (!trailingMatch)
    return emitOpError() << "rhs has shape " << formatShape(rhs)
                         << ", expected the shape of lhs "
                         << formatShape(lhs)
                         << " or of its trailing dimensions (a bias)";
  return success();
}

//===----------------------------------------------------------------------===//
// AttentionOp
//===----------------------------------------------------------------------===//

LogicalResult DecodeAttentionOp::verify() {
  Operation *op = getOperation();
  RankedTensorType queryType = getQuery().getType(), keyType = getKeyCache().getType(),
                   valueType = getValueCache().getType();
  if (failed(checkRank(op, "query", queryType, 4, 4, "[B, Hq, T, D]")) ||
      failed(checkRank(op, "key cache", keyType, 4, 4, isPaged() ? "[pages, P, Hkv, D]" : "[B, Hkv, S, D]")) ||
      failed(checkRank(op, "value cache", valueType, 4, 4, isPaged() ? "[pages, P, Hkv, Dv]" : "[B, Hkv, S, Dv]")))
    return failure();
  Type element = queryType.getElementType();
  if (!element.isBF16() && !element.isF16())
    return emitOpError() << "query must be bf16 or f16, got " << queryType;
  if (failed(checkSameElementType(op, "key cache", keyType, "query", queryType)) ||
      failed(checkSameElementType(op, "value cache", valueType, "query", queryType)) ||
      failed(checkSameElementType(op, "output", getOutput().getType(), "query", queryType)))
    return failure();
  ArrayRef<int64_t> query = queryType.getShape();
  int64_t batch = query[0], queryHeads = query[1], tokens = query[2], headDim = query[3];
  if (ShapedType::isDynamic(queryHeads) || ShapedType::isDynamic(tokens) || ShapedType::isDynamic(headDim))
    return emitOpError() << "query must have static heads Hq, tokens T and head dim D in [B, Hq, T, D], got "
                         << queryType;
  if (tokens < 1 || tokens > 16)
    return emitOpError() << "decodes 1 to 16 new tokens a sequence, got T = " << tokens << " (dimension 2 of query)";
  int64_t kvHeads = static_cast<int64_t>(getNumKvHeads());
  int64_t valueHeadDim = valueType.getDimSize(3);
  if (ShapedType::isDynamic(valueHeadDim))
    return emitOpError() << "value cache must have a static head dim Dv, got " << valueType;
  for (auto [what, size] : {std::pair<const char *, int64_t>{"D", headDim}, {"Dv", valueHeadDim}})
    if (size <= 0 || size % 64 != 0 || size > 256)
      return emitOpError() << "head dim " << what << " = " << size
                           << " is not supported by the decode kernels (multiples of 64 up to 256)";
  if (kvHeads <= 0 || queryHeads % kvHeads != 0)
    return emitOpError() << "query heads Hq = " << queryHeads << " must be a positive multiple of num_kv_heads = "
                         << kvHeads;
  if (failed(checkCacheLayout(op, keyType, valueType, getPageSize(), getBlockTable(), getCacheSeqlens(), batch,
                              kvHeads, headDim, valueHeadDim)))
    return failure();
  if (failed(checkShape(op, "output", getOutput().getType(), {batch, queryHeads, tokens, valueHeadDim},
                        "[B, Hq, T, Dv]")) ||
      failed(checkShape(op, "lse", getLse().getType(), {batch, queryHeads, tokens}, "[B, Hq, T]")))
    return failure();
  double scale = getScale().convertToDouble();
  if (!std::isfinite(scale) || scale <= 0.0 || scale > kMaxAttentionScale)
    return emitOpError() << "scale must be positive and finite (at most " << kMaxAttentionScale << "), got " << scale;
  return success();
}

LogicalResult KvAppendOp::verify() {
  Operation *op = getOperation();
  RankedTensorType keyType = getKey().getType(), valueType = getValue().getType(),
                   keyCacheType = getKeyCache().getType(), valueCacheType = getValueCache().getType();
  const bool paged = isPaged();
  if (failed(checkRank(op, "key", keyType, 4, 4, "[B, Hkv, T, D]")) ||
      failed(checkRank(op, "value", valueType, 4, 4, "[B, Hkv, T, Dv]")) ||
      failed(checkRank(op, "key cache", keyCacheType, 4, 4, paged ? "[pages, P, Hkv, D]" : "[B, Hkv, S, D]")) ||
      failed(checkRank(op, "value cache", valueCacheType, 4, 4, paged ? "[pages, P, Hkv, Dv]" : "[B, Hkv, S, Dv]")))
    return failure();
  Type element = keyType.getElementType();
  if (!element.isBF16() && !element.isF16())
    return emitOpError() << "key must be bf16 or f16, got " << keyType;
  if (failed(checkSameElementType(op, "value", valueType, "key", keyType)) ||
      failed(checkSameElementType(op, "key cache", keyCacheType, "key", keyType)) ||
      failed(checkSameElementType(op, "value cache", valueCacheType, "key", keyType)))
    return failure();
  ArrayRef<int64_t> key = keyType.getShape();
  int64_t batch = key[0], kvHeads = key[1], tokens = key[2], headDim = key[3], valueHeadDim = valueType.getDimSize(3);
  if (ShapedType::isDynamic(kvHeads) || ShapedType::isDynamic(headDim) || ShapedType::isDynamic(valueHeadDim))
    return emitOpError() << "key and value must have static heads Hkv and head dims D, Dv in [B, Hkv, T, D], got "
                         << keyType << " and " << valueType;
  for (auto [what, size] : {std::pair<const char *, int64_t>{"D", headDim}, {"Dv", valueHeadDim}})
    if (size <= 0 || size % 8 != 0)
      return emitOpError() << "head dim " << what << " = " << size
                           << " must be a positive multiple of 8 (the append copies 16-byte pieces of rows)";
  if (!ShapedType::isDynamic(tokens) && tokens < 1)
    return emitOpError() << "appends at least one new token a sequence, got T = " << tokens
                         << " (dimension 2 of key)";
  if (failed(checkShape(op, "value", valueType, {batch, kvHeads, tokens, valueHeadDim}, "[B, Hkv, T, Dv]")) ||
      failed(checkCacheLayout(op, keyCacheType, valueCacheType, getPageSize(), getBlockTable(), getCacheSeqlens(),
                              batch, kvHeads, headDim, valueHeadDim)))
    return failure();
  if (getNewKeyCache().getType() != keyCacheType || getNewValueCache().getType() != valueCacheType)
    return emitOpError() << "results must have the caches' types " << keyCacheType << " and " << valueCacheType
                         << ", got " << getNewKeyCache().getType() << " and " << getNewValueCache().getType();
  return success();
}

LogicalResult VarlenAttentionOp::verify() {
  Operation *op = getOperation();
  RankedTensorType queryType = getQuery().getType(), keyType = getKey().getType(), valueType = getValue().getType();
  if (failed(checkRank(op, "query", queryType, 3, 3, "[Tq, Hq, D]")) ||
      failed(checkRank(op, "key", keyType, 3, 3, "[Tk, Hkv, D]")) ||
      failed(checkRank(op, "value", valueType, 3, 3, "[Tk, Hkv, Dv]")))
    return failure();
  Type element = queryType.getElementType();
  if (!element.isBF16() && !element.isF16())
    return emitOpError() << "query must be bf16 or f16 (the packed kernels are Hopper's 16-bit forward), got "
                         << queryType;
  if (failed(checkSameElementType(op, "key", keyType, "query", queryType)) ||
      failed(checkSameElementType(op, "value", valueType, "query", queryType)) ||
      failed(checkSameElementType(op, "output", getOutput().getType(), "query", queryType)))
    return failure();
  int64_t rowsQ = queryType.getDimSize(0), queryHeads = queryType.getDimSize(1), headDim = queryType.getDimSize(2);
  int64_t kvHeads = static_cast<int64_t>(getNumKvHeads()), valueHeadDim = valueType.getDimSize(2);
  if (ShapedType::isDynamic(queryHeads) || ShapedType::isDynamic(headDim))
    return emitOpError() << "query must have static heads Hq and head dim D in [Tq, Hq, D], got " << queryType;
  if (ShapedType::isDynamic(valueHeadDim))
    return emitOpError() << "value must have a static head dim Dv in [Tk, Hkv, Dv], got " << valueType;
  // The warp-specialised forward's widths (wsForwardTakes): multiples of 8 up to 256, the head dim above 32.
  for (auto [what, size] : {std::pair<const char *, int64_t>{"D", headDim}, {"Dv", valueHeadDim}})
    if (size <= 0 || size % 8 != 0 || size > 256)
      return emitOpError() << "head dim " << what << " = " << size
                           << " is not supported by the packed kernels (multiples of 8 up to 256)";
  if (headDim <= 32)
    return emitOpError() << "head dim D = " << headDim << " is not supported by the packed kernels (above 32)";
  if (kvHeads <= 0 || queryHeads % kvHeads != 0)
    return emitOpError() << "query heads Hq = " << queryHeads << " must be a positive multiple of num_kv_heads = "
                         << kvHeads;
  if (failed(checkShape(op, "key", keyType, {kAnySize, kvHeads, headDim}, "[Tk, Hkv, D]")) ||
      failed(checkShape(op, "value", valueType, {keyType.getDimSize(0), kvHeads, valueHeadDim}, "[Tk, Hkv, Dv]")))
    return failure();
  if (failed(checkRank(op, "cu_seqlens_q", getCuSeqlensQ().getType(), 1, 1, "[B + 1]")) ||
      failed(checkRank(op, "cu_seqlens_k", getCuSeqlensK().getType(), 1, 1, "[B + 1]")) ||
      failed(checkShape(op, "cu_seqlens_k", getCuSeqlensK().getType(), {getCuSeqlensQ().getType().getDimSize(0)},
                        "[B + 1], the length of cu_seqlens_q")))
    return failure();
  if (getCuSeqlensQ().getType().getDimSize(0) == 0)
    return emitOpError() << "cu_seqlens_q must have B + 1 >= 1 entries, got 0";
  if (failed(checkShape(op, "output", getOutput().getType(), {rowsQ, queryHeads, valueHeadDim}, "[Tq, Hq, Dv]")) ||
      failed(checkShape(op, "lse", getLse().getType(), {queryHeads, rowsQ}, "[Hq, Tq]")))
    return failure();
  double scale = getScale().convertToDouble();
  if (!std::isfinite(scale) || scale <= 0.0 || scale > kMaxAttentionScale)
    return emitOpError() << "scale must be positive and finite (at most " << kMaxAttentionScale << "), got " << scale;
  double softcap = getSoftcap().convertToDouble();
  if (!std::isfinite(softcap) || softcap < 0.0 || softcap > kMaxAttentionScale)
    return emitOpError() << "softcap must be 0 (none) or positive and finite (at most " << kMaxAttentionScale
                         << "), got " << softcap;
  return success();
}

LogicalResult AttentionOp::verify() {
  Operation *op = getOperation();
  RankedTensorType queryType = getQuery().getType();
  RankedTensorType keyType = getKey().getType();
  RankedTensorType valueType = getValue().getType();
  if (failed(checkRank(op, "query", queryType, 4, 4, "[B, Hq, Sq, D]")) ||
      failed(checkRank(op, "key", keyType, 4, 4, "[B, Hkv, Sk, D]")) ||
      failed(checkRank(op, "value", valueType, 4, 4, "[B, Hkv, Sk, Dv]")))
    return failure();
  if (failed(checkSameElementType(op, "key", keyType, "query", queryType)) ||
      failed(checkSameElementType(op, "value", valueType, "query", queryType)) ||
      failed(checkSameElementType(op, "output", getOutput().getType(), "query",
                                  queryType)))
    return failure();

  ArrayRef<int64_t> query = queryType.getShape();
  int64_t batch = query[0], queryHeads = query[1], querySeq = query[2],
          headDim = query[3];
  if (ShapedType::isDynamic(queryHeads) || ShapedType::isDynamic(headDim))
    return emitOpError() << "query must have static heads Hq and head dim D "
                            "in [B, Hq, Sq, D], got "
                         << queryType;
  int64_t kvHeads = keyType.getDimSize(1), keySeq = keyType.getDimSize(2);
  if (ShapedType::isDynamic(kvHeads) || ShapedType::isDynamic(keyType.getDimSize(3)))
    return emitOpError() << "key must have static heads Hkv and head dim D in [B, Hkv, Sk, "
                            "D], got "
                         << keyType;
  if (failed(checkShape(op, "key", keyType, {batch, kAnySize, kAnySize, headDim},
                        "[B, Hkv, Sk, D]")))
    return failure();
  if (failed(checkShape(op, "value", valueType,
                        {batch, kvHeads, keySeq, kAnySize},
                        "[B, Hkv, Sk, Dv]")))
    return failure();
  int64_t valueHeadDim = valueType.getDimSize(3);
  if (ShapedType::isDynamic(valueHeadDim))
    return emitOpError() << "value must have a static head dim Dv in [B, Hkv, "
                            "Sk, Dv], got "
                         << valueType;
  if (headDim <= 0 || valueHeadDim <= 0)
    return emitOpError() << "head dims must be positive, got D = " << headDim
                         << " (query, key) and Dv = " << valueHeadDim << " (value)";
  if (queryHeads <= 0 || kvHeads <= 0 || queryHeads % kvHeads != 0)
    return emitOpError() << "query heads Hq = " << queryHeads
                         << " must be a positive multiple of key/value heads "
                            "Hkv = "
                         << kvHeads;
  // A size only known at run time may be 0 (the runtime launches nothing);
  // a static 0 is a spec that computes nothing.
  if (failed(checkNoZeroSize(op, "query", queryType, "[B, Hq, Sq, D]")) ||
      failed(checkNoZeroSize(op, "key", keyType, "[B, Hkv, Sk, D]")))
    return failure();
  if (static_cast<int64_t>(getNumKvHeads()) != kvHeads)
    return emitOpError() << "num_kv_heads = "
                         << static_cast<int64_t>(getNumKvHeads())
                         << " does not match Hkv = " << kvHeads
                         << " (dimension 1 of key)";
  if (failed(checkShape(op, "output", getOutput().getType(),
                        {batch, queryHeads, querySeq, valueHeadDim},
                        "[B, Hq, Sq, Dv]")) ||
      failed(checkShape(op, "lse", getLse().getType(),
                        {batch, queryHeads, querySeq}, "[B, Hq, Sq]")))
    return failure();

  float scale = getScaleValue();
  if (!std::isfinite(scale) || scale <= 0.0f)
    return emitOpError() << "scale must be a finite positive number, got "
                         << scale;
  if (scale > kMaxAttentionScale)
    return emitOpError() << "scale = " << scale << " is too large: at most "
                         << kMaxAttentionScale
                         << " (the kernels fold scale·log2(e) into one f32 "
                            "constant)";
  float softcap = getSoftcapValue();
  if (!std::isfinite(softcap) || softcap < 0.0f)
    return emitOpError() << "softcap must be 0 (none) or a finite positive "
                            "number, got "
                         << softcap;
  if (softcap > kMaxAttentionScale)
    return emitOpError() << "softcap = " << softcap << " is too large: at most "
                         << kMaxAttentionScale;
  if (hasMaskMod()) {
    if (getKeyOffset())
      return emitOpError() << "mask_mod is not combined with key_offset (the modifier sees "
                              "row indices, not key positions)";
  } else if (!getMaskOperands().empty()) {
    return emitOpError() << "has mask_mod operands but no mask_mod region";
  }
  if (hasScoreMod()) {
    if (getKeyOffset())
      return emitOpError() << "score_mod is not combined with key_offset (the modifier sees row indices, not key "
                              "positions)";
    if (hasSoftcap())
      return emitOpError() << "score_mod is not combined with softcap (write the cap in the region: "
                              "cap · tanh(s / cap))";
  } else if (!getScoreOperands().empty()) {
    return emitOpError() << "has score_mod operands but no score_mod region";
  }
  // The kernels hand the modifiers' tensors to the device library in one environment of four.
  if (getMaskOperands().size() > 4 || getScoreOperands().size() > 4)
    return emitOpError() << "reads " << getMaskOperands().size() << " mask_mod and " << getScoreOperands().size()
                         << " score_mod tensors: at most 4 each";
  return success();
}

// The modifiers' functions, once their ops have been verified (MaskOp::verifyRegions says why).
LogicalResult AttentionOp::verifyRegions() {
  Operation *op = getOperation();
  if (hasMaskMod() &&
      failed(flashc::verifyIndexFunction(op, getMaskMod(), getMaskOperands().getTypes(), "mask_mod")))
    return failure();
  if (hasScoreMod() &&
      failed(flashc::verifyScoreFunction(op, getScoreMod(), getScoreOperands().getTypes(), "score_mod")))
    return failure();
  ArrayRef<int64_t> query = getQuery().getType().getShape();
  std::array<int64_t, 4> ranges = {query[0], query[1], query[2], getKey().getType().getDimSize(2)};
  if (hasMaskMod() && failed(checkTableReads(getMaskMod(), 0, ranges, "mask_mod")))
    return failure();
  if (hasScoreMod() && failed(checkTableReads(getScoreMod(), 1, ranges, "score_mod")))
    return failure();
  return success();
}

//===----------------------------------------------------------------------===//
// FfnOp
//===----------------------------------------------------------------------===//

LogicalResult TopKOp::verify() {
  Operation *op = getOperation();
  RankedTensorType scores = getScores().getType();
  if (failed(checkRank(op, "scores", scores, 2, 2, "[T, N]")))
    return failure();
  int64_t k = static_cast<int64_t>(getK()), n = scores.getDimSize(1);
  if (k < 1 || (!ShapedType::isDynamic(n) && k > n))
    return emitOpError() << "k = " << k << " must be in [1, N = " << n << "]";
  for (auto [name, type] : {std::pair<StringRef, RankedTensorType>{"values", getValues().getType()},
                            {"indices", getIndices().getType()}})
    if (failed(checkGraphShape(op, name, type, {scores.getDimSize(0), k}, "[T, k]")))
      return failure();
  return checkSameElementType(op, "values", getValues().getType(), "scores", scores);
}

LogicalResult NormalizeOp::verify() {
  return checkRank(getOperation(), "input", getInput().getType(), 1, INT64_MAX, "[..., N]");
}

LogicalResult ExpertFfnOp::verify() {
  Operation *op = getOperation();
  RankedTensorType inputType = getInput().getType();
  if (failed(checkRank(op, "input", inputType, 2, 2, "[T, d]")) ||
      failed(checkRank(op, "ids", getIds().getType(), 2, 2, "[T, k]")) ||
      failed(checkGraphShape(op, "ids", getIds().getType(), {inputType.getDimSize(0), kAnySize}, "[T, k]")))
    return failure();
  auto checkWeight = [&](StringRef name, RankedTensorType type, ArrayRef<int64_t> shape,
                         StringRef symbolic) -> LogicalResult {
    if (failed(checkRank(op, name, type, 3, 3, symbolic)) ||
        failed(checkSameElementType(op, name, type, "input", inputType)))
      return failure();
    if (!type.hasStaticShape())
      return op->emitOpError() << name << " must have a static shape " << symbolic << ", got " << type;
    return checkGraphShape(op, name, type, shape, symbolic);
  };
  RankedTensorType w1 = getW1().getType();
  if (failed(checkWeight("w1", w1, {kAnySize, inputType.getDimSize(1), kAnySize}, "[E, d, h]")))
    return failure();
  int64_t experts = w1.getDimSize(0), hidden = w1.getDimSize(2);
  if (TypedValue<RankedTensorType> up = getWUp())
    if (failed(checkWeight("w_up", up.getType(), {experts, w1.getDimSize(1), hidden}, "[E, d, h]")))
      return failure();
  if (failed(checkWeight("w2", getW2().getType(), {experts, hidden, kAnySize}, "[E, h, d_out]")))
    return failure();
  return failure(failed(checkGraphShape(op, "result", getResult().getType(),
                                        {inputType.getDimSize(0), getIds().getType().getDimSize(1),
                                         getW2().getType().getDimSize(2)},
                                        "[T, k, d_out]")) ||
                 failed(checkSameElementType(op, "result", getResult().getType(), "input", inputType)));
}

LogicalResult CombineOp::verify() {
  Operation *op = getOperation();
  RankedTensorType rows = getRows().getType();
  if (failed(checkRank(op, "rows", rows, 3, 3, "[T, k, N]")) ||
      failed(checkGraphShape(op, "weights", getWeights().getType(), {rows.getDimSize(0), rows.getDimSize(1)},
                             "[T, k]")) ||
      failed(checkSameElementType(op, "weights", getWeights().getType(), "rows", rows)) ||
      failed(checkGraphShape(op, "result", getResult().getType(), {rows.getDimSize(0), rows.getDimSize(2)}, "[T, N]")))
    return failure();
  return checkSameElementType(op, "result", getResult().getType(), "rows", rows);
}

LogicalResult MoeOp::verify() {
  Operation *op = getOperation();
  RankedTensorType inputType = getInput().getType();
  if (failed(checkRank(op, "input", inputType, 2, 2, "[T, d]")))
    return failure();
  auto checkWeight = [&](StringRef name, RankedTensorType type, int64_t rank, StringRef symbolic) -> LogicalResult {
    if (failed(checkRank(op, name, type, rank, rank, symbolic)) ||
        failed(checkSameElementType(op, name, type, "input", inputType)))
      return failure();
    if (!type.hasStaticShape())
      return op->emitOpError() << name << " must have a static shape " << symbolic << ", got " << type;
    return success();
  };
  int64_t modelDim = inputType.getDimSize(1);
  if (ShapedType::isDynamic(modelDim))  // (the weights' d is static)
    return emitOpError() << "input must have a static width d in [T, d], got " << inputType;
  if (failed(checkWeight("router", getRouter().getType(), 2, "[d, E]")) ||
      failed(checkShape(op, "router", getRouter().getType(), {modelDim, kAnySize}, "[d, E]")))
    return failure();
  modelDim = getRouter().getType().getDimSize(0);
  int64_t experts = getExperts();
  if (failed(checkWeight("w1", getW1().getType(), 3, "[E, d, h]")) ||
      failed(checkShape(op, "w1", getW1().getType(), {experts, modelDim, kAnySize}, "[E, d, h]")))
    return failure();
  int64_t hiddenDim = getHiddenDim();
  if (TypedValue<RankedTensorType> up = getWUp())
    if (failed(checkWeight("w_up", up.getType(), 3, "[E, d, h]")) ||
        failed(checkShape(op, "w_up", up.getType(), {experts, modelDim, hiddenDim}, "[E, d, h]")))
      return failure();
  if (failed(checkWeight("w2", getW2().getType(), 3, "[E, h, d_out]")) ||
      failed(checkShape(op, "w2", getW2().getType(), {experts, hiddenDim, kAnySize}, "[E, h, d_out]")))
    return failure();
  if (failed(checkShape(op, "result", getResult().getType(), {inputType.getDimSize(0), getOutputDim()},
                        "[T, d_out]")) ||
      failed(checkSameElementType(op, "result", getResult().getType(), "input", inputType)))
    return failure();
  if (experts <= 0 || modelDim <= 0 || hiddenDim <= 0 || getOutputDim() <= 0)
    return emitOpError() << "sizes must be positive, got E = " << experts << ", d = " << modelDim << ", h = "
                         << hiddenDim << ", d_out = " << getOutputDim();
  int64_t topK = static_cast<int64_t>(getTopK());
  if (topK < 1 || topK > experts)
    return emitOpError() << "top_k = " << topK << " must be in [1, E = " << experts << "]";
  return success();
}

LogicalResult FfnOp::verify() {
  Operation *op = getOperation();
  RankedTensorType inputType = getInput().getType();
  if (failed(checkRank(op, "input", inputType, 2, INT64_MAX, "[..., M, d]")))
    return failure();
  auto checkWeight = [&](StringRef name, RankedTensorType type,
                         StringRef symbolic) -> LogicalResult {
    if (failed(checkRank(op, name, type, 2, 2, symbolic)) ||
        failed(checkSameElementType(op, name, type, "input", inputType)))
      return failure();
    if (!type.hasStaticShape())
      return op->emitOpError() << name << " must have a static shape "
                               << symbolic << ", got " << type;
    return success();
  };
  int64_t modelDim = inputType.getShape().back();
  if (ShapedType::isDynamic(modelDim))  // (the weights' d is static)
    return emitOpError() << "input must have a static width d in [..., M, d], got " << inputType;
  if (failed(checkWeight("w1", getW1().getType(), "[d, h]")) ||
      failed(checkShape(op, "w1", getW1().getType(), {modelDim, kAnySize},
                        "[d, h]")))
    return failure();
  int64_t hiddenDim = getW1().getType().getDimSize(1);
  modelDim = getW1().getType().getDimSize(0);

  if (TypedValue<RankedTensorType> up = getWUp()) {
    if (getB1())
      return emitOpError() << "the gated form (with an up projection) takes "
                              "no b1";
    if (failed(checkWeight("w_up", up.getType(), "[d, h]")) ||
        failed(checkShape(op, "w_up", up.getType(), {modelDim, hiddenDim},
                          "[d, h]")))
      return failure();
  }
  if (TypedValue<RankedTensorType> b1 = getB1())
    if (failed(checkSameElementType(op, "b1", b1.getType(), "input",
                                    inputType)) ||
        failed(checkShape(op, "b1", b1.getType(), {hiddenDim}, "[h]")))
      return failure();

  if (failed(checkWeight("w2", getW2().getType(), "[h, d_out]")) ||
      failed(checkShape(op, "w2", getW2().getType(), {hiddenDim, kAnySize},
                        "[h, d_out]")))
    return failure();
  int64_t outputDim = getW2().getType().getDimSize(1);
  if (TypedValue<RankedTensorType> b2 = getB2())
    if (failed(checkSameElementType(op, "b2", b2.getType(), "input",
                                    inputType)) ||
        failed(checkShape(op, "b2", b2.getType(), {outputDim}, "[d_out]")))
      return failure();

  if (modelDim <= 0 || hiddenDim <= 0 || outputDim <= 0)
    return emitOpError() << "FFN sizes must be positive, got d = " << modelDim
                         << ", h = " << hiddenDim << ", d_out = " << outputDim;
  if (failed(checkNoZeroSize(op, "input", inputType, "[..., M, d]")))
    return failure();

  RankedTensorType resultType = getResult().getType();
  if (failed(checkSameElementType(op, "result", resultType, "input",
                                  inputType)))
    return failure();
  SmallVector<int64_t> expected(inputType.getShape().drop_back());
  expected.push_back(outputDim);
  return checkShape(op, "result", resultType, expected, "[..., M, d_out]");
}

#define GET_OP_CLASSES
#include "flashc/Dialect/Flash/IR/FlashOps.cpp.inc"
