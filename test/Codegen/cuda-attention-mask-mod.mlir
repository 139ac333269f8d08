// A mask modifier in the generated CUDA C++. Each kernel that masks prints the
// tile.mask_mod as a struct (include-guarded: kernels.cu compiles as one unit
// too) with one function template over a value domain D — the device library
// evaluates it for one (query, key) and, by interval arithmetic, for whole
// blocks (mask_mod.cuh). The warp-specialised kernels name it in their Config
// (`using MaskMod`), which turns their mask spec into ModMask<Window, MaskMod>:
// loop bounds trimmed of blocks it hides whole, no element mask on blocks it
// shows whole. The op-by-op kernels (sm_80) call mask_mod<Mod, L, R> on every
// block. The backward's pre- and postprocessing compute no scores: no struct.
// Every form compiles through NVRTC (the bundle runs), and with ptxas no spills.
//
// RUN: flashc %s --emit=cuda -o - | FileCheck %s --check-prefix=CUDA
// RUN: flashc %s --emit=cuda --arch=sm_80 -o - | FileCheck %s --check-prefix=SM80
// RUN: rm -rf %t.bundle && flashc %s --emit=bundle --arch=sm_90a,sm_80 -o %t.bundle
// RUN: FileCheck %s --check-prefix=MANIFEST < %t.bundle/sm_90a/manifest.flashc
// RUN: flashc %s --emit=cubin --arch=sm_90a --ptxas-report -o %t.cubin 2>&1 | FileCheck %s --check-prefix=PTXAS
// RUN: flashc %s --backward-form=transposed --emit=cuda --arch=sm_80 -o - | FileCheck %s --check-prefix=TRANSPOSED
// RUN: rm -rf %t.transposed && flashc %s --backward-form=transposed --emit=bundle --arch=sm_80 -o %t.transposed

// The kernels' math lines name the modifier:
// CUDA: //   prefix_lm_attention_fwd: O = softmax(Q·Kᵀ·{{[0-9.]+}}, mask modifier @mask_mod_{{[0-9a-f]+}})·V
// The struct, with the formula it evaluates:
// CUDA: // ---- prefix_lm_attention_bwd_preprocess ----
// CUDA-NOT: struct mask_mod_
// CUDA: // ---- prefix_lm_attention_bwd ----
// CUDA: #ifndef FLASHC_MASK_MOD_[[MOD:mask_mod_[0-9a-f]+]]
// CUDA-NEXT: #define FLASHC_MASK_MOD_[[MOD]]
// CUDA-NEXT: // tile.mask_mod @[[MOD]]: key k visible from query q (batch b, head h) when
// CUDA-NEXT: //   ((k < 4096) || (k <= q))
// CUDA-NEXT: struct [[MOD]] {
// CUDA-NEXT:   static constexpr int kTensors = 0;
// CUDA-NEXT:   static constexpr bool kUsesBatch = false, kUsesHead = false;
// CUDA-NEXT:   using ElementDomain = flashc::device::ExactIndex32;
// CUDA-NEXT:   template <class D>
// CUDA-NEXT:   static FLASHC_MASK_FN typename D::Bool visible(const flashc::device::MaskEnv& env, typename D::Int b,
// CUDA-NEXT:                                                  typename D::Int h, typename D::Int q, typename D::Int k) {
// CUDA-NEXT:     const auto v0 = D::lt(k, D::constant(4096));
// CUDA-NEXT:     const auto v1 = D::le(k, q);
// CUDA-NEXT:     const auto v2 = D::or_(v0, v1);
// CUDA-NEXT:     return v2;
// CUDA-NEXT:   }
// CUDA-NEXT: };
// CUDA-NEXT: #endif
// The backward's Config, then the forward's:
// CUDA: static constexpr int kWindowLeft = -1, kWindowRight = -1;
// CUDA-NEXT: using MaskMod = [[MOD]];  // tile.mask_mod @[[MOD]] on top of the window
// CUDA: // ---- prefix_lm_attention_bwd_postprocess ----
// CUDA-NOT: struct mask_mod_
// CUDA: // ---- prefix_lm_attention_fwd ----
// CUDA: struct [[MOD]] {
// CUDA: using MaskMod = [[MOD]];

// SM80: // ---- prefix_lm_attention_bwd ----
// SM80: struct [[MOD:mask_mod_[0-9a-f]+]] {
// SM80: mask_mod<[[MOD]], -1, -1>(s, row0, col0, seq_k, key_offset, mask_env(batch, head));
// SM80-SAME: // -inf outside the window, hidden by the modifier / past the keys
// SM80: // ---- prefix_lm_attention_fwd ----
// SM80: struct [[MOD]] {
// SM80: mask_mod<[[MOD]], -1, -1>(

// TRANSPOSED: // ---- prefix_lm_attention_bwd ----
// TRANSPOSED: mask_mod_transposed<[[MOD:mask_mod_[0-9a-f]+]], -1, -1>(
// TRANSPOSED-SAME: // Sᵀ: -inf outside the window, hidden by the modifier / past the keys

// The forward program's meta carries the modifier's index program (flashc-run's float64 reference reads it):
// MANIFEST: program prefix_lm
// MANIFEST: meta mask_mod v0,=,lt,k,4096;v1,=,le,k,q;v2,=,or,v0,v1;yield,v2

// PTXAS-NOT: bytes spill
// PTXAS: prefix_lm_attention_fwd

func.func @prefix_lm(%q: tensor<?x16x?x128xbf16>, %k: tensor<?x16x?x128xbf16>, %v: tensor<?x16x?x128xbf16>) -> tensor<?x16x?x128xbf16> {
  %o, %lse = flash.attention %q, %k, %v scale = 0.0883883 mask = #flash.mask<none> num_kv_heads = 16 mask_mod {
  ^bb0(%i: index, %j: index):
    %prefix = arith.constant 4096 : index
    %in_prefix = arith.cmpi slt, %j, %prefix : index
    %causal = arith.cmpi sle, %j, %i : index
    %visible = arith.ori %in_prefix, %causal : i1
    flash.yield %visible : i1
  } : (tensor<?x16x?x128xbf16>, tensor<?x16x?x128xbf16>, tensor<?x16x?x128xbf16>) -> (tensor<?x16x?x128xbf16>, tensor<?x16x?xf32>)
  return %o : tensor<?x16x?x128xbf16>
}
