//===- IndexBounds.cpp - integer bounds of a modifier region --------------===//
#include "IndexBounds.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

#include <algorithm>
#include <climits>

using namespace mlir;

namespace flashc {
namespace {

using Bounds = std::pair<int64_t, int64_t>;
constexpr __int128 kLimit = static_cast<__int128>(1) << 62;  // far inside int64: no wrap in the 64-bit domain

bool isInteger(Type type) { return type.isIndex() || (type.isSignlessInteger() && !type.isSignlessInteger(1)); }

std::optional<Bounds> fromWide(__int128 lo, __int128 hi) {
  if (lo < -kLimit || hi > kLimit)
    return std::nullopt;
  return Bounds{static_cast<int64_t>(lo), static_cast<int64_t>(hi)};
}

int64_t magnitude(const Bounds &b) { return std::max(b.first == INT64_MIN ? INT64_MAX : -b.first, b.second); }

} // namespace

IndexBounds::IndexBounds(Block &body, ArrayRef<BlockArgument> indices) {
  for (BlockArgument index : indices)
    bounds[index] = {0, INT32_MAX};
  for (Operation &op : body.without_terminator()) {
    if (op.getNumResults() != 1 || !isInteger(op.getResult(0).getType()))
      continue;
    Value result = op.getResult(0);
    std::optional<Bounds> b;
    auto operand = [&](unsigned i) { return of(op.getOperand(i)); };
    auto corners = [&](auto f) -> std::optional<Bounds> {
      auto x = operand(0), y = operand(1);
      if (!x || !y)
        return std::nullopt;
      __int128 c[4] = {f(x->first, y->first), f(x->first, y->second), f(x->second, y->first),
                       f(x->second, y->second)};
      return fromWide(*std::min_element(c, c + 4), *std::max_element(c, c + 4));
    };
    if (auto constant = dyn_cast<arith::ConstantOp>(op)) {
      if (auto attr = dyn_cast<IntegerAttr>(constant.getValue()))
        b = Bounds{attr.getInt(), attr.getInt()};
    } else if (isa<tensor::ExtractOp>(op)) {
      if (result.getType().isSignlessInteger(32))
        b = Bounds{INT32_MIN, INT32_MAX};
    } else if (isa<arith::IndexCastOp, arith::ExtSIOp>(op)) {
      b = operand(0);
      if (b && result.getType().isSignlessInteger(32) && (b->first < INT32_MIN || b->second > INT32_MAX))
        b = std::nullopt;  // truncated
    } else if (isa<arith::AddIOp>(op)) {
      b = corners([](__int128 x, __int128 y) { return x + y; });
    } else if (isa<arith::SubIOp>(op)) {
      b = corners([](__int128 x, __int128 y) { return x - y; });
    } else if (isa<arith::MulIOp>(op)) {
      b = corners([](__int128 x, __int128 y) { return x * y; });
    } else if (isa<arith::MinSIOp>(op)) {
      b = corners([](__int128 x, __int128 y) { return std::min(x, y); });
    } else if (isa<arith::MaxSIOp>(op)) {
      b = corners([](__int128 x, __int128 y) { return std::max(x, y); });
    } else if (isa<arith::DivSIOp, arith::FloorDivSIOp, arith::CeilDivSIOp>(op)) {
      // |a / b| <= |a| for b != 0, and 0 for b = 0 (the regions' rule); a ceiling or floor moves it by at most 1.
      if (auto x = operand(0))
        b = fromWide(-static_cast<__int128>(magnitude(*x)) - 1, static_cast<__int128>(magnitude(*x)) + 1);
    } else if (isa<arith::RemSIOp>(op)) {
      if (auto x = operand(0))
        b = fromWide(-static_cast<__int128>(magnitude(*x)), magnitude(*x));
    } else if (auto select = dyn_cast<arith::SelectOp>(op)) {
      auto x = of(select.getTrueValue()), y = of(select.getFalseValue());
      if (x && y)
        b = Bounds{std::min(x->first, y->first), std::max(x->second, y->second)};
    }
    if (b)
      bounds[result] = *b;
    allFit = allFit && fitsInt32(result);
  }
}

std::optional<std::pair<int64_t, int64_t>> IndexBounds::of(Value value) const {
  auto it = bounds.find(value);
  if (it == bounds.end())
    return std::nullopt;
  return it->second;
}

bool IndexBounds::fitsInt32(Value value) const {
  auto b = of(value);
  return b && b->first >= INT32_MIN && b->second <= INT32_MAX;
}

} // namespace flashc
