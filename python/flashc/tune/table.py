"""From measurements to the tuning table: each key's winner over the hand rule, the table file, the report.

A unit's time for a point at one size is the sum of its programs' medians there (the forward, the backward, or both
when the key's kernels are in both). A point competes for its key when its bundle passed the float64 check and was
timed at every size of every configuration with that key; its score is the geometric mean of the hand rule's time over
its own. The best point becomes the key's entry when it beats the hand rule by `margin` (default 2 %) overall and
loses more than `max_loss` (default 1 %, issue #19's bar) nowhere; otherwise the hand rule stays and the key gets no
entry. Where the progress holds a confirmation round for the key (the hand rule and the first round's winner timed
again, alternately, device.confirm_tasks), the winner must pass the same bar on the confirmation's medians as well: one run's gain of a few
per cent can be run-to-run spread.

An attention forward's key may also be split at a measured key length N (the kernel is split at launch,
docs/tuning.md): below N the point that wins the lengths up to N by the same bar (else the hand rule), above N the
point that wins the longer lengths (else the hand rule), as an entry bounded by key length (`... d64@s<=1024 causal ->
...`) and the key's unbounded entry. The split is taken where no point wins outright, or where it gains more over
the measured lengths (the product of the gains) than the outright winner.

Several runs (`table --also-run PLAN PROGRESS`, e.g. another day's, or another GPU's): each run's decisions are made
alone, and a key gets its entries only where every run that measured it made the same ones (`agree`).
"""

import datetime
import itertools
import math
import re

from .plan import shape_label

ENTRY = re.compile(r"^\s*(\S+\s+\S+\s+\S+\s+\S+\s+\S+)\s*->")
KEY_BOUND = re.compile(r"@s<=\d+$")
SEQ = re.compile(r"\bS=(\d+)\b")


def unbounded(key):
    """A table key without its shape's key-length bound (`d64@s<=1024` -> `d64`)."""
    fields = key.split()
    if len(fields) == 5:
        fields[3] = KEY_BOUND.sub("", fields[3])
    return " ".join(fields)


def bounded_key(key, max_seq):
    fields = key.split()
    fields[3] += "@s<=%d" % max_seq
    return " ".join(fields)


def _score(hand, p, sizes):
    """(geometric mean, lowest, highest) of the hand rule's time over point p's at `sizes`."""
    ratios = [hand["times"][s] / p["times"][s] for s in sizes]
    return math.exp(sum(math.log(r) for r in ratios) / len(ratios)), min(ratios), max(ratios)


def _ranked(found, key, sizes):
    """[(score, low, high, point)] of the key's checked points other than the hand rule timed at every one of `sizes`,
    best first."""
    if not sizes:
        return []  # (a plan timed at no size ranks nothing)
    data = found[key]
    hand = data["points"][data["hand_rule"]]
    return sorted((_score(hand, p, sizes) + (point,) for point, p in data["points"].items()
                   if point != data["hand_rule"] and p["check"] is True and all(s in p["times"] for s in sizes)),
                  reverse=True)


def _best(ranked, margin, max_loss):
    """The first of `ranked` that beats the hand rule by the margin and loses more than max_loss nowhere, or None."""
    return next((r for r in ranked if r[0] >= 1 + margin and r[1] >= 1 - max_loss), None)


def _split_winner(found, key, within, where, margin, max_loss):
    """(point, product of its gains, reason) of the best point over the hand rule at the sizes `within` (`where` says
    which key lengths those are) by the margin, losing more than max_loss at none of them (in the confirmation rounds
    too, where the progress has them); or None."""
    best = _best(_ranked(found, key, within), margin, max_loss)
    if best is None:
        return None
    score, low, high, point = best
    reason = "%.3fx over the hand rule at key lengths %s (%.2f-%.2fx at %d sizes)" % (score, where, low, high,
                                                                                     len(within))
    confirmed = confirmation(found, key, point, within)
    if confirmed is not None:
        if not (confirmed[0] >= 1 + margin and confirmed[1] >= 1 - max_loss):
            return None
        reason += "; confirmed %.3fx (%.2f-%.2fx)" % confirmed
    return point, score ** len(within), reason


def by_key_length(found, key, margin, max_loss):
    """The entries of an attention forward key split at a measured key length N, or None: below N (key lengths up to
    N) the point that wins those lengths by the margin, losing more than max_loss at none of them (in the confirmation
    rounds too, where the progress has them), else the hand rule; above N the point that wins the lengths above so,
    else the hand rule; at least one side a point. Entries: the point above as the key's unbounded entry (none where
    the hand rule keeps the longer keys) and the side below as an entry bounded at N (`... d128@s<=1024 none -> ...`:
    the hand rule's plan where only the longer keys have a winner). Of the measured lengths N (never the longest), the
    one with the largest product of gains over every length (1 where the hand rule runs); the first entry carries it
    as "gain"."""
    if key.split()[1:2] != ["attention_forward"]:
        return None
    data = found[key]
    sizes = data["sizes"]
    seqs = [SEQ.search(label) for _, label in sizes]
    if not sizes or any(m is None for m in seqs):
        return None
    seq_of = {size: int(m.group(1)) for size, m in zip(sizes, seqs)}
    lengths = sorted(set(seq_of.values()))
    best = None
    for bound in lengths[:-1]:
        below = _split_winner(found, key, [s for s in sizes if seq_of[s] <= bound], "up to %d" % bound, margin,
                              max_loss)
        above = _split_winner(found, key, [s for s in sizes if seq_of[s] > bound], "above %d" % bound, margin,
                              max_loss)
        if not below and not above:
            continue
        gain = (below[1] if below else 1.0) * (above[1] if above else 1.0)
        if best is not None and gain <= best[0]:
            continue
        entries = []
        if above:
            point, _, reason = above
            entries.append({"key": key, "point": point, "min_seq": bound + 1, "reason": reason})
        if below:
            point, _, reason = below
            entries.append({"key": bounded_key(key, bound), "point": point, "max_seq": bound, "reason": reason})
        else:
            entries.append({"key": bounded_key(key, bound), "point": data["hand_rule"], "max_seq": bound,
                            "reason": "the hand rule's plan at key lengths up to %d" % bound})
        if not above:
            entries[0]["reason"] += "; the hand rule above"
        best = (gain, entries)
    if best is None:
        return None
    best[1][0]["gain"] = best[0]
    return best[1]


def results(plan, records):
    """{key: {"hand_rule", "sizes": [(config, shape)], "points": {point: {"times": {(config, shape): ms},
    "check": True/False/None, "errors": [...]}}}} from the progress records."""
    by_task = {}
    for r in records:
        by_task[(r["task"], r["bundle"], r.get("direction"), r.get("shape"))] = r
    out = {}
    for entry, unit in plan.units():
        key = out.setdefault(unit["key"], {"hand_rule": unit["hand_rule"], "sizes": [], "points": {}})
        for shape in entry["shapes"]:
            key["sizes"].append((entry["config"], shape_label(shape)))
        for point in unit["candidates"]:
            p = key["points"].setdefault(point, {"times": {}, "check": None, "errors": [], "confirm": {}})
            if point in unit["errors"]:
                p["errors"].append("compile: " + unit["errors"][point])
                continue
            bundle = unit["bundles"].get(point)
            if bundle is None:
                continue
            check = by_task.get(("check", bundle, None, None))
            if check is not None:
                passed = check.get("status") == "ok" and bool(check.get("pass"))
                p["check"] = passed if p["check"] is None else (p["check"] and passed)
                if check.get("status") != "ok":
                    p["errors"].append("check: " + check["status"])
            for shape in entry["shapes"]:
                label = shape_label(shape)
                parts = [by_task.get(("time", bundle, d, label)) for d in unit["directions"]]
                if all(r is not None and r.get("status") == "ok" for r in parts):
                    p["times"][(entry["config"], label)] = sum(r["median_ms"] for r in parts)
                else:
                    p["errors"] += ["time %s: %s" % (label, r["status"]) for r in parts
                                    if r is not None and r.get("status") != "ok"]
                # The confirmation rounds' times at this size (a round counts where every direction was timed).
                rounds = []
                for r in itertools.count():
                    parts = [by_task.get(("confirm", bundle, d, "%s#%d" % (label, r))) for d in unit["directions"]]
                    if any(x is None for x in parts):
                        break
                    if all(x.get("status") == "ok" for x in parts):
                        rounds.append(sum(x["median_ms"] for x in parts))
                if rounds:
                    p["confirm"][(entry["config"], label)] = rounds
    return out


def _median(values):
    values = sorted(values)
    n = len(values)
    return values[n // 2] if n % 2 else 0.5 * (values[n // 2 - 1] + values[n // 2])


def confirmation(found, key, point, sizes=None):
    """(score, low, high) of `point` over the key's hand rule from the confirmation rounds (medians a size) at `sizes`
    (default: all of the key's), or None where either point lacks them at some size."""
    data = found[key]
    sizes = data["sizes"] if sizes is None else sizes
    hand, p = data["points"].get(data["hand_rule"], {}), data["points"].get(point, {})
    if any(s not in hand.get("confirm", {}) or s not in p.get("confirm", {}) for s in sizes):
        return None
    ratios = [_median(hand["confirm"][s]) / _median(p["confirm"][s]) for s in sizes]
    return math.exp(sum(math.log(r) for r in ratios) / len(ratios)), min(ratios), max(ratios)


def choose(found, margin=0.02, max_loss=0.01):
    """[decision] a key: {"key", "point" (None: the hand rule stays), "score", "low", "high", "best", "reason"}."""
    decisions = []
    for key, data in sorted(found.items()):
        hand = data["points"].get(data["hand_rule"], {})
        sizes = data["sizes"]
        decision = {"key": key, "point": None, "hand_rule": data["hand_rule"], "score": None, "low": None,
                    "high": None, "best": None, "sizes": len(sizes)}
        if hand.get("check") is not True or any(s not in hand.get("times", {}) for s in sizes):
            decision["reason"] = "the hand rule was not checked and timed at every size"
            decisions.append(decision)
            continue
        ranked = _ranked(found, key, sizes)
        if not ranked:
            decision["reason"] = "no other point was checked and timed at every size"
        else:
            # The best point that loses more than max_loss nowhere (else the best: the hand rule stays).
            score, low, high, point = _best(ranked, margin, max_loss) or ranked[0]
            decision.update(score=score, low=low, high=high, best=point)
            confirmed = confirmation(found, key, point)
            if score >= 1 + margin and low >= 1 - max_loss and confirmed is not None and not (
                    confirmed[0] >= 1 + margin and confirmed[1] >= 1 - max_loss):
                decision["reason"] = ("hand rule kept: the best other point %.3fx (%.2f-%.2fx), not confirmed: "
                                      "%.3fx (%.2f-%.2fx) timed again beside the hand rule" % ((score, low, high)
                                                                                              + confirmed))
            elif score >= 1 + margin and low >= 1 - max_loss:
                decision["point"] = point
                decision["reason"] = "%.3fx over the hand rule (%.2f-%.2fx at %d sizes)" % (score, low, high,
                                                                                           len(sizes))
                if confirmed is not None:
                    decision["reason"] += "; confirmed %.3fx (%.2f-%.2fx)" % confirmed
            else:
                decision["reason"] = "hand rule kept: the best other point %.3fx (%.2f-%.2fx)" % (score, low, high)
        if decision["best"] is not None:
            # A split by key length where no point wins outright, or where it is faster over the measured lengths
            # than the outright winner (the product of the gains at every length: the hand rule's outside a range).
            split = by_key_length(found, key, margin, max_loss)
            if decision["point"] is None:
                decision["bounded"] = split
                if split:
                    decision["reason"] += "; by key length: " + "; ".join(e["reason"] for e in split)
            elif split and split[0]["gain"] > decision["score"] ** len(sizes):
                decision["bounded"] = split
                decision["reason"] = ("by key length: %s (the best point over every length, %s, %.3fx, gains less)"
                                      % ("; ".join(e["reason"] for e in split), decision["point"], decision["score"]))
                decision["point"] = None
        decisions.append(decision)
    return decisions


def winners(decisions):
    """{key: (hand rule, winner, ...)} of the decisions with a winner, outright or by key length (a split's winner on
    each side): what a confirmation round times again, alternately (device.confirm_tasks)."""
    out = {}
    for d in decisions:
        if d["point"]:
            out[d["key"]] = (d["hand_rule"], d["point"])
        elif d.get("bounded"):  # each side's winner (a side that keeps the hand rule adds none)
            sides = [e["point"] for e in d["bounded"] if e["point"] != d["hand_rule"]]
            out[d["key"]] = (d["hand_rule"],) + tuple(dict.fromkeys(sides))
    return out


def entry_line(decision, stamp):
    return "%s -> %s  # %s: %s" % (decision["key"], decision["point"], stamp, decision["reason"])


def entries(decisions):
    """The decisions that make entries: each key's winner, or its winner by key length."""
    for d in decisions:
        if d["point"]:
            yield d
        elif d.get("bounded"):
            yield from d["bounded"]


def entry_points(decision):
    """((table key, point), ...): the entries a decision makes, () where the hand rule stays."""
    return tuple((e["key"], e["point"]) for e in entries([decision]))


def measured(decision):
    """Whether a run measured the decision's key: the hand rule and another point checked and timed at every size
    (a run stopped by its budget before the key decides nothing about it)."""
    return decision.get("best") is not None


def agree(decisions, others):
    """The decisions with an entry kept only where every other run that measured the key made the same entries (the
    same point, or the same split by key length with the same points); where one differs, the key keeps the hand rule
    and the reason names what each run chose. `others`: [(label, {key: decision})], each run's decisions (`choose`,
    the same margin and max_loss) from its own plan and progress. Agreement decides entries only: a key this run keeps
    by hand rule stays so whatever the other runs chose. Why (session 49): two runs gave the bf16 D = 64 causal
    backward an entry 1.03-1.05x ahead, a third on another day found the same point 4 % behind at 16k."""
    out = []
    for d in decisions:
        mine = entry_points(d)
        theirs = [(label, entry_points(runs[d["key"]])) for label, runs in others
                  if d["key"] in runs and measured(runs[d["key"]])]
        if mine and theirs:
            differ = [(label, points) for label, points in theirs if points != mine]
            if differ:
                said = "; ".join("%s: %s" % (label, ", ".join("%s -> %s" % e for e in points) or "the hand rule")
                                 for label, points in differ)
                d = dict(d, point=None, bounded=None,
                         reason="hand rule kept: the runs disagree (this run: %s; %s)" % (d["reason"], said))
            else:
                d = dict(d, reason=d["reason"] + "; the same in %d other run%s (%s)" % (
                    len(theirs), "" if len(theirs) == 1 else "s", ", ".join(label for label, _ in theirs)))
        out.append(d)
    return out


def merge(table_text, decisions, stamp):
    """The table with an entry for every decision that has a point (or one by key length) and none for the other
    measured keys (nor their entries bounded by key length); lines of keys not measured (a key the run's budget did not
    reach, or that no record of this progress file names) are kept as they are."""
    decided = {unbounded(d["key"]) for d in decisions if measured(d)}
    kept = []
    for line in table_text.splitlines():
        m = ENTRY.match(line.split("#", 1)[0])
        if m and unbounded(" ".join(m.group(1).split())) in decided:
            continue
        kept.append(line)
    while kept and not kept[-1].strip():
        kept.pop()
    new = [entry_line(d, stamp) for d in entries(decisions)]
    return "\n".join(kept + ([""] if kept and new else []) + new) + "\n"


def stamp_of(gpu=None, commit=None):
    day = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d")
    return "flashc.tune %s%s%s" % (day, " " + gpu if gpu else "", " " + commit if commit else "")


def report(found, decisions, stamp):
    """Markdown: one table a key (every point's time at every size), then the decisions."""
    lines = ["# Tuning results (%s)" % stamp, ""]
    for decision in decisions:
        key = decision["key"]
        data = found[key]
        sizes = data["sizes"]
        lines += ["## %s" % key, "", decision["reason"] + ".", ""]
        header = ["point", "check"] + ["%s %s" % (c.split(":", 1)[0], s) for c, s in sizes] + ["vs hand rule"]
        lines += ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
        hand = data["points"].get(data["hand_rule"], {}).get("times", {})
        chosen = {decision["point"]} | {e["point"] for e in decision.get("bounded") or []}  # (a split's sides too)
        for point, p in data["points"].items():
            cells = [("**%s** (hand rule)" % point) if point == data["hand_rule"] else
                     ("**%s**" % point if point in chosen else point)]
            cells.append({True: "pass", False: "FAIL", None: "—"}[p["check"]])
            cells += ["%.4f" % p["times"][s] if s in p["times"] else "—" for s in sizes]
            ratios = [hand[s] / p["times"][s] for s in sizes if s in hand and s in p["times"]]
            cells.append("%.3f" % math.exp(sum(math.log(r) for r in ratios) / len(ratios)) if ratios else "—")
            if p["errors"]:
                cells[0] += " (" + "; ".join(p["errors"])[:200] + ")"
            lines.append("| " + " | ".join(cells) + " |")
        lines.append("")
    lines += ["Times: milliseconds, medians (flashc.measure.time_ms: CUDA events, L2 flushed); a unit's time is the sum "
              "of the programs that launch its kernels. vs hand rule: geometric mean of the hand rule's time over the "
              "point's.", ""]
    return "\n".join(lines)
