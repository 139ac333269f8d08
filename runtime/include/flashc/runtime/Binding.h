// Launch arguments and their validation against the manifest, on the CPU.
// Everything a launch checks that does not need the driver happens here, so it
// is testable without a GPU; the driver layer adds only the pointer-device check.
#pragma once

#include "flashc/runtime/Manifest.h"

#include <array>
#include <cstdint>
#include <functional>
#include <list>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <vector>

namespace flashc::rt {

/// The kernel ABI's tensor argument, passed by value (docs/architecture.md).
struct PackedTensorArg {
  void *data;
  int64_t shape[4];
  int64_t stride[4];
};
static_assert(sizeof(PackedTensorArg) == 72, "kernel ABI: TensorArg is 72 bytes");
static_assert(alignof(PackedTensorArg) == 8, "kernel ABI: TensorArg is 8-byte aligned");

/// The kernel ABI's tensor map value: CUtensorMap's 128 opaque bytes (the
/// device side declares it `const __grid_constant__ flashc::TmaDescriptor`).
/// cuTensorMapEncodeTiled writes it in place, so it keeps CUtensorMap's alignment.
struct alignas(128) TensorMapValue {
  uint64_t opaque[16];
};
static_assert(sizeof(TensorMapValue) == 128, "kernel ABI: a tensor map is 128 bytes");

/// cuTensorMapEncodeTiled's enum values (cuda.h), so this library needs no
/// CUDA header; the runtime static_asserts they match.
namespace tma {
constexpr int Int32 = 3, Float16 = 6, Float32 = 7, BFloat16 = 9;                 // CUtensorMapDataType
constexpr int SwizzleNone = 0, Swizzle32B = 1, Swizzle64B = 2, Swizzle128B = 3; // CUtensorMapSwizzle
constexpr int kInterleaveNone = 0;
constexpr int kL2Promotion128B = 2;
constexpr int kOobFillZeros = 0; // CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE: out-of-bounds elements read as zero
constexpr int kMaxRank = 5;
} // namespace tma

/// Exactly the arguments of one cuTensorMapEncodeTiled call: dims, strides
/// and box innermost first (the reverse of the manifest's dim order), strides
/// in bytes without the innermost (which is the element size).
struct TensorMapEncoding {
  int dataType = tma::Float32;
  uint32_t rank = 0;
  void *address = nullptr;
  std::array<uint64_t, tma::kMaxRank> dims{};
  std::array<uint64_t, tma::kMaxRank - 1> strides{};
  std::array<uint32_t, tma::kMaxRank> box{};
  std::array<uint32_t, tma::kMaxRank> elementStrides{};
  int interleave = tma::kInterleaveNone;
  int swizzle = tma::SwizzleNone;
  int l2Promotion = tma::kL2Promotion128B;
  int oobFill = tma::kOobFillZeros;
  /// The tensor has no elements (a dim of 0, e.g. Sk = 0): the driver cannot
  /// describe it and a kernel never loads from it, so its parameter is an
  /// all-zero map and nothing is encoded.
  bool empty = false;
  bool operator<(const TensorMapEncoding &o) const;
  bool operator==(const TensorMapEncoding &o) const;
};

/// Encodes one tensor map (the runtime's wraps cuTensorMapEncodeTiled; tests
/// inject a fake that records its arguments).
using TensorMapEncodeFn = std::function<Status(const TensorMapEncoding &, TensorMapValue &)>;

/// Encoded tensor maps per encoding (pointer, shape, strides, box, swizzle,
/// dtype), least recently used evicted beyond `capacity`: a training loop
/// reuses the same buffers, so most launches encode nothing. Thread-safe.
class TensorMapCache {
public:
  explicit TensorMapCache(TensorMapEncodeFn encode, size_t capacity = 256);
  Status get(const TensorMapEncoding &e, TensorMapValue &out);
  size_t size() const;
  uint64_t encodeCalls() const; // how often `encode` ran (for tests)

private:
  struct Entry {
    TensorMapValue value;
    std::list<TensorMapEncoding>::iterator use;
  };
  TensorMapEncodeFn encode_;
  size_t capacity_;
  mutable std::mutex mutex_;
  std::map<TensorMapEncoding, Entry> entries_;
  std::list<TensorMapEncoding> recency_; // most recent first
  uint64_t encodeCalls_ = 0;
};

/// A tensor the caller binds: device pointer, dtype, shape, strides in elements.
struct TensorArgument {
  void *data = nullptr;
  DType dtype = DType::F32;
  int rank = 0;
  std::array<int64_t, 4> shape{1, 1, 1, 1};
  std::array<int64_t, 4> stride{0, 0, 0, 0};
  int64_t elementCount() const;
};

struct ScalarArgument {
  ScalarType type = ScalarType::F32;
  float f32 = 0;
  int32_t i32 = 0;
  int64_t i64 = 0;
};

/// A set of named arguments for one kernel or program launch.
class Arguments {
public:
  /// strides may be null: dense row-major. Fails only for rank outside 0..4
  /// or a null shape with rank > 0; everything else is checked at launch.
  Status setTensor(const std::string &name, void *data, DType dtype, int rank, const int64_t *shape,
                   const int64_t *strides = nullptr);
  void setF32(const std::string &name, float v);
  void setI32(const std::string &name, int32_t v);
  void setI64(const std::string &name, int64_t v);
  void remove(const std::string &name);
  void clear();

  const std::map<std::string, TensorArgument> &tensors() const { return tensors_; }
  const std::map<std::string, ScalarArgument> &scalars() const { return scalars_; }

private:
  std::map<std::string, TensorArgument> tensors_;
  std::map<std::string, ScalarArgument> scalars_;
};

/// Limits a launch is checked against (defaults: any CC >= 7.0 device; the
/// runtime fills in the real device's values).
struct DeviceLimits {
  std::array<int64_t, 3> maxGrid{2147483647, 65535, 65535};
  std::array<int64_t, 3> maxBlock{1024, 1024, 64};
  int64_t maxThreadsPerBlock = 1024;
  int64_t maxDynamicSharedBytes = 48 * 1024; // the opt-in maximum per block
  int64_t multiprocessors = 1;                // what the symbol num_sms evaluates to
};

/// One validated kernel launch, ready for cuLaunchKernel.
struct KernelLaunch {
  const KernelSpec *kernel = nullptr;
  bool skip = false; // grid has a zero dimension: nothing to launch
  std::array<uint32_t, 3> grid{1, 1, 1};
  std::array<uint32_t, 3> block{1, 1, 1};
  uint32_t sharedBytes = 0;
  std::vector<PackedTensorArg> tensors; // manifest order
  std::vector<uint64_t> scalars;        // one 8-byte slot per scalar, value at its start
  std::vector<bool> tensorIsScratch;    // per tensor: data filled in by the runtime
  /// Per tensor map (manifest order): its tensor's index and the encoding,
  /// complete but for the address (known only once scratch is allocated).
  /// Empty when the launch is skipped.
  struct PlannedTensorMap {
    size_t tensor = 0;
    TensorMapEncoding encoding;
  };
  std::vector<PlannedTensorMap> tensorMapPlans;
  std::vector<TensorMapValue> tensorMaps; // filled by encodeTensorMaps; the launch points at them
};

/// Encodes the launch's tensor maps (after scratch pointers are set) through
/// `cache` into launch.tensorMaps.
Status encodeTensorMaps(KernelLaunch &launch, TensorMapCache &cache);

/// A scratch tensor a program needs: the runtime allocates bytes and points
/// every use at it.
struct ScratchAllocation {
  std::string name;
  int64_t bytes = 0;
  bool zeroFill = false;
};

struct ProgramLaunch {
  const ProgramSpec *program = nullptr;
  std::vector<KernelLaunch> kernels;
  std::vector<ScratchAllocation> scratch;
  /// Fills the data pointer of scratch tensor `name` in every kernel launch.
  void setScratchPointer(const std::string &name, void *data);
};

/// Where each scratch tensor lies in one workspace: offsets (in `scratch`'s
/// order) at multiples of kWorkspaceAlignment, and the bytes they span.
constexpr uint64_t kWorkspaceAlignment = 256;
struct WorkspaceLayout {
  std::vector<uint64_t> offsets;
  uint64_t bytes = 0;
};
WorkspaceLayout layOutWorkspace(const std::vector<ScratchAllocation> &scratch);

/// Whether a caller's workspace (base address and size) holds `layout`: an
/// error in the caller's terms (too small, misaligned, null) otherwise.
Status checkWorkspace(const WorkspaceLayout &layout, const void *data, uint64_t bytes, const std::string &program);

/// Validates `args` against a kernel and packs them. Errors name the argument.
Result<KernelLaunch> planKernelLaunch(const KernelSpec &kernel, const Arguments &args,
                                      const DeviceLimits &limits = {});

/// Same for a program: all kernels are validated before any is launched.
/// `kernelLimits` (optional) holds each kernel's own limits (its maximum block
/// size depends on its registers); kernels not in it get `limits`.
Result<ProgramLaunch> planProgramLaunch(const Manifest &manifest, const ProgramSpec &program,
                                        const Arguments &args, const DeviceLimits &limits = {},
                                        const std::map<std::string, DeviceLimits> *kernelLimits = nullptr);

/// The bytes a caller's tensor spans as a launch passes it: its first and last byte, and whether its elements fill
/// that range (a dense layout in some order of its dims). Empty (no element) for a tensor with a size 0 or no data.
struct TensorBytes {
  const std::string *name = nullptr;  // the parameter's name (the caller's argument)
  uint64_t first = 0, last = 0;
  bool dense = false;
  bool written = false;  // an output or inout of some kernel of the launch
  uint64_t step = 0;     // the largest stride in bytes of a dim with more than one element: no gap between two of
                         // its elements (in address order) is wider
  bool workspace = false;  // the caller's workspace of a program (its scratch, written), not an argument
};

/// The caller's tensors of a kernel launch, or of a program's kernels, once each (by name; scratch left out).
std::vector<TensorBytes> callerTensorBytes(const KernelLaunch *launches, size_t count);

/// Whether two tensors certainly share a byte: their first bytes are the same, or one of them is dense and holds the
/// other's first or last byte or at least `step` bytes of its range (an element starts there). Strided views that
/// interleave without sharing an element are not flagged; where neither is dense, sharing is not decided.
bool certainlyOverlap(const TensorBytes &a, const TensorBytes &b);

/// The kernels read their inputs while they write their outputs, in no order the caller can rely on: an output or
/// inout that shares memory with another tensor argument gives a wrong result. An error naming both, else OK.
Status checkCallerOverlaps(const std::vector<TensorBytes> &tensors);

/// The shape of parameter `param` of a kernel or program implied by the
/// arguments bound so far (to allocate outputs): every symbol it uses must be
/// bound by some argument. Returns rank entries.
Result<std::vector<int64_t>> resolveParamShape(const Manifest &manifest, const std::string &entryName,
                                               const std::string &param, const Arguments &args);

} // namespace flashc::rt
