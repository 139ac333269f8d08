//===- flashc-run.cpp - run a bundle's programs on the GPU and check them -===//
//
//   flashc-run BUNDLE_DIR [--batch N] [--seq-q N] [--seq-k N] [--tokens N] [--seed N] [--poison-scratch]
//
// For every forward program of the bundle whose manifest says what it computes
// (`meta op ...`: attention_forward, ffn_forward, block = both), fills the
// inputs with random values, poisons the outputs, launches the program through
// the flashc runtime and compares every output element with a float64
// reference computed here on the CPU; then the same for its backward program
// (`meta backward`, else <forward>_backward) with a random output gradient.
// A forward with a training form (`meta forward_train`: a function with FFNs
// has one, `meta train_of` naming the forward) runs that next, on the same
// inputs: its outputs and the activations it saves (pre and h; gated: gate, up
// and h) are checked too, and the backward reads those saved tensors. The
// training forward is not checked on its own. A mixture of experts (`meta op moe`) runs the same way: its forward,
// its training forward (its y; what it saves only through the backward that reads it) and its backward. Prints one line per output and
// exits non-zero when any error is above its bound. With no GPU it says so
// and exits 0 (nothing to run). --poison-scratch: each program's scratch comes
// from a workspace filled with 0xff bytes (NaN in every float type) instead of
// the runtime's pool, so a kernel that reads scratch nobody wrote (a missing
// zero fill) shows as a failed check.
// Runtime-only: builds without MLIR.
//
//===----------------------------------------------------------------------===//

#include "flashc/reference/activations.h"
#include "flashc/reference/attention.h"
#include "flashc/reference/decode.h"
#include "flashc/reference/varlen.h"
#include "flashc/reference/codec.h"
#include "flashc/reference/ffn.h"
#include "flashc/reference/moe.h"
#include "flashc/reference/index_program.h"
#include "flashc/reference/score_program.h"
#include "flashc/runtime/Runtime.h"

#include <cuda_runtime.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <algorithm>
#include <cstring>
#include <map>
#include <numeric>
#include <optional>
#include <random>
#include <string>
#include <vector>

using namespace flashc::rt;
namespace ref = flashc::reference;

namespace {

struct Options {
  std::string bundle;
  int64_t batch = 2, seqQ = 257, seqK = 257, tokens = 300;
  // Programs with a run-time key offset: this value, or (unset) one drawn per
  // program from [-Sq - 8, Sk + 8] (every alignment, some beyond either end).
  std::optional<int64_t> keyOffset;
  unsigned seed = 1;
  bool requireGpu = false; // no GPU: exit 77 (ctest's "skipped") instead of 0
  bool poisonScratch = false; // scratch from a workspace of 0xff bytes, not the runtime's pool
};

[[noreturn]] void usage(const char *msg) {
  std::fprintf(stderr,
               "flashc-run: %s\nusage: flashc-run BUNDLE_DIR [--batch N] [--seq-q N] [--seq-k N] "
               "[--tokens N] [--key-offset N] [--seed N] [--require-gpu] [--poison-scratch]\n",
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
      errno = 0;
      long long v = std::strtoll(argv[++i], &end, 10);
      if (!end || *end || !*argv[i] || errno == ERANGE || v < 0)  // (ERANGE: strtoll clamped it to LLONG_MAX)
        usage(("bad value for " + a + ": '" + argv[i] + "'").c_str());
      dst = v;
    };
    if (a == "--batch") number(o.batch);
    else if (a == "--seq-q") number(o.seqQ);
    else if (a == "--seq-k") number(o.seqK);
    else if (a == "--tokens") number(o.tokens);
    else if (a == "--key-offset") {
      if (i + 1 >= argc) usage("missing value after --key-offset");
      char *end = nullptr;
      errno = 0;
      long long v = std::strtoll(argv[++i], &end, 10);
      if (!end || *end || !*argv[i] || errno == ERANGE || v < INT32_MIN || v > INT32_MAX)
        usage((std::string("bad value for --key-offset (an int32): '") + argv[i] + "'").c_str());
      o.keyOffset = v;
    }
    else if (a == "--seed") { int64_t s; number(s); o.seed = unsigned(s); }
    else if (a == "--require-gpu") o.requireGpu = true;
    else if (a == "--poison-scratch") o.poisonScratch = true;
    else if (a == "--help" || a == "-h") usage("help");
    else if (!a.empty() && a[0] == '-') usage(("unknown option " + a).c_str());
    else if (o.bundle.empty()) o.bundle = a;
    else usage("more than one bundle given");
  }
  if (o.bundle.empty())
    usage("no bundle directory given");
  return o;
}

// ---- 16-bit floats on the host (the shared reference codec) ----
// A double goes to float first, then to 16 bits: two roundings, as the
// inputs were always made (random values are drawn as double).
uint16_t toBits(double x, DType t) {
  return t == DType::BF16 ? ref::bf16FromFloat(float(x)) : ref::f16FromFloat(float(x));
}

double fromBits(uint16_t b, DType t) { return t == DType::BF16 ? ref::bf16ToFloat(b) : ref::f16ToFloat(b); }

/// A tensor on host (as doubles, already rounded to its dtype) and device.
/// On the device its rows are padded to the kernels' row stride multiple (16
/// bytes for tiled copies: a width such as 1001 bf16 gets rows of 1008; other
/// tensors stay dense), and the padding holds NaN bytes: a kernel that read it
/// would spread NaN, one that wrote it is caught by download().
struct Buffer {
  std::string name;
  int64_t rowMultiple = 1; // TensorParam::strideMultiple
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  std::vector<double> host;
  void *device = nullptr;
  int64_t count() const {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    return n;
  }
  int64_t width() const { return shape.empty() ? 1 : shape.back(); }
  /// Elements between rows on the device (rank >= 2; a vector is one row).
  int64_t rowStride() const {
    int64_t w = width();
    return shape.size() >= 2 ? (w + rowMultiple - 1) / rowMultiple * rowMultiple : w;
  }
  int64_t rows() const { return width() > 0 ? count() / width() : 0; }
  size_t bytes() const { return size_t(rows() * rowStride()) * size_t(dtypeSize(dtype)); }
  std::vector<int64_t> strides() const {
    std::vector<int64_t> st(shape.size(), 1);
    int64_t s = 1;
    for (int i = int(shape.size()) - 1; i >= 0; --i) {
      st[i] = s;
      s *= i == int(shape.size()) - 1 ? rowStride() : std::max<int64_t>(shape[i], 1);
    }
    return st;
  }
  /// Byte offset on the device of host element i.
  size_t offset(int64_t i) const {
    return size_t((i / width()) * rowStride() + i % width()) * size_t(dtypeSize(dtype));
  }
};

bool cudaOk(cudaError_t e, const char *what) {
  if (e == cudaSuccess) return true;
  std::fprintf(stderr, "flashc-run: %s: %s\n", what, cudaGetErrorString(e));
  return false;
}

bool upload(Buffer &b) {
  if (!b.device && !cudaOk(cudaMalloc(&b.device, std::max<size_t>(b.bytes(), 16)), "cudaMalloc"))
    return false;
  std::vector<uint8_t> raw(b.bytes(), 0xff); // row padding: NaN in every dtype
  for (int64_t i = 0; i < b.count(); ++i) {
    if (b.dtype == DType::F32) {
      float f = float(b.host[i]);
      std::memcpy(&raw[b.offset(i)], &f, 4);
    } else if (b.dtype == DType::I32) {
      int32_t v = int32_t(b.host[i]);
      std::memcpy(&raw[b.offset(i)], &v, 4);
    } else {
      uint16_t h = toBits(b.host[i], b.dtype);
      std::memcpy(&raw[b.offset(i)], &h, 2);
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
      std::memcpy(&f, &raw[b.offset(i)], 4);
      b.host[i] = f;
    } else {
      uint16_t h;
      std::memcpy(&h, &raw[b.offset(i)], 2);
      b.host[i] = fromBits(h, b.dtype);
    }
  }
  // The rows' padding must still hold the poison: nothing is written past the width.
  size_t esize = size_t(dtypeSize(b.dtype)), rowBytes = size_t(b.rowStride()) * esize,
         widthBytes = size_t(b.width()) * esize;
  int64_t written = 0;
  for (int64_t r = 0; r < b.rows(); ++r)
    for (size_t k = widthBytes; k < rowBytes; ++k)
      written += raw[size_t(r) * rowBytes + k] != 0xff;
  if (written) {
    std::fprintf(stderr, "flashc-run: FAIL: output '%s' [width %lld, rows %lld apart]: %lld bytes written past its width\n",
                 b.name.c_str(), (long long)b.width(), (long long)b.rowStride(), (long long)written);
    return false;
  }
  return true;
}

/// Zeroes `b` on the device, then (after a launch) whether every element is NaN: what a program that rejected its
/// tables leaves in its outputs.
bool zero(Buffer &b) { return cudaOk(cudaMemset(b.device, 0, b.bytes()), "zeroing"); }
bool allNaN(Buffer &b) {
  return download(b) && std::all_of(b.host.begin(), b.host.end(), [](double x) { return std::isnan(x); });
}

/// A mask modifier's i32 tensor (document ids, say): non-decreasing runs of 1-600 equal values in
/// [0, 8), so that its blocks are hidden, shown and partial alike.
void randomIds(Buffer &b, std::mt19937 &rng) {
  b.host.resize(b.count());
  std::uniform_int_distribution<int> run(1, 600);
  int id = 0, left = run(rng);
  for (double &x : b.host) {
    if (left-- == 0) id = (id + 1) % 8, left = run(rng);
    x = id;
  }
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

struct Runner {
  Options opt;
  std::shared_ptr<Bundle> bundle;
  std::mt19937 rng;
  int failures = 0, checks = 0;

  std::string meta(const ProgramSpec &p, const std::string &key, const std::string &dflt = "") {
    auto it = p.meta.find(key);
    return it == p.meta.end() ? dflt : it->second;
  }

  /// The tensor parameter `name` of `program` (of its first kernel that has it).
  const TensorParam *findParam(const std::string &program, const std::string &name) {
    const ProgramSpec *p = bundle->findProgram(program);
    for (const KernelSpec &k : bundle->manifest().kernels) {
      const TensorParam *t = k.findTensor(name);
      if (!t) continue;
      if (p && std::find(p->kernels.begin(), p->kernels.end(), k.name) == p->kernels.end())
        continue;
      return t;
    }
    return nullptr;
  }

  /// Allocates a tensor parameter with its literal dims and the chosen symbol
  /// values (validate() has checked that every one exists and is bound).
  Buffer makeParam(const std::string &program, const std::string &name,
                   const std::map<std::string, int64_t> &symbols) {
    Buffer b;
    b.name = name;
    const TensorParam *t = findParam(program, name);
    if (!t) {
      std::fprintf(stderr, "flashc-run: program %s has no parameter '%s'\n", program.c_str(),
                   name.c_str());
      std::exit(1);
    }
    b.dtype = t->dtype;
    b.rowMultiple = std::max<int64_t>(t->strideMultiple, 1);
    for (const Dim &d : t->dims) {
      auto size = d.evaluate(symbols);
      if (!size) {
        std::fprintf(stderr, "flashc-run: program %s: parameter '%s' has dim %s, which flashc-run does not bind\n",
                     program.c_str(), name.c_str(), d.str().c_str());
        std::exit(1);
      }
      b.shape.push_back(*size);
    }
    return b;
  }

  // ---- the bundle's runnable programs, checked before anything runs ----
  // A corrupt manifest (a missing or misshapen parameter, an unknown size
  // symbol, garbage meta) is reported here, with or without a GPU, instead of
  // crashing the float64 reference or silently comparing against nonsense.

  /// Shape of `name` in `program` with flashc-run's symbol values; "" or why not.
  std::string resolveShape(const std::string &program, const std::string &name, size_t minRank,
                           size_t maxRank, std::vector<int64_t> &shape) {
    shape.clear();
    const TensorParam *t = findParam(program, name);
    if (!t) return "has no tensor parameter '" + name + "'";
    if (t->dims.size() < minRank || t->dims.size() > maxRank)
      return "parameter '" + name + "' has rank " + std::to_string(t->dims.size()) + ", expected " +
             (minRank == maxRank ? std::to_string(minRank)
                                 : std::to_string(minRank) + " to " + std::to_string(maxRank));
    auto sym = symbols();
    for (const Dim &d : t->dims) {
      if (!d.isSymbol()) {
        shape.push_back(d.value);
        continue;
      }
      auto it = sym.find(d.symbol);
      if (it == sym.end())
        return "parameter '" + name + "' has size symbol '" + d.symbol +
               "', which flashc-run does not bind (it binds B, Sq, Sk, M, Bf, S)";
      shape.push_back(it->second);
    }
    return "";
  }

  static std::string shapeText(const std::vector<int64_t> &shape) {
    std::string s = "[";
    for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
    return s + "]";
  }

  /// The parts of forward program `p` this tool checks (a block has both); none for other programs
  /// (backward programs and training forwards, `meta train_of`, run with their forward).
  struct Parts {
    bool attention = false, ffn = false;
    bool any() const { return attention || ffn; }
  };
  Parts forwardParts(const ProgramSpec &p) {
    if (p.meta.count("train_of")) return {};
    std::string op = meta(p, "op");
    return {op == "attention_forward" || (op == "block" && hasParam(p, "q")),
            op == "ffn_forward" || (op == "block" && hasParam(p, "x"))};
  }

  /// Is `name` scratch of program `q` (allocated by the runtime, never passed)?
  static bool isScratch(const ProgramSpec &q, const std::string &name) {
    return std::any_of(q.scratch.begin(), q.scratch.end(), [&](const ScratchSpec &sc) { return sc.name == name; });
  }

  /// The activations a training forward saves for one FFN and its backward reads, each [..., h].
  static std::vector<std::string> ffnSavedNames(bool gated) {
    return gated ? std::vector<std::string>{"gate", "up", "h"} : std::vector<std::string>{"pre", "h"};
  }

  /// Tensors two programs share are the same buffers: each (non-scratch) tensor parameter of `a`
  /// that `b` also has must have the same dtype and dims there; with `all`, `b` must have every
  /// one. "" or why not, in `b`'s words.
  std::string sharedParams(const ProgramSpec &a, const ProgramSpec &b, bool all, const std::string &aName) {
    auto text = [](const TensorParam &x) {
      std::string s = std::string(dtypeName(x.dtype)) + " [";
      for (size_t i = 0; i < x.dims.size(); ++i) s += (i ? ", " : "") + x.dims[i].str();
      return s + "]";
    };
    for (const std::string &kn : a.kernels)
      if (const KernelSpec *k = bundle->findKernel(kn))
        for (const TensorParam &t : k->tensors) {
          if (isScratch(a, t.name)) continue;
          const TensorParam *other = findParam(b.name, t.name);
          if (!other || isScratch(b, t.name)) {
            if (all) return "has no parameter '" + t.name + "' (" + text(t) + "), which " + aName + " has";
            continue;
          }
          if (other->dtype != t.dtype || !(other->dims == t.dims))
            return "parameter '" + t.name + "' is " + text(*other) + " but " + aName + "'s is " + text(t);
        }
    return "";
  }

  /// Checks what runProgram() will read for `p` (and its training forward and backward); "" or why not.
  std::string validateProgram(const ProgramSpec &p) {
    if (std::string of = meta(p, "train_of"); !of.empty()) {
      const ProgramSpec *forward = bundle->findProgram(of);
      if (!forward) return "meta train_of '" + of + "' names no program";
      if (meta(*forward, "forward_train") != p.name)
        return "meta train_of names '" + of + "', whose meta forward_train does not name this program "
               "(it would never run)";
      return "";  // checked with its forward
    }
    auto [attention, ffn] = forwardParts(p);
    if (!attention && !ffn) return "";
    const ProgramSpec *bwd = bundle->findProgram(meta(p, "backward", p.name + "_backward"));
    // The training forward: the forward's parameters, then each FFN's saved activations.
    const ProgramSpec *train = nullptr;
    if (std::string t = meta(p, "forward_train"); !t.empty()) {
      train = bundle->findProgram(t);
      if (!train) return "meta forward_train '" + t + "' names no program";
      if (meta(*train, "train_of") != p.name)
        return "training forward " + t + ": meta train_of is '" + meta(*train, "train_of") + "', not '" + p.name + "'";
      if (std::string why = sharedParams(p, *train, true, "the forward"); !why.empty())
        return "training forward " + t + ": " + why;
      const std::vector<std::string> saved = ffn ? ffnSavedNames(hasParam(p, "w_up")) : std::vector<std::string>{};
      for (const std::string &kn : train->kernels)
        if (const KernelSpec *k = bundle->findKernel(kn)) {
          for (const TensorParam &x : k->tensors)
            if (!isScratch(*train, x.name) && !findParam(p.name, x.name) &&
                std::find(saved.begin(), saved.end(), x.name) == saved.end())
              return "training forward " + t + ": parameter '" + x.name +
                     "' is neither the forward's nor a saved activation flashc-run knows" +
                     (ffn ? " (" + std::string(saved.size() == 3 ? "gate, up, h" : "pre, h") + ")" : "");
          for (const ScalarParam &sc : k->scalars)
            if (!hasScalar(p, sc.name))
              return "training forward " + t + ": scalar '" + sc.name + "' is not the forward's";
        }
      for (const std::string &kn : p.kernels)
        if (const KernelSpec *k = bundle->findKernel(kn))
          for (const ScalarParam &sc : k->scalars)
            if (!hasScalar(*train, sc.name))
              return "training forward " + t + ": has no scalar '" + sc.name + "', which the forward has";
      if (bwd)
        if (std::string why = sharedParams(*train, *bwd, false, "the training forward"); !why.empty())
          return "backward " + bwd->name + ": " + why;
    }
    std::map<std::string, std::vector<int64_t>> shapes;
    auto need = [&](const std::string &program, const std::string &name, size_t lo, size_t hi) {
      return resolveShape(program, name, lo, hi, shapes[program + "/" + name]);
    };
    auto same = [&](const std::string &a, const std::string &b) -> std::string {
      if (shapes[a] == shapes[b]) return "";
      return "parameter '" + a.substr(a.find('/') + 1) + "' has shape " + shapeText(shapes[a]) + " but '" +
             b.substr(b.find('/') + 1) + "' has " + shapeText(shapes[b]);
    };
    const std::string f = p.name + "/";
    if (attention) {
      auto number = [&](const char *key, const char *dflt, bool integer, double lo) -> std::string {
        std::string text = meta(p, key, dflt);
        char *end = nullptr;
        errno = 0;
        double v = integer ? double(std::strtoll(text.c_str(), &end, 10)) : std::strtod(text.c_str(), &end);
        if (text.empty() || *end || errno == ERANGE || !std::isfinite(v) || v < lo)
          return std::string("meta ") + key + " '" + text + "' is not " +
                 (integer ? "an integer >= -1" : lo > 0 ? "a finite positive number" : "a finite number >= 0");
        return "";
      };
      for (std::string why : {number("scale", "1", false, 1e-300), number("softcap", "0", false, 0),
                              number("window_left", "-1", true, -1), number("window_right", "-1", true, -1)})
        if (!why.empty()) return why;
      // A band modifier's window places row i at key position i + this (0): an int32, as a run-time key offset.
      if (std::string fixed = meta(p, "key_offset_fixed", "0"); !fixed.empty()) {
        char *end = nullptr;
        errno = 0;
        long long v = std::strtoll(fixed.c_str(), &end, 10);
        if (*end || errno == ERANGE || v < INT32_MIN || v > INT32_MAX)
          return "meta key_offset_fixed '" + fixed + "' is not a 32-bit integer";
      }
      for (const char *n : {"q", "k", "v", "out"})
        if (std::string why = need(p.name, n, 4, 4); !why.empty()) return why;
      if (std::string why = need(p.name, "lse", 3, 3); !why.empty()) return why;
      const auto &q = shapes[f + "q"], &k = shapes[f + "k"], &v = shapes[f + "v"];
      if (q[3] <= 0 || k[1] <= 0 || v[3] <= 0 || q[1] % k[1] != 0 || k[0] != q[0] || k[3] != q[3] ||
          v[0] != k[0] || v[1] != k[1] || v[2] != k[2] ||
          shapes[f + "out"] != std::vector<int64_t>{q[0], q[1], q[2], v[3]} ||
          shapes[f + "lse"] != std::vector<int64_t>{q[0], q[1], q[2]})
        return "attention parameters do not fit together: q " + shapeText(q) + ", k " + shapeText(k) + ", v " +
               shapeText(v) + ", out " + shapeText(shapes[f + "out"]) + ", lse " + shapeText(shapes[f + "lse"]) +
               " (expected [B, Hq, Sq, D], [B, Hkv, Sk, D], [B, Hkv, Sk, Dv], [B, Hq, Sq, Dv], [B, Hq, Sq] with "
               "D, Dv > 0 and Hq a multiple of Hkv > 0)";
      if (bwd) {
        const std::string b = bwd->name + "/";
        const std::vector<std::pair<std::string, std::string>> grads = {
            {"dout", "out"}, {"dq", "q"}, {"dk", "k"}, {"dv", "v"}};
        for (const auto &[grad, primal] : grads) {
          if (std::string why = need(bwd->name, grad, 0, 4); !why.empty()) return "backward " + bwd->name + ": " + why;
          if (std::string why = same(b + grad, f + primal); !why.empty()) return "backward " + bwd->name + ": " + why;
        }
      }
    }
    // Tensors the backward shares with its forward are the same buffers.
    if (bwd)
      if (std::string why = sharedParams(p, *bwd, false, "the forward"); !why.empty())
        return "backward " + bwd->name + ": " + why;
    if (ffn) {
      if (std::string act = meta(p, "activation", "identity");
          !ref::parseActivation(act))
        return "meta activation '" + act + "' is not one of gelu_tanh, gelu_erf, silu, relu";
      if (std::string why = need(p.name, "w1", 2, 2); !why.empty()) return why;
      if (std::string why = need(p.name, "w2", 2, 2); !why.empty()) return why;
      if (std::string why = need(p.name, "x", 2, 4); !why.empty()) return why;
      if (std::string why = need(p.name, "y", 2, 4); !why.empty()) return why;
      const auto &w1 = shapes[f + "w1"], &w2 = shapes[f + "w2"], &x = shapes[f + "x"];
      std::vector<int64_t> y(x.begin(), x.end() - 1);
      y.push_back(w2[1]);
      bool fits = w1[0] > 0 && w1[1] > 0 && w2[1] > 0 && x.back() == w1[0] && w2[0] == w1[1] && shapes[f + "y"] == y;
      std::vector<std::pair<std::string, std::vector<int64_t>>> optional = {
          {"w_up", w1}, {"b1", {w1[1]}}, {"b2", {w2[1]}}};
      for (auto &[name, expected] : optional)
        if (hasParam(p, name)) {
          if (std::string why = need(p.name, name, expected.size(), expected.size()); !why.empty()) return why;
          fits = fits && shapes[f + name] == expected;
        }
      if (!fits)
        return "FFN parameters do not fit together: x " + shapeText(x) + ", w1 " + shapeText(w1) + ", w2 " +
               shapeText(w2) + ", y " + shapeText(shapes[f + "y"]) +
               " (expected [..., d], [d, h], [h, d_out], [..., d_out] with d, h, d_out > 0; w_up [d, h], "
               "b1 [h], b2 [d_out])";
      if (bwd) {
        const std::string b = bwd->name + "/";
        std::vector<std::pair<std::string, std::string>> grads = {{"dy", "y"}, {"dx", "x"}, {"dw1", "w1"}, {"dw2", "w2"}};
        if (hasParam(p, "b1")) grads.push_back({"db1", "b1"});
        if (hasParam(p, "w_up")) grads.push_back({"dw_up", "w_up"});
        if (hasParam(p, "b2")) grads.push_back({"db2", "b2"});
        for (auto &[grad, primal] : grads) {
          if (std::string why = need(bwd->name, grad, 0, 4); !why.empty()) return "backward " + bwd->name + ": " + why;
          if (std::string why = same(b + grad, f + primal); !why.empty()) return "backward " + bwd->name + ": " + why;
        }
      }
      // The saved activations [..., h]: the training forward writes them, the backward reads them
      // (an older backward recomputes them in scratch).
      std::vector<int64_t> hidden(x.begin(), x.end() - 1);
      hidden.push_back(w1[1]);
      for (const std::string &name : ffnSavedNames(hasParam(p, "w_up"))) {
        bool wanted = bwd && findParam(bwd->name, name) && !isScratch(*bwd, name);
        if (!train) {
          if (wanted)
            return "backward " + bwd->name + " reads saved activation '" + name +
                   "', which a training forward writes, but the program has no meta forward_train";
          continue;
        }
        const std::string t = train->name + "/";
        if (!findParam(train->name, name) || isScratch(*train, name))
          return "training forward " + train->name + " has no saved activation '" + name + "'" +
                 (wanted ? " (backward " + bwd->name + " reads it)" : "");
        if (std::string why = need(train->name, name, x.size(), x.size()); !why.empty())
          return "training forward " + train->name + ": " + why;
        if (shapes[t + name] != hidden)
          return "training forward " + train->name + ": saved activation '" + name + "' has shape " +
                 shapeText(shapes[t + name]) + ", expected x's rows by h, " + shapeText(hidden);
        if (wanted) {
          if (std::string why = need(bwd->name, name, 0, 4); !why.empty()) return "backward " + bwd->name + ": " + why;
          if (std::string why = same(bwd->name + "/" + name, t + name); !why.empty())
            return "backward " + bwd->name + ": " + why + " (the training forward's saved activation)";
        }
      }
    }
    return "";
  }

  bool validate() {
    bool checkable = false;
    for (const ProgramSpec &p : bundle->manifest().programs) {
      checkable = checkable || forwardParts(p).any() || meta(p, "op") == "attention_decode" ||
                  meta(p, "op") == "kv_append" || meta(p, "op") == "moe" ||
                  meta(p, "op") == "attention_varlen";
      if (std::string why = validateProgram(p); !why.empty()) {
        std::fprintf(stderr, "flashc-run: bundle %s: program '%s': %s\n", opt.bundle.c_str(), p.name.c_str(),
                     why.c_str());
        return false;
      }
    }
    if (!checkable)  // nothing compared is not a pass
      std::fprintf(stderr, "flashc-run: bundle %s: no forward program says what it computes (`meta op "
                           "attention_forward`, `ffn_forward` or `block`): nothing to check\n",
                   opt.bundle.c_str());
    return checkable;
  }

  void bind(Arguments &args, const std::string &name, Buffer &b) {
    std::vector<int64_t> strides = b.strides(); // rows padded to 16 bytes (Buffer)
    Status s = args.setTensor(name, b.device, b.dtype, int(b.shape.size()), b.shape.data(), strides.data());
    if (!s.ok()) {
      std::fprintf(stderr, "flashc-run: %s\n", s.error().message.c_str());
      std::exit(1);
    }
  }

  bool launch(const std::string &program, Arguments &args) {
    // --poison-scratch: the program's scratch in a workspace of 0xff bytes (freed after the program ran).
    Workspace poisoned;
    if (opt.poisonScratch) {
      Result<uint64_t> bytes = bundle->workspaceBytes(program, args);
      if (!bytes.ok()) {
        std::fprintf(stderr, "flashc-run: sizing %s's workspace: %s\n", program.c_str(), bytes.error().message.c_str());
        ++failures;
        return false;
      }
      poisoned.bytes = *bytes;
      if (poisoned.bytes > 0 && (!cudaOk(cudaMalloc(&poisoned.data, poisoned.bytes), "allocating a workspace") ||
                                 !cudaOk(cudaMemset(poisoned.data, 0xff, poisoned.bytes), "poisoning a workspace"))) {
        ++failures;
        return false;
      }
    }
    if (poisoned.data) // the log says which runs met poisoned scratch
      std::printf("  %-28s scratch poisoned: %llu bytes of 0xff\n", program.c_str(),
                  static_cast<unsigned long long>(poisoned.bytes));
    Status s = bundle->launch(program, args, nullptr, poisoned.data ? &poisoned : nullptr);
    bool ran = s.ok() && cudaOk(cudaDeviceSynchronize(), ("running " + program).c_str());
    if (poisoned.data)
      cudaFree(poisoned.data);
    if (!s.ok())
      std::fprintf(stderr, "flashc-run: launching %s: %s\n", program.c_str(), s.error().message.c_str());
    if (!ran)
      ++failures;
    return ran;
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

  /// Does program `p` (any of its kernels) have tensor parameter `name`?
  bool hasScalar(const ProgramSpec &p, const std::string &name) {
    for (const std::string &kn : p.kernels)
      if (const KernelSpec *k = bundle->findKernel(kn); k && k->findScalar(name)) return true;
    return false;
  }

  bool hasParam(const ProgramSpec &p, const std::string &name) {
    for (const std::string &kn : p.kernels)
      if (const KernelSpec *k = bundle->findKernel(kn); k && k->findTensor(name)) return true;
    return false;
  }

  std::map<std::string, int64_t> symbols() {
    return {{"B", opt.batch}, {"Sq", opt.seqQ}, {"Sk", opt.seqK}, {"M", opt.tokens},
            {"Bf", opt.batch}, {"S", opt.tokens}};
  }

  // ---- attention: inputs, launch arguments, reference, checks ----
  struct AttentionCase {
    ref::AttentionParams m;
    ref::AttentionShape s;
    Buffer q, k, v, o, lse;
    std::vector<Buffer> maskTensors;             // a mask modifier's tensors (meta mask_tensors)
    std::vector<Buffer> scoreTensors;            // a score modifier's tensors (meta score_tensors)
    Buffer dO, dq, dk, dv;                       // backward, when the bundle has one
    std::vector<double> refO, refLse, refDq, refDk, refDv;
  };

  bool prepareAttention(const ProgramSpec &fwd, Arguments &args, AttentionCase &c) {
    c.m.scale = std::atof(meta(fwd, "scale", "1").c_str());
    c.m.softcap = std::atof(meta(fwd, "softcap", "0").c_str());
    c.m.window.left = std::atoll(meta(fwd, "window_left", "-1").c_str());
    c.m.window.right = std::atoll(meta(fwd, "window_right", "-1").c_str());
    std::string modText = meta(fwd, "mask_mod", "");
    if (!modText.empty()) {
      std::string error;
      auto program = ref::IndexProgram::parse(modText, &error);
      if (!program) {
        std::printf("%s: FAIL the manifest's mask modifier does not parse: %s\n", fwd.name.c_str(), error.c_str());
        ++failures;
        return false;
      }
      // Reads of the modifier's tensors: 0 outside their shapes (IndexFunction.h's rule).
      auto read = [&c](int t, const std::vector<int64_t> &position) -> int64_t {
        if (t >= int(c.maskTensors.size())) return 0;
        const Buffer &b = c.maskTensors[size_t(t)];
        if (position.size() != b.shape.size()) return 0;
        int64_t offset = 0;
        for (size_t d = 0; d < position.size(); ++d) {
          if (position[d] < 0 || position[d] >= b.shape[d]) return 0;
          offset = offset * b.shape[d] + position[d];
        }
        return int64_t(b.host[size_t(offset)]);
      };
      c.m.maskMod = [program = *program, read](int64_t b, int64_t h, int64_t i, int64_t j) {
        return program.visible(b, h, i, j, read);
      };
    }
    auto sym = symbols();
    // The modifiers' tensors, named by `meta mask_tensors` / `score_tensors` (comma-separated): the batch for a
    // leading dim of a rank >= 2 tensor, max(Sq, Sk) for the others; i32 ones runs of ids, f32 ones normal with
    // sigma 0.25.
    auto modifierTensors = [&](const char *key, bool allowF32, std::vector<Buffer> &out) {
      std::string names = meta(fwd, key, "");
      for (size_t start = 0; !names.empty() && start <= names.size();) {
        size_t comma = names.find(',', start);
        std::string name = names.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
        start = comma == std::string::npos ? names.size() + 1 : comma + 1;
        const TensorParam *t = findParam(fwd.name, name);
        if (!t || (t->dtype != DType::I32 && !(allowF32 && t->dtype == DType::F32))) {
          std::printf("%s: FAIL the manifest's %s tensor '%s' is not an %s parameter\n", fwd.name.c_str(), key,
                      name.c_str(), allowF32 ? "f32 or i32" : "i32");
          ++failures;
          return false;
        }
        std::map<std::string, int64_t> own = sym;
        for (size_t d = 0; d < t->dims.size(); ++d)
          if (t->dims[d].isSymbol())
            own.emplace(t->dims[d].symbol, d == 0 && t->dims.size() >= 2 ? opt.batch : std::max(opt.seqQ, opt.seqK));
        // A dim the modifier reads at an index itself holds that index's range: at least what the kernels'
        // `requires <dim> >= <range>` lines ask (a [Hq, ...] block layout's first dim, not the batch).
        for (const std::string &kn : fwd.kernels) {
          const KernelSpec *k = bundle->findKernel(kn);
          if (!k) continue;
          for (const Constraint &req : k->constraints) {
            std::string op, dim;
            Expr lhs, range;
            if (!req.expr.isBinary(&op, &lhs, &range) || op != ">=" || !lhs.isSymbol(&dim) ||
                std::none_of(t->dims.begin(), t->dims.end(), [&](const Dim &d) { return d.symbol == dim; }))
              continue;
            auto need = range.evaluate(own);
            if (need && *need > own[dim]) own[dim] = *need;
          }
        }
        out.push_back(makeParam(fwd.name, name, own));
        if (t->dtype == DType::F32) randomFill(out.back(), rng, 0.25);
        else randomIds(out.back(), rng);
      }
      return true;
    };
    if (!modifierTensors("mask_tensors", false, c.maskTensors) ||
        !modifierTensors("score_tensors", true, c.scoreTensors))
      return false;
    // A score modifier (meta score_mod): the reference's derivative is by central differences of its value.
    std::string scoreText = meta(fwd, "score_mod", "");
    if (!scoreText.empty()) {
      std::vector<bool> floats;
      for (const Buffer &b : c.scoreTensors) floats.push_back(b.dtype == DType::F32);
      std::string error;
      auto program = ref::ScoreProgram::parse(scoreText, floats, &error);
      if (!program) {
        std::printf("%s: FAIL the manifest's score modifier does not parse: %s\n", fwd.name.c_str(), error.c_str());
        ++failures;
        return false;
      }
      auto read = [&c](int t, const std::vector<int64_t> &position) -> double {
        if (t >= int(c.scoreTensors.size())) return 0;
        const Buffer &b = c.scoreTensors[size_t(t)];
        if (position.size() != b.shape.size()) return 0;
        int64_t offset = 0;
        for (size_t d = 0; d < position.size(); ++d) {
          if (position[d] < 0 || position[d] >= b.shape[d]) return 0;
          offset = offset * b.shape[d] + position[d];
        }
        return b.host[size_t(offset)];
      };
      c.m.scoreMod = [program = *program, read](double x, int64_t b, int64_t h, int64_t i, int64_t j) {
        double step = 1e-6 * std::max(1.0, std::fabs(x));
        double d = (program.evaluate(x + step, b, h, i, j, read) - program.evaluate(x - step, b, h, i, j, read)) /
                   (2 * step);
        return std::make_pair(program.evaluate(x, b, h, i, j, read), std::isfinite(d) ? d : 0.0);
      };
    }
    c.q = makeParam(fwd.name, "q", sym), c.k = makeParam(fwd.name, "k", sym);
    c.v = makeParam(fwd.name, "v", sym), c.o = makeParam(fwd.name, "out", sym);
    c.lse = makeParam(fwd.name, "lse", sym);
    c.s = {c.q.shape[0], c.q.shape[1], c.k.shape[1], c.q.shape[2], c.k.shape[2], c.q.shape[3], c.v.shape[3]};
    std::string offsetText;
    std::string fixedOffset = meta(fwd, "key_offset_fixed", "");
    if (!fixedOffset.empty()) {  // a band mask modifier's window: positions of its own, no scalar to pass
      c.m.window = c.m.window.withKeyOffset(std::atoll(fixedOffset.c_str()));
      offsetText = " key_offset=" + fixedOffset + " (fixed)";
    } else if (hasScalar(fwd, "key_offset")) {
      int64_t off = opt.keyOffset ? *opt.keyOffset
                                  : std::uniform_int_distribution<int64_t>(-c.s.querySeq - 8, c.s.keySeq + 8)(rng);
      c.m.window = c.m.window.withKeyOffset(off);
      offsetText = " key_offset=" + std::to_string(off);
    }
    std::printf("%s: attention B=%lld Hq=%lld Hkv=%lld Sq=%lld Sk=%lld D=%lld scale=%g window=[%lld,%lld]%s softcap=%g\n",
                fwd.name.c_str(), (long long)c.s.batch, (long long)c.s.queryHeads, (long long)c.s.kvHeads,
                (long long)c.s.querySeq, (long long)c.s.keySeq, (long long)c.s.headDim, c.m.scale,
                (long long)c.m.window.left, (long long)c.m.window.right, offsetText.c_str(), c.m.softcap);
    if (!modText.empty()) std::printf("%s: mask_mod %s\n", fwd.name.c_str(), modText.c_str());
    if (!scoreText.empty()) std::printf("%s: score_mod %s\n", fwd.name.c_str(), scoreText.c_str());
    randomFill(c.q, rng), randomFill(c.k, rng), randomFill(c.v, rng);
    if (!upload(c.q) || !upload(c.k) || !upload(c.v) || !poison(c.o) || !poison(c.lse)) {
      ++failures;
      return false;
    }
    for (std::vector<Buffer> *tensors : {&c.maskTensors, &c.scoreTensors})
      for (Buffer &t : *tensors)
        if (!upload(t)) {
          ++failures;
          return false;
        }
    bind(args, "q", c.q), bind(args, "k", c.k), bind(args, "v", c.v), bind(args, "out", c.o);
    bind(args, "lse", c.lse);
    for (Buffer &t : c.maskTensors) bind(args, t.name.c_str(), t);
    for (Buffer &t : c.scoreTensors) bind(args, t.name.c_str(), t);
    if (c.m.window.hasKeyOffset && hasScalar(fwd, "key_offset")) args.setI32("key_offset", int32_t(c.m.window.keyOffset));
    return true;
  }

  /// Checks o and lse; with `bwd`, also computes the float64 gradients for a random dO.
  bool checkAttention(const ProgramSpec &fwd, AttentionCase &c, const ProgramSpec *bwd) {
    if (!download(c.o) || !download(c.lse)) { ++failures; return false; }
    c.refO.assign(c.o.count(), 0), c.refLse.assign(c.lse.count(), 0);
    ref::attentionForward(c.s, c.m, c.q.host.data(), c.k.host.data(), c.v.host.data(), c.refO.data(),
                          c.refLse.data());
    if (bwd) {
      c.dO = makeParam(bwd->name, "dout", symbols());
      randomFill(c.dO, rng);
      c.refDq.resize(c.q.count()), c.refDk.resize(c.k.count()), c.refDv.resize(c.v.count());
      ref::attentionBackward(c.s, c.m, c.q.host.data(), c.k.host.data(), c.v.host.data(), c.dO.host.data(),
                             c.refDq.data(), c.refDk.data(), c.refDv.data());
    }
    report(fwd.name, "o", compare(c.o.host, c.refO), boundFor(c.o.dtype));
    report(fwd.name, "lse", compare(c.lse.host, c.refLse), 1e-3);
    return true;
  }

  /// The training forward wrote o and lse again (the backward reads these): the same check.
  bool checkAttentionTrain(const ProgramSpec &train, AttentionCase &c) {
    if (!download(c.o) || !download(c.lse)) { ++failures; return false; }
    report(train.name, "o", compare(c.o.host, c.refO), boundFor(c.o.dtype));
    report(train.name, "lse", compare(c.lse.host, c.refLse), 1e-3);
    return true;
  }

  /// Binds the backward's attention arguments (forward tensors, dO, poisoned dq/dk/dv).
  bool bindAttentionBackward(const ProgramSpec &bwd, Arguments &bargs, AttentionCase &c) {
    auto sym = symbols();
    c.dq = makeParam(bwd.name, "dq", sym), c.dk = makeParam(bwd.name, "dk", sym), c.dv = makeParam(bwd.name, "dv", sym);
    if (!upload(c.dO) || !poison(c.dq) || !poison(c.dk) || !poison(c.dv)) { ++failures; return false; }
    bind(bargs, "q", c.q), bind(bargs, "k", c.k), bind(bargs, "v", c.v), bind(bargs, "out", c.o);
    bind(bargs, "lse", c.lse), bind(bargs, "dout", c.dO), bind(bargs, "dq", c.dq), bind(bargs, "dk", c.dk);
    bind(bargs, "dv", c.dv);
    for (Buffer &t : c.maskTensors) bind(bargs, t.name.c_str(), t);
    for (Buffer &t : c.scoreTensors) bind(bargs, t.name.c_str(), t);
    if (c.m.window.hasKeyOffset && hasScalar(bwd, "key_offset")) bargs.setI32("key_offset", int32_t(c.m.window.keyOffset));
    return true;
  }

  void checkAttentionBackward(const ProgramSpec &bwd, AttentionCase &c) {
    if (!download(c.dq) || !download(c.dk) || !download(c.dv)) { ++failures; return; }
    report(bwd.name, "dq", compare(c.dq.host, c.refDq), boundFor(c.dq.dtype));
    report(bwd.name, "dk", compare(c.dk.host, c.refDk), boundFor(c.dk.dtype));
    report(bwd.name, "dv", compare(c.dv.host, c.refDv), boundFor(c.dv.dtype));
  }

  // ---- FFN: y = act(x·W1 + b1)·W2 + b2, or gated (act(x·W1) ⊙ x·W_up)·W2 + b2 ----
  struct FfnCase {
    std::string act;
    bool gated = false;
    int64_t d = 0, h = 0, dout = 0, rows = 0;
    Buffer x, y, w1, wu, w2, b1, b2;
    std::vector<double> refY;
    std::vector<Buffer> saved;                    // the training forward's pre, h (gated: gate, up, h)
    Buffer dy, dx, dw1, dwu, dw2, db1, db2;       // backward, when the bundle has one
  };

  bool prepareFfn(const ProgramSpec &fwd, Arguments &args, FfnCase &c) {
    auto sym = symbols();
    c.act = meta(fwd, "activation", "identity");
    c.gated = hasParam(fwd, "w_up");
    c.x = makeParam(fwd.name, "x", sym), c.y = makeParam(fwd.name, "y", sym);
    c.w1 = makeParam(fwd.name, "w1", sym), c.w2 = makeParam(fwd.name, "w2", sym);
    c.d = c.w1.shape[0], c.h = c.w1.shape[1], c.dout = c.w2.shape[1];
    c.rows = c.x.count() / c.d;
    std::printf("%s: ffn rows=%lld d=%lld h=%lld activation=%s%s\n", fwd.name.c_str(), (long long)c.rows,
                (long long)c.d, (long long)c.h, c.act.c_str(), c.gated ? " gated" : "");
    randomFill(c.x, rng);
    randomFill(c.w1, rng, 1.0 / std::sqrt(double(c.d)));
    randomFill(c.w2, rng, 1.0 / std::sqrt(double(c.h)));
    if (!upload(c.x) || !upload(c.w1) || !upload(c.w2) || !poison(c.y)) { ++failures; return false; }
    bind(args, "x", c.x), bind(args, "w1", c.w1), bind(args, "w2", c.w2), bind(args, "y", c.y);
    auto optional = [&](const char *name, Buffer &b, double scale) {
      if (!hasParam(fwd, name)) return true;
      b = makeParam(fwd.name, name, sym);
      randomFill(b, rng, scale);
      if (!upload(b)) return false;
      bind(args, name, b);
      return true;
    };
    if (!optional("w_up", c.wu, 1.0 / std::sqrt(double(c.d))) || !optional("b1", c.b1, 0.1) ||
        !optional("b2", c.b2, 0.1)) {
      ++failures;
      return false;
    }
    return true;
  }

  /// The FFN's float64 shape and weights (the hidden activation is not rounded).
  static ref::FfnShape ffnShape(const FfnCase &c) { return {c.rows, c.d, c.h, c.dout}; }
  static ref::FfnWeights ffnWeights(const FfnCase &c) {
    ref::FfnWeights w;
    w.w1 = c.w1.host.data(), w.w2 = c.w2.host.data();
    w.wUp = c.gated ? c.wu.host.data() : nullptr;
    w.b1 = c.b1.host.empty() ? nullptr : c.b1.host.data();
    w.b2 = c.b2.host.empty() ? nullptr : c.b2.host.data();
    return w;
  }

  void checkFfn(const ProgramSpec &fwd, FfnCase &c) {
    if (!download(c.y)) { ++failures; return; }
    c.refY.assign(c.rows * c.dout, 0);
    ref::ffnForward(ffnShape(c), *ref::parseActivation(c.act), ffnWeights(c), c.x.host.data(), c.refY.data());
    report(fwd.name, "y", compare(c.y.host, c.refY), boundFor(c.y.dtype));
  }

  /// Allocates (poisoned) and binds the activations the training forward saves, [..., h] each,
  /// shaped and typed as its parameters say; y is poisoned again, to be written again.
  bool bindFfnTrain(const ProgramSpec &train, const ProgramSpec *bwd, Arguments &args, FfnCase &c) {
    auto sym = symbols();
    bool ok = poison(c.y);
    c.saved.clear();
    for (const std::string &name : ffnSavedNames(c.gated)) {
      Buffer b = makeParam(train.name, name, sym);
      // One buffer for both programs: rows padded to what each of them wants.
      if (const TensorParam *t = bwd ? findParam(bwd->name, name) : nullptr)
        b.rowMultiple = std::lcm(b.rowMultiple, std::max<int64_t>(t->strideMultiple, 1));
      c.saved.push_back(std::move(b));
    }
    for (Buffer &b : c.saved) {
      ok = ok && poison(b);
      if (ok) bind(args, b.name, b);
    }
    if (!ok) ++failures;
    return ok;
  }

  /// The training forward's y (the same as the forward's) and its saved activations: pre = x·W1 + b1
  /// and h = act(pre) (gated: gate = x·W1 + b1, up = x·W_up, h = act(gate) ⊙ up), in float64.
  void checkFfnTrain(const ProgramSpec &train, FfnCase &c) {
    if (!download(c.y)) { ++failures; return; }
    report(train.name, "y", compare(c.y.host, c.refY), boundFor(c.y.dtype));
    for (Buffer &b : c.saved)
      if (!download(b)) { ++failures; return; }
    const int64_t H = c.h;
    std::vector<double> pre(c.rows * H), up(c.rows * H), h(c.rows * H);
    ref::Activation act = *ref::parseActivation(c.act);
    for (int64_t r = 0; r < c.rows; ++r) {
      // The reference's own hidden row (u = 1 when not gated).
      ref::detail::ffnHiddenRow(ffnShape(c), ffnWeights(c), &c.x.host[r * c.d], &pre[r * H], &up[r * H]);
      for (int64_t j = 0; j < H; ++j) h[r * H + j] = ref::activation(act, pre[r * H + j]) * up[r * H + j];
    }
    for (Buffer &b : c.saved) {
      const std::vector<double> &want = b.name == "h" ? h : b.name == "up" ? up : pre;
      report(train.name, b.name, compare(b.host, want), boundFor(b.dtype));
    }
  }

  /// Binds the FFN backward's arguments: the forward inputs it reads, a random dy, poisoned gradients
  /// (one per forward parameter).
  bool bindFfnBackward(const ProgramSpec &bwd, Arguments &bargs, FfnCase &c) {
    auto sym = symbols();
    c.dy = makeParam(bwd.name, "dy", sym);
    randomFill(c.dy, rng);
    c.dx = makeParam(bwd.name, "dx", sym), c.dw1 = makeParam(bwd.name, "dw1", sym);
    c.dw2 = makeParam(bwd.name, "dw2", sym);
    bool ok = upload(c.dy) && poison(c.dx) && poison(c.dw1) && poison(c.dw2);
    bind(bargs, "x", c.x), bind(bargs, "w1", c.w1), bind(bargs, "w2", c.w2), bind(bargs, "dy", c.dy);
    bind(bargs, "dx", c.dx), bind(bargs, "dw1", c.dw1), bind(bargs, "dw2", c.dw2);
    auto optional = [&](const char *name, const char *grad, Buffer &input, Buffer &g) {
      if (input.host.empty()) return;
      if (hasParam(bwd, name)) bind(bargs, name, input);  // the backward reads no b2
      g = makeParam(bwd.name, grad, sym);
      ok = ok && poison(g);
      bind(bargs, grad, g);
    };
    optional("b1", "db1", c.b1, c.db1), optional("w_up", "dw_up", c.wu, c.dwu), optional("b2", "db2", c.b2, c.db2);
    // The activations the training forward saved (validate() has checked that it has every one the
    // backward reads, with the same shape); an older backward recomputes them in scratch.
    for (Buffer &b : c.saved)
      if (hasParam(bwd, b.name) && !isScratch(bwd, b.name)) bind(bargs, b.name, b);
    if (!ok) ++failures;
    return ok;
  }

  /// float64 gradients of y = act(x·W1 + b1)·W2 + b2 (gated: (act(x·W1 + b1) ⊙ x·W_up)·W2 + b2) for dy.
  void checkFfnBackward(const ProgramSpec &bwd, FfnCase &c) {
    for (Buffer *g : {&c.dx, &c.dw1, &c.dw2, &c.db1, &c.dwu, &c.db2})
      if (!g->shape.empty() && !download(*g)) { ++failures; return; }
    const int64_t R = c.rows, D = c.d, H = c.h, N = c.dout;
    std::vector<double> dx(R * D), dw1(D * H), dwu(c.gated ? D * H : 0), dw2(H * N), db1(H), db2(N);
    ref::FfnGradients g;
    g.dx = dx.data(), g.dw1 = dw1.data(), g.dw2 = dw2.data(), g.db1 = db1.data(), g.db2 = db2.data();
    g.dwUp = c.gated ? dwu.data() : nullptr;
    ref::ffnBackward(ffnShape(c), *ref::parseActivation(c.act), ffnWeights(c), c.x.host.data(), c.dy.host.data(),
                     g);
    report(bwd.name, "dx", compare(c.dx.host, dx), boundFor(c.dx.dtype));
    report(bwd.name, "dw1", compare(c.dw1.host, dw1), boundFor(c.dw1.dtype));
    report(bwd.name, "dw2", compare(c.dw2.host, dw2), boundFor(c.dw2.dtype));
    if (!c.db1.shape.empty()) report(bwd.name, "db1", compare(c.db1.host, db1), boundFor(c.db1.dtype));
    if (!c.dwu.shape.empty()) report(bwd.name, "dw_up", compare(c.dwu.host, dwu), boundFor(c.dwu.dtype));
    if (!c.db2.shape.empty()) report(bwd.name, "db2", compare(c.db2.host, db2), boundFor(c.db2.dtype));
  }

  // ---- decode over a KV cache (meta op attention_decode) and the append of new tokens' K/V into it (meta op
  // kv_append, or meta append 1: the decode's program appends first): lengths the capacity, 0, 1 and ragged (with an
  // append: T, the capacity and ragged); a paged cache's pages shuffled, the first two sequences sharing half of
  // theirs (the second's appended rows are its own: no two sequences write one row); then a bad table, which must
  // fail the launch naming the sequence, leave the caches as they were and out and lse all NaN ----
  void runDecode(const ProgramSpec &p) {
    const bool decode = meta(p, "op") == "attention_decode";
    const bool append = !decode || meta(p, "append") == "1";
    const int64_t page = std::atoll(meta(p, "page_size", "0").c_str());
    const bool causal = meta(p, "causal") == "1";
    const double scale = std::atof(meta(p, "scale", "1").c_str());
    std::map<std::string, int64_t> sym = symbols();
    const int64_t batch = opt.batch, width = page ? (opt.seqK + page - 1) / page : 0;
    const int64_t capacity = page ? width * page : opt.seqK;
    sym["S"] = capacity;
    sym["W"] = width;
    sym["pages"] = batch * width + 3;
    sym["T"] = std::min<int64_t>(5, capacity);  // an append alone: any number of new tokens (two blocks of 4)
    Buffer k = makeParam(p.name, "k_cache", sym), v = makeParam(p.name, "v_cache", sym);
    Buffer lens = makeParam(p.name, "cache_seqlens", sym), q, out, lse, kNew, vNew, table;
    if (decode) q = makeParam(p.name, "q", sym), out = makeParam(p.name, "out", sym), lse = makeParam(p.name, "lse", sym);
    if (append) kNew = makeParam(p.name, "k_new", sym), vNew = makeParam(p.name, "v_new", sym);
    ref::DecodeShape s;
    s.batch = batch, s.headDim = k.shape[3], s.valueDim = v.shape[3], s.pageSize = page, s.capacity = capacity;
    s.kvHeads = page ? k.shape[2] : k.shape[1];
    s.queryHeads = decode ? q.shape[1] : s.kvHeads;
    s.tokens = decode ? q.shape[2] : kNew.shape[2];
    const int64_t minLength = append ? std::min(s.tokens, capacity) : 0;
    lens.host.resize(size_t(batch));
    std::uniform_int_distribution<int64_t> length(minLength, capacity);
    for (int64_t b = 0; b < batch; ++b)
      lens.host[size_t(b)] = double(b == 0 ? capacity : b == 1 ? minLength : b == 2 ? std::max<int64_t>(minLength, 1)
                                                                                      : length(rng));
    std::vector<int32_t> lensInt(lens.host.begin(), lens.host.end()), tableInt;
    if (page) {
      table = makeParam(p.name, "block_table", sym);
      s.pages = k.shape[0], s.tableWidth = width;
      std::vector<int32_t> ids(size_t(s.pages));
      for (size_t i = 0; i < ids.size(); ++i) ids[i] = int32_t(i);
      std::shuffle(ids.begin(), ids.end(), rng);
      tableInt.assign(size_t(batch * width), 0);
      for (int64_t i = 0; i < batch * width; ++i) tableInt[size_t(i)] = ids[size_t(i)];
      if (batch > 1)
        for (int64_t i = 0; i < width / 2; ++i) tableInt[size_t(width + i)] = tableInt[size_t(i)];
      table.host.assign(tableInt.begin(), tableInt.end());
    }
    std::printf("%s: %s B=%lld Hq=%lld Hkv=%lld T=%lld D=%lld Dv=%lld capacity=%lld %s scale=%g%s\n", p.name.c_str(),
                decode ? (append ? "append + decode" : "decode") : "append", (long long)batch,
                (long long)s.queryHeads, (long long)s.kvHeads, (long long)s.tokens, (long long)s.headDim,
                (long long)s.valueDim, (long long)capacity,
                page ? ("pages of " + std::to_string(page)).c_str() : "contiguous", scale, causal ? " causal" : "");
    randomFill(k, rng), randomFill(v, rng);
    if (decode) randomFill(q, rng);
    if (append) randomFill(kNew, rng), randomFill(vNew, rng);
    if (!upload(k) || !upload(v) || !upload(lens) || (page && !upload(table)) ||
        (decode && (!upload(q) || !poison(out) || !poison(lse))) || (append && (!upload(kNew) || !upload(vNew)))) {
      ++failures;
      return;
    }
    Arguments args;
    bind(args, "k_cache", k), bind(args, "v_cache", v), bind(args, "cache_seqlens", lens);
    if (page) bind(args, "block_table", table);
    if (decode) bind(args, "q", q), bind(args, "out", out), bind(args, "lse", lse);
    if (append) bind(args, "k_new", kNew), bind(args, "v_new", vNew);
    if (!launch(p.name, args)) return;
    std::vector<double> refK = k.host, refV = v.host;  // the caches as uploaded, then appended on the host
    if (append) {
      ref::appendToCache(s, kNew.host, vNew.host, lensInt.data(), tableInt.data(), refK, refV);
      if (!download(k) || !download(v)) { ++failures; return; }
      report(p.name, "k_cache", compare(k.host, refK), 1e-12);  // copies: exact
      report(p.name, "v_cache", compare(v.host, refV), 1e-12);
    }
    if (decode) {
      if (!download(out) || !download(lse)) { ++failures; return; }
      std::vector<double> refOut, refLse;
      ref::decodeAttention(s, q.host, refK, refV, lensInt.data(), tableInt.data(), scale, causal, refOut, refLse);
      report(p.name, "out", compare(out.host, refOut), boundFor(out.dtype));
      report(p.name, "lse", compare(lse.host, refLse), 1e-3);
    }
    // A bad table: the last sequence's length over the capacity (an append: below its new tokens), or (paged) a
    // page id past the cache.
    if (page) tableInt[size_t((batch - 1) * width)] = int32_t(s.pages + 5), table.host.assign(tableInt.begin(), tableInt.end());
    else lensInt[size_t(batch - 1)] = int32_t(append ? s.tokens - 1 : capacity + 1), lens.host.assign(lensInt.begin(), lensInt.end());
    if (page) lens.host[size_t(batch - 1)] = double(std::max<int64_t>({lensInt[size_t(batch - 1)], 1, minLength}));
    std::vector<uint8_t> kBefore(k.bytes()), vBefore(v.bytes());
    if (!upload(lens) || (page && !upload(table)) || (decode && (!zero(out) || !zero(lse))) ||
        !cudaOk(cudaMemcpy(kBefore.data(), k.device, kBefore.size(), cudaMemcpyDeviceToHost), "download") ||
        !cudaOk(cudaMemcpy(vBefore.data(), v.device, vBefore.size(), cudaMemcpyDeviceToHost), "download")) {
      ++failures;
      return;
    }
    Status bad = bundle->launch(p.name, args, nullptr);
    ++checks;
    cudaDeviceSynchronize();
    auto same = [&](const Buffer &b, const std::vector<uint8_t> &before) {
      std::vector<uint8_t> raw(b.bytes());
      return cudaOk(cudaMemcpy(raw.data(), b.device, raw.size(), cudaMemcpyDeviceToHost), "download") && raw == before;
    };
    // The caches as they were; out and lse all NaN.
    bool untouched = same(k, kBefore) && same(v, vBefore) && (!decode || (allNaN(out) && allNaN(lse)));
    bool named = !bad.ok() && bad.error().message.find("sequence " + std::to_string(batch - 1)) != std::string::npos;
    std::printf("  %-28s bad table: %s; caches %s  %s\n", p.name.c_str(),
                bad.ok() ? "launch succeeded" : bad.error().message.c_str(),
                untouched ? (decode ? "untouched, outputs NaN" : "untouched") : "WRITTEN (or outputs not NaN)",
                named && untouched ? "ok" : "FAIL");
    if (!(named && untouched)) ++failures;
  }

  // ---- packed variable-length sequences (meta op attention_varlen): --batch sequences whose query lengths are
  // the --seq-q total split at random cut points (0 and 1 among them), key lengths --seq-k's likewise, 37 rows
  // after the last sequence holding NaN; then offsets that decrease, which must fail the launch naming the entry
  // and set out and lse to NaN ----
  void runVarlen(const ProgramSpec &p) {
    const double scale = std::atof(meta(p, "scale", "1").c_str());
    ref::AttentionParams params;
    params.scale = scale;
    params.softcap = std::atof(meta(p, "softcap", "0").c_str());
    params.window = ref::AttentionWindow{std::atoll(meta(p, "window_left", "-1").c_str()),
                                         std::atoll(meta(p, "window_right", "-1").c_str())};
    const int64_t sequences = std::max<int64_t>(opt.batch, 1), tail = 37;
    std::map<std::string, int64_t> sym = symbols();
    sym["Tq"] = opt.seqQ + tail;
    sym["Tk"] = opt.seqK + tail;
    sym["B1"] = sequences + 1;
    Buffer q = makeParam(p.name, "q", sym), k = makeParam(p.name, "k", sym), v = makeParam(p.name, "v", sym);
    Buffer cuQ = makeParam(p.name, "cu_seqlens_q", sym), cuK = makeParam(p.name, "cu_seqlens_k", sym);
    Buffer out = makeParam(p.name, "out", sym), lse = makeParam(p.name, "lse", sym);
    auto offsets = [&](int64_t total) {
      std::uniform_int_distribution<int64_t> cut(0, total);
      std::vector<int64_t> cuts;
      for (int64_t i = 0; i + 1 < sequences; ++i) cuts.push_back(cut(rng));
      std::sort(cuts.begin(), cuts.end());
      if (cuts.size() >= 3) cuts[1] = cuts[0], cuts[2] = std::min(cuts[1] + 1, total);
      std::sort(cuts.begin(), cuts.end());
      std::vector<int32_t> cu{0};
      for (int64_t c : cuts) cu.push_back(int32_t(c));
      cu.push_back(int32_t(total));
      return cu;
    };
    std::vector<int32_t> offQ = offsets(opt.seqQ), offK = offsets(opt.seqK);
    cuQ.host.assign(offQ.begin(), offQ.end());
    cuK.host.assign(offK.begin(), offK.end());
    ref::VarlenShape s;
    s.sequences = sequences, s.rowsQ = q.shape[0], s.rowsK = k.shape[0], s.queryHeads = q.shape[1];
    s.kvHeads = k.shape[1], s.headDim = q.shape[2], s.valueDim = v.shape[2];
    std::printf("%s: varlen B=%lld Tq=%lld Tk=%lld Hq=%lld Hkv=%lld D=%lld Dv=%lld window [%lld, %lld] scale=%g\n",
                p.name.c_str(), (long long)sequences, (long long)opt.seqQ, (long long)opt.seqK,
                (long long)s.queryHeads, (long long)s.kvHeads, (long long)s.headDim, (long long)s.valueDim,
                (long long)params.window.left, (long long)params.window.right, scale);
    randomFill(q, rng), randomFill(k, rng), randomFill(v, rng);
    // rows after the last sequence: NaN, which no result may read
    for (Buffer *b : {&q, &k, &v}) {
      int64_t rowElems = b->shape[1] * b->shape[2], used = b == &q ? opt.seqQ : opt.seqK;
      for (int64_t i = used * rowElems; i < int64_t(b->host.size()); ++i) b->host[size_t(i)] = std::nan("");
    }
    if (!upload(q) || !upload(k) || !upload(v) || !upload(cuQ) || !upload(cuK) || !poison(out) || !poison(lse)) {
      ++failures;
      return;
    }
    Arguments args;
    bind(args, "q", q), bind(args, "k", k), bind(args, "v", v), bind(args, "cu_seqlens_q", cuQ);
    bind(args, "cu_seqlens_k", cuK), bind(args, "out", out), bind(args, "lse", lse);
    if (!launch(p.name, args)) return;
    if (!download(out) || !download(lse)) { ++failures; return; }
    // the reference over the sequences' rows only (the rows after them stay poisoned: compare those rows alone)
    std::vector<double> refOut(out.host.size(), 0.0), refLse(lse.host.size(), 0.0);
    ref::varlenAttention(s, params, q.host.data(), k.host.data(), v.host.data(), offQ.data(), offK.data(),
                         refOut.data(), refLse.data());
    std::vector<double> gotOut, wantOut, gotLse, wantLse;
    const int64_t rowElems = out.shape[1] * out.shape[2];
    for (int64_t i = 0; i < opt.seqQ * rowElems; ++i) gotOut.push_back(out.host[size_t(i)]), wantOut.push_back(refOut[size_t(i)]);
    for (int64_t h = 0; h < s.queryHeads; ++h)
      for (int64_t r = 0; r < opt.seqQ; ++r)
        gotLse.push_back(lse.host[size_t(h * s.rowsQ + r)]), wantLse.push_back(refLse[size_t(h * s.rowsQ + r)]);
    report(p.name, "out", compare(gotOut, wantOut), boundFor(out.dtype));
    report(p.name, "lse", compare(gotLse, wantLse), 1e-3);
    // The backward program (meta backward): dq, dk, dv of the sequences' rows against float64 gradients, the
    // forward's out and lse its inputs, a random dout (NaN after the last sequence, as q, k, v there).
    if (const ProgramSpec *bwd = bundle->findProgram(meta(p, "backward", ""))) {
      Buffer dout = makeParam(bwd->name, "dout", sym), dq = makeParam(bwd->name, "dq", sym);
      Buffer dk = makeParam(bwd->name, "dk", sym), dv = makeParam(bwd->name, "dv", sym);
      randomFill(dout, rng);
      for (int64_t i = opt.seqQ * dout.shape[1] * dout.shape[2]; i < int64_t(dout.host.size()); ++i)
        dout.host[size_t(i)] = std::nan("");
      if (!upload(dout) || !poison(dq) || !poison(dk) || !poison(dv)) { ++failures; return; }
      Arguments bargs;
      bind(bargs, "q", q), bind(bargs, "k", k), bind(bargs, "v", v), bind(bargs, "cu_seqlens_q", cuQ);
      bind(bargs, "cu_seqlens_k", cuK), bind(bargs, "out", out), bind(bargs, "lse", lse), bind(bargs, "dout", dout);
      bind(bargs, "dq", dq), bind(bargs, "dk", dk), bind(bargs, "dv", dv);
      if (!launch(bwd->name, bargs)) return;
      if (!download(dq) || !download(dk) || !download(dv)) { ++failures; return; }
      std::vector<double> refDq(dq.host.size(), 0.0), refDk(dk.host.size(), 0.0), refDv(dv.host.size(), 0.0);
      ref::varlenAttentionBackward(s, params, q.host.data(), k.host.data(), v.host.data(), dout.host.data(),
                                   offQ.data(), offK.data(), refDq.data(), refDk.data(), refDv.data());
      auto rows = [](const Buffer &b, const std::vector<double> &ref, int64_t used, std::vector<double> &got,
                     std::vector<double> &want) {
        const int64_t elems = used * b.shape[1] * b.shape[2];
        got.assign(b.host.begin(), b.host.begin() + elems);
        want.assign(ref.begin(), ref.begin() + elems);
      };
      std::vector<double> g, w;
      rows(dq, refDq, opt.seqQ, g, w), report(bwd->name, "dq", compare(g, w), boundFor(dq.dtype));
      rows(dk, refDk, opt.seqK, g, w), report(bwd->name, "dk", compare(g, w), boundFor(dk.dtype));
      rows(dv, refDv, opt.seqK, g, w), report(bwd->name, "dv", compare(g, w), boundFor(dv.dtype));
    }
    // Offsets that decrease: the launch fails naming the entry, and out and lse are all NaN.
    if (sequences >= 2) {
      std::vector<int32_t> bad = offQ;
      bad[2] = bad[1] - 1;
      cuQ.host.assign(bad.begin(), bad.end());
      if (!upload(cuQ) || !zero(out) || !zero(lse)) { ++failures; return; }
      Status st = bundle->launch(p.name, args, nullptr);
      ++checks;
      cudaDeviceSynchronize();
      bool nan = allNaN(out) && allNaN(lse);
      bool named = !st.ok() && st.error().message.find("cu_seqlens_q[2]") != std::string::npos;
      std::printf("  %-28s bad offsets: %s; outputs %s  %s\n", p.name.c_str(),
                  st.ok() ? "launch succeeded" : st.error().message.c_str(), nan ? "NaN" : "NOT NaN",
                  named && nan ? "ok" : "FAIL");
      if (!(named && nan)) ++failures;
    }
  }

  // ---- a mixture of experts (meta op moe): --tokens tokens through the router, the top_k experts and the combine,
  // against float64 with the router logits rounded to the element type (the layer's own: the experts chosen on
  // them, as the kernels choose); weights scaled by 1 / sqrt(fan-in); y poisoned first ----
  void runMoe(const ProgramSpec &p) {
    auto sym = symbols();
    sym["T"] = opt.tokens;
    Buffer x = makeParam(p.name, "x", sym), router = makeParam(p.name, "router", sym);
    Buffer w1 = makeParam(p.name, "w1", sym), w2 = makeParam(p.name, "w2", sym), y = makeParam(p.name, "y", sym);
    Buffer wUp;
    const bool gated = hasParam(p, "w_up");
    ref::MoeShape s;
    s.tokens = x.shape[0], s.model = x.shape[1], s.experts = router.shape[1], s.hidden = w1.shape[2];
    s.out = w2.shape[2], s.topK = std::atoll(meta(p, "top_k", "1").c_str());
    const std::string act = meta(p, "activation", "silu"), gating = meta(p, "gating", "softmax");
    const bool renormalize = meta(p, "renormalize", "0") == "1";
    std::printf("%s: moe T=%lld d=%lld h=%lld d_out=%lld experts=%lld top_k=%lld %s%s %s%s\n", p.name.c_str(),
                (long long)s.tokens, (long long)s.model, (long long)s.hidden, (long long)s.out, (long long)s.experts,
                (long long)s.topK, gating.c_str(), renormalize ? " renormalized" : "", act.c_str(),
                gated ? " gated" : "");
    randomFill(x, rng);
    randomFill(router, rng, 1.0 / std::sqrt(double(s.model)));
    randomFill(w1, rng, 1.0 / std::sqrt(double(s.model)));
    randomFill(w2, rng, 1.0 / std::sqrt(double(s.hidden)));
    if (gated) {
      wUp = makeParam(p.name, "w_up", sym);
      randomFill(wUp, rng, 1.0 / std::sqrt(double(s.model)));
    }
    if (!upload(x) || !upload(router) || !upload(w1) || !upload(w2) || (gated && !upload(wUp)) || !poison(y)) {
      ++failures;
      return;
    }
    Arguments args;
    bind(args, "x", x), bind(args, "router", router), bind(args, "w1", w1), bind(args, "w2", w2), bind(args, "y", y);
    if (gated) bind(args, "w_up", wUp);
    if (!launch(p.name, args)) return;
    if (!download(y)) { ++failures; return; }
    std::vector<double> refY(size_t(s.tokens * s.out), 0.0);
    ref::LogitRounding round = ref::logitRounding16(x.dtype == DType::BF16);
    ref::moeForward(s, *ref::parseActivation(act), gating == "sigmoid" ? ref::MoeGating::Sigmoid : ref::MoeGating::Softmax,
                    renormalize, router.host.data(), w1.host.data(), gated ? wUp.host.data() : nullptr, w2.host.data(),
                    x.host.data(), refY.data(), nullptr, round);
    report(p.name, "y", compare(y.host, refY), boundFor(y.dtype));

    // The training forward (`meta forward_train`): the same inputs, y poisoned and checked again, and what it saves
    // for the backward (TileLowering.h MoeSaved; sizes from the manifest's expressions of T), which the backward
    // (`meta backward`) then reads with a random dy; its gradients against float64 with the choice held fixed.
    const ProgramSpec *train = bundle->findProgram(meta(p, "forward_train"));
    const ProgramSpec *bwd = bundle->findProgram(meta(p, "backward"));
    if (!train || !bwd) return;
    // What it saves: its tensors that are not the forward's parameters (the forward's workspaces of those names
    // are scratch there; shapes from the manifest's expressions of T).
    std::vector<std::string> savedNames;
    for (const std::string &kn : train->kernels)
      if (const KernelSpec *k = bundle->findKernel(kn))
        for (const TensorParam &t : k->tensors)
          if (!isScratch(*train, t.name) && (!findParam(p.name, t.name) || isScratch(p, t.name)) &&
              std::find(savedNames.begin(), savedNames.end(), t.name) == savedNames.end())
            savedNames.push_back(t.name);
    std::map<std::string, Buffer> saved;
    for (const std::string &name : savedNames) {
      saved[name] = makeParam(train->name, name, sym);
      if (!poison(saved[name])) { ++failures; return; }
      bind(args, name, saved[name]);
    }
    if (!poison(y) || !launch(train->name, args) || !download(y)) { ++failures; return; }
    report(train->name, "y", compare(y.host, refY), boundFor(y.dtype));

    Buffer dy = makeParam(bwd->name, "dy", sym);
    randomFill(dy, rng);
    if (!upload(dy)) { ++failures; return; }
    Arguments bargs;
    bind(bargs, "x", x), bind(bargs, "router", router), bind(bargs, "w1", w1), bind(bargs, "w2", w2);
    if (gated) bind(bargs, "w_up", wUp);
    for (const std::string &name : savedNames) bind(bargs, name, saved[name]);
    bind(bargs, "dy", dy);
    std::vector<std::pair<std::string, Buffer>> grads;
    for (const char *name : {"dx", "drouter", "dw1", "dw_up", "dw2"}) {
      if (std::string(name) == "dw_up" && !gated) continue;
      grads.push_back({name, makeParam(bwd->name, name, sym)});
    }
    for (auto &[name, g] : grads) {
      if (!poison(g)) { ++failures; return; }
      bind(bargs, name, g);
    }
    if (!launch(bwd->name, bargs)) return;
    std::map<std::string, std::vector<double>> ref;
    for (auto &[name, g] : grads) {
      if (!download(g)) { ++failures; return; }
      ref[name].assign(size_t(g.count()), 0.0);
    }
    ref::MoeGradients rg;
    rg.dx = ref["dx"].data(), rg.dRouter = ref["drouter"].data(), rg.dw1 = ref["dw1"].data();
    rg.dwUp = gated ? ref["dw_up"].data() : nullptr, rg.dw2 = ref["dw2"].data();
    ref::moeBackward(s, *ref::parseActivation(act),
                     gating == "sigmoid" ? ref::MoeGating::Sigmoid : ref::MoeGating::Softmax, renormalize,
                     router.host.data(), w1.host.data(), gated ? wUp.host.data() : nullptr, w2.host.data(),
                     x.host.data(), dy.host.data(), rg, round);
    for (auto &[name, g] : grads)
      report(bwd->name, name, compare(g.host, ref[name]), boundFor(g.dtype));
  }

  void runProgram(const ProgramSpec &p) {
    // (A training forward of a mixture of experts runs with its forward.)
    if (meta(p, "op") == "moe") return meta(p, "train_of").empty() ? runMoe(p) : void();
    if (meta(p, "op") == "attention_decode" || meta(p, "op") == "kv_append") return runDecode(p);
    if (meta(p, "op") == "attention_varlen") return runVarlen(p);
    auto [attention, ffn] = forwardParts(p);
    if (!attention && !ffn) return;
    Arguments args;
    AttentionCase ac;
    FfnCase fc;
    if (attention && !prepareAttention(p, args, ac)) return;
    if (ffn && !prepareFfn(p, args, fc)) return;
    if (!launch(p.name, args)) return;
    // The backward: named by the forward's `meta backward`, else <forward>_backward.
    const ProgramSpec *bwd = bundle->findProgram(meta(p, "backward", p.name + "_backward"));
    if (attention && !checkAttention(p, ac, bwd)) return;
    if (ffn) checkFfn(p, fc);
    // The training forward (`meta forward_train`): the same inputs and outputs (poisoned, written
    // again and checked again), plus the activations it saves for the backward, which then reads
    // the training forward's tensors.
    std::string trainName = meta(p, "forward_train");
    if (const ProgramSpec *train = trainName.empty() ? nullptr : bundle->findProgram(trainName)) {
      if (attention && (!poison(ac.o) || !poison(ac.lse))) { ++failures; return; }
      if (ffn && !bindFfnTrain(*train, bwd, args, fc)) return;
      if (!launch(train->name, args)) return;
      if (attention && !checkAttentionTrain(*train, ac)) return;
      if (ffn) checkFfnTrain(*train, fc);
    }
    if (!bwd) return;
    Arguments bargs;
    if (attention && !bindAttentionBackward(*bwd, bargs, ac)) return;
    if (ffn && !bindFfnBackward(*bwd, bargs, fc)) return;
    if (!launch(bwd->name, bargs)) return;
    if (attention) checkAttentionBackward(*bwd, ac);
    if (ffn) checkFfnBackward(*bwd, fc);
  }

  int run() {
    auto opened = Bundle::open(opt.bundle);
    if (!opened.ok()) {
      std::fprintf(stderr, "flashc-run: %s\n", opened.error().message.c_str());
      return 1;
    }
    bundle = *opened;
    if (!validate()) return 1;
    Status dev = checkDevice();
    if (!dev.ok()) {
      std::printf("flashc-run: SKIPPED running %s: %s\n", opt.bundle.c_str(), dev.error().message.c_str());
      return opt.requireGpu ? 77 : 0;
    }
    auto code = bundle->prepare();
    if (!code.ok()) {
      std::fprintf(stderr, "flashc-run: %s\n", code.error().message.c_str());
      return 1;
    }
    std::printf("%s: code %s (%s)\n", opt.bundle.c_str(), code->arch.c_str(),
                code->fromCubin ? "shipped cubin" : (code->fromDiskCache ? "disk cache" : "NVRTC"));
    for (const ProgramSpec &p : bundle->manifest().programs)
      runProgram(p);
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
