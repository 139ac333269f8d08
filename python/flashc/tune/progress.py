"""The tuner's progress file: one JSON line a finished task, so that an interrupted run resumes.

A task is the timing of one bundle's program at one size, or the float64 check of one bundle:
  {"task": "time", "bundle": B, "direction": "forward", "shape": "B=4 S=4096", "status": "ok", "median_ms": ..., ...}
  {"task": "check", "bundle": B, "status": "ok", "pass": true, "detail": {...}}
Before a task starts, a "started" line names it. A task that started once and never finished was interrupted (a kill,
the device's time limit) or took the process down (a kernel that faults loses the CUDA context): the next run runs it
again. A task that started twice and never finished took the process down both times, and is recorded as crashed
instead of being run a third time.
"""

import json
import math
import os

from ..errors import FlashcError


def task_id(task, bundle, direction=None, shape=None):
    """The task's key: its four fields as a JSON list, so that no two tasks share one (a `|`-joined key made bundle
    "a|b" without a direction the same task as bundle "a" in direction "b")."""
    return json.dumps([str(task), str(bundle), direction or "", shape or ""])


def record_id(record):
    return task_id(record["task"], record["bundle"], record.get("direction"), record.get("shape"))


def _is_record(value):
    """Whether a parsed line is a task's record whose fields the table can read: a finished timing has a positive
    finite median, a finished check a boolean verdict (a damaged line is skipped like a cut one, not read as 0 ms or
    as a pass)."""
    if not (isinstance(value, dict) and isinstance(value.get("task"), str) and isinstance(value.get("bundle"), str)
            and isinstance(value.get("status"), str)):
        return False
    if any(value.get(field) is not None and not isinstance(value[field], str) for field in ("direction", "shape")):
        return False
    if value["status"] == "ok" and value["task"] in ("time", "confirm"):
        median = value.get("median_ms")
        return (isinstance(median, (int, float)) and not isinstance(median, bool) and math.isfinite(median)
                and median > 0)
    if value["status"] == "ok" and value["task"] == "check":
        return isinstance(value.get("pass"), bool)
    return True


# Runs that started a task and never finished it before it counts as crashed (the first may have been a kill).
CRASH_STARTS = 2


class Progress:
    def __init__(self, path):
        self.path = path
        self.done = {}
        self.crashed = set()
        self._newline_first = False  # the file ends in a line cut short: the next record starts a line of its own
        unfinished = {}  # task id -> starts since its last finish
        named = {}  # task id -> its "started" line (the task's fields)
        if os.path.exists(path):
            if not os.path.isfile(path):
                raise FlashcError("progress file %s is not a file" % path)
            with open(path, encoding="utf-8", errors="replace") as f:  # (a damaged byte spoils its line only)
                text = f.read()
            self._newline_first = bool(text) and not text.endswith("\n")
            for line in text.splitlines():
                line = line.strip()
                if not line:
                    continue
                try:
                    record = json.loads(line)
                except ValueError:
                    continue  # a line cut short when the run was stopped
                if not _is_record(record):
                    continue  # not a task's line (a damaged file): skipped like a cut one
                rid = record_id(record)
                if record["status"] == "started":
                    unfinished[rid] = unfinished.get(rid, 0) + 1
                    named[rid] = record
                else:
                    self.done[rid] = record
                    unfinished.pop(rid, None)
        self.crashed = {rid for rid, starts in unfinished.items() if starts >= CRASH_STARTS}
        for rid in self.crashed:  # the task that took two processes down is not run again
            started = named[rid]
            self.done[rid] = {"task": started["task"], "bundle": started["bundle"],
                              "direction": started.get("direction"), "shape": started.get("shape"),
                              "status": "crashed (the process ended during this task in %d runs: a fault?)"
                                        % unfinished[rid]}
        self.interrupted = set(unfinished) - self.crashed  # run again

    def has(self, rid):
        return rid in self.done

    def _append(self, record):
        directory = os.path.dirname(os.path.abspath(self.path))
        os.makedirs(directory, exist_ok=True)
        with open(self.path, "a") as f:
            if self._newline_first:
                f.write("\n")
                self._newline_first = False
            f.write(json.dumps(record, sort_keys=True) + "\n")
            f.flush()
            os.fsync(f.fileno())

    def start(self, task, bundle, direction=None, shape=None):
        self._append({"task": task, "bundle": bundle, "direction": direction, "shape": shape, "status": "started"})

    def finish(self, record):
        self._append(record)
        self.done[record_id(record)] = record

    def records(self):
        return list(self.done.values())
