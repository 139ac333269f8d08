// The sm_80 variant of the multi-arch test bundle: c = a + b, 256 threads a block.
struct TestTensorArg {
  void *data;
  long long shape[4];
  long long stride[4];
};

extern "C" __global__ void flashc_test_vector_add_sm80(TestTensorArg a, TestTensorArg b, TestTensorArg c) {
  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= a.shape[0]) return;
  ((float *)c.data)[i * c.stride[0]] = ((const float *)a.data)[i * a.stride[0]] + ((const float *)b.data)[i * b.stride[0]];
}
