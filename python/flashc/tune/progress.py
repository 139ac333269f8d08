"""The tuner's progress file: one JSON line a finished task, so that an interrupted run resumes.

A task is the timing of one bundle's program at one size, or the float64 check of one bundle:
  {"task": "time", "bundle": B, "direction": "forward", "shape": "B=4 S=4096", "status": "ok", "median_ms": ..., ...}
  {"task": "check", "bundle": B, "status": "ok", "pass": true, "detail": {...}}
Before a task starts, a "started" line names it: a task that started and never finished took the process down
(a kernel that faults loses the CUDA context), and is recorded as crashed instead of being run again.
"""

import json
import os


def task_id(task, bundle, direction=None, shape=None):
    return "|".join(str(p) for p in (task, bundle, direction or "", shape or ""))


def record_id(record):
    return task_id(record["task"], record["bundle"], record.get("direction"), record.get("shape"))


class Progress:
    def __init__(self, path):
        self.path = path
        self.done = {}
        self.crashed = set()
        started = set()
        if os.path.exists(path):
            with open(path) as f:
                for number, line in enumerate(f, 1):
                    line = line.strip()
                    if not line:
                        continue
                    try:
                        record = json.loads(line)
                    except ValueError:
                        continue  # a line cut short when the run was stopped
                    rid = record_id(record)
                    if record.get("status") == "started":
                        started.add(rid)
                    else:
                        self.done[rid] = record
                        started.discard(rid)
        self.crashed = started
        for rid in started:  # the task that took a process down is not run again
            task, bundle, direction, shape = rid.split("|")
            self.done[rid] = {"task": task, "bundle": bundle, "direction": direction or None, "shape": shape or None,
                              "status": "crashed (the process ended during this task: a fault?)"}

    def has(self, rid):
        return rid in self.done

    def _append(self, record):
        directory = os.path.dirname(os.path.abspath(self.path))
        os.makedirs(directory, exist_ok=True)
        with open(self.path, "a") as f:
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
