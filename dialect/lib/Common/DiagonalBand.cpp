//===- DiagonalBand.cpp - mask modifiers that are a band of diagonals -----===//
#include "flashc/Dialect/Common/DiagonalBand.h"

#include "flashc/Dialect/Common/IndexFunction.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "llvm/ADT/DenseMap.h"

#include <algorithm>
#include <cstdlib>

using namespace mlir;

namespace flashc {

namespace {

/// a·q + b·k + c. Coefficients and constants stay far from 64-bit overflow
/// (positions are below 2^31), so the term is exactly what the body computes.
struct Term {
  int64_t a = 0, b = 0, c = 0;
};

/// A value of the body: a term (index), |q - k| (index: the select a traced abs() is), or a set of diagonals (i1).
struct Fact {
  bool isBand = false;
  bool isDistance = false;  // |q - k|
  Term term;
  DiagonalBand band;  // isBand: visible where lo <= q - k <= hi
  bool empty = false; // isBand: no diagonal (a false constant or disjoint bounds)
};

constexpr int64_t kLimit = int64_t(1) << 40;

bool small(const Term &t) { return std::llabs(t.a) <= 1024 && std::llabs(t.b) <= 1024 && std::llabs(t.c) <= kLimit; }

/// The predicate with its operands swapped (x < y <=> y > x); eq and ne stay.
arith::CmpIPredicate mirrored(arith::CmpIPredicate pred) {
  using P = arith::CmpIPredicate;
  switch (pred) {
  case P::slt: return P::sgt;
  case P::sle: return P::sge;
  case P::sgt: return P::slt;
  case P::sge: return P::sle;
  default: return pred;
  }
}

/// The band where `term pred 0` holds, when term = a·(q - k) + c.
std::optional<Fact> compareToZero(arith::CmpIPredicate pred, const Term &t) {
  using P = arith::CmpIPredicate;
  Fact f;
  f.isBand = true;
  if (t.a == 0 && t.b == 0) {  // a compare of constants: every diagonal or none
    bool holds = pred == P::eq ? t.c == 0 : pred == P::ne ? t.c != 0 : pred == P::slt ? t.c < 0
               : pred == P::sle ? t.c <= 0 : pred == P::sgt ? t.c > 0 : t.c >= 0;
    f.empty = !holds;
    return f;
  }
  if (t.a != -t.b)
    return std::nullopt;
  // a·d + c pred 0 with d = q - k: for a < 0 flip to |a|·d + (-c) pred' 0.
  int64_t c = t.c, a = std::llabs(t.a);
  if (t.a < 0) {
    c = -c;
    pred = mirrored(pred);
  }
  // a·d + c pred 0  <=>  a·d pred -c: d >= ceil(-c / a), d <= floor(-c / a) (integers), strict ones one further.
  auto floorDiv = [](int64_t n, int64_t m) { return n / m - ((n % m != 0) && ((n < 0) != (m < 0)) ? 1 : 0); };
  int64_t n = -c, below = floorDiv(n, a), above = -floorDiv(-n, a);
  switch (pred) {
  case P::eq:
    if (n % a != 0)
      f.empty = true;
    f.band.lo = below, f.band.hi = below;
    break;
  case P::sge: f.band.lo = above; break;
  case P::sgt: f.band.lo = floorDiv(n, a) + 1; break;  // a·d > n: d > n / a
  case P::sle: f.band.hi = below; break;
  case P::slt: f.band.hi = above - 1; break;           // a·d < n: d < n / a
  default: return std::nullopt;  // ne: two bands; unsigned predicates are not index functions'
  }
  return f;
}

/// The band where |q - k| pred t holds (`distanceLeft`: |q - k| is the compare's left operand), when it is one:
/// |d| <= t is -t <= d <= t; |d| >= t holds everywhere for t <= 0 and is two bands otherwise.
std::optional<Fact> compareDistance(arith::CmpIPredicate pred, int64_t t, bool distanceLeft) {
  using P = arith::CmpIPredicate;
  if (!distanceLeft)  // t pred |d|  <=>  |d| pred' t
    pred = mirrored(pred);
  if (pred == P::slt)
    pred = P::sle, t -= 1;
  if (pred == P::sgt)
    pred = P::sge, t += 1;
  Fact f;
  f.isBand = true;
  if (pred == P::sle || (pred == P::eq && t == 0)) {
    if (t < 0)
      f.empty = true;
    f.band.lo = -t, f.band.hi = t;
    return f;
  }
  if (pred == P::sge && t <= 0)
    return f;  // every diagonal
  return std::nullopt;
}

Fact intersect(const Fact &x, const Fact &y) {
  Fact f;
  f.isBand = true;
  f.empty = x.empty || y.empty;
  auto pick = [](std::optional<int64_t> p, std::optional<int64_t> q, bool larger) -> std::optional<int64_t> {
    if (!p) return q;
    if (!q) return p;
    return larger ? std::max(*p, *q) : std::min(*p, *q);
  };
  f.band.lo = pick(x.band.lo, y.band.lo, true);
  f.band.hi = pick(x.band.hi, y.band.hi, false);
  if (f.band.lo && f.band.hi && *f.band.lo > *f.band.hi)
    f.empty = true;
  return f;
}

} // namespace

std::optional<DiagonalBand> diagonalBand(Region &body) {
  if (!body.hasOneBlock())
    return std::nullopt;
  Block &block = body.front();
  IndexFunctionLayout layout = indexFunctionLayout(body);
  if (layout.tensorArgs != 0)
    return std::nullopt;
  unsigned qArg = layout.indexArgs - 2, kArg = layout.indexArgs - 1;
  for (unsigned i = 0; i < qArg; ++i)  // the batch and the head: a band reads neither
    if (!block.getArgument(i).use_empty())
      return std::nullopt;
  llvm::DenseMap<Value, Fact> facts;
  Fact q, k;
  q.term.a = 1;
  k.term.b = 1;
  facts[block.getArgument(qArg)] = q;
  facts[block.getArgument(kArg)] = k;
  auto termOf = [&](Value v) -> std::optional<Term> {
    auto it = facts.find(v);
    if (it == facts.end() || it->second.isBand || it->second.isDistance)
      return std::nullopt;
    return it->second.term;
  };
  auto isDistance = [&](Value v) {
    auto it = facts.find(v);
    return it != facts.end() && it->second.isDistance;
  };
  auto bandOf = [&](Value v) -> std::optional<Fact> {
    auto it = facts.find(v);
    if (it == facts.end() || !it->second.isBand)
      return std::nullopt;
    return it->second;
  };
  for (Operation &op : block) {
    if (op.hasTrait<OpTrait::IsTerminator>()) {
      if (op.getNumOperands() != 1)
        return std::nullopt;
      std::optional<Fact> result = bandOf(op.getOperand(0));
      if (!result || result->empty)
        return std::nullopt;
      return result->band;
    }
    if (op.getNumResults() != 1)
      return std::nullopt;
    Value out = op.getResult(0);
    Fact f;
    if (auto c = llvm::dyn_cast<arith::ConstantOp>(op)) {
      auto value = llvm::dyn_cast<IntegerAttr>(c.getValue());
      if (!value)
        return std::nullopt;
      if (out.getType().isSignlessInteger(1)) {
        f.isBand = true;
        f.empty = value.getValue().isZero();
      } else {
        f.term.c = value.getValue().getSExtValue();
        if (!small(f.term))
          return std::nullopt;
      }
    } else if (llvm::isa<arith::AddIOp, arith::SubIOp, arith::MulIOp>(op)) {
      std::optional<Term> x = termOf(op.getOperand(0)), y = termOf(op.getOperand(1));
      if (!x || !y)
        return std::nullopt;
      if (llvm::isa<arith::AddIOp>(op))
        f.term = {x->a + y->a, x->b + y->b, x->c + y->c};
      else if (llvm::isa<arith::SubIOp>(op))
        f.term = {x->a - y->a, x->b - y->b, x->c - y->c};
      else if (x->a == 0 && x->b == 0 && std::llabs(x->c) <= 1024)
        f.term = {x->c * y->a, x->c * y->b, x->c * y->c};
      else if (y->a == 0 && y->b == 0 && std::llabs(y->c) <= 1024)
        f.term = {y->c * x->a, y->c * x->b, y->c * x->c};
      else
        return std::nullopt;
      if (!small(f.term))
        return std::nullopt;
    } else if (auto select = llvm::dyn_cast<arith::SelectOp>(op)) {
      // |q - k| as a traced abs() spells it: select(d < 0, -d, d) (or d <= 0), select(d >= 0, d, -d) (or d > 0).
      std::optional<Fact> cond = bandOf(select.getCondition());
      std::optional<Term> x = termOf(select.getTrueValue()), y = termOf(select.getFalseValue());
      if (!cond || cond->empty || !x || !y)
        return std::nullopt;
      auto isD = [](const Term &t, int64_t sign) { return t.a == sign && t.b == -sign && t.c == 0; };
      bool negativeFirst = !cond->band.lo && cond->band.hi && (*cond->band.hi == -1 || *cond->band.hi == 0);
      bool positiveFirst = !cond->band.hi && cond->band.lo && (*cond->band.lo == 0 || *cond->band.lo == 1);
      if (!((negativeFirst && isD(*x, -1) && isD(*y, 1)) || (positiveFirst && isD(*x, 1) && isD(*y, -1))))
        return std::nullopt;
      f.isDistance = true;
    } else if (auto cmp = llvm::dyn_cast<arith::CmpIOp>(op)) {
      if (isDistance(cmp.getLhs()) || isDistance(cmp.getRhs())) {
        bool left = isDistance(cmp.getLhs());
        std::optional<Term> t = termOf(left ? cmp.getRhs() : cmp.getLhs());
        if (!t || t->a != 0 || t->b != 0)
          return std::nullopt;
        std::optional<Fact> band = compareDistance(cmp.getPredicate(), t->c, left);
        if (!band)
          return std::nullopt;
        facts[out] = *band;
        continue;
      }
      std::optional<Term> x = termOf(cmp.getLhs()), y = termOf(cmp.getRhs());
      if (!x || !y)
        return std::nullopt;
      std::optional<Fact> band = compareToZero(cmp.getPredicate(), {x->a - y->a, x->b - y->b, x->c - y->c});
      if (!band)
        return std::nullopt;
      f = *band;
    } else if (llvm::isa<arith::AndIOp>(op)) {
      std::optional<Fact> x = bandOf(op.getOperand(0)), y = bandOf(op.getOperand(1));
      if (!x || !y)
        return std::nullopt;
      f = intersect(*x, *y);
    } else {
      return std::nullopt;
    }
    facts[out] = f;
  }
  return std::nullopt;
}

} // namespace flashc
