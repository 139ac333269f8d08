// Manifest parser/writer, expressions and architecture rules (CPU only).
#include "Check.h"

#include "flashc/runtime/Arch.h"
#include "flashc/runtime/Manifest.h"

#include <cstring>
#include <fstream>
#include <sstream>

using namespace flashc::rt;
using namespace flashc::test;

namespace {

std::string readText(const std::string &path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

const char *kHeader = "flashc-bundle 1\nflashc-version 0.1.0\nsource kernels.cu\narch sm_90a\n";

std::string withKernel(const std::string &body) {
  return std::string(kHeader) + "kernel k\n  entry k_entry\n" + body + "end\n";
}
const std::string kMinimalBody = "  tensor x f32 in [N]\n  grid cdiv(N, 128), 1, 1\n  block 128, 1, 1\n";

Manifest richManifest() {
  Manifest m;
  m.flashcVersion = "0.1.0";
  m.nvrtcOptions = {"-std=c++17", "--use_fast_math"};
  m.archs = {"sm_80", "sm_90a"};
  m.cubins = {{"sm_90a", "kernels.sm_90a.cubin"}};
  KernelSpec k;
  k.name = "attention_fwd";
  k.entry = "flashc_attention_fwd";
  k.role = "forward";
  TensorParam q{"q", DType::BF16, Direction::In, {Dim::sym("B"), Dim::sym("H"), Dim::sym("Sq"), Dim::lit(64)}, 16, true, 8};
  TensorParam o = q;
  o.name = "o";
  o.direction = Direction::Out;
  TensorParam lse{"lse", DType::F32, Direction::InOut, {Dim::sym("B"), Dim::sym("H"), Dim::sym("Sq")}, 0, false, 1};
  TensorParam doc{"mask_t0", DType::I32, Direction::In, {Dim::sym("Sq")}, 0, true, 1};
  doc.index32 = true;  // a modifier's tensor
  k.tensors = {q, o, lse, doc};
  k.scalars = {{"scale", ScalarType::F32}, {"window", ScalarType::I32}, {"seed", ScalarType::I64}};
  k.grid = {*Expr::parse("cdiv(Sq, 128)"), *Expr::parse("H * B"), Expr::literal(1)};
  k.block = {Expr::literal(128), Expr::literal(1), Expr::literal(1)};
  k.sharedBytes = *Expr::parse("max(49152, 2 * (Sq % 64 + 1024))");
  k.programmatic = true;
  k.constraints = {*Expr::parse("Sq >= 1 && window >= 0", true), *Expr::parse("!(B == 0) || H > 1", true),
                   Constraint(*Expr::parse("Sq <= 4096", true),
                              "argument 'mask_t0' dim 0 is {Sq}, at most {2 * 2048} (H = {H})")};
  m.kernels.push_back(k);
  KernelSpec k2 = k;
  k2.name = "attention_fwd_post";
  k2.entry = "post";
  k2.role = "postprocess";
  k2.tensors = {o, lse};
  k2.scalars = {};
  k2.constraints = {};
  k2.grid = {*Expr::parse("B"), *Expr::parse("H"), *Expr::parse("cdiv(Sq, 64)")};
  k2.sharedBytes = Expr::literal(0);
  m.kernels.push_back(k2);
  ProgramSpec p;
  p.name = "attention";
  p.kernels = {"attention_fwd", "attention_fwd_post"};
  p.scratch = {{"lse", true}};
  p.meta = {{"op", "attention_forward"}, {"scale", "0.125"}};
  m.programs.push_back(p);
  return m;
}

void testRoundTrip() {
  Manifest m = richManifest();
  checkOk(validateManifest(m), "a manifest built in code validates");
  std::string text = writeManifest(m);
  auto parsed = parseManifest(text);
  if (!checkOk(parsed, "written manifest parses back")) {
    std::printf("%s", text.c_str());
    return;
  }
  check(*parsed == m, "parse(write(m)) == m");
  check(writeManifest(*parsed) == text, "writing is deterministic (byte-identical second write)");
  check(parsed->kernels[0].tensors[0].requiredAlignment() == 16 && parsed->kernels[0].tensors[0].strideMultiple == 8 &&
            parsed->kernels[0].tensors[0].contiguous,
        "tensor attributes survive (align=16 contiguous stride_multiple=8)");
  check(parsed->kernels[0].tensors[2].requiredAlignment() == 4, "default alignment is the element size");
  check(parsed->kernels[0].tensors[3].index32 && !parsed->kernels[0].tensors[0].index32 &&
            text.find(" contiguous index32\n") != std::string::npos,
        "index32 survives (a modifier's tensor) and is absent elsewhere");
  check(parsed->programs[0].scratch[0].zeroFill, "scratch zero flag survives");
  check(parsed->kernels[0].programmatic && text.find("  launch programmatic\n") != std::string::npos,
        "launch programmatic survives");
  check(parsed->programs[0].meta.at("scale") == "0.125", "program meta survives");
  check(parsed->kernels[0].constraints[2].message == "argument 'mask_t0' dim 0 is {Sq}, at most {2 * 2048} (H = {H})" &&
            text.find("  requires Sq <= 4096 \"argument 'mask_t0' dim 0 is {Sq}, at most {2 * 2048} (H = {H})\"\n") !=
                std::string::npos &&
            parsed->kernels[0].constraints[0].message.empty(),
        "a requirement's message survives, quoted after its expression; one without stays without");

  std::string bundleText = readText(FLASHC_TEST_BUNDLES_DIR "/basic/manifest.flashc");
  auto basic = parseManifest(bundleText);
  if (checkOk(basic, "test bundle basic/manifest.flashc parses")) {
    check(basic->kernels.size() == 6 && basic->programs.size() == 1, "basic bundle: 6 kernels, 1 program");
    auto again = parseManifest(writeManifest(*basic));
    check(again.ok() && *again == *basic, "basic bundle round-trips through the writer");
    const KernelSpec *rs = basic->findKernel("row_scale");
    check(rs && rs->scalars.size() == 1 && rs->constraints.size() == 1 && rs->constraints[0].str() == "N % 2 == 0",
          "row_scale: one scalar, requires 'N % 2 == 0'");
  }
  // A dim that is a symbol or a literal in parentheses is that symbol or literal (bundle_fuzz_test's first find: it
  // parsed as an expression, was written bare and parsed back as a symbol, so the round trip changed the manifest).
  auto parenthesized = parseManifest(withKernel("  tensor x f32 in [((N)), (4), (N + 1)]\n  grid N, 1, 1\n  block 1, 1, 1\n"));
  if (checkOk(parenthesized, "parenthesized dims parse")) {
    const auto &dims = parenthesized->kernels[0].tensors[0].dims;
    check(dims[0].isSymbol() && dims[0].symbol == "N" && !dims[1].isSymbol() && !dims[1].isExpression() &&
              dims[1].value == 4 && dims[2].isExpression(),
          "((N)) is the symbol N, (4) the literal 4, (N + 1) an expression");
    auto again = parseManifest(writeManifest(*parenthesized));
    check(again.ok() && *again == *parenthesized, "parenthesized dims round-trip through the writer");
  }
  // The reserved num_sms cannot be a binding dim, but may be an expression dim (a persistent kernel's scratch, one
  // row a multiprocessor): written in parentheses, it reads back as the expression.
  auto smDim = parseManifest(withKernel("  tensor x f32 in [N, (num_sms)]\n  grid N, 1, 1\n  block 1, 1, 1\n"));
  if (checkOk(smDim, "(num_sms) as a dim parses")) {
    const Dim &d = smDim->kernels[0].tensors[0].dims[1];
    check(d.isExpression() && d.str() == "(num_sms)", "(num_sms) is an expression dim, written in parentheses",
          d.str());
    auto again = parseManifest(writeManifest(*smDim));
    check(again.ok() && *again == *smDim, "(num_sms) round-trips through the writer",
          again.ok() ? "" : again.message());
  }
  checkError(parseManifest(withKernel("  tensor x f32 in [N, num_sms]\n  grid N, 1, 1\n  block 1, 1, 1\n")).status(),
             "num_sms", "bare num_sms as a dim is refused (a binding dim may not take the reserved name)");
  // Comments, blank lines, CRLF line ends and indentation are accepted.
  std::string crlf = "flashc-bundle 1\r\n# comment\r\n\r\narch sm_80\r\nkernel k\r\n entry e\r\n tensor x f32 in [N]\r\n"
                     " grid N, 1, 1\r\n block 1, 1, 1\r\nend\r\n";
  checkOk(parseManifest(crlf), "CRLF line ends, comments, blank lines");
}

void testVersion() {
  auto r = parseManifest("flashc-bundle 3\narch sm_80\n");
  checkError(r, "bundle format version 3 is not supported (this runtime reads versions 1 and 2)",
             "a version-3 bundle is rejected naming the versions read");
  check(r.code() == ErrorCode::Unsupported, "version mismatch has code Unsupported");
  checkError(parseManifest("flashc-bundle 2\nvariant sm_80 sm_80\n"),
             "format version 2 is a multi-architecture bundle index, not a manifest",
             "a multi-arch index is not parsed as a manifest");
  Manifest m = richManifest();
  m.formatVersion = 7;
  checkError(validateManifest(m), "bundle format version 7 is not supported (this runtime reads versions 1 and 2)",
             "validateManifest rejects a foreign version too");
}

void testMalformed() {
  struct Case {
    std::string text, expected, what;
  };
  std::vector<Case> cases = {
      {"", "manifest.flashc:1: expected 'flashc-bundle <version>'", "empty text"},
      {"flashc-bundle one\n", "manifest.flashc:1: bad format version 'one'", "non-numeric version"},
      {"arch sm_80\nflashc-bundle 1\n", "manifest.flashc:1: expected 'flashc-bundle <version>' as the first line",
       "header not on the first line"},
      {std::string(kHeader) + "colour blue\n", "manifest.flashc:5: unknown directive 'colour'", "unknown header directive"},
      {std::string(kHeader) + "arch sm_80\n", "manifest.flashc:5: 'arch' given twice", "duplicate arch"},
      {"flashc-bundle 1\narch sm_8x\nkernel k\nentry e\ntensor x f32 in [N]\ngrid N,1,1\nblock 1,1,1\nend\n",
       "bad architecture 'sm_8x'", "malformed arch"},
      {std::string(kHeader) + "nvrtc-options -I/usr/include\n", "manifest.flashc:5: nvrtc-options must not set '-I/usr/include'",
       "include path in nvrtc-options"},
      {std::string(kHeader) + "cubin sm_90a\n", "manifest.flashc:5: expected 'cubin <arch> <file>'", "cubin without file"},
      {std::string(kHeader) + "kernel k\n  entry e\n", "manifest.flashc:5: kernel 'k' has no 'end'", "unterminated kernel"},
      {std::string(kHeader) + "end\n", "manifest.flashc:5: 'end' outside a kernel or program block", "stray end"},
      {withKernel("  tensor x f61 in [N]\n" + kMinimalBody), "manifest.flashc:7: unknown dtype 'f61' (expected bf16, f16, f32, i32)",
       "unknown dtype"},
      {withKernel("  tensor x f32 sideways [N]\n"), "manifest.flashc:7: unknown direction 'sideways'", "unknown direction"},
      {withKernel("  tensor x f32 in [A, B, C, D, E]\n"), "manifest.flashc:7: tensor 'x' has rank 5 (at most 4)", "rank 5"},
      {withKernel("  tensor x f32 in [N, 3.5]\n"), "manifest.flashc:7: bad dim '3.5' of tensor 'x'", "bad dim"},
      {withKernel("  tensor x f32 in N\n"), "manifest.flashc:7: expected 'tensor <name> <dtype> <in|out|inout> [dims]",
       "dims without brackets"},
      {withKernel("  tensor x f32 in [N] align=12\n"), "manifest.flashc:7: align=12 is not a power of two", "align not a power of two"},
      {withKernel("  tensor x f32 in [N] shiny\n"), "manifest.flashc:7: bad tensor attribute 'shiny'", "unknown attribute"},
      {withKernel("  tensor x f32 in [N] contiguous contiguous\n"), "manifest.flashc:7: attribute 'contiguous' given twice",
       "duplicate attribute"},
      {withKernel("  scalar s f32\n  tensor x f32 in [N]\n"),
       "manifest.flashc:8: tensor parameter after a scalar parameter (kernel ABI: all tensors come first)",
       "tensor after scalar"},
      {withKernel("  scalar s f16\n"), "manifest.flashc:7: unknown scalar type 'f16' (expected f32, i32, i64)", "bad scalar type"},
      {withKernel("  tensor x f32 in [N]\n  grid N, 1\n"), "manifest.flashc:8: 'grid' needs three comma-separated expressions",
       "grid with two expressions"},
      {withKernel("  tensor x f32 in [N]\n  grid N +, 1, 1\n"), "manifest.flashc:8: expression 'N +': unexpected end at column 4",
       "broken grid expression"},
      {withKernel("  tensor x f32 in [N]\n  grid N > 1, 1, 1\n"), "operator '>' is only allowed in 'requires'",
       "comparison outside requires"},
      {withKernel("  tensor x f32 in [N]\n  grid pow(N, 2), 1, 1\n"), "unknown function 'pow' (expected cdiv, min, max)",
       "unknown function"},
      {withKernel(kMinimalBody + "  block 64, 1, 1\n"), "manifest.flashc:10: 'block' given twice", "block given twice"},
      {withKernel(kMinimalBody + "  launch eagerly\n"), "manifest.flashc:10: expected 'launch programmatic'",
       "unknown launch mode"},
      {withKernel(kMinimalBody + "  launch programmatic\n  launch programmatic\n"),
       "manifest.flashc:11: 'launch' given twice", "launch given twice"},
      {withKernel("  tensor x f32 in [N]\n  block 1, 1, 1\n"), "manifest.flashc:5: kernel 'k' has no 'grid'", "missing grid"},
      {withKernel(kMinimalBody + "  shared M * 4\n"),
       "manifest.flashc:5: kernel 'k': shared expression 'M * 4' uses symbol 'M' that no tensor dim or integer scalar binds",
       "unbound symbol in shared"},
      {withKernel(kMinimalBody + "  scalar scale f32\n  requires scale > 0\n"),
       "requires expression 'scale > 0' uses symbol 'scale'", "float scalar is not a symbol"},
      {withKernel("  tensor x f32 in [N]\n  tensor x f32 out [N]\n  grid N, 1, 1\n  block 1, 1, 1\n"),
       "manifest.flashc:5: kernel 'k': duplicate parameter 'x'", "duplicate parameter"},
      {withKernel(kMinimalBody) + withKernel(kMinimalBody).substr(strlen(kHeader)), "duplicate kernel 'k'", "duplicate kernel"},
      {withKernel(kMinimalBody) + "program p\n  kernel nope\nend\n", "program 'p': unknown kernel 'nope'",
       "program with unknown kernel"},
      {withKernel(kMinimalBody) + "program p\n  kernel k\n  scratch y\nend\n",
       "program 'p': scratch 'y' is not a tensor parameter of its kernels", "scratch of unknown tensor"},
      {withKernel(kMinimalBody) + "program p\n  kernel k\n  scratch x\nend\n",
       "program 'p': scratch 'x' dim 'N' is not determined by the user's arguments", "scratch with undetermined dim"},
      {withKernel(kMinimalBody) + "kernel k2\n entry e2\n tensor x i32 in [N]\n grid N, 1, 1\n block 1, 1, 1\nend\n"
                                  "program p\n  kernel k\n  kernel k2\nend\n",
       "program 'p': parameter 'x' differs between kernels 'k' and 'k2'", "program parameter dtype conflict"},
      {withKernel(kMinimalBody) + "program k\n  kernel k\nend\n", "duplicate program 'k'", "program named like a kernel"},
      {withKernel(kMinimalBody) + "program p\n  kernel k\n  meta op\nend\n", "expected 'meta <key> <value>'",
       "meta without value"},
      {withKernel(kMinimalBody) + "program p\n  kernel k\n  meta op a\n  meta op b\nend\n",
       "meta key 'op' given twice", "duplicate meta key"},
      {withKernel(kMinimalBody) + "program p\n  kernel k\n  loop forever\nend\n",
       "unknown directive 'loop' in program 'p'", "unknown program directive"},
      // Wrong whatever the arguments: reported when the bundle is opened, not at launch.
      {withKernel("  tensor x f32 in [N]\n  grid cdiv(N, 0), 1, 1\n  block 1, 1, 1\n"),
       "kernel 'k': grid x expression 'cdiv(N, 0)': cdiv divisor 0 is not positive", "cdiv by a constant zero"},
      {withKernel("  tensor x f32 in [N]\n  grid N % (2 - 2), 1, 1\n  block 1, 1, 1\n"),
       "kernel 'k': grid x expression 'N % (2 - 2)': modulo by zero", "modulo by a constant zero"},
      {withKernel("  tensor x f32 in [N]\n  grid 9223372036854775807 * 2 + N, 1, 1\n  block 1, 1, 1\n"),
       "grid x expression '9223372036854775807 * 2': overflow in '*'", "constant overflow"},
      {withKernel("  tensor x f32 in [N]\n  grid -1, 1, 1\n  block 1, 1, 1\n"),
       "kernel 'k': grid x = -1 is outside 0..4294967295", "negative constant grid"},
      {withKernel("  tensor x f32 in [N]\n  grid N, 1, 1\n  block 0, 1, 1\n"),
       "kernel 'k': block x = 0 is outside 1..4294967295", "zero constant block"},
      {withKernel(kMinimalBody + "  shared 4294967296\n"), "kernel 'k': shared = 4294967296 is outside 0..4294967295",
       "shared beyond 32 bits"},
      {withKernel(kMinimalBody + "  requires N / 0 > 1\n"), "requires expression 'N / 0': division by zero",
       "requires dividing by a constant zero"},
      {withKernel(kMinimalBody + "  requires 1 > 2\n"), "kernel 'k': requirement '1 > 2' never holds",
       "constant false requirement"},
      // Deep nesting overflowed the recursive parser's stack (segfault).
      {withKernel("  tensor x f32 in [N]\n  grid " + std::string(100000, '(') + "N" + std::string(100000, ')') +
                  ", 1, 1\n"),
       "expression nested too deeply (more than 200 levels)", "100000 nested parentheses"},
      {withKernel("  tensor x f32 in [N]\n  grid " + std::string(100000, '-') + "N, 1, 1\n"),
       "expression nested too deeply (more than 200 levels)", "100000 unary minuses"},
      {withKernel("  tensor x f32 in [N]\n  grid N" + [] {
         std::string s;
         for (int i = 0; i < 100000; ++i) s += " + N";
         return s;
       }() + ", 1, 1\n"),
       "expression nested too deeply (more than 200 levels)", "a 100000-term sum (the evaluator recursed per term)"},
      {std::string("flashc-bundle 1\nsource kernels.cu\n"), "no 'arch' line", "no arch"},
      // The source is read from the bundle: a path out of it (or into a directory of it) is refused at open, as
      // flashc-pack refuses it.
      {std::string("flashc-bundle 1\nsource ../outside/evil.cu\narch sm_90a\n"),
       "source '../outside/evil.cu' must be a plain file name in the bundle", "a source path leading out"},
      {std::string("flashc-bundle 1\nsource /etc/hostname\narch sm_90a\n"),
       "source '/etc/hostname' must be a plain file name in the bundle", "an absolute source path"},
      {std::string("flashc-bundle 1\nsource ..\narch sm_90a\n"), "source '..' must be a plain file name",
       "a source named '..'"},
      {std::string(kHeader), "declares no kernels", "no kernels"},
  };
  for (const auto &c : cases) checkError(parseManifest(c.text), c.expected, "malformed: " + c.what);
}

// The tensormap directive: canonical round trip, and every error names its line.
// Per-kernel cubins: `cubin <arch> <file> for <kernel>...` (flashc compiles one
// translation unit per kernel); each arch's cubins hold every kernel once.
void testKernelCubins() {
  Manifest m = richManifest();
  m.cubins = {{"sm_90a", "attention_fwd.sm_90a.cubin", {"attention_fwd"}},
              {"sm_90a", "attention_fwd_post.sm_90a.cubin", {"attention_fwd_post"}},
              {"sm_80", "both.sm_80.cubin", {"attention_fwd_post", "attention_fwd"}}};
  checkOk(validateManifest(m), "per-kernel cubins (and one cubin holding two kernels) validate");
  std::string text = writeManifest(m);
  check(contains(text, "cubin sm_90a attention_fwd.sm_90a.cubin for attention_fwd\n") &&
            contains(text, "cubin sm_80 both.sm_80.cubin for attention_fwd_post attention_fwd\n"),
        "the writer prints 'cubin <arch> <file> for <kernel>...'", text);
  auto parsed = parseManifest(text);
  check(parsed.ok() && *parsed == m, "per-kernel cubin lines round-trip", parsed.ok() ? "" : parsed.message());
  if (parsed.ok())
    check(parsed->cubins[0].line == 6 && parsed->cubins[0].kernels == std::vector<std::string>{"attention_fwd"} &&
              !parsed->cubins[0].holdsAllKernels(),
          "a parsed cubin line keeps its kernels and its line number");

  // Malformed lines and maps, each with an error naming the problem.
  const std::string head = "flashc-bundle 1\nsource kernels.cu\narch sm_90a\n";
  const std::string kernels = "kernel a\n  entry a_entry\n" + kMinimalBody + "end\nkernel b\n  entry b_entry\n" +
                              kMinimalBody + "end\n";
  struct Case {
    std::string cubins, expected, what;
  };
  std::vector<Case> cases = {
      {"cubin sm_90a a.cubin for\n", "manifest.flashc:4: expected 'cubin <arch> <file>' or 'cubin <arch> <file> for <kernel>...'",
       "'for' without kernels"},
      {"cubin sm_90a a.cubin a\n", "manifest.flashc:4: expected 'cubin <arch> <file>' or", "kernels without 'for'"},
      {"cubin sm_90a a.cubin for a\ncubin sm_90a b.cubin for b c\n",
       "manifest.flashc:5: cubin b.cubin is for kernel 'c', which the manifest does not declare", "an unknown kernel"},
      {"cubin sm_90a a.cubin for a\ncubin sm_90a b.cubin for b a\n",
       "manifest.flashc:5: kernel 'a' is in two sm_90a cubins (a.cubin and b.cubin)", "a kernel in two cubins"},
      {"cubin sm_90a a.cubin for a a\ncubin sm_90a b.cubin for b\n", "kernel 'a' is in two sm_90a cubins (a.cubin and a.cubin)",
       "a kernel listed twice on one line"},
      {"cubin sm_90a all.cubin\ncubin sm_90a b.cubin for b\n",
       "manifest.flashc:5: kernel 'b' is in two sm_90a cubins (all.cubin and b.cubin)",
       "a whole-source cubin and a per-kernel one for the same arch"},
      {"cubin sm_90a a.cubin\ncubin sm_90a b.cubin\n", "kernel 'a' is in two sm_90a cubins (a.cubin and b.cubin)",
       "two whole-source cubins for one arch"},
      {"cubin sm_90a a.cubin for a\n",
       "manifest.flashc:4: the sm_90a cubins hold no code for kernel 'b' (each arch's cubins must hold every kernel)",
       "a kernel without code"},
      {"cubin sm_90a a.cubin for a\ncubin sm_80 a.cubin for a b\ncubin sm_90a b.cubin for b\n",
       "manifest.flashc:5: cubin file 'a.cubin' is listed twice", "one file for two archs"},
      {"cubin sm_90a sub/a.cubin for a b\n", "manifest.flashc:4: cubin file 'sub/a.cubin' must be a plain file name",
       "a cubin path with a directory"},
  };
  for (const auto &c : cases) checkError(parseManifest(head + c.cubins + kernels), c.expected, "cubin map: " + c.what);
  checkOk(parseManifest(head + "cubin sm_90a b.cubin for b\ncubin sm_90a a.cubin for a\n" + kernels),
          "cubin map: any order of cubins and kernels");
  checkOk(parseManifest(head + "cubin sm_90a all.cubin\ncubin sm_80 a.cubin for a\ncubin sm_80 b.cubin for b\n" + kernels),
          "cubin map: one arch whole-source, another per kernel");
}

void testTensorMaps() {
  std::string text = withKernel("  tensor q bf16 in [B, H, S, 64] align=16 contiguous\n"
                                "  tensor o f32 out [S, 4]\n"
                                "  tensormap qm of q box [1, 1, 64, 64] swizzle 128\n"
                                "  tensormap om of o box [16,4]   swizzle none\n"
                                "  scalar n i32\n"
                                "  grid cdiv(S, 64), H, B\n  block 128, 1, 1\n");
  auto m = parseManifest(text);
  if (!checkOk(m, "a kernel with two tensor maps parses")) return;
  const KernelSpec &k = m->kernels[0];
  check(k.tensorMaps.size() == 2 && k.tensorMaps[0].name == "qm" && k.tensorMaps[0].tensor == "q" &&
            k.tensorMaps[0].box == std::vector<int64_t>{1, 1, 64, 64} &&
            k.tensorMaps[0].swizzle == TensorMapSwizzle::B128 && k.tensorMaps[0].line == 9,
        "tensormap qm: tensor q, box [1, 1, 64, 64], swizzle 128, line 9");
  check(k.tensorMaps[1].box == std::vector<int64_t>{16, 4} && k.tensorMaps[1].swizzle == TensorMapSwizzle::None,
        "tensormap om: box [16, 4], swizzle none");
  check(k.findTensorMap("om") == &k.tensorMaps[1] && !k.findTensorMap("q"), "findTensorMap");
  std::string written = writeManifest(*m);
  check(contains(written, "  tensor o f32 out [S, 4]\n  tensormap qm of q box [1, 1, 64, 64] swizzle 128\n"
                          "  tensormap om of o box [16, 4] swizzle none\n  scalar n i32\n"),
        "canonical form: tensor maps between the tensors and the scalars", written);
  auto again = parseManifest(written);
  check(again.ok() && *again == *m && writeManifest(*again) == written, "tensor maps round-trip through the writer");
  Manifest changed = *m;
  changed.kernels[0].tensorMaps[0].swizzle = TensorMapSwizzle::B64;
  check(!(changed == *m), "the swizzle takes part in equality");
  changed = *m;
  changed.kernels[0].tensorMaps[1].line = 99;
  check(changed == *m, "the line does not take part in equality");
  // Built in code (no lines): errors then name the kernel's line.
  changed = *m;
  changed.kernels[0].tensorMaps[0].line = 0;
  changed.kernels[0].tensorMaps[0].box = {1, 1, 64, 0};
  checkError(validateManifest(changed), "manifest.flashc:5: kernel 'k': tensor map 'qm': box extent 0 of dim 3",
             "a tensor map built in code is validated too");

  const std::string tail = "  grid N, 1, 1\n  block 1, 1, 1\n";
  const std::string x = "  tensor x f32 in [M, N]\n";
  struct Case {
    std::string body, expected, what;
  };
  std::vector<Case> cases = {
      {x + "  tensormap xm of y box [1, 8] swizzle none\n",
       "manifest.flashc:8: kernel 'k': tensor map 'xm': unknown tensor 'y' (a tensor parameter of the same kernel)",
       "unknown tensor"},
      {x + "  tensormap xm of x box [8] swizzle none\n",
       "manifest.flashc:8: kernel 'k': tensor map 'xm': box has 1 extents but tensor 'x' has rank 2 (one extent per dim)",
       "box rank below the tensor's"},
      {x + "  tensormap xm of x box [1, 1, 8] swizzle none\n", "manifest.flashc:8: kernel 'k': tensor map 'xm': box has 3 extents",
       "box rank above the tensor's"},
      {x + "  tensormap xm of x box [0, 8] swizzle none\n",
       "manifest.flashc:8: kernel 'k': tensor map 'xm': box extent 0 of dim 0 is outside 1..256", "box extent 0"},
      {x + "  tensormap xm of x box [257, 8] swizzle none\n",
       "manifest.flashc:8: kernel 'k': tensor map 'xm': box extent 257 of dim 0 is outside 1..256", "box extent 257"},
      {x + "  tensormap xm of x box [1, N] swizzle none\n",
       "manifest.flashc:8: box extent 'N' of tensor map 'xm' is not an integer literal (1..256)", "symbolic box extent"},
      {x + "  tensormap xm of x box [1, 8] swizzle 16\n",
       "manifest.flashc:8: unknown swizzle '16' of tensor map 'xm' (expected none, 32, 64, 128)", "bad swizzle"},
      {x + "  tensormap xm of x box [1, 3] swizzle none\n",
       "manifest.flashc:8: kernel 'k': tensor map 'xm': inner box extent 3 x 4 bytes (f32) = 12 bytes is not a multiple of 16",
       "inner box bytes not a multiple of 16"},
      {"  tensor x bf16 in [M, N]\n  tensormap xm of x box [1, 64] swizzle 64\n",
       "manifest.flashc:8: kernel 'k': tensor map 'xm': inner box extent 64 x 2 bytes = 128 bytes exceeds the 64-byte swizzle span",
       "inner box bytes over the swizzle span"},
      {"  tensor x bf16 in [M, N]\n  tensormap xm of x box [256, 64] swizzle 128\n" + tail, "", "128 bytes fit swizzle 128"},
      {x + "  scalar s f32\n  tensormap xm of x box [1, 4] swizzle none\n",
       "manifest.flashc:9: tensormap after a scalar parameter (kernel ABI: tensors, then tensor maps, then scalars)",
       "tensormap after a scalar"},
      {x + "  tensormap xm of x box [1, 4] swizzle none\n  tensor y f32 in [N]\n",
       "manifest.flashc:9: tensor parameter after a tensormap (kernel ABI: tensors, then tensor maps, then scalars)",
       "tensor after a tensormap"},
      {x + "  tensormap x of x box [1, 4] swizzle none\n",
       "manifest.flashc:8: kernel 'k': duplicate parameter 'x'", "tensor map named like a tensor"},
      {x + "  tensormap xm of x box [1, 4] swizzle none\n  tensormap xm of x box [2, 4] swizzle none\n",
       "manifest.flashc:9: kernel 'k': duplicate parameter 'xm'", "two tensor maps of one name"},
      {x + "  tensormap xm of x box [1, 4] swizzle none\n  scalar xm i32\n", "manifest.flashc:5: kernel 'k': duplicate parameter 'xm'",
       "scalar named like a tensor map"},
      {x + "  tensormap xm x box [1, 4] swizzle none\n",
       "manifest.flashc:8: expected 'tensormap <name> of <tensor> box [<extent>, ...] swizzle <none|32|64|128>'",
       "tensormap without 'of'"},
      {x + "  tensormap xm of x box [1, 4]\n", "manifest.flashc:8: expected 'tensormap <name>", "tensormap without swizzle"},
      {x + "  tensormap xm of x box 1, 4 swizzle none\n", "manifest.flashc:8: expected 'tensormap <name>", "box without brackets"},
      {"  tensor x f32 in []\n  tensormap xm of x box [] swizzle none\n",
       "manifest.flashc:8: kernel 'k': tensor map 'xm': tensor 'x' has rank 0 (a tensor map needs rank 1 or more)",
       "tensor map of a rank-0 tensor"},
  };
  for (const auto &c : cases) {
    std::string body = c.body;
    if (body.find("  grid ") == std::string::npos) body += tail;
    if (c.expected.empty()) checkOk(parseManifest(withKernel(body)), "tensormap: " + c.what);
    else checkError(parseManifest(withKernel(body)), c.expected, "tensormap error: " + c.what);
  }
}

void testExpressions() {
  SymbolTable s{{"B", 2}, {"Sq", 1000}, {"H", 16}, {"Z", 0}};
  auto eval = [&](const std::string &text, bool logic = false) -> Result<int64_t> {
    auto e = Expr::parse(text, logic);
    if (!e) return e.error();
    return e->evaluate(s);
  };
  check(eval("cdiv(Sq, 128)").ok() && *eval("cdiv(Sq, 128)") == 8, "cdiv(1000, 128) == 8");
  check(*eval("cdiv(1024, 128)") == 8, "cdiv exact");
  check(*eval("cdiv(0, 128)") == 0, "cdiv(0, 128) == 0");
  check(*eval("H * B + 1") == 33 && *eval("H * (B + 1)") == 48, "precedence and parentheses");
  check(*eval("10 - 3 - 2") == 5 && *eval("100 / 10 / 5") == 2, "left associativity");
  check(*eval("-B + 5") == 3 && *eval("7 % 3") == 1, "unary minus and modulo");
  check(*eval("min(Sq, 64) + max(B, H)") == 80, "min and max");
  check(*eval("Sq >= 1 && H == 16", true) == 1 && *eval("Z > 0 || B < 2", true) == 0, "comparisons and logic");
  check(*eval("!(Z == 0)", true) == 0, "logical not");
  check(*eval("Z == 0 || Sq / Z > 1", true) == 1, "|| short-circuits (no division by zero)");
  checkError(eval("Sq / Z"), "division by zero", "division by zero is an error");
  checkError(eval("Sq % Z"), "modulo by zero", "modulo by zero is an error");
  checkError(eval("cdiv(Sq, Z)"), "cdiv divisor 0 is not positive", "cdiv by zero is an error");
  checkError(eval("9223372036854775807 + 1"), "overflow", "overflow is an error");
  checkError(eval("Sk * 2"), "symbol 'Sk' is not bound", "unbound symbol at evaluation");
  checkError(eval("99999999999999999999"), "integer literal too large", "literal overflow");
  checkError(eval("(B"), "expected ')'", "unbalanced parenthesis");
  checkError(eval("B B"), "unexpected 'B'", "trailing garbage");
  for (std::string text : {"cdiv(Sq, 128)", "H * B", "(a + b) * c", "a - (b - c)", "a - b - c", "-(a + b)", "a / (b * c)",
                           "min(a, max(b, c + 1))", "a + b * c % d"}) {
    auto e = Expr::parse(text);
    check(e.ok() && e->str() == text, "canonical print of '" + text + "'", e.ok() ? e->str() : e.message());
  }
  // A chain of unary operators prints bare: parenthesised, 150 minuses that parsed printed into text refused as
  // nested too deeply, which broke the round trip `requires` lines rely on.
  std::string minuses = std::string(150, '-') + "N";
  auto chain = Expr::parse(minuses, true);
  auto again = chain ? Expr::parse(chain->str(), true) : chain;
  check(chain.ok() && chain->str() == minuses && again.ok() && *again == *chain,
        "150 unary minuses print as they are written and parse back", chain.ok() ? chain->str().substr(0, 40) : "");
  auto mixed = Expr::parse("!-(a + b)", true);
  check(mixed.ok() && mixed->str() == "!-(a + b)", "'!-(a + b)' prints as written", mixed.ok() ? mixed->str() : "");
  auto noisy = Expr::parse("((a))+(b*c)");
  check(noisy.ok() && noisy->str() == "a + b * c", "redundant parentheses dropped: " + (noisy ? noisy->str() : ""));
  // The outermost binary operator and its operands (what flashc-run reads a table's `dim >= range` line by).
  std::string op, name;
  Expr lhs, rhs;
  auto extent = Expr::parse("mask_t0_0 >= Sq + 1", true);
  check(extent.ok() && extent->isBinary(&op, &lhs, &rhs) && op == ">=" && lhs.isSymbol(&name) && name == "mask_t0_0" &&
            rhs.str() == "Sq + 1" && *rhs.evaluate(s) == 1001,
        "isBinary: '>=' of a symbol and 'Sq + 1'");
  auto both = Expr::parse("a >= 1 && b >= 2", true);
  check(both.ok() && both->isBinary(&op, &lhs, &rhs) && op == "&&" && lhs.str() == "a >= 1" && rhs.str() == "b >= 2",
        "isBinary: the outermost operator of a conjunction");
  check(!Expr::parse("-a")->isBinary() && !Expr::parse("max(a, b)")->isBinary() && !Expr::parse("a")->isBinary() &&
            !Expr().isBinary(),
        "isBinary: false for unary, calls, leaves and the empty expression");
}

void testArch() {
  auto a = parseArch("sm_90a");
  check(a && a->major == 9 && a->minor == 0 && a->suffix == 'a', "parseArch(sm_90a)");
  auto b = parseArch("sm_120");
  check(b && b->major == 12 && b->minor == 0 && !b->suffix && b->str() == "sm_120", "parseArch(sm_120)");
  check(!parseArch("sm_9") && !parseArch("compute_90") && !parseArch("sm_9x"), "malformed arch names rejected");
  check(jitArchForDevice(9, 0).str() == "sm_90a" && jitArchForDevice(8, 6).str() == "sm_86" &&
            jitArchForDevice(10, 0).str() == "sm_100a",
        "JIT arch: sm_90a on 9.0, sm_86 on 8.6, sm_100a on 10.0");
  check(cubinRunsOn(*parseArch("sm_80"), 8, 6) && !cubinRunsOn(*parseArch("sm_80"), 9, 0) &&
            !cubinRunsOn(*parseArch("sm_86"), 8, 0) && !cubinRunsOn(*parseArch("sm_90a"), 9, 1),
        "cubin compatibility: same major, minor upward; sm_80 SASS does not load on 9.0; sm_90a only on 9.0");
  std::vector<CubinSpec> cubins = {{"sm_80", "a"}, {"sm_90", "b"}, {"sm_90a", "c"}, {"sm_86", "d"}};
  check(chooseCubin(cubins, 9, 0) == 2, "on 9.0 the sm_90a cubin wins over sm_90");
  check(chooseCubin(cubins, 8, 9) == 3, "on 8.9 the closest lower minor (sm_86) wins");
  check(chooseCubin(cubins, 8, 0) == 0, "on 8.0 sm_80");
  check(chooseCubin(cubins, 10, 0) == -1, "on 10.0 nothing fits");
  check(deviceMeetsTargets({"sm_90a"}, 9, 0) && !deviceMeetsTargets({"sm_90a"}, 8, 0) &&
            deviceMeetsTargets({"sm_80", "sm_90a"}, 8, 6),
        "target check: a device older than every target arch is refused");
}

} // namespace

// The device library a source was generated against (device-library <fingerprint>): kept through a round trip,
// checked before the runtime compiles the source (no cubin for the device), absent in older bundles.
void testDeviceLibrary() {
  std::string text = std::string("flashc-bundle 1\nflashc-version 0.1.0\nsource kernels.cu\ndevice-library 0123abcd\n") +
                     "arch sm_90a\nkernel k\n  entry e\n  tensor x f32 in [N]\n  grid N, 1, 1\n  block 1, 1, 1\nend\n";
  auto m = parseManifest(text);
  if (!checkOk(m, "a manifest naming its device library parses")) return;
  check(m->deviceLibrary == "0123abcd", "the fingerprint is read");
  auto again = parseManifest(writeManifest(*m));
  check(again.ok() && again->deviceLibrary == "0123abcd" && *again == *m, "and written back");
  checkOk(checkDeviceLibrary(*m, "0123abcd", "/dev/include"), "the same library compiles it");
  checkError(checkDeviceLibrary(*m, "ffff0000", "/dev/include"),
             "the bundle's source was generated against device library 0123abcd, not the one this runtime compiles "
             "with (ffff0000, /dev/include): rebuild the bundle with the flashc of this runtime",
             "another library is refused, naming both");
  check(checkDeviceLibrary(*m, "ffff0000", "").code() == ErrorCode::InvalidBundle, "with code InvalidBundle");
  Manifest older = *m;
  older.deviceLibrary.clear();
  checkOk(checkDeviceLibrary(older, "ffff0000", "/dev/include"), "a bundle that records none (older) is not refused");
  std::string bad = text;
  bad.replace(bad.find("0123abcd"), 8, "not-hex!");
  checkError(parseManifest(bad), "'device-library' takes a hexadecimal fingerprint", "a malformed fingerprint");
  std::string twice = text;
  twice.insert(twice.find("arch"), "device-library 0123abcd\n");
  checkError(parseManifest(twice), "device-library", "given twice");
}

// `requires <expression> "<message>"`: the message's placeholders are expressions over the kernel's symbols; what
// the writer could not write back, or the launch could not evaluate, is refused when the manifest is read.
void testRequirementMessages() {
  auto m = parseManifest(withKernel(kMinimalBody + "  requires N >= 2 \"argument 'x' is {N} long, {2 - N} short\"\n"));
  if (checkOk(m, "a requirement with a message parses")) {
    const Constraint &c = m->kernels[0].constraints[0];
    check(c.expr.str() == "N >= 2" && c.message == "argument 'x' is {N} long, {2 - N} short",
          "expression and message apart");
    auto text = c.explain({{"N", 1}});
    check(text.ok() && *text == "argument 'x' is 1 long, 1 short", "placeholders take their values",
          text.ok() ? *text : text.message());
  }
  checkOk(parseManifest(withKernel(kMinimalBody + "  requires N >= 2\n")), "a requirement without one still parses");
  struct Case {
    std::string line, expected, what;
  };
  std::vector<Case> cases = {
      {"requires N >= 2 \"open {N\"", "'{' without '}'", "an unclosed placeholder"},
      {"requires N >= 2 \"close N}\"", "'}' without '{'", "a brace that closes nothing"},
      {"requires N >= 2 \"bad {N +}\"", "placeholder {N +}", "a placeholder that does not parse"},
      {"requires N >= 2 \"unbound {M}\"",
       "requires message expression 'M' uses symbol 'M' that no tensor dim or integer scalar binds",
       "a placeholder over a symbol nothing binds"},
      {"requires N >= 2 \"unterminated", "one quoted string at the end of the line", "a message without its quote"},
      {"requires N >= 2 \"a \"quote\" inside\"", "holds a quote or a control character", "a quote in the message"},
  };
  for (const Case &c : cases)
    checkError(parseManifest(withKernel(kMinimalBody + "  " + c.line + "\n")), c.expected, c.what);
}

int main() {
  testRoundTrip();
  testRequirementMessages();
  testDeviceLibrary();
  testVersion();
  testMalformed();
  testKernelCubins();
  testTensorMaps();
  testExpressions();
  testArch();
  return checkSummary();
}
