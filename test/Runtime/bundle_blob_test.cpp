// Bundle blobs (docs/bundle.md, "Bundle blob"): packing, parsing, and opening
// from memory through the C++ API, the C ABI and the C++ wrapper. A damaged
// blob (truncated, bad magic, bad checksum, missing or malformed sections)
// must give a clear error, never a crash; a good one must open exactly as
// its directory does. CPU only.
#include "Check.h"

#include "flashc/flashc.hpp"
#include "flashc/runtime/BundleBlob.h"
#include "flashc/runtime/Hash.h"
#include "flashc/runtime/Runtime.h"

#include <algorithm>
#include <fstream>
#include <sstream>

using namespace flashc::rt;
using namespace flashc::test;

namespace {

const std::string kBundles = FLASHC_TEST_BUNDLES_DIR;

std::string slurp(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

BundleFiles basicFiles() {
  return {{"manifest.flashc", slurp(kBundles + "/basic/manifest.flashc")},
          {"kernels.cu", slurp(kBundles + "/basic/kernels.cu")}};
}

void testRoundTrip() {
  BundleFiles files = {{"a", "x"}, {"dir/b", std::string("\0\1\2", 3)}, {"empty", ""}};
  std::string blob = packBundleBlob(files);
  check(blob.size() % 8 == 0, "a blob's size is a multiple of 8");
  auto back = unpackBundleBlob(blob.data(), blob.size());
  if (checkOk(back, "a packed blob unpacks")) check(*back == files, "unpack(pack(files)) == files");
  auto none = unpackBundleBlob(packBundleBlob({}).data(), kBundleBlobHeaderSize);
  if (checkOk(none, "an empty blob unpacks")) check(none->empty(), "... to no files");
}

void testDamage() {
  std::string blob = packBundleBlob(basicFiles());
  // Every truncation is an error (never a crash or a read past the end: ASan/valgrind-clean by construction).
  bool allFail = true, allSay = true;
  for (size_t n = 0; n < blob.size(); n += (n < 64 ? 1 : 97)) {
    auto r = unpackBundleBlob(blob.data(), n);
    allFail = allFail && !r.ok();
    if (!r.ok() && n >= 8) allSay = allSay && contains(r.message(), "truncated");
  }
  check(allFail, "every truncated blob is rejected");
  check(allSay, "a truncated blob (past the magic) is reported as truncated");
  checkError(unpackBundleBlob(blob.data(), 20), "shorter than the 32-byte header", "a blob cut inside its header");
  checkError(unpackBundleBlob(blob.data(), blob.size() - 1), "the header says " + std::to_string(blob.size()),
             "a blob one byte short");

  std::string extra = blob + std::string(8, '\0');
  checkError(unpackBundleBlob(extra.data(), extra.size()), "trailing bytes", "trailing bytes after a blob");

  std::string magic = blob;
  magic[0] = 'X';
  checkError(unpackBundleBlob(magic.data(), magic.size()), "bad magic", "a blob with a bad magic");
  std::string text = "flashc-bundle 1\n";
  checkError(unpackBundleBlob(text.data(), text.size()), "not a flashc bundle blob", "a manifest is not a blob");
  checkError(unpackBundleBlob(nullptr, 0), "null", "no data");

  std::string format = blob;
  format[7] = 2;
  auto f = unpackBundleBlob(format.data(), format.size());
  checkError(f, "container format byte 2 is not supported", "a future container format");
  check(f.code() == ErrorCode::Unsupported, "... is Unsupported");

  std::string version = blob;
  version[8] = 9;
  checkError(unpackBundleBlob(version.data(), version.size()), "version 9 is not supported", "a future blob version");

  std::string flipped = blob;
  flipped[blob.size() / 2] ^= 0x20;
  checkError(unpackBundleBlob(flipped.data(), flipped.size()), "checksum mismatch", "a blob with a flipped byte");

  // Structural damage behind a valid checksum (a buggy packer): recompute it.
  auto reseal = [](std::string b) {
    uint64_t sum = fnv1a64(b.data() + kBundleBlobHeaderSize, b.size() - kBundleBlobHeaderSize);
    for (int i = 0; i < 8; ++i) b[24 + size_t(i)] = char(sum >> (8 * i) & 0xff);
    return b;
  };
  std::string count = blob;
  count[12] = 3; // one section more than there is
  checkError(unpackBundleBlob(reseal(count).data(), count.size()), "runs past the end", "a section count too large");
  std::string big = blob;
  big[32 + 8 + 6] = 0x7f; // the first section's data size, enormous
  checkError(unpackBundleBlob(reseal(big).data(), big.size()), "run past the end", "a section size too large");
  std::string name = packBundleBlob({{"../x", "y"}});
  checkError(unpackBundleBlob(name.data(), name.size()), "'..' component", "a section named ../x");
  // Section 0: header at 32, name "a" at 48, data at 49, padded to 56; section 1's name at 72.
  std::string dup = packBundleBlob({{"a", "1"}, {"b", "2"}});
  dup[72] = 'a';
  checkError(unpackBundleBlob(reseal(dup).data(), dup.size()), "appears twice", "two sections with one name");
}

void testOpenMemory() {
  // The packer takes what the loader reads; the blob opens as the directory does.
  for (std::string name : {"basic", "multiarch", "tma", "segment_plan"}) {
    auto blob = packBundleDirectory(kBundles + "/" + name);
    if (!checkOk(blob, "pack bundles/" + name)) continue;
    auto fromDir = Bundle::open(kBundles + "/" + name);
    auto fromMem = Bundle::openMemory(blob->data(), blob->size());
    if (!checkOk(fromMem, "open bundles/" + name + " from memory") || !fromDir) continue;
    check((*fromMem)->kernelNames() == (*fromDir)->kernelNames() &&
              (*fromMem)->programNames() == (*fromDir)->programNames() &&
              (*fromMem)->variantArchs() == (*fromDir)->variantArchs(),
          "bundles/" + name + ": the same kernels, programs and variants from memory as from the directory");
  }
  checkError(packBundleDirectory(kBundles + "/bad_version"), "format version 3 is not supported",
             "packing an invalid bundle fails as opening it does");
  checkError(packBundleDirectory(kBundles + "/none"), "does not exist", "packing a missing directory");

  // Missing sections: the same validation, and messages, as on disk.
  BundleFiles noSource = basicFiles();
  noSource.erase("kernels.cu");
  std::string blob = packBundleBlob(noSource);
  checkError(Bundle::openMemory(blob.data(), blob.size()), "bundle <memory>: source kernels.cu is missing",
             "a blob without the kernels source");
  blob = packBundleBlob({{"kernels.cu", "x"}});
  checkError(Bundle::openMemory(blob.data(), blob.size()), "bundle <memory> has no manifest.flashc",
             "a blob without a manifest");
  BundleFiles dirSource = basicFiles();
  dirSource["kernels.cu/inner"] = dirSource["kernels.cu"];
  dirSource.erase("kernels.cu");
  blob = packBundleBlob(dirSource);
  checkError(Bundle::openMemory(blob.data(), blob.size()), "source kernels.cu is not a file",
             "a blob whose source is a directory");

  // A cubin section: present but garbage, and missing.
  BundleFiles cubin = basicFiles();
  std::string &manifest = cubin["manifest.flashc"];
  manifest.insert(manifest.find("arch sm_80 sm_90a\n") + 18, "cubin sm_80 kernels.sm_80.cubin\n");
  blob = packBundleBlob(cubin);
  checkError(Bundle::openMemory(blob.data(), blob.size()), "cubin kernels.sm_80.cubin (sm_80) is missing",
             "a blob without a listed cubin");
  cubin["kernels.sm_80.cubin"] = "not an ELF";
  blob = packBundleBlob(cubin);
  checkError(Bundle::openMemory(blob.data(), blob.size()), "is not an ELF file", "a blob with a garbage cubin");

  // Multi-arch: a variant's missing manifest inside the blob.
  auto multi = packBundleDirectory(kBundles + "/multiarch");
  if (multi) {
    auto files = unpackBundleBlob(multi->data(), multi->size());
    files->erase("sm_80/manifest.flashc");
    blob = packBundleBlob(*files);
    checkError(Bundle::openMemory(blob.data(), blob.size()), "variant sm_80 has no sm_80/manifest.flashc",
               "a multi-arch blob without a variant's manifest");
  }

  // The bytes are copied: the caller's buffer may go away.
  auto good = packBundleDirectory(kBundles + "/basic");
  std::string copy = *good;
  auto opened = Bundle::openMemory(copy.data(), copy.size());
  copy.assign(copy.size(), '\0');
  check(opened.ok() && (*opened)->findKernel("row_scale") != nullptr, "a memory bundle outlives its buffer");
}

void testCApi() {
  auto blob = packBundleDirectory(kBundles + "/basic");
  flashc_bundle b = nullptr;
  check(flashc_bundle_open_memory(blob->data(), blob->size(), &b) == FLASHC_OK && b,
        "flashc_bundle_open_memory opens a good blob", flashc_last_error());
  size_t n = 0;
  check(b && flashc_bundle_kernel_count(b, &n) == FLASHC_OK && n > 0, "... and lists its kernels");
  flashc_bundle_close(b);
  b = reinterpret_cast<flashc_bundle>(1);
  flashc_status s = flashc_bundle_open_memory(blob->data(), blob->size() - 5, &b);
  check(s == FLASHC_ERROR_INVALID_BUNDLE && b == nullptr, "a truncated blob: FLASHC_ERROR_INVALID_BUNDLE, no handle");
  check(contains(flashc_last_error(), "truncated"), "... and flashc_last_error says truncated", flashc_last_error());
  check(flashc_bundle_open_memory(nullptr, 10, &b) == FLASHC_ERROR_INVALID_ARGUMENT, "null data: INVALID_ARGUMENT");
  check(flashc_bundle_open_memory(blob->data(), blob->size(), nullptr) == FLASHC_ERROR_INVALID_ARGUMENT,
        "null out: INVALID_ARGUMENT");
  flashc_open_options o{};
  o.disable_cache = 1;
  check(flashc_bundle_open_memory_ex(blob->data(), blob->size(), &o, &b) == FLASHC_OK, "flashc_bundle_open_memory_ex");
  flashc_bundle_close(b);
}

void testCppWrapper() {
  auto blob = packBundleDirectory(kBundles + "/basic");
  try {
    flashc::Bundle b = flashc::Bundle::openMemory(blob->data(), blob->size());
    auto kernels = b.kernels();
    check(std::find(kernels.begin(), kernels.end(), "row_scale") != kernels.end(), "flashc::Bundle lists row_scale");
    flashc::Bundle moved = std::move(b);
    check(moved.get() != nullptr && b.get() == nullptr, "flashc::Bundle moves its handle");
    flashc::Args args;
    args.f32("alpha", 1.5f).tensor("x", nullptr, FLASHC_BF16, {33, 200});
    auto shape = moved.paramShape("row_scale", "y", args);
    check(shape == std::vector<int64_t>{33, 200}, "flashc::Bundle::paramShape from bound arguments");
  } catch (const flashc::Error &e) {
    check(false, "the C++ wrapper on a good blob", e.what());
  }
  try {
    flashc::Bundle::openMemory("FLCBLOB", 7);
    check(false, "flashc::Bundle::openMemory on garbage throws");
  } catch (const flashc::Error &e) {
    check(e.status() == FLASHC_ERROR_INVALID_BUNDLE && contains(e.what(), "bad magic"),
          "flashc::Bundle::openMemory on garbage throws flashc::Error(INVALID_BUNDLE)", e.what());
  }
  try {
    flashc::Bundle::open(kBundles + "/none");
    check(false, "flashc::Bundle::open on a missing directory throws");
  } catch (const flashc::Error &e) {
    check(e.status() == FLASHC_ERROR_NOT_FOUND, "flashc::Bundle::open on a missing directory: NOT_FOUND", e.what());
  }
}

} // namespace

int main() {
  testRoundTrip();
  testDamage();
  testOpenMemory();
  testCApi();
  testCppWrapper();
  return checkSummary();
}
