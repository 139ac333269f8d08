//===- FusedOpCheck.h - a fusion's op checked before it replaces the graph -*- C++ -*-===//
//
// Internal to compiler/lib. A fusion matches a graph by its ops' sizes, which agree where one is dynamic; the fused
// op's verifier is stricter (a size static in one tensor and dynamic in another is refused: each tensor is checked
// at launch on its own). A fusion verifies the op it built and, where it fails, erases it and leaves the graph, with
// a warning naming the verifier's reason, instead of handing the pipeline an op that fails verification.
//
//===----------------------------------------------------------------------===//
#ifndef FLASHC_COMPILER_LIB_FUSEDOPCHECK_H
#define FLASHC_COMPILER_LIB_FUSEDOPCHECK_H

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Operation.h"
#include "mlir/IR/Verifier.h"
#include "llvm/ADT/SmallPtrSet.h"

#include <string>

namespace flashc {

/// Verifies `fused`; on failure `whyNot` holds the verifier's first message without its "'flash.x' op " prefix.
/// The handler claims only diagnostics located at the fused op or an op inside its regions: the fusions may run on
/// several functions at once (nested under func.func), and another thread's warning must reach the user.
inline mlir::LogicalResult verifyFused(mlir::Operation *fused, std::string &whyNot) {
  llvm::SmallPtrSet<const void *, 8> ours;
  fused->walk([&](mlir::Operation *op) { ours.insert(op->getLoc().getAsOpaquePointer()); });
  std::string message;
  mlir::ScopedDiagnosticHandler capture(fused->getContext(), [&](mlir::Diagnostic &diagnostic) {
    if (!ours.contains(diagnostic.getLocation().getAsOpaquePointer()))
      return mlir::failure();
    if (message.empty())
      message = diagnostic.str();
    return mlir::success();
  });
  if (succeeded(mlir::verify(fused)))
    return mlir::success();
  std::string prefix = "'" + fused->getName().getStringRef().str() + "' op ";
  whyNot = message.rfind(prefix, 0) == 0 ? message.substr(prefix.size()) : message;
  return mlir::failure();
}

} // namespace flashc

#endif // FLASHC_COMPILER_LIB_FUSEDOPCHECK_H
