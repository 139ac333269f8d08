// The device library's mask-modifier domains (runtime/device/include/flashc/device/mask_mod.cuh) on the
// host: the exact domain follows IndexFunction.h's rules, and the interval domain is sound — over any
// block, a condition that is true for some (q, k) can be true, one that is false for some can be
// false, every integer lies in its range. Checked by brute force on random expressions of every op
// and on the modifiers of the numerics tests; ModMask's loop bounds never drop a visible key.
#include "Check.h"

#include "flashc/device/mask_mod.cuh"

#include <algorithm>
#include <climits>
#include <cstdint>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

using namespace flashc::device;
using namespace flashc::test;

namespace {

// ------------------------------------------------------------------ random expressions over q, k
enum class Op { Q, K, Const, Add, Sub, Mul, Div, FloorDiv, CeilDiv, Rem, Min, Max, Select };
enum class Cmp { Eq, Ne, Lt, Le, Gt, Ge };
enum class Logic { Cmp, And, Or, Xor, Select, Const };

struct IntNode;
struct BoolNode;
using IntPtr = std::shared_ptr<IntNode>;
using BoolPtr = std::shared_ptr<BoolNode>;

struct IntNode {
  Op op;
  long long value = 0;
  IntPtr a, b;
  BoolPtr cond;
};
struct BoolNode {
  Logic logic;
  Cmp cmp = Cmp::Eq;
  bool value = false;
  IntPtr a, b;
  BoolPtr x, y, cond;
};

template <class D>
typename D::Int evalInt(const IntNode &n, typename D::Int q, typename D::Int k);
template <class D>
typename D::Bool evalBool(const BoolNode &n, typename D::Int q, typename D::Int k) {
  switch (n.logic) {
  case Logic::Const: return D::boolean(n.value);
  case Logic::And: return D::and_(evalBool<D>(*n.x, q, k), evalBool<D>(*n.y, q, k));
  case Logic::Or: return D::or_(evalBool<D>(*n.x, q, k), evalBool<D>(*n.y, q, k));
  case Logic::Xor: return D::xor_(evalBool<D>(*n.x, q, k), evalBool<D>(*n.y, q, k));
  case Logic::Select:
    return D::select(evalBool<D>(*n.cond, q, k), evalBool<D>(*n.x, q, k), evalBool<D>(*n.y, q, k));
  case Logic::Cmp: {
    auto a = evalInt<D>(*n.a, q, k), b = evalInt<D>(*n.b, q, k);
    switch (n.cmp) {
    case Cmp::Eq: return D::eq(a, b);
    case Cmp::Ne: return D::ne(a, b);
    case Cmp::Lt: return D::lt(a, b);
    case Cmp::Le: return D::le(a, b);
    case Cmp::Gt: return D::gt(a, b);
    case Cmp::Ge: return D::ge(a, b);
    }
  }
  }
  return D::boolean(false);
}
template <class D>
typename D::Int evalInt(const IntNode &n, typename D::Int q, typename D::Int k) {
  switch (n.op) {
  case Op::Q: return q;
  case Op::K: return k;
  case Op::Const: return D::constant(n.value);
  case Op::Select: return D::select(evalBool<D>(*n.cond, q, k), evalInt<D>(*n.a, q, k), evalInt<D>(*n.b, q, k));
  default: break;
  }
  auto a = evalInt<D>(*n.a, q, k), b = evalInt<D>(*n.b, q, k);
  switch (n.op) {
  case Op::Add: return D::add(a, b);
  case Op::Sub: return D::sub(a, b);
  case Op::Mul: return D::mul(a, b);
  case Op::Div: return D::div(a, b);
  case Op::FloorDiv: return D::floor_div(a, b);
  case Op::CeilDiv: return D::ceil_div(a, b);
  case Op::Rem: return D::rem(a, b);
  case Op::Min: return D::min(a, b);
  case Op::Max: return D::max(a, b);
  default: return a;
  }
}

struct Generator {
  std::mt19937_64 rng;
  explicit Generator(uint64_t seed) : rng(seed) {}
  int pick(int n) { return int(rng() % uint64_t(n)); }
  long long constant() {
    static const long long kSpecial[] = {0, 1, -1, 2, 3, 7, 16, -5, 64, 1LL << 40, -(1LL << 62), (1LL << 62)};
    if (pick(4) == 0) return kSpecial[pick(sizeof kSpecial / sizeof kSpecial[0])];
    return (long long)pick(200) - 100;
  }
  IntPtr integer(int depth) {
    auto n = std::make_shared<IntNode>();
    if (depth <= 0 || pick(4) == 0) {
      int leaf = pick(3);
      n->op = leaf == 0 ? Op::Q : leaf == 1 ? Op::K : Op::Const;
      n->value = constant();
      return n;
    }
    static const Op kOps[] = {Op::Add, Op::Sub, Op::Mul, Op::Div, Op::FloorDiv, Op::CeilDiv, Op::Rem,
                              Op::Min, Op::Max, Op::Select};
    n->op = kOps[pick(10)];
    n->a = integer(depth - 1);
    n->b = integer(depth - 1);
    if (n->op == Op::Select) n->cond = boolean(depth - 1);
    return n;
  }
  BoolPtr boolean(int depth) {
    auto n = std::make_shared<BoolNode>();
    if (depth <= 0 || pick(3) == 0) {
      if (pick(8) == 0) {
        n->logic = Logic::Const;
        n->value = pick(2);
        return n;
      }
      n->logic = Logic::Cmp;
      n->cmp = Cmp(pick(6));
      n->a = integer(depth - 1);
      n->b = integer(depth - 1);
      return n;
    }
    static const Logic kLogic[] = {Logic::And, Logic::Or, Logic::Xor, Logic::Select, Logic::Cmp};
    n->logic = kLogic[pick(5)];
    if (n->logic == Logic::Cmp) {
      n->cmp = Cmp(pick(6));
      n->a = integer(depth - 1);
      n->b = integer(depth - 1);
      return n;
    }
    n->x = boolean(depth - 1);
    n->y = boolean(depth - 1);
    if (n->logic == Logic::Select) n->cond = boolean(depth - 1);
    return n;
  }
};

bool inside(long long v, Range r) { return r.any || (r.lo <= v && v <= r.hi); }

// Every integer sub-expression of `root` lies in its range over the block, and the root condition's
// exact values are allowed by its Tri.
bool soundOverBlock(const BoolNode &root, long long q0, long long bm, long long k0, long long bn, std::string &why) {
  Range qr = IndexRange::make(q0, q0 + bm - 1), kr = IndexRange::make(k0, k0 + bn - 1);
  Tri t = evalBool<IndexRange>(root, qr, kr);
  std::function<bool(const IntNode &)> checkInt;
  std::function<bool(const BoolNode &)> checkBool;
  checkInt = [&](const IntNode &n) {
    Range r = evalInt<IndexRange>(n, qr, kr);
    for (long long q = q0; q < q0 + bm; ++q)
      for (long long k = k0; k < k0 + bn; ++k)
        if (!inside(evalInt<ExactIndex>(n, q, k), r)) {
          why = "value " + std::to_string(evalInt<ExactIndex>(n, q, k)) + " at (" + std::to_string(q) + ", " +
                std::to_string(k) + ") outside [" + std::to_string(r.lo) + ", " + std::to_string(r.hi) + "]";
          return false;
        }
    return (!n.a || checkInt(*n.a)) && (!n.b || checkInt(*n.b)) && (!n.cond || checkBool(*n.cond));
  };
  checkBool = [&](const BoolNode &n) {
    Tri nt = evalBool<IndexRange>(n, qr, kr);
    for (long long q = q0; q < q0 + bm; ++q)
      for (long long k = k0; k < k0 + bn; ++k) {
        bool v = evalBool<ExactIndex>(n, q, k);
        if ((v && !nt.can_true) || (!v && !nt.can_false)) {
          why = std::string("condition ") + (v ? "true" : "false") + " at (" + std::to_string(q) + ", " +
                std::to_string(k) + ") ruled out by the range analysis";
          return false;
        }
      }
    return (!n.a || checkInt(*n.a)) && (!n.b || checkInt(*n.b)) && (!n.x || checkBool(*n.x)) &&
           (!n.y || checkBool(*n.y)) && (!n.cond || checkBool(*n.cond));
  };
  (void)t;
  return checkBool(root);
}

void testRandomExpressions() {
  Generator g(20261201);
  int checked = 0, failedAt = -1;
  std::string why;
  for (int e = 0; e < 3000 && failedAt < 0; ++e) {
    BoolPtr root = g.boolean(4);
    long long q0 = g.pick(300), k0 = g.pick(300);
    static const long long kSizes[] = {1, 2, 5, 16, 33};
    long long bm = kSizes[g.pick(5)], bn = kSizes[g.pick(5)];
    if (!soundOverBlock(*root, q0, bm, k0, bn, why)) failedAt = e;
    ++checked;
  }
  check(failedAt < 0, "3000 random expressions of every op: every range holds its values over random blocks",
        "expression " + std::to_string(failedAt) + ": " + why);
}

// Every binary op on every pair of small ranges: each exact result over the pairs lies in the op's range.
void testOpsExhaustively() {
  struct Named {
    const char *name;
    std::function<long long(long long, long long)> exact;
    std::function<Range(Range, Range)> range;
  };
  using E = ExactIndex;
  using R = IndexRange;
  const Named ops[] = {
      {"add", E::add, R::add},           {"sub", E::sub, R::sub},
      {"mul", E::mul, R::mul},           {"div", E::div, R::div},
      {"floor_div", E::floor_div, R::floor_div}, {"ceil_div", E::ceil_div, R::ceil_div},
      {"rem", E::rem, R::rem},           {"min", E::min, R::min},
      {"max", E::max, R::max},
  };
  for (const Named &op : ops) {
    std::string why;
    for (long long alo = -9; alo <= 9 && why.empty(); ++alo)
      for (long long ahi = alo; ahi <= 9 && why.empty(); ++ahi)
        for (long long blo = -5; blo <= 5 && why.empty(); ++blo)
          for (long long bhi = blo; bhi <= 5 && why.empty(); ++bhi) {
            Range r = op.range(R::make(alo, ahi), R::make(blo, bhi));
            for (long long a = alo; a <= ahi && why.empty(); ++a)
              for (long long b = blo; b <= bhi && why.empty(); ++b)
                if (!inside(op.exact(a, b), r))
                  why = std::to_string(a) + " " + op.name + " " + std::to_string(b) + " = " +
                        std::to_string(op.exact(a, b)) + " outside [" + std::to_string(r.lo) + ", " +
                        std::to_string(r.hi) + "] of [" + std::to_string(alo) + ", " + std::to_string(ahi) +
                        "] and [" + std::to_string(blo) + ", " + std::to_string(bhi) + "]";
          }
    check(why.empty(), std::string(op.name) + ": sound on every pair of ranges within [-9, 9] x [-5, 5]", why);
  }
  // Comparisons: can_true / can_false against the exact truth on every pair.
  const std::pair<const char *, std::function<bool(long long, long long)>> exactCmp[] = {
      {"eq", E::eq}, {"ne", E::ne}, {"lt", E::lt}, {"le", E::le}, {"gt", E::gt}, {"ge", E::ge}};
  const std::function<Tri(Range, Range)> rangeCmp[] = {R::eq, R::ne, R::lt, R::le, R::gt, R::ge};
  for (int c = 0; c < 6; ++c) {
    bool ok = true, tight = true;
    for (long long alo = -4; alo <= 4; ++alo)
      for (long long ahi = alo; ahi <= 4; ++ahi)
        for (long long blo = -4; blo <= 4; ++blo)
          for (long long bhi = blo; bhi <= 4; ++bhi) {
            Tri t = rangeCmp[c](R::make(alo, ahi), R::make(blo, bhi));
            bool anyTrue = false, anyFalse = false;
            for (long long a = alo; a <= ahi; ++a)
              for (long long b = blo; b <= bhi; ++b)
                (exactCmp[c].second(a, b) ? anyTrue : anyFalse) = true;
            ok = ok && (!anyTrue || t.can_true) && (!anyFalse || t.can_false);
            tight = tight && t.can_true == anyTrue && t.can_false == anyFalse;
          }
    check(ok && tight, std::string(exactCmp[c].first) + ": exact on every pair of ranges within [-4, 4]");
  }
}

// ------------------------------------------------------------------ the exact domain's rules
void testExactRules() {
  using E = ExactIndex;
  const long long kMin = -(long long)(~0ULL >> 1) - 1;
  check(E::div(7, 0) == 0 && E::rem(7, 0) == 0 && E::floor_div(7, 0) == 0 && E::ceil_div(7, 0) == 0,
        "division and remainder by 0 give 0");
  check(E::div(kMin, -1) == kMin && E::rem(kMin, -1) == 0 && E::floor_div(kMin, -1) == kMin,
        "INT64_MIN / -1 wraps, its remainder is 0");
  check(E::div(-7, 2) == -3 && E::floor_div(-7, 2) == -4 && E::ceil_div(-7, 2) == -3 && E::rem(-7, 2) == -1,
        "divsi truncates, floordivsi floors, ceildivsi ceils, remsi takes the dividend's sign");
  check(E::ceil_div(7, 2) == 4 && E::floor_div(7, -2) == -4 && E::ceil_div(-7, -2) == 4, "signs of ceil and floor");
  check(E::add((long long)(~0ULL >> 1), 1) == kMin, "addition wraps");
}

// ------------------------------------------------------------------ modifiers as the emitter prints them
struct Causal {
  template <class D>
  static FLASHC_MASK_FN typename D::Bool visible(const MaskEnv&, typename D::Int, typename D::Int, typename D::Int q,
                                                 typename D::Int k) {
    return D::le(k, q);
  }
};
struct PrefixLm {  // k < 20 || k <= q
  template <class D>
  static FLASHC_MASK_FN typename D::Bool visible(const MaskEnv&, typename D::Int, typename D::Int, typename D::Int q,
                                                 typename D::Int k) {
    const auto v0 = D::lt(k, D::constant(20));
    const auto v1 = D::le(k, q);
    return D::or_(v0, v1);
  }
};
struct Chunked {  // q / 24 == k / 24
  template <class D>
  static FLASHC_MASK_FN typename D::Bool visible(const MaskEnv&, typename D::Int, typename D::Int, typename D::Int q,
                                                 typename D::Int k) {
    return D::eq(D::div(q, D::constant(24)), D::div(k, D::constant(24)));
  }
};
struct Strided {  // k % 3 == 0 || q == k
  template <class D>
  static FLASHC_MASK_FN typename D::Bool visible(const MaskEnv&, typename D::Int, typename D::Int, typename D::Int q,
                                                 typename D::Int k) {
    return D::or_(D::eq(D::rem(k, D::constant(3)), D::constant(0)), D::eq(q, k));
  }
};

const MaskEnv kEnv{};  // the modifiers above read no tensor, b or h

// A Window without sides (all keys below the limit), with the interface mask.cuh's Window has.
// Causal on the host (mask.cuh's Window<-1, 0> is device code): what ModMask reads of its base.
struct HostCausal {
  static constexpr int L = -1, R = 0;
  static bool hidden(int i, int j, int limit, int offset) { return j >= limit || j > i + offset; }
  static bool needs_mask(int q0, int, int k0, int BN, int limit, int offset) {
    return k0 + BN > limit || k0 + BN - 1 > q0 + offset;
  }
};

struct AllKeys {
  static constexpr int L = -1, R = -1;
  static int clamp_offset(int offset, int, int) { return offset; }
  static bool hidden(int, int j, int limit, int) { return j >= limit; }
  static bool needs_mask(int, int, int k0, int BN, int limit, int) { return k0 + BN > limit; }
  static int key_block_begin(int, int, int, int, int) { return 0; }
  static int key_block_end(int, int, int BN, int limit, int) { return limit > 0 ? (limit + BN - 1) / BN : 0; }
  static int query_block_begin(int, int, int, int, int) { return 0; }
  static int query_block_end(int, int, int BM, int num_queries, int) {
    return num_queries > 0 ? (num_queries + BM - 1) / BM : 0;
  }
};

template <class Mod>
void testModMask(const char *name, bool causalExact) {
  using M = ModMask<AllKeys, Mod>;
  const int Sq = 150, Sk = 170;
  bool boundsOk = true, maskOk = true, exact = true;
  std::string why;
  for (int BM : {16, 64}) {
    for (int BN : {16, 32}) {
      for (int qb = 0; qb * BM < Sq; ++qb) {
        const int q0 = qb * BM;
        const int begin = M::key_block_begin(q0, BM, BN, Sk, 0, kEnv), end = M::key_block_end(q0, BM, BN, Sk, 0, kEnv);
        for (int q = q0; q < q0 + BM && q < Sq; ++q)
          for (int k = 0; k < Sk; ++k)
            if (!M::hidden(q, k, Sk, 0, kEnv) && (k < begin * BN || k >= end * BN)) {
              boundsOk = false;
              why = "query " + std::to_string(q) + " key " + std::to_string(k) + " outside blocks [" +
                    std::to_string(begin) + ", " + std::to_string(end) + ")";
            }
        for (int kb = begin; kb < end; ++kb) {
          bool anyHidden = false, anyVisible = false;
          for (int q = q0; q < q0 + BM; ++q)
            for (int k = kb * BN; k < kb * BN + BN; ++k) {
              const bool h = M::hidden(q, k, Sk, 0, kEnv);
              anyHidden |= h;
              anyVisible |= !h;
            }
          if (anyHidden && !M::needs_mask(q0, BM, kb * BN, BN, Sk, 0, kEnv)) maskOk = false;
          if (causalExact && !anyHidden && M::needs_mask(q0, BM, kb * BN, BN, Sk, 0, kEnv) && kb * BN + BN <= Sk) exact = false;
          if (causalExact && !anyVisible) exact = false;
        }
      }
      for (int kb = 0; kb * BN < Sk; ++kb) {
        const int k0 = kb * BN;
        const int begin = M::query_block_begin(k0, BN, BM, Sq, 0, kEnv), end = M::query_block_end(k0, BN, BM, Sq, 0, kEnv);
        for (int k = k0; k < k0 + BN && k < Sk; ++k)
          for (int q = 0; q < Sq; ++q)
            if (!M::hidden(q, k, Sk, 0, kEnv) && (q < begin * BM || q >= end * BM)) {
              boundsOk = false;
              why = "key " + std::to_string(k) + " seen by query " + std::to_string(q) + " outside blocks [" +
                    std::to_string(begin) + ", " + std::to_string(end) + ")";
            }
      }
    }
  }
  check(boundsOk, std::string(name) + ": the loop bounds (key and query blocks) hold every visible pair", why);
  check(maskOk, std::string(name) + ": every block with a hidden pair is masked");
  if (causalExact)
    check(exact, std::string(name) + ": exact where ranges are (full blocks unmasked, no empty block in the bounds)");
}

// The galloping bounds against a scan block by block: never wider (they skip only ranges proven hidden) and, for
// masks whose ranges are exact (causal, a band, chunks), the same.
template <class Mod>
void testGallopingMatchesScan(const char *name) {
  using M = ModMask<AllKeys, Mod>;
  bool narrowerOrEqual = true, equal = true;
  for (int BM : {64, 128})
    for (int BN : {64, 128})
      for (int q0 = 0; q0 < 20000; q0 += 997) {
        const int Sk = 16384, blocks = (Sk + BN - 1) / BN;
        int scanBegin = 0, scanEnd = blocks;
        while (scanBegin < scanEnd && M::hides(q0, q0 + BM, (long long)scanBegin * BN, (long long)(scanBegin + 1) * BN, kEnv))
          ++scanBegin;
        while (scanEnd > scanBegin && M::hides(q0, q0 + BM, (long long)(scanEnd - 1) * BN, (long long)scanEnd * BN, kEnv))
          --scanEnd;
        const int b = M::key_block_begin(q0, BM, BN, Sk, 0, kEnv), e = M::key_block_end(q0, BM, BN, Sk, 0, kEnv);
        narrowerOrEqual = narrowerOrEqual && b >= scanBegin && (e <= scanEnd || scanBegin == scanEnd);
        equal = equal && (b == scanBegin || scanBegin == scanEnd) && (e == scanEnd || scanBegin == scanEnd);
      }
  check(narrowerOrEqual && equal, std::string(name) + ": galloping key bounds equal the block-by-block scan");
}

struct Band {  // (q >= k) & (q - k <= 1024): a causal sliding window as a modifier
  template <class D>
  static FLASHC_MASK_FN typename D::Bool visible(const MaskEnv&, typename D::Int, typename D::Int, typename D::Int q,
                                                 typename D::Int k) {
    return D::and_(D::ge(q, k), D::le(D::sub(q, k), D::constant(1024)));
  }
};

// A base range that is empty (begin > end, as a Window's bounds can be) stays empty.
void testEmptyBaseRange() {
  struct Reversed : AllKeys {
    static int key_block_begin(int, int, int, int, int) { return 3; }
    static int key_block_end(int, int, int, int, int) { return 2; }
  };
  using M = ModMask<Reversed, Causal>;
  const int b = M::key_block_begin(64, 64, 64, 128, 0, kEnv), e = M::key_block_end(64, 64, 64, 128, 0, kEnv);
  check(e <= b, "an empty base range (blocks [3, 2)) gives no blocks", std::to_string(b) + ".." + std::to_string(e));
}

void testEmptyBlocks() {
  using M = ModMask<AllKeys, Chunked>;
  // Rows 0..15 see keys 0..23 only: key blocks of 16 from 2 on are trimmed.
  check(M::key_block_begin(0, 16, 16, 100, 0, kEnv) == 0 && M::key_block_end(0, 16, 16, 100, 0, kEnv) == 2,
        "chunked: rows 0-15 see key blocks [0, 2)");
  check(M::key_block_begin(48, 16, 16, 100, 0, kEnv) == 3 && M::key_block_end(48, 16, 16, 100, 0, kEnv) == 5,
        "chunked: rows 48-63 (chunks 2) see key blocks [3, 5)");
  using P = ModMask<AllKeys, PrefixLm>;
  check(!P::needs_mask(64, 16, 0, 16, 1000, 0, kEnv), "prefix-LM: a block of the prefix is visible whole (no element mask)");
  check(!P::needs_mask(64, 16, 16, 16, 1000, 0, kEnv), "prefix-LM: keys 16-31 for rows 64-79 (prefix or causal) visible whole");
  check(P::needs_mask(0, 16, 16, 16, 1000, 0, kEnv), "prefix-LM: keys 16-31 for rows 0-15 (past the prefix, after the row) masked");
  check(P::key_block_end(0, 16, 16, 1000, 0, kEnv) == 2, "prefix-LM: rows 0-15 see key blocks [0, 2) (prefix and diagonal)");
}

// ------------------------------------------------------------------ modifiers that read tensors
struct Documents {  // t0[q] == t0[k]
  static constexpr int kTensors = 1;
  template <class D>
  static FLASHC_MASK_FN typename D::Bool visible(const MaskEnv& env, typename D::Int, typename D::Int, typename D::Int q,
                                                 typename D::Int k) {
    return D::eq(D::read(env.tensor[0], q), D::read(env.tensor[0], k));
  }
};

// Reads: the exact domain's element (0 outside the shape, any stride), the range domain's [min, max] of the
// elements of a range (with 0 where it leaves the shape; every i32 past kMaxScan elements), and a document mask's
// block classification against brute force.
void testTensorReads() {
  std::mt19937_64 rng(5);
  std::vector<int> ids(300);
  int id = 0;
  for (int &v : ids) {
    if (rng() % 40 == 0) id += 1 + int(rng() % 3) - (rng() % 7 == 0 ? 5 : 0);  // runs, sometimes going back
    v = id;
  }
  MaskTensor docs{ids.data(), {300, 1, 1, 1}, {1, 0, 0, 0}};
  using E = ExactIndex;
  check(E::read(&docs, 7) == ids[7] && E::read(&docs, -1) == 0 && E::read(&docs, 300) == 0,
        "exact reads: the element, 0 outside");
  // A [5, 6] view with row stride 9 (every other element of a [5, 9] buffer's first 6 columns).
  std::vector<int> buffer(45);
  for (int i = 0; i < 45; ++i) buffer[i] = int(rng() % 100) - 50;
  MaskTensor grid{buffer.data(), {5, 6, 1, 1}, {9, 1, 0, 0}};
  check(E::read(&grid, 2, 3) == buffer[2 * 9 + 3] && E::read(&grid, 2, 6) == 0 && E::read(&grid, 5, 0) == 0,
        "exact reads of a strided rank-2 tensor");
  bool sound = true, exact = true;
  std::string why;
  for (int trial = 0; trial < 3000; ++trial) {
    long long lo = (long long)(rng() % 340) - 20, hi = lo + (long long)(rng() % 80);
    const Range r = IndexRange::read(&docs, IndexRange::make(lo, hi));
    long long mn = LLONG_MAX, mx = LLONG_MIN;
    for (long long p = lo; p <= hi; ++p) {
      const long long v = E::read(&docs, p);
      mn = std::min(mn, v), mx = std::max(mx, v);
    }
    if (r.any || r.lo > mn || r.hi < mx) sound = false, why = std::to_string(lo) + ".." + std::to_string(hi);
    if (r.lo != mn || r.hi != mx) exact = false;
  }
  check(sound && exact, "range reads hold every element of the range, and no more (0 where it leaves the shape)", why);
  bool gridSound = true;
  for (int trial = 0; trial < 2000; ++trial) {
    long long r0 = (long long)(rng() % 7) - 1, r1 = r0 + (long long)(rng() % 3);
    long long c0 = (long long)(rng() % 8) - 1, c1 = c0 + (long long)(rng() % 4);
    const Range g = IndexRange::read(&grid, IndexRange::make(r0, r1), IndexRange::make(c0, c1));
    for (long long a = r0; a <= r1; ++a)
      for (long long b = c0; b <= c1; ++b) {
        const long long v = E::read(&grid, a, b);
        gridSound = gridSound && !g.any && g.lo <= v && v <= g.hi;
      }
  }
  check(gridSound, "rank-2 range reads (strided, past either edge) hold every element");
  std::vector<int> zeros(IndexRange::kMaxScan + 100, 0);
  MaskTensor big{zeros.data(), {(long long)zeros.size(), 1, 1, 1}, {1, 0, 0, 0}};
  const Range wide = IndexRange::read(&big, IndexRange::make(0, IndexRange::kMaxScan + 10));
  const Range narrow = IndexRange::read(&big, IndexRange::make(0, IndexRange::kMaxScan - 1));
  check(wide.lo <= -2147483648LL && wide.hi >= 2147483647LL && narrow.lo == 0 && narrow.hi == 0,
        "a range past kMaxScan elements is every i32 (not scanned), one of kMaxScan is scanned");
  // The document mask's blocks: hidden / shown only where brute force agrees.
  MaskEnv env;
  env.tensor[0] = &docs;
  using M = ModMask<AllKeys, Documents>;
  bool classOk = true;
  for (int q0 = 0; q0 < 300; q0 += 16)
    for (int k0 = 0; k0 < 300; k0 += 16) {
      bool anyVisible = false, anyHidden = false;
      for (int q = q0; q < q0 + 16; ++q)
        for (int k = k0; k < k0 + 16; ++k) {
          const bool h = M::hidden(q, k, 1 << 20, 0, env);
          anyVisible |= !h, anyHidden |= h;
        }
      const Tri t = M::classify(q0, q0 + 16, k0, k0 + 16, env);
      classOk = classOk && (t.can_true || !anyVisible) && (t.can_false || !anyHidden);
    }
  check(classOk, "document mask: a block classified hidden or shown whole is");

  // The parts a block needs (mask_parts) on causal documents: where a part is left out, it hides nothing in the
  // block, so the part the kernels evaluate alone (ModifierOnly or the window) hides exactly what both do.
  using C = ModMask<HostCausal, Documents>;
  static_assert(C::kSplitParts && !M::kSplitParts, "split parts: a modifier that reads tensors on a causal mask only");
  bool partsOk = true;
  int modifierOnly = 0, windowOnly = 0;
  for (int q0 = 0; q0 < 300; q0 += 16)
    for (int k0 = 0; k0 < 300; k0 += 16) {
      const int parts = C::mask_parts(q0, 16, k0, 16, 300, 0, env);
      modifierOnly += parts == kMaskModifier, windowOnly += parts == kMaskWindow;
      for (int q = q0; q < q0 + 16; ++q)
        for (int k = k0; k < k0 + 16; ++k) {
          const bool both = C::hidden(q, k, 300, 0, env);
          const bool part = parts == kMaskModifier ? C::ModifierOnly::hidden(q, k, 300, 0, env)
                            : parts == kMaskWindow ? C::BaseMask::hidden(q, k, 300, 0)
                                                   : both;
          partsOk = partsOk && (parts != 0 || !both) && part == both;
        }
    }
  check(partsOk && modifierOnly > 0 && windowOnly > 0,
        "causal documents: a block's parts hide what the whole mask does (" + std::to_string(modifierOnly) +
            " blocks the modifier alone, " + std::to_string(windowOnly) + " the window alone)");
}

} // namespace

// ExactIndex32 (the emitter's pick where IndexBounds proves every value fits an int) gives ExactIndex's results on
// such values: every op over operands in int range whose exact result fits, signs and zero divisors included, and the
// modifiers above element by element.
template <class Mod>
bool sameIn32Bits() {
  for (int q = 0; q < 200; ++q)
    for (int k = 0; k < 200; ++k)
      if (Mod::template visible<ExactIndex32>(kEnv, 0, 0, q, k) != Mod::template visible<ExactIndex>(kEnv, 0, 0, q, k))
        return false;
  return true;
}

void testExactIndex32() {
  using E = ExactIndex;
  using N = ExactIndex32;
  const long long values[] = {0, 1, -1, 2, -2, 3, -3, 7, -7, 24, -24, 1000, -1000, 65535, -65536, 2147483647LL,
                              -2147483647LL - 1};
  int mismatches = 0, compared = 0;
  for (long long a : values)
    for (long long b : values) {
      auto fits = [](long long v) { return v >= INT32_MIN && v <= INT32_MAX; };
      const long long exact[] = {E::add(a, b), E::sub(a, b), E::mul(a, b), E::div(a, b), E::floor_div(a, b),
                                 E::ceil_div(a, b), E::rem(a, b), E::min(a, b), E::max(a, b)};
      const long long narrow[] = {N::add(int(a), int(b)), N::sub(int(a), int(b)), N::mul(int(a), int(b)),
                                  N::div(int(a), int(b)), N::floor_div(int(a), int(b)), N::ceil_div(int(a), int(b)),
                                  N::rem(int(a), int(b)), N::min(int(a), int(b)), N::max(int(a), int(b))};
      for (int i = 0; i < 9; ++i)
        if (fits(exact[i])) {  // (IndexBounds admits 32 bits only where no value leaves an int)
          ++compared;
          mismatches += exact[i] != narrow[i];
        }
      mismatches += (E::lt(a, b) != N::lt(int(a), int(b))) + (E::eq(a, b) != N::eq(int(a), int(b)));
    }
  check(compared > 2000 && mismatches == 0,
        "ExactIndex32 agrees with ExactIndex wherever the result fits an int (" + std::to_string(compared) +
            " results, " + std::to_string(mismatches) + " mismatches)");
  check(sameIn32Bits<Causal>() && sameIn32Bits<PrefixLm>() && sameIn32Bits<Chunked>() && sameIn32Bits<Strided>(),
        "the modifiers give the same elements in 32 bits");
}

// Reads in 32 bits (offsets in an int, the last dimension's stride 1: the manifest's index32 and contiguous) give the
// 64-bit reads' values, 0 wherever a position leaves the shape (negative or past it, in any dimension).
void testReads32() {
  std::vector<int> ids(100), table(3 * 9, -5);  // table: [3, 7] with rows 9 apart (the padding never read)
  for (int i = 0; i < 100; ++i) ids[i] = i / 7 - 3;
  for (int r = 0; r < 3; ++r)
    for (int c = 0; c < 7; ++c) table[r * 9 + c] = 100 * r + c + 1;
  const MaskTensor t1{ids.data(), {100, 1, 1, 1}, {1, 0, 0, 0}};
  const MaskTensor t2{table.data(), {3, 7, 1, 1}, {9, 1, 0, 0}};
  int mismatches = 0, compared = 0;
  for (int p = -3; p < 110; ++p, ++compared)
    mismatches += ExactIndex32::read(&t1, p) != ExactIndex::read(&t1, static_cast<long long>(p));
  for (int r = -2; r < 5; ++r)
    for (int c = -2; c < 10; ++c, ++compared)
      mismatches += ExactIndex32::read(&t2, r, c) != ExactIndex::read(&t2, static_cast<long long>(r), static_cast<long long>(c));
  check(mismatches == 0 && ExactIndex32::read(&t2, 2, 6) == 207 && ExactIndex32::read(&t2, 1, 7) == 0 &&
            ExactIndex32::read(&t1, -1) == 0,
        "32-bit reads agree with 64-bit ones, 0 outside the shape (" + std::to_string(compared) + " positions, " +
            std::to_string(mismatches) + " mismatches)");
}

int main() {
  testExactRules();
  testExactIndex32();
  testReads32();
  testOpsExhaustively();
  testRandomExpressions();
  testModMask<Causal>("causal", true);
  testModMask<PrefixLm>("prefix-LM", false);
  testModMask<Chunked>("chunked", false);
  testModMask<Strided>("strided", false);
  testModMask<Band>("band", false);
  testGallopingMatchesScan<Causal>("causal");
  testGallopingMatchesScan<Band>("band");
  testGallopingMatchesScan<Chunked>("chunked");
  testGallopingMatchesScan<PrefixLm>("prefix-LM");
  testEmptyBlocks();
  testEmptyBaseRange();
  testTensorReads();
  return checkSummary();
}
