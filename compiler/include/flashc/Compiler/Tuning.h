//===- Tuning.h - tuning spaces and the tuning table ----------*- C++ -*-===//
//
// The plan choices measured on a GPU rather than written as rules: each
// tunable kernel kind declares its tuning space (TuningSpace.cpp, part of the
// target model beside Target.cpp), `python -m flashc.tune` times the points of
// that space and writes the winners into a tuning table
// (compiler/tuning/<arch>.txt, compiled into flashc), and the plan passes read
// the table: a kernel whose key has an entry takes the entry's point, every
// other kernel the hand rules of Target.cpp. docs/tuning.md describes the
// format and the workflow.
//
//===----------------------------------------------------------------------===//
#ifndef FLASHC_COMPILER_TUNING_H
#define FLASHC_COMPILER_TUNING_H

#include "flashc/Compiler/Target.h"
#include "flashc/Compiler/TileKernels.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/ADT/StringRef.h"

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace flashc {

/// What a table entry is keyed by. `kind` is a tunable kernel kind
/// (tunableKinds()); `shape` the sizes that pick a plan: attention d<D> or
/// d<D>v<Dv>; the GEMMs m<M>n<N>k<K> with `?` for a dynamic size and -ta /
/// -tb / -acc for transposed operands and accumulation; the fused FFN and its
/// backward hidden kernel d<d>h<h>o<d_out>. `mask`: none, causal or window
/// (attention, with +softcap when scores are capped), "-" for the GEMMs.
struct TuningKey {
  std::string arch, kind, dtype, shape, mask;
  /// "sm_90a attention_forward bf16 d128 causal".
  std::string str() const;
};

/// The tunable kernel kinds, in the order docs/tuning.md lists them.
llvm::ArrayRef<llvm::StringLiteral> tunableKinds();

/// The key of a kernel built from recipe `spec` for `argTypes`, planned for
/// `target`; none for a kind that is not tuned (pre/postprocessing, column
/// sums, conversions, the deterministic backward's kernels).
std::optional<TuningKey> tuningKeyOf(const TargetDescription &target, mlir::Attribute spec,
                                     llvm::ArrayRef<mlir::Type> argTypes);

/// A point of a tuning space: plan fields and the schedule knobs later passes
/// read. A table entry may set only some fields (the others keep the hand
/// rule's); the points of a space set every field their kind has.
struct TuningPoint {
  /// attention_backward: which backward kernels flash-generate-backward builds
  /// under --backward-form=auto: "rows" or "transposed" (the Sᵀ form).
  std::optional<std::string> form;
  std::optional<mlir::tile::Strategy> strategy;
  std::optional<int64_t> blockM, blockN, blockK, warps, stages;
  /// Warp-specialised kernels: the consumer warpgroups take turns issuing
  /// their GEMMs (flash-warp-specialize).
  std::optional<bool> pingPong;
  /// GEMM kernels: row blocks a group of the tile order (flash-order-blocks).
  std::optional<int64_t> group;
  /// The warp-specialised attention forward: a persistent grid over pairs of
  /// query-row blocks (flash-order-blocks, #tile.grid_order<persistent>).
  std::optional<bool> persistent;
  /// The persistent GEMM at K <= 256: B's column block resident over a block's
  /// run of tiles (gemm_resident_b.cuh; flash-warp-specialize).
  std::optional<bool> residentB;
  /// The warp-specialised attention forward of a document modifier
  /// (`t[q] == t[k]`, DocumentIds.h): tiles aligned to each document's start
  /// where the ids are sorted (flash-tile launches the segment plan;
  /// #tile.attention segments). A kernel of the key whose modifier is not a
  /// document compare keeps its table walk.
  std::optional<bool> segments;

  /// "strategy=wgmma_ws_sm90 block_m=128 ..." in a fixed field order: the
  /// table's text form.
  std::string str() const;
  /// `plan` with this point's plan fields in place of its own.
  TilePlan applyTo(TilePlan plan) const;
  bool operator==(const TuningPoint &other) const { return str() == other.str(); }
};

/// The tuning space of the kernel built from `spec` for `argTypes` on
/// `target`: every point the tuner times, each with every field of its kind
/// set (hand rule first where it is a point of the space); empty for kinds
/// that are not tuned. Declared per kernel kind in TuningSpace.cpp.
std::vector<TuningPoint> tuningSpace(const TargetDescription &target, mlir::Attribute spec,
                                     llvm::ArrayRef<mlir::Type> argTypes);

/// The point a planned kernel was built at (its plan attributes, schedule and
/// grid order): the hand rule when no entry applied.
TuningPoint pointOf(mlir::tile::KernelOp kernel);

/// Whether `kernel` is a warp-specialised attention forward or backward main
/// kernel of a document modifier (`t[q] == t[k]`, DocumentIds.h) under a
/// causal mask or none (a score modifier too): the kernels a `segments` entry
/// changes. Its tuning space then has the point it was built at with the
/// other segment form too (flashc --print-tuning-space).
bool takesSegmentForm(mlir::tile::KernelOp kernel);

/// One line of a tuning table. Key fields other than arch and kind may be
/// `*` (any value); the most specific matching entry wins.
struct TuningEntry {
  TuningKey key;
  TuningPoint point;
  /// attention_forward: the entry serves key lengths up to this (SHAPE `d<D>@s<=N`): flash-plan-memory gives the
  /// op a second kernel of this plan for those lengths, the key's other plan serving the longer ones
  /// (#tile.run_if; docs/design/plans-by-sequence-length.md). None: every length.
  std::optional<int64_t> keysAtMost;
  /// The key as the table spells it ("sm_90a attention_forward bf16 d64@s<=4096 causal").
  std::string keyText() const;
  std::string file;
  int64_t line = 0;
  /// "<file>:<line>", as --emit=tile names it.
  std::string name() const;
};

class TuningTable {
public:
  /// Parses a table's `text`; `file` names it in entries and errors. On a
  /// malformed line, `error` says "<file>:<line>: <what is wrong>".
  static std::optional<TuningTable> parse(llvm::StringRef text, llvm::StringRef file,
                                          std::string &error);
  /// The most specific entry matching `key` (fewest `*`; the earlier line on
  /// a tie) that serves every key length, or null.
  const TuningEntry *lookup(const TuningKey &key) const;
  /// The same among the entries bounded by key length (`keysAtMost`).
  const TuningEntry *lookupBounded(const TuningKey &key) const;
  llvm::ArrayRef<TuningEntry> entries() const { return entries_; }

private:
  const TuningEntry *find(const TuningKey &key, bool bounded) const;
  std::vector<TuningEntry> entries_;
};

/// The table a pass reads for its `tuning-table` option `option` when
/// planning for `target`: "" the built-in table of `target`
/// (compiler/tuning/<target>.txt, compiled into flashc; none for an arch
/// without one), "none" no table (the hand rules), else the file `option`.
/// Null with `error` set when the file cannot be read or is malformed.
std::shared_ptr<const TuningTable> loadTuningTable(llvm::StringRef option, llvm::StringRef target,
                                                   std::string &error);

/// The built-in tables, one line each ("tuning table compiler/tuning/sm_90a.txt:
/// 3 entries, fingerprint 1a2b3c4d5e6f7a8b"), for flashc --version: what a
/// bundle's compiler stamp records.
std::string builtinTuningTablesSummary();

/// A table entry's persistent-GEMM knobs (none without an entry).
inline WsGemmKnobs wsGemmKnobsOf(const TuningEntry *entry) {
  return entry ? WsGemmKnobs{entry->point.pingPong, entry->point.residentB} : WsGemmKnobs{};
}

/// The entry `kernel` was planned from (its `tuning` attribute), or none.
std::optional<std::string> tuningEntryOf(mlir::tile::KernelOp kernel);

/// Attribute names of a kernel's `tuning` dictionary (set by
/// flash-plan-memory from the table entry it applied).
inline constexpr llvm::StringLiteral kTuningEntryName = "entry";
inline constexpr llvm::StringLiteral kTuningKeyName = "key";
inline constexpr llvm::StringLiteral kTuningPingPongName = "ping_pong";
inline constexpr llvm::StringLiteral kTuningGroupName = "group";
inline constexpr llvm::StringLiteral kTuningPersistentName = "persistent";
inline constexpr llvm::StringLiteral kTuningResidentBName = "resident_b";

} // namespace flashc

#endif // FLASHC_COMPILER_TUNING_H
