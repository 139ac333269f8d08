"""The tuner's second half, on the GPU machine (the runtime and PyTorch; no compiler): check and time every bundle.

Each bundle of the plan is checked once against float64 (a ragged size: every candidate must be right before its
time counts), then its programs are timed at the configuration's sizes: the forward program for the units the forward
launches, the backward program (after one forward) for the backward's units. Timing and checks are flashc.measure's
(the benchmarks' own). Each finished task is appended to the progress file, so a run stopped by its budget or by the
device's time limit resumes where it stopped.
"""

import dataclasses
import os
import sys
import time

from .. import configs
from ..spec import AttentionConfig, FfnConfig
from . import progress as progress_mod
from .plan import PlanDamaged, shape_label

# The check's sizes: ragged (not whole blocks), small enough for a float64 reference.
CHECK_ATTENTION = {"batch": 2, "seq": 1000}
CHECK_FFN_ROWS = 4096 + 300  # two split-K slices, the second ragged


def tasks(plan):
    """Every task of the plan in run order: [(task, bundle, direction, shape, config entry)], one check a bundle
    first, then its timings; a bundle shared by units (the hand rule) once."""
    ordered, seen = [], set()
    for entry in plan.data["configs"]:
        directions = {}
        for unit in entry["units"]:
            for bundle in unit["bundles"].values():
                for direction in unit["directions"]:
                    directions.setdefault(bundle, [])
                    if direction not in directions[bundle]:
                        directions[bundle].append(direction)
        for bundle, dirs in directions.items():
            if bundle in seen:
                continue
            seen.add(bundle)
            ordered.append(("check", bundle, None, None, entry))
            for direction in sorted(dirs, key=lambda d: d != "forward"):
                for shape in entry["shapes"]:
                    ordered.append(("time", bundle, direction, shape_label(shape), entry))
    return ordered


def _shape_of(entry, label):
    label = label.split("#")[0]  # a confirmation round's label: "<shape>#<round>"
    return next(s for s in entry["shapes"] if shape_label(s) == label)


def confirm_tasks(plan, keys_points, rounds):
    """The confirmation round: for each key -> (hand rule, winner) of the first round, both points timed again at
    every size, `rounds` times, alternately (hand, winner, hand, winner, ...), so that a winner must hold its gain
    against the hand rule timed next to it. Tasks as tasks(): ("confirm", bundle, direction, "<shape>#<round>",
    entry)."""
    ordered = []
    for entry, unit in plan.units():
        if unit["key"] not in keys_points:
            continue
        points = keys_points[unit["key"]]
        bundles = [unit["bundles"].get(p) for p in points]
        if any(b is None for b in bundles):
            continue
        for shape in entry["shapes"]:
            for r in range(rounds):
                for bundle in bundles:
                    for direction in sorted(unit["directions"], key=lambda d: d != "forward"):
                        ordered.append(("confirm", bundle, direction, "%s#%d" % (shape_label(shape), r), entry))
    return ordered


def points_of(plan):
    """bundle -> ["<key>: <point>", ...]: what a bundle's numbers are evidence for (for progress lines)."""
    out = {}
    for entry, unit in plan.units():
        for point, bundle in unit["bundles"].items():
            out.setdefault(bundle, []).append("%s: %s" % (unit["key"], point))
    return out


def run(plan, progress, measurer, budget_s=None, say=None, task_list=None):
    """Runs every task (of `task_list`, default tasks(plan)) not yet in `progress` with `measurer`
    (check(entry, bundle) -> record fields, time(entry, bundle, direction, shape) -> record fields, also for
    "confirm" tasks); stops before a task once `budget_s` seconds have passed. Returns the number of tasks left."""
    say = say or (lambda text: print(text, file=sys.stderr, flush=True))
    all_tasks = tasks(plan) if task_list is None else task_list
    todo = [t for t in all_tasks if not progress.has(progress_mod.task_id(t[0], t[1], t[2], t[3]))]
    total, started = len(all_tasks), time.time()
    done_before = total - len(todo)
    if progress.crashed:
        say("resuming: %d task(s) ended two runs and are recorded as crashed" % len(progress.crashed))
    if getattr(progress, "interrupted", None):
        say("resuming: %d task(s) the last run did not finish (stopped or crashed) run again" % len(progress.interrupted))
    described = points_of(plan)
    for i, (task, bundle, direction, label, entry) in enumerate(todo):
        if budget_s is not None and time.time() - started > budget_s:
            say("budget of %.0f s spent: %d of %d tasks left (run again to resume)" % (budget_s, len(todo) - i, total))
            return len(todo) - i
        progress.start(task, bundle, direction, label)
        record = {"task": task, "bundle": bundle, "direction": direction, "shape": label}
        t0 = time.time()
        try:
            if task == "check":
                record.update(measurer.check(entry, bundle))
            else:
                record.update(measurer.time(entry, bundle, direction, _shape_of(entry, label)))
            record.setdefault("status", "ok")
        except PlanDamaged:
            raise  # (the plan directory, not the candidate: the task stays unfinished and runs once it is whole)
        except Exception as e:  # one candidate that fails must not stop the others
            record["status"] = "error: %s" % (str(e).strip().splitlines() or ["?"])[0][:300]
        record["seconds"] = round(time.time() - t0, 3)
        progress.finish(record)
        what = ("check" if task == "check" else "%s %s" % (direction, label))
        result = (("pass" if record.get("pass") else "FAIL") if task == "check" and record["status"] == "ok"
                  else "%.4f ms (%d samples, %d outliers)" % (record["median_ms"], record["samples"],
                                                              record["outliers"])
                  if record["status"] == "ok" else record["status"])
        say("[%d/%d] %s %s: %s  <- %s" % (done_before + i + 1, total, what, bundle, result,
                                          "; ".join(described.get(bundle, []))[:300]))
    return 0


def dry_run(plan, work, say=None):
    """What `time` needs, without a GPU or torch: every bundle unpacks, opens (the runtime reads its manifest) and has
    the programs its units are timed through, with the parameters flashc.torch passes. Returns the problems found."""
    from .. import programs
    from ..bundle import Bundle
    say = say or (lambda text: print(text, file=sys.stderr, flush=True))
    problems, checked = [], set()
    for entry, unit in plan.units():
        config = configs.parse_config(entry["config"])
        for point, bundle in unit["bundles"].items():
            first = ["forward", "backward"] + (["forward_train"] if isinstance(config, FfnConfig) else [])
            for direction in first if bundle not in checked else unit["directions"]:
                try:
                    path = plan.materialize(bundle, os.path.join(work, "bundles", bundle))
                    programs.resolve(Bundle(path), keyed(config, bundle), direction)
                except Exception as e:
                    problems.append("%s (%s: %s) %s: %s" % (bundle, unit["key"], point, direction, e))
            checked.add(bundle)
    say("dry run: %d bundles open with their programs; %d problem(s)" % (len(checked), len(problems)))
    for p in problems:
        say("  " + p)
    return problems


def keyed(config, key):
    """`config` under another key: the bundle the runtime finds is the candidate's (FLASHC_BUNDLE_PATH/<key>)."""
    base = type(config)
    cls = _KEYED.get(base)
    if cls is None:
        cls = _KEYED[base] = type("Tuned" + base.__name__, (base,), {"key": property(lambda self: self._key)})
    c = cls(**{f.name: getattr(config, f.name) for f in dataclasses.fields(config)})
    object.__setattr__(c, "_key", key)
    return c


_KEYED = {}


def _reference_modifiers(config, tensors):
    """attention_reference's mask_mod / score_mod for config: its modifiers' programs reading `tensors` (the mask's
    first, as flashc.modifier_inputs.tensors_for gives them)."""
    from ..mask_mod import IndexProgram
    from ..score_mod import ScoreProgram
    out, rest = {}, list(tensors)
    if config.mask_mod is not None:
        n = len(config.mask_tensor_names())
        out["mask_mod"] = IndexProgram.parse(config.mask_mod).with_tensors(*rest[:n])
        rest = rest[n:]
    if config.score_mod is not None:
        out["score_mod"] = ScoreProgram.parse(config.score_mod).with_tensors(*rest)
    return out


class TorchMeasurer:
    """Checks and times through flashc.torch's launch path (the candidates' bundles found by their keys)."""

    def __init__(self, plan, work, warmup=25, rep=100, lead_us=0):
        import torch
        from .. import cache
        self.torch = torch
        self.plan = plan
        self.warmup, self.rep, self.lead_us = warmup, rep, lead_us
        self.bundles = os.path.join(work, "bundles")
        os.makedirs(self.bundles, exist_ok=True)
        os.environ["FLASHC_BUNDLE_PATH"] = self.bundles
        cache.clear_loaded()
        self.inputs = {}
        self.modifiers = {}

    def _modifier_tensors(self, config, batch, seq):
        """The tensors config's modifiers read (flashc.modifier_inputs: the benchmark's documents, slopes, layouts),
        made once a size."""
        from .. import modifier_inputs
        key = ("modifiers", config.mask_mod, config.score_mod, config.num_heads, batch, seq)
        if key not in self.modifiers:
            self.modifiers.clear()
            self.modifiers[key] = modifier_inputs.tensors_for(config, batch, seq)
        return self.modifiers[key]

    def _candidate(self, entry, bundle):
        self.plan.materialize(bundle, os.path.join(self.bundles, bundle))
        return keyed(configs.parse_config(entry["config"]), bundle)

    # ------------------------------------------------------------------ inputs
    def _attention_inputs(self, config, batch, seq):
        key = ("attention", config.dtype, config.num_heads, config.num_kv_heads, config.head_dim,
               config.value_head_dim, batch, seq)
        if key not in self.inputs:
            self.inputs.clear()  # one size at a time: the large ones take GBs
            torch = self.torch
            g = torch.Generator(device="cuda").manual_seed(0)
            dtype = torch.bfloat16 if config.dtype == "bf16" else torch.float16
            make = lambda h, d: torch.randn(batch, h, seq, d, device="cuda", generator=g).to(dtype)
            self.inputs[key] = (make(config.num_heads, config.head_dim), make(config.num_kv_heads, config.head_dim),
                                make(config.num_kv_heads, config.value_head_dim),
                                make(config.num_heads, config.value_head_dim))
        return self.inputs[key]

    def _ffn_inputs(self, config, rows):
        key = ("ffn", configs.format_config(config), rows)
        if key not in self.inputs:
            self.inputs.clear()
            torch = self.torch
            g = torch.Generator(device="cuda").manual_seed(0)
            dtype = torch.bfloat16 if config.dtype == "bf16" else torch.float16
            d, h, o = config.d_model, config.d_hidden, config.d_out
            r = lambda *s, scale=1.0: (torch.randn(*s, device="cuda", generator=g) * scale).to(dtype)
            self.inputs[key] = dict(x=r(rows, d), w1=r(d, h, scale=d ** -0.5), w2=r(h, o, scale=h ** -0.5),
                                    b1=r(h) if config.has_b1 else None, b2=r(o) if config.has_b2 else None,
                                    w_gate=r(d, h, scale=d ** -0.5) if config.gated else None, dy=r(rows, o))
        return self.inputs[key]

    # ------------------------------------------------------------------ tasks
    def time(self, entry, bundle, direction, shape):
        from .. import measure
        import flashc.torch as ft
        config = self._candidate(entry, bundle)
        if isinstance(config, AttentionConfig):
            q, k, v, do = self._attention_inputs(config, shape["batch"], shape["seq"])
            mods = self._modifier_tensors(config, shape["batch"], shape["seq"])
            if direction == "forward":
                fn = lambda: ft._attention_forward(config, q, k, v, None, mods)
            else:
                _, _, _, o, lse = ft._attention_forward(config, q, k, v, None, mods)
                fn = lambda: ft._attention_backward(config, None, q, k, v, o, lse, do, mods)
        else:
            t = self._ffn_inputs(config, shape["rows"])
            forward = lambda train: ft._ffn_forward(config, t["x"], t["w1"], t["b1"], t["w2"], t["b2"], t["w_gate"],
                                                    train=train)
            if direction == "forward":
                fn = lambda: forward(False)
            elif direction == "forward_train":  # the FFN's training forward (its up kernel saves pre)
                fn = lambda: forward(True)
            else:
                _, inputs, saved = forward(True)
                fn = lambda: ft._ffn_backward(config, (shape["rows"],), *inputs, saved, t["dy"])
        timing = measure.time_ms(fn, warmup=self.warmup, rep=self.rep, lead_us=self.lead_us)
        return {"median_ms": timing.median_ms, "samples": len(timing.samples_ms), "outliers": len(timing.outliers),
                "min_ms": min(timing.samples_ms), "max_ms": max(timing.samples_ms), "lead_us": self.lead_us}

    def check(self, entry, bundle):
        from .. import measure
        from ..testing import ffn_reference
        import flashc.torch as ft
        torch = self.torch
        config = self._candidate(entry, bundle)
        if isinstance(config, AttentionConfig):
            q, k, v, do = self._attention_inputs(config, CHECK_ATTENTION["batch"], CHECK_ATTENTION["seq"])
            mods = self._modifier_tensors(config, CHECK_ATTENTION["batch"], CHECK_ATTENTION["seq"])
            args = dict(scale=config.scale, window=config.window, softcap=config.softcap or None,
                        **_reference_modifiers(config, mods))

            def run(q, k, v, do):
                q, k, v, o, lse = ft._attention_forward(config, q, k, v, None, mods)
                return [o] + list(ft._attention_backward(config, None, q, k, v, o, lse, do, mods))

            # (No peer: check_attention bounds the error by the same math unfused in the inputs' precision.)
            ok, detail = measure.check_attention(run, q, k, v, do, causal=config.causal, heads=2, reference_args=args)
        else:
            t = self._ffn_inputs(config, CHECK_FFN_ROWS)
            b1, b2, wg = t["b1"], t["b2"], t["w_gate"]

            def run(x, w1, w2, dy):
                y, inputs, saved = ft._ffn_forward(config, x, w1, b1, w2, b2, wg, train=True)
                dx, dw1, _, dw2, _, dwg = ft._ffn_backward(config, (x.shape[0],), *inputs, saved, dy)
                return [y, dx, dw1, dw2] + ([dwg] if wg is not None else [])

            def unfused(x, w1, w2, dy):
                leaves = [u.detach().requires_grad_() for u in (x, w1, w2) + ((wg,) if wg is not None else ())]
                y = ffn_reference(leaves[0], leaves[1], b1, leaves[2], b2, activation=config.activation,
                                  w_gate=leaves[3] if wg is not None else None, dtype=x.dtype)
                return [y.detach()] + list(torch.autograd.grad(y, leaves, dy))

            ok, detail = measure.check_ffn(run, unfused, t["x"], t["w1"], t["w2"], w_gate=wg,
                                           activation=config.activation, dy=t["dy"], rows=CHECK_FFN_ROWS, b1=b1,
                                           b2=b2)
        torch.cuda.synchronize()
        worst = max(detail.values(), key=lambda r: (r["err"] / r["tol"]) if r["tol"] else float("inf"))
        return {"pass": bool(ok), "worst": worst, "detail": detail}
