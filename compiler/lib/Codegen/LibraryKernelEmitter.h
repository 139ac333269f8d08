//===- LibraryKernelEmitter.h - device-library elementwise kernels -*- C++ -*-===//
//
// A 16-bit ffn_activation_grad tile.kernel (the FFN backward's activation,
// elementwise after the GEMM dh = dy·W2ᵀ) is printed as one call of the device
// library's ffn_activation_grad<Config>: vectorised 16-byte chunks, every load
// of a thread issued before its first result. Its tile ops (loads through
// shared memory, 4-byte fragment stores) describe the same math and run on
// the CPU executor; printed op by op it measured half of eager PyTorch's
// bandwidth on the H200 (bench/results/2026-12-01-h200-session14.md).
//
//===----------------------------------------------------------------------===//
#ifndef FLASHC_COMPILER_LIBRARYKERNELEMITTER_H
#define FLASHC_COMPILER_LIBRARYKERNELEMITTER_H

#include "WsKernelEmitter.h"

namespace flashc {

/// Whether `kernel` is printed by emitLibraryKernel.
bool isLibraryKernel(mlir::tile::KernelOp kernel);

/// Prints the config namespace and the `extern "C" __global__` kernel `entry`
/// to `out` (tensor maps and shared memory for the decode split kernel only).
mlir::FailureOr<WsKernel> emitLibraryKernel(mlir::tile::KernelOp kernel,
                                            llvm::ArrayRef<std::string> argNames,
                                            llvm::ArrayRef<std::string> cppNames,
                                            llvm::StringRef entry, llvm::StringRef specComment,
                                            llvm::raw_ostream &out);

} // namespace flashc

#endif // FLASHC_COMPILER_LIBRARYKERNELEMITTER_H
