// flash-run-tile --run-program: mixture-of-experts kernels whose tensors' sizes disagree (random arguments: dynamic
// dims take --dynamic-size, i32 values non-decreasing in [0, 4)). The CPU executor names the disagreement; it read
// or wrote past a tensor's end, or wrote a silently short result. test/Numerics/executor-errors.mlir runs each
// program (MOE-* prefixes).

#plan8 = #tile.moe<role = moe_plan, experts = 8, top_k = 2, sigmoid = false, renormalize = true,
                   activation = silu, gated = false, element_type = bf16>
#plan256 = #tile.moe<role = moe_plan, experts = 256, top_k = 2, sigmoid = false, renormalize = true,
                     activation = silu, gated = false, element_type = bf16>
#combine2 = #tile.moe<role = moe_combine, experts = 8, top_k = 2, sigmoid = false, renormalize = true,
                      activation = silu, gated = false, element_type = bf16>
#combine1 = #tile.moe<role = moe_combine, experts = 8, top_k = 1, sigmoid = false, renormalize = true,
                      activation = silu, gated = false, element_type = bf16>
#down = #tile.moe<role = moe_down, experts = 8, top_k = 2, sigmoid = false, renormalize = true,
                  activation = silu, gated = false, element_type = bf16>
#dgrad = #tile.moe<role = moe_data_grad, experts = 8, top_k = 2, sigmoid = false, renormalize = true,
                   activation = silu, gated = false, element_type = bf16>
#wgrad = #tile.moe<role = moe_weight_grad, experts = 8, top_k = 2, sigmoid = false, renormalize = true,
                   activation = silu, gated = false, element_type = bf16>
#act256 = #tile.moe<role = moe_activation_grad, experts = 256, top_k = 2, sigmoid = false, renormalize = true,
                    activation = silu, gated = false, element_type = bf16>
#scatter1 = #tile.moe<role = moe_scatter_grad, experts = 8, top_k = 1, sigmoid = false, renormalize = true,
                      activation = silu, gated = false, element_type = bf16>
#permute1 = #tile.moe<role = moe_permute, experts = 8, top_k = 1, sigmoid = false, renormalize = true,
                      activation = silu, gated = false, element_type = bf16>

// @plan_short_offsets: offsets [8] where the plan writes E + 1 = 9 values.
tile.kernel @short_offsets_plan(%logits: !tile.tensor<?x8xbf16>, %counts: !tile.tensor<8xi32>,
                                %offsets: !tile.tensor<8xi32>, %groups: !tile.tensor<?xi32>)
    attributes {block_m = 8 : i64, block_n = 1 : i64, spec = #plan8,
                grid = [#tile.grid<1>, #tile.grid<1>, #tile.grid<1>],
                stages = 1 : i64, strategy = #tile.strategy<mma_sync_sm80>, warps = 8 : i64} {
  %bx = tile.program_id x
  tile.moe_block(%logits, %counts, %offsets, %groups) at [%bx, %bx, %bx]
      : !tile.tensor<?x8xbf16>, !tile.tensor<8xi32>, !tile.tensor<8xi32>, !tile.tensor<?xi32>
  tile.return
}
func.func @plan_short_offsets(%logits: !tile.tensor<?x8xbf16>, %counts: !tile.tensor<8xi32>,
                              %offsets: !tile.tensor<8xi32>, %groups: !tile.tensor<?xi32>) attributes {tile.program} {
  tile.launch @short_offsets_plan(%logits, %counts, %offsets, %groups)
      : !tile.tensor<?x8xbf16>, !tile.tensor<8xi32>, !tile.tensor<8xi32>, !tile.tensor<?xi32>
  return
}

// @plan_short_groups: 256 experts' random counts (mostly 1 to 3: a row block each) where the row-block table
// holds 16 blocks (the table was written only as far as it went, a silently short plan).
tile.kernel @short_groups_plan(%logits: !tile.tensor<?x256xbf16>, %counts: !tile.tensor<256xi32>,
                               %offsets: !tile.tensor<257xi32>, %groups: !tile.tensor<?xi32>)
    attributes {block_m = 8 : i64, block_n = 1 : i64, spec = #plan256,
                grid = [#tile.grid<1>, #tile.grid<1>, #tile.grid<1>],
                stages = 1 : i64, strategy = #tile.strategy<mma_sync_sm80>, warps = 8 : i64} {
  %bx = tile.program_id x
  tile.moe_block(%logits, %counts, %offsets, %groups) at [%bx, %bx, %bx]
      : !tile.tensor<?x256xbf16>, !tile.tensor<256xi32>, !tile.tensor<257xi32>, !tile.tensor<?xi32>
  tile.return
}
func.func @plan_short_groups(%logits: !tile.tensor<?x256xbf16>, %counts: !tile.tensor<256xi32>,
                             %offsets: !tile.tensor<257xi32>, %groups: !tile.tensor<?xi32>) attributes {tile.program} {
  tile.launch @short_groups_plan(%logits, %counts, %offsets, %groups)
      : !tile.tensor<?x256xbf16>, !tile.tensor<256xi32>, !tile.tensor<257xi32>, !tile.tensor<?xi32>
  return
}

// @combine_short_ids: T = 17 tokens x top_k 2 where the routing tensors hold 17 values.
tile.kernel @short_ids_combine(%expert_out: !tile.tensor<?x64xbf16>, %ids: !tile.tensor<?xi32>,
                               %weights: !tile.tensor<?xf32>, %ranks: !tile.tensor<?xi32>,
                               %offsets: !tile.tensor<9xi32>, %y: !tile.tensor<?x64xbf16>)
    attributes {block_m = 8 : i64, block_n = 1 : i64, spec = #combine2,
                grid = [#tile.grid<ceildiv(arg5[0], 8)>, #tile.grid<1>, #tile.grid<1>],
                stages = 1 : i64, strategy = #tile.strategy<mma_sync_sm80>, warps = 8 : i64} {
  %bx = tile.program_id x
  tile.moe_block(%expert_out, %ids, %weights, %ranks, %offsets, %y) at [%bx, %bx, %bx]
      : !tile.tensor<?x64xbf16>, !tile.tensor<?xi32>, !tile.tensor<?xf32>, !tile.tensor<?xi32>, !tile.tensor<9xi32>,
        !tile.tensor<?x64xbf16>
  tile.return
}
func.func @combine_short_ids(%expert_out: !tile.tensor<?x64xbf16>, %ids: !tile.tensor<?xi32>,
                             %weights: !tile.tensor<?xf32>, %ranks: !tile.tensor<?xi32>, %offsets: !tile.tensor<9xi32>,
                             %y: !tile.tensor<?x64xbf16>) attributes {tile.program} {
  tile.launch @short_ids_combine(%expert_out, %ids, %weights, %ranks, %offsets, %y)
      : !tile.tensor<?x64xbf16>, !tile.tensor<?xi32>, !tile.tensor<?xf32>, !tile.tensor<?xi32>, !tile.tensor<9xi32>,
        !tile.tensor<?x64xbf16>
  return
}

// @combine_row: a routed row's offset + rank past expert_out's one row.
tile.kernel @row_combine(%expert_out: !tile.tensor<1x64xbf16>, %ids: !tile.tensor<?xi32>, %weights: !tile.tensor<?xf32>,
                         %ranks: !tile.tensor<?xi32>, %offsets: !tile.tensor<9xi32>, %y: !tile.tensor<?x64xbf16>)
    attributes {block_m = 8 : i64, block_n = 1 : i64, spec = #combine1,
                grid = [#tile.grid<ceildiv(arg5[0], 8)>, #tile.grid<1>, #tile.grid<1>],
                stages = 1 : i64, strategy = #tile.strategy<mma_sync_sm80>, warps = 8 : i64} {
  %bx = tile.program_id x
  tile.moe_block(%expert_out, %ids, %weights, %ranks, %offsets, %y) at [%bx, %bx, %bx]
      : !tile.tensor<1x64xbf16>, !tile.tensor<?xi32>, !tile.tensor<?xf32>, !tile.tensor<?xi32>, !tile.tensor<9xi32>,
        !tile.tensor<?x64xbf16>
  tile.return
}
func.func @combine_row(%expert_out: !tile.tensor<1x64xbf16>, %ids: !tile.tensor<?xi32>, %weights: !tile.tensor<?xf32>,
                       %ranks: !tile.tensor<?xi32>, %offsets: !tile.tensor<9xi32>,
                       %y: !tile.tensor<?x64xbf16>) attributes {tile.program} {
  tile.launch @row_combine(%expert_out, %ids, %weights, %ranks, %offsets, %y)
      : !tile.tensor<1x64xbf16>, !tile.tensor<?xi32>, !tile.tensor<?xf32>, !tile.tensor<?xi32>, !tile.tensor<9xi32>,
        !tile.tensor<?x64xbf16>
  return
}

// @down_wrong_k: hidden's 96 columns against w2's K of 64.
tile.kernel @wrong_k_down(%logits: !tile.tensor<?x8xbf16>, %hidden: !tile.tensor<?x96xbf16>,
                          %w2: !tile.tensor<8x64x40xbf16>, %groups: !tile.tensor<?xi32>,
                          %expert_out: !tile.tensor<?x40xbf16>)
    attributes {block_m = 128 : i64, block_n = 128 : i64, spec = #down,
                grid = [#tile.grid<ceildiv(arg4[0], 128)>, #tile.grid<1>, #tile.grid<1>],
                stages = 1 : i64, strategy = #tile.strategy<mma_sync_sm80>, warps = 8 : i64} {
  %bx = tile.program_id x
  tile.moe_block(%logits, %hidden, %w2, %groups, %expert_out) at [%bx, %bx, %bx]
      : !tile.tensor<?x8xbf16>, !tile.tensor<?x96xbf16>, !tile.tensor<8x64x40xbf16>, !tile.tensor<?xi32>,
        !tile.tensor<?x40xbf16>
  tile.return
}
func.func @down_wrong_k(%logits: !tile.tensor<?x8xbf16>, %hidden: !tile.tensor<?x96xbf16>,
                        %w2: !tile.tensor<8x64x40xbf16>, %groups: !tile.tensor<?xi32>,
                        %expert_out: !tile.tensor<?x40xbf16>) attributes {tile.program} {
  tile.launch @wrong_k_down(%logits, %hidden, %w2, %groups, %expert_out)
      : !tile.tensor<?x8xbf16>, !tile.tensor<?x96xbf16>, !tile.tensor<8x64x40xbf16>, !tile.tensor<?xi32>,
        !tile.tensor<?x40xbf16>
  return
}

// @data_grad_rows: a of 17 rows, c of 256.
tile.kernel @rows_data_grad(%logits: !tile.tensor<?x8xbf16>, %a: !tile.tensor<?x40xbf16>,
                            %w: !tile.tensor<8x96x40xbf16>, %groups: !tile.tensor<?xi32>, %c: !tile.tensor<256x96xbf16>)
    attributes {block_m = 128 : i64, block_n = 128 : i64, spec = #dgrad,
                grid = [#tile.grid<ceildiv(arg4[0], 128)>, #tile.grid<1>, #tile.grid<1>],
                stages = 1 : i64, strategy = #tile.strategy<mma_sync_sm80>, warps = 8 : i64} {
  %bx = tile.program_id x
  tile.moe_block(%logits, %a, %w, %groups, %c) at [%bx, %bx, %bx]
      : !tile.tensor<?x8xbf16>, !tile.tensor<?x40xbf16>, !tile.tensor<8x96x40xbf16>, !tile.tensor<?xi32>,
        !tile.tensor<256x96xbf16>
  tile.return
}
func.func @data_grad_rows(%logits: !tile.tensor<?x8xbf16>, %a: !tile.tensor<?x40xbf16>, %w: !tile.tensor<8x96x40xbf16>,
                          %groups: !tile.tensor<?xi32>, %c: !tile.tensor<256x96xbf16>) attributes {tile.program} {
  tile.launch @rows_data_grad(%logits, %a, %w, %groups, %c)
      : !tile.tensor<?x8xbf16>, !tile.tensor<?x40xbf16>, !tile.tensor<8x96x40xbf16>, !tile.tensor<?xi32>,
        !tile.tensor<256x96xbf16>
  return
}

// @down_short_groups: groups[0] = 1 (--seed=8; 128 rows: one row block) in a table of one value.
tile.kernel @short_groups_down(%logits: !tile.tensor<?x8xbf16>, %hidden: !tile.tensor<?x96xbf16>,
                               %w2: !tile.tensor<8x96x40xbf16>, %groups: !tile.tensor<1xi32>,
                               %expert_out: !tile.tensor<?x40xbf16>)
    attributes {block_m = 128 : i64, block_n = 128 : i64, spec = #down,
                grid = [#tile.grid<ceildiv(arg4[0], 128)>, #tile.grid<1>, #tile.grid<1>],
                stages = 1 : i64, strategy = #tile.strategy<mma_sync_sm80>, warps = 8 : i64} {
  %bx = tile.program_id x
  tile.moe_block(%logits, %hidden, %w2, %groups, %expert_out) at [%bx, %bx, %bx]
      : !tile.tensor<?x8xbf16>, !tile.tensor<?x96xbf16>, !tile.tensor<8x96x40xbf16>, !tile.tensor<1xi32>,
        !tile.tensor<?x40xbf16>
  tile.return
}
func.func @down_short_groups(%logits: !tile.tensor<?x8xbf16>, %hidden: !tile.tensor<?x96xbf16>,
                             %w2: !tile.tensor<8x96x40xbf16>, %groups: !tile.tensor<1xi32>,
                             %expert_out: !tile.tensor<?x40xbf16>) attributes {tile.program} {
  tile.launch @short_groups_down(%logits, %hidden, %w2, %groups, %expert_out)
      : !tile.tensor<?x8xbf16>, !tile.tensor<?x96xbf16>, !tile.tensor<8x96x40xbf16>, !tile.tensor<1xi32>,
        !tile.tensor<?x40xbf16>
  return
}

// @weight_grad_rows: a of 17 rows, b of 256.
tile.kernel @rows_weight_grad(%logits: !tile.tensor<?x8xbf16>, %a: !tile.tensor<?x64xbf16>,
                              %b: !tile.tensor<256x96xbf16>, %offsets: !tile.tensor<9xi32>,
                              %dw: !tile.tensor<8x64x96xbf16>)
    attributes {block_m = 64 : i64, block_n = 64 : i64, spec = #wgrad,
                grid = [#tile.grid<64>, #tile.grid<1>, #tile.grid<1>],
                stages = 1 : i64, strategy = #tile.strategy<mma_sync_sm80>, warps = 8 : i64} {
  %bx = tile.program_id x
  tile.moe_block(%logits, %a, %b, %offsets, %dw) at [%bx, %bx, %bx]
      : !tile.tensor<?x8xbf16>, !tile.tensor<?x64xbf16>, !tile.tensor<256x96xbf16>, !tile.tensor<9xi32>,
        !tile.tensor<8x64x96xbf16>
  tile.return
}
func.func @weight_grad_rows(%logits: !tile.tensor<?x8xbf16>, %a: !tile.tensor<?x64xbf16>, %b: !tile.tensor<256x96xbf16>,
                            %offsets: !tile.tensor<9xi32>, %dw: !tile.tensor<8x64x96xbf16>) attributes {tile.program} {
  tile.launch @rows_weight_grad(%logits, %a, %b, %offsets, %dw)
      : !tile.tensor<?x8xbf16>, !tile.tensor<?x64xbf16>, !tile.tensor<256x96xbf16>, !tile.tensor<9xi32>,
        !tile.tensor<8x64x96xbf16>
  return
}

// @act_grad_rows: the plan puts 128 rows or more in use (256 experts' random counts), pre holds 17.
tile.kernel @offsets_plan(%logits: !tile.tensor<?x256xbf16>, %counts: !tile.tensor<256xi32>,
                          %offsets: !tile.tensor<257xi32>, %groups: !tile.tensor<300xi32>)
    attributes {block_m = 8 : i64, block_n = 1 : i64, spec = #plan256,
                grid = [#tile.grid<1>, #tile.grid<1>, #tile.grid<1>],
                stages = 1 : i64, strategy = #tile.strategy<mma_sync_sm80>, warps = 8 : i64} {
  %bx = tile.program_id x
  tile.moe_block(%logits, %counts, %offsets, %groups) at [%bx, %bx, %bx]
      : !tile.tensor<?x256xbf16>, !tile.tensor<256xi32>, !tile.tensor<257xi32>, !tile.tensor<300xi32>
  tile.return
}
tile.kernel @rows_act_grad(%logits: !tile.tensor<?x256xbf16>, %pre: !tile.tensor<?x64xbf16>,
                           %dh: !tile.tensor<?x64xbf16>, %offsets: !tile.tensor<257xi32>,
                           %d_pre: !tile.tensor<?x64xbf16>)
    attributes {block_m = 8 : i64, block_n = 1 : i64, spec = #act256,
                grid = [#tile.grid<ceildiv(arg1[0], 16)>, #tile.grid<1>, #tile.grid<1>],
                stages = 1 : i64, strategy = #tile.strategy<mma_sync_sm80>, warps = 8 : i64} {
  %bx = tile.program_id x
  tile.moe_block(%logits, %pre, %dh, %offsets, %d_pre) at [%bx, %bx, %bx]
      : !tile.tensor<?x256xbf16>, !tile.tensor<?x64xbf16>, !tile.tensor<?x64xbf16>, !tile.tensor<257xi32>,
        !tile.tensor<?x64xbf16>
  tile.return
}
func.func @act_grad_rows(%logits: !tile.tensor<?x256xbf16>, %counts: !tile.tensor<256xi32>,
                         %pre: !tile.tensor<?x64xbf16>, %dh: !tile.tensor<?x64xbf16>,
                         %d_pre: !tile.tensor<?x64xbf16>) attributes {tile.program} {
  %offsets = tile.alloc_tensor() : !tile.tensor<257xi32>
  %groups = tile.alloc_tensor() : !tile.tensor<300xi32>
  tile.launch @offsets_plan(%logits, %counts, %offsets, %groups)
      : !tile.tensor<?x256xbf16>, !tile.tensor<256xi32>, !tile.tensor<257xi32>, !tile.tensor<300xi32>
  tile.launch @rows_act_grad(%logits, %pre, %dh, %offsets, %d_pre)
      : !tile.tensor<?x256xbf16>, !tile.tensor<?x64xbf16>, !tile.tensor<?x64xbf16>, !tile.tensor<257xi32>,
        !tile.tensor<?x64xbf16>
  return
}

// @act_grad_shape: dh of 32 columns, pre of 64.
tile.kernel @shape_act_grad(%logits: !tile.tensor<?x256xbf16>, %pre: !tile.tensor<?x64xbf16>,
                            %dh: !tile.tensor<?x32xbf16>, %offsets: !tile.tensor<257xi32>,
                            %d_pre: !tile.tensor<?x64xbf16>)
    attributes {block_m = 8 : i64, block_n = 1 : i64, spec = #act256,
                grid = [#tile.grid<ceildiv(arg1[0], 16)>, #tile.grid<1>, #tile.grid<1>],
                stages = 1 : i64, strategy = #tile.strategy<mma_sync_sm80>, warps = 8 : i64} {
  %bx = tile.program_id x
  tile.moe_block(%logits, %pre, %dh, %offsets, %d_pre) at [%bx, %bx, %bx]
      : !tile.tensor<?x256xbf16>, !tile.tensor<?x64xbf16>, !tile.tensor<?x32xbf16>, !tile.tensor<257xi32>,
        !tile.tensor<?x64xbf16>
  tile.return
}
func.func @act_grad_shape(%logits: !tile.tensor<?x256xbf16>, %pre: !tile.tensor<?x64xbf16>,
                          %dh: !tile.tensor<?x32xbf16>, %offsets: !tile.tensor<257xi32>,
                          %d_pre: !tile.tensor<?x64xbf16>) attributes {tile.program} {
  tile.launch @shape_act_grad(%logits, %pre, %dh, %offsets, %d_pre)
      : !tile.tensor<?x256xbf16>, !tile.tensor<?x64xbf16>, !tile.tensor<?x32xbf16>, !tile.tensor<257xi32>,
        !tile.tensor<?x64xbf16>
  return
}

// @scatter_shape: expert_out of 256 rows, d_expert_out of 17.
tile.kernel @shape_scatter(%dy: !tile.tensor<?x64xbf16>, %expert_out: !tile.tensor<256x64xbf16>,
                           %counts: !tile.tensor<8xi32>, %ids: !tile.tensor<?xi32>, %weights: !tile.tensor<?xf32>,
                           %ranks: !tile.tensor<?xi32>, %offsets: !tile.tensor<9xi32>,
                           %d_expert_out: !tile.tensor<?x64xbf16>, %d_weights: !tile.tensor<?xf32>)
    attributes {block_m = 8 : i64, block_n = 1 : i64, spec = #scatter1,
                grid = [#tile.grid<ceildiv(arg0[0], 8)>, #tile.grid<1>, #tile.grid<1>],
                stages = 1 : i64, strategy = #tile.strategy<mma_sync_sm80>, warps = 8 : i64} {
  %bx = tile.program_id x
  tile.moe_block(%dy, %expert_out, %counts, %ids, %weights, %ranks, %offsets, %d_expert_out,
    %d_weights) at [%bx, %bx, %bx]
      : !tile.tensor<?x64xbf16>, !tile.tensor<256x64xbf16>, !tile.tensor<8xi32>, !tile.tensor<?xi32>,
        !tile.tensor<?xf32>, !tile.tensor<?xi32>, !tile.tensor<9xi32>, !tile.tensor<?x64xbf16>, !tile.tensor<?xf32>
  tile.return
}
func.func @scatter_shape(%dy: !tile.tensor<?x64xbf16>, %expert_out: !tile.tensor<256x64xbf16>,
                         %counts: !tile.tensor<8xi32>, %ids: !tile.tensor<?xi32>, %weights: !tile.tensor<?xf32>,
                         %ranks: !tile.tensor<?xi32>, %offsets: !tile.tensor<9xi32>,
                         %d_expert_out: !tile.tensor<?x64xbf16>,
                         %d_weights: !tile.tensor<?xf32>) attributes {tile.program} {
  tile.launch @shape_scatter(%dy, %expert_out, %counts, %ids, %weights, %ranks, %offsets, %d_expert_out, %d_weights)
      : !tile.tensor<?x64xbf16>, !tile.tensor<256x64xbf16>, !tile.tensor<8xi32>, !tile.tensor<?xi32>,
        !tile.tensor<?xf32>, !tile.tensor<?xi32>, !tile.tensor<9xi32>, !tile.tensor<?x64xbf16>, !tile.tensor<?xf32>
  return
}

// @permute_shape: permuted rows of 32 columns, x's of 64.
tile.kernel @shape_permute(%x: !tile.tensor<?x64xbf16>, %counts: !tile.tensor<8xi32>, %ids: !tile.tensor<?xi32>,
                           %ranks: !tile.tensor<?xi32>, %offsets: !tile.tensor<9xi32>,
                           %permuted: !tile.tensor<?x32xbf16>)
    attributes {block_m = 8 : i64, block_n = 1 : i64, spec = #permute1,
                grid = [#tile.grid<ceildiv(arg5[0], 8)>, #tile.grid<1>, #tile.grid<1>],
                stages = 1 : i64, strategy = #tile.strategy<mma_sync_sm80>, warps = 8 : i64} {
  %bx = tile.program_id x
  tile.moe_block(%x, %counts, %ids, %ranks, %offsets, %permuted) at [%bx, %bx, %bx]
      : !tile.tensor<?x64xbf16>, !tile.tensor<8xi32>, !tile.tensor<?xi32>, !tile.tensor<?xi32>, !tile.tensor<9xi32>,
        !tile.tensor<?x32xbf16>
  tile.return
}
func.func @permute_shape(%x: !tile.tensor<?x64xbf16>, %counts: !tile.tensor<8xi32>, %ids: !tile.tensor<?xi32>,
                         %ranks: !tile.tensor<?xi32>, %offsets: !tile.tensor<9xi32>,
                         %permuted: !tile.tensor<?x32xbf16>) attributes {tile.program} {
  tile.launch @shape_permute(%x, %counts, %ids, %ranks, %offsets, %permuted)
      : !tile.tensor<?x64xbf16>, !tile.tensor<8xi32>, !tile.tensor<?xi32>, !tile.tensor<?xi32>, !tile.tensor<9xi32>,
        !tile.tensor<?x32xbf16>
  return
}

// @select_wide_logits: logits of 9 columns for 8 experts (the rows were read 8 apart).
tile.kernel @wide_logits_select(%logits: !tile.tensor<?x9xbf16>, %counts: !tile.tensor<8xi32>,
                                %ids: !tile.tensor<?xi32>, %weights: !tile.tensor<?xf32>, %ranks: !tile.tensor<?xi32>)
    attributes {block_m = 8 : i64, block_n = 1 : i64,
                grid = [#tile.grid<ceildiv(arg0[0], 8)>, #tile.grid<1>, #tile.grid<1>],
                spec = #tile.moe<role = moe_select, experts = 8, top_k = 1, sigmoid = false, renormalize = false,
                                 activation = silu, gated = false, element_type = bf16>,
                stages = 1 : i64, strategy = #tile.strategy<mma_sync_sm80>, warps = 8 : i64} {
  %bx = tile.program_id x
  tile.moe_block(%logits, %counts, %ids, %weights, %ranks) at [%bx, %bx, %bx]
      : !tile.tensor<?x9xbf16>, !tile.tensor<8xi32>, !tile.tensor<?xi32>, !tile.tensor<?xf32>, !tile.tensor<?xi32>
  tile.return
}
func.func @select_wide_logits(%logits: !tile.tensor<?x9xbf16>, %ids: !tile.tensor<?xi32>,
                              %weights: !tile.tensor<?xf32>, %ranks: !tile.tensor<?xi32>) attributes {tile.program} {
  %counts = tile.alloc_tensor() {tile.zero_fill} : !tile.tensor<8xi32>
  tile.launch @wide_logits_select(%logits, %counts, %ids, %weights, %ranks)
      : !tile.tensor<?x9xbf16>, !tile.tensor<8xi32>, !tile.tensor<?xi32>, !tile.tensor<?xf32>, !tile.tensor<?xi32>
  return
}

// @down_block_m: 256-row tiles over 128-row expert groups (a tile would take two experts' rows with one's weights).
tile.kernel @block_m_down(%logits: !tile.tensor<?x8xbf16>, %hidden: !tile.tensor<?x96xbf16>,
                          %w2: !tile.tensor<8x96x40xbf16>, %groups: !tile.tensor<?xi32>,
                          %expert_out: !tile.tensor<?x40xbf16>)
    attributes {block_m = 256 : i64, block_n = 128 : i64, spec = #down,
                grid = [#tile.grid<ceildiv(arg4[0], 256)>, #tile.grid<1>, #tile.grid<1>],
                stages = 1 : i64, strategy = #tile.strategy<mma_sync_sm80>, warps = 8 : i64} {
  %bx = tile.program_id x
  %zero = arith.constant 0 : index
  tile.moe_block(%logits, %hidden, %w2, %groups, %expert_out) at [%bx, %zero, %zero]
      : !tile.tensor<?x8xbf16>, !tile.tensor<?x96xbf16>, !tile.tensor<8x96x40xbf16>, !tile.tensor<?xi32>,
        !tile.tensor<?x40xbf16>
  tile.return
}
func.func @down_block_m(%logits: !tile.tensor<?x8xbf16>, %hidden: !tile.tensor<?x96xbf16>,
                        %w2: !tile.tensor<8x96x40xbf16>, %groups: !tile.tensor<?xi32>,
                        %expert_out: !tile.tensor<?x40xbf16>) attributes {tile.program} {
  tile.launch @block_m_down(%logits, %hidden, %w2, %groups, %expert_out)
      : !tile.tensor<?x8xbf16>, !tile.tensor<?x96xbf16>, !tile.tensor<8x96x40xbf16>, !tile.tensor<?xi32>,
        !tile.tensor<?x40xbf16>
  return
}
