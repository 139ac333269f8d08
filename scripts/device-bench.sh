#!/usr/bin/env bash
# The command run on the GPU machine, from the repository root:
#   scripts/device-bench.sh [BUNDLE_DIR] [--steps build,test,run,sanitize,attention,ffn,tune] [--attention-args "..."]
#                           [--ffn-args "..."] [--tests "test_a.py test_b.py"] [--tune-plan DIR] [--tune-args "..."]
#                           [--dry-run]
# BUNDLE_DIR (or FLASHC_BUNDLE_PATH) holds bundles made on the dev machine with
#   PYTHONPATH=python python3 -m flashc.prebuild --out BUNDLE_DIR all
# Steps (default all): build = the runtime (no MLIR there) in build-dev; test = ctest (runtime + Python GPU
# tests); run = flashc-run on every carried bundle against a float64 CPU reference; attention / ffn =
# the benchmarks; tune = python -m flashc.tune time over the plan directory --tune-plan (default .carry/tune, made
# here by `python -m flashc.tune plan --out .carry/tune`; not in the default steps): its progress, table and report
# land in $OUT/tune, and a progress.jsonl carried in the plan directory is resumed. The device tool stops a command
# after 10 minutes: split a full
# run over several calls, e.g. --steps build,test, then --steps attention --attention-args "--head-dims 64",
# then "--head-dims 128", then --steps ffn (build-dev is kept on a warm machine; rebuilt when missing).
# Everything is written to a work directory ($FLASHC_DEVICE_WORK, default /tmp/flashc-device); at the end
# the report ($OUT/<date>-<gpu>.md), the plot, the step summary and a tarball of all logs are copied to
# $OUT (the device tool brings back at most 8 files).
# Exit status: non-zero if a step failed (the remaining steps still run); 2 for a bad command line.
set -u -o pipefail

DRY_RUN=0
STEPS="build,test,run,sanitize,attention,ffn"
ATTENTION_ARGS=""
FFN_ARGS=""
TESTS=""
TUNE_PLAN=".carry/tune"
TUNE_ARGS=""
BUNDLES="${FLASHC_BUNDLE_PATH:-}"
while [ $# -gt 0 ]; do
  case "$1" in
    --dry-run) DRY_RUN=1 ;;
    --steps) STEPS="${2:?--steps needs a value}"; shift ;;
    --attention-args) ATTENTION_ARGS="${2:?--attention-args needs a value}"; shift ;;
    --ffn-args) FFN_ARGS="${2:?--ffn-args needs a value}"; shift ;;
    --tests) TESTS="${2:?--tests needs a value}"; shift ;;
    --tune-plan) TUNE_PLAN="${2:?--tune-plan needs a value}"; shift ;;
    --tune-args) TUNE_ARGS="${2:?--tune-args needs a value}"; shift ;;
    -h|--help) sed -n '2,17p' "$0"; exit 0 ;;
    -*) echo "device-bench: unknown option $1 (see --help)" >&2; exit 2 ;;
    *) BUNDLES="$1" ;;
  esac
  shift
done
for s in ${STEPS//,/ }; do
  case "$s" in build|test|run|sanitize|attention|ffn|tune) ;; *) echo "device-bench: unknown step '$s' (build, test, run, sanitize, attention, ffn, tune)" >&2; exit 2 ;; esac
done
has_step() { [[ ",$STEPS," == *",$1,"* ]]; }

RESULTS_OUT="${OUT:-$PWD/out}"
OUT="${FLASHC_DEVICE_WORK:-/tmp/flashc-device}"
mkdir -p "$OUT/logs" "$RESULTS_OUT"
export OUT
if [ -n "$BUNDLES" ]; then
  given="$BUNDLES"
  BUNDLES="$(cd "$given" 2>/dev/null && pwd)" || { echo "device-bench: bundle directory '$given' does not exist" >&2; exit 2; }
  export FLASHC_BUNDLE_PATH="$BUNDLES"
else
  echo "device-bench: warning: no bundle directory (argument or FLASHC_BUNDLE_PATH); flashc rows and GPU tests will lack bundles" >&2
fi
export FLASHC_CACHE_DIR="${FLASHC_CACHE_DIR:-$OUT/cache}"
export PYTHONPATH="$PWD/python${PYTHONPATH:+:$PYTHONPATH}"
export PYTHONFAULTHANDLER=1  # a crash in a Python test prints its stack
export FLASHC_COMMIT="${FLASHC_COMMIT:-$(git rev-parse --short HEAD 2>/dev/null || echo unknown)}"
BUILD=build-dev
LIB="$PWD/$BUILD/runtime/libflashc_runtime.so"
status=0
step() {  # step NAME COMMAND...: run, log to $OUT/logs/NAME.log, remember failure
  local name="$1"; shift
  echo "=== $name: $*" | tee -a "$OUT/logs/summary.txt"
  local start=$SECONDS
  "$@" > "$OUT/logs/$name.log" 2>&1
  local rc=$?
  tail -n 40 "$OUT/logs/$name.log"
  echo "=== $name: exit $rc in $((SECONDS - start)) s" | tee -a "$OUT/logs/summary.txt"
  [ $rc -eq 0 ] || status=1
  return $rc
}

{ date -u; nvidia-smi 2>&1 | head -15; python3 -c 'import torch, triton; print("torch", torch.__version__, "triton", triton.__version__)' 2>&1;
  echo "steps: $STEPS"; echo "bundles: ${FLASHC_BUNDLE_PATH:-none}"; ls "${FLASHC_BUNDLE_PATH:-/nonexistent}" 2>/dev/null | head -60; } > "$OUT/logs/environment.txt"

if [ $DRY_RUN -eq 1 ]; then
  has_step attention && step bench_attention python3 bench/bench_attention.py --dry-run --out "$OUT" $ATTENTION_ARGS
  has_step ffn && step bench_ffn python3 bench/bench_ffn.py --dry-run --out "$OUT" $FFN_ARGS
else
  built=1
  if has_step build || [ ! -f "$LIB" ]; then
    { step configure cmake -G Ninja -S . -B "$BUILD" -DFLASHC_RUNTIME_ONLY=ON && step build ninja -C "$BUILD" ${NINJA_JOBS:+-j"$NINJA_JOBS"}; } || built=0
  fi
  if [ $built -eq 1 ] && [ -f "$LIB" ]; then
    export FLASHC_RUNTIME_LIB="$LIB"
  else
    echo "device-bench: the runtime did not build ($LIB missing); see $OUT/logs" >&2
    status=1
  fi
  if has_step test && [ -n "${FLASHC_RUNTIME_LIB:-}" ]; then
    # --tests names Python test files: only those run (no ctest), for a short call.
    [ -n "${TESTS:-}" ] || step ctest ctest --test-dir "$BUILD" --output-on-failure --timeout 1800
    # Until python/ is add_subdirectory'd in the top-level CMakeLists, run the Python tests directly.
    if ! ctest --test-dir "$BUILD" -N 2>/dev/null | grep -q python.unittest; then
      # One process per file, so that a crash in one file cannot hide the results of the others.
      for t in ${TESTS:-python/tests/test_*.py}; do
        t="python/tests/$(basename "$t")"
        step "python_$(basename "$t" .py)" python3 -m unittest discover -s python/tests -p "$(basename "$t")" -v
      done
    fi
  fi
  if has_step run && [ -n "${FLASHC_BUNDLE_PATH:-}" ]; then
    # Every carried bundle (examples and configurations) against the float64 reference in C++; one
    # bundle's references run on one CPU core, so bundles run side by side.
    run_bundle() {
      local b="$1" rc=0 rows
      # The float64 CPU references of the benchmark-size FFN (d=4096, h=16384: 0.5 GFLOP a row forward,
      # 1.6 backward) and of the whole blocks (d=2048..4096) take fewer rows.
      # The benchmark's largest MoE (8 experts of d=4096, h=14336: 1.4 G weights, 11 GB as float64) spends minutes
      # in its reference whatever the rows (session 54: over 200 s, not done); bench_moe checks it against PyTorch.
      case "$(basename "$b")" in
        moe_*d4096h*) echo "skipped: $(basename "$b") (its float64 reference takes minutes; bench_moe checks it)"; return 0 ;;
        *d4096h*|moe_*d2048h*|llama_block) rows=(17 5) ;;
        *_block) rows=(64 33) ;;
        *) rows=(300 130) ;;
      esac
      "$BUILD/bin/flashc-run" "$b" --batch 2 --seq-q 257 --seq-k 257 --tokens "${rows[0]}" || rc=1
      # The second size with every program's scratch NaN before it runs: a program that reads scratch it did not
      # write (a missing zero fill) fails here instead of passing on a pool that happened to hold zeros.
      "$BUILD/bin/flashc-run" "$b" --poison-scratch --batch 1 --seq-q 77 --seq-k 200 --tokens "${rows[1]}" || rc=1
      # Small FFNs also at 8225 rows: split-K weight gradients over three slices, the last ragged.
      case "$(basename "$b")" in ffn_bf16_d64*|ffn_f16_d*|ffn_bias*|ffn_gated*) "$BUILD/bin/flashc-run" "$b" --tokens 8225 || rc=1 ;; esac
      # Run-time key offsets (as test/GPU/generated_kernels.sh): before the first key, past the last, int32 extremes.
      case "$(basename "$b")" in attention_key_offset_*)
        for off in -100 150 2147483647 -2147483648; do
          "$BUILD/bin/flashc-run" "$b" --batch 1 --seq-q 77 --seq-k 200 --key-offset "$off" || rc=1
        done ;; esac
      [ $rc = 0 ] || echo "FAILED: flashc-run $(basename "$b")"
      return $rc
    }
    run_all() {
      local dir="$OUT/logs/flashc_run" rc=0 b
      mkdir -p "$dir"
      export -f run_bundle; export BUILD
      for b in "$FLASHC_BUNDLE_PATH"/*/; do
        [ -f "$b/manifest.flashc" ] && printf '%s\0' "$b"
      done | xargs -0 -P "$(( $(nproc) > 2 ? $(nproc) - 2 : 1 ))" -I{} bash -c 'run_bundle "$1" > "$2/$(basename "$1").log" 2>&1' _ {} "$dir" || rc=1
      cat "$dir"/*.log
      return $rc
    }
    step flashc_run run_all
  fi
  if has_step sanitize && [ -n "${FLASHC_BUNDLE_PATH:-}" ]; then
    # compute-sanitizer memcheck, racecheck and synccheck on small ragged shapes of a few representative bundles
    # (sm_90a ws forward; the ws backward's key split at D = 128 and padded D = 80, its role split at D = 256 and
    # D = 192 / Dv = 128, the Sᵀ wgmma backward at D = 64 (128 queries a step), with the forced row form of the
    # same configurations; window f16, GQA, key offset, FFN with split-K weight
    # gradients; the decode step with its append over a paged cache and the append alone, at 3 sequences).
    sanitize_all() {
      local rc=0 cs
      cs="$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -1)"
      [ -n "$cs" ] || { echo "compute-sanitizer not found"; return 1; }
      for pattern in attn_bf16_h2kv2_d128_causal_ attn_bf16_h2kv2_d64_full_ attention_window_d64_f16 \
                     attention_gqa_causal_d128_bf16 attn_bf16_h2kv2_d256_full_ attn_bf16_h2kv2_d192v128_causal_ attn_bf16_h4kv1_d80_causal_ \
                     attention_key_offset_window_d128_bf16 ffn_bf16_d64h256_gelu_tanh_b1b2_ \
                     decode_bf16_h32kv8_d128_t1_p64_causal_append_ kv_append_f16_kv2_d64v40_contig_; do
        for b in "$FLASHC_BUNDLE_PATH"/$pattern*/; do
          [ -f "$b/manifest.flashc" ] || continue
          for tool in memcheck racecheck synccheck; do
            echo "--- $tool $(basename "$b")"
            local batch=1
            case "$(basename "$b")" in decode_*|kv_append_*) batch=3 ;; esac
            "$cs" --tool "$tool" --error-exitcode 3 "$BUILD/bin/flashc-run" "$b" --batch $batch --seq-q 77 --seq-k 133 \
              --tokens 77 || { echo "FAILED: $tool $(basename "$b")"; rc=1; }
            # The ws backward: enough query blocks (5 of 64) that its Q/dO/lse/D ring slots and dSᵀ buffers are reused.
            # (D = 64: two of the forward's 192-row tiles, the K/V ring reused across them.)
            case "$(basename "$b")" in *_d256_*|*_d192v128_*|*_d128_*|*_d80_*|*_d64_*)
              "$cs" --tool "$tool" --error-exitcode 3 "$BUILD/bin/flashc-run" "$b" --batch 1 --seq-q 300 --seq-k 140 --tokens 77 \
                || { echo "FAILED: $tool $(basename "$b") (ring reuse)"; rc=1; } ;; esac
          done
        done
      done
      return $rc
    }
    step sanitize sanitize_all
  fi
  has_step attention && step bench_attention python3 bench/bench_attention.py --out "$OUT" $ATTENTION_ARGS
  has_step ffn && step bench_ffn python3 bench/bench_ffn.py --out "$OUT" $FFN_ARGS
  if has_step tune; then
    # The tuner's GPU half (python -m flashc.tune time): every candidate bundle of the plan checked against float64,
    # then timed; the progress file grows task by task, so a later call resumes it (carried back in the plan dir).
    mkdir -p "$RESULTS_OUT/tune"
    if [ -f "$TUNE_PLAN/progress.jsonl" ] && [ ! -f "$RESULTS_OUT/tune/progress.jsonl" ]; then
      cp "$TUNE_PLAN/progress.jsonl" "$RESULTS_OUT/tune/progress.jsonl"
    fi
    step tune python3 -m flashc.tune time "$TUNE_PLAN" --progress "$RESULTS_OUT/tune/progress.jsonl" \
      --out "$RESULTS_OUT/tune" --work "$OUT/tune" $TUNE_ARGS
  fi
fi

# One results file in the repo format: the sections this run produced.
day="$(date -u +%Y-%m-%d)"
gpu="$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)"
slug="$(for w in $gpu; do case "$w" in *[0-9]*) echo "$w" | tr 'A-Z' 'a-z' | tr -cd 'a-z0-9'; break ;; esac; done)"
report="$OUT/results/$day-${slug:-cpu}.md"
mkdir -p "$OUT/results"
{ echo "# $day — ${gpu:-no GPU}: benchmarks (scripts/device-bench.sh --steps $STEPS)"; echo;
  for part in "$OUT"/results/"$day-${slug:-cpu}"-bench_attention.md "$OUT"/results/"$day-${slug:-cpu}"-bench_ffn.md; do
    [ -f "$part" ] && { cat "$part"; echo; }
  done; } > "$report"
cp "$report" "$OUT/logs/summary.txt" "$RESULTS_OUT/" 2>/dev/null
cp "$OUT"/*.png "$RESULTS_OUT/" 2>/dev/null
tar czf "$RESULTS_OUT/device-logs.tgz" -C "$OUT" . 2>/dev/null
echo "device-bench: report $RESULTS_OUT/$(basename "$report"); logs $RESULTS_OUT/device-logs.tgz; exit $status"
exit $status
