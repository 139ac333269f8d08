//===- TilePadding.h - tile widths padded to what the layouts need -*- C++ -*-===//
//
// A kernel whose tensors are `width` columns wide (a head dim, an FFN output
// width) computes on tiles of paddedTileWidth(width) columns: the tile types
// carry the padded width, the tensors and every load/store `limit` the true
// one. Loads zero-fill the padding (tile.load's limit), stores skip it, and a
// zero column adds nothing to a product, a row dot or a softmax input (the
// padding is along a contraction or an output column, never along the keys),
// so padded kernels compute exactly what unpadded ones would.
//
//===----------------------------------------------------------------------===//
#ifndef FLASHC_COMPILER_TILEPADDING_H
#define FLASHC_COMPILER_TILEPADDING_H

#include "flashc/Dialect/Tile/IR/TileOps.h"

#include "mlir/IR/Types.h"

namespace flashc {

/// The column multiple a tile of `element` needs under `strategy`:
///   * 16-bit shared tiles (mma.sync): whole 64-byte swizzle rows, 32 columns;
///   * 16-bit shared tiles read by wgmma: whole 128-byte swizzled panels, 64;
///   * f32 tiles: whole 16-column mma fragments (registers), which also makes
///     f32 shared rows whole 16-byte units.
/// Register tiles need multiples of 16 columns, which all of these are.
int64_t tileColumnMultiple(mlir::Type element, mlir::tile::Strategy strategy);

/// `width` rounded up to tileColumnMultiple (width itself when it already is
/// one; widths < 1 or near INT64_MAX are returned unchanged for the range
/// checks to report).
int64_t paddedTileWidth(int64_t width, mlir::Type element, mlir::tile::Strategy strategy);

} // namespace flashc

#endif // FLASHC_COMPILER_TILEPADDING_H
