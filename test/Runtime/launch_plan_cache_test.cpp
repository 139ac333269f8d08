// Launch plans kept by signature (LaunchPlanCache), on the CPU: a repeated
// launch with new pointers reuses the plan with those pointers in it; a change
// of anything planning reads (shape, stride, dtype, scalar, alignment as far as
// a check can tell) plans again; failures are never kept.
#include "BasicManifest.h"
#include "Check.h"

#include "flashc/runtime/LaunchPlanCache.h"

#include <cstdint>
#include <fstream>
#include <sstream>

using namespace flashc::rt;
using namespace flashc::test;

namespace {


void *at(uintptr_t address) { return reinterpret_cast<void *>(address); }

// row_scale's arguments (x and y bf16 [M, N] rows ld apart, align=4; s f32 [M]) at base + offsets.
Arguments rowScale(int64_t M, int64_t N, int64_t ld, uintptr_t base, float alpha = 0.5f) {
  Arguments a;
  int64_t shape[2] = {M, N}, strides[2] = {ld, 1}, rows[1] = {M};
  (void)a.setTensor("x", at(base + 0x100000), DType::BF16, 2, shape, strides);
  (void)a.setTensor("s", at(base + 0x200000), DType::F32, 1, rows);
  (void)a.setTensor("y", at(base + 0x300000), DType::BF16, 2, shape, strides);
  a.setF32("alpha", alpha);
  return a;
}

void testKernelPlans(const Manifest &m) {
  const KernelSpec &k = *m.findKernel("row_scale");
  LaunchPlanCache cache(alignmentLog2Of(m));
  int planned = 0;
  auto plan = [&](const Arguments &args) {
    return cache.kernel("row_scale", args, [&] {
      ++planned;
      return planKernelLaunch(k, args);
    });
  };
  auto first = plan(rowScale(3, 300, 320, 0));
  if (!checkOk(first, "row_scale planned")) return;
  auto again = plan(rowScale(3, 300, 320, 0x7000000));
  if (!checkOk(again, "row_scale with new pointers")) return;
  check(planned == 1 && cache.plansMade() == 1, "the same signature with new pointers is not planned again");
  check(again->tensors[0].data == at(0x7100000) && again->tensors[1].data == at(0x7200000) &&
            again->tensors[2].data == at(0x7300000),
        "the kept plan carries the new pointers");
  check(again->grid == first->grid && again->tensors[0].stride[0] == 320, "and the planned grid and strides");
  check(first->tensors[0].data == at(0x100000), "the first plan keeps its own pointers");

  check(plan(rowScale(4, 300, 320, 0)).ok() && planned == 2, "another shape is planned");
  check(plan(rowScale(3, 300, 384, 0)).ok() && planned == 3, "another row stride is planned");
  check(plan(rowScale(3, 300, 320, 0, 0.25f)).ok() && planned == 4, "another scalar value is planned");
  check(plan(rowScale(3, 300, 320, 0x8000000)).ok() && planned == 4,
        "pointers aligned as far as the bundle checks (4 bytes) share the plan");

  // A misaligned pointer is checked, and refused, every time: its signature differs.
  auto bad = plan(rowScale(3, 300, 320, 2));
  checkError(bad.status(), "argument 'x': data pointer", "a pointer misaligned for align=4 is refused");
  auto badAgain = plan(rowScale(3, 300, 320, 2));
  check(!badAgain.ok() && planned == 6, "a refused launch is not kept: planned (and refused) again");
  check(plan(rowScale(3, 300, 320, 0x9000000)).ok() && planned == 6, "the good signature is still kept");

  // A null pointer for a non-empty tensor is a signature of its own.
  Arguments nullX = rowScale(3, 300, 320, 0);
  int64_t shape[2] = {3, 300}, strides[2] = {320, 1};
  (void)nullX.setTensor("x", nullptr, DType::BF16, 2, shape, strides);
  checkError(plan(nullX).status(), "null data pointer", "a null pointer is refused, not taken from a kept plan");
  check(cache.size() == 4, "four signatures kept (shapes, stride, scalar; none refused)", std::to_string(cache.size()));
}

void testProgramPlans(const Manifest &m) {
  const ProgramSpec &p = *m.findProgram("scale_then_add");
  LaunchPlanCache cache(alignmentLog2Of(m), 2);
  auto args = [](int64_t n, uintptr_t base) {
    Arguments a;
    int64_t shape[1] = {n};
    (void)a.setTensor("x", at(base + 0x100000), DType::F32, 1, shape);
    (void)a.setTensor("b", at(base + 0x200000), DType::F32, 1, shape);
    (void)a.setTensor("out", at(base + 0x300000), DType::F32, 1, shape);
    a.setF32("alpha", 2);
    return a;
  };
  auto plan = [&](const Arguments &a) { return cache.program("scale_then_add", a, [&] { return planProgramLaunch(m, p, a); }); };
  auto first = plan(args(1000, 0));
  if (!checkOk(first, "scale_then_add planned")) return;
  first->setScratchPointer("tmp", at(0x900000));
  auto again = plan(args(1000, 0x5000000));
  if (!checkOk(again, "scale_then_add with new pointers")) return;
  check(cache.plansMade() == 1, "a program's repeated launch is not planned again");
  check(again->kernels[0].tensors[0].data == at(0x5100000) && again->kernels[1].tensors[1].data == at(0x5200000) &&
            again->kernels[1].tensors[2].data == at(0x5300000),
        "every kernel of the kept plan carries the new user pointers");
  check(again->kernels[0].tensors[1].data == nullptr && again->kernels[1].tensors[0].data == nullptr &&
            again->scratch.size() == 1 && again->scratch[0].bytes == 4000,
        "scratch is left to the launch (null), its size kept");
  // Capacity 2: a third signature starts the cache over.
  const bool planned = plan(args(1001, 0)).ok() && plan(args(1002, 0)).ok();
  check(planned && cache.size() == 1 && cache.plansMade() == 3, "a full cache starts over",
        std::to_string(cache.size()));
  checkError(plan(args(-1, 0)).status(), "negative", "a bad program launch is refused");
}

void testAlignment() {
  auto tma = parseManifest("flashc-bundle 1\narch sm_90a\n"
                           "kernel k\n entry e\n tensor x bf16 in [M, 64] align=8 contiguous\n"
                           " tensormap x_map of x box [64, 64] swizzle 128\n grid 1, 1, 1\n block 128, 1, 1\nend\n");
  if (checkOk(tma, "a manifest with a tensor map"))
    check(alignmentLog2Of(*tma) == 4, "tensor maps: the TMA unit's 16 bytes");
  auto wide = parseManifest("flashc-bundle 1\narch sm_90a\n"
                            "kernel k\n entry e\n tensor x f32 in [N] align=256\n grid 1, 1, 1\n block 128, 1, 1\nend\n");
  if (checkOk(wide, "a manifest asking for 256-byte alignment"))
    check(alignmentLog2Of(*wide) == 8, "align=256: 2^8");
}

} // namespace

int main() {
  Manifest m = loadBasicManifest();
  testKernelPlans(m);
  testProgramPlans(m);
  testAlignment();
  return checkSummary();
}
