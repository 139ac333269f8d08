// Recursive-descent parser, printer and checked evaluator for manifest expressions.
#include "flashc/runtime/Expr.h"

#include <algorithm>
#include <cctype>
#include <vector>

namespace flashc::rt {

struct Expr::Node {
  enum Kind { Literal, Symbol, Unary, Binary, Call } kind;
  int64_t value = 0;
  std::string name; // symbol name, operator spelling or function name
  std::vector<std::shared_ptr<const Node>> operands;
  int height = 1; // longest path to a leaf: bounds the printer's and evaluator's recursion
};

namespace {
using NodePtr = std::shared_ptr<const Expr::Node>;

// Binding strength of binary operators; higher binds tighter.
int precedenceOf(const std::string &op) {
  if (op == "||") return 1;
  if (op == "&&") return 2;
  if (op == "==" || op == "!=") return 3;
  if (op == "<" || op == "<=" || op == ">" || op == ">=") return 4;
  if (op == "+" || op == "-") return 5;
  if (op == "*" || op == "/" || op == "%") return 6;
  return 0;
}
constexpr int kUnaryPrecedence = 7;
constexpr int kPrimaryPrecedence = 8;

bool isLogicOperator(const std::string &op) { return precedenceOf(op) <= 4; }

int nodePrecedence(const Expr::Node &n) {
  if (n.kind == Expr::Node::Binary) return precedenceOf(n.name);
  if (n.kind == Expr::Node::Unary) return kUnaryPrecedence;
  if (n.kind == Expr::Node::Literal && n.value < 0) return kUnaryPrecedence;
  return kPrimaryPrecedence;
}

void print(const Expr::Node &n, std::string &out) {
  switch (n.kind) {
  case Expr::Node::Literal: out += std::to_string(n.value); return;
  case Expr::Node::Symbol: out += n.name; return;
  case Expr::Node::Unary: {
    out += n.name;
    const auto &x = *n.operands[0];
    // A unary operand prints bare (`--N`, `!-N`): parentheses would add parse depth at every level, and an
    // expression that parsed could then print into one that is refused as nested too deeply.
    bool paren = nodePrecedence(x) < kUnaryPrecedence || (x.kind == Expr::Node::Literal && x.value < 0);
    if (paren) out += '(';
    print(x, out);
    if (paren) out += ')';
    return;
  }
  case Expr::Node::Binary: {
    int p = precedenceOf(n.name);
    const auto &lhs = *n.operands[0], &rhs = *n.operands[1];
    bool parenL = nodePrecedence(lhs) < p;
    // Operators are left-associative: an equal-precedence right operand needs parens.
    bool parenR = nodePrecedence(rhs) <= p;
    if (parenL) out += '(';
    print(lhs, out);
    if (parenL) out += ')';
    out += ' ' + n.name + ' ';
    if (parenR) out += '(';
    print(rhs, out);
    if (parenR) out += ')';
    return;
  }
  case Expr::Node::Call:
    out += n.name + '(';
    for (size_t i = 0; i < n.operands.size(); ++i) {
      if (i) out += ", ";
      print(*n.operands[i], out);
    }
    out += ')';
    return;
  }
}
} // namespace

class ExprParser {
public:
  ExprParser(std::string_view text, bool allowLogic) : text_(text), allowLogic_(allowLogic) {}

  Result<Expr> run() {
    skipBlanks();
    if (pos_ == text_.size()) return fail("empty expression");
    NodePtr root = parseBinary(1);
    if (!error_.empty()) return fail(error_);
    skipBlanks();
    if (pos_ != text_.size()) return fail("unexpected '" + std::string(1, text_[pos_]) + "'");
    return Expr(root);
  }

private:
  Error fail(const std::string &why) const {
    // A hostile manifest line can be megabytes long: quote only its start.
    std::string quoted = text_.size() > 120 ? std::string(text_.substr(0, 100)) + "..." : std::string(text_);
    return makeError(ErrorCode::InvalidBundle, "expression '" + quoted + "': " + why +
                                                   " at column " + std::to_string(errorPos_ + 1));
  }
  NodePtr setError(const std::string &why) {
    if (error_.empty()) {
      error_ = why;
      errorPos_ = pos_;
    }
    return nullptr;
  }
  void skipBlanks() {
    while (pos_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[pos_]))) ++pos_;
  }
  // Reads the binary operator at pos_ without consuming it ("" if none).
  std::string peekOperator() {
    skipBlanks();
    static const char *ops[] = {"||", "&&", "==", "!=", "<=", ">=", "<", ">", "+", "-", "*", "/", "%"};
    for (const char *op : ops) {
      std::string_view o(op);
      if (text_.substr(pos_, o.size()) == o) return std::string(o);
    }
    return "";
  }

  // Nesting bound: the parser, printer and evaluator recurse, so a hostile
  // manifest ("((((...", "----...1") must not exhaust the stack.
  static constexpr int kMaxDepth = 200;
  struct DepthGuard {
    int &depth;
    explicit DepthGuard(int &d) : depth(d) { ++depth; }
    ~DepthGuard() { --depth; }
  };

  NodePtr tooDeep() { return setError("expression nested too deeply (more than " + std::to_string(kMaxDepth) + " levels)"); }

  NodePtr parseBinary(int minPrecedence) {
    DepthGuard guard(depth_);
    if (depth_ > kMaxDepth) return tooDeep();
    NodePtr lhs = parseUnary();
    if (!lhs) return nullptr;
    while (true) {
      std::string op = peekOperator();
      int p = op.empty() ? 0 : precedenceOf(op);
      if (p < minPrecedence || p == 0) return lhs;
      if (!allowLogic_ && isLogicOperator(op))
        return setError("operator '" + op + "' is only allowed in 'requires'");
      pos_ += op.size();
      NodePtr rhs = parseBinary(p + 1);
      if (!rhs) return nullptr;
      auto n = std::make_shared<Expr::Node>();
      n->kind = Expr::Node::Binary;
      n->name = op;
      n->operands = {lhs, rhs};
      n->height = 1 + std::max(lhs->height, rhs->height);
      if (n->height > kMaxDepth) return tooDeep();
      lhs = n;
    }
  }

  NodePtr parseUnary() {
    DepthGuard guard(depth_);
    if (depth_ > kMaxDepth) return tooDeep();
    skipBlanks();
    if (pos_ < text_.size() && (text_[pos_] == '-' || text_[pos_] == '!')) {
      char c = text_[pos_];
      if (c == '!' && text_.substr(pos_, 2) == "!=") return setError("unexpected '!='");
      if (c == '!' && !allowLogic_) return setError("operator '!' is only allowed in 'requires'");
      ++pos_;
      NodePtr x = parseUnary();
      if (!x) return nullptr;
      auto n = std::make_shared<Expr::Node>();
      n->kind = Expr::Node::Unary;
      n->name = std::string(1, c);
      n->operands = {x};
      n->height = 1 + x->height;
      if (n->height > kMaxDepth) return tooDeep();
      return n;
    }
    return parsePrimary();
  }

  NodePtr parsePrimary() {
    skipBlanks();
    if (pos_ == text_.size()) return setError("unexpected end");
    char c = text_[pos_];
    if (c == '(') {
      ++pos_;
      NodePtr x = parseBinary(1);
      if (!x) return nullptr;
      skipBlanks();
      if (pos_ == text_.size() || text_[pos_] != ')') return setError("expected ')'");
      ++pos_;
      return x;
    }
    if (std::isdigit(static_cast<unsigned char>(c))) {
      int64_t v = 0;
      while (pos_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[pos_]))) {
        int digit = text_[pos_] - '0';
        if (__builtin_mul_overflow(v, 10, &v) || __builtin_add_overflow(v, digit, &v))
          return setError("integer literal too large");
        ++pos_;
      }
      if (pos_ < text_.size() && (std::isalpha(static_cast<unsigned char>(text_[pos_])) || text_[pos_] == '_'))
        return setError("bad integer literal");
      auto n = std::make_shared<Expr::Node>();
      n->kind = Expr::Node::Literal;
      n->value = v;
      return n;
    }
    if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      size_t start = pos_;
      while (pos_ < text_.size() && (std::isalnum(static_cast<unsigned char>(text_[pos_])) || text_[pos_] == '_'))
        ++pos_;
      std::string name(text_.substr(start, pos_ - start));
      skipBlanks();
      if (pos_ < text_.size() && text_[pos_] == '(') {
        if (name != "cdiv" && name != "min" && name != "max") {
          pos_ = start;
          return setError("unknown function '" + name + "' (expected cdiv, min, max)");
        }
        ++pos_;
        auto n = std::make_shared<Expr::Node>();
        n->kind = Expr::Node::Call;
        n->name = name;
        for (int i = 0; i < 2; ++i) {
          NodePtr a = parseBinary(1);
          if (!a) return nullptr;
          n->operands.push_back(a);
          n->height = std::max(n->height, 1 + a->height);
          if (n->height > kMaxDepth) return tooDeep();
          skipBlanks();
          char want = i == 0 ? ',' : ')';
          if (pos_ == text_.size() || text_[pos_] != want)
            return setError(name + " takes two arguments: expected '" + std::string(1, want) + "'");
          ++pos_;
        }
        return n;
      }
      auto n = std::make_shared<Expr::Node>();
      n->kind = Expr::Node::Symbol;
      n->name = name;
      return n;
    }
    return setError("unexpected '" + std::string(1, c) + "'");
  }

  std::string_view text_;
  bool allowLogic_;
  size_t pos_ = 0;
  std::string error_;
  size_t errorPos_ = 0;
  int depth_ = 0;
};

Expr Expr::literal(int64_t value) {
  auto n = std::make_shared<Node>();
  n->kind = Node::Literal;
  n->value = value;
  return Expr(n);
}

Result<Expr> Expr::parse(std::string_view text, bool allowLogic) {
  return ExprParser(text, allowLogic).run();
}

std::string Expr::str() const {
  std::string out;
  if (root_) print(*root_, out);
  return out;
}

namespace {
void collect(const Expr::Node &n, std::set<std::string> &out) {
  if (n.kind == Expr::Node::Symbol) out.insert(n.name);
  for (const auto &o : n.operands) collect(*o, out);
}

struct Evaluator {
  const SymbolTable &symbols;
  std::string error;

  bool eval(const Expr::Node &n, int64_t &out) {
    switch (n.kind) {
    case Expr::Node::Literal: out = n.value; return true;
    case Expr::Node::Symbol: {
      auto it = symbols.find(n.name);
      if (it == symbols.end()) return fail("symbol '" + n.name + "' is not bound");
      out = it->second;
      return true;
    }
    case Expr::Node::Unary: {
      int64_t x;
      if (!eval(*n.operands[0], x)) return false;
      if (n.name == "!") { out = x == 0; return true; }
      if (__builtin_sub_overflow(int64_t(0), x, &out)) return fail("overflow");
      return true;
    }
    case Expr::Node::Binary:
    case Expr::Node::Call: {
      int64_t a, b;
      // && and || short-circuit so `B == 0 || Sq / B > 1` is well defined.
      if (!eval(*n.operands[0], a)) return false;
      if (n.name == "&&" && a == 0) { out = 0; return true; }
      if (n.name == "||" && a != 0) { out = 1; return true; }
      if (!eval(*n.operands[1], b)) return false;
      const std::string &op = n.name;
      if (op == "+") { if (__builtin_add_overflow(a, b, &out)) return fail("overflow in '+'"); return true; }
      if (op == "-") { if (__builtin_sub_overflow(a, b, &out)) return fail("overflow in '-'"); return true; }
      if (op == "*") { if (__builtin_mul_overflow(a, b, &out)) return fail("overflow in '*'"); return true; }
      if (op == "/" || op == "%") {
        if (b == 0) return fail(std::string(op == "/" ? "division" : "modulo") + " by zero");
        if (a == INT64_MIN && b == -1) return fail("overflow in '" + op + "'");
        out = op == "/" ? a / b : a % b;
        return true;
      }
      if (op == "cdiv") {
        if (b <= 0) return fail("cdiv divisor " + std::to_string(b) + " is not positive");
        out = a >= 0 ? a / b + (a % b != 0) : a / b; // truncation already rounds up for a < 0
        return true;
      }
      if (op == "min") { out = a < b ? a : b; return true; }
      if (op == "max") { out = a > b ? a : b; return true; }
      if (op == "==") { out = a == b; return true; }
      if (op == "!=") { out = a != b; return true; }
      if (op == "<") { out = a < b; return true; }
      if (op == "<=") { out = a <= b; return true; }
      if (op == ">") { out = a > b; return true; }
      if (op == ">=") { out = a >= b; return true; }
      if (op == "&&" || op == "||") { out = b != 0; return true; }
      return fail("unknown operator '" + op + "'");
    }
    }
    return fail("bad expression node");
  }
  bool fail(const std::string &why) {
    error = why;
    return false;
  }
};
} // namespace

namespace {
bool readsSymbol(const Expr::Node &n) {
  if (n.kind == Expr::Node::Symbol) return true;
  for (const auto &o : n.operands)
    if (readsSymbol(*o)) return true;
  return false;
}

std::string faultOf(const Expr::Node &n) {
  static const SymbolTable kNoSymbols;
  if (!readsSymbol(n)) {
    Evaluator ev{kNoSymbols, {}};
    int64_t value = 0;
    if (ev.eval(n, value)) return "";
    std::string text;
    print(n, text);
    return "'" + text + "': " + ev.error;
  }
  for (const auto &o : n.operands)
    if (std::string f = faultOf(*o); !f.empty()) return f;
  // Symbolic dividend, constant divisor: the divisor alone decides.
  if ((n.kind == Expr::Node::Binary && (n.name == "/" || n.name == "%")) ||
      (n.kind == Expr::Node::Call && n.name == "cdiv")) {
    const Expr::Node &divisor = *n.operands[1];
    if (readsSymbol(divisor)) return "";
    Evaluator ev{kNoSymbols, {}};
    int64_t d = 0;
    if (!ev.eval(divisor, d)) return ""; // reported above
    bool bad = n.name == "cdiv" ? d <= 0 : d == 0;
    if (!bad) return "";
    std::string text;
    print(n, text);
    return "'" + text + "': " +
           (n.name == "cdiv" ? "cdiv divisor " + std::to_string(d) + " is not positive"
                             : std::string(n.name == "/" ? "division" : "modulo") + " by zero");
  }
  return "";
}
} // namespace

std::string Expr::constantFault() const { return root_ ? faultOf(*root_) : ""; }

bool Expr::isConstant() const { return root_ && !readsSymbol(*root_); }

void Expr::collectSymbols(std::set<std::string> &out) const {
  if (root_) collect(*root_, out);
}

Result<int64_t> Expr::evaluate(const SymbolTable &symbols) const {
  if (!root_) return makeError(ErrorCode::Internal, "evaluating an empty expression");
  Evaluator ev{symbols, {}};
  int64_t out = 0;
  if (!ev.eval(*root_, out))
    return makeError(ErrorCode::InvalidArgument, "expression '" + str() + "': " + ev.error);
  return out;
}

bool Expr::isLiteral(int64_t *value) const {
  if (!root_ || root_->kind != Node::Literal) return false;
  if (value) *value = root_->value;
  return true;
}

bool Expr::isSymbol(std::string *name) const {
  if (!root_ || root_->kind != Node::Symbol) return false;
  if (name) *name = root_->name;
  return true;
}

bool Expr::isBinary(std::string *op, Expr *lhs, Expr *rhs) const {
  if (!root_ || root_->kind != Node::Binary) return false;
  if (op) *op = root_->name;
  if (lhs) *lhs = Expr(root_->operands[0]);
  if (rhs) *rhs = Expr(root_->operands[1]);
  return true;
}

} // namespace flashc::rt
