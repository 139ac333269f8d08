// A score modifier in the generated CUDA C++: ALiBi with a tanh cap (s' = 30 · tanh((s + slope[h] · (k - q)) / 30)).
// The modifier is printed once per kernel unit as a struct whose one function returns the modified score and its
// derivative with respect to s (forward-mode: the derivative of the slope read and the distance is 0 and is left
// out; tanh's is (1 - t²)). The warp-specialised forward takes it as Config::ScoreMod and its tensor as a grid
// constant, passed in a MaskEnv of its own; the backward on sm_90a is the op-by-op form (the warp-specialised
// backward takes only a modifier whose derivative is 1; this one's is not), which modifies the recomputed scores
// (score_mod) and takes dS back through the modifier (score_mod_grad). sm_80 alike. The manifest: the tensor an f32 parameter, the forward
// program naming it and the modifier's text (meta score_tensors, score_mod), what flashc-run's reference reads.
// Every kernel compiles through NVRTC, with ptxas no spill.
//
// RUN: flashc %s --emit=cuda -o - | FileCheck %s --check-prefix=CUDA
// RUN: flashc %s --emit=cuda --arch=sm_80 -o - | FileCheck %s --check-prefix=SM80
// RUN: rm -rf %t.bundle && flashc %s --emit=bundle --arch=sm_90a -o %t.bundle
// RUN: FileCheck %s --check-prefix=MANIFEST < %t.bundle/manifest.flashc
// RUN: flashc %s --emit=cubin --arch=sm_90a --ptxas-report -o %t.cubin 2>&1 | FileCheck %s --check-prefix=PTXAS
// RUN: flashc %s --emit=cubin --arch=sm_80 --ptxas-report -o %t80.cubin 2>&1 | FileCheck %s --check-prefix=PTXAS
//
// The warp-specialised backward takes a score modifier whose derivative is 1 (#tile.attention score_additive:
// examples/alibi.mlir's), the hand rule since the H200 checked and timed it (ALiBi, D = 128, S = 16k: 7.42 -> 6.16
// ms); this one's is not (the tanh cap): a table entry that asks for it is refused, not in its tuning space.
// RUN: printf 'sm_90a attention_backward bf16 d128 causal+score -> strategy=wgmma_ws_sm90 block_m=64 block_n=128 warps=8 stages=2 form=transposed\n' > %t.ws.txt
// RUN: not flashc %s --tuning-table=%t.ws.txt --emit=cuda -o /dev/null 2>&1 | FileCheck %s --check-prefix=WSREFUSED
// RUN: flashc %S/../../examples/alibi.mlir --emit=cuda -o - | FileCheck %s --check-prefix=WS
// RUN: flashc %S/../../examples/alibi.mlir --emit=cubin --arch=sm_90a --ptxas-report -o %t.ws.cubin 2>&1 | FileCheck %s --check-prefix=PTXAS

// CUDA: // ---- alibi_capped_attention_bwd ----
// CUDA-NOT: attention_bwd_ws<
// CUDA: struct [[MOD:score_mod_[0-9a-f]+]] {
// CUDA-NEXT:   static constexpr int kTensors = 1;
// CUDA:   static FLASHC_MASK_FN float score(const flashc::device::MaskEnv& env, float s, long long b, long long h,
// CUDA:     const float v0 = flashc::device::read_f32(env.tensor[0], h);
// CUDA:     const auto v1 = D::sub(k, q);
// CUDA:     const float v2 = static_cast<float>(static_cast<int>(v1));
// CUDA:     const float v3 = v0 * v2;
// CUDA:     const float v4 = s + v3;
// CUDA-NEXT:     const float d4 = 1.f;
// CUDA:     const float v6 = tanhf(v5);
// CUDA-NEXT:     const float d6 = ({{.*}} * (1.f - v6 * v6));
// CUDA:     ds = d7;
// CUDA-NEXT:     return v7;
// CUDA: flashc_alibi_capped_attention_bwd({{.*}}const __grid_constant__ flashc::TensorArg score_t0)
// CUDA: score_mod<[[MOD]], true>({{[a-z_]+}}, row0, col0, seq_q, {{.*}}, mask_env(batch, head, score_t0));
// CUDA: score_mod_grad<[[MOD]], true>({{.*}}, mask_env(batch, head, score_t0));
// CUDA: // ---- alibi_capped_attention_fwd ----
// CUDA: struct Config {
// CUDA:   using ScoreMod = [[MOD]];
// CUDA: flashc_alibi_capped_attention_fwd({{.*}}, const __grid_constant__ flashc::TensorArg score_t0, const __grid_constant__ flashc::TmaDescriptor q_map
// CUDA: attention_fwd_ws<{{.*}}>(q_map, k_map, v_map, q, k, out, lse, {{.*}}, flashc::device::mask_env(0, 0), nullptr, flashc::device::mask_env(0, 0, score_t0));

// SM80: flashc_alibi_capped_attention_bwd(
// SM80: score_mod_grad<score_mod_{{[0-9a-f]+}}>(
// SM80: flashc_alibi_capped_attention_fwd(
// SM80: score_mod<score_mod_{{[0-9a-f]+}}>({{[a-z_]+}}, row0, col0, seq_q, {{.*}}, mask_env(batch, head, score_t0));

// MANIFEST: tensor score_t0 f32 in [16] contiguous
// MANIFEST: program alibi_capped
// MANIFEST: meta score_mod v0,=,read,t0,h;v1,=,sub,k,q;v2,=,itof,v1;v3,=,mulf,v0,v2;v4,=,addf,s,v3;v5,=,divf,v4,f:0x1.ep+4;v6,=,tanh,v5;v7,=,mulf,v6,f:0x1.ep+4;yield,v7
// MANIFEST: meta score_tensors score_t0

// WSREFUSED: error: flash-plan-memory: tuning table entry {{.*}} asks for strategy wgmma_ws_sm90, which is not in the tuning space
// WS: // ---- alibi_attention_bwd ----
// WS: struct [[AMOD:score_mod_[0-9a-f]+]] {
// WS: static constexpr bool kDerivativeOne = true;
// (every index value fits an int: 32-bit arithmetic, IndexBounds)
// WS: using D = flashc::device::ExactIndex32;
// WS: using ScoreMod = [[AMOD]];
// WS: flashc_alibi_attention_bwd({{.*}}const __grid_constant__ flashc::TensorArg score_t0, const __grid_constant__ flashc::TmaDescriptor q_map
// WS: attention_bwd_ws<{{.*}}>({{.*}}, &dq_accum_map, flashc::device::mask_env(0, 0), nullptr, flashc::device::mask_env(0, 0, score_t0));

// PTXAS-NOT: error
// PTXAS-NOT: [1-9][0-9]* bytes spill
// PTXAS: Compiling entry function 'flashc_alibi{{(_capped)?}}_attention_bwd'

func.func @alibi_capped(%q: tensor<?x16x?x128xbf16>, %k: tensor<?x16x?x128xbf16>, %v: tensor<?x16x?x128xbf16>, %slopes: tensor<16xf32>) -> tensor<?x16x?x128xbf16> {
  %out, %lse = flash.attention %q, %k, %v scale = 0.08838834764831845 mask = #flash.mask<causal> num_kv_heads = 16 score_mod(%slopes) {
  ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index, %m: tensor<16xf32>):
    %slope = tensor.extract %m[%h] : tensor<16xf32>
    %d = arith.subi %j, %i : index
    %d64 = arith.index_cast %d : index to i64
    %df = arith.sitofp %d64 : i64 to f32
    %bias = arith.mulf %slope, %df : f32
    %biased = arith.addf %s, %bias : f32
    %cap = arith.constant 30.0 : f32
    %x = arith.divf %biased, %cap : f32
    %t = math.tanh %x : f32
    %r = arith.mulf %cap, %t : f32
    flash.yield %r : f32
  } : (tensor<?x16x?x128xbf16>, tensor<?x16x?x128xbf16>, tensor<?x16x?x128xbf16>, tensor<16xf32>) -> (tensor<?x16x?x128xbf16>, tensor<?x16x?xf32>)
  return %out : tensor<?x16x?x128xbf16>
}
