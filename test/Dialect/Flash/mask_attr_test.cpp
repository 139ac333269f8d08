//===- mask_attr_test.cpp - #flash.mask visibility rule -------------------===//
//
// MaskAttr::isKeyVisible is the one definition of which keys a query row
// sees; every stage (graph evaluator, tile programs, CUDA kernels) is checked
// against it. These tables are written out by hand from the convention
// (bottom-right alignment, FlashAttention-2): row i of Sq sits at key
// position p = i + Sk - Sq.
//
//===----------------------------------------------------------------------===//
#include "flashc/Dialect/Flash/IR/FlashDialect.h"

#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Diagnostics.h"

#include <cstdio>
#include <string>
#include <vector>

using namespace mlir;
using namespace mlir::flash;

static int failures = 0;

/// `rows` has one string per query row, '1' = visible, '0' = masked.
static void expectTable(MaskAttr mask, const char *name,
                        const std::vector<std::string> &rows) {
  int64_t numQueries = rows.size(), numKeys = rows.front().size();
  for (int64_t i = 0; i < numQueries; ++i)
    for (int64_t j = 0; j < numKeys; ++j) {
      bool expected = rows[i][j] == '1';
      if (mask.isKeyVisible(i, j, numQueries, numKeys) != expected) {
        std::printf("FAIL %s (Sq=%lld, Sk=%lld): query %lld key %lld should be %s\n",
                    name, (long long)numQueries, (long long)numKeys, (long long)i,
                    (long long)j, expected ? "visible" : "masked");
        ++failures;
      }
    }
}

static void expectTrue(bool condition, const char *what) {
  if (!condition) {
    std::printf("FAIL %s\n", what);
    ++failures;
  }
}

int main() {
  MLIRContext context;
  context.loadDialect<FlashDialect>();
  // Invalid attributes are reported through the diagnostic engine; keep them
  // off stderr and count them.
  int diagnostics = 0;
  context.getDiagEngine().registerHandler([&](Diagnostic &) {
    ++diagnostics;
    return success();
  });
  auto window = [&](int64_t left, int64_t right) {
    return MaskAttr::get(&context, MaskKind::SlidingWindow, left, right);
  };
  MaskAttr none = MaskAttr::get(&context, MaskKind::None);
  MaskAttr causal = MaskAttr::get(&context, MaskKind::Causal);

  expectTable(none, "none", {"111", "111"});
  expectTable(causal, "causal square", {"1000", "1100", "1110", "1111"});
  // More keys than queries (decoding with a cache): the last row sees all.
  expectTable(causal, "causal Sq<Sk", {"11110", "11111"});
  // More queries than keys: the first Sq - Sk rows see nothing.
  expectTable(causal, "causal Sq>Sk", {"00", "00", "00", "10", "11"});
  expectTable(window(1, 0), "window 1/0", {"1000", "1100", "0110", "0011"});
  expectTable(window(-1, 1), "window -1/1", {"1100", "1110", "1111", "1111"});
  expectTable(window(0, -1), "window 0/-1", {"1111", "0111", "0011", "0001"});
  // Sq = 3 against Sk = 6: rows sit at key positions 3, 4, 5.
  expectTable(window(2, 2), "window 2/2 Sq<Sk",
              {"011111", "001111", "000111"});
  // Causal is exactly the window (unbounded, 0).
  for (int64_t sq : {1, 3, 7})
    for (int64_t sk : {1, 4, 7})
      for (int64_t i = 0; i < sq; ++i)
        for (int64_t j = 0; j < sk; ++j)
          expectTrue(causal.isKeyVisible(i, j, sq, sk) ==
                         window(-1, 0).isKeyVisible(i, j, sq, sk),
                     "causal == sliding_window(-1, 0)");

  // The verifier rejects meaningless parameters.
  auto emitError = [&]() { return mlir::emitError(UnknownLoc::get(&context)); };
  // int64_t arguments select the generated (non-template) getChecked.
  auto checked = [&](MaskKind kind, int64_t left, int64_t right) {
    return MaskAttr::getChecked(emitError, &context, kind, left, right);
  };
  expectTrue(!checked(MaskKind::SlidingWindow, -1, -1),
             "sliding_window(-1, -1) is rejected");
  expectTrue(!checked(MaskKind::SlidingWindow, -2, 0),
             "sliding_window(-2, 0) is rejected");
  expectTrue(!checked(MaskKind::Causal, 4, -1),
             "causal with a window extent is rejected");
  expectTrue(static_cast<bool>(checked(MaskKind::SlidingWindow, 0, 0)),
             "sliding_window(0, 0) (the diagonal) is accepted");
  expectTrue(diagnostics == 3, "one diagnostic per rejected mask");

  if (failures) {
    std::printf("%d check(s) failed\n", failures);
    return 1;
  }
  std::printf("all mask checks passed\n");
  return 0;
}
