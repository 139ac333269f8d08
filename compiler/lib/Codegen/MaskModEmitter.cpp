//===- MaskModEmitter.cpp - tile.mask_mod -> a C++ struct -----------------===//
#include "MaskModEmitter.h"

#include "IndexBounds.h"
#include "Names.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;

namespace flashc {

std::string maskModTypeName(FlatSymbolRefAttr symbol) { return cppIdentifier(symbol.getValue()); }

FailureOr<IndexOpSpelling> indexOpSpelling(Operation *op) {
  using Spelling = IndexOpSpelling;
  using P = arith::CmpIPredicate;
  return llvm::TypeSwitch<Operation *, FailureOr<Spelling>>(op)
      .Case([](arith::AddIOp) { return Spelling{"add", "+"}; })
      .Case([](arith::SubIOp) { return Spelling{"sub", "-"}; })
      .Case([](arith::MulIOp) { return Spelling{"mul", "*"}; })
      .Case([](arith::DivSIOp) { return Spelling{"div", "/"}; })
      .Case([](arith::FloorDivSIOp) { return Spelling{"floor_div", "floordiv", true}; })
      .Case([](arith::CeilDivSIOp) { return Spelling{"ceil_div", "ceildiv", true}; })
      .Case([](arith::RemSIOp) { return Spelling{"rem", "%"}; })
      .Case([](arith::MinSIOp) { return Spelling{"min", "min", true}; })
      .Case([](arith::MaxSIOp) { return Spelling{"max", "max", true}; })
      .Case([](arith::AndIOp) { return Spelling{"and_", "&&"}; })
      .Case([](arith::OrIOp) { return Spelling{"or_", "||"}; })
      .Case([](arith::XOrIOp) { return Spelling{"xor_", "!="}; })
      .Case([](arith::CmpIOp c) -> FailureOr<Spelling> {
        switch (c.getPredicate()) {
        case P::eq: return Spelling{"eq", "=="};
        case P::ne: return Spelling{"ne", "!="};
        case P::slt: return Spelling{"lt", "<"};
        case P::sle: return Spelling{"le", "<="};
        case P::sgt: return Spelling{"gt", ">"};
        case P::sge: return Spelling{"ge", ">="};
        default: return failure();
        }
      })
      .Default([](Operation *) { return failure(); });
}

namespace {

LogicalResult printStruct(tile::MaskModOp maskMod, llvm::raw_ostream &out) {
  Block &body = maskMod.getBody().front();
  llvm::DenseMap<Value, std::string> code, math; // C++ operand; infix formula
  static const char *kIndices[] = {"b", "h", "q", "k"};
  for (unsigned i = 0; i < 4; ++i)
    code[body.getArgument(i)] = math[body.getArgument(i)] = kIndices[i];
  unsigned tensors = body.getNumArguments() - 4;
  for (unsigned i = 0; i < tensors; ++i)
    code[body.getArgument(4 + i)] = "env.tensor[" + std::to_string(i) + "]",
    math[body.getArgument(4 + i)] = "t" + std::to_string(i);
  std::string lines;
  llvm::raw_string_ostream os(lines);
  unsigned next = 0;
  // The formula is only for the struct's comment, which shows its first 400 characters: each value's is kept to
  // kFormulaChars + 1 (a longer one still reads as cut), or a value used twice a step doubled it: 2^n characters.
  constexpr size_t kFormulaChars = 400;
  auto setMath = [&](Value v, std::string text) {
    if (text.size() > kFormulaChars + 1)
      text.resize(kFormulaChars + 1);
    math[v] = std::move(text);
  };
  for (Operation &op : body.without_terminator()) {
    Value result = op.getResult(0);
    if (auto cast = dyn_cast<arith::IndexCastOp>(op)) {  // elements are read as 64-bit values already
      code[result] = code[cast.getIn()];
      setMath(result, math[cast.getIn()]);
      continue;
    }
    if (auto extract = dyn_cast<tensor::ExtractOp>(op)) {
      std::string name = "v" + std::to_string(next++);
      std::string positions, formula;
      for (Value index : extract.getIndices()) {
        positions += ", " + code[index];
        formula += (formula.empty() ? "" : ", ") + math[index];
      }
      os << "    const auto " << name << " = D::read(" << code[extract.getTensor()] << positions << ");\n";
      setMath(result, math[extract.getTensor()] + "[" + formula + "]");
      code[result] = name;
      continue;
    }
    if (auto constant = dyn_cast<arith::ConstantOp>(op)) {
      auto value = cast<IntegerAttr>(constant.getValue());
      bool isBool = result.getType().isSignlessInteger(1);
      int64_t v = value.getInt();
      std::string text = isBool ? (value.getValue().getBoolValue() ? "true" : "false")
                         : v == INT64_MIN ? "(-9223372036854775807LL - 1)"
                                          : std::to_string(v) + (v < INT32_MIN || v > INT32_MAX ? "LL" : "");
      code[result] = (isBool ? "D::boolean(" : "D::constant(") + text + ")";
      setMath(result, text);
      continue;
    }
    std::string name = "v" + std::to_string(next++);
    if (auto select = dyn_cast<arith::SelectOp>(op)) {
      os << "    const auto " << name << " = D::select(" << code[select.getCondition()] << ", "
         << code[select.getTrueValue()] << ", " << code[select.getFalseValue()] << ");\n";
      setMath(result, "(" + math[select.getCondition()] + " ? " + math[select.getTrueValue()] + " : " +
                     math[select.getFalseValue()] + ")");
      code[result] = name;
      continue;
    }
    FailureOr<IndexOpSpelling> s = indexOpSpelling(&op);
    if (failed(s))
      return op.emitError("CUDA emitter: a mask modifier's body holds an op the device library does not "
                          "evaluate (the verifier should have refused it)");
    Value a = op.getOperand(0), b = op.getOperand(1);
    os << "    const auto " << name << " = D::" << s->function << "(" << code[a] << ", " << code[b] << ");\n";
    setMath(result, s->call ? std::string(s->infix) + "(" + math[a] + ", " + math[b] + ")"
                           : "(" + math[a] + " " + s->infix + " " + math[b] + ")");
    code[result] = name;
  }
  Value visible = body.getTerminator()->getOperand(0);
  std::string name = maskModTypeName(FlatSymbolRefAttr::get(maskMod.getSymNameAttr()));
  std::string guard = "FLASHC_MASK_MOD_" + name;
  std::string formula = math[visible];
  out << "#ifndef " << guard << "\n#define " << guard << "\n";
  out << "// tile.mask_mod @" << maskMod.getSymName() << ": key k visible from query q (batch b, head h) when\n";
  out << "//   " << (formula.size() <= kFormulaChars ? formula : formula.substr(0, kFormulaChars) + " ...") << "\n";
  out << "struct " << name << " {\n";
  out << "  static constexpr int kTensors = " << tensors << ";\n";
  out << "  static constexpr bool kUsesBatch = " << (body.getArgument(0).use_empty() ? "false" : "true")
      << ", kUsesHead = " << (body.getArgument(1).use_empty() ? "false" : "true") << ";\n";
  // The element mask's arithmetic: 32-bit where every value provably fits an int (the same results). H200, S = 16k,
  // D = 128 (session 20 call 7): the window as a modifier 0.381 -> 0.352 ms forward, 1.059 -> 1.028 backward. Reads
  // take 32-bit offsets too (the manifest's `index32` on a modifier's tensors).
  SmallVector<BlockArgument> indices(body.getArguments().take_front(4));
  bool narrow = IndexBounds(body, indices).allFitInt32();
  out << "  using ElementDomain = flashc::device::" << (narrow ? "ExactIndex32" : "ExactIndex") << ";\n";
  out << "  template <class D>\n";
  out << "  static FLASHC_MASK_FN typename D::Bool visible(const flashc::device::MaskEnv& env, typename D::Int b,\n"
      << "                                                 typename D::Int h, typename D::Int q, typename D::Int k) {\n";
  os.flush();
  out << lines;
  out << "    return " << code[visible] << ";\n";
  out << "  }\n};\n#endif\n\n";
  return success();
}

} // namespace

LogicalResult printMaskMods(tile::KernelOp kernel, llvm::raw_ostream &out) {
  llvm::SetVector<StringRef> used;
  if (auto spec = dyn_cast_or_null<tile::AttentionSpecAttr>(kernel.getSpecAttr()); spec && spec.getMaskMod())
    used.insert(spec.getMaskMod().getValue());
  kernel.walk([&](tile::MaskOp mask) {
    if (auto sym = mask.getMaskModAttr())
      used.insert(sym.getValue());
  });
  for (StringRef name : used) {
    auto sym = FlatSymbolRefAttr::get(kernel.getContext(), name);
    auto maskMod = SymbolTable::lookupNearestSymbolFrom<tile::MaskModOp>(kernel, sym);
    if (!maskMod)
      return kernel.emitError() << "CUDA emitter: @" << kernel.getSymName() << " names mask modifier " << sym
                                << ", which the module does not hold (tile.mask_mod)";
    if (failed(printStruct(maskMod, out)))
      return failure();
  }
  return success();
}

} // namespace flashc
