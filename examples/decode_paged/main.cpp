// A decode loop over a paged KV cache through the flashc runtime's C ABI: four sequences of different prompt
// lengths share one pool of 64-row pages (handed out in shuffled order by a free list, so no sequence's pages
// are adjacent). Each step gives every sequence a row for its new token (a fresh page when its last is full) in the
// block table and the lengths, and launches the bundle's `decode_step` program on the application's own stream and
// memory: the program writes the new tokens' K and V into the cache (flash.kv_append) and attends
// (flash.decode_attention). Every step's output and the cache rows it wrote are checked against the host; at the
// end a corrupt table entry shows how a bad table is refused: the launch fails naming the sequence, the output is NaN.
//   usage: decode_paged <bundle-dir> [steps]
// With no GPU or driver it says so and exits 0 (77 when asked for one: FLASHC_REQUIRE_GPU=1).
#include <flashc/flashc.h>

#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

namespace {

constexpr int kQueryHeads = 32, kKvHeads = 8, kHeadDim = 128, kPage = 64;
constexpr double kScale = 0.0883883461;  // the spec's: 1 / sqrt(128)

uint16_t toBf16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  u += 0x7fff + ((u >> 16) & 1);  // round to nearest even
  return uint16_t(u >> 16);
}
float fromBf16(uint16_t b) {
  uint32_t u = uint32_t(b) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

bool cudaOk(cudaError_t e, const char *what) {
  if (e == cudaSuccess) return true;
  std::fprintf(stderr, "decode_paged: %s: %s\n", what, cudaGetErrorString(e));
  return false;
}

// The cache: pages [pages, 64, Hkv, D] of K and V on the device, their host mirror for the CPU check, a free list.
struct PagedCache {
  int pages, width;  // pool size; block-table width (pages a sequence may hold)
  std::vector<uint16_t> k, v;  // host mirror
  void *dk = nullptr, *dv = nullptr;
  std::vector<int> free;
  std::vector<int32_t> table;  // [sequences, width]; -1 past a sequence's pages (never read)
  std::vector<int32_t> lengths;

  size_t rowElems() const { return size_t(kKvHeads) * kHeadDim; }
  size_t rowOffset(int page, int slot) const { return (size_t(page) * kPage + slot) * rowElems(); }

  // A row for one more token of sequence s (a fresh page from the free list when its last is full): the length
  // grows by one; the host mirror takes the token's K and V rows ([Hkv, D] each). The element offset of the row,
  // or -1 when the pool or table is full.
  long reserve(int s, const std::vector<uint16_t> &kRow, const std::vector<uint16_t> &vRow) {
    int length = lengths[size_t(s)], slot = length % kPage, index = length / kPage;
    if (index >= width) return -1;
    int32_t &page = table[size_t(s) * width + index];
    if (slot == 0) {
      if (free.empty()) return -1;
      page = free.back();
      free.pop_back();
    }
    size_t at = rowOffset(page, slot);
    std::copy(kRow.begin(), kRow.end(), k.begin() + long(at));
    std::copy(vRow.begin(), vRow.end(), v.begin() + long(at));
    ++lengths[size_t(s)];
    return long(at);
  }

  // A prompt token (prefill's work: here copied from the host).
  bool prefill(int s, const std::vector<uint16_t> &kRow, const std::vector<uint16_t> &vRow, cudaStream_t stream) {
    long at = reserve(s, kRow, vRow);
    size_t bytes = rowElems() * 2;
    return at >= 0 &&
           cudaOk(cudaMemcpyAsync(static_cast<char *>(dk) + at * 2, kRow.data(), bytes, cudaMemcpyHostToDevice, stream),
                  "prefill K") &&
           cudaOk(cudaMemcpyAsync(static_cast<char *>(dv) + at * 2, vRow.data(), bytes, cudaMemcpyHostToDevice, stream),
                  "prefill V");
  }
};

// out [S, Hq, D] for queries q [S, Hq, D] over the cache, float64, on the host.
std::vector<double> reference(const PagedCache &cache, const std::vector<uint16_t> &q, int sequences) {
  std::vector<double> out(size_t(sequences) * kQueryHeads * kHeadDim, 0.0);
  for (int s = 0; s < sequences; ++s)
    for (int h = 0; h < kQueryHeads; ++h) {
      int hk = h / (kQueryHeads / kKvHeads), n = cache.lengths[size_t(s)];
      std::vector<double> p(static_cast<size_t>(n));
      double m = -INFINITY, sum = 0.0;
      for (int j = 0; j < n; ++j) {
        size_t row = cache.rowOffset(cache.table[size_t(s) * cache.width + j / kPage], j % kPage) + size_t(hk) * kHeadDim;
        double dot = 0.0;
        for (int d = 0; d < kHeadDim; ++d)
          dot += double(fromBf16(q[(size_t(s) * kQueryHeads + h) * kHeadDim + d])) * fromBf16(cache.k[row + d]);
        p[size_t(j)] = kScale * dot;
        m = std::max(m, p[size_t(j)]);
      }
      for (double &x : p) sum += (x = std::exp(x - m));
      for (int j = 0; j < n; ++j) {
        size_t row = cache.rowOffset(cache.table[size_t(s) * cache.width + j / kPage], j % kPage) + size_t(hk) * kHeadDim;
        for (int d = 0; d < kHeadDim; ++d)
          out[(size_t(s) * kQueryHeads + h) * kHeadDim + d] += p[size_t(j)] / sum * fromBf16(cache.v[row + d]);
      }
    }
  return out;
}

}  // namespace

int main(int argc, char **argv) {
  if (argc < 2 || argc > 3) {
    std::fprintf(stderr, "usage: %s <bundle-dir> [steps]\n", argv[0]);
    return 2;
  }
  const int steps = argc == 3 ? std::atoi(argv[2]) : 8;
  flashc_bundle bundle = nullptr;
  if (flashc_bundle_open(argv[1], &bundle) != FLASHC_OK) {
    std::fprintf(stderr, "decode_paged: opening %s: %s\n", argv[1], flashc_last_error());
    return 1;
  }
  if (flashc_check_device() != FLASHC_OK) {
    std::printf("no GPU available (%s); nothing launched\n", flashc_last_error());
    flashc_bundle_close(bundle);
    return std::getenv("FLASHC_REQUIRE_GPU") ? 77 : 0;
  }

  const std::vector<int> prompts = {100, 1, 700, 64};  // tokens already in each sequence's cache
  const int sequences = int(prompts.size());
  PagedCache cache;
  cache.width = (700 + steps + kPage - 1) / kPage;
  cache.pages = 0;
  for (int p : prompts) cache.pages += (p + steps + kPage - 1) / kPage;
  cache.pages += 3;  // a few never used
  cache.k.assign(size_t(cache.pages) * kPage * cache.rowElems(), 0);
  cache.v = cache.k;
  cache.table.assign(size_t(sequences) * cache.width, -1);
  cache.lengths.assign(size_t(sequences), 0);
  std::mt19937 rng(7);
  for (int i = 0; i < cache.pages; ++i) cache.free.push_back(i);
  std::shuffle(cache.free.begin(), cache.free.end(), rng);

  cudaStream_t stream = nullptr;
  void *dq = nullptr, *dout = nullptr, *dlse = nullptr, *dlengths = nullptr, *dtable = nullptr, *dkNew = nullptr,
       *dvNew = nullptr;
  const size_t poolBytes = cache.k.size() * 2, qElems = size_t(sequences) * kQueryHeads * kHeadDim;
  const size_t newElems = size_t(sequences) * cache.rowElems();  // k_new / v_new [S, Hkv, 1, D]
  if (!cudaOk(cudaStreamCreate(&stream), "cudaStreamCreate") || !cudaOk(cudaMalloc(&cache.dk, poolBytes), "cudaMalloc") ||
      !cudaOk(cudaMalloc(&cache.dv, poolBytes), "cudaMalloc") || !cudaOk(cudaMalloc(&dq, qElems * 2), "cudaMalloc") ||
      !cudaOk(cudaMalloc(&dout, qElems * 2), "cudaMalloc") ||
      !cudaOk(cudaMalloc(&dlse, size_t(sequences) * kQueryHeads * 4), "cudaMalloc") ||
      !cudaOk(cudaMalloc(&dlengths, size_t(sequences) * 4), "cudaMalloc") ||
      !cudaOk(cudaMalloc(&dtable, cache.table.size() * 4), "cudaMalloc") ||
      !cudaOk(cudaMalloc(&dkNew, newElems * 2), "cudaMalloc") || !cudaOk(cudaMalloc(&dvNew, newElems * 2), "cudaMalloc"))
    return 1;
  // Unused cache memory holds NaN: a kernel that read past a sequence would show it.
  cudaMemset(cache.dk, 0xff, poolBytes);
  cudaMemset(cache.dv, 0xff, poolBytes);

  std::normal_distribution<float> normal(0.f, 1.f);
  auto randomRow = [&](size_t n) {
    std::vector<uint16_t> row(n);
    for (uint16_t &x : row) x = toBf16(normal(rng));
    return row;
  };
  // The prompts (prefill writes them; here they are appended token by token).
  for (int s = 0; s < sequences; ++s)
    for (int t = 0; t < prompts[size_t(s)]; ++t)
      if (!cache.prefill(s, randomRow(cache.rowElems()), randomRow(cache.rowElems()), stream)) return 1;

  flashc_args args = nullptr;
  flashc_args_create(&args);
  const int64_t poolShape[4] = {cache.pages, kPage, kKvHeads, kHeadDim}, qShape[4] = {sequences, kQueryHeads, 1, kHeadDim};
  const int64_t lseShape[3] = {sequences, kQueryHeads, 1}, lengthShape[1] = {sequences},
                tableShape[2] = {sequences, cache.width}, newShape[4] = {sequences, kKvHeads, 1, kHeadDim};
  flashc_args_set_tensor(args, "q", dq, FLASHC_BF16, 4, qShape, nullptr);
  flashc_args_set_tensor(args, "k_new", dkNew, FLASHC_BF16, 4, newShape, nullptr);
  flashc_args_set_tensor(args, "v_new", dvNew, FLASHC_BF16, 4, newShape, nullptr);
  flashc_args_set_tensor(args, "k_cache", cache.dk, FLASHC_BF16, 4, poolShape, nullptr);
  flashc_args_set_tensor(args, "v_cache", cache.dv, FLASHC_BF16, 4, poolShape, nullptr);
  flashc_args_set_tensor(args, "cache_seqlens", dlengths, FLASHC_I32, 1, lengthShape, nullptr);
  flashc_args_set_tensor(args, "block_table", dtable, FLASHC_I32, 2, tableShape, nullptr);
  flashc_args_set_tensor(args, "out", dout, FLASHC_BF16, 4, qShape, nullptr);
  flashc_args_set_tensor(args, "lse", dlse, FLASHC_F32, 3, lseShape, nullptr);

  std::vector<uint16_t> q, out(qElems);
  double worst = 0.0;
  for (int step = 0; step < steps; ++step) {
    // Each sequence's new token: a row for it in the table and lengths; the program writes its K and V there (the
    // token attends to itself), then attends with its query.
    std::vector<uint16_t> kNew, vNew;
    std::vector<long> rows;
    for (int s = 0; s < sequences; ++s) {
      std::vector<uint16_t> kRow = randomRow(cache.rowElems()), vRow = randomRow(cache.rowElems());
      rows.push_back(cache.reserve(s, kRow, vRow));
      if (rows.back() < 0) return 1;
      kNew.insert(kNew.end(), kRow.begin(), kRow.end());
      vNew.insert(vNew.end(), vRow.begin(), vRow.end());
    }
    q = randomRow(qElems);
    cudaMemcpyAsync(dkNew, kNew.data(), newElems * 2, cudaMemcpyHostToDevice, stream);
    cudaMemcpyAsync(dvNew, vNew.data(), newElems * 2, cudaMemcpyHostToDevice, stream);
    cudaMemcpyAsync(dq, q.data(), qElems * 2, cudaMemcpyHostToDevice, stream);
    cudaMemcpyAsync(dlengths, cache.lengths.data(), cache.lengths.size() * 4, cudaMemcpyHostToDevice, stream);
    cudaMemcpyAsync(dtable, cache.table.data(), cache.table.size() * 4, cudaMemcpyHostToDevice, stream);
    if (flashc_launch(bundle, "decode_step", args, stream) != FLASHC_OK) {
      std::fprintf(stderr, "decode_paged: step %d: %s\n", step, flashc_last_error());
      return 1;
    }
    std::vector<uint16_t> written(2 * newElems);  // the rows the program wrote, K then V
    for (int s = 0; s < sequences; ++s) {
      size_t bytes = cache.rowElems() * 2;
      cudaMemcpyAsync(written.data() + size_t(s) * cache.rowElems(), static_cast<char *>(cache.dk) + rows[size_t(s)] * 2,
                      bytes, cudaMemcpyDeviceToHost, stream);
      cudaMemcpyAsync(written.data() + newElems + size_t(s) * cache.rowElems(),
                      static_cast<char *>(cache.dv) + rows[size_t(s)] * 2, bytes, cudaMemcpyDeviceToHost, stream);
    }
    if (!cudaOk(cudaMemcpyAsync(out.data(), dout, qElems * 2, cudaMemcpyDeviceToHost, stream), "reading out") ||
        !cudaOk(cudaStreamSynchronize(stream), "the step"))
      return 1;
    if (!std::equal(kNew.begin(), kNew.end(), written.begin()) ||
        !std::equal(vNew.begin(), vNew.end(), written.begin() + long(newElems))) {
      std::printf("FAILED: step %d: the cache rows the program wrote are not the new tokens' K and V\n", step);
      return 1;
    }
    std::vector<double> ref = reference(cache, q, sequences);
    double num = 0.0, den = 0.0;
    for (size_t i = 0; i < ref.size(); ++i) {
      double got = fromBf16(out[i]);
      num += (got - ref[i]) * (got - ref[i]);
      den += ref[i] * ref[i];
    }
    double rel = std::sqrt(num / den);
    worst = std::max(worst, std::isfinite(rel) ? rel : INFINITY);
    std::printf("step %d: lengths %d %d %d %d, out rel. error %.2e\n", step, cache.lengths[0], cache.lengths[1],
                cache.lengths[2], cache.lengths[3], rel);
  }

  // A corrupt table entry (a page id past the pool, among the pages sequence 2 uses) is refused: the launch
  // fails naming the sequence, and nothing is written.
  std::vector<int32_t> corrupt = cache.table;
  corrupt[size_t(2) * cache.width + 3] = cache.pages + 100;
  cudaMemcpyAsync(dtable, corrupt.data(), corrupt.size() * 4, cudaMemcpyHostToDevice, stream);
  cudaMemsetAsync(dout, 0, qElems * 2, stream);
  bool refused = flashc_launch(bundle, "decode_step", args, stream) != FLASHC_OK;
  std::printf("a corrupt block table: %s\n", refused ? flashc_last_error() : "accepted (WRONG)");
  cudaMemcpyAsync(out.data(), dout, qElems * 2, cudaMemcpyDeviceToHost, stream);
  cudaStreamSynchronize(stream);
  // The rejected step's output is NaN (bf16: exponent all ones, a mantissa bit set), never mistaken for a result.
  bool poisoned = std::all_of(out.begin(), out.end(), [](uint16_t x) { return (x & 0x7f80) == 0x7f80 && (x & 0x7f); });

  flashc_args_destroy(args);
  flashc_bundle_close(bundle);
  for (void *p : {cache.dk, cache.dv, dq, dout, dlse, dlengths, dtable, dkNew, dvNew}) cudaFree(p);
  cudaStreamDestroy(stream);
  if (!(worst < 2e-2) || !refused || !poisoned) {
    std::printf("FAILED: worst rel. error %.2e (bound 2e-2), corrupt table refused %d, output NaN %d\n", worst,
                refused, poisoned);
    return 1;
  }
  std::printf("PASSED: %d decode steps over a paged cache match float64 (worst rel. error %.2e); a corrupt table "
              "is refused and its output is NaN\n",
              steps, worst);
  return 0;
}
