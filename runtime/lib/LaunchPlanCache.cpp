// Launch plans by signature (LaunchPlanCache.h).
#include "flashc/runtime/LaunchPlanCache.h"

#include <algorithm>
#include <cstring>

namespace flashc::rt {

LaunchPlanCache::LaunchPlanCache(int alignmentLog2, size_t capacity)
    : alignmentLog2_(std::clamp(alignmentLog2, 0, 63)), capacity_(capacity ? capacity : 1) {}

namespace {

template <typename T> void appendBytes(std::string &out, const T &value) {
  out.append(reinterpret_cast<const char *>(&value), sizeof value);
}

void appendName(std::string &out, const std::string &name) {
  out += name;
  out += '\0';
}

} // namespace

std::string LaunchPlanCache::signature(const std::string &name, const Arguments &args) const {
  std::string key;
  key.reserve(64 + 96 * args.tensors().size() + 24 * args.scalars().size());
  appendName(key, name);
  for (const auto &[argName, t] : args.tensors()) {
    appendName(key, argName);
    appendBytes(key, uint8_t(t.dtype));
    appendBytes(key, uint8_t(t.rank));
    for (int i = 0; i < t.rank; ++i) {
      appendBytes(key, t.shape[i]);
      appendBytes(key, t.stride[i]);
    }
    // The pointer's alignment as far as any check can tell (null apart).
    auto address = reinterpret_cast<uintptr_t>(t.data);
    int alignment = address ? std::min(__builtin_ctzll(address), alignmentLog2_) : 255;
    appendBytes(key, uint8_t(alignment));
  }
  key += '\1'; // scalars follow
  for (const auto &[argName, s] : args.scalars()) {
    appendName(key, argName);
    appendBytes(key, uint8_t(s.type));
    appendBytes(key, s.f32);
    appendBytes(key, s.i32);
    appendBytes(key, s.i64);
  }
  return key;
}

void rebindPointers(KernelLaunch &launch, const Arguments &args) {
  const auto &given = args.tensors();
  for (size_t i = 0; i < launch.tensors.size(); ++i)
    if (!launch.tensorIsScratch[i]) launch.tensors[i].data = given.at(launch.kernel->tensors[i].name).data;
  launch.tensorMaps.clear(); // encoded again, from the new pointers
}

void rebindPointers(ProgramLaunch &launch, const Arguments &args) {
  for (auto &k : launch.kernels) rebindPointers(k, args);
}

template <typename Launch, typename Planner>
static Result<Launch> lookUpOrPlan(std::unordered_map<std::string, Launch> &kept, std::mutex &mutex, size_t capacity,
                                   uint64_t &made, std::string key, const Arguments &args, const Planner &plan) {
  {
    std::lock_guard<std::mutex> lock(mutex);
    auto it = kept.find(key);
    if (it != kept.end()) {
      Launch launch = it->second;
      rebindPointers(launch, args);
      return launch;
    }
    ++made;
  }
  auto planned = plan();
  if (!planned) return planned;
  std::lock_guard<std::mutex> lock(mutex);
  if (kept.size() >= capacity) kept.clear(); // many shapes (every sequence length): start over
  kept.emplace(std::move(key), *planned);
  return planned;
}

Result<KernelLaunch> LaunchPlanCache::kernel(const std::string &name, const Arguments &args, const KernelPlanner &plan) {
  return lookUpOrPlan(kernels_, mutex_, capacity_, plansMade_, signature(name, args), args, plan);
}

Result<ProgramLaunch> LaunchPlanCache::program(const std::string &name, const Arguments &args,
                                               const ProgramPlanner &plan) {
  return lookUpOrPlan(programs_, mutex_, capacity_, plansMade_, signature(name, args), args, plan);
}

size_t LaunchPlanCache::size() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return kernels_.size() + programs_.size();
}

uint64_t LaunchPlanCache::plansMade() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return plansMade_;
}

int alignmentLog2Of(const Manifest &manifest) {
  int64_t largest = 1;
  for (const auto &k : manifest.kernels) {
    for (const auto &t : k.tensors) largest = std::max(largest, t.requiredAlignment());
    if (!k.tensorMaps.empty()) largest = std::max<int64_t>(largest, 16);
  }
  int log2 = 0;
  while (log2 < 63 && (int64_t(1) << log2) < largest) ++log2;
  return log2;
}

} // namespace flashc::rt
