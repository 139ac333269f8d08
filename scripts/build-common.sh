# Sourced by the scripts in this folder: paths and the configure/build steps.
# FLASHC_BUILD_DIR overrides the build directory, FLASHC_JOBS the parallelism.
flashc_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
flashc_build="${FLASHC_BUILD_DIR:-$flashc_root/build}"
flashc_jobs="${FLASHC_JOBS:-$(nproc)}"

# Configures once; later builds let CMake re-run itself when needed.
flashc_configure() {
  if [ ! -f "$flashc_build/build.ninja" ]; then
    cmake -G Ninja -S "$flashc_root" -B "$flashc_build"
  fi
}

# Builds the given targets (everything when none are given).
flashc_build_targets() {
  local targets=()
  local target
  for target in "$@"; do
    targets+=(--target "$target")
  done
  cmake --build "$flashc_build" -j "$flashc_jobs" "${targets[@]}"
}
