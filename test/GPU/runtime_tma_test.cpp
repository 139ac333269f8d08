// Tensor maps on the GPU (sm_90+): the runtime derives a CUtensorMap from the
// bound tensor, passes it by value between the tensors and the scalars, and
// the kernel loads one box per block by TMA (plain and 128-byte swizzled),
// including ragged edge boxes whose out-of-bounds part must read as zeros.
#include "runtime_gpu_util.h"

#include "flashc/flashc.h"

#include <filesystem>
#include <unistd.h>

using namespace flashc::rt;
using namespace flashc::test;
namespace fs = std::filesystem;

namespace {

const char *kTma = FLASHC_TEST_BUNDLES_DIR "/tma";

constexpr int64_t kBoxRows = 32, kBoxCols = 64;

int64_t roundUp(int64_t v, int64_t m) { return (v + m - 1) / m * m; }

// x: M x N bf16 with row stride ld (a multiple of 8 elements = 16 bytes).
void copyBoxes(const Driver &d, Bundle &b, int64_t M, int64_t N, int64_t ld, int swizzled) {
  const int64_t P = roundUp(M, kBoxRows), Q = roundUp(N, kBoxCols);
  std::vector<uint16_t> x(size_t(M * ld));
  auto values = randomValues(x.size(), uint32_t(M * 131 + N));
  for (size_t i = 0; i < x.size(); ++i) x[i] = toBf16(values[i]);
  DeviceBuffer dx(d, x.size() * 2), dy(d, size_t(P * Q * 2)); // dy poisoned with 0xFFFF
  dx.upload(x);
  Arguments args;
  int64_t xShape[2] = {M, N}, xStrides[2] = {ld, 1}, yShape[2] = {P, Q};
  (void)args.setTensor("x", dx.get(), DType::BF16, 2, xShape, xStrides);
  (void)args.setTensor("y", dy.get(), DType::BF16, 2, yShape);
  args.setI32("swizzled", swizzled);
  std::string label = "TMA copy of x [" + std::to_string(M) + ", " + std::to_string(N) + "] (row stride " +
                      std::to_string(ld) + ")" + (swizzled ? " through the 128-byte swizzled map" : " through the plain map");
  if (!checkOk(b.launch("tma_copy", args), "launch " + label)) return;
  auto y = dy.download<uint16_t>(size_t(P * Q));
  int64_t wrong = 0, wrongPad = 0;
  for (int64_t r = 0; r < P; ++r)
    for (int64_t c = 0; c < Q; ++c) {
      uint16_t got = y[size_t(r * Q + c)];
      if (r < M && c < N) wrong += got != x[size_t(r * ld + c)];
      else wrongPad += got != 0;
    }
  check(wrong == 0, label + ": every element inside the tensor is copied", std::to_string(wrong) + " mismatches");
  check(wrongPad == 0, label + ": the ragged edge boxes read zeros outside the tensor",
        std::to_string(wrongPad) + " non-zero padding elements");
}

void testRefusedLayout(const Driver &d, Bundle &b, const std::string &cacheDir) {
  // Dense rows of 100 bf16 are 200 bytes apart: not a TMA stride.
  DeviceBuffer dx(d, 70 * 100 * 2), dy(d, 96 * 128 * 2);
  Arguments args;
  int64_t xShape[2] = {70, 100}, yShape[2] = {96, 128};
  (void)args.setTensor("x", dx.get(), DType::BF16, 2, xShape);
  (void)args.setTensor("y", dy.get(), DType::BF16, 2, yShape);
  args.setI32("swizzled", 0);
  checkError(b.launch("tma_copy", args),
             "argument 'x': stride 0 is 100 elements (200 bytes), not a multiple of 16 bytes, which the TMA load of "
             "kernel 'tma_copy' (tensor map 'xm') needs",
             "a row stride of 200 bytes is refused before the launch");

  // The same through the C ABI: a non-zero status and the message.
  flashc_bundle cb = nullptr;
  flashc_open_options options{};
  options.cache_dir = cacheDir.c_str();
  if (flashc_bundle_open_ex(kTma, &options, &cb) != FLASHC_OK) {
    check(false, "C ABI: open the tma bundle", flashc_last_error());
    return;
  }
  flashc_args ca = nullptr;
  flashc_args_create(&ca);
  flashc_args_set_tensor(ca, "x", dx.get(), FLASHC_BF16, 2, xShape, nullptr);
  flashc_args_set_tensor(ca, "y", dy.get(), FLASHC_BF16, 2, yShape, nullptr);
  flashc_args_set_i32(ca, "swizzled", 0);
  flashc_status s = flashc_launch(cb, "tma_copy", ca, nullptr);
  check(s == FLASHC_ERROR_INVALID_ARGUMENT && contains(flashc_last_error(), "not a multiple of 16 bytes"),
        "C ABI: FLASHC_ERROR_INVALID_ARGUMENT naming the stride", flashc_last_error());
  flashc_args_destroy(ca);
  flashc_bundle_close(cb);
}

} // namespace

int main() {
  const Driver *d = driverOrSkip();
  if (!d) return kSkipReturnCode;
  auto dev = currentDeviceInfo();
  if (!checkOk(dev, "current device")) return checkSummary();
  if (dev->major < 9) {
    std::printf("SKIPPED: TMA needs compute capability 9.0 or newer (device %s is %d.%d)\n", dev->name.c_str(), dev->major,
                dev->minor);
    return kSkipReturnCode;
  }
  BundleOptions o;
  o.cacheDir = (fs::temp_directory_path() / ("flashc-gpu-tma-" + std::to_string(getpid()))).string();
  auto b = Bundle::open(kTma, o);
  if (!checkOk(b, "open the tma bundle")) return checkSummary();
  for (int swizzled : {0, 1}) {
    copyBoxes(*d, **b, 64, 128, 128, swizzled); // whole boxes
    copyBoxes(*d, **b, 70, 100, 104, swizzled); // ragged in both dims, padded rows
    copyBoxes(*d, **b, 5, 8, 8, swizzled);      // smaller than one box
  }
  copyBoxes(*d, **b, 70, 100, 104, 0); // again: the cached tensor map
  testRefusedLayout(*d, **b, o.cacheDir);
  fs::remove_all(o.cacheDir);
  return checkSummary();
}
