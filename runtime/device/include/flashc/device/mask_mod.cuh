// Mask modifiers (tile.mask_mod): which keys a query sees, as an index function of the batch b, the
// query head h, the query row q and the key row k, which may read i32 tensors (a per-token document
// id). The compiler prints each modifier as a struct with one function template,
//   template <class D> static FLASHC_MASK_FN typename D::Bool visible(const MaskEnv& env,
//       typename D::Int b, typename D::Int h, typename D::Int q, typename D::Int k);
// (env: the tensors it reads, D::read(env.tensor[i], positions...)) and the constants
//   kTensors       how many tensors it reads (0: index arithmetic only);
//   kUsesBatch, kUsesHead   whether it reads b / h (the block-class table has one slice per value then),
// written once over a value domain D and evaluated in two:
//   ExactIndex   one (q, k): 64-bit integers and bools, the semantics of IndexFunction.h (division
//                and remainder by 0 give 0, arithmetic wraps);
//   IndexRange   a whole block at once, by interval arithmetic: q and k range over the block's rows
//                and columns, every integer is a range [lo, hi] holding its value for every (q, k) of
//                the block, every condition says whether it can be true and whether it can be false.
// The ranges are sound (a value the exact domain can take is inside its range), so a block whose
// condition cannot be true is hidden whole and one whose condition cannot be false is visible whole.
// A read outside a tensor's shape gives 0 in both domains (IndexFunction.h's rule).
// ModMask<Base, Mod> adds a modifier to a mask spec (Window in mask.cuh) with the same interface
// plus a trailing MaskEnv: the loop bounds skip the leading and trailing blocks the modifier hides
// whole, and needs_mask is false where it shows a block whole (blocks it hides whole inside the
// bounds are masked, not skipped). A modifier that reads tensors is classified instead by a
// block-class table (mask_blocks.cuh), which skips hidden blocks anywhere.
//
// Plain C++ on the host (the runtime's unit test checks the ranges' soundness by brute force).
#pragma once

#if defined(__CUDACC__)
#define FLASHC_MASK_FN __host__ __device__ __forceinline__
#else
#define FLASHC_MASK_FN inline
#endif

namespace flashc {
namespace device {

// An i32 tensor a modifier reads: the layout of flashc::TensorArg (the kernel ABI) with typed data.
struct MaskTensor {
  const int* data;
  long long shape[4];
  long long stride[4];
};

// What a modifier sees besides (q, k): the block's batch and query head, and its tensors.
struct MaskEnv {
  int batch = 0, head = 0;
  const MaskTensor* tensor[4] = {nullptr, nullptr, nullptr, nullptr};
};
// The same tensors seen from another batch and query head (a tile's or a step's).
FLASHC_MASK_FN MaskEnv with_batch_head(MaskEnv env, int batch, int head) {
  env.batch = batch;
  env.head = head;
  return env;
}

// A plain load: __ldg is an inline asm the compiler may not merge, and the element masks rely on it merging the
// reads of one row or column across elements.
FLASHC_MASK_FN int mask_tensor_element(const MaskTensor* t, long long offset) { return t->data[offset]; }

// ---------------------------------------------------------------------------- one (q, k)
// The regions' 64-bit arithmetic (ExactIndex), or 32-bit (ExactIndex32) where the emitter proved every value of
// the region fits an int (IndexBounds.h: then both give the same results, the 32-bit one in fewer instructions).
template <class I, class U>
struct ExactIndexOf {
  using Int = I;
  using Bool = bool;
  static FLASHC_MASK_FN Int constant(long long v) { return static_cast<Int>(v); }
  static FLASHC_MASK_FN Bool boolean(bool v) { return v; }
  static FLASHC_MASK_FN Int wrap(U v) { return static_cast<Int>(v); }
  static FLASHC_MASK_FN Int add(Int a, Int b) { return wrap(static_cast<U>(a) + static_cast<U>(b)); }
  static FLASHC_MASK_FN Int sub(Int a, Int b) { return wrap(static_cast<U>(a) - static_cast<U>(b)); }
  static FLASHC_MASK_FN Int mul(Int a, Int b) { return wrap(static_cast<U>(a) * static_cast<U>(b)); }
  static FLASHC_MASK_FN Int div(Int a, Int b) {  // arith.divsi: toward zero
    return b == 0 ? 0 : (b == -1 ? sub(0, a) : a / b);
  }
  static FLASHC_MASK_FN Int floor_div(Int a, Int b) {
    if (b == 0) return 0;
    if (b == -1) return sub(0, a);
    const Int q = a / b;
    return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
  }
  static FLASHC_MASK_FN Int ceil_div(Int a, Int b) {
    if (b == 0) return 0;
    if (b == -1) return sub(0, a);
    const Int q = a / b;
    return (a % b != 0 && ((a < 0) == (b < 0))) ? q + 1 : q;
  }
  static FLASHC_MASK_FN Int rem(Int a, Int b) { return (b == 0 || b == -1) ? 0 : a % b; }  // sign of a
  static FLASHC_MASK_FN Int min(Int a, Int b) { return a < b ? a : b; }
  static FLASHC_MASK_FN Int max(Int a, Int b) { return a < b ? b : a; }
  static FLASHC_MASK_FN Bool eq(Int a, Int b) { return a == b; }
  static FLASHC_MASK_FN Bool ne(Int a, Int b) { return a != b; }
  static FLASHC_MASK_FN Bool lt(Int a, Int b) { return a < b; }
  static FLASHC_MASK_FN Bool le(Int a, Int b) { return a <= b; }
  static FLASHC_MASK_FN Bool gt(Int a, Int b) { return a > b; }
  static FLASHC_MASK_FN Bool ge(Int a, Int b) { return a >= b; }
  static FLASHC_MASK_FN Bool and_(Bool a, Bool b) { return a && b; }
  static FLASHC_MASK_FN Bool or_(Bool a, Bool b) { return a || b; }
  static FLASHC_MASK_FN Bool xor_(Bool a, Bool b) { return a != b; }
  template <class T>
  static FLASHC_MASK_FN T select(Bool c, T a, T b) { return c ? a : b; }
  // tensor.extract: t[p0, ...] (one position per dimension), 0 outside the shape. (Recursion over the
  // positions rather than an array: no stack frame in the kernels that mask.)
  // (Without branches: every load and product of one position is the same code, which the compiler merges.)
  static FLASHC_MASK_FN bool locate(const MaskTensor*, int, long long&) { return true; }
  template <class... P>
  static FLASHC_MASK_FN bool locate(const MaskTensor* t, int d, long long& offset, long long p, P... rest) {
    const bool inside = (p >= 0) & (p < t->shape[d]);
    offset += p * t->stride[d];
    return locate(t, d + 1, offset, rest...) & inside;
  }
  // The load is unconditional (element 0 where the position is outside), so that the unrolled element masks
  // read each row's and column's value once: conditional, every element loaded its own (256 loads a thread in
  // the D = 128 forward, 60 % of the document mask's time; session 18 call 5). A tensor with no element is
  // never read: mask_env gives it a one-element zero tensor.
  // The 32-bit domain's: offsets in 32 bits (the manifest marks a modifier's tensors `index32`: the runtime refuses
  // one whose elements reach 2^31), the last dimension's stride 1 (`contiguous`), and one unsigned compare a bound.
  // (The document mask's column reads: 15 PTX instructions each in 64 bits, session 33.)
  // (Unsigned: a position outside the shape may wrap the product; its offset is not used.)
  static FLASHC_MASK_FN bool locate32(const MaskTensor*, int, int, unsigned&) { return true; }
  template <class... P>
  static FLASHC_MASK_FN bool locate32(const MaskTensor* t, int d, int last, unsigned& offset, int p, P... rest) {
    const unsigned u = static_cast<unsigned>(p);
    const bool inside = u < static_cast<unsigned>(t->shape[d]);
    offset += d == last ? u : u * static_cast<unsigned>(t->stride[d]);
    return locate32(t, d + 1, last, offset, rest...) & inside;
  }
  template <class... P>
  static FLASHC_MASK_FN Int read(const MaskTensor* t, P... positions) {
    bool inside;
    long long at;
    if constexpr (sizeof(Int) == 4) {
      unsigned offset = 0;
      inside = locate32(t, 0, static_cast<int>(sizeof...(P)) - 1, offset, static_cast<int>(positions)...);
      at = offset;
    } else {
      long long offset = 0;
      inside = locate(t, 0, offset, static_cast<long long>(positions)...);
      at = offset;
    }
    const Int value = mask_tensor_element(t, inside ? at : 0);
    return inside ? value : 0;
  }
};
using ExactIndex = ExactIndexOf<long long, unsigned long long>;
using ExactIndex32 = ExactIndexOf<int, unsigned>;

// A modifier's element-mask domain: its `ElementDomain` (the emitter's choice), else 64-bit. (VoidOf: void for any
// type that exists, to pick a specialisation by a member type.)
template <class T>
struct VoidOf {
  using type = void;
};
template <class Mod, class = void>
struct ElementDomainOf {
  using type = ExactIndex;
};
template <class Mod>
struct ElementDomainOf<Mod, typename VoidOf<typename Mod::ElementDomain>::type> {
  using type = typename Mod::ElementDomain;
};

// ---------------------------------------------------------------------------- a whole block
// An integer range [lo, hi]. Magnitudes stay below 2^61: anything that could leave that (large
// constants, products of large ranges) becomes `any`, which stands for every value and makes every
// comparison undecided, so wrapping in the exact domain never escapes the analysis.
struct Range {
  long long lo, hi;
  bool any;
};

// Whether a condition can be true and whether it can be false over the block.
struct Tri {
  bool can_true, can_false;
};

struct IndexRange {
  using Int = Range;
  using Bool = Tri;
  static constexpr long long kLimit = 1LL << 61;

  static FLASHC_MASK_FN Int everything() { return Int{-kLimit, kLimit, true}; }
  static FLASHC_MASK_FN Int make(long long lo, long long hi) {
    if (lo < -kLimit || hi > kLimit || lo > hi) return everything();
    return Int{lo, hi, false};
  }
  static FLASHC_MASK_FN Int constant(long long v) { return make(v, v); }
  static FLASHC_MASK_FN Bool boolean(bool v) { return Bool{v, !v}; }
  static FLASHC_MASK_FN long long lo4(long long a, long long b, long long c, long long d) {
    long long m = a < b ? a : b;
    m = m < c ? m : c;
    return m < d ? m : d;
  }
  static FLASHC_MASK_FN long long hi4(long long a, long long b, long long c, long long d) {
    long long m = a > b ? a : b;
    m = m > c ? m : c;
    return m > d ? m : d;
  }
  static FLASHC_MASK_FN long long magnitude(Int a) {
    const long long l = a.lo < 0 ? -a.lo : a.lo, h = a.hi < 0 ? -a.hi : a.hi;
    return l > h ? l : h;
  }

  // Sums of two values below 2^61 stay below 2^62: no overflow; make() catches what leaves 2^61.
  static FLASHC_MASK_FN Int add(Int a, Int b) { return (a.any || b.any) ? everything() : make(a.lo + b.lo, a.hi + b.hi); }
  static FLASHC_MASK_FN Int sub(Int a, Int b) { return (a.any || b.any) ? everything() : make(a.lo - b.hi, a.hi - b.lo); }
  static FLASHC_MASK_FN Int mul(Int a, Int b) {
    if (a.any || b.any) return everything();
    // Factors below 2^30 each keep products below 2^60.
    if (magnitude(a) >= (1LL << 30) || magnitude(b) >= (1LL << 30)) return everything();
    const long long p = a.lo * b.lo, q = a.lo * b.hi, r = a.hi * b.lo, s = a.hi * b.hi;
    return make(lo4(p, q, r, s), hi4(p, q, r, s));
  }
  // Quotients: with the divisor's sign fixed and 0 excluded, each of divsi, floordivsi and
  // ceildivsi is monotone in each argument, so the extremes are at the corners. A divisor range that
  // holds 0 or -1 (defined as 0 and -a) bounds the quotient by the dividend's magnitude.
  template <class Op>
  static FLASHC_MASK_FN Int quotient(Int a, Int b, Op op) {
    if (a.any || b.any) return everything();
    if (b.lo <= 0 && b.hi >= -1) {
      const long long m = magnitude(a);
      return make(-m, m);
    }
    const long long p = op(a.lo, b.lo), q = op(a.lo, b.hi), r = op(a.hi, b.lo), s = op(a.hi, b.hi);
    return make(lo4(p, q, r, s), hi4(p, q, r, s));
  }
  struct DivOp { FLASHC_MASK_FN long long operator()(long long a, long long b) const { return ExactIndex::div(a, b); } };
  struct FloorDivOp { FLASHC_MASK_FN long long operator()(long long a, long long b) const { return ExactIndex::floor_div(a, b); } };
  struct CeilDivOp { FLASHC_MASK_FN long long operator()(long long a, long long b) const { return ExactIndex::ceil_div(a, b); } };
  static FLASHC_MASK_FN Int div(Int a, Int b) { return quotient(a, b, DivOp()); }
  static FLASHC_MASK_FN Int floor_div(Int a, Int b) { return quotient(a, b, FloorDivOp()); }
  static FLASHC_MASK_FN Int ceil_div(Int a, Int b) { return quotient(a, b, CeilDivOp()); }
  // remsi: |r| < |b| with the dividend's sign (0 for b in {0, -1}), and |r| <= |a|. A constant
  // positive divisor and a non-negative dividend range shorter than it that does not wrap past a
  // multiple give the exact range.
  static FLASHC_MASK_FN Int rem(Int a, Int b) {
    if (b.any) return everything();
    long long bound = magnitude(b) - 1;
    if (bound < 0) bound = 0;
    if (a.any) return make(-bound, bound);
    if (b.lo == b.hi && b.lo > 0 && a.lo >= 0 && a.hi - a.lo < b.lo && a.lo % b.lo <= a.hi % b.lo)
      return make(a.lo % b.lo, a.hi % b.lo);
    const long long m = magnitude(a);
    if (m < bound) bound = m;
    return make(a.lo >= 0 ? 0 : -bound, a.hi <= 0 ? 0 : bound);
  }
  static FLASHC_MASK_FN Int min(Int a, Int b) {
    if (a.any || b.any) return everything();
    return make(a.lo < b.lo ? a.lo : b.lo, a.hi < b.hi ? a.hi : b.hi);
  }
  static FLASHC_MASK_FN Int max(Int a, Int b) {
    if (a.any || b.any) return everything();
    return make(a.lo > b.lo ? a.lo : b.lo, a.hi > b.hi ? a.hi : b.hi);
  }
  static FLASHC_MASK_FN Bool undecided() { return Bool{true, true}; }
  static FLASHC_MASK_FN Bool lt(Int a, Int b) {
    if (a.any || b.any) return undecided();
    return Bool{a.lo < b.hi, a.hi >= b.lo};
  }
  static FLASHC_MASK_FN Bool le(Int a, Int b) {
    if (a.any || b.any) return undecided();
    return Bool{a.lo <= b.hi, a.hi > b.lo};
  }
  static FLASHC_MASK_FN Bool gt(Int a, Int b) { return lt(b, a); }
  static FLASHC_MASK_FN Bool ge(Int a, Int b) { return le(b, a); }
  static FLASHC_MASK_FN Bool eq(Int a, Int b) {
    if (a.any || b.any) return undecided();
    const bool overlap = a.lo <= b.hi && b.lo <= a.hi;
    const bool single = a.lo == a.hi && b.lo == b.hi && a.lo == b.lo;
    return Bool{overlap, !single};
  }
  static FLASHC_MASK_FN Bool ne(Int a, Int b) {
    const Bool e = eq(a, b);
    return Bool{e.can_false, e.can_true};
  }
  static FLASHC_MASK_FN Bool and_(Bool a, Bool b) { return Bool{a.can_true && b.can_true, a.can_false || b.can_false}; }
  static FLASHC_MASK_FN Bool or_(Bool a, Bool b) { return Bool{a.can_true || b.can_true, a.can_false && b.can_false}; }
  static FLASHC_MASK_FN Bool xor_(Bool a, Bool b) {
    return Bool{(a.can_true && b.can_false) || (a.can_false && b.can_true),
                (a.can_true && b.can_true) || (a.can_false && b.can_false)};
  }
  static FLASHC_MASK_FN Int join(Int a, Int b) {
    if (a.any || b.any) return everything();
    return make(a.lo < b.lo ? a.lo : b.lo, a.hi > b.hi ? a.hi : b.hi);
  }
  static FLASHC_MASK_FN Bool join(Bool a, Bool b) { return Bool{a.can_true || b.can_true, a.can_false || b.can_false}; }
  template <class T>
  static FLASHC_MASK_FN T select(Bool c, T a, T b) {
    if (!c.can_false) return a;
    if (!c.can_true) return b;
    return join(a, b);
  }
  // tensor.extract over a range of positions: the smallest and largest element read, by a scan of
  // at most kMaxScan elements (beyond that: every i32 value), and 0 where a position may fall outside.
  // (The scan steps an odometer over the positions: no division in the loop; the block-class kernel spends
  // its time here.)
  static constexpr long long kMaxScan = 4096;
  template <class... P>
  static FLASHC_MASK_FN Int read(const MaskTensor* t, P... positions) {
    constexpr int kRank = static_cast<int>(sizeof...(P));
    const Range p[] = {positions...};
    long long lo[kRank], count[kRank], total = 1;
    bool outside = false;
    for (int d = 0; d < kRank; ++d) {
      if (p[d].any) return make(-2147483648LL, 2147483647LL);
      lo[d] = p[d].lo < 0 ? 0 : p[d].lo;
      const long long hi = p[d].hi >= t->shape[d] ? t->shape[d] - 1 : p[d].hi;
      outside = outside || p[d].lo < 0 || p[d].hi >= t->shape[d];
      count[d] = hi >= lo[d] ? hi - lo[d] + 1 : 0;
      total *= count[d];
      if (total > kMaxScan) return make(-2147483648LL, 2147483647LL);
    }
    long long mn = outside ? 0 : 2147483647LL, mx = outside ? 0 : -2147483648LL;
    if (total == 0) return make(mn, mx);
    if constexpr (kRank == 1) {
      const long long first = lo[0] * t->stride[0], stride = t->stride[0];
      long long e = 0;
#if defined(__CUDA_ARCH__)
      // Contiguous and 16-byte aligned (a per-token id): four elements a load, four loads in flight, so that the
      // block-class kernel's scans are not a chain of 4-byte loads (28 µs for the 13-document mask at 16k, session 33).
      const int* at = t->data + first;
      if (stride == 1 && (reinterpret_cast<unsigned long long>(at) & 15) == 0) {
        int lo4 = 2147483647, hi4 = -2147483647 - 1;
        for (; e + 16 <= count[0]; e += 16) {
          int4 w[4];
#pragma unroll
          for (int i = 0; i < 4; ++i) w[i] = reinterpret_cast<const int4*>(at + e)[i];
#pragma unroll
          for (int i = 0; i < 4; ++i) {
            lo4 = ::min(lo4, ::min(::min(w[i].x, w[i].y), ::min(w[i].z, w[i].w)));
            hi4 = ::max(hi4, ::max(::max(w[i].x, w[i].y), ::max(w[i].z, w[i].w)));
          }
        }
        if (e > 0) {
          mn = lo4 < mn ? lo4 : mn;
          mx = hi4 > mx ? hi4 : mx;
        }
      }
#endif
      for (; e < count[0]; ++e) {
        const long long v = mask_tensor_element(t, first + e * stride);
        mn = v < mn ? v : mn;
        mx = v > mx ? v : mx;
      }
      return make(mn, mx);
    } else {
      long long at[kRank], offset = 0;
      for (int d = 0; d < kRank; ++d) at[d] = 0, offset += lo[d] * t->stride[d];
      for (long long e = 0; e < total; ++e) {
        const long long v = mask_tensor_element(t, offset);
        mn = v < mn ? v : mn;
        mx = v > mx ? v : mx;
        for (int d = kRank - 1; d >= 0; --d) {  // the next position: the last dimension fastest
          offset += t->stride[d];
          if (++at[d] < count[d]) break;
          offset -= count[d] * t->stride[d];
          at[d] = 0;
        }
      }
      return make(mn, mx);
    }
  }
};

// Mod::kTensors where the modifier has it (the printed ones do), else 0.
template <class T>
struct MaskVoid {
  using type = void;
};
template <class Mod, class = void>
struct ModTensors {
  static constexpr int value = 0;
};
template <class Mod>
struct ModTensors<Mod, typename MaskVoid<decltype(Mod::kTensors)>::type> {
  static constexpr int value = Mod::kTensors;
};

// ---------------------------------------------------------------------------- the mask spec
// The parts of a mask a block needs (a mask spec's mask_parts, block-uniform): its window's (the window's bounds and
// the key limit) and its modifier's; 0 where it shows the block whole (it runs unmasked). A block that needs one part
// evaluates only that one (mask.cuh's mask_parts).
enum : int { kMaskWindow = 1, kMaskModifier = 2 };

// Base's mask (a Window) and modifier Mod together: a key is visible when both let it be.
// Query rows [q0, q0 + BM) and key columns [k0, k0 + BN) of a block, unclipped (rows past the
// queries or keys past the limit only widen the ranges: still sound).
template <class Base, class Mod>
struct ModMask {
  static constexpr bool kElementMaskInLoop = true;
  // Own code paths for the parts (mask.cuh's mask_parts: +33 % SASS in the document forward) only where both are
  // worth skipping: a modifier that reads tensors (an arithmetic one costs a few instructions an element, about what
  // skipping the window saves) on a window or causal mask (with none, the window's part is the key limit alone).
  static constexpr bool kSplitParts = ModTensors<Mod>::value > 0 && (Base::L >= 0 || Base::R >= 0);
  using BaseMask = Base;
  // The modifier at one element, in its element domain.
  static FLASHC_MASK_FN bool visible(int i, int j, const MaskEnv& env) {
    return Mod::template visible<typename ElementDomainOf<Mod>::type>(env, env.batch, env.head, i, j);
  }
  // The modifier alone, as a mask spec: for a block whose window shows it whole (and no key past the limit).
  struct ModifierOnly {
    static FLASHC_MASK_FN bool hidden(int i, int j, int, int, const MaskEnv& env) { return !visible(i, j, env); }
  };

  static FLASHC_MASK_FN Tri classify(long long q0, long long q1, long long k0, long long k1, const MaskEnv& env) {
    return Mod::template visible<IndexRange>(env, IndexRange::constant(env.batch), IndexRange::constant(env.head),
                                             IndexRange::make(q0, q1 - 1), IndexRange::make(k0, k1 - 1));
  }
  // Whether the modifier hides every key of [k0, k1) from every query of [q0, q1).
  static FLASHC_MASK_FN bool hides(long long q0, long long q1, long long k0, long long k1, const MaskEnv& env) {
    return !classify(q0, q1, k0, k1, env).can_true;
  }
  // The first block of [begin, end) the modifier does not hide whole (`hidden(b, e)`: blocks [b, e) proven
  // hidden). A run of hidden blocks is found by doubling a range from its start, its end by halving: O(log n)
  // range tests, not one a block (a 16k sliding window's query block starts 100 key blocks in: a scan per block
  // cost 35 % of the forward, session 17 call 4). Only ranges proven hidden are skipped, so the search is sound
  // whatever the analysis's precision; a range it cannot decide is narrowed to single blocks.
  template <class Hidden>
  static FLASHC_MASK_FN int first_shown(int begin, int end, Hidden hidden) {
    if (begin >= end) return begin;  // an empty range stays empty (begin > end: the base's empty bounds)
    int lo = begin;
    while (lo < end) {
      int step = 1;
      while (lo + step <= end && hidden(lo, lo + step)) step *= 2;
      if (step == 1) return lo;
      // [lo, lo + step / 2) is hidden; the run ends before lo + step (or at end): halve the rest.
      lo += step / 2;
      int hi = lo + step / 2 < end ? lo + step / 2 : end;
      while (hi - lo > 1) {
        const int mid = lo + (hi - lo) / 2;
        if (hidden(lo, mid)) lo = mid;
        else hi = mid;
      }
    }
    return end;
  }
  // One past the last block of [begin, end) the modifier does not hide whole.
  template <class Hidden>
  static FLASHC_MASK_FN int last_shown_end(int begin, int end, Hidden hidden) {
    if (begin >= end) return end;
    int hi = end;
    while (hi > begin) {
      int step = 1;
      while (hi - step >= begin && hidden(hi - step, hi)) step *= 2;
      if (step == 1) return hi;
      hi -= step / 2;
      int lo = hi - step / 2 > begin ? hi - step / 2 : begin;
      while (hi - lo > 1) {
        const int mid = lo + (hi - lo + 1) / 2;
        if (hidden(mid, hi)) hi = mid;
        else lo = mid;
      }
    }
    return begin;
  }

  static FLASHC_MASK_FN int clamp_offset(int offset, int num_queries, int num_keys) {
    return Base::clamp_offset(offset, num_queries, num_keys);
  }
  static FLASHC_MASK_FN bool hidden(int i, int j, int limit, int offset, const MaskEnv& env) {
    if constexpr (ModTensors<Mod>::value > 0) {
      // The modifier first, unconditionally: its reads then dominate the element's and are shared across elements.
      const bool shown = visible(i, j, env);
      return Base::hidden(i, j, limit, offset) || !shown;
    } else {  // (arithmetic alone: skipped where the window hides the element; evaluated always, +5 % at 16k)
      return Base::hidden(i, j, limit, offset) || !visible(i, j, env);
    }
  }
  // The parts of the block [q0, q0 + BM) x [k0, k0 + BN) that need the element mask (0: it runs unmasked).
  static FLASHC_MASK_FN int mask_parts(int q0, int BM, int k0, int BN, int limit, int offset, const MaskEnv& env) {
    return (Base::needs_mask(q0, BM, k0, BN, limit, offset) ? kMaskWindow : 0) |
           (classify(q0, q0 + BM, k0, k0 + BN, env).can_false ? kMaskModifier : 0);
  }
  static FLASHC_MASK_FN bool needs_mask(int q0, int BM, int k0, int BN, int limit, int offset, const MaskEnv& env) {
    return mask_parts(q0, BM, k0, BN, limit, offset, env) != 0;
  }
  // Key blocks [begin, end) (units of BN) the query rows [q0, q0 + BM) can see.
  static FLASHC_MASK_FN int key_block_begin(int q0, int BM, int BN, int limit, int offset, const MaskEnv& env) {
    auto keys_hidden = [&](int b, int e) {
      return hides(q0, q0 + (long long)BM, (long long)b * BN, (long long)e * BN, env);
    };
    return first_shown(Base::key_block_begin(q0, BM, BN, limit, offset), Base::key_block_end(q0, BM, BN, limit, offset),
                       keys_hidden);
  }
  static FLASHC_MASK_FN int key_block_end(int q0, int BM, int BN, int limit, int offset, const MaskEnv& env) {
    auto keys_hidden = [&](int b, int e) {
      return hides(q0, q0 + (long long)BM, (long long)b * BN, (long long)e * BN, env);
    };
    return last_shown_end(Base::key_block_begin(q0, BM, BN, limit, offset),
                          Base::key_block_end(q0, BM, BN, limit, offset), keys_hidden);
  }
  // Query blocks [begin, end) (units of BM) that see any key of [k0, k0 + BN).
  static FLASHC_MASK_FN int query_block_begin(int k0, int BN, int BM, int num_queries, int offset, const MaskEnv& env) {
    auto queries_hidden = [&](int b, int e) {
      return hides((long long)b * BM, (long long)e * BM, k0, k0 + (long long)BN, env);
    };
    return first_shown(Base::query_block_begin(k0, BN, BM, num_queries, offset),
                       Base::query_block_end(k0, BN, BM, num_queries, offset), queries_hidden);
  }
  static FLASHC_MASK_FN int query_block_end(int k0, int BN, int BM, int num_queries, int offset, const MaskEnv& env) {
    auto queries_hidden = [&](int b, int e) {
      return hides((long long)b * BM, (long long)e * BM, k0, k0 + (long long)BN, env);
    };
    return last_shown_end(Base::query_block_begin(k0, BN, BM, num_queries, offset),
                          Base::query_block_end(k0, BN, BM, num_queries, offset), queries_hidden);
  }
};

}  // namespace device
}  // namespace flashc
