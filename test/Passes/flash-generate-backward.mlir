// RUN: flash-opt %s -split-input-file -verify-diagnostics --flash-generate-backward=form=rows | FileCheck %s
// RUN: flash-opt %s -split-input-file -verify-diagnostics --flash-generate-backward=deterministic=true | FileCheck %s --check-prefix=DET
// RUN: flash-opt %s -split-input-file -verify-diagnostics --flash-generate-backward="form=transposed target=sm_80" | FileCheck %s --check-prefix=TR
// RUN: flash-opt %s -split-input-file -verify-diagnostics --flash-generate-backward=form=transposed | FileCheck %s --check-prefix=TR90
// RUN: flash-opt %s -split-input-file -verify-diagnostics --flash-generate-backward | FileCheck %s --check-prefix=AUTO
// RUN: flash-opt %s -split-input-file -verify-diagnostics --flash-generate-backward=target=sm_80 | FileCheck %s --check-prefix=AUTO80
// RUN: not flash-opt %s -split-input-file --flash-generate-backward=form=columns 2>&1 | FileCheck %s --check-prefix=BADFORM
// Sizes no kernel can run are refused at the op, before the backward is built (Inputs/kernel-limits.mlir):
// RUN: flash-opt %S/Inputs/kernel-limits.mlir -split-input-file -verify-diagnostics --flash-generate-backward
// RUN: not flash-opt %S/Inputs/kernel-limits.mlir -split-input-file --flash-generate-backward 2>&1 | FileCheck %s --check-prefix=LIMITS
// LIMITS: kernel-limits.mlir{{.*}}:14: error: flash-generate-backward: head dim D = 9223372036854775807 (query and key) is not supported by the kernels
// BADFORM: unknown form 'columns' (expected auto, rows or transposed)
// The gradients these kernels compute are checked numerically by
// test/Numerics/attention*.mlir and ffn*.mlir (CPU executor vs float64).

// Attention backward from the saved lse, GQA 8:2, causal, bf16.
// Preprocess: D = rowsum(dO ∘ O), and the f32 dQ accumulator (the main kernel
// adds into it atomically) zeroed in the same pass: its workspace is marked
// tile.zeroed_in_program, so the manifest asks the runtime for no zero fill.
// CHECK-LABEL: tile.kernel @attn_attention_bwd_preprocess(
// CHECK-SAME: spec = #tile.attention<role = attention_backward_preprocess
// CHECK: %[[O:.*]] = tile.load %arg0
// CHECK: %[[DO:.*]] = tile.load %arg1
// CHECK: %[[D:.*]] = tile.row_dot %[[O]], %[[DO]]
// CHECK: tile.store_rows %[[D]], %arg2
// CHECK: %[[ZEROS:.*]] = tile.fill 0.0{{.*}} : <64x64xf32, register>
// CHECK: tile.store %[[ZEROS]], %arg3
//
// Main kernel: one block per (key block, kv head, batch); K, V stay in shared
// memory; loops over the query heads of the group and over the query blocks
// that can see this key block (causal: from block floor((col0 - off) / Br)).
// CHECK-LABEL: tile.kernel @attn_attention_bwd(
// CHECK-SAME: block_m = 64 : i64, block_n = 64 : i64
// CHECK-SAME: grid = [#tile.grid<ceildiv(arg1[2], 64)>, #tile.grid<arg1[1]>, #tile.grid<arg1[0]>]
// CHECK: %[[COL0:.*]] = arith.muli %{{.*}}, %c64
// CHECK: %[[KT:.*]] = tile.load %arg1[{{.*}}, %[[COL0]], %c0]
// CHECK: %[[VT:.*]] = tile.load %arg2[{{.*}}, %[[COL0]], %c0]
// CHECK: %[[QB0:.*]] = arith.floordivsi
// CHECK: scf.for %[[G:.*]] = %c0 to %[[GROUP:.*]] step %c1
// CHECK: scf.for %{{.*}} = %[[QB0]] to
// CHECK: %[[QT:.*]] = tile.load %arg0
// CHECK: %[[DOT:.*]] = tile.load %arg3
// CHECK: %[[LSE:.*]] = tile.load_rows %arg4
// CHECK: %[[DR:.*]] = tile.load_rows %arg5
// CHECK: tile.matmul %[[QT]], %[[KT]], %{{.*}} transpose_b
// CHECK: scf.if
// CHECK: tile.mask
// P = exp(S·scale - lse), recomputed block by block (never N x N)
// CHECK: %[[P:.*]] = tile.recompute_probs %{{.*}}, %[[LSE]] scale 1.250000e-01
// dV += Pᵀ·dO (P through shared memory to be a transposed operand)
// CHECK: %[[PB:.*]] = tile.convert %[[P]]
// CHECK: %[[PS:.*]] = tile.copy %[[PB]] : <64x64xbf16, register> -> <64x64xbf16, shared>
// CHECK: tile.matmul %[[PS]], %[[DOT]], %{{.*}} transpose_a
// dP = dO·Vᵀ; dS = P∘(dP - D), scaled once for dK and dQ
// CHECK: %[[DP:.*]] = tile.matmul %[[DOT]], %[[VT]], %{{.*}} transpose_b
// CHECK: %[[DS:.*]] = tile.softmax_grad %[[P]], %[[DP]], %[[DR]]
// CHECK: %[[DSS:.*]] = tile.scale %[[DS]] by 1.250000e-01
// CHECK: %[[DSB:.*]] = tile.convert %[[DSS]]
// CHECK: %[[DSSH:.*]] = tile.copy %[[DSB]]
// dK += dSᵀ·Q; dQ += dS·K with f32 atomics
// CHECK: tile.matmul %[[DSSH]], %[[QT]], %{{.*}} transpose_a
// CHECK: %[[DQ:.*]] = tile.matmul %[[DSSH]], %[[KT]], %{{.*}} : <64x64xbf16, shared>, <64x64xbf16, shared> -> <64x64xf32, register>
// CHECK: tile.atomic_add %[[DQ]], %arg6
// CHECK: tile.store %{{.*}}, %arg7
// CHECK: tile.store %{{.*}}, %arg8
// CHECK-LABEL: tile.kernel @attn_attention_bwd_postprocess(
// CHECK: %[[ACC:.*]] = tile.load %arg0
// CHECK: %[[DQB:.*]] = tile.convert %[[ACC]] : <64x64xf32, shared> -> <64x64xbf16, register>
// CHECK: tile.store %[[DQB]], %arg1
//
// The program: named arguments, f32 workspaces, three launches in order.
// CHECK-LABEL: func.func @attn_backward(
// CHECK-SAME: {tile.dims = ["B", "", "Sq", ""], tile.name = "q"}
// CHECK-SAME: {tile.dims = ["B", "", "Sk", ""], tile.name = "k"}
// CHECK-SAME: {tile.dims = ["B", "", "Sq"], tile.name = "lse"}
// CHECK-SAME: {tile.dims = ["B", "", "Sq", ""], tile.name = "dout"}
// CHECK-SAME: {tile.dims = ["B", "", "Sq", ""], tile.name = "dq"}
// CHECK-SAME: {tile.dims = ["B", "", "Sk", ""], tile.name = "dv"}) attributes {tile.program}
// CHECK: %[[DELTA:.*]] = tile.alloc_tensor(%{{.*}}, %{{.*}}) {tile.name = "delta"} : <?x8x?xf32>
// CHECK: %[[ACCUM:.*]] = tile.alloc_tensor(%{{.*}}, %{{.*}}) {tile.name = "dq_accum", tile.zeroed_in_program} : <?x8x?x64xf32>
// CHECK: tile.launch @attn_attention_bwd_preprocess(%arg3, %arg5, %[[DELTA]], %[[ACCUM]])
// CHECK: tile.launch @attn_attention_bwd(%arg0, %arg1, %arg2, %arg5, %arg4, %[[DELTA]], %[[ACCUM]], %arg7, %arg8)
// CHECK: tile.launch @attn_attention_bwd_postprocess(%[[ACCUM]], %arg6)
// The forward function is left for flash-tile.
// CHECK: func.func @attn(
// CHECK: flash.attention
//
// Deterministic: no atomics; dQ from its own kernel over query blocks.
// DET-LABEL: tile.kernel @attn_attention_bwd_kv(
// DET-NOT: tile.atomic_add
// DET-LABEL: tile.kernel @attn_attention_bwd_dq(
// DET-SAME: grid = [#tile.grid<ceildiv(arg0[2], 128)>, #tile.grid<arg0[1]>, #tile.grid<arg0[0]>]
// DET: scf.for
// DET: tile.recompute_probs
// DET: tile.softmax_grad
// DET: tile.store %{{.*}}, %arg6
// DET-LABEL: func.func @attn_backward(
// DET: %[[DELTA:.*]] = tile.alloc_tensor
// DET-NOT: tile.alloc_tensor
// DET: tile.launch @attn_attention_bwd_preprocess(%arg3, %arg5, %[[DELTA]])
// DET: tile.launch @attn_attention_bwd_kv(%arg0, %arg1, %arg2, %arg5, %arg4, %[[DELTA]], %arg7, %arg8)
// DET: tile.launch @attn_attention_bwd_dq(%arg0, %arg1, %arg2, %arg5, %arg4, %[[DELTA]], %arg6)
// S^T form: S^T = K·Qᵀ with keys on the rows; per-query lse and D are
// column vectors in shared memory; Pᵀ and dSᵀ feed dV and dK from registers;
// only dSᵀ is copied to shared memory (for dQ = (dSᵀ)ᵀ·K).
// TR-LABEL: tile.kernel @attn_attention_bwd(
// TR-SAME: block_m = 64 : i64, block_n = 128 : i64
// TR-SAME: role = attention_backward_transposed
// TR-SAME: warps = 8
// TR: %[[KT:.*]] = tile.load %arg1
// TR: %[[QT:.*]] = tile.load %arg0
// TR: %[[DOT:.*]] = tile.load %arg3
// TR: %[[LSE:.*]] = tile.load_rows %arg4{{.*}} -> <64xf32, shared>
// TR: %[[D:.*]] = tile.load_rows %arg5{{.*}} -> <64xf32, shared>
// TR: tile.matmul %[[KT]], %[[QT]], %{{.*}} transpose_b : <128x64xbf16, shared>, <64x64xbf16, shared> -> <128x64xf32, register>
// TR: tile.mask {{.*}} window[-1, 0] transposed
// TR: %[[P:.*]] = tile.recompute_probs %{{.*}}, %[[LSE]] scale 1.250000e-01 : <128x64xf32, register>, <64xf32, shared>
// TR: %[[PB:.*]] = tile.convert %[[P]]
// TR: tile.matmul %[[PB]], %[[DOT]], %{{.*}} : <128x64xbf16, register>, <64x64xbf16, shared> -> <128x64xf32, register>
// TR: %[[DS:.*]] = tile.softmax_grad %[[P]], %{{.*}}, %[[D]]
// TR: %[[DSS:.*]] = tile.copy
// TR: tile.matmul %[[DSS]], %[[KT]], %{{.*}} transpose_a : <128x64xbf16, shared>, <128x64xbf16, shared> -> <64x64xf32, register>
// TR: tile.atomic_add
// form=auto (the default) picks the Sᵀ form where the target runs it as wgmma
// (sm_90a, 16-bit, D = 64/128), the row form elsewhere.
// AUTO-LABEL: tile.kernel @attn_attention_bwd(
// AUTO-SAME: role = attention_backward_transposed
// AUTO80-LABEL: tile.kernel @attn_attention_bwd(
// AUTO80-SAME: role = attention_backward,
// sm_90a (wgmma) at D = 64: 128 queries a step, as FA3.
// TR90-LABEL: tile.kernel @attn_attention_bwd(
// TR90-SAME: block_m = 128 : i64, block_n = 128 : i64
// TR90: tile.load_rows %arg4{{.*}} -> <128xf32, shared>
func.func @attn(%q: tensor<?x8x?x64xbf16>, %k: tensor<?x2x?x64xbf16>, %v: tensor<?x2x?x64xbf16>) -> tensor<?x8x?x64xbf16> {
  %out, %lse = flash.attention %q, %k, %v scale = 0.125 mask = #flash.mask<causal> num_kv_heads = 2
      : (tensor<?x8x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x2x?x64xbf16>) -> (tensor<?x8x?x64xbf16>, tensor<?x8x?xf32>)
  return %out : tensor<?x8x?x64xbf16>
}

// -----

// FFN backward: it reads what the training forward saved (pre = x·W1 + b1
// and h = act(pre)): dh = dy·W2ᵀ as a plain GEMM, then dpre = dh ∘ act'(pre)
// elementwise (ffn_activation_grad), then GEMMs with transposed operands and
// column sums for the bias gradients. The weight gradients have one output
// tile each, so their contraction over the M rows is split in slices of 4096
// over grid z (gemm_split_k), added atomically into a zeroed f32 workspace,
// then converted (convert_f32).
// CHECK-LABEL: tile.kernel @ffn_ffn_bwd_dh(
// CHECK-SAME: role = gemm, activation = identity, transpose_a = false, transpose_b = true
// dpre = dh ∘ act'(pre), pre read in the element type (f32 here)
// CHECK-LABEL: tile.kernel @ffn_ffn_bwd_act(
// CHECK-SAME: role = ffn_activation_grad, activation = gelu_tanh
// CHECK: %[[DH:.*]] = tile.load %arg0
// CHECK: %[[PRE_SMEM:.*]] = tile.load %arg1
// CHECK: %[[DH32:.*]] = tile.convert %[[DH]]
// CHECK: %[[PRE16:.*]] = tile.convert %[[PRE_SMEM]]
// CHECK: tile.activation_grad gelu_tanh %[[DH32]], %[[PRE16]]
// CHECK: tile.store %{{.*}}, %arg2
// CHECK-NOT: tile.store
// CHECK: tile.return
// CHECK-LABEL: tile.kernel @ffn_ffn_bwd_dw2(
// CHECK-SAME: #tile.grid<ceildiv(arg0[0], 4096)>
// CHECK-SAME: role = gemm_split_k
// CHECK-SAME: transpose_a = true
// CHECK: %[[SLICE:.*]] = tile.program_id z
// CHECK: %[[FIRST:.*]] = arith.muli %[[SLICE]], %c128
// CHECK: scf.for %{{.*}} = %[[FIRST]] to
// CHECK: tile.matmul {{.*}} transpose_a
// CHECK: tile.atomic_add
// CHECK-LABEL: tile.kernel @ffn_ffn_bwd_dw2_convert(
// CHECK-SAME: role = convert_f32
// CHECK: tile.convert
// CHECK-LABEL: tile.kernel @ffn_ffn_bwd_dx(
// CHECK-SAME: transpose_b = true
// CHECK-LABEL: tile.kernel @ffn_ffn_bwd_db2(
// CHECK-SAME: role = column_sum
// CHECK: tile.fill 1.000000e+00
// Arguments: x, w1, b1, w2, b2, the saved pre and h, dy, then the gradients.
// CHECK-LABEL: func.func @ffn_backward(
// CHECK-SAME: {tile.dims = ["M", ""], tile.name = "x"}
// CHECK-SAME: %arg5: !tile.tensor<?x128xf32> {tile.dims = ["M", ""], tile.name = "pre"}
// CHECK-SAME: %arg6: !tile.tensor<?x128xf32> {tile.dims = ["M", ""], tile.name = "h"}
// CHECK-SAME: %arg7: !tile.tensor<?x32xf32> {tile.dims = ["M", ""], tile.name = "dy"}
// CHECK-SAME: {tile.dims = ["M", ""], tile.name = "dx"}
// CHECK-SAME: {tile.name = "db2"}) attributes {tile.program}
// CHECK-NOT: tile.name = "pre"
// CHECK: %[[DPRE:.*]] = tile.alloc_tensor({{.*}}) {tile.name = "dpre"}
// CHECK: %[[DH:.*]] = tile.alloc_tensor({{.*}}) {tile.name = "dh"}
// CHECK: tile.launch @ffn_ffn_bwd_dh(%arg7, %arg3, %[[DH]])
// CHECK: tile.launch @ffn_ffn_bwd_act(%[[DH]], %arg5, %[[DPRE]])
// CHECK: %[[DW2:.*]] = tile.alloc_tensor() {tile.name = "dw2_accum"} : <128x32xf32>
// CHECK: tile.launch @ffn_ffn_bwd_dw2(%arg6, %arg7, %[[DW2]])
// CHECK: tile.launch @ffn_ffn_bwd_dw2_convert(%[[DW2]], %arg11)
// CHECK: %[[DW1:.*]] = tile.alloc_tensor() {tile.name = "dw1_accum"} : <64x128xf32>
// CHECK: tile.launch @ffn_ffn_bwd_dw1(%arg0, %[[DPRE]], %[[DW1]])
// CHECK: tile.launch @ffn_ffn_bwd_dw1_convert(%[[DW1]], %arg9)
// CHECK: tile.launch @ffn_ffn_bwd_dx(%[[DPRE]], %arg1, %arg8)
// CHECK: tile.launch @ffn_ffn_bwd_db2(%arg7, %arg12)
// CHECK: tile.launch @ffn_ffn_bwd_db1(%[[DPRE]], %arg10)
// The forward again, marked for flash-tile's training form (it saves pre and h).
// CHECK-LABEL: func.func @ffn(
// CHECK-LABEL: func.func @ffn_forward_train(
// CHECK-SAME: -> tensor<?x32xf32> attributes {flash.train_forward}
// CHECK: flash.ffn gelu_tanh
// Deterministic mode: no float atomics, so one block per weight-gradient tile.
// DET-LABEL: tile.kernel @ffn_ffn_bwd_dw2(
// DET-SAME: role = gemm,
// DET-NOT: tile.atomic_add
// DET-LABEL: func.func @ffn_backward(
// DET-NOT: _accum
// DET: tile.launch @ffn_ffn_bwd_dw2(%arg6, %arg7, %arg11)
func.func @ffn(%x: tensor<?x64xf32>, %w1: tensor<64x128xf32>, %b1: tensor<128xf32>, %w2: tensor<128x32xf32>, %b2: tensor<32xf32>) -> tensor<?x32xf32> {
  %y = flash.ffn gelu_tanh %x, %w1 bias %b1, %w2 bias %b2
      : (tensor<?x64xf32>, tensor<64x128xf32>, tensor<128xf32>, tensor<128x32xf32>, tensor<32xf32>) -> tensor<?x32xf32>
  return %y : tensor<?x32xf32>
}

// -----

// A 16-bit FFN on sm_90a: dpre = (dy·W2ᵀ) ∘ act'(pre) is one GEMM with the
// derivative in its epilogue (act_grad: the warp-specialised GEMM loads pre's
// tile under the product; 1.05-1.19x eager's two kernels on the H200), so no
// dh tensor and no elementwise kernel. sm_80 keeps the split form.
// CHECK-LABEL: tile.kernel @ffn16_ffn_bwd_dpre(
// CHECK-SAME: %arg0: !tile.tensor<?x64xbf16>, %arg1: !tile.tensor<128x64xbf16>, %arg2: !tile.tensor<?x128xbf16>, %arg3: !tile.tensor<?x128xbf16>
// CHECK-SAME: role = gemm, activation = silu, transpose_a = false, transpose_b = true
// CHECK-SAME: act_grad = true
// acc = Σ_k dy[:, k]·W2[:, k]ᵀ over the K steps
// CHECK: %[[ACC:.*]] = scf.for
// CHECK: tile.matmul {{.*}} transpose_b
// P = pre's tile, in bf16 as the training forward saved it
// CHECK: %[[P:.*]] = tile.load %arg2
// CHECK: %[[P16:.*]] = tile.convert %[[P]]
// dpre = acc ∘ silu'(P), stored as bf16
// CHECK: %[[DPRE:.*]] = tile.activation_grad silu %[[ACC]], %[[P16]]
// CHECK: %[[OUT:.*]] = tile.convert %[[DPRE]]
// CHECK: tile.store %[[OUT]], %arg3
// CHECK-NOT: tile.kernel @ffn16_ffn_bwd_act(
// CHECK-LABEL: func.func @ffn16_backward(
// CHECK-NOT: tile.name = "dh"
// CHECK: %[[DPRE_T:.*]] = tile.alloc_tensor({{.*}}) {tile.name = "dpre"}
// dy (arg5), W2 (arg2), the saved pre (arg3)
// CHECK: tile.launch @ffn16_ffn_bwd_dpre(%arg5, %arg2, %arg3, %[[DPRE_T]])
// CHECK: tile.launch @ffn16_ffn_bwd_dx(%[[DPRE_T]], %arg1, %arg6)
// AUTO80-LABEL: tile.kernel @ffn16_ffn_bwd_dh(
// AUTO80-LABEL: tile.kernel @ffn16_ffn_bwd_act(
// AUTO80-NOT: act_grad
// AUTO80-LABEL: func.func @ffn16_backward(
func.func @ffn16(%x: tensor<?x64xbf16>, %w1: tensor<64x128xbf16>, %w2: tensor<128x64xbf16>) -> tensor<?x64xbf16> {
  %y = flash.ffn silu %x, %w1, %w2
      : (tensor<?x64xbf16>, tensor<64x128xbf16>, tensor<128x64xbf16>) -> tensor<?x64xbf16>
  return %y : tensor<?x64xbf16>
}

// -----

// Must not fire: no fused op, no backward.
// CHECK-LABEL: func.func @plain(
// CHECK-NOT: @plain_backward
func.func @plain(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %y = flash.softmax %x : tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}

// -----

// Softcap: the backward recomputes the capped scores and takes dS back
// through the cap before scaling.
// CHECK-LABEL: tile.kernel @capped_attention_bwd(
// CHECK: %[[CAP:.*]] = tile.softcap %{{.*}} scale 1.250000e-01 cap 3.000000e+01
// CHECK: scf.if
// CHECK: tile.mask %[[CAP]]
// CHECK: tile.recompute_probs %{{.*}}, %{{.*}} scale 1.000000e+00
// CHECK: %[[DS:.*]] = tile.softmax_grad
// CHECK: %[[DSC:.*]] = tile.softcap_grad %[[DS]], %[[CAP]] cap 3.000000e+01
// CHECK: tile.scale %[[DSC]] by 1.250000e-01
func.func @capped(%q: tensor<1x2x64x64xf32>, %k: tensor<1x2x64x64xf32>, %v: tensor<1x2x64x64xf32>) -> tensor<1x2x64x64xf32> {
  %out, %lse = flash.attention %q, %k, %v scale = 0.125 mask = #flash.mask<causal> softcap = 30.0 num_kv_heads = 2
      : (tensor<1x2x64x64xf32>, tensor<1x2x64x64xf32>, tensor<1x2x64x64xf32>) -> (tensor<1x2x64x64xf32>, tensor<1x2x64xf32>)
  return %out : tensor<1x2x64x64xf32>
}

// -----

// Unsupported backward: a warning, no backward program, and the forward
// function is left alone (the default pipeline still compiles it).
// CHECK-LABEL: func.func @unreturned(
// CHECK-NOT: @unreturned_backward
func.func @unreturned(%q: tensor<1x2x64x64xf32>, %k: tensor<1x2x64x64xf32>, %v: tensor<1x2x64x64xf32>) -> tensor<1x2x64xf32> {
  // expected-warning @+1 {{flash-generate-backward: no backward for @unreturned: the attention output is not returned, so there is no gradient to take}}
  %out, %lse = flash.attention %q, %k, %v scale = 0.125 mask = #flash.mask<causal> num_kv_heads = 2
      : (tensor<1x2x64x64xf32>, tensor<1x2x64x64xf32>, tensor<1x2x64x64xf32>) -> (tensor<1x2x64x64xf32>, tensor<1x2x64xf32>)
  return %lse : tensor<1x2x64xf32>
}

// -----

func.func @chained(%q: tensor<1x2x16x32xf32>, %k: tensor<1x2x16x32xf32>, %v: tensor<1x2x16x32xf32>) -> tensor<1x2x16x32xf32> {
  // expected-warning @+1 {{flash-generate-backward: no backward for @chained: a fused result feeds other graph ops; the backward of chained ops is not supported yet}}
  %out, %lse = flash.attention %q, %k, %v scale = 0.125 mask = #flash.mask<none> num_kv_heads = 2
      : (tensor<1x2x16x32xf32>, tensor<1x2x16x32xf32>, tensor<1x2x16x32xf32>) -> (tensor<1x2x16x32xf32>, tensor<1x2x16xf32>)
  %out2, %lse2 = flash.attention %out, %k, %v scale = 0.125 mask = #flash.mask<none> num_kv_heads = 2
      : (tensor<1x2x16x32xf32>, tensor<1x2x16x32xf32>, tensor<1x2x16x32xf32>) -> (tensor<1x2x16x32xf32>, tensor<1x2x16xf32>)
  return %out2 : tensor<1x2x16x32xf32>
}

// -----

func.func @shared_input(%x: tensor<?x64xf32>, %w1: tensor<64x128xf32>, %w2: tensor<128x64xf32>) -> (tensor<?x64xf32>, tensor<?x64xf32>) {
  %y = flash.ffn relu %x, %w1, %w2 : (tensor<?x64xf32>, tensor<64x128xf32>, tensor<128x64xf32>) -> tensor<?x64xf32>
  // expected-warning @+1 {{flash-generate-backward: no backward for @shared_input: a function argument feeds several fused-op operands; summing their gradients is not supported yet}}
  %z = flash.ffn relu %x, %w1, %w2 : (tensor<?x64xf32>, tensor<64x128xf32>, tensor<128x64xf32>) -> tensor<?x64xf32>
  return %y, %z : tensor<?x64xf32>, tensor<?x64xf32>
}

// -----

// Independent fused ops (a transformer block's attention and its FFN on a
// rank-3 stream) share one backward program: each op's inputs, saved outputs
// and cotangent, then all gradients. The FFN weight gradients sum over batch
// and rows: one grid slice per batch, atomically into the f32 workspace.
// CHECK-LABEL: tile.kernel @block_ffn_bwd_dw1(
// CHECK-SAME: #tile.grid<arg0[0]>
// CHECK-SAME: role = gemm_split_k
// CHECK: %[[B:.*]] = tile.program_id z
// CHECK: scf.for
// CHECK: tile.load %arg0[%[[B]], {{.*}}] {{.*}} -> <32x128xf32, shared>
// CHECK: tile.matmul {{.*}} transpose_a
// CHECK: tile.atomic_add
// CHECK-LABEL: func.func @block_backward(
// CHECK-SAME: tile.name = "q"
// CHECK-SAME: tile.name = "out"
// CHECK-SAME: tile.name = "lse"
// CHECK-SAME: tile.name = "dout"
// CHECK-SAME: {tile.dims = ["Bf", "M", ""], tile.name = "x"}
// CHECK-SAME: tile.name = "w1"
// CHECK-SAME: tile.name = "w2"
// CHECK-SAME: {tile.dims = ["Bf", "M", ""], tile.name = "dy"}
// CHECK-SAME: tile.name = "dq"
// CHECK-SAME: tile.name = "dk"
// CHECK-SAME: tile.name = "dv"
// CHECK-SAME: tile.name = "dx"
// CHECK-SAME: tile.name = "dw1"
// CHECK-SAME: tile.name = "dw2"
// CHECK: tile.launch @block_attention_bwd_preprocess
// CHECK: tile.launch @block_attention_bwd(
// CHECK: tile.launch @block_attention_bwd_postprocess
// CHECK: tile.launch @block_ffn_bwd_dh
// CHECK: tile.launch @block_ffn_bwd_act
// CHECK: tile.launch @block_ffn_bwd_dx
// CHECK-LABEL: func.func @block_forward_train(
// CHECK-SAME: attributes {flash.train_forward}
func.func @block(%q: tensor<?x4x?x32xf32>, %k: tensor<?x4x?x32xf32>, %v: tensor<?x4x?x32xf32>,
                 %x: tensor<?x?x64xf32>, %w1: tensor<64x128xf32>, %w2: tensor<128x64xf32>)
    -> (tensor<?x4x?x32xf32>, tensor<?x?x64xf32>) {
  %out, %lse = flash.attention %q, %k, %v scale = 0.125 mask = #flash.mask<causal> num_kv_heads = 4
      : (tensor<?x4x?x32xf32>, tensor<?x4x?x32xf32>, tensor<?x4x?x32xf32>) -> (tensor<?x4x?x32xf32>, tensor<?x4x?xf32>)
  %y = flash.ffn gelu_erf %x, %w1, %w2 : (tensor<?x?x64xf32>, tensor<64x128xf32>, tensor<128x64xf32>) -> tensor<?x?x64xf32>
  return %out, %y : tensor<?x4x?x32xf32>, tensor<?x?x64xf32>
}

// -----

// Phi-2's head dim 80: every backward kernel computes on tiles padded to 96 columns (whole 64-byte
// swizzle rows); loads, stores and the dQ atomics are limited to the 80 real columns, so the
// padding is zeros in every product and row dot and is never written (the f32 dQ accumulator
// stays [.., 80]). Both forms.
// CHECK-LABEL: tile.kernel @phi_attention_bwd_preprocess(
// CHECK: tile.load %arg0[{{.*}}] limit[%{{.*}}, %c80] : <?x2x?x80xbf16> -> <64x96xbf16, shared>
// CHECK: tile.row_dot
// CHECK-LABEL: tile.kernel @phi_attention_bwd(
// CHECK: tile.load %arg1[{{.*}}] limit[%{{.*}}, %c80] : <?x2x?x80xbf16> -> <64x96xbf16, shared>
// CHECK: tile.atomic_add {{.*}} limit[%{{.*}}, %c80] : <64x96xf32, register>, <?x2x?x80xf32>
// CHECK: tile.store {{.*}} limit[%{{.*}}, %c80] : <64x96xbf16, register>, <?x2x?x80xbf16>
// CHECK-LABEL: tile.kernel @phi_attention_bwd_postprocess(
// CHECK: tile.load %arg0[{{.*}}] limit[%{{.*}}, %c80] : <?x2x?x80xf32> -> <64x96xf32, shared>
// sm_90a plans the Sᵀ kernel as the warp-specialised backward's key split (Q / K
// padded to 128-column tiles; the TMA zero-fills the padding).
// TR90-LABEL: tile.kernel @phi_attention_bwd(
// TR90-SAME: block_m = 64 : i64, block_n = 128 : i64
// TR90-SAME: role = attention_backward_transposed
// TR90-SAME: strategy = #tile.strategy<wgmma_ws_sm90>, warps = 8 : i64
// TR90: tile.atomic_add {{.*}} limit[%{{.*}}, %c80] : <64x128xf32, register>, <?x2x?x80xf32>
// TR90: tile.store {{.*}} limit[%{{.*}}, %c80] : <128x128xbf16, register>, <?x2x?x80xbf16>
// DET-LABEL: tile.kernel @phi_attention_bwd_dq(
// DET: tile.store {{.*}} limit[%{{.*}}, %c80] : <64x96xbf16, register>, <?x2x?x80xbf16>
func.func @phi(%q: tensor<?x2x?x80xbf16>, %k: tensor<?x2x?x80xbf16>, %v: tensor<?x2x?x80xbf16>) -> (tensor<?x2x?x80xbf16>, tensor<?x2x?xf32>) {
  %o, %lse = flash.attention %q, %k, %v scale = 0.11180339887 mask = #flash.mask<causal> num_kv_heads = 2
      : (tensor<?x2x?x80xbf16>, tensor<?x2x?x80xbf16>, tensor<?x2x?x80xbf16>) -> (tensor<?x2x?x80xbf16>, tensor<?x2x?xf32>)
  return %o, %lse : tensor<?x2x?x80xbf16>, tensor<?x2x?xf32>
}

// -----

// A gated FFN of widths that are not multiples of 8 (#22: d = 333, h = 1001, d_out = 77): its
// backward builds as any other (was refused). It reads the saved gate, up and h; the elementwise
// kernel stores dup and dgate limited to h = 1001; the weight gradients split K over the rows into f32
// accumulators of 77 and 1001 columns (the runtime pads their rows to 16 bytes), each atomic add and
// conversion limited to the width.
// CHECK-LABEL: tile.kernel @gated_any_ffn_bwd_dh(
// CHECK: tile.store {{.*}} : <128x256xbf16, register>, <?x1001xbf16>
// CHECK-LABEL: tile.kernel @gated_any_ffn_bwd_act(
// CHECK-SAME: block_m = 64 : i64, block_n = 32 : i64
// CHECK-SAME: role = ffn_activation_grad
// CHECK-SAME: gated = true
// CHECK: tile.load %arg0
// CHECK: tile.load %arg1
// CHECK: tile.load %arg2
// CHECK-COUNT-2: tile.store {{.*}} : <64x32xbf16, register>, <?x1001xbf16>
// CHECK-NOT: tile.store
// CHECK-LABEL: tile.kernel @gated_any_ffn_bwd_dw2(
// CHECK-SAME: role = gemm_split_k
// CHECK: tile.atomic_add {{.*}} : <128x128xf32, register>, <1001x77xf32>
// CHECK-LABEL: tile.kernel @gated_any_ffn_bwd_dw2_convert(
// CHECK: tile.store {{.*}} : <128x128xbf16, register>, <1001x77xbf16>
// CHECK-LABEL: tile.kernel @gated_any_ffn_bwd_dw1(
// CHECK: tile.atomic_add {{.*}} : <128x128xf32, register>, <333x1001xf32>
// CHECK-LABEL: tile.kernel @gated_any_ffn_bwd_dx(
// CHECK: tile.store {{.*}} : <128x256xbf16, register>, <?x333xbf16>
// CHECK-LABEL: tile.kernel @gated_any_ffn_bwd_dw_up(
// CHECK: tile.atomic_add {{.*}} : <128x128xf32, register>, <333x1001xf32>
// CHECK-LABEL: func.func @gated_any_backward(
// CHECK-SAME: tile.name = "gate"
// CHECK-SAME: tile.name = "up"
// CHECK-SAME: tile.name = "h"
// CHECK-NOT: tile.name = "h"
// CHECK: tile.alloc_tensor() {tile.name = "dw2_accum"} : <1001x77xf32>
func.func @gated_any(%x: tensor<?x333xbf16>, %wg: tensor<333x1001xbf16>, %wu: tensor<333x1001xbf16>, %w2: tensor<1001x77xbf16>) -> tensor<?x77xbf16> {
  %y = flash.ffn silu %x, %wg up %wu, %w2 : (tensor<?x333xbf16>, tensor<333x1001xbf16>, tensor<333x1001xbf16>, tensor<1001x77xbf16>) -> tensor<?x77xbf16>
  return %y : tensor<?x77xbf16>
}

// -----

// Two attentions sharing one run-time key offset: the backward program takes
// it once, last; the kernels that compute scores (dK/dV, dQ) take it, the row
// dots and the dQ conversion do not.
// CHECK-LABEL: tile.kernel @shifted_attention_bwd_preprocess(
// CHECK-NOT: i32
// CHECK-SAME: key_offset = true
// CHECK-LABEL: tile.kernel @shifted_attention_bwd(
// CHECK-SAME: %arg9: i32
// CHECK-LABEL: func.func @shifted_backward(
// CHECK-SAME: %arg18: i32 {tile.name = "key_offset"}
// CHECK: tile.launch @shifted_attention_bwd({{.*}}, %arg18)
// CHECK: tile.launch @shifted_attention2_bwd({{.*}}, %arg18)
// DET-LABEL: func.func @shifted_backward(
// DET: tile.launch @shifted_attention_bwd_preprocess(%arg3, %arg5, %{{.*}}) :
// DET: tile.launch @shifted_attention_bwd_kv({{.*}}, %arg18)
// DET: tile.launch @shifted_attention_bwd_dq({{.*}}, %arg18)
func.func @shifted(%q: tensor<?x2x?x64xbf16>, %k: tensor<?x2x?x64xbf16>, %v: tensor<?x2x?x64xbf16>,
                   %q2: tensor<?x2x?x64xbf16>, %k2: tensor<?x2x?x64xbf16>, %v2: tensor<?x2x?x64xbf16>, %off: i32)
    -> (tensor<?x2x?x64xbf16>, tensor<?x2x?xf32>, tensor<?x2x?x64xbf16>, tensor<?x2x?xf32>) {
  %o, %lse = flash.attention %q, %k, %v key_offset = %off scale = 0.125 mask = #flash.mask<causal> num_kv_heads = 2
      : (tensor<?x2x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x2x?x64xbf16>, i32) -> (tensor<?x2x?x64xbf16>, tensor<?x2x?xf32>)
  %o2, %lse2 = flash.attention %q2, %k2, %v2 key_offset = %off scale = 0.125 mask = #flash.mask<sliding_window, left = 32, right = 0> num_kv_heads = 2
      : (tensor<?x2x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x2x?x64xbf16>, i32) -> (tensor<?x2x?x64xbf16>, tensor<?x2x?xf32>)
  return %o, %lse, %o2, %lse2 : tensor<?x2x?x64xbf16>, tensor<?x2x?xf32>, tensor<?x2x?x64xbf16>, tensor<?x2x?xf32>
}

// -----

// A mask modifier that reads a tensor (document ids): the tensor is an input of the
// backward program without a gradient (after q, k, v); a kernel of role
// attention_mask_blocks_transposed fills the table of its block classes with rows of
// keys, which the dK/dV kernel (the warp-specialised one walks it) takes after the
// tensor. The deterministic pair is never warp-specialised: no table.
// CHECK-LABEL: tile.kernel @documents_attention_bwd_mask_blocks_keys(
// CHECK-SAME: role = attention_mask_blocks_transposed
// CHECK-LABEL: tile.kernel @documents_attention_bwd(
// CHECK-SAME: %arg9: !tile.tensor<?xi32>, %arg10: !tile.tensor<1x1x?x?xi32>
// CHECK-SAME: mask_blocks = true
// CHECK-LABEL: func.func @documents_backward(
// CHECK-SAME: %arg3: !tile.tensor<?xi32> {tile.dims = ["mask_t0_d0"], tile.name = "mask_t0"}
// CHECK: %[[TABLE:.+]] = tile.alloc_tensor({{.*}}) {tile.name = "mask_blocks_keys"}
// CHECK: tile.launch @documents_attention_bwd_mask_blocks_keys(%arg0, %arg1, %arg3, %[[TABLE]])
// CHECK: tile.launch @documents_attention_bwd({{.*}}, %arg3, %[[TABLE]])
// DET-LABEL: func.func @documents_backward(
// DET-NOT: mask_blocks
// DET: tile.launch @documents_attention_bwd_kv({{.*}}, %arg3)
// DET: tile.launch @documents_attention_bwd_dq({{.*}}, %arg3)
// DET-NOT: mask_blocks
func.func @documents(%q: tensor<?x2x?x64xbf16>, %k: tensor<?x2x?x64xbf16>, %v: tensor<?x2x?x64xbf16>, %doc: tensor<?xi32>)
    -> (tensor<?x2x?x64xbf16>, tensor<?x2x?xf32>) {
  %o, %lse = flash.attention %q, %k, %v scale = 0.125 mask = #flash.mask<causal> num_kv_heads = 2 mask_mod(%doc) {
  ^bb0(%i: index, %j: index, %ids: tensor<?xi32>):
    %a = tensor.extract %ids[%i] : tensor<?xi32>
    %b = tensor.extract %ids[%j] : tensor<?xi32>
    %x = arith.index_cast %a : i32 to index
    %y = arith.index_cast %b : i32 to index
    %same = arith.cmpi eq, %x, %y : index
    flash.yield %same : i1
  } : (tensor<?x2x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?xi32>) -> (tensor<?x2x?x64xbf16>, tensor<?x2x?xf32>)
  return %o, %lse : tensor<?x2x?x64xbf16>, tensor<?x2x?xf32>
}

// -----

// A score modifier: its tensor is an input of the backward program without a gradient
// (score_t0, after q, k, v), passed to every kernel that recomputes scores. They recompute
// the modified scores (tile.score on the raw Q·Kᵀ) and take dS back through the modifier at
// the raw scores (tile.score_grad: dS · d mod / ds) before the softmax scale. The rows form:
// CHECK-LABEL: tile.kernel @alibi_attention_bwd(
// CHECK-SAME: %[[SLOPES:[a-z0-9]+]]: !tile.tensor<8xf32>)
// CHECK-SAME: score_mod = @[[SMOD:score_mod_[0-9a-f]+]], score_additive = true, score_separable = true>
// CHECK: %[[RAW:.+]] = tile.matmul
// CHECK: tile.score %[[RAW]] {{.*}} mod @[[SMOD]](%{{.*}}, %{{.*}}, %[[SLOPES]] : index, index, !tile.tensor<8xf32>)
// CHECK: %[[DS:.+]] = tile.softmax_grad
// CHECK: %[[DMOD:.+]] = tile.score_grad %[[DS]], %[[RAW]] rows %{{.*}} cols %{{.*}} scale 1.250000e-01 mod @[[SMOD]](%{{.*}}, %{{.*}}, %[[SLOPES]] : index, index, !tile.tensor<8xf32>)
// CHECK: tile.scale %[[DMOD]] by 1.250000e-01
// CHECK-LABEL: func.func @alibi_backward(
// CHECK-SAME: %arg3: !tile.tensor<8xf32> {tile.name = "score_t0"}
// The deterministic form: both kernels that compute scores take the tensor.
// DET: tile.kernel @alibi_attention_bwd_kv({{.*}}!tile.tensor<8xf32>)
// DET: tile.score_grad
// DET: tile.kernel @alibi_attention_bwd_dq({{.*}}!tile.tensor<8xf32>)
// DET: tile.score_grad
// The Sᵀ form: tiles with keys on the rows.
// TR: tile.score {{.*}} transposed
// TR: tile.score_grad {{.*}} transposed
// On sm_90a the warp-specialised backward takes a modifier whose derivative is 1 (score_additive: ALiBi); its
// tile body is the Sᵀ form's, which the CPU executor runs.
// AUTO-LABEL: tile.kernel @alibi_attention_bwd(
// AUTO-SAME: role = attention_backward_transposed
// AUTO-SAME: score_additive = true, score_separable = true>, stages = 2 : i64, strategy = #tile.strategy<wgmma_ws_sm90>
// AUTO: tile.score_grad {{.*}} transposed
func.func @alibi(%q: tensor<?x8x?x64xbf16>, %k: tensor<?x8x?x64xbf16>, %v: tensor<?x8x?x64xbf16>, %slopes: tensor<8xf32>) -> tensor<?x8x?x64xbf16> {
  %o, %lse = flash.attention %q, %k, %v scale = 0.125 mask = #flash.mask<causal> num_kv_heads = 8 score_mod(%slopes) {
  ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index, %m: tensor<8xf32>):
    %slope = tensor.extract %m[%h] : tensor<8xf32>
    %d = arith.subi %j, %i : index
    %d64 = arith.index_cast %d : index to i64
    %df = arith.sitofp %d64 : i64 to f32
    %bias = arith.mulf %slope, %df : f32
    %r = arith.addf %s, %bias : f32
    flash.yield %r : f32
  } : (tensor<?x8x?x64xbf16>, tensor<?x8x?x64xbf16>, tensor<?x8x?x64xbf16>, tensor<8xf32>) -> (tensor<?x8x?x64xbf16>, tensor<?x8x?xf32>)
  return %o : tensor<?x8x?x64xbf16>
}

// -----

// Packed sequences: no backward with a softcap yet (a warning; the forward still compiles).
func.func @varlen_softcap(%q: tensor<?x4x64xbf16>, %k: tensor<?x4x64xbf16>, %v: tensor<?x4x64xbf16>,
                          %cu_q: tensor<?xi32>, %cu_k: tensor<?xi32>) -> tensor<?x4x64xbf16> {
  // expected-warning @+1 {{flash-generate-backward: no backward for @varlen_softcap: the packed backward takes no softcap yet}}
  %o, %lse = flash.varlen_attention %q, %k, %v, %cu_q, %cu_k scale = 0.125 mask = #flash.mask<causal> softcap = 30.0
      num_kv_heads = 4
      : (tensor<?x4x64xbf16>, tensor<?x4x64xbf16>, tensor<?x4x64xbf16>, tensor<?xi32>, tensor<?xi32>)
      -> (tensor<?x4x64xbf16>, tensor<4x?xf32>)
  return %o : tensor<?x4x64xbf16>
}

// -----

// Packed sequences beside another fused op: not yet (a warning).
func.func @varlen_and_dense(%q: tensor<?x4x64xbf16>, %k: tensor<?x4x64xbf16>, %v: tensor<?x4x64xbf16>,
                            %cu_q: tensor<?xi32>, %cu_k: tensor<?xi32>, %q2: tensor<1x4x?x64xbf16>,
                            %k2: tensor<1x4x?x64xbf16>, %v2: tensor<1x4x?x64xbf16>)
    -> (tensor<?x4x64xbf16>, tensor<1x4x?x64xbf16>) {
  // expected-warning @+1 {{flash-generate-backward: no backward for @varlen_and_dense: packed sequences beside other fused ops: one flash.varlen_attention a function has a backward so far}}
  %o, %lse = flash.varlen_attention %q, %k, %v, %cu_q, %cu_k scale = 0.125 mask = #flash.mask<causal> num_kv_heads = 4
      : (tensor<?x4x64xbf16>, tensor<?x4x64xbf16>, tensor<?x4x64xbf16>, tensor<?xi32>, tensor<?xi32>)
      -> (tensor<?x4x64xbf16>, tensor<4x?xf32>)
  %o2, %lse2 = flash.attention %q2, %k2, %v2 scale = 0.125 mask = #flash.mask<none> num_kv_heads = 4
      : (tensor<1x4x?x64xbf16>, tensor<1x4x?x64xbf16>, tensor<1x4x?x64xbf16>) -> (tensor<1x4x?x64xbf16>, tensor<1x4x?xf32>)
  return %o, %o2 : tensor<?x4x64xbf16>, tensor<1x4x?x64xbf16>
}
