//===- TileDialect.cpp - tile dialect, types and attributes ---------------===//
#include "flashc/Dialect/Tile/IR/TileDialect.h"
#include "flashc/Dialect/Tile/IR/TileLimits.h"
#include "flashc/Dialect/Tile/IR/TileOps.h"

#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::tile;

#include "flashc/Dialect/Tile/IR/TileEnums.cpp.inc"
#include "flashc/Dialect/Tile/IR/TileOpsDialect.cpp.inc"
#define GET_ATTRDEF_CLASSES
#include "flashc/Dialect/Tile/IR/TileAttrs.cpp.inc"
#define GET_TYPEDEF_CLASSES
#include "flashc/Dialect/Tile/IR/TileTypes.cpp.inc"

void TileDialect::initialize() {
  addAttributes<
#define GET_ATTRDEF_LIST
#include "flashc/Dialect/Tile/IR/TileAttrs.cpp.inc"
      >();
  addTypes<
#define GET_TYPEDEF_LIST
#include "flashc/Dialect/Tile/IR/TileTypes.cpp.inc"
      >();
  addOperations<
#define GET_OP_LIST
#include "flashc/Dialect/Tile/IR/TileOps.cpp.inc"
      >();
}

static bool isTileElementType(Type type) { return type.isBF16() || type.isF16() || type.isF32(); }

//===----------------------------------------------------------------------===//
// !tile.tensor
//===----------------------------------------------------------------------===//

Type GlobalTensorType::parse(AsmParser &parser) {
  SmallVector<int64_t> shape;
  Type elementType;
  if (parser.parseLess() || parser.parseDimensionList(shape, /*allowDynamic=*/true) ||
      parser.parseType(elementType) || parser.parseGreater())
    return {};
  return GlobalTensorType::getChecked([&] { return parser.emitError(parser.getNameLoc()); },
                                      parser.getContext(), shape, elementType);
}

static void printShape(AsmPrinter &printer, ArrayRef<int64_t> shape) {
  for (int64_t dim : shape) {
    if (ShapedType::isDynamic(dim))
      printer << "?";
    else
      printer << dim;
    printer << "x";
  }
}

void GlobalTensorType::print(AsmPrinter &printer) const {
  printer << "<";
  printShape(printer, getShape());
  printer << getElementType() << ">";
}

LogicalResult GlobalTensorType::verify(function_ref<InFlightDiagnostic()> emitError,
                                       ArrayRef<int64_t> shape, Type elementType) {
  if (shape.empty() || shape.size() > 4)
    return emitError() << "!tile.tensor must have rank 1 to 4, got " << shape.size();
  // The generated kernels index with 32-bit ints.
  for (int64_t dim : shape)
    if (!ShapedType::isDynamic(dim) && (dim < 0 || dim > limits::kMaxInt32))
      return emitError() << "!tile.tensor dimension must be in [0, " << limits::kMaxInt32
                         << "] or ?, got " << dim;
  // i32: the index data a mask modifier reads and its block-class tables.
  if (!isTileElementType(elementType) && !elementType.isSignlessInteger(32))
    return emitError() << "!tile.tensor element type must be bf16, f16, f32 or i32, got " << elementType;
  return success();
}

//===----------------------------------------------------------------------===//
// !tile.tile
//===----------------------------------------------------------------------===//

Type TileType::parse(AsmParser &parser) {
  SmallVector<int64_t> shape;
  Type elementType;
  StringRef spaceName;
  llvm::SMLoc spaceLoc;
  if (parser.parseLess() || parser.parseDimensionList(shape, /*allowDynamic=*/false) ||
      parser.parseType(elementType) || parser.parseComma())
    return {};
  spaceLoc = parser.getCurrentLocation();
  if (parser.parseKeyword(&spaceName) || parser.parseGreater())
    return {};
  std::optional<MemorySpace> space = symbolizeMemorySpace(spaceName);
  if (!space) {
    parser.emitError(spaceLoc) << "expected memory space 'shared' or 'register', got '" << spaceName
                               << "'";
    return {};
  }
  return TileType::getChecked([&] { return parser.emitError(parser.getNameLoc()); },
                              parser.getContext(), shape, elementType, *space);
}

void TileType::print(AsmPrinter &printer) const {
  printer << "<";
  printShape(printer, getShape());
  printer << getElementType() << ", " << stringifyMemorySpace(getSpace()) << ">";
}

LogicalResult TileType::verify(function_ref<InFlightDiagnostic()> emitError,
                               ArrayRef<int64_t> shape, Type elementType, MemorySpace space) {
  if (shape.empty() || shape.size() > 2)
    return emitError() << "!tile.tile must have rank 1 (row or column vector) or 2, got "
                       << shape.size();
  for (int64_t dim : shape)
    if (dim <= 0)
      return emitError() << "!tile.tile dimensions must be static and positive";
  for (int64_t dim : shape)
    if (dim > limits::kMaxTileDim)
      return emitError() << "!tile.tile dimension " << dim << " exceeds " << limits::kMaxTileDim;
  if (!isTileElementType(elementType))
    return emitError() << "!tile.tile element type must be bf16, f16 or f32, got " << elementType;
  // No register file or shared memory holds more (dims < 2^16: no overflow).
  int64_t elements = shape[0] * (shape.size() == 2 ? shape[1] : 1);
  int64_t bytes = elements * (elementType.isF32() ? 4 : 2);
  if (bytes > limits::kMaxTileBytes)
    return emitError() << "!tile.tile of " << bytes << " bytes exceeds " << limits::kMaxTileBytes
                       << " (no register file or shared memory holds it)";
  return success();
}

int64_t TileType::getSizeInBytes() const {
  return getNumElements() * (getElementType().isF32() ? 4 : 2);
}

//===----------------------------------------------------------------------===//
// #tile.grid
//===----------------------------------------------------------------------===//

// Syntax: <N> | <argA[D]> | <ceildiv(argA[D], N)>
static ParseResult parseArgDim(AsmParser &parser, int64_t &arg, int64_t &dim) {
  StringRef keyword;
  llvm::SMLoc loc = parser.getCurrentLocation();
  if (parser.parseKeyword(&keyword))
    return failure();
  if (!keyword.consume_front("arg") || keyword.getAsInteger(10, arg) || arg < 0)
    return parser.emitError(loc, "expected 'arg<N>'");
  if (parser.parseLSquare() || parser.parseInteger(dim) || parser.parseRSquare())
    return failure();
  return success();
}

Attribute GridAttr::parse(AsmParser &parser, Type) {
  llvm::SMLoc loc = parser.getCurrentLocation();
  if (parser.parseLess())
    return {};
  int64_t arg = -1, dim = 0, divisor = 1, constant = 1;
  int64_t value;
  OptionalParseResult integer = parser.parseOptionalInteger(value);
  if (integer.has_value()) {
    if (failed(*integer))
      return {};
    if (value < 1) {
      parser.emitError(parser.getCurrentLocation(), "grid constant must be >= 1");
      return {};
    }
    constant = value;
  } else if (succeeded(parser.parseOptionalKeyword("ceildiv"))) {
    if (parser.parseLParen() || parseArgDim(parser, arg, dim) || parser.parseComma() ||
        parser.parseInteger(divisor) || parser.parseRParen())
      return {};
    if (divisor < 1) {
      parser.emitError(parser.getCurrentLocation(), "grid divisor must be >= 1");
      return {};
    }
  } else if (parseArgDim(parser, arg, dim)) {
    return {};
  }
  if (parser.parseGreater())
    return {};
  return GridAttr::getChecked([&] { return parser.emitError(loc); }, parser.getContext(), arg, dim,
                              divisor, constant);
}

void GridAttr::print(AsmPrinter &printer) const {
  printer << "<";
  if (isConstant())
    printer << getConstant();
  else if (getDivisor() == 1)
    printer << "arg" << getArgIndex() << "[" << getDimIndex() << "]";
  else
    printer << "ceildiv(arg" << getArgIndex() << "[" << getDimIndex() << "], " << getDivisor()
            << ")";
  printer << ">";
}

int64_t GridAttr::evaluate(ArrayRef<SmallVector<int64_t, 4>> argShapes) const {
  if (isConstant())
    return getConstant();
  // Out-of-range references are verifier errors (tile.kernel); 0 keeps a
  // caller that evaluates an unverified kernel from reading past the shapes.
  if (getArgIndex() >= static_cast<int64_t>(argShapes.size()) ||
      getDimIndex() >= static_cast<int64_t>(argShapes[getArgIndex()].size()))
    return 0;
  int64_t size = argShapes[getArgIndex()][getDimIndex()];
  return (size + getDivisor() - 1) / getDivisor();
}
