//===- ScoreFunction.cpp - score functions: verifier and evaluator -------===//
#include "flashc/Dialect/Common/ScoreFunction.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/TypeSwitch.h"

#include <cmath>
#include <cstdio>

using namespace mlir;

namespace flashc {

namespace {

bool isIndexOrBool(Type t) { return t.isIndex() || t.isSignlessInteger(1); }

bool isFloatOp(Operation &op) {
  return llvm::isa<arith::AddFOp, arith::SubFOp, arith::MulFOp, arith::DivFOp, arith::NegFOp, arith::MaximumFOp,
                   arith::MinimumFOp, math::TanhOp, math::ExpOp, math::LogOp, math::SqrtOp, math::AbsFOp>(op);
}

bool isIntegerOp(Operation &op) {
  return llvm::isa<arith::AddIOp, arith::SubIOp, arith::MulIOp, arith::DivSIOp, arith::CeilDivSIOp,
                   arith::FloorDivSIOp, arith::RemSIOp, arith::MinSIOp, arith::MaxSIOp, arith::CmpIOp, arith::AndIOp,
                   arith::OrIOp, arith::XOrIOp>(op);
}

bool isOrderedPredicate(arith::CmpFPredicate p) {
  using P = arith::CmpFPredicate;
  return p == P::OEQ || p == P::ONE || p == P::OLT || p == P::OLE || p == P::OGT || p == P::OGE;
}

bool isSignedOrEquality(arith::CmpIPredicate p) {
  using P = arith::CmpIPredicate;
  return p == P::eq || p == P::ne || p == P::slt || p == P::sle || p == P::sgt || p == P::sge;
}

} // namespace

ScoreFunctionLayout scoreFunctionLayout(Region &body) {
  ScoreFunctionLayout layout;
  if (body.empty())
    return layout;
  Block &block = body.front();
  unsigned indices = 0;
  while (1 + indices < block.getNumArguments() && block.getArgument(1 + indices).getType().isIndex())
    ++indices;
  layout.indexArgs = indices;
  layout.tensorArgs = block.getNumArguments() > 1 + indices ? block.getNumArguments() - 1 - indices : 0;
  return layout;
}

bool isScoreFunctionOperandType(Type type) {
  auto tensor = llvm::dyn_cast<RankedTensorType>(type);
  return tensor && tensor.getRank() >= 1 && tensor.getRank() <= 4 &&
         (tensor.getElementType().isF32() || tensor.getElementType().isSignlessInteger(32));
}

LogicalResult verifyScoreFunction(Operation *owner, Region &body, TypeRange operandTypes, StringRef what) {
  if (!body.hasOneBlock())
    return owner->emitOpError() << what << " must have exactly one block";
  Block &block = body.front();
  if (block.getNumArguments() == 0 || !block.getArgument(0).getType().isF32())
    return owner->emitOpError() << what << " takes the score (f32) first, then 2 index arguments (query, key) or 4 "
                                << "(batch, head, query, key), then one tensor per operand";
  ScoreFunctionLayout layout = scoreFunctionLayout(body);
  if (layout.indexArgs != 2 && layout.indexArgs != 4)
    return owner->emitOpError() << what << " takes the score (f32), then 2 index arguments (query, key) or 4 "
                                << "(batch, head, query, key); got " << layout.indexArgs << " index arguments";
  if (layout.tensorArgs != operandTypes.size())
    return owner->emitOpError() << what << " takes one tensor argument per operand after its indices: "
                                << operandTypes.size() << " operand(s), " << layout.tensorArgs
                                << " argument(s) after the indices";
  for (auto [i, type] : llvm::enumerate(operandTypes)) {
    Type argType = block.getArgument(1 + layout.indexArgs + i).getType();
    if (!isScoreFunctionOperandType(type))
      return owner->emitOpError() << what << " operand " << i
                                  << " must be a ranked tensor of f32 or i32 (rank 1 to 4), got " << type;
    if (argType != type)
      return owner->emitOpError() << what << " argument " << 1 + layout.indexArgs + i << " has type " << argType
                                  << ", but its operand is " << type;
  }
  for (Operation &op : block.without_terminator()) {
    auto fail = [&](const Twine &why) { return op.emitOpError() << "is not allowed in " << what << ": " << why; };
    auto allTypes = [](TypeRange types, auto pred) { return llvm::all_of(types, pred); };
    auto isF32 = [](Type t) { return t.isF32(); };
    auto isIndex = [](Type t) { return t.isIndex(); };
    if (auto extract = llvm::dyn_cast<tensor::ExtractOp>(op)) {
      auto arg = llvm::dyn_cast<BlockArgument>(extract.getTensor());
      if (!arg || arg.getOwner() != &block || arg.getArgNumber() < 1 + layout.indexArgs)
        return fail("tensor.extract reads one of the operands (a tensor argument of the body)");
      if (!allTypes(extract.getIndices().getTypes(), isIndex))
        return fail("positions are index values");
      continue;
    }
    if (auto cast = llvm::dyn_cast<arith::IndexCastOp>(op)) {
      bool elementToIndex = cast.getType().isIndex() && cast.getIn().getType().isSignlessInteger(32) &&
                            llvm::isa_and_nonnull<tensor::ExtractOp>(cast.getIn().getDefiningOp());
      bool indexToInt = cast.getIn().getType().isIndex() &&
                        (cast.getType().isSignlessInteger(32) || cast.getType().isSignlessInteger(64));
      if (!elementToIndex && !indexToInt)
        return fail("arith.index_cast converts an i32 element read by tensor.extract to index, or an index to i32 / "
                    "i64 for arith.sitofp");
      continue;
    }
    if (auto convert = llvm::dyn_cast<arith::SIToFPOp>(op)) {
      // An i32 element converts directly too: the canonicalizer folds index_cast(index_cast(e : i32 to index) to
      // i32) back to the element e, so a region the user wrote through an index reaches the passes in this form.
      auto cast = convert.getIn().getDefiningOp<arith::IndexCastOp>();
      bool fromIndex = cast && cast.getIn().getType().isIndex();
      bool fromElement = convert.getIn().getType().isSignlessInteger(32) &&
                         llvm::isa_and_nonnull<tensor::ExtractOp>(convert.getIn().getDefiningOp());
      if (!convert.getType().isF32() || !(fromIndex || fromElement))
        return fail("arith.sitofp converts an index (through arith.index_cast to i32 / i64), or an i32 element read "
                    "by tensor.extract, to f32");
      continue;
    }
    if (auto constant = llvm::dyn_cast<arith::ConstantOp>(op)) {
      Type t = constant.getType();
      if (!(t.isF32() && llvm::isa<FloatAttr>(constant.getValue())) &&
          !(isIndexOrBool(t) && llvm::isa<IntegerAttr>(constant.getValue())))
        return fail("constants are f32, index or i1");
      continue;
    }
    if (auto select = llvm::dyn_cast<arith::SelectOp>(op)) {
      Type t = select.getType();
      if (!select.getCondition().getType().isSignlessInteger(1) || !(t.isF32() || isIndexOrBool(t)))
        return fail("select chooses between f32, index or i1 values by an i1");
      continue;
    }
    if (auto cmp = llvm::dyn_cast<arith::CmpFOp>(op)) {
      if (!allTypes(op.getOperandTypes(), isF32))
        return fail("cmpf compares f32 values");
      if (!isOrderedPredicate(cmp.getPredicate()))
        return fail("cmpf predicates are ordered (oeq, one, olt, ole, ogt, oge)");
      continue;
    }
    if (isFloatOp(op)) {
      if (!allTypes(op.getOperandTypes(), isF32) || !allTypes(op.getResultTypes(), isF32))
        return fail("floating-point ops take and give f32");
      continue;
    }
    if (isIntegerOp(op)) {
      if (!allTypes(op.getOperandTypes(), isIndexOrBool) || !allTypes(op.getResultTypes(), isIndexOrBool))
        return fail("integer ops take index or i1 (an i32 element: arith.index_cast it to index first)");
      bool logical = llvm::isa<arith::AndIOp, arith::OrIOp, arith::XOrIOp>(op);
      if (logical != op.getResult(0).getType().isSignlessInteger(1) && !llvm::isa<arith::CmpIOp>(op))
        return fail("andi, ori and xori combine i1; arithmetic is on index");
      if (!logical && !allTypes(op.getOperandTypes(), isIndex))
        return fail("integer arithmetic and comparisons take index operands");
      if (auto cmp = llvm::dyn_cast<arith::CmpIOp>(op); cmp && !isSignedOrEquality(cmp.getPredicate()))
        return fail("comparisons are signed (eq, ne, slt, sle, sgt, sge)");
      continue;
    }
    return fail("the body is f32 arithmetic (arith addf, subf, mulf, divf, negf, maximumf, minimumf, cmpf, select, "
                "sitofp; math tanh, exp, log, sqrt, absf), index arithmetic as in a mask modifier, and reads of its "
                "operands (tensor.extract)");
  }
  Operation *terminator = block.empty() ? nullptr : &block.back();
  if (!terminator || terminator->getNumOperands() != 1 || !terminator->getOperand(0).getType().isF32())
    return owner->emitOpError() << what << " must end by yielding one f32 (the modified score)";
  return success();
}

ScoreValue evaluateScore(Region &body, double s, const IndexPoint &point, IndexOperandShape shape,
                         ScoreOperandReader read) {
  Block &block = body.front();
  ScoreFunctionLayout layout = scoreFunctionLayout(body);
  llvm::SmallDenseMap<Value, int64_t, 16> ints;
  llvm::SmallDenseMap<Value, ScoreValue, 16> reals;
  reals[block.getArgument(0)] = {s, 1.0};
  const int64_t four[] = {point.b, point.h, point.q, point.k};
  for (unsigned i = 0; i < layout.indexArgs; ++i)
    ints[block.getArgument(1 + i)] = four[layout.hasBatchAndHead() ? i : i + 2];
  SmallVector<int64_t, 3> operands;
  for (Operation &op : block.without_terminator()) {
    Value result = op.getResult(0);
    if (auto extract = llvm::dyn_cast<tensor::ExtractOp>(op)) {
      unsigned operand = llvm::cast<BlockArgument>(extract.getTensor()).getArgNumber() - 1 - layout.indexArgs;
      SmallVector<int64_t, 4> position, sizes = shape(operand);
      bool inside = sizes.size() == extract.getIndices().size();
      for (auto [index, size] : llvm::zip(extract.getIndices(), sizes)) {
        int64_t p = ints.lookup(index);
        inside = inside && p >= 0 && p < size;
        position.push_back(p);
      }
      double element = inside ? read(operand, position) : 0.0;
      if (result.getType().isF32())
        reals[result] = {element, 0.0};
      else
        ints[result] = static_cast<int64_t>(element);
      continue;
    }
    if (auto convert = llvm::dyn_cast<arith::SIToFPOp>(op)) {
      int64_t v = ints.lookup(convert.getIn());
      if (convert.getIn().getType().isSignlessInteger(32))
        v = static_cast<int32_t>(static_cast<uint32_t>(v)); // truncation, as arith.index_cast to i32
      reals[result] = {static_cast<double>(v), 0.0};
      continue;
    }
    if (auto constant = llvm::dyn_cast<arith::ConstantOp>(op); constant && constant.getType().isF32()) {
      reals[result] = {llvm::cast<FloatAttr>(constant.getValue()).getValueAsDouble(), 0.0};
      continue;
    }
    if (auto select = llvm::dyn_cast<arith::SelectOp>(op); select && select.getType().isF32()) {
      reals[result] = ints.lookup(select.getCondition()) ? reals.lookup(select.getTrueValue())
                                                         : reals.lookup(select.getFalseValue());
      continue;
    }
    if (auto cmp = llvm::dyn_cast<arith::CmpFOp>(op)) {
      double a = reals.lookup(cmp.getLhs()).value, b = reals.lookup(cmp.getRhs()).value;
      using P = arith::CmpFPredicate;
      bool ordered = !std::isnan(a) && !std::isnan(b), r = false;
      switch (cmp.getPredicate()) {
      case P::OEQ: r = a == b; break;
      case P::ONE: r = a != b; break;
      case P::OLT: r = a < b; break;
      case P::OLE: r = a <= b; break;
      case P::OGT: r = a > b; break;
      case P::OGE: r = a >= b; break;
      default: break;
      }
      ints[result] = ordered && r;
      continue;
    }
    if (isFloatOp(op)) {
      ScoreValue a = reals.lookup(op.getOperand(0)), b = op.getNumOperands() > 1 ? reals.lookup(op.getOperand(1))
                                                                                : ScoreValue{};
      ScoreValue r = llvm::TypeSwitch<Operation *, ScoreValue>(&op)
                         .Case([&](arith::AddFOp) { return ScoreValue{a.value + b.value, a.derivative + b.derivative}; })
                         .Case([&](arith::SubFOp) { return ScoreValue{a.value - b.value, a.derivative - b.derivative}; })
                         .Case([&](arith::MulFOp) {
                           return ScoreValue{a.value * b.value, a.derivative * b.value + a.value * b.derivative};
                         })
                         .Case([&](arith::DivFOp) {
                           double q = a.value / b.value;
                           return ScoreValue{q, (a.derivative - q * b.derivative) / b.value};
                         })
                         .Case([&](arith::NegFOp) { return ScoreValue{-a.value, -a.derivative}; })
                         // (a NaN propagates, as arith.maximumf's; a tie takes a's derivative)
                         .Case([&](arith::MaximumFOp) { return a.value >= b.value || std::isnan(a.value) ? a : b; })
                         .Case([&](arith::MinimumFOp) { return a.value <= b.value || std::isnan(a.value) ? a : b; })
                         .Case([&](math::TanhOp) {
                           double t = std::tanh(a.value);
                           return ScoreValue{t, (1.0 - t * t) * a.derivative};
                         })
                         .Case([&](math::ExpOp) {
                           double e = std::exp(a.value);
                           return ScoreValue{e, e * a.derivative};
                         })
                         .Case([&](math::LogOp) { return ScoreValue{std::log(a.value), a.derivative / a.value}; })
                         .Case([&](math::SqrtOp) {
                           double r = std::sqrt(a.value);
                           return ScoreValue{r, a.derivative / (2.0 * r)};
                         })
                         .Case([&](math::AbsFOp) {
                           return ScoreValue{std::fabs(a.value), a.value < 0 ? -a.derivative : a.derivative};
                         })
                         .Default([](Operation *) { return ScoreValue{}; });
      reals[result] = r;
      continue;
    }
    operands.clear();
    for (Value operand : op.getOperands())
      operands.push_back(ints.lookup(operand));
    ints[result] = evaluateIndexOp(&op, operands);
  }
  return reals.lookup(block.getTerminator()->getOperand(0));
}

bool scoreDerivativeIsOne(Region &body) {
  // Each f32 value's derivative in s, symbolically: 0, 1 or anything else.
  enum class D { Zero, One, Other };
  Block &block = body.front();
  llvm::DenseMap<Value, D> d;
  d[block.getArgument(0)] = D::One;
  auto of = [&](Value v) { auto it = d.find(v); return it == d.end() ? D::Zero : it->second; };
  for (Operation &op : block.without_terminator()) {
    if (op.getNumResults() != 1 || !op.getResult(0).getType().isF32())
      continue;
    D a = op.getNumOperands() > 0 ? of(op.getOperand(0)) : D::Zero;
    D b = op.getNumOperands() > 1 ? of(op.getOperand(1)) : D::Zero;
    D r = llvm::TypeSwitch<Operation *, D>(&op)
              .Case([&](arith::AddFOp) { return a == D::Zero ? b : b == D::Zero ? a : D::Other; })
              .Case([&](arith::SubFOp) { return b == D::Zero ? a : D::Other; })
              .Case([&](arith::SelectOp select) {
                D t = of(select.getTrueValue()), f = of(select.getFalseValue());
                return t == f ? t : D::Other;
              })
              .Case<arith::ConstantOp, arith::SIToFPOp, tensor::ExtractOp>([](Operation *) { return D::Zero; })
              .Default([&](Operation *) { return a == D::Zero && b == D::Zero ? D::Zero : D::Other; });
    d[op.getResult(0)] = r;
  }
  return of(block.getTerminator()->getOperand(0)) == D::One;
}

bool scoreBiasSeparable(Region &body) {
  // Per value: which of s, q, k it depends on; for a value free of s, whether it is a sum of a part of q and a part
  // of k (apart: b, h and the tensors are constants of a (batch, head) tile); for one of s, whether it is s plus
  // such a value (sPlus); and whether it may be infinite for finite scale factors (mayBeInfinite: an f32 read that is
  // added, not a factor, or what exp, log, a division or a square root make). The kernels take the query part as
  // T(q, k') - T(q', k'), which an infinite term turns into NaN (a key bias of -inf at k') or whose -inf (a query bias
  // masking its row) they would not see in the row's softmax: such modifiers keep the element-wise form.
  //
  // Each value also carries a bound on its magnitude, so that arithmetic that could wrap (an integer past 64 bits, a
  // narrowing cast that truncates) or overflow f32 to infinity is not taken for a sum: A(q) + B(k) computed with a
  // wrap is not A(q) + B(k). Indices and i32 reads are below 2^31; an f32 tensor's values are not known here, so its
  // read counts as a factor of 1 (its own infinities are mayBeInfinite's, and data whose products overflow f32 is
  // the caller's, as in any kernel).
  enum : unsigned { kS = 1, kQ = 2, kK = 4 };
  struct Form {
    unsigned deps = 0;
    bool apart = true, sPlus = false, mayBeInfinite = false;
    double magnitude = 0;
  };
  constexpr double kIndexMagnitude = 2147483648.0;  // 2^31
  constexpr double kExactInteger = 4611686018427387904.0;  // 2^62: sums and products below it do not wrap 64 bits
  constexpr double kFiniteFloat = 1e38;  // below FLT_MAX (3.4e38) with room for one more sum
  Block &block = body.front();
  ScoreFunctionLayout layout = scoreFunctionLayout(body);
  llvm::DenseMap<Value, Form> form;
  form[block.getArgument(0)] = {kS, false, true, false, 0};
  for (unsigned i = 0; i < layout.indexArgs; ++i)
    form[block.getArgument(1 + i)] = {0, true, false, false, kIndexMagnitude};
  form[block.getArgument(layout.indexArgument(2))] = {kQ, true, false, false, kIndexMagnitude};
  form[block.getArgument(layout.indexArgument(3))] = {kK, true, false, false, kIndexMagnitude};
  auto of = [&](Value v) { return form.lookup(v); };
  auto isConstant = [&](Value v) { return of(v).deps == 0; };
  auto apart = [&](Value v) { return !(of(v).deps & kS) && of(v).apart; };
  for (Operation &op : block.without_terminator()) {
    if (op.getNumResults() != 1)
      return false;
    Form r;
    for (Value operand : op.getOperands()) {
      r.deps |= of(operand).deps;
      r.mayBeInfinite |= of(operand).mayBeInfinite;
    }
    Value a = op.getNumOperands() > 0 ? op.getOperand(0) : Value(), b = op.getNumOperands() > 1 ? op.getOperand(1) : Value();
    double ma = a ? of(a).magnitude : 0, mb = b ? of(b).magnitude : 0;
    bool narrowing = false;  // a cast to fewer than 64 bits of a value that may not fit them
    r.magnitude = llvm::TypeSwitch<Operation *, double>(&op)
                      .Case([&](arith::ConstantOp c) -> double {
                        if (auto f = dyn_cast<FloatAttr>(c.getValue()))
                          return std::fabs(f.getValueAsDouble());
                        if (auto i = dyn_cast<IntegerAttr>(c.getValue()))
                          return std::fabs(static_cast<double>(i.getValue().getSExtValue()));
                        return HUGE_VAL;
                      })
                      .Case([&](tensor::ExtractOp read) {
                        return read.getType().isF32() ? 1.0 : kIndexMagnitude;  // (an i32 read: below 2^31)
                      })
                      .Case<arith::AddIOp, arith::SubIOp, arith::AddFOp, arith::SubFOp>(
                          [&](Operation *) { return ma + mb; })
                      .Case<arith::MulIOp, arith::MulFOp>([&](Operation *) { return ma * mb; })
                      .Case<arith::DivSIOp, arith::FloorDivSIOp, arith::CeilDivSIOp, arith::RemSIOp>(
                          [&](Operation *) { return ma + 1; })
                      .Case<arith::MinSIOp, arith::MaxSIOp, arith::MinimumFOp, arith::MaximumFOp>(
                          [&](Operation *) { return std::max(ma, mb); })
                      .Case([&](arith::SelectOp select) {
                        return std::max(of(select.getTrueValue()).magnitude, of(select.getFalseValue()).magnitude);
                      })
                      .Case<arith::NegFOp, arith::SIToFPOp, arith::ExtSIOp, math::AbsFOp>(
                          [&](Operation *) { return ma; })
                      .Case([&](arith::IndexCastOp cast) {
                        unsigned width = cast.getType().isIndex() ? 64 : cast.getType().getIntOrFloatBitWidth();
                        double fits = width >= 64 ? HUGE_VAL : std::ldexp(1.0, static_cast<int>(width) - 1);
                        narrowing = ma >= fits;
                        return narrowing ? fits : ma;
                      })
                      .Default([](Operation *) { return HUGE_VAL; });
    if (auto read = dyn_cast<tensor::ExtractOp>(op))
      r.mayBeInfinite = read.getType().isF32();
    else if (auto constant = dyn_cast<arith::ConstantOp>(op))
      r.mayBeInfinite = isa<FloatAttr>(constant.getValue()) &&
                        !std::isfinite(cast<FloatAttr>(constant.getValue()).getValueAsDouble());
    else if (isa<arith::MulFOp>(op) && (isConstant(a) || isConstant(b)))
      // A factor of the tile (ALiBi's slope): infinite only where the modifier is NaN anyway (∞ · 0 at k = q).
      r.mayBeInfinite = isConstant(a) ? of(b).mayBeInfinite : of(a).mayBeInfinite;
    else if (isa<math::ExpOp, math::LogOp, math::SqrtOp, arith::DivFOp>(op))
      r.mayBeInfinite = true;
    // An f32 value that may pass FLT_MAX for finite inputs (s + (-1e38) · q) is infinite at some rows.
    if (op.getResult(0).getType().isF32() && !(r.deps & kS) && r.magnitude >= kFiniteFloat)
      r.mayBeInfinite = true;
    if (r.deps & kS) {
      r.apart = false;
      r.sPlus = llvm::TypeSwitch<Operation *, bool>(&op)
                    .Case([&](arith::AddFOp) { return (of(a).sPlus && apart(b)) || (apart(a) && of(b).sPlus); })
                    .Case([&](arith::SubFOp) { return of(a).sPlus && apart(b); })
                    .Default([](Operation *) { return false; });
    } else if ((r.deps & (kQ | kK)) == (kQ | kK)) {
      r.apart = llvm::TypeSwitch<Operation *, bool>(&op)
                    .Case<arith::AddIOp, arith::SubIOp, arith::AddFOp, arith::SubFOp>(
                        [&](Operation *) { return apart(a) && apart(b); })
                    .Case<arith::MulIOp, arith::MulFOp>(
                        [&](Operation *) { return (isConstant(a) && apart(b)) || (isConstant(b) && apart(a)); })
                    .Case<arith::NegFOp, arith::SIToFPOp, arith::IndexCastOp, arith::ExtSIOp>(
                        [&](Operation *) { return apart(a); })
                    .Default([](Operation *) { return false; });
      // A sum that may have wrapped (past 64 bits, or truncated by a narrowing cast) is not the sum of its parts.
      if (narrowing || (!op.getResult(0).getType().isF32() && r.magnitude >= kExactInteger))
        r.apart = false;
    }
    form[op.getResult(0)] = r;
  }
  Form result = of(block.getTerminator()->getOperand(0));
  return result.sPlus && !result.mayBeInfinite;
}

std::string printScoreProgram(Region &body, bool oneWord) {
  Block &block = body.front();
  llvm::DenseMap<Value, std::string> names;
  ScoreFunctionLayout layout = scoreFunctionLayout(body);
  static const char *kIndexNames4[] = {"b", "h", "q", "k"}, *kIndexNames2[] = {"q", "k"};
  names[block.getArgument(0)] = "s";
  for (unsigned i = 0; i < layout.indexArgs; ++i)
    names[block.getArgument(1 + i)] = layout.hasBatchAndHead() ? kIndexNames4[i] : kIndexNames2[i];
  for (unsigned i = 0; i < layout.tensorArgs; ++i)
    names[block.getArgument(1 + layout.indexArgs + i)] = "t" + std::to_string(i);
  const char *space = oneWord ? "," : " ";
  std::string text;
  unsigned next = 0;
  for (Operation &op : block.without_terminator()) {
    Value result = op.getResult(0);
    if (auto c = llvm::dyn_cast<arith::ConstantOp>(op)) {
      if (auto f = llvm::dyn_cast<FloatAttr>(c.getValue())) {
        char buffer[64];
        std::snprintf(buffer, sizeof(buffer), "f:%a", static_cast<double>(static_cast<float>(f.getValueAsDouble())));
        names[result] = buffer;
      } else {
        auto value = llvm::cast<IntegerAttr>(c.getValue());
        names[result] = c.getType().isSignlessInteger(1) ? (value.getValue().getBoolValue() ? "true" : "false")
                                                         : std::to_string(value.getInt());
      }
      continue;
    }
    if (auto cast = llvm::dyn_cast<arith::IndexCastOp>(op)) {
      // index -> i32 truncates: a separate op; an element read as i32 is a 64-bit value already
      if (!cast.getType().isSignlessInteger(32)) {
        names[result] = names.lookup(cast.getIn());
        continue;
      }
    }
    using F = arith::CmpFPredicate;
    std::string opName =
        llvm::TypeSwitch<Operation *, std::string>(&op)
            .Case([](arith::IndexCastOp) { return "trunc32"; })
            .Case([](arith::SIToFPOp) { return "itof"; })
            .Case([](arith::AddFOp) { return "addf"; })
            .Case([](arith::SubFOp) { return "subf"; })
            .Case([](arith::MulFOp) { return "mulf"; })
            .Case([](arith::DivFOp) { return "divf"; })
            .Case([](arith::NegFOp) { return "negf"; })
            .Case([](arith::MaximumFOp) { return "maxf"; })
            .Case([](arith::MinimumFOp) { return "minf"; })
            .Case([](math::TanhOp) { return "tanh"; })
            .Case([](math::ExpOp) { return "exp"; })
            .Case([](math::LogOp) { return "log"; })
            .Case([](math::SqrtOp) { return "sqrt"; })
            .Case([](math::AbsFOp) { return "absf"; })
            .Case([](arith::CmpFOp cmp) -> std::string {
              switch (cmp.getPredicate()) {
              case F::OEQ: return "eqf";
              case F::ONE: return "nef";
              case F::OLT: return "ltf";
              case F::OLE: return "lef";
              case F::OGT: return "gtf";
              case F::OGE: return "gef";
              default: return "?";
              }
            })
            .Default([](Operation *op) { return indexOpName(op); });
    std::string n = "v" + std::to_string(next++);
    text += n + space + "=" + space + opName;
    for (Value operand : op.getOperands())
      text += space + names.lookup(operand);
    text += ";";
    if (!oneWord)
      text += " ";
    names[result] = n;
  }
  return text + "yield" + space + names.lookup(block.getTerminator()->getOperand(0));
}

} // namespace flashc
