// One TMA box per block through a tensor-map kernel parameter (the ABI order:
// tensors, tensor maps, scalars).
#include "flashc/device/tma.cuh"

struct TestTensorArg {
  void *data;
  long long shape[4];
  long long stride[4];
};
static_assert(sizeof(TestTensorArg) == 72, "kernel ABI: TensorArg is 72 bytes");

extern "C" __global__ void flashc_test_tma_copy(TestTensorArg x, TestTensorArg y,
                                                const __grid_constant__ flashc::TmaDescriptor xm,
                                                const __grid_constant__ flashc::TmaDescriptor xs, int swizzled) {
  using namespace flashc::device;
  constexpr int kRows = 32, kCols = 64, kBytes = kRows * kCols * 2;
  extern __shared__ unsigned char smem[];
  __shared__ unsigned long long bar; // an mbarrier (8-byte aligned)
  // The 128-byte swizzle pattern repeats every 1024 bytes: the box starts on
  // such a boundary (the manifest reserves 1024 bytes of slack).
  const unsigned raw = smem_u32(smem);
  const unsigned offset = ((raw + 1023u) & ~1023u) - raw;
  const unsigned dst = raw + offset;
  const unsigned barrier = smem_u32(&bar);
  const flashc::TmaDescriptor *map = swizzled ? &xs : &xm;
  if (threadIdx.x == 0) {
    mbarrier_init(barrier, 1);
    mbarrier_init_fence();
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    // Out-of-bounds box elements are zero-filled and still count as bytes.
    mbarrier_arrive_expect_tx(barrier, kBytes);
    tma_load_2d(dst, map, barrier, int(blockIdx.x) * kCols, int(blockIdx.y) * kRows);
  }
  mbarrier_wait(barrier, 0);
  const unsigned short *tile = reinterpret_cast<const unsigned short *>(smem + offset);
  unsigned short *out = static_cast<unsigned short *>(y.data);
  for (int i = threadIdx.x; i < kRows * kCols; i += blockDim.x) {
    const int r = i / kCols, c = i % kCols;
    const int chunk = c / 8, lane = c % 8; // 16-byte chunks of 8 bf16
    const int stored = swizzled ? (chunk ^ (r % 8)) : chunk;
    const long long gr = (long long)blockIdx.y * kRows + r, gc = (long long)blockIdx.x * kCols + c;
    out[gr * y.stride[0] + gc] = tile[r * kCols + stored * 8 + lane];
  }
}
