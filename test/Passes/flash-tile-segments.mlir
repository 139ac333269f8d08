// flash-tile on mask modifiers that are, or are not, a document compare `t[q] == t[k]` (DocumentIds.h): a document
// modifier's forward takes the segment plan (#tile.attention segments, the kernel of role attention_segment_plan
// that writes it from the ids before the forward; the device library's segments.cuh) where its tuning entry says
// segments=1, or by the hand rule where it is the warp-specialised kernel (16-bit; these f32 ones are not: the
// default builds none, test/Codegen/cuda-attention-segments.mlir has the bf16 default); segments=0 keeps the table
// walk. A modifier of another form, a window, a score modifier or a run-time key offset keeps the table walk. Each
// also against float64 on the CPU (the executor runs the plan kernel; the forward's tile body is the table form's).
//
// RUN: flash-opt %s --flash-tile=tuning-table=%S/Inputs/tuning-segments.txt | FileCheck %s
// RUN: flash-opt %s --flash-tile | FileCheck %s --check-prefix=OFF
// RUN: flash-opt %s --flash-tile=tuning-table=%S/Inputs/tuning-no-segments.txt | FileCheck %s --check-prefix=OFF
// The backward's main kernel from its own entries (flash-generate-backward): its own plan, in the backward program.
// RUN: flash-opt %s --flash-generate-backward=tuning-table=%S/Inputs/tuning-segments.txt | FileCheck %s --check-prefix=BWD
// RUN: flash-opt %s --flash-generate-backward=tuning-table=%S/Inputs/tuning-no-segments.txt | FileCheck %s --check-prefix=OFF
// (The ids are the only dynamic size: one per query and key row, 300, as the programs check before launching.)
// RUN: flash-run-tile %s --tuning-table=%S/Inputs/tuning-segments.txt --backward --block-m=16 --block-n=16 --warps=1 --tolerance=1e-5 --dynamic-size=300 | FileCheck %s --check-prefix=NUM
// NUM-NOT: FAIL
// NUM: @not_q_and_k backward d_v: {{.*}} ok

// BWD-LABEL: tile.kernel @causal_documents_attention_bwd_segments(
// BWD: tile.plan_segments
// BWD-LABEL: tile.kernel @causal_documents_attention_bwd(
// BWD-SAME: mask_blocks = true, segments = true>
// BWD-LABEL: func.func @causal_documents_backward(
// BWD: %[[PLAN:.*]] = tile.alloc_tensor({{.*}}) {tile.name = "segment_plan_keys"} : <?x4xi32>
// BWD: tile.launch @causal_documents_attention_bwd_segments(%arg0, %arg1, %arg3, %[[PLAN]])
// BWD: %[[KEYS:.*]] = tile.alloc_tensor({{.*}}) {tile.name = "mask_blocks_keys"}
// BWD: tile.launch @causal_documents_attention_bwd_mask_blocks_keys(%arg0, %arg1, %arg3, %[[KEYS]], %[[PLAN]])
// BWD: tile.launch @causal_documents_attention_bwd(%arg0, %arg1, %arg2, {{.*}}, %[[KEYS]], %[[PLAN]])
// BWD-LABEL: tile.kernel @neighbouring_documents_attention_bwd(
// BWD-SAME: mask_blocks = true>

// Entries with segments=0, or f32 kernels by default: no plan anywhere.
// OFF-NOT: plan_segments
// OFF-NOT: segments = true
// OFF-NOT: top_left

// causal, t[q] == t[k] through index casts: the plan (rows 1 + the maps at 64, 128 and 192 rows, ceil(Sq/M) +
// ceil(ceil(Sq/M)/4) each, four i32 a row), written from q, k and the ids first, then the block classes (which skip
// their work where the plan serves), then the forward with the plan after its table.
// CHECK-LABEL: tile.kernel @causal_documents_attention_fwd_segments(
// CHECK-SAME: %[[PQ:.*]]: !tile.tensor<1x2x300x16xf32>, %[[PK:.*]]: !tile.tensor<1x2x300x16xf32>, %[[IDS:.*]]: !tile.tensor<?xi32>, %[[PLAN:.*]]: !tile.tensor<?x4xi32>)
// CHECK-SAME: grid = [#tile.grid<1>, #tile.grid<1>, #tile.grid<1>]
// CHECK-SAME: role = attention_segment_plan
// CHECK: tile.plan_segments %[[IDS]] queries %{{.*}} keys %{{.*}} into %[[PLAN]] : <?xi32>, <?x4xi32>
// CHECK-LABEL: tile.kernel @causal_documents_attention_fwd(
// CHECK-SAME: !tile.tensor<?xi32>, %{{.*}}: !tile.tensor<1x1x?x?xi32>, %{{.*}}: !tile.tensor<?x4xi32>)
// CHECK-SAME: window_left = -1, window_right = 0, element_type = f32, mask_mod = @mask_mod_{{.*}}, mask_blocks = true, segments = true>
// CHECK-LABEL: func.func @causal_documents(
// CHECK: %[[SQ:.*]] = tile.dim %arg0, 2
// CHECK: %[[B64:.*]] = arith.ceildivsi %[[SQ]], %c64
// CHECK: %[[Q64:.*]] = arith.ceildivsi %[[B64]], %c4
// CHECK: %[[M64:.*]] = arith.addi %[[B64]], %[[Q64]]
// CHECK: %[[B128:.*]] = arith.ceildivsi %[[SQ]], %c128
// CHECK: %[[B192:.*]] = arith.ceildivsi %[[SQ]], %c192
// CHECK: %[[ROWS:.*]] = arith.addi %{{.*}}, %c1
// CHECK: %[[SEG:.*]] = tile.alloc_tensor(%[[ROWS]]) {tile.name = "segment_plan"} : <?x4xi32>
// CHECK: tile.launch @causal_documents_attention_fwd_segments(%arg0, %arg1, %arg3, %[[SEG]])
// CHECK: %[[TABLE:.*]] = tile.alloc_tensor({{.*}}) {tile.name = "mask_blocks"}
// CHECK: tile.launch @causal_documents_attention_fwd_mask_blocks(%arg0, %arg1, %arg3, %[[TABLE]], %[[SEG]])
// CHECK: tile.launch @causal_documents_attention_fwd(%arg0, %arg1, %arg2, %{{.*}}, %{{.*}}, %arg3, %[[TABLE]], %[[SEG]])

// causal, t[k] == t[q] (the other order), four indices (b and h unused): the segment form.
// CHECK-LABEL: tile.kernel @reversed_documents_attention_fwd(
// CHECK-SAME: window_left = -1, window_right = 0, element_type = f32, mask_mod = @mask_mod_{{.*}}, mask_blocks = true, segments = true>

// t[q] == t[k] without a mask (bidirectional documents): the segment form too (a document's tile masks at the
// sequence's positions: the modifier sees its own, on the document's last key block only).
// CHECK-LABEL: tile.kernel @bidirectional_documents_attention_fwd(
// CHECK-SAME: window_left = -1, window_right = -1, element_type = f32, mask_mod = @mask_mod_{{.*}}, mask_blocks = true, segments = true>

// FlexAttention's document_causal, (t[q] == t[k]) & (q >= k) over no mask: the segment form with the causal window
// on the modifier's positions (top_left), Sq = Sk or not (the GPU falls back at run time where they differ; the tile
// body, run here against float64, is the table form's with that window, which the modifier's q >= k makes redundant;
// at Sq > Sk a bottom-right window would hide keys the modifier shows, which the float64 check catches).
// CHECK-LABEL: tile.kernel @flex_documents_attention_fwd(
// CHECK-SAME: window_left = -1, window_right = 0, element_type = f32, mask_mod = @mask_mod_{{.*}}, mask_blocks = true, top_left = true, segments = true>
// CHECK-LABEL: tile.kernel @flex_documents_ragged_attention_fwd(
// CHECK-SAME: window_left = -1, window_right = 0, element_type = f32, mask_mod = @mask_mod_{{.*}}, mask_blocks = true, top_left = true, segments = true>
// (t[q] == t[k]) | (q >= k): not a document compare.
// CHECK-LABEL: tile.kernel @flex_documents_or_attention_fwd(
// CHECK-SAME: window_left = -1, window_right = -1, element_type = f32, mask_mod = @mask_mod_{{.*}}, mask_blocks = true>
// Without the entry FlexAttention's spelling keeps its own form: no window.
// DEFAULT-LABEL: tile.kernel @flex_documents_attention_fwd(
// DEFAULT-SAME: window_left = -1, window_right = -1, element_type = f32, mask_mod = @mask_mod_{{.*}}, mask_blocks = true>

// causal documents with a score modifier (here a position bias that is not shift-invariant, s + k / 64): the segment
// form too, its modifiers at the sequence's positions (on the GPU; the tile body is the table form's).
// CHECK-LABEL: tile.kernel @documents_score_attention_fwd(
// CHECK-SAME: window_left = -1, window_right = 0, element_type = f32, mask_mod = @mask_mod_{{.*}}, mask_blocks = true, score_mod = @score_mod_{{.*}}, segments = true>

// t[q] == t[k] + 1: not a document compare.
// CHECK-LABEL: tile.kernel @neighbouring_documents_attention_fwd(
// CHECK-SAME: mask_blocks = true>
// a[q] == b[k]: two tensors.
// CHECK-LABEL: tile.kernel @two_tensors_attention_fwd(
// CHECK-SAME: mask_blocks = true>
// (t[q] == t[k]) & (q >= k) spelled with sge q, k: FlexAttention's form too.
// CHECK-LABEL: tile.kernel @documents_and_causal_attention_fwd(
// CHECK-SAME: window_right = 0, element_type = f32, mask_mod = @mask_mod_{{.*}}, mask_blocks = true, top_left = true, segments = true>
// t[q] == t[k] over a sliding window: the segment form takes none or causal only.
// CHECK-LABEL: tile.kernel @window_documents_attention_fwd(
// CHECK-SAME: mask_blocks = true>
// t[q] == t[q]: not the key's id.
// CHECK-LABEL: tile.kernel @not_q_and_k_attention_fwd(
// CHECK-SAME: mask_blocks = true>
// CHECK-NOT: segments = true

func.func @causal_documents(%q: tensor<1x2x300x16xf32>, %k: tensor<1x2x300x16xf32>, %v: tensor<1x2x300x16xf32>, %doc: tensor<?xi32>) -> tensor<1x2x300x16xf32> {
  %out, %lse = flash.attention %q, %k, %v scale = 0.25 mask = #flash.mask<causal> num_kv_heads = 2 mask_mod(%doc) {
  ^bb0(%i: index, %j: index, %ids: tensor<?xi32>):
    %a = tensor.extract %ids[%i] : tensor<?xi32>
    %b = tensor.extract %ids[%j] : tensor<?xi32>
    %ai = arith.index_cast %a : i32 to index
    %bi = arith.index_cast %b : i32 to index
    %vis = arith.cmpi eq, %ai, %bi : index
    flash.yield %vis : i1
  } : (tensor<1x2x300x16xf32>, tensor<1x2x300x16xf32>, tensor<1x2x300x16xf32>, tensor<?xi32>) -> (tensor<1x2x300x16xf32>, tensor<1x2x300xf32>)
  return %out : tensor<1x2x300x16xf32>
}

func.func @reversed_documents(%q: tensor<1x2x300x16xf32>, %k: tensor<1x2x300x16xf32>, %v: tensor<1x2x300x16xf32>, %doc: tensor<?xi32>) -> tensor<1x2x300x16xf32> {
  %out, %lse = flash.attention %q, %k, %v scale = 0.25 mask = #flash.mask<causal> num_kv_heads = 2 mask_mod(%doc) {
  ^bb0(%bb: index, %hh: index, %i: index, %j: index, %ids: tensor<?xi32>):
    %a = tensor.extract %ids[%j] : tensor<?xi32>
    %b = tensor.extract %ids[%i] : tensor<?xi32>
    %ai = arith.index_cast %a : i32 to index
    %bi = arith.index_cast %b : i32 to index
    %vis = arith.cmpi eq, %ai, %bi : index
    flash.yield %vis : i1
  } : (tensor<1x2x300x16xf32>, tensor<1x2x300x16xf32>, tensor<1x2x300x16xf32>, tensor<?xi32>) -> (tensor<1x2x300x16xf32>, tensor<1x2x300xf32>)
  return %out : tensor<1x2x300x16xf32>
}

func.func @bidirectional_documents(%q: tensor<1x2x300x16xf32>, %k: tensor<1x2x300x16xf32>, %v: tensor<1x2x300x16xf32>, %doc: tensor<?xi32>) -> tensor<1x2x300x16xf32> {
  %out, %lse = flash.attention %q, %k, %v scale = 0.25 mask = #flash.mask<none> num_kv_heads = 2 mask_mod(%doc) {
  ^bb0(%bb: index, %hh: index, %i: index, %j: index, %ids: tensor<?xi32>):
    %a = tensor.extract %ids[%j] : tensor<?xi32>
    %b = tensor.extract %ids[%i] : tensor<?xi32>
    %ai = arith.index_cast %a : i32 to index
    %bi = arith.index_cast %b : i32 to index
    %vis = arith.cmpi eq, %ai, %bi : index
    flash.yield %vis : i1
  } : (tensor<1x2x300x16xf32>, tensor<1x2x300x16xf32>, tensor<1x2x300x16xf32>, tensor<?xi32>) -> (tensor<1x2x300x16xf32>, tensor<1x2x300xf32>)
  return %out : tensor<1x2x300x16xf32>
}

func.func @flex_documents(%q: tensor<1x2x300x16xf32>, %k: tensor<1x2x300x16xf32>, %v: tensor<1x2x300x16xf32>, %doc: tensor<?xi32>) -> tensor<1x2x300x16xf32> {
  %out, %lse = flash.attention %q, %k, %v scale = 0.25 mask = #flash.mask<none> num_kv_heads = 2 mask_mod(%doc) {
  ^bb0(%i: index, %j: index, %ids: tensor<?xi32>):
    %a = tensor.extract %ids[%i] : tensor<?xi32>
    %b = tensor.extract %ids[%j] : tensor<?xi32>
    %ai = arith.index_cast %a : i32 to index
    %bi = arith.index_cast %b : i32 to index
    %same = arith.cmpi eq, %ai, %bi : index
    %before = arith.cmpi sle, %j, %i : index
    %vis = arith.andi %before, %same : i1
    flash.yield %vis : i1
  } : (tensor<1x2x300x16xf32>, tensor<1x2x300x16xf32>, tensor<1x2x300x16xf32>, tensor<?xi32>) -> (tensor<1x2x300x16xf32>, tensor<1x2x300xf32>)
  return %out : tensor<1x2x300x16xf32>
}

func.func @flex_documents_ragged(%q: tensor<1x2x300x16xf32>, %k: tensor<1x2x200x16xf32>, %v: tensor<1x2x200x16xf32>, %doc: tensor<?xi32>) -> tensor<1x2x300x16xf32> {
  %out, %lse = flash.attention %q, %k, %v scale = 0.25 mask = #flash.mask<none> num_kv_heads = 2 mask_mod(%doc) {
  ^bb0(%i: index, %j: index, %ids: tensor<?xi32>):
    %a = tensor.extract %ids[%i] : tensor<?xi32>
    %b = tensor.extract %ids[%j] : tensor<?xi32>
    %ai = arith.index_cast %a : i32 to index
    %bi = arith.index_cast %b : i32 to index
    %same = arith.cmpi eq, %ai, %bi : index
    %before = arith.cmpi sle, %j, %i : index
    %vis = arith.andi %before, %same : i1
    flash.yield %vis : i1
  } : (tensor<1x2x300x16xf32>, tensor<1x2x200x16xf32>, tensor<1x2x200x16xf32>, tensor<?xi32>) -> (tensor<1x2x300x16xf32>, tensor<1x2x300xf32>)
  return %out : tensor<1x2x300x16xf32>
}

func.func @flex_documents_or(%q: tensor<1x2x300x16xf32>, %k: tensor<1x2x300x16xf32>, %v: tensor<1x2x300x16xf32>, %doc: tensor<?xi32>) -> tensor<1x2x300x16xf32> {
  %out, %lse = flash.attention %q, %k, %v scale = 0.25 mask = #flash.mask<none> num_kv_heads = 2 mask_mod(%doc) {
  ^bb0(%i: index, %j: index, %ids: tensor<?xi32>):
    %a = tensor.extract %ids[%i] : tensor<?xi32>
    %b = tensor.extract %ids[%j] : tensor<?xi32>
    %ai = arith.index_cast %a : i32 to index
    %bi = arith.index_cast %b : i32 to index
    %same = arith.cmpi eq, %ai, %bi : index
    %before = arith.cmpi sle, %j, %i : index
    %vis = arith.ori %before, %same : i1
    flash.yield %vis : i1
  } : (tensor<1x2x300x16xf32>, tensor<1x2x300x16xf32>, tensor<1x2x300x16xf32>, tensor<?xi32>) -> (tensor<1x2x300x16xf32>, tensor<1x2x300xf32>)
  return %out : tensor<1x2x300x16xf32>
}

func.func @documents_score(%q: tensor<1x2x300x16xf32>, %k: tensor<1x2x300x16xf32>, %v: tensor<1x2x300x16xf32>, %doc: tensor<?xi32>) -> tensor<1x2x300x16xf32> {
  %out, %lse = flash.attention %q, %k, %v scale = 0.25 mask = #flash.mask<causal> num_kv_heads = 2 mask_mod(%doc) {
  ^bb0(%i: index, %j: index, %ids: tensor<?xi32>):
    %a = tensor.extract %ids[%i] : tensor<?xi32>
    %b = tensor.extract %ids[%j] : tensor<?xi32>
    %ai = arith.index_cast %a : i32 to index
    %bi = arith.index_cast %b : i32 to index
    %vis = arith.cmpi eq, %ai, %bi : index
    flash.yield %vis : i1
  } score_mod {
  ^bb0(%sc: f32, %bb: index, %hh: index, %qi: index, %ki: index):
    %qq = arith.index_cast %ki : index to i64
    %qf = arith.sitofp %qq : i64 to f32
    %c = arith.constant 0.015625 : f32
    %bias = arith.mulf %qf, %c : f32
    %r = arith.addf %sc, %bias : f32
    flash.yield %r : f32
  } : (tensor<1x2x300x16xf32>, tensor<1x2x300x16xf32>, tensor<1x2x300x16xf32>, tensor<?xi32>) -> (tensor<1x2x300x16xf32>, tensor<1x2x300xf32>)
  return %out : tensor<1x2x300x16xf32>
}

func.func @neighbouring_documents(%q: tensor<1x2x300x16xf32>, %k: tensor<1x2x300x16xf32>, %v: tensor<1x2x300x16xf32>, %doc: tensor<?xi32>) -> tensor<1x2x300x16xf32> {
  %out, %lse = flash.attention %q, %k, %v scale = 0.25 mask = #flash.mask<causal> num_kv_heads = 2 mask_mod(%doc) {
  ^bb0(%i: index, %j: index, %ids: tensor<?xi32>):
    %c1 = arith.constant 1 : index
    %a = tensor.extract %ids[%i] : tensor<?xi32>
    %b = tensor.extract %ids[%j] : tensor<?xi32>
    %ai = arith.index_cast %a : i32 to index
    %bi = arith.index_cast %b : i32 to index
    %b1 = arith.addi %bi, %c1 : index
    %vis = arith.cmpi eq, %ai, %b1 : index
    flash.yield %vis : i1
  } : (tensor<1x2x300x16xf32>, tensor<1x2x300x16xf32>, tensor<1x2x300x16xf32>, tensor<?xi32>) -> (tensor<1x2x300x16xf32>, tensor<1x2x300xf32>)
  return %out : tensor<1x2x300x16xf32>
}

func.func @two_tensors(%q: tensor<1x2x300x16xf32>, %k: tensor<1x2x300x16xf32>, %v: tensor<1x2x300x16xf32>, %doc: tensor<?xi32>, %doc2: tensor<?xi32>) -> tensor<1x2x300x16xf32> {
  %out, %lse = flash.attention %q, %k, %v scale = 0.25 mask = #flash.mask<causal> num_kv_heads = 2 mask_mod(%doc, %doc2) {
  ^bb0(%i: index, %j: index, %ids: tensor<?xi32>, %ids2: tensor<?xi32>):
    %a = tensor.extract %ids[%i] : tensor<?xi32>
    %b = tensor.extract %ids2[%j] : tensor<?xi32>
    %ai = arith.index_cast %a : i32 to index
    %bi = arith.index_cast %b : i32 to index
    %vis = arith.cmpi eq, %ai, %bi : index
    flash.yield %vis : i1
  } : (tensor<1x2x300x16xf32>, tensor<1x2x300x16xf32>, tensor<1x2x300x16xf32>, tensor<?xi32>, tensor<?xi32>) -> (tensor<1x2x300x16xf32>, tensor<1x2x300xf32>)
  return %out : tensor<1x2x300x16xf32>
}

func.func @documents_and_causal(%q: tensor<1x2x300x16xf32>, %k: tensor<1x2x300x16xf32>, %v: tensor<1x2x300x16xf32>, %doc: tensor<?xi32>) -> tensor<1x2x300x16xf32> {
  %out, %lse = flash.attention %q, %k, %v scale = 0.25 mask = #flash.mask<none> num_kv_heads = 2 mask_mod(%doc) {
  ^bb0(%i: index, %j: index, %ids: tensor<?xi32>):
    %a = tensor.extract %ids[%i] : tensor<?xi32>
    %b = tensor.extract %ids[%j] : tensor<?xi32>
    %ai = arith.index_cast %a : i32 to index
    %bi = arith.index_cast %b : i32 to index
    %same = arith.cmpi eq, %ai, %bi : index
    %before = arith.cmpi sge, %i, %j : index
    %vis = arith.andi %same, %before : i1
    flash.yield %vis : i1
  } : (tensor<1x2x300x16xf32>, tensor<1x2x300x16xf32>, tensor<1x2x300x16xf32>, tensor<?xi32>) -> (tensor<1x2x300x16xf32>, tensor<1x2x300xf32>)
  return %out : tensor<1x2x300x16xf32>
}

func.func @window_documents(%q: tensor<1x2x300x16xf32>, %k: tensor<1x2x300x16xf32>, %v: tensor<1x2x300x16xf32>, %doc: tensor<?xi32>) -> tensor<1x2x300x16xf32> {
  %out, %lse = flash.attention %q, %k, %v scale = 0.25 mask = #flash.mask<sliding_window, left = 40, right = 0> num_kv_heads = 2 mask_mod(%doc) {
  ^bb0(%i: index, %j: index, %ids: tensor<?xi32>):
    %a = tensor.extract %ids[%i] : tensor<?xi32>
    %b = tensor.extract %ids[%j] : tensor<?xi32>
    %ai = arith.index_cast %a : i32 to index
    %bi = arith.index_cast %b : i32 to index
    %vis = arith.cmpi eq, %ai, %bi : index
    flash.yield %vis : i1
  } : (tensor<1x2x300x16xf32>, tensor<1x2x300x16xf32>, tensor<1x2x300x16xf32>, tensor<?xi32>) -> (tensor<1x2x300x16xf32>, tensor<1x2x300xf32>)
  return %out : tensor<1x2x300x16xf32>
}

func.func @not_q_and_k(%q: tensor<1x2x300x16xf32>, %k: tensor<1x2x300x16xf32>, %v: tensor<1x2x300x16xf32>, %doc: tensor<?xi32>) -> tensor<1x2x300x16xf32> {
  %out, %lse = flash.attention %q, %k, %v scale = 0.25 mask = #flash.mask<causal> num_kv_heads = 2 mask_mod(%doc) {
  ^bb0(%i: index, %j: index, %ids: tensor<?xi32>):
    %a = tensor.extract %ids[%i] : tensor<?xi32>
    %b = tensor.extract %ids[%i] : tensor<?xi32>
    %ai = arith.index_cast %a : i32 to index
    %bi = arith.index_cast %b : i32 to index
    %vis = arith.cmpi eq, %ai, %bi : index
    flash.yield %vis : i1
  } : (tensor<1x2x300x16xf32>, tensor<1x2x300x16xf32>, tensor<1x2x300x16xf32>, tensor<?xi32>) -> (tensor<1x2x300x16xf32>, tensor<1x2x300xf32>)
  return %out : tensor<1x2x300x16xf32>
}
