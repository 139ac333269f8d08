// Embedding example: open a bundle, launch its `row_scale` kernel through the
// C ABI on the application's own stream and device memory, and check the
// result against a CPU computation.
//   usage: flashc_embed <bundle-dir>
// With no GPU or driver it says so and exits 0.
#include <flashc/flashc.h>

#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>

namespace {

uint16_t toBf16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  u += 0x7fff + ((u >> 16) & 1); // round to nearest even
  return uint16_t(u >> 16);
}
float fromBf16(uint16_t b) {
  uint32_t u = uint32_t(b) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

int fail(const char *what) {
  std::fprintf(stderr, "flashc_embed: %s: %s\n", what, flashc_last_error());
  return 1;
}

bool cudaOk(cudaError_t e, const char *what) {
  if (e == cudaSuccess) return true;
  std::fprintf(stderr, "flashc_embed: %s: %s\n", what, cudaGetErrorString(e));
  return false;
}

} // namespace

int main(int argc, char **argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s <bundle-dir>\n", argv[0]);
    return 2;
  }
  std::printf("flashc runtime %s\n", flashc_version());

  flashc_bundle bundle = nullptr;
  if (flashc_bundle_open(argv[1], &bundle) != FLASHC_OK) return fail("opening the bundle");
  size_t kernels = 0;
  flashc_bundle_kernel_count(bundle, &kernels);
  std::printf("bundle %s: %zu kernels\n", argv[1], kernels);
  if (flashc_bundle_lookup(bundle, "row_scale", nullptr) != FLASHC_OK) return fail("looking up row_scale");

  if (flashc_check_device() != FLASHC_OK) {
    std::printf("no GPU available (%s); nothing launched\n", flashc_last_error());
    flashc_bundle_close(bundle);
    return 0;
  }

  // y[m, n] = x[m, n] * s[m] * alpha on a 33 x 200 bf16 matrix.
  const int64_t M = 33, N = 200;
  const float alpha = 1.5f;
  std::vector<uint16_t> x(M * N), y(M * N, 0xFFFF);
  std::vector<float> s(M);
  for (int64_t i = 0; i < M * N; ++i) x[i] = toBf16(std::sin(0.01f * float(i)));
  for (int64_t m = 0; m < M; ++m) s[m] = 0.5f + 0.01f * float(m);

  void *dx = nullptr, *ds = nullptr, *dy = nullptr;
  cudaStream_t stream = nullptr;
  if (!cudaOk(cudaMalloc(&dx, x.size() * 2), "cudaMalloc") || !cudaOk(cudaMalloc(&ds, s.size() * 4), "cudaMalloc") ||
      !cudaOk(cudaMalloc(&dy, y.size() * 2), "cudaMalloc") || !cudaOk(cudaStreamCreate(&stream), "cudaStreamCreate"))
    return 1;
  cudaMemcpy(dx, x.data(), x.size() * 2, cudaMemcpyHostToDevice);
  cudaMemcpy(ds, s.data(), s.size() * 4, cudaMemcpyHostToDevice);
  cudaMemcpy(dy, y.data(), y.size() * 2, cudaMemcpyHostToDevice); // poison: NaN everywhere

  flashc_args args = nullptr;
  flashc_args_create(&args);
  int64_t shape[2] = {M, N}, sShape[1] = {M};
  flashc_args_set_tensor(args, "x", dx, FLASHC_BF16, 2, shape, nullptr);
  flashc_args_set_tensor(args, "s", ds, FLASHC_F32, 1, sShape, nullptr);
  flashc_args_set_tensor(args, "y", dy, FLASHC_BF16, 2, shape, nullptr);
  flashc_args_set_f32(args, "alpha", alpha);
  if (flashc_launch(bundle, "row_scale", args, stream) != FLASHC_OK) return fail("launching row_scale");
  if (!cudaOk(cudaStreamSynchronize(stream), "the kernel")) return 1;
  cudaMemcpy(y.data(), dy, y.size() * 2, cudaMemcpyDeviceToHost);

  int bad = 0;
  for (int64_t m = 0; m < M; ++m)
    for (int64_t n = 0; n < N; ++n) {
      double ref = double(fromBf16(x[m * N + n])) * s[m] * alpha;
      double got = fromBf16(y[m * N + n]);
      if (!(std::fabs(got - ref) <= std::fabs(ref) / 128 + 1e-30)) ++bad; // one bf16 rounding
    }
  flashc_args_destroy(args);
  flashc_bundle_close(bundle);
  cudaFree(dx);
  cudaFree(ds);
  cudaFree(dy);
  cudaStreamDestroy(stream);
  if (bad) {
    std::printf("FAILED: %d of %lld values differ from the CPU\n", bad, (long long)(M * N));
    return 1;
  }
  std::printf("PASSED: row_scale on the GPU matches the CPU (%lld values)\n", (long long)(M * N));
  return 0;
}
