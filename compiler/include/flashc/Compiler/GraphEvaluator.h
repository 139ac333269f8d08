//===- GraphEvaluator.h - float64 reference semantics of flash ops -*- C++ -*-===//
//
// Evaluates a func.func of flash graph ops on host tensors in float64: the
// reference meaning of every flash op, fused (attention, ffn) or not. Used to
// check that fusion preserves values (flash-eval --check-pipeline) and as the
// float64 reference that tile programs and GPU kernels are compared against.
//
//===----------------------------------------------------------------------===//
#ifndef FLASHC_COMPILER_GRAPHEVALUATOR_H
#define FLASHC_COMPILER_GRAPHEVALUATOR_H

#include "flashc/Dialect/Flash/IR/FlashDialect.h"
#include "flashc/Dialect/Flash/IR/FlashOps.h"
#include "flashc/reference/activations.h"
#include "flashc/reference/attention.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Support/LogicalResult.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"

#include <cstdint>
#include <string>
#include <optional>
#include <vector>

namespace mlir::flash {

/// A dense row-major float64 tensor.
struct ReferenceTensor {
  std::vector<int64_t> shape;
  std::vector<double> data;

  ReferenceTensor() = default;
  explicit ReferenceTensor(std::vector<int64_t> shape, double fill = 0.0);
  int64_t numElements() const;
};

/// Bounds of the float64 host tools (flash-eval, flash-run-tile): every dynamic dimension takes one size, at most
/// kMaxEvaluatedDynamicSize, and an argument holds at most kMaxEvaluatedElements values (2 GiB of float64). Past
/// them a spec's shapes exhaust the host's memory (an abort) instead of failing with a message.
constexpr int64_t kMaxEvaluatedDynamicSize = 4096;
constexpr int64_t kMaxEvaluatedElements = int64_t(1) << 28;

/// `shape` with each dynamic dimension `dynamicSize`; failure, with why in `error`, when it holds more than
/// kMaxEvaluatedElements values.
FailureOr<std::vector<int64_t>> evaluatedShape(ArrayRef<int64_t> shape, int64_t dynamicSize, std::string &error);

/// Runs `function` (one block of flash ops, tensor.cast and func.return) on
/// `arguments`; an i32 argument (a key offset) is given as a rank-0 tensor
/// holding its value (exact in float64). On a problem (unsupported op, sizes that disagree at run
/// time) emits an error on the offending op and returns failure.
FailureOr<SmallVector<ReferenceTensor>>
evaluateGraph(func::FuncOp function, ArrayRef<ReferenceTensor> arguments);

/// The reference library's window for a flash mask (null: no mask); the same
/// rule as MaskAttr::isKeyVisible.
flashc::reference::AttentionWindow referenceWindow(MaskAttr mask);

/// The reference library's activation of the same name.
flashc::reference::Activation referenceActivation(Activation activation);

/// flash.attention on q [B,Hq,Sq,D], k [B,Hkv,Sk,D], v [B,Hkv,Sk,Dv]: returns
/// the output [B,Hq,Sq,Dv] and writes lse [B,Hq,Sq] (-inf for a row that sees
/// no key, whose output is 0). Sizes must already be consistent. The math is
/// flashc::reference::attentionForward. maskMod: a mask_mod region (an index
/// function of batch, head, query and key rows) hiding more keys, reading
/// `maskTensors` (its operands' values, which must outlive the call).
ReferenceTensor referenceAttention(const ReferenceTensor &query,
                                   const ReferenceTensor &key,
                                   const ReferenceTensor &value, double scale,
                                   double softcap, MaskAttr mask,
                                   ReferenceTensor &lse,
                                   std::optional<int64_t> keyOffset = std::nullopt,
                                   mlir::Region *maskMod = nullptr,
                                   llvm::ArrayRef<const ReferenceTensor *> maskTensors = {},
                                   mlir::Region *scoreMod = nullptr,
                                   llvm::ArrayRef<const ReferenceTensor *> scoreTensors = {});

/// A mask_mod region as the reference library's predicate (b, h, i, j),
/// reading `tensors` (kept by pointer: they must outlive the predicate).
std::function<bool(int64_t, int64_t, int64_t, int64_t)>
maskModPredicate(mlir::Region *maskMod, llvm::ArrayRef<const ReferenceTensor *> tensors);

/// flashc::reference's parameters of flash.attention `op` (scale, softcap,
/// window, its mask_mod evaluated by flashc::evaluateIndexPredicate on
/// `maskTensors`, the values of its mask operands).
flashc::reference::AttentionParams referenceParams(AttentionOp op,
                                                   llvm::ArrayRef<const ReferenceTensor *> maskTensors = {},
                                                   llvm::ArrayRef<const ReferenceTensor *> scoreTensors = {});

/// A score_mod region as the reference library's score function (s, b, h, i,
/// j) -> (value, d value / ds), reading `tensors` (kept by pointer).
std::function<std::pair<double, double>(double, int64_t, int64_t, int64_t, int64_t)>
scoreModFunction(mlir::Region *scoreMod, llvm::ArrayRef<const ReferenceTensor *> tensors);

} // namespace mlir::flash

#endif // FLASHC_COMPILER_GRAPHEVALUATOR_H
