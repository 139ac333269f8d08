//===- ScoreModEmitter.h - tile.score_mod -> a C++ struct -------*- C++ -*-===//
//
// Internal to the CUDA emitters: each score modifier a kernel uses is printed
// before it as a struct whose one function returns the modified score and
// writes its derivative with respect to the score (forward-mode: each f32
// value is printed with its derivative; a derivative known to be 0 is left
// out), the form the device library's score_mod.cuh applies to score tiles:
//
//   // tile.score_mod @score_mod_9a0b: s + t0[h] * float(k - q)
//   struct score_mod_9a0b {
//     static constexpr int kTensors = 1;
//     static FLASHC_MASK_FN float score(const flashc::device::MaskEnv& env, float s, long long b, long long h,
//                                       long long q, long long k, float& ds) {
//       using D = flashc::device::ExactIndex;
//       const float v0 = flashc::device::read_f32(env.tensor[0], h);
//       const auto v1 = D::sub(k, q);
//       const float v2 = static_cast<float>(v1);
//       const float v3 = v0 * v2;
//       const float v4 = s + v3;
//       ds = 1.f;
//       return v4;
//     }
//   };
//
//===----------------------------------------------------------------------===//
#ifndef FLASHC_COMPILER_CODEGEN_SCOREMODEMITTER_H
#define FLASHC_COMPILER_CODEGEN_SCOREMODEMITTER_H

#include "flashc/Dialect/Tile/IR/TileOps.h"

#include "llvm/Support/raw_ostream.h"

#include <string>

namespace flashc {

/// The C++ type name of score modifier `symbol`.
std::string scoreModTypeName(mlir::FlatSymbolRefAttr symbol);

/// Prints every score modifier `kernel` names (its #tile.attention spec's and
/// its tile.score / tile.score_grad ops'), each once and include-guarded.
/// Errors name a modifier the module lacks.
mlir::LogicalResult printScoreMods(mlir::tile::KernelOp kernel, llvm::raw_ostream &out);

} // namespace flashc

#endif // FLASHC_COMPILER_CODEGEN_SCOREMODEMITTER_H
