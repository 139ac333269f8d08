// FFN: y = gelu_tanh(x·W1 + b1)·W2 + b2 as GEMMs whose bias and activation
// run in the epilogue, on the accumulator in registers.
// RUN: flashc %s --emit=cuda -o - | FileCheck %s

func.func @ffn(%x: tensor<?x1024xbf16>, %w1: tensor<1024x4096xbf16>, %b1: tensor<4096xbf16>,
               %w2: tensor<4096x1024xbf16>, %b2: tensor<1024xbf16>) -> tensor<?x1024xbf16> {
  %y = flash.ffn gelu_tanh %x, %w1 bias %b1, %w2 bias %b2
      : (tensor<?x1024xbf16>, tensor<1024x4096xbf16>, tensor<4096xbf16>, tensor<4096x1024xbf16>, tensor<1024xbf16>)
      -> tensor<?x1024xbf16>
  return %y : tensor<?x1024xbf16>
}

// CHECK-LABEL: flashc_ffn_ffn_up(
// The K loop: x and W1 tiles pipelined, f32 accumulation.
// CHECK: for (int
// CHECK: matmul(
// Epilogue: + b1 (bf16, read as such), activation, convert, store.
// CHECK: add_bias({{.*}}, vector_view<bf16>(
// CHECK: activation<Act::GeluTanh>(
// CHECK: convert(
// CHECK: store_tile<kThreads>(
// CHECK-LABEL: flashc_ffn_ffn_down(
// CHECK: add_bias({{.*}}, vector_view<bf16>(
// CHECK-NOT: activation<
// CHECK: store_tile<kThreads>(
