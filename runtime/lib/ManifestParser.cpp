// Line-oriented parser for manifest.flashc (syntax: docs/bundle.md).
#include "flashc/runtime/Arch.h"
#include "flashc/runtime/BundleIndex.h"
#include "flashc/runtime/Manifest.h"

#include "Words.h"

#include <algorithm>
#include <cctype>
#include <set>

namespace flashc::rt {
namespace {

// Splits on commas that are not inside parentheses.
std::vector<std::string_view> splitTopLevelCommas(std::string_view s) {
  std::vector<std::string_view> out;
  int depth = 0;
  size_t start = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '(') ++depth;
    else if (s[i] == ')') --depth;
    else if (s[i] == ',' && depth == 0) {
      out.push_back(trim(s.substr(start, i - start)));
      start = i + 1;
    }
  }
  out.push_back(trim(s.substr(start)));
  return out;
}

bool parseInt(std::string_view s, int64_t &out) {
  if (s.empty() || s.size() > 18) return false;
  int64_t v = 0;
  for (char c : s) {
    if (!std::isdigit(static_cast<unsigned char>(c))) return false;
    v = v * 10 + (c - '0');
  }
  out = v;
  return true;
}

class Parser {
public:
  explicit Parser(std::string_view text) : text_(text) {}

  Result<Manifest> run() {
    size_t pos = 0;
    while (pos <= text_.size()) {
      size_t nl = text_.find('\n', pos);
      if (nl == std::string_view::npos) nl = text_.size();
      ++line_;
      std::string_view raw = text_.substr(pos, nl - pos);
      if (!raw.empty() && raw.back() == '\r') raw.remove_suffix(1);
      if (Status s = handleLine(trim(raw)); !s) return s.error();
      pos = nl + 1;
    }
    if (line_ < 1 || !sawHeader_)
      return makeError(ErrorCode::InvalidBundle, "manifest.flashc:1: empty manifest (expected 'flashc-bundle <version>')");
    if (kernel_) return fail(kernel_->line, "kernel '" + kernel_->name + "' has no 'end'");
    if (program_) return fail(program_->line, "program '" + program_->name + "' has no 'end'");
    if (Status s = validateManifest(m_); !s) return s.error();
    return m_;
  }

private:
  Error fail(int line, const std::string &what) const {
    return makeError(ErrorCode::InvalidBundle, "manifest.flashc:" + std::to_string(line) + ": " + what);
  }
  Error fail(const std::string &what) const { return fail(line_, what); }

  Status once(std::set<std::string> &seen, const std::string &key) {
    if (!seen.insert(key).second) return fail("'" + key + "' given twice");
    return Status();
  }

  Status handleLine(std::string_view l) {
    if (line_ == 1) {
      auto w = splitWords(l);
      if (w.size() != 2 || w[0] != "flashc-bundle")
        return fail("expected 'flashc-bundle <version>' as the first line");
      int64_t v;
      if (!parseInt(w[1], v)) return fail("bad format version '" + w[1] + "'");
      if (v == kBundleIndexVersion)
        return makeError(ErrorCode::InvalidArgument,
                         "manifest.flashc:1: format version 2 is a multi-architecture bundle index, not a "
                         "manifest (open the bundle directory: Bundle::open reads both)");
      if (v != kBundleFormatVersion) return makeError(ErrorCode::Unsupported, "manifest.flashc:1: " + unsupportedVersion(v));
      m_.formatVersion = int(v);
      sawHeader_ = true;
      return Status();
    }
    if (l.empty() || l.front() == '#') return Status();
    size_t sp = 0;
    while (sp < l.size() && !std::isspace(static_cast<unsigned char>(l[sp]))) ++sp;
    std::string key(l.substr(0, sp));
    std::string_view rest = trim(l.substr(sp));
    if (kernel_) return kernelLine(key, rest);
    if (program_) return programLine(key, rest);
    return headerLine(key, rest);
  }

  Status headerLine(const std::string &key, std::string_view rest) {
    auto words = splitWords(rest);
    auto single = [&](std::string &out) -> Status {
      if (Status s = once(headerSeen_, key); !s) return s;
      if (words.size() != 1) return fail("'" + key + "' takes exactly one value");
      out = words[0];
      return Status();
    };
    if (key == "flashc-version") return single(m_.flashcVersion);
    if (key == "source") return single(m_.source);
    if (key == "device-library") {
      if (Status s = single(m_.deviceLibrary); !s) return s;
      for (char c : m_.deviceLibrary)
        if (!std::isxdigit(static_cast<unsigned char>(c))) return fail("'device-library' takes a hexadecimal fingerprint");
      return Status();
    }
    if (key == "nvrtc-options") {
      if (Status s = once(headerSeen_, key); !s) return s;
      for (const auto &w : words)
        if (w.rfind("-I", 0) == 0 || w.rfind("--include-path", 0) == 0 || w.rfind("--gpu-architecture", 0) == 0 ||
            w.rfind("-arch", 0) == 0)
          return fail("nvrtc-options must not set '" + w + "' (the runtime adds include paths and the arch)");
      m_.nvrtcOptions = words;
      return Status();
    }
    if (key == "arch") {
      if (Status s = once(headerSeen_, key); !s) return s;
      if (words.empty()) return fail("'arch' needs at least one architecture");
      for (const auto &w : words)
        if (!parseArch(w)) return fail("bad architecture '" + w + "' (expected e.g. sm_80, sm_90a)");
      m_.archs = words;
      return Status();
    }
    if (key == "cubin") {
      // cubin <arch> <file> [for <kernel>...]: without `for` the cubin holds every kernel.
      if (words.size() < 2 || (words.size() > 2 && words[2] != "for") || words.size() == 3)
        return fail("expected 'cubin <arch> <file>' or 'cubin <arch> <file> for <kernel>...'");
      if (!parseArch(words[0])) return fail("bad cubin architecture '" + words[0] + "' (expected e.g. sm_80, sm_90a)");
      CubinSpec cubin{words[0], words[1], {}, line_};
      cubin.kernels.assign(words.begin() + std::min<size_t>(words.size(), 3), words.end());
      m_.cubins.push_back(std::move(cubin));
      return Status();
    }
    if (key == "kernel" || key == "program") {
      if (words.size() != 1) return fail("expected '" + key + " <name>'");
      if (key == "kernel") {
        kernel_ = KernelSpec{};
        kernel_->name = words[0];
        kernel_->line = line_;
        kernelSeen_.clear();
        kernel_->grid = {};
        kernel_->block = {};
      } else {
        program_ = ProgramSpec{};
        program_->name = words[0];
        program_->line = line_;
      }
      return Status();
    }
    if (key == "end") return fail("'end' outside a kernel or program block");
    return fail("unknown directive '" + key + "'");
  }

  Status parseTriple(std::string_view rest, std::array<Expr, 3> &out, const std::string &key) {
    auto parts = splitTopLevelCommas(rest);
    if (parts.size() != 3) return fail("'" + key + "' needs three comma-separated expressions (x, y, z)");
    for (int i = 0; i < 3; ++i) {
      auto e = Expr::parse(parts[i]);
      if (!e) return fail(e.message());
      out[i] = *e;
    }
    return Status();
  }

  Status kernelLine(const std::string &key, std::string_view rest) {
    KernelSpec &k = *kernel_;
    auto words = splitWords(rest);
    if (key == "end") {
      if (!words.empty()) return fail("'end' takes nothing");
      if (k.entry.empty()) return fail(k.line, "kernel '" + k.name + "' has no 'entry'");
      if (k.grid[0].empty()) return fail(k.line, "kernel '" + k.name + "' has no 'grid'");
      if (k.block[0].empty()) return fail(k.line, "kernel '" + k.name + "' has no 'block'");
      m_.kernels.push_back(std::move(k));
      kernel_.reset();
      return Status();
    }
    if (key == "entry" || key == "role") {
      if (Status s = once(kernelSeen_, key); !s) return s;
      if (words.size() != 1) return fail("'" + key + "' takes exactly one name");
      (key == "entry" ? k.entry : k.role) = words[0];
      return Status();
    }
    if (key == "grid" || key == "block") {
      if (Status s = once(kernelSeen_, key); !s) return s;
      return parseTriple(rest, key == "grid" ? k.grid : k.block, key);
    }
    if (key == "shared") {
      if (Status s = once(kernelSeen_, key); !s) return s;
      auto e = Expr::parse(rest);
      if (!e) return fail(e.message());
      k.sharedBytes = *e;
      return Status();
    }
    if (key == "requires") return requiresLine(rest);
    if (key == "launch") {
      if (Status s = once(kernelSeen_, key); !s) return s;
      if (words.size() != 1 || words[0] != "programmatic")
        return fail("expected 'launch programmatic'");
      k.programmatic = true;
      return Status();
    }
    if (key == "tensor") return tensorLine(rest);
    if (key == "tensormap") return tensorMapLine(rest);
    if (key == "scalar") {
      if (words.size() != 2) return fail("expected 'scalar <name> <f32|i32|i64>'");
      ScalarParam s;
      s.name = words[0];
      if (!parseScalarType(words[1], s.type))
        return fail("unknown scalar type '" + words[1] + "' (expected f32, i32, i64)");
      k.scalars.push_back(s);
      return Status();
    }
    return fail("unknown directive '" + key + "' in kernel '" + k.name + "'");
  }

  // `requires <expression> ["<message>"]`: an expression holds no quote, so the first one opens the message, which
  // runs to the line's last character.
  Status requiresLine(std::string_view rest) {
    size_t quote = rest.find('"');
    std::string message;
    if (quote != std::string_view::npos) {
      std::string_view quoted = rest.substr(quote);
      if (quoted.size() < 2 || quoted.back() != '"')
        return fail("a requirement's message is one quoted string at the end of the line: "
                    "requires <expression> \"<message>\"");
      message = std::string(quoted.substr(1, quoted.size() - 2));
      rest = trim(rest.substr(0, quote));
    }
    auto e = Expr::parse(rest, /*allowLogic=*/true);
    if (!e) return fail(e.message());
    Constraint c(*e, std::move(message));
    if (auto placeholders = c.placeholders(); !placeholders) return fail(placeholders.message());
    kernel_->constraints.push_back(std::move(c));
    return Status();
  }

  Status tensorLine(std::string_view rest) {
    KernelSpec &k = *kernel_;
    if (!k.scalars.empty())
      return fail("tensor parameter after a scalar parameter (kernel ABI: all tensors come first)");
    if (!k.tensorMaps.empty())
      return fail("tensor parameter after a tensormap (kernel ABI: tensors, then tensor maps, then scalars)");
    size_t open = rest.find('['), close = rest.find(']');
    if (open == std::string_view::npos || close == std::string_view::npos || close < open)
      return fail("expected 'tensor <name> <dtype> <in|out|inout> [dims] attributes'");
    auto head = splitWords(rest.substr(0, open));
    if (head.size() != 3) return fail("expected 'tensor <name> <dtype> <in|out|inout> [dims] attributes'");
    TensorParam t;
    t.name = head[0];
    if (!parseDType(head[1], t.dtype))
      return fail("unknown dtype '" + head[1] + "' (expected bf16, f16, f32, i32)");
    if (head[2] == "in") t.direction = Direction::In;
    else if (head[2] == "out") t.direction = Direction::Out;
    else if (head[2] == "inout") t.direction = Direction::InOut;
    else return fail("unknown direction '" + head[2] + "' (expected in, out, inout)");
    std::string_view dimText = trim(rest.substr(open + 1, close - open - 1));
    if (!dimText.empty()) {
      for (auto d : splitTopLevelCommas(dimText)) {
        int64_t v;
        if (parseInt(d, v)) {
          t.dims.push_back(Dim::lit(v));
          continue;
        }
        bool identifier = !d.empty() && (std::isalpha(static_cast<unsigned char>(d[0])) || d[0] == '_');
        for (char c : d)
          identifier = identifier && (std::isalnum(static_cast<unsigned char>(c)) || c == '_');
        if (identifier) {
          t.dims.push_back(Dim::sym(std::string(d)));
          continue;
        }
        auto expr = Expr::parse(d);
        if (d.empty() || !expr.ok())
          return fail("bad dim '" + std::string(d) + "' of tensor '" + t.name +
                      "' (an integer, a symbol or an expression over symbols)");
        // (a symbol or a literal in parentheses is that symbol or literal: it binds like the bare spelling)
        t.dims.push_back(Dim::fromExpr(*expr));
      }
    }
    if (t.dims.size() > size_t(kMaxTensorRank))
      return fail("tensor '" + t.name + "' has rank " + std::to_string(t.dims.size()) + " (at most 4)");
    std::set<std::string> seen;
    for (const auto &attr : splitWords(rest.substr(close + 1))) {
      size_t eq = attr.find('=');
      std::string name = attr.substr(0, eq);
      if (!seen.insert(name).second) return fail("attribute '" + name + "' given twice");
      if (name == "contiguous" && eq == std::string::npos) {
        t.contiguous = true;
        continue;
      }
      if (name == "index32" && eq == std::string::npos) {
        t.index32 = true;
        continue;
      }
      int64_t v;
      if ((name == "align" || name == "stride_multiple") && eq != std::string::npos &&
          parseInt(std::string_view(attr).substr(eq + 1), v) && v >= 1) {
        if (name == "align") {
          if ((v & (v - 1)) != 0) return fail("align=" + std::to_string(v) + " is not a power of two");
          t.alignBytes = v;
        } else {
          t.strideMultiple = v;
        }
        continue;
      }
      return fail("bad tensor attribute '" + attr + "' (expected align=<bytes>, contiguous, stride_multiple=<n>, index32)");
    }
    k.tensors.push_back(std::move(t));
    return Status();
  }

  // tensormap <name> of <tensor> box [<e0>, ...] swizzle <none|32|64|128>.
  // The rules that need the tensor (rank, box limits, swizzle span) are in
  // validateManifest, which names this line through TensorMapParam::line.
  Status tensorMapLine(std::string_view rest) {
    KernelSpec &k = *kernel_;
    static const char *kSyntax = "expected 'tensormap <name> of <tensor> box [<extent>, ...] swizzle <none|32|64|128>'";
    if (!k.scalars.empty())
      return fail("tensormap after a scalar parameter (kernel ABI: tensors, then tensor maps, then scalars)");
    size_t open = rest.find('['), close = rest.find(']');
    if (open == std::string_view::npos || close == std::string_view::npos || close < open) return fail(kSyntax);
    auto head = splitWords(rest.substr(0, open));
    auto tail = splitWords(rest.substr(close + 1));
    if (head.size() != 4 || head[1] != "of" || head[3] != "box" || tail.size() != 2 || tail[0] != "swizzle")
      return fail(kSyntax);
    TensorMapParam m;
    m.name = head[0];
    m.tensor = head[2];
    m.line = line_;
    std::string_view boxText = trim(rest.substr(open + 1, close - open - 1));
    if (!boxText.empty())
      for (auto e : splitTopLevelCommas(boxText)) {
        int64_t v;
        if (!parseInt(e, v))
          return fail("box extent '" + std::string(e) + "' of tensor map '" + m.name +
                      "' is not an integer literal (1.." + std::to_string(kMaxTensorMapBox) + ")");
        m.box.push_back(v);
      }
    if (!parseSwizzle(tail[1], m.swizzle))
      return fail("unknown swizzle '" + tail[1] + "' of tensor map '" + m.name + "' (expected none, 32, 64, 128)");
    k.tensorMaps.push_back(std::move(m));
    return Status();
  }

  Status programLine(const std::string &key, std::string_view rest) {
    ProgramSpec &p = *program_;
    auto words = splitWords(rest);
    if (key == "end") {
      if (!words.empty()) return fail("'end' takes nothing");
      m_.programs.push_back(std::move(p));
      program_.reset();
      return Status();
    }
    if (key == "kernel") {
      if (words.size() != 1) return fail("expected 'kernel <name>'");
      p.kernels.push_back(words[0]);
      return Status();
    }
    if (key == "scratch") {
      if (words.empty() || words.size() > 2 || (words.size() == 2 && words[1] != "zero"))
        return fail("expected 'scratch <tensor> [zero]'");
      p.scratch.push_back({words[0], words.size() == 2});
      return Status();
    }
    if (key == "meta") {
      if (words.size() != 2) return fail("expected 'meta <key> <value>'");
      if (!p.meta.emplace(words[0], words[1]).second)
        return fail("meta key '" + words[0] + "' given twice in program '" + p.name + "'");
      return Status();
    }
    return fail("unknown directive '" + key + "' in program '" + p.name + "'");
  }

  std::string_view text_;
  int line_ = 0;
  bool sawHeader_ = false;
  Manifest m_;
  std::optional<KernelSpec> kernel_;
  std::optional<ProgramSpec> program_;
  std::set<std::string> headerSeen_, kernelSeen_;
};

} // namespace

Result<Manifest> parseManifest(std::string_view text) { return Parser(text).run(); }

} // namespace flashc::rt
