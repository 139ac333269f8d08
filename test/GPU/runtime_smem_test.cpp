// Dynamic shared memory above 48 KiB: the runtime raises the kernel's limit
// (cuFuncSetAttribute) and refuses sizes over the device's opt-in maximum.
#include "runtime_gpu_util.h"

#include <filesystem>
#include <unistd.h>

using namespace flashc::rt;
using namespace flashc::test;

namespace {

void reverseRows(const Driver &d, Bundle &b, int64_t M, int64_t N) {
  auto x = randomValues(M * N, uint32_t(N));
  DeviceBuffer dx(d, M * N * 4), dy(d, M * N * 4);
  dx.upload(x);
  Arguments args;
  int64_t shape[2] = {M, N};
  (void)args.setTensor("x", dx.get(), DType::F32, 2, shape);
  (void)args.setTensor("y", dy.get(), DType::F32, 2, shape);
  std::string label = "row_reverse " + std::to_string(M) + " x " + std::to_string(N) + " (" + std::to_string(N * 4) +
                      " bytes of dynamic shared memory)";
  if (!checkOk(b.launch("row_reverse", args), "launch " + label)) return;
  auto y = dy.download<float>(M * N);
  int bad = 0;
  for (int64_t m = 0; m < M; ++m)
    for (int64_t n = 0; n < N; ++n) bad += y[m * N + n] != x[m * N + (N - 1 - n)];
  check(bad == 0, label + " matches the CPU", std::to_string(bad) + " mismatches");
}

} // namespace

int main() {
  const Driver *d = driverOrSkip();
  if (!d) return kSkipReturnCode;
  auto dev = currentDeviceInfo();
  if (!checkOk(dev, "current device")) return checkSummary();
  int64_t optin = dev->limits.maxDynamicSharedBytes;
  std::printf("opt-in shared memory per block: %lld bytes\n", (long long)optin);
  BundleOptions o;
  o.cacheDir = (std::filesystem::temp_directory_path() / ("flashc-gpu-smem-" + std::to_string(getpid()))).string();
  auto b = Bundle::open(FLASHC_TEST_BUNDLES_DIR "/basic", o);
  if (!checkOk(b, "open the basic bundle")) return checkSummary();
  reverseRows(*d, **b, 3, 1000);   // 4 KB: default limit
  reverseRows(*d, **b, 5, 20000);  // 80 KB: above 48 KB, attribute raised
  reverseRows(*d, **b, 2, optin / 4); // exactly the opt-in maximum
  reverseRows(*d, **b, 3, 999);    // small again after raising
  int64_t tooMany = optin / 4 + 1;
  DeviceBuffer dx(*d, 4 * tooMany * 4);
  Arguments args;
  int64_t shape[2] = {1, tooMany};
  (void)args.setTensor("x", dx.get(), DType::F32, 2, shape);
  (void)args.setTensor("y", dx.get(), DType::F32, 2, shape);
  checkError((*b)->launch("row_reverse", args),
             "kernel 'row_reverse' needs " + std::to_string(tooMany * 4) + " bytes of dynamic shared memory; the device allows at most",
             "one float over the opt-in limit is refused with a clear error");
  std::filesystem::remove_all(o.cacheDir);
  return checkSummary();
}
