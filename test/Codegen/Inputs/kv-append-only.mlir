// An append alone (a contiguous cache, any number of new tokens): flashc-run's `meta op kv_append`.
func.func @append(%k: tensor<?x8x?x128xbf16>, %v: tensor<?x8x?x128xbf16>, %kc: tensor<?x8x?x128xbf16>,
                  %vc: tensor<?x8x?x128xbf16>, %lens: tensor<?xi32>)
    -> (tensor<?x8x?x128xbf16>, tensor<?x8x?x128xbf16>) {
  %k2, %v2 = flash.kv_append %k, %v into %kc, %vc, %lens
      : (tensor<?x8x?x128xbf16>, tensor<?x8x?x128xbf16>, tensor<?x8x?x128xbf16>, tensor<?x8x?x128xbf16>,
         tensor<?xi32>) -> (tensor<?x8x?x128xbf16>, tensor<?x8x?x128xbf16>)
  return %k2, %v2 : tensor<?x8x?x128xbf16>, tensor<?x8x?x128xbf16>
}
