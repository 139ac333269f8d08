//===- WsForwardEmitter.cpp - the warp-specialised forward's CUDA ---------===//
#include "WsForwardEmitter.h"

#include "flashc/Compiler/Target.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/FormatVariadic.h"

#include <cctype>

using namespace mlir;

namespace flashc {

bool isWsForward(tile::KernelOp kernel) {
  return kernel.getStrategy() == tile::Strategy::WgmmaWsSm90;
}

FailureOr<WsForwardKernel> emitWsForward(tile::KernelOp kernel, ArrayRef<std::string> argNames,
                                         ArrayRef<std::string> cppNames, StringRef entry,
                                         StringRef specComment, llvm::raw_ostream &out) {
  auto reject = [&](const llvm::Twine &why) -> FailureOr<WsForwardKernel> {
    return kernel.emitError() << "CUDA emitter: @" << kernel.getSymName()
                              << " has strategy wgmma_ws_sm90, the warp-specialised attention "
                                 "forward, but "
                              << why,
           failure();
  };
  auto spec = dyn_cast_or_null<tile::AttentionSpecAttr>(kernel.getSpecAttr());
  if (!spec || spec.getRole() != tile::KernelRole::AttentionForward)
    return reject("it is not an attention forward (#tile.attention<role = attention_forward>)");
  int64_t d = spec.getHeadDim(), dv = spec.getValueDim();
  if (!wsForwardTakes(d, dv))
    return reject(llvm::formatv("head_dim = {0}, value_dim = {1}: it takes head dims that are "
                                "multiples of 8 up to 256, the head dim above 32",
                                d, dv));
  Type elem = spec.getElementType().getValue();
  if (!elem.isBF16() && !elem.isF16())
    return reject("its element type is not bf16 or f16");
  ArrayRef<Type> inputs = kernel.getFunctionType().getInputs();
  if (inputs.size() != 5)
    return reject(llvm::formatv("it takes {0} tensors, not 5 (q, k, v, o, lse)", inputs.size()));
  for (unsigned i = 0; i < 4; ++i) {
    int64_t width = i == 0 || i == 1 ? d : dv; // q, k: D; v, o: Dv
    auto type = dyn_cast<tile::GlobalTensorType>(inputs[i]);
    if (!type || type.getRank() != 4 || type.getElementType() != elem ||
        type.getShape()[3] != width)
      return reject(llvm::formatv("tensor '{0}' is not [B, H, S, {1}] of the spec's element type",
                                  argNames[i], width));
  }
  // The schedule is flash-warp-specialize's; the library runs two consumer
  // warpgroups (kWsForwardThreads) of 64 rows.
  tile::WarpSpecializedAttr schedule = kernel.getScheduleAttr();
  if (!schedule)
    return reject("it has no #tile.warp_specialized schedule (run flash-warp-specialize after "
                  "flash-plan-memory)");
  auto names = [](ArrayAttr list) {
    SmallVector<StringRef> out;
    for (Attribute name : list)
      out.push_back(cast<StringAttr>(name).getValue());
    return out;
  };
  if (schedule.getConsumerWarpgroups() != 2 ||
      names(schedule.getResident()) != SmallVector<StringRef>{"q"} ||
      names(schedule.getRing()) != SmallVector<StringRef>{"k", "v"})
    return reject("its schedule is not the library's: 2 consumer warpgroups, q resident, k and v "
                  "in the ring");
  int64_t blockN = kernel.getBlockN(), stages = schedule.getRingStages();
  if (kernel.getBlockM() != 128 || (blockN != 64 && blockN != 128) || kernel.getWarps() != 8 ||
      stages < 1 || stages > 4 || !wsForwardFitsRegisters(dv, blockN))
    return reject(llvm::formatv("block_m = {0}, block_n = {1}, warps = {2}, stages = {3}: its "
                                "schedule is 128 query rows on 8 warps (+ the producer "
                                "warpgroup), 64 or 128 keys a block (64 at value_dim 256), 1-4 "
                                "stages",
                                kernel.getBlockM(), blockN, kernel.getWarps(), stages));

  // GQA: query heads per KV head, static when both head counts are (else
  // the library divides the shapes at run time).
  int64_t headsQ = cast<tile::GlobalTensorType>(inputs[0]).getShape()[1];
  int64_t headsKV = cast<tile::GlobalTensorType>(inputs[1]).getShape()[1];
  int64_t group = !ShapedType::isDynamic(headsQ) && !ShapedType::isDynamic(headsKV) &&
                          headsKV > 0 && headsQ % headsKV == 0
                      ? headsQ / headsKV
                      : 0;
  int64_t elementBytes = elem.getIntOrFloatBitWidth() / 8;
  WsForwardKernel result;
  result.sharedBytes = wsForwardSharedBytes(d, dv, blockN, stages, elementBytes);

  // Tensor maps of q, k, v: one 128-byte swizzled panel of 64 columns a box
  // (the SmemPanelTile layout the wgmma descriptors read), 128 query rows or
  // blockN key rows, one head of one batch.
  std::vector<std::string> mapCppNames;
  for (unsigned i = 0; i < 3; ++i) {
    std::string name = argNames[i] + "_map";
    while (llvm::is_contained(argNames, name))
      name += "_";
    rt::TensorMapParam map;
    map.name = name;
    map.tensor = argNames[i];
    map.box = {1, 1, i == 0 ? 128 : blockN, 64};
    map.swizzle = rt::TensorMapSwizzle::B128;
    result.tensorMaps.push_back(map);
    std::string cpp = name;
    for (char &c : cpp)
      if (!std::isalnum(static_cast<unsigned char>(c)))
        c = '_';
    while (llvm::is_contained(cppNames, cpp))
      cpp += "_";
    mapCppNames.push_back(cpp);
  }

  auto literal = [](double v) { return llvm::formatv("{0:e9}", v).str() + "f"; };
  std::string ns = entry.str() + "_config";
  out << "// ---- " << kernel.getSymName() << " ----\n";
  if (!specComment.empty())
    out << "// " << specComment << "\n";
  out << "// Warp-specialised TMA forward (strategy wgmma_ws_sm90): the device library's\n"
      << "// attention_fwd_ws; 8 consumer warps + 1 producer warpgroup.\n";
  out << "namespace " << ns << " {\n";
  out << "struct Config {\n";
  out << "  using Elem = flashc::device::" << (elem.isBF16() ? "bf16" : "f16") << ";\n";
  // Tile widths (padded to whole panels / a wgmma N) and o's true width.
  out << "  static constexpr int kHeadDim = " << wsForwardHeadTile(d)
      << ", kValueDim = " << wsForwardValueTile(dv) << ", kValueCols = " << dv << ";\n";
  out << "  static constexpr int kBlockN = " << blockN << ", kStages = " << stages << ";\n";
  out << "  static constexpr int kGroup = " << group
      << ";  // query heads per KV head (0: from the shapes at run time)\n";
  out << "  static constexpr int kWindowLeft = " << spec.getWindowLeft()
      << ", kWindowRight = " << spec.getWindowRight() << ";\n";
  out << "  static constexpr float kScale = " << literal(spec.getScale().getValueAsDouble())
      << ", kSoftcap = " << literal(spec.getSoftcap().getValueAsDouble()) << ";\n";
  out << "  // schedule (flash-warp-specialize): register budgets of the producer and\n"
      << "  // consumer warpgroups, ping-pong; block order (flash-order-blocks)\n";
  out << "  static constexpr int kProducerRegs = " << schedule.getProducerRegisters()
      << ", kConsumerRegs = " << schedule.getConsumerRegisters() << ";\n";
  out << "  static constexpr bool kPingPong = " << (schedule.getPingPong() ? "true" : "false")
      << ", kLongestFirst = "
      << (kernel.getGridOrderAttr() &&
                  kernel.getGridOrderAttr().getOrder() == tile::BlockOrder::LongestFirst
              ? "true"
              : "false")
      << ";\n";
  out << "};\n";
  out << "using Plan = flashc::device::AttentionFwdWsPlan<Config>;\n";
  out << "static_assert(Plan::kThreads == " << kWsForwardThreads
      << " && Plan::kSmemBytes == " << result.sharedBytes
      << ", \"the manifest's block size and shared memory\");\n";
  out << "}  // namespace " << ns << "\n\n";
  out << "extern \"C\" __global__ void __launch_bounds__(" << kWsForwardThreads << ", 1)\n"
      << entry << "(";
  for (unsigned i = 0; i < 5; ++i)
    out << (i ? ", " : "") << "const flashc::TensorArg " << cppNames[i];
  for (const std::string &map : mapCppNames)
    out << ", const __grid_constant__ flashc::TmaDescriptor " << map;
  out << ") {\n";
  out << "  flashc::device::attention_fwd_ws<" << ns << "::Config>(" << mapCppNames[0] << ", "
      << mapCppNames[1] << ", " << mapCppNames[2] << ", " << cppNames[0] << ", " << cppNames[1]
      << ", " << cppNames[3] << ", " << cppNames[4] << ");\n";
  out << "}\n\n";
  return result;
}

} // namespace flashc
