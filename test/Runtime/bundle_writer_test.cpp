// The compiler's bundle writer (compiler/lib/Codegen/BundleWriter.cpp, plain C++):
// what it writes opens in the runtime, with cubins usable without JIT; a
// bundle that does not compile is never written.
#include "Check.h"

#include "flashc/Compiler/BundleWriter.h"
#include "flashc/runtime/Runtime.h"

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
  check(!fs::exists(dir + ".tmp-" + std::to_string(getpid())), "no temporary directory is left");
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
  Manifest invalid = *manifest;
  invalid.kernels[0].entry = "";
  checkError(writeBundle(dir, invalid, source, {}), "kernel 'vector_add': missing or bad 'entry'",
             "an invalid manifest is refused before anything is written");
  fs::remove_all(tmp);
  return checkSummary();
}
