// The sm_90a variant of the multi-arch test bundle: c = a + b, 128 threads a
// block. The wgmma fence compiles only for sm_90a: NVRTC rejects this source
// for any other arch, so a test that JIT-compiles it elsewhere fails loudly.
struct TestTensorArg {
  void *data;
  long long shape[4];
  long long stride[4];
};

extern "C" __global__ void flashc_test_vector_add_sm90a(TestTensorArg a, TestTensorArg b, TestTensorArg c) {
  asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= a.shape[0]) return;
  ((float *)c.data)[i * c.stride[0]] = ((const float *)a.data)[i * a.stride[0]] + ((const float *)b.data)[i * b.stride[0]];
}
