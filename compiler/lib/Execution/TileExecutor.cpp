//===- TileExecutor.cpp - CPU interpreter for tile programs ---------------===//
//
// Semantics follow docs/tile-dialect.md op by op. Blocks of a grid run one
// after another, so tile.atomic_add is a plain add here; the GPU result can
// differ only by f32 summation order.
//
//===----------------------------------------------------------------------===//
#include "flashc/device/segment_layout.h"  // (the segment plan the kernels read: plain C++)
#include "flashc/Compiler/TileExecutor.h"

#include "flashc/Dialect/Common/IndexFunction.h"
#include "flashc/Dialect/Common/ScoreFunction.h"
#include "flashc/Dialect/Tile/IR/TileOps.h"
#include "flashc/device/moe_layout.h"    // (a mixture of experts' permuted layout, mirrored here)
#include "flashc/device/table_status.h"  // (the kernels' verdict codes, mirrored here)
#include "flashc/reference/activations.h"
#include "flashc/reference/codec.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/FormatVariadic.h"

#include <cmath>
#include <limits>
#include <optional>

using namespace mlir;
using namespace mlir::tile;
using namespace flashc::device;  // TableStatus

namespace flashc {

//===----------------------------------------------------------------------===//
// Element rounding and host tensors
//===----------------------------------------------------------------------===//

// The codec is the shared reference one (round to nearest even; a NaN stays
// the NaN it was).
float roundToElement(float value, ElementKind kind) {
  switch (kind) {
  case ElementKind::F32:
    return value;
  case ElementKind::BF16:
    return reference::roundToBf16(value);
  case ElementKind::F16:
    return reference::roundToF16(value);
  }
  return value;
}

HostTensor::HostTensor(std::vector<int64_t> shape, ElementKind kind, float fill, int32_t intFill)
    : shape(std::move(shape)), kind(kind) {
  if (kind == ElementKind::I32)
    ints.assign(numElements(), intFill);
  else
    data.assign(numElements(), fill);
}

int64_t HostTensor::numElements() const {
  int64_t count = 1;
  for (int64_t dim : shape)
    count *= dim;
  return count;
}

static ElementKind elementKindOf(Type type) {
  if (type.isBF16())
    return ElementKind::BF16;
  if (type.isF16())
    return ElementKind::F16;
  if (type.isSignlessInteger(32))
    return ElementKind::I32;
  return ElementKind::F32;
}

static const char *elementName(ElementKind kind) {
  switch (kind) {
  case ElementKind::F32:
    return "f32";
  case ElementKind::BF16:
    return "bf16";
  case ElementKind::F16:
    return "f16";
  case ElementKind::I32:
    return "i32";
  }
  return "?";
}

//===----------------------------------------------------------------------===//
// Run-time values
//===----------------------------------------------------------------------===//

namespace {
/// A tile (or row vector: cols == 1) of one thread block.
struct TileData {
  int64_t rows = 0, cols = 0;
  ElementKind kind = ElementKind::F32;
  std::vector<float> data;
  float &at(int64_t r, int64_t c) { return data[r * cols + c]; }
  float at(int64_t r, int64_t c) const { return data[r * cols + c]; }
};
using TilePtr = std::shared_ptr<TileData>;

struct RtValue {
  enum class Kind { None, Int, Float, Tile, Tensor } kind = Kind::None;
  int64_t i = 0;
  double f = 0;
  TilePtr tile;
  HostTensor *tensor = nullptr;

  static RtValue ofInt(int64_t v) {
    RtValue r;
    r.kind = Kind::Int;
    r.i = v;
    return r;
  }
  static RtValue ofFloat(double v) {
    RtValue r;
    r.kind = Kind::Float;
    r.f = v;
    return r;
  }
  static RtValue ofTile(TilePtr t) {
    RtValue r;
    r.kind = Kind::Tile;
    r.tile = std::move(t);
    return r;
  }
  static RtValue ofTensor(HostTensor *t) {
    RtValue r;
    r.kind = Kind::Tensor;
    r.tensor = t;
    return r;
  }
};

constexpr double kLog2e = 1.4426950408889634;
const float kNegInf = -std::numeric_limits<float>::infinity();
} // namespace

/// Walks the ops of kernels and programs. One instance per executor call.
class TileInterpreter {
public:
  TileInterpreter(TileExecutor &executor) : executor(executor) {}

  LogicalResult runProgram(func::FuncOp program, ArrayRef<HostTensor *> args,
                           ArrayRef<int64_t> scalars);
  LogicalResult runKernel(KernelOp kernel, ArrayRef<HostTensor *> args, ArrayRef<int64_t> scalars);

private:
  TileExecutor &executor;
  llvm::DenseMap<Value, RtValue> env;
  int64_t programIds[3] = {0, 0, 0};
  std::vector<std::unique_ptr<HostTensor>> workspaces;

  LogicalResult fail(Operation *op, const llvm::Twine &message) {
    std::string text;
    llvm::raw_string_ostream os(text);
    os << op->getLoc() << ": '" << op->getName() << "': " << message;
    executor.errorMessage = os.str();
    return failure();
  }

  int64_t intOf(Value v) { return env.lookup(v).i; }
  double floatOf(Value v) { return env.lookup(v).f; }
  TilePtr tileOf(Value v) { return env.lookup(v).tile; }
  HostTensor *tensorOf(Value v) { return env.lookup(v).tensor; }

  TilePtr newTile(Type type) {
    auto tileType = llvm::cast<TileType>(type);
    auto tile = std::make_shared<TileData>();
    tile->rows = tileType.getRows();
    tile->cols = tileType.getCols();
    tile->kind = elementKindOf(tileType.getElementType());
    tile->data.assign(tile->rows * tile->cols, 0.0f);
    return tile;
  }
  TilePtr cloneTile(const TileData &source) { return std::make_shared<TileData>(source); }

  LogicalResult checkArgs(Operation *op, ArrayRef<Type> types, ArrayRef<HostTensor *> args,
                          ArrayRef<int64_t> scalars);
  /// Binds block arguments: tensors in order, then the i32 scalars.
  void bindArgs(Block &entry, ArrayRef<HostTensor *> args, ArrayRef<int64_t> scalars);
  LogicalResult executeBlock(Block &block, SmallVectorImpl<RtValue> *yielded);
  LogicalResult execute(Operation *op, SmallVectorImpl<RtValue> *yielded);
  LogicalResult executeArith(Operation *op);
  LogicalResult decodeBlock(DecodeBlockOp block);
  LogicalResult checkCacheRows(DecodeBlockOp block, int64_t sequence, std::optional<int64_t> newTokens,
                               const HostTensor &lens, const HostTensor *table, int64_t page, const HostTensor &kCache,
                               const HostTensor &vCache, int64_t kvHeads, int64_t headDim, int64_t valueDim);
  LogicalResult shaped(Operation *op, const HostTensor &tensor, ArrayRef<int64_t> want, StringRef name,
                       StringRef why);
  LogicalResult varlenBlock(VarlenBlockOp block);
  LogicalResult planSegments(PlanSegmentsOp op);
  /// A tile.require_extent: an error naming the table (its program name) when it is shorter than the range.
  LogicalResult requireExtent(RequireExtentOp op);
  LogicalResult moeBlock(MoeBlockOp block);
  LogicalResult executeTileOp(Operation *op);

  /// Element offset of (indices..., row, col) or an error when out of range.
  LogicalResult linearIndex(Operation *op, HostTensor &tensor, ArrayRef<int64_t> index,
                            int64_t &offset);
  LogicalResult gatherIndices(Operation *op, OperandRange indices, SmallVectorImpl<int64_t> &out);
  struct RowColumnView;

  /// A mask modifier's arguments at one use (tile.mask, tile.classify_blocks):
  /// the batch, the head and its tensors, evaluated at (q, k).
  struct ModifierTensors {
    int64_t batch = 0, head = 0;
    SmallVector<HostTensor *> tensors;
    ModifierTensors(TileInterpreter &interpreter, OperandRange args) {
      if (args.size() < 2)
        return;
      batch = interpreter.intOf(args[0]);
      head = interpreter.intOf(args[1]);
      for (Value tensor : args.drop_front(2))
        tensors.push_back(interpreter.tensorOf(tensor));
    }
    bool visible(Region &body, int64_t q, int64_t k) const {
      auto shape = [&](unsigned i) { return SmallVector<int64_t, 4>(tensors[i]->shape.begin(), tensors[i]->shape.end()); };
      auto read = [&](unsigned i, ArrayRef<int64_t> position) -> int64_t {
        const HostTensor &t = *tensors[i];
        int64_t offset = 0;
        for (auto [p, size] : llvm::zip(position, t.shape))
          offset = offset * size + p;
        return t.ints[offset];
      };
      return flashc::evaluateIndexPredicate(body, {batch, head, q, k}, shape, read);
    }
    /// A score modifier's value and derivative at score s (in f32, as the kernels compute it: the
    /// evaluator's double rounded).
    flashc::ScoreValue score(Region &body, float s, int64_t q, int64_t k) const {
      auto shape = [&](unsigned i) { return SmallVector<int64_t, 4>(tensors[i]->shape.begin(), tensors[i]->shape.end()); };
      auto read = [&](unsigned i, ArrayRef<int64_t> position) -> double {
        const HostTensor &t = *tensors[i];
        int64_t offset = 0;
        for (auto [p, size] : llvm::zip(position, t.shape))
          offset = offset * size + p;
        return t.kind == ElementKind::I32 ? double(t.ints[offset]) : double(t.data[offset]);
      };
      return flashc::evaluateScore(body, s, {batch, head, q, k}, shape, read);
    }
  };
};

LogicalResult TileInterpreter::checkArgs(Operation *op, ArrayRef<Type> allTypes,
                                         ArrayRef<HostTensor *> args, ArrayRef<int64_t> scalars) {
  // Tensors first, then i32 scalars (the kernel verifier's order).
  size_t numTensors = llvm::count_if(allTypes, [](Type t) { return llvm::isa<GlobalTensorType>(t); });
  ArrayRef<Type> types = allTypes.take_front(numTensors);
  if (types.size() != args.size() || allTypes.size() - numTensors != scalars.size())
    return fail(op, llvm::formatv("expects {0} tensor and {1} scalar arguments, got {2} and {3}",
                                  types.size(), allTypes.size() - numTensors, args.size(),
                                  scalars.size()));
  for (Type type : allTypes.drop_front(numTensors))
    if (!type.isSignlessInteger(32))
      return fail(op, "takes a tensor after a scalar argument");
  for (int64_t value : scalars)
    if (value < INT32_MIN || value > INT32_MAX)
      return fail(op, llvm::formatv("scalar argument {0} does not fit an i32", value));
  for (auto [index, pair] : llvm::enumerate(llvm::zip(types, args))) {
    auto [type, tensor] = pair;
    auto tensorType = llvm::dyn_cast<GlobalTensorType>(type);
    if (!tensorType)
      return fail(op, llvm::formatv("argument {0} is not a !tile.tensor", index));
    if (!tensor)
      return fail(op, llvm::formatv("argument {0} is null", index));
    if (static_cast<int64_t>(tensor->shape.size()) != tensorType.getRank())
      return fail(op, llvm::formatv("argument {0} has rank {1}, expected {2}", index,
                                    tensor->shape.size(), tensorType.getRank()));
    for (int64_t d = 0; d < tensorType.getRank(); ++d) {
      int64_t want = tensorType.getShape()[d];
      if (!ShapedType::isDynamic(want) && want != tensor->shape[d])
        return fail(op, llvm::formatv("argument {0} dimension {1} is {2}, expected {3}", index, d,
                                      tensor->shape[d], want));
    }
    if (tensor->kind != elementKindOf(tensorType.getElementType()))
      return fail(op, llvm::formatv("argument {0} has element type {1}, expected another", index,
                                    elementName(tensor->kind)));
    if (tensor->numValues() != tensor->numElements())
      return fail(op, llvm::formatv("argument {0} holds {1} values for {2} elements", index,
                                    tensor->numValues(), tensor->numElements()));
  }
  return success();
}

void TileInterpreter::bindArgs(Block &entry, ArrayRef<HostTensor *> args,
                               ArrayRef<int64_t> scalars) {
  for (auto [index, arg] : llvm::enumerate(entry.getArguments()))
    env[arg] = index < args.size() ? RtValue::ofTensor(args[index])
                                   : RtValue::ofInt(scalars[index - args.size()]);
}

LogicalResult TileInterpreter::runProgram(func::FuncOp program, ArrayRef<HostTensor *> args,
                                          ArrayRef<int64_t> scalars) {
  if (!program->hasAttr(kProgramAttrName))
    return fail(program, "is not a tile.program");
  if (failed(checkArgs(program, program.getFunctionType().getInputs(), args, scalars)))
    return failure();
  env.clear();
  bindArgs(program.getBody().front(), args, scalars);
  for (Operation &op : program.getBody().front()) {
    if (auto launch = llvm::dyn_cast<LaunchOp>(op)) {
      auto kernel = SymbolTable::lookupNearestSymbolFrom<KernelOp>(launch, launch.getKernelAttr());
      if (!kernel)
        return fail(launch, "unknown kernel @" + launch.getKernel());
      SmallVector<HostTensor *> kernelArgs;
      SmallVector<int64_t> kernelScalars;
      for (Value arg : launch.getArgs()) {
        if (llvm::isa<GlobalTensorType>(arg.getType()))
          kernelArgs.push_back(tensorOf(arg));
        else
          kernelScalars.push_back(intOf(arg));
      }
      TileInterpreter inner(executor);
      if (failed(inner.runKernel(kernel, kernelArgs, kernelScalars)))
        return failure();
      continue;
    }
    if (auto alloc = llvm::dyn_cast<AllocTensorOp>(op)) {
      auto type = llvm::cast<GlobalTensorType>(alloc.getType());
      std::vector<int64_t> shape;
      unsigned next = 0;
      for (int64_t dim : type.getShape()) {
        int64_t size = ShapedType::isDynamic(dim) ? intOf(alloc.getDynamicSizes()[next++]) : dim;
        if (size < 0 || size > (int64_t(1) << 31))
          return fail(alloc, llvm::formatv("workspace dimension size {0} is invalid", size));
        shape.push_back(size);
      }
      // Atomic accumulators start zeroed (as the runtime's `scratch NAME zero`); other
      // contents are undefined: NaN makes any read-before-write visible.
      // (i32 workspaces, block-class tables, start at a value no class has.)
      bool zeroed = alloc.startsZeroed();
      float initial = zeroed ? 0.0f : std::numeric_limits<float>::quiet_NaN();
      workspaces.push_back(std::make_unique<HostTensor>(shape, elementKindOf(type.getElementType()), initial,
                                                        /*intFill=*/zeroed ? 0 : -1));
      env[alloc.getResult()] = RtValue::ofTensor(workspaces.back().get());
      continue;
    }
    if (llvm::isa<func::ReturnOp>(op))
      break;
    if (auto require = llvm::dyn_cast<RequireExtentOp>(op)) {
      if (failed(requireExtent(require)))
        return failure();
      continue;
    }
    if (auto sms = llvm::dyn_cast<SmCountOp>(op)) {  // any count gives the same results: 16 splits small batches
      env[sms.getResult()] = RtValue::ofInt(16);
      continue;
    }
    if (failed(execute(&op, nullptr)))
      return failure();
  }
  return success();
}

LogicalResult TileInterpreter::requireExtent(RequireExtentOp op) {
  int64_t size = tensorOf(op.getTable())->shape[op.getTableDim()];
  int64_t range = tensorOf(op.getRange())->shape[op.getRangeDim()];
  if (size >= range)
    return success();
  // (the runtime's message: the table by its program name, argN as the manifest names an unnamed one)
  std::string name = "the table";
  if (auto arg = llvm::dyn_cast<BlockArgument>(op.getTable())) {
    name = "arg" + std::to_string(arg.getArgNumber());
    if (auto program = llvm::dyn_cast<func::FuncOp>(arg.getOwner()->getParentOp()))
      if (auto attr = program.getArgAttrOfType<StringAttr>(arg.getArgNumber(), "tile.name"))
        name = attr.str();
  }
  return fail(op, op.shortfallMessage(name, std::to_string(size), std::to_string(range)));
}

LogicalResult TileInterpreter::runKernel(KernelOp kernel, ArrayRef<HostTensor *> args,
                                         ArrayRef<int64_t> scalars) {
  if (failed(checkArgs(kernel, kernel.getFunctionType().getInputs(), args, scalars)))
    return failure();
  SmallVector<SmallVector<int64_t, 4>> shapes;
  for (HostTensor *tensor : args)
    shapes.emplace_back(tensor->shape.begin(), tensor->shape.end());
  // One of two plans of an op, chosen by a run-time size: nothing to do at the other plan's sizes (as the runtime
  // skips its zero grid).
  if (RunIfAttr runIf = kernel.getRunIfAttr(); runIf && !runIf.holds(shapes[runIf.getArg()][runIf.getDim()]))
    return success();
  int64_t grid[3];
  for (auto [axis, attr] : llvm::enumerate(kernel.getGrid().getAsRange<GridAttr>()))
    grid[axis] = attr.evaluate(shapes);
  // The CPU runs the blocks one after another: a grid past 2^24 blocks would run for hours, not fail.
  constexpr int64_t kMaxExecutedBlocks = int64_t(1) << 24;
  int64_t blocks = 1;
  for (int64_t size : grid) {
    if (size < 0 || (size > 0 && blocks > kMaxExecutedBlocks / size))
      return fail(kernel, llvm::formatv("grid {0} x {1} x {2}: more blocks than the CPU executor runs (2^24)",
                                        grid[0], grid[1], grid[2]));
    blocks *= size;
  }
  Block &entry = kernel.getBody().front();
  for (int64_t z = 0; z < grid[2]; ++z)
    for (int64_t y = 0; y < grid[1]; ++y)
      for (int64_t x = 0; x < grid[0]; ++x) {
        env.clear();
        bindArgs(entry, args, scalars);
        programIds[0] = x;
        programIds[1] = y;
        programIds[2] = z;
        ++executor.blockCount;
        if (failed(executeBlock(entry, nullptr))) {
          executor.errorMessage +=
              llvm::formatv(" (kernel @{0}, block ({1}, {2}, {3}))", kernel.getSymName(), x, y, z);
          return failure();
        }
      }
  return success();
}

LogicalResult TileInterpreter::executeBlock(Block &block, SmallVectorImpl<RtValue> *yielded) {
  for (Operation &op : block)
    if (failed(execute(&op, yielded)))
      return failure();
  return success();
}

LogicalResult TileInterpreter::execute(Operation *op, SmallVectorImpl<RtValue> *yielded) {
  if (llvm::isa<ReturnOp>(op))
    return success();
  if (auto yield = llvm::dyn_cast<scf::YieldOp>(op)) {
    if (yielded) {
      yielded->clear();
      for (Value v : yield.getOperands())
        yielded->push_back(env.lookup(v));
    }
    return success();
  }
  if (auto forOp = llvm::dyn_cast<scf::ForOp>(op)) {
    int64_t lower = intOf(forOp.getLowerBound()), upper = intOf(forOp.getUpperBound()),
            step = intOf(forOp.getStep());
    if (step <= 0)
      return fail(op, llvm::formatv("non-positive step {0}", step));
    SmallVector<RtValue> carried;
    for (Value init : forOp.getInitArgs())
      carried.push_back(env.lookup(init));
    Block &body = *forOp.getBody();
    for (int64_t iv = lower; iv < upper; iv += step) {
      env[forOp.getInductionVar()] = RtValue::ofInt(iv);
      for (auto [arg, value] : llvm::zip(forOp.getRegionIterArgs(), carried))
        env[arg] = value;
      SmallVector<RtValue> next;
      if (failed(executeBlock(body, &next)))
        return failure();
      carried = std::move(next);
    }
    for (auto [result, value] : llvm::zip(forOp.getResults(), carried))
      env[result] = value;
    return success();
  }
  if (auto ifOp = llvm::dyn_cast<scf::IfOp>(op)) {
    Region &region = intOf(ifOp.getCondition()) ? ifOp.getThenRegion() : ifOp.getElseRegion();
    SmallVector<RtValue> results;
    if (!region.empty() && failed(executeBlock(region.front(), &results)))
      return failure();
    for (auto [result, value] : llvm::zip(ifOp.getResults(), results))
      env[result] = value;
    return success();
  }
  if (op->getDialect() && op->getDialect()->getNamespace() == "arith")
    return executeArith(op);
  if (op->getDialect() && op->getDialect()->getNamespace() == "tile")
    return executeTileOp(op);
  return fail(op, "the CPU tile executor does not support this op");
}

//===----------------------------------------------------------------------===//
// arith on index / integers / scalars
//===----------------------------------------------------------------------===//

static int64_t floorDiv(int64_t a, int64_t b) {
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0)))
    --q;
  return q;
}
static int64_t ceilDiv(int64_t a, int64_t b) { return -floorDiv(-a, b); }



/// After a failed table check the kernels set their outputs to NaN (the device library's varlen_poison_rows and
/// decode combine); here any block of such a kernel fills the whole tensor (the same result).
static void poisonOutput(HostTensor &t) { std::fill(t.data.begin(), t.data.end(), std::nanf("")); }

/// A tensor whose shape the others give (the kernels index it by theirs; TMA reads zeros past a tensor's end, the CPU
/// executor would read past it): "w2 is 8x64x40, not 8x96x40 (experts x hidden's columns x expert_out's columns)".
LogicalResult TileInterpreter::shaped(Operation *op, const HostTensor &tensor, ArrayRef<int64_t> want, StringRef name,
                                      StringRef why) {
  if (ArrayRef<int64_t>(tensor.shape) == want)
    return success();
  auto dims = [](ArrayRef<int64_t> shape) {
    return llvm::join(llvm::map_range(shape, [](int64_t size) { return std::to_string(size); }), "x");
  };
  return fail(op, llvm::formatv("{0} is {1}, not {2} ({3})", name, dims(tensor.shape), dims(want), why));
}

/// The cache rows a kernel uses of a sequence (an append's `newTokens` last rows, a decode's all of them: [0, length)),
/// checked again where the kernel uses them: its check kernel validates the same, but a program may launch the kernel
/// alone. The sequence has a length and a place in the cache (a row of the block table, or of the dense cache's
/// batch); both caches have the geometry the kernel indexes them by; the rows lie within the capacity (the table's
/// width in pages, or the cache's rows) and every page they use is one of the cache's.
LogicalResult TileInterpreter::checkCacheRows(DecodeBlockOp block, int64_t sequence, std::optional<int64_t> newTokens,
                                              const HostTensor &lens, const HostTensor *table, int64_t page,
                                              const HostTensor &kCache, const HostTensor &vCache, int64_t kvHeads,
                                              int64_t headDim, int64_t valueDim) {
  if (sequence >= lens.shape[0])
    return fail(block, llvm::formatv("sequence {0} has no length (seqlens holds {1})", sequence, lens.shape[0]));
  // A paged cache is [pages, page, heads, dim], a dense one [batch, heads, rows, dim].
  int64_t places = table ? table->shape[0] : kCache.shape[0];
  if (sequence >= places)
    return fail(block, llvm::formatv("sequence {0} is past the {1}'s {2} sequences", sequence,
                                     table ? "block table" : "cache", places));
  SmallVector<int64_t, 4> keyShape{kCache.shape[0], page, kvHeads, headDim};
  if (!table)
    keyShape = {kCache.shape[0], kvHeads, kCache.shape[2], headDim};
  SmallVector<int64_t, 4> valueShape(keyShape);
  valueShape.back() = valueDim;
  StringRef layout = table ? "pages x page x kv heads x D" : "B x kv heads x S x D";
  if (failed(shaped(block, kCache, keyShape, "k_cache", layout)) ||
      failed(shaped(block, vCache, valueShape, "v_cache", "k_cache's, with the value dim")))
    return failure();
  int64_t capacity = table ? table->shape[1] * page : kCache.shape[2], length = lens.ints[sequence];
  int64_t begin = newTokens ? length - *newTokens : 0, end = length;
  if (length < 0)
    return fail(block, llvm::formatv("sequence {0}'s length {1} is negative", sequence, length));
  if (begin < 0)
    return fail(block, llvm::formatv("sequence {0}'s length {1} does not hold its {2} new tokens", sequence, length,
                                     *newTokens));
  if (end > capacity)
    return fail(block, llvm::formatv("sequence {0}'s length {1} is past the cache's {2} rows", sequence, length,
                                     capacity));
  if (table)
    for (int64_t p = begin / page; p * page < end; ++p)
      if (int64_t id = table->ints[sequence * table->shape[1] + p]; id < 0 || id >= kCache.shape[0])
        return fail(block, llvm::formatv("sequence {0}'s page {1} names cache page {2} of {3}", sequence, p, id,
                                         kCache.shape[0]));
  return success();
}

/// One block of a decode kernel (#tile.decode), as attention_decode.cuh does it: the check of sequence x, the
/// split kernel's (split x, kv head x row group y, sequence z) over the split's keys, or the combine of query row x
/// of sequence y. Sums in double; out rounded to its element type, the partials f32.
LogicalResult TileInterpreter::decodeBlock(DecodeBlockOp block) {
  auto kernel = block->getParentOfType<KernelOp>();
  auto spec = cast<DecodeSpecAttr>(kernel.getSpecAttr());
  SmallVector<HostTensor *> t;
  for (Value v : block.getTensors())
    t.push_back(tensorOf(v));
  int64_t x = intOf(block.getX()), y = intOf(block.getY()), z = intOf(block.getZ());
  const int64_t page = spec.getPageSize(), paged = spec.isPaged() ? 1 : 0;
  const double inf = std::numeric_limits<double>::infinity();
  HostTensor &status = *t.back();
  switch (spec.getRole()) {
  case KernelRole::DecodeCheck:     // (k_cache, seqlens, [table], status)
  case KernelRole::KvAppendCheck: { // (key, k_cache, seqlens, [table], status): lengths hold the T new tokens too
    unsigned first = spec.getRole() == KernelRole::KvAppendCheck ? 1 : 0;
    HostTensor &k = *t[first], &lens = *t[first + 1];
    HostTensor *table = paged ? t[first + 2] : nullptr;
    int64_t capacity = paged ? table->shape[1] * page : k.shape[2];
    int64_t minLen = first ? t[0]->shape[2] : 0;
    int64_t len = lens.ints[x];
    auto report = [&](int32_t code, int64_t index, int64_t value) {
      if (status.ints[0] == 0)
        status.ints = {code, static_cast<int32_t>(x), static_cast<int32_t>(index), static_cast<int32_t>(value)};
    };
    if (len < 0)
      report(kSeqlenNegative, 0, len);
    else if (len > capacity)
      report(kSeqlenOverCapacity, capacity, len);
    else if (len < minLen)
      report(kSeqlenBelowNew, minLen, len);
    else if (paged)
      for (int64_t i = 0; i * page < len; ++i) {
        int64_t id = table->ints[x * table->shape[1] + i];
        if (id < 0 || id >= k.shape[0]) {
          report(kPageOutOfRange, i, id);
          break;
        }
      }
    return success();
  }
  case KernelRole::KvAppend: { // (key, value, k_cache, v_cache, seqlens, [table], status): tokens 4x.. of sequence y
    if (status.ints[0] != 0)
      return success();
    HostTensor &key = *t[0], &value = *t[1], &kCache = *t[2], &vCache = *t[3], &lens = *t[4];
    HostTensor *table = paged ? t[5] : nullptr;
    int64_t b = y, heads = key.shape[1], tokens = key.shape[2];
    // The lengths and pages kv_append_check validates, checked again: a program may launch this kernel alone.
    if (failed(shaped(block, value, {key.shape[0], heads, tokens, value.shape[3]}, "value", "key's, with its dim")))
      return failure();
    if (failed(checkCacheRows(block, b, tokens, lens, table, page, kCache, vCache, heads, key.shape[3],
                              value.shape[3])))
      return failure();
    int64_t first = lens.ints[b] - tokens;
    for (auto [src, cache] : {std::pair<HostTensor *, HostTensor *>{&key, &kCache}, {&value, &vCache}}) {
      int64_t dim = src->shape[3];
      for (int64_t tok = 4 * x; tok < std::min(4 * x + 4, tokens); ++tok)
        for (int64_t h = 0; h < heads; ++h) {
          int64_t pos = first + tok, row;
          if (paged)
            row = (table->ints[b * table->shape[1] + pos / page] * page + pos % page) * heads + h;
          else
            row = (b * heads + h) * cache->shape[2] + pos;
          for (int64_t c = 0; c < dim; ++c)
            cache->data[row * dim + c] = src->data[((b * heads + h) * tokens + tok) * dim + c];
        }
    }
    return success();
  }
  case KernelRole::DecodeSplit: { // (q, k, v, lens, [table], out, lse, o_part, lse_part, status)
    if (status.ints[0] != 0)
      return success();
    HostTensor &q = *t[0], &k = *t[1], &v = *t[2], &lens = *t[3];
    HostTensor *table = paged ? t[4] : nullptr;
    HostTensor &out = *t[4 + paged], &lse = *t[5 + paged], &oPart = *t[6 + paged], &lsePart = *t[7 + paged];
    int64_t heads = q.shape[1], tokens = q.shape[2], d = q.shape[3], dv = out.shape[3];
    int64_t group = spec.getGroup(), kvHeads = heads / group, rowGroups = spec.rowGroups();
    int64_t split = x, splits = oPart.shape[1], hk = y / rowGroups, rg = y % rowGroups, b = z;
    // The lengths and pages the decode's check kernel validates, checked again (a program may launch this alone).
    if (b >= q.shape[0])
      return fail(block, llvm::formatv("sequence {0} is past q's batch of {1}", b, q.shape[0]));
    if (failed(checkCacheRows(block, b, std::nullopt, lens, table, page, k, v, kvHeads, d, dv)) ||
        failed(shaped(block, out, {q.shape[0], heads, tokens, dv}, "out", "q's, with the value dim")) ||
        failed(shaped(block, lse, {q.shape[0], heads, tokens}, "lse", "q's rows")) ||
        failed(shaped(block, oPart, {q.shape[0], splits, heads * tokens, dv}, "o_part",
                      "B x splits x q's rows x Dv")) ||
        failed(shaped(block, lsePart, {q.shape[0], splits, heads * tokens}, "lse_part", "B x splits x q's rows")))
      return failure();
    int64_t len = lens.ints[b], tiles = (len + 63) / 64, perSplit = (tiles + splits - 1) / splits;
    int64_t begin = std::min(split * perSplit * 64, len), end = std::min((split + 1) * perSplit * 64, len);
    auto row = [&](int64_t key, int64_t dim) -> int64_t { // element offset of a cache row
      if (!paged)
        return ((b * kvHeads + hk) * k.shape[2] + key) * dim;
      int64_t id = table->ints[b * table->shape[1] + key / page];
      return ((id * page + key % page) * kvHeads + hk) * dim;
    };
    for (int64_t r = 16 * rg; r < std::min(16 * rg + 16, group * tokens); ++r) {
      int64_t h = hk * group + r / tokens, tok = r % tokens;
      int64_t last = spec.getCausal() ? std::min(end - 1, len - tokens + tok) : end - 1;
      std::vector<double> scores;
      double m = -inf;
      for (int64_t j = begin; j <= last; ++j) {
        double dot = 0.0;
        for (int64_t c = 0; c < d; ++c)
          dot += double(q.data[((b * heads + h) * tokens + tok) * d + c]) * k.data[row(j, d) + c];
        scores.push_back(dot * spec.getScale().getValueAsDouble());
        m = std::max(m, scores.back());
      }
      double sum = 0.0;
      for (double &s : scores)
        sum += (s = std::exp(s - m));
      std::vector<double> o(dv, 0.0);
      for (int64_t j = begin; j <= last; ++j)
        for (int64_t c = 0; c < dv; ++c)
          o[c] += scores[j - begin] / sum * v.data[row(j, dv) + c];
      double rowLse = scores.empty() ? -inf : m + std::log(sum);
      if (splits == 1) {
        for (int64_t c = 0; c < dv; ++c)
          out.data[((b * heads + h) * tokens + tok) * dv + c] = roundToElement(float(o[c]), out.kind);
        lse.data[(b * heads + h) * tokens + tok] = float(rowLse);
      } else {
        int64_t qrow = h * tokens + tok;
        for (int64_t c = 0; c < dv; ++c)
          oPart.data[((b * splits + split) * oPart.shape[2] + qrow) * dv + c] = float(o[c]);
        lsePart.data[(b * splits + split) * lsePart.shape[2] + qrow] = float(rowLse);
      }
    }
    return success();
  }
  default: { // (o_part, lse_part, out, lse, status)
    HostTensor &oPart = *t[0], &lsePart = *t[1], &out = *t[2], &lse = *t[3];
    int64_t splits = oPart.shape[1], rows = oPart.shape[2], dv = oPart.shape[3], qrow = x, b = y;
    if (status.ints[0] != 0) {
      poisonOutput(out);
      poisonOutput(lse);
      return success();
    }
    if (splits == 1)
      return success();
    double m = -inf, sum = 0.0;
    for (int64_t s = 0; s < splits; ++s)
      m = std::max(m, double(lsePart.data[(b * splits + s) * rows + qrow]));
    std::vector<double> o(dv, 0.0);
    if (m != -inf)
      for (int64_t s = 0; s < splits; ++s) {
        double ls = lsePart.data[(b * splits + s) * rows + qrow];
        double w = ls == -inf ? 0.0 : std::exp(ls - m);
        sum += w;
        for (int64_t c = 0; c < dv; ++c)
          o[c] += w * oPart.data[((b * splits + s) * rows + qrow) * dv + c];
      }
    for (int64_t c = 0; c < dv; ++c)
      out.data[(b * rows + qrow) * dv + c] = roundToElement(sum > 0.0 ? float(o[c] / sum) : 0.0f, out.kind);
    lse.data[b * rows + qrow] = sum > 0.0 ? float(m + std::log(sum)) : float(-inf);
    return success();
  }
  }
}

/// One block of a mixture-of-experts kernel (#tile.moe; moe_routing.cuh, gemm_ws.cuh's grouped form): the router and
/// the expert GEMMs the tile (row block x, column block y) of their output, sums in double rounded where the kernels
/// store; select and combine tokens 8x ..; the plan all of it; the permutation its grid-stride share of the routed
/// and padding rows. Scores in f32 (ties to the lower expert); a chosen row's rank is its place in token order (the
/// GPU's atomic order differs, and no result depends on it).
LogicalResult TileInterpreter::moeBlock(MoeBlockOp block) {
  auto kernel = block->getParentOfType<KernelOp>();
  auto spec = cast<MoeSpecAttr>(kernel.getSpecAttr());
  SmallVector<HostTensor *> t;
  for (Value v : block.getTensors())
    t.push_back(tensorOf(v));
  const int64_t x = intOf(block.getX()), y = intOf(block.getY());
  const int64_t experts = spec.getExperts(), topK = spec.getTopK();
  constexpr int64_t kGroupRows = device::kMoeGroupRows, kTokensABlock = device::kMoeTokensPerBlock;
  const int64_t blockM = kernel.getBlockM();
  const reference::Activation act = reference::parseActivation(stringifyActivation(spec.getActivation()).str())
                                        .value_or(reference::Activation::Identity);
  // The sizes the kernels take on trust, checked (a hand-written program's tensors may disagree): an error, not a
  // read or write past a tensor's end. A routing table holding fewer values than it needs (tokens x top_k routed
  // rows, E counts, E + 1 offsets, 1 + the row blocks of groups):
  auto holds = [&](const HostTensor &tensor, int64_t values, const char *name) -> LogicalResult {
    if (tensor.numElements() < values)
      return fail(block, llvm::formatv("{0} holds {1} value{2}, fewer than the {3} the routing writes or reads", name,
                                       tensor.numElements(), tensor.numElements() == 1 ? "" : "s", values));
    return success();
  };
  // A tensor whose shape the others give (a GEMM's operands, rows walked together):
  auto shaped = [&](const HostTensor &tensor, ArrayRef<int64_t> want, StringRef name, StringRef why) {
    return this->shaped(block, tensor, want, name, why);
  };
  // The tables a routed row's place (its expert's offset + its rank) is read from: ids and ranks of `routed` rows,
  // offsets [E + 1] and, where the padding rows are walked, counts [E].
  auto routing = [&](const HostTensor &ids, const HostTensor &ranks, const HostTensor &offsets,
                     const HostTensor *counts, int64_t routed) -> LogicalResult {
    return failure(failed(holds(ids, routed, "ids")) || failed(holds(ranks, routed, "ranks")) ||
                   failed(holds(offsets, experts + 1, "offsets")) ||
                   (counts && failed(holds(*counts, experts, "counts"))));
  };
  // The permuted rows' walk of the permute and its gradient's scatter (the kernels' warps): work item w < routed is
  // routed row w (token w / topK's j-th choice) at its expert's offset + rank; past them, (w - routed) / 127 names an
  // expert and (w - routed) % 127 one of its padding rows, past that expert's group when -1 comes back (counts: the
  // padding rows', null where only routed rows are asked for). Fails on an expert id out of range or a row outside
  // `rows`.
  auto permutedRow = [&](int64_t w, int64_t routed, const HostTensor &ids, const HostTensor &ranks,
                         const HostTensor &offsets, const HostTensor *counts, int64_t rows) -> FailureOr<int64_t> {
    int64_t row;
    if (w < routed) {
      if (ids.ints[w] < 0 || ids.ints[w] >= experts)
        return fail(block, llvm::formatv("routed row {0} names expert {1} of {2}", w, ids.ints[w], experts));
      row = offsets.ints[ids.ints[w]] + ranks.ints[w];
    } else {
      int64_t e = (w - routed) / (kGroupRows - 1), j = (w - routed) % (kGroupRows - 1);
      row = offsets.ints[e] + counts->ints[e] + j;
      if (row >= offsets.ints[e + 1])
        return int64_t(-1);
    }
    if (row < 0 || row >= rows)
      return fail(block, llvm::formatv("permuted row {0} out of the workspace's {1}", row, rows));
    return row;
  };
  // A GEMM's operands as its kernel takes them, named as its role names them: a [rows, K], the weight [K, N] (the
  // experts': [E, K, N], transposed [E, N, K]), c [rows, N].
  auto checkGemm = [&](const HostTensor &a, const HostTensor &w, const HostTensor &c, bool transposeB,
                       const char *aName, const char *wName, const char *cName) -> LogicalResult {
    const int64_t k = a.shape[1], n = c.shape[1];
    SmallVector<int64_t, 3> weight = {transposeB ? n : k, transposeB ? k : n};
    if (w.shape.size() == 3) // (the verifier gives the router's weight rank 2, the experts' rank 3)
      weight.insert(weight.begin(), experts);
    std::string rows = llvm::formatv("as many rows as {0}", cName).str();
    std::string dims = llvm::formatv("{0}{1}'s columns x {2}'s columns", w.shape.size() == 3 ? "experts x " : "",
                                     transposeB ? cName : aName, transposeB ? aName : cName)
                           .str();
    return failure(failed(shaped(a, {c.shape[0], k}, aName, rows)) || failed(shaped(w, weight, wName, dims)));
  };
  // C[rows 128x.., columns of block y] = A · B (B [K, N] or expert e's of [E, K, N]; transposeB: [E, N, K]),
  // rounded; the up projection stores act(g) (⊙ u) and, training, g (and u) rounded into `pre` (and `preUp`); an
  // accumulating one adds C's value. (Shapes checked by checkGemm.)
  auto gemmTile = [&](HostTensor &a, HostTensor &b, HostTensor *b2, HostTensor &c, int64_t expert, int64_t blockN,
                      bool transposeB = false, HostTensor *pre = nullptr, HostTensor *preUp = nullptr) {
    const int64_t rows = c.shape[0], n = c.shape[1], k = a.shape[1];
    const int64_t weightBase = b.shape.size() == 3 ? expert * k * n : 0;
    const bool accumulate = spec.getRole() == KernelRole::MoeDataGradAccumulate;
    for (int64_t r = x * blockM; r < std::min((x + 1) * blockM, rows); ++r)
      for (int64_t col = y * blockN; col < std::min((y + 1) * blockN, n); ++col) {
        double sum = 0.0, up = 0.0;
        for (int64_t i = 0; i < k; ++i) {
          int64_t at = weightBase + (transposeB ? col * k + i : i * n + col);
          sum += double(a.data[r * k + i]) * b.data[at];
          if (b2)
            up += double(a.data[r * k + i]) * b2->data[at];
        }
        double value = sum;
        if (spec.getRole() == KernelRole::MoeUp)  // act(g) (⊙ u): f32 on the GPU, rounded once
          value = reference::activation(act, float(sum)) * (b2 ? float(up) : 1.0f);
        if (accumulate)
          value += c.data[r * n + col];
        c.data[r * n + col] = roundToElement(float(value), c.kind);
        if (pre)
          pre->data[r * n + col] = roundToElement(float(sum), pre->kind);
        if (preUp)
          preUp->data[r * n + col] = roundToElement(float(up), preUp->kind);
      }
  };
  const int64_t blockN = kernel.getBlockN();  // (the GEMMs' tiles, the plan's)
  switch (spec.getRole()) {
  case KernelRole::MoeRouter: // (x, router, logits)
    if (failed(checkGemm(*t[0], *t[1], *t[2], false, "x", "router", "logits")))
      return failure();
    gemmTile(*t[0], *t[1], nullptr, *t[2], 0, blockN);
    return success();
  case KernelRole::MoeUp:                 // (logits, permuted, w1, [w_up], groups, hidden, [pre | gate, up])
  case KernelRole::MoeDown:               // (logits, hidden, w2, groups, expert_out)
  case KernelRole::MoeDataGrad:           // (logits, a, w, groups, c)
  case KernelRole::MoeDataGradAccumulate: { // (logits, a, w, groups, c)
    bool up = spec.getRole() == KernelRole::MoeUp, gated = up && spec.getGated(), train = up && spec.getTrain();
    bool down = spec.getRole() == KernelRole::MoeDown, transposeB = !up && !down;
    unsigned c = up ? (gated ? 5 : 4) : 4;
    auto [aName, wName, cName] = up     ? std::tuple("permuted", "w1", "hidden")
                                 : down ? std::tuple("hidden", "w2", "expert_out")
                                        : std::tuple("a", "w", "c");
    if (failed(checkGemm(*t[1], *t[2], *t[c], transposeB, aName, wName, cName)) ||
        (gated && failed(shaped(*t[3], t[2]->shape, "w_up", "w1's shape"))) ||
        (train && failed(shaped(*t[c + 1], t[c]->shape, gated ? "gate" : "pre", "hidden's shape"))) ||
        (train && gated && failed(shaped(*t[c + 2], t[c]->shape, "up", "hidden's shape"))))
      return failure();
    if (kGroupRows % blockM != 0)  // (the CUDA emitter refuses it too)
      return fail(block, llvm::formatv("block_m = {0} does not divide an expert's {1}-row groups: a tile would mix "
                                       "two experts' rows",
                                       blockM, kGroupRows));
    HostTensor &groups = *t[c - 1];
    // Row blocks past the ones in use (or past the rows) are never taken.
    int64_t inUse =
        groups.numElements() ? std::min<int64_t>(std::max<int32_t>(groups.ints[0], 0), t[c]->shape[0] / kGroupRows) : 0;
    if (failed(holds(groups, 1 + inUse, "groups")))
      return failure();
    int64_t group = x * blockM / kGroupRows;  // (the tile's rows lie in one group: blockM divides kGroupRows)
    if (group >= inUse)
      return success();
    int64_t expert = groups.ints[1 + group];
    if (expert < 0 || expert >= experts)  // (TMA reads zeros past the weights)
      return fail(block, llvm::formatv("row block {0} names expert {1} of {2}", x, expert, experts));
    gemmTile(*t[1], *t[2], gated ? t[3] : nullptr, *t[c], expert, blockN, transposeB, train ? t[c + 1] : nullptr,
             train && gated ? t[c + 2] : nullptr);
    return success();
  }
  case KernelRole::MoeWeightGrad: { // (logits, a [rows, m], b [rows, n], offsets, dw [E, m, n]): tile x of E x m x n
    HostTensor &a = *t[1], &b = *t[2], &offsets = *t[3], &dw = *t[4];
    const int64_t m = a.shape[1], n = b.shape[1];
    if (failed(holds(offsets, experts + 1, "offsets")) ||
        failed(shaped(b, {a.shape[0], n}, "b", "as many rows as a")) ||
        failed(shaped(dw, {experts, m, n}, "dw", "experts x a's columns x b's columns")))
      return failure();
    const int64_t rowTiles = (m + blockM - 1) / blockM, colTiles = (n + blockN - 1) / blockN;
    const int64_t expert = x / (rowTiles * colTiles), rowTile = x / colTiles % rowTiles, colTile = x % colTiles;
    if (expert >= experts)
      return success();
    const int64_t first = offsets.ints[expert], last = offsets.ints[expert + 1];
    if (first < 0 || last > a.shape[0] || first > last)
      return fail(block, llvm::formatv("expert {0}'s rows [{1}, {2}) out of the workspace's {3}", expert, first, last,
                                       a.shape[0]));
    for (int64_t i = rowTile * blockM; i < std::min((rowTile + 1) * blockM, m); ++i)
      for (int64_t j = colTile * blockN; j < std::min((colTile + 1) * blockN, n); ++j) {
        double sum = 0.0;
        for (int64_t r = first; r < last; ++r)
          sum += double(a.data[r * m + i]) * b.data[r * n + j];
        dw.data[(expert * m + i) * n + j] = roundToElement(float(sum), dw.kind);
      }
    return success();
  }
  case KernelRole::MoeScatterGrad: { // (dy, expert_out, counts, ids, weights, ranks, offsets, d_expert_out, d_weights)
    HostTensor &dy = *t[0], &expertOut = *t[1], &counts = *t[2], &ids = *t[3], &weights = *t[4], &ranks = *t[5],
               &offsets = *t[6], &dOut = *t[7], &dWeights = *t[8];
    // (routed: dy's tokens x top_k, as the kernel counts them)
    const int64_t dOutWidth = dy.shape[1], routed = dy.shape[0] * topK, total = routed + experts * (kGroupRows - 1);
    if (failed(routing(ids, ranks, offsets, &counts, routed)) || failed(holds(weights, routed, "weights")) ||
        failed(holds(dWeights, routed, "d_weights")) ||
        failed(shaped(dOut, {dOut.shape[0], dOutWidth}, "d_expert_out", "dy's columns")) ||
        failed(shaped(expertOut, dOut.shape, "expert_out", "d_expert_out's shape")))
      return failure();
    const int64_t warps = kTokensABlock * ((dy.shape[0] + kTokensABlock - 1) / kTokensABlock);
    for (int64_t w0 = x * kTokensABlock; w0 < total; w0 += warps)
      for (int64_t w = w0; w < std::min(w0 + kTokensABlock, total); ++w) {
        FailureOr<int64_t> found = permutedRow(w, routed, ids, ranks, offsets, &counts, dOut.shape[0]);
        if (failed(found))
          return failure();
        if (*found < 0)
          continue;
        const int64_t row = *found;
        float dot = 0.0f;
        for (int64_t c = 0; c < dOutWidth; ++c) {
          float g = w < routed ? dy.data[(w / topK) * dOutWidth + c] : 0.0f;
          if (w < routed)
            dot = std::fma(g, expertOut.data[row * dOutWidth + c], dot);
          dOut.data[row * dOutWidth + c] = roundToElement(w < routed ? weights.data[w] * g : 0.0f, dOut.kind);
        }
        if (w < routed)
          dWeights.data[w] = dot;
      }
    return success();
  }
  case KernelRole::MoeActivationGrad: { // (logits, pre, [up], dh, offsets, d_pre, [d_up]): block 0 takes it all
    if (x != 0)
      return success();
    bool gated = spec.getGated();
    HostTensor &pre = *t[1], &dh = *t[gated ? 3 : 2], &offsets = *t[gated ? 4 : 3], &dPre = *t[gated ? 5 : 4];
    HostTensor *up = gated ? t[2] : nullptr, *dUp = gated ? t[6] : nullptr;
    if (failed(holds(offsets, experts + 1, "offsets")))
      return failure();
    for (auto [tensor, name] :
         {std::pair<HostTensor *, const char *>{up, "up"}, {&dh, "dh"}, {&dPre, "d_pre"}, {dUp, "d_up"}})
      if (tensor && failed(shaped(*tensor, pre.shape, name, "pre's shape")))
        return failure();
    // The rows in use, offsets[E] (the kernel reads that many rows of each):
    const int64_t rows = offsets.ints[experts], count = rows * pre.shape[1];
    if (rows > pre.shape[0])
      return fail(block,
                  llvm::formatv("offsets[{0}] puts {1} rows in use, past pre's {2}", experts, rows, pre.shape[0]));
    for (int64_t i = 0; i < count; ++i) {
      double g = pre.data[i], d = dh.data[i];
      double derivative = reference::activationDerivative(act, g);
      dPre.data[i] = roundToElement(float(up ? d * up->data[i] * derivative : d * derivative), dPre.kind);
      if (dUp)
        dUp->data[i] = roundToElement(float(d * reference::activation(act, g)), dUp->kind);
    }
    return success();
  }
  case KernelRole::MoeSelectGrad: { // (logits, ids, weights, d_weights, d_logits): tokens 8x..
    HostTensor &logits = *t[0], &ids = *t[1], &weights = *t[2], &dWeights = *t[3], &dLogits = *t[4];
    const int64_t tokens = logits.shape[0];
    if (failed(shaped(logits, {tokens, experts}, "logits", "tokens x experts")) ||
        failed(holds(ids, tokens * topK, "ids")) || failed(holds(weights, tokens * topK, "weights")) ||
        failed(holds(dWeights, tokens * topK, "d_weights")) || failed(holds(dLogits, tokens * experts, "d_logits")))
      return failure();
    for (int64_t tok = x * kTokensABlock; tok < std::min((x + 1) * kTokensABlock, tokens); ++tok) {
      for (int64_t s = 0; s < topK; ++s)
        if (ids.ints[tok * topK + s] < 0 || ids.ints[tok * topK + s] >= experts)
          return fail(block, llvm::formatv("token {0} names expert {1} of {2}", tok, ids.ints[tok * topK + s],
                                           experts));
      const float *row = logits.data.data() + tok * experts;
      float wDot = 0.0f, m = -std::numeric_limits<float>::infinity(), sum = 0.0f, sigmaSum = 0.0f;
      for (int64_t s = 0; s < topK; ++s) {
        wDot += weights.data[tok * topK + s] * dWeights.data[tok * topK + s];
        sigmaSum += 1.0f / (1.0f + std::exp(-row[ids.ints[tok * topK + s]]));
      }
      for (int64_t e = 0; e < experts; ++e)
        m = std::max(m, row[e]);
      for (int64_t e = 0; e < experts; ++e)
        sum += std::exp(row[e] - m);
      for (int64_t e = 0; e < experts; ++e) {
        float dw = 0.0f, w = 0.0f;
        bool chosen = false;
        for (int64_t s = 0; s < topK; ++s)
          if (ids.ints[tok * topK + s] == e)
            chosen = true, dw = dWeights.data[tok * topK + s], w = weights.data[tok * topK + s];
        float grad;
        if (!spec.getSigmoid())
          grad = spec.getRenormalize() ? (chosen ? w * (dw - wDot) : 0.0f) : std::exp(row[e] - m) / sum * (dw - wDot);
        else {
          float sg = 1.0f / (1.0f + std::exp(-row[e]));
          float dSigma = spec.getRenormalize() ? (dw - wDot) / sigmaSum : dw;
          // σ' = σ(l) σ(-l): 1 - σ(l) cancels to 0 in f32 past l ~ 17, where σ(-l) is still e^-l.
          grad = chosen ? dSigma * sg * (1.0f / (1.0f + std::exp(row[e]))) : 0.0f;
        }
        dLogits.data[tok * experts + e] = roundToElement(grad, dLogits.kind);
      }
    }
    return success();
  }
  case KernelRole::MoeSelect: { // (logits, counts, ids, weights, ranks)
    HostTensor &logits = *t[0], &counts = *t[1], &ids = *t[2], &weights = *t[3], &ranks = *t[4];
    const int64_t tokens = logits.shape[0];
    if (failed(shaped(logits, {tokens, experts}, "logits", "tokens x experts")) ||
        failed(holds(counts, experts, "counts")) || failed(holds(ids, tokens * topK, "ids")) ||
        failed(holds(weights, tokens * topK, "weights")) || failed(holds(ranks, tokens * topK, "ranks")))
      return failure();
    for (int64_t tok = x * kTokensABlock; tok < std::min((x + 1) * kTokensABlock, tokens); ++tok) {
      std::vector<float> score(experts);
      float m = -std::numeric_limits<float>::infinity(), sum = 0.0f;
      for (int64_t e = 0; e < experts; ++e)
        m = std::max(m, logits.data[tok * experts + e]);
      for (int64_t e = 0; e < experts; ++e) {
        float l = logits.data[tok * experts + e];
        score[e] = spec.getSigmoid() ? 1.0f / (1.0f + std::exp(-l)) : std::exp(l - m);
        sum += score[e];
      }
      if (!spec.getSigmoid())
        for (float &v : score)
          v /= sum;
      std::vector<bool> taken(experts, false);
      std::vector<std::pair<int64_t, float>> chosen;
      float chosenSum = 0.0f;
      for (int64_t s = 0; s < topK; ++s) {
        // By logit, the scores' order (an f32 sigmoid is 1 for every logit past ~17): the device's rule.
        int64_t best = -1;
        for (int64_t e = 0; e < experts; ++e)
          if (!taken[e] && (best < 0 || logits.data[tok * experts + e] > logits.data[tok * experts + best]))
            best = e;
        taken[best] = true;
        chosen.push_back({best, score[best]});
        chosenSum += score[best];
      }
      for (int64_t s = 0; s < topK; ++s) {
        int64_t i = tok * topK + s;
        ids.ints[i] = int32_t(chosen[s].first);
        weights.data[i] = spec.getRenormalize() ? chosen[s].second / chosenSum : chosen[s].second;
        ranks.ints[i] = counts.ints[chosen[s].first]++;
      }
    }
    return success();
  }
  case KernelRole::MoePlan: { // (logits, counts, offsets, groups, [saved_counts])
    HostTensor &counts = *t[1], &offsets = *t[2], &groups = *t[3];
    if (failed(holds(counts, experts, "counts")) || failed(holds(offsets, experts + 1, "offsets")) ||
        (spec.getTrain() && failed(holds(*t[4], experts, "saved_counts"))))
      return failure();
    // The row blocks the table lists (a negative count would move its writes before its start).
    int64_t blocks = 0;
    for (int64_t e = 0; e < experts; ++e) {
      if (counts.ints[e] < 0)
        return fail(block, llvm::formatv("expert {0}'s row count is {1}", e, counts.ints[e]));
      blocks += (counts.ints[e] + kGroupRows - 1) / kGroupRows;
    }
    if (failed(holds(groups, 1 + blocks, "groups")))
      return failure();
    int64_t block0 = 0;
    for (int64_t e = 0; e < experts; ++e) {
      int64_t expertBlocks = (counts.ints[e] + kGroupRows - 1) / kGroupRows;
      offsets.ints[e] = int32_t(block0 * kGroupRows);
      for (int64_t b = 0; b < expertBlocks; ++b)
        groups.ints[1 + block0 + b] = int32_t(e);
      block0 += expertBlocks;
    }
    offsets.ints[experts] = int32_t(block0 * kGroupRows);
    groups.ints[0] = int32_t(block0);
    if (spec.getTrain()) // (logits, counts, offsets, groups, saved_counts)
      for (int64_t e = 0; e < experts; ++e)
        t[4]->ints[e] = counts.ints[e];
    return success();
  }
  case KernelRole::MoePermute: { // (x, counts, ids, ranks, offsets, permuted)
    HostTensor &in = *t[0], &counts = *t[1], &ids = *t[2], &ranks = *t[3], &offsets = *t[4], &out = *t[5];
    // (routed: x's tokens x top_k, as the kernel counts them)
    const int64_t d = in.shape[1], routed = in.shape[0] * topK, total = routed + experts * (kGroupRows - 1);
    if (failed(routing(ids, ranks, offsets, &counts, routed)) ||
        failed(shaped(out, {out.shape[0], d}, "permuted", "x's columns")))
      return failure();
    const int64_t warps = kTokensABlock * ((out.shape[0] + kTokensABlock - 1) / kTokensABlock);
    for (int64_t w0 = x * kTokensABlock; w0 < total; w0 += warps)
      for (int64_t w = w0; w < std::min(w0 + kTokensABlock, total); ++w) {
        FailureOr<int64_t> found = permutedRow(w, routed, ids, ranks, offsets, &counts, out.shape[0]);
        if (failed(found))
          return failure();
        if (*found < 0)
          continue;
        const int64_t row = *found, source = w < routed ? w / topK : -1;  // (padding rows: zeros)
        for (int64_t c = 0; c < d; ++c)
          out.data[row * d + c] = source >= 0 ? in.data[source * d + c] : 0.0f;
      }
    return success();
  }
  case KernelRole::MoeGatherGrad: // (dx_perm, ids, ranks, offsets, dx): the combine with unit weights
  default: {                      // the combine: (expert_out, ids, weights, ranks, offsets, y)
    const bool gather = spec.getRole() == KernelRole::MoeGatherGrad;
    HostTensor &rows = *t[0], &ids = *t[1], &ranks = *t[gather ? 2 : 3], &offsets = *t[gather ? 3 : 4];
    HostTensor &out = *t.back(), *weights = gather ? nullptr : t[2];
    const int64_t tokens = out.shape[0], width = out.shape[1];
    if (failed(routing(ids, ranks, offsets, nullptr, tokens * topK)) ||
        (weights && failed(holds(*weights, tokens * topK, "weights"))) ||
        failed(shaped(rows, {rows.shape[0], width}, gather ? "dx_perm" : "expert_out",
                      gather ? "dx's columns" : "y's columns")))
      return failure();
    for (int64_t tok = x * kTokensABlock; tok < std::min((x + 1) * kTokensABlock, tokens); ++tok) {
      SmallVector<int64_t> found;  // (the token's k rows)
      for (int64_t i = tok * topK; i < (tok + 1) * topK; ++i) {
        FailureOr<int64_t> row = permutedRow(i, tokens * topK, ids, ranks, offsets, nullptr, rows.shape[0]);
        if (failed(row))
          return failure();
        found.push_back(*row);
      }
      for (int64_t c = 0; c < width; ++c) {
        float sum = 0.0f;
        for (int64_t s = 0; s < topK; ++s)
          sum = std::fma(weights ? weights->data[tok * topK + s] : 1.0f, rows.data[found[s] * width + c], sum);
        out.data[tok * width + c] = roundToElement(sum, out.kind);
      }
    }
    return success();
  }
  }
}

/// A document modifier's segment plan, as segments.cuh's attention_segment_plan writes it (segment_layout.h): the
/// forward's tile body is the table form's, so only flashc-run and the tests read it.
LogicalResult TileInterpreter::planSegments(PlanSegmentsOp op) {
  HostTensor &ids = *tensorOf(op.getIds());
  HostTensor &plan = *tensorOf(op.getPlan());
  int64_t sq = intOf(op.getQueries()), sk = intOf(op.getKeys());
  if (plan.shape.size() != 2 || plan.shape[1] != 4 || plan.shape[0] < device::segment_plan_rows(sq))
    return fail(op, llvm::formatv("segment plan of {0} rows for {1} queries: it needs {2}",
                                  plan.shape.empty() ? 0 : plan.shape[0], sq, device::segment_plan_rows(sq)));
  auto idAt = [&](int64_t i) -> int64_t { return i < ids.shape[0] ? ids.ints[i] : 0; };
  auto row = [&](int64_t r) { return plan.ints.data() + r * 4; };
  std::vector<int64_t> starts;
  bool unsorted = false;
  for (int64_t i = 0; i < sq; ++i) {
    if (i == 0 || idAt(i) != idAt(i - 1))
      starts.push_back(i);
    unsorted = unsorted || (i > 0 && idAt(i) < idAt(i - 1));
  }
  int64_t documents = static_cast<int64_t>(starts.size());
  int32_t *header = row(0);
  if (unsorted || sq != sk || sq <= 0 || documents > device::kSegmentPlanMaxDocuments ||
      documents > device::segment_tile_bound(sq, 64)) {
    header[0] = device::kSegmentFallback;
    header[1] = header[2] = header[3] = -1;
    return success();
  }
  starts.push_back(sq);
  for (int s = 0; s < 3; ++s) {
    int blockM = device::segment_map_block_rows(s);
    int64_t bound = device::segment_tile_bound(sq, blockM), first = device::segment_map_row(sq, blockM), tiles = 0;
    for (int64_t d = 0; d < documents; ++d)
      tiles += (starts[d + 1] - starts[d] + blockM - 1) / blockM;
    header[1 + s] = static_cast<int32_t>(tiles <= bound ? tiles : -1);
    int64_t t = 0;
    for (int64_t d = 0; d < documents && tiles <= bound; ++d)
      for (int64_t i = 0; i < (starts[d + 1] - starts[d] + blockM - 1) / blockM; ++i, ++t) {
        int32_t *e = row(first + t);
        e[0] = static_cast<int32_t>(starts[d]);
        e[1] = static_cast<int32_t>(starts[d + 1] - starts[d]);
        e[2] = static_cast<int32_t>(i);
        e[3] = 1;
      }
    for (; t < bound; ++t)
      std::fill(row(first + t), row(first + t) + 4, 0);
  }
  header[0] = device::kSegmentForm;
  return success();
}

/// One block of a packed-sequences kernel (#tile.varlen), as varlen.cuh and attention_fwd_ws_varlen do it: the
/// plan (the offsets checked, the tile map written), the forward's query tile x of head y (its sequence from the
/// map; the last tile first under a causal mask), or the backward's blocks (delta and dq_accum's zeros for rows
/// 64x.. of head y; key tile x of kv head y; dQ rounded from dq_accum). Scores and sums in double (softcap, window
/// from the spec), out rounded to its element type; rows past the sequence are not written; a plan that failed its
/// checks poisons the backward's outputs.
LogicalResult TileInterpreter::varlenBlock(VarlenBlockOp block) {
  auto kernel = block->getParentOfType<KernelOp>();
  auto spec = cast<VarlenSpecAttr>(kernel.getSpecAttr());
  SmallVector<HostTensor *> t;
  for (Value v : block.getTensors())
    t.push_back(tensorOf(v));
  const int64_t blockM = spec.getBlockM();
  const KernelRole role = spec.getRole();
  if (role == KernelRole::VarlenBwdPrepare) { // (out, dout, delta, dq_accum): rows 64x.. of head y
    HostTensor &o = *t[0], &dO = *t[1], &delta = *t[2], &acc = *t[3];
    int64_t h = intOf(block.getY()), heads = o.shape[1], width = o.shape[2], dqWidth = acc.shape[2];
    for (int64_t r = 64 * intOf(block.getX()); r < std::min(64 * intOf(block.getX()) + 64, o.shape[0]); ++r) {
      double sum = 0.0;
      for (int64_t c = 0; c < width; ++c)
        sum += double(o.data[(r * heads + h) * width + c]) * dO.data[(r * heads + h) * width + c];
      delta.data[h * delta.shape[1] + r] = float(sum);
      for (int64_t c = 0; c < dqWidth; ++c)
        acc.data[(r * heads + h) * dqWidth + c] = 0.0f;
    }
    return success();
  }
  if (role == KernelRole::VarlenBwdFinish) { // (dq_accum, status, dq): rows 64x.. of head y
    HostTensor &acc = *t[0], &status = *t[1], &dq = *t[2];
    if (status.ints[0] != 0) {
      poisonOutput(dq);
      return success();
    }
    int64_t h = intOf(block.getY()), heads = dq.shape[1], width = dq.shape[2];
    for (int64_t r = 64 * intOf(block.getX()); r < std::min(64 * intOf(block.getX()) + 64, dq.shape[0]); ++r)
      for (int64_t c = 0; c < width; ++c)
        dq.data[(r * heads + h) * width + c] = roundToElement(acc.data[(r * heads + h) * width + c], dq.kind);
    return success();
  }
  if (role == KernelRole::VarlenBackward) {
    // (q, k, v, dout, lse, delta, dq_accum, dk, dv, cu_q, cu_k, key_map, status): key tile x of kv head y
    HostTensor &q = *t[0], &k = *t[1], &v = *t[2], &dO = *t[3], &lse = *t[4], &delta = *t[5], &acc = *t[6];
    HostTensor &dk = *t[7], &dv = *t[8], &cuQ = *t[9], &cuK = *t[10], &map = *t[11], &status = *t[12];
    int64_t tile = intOf(block.getX()), hk = intOf(block.getY());
    if (status.ints[0] != 0) {
      poisonOutput(dk);
      poisonOutput(dv);
      return success();
    }
    if (tile >= map.shape[0] || map.ints[2 * tile] < 0)
      return success();
    int64_t seq = map.ints[2 * tile], first = map.ints[2 * tile + 1];
    int64_t q0 = cuQ.ints[seq], lq = cuQ.ints[seq + 1] - q0, k0 = cuK.ints[seq], lk = cuK.ints[seq + 1] - k0;
    int64_t heads = q.shape[1], kvHeads = k.shape[1], d = q.shape[2], dvw = v.shape[2], group = spec.getGroup();
    const double scale = spec.getScale().getValueAsDouble();
    int64_t jBegin = (tile - first) * blockM, jEnd = std::min(jBegin + blockM, lk);
    std::vector<double> gk((jEnd - jBegin) * d, 0.0), gv((jEnd - jBegin) * dvw, 0.0);
    for (int64_t h = hk * group; h < (hk + 1) * group; ++h)
      for (int64_t i = 0; i < lq; ++i) {
        double rowLse = lse.data[h * lse.shape[1] + q0 + i];
        if (rowLse == -std::numeric_limits<double>::infinity())
          continue;
        int64_t pos = i + lk - lq;
        const float *qi = &q.data[((q0 + i) * heads + h) * d], *doi = &dO.data[((q0 + i) * heads + h) * dvw];
        for (int64_t j = jBegin; j < jEnd; ++j) {
          if ((spec.getWindowLeft() >= 0 && j < pos - spec.getWindowLeft()) ||
              (spec.getWindowRight() >= 0 && j > pos + spec.getWindowRight()))
            continue;
          const float *kj = &k.data[((k0 + j) * kvHeads + hk) * d], *vj = &v.data[((k0 + j) * kvHeads + hk) * dvw];
          double dot = 0.0, dp = 0.0;
          for (int64_t c = 0; c < d; ++c)
            dot += double(qi[c]) * kj[c];
          for (int64_t c = 0; c < dvw; ++c)
            dp += double(doi[c]) * vj[c];
          double p = std::exp(dot * scale - rowLse), ds = p * (dp - delta.data[h * delta.shape[1] + q0 + i]);
          for (int64_t c = 0; c < dvw; ++c)
            gv[(j - jBegin) * dvw + c] += p * doi[c];
          for (int64_t c = 0; c < d; ++c) {
            gk[(j - jBegin) * d + c] += ds * qi[c] * scale;
            acc.data[((q0 + i) * heads + h) * d + c] += float(ds * kj[c] * scale);
          }
        }
      }
    for (int64_t j = jBegin; j < jEnd; ++j) {
      for (int64_t c = 0; c < d; ++c)
        dk.data[((k0 + j) * kvHeads + hk) * d + c] = roundToElement(float(gk[(j - jBegin) * d + c]), dk.kind);
      for (int64_t c = 0; c < dvw; ++c)
        dv.data[((k0 + j) * kvHeads + hk) * dvw + c] = roundToElement(float(gv[(j - jBegin) * dvw + c]), dv.kind);
    }
    return success();
  }
  if (role == KernelRole::VarlenPlan || role == KernelRole::VarlenKeyPlan) {
    // (cu_q, cu_k, q, k, map, status): the map over cu_q's query tiles or (key plan) cu_k's key tiles
    HostTensor &cuQ = *t[0], &cuK = *t[1], &map = *t[4], &status = *t[5];
    for (auto [tensor, cu, rows] : {std::tuple<int32_t, HostTensor *, int64_t>{0, &cuQ, t[2]->shape[0]},
                                    {1, &cuK, t[3]->shape[0]}})
      for (int64_t i = 0; i < static_cast<int64_t>(cu->ints.size()) && status.ints[0] == 0; ++i) {
        int64_t value = cu->ints[i];
        int32_t code = i == 0 && value < 0                 ? kFirstOffsetNegative
                       : i > 0 && value < cu->ints[i - 1] ? kOffsetsDecrease
                       : value > rows                     ? kOffsetPastRows
                                                          : 0;
        if (code)
          status.ints = {code, static_cast<int32_t>(i), tensor, static_cast<int32_t>(value)};
      }
    if (status.ints[0] != 0)
      return success();
    int64_t entries = map.shape[0], next = 0;
    HostTensor &cu = role == KernelRole::VarlenKeyPlan ? cuK : cuQ;
    for (int64_t b = 0; b + 1 < static_cast<int64_t>(cu.ints.size()); ++b) {
      int64_t tiles = (cu.ints[b + 1] - cu.ints[b] + blockM - 1) / blockM, first = next;
      for (int64_t i = 0; i < tiles && next < entries; ++i, ++next) {
        map.ints[2 * next] = static_cast<int32_t>(b);
        map.ints[2 * next + 1] = static_cast<int32_t>(first);
      }
    }
    for (; next < entries; ++next) {
      map.ints[2 * next] = -1;
      map.ints[2 * next + 1] = 0;
    }
    return success();
  }
  // (q, k, v, cu_q, cu_k, tile_map, status, out, lse)
  HostTensor &q = *t[0], &k = *t[1], &v = *t[2], &cuQ = *t[3], &cuK = *t[4], &map = *t[5], &status = *t[6];
  HostTensor &out = *t[7], &lse = *t[8];
  int64_t tile = intOf(block.getX()), h = intOf(block.getY());
  if (status.ints[0] != 0) {
    poisonOutput(out);
    poisonOutput(lse);
    return success();
  }
  if (tile >= map.shape[0] || map.ints[2 * tile] < 0)
    return success();
  int64_t seq = map.ints[2 * tile], first = map.ints[2 * tile + 1];
  int64_t q0 = cuQ.ints[seq], lq = cuQ.ints[seq + 1] - q0, k0 = cuK.ints[seq], lk = cuK.ints[seq + 1] - k0;
  int64_t count = (lq + blockM - 1) / blockM, i = tile - first;
  int64_t mBlock = spec.isCausal() ? count - 1 - i : i;
  int64_t heads = q.shape[1], d = q.shape[2], dv = v.shape[2], kvHeads = k.shape[1], hk = h / spec.getGroup();
  const double inf = std::numeric_limits<double>::infinity(), scale = spec.getScale().getValueAsDouble(),
               cap = spec.getSoftcap().getValueAsDouble();
  for (int64_t r = mBlock * blockM; r < std::min((mBlock + 1) * blockM, lq); ++r) {
    int64_t pos = r + lk - lq; // bottom-right aligned
    std::vector<double> scores(lk, -inf);
    double m = -inf;
    for (int64_t j = 0; j < lk; ++j) {
      bool visible = (spec.getWindowLeft() < 0 || j >= pos - spec.getWindowLeft()) &&
                     (spec.getWindowRight() < 0 || j <= pos + spec.getWindowRight());
      if (!visible)
        continue;
      double dot = 0.0;
      for (int64_t c = 0; c < d; ++c)
        dot += double(q.data[((q0 + r) * heads + h) * d + c]) * k.data[((k0 + j) * kvHeads + hk) * d + c];
      double s = dot * scale;
      if (cap > 0.0)
        s = cap * std::tanh(s / cap);
      scores[j] = s;
      m = std::max(m, s);
    }
    double sum = 0.0;
    for (double &s : scores)
      sum += (s = s == -inf ? 0.0 : std::exp(s - m));
    for (int64_t c = 0; c < dv; ++c) {
      double o = 0.0;
      for (int64_t j = 0; j < lk; ++j)
        if (scores[j] != 0.0)
          o += scores[j] * v.data[((k0 + j) * kvHeads + hk) * dv + c];
      out.data[((q0 + r) * heads + h) * dv + c] = roundToElement(sum > 0.0 ? float(o / sum) : 0.0f, out.kind);
    }
    lse.data[h * lse.shape[1] + q0 + r] = sum > 0.0 ? float(m + std::log(sum)) : float(-inf);
  }
  return success();
}

LogicalResult TileInterpreter::executeArith(Operation *op) {
  auto setInt = [&](int64_t v) {
    env[op->getResult(0)] = RtValue::ofInt(v);
    return success();
  };
  auto setFloat = [&](double v) {
    env[op->getResult(0)] = RtValue::ofFloat(v);
    return success();
  };
  auto lhs = [&] { return intOf(op->getOperand(0)); };
  auto rhs = [&] { return intOf(op->getOperand(1)); };
  auto nonZeroDivisor = [&]() -> LogicalResult {
    if (rhs() == 0)
      return fail(op, "division by zero");
    return success();
  };
  if (auto constant = llvm::dyn_cast<arith::ConstantOp>(op)) {
    if (auto intAttr = llvm::dyn_cast<IntegerAttr>(constant.getValue()))
      return setInt(intAttr.getType().isInteger(1) ? (intAttr.getValue().getBoolValue() ? 1 : 0)
                                                   : intAttr.getValue().getSExtValue());
    if (auto floatAttr = llvm::dyn_cast<FloatAttr>(constant.getValue()))
      return setFloat(floatAttr.getValueAsDouble());
    return fail(op, "unsupported constant");
  }
  return llvm::TypeSwitch<Operation *, LogicalResult>(op)
      .Case<arith::AddIOp>([&](auto) { return setInt(lhs() + rhs()); })
      .Case<arith::SubIOp>([&](auto) { return setInt(lhs() - rhs()); })
      .Case<arith::MulIOp>([&](auto) { return setInt(lhs() * rhs()); })
      .Case<arith::DivUIOp, arith::DivSIOp>([&](auto) -> LogicalResult {
        if (failed(nonZeroDivisor()))
          return failure();
        return setInt(lhs() / rhs());
      })
      .Case<arith::CeilDivSIOp, arith::CeilDivUIOp>([&](auto) -> LogicalResult {
        if (failed(nonZeroDivisor()))
          return failure();
        return setInt(ceilDiv(lhs(), rhs()));
      })
      .Case<arith::FloorDivSIOp>([&](auto) -> LogicalResult {
        if (failed(nonZeroDivisor()))
          return failure();
        return setInt(floorDiv(lhs(), rhs()));
      })
      .Case<arith::RemSIOp, arith::RemUIOp>([&](auto) -> LogicalResult {
        if (failed(nonZeroDivisor()))
          return failure();
        return setInt(lhs() % rhs());
      })
      .Case<arith::MinSIOp, arith::MinUIOp>([&](auto) { return setInt(std::min(lhs(), rhs())); })
      .Case<arith::MaxSIOp, arith::MaxUIOp>([&](auto) { return setInt(std::max(lhs(), rhs())); })
      .Case<arith::AndIOp>([&](auto) { return setInt(lhs() & rhs()); })
      .Case<arith::OrIOp>([&](auto) { return setInt(lhs() | rhs()); })
      .Case<arith::XOrIOp>([&](auto) { return setInt(lhs() ^ rhs()); })
      .Case<arith::IndexCastOp, arith::IndexCastUIOp, arith::ExtSIOp, arith::ExtUIOp,
            arith::TruncIOp>([&](auto) { return setInt(lhs()); })
      .Case<arith::SelectOp>([&](arith::SelectOp select) {
        env[op->getResult(0)] = env.lookup(intOf(select.getCondition()) ? select.getTrueValue()
                                                                        : select.getFalseValue());
        return success();
      })
      .Case<arith::CmpIOp>([&](arith::CmpIOp cmp) {
        int64_t a = lhs(), b = rhs();
        bool result = false;
        switch (cmp.getPredicate()) {
        case arith::CmpIPredicate::eq:
          result = a == b;
          break;
        case arith::CmpIPredicate::ne:
          result = a != b;
          break;
        case arith::CmpIPredicate::slt:
        case arith::CmpIPredicate::ult:
          result = a < b;
          break;
        case arith::CmpIPredicate::sle:
        case arith::CmpIPredicate::ule:
          result = a <= b;
          break;
        case arith::CmpIPredicate::sgt:
        case arith::CmpIPredicate::ugt:
          result = a > b;
          break;
        case arith::CmpIPredicate::sge:
        case arith::CmpIPredicate::uge:
          result = a >= b;
          break;
        }
        return setInt(result ? 1 : 0);
      })
      .Case<arith::AddFOp>(
          [&](auto) { return setFloat(floatOf(op->getOperand(0)) + floatOf(op->getOperand(1))); })
      .Case<arith::SubFOp>(
          [&](auto) { return setFloat(floatOf(op->getOperand(0)) - floatOf(op->getOperand(1))); })
      .Case<arith::MulFOp>(
          [&](auto) { return setFloat(floatOf(op->getOperand(0)) * floatOf(op->getOperand(1))); })
      .Case<arith::DivFOp>(
          [&](auto) { return setFloat(floatOf(op->getOperand(0)) / floatOf(op->getOperand(1))); })
      .Default([&](Operation *) { return fail(op, "unsupported arith op"); });
}

//===----------------------------------------------------------------------===//
// tile ops
//===----------------------------------------------------------------------===//

LogicalResult TileInterpreter::gatherIndices(Operation *op, OperandRange indices,
                                             SmallVectorImpl<int64_t> &out) {
  for (Value index : indices)
    out.push_back(intOf(index));
  return success();
}

LogicalResult TileInterpreter::linearIndex(Operation *op, HostTensor &tensor,
                                           ArrayRef<int64_t> index, int64_t &offset) {
  offset = 0;
  for (size_t d = 0; d < tensor.shape.size(); ++d) {
    if (index[d] < 0 || index[d] >= tensor.shape[d])
      return fail(op, llvm::formatv("index {0} out of range for dimension {1} of size {2}",
                                    index[d], d, tensor.shape[d]));
    offset = offset * tensor.shape[d] + index[d];
  }
  return success();
}

/// Tile (r, c) of a load/store at `index`: rows walk dim rank-2, columns dim
/// rank-1; a rank-1 tensor is a single row (rows r >= 1 are out of range).
struct TileInterpreter::RowColumnView {
  SmallVector<int64_t> index;
  int64_t row0 = 0, col0 = 0;
  explicit RowColumnView(ArrayRef<int64_t> start) : index(start.begin(), start.end()) {
    col0 = index.back();
    if (index.size() >= 2)
      row0 = index[index.size() - 2];
  }
  LogicalResult locate(TileInterpreter &interp, Operation *op, HostTensor &tensor, int64_t r,
                       int64_t c, int64_t &offset) {
    size_t rank = index.size();
    if (rank == 1 && r != 0)
      return interp.fail(op, llvm::formatv("row {0} of a rank-1 tensor is out of range", r));
    if (rank >= 2)
      index[rank - 2] = row0 + r;
    index[rank - 1] = col0 + c;
    return interp.linearIndex(op, tensor, index, offset);
  }
};

/// The reference activation of a tile activation kind (same names).
static reference::Activation referenceActivation(Activation kind) {
  return reference::parseActivation(stringifyActivation(kind).str())
      .value_or(reference::Activation::Identity);
}

LogicalResult TileInterpreter::executeTileOp(Operation *op) {
  auto setTile = [&](TilePtr tile) {
    env[op->getResult(0)] = RtValue::ofTile(std::move(tile));
    return success();
  };
  // Elementwise map over an f32 register tile into a fresh tile.
  auto mapTile = [&](Value source, auto fn) {
    TilePtr in = tileOf(source);
    TilePtr out = cloneTile(*in);
    for (float &x : out->data)
      x = fn(x);
    return setTile(out);
  };

  return llvm::TypeSwitch<Operation *, LogicalResult>(op)
      .Case<ProgramIdOp>([&](ProgramIdOp pid) {
        env[pid.getResult()] = RtValue::ofInt(programIds[static_cast<int>(pid.getAxis())]);
        return success();
      })
      .Case<DimOp>([&](DimOp dim) {
        HostTensor *tensor = tensorOf(dim.getTensor());
        env[dim.getResult()] = RtValue::ofInt(tensor->shape[static_cast<int64_t>(dim.getIndex())]);
        return success();
      })
      .Case<LoadOp>([&](LoadOp load) -> LogicalResult {
        HostTensor &tensor = *tensorOf(load.getSource());
        TilePtr tile = newTile(load.getType());
        SmallVector<int64_t> index;
        (void)gatherIndices(op, load.getIndices(), index);
        int64_t rowLimit = intOf(load.getRowLimit()), colLimit = intOf(load.getColLimit());
        RowColumnView view(index);
        for (int64_t r = 0; r < tile->rows; ++r)
          for (int64_t c = 0; c < tile->cols; ++c) {
            if (view.row0 + r >= rowLimit || view.col0 + c >= colLimit)
              continue;
            int64_t offset;
            if (failed(view.locate(*this, op, tensor, r, c, offset)))
              return failure();
            tile->at(r, c) = tensor.data[offset];
          }
        return setTile(tile);
      })
      .Case<StoreOp, AtomicAddOp>([&](auto store) -> LogicalResult {
        bool accumulate = llvm::isa<AtomicAddOp>(op);
        HostTensor &tensor = *tensorOf(store.getDest());
        TilePtr tile = tileOf(store.getValue());
        SmallVector<int64_t> index;
        (void)gatherIndices(op, store.getIndices(), index);
        int64_t rowLimit = intOf(store.getRowLimit()), colLimit = intOf(store.getColLimit());
        RowColumnView view(index);
        for (int64_t r = 0; r < tile->rows; ++r)
          for (int64_t c = 0; c < tile->cols; ++c) {
            if (view.row0 + r >= rowLimit || view.col0 + c >= colLimit)
              continue;
            int64_t offset;
            if (failed(view.locate(*this, op, tensor, r, c, offset)))
              return failure();
            float value = accumulate ? tensor.data[offset] + tile->at(r, c) : tile->at(r, c);
            tensor.data[offset] = roundToElement(value, tensor.kind);
          }
        return success();
      })
      .Case<LoadRowsOp>([&](LoadRowsOp load) -> LogicalResult {
        HostTensor &tensor = *tensorOf(load.getSource());
        TilePtr tile = newTile(load.getType());
        SmallVector<int64_t> index;
        (void)gatherIndices(op, load.getIndices(), index);
        int64_t row0 = index.back(), limit = intOf(load.getRowLimit());
        for (int64_t r = 0; r < tile->rows; ++r) {
          if (row0 + r >= limit)
            continue;
          index.back() = row0 + r;
          int64_t offset;
          if (failed(linearIndex(op, tensor, index, offset)))
            return failure();
          tile->data[r] = tensor.data[offset];
        }
        return setTile(tile);
      })
      .Case<StoreRowsOp>([&](StoreRowsOp store) -> LogicalResult {
        HostTensor &tensor = *tensorOf(store.getDest());
        TilePtr tile = tileOf(store.getValue());
        SmallVector<int64_t> index;
        (void)gatherIndices(op, store.getIndices(), index);
        int64_t row0 = index.back(), limit = intOf(store.getRowLimit());
        for (int64_t r = 0; r < tile->rows; ++r) {
          if (row0 + r >= limit)
            continue;
          index.back() = row0 + r;
          int64_t offset;
          if (failed(linearIndex(op, tensor, index, offset)))
            return failure();
          tensor.data[offset] = tile->data[r];
        }
        return success();
      })
      .Case<AddBiasOp>([&](AddBiasOp bias) -> LogicalResult {
        HostTensor &tensor = *tensorOf(bias.getBias());
        TilePtr out = cloneTile(*tileOf(bias.getAcc()));
        int64_t col0 = intOf(bias.getCol0()), limit = intOf(bias.getColLimit());
        for (int64_t c = 0; c < out->cols; ++c) {
          if (col0 + c >= limit)
            continue;
          int64_t offset;
          if (failed(linearIndex(op, tensor, {col0 + c}, offset)))
            return failure();
          for (int64_t r = 0; r < out->rows; ++r)
            out->at(r, c) += tensor.data[offset];
        }
        return setTile(out);
      })
      .Case<FillOp>([&](FillOp fill) {
        TilePtr tile = newTile(fill.getType());
        float value =
            roundToElement(static_cast<float>(fill.getValue().convertToDouble()), tile->kind);
        std::fill(tile->data.begin(), tile->data.end(), value);
        return setTile(tile);
      })
      .Case<CopyOp>([&](CopyOp copy) { return setTile(cloneTile(*tileOf(copy.getSource()))); })
      .Case<ConvertOp>([&](ConvertOp convert) {
        TilePtr out = cloneTile(*tileOf(convert.getSource()));
        out->kind = elementKindOf(llvm::cast<TileType>(convert.getType()).getElementType());
        for (float &x : out->data)
          x = roundToElement(x, out->kind);
        return setTile(out);
      })
      .Case<MatmulOp>([&](MatmulOp matmul) {
        TilePtr a = tileOf(matmul.getA()), b = tileOf(matmul.getB());
        TilePtr out = cloneTile(*tileOf(matmul.getAcc()));
        bool ta = matmul.getTransposeA(), tb = matmul.getTransposeB();
        int64_t k = ta ? a->rows : a->cols;
        for (int64_t m = 0; m < out->rows; ++m)
          for (int64_t n = 0; n < out->cols; ++n) {
            float sum = out->at(m, n);
            for (int64_t kk = 0; kk < k; ++kk) {
              float x = ta ? a->at(kk, m) : a->at(m, kk);
              float y = tb ? b->at(n, kk) : b->at(kk, n);
              sum += x * y;
            }
            out->at(m, n) = sum;
          }
        return setTile(out);
      })
      .Case<MaskOp>([&](MaskOp mask) {
        TilePtr out = cloneTile(*tileOf(mask.getScores()));
        int64_t row0 = intOf(mask.getRow0()), col0 = intOf(mask.getCol0()),
                limit = intOf(mask.getColLimit()), shift = intOf(mask.getOffset());
        int64_t left = static_cast<int64_t>(mask.getWindowLeft()),
                right = static_cast<int64_t>(mask.getWindowRight());
        bool transposed = mask.getTransposed();
        Region *modifier = nullptr;
        if (auto sym = mask.getMaskModAttr()) {
          auto maskMod = SymbolTable::lookupNearestSymbolFrom<MaskModOp>(mask, sym);
          if (!maskMod)
            return fail(mask, "mask modifier " + sym.getValue().str() + " not found");
          modifier = &maskMod.getBody();
        }
        ModifierTensors tensors(*this, mask.getModArgs());
        for (int64_t r = 0; r < out->rows; ++r)
          for (int64_t c = 0; c < out->cols; ++c) {
            // S^T tiles have keys on the rows.
            int64_t i = transposed ? row0 + c : row0 + r, j = transposed ? col0 + r : col0 + c;
            int64_t p = i + shift;
            bool hidden = j >= limit || (left >= 0 && j < p - left) || (right >= 0 && j > p + right) ||
                          (modifier && !tensors.visible(*modifier, i, j));
            if (hidden)
              out->at(r, c) = kNegInf;
          }
        return setTile(out);
      })
      .Case<DecodeBlockOp>([&](DecodeBlockOp block) { return decodeBlock(block); })
      .Case<VarlenBlockOp>([&](VarlenBlockOp block) { return varlenBlock(block); })
      .Case<MoeBlockOp>([&](MoeBlockOp block) { return moeBlock(block); })
      .Case<PlanSegmentsOp>([&](PlanSegmentsOp op) { return planSegments(op); })
      .Case<ClassifyBlocksOp>([&](ClassifyBlocksOp classify) -> LogicalResult {
        // Exact classes (the most precise of the sound tables the op allows).
        auto maskMod = SymbolTable::lookupNearestSymbolFrom<MaskModOp>(classify, classify.getMaskModAttr());
        if (!maskMod)
          return fail(classify, "mask modifier " + classify.getMaskMod().str() + " not found");
        ModifierTensors tensors(*this, classify.getModArgs());
        HostTensor &table = *tensorOf(classify.getTable());
        int64_t sq = intOf(classify.getQueries()), sk = intOf(classify.getKeys()), row = intOf(classify.getRow());
        int64_t tb = intOf(classify.getTableBatch()), th = intOf(classify.getTableHead());
        bool transposed = classify.getTransposed();
        int64_t rows = transposed ? sk : sq, cols = transposed ? sq : sk, columns = (table.shape[3] - 2) / 2;
        if (tb >= table.shape[0] || th >= table.shape[1] || row >= table.shape[2] || columns < 0 ||
            table.shape[3] != 2 * columns + 2)
          return fail(classify, "block-class table position out of range");
        int32_t *out = table.ints.data() + ((tb * table.shape[1] + th) * table.shape[2] + row) * table.shape[3];
        int64_t first = columns, end = 0;
        for (int64_t c = 0; c < columns; ++c) {
          bool any = false, all = true;
          for (int64_t r = row * 64; r < std::min(rows, row * 64 + 64); ++r)
            for (int64_t x = c * 64; x < std::min(cols, c * 64 + 64); ++x) {
              bool v = tensors.visible(maskMod.getBody(), transposed ? x : r, transposed ? r : x);
              any = any || v;
              all = all && v;
            }
          out[2 + c] = !any ? 0 : (all ? 2 : 1);
          if (any) {
            first = std::min(first, c);
            end = c + 1;
          }
        }
        out[0] = first < end ? static_cast<int32_t>(first) : 0;
        out[1] = first < end ? static_cast<int32_t>(end) : 0;
        for (int64_t c = columns - 1, after = columns; c >= 0; --c) {
          if (out[2 + c] != 0)
            after = c;
          out[2 + columns + c] = static_cast<int32_t>(after);
        }
        return success();
      })
      .Case<ScoreOp, ScoreGradOp>([&](auto op) -> LogicalResult {
        // tile.score: s -> @m(scale · s); tile.score_grad: g -> g · @m'(scale · raw).
        constexpr bool kGrad = std::is_same_v<decltype(op), ScoreGradOp>;
        auto scoreMod = SymbolTable::lookupNearestSymbolFrom<ScoreModOp>(op, op.getScoreModAttr());
        if (!scoreMod)
          return fail(op, "score modifier " + op.getScoreMod().str() + " not found");
        TilePtr raw, grad;
        if constexpr (kGrad) {
          raw = tileOf(op.getRaw());
          grad = tileOf(op.getGrad());
        } else {
          raw = tileOf(op.getScores());
        }
        TilePtr out = cloneTile(*raw);
        float scale = op.getScale().convertToDouble();
        int64_t row0 = intOf(op.getRow0()), col0 = intOf(op.getCol0()), queries = INT64_MAX;
        if constexpr (!kGrad)
          queries = intOf(op.getQueryLimit());
        bool transposed = op.getTransposed();
        ModifierTensors tensors(*this, op.getModArgs());
        for (int64_t r = 0; r < out->rows; ++r)
          for (int64_t c = 0; c < out->cols; ++c) {
            int64_t i = transposed ? row0 + c : row0 + r, j = transposed ? col0 + r : col0 + c;
            flashc::ScoreValue v = tensors.score(scoreMod.getBody(), scale * raw->at(r, c), i, j);
            if constexpr (kGrad) {
              float g = grad->at(r, c);
              out->at(r, c) = g == 0.0f ? 0.0f : g * static_cast<float>(v.derivative);
            } else {
              out->at(r, c) = i >= queries ? kNegInf : static_cast<float>(v.value);
            }
          }
        return setTile(out);
      })
      .Case<SoftcapOp>([&](SoftcapOp softcap) {
        float scale = softcap.getScale().convertToDouble(),
              cap = softcap.getCap().convertToDouble();
        return mapTile(softcap.getScores(),
                       [&](float x) { return cap * std::tanh(scale * x / cap); });
      })
      .Case<SoftcapGradOp>([&](SoftcapGradOp grad) {
        TilePtr g = tileOf(grad.getGrad()), capped = tileOf(grad.getCapped());
        TilePtr out = cloneTile(*g);
        float cap = grad.getCap().convertToDouble();
        for (size_t e = 0; e < out->data.size(); ++e) {
          float t = capped->data[e] / cap;
          out->data[e] = g->data[e] * (1.0f - t * t);
        }
        return setTile(out);
      })
      .Case<ScaleOp>([&](ScaleOp scale) {
        float factor = scale.getFactor().convertToDouble();
        return mapTile(scale.getSource(), [&](float x) { return factor * x; });
      })
      .Case<MulOp>([&](MulOp mul) {
        TilePtr a = tileOf(mul.getLhs()), b = tileOf(mul.getRhs());
        TilePtr out = cloneTile(*a);
        for (size_t e = 0; e < out->data.size(); ++e)
          out->data[e] = a->data[e] * b->data[e];
        return setTile(out);
      })
      .Case<ActivationOp>([&](ActivationOp act) {
        reference::Activation kind = referenceActivation(act.getKind());
        return mapTile(act.getSource(), [&](float x) {
          return static_cast<float>(reference::activation(kind, x));
        });
      })
      .Case<ActivationGradOp>([&](ActivationGradOp grad) {
        TilePtr g = tileOf(grad.getGrad()), pre = tileOf(grad.getPreactivation());
        TilePtr out = cloneTile(*g);
        reference::Activation kind = referenceActivation(grad.getKind());
        for (size_t e = 0; e < out->data.size(); ++e)
          out->data[e] = static_cast<float>(
              g->data[e] * reference::activationDerivative(kind, pre->data[e]));
        return setTile(out);
      })
      .Case<RowMaxOp>([&](RowMaxOp rowMax) {
        TilePtr s = tileOf(rowMax.getScores());
        TilePtr out = cloneTile(*tileOf(rowMax.getPrev()));
        for (int64_t r = 0; r < s->rows; ++r)
          for (int64_t c = 0; c < s->cols; ++c)
            out->data[r] = std::max(out->data[r], s->at(r, c));
        return setTile(out);
      })
      .Case<Exp2Op>([&](Exp2Op exp2) {
        TilePtr s = tileOf(exp2.getScores()), m = tileOf(exp2.getMax());
        TilePtr out = cloneTile(*s);
        float factor = static_cast<float>(exp2.getScale().convertToDouble() * kLog2e);
        for (int64_t r = 0; r < s->rows; ++r)
          for (int64_t c = 0; c < s->cols; ++c)
            out->at(r, c) =
                m->data[r] == kNegInf ? 0.0f : std::exp2((s->at(r, c) - m->data[r]) * factor);
        return setTile(out);
      })
      .Case<SoftmaxCorrectionOp>([&](SoftmaxCorrectionOp corr) {
        TilePtr oldMax = tileOf(corr.getOldMax()), newMax = tileOf(corr.getNewMax());
        TilePtr out = cloneTile(*oldMax);
        float factor = static_cast<float>(corr.getScale().convertToDouble() * kLog2e);
        for (int64_t r = 0; r < out->rows; ++r) {
          float o = oldMax->data[r], n = newMax->data[r];
          out->data[r] = n == kNegInf ? 1.0f : o == kNegInf ? 0.0f : std::exp2((o - n) * factor);
        }
        return setTile(out);
      })
      .Case<OnlineSumOp>([&](OnlineSumOp sum) {
        TilePtr l = tileOf(sum.getSum()), corr = tileOf(sum.getCorrection()),
                p = tileOf(sum.getProbs());
        TilePtr out = cloneTile(*l);
        for (int64_t r = 0; r < p->rows; ++r) {
          float rowSum = 0.0f;
          for (int64_t c = 0; c < p->cols; ++c)
            rowSum += p->at(r, c);
          out->data[r] = l->data[r] * corr->data[r] + rowSum;
        }
        return setTile(out);
      })
      .Case<RowSumOp>([&](RowSumOp rowSum) {
        TilePtr t = tileOf(rowSum.getSource());
        TilePtr out = newTile(rowSum.getType());
        for (int64_t r = 0; r < t->rows; ++r) {
          float sum = 0.0f;
          for (int64_t c = 0; c < t->cols; ++c)
            sum += t->at(r, c);
          out->data[r] = sum;
        }
        return setTile(out);
      })
      .Case<RescaleOp>([&](RescaleOp rescale) {
        TilePtr corr = tileOf(rescale.getCorrection());
        TilePtr out = cloneTile(*tileOf(rescale.getAcc()));
        for (int64_t r = 0; r < out->rows; ++r)
          for (int64_t c = 0; c < out->cols; ++c)
            out->at(r, c) *= corr->data[r];
        return setTile(out);
      })
      .Case<NormalizeOp>([&](NormalizeOp normalize) {
        TilePtr l = tileOf(normalize.getSum());
        TilePtr out = cloneTile(*tileOf(normalize.getAcc()));
        for (int64_t r = 0; r < out->rows; ++r)
          for (int64_t c = 0; c < out->cols; ++c)
            out->at(r, c) = l->data[r] == 0.0f ? 0.0f : out->at(r, c) / l->data[r];
        return setTile(out);
      })
      .Case<LseOp>([&](LseOp lse) {
        TilePtr m = tileOf(lse.getMax()), l = tileOf(lse.getSum());
        TilePtr out = cloneTile(*m);
        float scale = lse.getScale().convertToDouble();
        for (int64_t r = 0; r < out->rows; ++r)
          out->data[r] = l->data[r] == 0.0f ? kNegInf : m->data[r] * scale + std::log(l->data[r]);
        return setTile(out);
      })
      .Case<RowDotOp>([&](RowDotOp dot) {
        TilePtr a = tileOf(dot.getLhs()), b = tileOf(dot.getRhs());
        TilePtr out = newTile(dot.getType());
        for (int64_t r = 0; r < a->rows; ++r) {
          float sum = 0.0f;
          for (int64_t c = 0; c < a->cols; ++c)
            sum += a->at(r, c) * b->at(r, c);
          out->data[r] = sum;
        }
        return setTile(out);
      })
      .Case<RecomputeProbsOp>([&](RecomputeProbsOp probs) {
        TilePtr s = tileOf(probs.getScores()), lse = tileOf(probs.getLse());
        TilePtr out = cloneTile(*s);
        float scale = probs.getScale().convertToDouble();
        bool byColumn = llvm::cast<TileType>(probs.getLse().getType()).isShared();
        for (int64_t r = 0; r < s->rows; ++r)
          for (int64_t c = 0; c < s->cols; ++c) {
            float l = lse->data[byColumn ? c : r];
            out->at(r, c) = l == kNegInf ? 0.0f : std::exp(scale * s->at(r, c) - l);
          }
        return setTile(out);
      })
      .Case<SoftmaxGradOp>([&](SoftmaxGradOp grad) {
        TilePtr p = tileOf(grad.getProbs()), dp = tileOf(grad.getDprobs()),
                d = tileOf(grad.getDelta());
        TilePtr out = cloneTile(*p);
        bool byColumn = llvm::cast<TileType>(grad.getDelta().getType()).isShared();
        for (int64_t r = 0; r < p->rows; ++r)
          for (int64_t c = 0; c < p->cols; ++c)
            out->at(r, c) = p->at(r, c) * (dp->at(r, c) - d->data[byColumn ? c : r]);
        return setTile(out);
      })
      .Default([&](Operation *) { return fail(op, "not executable inside a kernel"); });
}

//===----------------------------------------------------------------------===//
// TileExecutor
//===----------------------------------------------------------------------===//

LogicalResult TileExecutor::runProgram(llvm::StringRef name, llvm::ArrayRef<HostTensor *> args,
                                       llvm::ArrayRef<int64_t> scalars) {
  errorMessage.clear();
  auto program = module.lookupSymbol<func::FuncOp>(name);
  if (!program) {
    errorMessage = ("no tile program named @" + name).str();
    return failure();
  }
  TileInterpreter interpreter(*this);
  return interpreter.runProgram(program, args, scalars);
}

LogicalResult TileExecutor::runKernel(llvm::StringRef name, llvm::ArrayRef<HostTensor *> args,
                                      llvm::ArrayRef<int64_t> scalars) {
  errorMessage.clear();
  auto kernel = module.lookupSymbol<KernelOp>(name);
  if (!kernel) {
    errorMessage = ("no tile kernel named @" + name).str();
    return failure();
  }
  TileInterpreter interpreter(*this);
  return interpreter.runKernel(kernel, args, scalars);
}

} // namespace flashc
