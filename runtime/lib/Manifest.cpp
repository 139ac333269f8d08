// Manifest types: names of enums, lookups, equality and cross-reference validation.
#include "flashc/runtime/Manifest.h"
#include "flashc/runtime/Arch.h"
#include "flashc/runtime/BundleIndex.h"

#include <cctype>
#include <map>
#include <set>

namespace flashc::rt {

const char *dtypeName(DType t) {
  switch (t) {
  case DType::BF16: return "bf16";
  case DType::F16: return "f16";
  case DType::F32: return "f32";
  case DType::I32: return "i32";
  }
  return "?";
}

int64_t dtypeSize(DType t) { return (t == DType::BF16 || t == DType::F16) ? 2 : 4; }

bool parseDType(std::string_view s, DType &out) {
  for (DType t : {DType::BF16, DType::F16, DType::F32, DType::I32})
    if (s == dtypeName(t)) { out = t; return true; }
  return false;
}

const char *scalarTypeName(ScalarType t) {
  switch (t) {
  case ScalarType::F32: return "f32";
  case ScalarType::I32: return "i32";
  case ScalarType::I64: return "i64";
  }
  return "?";
}

bool parseScalarType(std::string_view s, ScalarType &out) {
  for (ScalarType t : {ScalarType::F32, ScalarType::I32, ScalarType::I64})
    if (s == scalarTypeName(t)) { out = t; return true; }
  return false;
}

const char *directionName(Direction d) {
  switch (d) {
  case Direction::In: return "in";
  case Direction::Out: return "out";
  case Direction::InOut: return "inout";
  }
  return "?";
}

const char *swizzleName(TensorMapSwizzle s) {
  switch (s) {
  case TensorMapSwizzle::None: return "none";
  case TensorMapSwizzle::B32: return "32";
  case TensorMapSwizzle::B64: return "64";
  case TensorMapSwizzle::B128: return "128";
  }
  return "?";
}

bool parseSwizzle(std::string_view s, TensorMapSwizzle &out) {
  for (TensorMapSwizzle t : {TensorMapSwizzle::None, TensorMapSwizzle::B32, TensorMapSwizzle::B64, TensorMapSwizzle::B128})
    if (s == swizzleName(t)) { out = t; return true; }
  return false;
}

Dim Dim::fromExpr(Expr e) {
  int64_t literal = 0;
  std::string name;
  if (e.isLiteral(&literal)) return lit(literal);
  if (e.isSymbol(&name) && name != kSymbolSmCount) return sym(std::move(name));
  return expression(std::move(e));
}

std::string Dim::str() const {
  if (isSymbol()) return symbol;
  if (!isExpression()) return std::to_string(value);
  return expr.isSymbol() ? "(" + expr.str() + ")" : expr.str();
}

Result<int64_t> Dim::evaluate(const SymbolTable &symbols) const {
  if (isExpression()) return expr.evaluate(symbols);
  if (!isSymbol()) return value;
  auto it = symbols.find(symbol);
  if (it == symbols.end()) return makeError(ErrorCode::InvalidArgument, "symbol " + symbol + " is not bound");
  return it->second;
}

std::string Constraint::str() const { return message.empty() ? expr.str() : expr.str() + " \"" + message + "\""; }

Result<std::vector<Expr>> Constraint::placeholders() const {
  std::vector<Expr> out;
  auto bad = [&](const std::string &what) {
    return makeError(ErrorCode::InvalidBundle, "requirement message \"" + message + "\": " + what);
  };
  for (size_t i = 0; i < message.size(); ++i) {
    if (message[i] == '}') return bad("'}' without '{' (a placeholder is {<expression>})");
    if (message[i] != '{') continue;
    size_t close = message.find_first_of("{}", i + 1);
    if (close == std::string::npos || message[close] != '}') return bad("'{' without '}'");
    auto e = Expr::parse(std::string_view(message).substr(i + 1, close - i - 1));
    if (!e) return bad("placeholder {" + message.substr(i + 1, close - i - 1) + "}: " + e.message());
    out.push_back(*e);
    i = close;
  }
  return out;
}

Result<std::string> Constraint::explain(const SymbolTable &symbols) const {
  auto exprs = placeholders();
  if (!exprs) return exprs.error();
  std::string text;
  size_t next = 0;
  for (size_t i = 0; i < message.size(); ++i) {
    if (message[i] != '{') {
      text += message[i];
      continue;
    }
    auto v = (*exprs)[next++].evaluate(symbols);
    if (!v) return v.error();
    text += std::to_string(*v);
    i = message.find('}', i + 1);  // (placeholders() found it)
  }
  return text;
}

bool TensorParam::operator==(const TensorParam &o) const {
  return name == o.name && dtype == o.dtype && direction == o.direction && dims == o.dims &&
         requiredAlignment() == o.requiredAlignment() && contiguous == o.contiguous &&
         strideMultiple == o.strideMultiple && index32 == o.index32;
}

const TensorParam *KernelSpec::findTensor(std::string_view n) const {
  for (const auto &t : tensors)
    if (t.name == n) return &t;
  return nullptr;
}
const ScalarParam *KernelSpec::findScalar(std::string_view n) const {
  for (const auto &s : scalars)
    if (s.name == n) return &s;
  return nullptr;
}

const TensorMapParam *KernelSpec::findTensorMap(std::string_view n) const {
  for (const auto &m : tensorMaps)
    if (m.name == n) return &m;
  return nullptr;
}

bool KernelSpec::operator==(const KernelSpec &o) const {
  return name == o.name && entry == o.entry && role == o.role && tensors == o.tensors &&
         tensorMaps == o.tensorMaps && scalars == o.scalars && grid == o.grid && block == o.block &&
         sharedBytes == o.sharedBytes && constraints == o.constraints && programmatic == o.programmatic;
}

const KernelSpec *Manifest::findKernel(std::string_view n) const {
  for (const auto &k : kernels)
    if (k.name == n) return &k;
  return nullptr;
}
const ProgramSpec *Manifest::findProgram(std::string_view n) const {
  for (const auto &p : programs)
    if (p.name == n) return &p;
  return nullptr;
}

Status checkDeviceLibrary(const Manifest &m, const std::string &fingerprint, const std::string &dir) {
  if (m.deviceLibrary.empty() || m.deviceLibrary == fingerprint) return Status();
  return makeError(ErrorCode::InvalidBundle,
                   "the bundle's source was generated against device library " + m.deviceLibrary +
                       ", not the one this runtime compiles with (" + fingerprint + ", " + (dir.empty() ? "not found" : dir) +
                       "): rebuild the bundle with the flashc of this runtime, or run it where its cubins load");
}

bool Manifest::operator==(const Manifest &o) const {
  return formatVersion == o.formatVersion && flashcVersion == o.flashcVersion &&
         source == o.source && deviceLibrary == o.deviceLibrary && nvrtcOptions == o.nvrtcOptions && archs == o.archs &&
         cubins == o.cubins && kernels == o.kernels && programs == o.programs;
}

namespace {

bool isIdentifier(const std::string &s) {
  if (s.empty() || !(std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_')) return false;
  for (char c : s)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_')) return false;
  return true;
}

std::string at(int line) {
  return line > 0 ? "manifest.flashc:" + std::to_string(line) + ": " : "manifest: ";
}

Error invalid(int line, const std::string &what) {
  return makeError(ErrorCode::InvalidBundle, at(line) + what);
}

bool isIntegerScalar(ScalarType t) { return t == ScalarType::I32 || t == ScalarType::I64; }

// The static rules of a tensor map (the TMA unit's limits on the box and the
// swizzle); what depends on the bound tensor is checked at launch. Errors name
// the tensormap line when it was parsed.
Status validateTensorMap(const KernelSpec &k, const TensorMapParam &m, std::set<std::string> &names) {
  const int line = m.line > 0 ? m.line : k.line;
  const std::string who = "kernel '" + k.name + "': tensor map '" + m.name + "'";
  if (!isIdentifier(m.name)) return invalid(line, "kernel '" + k.name + "': bad tensor map name '" + m.name + "'");
  if (!names.insert(m.name).second) return invalid(line, "kernel '" + k.name + "': duplicate parameter '" + m.name + "'");
  const TensorParam *t = k.findTensor(m.tensor);
  if (!t) return invalid(line, who + ": unknown tensor '" + m.tensor + "' (a tensor parameter of the same kernel)");
  const int64_t rank = int64_t(t->dims.size());
  if (rank < 1) return invalid(line, who + ": tensor '" + t->name + "' has rank 0 (a tensor map needs rank 1 or more)");
  if (int64_t(m.box.size()) != rank)
    return invalid(line, who + ": box has " + std::to_string(m.box.size()) + " extents but tensor '" + t->name +
                             "' has rank " + std::to_string(rank) + " (one extent per dim)");
  for (size_t i = 0; i < m.box.size(); ++i)
    if (m.box[i] < 1 || m.box[i] > kMaxTensorMapBox)
      return invalid(line, who + ": box extent " + std::to_string(m.box[i]) + " of dim " + std::to_string(i) +
                               " is outside 1.." + std::to_string(kMaxTensorMapBox));
  // The TMA unit moves the inner box dim in 16-byte units, and a swizzle
  // permutes 16-byte chunks within its span: the inner row must fit in it.
  const int64_t innerBytes = m.box.back() * dtypeSize(t->dtype);
  if (innerBytes % 16 != 0)
    return invalid(line, who + ": inner box extent " + std::to_string(m.box.back()) + " x " +
                             std::to_string(dtypeSize(t->dtype)) + " bytes (" + dtypeName(t->dtype) + ") = " +
                             std::to_string(innerBytes) + " bytes is not a multiple of 16");
  const int64_t span = int64_t(m.swizzle);
  if (span > 0 && innerBytes > span)
    return invalid(line, who + ": inner box extent " + std::to_string(m.box.back()) + " x " +
                             std::to_string(dtypeSize(t->dtype)) + " bytes = " + std::to_string(innerBytes) +
                             " bytes exceeds the " + std::to_string(span) + "-byte swizzle span");
  return Status();
}

Status validateKernel(const KernelSpec &k) {
  std::string who = "kernel '" + k.name + "': ";
  if (!isIdentifier(k.name)) return invalid(k.line, "kernel name '" + k.name + "' is not an identifier");
  if (!isIdentifier(k.entry)) return invalid(k.line, who + "missing or bad 'entry'");
  if (!isIdentifier(k.role)) return invalid(k.line, who + "bad role '" + k.role + "'");
  std::set<std::string> names, bound = {kSymbolSmCount};
  auto reserved = [&](const std::string &name) {
    return invalid(k.line, who + "'" + name + "' is reserved (the runtime binds it to the device's multiprocessor count)");
  };
  for (const auto &t : k.tensors) {
    if (!isIdentifier(t.name)) return invalid(k.line, who + "bad parameter name '" + t.name + "'");
    if (t.name == kSymbolSmCount) return reserved(t.name);
    if (!names.insert(t.name).second) return invalid(k.line, who + "duplicate parameter '" + t.name + "'");
    if (t.dims.size() > size_t(kMaxTensorRank))
      return invalid(k.line, who + "tensor '" + t.name + "' has rank " + std::to_string(t.dims.size()) +
                                 " (at most 4)");
    for (const auto &d : t.dims) {
      if (d.isExpression()) continue;  // binds nothing; its symbols are checked below
      if (d.isSymbol() && !isIdentifier(d.symbol))
        return invalid(k.line, who + "tensor '" + t.name + "' has bad dim '" + d.symbol + "'");
      if (d.isSymbol() && d.symbol == kSymbolSmCount) return reserved(d.symbol);
      if (!d.isSymbol() && d.value < 0)
        return invalid(k.line, who + "tensor '" + t.name + "' has a negative dim");
      if (d.isSymbol()) bound.insert(d.symbol);
    }
    int64_t a = t.requiredAlignment();
    if (a <= 0 || (a & (a - 1)) != 0)
      return invalid(k.line, who + "tensor '" + t.name + "' align=" + std::to_string(a) + " is not a power of two");
    if (t.strideMultiple < 1)
      return invalid(k.line, who + "tensor '" + t.name + "' stride_multiple must be >= 1");
  }
  for (const auto &m : k.tensorMaps)
    if (Status s = validateTensorMap(k, m, names); !s) return s;
  for (const auto &s : k.scalars) {
    if (!isIdentifier(s.name)) return invalid(k.line, who + "bad parameter name '" + s.name + "'");
    if (!names.insert(s.name).second) return invalid(k.line, who + "duplicate parameter '" + s.name + "'");
    if (s.name == kSymbolSmCount) return reserved(s.name);
    if (isIntegerScalar(s.type)) bound.insert(s.name);
  }
  auto checkExpr = [&](const Expr &e, const char *what) -> Status {
    if (e.empty()) return invalid(k.line, who + "missing '" + what + "'");
    std::set<std::string> used;
    e.collectSymbols(used);
    for (const auto &u : used)
      if (!bound.count(u))
        return invalid(k.line, who + what + " expression '" + e.str() + "' uses symbol '" + u +
                                   "' that no tensor dim or integer scalar binds");
    return Status();
  };
  for (int i = 0; i < 3; ++i) {
    if (Status s = checkExpr(k.grid[i], "grid"); !s) return s;
    if (Status s = checkExpr(k.block[i], "block"); !s) return s;
  }
  if (Status s = checkExpr(k.sharedBytes, "shared"); !s) return s;
  for (const auto &c : k.constraints) {
    if (Status s = checkExpr(c.expr, "requires"); !s) return s;
    // A message is one line of text between quotes: the writer writes it as is.
    for (char ch : c.message)
      if (ch == '"' || std::iscntrl(static_cast<unsigned char>(ch)))
        return invalid(k.line, who + "requirement message \"" + c.message + "\" holds a quote or a control character");
    auto placeholders = c.placeholders();
    if (!placeholders) return invalid(k.line, who + placeholders.message());
    for (const auto &p : *placeholders)
      if (Status s = checkExpr(p, "requires message"); !s) return s;
  }
  for (const auto &t : k.tensors)
    for (const auto &d : t.dims)
      if (d.isExpression()) {
        if (Status s = checkExpr(d.expr, "dim"); !s) return s;
        auto constant = d.expr.isConstant() ? d.expr.evaluate({}) : Result<int64_t>(int64_t(0));
        if (!constant || *constant < 0)
          return invalid(k.line, who + "tensor '" + t.name + "' has dim '" + d.expr.str() + "', which is " +
                                     (constant ? "negative" : constant.error().message));
      }

  // What is wrong whatever the arguments are -- a division by a constant
  // zero, a constant grid/shared below 0, a constant block below 1, a value
  // the launch cannot pass (CUDA takes 32-bit unsigned sizes) -- is reported
  // when the bundle is opened, not at the first launch. Device limits are
  // checked at launch.
  static const char *axis[] = {"x", "y", "z"};
  constexpr int64_t kMaxLaunchValue = 4294967295; // uint32
  auto constant = [&](const Expr &e, const std::string &what, int64_t lo, int64_t hi, int64_t *out) -> Status {
    if (std::string fault = e.constantFault(); !fault.empty())
      return invalid(k.line, who + what + " expression " + fault);
    if (!e.isConstant()) return Status();
    int64_t v = *e.evaluate({});
    if (v < lo || v > hi)
      return invalid(k.line, who + what + " = " + std::to_string(v) + " is outside " + std::to_string(lo) + ".." +
                                 std::to_string(hi));
    if (out) *out = v;
    return Status();
  };
  for (int i = 0; i < 3; ++i) {
    if (Status s = constant(k.grid[i], std::string("grid ") + axis[i], 0, kMaxLaunchValue, nullptr); !s) return s;
    if (Status s = constant(k.block[i], std::string("block ") + axis[i], 1, kMaxLaunchValue, nullptr); !s) return s;
  }
  if (Status s = constant(k.sharedBytes, "shared", 0, kMaxLaunchValue, nullptr); !s) return s;
  for (const auto &c : k.constraints) {
    int64_t holds = 1;
    if (Status s = constant(c.expr, "requires", INT64_MIN, INT64_MAX, &holds); !s) return s;
    if (holds == 0) return invalid(k.line, who + "requirement '" + c.expr.str() + "' never holds");
  }
  return Status();
}

// A program parameter seen in several kernels: they must describe the same argument.
struct SharedParam {
  bool isTensor;
  const TensorParam *tensor;
  const ScalarParam *scalar;
  std::string kernel;
};

Status validateProgram(const Manifest &m, const ProgramSpec &p) {
  std::string who = "program '" + p.name + "': ";
  if (!isIdentifier(p.name)) return invalid(p.line, "program name '" + p.name + "' is not an identifier");
  if (m.findKernel(p.name)) return invalid(p.line, who + "name clashes with a kernel");
  if (p.kernels.empty()) return invalid(p.line, who + "lists no kernels");
  std::map<std::string, SharedParam> params;
  for (const auto &kn : p.kernels) {
    const KernelSpec *k = m.findKernel(kn);
    if (!k) return invalid(p.line, who + "unknown kernel '" + kn + "'");
    for (const auto &t : k->tensors) {
      auto [it, fresh] = params.emplace(t.name, SharedParam{true, &t, nullptr, kn});
      if (fresh) continue;
      const SharedParam &prev = it->second;
      if (!prev.isTensor || prev.tensor->dtype != t.dtype || prev.tensor->dims.size() != t.dims.size())
        return invalid(p.line, who + "parameter '" + t.name + "' differs between kernels '" + prev.kernel +
                                   "' and '" + kn + "' (kind, dtype or rank)");
    }
    for (const auto &s : k->scalars) {
      auto [it, fresh] = params.emplace(s.name, SharedParam{false, nullptr, &s, kn});
      if (fresh) continue;
      const SharedParam &prev = it->second;
      if (prev.isTensor || prev.scalar->type != s.type)
        return invalid(p.line, who + "parameter '" + s.name + "' differs between kernels '" + prev.kernel +
                                   "' and '" + kn + "' (kind or type)");
    }
  }
  std::set<std::string> scratchNames;
  for (const auto &sc : p.scratch) {
    auto it = params.find(sc.name);
    if (it == params.end() || !it->second.isTensor)
      return invalid(p.line, who + "scratch '" + sc.name + "' is not a tensor parameter of its kernels");
    if (!scratchNames.insert(sc.name).second)
      return invalid(p.line, who + "scratch '" + sc.name + "' listed twice");
  }
  // Symbols the user's arguments bind (scratch tensors are not passed by the user).
  std::set<std::string> userBound;
  for (const auto &[name, sp] : params) {
    if (scratchNames.count(name)) continue;
    if (sp.isTensor) {
      for (const auto &d : sp.tensor->dims)
        if (d.isSymbol()) userBound.insert(d.symbol);
    } else if (isIntegerScalar(sp.scalar->type)) {
      userBound.insert(name);
    }
  }
  for (const auto &sc : p.scratch)
    for (const auto &d : params[sc.name].tensor->dims)
      if (d.isSymbol() && !userBound.count(d.symbol))
        return invalid(p.line, who + "scratch '" + sc.name + "' dim '" + d.symbol +
                                   "' is not determined by the user's arguments");
  return Status();
}

/// Each arch's cubins hold every kernel exactly once: one cubin of the whole
/// source, or cubins listing their kernels (never both); no file twice.
Status validateCubins(const Manifest &m) {
  std::set<std::string> files;
  // arch -> kernel -> the file holding it
  std::map<std::string, std::map<std::string, std::string>> holder;
  std::map<std::string, int> firstLine; // arch -> its first cubin line (for errors about the whole arch)
  for (const auto &c : m.cubins) {
    firstLine.emplace(c.arch, c.line);
    if (!parseArch(c.arch)) return invalid(c.line, "cubin has bad architecture '" + c.arch + "'");
    if (c.file.empty() || c.file.find('/') != std::string::npos)
      return invalid(c.line, "cubin file '" + c.file + "' must be a plain file name in the bundle");
    if (!files.insert(c.file).second) return invalid(c.line, "cubin file '" + c.file + "' is listed twice");
    auto &held = holder[c.arch];
    std::vector<std::string> kernels = c.kernels;
    if (c.holdsAllKernels())
      for (const auto &k : m.kernels) kernels.push_back(k.name);
    for (const auto &name : kernels) {
      if (!m.findKernel(name))
        return invalid(c.line, "cubin " + c.file + " is for kernel '" + name + "', which the manifest does not declare");
      auto [it, fresh] = held.emplace(name, c.file);
      if (!fresh)
        return invalid(c.line, "kernel '" + name + "' is in two " + c.arch + " cubins (" + it->second + " and " +
                                   c.file + "); each arch's cubins hold each kernel once");
    }
  }
  for (const auto &[arch, held] : holder)
    for (const auto &k : m.kernels)
      if (!held.count(k.name))
        return invalid(firstLine[arch], "the " + arch + " cubins hold no code for kernel '" + k.name +
                              "' (each arch's cubins must hold every kernel)");
  return Status();
}

} // namespace

std::string unsupportedVersion(int64_t version) {
  return "bundle format version " + std::to_string(version) + " is not supported (this runtime reads versions " +
         std::to_string(kBundleFormatVersion) + " and " + std::to_string(kBundleIndexVersion) + ")";
}

bool callerParams(const Manifest &m, std::string_view name, std::vector<CallerParam> &out) {
  std::vector<const KernelSpec *> kernels;
  std::set<std::string> seen;  // (scratch first: the runtime allocates it)
  if (const KernelSpec *k = m.findKernel(name)) {
    kernels.push_back(k);
  } else if (const ProgramSpec *p = m.findProgram(name)) {
    for (const auto &kn : p->kernels)
      if (const KernelSpec *k = m.findKernel(kn)) kernels.push_back(k);
    for (const auto &s : p->scratch) seen.insert(s.name);
  } else {
    return false;
  }
  for (const KernelSpec *k : kernels)
    for (const auto &t : k->tensors) {
      if (seen.insert(t.name).second) {
        out.push_back({&t, nullptr, t.direction});
        continue;
      }
      for (CallerParam &p : out)
        if (p.tensor && p.tensor->name == t.name && p.direction == Direction::In && t.direction != Direction::In)
          p.direction = Direction::InOut;
    }
  for (const KernelSpec *k : kernels)
    for (const auto &s : k->scalars)
      if (seen.insert(s.name).second) out.push_back({nullptr, &s});
  return true;
}

Status validateManifest(const Manifest &m) {
  if (m.formatVersion != kBundleFormatVersion)
    return makeError(ErrorCode::Unsupported, m.formatVersion == kBundleIndexVersion
                                                 ? "a manifest is format version 1 (version 2 is a multi-architecture "
                                                   "bundle index)"
                                                 : unsupportedVersion(m.formatVersion));
  if (m.source.empty()) return invalid(0, "no 'source'");
  // A plain name, as a cubin's: the source is read from the bundle's directory, never through a path that leads
  // out of it (a link placed in the bundle is the bundle author's choice).
  if (m.source.find('/') != std::string::npos || m.source == "." || m.source == "..")
    return invalid(0, "source '" + m.source + "' must be a plain file name in the bundle");
  if (m.archs.empty()) return invalid(0, "no 'arch' line (architectures the source targets)");
  for (const auto &a : m.archs)
    if (!parseArch(a)) return invalid(0, "bad architecture '" + a + "' (expected e.g. sm_80, sm_90a)");
  if (m.kernels.empty()) return invalid(0, "declares no kernels");
  std::set<std::string> names;
  for (const auto &k : m.kernels) {
    if (!names.insert(k.name).second) return invalid(k.line, "duplicate kernel '" + k.name + "'");
    if (Status s = validateKernel(k); !s) return s;
  }
  for (const auto &p : m.programs) {
    if (!names.insert(p.name).second) return invalid(p.line, "duplicate program '" + p.name + "'");
    if (Status s = validateProgram(m, p); !s) return s;
  }
  return validateCubins(m);
}

} // namespace flashc::rt
