"""The tuner's first half, on the machine with the compiler: what to time, compiled.

For each configuration, `flashc --print-tuning-space --tuning-table=none` names its tunable kernels, their tuning keys,
the programs that launch them, their hand-rule plan and the points of their kinds' tuning spaces. Kernels of one
configuration that share a key form one unit (an entry applies to all of them). For every point of a unit, the
configuration is compiled with a one-entry table (ARCH KIND ... -> POINT); the hand rule with --tuning-table=none, one
bundle a configuration. Bundles' files are stored once by content (blobs/<sha256>.gz) so that the plan directory,
which travels to the GPU machine, holds each kernel's cubin once however many candidates share it.

plan.json records it all and is rewritten after every compile: an interrupted run picks up where it stopped.
"""

import dataclasses
import gzip
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

from .. import cache, configs
from ..errors import FlashcError
from ..spec import AttentionConfig, FfnConfig

PLAN = "plan.json"
BLOBS = "blobs"
PLAN_VERSION = 1
HAND_RULE_TABLE = "none"

# The benchmark's sizes (bench/README.md): attention B*S = 16k tokens at S = 1k, 4k, 16k; the FFN rows' M.
ATTENTION_SEQS = (1024, 4096, 16384)
ATTENTION_TOKENS = 16384
FFN_ROWS = {(d, h): m for m, d, h in configs.BENCH_FFN_SHAPES}
FFN_DEFAULT_ROWS = 16384


def shapes_of(config, seqs=ATTENTION_SEQS, tokens=ATTENTION_TOKENS):
    """The sizes a configuration is timed at: [{"batch", "seq"}] (attention) or [{"rows"}] (FFN)."""
    if isinstance(config, AttentionConfig):
        return [{"batch": max(1, tokens // s), "seq": s} for s in seqs]
    return [{"rows": FFN_ROWS.get((config.d_model, config.d_hidden), FFN_DEFAULT_ROWS)}]


def shape_label(shape):
    return "B=%d S=%d" % (shape["batch"], shape["seq"]) if "seq" in shape else "M=%d" % shape["rows"]


def tuning_space(compiler, config, arch, timeout=300):
    """flashc --print-tuning-space of `config` for `arch` (hand rules: no table), parsed."""
    with tempfile.TemporaryDirectory(prefix="flashc-tune-") as work:
        spec = os.path.join(work, "spec.mlir")
        with open(spec, "w") as f:
            f.write(config.spec_text())
        cmd = [compiler, spec, "--print-tuning-space", "--tuning-table=none", "--arch=" + arch]
        cmd += list(config.compiler_flags)
        proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=timeout)
        if proc.returncode != 0:
            raise FlashcError("flashc --print-tuning-space failed for %s: %s" % (
                config.describe(), proc.stderr.decode("utf-8", "replace").strip()[-2000:]))
        return json.loads(proc.stdout.decode())


def units_of(space):
    """The tuning units of one configuration's report: kernels grouped by key, in the report's order."""
    units = {}
    for kernel in space["kernels"]:
        unit = units.setdefault(kernel["key"], {"key": kernel["key"], "key_fields": kernel["key_fields"],
                                               "kernels": [], "directions": [], "hand_rule": kernel["plan"],
                                               "candidates": list(kernel["candidates"])})
        unit["kernels"].append(kernel["kernel"])
        for program in kernel["programs"]:
            direction = ("backward" if program.endswith("_backward")
                         else "forward_train" if program.endswith("_forward_train") else "forward")
            if direction not in unit["directions"]:
                unit["directions"].append(direction)
    return list(units.values())


def entry_text(key, point):
    """The one-entry table that selects `point` for `key`."""
    return "%s -> %s\n" % (key, point)


def _digest(*parts):
    h = hashlib.sha256()
    for p in parts:
        h.update(p.encode())
        h.update(b"\0")
    return h.hexdigest()[:16]


def bundle_id(config, table_text):
    """The candidate bundle's name: the configuration's key and a digest of its table."""
    return "%s_t%s" % (config.key, _digest(table_text))


class PlanDamaged(FlashcError):
    """The plan directory cannot serve a task (plan.json or a blob missing or damaged): the run stops, nothing is
    recorded against a candidate, and it resumes once the directory is whole."""


def _seqs_text(seqs):
    return ",".join(str(s) for s in seqs)


class Plan:
    """plan.json of a plan directory, with the blob store beside it."""

    def __init__(self, directory, data):
        self.directory = directory
        self.data = data

    @classmethod
    def load(cls, directory):
        path = os.path.join(directory, PLAN)
        try:
            with open(path) as f:
                data = json.load(f)
        except OSError as e:
            raise PlanDamaged("%s: no plan to read (%s): make one with python -m flashc.tune plan --out %s"
                              % (path, e.strerror or e, directory))
        except ValueError as e:
            raise PlanDamaged("%s is not a plan (not JSON: %s)" % (path, e))
        if not isinstance(data, dict) or data.get("version") != PLAN_VERSION:
            raise FlashcError("%s: plan version %r, this tuner reads %d" % (
                path, data.get("version") if isinstance(data, dict) else None, PLAN_VERSION))

        def require(value, where, fields):  # (what the tuner's steps read: a damaged part named, not a KeyError)
            if not isinstance(value, dict):
                raise PlanDamaged("%s is damaged: %s is not an object" % (path, where))
            for field, kind in fields:
                if not isinstance(value.get(field), kind):
                    raise PlanDamaged("%s is damaged: %s's %r is missing or not a %s" % (path, where, field,
                                                                                        kind.__name__))

        require(data, "the plan", (("arch", str), ("compiler", str), ("configs", list), ("bundles", dict)))
        for i, entry in enumerate(data["configs"]):
            require(entry, "configuration %d" % i, (("config", str), ("shapes", list), ("units", list)))
            for j, unit in enumerate(entry["units"]):
                require(unit, "configuration %d's unit %d" % (i, j),
                        (("key", str), ("hand_rule", str), ("candidates", list), ("directions", list),
                         ("bundles", dict), ("errors", dict)))
        return cls(directory, data)

    @classmethod
    def open_or_create(cls, directory, arch, compiler_identity, sizes=None):
        """The plan in `directory`, resumed, or a new one. `sizes` ({"kinds", "seqs", "tokens"}) is what the plan was
        asked for: a resumed plan must have been made with the same (its configurations keep the sizes and kinds they
        were enumerated with)."""
        if os.path.isfile(os.path.join(directory, PLAN)):
            plan = cls.load(directory)
            if plan.data["arch"] != arch:
                raise FlashcError("%s holds a plan for %s, not %s: give another --out" % (directory, plan.data["arch"],
                                                                                        arch))
            if plan.data["compiler"] != compiler_identity:
                raise FlashcError("%s was compiled by another compiler build; start it again in a new directory "
                                  "(or delete it)" % directory)
            made = plan.data.get("sizes")
            if sizes is not None and made is not None and made != sizes:
                raise FlashcError("%s was planned with --kinds %s --seqs %s --tokens %d, not --kinds %s --seqs %s "
                                  "--tokens %d: give the same, or another --out" % (
                                      directory, ",".join(made["kinds"]) or "(all)", _seqs_text(made["seqs"]),
                                      made["tokens"], ",".join(sizes["kinds"]) or "(all)", _seqs_text(sizes["seqs"]),
                                      sizes["tokens"]))
            return plan
        os.makedirs(os.path.join(directory, BLOBS), exist_ok=True)
        return cls(directory, {"version": PLAN_VERSION, "arch": arch, "compiler": compiler_identity,
                               "created": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
                               "sizes": sizes, "configs": [], "bundles": {}})

    def save(self):
        path = os.path.join(self.directory, PLAN)
        with open(path + ".tmp", "w") as f:
            json.dump(self.data, f, indent=1, sort_keys=True)
        os.replace(path + ".tmp", path)  # never half written, even when interrupted

    def config_entry(self, config):
        text = configs.format_config(config)
        for entry in self.data["configs"]:
            if entry["config"] == text:
                return entry
        return None

    def store(self, bundle_dir):
        """The bundle's files, each stored once by content: {relative path: sha256}."""
        files = {}
        for base, _, names in os.walk(bundle_dir):
            for name in sorted(names):
                path = os.path.join(base, name)
                with open(path, "rb") as f:
                    content = f.read()
                digest = hashlib.sha256(content).hexdigest()
                blob = os.path.join(self.directory, BLOBS, digest + ".gz")
                if not os.path.exists(blob):
                    with gzip.open(blob + ".tmp", "wb") as out:
                        out.write(content)
                    os.replace(blob + ".tmp", blob)
                files[os.path.relpath(path, bundle_dir)] = digest
        return files

    def materialize(self, bundle, target):
        """Writes bundle `bundle`'s files under `target` (kept when already complete with these very files: a work
        directory unpacked from another plan, or another compiler's, is written again)."""
        entry = self.data["bundles"].get(bundle)
        if not isinstance(entry, dict) or not isinstance(entry.get("files"), dict):
            raise PlanDamaged("plan %s has no files for bundle %s" % (self.directory, bundle))
        files = entry["files"]
        stamp = _digest(self.data["compiler"], *("%s=%s" % item for item in sorted(files.items())))
        done = os.path.join(target, ".complete")
        if os.path.exists(done):
            with open(done) as f:
                if f.read().strip() == stamp:
                    return target
        shutil.rmtree(target, ignore_errors=True)
        for rel, digest in files.items():
            path = os.path.join(target, rel)
            blob = os.path.join(self.directory, BLOBS, digest + ".gz")
            os.makedirs(os.path.dirname(path), exist_ok=True)
            try:
                with gzip.open(blob, "rb") as f, open(path + ".tmp", "wb") as out:
                    shutil.copyfileobj(f, out)
                with open(path + ".tmp", "rb") as f:
                    ok = hashlib.sha256(f.read()).hexdigest() == digest
            except (OSError, EOFError) as e:  # (gzip's BadGzipFile is an OSError)
                raise PlanDamaged("plan %s: blob %s of bundle %s (%s) cannot be read: %s (copy the whole plan "
                                  "directory)" % (self.directory, digest, bundle, rel, e))
            if not ok:
                raise PlanDamaged("plan %s: blob %s of bundle %s (%s) does not hold what it was stored with (copy "
                                  "the whole plan directory)" % (self.directory, digest, bundle, rel))
            os.replace(path + ".tmp", path)
        with open(done, "w") as f:
            f.write(stamp + "\n")
        return target

    def units(self):
        """(config entry, unit) for every unit of the plan."""
        for entry in self.data["configs"]:
            for unit in entry["units"]:
                yield entry, unit


def build(out, items, compiler=None, arch="sm_90a", kinds=None, seqs=ATTENTION_SEQS, tokens=ATTENTION_TOKENS,
          list_only=False, timeout=900, progress=None):
    """The CPU half: enumerate and compile every candidate of `items` (set names or config texts) into plan
    directory `out`. Returns (plan, failures). With list_only, enumerates only (nothing is compiled or written)."""
    say = progress or (lambda text: print(text, file=sys.stderr, flush=True))
    compiler = compiler or cache.find_compiler()
    if not compiler:
        raise FlashcError("no flashc compiler found (set FLASHC_COMPILER, put flashc on PATH or build it)")
    # Decode, append, packed-sequence and mixture-of-experts configurations are one library block a kernel each,
    # planned by the device library (no tuning key): a set's are passed over, one named alone is refused.
    tunable = []
    for c in configs.resolve(items):
        if isinstance(c, (AttentionConfig, FfnConfig)):
            tunable.append(c)
        else:
            say("%s: not tuned (its kernels are the device library's blocks, planned there)" % configs.format_config(c))
    if not tunable:
        raise FlashcError("nothing to tune in %s: the tuner takes attention and FFN configurations"
                          % " ".join(items))
    selected = [dataclasses.replace(c, archs=(arch,)) for c in tunable]
    identity = cache.compiler_identity(compiler)
    sizes = {"kinds": sorted(kinds or ()), "seqs": list(seqs), "tokens": tokens}
    plan = Plan(out, {"version": PLAN_VERSION, "arch": arch, "compiler": identity, "configs": [], "bundles": {}}) \
        if list_only else Plan.open_or_create(out, arch, identity, sizes)
    failures = []
    # Enumerate first (flashc --print-tuning-space a configuration), so that a --kinds no kernel has is refused before
    # anything is compiled or the plan is written.
    kinds_seen, entries = set(), []
    for config in selected:
        entry = None if list_only else plan.config_entry(config)
        if entry is None:
            every = units_of(tuning_space(compiler, config, arch))
            kinds_seen.update(u["key_fields"]["kind"] for u in every)
            units = [u for u in every if not kinds or u["key_fields"]["kind"] in kinds]
            entry = {"config": configs.format_config(config), "key": config.key, "shapes": shapes_of(config, seqs, tokens),
                     "units": units}
            for unit in units:
                unit["bundles"] = {}
                unit["errors"] = {}
            plan.data["configs"].append(entry)
        entries.append((config, entry))
    unknown = sorted(set(kinds or ()) - kinds_seen) if kinds_seen else []
    if unknown:
        raise FlashcError("--kinds %s: no kernel of these configurations is of that kind (theirs: %s)"
                          % (",".join(unknown), ", ".join(sorted(kinds_seen))))
    if not list_only:
        plan.save()
    for i, (config, entry) in enumerate(entries, 1):
        count = sum(len(u["candidates"]) for u in entry["units"])
        say("[%d/%d] %s: %d units, %d candidates" % (i, len(selected), config.describe(), len(entry["units"]), count))
        if list_only:
            continue
        for unit in entry["units"]:
            for point in unit["candidates"]:
                if point in unit["bundles"] or point in unit["errors"]:
                    continue
                table = HAND_RULE_TABLE if point == unit["hand_rule"] else entry_text(unit["key"], point)
                bundle = bundle_id(config, table)
                if bundle not in plan.data["bundles"]:
                    started = time.time()
                    try:
                        bundle_dir = _compile(config, table, compiler, arch, timeout)
                    except FlashcError as e:
                        # A point this shape does not take (shared memory, say): recorded, never timed.
                        unit["errors"][point] = _reason(str(e))
                        say("  %s: %s: skipped (%s)" % (unit["key"], point, unit["errors"][point]))
                        failures.append((config, unit["key"], point))
                        plan.save()
                        continue
                    plan.data["bundles"][bundle] = {"config": entry["config"], "table": table,
                                                    "files": plan.store(bundle_dir)}
                    shutil.rmtree(os.path.dirname(bundle_dir), ignore_errors=True)
                    say("  %s: %s: compiled in %.1f s" % (unit["key"], point, time.time() - started))
                unit["bundles"][point] = bundle
                plan.save()
    return plan, failures


def _reason(message):
    """The compiler's error line of a failed compile (else its first line), shortened."""
    lines = [line.strip() for line in message.splitlines() if line.strip()]
    errors = [line[line.index("error:"):] for line in lines if "error:" in line]
    return ((errors or lines or ["failed"])[0])[:300]


def _compile(config, table, compiler, arch, timeout):
    """The bundle of `config` under tuning table text `table` ("none": the hand rules), in a scratch directory."""
    work = tempfile.mkdtemp(prefix="flashc-tune-")
    flags = ["--tuning-table=none"]
    if table != HAND_RULE_TABLE:
        path = os.path.join(work, "table.txt")
        with open(path, "w") as f:
            f.write(table)
        flags = ["--tuning-table=" + path]
    try:
        return cache.compile_bundle(config, os.path.join(work, "bundle"), compiler=compiler, archs=(arch,),
                                    timeout=timeout, extra_flags=flags)
    except FlashcError:
        shutil.rmtree(work, ignore_errors=True)
        raise
