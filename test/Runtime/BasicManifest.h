// The hand-written test bundle's manifest (test/Runtime/bundles/basic), parsed, for the CPU unit tests that plan
// launches of its kernels and programs; exits when it does not parse (every check would be meaningless).
#pragma once

#include "flashc/runtime/Manifest.h"

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

namespace flashc::test {

inline rt::Manifest loadBasicManifest() {
  std::ifstream in(FLASHC_TEST_BUNDLES_DIR "/basic/manifest.flashc");
  std::stringstream ss;
  ss << in.rdbuf();
  auto m = rt::parseManifest(ss.str());
  if (!m) {
    std::printf("cannot parse the basic bundle: %s\n", m.message().c_str());
    std::exit(1);
  }
  return *m;
}

} // namespace flashc::test
