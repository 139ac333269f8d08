//===- TileTypes.td - tile types -------------------------*- tablegen -*-===//
#ifndef FLASHC_DIALECT_TILE_IR_TILETYPES_TD
#define FLASHC_DIALECT_TILE_IR_TILETYPES_TD

include "flashc/Dialect/Tile/IR/TileAttrs.td"
include "mlir/IR/AttrTypeBase.td"

def Tile_TensorType : TypeDef<Tile_Dialect, "GlobalTensor"> {
  let mnemonic = "tensor";
  let summary = "a tensor in global memory (kernel argument)";
  let description = [{
    `!tile.tensor<?x16x?x128xbf16>`: rank 1 to 4, `?` for dimensions known at
    launch time only, element type bf16, f16, f32 or i32 (index data: a mask
    modifier's operands, block-class tables). Strided: the runtime
    passes shape and element strides (flashc::TensorArg).
  }];
  let parameters = (ins ArrayRefParameter<"int64_t">:$shape, "::mlir::Type":$elementType);
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    int64_t getRank() const { return getShape().size(); }
  }];
}

def Tile_TileType : TypeDef<Tile_Dialect, "Tile"> {
  let mnemonic = "tile";
  let summary = "a block-level tile in shared memory or registers";
  let description = [{
    `!tile.tile<128x64xbf16, shared>`, `!tile.tile<128x64xf32, register>`,
    `!tile.tile<128xf32, register>` (a row vector: one value per tile row,
    held by the warp that owns the row), `!tile.tile<64xf32, shared>` (a
    column vector: one value per tile column, in shared memory, read by
    column index). Static shape; rank 1 or 2.
  }];
  let parameters = (ins ArrayRefParameter<"int64_t">:$shape, "::mlir::Type":$elementType,
                        "::mlir::tile::MemorySpace":$space);
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    int64_t getRank() const { return getShape().size(); }
    bool isShared() const { return getSpace() == ::mlir::tile::MemorySpace::Shared; }
    bool isRegister() const { return getSpace() == ::mlir::tile::MemorySpace::Register; }
    bool isRowVector() const { return getRank() == 1 && isRegister(); }
    bool isColumnVector() const { return getRank() == 1 && isShared(); }
    int64_t getRows() const { return getShape()[0]; }
    int64_t getCols() const { return getRank() == 2 ? getShape()[1] : 1; }
    int64_t getNumElements() const { return getRows() * getCols(); }
    /// Bytes the tile occupies (bf16/f16: 2, f32: 4 per element).
    int64_t getSizeInBytes() const;
  }];
}

#endif // FLASHC_DIALECT_TILE_IR_TILETYPES_TD
