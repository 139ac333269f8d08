//===- KernelUnit.h - one translation unit of a bundle's source -*- C++ -*-===//
#ifndef FLASHC_COMPILER_KERNELUNIT_H
#define FLASHC_COMPILER_KERNELUNIT_H

#include <string>
#include <vector>

namespace flashc {

/// The includes every kernel needs plus the code of one kernel entry, which
/// the manifest kernels in `kernels` all launch: the emitter prints kernels
/// whose code is the same but for names (a gated FFN's weight gradients) once.
/// It compiles on its own into <kernels[0]>.<arch>.cubin (`cubin ... for
/// <kernels>`), in parallel with the others and through the kernel cache.
struct KernelUnit {
  std::string text;
  std::vector<std::string> kernels;
};

} // namespace flashc

#endif // FLASHC_COMPILER_KERNELUNIT_H
