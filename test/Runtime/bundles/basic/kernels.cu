// Hand-written kernels for runtime tests. Each takes the kernel ABI's tensor
// argument by value (72 bytes: data, shape[4], stride[4] in elements).
#include <cuda_bf16.h>

struct TestTensorArg {
  void *data;
  long long shape[4];
  long long stride[4];
};
static_assert(sizeof(TestTensorArg) == 72, "kernel ABI: TensorArg is 72 bytes");

extern "C" __global__ void flashc_test_vector_add(TestTensorArg a, TestTensorArg b, TestTensorArg c) {
  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= a.shape[0]) return;
  const float *pa = (const float *)a.data, *pb = (const float *)b.data;
  float *pc = (float *)c.data;
  pc[i * c.stride[0]] = pa[i * a.stride[0]] + pb[i * b.stride[0]];
}

extern "C" __global__ void flashc_test_row_scale(TestTensorArg x, TestTensorArg s, TestTensorArg y, float alpha) {
  long long m = blockIdx.y;
  long long n = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (n >= x.shape[1]) return;
  const __nv_bfloat16 *px = (const __nv_bfloat16 *)x.data + m * x.stride[0];
  __nv_bfloat16 *py = (__nv_bfloat16 *)y.data + m * y.stride[0];
  float scale = ((const float *)s.data)[m * s.stride[0]] * alpha;
  py[n] = __float2bfloat16(__bfloat162float(px[n]) * scale);
}

extern "C" __global__ void flashc_test_row_reverse(TestTensorArg x, TestTensorArg y) {
  extern __shared__ float row[];
  long long m = blockIdx.x, n = x.shape[1];
  const float *px = (const float *)x.data + m * x.stride[0];
  float *py = (float *)y.data + m * y.stride[0];
  for (long long i = threadIdx.x; i < n; i += blockDim.x) row[i] = px[i];
  __syncthreads();
  for (long long i = threadIdx.x; i < n; i += blockDim.x) py[i] = row[n - 1 - i];
}

extern "C" __global__ void flashc_test_fill(TestTensorArg out, int value) {
  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < out.shape[0]) ((int *)out.data)[i * out.stride[0]] = value + (int)i;
}

extern "C" __global__ void flashc_test_scale_accumulate(TestTensorArg x, TestTensorArg tmp, float alpha) {
  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= x.shape[0]) return;
  float *pt = (float *)tmp.data;
  pt[i * tmp.stride[0]] += alpha * ((const float *)x.data)[i * x.stride[0]];
}

extern "C" __global__ void flashc_test_add_into(TestTensorArg tmp, TestTensorArg b, TestTensorArg out) {
  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= tmp.shape[0]) return;
  ((float *)out.data)[i * out.stride[0]] =
      ((const float *)tmp.data)[i * tmp.stride[0]] + ((const float *)b.data)[i * b.stride[0]];
}
