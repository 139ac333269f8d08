//===- FlashDialect.td - the flash graph dialect ---------*- tablegen -*-===//
#ifndef FLASHC_DIALECT_FLASH_IR_FLASHDIALECT_TD
#define FLASHC_DIALECT_FLASH_IR_FLASHDIALECT_TD

include "mlir/IR/OpBase.td"

def Flash_Dialect : Dialect {
  let name = "flash";
  let cppNamespace = "::mlir::flash";
  let summary = "Graph-level attention and FFN operations on ranked tensors";
  let description = [{
    The `flash` dialect is what a flashc user writes: matmul, scale, mask,
    softmax, activations and elementwise ops with value semantics on ranked
    tensors (element types bf16, f16, f32; batch and sequence dimensions may be
    dynamic), plus the fused ops (`flash.attention`, `flash.ffn`, `flash.moe`,
    the decode, append and packed-sequence ops) that the fusion passes produce
    or a user writes, and that later stages tile into kernels.

    Sizes: a graph op's sizes agree where both are known (`?` matches any).
    A fused op's sizes of one symbol (B, Sq, Sk, d, ...) are static in every
    tensor that has it or dynamic in all: each tensor is checked on its own at
    launch, so a static batch of 1 in one tensor beside a dynamic one in
    another would let a batch of 2 read past the first. Messages print a
    size the op leaves free as `*`. A fusion whose op breaks this leaves the
    graph, with a warning quoting the reason.
  }];
  let useDefaultAttributePrinterParser = 1;
  // mask_mod regions are written in arith.
  let dependentDialects = ["::mlir::arith::ArithDialect", "::mlir::math::MathDialect",
                           "::mlir::tensor::TensorDialect"];
  let extraClassDeclaration = [{
    // Defined in FlashAttrs.cpp, where the attribute storage types are complete.
    void registerAttributes();
  }];
}

#endif // FLASHC_DIALECT_FLASH_IR_FLASHDIALECT_TD
