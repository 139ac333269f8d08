//===- TileExecutor.h - run tile programs on the CPU ----------*- C++ -*-===//
//
// Interprets tile IR op by op (tile.*, scf.for/if/yield, arith), one thread
// block at a time over the whole grid, with the exact semantics written in
// docs/tile-dialect.md: bf16/f16 rounding wherever a tile or tensor type says
// so, f32 everywhere else. It exists so that CI checks the numerics of tiling,
// online softmax and backward with no GPU. Errors (out-of-range accesses,
// unsupported ops, bad arguments) are reported, never crash.
//
//===----------------------------------------------------------------------===//
#ifndef FLASHC_COMPILER_TILEEXECUTOR_H
#define FLASHC_COMPILER_TILEEXECUTOR_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Support/LogicalResult.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace flashc {

/// Element types of global tensors and tiles.
enum class ElementKind { F32, BF16, F16, I32 };

/// Rounds `value` to the nearest representable value of `kind` (ties to even).
float roundToElement(float value, ElementKind kind);

/// A dense row-major tensor in host memory. Floating values are stored as
/// float and are always representable in `kind`; i32 ones (a mask modifier's
/// tensors, block-class tables) exactly, in `ints`.
struct HostTensor {
  std::vector<int64_t> shape;
  ElementKind kind = ElementKind::F32;
  std::vector<float> data;    // kind F32, BF16, F16
  std::vector<int32_t> ints;  // kind I32

  HostTensor() = default;
  /// `fill` for floating kinds; i32 tensors start at `intFill`.
  HostTensor(std::vector<int64_t> shape, ElementKind kind, float fill = 0.0f, int32_t intFill = 0);
  int64_t numElements() const;
  /// The number of values held (data or ints, by kind).
  int64_t numValues() const { return kind == ElementKind::I32 ? int64_t(ints.size()) : int64_t(data.size()); }
};

/// Executes the tile programs (func.func with `tile.program`) and kernels of
/// one module. The module must outlive the executor.
class TileExecutor {
public:
  explicit TileExecutor(mlir::ModuleOp module) : module(module) {}

  /// Runs program `name`; `args` bind its tensor arguments in order (shapes
  /// must match the static dimensions; dynamic ones are taken from the
  /// tensors), `scalars` its i32 arguments (which follow the tensors).
  /// On failure returns failure() and sets `error()`.
  mlir::LogicalResult runProgram(llvm::StringRef name, llvm::ArrayRef<HostTensor *> args,
                                 llvm::ArrayRef<int64_t> scalars = {});

  /// Runs every block of kernel `name` over its grid.
  mlir::LogicalResult runKernel(llvm::StringRef name, llvm::ArrayRef<HostTensor *> args,
                                llvm::ArrayRef<int64_t> scalars = {});

  const std::string &error() const { return errorMessage; }

  /// Number of blocks executed so far (all kernels).
  int64_t blocksExecuted() const { return blockCount; }

private:
  mlir::ModuleOp module;
  std::string errorMessage;
  int64_t blockCount = 0;
  friend class TileInterpreter;
};

} // namespace flashc

#endif // FLASHC_COMPILER_TILEEXECUTOR_H
