// Run-time loading of libcuda.so.1.
#include "Driver.h"

#include <cstdlib>
#include <dlfcn.h>
#include <mutex>

namespace flashc::rt {

Result<const Driver *> Driver::get() {
  static Driver driver;
  static std::optional<Error> failure;
  static std::once_flag once;
  std::call_once(once, [] {
    // FLASHC_DRIVER_LIBRARY lets tests point at a missing library to exercise
    // the no-driver path on a machine that has one.
    const char *name = std::getenv("FLASHC_DRIVER_LIBRARY");
    void *handle = dlopen(name && *name ? name : "libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
      failure = makeError(ErrorCode::NoDriver, "no CUDA driver (libcuda.so.1 not found)");
      return;
    }
    using GetProc = CUresult (*)(const char *, void **, int, cuuint64_t, CUdriverProcAddressQueryResult *);
    auto getProc = reinterpret_cast<GetProc>(dlsym(handle, "cuGetProcAddress_v2"));
    auto driverVersion = reinterpret_cast<decltype(&::cuDriverGetVersion)>(dlsym(handle, "cuDriverGetVersion"));
    int version = 0;
    if (!getProc || !driverVersion || driverVersion(&version) != CUDA_SUCCESS || version < 12000) {
      failure = makeError(ErrorCode::NoDriver, "CUDA driver too old (need CUDA 12.0 or newer; found " +
                                                   std::to_string(version) + ")");
      return;
    }
    // Ask for each entry point as of CUDA 12.0: the prototypes in cuda.h that
    // Driver's members are declared with. Asking for the driver's own version
    // would hand out newer ABIs (CUDA 13 changed cuCtxGetDevice and
    // cuCtxSynchronize to take a context) behind the old prototypes.
    const int abiVersion = 12000;
    std::string missing;
#define FLASHC_LOAD(name)                                                                          \
  {                                                                                                \
    void *fn = nullptr;                                                                            \
    CUdriverProcAddressQueryResult q;                                                              \
    if (getProc(#name, &fn, abiVersion, CU_GET_PROC_ADDRESS_DEFAULT, &q) != CUDA_SUCCESS || !fn)      \
      missing += " " #name;                                                                        \
    driver.name = reinterpret_cast<decltype(driver.name)>(fn);                                     \
  }
    FLASHC_DRIVER_FUNCTIONS(FLASHC_LOAD)
#undef FLASHC_LOAD
    if (!missing.empty()) {
      failure = makeError(ErrorCode::NoDriver, "CUDA driver lacks:" + missing);
      return;
    }
    CUresult rc = driver.cuInit(0);
    int count = 0;
    if (rc == CUDA_SUCCESS) rc = driver.cuDeviceGetCount(&count);
    if (rc == CUDA_ERROR_NO_DEVICE || (rc == CUDA_SUCCESS && count == 0)) {
      failure = makeError(ErrorCode::NoDevice, "no CUDA device");
      return;
    }
    if (rc != CUDA_SUCCESS) {
      failure = driver.error("cuInit", rc);
      failure->code = ErrorCode::NoDevice;
      failure->message = "no CUDA device (" + failure->message + ")";
    }
  });
  if (failure) return *failure;
  return static_cast<const Driver *>(&driver);
}

Error Driver::error(const char *what, CUresult rc) const {
  const char *name = nullptr, *text = nullptr;
  if (cuGetErrorName) cuGetErrorName(rc, &name);
  if (cuGetErrorString) cuGetErrorString(rc, &text);
  return makeError(ErrorCode::CudaError, std::string(what) + " failed: " + (name ? name : std::to_string(int(rc))) +
                                             (text ? std::string(" (") + text + ")" : std::string()));
}

Result<CUdevice> currentDevice(const Driver &d) {
  CUcontext ctx = nullptr;
  if (CUresult rc = d.cuCtxGetCurrent(&ctx); rc != CUDA_SUCCESS) return d.error("cuCtxGetCurrent", rc);
  if (!ctx) {
    CUdevice dev = 0;
    if (CUresult rc = d.cuDeviceGet(&dev, 0); rc != CUDA_SUCCESS) return d.error("cuDeviceGet", rc);
    if (CUresult rc = d.cuDevicePrimaryCtxRetain(&ctx, dev); rc != CUDA_SUCCESS)
      return d.error("cuDevicePrimaryCtxRetain", rc);
    if (CUresult rc = d.cuCtxSetCurrent(ctx); rc != CUDA_SUCCESS) return d.error("cuCtxSetCurrent", rc);
  }
  CUdevice dev = 0;
  if (CUresult rc = d.cuCtxGetDevice(&dev); rc != CUDA_SUCCESS) return d.error("cuCtxGetDevice", rc);
  return dev;
}

Result<ContextIdentity> currentContext(const Driver &d) {
  if (auto device = currentDevice(d); !device) return device.error();
  ContextIdentity c;
  if (CUresult rc = d.cuCtxGetCurrent(&c.handle); rc != CUDA_SUCCESS) return d.error("cuCtxGetCurrent", rc);
  if (CUresult rc = d.cuCtxGetId(c.handle, &c.id); rc != CUDA_SUCCESS) return d.error("cuCtxGetId", rc);
  return c;
}

bool contextAlive(const Driver &d, const ContextIdentity &c) {
  if (!c.handle) return false;
  unsigned long long id = 0;
  CUresult rc = d.cuCtxGetId(c.handle, &id);
  // Dead: the driver says so, or the handle names another context now (a reset primary context, a reused address).
  // Any other error (cuCtxGetId also returns an earlier launch's sticky fault) leaves it alive, so that the call
  // the caller makes next reports that error instead of the context's state being dropped unread.
  if (rc == CUDA_ERROR_CONTEXT_IS_DESTROYED || rc == CUDA_ERROR_INVALID_CONTEXT) return false;
  return rc != CUDA_SUCCESS || id == c.id;
}

} // namespace flashc::rt
