//===- Names.cpp - identifiers of the generated CUDA and the manifest ----===//
#include "Names.h"

#include "mlir/Dialect/SCF/IR/SCF.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringSet.h"

#include <cctype>

using namespace mlir;

namespace flashc {
namespace {

const char *const kReservedNames[] = {
    "fill", "mask", "mask_transposed", "softcap", "softcap_grad", "scale", "multiply",
    "activation", "activation_grad", "row_max", "exp2", "softmax_correction", "online_sum",
    "row_sum", "rescale", "normalize", "logsumexp", "row_dot", "recompute_probs",
    "recompute_probs_cols", "softmax_grad", "softmax_grad_cols", "convert", "load_fragments",
    "store_fragments", "smem_tile_at", "shared_floats", "load_tile_async", "load_rows_async",
    "load_rows_shared", "load_rows", "store_rows", "store_tile", "atomic_add_tile", "add_bias",
    "matrix_view", "vector_view", "matmul", "matmul_ta", "matmul_tb", "matmul_ta_tb",
    "wgmma_matmul", "wgmma_matmul_ta", "wgmma_matmul_tb", "wgmma_wait", "wgmma_fence_operand",
    "cp_async_commit", "cp_async_wait", "fence_async_shared", "ceil_div", "floor_div", "min",
    "max", "warp_id", "align_smem_1024", "smem_raw", "chunk", "flashc", "Act", "bf16", "f16",
    "blockIdx", "gridDim", "threadIdx", "INFINITY"};

} // namespace

ArrayRef<const char *> reservedNames() { return kReservedNames; }

bool isCppKeyword(StringRef name) {
  static const llvm::StringSet<> keywords = {
      "do", "if", "for", "int", "float", "double", "char", "long", "short", "auto", "const",
      "case", "else", "enum", "goto", "this", "true", "false", "void", "while", "break",
      "class", "union", "using", "return", "switch", "struct", "static", "default", "delete",
      "new", "template", "typename", "namespace", "operator", "signed", "unsigned", "volatile",
      "register", "sizeof", "smem", "half"};
  return keywords.contains(name);
}

bool isManifestIdentifier(StringRef name) {
  if (name.empty() || !(std::isalpha(static_cast<unsigned char>(name[0])) || name[0] == '_'))
    return false;
  return llvm::all_of(name, [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
  });
}

std::string cppIdentifier(StringRef name) {
  std::string out;
  for (char c : name)
    out += (std::isalnum(static_cast<unsigned char>(c)) || c == '_') ? c : '_';
  if (out.empty() || std::isdigit(static_cast<unsigned char>(out[0])))
    out = "t_" + out;
  if (isCppKeyword(out))
    out += "_";
  return out;
}

SmallVector<StringRef> locationNames(Location loc) {
  if (auto name = dyn_cast<NameLoc>(loc))
    return {name.getName().strref()};
  SmallVector<StringRef> names;
  if (auto fused = dyn_cast<FusedLoc>(loc))
    for (Location part : fused.getLocations())
      if (auto name = dyn_cast<NameLoc>(part))
        names.push_back(name.getName().strref());
  return names;
}

std::string givenName(Value v) {
  SmallVector<StringRef> names;
  unsigned index = 0;
  if (auto arg = dyn_cast<BlockArgument>(v)) {
    auto forOp = dyn_cast_or_null<scf::ForOp>(arg.getOwner()->getParentOp());
    if (!forOp)
      return "";
    names = locationNames(forOp.getLoc());
    index = arg.getArgNumber();
  } else {
    Operation *op = v.getDefiningOp();
    names = locationNames(op->getLoc());
    index = cast<OpResult>(v).getResultNumber() + (isa<scf::ForOp>(op) ? 1 : 0);
  }
  return index < names.size() ? names[index].str() : "";
}

const char *activationEnumerator(mlir::tile::Activation kind) {
  switch (kind) {
  case mlir::tile::Activation::GeluTanh:
    return "Act::GeluTanh";
  case mlir::tile::Activation::GeluErf:
    return "Act::GeluErf";
  case mlir::tile::Activation::Silu:
    return "Act::Silu";
  case mlir::tile::Activation::Relu:
    return "Act::Relu";
  case mlir::tile::Activation::Identity:
    return "Act::Identity";
  }
  return "Act::Identity";
}

} // namespace flashc
