//===- WsKernelEmitter.h - warp-specialised kernels' CUDA ------*- C++ -*-===//
//
// A tile.kernel with strategy wgmma_ws_sm90 is printed as one call of a
// device library kernel body: attention_fwd_ws<Config> (an attention
// forward), attention_bwd_ws<Config> (an attention backward's main kernel,
// heads above 128) or ffn_fwd_ws<Config> (a fused FFN), not op by op: the TMA
// producer, the ring and the consumers' roles are one schedule
// (#tile.warp_specialized) the tile ops do not describe. Its manifest entry
// adds the tensor maps (q, k, v [, dout] or x, w1, w2).
//
//===----------------------------------------------------------------------===//
#ifndef FLASHC_COMPILER_WSKERNELEMITTER_H
#define FLASHC_COMPILER_WSKERNELEMITTER_H

#include "flashc/Dialect/Tile/IR/TileOps.h"
#include "flashc/runtime/Manifest.h"

#include "llvm/Support/raw_ostream.h"

#include <string>
#include <vector>

namespace flashc {

/// Whether `kernel` is printed by emitWsKernel (strategy wgmma_ws_sm90).
bool isWarpSpecialized(mlir::tile::KernelOp kernel);

/// The printed kernel and what its manifest entry adds.
struct WsKernel {
  /// The tensor maps (q, k, v or x, w1, w2; ABI: after the tensors, before
  /// scalars).
  std::vector<rt::TensorMapParam> tensorMaps;
  int64_t sharedBytes = 0;
  /// Its block: the consumer warpgroups and the producer warpgroup.
  int64_t threads = 0;
  /// The manifest's `launch programmatic`: the kernel waits for the one before it (grid_dependency.cuh) only
  /// once its prologue is done.
  bool programmatic = false;
};

/// Prints the config namespace and the `extern "C" __global__` kernel
/// `entry` to `out`. `argNames` are the manifest names of the kernel's
/// tensors, `cppNames` their C++ parameter names.
mlir::FailureOr<WsKernel> emitWsKernel(mlir::tile::KernelOp kernel,
                                               llvm::ArrayRef<std::string> argNames,
                                               llvm::ArrayRef<std::string> cppNames,
                                               llvm::StringRef entry, llvm::StringRef specComment,
                                               llvm::raw_ostream &out);

} // namespace flashc

#endif // FLASHC_COMPILER_WSKERNELEMITTER_H
