// Canonical printer for manifest.flashc (the inverse of ManifestParser.cpp).
#include "flashc/runtime/Manifest.h"

namespace flashc::rt {

std::string writeManifest(const Manifest &m) {
  std::string out;
  auto line = [&out](const std::string &s) { out += s + '\n'; };
  auto joined = [](const std::vector<std::string> &v) {
    std::string s;
    for (const auto &w : v) s += ' ' + w;
    return s;
  };
  line("flashc-bundle " + std::to_string(m.formatVersion));
  line("flashc-version " + m.flashcVersion);
  line("source " + m.source);
  if (!m.deviceLibrary.empty()) line("device-library " + m.deviceLibrary);
  if (!m.nvrtcOptions.empty()) line("nvrtc-options" + joined(m.nvrtcOptions));
  line("arch" + joined(m.archs));
  for (const auto &c : m.cubins) line("cubin " + c.arch + " " + c.file + (c.kernels.empty() ? "" : " for" + joined(c.kernels)));
  for (const auto &k : m.kernels) {
    out += '\n';
    line("kernel " + k.name);
    line("  entry " + k.entry);
    line("  role " + k.role);
    for (const auto &t : k.tensors) {
      std::string s = "  tensor " + t.name + " " + dtypeName(t.dtype) + " " + directionName(t.direction) + " [";
      for (size_t i = 0; i < t.dims.size(); ++i) s += (i ? ", " : "") + t.dims[i].str();
      s += "]";
      if (t.requiredAlignment() != dtypeSize(t.dtype)) s += " align=" + std::to_string(t.requiredAlignment());
      if (t.contiguous) s += " contiguous";
      if (t.strideMultiple != 1) s += " stride_multiple=" + std::to_string(t.strideMultiple);
      if (t.index32) s += " index32";
      line(s);
    }
    for (const auto &m : k.tensorMaps) {
      std::string s = "  tensormap " + m.name + " of " + m.tensor + " box [";
      for (size_t i = 0; i < m.box.size(); ++i) s += (i ? ", " : "") + std::to_string(m.box[i]);
      line(s + "] swizzle " + swizzleName(m.swizzle));
    }
    for (const auto &s : k.scalars) line("  scalar " + s.name + " " + scalarTypeName(s.type));
    line("  grid " + k.grid[0].str() + ", " + k.grid[1].str() + ", " + k.grid[2].str());
    line("  block " + k.block[0].str() + ", " + k.block[1].str() + ", " + k.block[2].str());
    line("  shared " + k.sharedBytes.str());
    if (k.programmatic) line("  launch programmatic");
    for (const auto &c : k.constraints) line("  requires " + c.str());
    line("end");
  }
  for (const auto &p : m.programs) {
    out += '\n';
    line("program " + p.name);
    for (const auto &k : p.kernels) line("  kernel " + k);
    for (const auto &s : p.scratch) line("  scratch " + s.name + (s.zeroFill ? " zero" : ""));
    for (const auto &[key, value] : p.meta) line("  meta " + key + " " + value);
    line("end");
  }
  return out;
}

} // namespace flashc::rt
