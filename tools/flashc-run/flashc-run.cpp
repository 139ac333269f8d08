//===- flashc-run.cpp - run a bundle's programs on the GPU and check them -===//
//
//   flashc-run BUNDLE_DIR [--batch N] [--seq-q N] [--seq-k N] [--tokens N] [--seed N]
//
// For every program of the bundle whose manifest says what it computes
// (`meta op ...`: attention_forward, attention_backward, ffn_forward), fills
// the inputs with random values, poisons the outputs, launches the program
// through the flashc runtime and compares every output element with a
// float64 reference computed here on the CPU. Prints one line per output and
// exits non-zero when any error is above its bound. With no GPU it says so
// and exits 0 (nothing to run). Runtime-only: builds without MLIR.
//
//===----------------------------------------------------------------------===//

#include "flashc/runtime/Runtime.h"

#include <cuda_runtime.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <algorithm>
#include <cstring>
#include <map>
#include <random>
#include <string>
#include <vector>

using namespace flashc::rt;

namespace {

struct Options {
  std::string bundle;
  int64_t batch = 2, seqQ = 257, seqK = 257, tokens = 300;
  unsigned seed = 1;
};

[[noreturn]] void usage(const char *msg) {
  std::fprintf(stderr,
               "flashc-run: %s\nusage: flashc-run BUNDLE_DIR [--batch N] [--seq-q N] [--seq-k N] "
               "[--tokens N] [--seed N]\n",
               msg);
  std::exit(2);
}

Options parseOptions(int argc, char **argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto number = [&](int64_t &dst) {
      if (i + 1 >= argc)
        usage(("missing value after " + a).c_str());
      char *end = nullptr;
      long long v = std::strtoll(argv[++i], &end, 10);
      if (!end || *end || v < 0)
        usage(("bad value for " + a + ": '" + argv[i] + "'").c_str());
      dst = v;
    };
    if (a == "--batch") number(o.batch);
    else if (a == "--seq-q") number(o.seqQ);
    else if (a == "--seq-k") number(o.seqK);
    else if (a == "--tokens") number(o.tokens);
    else if (a == "--seed") { int64_t s; number(s); o.seed = unsigned(s); }
    else if (a == "--help" || a == "-h") usage("help");
    else if (!a.empty() && a[0] == '-') usage(("unknown option " + a).c_str());
    else if (o.bundle.empty()) o.bundle = a;
    else usage("more than one bundle given");
  }
  if (o.bundle.empty())
    usage("no bundle directory given");
  return o;
}

// ---- 16-bit floats on the host ----
uint16_t toBits(double x, DType t) {
  float f = float(x);
  uint32_t u;
  std::memcpy(&u, &f, 4);
  if (t == DType::BF16) {
    if ((u & 0x7fffffff) > 0x7f800000) return 0x7fc0;
    u += 0x7fff + ((u >> 16) & 1); // round to nearest even
    return uint16_t(u >> 16);
  }
  // f16: round to nearest even through the bit pattern.
  uint32_t sign = (u >> 16) & 0x8000;
  int32_t exp = int32_t((u >> 23) & 0xff) - 127 + 15;
  uint32_t mant = u & 0x7fffff;
  if (exp <= 0) {
    if (exp < -10) return uint16_t(sign);
    mant |= 0x800000;
    int shift = 14 - exp;
    uint32_t half = mant >> shift, rem = mant & ((1u << shift) - 1), mid = 1u << (shift - 1);
    if (rem > mid || (rem == mid && (half & 1))) ++half;
    return uint16_t(sign | half);
  }
  if (exp >= 31) return uint16_t(sign | 0x7c00);
  uint32_t half = (uint32_t(exp) << 10) | (mant >> 13), rem = mant & 0x1fff;
  if (rem > 0x1000 || (rem == 0x1000 && (half & 1))) ++half;
  return uint16_t(sign | half);
}

double fromBits(uint16_t b, DType t) {
  if (t == DType::BF16) {
    uint32_t u = uint32_t(b) << 16;
    float f;
    std::memcpy(&f, &u, 4);
    return f;
  }
  uint32_t sign = (b & 0x8000u) << 16, exp = (b >> 10) & 0x1f, mant = b & 0x3ff;
  if (exp == 0) return (sign ? -1.0 : 1.0) * std::ldexp(double(mant), -24);
  if (exp == 31) return mant ? NAN : (sign ? -INFINITY : INFINITY);
  uint32_t u = sign | ((exp - 15 + 127) << 23) | (mant << 13);
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

/// A tensor on host (as doubles, already rounded to its dtype) and device.
struct Buffer {
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  std::vector<double> host;
  void *device = nullptr;
  int64_t count() const {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    return n;
  }
  size_t bytes() const { return size_t(count()) * size_t(dtypeSize(dtype)); }
};

bool cudaOk(cudaError_t e, const char *what) {
  if (e == cudaSuccess) return true;
  std::fprintf(stderr, "flashc-run: %s: %s\n", what, cudaGetErrorString(e));
  return false;
}

bool upload(Buffer &b) {
  if (!b.device && !cudaOk(cudaMalloc(&b.device, std::max<size_t>(b.bytes(), 16)), "cudaMalloc"))
    return false;
  std::vector<uint8_t> raw(b.bytes());
  for (int64_t i = 0; i < b.count(); ++i) {
    if (b.dtype == DType::F32) {
      float f = float(b.host[i]);
      std::memcpy(&raw[i * 4], &f, 4);
    } else {
      uint16_t h = toBits(b.host[i], b.dtype);
      std::memcpy(&raw[i * 2], &h, 2);
    }
  }
  return cudaOk(cudaMemcpy(b.device, raw.data(), raw.size(), cudaMemcpyHostToDevice), "upload");
}

bool poison(Buffer &b) {
  if (!b.device && !cudaOk(cudaMalloc(&b.device, std::max<size_t>(b.bytes(), 16)), "cudaMalloc"))
    return false;
  return cudaOk(cudaMemset(b.device, 0xff, b.bytes()), "poison"); // NaN in every dtype
}

bool download(Buffer &b) {
  std::vector<uint8_t> raw(b.bytes());
  if (!cudaOk(cudaMemcpy(raw.data(), b.device, raw.size(), cudaMemcpyDeviceToHost), "download"))
    return false;
  b.host.assign(b.count(), 0);
  for (int64_t i = 0; i < b.count(); ++i) {
    if (b.dtype == DType::F32) {
      float f;
      std::memcpy(&f, &raw[i * 4], 4);
      b.host[i] = f;
    } else {
      uint16_t h;
      std::memcpy(&h, &raw[i * 2], 2);
      b.host[i] = fromBits(h, b.dtype);
    }
  }
  return true;
}

void randomFill(Buffer &b, std::mt19937 &rng, double scale = 1.0) {
  std::normal_distribution<double> dist(0.0, scale);
  b.host.resize(b.count());
  for (double &x : b.host)
    x = b.dtype == DType::F32 ? double(float(dist(rng))) : fromBits(toBits(dist(rng), b.dtype), b.dtype);
}

/// ‖out − ref‖ / ‖ref‖ over finite references; NaN in the output fails.
struct Compare {
  double relError = 0;
  int64_t nonFinite = 0;
};
Compare compare(const std::vector<double> &out, const std::vector<double> &ref) {
  double num = 0, den = 0;
  Compare c;
  for (size_t i = 0; i < ref.size(); ++i) {
    if (std::isinf(ref[i]) && out[i] == ref[i]) continue;
    if (!std::isfinite(out[i])) { ++c.nonFinite; continue; }
    num += (out[i] - ref[i]) * (out[i] - ref[i]);
    den += ref[i] * ref[i];
  }
  c.relError = den > 0 ? std::sqrt(num / den) : std::sqrt(num);
  return c;
}

// ---- attention reference (float64, materialised softmax) ----
struct AttentionMeta {
  double scale = 1, softcap = 0;
  int64_t windowLeft = -1, windowRight = -1;
};

bool visible(int64_t i, int64_t j, int64_t sq, int64_t sk, const AttentionMeta &m) {
  int64_t p = i + sk - sq;
  if (m.windowLeft >= 0 && j < p - m.windowLeft) return false;
  if (m.windowRight >= 0 && j > p + m.windowRight) return false;
  return true;
}

struct AttentionShapes {
  int64_t B, Hq, Hkv, Sq, Sk, D, Dv;
};

/// Forward (o, lse) and, when dO is given, gradients (dq, dk, dv).
void attentionReference(const AttentionShapes &s, const AttentionMeta &m, const Buffer &q,
                        const Buffer &k, const Buffer &v, std::vector<double> &o,
                        std::vector<double> &lse, const Buffer *dO, std::vector<double> *dq,
                        std::vector<double> *dk, std::vector<double> *dv) {
  int64_t group = s.Hq / s.Hkv;
  o.assign(s.B * s.Hq * s.Sq * s.Dv, 0);
  lse.assign(s.B * s.Hq * s.Sq, 0);
  if (dO) {
    dq->assign(q.count(), 0);
    dk->assign(k.count(), 0);
    dv->assign(v.count(), 0);
  }
  std::vector<double> sc(s.Sk), p(s.Sk), dp(s.Sk), capGrad(s.Sk);
  for (int64_t b = 0; b < s.B; ++b)
    for (int64_t h = 0; h < s.Hq; ++h) {
      int64_t hk = h / group;
      const double *Q = &q.host[((b * s.Hq + h) * s.Sq) * s.D];
      const double *K = &k.host[((b * s.Hkv + hk) * s.Sk) * s.D];
      const double *V = &v.host[((b * s.Hkv + hk) * s.Sk) * s.Dv];
      for (int64_t i = 0; i < s.Sq; ++i) {
        double mx = -INFINITY;
        for (int64_t j = 0; j < s.Sk; ++j) {
          double dot = 0;
          for (int64_t d = 0; d < s.D; ++d) dot += Q[i * s.D + d] * K[j * s.D + d];
          double x = dot * m.scale;
          capGrad[j] = 1;
          if (m.softcap > 0) {
            double t = std::tanh(x / m.softcap);
            x = m.softcap * t;
            capGrad[j] = 1 - t * t;
          }
          sc[j] = visible(i, j, s.Sq, s.Sk, m) ? x : -INFINITY;
          mx = std::max(mx, sc[j]);
        }
        int64_t row = (b * s.Hq + h) * s.Sq + i;
        if (mx == -INFINITY) { // no visible key: o = 0, lse = -inf
          lse[row] = -INFINITY;
          continue;
        }
        double sum = 0;
        for (int64_t j = 0; j < s.Sk; ++j) sum += (p[j] = std::exp(sc[j] - mx));
        lse[row] = mx + std::log(sum);
        double *O = &o[row * s.Dv];
        for (int64_t j = 0; j < s.Sk; ++j) {
          p[j] /= sum;
          for (int64_t d = 0; d < s.Dv; ++d) O[d] += p[j] * V[j * s.Dv + d];
        }
        if (!dO) continue;
        const double *dOr = &dO->host[row * s.Dv];
        double delta = 0;
        for (int64_t d = 0; d < s.Dv; ++d) delta += dOr[d] * O[d];
        for (int64_t j = 0; j < s.Sk; ++j) {
          double g = 0;
          for (int64_t d = 0; d < s.Dv; ++d) g += dOr[d] * V[j * s.Dv + d];
          // dS (w.r.t. the pre-softmax score, through softcap, times scale)
          double ds = p[j] * (g - delta) * capGrad[j] * m.scale;
          double *dKr = &(*dk)[((b * s.Hkv + hk) * s.Sk + j) * s.D];
          double *dVr = &(*dv)[((b * s.Hkv + hk) * s.Sk + j) * s.Dv];
          double *dQr = &(*dq)[row * s.D];
          for (int64_t d = 0; d < s.Dv; ++d) dVr[d] += p[j] * dOr[d];
          for (int64_t d = 0; d < s.D; ++d) {
            dQr[d] += ds * K[j * s.D + d];
            dKr[d] += ds * Q[i * s.D + d];
          }
        }
      }
    }
}

double activation(const std::string &kind, double x) {
  if (kind == "gelu_tanh")
    return 0.5 * x * (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
  if (kind == "gelu_erf") return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0)));
  if (kind == "silu") return x / (1 + std::exp(-x));
  if (kind == "relu") return x > 0 ? x : 0;
  return x;
}

struct Runner {
  Options opt;
  std::shared_ptr<Bundle> bundle;
  std::mt19937 rng;
  int failures = 0, checks = 0;

  std::string meta(const ProgramSpec &p, const std::string &key, const std::string &dflt = "") {
    auto it = p.meta.find(key);
    return it == p.meta.end() ? dflt : it->second;
  }

  /// Allocates a tensor parameter with its literal dims and the chosen symbol values.
  Buffer makeParam(const std::string &program, const std::string &name,
                   const std::map<std::string, int64_t> &symbols) {
    Buffer b;
    for (const KernelSpec &k : bundle->manifest().kernels) {
      const TensorParam *t = k.findTensor(name);
      if (!t) continue;
      const ProgramSpec *p = bundle->findProgram(program);
      if (p && std::find(p->kernels.begin(), p->kernels.end(), k.name) == p->kernels.end())
        continue;
      b.dtype = t->dtype;
      for (const Dim &d : t->dims)
        b.shape.push_back(d.isSymbol() ? symbols.at(d.symbol) : d.value);
      return b;
    }
    std::fprintf(stderr, "flashc-run: program %s has no parameter '%s'\n", program.c_str(),
                 name.c_str());
    std::exit(1);
  }

  void bind(Arguments &args, const std::string &name, Buffer &b) {
    Status s = args.setTensor(name, b.device, b.dtype, int(b.shape.size()), b.shape.data());
    if (!s.ok()) {
      std::fprintf(stderr, "flashc-run: %s\n", s.error().message.c_str());
      std::exit(1);
    }
  }

  bool launch(const std::string &program, Arguments &args) {
    Status s = bundle->launch(program, args, nullptr);
    if (!s.ok()) {
      std::fprintf(stderr, "flashc-run: launching %s: %s\n", program.c_str(), s.error().message.c_str());
      ++failures;
      return false;
    }
    if (!cudaOk(cudaDeviceSynchronize(), ("running " + program).c_str())) {
      ++failures;
      return false;
    }
    return true;
  }

  void report(const std::string &program, const std::string &what, const Compare &c, double bound) {
    ++checks;
    bool ok = c.nonFinite == 0 && c.relError <= bound;
    if (!ok) ++failures;
    std::printf("  %-28s %-6s rel.err %.3e (bound %.0e)%s  %s\n", program.c_str(), what.c_str(),
                c.relError, bound,
                c.nonFinite ? (" " + std::to_string(c.nonFinite) + " non-finite").c_str() : "",
                ok ? "ok" : "FAIL");
  }

  double boundFor(DType t) { return t == DType::F32 ? 1e-5 : (t == DType::F16 ? 5e-3 : 2e-2); }

  void runAttention(const ProgramSpec &fwd, const ProgramSpec *bwd) {
    AttentionMeta m;
    m.scale = std::atof(meta(fwd, "scale", "1").c_str());
    m.softcap = std::atof(meta(fwd, "softcap", "0").c_str());
    m.windowLeft = std::atoll(meta(fwd, "window_left", "-1").c_str());
    m.windowRight = std::atoll(meta(fwd, "window_right", "-1").c_str());
    std::map<std::string, int64_t> sym{{"B", opt.batch}, {"Sq", opt.seqQ}, {"Sk", opt.seqK}};
    Buffer q = makeParam(fwd.name, "q", sym), k = makeParam(fwd.name, "k", sym),
           v = makeParam(fwd.name, "v", sym), o = makeParam(fwd.name, "out", sym),
           lse = makeParam(fwd.name, "lse", sym);
    AttentionShapes s{q.shape[0], q.shape[1], k.shape[1], q.shape[2], k.shape[2], q.shape[3], v.shape[3]};
    std::printf("%s: B=%lld Hq=%lld Hkv=%lld Sq=%lld Sk=%lld D=%lld scale=%g window=[%lld,%lld] softcap=%g\n",
                fwd.name.c_str(), (long long)s.B, (long long)s.Hq, (long long)s.Hkv, (long long)s.Sq,
                (long long)s.Sk, (long long)s.D, m.scale, (long long)m.windowLeft,
                (long long)m.windowRight, m.softcap);
    randomFill(q, rng);
    randomFill(k, rng);
    randomFill(v, rng);
    if (!upload(q) || !upload(k) || !upload(v) || !poison(o) || !poison(lse)) { ++failures; return; }
    Arguments args;
    bind(args, "q", q), bind(args, "k", k), bind(args, "v", v), bind(args, "out", o), bind(args, "lse", lse);
    if (!launch(fwd.name, args) || !download(o) || !download(lse)) return;
    Buffer dO;
    std::vector<double> refO, refLse, refDq, refDk, refDv;
    if (bwd) {
      dO = makeParam(bwd->name, "dout", sym);
      randomFill(dO, rng);
    }
    attentionReference(s, m, q, k, v, refO, refLse, bwd ? &dO : nullptr, &refDq, &refDk, &refDv);
    report(fwd.name, "o", compare(o.host, refO), boundFor(o.dtype));
    report(fwd.name, "lse", compare(lse.host, refLse), 1e-3);
    if (!bwd) return;
    Buffer dq = makeParam(bwd->name, "dq", sym), dk = makeParam(bwd->name, "dk", sym),
           dv = makeParam(bwd->name, "dv", sym);
    if (!upload(dO) || !poison(dq) || !poison(dk) || !poison(dv)) { ++failures; return; }
    Arguments bargs;
    bind(bargs, "q", q), bind(bargs, "k", k), bind(bargs, "v", v), bind(bargs, "out", o);
    bind(bargs, "lse", lse), bind(bargs, "dout", dO), bind(bargs, "dq", dq), bind(bargs, "dk", dk);
    bind(bargs, "dv", dv);
    if (!launch(bwd->name, bargs) || !download(dq) || !download(dk) || !download(dv)) return;
    report(bwd->name, "dq", compare(dq.host, refDq), boundFor(dq.dtype));
    report(bwd->name, "dk", compare(dk.host, refDk), boundFor(dk.dtype));
    report(bwd->name, "dv", compare(dv.host, refDv), boundFor(dv.dtype));
  }

  void runFfn(const ProgramSpec &fwd) {
    std::string act = meta(fwd, "activation", "identity");
    bool gated = meta(fwd, "gated", "0") == "1";
    std::map<std::string, int64_t> sym{{"B", opt.batch}, {"M", opt.tokens}, {"S", opt.tokens}};
    // Which parameters exist decides bias / gating.
    auto has = [&](const std::string &n) {
      for (const std::string &kn : fwd.kernels)
        if (bundle->findKernel(kn)->findTensor(n)) return true;
      return false;
    };
    Buffer x = makeParam(fwd.name, "x", sym), y = makeParam(fwd.name, "y", sym);
    Buffer w1 = makeParam(fwd.name, gated ? "w_gate" : "w1", sym), w2 = makeParam(fwd.name, "w2", sym);
    Buffer wu, b1, b2;
    int64_t d = w1.shape[0], h = w1.shape[1], dout = w2.shape[1];
    int64_t rows = x.count() / d;
    std::printf("%s: rows=%lld d=%lld h=%lld activation=%s%s\n", fwd.name.c_str(), (long long)rows,
                (long long)d, (long long)h, act.c_str(), gated ? " gated" : "");
    randomFill(x, rng);
    randomFill(w1, rng, 1.0 / std::sqrt(double(d)));
    randomFill(w2, rng, 1.0 / std::sqrt(double(h)));
    Arguments args;
    if (!upload(x) || !upload(w1) || !upload(w2) || !poison(y)) { ++failures; return; }
    bind(args, "x", x), bind(args, gated ? "w_gate" : "w1", w1), bind(args, "w2", w2), bind(args, "y", y);
    if (gated) {
      wu = makeParam(fwd.name, "w_up", sym);
      randomFill(wu, rng, 1.0 / std::sqrt(double(d)));
      if (!upload(wu)) { ++failures; return; }
      bind(args, "w_up", wu);
    }
    if (has("b1")) {
      b1 = makeParam(fwd.name, "b1", sym);
      randomFill(b1, rng, 0.1);
      if (!upload(b1)) { ++failures; return; }
      bind(args, "b1", b1);
    }
    if (has("b2")) {
      b2 = makeParam(fwd.name, "b2", sym);
      randomFill(b2, rng, 0.1);
      if (!upload(b2)) { ++failures; return; }
      bind(args, "b2", b2);
    }
    if (!launch(fwd.name, args) || !download(y)) return;
    // Reference: the hidden activation is rounded to the kernel's dtype, as an
    // unfused computation in that precision would store it.
    std::vector<double> ref(rows * dout, 0), hid(h);
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t j = 0; j < h; ++j) {
        double a = 0, u = 0;
        for (int64_t i = 0; i < d; ++i) {
          a += x.host[r * d + i] * w1.host[i * h + j];
          if (gated) u += x.host[r * d + i] * wu.host[i * h + j];
        }
        if (!b1.host.empty()) a += b1.host[j];
        hid[j] = gated ? activation(act, a) * u : activation(act, a);
      }
      for (int64_t c = 0; c < dout; ++c) {
        double acc = b2.host.empty() ? 0 : b2.host[c];
        for (int64_t j = 0; j < h; ++j) acc += hid[j] * w2.host[j * dout + c];
        ref[r * dout + c] = acc;
      }
    }
    report(fwd.name, "y", compare(y.host, ref), boundFor(y.dtype));
  }

  int run() {
    auto opened = Bundle::open(opt.bundle);
    if (!opened.ok()) {
      std::fprintf(stderr, "flashc-run: %s\n", opened.error().message.c_str());
      return 1;
    }
    bundle = *opened;
    Status dev = checkDevice();
    if (!dev.ok()) {
      std::printf("flashc-run: SKIPPED running %s: %s\n", opt.bundle.c_str(), dev.error().message.c_str());
      return 0;
    }
    auto code = bundle->prepare();
    if (!code.ok()) {
      std::fprintf(stderr, "flashc-run: %s\n", code.error().message.c_str());
      return 1;
    }
    std::printf("%s: code %s (%s)\n", opt.bundle.c_str(), code->arch.c_str(),
                code->fromCubin ? "shipped cubin" : (code->fromDiskCache ? "disk cache" : "NVRTC"));
    for (const ProgramSpec &p : bundle->manifest().programs) {
      std::string op = meta(p, "op");
      if (op == "attention_forward") {
        const ProgramSpec *bwd = nullptr;
        std::string pair = meta(p, "backward");
        if (!pair.empty()) bwd = bundle->findProgram(pair);
        runAttention(p, bwd);
      } else if (op == "ffn_forward") {
        runFfn(p);
      }
    }
    std::printf("%d checks, %d failed\n", checks, failures);
    return failures ? 1 : 0;
  }
};

} // namespace

int main(int argc, char **argv) {
  Runner r;
  r.opt = parseOptions(argc, argv);
  r.rng.seed(r.opt.seed);
  return r.run();
}
