//===- FlashAttrs.cpp - flash enums and #flash.mask -----------------------===//
#include "flashc/Dialect/Flash/IR/FlashDialect.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::flash;

#include "flashc/Dialect/Flash/IR/FlashEnums.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "flashc/Dialect/Flash/IR/FlashAttrs.cpp.inc"

void FlashDialect::registerAttributes() {
  addAttributes<
#define GET_ATTRDEF_LIST
#include "flashc/Dialect/Flash/IR/FlashAttrs.cpp.inc"
      >();
}

// Syntax: `<none>`, `<causal>`, `<sliding_window, left = L, right = R>`.
Attribute MaskAttr::parse(AsmParser &parser, Type) {
  if (parser.parseLess())
    return {};
  SMLoc kindLoc = parser.getCurrentLocation();
  StringRef keyword;
  if (parser.parseKeyword(&keyword))
    return {};
  std::optional<MaskKind> kind = symbolizeMaskKind(keyword);
  if (!kind) {
    parser.emitError(kindLoc, "expected mask kind 'none', 'causal' or "
                              "'sliding_window', got '")
        << keyword << "'";
    return {};
  }
  int64_t left = -1, right = -1;
  if (*kind == MaskKind::SlidingWindow) {
    if (parser.parseComma() || parser.parseKeyword("left") ||
        parser.parseEqual() || parser.parseInteger(left) ||
        parser.parseComma() || parser.parseKeyword("right") ||
        parser.parseEqual() || parser.parseInteger(right))
      return {};
  }
  if (parser.parseGreater())
    return {};
  return parser.getChecked<MaskAttr>(kindLoc, parser.getContext(), *kind, left,
                                     right);
}

void MaskAttr::print(AsmPrinter &printer) const {
  printer << "<" << stringifyMaskKind(getKind());
  if (isSlidingWindow())
    printer << ", left = " << getWindowLeft()
            << ", right = " << getWindowRight();
  printer << ">";
}

LogicalResult MaskAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                               MaskKind kind, int64_t windowLeft,
                               int64_t windowRight) {
  if (kind != MaskKind::SlidingWindow) {
    if (windowLeft != -1 || windowRight != -1)
      return emitError() << "window extents are only meaningful for "
                            "sliding_window masks";
    return success();
  }
  if (windowLeft < -1 || windowRight < -1)
    return emitError() << "sliding_window extents must be >= 0, or -1 for "
                          "unbounded; got left = "
                       << windowLeft << ", right = " << windowRight;
  // Device code indexes queries and keys with 32-bit ints; a wider window
  // would overflow its position arithmetic. -1 is the unbounded side.
  constexpr int64_t kMaxWindowExtent = (int64_t(1) << 30) - 1;
  if (windowLeft > kMaxWindowExtent || windowRight > kMaxWindowExtent)
    return emitError() << "sliding_window extents must be at most "
                       << kMaxWindowExtent
                       << " (use -1 for an unbounded side); got left = "
                       << windowLeft << ", right = " << windowRight;
  if (windowLeft == -1 && windowRight == -1)
    return emitError() << "sliding_window with both sides unbounded masks "
                          "nothing; use #flash.mask<none>";
  return success();
}

bool MaskAttr::isKeyVisible(int64_t queryIndex, int64_t keyIndex,
                            int64_t numQueries, int64_t numKeys) const {
  // Bottom-right alignment: the last query row sits at the last key.
  int64_t position = queryIndex + numKeys - numQueries;
  switch (getKind()) {
  case MaskKind::None:
    return true;
  case MaskKind::Causal:
    return keyIndex <= position;
  case MaskKind::SlidingWindow: {
    bool leftOk = getWindowLeft() < 0 || keyIndex >= position - getWindowLeft();
    bool rightOk =
        getWindowRight() < 0 || keyIndex <= position + getWindowRight();
    return leftOk && rightOk;
  }
  }
  return false;
}
