//===- LibraryKernelEmitter.cpp - device-library elementwise kernels ------===//
#include "LibraryKernelEmitter.h"

#include "MaskModEmitter.h"
#include "Names.h"

#include "flashc/device/moe_layout.h"  // (the routing kernels' block: plain C++)

#include "flashc/Compiler/Target.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"

using namespace mlir;

namespace flashc {

namespace {
/// The attention backward's elementwise ends in 16-bit types (attention_bwd_ends.cuh): its preprocess (delta,
/// and dq_accum zeroed where the program passes it) and postprocess (dQ from dq_accum), 16-byte accesses without
/// shared memory. (f32 attention keeps the tile ops' kernels.)
bool isBackwardEnd(tile::AttentionSpecAttr attention) {
  tile::KernelRole role = attention.getRole();
  Type elem = attention.getElementType().getValue();
  return (role == tile::KernelRole::AttentionBackwardPreprocess ||
          role == tile::KernelRole::AttentionBackwardPostprocess) &&
         (elem.isBF16() || elem.isF16());
}
} // namespace

bool isLibraryKernel(tile::KernelOp kernel) {
  if (llvm::isa_and_nonnull<tile::DecodeSpecAttr, tile::VarlenSpecAttr>(kernel.getSpecAttr()))
    return true;
  // A mixture of experts' routing kernels (its GEMMs are warp-specialised kernels).
  if (auto moe = dyn_cast_or_null<tile::MoeSpecAttr>(kernel.getSpecAttr()))
    return kernel.getStrategy() != tile::Strategy::WgmmaWsSm90;
  if (auto attention = dyn_cast_or_null<tile::AttentionSpecAttr>(kernel.getSpecAttr()))
    return attention.classifiesMaskBlocks() || isBackwardEnd(attention) ||
           attention.getRole() == tile::KernelRole::AttentionSegmentPlan;
  auto gemm = dyn_cast_or_null<tile::GemmSpecAttr>(kernel.getSpecAttr());
  if (!gemm || gemm.getRole() != tile::KernelRole::FfnActivationGrad)
    return false;
  Type elem = gemm.getElementType().getValue();
  return elem.isBF16() || elem.isF16();
}

namespace {

/// The backward's preprocess (out, dout, delta[, dq_accum]) or postprocess (dq_accum, dq): one block of 128
/// threads a 64-row block of one head, as the tile kernel's grid.
FailureOr<WsKernel> emitBackwardEnd(tile::KernelOp kernel, tile::AttentionSpecAttr spec,
                                    ArrayRef<std::string> cppNames, StringRef entry, StringRef specComment,
                                    llvm::raw_ostream &out) {
  bool pre = spec.getRole() == tile::KernelRole::AttentionBackwardPreprocess;
  ArrayRef<Type> inputs = kernel.getFunctionType().getInputs();
  bool zeroes = pre && inputs.size() == 4;
  if (!(pre ? inputs.size() == 3 || zeroes : inputs.size() == 2) || cppNames.size() != inputs.size() ||
      kernel.getBlockM() != 64 || kernel.getWarps() != 4)
    return kernel.emitError() << "CUDA emitter: @" << kernel.getSymName()
                              << (pre ? " (the backward's preprocess) takes out, dout, delta and optionally dq_accum"
                                      : " (the backward's postprocess) takes dq_accum and dq")
                              << ", 64 rows on 4 warps a block",
           failure();
  // The rows' widths (compile-time in the device functions: their loops unroll): out's (Dv) and dq_accum's (D).
  auto width = [&](unsigned i) { return cast<tile::GlobalTensorType>(inputs[i]).getShape().back(); };
  int64_t valueCols = pre ? width(0) : 0, headCols = width(pre ? (zeroes ? 3 : 0) : 0);
  if (ShapedType::isDynamic(valueCols) || ShapedType::isDynamic(headCols))
    return kernel.emitError() << "CUDA emitter: @" << kernel.getSymName() << ": its head dims must be static",
           failure();
  WsKernel result;
  result.threads = 128;
  const char *elem = spec.getElementType().getValue().isBF16() ? "bf16" : "f16";
  out << "// ---- " << kernel.getSymName() << " ----\n";
  if (!specComment.empty())
    out << "// " << specComment << "\n";
  out << (pre ? (zeroes ? "// delta = rowsum(dO O), dq_accum zeroed: 64 rows of one head a block (attention_bwd_ends.cuh).\n"
                        : "// delta = rowsum(dO O): 64 rows of one head a block (attention_bwd_ends.cuh).\n")
              : "// dq = dq_accum in the element type: 64 rows of one head a block (attention_bwd_ends.cuh).\n");
  out << "extern \"C\" __global__ void __launch_bounds__(128)\n" << entry << "(";
  for (size_t i = 0; i < cppNames.size(); ++i)
    out << (i ? ", " : "") << "const flashc::TensorArg " << cppNames[i];
  if (pre)
    out << ") {\n  flashc::device::attention_bwd_preprocess<flashc::device::" << elem << ", " << valueCols << ", "
        << headCols << ">(" << cppNames[0] << ", "
        << cppNames[1] << ", " << cppNames[2] << ", " << (zeroes ? "&" + cppNames[3] : std::string("nullptr"))
        << ");\n}\n\n";
  else
    out << ") {\n  flashc::device::attention_bwd_postprocess<flashc::device::" << elem << ", " << headCols << ">("
        << cppNames[0] << ", "
        << cppNames[1] << ");\n}\n\n";
  return result;
}

/// A mask modifier's block classes (tile.classify_blocks): the device
/// library's classify_mask_blocks<Config>, one block a 64-row of the plane.
FailureOr<WsKernel> emitMaskBlocks(tile::KernelOp kernel, tile::AttentionSpecAttr spec,
                                   ArrayRef<std::string> cppNames, StringRef entry, StringRef specComment,
                                   llvm::raw_ostream &out) {
  ArrayRef<Type> inputs = kernel.getFunctionType().getInputs();
  if (inputs.size() < 3 || cppNames.size() != inputs.size())
    return kernel.emitError() << "CUDA emitter: @" << kernel.getSymName()
                              << " (a mask's block classes) takes q, k, the modifier's tensors and the table",
           failure();
  WsKernel result;
  result.threads = 128;
  std::string ns = entry.str() + "_config";
  out << "// ---- " << kernel.getSymName() << " ----\n";
  if (!specComment.empty())
    out << "// " << specComment << "\n";
  if (failed(printMaskMods(kernel, out)))
    return failure();
  out << "// The block classes of the mask modifier: the device library's classify_mask_blocks\n"
      << "// (interval arithmetic over each 64 x 64 block, the tensors' values scanned).\n";
  out << "namespace " << ns << " {\n";
  out << "struct Config {\n";
  out << "  using MaskMod = " << maskModTypeName(spec.getMaskMod()) << ";\n";
  out << "  static constexpr bool kTransposed = "
      << (spec.getRole() == tile::KernelRole::AttentionMaskBlocksTransposed ? "true;  // rows are keys\n"
                                                                            : "false;  // rows are queries\n");
  out << "  static constexpr int kThreads = " << result.threads << ";\n";
  out << "};\n}  // namespace " << ns << "\n\n";
  out << "extern \"C\" __global__ void __launch_bounds__(" << result.threads << ")\n" << entry << "(";
  for (auto [i, name] : llvm::enumerate(cppNames))
    out << (i ? ", " : "") << (i >= 2 ? "const __grid_constant__ flashc::TensorArg " : "const flashc::TensorArg ")
        << name;
  out << ") {\n";
  // (a document modifier's segment plan after the table: nothing to classify where its segment form serves)
  size_t table = cppNames.size() - (spec.getSegments() ? 2 : 1);
  std::string env = "flashc::device::mask_env(0, 0";
  for (size_t i = 2; i < table; ++i)
    env += ", " + cppNames[i];
  out << "  flashc::device::classify_mask_blocks<" << ns << "::Config>(" << cppNames[0] << ", " << cppNames[1]
      << ", " << env << "), " << cppNames[table]
      << (spec.getSegments() ? ", &" + cppNames.back() : std::string()) << ");\n}\n\n";
  return result;
}

/// A document modifier's segment plan (tile.plan_segments): the device library's attention_segment_plan, one block
/// of kSegmentPlanThreads threads (q, k give Sq and Sk).
FailureOr<WsKernel> emitSegmentPlan(tile::KernelOp kernel, ArrayRef<std::string> cppNames, StringRef entry,
                                    StringRef specComment, llvm::raw_ostream &out) {
  if (kernel.getFunctionType().getNumInputs() != 4 || cppNames.size() != 4)
    return kernel.emitError() << "CUDA emitter: @" << kernel.getSymName()
                              << " (a document modifier's segment plan) takes q, k, the ids and the plan",
           failure();
  WsKernel result;
  result.threads = 1024;  // (segment_layout.h's kSegmentPlanThreads; the kernel asserts it)
  out << "// ---- " << kernel.getSymName() << " ----\n";
  if (!specComment.empty())
    out << "// " << specComment << "\n";
  out << "// The segment plan of the document ids: each document's start, its tiles at 64, 128 and 192 rows\n"
      << "// (segments.cuh); the kernels after it walk their block-class table where the ids are not sorted.\n";
  out << "extern \"C\" __global__ void __launch_bounds__(" << result.threads << ")\n" << entry << "(";
  for (auto [i, name] : llvm::enumerate(cppNames))
    out << (i ? ", " : "") << "const flashc::TensorArg " << name;
  out << ") {\n";
  out << "  static_assert(" << result.threads << " == flashc::device::kSegmentPlanThreads, \"the plan's block\");\n";
  out << "  flashc::device::attention_segment_plan(" << cppNames[2] << ", static_cast<int>(" << cppNames[0]
      << ".shape[2]), static_cast<int>(" << cppNames[1] << ".shape[2]), " << cppNames[3] << ");\n}\n\n";
  return result;
}

/// A library kernel read from a file may carry any signature: its role's `want` tensors (and nothing else), or an
/// error naming the role.
LogicalResult checkRoleTensors(tile::KernelOp kernel, tile::KernelRole role, size_t want,
                               ArrayRef<std::string> cppNames) {
  if (kernel.getFunctionType().getNumInputs() == want && cppNames.size() == want &&
      llvm::all_of(kernel.getFunctionType().getInputs(), [](Type t) { return isa<tile::GlobalTensorType>(t); }))
    return success();
  return kernel.emitError() << "CUDA emitter: @" << kernel.getSymName() << " (" << tile::stringifyKernelRole(role)
                            << ") takes " << want << " tensors, got " << kernel.getFunctionType().getNumInputs()
                            << " arguments";
}

/// A decode program's kernels (#tile.decode, attention_decode.cuh): the table check, the split kernel (TMA
/// maps of the caches), the combine. Each is one call of the device library's function of its role.
FailureOr<WsKernel> emitDecode(tile::KernelOp kernel, tile::DecodeSpecAttr spec, ArrayRef<std::string> argNames,
                               ArrayRef<std::string> cppNames, StringRef entry, StringRef specComment,
                               llvm::raw_ostream &out) {
  using tile::KernelRole;
  KernelRole role = spec.getRole();
  bool paged = spec.isPaged();
  if (failed(checkRoleTensors(kernel, role, spec.tensorCount(), cppNames)))
    return failure();
  WsKernel result;
  std::string ns = entry.str() + "_config";
  int64_t d = spec.getHeadDim(), dv = spec.getValueDim(), stages = kernel.getStages();
  out << "// ---- " << kernel.getSymName() << " ----\n";
  if (!specComment.empty())
    out << "// " << specComment << "\n";
  out << "namespace " << ns << " {\n";
  out << "struct Config {\n";
  out << "  using Elem = flashc::device::" << (spec.getElementType().getValue().isBF16() ? "bf16" : "f16") << ";\n";
  if (role == KernelRole::KvAppendCheck || role == KernelRole::KvAppend) {
    // (an append's config: the rows it copies and the cache's layout)
    out << "  static constexpr int kHeadDim = " << d << ", kValueDim = " << dv << ", kPageSize = " << spec.getPageSize()
        << ";" << (paged ? "  // a paged cache\n" : "  // a contiguous cache\n");
  } else {
    out << "  static constexpr int kHeadDim = " << d << ", kValueDim = " << dv << ", kQueries = " << spec.getQueries()
        << ", kGroup = " << spec.getGroup() << ";\n";
    out << "  static constexpr int kPageSize = " << spec.getPageSize() << ", kStages = " << stages << ";"
        << (paged ? "  // a paged cache\n" : "  // a contiguous cache\n");
    out << "  static constexpr bool kCausal = " << (spec.getCausal() ? "true" : "false") << ";\n";
    out << "  static constexpr float kScale = " << llvm::formatv("{0:e9}", spec.getScale().getValueAsDouble()).str()
        << "f;\n";
  }
  out << "};\n}  // namespace " << ns << "\n\n";
  std::string none = "flashc::TensorArg{}";
  auto params = [&](size_t count) {
    for (size_t i = 0; i < count; ++i)
      out << (i ? ", " : "") << "const flashc::TensorArg " << cppNames[i];
  };
  switch (role) {
  case KernelRole::DecodeCheck: { // (k_cache, cache_seqlens, [block_table], status)
    result.threads = 128;
    out << "// Cache lengths and the page ids they use, checked: the first bad entry into status.\n";
    out << "extern \"C\" __global__ void __launch_bounds__(128)\n" << entry << "(";
    params(cppNames.size());
    out << ") {\n  flashc::device::attention_decode_check<" << ns << "::Config>(" << cppNames[0] << ", "
        << cppNames[1] << ", " << (paged ? cppNames[2] : none) << ", static_cast<int*>(" << cppNames.back()
        << ".data));\n}\n\n";
    return result;
  }
  case KernelRole::DecodeSplit: { // (q, k, v, lens, [table], out, lse, o_part, lse_part, status)
    result.threads = 160;
    result.programmatic = true;  // its barriers set up while the check (or an append) finishes
    int64_t ring = stages * 64 * (d + dv) * 2;
    result.sharedBytes = ring + 16 * stages + 2 * 4 * 16 * 4;
    int64_t boxRows = paged ? std::min<int64_t>(spec.getPageSize(), 64) : 64;
    for (unsigned arg : {1u, 2u}) {
      rt::TensorMapParam map;
      map.name = argNames[arg] + "_map";
      map.tensor = argNames[arg];
      map.box = paged ? std::vector<int64_t>{1, boxRows, 1, 64} : std::vector<int64_t>{1, 1, 64, 64};
      map.swizzle = rt::TensorMapSwizzle::B128;
      result.tensorMaps.push_back(map);
    }
    unsigned t = paged ? 5 : 4;  // out's index
    out << "// A producer warp streams 64-key K / V tiles of the split by TMA into a " << stages
        << "-stage ring; four consumer\n// warps take 16 keys of each, the query heads of a kv head together.\n";
    out << "static_assert(flashc::device::AttentionDecodePlan<" << ns << "::Config>::kSharedBytes == "
        << result.sharedBytes << ", \"the manifest's shared memory\");\n";
    out << "extern \"C\" __global__ void __launch_bounds__(160)\n" << entry << "(";
    params(cppNames.size());
    out << ", const __grid_constant__ flashc::TmaDescriptor " << cppNames[1]
        << "_map, const __grid_constant__ flashc::TmaDescriptor " << cppNames[2] << "_map) {\n";
    out << "  flashc::device::attention_decode_split<" << ns << "::Config>(" << cppNames[1] << "_map, "
        << cppNames[2] << "_map, " << cppNames[0] << ", " << cppNames[3] << ", " << (paged ? cppNames[4] : none)
        << ", " << cppNames[t] << ", " << cppNames[t + 1] << ", " << cppNames[t + 2] << ", " << cppNames[t + 3]
        << ", static_cast<const int*>(" << cppNames[t + 4] << ".data));\n}\n\n";
    return result;
  }
  case KernelRole::KvAppendCheck: { // (key, k_cache, cache_seqlens, [block_table], status)
    result.threads = 128;
    out << "// Cache lengths (each holding the new tokens) and the page ids they use, checked: the first bad entry\n"
           "// into status.\n";
    out << "extern \"C\" __global__ void __launch_bounds__(128)\n" << entry << "(";
    params(cppNames.size());
    out << ") {\n  flashc::device::kv_append_check<" << ns << "::Config>(" << cppNames[0] << ", " << cppNames[1]
        << ", " << cppNames[2] << ", " << (paged ? cppNames[3] : none) << ", static_cast<int*>(" << cppNames.back()
        << ".data));\n}\n\n";
    return result;
  }
  case KernelRole::KvAppend: { // (key, value, k_cache, v_cache, cache_seqlens, [block_table], status)
    result.threads = 128;
    result.programmatic = true;  // overlaps the check's end (kv_append waits for its verdict)
    out << "// The new tokens' K and V rows into the caches at rows cache_seqlens - T .. (4 tokens a block).\n";
    out << "extern \"C\" __global__ void __launch_bounds__(128)\n" << entry << "(";
    params(cppNames.size());
    out << ") {\n  flashc::device::kv_append<" << ns << "::Config>(" << cppNames[0] << ", " << cppNames[1] << ", "
        << cppNames[2] << ", " << cppNames[3] << ", " << cppNames[4] << ", " << (paged ? cppNames[5] : none)
        << ", static_cast<const int*>(" << cppNames.back() << ".data));\n}\n\n";
    return result;
  }
  default: { // (o_part, lse_part, out, lse, status)
    result.threads = 128;
    result.programmatic = true;  // launched while the split's last blocks finish
    out << "// The splits' partial outputs weighted by their log-sum-exps (nothing to do with one split).\n";
    out << "extern \"C\" __global__ void __launch_bounds__(128)\n" << entry << "(";
    params(cppNames.size());
    out << ") {\n  flashc::device::attention_decode_combine<" << ns << "::Config>(" << cppNames[0] << ", "
        << cppNames[1] << ", " << cppNames[2] << ", " << cppNames[3] << ", static_cast<const int*>("
        << cppNames[4] << ".data));\n}\n\n";
    return result;
  }
  }
}

/// A mixture of experts' routing kernels (#tile.moe; moe_routing.cuh): select (a warp a token), the plan (one block),
/// the permutation (a warp a row over the grid), the combine (a warp a token). Each is one call of the device
/// library's function of its role.
FailureOr<WsKernel> emitMoeRouting(tile::KernelOp kernel, tile::MoeSpecAttr spec, ArrayRef<std::string> cppNames,
                                   StringRef entry, StringRef specComment, llvm::raw_ostream &out) {
  using tile::KernelRole;
  KernelRole role = spec.getRole();
  if (failed(checkRoleTensors(kernel, role, spec.tensorCount(), cppNames)))
    return failure();
  if (spec.isGemm())
    return kernel.emitError() << "CUDA emitter: @" << kernel.getSymName() << " (" << tile::stringifyKernelRole(role)
                              << ") is a GEMM: the warp-specialised GEMM's plan (strategy wgmma_ws_sm90) runs it",
           failure();
  WsKernel result;
  result.threads = role == KernelRole::MoePlan ? 1024 : device::kMoeRoutingThreads;
  std::string elem = spec.getElementType().getValue().isBF16() ? "flashc::device::bf16" : "flashc::device::f16";
  std::string e = std::to_string(spec.getExperts()), k = std::to_string(spec.getTopK());
  auto data = [&](unsigned i, StringRef type) {
    return ("static_cast<" + type + "*>(" + cppNames[i] + ".data)").str();
  };
  auto rows = [&](unsigned i) { return "static_cast<int>(" + cppNames[i] + ".shape[0])"; };
  out << "// ---- " << kernel.getSymName() << " ----\n";
  if (!specComment.empty())
    out << "// " << specComment << "\n";
  out << "extern \"C\" __global__ void __launch_bounds__(" << result.threads << ")\n" << entry << "(";
  for (size_t i = 0; i < cppNames.size(); ++i)
    out << (i ? ", " : "") << "const flashc::TensorArg " << cppNames[i];
  out << ") {\n";
  switch (role) {
  case KernelRole::MoeSelect: // (logits, counts, ids, weights, ranks)
    out << "  // " << (spec.getSigmoid() ? "sigmoid" : "softmax") << " scores, the top " << k << " of " << e
        << " experts" << (spec.getRenormalize() ? ", weights renormalised" : "") << "; a warp a token\n";
    out << "  flashc::device::moe_select<flashc::device::MoeGating::" << (spec.getSigmoid() ? "Sigmoid" : "Softmax")
        << ", " << (spec.getRenormalize() ? "true" : "false") << ">(" << data(0, "const " + elem) << ", "
        << cppNames[0] << ".stride[0], " << rows(0) << ", " << e << ", " << k << ", " << data(1, "int") << ", "
        << data(2, "int") << ", " << data(3, "float") << ", " << data(4, "int") << ");\n";
    break;
  case KernelRole::MoePlan: // (logits, counts, offsets, groups, [saved_counts])
    out << "  flashc::device::moe_plan(" << data(1, "const int") << ", " << e << ", " << data(2, "int") << ", "
        << data(3, "int") << (spec.getTrain() ? ", " + data(4, "int") : std::string()) << ");\n";
    break;
  case KernelRole::MoeScatterGrad: // (dy, expert_out, counts, ids, weights, ranks, offsets, d_expert_out, d_weights)
    out << "  flashc::device::moe_scatter_grad(" << data(0, "const " + elem) << ", " << cppNames[0] << ".stride[0], "
        << data(1, "const " + elem) << ", " << rows(0) << ", static_cast<int>(" << cppNames[0] << ".shape[1]), " << k
        << ", " << e << ", " << data(2, "const int") << ", " << data(3, "const int") << ", "
        << data(4, "const float") << ", " << data(5, "const int") << ", " << data(6, "const int") << ", "
        << data(7, elem) << ", " << data(8, "float") << ");\n";
    break;
  case KernelRole::MoeActivationGrad: { // (logits, pre, [up], dh, offsets, d_pre, [d_up])
    bool gated = spec.getGated();
    unsigned dh = gated ? 3 : 2;
    out << "  flashc::device::moe_activation_grad<flashc::device::"
        << activationEnumerator(spec.getActivation()) << ", " << (gated ? "true" : "false") << ">("
        << data(1, "const " + elem) << ", "
        << (gated ? data(2, "const " + elem) : "static_cast<const " + elem + "*>(nullptr)") << ", "
        << data(dh, "const " + elem) << ", static_cast<int>(" << cppNames[1] << ".shape[1]), " << e << ", "
        << data(dh + 1, "const int") << ", " << data(dh + 2, elem) << ", "
        << (gated ? data(dh + 3, elem) : "static_cast<" + elem + "*>(nullptr)") << ");\n";
    break;
  }
  case KernelRole::MoeSelectGrad: // (logits, ids, weights, d_weights, d_logits)
    out << "  flashc::device::moe_select_grad<flashc::device::MoeGating::"
        << (spec.getSigmoid() ? "Sigmoid" : "Softmax") << ", " << (spec.getRenormalize() ? "true" : "false") << ">("
        << data(0, "const " + elem) << ", " << rows(0) << ", " << e << ", " << k << ", " << data(1, "const int")
        << ", " << data(2, "const float") << ", " << data(3, "const float") << ", " << data(4, elem) << ");\n";
    break;
  case KernelRole::MoeGatherGrad: // (dx_perm, ids, ranks, offsets, dx): the combine with unit weights
    out << "  flashc::device::moe_combine(" << data(0, "const " + elem) << ", " << rows(4) << ", static_cast<int>("
        << cppNames[4] << ".shape[1]), " << k << ", " << data(1, "const int") << ", nullptr, "
        << data(2, "const int") << ", " << data(3, "const int") << ", " << data(4, elem) << ", " << cppNames[4]
        << ".stride[0]);\n";
    break;
  case KernelRole::MoePermute: // (x, counts, ids, ranks, offsets, permuted)
    out << "  flashc::device::moe_permute(" << data(0, "const " + elem) << ", " << cppNames[0] << ".stride[0], "
        << rows(0) << ", static_cast<int>(" << cppNames[0] << ".shape[1]), " << k << ", " << e << ", "
        << data(1, "const int") << ", " << data(2, "const int") << ", " << data(3, "const int") << ", "
        << data(4, "const int") << ", " << data(5, elem) << ");\n";
    break;
  default: // the combine: (expert_out, ids, weights, ranks, offsets, y)
    out << "  flashc::device::moe_combine(" << data(0, "const " + elem) << ", " << rows(5) << ", static_cast<int>("
        << cppNames[5] << ".shape[1]), " << k << ", " << data(1, "const int") << ", " << data(2, "const float")
        << ", " << data(3, "const int") << ", " << data(4, "const int") << ", " << data(5, elem) << ", "
        << cppNames[5] << ".stride[0]);\n";
    break;
  }
  out << "}\n\n";
  return result;
}

/// The packed backward's main kernel: the warp-specialised backward's body over one key tile of the plan's map
/// (attention_bwd_ws_varlen; 3-D TMA maps of the packed q, k, v, dout and, where dQ goes by TMA, dq_accum).
/// (q, k, v, dout, lse, delta, dq_accum, dk, dv, cu_q, cu_k, key_map, status)
FailureOr<WsKernel> emitVarlenBackward(tile::KernelOp kernel, tile::VarlenSpecAttr spec, ArrayRef<std::string> argNames,
                                       ArrayRef<std::string> cppNames, StringRef entry, WsKernel result,
                                       llvm::raw_ostream &out) {
  int64_t d = spec.getHeadDim(), dv = spec.getValueDim(), stages = kernel.getStages();
  bool keySplit = wsBackwardKeySplit(d, dv);
  int64_t blockN = wsBackwardBlockN(keySplit), blockM = wsBackwardBlockM(d, dv);
  if (kernel.getBlockM() != blockM || kernel.getBlockN() != blockN || kernel.getWarps() != blockN / 16 ||
      spec.getBlockM() != blockN || stages < 1 || stages > 4 ||
      (keySplit ? !wsBackwardKeySplitTakes(d, dv) : !wsBackwardRoleSplitTakes(d, dv)) ||
      spec.getSoftcap().getValueAsDouble() != 0.0)
    return kernel.emitError() << "CUDA emitter: @" << kernel.getSymName() << ": block_m " << kernel.getBlockM()
                              << ", block_n " << kernel.getBlockN() << " on " << kernel.getWarps()
                              << " warps is not the warp-specialised backward's plan for D = " << d << ", Dv = " << dv
                              << " (" << blockM << " queries x " << blockN << " keys, the spec's tiles of "
                              << blockN << " keys, no softcap)",
           failure();
  bool dqTma = wsBackwardDqTma(d, dv, stages, 2, keySplit);
  result.threads = 3 * 128;
  result.sharedBytes = wsBackwardSharedBytes(d, dv, stages, 2, keySplit);
  for (auto [arg, box] : {std::pair<unsigned, std::vector<int64_t>>{0, {blockM, 1, 64}}, {1, {blockN, 1, 64}},
                          {2, {blockN, 1, 64}}, {3, {blockM, 1, 64}}, {6, {64, 1, 32}}}) {
    if (arg == 6 && !dqTma)
      continue;
    rt::TensorMapParam map;
    map.name = argNames[arg] + "_map";
    map.tensor = argNames[arg];
    map.box = box;  // [T, H, C]: rows of one head, a 64-column panel (dq_accum: 64 rows x 32 f32 columns)
    map.swizzle = rt::TensorMapSwizzle::B128;
    result.tensorMaps.push_back(map);
  }
  std::string ns = entry.str() + "_config";
  out << "// Warp-specialised TMA backward over packed sequences: the device library's attention_bwd_ws_varlen;\n"
      << "// 2 consumer warpgroups split by " << (keySplit ? "keys" : "role")
      << " + 1 producer warpgroup, one key tile of the plan's map a block.\n";
  out << "namespace " << ns << " {\n";
  out << "struct Config {\n";
  out << "  using Elem = flashc::device::" << (spec.getElementType().getValue().isBF16() ? "bf16" : "f16") << ";\n";
  out << "  static constexpr int kHeadDim = " << wsBackwardHeadTile(d, dv, keySplit)
      << ", kValueDim = " << wsForwardValueTile(dv) << ", kHeadCols = " << d << ", kValueCols = " << dv << ";\n";
  out << "  static constexpr int kBlockM = " << blockM << ", kStages = " << stages << ", kDqCols = 64;\n";
  out << "  static constexpr bool kKeySplit = " << (keySplit ? "true" : "false")
      << ", kDqTma = " << (dqTma ? "true" : "false") << ";\n";
  out << "  static constexpr int kGroup = " << spec.getGroup() << ";  // query heads per KV head\n";
  out << "  static constexpr int kWindowLeft = " << spec.getWindowLeft() << ", kWindowRight = " << spec.getWindowRight()
      << ";  // each sequence's bottom-right corner\n";
  out << "  static constexpr float kScale = " << llvm::formatv("{0:e9}", spec.getScale().getValueAsDouble()).str()
      << "f, kDqScale = kScale;  // the finish only converts dQ\n";
  out << "  static constexpr int kProducerRegs = 24, kConsumerRegs = 240;\n";
  out << "};\n";
  out << "using Plan = flashc::device::AttentionBwdWsPlan<Config>;\n";
  out << "static_assert(Plan::kThreads == " << result.threads << " && Plan::kSmemBytes == " << result.sharedBytes
      << ", \"the manifest's block size and shared memory\");\n";
  out << "}  // namespace " << ns << "\n\n";
  out << "extern \"C\" __global__ void __launch_bounds__(" << result.threads << ", 1)\n" << entry << "(";
  for (size_t i = 0; i < cppNames.size(); ++i)
    out << (i ? ", " : "") << "const flashc::TensorArg " << cppNames[i];
  for (unsigned arg : {0u, 1u, 2u, 3u})
    out << ", const __grid_constant__ flashc::TmaDescriptor " << cppNames[arg] << "_map";
  if (dqTma)
    out << ", const __grid_constant__ flashc::TmaDescriptor " << cppNames[6] << "_map";
  out << ") {\n";
  out << "  flashc::device::attention_bwd_ws_varlen<" << ns << "::Config>(" << cppNames[0] << "_map, " << cppNames[1]
      << "_map, " << cppNames[2] << "_map, " << cppNames[3] << "_map";
  for (unsigned i : {0u, 1u, 4u, 5u, 6u, 7u, 8u, 9u, 10u, 11u})
    out << ", " << cppNames[i];
  out << ", static_cast<const int*>(" << cppNames[12] << ".data), " << (dqTma ? "&" + cppNames[6] + "_map" : "nullptr")
      << ");\n}\n\n";
  return result;
}

/// A packed-sequences program's kernels (#tile.varlen): the plan (varlen.cuh: the offsets' check and the tile
/// map) and the forward, the warp-specialised forward's body over one tile of the map (attention_fwd_ws_varlen;
/// 3-D TMA maps of the packed q, k, v).
FailureOr<WsKernel> emitVarlen(tile::KernelOp kernel, tile::VarlenSpecAttr spec, ArrayRef<std::string> argNames,
                               ArrayRef<std::string> cppNames, StringRef entry, StringRef specComment,
                               llvm::raw_ostream &out) {
  // A kernel read from a file may carry any signature: the role's tensors, each of its rank, or an error.
  ArrayRef<Type> inputs = kernel.getFunctionType().getInputs();
  using tile::KernelRole;
  KernelRole role = spec.getRole();
  bool plan = role == KernelRole::VarlenPlan || role == KernelRole::VarlenKeyPlan;
  SmallVector<int64_t> ranks;
  const char *what = "";
  switch (role) {
  case KernelRole::VarlenPlan:
  case KernelRole::VarlenKeyPlan:
    ranks = {1, 1, 3, 3, 2, 1}, what = "cu_seqlens_q, cu_seqlens_k, q, k, tile_map, status";
    break;
  case KernelRole::VarlenForward:
    ranks = {3, 3, 3, 1, 1, 2, 1, 3, 2}, what = "q, k, v, cu_seqlens_q, cu_seqlens_k, tile_map, status, out, lse";
    break;
  case KernelRole::VarlenBwdPrepare:
    ranks = {3, 3, 2, 3}, what = "out, dout, delta, dq_accum";
    break;
  case KernelRole::VarlenBackward:
    ranks = {3, 3, 3, 3, 2, 2, 3, 3, 3, 1, 1, 2, 1};
    what = "q, k, v, dout, lse, delta, dq_accum, dk, dv, cu_seqlens_q, cu_seqlens_k, key_map, status";
    break;
  default:
    ranks = {3, 1, 3}, what = "dq_accum, status, dq";
    break;
  }
  bool fits = inputs.size() == ranks.size() && cppNames.size() == ranks.size() && argNames.size() == ranks.size();
  Type elem = spec.getElementType().getValue();
  for (size_t i = 0; fits && i < ranks.size(); ++i) {
    auto t = dyn_cast<tile::GlobalTensorType>(inputs[i]);
    fits = t && t.getRank() == ranks[i];
    if (!fits || role != KernelRole::VarlenForward)
      continue;
    // q, k: [T, H, D]; v, out: [T, H, Dv] in the spec's element type; the offsets, map and status i32; lse f32
    int64_t width = i < 2 ? spec.getHeadDim() : spec.getValueDim();
    if (i <= 2 || i == 7)
      fits = t.getElementType() == elem && t.getShape()[2] == width;
    else if (i == 8)
      fits = t.getElementType().isF32();
    else
      fits = t.getElementType().isSignlessInteger(32);
  }
  if (!fits)
    return kernel.emitError() << "CUDA emitter: @" << kernel.getSymName() << " (" << tile::stringifyKernelRole(spec.getRole())
                              << ") takes " << what << " of ranks " << llvm::join(llvm::map_range(ranks, [](int64_t r) { return std::to_string(r); }), ", ")
                              << (role == KernelRole::VarlenForward
                                      ? " (q, k, v, out of the spec's element type and head dims)"
                                      : "")
                              << ", got "
                              << kernel.getFunctionType(),
           failure();
  WsKernel result;
  out << "// ---- " << kernel.getSymName() << " ----\n";
  if (!specComment.empty())
    out << "// " << specComment << "\n";
  auto params = [&](size_t count) {
    for (size_t i = 0; i < count; ++i)
      out << (i ? ", " : "") << "const flashc::TensorArg " << cppNames[i];
  };
  const char *elemName = spec.getElementType().getValue().isBF16() ? "bf16" : "f16";
  if (plan) { // (cu_q, cu_k, q, k, tile_map, status)
    bool keys = role == KernelRole::VarlenKeyPlan;
    result.threads = kernel.getWarps() * 32;
    out << "// The offsets checked (a bad entry into status), then the " << (keys ? "backward's key" : "forward's")
        << " tile map.\n";
    out << "extern \"C\" __global__ void __launch_bounds__(" << result.threads << ")\n" << entry << "(";
    params(cppNames.size());
    out << ") {\n  flashc::device::attention_varlen_plan(" << cppNames[0] << ", " << cppNames[1]
        << ", static_cast<int>(" << cppNames[2] << ".shape[0]), static_cast<int>(" << cppNames[3]
        << ".shape[0]), " << spec.getBlockM() << ", " << cppNames[4] << ", static_cast<int*>(" << cppNames[5]
        << ".data)" << (keys ? ", /*key_tiles=*/true" : "") << ");\n}\n\n";
    return result;
  }
  if (role == KernelRole::VarlenBwdPrepare || role == KernelRole::VarlenBwdFinish) {
    result.threads = kernel.getWarps() * 32;
    bool prepare = role == KernelRole::VarlenBwdPrepare;
    out << (prepare ? "// delta = rowsum(dO O) and dq_accum zeroed, 64 rows of one head a block.\n"
                    : "// dq = dq_accum in the element type (the main kernel scaled it), 64 rows of one head a block.\n");
    out << "extern \"C\" __global__ void __launch_bounds__(" << result.threads << ")\n" << entry << "(";
    params(cppNames.size());
    if (prepare)
      out << ") {\n  flashc::device::attention_varlen_bwd_prepare<flashc::device::" << elemName << ">(" << cppNames[0]
          << ", " << cppNames[1] << ", " << cppNames[2] << ", " << cppNames[3] << ");\n}\n\n";
    else
      out << ") {\n  flashc::device::attention_varlen_bwd_finish<flashc::device::" << elemName << ">(" << cppNames[0]
          << ", " << cppNames[2] << ", static_cast<const int*>(" << cppNames[1] << ".data));\n}\n\n";
    return result;
  }
  if (role == KernelRole::VarlenBackward)
    return emitVarlenBackward(kernel, spec, argNames, cppNames, entry, result, out);
  // (q, k, v, cu_q, cu_k, tile_map, status, out, lse)
  int64_t d = spec.getHeadDim(), dv = spec.getValueDim(), blockM = kernel.getBlockM(), blockN = kernel.getBlockN();
  int64_t stages = kernel.getStages(), consumers = blockM / 64;
  if (blockM != spec.getBlockM() || kernel.getWarps() != 4 * consumers)
    return kernel.emitError() << "CUDA emitter: @" << kernel.getSymName() << ": block_m " << blockM << " on "
                              << kernel.getWarps() << " warps is not the spec's " << spec.getBlockM()
                              << " rows (64 a consumer warpgroup of 4 warps)",
           failure();
  result.threads = 128 * consumers + 128;
  result.sharedBytes = wsForwardSharedBytes(d, dv, blockN, stages, 2, /*residentBarriers=*/2, blockM);
  for (auto [arg, rows] : {std::pair<unsigned, int64_t>{0, blockM}, {1, blockN}, {2, blockN}}) {
    rt::TensorMapParam map;
    map.name = argNames[arg] + "_map";
    map.tensor = argNames[arg];
    map.box = {rows, 1, 64};  // [T, H, D]: rows of one head, a 64-column panel
    map.swizzle = rt::TensorMapSwizzle::B128;
    result.tensorMaps.push_back(map);
  }
  std::string ns = entry.str() + "_config";
  bool causal = spec.isCausal();
  out << "// Warp-specialised TMA forward over packed sequences: the device library's attention_fwd_ws_varlen;\n"
      << "// " << 4 * consumers << " consumer warps + 1 producer warpgroup, one query tile of the plan's map a block.\n";
  out << "namespace " << ns << " {\n";
  out << "struct Config {\n";
  out << "  using Elem = flashc::device::" << (spec.getElementType().getValue().isBF16() ? "bf16" : "f16") << ";\n";
  out << "  static constexpr int kHeadDim = " << wsForwardHeadTile(d) << ", kValueDim = " << wsForwardValueTile(dv)
      << ", kValueCols = " << dv << ";\n";
  out << "  static constexpr int kBlockN = " << blockN << ", kStages = " << stages << ";\n";
  out << "  static constexpr int kGroup = " << spec.getGroup() << ";  // query heads per KV head\n";
  out << "  static constexpr int kWindowLeft = " << spec.getWindowLeft() << ", kWindowRight = " << spec.getWindowRight()
      << ";  // each sequence's bottom-right corner\n";
  out << "  static constexpr float kScale = " << llvm::formatv("{0:e9}", spec.getScale().getValueAsDouble()).str()
      << "f, kSoftcap = " << llvm::formatv("{0:e9}", spec.getSoftcap().getValueAsDouble()).str() << "f;\n";
  out << "  static constexpr int kProducerRegs = 24, kConsumerRegs = " << wsConsumerRegisters(consumers) << ";\n";
  out << "  static constexpr bool kPingPong = true, kLongestFirst = " << (causal ? "true" : "false")
      << ", kPersistent = false;\n";
  out << "  static constexpr int kConsumerWarpgroups = " << consumers << ";  // 64 query rows each\n";
  out << "};\n";
  out << "using Plan = flashc::device::AttentionFwdWsPlan<Config>;\n";
  out << "static_assert(Plan::kThreads == " << result.threads << " && Plan::kSmemBytes == " << result.sharedBytes
      << ", \"the manifest's block size and shared memory\");\n";
  out << "}  // namespace " << ns << "\n\n";
  out << "extern \"C\" __global__ void __launch_bounds__(" << result.threads << ", 1)\n" << entry << "(";
  params(cppNames.size());
  for (unsigned arg : {0u, 1u, 2u})
    out << ", const __grid_constant__ flashc::TmaDescriptor " << cppNames[arg] << "_map";
  out << ") {\n";
  out << "  flashc::device::attention_fwd_ws_varlen<" << ns << "::Config>(" << cppNames[0] << "_map, " << cppNames[1]
      << "_map, " << cppNames[2] << "_map, " << cppNames[0] << ", " << cppNames[1] << ", " << cppNames[7] << ", "
      << cppNames[8] << ", " << cppNames[3] << ", " << cppNames[4] << ", " << cppNames[5]
      << ", static_cast<const int*>(" << cppNames[6] << ".data));\n}\n\n";
  return result;
}

} // namespace

FailureOr<WsKernel> emitLibraryKernel(tile::KernelOp kernel, ArrayRef<std::string> argNames,
                                      ArrayRef<std::string> cppNames, StringRef entry, StringRef specComment,
                                      llvm::raw_ostream &out) {
  if (auto decode = dyn_cast<tile::DecodeSpecAttr>(kernel.getSpecAttr()))
    return emitDecode(kernel, decode, argNames, cppNames, entry, specComment, out);
  if (auto varlen = dyn_cast<tile::VarlenSpecAttr>(kernel.getSpecAttr()))
    return emitVarlen(kernel, varlen, argNames, cppNames, entry, specComment, out);
  if (auto moe = dyn_cast<tile::MoeSpecAttr>(kernel.getSpecAttr()))
    return emitMoeRouting(kernel, moe, cppNames, entry, specComment, out);
  if (auto attention = dyn_cast<tile::AttentionSpecAttr>(kernel.getSpecAttr())) {
    if (attention.getRole() == tile::KernelRole::AttentionSegmentPlan)
      return emitSegmentPlan(kernel, cppNames, entry, specComment, out);
    return isBackwardEnd(attention) ? emitBackwardEnd(kernel, attention, cppNames, entry, specComment, out)
                                    : emitMaskBlocks(kernel, attention, cppNames, entry, specComment, out);
  }
  auto gemm = cast<tile::GemmSpecAttr>(kernel.getSpecAttr());
  bool gated = gemm.getGated().getValue();
  ArrayRef<Type> inputs = kernel.getFunctionType().getInputs();
  if (inputs.size() != (gated ? 5u : 3u) || cppNames.size() != inputs.size())
    return kernel.emitError() << "CUDA emitter: @" << kernel.getSymName()
                              << " (ffn_activation_grad) takes "
                              << (gated ? "dh, g, u, dg, du" : "dh, pre, dpre") << ", got "
                              << inputs.size() << " arguments",
           failure();
  auto dh = cast<tile::GlobalTensorType>(inputs[0]);
  int64_t blockM = kernel.getBlockM(), blockN = kernel.getBlockN(), threads = kernel.getWarps() * 32;
  if (blockN % 8 != 0 || (blockM * blockN / 8) % threads != 0)
    return kernel.emitError() << "CUDA emitter: @" << kernel.getSymName() << ": block " << blockM
                              << " x " << blockN << " on " << threads
                              << " threads is not whole 8-element chunks a thread",
           failure();
  WsKernel result;
  result.threads = threads;
  std::string ns = entry.str() + "_config";
  out << "// ---- " << kernel.getSymName() << " ----\n";
  if (!specComment.empty())
    out << "// " << specComment << "\n";
  out << "// The FFN backward's activation, elementwise: the device library's\n"
      << "// ffn_activation_grad (16-byte chunks, a thread's loads issued together).\n";
  out << "namespace " << ns << " {\n";
  out << "struct Config {\n";
  out << "  using Elem = flashc::device::" << (gemm.getElementType().getValue().isBF16() ? "bf16" : "f16")
      << ";\n";
  out << "  static constexpr flashc::device::Act kAct = flashc::device::"
      << activationEnumerator(gemm.getActivation()) << ";\n";
  out << "  static constexpr bool kGated = " << (gated ? "true" : "false")
      << ", kBatched = " << (dh.getRank() == 3 ? "true" : "false") << ";\n";
  out << "  static constexpr int kBlockM = " << blockM << ", kBlockN = " << blockN
      << ", kThreads = " << threads << ";\n";
  out << "};\n}  // namespace " << ns << "\n\n";
  // Enough resident blocks to keep 1024 threads an SM (at most 64 registers a thread).
  out << "extern \"C\" __global__ void __launch_bounds__(" << threads << ", "
      << std::max<int64_t>(1, 1024 / threads) << ")\n" << entry << "(";
  for (auto [i, name] : llvm::enumerate(cppNames))
    out << (i ? ", " : "") << "const flashc::TensorArg " << name;
  out << ") {\n";
  // Plain: no u or du (the library does not read them).
  std::string up = gated ? cppNames[2] : cppNames[1], du = gated ? cppNames[4] : cppNames[2];
  out << "  flashc::device::ffn_activation_grad<" << ns << "::Config>(" << cppNames[0] << ", "
      << cppNames[1] << ", " << up << ", " << (gated ? cppNames[3] : cppNames[2]) << ", " << du
      << ");\n}\n\n";
  return result;
}

} // namespace flashc
