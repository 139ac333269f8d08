// Argument validation and ABI packing, on the CPU (no driver involved): every
// bad argument gets its own message naming the argument.
#include <map>
#include "BasicManifest.h"
#include "Check.h"

#include "flashc/runtime/Binding.h"

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <functional>
#include <sstream>

using namespace flashc::rt;
using namespace flashc::test;

namespace {


void *fakePointer(uintptr_t address) { return reinterpret_cast<void *>(address); }

// Valid arguments for row_scale with M rows of N columns (row stride ld).
Arguments rowScaleArgs(int64_t M, int64_t N, int64_t ld) {
  Arguments a;
  int64_t shape[2] = {M, N}, strides[2] = {ld, 1}, sShape[1] = {M};
  (void)a.setTensor("x", fakePointer(0x100000), DType::BF16, 2, shape, strides);
  (void)a.setTensor("s", fakePointer(0x200000), DType::F32, 1, sShape);
  (void)a.setTensor("y", fakePointer(0x300000), DType::BF16, 2, shape, strides);
  a.setF32("alpha", 0.5f);
  return a;
}

void testValidKernel(const Manifest &m) {
  const KernelSpec &k = *m.findKernel("row_scale");
  auto plan = planKernelLaunch(k, rowScaleArgs(3, 300, 320));
  if (!checkOk(plan, "row_scale with valid strided arguments")) return;
  check(plan->grid == std::array<uint32_t, 3>{3, 3, 1} && plan->block == std::array<uint32_t, 3>{128, 1, 1},
        "grid = (cdiv(300, 128), 3, 1), block = (128, 1, 1)");
  const PackedTensorArg &x = plan->tensors[0];
  check(x.data == fakePointer(0x100000) && x.shape[0] == 3 && x.shape[1] == 300 && x.shape[2] == 1 && x.shape[3] == 1 &&
            x.stride[0] == 320 && x.stride[1] == 1 && x.stride[2] == 0 && x.stride[3] == 0,
        "packed x: shape [3, 300, 1, 1], stride [320, 1, 0, 0]");
  const PackedTensorArg &s = plan->tensors[1];
  check(s.shape[0] == 3 && s.stride[0] == 1 && s.shape[1] == 1 && s.stride[1] == 0, "packed s: default dense stride");
  float alpha;
  std::memcpy(&alpha, &plan->scalars[0], sizeof alpha);
  check(plan->scalars.size() == 1 && alpha == 0.5f, "scalar alpha packed as f32 at the start of its slot");
  check(!plan->skip && plan->sharedBytes == 0, "not skipped, no dynamic shared memory");
  check(offsetof(PackedTensorArg, shape) == 8 && offsetof(PackedTensorArg, stride) == 40, "TensorArg field offsets 0/8/40");
}

void testBadArguments(const Manifest &m) {
  const KernelSpec &k = *m.findKernel("row_scale");
  struct Case {
    std::string what;
    std::function<void(Arguments &)> edit;
    std::string expected;
  };
  int64_t shape3[3] = {3, 64, 1};
  std::vector<Case> cases = {
      {"missing tensor", [](Arguments &a) { a.remove("y"); }, "missing argument 'y' (tensor bf16 [M, N]) of kernel 'row_scale'"},
      {"missing scalar", [](Arguments &a) { a.remove("alpha"); }, "missing argument 'alpha' (scalar f32) of kernel 'row_scale'"},
      {"unknown argument", [](Arguments &a) { a.setF32("beta", 1); }, "unknown argument 'beta': kernel 'row_scale' has no such parameter"},
      {"null pointer",
       [](Arguments &a) { int64_t sh[2] = {3, 64}; (void)a.setTensor("x", nullptr, DType::BF16, 2, sh); },
       "argument 'x': null data pointer for a tensor of shape [3, 64]"},
      {"wrong dtype",
       [](Arguments &a) { int64_t sh[2] = {3, 64}; (void)a.setTensor("x", fakePointer(0x100000), DType::F16, 2, sh); },
       "argument 'x': dtype is f16, the kernel expects bf16"},
      {"wrong rank",
       [&](Arguments &a) { (void)a.setTensor("x", fakePointer(0x100000), DType::BF16, 3, shape3); },
       "argument 'x': rank is 3 (shape [3, 64, 1]), the kernel expects 2 (tensor bf16 [M, N])"},
      {"symbol disagreement",
       [](Arguments &a) { int64_t sh[2] = {3, 66}; (void)a.setTensor("y", fakePointer(0x300000), DType::BF16, 2, sh); },
       "argument 'y' dim 1 (N) is 66 but argument 'x' dim 1 bound N to 64"},
      {"negative dim",
       [](Arguments &a) { int64_t sh[1] = {-3}; (void)a.setTensor("s", fakePointer(0x200000), DType::F32, 1, sh); },
       "argument 's': dim 0 is negative (-3)"},
      {"dim past 32-bit indices",
       [](Arguments &a) { int64_t sh[2] = {int64_t(1) << 31, 64}; (void)a.setTensor("x", fakePointer(0x100000), DType::BF16, 2, sh); },
       "argument 'x': dim 0 is 2147483648, above 2147483647, the largest size the kernels' 32-bit indices can address"},
      {"negative stride",
       [](Arguments &a) { int64_t sh[2] = {3, 64}, st[2] = {-64, 1}; (void)a.setTensor("x", fakePointer(0x100000), DType::BF16, 2, sh, st); },
       "argument 'x': stride 0 is negative (-64)"},
      {"non-contiguous last dim",
       [](Arguments &a) { int64_t sh[2] = {3, 64}, st[2] = {128, 2}; (void)a.setTensor("x", fakePointer(0x100000), DType::BF16, 2, sh, st); },
       "argument 'x': the last dim must be contiguous (stride 1) but its stride is 2"},
      {"misaligned pointer",
       [](Arguments &a) { int64_t sh[2] = {3, 64}; (void)a.setTensor("y", fakePointer(0x300002), DType::BF16, 2, sh); },
       "argument 'y': data pointer 0x300002 is not aligned to 4 bytes"},
      {"stride not a multiple",
       [](Arguments &a) { int64_t sh[2] = {3, 64}, st[2] = {65, 1}; (void)a.setTensor("x", fakePointer(0x100000), DType::BF16, 2, sh, st); },
       "argument 'x': stride 0 is 65, the kernel needs a multiple of 2 elements (4-byte aligned rows); pad the rows, "
       "not the width: store them 66 elements apart (e.g. allocate the last dim as 66 and pass a view of its first 64 "
       "columns)"},
      {"scalar type", [](Arguments &a) { a.setI32("alpha", 1); }, "argument 'alpha': scalar type is i32, the kernel expects f32"},
      {"tensor for a scalar",
       [](Arguments &a) { int64_t sh[1] = {1}; (void)a.setTensor("alpha", fakePointer(0x400000), DType::F32, 1, sh); },
       "argument 'alpha' must be a scalar f32, not a tensor"},
      {"scalar for a tensor", [](Arguments &a) { a.setF32("s", 1.0f); }, "argument 's' must be a tensor f32 [M], not a scalar"},
      {"requires fails", [](Arguments &a) { a = rowScaleArgs(3, 63, 64); },
       "kernel 'row_scale': requirement 'N % 2 == 0' does not hold (N=63)"},
      {"grid over the device limit", [](Arguments &a) { a = rowScaleArgs(70000, 64, 64); },
       "kernel 'row_scale': grid y = 70000 exceeds the device limit 65535 (M=70000)"},
  };
  for (auto &c : cases) {
    Arguments a = rowScaleArgs(3, 64, 64);
    c.edit(a);
    checkError(planKernelLaunch(k, a), c.expected, "bad argument: " + c.what);
  }
  Arguments a;
  int64_t sh[5] = {1, 1, 1, 1, 1};
  checkError(a.setTensor("x", fakePointer(0x100000), DType::F32, 5, sh), "argument 'x': rank 5 is outside 0..4",
             "setTensor rejects rank 5");
  checkError(a.setTensor("x", fakePointer(0x100000), DType::F32, 2, nullptr), "argument 'x': null shape array",
             "setTensor rejects a null shape");
  int64_t huge[3] = {int64_t(1) << 31, int64_t(1) << 31, int64_t(1) << 31};
  checkError(a.setTensor("x", fakePointer(0x100000), DType::F32, 3, huge),
             "argument 'x': shape [2147483648, 2147483648, 2147483648] spans more elements than 64-bit byte offsets",
             "setTensor rejects a shape whose element count overflows (strides used to wrap)");
  int64_t small[2] = {4, 4}, wild[2] = {INT64_MAX / 2, 1};
  checkError(a.setTensor("x", fakePointer(0x100000), DType::F32, 2, small, wild),
             "argument 'x': shape [4, 4] with its strides spans more elements", "setTensor rejects an overflowing stride");
  int64_t empty[2] = {0, int64_t(1) << 62};
  check(a.setTensor("x", fakePointer(0x100000), DType::F32, 2, empty).ok(), "an empty tensor of any other size is fine");
}

void testZeroSize(const Manifest &m) {
  const KernelSpec &k = *m.findKernel("row_scale");
  Arguments a;
  int64_t shape[2] = {0, 64}, sShape[1] = {0};
  (void)a.setTensor("x", nullptr, DType::BF16, 2, shape);
  (void)a.setTensor("s", nullptr, DType::F32, 1, sShape);
  (void)a.setTensor("y", nullptr, DType::BF16, 2, shape);
  a.setF32("alpha", 1);
  auto plan = planKernelLaunch(k, a);
  check(plan.ok() && plan->skip, "zero rows (null pointers allowed for empty tensors): valid, launch skipped",
        plan.ok() ? "" : plan.message());
  const KernelSpec &rr = *m.findKernel("row_reverse");
  Arguments b;
  int64_t empty[2] = {4, 0};
  (void)b.setTensor("x", nullptr, DType::F32, 2, empty);
  (void)b.setTensor("y", nullptr, DType::F32, 2, empty);
  checkError(planKernelLaunch(rr, b), "kernel 'row_reverse': requirement 'N >= 1' does not hold (N=0)",
             "an empty row where the kernel requires N >= 1 is an error, not a silent skip");
}

void testLimits(const Manifest &m) {
  const KernelSpec &rr = *m.findKernel("row_reverse");
  Arguments a;
  int64_t shape[2] = {2, 20000};
  (void)a.setTensor("x", fakePointer(0x100000), DType::F32, 2, shape);
  (void)a.setTensor("y", fakePointer(0x200000), DType::F32, 2, shape);
  checkError(planKernelLaunch(rr, a),
             "kernel 'row_reverse' needs 80000 bytes of dynamic shared memory; the device allows at most 49152 per block",
             "dynamic shared memory above the device limit");
  DeviceLimits hopper;
  hopper.maxDynamicSharedBytes = 232448;
  auto plan = planKernelLaunch(rr, a, hopper);
  check(plan.ok() && plan->sharedBytes == 80000, "80000 bytes fit a 227 KiB opt-in limit; shared = N * 4",
        plan.ok() ? "" : plan.message());

  auto manifest = parseManifest("flashc-bundle 1\narch sm_80\n"
                                "kernel big\n entry e\n tensor x f32 in [N, 64]\n scalar window i32\n"
                                " grid cdiv(N, window), 1, 1\n block 64, 64, 1\nend\n"
                                "kernel wide\n entry e\n tensor x f32 in [N, 64]\n grid 1, 1, 1\n block 2048, 1, 1\nend\n");
  if (!checkOk(manifest, "limits manifest parses")) return;
  Arguments b;
  int64_t xs[2] = {100, 64};
  (void)b.setTensor("x", fakePointer(0x100000), DType::F32, 2, xs);
  b.setI32("window", 16);
  checkError(planKernelLaunch(*manifest->findKernel("big"), b), "kernel 'big': 4096 threads per block exceed the device limit 1024",
             "threads per block above the limit");
  b.remove("window");
  checkError(planKernelLaunch(*manifest->findKernel("wide"), b), "kernel 'wide': block x = 2048 is outside 1..1024",
             "block x above the limit");
  int64_t xsBad[2] = {100, 63};
  (void)b.setTensor("x", fakePointer(0x100000), DType::F32, 2, xsBad);
  checkError(planKernelLaunch(*manifest->findKernel("wide"), b), "argument 'x' dim 1 is 63, the kernel expects 64",
             "literal dim mismatch");
  DeviceLimits big;
  big.maxThreadsPerBlock = 4096;
  big.maxBlock = {4096, 4096, 64};
  (void)b.setTensor("x", fakePointer(0x100000), DType::F32, 2, xs);
  b.setI32("window", 0);
  checkError(planKernelLaunch(*manifest->findKernel("big"), b, big), "kernel 'big': grid x: expression 'cdiv(N, window)': cdiv divisor 0",
             "integer scalar used as a symbol: cdiv by a zero window is reported");
  b.setI32("window", 16);
  auto ok = planKernelLaunch(*manifest->findKernel("big"), b, big);
  check(ok.ok() && ok->grid[0] == 7, "integer scalar 'window' is a symbol: grid x = cdiv(100, 16) = 7");
}

// num_sms: the device's multiprocessor count, bound by the runtime (a persistent grid); no parameter may take it.
void testSmCount() {
  auto manifest = parseManifest("flashc-bundle 1\narch sm_90a\n"
                                "kernel persistent\n entry e\n tensor x f32 in [N, 64]\n"
                                " grid min(cdiv(N, 128), num_sms), 1, 1\n block 128, 1, 1\nend\n");
  if (!checkOk(manifest, "a grid over num_sms parses")) return;
  Arguments a;
  int64_t xs[2] = {100000, 64};
  (void)a.setTensor("x", fakePointer(0x100000), DType::F32, 2, xs);
  DeviceLimits h200;
  h200.multiprocessors = 132;
  auto plan = planKernelLaunch(*manifest->findKernel("persistent"), a, h200);
  check(plan.ok() && plan->grid[0] == 132, "grid x = min(cdiv(100000, 128), num_sms = 132) = 132",
        plan.ok() ? "" : plan.message());
  int64_t few[2] = {300, 64};
  (void)a.setTensor("x", fakePointer(0x100000), DType::F32, 2, few);
  plan = planKernelLaunch(*manifest->findKernel("persistent"), a, h200);
  check(plan.ok() && plan->grid[0] == 3, "grid x = min(cdiv(300, 128), 132) = 3", plan.ok() ? "" : plan.message());
  int64_t none[2] = {0, 64};
  (void)a.setTensor("x", nullptr, DType::F32, 2, none);
  plan = planKernelLaunch(*manifest->findKernel("persistent"), a, h200);
  check(plan.ok() && plan->skip, "no rows: an empty persistent grid launches nothing", plan.ok() ? "" : plan.message());
  for (const char *bad : {"kernel k\n entry e\n tensor num_sms f32 in [N]\n grid 1, 1, 1\n block 1, 1, 1\nend\n",
                          "kernel k\n entry e\n tensor x f32 in [num_sms]\n grid 1, 1, 1\n block 1, 1, 1\nend\n",
                          "kernel k\n entry e\n scalar num_sms i32\n grid 1, 1, 1\n block 1, 1, 1\nend\n"}) {
    auto reserved = parseManifest(std::string("flashc-bundle 1\narch sm_90a\n") + bad);
    check(!reserved.ok() && reserved.message().find("'num_sms' is reserved (the runtime binds it to the device's "
                                                    "multiprocessor count)") != std::string::npos,
          "a parameter or dim named num_sms is refused", reserved.ok() ? "parsed" : reserved.message());
  }
}

void testProgram(const Manifest &m) {
  const ProgramSpec &p = *m.findProgram("scale_then_add");
  auto args = [] {
    Arguments a;
    int64_t n[1] = {1000};
    (void)a.setTensor("x", fakePointer(0x100000), DType::F32, 1, n);
    (void)a.setTensor("b", fakePointer(0x200000), DType::F32, 1, n);
    (void)a.setTensor("out", fakePointer(0x300000), DType::F32, 1, n);
    a.setF32("alpha", 2);
    return a;
  };
  auto plan = planProgramLaunch(m, p, args());
  if (checkOk(plan, "program scale_then_add with valid arguments")) {
    check(plan->kernels.size() == 2 && plan->scratch.size() == 1 && plan->scratch[0].bytes == 4000 && plan->scratch[0].zeroFill,
          "two kernels, scratch 'tmp' of 1000 f32 = 4000 bytes, zero-filled");
    plan->setScratchPointer("tmp", fakePointer(0x900000));
    check(plan->kernels[0].tensors[1].data == fakePointer(0x900000) && plan->kernels[1].tensors[0].data == fakePointer(0x900000) &&
              plan->kernels[1].tensors[0].shape[0] == 1000,
          "scratch pointer and shape reach both kernels");
  }
  // A caller's workspace (flashc_launch_workspace): each scratch tensor at a
  // 256-byte aligned offset; the checks speak of the workspace.
  if (plan) {
    std::vector<ScratchAllocation> three = {{"a", 4000, true}, {"b", 1, false}, {"c", 512, false}};
    WorkspaceLayout layout = layOutWorkspace(three);
    check(layout.offsets == std::vector<uint64_t>{0, 4096, 4352} && layout.bytes == 4864,
          "workspace offsets 0, 4096, 4352 (4000 -> 4096, 1 -> 256, 512) and 4864 bytes",
          std::to_string(layout.bytes));
    check(layOutWorkspace(plan->scratch).bytes == 4096, "scale_then_add's workspace: its 4000-byte tmp, aligned");
    check(layOutWorkspace({}).bytes == 0 && checkWorkspace(layOutWorkspace({}), nullptr, 0, "p").ok(),
          "no scratch: any workspace, null included");
    checkError(checkWorkspace(layout, fakePointer(0x900000), 4863, "p"),
               "program 'p': the workspace has 4863 bytes, its scratch needs 4864", "a workspace one byte short");
    checkError(checkWorkspace(layout, fakePointer(0x900010), 1 << 20, "p"),
               "program 'p': the workspace must be 256-byte aligned", "a misaligned workspace");
    checkError(checkWorkspace(layout, nullptr, 1 << 20, "p"),
               "program 'p': the workspace is null but its scratch needs 4864 bytes", "a null workspace");
    check(checkWorkspace(layout, fakePointer(0x900000), 4864, "p").ok(), "a workspace of exactly the bytes needed");
    // Sizes whose sum passes 2^64 saturate: no workspace is large enough (not a wrapped, small sum).
    const int64_t huge = INT64_MAX - 10;
    WorkspaceLayout past = layOutWorkspace({{"a", huge, false}, {"b", huge, false}, {"c", huge, false}});
    check(past.bytes == UINT64_MAX, "three scratch tensors of 2^63 bytes: the layout saturates at 2^64 - 1");
    checkError(checkWorkspace(past, fakePointer(0x900000), UINT64_MAX - 255, "p"),
               "program 'p': the workspace has", "a saturated layout fits no workspace");
  }
  Arguments a = args();
  int64_t n[1] = {1000};
  (void)a.setTensor("tmp", fakePointer(0x500000), DType::F32, 1, n);
  checkError(planProgramLaunch(m, p, a), "argument 'tmp' is scratch that the runtime allocates for program 'scale_then_add'",
             "passing a scratch tensor is an error");
  a = args();
  int64_t n2[1] = {999};
  (void)a.setTensor("b", fakePointer(0x200000), DType::F32, 1, n2);
  checkError(planProgramLaunch(m, p, a), "argument 'b' dim 0 (N) is 999 but argument 'x' dim 0 bound N to 1000",
             "symbols are shared across the program's kernels");
  a = args();
  a.remove("out");
  checkError(planProgramLaunch(m, p, a), "missing argument 'out' (tensor f32 [N]) of kernel 'add_into'",
             "missing argument of the program's second kernel");
  a = args();
  a.setI64("extra", 1);
  checkError(planProgramLaunch(m, p, a), "unknown argument 'extra': program 'scale_then_add' has no such parameter",
             "unknown program argument");

  // Each kernel of a program is checked against its own limits: a small
  // block-size limit of one kernel (many registers) must not reject another.
  std::map<std::string, DeviceLimits> own;
  own["scale_accumulate"].maxThreadsPerBlock = 128;
  own["add_into"].maxThreadsPerBlock = 1024;
  auto perKernel = planProgramLaunch(m, p, args(), DeviceLimits{}, &own);
  check(!perKernel.ok() && perKernel.message().find("kernel 'scale_accumulate'") != std::string::npos,
        "per-kernel limits: the kernel over its own limit is named", perKernel.ok() ? "" : perKernel.message());
  own["scale_accumulate"].maxThreadsPerBlock = 1024;
  own["add_into"].maxThreadsPerBlock = 256;
  check(planProgramLaunch(m, p, args(), DeviceLimits{}, &own).ok(),
        "per-kernel limits: each kernel within its own limit launches");

  Arguments partial;
  int64_t n3[1] = {77};
  (void)partial.setTensor("x", fakePointer(0x100000), DType::F32, 1, n3);
  auto shape = resolveParamShape(m, "scale_then_add", "out", partial);
  check(shape.ok() && shape->size() == 1 && (*shape)[0] == 77, "resolveParamShape: out of the program is [77] once x is bound");
  checkError(resolveParamShape(m, "row_scale", "y", Arguments()), "symbol M is not bound",
             "resolveParamShape names the unbound symbol");
  checkError(resolveParamShape(m, "row_scale", "q", Arguments()), "'row_scale' has no tensor parameter 'q'",
             "resolveParamShape of an unknown parameter");
}

} // namespace

// Widths that are not a multiple of 16 bytes (FFN widths such as 1001 bf16):
// the tensors' rows are padded, not their widths. A user tensor [M, 1001] with
// rows 1008 apart binds; one with rows 1001 apart is told how to pad them; the
// runtime's own scratch rows are padded to the kernels' stride multiple.
void testPaddedRows() {
  auto manifest = parseManifest("flashc-bundle 1\narch sm_90a\n"
                                "kernel up\n entry e\n tensor x bf16 in [M, 100] align=16 contiguous stride_multiple=8\n"
                                " tensor h bf16 out [M, 1001] align=16 contiguous stride_multiple=8\n grid M, 1, 1\n"
                                " block 128, 1, 1\nend\n"
                                "kernel down\n entry e\n tensor h bf16 in [M, 1001] align=16 contiguous stride_multiple=8\n"
                                " tensor acc f32 inout [1001, 77] align=16 contiguous stride_multiple=4\n"
                                " tensor y bf16 out [M, 77] align=16 contiguous stride_multiple=8\n grid M, 1, 1\n"
                                " block 128, 1, 1\nend\n"
                                "program ffn\n kernel up\n kernel down\n scratch h\n scratch acc zero\nend\n");
  if (!checkOk(manifest, "padded-rows manifest parses")) return;
  const KernelSpec &up = *manifest->findKernel("up");
  Arguments a;
  int64_t xs[2] = {3, 100}, xst[2] = {104, 1}, hs[2] = {3, 1001}, hst[2] = {1008, 1};
  (void)a.setTensor("x", fakePointer(0x100000), DType::BF16, 2, xs, xst);
  (void)a.setTensor("h", fakePointer(0x200000), DType::BF16, 2, hs, hst);
  auto plan = planKernelLaunch(up, a);
  if (checkOk(plan, "a width of 1001 with rows 1008 apart (a narrow view of a padded buffer) binds"))
    check(plan->tensors[1].shape[1] == 1001 && plan->tensors[1].stride[0] == 1008,
          "packed h: the true width 1001, the padded row stride 1008");
  (void)a.setTensor("h", fakePointer(0x200000), DType::BF16, 2, hs);
  checkError(planKernelLaunch(up, a),
             "argument 'h': stride 0 is 1001, the kernel needs a multiple of 8 elements (16-byte aligned rows); pad the "
             "rows, not the width: store them 1008 elements apart (e.g. allocate the last dim as 1008 and pass a view "
             "of its first 1001 columns)",
             "a dense [3, 1001] bf16 tensor is told how to pad its rows");

  Arguments p;
  int64_t ys[2] = {3, 77}, yst[2] = {80, 1};
  (void)p.setTensor("x", fakePointer(0x100000), DType::BF16, 2, xs, xst);
  (void)p.setTensor("y", fakePointer(0x300000), DType::BF16, 2, ys, yst);
  auto prog = planProgramLaunch(*manifest, *manifest->findProgram("ffn"), p);
  if (!checkOk(prog, "program with scratch rows of 1001 bf16 and 77 f32")) return;
  check(prog->scratch.size() == 2 && prog->scratch[0].bytes == 3 * 1008 * 2 && prog->scratch[1].bytes == 1001 * 80 * 4,
        "scratch h: 3 rows of 1008 bf16; acc: 1001 rows of 80 f32 (rows padded to 16 bytes)");
  const PackedTensorArg &h = prog->kernels[1].tensors[0], &acc = prog->kernels[1].tensors[1];
  check(h.shape[1] == 1001 && h.stride[0] == 1008 && acc.shape[1] == 77 && acc.stride[0] == 80,
        "scratch tensors keep their widths, rows padded: h stride 1008, acc stride 80");
}

// A dim that is an expression of other dims (a block-class table's 2 * ceil(S / 64) + 2 columns): evaluated for a
// scratch tensor, checked (not bound) for a tensor the caller passes.
void testExpressionDims() {
  auto m = parseManifest(R"(flashc-bundle 1
source kernels.cu
arch sm_90a
kernel classify
  entry classify
  tensor q bf16 in [B, S, 64]
  tensor table i32 out [B, cdiv(S, 64), 2 * cdiv(S, 64) + 2]
  grid cdiv(S, 64), B, 1
  block 128, 1, 1
end
program p
  kernel classify
  scratch table
end
)");
  if (!checkOk(m, "a manifest with expression dims parses")) return;
  const TensorParam *table = m->findKernel("classify")->findTensor("table");
  check(table && table->dims[1].isExpression() && table->dims[1].str() == "cdiv(S, 64)" &&
            table->dims[2].str() == "2 * cdiv(S, 64) + 2",
        "expression dims keep their text");
  Arguments args;
  int64_t shape[3] = {2, 100, 64};
  (void)args.setTensor("q", fakePointer(0x100000), DType::BF16, 3, shape);
  auto plan = planProgramLaunch(*m, m->programs[0], args);
  if (checkOk(plan, "the program with an expression-dim scratch plans"))
    check(plan->scratch.size() == 1 && plan->scratch[0].bytes == 2 * 2 * 6 * 4,
          "scratch table [2, cdiv(100, 64) = 2, 6] of i32: 96 bytes");
  // The kernel launched alone: the caller's table must have the shape the expressions give.
  const KernelSpec &k = *m->findKernel("classify");
  int64_t good[3] = {2, 2, 6}, bad[3] = {2, 3, 6};
  Arguments alone = args;
  (void)alone.setTensor("table", fakePointer(0x200000), DType::I32, 3, good);
  checkOk(planKernelLaunch(k, alone), "a table of the expressions' shape");
  (void)alone.setTensor("table", fakePointer(0x200000), DType::I32, 3, bad);
  checkError(planKernelLaunch(k, alone), "argument 'table' dim 1 is 3, the kernel expects cdiv(S, 64) = 2",
             "a table of another shape names the expression");
  checkError(parseManifest("flashc-bundle 1\nsource kernels.cu\narch sm_90a\nkernel k\n  entry k\n"
                           "  tensor t i32 out [cdiv(Z, 64)]\n  grid 1, 1, 1\n  block 1, 1, 1\nend\n"),
             "dim expression 'cdiv(Z, 64)' uses symbol 'Z' that no tensor dim or integer scalar binds",
             "an expression dim over an unbound symbol");
  checkError(parseManifest("flashc-bundle 1\nsource kernels.cu\narch sm_90a\nkernel k\n  entry k\n"
                           "  tensor t i32 out [-1]\n  grid 1, 1, 1\n  block 1, 1, 1\nend\n"),
             "tensor 't' has dim '-1', which is negative", "a negative constant dim (an expression) is refused");
}

// A modifier's tensor is indexed in 32 bits (`index32`): one whose elements reach offset 2^31 is refused at launch.
void testIndex32() {
  auto m = parseManifest("flashc-bundle 1\narch sm_90a\nkernel k\n entry e\n"
                         " tensor mask_t0 i32 in [B, S] contiguous index32\n grid 1, 1, 1\n block 128, 1, 1\nend\n");
  if (!checkOk(m, "a manifest with index32 parses")) return;
  const KernelSpec &k = *m->findKernel("k");
  Arguments a;
  int64_t fits[2] = {2, int64_t(1) << 30}, over[2] = {2, (int64_t(1) << 30) + 1};
  (void)a.setTensor("mask_t0", fakePointer(0x100000), DType::I32, 2, fits);
  checkOk(planKernelLaunch(k, a), "2^31 elements (last offset 2^31 - 1): indexed in 32 bits");
  (void)a.setTensor("mask_t0", fakePointer(0x100000), DType::I32, 2, over);
  checkError(planKernelLaunch(k, a),
             "argument 'mask_t0': shape [2, 1073741825] spans 2147483650 elements; the kernels index this tensor (a "
             "modifier's) in 32 bits: at most 2^31",
             "a modifier's tensor past 2^31 elements is refused");
}

// A modifier's tensor read at an index itself (document ids at q and k) must hold that index's range: flashc writes
// a `requires` line with a message on each kernel that takes it (test/Codegen/cuda-attention-table-extents.mlir), and
// a shorter tensor is refused in the caller's terms before anything is launched (the kernels would read the missing
// ids as 0: a wrong mask).
void testTableExtents() {
  const std::string q = "\"argument 'mask_t0' dim 0 is {mask_t0_d0}, but the mask modifier reads it at the query "
                        "index, which ranges over Sq = {Sq}\"\n";
  const std::string k = "\"argument 'mask_t0' dim 0 is {mask_t0_d0}, but the mask modifier reads it at the key "
                        "index, which ranges over Sk = {Sk}\"\n";
  const std::string requirements = "  requires mask_t0_d0 >= Sq " + q + "  requires mask_t0_d0 >= Sk " + k;
  auto m = parseManifest("flashc-bundle 1\narch sm_90a\n"
                         "kernel documents_fwd_mask_blocks\n  entry e\n"
                         "  tensor q bf16 in [B, 16, Sq, 128] contiguous\n"
                         "  tensor k bf16 in [B, 16, Sk, 128] contiguous\n"
                         "  tensor mask_t0 i32 in [mask_t0_d0] contiguous index32\n"
                         "  tensor mask_blocks i32 out [1, 1, cdiv(Sq, 64), 2 * cdiv(Sk, 64) + 2] contiguous\n"
                         "  grid cdiv(Sq, 64), 1, 1\n  block 128, 1, 1\n" + requirements + "end\n"
                         "kernel documents_fwd\n  entry e\n"
                         "  tensor q bf16 in [B, 16, Sq, 128] contiguous\n"
                         "  tensor k bf16 in [B, 16, Sk, 128] contiguous\n"
                         "  tensor v bf16 in [B, 16, Sk, 128] contiguous\n"
                         "  tensor out bf16 out [B, 16, Sq, 128] contiguous\n"
                         "  tensor lse f32 out [B, 16, Sq] contiguous\n"
                         "  tensor mask_t0 i32 in [mask_t0_d0] contiguous index32\n"
                         "  tensor mask_blocks i32 in [1, 1, cdiv(Sq, 64), 2 * cdiv(Sk, 64) + 2] contiguous\n"
                         "  grid cdiv(Sq, 128), 16, B\n  block 384, 1, 1\n" + requirements + "end\n"
                         "program documents\n  kernel documents_fwd_mask_blocks\n  kernel documents_fwd\n"
                         "  scratch mask_blocks\nend\n");
  if (!checkOk(m, "a document mask's manifest with messaged requirements parses")) return;
  auto args = [](int64_t sq, int64_t sk, int64_t ids) {
    Arguments a;
    int64_t qs[4] = {2, 16, sq, 128}, ks[4] = {2, 16, sk, 128}, ls[3] = {2, 16, sq}, ts[1] = {ids};
    (void)a.setTensor("q", fakePointer(0x100000), DType::BF16, 4, qs);
    (void)a.setTensor("k", fakePointer(0x200000), DType::BF16, 4, ks);
    (void)a.setTensor("v", fakePointer(0x300000), DType::BF16, 4, ks);
    (void)a.setTensor("out", fakePointer(0x400000), DType::BF16, 4, qs);
    (void)a.setTensor("lse", fakePointer(0x500000), DType::F32, 3, ls);
    (void)a.setTensor("mask_t0", fakePointer(0x600000), DType::I32, 1, ts);
    return a;
  };
  const ProgramSpec &p = *m->findProgram("documents");
  checkError(planProgramLaunch(*m, p, args(128, 128, 100)),
             "argument 'mask_t0' dim 0 is 100, but the mask modifier reads it at the query index, which ranges over "
             "Sq = 128",
             "ids shorter than the queries are refused, naming the tensor, its size and the range it must hold");
  auto shortKeys = planProgramLaunch(*m, p, args(64, 128, 100));
  checkError(shortKeys,
             "argument 'mask_t0' dim 0 is 100, but the mask modifier reads it at the key index, which ranges over "
             "Sk = 128",
             "ids shorter than the keys (covering the queries) are refused the same way");
  check(!shortKeys.ok() && shortKeys.message().find("requirement") == std::string::npos,
        "the message replaces the generic requirement text", shortKeys.ok() ? "" : shortKeys.message());
  auto plan = planProgramLaunch(*m, p, args(128, 100, 128));
  if (checkOk(plan, "ids covering both the queries and the keys (128 of them, Sq = 128, Sk = 100) launch"))
    check(plan->kernels.size() == 2 && plan->kernels[0].tensors[2].shape[0] == 128, "both kernels take the ids");
  checkOk(planProgramLaunch(*m, p, args(100, 100, 4096)), "longer ids than either range are fine (never read)");
  // A kernel launched alone checks them too.
  Arguments alone = args(128, 128, 100);
  int64_t blocks[4] = {1, 1, 2, 6};
  (void)alone.setTensor("mask_blocks", fakePointer(0x700000), DType::I32, 4, blocks);
  alone.remove("v");
  alone.remove("out");
  alone.remove("lse");
  checkError(planKernelLaunch(*m->findKernel("documents_fwd_mask_blocks"), alone),
             "argument 'mask_t0' dim 0 is 100, but the mask modifier reads it at the query index, which ranges over "
             "Sq = 128",
             "the block-class kernel launched alone refuses short ids too");
}

// Arguments that describe no real buffer, or that a kernel cannot write correctly, are refused before anything is
// launched: no signed overflow on the way (UBSan found three), no silent race.
void testRobustArguments(const Manifest &m) {
  const int64_t big = int64_t(1) << 40;
  Arguments a;
  int64_t emptyHuge[3] = {0, big, big};
  checkError(a.setTensor("x", nullptr, DType::F32, 3, emptyHuge), "spans more elements than 64-bit byte offsets can address",
             "an empty tensor whose other sizes multiply past 64 bits (its dense strides would overflow)");
  int64_t hugeEmpty[3] = {big, big, 0}, ones[3] = {1, 1, 1};
  checkError(a.setTensor("x", nullptr, DType::F32, 3, hugeEmpty, ones), "spans more elements",
             "the same with strides given (its element count overflowed)");
  int64_t small[2] = {3, 4}, farApart[2] = {int64_t(1) << 61, 1};
  checkError(a.setTensor("x", fakePointer(0x100000), DType::F32, 2, small, farApart), "spans more elements",
             "rows 2^61 elements apart: the furthest byte is past 2^63 although the element offset fits");

  // An output broadcast along a dim (a torch expand()) would be written by many threads into one place.
  const KernelSpec &k = *m.findKernel("row_scale");
  Arguments broadcast = rowScaleArgs(3, 300, 320);
  int64_t shape[2] = {3, 300}, repeated[2] = {0, 1};
  (void)broadcast.setTensor("y", fakePointer(0x300000), DType::BF16, 2, shape, repeated);
  checkError(planKernelLaunch(k, broadcast), "argument 'y': stride 0 is 0 over 3 elements; an output must not repeat",
             "an output with stride 0 over 3 rows is refused");
  Arguments oneRow = rowScaleArgs(1, 300, 320);
  int64_t oneRowShape[2] = {1, 300};
  (void)oneRow.setTensor("y", fakePointer(0x300000), DType::BF16, 2, oneRowShape, repeated);
  checkOk(planKernelLaunch(k, oneRow), "stride 0 over a dim of size 1 is no repetition");

  // A caller's dim written over num_sms: bound before the expressions are checked (it failed every launch).
  auto sms = parseManifest("flashc-bundle 1\nsource kernels.cu\narch sm_90a\nkernel partial\n entry e\n"
                           " tensor x f32 in [N, 64]\n tensor parts f32 out [min(N, num_sms), 64]\n"
                           " grid min(N, num_sms), 1, 1\n block 128, 1, 1\nend\n");
  if (checkOk(sms, "a caller's dim over num_sms parses")) {
    DeviceLimits h200;
    h200.multiprocessors = 132;
    Arguments p;
    int64_t xs[2] = {1000, 64}, parts[2] = {132, 64};
    (void)p.setTensor("x", fakePointer(0x100000), DType::F32, 2, xs);
    (void)p.setTensor("parts", fakePointer(0x200000), DType::F32, 2, parts);
    checkOk(planKernelLaunch(*sms->findKernel("partial"), p, h200), "parts [min(1000, num_sms = 132), 64] plans");
    checkError(resolveParamShape(*sms, "partial", "parts", p),
               "shape of 'parts': min(N, num_sms) depends on num_sms, the device's multiprocessor count",
               "a shape query over num_sms says why it cannot answer");
  }

  // A shape the caller asks for before allocating: never a negative size reported as a success.
  auto neg = parseManifest("flashc-bundle 1\nsource kernels.cu\narch sm_90a\nkernel k\n entry e\n"
                           " tensor x f32 in [N]\n tensor y f32 out [N - 64]\n grid 1, 1, 1\n block 1, 1, 1\nend\n");
  if (checkOk(neg, "a manifest with an N - 64 dim parses")) {
    Arguments p;
    int64_t ten[1] = {10};
    (void)p.setTensor("x", fakePointer(0x100000), DType::F32, 1, ten);
    checkError(resolveParamShape(*neg, "k", "y", p), "shape of 'y': N - 64 = -54 with the arguments given so far",
               "a negative size is an error, naming the expression");
  }
}

// The caller's tensors' bytes and the overlap rule (checkCallerTensors runs it at every launch, after the device
// memory checks): a tensor a kernel writes may not share memory with any other tensor argument.
void testOverlaps(const Manifest &m) {
  const ProgramSpec &p = *m.findProgram("scale_then_add");
  auto program = [&](uintptr_t x, uintptr_t b, uintptr_t out, int64_t n = 1000, const int64_t *bStride = nullptr) {
    Arguments a;
    int64_t shape[1] = {n};
    (void)a.setTensor("x", fakePointer(x), DType::F32, 1, shape);
    (void)a.setTensor("b", fakePointer(b), DType::F32, 1, shape, bStride);
    (void)a.setTensor("out", fakePointer(out), DType::F32, 1, shape);
    a.setF32("alpha", 2);
    auto plan = planProgramLaunch(m, p, a);
    return plan ? callerTensorBytes(plan->kernels.data(), plan->kernels.size()) : std::vector<TensorBytes>();
  };
  auto t = program(0x100000, 0x200000, 0x300000);
  // x and b are read by one kernel each, out written by the second; tmp is scratch (not the caller's).
  check(t.size() == 3 && *t[0].name == "x" && !t[0].written && *t[1].name == "b" && *t[2].name == "out" &&
            t[2].written && t[2].first == 0x300000 && t[2].last == 0x300000 + 4000 - 1 && t[2].dense,
        "a program's caller tensors once each, by name: bytes [first, last], dense, written");
  checkOk(checkCallerOverlaps(t), "disjoint arguments pass");
  checkError(checkCallerOverlaps(program(0x100000, 0x200000, 0x100000)),
             "argument 'out' (written, bytes 0x100000 to 0x100f9f) shares memory with argument 'x' (0x100000 to 0x100f9f)",
             "out passed as x is refused, naming both and their bytes");
  checkError(checkCallerOverlaps(program(0x100000, 0x200000, 0x100000 + 3996)), "argument 'out'",
             "out starting at x's last element is refused");
  checkError(checkCallerOverlaps(program(0x100000, 0x200000 + 400, 0x200000)), "shares memory with argument 'b'",
             "out ending inside b is refused");
  checkOk(checkCallerOverlaps(program(0x100000, 0x100000, 0x300000)), "two inputs may share memory (q, k, v as views)");
  checkOk(checkCallerOverlaps(program(0x100000, 0x200000, 0x100000 + 4000)), "out right after x passes");
  // b every other element from 0x200000, out dense from 0x200004: out holds b's elements 2, 4, ... (b's step, 8
  // bytes, fits in the bytes both span).
  int64_t two[1] = {2};
  auto interleaved = program(0x100000, 0x200000, 0x200004, 1000, two);
  check(interleaved.size() == 3 && !interleaved[1].dense && interleaved[1].last == 0x200000 + 4 * 1998 + 3,
        "a strided input: not dense, its last byte from its stride");
  check(certainlyOverlap(interleaved[2], interleaved[1]) && !checkCallerOverlaps(interleaved).ok(),
        "a dense output over a strided input's middle elements overlaps it");
  // k and v halves of one [2, n] buffer read as strided views, each row's other half written: the same.
  TensorBytes evens{nullptr, 0x1000, 0x1000 + 8 * 99 + 3, false, false, 8};  // 100 f32, every other one
  TensorBytes odds{nullptr, 0x1004, 0x1004 + 8 * 99 + 3, false, true, 8};
  check(!certainlyOverlap(evens, odds), "interleaved strided views (neither dense): not decided, they pass");
  TensorBytes a{nullptr, 0x1000, 0x1fff, false, true, 64}, b{nullptr, 0x1004, 0x1007, true, false, 0};
  check(!certainlyOverlap(a, b), "a dense 4 bytes inside a strided tensor's gap (step 64): not decided, passes");
  b.last = 0x1000 + 63 + 4;
  check(certainlyOverlap(a, b), "a dense tensor as long as the other's step inside its range overlaps it");
  b.last = 0x1007;
  b.dense = true;
  b.first = 0x1000;
  check(certainlyOverlap(a, b), "the same first byte always overlaps");
  TensorBytes ws{nullptr, 0x100000 + 2048, 0x100000 + 8191, true, true, 0, true};  // a workspace over x's second half
  auto withWs = program(0x100000, 0x200000, 0x300000);
  withWs.push_back(ws);
  checkError(checkCallerOverlaps(withWs),
             "the workspace (written, bytes 0x100800 to 0x101fff) shares memory with argument 'x' (0x100000 to 0x100f9f)",
             "a caller's workspace over an argument is refused, named as the workspace");
  withWs = program(0x100000, 0x200000, 0x300000);
  ws.first = 0x300000 + 3840;
  ws.last = 0x300000 + 8191;
  withWs.push_back(ws);
  checkError(checkCallerOverlaps(withWs), "the workspace (written, bytes 0x300f00 to 0x301fff) shares memory with argument 'out'",
             "a workspace over an output's tail: the workspace named first");
  TensorBytes c{nullptr, 0x3000, 0x3fff, true, false};
  check(!certainlyOverlap(a, c) && !certainlyOverlap(c, a), "disjoint ranges never overlap");

  // Empty tensors have no bytes (null data of a size-0 dim).
  Arguments e;
  int64_t zero[2] = {0, 64}, zs[1] = {0};
  (void)e.setTensor("x", nullptr, DType::BF16, 2, zero);
  (void)e.setTensor("s", nullptr, DType::F32, 1, zs);
  (void)e.setTensor("y", nullptr, DType::BF16, 2, zero);
  e.setF32("alpha", 1);
  auto plan = planKernelLaunch(*m.findKernel("row_scale"), e);
  check(plan.ok() && callerTensorBytes(&*plan, 1).empty(), "empty tensors have no bytes to check");
}

int main() {
  Manifest m = loadBasicManifest();
  testOverlaps(m);
  testRobustArguments(m);
  testIndex32();
  testTableExtents();
  testExpressionDims();
  testPaddedRows();
  testValidKernel(m);
  testBadArguments(m);
  testZeroSize(m);
  testLimits(m);
  testSmCount();
  testProgram(m);
  return checkSummary();
}
