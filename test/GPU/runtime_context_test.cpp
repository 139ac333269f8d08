// A bundle across contexts: its code is loaded per context, and a context that is destroyed and replaced (the
// primary context reset, a created context destroyed and another created, which may get the same handle) gets its
// code loaded again instead of the dead context's modules, and its scratch from a pool of its own.
#include "runtime_gpu_util.h"

#include <cstdlib>
#include <dlfcn.h>
#include <string>

using namespace flashc::rt;
using namespace flashc::test;

namespace {

const char *kBasic = FLASHC_TEST_BUNDLES_DIR "/basic";

// Driver entry points the runtime does not use, taken from libcuda by their versioned names.
struct ContextControl {
  CUresult (*primaryReset)(CUdevice) = nullptr;
  CUresult (*create)(CUcontext *, unsigned int, CUdevice) = nullptr;
  CUresult (*destroy)(CUcontext) = nullptr;
  bool load() {
    void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) return false;
    primaryReset = reinterpret_cast<decltype(primaryReset)>(dlsym(lib, "cuDevicePrimaryCtxReset_v2"));
    create = reinterpret_cast<decltype(create)>(dlsym(lib, "cuCtxCreate_v2"));
    destroy = reinterpret_cast<decltype(destroy)>(dlsym(lib, "cuCtxDestroy_v2"));
    return primaryReset && create && destroy;
  }
};

// vector_add on fresh buffers of the current context: the launch's status and the result.
void launchAndCheck(const Driver &d, Bundle &b, const std::string &label) {
  const int64_t n = 700;
  auto a = randomValues(n, 21), bb = randomValues(n, 22);
  DeviceBuffer da(d, n * 4), db(d, n * 4), dc(d, n * 4);
  da.upload(a);
  db.upload(bb);
  Arguments args;
  int64_t shape[1] = {n};
  (void)args.setTensor("a", da.get(), DType::F32, 1, shape);
  (void)args.setTensor("b", db.get(), DType::F32, 1, shape);
  (void)args.setTensor("c", dc.get(), DType::F32, 1, shape);
  if (!checkOk(b.launch("vector_add", args), label + ": launch")) return;
  auto c = dc.download<float>(n);
  int bad = 0;
  for (int64_t i = 0; i < n; ++i) bad += c[i] != a[i] + bb[i];
  check(bad == 0, label + ": the result matches the CPU", std::to_string(bad) + " mismatches");
  // A program with zero-filled scratch, from the context's own pool (FLASHC_SCRATCH_POOL=keep, set in main).
  Arguments p;
  (void)p.setTensor("x", da.get(), DType::F32, 1, shape);
  (void)p.setTensor("b", db.get(), DType::F32, 1, shape);
  (void)p.setTensor("out", dc.get(), DType::F32, 1, shape);
  p.setF32("alpha", 3.0f);
  if (!checkOk(b.launch("scale_then_add", p), label + ": launch a program (scratch from the pool)")) return;
  c = dc.download<float>(n);
  bad = 0;
  for (int64_t i = 0; i < n; ++i) bad += std::fabs(double(c[i]) - (3.0 * a[i] + bb[i])) > 1e-6;
  check(bad == 0, label + ": the program's result matches the CPU", std::to_string(bad) + " mismatches");
}

unsigned long long contextId(const Driver &d) {
  auto c = currentContext(d);
  return c ? c->id : 0;
}

} // namespace

int main() {
  setenv("FLASHC_SCRATCH_POOL", "keep", 1);  // the pool kept per context: a reset context must not reuse the old one
  const Driver *d = driverOrSkip();
  if (!d) return kSkipReturnCode;
  ContextControl ctl;
  if (!check(ctl.load(), "libcuda has cuDevicePrimaryCtxReset_v2, cuCtxCreate_v2 and cuCtxDestroy_v2")) return checkSummary();
  auto b = Bundle::open(kBasic);
  if (!checkOk(b, "open the basic bundle")) return checkSummary();
  auto device = currentDevice(*d);
  if (!checkOk(device, "the current device")) return checkSummary();

  launchAndCheck(*d, **b, "the primary context");
  const unsigned long long first = contextId(*d);

  // The primary context reset: every module and allocation of it is gone.
  check(ctl.primaryReset(*device) == CUDA_SUCCESS, "reset the primary context");
  CUcontext primary = nullptr;
  check(d->cuDevicePrimaryCtxRetain(&primary, *device) == CUDA_SUCCESS && d->cuCtxSetCurrent(primary) == CUDA_SUCCESS,
        "retain it again and make it current");
  const unsigned long long second = contextId(*d);
  std::printf("context IDs: %llu before the reset, %llu after\n", first, second);
  check(second != 0 && second != first, "the reset primary context has a new ID");
  launchAndCheck(*d, **b, "the primary context after its reset");

  // Created contexts, one destroyed before the next is made (the driver may give the second the first's handle).
  CUcontext one = nullptr, two = nullptr;
  if (check(ctl.create(&one, 0, *device) == CUDA_SUCCESS, "create a context")) {
    launchAndCheck(*d, **b, "a created context");
    const unsigned long long oneId = contextId(*d);
    check(ctl.destroy(one) == CUDA_SUCCESS, "destroy it");
    if (check(ctl.create(&two, 0, *device) == CUDA_SUCCESS, "create another")) {
      std::printf("created contexts: %p (ID %llu), then %p (ID %llu)\n", static_cast<void *>(one), oneId,
                  static_cast<void *>(two), contextId(*d));
      launchAndCheck(*d, **b, "a context created after another was destroyed");
      launchAndCheck(*d, **b, "the same context again (its modules cached)");
      ctl.destroy(two);
    }
  }
  d->cuCtxSetCurrent(primary);
  launchAndCheck(*d, **b, "the primary context again");
  return checkSummary();
}
