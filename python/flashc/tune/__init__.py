"""Tuned plans from measurements (docs/tuning.md):

    python -m flashc.tune plan --out DIR [CONFIG_OR_SET ...]        # here, with the compiler: compile the candidates
    python -m flashc.tune time DIR --progress FILE [--out OUT]      # on the GPU machine: check and time them
    python -m flashc.tune table DIR --progress FILE [--also-run DIR2 FILE2] [--write]   # here: the tuning table
    python -m flashc.tune status DIR [--progress FILE]              # what is compiled, measured and left

plan: for each configuration (set names or config texts as flashc.prebuild takes them; default: the set `tune`, the
benchmark rows), every point of every tunable kernel's tuning space (flashc --print-tuning-space) compiled into a
bundle with a one-entry tuning table; DIR (plan.json and the bundles' files, stored once each) is what goes to the GPU
machine. time: each bundle checked against float64 once, then its programs timed (CUDA events, L2 flushed, repeated,
outliers counted) at the configuration's sizes; every finished task is appended to the progress file, so that a run
stopped by --budget (or killed) resumes from it; at the end OUT gets <arch>.txt (the repository's table with this
run's entries) and tune-report.md. table: the same from a progress file brought back, written into
compiler/tuning/<arch>.txt with --write (rebuild flashc to compile it in); with --also-run, a key's entries only
where every other run that measured it chose the same.
Exit status: 0 done; 1 failures (a compile, a check); 2 bad command line; 3 the budget ran out (run again to resume).
"""

import argparse
import os
import sys
import time

from ..errors import FlashcError

_REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))


def repository_table(arch):
    """compiler/tuning/<arch>.txt of this source tree (None in an installed package)."""
    path = os.path.join(_REPO, "compiler", "tuning", arch + ".txt")
    return path if os.path.isdir(os.path.dirname(path)) else None


def _say(text):
    print(text, file=sys.stderr, flush=True)


def _positive_ints(text):
    """argparse type: a comma-separated list of positive integers (at least one)."""
    try:
        values = tuple(int(s) for s in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError("expected positive integers separated by commas, got %r" % text)
    if not values or any(v < 1 for v in values):
        raise argparse.ArgumentTypeError("expected positive integers separated by commas, got %r" % text)
    return values


def _positive(kind):
    def parse(text):
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError("expected a positive number, got %r" % text)
        if not value > 0 or value != value or value == float("inf"):
            raise argparse.ArgumentTypeError("expected a positive number, got %r" % text)
        return value
    return parse


def _non_negative_int(text):
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise argparse.ArgumentTypeError("expected a non-negative integer, got %r" % text)
    return value


def _plan(args):
    from . import plan as plan_mod
    kinds = [k for k in (args.kinds or "").split(",") if k]
    seqs = args.seqs
    if not args.list and not args.out:
        raise SystemExit("python -m flashc.tune plan: --out DIR is required (unless --list)")
    started = time.time()
    plan, failures = plan_mod.build(args.out, args.configs or ["tune"], compiler=args.compiler, arch=args.arch,
                                    kinds=kinds, seqs=seqs, tokens=args.tokens, list_only=args.list,
                                    timeout=args.timeout)
    if args.list:
        for entry, unit in plan.units():
            print("%s  [%s]  %s" % (unit["key"], ",".join(unit["directions"]), entry["config"]))
            for point in unit["candidates"]:
                print("    %s%s" % (point, "  (hand rule)" if point == unit["hand_rule"] else ""))
        return 0
    units = sum(1 for _ in plan.units())
    print("tune plan: %d configurations, %d units, %d bundles, %d candidates skipped in %.1f s -> %s" % (
        len(plan.data["configs"]), units, len(plan.data["bundles"]), len(failures), time.time() - started, args.out))
    return 0


def _gpu_of(progress):
    return next((r.get("gpu") for r in progress.records() if r.get("gpu")), None)


def _decisions(plan, progress, margin, max_loss):
    """Each measured key's decision (flashc.tune.table.choose) from a run's plan and progress, and what it found."""
    from . import table as table_mod
    found = table_mod.results(plan, progress.records())
    return table_mod.choose(found, margin=margin, max_loss=max_loss), found


def _other_runs(runs, arch, margin, max_loss, own_progress=None):
    """[(label, {key: decision})] of the (plan directory, progress file) pairs of `table --also-run`."""
    from . import plan as plan_mod, progress as progress_mod
    out = []
    for plan_dir, progress_path in runs or ():
        if not os.path.exists(progress_path):
            raise FlashcError("--also-run: no progress file %s" % progress_path)
        if own_progress and os.path.realpath(progress_path) == os.path.realpath(own_progress):
            raise FlashcError("--also-run: %s is this run's own progress file, not another run's" % progress_path)
        plan, progress = plan_mod.Plan.load(plan_dir), progress_mod.Progress(progress_path)
        if plan.data["arch"] != arch:  # (its keys would match none of this run's: a silent no-op)
            raise FlashcError("--also-run: plan %s is for %s, this run's for %s" % (plan_dir, plan.data["arch"], arch))
        decisions, _ = _decisions(plan, progress, margin, max_loss)
        label = "%s (%s)" % (progress_path, _gpu_of(progress) or "GPU unknown")
        out.append((label, {d["key"]: d for d in decisions}))
    return out


def _finish(plan, progress, out, table, margin, max_loss, write, also_runs=None):
    from . import table as table_mod
    decisions, found = _decisions(plan, progress, margin, max_loss)
    if also_runs:
        decisions = table_mod.agree(decisions, _other_runs(also_runs, plan.data["arch"], margin, max_loss,
                                                           progress.path))
    gpu = _gpu_of(progress)
    stamp = table_mod.stamp_of(gpu, os.environ.get("FLASHC_COMMIT"))
    text = ""
    if table and os.path.exists(table):
        with open(table) as f:
            text = f.read()
    merged = table_mod.merge(text, decisions, stamp)
    md = table_mod.report(found, decisions, stamp)
    arch = plan.data["arch"]
    if out:
        os.makedirs(out, exist_ok=True)
        with open(os.path.join(out, arch + ".txt"), "w") as f:
            f.write(merged)
        with open(os.path.join(out, "tune-report.md"), "w") as f:
            f.write(md)
    if write:
        with open(write, "w") as f:
            f.write(merged)
    for d in decisions:
        print("%s: %s" % (d["key"], ("-> %s (%s)" % (d["point"], d["reason"])) if d["point"] else d["reason"]))
    return decisions


def _time(args):
    from . import device, plan as plan_mod, progress as progress_mod
    from .. import measure
    try:
        lead_us = measure.parse_lead_us(args.lead_us)
    except ValueError as e:
        raise SystemExit("python -m flashc.tune time: --lead-us: %s" % e)
    plan = plan_mod.Plan.load(args.plan)
    if args.dry_run:
        return 1 if device.dry_run(plan, args.work) else 0
    progress = progress_mod.Progress(args.progress)
    try:
        import torch  # (the GPU half checks and times through flashc.torch)
    except ImportError:
        raise SystemExit("python -m flashc.tune time: needs PyTorch, which is not installed here (--dry-run checks "
                         "the plan's bundles without it)")
    measurer = device.TorchMeasurer(plan, args.work, warmup=args.warmup, rep=args.rep, lead_us=lead_us)
    gpu = torch.cuda.get_device_name() if torch.cuda.is_available() else None
    if gpu is None:
        raise SystemExit("python -m flashc.tune time: no CUDA device")
    started = time.time()
    stamped = _Stamped(measurer, gpu)
    left = device.run(plan, progress, stamped, budget_s=args.budget)
    if not left and args.confirm > 0:
        # The first round's winners (outright or by key length), timed again beside their hand rules before an entry
        # is written.
        from . import table as table_mod
        first, _ = _decisions(plan, progress, args.margin, args.max_loss)
        keys_points = table_mod.winners(first)
        budget = None if args.budget is None else max(0.0, args.budget - (time.time() - started))
        left = device.run(plan, progress, stamped, budget_s=budget,
                          task_list=device.confirm_tasks(plan, keys_points, args.confirm))
    table = args.table or repository_table(plan.data["arch"])
    decisions = _finish(plan, progress, args.out, table, args.margin, args.max_loss, None)
    failed = [r for r in progress.records() if r.get("status") != "ok" or (r["task"] == "check" and not r.get("pass"))]
    if failed:
        _say("%d task(s) failed or crashed (see the progress file)" % len(failed))
    return 3 if left else (1 if failed else 0)


class _Stamped:
    """Adds the GPU's name to every record (the table's evidence names it)."""

    def __init__(self, measurer, gpu):
        self.measurer, self.gpu = measurer, gpu

    def check(self, entry, bundle):
        return dict(self.measurer.check(entry, bundle), gpu=self.gpu)

    def time(self, entry, bundle, direction, shape):
        return dict(self.measurer.time(entry, bundle, direction, shape), gpu=self.gpu)


def _table(args):
    from . import plan as plan_mod, progress as progress_mod
    plan = plan_mod.Plan.load(args.plan)
    if not os.path.isfile(args.progress):  # (a mistyped path would decide every key "not measured")
        raise FlashcError("no progress file %s (the --progress of the run's `time` step)" % args.progress)
    progress = progress_mod.Progress(args.progress)
    table = args.table or repository_table(plan.data["arch"])
    _finish(plan, progress, args.out, table, args.margin, args.max_loss, table if args.write else None,
            args.also_run)
    if args.write:
        _say("wrote %s (rebuild flashc to compile it in)" % table)
    return 0


def _status(args):
    from . import device, plan as plan_mod, progress as progress_mod
    plan = plan_mod.Plan.load(args.plan)
    units = list(plan.units())
    candidates = sum(len(u["candidates"]) for _, u in units)
    skipped = sum(len(u["errors"]) for _, u in units)
    compiled = sum(len(u["bundles"]) for _, u in units)
    print("%s: %d configurations, %d units, %d candidates: %d compiled (%d bundles), %d skipped, %d left to compile" % (
        args.plan, len(plan.data["configs"]), len(units), candidates, compiled, len(plan.data["bundles"]), skipped,
        candidates - compiled - skipped))
    if args.progress:
        progress = progress_mod.Progress(args.progress)
        tasks = device.tasks(plan)
        done = [t for t in tasks if progress.has(progress_mod.task_id(t[0], t[1], t[2], t[3]))]
        print("%s: %d of %d tasks done, %d crashed" % (args.progress, len(done), len(tasks), len(progress.crashed)))
    return 0


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m flashc.tune", description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("plan", help="compile the candidates (needs the compiler)")
    p.add_argument("configs", nargs="*", help="set names or config texts (default: tune)")
    p.add_argument("--out", help="plan directory (created, or resumed)")
    p.add_argument("--arch", default="sm_90a")
    p.add_argument("--kinds", help="only these kernel kinds, comma-separated (default: every tunable kind)")
    p.add_argument("--seqs", type=_positive_ints, default=(1024, 4096, 16384), help="attention sequence lengths timed")
    p.add_argument("--tokens", type=_positive(int), default=16384, help="attention batch x sequence length timed")
    p.add_argument("--compiler", help="flashc executable (default: FLASHC_COMPILER, PATH, build*/bin/flashc)")
    p.add_argument("--timeout", type=_positive(float), default=900, help="seconds per compile")
    p.add_argument("--list", action="store_true", help="print the units and their candidates, compile nothing")
    for name, helptext in (("time", "check and time the candidates (needs a GPU, torch)"),
                           ("table", "the tuning table from measurements"), ("status", "what is done and left")):
        q = sub.add_parser(name, help=helptext)
        q.add_argument("plan", help="plan directory (python -m flashc.tune plan --out)")
        q.add_argument("--progress", required=name != "status", help="progress file (JSON lines; appended to)")
        if name in ("time", "table"):
            q.add_argument("--out", help="directory for <arch>.txt and tune-report.md")
            q.add_argument("--table", help="the table to merge into (default: compiler/tuning/<arch>.txt here)")
            q.add_argument("--margin", type=float, default=0.02, help="geo-mean gain an entry needs (default 0.02)")
            q.add_argument("--max-loss", type=float, default=0.01,
                           help="largest loss at any size an entry may have (default 0.01: never more than 1 %% slower)")
        if name == "time":
            q.add_argument("--work", default=os.path.join(os.environ.get("TMPDIR", "/tmp"), "flashc-tune"),
                           help="where the bundles are unpacked")
            q.add_argument("--budget", type=_positive(float), help="seconds after which no task starts (then exit 3)")
            q.add_argument("--warmup", type=_positive(int), default=25, help="warmup ms a timing")
            q.add_argument("--rep", type=_positive(int), default=100, help="ms of timed calls a timing")
            q.add_argument("--lead-us", default="0",
                           help="a GPU spin of this many microseconds (or 'auto': 1.5x the host's time for a call) "
                                "before each timed call, so that a program of short kernels is timed at the GPU's "
                                "pace rather than its launch path's (flashc.measure.time_ms; default 0: none)")
            q.add_argument("--confirm", type=_non_negative_int, default=3,
                           help="rounds of the confirmation: each first-round winner and its hand rule timed again, "
                                "alternately (0: none; default 3)")
            q.add_argument("--dry-run", action="store_true",
                           help="no GPU: check that every bundle unpacks, opens and has its programs")
        if name == "table":
            q.add_argument("--write", action="store_true", help="write the merged table over --table")
            q.add_argument("--also-run", nargs=2, action="append", metavar=("PLAN", "PROGRESS"),
                           help="another run's plan directory and progress file (repeatable): a key gets its "
                                "entries only where every run that measured it chose the same ones")
    args = parser.parse_args(argv)
    try:
        return {"plan": _plan, "time": _time, "table": _table, "status": _status}[args.command](args)
    except FlashcError as e:
        _say("python -m flashc.tune: error: %s" % e)
        return 1
    except OSError as e:  # a path of the command line that cannot be read or written
        _say("python -m flashc.tune: error: %s: %s" % (e.filename or "", e.strerror or e))
        return 1
