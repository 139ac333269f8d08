// One decode step of a Llama-style model's attention (32 query / 8 kv heads, D = 128, bf16) over a paged KV
// cache of 64-row pages: each sequence's new token's K and V written into the cache in place (flash.kv_append, at
// row length - 1: the lengths count the new token), then its query against the cached keys, its own included.
// examples/decode_paged/main.cpp runs a decode loop over it through the runtime's C ABI.
func.func @decode_step(%q: tensor<?x32x1x128xbf16>, %k_new: tensor<?x8x1x128xbf16>, %v_new: tensor<?x8x1x128xbf16>,
                       %k_pages: tensor<?x64x8x128xbf16>, %v_pages: tensor<?x64x8x128xbf16>, %lengths: tensor<?xi32>,
                       %table: tensor<?x?xi32>)
    -> (tensor<?x32x1x128xbf16>, tensor<?x32x1xf32>) {
  %k_cache, %v_cache = flash.kv_append %k_new, %v_new into %k_pages, %v_pages, %lengths page_size = 64
      block_table %table
      : (tensor<?x8x1x128xbf16>, tensor<?x8x1x128xbf16>, tensor<?x64x8x128xbf16>, tensor<?x64x8x128xbf16>,
         tensor<?xi32>, tensor<?x?xi32>) -> (tensor<?x64x8x128xbf16>, tensor<?x64x8x128xbf16>)
  %out, %lse = flash.decode_attention %q, %k_cache, %v_cache, %lengths block_table %table scale = 0.0883883461
      causal page_size = 64 num_kv_heads = 8
      : (tensor<?x32x1x128xbf16>, tensor<?x64x8x128xbf16>, tensor<?x64x8x128xbf16>, tensor<?xi32>, tensor<?x?xi32>)
      -> (tensor<?x32x1x128xbf16>, tensor<?x32x1xf32>)
  return %out, %lse : tensor<?x32x1x128xbf16>, tensor<?x32x1xf32>
}
