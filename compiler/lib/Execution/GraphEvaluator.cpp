//===- GraphEvaluator.cpp - float64 reference semantics of flash ops ------===//
//
// Straightforward loops, no blocking: this is the definition the fast paths
// are checked against, so it follows the op descriptions in FlashOps.td line
// by line. Every size relation is re-checked at run time because dynamic
// dimensions are only known here.
//
//===----------------------------------------------------------------------===//
#include "ScalarOps.h"
#include "flashc/Compiler/GraphEvaluator.h"
#include "flashc/Dialect/Common/IndexFunction.h"
#include "flashc/Dialect/Common/ScoreFunction.h"
#include "flashc/Dialect/Flash/IR/FlashOps.h"
#include "flashc/reference/activations.h"
#include "flashc/reference/attention.h"
#include "flashc/reference/decode.h"
#include "flashc/reference/varlen.h"
#include "flashc/reference/ffn.h"
#include "flashc/reference/moe.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/TypeSwitch.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <functional>
#include <limits>
#include <numeric>

using namespace mlir;
using namespace mlir::flash;
namespace ref = flashc::reference;

namespace {

constexpr double kNegInf = -std::numeric_limits<double>::infinity();

int64_t product(ArrayRef<int64_t> sizes) {
  return std::accumulate(sizes.begin(), sizes.end(), int64_t{1},
                         std::multiplies<int64_t>());
}

std::string formatShape(ArrayRef<int64_t> shape) {
  std::string text = "[";
  for (auto [index, size] : llvm::enumerate(shape))
    text += (index ? ", " : "") + std::to_string(size);
  return text + "]";
}

/// A modifier's table read at an index argument itself (ids[q], slopes[h]) holds that index's range (`ranges`: of b,
/// h, q, k) at run time: the rule flash.attention's verifier checks for static sizes and the compiled programs at
/// launch (tile.require_extent). A definition that read the missing entries as 0 would agree with no run of them.
LogicalResult checkTableReads(Operation *op, Region &body, unsigned firstIndex,
                              ArrayRef<const ReferenceTensor *> tensors, ArrayRef<int64_t> ranges, StringRef what) {
  for (const flashc::IndexArgumentRead &read : flashc::indexArgumentReads(body, firstIndex)) {
    const ReferenceTensor &table = *tensors[read.operand];
    int64_t size = table.shape[read.dim], range = ranges[static_cast<unsigned>(read.index)];
    if (size < range)
      return op->emitError() << "at run time: "
                             << flashc::describeShortTableRead(read, what, formatShape(table.shape), size, range);
  }
  return success();
}

/// The (b, h, q, k) ranges the evaluator walks over a graph mask's or score's input [..., Sq, Sk] (b and h stay 0
/// below rank 4).
std::array<int64_t, 4> scoreRanges(ArrayRef<int64_t> shape) {
  int64_t rank = shape.size();
  return {rank == 4 ? shape[0] : 1, rank == 4 ? shape[1] : 1, shape[rank - 2], shape[rank - 1]};
}

class Evaluator {
public:
  LogicalResult run(Operation *op);
  llvm::DenseMap<Value, ReferenceTensor> values;
  SmallVector<ReferenceTensor> results;

private:
  const ReferenceTensor &get(Value value) { return values.find(value)->second; }
  LogicalResult matmul(MatmulOp op);
  LogicalResult mask(MaskOp op);
  LogicalResult score(ScoreOp op);
  LogicalResult softmax(SoftmaxOp op);
  LogicalResult add(AddOp op);
  LogicalResult attention(AttentionOp op);
  LogicalResult decode(DecodeAttentionOp op);
  /// A cache op's (decode, append) layout into `shape` (page size, pages, table width, capacity) and its block
  /// table's entries into `table` (none for a contiguous cache `k`).
  template <class CacheOp>
  void cacheLayout(CacheOp op, const ReferenceTensor &k, ref::DecodeShape &shape, std::vector<int32_t> &table) {
    if (!op.isPaged()) {
      shape.capacity = k.shape[2];
      return;
    }
    const ReferenceTensor &t = get(op.getBlockTable());
    table.assign(t.data.begin(), t.data.end());
    shape.pageSize = static_cast<int64_t>(*op.getPageSize());
    shape.pages = k.shape[0];
    shape.tableWidth = t.shape[1];
    shape.capacity = shape.tableWidth * shape.pageSize;
  }
  LogicalResult kvAppend(KvAppendOp op);
  LogicalResult moe(MoeOp op);
  LogicalResult topK(TopKOp op);
  LogicalResult expertFfn(ExpertFfnOp op);
  LogicalResult combine(CombineOp op);
  LogicalResult varlen(VarlenAttentionOp op);
  LogicalResult ffn(FfnOp op);
  LogicalResult elementwise(Operation *op, const std::function<double(double)> &fn);
  // The elementwise graph spelling of modifiers (arith / math on tensors, tensor.generate, splats, dims).
  FailureOr<std::vector<int64_t>> shapeOf(Operation *op, RankedTensorType type, ValueRange dynamicSizes);
  // Whether a result of `shape` can be allocated: no negative size, at most kMaxEvaluatedElements values (a size
  // computed at run time, a static constant's or a matmul's outer product could exhaust the host's memory).
  static LogicalResult checkAllocatable(Operation *op, ArrayRef<int64_t> shape);
  LogicalResult scalarOps(Operation *op);
  LogicalResult generate(tensor::GenerateOp op);
};

LogicalResult Evaluator::checkAllocatable(Operation *op, ArrayRef<int64_t> shape) {
  int64_t elements = 1;
  for (int64_t size : shape) {
    if (size < 0)
      return op->emitError() << "the graph evaluator cannot make a tensor of shape " << formatShape(shape)
                             << ": a negative size";
    if (size > 0 && elements > kMaxEvaluatedElements / size)
      return op->emitError() << "the graph evaluator cannot make a tensor of shape " << formatShape(shape)
                             << ": more than 2^28 values, past what the float64 reference evaluates";
    elements *= size;
  }
  return success();
}

FailureOr<std::vector<int64_t>> Evaluator::shapeOf(Operation *op, RankedTensorType type, ValueRange dynamicSizes) {
  std::vector<int64_t> shape;
  unsigned next = 0;
  for (int64_t size : type.getShape()) {
    if (!ShapedType::isDynamic(size)) {
      shape.push_back(size);
      continue;
    }
    if (next >= dynamicSizes.size())
      return op->emitError() << "a dynamic size the graph evaluator cannot bind";
    shape.push_back(static_cast<int64_t>(get(dynamicSizes[next++]).data[0]));
  }
  if (failed(checkAllocatable(op, shape)))
    return failure();
  return shape;
}

LogicalResult Evaluator::scalarOps(Operation *op) {
  // Elementwise over tensors of one shape (a splat constant fills its static shape); scalars as rank-0 tensors.
  auto resultType = dyn_cast<RankedTensorType>(op->getResult(0).getType());
  std::vector<int64_t> shape;
  if (auto constant = dyn_cast<arith::ConstantOp>(op); constant && resultType) {
    if (!resultType.hasStaticShape() || !isa<SplatElementsAttr>(constant.getValue()))
      return op->emitError() << "the graph evaluator takes splat tensor constants of a static shape";
    shape.assign(resultType.getShape().begin(), resultType.getShape().end());
    if (failed(checkAllocatable(op, shape)))
      return failure();
  } else if (resultType) {
    shape = get(op->getOperand(0)).shape;
    for (Value operand : op->getOperands())
      if (get(operand).shape != shape)
        return op->emitError() << "at run time operands " << formatShape(shape) << " and "
                               << formatShape(get(operand).shape) << " differ";
  }
  ReferenceTensor result(shape);
  SmallVector<double> x(op->getNumOperands());
  for (int64_t n = 0; n < result.numElements(); ++n) {
    for (auto [k, operand] : llvm::enumerate(op->getOperands()))
      x[k] = get(operand).data[n];
    std::string why;
    FailureOr<double> value = flashc::evaluateScalarOp(op, x, &why);
    if (failed(value))
      return op->emitError() << (why.empty() ? std::string("the flash graph evaluator does not support this op")
                                             : "the flash graph evaluator cannot evaluate this op: " + why);
    result.data[n] = *value;
  }
  values[op->getResult(0)] = std::move(result);
  return success();
}

LogicalResult Evaluator::generate(tensor::GenerateOp op) {
  FailureOr<std::vector<int64_t>> shape = shapeOf(op, op.getType(), op.getDynamicExtents());
  if (failed(shape))
    return failure();
  ReferenceTensor result(*shape);
  Block &body = op.getBody().front();
  int64_t rank = shape->size();
  SmallVector<int64_t> index(rank, 0);
  llvm::DenseMap<Value, double> local;
  auto valueOf = [&](Value v) {
    auto it = local.find(v);
    return it != local.end() ? it->second : get(v).data[0];  // an outer scalar: a rank-0 tensor
  };
  for (int64_t n = 0; n < result.numElements(); ++n) {
    for (int64_t d = rank - 1, rest = n; d >= 0; --d) {
      index[d] = rest % (*shape)[d];
      rest /= (*shape)[d];
    }
    local.clear();
    for (int64_t d = 0; d < rank; ++d)
      local[body.getArgument(d)] = static_cast<double>(index[d]);
    for (Operation &inner : body) {
      if (auto yield = dyn_cast<tensor::YieldOp>(inner)) {
        result.data[n] = valueOf(yield.getValue());
        break;
      }
      if (auto extract = dyn_cast<tensor::ExtractOp>(inner)) {
        // A read outside the tensor gives 0 (the modifier regions' rule).
        const ReferenceTensor &t = get(extract.getTensor());
        int64_t linear = 0;
        bool inside = true;
        for (auto [d, i] : llvm::enumerate(extract.getIndices())) {
          int64_t at = static_cast<int64_t>(valueOf(i));
          inside = inside && at >= 0 && at < t.shape[d];
          linear = linear * t.shape[d] + at;
        }
        local[extract.getResult()] = inside ? t.data[linear] : 0.0;
        continue;
      }
      SmallVector<double> x;
      for (Value operand : inner.getOperands())
        x.push_back(valueOf(operand));
      std::string why;
      FailureOr<double> value = flashc::evaluateScalarOp(&inner, x, &why);
      if (failed(value) || inner.getNumResults() != 1)
        return inner.emitError() << (why.empty()
                                         ? std::string("the flash graph evaluator does not support this op in a "
                                                       "tensor.generate")
                                         : "the flash graph evaluator cannot evaluate this op: " + why);
      local[inner.getResult(0)] = *value;
    }
  }
  values[op.getResult()] = std::move(result);
  return success();
}

LogicalResult Evaluator::elementwise(Operation *op,
                                     const std::function<double(double)> &fn) {
  ReferenceTensor result = get(op->getOperand(0));
  for (double &x : result.data)
    x = fn(x);
  values[op->getResult(0)] = std::move(result);
  return success();
}

LogicalResult Evaluator::matmul(MatmulOp op) {
  const ReferenceTensor &lhs = get(op.getLhs());
  const ReferenceTensor &rhs = get(op.getRhs());
  int64_t lhsRank = lhs.shape.size(), rhsRank = rhs.shape.size();
  bool ta = op.getTransposeA(), tb = op.getTransposeB();
  int64_t m = lhs.shape[lhsRank - (ta ? 1 : 2)];
  int64_t k = lhs.shape[lhsRank - (ta ? 2 : 1)];
  int64_t rhsK = rhs.shape[rhsRank - (tb ? 1 : 2)];
  int64_t n = rhs.shape[rhsRank - (tb ? 2 : 1)];
  if (k != rhsK)
    return op.emitError() << "at run time lhs " << formatShape(lhs.shape)
                          << " and rhs " << formatShape(rhs.shape)
                          << " have different contraction sizes";
  ArrayRef<int64_t> batch = ArrayRef<int64_t>(lhs.shape).drop_back(2);
  // Group size per batch dimension: lhs slice i reads rhs slice i / group.
  SmallVector<int64_t> groups(batch.size(), 0);
  if (rhsRank == lhsRank) {
    for (size_t d = 0; d < batch.size(); ++d) {
      if (rhs.shape[d] <= 0 || batch[d] % rhs.shape[d] != 0)
        return op.emitError() << "at run time batch dimension " << d
                              << " of lhs " << formatShape(lhs.shape)
                              << " is not a multiple of rhs "
                              << formatShape(rhs.shape);
      groups[d] = batch[d] / rhs.shape[d];
    }
  }
  std::vector<int64_t> shape(batch.begin(), batch.end());
  shape.push_back(m);
  shape.push_back(n);
  if (failed(checkAllocatable(op, shape)))
    return failure();
  ReferenceTensor result(shape);
  int64_t numBatches = product(batch);
  for (int64_t b = 0; b < numBatches; ++b) {
    // Linear rhs slice from the lhs multi-index, dimension by dimension.
    int64_t rhsSlice = 0, remainder = b;
    SmallVector<int64_t> index(batch.size());
    for (int64_t d = batch.size() - 1; d >= 0; --d) {
      index[d] = remainder % batch[d];
      remainder /= batch[d];
    }
    if (rhsRank == lhsRank)
      for (size_t d = 0; d < batch.size(); ++d)
        rhsSlice = rhsSlice * rhs.shape[d] + index[d] / groups[d];
    const double *a = &lhs.data[b * m * k];
    const double *w = &rhs.data[rhsSlice * k * n];
    double *c = &result.data[b * m * n];
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double sum = 0.0;
        for (int64_t p = 0; p < k; ++p)
          sum += (ta ? a[p * m + i] : a[i * k + p]) *
                 (tb ? w[j * k + p] : w[p * n + j]);
        c[i * n + j] = sum;
      }
  }
  // A 16-bit router's logits (scored by a softmax or sigmoid that a flash.top_k selects on) are held as their type:
  // a choice between near-equal scores is the one the 16-bit layer makes (flash.moe's meaning, reference/moe.h).
  Type element = op.getResult().getType().getElementType();
  bool routes = (element.isBF16() || element.isF16()) && llvm::any_of(op->getUsers(), [](Operation *user) {
    return isa<SoftmaxOp, SigmoidOp>(user) &&
           llvm::any_of(user->getUsers(), [](Operation *next) { return isa<TopKOp>(next); });
  });
  if (routes) {
    ref::LogitRounding round = ref::logitRounding16(element.isBF16());
    for (double &v : result.data)
      v = round(v);
  }
  values[op.getResult()] = std::move(result);
  return success();
}

LogicalResult Evaluator::mask(MaskOp op) {
  ReferenceTensor result = get(op.getInput());
  int64_t rank = result.shape.size();
  int64_t sq = result.shape[rank - 2], sk = result.shape[rank - 1];
  MaskAttr mask = op.getMask();
  Region *mod = op.hasMaskMod() ? &op.getMaskMod() : nullptr;
  SmallVector<const ReferenceTensor *> tensors;
  for (Value tensor : op.getMaskOperands())
    tensors.push_back(&get(tensor));
  if (mod && failed(checkTableReads(op, *mod, 0, tensors, scoreRanges(result.shape), "mod")))
    return failure();
  auto visible = maskModPredicate(mod, tensors);
  int64_t heads = rank == 4 ? result.shape[1] : 1;
  for (int64_t flat = 0; flat < result.numElements(); ++flat) {
    int64_t j = flat % sk, i = (flat / sk) % sq;
    int64_t h = rank == 4 ? (flat / (sk * sq)) % heads : 0, b = rank == 4 ? flat / (sk * sq * heads) : 0;
    if (!mask.isKeyVisible(i, j, sq, sk) || (mod && !visible(b, h, i, j)))
      result.data[flat] = kNegInf;
  }
  values[op.getResult()] = std::move(result);
  return success();
}

LogicalResult Evaluator::score(ScoreOp op) {
  ReferenceTensor result = get(op.getInput());
  int64_t rank = result.shape.size();
  int64_t sq = result.shape[rank - 2], sk = result.shape[rank - 1];
  SmallVector<const ReferenceTensor *> tensors;
  for (Value tensor : op.getScoreOperands())
    tensors.push_back(&get(tensor));
  if (failed(checkTableReads(op, op.getScoreMod(), 1, tensors, scoreRanges(result.shape), "mod")))
    return failure();
  auto modified = scoreModFunction(&op.getScoreMod(), tensors);
  int64_t heads = rank == 4 ? result.shape[1] : 1;
  for (int64_t flat = 0; flat < result.numElements(); ++flat) {
    int64_t j = flat % sk, i = (flat / sk) % sq;
    int64_t h = rank == 4 ? (flat / (sk * sq)) % heads : 0, b = rank == 4 ? flat / (sk * sq * heads) : 0;
    result.data[flat] = modified(result.data[flat], b, h, i, j).first;
  }
  values[op.getResult()] = std::move(result);
  return success();
}

LogicalResult Evaluator::softmax(SoftmaxOp op) {
  ReferenceTensor result = get(op.getInput());
  int64_t cols = result.shape.back();
  int64_t rows = cols ? result.numElements() / cols : 0;
  for (int64_t r = 0; r < rows; ++r) {
    double *row = &result.data[r * cols];
    double rowMax = *std::max_element(row, row + cols);
    if (rowMax == kNegInf) {
      // Nothing visible: zeros, the convention flash.attention follows.
      std::fill(row, row + cols, 0.0);
      continue;
    }
    double sum = 0.0;
    for (int64_t c = 0; c < cols; ++c)
      sum += (row[c] = std::exp(row[c] - rowMax));
    for (int64_t c = 0; c < cols; ++c)
      row[c] /= sum;
  }
  values[op.getResult()] = std::move(result);
  return success();
}

LogicalResult Evaluator::add(AddOp op) {
  ReferenceTensor result = get(op.getLhs());
  const ReferenceTensor &rhs = get(op.getRhs());
  ArrayRef<int64_t> lhsShape = result.shape;
  if (rhs.shape.size() > lhsShape.size() ||
      lhsShape.take_back(rhs.shape.size()) != ArrayRef<int64_t>(rhs.shape))
    return op.emitError() << "at run time rhs " << formatShape(rhs.shape)
                          << " is not lhs " << formatShape(lhsShape)
                          << " or its trailing dimensions";
  int64_t period = rhs.numElements();
  for (int64_t i = 0; period && i < result.numElements(); ++i)
    result.data[i] += rhs.data[i % period];
  values[op.getResult()] = std::move(result);
  return success();
}

LogicalResult Evaluator::attention(AttentionOp op) {
  const ReferenceTensor &q = get(op.getQuery());
  const ReferenceTensor &k = get(op.getKey());
  const ReferenceTensor &v = get(op.getValue());
  bool consistent = q.shape[0] == k.shape[0] && k.shape[0] == v.shape[0] &&
                    k.shape[1] == v.shape[1] && k.shape[2] == v.shape[2] &&
                    q.shape[3] == k.shape[3] && k.shape[1] > 0 &&
                    q.shape[1] % k.shape[1] == 0;
  if (!consistent)
    return op.emitError() << "at run time query " << formatShape(q.shape)
                          << ", key " << formatShape(k.shape) << " and value "
                          << formatShape(v.shape) << " do not agree";
  std::optional<int64_t> keyOffset;
  if (op.getKeyOffset())
    keyOffset = static_cast<int64_t>(get(op.getKeyOffset()).data.at(0));
  ReferenceTensor lse;
  SmallVector<const ReferenceTensor *> tensors;
  for (Value tensor : op.getMaskOperands())
    tensors.push_back(&get(tensor));
  SmallVector<const ReferenceTensor *> scoreTensors;
  for (Value tensor : op.getScoreOperands())
    scoreTensors.push_back(&get(tensor));
  std::array<int64_t, 4> ranges = {q.shape[0], q.shape[1], q.shape[2], k.shape[2]};
  if ((op.hasMaskMod() && failed(checkTableReads(op, op.getMaskMod(), 0, tensors, ranges, "mask_mod"))) ||
      (op.hasScoreMod() && failed(checkTableReads(op, op.getScoreMod(), 1, scoreTensors, ranges, "score_mod"))))
    return failure();
  ReferenceTensor out = referenceAttention(q, k, v, op.getScaleValue(),
                                           op.getSoftcapValue(), op.getMask(),
                                           lse, keyOffset,
                                           op.hasMaskMod() ? &op.getMaskMod() : nullptr, tensors,
                                           op.hasScoreMod() ? &op.getScoreMod() : nullptr, scoreTensors);
  values[op.getOutput()] = std::move(out);
  values[op.getLse()] = std::move(lse);
  return success();
}

LogicalResult Evaluator::decode(DecodeAttentionOp op) {
  const ReferenceTensor &q = get(op.getQuery()), &k = get(op.getKeyCache()), &v = get(op.getValueCache());
  const ReferenceTensor &lens = get(op.getCacheSeqlens());
  ref::DecodeShape shape;
  shape.batch = q.shape[0];
  shape.queryHeads = q.shape[1];
  shape.tokens = q.shape[2];
  shape.headDim = q.shape[3];
  shape.valueDim = v.shape[3];
  shape.kvHeads = static_cast<int64_t>(op.getNumKvHeads());
  std::vector<int32_t> seqlens(lens.data.begin(), lens.data.end()), table;
  cacheLayout(op, k, shape, table);
  if (lens.shape[0] != shape.batch || (op.isPaged() && get(op.getBlockTable()).shape[0] != shape.batch) ||
      (!op.isPaged() && (k.shape[0] != shape.batch || v.shape[0] != shape.batch || v.shape[2] != k.shape[2])))
    return op.emitError() << "at run time query " << formatShape(q.shape) << ", caches " << formatShape(k.shape)
                          << " / " << formatShape(v.shape) << " and cache_seqlens " << formatShape(lens.shape)
                          << " do not agree";
  std::string bad = ref::checkDecodeTables(shape, seqlens.data(), table.data());
  if (!bad.empty())
    return op.emitError() << "at run time " << bad;
  ReferenceTensor out(std::vector<int64_t>{q.shape[0], q.shape[1], q.shape[2], shape.valueDim});
  ReferenceTensor lse(std::vector<int64_t>{q.shape[0], q.shape[1], q.shape[2]});
  ref::decodeAttention(shape, q.data, k.data, v.data, seqlens.data(), table.data(), op.getScale().convertToDouble(),
                       op.getCausal(), out.data, lse.data);
  values[op.getOutput()] = std::move(out);
  values[op.getLse()] = std::move(lse);
  return success();
}

LogicalResult Evaluator::kvAppend(KvAppendOp op) {
  const ReferenceTensor &key = get(op.getKey()), &value = get(op.getValue());
  const ReferenceTensor &k = get(op.getKeyCache()), &v = get(op.getValueCache()), &lens = get(op.getCacheSeqlens());
  ref::DecodeShape shape;
  shape.batch = key.shape[0];
  shape.kvHeads = key.shape[1];
  shape.queryHeads = shape.kvHeads;
  shape.tokens = key.shape[2];
  shape.headDim = key.shape[3];
  shape.valueDim = value.shape[3];
  std::vector<int32_t> seqlens(lens.data.begin(), lens.data.end()), table;
  cacheLayout(op, k, shape, table);
  if (value.shape[0] != shape.batch || value.shape[2] != shape.tokens || lens.shape[0] != shape.batch ||
      (op.isPaged() && get(op.getBlockTable()).shape[0] != shape.batch) ||
      (!op.isPaged() && (k.shape[0] != shape.batch || v.shape[0] != shape.batch || v.shape[2] != k.shape[2])) ||
      (op.isPaged() && v.shape[0] != k.shape[0]))
    return op.emitError() << "at run time key " << formatShape(key.shape) << ", value " << formatShape(value.shape)
                          << ", caches " << formatShape(k.shape) << " / " << formatShape(v.shape)
                          << " and cache_seqlens " << formatShape(lens.shape) << " do not agree";
  std::string bad = ref::checkDecodeTables(shape, seqlens.data(), table.data(), shape.tokens);
  if (!bad.empty())
    return op.emitError() << "at run time " << bad;
  ReferenceTensor newK = k, newV = v;
  ref::appendToCache(shape, key.data, value.data, seqlens.data(), table.data(), newK.data, newV.data);
  values[op.getNewKeyCache()] = std::move(newK);
  values[op.getNewValueCache()] = std::move(newV);
  return success();
}

LogicalResult Evaluator::varlen(VarlenAttentionOp op) {
  const ReferenceTensor &q = get(op.getQuery()), &k = get(op.getKey()), &v = get(op.getValue());
  const ReferenceTensor &cuQ = get(op.getCuSeqlensQ()), &cuK = get(op.getCuSeqlensK());
  ref::VarlenShape shape;
  shape.sequences = cuQ.shape[0] - 1;
  shape.rowsQ = q.shape[0];
  shape.rowsK = k.shape[0];
  shape.queryHeads = q.shape[1];
  shape.kvHeads = k.shape[1];
  shape.headDim = q.shape[2];
  shape.valueDim = v.shape[2];
  if (cuK.shape[0] != cuQ.shape[0] || v.shape[0] != k.shape[0] || shape.sequences < 0)
    return op.emitError() << "at run time cu_seqlens_q " << formatShape(cuQ.shape) << ", cu_seqlens_k "
                          << formatShape(cuK.shape) << ", key " << formatShape(k.shape) << " and value "
                          << formatShape(v.shape) << " do not agree";
  std::vector<int32_t> offsetsQ(cuQ.data.begin(), cuQ.data.end()), offsetsK(cuK.data.begin(), cuK.data.end());
  std::string bad = ref::checkVarlenOffsets(shape, offsetsQ.data(), offsetsK.data());
  if (!bad.empty())
    return op.emitError() << "at run time " << bad;
  flash::MaskAttr mask = op.getMask();
  ref::AttentionParams params;
  params.scale = op.getScale().convertToDouble();
  params.softcap = op.getSoftcap().convertToDouble();
  params.window = mask.isNone() ? ref::AttentionWindow::none()
                  : mask.isCausal() ? ref::AttentionWindow::causal()
                                    : ref::AttentionWindow{mask.getWindowLeft(), mask.getWindowRight()};
  ReferenceTensor out(std::vector<int64_t>{q.shape[0], q.shape[1], shape.valueDim});
  ReferenceTensor lse(std::vector<int64_t>{q.shape[1], q.shape[0]});
  ref::varlenAttention(shape, params, q.data.data(), k.data.data(), v.data.data(), offsetsQ.data(), offsetsK.data(),
                       out.data.data(), lse.data.data());
  values[op.getOutput()] = std::move(out);
  values[op.getLse()] = std::move(lse);
  return success();
}

LogicalResult Evaluator::ffn(FfnOp op) {
  const ReferenceTensor &x = get(op.getInput());
  const ReferenceTensor &w1 = get(op.getW1());
  const ReferenceTensor &w2 = get(op.getW2());
  const ReferenceTensor *b1 = op.getB1() ? &get(op.getB1()) : nullptr;
  const ReferenceTensor *wUp = op.isGated() ? &get(op.getWUp()) : nullptr;
  const ReferenceTensor *b2 = op.getB2() ? &get(op.getB2()) : nullptr;
  int64_t model = x.shape.back(), hidden = w1.shape[1], out = w2.shape[1];
  if (w1.shape[0] != model)
    return op.emitError() << "at run time input " << formatShape(x.shape)
                          << " does not match w1 " << formatShape(w1.shape);
  if (w2.shape[0] != hidden || (wUp && wUp->shape != w1.shape) ||
      (b1 && b1->numElements() != hidden) || (b2 && b2->numElements() != out))
    return op.emitError() << "at run time w1 " << formatShape(w1.shape) << ", w2 "
                          << formatShape(w2.shape)
                          << " and the optional w_up, b1, b2 do not agree";
  ref::FfnShape shape{model ? x.numElements() / model : 0, model, hidden, out};
  ref::FfnWeights weights;
  weights.w1 = w1.data.data(), weights.w2 = w2.data.data();
  weights.b1 = b1 ? b1->data.data() : nullptr;
  weights.wUp = wUp ? wUp->data.data() : nullptr;
  weights.b2 = b2 ? b2->data.data() : nullptr;
  std::vector<int64_t> resultShape(x.shape.begin(), x.shape.end() - 1);
  resultShape.push_back(out);
  ReferenceTensor result(resultShape);
  ref::ffnForward(shape, referenceActivation(op.getActivation()), weights, x.data.data(),
                  result.data.data());
  values[op.getResult()] = std::move(result);
  return success();
}

LogicalResult Evaluator::moe(MoeOp op) {
  const ReferenceTensor &x = get(op.getInput()), &router = get(op.getRouter());
  const ReferenceTensor &w1 = get(op.getW1()), &w2 = get(op.getW2());
  const ReferenceTensor *wUp = op.isGated() ? &get(op.getWUp()) : nullptr;
  ref::MoeShape shape{x.shape[0], op.getModelDim(), op.getHiddenDim(), op.getOutputDim(), op.getExperts(),
                      static_cast<int64_t>(op.getTopK())};
  if (x.shape[1] != shape.model)
    return op.emitError() << "at run time input " << formatShape(x.shape) << " does not match the router "
                          << formatShape(router.shape);
  ReferenceTensor result(std::vector<int64_t>{shape.tokens, shape.out});
  // A 16-bit layer's router logits are a 16-bit tensor (the graph spelling's matmul result; the kernels' and
  // PyTorch's router): the experts are chosen on those values.
  Type element = op.getInput().getType().getElementType();
  ref::LogitRounding roundLogit =
      element.isBF16() || element.isF16() ? ref::logitRounding16(element.isBF16()) : nullptr;
  ref::moeForward(shape, referenceActivation(op.getActivation()),
                  op.getGating() == MoeGating::Softmax ? ref::MoeGating::Softmax : ref::MoeGating::Sigmoid,
                  op.getRenormalize(), router.data.data(), w1.data.data(), wUp ? wUp->data.data() : nullptr,
                  w2.data.data(), x.data.data(), result.data.data(), nullptr, roundLogit);
  values[op.getResult()] = std::move(result);
  return success();
}

LogicalResult Evaluator::topK(TopKOp op) {
  const ReferenceTensor &scores = get(op.getScores());
  int64_t rows = scores.shape[0], n = scores.shape[1], k = static_cast<int64_t>(op.getK());
  if (k > n)
    return op.emitError() << "at run time scores " << formatShape(scores.shape) << " have fewer than k = " << k
                          << " columns";
  ReferenceTensor top(std::vector<int64_t>{rows, k}), indices(std::vector<int64_t>{rows, k});
  std::vector<int64_t> order(n);
  for (int64_t r = 0; r < rows; ++r) {
    const double *row = &scores.data[r * n];
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return row[a] > row[b]; });
    for (int64_t j = 0; j < k; ++j) {
      top.data[r * k + j] = row[order[j]];
      indices.data[r * k + j] = static_cast<double>(order[j]);
    }
  }
  values[op.getValues()] = std::move(top);
  values[op.getIndices()] = std::move(indices);
  return success();
}

LogicalResult Evaluator::expertFfn(ExpertFfnOp op) {
  const ReferenceTensor &x = get(op.getInput()), &ids = get(op.getIds());
  const ReferenceTensor &w1 = get(op.getW1()), &w2 = get(op.getW2());
  const ReferenceTensor *wUp = op.getWUp() ? &get(op.getWUp()) : nullptr;
  int64_t tokens = x.shape[0], d = x.shape[1], k = ids.shape[1];
  int64_t experts = w1.shape[0], h = w1.shape[2], n = w2.shape[2];
  if (ids.shape[0] != tokens)
    return op.emitError() << "at run time ids " << formatShape(ids.shape) << " do not match input "
                          << formatShape(x.shape);
  if (d != w1.shape[1])
    return op.emitError() << "at run time input " << formatShape(x.shape) << " does not match w1 "
                          << formatShape(w1.shape);
  ReferenceTensor result(std::vector<int64_t>{tokens, k, n});
  ref::FfnShape shape{1, d, h, n};
  for (int64_t t = 0; t < tokens; ++t)
    for (int64_t j = 0; j < k; ++j) {
      int64_t e = static_cast<int64_t>(ids.data[t * k + j]);
      if (e < 0 || e >= experts)
        return op.emitError() << "at run time token " << t << " names expert " << e << " of " << experts;
      ref::FfnWeights w;
      w.w1 = w1.data.data() + e * d * h;
      w.wUp = wUp ? wUp->data.data() + e * d * h : nullptr;
      w.w2 = w2.data.data() + e * h * n;
      ref::ffnForward(shape, referenceActivation(op.getActivation()), w, x.data.data() + t * d,
                      result.data.data() + (t * k + j) * n);
    }
  values[op.getResult()] = std::move(result);
  return success();
}

LogicalResult Evaluator::combine(CombineOp op) {
  const ReferenceTensor &rows = get(op.getRows()), &weights = get(op.getWeights());
  int64_t tokens = rows.shape[0], k = rows.shape[1], n = rows.shape[2];
  if (weights.shape != std::vector<int64_t>{tokens, k})
    return op.emitError() << "at run time weights " << formatShape(weights.shape) << " do not match rows "
                          << formatShape(rows.shape);
  ReferenceTensor result(std::vector<int64_t>{tokens, n});
  for (int64_t t = 0; t < tokens; ++t)
    for (int64_t j = 0; j < k; ++j)
      for (int64_t c = 0; c < n; ++c)
        result.data[t * n + c] += weights.data[t * k + j] * rows.data[(t * k + j) * n + c];
  values[op.getResult()] = std::move(result);
  return success();
}

LogicalResult Evaluator::run(Operation *op) {
  return llvm::TypeSwitch<Operation *, LogicalResult>(op)
      .Case<MatmulOp>([&](auto matmulOp) { return matmul(matmulOp); })
      .Case<ScaleOp>([&](ScaleOp scaleOp) {
        double factor = scaleOp.getFactor().convertToDouble();
        return elementwise(op, [factor](double x) { return factor * x; });
      })
      .Case<MaskOp>([&](auto maskOp) { return mask(maskOp); })
      .Case<ScoreOp>([&](auto scoreOp) { return score(scoreOp); })
      .Case<SoftmaxOp>([&](auto softmaxOp) { return softmax(softmaxOp); })
      .Case<GeluOp>([&](GeluOp geluOp) {
        bool useTanh = geluOp.getApproximation() == GeluApproximation::Tanh;
        return elementwise(op, useTanh ? ref::geluTanh : ref::geluErf);
      })
      .Case<SiluOp>([&](auto) { return elementwise(op, ref::silu); })
      .Case<SigmoidOp>([&](auto) { return elementwise(op, [](double x) { return 1.0 / (1.0 + std::exp(-x)); }); })
      .Case<NormalizeOp>([&](NormalizeOp normalizeOp) -> LogicalResult {
        ReferenceTensor result = get(normalizeOp.getInput());
        int64_t cols = result.shape.back(), rows = cols ? result.numElements() / cols : 0;
        for (int64_t r = 0; r < rows; ++r) {
          double sum = 0.0;
          for (int64_t c = 0; c < cols; ++c)
            sum += result.data[r * cols + c];
          for (int64_t c = 0; c < cols; ++c)
            result.data[r * cols + c] /= sum;
        }
        values[normalizeOp.getResult()] = std::move(result);
        return success();
      })
      .Case<TopKOp>([&](auto topKOp) { return topK(topKOp); })
      .Case<ExpertFfnOp>([&](auto expertOp) { return expertFfn(expertOp); })
      .Case<CombineOp>([&](auto combineOp) { return combine(combineOp); })
      .Case<ReluOp>([&](auto) { return elementwise(op, ref::relu); })
      .Case<AddOp>([&](auto addOp) { return add(addOp); })
      .Case<MulOp>([&](MulOp mulOp) -> LogicalResult {
        ReferenceTensor result = get(mulOp.getLhs());
        const ReferenceTensor &rhs = get(mulOp.getRhs());
        if (rhs.shape != result.shape)
          return mulOp.emitError() << "at run time operands "
                                   << formatShape(result.shape) << " and "
                                   << formatShape(rhs.shape) << " differ";
        for (size_t i = 0; i < result.data.size(); ++i)
          result.data[i] *= rhs.data[i];
        values[mulOp.getResult()] = std::move(result);
        return success();
      })
      .Case<AttentionOp>([&](auto attentionOp) { return attention(attentionOp); })
      .Case<DecodeAttentionOp>([&](auto decodeOp) { return decode(decodeOp); })
      .Case<KvAppendOp>([&](auto appendOp) { return kvAppend(appendOp); })
      .Case<MoeOp>([&](auto moeOp) { return moe(moeOp); })
      .Case<VarlenAttentionOp>([&](auto varlenOp) { return varlen(varlenOp); })
      .Case<FfnOp>([&](auto ffnOp) { return ffn(ffnOp); })
      .Case<tensor::DimOp>([&](tensor::DimOp dimOp) -> LogicalResult {
        ReferenceTensor dim(std::vector<int64_t>{});
        std::optional<int64_t> index = dimOp.getConstantIndex();
        const ReferenceTensor &source = get(dimOp.getSource());
        if (!index || *index < 0 || *index >= static_cast<int64_t>(source.shape.size()))
          return dimOp.emitError() << "the graph evaluator takes tensor.dim of a constant dimension";
        dim.data[0] = static_cast<double>(source.shape[*index]);
        values[dimOp.getResult()] = std::move(dim);
        return success();
      })
      .Case<tensor::SplatOp>([&](tensor::SplatOp splatOp) -> LogicalResult {
        FailureOr<std::vector<int64_t>> shape = shapeOf(splatOp, splatOp.getType(), splatOp.getDynamicSizes());
        if (failed(shape))
          return failure();
        values[splatOp.getResult()] = ReferenceTensor(*shape, get(splatOp.getInput()).data[0]);
        return success();
      })
      .Case<tensor::GenerateOp>([&](auto generateOp) { return generate(generateOp); })
      .Case<tensor::CastOp>([&](tensor::CastOp castOp) {
        values[castOp.getResult()] = get(castOp.getSource());
        return success();
      })
      .Case<func::ReturnOp>([&](func::ReturnOp returnOp) {
        for (Value operand : returnOp.getOperands())
          results.push_back(get(operand));
        return success();
      })
      .Default([&](Operation *other) -> LogicalResult {
        if (isa<arith::ArithDialect, math::MathDialect>(other->getDialect()) && other->getNumResults() == 1)
          return scalarOps(other);
        return other->emitError()
               << "the flash graph evaluator does not support this op";
      });
}

} // namespace

namespace mlir::flash {

ReferenceTensor::ReferenceTensor(std::vector<int64_t> shape, double fill)
    : shape(std::move(shape)) {
  data.assign(product(this->shape), fill);
}

int64_t ReferenceTensor::numElements() const { return product(shape); }

FailureOr<std::vector<int64_t>> evaluatedShape(ArrayRef<int64_t> shape, int64_t dynamicSize, std::string &error) {
  std::vector<int64_t> result;
  int64_t elements = 1;
  for (int64_t dim : shape) {
    result.push_back(ShapedType::isDynamic(dim) ? dynamicSize : dim);
    // Divided, not multiplied: the product of static sizes may pass int64.
    if (result.back() != 0 && elements > kMaxEvaluatedElements / result.back()) {
      std::string dims;
      for (int64_t size : shape)
        dims += (dims.empty() ? "" : "x") + (ShapedType::isDynamic(size) ? std::string("?") : std::to_string(size));
      error = "a tensor of shape " + dims + " holds more than 2^28 values, past what the float64 reference evaluates";
      return failure();
    }
    elements *= result.back();
  }
  return result;
}

ref::AttentionWindow referenceWindow(MaskAttr mask) {
  if (!mask || mask.getKind() == MaskKind::None)
    return ref::AttentionWindow::none();
  if (mask.getKind() == MaskKind::Causal)
    return ref::AttentionWindow::causal();
  return {mask.getWindowLeft(), mask.getWindowRight()};
}

std::function<bool(int64_t, int64_t, int64_t, int64_t)>
maskModPredicate(Region *maskMod, ArrayRef<const ReferenceTensor *> tensors) {
  if (!maskMod)
    return {};
  std::vector<const ReferenceTensor *> kept(tensors.begin(), tensors.end());
  return [maskMod, kept](int64_t b, int64_t h, int64_t i, int64_t j) {
    auto shape = [&](unsigned t) { return SmallVector<int64_t, 4>(kept[t]->shape.begin(), kept[t]->shape.end()); };
    auto read = [&](unsigned t, ArrayRef<int64_t> position) -> int64_t {
      int64_t offset = 0;
      for (auto [p, size] : llvm::zip(position, kept[t]->shape))
        offset = offset * size + p;
      return static_cast<int64_t>(kept[t]->data[offset]);
    };
    return flashc::evaluateIndexPredicate(*maskMod, {b, h, i, j}, shape, read);
  };
}

std::function<std::pair<double, double>(double, int64_t, int64_t, int64_t, int64_t)>
scoreModFunction(Region *scoreMod, ArrayRef<const ReferenceTensor *> tensors) {
  if (!scoreMod)
    return {};
  std::vector<const ReferenceTensor *> kept(tensors.begin(), tensors.end());
  return [scoreMod, kept](double s, int64_t b, int64_t h, int64_t i, int64_t j) {
    auto shape = [&](unsigned t) { return SmallVector<int64_t, 4>(kept[t]->shape.begin(), kept[t]->shape.end()); };
    auto read = [&](unsigned t, ArrayRef<int64_t> position) -> double {
      int64_t offset = 0;
      for (auto [p, size] : llvm::zip(position, kept[t]->shape))
        offset = offset * size + p;
      return kept[t]->data[offset];
    };
    // The derivative by central differences in double: independent of the forward-mode rules the executor and the
    // emitted kernels share (as the FFN reference's activation derivatives).
    auto value = [&](double x) { return flashc::evaluateScore(*scoreMod, x, {b, h, i, j}, shape, read).value; };
    double step = 1e-6 * std::max(1.0, std::fabs(s));
    double derivative = (value(s + step) - value(s - step)) / (2 * step);
    return std::make_pair(value(s), std::isfinite(derivative) ? derivative : 0.0);
  };
}

ref::AttentionParams referenceParams(AttentionOp op, ArrayRef<const ReferenceTensor *> maskTensors,
                                     ArrayRef<const ReferenceTensor *> scoreTensors) {
  ref::AttentionParams params{op.getScaleValue(), op.getSoftcapValue(), referenceWindow(op.getMask())};
  if (op.hasMaskMod())
    params.maskMod = maskModPredicate(&op.getMaskMod(), maskTensors);
  if (op.hasScoreMod())
    params.scoreMod = scoreModFunction(&op.getScoreMod(), scoreTensors);
  return params;
}

ref::Activation referenceActivation(Activation activation) {
  return ref::parseActivation(stringifyActivation(activation).str())
      .value_or(ref::Activation::Identity);
}

ReferenceTensor referenceAttention(const ReferenceTensor &query,
                                   const ReferenceTensor &key,
                                   const ReferenceTensor &value, double scale,
                                   double softcap, MaskAttr mask,
                                   ReferenceTensor &lse,
                                   std::optional<int64_t> keyOffset, Region *maskMod,
                                   ArrayRef<const ReferenceTensor *> maskTensors, Region *scoreMod,
                                   ArrayRef<const ReferenceTensor *> scoreTensors) {
  ref::AttentionShape shape{query.shape[0], query.shape[1], key.shape[1],
                            query.shape[2], key.shape[2],   query.shape[3],
                            value.shape[3]};
  ref::AttentionParams params{scale, softcap, referenceWindow(mask)};
  if (keyOffset)
    params.window = params.window.withKeyOffset(*keyOffset);
  if (maskMod)
    params.maskMod = maskModPredicate(maskMod, maskTensors);
  if (scoreMod)
    params.scoreMod = scoreModFunction(scoreMod, scoreTensors);
  ReferenceTensor out({shape.batch, shape.queryHeads, shape.querySeq, shape.valueDim});
  lse = ReferenceTensor({shape.batch, shape.queryHeads, shape.querySeq});
  ref::attentionForward(shape, params, query.data.data(), key.data.data(),
                        value.data.data(), out.data.data(), lse.data.data());
  return out;
}

/// Whether a tensor of `shape` is one of `type` (a ranked tensor type of that rank, its static sizes equal).
static bool fitsType(Type type, ArrayRef<int64_t> shape) {
  auto ranked = dyn_cast<RankedTensorType>(type);
  if (!ranked || ranked.getRank() != static_cast<int64_t>(shape.size()))
    return false;
  for (int64_t d = 0; d < ranked.getRank(); ++d)
    if (!ranked.isDynamicDim(d) && ranked.getDimSize(d) != shape[d])
      return false;
  return true;
}

FailureOr<SmallVector<ReferenceTensor>>
evaluateGraph(func::FuncOp function, ArrayRef<ReferenceTensor> arguments) {
  if (function.isExternal() || !llvm::hasSingleElement(function.getBody()))
    return function.emitError()
           << "the flash graph evaluator needs a function with one block";
  Block &body = function.getBody().front();
  if (body.getNumArguments() != arguments.size())
    return function.emitError() << "expected " << body.getNumArguments()
                                << " arguments, got " << arguments.size();
  Evaluator evaluator;
  for (auto [argument, tensor] : llvm::zip(body.getArguments(), arguments)) {
    if (argument.getType().isSignlessInteger(32)) {
      if (!tensor.shape.empty() || tensor.data.size() != 1)
        return function.emitError() << "argument #" << argument.getArgNumber()
                                    << " (i32) takes a rank-0 tensor holding its value";
      evaluator.values[argument] = tensor;
      continue;
    }
    if (!fitsType(argument.getType(), tensor.shape))
      return function.emitError()
             << "argument #" << argument.getArgNumber() << " of type "
             << argument.getType() << " cannot take a tensor of shape "
             << formatShape(tensor.shape);
    evaluator.values[argument] = tensor;
  }
  for (Operation &op : body) {
    if (failed(evaluator.run(&op)))
      return failure();
    // A result's static sizes are what the ops after it (and the fused kernels) take on trust: one the evaluation
    // contradicts (a static 2^36 rows where the graph computes 3) is an error, not a tensor of another shape.
    for (Value result : op.getResults()) {
      auto it = evaluator.values.find(result);
      if (isa<RankedTensorType>(result.getType()) && it != evaluator.values.end() &&
          !fitsType(result.getType(), it->second.shape))
        return op.emitError() << "at run time this result has shape " << formatShape(it->second.shape)
                              << ", where its type " << result.getType() << " says otherwise";
    }
  }
  return evaluator.results;
}

} // namespace mlir::flash
