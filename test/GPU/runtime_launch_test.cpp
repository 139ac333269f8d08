// Runtime on a GPU: load from source (NVRTC) and from a shipped cubin, launch
// the test bundle's kernels and a program, compare poisoned outputs with CPU
// results (float64), check argument errors and concurrent launches.
#include "runtime_gpu_util.h"

#include "flashc/flashc.h"
#include "flashc/runtime/Arch.h"
#include "flashc/runtime/KernelCache.h"

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>
#include <unistd.h>

using namespace flashc::rt;
using namespace flashc::test;
namespace fs = std::filesystem;

namespace {

const char *kBasic = FLASHC_TEST_BUNDLES_DIR "/basic";

std::string readText(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void testVectorAdd(const Driver &d, Bundle &b, const std::string &label) {
  const int64_t n = 1000; // not a multiple of the block
  auto a = randomValues(n, 1), bb = randomValues(2 * n, 2);
  DeviceBuffer da(d, n * 4), db(d, 2 * n * 4), dc(d, n * 4);
  da.upload(a);
  db.upload(bb);
  Arguments args;
  int64_t shape[1] = {n}, stride2[1] = {2};
  (void)args.setTensor("a", da.get(), DType::F32, 1, shape);
  (void)args.setTensor("b", db.get(), DType::F32, 1, shape, stride2); // every other element
  (void)args.setTensor("c", dc.get(), DType::F32, 1, shape);
  if (!checkOk(b.launch("vector_add", args), label + ": launch vector_add (N=1000, b strided)")) return;
  auto c = dc.download<float>(n);
  int bad = 0;
  for (int64_t i = 0; i < n; ++i)
    if (c[i] != float(double(a[i]) + double(bb[2 * i]))) ++bad;
  check(bad == 0, label + ": vector_add matches the CPU exactly", std::to_string(bad) + " mismatches");
}

void testRowScale(const Driver &d, Bundle &b) {
  const int64_t M = 37, N = 300, ld = 320;
  auto xs = randomValues(M * ld, 3), ss = randomValues(M, 4);
  std::vector<uint16_t> x(M * ld);
  for (size_t i = 0; i < x.size(); ++i) x[i] = flashc::reference::bf16FromFloat(xs[i]);
  DeviceBuffer dx(d, M * ld * 2), ds(d, M * 4), dy(d, M * ld * 2);
  dx.upload(x);
  ds.upload(ss);
  Arguments args;
  int64_t shape[2] = {M, N}, strides[2] = {ld, 1}, sShape[1] = {M};
  (void)args.setTensor("x", dx.get(), DType::BF16, 2, shape, strides);
  (void)args.setTensor("s", ds.get(), DType::F32, 1, sShape);
  (void)args.setTensor("y", dy.get(), DType::BF16, 2, shape, strides);
  args.setF32("alpha", 0.75f);
  if (!checkOk(b.launch("row_scale", args), "launch row_scale (bf16, 37 x 300, row stride 320)")) return;
  auto y = dy.download<uint16_t>(M * ld);
  int bad = 0, padTouched = 0;
  double worst = 0;
  for (int64_t m = 0; m < M; ++m)
    for (int64_t j = 0; j < ld; ++j) {
      uint16_t got = y[m * ld + j];
      if (j >= N) {
        padTouched += got != 0xFFFF;
        continue;
      }
      double ref = double(flashc::reference::bf16ToFloat(x[m * ld + j])) * double(ss[m]) * 0.75;
      double err = std::fabs(double(flashc::reference::bf16ToFloat(got)) - ref);
      worst = std::max(worst, err);
      if (!(err <= std::fabs(ref) * (1.0 / 128) + 1e-30)) ++bad; // within one bf16 rounding
    }
  check(bad == 0, "row_scale within bf16 rounding of the float64 reference (worst " + std::to_string(worst) + ")",
        std::to_string(bad) + " mismatches");
  check(padTouched == 0, "row_scale leaves the row padding (poisoned) untouched");
}

void testFillAndProgram(const Driver &d, Bundle &b) {
  const int64_t n = 777;
  DeviceBuffer dout(d, n * 4);
  Arguments args;
  int64_t shape[1] = {n};
  (void)args.setTensor("out", dout.get(), DType::I32, 1, shape);
  args.setI32("value", -5);
  if (checkOk(b.launch("fill", args), "launch fill (i32 tensor, i32 scalar)")) {
    auto out = dout.download<int32_t>(n);
    int bad = 0;
    for (int64_t i = 0; i < n; ++i) bad += out[i] != int32_t(-5 + i);
    check(bad == 0, "fill writes value + i");
  }

  const int64_t m = 1000;
  auto x = randomValues(m, 5), bb = randomValues(m, 6);
  DeviceBuffer dx(d, m * 4), db(d, m * 4), dres(d, m * 4);
  dx.upload(x);
  db.upload(bb);
  Arguments p;
  int64_t ps[1] = {m};
  (void)p.setTensor("x", dx.get(), DType::F32, 1, ps);
  (void)p.setTensor("b", db.get(), DType::F32, 1, ps);
  (void)p.setTensor("out", dres.get(), DType::F32, 1, ps);
  p.setF32("alpha", 2.0f);
  // Twice: scale_accumulate does tmp += alpha * x, so a scratch that is not
  // zero-filled on every launch (pool memory is reused) would show up.
  for (int round = 0; round < 2; ++round) {
    dres.poison();
    if (!checkOk(b.launch("scale_then_add", p), "launch program scale_then_add, round " + std::to_string(round))) return;
    auto r = dres.download<float>(m);
    int bad = 0;
    for (int64_t i = 0; i < m; ++i) bad += std::fabs(double(r[i]) - (2.0 * x[i] + bb[i])) > 1e-6;
    check(bad == 0, "program result out = 2 x + b (zero-filled scratch), round " + std::to_string(round));
  }
  // The caller's workspace holds the scratch the kernels write: one over a tensor argument is refused.
  auto need = b.workspaceBytes("scale_then_add", p);
  if (checkOk(need, "workspace bytes of scale_then_add") && *need > 0) {
    DeviceBuffer ws(d, *need + 4096);
    Workspace own{ws.get(), *need};
    checkOk(b.launchProgram("scale_then_add", p, nullptr, &own), "a workspace of its own");
    // out in the first m floats of one allocation, a workspace from byte 3840 (256-aligned) over its tail.
    DeviceBuffer shared(d, 3840 + *need);
    Arguments q = p;
    (void)q.setTensor("out", shared.get(), DType::F32, 1, ps);
    Workspace overOut{static_cast<char *>(shared.get()) + 3840, *need};
    checkError(b.launchProgram("scale_then_add", q, nullptr, &overOut), "the workspace (written, bytes ",
               "a workspace over the output's tail is refused");
    checkError(b.launchProgram("scale_then_add", q, nullptr, &overOut), "shares memory with argument 'out'",
               "... naming the argument");
  }
}

void testArgumentErrors(const Driver &d, Bundle &b) {
  DeviceBuffer dx(d, 64 * 4);
  float host[64] = {0};
  Arguments args;
  int64_t shape[1] = {64};
  (void)args.setTensor("a", dx.get(), DType::F32, 1, shape);
  (void)args.setTensor("b", host, DType::F32, 1, shape);
  (void)args.setTensor("c", dx.get(), DType::F32, 1, shape);
  checkError(b.launch("vector_add", args), "argument 'b': pointer", "a host pointer is refused (not device memory)");
  checkError(b.launch("vector_add", args), "is not device memory known to CUDA", "... with a clear message");
  (void)args.setTensor("b", dx.get(), DType::F16, 1, shape);
  checkError(b.launch("vector_add", args), "argument 'b': dtype is f16, the kernel expects f32", "dtype error on the GPU path");
  checkError(b.launch("no_such_kernel", args), "has no kernel or program 'no_such_kernel'", "unknown kernel name");

  // Device memory, but more of it than the allocation holds (64 floats allocated, 2^31 - 1 passed: the largest dim
  // the kernels' 32-bit indices take, its last byte 8 GB past the allocation's start).
  DeviceBuffer dy(d, 64 * 4);
  int64_t huge[1] = {INT32_MAX};
  Arguments big;
  (void)big.setTensor("a", dx.get(), DType::F32, 1, huge);
  (void)big.setTensor("b", dx.get(), DType::F32, 1, huge);
  (void)big.setTensor("c", dy.get(), DType::F32, 1, huge);
  checkError(b.launch("vector_add", big), "argument 'a': its last byte (",
             "a tensor larger than its allocation is refused by its last byte");
  checkError(b.launch("vector_add", big), "is the tensor larger than its allocation?", "... saying why");
  int64_t past32[1] = {int64_t(1) << 36};
  (void)big.setTensor("a", dx.get(), DType::F32, 1, past32);
  checkError(b.launch("vector_add", big), "argument 'a': dim 0 is 68719476736, above 2147483647",
             "a dim past the kernels' 32-bit indices is refused before any pointer check");
  // The output passed as an input: the kernels do not run in place.
  Arguments alias;
  (void)alias.setTensor("a", dx.get(), DType::F32, 1, shape);
  (void)alias.setTensor("b", dy.get(), DType::F32, 1, shape);
  (void)alias.setTensor("c", dx.get(), DType::F32, 1, shape);
  checkError(b.launch("vector_add", alias), "argument 'c' (written, bytes ", "an output that is also an input is refused");
  checkError(b.launch("vector_add", alias), "shares memory with argument 'a'", "... naming both");
  // Half of it: c over a's second half.
  int64_t half[1] = {32};
  (void)alias.setTensor("a", dx.get(), DType::F32, 1, half);
  (void)alias.setTensor("b", dy.get(), DType::F32, 1, half);
  (void)alias.setTensor("c", static_cast<char *>(dx.get()) + 64, DType::F32, 1, half);
  checkError(b.launch("vector_add", alias), "shares memory with argument 'a'", "an output over half an input is refused");
  // Two inputs may be one buffer.
  (void)alias.setTensor("b", dx.get(), DType::F32, 1, half);
  (void)alias.setTensor("c", dy.get(), DType::F32, 1, half);
  checkOk(b.launch("vector_add", alias), "two inputs in one buffer launch");
  flashc_bundle capi = nullptr;
  if (check(flashc_bundle_open(kBasic, &capi) == FLASHC_OK, "C ABI: open for the overlap check", flashc_last_error())) {
    flashc_args cargs = nullptr;
    flashc_args_create(&cargs);
    flashc_args_set_tensor(cargs, "a", dx.get(), FLASHC_F32, 1, shape, nullptr);
    flashc_args_set_tensor(cargs, "b", dy.get(), FLASHC_F32, 1, shape, nullptr);
    flashc_args_set_tensor(cargs, "c", dy.get(), FLASHC_F32, 1, shape, nullptr);
    check(flashc_launch(capi, "vector_add", cargs, nullptr) == FLASHC_ERROR_INVALID_ARGUMENT &&
              contains(flashc_last_error(), "argument 'c' (written"),
          "C ABI: an output aliasing an input gives INVALID_ARGUMENT", flashc_last_error());
    flashc_args_destroy(cargs);
    flashc_bundle_close(capi);
  }

  Arguments empty;
  int64_t zero[2] = {0, 64}, zs[1] = {0};
  (void)empty.setTensor("x", nullptr, DType::BF16, 2, zero);
  (void)empty.setTensor("s", nullptr, DType::F32, 1, zs);
  (void)empty.setTensor("y", nullptr, DType::BF16, 2, zero);
  empty.setF32("alpha", 1);
  checkOk(b.launch("row_scale", empty), "zero rows: launches nothing and succeeds");
  check(d.cuCtxSynchronize() == CUDA_SUCCESS, "the context is healthy after all error cases");
}

void testFromCubin(const Driver &d, const DeviceInfo &dev, const fs::path &tmp) {
  Arch arch = jitArchForDevice(dev.major, dev.minor);
  auto cubin = compileCuda(readText(std::string(kBasic) + "/kernels.cu"), arch.str(), {"-std=c++17"});
  if (!checkOk(cubin, "compile a cubin for " + arch.str())) return;
  fs::path dir = tmp / "cubin-bundle";
  fs::create_directories(dir);
  fs::copy_file(std::string(kBasic) + "/kernels.cu", dir / "kernels.cu", fs::copy_options::overwrite_existing);
  std::string file = "kernels." + arch.str() + ".cubin";
  std::ofstream(dir / file, std::ios::binary).write(cubin->cubin.data(), std::streamsize(cubin->cubin.size()));
  auto text = readText(std::string(kBasic) + "/manifest.flashc");
  auto m = parseManifest(text);
  m->cubins = {{arch.str(), file}};
  std::ofstream(dir / "manifest.flashc") << writeManifest(*m);
  BundleOptions o;
  o.noJit = 1; // must come from the cubin
  auto b = Bundle::open(dir.string(), o);
  if (!checkOk(b, "open the bundle with a shipped cubin")) return;
  auto info = (*b)->prepare();
  check(info.ok() && info->fromCubin && info->cubinFile == file, "no-JIT: the shipped " + arch.str() + " cubin is loaded",
        info.ok() ? "" : info.message());
  testVectorAdd(d, **b, "from cubin");
}

/// A bundle whose cubins each hold some kernels (`cubin <arch> <file> for
/// <kernel>...`, as flashc writes one per kernel): one module per cubin, each
/// kernel taken from its own; an entry missing from its cubin is an error.
void testFromKernelCubins(const Driver &d, const DeviceInfo &dev, const fs::path &tmp) {
  Arch arch = jitArchForDevice(dev.major, dev.minor);
  auto cubin = compileCuda(readText(std::string(kBasic) + "/kernels.cu"), arch.str(), {"-std=c++17"});
  if (!checkOk(cubin, "compile a cubin for " + arch.str())) return;
  auto m = parseManifest(readText(std::string(kBasic) + "/manifest.flashc"));
  fs::path dir = tmp / "kernel-cubins-bundle";
  fs::create_directories(dir);
  fs::copy_file(std::string(kBasic) + "/kernels.cu", dir / "kernels.cu", fs::copy_options::overwrite_existing);
  // Two files of the same code: the first three kernels from one, the rest from the other.
  m->cubins.clear();
  for (int part = 0; part < 2; ++part) {
    CubinSpec c{arch.str(), "part" + std::to_string(part) + "." + arch.str() + ".cubin", {}, 0};
    for (size_t k = size_t(part) * 3; k < m->kernels.size() && k < size_t(part + 1) * 3; ++k)
      c.kernels.push_back(m->kernels[k].name);
    std::ofstream(dir / c.file, std::ios::binary).write(cubin->cubin.data(), std::streamsize(cubin->cubin.size()));
    m->cubins.push_back(c);
  }
  std::ofstream(dir / "manifest.flashc") << writeManifest(*m);
  BundleOptions o;
  o.noJit = 1;
  auto b = Bundle::open(dir.string(), o);
  if (!checkOk(b, "open a bundle with two cubins for one arch")) return;
  auto info = (*b)->prepare();
  check(info.ok() && info->fromCubin && info->cubinFiles.size() == 2, "both cubins are loaded",
        info.ok() ? info->cubinFile : info.message());
  testVectorAdd(d, **b, "from a per-kernel cubin");
  testFillAndProgram(d, **b);

  // vector_add's cubin lacks its entry: named when the code is loaded.
  auto other = compileCuda("extern \"C\" __global__ void not_vector_add() {}", arch.str(), {});
  if (!checkOk(other, "compile a cubin without vector_add")) return;
  std::ofstream(dir / m->cubins[0].file, std::ios::binary).write(other->cubin.data(), std::streamsize(other->cubin.size()));
  auto missing = Bundle::open(dir.string(), o);
  if (checkOk(missing, "open it again (the files look like cubins)"))
    checkError((*missing)->prepare(), "kernel 'vector_add': entry symbol 'flashc_test_vector_add' is not in the code of the cubin listed for it",
               "a kernel whose cubin lacks its entry is an error");
}

void testCApi(const Driver &d) {
  flashc_bundle bundle = nullptr;
  if (!check(flashc_bundle_open(kBasic, &bundle) == FLASHC_OK, "C ABI: open", flashc_last_error())) return;
  const int64_t n = 513;
  auto a = randomValues(n, 7), bb = randomValues(n, 8);
  DeviceBuffer da(d, n * 4), db(d, n * 4), dc(d, n * 4);
  da.upload(a);
  db.upload(bb);
  flashc_args args = nullptr;
  flashc_args_create(&args);
  int64_t shape[1] = {n};
  flashc_args_set_tensor(args, "a", da.get(), FLASHC_F32, 1, shape, nullptr);
  flashc_args_set_tensor(args, "b", db.get(), FLASHC_F32, 1, shape, nullptr);
  flashc_args_set_tensor(args, "c", dc.get(), FLASHC_F32, 1, shape, nullptr);
  if (check(flashc_launch(bundle, "vector_add", args, nullptr) == FLASHC_OK, "C ABI: launch vector_add", flashc_last_error())) {
    auto c = dc.download<float>(n);
    int bad = 0;
    for (int64_t i = 0; i < n; ++i) bad += c[i] != a[i] + bb[i];
    check(bad == 0, "C ABI: result matches the CPU");
  }
  flashc_args_set_tensor(args, "c", dc.get(), FLASHC_F32, 1, shape, nullptr);
  int64_t other[1] = {n + 1};
  flashc_args_set_tensor(args, "b", db.get(), FLASHC_F32, 1, other, nullptr);
  check(flashc_launch(bundle, "vector_add", args, nullptr) == FLASHC_ERROR_INVALID_ARGUMENT &&
            contains(flashc_last_error(), "argument 'b' dim 0 (N) is 514 but argument 'a' dim 0 bound N to 513"),
        "C ABI: mismatched sizes give INVALID_ARGUMENT naming the argument", flashc_last_error());
  flashc_args_destroy(args);
  flashc_bundle_close(bundle);
}

void testThreads(const Driver &d, const fs::path &tmp) {
  BundleOptions o;
  o.cacheDir = (tmp / "threads-cache").string();
  o.extraNvrtcOptions = {"-DFLASHC_THREAD_TEST=" + std::to_string(getpid())}; // a key no one compiled yet
  auto b = Bundle::open(kBasic, o);
  if (!checkOk(b, "open for the thread test")) return;
  int compilesBefore = compileStats().compiles.load();
  const int threads = 6;
  const int64_t n = 4096;
  std::vector<std::unique_ptr<DeviceBuffer>> as, cs;
  for (int t = 0; t < threads; ++t) {
    as.emplace_back(new DeviceBuffer(d, n * 4));
    cs.emplace_back(new DeviceBuffer(d, n * 4));
    as[t]->upload(std::vector<float>(n, float(t)));
  }
  std::atomic<int> failures{0};
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([&, t] {
      for (int rep = 0; rep < 20; ++rep) {
        Arguments args;
        int64_t shape[1] = {n};
        (void)args.setTensor("a", as[t]->get(), DType::F32, 1, shape);
        (void)args.setTensor("b", as[t]->get(), DType::F32, 1, shape);
        (void)args.setTensor("c", cs[t]->get(), DType::F32, 1, shape);
        if (!(*b)->launch("vector_add", args).ok()) ++failures;
      }
    });
  for (auto &th : pool) th.join();
  check(failures == 0, "6 threads x 20 concurrent launches succeed");
  check(compileStats().compiles.load() - compilesBefore == 1, "the first launches from 6 threads compile once",
        std::to_string(compileStats().compiles.load() - compilesBefore) + " compiles");
  int bad = 0;
  for (int t = 0; t < threads; ++t) {
    auto c = cs[t]->download<float>(n);
    for (float v : c) bad += v != 2.0f * t;
  }
  check(bad == 0, "every thread's result is right");
}

} // namespace

int main() {
  const Driver *d = driverOrSkip();
  if (!d) return kSkipReturnCode;
  auto dev = currentDeviceInfo();
  if (!checkOk(dev, "current device")) return checkSummary();
  std::printf("device %d: %s, compute capability %d.%d, opt-in shared memory %lld bytes\n", dev->ordinal, dev->name.c_str(),
              dev->major, dev->minor, (long long)dev->limits.maxDynamicSharedBytes);
  fs::path tmp = fs::temp_directory_path() / ("flashc-gpu-launch-" + std::to_string(getpid()));
  fs::create_directories(tmp);

  BundleOptions o;
  o.cacheDir = (tmp / "cache").string();
  auto b = Bundle::open(kBasic, o);
  if (!checkOk(b, "open the basic bundle")) return checkSummary();
  auto info = (*b)->prepare();
  check(info.ok() && !info->fromCubin && info->arch == jitArchForDevice(dev->major, dev->minor).str(),
        "from source: kernels.cu compiled by NVRTC for the device's arch", info.ok() ? info->arch : info.message());
  testVectorAdd(*d, **b, "from source");
  testRowScale(*d, **b);
  testFillAndProgram(*d, **b);
  testArgumentErrors(*d, **b);
  testFromCubin(*d, *dev, tmp);
  testFromKernelCubins(*d, *dev, tmp);
  testCApi(*d);
  testThreads(*d, tmp);
  fs::remove_all(tmp);
  return checkSummary();
}
