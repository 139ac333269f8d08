"""A pip-installed flashc (pyproject.toml) works outside the source tree: it loads its own runtime library and
the runtime finds the device headers installed next to it. Runs with FLASHC_TEST_INSTALLED=1 (set by
python/tests/pip/pip_install_check.py, or by hand over an installed package); skipped in a source tree."""

import glob
import importlib.metadata
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

from _support import REPO_ROOT, TEST_INSTALLED, python_env, skip_loudly

DEVICE_SOURCES = os.path.join(REPO_ROOT, "runtime", "device", "include", "flashc", "device")
PROBE_SOURCE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "pip", "nvrtc_probe.cpp")


def cmake_project_version():
    with open(os.path.join(REPO_ROOT, "CMakeLists.txt")) as f:
        return re.search(r"project\(flashc\s+VERSION\s+([0-9.]+)", f.read()).group(1)


def installed_test(cls):
    if TEST_INSTALLED:
        return cls
    return skip_loudly("FLASHC_TEST_INSTALLED is not 1 (source tree): %s skipped" % cls.__name__)(cls)


@installed_test
class InstalledPackageTest(unittest.TestCase):
    def setUp(self):
        import flashc
        self.flashc = flashc
        self.package_dir = os.path.dirname(os.path.abspath(flashc.__file__))

    def test_imported_from_outside_the_source_tree(self):
        # (A build tree inside the checkout is fine: ctest installs into build/python/pip/site-packages.)
        self.assertFalse(self.package_dir.startswith(os.path.join(REPO_ROOT, "python", "")), self.package_dir)

    def test_loads_its_own_runtime_library(self):
        if os.environ.get("FLASHC_RUNTIME_LIB"):
            self.skipTest("FLASHC_RUNTIME_LIB is set: it overrides the packaged library")
        self.assertEqual(os.path.realpath(self.flashc.runtime_library_path()),
                         os.path.realpath(os.path.join(self.package_dir, "lib", "libflashc_runtime.so")))

    def test_one_version(self):
        # The CMake project VERSION is the one source: the runtime's flashc_version(), the wheel's metadata
        # (pyproject.toml's regex provider) and flashc.__version__ (generated _version.py) all carry it.
        expected = cmake_project_version()
        self.assertEqual(self.flashc.__version__, expected)
        self.assertEqual(self.flashc.runtime_version(), expected)
        self.assertEqual(importlib.metadata.version("flashc"), expected)

    def test_device_headers_installed_next_to_the_library(self):
        # The runtime's installed layout (runtime/lib/Paths.cpp): <lib>/../include/flashc/device.
        installed = os.path.join(self.package_dir, "include", "flashc", "device")
        wanted = sorted(os.path.basename(p) for p in glob.glob(os.path.join(DEVICE_SOURCES, "*.cuh")))
        self.assertTrue(wanted)
        self.assertEqual(sorted(os.listdir(installed)), wanted)

    def test_environment_overrides_the_packaged_library(self):
        code = ("import flashc\ntry:\n    flashc.runtime_version()\n"
                "except flashc.RuntimeLibraryNotFoundError as e:\n    print('ERR', e)\n")
        proc = subprocess.run([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              env=python_env(FLASHC_RUNTIME_LIB="/nonexistent/libflashc_runtime.so"),
                              universal_newlines=True)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertIn("/nonexistent/libflashc_runtime.so (missing)", proc.stdout)
        self.assertNotIn(self.package_dir, proc.stdout)

    def test_runtime_compiles_against_its_installed_device_headers(self):
        cxx = os.environ.get("CXX") or shutil.which("c++") or shutil.which("g++")
        if not cxx:
            sys.stderr.write("SKIPPED: no C++ compiler (CXX, c++, g++): NVRTC probe of the installed headers\n")
            self.skipTest("no C++ compiler")
        tmp = tempfile.mkdtemp(prefix="flashc-probe-")
        self.addCleanup(shutil.rmtree, tmp, True)
        exe = os.path.join(tmp, "nvrtc_probe")
        lib_dir = os.path.join(self.package_dir, "lib")
        build = subprocess.run([cxx, "-std=c++17", "-I", os.path.join(self.package_dir, "include"), PROBE_SOURCE,
                                "-o", exe, "-L", lib_dir, "-lflashc_runtime", "-Wl,-rpath," + lib_dir],
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True)
        self.assertEqual(build.returncode, 0, build.stdout)
        env = dict(os.environ)
        env.pop("FLASHC_DEVICE_INCLUDE", None)  # the default lookup is what is tested
        proc = subprocess.run([exe], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True,
                              env=env, timeout=300)
        options = [line[len("option "):] for line in proc.stdout.splitlines() if line.startswith("option ")]
        self.assertIn("-I" + os.path.join(self.package_dir, "include"), options, proc.stdout)
        self.assertNotIn("-I" + os.path.join(REPO_ROOT, "runtime", "device", "include"), options, proc.stdout)
        if proc.returncode == 2:
            sys.stderr.write("SKIPPED: NVRTC cannot be loaded, the probe compile is skipped: %s\n" % proc.stdout)
            self.skipTest("NVRTC not loadable")
        self.assertEqual(proc.returncode, 0, proc.stdout)
        self.assertIn("cubin ", proc.stdout)


if __name__ == "__main__":
    unittest.main()
