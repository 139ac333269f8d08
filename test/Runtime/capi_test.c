/* The C ABI, compiled as C: bundle inspection, argument binding and the
 * no-driver path (ctest points FLASHC_DRIVER_LIBRARY at a missing library, so
 * this holds on GPU machines too). */
#include "flashc/flashc.h"

#include <stdio.h>
#include <string.h>

static int failures = 0, checks = 0;

static void check(int ok, const char *what) {
  ++checks;
  printf("%s %s\n", ok ? "ok  " : "FAIL", what);
  if (!ok) {
    ++failures;
    printf("     last error: %s\n", flashc_last_error());
  }
}

static int has(const char *haystack, const char *needle) { return strstr(haystack, needle) != NULL; }

int main(void) {
  check(flashc_version() && strlen(flashc_version()) > 0, "flashc_version");
  check(flashc_check_device() == FLASHC_ERROR_NO_DRIVER, "flashc_check_device reports NO_DRIVER");
  check(has(flashc_last_error(), "no CUDA driver (libcuda.so.1 not found)"), "... with the message 'no CUDA driver (libcuda.so.1 not found)'");

  flashc_bundle bundle = NULL;
  check(flashc_bundle_open(FLASHC_TEST_BUNDLES_DIR "/missing", &bundle) == FLASHC_ERROR_NOT_FOUND && bundle == NULL,
        "opening a missing directory: NOT_FOUND");
  check(has(flashc_last_error(), "does not exist"), "... message says the directory does not exist");
  check(flashc_bundle_open(FLASHC_TEST_BUNDLES_DIR "/bad_version", &bundle) == FLASHC_ERROR_UNSUPPORTED,
        "opening a version-3 bundle: UNSUPPORTED");
  check(has(flashc_last_error(), "bundle format version 3 is not supported (this runtime reads versions 1 and 2)"),
        "... message names both versions");

  flashc_open_options options;
  memset(&options, 0, sizeof options);
  options.disable_cache = 1;
  if (flashc_bundle_open_ex(FLASHC_TEST_BUNDLES_DIR "/basic", &options, &bundle) != FLASHC_OK) {
    check(0, "open the basic bundle");
    return 1;
  }
  size_t kernels = 0, programs = 0;
  const char *name = NULL;
  check(flashc_bundle_kernel_count(bundle, &kernels) == FLASHC_OK && kernels == 6, "6 kernels");
  check(flashc_bundle_program_count(bundle, &programs) == FLASHC_OK && programs == 1, "1 program");
  check(flashc_bundle_kernel_name(bundle, 1, &name) == FLASHC_OK && strcmp(name, "row_scale") == 0, "kernel 1 is row_scale");
  check(flashc_bundle_kernel_name(bundle, 6, &name) == FLASHC_ERROR_INVALID_ARGUMENT, "kernel index 6 is out of range");
  check(flashc_bundle_program_name(bundle, 0, &name) == FLASHC_OK && strcmp(name, "scale_then_add") == 0, "program 0 is scale_then_add");
  int isProgram = -1;
  check(flashc_bundle_lookup(bundle, "scale_then_add", &isProgram) == FLASHC_OK && isProgram == 1, "lookup finds the program");
  check(flashc_bundle_lookup(bundle, "vector_add", &isProgram) == FLASHC_OK && isProgram == 0, "lookup finds a kernel");
  check(flashc_bundle_lookup(bundle, "nope", &isProgram) == FLASHC_ERROR_NOT_FOUND, "lookup of an unknown name: NOT_FOUND");

  size_t params = 0;
  flashc_param_info info;
  check(flashc_bundle_param_count(bundle, "scale_then_add", &params) == FLASHC_OK && params == 4,
        "program parameters: x, b, out, alpha (scratch tmp hidden)");
  check(flashc_bundle_param_info(bundle, "row_scale", 0, &info) == FLASHC_OK && strcmp(info.name, "x") == 0 && info.is_tensor &&
            info.dtype == FLASHC_BF16 && info.rank == 2 && strcmp(info.dims[0], "M") == 0 && strcmp(info.dims[1], "N") == 0,
        "param info of row_scale.x: bf16 [M, N]");
  {
    /* Asked again and again (a binding's loop): the same stored dim texts, no new storage each call. */
    const char *first = info.dims[0];
    int same = 1;
    for (int i = 0; i < 1000; ++i)
      same = same && flashc_bundle_param_info(bundle, "row_scale", 0, &info) == FLASHC_OK && info.dims[0] == first;
    check(same, "param info returns the same dim text each call (nothing kept per call)");
  }
  check(flashc_bundle_param_info(bundle, "row_scale", 3, &info) == FLASHC_OK && !info.is_tensor &&
            info.dtype == FLASHC_SCALAR_F32 && strcmp(info.name, "alpha") == 0,
        "param info of row_scale.alpha: scalar f32");

  flashc_args args = NULL;
  check(flashc_args_create(&args) == FLASHC_OK, "create args");
  int64_t shape[2] = {5, 64};
  static float fake[1];
  check(flashc_args_set_tensor(args, "x", fake, FLASHC_BF16, 2, shape, NULL) == FLASHC_OK, "bind x");
  int rank = 0;
  int64_t out[4];
  check(flashc_bundle_param_shape(bundle, "row_scale", "y", args, &rank, out) == FLASHC_OK && rank == 2 && out[0] == 5 &&
            out[1] == 64,
        "shape of y implied by x: [5, 64]");
  check(flashc_bundle_param_shape(bundle, "row_scale", "s", args, &rank, out) == FLASHC_OK && rank == 1 && out[0] == 5,
        "shape of s implied by x: [5]");
  check(flashc_args_set_tensor(args, "x", fake, FLASHC_BF16, 7, shape, NULL) == FLASHC_ERROR_INVALID_ARGUMENT &&
            has(flashc_last_error(), "rank 7 is outside 0..4"),
        "binding a rank-7 tensor fails with a message");
  check(flashc_args_set_tensor(args, "x", fake, (flashc_dtype)42, 2, shape, NULL) == FLASHC_ERROR_INVALID_ARGUMENT &&
            has(flashc_last_error(), "unknown dtype 42"),
        "binding an unknown dtype fails with a message");
  /* Several tensors in one call (what the Python binding does a launch): the same checks, the first failure stops. */
  flashc_args batch = NULL;
  check(flashc_args_create(&batch) == FLASHC_OK, "create a second args");
  const char *names[2] = {"x", "y"};
  flashc_tensor_arg tensors[2];
  memset(tensors, 0, sizeof tensors);
  for (int i = 0; i < 2; ++i) {
    tensors[i].data = fake;
    tensors[i].shape[0] = 9;
    tensors[i].shape[1] = 64;
    tensors[i].stride[0] = 64;
    tensors[i].stride[1] = 1;
  }
  int dtypes[2] = {FLASHC_BF16, FLASHC_BF16}, ranks[2] = {2, 2};
  check(flashc_args_set_tensors(batch, 2, names, tensors, dtypes, ranks) == FLASHC_OK, "bind x and y in one call");
  check(flashc_bundle_param_shape(bundle, "row_scale", "s", batch, &rank, out) == FLASHC_OK && rank == 1 && out[0] == 9,
        "shape of s implied by the batch's x: [9]");
  ranks[1] = 5;
  check(flashc_args_set_tensors(batch, 2, names, tensors, dtypes, ranks) == FLASHC_ERROR_INVALID_ARGUMENT &&
            has(flashc_last_error(), "argument 'y': rank 5 is outside 0..4"),
        "a rank-5 tensor in a batch fails, naming it");
  ranks[1] = 2;
  dtypes[0] = 42;
  check(flashc_args_set_tensors(batch, 2, names, tensors, dtypes, ranks) == FLASHC_ERROR_INVALID_ARGUMENT &&
            has(flashc_last_error(), "argument 'x': unknown dtype 42"),
        "an unknown dtype in a batch fails, naming it");
  check(flashc_args_set_tensors(batch, 2, NULL, tensors, dtypes, ranks) == FLASHC_ERROR_INVALID_ARGUMENT,
        "a batch without names is refused");
  check(flashc_args_set_tensors(batch, 0, NULL, NULL, NULL, NULL) == FLASHC_OK, "an empty batch sets nothing");
  flashc_args_destroy(batch);
  check(flashc_args_set_f32(args, "alpha", 2.0f) == FLASHC_OK, "bind alpha");
  check(flashc_launch(bundle, "row_scale", args, NULL) == FLASHC_ERROR_NO_DRIVER &&
            has(flashc_last_error(), "no CUDA driver (libcuda.so.1 not found)"),
        "launch without a driver fails cleanly with NO_DRIVER");
  check(flashc_launch(bundle, "nope", args, NULL) == FLASHC_ERROR_NOT_FOUND, "launch of an unknown kernel: NOT_FOUND");
  check(flashc_bundle_prepare(bundle) == FLASHC_ERROR_NO_DRIVER, "prepare without a driver: NO_DRIVER");
  check(flashc_launch(NULL, "row_scale", args, NULL) == FLASHC_ERROR_INVALID_ARGUMENT, "null bundle handle is refused");
  {
    uint64_t bytes = 7;
    check(flashc_workspace_bytes(bundle, "row_scale", args, &bytes) == FLASHC_OK && bytes == 0,
          "a kernel needs no workspace (no driver needed to say so)");
    check(flashc_workspace_bytes(bundle, "nope", args, &bytes) == FLASHC_ERROR_NOT_FOUND,
          "workspace of an unknown name: NOT_FOUND");
    check(flashc_workspace_bytes(bundle, "row_scale", args, NULL) == FLASHC_ERROR_INVALID_ARGUMENT,
          "workspace bytes into a null pointer is refused");
    check(flashc_launch_workspace(bundle, "row_scale", args, NULL, NULL, 0) == FLASHC_ERROR_NO_DRIVER,
          "launch with a workspace without a driver: NO_DRIVER");
    check(flashc_launch_workspace(NULL, "row_scale", args, NULL, NULL, 0) == FLASHC_ERROR_INVALID_ARGUMENT,
          "launch with a workspace: a null bundle handle is refused");
  }
  flashc_args_destroy(args);
  flashc_bundle_close(bundle);
  printf("%d checks, %d failed\n", checks, failures);
  return failures ? 1 : 0;
}
