#!/bin/bash
# GPU test of kernels flashc generates: compiles each spec in Inputs/ and the
# examples into a bundle (fusion, backward, tiling, CUDA, sm_90a cubin), then
# runs every program on the GPU against a float64 CPU reference with
# flashc-run, at ragged sizes (Sq = Sk = 257, then Sq = 77 with Sk = 200).
# Compile failures fail the test everywhere; without a GPU the run is skipped
# (exit 77, which ctest reports as skipped).
#   generated_kernels.sh FLASHC FLASHC_RUN WORKDIR
set -u
flashc="$1" run="$2" work="$3"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
mkdir -p "$work"
status=0
bundles=()
for spec in "$here"/Inputs/*.mlir "$here"/../../examples/*.mlir; do
  name="$(basename "$spec" .mlir)"
  if "$flashc" "$spec" -o "$work/$name.bundle" --arch=sm_90a; then
    bundles+=("$work/$name.bundle")
  else
    echo "FAIL: flashc could not compile $spec"
    status=1
  fi
done
# compile_variant SPEC SUFFIX WHAT FLAGS...: SPEC's bundle as $work/<name>.SUFFIX.bundle with FLAGS, added to the runs.
compile_variant() {
  local spec="$1" suffix="$2" what="$3"
  shift 3
  local name
  name="$(basename "$spec" .mlir)"
  if "$flashc" "$spec" -o "$work/$name.$suffix.bundle" --arch=sm_90a "$@"; then
    bundles+=("$work/$name.$suffix.bundle")
  else
    echo "FAIL: flashc $what could not compile $spec"
    status=1
  fi
}
# The Sᵀ backward form of the attention specs as well.
for spec in "$here"/Inputs/attention_*.mlir; do
  compile_variant "$spec" transposed "--backward-form=transposed" --backward-form=transposed
done
# The attention forward on the persistent grid (a tuning point, #tile.grid_order<persistent>), with one more run
# below at Sq = 700 > Sk = 300: causal rows that see no key (tiles without key blocks) and blocks that take
# several tiles (three batches of every head: more units than SMs). The persistent grid takes two consumer
# warpgroups (128 rows on 8 warps): the entry gives the D <= 64 forwards that plan too. Only inputs whose tuning space
# holds the grid (not D = 32's mma.sync forward, where the entry is refused).
printf 'sm_90a attention_forward * * * -> block_m=128 warps=8 persistent=1\n' > "$work/persistent.txt"
for spec in "$here"/Inputs/attention_*.mlir; do
  "$flashc" "$spec" --print-tuning-space | grep -q 'persistent=1' || continue
  compile_variant "$spec" persistent "--tuning-table (persistent forward)" --tuning-table="$work/persistent.txt"
done
# The forward's wide key blocks (192 keys, a tuning point of forwards without a softcap or a modifier but a separable
# score modifier or a mask modifier of indices alone, Dv <= 128)
# for every input whose tuning space holds them; one more run below at Sk = 1000 (five key blocks, the last of 40 keys).
printf 'sm_90a attention_forward * * * -> block_m=128 block_n=192 warps=8 stages=2\n' > "$work/wide-keys.txt"
for spec in "$here"/Inputs/attention_*.mlir; do
  "$flashc" "$spec" --print-tuning-space | grep -q 'block_n=192' || continue
  compile_variant "$spec" wide-keys "--tuning-table (wide key blocks)" --tuning-table="$work/wide-keys.txt"
done
echo "compiled ${#bundles[@]} bundles"
for bundle in "${bundles[@]}"; do
  "$run" "$bundle" --require-gpu --batch 2 --seq-q 257 --seq-k 257 --tokens 96
  rc=$?
  if [ $rc -eq 77 ]; then
    [ $status -eq 0 ] && exit 77 # no GPU: the compiles passed, the runs are skipped
    exit $status
  fi
  [ $rc -eq 0 ] || status=1
  "$run" "$bundle" --require-gpu --batch 1 --seq-q 77 --seq-k 200 --tokens 33 || status=1
  case "$(basename "$bundle")" in
    *.persistent.bundle) "$run" "$bundle" --require-gpu --batch 3 --seq-q 700 --seq-k 300 --tokens 33 || status=1 ;;
    *.wide-keys.bundle) "$run" "$bundle" --require-gpu --batch 2 --seq-q 300 --seq-k 1000 --tokens 33 || status=1 ;;
  esac
  # FFN weight gradients split their rows in slices of 4096 (gemm_split_k): three slices, the last ragged.
  # Run-time key offsets: rows before the first key, past the last, and the int32 extremes.
  case "$(basename "$bundle")" in
    attention_key_offset_*)
      for off in -100 150 2147483647 -2147483648; do
        "$run" "$bundle" --require-gpu --batch 1 --seq-q 77 --seq-k 200 --key-offset "$off" || status=1
      done ;;
  esac
  case "$(basename "$bundle")" in
    ffn_*) "$run" "$bundle" --require-gpu --tokens 8225 || status=1 ;;
  esac
done
exit $status
