// The attention backward's preprocess at #16's size (B = 1, H = 16, S = 16k, D = 128, bf16): the device library's
// kernel against ways of moving the same bytes, each checked against the library's result. Session 51's question:
// the preprocess reads O and dO (134 MB) and writes dq_accum's zeros (134 MB) at 3.9 TB/s (69 us on the H200), where a
// device copy of the same bytes runs at 4.27 TB/s; is the gap the kernel's or the memory's?
//   nvcc -O3 -std=c++17 -arch=sm_90a -I runtime/device/include bench/probes/bwd_ends_rate.cu -o /tmp/bwd_ends_rate
//   /tmp/bwd_ends_rate [S=16384] [H=16] [reps=40]
// Prints a line per form: median / min us, GB/s of the bytes it moves, and, for the four preprocess forms, whether
// their delta and zeros match the library's (the library's own row checks the NaN-filled outputs are rewritten).
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "flashc/device/attention_bwd_ends.cuh"

using flashc::TensorArg;
using flashc::device::bf16;

#define CHECK(x)                                                                              \
  do {                                                                                        \
    cudaError_t e = (x);                                                                      \
    if (e != cudaSuccess) {                                                                   \
      std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e)); \
      std::exit(1);                                                                           \
    }                                                                                         \
  } while (0)

constexpr int kD = 128;

// The library's kernel, as the emitter instantiates it.
__global__ void __launch_bounds__(128) pre_library(TensorArg o, TensorArg dout, TensorArg delta, TensorArg dq_accum) {
  flashc::device::attention_bwd_preprocess<bf16, kD, kD>(o, dout, delta, &dq_accum);
}
__global__ void __launch_bounds__(128) pre_delta_only(TensorArg o, TensorArg dout, TensorArg delta, TensorArg) {
  flashc::device::attention_bwd_preprocess<bf16, kD, kD>(o, dout, delta, nullptr);
}

// The forms' delta: each 16-lane group's row (pass p: row (4 p + warp) * 2 + lane / 16) summed from the 8 chunks a
// lane loaded (a: O, b: dO), in the library's order of operations (so the result is bitwise the library's).
__device__ __forceinline__ void store_delta(const uint4 (&a)[8], const uint4 (&b)[8], int rows, int row0,
                                            float* delta_row, long long delta_stride) {
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
#pragma unroll
  for (int p = 0; p < 8; ++p) {
    const int r = (p * 4 + warp) * 2 + lane / 16;
    float s = 0.f;
    if (r < rows) {
      const bf16* x = reinterpret_cast<const bf16*>(&a[p]);
      const bf16* y = reinterpret_cast<const bf16*>(&b[p]);
#pragma unroll
      for (int i = 0; i < 8; ++i) s = fmaf(flashc::device::to_float(x[i]), flashc::device::to_float(y[i]), s);
    }
#pragma unroll
    for (int offset = 8; offset > 0; offset /= 2) s += __shfl_xor_sync(0xffffffffu, s, offset);
    if (r < rows && lane % 16 == 0) delta_row[(row0 + r) * delta_stride] = s;
  }
}

// Form "streaming": the library's arithmetic with evict-first loads (__ldcs: read once) and streaming stores of the
// zeros (__stcs), so that neither O / dO nor the zeros displace lines the other half of the kernel still needs in L2.
__global__ void __launch_bounds__(128) pre_streaming(TensorArg o, TensorArg dout, TensorArg delta, TensorArg dq_accum) {
  const int head = blockIdx.y, row0 = blockIdx.x * 64;
  const int rows = min(64, static_cast<int>(o.shape[2]) - row0);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, chunk = lane % 16;
  const bf16* o_rows = static_cast<const bf16*>(o.data) + head * o.stride[1];
  const bf16* do_rows = static_cast<const bf16*>(dout.data) + head * dout.stride[1];
  float* delta_row = static_cast<float*>(delta.data) + head * delta.stride[1];
  uint4 a[8], b[8];
#pragma unroll
  for (int p = 0; p < 8; ++p) {
    const int r = (p * 4 + warp) * 2 + lane / 16;
    if (r < rows) {
      a[p] = __ldcs(reinterpret_cast<const uint4*>(o_rows + (row0 + r) * o.stride[2] + chunk * 8));
      b[p] = __ldcs(reinterpret_cast<const uint4*>(do_rows + (row0 + r) * dout.stride[2] + chunk * 8));
    }
  }
  float* dq_rows = static_cast<float*>(dq_accum.data) + head * dq_accum.stride[1];
#pragma unroll
  for (int i = threadIdx.x; i < 64 * (kD / 4); i += 128) {
    const int r = i / (kD / 4), c = i % (kD / 4);
    if (r < rows) __stcs(reinterpret_cast<float4*>(dq_rows + (row0 + r) * dq_accum.stride[2] + c * 4), make_float4(0, 0, 0, 0));
  }
  store_delta(a, b, rows, row0, delta_row, delta.stride[2]);
}

// Form "bulk": the library's loads and sums, and the zeros written by two bulk copies from a zeroed 16 KB of shared
// memory (cp.async.bulk: one instruction per 16 KB instead of 16 stores a thread), issued first so that they stream
// out while the loads are in flight.
__global__ void __launch_bounds__(128) pre_bulk(TensorArg o, TensorArg dout, TensorArg delta, TensorArg dq_accum) {
  __shared__ alignas(128) float4 zeros[1024];  // 16 KB: 32 rows of dq_accum at D = 128
  for (int i = threadIdx.x; i < 1024; i += 128) zeros[i] = make_float4(0, 0, 0, 0);
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
  __syncthreads();
  const int head = blockIdx.y, row0 = blockIdx.x * 64;
  const int rows = min(64, static_cast<int>(o.shape[2]) - row0);
  if (threadIdx.x == 0) {
    float* dq_rows = static_cast<float*>(dq_accum.data) + head * dq_accum.stride[1] + row0 * dq_accum.stride[2];
    const unsigned src = static_cast<unsigned>(__cvta_generic_to_shared(zeros));
    for (int half = 0; half < 2; ++half) {
      const int r = min(32, rows - 32 * half);
      if (r <= 0) break;
      asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], %2;" ::"l"(dq_rows + 32 * half * dq_accum.stride[2]),
                   "r"(src), "r"(r * kD * 4)
                   : "memory");
    }
    asm volatile("cp.async.bulk.commit_group;" ::: "memory");
  }
  flashc::device::attention_bwd_preprocess<bf16, kD, kD>(o, dout, delta, nullptr);
  if (threadIdx.x == 0) asm volatile("cp.async.bulk.wait_group.read 0;" ::: "memory");  // smem must outlive the reads
}

// Form "split": the same grid twice over; even blocks sum the rows' delta, odd blocks zero the rows, so that every SM
// holds readers and writers at once.
__global__ void __launch_bounds__(128) pre_split(TensorArg o, TensorArg dout, TensorArg delta, TensorArg dq_accum) {
  const int head = blockIdx.y, block = blockIdx.x / 2, row0 = block * 64;
  const int rows = min(64, static_cast<int>(o.shape[2]) - row0);
  if (blockIdx.x % 2 == 0) {
    // (the library's kernel reads blockIdx.x; this form's reader runs the streaming loads inline)
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, chunk = lane % 16;
    const bf16* o_rows = static_cast<const bf16*>(o.data) + head * o.stride[1];
    const bf16* do_rows = static_cast<const bf16*>(dout.data) + head * dout.stride[1];
    float* delta_row = static_cast<float*>(delta.data) + head * delta.stride[1];
    uint4 a[8], b[8];
#pragma unroll
    for (int p = 0; p < 8; ++p) {
      const int r = (p * 4 + warp) * 2 + lane / 16;
      if (r < rows) {
        a[p] = *reinterpret_cast<const uint4*>(o_rows + (row0 + r) * o.stride[2] + chunk * 8);
        b[p] = *reinterpret_cast<const uint4*>(do_rows + (row0 + r) * dout.stride[2] + chunk * 8);
      }
    }
    store_delta(a, b, rows, row0, delta_row, delta.stride[2]);
    return;
  }
  float* dq_rows = static_cast<float*>(dq_accum.data) + head * dq_accum.stride[1];
#pragma unroll 4
  for (int i = threadIdx.x; i < 64 * (kD / 4); i += 128) {
    const int r = i / (kD / 4), c = i % (kD / 4);
    if (r < rows) *reinterpret_cast<float4*>(dq_rows + (row0 + r) * dq_accum.stride[2] + c * 4) = make_float4(0, 0, 0, 0);
  }
}

// The library's postprocess, for the other end's rate.
__global__ void __launch_bounds__(128) post_library(TensorArg dq_accum, TensorArg dq) {
  flashc::device::attention_bwd_postprocess<bf16, kD>(dq_accum, dq);
}

static void* g_copy_dst;  // the copy's destination (dq_accum's size)
static void* g_dq;        // the postprocess's output

static TensorArg tensor(void* data, int h, int s, int d) {
  TensorArg t;
  std::memset(&t, 0, sizeof t);
  t.data = data;
  t.shape[0] = 1, t.shape[1] = h, t.shape[2] = s, t.shape[3] = d;
  t.stride[3] = 1, t.stride[2] = d, t.stride[1] = static_cast<long long>(s) * d, t.stride[0] = t.stride[1] * h;
  return t;
}

int main(int argc, char** argv) {
  const int S = argc > 1 ? std::atoi(argv[1]) : 16384, H = argc > 2 ? std::atoi(argv[2]) : 16;
  const int reps = argc > 3 ? std::atoi(argv[3]) : 40;
  const size_t elems = static_cast<size_t>(H) * S * kD;
  bf16 *o, *dout, *dq;
  float *delta, *delta_ref, *dq_accum;
  void* copy_dst;
  CHECK(cudaMalloc(&o, elems * 2));
  CHECK(cudaMalloc(&dout, elems * 2));
  CHECK(cudaMalloc(&dq, elems * 2));
  CHECK(cudaMalloc(&dq_accum, elems * 4));
  CHECK(cudaMalloc(&copy_dst, elems * 4));
  CHECK(cudaMalloc(&delta, static_cast<size_t>(H) * S * 4));
  g_copy_dst = copy_dst, g_dq = dq;
  CHECK(cudaMalloc(&delta_ref, static_cast<size_t>(H) * S * 4));
  {
    std::vector<unsigned short> host(elems);
    unsigned x = 12345u;
    for (auto& v : host) {
      x = x * 1664525u + 1013904223u;
      v = static_cast<unsigned short>(0x3c00u + (x >> 22));  // bf16 in [2^-7, 2), varied
    }
    CHECK(cudaMemcpy(o, host.data(), elems * 2, cudaMemcpyHostToDevice));
    for (auto& v : host) v ^= 0x8000u * ((&v - host.data()) & 1);  // dO: mixed signs
    CHECK(cudaMemcpy(dout, host.data(), elems * 2, cudaMemcpyHostToDevice));
  }
  const TensorArg to = tensor(o, H, S, kD), tdo = tensor(dout, H, S, kD), tdq = tensor(dq, H, S, kD);
  const TensorArg tacc = tensor(dq_accum, H, S, kD);
  TensorArg tdelta = tensor(delta, H, S, 1), tref = tensor(delta_ref, H, S, 1);
  tdelta.shape[3] = tref.shape[3] = 1, tdelta.stride[2] = tref.stride[2] = 1;
  tdelta.stride[1] = tref.stride[1] = S;
  const dim3 grid((S + 63) / 64, H, 1), grid2(2 * ((S + 63) / 64), H, 1);
  pre_library<<<grid, 128>>>(to, tdo, tref, tacc);
  CHECK(cudaDeviceSynchronize());

  struct Form {
    const char* name;
    double bytes;
    bool checks;  // writes delta and zeros to compare
    void (*run)(const TensorArg&, const TensorArg&, const TensorArg&, const TensorArg&, dim3, dim3, size_t);
  };
  const double rw = 2.0 * elems * 2 + 4.0 * elems;  // O + dO read, zeros written
  std::vector<Form> forms = {
      {"library", rw, true, [](auto& a, auto& b, auto& c, auto& d, dim3 g, dim3, size_t) { pre_library<<<g, 128>>>(a, b, c, d); }},
      {"streaming", rw, true, [](auto& a, auto& b, auto& c, auto& d, dim3 g, dim3, size_t) { pre_streaming<<<g, 128>>>(a, b, c, d); }},
      {"bulk", rw, true, [](auto& a, auto& b, auto& c, auto& d, dim3 g, dim3, size_t) { pre_bulk<<<g, 128>>>(a, b, c, d); }},
      {"split", rw, true, [](auto& a, auto& b, auto& c, auto& d, dim3, dim3 g2, size_t) { pre_split<<<g2, 128>>>(a, b, c, d); }},
      {"delta only (reads)", 2.0 * elems * 2, false,
       [](auto& a, auto& b, auto& c, auto& d, dim3 g, dim3, size_t) { pre_delta_only<<<g, 128>>>(a, b, c, d); }},
      {"memset of dq_accum (writes)", 4.0 * elems, false,
       [](auto&, auto&, auto&, auto& d, dim3, dim3, size_t n) { cudaMemsetAsync(d.data, 0, n * 4); }},
      // (O and dO copied, not dq_accum: the memset before it leaves up to L2's 50 MB of dq_accum there)
      {"copy of as many bytes (read + write)", rw, false,
       [](auto& a, auto& b, auto&, auto&, dim3, dim3, size_t n) {
         cudaMemcpyAsync(g_copy_dst, a.data, n * 2, cudaMemcpyDeviceToDevice);
         cudaMemcpyAsync(static_cast<char*>(g_copy_dst) + n * 2, b.data, n * 2, cudaMemcpyDeviceToDevice);
       }},
      {"postprocess (library)", 4.0 * elems + 2.0 * elems, false,
       [](auto&, auto&, auto&, auto& d, dim3 g, dim3, size_t) {
         TensorArg t = d;
         t.data = g_dq;
         post_library<<<g, 128>>>(d, t);
       }},
  };
  std::vector<float> ref(static_cast<size_t>(H) * S), got(ref.size());
  std::vector<float> acc(elems);
  CHECK(cudaMemcpy(ref.data(), delta_ref, ref.size() * 4, cudaMemcpyDeviceToHost));
  cudaEvent_t start, stop;
  CHECK(cudaEventCreate(&start));
  CHECK(cudaEventCreate(&stop));
  std::vector<std::vector<float>> times(forms.size());
  for (int rep = 0; rep < reps; ++rep)
    for (size_t f = 0; f < forms.size(); ++f) {  // interleaved: drift and clocks hit every form alike
      CHECK(cudaEventRecord(start));
      forms[f].run(to, tdo, tdelta, tacc, grid, grid2, elems);
      CHECK(cudaEventRecord(stop));
      CHECK(cudaEventSynchronize(stop));
      float ms = 0.f;
      CHECK(cudaEventElapsedTime(&ms, start, stop));
      times[f].push_back(ms * 1000.f);
    }
  CHECK(cudaGetLastError());
  std::printf("S = %d, H = %d, D = %d, bf16, %d reps each (interleaved)\n", S, H, kD, reps);
  std::printf("| form | median us | min us | GB/s (median) | check |\n|---|---|---|---|---|\n");
  int failed = 0;
  for (size_t f = 0; f < forms.size(); ++f) {
    std::vector<float> t = times[f];
    std::sort(t.begin(), t.end());
    const double median = t[t.size() / 2];
    const char* verdict = "-";
    if (forms[f].checks) {
      CHECK(cudaMemset(delta, 0xff, ref.size() * 4));  // NaN: a row it skips shows
      CHECK(cudaMemset(dq_accum, 0xff, elems * 4));
      forms[f].run(to, tdo, tdelta, tacc, grid, grid2, elems);
      CHECK(cudaDeviceSynchronize());
      CHECK(cudaMemcpy(got.data(), delta, got.size() * 4, cudaMemcpyDeviceToHost));
      CHECK(cudaMemcpy(acc.data(), dq_accum, elems * 4, cudaMemcpyDeviceToHost));
      bool ok = true;
      for (size_t i = 0; i < got.size() && ok; ++i) ok = std::fabs(got[i] - ref[i]) <= 1e-5f * (1.f + std::fabs(ref[i]));
      for (size_t i = 0; i < acc.size() && ok; ++i) ok = acc[i] == 0.f;
      verdict = ok ? "pass" : "FAIL";
      failed += !ok;
    }
    std::printf("| %s | %.1f | %.1f | %.0f | %s |\n", forms[f].name, median, t[0], forms[f].bytes / median / 1e3, verdict);
  }
  return failed ? 1 : 0;
}
