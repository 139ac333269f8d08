"""Shared pieces of bench_attention.py and bench_ffn.py: output directory, environment facts, timing,
markdown/JSON/PNG writers and the bench/results/<date>-<gpu> report."""

import datetime
import json
import math
import os
import platform
import re
import subprocess
import sys

BENCH_DIR = os.path.dirname(os.path.abspath(__file__))
REPO_ROOT = os.path.dirname(BENCH_DIR)
sys.path.insert(0, os.path.join(REPO_ROOT, "python"))


def out_dir(arg):
    path = arg or os.environ.get("OUT") or os.path.join(REPO_ROOT, "out", "bench")  # /out/ is git-ignored
    os.makedirs(path, exist_ok=True)
    return path


def commit():
    if os.environ.get("FLASHC_COMMIT"):
        return os.environ["FLASHC_COMMIT"]
    try:
        return subprocess.run(["git", "-C", REPO_ROOT, "rev-parse", "--short", "HEAD"], stdout=subprocess.PIPE,
                              stderr=subprocess.DEVNULL, universal_newlines=True, timeout=10).stdout.strip() or "unknown"
    except Exception:
        return "unknown"


def environment(torch=None):
    env = {"date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
           "python": platform.python_version(), "commit": commit(), "command": " ".join([os.path.basename(sys.argv[0])] + sys.argv[1:])}
    if torch is not None:
        env["torch"] = torch.__version__
        try:
            if torch.cuda.is_available():
                env["gpu"] = torch.cuda.get_device_name()
                env["cudnn"] = str(torch.backends.cudnn.version())
        except Exception as e:  # facts for the report; never a reason to stop
            env["gpu_error"] = str(e)
    try:
        import triton
        env["triton"] = triton.__version__
    except Exception:
        pass
    return env


def add_lead_us_argument(parser):
    """--lead-us, shared by the benchmarks: call lead_us_from(parser, args) after parse_args."""
    parser.add_argument("--lead-us", default="0",
                        help="a GPU spin of N microseconds (or 'auto') before each timed call: the host's enqueueing "
                             "then runs ahead of the GPU, as in a training loop, and the times are the GPU's "
                             "(flashc.measure.time_ms; default 0)")


def lead_us_from(parser, args):
    """args.lead_us checked (0, a positive number of microseconds or 'auto'); a bad value exits through parser.error."""
    try:
        from flashc import measure
        args.lead_us = measure.parse_lead_us(args.lead_us)
    except ValueError as e:
        parser.error("--lead-us: %s" % e)
    return args


def do_bench(fn, grad_to_none=None, warmup=25, rep=100, lead_us=0):
    """Median milliseconds of fn (flashc.measure.time_ms: CUDA events, L2 flushed before each run; lead_us: a GPU
    spin before each timed call, so that the host's enqueueing is not timed)."""
    from flashc import measure
    return measure.time_ms(fn, warmup=warmup, rep=rep, grad_to_none=grad_to_none, lead_us=lead_us).median_ms


def interleaved(measures, rounds=3, warmup=25, rep=100, lead_us=0):
    """{name: {what: median ms}} for measures {name: {what: (fn, grad_to_none)}}, timed in `rounds` rounds that take the
    implementations in turn, each a median of its rounds' medians. Timing one implementation's calls after another's
    lets the GPU's clocks settle under the later one (session 16: ~12 % over six back-to-back calls; the H200 is
    power-bound on large GEMMs and warms over a run, session 31): round r takes them rotated by r, so that over a
    multiple of len(measures) rounds each implementation takes every turn equally often (forward-then-reversed
    order, used until session 31, put the first implementation first in ceil(rounds / 2) rounds and the middle one
    never first or last). An implementation that raises is left out of the later rounds: {name: {"error": text}}."""
    import statistics
    samples = {name: {what: [] for what in whats} for name, whats in measures.items()}
    errors = {}
    names = list(measures)
    for r in range(rounds):
        shift = r % len(names) if names else 0
        for name in names[shift:] + names[:shift]:
            if name in errors:
                continue
            try:
                for what, (fn, grad_to_none) in measures[name].items():
                    samples[name][what].append(do_bench(fn, grad_to_none=grad_to_none, warmup=warmup, rep=rep,
                                                         lead_us=lead_us))
            except Exception as e:  # a peer that fails at this size: its row says why
                errors[name] = str(e).splitlines()[0][:300] if str(e) else type(e).__name__
    return {name: ({"error": errors[name]} if name in errors else
                   {what: statistics.median(ms) for what, ms in samples[name].items()}) for name in names}


def cuda_kernel_times(fn, iters):
    """{kernel name: microseconds per call of fn} from torch.profiler, summed over the kernels of that name (the
    probes' breakdown of where a call's GPU time goes)."""
    import torch
    from torch.profiler import ProfilerActivity, profile
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(iters):
            fn()
        torch.cuda.synchronize()
    times = {}
    for event in prof.events():
        if event.device_type == torch.autograd.DeviceType.CUDA:
            times[event.name] = times.get(event.name, 0.0) + event.device_time / iters
    return times


def ffn_inputs(torch, M, d, h, gated):
    """The FFN benchmark's tensors (bf16, seeded): x [M, d], w1 [d, h], w2 [h, d], w_gate [d, h] or None, dy [M, d]."""
    g = torch.Generator(device="cuda").manual_seed(0)
    x = torch.randn(M, d, device="cuda", generator=g).to(torch.bfloat16).requires_grad_()
    w1 = (torch.randn(d, h, device="cuda", generator=g) * d ** -0.5).to(torch.bfloat16).requires_grad_()
    w2 = (torch.randn(h, d, device="cuda", generator=g) * h ** -0.5).to(torch.bfloat16).requires_grad_()
    wg = (torch.randn(d, h, device="cuda", generator=g) * d ** -0.5).to(torch.bfloat16).requires_grad_() \
        if gated else None
    dy = torch.randn(M, d, device="cuda", generator=g).to(torch.bfloat16)
    return x, w1, w2, wg, dy


def time_flashc_launches(ft):
    """Wraps flashc.torch._launch (argument binding and the runtime's launch) so that each call's host time is
    recorded: returns ({program: [seconds]}, restore), restore() putting the original back."""
    import time
    times, launch = {}, ft._launch

    def timed(bundle, program, device, args):
        t0 = time.perf_counter()
        launch(bundle, program, device, args)
        times.setdefault(program, []).append(time.perf_counter() - t0)

    def restore():
        ft._launch = launch

    ft._launch = timed
    return times, restore


def tflops(flops, ms):
    if ms is None or not math.isfinite(ms) or ms <= 0:
        return None
    return flops / (ms * 1e-3) / 1e12


def fmt(value, digits=0):
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "—"
    if digits == 0 and abs(value) < 10:
        digits = 1  # small values keep one decimal
    return "%.*f" % (digits, value)


def markdown_table(header, rows):
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def gpu_slug(gpu_name):
    """The GPU a report's file is named after: its name's first word holding a digit ("NVIDIA H100 80GB HBM3" -> "h100",
    "NVIDIA GH200 480GB" -> "gh200", "NVIDIA L40S" -> "l40s"); "cpu" without one."""
    for word in (gpu_name or "").split():
        if any(c.isdigit() for c in word):
            return re.sub(r"[^a-z0-9]", "", word.lower())
    return "cpu"


def write_outputs(directory, name, env, table_md, data, notes=""):
    """<dir>/<name>.md, <name>.json and results/<date>-<gpu>-<name>.md (repo format: date, GPU, commit, command,
    table; <gpu> the card that ran it, h200 or h100: the device tool may lend either)."""
    md = "# %s\n\n%s\n\n%s\n" % (name, table_md, notes)
    with open(os.path.join(directory, name + ".md"), "w") as f:
        f.write(md)
    with open(os.path.join(directory, name + ".json"), "w") as f:
        json.dump({"environment": env, "results": data}, f, indent=1, default=str)
    results = os.path.join(directory, "results")
    os.makedirs(results, exist_ok=True)
    day = env["date"].split(" ")[0]
    report = os.path.join(results, "%s-%s-%s.md" % (day, gpu_slug(env.get("gpu")), name))
    with open(report, "w") as f:
        f.write("## %s\n\n- date: %s\n- GPU: %s\n- commit: %s\n- command: `%s`\n- software: PyTorch %s, Triton %s, "
                "cuDNN %s, Python %s\n\n%s\n\n%s\n" % (
                    name, env["date"], env.get("gpu", "none"), env["commit"], env["command"], env.get("torch", "—"),
                    env.get("triton", "—"), env.get("cudnn", "—"), env["python"], table_md, notes))
    return report


def bar_plot(path, title, labels, series, ylabel="TFLOP/s"):
    """Grouped bar plot: labels on x, series = {name: [values or None]}. Skipped (returns None) without matplotlib."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    fig, ax = plt.subplots(figsize=(max(8, 1.2 * len(labels) * max(1, len(series)) / 3), 5))
    width = 0.8 / max(1, len(series))
    for i, (name, values) in enumerate(series.items()):
        xs = [j + i * width for j in range(len(labels))]
        ax.bar(xs, [v if v is not None else 0 for v in values], width, label=name)
    ax.set_xticks([j + 0.4 - width / 2 for j in range(len(labels))])
    ax.set_xticklabels(labels, rotation=30, ha="right", fontsize=8)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path
