// Opens the embedded bundle from memory and the other from its directory,
// through the C++ wrapper, and lists their programs (CPU only).
#include "attn_bundle.h"
#ifdef FLASHC_TEST_PREBUILT
#include "prebuilt_bundle.h"
#endif

#include <flashc/flashc.hpp>

#include <cstdio>

int main() {
  try {
    flashc::Bundle attn = flashc::Bundle::openMemory(attn_bundle, attn_bundle_size);
    flashc::Bundle ffn = flashc::Bundle::open(FFN_BUNDLE_DIR);
#ifdef FLASHC_TEST_PREBUILT
    flashc::Bundle prebuilt = flashc::Bundle::openMemory(prebuilt_bundle, prebuilt_bundle_size);
    std::printf("prebuilt: %zu kernels\n", prebuilt.kernels().size());
#endif
    for (auto [name, b] : {std::pair<const char *, flashc::Bundle *>{"attn", &attn}, {"ffn", &ffn}}) {
      std::printf("%s:", name);
      for (const std::string &p : b->programs()) std::printf(" %s", p.c_str());
      std::printf("\n");
    }
  } catch (const flashc::Error &e) {
    std::fprintf(stderr, "app: %s\n", e.what());
    return 1;
  }
  return 0;
}
