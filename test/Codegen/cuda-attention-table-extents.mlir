// A modifier's tensor read at one of its index arguments itself (ids[q], slopes[h]) must hold that index's range:
// the kernels read a position past its end as 0, a wrong mask or score nobody asked for. Where a size is only known
// at run time, flash-tile and flash-generate-backward put a tile.require_extent before the attention's launches, and
// the manifest makes it a `requires` line, with its message in the caller's terms, on every kernel that takes the
// tensor: document ids read at q and k (dynamic ids, Sq, Sk), ALiBi's slopes read at the head (dynamic slopes, 8
// heads), a static table read at q (dynamic Sq: `Sq <= 4096`). A read at a computed position (ids[q / 64]) needs
// none, and a kernel that does not take the tensor (the backward's preprocess) carries none.
//
// RUN: flash-opt %s --flash-tile | FileCheck %s --check-prefix=TILE
// RUN: flash-opt %s --flash-generate-backward | FileCheck %s --check-prefix=BWD
// RUN: rm -rf %t.bundle && flashc %s -o %t.bundle
// RUN: FileCheck %s --check-prefix=MANIFEST < %t.bundle/manifest.flashc

// TILE-LABEL: func.func @documents(
// TILE-NEXT: tile.require_extent %arg3[0] covers %arg0[2] for mask_mod at query : <?xi32>, <?x4x?x64xbf16>
// TILE-NEXT: tile.require_extent %arg3[0] covers %arg1[2] for mask_mod at key : <?xi32>, <?x4x?x64xbf16>
// TILE-LABEL: func.func @slopes(
// TILE-NEXT: tile.require_extent %arg3[0] covers %arg0[1] for score_mod at head : <?xf32>, <?x8x?x64xbf16>
// TILE-NOT: tile.require_extent
// TILE-LABEL: func.func @fixed_table(
// TILE-NEXT: tile.require_extent %arg3[0] covers %arg0[2] for mask_mod at query : <4096xi32>, <?x4x?x64xbf16>
// TILE-NOT: tile.require_extent
// TILE-LABEL: func.func @computed(
// TILE-NOT: tile.require_extent

// BWD-LABEL: func.func @documents_backward(
// BWD-NEXT: tile.require_extent %arg3[0] covers %arg0[2] for mask_mod at query
// BWD-NEXT: tile.require_extent %arg3[0] covers %arg1[2] for mask_mod at key
// BWD-LABEL: func.func @slopes_backward(
// BWD-NEXT: tile.require_extent %arg3[0] covers %arg0[1] for score_mod at head
// BWD-LABEL: func.func @computed_backward(
// BWD-NOT: tile.require_extent

// MANIFEST-LABEL: kernel documents_attention_bwd_mask_blocks_keys
// MANIFEST: requires mask_t0_d0 >= Sq "argument 'mask_t0' dim 0 is {mask_t0_d0}, but the mask modifier reads it at the query index, which ranges over Sq = {Sq}"
// MANIFEST-NEXT: requires mask_t0_d0 >= Sk "argument 'mask_t0' dim 0 is {mask_t0_d0}, but the mask modifier reads it at the key index, which ranges over Sk = {Sk}"
// MANIFEST-LABEL: kernel documents_attention_bwd_preprocess
// MANIFEST-NOT: requires
// MANIFEST-LABEL: kernel documents_attention_bwd{{$}}
// MANIFEST: requires mask_t0_d0 >= Sq "{{.*}}"
// MANIFEST-NEXT: requires mask_t0_d0 >= Sk "{{.*}}"
// MANIFEST-LABEL: kernel documents_attention_fwd_segments
// MANIFEST: requires mask_t0_d0 >= Sq "{{.*}}"
// MANIFEST-NEXT: requires mask_t0_d0 >= Sk "{{.*}}"
// MANIFEST-LABEL: kernel documents_attention_fwd_mask_blocks
// MANIFEST: requires mask_t0_d0 >= Sq "{{.*}}"
// MANIFEST-NEXT: requires mask_t0_d0 >= Sk "{{.*}}"
// MANIFEST-LABEL: kernel documents_attention_fwd{{$}}
// MANIFEST: requires mask_t0_d0 >= Sq "{{.*}}"
// MANIFEST-NEXT: requires mask_t0_d0 >= Sk "{{.*}}"
// MANIFEST-NEXT: end
// MANIFEST-LABEL: kernel slopes_attention_bwd{{$}}
// MANIFEST: requires score_t0_d0 >= 8 "argument 'score_t0' dim 0 is {score_t0_d0}, but the score modifier reads it at the query head index, which ranges over Hq = 8"
// MANIFEST-LABEL: kernel slopes_attention_fwd{{$}}
// MANIFEST: requires score_t0_d0 >= 8 "{{.*}}"
// MANIFEST-NEXT: end
// MANIFEST-LABEL: kernel fixed_table_attention_fwd_mask_blocks
// MANIFEST: requires Sq <= 4096 "argument 'mask_t0' dim 0 is 4096, but the mask modifier reads it at the query index, which ranges over Sq = {Sq}"
// MANIFEST-LABEL: kernel fixed_table_attention_fwd{{$}}
// MANIFEST: requires Sq <= 4096 "{{.*}}"
// MANIFEST-NEXT: end
// MANIFEST-LABEL: kernel computed_attention_bwd_mask_blocks_keys
// MANIFEST-NOT: requires
// MANIFEST: program documents_backward

// Each token's document: ids[q] == ids[k] (examples/document_mask.mlir).
func.func @documents(%q: tensor<?x4x?x64xbf16>, %k: tensor<?x4x?x64xbf16>, %v: tensor<?x4x?x64xbf16>,
                     %doc: tensor<?xi32>) -> tensor<?x4x?x64xbf16> {
  %o, %lse = flash.attention %q, %k, %v scale = 0.125 mask = #flash.mask<causal> num_kv_heads = 4 mask_mod(%doc) {
  ^bb0(%i: index, %j: index, %ids: tensor<?xi32>):
    %a = tensor.extract %ids[%i] : tensor<?xi32>
    %b = tensor.extract %ids[%j] : tensor<?xi32>
    %x = arith.index_cast %a : i32 to index
    %y = arith.index_cast %b : i32 to index
    %same = arith.cmpi eq, %x, %y : index
    flash.yield %same : i1
  } : (tensor<?x4x?x64xbf16>, tensor<?x4x?x64xbf16>, tensor<?x4x?x64xbf16>, tensor<?xi32>)
    -> (tensor<?x4x?x64xbf16>, tensor<?x4x?xf32>)
  return %o : tensor<?x4x?x64xbf16>
}

// ALiBi: slopes[h] · (k - q), a slope per query head.
func.func @slopes(%q: tensor<?x8x?x64xbf16>, %k: tensor<?x2x?x64xbf16>, %v: tensor<?x2x?x64xbf16>,
                  %slopes: tensor<?xf32>) -> tensor<?x8x?x64xbf16> {
  %o, %lse = flash.attention %q, %k, %v scale = 0.125 mask = #flash.mask<causal> num_kv_heads = 2
      score_mod(%slopes) {
  ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index, %m: tensor<?xf32>):
    %slope = tensor.extract %m[%h] : tensor<?xf32>
    %d = arith.subi %j, %i : index
    %d64 = arith.index_cast %d : index to i64
    %df = arith.sitofp %d64 : i64 to f32
    %bias = arith.mulf %slope, %df : f32
    %r = arith.addf %s, %bias : f32
    flash.yield %r : f32
  } : (tensor<?x8x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?xf32>)
    -> (tensor<?x8x?x64xbf16>, tensor<?x8x?xf32>)
  return %o : tensor<?x8x?x64xbf16>
}

// A static table of each query's visible keys: the run-time Sq is bounded by its 4096 entries.
func.func @fixed_table(%q: tensor<?x4x?x64xbf16>, %k: tensor<?x4x?x64xbf16>, %v: tensor<?x4x?x64xbf16>,
                       %t: tensor<4096xi32>) -> tensor<?x4x?x64xbf16> {
  %o, %lse = flash.attention %q, %k, %v scale = 0.125 mask = #flash.mask<none> num_kv_heads = 4 mask_mod(%t) {
  ^bb0(%i: index, %j: index, %limits: tensor<4096xi32>):
    %a = tensor.extract %limits[%i] : tensor<4096xi32>
    %x = arith.index_cast %a : i32 to index
    %seen = arith.cmpi slt, %j, %x : index
    flash.yield %seen : i1
  } : (tensor<?x4x?x64xbf16>, tensor<?x4x?x64xbf16>, tensor<?x4x?x64xbf16>, tensor<4096xi32>)
    -> (tensor<?x4x?x64xbf16>, tensor<?x4x?xf32>)
  return %o : tensor<?x4x?x64xbf16>
}

// A chunk's id read at q / 64 and k / 64: computed positions (one past the table reads 0), no requirement.
func.func @computed(%q: tensor<?x4x?x64xbf16>, %k: tensor<?x4x?x64xbf16>, %v: tensor<?x4x?x64xbf16>,
                    %chunks: tensor<?xi32>) -> tensor<?x4x?x64xbf16> {
  %o, %lse = flash.attention %q, %k, %v scale = 0.125 mask = #flash.mask<causal> num_kv_heads = 4 mask_mod(%chunks) {
  ^bb0(%i: index, %j: index, %ids: tensor<?xi32>):
    %c64 = arith.constant 64 : index
    %qi = arith.divsi %i, %c64 : index
    %ki = arith.divsi %j, %c64 : index
    %a = tensor.extract %ids[%qi] : tensor<?xi32>
    %b = tensor.extract %ids[%ki] : tensor<?xi32>
    %x = arith.index_cast %a : i32 to index
    %y = arith.index_cast %b : i32 to index
    %same = arith.cmpi eq, %x, %y : index
    flash.yield %same : i1
  } : (tensor<?x4x?x64xbf16>, tensor<?x4x?x64xbf16>, tensor<?x4x?x64xbf16>, tensor<?xi32>)
    -> (tensor<?x4x?x64xbf16>, tensor<?x4x?xf32>)
  return %o : tensor<?x4x?x64xbf16>
}
