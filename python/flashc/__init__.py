"""flashc: load and launch bundles compiled by the flashc compiler, over the
runtime's C ABI (ctypes; no compiled extension).

Importing needs neither a GPU nor torch. `flashc.torch` (imported on first use)
has the PyTorch autograd functions `attention` and `ffn`.
"""

from .errors import (BundleNotFoundError, CompileError, CompilerError, CudaError, FlashcError, InternalError,
                     InvalidArgumentError, InvalidBundleError, NoDeviceError, NoDriverError, NotFoundError,
                     RuntimeLibraryNotFoundError, UnsupportedError)
from .bundle import Bundle, Param, TensorRef
from .spec import AttentionConfig, FfnConfig



def _source_tree_version():
    """The project VERSION of the repository's top-level CMakeLists.txt: the one version, which the runtime
    reports too (flashc_version) and pyproject.toml reads for the wheel."""
    import os
    import re
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    try:
        with open(os.path.join(root, "CMakeLists.txt")) as f:
            found = re.search(r"project\(flashc\s+VERSION\s+([0-9]+(\.[0-9]+)*)", f.read())
    except OSError:
        found = None
    return found.group(1) if found else "unknown"


try:
    from ._version import version as __version__  # an installed package: written by the build (pyproject.toml)
except ImportError:
    __version__ = _source_tree_version()


def runtime_version():
    """Version string of the loaded runtime library."""
    from . import _lib
    return _lib.load().flashc_version().decode()


def runtime_library_path():
    """Path of the runtime library flashc loads (RuntimeLibraryNotFoundError if none)."""
    from . import _lib
    return _lib.library_path()


def device_available():
    """True when the runtime finds a CUDA driver and a device."""
    from . import _lib
    try:
        return _lib.load().flashc_check_device() == 0
    except FlashcError:
        return False


def check_device():
    """Raise NoDriverError / NoDeviceError unless a CUDA device is usable."""
    from . import _lib
    _lib.check(_lib.load().flashc_check_device())


def __getattr__(name):
    # `flashc.torch` without importing torch at `import flashc`.
    if name == "torch":
        import importlib
        return importlib.import_module(".torch", __name__)
    raise AttributeError("module 'flashc' has no attribute %r" % name)


__all__ = ["Bundle", "Param", "TensorRef", "AttentionConfig", "FfnConfig", "FlashcError", "InvalidArgumentError",
           "InvalidBundleError", "NoDriverError", "NoDeviceError", "CompileError", "CudaError", "NotFoundError",
           "UnsupportedError", "InternalError", "RuntimeLibraryNotFoundError", "BundleNotFoundError", "CompilerError",
           "runtime_version", "runtime_library_path", "device_available", "check_device"]
