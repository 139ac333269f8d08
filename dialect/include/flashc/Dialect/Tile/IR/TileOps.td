//===- TileOps.td - tile kernel operations ---------------*- tablegen -*-===//
//
// One op = one device-library primitive. docs/tile-dialect.md holds the
// exact semantics (with the math) of every op; keep both in step.
//
//===----------------------------------------------------------------------===//
#ifndef FLASHC_DIALECT_TILE_IR_TILEOPS_TD
#define FLASHC_DIALECT_TILE_IR_TILEOPS_TD

include "flashc/Dialect/Tile/IR/TileTypes.td"
include "mlir/Interfaces/FunctionInterfaces.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/Interfaces/ControlFlowInterfaces.td"
include "mlir/IR/SymbolInterfaces.td"
include "mlir/IR/OpAsmInterface.td"

def Tile_Tensor : Type<CPred<"::llvm::isa<::mlir::tile::GlobalTensorType>($_self)">,
                       "global tensor", "::mlir::tile::GlobalTensorType">;
// Kernel and launch arguments: tensors, then i32 scalars.
def Tile_KernelArg : AnyTypeOf<[Tile_Tensor, I32]>;
def Tile_Tile : Type<CPred<"::llvm::isa<::mlir::tile::TileType>($_self)">,
                     "tile", "::mlir::tile::TileType">;

class Tile_Op<string mnemonic, list<Trait> traits = []>
    : Op<Tile_Dialect, mnemonic, traits>;

//===----------------------------------------------------------------------===//
// Kernels and programs
//===----------------------------------------------------------------------===//

def Tile_KernelOp : Tile_Op<"kernel", [FunctionOpInterface, IsolatedFromAbove, Symbol]> {
  let summary = "the program of one thread block";
  let description = [{
    ```mlir
    tile.kernel @attention_fwd(%q: !tile.tensor<?x4x?x64xf32>, ...)
        attributes {grid = [#tile.grid<ceildiv(arg0[2], 64)>, #tile.grid<arg0[1]>,
                            #tile.grid<arg0[0]>],
                    strategy = #tile.strategy<mma_sync_sm80>,
                    block_m = 64, block_n = 64, warps = 4, stages = 2} { ... tile.return }
    ```
    Arguments are !tile.tensor's, then i32 scalars (an attention's run-time
    key offset): the ABI's order, tensors before scalars.
    `grid` gives the size of grid axes x, y, z; `tile.program_id` reads the
    block's coordinate. `smem_bytes` is set by flash-plan-memory. `spec`
    names what the kernel computes (#tile.attention / #tile.gemm). `tuning`
    (set by flash-plan-memory) names the tuning-table entry the plan came from,
    `{entry = "<file>:<line>", key = "<arch> <kind> <dtype> <shape> <mask>"}`,
    plus the entry's schedule knobs for later passes: `ping_pong` (bool,
    flash-warp-specialize), `group` (row blocks a group, flash-order-blocks)
    and `persistent` (bool, flash-order-blocks). `run_if` (#tile.run_if): the
    sizes the kernel runs at, when a plan is chosen by a run-time size.
  }];
  let arguments = (ins
    SymbolNameAttr:$sym_name,
    TypeAttrOf<FunctionType>:$function_type,
    OptionalAttr<DictArrayAttr>:$arg_attrs,
    OptionalAttr<DictArrayAttr>:$res_attrs,
    TypedArrayAttrBase<Tile_GridAttr, "grid axes">:$grid,
    Tile_StrategyAttr:$strategy,
    I64Attr:$block_m,
    I64Attr:$block_n,
    I64Attr:$warps,
    I64Attr:$stages,
    OptionalAttr<I64Attr>:$smem_bytes,
    OptionalAttr<AnyAttr>:$spec,
    OptionalAttr<Tile_WarpSpecializedAttr>:$schedule,
    OptionalAttr<Tile_GridOrderAttr>:$grid_order,
    OptionalAttr<DictionaryAttr>:$tuning,
    OptionalAttr<Tile_RunIfAttr>:$run_if);
  let regions = (region SizedRegion<1>:$body);
  let hasCustomAssemblyFormat = 1;
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    ::llvm::ArrayRef<::mlir::Type> getArgumentTypes() { return getFunctionType().getInputs(); }
    ::llvm::ArrayRef<::mlir::Type> getResultTypes() { return getFunctionType().getResults(); }
    ::mlir::Region *getCallableRegion() { return &getBody(); }
  }];
}

def Tile_ReturnOp : Tile_Op<"return", [Pure, HasParent<"KernelOp">, Terminator, ReturnLike]> {
  let summary = "end of a kernel";
  let assemblyFormat = "attr-dict";
}

def Tile_MaskModOp : Tile_Op<"mask_mod", [IsolatedFromAbove, Symbol]> {
  let summary = "a mask modifier: which keys a query sees, as an index function";
  let description = [{
    The body of a flash.attention `mask_mod` region, moved to the module so
    that every kernel of the attention (forward and backward) names it: a
    `#tile.attention` spec's `mask_mod` and each `tile.mask` refer to it by
    symbol. Arguments: the batch b, the query head h, the query row q and the
    key row k (index), then one tensor per operand the body reads (i32, read
    by tensor.extract; a position outside reads 0, but a tensor read at an
    index argument itself holds that index's range: tile.require_extent
    checks it before the launches); the body is an index
    function (flashc/Dialect/Common/IndexFunction.h) yielding an i1, true
    when key k is visible from query q. (flash-tile gives a two-index
    flash.attention region unused b and h arguments.)
    ```mlir
    tile.mask_mod @attention_mask_mod_5f1c2a9e {
    ^bb0(%b: index, %h: index, %q: index, %k: index):
      %c = arith.cmpi sle, %k, %q : index
      tile.yield %c : i1
    }
    ```
  }];
  let arguments = (ins SymbolNameAttr:$sym_name);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = "$sym_name attr-dict-with-keyword $body";
  let hasVerifier = 1;
}

def Tile_ScoreModOp : Tile_Op<"score_mod", [IsolatedFromAbove, Symbol]> {
  let summary = "a score modifier: the score the softmax sees, as an f32 function of the score";
  let description = [{
    The body of a flash.attention `score_mod` region, moved to the module
    like a tile.mask_mod: a `#tile.attention` spec's `score_mod`, each
    `tile.score` and `tile.score_grad` name it. Arguments: the scaled score s
    (f32), the batch b, the query head h, the query row q and the key row k
    (index), then one tensor per operand the body reads (f32 or i32); the
    body is a score function (flashc/Dialect/Common/ScoreFunction.h)
    yielding the f32 the softmax sees. (flash-tile gives a two-index region
    unused b and h arguments.)
    ```mlir
    tile.score_mod @score_mod_9a0b {
    ^bb0(%s: f32, %b: index, %h: index, %q: index, %k: index, %slopes: tensor<8xf32>):
      ...
      tile.yield %r : f32
    }
    ```
  }];
  let arguments = (ins SymbolNameAttr:$sym_name);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = "$sym_name attr-dict-with-keyword $body";
  let hasVerifier = 1;
}

def Tile_YieldOp : Tile_Op<"yield", [Pure, ParentOneOf<["MaskModOp", "ScoreModOp"]>, Terminator, ReturnLike]> {
  let summary = "the value of a tile.mask_mod (i1: the key is visible) or a tile.score_mod (f32: the score)";
  let arguments = (ins AnyTypeOf<[I1, F32]>:$value);
  let assemblyFormat = "$value attr-dict `:` type($value)";
}

def Tile_LaunchOp : Tile_Op<"launch", [DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "launch a tile.kernel over its grid (in a tile.program func)";
  let description = [{
    `tile.launch @k(%a, %b) : !tile.tensor<...>, !tile.tensor<...>` runs every
    block of kernel @k's grid; launches of one program run in order.
  }];
  let arguments = (ins FlatSymbolRefAttr:$kernel, Variadic<Tile_KernelArg>:$args);
  let assemblyFormat = "$kernel `(` $args `)` attr-dict `:` type($args)";
}

def Tile_RequireExtentOp : Tile_Op<"require_extent"> {
  let summary = "a modifier's table holds the range of the index it is read at (checked before the launches)";
  let description = [{
    ```mlir
    tile.require_extent %ids[0] covers %q[2] for mask_mod at query : !tile.tensor<?xi32>, !tile.tensor<?x16x?x64xbf16>
    ```
    In a tile.program: dimension `table_dim` of %table, a tensor a modifier
    reads, must be at least dimension `range_dim` of %range, the range of the
    modifier's index `index` (batch: q's dim 0, head: q's dim 1, query: q's
    dim 2, key: k's dim 2). The modifier reads %table at that index itself
    along that dimension (ids[q], slopes[h]); the kernels read a position
    past its end as 0 (IndexFunction.h), which would be a silently wrong mask
    or score. flash-tile and flash-generate-backward put one before an
    attention's launches for each such read whose sizes are not both static
    (flash.attention's verifier refuses a static pair that fails). The
    manifest makes it a `requires` line with its message on every kernel of
    the program that takes %table and binds both sizes (an error if none
    does); the CPU executor checks it where it stands. Both say it as `shortfallMessage` does.
  }];
  let arguments = (ins Tile_Tensor:$table, I64Attr:$table_dim, Tile_Tensor:$range, I64Attr:$range_dim,
                       Tile_ModifierKind:$modifier, Tile_ModifierIndexKind:$index);
  let assemblyFormat = [{
    $table `[` $table_dim `]` `covers` $range `[` $range_dim `]` `for` $modifier `at` $index attr-dict
    `:` type($table) `,` type($range)
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// What the caller is told when the table is shorter: "argument 'mask_t0' dim 0 is <size>, but the mask
    /// modifier reads it at the query index, which ranges over Sq = <range>", `size` and `range` as given (the
    /// executor's numbers, the manifest's placeholders).
    std::string shortfallMessage(::llvm::StringRef tableName, ::llvm::StringRef size, ::llvm::StringRef range);
    /// The dimension of q [B, Hq, Sq, D] (batch, head, query) or k [B, Hkv, Sk, D] (key) that `index` ranges over.
    static int64_t rangeDimOf(ModifierIndex index) {
      return index == ModifierIndex::Batch ? 0 : index == ModifierIndex::Head ? 1 : 2;
    }
  }];
}

def Tile_AllocTensorOp : Tile_Op<"alloc_tensor", [MemoryEffects<[MemAlloc]>]> {
  let summary = "global workspace of a program";
  let description = [{
    `%w = tile.alloc_tensor(%b, %s) : !tile.tensor<?x4x?xf32>`: one index per
    dynamic dimension. A workspace some launched kernel `tile.atomic_add`s into
    starts zeroed (the runtime's `scratch NAME zero`), unless it carries
    `tile.zeroed_in_program`: the program's first kernel that takes it writes
    zeros over it (the attention backward's preprocess, dq_accum); any other's
    contents are undefined until a kernel writes them.
  }];
  let arguments = (ins Variadic<Index>:$dynamic_sizes);
  let results = (outs Tile_Tensor:$result);
  let assemblyFormat = "`(` $dynamic_sizes `)` attr-dict `:` type($result)";
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// Whether the workspace starts zeroed: a kernel launched with it
    /// atomically adds into it (and no kernel of the program zeroes it:
    /// kZeroedInProgram), or it asks by name (`tile.zero_fill`: a decode
    /// program's status, compare-and-swapped by its check).
    bool startsZeroed();
    /// The attribute of a workspace the program zeroes itself.
    static constexpr ::llvm::StringLiteral kZeroedInProgram = "tile.zeroed_in_program";
  }];
}

def Tile_ProgramIdOp : Tile_Op<"program_id", [Pure]> {
  let summary = "coordinate of this block along a grid axis";
  let arguments = (ins Tile_GridAxis:$axis);
  let results = (outs Index:$result);
  let assemblyFormat = "$axis attr-dict";
}

def Tile_DimOp : Tile_Op<"dim", [Pure]> {
  let summary = "size of one dimension of a global tensor";
  let arguments = (ins Tile_Tensor:$tensor, I64Attr:$index);
  let results = (outs Index:$result);
  let assemblyFormat = "$tensor `,` $index attr-dict `:` type($tensor)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Global memory
//===----------------------------------------------------------------------===//

def Tile_LoadOp : Tile_Op<"load", [MemoryEffects<[MemRead]>]> {
  let summary = "global -> shared tile, zero-filling rows/cols past the limits";
  let description = [{
    result[r][c] = src[i0, .., row0 + r, col0 + c] where (row0, col0) are the
    last two indices, if row0 + r < row_limit and col0 + c < col_limit, else 0.
    Rows walk dimension rank-2 and columns dimension rank-1; a rank-1 tensor
    is one row (its only index is col0; rows r >= 1 are past the end).
    `smem_offset` (bytes) is set by
    flash-plan-memory; `buffers` > 1 marks a pipelined (multi-stage) buffer.
  }];
  let arguments = (ins Tile_Tensor:$source, Variadic<Index>:$indices,
                       Index:$row_limit, Index:$col_limit,
                       OptionalAttr<I64Attr>:$smem_offset, OptionalAttr<I64Attr>:$buffers);
  let results = (outs Tile_Tile:$result);
  let assemblyFormat = [{
    $source `[` $indices `]` `limit` `[` $row_limit `,` $col_limit `]` attr-dict
    `:` type($source) `->` type($result)
  }];
  let hasVerifier = 1;
}

def Tile_StoreOp : Tile_Op<"store", [MemoryEffects<[MemWrite]>]> {
  let summary = "register or shared tile -> global, rows/cols past the limits skipped";
  let arguments = (ins Tile_Tile:$value, Tile_Tensor:$dest, Variadic<Index>:$indices,
                       Index:$row_limit, Index:$col_limit);
  let assemblyFormat = [{
    $value `,` $dest `[` $indices `]` `limit` `[` $row_limit `,` $col_limit `]` attr-dict
    `:` type($value) `,` type($dest)
  }];
  let hasVerifier = 1;
}

def Tile_AtomicAddOp : Tile_Op<"atomic_add", [MemoryEffects<[MemRead, MemWrite]>]> {
  let summary = "f32 register tile added atomically into an f32 global tensor";
  let arguments = (ins Tile_Tile:$value, Tile_Tensor:$dest, Variadic<Index>:$indices,
                       Index:$row_limit, Index:$col_limit);
  let assemblyFormat = [{
    $value `,` $dest `[` $indices `]` `limit` `[` $row_limit `,` $col_limit `]` attr-dict
    `:` type($value) `,` type($dest)
  }];
  let hasVerifier = 1;
}

def Tile_LoadRowsOp : Tile_Op<"load_rows", [MemoryEffects<[MemRead]>]> {
  let summary = "global -> row vector (register) or column vector (shared), 0 past the limit";
  let description = [{
    result[r] = src[i0, .., row0 + r] (row0 = last index) if row0 + r < limit, else 0.
    A shared result is a column vector (per-query lse/D of a transposed S^T tile).
  }];
  let arguments = (ins Tile_Tensor:$source, Variadic<Index>:$indices, Index:$row_limit);
  let results = (outs Tile_Tile:$result);
  let assemblyFormat = [{
    $source `[` $indices `]` `limit` $row_limit attr-dict `:` type($source) `->` type($result)
  }];
  let hasVerifier = 1;
}

def Tile_StoreRowsOp : Tile_Op<"store_rows", [MemoryEffects<[MemWrite]>]> {
  let summary = "register row vector -> global, rows past the limit skipped";
  let arguments = (ins Tile_Tile:$value, Tile_Tensor:$dest, Variadic<Index>:$indices,
                       Index:$row_limit);
  let assemblyFormat = [{
    $value `,` $dest `[` $indices `]` `limit` $row_limit attr-dict `:` type($value) `,` type($dest)
  }];
  let hasVerifier = 1;
}

def Tile_AddBiasOp : Tile_Op<"add_bias", [MemoryEffects<[MemRead]>, AllTypesMatch<["acc", "result"]>]> {
  let summary = "acc[r][c] += bias[col0 + c] (columns past the limit unchanged)";
  let arguments = (ins Tile_Tile:$acc, Tile_Tensor:$bias, Index:$col0, Index:$col_limit);
  let results = (outs Tile_Tile:$result);
  let assemblyFormat = [{
    $acc `,` $bias `[` $col0 `]` `limit` $col_limit attr-dict `:` type($acc) `,` type($bias)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Tile math
//===----------------------------------------------------------------------===//

def Tile_FillOp : Tile_Op<"fill", [Pure]> {
  let summary = "register tile or row vector with every element = value";
  let arguments = (ins F64Attr:$value);
  let results = (outs Tile_Tile:$result);
  let assemblyFormat = "$value attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def Tile_CopyOp : Tile_Op<"copy", [Pure]> {
  let summary = "register tile -> shared tile (to feed a transposed or B operand)";
  let arguments = (ins Tile_Tile:$source, OptionalAttr<I64Attr>:$smem_offset);
  let results = (outs Tile_Tile:$result);
  let assemblyFormat = "$source attr-dict `:` type($source) `->` type($result)";
  let hasVerifier = 1;
}

def Tile_ConvertOp : Tile_Op<"convert", [Pure]> {
  let summary = "element type conversion into a register tile (round to nearest even)";
  let arguments = (ins Tile_Tile:$source);
  let results = (outs Tile_Tile:$result);
  let assemblyFormat = "$source attr-dict `:` type($source) `->` type($result)";
  let hasVerifier = 1;
}

def Tile_MatmulOp : Tile_Op<"matmul", [Pure, AllTypesMatch<["acc", "result"]>]> {
  let summary = "acc + op(a) · op(b), f32 accumulation";
  let description = [{
    result[m][n] = acc[m][n] + Σ_k op(a)[m][k] · op(b)[k][n], op = transpose
    when the flag is set. a: register or shared (shared when transposed);
    b: shared; acc/result: f32 register. a and b share an element type.
  }];
  let arguments = (ins Tile_Tile:$a, Tile_Tile:$b, Tile_Tile:$acc,
                       UnitAttr:$transpose_a, UnitAttr:$transpose_b);
  let results = (outs Tile_Tile:$result);
  let assemblyFormat = [{
    $a `,` $b `,` $acc (`transpose_a` $transpose_a^)? (`transpose_b` $transpose_b^)? attr-dict
    `:` type($a) `,` type($b) `->` type($result)
  }];
  let hasVerifier = 1;
}

def Tile_MaskOp : Tile_Op<"mask", [Pure, AllTypesMatch<["scores", "result"]>,
                                   DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "scores -> -inf outside the window or past the key limit";
  let description = [{
    i = row0 + r, j = col0 + c, p = i + offset. result = -inf where
    j >= col_limit, or (window_left >= 0 and j < p - window_left), or
    (window_right >= 0 and j > p + window_right); else scores. Causal is
    window_left = -1, window_right = 0; offset = Sk - Sq (bottom-right).
    `transposed`: the tile is S^T (rows are keys): i = row0 + c, j = col0 + r.
    `mod @m(%b, %h, %t...)` (a tile.mask_mod) also hides key j from row i
    where @m(b, h, i, j, t...) is false: b and h the batch and query head of
    the tile, %t the kernel's tensors the modifier reads (one per tensor
    argument of @m).
  }];
  let arguments = (ins Tile_Tile:$scores, Index:$row0, Index:$col0, Index:$col_limit,
                       Index:$offset, I64Attr:$window_left, I64Attr:$window_right,
                       UnitAttr:$transposed, OptionalAttr<FlatSymbolRefAttr>:$mask_mod,
                       Variadic<AnyType>:$mod_args);
  let results = (outs Tile_Tile:$result);
  let assemblyFormat = [{
    $scores `rows` $row0 `cols` $col0 `limit` $col_limit `offset` $offset
    `window` `[` $window_left `,` $window_right `]`
    (`mod` $mask_mod^ `(` $mod_args `:` type($mod_args) `)`)? (`transposed` $transposed^)? attr-dict
    `:` type($result)
  }];
  let hasVerifier = 1;
}

def Tile_DecodeBlockOp : Tile_Op<"decode_block", [MemoryEffects<[MemRead, MemWrite]>]> {
  let summary = "one block of a decode-attention kernel (the kernel's #tile.decode role)";
  let description = [{
    The work of block (%x, %y, %z) of the enclosing kernel, whose
    `#tile.decode` spec says which of the decode program's three kernels it
    is and what its tensors are (the kernel's arguments, in order):
      decode_check    block (b, 0, 0): sequence b's length and page ids.
      decode_split    block (split, kv head x row groups + row group, b):
                      the split's keys (each sequence's 64-key tiles in equal
                      runs over the splits) against the block's 16 rows.
      decode_combine  block (query row, b, 0): the splits by their lse.
    The CUDA kernel is one device-library call (attention_decode.cuh); the
    CPU executor computes the same block in f32 with f64 sums.
  }];
  let arguments = (ins Variadic<Tile_Tensor>:$tensors, Index:$x, Index:$y, Index:$z);
  let assemblyFormat = [{
    `(` $tensors `)` `at` `[` $x `,` $y `,` $z `]` attr-dict `:` type($tensors)
  }];
  let hasVerifier = 1;
}

def Tile_MoeBlockOp : Tile_Op<"moe_block", [MemoryEffects<[MemRead, MemWrite]>]> {
  let summary = "one block of a mixture-of-experts kernel (the kernel's #tile.moe role)";
  let description = [{
    The work of block (%x, %y, %z) of the enclosing kernel, whose `#tile.moe`
    spec says which of the program's kernels it is and what its tensors are
    (the kernel's arguments, in order; the roles' grids):
      moe_router, moe_up, moe_down  block (x, y, 0): output tile (row block
                      x, column block y) of the kernel's block_m x block_n
                      (an expert GEMM's row block lies in one expert's rows;
                      on the GPU a persistent grid of min(tiles, SMs) blocks
                      walks these tiles, #tile.grid_order<persistent>).
      moe_select, moe_combine  block (x, 0, 0): tokens 8x .. 8x + 7
                      (moe_layout.h's kMoeTokensPerBlock).
      moe_plan        block (0, 0, 0): the whole plan.
      moe_permute     block (x, 0, 0): rows 8x .. 8x + 7 of the routed rows,
                      then of the experts' padding rows (a grid-stride loop).
    The CUDA kernel is one device-library call; the CPU executor computes the
    same block (f32 scores, f64 sums, results rounded where the kernels store).
  }];
  let arguments = (ins Variadic<Tile_Tensor>:$tensors, Index:$x, Index:$y, Index:$z);
  let assemblyFormat = [{
    `(` $tensors `)` `at` `[` $x `,` $y `,` $z `]` attr-dict `:` type($tensors)
  }];
  let hasVerifier = 1;
}

def Tile_VarlenBlockOp : Tile_Op<"varlen_block", [MemoryEffects<[MemRead, MemWrite]>]> {
  let summary = "one block of a packed variable-length attention kernel (the kernel's #tile.varlen role)";
  let description = [{
    The work of block (%x, %y, %z) of the enclosing kernel, whose `#tile.varlen`
    spec says which of the program's two kernels it is and what its tensors are
    (the kernel's arguments, in order):
      varlen_plan     block (0, 0, 0): the offsets' check and the tile map.
      varlen_forward  block (t, h, 0): query tile t (from the map) of head h.
    The CUDA kernel is one device-library call (varlen.cuh, attention_fwd_ws.cuh);
    the CPU executor computes the same block in f32 with f64 sums.
  }];
  let arguments = (ins Variadic<Tile_Tensor>:$tensors, Index:$x, Index:$y, Index:$z);
  let assemblyFormat = [{
    `(` $tensors `)` `at` `[` $x `,` $y `,` $z `]` attr-dict `:` type($tensors)
  }];
  let hasVerifier = 1;
}

def Tile_SmCountOp : Tile_Op<"sm_count", [Pure]> {
  let summary = "the device's multiprocessor count (a program-level size)";
  let description = [{
    For workspace sizes and grids that scale with the device (a decode
    program's key splits): the manifest writes it as `num_sms`, which the
    runtime binds at launch. The CPU executor takes 16.
  }];
  let results = (outs Index:$result);
  let assemblyFormat = "attr-dict";
}

def Tile_ClassifyBlocksOp : Tile_Op<"classify_blocks", [MemoryEffects<[MemWrite]>,
                                   DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "one row of a mask modifier's 64 x 64 block classes";
  let description = [{
    Classifies the blocks of row %row of the (query, key) plane in 64 x 64
    blocks (`transposed`: the plane's rows are keys, its columns queries)
    under the mask modifier @m at batch %b, head %h, reading the tensors %t,
    over Sq = %sq queries and Sk = %sk keys, and stores the row at
    %table[%tb, %th, %row, :]:
      [0], [1]  the first column block the modifier does not hide whole and
                one past the last (0, 0 when it hides the whole row);
      [2 + c]   column block c: 0 when the modifier hides every (query, key)
                pair of the block, 2 when it shows every pair, 1 otherwise;
      [2 + C + c]  the first column block >= c whose class is not 0 (C, the
                number of column blocks, when none): the kernels step over
                hidden blocks anywhere in a row with it (a row is 2 + 2C
                wide).
    Only pairs with query < Sq and key < Sk count. A class of 1 is always
    allowed (the kernels mask such a block elementwise): the CUDA kernel
    classifies by interval arithmetic over the block, the CPU executor
    exactly, and both are sound. The kernels that read the table
    (`#tile.attention<..., mask_blocks = true>`) skip the blocks it hides and
    mask only the others; their tile bodies mask every block, which is the
    same result.
  }];
  let arguments = (ins FlatSymbolRefAttr:$mask_mod, Variadic<AnyType>:$mod_args, Index:$queries,
                       Index:$keys, Index:$row, Tile_Tensor:$table, Index:$table_batch,
                       Index:$table_head, UnitAttr:$transposed);
  let assemblyFormat = [{
    $mask_mod `(` $mod_args `:` type($mod_args) `)` `queries` $queries `keys` $keys `row` $row
    `into` $table `[` $table_batch `,` $table_head `]` (`transposed` $transposed^)? attr-dict `:` type($table)
  }];
  let hasVerifier = 1;
}

def Tile_PlanSegmentsOp : Tile_Op<"plan_segments", [MemoryEffects<[MemRead, MemWrite]>]> {
  let summary = "the segment plan of a document mask: tiles aligned to each document's start";
  let description = [{
    Reads the document ids %ids (a modifier's rank-1 i32 tensor, at least Sq
    and Sk long: tile.require_extent) of Sq = %queries query and Sk = %keys key
    rows and writes
    %plan, [segment_plan_rows(Sq), 4] i32 (the device library's
    segments.cuh): row 0 {form, tiles at 64 rows, at 128, at 192}, then
    each block size's tile map, an entry {first row of the tile's document,
    its length, the tile's index in it, 1}. Form 0 (the ids decrease
    somewhere, Sq != Sk, more documents than the maps hold) leaves the
    kernels to their block-class table. One block: the kernel's whole grid.
  }];
  let arguments = (ins Tile_Tensor:$ids, Index:$queries, Index:$keys, Tile_Tensor:$plan);
  let assemblyFormat = [{
    $ids `queries` $queries `keys` $keys `into` $plan attr-dict `:` type($ids) `,` type($plan)
  }];
  let hasVerifier = 1;
}

def Tile_ScoreOp : Tile_Op<"score", [Pure, AllTypesMatch<["scores", "result"]>,
                                     DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "result = @m(scale · scores, b, h, i, j, t...): a score modifier on each score";
  let description = [{
    i = row0 + r (the query row), j = col0 + c (the key row); `transposed`:
    the tile is S^T (rows are keys), i = row0 + c, j = col0 + r. `mod
    @m(%b, %h, %t...)` names the tile.score_mod with the tile's batch and
    query head and the kernel's tensors it reads. The scale is applied here,
    so the softmax ops that follow use scale 1. Runs before the mask.
    Query rows i >= query_limit (a tile's padding past Sq) become -inf: the
    modifier may give them any value, and a backward that recomputes their
    probabilities (lse 0 there) must get 0, not an overflow.
  }];
  let arguments = (ins Tile_Tile:$scores, Index:$row0, Index:$col0, Index:$query_limit, F64Attr:$scale,
                       FlatSymbolRefAttr:$score_mod, Variadic<AnyType>:$mod_args, UnitAttr:$transposed);
  let results = (outs Tile_Tile:$result);
  let assemblyFormat = [{
    $scores `rows` $row0 `cols` $col0 `limit` $query_limit `scale` $scale `mod` $score_mod `(` $mod_args `:` type($mod_args) `)`
    (`transposed` $transposed^)? attr-dict `:` type($result)
  }];
  let hasVerifier = 1;
}

def Tile_ScoreGradOp : Tile_Op<"score_grad", [Pure, AllTypesMatch<["grad", "raw", "result"]>,
                                              DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "result = grad · d@m/ds at s = scale · raw: back through a score modifier";
  let description = [{
    `raw` are the block's scores before tile.score (Q·Kᵀ, unscaled), the
    other operands tile.score's. Masked entries (grad 0) stay 0 wherever the
    derivative is finite. The score's input scale is applied separately.
  }];
  let arguments = (ins Tile_Tile:$grad, Tile_Tile:$raw, Index:$row0, Index:$col0, F64Attr:$scale,
                       FlatSymbolRefAttr:$score_mod, Variadic<AnyType>:$mod_args, UnitAttr:$transposed);
  let results = (outs Tile_Tile:$result);
  let assemblyFormat = [{
    $grad `,` $raw `rows` $row0 `cols` $col0 `scale` $scale `mod` $score_mod `(` $mod_args `:` type($mod_args) `)`
    (`transposed` $transposed^)? attr-dict `:` type($result)
  }];
  let hasVerifier = 1;
}

def Tile_SoftcapOp : Tile_Op<"softcap", [Pure, AllTypesMatch<["scores", "result"]>]> {
  let summary = "result = cap · tanh(scores · scale / cap)";
  let arguments = (ins Tile_Tile:$scores, F64Attr:$scale, F64Attr:$cap);
  let results = (outs Tile_Tile:$result);
  let assemblyFormat = "$scores `scale` $scale `cap` $cap attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def Tile_SoftcapGradOp : Tile_Op<"softcap_grad", [Pure, AllTypesMatch<["grad", "capped", "result"]>]> {
  let summary = "result = grad · (1 - (capped / cap)²): back through cap · tanh(x / cap)";
  let description = [{
    `capped` are the soft-capped scores before masking (finite), so masked
    entries (grad 0) stay 0. The softcap's input scale is applied separately.
  }];
  let arguments = (ins Tile_Tile:$grad, Tile_Tile:$capped, F64Attr:$cap);
  let results = (outs Tile_Tile:$result);
  let assemblyFormat = "$grad `,` $capped `cap` $cap attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def Tile_ScaleOp : Tile_Op<"scale", [Pure, AllTypesMatch<["source", "result"]>]> {
  let summary = "result = factor · source (f32 register tile)";
  let arguments = (ins Tile_Tile:$source, F64Attr:$factor);
  let results = (outs Tile_Tile:$result);
  let assemblyFormat = "$source `by` $factor attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def Tile_MulOp : Tile_Op<"mul", [Pure, AllTypesMatch<["lhs", "rhs", "result"]>]> {
  let summary = "elementwise product of two f32 register tiles";
  let arguments = (ins Tile_Tile:$lhs, Tile_Tile:$rhs);
  let results = (outs Tile_Tile:$result);
  let assemblyFormat = "$lhs `,` $rhs attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def Tile_ActivationOp : Tile_Op<"activation", [Pure, AllTypesMatch<["source", "result"]>]> {
  let summary = "elementwise activation of an f32 register tile";
  let arguments = (ins Tile_ActivationKind:$kind, Tile_Tile:$source);
  let results = (outs Tile_Tile:$result);
  let assemblyFormat = "$kind $source attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def Tile_ActivationGradOp : Tile_Op<"activation_grad",
    [Pure, AllTypesMatch<["grad", "result"]>]> {
  let summary = "result = grad · act'(preactivation)";
  let description = [{
    grad and result: f32 register tiles; preactivation: a register tile of the
    same shape, f32 or 16-bit (a 16-bit one is read pair by pair, never held
    as an f32 copy beside grad).
  }];
  let arguments = (ins Tile_ActivationKind:$kind, Tile_Tile:$grad, Tile_Tile:$preactivation);
  let results = (outs Tile_Tile:$result);
  let assemblyFormat = [{
    $kind $grad `,` $preactivation attr-dict `:` type($result) `,` type($preactivation)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Online softmax (forward)
//===----------------------------------------------------------------------===//

def Tile_RowMaxOp : Tile_Op<"row_max", [Pure, AllTypesMatch<["prev", "result"]>]> {
  let summary = "m'[r] = max(m[r], max_c s[r][c])";
  let arguments = (ins Tile_Tile:$scores, Tile_Tile:$prev);
  let results = (outs Tile_Tile:$result);
  let assemblyFormat = "$scores `,` $prev attr-dict `:` type($scores) `,` type($result)";
  let hasVerifier = 1;
}

def Tile_Exp2Op : Tile_Op<"exp2", [Pure, AllTypesMatch<["scores", "result"]>]> {
  let summary = "p[r][c] = exp2((s[r][c] - m[r]) · scale · log2 e); 0 where m[r] = -inf";
  let arguments = (ins Tile_Tile:$scores, Tile_Tile:$max, F64Attr:$scale);
  let results = (outs Tile_Tile:$result);
  let assemblyFormat = [{
    $scores `,` $max `scale` $scale attr-dict `:` type($scores) `,` type($max)
  }];
  let hasVerifier = 1;
}

def Tile_SoftmaxCorrectionOp : Tile_Op<"softmax_correction", [Pure, AllTypesMatch<["old_max", "new_max", "result"]>]> {
  let summary = "corr[r] = exp2((m_old[r] - m_new[r]) · scale · log2 e)";
  let description = [{
    With the conventions: m_new = -inf -> 1 (nothing seen yet), else
    m_old = -inf -> 0.
  }];
  let arguments = (ins Tile_Tile:$old_max, Tile_Tile:$new_max, F64Attr:$scale);
  let results = (outs Tile_Tile:$result);
  let assemblyFormat = "$old_max `,` $new_max `scale` $scale attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def Tile_OnlineSumOp : Tile_Op<"online_sum", [Pure, AllTypesMatch<["sum", "correction", "result"]>]> {
  let summary = "l'[r] = l[r] · corr[r] + Σ_c p[r][c]";
  let arguments = (ins Tile_Tile:$sum, Tile_Tile:$correction, Tile_Tile:$probs);
  let results = (outs Tile_Tile:$result);
  let assemblyFormat = [{
    $sum `,` $correction `,` $probs attr-dict `:` type($sum) `,` type($probs)
  }];
  let hasVerifier = 1;
}

def Tile_RowSumOp : Tile_Op<"row_sum", [Pure]> {
  let summary = "v[r] = Σ_c t[r][c]";
  let arguments = (ins Tile_Tile:$source);
  let results = (outs Tile_Tile:$result);
  let assemblyFormat = "$source attr-dict `:` type($source) `->` type($result)";
  let hasVerifier = 1;
}

def Tile_RescaleOp : Tile_Op<"rescale", [Pure, AllTypesMatch<["acc", "result"]>]> {
  let summary = "acc'[r][c] = acc[r][c] · corr[r]";
  let arguments = (ins Tile_Tile:$acc, Tile_Tile:$correction);
  let results = (outs Tile_Tile:$result);
  let assemblyFormat = "$acc `,` $correction attr-dict `:` type($acc) `,` type($correction)";
  let hasVerifier = 1;
}

def Tile_NormalizeOp : Tile_Op<"normalize", [Pure, AllTypesMatch<["acc", "result"]>]> {
  let summary = "o[r][c] = acc[r][c] / l[r]; 0 where l[r] = 0";
  let arguments = (ins Tile_Tile:$acc, Tile_Tile:$sum);
  let results = (outs Tile_Tile:$result);
  let assemblyFormat = "$acc `,` $sum attr-dict `:` type($acc) `,` type($sum)";
  let hasVerifier = 1;
}

def Tile_LseOp : Tile_Op<"lse", [Pure, AllTypesMatch<["max", "sum", "result"]>]> {
  let summary = "lse[r] = m[r] · scale + ln(l[r]); -inf where l[r] = 0";
  let arguments = (ins Tile_Tile:$max, Tile_Tile:$sum, F64Attr:$scale);
  let results = (outs Tile_Tile:$result);
  let assemblyFormat = "$max `,` $sum `scale` $scale attr-dict `:` type($result)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Backward helpers
//===----------------------------------------------------------------------===//

def Tile_RowDotOp : Tile_Op<"row_dot", [Pure]> {
  let summary = "D[r] = Σ_c a[r][c] · b[r][c] (f32)";
  let arguments = (ins Tile_Tile:$lhs, Tile_Tile:$rhs);
  let results = (outs Tile_Tile:$result);
  let assemblyFormat = "$lhs `,` $rhs attr-dict `:` type($lhs) `,` type($rhs) `->` type($result)";
  let hasVerifier = 1;
}

def Tile_RecomputeProbsOp : Tile_Op<"recompute_probs", [Pure, AllTypesMatch<["scores", "result"]>]> {
  let summary = "p[r][c] = exp(s[r][c] · scale - lse[r]); 0 where lse[r] = -inf";
  let description = [{
    With a column vector lse (rank-1 shared, one value per column: S^T form),
    lse[c] replaces lse[r].
  }];
  let arguments = (ins Tile_Tile:$scores, Tile_Tile:$lse, F64Attr:$scale);
  let results = (outs Tile_Tile:$result);
  let assemblyFormat = [{
    $scores `,` $lse `scale` $scale attr-dict `:` type($scores) `,` type($lse)
  }];
  let hasVerifier = 1;
}

def Tile_SoftmaxGradOp : Tile_Op<"softmax_grad", [Pure, AllTypesMatch<["probs", "dprobs", "result"]>]> {
  let summary = "dS[r][c] = P[r][c] · (dP[r][c] - D[r])";
  let description = [{
    With a column vector D (rank-1 shared: S^T form), D[c] replaces D[r].
  }];
  let arguments = (ins Tile_Tile:$probs, Tile_Tile:$dprobs, Tile_Tile:$delta);
  let results = (outs Tile_Tile:$result);
  let assemblyFormat = [{
    $probs `,` $dprobs `,` $delta attr-dict `:` type($probs) `,` type($delta)
  }];
  let hasVerifier = 1;
}

#endif // FLASHC_DIALECT_TILE_IR_TILEOPS_TD
