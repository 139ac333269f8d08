"""Locating and loading libflashc_runtime.so, and the C ABI's prototypes
(runtime/include/flashc/flashc.h) for ctypes. Loaded lazily: importing flashc
never needs the library, a driver or a GPU."""

import ctypes
import ctypes.util
import glob
import os
import threading

from .errors import FlashcError, RuntimeLibraryNotFoundError, error_for_status

LIBRARY_NAME = "libflashc_runtime.so"
ENV_LIBRARY = "FLASHC_RUNTIME_LIB"

PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))
# python/flashc -> the repository root, when running from a source tree.
SOURCE_ROOT = os.path.dirname(os.path.dirname(PACKAGE_DIR))

# flashc_dtype and friends (values fixed by the C ABI).
DTYPE_CODES = {"bf16": 0, "f16": 1, "f32": 2, "i32": 3}
DTYPE_NAMES = {v: k for k, v in DTYPE_CODES.items()}
DTYPE_SIZES = {"bf16": 2, "f16": 2, "f32": 4, "i32": 4}
SCALAR_NAMES = {0: "f32", 1: "i32", 2: "i64"}
DIRECTION_NAMES = {0: "in", 1: "out", 2: "inout"}


class TensorArg(ctypes.Structure):
    """flashc_tensor_arg: the kernel ABI's tensor argument (72 bytes)."""
    _fields_ = [("data", ctypes.c_void_p), ("shape", ctypes.c_int64 * 4), ("stride", ctypes.c_int64 * 4)]


assert ctypes.sizeof(TensorArg) == 72


class OpenOptions(ctypes.Structure):
    """flashc_open_options."""
    _fields_ = [("cache_dir", ctypes.c_char_p), ("disable_cache", ctypes.c_int), ("no_jit", ctypes.c_int),
                ("device_include_dir", ctypes.c_char_p)]


class ParamInfo(ctypes.Structure):
    """flashc_param_info."""
    _fields_ = [("name", ctypes.c_char_p), ("is_tensor", ctypes.c_int), ("dtype", ctypes.c_int),
                ("direction", ctypes.c_int), ("rank", ctypes.c_int), ("dims", ctypes.c_char_p * 4)]


def candidate_paths():
    """Where the runtime library is looked for, in order."""
    paths = []
    env = os.environ.get(ENV_LIBRARY)
    if env:
        paths.append(env)
        return paths  # an explicit choice is never silently replaced
    paths.append(os.path.join(PACKAGE_DIR, LIBRARY_NAME))
    paths.append(os.path.join(PACKAGE_DIR, "lib", LIBRARY_NAME))
    # Build trees of a source checkout, newest first.
    built = glob.glob(os.path.join(SOURCE_ROOT, "build*", "runtime", LIBRARY_NAME))
    built.sort(key=lambda p: os.path.getmtime(p), reverse=True)
    paths.extend(built)
    return paths


_lock = threading.Lock()
_lib = None


def _declare(lib):
    c_status = ctypes.c_int
    vp, sz, i64p = ctypes.c_void_p, ctypes.c_size_t, ctypes.POINTER(ctypes.c_int64)
    protos = {
        "flashc_last_error": (ctypes.c_char_p, []),
        "flashc_version": (ctypes.c_char_p, []),
        "flashc_check_device": (c_status, []),
        "flashc_bundle_open": (c_status, [ctypes.c_char_p, ctypes.POINTER(vp)]),
        "flashc_bundle_open_ex": (c_status, [ctypes.c_char_p, ctypes.POINTER(OpenOptions), ctypes.POINTER(vp)]),
        "flashc_bundle_close": (None, [vp]),
        "flashc_bundle_prepare": (c_status, [vp]),
        "flashc_bundle_kernel_count": (c_status, [vp, ctypes.POINTER(sz)]),
        "flashc_bundle_kernel_name": (c_status, [vp, sz, ctypes.POINTER(ctypes.c_char_p)]),
        "flashc_bundle_program_count": (c_status, [vp, ctypes.POINTER(sz)]),
        "flashc_bundle_program_name": (c_status, [vp, sz, ctypes.POINTER(ctypes.c_char_p)]),
        "flashc_bundle_lookup": (c_status, [vp, ctypes.c_char_p, ctypes.POINTER(ctypes.c_int)]),
        "flashc_bundle_param_count": (c_status, [vp, ctypes.c_char_p, ctypes.POINTER(sz)]),
        "flashc_bundle_param_info": (c_status, [vp, ctypes.c_char_p, sz, ctypes.POINTER(ParamInfo)]),
        "flashc_bundle_param_shape": (c_status, [vp, ctypes.c_char_p, ctypes.c_char_p, vp,
                                                 ctypes.POINTER(ctypes.c_int), i64p]),
        "flashc_args_create": (c_status, [ctypes.POINTER(vp)]),
        "flashc_args_destroy": (None, [vp]),
        "flashc_args_clear": (None, [vp]),
        "flashc_args_set_tensor": (c_status, [vp, ctypes.c_char_p, vp, ctypes.c_int, ctypes.c_int, i64p, i64p]),
        "flashc_args_set_tensors": (c_status, [vp, sz, ctypes.POINTER(ctypes.c_char_p), ctypes.POINTER(TensorArg),
                                                ctypes.POINTER(ctypes.c_int), ctypes.POINTER(ctypes.c_int)]),
        "flashc_args_set_f32": (c_status, [vp, ctypes.c_char_p, ctypes.c_float]),
        "flashc_args_set_i32": (c_status, [vp, ctypes.c_char_p, ctypes.c_int32]),
        "flashc_args_set_i64": (c_status, [vp, ctypes.c_char_p, ctypes.c_int64]),
        "flashc_launch": (c_status, [vp, ctypes.c_char_p, vp, vp]),
        "flashc_bundle_defer_checks": (c_status, [vp, ctypes.c_int]),
        "flashc_bundle_check_deferred": (c_status, [vp, ctypes.c_int]),
        "flashc_workspace_bytes": (c_status, [vp, ctypes.c_char_p, vp, ctypes.POINTER(ctypes.c_uint64)]),
        "flashc_launch_workspace": (c_status, [vp, ctypes.c_char_p, vp, vp, vp, ctypes.c_uint64]),
    }
    for name, (restype, argtypes) in protos.items():
        try:
            fn = getattr(lib, name)
        except AttributeError:
            raise RuntimeLibraryNotFoundError(
                "%s does not export %s: it is not a flashc runtime of this version" % (lib._name, name))
        fn.restype = restype
        fn.argtypes = argtypes


def load():
    """The loaded runtime library (ctypes.CDLL), loading it on first use."""
    global _lib
    if _lib is not None:
        return _lib
    with _lock:
        if _lib is not None:
            return _lib
        tried = []
        for path in candidate_paths():
            if not os.path.exists(path):
                tried.append(path + " (missing)")
                continue
            try:
                lib = ctypes.CDLL(path)
            except OSError as e:
                tried.append("%s (%s)" % (path, e))
                continue
            _declare(lib)
            _lib = lib
            return _lib
        if not os.environ.get(ENV_LIBRARY):
            found = ctypes.util.find_library("flashc_runtime")
            if found:
                try:
                    lib = ctypes.CDLL(found)
                    _declare(lib)
                    _lib = lib
                    return _lib
                except OSError as e:
                    tried.append("%s (%s)" % (found, e))
        raise RuntimeLibraryNotFoundError(
            "cannot load the flashc runtime library %s; set %s to its path or build it "
            "(cmake -G Ninja -S . -B build -DFLASHC_RUNTIME_ONLY=ON && ninja -C build). Tried: %s"
            % (LIBRARY_NAME, ENV_LIBRARY, "; ".join(tried) or "nothing"))


def library_path():
    """Path of the loaded runtime library."""
    return load()._name


def last_error():
    msg = load().flashc_last_error()
    return msg.decode("utf-8", "replace") if msg else ""


def check(status):
    """Raise the FlashcError subclass for a non-zero status, with the runtime's message."""
    if status != 0:
        raise error_for_status(status, last_error())


def _reset_for_tests():
    """Forget the loaded library so a test can exercise the search again."""
    global _lib
    with _lock:
        _lib = None


__all__ = ["load", "library_path", "check", "last_error", "FlashcError"]
