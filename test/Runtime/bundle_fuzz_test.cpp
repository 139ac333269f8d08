// Seeded mutation fuzzing of what the runtime reads from a bundle (CPU only): manifests, manifest expressions, the
// multi-architecture index and the bundle blob, and the launch planning a parsed manifest drives. A bundle comes
// from disk or from a blob inside an application, so a damaged one must give an error, never a crash, a hang or a
// wrong value. Each run takes a seed input (test/Runtime/fuzz_seeds: manifests flashc wrote, and the hand-written
// bundles of test/Runtime/bundles), applies deterministic mutations (lines deleted, duplicated or swapped,
// tokens replaced by other tokens or by extreme numbers, bytes inserted or flipped, deep parentheses, truncation)
// (1-3; a manifest one time in four none, so that launches are planned from valid ones too) and checks these
// properties:
//   * parse error: a message (nothing to check past that, but the sanitizer builds catch any bad access);
//   * parsed manifest / index: writing it and parsing the text again gives the same value, and that text is canonical
//     (written again, it is unchanged);
//   * parsed expression: its canonical text parses to the same text; evaluated under random (extreme) symbol values
//     it gives a value or an error; a constant one with a constant fault never evaluates;
//   * parsed manifest: every program planned with random argument shapes (consistent symbol values or not, extreme
//     sizes, wrong dtypes, strides) gives a launch within the device limits or an error with a message; the
//     workspace layout and the caller-tensor checks then run on the plan;
//   * blob: unpacked (after the header's size and checksum are fixed up, most of the time, so that the sections are
//     parsed), packed again and unpacked, the same files.
// usage: bundle_fuzz_test [runs per target = $FLASHC_BUNDLE_FUZZ_RUNS or 20000] [seed = 51]; failing inputs go to
// $FLASHC_FUZZ_OUT when it is set.
#include "Check.h"

#include "flashc/runtime/Binding.h"
#include "flashc/runtime/BundleBlob.h"
#include "flashc/runtime/BundleIndex.h"
#include "flashc/runtime/Expr.h"
#include "flashc/runtime/Hash.h"
#include "flashc/runtime/Manifest.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <set>
#include <sstream>

using namespace flashc::rt;
using namespace flashc::test;

namespace {

std::string readText(const std::filesystem::path &path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::vector<std::string> splitLines(const std::string &text) {
  std::vector<std::string> lines;
  std::stringstream ss(text);
  for (std::string line; std::getline(ss, line);) lines.push_back(line);
  return lines;
}

std::string joinLines(const std::vector<std::string> &lines) {
  std::string out;
  for (const auto &l : lines) out += l + "\n";
  return out;
}

const char *const kExtremes[] = {"0",          "-1",         "1",          "2",       "3",
                                 "2147483647", "2147483648", "4294967296", "-2147483649",
                                 "9223372036854775807",      "9223372036854775808",
                                 "-9223372036854775808",     "99999999999999999999999",
                                 "1e308",      "nan",        "-0"};

class Mutator {
public:
  Mutator(std::mt19937_64 &rng, const std::vector<std::string> &tokens) : rng_(rng), tokens_(tokens) {}

  size_t pick(size_t n) { return n ? std::uniform_int_distribution<size_t>(0, n - 1)(rng_) : 0; }

  // 1-3 mutations, or (one time in `unchanged`) none: valid inputs keep the launch planning busy.
  std::string mutate(std::string text, size_t unchanged = 0) {
    if (unchanged && pick(unchanged) == 0) return text;
    int count = 1 + int(pick(3));
    for (int i = 0; i < count; ++i) text = once(text);
    return text;
  }

private:
  std::string once(const std::string &text) {
    std::vector<std::string> lines = splitLines(text);
    switch (pick(10)) {
    case 0: // delete a line
      if (!lines.empty()) lines.erase(lines.begin() + long(pick(lines.size())));
      return joinLines(lines);
    case 1: // duplicate a line somewhere
      if (!lines.empty()) lines.insert(lines.begin() + long(pick(lines.size() + 1)), lines[pick(lines.size())]);
      return joinLines(lines);
    case 2: // swap two lines
      if (lines.size() > 1) std::swap(lines[pick(lines.size())], lines[pick(lines.size())]);
      return joinLines(lines);
    case 3: // a token becomes another token of the corpus
      return replaceToken(text, tokens_.empty() ? std::string("x") : tokens_[pick(tokens_.size())]);
    case 4: // a number becomes an extreme one
      return replaceNumber(text, kExtremes[pick(std::size(kExtremes))]);
    case 5: { // raw bytes, control characters included
      std::string junk;
      for (size_t n = 1 + pick(4); n > 0; --n) junk.push_back(char(pick(256)));
      std::string out = text;
      out.insert(pick(out.size() + 1), junk);
      return out;
    }
    case 6: // truncated
      return text.substr(0, pick(text.size() + 1));
    case 7: { // a token inside deep parentheses (the expression parser's depth guard)
      size_t depth = pick(4) == 0 ? 20000 : 1 + pick(300);
      return replaceToken(text, std::string(depth, '(') + "N" + std::string(depth, ')'));
    }
    case 8: { // an operator or bracket character
      static const std::string ops = "()[],*+-/%<>=!&| #\t";
      std::string out = text;
      out.insert(pick(out.size() + 1), 1, ops[pick(ops.size())]);
      return out;
    }
    default: { // a flipped bit
      std::string out = text;
      if (!out.empty()) out[pick(out.size())] ^= char(1u << pick(8));
      return out;
    }
    }
  }

  // Token boundaries: whitespace, commas and brackets (so that dims and expression operands are tokens too).
  static bool separator(char c) { return c == ' ' || c == '\n' || c == '\t' || c == ',' || c == '[' || c == ']'; }

  std::string replaceToken(const std::string &text, const std::string &with) {
    std::vector<std::pair<size_t, size_t>> spans;
    for (size_t i = 0; i < text.size();) {
      while (i < text.size() && separator(text[i])) ++i;
      size_t start = i;
      while (i < text.size() && !separator(text[i])) ++i;
      if (i > start) spans.push_back({start, i - start});
    }
    if (spans.empty()) return text + with;
    auto [at, len] = spans[pick(spans.size())];
    return text.substr(0, at) + with + text.substr(at + len);
  }

  std::string replaceNumber(const std::string &text, const std::string &with) {
    std::vector<std::pair<size_t, size_t>> spans;
    for (size_t i = 0; i < text.size();) {
      if (!std::isdigit(static_cast<unsigned char>(text[i]))) {
        ++i;
        continue;
      }
      size_t start = i;
      while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) ++i;
      spans.push_back({start, i - start});
    }
    if (spans.empty()) return replaceToken(text, with);
    auto [at, len] = spans[pick(spans.size())];
    return text.substr(0, at) + with + text.substr(at + len);
  }

  std::mt19937_64 &rng_;
  const std::vector<std::string> &tokens_;
};

std::vector<std::string> tokensOf(const std::vector<std::string> &texts) {
  std::set<std::string> set;
  for (const auto &t : texts) {
    std::stringstream ss(t);
    for (std::string tok; ss >> tok;) set.insert(tok);
  }
  return {set.begin(), set.end()};
}

int64_t extremeValue(std::mt19937_64 &rng) {
  static const int64_t values[] = {0, 1, 2, 3, 7, 8, 63, 64, 65, 127, 1000, 4096, 16384, int64_t(1) << 20,
                                   int64_t(1) << 31, (int64_t(1) << 31) - 1, int64_t(1) << 40, int64_t(1) << 62,
                                   INT64_MAX, -1, INT64_MIN};
  return values[std::uniform_int_distribution<size_t>(0, std::size(values) - 1)(rng)];
}

// A failing input, written to $FLASHC_FUZZ_OUT (when set) as <what>-<run>.txt to be replayed by hand.
void keep(const std::string &what, int run, const std::string &text) {
  const char *dir = std::getenv("FLASHC_FUZZ_OUT");
  if (!dir) return;
  std::ofstream(std::filesystem::path(dir) / (what + "-" + std::to_string(run) + ".txt"), std::ios::binary) << text;
}

struct Counts {
  int parsed = 0, rejected = 0, planned = 0, refused = 0;
};

// Plans every program (and every kernel) of `m` with argument shapes from random symbol values: the symbols mostly
// consistent and small, sometimes extreme or contradictory; wrong dtypes and odd strides now and then.
void planPrograms(const Manifest &m, std::mt19937_64 &rng, Counts &counts, int &bad) {
  auto coin = [&](int n) { return std::uniform_int_distribution<int>(0, n - 1)(rng) == 0; };
  std::map<std::string, int64_t> symbols;
  auto symbolValue = [&](const std::string &s) {
    auto it = symbols.find(s);
    if (it == symbols.end() || coin(20)) {
      int64_t v = coin(4) ? extremeValue(rng) : std::uniform_int_distribution<int64_t>(1, 300)(rng);
      it = symbols.insert_or_assign(s, v).first;
    }
    return it->second;
  };
  DeviceLimits limits;
  limits.maxDynamicSharedBytes = 227 * 1024;
  limits.multiprocessors = 132;
  auto argumentsFor = [&](const std::vector<CallerParam> &params) {
    Arguments args;
    uintptr_t address = 0x100000;
    for (const auto &p : params) {
      if (p.scalar) {
        if (p.scalar->type == ScalarType::F32) args.setF32(p.scalar->name, coin(3) ? 1e30f : 0.5f);
        else if (p.scalar->type == ScalarType::I32) args.setI32(p.scalar->name, int32_t(extremeValue(rng)));
        else args.setI64(p.scalar->name, extremeValue(rng));
        continue;
      }
      const TensorParam &t = *p.tensor;
      std::array<int64_t, 4> shape{1, 1, 1, 1};
      int rank = int(t.dims.size());
      for (int i = 0; i < rank && i < 4; ++i) {
        const Dim &d = t.dims[size_t(i)];
        if (d.isSymbol()) shape[size_t(i)] = symbolValue(d.symbol);
        else if (!d.isExpression()) shape[size_t(i)] = d.value;
        else {
          SymbolTable table;
          std::set<std::string> used;
          d.expr.collectSymbols(used);
          for (const auto &s : used) table[s] = symbolValue(s);
          auto v = d.expr.evaluate(table);
          shape[size_t(i)] = v.ok() ? *v : 1;
        }
      }
      if (coin(30)) rank = std::max(0, rank - 1);
      DType dtype = coin(25) ? DType(std::uniform_int_distribution<int>(0, 3)(rng)) : t.dtype;
      std::array<int64_t, 4> strides{};
      const int64_t *stridePtr = nullptr;
      if (coin(5) && rank > 0) {
        for (int i = 0; i < rank; ++i) strides[size_t(i)] = coin(3) ? extremeValue(rng) : int64_t(1) << (2 * (rank - 1 - i));
        stridePtr = strides.data();
      }
      void *data = coin(40) ? nullptr : reinterpret_cast<void *>(address);
      address += uintptr_t(1) << 32;  // apart: the planned tensors never overlap by construction
      (void)args.setTensor(t.name, data, dtype, rank, shape.data(), stridePtr);
    }
    return args;
  };
  for (const auto &program : m.programs) {
    std::vector<CallerParam> params;
    if (!callerParams(m, program.name, params)) {
      bad += !check(false, "callerParams finds the program it was given", program.name);
      continue;
    }
    Arguments args = argumentsFor(params);
    auto plan = planProgramLaunch(m, program, args, limits);
    if (!plan) {
      ++counts.refused;
      if (plan.message().empty()) bad += !check(false, "a refused launch plan says why", program.name);
      continue;
    }
    ++counts.planned;
    for (const auto &k : plan->kernels) {
      if (k.skip) continue;  // a zero grid dimension: nothing launched
      bool within = true;
      for (int i = 0; i < 3; ++i)
        within = within && k.grid[size_t(i)] >= 1 && k.block[size_t(i)] >= 1 &&
                 int64_t(k.grid[size_t(i)]) <= limits.maxGrid[size_t(i)] &&
                 int64_t(k.block[size_t(i)]) <= limits.maxBlock[size_t(i)];
      within = within && int64_t(k.sharedBytes) <= limits.maxDynamicSharedBytes &&
               int64_t(k.block[0]) * k.block[1] * k.block[2] <= limits.maxThreadsPerBlock;
      if (!within)
        bad += !check(false, "a planned launch is within the device's limits",
                      program.name + ": kernel " + k.kernel->name + " grid " + std::to_string(k.grid[0]) + "," +
                          std::to_string(k.grid[1]) + "," + std::to_string(k.grid[2]) + " block " +
                          std::to_string(k.block[0]) + "," + std::to_string(k.block[1]) + "," +
                          std::to_string(k.block[2]) + " shared " + std::to_string(k.sharedBytes));
    }
    for (const auto &s : plan->scratch)
      if (s.bytes < 0) bad += !check(false, "scratch sizes are not negative", program.name + ": " + s.name);
    WorkspaceLayout layout = layOutWorkspace(plan->scratch);
    for (size_t i = 0; i < layout.offsets.size(); ++i)
      if (layout.offsets[i] % kWorkspaceAlignment != 0 || layout.offsets[i] > layout.bytes)
        bad += !check(false, "workspace offsets aligned and inside the workspace", program.name);
    auto bytes = callerTensorBytes(plan->kernels.data(), plan->kernels.size());
    uint64_t widest = 0;
    for (const auto &t : bytes) widest = std::max(widest, t.last - t.first);
    Status overlap = checkCallerOverlaps(bytes);
    if (!overlap.ok() && widest < (uint64_t(1) << 32))
      bad += !check(false, "tensors placed 4 GiB apart, each under 4 GiB, do not overlap", overlap.message());
  }
  for (const auto &kernel : m.kernels) {  // each kernel alone too: the C ABI can launch one
    std::vector<CallerParam> params;
    if (!callerParams(m, kernel.name, params)) continue;
    auto plan = planKernelLaunch(kernel, argumentsFor(params), limits);
    if (!plan && plan.message().empty()) bad += !check(false, "a refused kernel launch says why", kernel.name);
  }
}

// `text` split at the commas outside parentheses (`cdiv(Sq, 64), 16, B` is three parts).
std::vector<std::string> splitTopLevel(const std::string &text) {
  std::vector<std::string> parts(1);
  int depth = 0;
  for (char c : text) {
    depth += c == '(' ? 1 : c == ')' ? -1 : 0;
    if (c == ',' && depth == 0) parts.emplace_back();
    else parts.back().push_back(c);
  }
  return parts;
}

// Expressions as the manifests write them: grid / block / shared / requires lines and bracketed dims.
std::vector<std::string> expressionsOf(const std::vector<std::string> &manifests) {
  std::vector<std::string> out;
  for (const auto &text : manifests)
    for (const auto &line : splitLines(text)) {
      std::stringstream ss(line);
      std::string key;
      ss >> key;
      std::string rest;
      std::getline(ss, rest);
      if (key == "grid" || key == "block") {
        for (const auto &part : splitTopLevel(rest)) out.push_back(part);
      } else if (key == "shared" || key == "requires") {
        out.push_back(rest);
      }
      size_t open = line.find('['), close = line.rfind(']');
      if (open != std::string::npos && close != std::string::npos && close > open)
        for (const auto &dim : splitTopLevel(line.substr(open + 1, close - open - 1))) out.push_back(dim);
    }
  out.push_back("cdiv(a, b) * (c % 7) - -d + max(e, 3) / min(f, 2)");
  out.push_back("N > 0 && (M % 8 == 0 || !K) && num_sms >= 1");
  return out;
}

} // namespace

int main(int argc, char **argv) {
  const char *env = std::getenv("FLASHC_BUNDLE_FUZZ_RUNS");
  const int runs = argc > 1 ? std::atoi(argv[1]) : env ? std::atoi(env) : 20000;
  const uint64_t seed = argc > 2 ? std::strtoull(argv[2], nullptr, 10) : 51;
  if (runs < 1) {
    std::fprintf(stderr, "bundle_fuzz_test: the run count must be a positive integer\n");
    return 2;
  }
  std::mt19937_64 rng(seed);
  namespace fs = std::filesystem;

  std::vector<std::string> manifests, indexes;
  for (const auto &root : {fs::path(FLASHC_FUZZ_SEEDS_DIR), fs::path(FLASHC_TEST_BUNDLES_DIR)})
    for (const auto &entry : fs::recursive_directory_iterator(root)) {
      if (!entry.is_regular_file() || entry.path().extension() != ".flashc") continue;
      std::string text = readText(entry.path());
      (text.rfind("flashc-bundle 2", 0) == 0 ? indexes : manifests).push_back(text);
    }
  if (!check(manifests.size() >= 8 && !indexes.empty(), "seed manifests and an index found",
             std::to_string(manifests.size()) + " manifests, " + std::to_string(indexes.size()) + " indexes"))
    return checkSummary();
  size_t seedsParsing = 0;
  for (const auto &text : manifests) seedsParsing += parseManifest(text).ok();
  // (bad_version's is refused by design; every other seed parses, so the mutations start from valid input)
  check(seedsParsing + 1 == manifests.size(), "every seed manifest but bad_version's parses",
        std::to_string(seedsParsing) + " of " + std::to_string(manifests.size()));

  std::vector<std::string> corpus = manifests;
  corpus.insert(corpus.end(), indexes.begin(), indexes.end());
  const std::vector<std::string> tokens = tokensOf(corpus);
  Mutator mutator(rng, tokens);
  int bad = 0;

  // Manifests, then the launches planned from those that parse.
  Counts manifestCounts;
  for (int run = 0; run < runs; ++run) {
    std::string text = mutator.mutate(manifests[mutator.pick(manifests.size())], /*unchanged=*/4);
    auto m = parseManifest(text);
    if (!m) {
      ++manifestCounts.rejected;
      if (m.message().empty()) {
        bad += !check(false, "a rejected manifest says why", "run " + std::to_string(run));
        keep("manifest", run, text);
      }
      continue;
    }
    ++manifestCounts.parsed;
    std::string written = writeManifest(*m);
    auto again = parseManifest(written);
    if (!again || !(*again == *m) || writeManifest(*again) != written) {
      bad += !check(false, "a parsed manifest survives writing and parsing again",
                    "run " + std::to_string(run) + (again ? "" : ": " + again.message()));
      keep("manifest", run, text);
      continue;
    }
    planPrograms(*m, rng, manifestCounts, bad);
  }
  check(bad == 0, "manifests: " + std::to_string(runs) + " mutated (" + std::to_string(manifestCounts.parsed) +
                      " parsed, " + std::to_string(manifestCounts.rejected) + " rejected); programs " +
                      std::to_string(manifestCounts.planned) + " planned, " + std::to_string(manifestCounts.refused) +
                      " refused");

  // Expressions.
  const std::vector<std::string> expressions = expressionsOf(manifests);
  int exprBad = 0, exprParsed = 0;
  for (int run = 0; run < runs; ++run) {
    std::string text = mutator.mutate(expressions[mutator.pick(expressions.size())]);
    bool logic = mutator.pick(2) == 0;
    auto e = Expr::parse(text, logic);
    if (!e) {
      if (e.message().empty()) exprBad += !check(false, "a rejected expression says why", text);
      continue;
    }
    ++exprParsed;
    std::string canonical = e->str();
    auto again = Expr::parse(canonical, logic);
    if (!again || again->str() != canonical) {
      exprBad += !check(false, "an expression's canonical text parses to itself", text + " -> " + canonical);
      keep("expression", run, text);
      continue;
    }
    std::set<std::string> used;
    e->collectSymbols(used);
    for (int trial = 0; trial < 4; ++trial) {
      SymbolTable table;
      for (const auto &s : used) table[s] = extremeValue(rng);
      auto v = e->evaluate(table);
      if (!v && v.message().empty()) exprBad += !check(false, "a failed evaluation says why", canonical);
    }
    if (e->isConstant() && !e->constantFault().empty() && e->evaluate({}).ok())
      exprBad += !check(false, "a constant expression with a constant fault does not evaluate",
                        canonical + " (fault: " + e->constantFault() + ")");
  }
  check(exprBad == 0, "expressions: " + std::to_string(runs) + " mutated, " + std::to_string(exprParsed) + " parsed");

  // The multi-architecture index.
  int indexBad = 0, indexParsed = 0;
  for (int run = 0; run < runs; ++run) {
    std::string text = mutator.mutate(indexes[mutator.pick(indexes.size())]);
    auto index = parseBundleIndex(text);
    if (!index) {
      if (index.message().empty()) indexBad += !check(false, "a rejected index says why", text);
      continue;
    }
    ++indexParsed;
    std::string written = writeBundleIndex(*index);
    auto again = parseBundleIndex(written);
    if (!again || !(*again == *index) || writeBundleIndex(*again) != written) {
      indexBad += !check(false, "a parsed index survives writing and parsing again", text);
      keep("index", run, text);
    }
  }
  check(indexBad == 0, "indexes: " + std::to_string(runs) + " mutated, " + std::to_string(indexParsed) + " parsed");

  // Blobs: a bundle of a few files, its bytes mutated, the header's size and checksum fixed up three times in four.
  BundleFiles files{{"manifest.flashc", manifests[0]},
                    {"kernels.cu", "extern \"C\" __global__ void k() {}\n"},
                    {"sm_90a/manifest.flashc", manifests[1 % manifests.size()]},
                    {"index.flashc", indexes[0]}};
  const std::string blob = packBundleBlob(files);
  int blobBad = 0, blobUnpacked = 0;
  auto setLe = [](std::string &b, size_t at, uint64_t v, int bytes) {
    for (int i = 0; i < bytes && at + size_t(i) < b.size(); ++i) b[at + size_t(i)] = char(v >> (8 * i) & 0xff);
  };
  for (int run = 0; run < runs; ++run) {
    std::string b = blob;
    for (size_t n = 1 + mutator.pick(3); n > 0; --n) {
      switch (mutator.pick(5)) {
      case 0:
        if (!b.empty()) b[mutator.pick(b.size())] ^= char(1u << mutator.pick(8));
        break;
      case 1: b.insert(mutator.pick(b.size() + 1), 1 + mutator.pick(16), char(mutator.pick(256))); break;
      case 2: b.erase(mutator.pick(b.size()), 1 + mutator.pick(64)); break;
      case 3: // a section header field (sections start 8-aligned) to an extreme length
        setLe(b, kBundleBlobHeaderSize + 8 * mutator.pick(b.size() / 8), uint64_t(extremeValue(rng)),
              mutator.pick(2) ? 4 : 8);
        break;
      default: b.resize(mutator.pick(b.size() + 1)); break;
      }
    }
    if (b.size() >= kBundleBlobHeaderSize && mutator.pick(4) != 0) {
      setLe(b, 16, b.size(), 8);
      setLe(b, 24, fnv1a64(b.data() + kBundleBlobHeaderSize, b.size() - kBundleBlobHeaderSize), 8);
    }
    auto got = unpackBundleBlob(b.data(), b.size());
    if (!got) {
      if (got.message().empty()) blobBad += !check(false, "a rejected blob says why", "run " + std::to_string(run));
      continue;
    }
    ++blobUnpacked;
    std::string repacked = packBundleBlob(*got);
    auto again = unpackBundleBlob(repacked.data(), repacked.size());
    if (!again || *again != *got) {
      blobBad += !check(false, "an unpacked blob packs and unpacks to the same files");
      keep("blob", run, b);
    }
  }
  check(blobBad == 0, "blobs: " + std::to_string(runs) + " mutated, " + std::to_string(blobUnpacked) + " unpacked");
  return checkSummary();
}
