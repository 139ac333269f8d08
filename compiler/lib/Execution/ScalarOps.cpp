//===- ScalarOps.cpp - one arith / math op in float64 ---------------------===//
#include "ScalarOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/ADT/TypeSwitch.h"

#include <cmath>
#include <limits>

using namespace mlir;

namespace flashc {
namespace {

// Integers are carried as float64: exact up to 2^53. A value past it (or a double outside int64, or NaN) is not an
// integer the reference can hold: the op fails with a reason rather than round (or convert out of range, which is
// undefined behaviour).
constexpr double kExactIntegers = 9007199254740992.0;  // 2^53
int64_t asInt(double x) { return x >= -kExactIntegers && x <= kExactIntegers ? static_cast<int64_t>(x) : 0; }
double wrap(int64_t x) { return static_cast<double>(x); }
// Truncating division as the index functions and the kernels take it (IndexFunction.cpp): by 0 it gives 0, by -1
// the wrapping negation (INT64_MIN / -1 is INT64_MIN, not a trap); the remainder by 0 or -1 is 0.
int64_t divTruncating(int64_t a, int64_t b) {
  if (b == 0) return 0;
  if (b == -1) return static_cast<int64_t>(0 - static_cast<uint64_t>(a));
  return a / b;
}
int64_t remTruncating(int64_t a, int64_t b) { return b == 0 || b == -1 ? 0 : a % b; }
int64_t addWrapping(int64_t a, int64_t b) { return static_cast<int64_t>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b)); }
int64_t mulWrapping(int64_t a, int64_t b) { return static_cast<int64_t>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b)); }

FailureOr<double> attributeValue(Attribute attr) {
  if (auto dense = dyn_cast<SplatElementsAttr>(attr))
    attr = dense.getSplatValue<Attribute>();
  if (auto f = dyn_cast<FloatAttr>(attr))
    return f.getValueAsDouble();
  if (auto i = dyn_cast<IntegerAttr>(attr))
    return i.getType().isInteger(1) ? (i.getValue().isZero() ? 0.0 : 1.0) : wrap(i.getValue().getSExtValue());
  return failure();
}

bool compareFloat(arith::CmpFPredicate p, double a, double b) {
  bool unordered = std::isnan(a) || std::isnan(b);
  using P = arith::CmpFPredicate;
  switch (p) {
  case P::AlwaysFalse: return false;
  case P::OEQ: return !unordered && a == b;
  case P::OGT: return !unordered && a > b;
  case P::OGE: return !unordered && a >= b;
  case P::OLT: return !unordered && a < b;
  case P::OLE: return !unordered && a <= b;
  case P::ONE: return !unordered && a != b;
  case P::ORD: return !unordered;
  case P::UEQ: return unordered || a == b;
  case P::UGT: return unordered || a > b;
  case P::UGE: return unordered || a >= b;
  case P::ULT: return unordered || a < b;
  case P::ULE: return unordered || a <= b;
  case P::UNE: return unordered || a != b;
  case P::UNO: return unordered;
  case P::AlwaysTrue: return true;
  }
  return false;
}

bool compareInt(arith::CmpIPredicate p, int64_t a, int64_t b) {
  using P = arith::CmpIPredicate;
  switch (p) {
  case P::eq: return a == b;
  case P::ne: return a != b;
  case P::slt: case P::ult: return a < b;
  case P::sle: case P::ule: return a <= b;
  case P::sgt: case P::ugt: return a > b;
  case P::sge: case P::uge: return a >= b;
  }
  return false;
}

double floatMinMax(double a, double b, bool max) {
  if (std::isnan(a) || std::isnan(b))
    return std::numeric_limits<double>::quiet_NaN();
  return max ? std::max(a, b) : std::min(a, b);
}

} // namespace

static FailureOr<double> evaluateScalarOpUnchecked(Operation *op, ArrayRef<double> x);

FailureOr<double> evaluateScalarOp(Operation *op, ArrayRef<double> x, std::string *why) {
  FailureOr<double> value = evaluateScalarOpUnchecked(op, x);
  // An integer operand or result past 2^53 was (or would be) rounded: refused, with the reason.
  bool integer = op->getNumResults() == 1 && op->getResult(0).getType().isIntOrIndex();
  auto inexact = [](double v) { return !(std::fabs(v) <= kExactIntegers); };
  bool badOperand = llvm::any_of(llvm::enumerate(op->getOperands()), [&](auto operand) {
    return operand.value().getType().isIntOrIndex() && operand.index() < x.size() && inexact(x[operand.index()]);
  });
  if (succeeded(value) && (badOperand || (integer && inexact(*value)))) {
    if (why)
      *why = "an integer past 2^53, which the float64 reference cannot hold exactly";
    return failure();
  }
  return value;
}

static FailureOr<double> evaluateScalarOpUnchecked(Operation *op, ArrayRef<double> x) {
  auto i = [&](unsigned n) { return asInt(x[n]); };
  return llvm::TypeSwitch<Operation *, FailureOr<double>>(op)
      .Case<arith::ConstantOp>([&](auto c) { return attributeValue(c.getValue()); })
      .Case<arith::AddFOp>([&](auto) { return x[0] + x[1]; })
      .Case<arith::SubFOp>([&](auto) { return x[0] - x[1]; })
      .Case<arith::MulFOp>([&](auto) { return x[0] * x[1]; })
      .Case<arith::DivFOp>([&](auto) { return x[0] / x[1]; })
      .Case<arith::NegFOp>([&](auto) { return -x[0]; })
      .Case<arith::MaximumFOp>([&](auto) { return floatMinMax(x[0], x[1], true); })
      .Case<arith::MinimumFOp>([&](auto) { return floatMinMax(x[0], x[1], false); })
      .Case<arith::CmpFOp>([&](auto c) { return compareFloat(c.getPredicate(), x[0], x[1]) ? 1.0 : 0.0; })
      .Case<arith::SelectOp>([&](auto) { return x[0] != 0.0 ? x[1] : x[2]; })
      .Case<arith::SIToFPOp, arith::ExtFOp, arith::TruncFOp, arith::IndexCastOp, arith::ExtSIOp>(
          [&](auto) { return x[0]; })
      .Case<arith::AddIOp>([&](auto) { return wrap(addWrapping(i(0), i(1))); })
      .Case<arith::SubIOp>([&](auto) { return wrap(addWrapping(i(0), -i(1))); })
      .Case<arith::MulIOp>([&](auto) { return wrap(mulWrapping(i(0), i(1))); })
      .Case<arith::DivSIOp>([&](auto) { return wrap(divTruncating(i(0), i(1))); })
      .Case<arith::RemSIOp>([&](auto) { return wrap(remTruncating(i(0), i(1))); })
      .Case<arith::FloorDivSIOp>([&](auto) {
        int64_t q = divTruncating(i(0), i(1));
        return wrap((remTruncating(i(0), i(1)) != 0 && ((i(0) < 0) != (i(1) < 0))) ? q - 1 : q);
      })
      .Case<arith::CeilDivSIOp>([&](auto) {
        int64_t q = divTruncating(i(0), i(1));
        return wrap((remTruncating(i(0), i(1)) != 0 && ((i(0) < 0) == (i(1) < 0))) ? q + 1 : q);
      })
      .Case<arith::MinSIOp>([&](auto) { return wrap(std::min(i(0), i(1))); })
      .Case<arith::MaxSIOp>([&](auto) { return wrap(std::max(i(0), i(1))); })
      .Case<arith::CmpIOp>([&](auto c) { return compareInt(c.getPredicate(), i(0), i(1)) ? 1.0 : 0.0; })
      .Case<arith::AndIOp>([&](auto) { return wrap(i(0) & i(1)); })
      .Case<arith::OrIOp>([&](auto) { return wrap(i(0) | i(1)); })
      .Case<arith::XOrIOp>([&](auto) { return wrap(i(0) ^ i(1)); })
      .Case<math::TanhOp>([&](auto) { return std::tanh(x[0]); })
      .Case<math::ExpOp>([&](auto) { return std::exp(x[0]); })
      .Case<math::LogOp>([&](auto) { return std::log(x[0]); })
      .Case<math::SqrtOp>([&](auto) { return std::sqrt(x[0]); })
      .Case<math::AbsFOp>([&](auto) { return std::fabs(x[0]); })
      .Case<math::SinOp>([&](auto) { return std::sin(x[0]); })
      .Case<math::CosOp>([&](auto) { return std::cos(x[0]); })
      .Default([&](Operation *) -> FailureOr<double> { return failure(); });
}

} // namespace flashc
