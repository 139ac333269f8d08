//===- TileDialect.td - the tile kernel dialect ----------*- tablegen -*-===//
#ifndef FLASHC_DIALECT_TILE_IR_TILEDIALECT_TD
#define FLASHC_DIALECT_TILE_IR_TILEDIALECT_TD

include "mlir/IR/OpBase.td"

def Tile_Dialect : Dialect {
  let name = "tile";
  let cppNamespace = "::mlir::tile";
  let summary = "Kernel-level programs: what one thread block does";
  let description = [{
    A `tile.kernel` is the program of one thread block of a grid. Global
    memory is reached through `!tile.tensor` arguments (rank <= 4, dynamic
    dimensions allowed); work happens on `!tile.tile` values of a fixed shape
    living in shared memory or in registers (register tiles are block-level
    values distributed over the warps by rows). Every op corresponds to one
    device-library primitive; loops and scalar math are upstream `scf` and
    `arith`. Programs are `func.func`s marked `tile.program` that allocate
    workspaces and launch kernels in order. See docs/tile-dialect.md.
  }];
  let useDefaultTypePrinterParser = 1;
  let useDefaultAttributePrinterParser = 1;
  let dependentDialects = ["::mlir::arith::ArithDialect", "::mlir::scf::SCFDialect",
                           "::mlir::func::FuncDialect", "::mlir::math::MathDialect",
                           "::mlir::tensor::TensorDialect"];
}

#endif // FLASHC_DIALECT_TILE_IR_TILEDIALECT_TD
