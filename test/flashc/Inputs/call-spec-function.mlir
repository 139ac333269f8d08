// errors.test: a function with fused ops called from another one (the call was left calling the old signature:
// "'func.call' op incorrect number of operands for callee").
func.func @inner(%q: tensor<?x4x?x64xbf16>, %k: tensor<?x4x?x64xbf16>, %v: tensor<?x4x?x64xbf16>) -> tensor<?x4x?x64xbf16> {
  %o, %lse = flash.attention %q, %k, %v scale = 0.088 mask = #flash.mask<causal> num_kv_heads = 4
    : (tensor<?x4x?x64xbf16>, tensor<?x4x?x64xbf16>, tensor<?x4x?x64xbf16>) -> (tensor<?x4x?x64xbf16>, tensor<?x4x?xf32>)
  return %o : tensor<?x4x?x64xbf16>
}
func.func @outer(%q: tensor<?x4x?x64xbf16>, %k: tensor<?x4x?x64xbf16>, %v: tensor<?x4x?x64xbf16>) -> tensor<?x4x?x64xbf16> {
  %o = func.call @inner(%q, %k, %v) : (tensor<?x4x?x64xbf16>, tensor<?x4x?x64xbf16>, tensor<?x4x?x64xbf16>) -> tensor<?x4x?x64xbf16>
  return %o : tensor<?x4x?x64xbf16>
}
