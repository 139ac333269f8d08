//===- ManifestBuilder.cpp - the bundle manifest of a tile module --------===//
#include "ManifestBuilder.h"

#include "flashc/Dialect/Common/IndexFunction.h"
#include "flashc/Dialect/Common/ScoreFunction.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/SymbolTable.h"

#include "Names.h"

#include "flashc/runtime/Expr.h"

#include "llvm/ADT/StringSet.h"
#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <set>

using namespace mlir;

namespace flashc {
namespace {

/// Run-time sizes get one symbol per distinct size: a program argument may
/// name its dims with a `tile.dims` array attribute (one string per dim, ""
/// for static ones); otherwise the attention/FFN argument naming convention
/// decides (q/o/lse/do/dq rows are Sq, k/v/dk/dv rows are Sk, leading batch
/// is B, GEMM rows are M), which makes the runtime check that o has as many
/// rows as q before any kernel writes it.
std::string conventionalSymbol(StringRef arg, unsigned dim, unsigned rank) {
  static const llvm::StringSet<> queryRows = {"q", "o", "out", "lse", "do", "dq", "delta",
                                              "dq_accum", "dout", "d_out", "d_q"};
  static const llvm::StringSet<> keyRows = {"k", "v", "dk", "dv", "d_k", "d_v"};
  if (rank >= 3 && dim == 0)
    return "B";
  bool rowDim = (rank == 4 && dim == 2) || (rank == 3 && dim == 2);
  if (rowDim && queryRows.contains(arg))
    return "Sq";
  if (rowDim && keyRows.contains(arg))
    return "Sk";
  if (rank <= 3 && dim == rank - 2)
    return "M";
  if (rank == 1 && dim == 0)
    return "M";
  return (cppIdentifier(arg) + "_d" + std::to_string(dim));
}

FailureOr<rt::DType> manifestDType(Operation *op, Type type) {
  if (type.isBF16())
    return rt::DType::BF16;
  if (type.isF16())
    return rt::DType::F16;
  if (type.isF32())
    return rt::DType::F32;
  if (type.isSignlessInteger(32))
    return rt::DType::I32;
  return op->emitError("bundle: unsupported element type ") << type, failure();
}

/// `meta` lines of a program: what it computes (from its kernels' recipes),
/// so tools and bindings (flashc-run, the Python package) need no spec.
void describeProgram(ModuleOp module, rt::ProgramSpec &program,
                     ArrayRef<std::unique_ptr<ProgramScope>> programs, ProgramScope &scope) {
  bool attentionForward = false, attentionBackward = false, ffnForward = false,
       ffnBackward = false;
  int decodeOps = 0, varlenOps = 0, varlenBackwards = 0, appendOps = 0, moeOps = 0, moeBackwards = 0;
  bool ffnActivations = false; // a GEMM-family kernel of an FFN (not the plain GEMMs of a mixture's router)
  // A training forward (`<f>_forward_train`) pairs with `<f>`'s backward; `<f>` names both.
  auto pairForward = [&]() {
    auto has = [&](StringRef name) {
      return llvm::any_of(programs, [&](const auto &scope) { return scope->func.getSymName() == name; });
    };
    StringRef name = program.name;
    std::string forward = name.ends_with("_forward_train") ? name.drop_back(14).str() : name.str();
    bool train = forward != name && has(forward);
    if (train)
      program.meta["train_of"] = forward;
    else if (has(forward + "_forward_train"))
      program.meta["forward_train"] = forward + "_forward_train";
    if (has(forward + "_backward"))
      program.meta["backward"] = forward + "_backward";
  };
  // The status workspace of a kernel (its last argument): the runtime reads it after the program.
  // The program value kernel `kernelName` takes as argument `index` (null when not launched).
  auto launchArg = [&](const std::string &kernelName, unsigned index) -> Value {
    for (auto launch : scope.func.getBody().getOps<tile::LaunchOp>())
      if (launch.getKernel() == kernelName && launch.getArgs().size() > index)
        return launch.getArgs()[index];
    return Value();
  };
  Value appendedCache, decodedCache;  // an append's k_cache, a decode's
  auto addStatus = [&](const std::string &kernelName, unsigned index) {
    std::string status;
    for (auto launch : scope.func.getBody().getOps<tile::LaunchOp>())
      if (launch.getKernel() == kernelName && launch.getArgs().size() > index)
        status = scope.infos.lookup(launch.getArgs()[index]).name;
    program.meta["status"] += (program.meta["status"].empty() ? "" : ",") + status;
  };
  for (const std::string &name : program.kernels) {
    auto kernel = module.lookupSymbol<tile::KernelOp>(name);
    if (!kernel)
      continue;
    if (auto moe = dyn_cast_or_null<tile::MoeSpecAttr>(kernel.getSpecAttr())) {
      // A mixture of experts (its select kernel): flashc-run rebuilds the float64 reference from these (a program
      // of one such op).
      if (moe.getRole() != tile::KernelRole::MoeSelect && moe.getRole() != tile::KernelRole::MoeSelectGrad)
        continue;
      ++(moe.getRole() == tile::KernelRole::MoeSelect ? moeOps : moeBackwards);
      program.meta["top_k"] = std::to_string(moe.getTopK());
      program.meta["gating"] = moe.getSigmoid() ? "sigmoid" : "softmax";
      program.meta["renormalize"] = moe.getRenormalize() ? "1" : "0";
      program.meta["activation"] = tile::stringifyActivation(moe.getActivation()).str();
      continue;
    }
    if (auto varlen = dyn_cast_or_null<tile::VarlenSpecAttr>(kernel.getSpecAttr())) {
      if (varlen.getRole() == tile::KernelRole::VarlenKeyPlan) {
        // The backward of a packed-sequences op: its key plan checks the offsets again (the verdict as the
        // forward's).
        addStatus(name, 5);
        ++varlenBackwards;
        continue;
      }
      if (varlen.getRole() != tile::KernelRole::VarlenPlan)
        continue;
      // A packed-sequences op (its plan kernel): bad offsets are an error naming the entry (`meta status`);
      // flashc-run rebuilds the float64 reference from the rest (a program of one such op).
      addStatus(name, 5);
      ++varlenOps;
      program.meta["scale"] = llvm::formatv("{0:e9}", varlen.getScale().getValueAsDouble()).str();
      program.meta["softcap"] = llvm::formatv("{0:e9}", varlen.getSoftcap().getValueAsDouble()).str();
      program.meta["window_left"] = std::to_string(varlen.getWindowLeft());
      program.meta["window_right"] = std::to_string(varlen.getWindowRight());
      continue;
    }
    if (auto decode = dyn_cast_or_null<tile::DecodeSpecAttr>(kernel.getSpecAttr())) {
      if (decode.getRole() == tile::KernelRole::KvAppendCheck) {
        // An append (its check kernel): a bad length or page id is an error naming the sequence, as decode's.
        addStatus(name, kernel.getBody().getNumArguments() - 1);
        ++appendOps;
        appendedCache = launchArg(name, 1);
        program.meta["page_size"] = std::to_string(decode.getPageSize());
        continue;
      }
      if (decode.getRole() == tile::KernelRole::DecodeCheck) {
        // A decode op's check: the runtime reads its status workspace after the program (a bad cache length or
        // page id is an error naming the sequence; `meta status` lists every check's). A decode after an append
        // of its caches has none: the append's check covers it.
        addStatus(name, kernel.getBody().getNumArguments() - 1);
        continue;
      }
      if (decode.getRole() != tile::KernelRole::DecodeSplit)
        continue;
      // A decode op (its split kernel): flashc-run rebuilds the float64 reference from the rest (a program of one
      // decode op).
      ++decodeOps;
      decodedCache = launchArg(name, 1);
      program.meta["scale"] = llvm::formatv("{0:e9}", decode.getScale().getValueAsDouble()).str();
      program.meta["causal"] = decode.getCausal() ? "1" : "0";
      program.meta["page_size"] = std::to_string(decode.getPageSize());
      continue;
    }
    if (auto attn = dyn_cast_or_null<tile::AttentionSpecAttr>(kernel.getSpecAttr())) {
      if (attn.classifiesMaskBlocks() || attn.getRole() == tile::KernelRole::AttentionSegmentPlan)
        continue;  // part of the attention it classifies or plans for
      if (attn.getRole() == tile::KernelRole::AttentionForward) {
        attentionForward = true;
        program.meta["scale"] = llvm::formatv("{0:e9}", attn.getScale().getValueAsDouble()).str();
        program.meta["softcap"] =
            llvm::formatv("{0:e9}", attn.getSoftcap().getValueAsDouble()).str();
        program.meta["window_left"] = std::to_string(attn.getWindowLeft());
        program.meta["window_right"] = std::to_string(attn.getWindowRight());
        // A band modifier's window: query row i at key position i, not i + Sk - Sq (references honour it).
        if (attn.getTopLeft())
          program.meta["key_offset_fixed"] = "0";
        if (auto sym = attn.getMaskMod())
          if (auto maskMod = SymbolTable::lookupNearestSymbolFrom<tile::MaskModOp>(kernel, sym)) {
            program.meta["mask_mod"] = flashc::printIndexProgram(maskMod.getBody(), /*oneWord=*/true);
            // The program's tensors the modifier reads (t0, t1, ... in its text): the forward kernel's
            // arguments after its five own.
            unsigned tensors = flashc::indexFunctionLayout(maskMod.getBody()).tensorArgs;
            std::string names;
            for (auto launch : scope.func.getBody().getOps<tile::LaunchOp>()) {
              if (launch.getKernel() != name || launch.getArgs().size() < 5 + tensors)
                continue;
              for (unsigned i = 0; i < tensors; ++i)
                names += (i ? "," : "") + scope.infos.lookup(launch.getArgs()[5 + i]).name;
              break;
            }
            if (!names.empty())
              program.meta["mask_tensors"] = names;
          }
        if (auto sym = attn.getScoreMod())
          if (auto scoreMod = SymbolTable::lookupNearestSymbolFrom<tile::ScoreModOp>(kernel, sym)) {
            program.meta["score_mod"] = flashc::printScoreProgram(scoreMod.getBody(), /*oneWord=*/true);
            // Its tensors: the forward kernel's arguments after the mask modifier's.
            unsigned first = 5, tensors = scoreMod.getBody().front().getNumArguments() - 5;
            if (auto maskSym = attn.getMaskMod())
              if (auto maskMod = SymbolTable::lookupNearestSymbolFrom<tile::MaskModOp>(kernel, maskSym))
                first += flashc::indexFunctionLayout(maskMod.getBody()).tensorArgs;
            std::string names;
            for (auto launch : scope.func.getBody().getOps<tile::LaunchOp>()) {
              if (launch.getKernel() != name || launch.getArgs().size() < first + tensors)
                continue;
              for (unsigned i = 0; i < tensors; ++i)
                names += (i ? "," : "") + scope.infos.lookup(launch.getArgs()[first + i]).name;
              break;
            }
            if (!names.empty())
              program.meta["score_tensors"] = names;
          }
      } else {
        attentionBackward = true;
      }
    } else if (auto gemm = dyn_cast_or_null<tile::GemmSpecAttr>(kernel.getSpecAttr())) {
      tile::KernelRole role = gemm.getRole();
      // (dpre = (dy·W2ᵀ) ∘ act'(pre), a gemm with act_grad, is the backward's mark where every weight gradient
      // has tiles enough not to split: d >= 1024.)
      if (role == tile::KernelRole::FfnActivationGrad || role == tile::KernelRole::ColumnSum ||
          role == tile::KernelRole::GemmSplitK || role == tile::KernelRole::ConvertF32 || gemm.appliesActGrad())
        ffnBackward = true;
      else
        ffnForward = true;
      ffnActivations |= gemm.getActivation() != tile::Activation::Identity || role == tile::KernelRole::FfnFused ||
                        role == tile::KernelRole::GatedGemm || role == tile::KernelRole::FfnActivationGrad ||
                        role == tile::KernelRole::ColumnSum;
      if (gemm.getActivation() != tile::Activation::Identity)
        program.meta["activation"] = tile::stringifyActivation(gemm.getActivation()).str();
    }
  }
  if (varlenBackwards) {
    program.meta["op"] = "attention_varlen_backward";
    return;
  }
  if (moeOps || moeBackwards) {
    // One mixture of experts alone is what flashc-run checks (a forward with its training forward and backward);
    // beside other ops the program is a block. (Its backward's router gradients are plain GEMMs: not an FFN.)
    bool others = varlenOps || decodeOps || appendOps || attentionForward || attentionBackward;
    bool alone = moeOps + moeBackwards == 1 && !others && (moeBackwards ? !ffnActivations : !ffnForward);
    program.meta["op"] = !alone ? "block" : moeOps ? "moe" : "moe_backward";
    if (alone && moeOps)
      pairForward();
    if (!alone)
      for (const char *key : {"top_k", "gating", "renormalize", "activation"})
        program.meta.erase(key);
    return;
  }
  if (varlenOps) {
    // One packed-sequences op alone is what flashc-run checks; with other ops the program is a block it leaves alone.
    bool alone = varlenOps == 1 && !decodeOps && !appendOps && !attentionForward && !ffnForward;
    program.meta["op"] = alone ? "attention_varlen" : "inference_block";
    std::string backward = program.name + "_backward";
    if (llvm::any_of(programs, [&](const auto &scope) { return scope->func.getSymName() == backward; }))
      program.meta["backward"] = backward;
    if (!alone)
      for (const char *key : {"scale", "softcap", "window_left", "window_right", "causal", "page_size"})
        program.meta.erase(key);
    return;
  }
  if (appendOps && !decodeOps) {
    // One append alone is what flashc-run checks (the caches after it against the host's copy).
    bool alone = appendOps == 1 && !attentionForward && !ffnForward;
    program.meta["op"] = alone ? "kv_append" : "decode_block";
    if (!alone)
      program.meta.erase("page_size");
    return;
  }
  if (decodeOps) {
    // One decode op alone, or after one append (`meta append`: its caches, then the decode, checked), is what
    // flashc-run checks; several, or beside other ops, are a block it leaves alone.
    bool alone = decodeOps == 1 && (!appendOps || (appendOps == 1 && appendedCache == decodedCache)) &&
                 !attentionForward && !ffnForward;
    program.meta["op"] = alone ? "attention_decode" : "decode_block";
    if (alone && appendOps)
      program.meta["append"] = "1";
    if (!alone)  // (one op's parameters would misdescribe the others)
      for (const char *key : {"scale", "causal", "page_size"})
        program.meta.erase(key);
    return;
  }
  if ((attentionForward || ffnForward) && !attentionBackward && !ffnBackward)
    pairForward();
  int kinds = attentionForward + attentionBackward + (ffnForward && !ffnBackward) + ffnBackward;
  if (kinds != 1) {
    // Several fused ops in one program (a transformer block), forward or backward.
    program.meta["op"] = attentionBackward || ffnBackward ? "block_backward" : "block";
    return;
  }
  if (attentionForward)
    program.meta["op"] = "attention_forward";
  else if (attentionBackward)
    program.meta["op"] = "attention_backward";
  else if (ffnBackward)
    program.meta["op"] = "ffn_backward";
  else
    program.meta["op"] = "ffn_forward";
}

} // namespace

std::optional<std::string> ProgramScope::sizeExpression(Value size) {
  Operation *def = size.getDefiningOp();
  if (auto dim = dyn_cast_or_null<tile::DimOp>(def)) {
    if (!infos.count(dim.getTensor()))
      return std::nullopt;
    const rt::Dim &source = infos[dim.getTensor()].dims[dim.getIndex()];
    // (an expression dim parenthesised: it may be an operand of the arithmetic around it)
    return source.isExpression() ? "(" + source.str() + ")" : source.str();
  }
  if (auto constant = dyn_cast_or_null<arith::ConstantIndexOp>(def))
    return std::to_string(constant.value());
  auto binary = [&](Operation *op, const char *format) -> std::optional<std::string> {
    auto a = sizeExpression(op->getOperand(0)), b = sizeExpression(op->getOperand(1));
    if (!a || !b)
      return std::nullopt;
    return llvm::formatv(format, *a, *b).str();
  };
  if (isa_and_nonnull<arith::AddIOp>(def))
    return binary(def, "({0} + {1})");
  if (isa_and_nonnull<arith::SubIOp>(def))
    return binary(def, "({0} - {1})");
  if (isa_and_nonnull<arith::MulIOp>(def))
    return binary(def, "({0} * {1})");
  if (isa_and_nonnull<arith::CeilDivSIOp>(def))
    return binary(def, "cdiv({0}, {1})");
  if (isa_and_nonnull<arith::DivSIOp>(def))
    return binary(def, "({0} / {1})");
  if (isa_and_nonnull<arith::MaxSIOp>(def))
    return binary(def, "max({0}, {1})");
  if (isa_and_nonnull<arith::MinSIOp>(def))
    return binary(def, "min({0}, {1})");
  if (isa_and_nonnull<tile::SmCountOp>(def))
    return std::string(rt::kSymbolSmCount);
  return std::nullopt;
}

LogicalResult ProgramScope::build() {
  for (auto [i, arg] : llvm::enumerate(func.getArguments())) {
    std::string name = "arg" + std::to_string(i);
    if (auto n = func.getArgAttrOfType<StringAttr>(i, "tile.name"))
      name = n.str();
    if (arg.getType().isSignlessInteger(32)) { // a scalar parameter (a key offset)
      infos[arg] = ArgInfo{name, {}};
      continue;
    }
    auto type = dyn_cast<tile::GlobalTensorType>(arg.getType());
    if (!type)
      return func.emitError("tile.program argument ")
                 << i << " is neither a !tile.tensor nor an i32 scalar",
             failure();
    auto dimNames = func.getArgAttrOfType<ArrayAttr>(i, "tile.dims");
    ArgInfo info{name, {}};
    for (auto [d, size] : llvm::enumerate(type.getShape())) {
      if (!ShapedType::isDynamic(size)) {
        info.dims.push_back(rt::Dim::lit(size));
        continue;
      }
      std::string sym;
      if (dimNames && d < dimNames.size())
        if (auto s = dyn_cast<StringAttr>(dimNames[d]))
          sym = s.str();
      if (sym.empty())
        sym = conventionalSymbol(name, d, type.getRank());
      // A size computed from other dims (a mixture's saved workspaces, [capacity(T), d]): an expression dim,
      // which the runtime checks the caller's tensor against.
      if (!llvm::all_of(sym, [](char ch) { return llvm::isAlnum(ch) || ch == '_'; })) {
        auto parsed = rt::Expr::parse(sym);
        if (!parsed.ok())
          return func.emitError("tile.program argument ") << i << ": dim " << d << " '" << sym
                                                          << "' is neither a symbol nor an expression",
                 failure();
        info.dims.push_back(rt::Dim::fromExpr(*parsed));
        continue;
      }
      info.dims.push_back(rt::Dim::sym(sym));
    }
    infos[arg] = info;
  }
  unsigned scratchIndex = 0;
  for (Operation &op : func.getBody().front()) {
    auto alloc = dyn_cast<tile::AllocTensorOp>(&op);
    if (!alloc)
      continue;
    auto type = cast<tile::GlobalTensorType>(alloc.getType());
    std::string name = "scratch" + std::to_string(scratchIndex++);
    if (auto n = alloc->getAttrOfType<StringAttr>("tile.name"))
      name = n.str();
    ArgInfo info{name, {}};
    unsigned dynamicIndex = 0;
    for (int64_t size : type.getShape()) {
      if (!ShapedType::isDynamic(size)) {
        info.dims.push_back(rt::Dim::lit(size));
        continue;
      }
      Value sizeValue = alloc.getDynamicSizes()[dynamicIndex++];
      if (auto dim = sizeValue.getDefiningOp<tile::DimOp>(); dim && infos.count(dim.getTensor())) {
        info.dims.push_back(infos[dim.getTensor()].dims[dim.getIndex()]);
        continue;
      }
      // A size computed from dimensions (a block-class table's ceil(S / 64) + 2): an expression dim.
      std::optional<std::string> text = sizeExpression(sizeValue);
      std::optional<rt::Expr> expr;
      if (text)
        if (auto parsed = rt::Expr::parse(*text); parsed.ok())
          expr = *parsed;
      if (!expr)
        return alloc.emitError("bundle: a workspace size must be a dimension of a program argument (tile.dim) "
                               "or integer arithmetic (arith constant, addi, subi, muli, divsi, ceildivsi, maxsi, minsi, "
                               "tile.sm_count) of them, so the runtime can allocate it"),
               failure();
      info.dims.push_back(rt::Dim::fromExpr(*expr));
    }
    infos[alloc.getResult()] = info;
    scratch.push_back(alloc);
  }
  return success();
}

LogicalResult collectPrograms(ModuleOp module, llvm::StringMap<std::vector<ArgInfo>> &kernelArgs,
                              SmallVector<std::unique_ptr<ProgramScope>> &programs) {
  for (auto func : module.getOps<func::FuncOp>()) {
    if (!func->hasAttr("tile.program"))
      continue;
    // Programs and kernels are named after the function; the manifest (and
    // the runtime's lookups) take identifiers only.
    if (!isManifestIdentifier(func.getSymName()))
      return func.emitError() << "bundle: function name '" << func.getSymName()
                              << "' cannot name a program and its kernels: use an identifier "
                                 "([A-Za-z_][A-Za-z0-9_]*)",
             failure();
    auto scope = std::make_unique<ProgramScope>(func);
    if (failed(scope->build()))
      return failure();
    for (auto launch : func.getBody().getOps<tile::LaunchOp>()) {
      auto &args = kernelArgs[launch.getKernel()];
      if (!args.empty())
        continue;
      for (auto [index, v] : llvm::enumerate(launch.getArgs())) {
        auto it = scope->infos.find(v);
        if (it == scope->infos.end())
          return launch.emitError("bundle: a launch argument must be a program argument or a "
                                  "tile.alloc_tensor"),
                 failure();
        // The runtime binds kernel parameters to program arguments by name:
        // one tensor cannot be two parameters of a kernel.
        for (auto [previous, arg] : llvm::enumerate(args))
          if (arg.name == it->second.name)
            return launch.emitError()
                       << "bundle: kernel @" << launch.getKernel() << " takes program tensor '"
                       << arg.name << "' as two of its parameters (#" << previous << " and #"
                       << index
                       << "); the bundle ABI binds parameters by name, so give each operand "
                          "of the fused op its own function argument",
                   failure();
        args.push_back(it->second);
      }
    }
    programs.push_back(std::move(scope));
  }
  return success();
}

std::vector<ArgInfo> kernelParameters(tile::KernelOp kernel,
                                      const llvm::StringMap<std::vector<ArgInfo>> &kernelArgs) {
  Block &body = kernel.getBody().front();
  std::vector<ArgInfo> args;
  auto it = kernelArgs.find(kernel.getSymName());
  if (it != kernelArgs.end()) {
    args = it->second;
  } else {
    for (auto [i, arg] : llvm::enumerate(body.getArguments())) {
      ArgInfo info{"arg" + std::to_string(i), {}};
      auto type = dyn_cast<tile::GlobalTensorType>(arg.getType());
      if (!type) { // an i32 scalar
        args.push_back(info);
        continue;
      }
      for (auto [d, size] : llvm::enumerate(type.getShape()))
        info.dims.push_back(ShapedType::isDynamic(size)
                                ? rt::Dim::sym(info.name + "_d" + std::to_string(d))
                                : rt::Dim::lit(size));
      args.push_back(info);
    }
  }
  return args;
}

FailureOr<rt::KernelSpec> buildKernelSpec(tile::KernelOp kernel, ArrayRef<ArgInfo> args,
                                          const std::string &entry, int64_t threads,
                                          int64_t sharedBytes) {
  Block &body = kernel.getBody().front();
  rt::KernelSpec spec;
  spec.name = kernel.getSymName().str();
  spec.entry = entry;
  if (auto attn = dyn_cast_or_null<tile::AttentionSpecAttr>(kernel.getSpecAttr()))
    spec.role = cppIdentifier(tile::stringifyKernelRole(attn.getRole()));
  else if (auto gemm = dyn_cast_or_null<tile::GemmSpecAttr>(kernel.getSpecAttr()))
    spec.role = cppIdentifier(tile::stringifyKernelRole(gemm.getRole()));
  auto decode = dyn_cast_or_null<tile::DecodeSpecAttr>(kernel.getSpecAttr());
  if (decode)
    spec.role = cppIdentifier(tile::stringifyKernelRole(decode.getRole()));
  auto varlen = dyn_cast_or_null<tile::VarlenSpecAttr>(kernel.getSpecAttr());
  if (varlen)
    spec.role = cppIdentifier(tile::stringifyKernelRole(varlen.getRole()));
  auto moe = dyn_cast_or_null<tile::MoeSpecAttr>(kernel.getSpecAttr());
  if (moe)
    spec.role = cppIdentifier(tile::stringifyKernelRole(moe.getRole()));
  // A decode kernel's tensors it writes (the rest it reads): the check its status (last); the split out, lse,
  // the partials and status (its last five); the combine out, lse (arguments 2 and 3); an append's check its
  // status, the append the caches (arguments 2 and 3, rows of them: inout).
  auto decodeWrites = [&](unsigned index, unsigned count) {
    switch (decode.getRole()) {
    case tile::KernelRole::DecodeCheck:
    case tile::KernelRole::KvAppendCheck:
      return index + 1 == count;
    case tile::KernelRole::KvAppend:
      return index == 2 || index == 3;
    case tile::KernelRole::DecodeSplit:
      return index + 5 >= count;
    default:
      return index == 2 || index == 3;
    }
  };
  for (auto [i, arg] : llvm::enumerate(body.getArguments())) {
    auto type = dyn_cast<tile::GlobalTensorType>(arg.getType());
    if (!type) { // i32 scalars follow the tensors (the kernel verifier's order)
      spec.scalars.push_back({args[i].name, rt::ScalarType::I32});
      continue;
    }
    FailureOr<rt::DType> dtype = manifestDType(kernel, type.getElementType());
    if (failed(dtype))
      return failure();
    bool reads = false, writes = false, tiled = false;
    for (Operation *user : arg.getUsers()) {
      if (auto classify = dyn_cast<tile::ClassifyBlocksOp>(user); classify && classify.getTable() == arg) {
        writes = true;
      } else if (auto plan = dyn_cast<tile::PlanSegmentsOp>(user); plan && plan.getPlan() == arg) {
        writes = true;
      } else if (isa<tile::StoreOp, tile::AtomicAddOp, tile::StoreRowsOp>(user)) {
        writes = true;
        tiled |= !isa<tile::StoreRowsOp>(user);
        if (isa<tile::AtomicAddOp>(user))
          reads = true;
      } else if (isa<tile::LoadOp>(user)) {
        reads = tiled = true;
      } else if (!isa<tile::DimOp>(user)) {
        reads = true;
      }
    }
    if (decode) {
      // The check reads status only to compare-and-swap it; the split and the combine read it first.
      writes = decodeWrites(i, body.getNumArguments());
      reads = !writes || i + 1 == body.getNumArguments() || decode.getRole() == tile::KernelRole::KvAppend;
      // q, the caches (TMA), out and o_part are read and written in 4- to 16-byte pieces of rows.
      tiled = type.getRank() == 4;
    }
    if (varlen) {
      // The plans write their map and status (their last two; status compared-and-swapped); the forward out and lse
      // (its last two); the backward's prepare delta and dq_accum (its last two), the main kernel dq_accum (added
      // into), dk and dv (arguments 6-8), the finish dq (its last). The rest they read (q, k, v, dout by TMA, out and
      // the gradients in 16-byte row pieces).
      unsigned count = body.getNumArguments();
      switch (varlen.getRole()) {
      case tile::KernelRole::VarlenBackward:
        writes = i >= 6 && i <= 8;
        reads = !writes || i == 6;
        break;
      case tile::KernelRole::VarlenBwdFinish:
        writes = i + 1 == count;
        reads = !writes;
        break;
      default:
        writes = i + 2 >= count;
        reads = !writes || ((varlen.getRole() == tile::KernelRole::VarlenPlan ||
                             varlen.getRole() == tile::KernelRole::VarlenKeyPlan) &&
                            i + 1 == count);
        break;
      }
      tiled = type.getRank() == 3;
    }
    if (moe) {
      // The last tensor is what each role writes; select also its counts (added to), ids, weights and ranks (its
      // last four), the plan its offsets and groups (and a training forward's saved counts: all after the counts;
      // the logits it takes only bind T). Rows of the 16-bit tensors move in 16-byte
      // pieces or by TMA.
      unsigned count = body.getNumArguments();
      switch (moe.getRole()) {
      case tile::KernelRole::MoeSelect:
        writes = i >= 1;
        reads = !writes || i == 1;
        break;
      case tile::KernelRole::MoePlan:
        writes = i >= 2;
        reads = !writes;
        break;
      case tile::KernelRole::MoeUp: // hidden, then (train) its pre-activations
        writes = i >= (moe.getGated() ? 5u : 4u);
        reads = !writes;
        break;
      case tile::KernelRole::MoeScatterGrad: // d_expert_out, d_weights
        writes = i >= 7;
        reads = !writes;
        break;
      case tile::KernelRole::MoeActivationGrad: // d_pre (gated: d_gate, d_up)
        writes = i >= (moe.getGated() ? 5u : 4u);
        reads = !writes;
        break;
      case tile::KernelRole::MoeDataGradAccumulate:
        writes = i + 1 == count;
        reads = true;
        break;
      default:
        writes = i + 1 == count;
        reads = !writes;
        break;
      }
      tiled = !type.getElementType().isSignlessInteger(32) && !type.getElementType().isF32();
    }
    rt::TensorParam p;
    p.name = args[i].name;
    p.dtype = *dtype;
    p.direction = writes ? (reads ? rt::Direction::InOut : rt::Direction::Out) : rt::Direction::In;
    p.dims.assign(args[i].dims.begin(), args[i].dims.end());
    p.contiguous = true;
    // A modifier's tensors are read by 32-bit offsets (mask_mod.cuh's ExactIndex32): the runtime checks their
    // extent at launch.
    p.index32 = llvm::any_of(arg.getUsers(), [&](Operation *user) {
      auto classify = dyn_cast<tile::ClassifyBlocksOp>(user);
      return isa<tile::MaskOp, tile::ScoreOp, tile::ScoreGradOp>(user) || (classify && classify.getTable() != arg);
    });
    if (tiled && type.getRank() >= 2) {
      // 16-byte vector copies of whole rows: aligned base, rows a multiple of 16 bytes apart.
      p.alignBytes = 16;
      p.strideMultiple = 16 / rt::dtypeSize(*dtype);
    }
    spec.tensors.push_back(p);
  }
  std::string gridText[3];
  for (auto [axis, attr] : llvm::enumerate(kernel.getGrid())) {
    auto grid = cast<tile::GridAttr>(attr);
    std::string &text = gridText[axis];
    // A grid over a static size is folded here (cdiv of two literals), so
    // that the limit check below sees its block count.
    int64_t staticSize = 0;
    if (grid.isConstant()) {
      text = std::to_string(grid.getConstant());
    } else {
      const rt::Dim &dim = args[grid.getArgIndex()].dims[grid.getDimIndex()];
      auto dimExpr = rt::Expr::parse(dim.str());
      if (grid.getDivisor() > 0 && dimExpr.ok() && dimExpr->isLiteral(&staticSize) &&
          staticSize >= 0)
        text = std::to_string(staticSize / grid.getDivisor() +
                              (staticSize % grid.getDivisor() != 0));
      else if (grid.getDivisor() > 1)
        text = "cdiv(" + dim.str() + ", " + std::to_string(grid.getDivisor()) + ")";
      else
        text = dim.str();
    }
  }
  // The segment form of a document modifier's forward or backward main kernel: its row (key) blocks and a quarter
  // more (a document's partial tile each; the device library's segment_tile_bound), blocks past the plan's tiles
  // leaving at once. (Not the block-class kernels that take the plan too: a block a table row, none past the table.)
  if (auto attention = dyn_cast_or_null<tile::AttentionSpecAttr>(kernel.getSpecAttr());
      attention && attention.getSegments() && !attention.classifiesMaskBlocks())
    gridText[0] = "(" + gridText[0] + ") + cdiv(" + gridText[0] + ", 4)";
  // A persistent grid (the ws attention forward): min(units, SMs) blocks along
  // x, a unit being two row blocks of one (head, batch) (tile_schedule.cuh).
  tile::GridOrderAttr order = kernel.getGridOrderAttr();
  // The persistent GEMM (gemm_ws.cuh): min(tiles, SMs) blocks (ping-pong: its
  // tiles are 64 rows, half the plan's).
  if (order && order.getOrder() == tile::BlockOrder::Persistent) {
    bool gemm = llvm::isa_and_nonnull<tile::GemmSpecAttr, tile::MoeSpecAttr>(kernel.getSpecAttr());
    tile::WarpSpecializedAttr schedule = kernel.getScheduleAttr();
    std::string tiles = gemm && schedule && schedule.getPingPong() ? "min(2 * (" + gridText[0] + ")"
                        : gemm                                     ? "min((" + gridText[0] + ")"
                                                                   : "min(cdiv(" + gridText[0] + ", 2)";
    gridText[0] = tiles + " * (" + gridText[1] + ") * (" + gridText[2] + "), " + rt::kSymbolSmCount + ")";
    gridText[1] = gridText[2] = "1";
  }
  // A kernel that runs at some sizes only (#tile.run_if: one of two plans of an op, chosen by a run-time size): its
  // grid times a 0 / 1 selector of that size, so that the runtime skips it (a zero grid) at the others.
  if (tile::RunIfAttr runIf = kernel.getRunIfAttr()) {
    std::string size = "(" + args[runIf.getArg()].dims[runIf.getDim()].str() + ")";
    std::string selector = "1"; // (sizes are never negative: a lower bound of 0 selects nothing)
    if (runIf.getMin() > 0)
      selector = "min(1, max(0, " + size + " - " + std::to_string(runIf.getMin() - 1) + "))";
    if (runIf.getMax() >= 0)
      selector += " * min(1, max(0, " + std::to_string(runIf.getMax() + 1) + " - " + size + "))";
    gridText[0] = "(" + gridText[0] + ") * " + selector;
  }
  for (int axis = 0; axis < 3; ++axis) {
    const std::string &text = gridText[axis];
    auto expr = rt::Expr::parse(text);
    if (!expr.ok())
      return kernel.emitError("bundle: bad grid expression '") << text << "'", failure();
    // A static size (heads, batch) beyond CUDA's grid limits, which hold for
    // every device, could never launch: said here, at the spec line.
    static const int64_t kMaxGrid[3] = {2147483647, 65535, 65535};
    int64_t blocks = 0;
    if (expr->isLiteral(&blocks) && blocks > kMaxGrid[axis])
      return kernel.emitError() << "bundle: kernel @" << kernel.getSymName() << " needs "
                                << blocks << " blocks along grid " << "xyz"[axis]
                                << " (from a static size of the spec); CUDA allows at most "
                                << kMaxGrid[axis],
             failure();
    spec.grid[axis] = *expr;
  }
  spec.block = {rt::Expr::literal(threads), rt::Expr::literal(1), rt::Expr::literal(1)};
  spec.sharedBytes = rt::Expr::literal(sharedBytes);
  return spec;
}

/// Each tile.require_extent of `scope`'s program as a `requires` line of the kernels it launches with the table.
static LogicalResult appendRequirements(ProgramScope &scope, rt::Manifest &manifest) {
  for (auto require : scope.func.getBody().getOps<tile::RequireExtentOp>()) {
    const ArgInfo &table = scope.infos[require.getTable()], &range = scope.infos[require.getRange()];
    const rt::Dim &size = table.dims[require.getTableDim()], &extent = range.dims[require.getRangeDim()];
    // A size the caller gives (a symbol) is a placeholder of the message, a static one its number.
    auto spelled = [](const rt::Dim &dim) {
      return dim.isSymbol() || dim.isExpression() ? "{" + dim.str() + "}" : dim.str();
    };
    // (a static table bounds the run-time size: `Sq <= 4096`)
    bool staticTable = !size.isSymbol() && !size.isExpression();
    std::string text = staticTable ? extent.str() + " <= " + size.str() : size.str() + " >= " + extent.str();
    auto expr = rt::Expr::parse(text, /*allowLogic=*/true);
    if (!expr.ok())
      return require.emitError("bundle: the requirement '") << text << "' does not parse: " << expr.message(),
             failure();
    rt::Constraint constraint(*expr, require.shortfallMessage(table.name, spelled(size), spelled(extent)));
    std::set<std::string> symbols;
    expr->collectSymbols(symbols);
    // Every kernel that reads the table checks it (each may be launched alone), where its parameters bind both
    // sizes (the manifest's rule for a requires line; the attention's kernels take q and k beside the table).
    bool carried = false;
    for (auto launch : scope.func.getBody().getOps<tile::LaunchOp>()) {
      if (!llvm::is_contained(launch.getArgs(), require.getTable()))
        continue;
      auto kernel =
          llvm::find_if(manifest.kernels, [&](const rt::KernelSpec &k) { return k.name == launch.getKernel(); });
      if (kernel == manifest.kernels.end())
        continue;
      std::set<std::string> bound;
      for (const rt::TensorParam &t : kernel->tensors)
        for (const rt::Dim &d : t.dims)
          if (d.isSymbol())
            bound.insert(d.symbol);
      if (!std::includes(bound.begin(), bound.end(), symbols.begin(), symbols.end()))
        continue;
      carried = true;
      if (!llvm::is_contained(kernel->constraints, constraint))
        kernel->constraints.push_back(constraint);
    }
    if (!carried)
      return require.emitError("bundle: no kernel of @")
                 << scope.func.getSymName() << " takes '" << table.name << "' and binds the sizes of '"
                 << expr->str() << "', so nothing would check it at launch",
             failure();
  }
  return success();
}

LogicalResult appendPrograms(ModuleOp module, ArrayRef<std::unique_ptr<ProgramScope>> programs,
                             rt::Manifest &manifest) {
  for (auto &scope : programs) {
    rt::ProgramSpec program;
    program.name = scope->func.getSymName().str();
    for (auto launch : scope->func.getBody().getOps<tile::LaunchOp>())
      program.kernels.push_back(launch.getKernel().str());
    for (tile::AllocTensorOp alloc : scope->scratch)
      program.scratch.push_back({scope->infos[alloc.getResult()].name, alloc.startsZeroed()});
    describeProgram(module, program, programs, *scope);
    manifest.programs.push_back(std::move(program));
    if (failed(appendRequirements(*scope, manifest)))
      return failure();
  }
  return success();
}

} // namespace flashc
