#!/usr/bin/env python3
"""Bounded mutation fuzz test of flashc's inputs: graph specs (flash dialect)
and kernel-level IR (tile dialect).

Seed corpus: the specs in examples/*.mlir and the lit inputs under test/
(split at `// -----`), plus the `flashc --emit=tile` output of every graph spec
among them (sm_80 and sm_90a), generated at run time. Each run takes one seed,
applies 1-3 deterministic seeded mutations (integers to extremes, floats to
3e38 / inf / nan, dimensions to 0 / 1 / 3 / huge, element types swapped,
enumerators swapped, lines deleted / duplicated / swapped) and compiles it with
`flashc --emit=cuda` or `flash-opt` with the flashc pipeline, under a per-run
timeout. A run fails the test when it
  * crashes: killed by a signal, exit code >= 128, or a crash report in its
    output ("PLEASE submit a bug report", "Stack dump", an LLVM assertion,
    "LLVM ERROR", "UNREACHABLE");
  * hangs: runs past the timeout;
  * fails silently: non-zero exit with no "error:" diagnostic.
Rejecting a mutated input with a diagnostic, or compiling it, is a pass.

usage: fuzz_inputs.py --flashc PATH --flash-opt PATH --src-root DIR
                      [--runs N] [--seed S] [--jobs J] [--timeout SEC] [--out DIR]
--runs defaults to $FLASHC_FUZZ_RUNS or 1500 (a few minutes on 2 cores); run
e.g. FLASHC_FUZZ_RUNS=20000 locally to search longer. Failing inputs are
written to --out (default: a temporary directory) with the command line that
failed; the last line reads "N runs, M failed[, K known]".
"""
import argparse
import concurrent.futures
import os
import random
import re
import subprocess
import sys
import tempfile

# Known failures outside this test's scope: (name, predicate over the mutated
# input text and the failing run's output). A failure that matches is reported
# as XFAIL and does not fail the test. Empty it as the causes are fixed.
KNOWN_FAILURES = [
    # MLIR 19's parser frees a forward reference that an op still holds when
    # the value is defined inside that op's own region (`scf.if %p {.. %p =
    # ..}`, reached by swapping or duplicating lines): a use-after-free that
    # crashes while parsing or while printing the verifier error about the
    # dangling operand. llvm/llvm-project#107121, fixed upstream by #127778
    # (MLIR 21); flashc's own code has not run yet. Also seen: a crash after a
    # parse error in a kernel that uses never-defined values (deleted or moved
    # definitions: forward references the parser must discard), which looks
    # like the same placeholder handling but is not root-caused. Recognised by
    # the textual forward reference or undefined use in the input.
    ("mlir-parser-forward-ref-into-region",
     lambda text, output: has_forward_reference(text)),
    # MLIR 19's AsmPrinter segfaults printing any dense array of i1
    # (`array<i1: ...>`, printDenseArrayAttr's memcpy), whether the attribute is
    # printed with the module or in a diagnostic (a generic op's
    # operandSegmentSizes given as array<i1: ...>: the generated
    # setPropertiesFromAttr's error prints it). No flashc code runs (session 53,
    # a fuzzing review). Recognised by the i1 dense array in the input.
    ("mlir-print-dense-array-i1",
     lambda text, output: "array<i1" in text),
]

SSA_RE = re.compile(r"%[\w$.-]+")


def has_forward_reference(text):
    """Whether a value is used on a line before the line defining it, or never
    defined, within one top-level op (func.func / tile.kernel: their value
    names are scoped)."""
    scopes, current = [], []
    for line in text.split("\n"):
        if re.match(r"\s{0,2}(func\.func|tile\.kernel|module)\b", line):
            scopes.append(current)
            current = []
        current.append(line)
    scopes.append(current)
    for lines in scopes:
        defined_at = {}
        uses = []
        for i, line in enumerate(lines):
            code = line.split("//")[0]
            # Results (`%a, %b:2 = ...`), and `%x = ` / `%x: type` anywhere
            # (loop variables, iter_args, block and function arguments).
            head = re.match(r"\s*((?:%[\w$.-]+(?::\d+)?\s*,\s*)*%[\w$.-]+(?::\d+)?)\s*=(?!=)", code)
            defs = set(SSA_RE.findall(head.group(1))) if head else set()
            defs |= set(re.findall(r"(%[\w$.-]+)\s*(?:=(?!=)|:\s*[!a-z(])", code))
            for name in defs:
                defined_at.setdefault(name, i)
            uses += [(name, i) for name in SSA_RE.findall(code) if name not in defs]
        if any(defined_at.get(name, len(lines)) > i for name, i in uses):
            return True
    return False

INT_EXTREMES = [0, 1, -1, 2, 3, 7, 16, 17, 64, 128, 255, 256, 4096, 65536, 2**31 - 1, 2**31,
                2**32, 2**56, 2**62, 2**63 - 1, -(2**31), -(2**63)]
DIM_EXTREMES = [0, 1, 3, 8, 17, 40, 96, 512, 4096, 65535, 2**31, 2**56, 2**63 - 1]
FLOAT_EXTREMES = ["3.0e38", "-3.0e38", "1.0e308", "0.0", "-0.0", "1.0e-45", "-1.0", "1.0e39",
                  # f64 and f32 hexadecimal inf / -inf / nan (MLIR has no inf/nan keywords)
                  "0x7FF0000000000000", "0xFFF0000000000000", "0x7FF8000000000000",
                  "0x7F800000", "0xFF800000", "0x7FC00000"]
ELEMENT_TYPES = ["bf16", "f16", "f32", "i8", "f64", "i32"]
# Enumerators and keywords whose siblings are swapped in.
ENUM_GROUPS = [
    ["mma_sync_sm80", "wgmma_sm90"],
    ["attention_forward", "attention_backward_preprocess", "attention_backward",
     "attention_backward_kv", "attention_backward_dq", "attention_backward_postprocess",
     "attention_backward_transposed", "attention_backward_kv_transposed", "gemm", "ffn_fused",
     "ffn_activation_grad", "column_sum", "gated_gemm", "gemm_split_k", "convert_f32"],
    ["gelu_tanh", "gelu_erf", "silu", "relu", "identity"],
    ["shared", "register"],
    ["true", "false"],
    ["causal", "none", "sliding_window"],
    ["transpose_a", "transpose_b", "transposed"],
]
ENUM_WORDS = {word: group for group in ENUM_GROUPS for word in group}
ENUM_RE = re.compile(r"\b(" + "|".join(sorted(ENUM_WORDS, key=len, reverse=True)) + r")\b")
# An integer attribute value: `window_left = -1`, `buffers = 2 : i64`,
# `#tile.grid<ceildiv(arg0[2], 128)>`, `window [-1, 0]`: what the kernel
# builders and the emitter read, so mutated more often than other integers.
ATTR_INT_RE = re.compile(r"(?:(?<=\w = )|(?<=, )|(?<=\[)|(?<=<))-?\d+(?=\s*(?::\s*i64|[,>\]]))")
# A named integer attribute (`head_dim = 128`, `block_m = 64 : i64`): the
# recipes and plans flash-plan-memory rebuilds kernels from.
NAMED_INT_RE = re.compile(r"(?<=\w = )-?\d+(?![\w.])")
# A decimal integer not part of a name (%arg0, @k1, f32, arg1[...]) or a float.
INT_RE = re.compile(r"(?<![\w.%@#$-])-?\d+(?![\w.])")
FLOAT_RE = re.compile(r"(?<![\w.])-?\d+\.\d+(?:[eE][+-]?\d+)?(?![\w.])")
# A static dimension of a shaped type: <4x?x64xbf16>.
DIM_RE = re.compile(r"(?<=[<x])(\d+)(?=x)")
TYPE_RE = re.compile(r"\b(bf16|f16|f32|i8|f64|i32)\b")
CRASH_MARKERS = ["PLEASE submit a bug report", "Stack dump", "Assertion", "LLVM ERROR",
                 "UNREACHABLE", "Segmentation fault", "terminate called"]


def read_seeds(src_root):
    """(name, text) of every seed: examples and lit inputs, split files cut."""
    paths = []
    for sub in ["examples", "test"]:
        for dirpath, dirnames, filenames in os.walk(os.path.join(src_root, sub)):
            dirnames.sort()
            for f in sorted(filenames):
                if f.endswith(".mlir"):
                    paths.append(os.path.join(dirpath, f))
    seeds = []
    for path in paths:
        with open(path, encoding="utf-8") as f:
            text = f.read()
        rel = os.path.relpath(path, src_root)
        for i, chunk in enumerate(re.split(r"^// -----.*$", text, flags=re.M)):
            # Lit RUN lines and checks are comments: the parser skips them.
            if "func.func" in chunk or "tile.kernel" in chunk:
                seeds.append((f"{rel}#{i}", chunk))
    return seeds


def run(cmd, timeout, stdin=None):
    try:
        p = subprocess.run(cmd, input=stdin, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           timeout=timeout)
        return p.returncode, p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace")
    except subprocess.TimeoutExpired:
        return None, "", ""
    except OSError as e:  # not a finding about the input: said as such
        return 1, "", f"fuzz_inputs.py: cannot run {cmd[0]}: {e}"


def tile_seeds(flashc, seeds, timeout, jobs):
    """The --emit=tile output of every graph spec seed that compiles."""
    graph = [(n, t) for n, t in seeds if "tile.kernel" not in t and "flash." in t]
    jobs_list = [(n, t, arch) for n, t in graph for arch in ["sm_80", "sm_90a"]]

    def one(item):
        name, text, arch = item
        rc, out, _ = run([flashc, "-", "--emit=tile", f"--arch={arch}", "-o", "-"], timeout * 2,
                         stdin=text.encode())
        return (f"{name}@tile-{arch}", out) if rc == 0 and "tile.kernel" in out else None

    with concurrent.futures.ThreadPoolExecutor(jobs) as pool:
        return [r for r in pool.map(one, jobs_list) if r]


def replace_match(rng, text, regex, choices):
    matches = list(regex.finditer(text))
    if not matches:
        return None
    m = rng.choice(matches)
    new = choices(m.group(0)) if callable(choices) else str(rng.choice(choices))
    return text[:m.start()] + new + text[m.end():]


def mutate(rng, text):
    """One mutation of `text`; (description, new text) or None if it did not apply."""
    kind = rng.choice(["named", "named", "named", "attr", "attr", "int", "dim", "dim", "float",
                       "type", "enum", "delete", "duplicate", "swap"])
    lines = text.split("\n")
    if kind == "named":
        new = replace_match(rng, text, NAMED_INT_RE, INT_EXTREMES)
    elif kind == "attr":
        new = replace_match(rng, text, ATTR_INT_RE, INT_EXTREMES)
    elif kind == "int":
        new = replace_match(rng, text, INT_RE, INT_EXTREMES)
    elif kind == "dim":
        new = replace_match(rng, text, DIM_RE, DIM_EXTREMES)
    elif kind == "float":
        new = replace_match(rng, text, FLOAT_RE, FLOAT_EXTREMES)
    elif kind == "type":
        new = replace_match(rng, text, TYPE_RE, lambda old: rng.choice(
            [t for t in ELEMENT_TYPES if t != old]))
    elif kind == "enum":
        new = replace_match(rng, text, ENUM_RE, lambda old: rng.choice(
            [w for w in ENUM_WORDS[old] if w != old]))
    else:
        # Line edits skip blank and comment lines, which change nothing.
        code = [i for i, l in enumerate(lines) if l.strip() and not l.strip().startswith("//")]
        if not code:
            return None
        i = rng.choice(code)
        if kind == "delete":
            del lines[i]
        elif kind == "duplicate":
            lines.insert(i, lines[i])
        else:
            j = rng.choice(code)
            lines[i], lines[j] = lines[j], lines[i]
        new = "\n".join(lines)
    return (kind, new) if new is not None and new != text else None


def commands(rng, flashc, flash_opt, seed_name, is_tile):
    """One compile command for the mutated input (read from stdin)."""
    arch = rng.choice(["sm_80", "sm_90a"])
    # Tile IR planned for one target is mostly compiled for the other, so that
    # flash-plan-memory rebuilds its kernels from their recipes.
    if seed_name.endswith("@tile-sm_80") and rng.random() < 0.7:
        arch = "sm_90a"
    elif seed_name.endswith("@tile-sm_90a") and rng.random() < 0.7:
        arch = "sm_80"
    if rng.random() < 0.7:
        cmd = [flashc, "-", "--emit=cuda", f"--arch={arch}", "-o", "-"]
        if not is_tile and rng.random() < 0.3:
            cmd.append(rng.choice(["--deterministic-backward", "--backward-form=transposed",
                                   "--backward-form=rows"]))
        return cmd
    return [flash_opt, "-", "--flash-generate-backward", f"--flash-tile=target={arch}",
            f"--flash-plan-memory=target={arch}", "-o", "/dev/null"]


def classify(rc, out, err):
    """Why a run failed, or None when it passed."""
    if rc is None:
        return "timeout (hang)"
    text = err + out
    for marker in CRASH_MARKERS:
        if marker in text:
            return f"crash ({marker!r} in output, exit {rc})"
    if rc < 0:
        return f"crash (signal {-rc})"
    if rc >= 128:
        return f"crash (exit code {rc})"
    if rc != 0 and "error:" not in err:
        return f"silent failure (exit {rc}, no 'error:' diagnostic)"
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--flashc", required=True)
    ap.add_argument("--flash-opt", required=True)
    ap.add_argument("--src-root", required=True)
    ap.add_argument("--runs", type=int, default=int(os.environ.get("FLASHC_FUZZ_RUNS", "1500")))
    ap.add_argument("--seed", type=int, default=int(os.environ.get("FLASHC_FUZZ_SEED", "1")))
    ap.add_argument("--jobs", type=int, default=int(os.environ.get("FLASHC_FUZZ_JOBS", "2")))
    ap.add_argument("--timeout", type=float, default=20.0, help="seconds per run")
    ap.add_argument("--out", default=None, help="directory for failing inputs")
    args = ap.parse_args()

    seeds = read_seeds(args.src_root)
    seeds += tile_seeds(args.flashc, seeds, args.timeout, args.jobs)
    if not seeds:
        print("no seeds found under", args.src_root)
        return 1
    tile = [s for s in seeds if "tile.kernel" in s[1]]
    graph = [s for s in seeds if "tile.kernel" not in s[1]]
    print(f"{len(seeds)} seeds ({len(tile)} with tile kernels), {args.runs} runs, seed {args.seed}",
          flush=True)

    # Every run's input and command come from the master seed alone, so a
    # failure is reproduced by its run number whatever the parallelism.
    def make(index):
        rng = random.Random(args.seed * 1_000_003 + index)
        # Kernel-level IR is the larger input surface: 60% of the runs.
        name, text = rng.choice(tile if tile and (not graph or rng.random() < 0.6) else graph)
        applied = []
        for _ in range(rng.choice([1, 1, 2, 3])):
            result = mutate(rng, text)
            if result:
                applied.append(result[0])
                text = result[1]
        return name, applied, text, commands(rng, args.flashc, args.flash_opt, name,
                                             "tile.kernel" in text)

    def execute(index):
        name, applied, text, cmd = make(index)
        rc, out, err = run(cmd, args.timeout, stdin=text.encode())
        return index, name, applied, text, cmd, classify(rc, out, err), err + out, rc

    out_dir = args.out or tempfile.mkdtemp(prefix="flashc-fuzz-")
    if os.path.isdir(out_dir):  # only this run's failures
        for f in os.listdir(out_dir):
            if re.fullmatch(r"run\d+\.mlir", f):
                os.remove(os.path.join(out_dir, f))
    failed = known = compiled = 0
    with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
        for index, name, applied, text, cmd, why, output, rc in pool.map(execute, range(args.runs)):
            compiled += rc == 0
            if why is None:
                continue
            known_name = next((k for k, known in KNOWN_FAILURES if known(text, output)), None)
            os.makedirs(out_dir, exist_ok=True)
            path = os.path.join(out_dir, f"run{index}.mlir")
            with open(path, "w", encoding="utf-8") as f:
                f.write(text)
            shown = " ".join(os.path.basename(c) if i == 0 else c for i, c in enumerate(cmd))
            tag = f"XFAIL ({known_name})" if known_name else "FAILED"
            print(f"{tag}: run {index}: {why}: seed {name}, mutations {'+'.join(applied)}: "
                  f"{shown.replace(' - ', ' ' + path + ' ', 1)}", flush=True)
            tail = [l for l in output.splitlines() if l.strip()][:6]
            for l in tail:
                print("    " + l[:200])
            if known_name:
                known += 1
            else:
                failed += 1
    # Compiled vs rejected shows whether the mutations still reach the passes.
    print(f"{compiled} compiled, {args.runs - compiled} rejected or failed")
    print(f"{args.runs} runs, {failed} failed" + (f", {known} known" if known else ""))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
