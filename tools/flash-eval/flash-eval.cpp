//===- flash-eval.cpp - run flash graphs on the CPU in float64 ------------===//
//
//   flash-eval FILE [--split-input-file] [--check-pipeline | --compare=A,B]
//
// Evaluates every function of FILE (flash graph ops) on seeded random inputs
// in [-1, 1], dynamic dimensions set to --dynamic-size.
//   default            print each result's shape and sum
//   --check-pipeline   run the flashc graph pipeline (fusion) and check that
//                      every function still computes the same values
//   --compare=A,B      check that functions A and B compute the same values
// Exit status 1 on a mismatch or an error.
//
//===----------------------------------------------------------------------===//
#include "flashc/Compiler/GraphEvaluator.h"
#include "flashc/Compiler/Pipeline.h"
#include "flashc/Dialect/Flash/IR/FlashOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Support/ToolUtilities.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>
#include <random>

using namespace mlir;
using namespace mlir::flash;
namespace cl = llvm::cl;

// The tool's own options: --help lists these, not the LLVM libraries' hundreds.
static cl::OptionCategory toolOptions("flash-eval options");
static cl::opt<std::string> inputFilename(cl::Positional, cl::cat(toolOptions), cl::desc("<input>"),
                                          cl::Required);
static cl::opt<bool> splitInputFile("split-input-file", cl::cat(toolOptions),
                                    cl::desc("process each '// -----' chunk on its own"));
static cl::opt<bool> checkPipeline(cl::cat(toolOptions),
    "check-pipeline",
    cl::desc("check that the flashc graph pipeline preserves every function's values"));
static cl::opt<std::string> compareFunctions(cl::cat(toolOptions),
    "compare", cl::desc("A,B: check that functions A and B compute the same values"));
static cl::opt<int64_t> dynamicSize("dynamic-size", cl::cat(toolOptions), cl::init(3),
                                    cl::desc("size of every dynamic dimension"));
static cl::opt<unsigned> seed("seed", cl::cat(toolOptions), cl::init(1), cl::desc("random seed"));
// flash.attention keeps its scale as f32: a float64 scale in the unfused
// graph moves by up to 6e-8 relative, hence the default.
static cl::opt<double> tolerance(cl::cat(toolOptions),
    "tolerance", cl::init(1e-6),
    cl::desc("allowed |difference| relative to max(1, largest |value|)"));

namespace {

FailureOr<SmallVector<ReferenceTensor>> randomArguments(func::FuncOp function) {
  std::mt19937_64 generator(seed);
  std::uniform_real_distribution<double> uniform(-1.0, 1.0);
  SmallVector<ReferenceTensor> arguments;
  for (Type type : function.getArgumentTypes()) {
    auto tensorType = dyn_cast<RankedTensorType>(type);
    if (!tensorType)
      return function.emitError() << "flash-eval needs ranked tensor arguments, got "
                                  << type;
    std::string why;
    FailureOr<std::vector<int64_t>> shape = evaluatedShape(tensorType.getShape(), dynamicSize, why);
    if (failed(shape))
      return function.emitError() << why;
    ReferenceTensor tensor(*shape);
    for (double &value : tensor.data)
      value = uniform(generator);
    arguments.push_back(std::move(tensor));
  }
  return arguments;
}

FailureOr<SmallVector<ReferenceTensor>> evaluate(func::FuncOp function) {
  FailureOr<SmallVector<ReferenceTensor>> arguments = randomArguments(function);
  if (failed(arguments))
    return failure();
  return evaluateGraph(function, *arguments);
}

/// Largest |a - b| (equal infinities and NaN against NaN agree), or +inf when
/// shapes differ or only one side is infinite or NaN.
double maxDifference(ArrayRef<ReferenceTensor> expected,
                     ArrayRef<ReferenceTensor> actual, double &magnitude) {
  magnitude = 1.0;
  if (expected.size() != actual.size())
    return INFINITY;
  double worst = 0.0;
  for (auto [a, b] : llvm::zip(expected, actual)) {
    if (a.shape != b.shape)
      return INFINITY;
    for (size_t i = 0; i < a.data.size(); ++i) {
      double x = a.data[i], y = b.data[i];
      if (std::isnan(x) && std::isnan(y))
        continue; // the same undefined value on both sides
      if (std::isnan(x) || std::isnan(y))
        return INFINITY;
      if (x == y)
        continue; // includes equal infinities
      if (std::isinf(x) || std::isinf(y))
        return INFINITY;
      magnitude = std::max(magnitude, std::fabs(x));
      worst = std::max(worst, std::fabs(x - y));
    }
  }
  return worst;
}

bool reportComparison(llvm::raw_ostream &os, StringRef label,
                      ArrayRef<ReferenceTensor> expected,
                      ArrayRef<ReferenceTensor> actual) {
  double magnitude;
  double difference = maxDifference(expected, actual, magnitude);
  bool match = difference <= tolerance * magnitude;
  os << label << expected.size() << " result(s) "
     << (match ? "match" : "MISMATCH") << " (max abs diff ";
  os << llvm::format("%.3g", difference) << ")\n";
  return match;
}

LogicalResult processModule(ModuleOp module, llvm::raw_ostream &os) {
  SmallVector<func::FuncOp> functions(module.getOps<func::FuncOp>());
  if (!compareFunctions.empty()) {
    auto [first, second] = StringRef(compareFunctions).split(',');
    auto a = module.lookupSymbol<func::FuncOp>(first.trim().ltrim('@'));
    auto b = module.lookupSymbol<func::FuncOp>(second.trim().ltrim('@'));
    if (!a || !b) {
      module.emitError() << "--compare=" << compareFunctions
                         << ": no such function(s)";
      return failure();
    }
    if (a.getFunctionType().getInputs() != b.getFunctionType().getInputs())
      return b.emitError() << "--compare needs functions with the same argument types";
    FailureOr<SmallVector<ReferenceTensor>> resultA = evaluate(a);
    FailureOr<SmallVector<ReferenceTensor>> resultB = evaluate(b);
    if (failed(resultA) || failed(resultB))
      return failure();
    std::string label = "@" + a.getName().str() + " vs @" + b.getName().str() + ": ";
    return success(reportComparison(os, label, *resultA, *resultB));
  }

  SmallVector<std::pair<std::string, SmallVector<ReferenceTensor>>> before;
  for (func::FuncOp function : functions) {
    FailureOr<SmallVector<ReferenceTensor>> results = evaluate(function);
    if (failed(results))
      return failure();
    before.emplace_back(function.getName().str(), std::move(*results));
  }
  if (!checkPipeline) {
    for (auto &[name, results] : before)
      for (auto [index, tensor] : llvm::enumerate(results)) {
        double sum = 0.0;
        for (double value : tensor.data)
          sum += value;
        os << "@" << name << " result #" << index << " [";
        llvm::interleaveComma(tensor.shape, os);
        os << "] sum " << llvm::format("%.6g", sum) << "\n";
      }
    return success();
  }

  PassManager pm(module->getContext());
  buildGraphPipeline(pm, PipelineOptions());
  if (failed(pm.run(module)))
    return failure();
  bool allMatch = true;
  for (auto &[name, expected] : before) {
    auto function = module.lookupSymbol<func::FuncOp>(name);
    FailureOr<SmallVector<ReferenceTensor>> after = evaluate(function);
    if (failed(after))
      return failure();
    int attentions = 0, ffns = 0, moes = 0;
    function.walk([&](AttentionOp) { ++attentions; });
    function.walk([&](FfnOp) { ++ffns; });
    function.walk([&](MoeOp) { ++moes; });
    std::string label = "@" + name + ": fused " + std::to_string(attentions) + " attention, " +
                        std::to_string(ffns) + " ffn, " + std::to_string(moes) + " moe; ";
    allMatch &= reportComparison(os, label, expected, *after);
  }
  return success(allMatch);
}

} // namespace

int main(int argc, char **argv) {
  llvm::InitLLVM initLLVM(argc, argv);
  cl::HideUnrelatedOptions(toolOptions);
  cl::ParseCommandLineOptions(argc, argv, "flash graph evaluator (float64)\n");
  if (dynamicSize < 1 || dynamicSize > kMaxEvaluatedDynamicSize) {
    llvm::errs() << "flash-eval: --dynamic-size must be in [1, " << kMaxEvaluatedDynamicSize << "], got " << dynamicSize
                 << "\n";
    return 2;
  }
  if (!std::isfinite(tolerance.getValue()) || tolerance < 0) {
    llvm::errs() << "flash-eval: --tolerance must be a finite number >= 0, got " << tolerance << "\n";
    return 2;
  }

  DialectRegistry registry;
  registry.insert<FlashDialect, func::FuncDialect, tensor::TensorDialect, arith::ArithDialect, math::MathDialect>();
  MLIRContext context(registry);
  context.printOpOnDiagnostic(false);  // (the message, not a dump of the module, as flashc)

  std::string error;
  std::unique_ptr<llvm::MemoryBuffer> input = openInputFile(inputFilename, &error);
  if (!input) {
    llvm::errs() << "flash-eval: error: " << error << "\n";
    return 1;
  }
  auto processChunk = [&](std::unique_ptr<llvm::MemoryBuffer> chunk,
                          llvm::raw_ostream &os) -> LogicalResult {
    llvm::SourceMgr sourceMgr;
    sourceMgr.AddNewSourceBuffer(std::move(chunk), llvm::SMLoc());
    SourceMgrDiagnosticHandler diagnostics(sourceMgr, &context);
    OwningOpRef<ModuleOp> module = parseSourceFile<ModuleOp>(sourceMgr, &context);
    if (!module)
      return failure();
    return processModule(*module, os);
  };
  LogicalResult result = splitAndProcessBuffer(
      std::move(input), processChunk, llvm::outs(),
      splitInputFile ? kDefaultSplitMarker : "", "");
  return failed(result) ? 1 : 0;
}
