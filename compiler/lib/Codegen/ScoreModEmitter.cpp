//===- ScoreModEmitter.cpp - tile.score_mod -> a C++ struct ---------------===//
#include "ScoreModEmitter.h"

#include "IndexBounds.h"
#include "MaskModEmitter.h"
#include "Names.h"

#include "flashc/Dialect/Common/ScoreFunction.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/TypeSwitch.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdio>
#include <optional>

using namespace mlir;

namespace flashc {

std::string scoreModTypeName(FlatSymbolRefAttr symbol) { return cppIdentifier(symbol.getValue()); }

namespace {

std::string floatCode(double v) {
  float f = static_cast<float>(v);
  if (std::isnan(f))
    return "__int_as_float(0x7fc00000)";  // (NVRTC has no NAN macro)
  if (std::isinf(f))
    return f > 0 ? "INFINITY" : "(-INFINITY)";
  char buffer[48];
  std::snprintf(buffer, sizeof(buffer), "float(%.9e)", static_cast<double>(f));
  return buffer;
}

/// An f32 value's code and its derivative's ("" when it is 0).
struct Dual {
  std::string value, derivative;
};

class StructPrinter {
public:
  StructPrinter(llvm::raw_ostream &os, const IndexBounds &bounds) : os(os), bounds(bounds) {}

  LogicalResult print(Block &body) {
    reals[body.getArgument(0)] = {"s", "1.f"};
    static const char *kIndices[] = {"b", "h", "q", "k"};
    for (unsigned i = 0; i < 4; ++i)
      code[body.getArgument(1 + i)] = kIndices[i];
    for (unsigned i = 5; i < body.getNumArguments(); ++i)
      code[body.getArgument(i)] = "env.tensor[" + std::to_string(i - 5) + "]";
    for (Operation &op : body.without_terminator())
      if (failed(printOp(op)))
        return failure();
    Dual result = reals[body.getTerminator()->getOperand(0)];
    os << "    ds = " << (result.derivative.empty() ? "0.f" : result.derivative) << ";\n";
    os << "    return " << result.value << ";\n";
    return success();
  }

private:
  llvm::raw_ostream &os;
  llvm::DenseMap<Value, std::string> code; // index, i1 and i32 values
  llvm::DenseMap<Value, Dual> reals;       // f32 values
  const IndexBounds &bounds;
  unsigned next = 0;

  std::string fresh() { return "v" + std::to_string(next++); }

  /// Declares the f32 value `value` (and its derivative, when not 0).
  void defineReal(Value result, const std::string &value, const std::string &derivative) {
    std::string name = fresh();
    os << "    const float " << name << " = " << value << ";\n";
    std::string d;
    if (!derivative.empty()) {
      d = "d" + name.substr(1);
      os << "    const float " << d << " = " << derivative << ";\n";
    }
    reals[result] = {name, d};
  }

  static std::string sum(const std::string &a, const std::string &b, const char *op) {
    if (a.empty() && b.empty())
      return "";
    if (b.empty())
      return a;
    if (a.empty())
      return std::string(op) == "-" ? "-(" + b + ")" : b;
    return "(" + a + " " + op + " " + b + ")";
  }
  static std::string product(const std::string &d, const std::string &factor) {
    return d.empty() ? "" : "(" + d + " * " + factor + ")";
  }

  LogicalResult printOp(Operation &op) {
    Value result = op.getResult(0);
    if (auto extract = dyn_cast<tensor::ExtractOp>(op)) {
      std::string positions;
      for (Value index : extract.getIndices())
        positions += ", " + code[index];
      std::string tensor = code[extract.getTensor()];
      if (result.getType().isF32()) {
        defineReal(result, "flashc::device::read_f32(" + tensor + positions + ")", "");
      } else {
        std::string name = fresh();
        os << "    const auto " << name << " = D::read(" << tensor << positions << ");\n";
        code[result] = name;
      }
      return success();
    }
    if (auto cast = dyn_cast<arith::IndexCastOp>(op)) { // 64-bit values throughout; i32 truncates at sitofp
      code[result] = code[cast.getIn()];
      return success();
    }
    if (auto convert = dyn_cast<arith::SIToFPOp>(op)) {
      std::string in = code[convert.getIn()];
      // From 32 bits where the value fits an int (I2F.S32: from 64 bits the conversion costs several times
      // more, on the pipe the softmax's exponentials use; ALiBi's forward at D = 64 took 1.3x longer).
      if (convert.getIn().getType().isSignlessInteger(32) || bounds.fitsInt32(convert.getIn()))
        in = "static_cast<int>(" + in + ")";
      defineReal(result, "static_cast<float>(" + in + ")", "");
      return success();
    }
    if (auto constant = dyn_cast<arith::ConstantOp>(op)) {
      if (auto f = dyn_cast<FloatAttr>(constant.getValue())) {
        reals[result] = {floatCode(f.getValueAsDouble()), ""};
        return success();
      }
      auto value = cast<IntegerAttr>(constant.getValue());
      int64_t v = value.getInt();
      code[result] = result.getType().isSignlessInteger(1)
                         ? std::string("D::boolean(") + (value.getValue().getBoolValue() ? "true" : "false") + ")"
                         : "D::constant(" +
                               (v == INT64_MIN ? std::string("(-9223372036854775807LL - 1)")
                                               : std::to_string(v) + (v < INT32_MIN || v > INT32_MAX ? "LL" : "")) +
                               ")";
      return success();
    }
    if (auto select = dyn_cast<arith::SelectOp>(op)) {
      std::string c = code[select.getCondition()];
      if (result.getType().isF32())
        return pick(result, c, reals[select.getTrueValue()], reals[select.getFalseValue()]);
      std::string name = fresh();
      os << "    const auto " << name << " = D::select(" << c << ", " << code[select.getTrueValue()] << ", "
         << code[select.getFalseValue()] << ");\n";
      code[result] = name;
      return success();
    }
    if (auto cmp = dyn_cast<arith::CmpFOp>(op)) {
      using P = arith::CmpFPredicate;
      const char *infix = nullptr;
      switch (cmp.getPredicate()) {
      case P::OEQ: infix = "=="; break;
      case P::ONE: infix = "!="; break; // (ordered: false on NaN, as below)
      case P::OLT: infix = "<"; break;
      case P::OLE: infix = "<="; break;
      case P::OGT: infix = ">"; break;
      case P::OGE: infix = ">="; break;
      default: return op.emitError("CUDA emitter: a score modifier compares with an unordered predicate");
      }
      Dual a = reals[cmp.getLhs()], b = reals[cmp.getRhs()];
      std::string name = fresh();
      std::string test = "(" + a.value + " " + infix + " " + b.value + ")";
      if (cmp.getPredicate() == P::ONE) // ordered not-equal: neither is NaN
        test = "(" + test + " && " + a.value + " == " + a.value + " && " + b.value + " == " + b.value + ")";
      os << "    const bool " << name << " = " << test << ";\n";
      code[result] = name;
      return success();
    }
    if (op.getNumResults() == 1 && result.getType().isF32()) {
      Dual a = reals[op.getOperand(0)];
      Dual b = op.getNumOperands() > 1 ? reals[op.getOperand(1)] : Dual{};
      std::string name = "v" + std::to_string(next); // the value's own name, for derivatives that reuse it
      return llvm::TypeSwitch<Operation *, LogicalResult>(&op)
          .Case([&](arith::AddFOp) {
            defineReal(result, a.value + " + " + b.value, sum(a.derivative, b.derivative, "+"));
            return success();
          })
          .Case([&](arith::SubFOp) {
            defineReal(result, a.value + " - " + b.value, sum(a.derivative, b.derivative, "-"));
            return success();
          })
          .Case([&](arith::MulFOp) {
            defineReal(result, a.value + " * " + b.value,
                       sum(product(a.derivative, b.value), product(b.derivative, a.value), "+"));
            return success();
          })
          .Case([&](arith::DivFOp) {
            std::string d = sum(a.derivative, product(b.derivative, name), "-");
            defineReal(result, a.value + " / " + b.value, d.empty() ? "" : d + " / " + b.value);
            return success();
          })
          .Case([&](arith::NegFOp) {
            defineReal(result, "-" + a.value, a.derivative.empty() ? "" : "-" + a.derivative);
            return success();
          })
          .Case([&](arith::MaximumFOp) { return choose(result, a, b, ">="); })
          .Case([&](arith::MinimumFOp) { return choose(result, a, b, "<="); })
          .Case([&](math::TanhOp) {
            defineReal(result, "tanhf(" + a.value + ")", product(a.derivative, "(1.f - " + name + " * " + name + ")"));
            return success();
          })
          .Case([&](math::ExpOp) {
            defineReal(result, "expf(" + a.value + ")", product(a.derivative, name));
            return success();
          })
          .Case([&](math::LogOp) {
            defineReal(result, "logf(" + a.value + ")", a.derivative.empty() ? "" : a.derivative + " / " + a.value);
            return success();
          })
          .Case([&](math::SqrtOp) {
            defineReal(result, "sqrtf(" + a.value + ")",
                       a.derivative.empty() ? "" : a.derivative + " / (2.f * " + name + ")");
            return success();
          })
          .Case([&](math::AbsFOp) {
            defineReal(result, "fabsf(" + a.value + ")",
                       a.derivative.empty() ? "" : "(" + a.value + " < 0.f ? -" + a.derivative + " : " + a.derivative + ")");
            return success();
          })
          .Default([&](Operation *) {
            return op.emitError("CUDA emitter: a score modifier's body holds an f32 op the device library does not "
                                "evaluate (the verifier should have refused it)");
          });
    }
    FailureOr<IndexOpSpelling> s = indexOpSpelling(&op);
    if (failed(s))
      return op.emitError("CUDA emitter: a score modifier's body holds an op the device library does not evaluate "
                          "(the verifier should have refused it)");
    std::string name = fresh();
    os << "    const auto " << name << " = D::" << s->function << "(" << code[op.getOperand(0)] << ", "
       << code[op.getOperand(1)] << ");\n";
    code[result] = name;
    return success();
  }

  /// `condition` ? a : b, with the chosen side's derivative.
  LogicalResult pick(Value result, const std::string &condition, const Dual &a, const Dual &b) {
    std::string d = a.derivative.empty() && b.derivative.empty()
                        ? ""
                        : "(" + condition + " ? " + (a.derivative.empty() ? "0.f" : a.derivative) + " : " +
                              (b.derivative.empty() ? "0.f" : b.derivative) + ")";
    defineReal(result, "(" + condition + " ? " + a.value + " : " + b.value + ")", d);
    return success();
  }
  /// maximumf / minimumf: `test` picks a; a NaN propagates, as arith.maximumf's; a tie takes a's derivative.
  LogicalResult choose(Value result, const Dual &a, const Dual &b, const char *test) {
    return pick(result, "(" + a.value + " " + test + " " + b.value + " || " + a.value + " != " + a.value + ")", a, b);
  }
};

LogicalResult printStruct(tile::ScoreModOp scoreMod, llvm::raw_ostream &out) {
  Block &body = scoreMod.getBody().front();
  std::string lines;
  llvm::raw_string_ostream os(lines);
  SmallVector<BlockArgument> indices(body.getArguments().slice(1, 4));
  IndexBounds bounds(body, indices);
  if (failed(StructPrinter(os, bounds).print(body)))
    return failure();
  os.flush();
  std::string name = scoreModTypeName(FlatSymbolRefAttr::get(scoreMod.getSymNameAttr()));
  std::string guard = "FLASHC_SCORE_MOD_" + name;
  std::string program = printScoreProgram(scoreMod.getBody());
  out << "#ifndef " << guard << "\n#define " << guard << "\n";
  out << "// tile.score_mod @" << scoreMod.getSymName() << ": the score of (b, h, q, k) the softmax sees, from s:\n";
  out << "//   " << (program.size() <= 400 ? program : program.substr(0, 400) + " ...") << "\n";
  out << "struct " << name << " {\n";
  out << "  static constexpr int kTensors = " << body.getNumArguments() - 5 << ";\n";
  out << "  static constexpr bool kDerivativeOne = " << (scoreDerivativeIsOne(scoreMod.getBody()) ? "true" : "false")
      << ";  // s plus terms free of s: dS passes through\n";
  out << "  static constexpr bool kSeparable = " << (scoreBiasSeparable(scoreMod.getBody()) ? "true" : "false")
      << ";  // of the form s + A(b, h, q) + B(b, h, k) (kernels: B per key, A to lse)\n";
  out << "  // The modified score; ds: its derivative with respect to s.\n";
  out << "  static FLASHC_MASK_FN float score(const flashc::device::MaskEnv& env, float s, long long b, long long h,\n"
      << "                                    long long q, long long k, float& ds) {\n";
  // 32-bit index arithmetic where every value provably fits an int (the same results as 64-bit).
  out << "    using D = flashc::device::" << (bounds.allFitInt32() ? "ExactIndex32" : "ExactIndex") << ";\n";
  out << "    (void)env, (void)b, (void)h, (void)q, (void)k;\n";
  out << lines;
  out << "  }\n};\n#endif\n\n";
  return success();
}

} // namespace

LogicalResult printScoreMods(tile::KernelOp kernel, llvm::raw_ostream &out) {
  llvm::SetVector<StringRef> used;
  if (auto spec = dyn_cast_or_null<tile::AttentionSpecAttr>(kernel.getSpecAttr()); spec && spec.getScoreMod())
    used.insert(spec.getScoreMod().getValue());
  kernel.walk([&](Operation *op) {
    if (auto score = dyn_cast<tile::ScoreOp>(op))
      used.insert(score.getScoreMod());
    else if (auto grad = dyn_cast<tile::ScoreGradOp>(op))
      used.insert(grad.getScoreMod());
  });
  for (StringRef name : used) {
    auto sym = FlatSymbolRefAttr::get(kernel.getContext(), name);
    auto scoreMod = SymbolTable::lookupNearestSymbolFrom<tile::ScoreModOp>(kernel, sym);
    if (!scoreMod)
      return kernel.emitError() << "CUDA emitter: @" << kernel.getSymName() << " names score modifier " << sym
                                << ", which the module does not hold (tile.score_mod)";
    if (failed(printStruct(scoreMod, out)))
      return failure();
  }
  return success();
}

} // namespace flashc
