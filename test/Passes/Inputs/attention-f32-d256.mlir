func.func @attention(%q: tensor<?x4x?x256xf32>, %k: tensor<?x4x?x256xf32>, %v: tensor<?x4x?x256xf32>) -> (tensor<?x4x?x256xf32>, tensor<?x4x?xf32>) {
  %o, %lse = flash.attention %q, %k, %v scale = 0.0625 mask = #flash.mask<causal> num_kv_heads = 4 : (tensor<?x4x?x256xf32>, tensor<?x4x?x256xf32>, tensor<?x4x?x256xf32>) -> (tensor<?x4x?x256xf32>, tensor<?x4x?xf32>)
  return %o, %lse : tensor<?x4x?x256xf32>, tensor<?x4x?xf32>
}
