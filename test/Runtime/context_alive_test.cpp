// contextAlive's verdict from cuCtxGetId's answer, on the CPU: a Driver whose cuCtxGetId is a stand-in that returns
// what each case sets. Dead only where the driver says destroyed / invalid or names another context; an earlier
// launch's sticky fault must leave the context alive (else its deferred checks would be dropped unread).
#include "Check.h"
#include "Driver.h"

using namespace flashc::rt;
using namespace flashc::test;

namespace {
CUresult gResult = CUDA_SUCCESS;
unsigned long long gId = 0;
CUresult fakeCtxGetId(CUcontext, unsigned long long *id) {
  *id = gId;
  return gResult;
}
}  // namespace

int main() {
  Driver d;
  d.cuCtxGetId = fakeCtxGetId;
  ContextIdentity c{reinterpret_cast<CUcontext>(0x1000), 7};
  auto alive = [&](CUresult rc, unsigned long long id) {
    gResult = rc;
    gId = id;
    return contextAlive(d, c);
  };
  check(alive(CUDA_SUCCESS, 7), "the same ID: alive");
  check(!alive(CUDA_SUCCESS, 8), "another ID (a reset primary context, a reused handle): dead");
  check(!alive(CUDA_ERROR_CONTEXT_IS_DESTROYED, 0), "CONTEXT_IS_DESTROYED: dead");
  check(!alive(CUDA_ERROR_INVALID_CONTEXT, 0), "INVALID_CONTEXT: dead");
  check(alive(CUDA_ERROR_ILLEGAL_ADDRESS, 0), "an earlier launch's sticky fault: alive (the next call reports it)");
  check(alive(CUDA_ERROR_LAUNCH_FAILED, 0), "another error: alive");
  ContextIdentity none;
  check(!contextAlive(d, none), "no handle: dead");
  return checkSummary();
}
