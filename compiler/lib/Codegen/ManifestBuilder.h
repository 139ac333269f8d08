//===- ManifestBuilder.h - the bundle manifest of a tile module -*- C++ -*-===//
//
// What the runtime needs to launch the emitted kernels, derived from the tile
// module: each kernel's parameters (names, dtypes, symbolic dims, direction,
// alignment), grid, block and shared memory, and each program's kernels,
// workspaces and `meta` lines. The CUDA text itself is CudaEmitter's.
//
//===----------------------------------------------------------------------===//
#ifndef FLASHC_COMPILER_CODEGEN_MANIFESTBUILDER_H
#define FLASHC_COMPILER_CODEGEN_MANIFESTBUILDER_H

#include "flashc/Dialect/Tile/IR/TileOps.h"
#include "flashc/runtime/Manifest.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringMap.h"

#include <memory>
#include <string>
#include <vector>

namespace flashc {

/// A kernel parameter as the manifest names it: its program tensor's name and
/// symbolic dims.
struct ArgInfo {
  std::string name;
  llvm::SmallVector<rt::Dim> dims;
};

/// Names and symbolic dims of a program's tensors (arguments and workspaces).
class ProgramScope {
public:
  explicit ProgramScope(mlir::func::FuncOp func) : func(func) {}
  mlir::LogicalResult build();
  /// A workspace size (tile.dim, arith constant / addi / muli / ceildivsi of
  /// them) as a manifest expression over the arguments' size symbols.
  std::optional<std::string> sizeExpression(mlir::Value size);

  mlir::func::FuncOp func;
  llvm::DenseMap<mlir::Value, ArgInfo> infos;
  llvm::SmallVector<mlir::tile::AllocTensorOp> scratch;
};

/// The programs of `module` (functions marked tile.program) and, for every
/// kernel they launch, its parameters named after the first launch's
/// arguments. Errors (at the op) for names the manifest cannot take and for a
/// tensor passed twice to one kernel.
mlir::LogicalResult collectPrograms(mlir::ModuleOp module,
                                    llvm::StringMap<std::vector<ArgInfo>> &kernelArgs,
                                    llvm::SmallVector<std::unique_ptr<ProgramScope>> &programs);

/// The parameters of `kernel`: those collectPrograms found, or positional
/// names (arg0, arg0_d1, ...) for a kernel no program launches.
std::vector<ArgInfo> kernelParameters(mlir::tile::KernelOp kernel,
                                      const llvm::StringMap<std::vector<ArgInfo>> &kernelArgs);

/// The manifest entry of `kernel` launched as `entry` with `threads` threads
/// and `sharedBytes` of dynamic shared memory (the emitter's layout).
mlir::FailureOr<rt::KernelSpec> buildKernelSpec(mlir::tile::KernelOp kernel,
                                                llvm::ArrayRef<ArgInfo> args,
                                                const std::string &entry, int64_t threads,
                                                int64_t sharedBytes);

/// Appends one manifest program per scope, with its kernels, workspaces and
/// `meta` lines, and makes each of its tile.require_extent a `requires` line
/// (with the op's message) of the kernels in `manifest` that it launches with
/// the table; an error (at the op) when no such kernel binds both sizes.
mlir::LogicalResult appendPrograms(mlir::ModuleOp module,
                                   llvm::ArrayRef<std::unique_ptr<ProgramScope>> programs,
                                   rt::Manifest &manifest);

} // namespace flashc

#endif // FLASHC_COMPILER_CODEGEN_MANIFESTBUILDER_H
