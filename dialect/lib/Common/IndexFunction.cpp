//===- IndexFunction.cpp - index functions: verifier and evaluator -------===//
#include "flashc/Dialect/Common/IndexFunction.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
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

bool isIndexFunctionOperandType(Type type) {
  auto tensor = llvm::dyn_cast<RankedTensorType>(type);
  return tensor && tensor.getRank() >= 1 && tensor.getRank() <= 4 && tensor.getElementType().isSignlessInteger(32);
}

IndexFunctionLayout indexFunctionLayout(Region &body) {
  IndexFunctionLayout layout;
  if (body.empty())
    return layout;
  Block &block = body.front();
  unsigned indices = 0;
  while (indices < block.getNumArguments() && block.getArgument(indices).getType().isIndex())
    ++indices;
  layout.indexArgs = indices;
  layout.tensorArgs = block.getNumArguments() - indices;
  return layout;
}

SmallVector<IndexArgumentRead> indexArgumentReads(Region &body, unsigned firstIndex) {
  SmallVector<IndexArgumentRead> reads;
  if (body.empty())
    return reads;
  Block &block = body.front();
  unsigned firstTensor = firstIndex;
  while (firstTensor < block.getNumArguments() && block.getArgument(firstTensor).getType().isIndex())
    ++firstTensor;
  unsigned indexArgs = firstTensor - firstIndex;
  if (indexArgs != 2 && indexArgs != 4)
    return reads;
  body.walk([&](tensor::ExtractOp extract) {
    auto table = llvm::dyn_cast<BlockArgument>(extract.getTensor());
    if (!table || table.getOwner() != &block || table.getArgNumber() < firstTensor)
      return;
    for (auto [dim, position] : llvm::enumerate(extract.getIndices())) {
      auto arg = llvm::dyn_cast<BlockArgument>(position);
      if (!arg || arg.getOwner() != &block || arg.getArgNumber() < firstIndex || arg.getArgNumber() >= firstTensor)
        continue;
      // (a two-index body's arguments are q and k)
      unsigned which = arg.getArgNumber() - firstIndex + (indexArgs == 4 ? 0 : 2);
      reads.push_back({extract, table.getArgNumber() - firstTensor, static_cast<unsigned>(dim),
                       static_cast<ModifierIndex>(which)});
    }
  });
  return reads;
}

std::string describeShortTableRead(const IndexArgumentRead &read, StringRef what, StringRef operandText, int64_t size,
                                   int64_t range) {
  static const char *const names[4] = {"batch b", "query head h", "query index q", "key index k"};
  const char *name = names[static_cast<unsigned>(read.index)];
  return ("reads " + what + " operand #" + Twine(read.operand) + " " + operandText + " at the " + name +
          " along dimension " + Twine(read.dim) + ": it holds " + Twine(size) + " entries, the " + name +
          " ranges over " + Twine(range))
      .str();
}

LogicalResult verifyIndexFunction(Operation *owner, Region &body, TypeRange operandTypes, StringRef what) {
  if (!body.hasOneBlock())
    return owner->emitOpError() << what << " must have exactly one block";
  Block &block = body.front();
  IndexFunctionLayout layout = indexFunctionLayout(body);
  if (layout.indexArgs != 2 && layout.indexArgs != 4)
    return owner->emitOpError() << what << " takes 2 index arguments (query, key) or 4 (batch, head, query, key), "
                                << "then one tensor per operand; got " << layout.indexArgs << " index arguments";
  if (layout.tensorArgs != operandTypes.size())
    return owner->emitOpError() << what << " takes one tensor argument per operand after its indices: "
                                << operandTypes.size() << " operand(s), " << layout.tensorArgs
                                << " argument(s) after the indices";
  for (auto [i, type] : llvm::enumerate(operandTypes)) {
    Type argType = block.getArgument(layout.indexArgs + i).getType();
    if (!isIndexFunctionOperandType(type))
      return owner->emitOpError() << what << " operand " << i << " must be a ranked tensor of i32 (rank 1 to 4), got "
                                  << type;
    if (argType != type)
      return owner->emitOpError() << what << " argument " << layout.indexArgs + i << " has type " << argType
                                  << ", but its operand is " << type;
  }
  for (Operation &op : block.without_terminator()) {
    auto fail = [&](const Twine &why) {
      return op.emitOpError() << "is not allowed in " << what << ": " << why;
    };
    if (auto extract = llvm::dyn_cast<tensor::ExtractOp>(op)) {
      auto arg = llvm::dyn_cast<BlockArgument>(extract.getTensor());
      if (!arg || arg.getOwner() != &block || arg.getArgNumber() < layout.indexArgs)
        return fail("tensor.extract reads one of the operands (a tensor argument of the body)");
      if (!llvm::all_of(extract.getIndices().getTypes(), [](Type t) { return t.isIndex(); }))
        return fail("positions are index values");
      continue;
    }
    if (auto cast = llvm::dyn_cast<arith::IndexCastOp>(op)) {
      if (!cast.getType().isIndex() || !llvm::isa_and_nonnull<tensor::ExtractOp>(cast.getIn().getDefiningOp()))
        return fail("arith.index_cast converts an element read by tensor.extract to index");
      continue;
    }
    if (!llvm::isa<arith::ConstantOp, arith::AddIOp, arith::SubIOp, arith::MulIOp, arith::DivSIOp,
                   arith::CeilDivSIOp, arith::FloorDivSIOp, arith::RemSIOp, arith::MinSIOp, arith::MaxSIOp,
                   arith::CmpIOp, arith::AndIOp, arith::OrIOp, arith::XOrIOp, arith::SelectOp>(op))
      return fail("the body is integer arithmetic on index and i1 (arith constant, addi, subi, muli, divsi, "
                  "ceildivsi, floordivsi, remsi, minsi, maxsi, cmpi, andi, ori, xori, select) and reads of its "
                  "operands (tensor.extract, then arith.index_cast to index)");
    for (Type t : op.getOperandTypes())
      if (!isIndexOrBool(t))
        return fail("operands must be index or i1 (an element read from an operand: arith.index_cast it first)");
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
      .Case([&](arith::IndexCastOp) { return v[0]; })
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

std::string indexOpName(Operation *op) {
  using P = arith::CmpIPredicate;
  return llvm::TypeSwitch<Operation *, std::string>(op)
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
                             .Case([](tensor::ExtractOp) { return "read"; })
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
}

std::string printIndexProgram(Region &body, bool oneWord) {
  Block &block = body.front();
  llvm::DenseMap<Value, std::string> names;
  IndexFunctionLayout layout = indexFunctionLayout(body);
  static const char *kIndexNames4[] = {"b", "h", "q", "k"}, *kIndexNames2[] = {"q", "k"};
  for (unsigned i = 0; i < layout.indexArgs; ++i)
    names[block.getArgument(i)] = layout.hasBatchAndHead() ? kIndexNames4[i] : kIndexNames2[i];
  for (unsigned i = 0; i < layout.tensorArgs; ++i)
    names[block.getArgument(layout.indexArgs + i)] = "t" + std::to_string(i);
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
    if (auto cast = llvm::dyn_cast<arith::IndexCastOp>(op)) {
      names[result] = name(cast.getIn());  // elements are read as 64-bit values already
      continue;
    }
    std::string opName = indexOpName(&op);
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

bool evaluateIndexPredicate(Region &body, const IndexPoint &point, IndexOperandShape shape,
                            IndexOperandReader read) {
  Block &block = body.front();
  IndexFunctionLayout layout = indexFunctionLayout(body);
  llvm::SmallDenseMap<Value, int64_t, 16> values;
  const int64_t four[] = {point.b, point.h, point.q, point.k};
  for (unsigned i = 0; i < layout.indexArgs; ++i)
    values[block.getArgument(i)] = four[layout.hasBatchAndHead() ? i : i + 2];
  SmallVector<int64_t, 3> operands;
  for (Operation &op : block.without_terminator()) {
    if (auto extract = llvm::dyn_cast<tensor::ExtractOp>(op)) {
      unsigned operand = llvm::cast<BlockArgument>(extract.getTensor()).getArgNumber() - layout.indexArgs;
      SmallVector<int64_t, 4> position, sizes = shape(operand);
      bool inside = sizes.size() == extract.getIndices().size();
      for (auto [index, size] : llvm::zip(extract.getIndices(), sizes)) {
        int64_t p = values.lookup(index);
        inside = inside && p >= 0 && p < size;
        position.push_back(p);
      }
      values[extract.getResult()] = inside ? read(operand, position) : 0;
      continue;
    }
    operands.clear();
    for (Value operand : op.getOperands())
      operands.push_back(values.lookup(operand));
    values[op.getResult(0)] = evaluateIndexOp(&op, operands);
  }
  return values.lookup(block.getTerminator()->getOperand(0)) != 0;
}

} // namespace flashc
