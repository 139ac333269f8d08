// The C ABI (flashc/flashc.h) over the C++ API.
#include "flashc/flashc.h"
#include "flashc/runtime/Runtime.h"

#include <cstring>
#include <set>
#include <mutex>

using namespace flashc::rt;

static_assert(sizeof(flashc_tensor_arg) == sizeof(PackedTensorArg), "C and C++ TensorArg mirrors agree");
static_assert(offsetof(flashc_tensor_arg, shape) == 8 && offsetof(flashc_tensor_arg, stride) == 40,
              "flashc_tensor_arg layout");

struct flashc_bundle_s {
  std::shared_ptr<Bundle> bundle;
  std::mutex stringsMutex;
  std::set<std::string> strings; // returned dim texts, each stored once (a set's nodes keep their addresses)
};
struct flashc_args_s {
  Arguments args;
};

namespace {
thread_local std::string gLastError;

flashc_status fail(ErrorCode code, const std::string &message) {
  gLastError = message;
  return static_cast<flashc_status>(code);
}
flashc_status report(const Status &s) { return s ? FLASHC_OK : fail(s.code(), s.message()); }

#define FLASHC_REQUIRE(cond, what)                                                                 \
  if (!(cond)) return fail(ErrorCode::InvalidArgument, std::string(__func__) + ": " + what)

BundleOptions toOptions(const flashc_open_options *options) {
  BundleOptions o;
  if (options) {
    if (options->cache_dir) o.cacheDir = options->cache_dir;
    o.disableCache = options->disable_cache != 0;
    o.noJit = options->no_jit == 0 ? -1 : options->no_jit > 0 ? 1 : 0;
    if (options->device_include_dir) o.deviceIncludeDir = options->device_include_dir;
  }
  return o;
}

flashc_status wrap(Result<std::shared_ptr<Bundle>> b, flashc_bundle *out) {
  if (!b) return fail(b.code(), b.message());
  *out = new flashc_bundle_s;
  (*out)->bundle = *b;
  return FLASHC_OK;
}
} // namespace

extern "C" {

const char *flashc_last_error(void) { return gLastError.c_str(); }
const char *flashc_version(void) { return runtimeVersion(); }
flashc_status flashc_check_device(void) { return report(checkDevice()); }

flashc_status flashc_bundle_open_ex(const char *dir, const flashc_open_options *options, flashc_bundle *out) {
  FLASHC_REQUIRE(dir && out, "null argument");
  *out = nullptr;
  return wrap(Bundle::open(dir, toOptions(options)), out);
}

flashc_status flashc_bundle_open_memory_ex(const void *data, size_t size, const flashc_open_options *options,
                                           flashc_bundle *out) {
  FLASHC_REQUIRE(out, "null argument");
  *out = nullptr;
  FLASHC_REQUIRE(data, "null data");
  return wrap(Bundle::openMemory(data, size, toOptions(options)), out);
}

flashc_status flashc_bundle_open_memory(const void *data, size_t size, flashc_bundle *out) {
  return flashc_bundle_open_memory_ex(data, size, nullptr, out);
}

flashc_status flashc_bundle_open(const char *dir, flashc_bundle *out) { return flashc_bundle_open_ex(dir, nullptr, out); }

void flashc_bundle_close(flashc_bundle bundle) { delete bundle; }

flashc_status flashc_bundle_prepare(flashc_bundle bundle) {
  FLASHC_REQUIRE(bundle, "null bundle");
  auto info = bundle->bundle->prepare();
  return info ? FLASHC_OK : fail(info.code(), info.message());
}

flashc_status flashc_bundle_kernel_count(flashc_bundle bundle, size_t *count) {
  FLASHC_REQUIRE(bundle && count, "null argument");
  *count = bundle->bundle->manifest().kernels.size();
  return FLASHC_OK;
}
flashc_status flashc_bundle_kernel_name(flashc_bundle bundle, size_t index, const char **name) {
  FLASHC_REQUIRE(bundle && name, "null argument");
  const auto &ks = bundle->bundle->manifest().kernels;
  FLASHC_REQUIRE(index < ks.size(), "index " + std::to_string(index) + " out of range");
  *name = ks[index].name.c_str();
  return FLASHC_OK;
}
flashc_status flashc_bundle_program_count(flashc_bundle bundle, size_t *count) {
  FLASHC_REQUIRE(bundle && count, "null argument");
  *count = bundle->bundle->manifest().programs.size();
  return FLASHC_OK;
}
flashc_status flashc_bundle_program_name(flashc_bundle bundle, size_t index, const char **name) {
  FLASHC_REQUIRE(bundle && name, "null argument");
  const auto &ps = bundle->bundle->manifest().programs;
  FLASHC_REQUIRE(index < ps.size(), "index " + std::to_string(index) + " out of range");
  *name = ps[index].name.c_str();
  return FLASHC_OK;
}
flashc_status flashc_bundle_lookup(flashc_bundle bundle, const char *name, int *is_program) {
  FLASHC_REQUIRE(bundle && name, "null argument");
  bool kernel = bundle->bundle->findKernel(name) != nullptr;
  bool program = bundle->bundle->findProgram(name) != nullptr;
  if (!kernel && !program)
    return fail(ErrorCode::NotFound, "bundle " + bundle->bundle->directory() + " has no kernel or program '" + name + "'");
  if (is_program) *is_program = program ? 1 : 0;
  return FLASHC_OK;
}

flashc_status flashc_bundle_param_count(flashc_bundle bundle, const char *name, size_t *count) {
  FLASHC_REQUIRE(bundle && name && count, "null argument");
  std::vector<CallerParam> params;
  if (!callerParams(bundle->bundle->manifest(), name, params))
    return fail(ErrorCode::NotFound, std::string("no kernel or program '") + name + "'");
  *count = params.size();
  return FLASHC_OK;
}

flashc_status flashc_bundle_param_info(flashc_bundle bundle, const char *name, size_t index, flashc_param_info *info) {
  FLASHC_REQUIRE(bundle && name && info, "null argument");
  std::vector<CallerParam> params;
  if (!callerParams(bundle->bundle->manifest(), name, params))
    return fail(ErrorCode::NotFound, std::string("no kernel or program '") + name + "'");
  FLASHC_REQUIRE(index < params.size(), "index " + std::to_string(index) + " out of range");
  std::memset(info, 0, sizeof *info);
  const CallerParam &p = params[index];
  if (p.tensor) {
    info->name = p.tensor->name.c_str();
    info->is_tensor = 1;
    info->dtype = int(p.tensor->dtype);
    info->direction = int(p.direction);
    info->rank = int(p.tensor->dims.size());
    std::lock_guard<std::mutex> lock(bundle->stringsMutex);
    for (int i = 0; i < info->rank; ++i) {
      info->dims[i] = bundle->strings.insert(p.tensor->dims[i].str()).first->c_str();
    }
  } else {
    info->name = p.scalar->name.c_str();
    info->dtype = int(p.scalar->type);
  }
  return FLASHC_OK;
}

flashc_status flashc_bundle_param_shape(flashc_bundle bundle, const char *name, const char *param, flashc_args args,
                                        int *rank, int64_t shape[4]) {
  FLASHC_REQUIRE(bundle && name && param && args && rank && shape, "null argument");
  auto s = bundle->bundle->paramShape(name, param, args->args);
  if (!s) return fail(s.code(), s.message());
  *rank = int(s->size());
  for (int i = 0; i < 4; ++i) shape[i] = i < *rank ? (*s)[i] : 1;
  return FLASHC_OK;
}

flashc_status flashc_args_create(flashc_args *out) {
  FLASHC_REQUIRE(out, "null argument");
  *out = new flashc_args_s;
  return FLASHC_OK;
}
void flashc_args_destroy(flashc_args args) { delete args; }
void flashc_args_clear(flashc_args args) {
  if (args) args->args.clear();
}

flashc_status flashc_args_set_tensor(flashc_args args, const char *name, void *data, flashc_dtype dtype, int rank,
                                     const int64_t *shape, const int64_t *strides) {
  FLASHC_REQUIRE(args && name, "null argument");
  FLASHC_REQUIRE(int(dtype) >= 0 && int(dtype) <= int(FLASHC_I32), "argument '" + std::string(name) + "': unknown dtype " + std::to_string(int(dtype)));
  return report(args->args.setTensor(name, data, static_cast<DType>(dtype), rank, shape, strides));
}
flashc_status flashc_args_set_tensors(flashc_args args, size_t count, const char *const *names,
                                      const flashc_tensor_arg *tensors, const int *dtypes, const int *ranks) {
  FLASHC_REQUIRE(args && (count == 0 || (names && tensors && dtypes && ranks)), "null argument");
  for (size_t i = 0; i < count; ++i) {
    FLASHC_REQUIRE(names[i], "null name of tensor " + std::to_string(i));
    FLASHC_REQUIRE(dtypes[i] >= 0 && dtypes[i] <= int(FLASHC_I32),
                   "argument '" + std::string(names[i]) + "': unknown dtype " + std::to_string(dtypes[i]));
    if (Status s = args->args.setTensor(names[i], tensors[i].data, static_cast<DType>(dtypes[i]), ranks[i],
                                        tensors[i].shape, tensors[i].stride);
        !s)
      return report(s);
  }
  return FLASHC_OK;
}
flashc_status flashc_args_set_f32(flashc_args args, const char *name, float value) {
  FLASHC_REQUIRE(args && name, "null argument");
  args->args.setF32(name, value);
  return FLASHC_OK;
}
flashc_status flashc_args_set_i32(flashc_args args, const char *name, int32_t value) {
  FLASHC_REQUIRE(args && name, "null argument");
  args->args.setI32(name, value);
  return FLASHC_OK;
}
flashc_status flashc_args_set_i64(flashc_args args, const char *name, int64_t value) {
  FLASHC_REQUIRE(args && name, "null argument");
  args->args.setI64(name, value);
  return FLASHC_OK;
}

flashc_status flashc_launch(flashc_bundle bundle, const char *name, flashc_args args, void *stream) {
  FLASHC_REQUIRE(bundle && name && args, "null argument");
  return report(bundle->bundle->launch(name, args->args, stream));
}

flashc_status flashc_bundle_defer_checks(flashc_bundle bundle, int defer) {
  FLASHC_REQUIRE(bundle, "null bundle");
  bundle->bundle->deferChecks(defer != 0);
  return FLASHC_OK;
}

flashc_status flashc_bundle_check_deferred(flashc_bundle bundle, int wait) {
  FLASHC_REQUIRE(bundle, "null bundle");
  return report(bundle->bundle->checkDeferred(wait != 0));
}

flashc_status flashc_workspace_bytes(flashc_bundle bundle, const char *name, flashc_args args, uint64_t *bytes) {
  FLASHC_REQUIRE(bundle && name && args && bytes, "null argument");
  auto r = bundle->bundle->workspaceBytes(name, args->args);
  if (!r) return report(r.error());
  *bytes = *r;
  return FLASHC_OK;
}

flashc_status flashc_launch_workspace(flashc_bundle bundle, const char *name, flashc_args args, void *stream,
                                      void *workspace, uint64_t workspace_bytes) {
  FLASHC_REQUIRE(bundle && name && args, "null argument");
  flashc::rt::Workspace ws{workspace, workspace_bytes};
  return report(bundle->bundle->launch(name, args->args, stream, &ws));
}

} // extern "C"
