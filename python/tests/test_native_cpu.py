"""flashc._native without a GPU or torch: the FLASHC_NATIVE switch, where the runtime's header is found, and that
the C++ source and flashc.torch agree on the tensor slots (the GPU side: test_gpu_ffn_native)."""

import os
import re
import tempfile
import unittest

import _support  # noqa: F401  (puts the package on the path)

from flashc import _native
from flashc.errors import InvalidArgumentError


class NativeSwitchTest(unittest.TestCase):
    def setUp(self):
        self.saved = os.environ.get(_native.ENV_NATIVE)

    def tearDown(self):
        if self.saved is None:
            os.environ.pop(_native.ENV_NATIVE, None)
        else:
            os.environ[_native.ENV_NATIVE] = self.saved

    def test_values(self):
        for value, expected in (("1", True), ("0", False), (" 1 ", True)):
            os.environ[_native.ENV_NATIVE] = value
            self.assertEqual(_native.enabled(), expected, value)

    def test_bad_value_is_refused(self):
        for value in ("yes", "2", "true"):
            os.environ[_native.ENV_NATIVE] = value
            with self.assertRaises(InvalidArgumentError) as caught:
                _native.enabled()
            self.assertIn(_native.ENV_NATIVE, str(caught.exception))

    def test_disabled_builds_nothing(self):
        os.environ[_native.ENV_NATIVE] = "0"
        self.assertIsNone(_native.module())


class HeaderTest(unittest.TestCase):
    def test_source_tree_header(self):
        if _support.TEST_INSTALLED:
            self.skipTest("an installed package has no source tree")
        found = _native.header_dir(os.path.join(_support.REPO_ROOT, "build", "runtime", "libflashc_runtime.so"))
        self.assertTrue(os.path.isfile(os.path.join(found, "flashc", "flashc.h")))

    def test_installed_layout_first(self):
        with tempfile.TemporaryDirectory() as root:
            os.makedirs(os.path.join(root, "lib"))
            os.makedirs(os.path.join(root, "include", "flashc"))
            open(os.path.join(root, "include", "flashc", "flashc.h"), "w").close()
            self.assertEqual(_native.header_dir(os.path.join(root, "lib", "libflashc_runtime.so")),
                             os.path.join(root, "include"))


class SlotsTest(unittest.TestCase):
    def test_source_slots_match_the_binding(self):
        """csrc/ffn_native.cpp's Slot enum, its SLOTS tuple and flashc.torch's slot names name the same slots."""
        with open(_native.SOURCE) as f:
            source = f.read()
        enum = re.search(r"enum Slot : int \{(.*?)\};", source, re.S).group(1)
        enum = [n for n in re.findall(r"\bk(\w+)", re.sub(r"//[^\n]*", "", enum)) if n != "Slots"]
        slots = re.search(r'm\.attr\("SLOTS"\) = pybind11::make_tuple\((.*?)\);', source, re.S).group(1)
        slots = re.findall(r'"(\w+)"', slots)
        self.assertEqual(len(enum), len(slots))
        for e, s in zip(enum, slots):
            self.assertEqual(e.lower(), s.replace("_", "").lower())
        with open(os.path.join(os.path.dirname(_native.__file__), "torch.py")) as f:
            torch_source = f.read()
        named = re.search(r"_NATIVE_SLOTS = \{(.*?)\}", torch_source, re.S).group(1)
        used = set(re.findall(r':\s*"(\w+)"', named)) | {"saved0", "saved1", "saved2"}
        self.assertEqual(used, set(slots))


if __name__ == "__main__":
    unittest.main()
