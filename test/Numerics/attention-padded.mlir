// Head dims that are not multiples of 32 (Stable Diffusion's 40, DiT's 72, Phi-2's 80, and 8,
// 136, 248): the kernels compute on tiles padded to whole 64-byte swizzle rows (16-bit) or whole
// 16-column fragments (f32), with every load and store limited to the true width
// (test/Passes/flash-tile.mlir shows the tile IR). The padding loads as zeros, so Q·Kᵀ, P·V, the
// row dots and every gradient match float64 exactly as unpadded kernels would: f32 to 1e-5, 16-bit
// to the bf16-sized bound of attention-bf16.mlir. Forward and backward, both backward forms and
// the deterministic one; causal, window, softcap, GQA, Dv != D, ragged sequence lengths.
//
// RUN: flash-run-tile %s --backward --tolerance=2e-2 | FileCheck %s
// RUN: flash-run-tile %s --backward --backward-form=transposed --tolerance=2e-2 | FileCheck %s
// RUN: flash-run-tile %s --backward --deterministic --tolerance=2e-2 | FileCheck %s
// RUN: flash-run-tile %S/Inputs/attention-padded-f32.mlir --backward --tolerance=1e-5 | FileCheck %S/Inputs/attention-padded-f32.mlir
// RUN: flash-run-tile %S/Inputs/attention-padded-f32.mlir --backward --backward-form=transposed --block-m=32 --block-n=16 --warps=1 --tolerance=1e-5 | FileCheck %S/Inputs/attention-padded-f32.mlir
// The padding is visible in the kernels these runs execute (forwards, planned for sm_90a: D = 80 is
// the warp-specialised kernel's, 128-column panels; D = 8 stays mma.sync, 32 columns):
// RUN: flash-run-tile %s --print-tile-ir --tolerance=2e-2 2>&1 | FileCheck %s --check-prefix=TILE
// TILE-DAG: limit[%{{.*}}, %c80] {{.*}} : <1x2x70x80xbf16> -> <128x128xbf16, shared>
// TILE-DAG: limit[%{{.*}}, %c8] {{.*}} : <1x2x37x8xbf16> -> <128x32xbf16, shared>

// CHECK-NOT: FAIL
// CHECK: @d8_causal forward result 0: {{.*}} ok
// CHECK: @d8_causal backward d_q: {{.*}} ok
// CHECK: @d8_causal backward d_k: {{.*}} ok
// CHECK: @d8_causal backward d_v: {{.*}} ok
// CHECK: @d40_f16_full backward d_v: {{.*}} ok
// CHECK: @d72_gqa_window_dv40 forward result 0: {{.*}} ok
// CHECK: @d72_gqa_window_dv40 backward d_q: {{.*}} ok
// CHECK: @d72_gqa_window_dv40 backward d_k: {{.*}} ok
// CHECK: @d72_gqa_window_dv40 backward d_v: {{.*}} ok
// CHECK: @d80_causal backward d_v: {{.*}} ok
// CHECK: @d112_softcap backward d_v: {{.*}} ok
// CHECK: @d136_f16_causal backward d_v: {{.*}} ok
// CHECK: @d248_gqa backward d_v: {{.*}} ok

func.func @d8_causal(%q: tensor<1x2x37x8xbf16>, %k: tensor<1x2x37x8xbf16>, %v: tensor<1x2x37x8xbf16>) -> tensor<1x2x37x8xbf16> {
  %out, %lse = flash.attention %q, %k, %v scale = 0.35355339059327373 mask = #flash.mask<causal> num_kv_heads = 2
      : (tensor<1x2x37x8xbf16>, tensor<1x2x37x8xbf16>, tensor<1x2x37x8xbf16>) -> (tensor<1x2x37x8xbf16>, tensor<1x2x37xf32>)
  return %out : tensor<1x2x37x8xbf16>
}

func.func @d40_f16_full(%q: tensor<2x1x33x40xf16>, %k: tensor<2x1x45x40xf16>, %v: tensor<2x1x45x40xf16>) -> tensor<2x1x33x40xf16> {
  %out, %lse = flash.attention %q, %k, %v scale = 0.15811388300841897 mask = #flash.mask<none> num_kv_heads = 1
      : (tensor<2x1x33x40xf16>, tensor<2x1x45x40xf16>, tensor<2x1x45x40xf16>) -> (tensor<2x1x33x40xf16>, tensor<2x1x33xf32>)
  return %out : tensor<2x1x33x40xf16>
}

func.func @d72_gqa_window_dv40(%q: tensor<1x4x50x72xbf16>, %k: tensor<1x2x50x72xbf16>, %v: tensor<1x2x50x40xbf16>) -> tensor<1x4x50x40xbf16> {
  %out, %lse = flash.attention %q, %k, %v scale = 0.11785113019775793 mask = #flash.mask<sliding_window, left = 16, right = 0> num_kv_heads = 2
      : (tensor<1x4x50x72xbf16>, tensor<1x2x50x72xbf16>, tensor<1x2x50x40xbf16>) -> (tensor<1x4x50x40xbf16>, tensor<1x4x50xf32>)
  return %out : tensor<1x4x50x40xbf16>
}

func.func @d80_causal(%q: tensor<1x2x70x80xbf16>, %k: tensor<1x2x70x80xbf16>, %v: tensor<1x2x70x80xbf16>) -> tensor<1x2x70x80xbf16> {
  %out, %lse = flash.attention %q, %k, %v scale = 0.11180339887498948 mask = #flash.mask<causal> num_kv_heads = 2
      : (tensor<1x2x70x80xbf16>, tensor<1x2x70x80xbf16>, tensor<1x2x70x80xbf16>) -> (tensor<1x2x70x80xbf16>, tensor<1x2x70xf32>)
  return %out : tensor<1x2x70x80xbf16>
}

func.func @d112_softcap(%q: tensor<1x1x40x112xbf16>, %k: tensor<1x1x40x112xbf16>, %v: tensor<1x1x40x112xbf16>) -> tensor<1x1x40x112xbf16> {
  %out, %lse = flash.attention %q, %k, %v scale = 0.09449111825230679 mask = #flash.mask<none> softcap = 5.0 num_kv_heads = 1
      : (tensor<1x1x40x112xbf16>, tensor<1x1x40x112xbf16>, tensor<1x1x40x112xbf16>) -> (tensor<1x1x40x112xbf16>, tensor<1x1x40xf32>)
  return %out : tensor<1x1x40x112xbf16>
}

func.func @d136_f16_causal(%q: tensor<1x1x41x136xf16>, %k: tensor<1x1x41x136xf16>, %v: tensor<1x1x41x136xf16>) -> tensor<1x1x41x136xf16> {
  %out, %lse = flash.attention %q, %k, %v scale = 0.08574929257125441 mask = #flash.mask<causal> num_kv_heads = 1
      : (tensor<1x1x41x136xf16>, tensor<1x1x41x136xf16>, tensor<1x1x41x136xf16>) -> (tensor<1x1x41x136xf16>, tensor<1x1x41xf32>)
  return %out : tensor<1x1x41x136xf16>
}

func.func @d248_gqa(%q: tensor<1x2x20x248xbf16>, %k: tensor<1x1x20x248xbf16>, %v: tensor<1x1x20x248xbf16>) -> tensor<1x2x20x248xbf16> {
  %out, %lse = flash.attention %q, %k, %v scale = 0.0635 mask = #flash.mask<none> num_kv_heads = 1
      : (tensor<1x2x20x248xbf16>, tensor<1x1x20x248xbf16>, tensor<1x1x20x248xbf16>) -> (tensor<1x2x20x248xbf16>, tensor<1x2x20xf32>)
  return %out : tensor<1x2x20x248xbf16>
}
