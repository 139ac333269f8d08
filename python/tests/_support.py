"""Shared helpers of the flashc Python tests (run: python3 -m unittest discover -s python/tests -v)."""

import glob
import importlib.util
import os
import shutil
import sys
import unittest

TESTS_DIR = os.path.dirname(os.path.abspath(__file__))
PYTHON_DIR = os.path.dirname(TESTS_DIR)
REPO_ROOT = os.path.dirname(PYTHON_DIR)
# FLASHC_TEST_INSTALLED=1: test the flashc found on sys.path (a pip-installed package, with its own runtime
# library and device headers), never this source tree's python/flashc (python/tests/pip_install_check.py).
TEST_INSTALLED = os.environ.get("FLASHC_TEST_INSTALLED") == "1"
if not TEST_INSTALLED and PYTHON_DIR not in sys.path:
    sys.path.insert(0, PYTHON_DIR)
if TEST_INSTALLED:
    import flashc as _flashc
    if os.path.abspath(_flashc.__file__).startswith(os.path.join(PYTHON_DIR, "")):
        raise RuntimeError("FLASHC_TEST_INSTALLED=1 but flashc was imported from the source tree (%s): run the "
                           "tests outside python/ with the installed package on sys.path" % _flashc.__file__)


def python_env(**extra):
    """os.environ for a child Python that imports the same flashc as these tests, plus `extra`."""
    env = dict(os.environ)
    if not TEST_INSTALLED:
        env["PYTHONPATH"] = PYTHON_DIR
    env.update(extra)
    return env

BASIC_BUNDLE = os.path.join(REPO_ROOT, "test", "Runtime", "bundles", "basic")
BAD_VERSION_BUNDLE = os.path.join(REPO_ROOT, "test", "Runtime", "bundles", "bad_version")
TMA_BUNDLE = os.path.join(REPO_ROOT, "test", "Runtime", "bundles", "tma")

HAVE_TORCH = importlib.util.find_spec("torch") is not None


def skip_loudly(reason):
    """unittest.skip that also prints the reason, so a skipped suite is visible in any log."""
    sys.stderr.write("SKIPPED: %s\n" % reason)
    return unittest.skip(reason)


def runtime_available():
    import flashc
    try:
        flashc.runtime_library_path()
        return True
    except flashc.FlashcError:
        return False


def cuda_available():
    if not HAVE_TORCH:
        return False
    import torch
    return torch.cuda.is_available()


def requires_torch(cls):
    if HAVE_TORCH:
        return cls
    return skip_loudly("torch is not installed: %s skipped" % cls.__name__)(cls)


def requires_runtime(cls):
    if runtime_available():
        return cls
    return skip_loudly("libflashc_runtime.so not found (set FLASHC_RUNTIME_LIB): %s skipped" % cls.__name__)(cls)


def requires_cuda(cls):
    if cuda_available():
        return cls
    why = "torch is not installed" if not HAVE_TORCH else "torch.cuda.is_available() is False (no GPU)"
    return skip_loudly("GPU tests %s skipped: %s" % (cls.__name__, why))(cls)


def find_tool(name, env):
    """A built tool: $env, build*/bin/<name> of the repository, or PATH."""
    if os.environ.get(env):
        return os.environ[env] if os.access(os.environ[env], os.X_OK) else None
    built = sorted(glob.glob(os.path.join(REPO_ROOT, "build*", "bin", name)), key=os.path.getmtime, reverse=True)
    built = [b for b in built if os.access(b, os.X_OK)]
    return built[0] if built else shutil.which(name)


class EnvPatch:
    """Set/unset environment variables for the duration of a with-block."""

    def __init__(self, **values):
        self.values = values
        self.saved = {}

    def __enter__(self):
        for k, v in self.values.items():
            self.saved[k] = os.environ.get(k)
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        return self

    def __exit__(self, *exc):
        for k, v in self.saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
