// The compiler's bundle writer (compiler/lib/Codegen/BundleWriter.cpp, plain C++):
// what it writes opens in the runtime, with cubins usable without JIT; a
// bundle that does not compile is never written.
#include "Check.h"

#include "flashc/Compiler/BundleWriter.h"
#include "flashc/runtime/BundleBlob.h"
#include "flashc/runtime/Runtime.h"

#include <cctype>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <unistd.h>

using namespace flashc;
using namespace flashc::rt;
using namespace flashc::test;
namespace fs = std::filesystem;

namespace {
std::string readText(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

/// The basic bundle's source as one translation unit per kernel, as flashc
/// emits them: the shared head (includes, the argument struct) plus one kernel.
std::vector<KernelUnit> kernelUnits(const std::string &source, const Manifest &manifest) {
  const std::string marker = "extern \"C\" __global__";
  std::vector<size_t> starts;
  for (size_t at = source.find(marker); at != std::string::npos; at = source.find(marker, at + 1)) starts.push_back(at);
  std::vector<KernelUnit> units;
  for (size_t i = 0; i < starts.size() && i < manifest.kernels.size(); ++i) {
    size_t end = i + 1 < starts.size() ? starts[i + 1] : source.size();
    units.push_back({source.substr(0, starts.front()) + source.substr(starts[i], end - starts[i]),
                     {manifest.kernels[i].name}});
  }
  return units;
}

size_t countEntries(const fs::path &dir) {
  std::error_code ec;
  size_t n = 0;
  for (auto it = fs::directory_iterator(dir, ec); !ec && it != fs::directory_iterator(); it.increment(ec))
    n += it->path().extension() == ".fcubin";
  return n;
}

/// One translation unit per kernel: one cubin per kernel, listed with `for`,
/// compiled in parallel through the kernel cache; the runtime finds each
/// kernel in its own cubin.
void testKernelUnits(const fs::path &tmp, const Manifest &manifest, const std::string &source) {
  BundleSource split{source, kernelUnits(source, manifest)};
  if (!check(split.kernelUnits.size() == manifest.kernels.size(), "the basic source splits into one unit per kernel"))
    return;
  std::string dir = (tmp / "units.bundle").string();
  BundleWriteOptions options;
  options.cubinArchs = {"sm_90a"};
  options.cacheDir = (tmp / "cache").string();
  options.jobs = 2;
  std::vector<UnitReport> reports;
  options.onUnitDone = [&](const UnitReport &r) { reports.push_back(r); };
  if (!checkOk(writeBundle(dir, manifest, split, options), "write a bundle compiled one unit per kernel")) return;
  bool filesOk = true;
  for (const auto &k : manifest.kernels) filesOk = filesOk && fs::exists(dir + "/" + k.name + ".sm_90a.cubin");
  check(filesOk && !fs::exists(dir + "/kernels.sm_90a.cubin"), "one <kernel>.sm_90a.cubin per kernel, no whole-source cubin");
  check(reports.size() == manifest.kernels.size() && reports.back().done == reports.size() &&
            reports.back().total == reports.size() && contains(reports.front().unit, " for sm_90a"),
        "each unit is reported once as it finishes ([n/total] <kernel> for <arch>)");
  check(countEntries(options.cacheDir) == manifest.kernels.size(), "one kernel cache entry per kernel",
        std::to_string(countEntries(options.cacheDir)));
  std::string text = readText(dir + "/manifest.flashc");
  check(contains(text, "cubin sm_90a vector_add.sm_90a.cubin for vector_add\n"), "the manifest maps each kernel to its cubin");

  BundleOptions ro;
  ro.noJit = 1;
  auto bundle = Bundle::open(dir, ro);
  if (checkOk(bundle, "the runtime opens the per-kernel bundle")) {
    std::vector<CodeImage> images;
    auto hopper = (*bundle)->selectCode(9, 0, nullptr, &images);
    bool mapped = hopper.ok() && images.size() == manifest.kernels.size();
    for (size_t i = 0; mapped && i < images.size(); ++i) {
      std::string file = readText(dir + "/" + manifest.kernels[i].name + ".sm_90a.cubin");
      mapped = images[i].kernels == std::vector<std::string>{manifest.kernels[i].name} && !file.empty() &&
               std::string(images[i].cubin.begin(), images[i].cubin.end()) == file;
    }
    check(mapped, "9.0 without JIT: every per-kernel cubin, each with its kernel", hopper.ok() ? "" : hopper.message());
    check(hopper.ok() && hopper->fromCubin && hopper->cubinFiles.size() == manifest.kernels.size(),
          "CodeInfo lists every cubin loaded");
    auto ampere = (*bundle)->selectCode(8, 6);
    checkError(ampere, "cubins in the bundle: sm_90a", "8.6 without JIT: no cubin fits");
    check(!contains(ampere.status().message(), "sm_90a sm_90a"), "... and the error names sm_90a once, not once per cubin");
  }

  // As a blob (flashc-pack, EMBED): every per-kernel cubin travels with it.
  auto blob = packBundleDirectory(dir);
  if (checkOk(blob, "pack the per-kernel bundle into a blob")) {
    auto files = unpackBundleBlob(blob->data(), blob->size());
    check(files.ok() && files->size() == manifest.kernels.size() + 2, "the blob holds the manifest, the source and every cubin");
    auto fromMemory = Bundle::openMemory(blob->data(), blob->size(), ro);
    std::vector<CodeImage> images;
    check(fromMemory.ok() && (*fromMemory)->selectCode(9, 0, nullptr, &images).ok() &&
              images.size() == manifest.kernels.size(),
          "the blob opens and gives every per-kernel cubin");
  }

  // The same bundle from the cache (no compile), and with the cache off.
  BundleWriteOptions noCache = options;
  noCache.useCache = false;
  noCache.cacheDir = (tmp / "unused-cache").string();
  noCache.jobs = 1;
  std::string again = (tmp / "again.bundle").string();
  checkOk(writeBundle(again, manifest, split, noCache), "write it again with the cache off, one compile at a time");
  check(!fs::exists(noCache.cacheDir), "the cache off: nothing is written to the cache directory");
  bool same = true;
  for (const auto &k : manifest.kernels)
    same = same && readText(dir + "/" + k.name + ".sm_90a.cubin") == readText(again + "/" + k.name + ".sm_90a.cubin");
  check(same && readText(dir + "/manifest.flashc") == readText(again + "/manifest.flashc"),
        "the cubins do not depend on the thread count or the cache");

  // A unit that does not compile: its kernel is named, nothing is written.
  BundleSource broken = split;
  broken.kernelUnits[2].text += "\nthis is not CUDA;\n";
  std::string brokenDir = (tmp / "broken-unit.bundle").string();
  auto s = writeBundle(brokenDir, manifest, broken, options);
  checkError(s, manifest.kernels[2].name + ".cu(", "a unit that does not compile: NVRTC's log names the kernel's unit");
  check(s.code() == ErrorCode::CompileFailed && !fs::exists(brokenDir), "... CompileFailed, and nothing is written");
  BundleSource short_ = split;
  short_.kernelUnits.pop_back();
  checkError(writeBundle(brokenDir, manifest, short_, options), "the kernel units hold 5 kernels, not the manifest's 6",
             "units must hold every kernel once");
  BundleSource twice = split;
  twice.kernelUnits[1].kernels.push_back(manifest.kernels[0].name);
  checkError(writeBundle(brokenDir, manifest, twice, options), "the kernel units hold 7 kernels, not the manifest's 6",
             "... and no kernel twice");
  BundleSource orphan = split;
  orphan.kernelUnits[1].kernels.clear();
  checkError(writeBundle(brokenDir, manifest, orphan, options), "a kernel unit launched by no kernel",
             "... and no unit without a kernel");

  // Kernel names that differ only by letter case: their cubins get distinct file names (a case-insensitive
  // file system would make the two one file).
  Manifest cased = manifest;
  std::string upper = cased.kernels[0].name;
  for (char &c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  cased.kernels[1].name = upper;
  for (auto &program : cased.programs)
    for (auto &k : program.kernels)
      if (k == manifest.kernels[1].name) k = upper;
  BundleSource casedUnits = split;
  casedUnits.kernelUnits[1].kernels = {upper};
  std::string casedDir = (tmp / "cased.bundle").string();
  if (check(upper != manifest.kernels[0].name && static_cast<bool>(writeBundle(casedDir, cased, casedUnits, options)),
            "kernels named alike but for case are written")) {
    std::string text = readText(casedDir + "/manifest.flashc");
    check(contains(text, "cubin sm_90a " + upper + ".1.sm_90a.cubin for " + upper) &&
              contains(text, "cubin sm_90a " + manifest.kernels[0].name + ".0.sm_90a.cubin for "),
          "... each cubin file named with its unit's index");
  }

  // Two kernels launching one unit's entry (the emitter prints code that is the same but for names once):
  // one cubin listing both, and the runtime finds the second kernel's entry in it.
  Manifest aliased = manifest;
  aliased.kernels[1].entry = aliased.kernels[0].entry;
  BundleSource shared = split;
  shared.kernelUnits[0].kernels.push_back(aliased.kernels[1].name);
  shared.kernelUnits.erase(shared.kernelUnits.begin() + 1);
  std::string sharedDir = (tmp / "shared-unit.bundle").string();
  if (check(static_cast<bool>(writeBundle(sharedDir, aliased, shared, options)), "a unit of two kernels is written")) {
    std::string text = readText(sharedDir + "/manifest.flashc");
    check(text.find("cubin sm_90a " + aliased.kernels[0].name + ".sm_90a.cubin for " + aliased.kernels[0].name + " " +
                    aliased.kernels[1].name) != std::string::npos &&
              !fs::exists(sharedDir + "/" + aliased.kernels[1].name + ".sm_90a.cubin"),
          "... as one cubin line naming both kernels, and no cubin of its own for the second");
    BundleOptions ro;
    ro.noJit = 1;
    auto bundle = Bundle::open(sharedDir, ro);
    if (checkOk(bundle, "... and the runtime opens it")) {
      std::vector<CodeImage> images;
      auto hopper = (*bundle)->selectCode(9, 0, nullptr, &images);
      check(hopper.ok() && images.size() == aliased.kernels.size() - 1 &&
                images[0].kernels == std::vector<std::string>{aliased.kernels[0].name, aliased.kernels[1].name},
            "... one image for the shared unit, holding both kernels");
    }
  }
}
} // namespace

int main() {
  fs::path tmp = fs::temp_directory_path() / ("flashc-writer-test-" + std::to_string(getpid()));
  fs::remove_all(tmp);
  fs::create_directories(tmp);
  auto manifest = parseManifest(readText(FLASHC_TEST_BUNDLES_DIR "/basic/manifest.flashc"));
  std::string source = readText(FLASHC_TEST_BUNDLES_DIR "/basic/kernels.cu");
  if (!checkOk(manifest, "parse the basic manifest")) return checkSummary();

  std::string dir = (tmp / "out.bundle").string();
  BundleWriteOptions options;
  options.cubinArchs = {"sm_80", "sm_90a"};
  options.checkAllArchs = true;
  checkOk(writeBundle(dir, *manifest, source, options), "write a bundle with sm_80 and sm_90a cubins");
  check(fs::exists(dir + "/manifest.flashc") && fs::exists(dir + "/kernels.cu") && fs::exists(dir + "/kernels.sm_90a.cubin") &&
            fs::exists(dir + "/kernels.sm_80.cubin"),
        "manifest.flashc, kernels.cu and both cubins are written");
  check(!fs::exists(tmp / (".out.bundle.tmp-" + std::to_string(getpid()))) &&
            !fs::exists(tmp / (".out.bundle.old-" + std::to_string(getpid()))),
        "no temporary directory is left");
  BundleOptions ro;
  ro.noJit = 1;
  auto bundle = Bundle::open(dir, ro);
  if (checkOk(bundle, "the runtime opens the written bundle")) {
    check((*bundle)->manifest().kernels == manifest->kernels && (*bundle)->manifest().cubins.size() == 2,
          "kernels survive; two cubin lines were added");
    auto hopper = (*bundle)->selectCode(9, 0);
    check(hopper.ok() && hopper->fromCubin && hopper->arch == "sm_90a", "9.0 picks kernels.sm_90a.cubin without JIT");
    auto ampere = (*bundle)->selectCode(8, 6);
    check(ampere.ok() && ampere->fromCubin && ampere->arch == "sm_80", "8.6 picks kernels.sm_80.cubin without JIT");
  }
  options.cubinArchs = {};
  checkOk(writeBundle(dir, *manifest, source, options), "rewrite the bundle in place, source only");
  check(!fs::exists(dir + "/kernels.sm_90a.cubin"), "the old cubins are gone after the rewrite");

  std::string broken = source + "\nthis is not CUDA;\n";
  std::string brokenDir = (tmp / "broken.bundle").string();
  auto s = writeBundle(brokenDir, *manifest, broken, options);
  checkError(s, "kernels.cu(", "a source that does not compile: the NVRTC log names kernels.cu and the line");
  check(s.code() == ErrorCode::CompileFailed && !fs::exists(brokenDir), "... CompileFailed, and nothing is written");

  fs::create_directories(tmp / "precious");
  std::ofstream(tmp / "precious" / "notes.txt") << "keep me";
  checkError(writeBundle((tmp / "precious").string(), *manifest, source, {}), "not a flashc bundle",
             "refuses to overwrite a directory that is not a bundle");
  BundleWriteOptions badArch;
  badArch.cubinArchs = {"sm_9"};
  checkError(writeBundle(dir, *manifest, source, badArch), "bad cubin architecture 'sm_9'", "a bad cubin arch is refused");
  // The target spelled with a trailing separator or as `.`: the same bundle, replaced in place (both removed the old
  // bundle and then failed, the temporary directory having been made inside it or named `..tmp-PID`).
  checkOk(writeBundle(dir + "/", *manifest, source, options), "-o DIR/ rewrites the bundle at DIR");
  check(fs::exists(dir + "/manifest.flashc") && fs::is_directory(dir), "... which is still a bundle");
  {
    fs::path before = fs::current_path();
    fs::current_path(dir);
    checkError(writeBundle(".", *manifest, source, options), "it holds the working directory",
               "-o . inside a bundle is refused");
    fs::current_path(before);
    check(fs::exists(dir + "/manifest.flashc") && fs::exists(dir + "/kernels.cu"), "... and the bundle is intact");
  }
  testKernelUnits(tmp, *manifest, source);
  Manifest invalid = *manifest;
  invalid.kernels[0].entry = "";
  checkError(writeBundle(dir, invalid, source, {}), "kernel 'vector_add': missing or bad 'entry'",
             "an invalid manifest is refused before anything is written");
  fs::remove_all(tmp);
  return checkSummary();
}
