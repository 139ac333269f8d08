// Score modifiers (tile.score_mod): the score the softmax sees, as an f32 function of the scaled score s, the batch
// b, the query head h, the query row q and the key row k, which may read f32 or i32 tensors (per-head ALiBi slopes, a
// bias table). The compiler prints each modifier as a struct (ScoreModEmitter.cpp)
//   struct score_mod_9a0b {
//     static constexpr int kTensors = 1;
//     static FLASHC_MASK_FN float score(const MaskEnv& env, float s, long long b, long long h, long long q,
//                                       long long k, float& ds);
//   };
// returning the modified score and writing its derivative with respect to s into ds (forward-mode, derived by the
// compiler: the forward never reads ds, so the compiler drops that arithmetic). Index arithmetic has ExactIndex's
// semantics (mask_mod.cuh); a read outside a tensor's shape gives 0.
//
// The tile ops on a score tile S (S[r][c]: query row0 + r, key col0 + c) or its transpose Sᵀ (keys on the rows):
//   score_mod        s = Mod(scale · s, ...), -inf on query rows past Sq (the tile's padding: the backward
//                    recomputes their probabilities against lse 0 and must get 0, not an overflow);
//   score_mod_grad   ds *= dMod/ds at scale · raw (raw: the block's scores before score_mod); 0 stays 0.
#pragma once
#include "flashc/device/mask_mod.cuh"
#include "flashc/device/optional_member.cuh"
#include "flashc/device/regtile.cuh"

#if !defined(__CUDA_ARCH__)
#include <cstring>
#endif

namespace flashc {
namespace device {

// An element of a score modifier's f32 tensor (MaskTensor's layout; the bits read as an int, then reinterpreted).
FLASHC_MASK_FN float score_tensor_element(const MaskTensor* t, long long offset) {
  const int bits = t->data[offset];
#if defined(__CUDA_ARCH__)
  return __int_as_float(bits);
#else
  float value;
  std::memcpy(&value, &bits, sizeof(value));
  return value;
#endif
}

// tensor.extract of an f32 tensor at (positions...): 0 outside the shape (unconditional load, as ExactIndex::read).
template <class... P>
FLASHC_MASK_FN float read_f32(const MaskTensor* t, P... positions) {
  long long offset = 0;
  const bool inside = ExactIndex::locate(t, 0, offset, static_cast<long long>(positions)...);
  const float value = score_tensor_element(t, inside ? offset : 0);
  return inside ? value : 0.f;
}

// Whether a score modifier's derivative is 1 by its form (the struct's kDerivativeOne; void: no modifier).
template <class Mod>
struct ScoreDerivativeIsOne {
  static constexpr bool value = Mod::kDerivativeOne;
};
template <>
struct ScoreDerivativeIsOne<void> {
  static constexpr bool value = true;
};

// score_mod's query_limit where no query row needs the -inf (every int row index is below it).
constexpr int kNoQueryLimit = 0x7fffffff;

// Whether a score modifier is s + A(b, h, q) + B(b, h, k) by its form (the struct's kSeparable; void, or a struct
// printed before the flag: false). Its additive term T(q, k) = score(0, q, k) then splits, for any reference row q'
// and key k', as T(q', k) + (T(q, k') - T(q', k')): a key part and a query part, each one evaluation a row or column.
FLASHC_OPTIONAL_MEMBER(ScoreSeparable, kSeparable, bool, false)

// T(q, k) = score(0, ...) - 0 of a modifier whose derivative is 1 (separable ones are).
template <class Mod>
FLASHC_MASK_FN float score_term(const MaskEnv& env, long long q, long long k) {
  float unused;
  return Mod::score(env, 0.f, env.batch, env.head, q, k, unused);
}

#if defined(__CUDACC__)
// tile.score: S[r][c] = Mod(scale · S[r][c], b, h, row0 + r, col0 + c) (kTransposed: the tile is Sᵀ, rows are keys
// from col0 and columns queries from row0).
template <class Mod, bool kTransposed = false, int R, int C, int W>
__device__ __forceinline__ void score_mod(RegTileF32<R, C, W>& s, int row0, int col0, int query_limit, float scale,
                                          const MaskEnv& env) {
#pragma unroll
  for (int mt = 0; mt < s.kMT; ++mt)
#pragma unroll
    for (int h = 0; h < 2; ++h)
#pragma unroll
      for (int nt = 0; nt < s.kNT; ++nt)
#pragma unroll
        for (int e = 0; e < 2; ++e) {
          const int r = s.row(mt, h), c = s.col(nt, e);
          const int q = kTransposed ? row0 + c : row0 + r, k = kTransposed ? col0 + r : col0 + c;
          float& x = s.v[mt][nt][2 * h + e];
          float unused;
          const float y = Mod::score(env, scale * x, env.batch, env.head, q, k, unused);
          x = q < query_limit ? y : -INFINITY;
        }
}

// A separable modifier on a score tile, the query part left out: S[r][c] = scale · S[r][c] + T(q_ref, key), the key
// of the column (S: keys on the columns from key0) or of the row (kTransposed, Sᵀ: keys on the rows): one evaluation a
// key a thread holds, shared by that key's elements. A row's softmax is the same without its query part (a constant
// of the row); the caller adds score_query_part(q) = T(q, k') - T(q_ref, k') to the row's lse (the forward) or takes it
// from the column's lse bias (the backward's producer).

// The key slabs of a tile (S: its column slabs; kTransposed, Sᵀ: its row slabs), two keys a thread each.
template <bool kTransposed, class Tile>
constexpr int kKeySlabsOf = kTransposed ? Tile::kMT : Tile::kNT;
// The key part of key slab k, half kh of a tile (S: a column; kTransposed, Sᵀ: a row).
template <class Mod, bool kTransposed, class Tile>
__device__ __forceinline__ float score_key_part(int k, int kh, int q_ref, int key0, const MaskEnv& env) {
  return score_term<Mod>(env, q_ref, key0 + (kTransposed ? Tile::row(k, kh) : Tile::col(k, kh)));
}
// x = scale · x + the key part, for the elements of key slab k, half kh.
template <bool kTransposed, int R, int C, int W>
__device__ __forceinline__ void add_score_key_part(RegTileF32<R, C, W>& s, int k, int kh, float key_part, float scale) {
  constexpr int kOtherSlabs = kTransposed ? RegTileF32<R, C, W>::kNT : RegTileF32<R, C, W>::kMT;
#pragma unroll
  for (int o = 0; o < kOtherSlabs; ++o)
#pragma unroll
    for (int oh = 0; oh < 2; ++oh) {
      float& x = kTransposed ? s.v[k][o][2 * kh + oh] : s.v[o][k][2 * oh + kh];
      x = fmaf(x, scale, key_part);
    }
}
// Evaluated and added key by key (one key part live: the forward's 32 keys a thread, read from a tensor, would
// otherwise be held at once; ptxas spilled 364 bytes at D = 64 with positions read per key).
template <class Mod, bool kTransposed = false, int R, int C, int W>
__device__ __forceinline__ void score_mod_key_part(RegTileF32<R, C, W>& s, int q_ref, int key0, float scale,
                                                   const MaskEnv& env) {
  static_assert(ScoreSeparable<Mod>::value, "score_mod_key_part: a separable modifier");
  using Tile = RegTileF32<R, C, W>;
#pragma unroll
  for (int k = 0; k < kKeySlabsOf<kTransposed, Tile>; ++k)
#pragma unroll
    for (int kh = 0; kh < 2; ++kh)
      add_score_key_part<kTransposed>(s, k, kh, score_key_part<Mod, kTransposed, Tile>(k, kh, q_ref, key0, env), scale);
}
// The same in two halves, for a kernel that holds few keys a thread (the backward's two rows): score_key_parts
// evaluates them (their tensor reads) while the scores' product runs, add_score_key_parts adds them once it completes.
template <int kKeySlabs>
struct ScoreKeyParts {
  float v[kKeySlabs][2];  // [key slab][half]
};
template <class Mod, bool kTransposed = false, int R, int C, int W>
__device__ __forceinline__ auto score_key_parts(const RegTileF32<R, C, W>&, int q_ref, int key0, const MaskEnv& env) {
  static_assert(ScoreSeparable<Mod>::value, "score_key_parts: a separable modifier");
  using Tile = RegTileF32<R, C, W>;
  ScoreKeyParts<kKeySlabsOf<kTransposed, Tile>> parts;
#pragma unroll
  for (int k = 0; k < kKeySlabsOf<kTransposed, Tile>; ++k)
#pragma unroll
    for (int kh = 0; kh < 2; ++kh) parts.v[k][kh] = score_key_part<Mod, kTransposed, Tile>(k, kh, q_ref, key0, env);
  return parts;
}
template <bool kTransposed = false, int R, int C, int W, int K>
__device__ __forceinline__ void add_score_key_parts(RegTileF32<R, C, W>& s, const ScoreKeyParts<K>& parts,
                                                    float scale) {
  static_assert(K == kKeySlabsOf<kTransposed, RegTileF32<R, C, W>>,
                "add_score_key_parts: the parts of another tile shape");
#pragma unroll
  for (int k = 0; k < K; ++k)
#pragma unroll
    for (int kh = 0; kh < 2; ++kh) add_score_key_part<kTransposed>(s, k, kh, parts.v[k][kh], scale);
}

// The query part of a separable modifier at row q against the reference row q_ref (k' = q_ref).
template <class Mod>
__device__ __forceinline__ float score_query_part(int q, int q_ref, const MaskEnv& env) {
  return score_term<Mod>(env, q, q_ref) - score_term<Mod>(env, q_ref, q_ref);
}

// tile.score_grad: dS[r][c] *= dMod/ds at scale · raw[r][c].
template <class Mod, bool kTransposed = false, int R, int C, int W>
__device__ __forceinline__ void score_mod_grad(RegTileF32<R, C, W>& ds, const RegTileF32<R, C, W>& raw, int row0,
                                               int col0, float scale, const MaskEnv& env) {
#pragma unroll
  for (int mt = 0; mt < ds.kMT; ++mt)
#pragma unroll
    for (int h = 0; h < 2; ++h)
#pragma unroll
      for (int nt = 0; nt < ds.kNT; ++nt)
#pragma unroll
        for (int e = 0; e < 2; ++e) {
          const int r = ds.row(mt, h), c = ds.col(nt, e);
          const int q = kTransposed ? row0 + c : row0 + r, k = kTransposed ? col0 + r : col0 + c;
          float& g = ds.v[mt][nt][2 * h + e];
          float derivative;
          (void)Mod::score(env, scale * raw.v[mt][nt][2 * h + e], env.batch, env.head, q, k, derivative);
          g = g == 0.f ? 0.f : g * derivative;
        }
}
#endif

}  // namespace device
}  // namespace flashc
