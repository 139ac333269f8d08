// tile ops `mask` and `softcap` on a score tile S[q][k] (or its transpose S^T[k][q] in the
// backward). Masked scores become -inf, so exp2 makes them exactly 0.
//
// Geometry (tile-dialect `tile.mask`, flash `#flash.mask`): query i sits at key position
// p = i + offset with offset = Sk - Sq (bottom-right alignment). Key j is hidden when
//   j >= limit (ragged key tail), or (L >= 0 and j < p - L), or (R >= 0 and j > p + R).
// Causal is window [-1, 0]; no mask is [-1, -1] (only the key tail is masked).
// Generated code calls the mask only on boundary blocks (needs_mask); interior blocks skip it,
// and loop bounds (key_block_begin/end, query_block_begin/end) skip wholly hidden blocks.
// A mask spec is Window<L, R> or ModMask<Window<L, R>, Mod> (mask_mod.cuh: a tile.mask_mod on top).
#pragma once
#include "flashc/device/mask_mod.cuh"
#include "flashc/device/regtile.cuh"
#include "flashc/device/tensor.cuh"

namespace flashc {
namespace device {

template <int kLeft, int kRight>
struct Window {
  static constexpr int L = kLeft;   // < 0: unbounded to the left
  static constexpr int R = kRight;  // < 0: unbounded to the right; 0 with L < 0 is causal
  static constexpr bool kElementMaskInLoop = kLeft >= 0 || kRight >= 0;  // beyond the key tail
  // A run-time key offset clamped to [-Sq - R' - 1, Sk + L' + 1] (L', R': the sides, 0 when
  // unbounded): beyond either end every row sees all keys or none, so no result changes, and the
  // bound arithmetic stays far from int overflow (the compiler's tile IR clamps alike).
  static __device__ __forceinline__ int clamp_offset(int offset, int num_queries, int num_keys) {
    const int lo = -num_queries - (kRight > 0 ? kRight : 0) - 1;
    const int hi = num_keys + (kLeft > 0 ? kLeft : 0) + 1;
    return offset < lo ? lo : (offset > hi ? hi : offset);
  }
  static __device__ __forceinline__ bool hidden(int i, int j, int limit, int offset) {
    const int p = i + offset;
    bool h = j >= limit;
    if constexpr (kLeft >= 0 && kRight >= 0) {
      // Both sides: j - (p - L) in [0, L + R] as one unsigned compare, the difference taken modulo 2^32 (no signed
      // overflow at any offset clamp_offset lets through).
      h = h || static_cast<unsigned>(j) - static_cast<unsigned>(p) + static_cast<unsigned>(kLeft) >
                   static_cast<unsigned>(kLeft + kRight);
    } else {
      if (kLeft >= 0) h = h || j < p - kLeft;
      if (kRight >= 0) h = h || j > p + kRight;
    }
    return h;
  }
  // Does the block [q0, q0+BM) x [k0, k0+BN) hold any hidden (i, j)? Block-uniform; selects the
  // masked path for one loop iteration.
  static __device__ __forceinline__ bool needs_mask(int q0, int BM, int k0, int BN, int limit, int offset) {
    bool m = k0 + BN > limit;
    if (kLeft >= 0) m = m || k0 < q0 + BM - 1 + offset - kLeft;
    if (kRight >= 0) m = m || k0 + BN - 1 > q0 + offset + kRight;
    return m;
  }
  // Key blocks [begin, end) (units of BN) that query rows [q0, q0+BM) can see. (BM and limit unused
  // here: the interface of ModMask, mask_mod.cuh, which scans blocks.)
  static __device__ __forceinline__ int key_block_begin(int q0, int BM, int BN, int limit, int offset) {
    if (kLeft < 0) return 0;
    const int first = q0 + offset - kLeft;
    return first > 0 ? first / BN : 0;
  }
  static __device__ __forceinline__ int key_block_end(int q0, int BM, int BN, int limit, int offset) {
    int last = limit;  // exclusive
    if (kRight >= 0) {
      const int r = q0 + BM - 1 + offset + kRight + 1;
      last = r < last ? r : last;
    }
    return last > 0 ? (last + BN - 1) / BN : 0;
  }
  // Query blocks [begin, end) (units of BM) that see any key of [k0, k0+BN).
  static __device__ __forceinline__ int query_block_begin(int k0, int BN, int BM, int num_queries, int offset) {
    if (kRight < 0) return 0;
    const int first = k0 - offset - kRight;  // j <= i + offset + R  <=>  i >= j - offset - R
    return first > 0 ? first / BM : 0;
  }
  static __device__ __forceinline__ int query_block_end(int k0, int BN, int BM, int num_queries, int offset) {
    int last = num_queries;
    if (kLeft >= 0) {
      const int w = k0 + BN - 1 - offset + kLeft + 1;  // j >= i + offset - L  <=>  i <= j - offset + L
      last = w < last ? w : last;
    }
    return last > 0 ? (last + BM - 1) / BM : 0;
  }
  // The interface of ModMask (a trailing MaskEnv), which a window alone does not read.
  static constexpr bool kSplitParts = false;  // (mask_parts evaluates a window whole)
  static __device__ __forceinline__ bool hidden(int i, int j, int limit, int offset, const MaskEnv&) {
    return hidden(i, j, limit, offset);
  }
  static __device__ __forceinline__ int mask_parts(int q0, int BM, int k0, int BN, int limit, int offset,
                                                   const MaskEnv&) {
    return needs_mask(q0, BM, k0, BN, limit, offset) ? kMaskWindow : 0;
  }
  static __device__ __forceinline__ int key_block_begin(int q0, int BM, int BN, int limit, int offset, const MaskEnv&) {
    return key_block_begin(q0, BM, BN, limit, offset);
  }
  static __device__ __forceinline__ int key_block_end(int q0, int BM, int BN, int limit, int offset, const MaskEnv&) {
    return key_block_end(q0, BM, BN, limit, offset);
  }
  static __device__ __forceinline__ int query_block_begin(int k0, int BN, int BM, int num_queries, int offset,
                                                          const MaskEnv&) {
    return query_block_begin(k0, BN, BM, num_queries, offset);
  }
  static __device__ __forceinline__ int query_block_end(int k0, int BN, int BM, int num_queries, int offset,
                                                        const MaskEnv&) {
    return query_block_end(k0, BN, BM, num_queries, offset);
  }
};
using NoMask = Window<-1, -1>;
using CausalMask = Window<-1, 0>;

// The mask spec of a warp-specialised kernel's Config: Window<kWindowLeft, kWindowRight>, with the
// Config's MaskMod (a printed tile.mask_mod) on top where it names one.
template <class Config, class = void>
struct MaskSpecOf {
  using type = Window<Config::kWindowLeft, Config::kWindowRight>;
};
template <class Config>
struct MaskSpecOf<Config, typename VoidOf<typename Config::MaskMod>::type> {
  using type = ModMask<Window<Config::kWindowLeft, Config::kWindowRight>, typename Config::MaskMod>;
};

// Whether a Config names a mask modifier (Config::MaskMod) on top of its window.
template <class Config, class = void>
struct MaskHasModifier {
  static constexpr bool value = false;
};
template <class Config>
struct MaskHasModifier<Config, typename VoidOf<typename Config::MaskMod>::type> {
  static constexpr bool value = true;
};

// A Config's score modifier (Config::ScoreMod, a printed tile.score_mod: score_mod.cuh), or void; kPresent: which.
template <class Config, class = void>
struct ScoreModOf {
  using type = void;
  static constexpr bool kPresent = false;
};
template <class Config>
struct ScoreModOf<Config, typename VoidOf<typename Config::ScoreMod>::type> {
  using type = typename Config::ScoreMod;
  static constexpr bool kPresent = true;
};

// Whether a Config's mask reads tensors (then its kernels take a block-class table: mask_blocks.cuh).
template <class Config, class = void>
struct MaskReadsTensors {
  static constexpr bool value = false;
};
template <class Config>
struct MaskReadsTensors<Config, typename VoidOf<typename Config::MaskMod>::type> {
  static constexpr bool value = Config::MaskMod::kTensors > 0;
};

// Whether a mask spec reads the query head (a modifier's h): then its bounds differ from head to head.
template <class Spec>
struct MaskUsesHead {
  static constexpr bool value = false;
};
template <class Base, class Mod>
struct MaskUsesHead<ModMask<Base, Mod>> {
  static constexpr bool value = Mod::kUsesHead;
};

// A tensor with no element, as a modifier reads it: one element (0) that every read is outside of, so that
// ExactIndex::read may load unconditionally.
__device__ const int kMaskTensorZero[1] = {0};
__device__ const MaskTensor kMaskTensorEmpty = {kMaskTensorZero, {0, 0, 0, 0}, {0, 0, 0, 0}};

// The kernel's tensor parameters as a modifier's tensors (MaskTensor has TensorArg's layout).
__device__ __forceinline__ const MaskTensor* mask_tensor(const TensorArg& t) {
  const bool empty = t.shape[0] == 0 || t.shape[1] == 0 || t.shape[2] == 0 || t.shape[3] == 0;
  return empty ? &kMaskTensorEmpty : reinterpret_cast<const MaskTensor*>(&t);
}

// tile op `mask` for a modifier that reads tensors, column by column: each column's values are read once and used
// for the thread's rows at once (their values read once, live throughout), so few reads are live together. Row by
// row, the compiler kept every column's value live for the next row and the D = 128 forward spilled 112 bytes.
// (kTransposed: the tile is Sᵀ, rows are keys from row0 and columns queries from col0.)
template <class Spec, bool kTransposed = false, int R, int C, int W>
__device__ __forceinline__ void mask_by_columns(RegTileF32<R, C, W>& s, int row0, int col0, int limit, int offset,
                                                const MaskEnv& env) {
#pragma unroll
  for (int nt = 0; nt < s.kNT; ++nt)
#pragma unroll
    for (int e = 0; e < 2; ++e) {
      const int c = col0 + s.col(nt, e);
#pragma unroll
      for (int mt = 0; mt < s.kMT; ++mt)
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          const int r = row0 + s.row(mt, h);
          if (kTransposed ? Spec::hidden(c, r, limit, offset, env) : Spec::hidden(r, c, limit, offset, env))
            s.v[mt][nt][2 * h + e] = -INFINITY;
        }
    }
}

// The same masks with the elements evaluated in a rolled loop into a bit mask first (one bit an element, a word of
// 64 at a time), then applied to the tile with constant indices: for a modifier that reads tensors where the
// unrolled forms hold too many of its values at once (the three-warpgroup ws forward, the role-split backward).
// Which form spills depends on the kernel, so each kernel picks (attention_fwd_ws.cuh, attention_bwd_ws.cuh).
template <class Spec, bool kTransposed = false, int R, int C, int W>
__device__ __forceinline__ void mask_rolled(RegTileF32<R, C, W>& s, int row0, int col0, int limit, int offset,
                                             const MaskEnv& env) {
  using T = RegTileF32<R, C, W>;
  constexpr int kElements = T::kMT * T::kNT * 4, kWords = (kElements + 63) / 64;
#pragma unroll
  for (int w = 0; w < kWords; ++w) {
    unsigned long long hidden = 0;
#pragma unroll 1
    for (int b = 0; b < 64 && w * 64 + b < kElements; ++b) {
      const int idx = w * 64 + b, e = idx & 1, h = (idx >> 1) & 1, nt = (idx >> 2) % T::kNT, mt = (idx >> 2) / T::kNT;
      const int r = row0 + T::row(mt, h), c = col0 + T::col(nt, e);
      // (transposed: rows are keys, columns queries)
      if (kTransposed ? Spec::hidden(c, r, limit, offset, env) : Spec::hidden(r, c, limit, offset, env))
        hidden |= 1ull << b;
    }
#pragma unroll
    for (int b = 0; b < 64; ++b) {
      const int idx = w * 64 + b;
      if (idx < kElements && ((hidden >> b) & 1ull)) s.v[(idx >> 2) / T::kNT][(idx >> 2) % T::kNT][idx & 3] = -INFINITY;
    }
  }
}

// tile op `mask`: S[r][c] for query row0 + r, key col0 + c.
template <class Spec, int R, int C, int W>
__device__ __forceinline__ void mask(RegTileF32<R, C, W>& s, int row0, int col0, int limit, int offset,
                                     const MaskEnv& env = MaskEnv()) {
#pragma unroll
  for (int mt = 0; mt < s.kMT; ++mt)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int i = row0 + s.row(mt, h);
#pragma unroll
      for (int nt = 0; nt < s.kNT; ++nt)
#pragma unroll
        for (int e = 0; e < 2; ++e) {
          if (Spec::hidden(i, col0 + s.col(nt, e), limit, offset, env)) s.v[mt][nt][2 * h + e] = -INFINITY;
        }
    }
}

// Transposed form for the key-gridded backward: S^T[r][c] for key row0 + r, query col0 + c.
template <class Spec, int R, int C, int W>
__device__ __forceinline__ void mask_transposed(RegTileF32<R, C, W>& st, int row0, int col0, int limit,
                                                int offset, const MaskEnv& env = MaskEnv()) {
#pragma unroll
  for (int mt = 0; mt < st.kMT; ++mt)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int j = row0 + st.row(mt, h);
#pragma unroll
      for (int nt = 0; nt < st.kNT; ++nt)
#pragma unroll
        for (int e = 0; e < 2; ++e) {
          if (Spec::hidden(col0 + st.col(nt, e), j, limit, offset, env)) st.v[mt][nt][2 * h + e] = -INFINITY;
        }
    }
}

// How a kernel applies an element mask to its tile: row by row (`mask`, `mask_transposed`), column by column
// (`mask_by_columns`) or rolled (`mask_rolled`); each kernel picks the form that does not spill.
enum class MaskForm { kRows, kColumns, kRolled };

template <class Spec, MaskForm kForm, bool kTransposed, int R, int C, int W>
__device__ __forceinline__ void mask_in_form(RegTileF32<R, C, W>& s, int row0, int col0, int limit, int offset,
                                             const MaskEnv& env) {
  if constexpr (kForm == MaskForm::kColumns) mask_by_columns<Spec, kTransposed>(s, row0, col0, limit, offset, env);
  else if constexpr (kForm == MaskForm::kRolled) mask_rolled<Spec, kTransposed>(s, row0, col0, limit, offset, env);
  else if constexpr (kTransposed) mask_transposed<Spec>(s, row0, col0, limit, offset, env);
  else mask<Spec>(s, row0, col0, limit, offset, env);
}

// The element mask of the parts a block needs (`parts`: kMaskWindow | kMaskModifier from the spec's mask_parts or a
// block-class table, mask_mod.cuh): for a modifier that reads tensors (kSplitParts), the modifier alone where the
// window shows the block whole, the window alone where the modifier does (a document mask's diagonal blocks inside one
// document read no tensor), both otherwise; any other spec whole.
template <class Spec, MaskForm kForm, bool kTransposed = false, int R, int C, int W>
__device__ __forceinline__ void mask_parts(int parts, RegTileF32<R, C, W>& s, int row0, int col0, int limit,
                                           int offset, const MaskEnv& env) {
  if constexpr (!Spec::kSplitParts) {
    mask_in_form<Spec, kForm, kTransposed>(s, row0, col0, limit, offset, env);
  } else {
    if (parts == kMaskModifier)
      mask_in_form<typename Spec::ModifierOnly, kForm, kTransposed>(s, row0, col0, limit, offset, env);
    else if (parts == kMaskWindow)
      mask_in_form<typename Spec::BaseMask, kForm, kTransposed>(s, row0, col0, limit, offset, env);
    else
      mask_in_form<Spec, kForm, kTransposed>(s, row0, col0, limit, offset, env);
  }
}

// tile op `softcap`: s = cap * tanh(scale * s / cap). The scale is applied here, so the softmax
// ops that follow get scale 1. Runs before the mask (tanh(-inf) would be -1).
// Accurate tanhf: tanh.approx's 2^-11 relative error times cap would dominate bf16 rounding.
template <int R, int C, int W>
__device__ __forceinline__ void softcap(RegTileF32<R, C, W>& s, float scale, float cap) {
  const float pre = scale / cap;
#pragma unroll
  for (int mt = 0; mt < s.kMT; ++mt)
#pragma unroll
    for (int nt = 0; nt < s.kNT; ++nt)
#pragma unroll
      for (int i = 0; i < 4; ++i) s.v[mt][nt][i] = cap * tanhf(s.v[mt][nt][i] * pre);
}

// Backward form: also writes d(capped)/d(scale * s) = 1 - tanh^2 into `grad`.
template <int R, int C, int W>
__device__ __forceinline__ void softcap(RegTileF32<R, C, W>& s, RegTileF32<R, C, W>& grad, float scale,
                                        float cap) {
  const float pre = scale / cap;
#pragma unroll
  for (int mt = 0; mt < s.kMT; ++mt)
#pragma unroll
    for (int nt = 0; nt < s.kNT; ++nt)
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const float t = tanhf(s.v[mt][nt][i] * pre);
        s.v[mt][nt][i] = cap * t;
        grad.v[mt][nt][i] = 1.f - t * t;
      }
}

}  // namespace device
}  // namespace flashc
