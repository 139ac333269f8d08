// Helpers for the runtime's GPU tests: skip without a device, device buffers
// through the runtime's own driver loader, poisoning (bf16: flashc/reference/codec.h).
#pragma once

#include "../Runtime/Check.h"
#include "Driver.h"
#include "flashc/reference/codec.h"
#include "flashc/runtime/Runtime.h"

#include <cmath>
#include <cstring>
#include <vector>

namespace flashc::test {

constexpr int kSkipReturnCode = 77;

/// Returns the driver, or nullptr after printing why the test is skipped.
inline const rt::Driver *driverOrSkip() {
  auto d = rt::Driver::get();
  if (!d) {
    std::printf("SKIPPED: no CUDA device (%s)\n", d.message().c_str());
    return nullptr;
  }
  return *d;
}

/// Device memory poisoned with 0xFF bytes (NaN for f32 and bf16).
class DeviceBuffer {
public:
  DeviceBuffer(const rt::Driver &d, size_t bytes) : d_(d), bytes_(bytes) {
    if (d_.cuMemAlloc(&ptr_, bytes ? bytes : 1) != CUDA_SUCCESS) ptr_ = 0;
    poison();
  }
  ~DeviceBuffer() {
    if (ptr_) d_.cuMemFree(ptr_);
  }
  DeviceBuffer(const DeviceBuffer &) = delete;
  void *get() const { return reinterpret_cast<void *>(ptr_); }
  void poison() {
    if (ptr_) d_.cuMemsetD8(ptr_, 0xFF, bytes_);
  }
  template <typename T> void upload(const std::vector<T> &v) { d_.cuMemcpyHtoD(ptr_, v.data(), v.size() * sizeof(T)); }
  template <typename T> std::vector<T> download(size_t count) const {
    std::vector<T> v(count);
    d_.cuCtxSynchronize();
    d_.cuMemcpyDtoH(v.data(), ptr_, count * sizeof(T));
    return v;
  }

private:
  const rt::Driver &d_;
  CUdeviceptr ptr_ = 0;
  size_t bytes_;
};

/// Deterministic pseudo-random values in [-1, 1).
inline std::vector<float> randomValues(size_t n, uint32_t seed) {
  std::vector<float> v(n);
  uint32_t s = seed * 2654435761u + 1;
  for (auto &x : v) {
    s = s * 1664525u + 1013904223u;
    x = float((s >> 8) & 0xffff) / 32768.0f - 1.0f;
  }
  return v;
}

} // namespace flashc::test
