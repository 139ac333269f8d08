"""Compile the bundles that flashc.torch needs ahead of time, on a machine with
the flashc compiler, to carry them to one without it (the GPU machine):

    python -m flashc.prebuild --out DIR [CONFIG_OR_SET ...]

CONFIG_OR_SET: a set name (bench, tests, all, bench-attention, bench-ffn, tests-attention, tests-ffn,
tests-key-offset, tests-transformers, bench-ring-window, ...: flashc.configs.SETS; default all) or one config such as
'attention:dtype=bf16,heads=16,head_dim=128,causal=1'. Each bundle lands in DIR/<key>; DIR/INDEX.txt lists key
and config. Point FLASHC_BUNDLE_PATH at DIR where they are used. A bundle already in DIR is kept when this
compiler build made it (see flashc.cache.COMPILER_STAMP), else rebuilt; --force rebuilds all. Progress goes to
stderr, a line per config as it starts and ends ("[3/17] KEY (CONFIG) ... built in 1.2 s"); the summary to stdout.
Exit status: 0 all built (or already present), 1 some failed, 2 bad command line.
"""

import argparse
import dataclasses
import os
import sys
import time

from . import cache, configs
from .errors import FlashcError
from .spec import DecodeConfig, KvAppendConfig, MoeConfig, VarlenConfig


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m flashc.prebuild", description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    parser.add_argument("configs", nargs="*", help="set names or config texts (default: all)")
    parser.add_argument("--out", help="output directory (bundles go to OUT/<key>)")
    parser.add_argument("--compiler", help="flashc executable (default: FLASHC_COMPILER, PATH, build*/bin/flashc)")
    parser.add_argument("--arch", default=None, help="comma-separated architectures (default sm_90a)")
    parser.add_argument("--force", action="store_true", help="rebuild bundles that already exist")
    parser.add_argument("--list", action="store_true", help="print key and config of each, build nothing")
    parser.add_argument("--timeout", type=float, default=900, help="seconds per compile (default 900)")
    parser.add_argument("--tuning-table", help="flashc --tuning-table=FILE: plans from FILE instead of the built-in "
                                               "table (an A/B of a plan; the bundles keep their keys: use their "
                                               "own --out)")
    args = parser.parse_args(argv)
    try:
        selected = configs.resolve(args.configs or ["all"])
    except FlashcError as e:
        parser.error(str(e))
    if args.list:
        for c in selected:
            print("%s  %s" % (c.key, configs.format_config(c)))
        return 0
    if not args.out:
        parser.error("--out DIR is required (unless --list)")
    compiler = args.compiler or cache.find_compiler()
    if not compiler:
        print("prebuild: error: no flashc compiler found (set FLASHC_COMPILER, put flashc on PATH or build it: "
              "ninja -C build flashc)", file=sys.stderr)
        return 1
    archs = tuple(a for a in args.arch.split(",") if a) if args.arch else None
    try:
        os.makedirs(args.out, exist_ok=True)
    except OSError as e:
        parser.error("--out %s: cannot make the output directory (%s)" % (args.out, e.strerror or e))
    failures, built, present = [], 0, 0
    started = time.time()

    def progress(text, end="\n"):
        print(text, end=end, file=sys.stderr, flush=True)

    for i, c in enumerate(selected, 1):
        if archs and not isinstance(c, (DecodeConfig, KvAppendConfig, MoeConfig, VarlenConfig)):  # (sm_90a only: their bundles keep that arch)
            c = dataclasses.replace(c, archs=archs)
        target = os.path.join(args.out, c.key)
        label = "[%d/%d] %s (%s)" % (i, len(selected), c.key, configs.format_config(c))
        if cache.is_bundle_dir(target) and not args.force:
            if cache.is_current(target, compiler):
                progress("%s: present" % label)
                present += 1
                continue
            progress("%s: built by another compiler build, rebuilding" % label)
        if os.path.isdir(target) and not os.path.islink(target):
            import shutil
            shutil.rmtree(target)
        elif os.path.lexists(target):  # a file or link where the bundle goes: not a bundle, replaced
            os.remove(target)
        # Said before compiling, so a long compile shows what it is working on.
        progress("%s ..." % label, end="")
        start = time.time()
        try:
            cache.compile_bundle(c, target, compiler=compiler, timeout=args.timeout,
                                 extra_flags=("--tuning-table=" + os.path.abspath(args.tuning_table),)
                                 if args.tuning_table else ())
        except FlashcError as e:
            progress(" FAILED after %.1f s\n  %s" % (time.time() - start, str(e).replace("\n", "\n  ")))
            failures.append(c)
            continue
        built += 1
        progress(" built in %.1f s" % (time.time() - start))
    with open(os.path.join(args.out, "INDEX.txt"), "w") as f:
        for name in sorted(os.listdir(args.out)):
            spec = os.path.join(args.out, name, "spec.mlir")
            if cache.is_bundle_dir(os.path.join(args.out, name)) and os.path.isfile(spec):
                with open(spec) as s:
                    first = s.readline().strip()
                f.write("%s  %s\n" % (name, first.split(": ", 1)[-1]))
    print("prebuild: %d built, %d already present, %d failed in %.1f s -> %s" % (
        built, present, len(failures), time.time() - started, args.out))
    for c in failures:
        print("  failed: %s" % configs.format_config(c))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
