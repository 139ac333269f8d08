// The call forms the CUDA emitter prints (compiler/lib/Codegen/CudaEmitter.cpp), one per tile op, on top
// of the primitives in the other headers: global views with explicit (row0, col0, limits),
// mask<L, R>, lse, row_dot on any operands, scalar index helpers.
#pragma once
#include "flashc/device/backward.cuh"
#include "flashc/device/activation.cuh"
#include "flashc/device/copy.cuh"
#include "flashc/device/mask.cuh"

namespace flashc {
namespace device {

// ---- scalar index arithmetic (arith ops the emitter maps to calls) ----
__device__ __forceinline__ int ceil_div(int a, int b) { return (a + b - 1) / b; }
__device__ __forceinline__ int floor_div(int a, int b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }

// ---- global views: leading indices of a rank-2/3/4 tensor; rows = dim rank-2, cols = dim rank-1 ----
template <class T>
__device__ __forceinline__ GlobalMatrix<T> matrix_view(const TensorArg& t) { return matrix_at<T>(t); }
template <class T>
__device__ __forceinline__ GlobalMatrix<T> matrix_view(const TensorArg& t, int i0) { return matrix_at<T>(t, i0); }
template <class T>
__device__ __forceinline__ GlobalMatrix<T> matrix_view(const TensorArg& t, int i0, int i1) {
  return matrix_at<T>(t, i0, i1);
}
// Vectors: the last dim. Element type f32 unless given (a 16-bit bias: vector_view<bf16>(b)).
template <class T = float>
__device__ __forceinline__ GlobalVector<T> vector_view(const TensorArg& t) { return vector_at<T>(t); }
template <class T = float>
__device__ __forceinline__ GlobalVector<T> vector_view(const TensorArg& t, int i0) { return vector_at<T>(t, i0); }
template <class T = float>
__device__ __forceinline__ GlobalVector<T> vector_view(const TensorArg& t, int i0, int i1) {
  return vector_at<T>(t, i0, i1);
}

// The tile window [row0, ..) x [col0, ..) of m with the op's limits [rl, cl] (absolute indices).
template <class T>
__device__ __forceinline__ GlobalMatrix<T> tile_window(const GlobalMatrix<T>& m, int col0, int rl, int cl) {
  return columns_from(with_limits(m, rl, cl), col0);
}

// tile.load %t[.., row0, col0] limit [rl, cl] -> shared (issue only; the emitter commits/waits).
// kExact: cl may end inside a 16-byte chunk (copy.cuh); the emitter passes true unless it knows cl
// is whole chunks. The stores and atomics below take the same switch.
template <int kThreads, bool kExact = false, class T, int R, int C>
__device__ __forceinline__ void load_tile_async(SmemTile<T, R, C> dst, const GlobalMatrix<T>& m, int row0, int col0,
                                                int rl, int cl) {
  load_tile_async<kThreads, kExact>(dst, tile_window(m, col0, rl, cl), row0);
}

// tile.store %x, %t[.., row0, col0] limit [rl, cl], from shared (caller synced after writing x),
// from a 16-bit register tile, or from an f32 register tile into an f32 tensor.
template <int kThreads, bool kExact = false, class T, int R, int C>
__device__ __forceinline__ void store_tile(const GlobalMatrix<T>& m, int row0, int col0, int rl, int cl,
                                           SmemTile<T, R, C> x) {
  store_tile<kThreads, kExact>(tile_window(m, col0, rl, cl), row0, x);
}
template <int kThreads, bool kExact = false, class T, int R, int C, int W>
__device__ __forceinline__ void store_tile(const GlobalMatrix<T>& m, int row0, int col0, int rl, int cl,
                                           const RegTile16<T, R, C, W>& x) {
  store_fragments<kExact>(tile_window(m, col0, rl, cl), row0, x);
}
// (f32 register tiles store element-exact either way.)
template <int kThreads, bool kExact = false, int R, int C, int W>
__device__ __forceinline__ void store_tile(const GlobalMatrix<float>& m, int row0, int col0, int rl, int cl,
                                           const RegTileF32<R, C, W>& x) {
  const GlobalMatrix<float> dst = tile_window(m, col0, rl, cl);
#pragma unroll
  for (int mt = 0; mt < x.kMT; ++mt)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int row = row0 + x.row(mt, h);
      if (row < dst.rows) {
#pragma unroll
        for (int nt = 0; nt < x.kNT; ++nt) {
          const int c = x.col(nt, 0);
          if (c + 1 < dst.cols)
            *reinterpret_cast<float2*>(dst.base + row * dst.row_stride + c) =
                make_float2(x.v[mt][nt][2 * h], x.v[mt][nt][2 * h + 1]);
          else if (c < dst.cols)
            dst.base[row * dst.row_stride + c] = x.v[mt][nt][2 * h];
        }
      }
    }
}

// tile.atomic_add %x, %t[.., row0, col0] limit [rl, cl] (f32 register tile into an f32 tensor).
// 8-byte reductions: the 16-byte form (atomic_add<true>) measured no faster in the generated
// backward on the H200 (bench/results/2026-11-29-h200-session2.md).
template <bool kExact = false, int R, int C, int W>
__device__ __forceinline__ void atomic_add_tile(const GlobalMatrix<float>& m, int row0, int col0, int rl, int cl,
                                                const RegTileF32<R, C, W>& x) {
  atomic_add<false, kExact>(tile_window(m, col0, rl, cl), row0, x);
}

// The same in 16-byte reductions over 64-byte row segments (atomic_add_row_segments): the L2 takes a
// request per contiguous segment, so a quad covering 64 bytes of a row halves the requests of the 8-byte
// form (the warp-specialised backward's dQ: +14-18 %, kernel lab run 10). cl - col0 a multiple of 4.
template <int R, int C, int W>
__device__ __forceinline__ void atomic_add_tile_segments(const GlobalMatrix<float>& m, int row0, int col0, int rl,
                                                         int cl, const RegTileF32<R, C, W>& x) {
  atomic_add_row_segments(tile_window(m, col0, rl, cl), row0, x);
}

// tile.add_bias %acc, %b[col0] limit cl.
template <class T, int R, int C, int W>
__device__ __forceinline__ void add_bias(RegTileF32<R, C, W>& t, const GlobalVector<T>& b, int col0, int limit) {
#pragma unroll
  for (int nt = 0; nt < t.kNT; ++nt)
#pragma unroll
    for (int e = 0; e < 2; ++e) {
      const int c = col0 + t.col(nt, e);
      const float bias = c < limit ? to_float(b.base[c * b.stride]) : 0.f;
#pragma unroll
      for (int mt = 0; mt < t.kMT; ++mt) {
        t.v[mt][nt][e] += bias;
        t.v[mt][nt][2 + e] += bias;
      }
    }
}

// tile.mask %s rows r0 cols c0 limit cl offset off window [L, R].
template <int L, int R, int TR, int TC, int W>
__device__ __forceinline__ void mask(RegTileF32<TR, TC, W>& s, int row0, int col0, int limit, int offset) {
  mask<Window<L, R>>(s, row0, col0, limit, offset);
}

// tile.mask ... transposed: the tile is Sᵀ (rows are keys from key_row0, columns queries from
// query_col0); the tile op's row0/col0 name the query and key starts, so the emitter swaps them.
template <int L, int R, int TR, int TC, int W>
__device__ __forceinline__ void mask_transposed(RegTileF32<TR, TC, W>& st, int key_row0, int query_col0, int limit,
                                                int offset) {
  mask_transposed<Window<L, R>>(st, key_row0, query_col0, limit, offset);
}

// tile.mask ... mod @m(%b, %h, %t...): the window and the mask modifier Mod (the struct printed for
// tile.mask_mod @m) at batch b and query head h, reading the tensors t (mask_env).
template <class Mod, int L, int R, int TR, int TC, int W>
__device__ __forceinline__ void mask_mod(RegTileF32<TR, TC, W>& s, int row0, int col0, int limit, int offset,
                                         const MaskEnv& env) {
  mask<ModMask<Window<L, R>, Mod>>(s, row0, col0, limit, offset, env);
}
template <class Mod, int L, int R, int TR, int TC, int W>
__device__ __forceinline__ void mask_mod_transposed(RegTileF32<TR, TC, W>& st, int key_row0, int query_col0,
                                                    int limit, int offset, const MaskEnv& env) {
  mask_transposed<ModMask<Window<L, R>, Mod>>(st, key_row0, query_col0, limit, offset, env);
}
// The env of one tile.mask: its batch and head, and the kernel's tensors the modifier reads.
__device__ __forceinline__ MaskEnv mask_env(long long batch, long long head) {
  MaskEnv env;
  env.batch = batch;
  env.head = head;
  return env;
}
template <class... T>
__device__ __forceinline__ MaskEnv mask_env(long long batch, long long head, const T&... tensors) {
  MaskEnv env = mask_env(batch, head);
  const TensorArg* list[] = {&tensors...};
  for (int i = 0; i < static_cast<int>(sizeof...(T)); ++i) env.tensor[i] = mask_tensor(*list[i]);
  return env;
}

// tile.load_rows into shared memory: the per-query lse / D column vectors of the Sᵀ backward.
__device__ __forceinline__ float* shared_floats(unsigned char* smem, int byte_offset) {
  return reinterpret_cast<float*>(smem + byte_offset);
}
template <int kThreads, int C>
__device__ __forceinline__ void load_rows_shared(float* dst, const GlobalVector<float>& src, int row0, int limit) {
  for (int c = threadIdx.x; c < C; c += kThreads) dst[c] = row0 + c < limit ? src.base[(row0 + c) * src.stride] : 0.f;
}
// The same issued one iteration ahead with the tile loads (a pipelined loop): 4-byte cp.async,
// 0 written directly past `limit`; visible after the pipeline's cp_async_wait and barrier.
template <int kThreads, int C>
__device__ __forceinline__ void load_rows_async(float* dst, const GlobalVector<float>& src, int row0, int limit) {
  for (int c = threadIdx.x; c < C; c += kThreads) {
    if (row0 + c < limit)
      cp_async_4(smem_u32(dst + c), src.base + (row0 + c) * src.stride);
    else
      dst[c] = 0.f;
  }
}

// tile.lse (logsumexp under the op's name; a kernel argument named `lse` hides it: prefer logsumexp).
template <int R, int W>
__device__ __forceinline__ RegRowVec<R, W> lse(const RegRowVec<R, W>& m, const RegRowVec<R, W>& l, float scale) {
  return logsumexp(m, l, scale);
}

// tile.row_dot %a, %b on register tiles (f32 or 16-bit): quad-shuffle reduction.
template <int R, int C, int W>
__device__ __forceinline__ RegRowVec<R, W> row_dot(const RegTileF32<R, C, W>& a, const RegTileF32<R, C, W>& b) {
  RegRowVec<R, W> d;
#pragma unroll
  for (int mt = 0; mt < d.kMT; ++mt)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      float acc = 0.f;
#pragma unroll
      for (int nt = 0; nt < a.kNT; ++nt)
        acc += a.v[mt][nt][2 * h] * b.v[mt][nt][2 * h] + a.v[mt][nt][2 * h + 1] * b.v[mt][nt][2 * h + 1];
      d.v[mt][h] = quad_sum(acc);
    }
  return d;
}
template <class T, int R, int C, int W>
__device__ __forceinline__ RegRowVec<R, W> row_dot(const RegTile16<T, R, C, W>& a, const RegTile16<T, R, C, W>& b) {
  RegRowVec<R, W> d;
#pragma unroll
  for (int mt = 0; mt < d.kMT; ++mt)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      float acc = 0.f;
#pragma unroll
      for (int nt = 0; nt < a.kNT; ++nt) {
        const float2 x = ElemTraits<T>::unpack(a.v[mt][nt][h]), y = ElemTraits<T>::unpack(b.v[mt][nt][h]);
        acc += x.x * y.x + x.y * y.y;
      }
      d.v[mt][h] = quad_sum(acc);
    }
  return d;
}
// On shared tiles the warp count cannot be deduced from the operands: the result converts to
// whatever RegRowVec<R, W> it initializes (`RegRowVec<64, kWarps> d = row_dot(a, b);`).
template <class T, int R, int C>
struct RowDotShared {
  SmemTile<T, R, C> a, b;
  template <int W>
  __device__ __forceinline__ operator RegRowVec<R, W>() const { return row_dot<W>(a, b); }
};
template <class T, int R, int C>
__device__ __forceinline__ RowDotShared<T, R, C> row_dot(SmemTile<T, R, C> a, SmemTile<T, R, C> b) {
  return RowDotShared<T, R, C>{a, b};
}

// tile.fill on a 16-bit register tile; tile.convert 16-bit -> f32 (register).
template <class T, int R, int C, int W>
__device__ __forceinline__ void fill(RegTile16<T, R, C, W>& t, float value) {
  const unsigned w = ElemTraits<T>::pack(value, value);
#pragma unroll
  for (int mt = 0; mt < t.kMT; ++mt)
#pragma unroll
    for (int nt = 0; nt < t.kNT; ++nt) t.v[mt][nt][0] = t.v[mt][nt][1] = w;
}
template <class T, int R, int C, int W>
__device__ __forceinline__ void convert(RegTileF32<R, C, W>& dst, const RegTile16<T, R, C, W>& src) {
#pragma unroll
  for (int mt = 0; mt < src.kMT; ++mt)
#pragma unroll
    for (int nt = 0; nt < src.kNT; ++nt)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const float2 f = ElemTraits<T>::unpack(src.v[mt][nt][h]);
        dst.v[mt][nt][2 * h] = f.x;
        dst.v[mt][nt][2 * h + 1] = f.y;
      }
}

// tile.convert with a shared source: element (row, col) of the calling thread's fragments read
// from the swizzled tile (f32 -> 16-bit rounds to nearest even).
template <class T, int R, int C, int W>
__device__ __forceinline__ void convert(RegTile16<T, R, C, W>& dst, SmemTile<float, R, C> src) {
  const char* base = reinterpret_cast<const char*>(src.data);
#pragma unroll
  for (int mt = 0; mt < dst.kMT; ++mt)
#pragma unroll
    for (int h = 0; h < 2; ++h)
#pragma unroll
      for (int nt = 0; nt < dst.kNT; ++nt) {
        const float2 f = *reinterpret_cast<const float2*>(
            base + SmemTile<float, R, C>::elem_offset(dst.row(mt, h), dst.col(nt, 0)));
        dst.v[mt][nt][h] = ElemTraits<T>::pack(f.x, f.y);
      }
}
template <int R, int C, int W>
__device__ __forceinline__ void convert(RegTileF32<R, C, W>& dst, SmemTile<float, R, C> src) {
  const char* base = reinterpret_cast<const char*>(src.data);
#pragma unroll
  for (int mt = 0; mt < dst.kMT; ++mt)
#pragma unroll
    for (int h = 0; h < 2; ++h)
#pragma unroll
      for (int nt = 0; nt < dst.kNT; ++nt) {
        const float2 f = *reinterpret_cast<const float2*>(
            base + SmemTile<float, R, C>::elem_offset(dst.row(mt, h), dst.col(nt, 0)));
        dst.v[mt][nt][2 * h] = f.x;
        dst.v[mt][nt][2 * h + 1] = f.y;
      }
}
template <class T, int R, int C, int W>
__device__ __forceinline__ void convert(RegTileF32<R, C, W>& dst, SmemTile<T, R, C> src) {
  static_assert(sizeof(T) == 2, "16-bit shared source");
  RegTile16<T, R, C, W> frag;
  load_fragments(frag, src);
  convert(dst, frag);
}
template <class T, int R, int C, int W>
__device__ __forceinline__ void convert(RegTile16<T, R, C, W>& dst, SmemTile<T, R, C> src) {
  load_fragments(dst, src);
}

// tile.softcap_grad %g, %capped cap C: g *= d/dx [C tanh(x / C)] = 1 - (capped / C)^2.
template <int R, int C, int W>
__device__ __forceinline__ void softcap_grad(RegTileF32<R, C, W>& g, const RegTileF32<R, C, W>& capped, float cap) {
  const float inv = 1.f / cap;
#pragma unroll
  for (int mt = 0; mt < g.kMT; ++mt)
#pragma unroll
    for (int nt = 0; nt < g.kNT; ++nt)
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const float t = capped.v[mt][nt][i] * inv;
        g.v[mt][nt][i] *= 1.f - t * t;
      }
}

}  // namespace device
}  // namespace flashc
