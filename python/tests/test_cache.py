"""Bundle lookup (FLASHC_BUNDLE_PATH, then the cache), compiling a missing bundle with the flashc compiler into
the cache atomically, the error when neither works, and `python -m flashc.prebuild` -- with a stand-in compiler
script, plus the real compiler when it can already emit bundles."""

import contextlib
import io
import os
import shutil
import stat
import subprocess
import sys
import tempfile
import textwrap
import unittest

from _support import BASIC_BUNDLE, EnvPatch, find_tool, python_env, requires_runtime, skip_loudly

import flashc
from flashc import cache, configs, prebuild, programs
from flashc.spec import AttentionConfig, FfnConfig

CONFIG = AttentionConfig("bf16", 2, 2, 64, causal=True)
OTHER = AttentionConfig("bf16", 2, 2, 128)

# A stand-in for `flashc SPEC -o DIR --emit=bundle --arch=...`: checks its command line and the spec, then
# writes the hand-written basic bundle to DIR (or fails, when FAKE_FLASHC_FAIL is set).
FAKE_COMPILER = textwrap.dedent("""\
    #!%(python)s
    import os, shutil, sys
    args = sys.argv[1:]
    log = os.environ.get("FAKE_FLASHC_LOG")
    if args == ["--version"]:
        if log:
            with open(log, "a") as f:
                f.write("--version\\n")
        print(os.environ.get("FAKE_FLASHC_VERSION", "fake-flashc 1"))
        sys.exit(0)
    if log:
        with open(log, "a") as f:
            f.write(" ".join(args) + "\\n")
    if os.environ.get("FAKE_FLASHC_FAIL"):
        sys.stderr.write("spec.mlir:2:3: error: fake failure\\n")
        sys.exit(1)
    assert "--emit=bundle" in args and any(a.startswith("--arch=sm_90a") for a in args), args
    out = args[args.index("-o") + 1]
    spec = open(args[0]).read()
    assert "flash.attention" in spec or "flash.ffn" in spec, spec
    assert not os.path.exists(out), out
    shutil.copytree(%(basic)r, out)
    """)


def write_fake_compiler(directory):
    path = os.path.join(directory, "fake-flashc")
    with open(path, "w") as f:
        f.write(FAKE_COMPILER % {"python": sys.executable, "basic": BASIC_BUNDLE})
    os.chmod(path, os.stat(path).st_mode | stat.S_IXUSR)
    return path


class LookupTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp()
        cache.clear_loaded()

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)
        cache.clear_loaded()

    def make_bundle(self, root, config):
        path = os.path.join(self.tmp, root, config.key)
        shutil.copytree(BASIC_BUNDLE, path)
        return path

    def test_search_order(self):
        first = self.make_bundle("p1", CONFIG)
        second = self.make_bundle("p2", CONFIG)
        cached = self.make_bundle("cache", CONFIG)
        only_cached = self.make_bundle("cache", OTHER)
        path = os.pathsep.join([os.path.join(self.tmp, "empty"), os.path.join(self.tmp, "p1"),
                                os.path.join(self.tmp, "p2")])
        with EnvPatch(FLASHC_BUNDLE_PATH=path, FLASHC_BUNDLE_CACHE=os.path.join(self.tmp, "cache")):
            self.assertEqual(cache.find_bundle_dir(CONFIG), first)
            self.assertEqual(cache.find_bundle_dir(OTHER), only_cached)
        with EnvPatch(FLASHC_BUNDLE_PATH=os.path.join(self.tmp, "p2"), FLASHC_BUNDLE_CACHE=os.path.join(self.tmp, "cache")):
            self.assertEqual(cache.find_bundle_dir(CONFIG), second)
        with EnvPatch(FLASHC_BUNDLE_PATH=None, FLASHC_BUNDLE_CACHE=os.path.join(self.tmp, "cache")):
            self.assertEqual(cache.find_bundle_dir(CONFIG), cached)

    def test_cache_dir_follows_the_runtime(self):
        with EnvPatch(FLASHC_BUNDLE_CACHE=None, FLASHC_CACHE_DIR="/x/c", XDG_CACHE_HOME="/x/xdg"):
            self.assertEqual(cache.bundle_cache_dir(), "/x/c/bundles")
        with EnvPatch(FLASHC_BUNDLE_CACHE=None, FLASHC_CACHE_DIR=None, XDG_CACHE_HOME="/x/xdg"):
            self.assertEqual(cache.bundle_cache_dir(), "/x/xdg/flashc/bundles")
        with EnvPatch(FLASHC_BUNDLE_CACHE=None, FLASHC_CACHE_DIR=None, XDG_CACHE_HOME=None, HOME="/x/home"):
            self.assertEqual(cache.bundle_cache_dir(), "/x/home/.cache/flashc/bundles")

    def test_directory_without_manifest_is_not_a_bundle(self):
        os.makedirs(os.path.join(self.tmp, "p", CONFIG.key))
        with EnvPatch(FLASHC_BUNDLE_PATH=os.path.join(self.tmp, "p"), FLASHC_BUNDLE_CACHE=os.path.join(self.tmp, "c")):
            self.assertIsNone(cache.find_bundle_dir(CONFIG))

    def test_missing_without_compiler(self):
        with EnvPatch(FLASHC_BUNDLE_PATH=os.path.join(self.tmp, "p"), FLASHC_BUNDLE_CACHE=os.path.join(self.tmp, "c"),
                      FLASHC_COMPILER=os.path.join(self.tmp, "no-such-flashc")):
            with self.assertRaises(flashc.BundleNotFoundError) as ctx:
                cache.bundle_dir(CONFIG)
        message = str(ctx.exception)
        self.assertIn(CONFIG.key, message)
        self.assertIn("bf16 Hq=2 Hkv=2 D=64 causal", message)
        self.assertIn(os.path.join(self.tmp, "p", CONFIG.key), message)
        self.assertIn("python -m flashc.prebuild --out DIR 'attention:dtype=bf16,heads=2,kv_heads=2,head_dim=64,"
                      "causal=1,scale=0.125'", message)
        self.assertIn("FLASHC_BUNDLE_PATH=DIR", message)


@requires_runtime
class CompileTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp()
        self.compiler = write_fake_compiler(self.tmp)
        self.cache_dir = os.path.join(self.tmp, "cache")
        self.log = os.path.join(self.tmp, "log")
        cache.clear_loaded()

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)
        cache.clear_loaded()

    def env(self, **extra):
        values = dict(FLASHC_BUNDLE_PATH=None, FLASHC_BUNDLE_CACHE=self.cache_dir, FLASHC_COMPILER=self.compiler,
                      FAKE_FLASHC_LOG=self.log, FAKE_FLASHC_FAIL=None, FAKE_FLASHC_VERSION=None)
        values.update(extra)
        return EnvPatch(**values)

    def compiles(self):
        if not os.path.exists(self.log):
            return 0
        with open(self.log) as f:
            return f.read().count("--emit=bundle")

    def version_runs(self):
        if not os.path.exists(self.log):
            return 0
        with open(self.log) as f:
            return f.read().split("\n").count("--version")

    def test_warm_lookup_starts_no_process_but_sees_device_library_edits(self):
        # A compiler that names its device library: the stamp gets a digest of the library's files, and a
        # later process checks the cached bundle without running `--version` until a header changes.
        library = os.path.join(self.tmp, "device")
        os.makedirs(os.path.join(library, "flashc", "device"))
        header = os.path.join(library, "flashc", "device", "mask.cuh")
        with open(header, "w") as f:
            f.write("// v1\n")
        version = "fake-flashc 1\ndevice library: %s (fingerprint 0123abcd)" % library
        cached = os.path.join(self.cache_dir, CONFIG.key)
        with self.env(FAKE_FLASHC_VERSION=version):
            self.assertEqual(cache.bundle_dir(CONFIG), cached)
            self.assertEqual(self.compiles(), 1)
            self.assertTrue(cache.bundle_compiler(cached).split("\n")[-1].startswith("headers "))
            runs = self.version_runs()
            cache.clear_loaded()  # a new process: no identity known
            self.assertEqual(cache.bundle_dir(CONFIG), cached)
            self.assertEqual((self.compiles(), self.version_runs()), (1, runs))
            with open(header, "w") as f:
                f.write("// v2, longer\n")
            cache.clear_loaded()
            self.assertEqual(cache.bundle_dir(CONFIG), cached)
            self.assertEqual(self.compiles(), 2)  # rebuilt against the edited library
            cache.clear_loaded()
            with EnvPatch(FLASHC_DEVICE_INCLUDE=library):  # another library setting: not the same digest
                self.assertEqual(cache.bundle_dir(CONFIG), cached)
            self.assertEqual(self.compiles(), 3)

    def test_compiles_once_into_the_cache(self):
        with self.env():
            path = cache.bundle_dir(CONFIG)
            self.assertEqual(path, os.path.join(self.cache_dir, CONFIG.key))
            self.assertTrue(os.path.isfile(os.path.join(path, "manifest.flashc")))
            with open(os.path.join(path, "spec.mlir")) as f:
                self.assertEqual(f.read(), CONFIG.spec_text())
            self.assertEqual(sorted(os.listdir(self.cache_dir)), [CONFIG.key])  # no temporary left behind
            bundle = cache.load_bundle(CONFIG)
            self.assertIs(cache.load_bundle(CONFIG), bundle)
            self.assertIn("vector_add", bundle.kernels)
            self.assertEqual(self.compiles(), 1)
        # Found in the cache next time, even with a failing compiler.
        cache.clear_loaded()
        with self.env(FAKE_FLASHC_FAIL="1"):
            self.assertEqual(cache.bundle_dir(CONFIG), os.path.join(self.cache_dir, CONFIG.key))
        self.assertEqual(self.compiles(), 1)

    def test_bundles_of_another_compiler_build_are_rebuilt(self):
        cached = os.path.join(self.cache_dir, CONFIG.key)
        with self.env(FAKE_FLASHC_VERSION="fake-flashc 1"):
            self.assertEqual(cache.bundle_dir(CONFIG), cached)
            self.assertTrue(cache.bundle_compiler(cached).startswith("fake-flashc 1\nbuild "))
            cache.bundle_dir(CONFIG)
            self.assertEqual(self.compiles(), 1)
        cache.clear_loaded()
        with self.env(FAKE_FLASHC_VERSION="fake-flashc 2"):
            self.assertEqual(cache.bundle_dir(CONFIG), cached)
            self.assertEqual(self.compiles(), 2)
            self.assertTrue(cache.bundle_compiler(cached).startswith("fake-flashc 2\nbuild "))
            self.assertEqual(os.listdir(self.cache_dir), [CONFIG.key])  # the stale copy is gone
        # A rebuilt compiler (same version text, another executable) is another build.
        cache.clear_loaded()
        os.utime(self.compiler, ns=(0, os.stat(self.compiler).st_mtime_ns + 10 ** 9))
        with self.env(FAKE_FLASHC_VERSION="fake-flashc 2"):
            cache.bundle_dir(CONFIG)
            self.assertEqual(self.compiles(), 3)
        # A bundle the user points at is used as it is, whoever built it.
        cache.clear_loaded()
        carried = os.path.join(self.tmp, "carried")
        shutil.copytree(cached, os.path.join(carried, OTHER.key))
        with self.env(FAKE_FLASHC_VERSION="fake-flashc 3", FLASHC_BUNDLE_PATH=carried):
            self.assertEqual(cache.bundle_dir(OTHER), os.path.join(carried, OTHER.key))
            self.assertEqual(self.compiles(), 3)

    def test_a_damaged_cache_entry_is_compiled_again(self):
        # Each failed on every later call (OSError: directory not empty, NotADirectoryError, UnicodeDecodeError).
        cached = os.path.join(self.cache_dir, CONFIG.key)
        damages = {"cut short": lambda: (os.makedirs(cached), open(os.path.join(cached, "part.cubin"), "w").close()),
                   "a file": lambda: (os.makedirs(self.cache_dir, exist_ok=True), open(cached, "w").close()),
                   "a manifest directory": lambda: os.makedirs(os.path.join(cached, cache.MANIFEST))}
        with self.env():
            for what, damage in damages.items():
                with self.subTest(what):
                    cache.clear_loaded()
                    damage()
                    self.assertEqual(cache.bundle_dir(CONFIG), cached)
                    self.assertTrue(cache.is_bundle_dir(cached))
                    shutil.rmtree(cached)
            cache.bundle_dir(CONFIG)
            with open(os.path.join(cached, cache.COMPILER_STAMP), "wb") as f:
                f.write(b"\xff\xfe")  # not UTF-8: not this build's stamp, so rebuilt
            before = self.compiles()
            cache.bundle_dir(CONFIG)
            self.assertEqual(self.compiles(), before + 1)
        root_file = os.path.join(self.tmp, "a-file")
        open(root_file, "w").close()
        with self.env(FLASHC_BUNDLE_CACHE=root_file):
            with self.assertRaisesRegex(flashc.CompilerError, "cannot be made or written"):
                cache.bundle_dir(CONFIG)

    def test_backward_form_reaches_the_compiler(self):
        transposed = AttentionConfig("bf16", 2, 2, 64, causal=True, backward_form="transposed")
        with self.env():
            cache.bundle_dir(transposed)
            cache.bundle_dir(CONFIG)
        with open(self.log) as f:
            lines = f.read().splitlines()
        self.assertTrue(lines[0].endswith("--backward-form=transposed"), lines[0])
        self.assertNotIn("--backward-form", lines[1])

    def test_compiler_failure(self):
        with self.env(FAKE_FLASHC_FAIL="1"):
            with self.assertRaises(flashc.CompilerError) as ctx:
                cache.bundle_dir(CONFIG)
        message = str(ctx.exception)
        self.assertIn("flashc failed (exit 1) compiling bf16 Hq=2 Hkv=2 D=64 causal", message)
        self.assertIn("fake failure", message)
        self.assertIn("--emit=bundle --arch=sm_90a", message)
        self.assertEqual(os.listdir(self.cache_dir), [])

    def test_prebuild(self):
        out = os.path.join(self.tmp, "out")
        with self.env():
            progress = io.StringIO()
            with contextlib.redirect_stderr(progress), contextlib.redirect_stdout(io.StringIO()):
                rc = prebuild.main(["--out", out, "--compiler", self.compiler, "attention:heads=2,head_dim=64,causal=1",
                                    "attention:heads=2,head_dim=128"])
            self.assertEqual(rc, 0)
            # A line per config on stderr: what it starts on, then how long it took.
            lines = progress.getvalue().splitlines()
            self.assertEqual(len(lines), 2, lines)
            self.assertRegex(lines[0], r"^\[1/2\] %s \(.*\) \.\.\. built in [0-9.]+ s$" % CONFIG.key)
            self.assertRegex(lines[1], r"^\[2/2\] %s \(.*\) \.\.\. built in [0-9.]+ s$" % OTHER.key)
            self.assertEqual(sorted(d for d in os.listdir(out) if d != "INDEX.txt"), sorted([CONFIG.key, OTHER.key]))
            with open(os.path.join(out, "INDEX.txt")) as f:
                index = f.read()
            self.assertIn(CONFIG.key + "  bf16 Hq=2 Hkv=2 D=64 causal", index)
            self.assertEqual(self.compiles(), 2)
            # Present bundles are kept; --force rebuilds them.
            self.assertEqual(prebuild.main(["--out", out, "--compiler", self.compiler,
                                            "attention:heads=2,head_dim=64,causal=1"]), 0)
            self.assertEqual(self.compiles(), 2)
            self.assertEqual(prebuild.main(["--out", out, "--compiler", self.compiler, "--force",
                                            "attention:heads=2,head_dim=64,causal=1"]), 0)
            self.assertEqual(self.compiles(), 3)
        # Bundles of another compiler build are rebuilt without --force.
        cache.clear_loaded()
        with self.env(FAKE_FLASHC_VERSION="fake-flashc 2"):
            self.assertEqual(prebuild.main(["--out", out, "--compiler", self.compiler,
                                            "attention:heads=2,head_dim=64,causal=1"]), 0)
            self.assertEqual(self.compiles(), 4)
            self.assertTrue(cache.bundle_compiler(os.path.join(out, CONFIG.key)).startswith("fake-flashc 2\n"))
        with self.env(FAKE_FLASHC_FAIL="1"):
            self.assertEqual(prebuild.main(["--out", out, "--compiler", self.compiler, "ffn:d=64,h=128"]), 1)
        # The carried directory is what FLASHC_BUNDLE_PATH points at.
        with EnvPatch(FLASHC_BUNDLE_PATH=out, FLASHC_BUNDLE_CACHE=os.path.join(self.tmp, "empty"),
                      FLASHC_COMPILER=os.path.join(self.tmp, "none")):
            self.assertEqual(cache.bundle_dir(OTHER), os.path.join(out, OTHER.key))

    def test_prebuild_for_other_archs_and_into_bad_places(self):
        out = os.path.join(self.tmp, "archs")
        with self.env(), contextlib.redirect_stderr(io.StringIO()), contextlib.redirect_stdout(io.StringIO()):
            # (--arch raised TypeError for every configuration.)
            self.assertEqual(prebuild.main(["--out", out, "--compiler", self.compiler, "--arch", "sm_90a,sm_80",
                                            "ffn:d=64,h=256"]), 0)
            with open(self.log) as f:
                self.assertIn("--arch=sm_90a,sm_80", f.read())
            # A file where a bundle goes is replaced; a file as --out is a bad command line.
            key = os.listdir(out)[0] if os.listdir(out)[0] != "INDEX.txt" else os.listdir(out)[1]
            shutil.rmtree(os.path.join(out, key))
            open(os.path.join(out, key), "w").close()
            self.assertEqual(prebuild.main(["--out", out, "--compiler", self.compiler, "--arch", "sm_90a,sm_80",
                                            "ffn:d=64,h=256"]), 0)
            self.assertTrue(cache.is_bundle_dir(os.path.join(out, key)))
            with self.assertRaises(SystemExit) as ctx:
                prebuild.main(["--out", os.path.join(out, "INDEX.txt"), "ffn:d=64,h=256"])
            self.assertEqual(ctx.exception.code, 2)

    def test_prebuild_command_line(self):
        env = python_env()
        proc = subprocess.run([sys.executable, "-m", "flashc.prebuild", "--list", "bench"], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, universal_newlines=True, env=env)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertEqual(len(proc.stdout.strip().splitlines()), len(configs.BENCH_ATTENTION) + len(configs.BENCH_FFN))
        proc = subprocess.run([sys.executable, "-m", "flashc.prebuild", "no-such-set"], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, universal_newlines=True, env=env)
        self.assertEqual(proc.returncode, 2)
        self.assertIn("unknown config set 'no-such-set'", proc.stderr)


REAL_COMPILER = find_tool("flashc", "FLASHC_COMPILER")


@requires_runtime
class RealCompilerTest(unittest.TestCase):
    """The real flashc compiles a small attention spec into a bundle with the programs flashc.torch launches."""

    def test_attention_bundle(self):
        if REAL_COMPILER is None:
            skip_loudly("flashc compiler not built")
            self.skipTest("flashc compiler not built")
        tmp = tempfile.mkdtemp()
        try:
            config = AttentionConfig("bf16", 2, 2, 64, causal=True)
            try:
                path = cache.compile_bundle(config, os.path.join(tmp, config.key), compiler=REAL_COMPILER, timeout=600)
            except flashc.CompilerError as e:
                if "not yet implemented" in str(e):
                    skip_loudly("flashc --emit=bundle not implemented yet: %s" % e)
                    self.skipTest("flashc --emit=bundle is not implemented in this build")
                raise
            bundle = flashc.Bundle(path)
            # Both programs exist and their parameters map onto what flashc.torch passes.
            programs.resolve(bundle, config, "forward")
            programs.resolve(bundle, config, "backward")
        finally:
            shutil.rmtree(tmp, ignore_errors=True)

    def test_ffn_bundles(self):
        """An FFN bundle has the inference forward, the training forward and the backward, the saved activations
        named as FfnConfig.saved_names in both of the last two (plain: pre, h; gated: gate, up, h)."""
        if REAL_COMPILER is None:
            skip_loudly("flashc compiler not built")
            self.skipTest("flashc compiler not built")
        tmp = tempfile.mkdtemp()
        try:
            for config in (FfnConfig("bf16", 64, 128, activation="gelu_tanh", has_b1=True, has_b2=True),
                           FfnConfig("bf16", 64, 128, activation="silu", gated=True)):
                with self.subTest(config=config.describe()):
                    path = cache.compile_bundle(config, os.path.join(tmp, config.key), compiler=REAL_COMPILER,
                                                timeout=600)
                    bundle = flashc.Bundle(path)
                    resolved = {d: programs.resolve(bundle, config, d)
                                for d in ("forward", "forward_train", "backward")}
                    self.assertEqual([program for program, _ in resolved.values()],
                                     ["ffn", "ffn_forward_train", "ffn_backward"])
                    for direction in ("forward_train", "backward"):
                        mapping = resolved[direction][1]
                        self.assertEqual({n: mapping[n] for n in config.saved_names()},
                                         {n: n for n in config.saved_names()}, direction)
                    self.assertFalse(set(config.saved_names()) & set(resolved["forward"][1]))
        finally:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    unittest.main()
