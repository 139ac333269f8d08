//===- MaskModEmitter.h - tile.mask_mod -> a C++ struct ---------*- C++ -*-===//
//
// Internal to the CUDA emitters: each mask modifier a kernel uses is printed
// before it as a struct with one function template over a value domain, the
// form the device library's mask_mod.cuh evaluates exactly (one query and key)
// and over whole blocks (interval arithmetic):
//
//   // tile.mask_mod @mask_mod_5f1c: visible(q, k) = (k < 20) || (k <= q)
//   struct mask_mod_5f1c {
//     template <class D>
//     static FLASHC_MASK_FN typename D::Bool visible(typename D::Int q, typename D::Int k) {
//       const auto v0 = D::lt(k, D::constant(20));
//       const auto v1 = D::le(k, q);
//       return D::or_(v0, v1);
//     }
//   };
//
//===----------------------------------------------------------------------===//
#ifndef FLASHC_COMPILER_CODEGEN_MASKMODEMITTER_H
#define FLASHC_COMPILER_CODEGEN_MASKMODEMITTER_H

#include "flashc/Dialect/Tile/IR/TileOps.h"

#include "llvm/Support/raw_ostream.h"

#include <string>

namespace flashc {

/// How the device library's domains (mask_mod.cuh's ExactIndex, IndexRange)
/// spell an integer op of an index function: `D::function(a, b)`, and the
/// formula comments' infix operator.
struct IndexOpSpelling {
  const char *function;
  const char *infix; // "a OP b", or a function-style name when `call`
  bool call = false;
};
/// Failure for an op that is not a binary integer op of an index function
/// (constants, casts, reads and select are spelled by their printers).
mlir::FailureOr<IndexOpSpelling> indexOpSpelling(mlir::Operation *op);

/// The C++ type name of mask modifier `symbol`.
std::string maskModTypeName(mlir::FlatSymbolRefAttr symbol);

/// Prints every mask modifier `kernel` names (its #tile.attention spec's and
/// its tile.mask ops'), each once and include-guarded (a kernels.cu holding
/// several kernels that share one compiles as one unit too). Errors name a
/// modifier the module lacks.
mlir::LogicalResult printMaskMods(mlir::tile::KernelOp kernel, llvm::raw_ostream &out);

} // namespace flashc

#endif // FLASHC_COMPILER_CODEGEN_MASKMODEMITTER_H
