// Integer expressions over size symbols, as written in a manifest's grid/block/
// shared/requires lines (syntax in docs/bundle.md).
#pragma once

#include "flashc/runtime/Result.h"

#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <string_view>

namespace flashc::rt {

using SymbolTable = std::map<std::string, int64_t>;

class Expr {
public:
  struct Node;

  /// An empty expression; evaluates to an error. Use parse() or literal().
  Expr() = default;
  static Expr literal(int64_t value);
  /// Parses `text`. With allowLogic, comparisons, && || ! are accepted too
  /// (only `requires` lines use them).
  static Result<Expr> parse(std::string_view text, bool allowLogic = false);

  bool empty() const { return root_ == nullptr; }
  /// Canonical text: parse(str()) prints back identically.
  std::string str() const;
  /// Every symbol the expression reads.
  void collectSymbols(std::set<std::string> &out) const;
  /// Evaluates with 64-bit overflow, division-by-zero and unbound-symbol checks.
  Result<int64_t> evaluate(const SymbolTable &symbols) const;
  /// A part that fails whatever the symbols are bound to -- a division, modulo
  /// or cdiv by a constant zero (or negative cdiv divisor), a constant part
  /// that overflows -- described for a message; "" when there is none.
  std::string constantFault() const;
  /// True if it reads no symbol (then evaluate({}) gives its value or error).
  bool isConstant() const;
  /// True if it is a plain integer literal (then *value is set).
  bool isLiteral(int64_t *value = nullptr) const;
  /// True if it is a bare symbol (then *name is set).
  bool isSymbol(std::string *name = nullptr) const;
  /// True if its outermost operation is a binary operator (then *op is its
  /// spelling, "+" .. ">=", "&&", "||", and *lhs, *rhs its operands).
  bool isBinary(std::string *op = nullptr, Expr *lhs = nullptr, Expr *rhs = nullptr) const;

  bool operator==(const Expr &other) const { return str() == other.str(); }
  bool operator!=(const Expr &other) const { return !(*this == other); }

private:
  explicit Expr(std::shared_ptr<const Node> root) : root_(std::move(root)) {}
  std::shared_ptr<const Node> root_;
  friend class ExprParser;
};

} // namespace flashc::rt
