"""The package imports with no GPU, no torch and no runtime library; errors map status codes."""

import subprocess
import sys
import unittest

from _support import python_env

import flashc
from flashc import errors


def run_python(code, **env):
    return subprocess.run([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          env=python_env(**env), universal_newlines=True)


class ImportTest(unittest.TestCase):
    def test_import_without_torch(self):
        # sys.modules['torch'] = None makes any `import torch` fail, as on a machine without torch.
        proc = run_python("import sys; sys.modules['torch'] = None\n"
                          "import flashc, flashc.spec, flashc.validate, flashc.cache, flashc.configs, flashc.prebuild\n"
                          "assert flashc.AttentionConfig('bf16', 2, 2, 64).key\n"
                          "try:\n    import flashc.torch\nexcept ImportError:\n    print('no-torch-ok')\n")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertIn("no-torch-ok", proc.stdout)

    def test_import_does_not_load_torch(self):
        proc = run_python("import sys, flashc; print('torch' in sys.modules)")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertEqual(proc.stdout.strip(), "False")

    def test_missing_runtime_library_is_a_clear_error(self):
        proc = run_python("import flashc\n"
                          "try:\n    flashc.runtime_version()\n"
                          "except flashc.RuntimeLibraryNotFoundError as e:\n    print('ERR', e)\n",
                          FLASHC_RUNTIME_LIB="/nonexistent/libflashc_runtime.so")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertIn("ERR cannot load the flashc runtime library", proc.stdout)
        self.assertIn("/nonexistent/libflashc_runtime.so (missing)", proc.stdout)
        self.assertIn("FLASHC_RUNTIME_LIB", proc.stdout)

    def test_device_available_is_false_without_a_library(self):
        proc = run_python("import flashc; print(flashc.device_available())",
                          FLASHC_RUNTIME_LIB="/nonexistent/libflashc_runtime.so")
        self.assertEqual(proc.stdout.strip(), "False", proc.stderr)


class ErrorMappingTest(unittest.TestCase):
    def test_each_status_has_its_class(self):
        expected = {1: flashc.InvalidArgumentError, 2: flashc.InvalidBundleError, 3: flashc.NoDriverError,
                    4: flashc.NoDeviceError, 5: flashc.CompileError, 6: flashc.CudaError, 7: flashc.NotFoundError,
                    8: flashc.UnsupportedError, 9: flashc.InternalError}
        for status, cls in expected.items():
            e = errors.error_for_status(status, "message %d" % status)
            self.assertIs(type(e), cls)
            self.assertEqual(e.status, status)
            self.assertEqual(str(e), "message %d" % status)
            self.assertIsInstance(e, flashc.FlashcError)
            self.assertIsInstance(e, RuntimeError)

    def test_unknown_status_is_still_a_flashc_error(self):
        e = errors.error_for_status(42, "")
        self.assertIs(type(e), flashc.FlashcError)
        self.assertEqual(e.status, 42)
        self.assertIn("status 42", str(e))

    def test_python_exception_families(self):
        self.assertTrue(issubclass(flashc.InvalidArgumentError, ValueError))
        self.assertTrue(issubclass(flashc.NotFoundError, LookupError))
        self.assertTrue(issubclass(flashc.BundleNotFoundError, flashc.NotFoundError))


if __name__ == "__main__":
    unittest.main()
