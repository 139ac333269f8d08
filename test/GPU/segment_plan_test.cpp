// The segment plan (segments.cuh) on the GPU against the CPU: for document ids of several shapes, each map row for
// row, zeros past the last tile; ids that go down fall back. The compiler's CPU executor mirrors the plan
// (TileExecutor.cpp) but no CPU result reads the maps: this is their check.
#include "runtime_gpu_util.h"

#include "flashc/device/segment_layout.h"

#include <array>
#include <filesystem>
#include <random>
#include <unistd.h>

using namespace flashc::rt;
using namespace flashc::test;
namespace device = flashc::device;

namespace {

using Row = std::array<int32_t, 4>;

/// The plan, as segments.cuh writes it (the reference).
std::vector<Row> referencePlan(const std::vector<int32_t> &ids) {
  const int64_t n = static_cast<int64_t>(ids.size());
  std::vector<Row> plan(static_cast<size_t>(device::segment_plan_rows(n)), Row{0, 0, 0, 0});
  std::vector<int64_t> starts;
  for (int64_t i = 0; i < n; ++i) {
    if (i > 0 && ids[i] < ids[i - 1]) {
      plan[0] = {device::kSegmentFallback, -1, -1, -1};
      return plan;
    }
    if (i == 0 || ids[i] != ids[i - 1]) starts.push_back(i);
  }
  const int64_t documents = static_cast<int64_t>(starts.size());
  if (documents > device::kSegmentPlanMaxDocuments || documents > device::segment_tile_bound(n, 64)) {
    plan[0] = {device::kSegmentFallback, -1, -1, -1};
    return plan;
  }
  starts.push_back(n);
  plan[0][0] = device::kSegmentForm;
  for (int s = 0; s < device::kSegmentMaps; ++s) {
    const int blockM = device::segment_map_block_rows(s);
    const int64_t bound = device::segment_tile_bound(n, blockM), first = device::segment_map_row(n, blockM);
    int64_t tiles = 0;
    for (int64_t d = 0; d < documents; ++d) tiles += (starts[d + 1] - starts[d] + blockM - 1) / blockM;
    plan[0][1 + s] = static_cast<int32_t>(tiles <= bound ? tiles : -1);
    if (tiles > bound) continue;
    int64_t t = first;
    for (int64_t d = 0; d < documents; ++d)
      for (int64_t i = 0; i < (starts[d + 1] - starts[d] + blockM - 1) / blockM; ++i)
        plan[t++] = {static_cast<int32_t>(starts[d]), static_cast<int32_t>(starts[d + 1] - starts[d]),
                     static_cast<int32_t>(i), 1};
  }
  return plan;
}

std::vector<Row> runPlan(const Driver &d, Bundle &b, const std::string &kernel, const std::vector<int32_t> &ids,
                         const std::string &label) {
  const int64_t n = static_cast<int64_t>(ids.size()), rows = device::segment_plan_rows(n);
  DeviceBuffer dids(d, ids.size() * 4), dplan(d, size_t(rows) * 16); // the plan poisoned with 0xFF
  dids.upload(ids);
  Arguments args;
  int64_t idsShape[1] = {n}, planShape[2] = {rows, 4};
  (void)args.setTensor("ids", dids.get(), DType::I32, 1, idsShape);
  (void)args.setTensor("plan", dplan.get(), DType::I32, 2, planShape);
  if (!checkOk(b.launch(kernel, args), "launch " + kernel + " on " + label)) return {};
  auto flat = dplan.download<int32_t>(size_t(rows) * 4);
  std::vector<Row> plan(static_cast<size_t>(rows));
  for (int64_t r = 0; r < rows; ++r)
    for (int c = 0; c < 4; ++c) plan[r][c] = flat[r * 4 + c];
  return plan;
}

/// Ids of documents of the given lengths (0, 1, 2, ...: non-decreasing).
std::vector<int32_t> documentIds(const std::vector<int64_t> &lengths) {
  std::vector<int32_t> ids;
  for (size_t d = 0; d < lengths.size(); ++d) ids.insert(ids.end(), size_t(lengths[d]), static_cast<int32_t>(d * 3));
  return ids;
}

} // namespace

int main() {
  const Driver *d = driverOrSkip();
  if (!d) return kSkipReturnCode;
  BundleOptions o;
  o.cacheDir = (std::filesystem::temp_directory_path() / ("flashc-gpu-plan-" + std::to_string(getpid()))).string();
  auto b = Bundle::open(FLASHC_TEST_BUNDLES_DIR "/segment_plan", o);
  if (!checkOk(b, "open the segment_plan bundle")) return checkSummary();
  // The context first: the device buffers below are allocated in it (a launch would make it only later).
  if (!checkOk((*b)->prepare(), "prepare the segment_plan bundle")) return checkSummary();
  std::mt19937 rng(45);
  auto lengths = [&](int count, int lo, int hi) {
    std::vector<int64_t> v;
    std::uniform_int_distribution<int> u(lo, hi);
    for (int i = 0; i < count; ++i) v.push_back(u(rng));
    return v;
  };
  std::vector<std::pair<std::string, std::vector<int32_t>>> cases = {
      // bench_programmable's documents (flashc.modifier_inputs.document_lengths(16384))
      {"13 documents in 16384 tokens", documentIds({1985, 1044, 1808, 1117, 338, 786, 1303, 1251, 1085, 1861, 1955, 877, 974})},
      {"one token", documentIds({1})},
      {"one document of 5000 tokens", documentIds({5000})},
      {"40 documents of 1-400 tokens", documentIds(lengths(40, 1, 400))},
      {"300 documents of 64-200 tokens (past the plan's first pass)", documentIds(lengths(300, 64, 200))},
      // 2100 tiles of 64 rows
      {"one document of 134400 tokens and 20 short ones", [&] {
         auto v = lengths(20, 1, 300);
         v.insert(v.begin() + 7, 134400);
         return documentIds(v);
       }()},
  };
  auto down = documentIds({100, 200, 300});
  down[250] = -1;
  cases.push_back({"ids that go down (the fallback)", down});
  cases.push_back({"more documents than a quarter of the row blocks (the fallback)", documentIds(lengths(200, 1, 3))});
  for (const auto &[label, ids] : cases) {
    std::vector<Row> want = referencePlan(ids);
    std::vector<Row> got = runPlan(*d, **b, "plan", ids, label);
    if (!got.empty()) {
      // (the fallback writes the header alone: the kernels after it walk their table)
      const size_t rows = want[0][0] == device::kSegmentForm ? want.size() : 1;
      int64_t bad = 0;
      for (size_t r = 0; r < rows; ++r) bad += got[r] != want[r];
      check(bad == 0, label + ": the plan row for row", std::to_string(bad) + " rows differ");
    }
  }
  std::filesystem::remove_all(o.cacheDir);
  return checkSummary();
}
