// Compile-only coverage of a mixture of experts' device code (moe_routing.cuh and the grouped forms of gemm_ws.cuh)
// in the runtime's NVRTC configuration, bf16 or f16 (FLASHC_F16). Numerics and timing of the same code run in the
// kernel lab (bench/kernel_lab/moe_lab.py, launch_moe.cu); these kernels are never launched.
#include "flashc/device/all.cuh"

namespace moe_golden {
#if FLASHC_F16
using Elem = flashc::device::f16;
#else
using Elem = flashc::device::bf16;
#endif
namespace dev = flashc::device;

struct GemmBase {
  using Elem = moe_golden::Elem;
  static constexpr bool kTransA = false, kTransB = false, kBias = false, kBatched = false, kAccumulate = false,
                        kSavePre = false, kGated = false;
  static constexpr dev::Act kAct = dev::Act::Identity;
  static constexpr int kBlockN = 256, kStages = 4, kGroup = 8, kProducerRegs = 40, kConsumerRegs = 232;
};
struct UpGated : GemmBase {  // silu(x_e Wg[e]) ⊙ (x_e Wu[e]), g and u saved
  static constexpr bool kGated = true, kGrouped = true, kSavePre = true;
  static constexpr dev::Act kAct = dev::Act::Silu;
  static constexpr int kBlockN = 128;
};
struct DownTransposed : GemmBase {  // dh = d_out_e W2[e]ᵀ, accumulated
  static constexpr bool kGrouped = true, kTransB = true, kAccumulate = true;
  static constexpr int kStages = 3;
};
struct WeightGrad : GemmBase {  // dW[e] = A_eᵀ B_e
  static constexpr bool kTransA = true, kGroupedK = true;
};
}  // namespace moe_golden

using namespace moe_golden;
using flashc::TensorArg;
using flashc::TmaDescriptor;

extern "C" __global__ void __launch_bounds__(384, 1)
    moe_up(const __grid_constant__ TmaDescriptor a, const __grid_constant__ TmaDescriptor b,
           const __grid_constant__ TmaDescriptor b2, const __grid_constant__ TmaDescriptor c,
           const __grid_constant__ TmaDescriptor pre, const __grid_constant__ TmaDescriptor pre2, TensorArg ta,
           TensorArg tb, TensorArg groups) {
  dev::gemm_ws_grouped<UpGated>(a, b, b2, c, pre, pre2, ta, tb, groups, 1.f);
}
extern "C" __global__ void __launch_bounds__(384, 1)
    moe_dh(const __grid_constant__ TmaDescriptor a, const __grid_constant__ TmaDescriptor b,
           const __grid_constant__ TmaDescriptor c, TensorArg ta, TensorArg tb, TensorArg groups) {
  dev::gemm_ws_grouped<DownTransposed>(a, b, b, c, c, c, ta, tb, groups, 1.f);
}
extern "C" __global__ void __launch_bounds__(384, 1)
    moe_weight_grad(const __grid_constant__ TmaDescriptor a, const __grid_constant__ TmaDescriptor b,
                    const __grid_constant__ TmaDescriptor c, TensorArg ta, TensorArg tb, TensorArg offsets) {
  dev::gemm_ws_grouped_k<WeightGrad>(a, b, c, ta, tb, offsets, 1.f);
}
extern "C" __global__ void moe_routing(const Elem* logits, const Elem* x, Elem* permuted, Elem* y, int* counts, int* ids,
                                       float* weights, int* ranks, int* offsets, int* groups, Elem* d_logits,
                                       float* d_weights, Elem* dg, Elem* du, int tokens, int experts, int top_k, int d,
                                       int variant) {
  switch (variant) {
  case 0: dev::moe_select<dev::MoeGating::Softmax, true>(logits, experts, tokens, experts, top_k, counts, ids, weights, ranks); break;
  case 1: dev::moe_select<dev::MoeGating::Sigmoid, false>(logits, experts, tokens, experts, top_k, counts, ids, weights, ranks); break;
  case 2: dev::moe_plan(counts, experts, offsets, groups, ranks); break;
  case 3: dev::moe_permute(x, d, tokens, d, top_k, experts, counts, ids, ranks, offsets, permuted); break;
  case 4: dev::moe_combine(permuted, tokens, d, top_k, ids, weights, ranks, offsets, y, d, x); break;
  case 5: dev::moe_scatter_grad(y, d, permuted, tokens, d, top_k, experts, counts, ids, weights, ranks, offsets, dg, d_weights); break;
  case 6: dev::moe_activation_grad<dev::Act::Silu, true>(x, y, permuted, d, experts, offsets, dg, du); break;
  case 9: dev::moe_activation_grad<dev::Act::GeluTanh, false>(x, static_cast<const Elem*>(nullptr), permuted, d, experts, offsets, dg, static_cast<Elem*>(nullptr)); break;
  case 7: dev::moe_select_grad<dev::MoeGating::Softmax, false>(logits, tokens, experts, top_k, ids, weights, d_weights, d_logits); break;
  default: dev::moe_select_grad<dev::MoeGating::Sigmoid, true>(logits, tokens, experts, top_k, ids, weights, d_weights, d_logits); break;
  }
}
