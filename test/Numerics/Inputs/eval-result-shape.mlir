// flash-eval: a graph op's result type whose static size the evaluation contradicts (the matmul computes the
// dynamic rows of %a; its type says 2^36). The evaluator returned a [3, 64] tensor for it; now an error.
// test/Numerics/executor-errors.mlir runs it.
func.func @f(%a: tensor<?x64xf32>, %b: tensor<64x64xf32>) -> tensor<68719476736x64xf32> {
  %c = flash.matmul %a, %b : tensor<?x64xf32>, tensor<64x64xf32> -> tensor<68719476736x64xf32>
  return %c : tensor<68719476736x64xf32>
}
