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
    dynamic), plus the fused `flash.attention` and `flash.ffn` ops that the
    fusion passes produce and that later stages tile into kernels.
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
