// The CPU executor runs hand-written tile programs as written
// (--run-program) and reports bad programs with an error naming the op and the
// block, exit status 2, never a crash.
//
// RUN: flash-run-tile %s --run-program=copy_rows --dynamic-size=40 | FileCheck %s --check-prefix=OK
// OK: @copy_rows: ran 3 blocks
// The copy is exact: the output's sum equals the input's.
// OK: argument 0 sum [[SUM:.*]]
// OK-NEXT: argument 1 sum [[SUM]]
//
// RUN: not flash-run-tile %s --run-program=past_the_end --dynamic-size=40 2>&1 | FileCheck %s --check-prefix=OOB
// OOB: flash-run-tile: @past_the_end: {{.*}} 'tile.load': index 40 out of range for dimension 0 of size 40 (kernel @reads_past_the_end, block (2, 0, 0))
//
// The float64 reference of a graph refuses integers past 2^53 (it would round them; INT64_MIN / -1 trapped):
// RUN: not flash-run-tile %S/Inputs/graph-integer-past-2p53.mlir 2>&1 | FileCheck %s --check-prefix=BIG-INT
// BIG-INT: graph-integer-past-2p53.mlir:7:11: error: the flash graph evaluator cannot evaluate this op: an integer past 2^53, which the float64 reference cannot hold exactly
//
// Options that would make the check meaningless or the tensors unallocatable (a negative size aborted in
// std::length_error, a NaN range passed every check):
// RUN: not flash-run-tile %s --dynamic-size=-1 2>&1 | FileCheck %s --check-prefix=BAD-SIZE
// BAD-SIZE: flash-run-tile: --dynamic-size must be in [1, 4096], got -1
// RUN: not flash-run-tile %s --input-range=nan 2>&1 | FileCheck %s --check-prefix=BAD-RANGE
// BAD-RANGE: flash-run-tile: --input-range must be a finite positive number, got nan
// RUN: not flash-run-tile %s --tolerance=nan 2>&1 | FileCheck %s --check-prefix=BAD-TOLERANCE
// BAD-TOLERANCE: flash-run-tile: --tolerance must be a finite number >= 0, got nan
// RUN: not flash-eval %s --dynamic-size=100000000000 2>&1 | FileCheck %s --check-prefix=EVAL-SIZE
// EVAL-SIZE: flash-eval: --dynamic-size must be in [1, 4096], got 100000000000
//
// A static shape past 2^28 values is refused by name, the tensor never allocated (it aborted in the allocator):
// RUN: not flash-run-tile %S/Inputs/ffn-huge-static.mlir 2>&1 | FileCheck %s --check-prefix=HUGE-TILE
// HUGE-TILE: ffn-huge-static.mlir:3:1: error: flash-run-tile: a tensor of shape 1048576x1048576 holds more than 2^28 values, past what the float64 reference evaluates
// RUN: not flash-eval %S/Inputs/ffn-huge-static.mlir 2>&1 | FileCheck %s --check-prefix=HUGE-EVAL
// HUGE-EVAL: ffn-huge-static.mlir:3:1: error: a tensor of shape 1048576x1048576 holds more than 2^28 values
//
// A result's static size past the query's dynamic one (the lse's 2^36 rows) and a grid past 2^24 blocks are refused, not
// allocated (it aborted) or run (for ever):
// RUN: not flash-run-tile %S/Inputs/attention-lse-huge-static.mlir 2>&1 | FileCheck %s --check-prefix=HUGE-LSE
// HUGE-LSE: attention-lse-huge-static.mlir:5:14: error: 'flash.attention' op lse has shape [1, 1, 68719476736], expected [B, Hq, Sq] = [1, 1, ?] (dimension 2 is 68719476736 here and dynamic in another operand: a size must be static in every tensor that has it, or dynamic in all)
// RUN: not flash-run-tile %S/Inputs/huge-grid.mlir --run-program=p 2>&1 | FileCheck %s --check-prefix=HUGE-GRID
// HUGE-GRID: 'tile.kernel': grid 2147483647 x 2147483647 x 2147483647: more blocks than the CPU executor runs (2^24)
//
// The graph evaluator's own tensors (a static constant, run-time extents, a matmul's outer product) are refused by
// shape, never allocated past the bound:
// RUN: not flash-eval %S/Inputs/eval-oversized.mlir --split-input-file --dynamic-size=4096 2>&1 | FileCheck %s --check-prefix=EVAL-OVERSIZED
// EVAL-OVERSIZED: error: the graph evaluator cannot make a tensor of shape [1099511627776]: more than 2^28 values
// EVAL-OVERSIZED: error: the graph evaluator cannot make a tensor of shape [-1]: a negative size
// EVAL-OVERSIZED: error: the graph evaluator cannot make a tensor of shape [4194304, 4194304]: more than 2^28 values
// EVAL-OVERSIZED: error: the graph evaluator cannot make a tensor of shape [4096, 4096, 4096]: more than 2^28 values
//
// A graph op's static result size that the evaluation contradicts is an error, not a tensor of another shape:
// RUN: not flash-eval %S/Inputs/eval-result-shape.mlir --dynamic-size=3 2>&1 | FileCheck %s --check-prefix=EVAL-RESULT
// EVAL-RESULT: eval-result-shape.mlir:5:8: error: at run time this result has shape [3, 64], where its type 'tensor<68719476736x64xf32>' says otherwise
//
// A decode kernel launched without its check kernel: the lengths are checked again, an error names the block:
// RUN: not flash-run-tile %S/Inputs/kv-append-without-check.mlir --run-program=p 2>&1 | FileCheck %s --check-prefix=NO-CHECK
// NO-CHECK: 'tile.decode_block': sequence 0's length 0 does not hold its 17 new tokens (kernel @append, block (0, 0, 0))
// The same for a decode's split kernel: a length past the cache, a sequence with no length, a page id past the cache
// (random lengths and ids in [0, 4), non-decreasing; 200 sequences make the bad ones occur):
// RUN: not flash-run-tile %S/Inputs/decode-split-without-check.mlir --run-program=dense --dynamic-size=200 2>&1 | FileCheck %s --check-prefix=SPLIT-LEN
// SPLIT-LEN: 'tile.decode_block': sequence {{[0-9]+}}'s length {{[23]}} is past the cache's 1 rows (kernel @dense_split,
// RUN: not flash-run-tile %S/Inputs/decode-split-without-check.mlir --run-program=no_length 2>&1 | FileCheck %s --check-prefix=SPLIT-NO-LEN
// SPLIT-NO-LEN: 'tile.decode_block': sequence 1 has no length (seqlens holds 1) (kernel @short_split, block (0, 0, 1))
// RUN: not flash-run-tile %S/Inputs/decode-split-without-check.mlir --run-program=paged --dynamic-size=200 2>&1 | FileCheck %s --check-prefix=SPLIT-PAGE
// SPLIT-PAGE: 'tile.decode_block': sequence {{[0-9]+}}'s page 0 names cache page {{[123]}} of 1 (kernel @paged_split,
// The sequence's place in the caches and the caches' geometry (a sequence past a dense cache's batch or the block
// table's rows, a value cache shorter than the key cache: they segfaulted or read past the value cache):
// RUN: not flash-run-tile %S/Inputs/decode-split-without-check.mlir --run-program=cache_batch 2>&1 | FileCheck %s --check-prefix=SPLIT-BATCH
// SPLIT-BATCH: 'tile.decode_block': sequence 1 is past the cache's 1 sequences (kernel @batch_split, block (0, 0, 1))
// RUN: not flash-run-tile %S/Inputs/decode-split-without-check.mlir --run-program=table_rows 2>&1 | FileCheck %s --check-prefix=SPLIT-TABLE
// SPLIT-TABLE: 'tile.decode_block': sequence 1 is past the block table's 1 sequences (kernel @table_split, block (0, 0, 1))
// RUN: not flash-run-tile %S/Inputs/decode-split-without-check.mlir --run-program=short_values 2>&1 | FileCheck %s --check-prefix=SPLIT-VALUES
// SPLIT-VALUES: 'tile.decode_block': v_cache is 17x1x1x64, not 17x1x8x64 (k_cache's, with the value dim) (kernel @vshort_split,
// RUN: not flash-run-tile %S/Inputs/decode-split-without-check.mlir --run-program=q_batch 2>&1 | FileCheck %s --check-prefix=SPLIT-Q-BATCH
// SPLIT-Q-BATCH: 'tile.decode_block': sequence 2 is past q's batch of 2 (kernel @q_batch_split, block (0, 0, 2))
//
// RUN: not flash-run-tile %S/Inputs/moe-select-short-ids.mlir --run-program=p 2>&1 | FileCheck %s --check-prefix=SHORT-IDS
// SHORT-IDS: 'tile.moe_block': ids holds 17 values, fewer than the 34 the routing writes or reads (kernel @select, block (0, 0, 0))
// The other MoE roles check the sizes they take on trust (one input, a program a disagreement): short routing
// tables, a routed row past the rows, a GEMM's K or rows, the rows in use past the pre-activations, rows walked
// together of different shapes (they read or wrote past a tensor, or wrote a silently short table).
// RUN: not flash-run-tile %S/Inputs/moe-unchecked-sizes.mlir --run-program=plan_short_offsets 2>&1 | FileCheck %s --check-prefix=MOE-PLAN-OFFSETS
// MOE-PLAN-OFFSETS: 'tile.moe_block': offsets holds 8 values, fewer than the 9 the routing writes or reads (kernel @short_offsets_plan, block (0, 0, 0))
// RUN: not flash-run-tile %S/Inputs/moe-unchecked-sizes.mlir --run-program=plan_short_groups 2>&1 | FileCheck %s --check-prefix=MOE-PLAN-GROUPS
// MOE-PLAN-GROUPS: 'tile.moe_block': groups holds 17 values, fewer than the {{[0-9]+}} the routing writes or reads (kernel @short_groups_plan,
// RUN: not flash-run-tile %S/Inputs/moe-unchecked-sizes.mlir --run-program=combine_short_ids 2>&1 | FileCheck %s --check-prefix=MOE-COMBINE-IDS
// MOE-COMBINE-IDS: 'tile.moe_block': ids holds 17 values, fewer than the 34 the routing writes or reads (kernel @short_ids_combine, block (0, 0, 0))
// RUN: not flash-run-tile %S/Inputs/moe-unchecked-sizes.mlir --run-program=combine_row --dynamic-size=200 2>&1 | FileCheck %s --check-prefix=MOE-COMBINE-ROW
// MOE-COMBINE-ROW: 'tile.moe_block': permuted row {{[1-9]}} out of the workspace's 1 (kernel @row_combine,
// RUN: not flash-run-tile %S/Inputs/moe-unchecked-sizes.mlir --run-program=down_wrong_k 2>&1 | FileCheck %s --check-prefix=MOE-DOWN-K
// MOE-DOWN-K: 'tile.moe_block': w2 is 8x64x40, not 8x96x40 (experts x hidden's columns x expert_out's columns) (kernel @wrong_k_down,
// RUN: not flash-run-tile %S/Inputs/moe-unchecked-sizes.mlir --run-program=data_grad_rows 2>&1 | FileCheck %s --check-prefix=MOE-DGRAD-ROWS
// MOE-DGRAD-ROWS: 'tile.moe_block': a is 17x40, not 256x40 (as many rows as c) (kernel @rows_data_grad,
// RUN: not flash-run-tile %S/Inputs/moe-unchecked-sizes.mlir --run-program=down_short_groups --dynamic-size=128 --seed=8 2>&1 | FileCheck %s --check-prefix=MOE-DOWN-GROUPS
// MOE-DOWN-GROUPS: 'tile.moe_block': groups holds 1 value, fewer than the 2 the routing writes or reads (kernel @short_groups_down,
// RUN: not flash-run-tile %S/Inputs/moe-unchecked-sizes.mlir --run-program=weight_grad_rows 2>&1 | FileCheck %s --check-prefix=MOE-WGRAD-ROWS
// MOE-WGRAD-ROWS: 'tile.moe_block': b is 256x96, not 17x96 (as many rows as a) (kernel @rows_weight_grad,
// RUN: not flash-run-tile %S/Inputs/moe-unchecked-sizes.mlir --run-program=act_grad_rows 2>&1 | FileCheck %s --check-prefix=MOE-ACT-ROWS
// MOE-ACT-ROWS: 'tile.moe_block': offsets[256] puts {{[0-9]+}} rows in use, past pre's 17 (kernel @rows_act_grad,
// RUN: not flash-run-tile %S/Inputs/moe-unchecked-sizes.mlir --run-program=act_grad_shape 2>&1 | FileCheck %s --check-prefix=MOE-ACT-SHAPE
// MOE-ACT-SHAPE: 'tile.moe_block': dh is 17x32, not 17x64 (pre's shape) (kernel @shape_act_grad,
// RUN: not flash-run-tile %S/Inputs/moe-unchecked-sizes.mlir --run-program=scatter_shape 2>&1 | FileCheck %s --check-prefix=MOE-SCATTER-SHAPE
// MOE-SCATTER-SHAPE: 'tile.moe_block': expert_out is 256x64, not 17x64 (d_expert_out's shape) (kernel @shape_scatter,
// RUN: not flash-run-tile %S/Inputs/moe-unchecked-sizes.mlir --run-program=permute_shape 2>&1 | FileCheck %s --check-prefix=MOE-PERMUTE-SHAPE
// MOE-PERMUTE-SHAPE: 'tile.moe_block': permuted is 17x32, not 17x64 (x's columns) (kernel @shape_permute,
// RUN: not flash-run-tile %S/Inputs/moe-unchecked-sizes.mlir --run-program=select_wide_logits 2>&1 | FileCheck %s --check-prefix=MOE-SELECT-LOGITS
// MOE-SELECT-LOGITS: 'tile.moe_block': logits is 17x9, not 17x8 (tokens x experts) (kernel @wide_logits_select,
// RUN: not flash-run-tile %S/Inputs/moe-unchecked-sizes.mlir --run-program=down_block_m --dynamic-size=256 2>&1 | FileCheck %s --check-prefix=MOE-BLOCK-M
// MOE-BLOCK-M: 'tile.moe_block': block_m = 256 does not divide an expert's 128-row groups: a tile would mix two experts' rows (kernel @block_m_down,
//
// --help lists the tools' own options, not the LLVM libraries' (it printed 300 lines of backend flags):
// RUN: flash-run-tile --help | FileCheck %s --check-prefix=HELP-TILE
// HELP-TILE: flash-run-tile options:
// HELP-TILE: --dynamic-size
// HELP-TILE-NOT: aarch64
// RUN: flash-eval --help | FileCheck %s --check-prefix=HELP-EVAL
// HELP-EVAL: flash-eval options:
// HELP-EVAL: --check-pipeline
// HELP-EVAL-NOT: amdgpu
//
// RUN: not flash-run-tile %s --run-program=missing 2>&1 | FileCheck %s --check-prefix=MISSING
// MISSING: flash-run-tile: no tile program @missing in

// Copies a [?, 32] tensor in 16-row tiles; the last tile is ragged (40 rows).
tile.kernel @copy(%src: !tile.tensor<?x32xf32>, %dst: !tile.tensor<?x32xf32>) attributes {
    grid = [#tile.grid<ceildiv(arg0[0], 16)>, #tile.grid<1>, #tile.grid<1>],
    strategy = #tile.strategy<mma_sync_sm80>, block_m = 16, block_n = 32, warps = 1, stages = 1} {
  %c0 = arith.constant 0 : index
  %c16 = arith.constant 16 : index
  %c32 = arith.constant 32 : index
  %rb = tile.program_id x
  %n = tile.dim %src, 0 : !tile.tensor<?x32xf32>
  %row0 = arith.muli %rb, %c16 : index
  %t = tile.load %src[%row0, %c0] limit [%n, %c32] : !tile.tensor<?x32xf32> -> !tile.tile<16x32xf32, shared>
  tile.store %t, %dst[%row0, %c0] limit [%n, %c32] : !tile.tile<16x32xf32, shared>, !tile.tensor<?x32xf32>
  tile.return
}
func.func @copy_rows(%src: !tile.tensor<?x32xf32>, %dst: !tile.tensor<?x32xf32>) attributes {tile.program} {
  tile.launch @copy(%src, %dst) : !tile.tensor<?x32xf32>, !tile.tensor<?x32xf32>
  return
}

// Bug: the row limit is past the tensor's end (n + 16 instead of n).
tile.kernel @reads_past_the_end(%src: !tile.tensor<?x32xf32>, %dst: !tile.tensor<?x32xf32>) attributes {
    grid = [#tile.grid<ceildiv(arg0[0], 16)>, #tile.grid<1>, #tile.grid<1>],
    strategy = #tile.strategy<mma_sync_sm80>, block_m = 16, block_n = 32, warps = 1, stages = 1} {
  %c0 = arith.constant 0 : index
  %c16 = arith.constant 16 : index
  %c32 = arith.constant 32 : index
  %rb = tile.program_id x
  %n = tile.dim %src, 0 : !tile.tensor<?x32xf32>
  %limit = arith.addi %n, %c16 : index
  %row0 = arith.muli %rb, %c16 : index
  %t = tile.load %src[%row0, %c0] limit [%limit, %c32] : !tile.tensor<?x32xf32> -> !tile.tile<16x32xf32, shared>
  tile.store %t, %dst[%row0, %c0] limit [%n, %c32] : !tile.tile<16x32xf32, shared>, !tile.tensor<?x32xf32>
  tile.return
}
func.func @past_the_end(%src: !tile.tensor<?x32xf32>, %dst: !tile.tensor<?x32xf32>) attributes {tile.program} {
  tile.launch @reads_past_the_end(%src, %dst) : !tile.tensor<?x32xf32>, !tile.tensor<?x32xf32>
  return
}
