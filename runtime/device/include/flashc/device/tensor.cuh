// Kernel ABI: one TensorArg per tensor parameter, passed by value (docs/architecture.md).
// Host mirror: flashc_tensor_arg in flashc/flashc.h; both assert the 72-byte layout.
#pragma once

namespace flashc {

// Up to 4 dims; dims past the rank have shape 1 and stride 0. Strides are in elements and the
// innermost dimension has stride 1. long long (not int64_t) so NVRTC needs no <cstdint>.
struct TensorArg {
  void* data;
  long long shape[4];
  long long stride[4];
};
static_assert(sizeof(TensorArg) == 72, "TensorArg layout is part of the kernel ABI");

namespace device {

// A row-major 2-D view [rows][cols] with unit column stride: the unit every tile copy works on.
// rows/cols are the limits of tile.load/tile.store: loads zero-fill past them, stores skip.
// Rows are copied in 16-byte chunks, so base and row_stride must be 16-byte aligned (row_stride a
// multiple of 8 16-bit elements); cols may be any width: a chunk it ends inside is read up to the
// limit (zero-filled past it) and stored element by element (copy.cuh).
template <class T>
struct GlobalMatrix {
  T* base;               // element (0, 0)
  long long row_stride;  // elements between consecutive rows
  int rows;              // valid rows
  int cols;              // valid columns
};

// Matrix views of a tensor: the last two dims are (rows, cols), leading dims are indexed.
// rank 4: [i0][i1][rows][cols] (attention [B,H,S,D]); rank 3: [i0][rows][cols]; rank 2.
template <class T>
__device__ __forceinline__ GlobalMatrix<T> matrix_at(const TensorArg& t, int i0, int i1) {
  T* base = static_cast<T*>(t.data) + i0 * t.stride[0] + i1 * t.stride[1];
  return GlobalMatrix<T>{base, t.stride[2], static_cast<int>(t.shape[2]), static_cast<int>(t.shape[3])};
}
template <class T>
__device__ __forceinline__ GlobalMatrix<T> matrix_at(const TensorArg& t, int i0) {
  T* base = static_cast<T*>(t.data) + i0 * t.stride[0];
  return GlobalMatrix<T>{base, t.stride[1], static_cast<int>(t.shape[1]), static_cast<int>(t.shape[2])};
}
template <class T>
__device__ __forceinline__ GlobalMatrix<T> matrix_at(const TensorArg& t) {
  return GlobalMatrix<T>{static_cast<T*>(t.data), t.stride[0], static_cast<int>(t.shape[0]),
                         static_cast<int>(t.shape[1])};
}

// Explicit limits (tile.load/tile.store `limit [rl, cl]`), relative to the view's origin.
template <class T>
__device__ __forceinline__ GlobalMatrix<T> with_limits(GlobalMatrix<T> m, int rows, int cols) {
  m.rows = rows;
  m.cols = cols;
  return m;
}

// Columns [col0, ...) of m: a column slice (col0 a multiple of 8).
template <class T>
__device__ __forceinline__ GlobalMatrix<T> columns_from(const GlobalMatrix<T>& m, int col0) {
  return GlobalMatrix<T>{m.base + col0, m.row_stride, m.rows, m.cols - col0};
}

// A strided vector [n]; used for per-row statistics (lse, D) of a logical [B, H, S] tensor.
template <class T>
struct GlobalVector {
  T* base;
  long long stride;
  int size;
};

// Vector views: the last dim is the vector; leading dims indexed (lse [B,H,S]: vector_at(t, b, h)).
template <class T>
__device__ __forceinline__ GlobalVector<T> vector_at(const TensorArg& t, int i0, int i1) {
  T* base = static_cast<T*>(t.data) + i0 * t.stride[0] + i1 * t.stride[1];
  return GlobalVector<T>{base, t.stride[2], static_cast<int>(t.shape[2])};
}
template <class T>
__device__ __forceinline__ GlobalVector<T> vector_at(const TensorArg& t, int i0) {
  T* base = static_cast<T*>(t.data) + i0 * t.stride[0];
  return GlobalVector<T>{base, t.stride[1], static_cast<int>(t.shape[1])};
}
template <class T>
__device__ __forceinline__ GlobalVector<T> vector_at(const TensorArg& t) {
  return GlobalVector<T>{static_cast<T*>(t.data), t.stride[0], static_cast<int>(t.shape[0])};
}

}  // namespace device
}  // namespace flashc
