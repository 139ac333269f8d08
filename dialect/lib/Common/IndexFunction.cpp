//===- IndexFunction.cpp - index functions: verifier and evaluator -------===//
#include "flashc/Dialect/Common/IndexFunction.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/TypeSwitch.h"

#include <algorithm>

using namespace mlir;

namespace flashc {

namespace {

bool isIndexOrBool(Type t) { return t.isIndex() || t.isSignlessInteger(1); }

bool isSignedOrEquality(arith::CmpIPredicate p) {
  using P = arith::CmpIPredicate;
  return p == P::eq || p == P::ne || p == P::slt || p == P::sle || p == P::sgt || p == P::sge;
}

// Wrapping arithmetic on 64-bit values (no undefined behaviour).
int64_t wrap(uint64_t v) { return static_cast<int64_t>(v); }

int64_t floorDiv(int64_t a, int64_t b) {
  if (b == 0) return 0;
  if (b == -1) return wrap(0 - static_cast<uint64_t>(a));
  int64_t q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

int64_t ceilDiv(int64_t a, int64_t b) {
  if (b == 0) return 0;
  if (b == -1) return wrap(0 - static_cast<uint64_t>(a));
  int64_t q = a / b;
  return (a % b != 0 && ((a < 0) == (b < 0))) ? q + 1 : q;
}

} // namespace

LogicalResult verifyIndexFunction(Operation *owner, Region &body, unsigned numArgs, StringRef what) {
  if (!body.hasOneBlock())
    return owner->emitOpError() << what << " must have exactly one block";
  Block &block = body.front();
  if (block.getNumArguments() != numArgs)
    return owner->emitOpError() << what << " takes " << numArgs << " index arguments (query, key), got "
                                << block.getNumArguments();
  for (BlockArgument arg : block.getArguments())
    if (!arg.getType().isIndex())
      return owner->emitOpError() << what << " arguments must be of type index, got " << arg.getType();
  for (Operation &op : block.without_terminator()) {
    auto fail = [&](const Twine &why) {
      return op.emitOpError() << "is not allowed in " << what << ": " << why;
    };
    if (!llvm::isa<arith::ConstantOp, arith::AddIOp, arith::SubIOp, arith::MulIOp, arith::DivSIOp,
                   arith::CeilDivSIOp, arith::FloorDivSIOp, arith::RemSIOp, arith::MinSIOp, arith::MaxSIOp,
                   arith::CmpIOp, arith::AndIOp, arith::OrIOp, arith::XOrIOp, arith::SelectOp>(op))
      return fail("the body is integer arithmetic on index and i1 (arith constant, addi, subi, muli, divsi, "
                  "ceildivsi, floordivsi, remsi, minsi, maxsi, cmpi, andi, ori, xori, select)");
    for (Type t : op.getOperandTypes())
      if (!isIndexOrBool(t))
        return fail("operands must be index or i1");
    for (Type t : op.getResultTypes())
      if (!isIndexOrBool(t))
        return fail("results must be index or i1");
    bool logical = llvm::isa<arith::AndIOp, arith::OrIOp, arith::XOrIOp, arith::SelectOp, arith::ConstantOp>(op);
    if (!logical && !llvm::all_of(op.getOperandTypes(), [](Type t) { return t.isIndex(); }))
      return fail("arithmetic and comparisons take index operands (andi, ori, xori combine i1)");
    if (auto cmp = llvm::dyn_cast<arith::CmpIOp>(op); cmp && !isSignedOrEquality(cmp.getPredicate()))
      return fail("comparisons are signed (eq, ne, slt, sle, sgt, sge)");
    if (llvm::isa<arith::AndIOp, arith::OrIOp, arith::XOrIOp>(op) && !op.getResult(0).getType().isSignlessInteger(1))
      return fail("andi, ori and xori take i1 (logical and, or, xor)");
    if (auto constant = llvm::dyn_cast<arith::ConstantOp>(op); constant && !llvm::isa<IntegerAttr>(constant.getValue()))
      return fail("constants are integers");
  }
  Operation *terminator = block.empty() ? nullptr : &block.back();
  if (!terminator || terminator->getNumOperands() != 1 || !terminator->getOperand(0).getType().isSignlessInteger(1))
    return owner->emitOpError() << what << " must end by yielding one i1 (true: the key is visible)";
  return success();
}

int64_t evaluateIndexOp(Operation *op, ArrayRef<int64_t> v) {
  auto u = [&](unsigned i) { return static_cast<uint64_t>(v[i]); };
  return llvm::TypeSwitch<Operation *, int64_t>(op)
      .Case([&](arith::ConstantOp c) {
        auto value = llvm::cast<IntegerAttr>(c.getValue());
        return c.getType().isSignlessInteger(1) ? int64_t(value.getValue().getBoolValue()) : value.getInt();
      })
      .Case([&](arith::AddIOp) { return wrap(u(0) + u(1)); })
      .Case([&](arith::SubIOp) { return wrap(u(0) - u(1)); })
      .Case([&](arith::MulIOp) { return wrap(u(0) * u(1)); })
      .Case([&](arith::DivSIOp) {
        if (v[1] == 0) return int64_t(0);
        if (v[1] == -1) return wrap(0 - u(0));
        return v[0] / v[1];
      })
      .Case([&](arith::RemSIOp) { return v[1] == 0 || v[1] == -1 ? int64_t(0) : v[0] % v[1]; })
      .Case([&](arith::FloorDivSIOp) { return floorDiv(v[0], v[1]); })
      .Case([&](arith::CeilDivSIOp) { return ceilDiv(v[0], v[1]); })
      .Case([&](arith::MinSIOp) { return std::min(v[0], v[1]); })
      .Case([&](arith::MaxSIOp) { return std::max(v[0], v[1]); })
      .Case([&](arith::AndIOp) { return int64_t(v[0] && v[1]); })
      .Case([&](arith::OrIOp) { return int64_t(v[0] || v[1]); })
      .Case([&](arith::XOrIOp) { return int64_t(bool(v[0]) != bool(v[1])); })
      .Case([&](arith::SelectOp) { return v[0] ? v[1] : v[2]; })
      .Case([&](arith::CmpIOp c) {
        using P = arith::CmpIPredicate;
        switch (c.getPredicate()) {
        case P::eq: return int64_t(v[0] == v[1]);
        case P::ne: return int64_t(v[0] != v[1]);
        case P::slt: return int64_t(v[0] < v[1]);
        case P::sle: return int64_t(v[0] <= v[1]);
        case P::sgt: return int64_t(v[0] > v[1]);
        case P::sge: return int64_t(v[0] >= v[1]);
        default: return int64_t(0); // refused by the verifier
        }
      })
      .Default([](Operation *) { return int64_t(0); });
}

std::string printIndexProgram(Region &body, bool oneWord) {
  Block &block = body.front();
  llvm::DenseMap<Value, std::string> names;
  names[block.getArgument(0)] = "q";
  names[block.getArgument(1)] = "k";
  std::string text;
  const char *space = oneWord ? "," : " ";
  auto name = [&](Value v) { return names.lookup(v); };
  unsigned next = 0;
  for (Operation &op : block.without_terminator()) {
    Value result = op.getResult(0);
    if (auto c = llvm::dyn_cast<arith::ConstantOp>(op)) {
      auto value = llvm::cast<IntegerAttr>(c.getValue());
      names[result] = c.getType().isSignlessInteger(1) ? (value.getValue().getBoolValue() ? "true" : "false")
                                                       : std::to_string(value.getInt());
      continue;
    }
    using P = arith::CmpIPredicate;
    std::string opName = llvm::TypeSwitch<Operation *, std::string>(&op)
                             .Case([](arith::AddIOp) { return "add"; })
                             .Case([](arith::SubIOp) { return "sub"; })
                             .Case([](arith::MulIOp) { return "mul"; })
                             .Case([](arith::DivSIOp) { return "div"; })
                             .Case([](arith::FloorDivSIOp) { return "floordiv"; })
                             .Case([](arith::CeilDivSIOp) { return "ceildiv"; })
                             .Case([](arith::RemSIOp) { return "rem"; })
                             .Case([](arith::MinSIOp) { return "min"; })
                             .Case([](arith::MaxSIOp) { return "max"; })
                             .Case([](arith::AndIOp) { return "and"; })
                             .Case([](arith::OrIOp) { return "or"; })
                             .Case([](arith::XOrIOp) { return "xor"; })
                             .Case([](arith::SelectOp) { return "select"; })
                             .Case([](arith::CmpIOp cmp) -> std::string {
                               switch (cmp.getPredicate()) {
                               case P::eq: return "eq";
                               case P::ne: return "ne";
                               case P::slt: return "lt";
                               case P::sle: return "le";
                               case P::sgt: return "gt";
                               case P::sge: return "ge";
                               default: return "?";
                               }
                             })
                             .Default([](Operation *) { return "?"; });
    std::string n = "v" + std::to_string(next++);
    text += n + space + "=" + space + opName;
    for (Value operand : op.getOperands())
      text += space + name(operand);
    text += ";";
    if (!oneWord)
      text += " ";
    names[result] = n;
  }
  return text + "yield" + space + name(block.getTerminator()->getOperand(0));
}

bool evaluateIndexPredicate(Region &body, ArrayRef<int64_t> args) {
  Block &block = body.front();
  llvm::SmallDenseMap<Value, int64_t, 16> values;
  for (auto [arg, value] : llvm::zip(block.getArguments(), args))
    values[arg] = value;
  SmallVector<int64_t, 3> operands;
  for (Operation &op : block.without_terminator()) {
    operands.clear();
    for (Value operand : op.getOperands())
      operands.push_back(values.lookup(operand));
    values[op.getResult(0)] = evaluateIndexOp(&op, operands);
  }
  return values.lookup(block.getTerminator()->getOperand(0)) != 0;
}

} // namespace flashc
