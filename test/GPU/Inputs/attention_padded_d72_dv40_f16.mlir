// DiT's head dim 72 for Q and K (96-column tiles), Dv = 40 (64-column tiles): f16 Hq=2 Hkv=2 D=72 Dv=40 full scale=0.11785113
func.func @attention(%q: tensor<?x2x?x72xf16>, %k: tensor<?x2x?x72xf16>, %v: tensor<?x2x?x40xf16>) -> (tensor<?x2x?x40xf16>, tensor<?x2x?xf32>) {
  %o, %lse = flash.attention %q, %k, %v scale = 0.11785113 mask = #flash.mask<none> num_kv_heads = 2 : (tensor<?x2x?x72xf16>, tensor<?x2x?x72xf16>, tensor<?x2x?x40xf16>) -> (tensor<?x2x?x40xf16>, tensor<?x2x?xf32>)
  return %o, %lse : tensor<?x2x?x40xf16>, tensor<?x2x?xf32>
}
