// Runs the LLaMA block of examples/llama_block.mlir from a C++ program: the
// bundle is compiled at build time and embedded in this executable
// (flashc_add_bundle(... EMBED)), opened from memory, and its programs run on
// tensors allocated here with the CUDA runtime, on this program's own stream:
// the inference forward llama_block, then a training step: the training
// forward llama_block_forward_train (the same outputs, plus the FFN
// activations gate, up and h it saves for the backward) and the backward
// llama_block_backward, which reads them. Every output is checked against the
// float64 reference (flashc::reference); the time per program is printed.
//
//   usage: embed_llama [--seq S] [--tokens M] [--iters N]
//     attention on [1, 32, S, 128] queries and [1, 8, S, 128] keys/values (causal, GQA),
//     the gated SiLU FFN (d 4096, h 11008) on [1, M, 4096]; default S 200, M 77.
// Exit status: 0 every output within its bound, 1 a mismatch or an error,
// 77 no GPU (prints SKIPPED: ctest's skip code).
#include "llama_block_bundle.h" // the embedded bundle blob: llama_block_bundle[], llama_block_bundle_size

#include <flashc/flashc.hpp>
#include <flashc/reference/attention.h>
#include <flashc/reference/codec.h>
#include <flashc/reference/ffn.h>

#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

namespace ref = flashc::reference;

namespace {

// What the spec computes (examples/llama_block.mlir): the application knows its model.
constexpr int64_t kHeads = 32, kKvHeads = 8, kHeadDim = 128, kModel = 4096, kHidden = 11008;
constexpr double kScale = 0.08838834764831845; // flash.scale on Q: 1/sqrt(128)

void cudaCheck(cudaError_t e, const char *what) {
  if (e == cudaSuccess) return;
  std::fprintf(stderr, "embed_llama: %s: %s\n", what, cudaGetErrorString(e));
  std::exit(1);
}

/// A tensor in device memory the application owns, with its host values as
/// doubles (inputs: exactly the rounded values uploaded; outputs: downloaded).
struct Tensor {
  flashc_dtype dtype = FLASHC_BF16;
  std::vector<int64_t> shape;
  std::vector<double> host;
  void *device = nullptr;

  Tensor(flashc_dtype t, std::vector<int64_t> s) : dtype(t), shape(std::move(s)) {
    cudaCheck(cudaMalloc(&device, bytes()), "cudaMalloc");
  }
  ~Tensor() { cudaFree(device); }
  Tensor(const Tensor &) = delete;
  Tensor &operator=(const Tensor &) = delete;

  size_t count() const {
    size_t n = 1;
    for (int64_t d : shape) n *= size_t(d);
    return n;
  }
  size_t elementBytes() const { return dtype == FLASHC_F32 ? 4 : 2; }
  size_t bytes() const { return count() * elementBytes(); }

  /// Random normal values (rounded to bf16), uploaded on `stream`.
  void fill(std::mt19937 &rng, double sigma, cudaStream_t stream) {
    std::normal_distribution<double> dist(0.0, sigma);
    std::vector<uint16_t> bits(count());
    host.resize(count());
    for (size_t i = 0; i < count(); ++i) {
      bits[i] = ref::bf16FromFloat(float(dist(rng)));
      host[i] = ref::bf16ToFloat(bits[i]);
    }
    cudaCheck(cudaMemcpyAsync(device, bits.data(), bytes(), cudaMemcpyHostToDevice, stream), "upload");
    cudaCheck(cudaStreamSynchronize(stream), "upload");
  }
  /// NaN in every element (all ones): an output the program does not write fails the check.
  void poison(cudaStream_t stream) { cudaCheck(cudaMemsetAsync(device, 0xff, bytes(), stream), "poison"); }
  void download(cudaStream_t stream) {
    std::vector<unsigned char> raw(bytes());
    cudaCheck(cudaMemcpyAsync(raw.data(), device, bytes(), cudaMemcpyDeviceToHost, stream), "download");
    cudaCheck(cudaStreamSynchronize(stream), "download");
    host.resize(count());
    for (size_t i = 0; i < count(); ++i) {
      if (dtype == FLASHC_F32) {
        float f;
        std::memcpy(&f, &raw[i * 4], 4);
        host[i] = f;
      } else {
        uint16_t b;
        std::memcpy(&b, &raw[i * 2], 2);
        host[i] = ref::bf16ToFloat(b);
      }
    }
  }
};

/// ‖got − want‖ / ‖want‖; a non-finite value fails.
bool check(const char *name, const Tensor &got, const std::vector<double> &want, double bound, int &failures) {
  double num = 0, den = 0;
  size_t nonFinite = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    if (std::isinf(want[i]) && got.host[i] == want[i]) continue;
    if (!std::isfinite(got.host[i])) {
      ++nonFinite;
      continue;
    }
    num += (got.host[i] - want[i]) * (got.host[i] - want[i]);
    den += want[i] * want[i];
  }
  double rel = den > 0 ? std::sqrt(num / den) : std::sqrt(num);
  bool ok = nonFinite == 0 && rel <= bound;
  std::printf("  %-6s rel.err %.3e (bound %.0e)", name, rel, bound);
  if (nonFinite) std::printf(" %zu non-finite", nonFinite);
  std::printf("  %s\n", ok ? "ok" : "FAIL");
  if (!ok) ++failures;
  return ok;
}

/// Runs f(begin, end) over [0, n) in chunks on up to `threads` threads.
template <typename F> void parallelRows(int64_t n, unsigned threads, F f) {
  threads = std::max(1u, std::min<unsigned>(threads, unsigned(n)));
  std::vector<std::thread> pool;
  for (unsigned t = 0; t < threads; ++t)
    pool.emplace_back([=] { f(n * t / threads, n * (t + 1) / threads); });
  for (auto &th : pool) th.join();
}

int64_t argValue(int &i, int argc, char **argv) {
  if (i + 1 >= argc) {
    std::fprintf(stderr, "embed_llama: missing value after %s\n", argv[i]);
    std::exit(2);
  }
  char *end = nullptr;
  long long v = std::strtoll(argv[++i], &end, 10);
  if (!end || *end || v <= 0) {
    std::fprintf(stderr, "embed_llama: bad value '%s' for %s (a positive integer)\n", argv[i], argv[i - 1]);
    std::exit(2);
  }
  return v;
}

} // namespace

int main(int argc, char **argv) {
  int64_t S = 200, M = 77, iters = 20;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--seq") S = argValue(i, argc, argv);
    else if (a == "--tokens") M = argValue(i, argc, argv);
    else if (a == "--iters") iters = argValue(i, argc, argv);
    else {
      std::fprintf(stderr, "usage: %s [--seq S] [--tokens M] [--iters N]\n", argv[0]);
      return 2;
    }
  }
  try {
    // The bundle: from this executable's own bytes, validated as a directory would be.
    flashc::Bundle bundle = flashc::Bundle::openMemory(llama_block_bundle, llama_block_bundle_size);
    std::printf("flashc runtime %s; embedded bundle: %zu bytes, programs:", flashc::version(),
                size_t(llama_block_bundle_size));
    for (const std::string &p : bundle.programs()) std::printf(" %s", p.c_str());
    std::printf("\n");
    // The inference forward, the training forward (the forward that also saves the FFN's activations)
    // and the backward (which reads them): flashc emits the training forward for a function with FFNs.
    const char *fwd = "llama_block", *train = "llama_block_forward_train", *bwd = "llama_block_backward";
    for (const char *p : {fwd, train, bwd})
      if (!bundle.hasProgram(p)) {
        std::fprintf(stderr, "embed_llama: the bundle lacks program %s (compiled by an older flashc?)\n", p);
        return 1;
      }
    std::string why;
    if (!flashc::deviceAvailable(&why)) {
      std::printf("SKIPPED: no GPU (%s); the bundle opened from memory, nothing launched\n", why.c_str());
      return 77;
    }
    bundle.prepare(); // load the cubin now, not inside the first timed step

    cudaStream_t stream = nullptr;
    cudaCheck(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate");
    std::mt19937 rng(1);
    const double wSigmaIn = 1.0 / std::sqrt(double(kModel)), wSigmaHidden = 1.0 / std::sqrt(double(kHidden));
    Tensor q(FLASHC_BF16, {1, kHeads, S, kHeadDim}), k(FLASHC_BF16, {1, kKvHeads, S, kHeadDim}),
        v(FLASHC_BF16, {1, kKvHeads, S, kHeadDim}), out(FLASHC_BF16, {1, kHeads, S, kHeadDim}),
        lse(FLASHC_F32, {1, kHeads, S});
    Tensor x(FLASHC_BF16, {1, M, kModel}), wGate(FLASHC_BF16, {kModel, kHidden}), wUp(FLASHC_BF16, {kModel, kHidden}),
        wDown(FLASHC_BF16, {kHidden, kModel}), y(FLASHC_BF16, {1, M, kModel});
    // The inference forward's outputs (the training forward writes out, lse and y above).
    Tensor outInfer(FLASHC_BF16, out.shape), lseInfer(FLASHC_F32, lse.shape), yInfer(FLASHC_BF16, y.shape);
    // The activations the training forward saves for the backward: x's rows by the hidden width
    // (w_gate's columns), in x's element type: gate = x·W_gate, up = x·W_up, h = silu(gate) ⊙ up.
    const std::vector<int64_t> hiddenShape{x.shape[0], x.shape[1], wGate.shape[1]};
    Tensor gate(FLASHC_BF16, hiddenShape), up(FLASHC_BF16, hiddenShape), h(FLASHC_BF16, hiddenShape);
    Tensor dout(FLASHC_BF16, out.shape), dy(FLASHC_BF16, y.shape);
    Tensor dq(FLASHC_BF16, q.shape), dk(FLASHC_BF16, k.shape), dv(FLASHC_BF16, v.shape), dx(FLASHC_BF16, x.shape),
        dwGate(FLASHC_BF16, wGate.shape), dwUp(FLASHC_BF16, wUp.shape), dwDown(FLASHC_BF16, wDown.shape);
    q.fill(rng, 1, stream), k.fill(rng, 1, stream), v.fill(rng, 1, stream), x.fill(rng, 1, stream);
    wGate.fill(rng, wSigmaIn, stream), wUp.fill(rng, wSigmaIn, stream), wDown.fill(rng, wSigmaHidden, stream);
    dout.fill(rng, 1, stream), dy.fill(rng, 1, stream);
    for (Tensor *t : {&out, &lse, &y, &outInfer, &lseInfer, &yInfer, &gate, &up, &h, &dq, &dk, &dv, &dx, &dwGate,
                      &dwUp, &dwDown})
      t->poison(stream);

    // The programs' parameters by name (the spec's w_gate/w_down are the FFN's w1/w2).
    flashc::Args fargs, targs, bargs;
    auto bind = [](flashc::Args &a, const char *name, Tensor &t) { a.tensor(name, t.device, t.dtype, t.shape); };
    // The inputs: every program reads them.
    for (auto [name, t] : {std::pair<const char *, Tensor *>{"q", &q}, {"k", &k}, {"v", &v}, {"x", &x},
                           {"w1", &wGate}, {"w_up", &wUp}, {"w2", &wDown}})
      bind(fargs, name, *t), bind(targs, name, *t), bind(bargs, name, *t);
    for (auto [name, t] : {std::pair<const char *, Tensor *>{"out", &outInfer}, {"lse", &lseInfer}, {"y", &yInfer}})
      bind(fargs, name, *t);
    // The training forward: the forward's parameters, then the saved activations. The backward reads
    // its out, lse, gate, up and h (not y), then the cotangents; unknown names are errors.
    for (auto [name, t] : {std::pair<const char *, Tensor *>{"out", &out}, {"lse", &lse}, {"gate", &gate},
                           {"up", &up}, {"h", &h}})
      bind(targs, name, *t), bind(bargs, name, *t);
    bind(targs, "y", y);
    for (auto [name, t] : {std::pair<const char *, Tensor *>{"dout", &dout}, {"dq", &dq}, {"dk", &dk}, {"dv", &dv},
                           {"dy", &dy}, {"dx", &dx}, {"dw1", &dwGate}, {"dw_up", &dwUp}, {"dw2", &dwDown}})
      bind(bargs, name, *t);

    // One checked step: the inference forward, then a training step: the training forward, then the
    // backward (it reads the training forward's out, lse and saved activations).
    bundle.launch(fwd, fargs, stream);
    bundle.launch(train, targs, stream);
    bundle.launch(bwd, bargs, stream);
    cudaCheck(cudaStreamSynchronize(stream), "the first step");
    for (Tensor *t : {&outInfer, &lseInfer, &yInfer, &out, &lse, &y, &dq, &dk, &dv, &dx, &dwGate, &dwUp, &dwDown})
      t->download(stream);

    // The float64 reference, on the host's cores.
    auto refStart = std::chrono::steady_clock::now();
    unsigned threads = std::max(1u, std::thread::hardware_concurrency());
    ref::AttentionShape as{1, kHeads, kKvHeads, S, S, kHeadDim, kHeadDim};
    ref::AttentionParams ap;
    ap.scale = kScale;
    ap.window = ref::AttentionWindow::causal();
    std::vector<double> wantOut(out.count()), wantLse(lse.count()), wantDq(q.count()), wantDk(k.count()),
        wantDv(v.count());
    std::thread attention([&] {
      ref::attentionForward(as, ap, q.host.data(), k.host.data(), v.host.data(), wantOut.data(), wantLse.data());
      ref::attentionBackward(as, ap, q.host.data(), k.host.data(), v.host.data(), dout.host.data(), wantDq.data(),
                             wantDk.data(), wantDv.data());
    });
    ref::FfnWeights w;
    w.w1 = wGate.host.data(), w.wUp = wUp.host.data(), w.w2 = wDown.host.data();
    std::vector<double> wantY(y.count()), wantDx(x.count());
    parallelRows(M, threads, [&](int64_t r0, int64_t r1) {
      ref::FfnShape s{r1 - r0, kModel, kHidden, kModel};
      ref::ffnForward(s, ref::Activation::Silu, w, &x.host[size_t(r0 * kModel)], &wantY[size_t(r0 * kModel)]);
    });
    // The weight gradients sum over rows: each chunk of rows its own partial sums (bounded memory: 4 chunks).
    const unsigned chunks = std::min(4u, threads);
    std::vector<std::vector<double>> part(chunks * 3);
    parallelRows(chunks, chunks, [&](int64_t c0, int64_t c1) {
      for (int64_t c = c0; c < c1; ++c) {
        int64_t r0 = M * c / chunks, r1 = M * (c + 1) / chunks;
        auto &g1 = part[c * 3], &gu = part[c * 3 + 1], &g2 = part[c * 3 + 2];
        g1.assign(wGate.count(), 0), gu.assign(wUp.count(), 0), g2.assign(wDown.count(), 0);
        ref::FfnGradients g;
        g.dx = &wantDx[size_t(r0 * kModel)], g.dw1 = g1.data(), g.dwUp = gu.data(), g.dw2 = g2.data();
        ref::ffnBackward({r1 - r0, kModel, kHidden, kModel}, ref::Activation::Silu, w, &x.host[size_t(r0 * kModel)],
                         &dy.host[size_t(r0 * kModel)], g);
      }
    });
    std::vector<double> wantDw1(wGate.count(), 0), wantDwUp(wUp.count(), 0), wantDw2(wDown.count(), 0);
    for (unsigned c = 0; c < chunks; ++c)
      for (size_t i = 0; i < wantDw1.size(); ++i)
        wantDw1[i] += part[c * 3][i], wantDwUp[i] += part[c * 3 + 1][i], wantDw2[i] += part[c * 3 + 2][i];
    attention.join();
    double refSeconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - refStart).count();

    int failures = 0;
    std::printf("%s (attention S=%lld, FFN M=%lld) vs the float64 reference (%.1f s on %u threads):\n", fwd,
                (long long)S, (long long)M, refSeconds, threads);
    check("out", outInfer, wantOut, 2e-2, failures), check("lse", lseInfer, wantLse, 1e-3, failures);
    check("y", yInfer, wantY, 2e-2, failures);
    // Its saved gate, up and h are checked through the gradients the backward computes from them.
    std::printf("%s:\n", train);
    check("out", out, wantOut, 2e-2, failures), check("lse", lse, wantLse, 1e-3, failures);
    check("y", y, wantY, 2e-2, failures);
    std::printf("%s:\n", bwd);
    check("dq", dq, wantDq, 2e-2, failures), check("dk", dk, wantDk, 2e-2, failures);
    check("dv", dv, wantDv, 2e-2, failures), check("dx", dx, wantDx, 2e-2, failures);
    check("dw1", dwGate, wantDw1, 2e-2, failures), check("dw_up", dwUp, wantDwUp, 2e-2, failures);
    check("dw2", dwDown, wantDw2, 2e-2, failures);

    // Time per program on this program's stream (after the checked warm-up step): the inference
    // forward, and a training step (training forward + backward).
    cudaEvent_t e0, e1, e2, e3;
    for (cudaEvent_t *e : {&e0, &e1, &e2, &e3}) cudaCheck(cudaEventCreate(e), "cudaEventCreate");
    float fwdMs = 0, trainMs = 0, bwdMs = 0;
    for (int64_t i = 0; i < iters; ++i) {
      cudaEventRecord(e0, stream);
      bundle.launch(fwd, fargs, stream);
      cudaEventRecord(e1, stream);
      bundle.launch(train, targs, stream);
      cudaEventRecord(e2, stream);
      bundle.launch(bwd, bargs, stream);
      cudaEventRecord(e3, stream);
      cudaCheck(cudaEventSynchronize(e3), "a timed step");
      float a = 0, b = 0, c = 0;
      cudaEventElapsedTime(&a, e0, e1), cudaEventElapsedTime(&b, e1, e2), cudaEventElapsedTime(&c, e2, e3);
      fwdMs += a, trainMs += b, bwdMs += c;
    }
    std::printf("time (mean of %lld): forward %.3f ms; training step %.3f ms (training forward %.3f ms, "
                "backward %.3f ms)\n",
                (long long)iters, fwdMs / iters, (trainMs + bwdMs) / iters, trainMs / iters, bwdMs / iters);
    for (cudaEvent_t e : {e0, e1, e2, e3}) cudaEventDestroy(e);
    cudaStreamDestroy(stream);
    if (failures) {
      std::printf("FAILED: %d outputs differ from the float64 reference\n", failures);
      return 1;
    }
    std::printf("PASSED: forward, training forward and backward match the float64 reference\n");
    return 0;
  } catch (const flashc::Error &e) {
    std::fprintf(stderr, "embed_llama: %s\n", e.what());
    return 1;
  }
}
