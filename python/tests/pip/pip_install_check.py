#!/usr/bin/env python3
"""ctest python.pip_install: `pip install` the repository (pyproject.toml: scikit-build-core builds the runtime
without MLIR) into a scratch directory, offline, then run the Python tests against that installed package from
outside the source tree (FLASHC_TEST_INSTALLED=1: no source-tree python/ on sys.path, no FLASHC_RUNTIME_LIB).

Offline and without build isolation: the build backend must already be importable by this Python. CI machines
install through apt only, so without scikit-build-core (or pip) this prints a SKIPPED line and exits 77, which
ctest reports as Skipped. To run it: `python3 -m pip install scikit-build-core`, or point FLASHC_PIP_PYTHON (or
--python) at the interpreter of a venv that has it. The build directory is kept (--work), so a rerun rebuilds only what changed.
"""

import argparse
import os
import shutil
import subprocess
import sys

SKIP = 77


def skip(why):
    print("SKIPPED: python.pip_install: %s" % why)
    sys.exit(SKIP)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--source", required=True, help="repository root (holds pyproject.toml)")
    parser.add_argument("--work", required=True, help="scratch directory (build tree, install target, caches)")
    parser.add_argument("--python", default=os.environ.get("FLASHC_PIP_PYTHON") or sys.executable,
                        help="interpreter with pip and scikit-build-core (default: $FLASHC_PIP_PYTHON, this one)")
    args = parser.parse_args()
    python = args.python

    probe = subprocess.run([python, "-c", "import pip, scikit_build_core; print(scikit_build_core.__version__)"],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True)
    if probe.returncode != 0:
        skip("%s cannot import pip and scikit-build-core (offline, no build isolation: install them, e.g. "
             "`%s -m pip install scikit-build-core`, to run this test): %s"
             % (python, python, probe.stderr.strip().splitlines()[-1] if probe.stderr.strip() else "?"))
    print("scikit-build-core %s (%s)" % (probe.stdout.strip(), python))

    work = os.path.abspath(args.work)
    target = os.path.join(work, "site-packages")
    shutil.rmtree(target, ignore_errors=True)  # a fresh install each run; the build tree is reused
    os.makedirs(work, exist_ok=True)
    env = dict(os.environ)
    env.setdefault("CMAKE_BUILD_PARALLEL_LEVEL", "2")
    install = [python, "-m", "pip", "install", "--no-build-isolation", "--no-deps", "--no-index",
               "--disable-pip-version-check", "--target", target,
               "--config-settings=build-dir=" + os.path.join(work, "build"), args.source]
    print("+ " + " ".join(install), flush=True)
    if subprocess.run(install, env=env, cwd=work).returncode != 0:
        print("FAILED: pip install of %s" % args.source)
        return 1

    # The installed package only: its own library and headers, not the source tree's or a build tree's.
    env = dict(os.environ, PYTHONPATH=target, FLASHC_TEST_INSTALLED="1", PYTHONDONTWRITEBYTECODE="1",
               FLASHC_CACHE_DIR=os.path.join(work, "cache"))
    for name in ("FLASHC_RUNTIME_LIB", "FLASHC_DEVICE_INCLUDE"):
        env.pop(name, None)
    tests = os.path.join(args.source, "python", "tests")
    run = [python, "-m", "unittest", "discover", "-s", tests, "-t", tests, "-v"]
    print("+ PYTHONPATH=%s FLASHC_TEST_INSTALLED=1 %s" % (target, " ".join(run)), flush=True)
    return subprocess.run(run, env=env, cwd=work).returncode


if __name__ == "__main__":
    sys.exit(main())
