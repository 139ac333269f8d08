"""Where bundles come from: FLASHC_BUNDLE_PATH, then the user cache, then the
flashc compiler (when one is found), keyed by a configuration's cache key.

A compiled bundle records which compiler built it (COMPILER_STAMP: that compiler's `--version`, which names
its device library's fingerprint, and the executable's path, size and modification time). A cached bundle from another compiler build is rebuilt when a compiler is
at hand; bundles found through FLASHC_BUNDLE_PATH are the user's choice and used as they are."""

import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading

from .errors import BundleNotFoundError, CompilerError
from .spec import DEFAULT_ARCHS

ENV_BUNDLE_PATH = "FLASHC_BUNDLE_PATH"
ENV_BUNDLE_CACHE = "FLASHC_BUNDLE_CACHE"
ENV_COMPILER = "FLASHC_COMPILER"
MANIFEST = "manifest.flashc"
COMPILER_STAMP = "compiler.txt"

_SOURCE_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def runtime_cache_dir():
    """The runtime's cache directory (same rule as the C++ runtime: FLASHC_CACHE_DIR,
    $XDG_CACHE_HOME/flashc, ~/.cache/flashc)."""
    if os.environ.get("FLASHC_CACHE_DIR"):
        return os.environ["FLASHC_CACHE_DIR"]
    if os.environ.get("XDG_CACHE_HOME"):
        return os.path.join(os.environ["XDG_CACHE_HOME"], "flashc")
    return os.path.join(os.path.expanduser("~"), ".cache", "flashc")


def bundle_cache_dir():
    """Where compiled bundles are cached: FLASHC_BUNDLE_CACHE, else <runtime cache>/bundles."""
    return os.environ.get(ENV_BUNDLE_CACHE) or os.path.join(runtime_cache_dir(), "bundles")


def search_path():
    """The directories of FLASHC_BUNDLE_PATH (colon-separated), in order."""
    return [p for p in os.environ.get(ENV_BUNDLE_PATH, "").split(os.pathsep) if p]


def is_bundle_dir(path):
    return os.path.isfile(os.path.join(path, MANIFEST))


def find_bundle_dir(config):
    """The first existing bundle directory for `config`, or None."""
    for root in search_path() + [bundle_cache_dir()]:
        candidate = os.path.join(root, config.key)
        if is_bundle_dir(candidate):
            return candidate
    return None


def find_compiler():
    """The flashc compiler executable: FLASHC_COMPILER, PATH, or build*/bin/flashc of this source tree."""
    env = os.environ.get(ENV_COMPILER)
    if env:
        return env if os.access(env, os.X_OK) else None
    found = shutil.which("flashc")
    if found:
        return found
    candidates = []
    try:
        for entry in os.listdir(_SOURCE_ROOT):
            if entry.startswith("build"):
                path = os.path.join(_SOURCE_ROOT, entry, "bin", "flashc")
                if os.path.isfile(path) and os.access(path, os.X_OK):
                    candidates.append(path)
    except OSError:
        pass
    candidates.sort(key=os.path.getmtime, reverse=True)
    return candidates[0] if candidates else None


_identities = {}


def _build_of(compiler):
    """Which executable build `compiler` is: (path, size, modification time)."""
    try:
        st = os.stat(compiler)
        return (os.path.realpath(compiler), st.st_size, st.st_mtime_ns)
    except OSError as e:
        raise CompilerError("cannot use the flashc compiler %s: %s" % (compiler, e))


def _build_line(build):
    return "build %s size %d mtime %d" % build


_DEVICE_LIBRARY = re.compile(r"^device library: (.*) \(fingerprint [0-9a-f]+\)$", re.M)


def _headers_line(version_text):
    """A cheap stand-in for the device-library fingerprint that `--version` prints: the FLASHC_DEVICE_INCLUDE
    setting and every file's path, size and mtime under the library directory the version text names (None when
    it names none). Bundles compile against those headers, so an edited header must make them stale."""
    m = _DEVICE_LIBRARY.search(version_text)
    if not m:
        return None
    root, entries = m.group(1), []
    for base, dirs, files in os.walk(root):
        dirs.sort()
        for name in sorted(files):
            try:
                st = os.stat(os.path.join(base, name))
            except OSError:
                continue
            entries.append("%s %d %d" % (os.path.relpath(os.path.join(base, name), root), st.st_size, st.st_mtime_ns))
    digest = hashlib.sha1("\n".join([os.environ.get("FLASHC_DEVICE_INCLUDE", "")] + entries).encode()).hexdigest()
    return "headers " + digest


def compiler_identity(compiler):
    """What `compiler --version` prints (its version and device-library fingerprint) and which executable build
    it is (path, size, modification time: a rebuilt compiler may emit other kernels under the same version);
    computed once per process and build."""
    build = _build_of(compiler)
    identity = _identities.get(build)
    if identity is None:
        try:
            proc = subprocess.run([compiler, "--version"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60)
            text = proc.stdout.decode("utf-8", "replace").strip() if proc.returncode == 0 else ""
        except (OSError, subprocess.TimeoutExpired):
            text = ""
        text = text or "unversioned"
        headers = _headers_line(text)
        identity = _identities[build] = "\n".join([text, _build_line(build)] + ([headers] if headers else []))
    return identity


def bundle_compiler(path):
    """The compiler identity recorded in bundle directory `path` (None: not recorded)."""
    try:
        with open(os.path.join(path, COMPILER_STAMP)) as f:
            return f.read().strip()
    except (OSError, ValueError):  # (a damaged stamp, not UTF-8: not this build's)
        return None


def is_current(path, compiler):
    """Whether the bundle in `path` was built by this build of `compiler` against the same device library. Fast
    path: the stamp names the executable build and a digest of the device headers' listing; when both still hold,
    no `compiler --version` process is started (a warm lookup of a cached bundle: ~35 ms -> well under 1 ms)."""
    stamp = bundle_compiler(path)
    if stamp is None:
        return False
    lines = stamp.split("\n")
    if (len(lines) >= 3 and lines[-1].startswith("headers ") and lines[-2] == _build_line(_build_of(compiler))
            and _headers_line(stamp) == lines[-1]):
        return True
    return stamp == compiler_identity(compiler)


def compile_bundle(config, out_dir, compiler=None, archs=None, timeout=None, extra_flags=()):
    """Compile `config` with the flashc compiler into directory `out_dir` (which must not exist yet;
    it appears atomically, with the spec beside the bundle as spec.mlir). Returns out_dir. extra_flags: flashc
    options besides the configuration's (flashc.tune: --tuning-table=FILE)."""
    compiler = compiler or find_compiler()
    if not compiler:
        raise CompilerError("no flashc compiler found (set %s, put flashc on PATH, or build it: "
                            "cmake -G Ninja -S . -B build && ninja -C build flashc)" % ENV_COMPILER)
    archs = tuple(archs or config.archs or DEFAULT_ARCHS)
    parent = os.path.dirname(os.path.abspath(out_dir))
    try:
        os.makedirs(parent, exist_ok=True)
        work = tempfile.mkdtemp(prefix=".tmp-%s-" % os.path.basename(out_dir), dir=parent)
    except OSError as e:
        raise CompilerError("cannot compile into %s: its directory %s cannot be made or written (%s)"
                            % (out_dir, parent, e.strerror or e))
    try:
        spec_path = os.path.join(work, "spec.mlir")
        with open(spec_path, "w") as f:
            f.write(config.spec_text())
        staged = os.path.join(work, "bundle")
        cmd = [compiler, spec_path, "-o", staged, "--emit=bundle", "--arch=" + ",".join(archs)]
        cmd += list(config.compiler_flags) + list(extra_flags)
        try:
            proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=timeout)
        except subprocess.TimeoutExpired:
            raise CompilerError("%s timed out after %s s compiling %s" % (compiler, timeout, config.describe()))
        except OSError as e:
            raise CompilerError("cannot run the flashc compiler %s: %s" % (compiler, e))
        if proc.returncode != 0:
            log = (proc.stderr or proc.stdout).decode("utf-8", "replace").strip()
            raise CompilerError("flashc failed (exit %d) compiling %s (key %s): %s\ncommand: %s" % (
                proc.returncode, config.describe(), config.key, log[-4000:] or "(no output)", " ".join(cmd)))
        if not is_bundle_dir(staged):
            raise CompilerError("flashc exited 0 but wrote no %s in %s (command: %s)" % (MANIFEST, staged, " ".join(cmd)))
        shutil.copyfile(spec_path, os.path.join(staged, "spec.mlir"))
        with open(os.path.join(staged, COMPILER_STAMP), "w") as f:
            f.write(compiler_identity(compiler) + "\n")
        try:
            os.rename(staged, out_dir)
        except OSError:
            if not is_bundle_dir(out_dir):  # not a lost race with another process: a real error
                raise
        return out_dir
    finally:
        shutil.rmtree(work, ignore_errors=True)


def bundle_dir(config, compile=True):
    """The bundle directory for `config`: found, or compiled into the cache when a compiler exists."""
    found = find_bundle_dir(config)
    cached = os.path.join(bundle_cache_dir(), config.key)
    compiler = find_compiler() if compile else None
    stale = found == cached and compiler is not None and not is_current(found, compiler)
    if found and not stale:
        return found
    # (A cache entry that is no bundle, cut short or damaged, is set aside and compiled again like a stale one.)
    if stale or (compiler is not None and found is None and os.path.lexists(cached)):
        return _rebuild(config, cached, compiler)
    if compiler:
        return compile_bundle(config, cached, compiler=compiler)
    looked = ["%s/%s" % (p, config.key) for p in search_path()] + [cached]
    from .configs import format_config
    raise BundleNotFoundError(
        "no flashc bundle for %s (key %s). Looked in: %s (%s is %s). No flashc compiler is available to build it "
        "(set %s or put flashc on PATH). Produce it on a machine with the compiler: "
        "python -m flashc.prebuild --out DIR '%s' and set %s=DIR here." % (
            config.describe(), config.key, ", ".join(looked), ENV_BUNDLE_PATH,
            "unset" if not search_path() else "set", ENV_COMPILER, format_config(config), ENV_BUNDLE_PATH))


def _rebuild(config, path, compiler):
    """Recompile the cached bundle `path` that another compiler build made: set it aside, compile, drop it."""
    stale = tempfile.mkdtemp(prefix=".stale-%s-" % config.key, dir=os.path.dirname(path))
    try:
        os.rename(path, os.path.join(stale, "bundle"))
    except OSError:
        pass  # another process moved it first
    try:
        return compile_bundle(config, path, compiler=compiler)
    finally:
        shutil.rmtree(stale, ignore_errors=True)


_loaded = {}
_loaded_lock = threading.Lock()


_by_key = {}


def load_bundle(config):
    """The opened Bundle for `config` (one per process and bundle directory; looked up once per key)."""
    bundle = _by_key.get(config.key)
    if bundle is not None:
        return bundle
    path = bundle_dir(config)
    with _loaded_lock:
        bundle = _loaded.get(path)
        if bundle is None:
            from .bundle import Bundle
            bundle = Bundle(path)
            _loaded[path] = bundle
        _by_key[config.key] = bundle
        return bundle


def clear_loaded():
    """Forget opened bundles and compiler identities (tests; after changing FLASHC_BUNDLE_PATH)."""
    with _loaded_lock:
        _loaded.clear()
        _identities.clear()
        _by_key.clear()
    binding = sys.modules.get(__package__ + ".torch")
    if binding is not None:
        binding._resolved.clear()
