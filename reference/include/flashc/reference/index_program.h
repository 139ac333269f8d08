// A mask modifier's index program (flash.attention's mask_mod region) in its text form, evaluated in 64-bit
// integers by the rules of the compiler (dialect/include/flashc/Dialect/Common/IndexFunction.h) and the device
// library (mask_mod.cuh's ExactIndex): division and remainder truncate toward zero, by 0 give 0; arithmetic wraps;
// a read outside a tensor's shape gives 0.
//
// Text form (flashc.mask_mod.IndexProgram.text; a manifest's `meta mask_mod` writes it with commas for spaces):
//   v0 = read t0 q; v1 = read t0 k; v2 = eq v0 v1; v3 = le k q; v4 = and v2 v3; yield v4
// statements `<name> = <op> <arg> <arg> [<arg>]` separated by ';', ending in `yield <arg>`; args: b (the batch),
// h (the query head), q (the query row), k (the key row), an integer, true / false, or an earlier name. Ops: add
// sub mul div floordiv ceildiv rem min max eq ne lt le gt ge and or xor select, and `read tN <pos>...` (element
// of the modifier's N-th tensor, one position per dimension).
#pragma once

#include <cctype>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace flashc::reference {

class IndexProgram {
public:
  /// The program of `text`, or nullopt with *error saying what is wrong.
  static std::optional<IndexProgram> parse(const std::string &text, std::string *error = nullptr) {
    IndexProgram p;
    std::map<std::string, int> slots{{"b", 0}, {"h", 1}, {"q", 2}, {"k", 3}};
    std::vector<std::string> statements = split(text, ';');
    auto fail = [&](const std::string &why) -> std::optional<IndexProgram> {
      if (error) *error = "mask_mod '" + text + "': " + why;
      return std::nullopt;
    };
    bool yielded = false;
    for (size_t s = 0; s < statements.size(); ++s) {
      std::vector<std::string> words = tokens(statements[s]);
      if (words.empty()) return fail("empty statement");
      if (yielded) return fail("'yield' must be the last statement");
      if (words[0] == "yield") {
        if (words.size() != 2) return fail("'yield <value>' takes one value");
        auto arg = argument(words[1], slots);
        if (!arg) return fail("'" + words[1] + "' is not b, h, q, k, a number, true / false or an earlier name");
        p.result_ = *arg;
        yielded = true;
        continue;
      }
      if (words.size() < 4 || words[1] != "=") return fail("'" + statements[s] + "' is not '<name> = <op> <args>'");
      Statement st;
      st.op = opOf(words[2]);
      if (st.op == Op::Unknown) return fail("unknown op '" + words[2] + "'");
      size_t first = 3;
      if (st.op == Op::Read) {
        // read tN p0 [p1 ...]: the tensor, then 1 to 4 positions
        const std::string &t = words[3];
        if (t.size() < 2 || t[0] != 't' || !std::isdigit(static_cast<unsigned char>(t[1])))
          return fail("'read' takes a tensor (t0, t1, ...) first, got '" + t + "'");
        try {
          st.tensor = std::stoi(t.substr(1));
        } catch (...) {
          return fail("bad tensor '" + t + "'");
        }
        if (words.size() < 5 || words.size() > 8) return fail("'read' takes a tensor and 1 to 4 positions");
        first = 4;
        p.tensors_ = st.tensor + 1 > p.tensors_ ? st.tensor + 1 : p.tensors_;
      } else {
        size_t want = st.op == Op::Select ? 3 : 2;
        if (words.size() != 3 + want) return fail("'" + words[2] + "' takes " + std::to_string(want) + " values");
      }
      for (size_t a = first; a < words.size(); ++a) {
        auto arg = argument(words[a], slots);
        if (!arg) return fail("'" + words[a] + "' is not b, h, q, k, a number, true / false or an earlier name");
        st.args.push_back(*arg);
      }
      if (slots.count(words[0])) return fail("'" + words[0] + "' is defined twice (or names b, h, q or k)");
      if (words[0] == "true" || words[0] == "false" || words[0] == "yield" ||
          !(std::isalpha(static_cast<unsigned char>(words[0][0])) || words[0][0] == '_'))
        return fail("'" + words[0] + "' cannot name a value");
      st.slot = int(slots.size());
      slots[words[0]] = st.slot;
      p.statements_.push_back(st);
    }
    if (!yielded) return fail("no 'yield <value>'");
    p.slots_ = int(slots.size());
    return p;
  }

  /// Reads element `position` of tensor `tensor`, or 0 when a position is outside its shape.
  using TensorReader = std::function<int64_t(int tensor, const std::vector<int64_t> &position)>;

  /// Whether key row k is visible from query row q of batch b, query head h.
  bool visible(int64_t b, int64_t h, int64_t q, int64_t k, const TensorReader &read = nullptr) const {
    std::vector<int64_t> v(size_t(slots_), 0);
    v[0] = b, v[1] = h, v[2] = q, v[3] = k;
    auto get = [&](const Arg &a) { return a.slot >= 0 ? v[size_t(a.slot)] : a.constant; };
    std::vector<int64_t> position;
    for (const Statement &s : statements_) {
      if (s.op == Op::Read) {
        position.clear();
        for (const Arg &a : s.args) position.push_back(get(a));
        v[size_t(s.slot)] = read ? read(s.tensor, position) : 0;
        continue;
      }
      const int64_t a = get(s.args[0]), c = get(s.args[1]);
      v[size_t(s.slot)] = apply(s.op, a, c, s.op == Op::Select ? get(s.args[2]) : 0);
    }
    return get(result_) != 0;
  }
  /// The same for a program that reads neither b, h nor a tensor.
  bool visible(int64_t q, int64_t k) const { return visible(0, 0, q, k); }
  /// How many tensors it reads (one past the largest tN).
  int tensors() const { return tensors_; }

  // The integer ops, for programs that build on these (score_program.h): an op by its text name, and its value.
  enum class Op { Unknown, Add, Sub, Mul, Div, FloorDiv, CeilDiv, Rem, Min, Max, Eq, Ne, Lt, Le, Gt, Ge, And, Or,
                  Xor, Select, Read };
  static Op opOf(const std::string &w) {
    static const std::map<std::string, Op> ops = {
        {"add", Op::Add}, {"sub", Op::Sub}, {"mul", Op::Mul}, {"div", Op::Div}, {"floordiv", Op::FloorDiv},
        {"ceildiv", Op::CeilDiv}, {"rem", Op::Rem}, {"min", Op::Min}, {"max", Op::Max}, {"eq", Op::Eq},
        {"ne", Op::Ne}, {"lt", Op::Lt}, {"le", Op::Le}, {"gt", Op::Gt}, {"ge", Op::Ge}, {"and", Op::And},
        {"or", Op::Or}, {"xor", Op::Xor}, {"select", Op::Select}, {"read", Op::Read}};
    auto it = ops.find(w);
    return it == ops.end() ? Op::Unknown : it->second;
  }
  static int64_t apply(Op op, int64_t a, int64_t b, int64_t c) {
    const uint64_t ua = static_cast<uint64_t>(a), ub = static_cast<uint64_t>(b);
    switch (op) {
    case Op::Add: return wrap(ua + ub);
    case Op::Sub: return wrap(ua - ub);
    case Op::Mul: return wrap(ua * ub);
    case Op::Div: return b == 0 ? 0 : b == -1 ? wrap(0 - ua) : a / b;
    case Op::FloorDiv: {
      if (b == 0) return 0;
      if (b == -1) return wrap(0 - ua);
      const int64_t q = a / b;
      return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
    }
    case Op::CeilDiv: {
      if (b == 0) return 0;
      if (b == -1) return wrap(0 - ua);
      const int64_t q = a / b;
      return (a % b != 0 && ((a < 0) == (b < 0))) ? q + 1 : q;
    }
    case Op::Rem: return (b == 0 || b == -1) ? 0 : a % b;
    case Op::Min: return a < b ? a : b;
    case Op::Max: return a < b ? b : a;
    case Op::Eq: return a == b;
    case Op::Ne: return a != b;
    case Op::Lt: return a < b;
    case Op::Le: return a <= b;
    case Op::Gt: return a > b;
    case Op::Ge: return a >= b;
    case Op::And: return (a != 0) && (b != 0);
    case Op::Or: return (a != 0) || (b != 0);
    case Op::Xor: return (a != 0) != (b != 0);
    case Op::Select: return a != 0 ? b : c;
    case Op::Read:
    case Op::Unknown: return 0;
    }
    return 0;
  }
  static int64_t wrap(uint64_t v) { return static_cast<int64_t>(v); }

private:
  struct Arg {
    int slot = -1; // a value's slot, or -1 for a constant
    int64_t constant = 0;
  };
  struct Statement {
    Op op = Op::Unknown;
    std::vector<Arg> args;
    int slot = 0;
    int tensor = 0;  // read: which tensor
  };

public:
  // Text helpers score_program.h shares.
  /// A decimal integer literal filling `word` (nullopt otherwise).
  static std::optional<long long> integer(const std::string &word) {
    try {
      size_t used = 0;
      long long v = std::stoll(word, &used);
      if (used != word.size()) return std::nullopt;
      return v;
    } catch (...) {
      return std::nullopt;
    }
  }
  static std::vector<std::string> split(const std::string &text, char sep) {
    std::vector<std::string> out(1);
    for (char c : text) {
      if (c == sep) out.emplace_back();
      else out.back() += c;
    }
    return out;
  }
  // Words separated by spaces, tabs or commas; '=' is a word of its own.
  static std::vector<std::string> tokens(const std::string &statement) {
    std::vector<std::string> out;
    std::string word;
    auto flush = [&] {
      if (!word.empty()) out.push_back(word), word.clear();
    };
    for (char c : statement) {
      if (c == ' ' || c == '\t' || c == ',' || c == '\n' || c == '\r') {
        flush();
      } else if (c == '=') {
        flush();
        out.push_back("=");
      } else {
        word += c;
      }
    }
    flush();
    return out;
  }
private:
  static std::optional<Arg> argument(const std::string &word, const std::map<std::string, int> &slots) {
    Arg a;
    if (word == "true" || word == "false") {
      a.constant = word == "true";
      return a;
    }
    auto it = slots.find(word);
    if (it != slots.end()) {
      a.slot = it->second;
      return a;
    }
    std::optional<long long> v = integer(word);
    if (!v) return std::nullopt;
    a.constant = *v;
    return a;
  }

  std::vector<Statement> statements_;
  Arg result_;
  int slots_ = 4;
  int tensors_ = 0;
};

} // namespace flashc::reference
