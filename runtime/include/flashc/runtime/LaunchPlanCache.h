// Launch plans kept by what they depend on besides the data pointers, so that a
// launch repeated with new pointers (a training step, a decode loop) skips
// argument validation and planning. No driver involved: testable on the CPU.
#pragma once

#include "flashc/runtime/Binding.h"

#include <functional>
#include <mutex>
#include <string>
#include <unordered_map>

namespace flashc::rt {

/// Plans of one bundle's kernels and programs on one device, by signature: the
/// entry's name and every argument's name, dtype, rank, shape, strides, scalar
/// value and pointer alignment (up to the largest the bundle requires; null
/// pointers apart). Planning is a function of exactly these, so a kept plan is
/// the plan of any arguments of the same signature once their pointers are put
/// in (the pointer-dependent checks, alignment and null, hold by the
/// signature). Failures are not kept: a bad launch is planned, and reported,
/// every time. Thread-safe; bounded (starts over when full).
class LaunchPlanCache {
public:
  /// alignmentLog2: log2 of the largest alignment any parameter or tensor map
  /// of the bundle requires (alignmentLog2Of).
  explicit LaunchPlanCache(int alignmentLog2, size_t capacity = 256);

  using KernelPlanner = std::function<Result<KernelLaunch>()>;
  using ProgramPlanner = std::function<Result<ProgramLaunch>()>;
  /// The plan of `name` for `args`: a kept one with args' pointers, else plan()'s (kept when it succeeds).
  Result<KernelLaunch> kernel(const std::string &name, const Arguments &args, const KernelPlanner &plan);
  Result<ProgramLaunch> program(const std::string &name, const Arguments &args, const ProgramPlanner &plan);

  size_t size() const;
  /// How many times a planner ran (misses), for tests.
  uint64_t plansMade() const;

private:
  std::string signature(const std::string &name, const Arguments &args) const;

  int alignmentLog2_;
  size_t capacity_;
  mutable std::mutex mutex_;
  std::unordered_map<std::string, KernelLaunch> kernels_;
  std::unordered_map<std::string, ProgramLaunch> programs_;
  uint64_t plansMade_ = 0;
};

/// log2 of the largest alignment a launch of `manifest`'s kernels checks: its
/// tensors' align= and, where a kernel has tensor maps, the TMA unit's 16 bytes.
int alignmentLog2Of(const Manifest &manifest);

/// Puts args' data pointers into a plan made for arguments of the same
/// signature (scratch tensors are left to the launch).
void rebindPointers(KernelLaunch &launch, const Arguments &args);
void rebindPointers(ProgramLaunch &launch, const Arguments &args);

} // namespace flashc::rt
