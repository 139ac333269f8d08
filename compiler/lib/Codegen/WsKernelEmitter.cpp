//===- WsKernelEmitter.cpp - warp-specialised kernels' CUDA -------------===//
#include "WsKernelEmitter.h"
#include "MaskModEmitter.h"
#include "ScoreModEmitter.h"

#include "flashc/Compiler/Target.h"
#include "flashc/Dialect/Common/IndexFunction.h"

#include "mlir/IR/SymbolTable.h"

#include "Names.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"

#include <cctype>
#include <optional>

using namespace mlir;

namespace flashc {

bool isWarpSpecialized(tile::KernelOp kernel) {
  return kernel.getStrategy() == tile::Strategy::WgmmaWsSm90;
}

namespace {

using RejectFn = llvm::function_ref<FailureOr<WsKernel>(const llvm::Twine &)>;

SmallVector<StringRef> attrNames(ArrayAttr list) {
  SmallVector<StringRef> out;
  for (Attribute name : list)
    out.push_back(cast<StringAttr>(name).getValue());
  return out;
}

/// The schedule flash-warp-specialize gave the kernel, checked against the
/// library's form: `resident` loaded once, `ring` streamed; the plan's shape
/// wsForwardPlanTakes' (64 rows a consumer warpgroup of 4 warps, two -- the
/// attention forward: or three -- of them; 64 or 128 columns a ring block;
/// 1-4 stages; the accumulators within the consumer registers).
FailureOr<tile::WarpSpecializedAttr> checkSchedule(tile::KernelOp kernel,
                                                   ArrayRef<StringRef> resident,
                                                   ArrayRef<StringRef> ring, RejectFn reject) {
  tile::WarpSpecializedAttr schedule = kernel.getScheduleAttr();
  if (!schedule)
    return (void)reject("it has no #tile.warp_specialized schedule (run flash-warp-specialize after "
                  "flash-plan-memory)"),
           failure();
  if (attrNames(schedule.getResident()) != SmallVector<StringRef>(resident) ||
      attrNames(schedule.getRing()) != SmallVector<StringRef>(ring))
    return (void)reject(llvm::formatv("its schedule is not the library's: {0} resident, {1} in the ring",
                                llvm::join(resident, ", "), llvm::join(ring, " and "))),
           failure();
  // (The kernel verifier ties the schedule's consumer warpgroups to the plan's
  // warps, which this rule checks.)
  std::optional<WsForwardSizes> sizes =
      wsForwardSizes(kernel.getSpecAttr(), kernel.getFunctionType().getInputs());
  int64_t blockN = kernel.getBlockN(), stages = schedule.getRingStages();
  if (!sizes || !wsForwardPlanTakes(*sizes, kernel.getBlockM(), blockN, kernel.getWarps(), stages))
    return (void)reject(llvm::formatv("block_m = {0}, block_n = {1}, warps = {2}, stages = {3}: its "
                                "schedule is 64 rows on 4 warps a consumer warpgroup, 2{4} of them "
                                "(+ the producer warpgroup), 64 or 128 columns a ring block whose "
                                "accumulators fit the consumer registers, 1-4 stages",
                                kernel.getBlockM(), blockN, kernel.getWarps(), stages,
                                sizes && sizes->maxConsumerWarpgroups > 2 ? " or 3" : "")),
           failure();
  return schedule;
}

/// A warp-specialised block's threads: its consumer warpgroups and the
/// producer warpgroup.
int64_t blockThreads(tile::WarpSpecializedAttr schedule) {
  return 128 * (schedule.getConsumerWarpgroups() + 1);
}

/// Tensor maps of the named tensors (128-byte swizzled panels of 64 columns:
/// the SmemPanelTile layout the wgmma descriptors read), one box each, and
/// their C++ parameter names (clear of the kernel's other names).
std::vector<std::string> addTensorMaps(ArrayRef<std::pair<unsigned, SmallVector<int64_t>>> boxes,
                                       ArrayRef<std::string> argNames,
                                       ArrayRef<std::string> cppNames, WsKernel &result) {
  std::vector<std::string> mapCppNames;
  for (const auto &[arg, box] : boxes) {
    std::string name = argNames[arg] + "_map";
    while (llvm::is_contained(argNames, name))
      name += "_";
    rt::TensorMapParam map;
    map.name = name;
    map.tensor = argNames[arg];
    map.box.assign(box.begin(), box.end());
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
  return mapCppNames;
}

/// The Config lines both kernels share: the register budgets and ping-pong;
/// `order` (attention) adds flash-order-blocks' block order: longest first or
/// the persistent grid.
void printScheduleConfig(tile::WarpSpecializedAttr schedule, std::optional<tile::BlockOrder> order,
                         llvm::raw_ostream &out) {
  out << "  // schedule (flash-warp-specialize): register budgets of the producer and\n"
      << "  // consumer warpgroups, ping-pong" << (order ? "; block order (flash-order-blocks)" : "")
      << "\n";
  out << "  static constexpr int kProducerRegs = " << schedule.getProducerRegisters()
      << ", kConsumerRegs = " << schedule.getConsumerRegisters() << ";\n";
  out << "  static constexpr bool kPingPong = " << (schedule.getPingPong() ? "true" : "false");
  if (order)
    out << ", kLongestFirst = " << (*order == tile::BlockOrder::LongestFirst ? "true" : "false")
        << ",\n                        kPersistent = "
        << (*order == tile::BlockOrder::Persistent ? "true" : "false");
  out << ";\n";
}

/// The end of a kernel's Config: the library's plan for it, checked against
/// the manifest's block size and shared memory, and the namespace closed.
void printPlanCheck(StringRef plan, const WsKernel &kernel, StringRef ns, llvm::raw_ostream &out) {
  out << "};\n";
  out << "using Plan = " << plan << "<Config>;\n";
  out << "static_assert(Plan::kThreads == " << kernel.threads << " && Plan::kSmemBytes == " << kernel.sharedBytes
      << ", \"the manifest's block size and shared memory\");\n";
  out << "}  // namespace " << ns << "\n\n";
}

/// The Config lines both attention kernels share: the GQA group (query heads
/// per KV head from q's and k's head counts when both are static, else 0: the
/// library divides the shapes at run time) and the window mask.
void printHeadsAndMask(tile::AttentionSpecAttr spec, ArrayRef<Type> inputs, llvm::raw_ostream &out) {
  int64_t headsQ = cast<tile::GlobalTensorType>(inputs[0]).getShape()[1];
  int64_t headsKV = cast<tile::GlobalTensorType>(inputs[1]).getShape()[1];
  int64_t group = !ShapedType::isDynamic(headsQ) && !ShapedType::isDynamic(headsKV) && headsKV > 0 &&
                          headsQ % headsKV == 0
                      ? headsQ / headsKV
                      : 0;
  out << "  static constexpr int kGroup = " << group
      << ";  // query heads per KV head (0: from the shapes at run time)\n";
  out << "  static constexpr int kWindowLeft = " << spec.getWindowLeft()
      << ", kWindowRight = " << spec.getWindowRight() << ";\n";
  if (spec.getMaskMod())
    out << "  using MaskMod = " << maskModTypeName(spec.getMaskMod()) << ";  // tile.mask_mod "
        << spec.getMaskMod() << " on top of the window\n";
  if (spec.getScoreMod())
    out << "  using ScoreMod = " << scoreModTypeName(spec.getScoreMod()) << ";  // tile.score_mod "
        << spec.getScoreMod() << "\n";
}

/// The tensors a kernel's mask modifier reads (its arguments after the
/// role's) and whether a block-class table follows them.
struct MaskArgs {
  unsigned first = 0, tensors = 0;
  bool table = false;
};

FailureOr<MaskArgs> maskArgs(tile::KernelOp kernel, tile::AttentionSpecAttr spec, unsigned roleTensors) {
  MaskArgs args;
  args.first = roleTensors;
  args.table = spec.getMaskBlocks();
  if (auto sym = spec.getMaskMod()) {
    auto maskMod = SymbolTable::lookupNearestSymbolFrom<tile::MaskModOp>(kernel, sym);
    if (!maskMod)
      return kernel.emitError() << "CUDA emitter: @" << kernel.getSymName() << " names mask modifier " << sym
                                << ", which the module does not hold",
             failure();
    args.tensors = flashc::indexFunctionLayout(maskMod.getBody()).tensorArgs;
  }
  // The library walks a tensor-reading modifier's blocks from its table: a kernel without one cannot run.
  if (args.tensors > 0 && !args.table)
    return kernel.emitError() << "CUDA emitter: @" << kernel.getSymName() << "'s mask modifier " << spec.getMaskMod()
                              << " reads tensors, but its recipe takes no block-class table (#tile.attention<..., "
                                 "mask_blocks = true>, filled by a kernel of role attention_mask_blocks)",
           failure();
  return args;
}

/// How many tensors the kernel's score modifier reads (0 without one): its arguments after the mask modifier's.
FailureOr<unsigned> scoreModTensors(tile::KernelOp kernel, tile::AttentionSpecAttr spec) {
  auto sym = spec.getScoreMod();
  if (!sym)
    return 0u;
  auto scoreMod = SymbolTable::lookupNearestSymbolFrom<tile::ScoreModOp>(kernel, sym);
  if (!scoreMod)
    return kernel.emitError() << "CUDA emitter: @" << kernel.getSymName() << " names score modifier " << sym
                              << ", which the module does not hold",
           failure();
  return scoreMod.getBody().front().getNumArguments() - 5;
}

/// The key position of query row 0 the kernel is given: the run-time key offset (`given`, the argument's name),
/// 0 for a band modifier's window (top_left: the modifier saw row indices), else Sk - Sq (bottom-right aligned).
std::string keyOffsetArgument(tile::AttentionSpecAttr spec, const std::string &given, ArrayRef<std::string> cppNames) {
  if (!given.empty())
    return given;
  if (spec.getTopLeft())
    return "0 /* top-left: the mask modifier's row positions */";
  return "static_cast<int>(" + cppNames[1] + ".shape[2] - " + cppNames[0] + ".shape[2])";
}

/// The arguments a library kernel takes for its modifiers: the mask modifier's tensors as a MaskEnv, the address
/// of its block-class table (after the score modifier's tensors) or nullptr, then, with a score modifier, its
/// tensors as a second MaskEnv.
std::string modifierEnv(unsigned first, unsigned count, ArrayRef<std::string> cppNames) {
  std::string text = "flashc::device::mask_env(0, 0";
  for (unsigned i = 0; i < count; ++i)
    text += ", " + cppNames[first + i];
  return text + ")";
}
std::string modifierCallArgs(const MaskArgs &mask, unsigned scoreTensors, bool scoreMod,
                             ArrayRef<std::string> cppNames) {
  std::string args = modifierEnv(mask.first, mask.tensors, cppNames) + ", " +
                     (mask.table ? "&" + cppNames[mask.first + mask.tensors + scoreTensors] : std::string("nullptr"));
  if (scoreMod)
    args += ", " + modifierEnv(mask.first + mask.tensors, scoreTensors, cppNames);
  return args;
}
/// The segment form's calls: the mask modifier's tensors, its table, the segment plan, then (with a score modifier)
/// its tensors.
std::string segmentCallArgs(const MaskArgs &mask, unsigned scoreTensors, bool scoreMod, const std::string &plan,
                            ArrayRef<std::string> cppNames) {
  std::string args = modifierCallArgs(mask, scoreTensors, false, cppNames) + ", " + plan;
  if (scoreMod)
    args += ", " + modifierEnv(mask.first + mask.tensors, scoreTensors, cppNames);
  return args;
}

/// The kernel's signature after its config namespace: the tensors, then the
/// maps as grid constants (their addresses go to the TMA unit; i32 tensors,
/// a mask modifier's and its block-class table, are grid constants too: the
/// kernel keeps their addresses).
void printSignature(StringRef entry, ArrayRef<std::string> cppNames, ArrayRef<Type> types,
                    ArrayRef<std::string> mapCppNames, int64_t threads, llvm::raw_ostream &out,
                    unsigned gridConstantFrom = ~0u) {
  out << "extern \"C\" __global__ void __launch_bounds__(" << threads << ", 1)\n"
      << entry << "(";
  for (auto [i, name] : llvm::enumerate(cppNames))
    if (auto tensor = dyn_cast<tile::GlobalTensorType>(types[i]))
      out << (i ? ", " : "")
          << (tensor.getElementType().isSignlessInteger(32) || i >= gridConstantFrom
                  ? "const __grid_constant__ flashc::TensorArg "
                                                            : "const flashc::TensorArg ")
          << name;
  for (const std::string &map : mapCppNames)
    out << ", const __grid_constant__ flashc::TmaDescriptor " << map;
  // Scalars (i32) after the maps: the ABI's order.
  for (auto [i, name] : llvm::enumerate(cppNames))
    if (!isa<tile::GlobalTensorType>(types[i]))
      out << ", const int " << name;
  out << ") {\n";
}

const char *elementName(Type elem) { return elem.isBF16() ? "bf16" : "f16"; }

/// Opens a GEMM-family kernel's Config (the fused FFN's, the GEMM's): the
/// banner naming the library kernel, its namespace (returned) and the element
/// type.
std::string openGemmConfig(StringRef entry, StringRef banner, Type elem, llvm::raw_ostream &out) {
  std::string ns = entry.str() + "_config";
  out << banner;
  out << "namespace " << ns << " {\n";
  out << "using namespace flashc::device;\n";
  out << "struct Config {\n";
  out << "  using Elem = " << elementName(elem) << ";\n";
  return ns;
}

std::string floatConfigLiteral(double v) { return llvm::formatv("{0:e9}", v).str() + "f"; }

FailureOr<WsKernel> emitAttention(tile::KernelOp kernel, tile::AttentionSpecAttr spec,
                                         ArrayRef<std::string> argNames,
                                         ArrayRef<std::string> cppNames, StringRef entry,
                                         RejectFn reject, llvm::raw_ostream &out) {
  int64_t d = spec.getHeadDim(), dv = spec.getValueDim();
  if (!wsForwardTakes(d, dv))
    return reject(llvm::formatv("head_dim = {0}, value_dim = {1}: it takes head dims that are "
                                "multiples of 8 up to 256, the head dim above 32",
                                d, dv));
  Type elem = spec.getElementType().getValue();
  if (!elem.isBF16() && !elem.isF16())
    return reject("its element type is not bf16 or f16");
  ArrayRef<Type> inputs = kernel.getFunctionType().getInputs();
  bool keyOffset = spec.takesKeyOffset();
  FailureOr<MaskArgs> mask = maskArgs(kernel, spec, 5);
  if (failed(mask))
    return failure();
  FailureOr<unsigned> scoreTensorCount = scoreModTensors(kernel, spec);
  if (failed(scoreTensorCount))
    return failure();
  unsigned scoreTensors = *scoreTensorCount;
  bool segments = spec.getSegments();
  unsigned want =
      5 + mask->tensors + scoreTensors + (mask->table ? 1 : 0) + (segments ? 1 : 0) + (keyOffset ? 1 : 0);
  if (inputs.size() != want)
    return reject(llvm::formatv("it takes {0} arguments, not {1} (q, k, v, o, lse{2}{3}{4}{5}{6})", inputs.size(),
                                want, mask->tensors ? ", the mask modifier's tensors" : "",
                                scoreTensors ? ", the score modifier's tensors" : "",
                                mask->table ? ", its block-class table" : "", segments ? ", the segment plan" : "",
                                keyOffset ? ", key_offset" : ""));
  for (unsigned i = 0; i < 4; ++i) {
    int64_t width = i == 0 || i == 1 ? d : dv; // q, k: D; v, o: Dv
    auto type = dyn_cast<tile::GlobalTensorType>(inputs[i]);
    if (!type || type.getRank() != 4 || type.getElementType() != elem ||
        type.getShape()[3] != width)
      return reject(llvm::formatv("tensor '{0}' is not [B, H, S, {1}] of the spec's element type",
                                  argNames[i], width));
  }
  FailureOr<tile::WarpSpecializedAttr> schedule =
      checkSchedule(kernel, {"q"}, {"k", "v"}, reject);
  if (failed(schedule))
    return failure();
  int64_t blockM = kernel.getBlockM(), blockN = kernel.getBlockN();
  int64_t stages = schedule->getRingStages();

  WsKernel result;
  result.sharedBytes = wsForwardSharedBytes(d, dv, blockN, stages, elem.getIntOrFloatBitWidth() / 8,
                                            /*residentBarriers=*/2, blockM);
  result.threads = blockThreads(*schedule);
  // q, k, v: blockM query rows or blockN key rows of one head of one batch.
  std::vector<std::string> maps =
      addTensorMaps({{0, {1, 1, blockM, 64}}, {1, {1, 1, blockN, 64}}, {2, {1, 1, blockN, 64}}},
                    argNames, cppNames, result);

  std::string ns = entry.str() + "_config";
  out << "// Warp-specialised TMA forward (strategy wgmma_ws_sm90): the device library's\n"
      << "// attention_fwd_ws; " << kernel.getWarps() << " consumer warps + 1 producer warpgroup.\n";
  out << "namespace " << ns << " {\n";
  out << "struct Config {\n";
  out << "  using Elem = flashc::device::" << elementName(elem) << ";\n";
  // Tile widths (padded to whole panels / a wgmma N) and o's true width.
  out << "  static constexpr int kHeadDim = " << wsForwardHeadTile(d)
      << ", kValueDim = " << wsForwardValueTile(dv) << ", kValueCols = " << dv << ";\n";
  out << "  static constexpr int kBlockN = " << blockN << ", kStages = " << stages << ";\n";
  printHeadsAndMask(spec, inputs, out);
  out << "  static constexpr float kScale = "
      << floatConfigLiteral(spec.getScale().getValueAsDouble())
      << ", kSoftcap = " << floatConfigLiteral(spec.getSoftcap().getValueAsDouble()) << ";\n";
  tile::GridOrderAttr order = kernel.getGridOrderAttr();
  if (order && order.getOrder() == tile::BlockOrder::Grouped)
    return reject("its grid order is grouped (the GEMMs' order)");
  printScheduleConfig(*schedule, order ? order.getOrder() : tile::BlockOrder::InOrder, out);
  out << "  static constexpr int kConsumerWarpgroups = " << schedule->getConsumerWarpgroups()
      << ";  // 64 query rows each\n";
  if (segments) {
    if (order && order.getOrder() == tile::BlockOrder::Persistent)
      return reject("it takes the segment form on a persistent grid (a document's tiles come one a block)");
    out << "  static constexpr bool kSegments = true;  // documents' tiles from the segment plan (segments.cuh)\n";
  }
  printPlanCheck("flashc::device::AttentionFwdWsPlan", result, ns, out);
  // (the modifiers' tensors are grid constants: their MaskEnv keeps the parameters' addresses)
  printSignature(entry, cppNames, inputs, maps, result.threads, out, /*gridConstantFrom=*/5);
  std::string offset = keyOffsetArgument(spec, keyOffset ? cppNames[want - 1] : "", cppNames);
  if (segments) {
    out << "  flashc::device::attention_fwd_ws_segments<" << ns << "::Config>(" << maps[0] << ", " << maps[1]
        << ", " << maps[2] << ", " << cppNames[0] << ", " << cppNames[1] << ", " << cppNames[3] << ", "
        << cppNames[4] << ", " << offset << ", "
        << segmentCallArgs(*mask, scoreTensors, spec.getScoreMod() != nullptr, cppNames[want - 1 - (keyOffset ? 1 : 0)],
                           cppNames)
        << ");\n}\n\n";
    return result;
  }
  out << "  flashc::device::attention_fwd_ws<" << ns << "::Config>(" << maps[0] << ", " << maps[1]
      << ", " << maps[2] << ", " << cppNames[0] << ", " << cppNames[1] << ", " << cppNames[3]
      << ", " << cppNames[4];
  // (Always the key position of row 0, as the backward's call: where the rows sit is the emitter's to say.)
  out << ", " << offset;
  if (spec.getMaskMod() || spec.getScoreMod())
    out << ", " << modifierCallArgs(*mask, scoreTensors, spec.getScoreMod() != nullptr, cppNames);
  out << ");\n";
  out << "}\n\n";
  return result;
}

/// The warp-specialised backward's main kernel (attention_bwd_ws): its
/// schedule is the library's role split, K/V resident, Q/dO in the ring.
FailureOr<WsKernel> emitAttentionBackward(tile::KernelOp kernel, tile::AttentionSpecAttr spec,
                                                 ArrayRef<std::string> argNames,
                                                 ArrayRef<std::string> cppNames, StringRef entry,
                                                 RejectFn reject, llvm::raw_ostream &out) {
  int64_t d = spec.getHeadDim(), dv = spec.getValueDim();
  if (!takesWsBackward(spec))
    return reject(llvm::formatv("head_dim = {0}, value_dim = {1}, softcap = {2}{3}: it takes 16-bit "
                                "head dims that are multiples of 8 up to 256, one above 32, "
                                "no softcap, and no score modifier but one whose derivative is 1",
                                d, dv, spec.getSoftcap().getValueAsDouble(),
                                spec.getScoreMod() ? ", a score modifier" : ""));
  Type elem = spec.getElementType().getValue();
  ArrayRef<Type> inputs = kernel.getFunctionType().getInputs();
  bool keyOffset = spec.takesKeyOffset();
  FailureOr<MaskArgs> mask = maskArgs(kernel, spec, 9);
  if (failed(mask))
    return failure();
  FailureOr<unsigned> scoreTensors = scoreModTensors(kernel, spec);
  if (failed(scoreTensors))
    return failure();
  bool segments = spec.getSegments();
  unsigned want =
      9 + mask->tensors + *scoreTensors + (mask->table ? 1 : 0) + (segments ? 1 : 0) + (keyOffset ? 1 : 0);
  if (inputs.size() != want)
    return reject(llvm::formatv("it takes {0} arguments, not {1} (q, k, v, dout, lse, delta, "
                                "dq_accum, dk, dv{2}{3}{4}{5}{6})",
                                inputs.size(), want, mask->tensors ? ", the mask modifier's tensors" : "",
                                *scoreTensors ? ", the score modifier's tensors" : "",
                                mask->table ? ", its block-class table" : "", segments ? ", the segment plan" : "",
                                keyOffset ? ", key_offset" : ""));
  // q, k, v, dout, dk, dv: [B, H, S, width] of the spec's element type.
  for (auto [i, width] : {std::pair<unsigned, int64_t>{0, d}, {1, d}, {2, dv}, {3, dv}, {7, d}, {8, dv}}) {
    auto type = dyn_cast<tile::GlobalTensorType>(inputs[i]);
    if (!type || type.getRank() != 4 || type.getElementType() != elem || type.getShape()[3] != width)
      return reject(llvm::formatv("tensor '{0}' is not [B, H, S, {1}] of the spec's element type",
                                  argNames[i], width));
  }
  // The consumer split is the schedule's (flash-warp-specialize, from the
  // plan): by keys, 128 a block on 8 warps, or by role, 64 a block on tiles
  // of 4 warps; 64 queries a step, 128 at head dims <= 64 (dQ then split by
  // rows).
  tile::WarpSpecializedAttr schedule = kernel.getScheduleAttr();
  if (!schedule || schedule.getConsumerWarpgroups() != 2 ||
      attrNames(schedule.getResident()) != SmallVector<StringRef>{"k", "v"} ||
      attrNames(schedule.getRing()) != SmallVector<StringRef>{"q", "dout"})
    return reject("its schedule is not the library's (run flash-warp-specialize): 2 consumer "
                  "warpgroups split by keys or roles, k and v resident, q and dout in the ring");
  bool keySplit = !schedule.getRoleSplit();
  if (keySplit ? !wsBackwardKeySplitTakes(d, dv) : !wsBackwardRoleSplitTakes(d, dv))
    return reject(llvm::formatv("its consumers split by {0}, which D = {1}, Dv = {2} does not take "
                                "(keys: D <= 192, Dv <= 128; roles: a head dim above 128)",
                                keySplit ? "keys" : "roles", d, dv));
  int64_t blockN = wsBackwardBlockN(keySplit), blockM = wsBackwardBlockM(d, dv);
  int64_t stages = schedule.getRingStages();
  tile::GridOrderAttr order = kernel.getGridOrderAttr();
  if (order && order.getOrder() != tile::BlockOrder::HeadGroups && order.getOrder() != tile::BlockOrder::InOrder)
    return reject("its grid order is neither the launch order nor head_groups (the orders the library's "
                  "backward takes)");
  int64_t elementBytes = elem.getIntOrFloatBitWidth() / 8;
  bool dqTma = wsBackwardDqTma(d, dv, stages, elementBytes, keySplit);
  // (flash-warp-specialize refuses the same: this guards a hand-written schedule.)
  if (schedule.getPingPong() && !wsBackwardTurnsTake(d, dv, keySplit))
    return reject("its schedule's ping_pong = true, but the library's backward takes turns only under the key "
                  "split below D = 192");
  if (static_cast<int64_t>(kernel.getBlockM()) != blockM ||
      static_cast<int64_t>(kernel.getBlockN()) != blockN ||
      static_cast<int64_t>(kernel.getWarps()) != blockN / 16 || stages < 1 || stages > 4)
    return reject(llvm::formatv("block_m = {0}, block_n = {1}, warps = {2}, stages = {3}: its "
                                "schedule is {6} queries x {4} keys on {5} warps, 1-4 stages",
                                kernel.getBlockM(), kernel.getBlockN(), kernel.getWarps(), stages,
                                blockN, blockN / 16, blockM));
  WsKernel result;
  result.sharedBytes = wsBackwardSharedBytes(d, dv, stages, elementBytes, keySplit, schedule.getPingPong());
  result.threads = blockThreads(schedule);
  // q, dout: a step's query rows; k, v: the block's key rows (one head of one
  // batch); dq_accum (wsBackwardDqTma): boxes of 64 rows x 32 f32 columns the
  // TMA reductions add into.
  SmallVector<std::pair<unsigned, SmallVector<int64_t>>> boxes = {{0, {1, 1, blockM, 64}},
                                                                 {1, {1, 1, blockN, 64}},
                                                                 {2, {1, 1, blockN, 64}},
                                                                 {3, {1, 1, blockM, 64}}};
  if (dqTma)
    boxes.push_back({6, {1, 1, 64, 32}});
  std::vector<std::string> maps = addTensorMaps(boxes, argNames, cppNames, result);

  std::string ns = entry.str() + "_config";
  out << "// Warp-specialised TMA backward (strategy wgmma_ws_sm90): the device library's\n"
      << "// attention_bwd_ws; 2 consumer warpgroups split by " << (keySplit ? "keys" : "role")
      << " + 1 producer warpgroup.\n";
  out << "namespace " << ns << " {\n";
  out << "struct Config {\n";
  out << "  using Elem = flashc::device::" << elementName(elem) << ";\n";
  out << "  static constexpr int kHeadDim = " << wsBackwardHeadTile(d, dv, keySplit)
      << ", kValueDim = " << wsForwardValueTile(dv) << ", kHeadCols = " << d
      << ", kValueCols = " << dv << ";\n";
  out << "  static constexpr int kBlockM = " << blockM << ";  // queries a step"
      << (blockM == 128 ? " (dQ split by rows)" : "") << "\n";
  out << "  static constexpr int kStages = " << stages
      << ", kDqCols = 64;  // dQ columns a product (the first's reductions overlap the next)\n";
  out << "  static constexpr bool kKeySplit = " << (keySplit ? "true;  // consumers split by keys\n"
                                                            : "false;  // consumers split by role\n");
  out << "  static constexpr bool kDqTma = " << (dqTma ? "true;  // dQ by TMA tensor reductions\n"
                                                      : "false;  // dQ by red.v4 (its boxes do not fit)\n");
  printHeadsAndMask(spec, inputs, out);
  out << "  static constexpr float kScale = " << floatConfigLiteral(spec.getScale().getValueAsDouble())
      << ", kDqScale = kScale;  // the postprocess only converts dQ\n";
  out << "  // schedule (flash-warp-specialize): register budgets of the producer and consumers; whether the\n"
      << "  // consumers take turns (a step's dQ in the next step)\n";
  out << "  static constexpr int kProducerRegs = " << schedule.getProducerRegisters()
      << ", kConsumerRegs = " << schedule.getConsumerRegisters() << ";\n";
  out << "  static constexpr bool kPingPong = " << (schedule.getPingPong() ? "true" : "false") << ";\n";
  bool headGroups = order && order.getOrder() == tile::BlockOrder::HeadGroups;
  out << "  static constexpr int kGridHeadGroup = " << (headGroups ? order.getGroup() : 1)
      << ";  // (head, batch) pairs a group of the grid's order (flash-order-blocks)\n";
  if (segments)
    out << "  static constexpr bool kSegments = true;  // documents' key tiles from the segment plan (segments.cuh)\n";
  printPlanCheck("flashc::device::AttentionBwdWsPlan", result, ns, out);
  // (the modifiers' tensors are grid constants: their MaskEnvs keep the parameters' addresses)
  printSignature(entry, cppNames, inputs, maps, result.threads, out, /*gridConstantFrom=*/9);
  if (segments) {
    out << "  flashc::device::attention_bwd_ws_segments<" << ns << "::Config>(" << maps[0] << ", " << maps[1] << ", "
        << maps[2] << ", " << maps[3];
    for (unsigned i : {0u, 1u, 4u, 5u, 6u, 7u, 8u})
      out << ", " << cppNames[i];
    out << ", " << keyOffsetArgument(spec, keyOffset ? cppNames[want - 1] : "", cppNames) << ", "
        << (dqTma ? "&" + maps[4] : std::string("nullptr")) << ", "
        << segmentCallArgs(*mask, *scoreTensors, spec.getScoreMod() != nullptr,
                           cppNames[want - 1 - (keyOffset ? 1 : 0)], cppNames)
        << ");\n}\n\n";
    return result;
  }
  out << "  flashc::device::attention_bwd_ws<" << ns << "::Config>(" << maps[0] << ", " << maps[1]
      << ", " << maps[2] << ", " << maps[3];
  for (unsigned i : {0u, 1u, 4u, 5u, 6u, 7u, 8u})
    out << ", " << cppNames[i];
  out << ", " << keyOffsetArgument(spec, keyOffset ? cppNames[want - 1] : "", cppNames);
  if (spec.getMaskMod() || spec.getScoreMod())
    out << ", " << (dqTma ? "&" + maps[4] : std::string("nullptr")) << ", "
        << modifierCallArgs(*mask, *scoreTensors, spec.getScoreMod() != nullptr, cppNames);
  else if (dqTma)
    out << ", &" << maps[4];
  out << ");\n";
  out << "}\n\n";
  return result;
}

FailureOr<WsKernel> emitFfn(tile::KernelOp kernel, tile::GemmSpecAttr spec,
                                   ArrayRef<std::string> argNames, ArrayRef<std::string> cppNames,
                                   StringRef entry, RejectFn reject, llvm::raw_ostream &out) {
  Type elem = spec.getElementType().getValue();
  bool hasB1 = spec.getBias1().getValue(), hasB2 = spec.getBias2().getValue();
  ArrayRef<Type> inputs = kernel.getFunctionType().getInputs();
  bool savePre = spec.savesPre();
  unsigned want = 4 + (hasB1 ? 1 : 0) + (hasB2 ? 1 : 0) + (savePre ? 2 : 0);
  if (spec.getGated().getValue() || inputs.size() != want)
    return reject(llvm::formatv("it takes {0} tensors, not the {1} of an ungated fused FFN (x, "
                                "w1, [b1], w2, [b2], y{2})",
                                inputs.size(), want, savePre ? ", pre, h" : ""));
  unsigned x = 0, w1 = 1, b1 = 2, w2 = hasB1 ? 3 : 2, b2 = w2 + 1, y = want - 1 - (savePre ? 2 : 0);
  unsigned pre = y + 1, hOut = y + 2;
  auto typeOf = [&](unsigned i) { return dyn_cast<tile::GlobalTensorType>(inputs[i]); };
  auto xt = typeOf(x), w1t = typeOf(w1), w2t = typeOf(w2), yt = typeOf(y);
  if (!xt || !w1t || !w2t || !yt || w1t.getRank() != 2 || w2t.getRank() != 2 ||
      (xt.getRank() != 2 && xt.getRank() != 3) || yt.getRank() != xt.getRank())
    return reject("its tensors are not x [(B,) M, d], w1 [d, h], w2 [h, d_out], y [(B,) M, d_out]");
  int64_t d = w1t.getShape()[0], h = w1t.getShape()[1], dOut = w2t.getShape()[1];
  if (!wsFfnTakes(d, h, dOut, elem, /*gated=*/false))
    return reject(llvm::formatv("d = {0}, h = {1}, d_out = {2} ({3}): it takes bf16 / f16 with d "
                                "and d_out multiples of 8 up to 256, h a multiple of 8",
                                d, h, dOut, elem));
  FailureOr<tile::WarpSpecializedAttr> schedule =
      checkSchedule(kernel, {"x"}, {"w1", "w2"}, reject);
  if (failed(schedule))
    return failure();
  int64_t blockN = kernel.getBlockN(), stages = schedule->getRingStages();
  bool batched = xt.getRank() == 3;

  WsKernel result;
  result.sharedBytes =
      wsForwardSharedBytes(d, dOut, blockN, stages, elem.getIntOrFloatBitWidth() / 8,
                           /*residentBarriers=*/1);
  result.threads = blockThreads(*schedule);
  // x: 128 rows (of one batch); W1: all d rows of 64 hidden columns a box;
  // W2: blockN hidden rows of 64 output columns a box.
  SmallVector<int64_t> xBox = batched ? SmallVector<int64_t>{1, 128, 64} : SmallVector<int64_t>{128, 64};
  std::vector<std::string> maps =
      addTensorMaps({{x, xBox}, {w1, {wsForwardHeadTile(d), 64}}, {w2, {blockN, 64}}}, argNames,
                    cppNames, result);

  std::string ns = openGemmConfig(entry,
                                 "// Warp-specialised TMA fused FFN (strategy wgmma_ws_sm90): the device library's\n"
                                 "// ffn_fwd_ws; 8 consumer warps + 1 producer warpgroup.\n",
                                 elem, out);
  out << "  static constexpr Act kAct = " << activationEnumerator(spec.getActivation()) << ";\n";
  out << "  static constexpr bool kBias1 = " << (hasB1 ? "true" : "false")
      << ", kBias2 = " << (hasB2 ? "true" : "false")
      << ", kBatched = " << (batched ? "true" : "false") << ";\n";
  out << "  static constexpr bool kSavePre = " << (savePre ? "true" : "false")
      << ";  // the training forward: pre = x·W1 + b1 and h = act(pre) stored too\n";
  // Tile widths (d padded to whole panels, d_out to a wgmma N) and y's width.
  out << "  static constexpr int kInDim = " << wsForwardHeadTile(d)
      << ", kOutDim = " << wsForwardValueTile(dOut) << ", kOutCols = " << dOut << ";\n";
  out << "  static constexpr int kBlockN = " << blockN << ", kStages = " << stages << ";\n";
  printScheduleConfig(*schedule, std::nullopt, out);
  printPlanCheck("FfnFwdWsPlan", result, ns, out);
  printSignature(entry, cppNames, inputs, maps, result.threads, out);
  // Absent biases and saved tensors: the library does not read them (kBias1 /
  // kBias2 / kSavePre false).
  out << "  flashc::device::ffn_fwd_ws<" << ns << "::Config>(" << maps[0] << ", " << maps[1]
      << ", " << maps[2] << ", " << cppNames[x] << ", " << cppNames[w1] << ", "
      << cppNames[hasB1 ? b1 : x] << ", " << cppNames[hasB2 ? b2 : x] << ", " << cppNames[y]
      << ", " << cppNames[savePre ? pre : y] << ", " << cppNames[savePre ? hOut : y] << ");\n";
  out << "}\n\n";
  return result;
}

/// Whether flash-order-blocks gave a GEMM kernel the persistent grid its
/// library forms walk (else kNotPersistentGrid says why not).
bool isPersistentGrid(tile::GridOrderAttr order) {
  return order && order.getOrder() == tile::BlockOrder::Persistent;
}
constexpr const char *kNotPersistentGrid = "its grid is not persistent (flash-order-blocks gives the "
                                           "warp-specialised GEMM #tile.grid_order<order = persistent>)";

/// The resident-B GEMM (gemm_resident_b.cuh; the schedule keeps b resident and streams a): a plain GEMM or the
/// fused dpre at K <= 256, arguments a, b, [bias], [p], c.
FailureOr<WsKernel> emitResidentBGemm(tile::KernelOp kernel, tile::GemmSpecAttr spec,
                                      tile::WarpSpecializedAttr schedule, ArrayRef<std::string> argNames,
                                      ArrayRef<std::string> cppNames, StringRef entry, RejectFn reject,
                                      llvm::raw_ostream &out) {
  ArrayRef<Type> inputs = kernel.getFunctionType().getInputs();
  int64_t residentK = wsGemmResidentK(spec, inputs);
  if (residentK == 0)
    return reject(llvm::formatv("its schedule keeps B resident, which takes a plain GEMM (not gated, accumulating "
                                "or saving) of A [M, K] with a static K of at most {0}",
                                kResidentBMaxK));
  bool hasBias = spec.getBias1().getValue(), actGrad = spec.appliesActGrad();
  bool tb = spec.getTransposeB().getValue();
  unsigned want = 3 + (hasBias ? 1 : 0) + (actGrad ? 1 : 0);
  if (inputs.size() != want)
    return reject(llvm::formatv("it takes {0} tensors, not the {1} of a plain GEMM (a, b, [bias], [p], c)",
                                inputs.size(), want));
  unsigned a = 0, b = 1, bias = 2, p = want - 2, c = want - 1;
  int64_t blockN = kernel.getBlockN(), stages = schedule.getRingStages();
  if (!schedule.getPingPong() ||
      !wsGemmPlanTakes(spec, kernel.getBlockM(), blockN, 64, kernel.getWarps(), stages, {true, residentK}))
    return reject(llvm::formatv("block_m = {0}, block_n = {1}, warps = {2}, stages = {3}: the resident-B form is "
                                "64-row tiles taken in turn by two consumer warpgroups (8 warps), 128 or 256 "
                                "columns, 2-4 slots of A, B's {4} rows of K and the tile buffers within 227 KB",
                                kernel.getBlockM(), blockN, kernel.getWarps(), stages, residentK));
  tile::GridOrderAttr order = kernel.getGridOrderAttr();
  if (!isPersistentGrid(order))
    return reject(kNotPersistentGrid);
  Type elem = spec.getElementType().getValue();
  WsKernel result;
  result.sharedBytes = wsGemmPlanSharedBytes(spec, blockN, stages, {true, residentK});
  result.threads = blockThreads(schedule);
  // Boxes (rows, 64 columns): A a 64-row tile's K block, B blockN rows of [N, K] or 64 K rows of [K, N], C and P
  // 64 x 64 pieces.
  SmallVector<std::pair<unsigned, SmallVector<int64_t>>> boxes = {{a, {64, 64}}, {b, {tb ? blockN : 64, 64}},
                                                                   {c, {64, 64}}};
  if (actGrad)
    boxes.push_back({p, {64, 64}});
  std::vector<std::string> maps = addTensorMaps(boxes, argNames, cppNames, result);
  std::string ns = openGemmConfig(entry,
                                 "// Warp-specialised persistent TMA GEMM with B resident (strategy wgmma_ws_sm90):\n"
                                 "// the device library's gemm_resident_b; a block's run of 64-row tiles against\n"
                                 "// one column block of B kept in shared memory; 8 consumer warps + 1 producer\n"
                                 "// warpgroup.\n",
                                 elem, out);
  out << "  static constexpr bool kTransB = " << (tb ? "true" : "false") << ";  // B stored [N, K]\n";
  out << "  static constexpr Act kAct = " << activationEnumerator(spec.getActivation()) << ";\n";
  out << "  static constexpr bool kBias = " << (hasBias ? "true" : "false") << ";\n";
  out << "  static constexpr bool kActGrad = " << (actGrad ? "true" : "false")
      << ";  // C = alpha·A·B ∘ act'(P), the tile of P read first\n";
  out << "  static constexpr int kBlockN = " << blockN << ", kResidentK = " << residentK << ", kStages = " << stages
      << ";  // B's slab: kResidentK x kBlockN; kStages slots of A\n";
  printScheduleConfig(schedule, std::nullopt, out);
  printPlanCheck("GemmResidentBPlan", result, ns, out);
  printSignature(entry, cppNames, inputs, maps, result.threads, out);
  // Absent bias and P: not read (kBias / kActGrad false).
  out << "  flashc::device::gemm_resident_b<" << ns << "::Config>(" << maps[0] << ", " << maps[1] << ", " << maps[2]
      << ", " << (actGrad ? maps[3] : maps[2]) << ", " << cppNames[a] << ", " << cppNames[b] << ", "
      << cppNames[hasBias ? bias : a] << ", " << floatConfigLiteral(spec.getAlpha().getValueAsDouble()) << ");\n";
  out << "}\n\n";
  return result;
}

FailureOr<WsKernel> emitGemm(tile::KernelOp kernel, tile::GemmSpecAttr spec, ArrayRef<std::string> argNames,
                             ArrayRef<std::string> cppNames, StringRef entry, RejectFn reject,
                             llvm::raw_ostream &out) {
  ArrayRef<Type> inputs = kernel.getFunctionType().getInputs();
  if (std::optional<std::string> refusal = wsGemmRefusal(spec, inputs))
    return reject("the persistent GEMM does not take it: " + *refusal);
  bool gated = spec.getRole() == tile::KernelRole::GatedGemm;
  bool splitK = spec.getRole() == tile::KernelRole::GemmSplitK;
  bool hasBias = spec.getBias1().getValue(), savePre = spec.savesPre(), actGrad = spec.appliesActGrad();
  bool ta = spec.getTransposeA().getValue(), tb = spec.getTransposeB().getValue();
  // a, b, [bias], [pre | p], c; gated a, w_gate, w_up, [g, u], c (KernelRecipe.cpp's rules); the gated act_grad
  // a, b, p, p_up, c, c_up; split over K a, b and the f32 c added into. pre is written (save_pre), p read
  // (act_grad); both through the library's map_pre (p_up: map_pre2).
  bool gatedGrad = spec.appliesGatedActGrad();
  bool hasPre = savePre || actGrad;
  unsigned want = gated      ? 4 + (savePre ? 2 : 0)
                  : gatedGrad ? 6
                              : 3 + (hasBias ? 1 : 0) + (hasPre ? 1 : 0);
  if (inputs.size() != want || (gated && hasBias))
    return reject(llvm::formatv("it takes {0} tensors, not the {1} of a {2}", inputs.size(), want,
                                gated       ? "gated GEMM (a, w_gate, w_up, [g, u], c)"
                                : gatedGrad ? "gated FFN's dg and du (a, b, p, p_up, c, c_up)"
                                            : "plain GEMM (a, b, [bias], [pre | p], c)"));
  unsigned a = 0, b = 1, bUp = 2, bias = 2, c = gatedGrad ? 4 : want - 1, cUp = 5;
  unsigned pre = gated ? 3 : gatedGrad ? 2 : want - 2, preUp = gatedGrad ? 3 : 4;
  SmallVector<StringRef> ring = gated ? SmallVector<StringRef>{"a", "w_gate", "w_up"} : SmallVector<StringRef>{"a", "b"};
  tile::WarpSpecializedAttr schedule = kernel.getScheduleAttr();
  if (schedule && attrNames(schedule.getResident()) == SmallVector<StringRef>{"b"} &&
      attrNames(schedule.getRing()) == SmallVector<StringRef>{"a"})
    return emitResidentBGemm(kernel, spec, schedule, argNames, cppNames, entry, reject, out);
  if (!schedule || !schedule.getResident().empty() || attrNames(schedule.getRing()) != ring)
    return reject(llvm::formatv("its schedule is not the library's (nothing resident, {0} in the ring; or B "
                                "resident, A in the ring; run flash-warp-specialize after flash-plan-memory)",
                                llvm::join(ring, ", ")));
  int64_t blockN = kernel.getBlockN(), stages = schedule.getRingStages();
  bool pingPong = schedule.getPingPong();  // (never split over K: the kernel verifier's)
  if (!wsGemmPlanTakes(spec, kernel.getBlockM(), blockN, 64, kernel.getWarps(), stages, {pingPong, 0}))
    return reject(llvm::formatv("block_m = {0}, block_n = {1}, warps = {2}, stages = {3}: its form is "
                                "128 rows on two consumer warpgroups (8 warps), {4} columns, 2-4 stages "
                                "within 227 KB of shared memory",
                                kernel.getBlockM(), blockN, kernel.getWarps(), stages,
                                gated ? "128" : "128 or 256"));
  tile::GridOrderAttr order = kernel.getGridOrderAttr();
  if (!isPersistentGrid(order))
    return reject(kNotPersistentGrid);
  Type elem = spec.getElementType().getValue();

  WsKernel result;
  bool accumulate = spec.getAccumulate().getValue();
  result.sharedBytes = wsGemmPlanSharedBytes(spec, blockN, stages, {pingPong, 0});
  result.threads = blockThreads(schedule);
  // Boxes ((1,) rows, 64 columns): A a tile's rows of [(B,) M, K] (128;
  // ping-pong 64) or 64 K rows of [K, M]; B 64 K rows of [K, N] or blockN rows
  // of [N, K]; C and pre 64 x 64 pieces (of one batch; split over K, C has no
  // map: its sums are reductions).
  bool batched = cast<tile::GlobalTensorType>(inputs[a]).getRank() == 3;
  auto rows = [&](int64_t n) {
    return batched ? SmallVector<int64_t>{1, n, 64} : SmallVector<int64_t>{n, 64};
  };
  SmallVector<std::pair<unsigned, SmallVector<int64_t>>> boxes = {{a, rows(ta || pingPong ? 64 : 128)},
                                                                   {b, {tb ? blockN : 64, 64}}};
  if (gated)
    boxes.push_back({bUp, {64, 64}});
  if (!splitK)
    boxes.push_back({c, rows(64)});
  if (hasPre)
    boxes.push_back({pre, rows(64)});
  if ((savePre && gated) || gatedGrad)
    boxes.push_back({preUp, rows(64)});
  if (gatedGrad)
    boxes.push_back({cUp, rows(64)});
  std::vector<std::string> maps = addTensorMaps(boxes, argNames, cppNames, result);

  std::string ns = openGemmConfig(entry,
                                 "// Warp-specialised persistent TMA GEMM (strategy wgmma_ws_sm90): the device\n"
                                 "// library's gemm_ws; 8 consumer warps + 1 producer warpgroup.\n",
                                 elem, out);
  out << "  static constexpr bool kTransA = " << (ta ? "true" : "false")
      << ", kTransB = " << (tb ? "true" : "false") << ";  // A stored [K, M]; B stored [N, K]\n";
  out << "  static constexpr Act kAct = " << activationEnumerator(spec.getActivation()) << ";\n";
  out << "  static constexpr bool kBias = " << (hasBias ? "true" : "false")
      << ", kSavePre = " << (savePre ? "true" : "false") << ";  // pre = alpha·A·B + bias stored too\n";
  out << "  static constexpr bool kBatched = " << (batched ? "true" : "false") << ";  // A, C: [B, M, *]\n";
  out << "  static constexpr bool kAccumulate = " << (accumulate ? "true" : "false")
      << ";  // C += ..., the tile of C read first\n";
  out << "  static constexpr bool kActGrad = " << (actGrad ? "true" : "false")
      << ";  // C = alpha·A·B ∘ act'(P), the tile of P read first\n";
  out << "  static constexpr bool kGated = " << (gated ? "true" : "false")
      << ";  // C = act(A·Bg) ⊙ (A·Bu), kBlockN columns of each weight a tile\n";
  out << "  static constexpr int kBlockN = " << blockN << ", kStages = " << stages
      << ", kGroup = " << order.getGroup() << ";\n";
  if (splitK)
    out << "  static constexpr int kSplitK = " << kSplitKRows
        << ";  // K rows a slice: units (slice, tile), each added into the f32 C\n";
  if (gatedGrad)
    out << "  static constexpr bool kGatedActGrad = true;  // D = alpha·A·B: C = (D ∘ U) ∘ act'(P), C2 = D ∘ act(P)\n";
  printScheduleConfig(schedule, std::nullopt, out);
  printPlanCheck("GemmWsPlan", result, ns, out);
  printSignature(entry, cppNames, inputs, maps, result.threads, out);
  if (splitK) {
    out << "  flashc::device::gemm_ws_split_k<" << ns << "::Config>(" << maps[0] << ", " << maps[1] << ", "
        << cppNames[a] << ", " << cppNames[b] << ", " << cppNames[c] << ", "
        << floatConfigLiteral(spec.getAlpha().getValueAsDouble()) << ");\n";
    out << "}\n\n";
    return result;
  }
  if (gatedGrad) {  // maps: a, b, dg (c), g (p), u (p_up), du (c_up)
    out << "  flashc::device::gemm_ws_gated_act_grad<" << ns << "::Config>(" << maps[0] << ", " << maps[1] << ", "
        << maps[2] << ", " << maps[5] << ", " << maps[3] << ", " << maps[4] << ", " << cppNames[a] << ", "
        << cppNames[b] << ", " << floatConfigLiteral(spec.getAlpha().getValueAsDouble()) << ");\n";
    out << "}\n\n";
    return result;
  }
  // The library's map arguments: a, b, b2, c, pre, pre2 (absent ones: b's and c's; not read).
  unsigned mapC = gated ? 3 : 2;
  std::string mapB2 = gated ? maps[2] : maps[1];
  std::string mapPre = hasPre ? maps[mapC + 1] : maps[mapC];
  std::string mapPre2 = savePre && gated ? maps[mapC + 2] : maps[mapC];
  // Absent bias and pre: not read (kBias / kSavePre false).
  out << "  flashc::device::gemm_ws<" << ns << "::Config>(" << maps[0] << ", " << maps[1] << ", " << mapB2
      << ", " << maps[mapC] << ", " << mapPre << ", " << mapPre2 << ", " << cppNames[a] << ", " << cppNames[b] << ", "
      << cppNames[hasBias ? bias : a] << ", " << floatConfigLiteral(spec.getAlpha().getValueAsDouble())
      << ");\n";
  out << "}\n\n";
  return result;
}

/// A mixture of experts' GEMMs (#tile.moe; docs/design/moe.md): the router's logits by the plain persistent GEMM
/// (x, router, logits); the expert projections by its grouped form over the permuted rows (up: permuted, w1, [w_up],
/// groups, hidden, and in a training forward its pre-activations; down: hidden, w2, groups, expert_out), each row
/// block's expert from the table; the backward's data gradients by the grouped form with the weight transposed (a, w,
/// groups, c; c += with accumulate) and the weight gradients by the form grouped over K (a, b, offsets, dw [E, m, n]).
FailureOr<WsKernel> emitMoeGemm(tile::KernelOp kernel, tile::MoeSpecAttr spec, ArrayRef<std::string> argNames,
                                ArrayRef<std::string> cppNames, StringRef entry, RejectFn reject,
                                llvm::raw_ostream &out) {
  using tile::KernelRole;
  ArrayRef<Type> inputs = kernel.getFunctionType().getInputs();
  KernelRole role = spec.getRole();
  bool router = role == KernelRole::MoeRouter, up = role == KernelRole::MoeUp;
  bool weightGrad = role == KernelRole::MoeWeightGrad;
  bool accumulate = role == KernelRole::MoeDataGradAccumulate;
  bool transB = role == KernelRole::MoeDataGrad || accumulate;
  bool gated = up && spec.getGated(), savePre = up && spec.getTrain();
  unsigned want = spec.tensorCount();
  if (inputs.size() != want || cppNames.size() != want)
    return reject(llvm::formatv("it takes {0} tensors, not the {1} of {2}", inputs.size(), want,
                                tile::stringifyKernelRole(role)));
  int64_t blockN = kernel.getBlockN(), stages = kernel.getStages();
  int64_t wantN = router || up ? 128 : 256;
  tile::WarpSpecializedAttr schedule = kernel.getScheduleAttr();
  tile::GridOrderAttr order = kernel.getGridOrderAttr();
  if (!schedule || !order || order.getOrder() != tile::BlockOrder::Persistent || kernel.getBlockM() != 128 ||
      kernel.getWarps() != 8 || blockN != wantN || stages < 2 || stages > 4)
    return reject("its plan is not the persistent GEMM's (128 rows on 8 consumer warps, 128 columns a tile (the "
                  "down projection's and the backward's 256), 2-4 stages, flash-warp-specialize's schedule, "
                  "flash-order-blocks' persistent grid)");
  Type elem = spec.getElementType().getValue();
  WsKernel result;
  result.sharedBytes = wsGemmSharedBytes(blockN, stages, elem.getIntOrFloatBitWidth() / 8, gated, accumulate);
  result.threads = blockThreads(schedule);
  if (result.sharedBytes > 227 * 1024)
    return reject(llvm::formatv("its ring of {0} stages takes {1} bytes of shared memory (227 KB at most)", stages,
                                result.sharedBytes));
  // (the expert GEMMs' first tensor, the logits, binds T only)
  unsigned a = router ? 0 : 1, b = a + 1;
  unsigned c = up ? (gated ? 5 : 4) : want - 1;
  unsigned table = up ? c - 1 : want - 2; // groups (offsets for the weight gradients)
  // Boxes: A 128 rows x 64 columns (the weight gradients: 64 rows of K x 64 columns of [rows, m]); B 64 K rows x 64
  // columns ([K, N], or one expert's of [E, K, N]; transposed: kBlockN rows of one expert's [E, N, K]); C 64 x 64
  // (the weight gradients: one expert's of [E, m, n]).
  SmallVector<int64_t> weightBox = router    ? SmallVector<int64_t>{64, 64}
                                   : transB ? SmallVector<int64_t>{1, blockN, 64}
                                   : weightGrad ? SmallVector<int64_t>{64, 64}
                                                : SmallVector<int64_t>{1, 64, 64};
  SmallVector<int64_t> outBox = weightGrad ? SmallVector<int64_t>{1, 64, 64} : SmallVector<int64_t>{64, 64};
  SmallVector<std::pair<unsigned, SmallVector<int64_t>>> boxes = {
      {a, weightGrad ? SmallVector<int64_t>{64, 64} : SmallVector<int64_t>{128, 64}}, {b, weightBox}};
  if (gated)
    boxes.push_back({b + 1, weightBox});
  boxes.push_back({c, outBox});
  if (savePre) {
    boxes.push_back({c + 1, {64, 64}});
    if (gated)
      boxes.push_back({c + 2, {64, 64}});
  }
  std::vector<std::string> maps = addTensorMaps(boxes, argNames, cppNames, result);
  unsigned mapCIndex = gated ? 3 : 2;
  const std::string &mapB2 = gated ? maps[2] : maps[1], &mapC = maps[mapCIndex];
  const std::string &mapPre = savePre ? maps[mapCIndex + 1] : mapC;
  const std::string &mapPre2 = savePre && gated ? maps[mapCIndex + 2] : mapC;
  const char *comment =
      router ? "// A mixture of experts' router logits: the device library's gemm_ws (warp-specialised, persistent).\n"
      : weightGrad
          ? "// A mixture of experts' weight gradients over each expert's rows: the device library's gemm_ws_grouped_k\n"
            "// (warp-specialised, persistent; C [E, m, n], K running over the expert's padded rows).\n"
          : "// A mixture of experts' expert GEMM over the rows permuted by expert: the device library's\n"
            "// gemm_ws_grouped (warp-specialised, persistent; each 128-row block's expert from the table).\n";
  std::string ns = openGemmConfig(entry, comment, elem, out);
  out << "  static constexpr bool kTransA = " << (weightGrad ? "true" : "false")
      << ", kTransB = " << (transB ? "true" : "false") << ", kBias = false, kBatched = false,\n"
      << "                        kSavePre = " << (savePre ? "true" : "false")
      << ", kAccumulate = " << (accumulate ? "true" : "false") << ", kActGrad = false;\n";
  out << "  static constexpr Act kAct = " << (up ? activationEnumerator(spec.getActivation()) : "Act::Identity")
      << ";\n";
  out << "  static constexpr bool kGated = " << (gated ? "true" : "false");
  if (weightGrad)
    out << ", kGroupedK = true;  // C [E, m, n]: the expert's rows of A and B\n";
  else if (router)
    out << ";\n";
  else
    out << ", kGrouped = true;  // B [E, K, N] (kTransB: [E, N, K]): the row block's expert's\n";
  out << "  static constexpr int kBlockN = " << blockN << ", kStages = " << stages << ", kGroup = " << order.getGroup()
      << ";\n";
  printScheduleConfig(schedule, std::nullopt, out);
  printPlanCheck("GemmWsPlan", result, ns, out);
  printSignature(entry, cppNames, inputs, maps, result.threads, out);
  if (router)
    out << "  flashc::device::gemm_ws<" << ns << "::Config>(" << maps[0] << ", " << maps[1] << ", " << maps[1] << ", "
        << mapC << ", " << mapC << ", " << mapC << ", " << cppNames[a] << ", " << cppNames[b] << ", " << cppNames[a]
        << ", 1.0f);\n";
  else if (weightGrad)
    out << "  flashc::device::gemm_ws_grouped_k<" << ns << "::Config>(" << maps[0] << ", " << maps[1] << ", " << mapC
        << ", " << cppNames[a] << ", " << cppNames[b] << ", " << cppNames[table] << ", 1.0f);\n";
  else
    out << "  flashc::device::gemm_ws_grouped<" << ns << "::Config>(" << maps[0] << ", " << maps[1] << ", " << mapB2
        << ", " << mapC << ", " << mapPre << ", " << mapPre2 << ", " << cppNames[a] << ", " << cppNames[b] << ", "
        << cppNames[table] << ", 1.0f);\n";
  out << "}\n\n";
  return result;
}

} // namespace

FailureOr<WsKernel> emitWsKernel(tile::KernelOp kernel, ArrayRef<std::string> argNames,
                                         ArrayRef<std::string> cppNames, StringRef entry,
                                         StringRef specComment, llvm::raw_ostream &out) {
  auto reject = [&](const llvm::Twine &why) -> FailureOr<WsKernel> {
    return kernel.emitError() << "CUDA emitter: @" << kernel.getSymName()
                              << " has strategy wgmma_ws_sm90, a warp-specialised kernel, but "
                              << why,
           failure();
  };
  out << "// ---- " << kernel.getSymName() << " ----\n";
  if (!specComment.empty())
    out << "// " << specComment << "\n";
  if (failed(printMaskMods(kernel, out)) || failed(printScoreMods(kernel, out)))
    return failure();
  Attribute spec = kernel.getSpecAttr();
  if (auto attention = dyn_cast_or_null<tile::AttentionSpecAttr>(spec);
      attention && attention.getRole() == tile::KernelRole::AttentionForward)
    return emitAttention(kernel, attention, argNames, cppNames, entry, reject, out);
  if (auto attention = dyn_cast_or_null<tile::AttentionSpecAttr>(spec);
      attention && isWsBackward(attention))
    return emitAttentionBackward(kernel, attention, argNames, cppNames, entry, reject, out);
  if (auto gemm = dyn_cast_or_null<tile::GemmSpecAttr>(spec);
      gemm && gemm.getRole() == tile::KernelRole::FfnFused)
    return emitFfn(kernel, gemm, argNames, cppNames, entry, reject, out);
  if (auto gemm = dyn_cast_or_null<tile::GemmSpecAttr>(spec);
      gemm && isWsGemmRole(gemm))
    return emitGemm(kernel, gemm, argNames, cppNames, entry, reject, out);
  if (auto moe = dyn_cast_or_null<tile::MoeSpecAttr>(spec); moe && moe.isGemm())
    return emitMoeGemm(kernel, moe, argNames, cppNames, entry, reject, out);
  return reject("it is neither an attention forward (#tile.attention<role = attention_forward>), "
                "an attention backward's main kernel, a fused FFN (#tile.gemm<role = "
                "ffn_fused>), a plain, gated or split-K GEMM (#tile.gemm<role = gemm / gated_gemm / gemm_split_k>) "
                "nor a mixture of "
                "experts' GEMM (a #tile.moe GEMM role)");
}

} // namespace flashc
