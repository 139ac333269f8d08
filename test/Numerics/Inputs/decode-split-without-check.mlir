// flash-run-tile --run-program: a decode's split kernel launched without its decode_check kernel, on the random
// i32 arguments --run-program makes (non-decreasing, in [0, 4)). The CPU executor checks the lengths and pages again
// and names the first bad one. test/Numerics/executor-errors.mlir runs its programs.

// @dense: a cache of one row a sequence; a length of 2 or 3 is past it.
#dense = #tile.decode<role = decode_split, head_dim = 64, value_dim = 64, queries = 1, group = 2, page_size = 0,
                      causal = false, scale = 0.125 : f64, element_type = f16>
tile.kernel @dense_split(%q: !tile.tensor<?x2x1x64xf16>, %k: !tile.tensor<?x1x1x64xf16>, %v: !tile.tensor<?x1x1x64xf16>,
                   %lens: !tile.tensor<?xi32>, %out: !tile.tensor<?x2x1x64xf16>, %lse: !tile.tensor<?x2x1xf32>,
                   %o_part: !tile.tensor<?x1x2x64xf32>, %lse_part: !tile.tensor<?x1x2xf32>,
                   %status: !tile.tensor<4xi32>)
    attributes {block_m = 16 : i64, block_n = 64 : i64, spec = #dense,
                grid = [#tile.grid<1>, #tile.grid<1>, #tile.grid<arg0[0]>],
                stages = 1 : i64, strategy = #tile.strategy<mma_sync_sm80>, warps = 4 : i64} {
  %x = tile.program_id x
  %y = tile.program_id y
  %z = tile.program_id z
  tile.decode_block(%q, %k, %v, %lens, %out, %lse, %o_part, %lse_part, %status) at [%x, %y, %z]
      : !tile.tensor<?x2x1x64xf16>, !tile.tensor<?x1x1x64xf16>, !tile.tensor<?x1x1x64xf16>, !tile.tensor<?xi32>,
        !tile.tensor<?x2x1x64xf16>, !tile.tensor<?x2x1xf32>, !tile.tensor<?x1x2x64xf32>, !tile.tensor<?x1x2xf32>,
        !tile.tensor<4xi32>
  tile.return
}
func.func @dense(%q: !tile.tensor<?x2x1x64xf16>, %k: !tile.tensor<?x1x1x64xf16>, %v: !tile.tensor<?x1x1x64xf16>,
             %lens: !tile.tensor<?xi32>, %out: !tile.tensor<?x2x1x64xf16>, %lse: !tile.tensor<?x2x1xf32>,
             %o_part: !tile.tensor<?x1x2x64xf32>, %lse_part: !tile.tensor<?x1x2xf32>) attributes {tile.program} {
  %status = tile.alloc_tensor() {tile.zero_fill} : !tile.tensor<4xi32>
  tile.launch @dense_split(%q, %k, %v, %lens, %out, %lse, %o_part, %lse_part, %status)
      : !tile.tensor<?x2x1x64xf16>, !tile.tensor<?x1x1x64xf16>, !tile.tensor<?x1x1x64xf16>, !tile.tensor<?xi32>,
        !tile.tensor<?x2x1x64xf16>, !tile.tensor<?x2x1xf32>, !tile.tensor<?x1x2x64xf32>, !tile.tensor<?x1x2xf32>,
        !tile.tensor<4xi32>
  return
}


// @no_length: the lengths hold one sequence, the batch more.
tile.kernel @short_split(%q: !tile.tensor<?x2x1x64xf16>, %k: !tile.tensor<?x1x8x64xf16>, %v: !tile.tensor<?x1x8x64xf16>,
                   %lens: !tile.tensor<1xi32>, %out: !tile.tensor<?x2x1x64xf16>, %lse: !tile.tensor<?x2x1xf32>,
                   %o_part: !tile.tensor<?x1x2x64xf32>, %lse_part: !tile.tensor<?x1x2xf32>,
                   %status: !tile.tensor<4xi32>)
    attributes {block_m = 16 : i64, block_n = 64 : i64, spec = #dense,
                grid = [#tile.grid<1>, #tile.grid<1>, #tile.grid<arg0[0]>],
                stages = 1 : i64, strategy = #tile.strategy<mma_sync_sm80>, warps = 4 : i64} {
  %x = tile.program_id x
  %y = tile.program_id y
  %z = tile.program_id z
  tile.decode_block(%q, %k, %v, %lens, %out, %lse, %o_part, %lse_part, %status) at [%x, %y, %z]
      : !tile.tensor<?x2x1x64xf16>, !tile.tensor<?x1x8x64xf16>, !tile.tensor<?x1x8x64xf16>, !tile.tensor<1xi32>,
        !tile.tensor<?x2x1x64xf16>, !tile.tensor<?x2x1xf32>, !tile.tensor<?x1x2x64xf32>, !tile.tensor<?x1x2xf32>,
        !tile.tensor<4xi32>
  tile.return
}
func.func @no_length(%q: !tile.tensor<?x2x1x64xf16>, %k: !tile.tensor<?x1x8x64xf16>, %v: !tile.tensor<?x1x8x64xf16>,
             %lens: !tile.tensor<1xi32>, %out: !tile.tensor<?x2x1x64xf16>, %lse: !tile.tensor<?x2x1xf32>,
             %o_part: !tile.tensor<?x1x2x64xf32>, %lse_part: !tile.tensor<?x1x2xf32>) attributes {tile.program} {
  %status = tile.alloc_tensor() {tile.zero_fill} : !tile.tensor<4xi32>
  tile.launch @short_split(%q, %k, %v, %lens, %out, %lse, %o_part, %lse_part, %status)
      : !tile.tensor<?x2x1x64xf16>, !tile.tensor<?x1x8x64xf16>, !tile.tensor<?x1x8x64xf16>, !tile.tensor<1xi32>,
        !tile.tensor<?x2x1x64xf16>, !tile.tensor<?x2x1xf32>, !tile.tensor<?x1x2x64xf32>, !tile.tensor<?x1x2xf32>,
        !tile.tensor<4xi32>
  return
}


// @paged: a cache of one 64-row page; the table's later ids (1 to 3) name pages past it.
#paged = #tile.decode<role = decode_split, head_dim = 64, value_dim = 64, queries = 1, group = 2, page_size = 64,
                      causal = false, scale = 0.125 : f64, element_type = f16>
tile.kernel @paged_split(%q: !tile.tensor<?x2x1x64xf16>, %k: !tile.tensor<1x64x1x64xf16>,
    %v: !tile.tensor<1x64x1x64xf16>,
                   %lens: !tile.tensor<?xi32>, %table: !tile.tensor<?x?xi32>, %out: !tile.tensor<?x2x1x64xf16>,
                   %lse: !tile.tensor<?x2x1xf32>, %o_part: !tile.tensor<?x1x2x64xf32>,
                   %lse_part: !tile.tensor<?x1x2xf32>, %status: !tile.tensor<4xi32>)
    attributes {block_m = 16 : i64, block_n = 64 : i64, spec = #paged,
                grid = [#tile.grid<1>, #tile.grid<1>, #tile.grid<arg0[0]>],
                stages = 1 : i64, strategy = #tile.strategy<mma_sync_sm80>, warps = 4 : i64} {
  %x = tile.program_id x
  %y = tile.program_id y
  %z = tile.program_id z
  tile.decode_block(%q, %k, %v, %lens, %table, %out, %lse, %o_part, %lse_part, %status) at [%x, %y, %z]
      : !tile.tensor<?x2x1x64xf16>, !tile.tensor<1x64x1x64xf16>, !tile.tensor<1x64x1x64xf16>, !tile.tensor<?xi32>,
        !tile.tensor<?x?xi32>, !tile.tensor<?x2x1x64xf16>, !tile.tensor<?x2x1xf32>, !tile.tensor<?x1x2x64xf32>,
        !tile.tensor<?x1x2xf32>, !tile.tensor<4xi32>
  tile.return
}
func.func @paged(%q: !tile.tensor<?x2x1x64xf16>, %k: !tile.tensor<1x64x1x64xf16>, %v: !tile.tensor<1x64x1x64xf16>,
             %lens: !tile.tensor<?xi32>, %table: !tile.tensor<?x?xi32>, %out: !tile.tensor<?x2x1x64xf16>,
             %lse: !tile.tensor<?x2x1xf32>, %o_part: !tile.tensor<?x1x2x64xf32>, %lse_part: !tile.tensor<?x1x2xf32>)
    attributes {tile.program} {
  %status = tile.alloc_tensor() {tile.zero_fill} : !tile.tensor<4xi32>
  tile.launch @paged_split(%q, %k, %v, %lens, %table, %out, %lse, %o_part, %lse_part, %status)
      : !tile.tensor<?x2x1x64xf16>, !tile.tensor<1x64x1x64xf16>, !tile.tensor<1x64x1x64xf16>, !tile.tensor<?xi32>,
        !tile.tensor<?x?xi32>, !tile.tensor<?x2x1x64xf16>, !tile.tensor<?x2x1xf32>, !tile.tensor<?x1x2x64xf32>,
        !tile.tensor<?x1x2xf32>, !tile.tensor<4xi32>
  return
}

// @cache_batch: a dense cache of one sequence beside a batch of several (the rows of sequence 1 are past it).
#dense_cache_batch = #tile.decode<role = decode_split, head_dim = 64, value_dim = 64, queries = 1, group = 2,
    page_size = 0,
                      causal = false, scale = 0.125 : f64, element_type = f16>
tile.kernel @batch_split(%q: !tile.tensor<?x2x1x64xf16>, %k: !tile.tensor<1x1x8x64xf16>, %v: !tile.tensor<1x1x8x64xf16>,
                   %lens: !tile.tensor<?xi32>, %out: !tile.tensor<?x2x1x64xf16>, %lse: !tile.tensor<?x2x1xf32>,
                   %o_part: !tile.tensor<?x1x2x64xf32>, %lse_part: !tile.tensor<?x1x2xf32>,
                   %status: !tile.tensor<4xi32>)
    attributes {block_m = 16 : i64, block_n = 64 : i64, spec = #dense_cache_batch,
                grid = [#tile.grid<1>, #tile.grid<1>, #tile.grid<arg0[0]>],
                stages = 1 : i64, strategy = #tile.strategy<mma_sync_sm80>, warps = 4 : i64} {
  %x = tile.program_id x
  %y = tile.program_id y
  %z = tile.program_id z
  tile.decode_block(%q, %k, %v, %lens, %out, %lse, %o_part, %lse_part, %status) at [%x, %y, %z]
      : !tile.tensor<?x2x1x64xf16>, !tile.tensor<1x1x8x64xf16>, !tile.tensor<1x1x8x64xf16>, !tile.tensor<?xi32>,
        !tile.tensor<?x2x1x64xf16>, !tile.tensor<?x2x1xf32>, !tile.tensor<?x1x2x64xf32>, !tile.tensor<?x1x2xf32>,
        !tile.tensor<4xi32>
  tile.return
}
func.func @cache_batch(%q: !tile.tensor<?x2x1x64xf16>, %k: !tile.tensor<1x1x8x64xf16>, %v: !tile.tensor<1x1x8x64xf16>,
             %lens: !tile.tensor<?xi32>, %out: !tile.tensor<?x2x1x64xf16>, %lse: !tile.tensor<?x2x1xf32>,
             %o_part: !tile.tensor<?x1x2x64xf32>, %lse_part: !tile.tensor<?x1x2xf32>) attributes {tile.program} {
  %status = tile.alloc_tensor() {tile.zero_fill} : !tile.tensor<4xi32>
  tile.launch @batch_split(%q, %k, %v, %lens, %out, %lse, %o_part, %lse_part, %status)
      : !tile.tensor<?x2x1x64xf16>, !tile.tensor<1x1x8x64xf16>, !tile.tensor<1x1x8x64xf16>, !tile.tensor<?xi32>,
        !tile.tensor<?x2x1x64xf16>, !tile.tensor<?x2x1xf32>, !tile.tensor<?x1x2x64xf32>, !tile.tensor<?x1x2xf32>,
        !tile.tensor<4xi32>
  return
}

// @table_rows: a block table of one row beside a batch of several.
#paged_table_rows = #tile.decode<role = decode_split, head_dim = 64, value_dim = 64, queries = 1, group = 2,
    page_size = 64,
                      causal = false, scale = 0.125 : f64, element_type = f16>
tile.kernel @table_split(%q: !tile.tensor<?x2x1x64xf16>, %k: !tile.tensor<4x64x1x64xf16>,
    %v: !tile.tensor<4x64x1x64xf16>,
                   %lens: !tile.tensor<?xi32>, %table: !tile.tensor<1x?xi32>, %out: !tile.tensor<?x2x1x64xf16>,
                   %lse: !tile.tensor<?x2x1xf32>, %o_part: !tile.tensor<?x1x2x64xf32>,
                   %lse_part: !tile.tensor<?x1x2xf32>, %status: !tile.tensor<4xi32>)
    attributes {block_m = 16 : i64, block_n = 64 : i64, spec = #paged_table_rows,
                grid = [#tile.grid<1>, #tile.grid<1>, #tile.grid<arg0[0]>],
                stages = 1 : i64, strategy = #tile.strategy<mma_sync_sm80>, warps = 4 : i64} {
  %x = tile.program_id x
  %y = tile.program_id y
  %z = tile.program_id z
  tile.decode_block(%q, %k, %v, %lens, %table, %out, %lse, %o_part, %lse_part, %status) at [%x, %y, %z]
      : !tile.tensor<?x2x1x64xf16>, !tile.tensor<4x64x1x64xf16>, !tile.tensor<4x64x1x64xf16>, !tile.tensor<?xi32>,
        !tile.tensor<1x?xi32>, !tile.tensor<?x2x1x64xf16>, !tile.tensor<?x2x1xf32>, !tile.tensor<?x1x2x64xf32>,
        !tile.tensor<?x1x2xf32>, !tile.tensor<4xi32>
  tile.return
}
func.func @table_rows(%q: !tile.tensor<?x2x1x64xf16>, %k: !tile.tensor<4x64x1x64xf16>, %v: !tile.tensor<4x64x1x64xf16>,
             %lens: !tile.tensor<?xi32>, %table: !tile.tensor<1x?xi32>, %out: !tile.tensor<?x2x1x64xf16>,
             %lse: !tile.tensor<?x2x1xf32>, %o_part: !tile.tensor<?x1x2x64xf32>, %lse_part: !tile.tensor<?x1x2xf32>)
    attributes {tile.program} {
  %status = tile.alloc_tensor() {tile.zero_fill} : !tile.tensor<4xi32>
  tile.launch @table_split(%q, %k, %v, %lens, %table, %out, %lse, %o_part, %lse_part, %status)
      : !tile.tensor<?x2x1x64xf16>, !tile.tensor<4x64x1x64xf16>, !tile.tensor<4x64x1x64xf16>, !tile.tensor<?xi32>,
        !tile.tensor<1x?xi32>, !tile.tensor<?x2x1x64xf16>, !tile.tensor<?x2x1xf32>, !tile.tensor<?x1x2x64xf32>,
        !tile.tensor<?x1x2xf32>, !tile.tensor<4xi32>
  return
}

// @short_values: a value cache of 1 row a sequence beside a key cache of 8.
#dense_short_values = #tile.decode<role = decode_split, head_dim = 64, value_dim = 64, queries = 1, group = 2,
    page_size = 0,
                      causal = false, scale = 0.125 : f64, element_type = f16>
tile.kernel @vshort_split(%q: !tile.tensor<?x2x1x64xf16>, %k: !tile.tensor<?x1x8x64xf16>,
    %v: !tile.tensor<?x1x1x64xf16>,
                   %lens: !tile.tensor<?xi32>, %out: !tile.tensor<?x2x1x64xf16>, %lse: !tile.tensor<?x2x1xf32>,
                   %o_part: !tile.tensor<?x1x2x64xf32>, %lse_part: !tile.tensor<?x1x2xf32>,
                   %status: !tile.tensor<4xi32>)
    attributes {block_m = 16 : i64, block_n = 64 : i64, spec = #dense_short_values,
                grid = [#tile.grid<1>, #tile.grid<1>, #tile.grid<arg0[0]>],
                stages = 1 : i64, strategy = #tile.strategy<mma_sync_sm80>, warps = 4 : i64} {
  %x = tile.program_id x
  %y = tile.program_id y
  %z = tile.program_id z
  tile.decode_block(%q, %k, %v, %lens, %out, %lse, %o_part, %lse_part, %status) at [%x, %y, %z]
      : !tile.tensor<?x2x1x64xf16>, !tile.tensor<?x1x8x64xf16>, !tile.tensor<?x1x1x64xf16>, !tile.tensor<?xi32>,
        !tile.tensor<?x2x1x64xf16>, !tile.tensor<?x2x1xf32>, !tile.tensor<?x1x2x64xf32>, !tile.tensor<?x1x2xf32>,
        !tile.tensor<4xi32>
  tile.return
}
func.func @short_values(%q: !tile.tensor<?x2x1x64xf16>, %k: !tile.tensor<?x1x8x64xf16>, %v: !tile.tensor<?x1x1x64xf16>,
             %lens: !tile.tensor<?xi32>, %out: !tile.tensor<?x2x1x64xf16>, %lse: !tile.tensor<?x2x1xf32>,
             %o_part: !tile.tensor<?x1x2x64xf32>, %lse_part: !tile.tensor<?x1x2xf32>) attributes {tile.program} {
  %status = tile.alloc_tensor() {tile.zero_fill} : !tile.tensor<4xi32>
  tile.launch @vshort_split(%q, %k, %v, %lens, %out, %lse, %o_part, %lse_part, %status)
      : !tile.tensor<?x2x1x64xf16>, !tile.tensor<?x1x8x64xf16>, !tile.tensor<?x1x1x64xf16>, !tile.tensor<?xi32>,
        !tile.tensor<?x2x1x64xf16>, !tile.tensor<?x2x1xf32>, !tile.tensor<?x1x2x64xf32>, !tile.tensor<?x1x2xf32>,
        !tile.tensor<4xi32>
  return
}

// @q_batch: a grid over the lengths' 17 sequences, a query batch of 2 (sequence 2 has no queries).
tile.kernel @q_batch_split(%q: !tile.tensor<2x2x1x64xf16>, %k: !tile.tensor<?x1x8x64xf16>,
                           %v: !tile.tensor<?x1x8x64xf16>, %lens: !tile.tensor<?xi32>,
                           %out: !tile.tensor<2x2x1x64xf16>, %lse: !tile.tensor<2x2x1xf32>,
                           %o_part: !tile.tensor<2x1x2x64xf32>, %lse_part: !tile.tensor<2x1x2xf32>,
                           %status: !tile.tensor<4xi32>)
    attributes {block_m = 16 : i64, block_n = 64 : i64, spec = #dense,
                grid = [#tile.grid<1>, #tile.grid<1>, #tile.grid<arg3[0]>],
                stages = 1 : i64, strategy = #tile.strategy<mma_sync_sm80>, warps = 4 : i64} {
  %x = tile.program_id x
  %y = tile.program_id y
  %z = tile.program_id z
  tile.decode_block(%q, %k, %v, %lens, %out, %lse, %o_part, %lse_part, %status) at [%x, %y, %z]
      : !tile.tensor<2x2x1x64xf16>, !tile.tensor<?x1x8x64xf16>, !tile.tensor<?x1x8x64xf16>, !tile.tensor<?xi32>,
        !tile.tensor<2x2x1x64xf16>, !tile.tensor<2x2x1xf32>, !tile.tensor<2x1x2x64xf32>, !tile.tensor<2x1x2xf32>,
        !tile.tensor<4xi32>
  tile.return
}
func.func @q_batch(%q: !tile.tensor<2x2x1x64xf16>, %k: !tile.tensor<?x1x8x64xf16>, %v: !tile.tensor<?x1x8x64xf16>,
                   %lens: !tile.tensor<?xi32>, %out: !tile.tensor<2x2x1x64xf16>, %lse: !tile.tensor<2x2x1xf32>,
                   %o_part: !tile.tensor<2x1x2x64xf32>, %lse_part: !tile.tensor<2x1x2xf32>) attributes {tile.program} {
  %status = tile.alloc_tensor() {tile.zero_fill} : !tile.tensor<4xi32>
  tile.launch @q_batch_split(%q, %k, %v, %lens, %out, %lse, %o_part, %lse_part, %status)
      : !tile.tensor<2x2x1x64xf16>, !tile.tensor<?x1x8x64xf16>, !tile.tensor<?x1x8x64xf16>, !tile.tensor<?xi32>,
        !tile.tensor<2x2x1x64xf16>, !tile.tensor<2x2x1xf32>, !tile.tensor<2x1x2x64xf32>, !tile.tensor<2x1x2xf32>,
        !tile.tensor<4xi32>
  return
}
