"""Mask modifiers: which keys a query sees, written as a Python function of indices.

    def prefix_lm(b, h, q_idx, kv_idx):          # FlexAttention's mask_mod signature
        return (kv_idx < 4096) | (kv_idx <= q_idx)

    flashc.torch.attention(q, k, v, mask_mod=prefix_lm)

    def document_causal(b, h, q_idx, kv_idx):    # `document` an int tensor of each token's document
        return (document[q_idx] == document[kv_idx]) & (kv_idx <= q_idx)

The function is traced once a call with symbolic indices into an index program — integer arithmetic on the batch b,
the query head h, the query row q and the key row k, and reads of integer tensors the function indexes, ending in a
condition — which becomes flash.attention's `mask_mod` region (its text is part of the configuration, so another
modifier is another bundle; the same one is found in the cache; the tensors' values are not: they are arguments of
the call, read by the kernels, and a small kernel classifies the blocks they hide before the attention runs).
Supported on the indices: + - * // % (Python's floor division and remainder), unary -, abs, comparisons, & | ^ ~ on
conditions, torch.where(cond, a, b), torch.minimum / torch.maximum (or flashc.mask_mod.where / minimum / maximum),
integer and bool constants, and t[i] / t[i, j] of a torch tensor t of integers (rank 1-4; read as int32; a computed
position outside t reads 0, but t read at an index itself, t[q_idx] or t[b, h], must hold that index's whole range
along that dimension: a shorter t is refused at launch). Not supported yet: float math (score modifiers). `and`, `or`,
`not`, `if` on a traced condition raise with what to write instead.

The program's one-line text form (configs, manifests, flashc-run) is `;`-separated statements
`<name> = <op> <arg> <arg> [<arg>]` ending in `yield <arg>`, args being b, h, q, k, an integer, true / false or an
earlier name; ops: add sub mul div floordiv ceildiv rem min max eq ne lt le gt ge and or xor select (div and rem
truncate toward zero as arith.divsi / arith.remsi; division and remainder by 0 give 0), and `read tN <pos>...` (the
N-th tensor at one position per dimension). Python's % on traced indices is a - (a // b) * b, as in Python and torch
(the divisor's sign; by 0 it gives a).
"""

import contextlib
import inspect
import threading

from .errors import InvalidArgumentError

__all__ = ["IndexProgram", "trace", "where", "minimum", "maximum", "read", "block_sparse"]

_INT_OPS = ("add", "sub", "mul", "div", "floordiv", "ceildiv", "rem", "min", "max")
_CMP_OPS = ("eq", "ne", "lt", "le", "gt", "ge")
_BOOL_OPS = ("and", "or", "xor")
_OPS = _INT_OPS + _CMP_OPS + _BOOL_OPS + ("select", "read")
_INDICES = ("b", "h", "q", "k")
# arith ops of the mask_mod region (IndexFunction.h).
_ARITH = {"add": "addi", "sub": "subi", "mul": "muli", "div": "divsi", "floordiv": "floordivsi",
          "ceildiv": "ceildivsi", "rem": "remsi", "min": "minsi", "max": "maxsi", "and": "andi", "or": "ori",
          "xor": "xori", "eq": "cmpi eq", "ne": "cmpi ne", "lt": "cmpi slt", "le": "cmpi sle", "gt": "cmpi sgt",
          "ge": "cmpi sge"}
_INT64_MIN, _INT64_MAX = -(1 << 63), (1 << 63) - 1


def index_argument_reads(statements):
    """(tensor number, dim, index name) of each read of a modifier program's statements whose position along a dim is
    an index argument itself (ids[q], slopes[h]): the reads whose tensor must hold that index's whole range, which the
    compiled kernels check at launch (flash.attention's verifier where the sizes are static)."""
    found = []
    for _, op, args in statements:
        if op != "read":
            continue
        t = _tensor_index(args[0])
        for d, a in enumerate(args[1:]):
            if isinstance(a, str) and a in _INDICES and (t, d, a) not in found:
                found.append((t, d, a))
    return found


_INDEX_NAMES = {"b": "batch b", "h": "query head h", "q": "query index q", "k": "key index k"}


def check_table_extents(what, statements, tensors, ranges):
    """Raises InvalidArgumentError where a tensor read at an index argument is shorter than that index's range
    (ranges: {"b", "h", "q", "k": how many values it takes}), in the words of the compiler's check: the modifier would
    read past the table, which a kernel refuses at launch."""
    for t, d, index in index_argument_reads(statements):
        size, need = int(tensors[t].shape[d]), int(ranges[index])
        if size < need:
            name = _INDEX_NAMES[index]
            raise InvalidArgumentError("%s reads tensor t%d %s at the %s along dimension %d: it holds %d entries, the "
                                       "%s ranges over %d" % (what, t, list(tensors[t].shape), name, d, size, name,
                                                               need))


class IndexProgram:
    """A mask modifier as straight-line statements (name, op, args) ending in the condition `result`; args are
    'b', 'h', 'q', 'k', tensors 't0', 't1', ... (the first argument of a read), ints, bools or earlier names. Built
    by trace() or from the text form (IndexProgram.parse). `tensors`: the torch tensors a trace read (t0, t1, ...;
    not part of the program's identity: they are the call's arguments)."""

    def __init__(self, statements, result, tensors=()):
        self.statements = tuple(statements)
        self.result = result
        self.tensors = tuple(tensors)
        self._check()

    def with_tensors(self, *tensors):
        """The same program reading `tensors` as t0, t1, ... (a text form's tensors, given at the call)."""
        return IndexProgram(self.statements, self.result, tensors)

    @property
    def tensor_ranks(self):
        """The rank of each tensor t0, t1, ... the program reads (how many positions its reads take)."""
        return tuple(self._ranks[i] for i in range(len(self._ranks)))

    # ---- text forms ----------------------------------------------------------------------------------------
    @property
    def text(self):
        """The one-line form: 'v0 = lt k 4096; v1 = le k q; v2 = or v0 v1; yield v2'."""
        parts = ["%s = %s %s" % (name, op, " ".join(_arg_text(a) for a in args)) for name, op, args in self.statements]
        return "; ".join(parts + ["yield " + _arg_text(self.result)])

    @classmethod
    def parse(cls, text):
        if not isinstance(text, str) or not text.strip():
            raise InvalidArgumentError("mask_mod: expected an index program ('v0 = le k q; yield v0'), got %r"
                                       % (text,))
        return cls(*parse_statements(text, "mask_mod", _parse_arg))

    def region_text(self, indent="    "):
        """The body of flash.attention's mask_mod region (the MLIR between its braces): arguments (b, h, q_idx,
        kv_idx), then one tensor<?x..xi32> per tensor the program reads (the op's mask_mod operands)."""
        tensor_args = "".join(", %%t%d: %s" % (i, tensor_type(r)) for i, r in enumerate(self.tensor_ranks))
        lines = ["^bb0(%%b: index, %%h: index, %%q_idx: index, %%kv_idx: index%s):" % tensor_args]
        constants = {}

        def operand(a):
            constant = constant_operand(a, constants, lines, indent)
            if constant is not None:
                return constant
            return {"b": "%b", "h": "%h", "q": "%q_idx", "k": "%kv_idx"}.get(a, "%s_" + a)  # (s_: apart from the constants)

        for name, op, args in self.statements:
            if op == "read":  # tensor.extract, then the element (i32) as an index
                t = "%%%s" % args[0]
                ty = tensor_type(self._ranks[int(args[0][1:])])
                lines.append("%s%%s_%s_e = tensor.extract %s[%s] : %s" % (
                    indent, name, t, ", ".join(operand(a) for a in args[1:]), ty))
                lines.append("%s%%s_%s = arith.index_cast %%s_%s_e : i32 to index" % (indent, name, name))
                continue
            ops = [operand(a) for a in args]
            if op == "select":
                kind = "i1" if self._kind_of(args[1]) == "bool" else "index"
                lines.append("%s%%s_%s = arith.select %s, %s, %s : %s" % (indent, name, ops[0], ops[1], ops[2], kind))
            elif op in _CMP_OPS:
                lines.append("%s%%s_%s = arith.%s, %s, %s : index" % (indent, name, _ARITH[op], ops[0], ops[1]))
            else:
                kind = "i1" if op in _BOOL_OPS else "index"
                lines.append("%s%%s_%s = arith.%s %s, %s : %s" % (indent, name, _ARITH[op], ops[0], ops[1], kind))
        lines.append("%sflash.yield %s : i1" % (indent, operand(self.result)))
        return "\n".join(lines)

    def _kind_of(self, a):
        if isinstance(a, bool):
            return "bool"
        return "int" if isinstance(a, int) else self._kinds[a]

    # ---- evaluation (the exact rules of IndexFunction.h) ------------------------------------------------------
    def evaluate(self, q, k, b=0, h=0, tensors=None):
        """The condition for query rows q and key rows k (batch b, query head h): Python ints (a bool), or
        broadcastable int64 torch tensors (a bool tensor), with the compiler's semantics (truncating div / rem, 0
        for a zero divisor, 0 for a read outside a tensor). tensors: what t0, t1, ... read (default: the traced
        ones)."""
        tensors = self.tensors if tensors is None else tuple(tensors)
        if len(tensors) < len(self._ranks):
            raise InvalidArgumentError("mask_mod: the program reads %d tensor(s), %d given"
                                       % (len(self._ranks), len(tensors)))
        values = {"b": b, "h": h, "q": q, "k": k}
        scalar = all(isinstance(x, int) for x in (q, k, b, h))
        ops = _IntOps() if scalar else _TensorOps(*[x for x in (q, k, b, h) if not isinstance(x, int)][:1])

        def get(a):
            if isinstance(a, bool):
                return ops.boolean(a)
            if isinstance(a, int):
                return ops.constant(a)
            return values[a]

        for name, op, args in self.statements:
            if op == "read":
                values[name] = ops.read(tensors[int(args[0][1:])], [get(a) for a in args[1:]])
                continue
            values[name] = getattr(ops, op)(*[get(a) for a in args])
        return get(self.result) if not isinstance(self.result, bool) else ops.boolean(self.result)

    def __eq__(self, other):
        return isinstance(other, IndexProgram) and other.text == self.text

    def __hash__(self):
        return hash(self.text)

    def __repr__(self):
        return "IndexProgram(%r)" % self.text

    # ---- checks -------------------------------------------------------------------------------------------------
    def _check(self):
        kinds = {"b": "int", "h": "int", "q": "int", "k": "int"}
        self._ranks = {}

        def kind(a, where):
            if isinstance(a, bool):
                return "bool"
            if isinstance(a, int):
                if not _INT64_MIN <= a <= _INT64_MAX:
                    raise InvalidArgumentError("mask_mod: constant %d does not fit 64 bits (%s)" % (a, where))
                return "int"
            if a not in kinds:
                raise InvalidArgumentError("mask_mod: %r is used before it is defined (%s)" % (a, where))
            return kinds[a]

        for name, op, args in self.statements:
            where = "statement %s = %s" % (name, op)
            if op not in _OPS:
                raise InvalidArgumentError("mask_mod: unknown op %r (known: %s)" % (op, " ".join(_OPS)))
            if (name in kinds or name in _INDICES + ("yield", "true", "false") or not name.isidentifier()
                    or _tensor_index(name) is not None):
                raise InvalidArgumentError("mask_mod: %r cannot name a value (%s)" % (name, where))
            if op == "read":
                t = _tensor_index(args[0]) if args and isinstance(args[0], str) else None
                if t is None or not 2 <= len(args) <= 5:
                    raise InvalidArgumentError("mask_mod: read takes a tensor (t0, t1, ...) and 1 to 4 positions (%s)"
                                               % where)
                if any(kind(a, where) != "int" for a in args[1:]):
                    raise InvalidArgumentError("mask_mod: read's positions are integers (%s)" % where)
                if self._ranks.setdefault(t, len(args) - 1) != len(args) - 1:
                    raise InvalidArgumentError("mask_mod: tensor t%d is read with %d and %d positions" % (
                        t, self._ranks[t], len(args) - 1))
                kinds[name] = "int"
                continue
            arg_kinds = [kind(a, where) for a in args]
            want = 3 if op == "select" else 2
            if len(args) != want:
                raise InvalidArgumentError("mask_mod: %s takes %d values, got %d" % (op, want, len(args)))
            if op in _INT_OPS or op in _CMP_OPS:
                if arg_kinds != ["int", "int"]:
                    raise InvalidArgumentError("mask_mod: %s takes two integers (%s)" % (op, where))
                kinds[name] = "int" if op in _INT_OPS else "bool"
            elif op in _BOOL_OPS:
                if arg_kinds != ["bool", "bool"]:
                    raise InvalidArgumentError("mask_mod: %s takes two conditions (%s)" % (op, where))
                kinds[name] = "bool"
            else:
                if arg_kinds[0] != "bool" or arg_kinds[1] != arg_kinds[2]:
                    raise InvalidArgumentError("mask_mod: select takes a condition and two values of one kind (%s)"
                                               % where)
                kinds[name] = arg_kinds[1]
        if kind(self.result, "yield") != "bool":
            raise InvalidArgumentError("mask_mod: the modifier must give a condition (whether key k is visible "
                                       "from query q), not an integer")
        if sorted(self._ranks) != list(range(len(self._ranks))):
            raise InvalidArgumentError("mask_mod: the tensors read must be t0, t1, ... without gaps, got %s"
                                       % ", ".join("t%d" % t for t in sorted(self._ranks)))
        self._kinds = kinds


def parse_statements(text, what, parse_arg):
    """(statements, result) of a program's text form: ';'-separated '<name> = <op> <args>', ending in 'yield <arg>'
    (flashc.score_mod's programs share it)."""
    statements, result = [], None
    items = [s.strip() for s in text.split(";")]
    for i, item in enumerate(items):
        words = item.split()
        if not words:
            raise InvalidArgumentError("%s %r: empty statement %d" % (what, text, i + 1))
        if words[0] == "yield":
            if len(words) != 2 or i != len(items) - 1:
                raise InvalidArgumentError("%s %r: 'yield <value>' must be the last statement" % (what, text))
            result = parse_arg(words[1], text)
            continue
        if len(words) < 4 or words[1] != "=":
            raise InvalidArgumentError("%s %r: statement %r is not '<name> = <op> <args>'" % (what, text, item))
        statements.append((words[0], words[2], tuple(parse_arg(w, text) for w in words[3:])))
    if result is None:
        raise InvalidArgumentError("%s %r: no 'yield <value>'" % (what, text))
    return statements, result


def prune(tracer, result_ref):
    """The statements `result_ref` depends on, renamed v0, v1, ... and their tensors t0, t1, ... in the order of
    their first read: (statements, result, tensor indices into tracer.tensors)."""
    needed, kept = ({result_ref} if isinstance(result_ref, str) else set()), []
    for name, op, args in reversed(tracer.statements):
        if name in needed:
            kept.append((name, op, args))
            needed.update(a for a in args if isinstance(a, str))
    kept.reverse()
    rename = {name: "v%d" % i for i, (name, _, _) in enumerate(kept)}
    tensor_order = []
    for _, op, args in kept:
        if op == "read" and args[0] not in tensor_order:
            tensor_order.append(args[0])
    rename.update({t: "t%d" % i for i, t in enumerate(tensor_order)})
    statements = [(rename[n], op, tuple(rename.get(a, a) if isinstance(a, str) else a for a in args))
                  for n, op, args in kept]
    result = rename.get(result_ref, result_ref) if isinstance(result_ref, str) else result_ref
    return statements, result, [int(t[1:]) for t in tensor_order]


def constant_operand(a, constants, lines, indent):
    """The SSA name of constant `a` (a bool: i1, an int: index) in a region being printed, its arith.constant
    appended to `lines` on first use (`constants` remembers it); None when `a` is not a constant."""
    if isinstance(a, bool):
        key = ("i1", a)
        if key not in constants:
            constants[key] = "%%%s" % ("true" if a else "false")
            lines.append("%s%s = arith.constant %s" % (indent, constants[key], "true" if a else "false"))
        return constants[key]
    if isinstance(a, int):
        key = ("index", a)
        if key not in constants:
            constants[key] = "%%c%s" % (str(a).replace("-", "m"))
            lines.append("%s%s = arith.constant %d : index" % (indent, constants[key], a))
        return constants[key]
    return None


def tensor_type(rank):
    """The MLIR type of a modifier's tensor of `rank`: tensor<?x..xi32>."""
    return "tensor<%si32>" % ("?x" * rank)


def _tensor_index(word):
    """N for 't<N>', else None."""
    if isinstance(word, str) and len(word) >= 2 and word[0] == "t" and word[1:].isdigit():
        return int(word[1:])
    return None


def _arg_text(a):
    if isinstance(a, bool):
        return "true" if a else "false"
    return str(a)


def _parse_arg(word, text):
    if word in ("true", "false"):
        return word == "true"
    try:
        return int(word)
    except ValueError:
        pass
    if not word.isidentifier():
        raise InvalidArgumentError("mask_mod %r: %r is not b, h, q, k, a number, true / false or a name" % (text, word))
    return word


def _wrap(v):
    v &= (1 << 64) - 1
    return v - (1 << 64) if v >= 1 << 63 else v


class _IntOps:
    """The exact rules on Python ints (64-bit wrapping, 0 for a zero divisor)."""
    constant = staticmethod(lambda v: v)
    boolean = staticmethod(lambda v: v)
    add = staticmethod(lambda a, b: _wrap(a + b))
    sub = staticmethod(lambda a, b: _wrap(a - b))
    mul = staticmethod(lambda a, b: _wrap(a * b))

    @staticmethod
    def div(a, b):
        if b == 0:
            return 0
        q = abs(a) // abs(b)
        return _wrap(q if (a < 0) == (b < 0) else -q)

    @staticmethod
    def floordiv(a, b):
        return 0 if b == 0 else _wrap(a // b)

    @staticmethod
    def ceildiv(a, b):
        return 0 if b == 0 else _wrap(-((-a) // b))

    @staticmethod
    def rem(a, b):
        if b == 0:
            return 0
        r = abs(a) % abs(b)
        return -r if a < 0 else r

    min = staticmethod(min)
    max = staticmethod(max)
    eq = staticmethod(lambda a, b: a == b)
    ne = staticmethod(lambda a, b: a != b)
    lt = staticmethod(lambda a, b: a < b)
    le = staticmethod(lambda a, b: a <= b)
    gt = staticmethod(lambda a, b: a > b)
    ge = staticmethod(lambda a, b: a >= b)
    # (named with a trailing underscore where Python keywords forbid the op's name)
    select = staticmethod(lambda c, a, b: a if c else b)

    @staticmethod
    def read(t, positions):
        if len(positions) != t.dim() or any(p < 0 or p >= n for p, n in zip(positions, t.shape)):
            return 0
        return int(t[tuple(positions)])


setattr(_IntOps, "and", staticmethod(lambda a, b: a and b))
setattr(_IntOps, "or", staticmethod(lambda a, b: a or b))
setattr(_IntOps, "xor", staticmethod(lambda a, b: a != b))


class _TensorOps:
    """The same rules on broadcastable int64 torch tensors (no overflow at index sizes)."""

    def __init__(self, like):
        import torch
        self.torch = torch
        self.device = like.device

    def constant(self, v):
        return self.torch.tensor(v, dtype=self.torch.int64, device=self.device)

    def boolean(self, v):
        return self.torch.tensor(v, dtype=self.torch.bool, device=self.device)

    def add(self, a, b): return a + b
    def sub(self, a, b): return a - b
    def mul(self, a, b): return a * b

    # Divisors 0 and -1 are the rules' special cases (0; -a, which wraps at INT64_MIN): replaced by 1 before
    # dividing, so that INT64_MIN / -1 never reaches the hardware (it traps on x86), then selected.
    def _divisor(self, a, b):
        """(a, b broadcast, b with 0 and -1 replaced by 1)."""
        a, b = self.torch.broadcast_tensors(self.torch.as_tensor(a), self.torch.as_tensor(b))
        return a, b, self.torch.where((b == 0) | (b == -1), self.torch.ones_like(b), b)

    def _quotient(self, a, b, adjust):
        a, b, safe = self._divisor(a, b)
        q = self.torch.div(a, safe, rounding_mode="trunc")
        r = a - q * safe
        q = q + adjust(r, a, safe)
        return self.torch.where(b == 0, self.torch.zeros_like(a), self.torch.where(b == -1, -a, q))

    def div(self, a, b):
        return self._quotient(a, b, lambda r, a, b: 0)

    def floordiv(self, a, b):  # one less where the truncated quotient was rounded up (signs differ)
        return self._quotient(a, b, lambda r, a, b: -((r != 0) & ((a < 0) != (b < 0))).long())

    def ceildiv(self, a, b):  # one more where it was rounded down (signs agree)
        return self._quotient(a, b, lambda r, a, b: ((r != 0) & ((a < 0) == (b < 0))).long())

    def rem(self, a, b):
        a, b, safe = self._divisor(a, b)
        return self.torch.where((b == 0) | (b == -1), self.torch.zeros_like(a), self.torch.fmod(a, safe))

    def min(self, a, b): return self.torch.minimum(a, b)
    def max(self, a, b): return self.torch.maximum(a, b)
    def eq(self, a, b): return a == b
    def ne(self, a, b): return a != b
    def lt(self, a, b): return a < b
    def le(self, a, b): return a <= b
    def gt(self, a, b): return a > b
    def ge(self, a, b): return a >= b
    def select(self, c, a, b): return self.torch.where(c, a, b)

    def read(self, t, positions, dtype=None):
        """t[positions] elementwise over the broadcast positions as `dtype` (int64 by default), 0 where one is
        outside t."""
        torch = self.torch
        dtype = dtype or torch.int64
        ps = torch.broadcast_tensors(*[torch.as_tensor(p, dtype=torch.int64, device=self.device) for p in positions])
        inside = torch.ones_like(ps[0], dtype=torch.bool)
        clamped = []
        for p, n in zip(ps, t.shape):
            inside = inside & (p >= 0) & (p < n)
            clamped.append(p.clamp(0, max(n - 1, 0)))
        if t.numel() == 0:
            return torch.zeros(ps[0].shape, dtype=dtype, device=self.device)
        values = t.to(device=self.device, dtype=dtype)[tuple(clamped)]
        return torch.where(inside, values, torch.zeros_like(values))


setattr(_TensorOps, "and", lambda self, a, b: a & b)
setattr(_TensorOps, "or", lambda self, a, b: a | b)
setattr(_TensorOps, "xor", lambda self, a, b: a ^ b)


# ---------------------------------------------------------------------------------------------- tracing
class _Tracer:
    def __init__(self):
        self.statements = []
        self.memo = {}
        self.tensors = []  # the tensors read, t0, t1, ... (by identity)

    def read(self, tensor, positions):
        """The traced element tensor[positions] (a tensor of integers, one position per dimension)."""
        rank = tensor.dim()
        if len(positions) != rank:
            raise InvalidArgumentError("mask_mod: a tensor of rank %d is read with %d position(s) (one per dimension)"
                                       % (rank, len(positions)))
        if not 1 <= rank <= 4:
            raise InvalidArgumentError("mask_mod: tensors read by a modifier have rank 1 to 4, got %d" % rank)
        index = next((i for i, t in enumerate(self.tensors) if t is tensor), None)
        if index is None:
            index = len(self.tensors)
            self.tensors.append(tensor)
        args = ("t%d" % index,) + tuple(_operand(self, p, "int") for p in positions)
        negative = [p for p in args[1:] if isinstance(p, int) and p < 0]
        if negative:  # (a read outside the tensor is 0: t[-1] would not be Python's last element)
            raise InvalidArgumentError("mask_mod: a tensor is read at the negative position %d; positions count from "
                                       "0 (Python's t[-1] is not the last element here: write t[n - 1])" % negative[0])
        return _Int(self, self._emit("read", args))

    def emit(self, op, args):
        """The name (or constant) of op(args), folded where an operand is a bool constant, so that spellings of one
        modifier trace alike (torch.where(c, True, x) is c | x) and share a bundle."""
        folded = self._fold(op, args)
        if folded is not None:
            return folded
        return self._emit(op, args)

    def _not(self, c):
        return self._emit("xor", (c, True))

    def _emit(self, op, args):
        key = (op, args)
        name = self.memo.get(key)
        if name is None:
            name = "v%d" % len(self.statements)
            self.statements.append((name, op, args))
            self.memo[key] = name
        return name


    def _fold(self, op, args):
        is_bool = lambda a: isinstance(a, bool)
        if op in ("and", "or", "xor") and any(is_bool(a) for a in args):
            c, x = (args[0], args[1]) if is_bool(args[0]) else (args[1], args[0])
            if is_bool(x):
                return {"and": c and x, "or": c or x, "xor": c != x}[op]
            if op == "and":
                return x if c else False
            if op == "or":
                return True if c else x
            return self._not(x) if c else x
        if op == "select" and is_bool(args[0]):
            return args[1] if args[0] else args[2]
        if op == "select" and args[1] == args[2] and type(args[1]) is type(args[2]):
            return args[1]
        if op == "select" and (is_bool(args[1]) or is_bool(args[2])):
            c, a, b = args
            if is_bool(a) and is_bool(b):  # (a != b here)
                return c if a else self._not(c)
            if is_bool(a):  # c ? a : b
                return self.emit("or", (c, b)) if a else self.emit("and", (self._not(c), b))
            return self.emit("and", (c, a)) if not b else self.emit("or", (self._not(c), a))
        return None


# Set by flashc.score_mod, whose traces also have floats: how an index meets a float (op, the index, the other
# operand, whether swapped) and torch functions on floats. A mask modifier's trace has none: floats raise there.
_float_promotion = None
_float_torch_function = None


def _float_like(v, tracer):
    """Whether v is a float operand in `tracer` (a score modifier's trace only)."""
    return (_float_promotion is not None and getattr(tracer, "floats", False)
            and (isinstance(v, float) or getattr(v, "_is_float", False)))


class _TracedAttributeError(InvalidArgumentError, AttributeError):
    """A method a traced value does not have (an AttributeError too, so that getattr(x, name, default) still works)."""


class _Traced:
    """A traced value: an integer (_Int) or a condition (_Cond)."""

    def __init__(self, tracer, ref):
        self._tracer, self._ref = tracer, ref

    def _prefix(self):
        return "score_mod" if getattr(self._tracer, "floats", False) else "mask_mod"

    def _unhashable(self):
        # A traced value stands for every row's value: as a dict key or a set member it would be looked up by
        # identity, so `WIN.get(h, 2)` or `h in SPECIAL` would trace the default or False for every head.
        raise InvalidArgumentError("%s: a traced value cannot be a dict key or a set member (it stands for every "
                                   "row's value); compare it (h == 0), use torch.where chains, or read a tensor "
                                   "(t[h])" % self._prefix())

    def __getattr__(self, name):
        if name.startswith("_"):
            raise AttributeError(name)
        raise _TracedAttributeError("%s: a traced value has no method .%s; use Python operators and the torch "
                                    "functions the modifier supports (torch.where, torch.abs, ...)"
                                    % (self._prefix(), name))

    def _no_operator(self, *args):
        raise InvalidArgumentError("%s: this operator is not supported on traced values (supported on indices: "
                                   "+ - * // %% unary -, abs, comparisons; on conditions: & | ^ ~)" % self._prefix())

    def __getitem__(self, index):
        raise InvalidArgumentError("%s: a traced value cannot be indexed (index the tensor that holds it: "
                                   "t[q], t[b, h])" % self._prefix())

    def __str__(self):
        # (str(q) == "3" or an f-string traced to a constant: a mask that hid every key, with no error)
        raise InvalidArgumentError("%s: a traced value has no text (it stands for every row's value); compare it "
                                   "instead of formatting it" % self._prefix())

    def __format__(self, spec):
        return self.__str__()

    def __int__(self):
        raise InvalidArgumentError("%s: a traced value is not a Python number (it stands for every row's value); "
                                   "use it in expressions" % self._prefix())

    __round__ = __trunc__ = __floor__ = __ceil__ = lambda self, *args: self.__int__()

    def __len__(self):
        raise InvalidArgumentError("%s: a traced value has no length" % self._prefix())

    def __iter__(self):
        raise InvalidArgumentError("%s: a traced value cannot be iterated" % self._prefix())

    def _emit_binary(self, op, other, kind, reverse):
        """The emitted op(self, other) (operands of `kind`, swapped when reverse): a name or a folded constant."""
        a, b = _operand(self._tracer, self, kind), _operand(self._tracer, other, kind)
        return self._tracer.emit(op, (b, a) if reverse else (a, b))

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        import torch
        kwargs = kwargs or {}
        tracer = _tracer_of(*args)
        if _float_torch_function is not None and any(_float_like(a, tracer) for a in args):
            return _float_torch_function(func, args, kwargs)
        if func in (torch.where,) and len(args) == 3 and not kwargs:
            return where(*args)
        if func in (torch.minimum, torch.min) and len(args) == 2 and not kwargs:
            return minimum(*args)
        if func in (torch.maximum, torch.max) and len(args) == 2 and not kwargs:
            return maximum(*args)
        if func in (torch.logical_and,) and len(args) == 2:
            return _cond(args[0]) & args[1]
        if func in (torch.logical_or,) and len(args) == 2:
            return _cond(args[0]) | args[1]
        if func in (torch.logical_not,) and len(args) == 1:
            return ~_cond(args[0])
        if func in (torch.abs,) and len(args) == 1:
            return abs(args[0])
        if func is torch.Tensor.__getitem__ and args and isinstance(args[0], torch.Tensor):
            score = getattr(tracer, "floats", False)
            raise InvalidArgumentError(
                "%s: t[i] at a traced index is recorded for %s tensor that is a global or closure variable of the "
                "modifier; this one (%s) is %s: use flashc.%s.read(t, i) for a tensor reached otherwise (an "
                "attribute, a helper's)" % ("score_mod" if score else "mask_mod",
                                            "an integer or float" if score else "an integer", args[0].dtype,
                                            "not readable" if not (_is_int_tensor(args[0]) or (
                                                score and args[0].is_floating_point())) else "reached otherwise",
                                            "score_mod" if score else "mask_mod"))
        if _float_torch_function is not None and getattr(tracer, "floats", False):
            return _float_torch_function(func, args, kwargs)  # a score modifier: torch.exp(q) is a float, as in torch
        raise InvalidArgumentError("mask_mod: %s is not supported on the traced indices (supported: + - * // %% "
                                   "unary -, abs, comparisons, & | ^ ~, torch.where, torch.minimum, torch.maximum)"
                                   % getattr(func, "__name__", func))


def _operand(tracer, v, want):
    """The program argument of v (a traced value or a Python constant) as an integer or a condition."""
    if isinstance(v, _Traced):
        if v._tracer is not tracer:
            raise InvalidArgumentError("mask_mod: a value of another trace")
        if want == "int" and not isinstance(v, _Int):
            raise InvalidArgumentError("mask_mod: an integer was expected, got a condition (use torch.where(cond, "
                                       "a, b) to turn a condition into a number)")
        if want == "bool" and not isinstance(v, _Cond):
            raise InvalidArgumentError("mask_mod: a condition was expected, got an integer (compare it: x != 0)")
        return v._ref
    if want == "bool" and isinstance(v, bool):
        return v
    if want == "int" and isinstance(v, int) and not isinstance(v, bool):
        if not _INT64_MIN <= v <= _INT64_MAX:
            raise InvalidArgumentError("mask_mod: constant %d does not fit 64 bits" % v)
        return v
    raise InvalidArgumentError("mask_mod: expected %s, got %r (%s)" % (
        "an integer index expression or an int" if want == "int" else "a condition or a bool", v, type(v).__name__))


class _Int(_Traced):
    def _bin(self, op, other, reverse=False, result=None):
        if _float_like(other, self._tracer):  # an index meeting a float in a score modifier: a float op
            return _float_promotion(op, self, other, reverse)
        return (result or _Int)(self._tracer, self._emit_binary(op, other, "int", reverse))

    __add__ = lambda self, o: self._bin("add", o)
    __radd__ = lambda self, o: self._bin("add", o, True)
    __sub__ = lambda self, o: self._bin("sub", o)
    __rsub__ = lambda self, o: self._bin("sub", o, True)
    __mul__ = lambda self, o: self._bin("mul", o)
    __rmul__ = lambda self, o: self._bin("mul", o, True)
    __floordiv__ = lambda self, o: self._bin("floordiv", o)
    __rfloordiv__ = lambda self, o: self._bin("floordiv", o, True)

    def _python_mod(self, a, b):
        # Python's %: a - floor(a / b) * b (the divisor's sign).
        t = self._tracer
        q = t.emit("floordiv", (a, b))
        return _Int(t, t.emit("sub", (a, t.emit("mul", (q, b)))))

    def __mod__(self, o):
        return self._python_mod(_operand(self._tracer, self, "int"), _operand(self._tracer, o, "int"))

    def __rmod__(self, o):
        return self._python_mod(_operand(self._tracer, o, "int"), _operand(self._tracer, self, "int"))

    def __neg__(self):
        return _Int(self._tracer, self._tracer.emit("sub", (0, self._ref)))

    def __pos__(self):
        return self

    def __abs__(self):
        return where(self < 0, -self, self)

    # (Not in the index language: bitwise ops, shifts, powers. & | ^ ~ are on conditions, not on integers.)
    __and__ = __rand__ = __or__ = __ror__ = __xor__ = __rxor__ = __invert__ = _Traced._no_operator
    __lshift__ = __rlshift__ = __rshift__ = __rrshift__ = __pow__ = __rpow__ = _Traced._no_operator
    __divmod__ = __rdivmod__ = __round__ = __trunc__ = __floor__ = __ceil__ = _Traced._no_operator

    def __truediv__(self, o, reverse=False):
        if getattr(self._tracer, "floats", False) and _float_promotion is not None:  # a score modifier: floats
            return _float_promotion("truediv", self, o, reverse)
        raise InvalidArgumentError("mask_mod: '/' is true (float) division; use '//' on indices")

    def __rtruediv__(self, o):
        return self.__truediv__(o, reverse=True)
    __lt__ = lambda self, o: self._bin("lt", o, result=_Cond)
    __le__ = lambda self, o: self._bin("le", o, result=_Cond)
    __gt__ = lambda self, o: self._bin("gt", o, result=_Cond)
    __ge__ = lambda self, o: self._bin("ge", o, result=_Cond)
    __eq__ = lambda self, o: self._bin("eq", o, result=_Cond)
    __ne__ = lambda self, o: self._bin("ne", o, result=_Cond)
    __hash__ = _Traced._unhashable

    def __bool__(self):
        raise InvalidArgumentError("mask_mod: a traced index has no Python truth value (compare it: x != 0)")

    def __index__(self):
        raise InvalidArgumentError("mask_mod: a traced index is not a Python int (it stands for every query or key "
                                   "row); use it in expressions")


class _Cond(_Traced):
    def _bin(self, op, other, reverse=False):
        return _cond_of(self._tracer, self._emit_binary(op, other, "bool", reverse))

    __and__ = lambda self, o: self._bin("and", o)
    __rand__ = lambda self, o: self._bin("and", o, True)
    __or__ = lambda self, o: self._bin("or", o)
    __ror__ = lambda self, o: self._bin("or", o, True)
    __xor__ = lambda self, o: self._bin("xor", o)
    __rxor__ = lambda self, o: self._bin("xor", o, True)

    def __invert__(self):
        return self._bin("xor", True)

    def _not_an_integer(self, *args):
        raise InvalidArgumentError("mask_mod: an integer was expected, got a condition (use torch.where(cond, a, b) "
                                   "to turn a condition into a number)")

    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = _not_an_integer
    __floordiv__ = __rfloordiv__ = __mod__ = __rmod__ = __neg__ = _not_an_integer
    __lt__ = __le__ = __gt__ = __ge__ = _not_an_integer

    def __eq__(self, o):
        return ~(self ^ o)

    def __ne__(self, o):
        return self ^ o

    __hash__ = _Traced._unhashable

    def __bool__(self):
        raise InvalidArgumentError("mask_mod: a traced condition has no Python truth value: 'and', 'or', 'not' and "
                                   "'if' cannot see it; use &, |, ~ and torch.where (or flashc.mask_mod.where)")


def _cond_of(tracer, ref):
    """A traced condition; a constant one where a fold gave a Python bool (`~` on it stays a logical not, as on torch's
    bool tensors: a Python bool's ~ is integer inversion)."""
    return _Cond(tracer, ref)


def _cond(v):
    if isinstance(v, _Cond):
        return v
    raise InvalidArgumentError("mask_mod: expected a traced condition, got %r" % (v,))


def _tracer_of(*values):
    for v in values:
        if isinstance(v, _Traced):
            return v._tracer
    return None


def where(cond, a, b):
    """cond ? a : b on traced values (torch.where works too)."""
    tracer = _tracer_of(cond, a, b)
    if tracer is None:
        return a if cond else b
    if _float_torch_function is not None and (_float_like(a, tracer) or _float_like(b, tracer)):
        import torch
        return _float_torch_function(torch.where, (cond, a, b), {})
    c = _operand(tracer, cond, "bool")
    kind = "bool" if isinstance(a, (_Cond, bool)) and isinstance(b, (_Cond, bool)) else "int"
    ref = tracer.emit("select", (c, _operand(tracer, a, kind), _operand(tracer, b, kind)))
    if kind == "bool":
        return _cond_of(tracer, ref)
    return ref if isinstance(ref, int) else _Int(tracer, ref)


def minimum(a, b):
    tracer = _tracer_of(a, b)
    if tracer is None:
        return min(a, b)
    return _Int(tracer, tracer.emit("min", (_operand(tracer, a, "int"), _operand(tracer, b, "int"))))


def maximum(a, b):
    tracer = _tracer_of(a, b)
    if tracer is None:
        return max(a, b)
    return _Int(tracer, tracer.emit("max", (_operand(tracer, a, "int"), _operand(tracer, b, "int"))))


def _is_int_tensor(x):
    """A torch tensor of integers (what a modifier may read), told apart without importing torch."""
    dtype = getattr(x, "dtype", None)
    return (callable(getattr(x, "dim", None)) and dtype is not None and "int" in str(dtype)
            and type(x).__module__.split(".")[0] == "torch")


class _TracedTensor:
    """A tensor of integers a traced modifier reads: t[i] or t[i, j] records a read."""

    def __init__(self, tracer, tensor):
        self._tracer, self._tensor = tracer, tensor

    def __getitem__(self, index):
        positions = index if isinstance(index, tuple) else (index,)
        return self._tracer.read(self._tensor, positions)

    def __getattr__(self, name):
        raise InvalidArgumentError("mask_mod: a tensor the modifier reads supports indexing only (t[i], t[i, j]), "
                                   "not .%s" % name)

    def __len__(self):
        raise InvalidArgumentError("mask_mod: a tensor the modifier reads supports indexing only (t[i], t[i, j]), "
                                   "not len(); read at an index itself (t[q_idx]), it must hold the index's range")


def block_sparse(layout, block_size):
    """A block-sparse layout as a mask modifier (block-sparse FlashAttention): key k is visible from query q when
    layout[h, q // block_size, k // block_size] != 0 (layout [Hq, query blocks, key blocks], integers), or
    layout[b, h, ...] for a [B, Hq, ...] layout. The block size is part of the modifier (its text); the layout's values
    are the call's: with a multiple of 64 the kernels' block-class table classifies every block exactly (hidden blocks
    skipped, shown ones unmasked).

        flashc.torch.attention(q, k, v, mask_mod=flashc.mask_mod.block_sparse(layout, 128))"""
    if not isinstance(block_size, int) or isinstance(block_size, bool) or block_size < 1:
        raise InvalidArgumentError("block_sparse: block_size must be a positive int, got %r" % (block_size,))
    rank = layout.dim() if callable(getattr(layout, "dim", None)) else None
    if rank not in (3, 4):
        raise InvalidArgumentError("block_sparse: the layout is [Hq, query blocks, key blocks] or [B, Hq, query "
                                   "blocks, key blocks], got rank %s" % rank)
    if rank == 3:
        return lambda b, h, q_idx, kv_idx: read(layout, h, q_idx // block_size, kv_idx // block_size) != 0
    return lambda b, h, q_idx, kv_idx: read(layout, b, h, q_idx // block_size, kv_idx // block_size) != 0


# The traces running in this thread (innermost last): read() at constant positions records a read in the trace that
# calls it rather than reading the tensor now, which would put today's value into the modifier's text.
_tracing = threading.local()


@contextlib.contextmanager
def _active(tracer):
    stack = _tracing.__dict__.setdefault("stack", [])
    stack.append(tracer)
    try:
        yield
    finally:
        stack.pop()


def read(tensor, *positions):
    """tensor[positions] in a traced modifier (what `tensor[i]` records when the tensor is a global or a closure
    variable of the modifier; use read() where it is reached otherwise, e.g. as an attribute)."""
    if isinstance(tensor, _TracedTensor):
        return tensor[positions]
    tracer = _tracer_of(*positions) or (_tracing.__dict__.get("stack") or [None])[-1]
    if tracer is None:
        return tensor[positions]
    return tracer.read(tensor, positions)


def _with_traced_tensors(fn, tracer, readable=None):
    """fn with the integer tensors it reads from its globals and closure replaced by _TracedTensor (a Python
    function; anything else is called as it is, reading through read()). Tensors a nested function or helper reads
    are not found (torch dispatches t[i] to a traced index only when t itself overrides torch functions): read()."""
    import types
    code = getattr(fn, "__code__", None)
    if code is None or not isinstance(fn, types.FunctionType):
        return fn
    readable = readable or _is_int_tensor
    globals_ = fn.__globals__
    replaced = {n: _TracedTensor(tracer, globals_[n]) for n in code.co_names
                if n in globals_ and readable(globals_[n])}
    closure = fn.__closure__
    if closure:
        cells = []
        for cell in closure:
            try:
                value = cell.cell_contents
            except ValueError:  # an empty cell
                cells.append(cell)
                continue
            cells.append(types.CellType(_TracedTensor(tracer, value)) if readable(value) else cell)
        closure = tuple(cells)
    if not replaced and closure == fn.__closure__:
        return fn
    new_globals = dict(globals_, **replaced) if replaced else globals_
    traced = types.FunctionType(code, new_globals, fn.__name__, fn.__defaults__, closure)
    traced.__kwdefaults__ = fn.__kwdefaults__
    return traced


def _positional_arity(fn):
    """How many positional parameters fn takes: from its code object for a Python function (inspect.signature
    costs a third of a trace, which runs on every attention call), else from its signature (4 when unknown)."""
    code = getattr(fn, "__code__", None)
    if code is not None and not inspect.ismethod(fn) and not hasattr(fn, "__wrapped__"):
        # (A keyword-only parameter without a default is nothing the trace can pass: a raw TypeError before.)
        required = code.co_varnames[code.co_argcount:code.co_argcount + code.co_kwonlyargcount]
        missing = [name for name in required if name not in (getattr(fn, "__kwdefaults__", None) or {})]
        if missing:
            raise InvalidArgumentError("modifier: keyword-only parameter %s has no default; the trace passes the "
                                       "indices (and the score) positionally only" % ", ".join(missing))
        return code.co_argcount  # (a functools.wraps wrapper's own code is (*args, **kwargs): its signature follows)
    try:
        return len([p for p in inspect.signature(fn).parameters.values()
                    if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)])
    except (TypeError, ValueError):
        return 4


def trace(fn):
    """The IndexProgram of mask modifier `fn`: fn(b, h, q_idx, kv_idx) (FlexAttention's signature) or
    fn(q_idx, kv_idx), returning whether key kv_idx is visible from query q_idx. An IndexProgram or its text form
    is returned as it is (parsed)."""
    if isinstance(fn, IndexProgram):
        return fn
    if isinstance(fn, str):
        return IndexProgram.parse(fn)
    if not callable(fn):
        raise InvalidArgumentError("mask_mod: expected a function of (b, h, q_idx, kv_idx), an IndexProgram or its "
                                   "text, got %s" % type(fn).__name__)
    arity = _positional_arity(fn)
    tracer = _Tracer()
    q, k = _Int(tracer, "q"), _Int(tracer, "k")
    traced_fn = _with_traced_tensors(fn, tracer)
    if arity == 4:
        with _active(tracer):
            result = traced_fn(_Int(tracer, "b"), _Int(tracer, "h"), q, k)
    elif arity == 2:
        with _active(tracer):
            result = traced_fn(q, k)
    else:
        raise InvalidArgumentError("mask_mod: the function takes (b, h, q_idx, kv_idx) or (q_idx, kv_idx), got %d "
                                   "parameters" % arity)
    if result is False:
        # Python's own False, which no traced condition reached: a test Python decided once while tracing
        # (`isinstance(q_idx, int) and ...`), and a mask that would hide every key (every output row zero).
        raise InvalidArgumentError("mask_mod: the function returned Python's False, not a condition on its indices: "
                                   "that mask hides every key. A Python test of a traced index (isinstance, `and`, "
                                   "`or`, `not`) is decided once while tracing; write the condition with comparisons "
                                   "and & | ~")
    if isinstance(result, _Cond) and result._tracer is tracer and isinstance(result._ref, bool):
        result = result._ref  # a condition folded to a constant
    if isinstance(result, bool):
        return IndexProgram([], result)
    if not isinstance(result, _Cond) or result._tracer is not tracer:
        raise InvalidArgumentError("mask_mod: the function must return a condition on its indices (a comparison, "
                                   "or & | ~ of comparisons), got %r" % (result,))
    # Only the statements the result depends on.
    statements, result_name, order = prune(tracer, result._ref)
    return IndexProgram(statements, result_name, [tracer.tensors[i] for i in order])
