// flash-run-tile: a result type's static dim (the lse's 2^36 rows, where the query length is dynamic) was allocated
// as is (std::bad_alloc). The verifier now refuses a size static in one tensor and dynamic in another.
// test/Numerics/executor-errors.mlir runs it.
func.func @f(%q: tensor<1x1x?x64xf32>, %k: tensor<1x1x?x64xf32>, %v: tensor<1x1x?x64xf32>) -> tensor<1x1x?x64xf32> {
  %o, %lse = flash.attention %q, %k, %v scale = 0.125 mask = #flash.mask<none> num_kv_heads = 1
      : (tensor<1x1x?x64xf32>, tensor<1x1x?x64xf32>, tensor<1x1x?x64xf32>)
      -> (tensor<1x1x?x64xf32>, tensor<1x1x68719476736xf32>)
  return %o : tensor<1x1x?x64xf32>
}
