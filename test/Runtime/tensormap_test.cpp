// Tensor maps on the CPU: what the binder derives from a bound tensor (the exact
// cuTensorMapEncodeTiled arguments, recorded by a fake encode function), what it
// refuses and how, the bounded cache, and programs whose tensor maps describe
// scratch the runtime allocates.
#include "Check.h"

#include "flashc/runtime/Binding.h"

#include <cstring>

using namespace flashc::rt;
using namespace flashc::test;

namespace {

const char *kManifest = R"(flashc-bundle 1
source kernels.cu
arch sm_90a

kernel attn
  entry attn_entry
  tensor q bf16 in [B, H, S, 64] contiguous
  tensor o bf16 out [B, H, S, 64]
  tensormap qm of q box [1, 1, 64, 64] swizzle 128
  tensormap om of o box [1, 1, 32, 64] swizzle 128
  scalar scale f32
  grid cdiv(S, 64), H, B
  block 128, 1, 1
end

kernel rows
  entry rows_entry
  tensor x f32 in [M, N]
  tensormap xm of x box [8, 4] swizzle none
  grid 1, 1, 1
  block 32, 1, 1
end

kernel produce
  entry produce_entry
  tensor a f32 in [M, N]
  tensor t f32 out [M, N]
  grid M, 1, 1
  block 32, 1, 1
end

kernel consume
  entry consume_entry
  tensor t f32 in [M, N]
  tensor y f32 out [M, N]
  tensormap tm of t box [2, 8] swizzle 32
  grid M, 1, 1
  block 32, 1, 1
end

program pipeline
  kernel produce
  kernel consume
  scratch t
end
)";

void *ptr(uintptr_t address) { return reinterpret_cast<void *>(address); }

// Records every encoding and writes a recognisable value.
struct FakeEncoder {
  std::vector<TensorMapEncoding> calls;
  bool fail = false;
  TensorMapEncodeFn fn() {
    return [this](const TensorMapEncoding &e, TensorMapValue &out) -> Status {
      calls.push_back(e);
      if (fail) return makeError(ErrorCode::CudaError, "cuTensorMapEncodeTiled failed: CUDA_ERROR_INVALID_VALUE");
      for (int i = 0; i < 16; ++i) out.opaque[i] = 0xA000 + calls.size() * 16 + i;
      return Status();
    };
  }
};

Arguments attnArgs(int64_t B, int64_t H, int64_t S, const int64_t *qStrides = nullptr, void *q = ptr(0x10000)) {
  Arguments a;
  int64_t shape[4] = {B, H, S, 64};
  (void)a.setTensor("q", q, DType::BF16, 4, shape, qStrides);
  (void)a.setTensor("o", ptr(0x800000), DType::BF16, 4, shape);
  a.setF32("scale", 0.125f);
  return a;
}

template <typename T, size_t N> std::vector<T> first(const std::array<T, N> &a, size_t n) {
  return std::vector<T>(a.begin(), a.begin() + n);
}

void testDerivation(const Manifest &m) {
  const KernelSpec &k = *m.findKernel("attn");
  auto plan = planKernelLaunch(k, attnArgs(2, 3, 100));
  if (!checkOk(plan, "attn with dense bhsd q and o")) return;
  check(plan->tensorMapPlans.size() == 2 && plan->tensorMapPlans[0].tensor == 0 && plan->tensorMapPlans[1].tensor == 1,
        "one planned tensor map per tensormap line, each pointing at its tensor");
  FakeEncoder fake;
  TensorMapCache cache(fake.fn());
  if (!checkOk(encodeTensorMaps(*plan, cache), "encode attn's tensor maps")) return;
  if (!check(fake.calls.size() == 2, "the driver is asked twice")) return;
  const TensorMapEncoding &e = fake.calls[0];
  check(e.dataType == tma::BFloat16 && e.dataType == 9, "data type: CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 (9)");
  check(e.rank == 4 && e.address == ptr(0x10000), "rank 4, the bound data pointer");
  check(first(e.dims, 4) == std::vector<uint64_t>{64, 100, 3, 2}, "dims innermost first: [64, 100, 3, 2]");
  check(first(e.strides, 3) == std::vector<uint64_t>{128, 12800, 38400},
        "byte strides without the innermost: [128, 12800, 38400]");
  check(first(e.box, 4) == std::vector<uint32_t>{64, 64, 1, 1}, "box innermost first: [64, 64, 1, 1]");
  check(first(e.elementStrides, 4) == std::vector<uint32_t>{1, 1, 1, 1}, "element strides all 1");
  check(e.swizzle == tma::Swizzle128B && e.swizzle == 3 && e.interleave == 0 && e.l2Promotion == 2 && e.oobFill == 0,
        "swizzle 128B (3), interleave none, L2 promotion 128B (2), OOB fill zeros (FLOAT_OOB_FILL_NONE)");
  check(first(fake.calls[1].box, 4) == std::vector<uint32_t>{64, 32, 1, 1} && fake.calls[1].address == ptr(0x800000),
        "second map: o's pointer, box [64, 32, 1, 1]");
  check(plan->tensorMaps.size() == 2 && plan->tensorMaps[0].opaque[0] == 0xA000 + 16 &&
            plan->tensorMaps[1].opaque[15] == 0xA000 + 32 + 15,
        "the encoded 128-byte values are stored in the launch, in tensormap order");
  check(plan->tensors.size() == 2 && plan->scalars.size() == 1, "tensors and scalars are packed as before");

  // bshd memory viewed as [B, H, S, D]: H's stride is D, S's is H * D.
  int64_t bshd[4] = {100 * 3 * 64, 64, 3 * 64, 1};
  auto p2 = planKernelLaunch(k, attnArgs(2, 3, 100, bshd));
  if (checkOk(p2, "attn with bshd strides") && checkOk(encodeTensorMaps(*p2, cache), "encode bshd")) {
    const TensorMapEncoding &b = fake.calls.back();
    check(first(b.strides, 3) == std::vector<uint64_t>{384, 128, 38400}, "bshd byte strides: S 384, H 128, B 38400");
  }

  // A dim of size 1 is read only at coordinate 0: its stride does not matter
  // and gets the extent of the dims inside it.
  const KernelSpec &rows = *m.findKernel("rows");
  Arguments r;
  int64_t shape[2] = {1, 4}, odd[2] = {3, 1};
  (void)r.setTensor("x", ptr(0x20000), DType::F32, 2, shape, odd);
  auto p3 = planKernelLaunch(rows, r);
  if (checkOk(p3, "a size-1 dim with an odd stride (never used)"))
    check(p3->tensorMapPlans.size() == 1 && p3->tensorMapPlans[0].encoding.strides[0] == 16,
          "its stride becomes the inner extent (16 bytes)");

  // Box larger than the tensor: fine, the TMA unit clips and zero-fills.
  int64_t small[2] = {3, 4};
  (void)r.setTensor("x", ptr(0x20000), DType::F32, 2, small);
  auto p4 = planKernelLaunch(rows, r);
  if (checkOk(p4, "box [8, 4] over a [3, 4] tensor")) {
    const TensorMapEncoding &s = p4->tensorMapPlans[0].encoding;
    check(first(s.dims, 2) == std::vector<uint64_t>{4, 3} && first(s.box, 2) == std::vector<uint32_t>{4, 8} &&
              s.dataType == tma::Float32 && s.swizzle == tma::SwizzleNone && s.strides[0] == 16,
          "f32 [3, 4]: dims [4, 3], box [4, 8], stride 16 bytes, no swizzle");
  }
}

void testRefusals(const Manifest &m) {
  const KernelSpec &k = *m.findKernel("attn");
  const std::string need = ", which the TMA load of kernel 'attn' (tensor map 'qm') needs";
  checkError(planKernelLaunch(k, attnArgs(2, 3, 100, nullptr, ptr(0x10008))),
             "argument 'q': data pointer 0x10008 is not aligned to 16 bytes" + need, "misaligned base address");
  int64_t padded[4] = {3 * 100 * 100, 100 * 100, 100, 1};
  checkError(planKernelLaunch(k, attnArgs(2, 3, 100, padded)),
             "argument 'q': stride 2 is 100 elements (200 bytes), not a multiple of 16 bytes" + need,
             "row stride of 200 bytes");
  int64_t aligned[4] = {3 * 100 * 104, 100 * 104, 104, 1};
  checkOk(planKernelLaunch(k, attnArgs(2, 3, 100, aligned)), "row stride of 208 bytes (padded rows) is fine");
  // q is `contiguous`, so the manifest's own check would speak first; o is not.
  int64_t inner[4] = {3 * 100 * 128, 100 * 128, 128, 2};
  int64_t shape[4] = {2, 3, 100, 64};
  Arguments a = attnArgs(2, 3, 100);
  (void)a.setTensor("o", ptr(0x800000), DType::BF16, 4, shape, inner);
  checkError(planKernelLaunch(k, a),
             "argument 'o': the last dim's stride is 2 elements; it must be 1 (contiguous), which the TMA load of "
             "kernel 'attn' (tensor map 'om') needs",
             "innermost stride 2");
  auto skipped = planKernelLaunch(k, attnArgs(2, 3, 0, nullptr, nullptr));
  if (checkOk(skipped, "S = 0: the grid is empty, nothing launches"))
    check(skipped->skip && skipped->tensorMapPlans.empty(), "a skipped launch plans no tensor maps");

  const KernelSpec &rows = *m.findKernel("rows");
  Arguments r;
  int64_t empty[2] = {0, 4};
  (void)r.setTensor("x", nullptr, DType::F32, 2, empty);
  // A tensor with no elements (Sk = 0 under a launched grid): no map is encoded, the parameter stays all zero.
  auto emptyPlan = planKernelLaunch(rows, r);
  if (checkOk(emptyPlan, "zero-size dim of a launched kernel")) {
    check(emptyPlan->tensorMapPlans.size() == 1 && emptyPlan->tensorMapPlans[0].encoding.empty,
          "an empty tensor's map is planned as empty");
    int encodes = 0;
    TensorMapCache counting([&](const TensorMapEncoding &, TensorMapValue &) {
      ++encodes;
      return Status();
    });
    KernelLaunch launch = *emptyPlan;
    if (checkOk(encodeTensorMaps(launch, counting), "encode with an empty tensor")) {
      bool zero = true;
      for (uint64_t word : launch.tensorMaps[0].opaque) zero = zero && word == 0;
      check(encodes == 0 && zero, "an empty tensor's map is all zero and never reaches the driver");
    }
  }
  int64_t s34[2] = {3, 4}, broadcast[2] = {0, 1};
  (void)r.setTensor("x", ptr(0x20000), DType::F32, 2, s34, broadcast);
  checkError(planKernelLaunch(rows, r), "argument 'x': stride 0 is 0 (a broadcast dim of size 3)", "broadcast dim");
  int64_t huge[2] = {int64_t(1) << 38, 1};
  (void)r.setTensor("x", ptr(0x20000), DType::F32, 2, s34, huge);
  checkError(planKernelLaunch(rows, r), "argument 'x': stride 0 is 274877906944 elements, 2^40 bytes or more",
             "stride of 2^40 bytes");
  int64_t wide[2] = {1, (int64_t(1) << 32) + 1};
  (void)r.setTensor("x", ptr(0x20000), DType::F32, 2, wide);
  // (Refused when the argument is bound, before its tensor map: every kernel indexes in 32 bits; the tensor map's own
  // 2^32 limit stays for the runtime's scratch tensors.)
  checkError(planKernelLaunch(rows, r), "argument 'x': dim 1 is 4294967297, above 2147483647", "dim above 2^32");

  Arguments extra = attnArgs(2, 3, 100);
  (void)extra.setTensor("qm", ptr(0x10000), DType::BF16, 4, shape);
  checkError(planKernelLaunch(k, extra),
             "argument 'qm' is a tensor map that the runtime derives from tensor 'q' of kernel 'attn'; do not pass it",
             "passing a tensor map as an argument");

  auto plan = planKernelLaunch(k, attnArgs(2, 3, 100));
  FakeEncoder fake;
  fake.fail = true;
  TensorMapCache cache(fake.fn());
  if (plan) {
    Status s = encodeTensorMaps(*plan, cache);
    checkError(s, "kernel 'attn': tensor map 'qm' of tensor 'q': cuTensorMapEncodeTiled failed: CUDA_ERROR_INVALID_VALUE",
               "a driver failure names the kernel, tensor map and tensor");
    check(s.code() == ErrorCode::CudaError && cache.size() == 0, "keeps the driver's code; failures are not cached");
  }
}

void testCache(const Manifest &m) {
  const KernelSpec &k = *m.findKernel("rows");
  FakeEncoder fake;
  TensorMapCache cache(fake.fn(), 2);
  auto encodeFor = [&](uintptr_t address, int64_t rowsCount) {
    Arguments a;
    int64_t shape[2] = {rowsCount, 4};
    (void)a.setTensor("x", ptr(address), DType::F32, 2, shape);
    auto plan = planKernelLaunch(k, a);
    if (!plan) return plan.message();
    Status s = encodeTensorMaps(*plan, cache);
    return s ? std::to_string(plan->tensorMaps[0].opaque[0]) : s.message();
  };
  std::string v1 = encodeFor(0x10000, 8);
  check(encodeFor(0x10000, 8) == v1 && cache.encodeCalls() == 1, "the same pointer and shape: encoded once");
  encodeFor(0x10000, 9);
  encodeFor(0x20000, 8);
  check(cache.encodeCalls() == 3 && cache.size() == 2, "other shape / pointer: encoded; capacity 2 holds");
  encodeFor(0x20000, 8);
  check(cache.encodeCalls() == 3, "a cached entry is reused");
  encodeFor(0x10000, 8);
  check(cache.encodeCalls() == 4 && cache.size() == 2, "the least recently used entry was evicted and is re-encoded");
}

void testProgram(const Manifest &m) {
  const ProgramSpec &p = *m.findProgram("pipeline");
  Arguments a;
  int64_t shape[2] = {5, 16};
  (void)a.setTensor("a", ptr(0x10000), DType::F32, 2, shape);
  (void)a.setTensor("y", ptr(0x20000), DType::F32, 2, shape);
  auto plan = planProgramLaunch(m, p, a);
  if (!checkOk(plan, "program whose second kernel maps a scratch tensor")) return;
  check(plan->kernels[0].tensorMapPlans.empty() && plan->kernels[1].tensorMapPlans.size() == 1,
        "only the consuming kernel has a tensor map");
  plan->setScratchPointer("t", ptr(0x40000));
  FakeEncoder fake;
  TensorMapCache cache(fake.fn());
  for (auto &kl : plan->kernels) checkOk(encodeTensorMaps(kl, cache), "encode " + kl.kernel->name);
  if (check(fake.calls.size() == 1, "one encoding")) {
    const TensorMapEncoding &e = fake.calls[0];
    check(e.address == ptr(0x40000) && first(e.dims, 2) == std::vector<uint64_t>{16, 5} && e.strides[0] == 64 &&
              first(e.box, 2) == std::vector<uint32_t>{8, 2} && e.swizzle == tma::Swizzle32B,
          "scratch t: the runtime's pointer, dims [16, 5], stride 64 bytes, box [8, 2], swizzle 32B");
  }
  plan->setScratchPointer("t", ptr(0x40008));
  checkError(encodeTensorMaps(plan->kernels[1], cache),
             "kernel 'consume': tensor map 'tm' of tensor 't': data pointer 0x40008 is not aligned to 16 bytes",
             "the address is checked again when encoding (scratch is allocated after planning)");
  (void)a.setTensor("tm", ptr(0x10000), DType::F32, 2, shape);
  checkError(planProgramLaunch(m, p, a), "argument 'tm' is a tensor map that the runtime derives from tensor 't' of program 'pipeline'",
             "passing a program's tensor map");
}

} // namespace

int main() {
  auto m = parseManifest(kManifest);
  if (!checkOk(m, "the test manifest parses")) return checkSummary();
  testDerivation(*m);
  testRefusals(*m);
  testCache(*m);
  testProgram(*m);
  return checkSummary();
}
