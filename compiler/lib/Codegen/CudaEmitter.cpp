//===- CudaEmitter.cpp - tile kernels -> CUDA C++ + manifest --------------===//
//
// Walks each tile.kernel top to bottom and prints one statement per op:
//   * index math (arith) becomes `const int` locals,
//   * scf.for / scf.if become C++ loops and branches whose loop-carried
//     values are mutable locals,
//   * every tile op becomes one call into the device library
//     (runtime/device/include/flashc/device, see docs/device-library.md).
// The strategy decisions that are not one op — software pipelining of the
// loads marked `buffers = N` inside a loop, and keeping a loop-invariant
// shared A operand in registers — are made here, per strategy.
//
// Why hand-written printing rather than EmitC: the generated code is mostly
// calls with template arguments into our own library plus a pipelining
// transform across loop iterations; EmitC (MLIR 19) would need a lowering of
// every tile op to emitc.call_opaque first and gives no help with the
// prefetch rewrite, so printing directly is shorter and reads better.
//
//===----------------------------------------------------------------------===//

#include "flashc/Compiler/CudaEmitter.h"

#include "flashc/Compiler/KernelMath.h"

#include "flashc/Dialect/Tile/IR/TileOps.h"

#include "LibraryKernelEmitter.h"
#include "ManifestBuilder.h"
#include "Names.h"
#include "WsKernelEmitter.h"
#include "MaskModEmitter.h"
#include "ScoreModEmitter.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/SmallPtrSet.h"
#include "llvm/ADT/ScopeExit.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>
#include <limits>
#include <map>
#include <optional>

using namespace mlir;

namespace flashc {
namespace {

constexpr double kLog2e = 1.4426950408889634;

std::string floatLiteral(double v) {
  // Always a valid CUDA float: the verifiers bound scales and reject NaN
  // fills, but a value past f32's range still prints as what f32 makes of it.
  if (std::isnan(v))
    return "__int_as_float(0x7fc00000)";
  if (std::isinf(v) || std::fabs(v) > std::numeric_limits<float>::max())
    return v > 0 ? "INFINITY" : "(-INFINITY)";
  // Small whole numbers read as such (0.0f, not 0.000000000e+00f); the value is the same.
  if (v == std::trunc(v) && std::fabs(v) < 1e6 && !(v == 0 && std::signbit(v)))
    return std::to_string(static_cast<int64_t>(v)) + ".0f";
  std::string s = llvm::formatv("{0:e9}", v).str();
  return s + "f";
}






FailureOr<std::string> cppElementType(Operation *op, Type type) {
  if (type.isBF16())
    return std::string("bf16");
  if (type.isF16())
    return std::string("f16");
  if (type.isF32())
    return std::string("float");
  return op->emitError("CUDA emitter: unsupported element type ") << type, failure();
}




/// The value of an integer (not i1) index expression whose leaves are all
/// constants: printed as a literal, never declared.
std::optional<int64_t> foldedInteger(Value v) {
  if (!v.getType().isIntOrIndex() || v.getType().isInteger(1))
    return std::nullopt;
  Operation *op = v.getDefiningOp();
  if (!op)
    return std::nullopt;
  if (auto c = dyn_cast<arith::ConstantOp>(op)) {
    if (auto i = dyn_cast<IntegerAttr>(c.getValue()))
      return i.getValue().getSExtValue();
    return std::nullopt;
  }
  if (isa<arith::IndexCastOp, arith::IndexCastUIOp, arith::ExtSIOp, arith::ExtUIOp>(op))
    return foldedInteger(op->getOperand(0));
  if (op->getNumOperands() != 2 || !isa<arith::ArithDialect>(op->getDialect()))
    return std::nullopt;
  std::optional<int64_t> x = foldedInteger(op->getOperand(0)), y = foldedInteger(op->getOperand(1));
  if (!x || !y)
    return std::nullopt;
  int64_t a = *x, b = *y;
  if (isa<arith::AddIOp>(op))
    return a + b;
  if (isa<arith::SubIOp>(op))
    return a - b;
  if (isa<arith::MulIOp>(op))
    return a * b;
  if (isa<arith::MinSIOp>(op))
    return std::min(a, b);
  if (isa<arith::MaxSIOp>(op))
    return std::max(a, b);
  // Divisions as the device library computes them (C++ truncation, ceil_div,
  // floor_div), only for the operands where those agree with arith's.
  if (b > 0 && a >= 0) {
    if (isa<arith::DivSIOp, arith::DivUIOp>(op))
      return a / b;
    if (isa<arith::RemSIOp, arith::RemUIOp>(op))
      return a % b;
    if (isa<arith::CeilDivSIOp, arith::CeilDivUIOp>(op))
      return (a + b - 1) / b;
    if (isa<arith::FloorDivSIOp>(op))
      return a / b;
  }
  return std::nullopt;
}

/// Whether a column limit of `tensor` may end inside one of its rows' 16-byte
/// chunks (an FFN width that is not a multiple of 8 16-bit elements): then the
/// device library's copies, stores and atomics must go element by element at
/// the limit (their kExact form). Not when the limit is a constant, or a static
/// size of a tensor, that is a whole number of chunks: the chunked forms keep
/// the registers they always had (attention, and FFN widths of multiples of 8).
static bool limitInsideChunk(Value tensor, Value limit) {
  Type element = cast<tile::GlobalTensorType>(tensor.getType()).getElementType();
  int64_t perChunk = element.isF32() ? 4 : 8;
  std::optional<int64_t> value = foldedInteger(limit);
  if (auto dim = limit.getDefiningOp<tile::DimOp>()) {
    int64_t size = cast<tile::GlobalTensorType>(dim.getTensor().getType()).getShape()[dim.getIndex()];
    if (!ShapedType::isDynamic(size))
      value = size;
  }
  return !value || *value % perChunk != 0;
}

/// `text` is an integer literal (what nameOf prints for a folded constant).
bool isIntLiteral(StringRef text, int64_t &value) {
  return !text.empty() && !text.getAsInteger(10, value);
}

/// `base + factor * unit` with the integer arithmetic on literals done:
/// `n + 2` rather than `n + 2 * 1`, `0` rather than `0 + 0 * 1`.
std::string plusScaled(const std::string &base, int64_t factor, const std::string &unit) {
  int64_t b = 0, u = 0;
  bool baseLiteral = isIntLiteral(base, b), unitLiteral = isIntLiteral(unit, u);
  if (baseLiteral && unitLiteral)
    return std::to_string(b + factor * u);
  std::string term = unitLiteral ? std::to_string(factor * u)
                     : factor == 0 ? "0"
                     : factor == 1 ? unit
                                   : std::to_string(factor) + " * " + unit;
  if (term == "0")
    return base;
  if (baseLiteral && b == 0)
    return term;
  return base + " + " + term;
}

/// `offset + buffer * bytes` for buffer `buffer` of a multi-buffered shared
/// slot (buffer: a literal or an expression).
std::string bufferAddress(const std::string &offset, const std::string &buffer,
                          const std::string &bytes) {
  int64_t k = 0;
  if (isIntLiteral(buffer, k))
    return plusScaled(offset, k, bytes);
  bool simple = llvm::all_of(buffer, [](char c) { return std::isalnum(c) || c == '_'; });
  return offset + " + " + (simple ? buffer : "(" + buffer + ")") + " * " + bytes;
}

/// kQTileOffset for q_tile: the constant naming a shared-memory slot.
std::string offsetConstant(StringRef hint) {
  std::string out = "k";
  bool upper = true;
  for (char c : hint) {
    if (!std::isalnum(static_cast<unsigned char>(c))) {
      upper = true;
      continue;
    }
    out += upper ? static_cast<char>(std::toupper(static_cast<unsigned char>(c))) : c;
    upper = false;
  }
  return out + "Offset";
}


/// Marks a declaration line that is dropped when nothing reads its name (see
/// dropUnusedDeclarations): NVRTC warns about every unread variable (#177).
constexpr char kDeclBegin = '\x01', kDeclEnd = '\x02';

/// Removes the marked declarations whose name no other line mentions, until
/// none is left (a dropped declaration may have been the only reader of
/// another), and the marks of those that stay.
std::string dropUnusedDeclarations(StringRef text) {
  SmallVector<StringRef> lines;
  text.split(lines, '\n');
  auto forEachIdentifier = [](StringRef line, auto fn) {
    size_t i = 0;
    while (i < line.size()) {
      unsigned char c = line[i];
      if (std::isalpha(c) || c == '_') {
        size_t j = i;
        while (j < line.size() && (std::isalnum(static_cast<unsigned char>(line[j])) || line[j] == '_'))
          ++j;
        fn(line.slice(i, j));
        i = j;
      } else {
        // Skip numbers whole so that 1e9f's `e9f` is no identifier.
        if (std::isdigit(c))
          while (i < line.size() && (std::isalnum(static_cast<unsigned char>(line[i])) || line[i] == '.'))
            ++i;
        else
          ++i;
      }
    }
  };
  llvm::StringMap<int> mentions;
  for (StringRef line : lines)
    forEachIdentifier(line, [&](StringRef id) { ++mentions[id]; });
  auto declared = [&](StringRef line) -> StringRef {
    size_t begin = line.find(kDeclBegin), end = line.find(kDeclEnd);
    return begin == StringRef::npos || end == StringRef::npos ? StringRef()
                                                              : line.slice(begin + 1, end);
  };
  std::vector<bool> dropped(lines.size(), false);
  for (bool changed = true; changed;) {
    changed = false;
    for (auto [i, line] : llvm::enumerate(lines)) {
      StringRef name = declared(line);
      // Mentioned twice on its own line: by the mark and the declaration.
      if (dropped[i] || name.empty() || mentions[name] > 2)
        continue;
      dropped[i] = changed = true;
      forEachIdentifier(line, [&](StringRef id) { --mentions[id]; });
    }
  }
  std::string out;
  for (auto [i, line] : llvm::enumerate(lines)) {
    if (dropped[i])
      continue;
    StringRef name = declared(line);
    if (!name.empty()) {
      size_t begin = line.find(kDeclBegin), end = line.find(kDeclEnd);
      out += (line.take_front(begin) + line.drop_front(end + 1)).str();
    } else {
      out += line.str();
    }
    if (i + 1 < lines.size())
      out += "\n";
  }
  return out;
}

//===----------------------------------------------------------------------===//
// Symbolic sizes of program arguments
//===----------------------------------------------------------------------===//


//===----------------------------------------------------------------------===//
// Kernel emission
//===----------------------------------------------------------------------===//

class KernelEmitter {
public:
  /// `anonymous`: ignore the builder's value names (the form two kernels
  /// are compared in: same code but for names).
  KernelEmitter(tile::KernelOp kernel, ArrayRef<std::string> argNames, StringRef entry,
                std::string specComment, const CudaEmitOptions &options, bool anonymous = false)
      : kernel(kernel), argNames(argNames.begin(), argNames.end()), entry(entry.str()),
        specComment(std::move(specComment)), anonymous(anonymous), options(options) {}

  /// ", true" (the device library's SFU tanh and fast divide) for
  /// activations where the kernel's results are 16-bit: their error (2^-11)
  /// is below half an ulp of bf16 / f16; f32 kernels keep the accurate
  /// functions. The tile op activation_grad keeps them too (the retired
  /// backward hidden kernel ran at 254 registers and spilled 92 bytes with the
  /// SFU form; the 16-bit ffn_activation_grad kernel is a library call that
  /// takes the SFU form).
  const char *activationPrecision() {
    auto gemm = llvm::dyn_cast_or_null<tile::GemmSpecAttr>(kernel.getSpecAttr());
    return gemm && gemm.getElementType().getValue().getIntOrFloatBitWidth() == 16 ? ", true" : "";
  }

  /// Prints the whole kernel (config namespace + __global__ function) to `out`.
  LogicalResult emit(llvm::raw_ostream &out);
  int64_t sharedBytes() { return smemEnd + (wgmma() ? 1024 : 0); }
  int64_t tileBytes() const { return smemEnd; }

private:
  // Output helpers.
  llvm::raw_ostream &line() {
    afterBarrier = false;
    return os.indent(indent * 2);
  }
  /// A `const int/bool` declaration of `name`, dropped when nothing reads it.
  llvm::raw_ostream &declarationLine(StringRef name) {
    return line() << kDeclBegin << name << kDeclEnd;
  }
  /// `__syncthreads();` unless the last statement printed was one (the next
  /// iteration's or loop's barrier right after an inner loop's last one).
  void barrier(StringRef comment = "") {
    if (afterBarrier)
      return;
    line() << "__syncthreads();" << comment << "\n";
    afterBarrier = true;
  }
  /// A register copy, which leaves a barrier printed before it the last statement.
  void copyLine(StringRef dst, StringRef src) {
    bool barrierBefore = afterBarrier;
    line() << dst << " = " << src << ";\n";
    afterBarrier = barrierBefore;
  }
  std::string fresh(StringRef hint);
  /// A fresh C++ name for `v`: the builder's name for it, else `fallback`
  /// (with the suffix of the loop iteration being prefetched, if any).
  std::string freshFor(Value v, StringRef fallback) {
    std::string given = nameGiven(v);
    return fresh((given.empty() ? fallback.str() : given) + aheadSuffix);
  }
  /// "_pre" / "_next" while the index math of a later iteration is printed.
  std::string aheadSuffix;
  std::string nameOf(Value v);
  FailureOr<std::string> typeOf(Operation *op, Type t);
  void bind(Value v, std::string name) { names[v] = std::move(name); }

  // Shared-memory placement of a shared tile produced by `op`: the name of the
  // config constant holding its offset (`hint`: the tile's name).
  std::string placeShared(Operation *op, tile::TileType type, int64_t buffers, StringRef hint);
  std::string slotHint(Operation *op);

  /// Emits `block`'s ops; wgmma groups still in flight at its end are waited
  /// for down to `keepGroups` (a product loop keeps its last one in flight).
  LogicalResult emitBlock(Block &block, int keepGroups = 0);
  /// C = A·B from zero whose only use is an atomic add (the backward's dQ):
  /// emitted 64 columns at a time, so a [M x D] f32 tile is never live at once.
  bool isChunkedAtomicMatmul(tile::MatmulOp mm);
  /// How a chunked product's warps split it: 16-row bands, column groups (the
  /// Sᵀ backward's dQ has 64 query rows for 8 warps: 2 groups), chunk width.
  struct ChunkShape {
    int64_t bands, groups, width;
  };
  ChunkShape chunkShape(tile::TileType type);
  /// A chunked product printed as wgmma_matmul_ta: 64-column parts of 64 rows
  /// a warpgroup; other shapes keep mma.sync (matmul_ta).
  bool isWgmmaChunkedMatmul(tile::MatmulOp mm);
  DenseSet<Operation *> emittedAhead;
  bool wgmma() { return kernel.getStrategy() == tile::Strategy::WgmmaSm90; }
  /// Register tiles of wgmma products issued without a wait (A fragments,
  /// accumulators): independent ops run while the tensor cores work; the wait
  /// comes before the first op that touches one of them, or at the block end.
  SmallVector<Value> wgmmaInFlight;
  /// Shared tiles of standalone loads issued (cp.async, committed) but not
  /// waited for, with the depth of the block that issued each: the wait comes
  /// before the first op that reads one, so a load placed before a product
  /// loop lands under it. A wait inside a nested block (a loop body that may
  /// run no iteration) settles only the loads of that block and deeper.
  SmallVector<std::pair<Value, unsigned>> loadsInFlight;
  unsigned blockDepth = 0;
  /// Waits for the loads in flight when `op` (or an op nested in it) reads
  /// one of them, or unconditionally with `force`.
  void landLoadsInFlight(Operation *op, bool force = false);
  /// Drops the loads a wait just landed: those of this block and deeper.
  void settleLoads() {
    llvm::erase_if(loadsInFlight, [&](auto &load) { return load.second >= blockDepth; });
  }
  bool touchesWgmmaInFlight(Operation *op);
  void waitWgmma(int keepGroups = 0);
  /// The number of wgmma products (one group each) of a loop whose body is
  /// only pipelined loads, their index math and those products, each into a
  /// loop-carried accumulator of its own (a GEMM main loop); 0 otherwise.
  int productLoopGroups(scf::ForOp forOp, const llvm::SetVector<Operation *> &loads,
                        const llvm::SetVector<Operation *> &slice);
  /// After cp.async data landed: wgmma reads shared memory through the async
  /// proxy, so every writer fences before the barrier.
  void emitLoadsLanded(StringRef wait) {
    line() << wait << "\n";
    if (wgmma())
      line() << "fence_async_shared();\n";
    barrier();
  }
  LogicalResult emitOp(Operation *op);
  LogicalResult emitArith(Operation *op);
  LogicalResult emitFor(scf::ForOp forOp);
  struct Pipeline;
  LogicalResult emitIssueAhead(scf::ForOp forOp, Pipeline &pipe, StringRef suffix,
                               const std::string &ivExpr, const std::string &buffer);
  LogicalResult emitIf(scf::IfOp ifOp);
  LogicalResult emitTileOp(Operation *op);
  LogicalResult emitLoadIssue(tile::LoadOp load, StringRef dst);
  std::string globalMatrix(Value tensor, ValueRange indices, unsigned keep);
  std::string globalVector(Value tensor, ValueRange indices);
  /// `float*` to a shared column vector placed at `offset`, in buffer `buffer`
  /// (a C++ expression; "" for a single buffer).
  std::string sharedFloats(const std::string &offset, tile::TileType type, StringRef buffer) {
    if (buffer.empty())
      return "shared_floats(smem, " + offset + ")";
    return "shared_floats(smem, " +
           bufferAddress(offset, buffer.str(), std::to_string(type.getRows() * 4)) + ")";
  }
  std::string declareResult(Operation *op, Value result, StringRef hint, StringRef init);
  bool canUpdateInPlace(Operation *user, Value operand);
  /// The C++ variable of `op`'s result, which starts as `operand`: the
  /// operand's own variable when it can be updated in place, else a copy.
  std::string resultOf(Operation *op, Value operand, StringRef hint);

  tile::KernelOp kernel;
  std::vector<std::string> argNames;
  std::string entry, specComment;
  bool anonymous = false;
  /// The kernel builder's name for `v` ("" when anonymous).
  std::string nameGiven(Value v) { return anonymous ? std::string() : givenName(v); }
  CudaEmitOptions options;
  // The body is printed into a buffer first: the shared-memory size is known
  // only after every shared tile has been placed.
  std::string bodyText;
  llvm::raw_string_ostream os{bodyText};
  unsigned indent = 1;
  DenseMap<Value, std::string> names;
  llvm::StringMap<unsigned> used;
  int64_t smemEnd = 0;
  DenseMap<Operation *, std::pair<int64_t, int64_t>> smemSlots; // offset, bytes per buffer
  DenseMap<Operation *, std::string> slotNames;
  // The config constants of the shared-memory slots, in placement order.
  SmallVector<std::pair<std::string, int64_t>> slotOffsets;
  llvm::StringSet<> slotNamesUsed;
  bool afterBarrier = false;
  // A result whose C++ type could not be named (already reported).
  bool typeError = false;

  // Pipelining state of the innermost pipelined loop being emitted.
  struct Pipeline {
    scf::ForOp loop;
    llvm::SetVector<Operation *> loads;   // pipelined tile.load ops
    llvm::SetVector<Operation *> slice;   // index math they need, in order
    int64_t stages = 2;
    int64_t ahead = 1;      // iterations whose loads are in flight
    int keepGroups = 0;     // wgmma groups left in flight at the body's end
    std::string stageVar;
  };
  Pipeline *pipeline = nullptr;
  // Loop-invariant shared A operands kept in registers: value -> fragment name.
  DenseMap<Value, std::string> promotedA;
};

std::string KernelEmitter::fresh(StringRef hint) {
  std::string base = cppIdentifier(hint);
  unsigned &n = used[base];
  std::string name = n == 0 ? base : base + "_" + std::to_string(n);
  ++n;
  return name;
}

std::string KernelEmitter::nameOf(Value v) {
  auto it = names.find(v);
  if (it != names.end())
    return it->second;
  if (auto c = v.getDefiningOp<arith::ConstantOp>()) {
    if (auto i = dyn_cast<IntegerAttr>(c.getValue())) {
      if (i.getType().isInteger(1))
        return i.getValue().isZero() ? "false" : "true";
      return std::to_string(i.getValue().getSExtValue());
    }
    if (auto f = dyn_cast<FloatAttr>(c.getValue()))
      return floatLiteral(f.getValueAsDouble());
  }
  return "/*unnamed*/";
}

FailureOr<std::string> KernelEmitter::typeOf(Operation *op, Type t) {
  if (t.isIndex() || t.isInteger(32) || t.isInteger(64))
    return std::string("int");
  if (t.isInteger(1))
    return std::string("bool");
  if (t.isF32())
    return std::string("float");
  auto tileType = dyn_cast<tile::TileType>(t);
  if (!tileType)
    return op->emitError("CUDA emitter: no C++ type for ") << t, failure();
  FailureOr<std::string> elem = cppElementType(op, tileType.getElementType());
  if (failed(elem))
    return failure();
  int64_t rows = tileType.getRows(), cols = tileType.getCols();
  // The device library's layouts: 16-bit shared rows are whole 64-byte
  // swizzle units, register tiles whole 16-column mma fragments.
  // flash-tile pads tile widths to these multiples (TilePadding.h) and
  // limits the loads and stores to the tensors' width; hand-written tile IR
  // may not have.
  if (tileType.isShared() && !tileType.getElementType().isF32() && tileType.getRank() == 2 &&
      cols % 32 != 0)
    return op->emitError("CUDA emitter: a 16-bit shared tile of ")
               << cols << " columns is not supported (rows must be multiples of 64 bytes: pad the "
               << "tile to " << llvm::alignTo(cols, 32) << " columns and load it with limit "
               << cols << ", as flash-tile does for head dims that are not multiples of 32)",
           failure();
  if (tileType.isRegister() && tileType.getRank() == 2 && cols % 16 != 0)
    return op->emitError("CUDA emitter: a register tile of ")
               << cols << " columns is not supported (mma fragments need multiples of 16: pad the "
               << "tile to " << llvm::alignTo(cols, 16) << " columns and store it with limit "
               << cols << ")",
           failure();
  // The device library's static_asserts, said at the op (regtile.cuh, smem.cuh,
  // panel.cuh, bulk.cuh) rather than by NVRTC.
  int64_t warps = kernel.getWarps();
  if (tileType.isRegister() && rows % (16 * warps) != 0)
    return op->emitError("CUDA emitter: a register tile of ")
               << rows << " rows does not split into 16-row bands over " << warps
               << " warps (needs a multiple of " << 16 * warps << ")",
           failure();
  if (tileType.isColumnVector())
    return op->emitError("CUDA emitter: a shared column vector is only supported as the result "
                         "of tile.load_rows, read by the op that uses it"),
           failure();
  if (tileType.isShared() && tileType.getElementType().isF32() && cols % 4 != 0)
    return op->emitError("CUDA emitter: an f32 shared tile of ")
               << cols << " columns is not supported (rows are whole 16-byte units)",
           failure();
  if (tileType.isShared() && !tileType.getElementType().isF32() && rows % 8 != 0)
    return op->emitError("CUDA emitter: a 16-bit shared tile of ")
               << rows << " rows is not supported (the swizzle repeats every 8 rows)",
           failure();
  if (tileType.isShared() && !tileType.getElementType().isF32() && wgmma() && cols % 64 != 0)
    return op->emitError("CUDA emitter: strategy wgmma_sm90 needs 16-bit shared tiles of whole "
                         "64-column panels, got ")
               << cols << " columns",
           failure();
  if (tileType.isShared()) {
    if (tileType.getElementType().isF32())
      return llvm::formatv("SmemTileF32<{0}, {1}>", rows, cols).str();
    // wgmma reads its shared operands in the 128-byte-swizzled panel layout.
    if (wgmma())
      return llvm::formatv("SmemPanelTile<{0}, {1}, {2}>", *elem, rows, cols).str();
    return llvm::formatv("SmemTile<{0}, {1}, {2}>", *elem, rows, cols).str();
  }
  if (tileType.isRowVector())
    return llvm::formatv("RegRowVec<{0}, kWarps>", rows).str();
  if (tileType.getElementType().isF32())
    return llvm::formatv("RegTileF32<{0}, {1}, kWarps>", rows, cols).str();
  return llvm::formatv("RegTile16<{0}, {1}, {2}, kWarps>", *elem, rows, cols).str();
}

std::string KernelEmitter::slotHint(Operation *op) {
  std::string given = nameGiven(op->getResult(0));
  if (!given.empty())
    return given;
  if (auto load = dyn_cast<tile::LoadOp>(op))
    return nameOf(load.getSource()) + "_tile";
  if (auto rows = dyn_cast<tile::LoadRowsOp>(op))
    return nameOf(rows.getSource()) + "_cols";
  if (auto copy = dyn_cast<tile::CopyOp>(op))
    return nameOf(copy.getSource()) + "_smem";
  return "slot";
}

std::string KernelEmitter::placeShared(Operation *op, tile::TileType type, int64_t buffers,
                                       StringRef hint) {
  auto it = smemSlots.find(op);
  if (it != smemSlots.end())
    return slotNames[op];
  // f32 shared tiles (SmemTileF32) pad each row by 8 floats so fragment reads
  // of a warp hit distinct banks; 16-bit tiles are swizzled, not padded.
  int64_t bytes = type.getRank() == 1             ? type.getRows() * 4
                  : type.getElementType().isF32() ? type.getRows() * (type.getCols() + 8) * 4
                                                  : type.getSizeInBytes();
  // Tiles are laid out in program order, 128-byte aligned, as flash-plan-memory
  // does; its offsets are not reused because only the emitter knows the
  // device library's padding.
  // wgmma reads 128-byte-swizzled panels whose swizzle pattern repeats every
  // 1024 bytes: a panel must start on a 1024-byte boundary (smem itself is
  // aligned so by align_smem_1024).
  bool panel = wgmma() && type.isShared() && type.getRank() == 2 && !type.getElementType().isF32();
  int64_t offset = llvm::alignTo(smemEnd, panel ? 1024 : 128);
  smemEnd = std::max<int64_t>(smemEnd, offset + bytes * std::max<int64_t>(buffers, 1));
  smemSlots[op] = {offset, bytes};
  std::string base = offsetConstant(hint), name = base;
  for (unsigned n = 1; !slotNamesUsed.insert(name).second; ++n)
    name = base + std::to_string(n);
  slotOffsets.push_back({name, offset});
  slotNames[op] = name;
  return name;
}

std::string KernelEmitter::declareResult(Operation *op, Value result, StringRef hint,
                                         StringRef init) {
  std::string name = freshFor(result, hint);
  FailureOr<std::string> type = typeOf(op, result.getType());
  if (failed(type))
    typeError = true; // reported; emit() fails once the body is printed
  line() << (succeeded(type) ? *type : std::string("auto")) << " " << name;
  if (!init.empty())
    os << " = " << init;
  os << ";\n";
  bind(result, name);
  return name;
}

/// A register value may be updated in place by its only user when it is
/// defined in the user's block (or is that block's argument): then no later
/// iteration or branch can still read the old value.
bool KernelEmitter::canUpdateInPlace(Operation *user, Value operand) {
  if (!operand.hasOneUse())
    return false;
  if (promotedA.count(operand))
    return false;
  Block *block = user->getBlock();
  if (auto arg = dyn_cast<BlockArgument>(operand))
    return arg.getOwner() == block && !isa<tile::KernelOp>(arg.getOwner()->getParentOp());
  return operand.getDefiningOp()->getBlock() == block;
}

std::string KernelEmitter::resultOf(Operation *op, Value operand, StringRef hint) {
  Value result = op->getResult(0);
  if (canUpdateInPlace(op, operand)) {
    std::string name = nameOf(operand);
    bind(result, name);
    return name;
  }
  return declareResult(op, result, hint, nameOf(operand));
}

LogicalResult KernelEmitter::emitBlock(Block &block, int keepGroups) {
  ++blockDepth;
  auto leave = llvm::make_scope_exit([&] { --blockDepth; });
  size_t loadsBefore = loadsInFlight.size();
  for (Operation &op : block.without_terminator()) {
    if (emittedAhead.contains(&op))
      continue;
    if (touchesWgmmaInFlight(&op))
      waitWgmma();
    landLoadsInFlight(&op);
    if (failed(emitOp(&op)))
      return failure();
  }
  // A load issued in this block lands in it (a loop body's next iteration
  // reuses its buffer).
  if (loadsInFlight.size() > loadsBefore)
    landLoadsInFlight(nullptr, /*force=*/true);
  waitWgmma(keepGroups);  // yields and end-of-iteration barriers read or recycle them
  return success();
}

void KernelEmitter::landLoadsInFlight(Operation *op, bool force) {
  if (loadsInFlight.empty())
    return;
  bool reads = force;
  if (!reads)
    op->walk([&](Operation *nested) {
      for (Value operand : nested->getOperands())
        if (llvm::any_of(loadsInFlight, [&](auto &load) { return load.first == operand; })) {
          reads = true;
          return WalkResult::interrupt();
        }
      return WalkResult::advance();
    });
  if (!reads)
    return;
  emitLoadsLanded("cp_async_wait<0>();");
  settleLoads();
}

bool KernelEmitter::touchesWgmmaInFlight(Operation *op) {
  if (wgmmaInFlight.empty())
    return false;
  if (op->getNumRegions() > 0)
    return true;
  auto inFlight = [&](Value v) { return llvm::is_contained(wgmmaInFlight, v); };
  return llvm::any_of(op->getOperands(), inFlight) || llvm::any_of(op->getResults(), inFlight);
}

void KernelEmitter::waitWgmma(int keepGroups) {
  if (wgmmaInFlight.empty())
    return;
  if (keepGroups)
    line() << "wgmma_wait<" << keepGroups
           << ">();  // the last iteration's products are done; this one's stay in flight\n";
  else
    line() << "wgmma_wait<0>();  // the products issued above\n";
  wgmmaInFlight.clear();
}

int KernelEmitter::productLoopGroups(scf::ForOp forOp, const llvm::SetVector<Operation *> &loads,
                                    const llvm::SetVector<Operation *> &slice) {
  auto yield = cast<scf::YieldOp>(forOp.getBody()->getTerminator());
  int products = 0;
  for (Operation &op : forOp.getBody()->without_terminator()) {
    if (loads.contains(&op) || slice.contains(&op))
      continue;
    auto mm = dyn_cast<tile::MatmulOp>(&op);
    auto acc = mm ? dyn_cast<BlockArgument>(mm.getAcc()) : BlockArgument();
    // C += A·B with shared A, C carried from the last iteration and yielded
    // to its own slot for the next: nothing but the next product reads it
    // inside the loop.
    if (!mm || !cast<tile::TileType>(mm.getA().getType()).isShared() || !acc ||
        acc.getOwner() != forOp.getBody() || acc.getArgNumber() == 0 || !acc.hasOneUse() ||
        !mm->hasOneUse() || yield.getOperand(acc.getArgNumber() - 1) != mm.getResult())
      return 0;
    ++products;
  }
  // Every carried value is one of the accumulators (no pass-through values).
  return products == static_cast<int>(forOp.getNumRegionIterArgs()) ? products : 0;
}

/// Registers a thread may hold for loop-carried tiles plus promoted A operands
/// (the rest of the 255 go to the scores, their gradients and addresses).
constexpr int64_t kPromotionRegisterBudget = 128;

bool KernelEmitter::isChunkedAtomicMatmul(tile::MatmulOp mm) {
  auto fill = mm.getAcc().getDefiningOp<tile::FillOp>();
  // Under wgmma only the Sᵀ backward's dQ (A transposed from shared) takes this
  // mma.sync path; every other wgmma matmul is one warpgroup-wide product.
  if ((wgmma() && !mm.getTransposeA()) || !fill || !fill->hasOneUse() || !fill.getValue().isZero() ||
      !mm->hasOneUse())
    return false;
  auto atomic = dyn_cast<tile::AtomicAddOp>(*mm->getUsers().begin());
  auto type = cast<tile::TileType>(mm.getType());
  // Chunked when wide (register budget), when the rows make fewer bands than
  // warps, or under wgmma (the mma.sync dQ has no warpgroup-wide form).
  bool fewerBands = type.getRows() < 16 * static_cast<int64_t>(kernel.getWarps());
  return atomic && atomic->getBlock() == mm->getBlock() && (type.getCols() > 64 || fewerBands || wgmma()) &&
         type.getCols() % 32 == 0 && !cast<tile::TileType>(mm.getA().getType()).getElementType().isF32();
}

KernelEmitter::ChunkShape KernelEmitter::chunkShape(tile::TileType type) {
  int64_t bands = std::min<int64_t>(kernel.getWarps(), type.getRows() / 16);
  int64_t groups = kernel.getWarps() / bands;
  int64_t width = type.getCols() % 64 == 0 ? 64 : 32;
  while (groups > 1 && width > 16 && width * groups > type.getCols())
    width /= 2;
  return {bands, groups, width};
}

bool KernelEmitter::isWgmmaChunkedMatmul(tile::MatmulOp mm) {
  if (!wgmma() || !isChunkedAtomicMatmul(mm))
    return false;
  auto type = cast<tile::TileType>(mm.getType());
  ChunkShape shape = chunkShape(type);
  return shape.width == 64 && ((type.getRows() == 64 && shape.bands == 4) ||
                               (type.getRows() == 128 && shape.bands == 8));
}

LogicalResult KernelEmitter::emitOp(Operation *op) {
  if (auto forOp = dyn_cast<scf::ForOp>(op))
    return emitFor(forOp);
  if (auto ifOp = dyn_cast<scf::IfOp>(op))
    return emitIf(ifOp);
  if (op->getDialect() && op->getDialect()->getNamespace() == "arith")
    return emitArith(op);
  if (isa<tile::TileDialect>(op->getDialect()))
    return emitTileOp(op);
  return op->emitError("CUDA emitter: cannot print op '") << op->getName() << "'", failure();
}

LogicalResult KernelEmitter::emitArith(Operation *op) {
  if (isa<arith::ConstantOp>(op))
    return success(); // printed inline where used
  // Integer math on constants only is printed as its value; x + 0, x - 0,
  // x * 1 and x / 1 as x.
  if (std::optional<int64_t> value = foldedInteger(op->getResult(0))) {
    bind(op->getResult(0), std::to_string(*value));
    return success();
  }
  if (op->getNumOperands() == 2 && op->getResult(0).getType().isIntOrIndex() &&
      !op->getResult(0).getType().isInteger(1)) {
    std::optional<int64_t> rhs = foldedInteger(op->getOperand(1));
    if (rhs && ((*rhs == 0 && isa<arith::AddIOp, arith::SubIOp>(op)) ||
                (*rhs == 1 && isa<arith::MulIOp, arith::DivSIOp, arith::DivUIOp>(op)))) {
      bind(op->getResult(0), nameOf(op->getOperand(0)));
      return success();
    }
  }
  auto bin = [&](StringRef sym) {
    return "(" + nameOf(op->getOperand(0)) + " " + sym.str() + " " + nameOf(op->getOperand(1)) +
           ")";
  };
  std::string expr;
  StringRef hint = "idx";
  if (isa<arith::AddIOp, arith::AddFOp>(op))
    expr = bin("+");
  else if (isa<arith::SubIOp, arith::SubFOp>(op))
    expr = bin("-");
  else if (isa<arith::MulIOp, arith::MulFOp>(op))
    expr = bin("*");
  else if (isa<arith::DivSIOp, arith::DivUIOp, arith::DivFOp>(op))
    expr = bin("/");
  else if (isa<arith::RemSIOp, arith::RemUIOp>(op))
    expr = bin("%");
  else if (isa<arith::CeilDivSIOp, arith::CeilDivUIOp>(op))
    expr = "ceil_div(" + nameOf(op->getOperand(0)) + ", " + nameOf(op->getOperand(1)) + ")";
  else if (isa<arith::FloorDivSIOp>(op))
    expr = "floor_div(" + nameOf(op->getOperand(0)) + ", " + nameOf(op->getOperand(1)) + ")";
  else if (isa<arith::MinSIOp, arith::MinUIOp>(op))
    expr = "min(" + nameOf(op->getOperand(0)) + ", " + nameOf(op->getOperand(1)) + ")";
  else if (isa<arith::MaxSIOp, arith::MaxUIOp>(op))
    expr = "max(" + nameOf(op->getOperand(0)) + ", " + nameOf(op->getOperand(1)) + ")";
  else if (isa<arith::AndIOp>(op))
    expr = op->getResult(0).getType().isInteger(1) ? bin("&&") : bin("&");
  else if (isa<arith::OrIOp>(op))
    expr = op->getResult(0).getType().isInteger(1) ? bin("||") : bin("|");
  else if (isa<arith::XOrIOp>(op))
    expr = op->getResult(0).getType().isInteger(1) ? bin("!=") : bin("^");
  else if (isa<arith::IndexCastOp, arith::IndexCastUIOp, arith::ExtSIOp, arith::ExtUIOp,
               arith::TruncIOp>(op))
    expr = nameOf(op->getOperand(0));
  else if (auto sel = dyn_cast<arith::SelectOp>(op))
    expr = "(" + nameOf(sel.getCondition()) + " ? " + nameOf(sel.getTrueValue()) + " : " +
           nameOf(sel.getFalseValue()) + ")";
  else if (auto cmp = dyn_cast<arith::CmpIOp>(op)) {
    static const char *syms[] = {"==", "!=", "<", "<=", ">", ">=", "<", "<=", ">", ">="};
    expr = bin(syms[static_cast<int>(cmp.getPredicate())]);
    hint = "p";
  } else
    return op->emitError("CUDA emitter: unsupported arith op '") << op->getName() << "'",
           failure();
  FailureOr<std::string> type = typeOf(op, op->getResult(0).getType());
  if (failed(type))
    return failure();
  std::string name = freshFor(op->getResult(0), hint);
  declarationLine(name) << "const " << *type << " " << name << " = " << expr << ";\n";
  bind(op->getResult(0), name);
  return success();
}

/// The loads of `forOp`'s body that can be issued one iteration ahead: marked
/// `buffers >= 2`, directly in the body, with every index computable from the
/// induction variable and values defined outside the loop. Shared
/// tile.load_rows (the Sᵀ backward's lse / D) ride along with those loads'
/// buffers.
static bool collectPipeline(scf::ForOp forOp, llvm::SetVector<Operation *> &loads,
                            llvm::SetVector<Operation *> &slice, int64_t &stages) {
  Block *body = forOp.getBody();
  stages = 0;
  for (Operation &op : *body) {
    auto load = dyn_cast<tile::LoadOp>(&op);
    auto rows = dyn_cast<tile::LoadRowsOp>(&op);
    bool tileLoad = load && load.getBuffers() && *load.getBuffers() >= 2;
    bool columnVector = rows && cast<tile::TileType>(rows.getType()).isShared();
    if (!tileLoad && !columnVector)
      continue;
    // Walk the index math back to the induction variable / invariants.
    llvm::SetVector<Operation *> needed;
    SmallVector<Value> work(op.getOperands().begin(), op.getOperands().end());
    bool ok = true;
    while (!work.empty() && ok) {
      Value v = work.pop_back_val();
      if (v == forOp.getInductionVar())
        continue;
      if (auto arg = dyn_cast<BlockArgument>(v)) {
        ok = arg.getOwner() != body; // an iter_arg changes per iteration
        continue;
      }
      Operation *def = v.getDefiningOp();
      if (def->getBlock() != body)
        continue; // defined outside the loop
      if (!isa<arith::ArithDialect>(def->getDialect()) && !isa<tile::DimOp>(def)) {
        ok = false;
        break;
      }
      if (needed.insert(def))
        work.append(def->getOperands().begin(), def->getOperands().end());
    }
    if (!ok)
      continue;
    loads.insert(&op);
    if (tileLoad)
      stages = std::max<int64_t>(stages, *load.getBuffers());
    for (Operation *op2 : needed)
      slice.insert(op2);
  }
  if (stages < 2) {  // column vectors alone are not pipelined
    loads.clear();
    slice.clear();
  }
  // Keep the slice in program order.
  SmallVector<Operation *> ordered(slice.begin(), slice.end());
  llvm::sort(ordered, [](Operation *a, Operation *b) { return a->isBeforeInBlock(b); });
  slice.clear();
  slice.insert(ordered.begin(), ordered.end());
  return !loads.empty();
}

LogicalResult KernelEmitter::emitFor(scf::ForOp forOp) {
  std::string lb = nameOf(forOp.getLowerBound()), ub = nameOf(forOp.getUpperBound()),
              step = nameOf(forOp.getStep());
  // Loop-carried values become mutable locals shared by the iter_args and the
  // loop results.
  for (auto [init, arg, result] :
       llvm::zip(forOp.getInitArgs(), forOp.getRegionIterArgs(), forOp.getResults())) {
    FailureOr<std::string> type = typeOf(forOp, arg.getType());
    if (failed(type))
      return failure();
    // Running state of an online reduction: acc (tile), m (max, starts at
    // -inf), l (sum, starts at 0).
    std::string hint = "carry";
    if (auto fill = init.getDefiningOp<tile::FillOp>()) {
      auto t = cast<tile::TileType>(arg.getType());
      hint = !t.isRowVector() ? "acc" : (fill.getValue().isInfinity() ? "m_run" : "l_run");
    }
    std::string name = freshFor(arg, hint);
    line() << *type << " " << name << " = " << nameOf(init) << ";\n";
    bind(arg, name);
    bind(result, name);
  }

  Pipeline pipe;
  pipe.loop = forOp;
  bool pipelined =
      collectPipeline(forOp, pipe.loads, pipe.slice, pipe.stages);
  std::string iv = freshFor(forOp.getInductionVar(), "n");
  bind(forOp.getInductionVar(), iv);

  // Promote loop-invariant shared A operands of matmuls (e.g. Q) to registers
  // once, before the loop: each iteration then reads no shared memory for A.
  // Only while the loop's carried register tiles leave room: the Sᵀ backward
  // carries dK and dV (128 registers a thread at head dim 128) and would spill
  // with K and V promoted as well.
  const int64_t threads = kernel.getWarps() * 32;
  auto registersPerThread = [&](tile::TileType t) {
    return t.getNumElements() * t.getElementType().getIntOrFloatBitWidth() / 32 / threads;
  };
  int64_t budget = kPromotionRegisterBudget;
  for (Value carried : forOp.getRegionIterArgs())
    if (auto t = dyn_cast<tile::TileType>(carried.getType()); t && t.isRegister())
      budget -= registersPerThread(t);
  // Operands an enclosing loop promoted stay live through this one.
  for (auto &promoted : promotedA)
    budget -= registersPerThread(cast<tile::TileType>(promoted.first.getType()));
  SmallVector<std::pair<Value, std::string>> promotedHere;
  forOp.getBody()->walk([&](tile::MatmulOp mm) {
    Value a = mm.getA();
    auto aType = cast<tile::TileType>(a.getType());
    if (wgmma() || !aType.isShared() || mm.getTransposeA() || aType.getElementType().isF32() ||
        promotedA.count(a) || !forOp.isDefinedOutsideOfLoop(a) || registersPerThread(aType) > budget)
      return;
    budget -= registersPerThread(aType);
    std::string frag = fresh(nameOf(a) + "_frag");
    FailureOr<std::string> elem = cppElementType(mm, aType.getElementType());
    line() << "RegTile16<" << *elem << ", " << aType.getRows() << ", " << aType.getCols()
           << ", kWarps> " << frag << ";\n";
    line() << "load_fragments(" << frag << ", " << nameOf(a)
           << ");  // loop-invariant A operand kept in registers\n";
    promotedA[a] = frag;
    promotedHere.push_back({a, frag});
  });

  // Product loops that keep wgmma groups in flight fence their accumulators
  // where ordinary definitions and reads of them must stay.
  auto fenceAccumulators = [&](StringRef comment) {
    for (Value carried : forOp.getRegionIterArgs())
      line() << "wgmma_fence_operand(" << nameOf(carried) << ");" << comment << "\n";
  };
  Pipeline *outer = pipeline;
  if (pipelined) {
    pipe.stageVar = fresh("stage");
    // A product loop keeps one wgmma group in
    // flight across the barrier; its loads then go one stage less ahead, so
    // that a prefetch refills buffers read two iterations ago, by a group that
    // has completed (waiting for each iteration's products instead measured
    // 1.00-1.41x slower, docs/design/wgmma-gemm.md).
    // Only with 4 stages or more: at 3 the loads would be one iteration ahead.
    pipe.ahead = pipe.stages - 1;
    int groups = wgmma() && pipe.stages >= 4
                     ? productLoopGroups(forOp, pipe.loads, pipe.slice)
                     : 0;
    if (groups) {
      pipe.ahead = pipe.stages - 2;
      pipe.keepGroups = groups;
      // Their initial values are defined before the first product; the fence
      // keeps those definitions there (ptxas serializes the products otherwise).
      fenceAccumulators("  // accumulator: wgmma from here on");
    }
    // Prologue: the first `ahead` iterations' loads in flight, one group each.
    line() << "// Pipeline prologue: loads of the first " << pipe.ahead
           << " iteration(s) in flight.\n";
    for (int64_t s = 0; s < pipe.ahead; ++s)
      if (failed(emitIssueAhead(forOp, pipe, "_pre", plusScaled(lb, s, step),
                                std::to_string(s))))
        return failure();
    pipeline = &pipe;
  }

  line() << "for (int " << iv << " = " << lb;
  if (pipelined)
    os << ", " << pipe.stageVar << " = 0";
  os << "; " << iv << " < " << ub << "; " << iv << " += " << step;
  if (pipelined)
    os << ", " << pipe.stageVar << " = (" << pipe.stageVar << " + 1) % " << pipe.stages;
  os << ") {\n";
  ++indent;

  // One barrier an iteration: the landing barrier comes first and also says
  // every thread is done with the last iteration, so the prefetch refills its
  // buffers after it and no end-of-iteration barrier is needed (two barriers
  // an iteration measured ±1 % alone, docs/design/wgmma-backward.md). A loop
  // without a pipeline ends each iteration with a barrier instead.
  bool oneBarrier = pipelined;
  if (pipelined) {
    auto issueAhead = [&]() {
      // Prefetch iteration n + ahead·step into the buffer freed before this iteration.
      return emitIssueAhead(forOp, pipe, "_next", plusScaled(iv, pipe.ahead, step),
                            "(" + pipe.stageVar + " + " + std::to_string(pipe.ahead) + ") % " +
                                std::to_string(pipe.stages));
    };
    emitLoadsLanded("cp_async_wait<" + std::to_string(pipe.ahead - 1) + ">();  " +
                    (pipe.keepGroups ? "// this iteration's buffers landed; those of two "
                                       "iterations back are free"
                                     : "// this iteration's buffers landed, the last "
                                       "iteration is done"));
    if (failed(issueAhead()))
      return failure();
  }

  if (failed(emitBlock(*forOp.getBody(), pipe.keepGroups)))
    return failure();
  auto yield = cast<scf::YieldOp>(forOp.getBody()->getTerminator());
  for (auto [arg, value] : llvm::zip(forOp.getRegionIterArgs(), yield.getOperands())) {
    std::string dst = nameOf(arg), src = nameOf(value);
    if (dst != src)
      copyLine(dst, src);
  }
  // Every buffer written in this body is rewritten next iteration.
  bool writesShared = false;
  forOp.getBody()->walk([&](Operation *op) {
    auto rows = dyn_cast<tile::LoadRowsOp>(op);
    if (isa<tile::LoadOp, tile::CopyOp>(op) || (rows && cast<tile::TileType>(rows.getType()).isShared()))
      writesShared = true;
  });
  if (writesShared && !oneBarrier)
    barrier("  // buffers are overwritten by the next iteration");
  --indent;
  line() << "}\n";
  if (pipe.keepGroups) {
    line() << "wgmma_wait<0>();  // the last iteration's products\n";
    fenceAccumulators("");  // no read of them moves above that wait
  }
  if (pipelined)
    line() << "cp_async_wait<0>();\n";
  // That wait and the barrier below also land the standalone loads issued
  // before the loop.
  bool landsLoads = pipelined && writesShared && oneBarrier && !loadsInFlight.empty();
  if (landsLoads && wgmma())
    line() << "fence_async_shared();\n";
  if (writesShared && oneBarrier)
    barrier("  // the last iteration's buffers are free for what follows");
  if (landsLoads)
    settleLoads();
  pipeline = outer;
  for (auto &[a, frag] : promotedHere)
    promotedA.erase(a);
  return success();
}

/// Issues the pipelined loads of the iteration whose induction variable is
/// `ivExpr` (when it is inside the loop bounds) into buffer `buffer`, with the
/// index math they need recomputed for that iteration, then commits the
/// group (possibly empty, so that waits count one group per iteration).
LogicalResult KernelEmitter::emitIssueAhead(scf::ForOp forOp, Pipeline &pipe, StringRef suffix,
                                            const std::string &ivExpr, const std::string &buffer) {
  std::string ub = nameOf(forOp.getUpperBound());
  line() << "{  // loads of a later iteration, in flight during this one\n";
  ++indent;
  std::string ivAhead = fresh(nameOf(forOp.getInductionVar()) + suffix.str());
  line() << "const int " << ivAhead << " = " << ivExpr << ";\n";
  line() << "if (" << ivAhead << " < " << ub << ") {\n";
  ++indent;
  auto saved = names;
  bind(forOp.getInductionVar(), ivAhead);
  aheadSuffix = suffix.str();
  for (Operation *op : pipe.slice)
    if (failed(emitOp(op)))
      return failure();
  aheadSuffix.clear();
  for (Operation *op : pipe.loads) {
    if (auto rows = dyn_cast<tile::LoadRowsOp>(op)) {
      auto type = cast<tile::TileType>(rows.getType());
      std::string off = placeShared(rows, type, pipe.stages, slotHint(rows));
      ValueRange idx = rows.getIndices();
      line() << "load_rows_async<kThreads, " << type.getRows() << ">("
             << sharedFloats(off, type, buffer) << ", "
             << globalVector(rows.getSource(), idx) << ", " << nameOf(idx.back()) << ", "
             << nameOf(rows.getRowLimit()) << ");\n";
      continue;
    }
    auto load = cast<tile::LoadOp>(op);
    auto type = cast<tile::TileType>(load.getType());
    std::string off = placeShared(load, type, pipe.stages, slotHint(load));
    FailureOr<std::string> ctype = typeOf(load, type);
    if (failed(ctype))
      return failure();
    std::string dst = "smem_tile_at<" + *ctype + ">(smem, " +
                      bufferAddress(off, buffer, *ctype + "::kBytes") + ")";
    if (failed(emitLoadIssue(load, dst)))
      return failure();
  }
  names = saved;
  --indent;
  line() << "}\n";
  --indent;
  line() << "}\n";
  line() << "cp_async_commit();\n";
  return success();
}

LogicalResult KernelEmitter::emitIf(scf::IfOp ifOp) {
  SmallVector<std::string> resultNames;
  for (Value r : ifOp.getResults()) {
    FailureOr<std::string> type = typeOf(ifOp, r.getType());
    if (failed(type))
      return failure();
    std::string name = freshFor(r, "sel");
    line() << *type << " " << name << ";\n";
    bind(r, name);
    resultNames.push_back(name);
  }
  auto emitBranch = [&](Region &region) -> LogicalResult {
    ++indent;
    Block &block = region.front();
    if (failed(emitBlock(block)))
      return failure();
    if (auto yield = dyn_cast<scf::YieldOp>(block.getTerminator()))
      for (auto [name, value] : llvm::zip(resultNames, yield.getOperands()))
        copyLine(name, nameOf(value));
    --indent;
    return success();
  };
  line() << "if (" << nameOf(ifOp.getCondition()) << ") {\n";
  if (failed(emitBranch(ifOp.getThenRegion())))
    return failure();
  if (!ifOp.getElseRegion().empty()) {
    line() << "} else {\n";
    if (failed(emitBranch(ifOp.getElseRegion())))
      return failure();
  }
  line() << "}\n";
  return success();
}

/// A 2-D view of `tensor` at the leading `indices` (all but the last `keep`
/// of them): rows walk dim rank-2, columns dim rank-1.
std::string KernelEmitter::globalMatrix(Value tensor, ValueRange indices, unsigned keep) {
  auto type = cast<tile::GlobalTensorType>(tensor.getType());
  FailureOr<std::string> elem = cppElementType(kernel, type.getElementType());
  std::string s = "matrix_view<" + *elem + ">(" + nameOf(tensor);
  for (unsigned i = 0; i + keep < indices.size(); ++i)
    s += ", " + nameOf(indices[i]);
  return s + ")";
}

/// The row vector of `tensor` at the leading `indices` (all but the last).
std::string KernelEmitter::globalVector(Value tensor, ValueRange indices) {
  std::string view = "vector_view(" + nameOf(tensor);
  for (unsigned i = 0; i + 1 < indices.size(); ++i)
    view += ", " + nameOf(indices[i]);
  return view + ")";
}

LogicalResult KernelEmitter::emitLoadIssue(tile::LoadOp load, StringRef dst) {
  ValueRange idx = load.getIndices();
  auto srcType = cast<tile::GlobalTensorType>(load.getSource().getType());
  std::string row0 = srcType.getRank() >= 2 ? nameOf(idx[idx.size() - 2]) : "0";
  std::string col0 = nameOf(idx.back());
  line() << "load_tile_async<kThreads"
         << (limitInsideChunk(load.getSource(), load.getColLimit()) ? ", true" : "") << ">(" << dst
         << ", " << globalMatrix(load.getSource(), idx, srcType.getRank() >= 2 ? 2 : 1) << ", " << row0
         << ", " << col0 << ", " << nameOf(load.getRowLimit()) << ", "
         << nameOf(load.getColLimit()) << ");\n";
  return success();
}

/// Whether the device library has the call form the emitter prints for `op`'s
/// operand layouts (RegTileF32 / RegTile16 in registers; SmemTile, the wgmma
/// SmemPanelTile or SmemTileF32 in shared memory). The verifiers accept every
/// layout the CPU executor runs; the forms missing here would be CUDA that does
/// not compile, so they are named instead.
static LogicalResult checkLibraryForm(Operation *op, bool wgmma) {
  auto tileOf = [](Value v) { return cast<tile::TileType>(v.getType()); };
  auto sixteenBit = [](tile::TileType t) { return !t.getElementType().isF32(); };
  auto unsupported = [&](const llvm::Twine &what, StringRef supported) {
    return op->emitError() << "CUDA emitter: the device library has no '" << op->getName()
                           << "' of " << what << "; it supports " << supported
                           << " (the CPU executor runs every form)";
  };
  if (auto store = dyn_cast<tile::StoreOp>(op)) {
    tile::TileType value = tileOf(store.getValue());
    if (value.isShared() && (!sixteenBit(value) || wgmma))
      return unsupported(llvm::Twine("a shared ") + (sixteenBit(value) ? "wgmma panel" : "f32") +
                             " tile",
                         "stores of register tiles and of 16-bit mma_sync_sm80 shared tiles");
  }
  if (auto convert = dyn_cast<tile::ConvertOp>(op)) {
    tile::TileType src = tileOf(convert.getSource()), dst = tileOf(convert.getResult());
    bool ok = src.isRegister() ? sixteenBit(src) != sixteenBit(dst) || src == dst
              : !sixteenBit(src) ? true
                                 : !sixteenBit(dst) || src.getElementType() == dst.getElementType();
    if (!ok)
      return unsupported(llvm::formatv("{0} {1} tile to {2}", src.isShared() ? "a shared" : "a register",
                                       src.getElementType(), dst.getElementType())
                             .str(),
                         "16-bit <-> f32 conversions and 16-bit shared tiles "
                         "loaded into registers of their own type");
  }
  if (auto dot = dyn_cast<tile::RowDotOp>(op)) {
    tile::TileType lhs = tileOf(dot.getLhs()), rhs = tileOf(dot.getRhs());
    bool ok = lhs.getSpace() == rhs.getSpace() && lhs.getElementType() == rhs.getElementType() &&
              (lhs.isRegister() || (sixteenBit(lhs) && !wgmma));
    if (!ok)
      return unsupported("these operands",
                         "two register tiles of one element type or two 16-bit mma_sync_sm80 "
                         "shared tiles");
  }
  if (auto sum = dyn_cast<tile::RowSumOp>(op); sum && !tileOf(sum.getSource()).isRegister())
    return unsupported("a shared tile", "f32 register tiles");
  // Column limits need no check: a limit that may end inside a 16-byte chunk
  // gets the device library's element-exact forms (limitInsideChunk), so a
  // padded tile of any width reads zeros past its tensor's columns and never
  // stores there.
  return success();
}

/// The device-library matmul for the operand transposes of `mm`.
static const char *matmulFunction(tile::MatmulOp mm) {
  if (mm.getTransposeA())
    return mm.getTransposeB() ? "matmul_ta_tb" : "matmul_ta";
  return mm.getTransposeB() ? "matmul_tb" : "matmul";
}

LogicalResult KernelEmitter::emitTileOp(Operation *op) {
  if (failed(checkLibraryForm(op, wgmma())))
    return failure();
  auto reg = [&](Value v) { return nameOf(v); };
  return llvm::TypeSwitch<Operation *, LogicalResult>(op)
      .Case([&](tile::ProgramIdOp o) {
        static const char *axes[] = {"blockIdx.x", "blockIdx.y", "blockIdx.z"};
        std::string name =
            freshFor(o.getResult(), std::string("block_") + tile::stringifyGridAxis(o.getAxis()).str());
        // The block order flash-order-blocks chose (a bijection of the grid).
        tile::GridOrderAttr order = kernel.getGridOrderAttr();
        if (order && order.getOrder() == tile::BlockOrder::LongestFirst &&
            o.getAxis() == tile::GridAxis::X) {
          declarationLine(name)
              << "const int " << name
              << " = static_cast<int>(gridDim.x - 1 - blockIdx.x);  // longest rows first\n";
          bind(o.getResult(), name);
          return success();
        }
        if (order && order.getOrder() == tile::BlockOrder::Grouped &&
            o.getAxis() != tile::GridAxis::Z) {
          declarationLine(name) << "const int " << name << " = grouped_block<" << order.getGroup()
                                << ">()." << (o.getAxis() == tile::GridAxis::X ? "x" : "y")
                                << ";  // tiles in groups of " << order.getGroup()
                                << " row blocks (L2 reuse)\n";
          bind(o.getResult(), name);
          return success();
        }
        declarationLine(name) << "const int " << name << " = static_cast<int>("
                              << axes[static_cast<int>(o.getAxis())] << ");\n";
        bind(o.getResult(), name);
        return success();
      })
      .Case([&](tile::DimOp o) {
        std::string name =
            freshFor(o.getResult(), nameOf(o.getTensor()) + "_dim" + std::to_string(o.getIndex()));
        declarationLine(name) << "const int " << name << " = static_cast<int>("
                              << nameOf(o.getTensor()) << ".shape[" << o.getIndex() << "]);\n";
        bind(o.getResult(), name);
        return success();
      })
      .Case([&](tile::LoadOp o) -> LogicalResult {
        auto type = cast<tile::TileType>(o.getType());
        FailureOr<std::string> ctype = typeOf(o, type);
        if (failed(ctype))
          return failure();
        std::string hint = slotHint(o);
        if (pipeline && pipeline->loads.contains(o)) {
          std::string off = placeShared(o, type, pipeline->stages, hint);
          std::string name = fresh(hint);
          line() << "const " << *ctype << " " << name << " = smem_tile_at<" << *ctype
                 << ">(smem, " << bufferAddress(off, pipeline->stageVar, *ctype + "::kBytes")
                 << ");\n";
          bind(o.getResult(), name);
          return success();
        }
        std::string off = placeShared(o, type, 1, hint);
        std::string name = fresh(hint);
        line() << "const " << *ctype << " " << name << " = smem_tile_at<" << *ctype
               << ">(smem, " << off << ");\n";
        bind(o.getResult(), name);
        if (failed(emitLoadIssue(o, name)))
          return failure();
        line() << "cp_async_commit();\n";
        loadsInFlight.push_back({o.getResult(), blockDepth});
        return success();
      })
      .Case([&](tile::StoreOp o) {
        ValueRange idx = o.getIndices();
        auto dstType = cast<tile::GlobalTensorType>(o.getDest().getType());
        std::string row0 = dstType.getRank() >= 2 ? nameOf(idx[idx.size() - 2]) : "0";
        line() << "store_tile<kThreads"
               << (limitInsideChunk(o.getDest(), o.getColLimit()) ? ", true" : "") << ">("
               << globalMatrix(o.getDest(), idx, dstType.getRank() >= 2 ? 2 : 1)
               << ", " << row0 << ", " << nameOf(idx.back()) << ", " << nameOf(o.getRowLimit())
               << ", " << nameOf(o.getColLimit()) << ", " << reg(o.getValue()) << ");\n";
        return success();
      })
      .Case([&](tile::AtomicAddOp o) {
        ValueRange idx = o.getIndices();
        line() << "atomic_add_tile"
               << (limitInsideChunk(o.getDest(), o.getColLimit()) ? "<true>" : "") << "("
               << globalMatrix(o.getDest(), idx, 2) << ", "
               << nameOf(idx[idx.size() - 2]) << ", " << nameOf(idx.back()) << ", "
               << nameOf(o.getRowLimit()) << ", " << nameOf(o.getColLimit()) << ", "
               << reg(o.getValue()) << ");\n";
        return success();
      })
      .Case([&](tile::LoadRowsOp o) {
        ValueRange idx = o.getIndices();
        auto type = cast<tile::TileType>(o.getType());
        if (type.isShared()) {
          // Sᵀ backward: per-query lse / D read by column index, issued one step
          // ahead with a pipeline (this step's buffer), else staged once per step.
          bool ahead = pipeline && pipeline->loads.contains(o);
          std::string hint = slotHint(o);
          std::string off = placeShared(o, type, ahead ? pipeline->stages : 1, hint);
          std::string name = fresh(hint);
          line() << "float* const " << name << " = "
                 << sharedFloats(off, type, ahead ? pipeline->stageVar : "") << ";\n";
          bind(o.getResult(), name);
          if (ahead)
            return success();
          line() << "load_rows_shared<kThreads, " << type.getRows() << ">(" << name << ", "
                 << globalVector(o.getSource(), idx) << ", " << nameOf(idx.back()) << ", "
                 << nameOf(o.getRowLimit()) << ");\n";
          auto next = dyn_cast_or_null<tile::LoadRowsOp>(o->getNextNode());
          // The next one shares this barrier unless it is issued ahead, which
          // emits none.
          if (!next || !cast<tile::TileType>(next.getType()).isShared() ||
              (pipeline && pipeline->loads.contains(next)))
            barrier("  // column vectors written by all threads");
          return success();
        }
        std::string name = declareResult(o, o.getResult(), nameOf(o.getSource()) + "_rows", "");
        line() << "load_rows(" << name << ", " << globalVector(o.getSource(), idx) << ", " << nameOf(idx.back()) << ", "
               << nameOf(o.getRowLimit()) << ");\n";
        return success();
      })
      .Case([&](tile::StoreRowsOp o) {
        ValueRange idx = o.getIndices();
        line() << "store_rows(" << globalVector(o.getDest(), idx) << ", " << nameOf(idx.back()) << ", "
               << nameOf(o.getRowLimit()) << ", " << reg(o.getValue()) << ");\n";
        return success();
      })
      .Case([&](tile::AddBiasOp o) -> LogicalResult {
        std::string name = resultOf(o, o.getAcc(), "biased");
        auto bt = cast<tile::GlobalTensorType>(o.getBias().getType());
        FailureOr<std::string> elem = cppElementType(o, bt.getElementType());
        if (failed(elem))
          return failure();
        line() << "add_bias(" << name << ", vector_view<" << *elem << ">(" << nameOf(o.getBias())
               << "), " << nameOf(o.getCol0()) << ", " << nameOf(o.getColLimit())
               << ");  // + bias[col]\n";
        return success();
      })
      .Case([&](tile::FillOp o) {
        if (o->hasOneUse())
          if (auto mm = dyn_cast<tile::MatmulOp>(*o->getUsers().begin()))
            if (isChunkedAtomicMatmul(mm))
              return success(); // each column chunk starts from its own zeros
        double value = o.getValue().convertToDouble();
        // A zero tile that only seeds a matmul is that product's accumulator.
        std::string hint = std::isinf(value) ? "neg_inf" : (value == 0 ? "zeros" : "filled");
        if (std::string given = nameGiven(o.getResult()); !given.empty())
          hint = given;
        else
        if (o->hasOneUse())
          if (auto mm = dyn_cast<tile::MatmulOp>(*o->getUsers().begin()))
            hint = mm.getTransposeB() && !mm.getTransposeA() ? "s" : "prod";
        std::string name = declareResult(o, o.getResult(), hint, "");
        line() << "fill(" << name << ", " << floatLiteral(o.getValue().convertToDouble())
               << ");\n";
        return success();
      })
      .Case([&](tile::CopyOp o) -> LogicalResult {
        auto type = cast<tile::TileType>(o.getType());
        FailureOr<std::string> ctype = typeOf(o, type);
        if (failed(ctype))
          return failure();
        std::string hint = slotHint(o);
        std::string off = placeShared(o, type, 1, hint);
        std::string name = fresh(hint);
        line() << "const " << *ctype << " " << name << " = smem_tile_at<" << *ctype
               << ">(smem, " << off << ");\n";
        line() << "store_fragments(" << name << ", " << reg(o.getSource()) << ");\n";
        // A wgmma reader (the wgmma dQ product, wgmma_matmul_ta) reads through the async
        // proxy: the generic-proxy stores fence before the barrier.
        if (wgmma() && llvm::any_of(o->getUsers(), [&](Operation *user) {
              auto mm = dyn_cast<tile::MatmulOp>(user);
              return mm && (isWgmmaChunkedMatmul(mm) || !isChunkedAtomicMatmul(mm));
            }))
          line() << "fence_async_shared();\n";
        barrier();
        bind(o.getResult(), name);
        return success();
      })
      .Case([&](tile::ConvertOp o) {
        // A register tile to its own type: a copy (the library has no identity convert).
        if (o.getSource().getType() == o.getType()) {
          declareResult(o, o.getResult(), nameOf(o.getSource()) + "_cvt", reg(o.getSource()));
          return success();
        }
        std::string name = declareResult(o, o.getResult(), nameOf(o.getSource()) + "_cvt", "");
        line() << "convert(" << name << ", " << reg(o.getSource()) << ");\n";
        return success();
      })
      .Case([&](tile::MatmulOp o) -> LogicalResult {
        auto aType = cast<tile::TileType>(o.getA().getType());
        if (aType.getElementType().isF32())
          return o.emitError("CUDA strategy mma_sync_sm80 needs bf16/f16 matmul operands; this "
                             "f32 kernel runs on the CPU executor only"),
                 failure();
        std::string a = promotedA.count(o.getA()) ? promotedA[o.getA()] : reg(o.getA());
        if (isChunkedAtomicMatmul(o)) {
          auto atomic = cast<tile::AtomicAddOp>(*o->getUsers().begin());
          auto type = cast<tile::TileType>(o.getType());
          const char *fn = isWgmmaChunkedMatmul(o) ? "wgmma_matmul_ta" : matmulFunction(o);
          ValueRange idx = atomic.getIndices();
          std::string part = fresh("part");
          auto [bands, groups, width] = chunkShape(type);
          std::string bandsArg = bands == static_cast<int64_t>(kernel.getWarps()) ? "kWarps" : std::to_string(bands);
          line() << "#pragma unroll\n";
          if (groups == 1)
            line() << "for (int chunk = 0; chunk < " << type.getCols() << "; chunk += " << width
                   << ") {  // a column chunk at a time: fewer live registers\n";
          else
            line() << "for (int chunk = (warp_id() / " << bands << ") * " << width << "; chunk < "
                   << type.getCols() << "; chunk += " << width * groups << ") {  // " << groups
                   << " column groups of " << bands << " row bands\n";
          ++indent;
          line() << "RegTileF32<" << type.getRows() << ", " << width << ", " << bandsArg << "> " << part << ";\n";
          line() << "fill(" << part << ", 0.f);\n";
          line() << fn << "(" << part << ", " << a << ", " << reg(o.getB()) << ", chunk);\n";
          // The wgmma Sᵀ backward's dQ (whole 64-column chunks) goes out in 64-byte row segments.
          bool exact = limitInsideChunk(atomic.getDest(), atomic.getColLimit());
          line() << (isWgmmaChunkedMatmul(o) && !exact ? "atomic_add_tile_segments"
                                                        : exact ? "atomic_add_tile<true>" : "atomic_add_tile")
                 << "(" << globalMatrix(atomic.getDest(), idx, 2) << ", "
                 << nameOf(idx[idx.size() - 2]) << ", " << plusScaled(nameOf(idx.back()), 1, "chunk")
                 << ", "
                 << nameOf(atomic.getRowLimit()) << ", " << nameOf(atomic.getColLimit()) << ", "
                 << part << ");\n";
          --indent;
          line() << "}\n";
          emittedAhead.insert(atomic);
          return success();
        }
        std::string name = resultOf(o, o.getAcc(), "mm");
        const char *fn = matmulFunction(o);
        if (wgmma()) {
          bool aShared = aType.isShared();
          bool transposeA = o.getTransposeA(), transposeB = o.getTransposeB();
          if (aShared ? transposeA && transposeB : transposeA || transposeB)
            return o.emitError("strategy wgmma_sm90 supports C += A·B, A·Bᵀ and Aᵀ·B with A, B "
                               "shared and C += A·B with A in registers; use mma_sync_sm80 for "
                               "this kernel"),
                   failure();
          // Shared A: K-major panels (A·B, A·Bᵀ) or MN-major (Aᵀ·B); B MN-major
          // unless transposed. The library picks the SS or RS form by A's type.
          fn = transposeA ? "wgmma_matmul_ta<false>"
                          : transposeB ? "wgmma_matmul_tb<false>" : "wgmma_matmul<false>";
          // Shared operands are only read; the block-end wait covers their reuse.
          wgmmaInFlight.append({o.getAcc(), o.getResult()});
          if (!aShared)
            wgmmaInFlight.push_back(o.getA());
        }
        line() << fn << "(" << name << ", " << a << ", " << reg(o.getB()) << ");  // += "
               << (o.getTransposeA() ? "Aᵀ" : "A") << "·" << (o.getTransposeB() ? "Bᵀ" : "B")
               << "\n";
        return success();
      })
      .Case([&](tile::MaskOp o) -> LogicalResult {
        std::string name = resultOf(o, o.getScores(), "masked");
        // With a modifier: mask_mod<Mod, L, R> (the struct printed before the kernel).
        std::string fn = o.getMaskModAttr() ? "mask_mod" : "mask";
        std::string params = std::to_string(static_cast<int64_t>(o.getWindowLeft())) + ", " +
                             std::to_string(static_cast<int64_t>(o.getWindowRight()));
        if (auto sym = o.getMaskModAttr())
          params = maskModTypeName(sym) + ", " + params;
        const char *what = o.getMaskModAttr() ? "outside the window, hidden by the modifier / past the keys"
                                              : "outside the window / past the keys";
        // The modifier's batch, head and tensors (mask_env).
        std::string env;
        if (o.getMaskModAttr()) {
          env = ", mask_env(";
          for (auto [i, arg] : llvm::enumerate(o.getModArgs()))
            env += (i ? ", " : "") + nameOf(arg);
          env += ")";
        }
        if (o.getTransposed()) {
          line() << fn << "_transposed<" << params << ">(" << name << ", " << nameOf(o.getCol0()) << ", "
                 << nameOf(o.getRow0()) << ", " << nameOf(o.getColLimit()) << ", " << nameOf(o.getOffset())
                 << env << ");  // Sᵀ: -inf " << what << "\n";
          return success();
        }
        line() << fn << "<" << params << ">(" << name << ", " << nameOf(o.getRow0()) << ", "
               << nameOf(o.getCol0()) << ", " << nameOf(o.getColLimit()) << ", " << nameOf(o.getOffset())
               << env << ");  // -inf " << what << "\n";
        return success();
      })
      .Case([&](tile::ScoreOp o) {
        std::string name = resultOf(o, o.getScores(), "modified");
        std::string env = "mask_env(";
        for (auto [i, arg] : llvm::enumerate(o.getModArgs()))
          env += (i ? ", " : "") + nameOf(arg);
        env += ")";
        line() << "score_mod<" << scoreModTypeName(o.getScoreModAttr()) << (o.getTransposed() ? ", true" : "")
               << ">(" << name << ", " << nameOf(o.getRow0()) << ", " << nameOf(o.getCol0()) << ", "
               << nameOf(o.getQueryLimit()) << ", " << floatLiteral(o.getScale().convertToDouble()) << ", " << env
               << ");  // " << (o.getTransposed() ? "Sᵀ" : "S") << " = mod(scale · s), -inf past the queries\n";
        return success();
      })
      .Case([&](tile::ScoreGradOp o) {
        std::string name = resultOf(o, o.getGrad(), "dmodified");
        std::string env = "mask_env(";
        for (auto [i, arg] : llvm::enumerate(o.getModArgs()))
          env += (i ? ", " : "") + nameOf(arg);
        env += ")";
        line() << "score_mod_grad<" << scoreModTypeName(o.getScoreModAttr()) << (o.getTransposed() ? ", true" : "")
               << ">(" << name << ", " << reg(o.getRaw()) << ", " << nameOf(o.getRow0()) << ", "
               << nameOf(o.getCol0()) << ", " << floatLiteral(o.getScale().convertToDouble()) << ", " << env
               << ");  // dS *= dmod/ds\n";
        return success();
      })
      .Case([&](tile::SoftcapOp o) {
        std::string name = resultOf(o, o.getScores(), "capped");
        line() << "softcap(" << name << ", " << floatLiteral(o.getScale().convertToDouble())
               << ", " << floatLiteral(o.getCap().convertToDouble()) << ");\n";
        return success();
      })
      .Case([&](tile::SoftcapGradOp o) {
        std::string name = resultOf(o, o.getGrad(), "dcapped");
        line() << "softcap_grad(" << name << ", " << reg(o.getCapped()) << ", "
               << floatLiteral(o.getCap().convertToDouble())
               << ");  // dS *= 1 - (capped / cap)^2\n";
        return success();
      })
      .Case([&](tile::ScaleOp o) {
        std::string name = resultOf(o, o.getSource(), "scaled");
        line() << "scale(" << name << ", " << floatLiteral(o.getFactor().convertToDouble())
               << ");\n";
        return success();
      })
      .Case([&](tile::MulOp o) {
        std::string name = resultOf(o, o.getLhs(), "prod");
        line() << "multiply(" << name << ", " << reg(o.getRhs()) << ");\n";
        return success();
      })
      .Case([&](tile::ActivationOp o) {
        std::string name = resultOf(o, o.getSource(), "act");
        line() << "activation<" << activationEnumerator(o.getKind()) << activationPrecision()
               << ">(" << name << ");\n";
        return success();
      })
      .Case([&](tile::ActivationGradOp o) {
        std::string name = resultOf(o, o.getGrad(), "dpre");
        line() << "activation_grad<" << activationEnumerator(o.getKind()) << ">(" << name << ", "
               << reg(o.getPreactivation()) << ");\n";
        return success();
      })
      .Case([&](tile::RowMaxOp o) {
        declareResult(o, o.getResult(), "m_new",
                      "row_max(" + reg(o.getScores()) + ", " + reg(o.getPrev()) + ")");
        return success();
      })
      .Case([&](tile::Exp2Op o) {
        std::string name = resultOf(o, o.getScores(), "probs");
        line() << "exp2(" << name << ", " << reg(o.getMax()) << ", "
               << floatLiteral(o.getScale().convertToDouble() * kLog2e)
               << ");  // P = exp2((S - m)·scale·log2e)\n";
        return success();
      })
      .Case([&](tile::SoftmaxCorrectionOp o) {
        declareResult(o, o.getResult(), "corr",
                      "softmax_correction(" + reg(o.getOldMax()) + ", " + reg(o.getNewMax()) +
                          ", " + floatLiteral(o.getScale().convertToDouble() * kLog2e) + ")");
        return success();
      })
      .Case([&](tile::OnlineSumOp o) {
        declareResult(o, o.getResult(), "l_new",
                      "online_sum(" + reg(o.getSum()) + ", " + reg(o.getCorrection()) + ", " +
                          reg(o.getProbs()) + ")");
        return success();
      })
      .Case([&](tile::RowSumOp o) {
        declareResult(o, o.getResult(), "rsum", "row_sum(" + reg(o.getSource()) + ")");
        return success();
      })
      .Case([&](tile::RescaleOp o) {
        std::string name = resultOf(o, o.getAcc(), "rescaled");
        line() << "rescale(" << name << ", " << reg(o.getCorrection()) << ");\n";
        return success();
      })
      .Case([&](tile::NormalizeOp o) {
        std::string name = resultOf(o, o.getAcc(), "normalized");
        line() << "normalize(" << name << ", " << reg(o.getSum()) << ");  // O = acc / l\n";
        return success();
      })
      .Case([&](tile::LseOp o) {
        declareResult(o, o.getResult(), "lse_out",
                      "logsumexp(" + reg(o.getMax()) + ", " + reg(o.getSum()) + ", " +
                          floatLiteral(o.getScale().convertToDouble()) + ")");
        return success();
      })
      .Case([&](tile::RowDotOp o) {
        declareResult(o, o.getResult(), "delta_rows",
                      "row_dot(" + reg(o.getLhs()) + ", " + reg(o.getRhs()) + ")");
        return success();
      })
      .Case([&](tile::RecomputeProbsOp o) {
        std::string name = resultOf(o, o.getScores(), "probs");
        bool cols = cast<tile::TileType>(o.getLse().getType()).isShared();
        line() << (cols ? "recompute_probs_cols(" : "recompute_probs(") << name << ", " << reg(o.getLse()) << ", "
               << floatLiteral(o.getScale().convertToDouble() * kLog2e)
               << ");  // P = exp(scale·S - lse)\n";
        return success();
      })
      .Case([&](tile::SoftmaxGradOp o) {
        std::string name = resultOf(o, o.getDprobs(), "dscores");
        bool cols = cast<tile::TileType>(o.getDelta().getType()).isShared();
        line() << (cols ? "softmax_grad_cols(" : "softmax_grad(") << name << ", " << reg(o.getProbs()) << ", "
               << reg(o.getDelta()) << ");  // dS = P∘(dP - D)\n";
        return success();
      })
      .Default([&](Operation *other) {
        return other->emitError("CUDA emitter: no device-library primitive for '")
                   << other->getName() << "'",
               failure();
      });
}

LogicalResult KernelEmitter::emit(llvm::raw_ostream &out) {
  Block &body = kernel.getBody().front();
  for (const char *name : reservedNames())
    used[name] = 1;
  for (auto [i, arg] : llvm::enumerate(body.getArguments())) {
    std::string n = cppIdentifier(argNames[i]);
    bind(arg, n);
    used[n] = 1;
  }
  if (failed(emitBlock(body)) || typeError)
    return failure();
  os.flush();
  bodyText = dropUnusedDeclarations(bodyText);

  int64_t warps = kernel.getWarps();
  std::string ns = entry + "_config";
  if (!anonymous)
    out << "// ---- " << kernel.getSymName() << " ----\n";
  if (!specComment.empty())
    out << "// " << specComment << "\n";
  if (failed(printMaskMods(kernel, out)) || failed(printScoreMods(kernel, out)))
    return failure();
  out << "namespace " << ns << " {\n";
  // Only constants the kernel reads are declared (NVRTC warns about the
  // others); the plan's block sizes and shared-memory size are a comment.
  out << "// " << kernel.getBlockM() << " x " << kernel.getBlockN() << " blocks, "
      << kernel.getStages() << " stages, " << sharedBytes() << " bytes of shared memory\n";
  if (StringRef(bodyText).contains("kWarps"))
    out << "constexpr int kWarps = " << warps << ";   // row bands of every register tile\n";
  out << "constexpr int kThreads = " << warps * 32 << ";\n";
  if (!slotOffsets.empty())
    out << "// Shared-memory slots: byte offsets of each tile (its first buffer).\n";
  for (auto &[name, offset] : slotOffsets)
    out << "constexpr int " << name << " = " << offset << ";\n";
  out << "}  // namespace " << ns << "\n\n";
  out << "extern \"C\" __global__ void __launch_bounds__(" << ns << "::kThreads, 1)\n"
      << entry << "(";
  // (The modifiers' tensors -- a mask modifier's i32, a score modifier's -- are grid constants: the kernel keeps
  // their addresses.)
  llvm::SmallPtrSet<Value, 4> modifierTensors;
  body.walk([&](Operation *op) {
    if (auto score = dyn_cast<tile::ScoreOp>(op))
      modifierTensors.insert(score.getModArgs().begin(), score.getModArgs().end());
    else if (auto grad = dyn_cast<tile::ScoreGradOp>(op))
      modifierTensors.insert(grad.getModArgs().begin(), grad.getModArgs().end());
  });
  for (auto [i, arg] : llvm::enumerate(body.getArguments())) {
    auto tensor = dyn_cast<tile::GlobalTensorType>(arg.getType());
    out << (i ? ", " : "")
        << (!tensor ? "const int "
            : tensor.getElementType().isSignlessInteger(32) || modifierTensors.contains(arg)
                ? "const __grid_constant__ flashc::TensorArg "
                : "const flashc::TensorArg ")
        << nameOf(arg);
  }
  out << ") {\n";
  out << "  using namespace flashc::device;\n";
  out << "  using namespace " << ns << ";\n";
  if (wgmma()) {
    out << "  extern __shared__ __align__(1024) unsigned char smem_raw[];\n";
    out << "  unsigned char* smem = align_smem_1024(smem_raw);  // swizzled panels: 1024-byte base\n";
  } else {
    out << "  extern __shared__ __align__(128) unsigned char smem[];\n";
  }
  out << bodyText;
  out << "}\n\n";
  return success();
}

//===----------------------------------------------------------------------===//
// Module: kernels, programs, manifest
//===----------------------------------------------------------------------===//


/// The first file location in `loc` (itself, or inside a fused location).
FileLineColLoc firstFileLoc(Location loc) {
  if (auto fl = dyn_cast<FileLineColLoc>(loc))
    return fl;
  if (auto fused = dyn_cast<FusedLoc>(loc))
    for (Location l : fused.getLocations())
      if (auto fl = firstFileLoc(l))
        return fl;
  return {};
}

/// A spec file named by its file name only: the same spec compiled from
/// another directory (or a temporary copy) must give the same source, and so
/// the same kernel-cache keys.
std::string specFileName(FileLineColLoc loc) {
  return llvm::sys::path::filename(loc.getFilename().getValue()).str();
}

std::string specComment(tile::KernelOp kernel) {
  std::string text;
  llvm::raw_string_ostream s(text);
  if (Attribute spec = kernel.getSpecAttr())
    s << "computes " << spec << "; ";
  if (FileLineColLoc loc = firstFileLoc(kernel.getLoc()))
    s << "from " << specFileName(loc) << ":" << loc.getLine() << ":" << loc.getColumn();
  return s.str();
}

/// The spec's file name, from the module (the parser gives it the file's
/// location) or else its first kernel; "" when neither has one.
std::string moduleSpecName(ModuleOp module) {
  if (FileLineColLoc loc = firstFileLoc(module.getLoc()))
    return specFileName(loc);
  for (auto kernel : module.getOps<tile::KernelOp>())
    if (FileLineColLoc loc = firstFileLoc(kernel.getLoc()))
      return specFileName(loc);
  return "";
}

/// The head of kernels.cu: which spec, for which architecture, and each
/// kernel's math in a line, so a reader need not open the spec.
void printSourceHeader(llvm::raw_ostream &src, ModuleOp module, const rt::Manifest &manifest,
                       const CudaEmitOptions &options) {
  std::string specName = moduleSpecName(module);
  src << "// Generated by flashc " << manifest.flashcVersion;
  if (!specName.empty())
    src << " from " << specName;
  src << " for " << (options.arch.empty() ? std::string("sm_80 and sm_90a") : options.arch) << ".\n";
  src << "// Kernels:\n";
  for (auto kernel : module.getOps<tile::KernelOp>()) {
    std::string math = describeKernelMath(kernel.getSpecAttr());
    src << "//   " << kernel.getSymName() << ": " << (math.empty() ? "(no recipe)" : math);
    // One of an op's plans chosen by a run-time size (#tile.run_if): the sizes it runs at.
    if (tile::RunIfAttr runIf = kernel.getRunIfAttr()) {
      src << "; runs where dim " << runIf.getDim() << " of argument " << runIf.getArg() << " is ";
      if (runIf.getMax() < 0)
        src << "at least " << runIf.getMin();
      else
        src << "at most " << runIf.getMax();
    }
    src << "\n";
  }
}


} // namespace

FailureOr<CudaModule> emitCuda(ModuleOp module, const CudaEmitOptions &options) {
  CudaModule result;
  rt::Manifest &manifest = result.manifest;
  manifest.flashcVersion = "0.1.0";
  manifest.source = "kernels.cu";
  manifest.nvrtcOptions = {"-std=c++17"};
  manifest.archs = options.arch.empty() ? std::vector<std::string>{"sm_80", "sm_90a"}
                                        : std::vector<std::string>{options.arch};

  // Parameter names/dims of each kernel, from the first program that launches it.
  llvm::StringMap<std::vector<ArgInfo>> kernelArgs;
  SmallVector<std::unique_ptr<ProgramScope>> programs;
  if (failed(collectPrograms(module, kernelArgs, programs)))
    return failure();

  std::string source;
  llvm::raw_string_ostream src(source);
  // f32 kernels fail at their first f32 product: said before whatever other f32
  // form (a row_dot of f32 shared tiles in a backward preprocess, ...) comes first.
  WalkResult f32 = module.walk([](tile::MatmulOp mm) {
    if (!cast<tile::TileType>(mm.getA().getType()).getElementType().isF32())
      return WalkResult::advance();
    mm.emitError("CUDA strategy mma_sync_sm80 needs bf16/f16 matmul operands; this f32 kernel "
                 "runs on the CPU executor only");
    return WalkResult::interrupt();
  });
  if (f32.wasInterrupted())
    return failure();
  if (module.getOps<tile::KernelOp>().empty())
    return module.emitError("nothing to compile into kernels: after fusion the spec holds no "
                            "flash.attention or flash.ffn (see --emit=graph)"),
           failure();
  // Every kernel needs only this include: a kernel's text after it compiles on its own.
  const char *includes = "#include \"flashc/device/all.cuh\"\n\n";
  printSourceHeader(src, module, manifest, options);
  src << "// Each kernel below is one tile.kernel, printed top to bottom:\n"
      << "// one device-library call per tile op (runtime/device/include/flashc/device).\n"
      << includes;
  // One translation unit per printed kernel; a kernel whose code is an earlier
  // one's but for names (compared as printed anonymously: positional
  // parameters, no value names, no comments) launches that kernel's entry.
  struct Unit {
    size_t start, end;    // its text in `source`
    std::string entry;
    int64_t threads, sharedBytes;
    std::vector<std::string> kernels;
  };
  std::vector<Unit> units;
  std::map<std::string, size_t> unitOfCode; // anonymous text -> units index
  for (auto kernel : module.getOps<tile::KernelOp>()) {
    size_t start = src.str().size();
    std::vector<ArgInfo> args = kernelParameters(kernel, kernelArgs);
    std::vector<std::string> argNames;
    for (auto &a : args)
      argNames.push_back(a.name);
    std::string entry = "flashc_" + cppIdentifier(kernel.getSymName());
    // A warp-specialised kernel is one library call (WsKernelEmitter.h), the
    // FFN backward's 16-bit activation too (LibraryKernelEmitter.h); every
    // other kernel is printed op by op.
    std::optional<WsKernel> ws;
    std::optional<KernelEmitter> emitter;
    // A later kernel whose code (`code`: printed anonymously) is an earlier
    // unit's but for names launches that unit's entry (true); else its `text`
    // is printed as a new unit (false).
    auto shareOrPrint = [&](std::string code, const std::string &text,
                            const std::vector<rt::TensorMapParam> &tensorMaps) -> FailureOr<bool> {
      auto same = unitOfCode.find(code);
      if (same == unitOfCode.end()) {
        unitOfCode.emplace(std::move(code), units.size());
        src << text;
        return false;
      }
      Unit &unit = units[same->second];
      FailureOr<rt::KernelSpec> spec = buildKernelSpec(kernel, args, unit.entry, unit.threads, unit.sharedBytes);
      if (failed(spec))
        return failure();
      spec->tensorMaps = tensorMaps;
      unit.kernels.push_back(spec->name);
      manifest.kernels.push_back(std::move(*spec));
      src << "// ---- " << kernel.getSymName() << " ----\n// launches " << unit.entry
          << " (its code is that kernel's but for names)\n\n";
      return true;
    };
    // The anonymous print's parameter names.
    std::vector<std::string> positional;
    for (size_t i = 0; i < argNames.size(); ++i)
      positional.push_back("arg" + std::to_string(i));
    // The segment form (a document mask's tiles) is the warp-specialised kernels' only: another kernel would read a
    // block-class table that its block-class kernel left unwritten. (flashc's own plans never give one: takesSegments
    // asks every entry; this guards the tile IR that other tools hand in.)
    if (auto attention = llvm::dyn_cast_or_null<tile::AttentionSpecAttr>(kernel.getSpecAttr());
        attention && attention.getSegments() && !attention.classifiesMaskBlocks() && !isWarpSpecialized(kernel))
      return kernel.emitError() << "@" << kernel.getSymName()
                                << " takes a document mask's segment form, which only the warp-specialised kernel has, "
                                   "but it is planned as "
                                << tile::stringifyStrategy(kernel.getStrategy())
                                << "; a tuning entry with segments=0 keeps the block-class table's walk";
    if (isWarpSpecialized(kernel) || isLibraryKernel(kernel)) {
      auto print = [&](ArrayRef<std::string> names, StringRef entryName, StringRef comment,
                       llvm::raw_ostream &out) -> FailureOr<WsKernel> {
        std::vector<std::string> cppNames;
        for (const std::string &name : names)
          cppNames.push_back(cppIdentifier(name));
        return isLibraryKernel(kernel) ? emitLibraryKernel(kernel, names, cppNames, entryName, comment, out)
                                       : emitWsKernel(kernel, names, cppNames, entryName, comment, out);
      };
      std::string text, anonymousText;
      llvm::raw_string_ostream textOut(text), anonymousOut(anonymousText);
      FailureOr<WsKernel> printed = print(argNames, entry, specComment(kernel), textOut);
      if (failed(printed))
        return failure();
      // Compared as printed with positional names and without comments (a
      // library call's Config and arguments are the whole kernel).
      if (failed(print(positional, "flashc_kernel", "", anonymousOut)))
        return failure();
      anonymousOut.flush();
      std::string code;
      for (StringRef line : llvm::split(anonymousText, '\n'))
        if (!line.ltrim().starts_with("//"))
          code += line.split("//").first.rtrim().str() + "\n";
      textOut.flush();
      FailureOr<bool> shared = shareOrPrint(std::move(code), text, printed->tensorMaps);
      if (failed(shared))
        return failure();
      if (*shared)
        continue;
      ws = std::move(*printed);
    } else {
      std::string text, anonymousText;
      llvm::raw_string_ostream textOut(text), anonymousOut(anonymousText);
      emitter.emplace(kernel, argNames, entry, specComment(kernel), options);
      if (failed(emitter->emit(textOut)))
        return failure();
      KernelEmitter anonymous(kernel, positional, "flashc_kernel", "", options, /*anonymous=*/true);
      if (failed(anonymous.emit(anonymousOut)))
        return failure();
      anonymousOut.flush();
      textOut.flush();
      FailureOr<bool> shared = shareOrPrint(std::move(anonymousText), text, {});
      if (failed(shared))
        return failure();
      if (*shared)
        continue;
    }

    int64_t threads = ws ? ws->threads : kernel.getWarps() * 32;
    // The emitter's layout is authoritative: it knows the device library's
    // padding (flash-plan-memory's estimate only decides block sizes).
    int64_t sharedBytes = ws ? ws->sharedBytes : emitter->sharedBytes();
    FailureOr<rt::KernelSpec> spec = buildKernelSpec(kernel, args, entry, threads, sharedBytes);
    if (failed(spec))
      return failure();
    if (ws) {
      spec->tensorMaps = ws->tensorMaps;
      spec->programmatic = ws->programmatic;
    }
    units.push_back({start, src.str().size(), entry, threads, sharedBytes, {spec->name}});
    manifest.kernels.push_back(std::move(*spec));
  }

  if (failed(appendPrograms(module, programs, manifest)))
    return failure();

  rt::Status valid = rt::validateManifest(manifest);
  if (!valid.ok())
    // Every limit a spec can break is checked above or by the passes with
    // the spec's location; what reaches here is a compiler bug.
    return module.emitError("bundle: internal error, please report it with the spec: the "
                            "generated manifest is inconsistent: ")
               << valid.error().message,
           failure();
  src.flush();
  for (const Unit &unit : units) {
    std::string text = includes + source.substr(unit.start, unit.end - unit.start);
    if (unit.kernels.size() > 1) // say so where the code is printed
      text = "// This kernel's code also serves " + llvm::join(ArrayRef(unit.kernels).drop_front(), ", ") +
             " (the same but for names).\n" + text;
    result.kernelUnits.push_back({std::move(text), unit.kernels});
  }
  result.source = std::move(source);
  return result;
}

} // namespace flashc
