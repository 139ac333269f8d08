// A score modifier's program (flash.attention's score_mod region) in its text form, evaluated in double precision: the
// index statements of a mask program (index_program.h, its integer rules) plus f32 ones on the score s
// (dialect/include/flashc/Dialect/Common/ScoreFunction.h). Text form (a manifest's `meta score_mod`, with commas for
// spaces; flashc.score_mod.ScoreProgram.text, whose ' | f32 ...' tail of tensor kinds is ignored here: the caller
// says which tensors are f32):
//   v0 = read t0 h; v1 = sub k q; v2 = itof v1; v3 = mulf v0 v2; v4 = addf s v3; yield v4
// f32 ops: itof (an index as a float), trunc32 (an index truncated to int32), addf subf mulf divf maxf minf, negf tanh
// exp log sqrt absf, eqf nef ltf lef gtf gef (ordered); `select` of floats; `read tN ...` of an f32 tensor gives a
// float. Arguments: s, b, h, q, k, an integer, true / false, f:<float> (hex or decimal, as strtod reads it), or an
// earlier name.
#pragma once

#include "flashc/reference/index_program.h"

#include <cmath>
#include <cstdlib>

namespace flashc::reference {

class ScoreProgram {
public:
  /// The program of `text`, whose tensor t<i> holds f32 where floatTensors[i] (else i32), or nullopt with *error
  /// saying what is wrong.
  static std::optional<ScoreProgram> parse(const std::string &text, const std::vector<bool> &floatTensors = {},
                                           std::string *error = nullptr) {
    ScoreProgram p;
    p.floatTensors_ = floatTensors;
    std::string body = text.substr(0, text.find('|'));
    std::map<std::string, Arg> names{{"s", slotArg(0, true)}, {"b", slotArg(1, false)}, {"h", slotArg(2, false)},
                                     {"q", slotArg(3, false)}, {"k", slotArg(4, false)}};
    auto fail = [&](const std::string &why) -> std::optional<ScoreProgram> {
      if (error) *error = "score_mod '" + text + "': " + why;
      return std::nullopt;
    };
    std::vector<std::string> statements = IndexProgram::split(body, ';');
    bool yielded = false;
    int slots = 5;
    for (const std::string &statement : statements) {
      std::vector<std::string> words = IndexProgram::tokens(statement);
      if (words.empty()) return fail("empty statement");
      if (yielded) return fail("'yield' must be the last statement");
      auto arg = [&](const std::string &w) -> std::optional<Arg> { return argument(w, names); };
      if (words[0] == "yield") {
        if (words.size() != 2 || !arg(words[1])) return fail("'yield <value>' takes one value");
        p.result_ = *arg(words[1]);
        if (!p.result_.floating) return fail("the program must yield a float");
        yielded = true;
        continue;
      }
      if (words.size() < 4 || words[1] != "=") return fail("'" + statement + "' is not '<name> = <op> <args>'");
      Statement st;
      st.name = words[2];
      size_t first = 3;
      if (st.name == "read") {
        const std::string &t = words[3];
        if (t.size() < 2 || t[0] != 't') return fail("'read' takes a tensor (t0, t1, ...) first, got '" + t + "'");
        if (t.find_first_not_of("0123456789", 1) != std::string::npos || t.size() > 4)
          return fail("'read' takes a tensor t0, t1, ... first, got '" + t + "'");
        st.tensor = std::atoi(t.c_str() + 1);
        first = 4;
        p.tensors_ = std::max(p.tensors_, st.tensor + 1);
      }
      for (size_t a = first; a < words.size(); ++a) {
        auto value = arg(words[a]);
        if (!value) return fail("'" + words[a] + "' is not s, b, h, q, k, a number, f:<float> or an earlier name");
        st.args.push_back(*value);
      }
      st.integerOp = IndexProgram::opOf(st.name);
      bool floatRead = st.name == "read" && st.tensor < int(floatTensors.size()) && floatTensors[size_t(st.tensor)];
      bool floatResult = isFloatOp(st.name) || st.name == "itof" || floatRead ||
                         (st.name == "select" && st.args.size() == 3 && st.args[1].floating);
      if (st.integerOp == IndexProgram::Op::Unknown && !isFloatOp(st.name) && !isFloatCompare(st.name) &&
          st.name != "itof" && st.name != "trunc32")
        return fail("unknown op '" + st.name + "'");
      size_t want = st.name == "select" ? 3
                    : (st.name == "itof" || st.name == "trunc32" || isFloatUnary(st.name)) ? 1
                    : st.name == "read" ? st.args.size()
                                        : 2;
      if (st.args.size() != want || (st.name == "read" && (want < 1 || want > 4)))
        return fail("'" + st.name + "' takes " + (st.name == "read" ? std::string("1 to 4 positions")
                                                                     : std::to_string(want) + " values"));
      if (names.count(words[0])) return fail("'" + words[0] + "' is defined twice");
      st.slot = slots++;
      names[words[0]] = slotArg(st.slot, floatResult);
      p.statements_.push_back(st);
    }
    if (!yielded) return fail("no 'yield <value>'");
    p.slots_ = slots;
    return p;
  }

  /// Reads element `position` of tensor `tensor` as a double (an i32 tensor's exactly), or 0 outside its shape.
  using TensorReader = std::function<double(int tensor, const std::vector<int64_t> &position)>;

  /// The modified score at s for (b, h, q, k).
  double evaluate(double s, int64_t b, int64_t h, int64_t q, int64_t k, const TensorReader &read = nullptr) const {
    std::vector<double> f(size_t(slots_), 0.0);
    std::vector<int64_t> i(size_t(slots_), 0);
    f[0] = s;
    i[1] = b, i[2] = h, i[3] = q, i[4] = k;
    auto real = [&](const Arg &a) { return a.slot >= 0 ? f[size_t(a.slot)] : a.real; };
    auto integer = [&](const Arg &a) { return a.slot >= 0 ? i[size_t(a.slot)] : a.constant; };
    std::vector<int64_t> position;
    for (const Statement &st : statements_) {
      double &out = f[size_t(st.slot)];
      int64_t &outInt = i[size_t(st.slot)];
      const std::string &n = st.name;
      if (n == "read") {
        position.clear();
        for (const Arg &a : st.args) position.push_back(integer(a));
        double v = read ? read(st.tensor, position) : 0.0;
        if (st.tensor < int(floatTensors_.size()) && floatTensors_[size_t(st.tensor)]) out = v;
        else outInt = static_cast<int64_t>(v);
      } else if (n == "itof") {
        out = static_cast<double>(integer(st.args[0]));
      } else if (n == "trunc32") {
        outInt = static_cast<int32_t>(static_cast<uint32_t>(integer(st.args[0])));
      } else if (isFloatOp(n)) {
        double a = real(st.args[0]), c = st.args.size() > 1 ? real(st.args[1]) : 0.0;
        out = n == "addf" ? a + c : n == "subf" ? a - c : n == "mulf" ? a * c : n == "divf" ? a / c
            : n == "maxf" ? (a >= c || std::isnan(a) ? a : c) : n == "minf" ? (a <= c || std::isnan(a) ? a : c)
            : n == "negf" ? -a
            : n == "tanh" ? std::tanh(a) : n == "exp" ? std::exp(a) : n == "log" ? std::log(a)
            : n == "sqrt" ? std::sqrt(a) : std::fabs(a);
      } else if (isFloatCompare(n)) {
        double a = real(st.args[0]), c = real(st.args[1]);
        bool ordered = !std::isnan(a) && !std::isnan(c);
        outInt = ordered && (n == "eqf" ? a == c : n == "nef" ? a != c : n == "ltf" ? a < c : n == "lef" ? a <= c
                             : n == "gtf" ? a > c : a >= c);
      } else if (n == "select" && st.args[1].floating) {
        out = integer(st.args[0]) ? real(st.args[1]) : real(st.args[2]);
      } else {
        outInt = IndexProgram::apply(st.integerOp, integer(st.args[0]), integer(st.args[1]),
                                     st.args.size() > 2 ? integer(st.args[2]) : 0);
      }
    }
    return real(result_);
  }
  /// How many tensors it reads (one past the largest tN).
  int tensors() const { return tensors_; }

private:
  struct Arg {
    int slot = -1;        // a value's slot, or -1 for a constant
    int64_t constant = 0; // an integer or bool constant
    double real = 0.0;    // an f32 constant
    bool floating = false;
  };
  static Arg slotArg(int slot, bool floating) {
    Arg a;
    a.slot = slot;
    a.floating = floating;
    return a;
  }
  struct Statement {
    std::string name;
    IndexProgram::Op integerOp = IndexProgram::Op::Unknown;
    std::vector<Arg> args;
    int slot = 0;
    int tensor = 0;
  };

  static bool isFloatOp(const std::string &n) {
    static const char *ops[] = {"addf", "subf", "mulf", "divf", "maxf", "minf", "negf", "tanh", "exp", "log",
                                "sqrt", "absf"};
    for (const char *op : ops)
      if (n == op) return true;
    return false;
  }
  static bool isFloatUnary(const std::string &n) {
    return n == "negf" || n == "tanh" || n == "exp" || n == "log" || n == "sqrt" || n == "absf";
  }
  static bool isFloatCompare(const std::string &n) {
    return n == "eqf" || n == "nef" || n == "ltf" || n == "lef" || n == "gtf" || n == "gef";
  }
  static std::optional<Arg> argument(const std::string &word, const std::map<std::string, Arg> &names) {
    Arg a;
    if (word == "true" || word == "false") {
      a.constant = word == "true";
      return a;
    }
    auto it = names.find(word);
    if (it != names.end()) return it->second;
    if (word.rfind("f:", 0) == 0) {
      char *end = nullptr;
      a.real = static_cast<double>(static_cast<float>(std::strtod(word.c_str() + 2, &end)));
      if (!end || *end != '\0' || word.size() == 2) return std::nullopt;
      a.floating = true;
      return a;
    }
    std::optional<long long> v = IndexProgram::integer(word);
    if (!v) return std::nullopt;
    a.constant = *v;
    return a;
  }

  std::vector<Statement> statements_;
  Arg result_;
  int slots_ = 5, tensors_ = 0;
  std::vector<bool> floatTensors_;
};

} // namespace flashc::reference
