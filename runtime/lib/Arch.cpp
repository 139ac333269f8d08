// Architecture naming and cubin compatibility rules.
#include "flashc/runtime/Arch.h"

#include <algorithm>

#include <cctype>

namespace flashc::rt {

std::string Arch::str() const {
  std::string s = "sm_" + std::to_string(major) + std::to_string(minor);
  if (suffix) s += suffix;
  return s;
}

std::optional<Arch> parseArch(std::string_view name) {
  if (name.substr(0, 3) != "sm_") return std::nullopt;
  std::string_view rest = name.substr(3);
  Arch a;
  if (!rest.empty() && (rest.back() == 'a' || rest.back() == 'f')) {
    a.suffix = rest.back();
    rest.remove_suffix(1);
  }
  if (rest.size() < 2 || rest.size() > 3) return std::nullopt;
  for (char c : rest)
    if (!std::isdigit(static_cast<unsigned char>(c))) return std::nullopt;
  a.major = std::stoi(std::string(rest.substr(0, rest.size() - 1)));
  a.minor = rest.back() - '0';
  if (a.major < 1) return std::nullopt;
  return a;
}

Arch jitArchForDevice(int major, int minor) {
  Arch a{major, minor, 0};
  // Arch-specific features (wgmma, setmaxnreg, tcgen05) need the `a` target;
  // CUDA 13 offers it for 9.0 and for the 10.x/12.x families.
  if ((major == 9 && minor == 0) || major >= 10) a.suffix = 'a';
  return a;
}

bool cubinRunsOn(const Arch &cubin, int major, int minor) {
  if (cubin.suffix == 'a') return cubin.major == major && cubin.minor == minor;
  return cubin.major == major && cubin.minor <= minor;
}

namespace {
// Preference among code that runs on a device: a newer arch (closer to the
// device) first, then an exact match of the CC, then the `a` variant.
int archScore(const Arch &a, int major, int minor) {
  return (a.major * 10 + a.minor) * 4 + (a.major == major && a.minor == minor ? 2 : 0) + (a.suffix == 'a' ? 1 : 0);
}

std::string joined(const std::vector<std::string> &names) {
  std::string s;
  for (const auto &n : names) s += (s.empty() ? "" : ", ") + n;
  return s;
}
} // namespace

int chooseCubin(const std::vector<CubinSpec> &cubins, int major, int minor) {
  int best = -1, bestScore = -1;
  for (size_t i = 0; i < cubins.size(); ++i) {
    auto a = parseArch(cubins[i].arch);
    if (!a || !cubinRunsOn(*a, major, minor)) continue;
    int score = archScore(*a, major, minor);
    if (score > bestScore) {
      bestScore = score;
      best = int(i);
    }
  }
  return best;
}

bool deviceMeetsTargets(const std::vector<std::string> &archs, int major, int minor) {
  for (const auto &name : archs) {
    auto a = parseArch(name);
    if (a && (major > a->major || (major == a->major && minor >= a->minor))) return true;
  }
  return archs.empty();
}

bool sourceRunsOn(const Arch &source, int major, int minor) {
  if (source.suffix == 'a') return source.major == major && source.minor == minor;
  if (source.suffix == 'f') return source.major == major && source.minor <= minor;
  return major > source.major || (major == source.major && minor >= source.minor);
}

Result<CodeChoice> chooseCode(const std::vector<CodeVariant> &variants, int major, int minor, bool useCubins,
                              bool allowJit, const std::string &bundleName, const std::string &deviceText) {
  std::vector<std::string> archs;
  for (const auto &v : variants) archs.insert(archs.end(), v.archs.begin(), v.archs.end());
  if (!deviceMeetsTargets(archs, major, minor))
    return makeError(ErrorCode::Unsupported, bundleName + " targets " + joined(archs) + "; the device (" + deviceText +
                                                 ") is older than every one of them");
  CodeChoice choice;
  choice.jitArch = jitArchForDevice(major, minor);
  if (useCubins) {
    int bestScore = -1;
    for (size_t v = 0; v < variants.size(); ++v) {
      int i = chooseCubin(variants[v].cubins, major, minor);
      if (i < 0) continue;
      int score = archScore(*parseArch(variants[v].cubins[size_t(i)].arch), major, minor);
      if (score > bestScore) {
        bestScore = score;
        choice.variant = int(v);
        choice.cubin = i;
      }
    }
    if (choice.variant >= 0) return choice;
  }
  if (!allowJit) {
    std::string cubins;
    std::vector<std::string> listed; // an arch compiled per kernel has several cubins: named once
    for (const auto &v : variants)
      for (const auto &c : v.cubins)
        if (std::find(listed.begin(), listed.end(), c.arch) == listed.end()) {
          listed.push_back(c.arch);
          cubins += " " + c.arch;
        }
    return makeError(ErrorCode::Unsupported, "JIT compilation is disabled (FLASHC_NO_JIT) and " + bundleName +
                                                 " has no cubin that loads on " + choice.jitArch.str() + " (" +
                                                 deviceText + "); cubins in the bundle:" +
                                                 (cubins.empty() ? std::string(" none") : cubins));
  }
  int bestScore = -1;
  for (size_t v = 0; v < variants.size(); ++v)
    for (const auto &name : variants[v].archs) {
      auto a = parseArch(name);
      if (!a || !sourceRunsOn(*a, major, minor)) continue;
      if (int score = archScore(*a, major, minor); score > bestScore) {
        bestScore = score;
        choice.variant = int(v);
      }
    }
  if (choice.variant < 0)
    return makeError(ErrorCode::Unsupported,
                     bundleName + " has no code that runs on the device (" + deviceText + "): its code targets " +
                         joined(archs) +
                         ", and code for an arch-specific target (sm_90a, sm_100a, ...) runs only on that exact "
                         "compute capability; rebuild it for this device or add an architecture without the 'a' "
                         "suffix (e.g. sm_80, which runs on every newer device)");
  return choice;
}

} // namespace flashc::rt
