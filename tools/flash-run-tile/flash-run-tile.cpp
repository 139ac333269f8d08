//===- flash-run-tile.cpp - check tile programs against float64 -----------===//
//
//   flash-run-tile TILE.mlir --run-program=NAME   (hand-written tile IR, no reference)
//   flash-run-tile SPEC.mlir [--backward] [--deterministic] [--backward-form=auto|rows|transposed]
//                  [--tolerance=1e-5]
//                  [--target=sm_90a] [--block-m=N --block-n=N --block-k=N
//                  --warps=N --stages=N] [--ffn-plan=auto|fused|two-kernel]
//                  [--dynamic-size=N] [--seed=N]
//
// For every function of SPEC holding one fused op (after the graph pipeline:
// fusion): compiles it with flash-generate-backward (with --backward),
// flash-tile and flash-plan-memory, runs the tile programs on the CPU tile
// executor on seeded random inputs (outputs poisoned with NaN first), and
// compares with a naive float64 reference: the flash graph itself for the
// forward (materialised softmax, GraphEvaluator) and the textbook gradients
// for the backward. Prints, per output, the max relative error
//   max_i |tile_i - ref_i| / max_i |ref_i|
// and exits 1 when one exceeds --tolerance (or is NaN), 2 on other errors.
//
//===----------------------------------------------------------------------===//
#include "flashc/Compiler/GraphEvaluator.h"
#include "flashc/Compiler/Pipeline.h"
#include "flashc/Compiler/Target.h"
#include "flashc/Compiler/TileExecutor.h"
#include "flashc/Dialect/Flash/IR/FlashOps.h"
#include "flashc/Dialect/Tile/IR/TileOps.h"
#include "flashc/reference/varlen.h"
#include "flashc/reference/attention.h"
#include "flashc/reference/ffn.h"
#include "flashc/reference/moe.h"
#include "flashc/runtime/Expr.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cmath>
#include <deque>
#include <limits>
#include <map>
#include <numeric>
#include <random>

using namespace mlir;
using flashc::ElementKind;
using flashc::HostTensor;
using mlir::flash::ReferenceTensor;
namespace ref = flashc::reference;
namespace cl = llvm::cl;

// The tool's own options: --help lists these, not the LLVM libraries' hundreds.
static cl::OptionCategory toolOptions("flash-run-tile options");
static cl::opt<std::string> inputFilename(cl::cat(toolOptions), cl::Positional, cl::desc("<spec.mlir>"), cl::Required);
static cl::opt<std::string> tuningTable(cl::cat(toolOptions), "tuning-table", cl::init(""),
                                        cl::desc("tuning table for the plans (flashc --tuning-table; 'none': the hand "
                                                 "rules only; default: the built-in table)"));
static cl::opt<bool> runBackward(cl::cat(toolOptions), "backward", cl::desc("also check the backward program"));
static cl::opt<std::string>
    backwardForm(cl::cat(toolOptions), "backward-form", cl::init("auto"),
                 cl::desc("flash-generate-backward form: auto, rows, transposed"));
static cl::opt<bool>
    deterministic(cl::cat(toolOptions), "deterministic",
                  cl::desc("backward without atomics (dQ kernel per query block)"));
static cl::opt<double> tolerance(cl::cat(toolOptions), "tolerance", cl::init(1e-5),
                                 cl::desc("bound on max |tile - ref| / max |ref|"));
static cl::opt<std::string> target(cl::cat(toolOptions), "target", cl::init("sm_90a"), cl::desc("sm_80 or sm_90a"));
static cl::opt<int64_t> blockM(cl::cat(toolOptions), "block-m", cl::init(0), cl::desc("flash-plan-memory block-m"));
static cl::opt<int64_t> blockN(cl::cat(toolOptions), "block-n", cl::init(0), cl::desc("flash-plan-memory block-n"));
static cl::opt<int64_t> blockK(cl::cat(toolOptions), "block-k", cl::init(0), cl::desc("flash-plan-memory block-k"));
static cl::opt<int64_t> warps(cl::cat(toolOptions), "warps", cl::init(0), cl::desc("flash-plan-memory warps"));
static cl::opt<int64_t> stages(cl::cat(toolOptions), "stages", cl::init(0), cl::desc("flash-plan-memory stages"));
static cl::opt<std::string> ffnPlan(cl::cat(toolOptions), "ffn-plan", cl::init("auto"),
                                    cl::desc("flash-tile ffn-plan: auto, fused, two-kernel"));
static cl::opt<int64_t> dynamicSize(cl::cat(toolOptions), "dynamic-size", cl::init(17),
                                    cl::desc("size of every dynamic dimension"));
static cl::opt<unsigned> seed(cl::cat(toolOptions), "seed", cl::init(1), cl::desc("random seed"));
static cl::opt<int> keyOffset(cl::cat(toolOptions), "key-offset", cl::init(0),
                               cl::desc("value of every i32 argument (an attention's run-time "
                                        "key offset)"));
static cl::opt<double> inputRange(cl::cat(toolOptions), "input-range", cl::init(2.0),
                                  cl::desc("inputs are uniform in [-range, range]"));
static cl::opt<bool> printIR(cl::cat(toolOptions), "print-tile-ir", cl::desc("print the compiled tile module"));
static cl::opt<std::string>
    runProgram(cl::cat(toolOptions), "run-program",
               cl::desc("run tile program NAME of a tile-level input as is (no compilation, no "
                        "reference): random arguments, prints blocks run and each argument's sum"));

namespace {

constexpr int kExitMismatch = 1;
constexpr int kExitError = 2;

ElementKind kindOf(Type type) {
  if (type.isBF16())
    return ElementKind::BF16;
  if (type.isF16())
    return ElementKind::F16;
  if (type.isSignlessInteger(32))
    return ElementKind::I32;
  return ElementKind::F32;
}

std::vector<int64_t> concreteShape(ArrayRef<int64_t> shape) {
  std::vector<int64_t> result;
  for (int64_t dim : shape)
    result.push_back(ShapedType::isDynamic(dim) ? dynamicSize.getValue() : dim);
  return result;
}

/// Reference tensors hold the exact values the tile program sees.
ReferenceTensor toReference(const HostTensor &tensor) {
  ReferenceTensor ref(tensor.shape);
  for (size_t i = 0; i < tensor.data.size(); ++i)
    ref.data[i] = tensor.data[i];
  for (size_t i = 0; i < tensor.ints.size(); ++i)
    ref.data[i] = tensor.ints[i];
  return ref;
}

/// Random values; i32 tensors (a mask modifier's: document ids, say) hold
/// runs of equal values in [0, 4), non-decreasing, so that blocks of every
/// class (hidden, shown, partial) occur.
HostTensor randomTensor(std::vector<int64_t> shape, ElementKind kind, std::mt19937_64 &rng,
                        double range) {
  HostTensor tensor(std::move(shape), kind);
  if (kind == ElementKind::I32) {
    std::uniform_int_distribution<int> step(0, 15);
    int32_t id = 0;
    for (int32_t &value : tensor.ints) {
      if (step(rng) == 0 && id < 3)
        ++id;
      value = id;
    }
    return tensor;
  }
  std::uniform_real_distribution<double> uniform(-range, range);
  for (float &value : tensor.data)
    value = flashc::roundToElement(static_cast<float>(uniform(rng)), kind);
  return tensor;
}

HostTensor poisoned(std::vector<int64_t> shape, ElementKind kind) {
  return HostTensor(std::move(shape), kind, std::numeric_limits<float>::quiet_NaN());
}

struct Comparison {
  std::string what;
  double error;
  bool ok;
};

/// max |x - ref| / max |ref|; -inf must match -inf exactly (lse of rows
/// that see no key), NaN anywhere fails.
Comparison compare(const std::string &what, const HostTensor &got, const ReferenceTensor &ref) {
  if (got.shape != ref.shape)
    return {what + " (shape mismatch)", std::numeric_limits<double>::infinity(), false};
  double maxRef = 0.0, maxDiff = 0.0;
  bool bad = false;
  for (size_t i = 0; i < ref.data.size(); ++i) {
    double r = ref.data[i], x = got.data[i];
    if (std::isnan(x) || std::isnan(r)) {
      bad = true;
      continue;
    }
    if (std::isinf(r) || std::isinf(x)) {
      if (r != x)
        bad = true;
      continue;
    }
    maxRef = std::max(maxRef, std::fabs(r));
    maxDiff = std::max(maxDiff, std::fabs(x - r));
  }
  // Relative to the reference's largest value; a reference that is zero up to rounding (the gradients through a
  // softmax over one visible key, say: every |ref| < 1e-6 for inputs of order 1) is compared absolutely, as its
  // rounding noise over a vanishing scale would otherwise read as any error at all.
  double error = bad ? std::numeric_limits<double>::infinity() : maxRef < 1e-6 ? maxDiff : maxDiff / maxRef;
  if (!bad && maxDiff == 0.0)
    error = 0.0;
  return {what, error, !bad && error <= tolerance};
}

//===----------------------------------------------------------------------===//
// float64 backward references (materialised P)
//===----------------------------------------------------------------------===//

/// Gradients of flash.attention's output w.r.t. q, k, v given d_out.
void attentionGradients(flash::AttentionOp op, const ReferenceTensor &q, const ReferenceTensor &k,
                        const ReferenceTensor &v, const ReferenceTensor &dOut, ReferenceTensor &dq,
                        ReferenceTensor &dk, ReferenceTensor &dv,
                        ArrayRef<const ReferenceTensor *> maskTensors,
                        ArrayRef<const ReferenceTensor *> scoreTensors) {
  ref::AttentionShape shape{q.shape[0], q.shape[1], k.shape[1], q.shape[2],
                            k.shape[2], q.shape[3], v.shape[3]};
  ref::AttentionParams params = flash::referenceParams(op, maskTensors, scoreTensors);
  if (op.getKeyOffset())
    params.window = params.window.withKeyOffset(keyOffset);
  dq = ReferenceTensor(q.shape);
  dk = ReferenceTensor(k.shape);
  dv = ReferenceTensor(v.shape);
  ref::attentionBackward(shape, params, q.data.data(), k.data.data(), v.data.data(),
                         dOut.data.data(), dq.data.data(), dk.data.data(), dv.data.data());
}

/// Gradients of flash.varlen_attention (q, k, v), sequence by sequence (rows outside every sequence: 0).
void varlenGradients(flash::VarlenAttentionOp op, const ReferenceTensor &q, const ReferenceTensor &k,
                     const ReferenceTensor &v, const ReferenceTensor &cuQ, const ReferenceTensor &cuK,
                     const ReferenceTensor &dOut, ReferenceTensor &dq, ReferenceTensor &dk, ReferenceTensor &dv) {
  ref::VarlenShape shape;
  shape.sequences = cuQ.shape[0] - 1, shape.rowsQ = q.shape[0], shape.rowsK = k.shape[0];
  shape.queryHeads = q.shape[1], shape.kvHeads = k.shape[1], shape.headDim = q.shape[2], shape.valueDim = v.shape[2];
  flash::MaskAttr mask = op.getMask();
  ref::AttentionParams params;
  params.scale = op.getScale().convertToDouble();
  params.window = mask.isNone() ? ref::AttentionWindow::none()
                  : mask.isCausal() ? ref::AttentionWindow::causal()
                                    : ref::AttentionWindow{mask.getWindowLeft(), mask.getWindowRight()};
  std::vector<int32_t> offQ(cuQ.data.begin(), cuQ.data.end()), offK(cuK.data.begin(), cuK.data.end());
  dq = ReferenceTensor(q.shape);
  dk = ReferenceTensor(k.shape);
  dv = ReferenceTensor(v.shape);
  ref::varlenAttentionBackward(shape, params, q.data.data(), k.data.data(), v.data.data(), dOut.data.data(),
                               offQ.data(), offK.data(), dq.data.data(), dk.data.data(), dv.data.data());
}

/// Gradients of flash.ffn, in operand order (x, w1, [b1], [w_up], w2, [b2]).
/// Activation derivatives by central differences: independent of the
/// executor's closed forms.
void ffnGradients(flash::FfnOp op, const ReferenceTensor &x, const ReferenceTensor &w1,
                  const ReferenceTensor *b1, const ReferenceTensor *wUp, const ReferenceTensor &w2,
                  const ReferenceTensor *b2, const ReferenceTensor &dy,
                  std::vector<ReferenceTensor> &grads) {
  // Leading dimensions of x (and dy, dx) are rows: [.., M, d] is [rows, d].
  int64_t d = x.shape.back(), H = w1.shape[1], N = w2.shape[1];
  ref::FfnShape shape{d ? x.numElements() / d : 0, d, H, N};
  ref::FfnWeights weights;
  weights.w1 = w1.data.data(), weights.w2 = w2.data.data();
  weights.b1 = b1 ? b1->data.data() : nullptr;
  weights.wUp = wUp ? wUp->data.data() : nullptr;
  weights.b2 = b2 ? b2->data.data() : nullptr;
  grads = {ReferenceTensor(x.shape), ReferenceTensor(w1.shape)};
  if (b1)
    grads.push_back(ReferenceTensor(b1->shape));
  if (wUp)
    grads.push_back(ReferenceTensor(wUp->shape));
  grads.push_back(ReferenceTensor(w2.shape));
  if (b2)
    grads.push_back(ReferenceTensor(b2->shape));
  size_t next = 2;
  ref::FfnGradients g;
  g.dx = grads[0].data.data(), g.dw1 = grads[1].data.data();
  g.db1 = b1 ? grads[next++].data.data() : nullptr;
  g.dwUp = wUp ? grads[next++].data.data() : nullptr;
  g.dw2 = grads[next++].data.data();
  g.db2 = b2 ? grads[next++].data.data() : nullptr;
  ref::ffnBackward(shape, flash::referenceActivation(op.getActivation()), weights, x.data.data(),
                   dy.data.data(), g, ref::activationDerivativeByDifferences);
}

/// Gradients of flash.moe in operand order (x, router, w1, [w_up], w2): the top-k choice held fixed, made on the
/// logits as a 16-bit layer holds them (as the forward's reference).
void moeGradients(flash::MoeOp op, const ReferenceTensor &x, const ReferenceTensor &router, const ReferenceTensor &w1,
                  const ReferenceTensor *wUp, const ReferenceTensor &w2, const ReferenceTensor &dy,
                  std::vector<ReferenceTensor> &grads) {
  ref::MoeShape shape{x.shape[0], op.getModelDim(), op.getHiddenDim(), op.getOutputDim(), op.getExperts(),
                      static_cast<int64_t>(op.getTopK())};
  grads = {ReferenceTensor(x.shape), ReferenceTensor(router.shape), ReferenceTensor(w1.shape)};
  if (wUp)
    grads.push_back(ReferenceTensor(wUp->shape));
  grads.push_back(ReferenceTensor(w2.shape));
  ref::MoeGradients g;
  g.dx = grads[0].data.data(), g.dRouter = grads[1].data.data(), g.dw1 = grads[2].data.data();
  g.dwUp = wUp ? grads[3].data.data() : nullptr;
  g.dw2 = grads.back().data.data();
  Type element = op.getInput().getType().getElementType();
  ref::LogitRounding roundLogit =
      element.isBF16() || element.isF16() ? ref::logitRounding16(element.isBF16()) : nullptr;
  ref::moeBackward(shape, flash::referenceActivation(op.getActivation()),
                   op.getGating() == flash::MoeGating::Softmax ? ref::MoeGating::Softmax : ref::MoeGating::Sigmoid,
                   op.getRenormalize(), router.data.data(), w1.data.data(), wUp ? wUp->data.data() : nullptr,
                   w2.data.data(), x.data.data(), dy.data.data(), g, roundLogit);
}

//===----------------------------------------------------------------------===//
// Driver
//===----------------------------------------------------------------------===//

class Runner {
public:
  Runner(ModuleOp original, ModuleOp fused, ModuleOp compiled)
      : original(original), fused(fused), compiled(compiled), executor(compiled),
        rng(seed.getValue()) {}

  /// Checks one function; returns false on a numerical mismatch.
  FailureOr<bool> check(func::FuncOp source) {
    auto fusedFunc = fused.lookupSymbol<func::FuncOp>(source.getSymName());
    auto program = compiled.lookupSymbol<func::FuncOp>(source.getSymName());
    if (!fusedFunc || !program || !program->hasAttr(tile::kProgramAttrName)) {
      source.emitError("flash-run-tile: no tile program was produced for this function");
      return failure();
    }
    // Every tensor the fused function makes (outputs, lse rows) within the float64 tools' bounds, before any is
    // allocated (a result's static size is only checked compatible with the dynamic one it stands for).
    for (Operation &op : fusedFunc.getBody().front())
      for (Value result : op.getResults())
        if (auto ranked = llvm::dyn_cast<RankedTensorType>(result.getType())) {
          std::string why;
          if (failed(flash::evaluatedShape(ranked.getShape(), dynamicSize, why))) {
            op.emitError("flash-run-tile: ") << why;
            return failure();
          }
        }
    // Inputs: random, exactly representable in their element types; i32
    // arguments (key offsets) take --key-offset.
    std::vector<HostTensor> inputs;
    std::vector<ReferenceTensor> refInputs;
    std::vector<int64_t> scalars;
    for (Type type : source.getArgumentTypes()) {
      if (type.isSignlessInteger(32)) {
        scalars.push_back(keyOffset);
        refInputs.push_back(ReferenceTensor({}, static_cast<double>(keyOffset)));
        inputs.emplace_back(); // keeps inputs indexed by argument number
        continue;
      }
      auto ranked = llvm::dyn_cast<RankedTensorType>(type);
      if (!ranked) {
        source.emitError("flash-run-tile: arguments must be ranked tensors or i32 scalars");
        return failure();
      }
      std::string why;
      FailureOr<std::vector<int64_t>> shape = flash::evaluatedShape(ranked.getShape(), dynamicSize, why);
      if (failed(shape)) {
        source.emitError("flash-run-tile: ") << why;
        return failure();
      }
      inputs.push_back(randomTensor(std::move(*shape), kindOf(ranked.getElementType()), rng, inputRange));
      refInputs.push_back(toReference(inputs.back()));
    }
    // A decode op's cache lengths and page ids: valid random ones (lengths the capacity, 0, 1 and ragged
    // between; page ids anywhere in the cache, several sequences sharing some).
    for (auto decode : source.getBody().front().getOps<flash::DecodeAttentionOp>()) {
      auto lensArg = llvm::dyn_cast<BlockArgument>(decode.getCacheSeqlens());
      auto keyArg = llvm::dyn_cast<BlockArgument>(decode.getKeyCache());
      auto tableArg = decode.isPaged() ? llvm::dyn_cast<BlockArgument>(decode.getBlockTable()) : BlockArgument();
      if (!lensArg || !keyArg || (decode.isPaged() && !tableArg))
        continue;
      HostTensor &lens = inputs[lensArg.getArgNumber()], &keys = inputs[keyArg.getArgNumber()];
      int64_t capacity = decode.isPaged() ? inputs[tableArg.getArgNumber()].shape[1] * *decode.getPageSize()
                                          : keys.shape[2];
      std::uniform_int_distribution<int64_t> length(0, capacity);
      for (size_t b = 0; b < lens.ints.size(); ++b)
        lens.ints[b] = static_cast<int32_t>(b == 0 ? capacity : b == 1 ? 0 : b == 2 ? 1 : length(rng));
      refInputs[lensArg.getArgNumber()] = toReference(lens);
      if (decode.isPaged()) {
        HostTensor &table = inputs[tableArg.getArgNumber()];
        std::uniform_int_distribution<int32_t> pageId(0, static_cast<int32_t>(keys.shape[0]) - 1);
        for (int32_t &id : table.ints)
          id = pageId(rng);
        refInputs[tableArg.getArgNumber()] = toReference(table);
      }
    }
    // An append's cache lengths: each holds the T new tokens (T, the capacity and ragged between); page ids a
    // shuffle of the cache's pages, so that no two sequences write one row (distinct while the table has no more
    // entries than the cache has pages).
    for (auto append : source.getBody().front().getOps<flash::KvAppendOp>()) {
      auto lensArg = llvm::dyn_cast<BlockArgument>(append.getCacheSeqlens());
      auto keyArg = llvm::dyn_cast<BlockArgument>(append.getKey());
      auto cacheArg = llvm::dyn_cast<BlockArgument>(append.getKeyCache());
      auto tableArg = append.isPaged() ? llvm::dyn_cast<BlockArgument>(append.getBlockTable()) : BlockArgument();
      if (!lensArg || !keyArg || !cacheArg || (append.isPaged() && !tableArg))
        continue;
      HostTensor &lens = inputs[lensArg.getArgNumber()], &cache = inputs[cacheArg.getArgNumber()];
      int64_t tokens = inputs[keyArg.getArgNumber()].shape[2];
      int64_t capacity = append.isPaged() ? inputs[tableArg.getArgNumber()].shape[1] * *append.getPageSize()
                                          : cache.shape[2];
      std::uniform_int_distribution<int64_t> length(std::min(tokens, capacity), capacity);
      for (size_t b = 0; b < lens.ints.size(); ++b)
        lens.ints[b] = static_cast<int32_t>(b == 0 ? capacity : b == 1 ? std::min(tokens, capacity) : length(rng));
      refInputs[lensArg.getArgNumber()] = toReference(lens);
      if (append.isPaged()) {
        HostTensor &table = inputs[tableArg.getArgNumber()];
        std::vector<int32_t> pages(static_cast<size_t>(cache.shape[0]));
        std::iota(pages.begin(), pages.end(), 0);
        std::shuffle(pages.begin(), pages.end(), rng);
        for (size_t i = 0; i < table.ints.size(); ++i)
          table.ints[i] = pages[i % pages.size()];
        refInputs[tableArg.getArgNumber()] = toReference(table);
      }
    }
    // A packed-sequences op's offsets: the rows of q and of k split into the offsets' sequences at random cut
    // points (lengths 0 and 1 among them when there are enough), every row in a sequence.
    for (auto varlen : source.getBody().front().getOps<flash::VarlenAttentionOp>()) {
      auto cuQArg = llvm::dyn_cast<BlockArgument>(varlen.getCuSeqlensQ());
      auto cuKArg = llvm::dyn_cast<BlockArgument>(varlen.getCuSeqlensK());
      auto qArg = llvm::dyn_cast<BlockArgument>(varlen.getQuery());
      auto kArg = llvm::dyn_cast<BlockArgument>(varlen.getKey());
      if (!cuQArg || !cuKArg || !qArg || !kArg)
        continue;
      for (auto [cuArg, rows] : {std::pair<BlockArgument, int64_t>{cuQArg, inputs[qArg.getArgNumber()].shape[0]},
                                 {cuKArg, inputs[kArg.getArgNumber()].shape[0]}}) {
        HostTensor &cu = inputs[cuArg.getArgNumber()];
        size_t n = cu.ints.size();
        std::uniform_int_distribution<int64_t> cut(0, rows);
        std::vector<int64_t> cuts;
        for (size_t i = 0; i + 2 < n; ++i)
          cuts.push_back(cut(rng));
        std::sort(cuts.begin(), cuts.end());
        if (cuts.size() >= 3) { // a sequence of length 0 and one of length 1
          cuts[1] = cuts[0];
          cuts[2] = std::min<int64_t>(cuts[1] + 1, rows);
          std::sort(cuts.begin(), cuts.end());
        }
        for (size_t i = 0; i < n; ++i)
          cu.ints[i] = static_cast<int32_t>(i == 0 ? 0 : i + 1 == n ? rows : cuts[i - 1]);
        refInputs[cuArg.getArgNumber()] = toReference(cu);
      }
    }
    auto expected = flash::evaluateGraph(source, refInputs);
    if (failed(expected))
      return failure();

    // Forward program arguments: tensor inputs, results, extra lse outputs,
    // then the scalars. A result an append ties to its cache argument has no
    // argument of its own: the program writes the input (compared after it).
    size_t numTensorInputs = inputs.size() - scalars.size();
    auto returned = llvm::cast<func::ReturnOp>(fusedFunc.getBody().front().getTerminator()).getOperands();
    std::vector<size_t> resultOf;         // outputs[i] holds expected result resultOf[i] (extra lse's past them)
    std::vector<std::pair<size_t, unsigned>> tiedResults;  // (expected result, input argument it overwrites)
    for (auto [r, value] : llvm::enumerate(returned)) {
      if (auto append = value.getDefiningOp<flash::KvAppendOp>()) {
        Value cache = value == append.getNewKeyCache() ? append.getKeyCache() : append.getValueCache();
        tiedResults.push_back({r, argIndex(cache)});
        continue;
      }
      resultOf.push_back(r);
    }
    std::vector<HostTensor> outputs;
    for (auto [index, type] : llvm::enumerate(program.getArgumentTypes())) {
      if (index < numTensorInputs || !llvm::isa<tile::GlobalTensorType>(type))
        continue;
      auto tensorType = llvm::cast<tile::GlobalTensorType>(type);
      std::vector<int64_t> shape;
      size_t result = index - numTensorInputs;
      if (result < resultOf.size())
        shape = (*expected)[resultOf[result]].shape;
      else
        shape = extraLseShape(fusedFunc, result - resultOf.size());
      outputs.push_back(poisoned(shape, kindOf(tensorType.getElementType())));
    }
    std::vector<HostTensor *> args;
    for (auto [index, tensor] : llvm::enumerate(inputs))
      if (!source.getArgumentTypes()[index].isSignlessInteger(32))
        args.push_back(&tensor);
    for (HostTensor &tensor : outputs)
      args.push_back(&tensor);
    if (failed(executor.runProgram(program.getSymName(), args, scalars))) {
      llvm::errs() << "flash-run-tile: @" << program.getSymName() << ": " << executor.error()
                   << "\n";
      return failure();
    }
    bool ok = true;
    for (size_t i = 0; i < resultOf.size(); ++i)
      ok &= report(source, compare("forward result " + std::to_string(resultOf[i]), outputs[i],
                                   (*expected)[resultOf[i]]));
    for (auto [r, arg] : tiedResults)
      ok &= report(source, compare("forward result " + std::to_string(r) + " (argument " + std::to_string(arg) +
                                       ", written in place)",
                                   inputs[arg], (*expected)[r]));

    SmallVector<Operation *> fusedOps = fusedOpsOf(fusedFunc);
    unsigned attentionIndex = 0;
    for (Operation *op : fusedOps) {
      auto attention = llvm::dyn_cast<flash::AttentionOp>(op);
      if (!attention || !allOperandsAreArguments(attention))
        continue;
      std::string suffix = attentionIndex ? std::to_string(attentionIndex + 1) : "";
      ++attentionIndex;
      ReferenceTensor lseRef;
      SmallVector<const ReferenceTensor *> maskTensors;
      for (Value tensor : attention.getMaskOperands())
        maskTensors.push_back(&refInputs[argIndex(tensor)]);
      SmallVector<const ReferenceTensor *> scoreTensors;
      for (Value tensor : attention.getScoreOperands())
        scoreTensors.push_back(&refInputs[argIndex(tensor)]);
      (void)flash::referenceAttention(
          refInputs[argIndex(attention.getQuery())], refInputs[argIndex(attention.getKey())],
          refInputs[argIndex(attention.getValue())], attention.getScaleValue(),
          attention.getSoftcapValue(), attention.getMask(), lseRef,
          attention.getKeyOffset() ? std::optional<int64_t>(keyOffset) : std::nullopt,
          attention.hasMaskMod() ? &attention.getMaskMod() : nullptr, maskTensors,
          attention.hasScoreMod() ? &attention.getScoreMod() : nullptr, scoreTensors);
      if (const HostTensor *lse = lseTensorFor(attention, fusedFunc, outputs, expected->size()))
        ok &= report(source, compare("forward lse" + suffix, *lse, lseRef));
    }
    if (runBackward) {
      auto status =
          checkBackward(source, fusedFunc, fusedOps, inputs, refInputs, outputs, expected->size());
      if (failed(status))
        return failure();
      ok &= *status;
    }
    return ok;
  }

private:
  ModuleOp original, fused, compiled;
  flashc::TileExecutor executor;
  std::mt19937_64 rng;

  static SmallVector<Operation *> fusedOpsOf(func::FuncOp func) {
    SmallVector<Operation *> ops;
    for (Operation &op : func.getBody().front())
      if (llvm::isa<flash::AttentionOp, flash::FfnOp, flash::VarlenAttentionOp, flash::MoeOp>(op))
        ops.push_back(&op);
    return ops;
  }

  static bool allOperandsAreArguments(Operation *op) {
    return llvm::all_of(op->getOperands(), [](Value v) { return llvm::isa<BlockArgument>(v); });
  }

  static unsigned argIndex(Value v) { return llvm::cast<BlockArgument>(v).getArgNumber(); }

  /// Shape of the n-th extra lse output: flash-tile appends one per
  /// attention op whose lse the function does not return, in op order.
  std::vector<int64_t> extraLseShape(func::FuncOp fusedFunc, size_t n) {
    auto returnOp = llvm::cast<func::ReturnOp>(fusedFunc.getBody().front().getTerminator());
    size_t seen = 0;
    for (auto attention : fusedFunc.getBody().front().getOps<flash::AttentionOp>()) {
      if (llvm::is_contained(returnOp.getOperands(), attention.getLse()))
        continue;
      if (seen++ == n)
        return concreteShape(attention.getLse().getType().getShape());
    }
    // then each decode op's, then each packed-sequences op's (flash-tile's order)
    for (auto decode : fusedFunc.getBody().front().getOps<flash::DecodeAttentionOp>()) {
      if (llvm::is_contained(returnOp.getOperands(), decode.getLse()))
        continue;
      if (seen++ == n)
        return concreteShape(decode.getLse().getType().getShape());
    }
    for (auto varlen : fusedFunc.getBody().front().getOps<flash::VarlenAttentionOp>()) {
      if (llvm::is_contained(returnOp.getOperands(), varlen.getLse()))
        continue;
      if (seen++ == n)
        return concreteShape(varlen.getLse().getType().getShape());
    }
    return {};
  }

  /// The forward-program output holding `value` (a returned fused result).
  static HostTensor *outputFor(Value value, func::FuncOp fusedFunc,
                               std::vector<HostTensor> &outputs) {
    auto returnOp = llvm::cast<func::ReturnOp>(fusedFunc.getBody().front().getTerminator());
    for (auto [index, operand] : llvm::enumerate(returnOp.getOperands()))
      if (operand == value && index < outputs.size())
        return &outputs[index];
    return nullptr;
  }

  /// The forward-program output holding the lse of `attention`: returned, or
  /// the extra lse output appended for it.
  static HostTensor *lseTensorFor(flash::AttentionOp attention, func::FuncOp fusedFunc,
                                  std::vector<HostTensor> &outputs, size_t numResults) {
    if (HostTensor *returned = outputFor(attention.getLse(), fusedFunc, outputs))
      return returned;
    auto returnOp = llvm::cast<func::ReturnOp>(fusedFunc.getBody().front().getTerminator());
    size_t extra = 0;
    for (auto other : fusedFunc.getBody().front().getOps<flash::AttentionOp>()) {
      if (llvm::is_contained(returnOp.getOperands(), other.getLse()))
        continue;
      if (other == attention)
        return numResults + extra < outputs.size() ? &outputs[numResults + extra] : nullptr;
      ++extra;
    }
    return nullptr;
  }

  bool report(func::FuncOp source, const Comparison &c) {
    llvm::outs() << "@" << source.getSymName() << " " << c.what << ": max relative error "
                 << llvm::format("%.3e", c.error) << " (bound "
                 << llvm::format("%.1e", tolerance.getValue()) << ") " << (c.ok ? "ok" : "FAIL")
                 << "\n";
    return c.ok;
  }

  func::FuncOp backwardProgram(func::FuncOp source) {
    auto program = compiled.lookupSymbol<func::FuncOp>((source.getSymName() + "_backward").str());
    if (!program || !program->hasAttr(tile::kProgramAttrName)) {
      source.emitError("flash-run-tile: no backward tile program was produced");
      return nullptr;
    }
    return program;
  }

  /// Runs @<func>_backward with the argument order flash-generate-backward
  /// uses (per fused op: inputs, [out, lse], cotangent; then the gradients op
  /// by op) and compares every gradient with float64.
  FailureOr<bool> checkBackward(func::FuncOp source, func::FuncOp fusedFunc,
                                ArrayRef<Operation *> fusedOps, std::vector<HostTensor> &inputs,
                                std::vector<ReferenceTensor> &refInputs,
                                std::vector<HostTensor> &outputs, size_t numResults) {
    func::FuncOp program = backwardProgram(source);
    if (!program)
      return failure();
    std::deque<HostTensor> storage; // stable addresses
    bool ok = true;
    // The FFNs' backward reads what @<func>_forward_train saved: run it on
    // the same inputs (its results checked too).
    llvm::DenseMap<Operation *, SmallVector<HostTensor *>> saved;
    if (llvm::any_of(fusedOps, [](Operation *op) { return llvm::isa<flash::FfnOp, flash::MoeOp>(op); })) {
      auto status = runTrainingForward(source, fusedOps, inputs, outputs, numResults, storage, saved);
      if (failed(status))
        return failure();
      ok &= *status;
    }
    std::vector<HostTensor *> args;
    struct Expected {
      std::string what;
      HostTensor *got;
      ReferenceTensor ref;
    };
    std::vector<Expected> checks;
    std::vector<HostTensor *> cotangents;
    for (Operation *op : fusedOps) {
      if (!allOperandsAreArguments(op)) {
        op->emitError("flash-run-tile: fused-op operands must be function arguments");
        return failure();
      }
      for (Value operand : op->getOperands())
        if (!operand.getType().isSignlessInteger(32))
          args.push_back(&inputs[argIndex(operand)]);
      HostTensor *primal = outputFor(op->getResult(0), fusedFunc, outputs);
      if (!primal) {
        op->emitError("flash-run-tile: the fused result must be returned");
        return failure();
      }
      if (auto attention = llvm::dyn_cast<flash::AttentionOp>(op)) {
        HostTensor *lse = lseTensorFor(attention, fusedFunc, outputs, numResults);
        if (!lse) {
          op->emitError("flash-run-tile: no lse output for this attention");
          return failure();
        }
        args.push_back(primal);
        args.push_back(lse);
      } else if (auto varlen = llvm::dyn_cast<flash::VarlenAttentionOp>(op)) {
        HostTensor *lse = outputFor(varlen.getLse(), fusedFunc, outputs);
        if (!lse) {
          op->emitError("flash-run-tile: return the lse of a flash.varlen_attention to check its backward");
          return failure();
        }
        args.push_back(primal);
        args.push_back(lse);
      } else {
        for (HostTensor *tensor : saved[op])
          args.push_back(tensor);
      }
      storage.push_back(randomTensor(primal->shape, primal->kind, rng, 1.0));
      args.push_back(&storage.back());
      cotangents.push_back(&storage.back());
    }
    unsigned attentions = 0, denseOps = 0; // (FFNs and mixtures of experts: one numbering, as the programs')
    for (auto [opIndex, op] : llvm::enumerate(fusedOps)) {
      bool isAttention = llvm::isa<flash::AttentionOp, flash::VarlenAttentionOp>(op);
      unsigned &count = isAttention ? attentions : denseOps;
      std::string suffix = count ? std::to_string(count + 1) : "";
      ++count;
      std::vector<ReferenceTensor> refs;
      std::vector<std::string> names;
      ReferenceTensor dOut = toReference(*cotangents[opIndex]);
      if (auto attention = llvm::dyn_cast<flash::AttentionOp>(op)) {
        refs.resize(3);
        SmallVector<const ReferenceTensor *> maskTensors;
        for (Value tensor : attention.getMaskOperands())
          maskTensors.push_back(&refInputs[argIndex(tensor)]);
        SmallVector<const ReferenceTensor *> scoreTensors;
        for (Value tensor : attention.getScoreOperands())
          scoreTensors.push_back(&refInputs[argIndex(tensor)]);
        attentionGradients(attention, refInputs[argIndex(attention.getQuery())],
                           refInputs[argIndex(attention.getKey())],
                           refInputs[argIndex(attention.getValue())], dOut, refs[0], refs[1],
                           refs[2], maskTensors, scoreTensors);
        names = {"d_q", "d_k", "d_v"};
      } else if (auto varlen = llvm::dyn_cast<flash::VarlenAttentionOp>(op)) {
        refs.resize(3);
        varlenGradients(varlen, refInputs[argIndex(varlen.getQuery())], refInputs[argIndex(varlen.getKey())],
                        refInputs[argIndex(varlen.getValue())], refInputs[argIndex(varlen.getCuSeqlensQ())],
                        refInputs[argIndex(varlen.getCuSeqlensK())], dOut, refs[0], refs[1], refs[2]);
        names = {"d_q", "d_k", "d_v"};
      } else if (auto moe = llvm::dyn_cast<flash::MoeOp>(op)) {
        moeGradients(moe, refInputs[argIndex(moe.getInput())], refInputs[argIndex(moe.getRouter())],
                     refInputs[argIndex(moe.getW1())], moe.isGated() ? &refInputs[argIndex(moe.getWUp())] : nullptr,
                     refInputs[argIndex(moe.getW2())], dOut, refs);
        names = {"d_x", "d_router", "d_w1"};
        if (moe.isGated())
          names.push_back("d_w_up");
        names.push_back("d_w2");
      } else {
        auto ffn = llvm::cast<flash::FfnOp>(op);
        ffnGradients(ffn, refInputs[argIndex(ffn.getInput())], refInputs[argIndex(ffn.getW1())],
                     ffn.getB1() ? &refInputs[argIndex(ffn.getB1())] : nullptr,
                     ffn.getWUp() ? &refInputs[argIndex(ffn.getWUp())] : nullptr,
                     refInputs[argIndex(ffn.getW2())],
                     ffn.getB2() ? &refInputs[argIndex(ffn.getB2())] : nullptr, dOut, refs);
        names = {"d_x", "d_w1"};
        if (ffn.getB1())
          names.push_back("d_b1");
        if (ffn.getWUp())
          names.push_back("d_w_up");
        names.push_back("d_w2");
        if (ffn.getB2())
          names.push_back("d_b2");
      }
      for (auto [i, operand] : llvm::enumerate(op->getOperands())) {
        auto attention = llvm::dyn_cast<flash::AttentionOp>(op);
        if (operand.getType().isSignlessInteger(32) ||
            (attention && (llvm::is_contained(attention.getMaskOperands(), operand) ||
                           llvm::is_contained(attention.getScoreOperands(), operand))) ||
            (llvm::isa<flash::VarlenAttentionOp>(op) && i >= 3))
          continue; // a key offset, a modifier's tensor, packed sequences' offsets: no gradient
        const HostTensor &like = inputs[argIndex(operand)];
        storage.push_back(poisoned(like.shape, like.kind));
        args.push_back(&storage.back());
        checks.push_back({"backward " + names[i] + suffix, &storage.back(), refs[i]});
      }
    }
    // One scalar per distinct key offset (flash-generate-backward's order).
    std::vector<int64_t> scalars;
    for (Type type : program.getArgumentTypes())
      if (type.isSignlessInteger(32))
        scalars.push_back(keyOffset);
    if (failed(executor.runProgram(program.getSymName(), args, scalars))) {
      llvm::errs() << "flash-run-tile: @" << program.getSymName() << ": " << executor.error()
                   << "\n";
      return failure();
    }
    for (const Expected &check : checks)
      ok &= report(source, compare(check.what, *check.got, check.ref));
    return ok;
  }

  /// Runs @<func>_forward_train (the forward's arguments, then each FFN's
  /// saved activations [..., M, H]) on `inputs`, compares its results with
  /// the forward's and hands out the saved tensors per FFN op.
  FailureOr<bool> runTrainingForward(func::FuncOp source, ArrayRef<Operation *> fusedOps,
                                     std::vector<HostTensor> &inputs,
                                     std::vector<HostTensor> &outputs, size_t numResults,
                                     std::deque<HostTensor> &storage,
                                     llvm::DenseMap<Operation *, SmallVector<HostTensor *>> &saved) {
    std::string name = (source.getSymName() + "_forward_train").str();
    auto program = compiled.lookupSymbol<func::FuncOp>(name);
    if (!program || !program->hasAttr(tile::kProgramAttrName)) {
      source.emitError("flash-run-tile: no training forward @") << name << " was produced";
      return failure();
    }
    std::vector<HostTensor *> args;
    std::vector<int64_t> scalars;
    for (auto [index, tensor] : llvm::enumerate(inputs)) {
      if (source.getArgumentTypes()[index].isSignlessInteger(32))
        scalars.push_back(keyOffset);
      else
        args.push_back(&tensor);
    }
    size_t firstOutput = args.size();
    for (const HostTensor &output : outputs) {
      storage.push_back(poisoned(output.shape, output.kind));
      args.push_back(&storage.back());
    }
    // Then each op's saved tensors, in body order: shaped as the program declares them (static sizes, and `tile.dims`
    // for the run-time ones: a symbol the forward's tensors bind, or an expression of them such as a mixture of
    // experts' padded capacity), so that this tool does not restate what flash-tile saves.
    flashc::rt::SymbolTable symbols;
    for (auto [index, tensor] : llvm::enumerate(args))
      if (auto dims = program.getArgAttrOfType<ArrayAttr>(index, "tile.dims"))
        for (auto [d, dim] : llvm::enumerate(dims.getAsValueRange<StringAttr>()))
          if (!dim.empty() && llvm::all_of(dim, [](char c) { return llvm::isAlnum(c) || c == '_'; }))
            symbols[dim.str()] = tensor->shape[d];
    unsigned next = args.size();
    for (Operation *op : fusedOps) {
      // (flash-tile's MoeSaved and appendSavedActivations: gated ops save one tensor more.)
      unsigned count = 0;
      if (auto moe = llvm::dyn_cast<flash::MoeOp>(op))
        count = moe.isGated() ? 12 : 11;
      else if (auto ffn = llvm::dyn_cast<flash::FfnOp>(op))
        count = ffn.isGated() ? 3 : 2;
      for (unsigned i = 0; i < count; ++i, ++next) {
        auto type = next < program.getNumArguments()
                        ? llvm::dyn_cast<tile::GlobalTensorType>(program.getArgumentTypes()[next])
                        : tile::GlobalTensorType();
        if (!type) {
          program.emitError("flash-run-tile: the training forward has no saved tensor ") << i << " for " << *op;
          return failure();
        }
        auto dims = program.getArgAttrOfType<ArrayAttr>(next, "tile.dims");
        std::vector<int64_t> shape;
        for (auto [d, size] : llvm::enumerate(type.getShape())) {
          if (!ShapedType::isDynamic(size)) {
            shape.push_back(size);
            continue;
          }
          StringRef text = dims && d < dims.size() ? llvm::cast<StringAttr>(dims[d]).getValue() : StringRef();
          auto expr = flashc::rt::Expr::parse(text.str());
          auto value = expr.ok() ? expr->evaluate(symbols) : flashc::rt::Result<int64_t>(expr.error());
          if (!value.ok()) {
            program.emitError("flash-run-tile: saved tensor ")
                << next << " dim " << d << " '" << text << "': " << value.error().message;
            return failure();
          }
          shape.push_back(*value);
        }
        storage.push_back(poisoned(shape, kindOf(type.getElementType())));
        args.push_back(&storage.back());
        saved[op].push_back(&storage.back());
      }
    }
    size_t tensorArgs = llvm::count_if(program.getArgumentTypes(), [](Type type) {
      return llvm::isa<tile::GlobalTensorType>(type);
    });
    if (tensorArgs != args.size()) {
      program.emitError("flash-run-tile: the training forward takes ")
          << tensorArgs << " tensors, expected " << args.size()
          << " (the forward's, then each FFN's saved activations and each mixture of experts' saved tensors)";
      return failure();
    }
    if (failed(executor.runProgram(program.getSymName(), args, scalars))) {
      llvm::errs() << "flash-run-tile: @" << name << ": " << executor.error() << "\n";
      return failure();
    }
    bool ok = true;
    for (size_t r = 0; r < numResults; ++r)
      ok &= report(source, compare("training forward result " + std::to_string(r),
                                   *args[firstOutput + r], toReference(outputs[r])));
    return ok;
  }
};

/// Runs flashc's own stages (Pipeline.h) on `module`: the graph stage, or the
/// kernel stage with this tool's options.
LogicalResult compile(ModuleOp module, bool fuseOnly) {
  PassManager pm(module->getContext());
  flash::PipelineOptions options;
  if (fuseOnly) {
    flash::buildGraphPipeline(pm, options);
    return pm.run(module);
  }
  options.archs = {target};
  options.tuningTable = tuningTable;
  options.generateBackward = runBackward;
  options.deterministicBackward = deterministic;
  options.backwardForm = backwardForm;
  options.ffnPlan = ffnPlan;
  options.blockM = blockM;
  options.blockN = blockN;
  options.blockK = blockK;
  options.warps = warps;
  options.stages = stages;
  flash::buildKernelPipeline(pm, options);
  return pm.run(module);
}

/// --run-program: executes a tile program as written, on random arguments.
int runTileProgram(ModuleOp module) {
  auto program = module.lookupSymbol<func::FuncOp>(runProgram);
  if (!program || !program->hasAttr(tile::kProgramAttrName)) {
    llvm::errs() << "flash-run-tile: no tile program @" << runProgram << " in " << inputFilename
                 << "\n";
    return kExitError;
  }
  std::mt19937_64 rng(seed.getValue());
  std::vector<HostTensor> tensors;
  std::vector<int64_t> scalars;
  for (Type type : program.getArgumentTypes()) {
    if (type.isSignlessInteger(32)) {
      scalars.push_back(keyOffset);
      continue;
    }
    auto tensorType = llvm::dyn_cast<tile::GlobalTensorType>(type);
    if (!tensorType) {
      llvm::errs() << "flash-run-tile: @" << runProgram << " takes an argument that is neither "
                   << "a tensor nor an i32\n";
      return kExitError;
    }
    std::string why;
    FailureOr<std::vector<int64_t>> shape = flash::evaluatedShape(tensorType.getShape(), dynamicSize, why);
    if (failed(shape)) {
      llvm::errs() << "flash-run-tile: @" << runProgram << ": " << why << "\n";
      return kExitError;
    }
    tensors.push_back(randomTensor(std::move(*shape), kindOf(tensorType.getElementType()), rng, inputRange));
  }
  std::vector<HostTensor *> args;
  for (HostTensor &tensor : tensors)
    args.push_back(&tensor);
  flashc::TileExecutor executor(module);
  if (failed(executor.runProgram(runProgram, args, scalars))) {
    llvm::errs() << "flash-run-tile: @" << runProgram << ": " << executor.error() << "\n";
    return kExitError;
  }
  llvm::outs() << "@" << runProgram << ": ran " << executor.blocksExecuted() << " blocks\n";
  for (auto [index, tensor] : llvm::enumerate(tensors)) {
    double sum = 0;
    for (float value : tensor.data)
      sum += value;
    llvm::outs() << "argument " << index << " sum " << llvm::format("%.6e", sum) << "\n";
  }
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  cl::HideUnrelatedOptions(toolOptions);
  cl::ParseCommandLineOptions(argc, argv,
                              "run tile programs on the CPU against a float64 reference\n");
  // Values that would make the check meaningless (a NaN range, a NaN bound) or the tensors unallocatable.
  if (dynamicSize < 1 || dynamicSize > flash::kMaxEvaluatedDynamicSize) {
    llvm::errs() << "flash-run-tile: --dynamic-size must be in [1, " << flash::kMaxEvaluatedDynamicSize << "], got " << dynamicSize
                 << "\n";
    return 2;
  }
  if (!std::isfinite(inputRange.getValue()) || inputRange <= 0) {
    llvm::errs() << "flash-run-tile: --input-range must be a finite positive number, got " << inputRange << "\n";
    return 2;
  }
  if (!std::isfinite(tolerance.getValue()) || tolerance < 0) {
    llvm::errs() << "flash-run-tile: --tolerance must be a finite number >= 0, got " << tolerance << "\n";
    return 2;
  }
  DialectRegistry registry;
  registry.insert<flash::FlashDialect, tile::TileDialect, func::FuncDialect, arith::ArithDialect,
                  scf::SCFDialect, tensor::TensorDialect>();
  MLIRContext context(registry);
  context.printOpOnDiagnostic(false);  // (the message, not a dump of the module, as flashc)
  context.loadAllAvailableDialects();
  llvm::SourceMgr sourceMgr;
  // Every diagnostic as file:line:col, warnings too: a fusion's or the backward's warning says why a program is
  // missing (without a handler MLIR prints errors only).
  SourceMgrDiagnosticHandler diagnostics(sourceMgr, &context);
  OwningOpRef<ModuleOp> original = parseSourceFile<ModuleOp>(inputFilename, sourceMgr, &context);
  if (!original) {
    llvm::errs() << "flash-run-tile: cannot parse " << inputFilename << "\n";
    return kExitError;
  }
  if (!runProgram.empty())
    return runTileProgram(*original);
  // The pipeline picks its target model from the architecture: name a known one.
  if (!flashc::lookupTarget(target)) {
    llvm::errs() << "flash-run-tile: unknown --target '" << target
                 << "' (known: " << flashc::knownTargetNames() << ")\n";
    return kExitError;
  }
  OwningOpRef<ModuleOp> fused = original->clone();
  if (failed(compile(*fused, /*fuseOnly=*/true)))
    return kExitError;
  OwningOpRef<ModuleOp> compiled = fused->clone();
  if (failed(compile(*compiled, /*fuseOnly=*/false)))
    return kExitError;
  if (printIR)
    compiled->print(llvm::outs());

  Runner runner(*original, *fused, *compiled);
  bool allOk = true;
  unsigned checked = 0;
  for (auto func : original->getOps<func::FuncOp>()) {
    if (func.isExternal())
      continue;
    FailureOr<bool> ok = runner.check(func);
    if (failed(ok))
      return kExitError;
    allOk &= *ok;
    ++checked;
  }
  if (checked == 0) {
    llvm::errs() << "flash-run-tile: " << inputFilename << " has no function to check\n";
    return kExitError;
  }
  return allOk ? 0 : kExitMismatch;
}
