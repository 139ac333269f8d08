// GPU architecture names (sm_80, sm_90a, ...) and which code runs on which device.
#pragma once

#include "flashc/runtime/Manifest.h"

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

} // namespace flashc::rt
