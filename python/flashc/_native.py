"""flashc.torch's native path: csrc/ffn_native.cpp, a C++ autograd Function for flashc.torch.ffn, built with
torch.utils.cpp_extension against the loaded runtime library and cached on disk.

FLASHC_NATIVE selects it: "1" (the default) builds it at the first FFN call that can take it (26 s on the H200
machine, once a machine; later processes load the cached build) and uses it; "0" keeps the Python autograd Function.
A build that fails (no C++ compiler, no CUDA headers, no runtime header) warns once and flashc.torch keeps the Python
path. `python -m flashc._native` builds it now and prints where it is.

Measured on the H200 (bench/results/2026-12-03-h200-session28.md, call 3): a d = 256 FFN training step's host time
386 -> 160 µs (eager PyTorch 200), bench_ffn's d = 256 backward 244 -> 362 TFLOP/s (0.70x -> 1.03x eager), d = 1024
backward 578 -> 622; other rows within the run-to-run spread.

The build directory is <runtime cache>/torch-native/<key>, the key covering the source, torch's version, the
runtime library's path and the header's text, so a changed source or another torch builds anew.
"""

import hashlib
import os
import threading
import warnings

from . import _lib, cache
from .errors import InvalidArgumentError, error_for_status

ENV_NATIVE = "FLASHC_NATIVE"
SOURCE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "csrc", "ffn_native.cpp")

_lock = threading.Lock()
_module = None
_failed = None  # the reason the build failed (warned once), or None


def enabled():
    value = os.environ.get(ENV_NATIVE, "1").strip()
    if value not in ("0", "1"):
        raise InvalidArgumentError("%s=%r: expected 0 (the Python autograd Function) or 1 (the native path)"
                                   % (ENV_NATIVE, value))
    return value == "1"


def header_dir(library):
    """The directory holding flashc/flashc.h for the runtime at `library`: beside an installed library
    (<prefix>/lib -> <prefix>/include; a wheel's flashc/lib -> flashc/include), else the source tree's."""
    candidates = [os.path.join(os.path.dirname(os.path.dirname(os.path.realpath(library))), "include"),
                  os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(library))), "include"),
                  os.path.join(_lib.SOURCE_ROOT, "runtime", "include")]
    for d in candidates:
        if os.path.isfile(os.path.join(d, "flashc", "flashc.h")):
            return d
    raise FileNotFoundError("flashc/flashc.h not found (looked in %s)" % ", ".join(candidates))


def _read(path):
    with open(path, "rb") as f:
        return f.read()


def _build():
    import torch
    from torch.utils import cpp_extension

    library = os.path.realpath(_lib.library_path())
    include = header_dir(library)
    digest = hashlib.sha256()
    for part in (_read(SOURCE), torch.__version__.encode(), library.encode(),
                 _read(os.path.join(include, "flashc", "flashc.h"))):
        digest.update(part)
        digest.update(b"\0")
    key = digest.hexdigest()[:16]
    build_dir = os.path.join(cache.runtime_cache_dir(), "torch-native", key)
    os.makedirs(build_dir, exist_ok=True)
    # Linked against the runtime by its path: the loader finds the copy ctypes already loaded (same soname), so
    # bundle handles from flashc.Bundle are valid in it.
    return cpp_extension.load(name="flashc_ffn_native_" + key, sources=[SOURCE], extra_include_paths=[include],
                              extra_cflags=["-O2"],
                              extra_ldflags=[library, "-Wl,-rpath," + os.path.dirname(library)],
                              build_directory=build_dir, with_cuda=True, verbose=False)


def module():
    """The built extension, or None (FLASHC_NATIVE=0, or its build failed: warned once)."""
    global _module, _failed
    if _module is not None or _failed is not None or not enabled():
        return _module
    with _lock:
        if _module is None and _failed is None:
            try:
                _module = _build()
            except Exception as e:  # noqa: BLE001 (any build failure leaves the Python path)
                _failed = "%s: %s" % (type(e).__name__, e)
                warnings.warn("flashc: the native FFN path did not build (%s); flashc.torch.ffn keeps the Python "
                              "autograd Function (set %s=0 to skip the attempt)" % (_failed, ENV_NATIVE),
                              RuntimeWarning, stacklevel=3)
    return _module


def raise_launch_error(error):
    """The flashc error class for a native launch's failure (LaunchError(status, message))."""
    status, message = error.args
    raise error_for_status(status, message) from None


if __name__ == "__main__":
    m = module()
    if m is None:
        raise SystemExit("flashc native path: not built (%s)" % (_failed or "%s=0" % ENV_NATIVE))
    print("flashc native path: %s" % m.__file__)
