//===- FuseAttention.cpp - matmul/scale/mask/softmax/matmul -> attention --===//
//
// Finds  O = softmax(mask(score(c · Q·Kᵀ))) · V  in the graph and replaces it with one
// flash.attention whose scale is the product c of every constant scale met on
// the way (on the scores, on Q or on K).
//
// Key spellings:
//   - flash.matmul %q, %k transpose_b with k as [B, Hkv, Sk, D];
//   - flash.matmul %q, %kt with kt = [B, Hkv, D, Sk] produced by a flash.matmul
//     (kt = op(A)·op(B), so K = ktᵀ = op(B)ᵀ·op(A)ᵀ: the pass re-emits that
//     matmul with swapped operands and flipped transpose flags); this needs A
//     and B to have identical batch dimensions, because swapping lhs and rhs
//     would invert a grouped broadcast;
//   - a Kᵀ that is a function argument (or any other value) is not fused:
//     flash.attention takes K as [B, Hkv, Sk, D] and the flash dialect has no
//     transpose op. Write such a key with transpose_b instead.
//
// Elementwise arith / math ops on the scores before the softmax (the graph
// spelling of mask and score modifiers: iota / gathers by tensor.generate,
// compare, select with -inf, a bias added, a tanh cap) are first lifted into
// flash.mask / flash.score ops with regions (LiftScoreOps.cpp), which fuse.
//
// A mask after a scale equals the mask before it because the scale is
// positive (-inf · c = -inf for c > 0); a non-positive total scale, or a
// non-positive product of the scales after the mask, does not fuse. Operands must be rank 4 [B, H, S, D] with the same batch size B;
// grouped heads (Hq = g · Hkv) become num_kv_heads = Hkv.
//
//===----------------------------------------------------------------------===//
#include "LiftScoreOps.h"
#include "FusedOpCheck.h"
#include "flashc/Compiler/Passes.h"
#include "flashc/Dialect/Flash/IR/FlashOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/PatternMatch.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/Support/FormatVariadic.h"

#include <cmath>
#include <optional>

namespace mlir::flash {
#define GEN_PASS_DEF_FUSEATTENTION
#include "flashc/Compiler/Passes.h.inc"
} // namespace mlir::flash

using namespace mlir;
using namespace mlir::flash;

namespace {

/// The pieces of one attention chain found in the graph.
struct AttentionMatch {
  MatmulOp root; // P·V
  Value query;   // [B, Hq, Sq, D], scales peeled off
  Value key;     // [B, Hkv, Sk, D]; null when keyTransposed must be undone
  MatmulOp keyTransposed; // producer of Kᵀ to re-emit transposed, or null
  Value value;            // [B, Hkv, Sk, Dv]
  double scale = 1.0;
  MaskAttr mask;
  MaskOp maskOp; // the flash.mask folded in (its `mod` region moves to the attention's mask_mod)
  ScoreOp scoreOp; // the flash.score folded in (its region moves to the attention's score_mod)
  /// Ops that become dead, consumers before producers (root first).
  SmallVector<Operation *> chain;
  /// Ops that are dead afterwards only if nothing else uses them (scales on
  /// Q or K, the Kᵀ producer), consumers first. A set: Q and K may share a
  /// scale op (self-attention on one tensor).
  llvm::SetVector<Operation *> maybeDead;
};

/// Follows flash.scale ops upward from `value`, folding their factors into
/// `scale`. The scale ops may have other users; they are kept for those.
Value peelScales(Value value, double &scale,
                 llvm::SetVector<Operation *> &visited) {
  while (auto scaleOp = value.getDefiningOp<ScaleOp>()) {
    scale *= scaleOp.getFactor().convertToDouble();
    visited.insert(scaleOp);
    value = scaleOp.getInput();
  }
  return value;
}

bool isStatic(int64_t size) { return !ShapedType::isDynamic(size); }

/// kt = op(A)·op(B) with A, B of equal rank and identical batch dimensions,
/// so that K = op(B)ᵀ·op(A)ᵀ is a valid flash.matmul.
bool canTransposeProduct(MatmulOp product) {
  auto lhsType = product.getLhs().getType();
  auto rhsType = product.getRhs().getType();
  if (lhsType.getRank() != rhsType.getRank())
    return false;
  return lhsType.getShape().drop_back(2) == rhsType.getShape().drop_back(2);
}

/// The attention chain ending at `root`, or nullopt. When `root` multiplies a
/// softmax (a near miss the user likely meant as attention), `whyNot` says
/// what stopped the fusion.
std::optional<AttentionMatch> matchAttention(MatmulOp root, std::string &whyNot) {
  AttentionMatch match;
  match.root = root;
  Value probabilities = root.getLhs();
  auto softmax = probabilities.getDefiningOp<SoftmaxOp>();
  if (!softmax)
    return std::nullopt;
  auto fail = [&](std::string reason) -> std::optional<AttentionMatch> {
    whyNot = std::move(reason);
    return std::nullopt;
  };
  if (root.getTransposeA() || root.getTransposeB())
    return fail("the P·V matmul transposes an operand (V must be [B, H, Sk, Dv])");
  if (!probabilities.hasOneUse())
    return fail("the softmax result has other users");
  match.chain.push_back(root);
  match.chain.push_back(softmax);

  // Between the scores matmul and the softmax: scales and at most one mask,
  // each used only by the next op of the chain.
  Value current = softmax.getInput();
  MatmulOp scores;
  // (walking up from the softmax: a scale met before the flash.score is applied after it, a mask met after it
  // before it; the attention applies scale, then the score modifier, then the mask)
  bool scaledAfterScore = false;
  // The product of the scales applied after the mask: -inf stays -inf only under a positive one.
  double scaleAfterMask = 1.0;
  while (!scores) {
    Operation *producer = current.getDefiningOp();
    if (!producer)
      return fail("the softmax input does not come from a Q·Kᵀ flash.matmul");
    if (!current.hasOneUse())
      return fail("'" + producer->getName().getStringRef().str() +
                  "' in the score chain has other users");
    if (auto scaleOp = dyn_cast<ScaleOp>(producer)) {
      match.scale *= scaleOp.getFactor().convertToDouble();
      if (!match.mask)
        scaleAfterMask *= scaleOp.getFactor().convertToDouble();
      scaledAfterScore = scaledAfterScore || !match.scoreOp;
      current = scaleOp.getInput();
    } else if (auto scoreOp = dyn_cast<ScoreOp>(producer)) {
      if (match.scoreOp)
        return fail("two flash.score ops on the scores (one score modifier only)");
      if (scaledAfterScore)
        return fail("a flash.scale after the flash.score (the attention's score modifier sees the scaled scores: "
                    "scale before flash.score)");
      match.scoreOp = scoreOp;
      current = scoreOp.getInput();
    } else if (auto maskOp = dyn_cast<MaskOp>(producer)) {
      if (match.scoreOp)
        return fail("a flash.mask before the flash.score (the attention masks the modified scores: mask after "
                    "flash.score)");
      if (match.mask)
        return fail("two flash.mask ops on the scores (one attention mask only)");
      match.mask = maskOp.getMask();
      match.maskOp = maskOp;
      current = maskOp.getInput();
    } else if (auto matmul = dyn_cast<MatmulOp>(producer)) {
      scores = matmul;
    } else {
      return fail("'" + producer->getName().getStringRef().str() +
                  "' between the scores matmul and the softmax (only flash.scale, one flash.score "
                  "and one flash.mask may sit there)");
    }
    match.chain.push_back(producer);
  }
  if (scores.getTransposeA())
    return fail("the scores matmul transposes Q (Q must be [B, H, Sq, D])");
  if (match.mask && !(scaleAfterMask > 0.0))
    return fail(llvm::formatv("a flash.scale by {0:e} after the flash.mask turns its -inf into +inf or NaN (the "
                              "attention masks after scaling: a positive total scale after the mask fuses)",
                              scaleAfterMask)
                    .str());

  match.query = peelScales(scores.getLhs(), match.scale, match.maybeDead);
  Value keyOperand = peelScales(scores.getRhs(), match.scale, match.maybeDead);
  match.value = root.getRhs();

  // Shapes first (a rank-2 softmax(X·W)·E is not a near-miss attention): rank
  // 4, same batch, static heads and head dims, grouped heads. Kᵀ is
  // [B, Hkv, D, Sk]: its dims 0, 1 are those of K.
  auto queryType = cast<RankedTensorType>(match.query.getType());
  auto valueType = cast<RankedTensorType>(match.value.getType());
  auto keyType = cast<RankedTensorType>(keyOperand.getType());
  if (queryType.getRank() != 4 || keyType.getRank() != 4 ||
      valueType.getRank() != 4)
    return fail("Q, K and V must be rank 4 [B, H, S, D]");
  ArrayRef<int64_t> q = queryType.getShape(), k = keyType.getShape(),
                    v = valueType.getShape();
  // Static batches that differ are a broadcast; a static one beside a dynamic one is left to flash.attention's
  // verifier (verifyFused quotes it).
  SmallVector<int64_t, 3> staticBatches;
  llvm::copy_if(ArrayRef<int64_t>{q[0], k[0], v[0]}, std::back_inserter(staticBatches), isStatic);
  if (!llvm::all_equal(staticBatches))
    return fail("Q, K and V have different batch sizes (a broadcast batch is not an attention batch)");
  if (!isStatic(q[1]) || !isStatic(k[1]) || !isStatic(q[3]) || !isStatic(v[3]))
    return fail("head counts and head dims must be static");
  if (k[1] != v[1] || k[1] <= 0 || q[1] % k[1] != 0)
    return fail("K and V must have the same head count, which divides Q's");
  // flash.attention's static sizes are positive: a static 0 stays a graph (it fused into an op that failed its
  // verifier).
  if (llvm::is_contained(q, 0) || llvm::is_contained(k, 0) || llvm::is_contained(v, 0))
    return fail("a static size of 0 in Q, K or V (flash.attention's sizes are positive; a size that may be 0 at run "
                "time is ?)");

  if (scores.getTransposeB()) {
    match.key = keyOperand;
  } else {
    auto producer = keyOperand.getDefiningOp<MatmulOp>();
    if (!producer || !keyOperand.hasOneUse() || !canTransposeProduct(producer))
      return fail("K enters as Kᵀ [B, H, D, Sk]: write the scores as flash.matmul %q, %k "
                  "transpose_b with K [B, H, Sk, D]");
    match.keyTransposed = producer;
    match.maybeDead.insert(producer);
  }

  // flash.attention keeps the scale as a positive, finite f32 whose product
  // with log2(e) is still one (its verifier's bound).
  float scaleF32 = static_cast<float>(match.scale);
  if (!(scaleF32 > 0.0f) || !std::isfinite(scaleF32))
    return fail(llvm::formatv("the total score scale {0:e} is not a positive, finite f32",
                              match.scale)
                    .str());
  if (scaleF32 > kMaxAttentionScale)
    return fail(llvm::formatv("the total score scale {0:e} is above flash.attention's limit "
                              "{1:e}",
                              match.scale, kMaxAttentionScale)
                    .str());
  return match;
}

LogicalResult rewriteAttention(AttentionMatch &match, RewriterBase &rewriter, std::string &whyNot) {
  MatmulOp root = match.root;
  rewriter.setInsertionPoint(root);
  SmallVector<Location> locations;
  for (Operation *op : match.chain)
    locations.push_back(op->getLoc());
  Location loc = rewriter.getFusedLoc(locations);

  Value key = match.key;
  if (MatmulOp producer = match.keyTransposed) {
    // (op(A)·op(B))ᵀ = op(B)ᵀ·op(A)ᵀ
    auto kt = cast<RankedTensorType>(producer.getType());
    SmallVector<int64_t> keyShape(kt.getShape());
    std::swap(keyShape[keyShape.size() - 1], keyShape[keyShape.size() - 2]);
    auto keyType = RankedTensorType::get(keyShape, kt.getElementType());
    key = rewriter.create<MatmulOp>(producer.getLoc(), keyType,
                                    producer.getRhs(), producer.getLhs(),
                                    /*transpose_a=*/!producer.getTransposeB(),
                                    /*transpose_b=*/!producer.getTransposeA());
  }

  auto outputType = cast<RankedTensorType>(root.getType());
  ArrayRef<int64_t> out = outputType.getShape();
  auto lseType = RankedTensorType::get({out[0], out[1], out[2]},
                                       rewriter.getF32Type());
  MaskAttr mask =
      match.mask ? match.mask : MaskAttr::get(rewriter.getContext(),
                                              MaskKind::None);
  int64_t kvHeads = cast<RankedTensorType>(key.getType()).getDimSize(1);
  auto attention = rewriter.create<AttentionOp>(
      loc, TypeRange{outputType, lseType}, match.query, key, match.value, /*key_offset=*/Value(),
      /*mask_operands=*/match.maskOp ? ValueRange(match.maskOp.getMaskOperands()) : ValueRange(),
      /*score_operands=*/match.scoreOp ? ValueRange(match.scoreOp.getScoreOperands()) : ValueRange(),
      rewriter.getF32FloatAttr(static_cast<float>(match.scale)), mask,
      rewriter.getF32FloatAttr(0.0f), rewriter.getI64IntegerAttr(kvHeads));
  if (match.maskOp && match.maskOp.hasMaskMod()) {
    IRMapping mapping;
    match.maskOp.getMaskMod().cloneInto(&attention.getMaskMod(), mapping);
  }
  if (match.scoreOp) {
    IRMapping mapping;
    match.scoreOp.getScoreMod().cloneInto(&attention.getScoreMod(), mapping);
  }
  if (failed(flashc::verifyFused(attention, whyNot))) {
    rewriter.eraseOp(attention);
    if (match.keyTransposed)  // (the K built from Kᵀ's product)
      rewriter.eraseOp(key.getDefiningOp());
    return failure();
  }

  rewriter.replaceAllUsesWith(root.getResult(), attention.getOutput());
  for (Operation *op : match.chain)
    rewriter.eraseOp(op);
  for (Operation *op : match.maybeDead)
    if (op->use_empty())
      rewriter.eraseOp(op);
  return success();
}

struct FuseAttentionPass
    : public mlir::flash::impl::FuseAttentionBase<FuseAttentionPass> {
  void runOnOperation() override {
    // Candidates are visited in program order. A rewrite only erases ops
    // that dominate its root, hence come earlier and were already visited,
    // so the remaining candidates stay valid. Unrelated ops are not touched
    // (no greedy driver folding or dead-code removal).
    IRRewriter rewriter(&getContext());
    SmallVector<SoftmaxOp> softmaxes;
    getOperation()->walk([&](SoftmaxOp op) { softmaxes.push_back(op); });
    for (SoftmaxOp softmax : softmaxes) {
      std::string whyNot;
      if (failed(flashc::liftScoreOps(softmax, rewriter, whyNot)))
        softmax.emitWarning() << "elementwise ops on the scores not lifted into attention modifiers: " << whyNot;
    }
    SmallVector<MatmulOp> candidates;
    getOperation()->walk([&](MatmulOp op) { candidates.push_back(op); });
    for (MatmulOp candidate : candidates) {
      std::string whyNot;
      std::optional<AttentionMatch> match = matchAttention(candidate, whyNot);
      if (match && succeeded(rewriteAttention(*match, rewriter, whyNot)))
        continue;
      if (!whyNot.empty())
        candidate.emitWarning() << "softmax(...)·V not fused into flash.attention: " << whyNot;
    }
  }
};

} // namespace
