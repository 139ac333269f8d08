//===- TileAttrs.td - tile enums and attributes ----------*- tablegen -*-===//
#ifndef FLASHC_DIALECT_TILE_IR_TILEATTRS_TD
#define FLASHC_DIALECT_TILE_IR_TILEATTRS_TD

include "flashc/Dialect/Tile/IR/TileDialect.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/EnumAttr.td"

def Tile_MemorySpace : I32EnumAttr<"MemorySpace", "where a tile lives", [
    I32EnumAttrCase<"Shared", 0, "shared">,
    I32EnumAttrCase<"Register", 1, "register">]> {
  let cppNamespace = "::mlir::tile";
  // A parameter of !tile.tile only.
  let genSpecializedAttr = 0;
}

def Tile_GridAxis : I32EnumAttr<"GridAxis", "axis of the launch grid", [
    I32EnumAttrCase<"X", 0, "x">,
    I32EnumAttrCase<"Y", 1, "y">,
    I32EnumAttrCase<"Z", 2, "z">]> {
  let cppNamespace = "::mlir::tile";
}

def Tile_ModifierKind : I32EnumAttr<"Modifier", "an attention modifier", [
    I32EnumAttrCase<"Mask", 0, "mask_mod">,
    I32EnumAttrCase<"Score", 1, "score_mod">]> {
  let cppNamespace = "::mlir::tile";
}

// A modifier's index arguments, in their order (flashc::ModifierIndex's values).
def Tile_ModifierIndexKind : I32EnumAttr<"ModifierIndex", "an index argument of a modifier", [
    I32EnumAttrCase<"Batch", 0, "batch">,
    I32EnumAttrCase<"Head", 1, "head">,
    I32EnumAttrCase<"Query", 2, "query">,
    I32EnumAttrCase<"Key", 3, "key">]> {
  let cppNamespace = "::mlir::tile";
}

def Tile_StrategyKind : I32EnumAttr<"Strategy", "code-generation strategy", [
    I32EnumAttrCase<"MmaSyncSm80", 0, "mma_sync_sm80">,
    I32EnumAttrCase<"WgmmaSm90", 1, "wgmma_sm90">,
    // The attention forward as one warp-specialised TMA kernel (the device
    // library's attention_fwd_ws): `warps` counts its 8 consumer warps (the
    // row bands of the tile body); one more warpgroup, the TMA producer, makes
    // 384 threads. The tile body is the wgmma_sm90 forward's, kept as the
    // reference semantics; the emitter prints the library call instead.
    I32EnumAttrCase<"WgmmaWsSm90", 2, "wgmma_ws_sm90">]> {
  let cppNamespace = "::mlir::tile";
  let genSpecializedAttr = 0;
}
def Tile_StrategyAttr : EnumAttr<Tile_Dialect, Tile_StrategyKind, "strategy"> {
  let assemblyFormat = "`<` $value `>`";
}

def Tile_ActivationKind : I32EnumAttr<"Activation", "elementwise activation", [
    I32EnumAttrCase<"GeluTanh", 0, "gelu_tanh">,
    I32EnumAttrCase<"GeluErf", 1, "gelu_erf">,
    I32EnumAttrCase<"Silu", 2, "silu">,
    I32EnumAttrCase<"Relu", 3, "relu">,
    I32EnumAttrCase<"Identity", 4, "identity">]> {
  let cppNamespace = "::mlir::tile";
}

def Tile_KernelRoleKind : I32EnumAttr<"KernelRole", "what a generated kernel computes", [
    I32EnumAttrCase<"AttentionForward", 0, "attention_forward">,
    I32EnumAttrCase<"AttentionBackwardPreprocess", 1, "attention_backward_preprocess">,
    I32EnumAttrCase<"AttentionBackward", 2, "attention_backward">,
    I32EnumAttrCase<"AttentionBackwardKV", 3, "attention_backward_kv">,
    I32EnumAttrCase<"AttentionBackwardDQ", 4, "attention_backward_dq">,
    I32EnumAttrCase<"AttentionBackwardPostprocess", 5, "attention_backward_postprocess">,
    I32EnumAttrCase<"Gemm", 6, "gemm">,
    I32EnumAttrCase<"FfnFused", 7, "ffn_fused">,
    I32EnumAttrCase<"ColumnSum", 9, "column_sum">,
    I32EnumAttrCase<"GatedGemm", 10, "gated_gemm">,
    I32EnumAttrCase<"AttentionBackwardTransposed", 11, "attention_backward_transposed">,
    I32EnumAttrCase<"AttentionBackwardKVTransposed", 12, "attention_backward_kv_transposed">,
    I32EnumAttrCase<"GemmSplitK", 13, "gemm_split_k">,
    I32EnumAttrCase<"ConvertF32", 14, "convert_f32">,
    I32EnumAttrCase<"FfnActivationGrad", 15, "ffn_activation_grad">,
    I32EnumAttrCase<"AttentionMaskBlocks", 16, "attention_mask_blocks">,
    I32EnumAttrCase<"AttentionMaskBlocksTransposed", 17, "attention_mask_blocks_transposed">,
    I32EnumAttrCase<"DecodeCheck", 18, "decode_check">,
    I32EnumAttrCase<"DecodeSplit", 19, "decode_split">,
    I32EnumAttrCase<"DecodeCombine", 20, "decode_combine">,
    I32EnumAttrCase<"VarlenPlan", 21, "varlen_plan">,
    I32EnumAttrCase<"VarlenForward", 22, "varlen_forward">,
    I32EnumAttrCase<"VarlenBwdPrepare", 23, "varlen_bwd_prepare">,
    I32EnumAttrCase<"VarlenKeyPlan", 24, "varlen_key_plan">,
    I32EnumAttrCase<"VarlenBackward", 25, "varlen_backward">,
    I32EnumAttrCase<"VarlenBwdFinish", 26, "varlen_bwd_finish">,
    I32EnumAttrCase<"KvAppendCheck", 27, "kv_append_check">,
    I32EnumAttrCase<"KvAppend", 28, "kv_append">,
    I32EnumAttrCase<"MoeRouter", 29, "moe_router">,
    I32EnumAttrCase<"MoeSelect", 30, "moe_select">,
    I32EnumAttrCase<"MoePlan", 31, "moe_plan">,
    I32EnumAttrCase<"MoePermute", 32, "moe_permute">,
    I32EnumAttrCase<"MoeUp", 33, "moe_up">,
    I32EnumAttrCase<"MoeDown", 34, "moe_down">,
    I32EnumAttrCase<"MoeCombine", 35, "moe_combine">,
    I32EnumAttrCase<"MoeScatterGrad", 36, "moe_scatter_grad">,
    I32EnumAttrCase<"MoeDataGrad", 37, "moe_data_grad">,
    I32EnumAttrCase<"MoeDataGradAccumulate", 38, "moe_data_grad_accumulate">,
    I32EnumAttrCase<"MoeActivationGrad", 39, "moe_activation_grad">,
    I32EnumAttrCase<"MoeWeightGrad", 40, "moe_weight_grad">,
    I32EnumAttrCase<"MoeSelectGrad", 41, "moe_select_grad">,
    I32EnumAttrCase<"MoeGatherGrad", 42, "moe_gather_grad">,
    I32EnumAttrCase<"AttentionSegmentPlan", 43, "attention_segment_plan">]> {
  let cppNamespace = "::mlir::tile";
  let genSpecializedAttr = 0;
}

//===----------------------------------------------------------------------===//
// #tile.grid: one axis of a kernel's launch grid as a function of its args.
//===----------------------------------------------------------------------===//
def Tile_GridAttr : AttrDef<Tile_Dialect, "Grid"> {
  let mnemonic = "grid";
  let summary = "size of one grid axis in terms of argument dimensions";
  let description = [{
    `#tile.grid<7>`: the constant 7. `#tile.grid<arg1[1]>`: dimension 1 of
    kernel argument 1. `#tile.grid<ceildiv(arg0[2], 128)>`: ceil(dim / 128).
  }];
  let parameters = (ins "int64_t":$argIndex, "int64_t":$dimIndex,
                        "int64_t":$divisor, "int64_t":$constant);
  let hasCustomAssemblyFormat = 1;
  // Bounded (32-bit grid sizes): tile IR is an input.
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    bool isConstant() const { return getArgIndex() < 0; }
    /// Evaluates the axis size given the argument shapes.
    int64_t evaluate(::llvm::ArrayRef<::llvm::SmallVector<int64_t, 4>> argShapes) const;
  }];
}

//===----------------------------------------------------------------------===//
// Kernel recipes: what a kernel computes, so that flash-plan-memory can
// rebuild it at other block sizes and tests can name a reference.
//===----------------------------------------------------------------------===//
def Tile_BlockOrderKind : I32EnumAttr<"BlockOrder", "order in which the grid takes a kernel's row blocks", [
    I32EnumAttrCase<"InOrder", 0, "in_order">,
    // The last row blocks first: under a causal mask they see the most keys,
    // so the longest blocks start in the first wave and the short ones fill
    // the tail.
    I32EnumAttrCase<"LongestFirst", 1, "longest_first">,
    // Grouped rasterization of a 2-D grid (GEMM tiles): consecutive blocks
    // walk `group` row blocks of one column block, then the next column, so
    // the blocks in flight share their A rows and B columns in L2.
    I32EnumAttrCase<"Grouped", 2, "grouped">,
    // A persistent grid of min(units, SMs) blocks that loop over the row
    // blocks: a unit is the row blocks n-1-i and i of one (head, batch) --
    // equal work under a causal mask -- and block b takes units b,
    // b + gridDim.x, ...; a block's next tile loads under its last tile's
    // epilogue. Warp-specialised attention forward kernels only (the device
    // library loops); the manifest's grid x is min(units, num_sms).
    I32EnumAttrCase<"Persistent", 3, "persistent">,
    // One tile a block, the grid (blocks, heads, batches) read in groups of
    // `group` (head, batch) pairs with the block index slowest inside a group:
    // the hardware starts block 0 of every pair of a group, then block 1, ...
    // Where blocks differ in work (causal, prefix-LM, documents: block 0 the
    // longest) the longest blocks of `group` heads start together instead of
    // the last head's being left for the grid's tail. Warp-specialised
    // attention backward main kernels only (attention_bwd_ws.cuh).
    I32EnumAttrCase<"HeadGroups", 4, "head_groups">]> {
  let cppNamespace = "::mlir::tile";
}

def Tile_GridOrderAttr : AttrDef<Tile_Dialect, "GridOrder"> {
  let mnemonic = "grid_order";
  let summary = "the order in which a kernel's blocks take their (x, y) tiles (flash-order-blocks)";
  let description = [{
    `#tile.grid_order<order = longest_first, group = 1>`: block x takes row
    block gridDim.x - 1 - x (causal attention: the longest rows first).
    `#tile.grid_order<order = grouped, group = 8>`: the launch index
    p = x + y · gridDim.x is mapped to (x', y') so that consecutive blocks
    cover `group` row blocks of one column block before the next column. Both
    are bijections of the grid: each tile is still taken by exactly one block.
    `#tile.grid_order<order = persistent, group = 1>`: the launch grid is
    min(units, SMs) blocks, each looping over its units (tile_schedule.cuh);
    `grid` stays the kernel's tiles, each still taken by exactly one block.
    `#tile.grid_order<order = head_groups, group = 4>`: the launch index
    p = x + gridDim.x · (y + gridDim.y · z) read as groups of 4 (y, z) pairs,
    x slowest inside a group; a bijection of the grid too.
  }];
  let parameters = (ins EnumParameter<Tile_BlockOrderKind>:$order, "int64_t":$group);
  let assemblyFormat = "`<` struct(params) `>`";
  // group in [1, 64]; 1 unless grouped, persistent or head_groups.
  let genVerifyDecl = 1;
}

def Tile_RunIfAttr : AttrDef<Tile_Dialect, "RunIf"> {
  let mnemonic = "run_if";
  let summary = "the sizes a kernel runs at (a plan chosen by a run-time size)";
  let description = [{
    `#tile.run_if<arg = 1, dim = 2, min = 1, max = 4096>`: the kernel runs only
    when dimension `dim` of tensor argument `arg` is in [min, max] (max = -1:
    no upper bound); at any other size its launch does nothing (the manifest's
    grid is multiplied by a 0 / 1 selector of that size, and the runtime skips
    a zero grid). flash-plan-memory gives it to the two kernels of one op
    whose plans a tuning-table entry bounded by sequence length splits
    (docs/tuning.md, docs/design/plans-by-sequence-length.md).
  }];
  let parameters = (ins "int64_t":$arg, "int64_t":$dim, "int64_t":$min, "int64_t":$max);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// Whether a dimension of `size` is in the range.
    bool holds(int64_t size) const { return size >= getMin() && (getMax() < 0 || size <= getMax()); }
  }];
}

def Tile_WarpSpecializedAttr : AttrDef<Tile_Dialect, "WarpSpecialized"> {
  let mnemonic = "warp_specialized";
  let summary = "warp roles and pipeline of a warp-specialised kernel (flash-warp-specialize)";
  let description = [{
    The schedule of a wgmma_ws_sm90 kernel, decided by flash-warp-specialize
    and printed, not decided, by the emitter:
    - producer: one warpgroup whose single thread issues every TMA copy; it
      gives registers back (setmaxnreg.dec to producer_registers).
    - consumers: consumer_warpgroups warpgroups of 64 rows each (the kernel's
      `warps` / 4), each raised to consumer_registers (setmaxnreg.inc).
    - resident: operands loaded once per block (Q); ring: operands streamed
      through `ring_stages` slots, each with a full mbarrier (the TMA bytes
      landed) and an empty one (every consumer warp released the slot).
    - ping_pong: the consumer warpgroups take turns issuing their GEMMs (named
      barriers), so one's softmax runs under the other's GEMMs.
    - role_split: the consumer warpgroups split the work by role, not by rows:
      each holds whole 64-row tiles of the kernel's plan (`warps` = 4) and
      computes its own products (the attention backward: Pᵀ and dV in one,
      dSᵀ and dK in the other, dQ by column halves).
    Within a warpgroup the library always issues S_j = Q K_jᵀ before
    P_{j-1} V_{j-1} and runs the softmax of S_j under that product. The order
    of the query-row blocks is the kernel's `grid_order` (flash-order-blocks).
  }];
  let parameters = (ins
    "int64_t":$producer_registers,
    "int64_t":$consumer_warpgroups,
    "int64_t":$consumer_registers,
    "::mlir::ArrayAttr":$resident,
    "::mlir::ArrayAttr":$ring,
    "int64_t":$ring_stages,
    "bool":$ping_pong,
    DefaultValuedParameter<"bool", "false">:$role_split);
  let assemblyFormat = "`<` struct(params) `>`";
  // Register budgets setmaxnreg takes (multiples of 8 in [24, 256]) that fit
  // the register file together; 1-4 ring stages; named operands.
  let genVerifyDecl = 1;
}

def Tile_AttentionSpecAttr : AttrDef<Tile_Dialect, "AttentionSpec"> {
  let mnemonic = "attention";
  let summary = "recipe of an attention kernel";
  let description = [{
    Mask as a window on bottom-right aligned positions (p = i + Sk - Sq):
    key j visible iff (window_left < 0 or j >= p - window_left) and
    (window_right < 0 or j <= p + window_right). causal = [-1, 0].
    key_offset = true: p = i + key_offset instead, with key_offset the
    kernel's last argument (an i32, given at launch) in every role that
    masks (forward and the backward kernels that compute scores).
    top_left = true: p = i (not with key_offset): the window of a mask
    modifier that was a band of diagonals (DiagonalBand.h), which saw row
    indices.
    mask_mod = @m (a tile.mask_mod): key j is also hidden from query i where
    @m(b, h, i, j, t...) is false; the kernels that mask take the tensors @m
    reads (`t`, one per tensor argument) after their own tensors.
    mask_blocks = true (a modifier that reads tensors): the kernel also takes
    the table of 64 x 64 block classes (`tile.classify_blocks`) after those,
    which the CUDA kernels use to skip hidden blocks. Roles
    attention_mask_blocks (rows: query blocks) and
    attention_mask_blocks_transposed (rows: key blocks) write such a table:
    arguments q, k, the modifier's tensors, the table
    [B or 1, Hq or 1, ceil(rows / 64), ceil(columns / 64) + 2] (i32).
    score_mod = @f (a tile.score_mod, not with a softcap): each score s
    becomes @f(scale · s, b, h, i, j, t...) before the mask; the kernels that
    compute scores take the tensors @f reads after the mask modifier's (and
    before the table). score_additive = true: @f's derivative in s is 1 by its
    form (s plus terms free of s: ALiBi, bias tables), so a backward may leave
    dS as it is (the warp-specialised backward takes only these).
    score_separable = true: @f is s + A(b, h, i) + B(b, h, j) by its form
    (ScoreFunction.h's scoreBiasSeparable, A and B finite: ALiBi, a distance of
    positions read from an i32 tensor): the warp-specialised kernels add B
    once a key and leave A to lse,
    so the forward's softmax holds nothing more than the plain one's (the wide
    key block may be planned).
    segments = true (attention_forward or a backward's main kernel with
    mask_blocks, a modifier that is a document compare `t[q] == t[k]`,
    DocumentIds.h, under no window or a causal one; or the kernel that
    classifies its blocks): the kernel also takes the segment plan after the
    table, written by a kernel of role attention_segment_plan (arguments q,
    k, the ids, the plan [segment_plan_rows(Sq), 4] i32:
    `tile.plan_segments`); where the ids are sorted it takes tiles aligned to
    each document's start (the device library's segments.cuh), its modifiers
    at the sequence's positions, else it walks the table (the block-class
    kernel: leaves at once where the plan serves). The tile body is the
    table form's, the same result.
  }];
  let parameters = (ins
    EnumParameter<Tile_KernelRoleKind>:$role,
    "int64_t":$head_dim, "int64_t":$value_dim,
    "::mlir::FloatAttr":$scale, "::mlir::FloatAttr":$softcap,
    "int64_t":$window_left, "int64_t":$window_right,
    "::mlir::TypeAttr":$element_type,
    DefaultValuedParameter<"bool", "false">:$key_offset,
    OptionalParameter<"::mlir::FlatSymbolRefAttr">:$mask_mod,
    DefaultValuedParameter<"bool", "false">:$mask_blocks,
    OptionalParameter<"::mlir::FlatSymbolRefAttr">:$score_mod,
    DefaultValuedParameter<"bool", "false">:$score_additive,
    DefaultValuedParameter<"bool", "false">:$score_separable,
    DefaultValuedParameter<"bool", "false">:$top_left,
    DefaultValuedParameter<"bool", "false">:$segments);
  let assemblyFormat = "`<` struct(params) `>`";
  // An attention role, head dims, finite scales and window sides in the
  // ranges of TileLimits.h: flash-plan-memory rebuilds kernels from it.
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// Does a kernel of this recipe take the run-time key offset (an i32
    /// after its tensors)? The roles that compute masked scores do.
    bool takesKeyOffset() const;
    /// Does the role compute scores (and so mask them)?
    bool computesScores() const;
    /// Is it a role that writes a mask modifier's block classes?
    bool classifiesMaskBlocks() const;
    /// Is `role` a main kernel of the segment form (the forward, a backward's main kernel: those that take their
    /// tiles from a segment plan)?
    static bool isSegmentMainRole(KernelRole role) {
      return role == KernelRole::AttentionForward || role == KernelRole::AttentionBackward ||
             role == KernelRole::AttentionBackwardTransposed;
    }
  }];
}

def Tile_DecodeSpecAttr : AttrDef<Tile_Dialect, "DecodeSpec"> {
  let mnemonic = "decode";
  let summary = "recipe of a decode-attention kernel (flash.decode_attention)";
  let description = [{
    The three kernels of a decode program, each one `tile.decode_block` a
    block (the device library's attention_decode.cuh):
    role = decode_check: arguments (k_cache, cache_seqlens, [block_table],
    status); block b checks sequence b's length against the cache's capacity
    and the page ids its keys use; the first bad entry goes to status
    [code, sequence, index, value] (a zeroed workspace).
    role = decode_split: arguments (q, k_cache, v_cache, cache_seqlens,
    [block_table], out, lse, o_part, lse_part, status); block (split, kv head x
    row group, b) attends the split's keys; one split writes out / lse, more
    write o_part [B, splits, Hq·T, Dv] / lse_part [B, splits, Hq·T].
    role = decode_combine: arguments (o_part, lse_part, out, lse, status).
    Nothing is written once status is set.
    flash.kv_append's two kernels: role = kv_append_check: arguments (key,
    k_cache, cache_seqlens, [block_table], status); the decode check, and a
    length below the T new tokens (key [B, Hkv, T, D]) is bad too.
    role = kv_append: arguments (key, value, k_cache, v_cache,
    cache_seqlens, [block_table], status); block (x, b) writes new tokens
    4x .. 4x + 3 of sequence b, every kv head, into the caches. For these
    roles queries is T (0 when dynamic), group 1, causal false and scale 1.
    queries = T (new tokens a sequence), group = Hq / Hkv, page_size = P of a
    paged cache or 0 for a contiguous one; rows of a block: 16 of the
    group · T rows of a kv head.
  }];
  let parameters = (ins
    EnumParameter<Tile_KernelRoleKind>:$role,
    "int64_t":$head_dim, "int64_t":$value_dim, "int64_t":$queries, "int64_t":$group,
    "int64_t":$page_size, "bool":$causal, "::mlir::FloatAttr":$scale,
    "::mlir::TypeAttr":$element_type);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// Row groups of 16 rows a kv head: ceil(group · queries / 16).
    int64_t rowGroups() const { return (getGroup() * getQueries() + 15) / 16; }
    bool isPaged() const { return getPageSize() > 0; }
    /// The tensors a kernel of this role takes (the block table counted when paged).
    unsigned tensorCount() const;
  }];
}

def Tile_VarlenSpecAttr : AttrDef<Tile_Dialect, "VarlenSpec"> {
  let mnemonic = "varlen";
  let summary = "recipe of a packed variable-length attention kernel (flash.varlen_attention)";
  let description = [{
    The two kernels of a packed-sequences program, each one `tile.varlen_block`
    a block (the device library's varlen.cuh and attention_fwd_ws.cuh):
    role = varlen_plan: arguments (cu_seqlens_q, cu_seqlens_k, q, k, tile_map,
    status); one block checks the offsets (a bad entry goes to status [code,
    index, tensor, value], a zeroed workspace) and writes tile_map [tiles, 2]:
    for each query tile of block_m rows, its sequence and that sequence's
    first tile (-1 past the last tile).
    role = varlen_forward: arguments (q, k, v, cu_seqlens_q, cu_seqlens_k,
    tile_map, status, out, lse); block (t, h, 0) attends query tile t of head
    h (nothing when the status is set).
    The backward program's: varlen_bwd_prepare (out, dout, delta, dq_accum;
    block (r, h): 64 rows of head h, delta = rowsum(dO O), dq_accum zeroed),
    varlen_key_plan (as the plan, over cu_seqlens_k: tiles of block_m keys),
    varlen_backward (q, k, v, dout, lse, delta, dq_accum, dk, dv,
    cu_seqlens_q, cu_seqlens_k, key_map, status; block (t, hk): key tile t
    of kv head hk, dK and dV of its keys, dQ added into dq_accum) and
    varlen_bwd_finish (dq_accum, status, dq; block (r, h): dq rounded). window_left / window_right: the mask
    (causal: -1, 0; none: -1, -1), aligned at each sequence's bottom-right
    corner; softcap 0: none.
  }];
  let parameters = (ins
    EnumParameter<Tile_KernelRoleKind>:$role,
    "int64_t":$head_dim, "int64_t":$value_dim, "int64_t":$group, "int64_t":$block_m,
    "int64_t":$window_left, "int64_t":$window_right,
    "::mlir::FloatAttr":$scale, "::mlir::FloatAttr":$softcap, "::mlir::TypeAttr":$element_type);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    bool isCausal() const { return getWindowLeft() < 0 && getWindowRight() == 0; }
    /// The tensors a kernel of this role takes.
    unsigned tensorCount() const;
  }];
}

def Tile_MoeSpecAttr : AttrDef<Tile_Dialect, "MoeSpec"> {
  let mnemonic = "moe";
  let summary = "recipe of a mixture-of-experts kernel (flash.moe)";
  let description = [{
    The seven kernels of a mixture-of-experts program, each one `tile.moe_block`
    a block (the device library's moe_routing.cuh and the grouped forms of
    gemm_ws.cuh; design: docs/design/moe.md). The routed rows (tokens x top_k)
    are permuted by expert, each expert's rows padded to a multiple of 128.
      moe_router  (x, router, logits): logits [T, E] = x · router, rounded to
                  the element type.
      moe_select  (logits, counts, ids, weights, ranks): a warp a token: the
                  scores (softmax, or the logistic when sigmoid), the top_k
                  experts (ties to the lower one), their weights (divided by
                  their sum when renormalize) and each chosen row's rank among
                  its expert's rows (counts [E], zeroed by the program).
      moe_plan    (logits, counts, offsets, groups): offsets [E + 1] the experts'
                  first padded rows, groups [1 + capacity / 128] the row blocks
                  in use then each block's expert.
      moe_permute (x, counts, ids, ranks, offsets, permuted): token rows to
                  their experts' rows; padding rows zero.
      moe_up      (logits, permuted, w1, [w_up], groups, hidden): hidden =
                  act(x_e w1[e]) (gated: act(x_e w1[e]) ⊙ (x_e w_up[e])), rounded.
      moe_down    (logits, hidden, w2, groups, expert_out): expert_out =
                  hidden_e w2[e].
    The plan and the expert GEMMs take the logits only for their rows: the
    token count T, which sizes the workspaces (a kernel's tensors bind the
    symbols of its sizes).
      moe_combine (expert_out, ids, weights, ranks, offsets, y): y[t] = sum of
                  the token's weights x its expert rows.
    With `train` (a training forward) the plan also copies the counts into a
    fifth tensor, saved_counts, and the up projection also stores its
    pre-activations (pre; gated: gate and up) after hidden, for the backward:
      moe_scatter_grad (dy, expert_out, counts, ids, weights, ranks, offsets,
                  d_expert_out, d_weights): d_expert_out row = weight x dy[t]
                  (padding rows zero), d_weights = dy[t] . expert_out row (f32).
      moe_data_grad (logits, a, w, groups, c): c = a_e w[e]ᵀ over the permuted
                  rows (w [E, n, k]); moe_data_grad_accumulate: c += a_e w[e]ᵀ.
      moe_activation_grad (logits, pre, [up], dh, offsets, d_pre, [d_up]):
                  d_pre = dh act'(pre) (gated: dh up act'(gate), d_up = dh
                  act(gate)) over the rows in use.
      moe_weight_grad (logits, a, b, offsets, dw): dw[e] = a_eᵀ b_e over each
                  expert's rows (dw [E, m, n]; zeros for an expert without).
      moe_select_grad (logits, ids, weights, d_weights, d_logits): d_logits
                  through the renormalisation and the softmax / sigmoid, the
                  choice held fixed.
      moe_gather_grad (dx_perm, ids, ranks, offsets, dx): dx[t] = sum of the
                  token's k rows of dx_perm.
  }];
  let parameters = (ins
    EnumParameter<Tile_KernelRoleKind>:$role,
    "int64_t":$experts, "int64_t":$top_k, "bool":$sigmoid, "bool":$renormalize,
    EnumParameter<Tile_ActivationKind>:$activation, "bool":$gated, "::mlir::TypeAttr":$element_type,
    DefaultValuedParameter<"bool", "false">:$train);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// The tensors a kernel of this role takes.
    unsigned tensorCount() const;
    /// Whether the role is a GEMM (the warp-specialised persistent GEMM runs it: the router, the expert
    /// projections and their gradients), else a routing kernel of the device library.
    bool isGemm() const;
  }];
}

def Tile_GemmSpecAttr : AttrDef<Tile_Dialect, "GemmSpec"> {
  let mnemonic = "gemm";
  let summary = "recipe of a GEMM-family (FFN) kernel";
  let description = [{
    role = gemm: C = epilogue(alpha · op(A) · op(B)) (+ C when accumulate),
    epilogue = bias (if bias1) then activation. role = gated_gemm:
    C = act(A·Bg) ⊙ (A·Bu). role = ffn_fused: y = act(x·W1 + b1)·W2 + b2 (gated:
    (act(x·Wg) ⊙ (x·Wu))·W2 + b2) in one kernel. role = column_sum:
    db[n] = Σ_m A[m, n]. role = gemm_split_k: C += op(A)·op(B) over one slice
    of the contraction per grid z (rows of A, or one batch of a batched A),
    added atomically into an f32 C the program zero-fills (weight gradients
    with few output tiles). role = convert_f32: C = A (f32) in C's type.
    role = ffn_activation_grad: elementwise, from dh = dy·W2ᵀ (a gemm before it)
    and the saved pre-activation, dpre = dh ∘ act'(pre) (gated: from g and u,
    dg = (dh ∘ u) ∘ act'(g) and du = dh ∘ act(g)).
    save_pre (gemm, gated_gemm, ffn_fused; a training forward's up projection):
    the kernel also writes what the backward reads instead of recomputing it:
    gemm the pre-activation pre = alpha·op(A)·op(B) + bias before C, gated_gemm
    g = A·Bg and u = A·Bu before C, ffn_fused pre = x·W1 + b1 and
    h = act(pre) (gated: g, u and h) after y.
    act_grad (gemm; the FFN backward's dh with the activation's derivative in
    its epilogue): C = alpha·op(A)·op(B) ∘ act'(P), arguments (a, b, p, c),
    P (the training forward's saved pre-activation) of C's shape; with gated,
    the gated FFN's: D = alpha·op(A)·op(B), C = (D ∘ U) ∘ act'(P) and
    C_up = D ∘ act(P), arguments (a, b, p, p_up, c, c_up), P and U the saved
    g and u.
  }];
  let parameters = (ins
    EnumParameter<Tile_KernelRoleKind>:$role,
    EnumParameter<Tile_ActivationKind>:$activation,
    "::mlir::BoolAttr":$transpose_a, "::mlir::BoolAttr":$transpose_b,
    "::mlir::BoolAttr":$bias1, "::mlir::BoolAttr":$bias2,
    "::mlir::BoolAttr":$gated, "::mlir::BoolAttr":$accumulate,
    "::mlir::FloatAttr":$alpha, "int64_t":$block_k,
    "::mlir::TypeAttr":$element_type,
    OptionalParameter<"::mlir::BoolAttr">:$save_pre,
    OptionalParameter<"::mlir::BoolAttr">:$act_grad);
  let assemblyFormat = "`<` struct(params) `>`";
  let extraClassDeclaration = [{
    /// Does the kernel also write the pre-activation(s) (save_pre = true)?
    bool savesPre() const { return getSavePre() && getSavePre().getValue(); }
    /// Does the epilogue multiply by the activation's derivative at a P it
    /// reads (act_grad = true)?
    bool appliesActGrad() const { return getActGrad() && getActGrad().getValue(); }
    /// The gated FFN's act_grad: two tiles read (g, u), two written (dg, du)?
    bool appliesGatedActGrad() const { return appliesActGrad() && getGated().getValue(); }
  }];
  // A GEMM-family role, a finite alpha and block_k in TileLimits.h's range.
  let genVerifyDecl = 1;
}

#endif // FLASHC_DIALECT_TILE_IR_TILEATTRS_TD
