// GPU architecture names (sm_80, sm_90a, ...) and which code runs on which device.
#pragma once

#include "flashc/runtime/Manifest.h"
#include "flashc/runtime/Result.h"

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace flashc::rt {

struct Arch {
  int major = 0;
  int minor = 0;
  char suffix = 0; // 0, 'a' (arch-specific: only this exact CC) or 'f' (family)
  std::string str() const; // "sm_90a"
};

/// "sm_90a" -> {9, 0, 'a'}; "sm_120" -> {12, 0}. nullopt when malformed.
std::optional<Arch> parseArch(std::string_view name);

/// The arch NVRTC compiles for on a device of compute capability major.minor:
/// the arch-specific variant where one exists (sm_90a on 9.0, sm_100a on 10.0, ...).
Arch jitArchForDevice(int major, int minor);

/// Whether a cubin built for `cubin` loads on a device of compute capability
/// major.minor (SASS is compatible only within one major version, upward in minor;
/// `a` cubins only on their exact CC).
bool cubinRunsOn(const Arch &cubin, int major, int minor);

/// Index into `cubins` of the best cubin for the device, or -1: exact `a` arch,
/// then exact arch, then the highest lower minor of the same major.
int chooseCubin(const std::vector<CubinSpec> &cubins, int major, int minor);

/// True when the device is at least as new as one of the bundle's target archs.
bool deviceMeetsTargets(const std::vector<std::string> &archs, int major, int minor);

/// Whether a source written for `source` may be compiled (NVRTC) for a device
/// of compute capability major.minor: an `a` source only on its exact CC (it
/// may use wgmma, setmaxnreg, ...), an `f` source within its major from its
/// minor up, any other on every device at least as new (PTX-level features).
bool sourceRunsOn(const Arch &source, int major, int minor);

/// One body of code in a bundle: a source written for `archs` and the cubins
/// compiled from it (a single-arch bundle has one; a multi-arch bundle one per
/// variant, each planned for its own architecture).
struct CodeVariant {
  std::vector<std::string> archs;
  std::vector<CubinSpec> cubins;
};

/// The code a device runs.
struct CodeChoice {
  int variant = -1; // index into the variants
  int cubin = -1;   // index into that variant's cubins; -1: compile its source for jitArch
  Arch jitArch;     // jitArchForDevice(major, minor) when compiling
};

/// Picks the code for a device of compute capability major.minor: the best
/// cubin over all variants (useCubins; exact `a` arch, then exact arch, then
/// the closest lower minor of the same major); otherwise, when allowJit, the
/// source of the variant whose arch is the closest one at or below the device
/// that sourceRunsOn (exact `a` first): on 8.6 the sm_80 source, on 9.0 an
/// sm_90a one. Errors (Unsupported) start with `bundleName` and describe the
/// device as `deviceText`: the device older than every arch, no cubin when JIT
/// is disabled, or no source that may be compiled for the device.
Result<CodeChoice> chooseCode(const std::vector<CodeVariant> &variants, int major, int minor, bool useCubins,
                              bool allowJit, const std::string &bundleName, const std::string &deviceText);

} // namespace flashc::rt
