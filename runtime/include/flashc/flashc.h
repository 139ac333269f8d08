/* flashc runtime C ABI (docs/runtime-api.md). flashc/flashc.hpp is a
 * header-only C++ RAII wrapper over it.
 *
 * Stability: functions are only ever added; existing signatures, enum values
 * and struct layouts do not change within a major version (the library's
 * SONAME is libflashc_runtime.so.0).
 *
 * Errors: every fallible function returns a flashc_status; on failure
 * flashc_last_error() gives this thread's message, a sentence naming the
 * bundle, program, parameter or file concerned. The string is owned by the
 * runtime and stays valid until this thread's next failing call.
 *
 * Threads: every function may be called from any thread. A flashc_bundle may
 * be shared: opening, queries, prepare and launch on one bundle from several
 * threads at once are safe (the runtime locks what it caches). A flashc_args
 * is not: use one per thread, or one at a time (it is only read during a
 * launch). Close a bundle only when no other thread uses it.
 *
 * Ownership: a handle created by an open/create call belongs to the caller,
 * who frees it with the matching close/destroy (NULL is accepted there). Strings
 * returned through a bundle (names, dims) belong to the bundle and live until
 * it is closed. The runtime never frees or keeps caller memory: open copies
 * what it reads (a directory's files, a blob's bytes), args record device
 * pointers and values, and the device memory stays the caller's. */
#ifndef FLASHC_FLASHC_H
#define FLASHC_FLASHC_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum flashc_status {
  FLASHC_OK = 0,
  FLASHC_ERROR_INVALID_ARGUMENT = 1,
  FLASHC_ERROR_INVALID_BUNDLE = 2,
  FLASHC_ERROR_NO_DRIVER = 3,
  FLASHC_ERROR_NO_DEVICE = 4,
  FLASHC_ERROR_COMPILE = 5,
  FLASHC_ERROR_CUDA = 6,
  FLASHC_ERROR_NOT_FOUND = 7,
  FLASHC_ERROR_UNSUPPORTED = 8,
  FLASHC_ERROR_INTERNAL = 9
} flashc_status;

typedef enum flashc_dtype { FLASHC_BF16 = 0, FLASHC_F16 = 1, FLASHC_F32 = 2, FLASHC_I32 = 3 } flashc_dtype;
typedef enum flashc_scalar_type { FLASHC_SCALAR_F32 = 0, FLASHC_SCALAR_I32 = 1, FLASHC_SCALAR_I64 = 2 } flashc_scalar_type;
typedef enum flashc_direction { FLASHC_IN = 0, FLASHC_OUT = 1, FLASHC_INOUT = 2 } flashc_direction;

/* The kernel ABI's tensor argument (docs/architecture.md): passed by value,
 * strides in elements, dims past the rank have shape 1 and stride 0. */
typedef struct flashc_tensor_arg {
  void *data;
  int64_t shape[4];
  int64_t stride[4];
} flashc_tensor_arg;

#if defined(__cplusplus)
static_assert(sizeof(flashc_tensor_arg) == 72, "flashc_tensor_arg is 72 bytes");
#elif defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L
_Static_assert(sizeof(flashc_tensor_arg) == 72, "flashc_tensor_arg is 72 bytes");
#endif

typedef struct flashc_bundle_s *flashc_bundle;
typedef struct flashc_args_s *flashc_args;

/* Options for flashc_bundle_open_ex; zero-initialise, then set what you need. */
typedef struct flashc_open_options {
  const char *cache_dir;          /* NULL: FLASHC_CACHE_DIR, $XDG_CACHE_HOME/flashc, ~/.cache/flashc */
  int disable_cache;              /* non-zero: no disk cache */
  int no_jit;                     /* 0: from FLASHC_NO_JIT; 1: cubins only; -1: JIT allowed regardless */
  const char *device_include_dir; /* NULL: FLASHC_DEVICE_INCLUDE, installed, source tree */
} flashc_open_options;

/* Parameter description (for bindings that allocate outputs). */
typedef struct flashc_param_info {
  const char *name;
  int is_tensor;
  int dtype;      /* flashc_dtype when is_tensor, else flashc_scalar_type */
  int direction;  /* flashc_direction (tensors) */
  int rank;
  const char *dims[4]; /* each a symbol or a decimal literal */
} flashc_param_info;

const char *flashc_last_error(void);
const char *flashc_version(void);
/* FLASHC_OK when a driver and a device are usable; else NO_DRIVER / NO_DEVICE. */
flashc_status flashc_check_device(void);

flashc_status flashc_bundle_open(const char *dir, flashc_bundle *out);
flashc_status flashc_bundle_open_ex(const char *dir, const flashc_open_options *options, flashc_bundle *out);
/* Opens a bundle blob (docs/bundle.md, "Bundle blob": a whole bundle in one
 * buffer, made by flashc-pack or flashc_add_bundle(... EMBED)), e.g. one
 * compiled into the executable. Checked (size, checksum, sections), then
 * validated as a directory is; a damaged blob is FLASHC_ERROR_INVALID_BUNDLE.
 * The bytes are copied: `data` may be freed after the call. */
flashc_status flashc_bundle_open_memory(const void *data, size_t size, flashc_bundle *out);
flashc_status flashc_bundle_open_memory_ex(const void *data, size_t size, const flashc_open_options *options,
                                           flashc_bundle *out);
void flashc_bundle_close(flashc_bundle bundle);
/* Compile/load for the current device now (optional; launches do it lazily). */
flashc_status flashc_bundle_prepare(flashc_bundle bundle);

flashc_status flashc_bundle_kernel_count(flashc_bundle bundle, size_t *count);
flashc_status flashc_bundle_kernel_name(flashc_bundle bundle, size_t index, const char **name);
flashc_status flashc_bundle_program_count(flashc_bundle bundle, size_t *count);
flashc_status flashc_bundle_program_name(flashc_bundle bundle, size_t index, const char **name);
/* FLASHC_OK if `name` is a kernel (*is_program = 0) or program (*is_program = 1), else NOT_FOUND. */
flashc_status flashc_bundle_lookup(flashc_bundle bundle, const char *name, int *is_program);
/* Parameters of a kernel or program (a program's: the union by name, minus scratch). */
flashc_status flashc_bundle_param_count(flashc_bundle bundle, const char *name, size_t *count);
flashc_status flashc_bundle_param_info(flashc_bundle bundle, const char *name, size_t index, flashc_param_info *info);
/* Shape of tensor parameter `param` implied by the arguments bound so far. */
flashc_status flashc_bundle_param_shape(flashc_bundle bundle, const char *name, const char *param, flashc_args args,
                                        int *rank, int64_t shape[4]);

flashc_status flashc_args_create(flashc_args *out);
void flashc_args_destroy(flashc_args args);
void flashc_args_clear(flashc_args args);
/* strides may be NULL (dense row-major); shape/strides in elements. */
flashc_status flashc_args_set_tensor(flashc_args args, const char *name, void *data, flashc_dtype dtype, int rank,
                                     const int64_t *shape, const int64_t *strides);
/* Sets `count` tensor arguments in one call (what a binding calls a launch): names[i] with dtypes[i] and the
 * data, shape and strides of tensors[i], of which the first ranks[i] dims count (strides in elements). Each is
 * checked as flashc_args_set_tensor checks it; the first that fails stops the call (those before it are set). */
flashc_status flashc_args_set_tensors(flashc_args args, size_t count, const char *const *names,
                                      const flashc_tensor_arg *tensors, const int *dtypes, const int *ranks);
flashc_status flashc_args_set_f32(flashc_args args, const char *name, float value);
flashc_status flashc_args_set_i32(flashc_args args, const char *name, int32_t value);
flashc_status flashc_args_set_i64(flashc_args args, const char *name, int64_t value);

/* Validates and launches kernel or program `name` on `stream` (CUstream /
 * cudaStream_t; NULL = legacy default stream). Asynchronous. */
flashc_status flashc_launch(flashc_bundle bundle, const char *name, flashc_args args, void *stream);
/* Programs that check their inputs on the device (decode's cache lengths and pages, packed sequences' offsets)
 * report a bad entry as the launch's error, waiting for the program. defer != 0: the launch returns at once and a
 * bad entry is the error of this bundle's next program launch (not made then) or of
 * flashc_bundle_check_deferred (wait != 0: for every deferred launch). The bad launch's kernels write nothing. */
flashc_status flashc_bundle_defer_checks(flashc_bundle bundle, int defer);
flashc_status flashc_bundle_check_deferred(flashc_bundle bundle, int wait);

/* Bytes of workspace program `name` needs for `args` on the current device (its scratch tensors at 256-byte aligned
 * offsets; 0 for a kernel or a program without scratch). */
flashc_status flashc_workspace_bytes(flashc_bundle bundle, const char *name, flashc_args args, uint64_t *bytes);
/* flashc_launch with the program's scratch taken from `workspace`: device memory of the current device, 256-byte
 * aligned, at least flashc_workspace_bytes long, that the caller keeps until the launch's work on `stream` is done
 * (a framework's caching allocator). INVALID_ARGUMENT, nothing launched, when the program needs scratch and the
 * workspace is null, misaligned, too small, its first or last byte is not device memory of this device, or the
 * bytes the scratch uses overlap a tensor argument. A kernel, or a program without scratch, ignores it. */
flashc_status flashc_launch_workspace(flashc_bundle bundle, const char *name, flashc_args args, void *stream,
                                      void *workspace, uint64_t workspace_bytes);

#ifdef __cplusplus
}
#endif

#endif /* FLASHC_FLASHC_H */
