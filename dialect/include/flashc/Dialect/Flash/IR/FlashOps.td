//===- FlashOps.td - flash graph operations --------------*- tablegen -*-===//
#ifndef FLASHC_DIALECT_FLASH_IR_FLASHOPS_TD
#define FLASHC_DIALECT_FLASH_IR_FLASHOPS_TD

include "flashc/Dialect/Flash/IR/FlashAttrs.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/Interfaces/ControlFlowInterfaces.td"

def Flash_FloatTensor : RankedTensorOf<[BF16, F16, F32]>;
def Flash_F32Tensor : RankedTensorOf<[F32]>;
// An extra operand a mask modifier reads (a per-token document id, a per-head
// table): i32 of rank 1 to 4.
def Flash_MaskOperand : RankedTensorOf<[I32]>;
// An extra operand a score modifier reads (per-head slopes, a bias table): f32
// or i32 of rank 1 to 4.
def Flash_ScoreOperand : RankedTensorOf<[F32, I32]>;

class Flash_Op<string mnemonic, list<Trait> traits = []>
    : Op<Flash_Dialect, mnemonic, !listconcat(traits, [Pure])>;

// Unary elementwise op whose result has the operand's type.
class Flash_UnaryOp<string mnemonic, list<Trait> traits = []>
    : Flash_Op<mnemonic, !listconcat(traits, [SameOperandsAndResultType])> {
  let arguments = (ins Flash_FloatTensor:$input);
  let results = (outs Flash_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($result)";
}

//===----------------------------------------------------------------------===//
// Graph ops
//===----------------------------------------------------------------------===//

def Flash_MatmulOp : Flash_Op<"matmul"> {
  let summary = "(batched, optionally transposed) matrix product";
  let description = [{
    `result = op(lhs) · op(rhs)` over the last two dimensions, where op
    transposes those two dimensions when `transpose_a` / `transpose_b` is set:
    lhs is [..., M, K] ([..., K, M] with transpose_a), rhs is [..., K, N]
    ([..., N, K] with transpose_b), result is [..., M, N]. Ranks are 2 to 4.

    Batch dimensions: a rank-2 rhs is shared by every lhs batch slice
    (x[B, M, d] · W[d, h]). Otherwise lhs and rhs have the same rank and each
    batch dimension pair is either equal or *grouped*: an lhs batch dimension
    of size g·n against an rhs dimension of size n means rhs slice r serves the
    g consecutive lhs slices r·g .. r·g + g - 1 (lhs slice i uses rhs slice
    i / g). This is grouped-query attention: q [B, 32, S, D] against
    k [B, 8, S, D] gives query head h the key head h / 4. The result has the
    lhs batch dimensions. Dynamic dimensions are accepted wherever a size is
    not known; static sizes must agree.

    ```mlir
    %s = flash.matmul %q, %k transpose_b
        : tensor<?x32x?x128xbf16>, tensor<?x8x?x128xbf16> -> tensor<?x32x?x?xbf16>
    ```
  }];
  let arguments = (ins Flash_FloatTensor:$lhs, Flash_FloatTensor:$rhs,
                       UnitAttr:$transpose_a, UnitAttr:$transpose_b);
  let results = (outs Flash_FloatTensor:$result);
  let assemblyFormat = [{
    $lhs `,` $rhs (`transpose_a` $transpose_a^)? (`transpose_b` $transpose_b^)?
    attr-dict `:` type($lhs) `,` type($rhs) `->` type($result)
  }];
  let hasVerifier = 1;
}

def Flash_ScaleOp : Flash_Op<"scale", [SameOperandsAndResultType]> {
  let summary = "multiply every element by a constant";
  let description = [{
    `result = factor * input`, e.g. the 1/sqrt(D) of attention scores.

    ```mlir
    %y = flash.scale %x by 0.125 : tensor<?x16x?x?xbf16>
    ```
  }];
  let arguments = (ins Flash_FloatTensor:$input, F64Attr:$factor);
  let results = (outs Flash_FloatTensor:$result);
  let assemblyFormat = "$input `by` $factor attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def Flash_MaskOp : Flash_Op<"mask", [AllTypesMatch<["input", "result"]>, IsolatedFromAbove]> {
  let summary = "set invisible attention scores to -inf";
  let description = [{
    The input is a score matrix [..., Sq, Sk]. Entries whose key is not
    visible from their query under `mask` (see `#flash.mask` for the
    bottom-right aligned rule) become -inf; the others pass through.
    `mod` (optional) hides more: a region of the query row q and the key row
    k (the last two indices; or batch, head, q, k of a [B, H, Sq, Sk] input)
    yielding i1, as flash.attention's `mask_mod` (an index function), into
    which flash-fuse-attention moves it with its operands
    (`mod(%doc, %doc : tensor<?xi32>, tensor<?xi32>)`: tensors the region
    reads by tensor.extract).

    ```mlir
    %m = flash.mask %s <causal> : tensor<?x16x?x?xf32>
    %w = flash.mask %s <sliding_window, left = 256, right = 0> : tensor<4x4xf32>
    %p = flash.mask %s <none> mod {
    ^bb0(%q: index, %k: index):
      %c = arith.constant 64 : index
      %in_prefix = arith.cmpi slt, %k, %c : index
      %causal = arith.cmpi sle, %k, %q : index
      %visible = arith.ori %in_prefix, %causal : i1
      flash.yield %visible : i1
    } : tensor<?x16x?x?xf32>
    ```
  }];
  let arguments = (ins Flash_FloatTensor:$input, Flash_MaskAttr:$mask,
                       Variadic<Flash_MaskOperand>:$mask_operands);
  let results = (outs Flash_FloatTensor:$result);
  let regions = (region AnyRegion:$mask_mod);
  // Unqualified (`<causal>`): a qualified attribute before `:` would be
  // ambiguous with a typed attribute.
  let assemblyFormat = [{
    $input $mask (`mod` (`(` $mask_operands^ `:` type($mask_operands) `)`)? $mask_mod^)? attr-dict
    `:` type($result)
  }];
  let hasVerifier = 1;
  let hasRegionVerifier = 1;
  let extraClassDeclaration = [{
    bool hasMaskMod() { return !getMaskMod().empty(); }
  }];
}

def Flash_ScoreOp : Flash_Op<"score", [AllTypesMatch<["input", "result"]>, IsolatedFromAbove]> {
  let summary = "rewrite attention scores elementwise by a score modifier";
  let description = [{
    The input is a score matrix [..., Sq, Sk]. Each entry s becomes the
    region's value at (s, q, k) (the last two indices; or s, batch, head, q, k
    of a [B, H, Sq, Sk] input): a score function as flash.attention's
    `score_mod` (ScoreFunction.h), reading the tensors `mod(%t : types)`.
    flash-fuse-attention moves it into the attention's `score_mod` when every
    scale of the scores comes before it (the region sees scale · q·k).

    ```mlir
    %b = flash.score %s mod(%slopes : tensor<16xf32>) {
    ^bb0(%x: f32, %b: index, %h: index, %q: index, %k: index, %m: tensor<16xf32>):
      ...
      flash.yield %y : f32
    } : tensor<?x16x?x?xbf16>
    ```
  }];
  let arguments = (ins Flash_FloatTensor:$input, Variadic<Flash_ScoreOperand>:$score_operands);
  let results = (outs Flash_FloatTensor:$result);
  let regions = (region SizedRegion<1>:$score_mod);
  let assemblyFormat = [{
    $input `mod` (`(` $score_operands^ `:` type($score_operands) `)`)? $score_mod attr-dict `:` type($result)
  }];
  let hasVerifier = 1;
  let hasRegionVerifier = 1;
}

def Flash_SoftmaxOp : Flash_UnaryOp<"softmax"> {
  let summary = "softmax over the last dimension";
  let description = [{
    `result[..., j] = exp(x[..., j] - max) / sum_k exp(x[..., k] - max)`.
    A row that is entirely -inf (every key masked) is defined as all zeros,
    the same convention as flash.attention's output for such a row.
  }];
  let hasVerifier = 1;
}

def Flash_GeluOp : Flash_Op<"gelu", [SameOperandsAndResultType]> {
  let summary = "Gaussian error linear unit";
  let description = [{
    `erf`:  gelu(x) = 0.5·x·(1 + erf(x / sqrt(2))).
    `tanh`: gelu(x) = 0.5·x·(1 + tanh(sqrt(2/pi)·(x + 0.044715·x³))).

    ```mlir
    %y = flash.gelu tanh %x : tensor<?x4096xbf16>
    ```
  }];
  let arguments = (ins Flash_GeluApproximation:$approximation, Flash_FloatTensor:$input);
  let results = (outs Flash_FloatTensor:$result);
  let assemblyFormat = "$approximation $input attr-dict `:` type($result)";
}

def Flash_SiluOp : Flash_UnaryOp<"silu"> {
  let summary = "x · sigmoid(x)";
}

def Flash_ReluOp : Flash_UnaryOp<"relu"> {
  let summary = "max(x, 0)";
}

def Flash_SigmoidOp : Flash_UnaryOp<"sigmoid"> {
  let summary = "1 / (1 + exp(-x)) (a mixture of experts' sigmoid gating)";
}

//===----------------------------------------------------------------------===//
// Routing ops: a mixture of experts spelled as a graph (flash-fuse-moe)
//===----------------------------------------------------------------------===//

def Flash_TopKOp : Flash_Op<"top_k"> {
  let summary = "the k largest values of each row and their indices";
  let description = [{
    scores [T, N] -> values [T, k], indices [T, k] (i32): row t's k largest
    values in descending order, ties to the lower index (a stable sort, as
    torch.topk and the mixture of experts' kernels choose). A 16-bit graph
    selects on the values its type holds: the float64 reference rounds a
    16-bit router matmul whose scores a top_k reads (flash.moe's meaning).

    ```mlir
    %w, %ids = flash.top_k %probs k = 2 : tensor<?x8xbf16> -> tensor<?x2xbf16>, tensor<?x2xi32>
    ```
  }];
  let arguments = (ins Flash_FloatTensor:$scores, I64Attr:$k);
  let results = (outs Flash_FloatTensor:$values, RankedTensorOf<[I32]>:$indices);
  let assemblyFormat = [{
    $scores `k` `=` $k attr-dict `:` type($scores) `->` type($values) `,` type($indices)
  }];
  let hasVerifier = 1;
}

def Flash_NormalizeOp : Flash_UnaryOp<"normalize"> {
  let summary = "each row divided by its sum (a mixture of experts' renormalised top-k weights)";
  let description = [{
    `result[..., j] = x[..., j] / sum_k x[..., k]` over the last dimension.
  }];
  let hasVerifier = 1;
}

def Flash_ExpertFfnOp : Flash_Op<"expert_ffn"> {
  let summary = "each token through the experts its ids name";
  let description = [{
    x [T, d], ids [T, k] (i32, each in [0, E)), w1 [E, d, h], optional w_up
    [E, d, h], w2 [E, h, d_out] -> rows [T, k, d_out]:
      rows[t, j] = FFN_{ids[t, j]}(x_t)
    with FFN_e expert e's flash.ffn: act(x · w1[e]) · w2[e], gated
    (act(x · w1[e]) ⊙ (x · w_up[e])) · w2[e]. The per-expert half of a
    mixture of experts spelled as a graph; flash.combine sums the rows.

    ```mlir
    %rows = flash.expert_ffn silu %x, %ids, %w_gate up %w_up, %w_down
        : (tensor<?x4096xbf16>, tensor<?x2xi32>, tensor<8x4096x14336xbf16>, tensor<8x4096x14336xbf16>,
           tensor<8x14336x4096xbf16>) -> tensor<?x2x4096xbf16>
    ```
  }];
  let arguments = (ins Flash_Activation:$activation, Flash_FloatTensor:$input, RankedTensorOf<[I32]>:$ids,
                       Flash_FloatTensor:$w1, Optional<Flash_FloatTensor>:$w_up, Flash_FloatTensor:$w2);
  let results = (outs Flash_FloatTensor:$result);
  let assemblyFormat = [{
    $activation $input `,` $ids `,` $w1 (`up` $w_up^)? `,` $w2 attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Flash_CombineOp : Flash_Op<"combine"> {
  let summary = "the weighted sum of each token's k rows";
  let description = [{
    rows [T, k, N], weights [T, k] -> result [T, N]:
    `result[t] = sum_j weights[t, j] · rows[t, j]`.

    ```mlir
    %y = flash.combine %rows, %w : tensor<?x2x4096xbf16>, tensor<?x2xbf16> -> tensor<?x4096xbf16>
    ```
  }];
  let arguments = (ins Flash_FloatTensor:$rows, Flash_FloatTensor:$weights);
  let results = (outs Flash_FloatTensor:$result);
  let assemblyFormat = "$rows `,` $weights attr-dict `:` type($rows) `,` type($weights) `->` type($result)";
  let hasVerifier = 1;
}

def Flash_AddOp : Flash_Op<"add", [AllTypesMatch<["lhs", "result"]>]> {
  let summary = "elementwise sum, or a bias broadcast over leading dimensions";
  let description = [{
    `rhs` has either the shape of `lhs` or the shape of its trailing
    dimensions (a bias [N] added to every row of [..., M, N]); it is broadcast
    over the leading dimensions of `lhs`. The result has the type of `lhs`.

    ```mlir
    %y = flash.add %x, %b : tensor<?x4096xbf16>, tensor<4096xbf16>
    ```
  }];
  let arguments = (ins Flash_FloatTensor:$lhs, Flash_FloatTensor:$rhs);
  let results = (outs Flash_FloatTensor:$result);
  let assemblyFormat = "$lhs `,` $rhs attr-dict `:` type($lhs) `,` type($rhs)";
  let hasVerifier = 1;
}

def Flash_MulOp : Flash_Op<"mul", [SameOperandsAndResultType, Commutative]> {
  let summary = "elementwise product (the gate of gated FFNs)";
  let arguments = (ins Flash_FloatTensor:$lhs, Flash_FloatTensor:$rhs);
  let results = (outs Flash_FloatTensor:$result);
  let assemblyFormat = "$lhs `,` $rhs attr-dict `:` type($result)";
}

//===----------------------------------------------------------------------===//
// Fused ops
//===----------------------------------------------------------------------===//

def Flash_DecodeAttentionOp : Flash_Op<"decode_attention"> {
  let summary = "attention of a few new tokens against a KV cache (decode), contiguous or paged";
  let description = [{
    Operands: query [B, Hq, T, D] (T new tokens a sequence, static, 1 to 16),
    the key and value caches, cache_seqlens [B] (i32) and, for a paged cache,
    block_table [B, W] (i32). Results: output [B, Hq, T, Dv] and lse
    [B, Hq, T] (f32, natural log). One element type (bf16 or f16) for query,
    caches and output; D and Dv static multiples of 64 up to 256.

    The caches are either contiguous, key [B, Hkv, S, D] and value
    [B, Hkv, S, Dv] (S, the capacity, may be dynamic), or paged (`page_size`
    set), key [pages, P, Hkv, D] and value [pages, P, Hkv, Dv] with P =
    page_size static, a power of two from 16 to 256: key j of sequence b is
    row j % P of page block_table[b, j / P].

    Sequence b's keys are cache rows 0 .. cache_seqlens[b] - 1, the new
    tokens' own keys included (they are appended before). Query token t sits
    at position cache_seqlens[b] - T + t; `causal` hides the keys after it.
    With L = cache_seqlens[b] and hk = h / (Hq / Hkv):
      s_j = scale · dot(query[b, h, t, :], key(b, hk, j)),  j < L (and, causal,
            j <= L - T + t)
      lse = log(sum_j exp(s_j));  out = sum_j exp(s_j - lse) · value(b, hk, j)
    A row that sees no key has lse = -inf and output 0. A length outside
    [0, capacity] or a page id outside [0, pages) among the pages a sequence
    uses is an error at run time (named with its sequence); nothing is written.

    ```mlir
    %out, %lse = flash.decode_attention %q, %k_pages, %v_pages, %lens block_table %table
        scale = 0.0883883 causal page_size = 64 num_kv_heads = 8
        : (tensor<?x32x1x128xbf16>, tensor<?x64x8x128xbf16>, tensor<?x64x8x128xbf16>, tensor<?xi32>,
           tensor<?x?xi32>) -> (tensor<?x32x1x128xbf16>, tensor<?x32x1xf32>)
    ```
  }];
  let arguments = (ins
    Flash_FloatTensor:$query,
    Flash_FloatTensor:$key_cache,
    Flash_FloatTensor:$value_cache,
    RankedTensorOf<[I32]>:$cache_seqlens,
    Optional<RankedTensorOf<[I32]>>:$block_table,
    F32Attr:$scale,
    UnitAttr:$causal,
    OptionalAttr<I64Attr>:$page_size,
    I64Attr:$num_kv_heads);
  let results = (outs Flash_FloatTensor:$output, Flash_F32Tensor:$lse);
  let assemblyFormat = [{
    $query `,` $key_cache `,` $value_cache `,` $cache_seqlens (`block_table` $block_table^)?
    `scale` `=` $scale (`causal` $causal^)? (`page_size` `=` $page_size^)? `num_kv_heads` `=` $num_kv_heads
    attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    bool isPaged() { return getPageSize().has_value(); }
    int64_t getHeadDim() { return getQuery().getType().getDimSize(3); }
    int64_t getValueHeadDim() { return getValueCache().getType().getDimSize(3); }
    int64_t getQueryTokens() { return getQuery().getType().getDimSize(2); }
    int64_t getGroup() {
      return getQuery().getType().getDimSize(1) / static_cast<int64_t>(getNumKvHeads());
    }
  }];
}

def Flash_KvAppendOp : Flash_Op<"kv_append"> {
  let summary = "the new tokens' keys and values written into a KV cache, contiguous or paged";
  let description = [{
    Operands: key [B, Hkv, T, D] and value [B, Hkv, T, Dv] (the new tokens
    of each sequence; T may be dynamic), the key and value caches (the
    layouts of flash.decode_attention: contiguous [B, Hkv, S, D] or, with
    `page_size`, paged [pages, P, Hkv, D] through block_table [B, W] i32) and
    cache_seqlens [B] (i32). Results: the caches with the new rows written
    (the caches' types). One element type (bf16 or f16); D and Dv static
    multiples of 8 (16-byte rows).

    With L = cache_seqlens[b] (the length after the append, as
    flash.decode_attention counts it), new token t of sequence b becomes row
    L - T + t of the cache (through the block table when paged):
      key_cache'(b, h, L - T + t) = key[b, h, t],
      value_cache'(b, h, L - T + t) = value[b, h, t];
    every other row is unchanged. A length below T or above the capacity, or
    a page id outside [0, pages) among the pages sequence b's rows use, is an
    error at run time (named with its sequence); nothing is written.

    The compiled program writes the caches in place: flash-tile ties the
    results to the cache operands, which must be function arguments no other
    op reads (the function returns the results, or an op after it reads
    them).

    ```mlir
    %kc2, %vc2 = flash.kv_append %k_new, %v_new into %k_cache, %v_cache, %lens page_size = 64
        block_table %table
        : (tensor<?x8x1x128xbf16>, tensor<?x8x1x128xbf16>, tensor<?x64x8x128xbf16>, tensor<?x64x8x128xbf16>,
           tensor<?xi32>, tensor<?x?xi32>) -> (tensor<?x64x8x128xbf16>, tensor<?x64x8x128xbf16>)
    ```
  }];
  let arguments = (ins
    Flash_FloatTensor:$key,
    Flash_FloatTensor:$value,
    Flash_FloatTensor:$key_cache,
    Flash_FloatTensor:$value_cache,
    RankedTensorOf<[I32]>:$cache_seqlens,
    Optional<RankedTensorOf<[I32]>>:$block_table,
    OptionalAttr<I64Attr>:$page_size);
  let results = (outs Flash_FloatTensor:$new_key_cache, Flash_FloatTensor:$new_value_cache);
  let assemblyFormat = [{
    $key `,` $value `into` $key_cache `,` $value_cache `,` $cache_seqlens (`page_size` `=` $page_size^)?
    (`block_table` $block_table^)? attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    bool isPaged() { return getPageSize().has_value(); }
    int64_t getHeadDim() { return getKey().getType().getDimSize(3); }
    int64_t getValueHeadDim() { return getValue().getType().getDimSize(3); }
    int64_t getNumKvHeads() { return getKey().getType().getDimSize(1); }
  }];
}

def Flash_VarlenAttentionOp : Flash_Op<"varlen_attention"> {
  let summary = "attention over packed variable-length sequences (flash-attn's varlen contract)";
  let description = [{
    Operands: query [Tq, Hq, D], key [Tk, Hkv, D], value [Tk, Hkv, Dv] (the
    tokens of B sequences one after another; bf16 or f16), cu_seqlens_q and
    cu_seqlens_k [B + 1] (i32 offsets). Results: output [Tq, Hq, Dv] and lse
    [Hq, Tq] (f32, natural log). Hq, Hkv, D and Dv are static; Tq, Tk and B
    may be dynamic.

    Sequence b's queries are rows cu_seqlens_q[b] .. cu_seqlens_q[b + 1] - 1
    of query and output, its keys rows cu_seqlens_k[b] .. cu_seqlens_k[b + 1]
    - 1 of key and value; with Lq and Lk its lengths, `mask` aligns each
    sequence's bottom-right corner as flash.attention does (causal: query i
    of the sequence sees keys j <= i + Lk - Lq). A row that sees no key has
    lse = -inf and output 0. Rows outside every sequence are neither read
    into any result nor written.

    Offsets are checked at run time before anything is written: cu[0] >= 0,
    no offset below the one before it, none past the tensor's rows; a bad
    entry is an error naming it.

    ```mlir
    %out, %lse = flash.varlen_attention %q, %k, %v, %cu_q, %cu_k scale = 0.0883883
        mask = #flash.mask<causal> num_kv_heads = 8
        : (tensor<?x32x128xbf16>, tensor<?x8x128xbf16>, tensor<?x8x128xbf16>, tensor<?xi32>, tensor<?xi32>)
        -> (tensor<?x32x128xbf16>, tensor<32x?xf32>)
    ```
    `softcap = 30.0` may follow the mask. flash-generate-backward gives it a
    backward (dQ, dK, dV over the same packed layout; sm_90a).
  }];
  let arguments = (ins
    Flash_FloatTensor:$query,
    Flash_FloatTensor:$key,
    Flash_FloatTensor:$value,
    RankedTensorOf<[I32]>:$cu_seqlens_q,
    RankedTensorOf<[I32]>:$cu_seqlens_k,
    F32Attr:$scale,
    Flash_MaskAttr:$mask,
    DefaultValuedAttr<F32Attr, "0.0f">:$softcap,
    I64Attr:$num_kv_heads);
  let results = (outs Flash_FloatTensor:$output, Flash_F32Tensor:$lse);
  let assemblyFormat = [{
    $query `,` $key `,` $value `,` $cu_seqlens_q `,` $cu_seqlens_k `scale` `=` $scale `mask` `=` $mask
    (`softcap` `=` $softcap^)? `num_kv_heads` `=` $num_kv_heads attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    int64_t getHeadDim() { return getQuery().getType().getDimSize(2); }
    int64_t getValueHeadDim() { return getValue().getType().getDimSize(2); }
    int64_t getGroup() {
      return getQuery().getType().getDimSize(1) / static_cast<int64_t>(getNumKvHeads());
    }
  }];
}

def Flash_AttentionOp : Flash_Op<"attention", [IsolatedFromAbove, AttrSizedOperandSegments]> {
  let summary = "fused scaled-dot-product attention with log-sum-exp";
  let description = [{
    Operands: query [B, Hq, Sq, D], key [B, Hkv, Sk, D], value [B, Hkv, Sk, Dv]
    (one element type: bf16, f16 or f32). Results: output [B, Hq, Sq, Dv] in
    that element type, and lse [B, Hq, Sq] in f32. B, Sq and Sk may be dynamic;
    Hq, Hkv, D and Dv are static. A size is static in every tensor that has it
    or dynamic in all (as in every fused op: each tensor is checked at launch
    on its own, so a static batch of 1 in K beside a dynamic one in Q would
    let a batch of 2 read K past its end).

    For each batch b, query head h and query row i, with kv head
    hk = h / (Hq / Hkv) (grouped-query attention: consecutive query heads
    share a kv head; num_kv_heads == Hkv):
      s_j   = scale · dot(query[b, h, i, :], key[b, hk, j, :])
      s_j   = softcap · tanh(s_j / softcap)          (only when softcap > 0)
      s_j   = -inf  where key j is not visible from row i under `mask`
      lse   = log(sum_j exp(s_j))                     (natural log, f32)
      P_j   = exp(s_j - lse)
      out   = sum_j P_j · value[b, hk, j, :]
    Masks align the bottom-right corner when Sq != Sk, as in FlashAttention-2:
    causal lets row i see keys j <= i + Sk - Sq (see `#flash.mask`). A row
    that sees no key has lse = -inf and output 0.

    `key_offset = %off` (an i32 known at run time) replaces Sk - Sq: row i
    sits at key position i + %off. Context-parallel attention needs it: a
    query chunk and a key chunk of one long sequence are aligned by their
    global positions, not by their ends. The compiled programs take it as the
    scalar parameter `key_offset`; every int32 value is valid.

    ```mlir
    %out, %lse = flash.attention %q, %k, %v scale = 0.0883883 mask = #flash.mask<causal>
        num_kv_heads = 8
        : (tensor<?x32x?x128xbf16>, tensor<?x8x?x128xbf16>, tensor<?x8x?x128xbf16>)
        -> (tensor<?x32x?x128xbf16>, tensor<?x32x?xf32>)
    ```
    `softcap = 30.0` may follow the mask; it is omitted when 0.

    `mask_mod` (optional) hides more keys: a region of two index arguments,
    the query row q and the key row k (0-based rows of query and key, as
    FlexAttention's q_idx and kv_idx), yielding an i1 — true when key k is
    visible from query q. Its body is integer arithmetic (IndexFunction.h:
    arith constant, addi, subi, muli, divsi, ceildivsi, floordivsi, remsi,
    minsi, maxsi, signed cmpi, andi / ori / xori on i1, select). A key is
    visible when both `mask` and `mask_mod` let it be; the kernels skip blocks
    the modifier hides whole and mask elementwise only blocks it hides in
    part. Prefix-LM over a 4096-token prefix, causal after it:
    ```mlir
    ... mask = #flash.mask<none> num_kv_heads = 8 mask_mod {
    ^bb0(%q: index, %k: index):
      %prefix = arith.constant 4096 : index
      %in_prefix = arith.cmpi slt, %k, %prefix : index
      %causal = arith.cmpi sle, %k, %q : index
      %visible = arith.ori %in_prefix, %causal : i1
      flash.yield %visible : i1
    } : ...
    ```
    Not combined with `key_offset` (the modifier sees row indices).

    The region may instead take four indices, FlexAttention's
    (b, h, q_idx, kv_idx): the batch and the query head too. Tensors it reads
    are operands of the op, listed after `mask_mod` and passed to the region
    as tensor arguments after the indices; it reads them with tensor.extract
    (a computed position outside a tensor reads 0) and arith.index_cast. A
    tensor read at an index argument itself (ids[q], slopes[h]) must hold that
    index's range along that dimension (B, Hq, Sq or Sk): the verifier refuses
    a static size that does not, and the compiled programs refuse a run-time
    one at launch, naming the tensor, rather than read the missing entries as
    0. A causal mask within documents, `doc` holding each token's document id
    (at least max(Sq, Sk) of them):
    ```mlir
    ... mask = #flash.mask<causal> num_kv_heads = 8 mask_mod(%doc) {
    ^bb0(%q: index, %k: index, %ids: tensor<?xi32>):
      %dq = tensor.extract %ids[%q] : tensor<?xi32>
      %dk = tensor.extract %ids[%k] : tensor<?xi32>
      %iq = arith.index_cast %dq : i32 to index
      %ik = arith.index_cast %dk : i32 to index
      %same = arith.cmpi eq, %iq, %ik : index
      flash.yield %same : i1
    } : (..., tensor<?xi32>) -> ...
    ```
    The kernels skip the blocks such a modifier hides whole: a small kernel
    before each attention kernel classifies every 64 x 64 block from the
    tensors' values (no mask is built on the host, nothing is recompiled
    when the values change).

    `score_mod` (optional, after `mask_mod`) rewrites each score before the
    mask and the softmax, FlexAttention's score_mod: a region of the score s
    (f32, scale · q·k), then (q, k) or (b, h, q, k) and one tensor argument per
    operand (f32 or i32), yielding the f32 the softmax sees
    (ScoreFunction.h: f32 arith and math.tanh / exp / log / sqrt / absf, the
    index ops of a mask modifier, arith.sitofp of an index). The backward
    differentiates the region with respect to s. ALiBi, `slopes` holding a
    slope per query head:
    ```mlir
    ... score_mod(%slopes) {
    ^bb0(%s: f32, %b: index, %h: index, %q: index, %k: index, %m: tensor<32xf32>):
      %slope = tensor.extract %m[%h] : tensor<32xf32>
      %d = arith.subi %k, %q : index
      %d64 = arith.index_cast %d : index to i64
      %df = arith.sitofp %d64 : i64 to f32
      %bias = arith.mulf %slope, %df : f32
      %r = arith.addf %s, %bias : f32
      flash.yield %r : f32
    } : (..., tensor<32xf32>) -> ...
    ```
    Not combined with `softcap` (write the cap in the region) nor with
    `key_offset`.
  }];
  let arguments = (ins
    Flash_FloatTensor:$query,
    Flash_FloatTensor:$key,
    Flash_FloatTensor:$value,
    Optional<I32>:$key_offset,
    Variadic<Flash_MaskOperand>:$mask_operands,
    Variadic<Flash_ScoreOperand>:$score_operands,
    F32Attr:$scale,
    Flash_MaskAttr:$mask,
    DefaultValuedAttr<F32Attr, "0.0f">:$softcap,
    I64Attr:$num_kv_heads);
  let results = (outs Flash_FloatTensor:$output, Flash_F32Tensor:$lse);
  let regions = (region AnyRegion:$mask_mod, AnyRegion:$score_mod);
  let assemblyFormat = [{
    $query `,` $key `,` $value (`key_offset` `=` $key_offset^)? `scale` `=` $scale `mask` `=` qualified($mask)
    (`softcap` `=` $softcap^)? `num_kv_heads` `=` $num_kv_heads
    (`mask_mod` (`(` $mask_operands^ `)`)? $mask_mod^)?
    (`score_mod` (`(` $score_operands^ `)`)? $score_mod^)?
    attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
  let hasRegionVerifier = 1;
  let extraClassDeclaration = [{
    float getScaleValue() { return getScale().convertToFloat(); }
    /// 0 means no soft-capping.
    float getSoftcapValue() { return getSoftcap().convertToFloat(); }
    bool hasSoftcap() { return getSoftcapValue() != 0.0f; }
    int64_t getNumQueryHeads() { return getQuery().getType().getDimSize(1); }
    /// Query heads served by one kv head (Hq / Hkv).
    int64_t getGroupSize() {
      return getNumQueryHeads() / static_cast<int64_t>(getNumKvHeads());
    }
    int64_t getHeadDim() { return getQuery().getType().getDimSize(3); }
    int64_t getValueHeadDim() { return getValue().getType().getDimSize(3); }
    bool hasMaskMod() { return !getMaskMod().empty(); }
    bool hasScoreMod() { return !getScoreMod().empty(); }
  }];
}

def Flash_YieldOp : Op<Flash_Dialect, "yield", [Pure, ParentOneOf<["AttentionOp", "MaskOp", "ScoreOp"]>, Terminator, ReturnLike]> {
  let summary = "the value of a modifier region: a mask modifier's i1 (flash.attention's mask_mod, flash.mask's "
                "mod; true: the key is visible) or a score modifier's f32 (flash.attention's score_mod)";
  let arguments = (ins AnyTypeOf<[I1, F32]>:$value);
  let assemblyFormat = "$value attr-dict `:` type($value)";
}

def Flash_FfnOp : Flash_Op<"ffn", [AttrSizedOperandSegments]> {
  let summary = "fused feed-forward block: two matmuls around an activation";
  let description = [{
    input x [..., M, d] (rank >= 2), w1 [d, h], w2 [h, d_out];
    result [..., M, d_out]. All operands share one element type.

    Plain form (no `up` operand):
      y = act(x · w1 + b1) · w2 + b2
    Gated form (with `up` w_up [d, h]; w1 is then the gate projection):
      y = (act(x · w1) ⊙ (x · w_up)) · w2 + b2
    b1 [h] and b2 [d_out] are optional; the gated form takes no b1.

    ```mlir
    %y = flash.ffn gelu_tanh %x, %w1 bias %b1, %w2 bias %b2
        : (tensor<?x1024xbf16>, tensor<1024x4096xbf16>, tensor<4096xbf16>,
           tensor<4096x1024xbf16>, tensor<1024xbf16>) -> tensor<?x1024xbf16>
    %z = flash.ffn silu %x, %wg up %wu, %w2
        : (tensor<?x4096xbf16>, tensor<4096x11008xbf16>, tensor<4096x11008xbf16>,
           tensor<11008x4096xbf16>) -> tensor<?x4096xbf16>
    ```
  }];
  let arguments = (ins
    Flash_Activation:$activation,
    Flash_FloatTensor:$input,
    Flash_FloatTensor:$w1,
    Optional<Flash_FloatTensor>:$b1,
    Optional<Flash_FloatTensor>:$w_up,
    Flash_FloatTensor:$w2,
    Optional<Flash_FloatTensor>:$b2);
  let results = (outs Flash_FloatTensor:$result);
  let assemblyFormat = [{
    $activation $input `,` $w1 (`bias` $b1^)? (`up` $w_up^)? `,` $w2 (`bias` $b2^)?
    attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    bool isGated() { return static_cast<bool>(getWUp()); }
    int64_t getModelDim() { return getW1().getType().getDimSize(0); }
    int64_t getHiddenDim() { return getW1().getType().getDimSize(1); }
    int64_t getOutputDim() { return getW2().getType().getDimSize(1); }
  }];
}

def Flash_MoeOp : Flash_Op<"moe"> {
  let summary = "mixture-of-experts FFN: a router, top-k gating and a weighted sum of expert FFNs";
  let description = [{
    input x [T, d]; router [d, E]; w1 [E, d, h] (the gate projection when
    `up` is given); w_up [E, d, h] (optional: gated experts); w2 [E, h, d_out];
    result y [T, d_out]. One element type for all; d, h, d_out and E static.

    For each token t (row of x), with FFN_e expert e's flash.ffn (no biases):
      logits = x_t · router                            (E values)
      s      = softmax(logits) | sigmoid(logits)       (`gating`)
      K      = the top_k experts by logit, the order of s (ties: the lower
               expert index first; not by s itself, which rounds to ties)
      w_e    = s_e, divided by sum_{e' in K} s_e' when `renormalize`
      y_t    = sum_{e in K} w_e · FFN_e(x_t)
    FFN_e(x) = act(x · w1[e]) · w2[e], or (act(x · w1[e]) ⊙ (x · w_up[e])) ·
    w2[e] gated. Every token goes to its top_k experts (dropless: no
    capacity); an expert may receive no token.

    ```mlir
    %y = flash.moe silu %x, %router, %w_gate up %w_up, %w_down top_k = 2 gating = softmax renormalize
        : (tensor<?x4096xbf16>, tensor<4096x8xbf16>, tensor<8x4096x14336xbf16>, tensor<8x4096x14336xbf16>,
           tensor<8x14336x4096xbf16>) -> tensor<?x4096xbf16>
    ```
    flash-tile lowers it to seven #tile.moe kernels (router, select, plan,
    permute, the grouped expert GEMMs, combine; docs/design/moe.md) for 16-bit
    tensors, E a multiple of 8 up to 256, top_k <= 32, d, h and d_out multiples
    of 8, on sm_90a; flash-generate-backward gives it a training forward and a
    backward (x, the router and every weight). A 16-bit layer chooses its
    experts on the router logits rounded to the element type (the graph
    spelling's matmul result), as the float64 reference does
    (reference/moe.h). flash-fuse-moe builds it from its graph spelling:
    flash.matmul (the router), flash.softmax or flash.sigmoid, flash.top_k,
    [flash.normalize], flash.expert_ffn, flash.combine.
  }];
  let arguments = (ins
    Flash_Activation:$activation,
    Flash_FloatTensor:$input,
    Flash_FloatTensor:$router,
    Flash_FloatTensor:$w1,
    Optional<Flash_FloatTensor>:$w_up,
    Flash_FloatTensor:$w2,
    I64Attr:$top_k,
    Flash_MoeGating:$gating,
    UnitAttr:$renormalize);
  let results = (outs Flash_FloatTensor:$result);
  let assemblyFormat = [{
    $activation $input `,` $router `,` $w1 (`up` $w_up^)? `,` $w2 `top_k` `=` $top_k `gating` `=` $gating
    (`renormalize` $renormalize^)? attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    bool isGated() { return static_cast<bool>(getWUp()); }
    int64_t getExperts() { return getRouter().getType().getDimSize(1); }
    int64_t getModelDim() { return getW1().getType().getDimSize(1); }
    int64_t getHiddenDim() { return getW1().getType().getDimSize(2); }
    int64_t getOutputDim() { return getW2().getType().getDimSize(2); }
  }];
}

#endif // FLASHC_DIALECT_FLASH_IR_FLASHOPS_TD
