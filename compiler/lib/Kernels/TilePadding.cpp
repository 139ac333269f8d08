//===- TilePadding.cpp - tile widths padded to what the layouts need ------===//
#include "flashc/Compiler/TilePadding.h"

#include "llvm/Support/MathExtras.h"

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
  if (width < 1)
    return width;
  return static_cast<int64_t>(
      llvm::alignTo(static_cast<uint64_t>(width), tileColumnMultiple(element, strategy)));
}

} // namespace flashc
