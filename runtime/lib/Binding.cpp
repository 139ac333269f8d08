// Argument validation, symbol binding and ABI packing (no driver involved).
#include "flashc/runtime/Binding.h"

#include <algorithm>
#include <cstring>
#include <set>
#include <sstream>
#include <tuple>

namespace flashc::rt {

namespace {
auto encodingKey(const TensorMapEncoding &e) {
  return std::make_tuple(e.dataType, e.rank, reinterpret_cast<uintptr_t>(e.address), e.dims, e.strides, e.box, e.elementStrides, e.interleave, e.swizzle,
                  e.l2Promotion, e.oobFill);
}
} // namespace

bool TensorMapEncoding::operator<(const TensorMapEncoding &o) const { return encodingKey(*this) < encodingKey(o); }
bool TensorMapEncoding::operator==(const TensorMapEncoding &o) const { return encodingKey(*this) == encodingKey(o); }

TensorMapCache::TensorMapCache(TensorMapEncodeFn encode, size_t capacity)
    : encode_(std::move(encode)), capacity_(capacity ? capacity : 1) {}

Status TensorMapCache::get(const TensorMapEncoding &e, TensorMapValue &out) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = entries_.find(e);
  if (it != entries_.end()) {
    recency_.splice(recency_.begin(), recency_, it->second.use);
    out = it->second.value;
    return Status();
  }
  TensorMapValue value{};
  ++encodeCalls_;
  if (Status s = encode_(e, value); !s) return s; // failures are not cached
  if (entries_.size() >= capacity_) {
    entries_.erase(recency_.back());
    recency_.pop_back();
  }
  recency_.push_front(e);
  entries_.emplace(e, Entry{value, recency_.begin()});
  out = value;
  return Status();
}

size_t TensorMapCache::size() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return entries_.size();
}
uint64_t TensorMapCache::encodeCalls() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return encodeCalls_;
}

int64_t TensorArgument::elementCount() const {
  for (int i = 0; i < rank; ++i)
    if (shape[i] <= 0) return 0;  // (first: the other sizes' product may not fit when one is 0)
  int64_t n = 1;
  for (int i = 0; i < rank; ++i) n *= shape[i];  // (setTensor refused products past int64)
  return n;
}

Status Arguments::setTensor(const std::string &name, void *data, DType dtype, int rank,
                            const int64_t *shape, const int64_t *strides) {
  if (rank < 0 || rank > kMaxTensorRank)
    return makeError(ErrorCode::InvalidArgument,
                     "argument '" + name + "': rank " + std::to_string(rank) + " is outside 0..4");
  if (rank > 0 && !shape)
    return makeError(ErrorCode::InvalidArgument, "argument '" + name + "': null shape array");
  // Sizes whose element count or furthest offset, in bytes of the widest element (8), overflows 64 bits describe
  // no real buffer; letting them through would wrap the kernels' addressing. The product of the sizes is checked
  // for an empty tensor too: its dense strides multiply the others. (Negative sizes and strides are reported with
  // the kernel's names at launch.)
  bool empty = false;
  for (int i = 0; i < rank; ++i) empty = empty || shape[i] <= 0;
  int64_t count = 1, last = 0;
  bool overflow = false;
  for (int i = 0; i < rank && !overflow; ++i) {
    overflow = __builtin_mul_overflow(count, std::max<int64_t>(shape[i], 1), &count);
    if (!empty && strides && strides[i] > 0) {
      int64_t reach = 0;
      overflow = overflow || __builtin_mul_overflow(shape[i] - 1, strides[i], &reach) ||
                 __builtin_add_overflow(last, reach, &last);
    }
  }
  if (overflow || (!empty && (count > INT64_MAX / 8 || last > INT64_MAX / 8))) {
    std::string dims;
    for (int i = 0; i < rank; ++i) dims += (i ? ", " : "") + std::to_string(shape[i]);
    return makeError(ErrorCode::InvalidArgument,
                     "argument '" + name + "': shape [" + dims + "]" + (strides ? " with its strides" : "") +
                         " spans more elements than 64-bit byte offsets can address");
  }
  TensorArgument t;
  t.data = data;
  t.dtype = dtype;
  t.rank = rank;
  for (int i = 0; i < rank; ++i) t.shape[i] = shape[i];
  if (strides) {
    for (int i = 0; i < rank; ++i) t.stride[i] = strides[i];
  } else {
    int64_t s = 1;
    for (int i = rank - 1; i >= 0; --i) {
      t.stride[i] = s;
      s *= shape[i] > 1 ? shape[i] : 1;
    }
  }
  scalars_.erase(name);
  tensors_[name] = t;
  return Status();
}

void Arguments::setF32(const std::string &name, float v) {
  tensors_.erase(name);
  ScalarArgument s;
  s.type = ScalarType::F32;
  s.f32 = v;
  scalars_[name] = s;
}
void Arguments::setI32(const std::string &name, int32_t v) {
  tensors_.erase(name);
  ScalarArgument s;
  s.type = ScalarType::I32;
  s.i32 = v;
  s.i64 = v;
  scalars_[name] = s;
}
void Arguments::setI64(const std::string &name, int64_t v) {
  tensors_.erase(name);
  ScalarArgument s;
  s.type = ScalarType::I64;
  s.i64 = v;
  scalars_[name] = s;
}
void Arguments::remove(const std::string &name) {
  tensors_.erase(name);
  scalars_.erase(name);
}
void Arguments::clear() {
  tensors_.clear();
  scalars_.clear();
}

void ProgramLaunch::setScratchPointer(const std::string &name, void *data) {
  for (auto &k : kernels)
    for (size_t i = 0; i < k.tensors.size(); ++i)
      if (k.tensorIsScratch[i] && k.kernel->tensors[i].name == name) k.tensors[i].data = data;
}

WorkspaceLayout layOutWorkspace(const std::vector<ScratchAllocation> &scratch) {
  WorkspaceLayout layout;
  for (const auto &sc : scratch) {
    layout.offsets.push_back(layout.bytes);
    // Saturating: a sum past 2^64 (absurd shapes) reads as more than any workspace holds.
    uint64_t bytes = static_cast<uint64_t>(sc.bytes);
    uint64_t aligned = bytes > UINT64_MAX - kWorkspaceAlignment
                           ? UINT64_MAX
                           : (bytes + kWorkspaceAlignment - 1) / kWorkspaceAlignment * kWorkspaceAlignment;
    layout.bytes = aligned > UINT64_MAX - layout.bytes ? UINT64_MAX : layout.bytes + aligned;
  }
  return layout;
}

Status checkWorkspace(const WorkspaceLayout &layout, const void *data, uint64_t bytes, const std::string &program) {
  if (layout.bytes == 0) return Status();
  if (!data)
    return makeError(ErrorCode::InvalidArgument, "program '" + program + "': the workspace is null but its scratch needs " +
                                                     std::to_string(layout.bytes) + " bytes");
  if (reinterpret_cast<uintptr_t>(data) % kWorkspaceAlignment != 0)
    return makeError(ErrorCode::InvalidArgument, "program '" + program + "': the workspace must be " +
                                                     std::to_string(kWorkspaceAlignment) + "-byte aligned");
  if (bytes < layout.bytes)
    return makeError(ErrorCode::InvalidArgument, "program '" + program + "': the workspace has " + std::to_string(bytes) +
                                                     " bytes, its scratch needs " + std::to_string(layout.bytes) +
                                                     " (workspaceBytes for these arguments)");
  return Status();
}

namespace {

Error bad(const std::string &msg) { return makeError(ErrorCode::InvalidArgument, msg); }

std::string shapeText(const TensorArgument &t) {
  std::string s = "[";
  for (int i = 0; i < t.rank; ++i) s += (i ? ", " : "") + std::to_string(t.shape[i]);
  return s + "]";
}

std::string paramText(const TensorParam &p) {
  std::string s = std::string("tensor ") + dtypeName(p.dtype) + " [";
  for (size_t i = 0; i < p.dims.size(); ++i) s += (i ? ", " : "") + p.dims[i].str();
  return s + "]";
}

// Symbol values plus who bound each, for messages like
// "... but 'v' dim 2 bound Sk to 64".
struct Binder {
  SymbolTable values;
  std::map<std::string, std::string> origin;
  // Expression dims of the tensors bound, checked by checkExpressions once every symbol is.
  struct PendingDim {
    const Dim *dim;
    int64_t given;
    std::string where;
  };
  std::vector<PendingDim> expressions;

  Status checkExpressions() const {
    for (const auto &p : expressions) {
      auto want = p.dim->expr.evaluate(values);
      if (!want) return bad(p.where + ": " + want.error().message);
      if (*want != p.given)
        return bad(p.where + " is " + std::to_string(p.given) + ", the kernel expects " + p.dim->expr.str() +
                   " = " + std::to_string(*want));
    }
    return Status();
  }

  Status bind(const std::string &symbol, int64_t value, const std::string &where) {
    auto it = values.find(symbol);
    if (it == values.end()) {
      values[symbol] = value;
      origin[symbol] = where;
      return Status();
    }
    if (it->second != value)
      return bad(where + " (" + symbol + ") is " + std::to_string(value) + " but " + origin[symbol] +
                 " bound " + symbol + " to " + std::to_string(it->second));
    return Status();
  }
};

bool isIntegerScalar(ScalarType t) { return t != ScalarType::F32; }

// Checks dtype/rank and binds the dims of a user tensor.
Status bindTensor(const TensorParam &p, const TensorArgument &a, Binder &binder) {
  const std::string arg = "argument '" + p.name + "'";
  if (a.dtype != p.dtype)
    return bad(arg + ": dtype is " + dtypeName(a.dtype) + ", the kernel expects " + dtypeName(p.dtype));
  if (a.rank != int(p.dims.size()))
    return bad(arg + ": rank is " + std::to_string(a.rank) + " (shape " + shapeText(a) +
               "), the kernel expects " + std::to_string(p.dims.size()) + " (" + paramText(p) + ")");
  for (int i = 0; i < a.rank; ++i) {
    if (a.shape[i] < 0)
      return bad(arg + ": dim " + std::to_string(i) + " is negative (" + std::to_string(a.shape[i]) + ")");
    // (The compiler refuses such a static size at the spec line; a dynamic one is the launch's.)
    if (a.shape[i] > INT32_MAX)
      return bad(arg + ": dim " + std::to_string(i) + " is " + std::to_string(a.shape[i]) +
                 ", above 2147483647, the largest size the kernels' 32-bit indices can address");
    const Dim &d = p.dims[i];
    std::string where = arg + " dim " + std::to_string(i);
    if (d.isExpression()) {
      binder.expressions.push_back({&d, a.shape[i], where});  // checked once every symbol is bound
    } else if (!d.isSymbol()) {
      if (a.shape[i] != d.value)
        return bad(where + " is " + std::to_string(a.shape[i]) + ", the kernel expects " + std::to_string(d.value));
    } else if (Status s = binder.bind(d.symbol, a.shape[i], where); !s) {
      return s;
    }
  }
  return Status();
}

Status bindScalar(const ScalarParam &p, const ScalarArgument &a, Binder &binder) {
  if (a.type != p.type)
    return bad("argument '" + p.name + "': scalar type is " + scalarTypeName(a.type) + ", the kernel expects " +
               scalarTypeName(p.type));
  if (isIntegerScalar(p.type)) return binder.bind(p.name, a.i64, "argument '" + p.name + "'");
  return Status();
}

// Pointer, stride, alignment and contiguity checks of one bound tensor.
Status checkLayout(const TensorParam &p, const TensorArgument &a) {
  const std::string arg = "argument '" + p.name + "'";
  for (int i = 0; i < a.rank; ++i)
    if (a.stride[i] < 0)
      return bad(arg + ": stride " + std::to_string(i) + " is negative (" + std::to_string(a.stride[i]) + ")");
  if (a.elementCount() == 0) return Status(); // nothing is read or written
  // An output broadcast along a dim (stride 0, e.g. a torch expand()) would have every element of that dim written
  // by a different thread into one place: a race, so a wrong result with no error.
  if (p.direction != Direction::In)
    for (int i = 0; i < a.rank; ++i)
      if (a.shape[i] > 1 && a.stride[i] == 0)
        return bad(arg + ": stride " + std::to_string(i) + " is 0 over " + std::to_string(a.shape[i]) +
                   " elements; an output must not repeat elements (pass a tensor of its own, not a broadcast view)");
  if (!a.data) return bad(arg + ": null data pointer for a tensor of shape " + shapeText(a));
  int64_t align = p.requiredAlignment();
  auto address = reinterpret_cast<uintptr_t>(a.data);
  if (address % uint64_t(align) != 0) {
    std::ostringstream os;
    os << arg << ": data pointer " << a.data << " is not aligned to " << align << " bytes";
    return bad(os.str());
  }
  int last = a.rank - 1;
  if (p.contiguous && last >= 0 && a.shape[last] > 1 && a.stride[last] != 1)
    return bad(arg + ": the last dim must be contiguous (stride 1) but its stride is " +
               std::to_string(a.stride[last]));
  if (p.index32) {
    int64_t reach = 0;  // (the sizes' 64-bit offsets were checked when the argument was set)
    for (int i = 0; i <= last; ++i) reach += (a.shape[i] - 1) * a.stride[i];
    if (reach > INT32_MAX)
      return bad(arg + ": shape " + shapeText(a) + " spans " + std::to_string(reach + 1) +
                 " elements; the kernels index this tensor (a modifier's) in 32 bits: at most 2^31");
  }
  if (p.strideMultiple > 1)
    for (int i = 0; i < last; ++i)
      if (a.shape[i] > 1 && a.stride[i] % p.strideMultiple != 0) {
        const int64_t m = p.strideMultiple, padded = (a.stride[i] / m + 1) * m;  // (strides: below INT64_MAX / 8)
        std::string msg = arg + ": stride " + std::to_string(i) + " is " + std::to_string(a.stride[i]) +
                          ", the kernel needs a multiple of " + std::to_string(m) + " elements (" +
                          std::to_string(m * dtypeSize(a.dtype)) + "-byte aligned rows)";
        // Any width is fine; only the rows' distance must be whole 16 bytes.
        if (i == last - 1)
          msg += "; pad the rows, not the width: store them " + std::to_string(padded) +
                 " elements apart (e.g. allocate the last dim as " + std::to_string(padded) +
                 " and pass a view of its first " + std::to_string(a.shape[last]) + " columns)";
        return bad(msg);
      }
  return Status();
}

int tmaDataType(DType t) {
  switch (t) {
  case DType::BF16: return tma::BFloat16;
  case DType::F16: return tma::Float16;
  case DType::F32: return tma::Float32;
  case DType::I32: return tma::Int32;
  }
  return tma::Float32;
}

int tmaSwizzle(TensorMapSwizzle s) {
  switch (s) {
  case TensorMapSwizzle::None: return tma::SwizzleNone;
  case TensorMapSwizzle::B32: return tma::Swizzle32B;
  case TensorMapSwizzle::B64: return tma::Swizzle64B;
  case TensorMapSwizzle::B128: return tma::Swizzle128B;
  }
  return tma::SwizzleNone;
}

// The driver's limits (cuTensorMapEncodeTiled): dims at most 2^32, strides
// multiples of 16 bytes below 2^40, base address 16-byte aligned.
constexpr uint64_t kTmaMaxDim = uint64_t(1) << 32;
constexpr int64_t kTmaStrideLimit = int64_t(1) << 40;
constexpr int64_t kTmaAlign = 16;

// Derives the cuTensorMapEncodeTiled arguments of tensor map `m` from its
// tensor's bound argument, and checks in the user's terms what the TMA unit
// needs. The address is filled in by encodeTensorMaps (scratch is allocated
// after planning); a user tensor's alignment is checked here.
Result<TensorMapEncoding> planTensorMap(const KernelSpec &k, const TensorMapParam &m, const TensorParam &p,
                                        const TensorArgument &a, bool isScratch) {
  const std::string arg = "argument '" + p.name + "'";
  const std::string need = ", which the TMA load of kernel '" + k.name + "' (tensor map '" + m.name + "') needs";
  const int rank = a.rank;
  const int64_t esize = dtypeSize(p.dtype);
  if (rank < 1 || rank > tma::kMaxRank || int(m.box.size()) != rank)
    return makeError(ErrorCode::InvalidBundle, "kernel '" + k.name + "': tensor map '" + m.name + "' does not fit tensor '" +
                                                   p.name + "' (rank " + std::to_string(rank) + ")");
  for (int i = 0; i < rank; ++i)
    if (a.shape[i] == 0) {  // no element to load: an all-zero parameter (TensorMapEncoding::empty)
      TensorMapEncoding none;
      none.empty = true;
      return none;
    }
  for (int i = 0; i < rank; ++i) {
    if (a.shape[i] < 1)
      return bad(arg + ": dim " + std::to_string(i) + " is " + std::to_string(a.shape[i]) +
                 "; every dim must be at least 1" + need);
    if (uint64_t(a.shape[i]) > kTmaMaxDim)
      return bad(arg + ": dim " + std::to_string(i) + " is " + std::to_string(a.shape[i]) + ", more than 2^32" + need);
  }
  const int inner = rank - 1;
  if (a.shape[inner] > 1 && a.stride[inner] != 1)
    return bad(arg + ": the last dim's stride is " + std::to_string(a.stride[inner]) +
               " elements; it must be 1 (contiguous)" + need);
  if (!isScratch && reinterpret_cast<uintptr_t>(a.data) % kTmaAlign != 0) {
    std::ostringstream os;
    os << arg << ": data pointer " << a.data << " is not aligned to 16 bytes" << need;
    return bad(os.str());
  }
  // Byte strides of the outer dims (manifest order). A dim of size 1 is only
  // ever read at coordinate 0, so its stride is irrelevant; it gets the
  // extent of the dims inside it, which keeps the driver's checks happy.
  std::array<int64_t, tma::kMaxRank> bytes{};
  int64_t innerExtent = a.shape[inner] * esize;
  for (int i = inner - 1; i >= 0; --i) {
    if (a.shape[i] == 1) {
      bytes[i] = std::min((std::max<int64_t>(innerExtent, 1) + 15) / 16 * 16, kTmaStrideLimit - 16);
    } else {
      int64_t b = 0;
      if (__builtin_mul_overflow(a.stride[i], esize, &b) || b >= kTmaStrideLimit)
        return bad(arg + ": stride " + std::to_string(i) + " is " + std::to_string(a.stride[i]) +
                   " elements, 2^40 bytes or more" + need);
      if (b == 0)
        return bad(arg + ": stride " + std::to_string(i) + " is 0 (a broadcast dim of size " +
                   std::to_string(a.shape[i]) + "); the TMA load of kernel '" + k.name + "' (tensor map '" + m.name +
                   "') reads only strided memory");
      if (b % kTmaAlign != 0)
        return bad(arg + ": stride " + std::to_string(i) + " is " + std::to_string(a.stride[i]) + " elements (" +
                   std::to_string(b) + " bytes), not a multiple of 16 bytes" + need);
      bytes[i] = b;
    }
    int64_t extent = 0;
    innerExtent = __builtin_mul_overflow(bytes[i], a.shape[i], &extent) ? kTmaStrideLimit : extent;
  }
  TensorMapEncoding e;
  e.dataType = tmaDataType(p.dtype);
  e.rank = uint32_t(rank);
  e.address = a.data;
  for (int j = 0; j < rank; ++j) {
    e.dims[j] = uint64_t(a.shape[inner - j]);
    e.box[j] = uint32_t(m.box[inner - j]);
    e.elementStrides[j] = 1;
  }
  for (int j = 0; j < inner; ++j) e.strides[j] = uint64_t(bytes[inner - 1 - j]);
  e.swizzle = tmaSwizzle(m.swizzle);
  return e;
}

std::string symbolValues(const Expr &e, const SymbolTable &values) {
  std::set<std::string> used;
  e.collectSymbols(used);
  std::string s;
  for (const auto &u : used) {
    auto it = values.find(u);
    s += (s.empty() ? "" : ", ") + u + "=" + (it == values.end() ? "?" : std::to_string(it->second));
  }
  return s;
}

// Unknown or misplaced arguments: each given argument must be a parameter.
Status checkNoStrayArguments(const Arguments &args, const std::set<std::string> &params,
                             const std::set<std::string> &scratch, const std::string &what,
                             const std::map<std::string, std::string> &tensorMaps) {
  auto check = [&](const std::string &name) -> Status {
    if (!params.count(name) && tensorMaps.count(name))
      return bad("argument '" + name + "' is a tensor map that the runtime derives from tensor '" +
                 tensorMaps.at(name) + "' of " + what + "; do not pass it");
    if (scratch.count(name))
      return bad("argument '" + name + "' is scratch that the runtime allocates for " + what + "; do not pass it");
    if (!params.count(name)) return bad("unknown argument '" + name + "': " + what + " has no such parameter");
    return Status();
  };
  for (const auto &[name, t] : args.tensors())
    if (Status s = check(name); !s) return s;
  for (const auto &[name, v] : args.scalars())
    if (Status s = check(name); !s) return s;
  return Status();
}

Status bindAll(const KernelSpec &k, const Arguments &args, Binder &binder, const std::set<std::string> &scratch) {
  for (const auto &p : k.tensors) {
    if (scratch.count(p.name)) continue;
    auto it = args.tensors().find(p.name);
    if (it == args.tensors().end()) {
      if (args.scalars().count(p.name)) return bad("argument '" + p.name + "' must be a " + paramText(p) + ", not a scalar");
      return bad("missing argument '" + p.name + "' (" + paramText(p) + ") of kernel '" + k.name + "'");
    }
    if (Status s = bindTensor(p, it->second, binder); !s) return s;
  }
  for (const auto &p : k.scalars) {
    auto it = args.scalars().find(p.name);
    if (it == args.scalars().end()) {
      if (args.tensors().count(p.name)) return bad("argument '" + p.name + "' must be a scalar " + std::string(scalarTypeName(p.type)) + ", not a tensor");
      return bad("missing argument '" + p.name + "' (scalar " + scalarTypeName(p.type) + ") of kernel '" + k.name + "'");
    }
    if (Status s = bindScalar(p, it->second, binder); !s) return s;
  }
  return Status();
}

// Validation and packing once every symbol is bound. `scratchArgs` holds the
// runtime-allocated tensors (data filled in later).
// The expressions also see the device's multiprocessor count (a persistent grid).
void bindSmCount(Binder &binder, const DeviceLimits &limits) {
  binder.values[kSymbolSmCount] = limits.multiprocessors;
}

// `binder` holds num_sms too (bindSmCount).
Result<KernelLaunch> finishKernel(const KernelSpec &k, const Arguments &args,
                                  const std::map<std::string, TensorArgument> &scratchArgs,
                                  const Binder &binder, const DeviceLimits &limits) {
  const std::string who = "kernel '" + k.name + "'";
  KernelLaunch launch;
  launch.kernel = &k;
  std::vector<const TensorArgument *> bound;
  for (const auto &p : k.tensors) {
    auto sc = scratchArgs.find(p.name);
    bool isScratch = sc != scratchArgs.end();
    const TensorArgument &a = isScratch ? sc->second : args.tensors().at(p.name);
    bound.push_back(&a);
    if (!isScratch)
      if (Status s = checkLayout(p, a); !s) return s.error();
    PackedTensorArg packed{};
    packed.data = a.data;
    for (int i = 0; i < 4; ++i) {
      packed.shape[i] = i < a.rank ? a.shape[i] : 1;
      packed.stride[i] = i < a.rank ? a.stride[i] : 0;
    }
    launch.tensors.push_back(packed);
    launch.tensorIsScratch.push_back(isScratch);
  }
  for (const auto &p : k.scalars) {
    const ScalarArgument &a = args.scalars().at(p.name);
    uint64_t slot = 0;
    if (p.type == ScalarType::F32) std::memcpy(&slot, &a.f32, sizeof(float));
    else if (p.type == ScalarType::I32) std::memcpy(&slot, &a.i32, sizeof(int32_t));
    else std::memcpy(&slot, &a.i64, sizeof(int64_t));
    launch.scalars.push_back(slot);
  }
  for (const auto &c : k.constraints) {
    auto v = c.expr.evaluate(binder.values);
    if (!v) return bad(who + ": " + v.message());
    if (*v != 0) continue;
    // The compiler's message says it in the caller's terms (a table shorter than the index it is read at); the
    // generic one names the requirement and its symbols.
    if (!c.message.empty())
      if (auto text = c.explain(binder.values)) return bad(*text);
    return bad(who + ": requirement '" + c.expr.str() + "' does not hold (" + symbolValues(c.expr, binder.values) +
               ")");
  }
  static const char *axis[] = {"x", "y", "z"};
  int64_t threads = 1;
  for (int i = 0; i < 3; ++i) {
    auto b = k.block[i].evaluate(binder.values);
    if (!b) return bad(who + ": block " + axis[i] + ": " + b.message());
    if (*b < 1 || *b > limits.maxBlock[i])
      return bad(who + ": block " + axis[i] + " = " + std::to_string(*b) + " is outside 1.." +
                 std::to_string(limits.maxBlock[i]));
    threads *= *b;
    launch.block[i] = uint32_t(*b);
  }
  if (threads > limits.maxThreadsPerBlock)
    return bad(who + ": " + std::to_string(threads) + " threads per block exceed the device limit " +
               std::to_string(limits.maxThreadsPerBlock));
  for (int i = 0; i < 3; ++i) {
    auto g = k.grid[i].evaluate(binder.values);
    if (!g) return bad(who + ": grid " + axis[i] + ": " + g.message());
    if (*g < 0) return bad(who + ": grid " + axis[i] + " = " + std::to_string(*g) + " is negative (" + symbolValues(k.grid[i], binder.values) + ")");
    if (*g > limits.maxGrid[i])
      return bad(who + ": grid " + axis[i] + " = " + std::to_string(*g) + " exceeds the device limit " +
                 std::to_string(limits.maxGrid[i]) + " (" + symbolValues(k.grid[i], binder.values) + ")");
    if (*g == 0) launch.skip = true;
    launch.grid[i] = uint32_t(*g);
  }
  auto shared = k.sharedBytes.evaluate(binder.values);
  if (!shared) return bad(who + ": shared: " + shared.message());
  if (*shared < 0) return bad(who + ": dynamic shared memory of " + std::to_string(*shared) + " bytes is negative");
  if (*shared > limits.maxDynamicSharedBytes)
    return bad(who + " needs " + std::to_string(*shared) + " bytes of dynamic shared memory; the device allows at most " +
               std::to_string(limits.maxDynamicSharedBytes) + " per block");
  launch.sharedBytes = uint32_t(*shared);
  // Tensor maps last: a skipped launch (an empty grid) needs none, and its
  // tensors may well have empty dims that no tensor map can describe.
  if (!launch.skip)
    for (const auto &m : k.tensorMaps) {
      size_t idx = 0;
      while (idx < k.tensors.size() && k.tensors[idx].name != m.tensor) ++idx;
      if (idx == k.tensors.size())
        return makeError(ErrorCode::InvalidBundle, who + ": tensor map '" + m.name + "' of unknown tensor '" + m.tensor + "'");
      auto e = planTensorMap(k, m, k.tensors[idx], *bound[idx], launch.tensorIsScratch[idx]);
      if (!e) return e.error();
      launch.tensorMapPlans.push_back({idx, *e});
    }
  return launch;
}

void addTensorMapNames(const KernelSpec &k, std::map<std::string, std::string> &out) {
  for (const auto &m : k.tensorMaps) out.emplace(m.name, m.tensor);
}

std::set<std::string> paramNames(const KernelSpec &k) {
  std::set<std::string> names;
  for (const auto &t : k.tensors) names.insert(t.name);
  for (const auto &s : k.scalars) names.insert(s.name);
  return names;
}

} // namespace

Result<KernelLaunch> planKernelLaunch(const KernelSpec &kernel, const Arguments &args, const DeviceLimits &limits) {
  std::map<std::string, std::string> tensorMaps;
  addTensorMapNames(kernel, tensorMaps);
  if (Status s = checkNoStrayArguments(args, paramNames(kernel), {}, "kernel '" + kernel.name + "'", tensorMaps); !s)
    return s.error();
  Binder binder;
  if (Status s = bindAll(kernel, args, binder, {}); !s) return s.error();
  bindSmCount(binder, limits);  // (before the expressions: a dim may be written over num_sms)
  if (Status s = binder.checkExpressions(); !s) return s.error();
  return finishKernel(kernel, args, {}, binder, limits);
}

Result<ProgramLaunch> planProgramLaunch(const Manifest &manifest, const ProgramSpec &program,
                                        const Arguments &args, const DeviceLimits &limits,
                                        const std::map<std::string, DeviceLimits> *kernelLimits) {
  const std::string what = "program '" + program.name + "'";
  std::vector<const KernelSpec *> kernels;
  std::set<std::string> params, scratchNames;
  std::map<std::string, std::string> tensorMaps;
  for (const auto &kn : program.kernels) {
    const KernelSpec *k = manifest.findKernel(kn);
    if (!k) return makeError(ErrorCode::InvalidBundle, what + ": unknown kernel '" + kn + "'");
    kernels.push_back(k);
    for (const auto &n : paramNames(*k)) params.insert(n);
    addTensorMapNames(*k, tensorMaps);
  }
  for (const auto &s : program.scratch) scratchNames.insert(s.name);
  if (Status s = checkNoStrayArguments(args, params, scratchNames, what, tensorMaps); !s) return s.error();

  // Pass 1: bind every symbol from the user's arguments across all kernels.
  Binder binder;
  for (const KernelSpec *k : kernels)
    if (Status s = bindAll(*k, args, binder, scratchNames); !s) return s.error();
  // The same device for every kernel of the program (scratch sizes and the caller's dims may use it).
  bindSmCount(binder, limits);
  if (Status s = binder.checkExpressions(); !s) return s.error();

  // Pass 2: shapes of the scratch tensors: row-major, rows padded to the
  // stride multiple the kernels ask for (16 bytes for tiled copies), so that a
  // width which is not a multiple of 16 bytes (an FFN hidden width of 1001
  // bf16) still gives aligned rows; the padding columns are never read.
  ProgramLaunch launch;
  launch.program = &program;
  std::map<std::string, TensorArgument> scratchArgs;
  for (const auto &sc : program.scratch) {
    const TensorParam *p = nullptr;
    int64_t multiple = 1;
    for (const KernelSpec *k : kernels)
      if (const TensorParam *q = k->findTensor(sc.name)) {
        if (!p) p = q;
        multiple = std::max(multiple, q->strideMultiple);
      }
    TensorArgument t;
    t.dtype = p->dtype;
    t.rank = int(p->dims.size());
    bool empty = false;
    for (int i = 0; i < t.rank; ++i) {
      auto size = p->dims[i].evaluate(binder.values);
      if (!size) return bad(what + ": scratch '" + sc.name + "' dim " + std::to_string(i) + ": " + size.error().message);
      t.shape[i] = *size;
      empty = empty || t.shape[i] <= 0;
    }
    int64_t stride = 1, bytes = 0;
    for (int i = t.rank - 1; i >= 0; --i) {
      t.stride[i] = stride;
      int64_t extent = t.shape[i] > 1 ? t.shape[i] : 1;
      if (i == t.rank - 1 && t.rank >= 2 && extent % multiple != 0)
        extent += multiple - extent % multiple;
      if (__builtin_mul_overflow(stride, extent, &stride))
        return bad(what + ": scratch '" + sc.name + "' size overflows");
    }
    if (!empty && __builtin_mul_overflow(stride, dtypeSize(t.dtype), &bytes))
      return bad(what + ": scratch '" + sc.name + "' size overflows");
    scratchArgs[sc.name] = t;
    launch.scratch.push_back({sc.name, bytes, sc.zeroFill});
  }

  // Pass 3: validate and pack each kernel; shapes of the scratch tensors must
  // match every kernel that uses them (same symbols, so they do by construction
  // unless a literal dim disagrees).
  for (const KernelSpec *k : kernels) {
    for (const auto &p : k->tensors)
      if (scratchNames.count(p.name))
        if (Status s = bindTensor(p, scratchArgs[p.name], binder); !s) return s.error();
    if (Status s = binder.checkExpressions(); !s) return s.error();
    const DeviceLimits *own = nullptr;
    if (kernelLimits) {
      auto it = kernelLimits->find(k->name);
      if (it != kernelLimits->end()) own = &it->second;
    }
    auto kl = finishKernel(*k, args, scratchArgs, binder, own ? *own : limits);
    if (!kl) return kl.error();
    launch.kernels.push_back(*kl);
  }
  return launch;
}

Status encodeTensorMaps(KernelLaunch &launch, TensorMapCache &cache) {
  const KernelSpec &k = *launch.kernel;
  launch.tensorMaps.assign(launch.tensorMapPlans.size(), TensorMapValue{});
  for (size_t i = 0; i < launch.tensorMapPlans.size(); ++i) {
    const auto &plan = launch.tensorMapPlans[i];
    const TensorMapParam &m = k.tensorMaps[i];
    TensorMapEncoding e = plan.encoding;
    if (e.empty)
      continue;  // stays all zero: the kernel never loads from an empty tensor
    e.address = launch.tensors[plan.tensor].data;
    const std::string who = "kernel '" + k.name + "': tensor map '" + m.name + "' of tensor '" + m.tensor + "'";
    if (reinterpret_cast<uintptr_t>(e.address) % kTmaAlign != 0) {
      std::ostringstream os;
      os << who << ": data pointer " << e.address << " is not aligned to 16 bytes";
      return bad(os.str());
    }
    if (Status s = cache.get(e, launch.tensorMaps[i]); !s) {
      Error err = s.error();
      err.message = who + ": " + err.message;
      return err;
    }
  }
  return Status();
}

Result<std::vector<int64_t>> resolveParamShape(const Manifest &manifest, const std::string &entryName,
                                               const std::string &param, const Arguments &args) {
  std::vector<const KernelSpec *> kernels;
  if (const KernelSpec *k = manifest.findKernel(entryName)) {
    kernels.push_back(k);
  } else if (const ProgramSpec *p = manifest.findProgram(entryName)) {
    for (const auto &kn : p->kernels)
      if (const KernelSpec *k = manifest.findKernel(kn)) kernels.push_back(k);
  } else {
    return makeError(ErrorCode::NotFound, "no kernel or program named '" + entryName + "'");
  }
  const TensorParam *target = nullptr;
  for (const KernelSpec *k : kernels)
    if (!target) target = k->findTensor(param);
  if (!target) return makeError(ErrorCode::NotFound, "'" + entryName + "' has no tensor parameter '" + param + "'");
  // Bind what the given arguments determine (inconsistencies are reported).
  Binder binder;
  for (const KernelSpec *k : kernels) {
    for (const auto &p : k->tensors) {
      auto it = args.tensors().find(p.name);
      if (it != args.tensors().end())
        if (Status s = bindTensor(p, it->second, binder); !s) return s.error();
    }
    for (const auto &p : k->scalars) {
      auto it = args.scalars().find(p.name);
      if (it != args.scalars().end())
        if (Status s = bindScalar(p, it->second, binder); !s) return s.error();
    }
  }
  std::vector<int64_t> shape;
  for (const auto &d : target->dims) {
    auto size = d.evaluate(binder.values);
    if (!size) {
      std::set<std::string> used;
      if (d.isExpression()) d.expr.collectSymbols(used);
      if (used.count(kSymbolSmCount))  // (a launch binds it from its device; a shape query has none)
        return bad("shape of '" + param + "': " + d.str() + " depends on " + kSymbolSmCount +
                   ", the device's multiprocessor count, which a shape query does not know");
      return bad("shape of '" + param + "': " + (d.isSymbol() ? "symbol " : "") + d.str() +
                 " is not bound by the arguments given so far");
    }
    if (*size < 0)  // (a launch would refuse these arguments; the caller would otherwise allocate from it)
      return bad("shape of '" + param + "': " + d.str() + " = " + std::to_string(*size) +
                 " with the arguments given so far (a size must not be negative)");
    shape.push_back(*size);
  }
  return shape;
}

std::vector<TensorBytes> callerTensorBytes(const KernelLaunch *launches, size_t count) {
  // (At every launch: a linear search over a program's few names, no map, no allocation but the result.)
  std::vector<TensorBytes> out;
  std::vector<const std::string *> seen;  // every name met, with or without bytes
  for (size_t l = 0; l < count; ++l) {
    const KernelLaunch &launch = launches[l];
    for (size_t i = 0; i < launch.tensors.size(); ++i) {
      if (launch.tensorIsScratch[i]) continue;
      const TensorParam &p = launch.kernel->tensors[i];
      const bool written = p.direction != Direction::In;
      if (std::any_of(seen.begin(), seen.end(), [&](const std::string *n) { return *n == p.name; })) {
        for (TensorBytes &b : out)
          if (*b.name == p.name) b.written = b.written || written;
        continue;
      }
      seen.push_back(&p.name);
      const PackedTensorArg &t = launch.tensors[i];
      const int rank = int(p.dims.size());
      bool empty = !t.data;
      for (int d = 0; d < rank; ++d) empty = empty || t.shape[d] <= 0;
      if (empty) continue;
      // Furthest element (planKernelLaunch refused negative strides and offsets past 2^63 bytes), and whether the
      // dims with more than one element, by increasing stride, each start where the last ends.
      const uint64_t size = uint64_t(dtypeSize(p.dtype));
      uint64_t furthest = 0, step = 0;
      std::pair<int64_t, int64_t> byStride[kMaxTensorRank];  // (stride, size) of the dims with more than one element
      int dims = 0;
      for (int d = 0; d < rank; ++d)
        if (t.shape[d] > 1) {
          furthest += uint64_t(t.shape[d] - 1) * uint64_t(t.stride[d]);
          step = std::max(step, uint64_t(t.stride[d]) * size);
          byStride[dims++] = {t.stride[d], t.shape[d]};
        }
      std::sort(byStride, byStride + dims);
      bool dense = true;
      int64_t next = 1;
      for (int d = 0; d < dims; ++d) {
        dense = dense && byStride[d].first == next;
        next = byStride[d].first * byStride[d].second;  // (bounded: the furthest offset fits)
      }
      TensorBytes b;
      b.name = &p.name;
      b.first = reinterpret_cast<uint64_t>(t.data);
      b.last = b.first + furthest * size + (size - 1);
      b.dense = dense;
      b.written = written;
      b.step = step;
      out.push_back(b);
    }
  }
  return out;
}

bool certainlyOverlap(const TensorBytes &a, const TensorBytes &b) {
  if (a.last < b.first || b.last < a.first) return false;
  // The bytes both ranges hold. Walking a tensor's elements from its first to its last, one index up at a time,
  // never jumps more than its step, so a range of `step` bytes inside its own holds the start of an element.
  const uint64_t shared = std::min(a.last, b.last) - std::max(a.first, b.first) + 1;
  auto holds = [](const TensorBytes &t, uint64_t at) { return t.first <= at && at <= t.last; };
  auto denseHolds = [&](const TensorBytes &dense, const TensorBytes &other) {
    return dense.dense && (holds(dense, other.first) || holds(dense, other.last) || shared >= other.step);
  };
  return a.first == b.first || denseHolds(a, b) || denseHolds(b, a);
}

Status checkCallerOverlaps(const std::vector<TensorBytes> &tensors) {
  for (size_t i = 0; i < tensors.size(); ++i)
    for (size_t j = i + 1; j < tensors.size(); ++j) {
      if (!(tensors[i].written || tensors[j].written) || !certainlyOverlap(tensors[i], tensors[j])) continue;
      // The message's subject: the workspace where it is one of the two, else a written tensor.
      const bool first = tensors[j].workspace ? false : tensors[i].workspace || tensors[i].written;
      const TensorBytes &w = first ? tensors[i] : tensors[j], &o = first ? tensors[j] : tensors[i];
      auto named = [](const TensorBytes &t) { return t.workspace ? std::string("the workspace") : "argument '" + *t.name + "'"; };
      std::ostringstream os;
      os << named(w) << " (written, bytes " << reinterpret_cast<void *>(w.first) << " to "
         << reinterpret_cast<void *>(w.last) << ") shares memory with " << named(o) << " ("
         << reinterpret_cast<void *>(o.first) << " to " << reinterpret_cast<void *>(o.last)
         << "): the kernels do not run in place, so a tensor they write may not overlap another tensor argument";
      return makeError(ErrorCode::InvalidArgument, os.str());
    }
  return Status();
}

} // namespace flashc::rt
