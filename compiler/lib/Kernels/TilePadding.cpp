//===- TilePadding.cpp - tile widths padded to what the layouts need ------===//
#include "flashc/Compiler/TilePadding.h"

#include "llvm/Support/MathExtras.h"

#include <limits>

using namespace mlir;
using namespace mlir::tile;

namespace flashc {

int64_t tileColumnMultiple(Type element, Strategy strategy) {
  if (element.isF32())
    return 16;
  // The device library's SmemTile swizzles 64-byte row units (32 elements of
  // 16 bits); wgmma reads SmemPanelTile's 128-byte panels (64 elements).
  return strategy == Strategy::MmaSyncSm80 ? 32 : 64;
}

int64_t paddedTileWidth(int64_t width, Type element, Strategy strategy) {
  int64_t multiple = tileColumnMultiple(element, strategy);
  // Widths come from the IR (estimates of hand-written kernels too) and may be
  // absurd: those stay as they are for the range checks to report.
  if (width < 1 || width > std::numeric_limits<int64_t>::max() - multiple)
    return width;
  return static_cast<int64_t>(llvm::alignTo(static_cast<uint64_t>(width), multiple));
}

} // namespace flashc
