//===- Names.h - identifiers of the generated CUDA and the manifest -*- C++ -*-===//
//
// The emitter's name table: which names the generated code may use for a
// value (the kernel builders' NameLocs, made valid C++ and kept clear of the
// device library's functions), and which names the manifest accepts.
//
//===----------------------------------------------------------------------===//
#ifndef FLASHC_COMPILER_CODEGEN_NAMES_H
#define FLASHC_COMPILER_CODEGEN_NAMES_H

#include "flashc/Dialect/Tile/IR/TileOps.h"

#include "mlir/IR/Location.h"
#include "mlir/IR/Value.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"

#include <string>

namespace flashc {

/// C++ keywords and the few identifiers the device library claims.
bool isCppKeyword(llvm::StringRef name);

/// [A-Za-z_][A-Za-z0-9_]*: what manifest kernel and program names must be.
bool isManifestIdentifier(llvm::StringRef name);

/// `name` as a C++ identifier: invalid characters become '_', a leading digit
/// gets a prefix, a keyword a suffix.
std::string cppIdentifier(llvm::StringRef name);

/// The names a location gives: a NameLoc's, or those of the NameLocs fused
/// into it, in order (a loop's induction variable, then its carried values).
llvm::SmallVector<llvm::StringRef> locationNames(mlir::Location loc);

/// The name the kernel builder gave `v` through a location (see
/// KernelBuilder::named), or "" when it has none.
std::string givenName(mlir::Value v);

/// The device library's `Act` enumerator of an activation kind ("Act::Silu").
const char *activationEnumerator(mlir::tile::Activation kind);

/// Identifiers the generated code uses besides the kernel's values: device
/// library functions and the emitter's own locals. A value is never named so.
llvm::ArrayRef<const char *> reservedNames();

} // namespace flashc

#endif // FLASHC_COMPILER_CODEGEN_NAMES_H
