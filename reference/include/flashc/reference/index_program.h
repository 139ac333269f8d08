// A mask modifier's index program (flash.attention's mask_mod region) in its text form, evaluated in 64-bit
// integers by the rules of the compiler (dialect/include/flashc/Dialect/Common/IndexFunction.h) and the device
// library (mask_mod.cuh's ExactIndex): division and remainder truncate toward zero, by 0 give 0; arithmetic wraps.
//
// Text form (flashc.mask_mod.IndexProgram.text; a manifest's `meta mask_mod` writes it with commas for spaces):
//   v0 = lt k 4096; v1 = le k q; v2 = or v0 v1; yield v2
// statements `<name> = <op> <arg> <arg> [<arg>]` separated by ';', ending in `yield <arg>`; args: q (the query
// row), k (the key row), an integer, true / false, or an earlier name. Ops: add sub mul div floordiv ceildiv rem
// min max eq ne lt le gt ge and or xor select.
#pragma once

#include <cctype>
#include <cstdint>
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
    std::map<std::string, int> slots{{"q", 0}, {"k", 1}};
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
        if (!arg) return fail("'" + words[1] + "' is not q, k, a number, true / false or an earlier name");
        p.result_ = *arg;
        yielded = true;
        continue;
      }
      if (words.size() < 4 || words[1] != "=") return fail("'" + statements[s] + "' is not '<name> = <op> <args>'");
      Statement st;
      st.op = opOf(words[2]);
      if (st.op == Op::Unknown) return fail("unknown op '" + words[2] + "'");
      size_t want = st.op == Op::Select ? 3 : 2;
      if (words.size() != 3 + want) return fail("'" + words[2] + "' takes " + std::to_string(want) + " values");
      for (size_t a = 0; a < want; ++a) {
        auto arg = argument(words[3 + a], slots);
        if (!arg) return fail("'" + words[3 + a] + "' is not q, k, a number, true / false or an earlier name");
        st.args[a] = *arg;
      }
      if (slots.count(words[0])) return fail("'" + words[0] + "' is defined twice (or names q or k)");
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

  /// Whether key row k is visible from query row q.
  bool visible(int64_t q, int64_t k) const {
    std::vector<int64_t> v(size_t(slots_), 0);
    v[0] = q, v[1] = k;
    auto get = [&](const Arg &a) { return a.slot >= 0 ? v[size_t(a.slot)] : a.constant; };
    for (const Statement &s : statements_) {
      const int64_t a = get(s.args[0]), b = get(s.args[1]);
      v[size_t(s.slot)] = apply(s.op, a, b, s.op == Op::Select ? get(s.args[2]) : 0);
    }
    return get(result_) != 0;
  }

private:
  enum class Op { Unknown, Add, Sub, Mul, Div, FloorDiv, CeilDiv, Rem, Min, Max, Eq, Ne, Lt, Le, Gt, Ge, And, Or,
                  Xor, Select };
  struct Arg {
    int slot = -1; // a value's slot, or -1 for a constant
    int64_t constant = 0;
  };
  struct Statement {
    Op op = Op::Unknown;
    Arg args[3];
    int slot = 0;
  };

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
    try {
      size_t used = 0;
      long long v = std::stoll(word, &used);
      if (used != word.size()) return std::nullopt;
      a.constant = v;
      return a;
    } catch (...) {
      return std::nullopt;
    }
  }
  static Op opOf(const std::string &w) {
    static const std::map<std::string, Op> ops = {
        {"add", Op::Add}, {"sub", Op::Sub}, {"mul", Op::Mul}, {"div", Op::Div}, {"floordiv", Op::FloorDiv},
        {"ceildiv", Op::CeilDiv}, {"rem", Op::Rem}, {"min", Op::Min}, {"max", Op::Max}, {"eq", Op::Eq},
        {"ne", Op::Ne}, {"lt", Op::Lt}, {"le", Op::Le}, {"gt", Op::Gt}, {"ge", Op::Ge}, {"and", Op::And},
        {"or", Op::Or}, {"xor", Op::Xor}, {"select", Op::Select}};
    auto it = ops.find(w);
    return it == ops.end() ? Op::Unknown : it->second;
  }
  static int64_t wrap(uint64_t v) { return static_cast<int64_t>(v); }
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
    case Op::Unknown: return 0;
    }
    return 0;
  }

  std::vector<Statement> statements_;
  Arg result_;
  int slots_ = 2;
};

} // namespace flashc::reference
