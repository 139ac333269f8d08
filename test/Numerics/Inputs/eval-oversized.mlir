// Tensors the float64 graph evaluator must refuse by shape instead of allocating (each aborted: out of memory, or
// std::length_error for a negative size). test/Numerics/executor-errors.mlir runs it, chunk by chunk.
func.func @constant_of_2p40() -> tensor<1099511627776xf32> {
  %c = arith.constant dense<1.0> : tensor<1099511627776xf32>
  return %c : tensor<1099511627776xf32>
}

// -----

func.func @generate_of_negative_extent() -> tensor<?xf32> {
  %n = arith.constant -1 : index
  %c = tensor.generate %n {
  ^bb0(%i: index):
    %z = arith.constant 0.0 : f32
    tensor.yield %z : f32
  } : tensor<?xf32>
  return %c : tensor<?xf32>
}

// -----

func.func @splat_of_2p44() -> tensor<?x?xf32> {
  %n = arith.constant 4194304 : index
  %z = arith.constant 0.0 : f32
  %c = tensor.splat %z[%n, %n] : tensor<?x?xf32>
  return %c : tensor<?x?xf32>
}

// -----

// Small inputs (with --dynamic-size=4096: 2^24 and 2^12 values), a [4096, 4096, 4096] product.
func.func @matmul_outer_product(%a: tensor<?x?x1xf32>, %b: tensor<1x?xf32>) -> tensor<?x?x?xf32> {
  %c = flash.matmul %a, %b : tensor<?x?x1xf32>, tensor<1x?xf32> -> tensor<?x?x?xf32>
  return %c : tensor<?x?x?xf32>
}
