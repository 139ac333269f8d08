// flashc runtime C++ wrapper: header-only RAII over the C ABI (flashc.h), so
// an application needs nothing but libflashc_runtime.so and its C symbols.
// Failures throw flashc::Error (the status and flashc_last_error()'s text).
//
//   flashc::Bundle bundle = flashc::Bundle::openMemory(blob, blobSize);
//   flashc::Args args;
//   args.tensor("q", dq, FLASHC_BF16, {B, 32, S, 128}).f32("alpha", 1.5f);
//   bundle.launch("llama_block", args, stream);
//
// Thread-safety and ownership as in flashc.h: a Bundle may be shared between
// threads (it is movable, not copyable; wrap it in a shared_ptr to share), an
// Args belongs to one thread at a time.
#ifndef FLASHC_FLASHC_HPP
#define FLASHC_FLASHC_HPP

#include "flashc/flashc.h"

#include <cstdint>
#include <initializer_list>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace flashc {

/// A failed flashc call: status() is the flashc_status, what() the runtime's message.
class Error : public std::runtime_error {
public:
  Error(flashc_status status, const std::string &message) : std::runtime_error(message), status_(status) {}
  flashc_status status() const noexcept { return status_; }

private:
  flashc_status status_;
};

namespace detail {
inline void check(flashc_status s) {
  if (s != FLASHC_OK) throw Error(s, flashc_last_error());
}
} // namespace detail

/// Is a CUDA driver and device usable? (No throw: false says why in *why.)
inline bool deviceAvailable(std::string *why = nullptr) {
  if (flashc_check_device() == FLASHC_OK) return true;
  if (why) *why = flashc_last_error();
  return false;
}

inline const char *version() noexcept { return flashc_version(); }

/// Arguments of one launch: tensors (device pointers the caller owns) and scalars, by parameter name.
class Args {
public:
  Args() { detail::check(flashc_args_create(&args_)); }
  ~Args() { flashc_args_destroy(args_); }
  Args(Args &&o) noexcept : args_(std::exchange(o.args_, nullptr)) {}
  Args &operator=(Args &&o) noexcept {
    if (this != &o) {
      flashc_args_destroy(args_);
      args_ = std::exchange(o.args_, nullptr);
    }
    return *this;
  }
  Args(const Args &) = delete;
  Args &operator=(const Args &) = delete;

  /// Dense row-major when `strides` is empty; shape and strides in elements.
  Args &tensor(const char *name, void *data, flashc_dtype dtype, std::initializer_list<int64_t> shape,
               std::initializer_list<int64_t> strides = {}) {
    return tensor(name, data, dtype, std::vector<int64_t>(shape), std::vector<int64_t>(strides));
  }
  Args &tensor(const char *name, void *data, flashc_dtype dtype, const std::vector<int64_t> &shape,
               const std::vector<int64_t> &strides = {}) {
    if (!strides.empty() && strides.size() != shape.size())
      throw Error(FLASHC_ERROR_INVALID_ARGUMENT, std::string("tensor '") + name + "': " +
                                                     std::to_string(strides.size()) + " strides for rank " +
                                                     std::to_string(shape.size()));
    detail::check(flashc_args_set_tensor(args_, name, data, dtype, int(shape.size()), shape.data(),
                                         strides.empty() ? nullptr : strides.data()));
    return *this;
  }
  Args &f32(const char *name, float v) { return detail::check(flashc_args_set_f32(args_, name, v)), *this; }
  Args &i32(const char *name, int32_t v) { return detail::check(flashc_args_set_i32(args_, name, v)), *this; }
  Args &i64(const char *name, int64_t v) { return detail::check(flashc_args_set_i64(args_, name, v)), *this; }
  void clear() noexcept { flashc_args_clear(args_); }
  flashc_args get() const noexcept { return args_; }

private:
  flashc_args args_ = nullptr;
};

/// An open bundle (from a directory or from memory); closed by the destructor.
class Bundle {
public:
  static Bundle open(const std::string &dir, const flashc_open_options *options = nullptr) {
    flashc_bundle b = nullptr;
    detail::check(flashc_bundle_open_ex(dir.c_str(), options, &b));
    return Bundle(b);
  }
  /// A bundle blob (e.g. the array flashc_add_bundle(... EMBED) compiles in); the bytes are copied.
  static Bundle openMemory(const void *data, size_t size, const flashc_open_options *options = nullptr) {
    flashc_bundle b = nullptr;
    detail::check(flashc_bundle_open_memory_ex(data, size, options, &b));
    return Bundle(b);
  }

  ~Bundle() { flashc_bundle_close(bundle_); }
  Bundle(Bundle &&o) noexcept : bundle_(std::exchange(o.bundle_, nullptr)) {}
  Bundle &operator=(Bundle &&o) noexcept {
    if (this != &o) {
      flashc_bundle_close(bundle_);
      bundle_ = std::exchange(o.bundle_, nullptr);
    }
    return *this;
  }
  Bundle(const Bundle &) = delete;
  Bundle &operator=(const Bundle &) = delete;

  /// Loads or compiles the code for the current device now (else at the first launch).
  void prepare() { detail::check(flashc_bundle_prepare(bundle_)); }
  /// Launches kernel or program `name` on `stream` (cudaStream_t / CUstream; nullptr: the legacy default stream).
  /// Asynchronous: errors of the kernels themselves show at the next synchronization.
  void launch(const char *name, const Args &args, void *stream = nullptr) {
    detail::check(flashc_launch(bundle_, name, args.get(), stream));
  }
  /// Bytes of workspace program `name` needs for `args` (its scratch; 0 for a kernel).
  uint64_t workspaceBytes(const char *name, const Args &args) {
    uint64_t bytes = 0;
    detail::check(flashc_workspace_bytes(bundle_, name, args.get(), &bytes));
    return bytes;
  }
  /// launch() with the program's scratch in the caller's device memory (256-byte aligned, workspaceBytes long,
  /// kept until the launch's work on `stream` is done) instead of the runtime's pool.
  void launch(const char *name, const Args &args, void *stream, void *workspace, uint64_t workspaceBytes) {
    detail::check(flashc_launch_workspace(bundle_, name, args.get(), stream, workspace, workspaceBytes));
  }
  bool hasProgram(const char *name) const {
    int isProgram = 0;
    return flashc_bundle_lookup(bundle_, name, &isProgram) == FLASHC_OK && isProgram;
  }
  std::vector<std::string> programs() const {
    size_t n = 0;
    detail::check(flashc_bundle_program_count(bundle_, &n));
    std::vector<std::string> names;
    for (size_t i = 0; i < n; ++i) {
      const char *name = nullptr;
      detail::check(flashc_bundle_program_name(bundle_, i, &name));
      names.push_back(name);
    }
    return names;
  }
  std::vector<std::string> kernels() const {
    size_t n = 0;
    detail::check(flashc_bundle_kernel_count(bundle_, &n));
    std::vector<std::string> names;
    for (size_t i = 0; i < n; ++i) {
      const char *name = nullptr;
      detail::check(flashc_bundle_kernel_name(bundle_, i, &name));
      names.push_back(name);
    }
    return names;
  }
  /// The shape of tensor parameter `param` of `name` implied by what `args` binds so far.
  std::vector<int64_t> paramShape(const char *name, const char *param, const Args &args) const {
    int rank = 0;
    int64_t shape[4] = {0, 0, 0, 0};
    detail::check(flashc_bundle_param_shape(bundle_, name, param, args.get(), &rank, shape));
    return std::vector<int64_t>(shape, shape + rank);
  }
  flashc_bundle get() const noexcept { return bundle_; }

private:
  explicit Bundle(flashc_bundle b) : bundle_(b) {}
  flashc_bundle bundle_ = nullptr;
};

} // namespace flashc

#endif // FLASHC_FLASHC_HPP
