// Architecture naming and cubin compatibility rules.
#include "flashc/runtime/Arch.h"

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

int chooseCubin(const std::vector<CubinSpec> &cubins, int major, int minor) {
  int best = -1, bestScore = -1;
  for (size_t i = 0; i < cubins.size(); ++i) {
    auto a = parseArch(cubins[i].arch);
    if (!a || !cubinRunsOn(*a, major, minor)) continue;
    // Score: exact `a` > exact > closer lower minor.
    int score = a->minor * 4 + (a->minor == minor ? 2 : 0) + (a->suffix == 'a' ? 1 : 0);
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

} // namespace flashc::rt
