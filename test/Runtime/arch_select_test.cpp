// Which code a device runs: the choice over a bundle's variants (chooseCode,
// pure), the multi-arch bundle index (format version 2), and a multi-arch
// bundle opened by the runtime choosing per device without a GPU
// (Bundle::selectCode; JIT through NVRTC, which needs no device).
#include "Check.h"

#include "flashc/runtime/Arch.h"
#include "flashc/runtime/BundleIndex.h"
#include "flashc/runtime/Nvrtc.h"
#include "flashc/runtime/Runtime.h"

#include <filesystem>
#include <fstream>
#include <sstream>
#include <unistd.h>

using namespace flashc::rt;
using namespace flashc::test;
namespace fs = std::filesystem;

namespace {

const std::string kMulti = FLASHC_TEST_BUNDLES_DIR "/multiarch";

std::string readFileForTest(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// A bundle with an sm_80 and an sm_90a variant, each with its own cubin
// (names only: chooseCode reads no file).
std::vector<CodeVariant> twoVariants(bool cubins) {
  std::vector<CodeVariant> v(2);
  v[0].archs = {"sm_80"};
  v[1].archs = {"sm_90a"};
  if (cubins) {
    v[0].cubins = {{"sm_80", "kernels.sm_80.cubin"}};
    v[1].cubins = {{"sm_90a", "kernels.sm_90a.cubin"}};
  }
  return v;
}

Result<CodeChoice> choose(const std::vector<CodeVariant> &v, int major, int minor, bool useCubins = true,
                          bool allowJit = true) {
  return chooseCode(v, major, minor, useCubins, allowJit, "bundle B",
                    "device, compute capability " + std::to_string(major) + "." + std::to_string(minor));
}

bool picks(const Result<CodeChoice> &c, int variant, int cubin, const std::string &jitArch = "") {
  return c.ok() && c->variant == variant && c->cubin == cubin && (jitArch.empty() || c->jitArch.str() == jitArch);
}

void testChooseCode() {
  auto both = twoVariants(true);
  check(picks(choose(both, 8, 0), 0, 0), "8.0 runs the sm_80 variant's cubin");
  check(picks(choose(both, 8, 6), 0, 0), "8.6 runs the sm_80 cubin (same major, lower minor)");
  check(picks(choose(both, 8, 9), 0, 0), "8.9 runs the sm_80 cubin");
  check(picks(choose(both, 9, 0), 1, 0), "9.0 runs the sm_90a variant's cubin (exact arch first)");
  check(picks(choose(both, 10, 0), 0, -1, "sm_100a"),
        "10.0 (no cubin fits; sm_90a code runs on 9.0 only) compiles the sm_80 source for sm_100a");
  std::vector<CodeVariant> reversed = {both[1], both[0]};
  check(picks(choose(reversed, 9, 0), 0, 0) && picks(choose(reversed, 8, 6), 1, 0),
        "the order of the variants does not matter");

  auto sources = twoVariants(false);
  check(picks(choose(sources, 8, 0), 0, -1, "sm_80"), "source only, 8.0: the sm_80 source for sm_80");
  check(picks(choose(sources, 8, 6), 0, -1, "sm_86"), "source only, 8.6: the sm_80 source, compiled for sm_86");
  check(picks(choose(sources, 8, 9), 0, -1, "sm_89"), "source only, 8.9: the sm_80 source, compiled for sm_89");
  check(picks(choose(sources, 9, 0), 1, -1, "sm_90a"), "source only, 9.0: the sm_90a source");
  check(picks(choose(both, 9, 0, /*useCubins=*/false), 1, -1, "sm_90a"), "cubins unusable: 9.0 compiles the sm_90a source");
  check(picks(choose(sources, 12, 0), 0, -1, "sm_120a"), "source only, 12.0: the sm_80 source");

  checkError(choose(both, 7, 5), "bundle B targets sm_80, sm_90a; the device (device, compute capability 7.5) is "
                                 "older than every one of them",
             "7.5: older than every arch");
  checkError(choose(both, 10, 0, true, /*allowJit=*/false),
             "JIT compilation is disabled (FLASHC_NO_JIT) and bundle B has no cubin that loads on sm_100a "
             "(device, compute capability 10.0); cubins in the bundle: sm_80 sm_90a",
             "no JIT, 10.0: no cubin fits, named");
  check(picks(choose(both, 8, 6, true, false), 0, 0), "no JIT, 8.6: the sm_80 cubin still fits");

  std::vector<CodeVariant> hopperOnly = {sources[1]};
  check(picks(choose(hopperOnly, 9, 0), 0, -1, "sm_90a"), "sm_90a only, 9.0: fits");
  checkError(choose(hopperOnly, 8, 6), "is older than every one of them", "sm_90a only, 8.6: older");
  auto none = choose(hopperOnly, 10, 0);
  checkError(none, "bundle B has no code that runs on the device (device, compute capability 10.0): its code "
                   "targets sm_90a, and code for an arch-specific target (sm_90a, sm_100a, ...) runs only on that "
                   "exact compute capability",
             "sm_90a only, 10.0: no code fits, said so (never compiled and failing in NVRTC)");
  check(!none.ok() && none.code() == ErrorCode::Unsupported, "... with code Unsupported");

  check(sourceRunsOn(*parseArch("sm_80"), 9, 0) && !sourceRunsOn(*parseArch("sm_90a"), 10, 0) &&
            !sourceRunsOn(*parseArch("sm_86"), 8, 0) && sourceRunsOn(*parseArch("sm_100f"), 10, 3),
        "sourceRunsOn: plain archs forward, `a` exact, `f` within the major");
}

void testIndex() {
  BundleIndex index;
  index.flashcVersion = "0.1.0";
  index.variants = {{"sm_80", "sm_80"}, {"sm_90a", "sm_90a"}};
  std::string text = writeBundleIndex(index);
  check(text == "flashc-bundle 2\nflashc-version 0.1.0\nvariant sm_80 sm_80\nvariant sm_90a sm_90a\n",
        "the index's canonical text", text);
  auto parsed = parseBundleIndex(text);
  check(parsed.ok() && *parsed == index, "parse(write(index)) == index");
  check(bundleFormatVersion(text) == 2 && bundleFormatVersion("flashc-bundle 1\n") == 1 &&
            bundleFormatVersion("arch sm_80\n") == -1,
        "bundleFormatVersion reads the first line");
  struct Bad {
    const char *text, *expected, *what;
  } bad[] = {
      {"flashc-bundle 2\nvariant sm_80 sm_80\nvariant sm_80 other\n", "manifest.flashc:3: variant sm_80 is listed twice",
       "an arch twice"},
      {"flashc-bundle 2\nvariant sm_80 ../up\n", "manifest.flashc:2: variant sm_80: directory '../up' must be a plain name",
       "a directory outside the bundle"},
      {"flashc-bundle 2\nvariant sm_8x d\n", "manifest.flashc:2: variant arch 'sm_8x' is not an architecture", "a bad arch"},
      {"flashc-bundle 2\nvariant sm_80\n", "manifest.flashc:2: expected 'variant <arch> <directory>'", "a missing directory"},
      {"flashc-bundle 2\nkernel k\n", "manifest.flashc:2: unknown directive 'kernel' in a bundle index", "a kernel in an index"},
      {"flashc-bundle 2\nflashc-version 1\n", "manifest.flashc:2: a bundle index needs at least one 'variant", "no variant"},
  };
  for (const Bad &b : bad) checkError(parseBundleIndex(b.text), b.expected, std::string("index: ") + b.what);
}

void testMultiArchBundle(const fs::path &tmp) {
  BundleOptions options;
  options.cacheDir = (tmp / "cache").string();
  options.noJit = 0;
  auto bundle = Bundle::open(kMulti, options);
  if (!checkOk(bundle, "open the multi-arch bundle")) return;
  check((*bundle)->variantArchs() == std::vector<std::string>{"sm_80", "sm_90a"}, "its variants, in index order");
  check((*bundle)->programNames() == std::vector<std::string>{"add"} && (*bundle)->findKernel("vector_add"),
        "names come from the first variant");

  auto ampere = (*bundle)->selectCode(8, 0);
  check(ampere.ok() && ampere->variant == "sm_80" && ampere->arch == "sm_80" && !ampere->fromCubin,
        "8.0: the sm_80 variant, compiled for sm_80", ampere.ok() ? ampere->variant : ampere.message());
  auto ga102 = (*bundle)->selectCode(8, 6);
  check(ga102.ok() && ga102->variant == "sm_80" && ga102->arch == "sm_86",
        "8.6: the sm_80 variant's source, compiled for sm_86", ga102.ok() ? ga102->variant : ga102.message());
  auto hopper = (*bundle)->selectCode(9, 0);
  check(hopper.ok() && hopper->variant == "sm_90a" && hopper->arch == "sm_90a",
        "9.0: the sm_90a variant (its wgmma source compiles only there)",
        hopper.ok() ? hopper->variant : hopper.message());
  auto blackwell = (*bundle)->selectCode(10, 0);
  check(blackwell.ok() && blackwell->variant == "sm_80" && blackwell->arch == "sm_100a",
        "10.0: the sm_80 variant's source, compiled for sm_100a", blackwell.ok() ? blackwell->variant : blackwell.message());
  checkError((*bundle)->selectCode(7, 5), "bundle " + kMulti + " targets sm_80, sm_90a; the device (device, compute "
                                          "capability 7.5) is older than every one of them",
             "7.5: refused, naming the bundle's archs");

  // Cubins shipped per variant: no JIT needed on 8.6 or 9.0, none fits 10.0.
  fs::path dir = tmp / "with-cubins";
  fs::copy(kMulti, dir, fs::copy_options::recursive);
  for (const char *arch : {"sm_80", "sm_90a"}) {
    auto cubin = compileCuda(readFileForTest((dir / arch / "kernels.cu").string()), arch, {"-std=c++17"});
    if (!checkOk(cubin, std::string("compile the ") + arch + " variant's cubin")) return;
    std::ofstream((dir / arch / ("kernels." + std::string(arch) + ".cubin")).string(), std::ios::binary)
        .write(cubin->cubin.data(), std::streamsize(cubin->cubin.size()));
    auto manifest = parseManifest(readFileForTest((dir / arch / "manifest.flashc").string()));
    if (!checkOk(manifest, std::string("parse the ") + arch + " variant's manifest")) return;
    manifest->cubins = {{arch, "kernels." + std::string(arch) + ".cubin"}};
    std::ofstream((dir / arch / "manifest.flashc").string(), std::ios::trunc) << writeManifest(*manifest);
  }
  options.noJit = 1;
  auto shipped = Bundle::open(dir.string(), options);
  if (!checkOk(shipped, "open the multi-arch bundle with a cubin per variant")) return;
  auto onAmpere = (*shipped)->selectCode(8, 6);
  check(onAmpere.ok() && onAmpere->fromCubin && onAmpere->cubinFile == "sm_80/kernels.sm_80.cubin",
        "no JIT, 8.6: sm_80/kernels.sm_80.cubin", onAmpere.ok() ? onAmpere->cubinFile : onAmpere.message());
  auto onHopper = (*shipped)->selectCode(9, 0);
  check(onHopper.ok() && onHopper->fromCubin && onHopper->cubinFile == "sm_90a/kernels.sm_90a.cubin",
        "no JIT, 9.0: sm_90a/kernels.sm_90a.cubin", onHopper.ok() ? onHopper->cubinFile : onHopper.message());
  checkError((*shipped)->selectCode(10, 0), "cubins in the bundle: sm_80 sm_90a", "no JIT, 10.0: no cubin fits");
}

void testBrokenMultiArch(const fs::path &tmp) {
  auto copy = [&](const char *name) {
    fs::path dir = tmp / name;
    fs::copy(kMulti, dir, fs::copy_options::recursive);
    return dir;
  };
  fs::path missing = copy("missing-variant");
  fs::remove_all(missing / "sm_90a");
  checkError(Bundle::open(missing.string()), "variant sm_90a has no sm_90a/manifest.flashc", "a missing variant directory");

  fs::path otherArch = copy("other-arch");
  std::ofstream(otherArch / "manifest.flashc") << "flashc-bundle 2\nvariant sm_80 sm_90a\nvariant sm_90a sm_80\n";
  checkError(Bundle::open(otherArch.string()), "variant sm_80 (sm_90a) holds code for other architectures, not sm_80",
             "a variant whose manifest targets another arch");

  fs::path programs = copy("other-programs");
  std::string text = readFileForTest((programs / "sm_90a" / "manifest.flashc").string());
  text.replace(text.find("program add"), 11, "program sum");
  std::ofstream(programs / "sm_90a" / "manifest.flashc") << text;
  checkError(Bundle::open(programs.string()), "variant sm_90a has no program 'add' (variant sm_80 has it)",
             "variants with different programs");

  // Callers bind (and param_info reports) the first variant's parameters: a variant taking others is refused.
  auto variantWith = [&](const char *name, const std::string &from, const std::string &to) {
    fs::path dir = copy(name);
    std::string sub = readFileForTest((dir / "sm_90a" / "manifest.flashc").string());
    sub.replace(sub.find(from), from.size(), to);
    std::ofstream(dir / "sm_90a" / "manifest.flashc", std::ios::trunc) << sub;
    return dir.string();
  };
  checkError(Bundle::open(variantWith("other-dtype", "tensor c f32 out [N]", "tensor c bf16 out [N]")),
             "program 'add' differs between variants: sm_80 has tensor 'c' f32 rank 1 out where sm_90a has tensor "
             "'c' bf16 rank 1 out",
             "variants whose program's output has another dtype");
  checkError(Bundle::open(variantWith("extra-scalar", "  grid cdiv(N, 128), 1, 1", "  scalar alpha f32\n  grid cdiv(N, 128), 1, 1")),
             "sm_80 has nothing where sm_90a has scalar 'alpha' f32", "a variant whose program takes one more scalar");
  checkError(Bundle::open(variantWith("other-meta", "program add\n", "program add\n  meta op sum\n")),
             "program 'add' differs between variants", "variants whose programs say different things of themselves");
}

} // namespace

int main() {
  fs::path tmp = fs::temp_directory_path() / ("flashc-arch-test-" + std::to_string(getpid()));
  fs::remove_all(tmp);
  fs::create_directories(tmp);
  testChooseCode();
  testIndex();
  testMultiArchBundle(tmp);
  testBrokenMultiArch(tmp);
  fs::remove_all(tmp);
  return checkSummary();
}
