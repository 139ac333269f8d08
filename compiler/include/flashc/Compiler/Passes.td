//===- Passes.td - flashc passes -------------------------*- tablegen -*-===//
//
// One pass per def; its implementation lives in compiler/lib/<DefName>.cpp and
// its flag is flash-<kebab-name>; its lit test is test/Passes/<flag>.mlir.
//
//===----------------------------------------------------------------------===//
#ifndef FLASHC_COMPILER_PASSES_TD
#define FLASHC_COMPILER_PASSES_TD

include "mlir/Pass/PassBase.td"

def FuseAttention : Pass<"flash-fuse-attention"> {
  let summary = "Fuse matmul-scale-mask-softmax-matmul chains into flash.attention";
  let description = [{
    Rewrites  P = softmax(mask(scale · Q·Kᵀ)),  O = P·V  into one
    `flash.attention` (its lse result unused). Accepted spellings:
      - Kᵀ as `flash.matmul %q, %k transpose_b` with k [B, Hkv, Sk, D];
      - Kᵀ [B, Hkv, D, Sk] produced by a flash.matmul (kt = op(A)·op(B), A and
        B with identical batch dims): the pass re-emits K = op(B)ᵀ·op(A)ᵀ.
        A Kᵀ function argument does not fuse (the dialect has no transpose);
      - the scale on the scores, on Q or on K (`flash.scale` by a constant);
        several scales multiply; the total must be positive;
      - the mask before or after the scale (at most one mask);
      - rank-4 [B, H, S, D] operands, GQA through grouped head broadcasting
        (the batch dims of Q, K and V must be equal);
      - modifiers as `flash.mask ... mod` / `flash.score` regions, or as
        elementwise arith / math ops on the scores before the softmax (index
        tensors and gathers by tensor.generate, splat constants): lifted into
        those regions first, `select(c, x, -inf)` with c free of the scores
        a mask (LiftScoreOps.cpp); a warning names what does not lift.
    Nothing fuses when the scores or probabilities have another use.
  }];
  let dependentDialects = ["::mlir::flash::FlashDialect"];
}

def FuseFFN : Pass<"flash-fuse-ffn"> {
  let summary = "Fuse matmul-[bias]-activation-matmul-[bias] into flash.ffn";
  let description = [{
    Rewrites  y = act(x·W1 [+ b1])·W2 [+ b2]  (act: gelu tanh/erf, silu, relu)
    and the gated form  y = (act(x·Wg) ⊙ (x·Wu))·W2 [+ b2]  into `flash.ffn`.
    Weights must be rank 2 and untransposed; intermediates must have no other
    use.
  }];
  let dependentDialects = ["::mlir::flash::FlashDialect"];
}

def FuseMoE : Pass<"flash-fuse-moe"> {
  let summary = "Fuse a mixture of experts' graph spelling into flash.moe";
  let description = [{
    Rewrites  logits = x·router;  s = softmax(logits) | sigmoid(logits);
    w, ids = top_k(s);  [w = normalize(w)];  rows = expert_ffn(x, ids, ...);
    y = combine(rows, w)  into `flash.moe` (FuseMoE.cpp). Intermediates must
    have no other use; a warning at the combine names what blocks the rewrite.
  }];
  let dependentDialects = ["::mlir::flash::FlashDialect"];
}

//===----------------------------------------------------------------------===//
// Tile level (docs/tile-dialect.md)
//===----------------------------------------------------------------------===//

def FlashTile : Pass<"flash-tile", "::mlir::ModuleOp"> {
  let summary = "Tile fused flash.attention / flash.ffn into tile.kernels and a tile program";
  let description = [{
    Each func.func whose body is fused ops (`flash.attention`, `flash.ffn`)
    and a return becomes a tile program of the same name (a func.func marked
    `tile.program`): arguments are the inputs, then one output per result, then
    one lse output per attention op whose lse is not returned (saved for the
    backward); the body allocates intermediate tensors and launches the
    kernels, built beside it in the module, in order.
    Attention: grid (query block, head, batch), scf.for over key blocks with
    online softmax; masks become loop bounds plus an element mask on boundary
    blocks only. FFN: back-to-back fused kernel when it fits the target
    (`ffn_fused`), else two GEMMs with fused bias+activation epilogues.
    A function that mixes fused ops with unfused graph ops is rejected.
  }];
  let options = [
    Option<"target", "target", "std::string", /*default=*/"\"sm_90a\"",
           "GPU target whose default block sizes the kernels are built with (sm_80, sm_90a)">,
    Option<"ffnPlan", "ffn-plan", "std::string", /*default=*/"\"auto\"",
           "FFN plan: auto (fused when it fits the target), fused, two-kernel">,
    Option<"tuningTable", "tuning-table", "std::string", /*default=*/"\"\"",
           "tuning table whose attention_forward entries say where a document modifier's forward "
           "takes the segment form (segments=1; empty: the target's built-in table; none: the "
           "hand rules; else a file)">,
  ];
  let dependentDialects = ["::mlir::tile::TileDialect", "::mlir::arith::ArithDialect",
                           "::mlir::scf::SCFDialect", "::mlir::func::FuncDialect"];
}

def GenerateBackward : Pass<"flash-generate-backward", "::mlir::ModuleOp"> {
  let summary = "Generate the backward tile program of a fused flash.attention / flash.ffn";
  let description = [{
    Runs on the flash level and emits the gradient directly as a tile program
    `@<func>_backward` plus its kernels (the forward func is left for
    flash-tile). Attention (from the saved lse): preprocess D = rowsum(dO∘O)
    and zero the f32 dQ accumulator; main kernel over key blocks recomputing
    P block by block (dV, dK, atomic dQ; GQA sums over the query-head group);
    postprocess dQ -> output dtype. With `deterministic`, dQ comes from a
    separate kernel over query blocks instead of atomics. FFN (plain or
    gated, input rank 2 or 3): from pre = x·W1 + b1 and h = act(pre) that
    the training forward `@<func>_forward_train` saved (the function cloned,
    marked flash.train_forward for flash-tile), dh = dy·W2ᵀ (a GEMM) and
    dpre = dh∘act'(pre) (elementwise), then GEMMs for dW2 = hᵀ·dy,
    dW1 = xᵀ·dpre, dx = dpre·W1ᵀ and column sums for the bias gradients. One backward program covers all
    independent fused ops of a function (operands are function arguments used
    once, results only returned); other functions get a warning and no
    backward.
  }];
  let options = [
    Option<"deterministic", "deterministic", "bool", /*default=*/"false",
           "compute dQ with a kernel over query blocks instead of f32 atomics">,
    Option<"form", "form", "std::string", /*default=*/"\"auto\"",
           "backward kernel form: rows, transposed (S^T form: Pᵀ, dSᵀ in registers; "
           "per-query lse and D as column vectors), auto (the tuning table's entry, else the "
           "target's faster one)">,
    Option<"target", "target", "std::string", /*default=*/"\"sm_90a\"",
           "GPU target whose default block sizes the kernels are built with">,
    Option<"tuningTable", "tuning-table", "std::string", /*default=*/"\"\"",
           "tuning table whose attention_backward entries pick the form under form=auto "
           "(empty: the target's built-in table; none: the hand rule; else a file)">,
  ];
  let dependentDialects = ["::mlir::tile::TileDialect", "::mlir::arith::ArithDialect",
                           "::mlir::scf::SCFDialect", "::mlir::func::FuncDialect"];
}

def PlanMemory : Pass<"flash-plan-memory", "::mlir::ModuleOp"> {
  let summary = "Choose block sizes, stages and shared-memory offsets of tile kernels";
  let description = [{
    For every tile.kernel with a recipe (`spec`): picks block_m/block_n/
    block_k/warps/stages from the target description (Target.h) or, where the
    tuning table has an entry for the kernel's key (Tuning.h), from that entry
    (named in the kernel's `tuning` attribute, with the schedule knobs
    flash-warp-specialize and flash-order-blocks read), overridden by the
    options, rebuilds the kernel when they change, then lays out shared
    memory: each shared tile (tile.load, tile.copy) gets `smem_offset` (bytes,
    128-aligned, `buffers` copies) and the kernel `smem_bytes`. A plan that
    does not fit the target's shared memory is rejected with the overflow in
    bytes; one that does not split into 16-row warp bands is rejected too.
  }];
  let options = [
    Option<"target", "target", "std::string", /*default=*/"\"sm_90a\"",
           "GPU target (sm_80, sm_90a)">,
    Option<"blockM", "block-m", "int64_t", /*default=*/"0", "override Br / GEMM rows (0: target default)">,
    Option<"blockN", "block-n", "int64_t", /*default=*/"0", "override Bc / GEMM columns (0: target default)">,
    Option<"blockK", "block-k", "int64_t", /*default=*/"0", "override the GEMM K step (0: target default)">,
    Option<"warps", "warps", "int64_t", /*default=*/"0", "override warps per block (0: target default)">,
    Option<"stages", "stages", "int64_t", /*default=*/"0", "override pipeline stages (0: target default)">,
    Option<"tuningTable", "tuning-table", "std::string", /*default=*/"\"\"",
           "tuning table whose entries replace the hand rules' plans: empty, the target's built-in "
           "table (compiler/tuning/<target>.txt); none, the hand rules only; else a file (docs/tuning.md)">,
  ];
  let dependentDialects = ["::mlir::tile::TileDialect", "::mlir::arith::ArithDialect",
                           "::mlir::scf::SCFDialect"];
}

def WarpSpecialize : Pass<"flash-warp-specialize", "::mlir::ModuleOp"> {
  let summary = "Give each warp-specialised kernel its schedule: warp roles, register budgets, ring";
  let description = [{
    For every tile.kernel planned as wgmma_ws_sm90 (flash-plan-memory), sets
    `schedule = #tile.warp_specialized<...>`: one TMA producer warpgroup that
    gives its registers back, `warps` / 4 consumer warpgroups that take them,
    what stays resident and what streams through a ring of the plan's stages
    (attention forward: Q resident, K and V streamed; fused FFN: the row block
    of x resident, W1's columns and W2's rows of each hidden block streamed),
    whether the consumers ping-pong (the option, or the ping_pong of the kernel's
    tuning-table entry, its `tuning` attribute; the persistent GEMM's by its
    entry or its hand rule, wsGemmPingPong, and the attention backward's by its
    entry or, without one, where four dSᵀ buffers fit, wsBackwardTakesTurns:
    never by the option; an entry asking turns of a backward that cannot take
    them, wsBackwardTurnsTake, is an error). The emitter prints this schedule; it does not
    decide it (the order of the query-row blocks is flash-order-blocks').
    Kernels of other strategies are left alone; the CPU executor runs the
    tile body, which the schedule does not change.
  }];
  let options = [
    Option<"pingPong", "ping-pong", "bool", /*default=*/"true",
           "consumer warpgroups take turns issuing their GEMMs (measured +8-21 % at D = 128)">,
    Option<"producerRegisters", "producer-registers", "int64_t", /*default=*/"24",
           "the producer warpgroup's register budget (setmaxnreg.dec)">,
    Option<"consumerRegisters", "consumer-registers", "int64_t", /*default=*/"240",
           "each consumer warpgroup's register budget (setmaxnreg.inc); unset: what the "
           "warpgroup count leaves beside the producer, up to 240 (two: 240, three: 160)">,
  ];
  let dependentDialects = ["::mlir::tile::TileDialect"];
}

def OrderBlocks : Pass<"flash-order-blocks", "::mlir::ModuleOp"> {
  let summary = "Choose the order in which each kernel's blocks take their tiles";
  let description = [{
    Sets `grid_order = #tile.grid_order<...>` where the order matters: the
    GEMM-family kernels (gemm, gated_gemm, gemm_split_k)
    take their 2-D tile grid grouped, `group` row blocks of one column block
    at a time, so that the blocks in flight share A rows and B columns in L2
    (launched row-major, a wave covers every row block of one column and
    re-reads all of A from DRAM for each column); a causal attention forward
    takes its query-row blocks longest first (row block i sees i + 1 key
    blocks). A warp-specialised attention forward may instead run on a
    persistent grid (`persistent`: min(units, SMs) blocks looping over pairs
    of query-row blocks n-1-i and i of one head, equal work under a causal
    mask). A warp-specialised attention backward's main kernel under a window
    or a mask modifier takes its (key block, head, batch) grid in head groups (`head-groups` (head, batch)
    pairs a group, key blocks slowest inside one: the longest key blocks of
    several heads start together; 1 keeps the launch order). The emitter
    prints the order. A kernel whose tuning-table entry
    gives a group or persistent (its `tuning` attribute) takes that instead of
    the option's.
  }];
  let options = [
    Option<"group", "group", "int64_t", /*default=*/"8", "row blocks a group (1-64)">,
    Option<"persistent", "persistent", "bool", /*default=*/"false",
           "warp-specialised attention forwards on a persistent grid">,
    Option<"headGroups", "head-groups", "int64_t", /*default=*/"::flashc::kWsBackwardHeadGroups",
           "(head, batch) pairs a group of the warp-specialised attention backward's grid (1-64; 1: the "
           "launch order)">,
  ];
  let dependentDialects = ["::mlir::tile::TileDialect"];
}

#endif // FLASHC_COMPILER_PASSES_TD
