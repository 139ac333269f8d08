"""The tuner without a GPU (flashc.tune): candidate enumeration and compilation (needs the compiler), the GPU half's
task loop with a stand-in measurer (resume from the progress file, crashed tasks, the budget), and the table written
from measurements (winners, margins, merging; the written table read back by the compiler)."""

import gzip
import json
import os
import shutil
import subprocess
import tempfile
import unittest

from _support import find_tool, runtime_available

from flashc import configs
from flashc.tune import device, plan as plan_mod, progress as progress_mod, table as table_mod

FLASHC = find_tool("flashc", "FLASHC_COMPILER")
ATTENTION = "attention:dtype=bf16,heads=4,head_dim=128,causal=1"
SMALL_FFN = "ffn:dtype=bf16,d=64,h=256,act=relu"


def synthetic_plan(directory):
    """A plan of one configuration and two units (hand rule + two points each), with no bundle files."""
    entry = {"config": ATTENTION, "key": "k", "shapes": [{"batch": 4, "seq": 1024}, {"batch": 1, "seq": 4096}],
             "units": []}
    for kind, direction in (("attention_forward", "forward"), ("attention_backward", "backward")):
        key = "sm_90a %s bf16 d128 causal" % kind
        points = ["p%s%d" % (kind[10], i) for i in range(3)]
        entry["units"].append({"key": key, "key_fields": {"kind": kind}, "kernels": [kind], "directions": [direction],
                               "hand_rule": points[0], "candidates": points,
                               "bundles": {p: ("hand" if i == 0 else "b_%s" % p) for i, p in enumerate(points)},
                               "errors": {}})
    data = {"version": plan_mod.PLAN_VERSION, "arch": "sm_90a", "compiler": "x", "configs": [entry], "bundles": {}}
    return plan_mod.Plan(directory, data)


class FakeMeasurer:
    """Times from a table: {(bundle, direction): ms} or, for one size, {(bundle, direction, "B=.. S=.."): ms}, 1.0
    otherwise (scaled by S / 1024); bundles in `failing` fail their check."""

    def __init__(self, times=None, failing=(), raise_on=None):
        self.times, self.failing, self.raise_on = times or {}, set(failing), raise_on
        self.calls = []

    def check(self, entry, bundle):
        self.calls.append(("check", bundle))
        return {"pass": bundle not in self.failing}

    def time(self, entry, bundle, direction, shape):
        self.calls.append(("time", bundle, direction, plan_mod.shape_label(shape)))
        if self.raise_on == bundle:
            raise RuntimeError("CUDA error: an illegal memory access was encountered")
        label = plan_mod.shape_label(shape).split("#")[0]
        ms = self.times.get((bundle, direction, label), self.times.get((bundle, direction), 1.0))
        ms *= shape.get("seq", 1024) / 1024
        return {"median_ms": ms, "samples": 10, "outliers": 0, "min_ms": ms, "max_ms": ms}


class TaskLoopTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="flashc-tune-test-")
        self.plan = synthetic_plan(self.dir)
        self.progress_path = os.path.join(self.dir, "progress.jsonl")
        self.quiet = lambda text: None

    def tearDown(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def test_tasks_check_first_and_share_the_hand_rule(self):
        tasks = device.tasks(self.plan)
        bundles = [t[1] for t in tasks if t[0] == "check"]
        self.assertEqual(sorted(bundles), sorted(set(bundles)))  # one check a bundle
        self.assertEqual(len(bundles), 5)  # the hand rule once for both units
        hand = [t for t in tasks if t[1] == "hand"]
        self.assertEqual(hand[0][0], "check")
        self.assertEqual([t[2] for t in hand[1:]], ["forward", "forward", "backward", "backward"])
        self.assertEqual(len(tasks), 5 + 2 * 2 + 2 * 2 + 2 * 2)

    def test_an_interrupted_run_resumes_from_its_progress_file(self):
        total = len(device.tasks(self.plan))
        first = FakeMeasurer()
        progress = progress_mod.Progress(self.progress_path)
        left = device.run(self.plan, progress, first, budget_s=0.0, say=self.quiet)  # the budget stops it at once
        self.assertEqual(left, total)
        self.assertEqual(first.calls, [])
        # Stop after 5 tasks: a measurer that ends the "process" (the way a budget or a kill would).
        partial = FakeMeasurer()
        progress = progress_mod.Progress(self.progress_path)
        todo = device.tasks(self.plan)[:5]
        for task, bundle, direction, label, entry in todo:
            progress.start(task, bundle, direction, label)
            record = {"task": task, "bundle": bundle, "direction": direction, "shape": label, "status": "ok"}
            record.update(partial.check(entry, bundle) if task == "check" else
                          partial.time(entry, bundle, direction, device._shape_of(entry, label)))
            progress.finish(record)
        resumed = FakeMeasurer()
        progress = progress_mod.Progress(self.progress_path)
        self.assertEqual(len(progress.records()), 5)
        self.assertEqual(device.run(self.plan, progress, resumed, say=self.quiet), 0)
        self.assertEqual(len(resumed.calls), total - 5)
        self.assertFalse(set(resumed.calls) & set(partial.calls))
        # A third run has nothing left.
        again = FakeMeasurer()
        self.assertEqual(device.run(self.plan, progress_mod.Progress(self.progress_path), again, say=self.quiet), 0)
        self.assertEqual(again.calls, [])

    def test_task_ids_are_unambiguous(self):
        # Bundle "a|b" with no direction is not bundle "a" in direction "b" (one `|`-joined key before).
        self.assertNotEqual(progress_mod.task_id("time", "a|b"), progress_mod.task_id("time", "a", "b"))
        self.assertEqual(progress_mod.record_id({"task": "time", "bundle": "x", "direction": "forward", "shape": "S"}),
                         progress_mod.task_id("time", "x", "forward", "S"))

    def test_a_task_that_took_the_process_down_twice_is_not_run_again(self):
        task, bundle, direction, label, _ = device.tasks(self.plan)[0]
        rid = progress_mod.task_id(task, bundle, direction, label)
        progress_mod.Progress(self.progress_path).start(task, bundle, direction, label)  # ... and the process died
        with open(self.progress_path, "a") as f:
            f.write('{"task": "time", "bundle": "hand", "sta')  # a line cut short
        # Once: a kill (the device's time limit) looks the same, so the next run runs the task again ...
        resumed = progress_mod.Progress(self.progress_path)
        self.assertEqual(resumed.crashed, set())
        self.assertEqual(resumed.interrupted, {rid})
        self.assertFalse(resumed.has(rid))
        resumed.start(task, bundle, direction, label)  # ... which died again
        # (The record after the cut line starts a line of its own: it is read, not glued onto the cut one.)
        again = progress_mod.Progress(self.progress_path)
        self.assertEqual(again.crashed, {rid})
        measurer = FakeMeasurer()
        device.run(self.plan, again, measurer, say=self.quiet)
        self.assertNotIn(("check", bundle), measurer.calls)
        self.assertIn("crashed", again.done[rid]["status"])

    def test_an_interrupted_task_runs_again_and_a_damaged_line_is_skipped(self):
        task, bundle, direction, label, _ = device.tasks(self.plan)[0]
        progress_mod.Progress(self.progress_path).start(task, bundle, direction, label)  # killed during the task
        with open(self.progress_path, "a") as f:
            f.write('{}\n[1]\n"x"\nnull\n{"task": 3, "bundle": "b", "status": "ok"}\n')  # JSON, but not task lines
        measurer = FakeMeasurer()
        self.assertEqual(device.run(self.plan, progress_mod.Progress(self.progress_path), measurer, say=self.quiet), 0)
        self.assertIn(("check", bundle), measurer.calls)
        final = progress_mod.Progress(self.progress_path)
        self.assertEqual(final.crashed, set())
        self.assertTrue(all(final.has(progress_mod.task_id(*t[:4])) for t in device.tasks(self.plan)))

    def test_records_whose_fields_the_table_cannot_read_are_skipped_as_damaged(self):
        # (Each raised from `tune table` before: KeyError, TypeError, ZeroDivisionError, a math domain error, a NaN
        # gain, or a string "false" read as a pass; a '|' in a field broke the crashed task's record.)
        bundle = device.tasks(self.plan)[0][1]
        damaged = [{"task": "time", "bundle": "b", "direction": "forward", "shape": "S", "status": "ok"},
                   {"task": "time", "bundle": "b", "direction": "forward", "shape": "S", "status": "ok",
                    "median_ms": "1.0"},
                   {"task": "confirm", "bundle": "b", "direction": "forward", "shape": "S#0", "status": "ok",
                    "median_ms": 0},
                   {"task": "time", "bundle": "b", "direction": "forward", "shape": "S", "status": "ok",
                    "median_ms": -1.0},
                   {"task": "time", "bundle": "b", "direction": "forward", "shape": "S", "status": "ok",
                    "median_ms": float("nan")},
                   {"task": "check", "bundle": bundle, "status": "ok", "pass": "false"},
                   {"task": "time", "bundle": "b", "direction": 7, "shape": "S", "status": "ok", "median_ms": 1.0}]
        with open(self.progress_path, "w") as f:
            for record in damaged:
                f.write(json.dumps(record) + "\n")
        with open(self.progress_path, "ab") as f:
            f.write(b"\xff\xfe not UTF-8\n")
        with open(self.progress_path, "a") as f:
            for _ in range(2):  # a task with '|' in its bundle that took two processes down
                f.write(json.dumps({"task": "time", "bundle": "a|b", "direction": "forward", "shape": "S",
                                    "status": "started"}) + "\n")
        progress = progress_mod.Progress(self.progress_path)
        self.assertFalse(any(r.get("status") == "ok" for r in progress.records()))
        crashed, = [r for r in progress.records() if r["status"].startswith("crashed")]
        self.assertEqual((crashed["bundle"], crashed["direction"]), ("a|b", "forward"))
        self.assertIsNotNone(table_mod.choose(table_mod.results(self.plan, progress.records())))

    def test_a_damaged_plan_stops_the_run_and_records_nothing_against_the_candidate(self):
        measurer = FakeMeasurer()

        def missing(entry, bundle):
            raise plan_mod.PlanDamaged("plan x: blob y of bundle %s cannot be read" % bundle)
        measurer.check = missing
        progress = progress_mod.Progress(self.progress_path)
        with self.assertRaisesRegex(plan_mod.PlanDamaged, "cannot be read"):
            device.run(self.plan, progress, measurer, say=self.quiet)
        self.assertEqual(progress.records(), [])
        # Once the directory is whole, the task runs (it was started once: interrupted, not crashed).
        self.assertEqual(device.run(self.plan, progress_mod.Progress(self.progress_path), FakeMeasurer(),
                                    say=self.quiet), 0)

    def test_a_failing_task_is_recorded_and_the_others_run(self):
        measurer = FakeMeasurer(raise_on="b_pf1")
        progress = progress_mod.Progress(self.progress_path)
        self.assertEqual(device.run(self.plan, progress, measurer, say=self.quiet), 0)
        errors = [r for r in progress.records() if r["status"] != "ok"]
        self.assertEqual({r["bundle"] for r in errors}, {"b_pf1"})
        self.assertIn("illegal memory access", errors[0]["status"])
        with open(self.progress_path) as f:
            lines = [json.loads(line) for line in f]
        self.assertEqual(sum(1 for r in lines if r["status"] == "started"), len(device.tasks(self.plan)))


class PiecesTest(unittest.TestCase):
    def test_the_gpu_lead_is_microseconds_or_auto(self):
        from flashc import measure
        self.assertEqual(measure.parse_lead_us(0), 0)
        self.assertEqual(measure.parse_lead_us("0"), 0)
        self.assertEqual(measure.parse_lead_us("250"), 250.0)
        self.assertEqual(measure.parse_lead_us("auto"), "auto")
        for bad in ("-5", "nan", "inf", "soon", -1):
            with self.assertRaises(ValueError):
                measure.parse_lead_us(bad)

    def test_time_refuses_a_bad_lead_before_it_reads_the_plan(self):
        from flashc import tune
        with self.assertRaises(SystemExit) as e:
            tune.main(["time", "/nonexistent-plan", "--progress", "/tmp/p.jsonl", "--lead-us", "-5"])
        self.assertIn("--lead-us", str(e.exception.code))

    def test_bad_command_lines_exit_2_with_the_option_named(self):
        import contextlib
        import io
        from flashc import tune
        for argv, words in ((["plan", "--out", "/tmp/x", "--seqs", "abc"], "--seqs: expected positive integers"),
                            (["plan", "--out", "/tmp/x", "--seqs", "0"], "--seqs: expected positive integers"),
                            (["plan", "--out", "/tmp/x", "--seqs=-1024"], "--seqs: expected positive integers"),
                            (["plan", "--out", "/tmp/x", "--seqs", ""], "--seqs: expected positive integers"),
                            (["plan", "--out", "/tmp/x", "--tokens", "0"], "--tokens: expected a positive number"),
                            (["time", "/p", "--progress", "/p.jsonl", "--budget", "-5"], "--budget: expected a positive"),
                            (["time", "/p", "--progress", "/p.jsonl", "--rep", "0"], "--rep: expected a positive"),
                            (["time", "/p", "--progress", "/p.jsonl", "--confirm", "-1"], "--confirm: expected a non-neg")):
            with self.subTest(argv=argv):
                err = io.StringIO()
                with self.assertRaises(SystemExit) as e, contextlib.redirect_stderr(err):
                    tune.main(argv)
                self.assertEqual(e.exception.code, 2)
                self.assertIn(words, err.getvalue())
        # A plan directory without a plan: the tuner's error and exit 1, no traceback.
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            self.assertEqual(tune.main(["status", "/nonexistent-plan"]), 1)
        self.assertIn("no plan to read", err.getvalue())

    def test_outliers_are_outside_the_quartile_fences(self):
        from flashc import measure
        samples = [1.00, 1.01, 0.99, 1.02, 1.00, 0.98, 1.60]
        self.assertEqual(measure.outliers(samples), [1.60])
        self.assertEqual(measure.outliers([1.0, 2.0, 3.0]), [])  # too few to say
        self.assertAlmostEqual(measure.median(samples), 1.00)

    def test_a_candidate_is_its_configuration_under_the_bundle_key(self):
        config = configs.parse_config(ATTENTION)
        tuned = device.keyed(config, "attn_candidate_t1234")
        self.assertEqual(tuned.key, "attn_candidate_t1234")
        self.assertEqual(tuned.spec_text(), config.spec_text())
        self.assertIsInstance(tuned, type(config))  # flashc.programs tells attention from FFN by type
        self.assertEqual(configs.format_config(tuned), configs.format_config(config))


class TableTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="flashc-tune-test-")
        self.plan = synthetic_plan(self.dir)

    def tearDown(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def measure(self, times, failing=(), name="p.jsonl"):
        progress = progress_mod.Progress(os.path.join(self.dir, name))
        device.run(self.plan, progress, FakeMeasurer(times, failing), say=lambda text: None)
        return table_mod.choose(table_mod.results(self.plan, progress.records()))

    def forward_key(self):
        """(found, key, S = 1024's size, S = 4096's, points) of the plan's causal forward key without measurements,
        every point checked and the hand rule (pf0) at 1.0 ms at both lengths."""
        found = table_mod.results(self.plan, [])
        key = "sm_90a attention_forward bf16 d128 causal"
        short, long_ = found[key]["sizes"]
        points = found[key]["points"]
        for p in points.values():
            p["check"] = True
        points["pf0"]["times"] = {short: 1.0, long_: 1.0}
        return found, key, short, long_, points

    def test_the_fastest_checked_point_beyond_the_margin_wins(self):
        decisions = {d["key"]: d for d in self.measure(
            {("b_pf1", "forward"): 0.95, ("b_pf2", "forward"): 0.90,  # p2 faster, but fails its check
             ("b_pb1", "backward"): 0.99, ("b_pb2", "backward"): 1.05}, failing={"b_pf2"})}
        forward = decisions["sm_90a attention_forward bf16 d128 causal"]
        self.assertEqual(forward["point"], "pf1")
        self.assertAlmostEqual(forward["score"], 1 / 0.95)
        backward = decisions["sm_90a attention_backward bf16 d128 causal"]
        self.assertIsNone(backward["point"])  # 1 % is within the 2 % margin
        self.assertIn("hand rule kept", backward["reason"])

    def test_a_point_that_loses_at_one_size_does_not_win(self):
        found = table_mod.results(self.plan, [])
        key = "sm_90a attention_forward bf16 d128 causal"
        sizes = found[key]["sizes"]
        points = found[key]["points"]
        for p in points.values():
            p["check"] = True
        points["pf0"]["times"] = {sizes[0]: 1.0, sizes[1]: 1.0}
        points["pf1"]["times"] = {sizes[0]: 0.80, sizes[1]: 1.06}  # 1.10x overall, 6 % behind at one size
        points["pf2"]["times"] = {sizes[0]: 1.0}  # not timed everywhere: not a candidate
        decision = table_mod.choose({key: found[key]})[0]
        self.assertIsNone(decision["point"])
        self.assertEqual(decision["best"], "pf1")

    def test_a_point_that_wins_the_short_keys_only_gets_an_entry_bounded_by_key_length(self):
        found, key, short, long_, points = self.forward_key()
        points["pf1"]["times"] = {short: 0.80, long_: 1.06}  # 1.25x at S = 1024, 6 % behind at 4096
        points["pf2"]["times"] = {short: 0.99, long_: 0.99}  # within the margin everywhere
        decision = table_mod.choose({key: found[key]})[0]
        self.assertIsNone(decision["point"])
        self.assertEqual(len(decision["bounded"]), 1)
        self.assertEqual(decision["bounded"][0]["key"], "sm_90a attention_forward bf16 d128@s<=1024 causal")
        self.assertEqual(decision["bounded"][0]["point"], "pf1")
        self.assertIn("up to 1024", decision["reason"])
        old = ("sm_90a attention_forward bf16 d128@s<=4096 causal -> block_n=64  # an older run's bound\n"
               "sm_90a attention_forward bf16 d64@s<=1024 causal -> block_n=64  # another key: kept\n")
        merged = table_mod.merge(old, [decision], "flashc.tune 2026-12-02 H200")
        self.assertNotIn("d128@s<=4096", merged)
        self.assertIn("d64@s<=1024 causal -> block_n=64", merged)
        self.assertIn("sm_90a attention_forward bf16 d128@s<=1024 causal -> pf1  # flashc.tune 2026-12-02 H200: "
                      "1.250x over the hand rule at key lengths up to 1024", merged)
        # A point that also loses at the short keys: no entry of either kind; nor for another kind's key.
        points["pf1"]["times"] = {short: 1.01, long_: 1.06}
        self.assertIsNone(table_mod.choose({key: found[key]})[0].get("bounded"))
        backward = "sm_90a attention_backward bf16 d128 causal"
        data = found[backward]
        for name, p in data["points"].items():
            p["check"] = True
            p["times"] = {s: (0.5 if name != data["hand_rule"] and s == data["sizes"][0] else 1.0)
                          for s in data["sizes"]}
        if len(set(label for _, label in data["sizes"])) > 1:
            self.assertIsNone(table_mod.choose({backward: data})[0].get("bounded"))

    def test_a_point_that_wins_the_long_keys_only_takes_the_key_above_a_bound_that_keeps_the_hand_rule(self):
        found, key, short, long_, points = self.forward_key()
        points["pf1"]["times"] = {short: 1.04, long_: 0.90}  # 4 % behind at S = 1024, 1.11x at 4096
        points["pf2"]["times"] = {short: 0.99, long_: 0.99}
        decision = table_mod.choose({key: found[key]})[0]
        self.assertIsNone(decision["point"])
        above, below = decision["bounded"]
        self.assertEqual((above["key"], above["point"], above["min_seq"]), (key, "pf1", 1025))
        self.assertEqual((below["key"], below["point"]), ("sm_90a attention_forward bf16 d128@s<=1024 causal", "pf0"))
        self.assertIn("above 1024", decision["reason"])
        self.assertEqual(table_mod.winners([decision]), {key: ("pf0", "pf1")})
        merged = table_mod.merge("", [decision], "flashc.tune 2026-12-04 H200")
        self.assertIn("sm_90a attention_forward bf16 d128 causal -> pf1  # flashc.tune 2026-12-04 H200: 1.111x over "
                      "the hand rule at key lengths above 1024", merged)
        self.assertIn("sm_90a attention_forward bf16 d128@s<=1024 causal -> pf0  # flashc.tune 2026-12-04 H200: the "
                      "hand rule's plan at key lengths up to 1024", merged)
        # Another point winning the short keys: each side its winner.
        points["pf2"]["times"] = {short: 0.95, long_: 1.02}
        decision = table_mod.choose({key: found[key]})[0]
        self.assertEqual([(b["key"], b["point"]) for b in decision["bounded"]],
                         [(key, "pf1"), ("sm_90a attention_forward bf16 d128@s<=1024 causal", "pf2")])
        self.assertEqual(table_mod.winners([decision]), {key: ("pf0", "pf1", "pf2")})  # both sides confirmed
        # An outright winner that gains less over both lengths than the split loses to it ...
        points["pf2"]["times"] = {short: 0.97, long_: 0.97}
        decision = table_mod.choose({key: found[key]})[0]
        self.assertIsNone(decision["point"])
        self.assertEqual([b["point"] for b in decision["bounded"]], ["pf1", "pf2"])
        self.assertIn("the best point over every length, pf2, 1.031x, gains less", decision["reason"])
        # ... and one that gains more keeps the key whole.
        points["pf2"]["times"] = {short: 0.85, long_: 0.88}  # (the best on both sides: a split gains the same)
        decision = table_mod.choose({key: found[key]})[0]
        self.assertEqual(decision["point"], "pf2")
        self.assertIsNone(decision.get("bounded"))

    def confirm(self, first_times, confirm_times):
        """A first round with `first_times`, then the confirmation of its winners timed with `confirm_times`."""
        progress = progress_mod.Progress(os.path.join(self.dir, "p.jsonl"))
        device.run(self.plan, progress, FakeMeasurer(first_times), say=lambda text: None)
        first = table_mod.choose(table_mod.results(self.plan, progress.records()))
        keys_points = table_mod.winners(first)
        confirm = FakeMeasurer(confirm_times)
        tasks = device.confirm_tasks(self.plan, keys_points, rounds=3)
        device.run(self.plan, progress, confirm, say=lambda text: None, task_list=tasks)
        return first, tasks, confirm, table_mod.choose(table_mod.results(self.plan, progress.records()))

    def test_the_confirmation_times_winner_and_hand_rule_alternately(self):
        first, tasks, confirm, _ = self.confirm({("b_pf1", "forward"): 0.90}, {("b_pf1", "forward"): 0.90})
        self.assertEqual([d["key"] for d in first if d["point"]], ["sm_90a attention_forward bf16 d128 causal"])
        # 2 sizes x 3 rounds x (hand, winner), alternating within each round.
        self.assertEqual(len(tasks), 12)
        self.assertEqual([c[1] for c in confirm.calls[:4]], ["hand", "b_pf1", "hand", "b_pf1"])
        self.assertEqual({t[3] for t in tasks}, {"B=4 S=1024#0", "B=4 S=1024#1", "B=4 S=1024#2",
                                                  "B=1 S=4096#0", "B=1 S=4096#1", "B=1 S=4096#2"})

    def test_a_winner_the_confirmation_does_not_repeat_gets_no_entry(self):
        _, _, _, decisions = self.confirm({("b_pf1", "forward"): 0.90}, {("b_pf1", "forward"): 1.01})
        forward = {d["key"]: d for d in decisions}["sm_90a attention_forward bf16 d128 causal"]
        self.assertIsNone(forward["point"])
        self.assertIn("not confirmed", forward["reason"])

    def test_a_winner_by_key_length_is_confirmed_at_its_lengths(self):
        key = "sm_90a attention_forward bf16 d128 causal"
        first_times = {("b_pf1", "forward", "B=4 S=1024"): 0.80, ("b_pf1", "forward", "B=1 S=4096"): 1.06}
        for confirm_s1k, entry in ((1.0, False), (0.85, True)):
            with self.subTest(confirm_s1k=confirm_s1k):
                progress_file = os.path.join(self.dir, "p.jsonl")  # (each subtest's rounds from the start)
                if os.path.exists(progress_file):
                    os.remove(progress_file)
                first, tasks, _, decisions = self.confirm(
                    first_times, {("b_pf1", "forward", "B=4 S=1024"): confirm_s1k,
                                  ("b_pf1", "forward", "B=1 S=4096"): 1.06})
                self.assertEqual({d["key"]: d["bounded"][0]["point"] for d in first if d.get("bounded")}, {key: "pf1"})
                self.assertEqual(len(tasks), 12)  # the bounded winner is timed again beside the hand rule
                forward = {d["key"]: d for d in decisions}[key]
                self.assertIsNone(forward["point"])
                if entry:
                    self.assertIn("confirmed 1.176x", forward["bounded"][0]["reason"])
                else:
                    self.assertIsNone(forward["bounded"])

    def test_a_confirmed_winner_is_the_entry(self):
        _, _, _, decisions = self.confirm({("b_pf1", "forward"): 0.90}, {("b_pf1", "forward"): 0.93})
        forward = {d["key"]: d for d in decisions}["sm_90a attention_forward bf16 d128 causal"]
        self.assertEqual(forward["point"], "pf1")
        self.assertIn("confirmed 1.075x", forward["reason"])

    def test_several_runs_give_a_key_its_entry_only_where_they_agree(self):
        forward, backward = "sm_90a attention_forward bf16 d128 causal", "sm_90a attention_backward bf16 d128 causal"
        this = self.measure({("b_pf1", "forward"): 0.90, ("b_pb1", "backward"): 0.90}, name="a.jsonl")
        # Another day: the forward's winner is the other point, the backward's the same one.
        other = self.measure({("b_pf2", "forward"): 0.90, ("b_pb1", "backward"): 0.92}, name="b.jsonl")
        agreed = {d["key"]: d for d in table_mod.agree(this, [("day 2", {d["key"]: d for d in other})])}
        self.assertIsNone(agreed[forward]["point"])
        self.assertIn("hand rule kept: the runs disagree (this run: 1.111x", agreed[forward]["reason"])
        self.assertIn("day 2: %s -> pf2" % forward, agreed[forward]["reason"])
        self.assertEqual(agreed[backward]["point"], "pb1")
        self.assertIn("the same in 1 other run (day 2)", agreed[backward]["reason"])
        merged = table_mod.merge("", list(agreed.values()), "stamp")
        self.assertNotIn(forward + " ->", merged)
        self.assertIn(backward + " -> pb1", merged)

    def test_a_run_that_keeps_the_hand_rule_or_did_not_measure_the_key(self):
        forward = "sm_90a attention_forward bf16 d128 causal"
        this = self.measure({("b_pf1", "forward"): 0.90}, name="a.jsonl")
        level = self.measure({}, name="b.jsonl")  # every point level with the hand rule
        agreed = {d["key"]: d for d in table_mod.agree(this, [("level", {d["key"]: d for d in level})])}
        self.assertIsNone(agreed[forward]["point"])
        self.assertIn("level: the hand rule", agreed[forward]["reason"])
        # A run that did not measure the key says nothing about it (absent, or in its plan but never timed: a run
        # stopped by its budget); a key this run keeps by hand rule stays so.
        unmeasured = table_mod.agree(this, [("elsewhere", {})])
        self.assertEqual({d["key"]: d["point"] for d in unmeasured}[forward], "pf1")
        untimed = table_mod.choose(table_mod.results(self.plan, []))
        self.assertIn("not checked and timed", {d["key"]: d for d in untimed}[forward]["reason"])
        stopped = table_mod.agree(this, [("stopped", {d["key"]: d for d in untimed})])
        self.assertEqual({d["key"]: d["point"] for d in stopped}[forward], "pf1")
        self.assertNotIn("other run", {d["key"]: d for d in stopped}[forward]["reason"])
        faster_there = self.measure({("b_pf2", "forward"): 0.80}, name="c.jsonl")
        kept = table_mod.agree(level, [("there", {d["key"]: d for d in faster_there})])
        self.assertIsNone({d["key"]: d["point"] for d in kept}[forward])

    def test_the_table_command_takes_other_runs(self):
        import contextlib, io
        from flashc import tune
        self.plan.save()
        self.measure({("b_pf1", "forward"): 0.90}, name="a.jsonl")
        self.measure({("b_pf2", "forward"): 0.90}, name="b.jsonl")
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            rc = tune.main(["table", self.dir, "--progress", os.path.join(self.dir, "a.jsonl"), "--table", "none",
                            "--also-run", self.dir, os.path.join(self.dir, "b.jsonl")])
        self.assertEqual(rc, 0)
        self.assertIn("the runs disagree", out.getvalue())
        err = io.StringIO()
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            rc = tune.main(["table", self.dir, "--progress", os.path.join(self.dir, "a.jsonl"), "--table", "none",
                            "--also-run", self.dir, os.path.join(self.dir, "missing.jsonl")])
        self.assertEqual(rc, 1)
        self.assertIn("--also-run: no progress file", err.getvalue())
        err = io.StringIO()
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            rc = tune.main(["table", self.dir, "--progress", os.path.join(self.dir, "a.jsonl"), "--table", "none",
                            "--also-run", self.dir, os.path.join(self.dir, ".", "a.jsonl")])
        self.assertEqual(rc, 1)  # (it was counted as a second run that agreed)
        self.assertIn("is this run's own progress file", err.getvalue())
        other = os.path.join(self.dir, "sm80")
        os.makedirs(other)
        sm80 = synthetic_plan(other)
        sm80.data["arch"] = "sm_80"
        sm80.save()
        err = io.StringIO()
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            rc = tune.main(["table", self.dir, "--progress", os.path.join(self.dir, "a.jsonl"), "--table", "none",
                            "--also-run", other, os.path.join(self.dir, "b.jsonl")])
        self.assertEqual(rc, 1)
        self.assertIn("is for sm_80, this run's for sm_90a", err.getvalue())

    def test_merge_replaces_measured_keys_and_keeps_the_rest(self):
        old = ("# header comment\n"
               "sm_90a attention_forward bf16 d128 causal -> block_n=64  # an older run\n"
               "sm_90a gemm bf16 * - -> group=4  # hand-written, not measured here\n")
        decisions = [{"key": "sm_90a attention_forward bf16 d128 causal", "point": None, "reason": "hand rule kept",
                      "best": "block_n=64"},
                     {"key": "sm_90a attention_backward bf16 d128 causal", "point": "form=rows stages=2",
                      "reason": "1.050x", "best": "form=rows stages=2"}]
        merged = table_mod.merge(old, decisions, "flashc.tune 2026-12-02 H200")
        self.assertIn("# header comment", merged)
        self.assertIn("sm_90a gemm bf16 * - -> group=4", merged)
        self.assertNotIn("block_n=64", merged)
        self.assertIn("sm_90a attention_backward bf16 d128 causal -> form=rows stages=2  "
                      "# flashc.tune 2026-12-02 H200: 1.050x", merged)

    def test_merge_keeps_the_lines_of_keys_the_run_did_not_measure(self):
        # A key in the plan that the run never timed (its budget ran out, or the progress file is another's) keeps
        # its entry: it was deleted before.
        old = "sm_90a attention_forward bf16 d128 causal -> block_n=64  # an older run\n"
        untimed = table_mod.choose(table_mod.results(self.plan, []))
        self.assertIn("block_n=64", table_mod.merge(old, untimed, "stamp"))
        import contextlib, io
        from flashc import tune
        self.plan.save()
        err = io.StringIO()
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            rc = tune.main(["table", self.dir, "--progress", os.path.join(self.dir, "typo.jsonl"), "--table", "none"])
        self.assertEqual(rc, 1)
        self.assertIn("no progress file", err.getvalue())

    def test_a_damaged_unit_of_the_plan_is_named(self):
        self.plan.data["configs"][0]["units"][1].pop("hand_rule")
        self.plan.save()
        with self.assertRaisesRegex(plan_mod.PlanDamaged, "unit 1's 'hand_rule' is missing"):
            plan_mod.Plan.load(self.dir)
        self.plan.data["configs"] = ["abc"]
        self.plan.save()
        with self.assertRaisesRegex(plan_mod.PlanDamaged, "configuration 0 is not an object"):
            plan_mod.Plan.load(self.dir)
        self.plan.data.pop("arch")
        self.plan.save()
        with self.assertRaisesRegex(plan_mod.PlanDamaged, "the plan's 'arch' is missing"):
            plan_mod.Plan.load(self.dir)

    def test_paths_that_cannot_be_read_or_written_are_errors(self):
        import contextlib, io
        from flashc import tune
        self.plan.save()
        self.measure({("b_pf1", "forward"): 0.90}, name="a.jsonl")
        a_file = os.path.join(self.dir, "a.jsonl")
        err = io.StringIO()
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            rc = tune.main(["table", self.dir, "--progress", a_file, "--table", "none", "--out", a_file])
        self.assertEqual(rc, 1)  # (a FileExistsError traceback before)
        self.assertIn("python -m flashc.tune: error: %s" % a_file, err.getvalue())
        with self.assertRaisesRegex(Exception, "is not a file"):
            progress_mod.Progress(self.dir)

    def test_time_without_pytorch_says_so(self):
        try:
            import torch  # noqa: F401
            self.skipTest("PyTorch is installed here")
        except ImportError:
            pass
        from flashc import tune
        self.plan.save()
        with self.assertRaisesRegex(SystemExit, "needs PyTorch"):
            tune.main(["time", self.dir, "--progress", os.path.join(self.dir, "t.jsonl")])

    def test_report_lists_every_point(self):
        progress = progress_mod.Progress(os.path.join(self.dir, "p.jsonl"))
        device.run(self.plan, progress, FakeMeasurer({("b_pf1", "forward"): 0.9}), say=lambda text: None)
        found = table_mod.results(self.plan, progress.records())
        decisions = table_mod.choose(found)
        md = table_mod.report(found, decisions, "stamp")
        self.assertIn("## sm_90a attention_forward bf16 d128 causal", md)
        self.assertIn("**pf0** (hand rule) | pass | 1.0000 | 4.0000 | 1.000 |", md)
        self.assertIn("**pf1** | pass | 0.9000 | 3.6000 | 1.111 |", md)


@unittest.skipUnless(FLASHC, "SKIPPED: flashc not built (the tuning spaces live in the compiler)")
class PlanTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="flashc-tune-test-")
        self.quiet = lambda text: None

    def tearDown(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def test_configurations_without_a_tuning_space_are_passed_over_or_refused(self):
        said = []
        with self.assertRaisesRegex(Exception, "nothing to tune"):
            plan_mod.build(None, ["decode:heads=8,kv_heads=8,head_dim=128"], compiler=FLASHC, list_only=True,
                           progress=said.append)
        self.assertIn("not tuned", said[0])

    def test_enumeration_names_each_kernel_kind_its_key_and_space(self):
        plan, _ = plan_mod.build(None, [ATTENTION], compiler=FLASHC, list_only=True, progress=self.quiet)
        units = {u["key_fields"]["kind"]: u for _, u in plan.units()}
        forward, backward = units["attention_forward"], units["attention_backward"]
        self.assertEqual(forward["key"], "sm_90a attention_forward bf16 d128 causal")
        self.assertEqual(forward["directions"], ["forward"])
        self.assertEqual(backward["directions"], ["backward"])
        self.assertEqual(forward["hand_rule"], forward["candidates"][0])
        self.assertIn("strategy=wgmma_ws_sm90", forward["hand_rule"])
        # The retired --experiment=cp-async-forward's form is a point of the space.
        self.assertIn("strategy=wgmma_sm90 block_m=128 block_n=128 warps=8 stages=2", forward["candidates"])
        self.assertIn("ping_pong=0", " ".join(forward["candidates"]))
        # Both backward forms, the hand rule (the Sᵀ form at D = 128) first.
        self.assertTrue(backward["hand_rule"].startswith("form=transposed"))
        self.assertTrue(any(p.startswith("form=rows") for p in backward["candidates"]))
        # The ws backward's consumers in the other form (ping_pong): meeting every step at two stages, where the
        # hand rule takes turns; taking turns at three, where it meets.
        self.assertIn("form=transposed strategy=wgmma_ws_sm90 block_m=64 block_n=128 warps=8 stages=2 ping_pong=0 "
                      "group=4", backward["candidates"])
        self.assertIn("form=transposed strategy=wgmma_ws_sm90 block_m=64 block_n=128 warps=8 stages=3 ping_pong=1 "
                      "group=4", backward["candidates"])
        ffn, _ = plan_mod.build(None, [SMALL_FFN], compiler=FLASHC, list_only=True, progress=self.quiet)
        kinds = {u["key_fields"]["kind"] for _, u in ffn.units()}
        self.assertIn("ffn_fused", kinds)
        fused = next(u for _, u in ffn.units() if u["key_fields"]["kind"] == "ffn_fused")
        # The retired --experiment=mma-fused-ffn's form is a point of the fused FFN's space.
        self.assertIn("strategy=mma_sync_sm80 block_m=64 block_n=64 block_k=32 warps=4 stages=2", fused["candidates"])

    def test_candidates_compile_once_and_an_interrupted_plan_resumes(self):
        out = os.path.join(self.dir, "plan")
        plan, failures = plan_mod.build(out, [SMALL_FFN], compiler=FLASHC, kinds=["ffn_fused"], progress=self.quiet)
        self.assertEqual(failures, [])
        units = list(plan.units())
        # The inference forward's fused kernel and the training forward's (it also stores pre and h: keyed -save,
        # timed through the training forward).
        self.assertEqual(len(units), 2)
        unit = next(u for _, u in units if not u["key"].split()[3].endswith("-save"))
        train = next(u for _, u in units if u["key"].split()[3].endswith("-save"))
        self.assertEqual(unit["directions"], ["forward"])
        self.assertEqual(train["directions"], ["forward_train"])
        self.assertEqual(set(unit["bundles"]), set(unit["candidates"]))
        # (The hand rule's bundle, no table, serves both units.)
        self.assertEqual(len(plan.data["bundles"]), len(unit["candidates"]) + len(train["candidates"]) - 1)
        # Kernels the candidates share (the backward's) are stored once.
        stored = os.listdir(os.path.join(out, plan_mod.BLOBS))
        files = sum(len(b["files"]) for b in plan.data["bundles"].values())
        self.assertLess(len(stored), files)
        # A point's bundle carries its one-entry table; the hand rule's none.
        hand = plan.data["bundles"][unit["bundles"][unit["hand_rule"]]]
        self.assertEqual(hand["table"], plan_mod.HAND_RULE_TABLE)
        other = next(p for p in unit["candidates"] if p != unit["hand_rule"])
        self.assertEqual(plan.data["bundles"][unit["bundles"][other]]["table"], "%s -> %s\n" % (unit["key"], other))
        # The bundle unpacks as it was compiled.
        target = plan.materialize(unit["bundles"][other], os.path.join(self.dir, "unpacked"))
        self.assertTrue(os.path.isfile(os.path.join(target, "manifest.flashc")))
        # Interrupted before the last compile: the plan records what is done; only the rest compiles next time.
        del unit["bundles"][other]
        del plan.data["bundles"][plan_mod.bundle_id(configs.parse_config(SMALL_FFN), "%s -> %s\n" % (unit["key"], other))]
        plan.save()
        compiled = []
        original = plan_mod._compile

        def counting(*args):
            compiled.append(args[1])
            return original(*args)
        plan_mod._compile = counting
        try:
            again, _ = plan_mod.build(out, [SMALL_FFN], compiler=FLASHC, kinds=["ffn_fused"], progress=self.quiet)
        finally:
            plan_mod._compile = original
        self.assertEqual(compiled, ["%s -> %s\n" % (unit["key"], other)])
        self.assertIn(other, next(again.units())[1]["bundles"])

    def test_a_resumed_plan_keeps_its_sizes_and_kinds(self):
        out = os.path.join(self.dir, "plan")
        plan_mod.build(out, [SMALL_FFN], compiler=FLASHC, kinds=["ffn_fused"], progress=self.quiet)
        with self.assertRaisesRegex(plan_mod.FlashcError, "was planned with --kinds ffn_fused --seqs 1024,4096,16384 "
                                                          "--tokens 16384, not --kinds gemm"):
            plan_mod.build(out, [SMALL_FFN], compiler=FLASHC, kinds=["gemm"], progress=self.quiet)
        with self.assertRaisesRegex(plan_mod.FlashcError, "not --kinds ffn_fused --seqs 2048"):
            plan_mod.build(out, [SMALL_FFN], compiler=FLASHC, kinds=["ffn_fused"], seqs=(2048,), progress=self.quiet)
        # A kind no kernel of the configurations has is refused before anything is compiled.
        other = os.path.join(self.dir, "plan2")
        with self.assertRaisesRegex(plan_mod.FlashcError, "--kinds attention_fwd: no kernel of these configurations"):
            plan_mod.build(other, [SMALL_FFN], compiler=FLASHC, kinds=["attention_fwd"], progress=self.quiet)
        self.assertFalse(os.path.exists(os.path.join(other, plan_mod.PLAN)))

    def test_unpacked_bundles_follow_the_plan_and_a_damaged_blob_is_named(self):
        out = os.path.join(self.dir, "plan")
        plan, _ = plan_mod.build(out, [SMALL_FFN], compiler=FLASHC, kinds=["ffn_fused"], progress=self.quiet)
        bundle = next(iter(plan.data["bundles"]))
        target = os.path.join(self.dir, "unpacked")
        manifest = os.path.join(plan.materialize(bundle, target), "manifest.flashc")
        # A work directory unpacked from another plan (another compiler's files under the same bundle name) is written
        # again, not reused.
        with open(manifest, "a") as f:
            f.write("# another compiler's\n")
        stale = dict(plan.data, compiler="another build")
        plan_mod.Plan(out, stale).materialize(bundle, target)
        plan.materialize(bundle, target)
        with open(manifest) as f:
            self.assertNotIn("another compiler's", f.read())
        # A blob lost or damaged in transit stops with its name.
        shutil.rmtree(target)
        digest = plan.data["bundles"][bundle]["files"]["manifest.flashc"]
        blob = os.path.join(out, plan_mod.BLOBS, digest + ".gz")
        os.remove(blob)
        with self.assertRaisesRegex(plan_mod.PlanDamaged, "blob %s of bundle %s \\(manifest.flashc\\) cannot be read"
                                    % (digest, bundle)):
            plan.materialize(bundle, target)
        with open(blob, "wb") as f:
            f.write(b"not gzip")
        with self.assertRaisesRegex(plan_mod.PlanDamaged, "cannot be read"):
            plan.materialize(bundle, target)
        # A readable blob holding other bytes than its digest says (a file swapped in transit) is named too.
        with gzip.open(blob, "wb") as f:
            f.write(b"# another manifest\n")
        with self.assertRaisesRegex(plan_mod.PlanDamaged, "blob %s of bundle %s \\(manifest.flashc\\) does not hold "
                                    "what it was stored with" % (digest, bundle)):
            plan.materialize(bundle, target)
        self.assertFalse(os.path.exists(os.path.join(target, ".complete")))
        # A bundle the plan does not hold (a task of another plan) is named.
        with self.assertRaisesRegex(plan_mod.PlanDamaged, "has no files for bundle not-in-plan"):
            plan.materialize("not-in-plan", target)
        # A missing or damaged plan.json is a tuner error, not a traceback.
        with self.assertRaisesRegex(plan_mod.PlanDamaged, "no plan to read"):
            plan_mod.Plan.load(os.path.join(self.dir, "nothing"))
        with open(os.path.join(out, plan_mod.PLAN), "w") as f:
            f.write("{")
        with self.assertRaisesRegex(plan_mod.PlanDamaged, "is not a plan"):
            plan_mod.Plan.load(out)

    @unittest.skipUnless(runtime_available(), "SKIPPED: libflashc_runtime.so not found")
    def test_every_bundle_opens_with_the_programs_the_gpu_half_times(self):
        out = os.path.join(self.dir, "plan")
        plan, _ = plan_mod.build(out, [ATTENTION], compiler=FLASHC, kinds=["attention_forward"], progress=self.quiet)
        self.assertEqual(device.dry_run(plan, os.path.join(self.dir, "work"), say=self.quiet), [])
        # A bundle that lost its backward program is named.
        bundle = next(iter(plan.data["bundles"]))
        manifest = os.path.join(self.dir, "work", "bundles", bundle, "manifest.flashc")
        with open(manifest) as f:
            text = f.read().replace("program attention_backward", "program attention_backwards")
        with open(manifest, "w") as f:
            f.write(text)
        problems = device.dry_run(plan, os.path.join(self.dir, "work"), say=self.quiet)
        self.assertTrue(problems and all(bundle in p and "backward" in p for p in problems), problems)

    def test_a_written_entry_changes_the_compiled_plan(self):
        decisions = [{"key": "sm_90a attention_forward bf16 d128 causal",
                      "point": "strategy=wgmma_ws_sm90 block_m=128 block_n=64 warps=8 stages=2 ping_pong=1",
                      "reason": "1.030x over the hand rule"}]
        table = os.path.join(self.dir, "sm_90a.txt")
        with open(table, "w") as f:
            f.write(table_mod.merge("# a table\n", decisions, "flashc.tune test"))
        spec = os.path.join(self.dir, "spec.mlir")
        with open(spec, "w") as f:
            f.write(configs.parse_config(ATTENTION).spec_text())
        tile = subprocess.run([FLASHC, spec, "--emit=tile", "--tuning-table=" + table, "-o", "-"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, timeout=300)
        self.assertEqual(tile.returncode, 0, tile.stderr)
        # (Line 3: the merge leaves a blank line between the kept lines and the new entries.)
        wanted = ('tuning = {entry = "%s:3", key = "sm_90a attention_forward bf16 d128 causal", ping_pong = true}'
                  % table)
        self.assertTrue(wanted in tile.stdout and "block_n = 64 : i64" in tile.stdout, wanted)


if __name__ == "__main__":
    unittest.main()
