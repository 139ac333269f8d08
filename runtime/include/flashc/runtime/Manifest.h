// The bundle manifest (manifest.flashc): data structures, parser and writer.
// Library flashc_bundle: no CUDA dependency, linked by both compiler and runtime.
// The text syntax is specified in docs/bundle.md.
#pragma once

#include "flashc/runtime/Expr.h"
#include "flashc/runtime/Result.h"

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace flashc::rt {

/// The manifest format version this code reads and writes. (Version 2 is the
/// multi-architecture bundle index, flashc/runtime/BundleIndex.h, whose
/// variants are version-1 bundles.)
constexpr int kBundleFormatVersion = 1;
constexpr int kMaxTensorRank = 4;

enum class DType { BF16, F16, F32, I32 };
enum class ScalarType { F32, I32, I64 };
enum class Direction { In, Out, InOut };

const char *dtypeName(DType t);          // "bf16", ...
int64_t dtypeSize(DType t);              // bytes per element
bool parseDType(std::string_view s, DType &out);
const char *scalarTypeName(ScalarType t);
bool parseScalarType(std::string_view s, ScalarType &out);
const char *directionName(Direction d);

/// One dimension of a tensor parameter: an integer literal, a size symbol, or
/// an expression over symbols that other dims or scalars bind (a workspace of
/// ceil(Sq / 64) rows: `cdiv(Sq, 64)`), which binds nothing and is checked
/// (user tensors) or evaluated (scratch) once the symbols are bound.
struct Dim {
  std::string symbol; // empty for a literal or an expression
  int64_t value = 0;  // the literal when symbol and expr are empty
  Expr expr;          // non-empty: an expression dim
  bool isSymbol() const { return !symbol.empty(); }
  bool isExpression() const { return !expr.empty(); }
  /// The manifest's text: an expression that is a bare symbol (only num_sms stays one: fromExpr) in parentheses, so
  /// that it reads back as an expression.
  std::string str() const;
  static Dim lit(int64_t v) { return Dim{"", v, Expr()}; }
  static Dim sym(std::string s) { return Dim{std::move(s), 0, Expr()}; }
  static Dim expression(Expr e) { return Dim{"", 0, std::move(e)}; }
  /// `e` as the dim the manifest's text reads back: a literal or a bare symbol (`(N)`) as such (a symbol binds, an
  /// expression only checks), anything else as an expression; the reserved num_sms, which no dim may bind, stays an
  /// expression.
  static Dim fromExpr(Expr e);
  /// Its value under `symbols` (a literal's, a symbol's, an expression's).
  Result<int64_t> evaluate(const SymbolTable &symbols) const;
  bool operator==(const Dim &o) const { return symbol == o.symbol && value == o.value && expr == o.expr; }
};

struct TensorParam {
  std::string name;
  DType dtype = DType::F32;
  Direction direction = Direction::In;
  std::vector<Dim> dims;        // rank = dims.size() <= kMaxTensorRank
  int64_t alignBytes = 0;       // 0 = element size
  bool contiguous = false;      // last dim stride must be 1
  int64_t strideMultiple = 1;   // every stride but the last is a multiple of this
  bool index32 = false;         // every element's offset (sum of (shape_i - 1) * stride_i) below 2^31: the kernels
                                // index it in 32 bits (a mask or score modifier's tensors)
  int64_t requiredAlignment() const { return alignBytes ? alignBytes : dtypeSize(dtype); }
  bool operator==(const TensorParam &o) const;
};

/// Shared-memory swizzle of a tensor map (the span in bytes; None = 0).
enum class TensorMapSwizzle { None = 0, B32 = 32, B64 = 64, B128 = 128 };
const char *swizzleName(TensorMapSwizzle s); // "none", "32", "64", "128"
bool parseSwizzle(std::string_view s, TensorMapSwizzle &out);

constexpr int64_t kMaxTensorMapBox = 256; // TMA box extent limit per dim
// The symbol the runtime binds to the device's multiprocessor count in grid,
// block, shared and requires expressions (a persistent kernel's grid); no
// parameter or dim may take the name.
inline constexpr const char *kSymbolSmCount = "num_sms";

/// A TMA tensor map the runtime derives from a tensor parameter's bound
/// pointer, shape and strides (the user never passes it). Kernel ABI: passed
/// by value (128 bytes) after all tensors and before all scalars.
struct TensorMapParam {
  std::string name;
  std::string tensor;       // a tensor parameter of the same kernel
  std::vector<int64_t> box; // one extent per tensor dim, in the tensor's dim order (outer to inner)
  TensorMapSwizzle swizzle = TensorMapSwizzle::None;
  int line = 0; // manifest line (0 when built in code); not compared
  bool operator==(const TensorMapParam &o) const {
    return name == o.name && tensor == o.tensor && box == o.box && swizzle == o.swizzle;
  }
};

struct ScalarParam {
  std::string name;
  ScalarType type = ScalarType::F32;
  bool operator==(const ScalarParam &o) const { return name == o.name && type == o.type; }
};

/// A `requires` line: an expression the launch needs non-zero, and what its error says when it is 0.
struct Constraint {
  Expr expr;
  /// The error in the caller's terms, written after the expression in double quotes (`requires mask_t0_d0 >= Sq
  /// "argument 'mask_t0' dim 0 is {mask_t0_d0}, ..."`): each `{<expression>}` in it stands for that expression's
  /// value at launch. Empty: the runtime's own message (the requirement and its symbols' values), which names
  /// symbols a caller never wrote.
  std::string message;
  Constraint() = default;
  /// (implicit: an expression is a requirement without a message)
  Constraint(Expr e, std::string m = "") : expr(std::move(e)), message(std::move(m)) {}
  /// The line's text after `requires`: the expression, then the quoted message if any.
  std::string str() const;
  /// The expressions of the message's placeholders, in order; an error when a `{` is not closed, a `}` not
  /// opened, or a placeholder does not parse.
  Result<std::vector<Expr>> placeholders() const;
  /// The message with each placeholder replaced by its value under `symbols`.
  Result<std::string> explain(const SymbolTable &symbols) const;
  bool operator==(const Constraint &o) const { return expr == o.expr && message == o.message; }
};

struct KernelSpec {
  std::string name;   // what users look up
  std::string entry;  // extern "C" __global__ symbol
  std::string role = "forward";
  std::vector<TensorParam> tensors; // ABI order: tensors, then tensor maps, then scalars
  std::vector<TensorMapParam> tensorMaps;
  std::vector<ScalarParam> scalars;
  std::array<Expr, 3> grid;
  std::array<Expr, 3> block;
  Expr sharedBytes = Expr::literal(0);
  std::vector<Constraint> constraints; // `requires` lines
  /// `launch programmatic`: in a program, launched with programmatic stream serialization after the kernel
  /// before it, so that its blocks start (and run their prologue) while that kernel finishes; the kernel waits
  /// for it (griddepcontrol.wait) before touching memory.
  bool programmatic = false;
  int line = 0; // manifest line of `kernel` (0 when built in code); not compared

  const TensorParam *findTensor(std::string_view n) const;
  const ScalarParam *findScalar(std::string_view n) const;
  const TensorMapParam *findTensorMap(std::string_view n) const;
  bool operator==(const KernelSpec &o) const;
};

struct ScratchSpec {
  std::string name;  // a tensor parameter of one of the program's kernels
  bool zeroFill = false;
  bool operator==(const ScratchSpec &o) const { return name == o.name && zeroFill == o.zeroFill; }
};

struct ProgramSpec {
  std::string name;
  std::vector<std::string> kernels; // launch order
  std::vector<ScratchSpec> scratch;
  /// What the program computes, for tools and bindings (`meta <key> <value>`):
  /// e.g. op=attention_forward, scale, window_left, backward=<program>. The
  /// runtime reads one key: `status <scratch>`, a table check's verdict it
  /// turns into the launch's error (a decode program's cache lengths and pages).
  std::map<std::string, std::string> meta;
  int line = 0;
  bool operator==(const ProgramSpec &o) const {
    return name == o.name && kernels == o.kernels && scratch == o.scratch && meta == o.meta;
  }
};

/// A compiled image of (part of) the source for one architecture. An arch's
/// code is either one cubin holding every kernel (`kernels` empty: the whole
/// source compiled at once) or several, each holding the kernels it lists
/// (flashc compiles one translation unit per kernel, in parallel): together
/// they hold every kernel of the manifest exactly once.
struct CubinSpec {
  std::string arch; // e.g. "sm_90a"
  std::string file; // relative to the bundle directory
  std::vector<std::string> kernels; // the kernels it holds; empty: all of them
  int line = 0; // manifest line (0 when built in code); not compared
  bool holdsAllKernels() const { return kernels.empty(); }
  bool operator==(const CubinSpec &o) const { return arch == o.arch && file == o.file && kernels == o.kernels; }
};

struct Manifest {
  int formatVersion = kBundleFormatVersion;
  std::string flashcVersion = "unknown";
  std::string source = "kernels.cu";
  /// The fingerprint (directoryFingerprint) of the device library the source was generated against; empty when not
  /// recorded (older bundles). The runtime refuses to compile the source against headers of another fingerprint.
  std::string deviceLibrary;
  std::vector<std::string> nvrtcOptions;
  std::vector<std::string> archs;
  std::vector<CubinSpec> cubins;
  std::vector<KernelSpec> kernels;
  std::vector<ProgramSpec> programs;

  const KernelSpec *findKernel(std::string_view name) const;
  const ProgramSpec *findProgram(std::string_view name) const;
  bool operator==(const Manifest &o) const;
};

/// A parameter a caller binds to kernel or program: a tensor or a scalar. A program's are the union of its kernels'
/// by name, minus scratch. A tensor's direction is what the program does with the caller's data: its first kernel's,
/// except that a tensor read first and written by a later kernel (a KV cache an append writes before the decode
/// reads it) is inout.
struct CallerParam {
  const TensorParam *tensor = nullptr;
  const ScalarParam *scalar = nullptr;
  Direction direction = Direction::In;
};

/// The parameters kernel or program `name` of `m` takes from its callers, in the C ABI's order (param_info's
/// indices): tensors by first use, then scalars. False when `m` has no kernel or program of that name.
bool callerParams(const Manifest &m, std::string_view name, std::vector<CallerParam> &out);

/// Parses manifest text. Errors name the line: "manifest.flashc:<line>: <what>".
/// A manifest of another format version is rejected naming both versions.
/// Whether `m`'s source may be compiled against the device library of fingerprint `fingerprint` found at `dir`
/// (directoryFingerprint): an error naming both when the manifest records another one (the source would call a
/// library it was not generated for); success when it records none or the same.
Status checkDeviceLibrary(const Manifest &m, const std::string &fingerprint, const std::string &dir);

Result<Manifest> parseManifest(std::string_view text);

/// Checks the cross-references a parser checks (unique names, symbols bound,
/// tensors before scalars is structural, program kernels exist, scratch params
/// exist and are determined, parameters shared by name agree, each arch's
/// cubins hold every kernel exactly once and no file twice). Called by
/// parseManifest; writers call it before writing.
Status validateManifest(const Manifest &manifest);

/// "bundle format version <v> is not supported (this runtime reads ...)".
std::string unsupportedVersion(int64_t version);

/// Canonical text of a manifest (parseManifest(writeManifest(m)) == m).
std::string writeManifest(const Manifest &manifest);

} // namespace flashc::rt
