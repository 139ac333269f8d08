"""Score modifiers: the score the softmax sees, written as a Python function of the score and its indices.

    def alibi(score, b, h, q_idx, kv_idx):        # FlexAttention's score_mod signature
        return score + slopes[h] * (kv_idx - q_idx)

    def capped(score, b, h, q_idx, kv_idx):       # Gemma-2's soft cap
        return 30.0 * torch.tanh(score / 30.0)

    flashc.torch.attention(q, k, v, causal=True, score_mod=alibi)

The function is traced once a call with a symbolic score (f32: scale · q·k) and symbolic indices into a score
program, which becomes flash.attention's `score_mod` region; the compiler differentiates it for the backward. Its
text is part of the configuration (another modifier is another bundle); the tensors it reads are arguments of the
call. Supported: on the score and other floats + - * /, unary -, abs, comparisons, torch.where, torch.minimum /
maximum, torch.tanh, exp, log, sqrt; on the indices everything a mask modifier allows (flashc.mask_mod), an index
becoming a float where it meets one (kv_idx - q_idx times a float); float constants (rounded to f32) and reads
t[i] / t[i, j] of float tensors (read as float32) and integer tensors (int32; an integer read is an index) of rank
1 to 4 found among the function's globals and closure variables (or read(t, i)); a position outside a tensor reads
0. A score of -inf hides the key (no gradient flows through it).

Text form (configs, manifests, flashc-run): a mask program's statements (flashc.mask_mod) plus f32 ones
  itof <int>                 the index as a float
  addf subf mulf divf maxf minf <a> <b>, negf tanh exp log sqrt absf <a>
  eqf nef ltf lef gtf gef <a> <b>       (ordered: false where either is NaN; Python's a != b traces as
                                         xor (eqf a b) true, true there, as in Python and torch)
  read tN <pos>...           of an f32 tensor: a float; of an i32 one: an index
arguments s (the score), b, h, q, k, ints, true / false, f:<hex float> (an f32 constant) and earlier names.
"""

import math
import struct

from .errors import InvalidArgumentError
from . import mask_mod as _mm

__all__ = ["ScoreProgram", "trace", "read", "where", "minimum", "maximum", "tanh", "exp", "log", "sqrt"]

_FLOAT_BINARY = ("addf", "subf", "mulf", "divf", "maxf", "minf")
_FLOAT_UNARY = ("negf", "tanh", "exp", "log", "sqrt", "absf")
_FLOAT_CMP = ("eqf", "nef", "ltf", "lef", "gtf", "gef")
_OPS = _mm._OPS + _FLOAT_BINARY + _FLOAT_UNARY + _FLOAT_CMP + ("itof",)
_MLIR_FLOAT = {"addf": "addf", "subf": "subf", "mulf": "mulf", "divf": "divf", "maxf": "maximumf",
               "minf": "minimumf", "negf": "arith.negf", "tanh": "math.tanh", "exp": "math.exp", "log": "math.log",
               "sqrt": "math.sqrt", "absf": "math.absf", "eqf": "oeq", "nef": "one", "ltf": "olt", "lef": "ole",
               "gtf": "ogt", "gef": "oge"}


def f32(x):
    """x rounded to the nearest f32 (what the region's constant holds): past the f32 range, +-inf (IEEE rounding)."""
    try:
        x = float(x)
    except OverflowError:
        raise InvalidArgumentError("score_mod: constant %r does not fit a float" % (x,))
    if not math.isfinite(x):
        return x
    try:
        return struct.unpack("<f", struct.pack("<f", x))[0]
    except OverflowError:
        return math.copysign(math.inf, x)


class Float32:
    """An f32 constant of a program (kept apart from ints: 2.0 and 2 are different arguments)."""
    __slots__ = ("value",)

    def __init__(self, value):
        self.value = f32(value)

    @property
    def text(self):
        return "f:" + self.value.hex() if math.isfinite(self.value) else "f:" + repr(self.value)

    def __eq__(self, other):
        return isinstance(other, Float32) and struct.pack("<f", self.value) == struct.pack("<f", other.value)

    def __hash__(self):
        return hash(("f32", struct.pack("<f", self.value)))

    def __repr__(self):
        return self.text


class ScoreProgram:
    """A score modifier as straight-line statements (name, op, args) ending in the f32 `result`; args are 's', 'b',
    'h', 'q', 'k', tensors 't0', ... (first argument of a read), ints, bools, Float32 constants or earlier names.
    `tensors`: the torch tensors a trace read (t0, t1, ...; the call's arguments, not the program's identity);
    `tensor_kinds`: 'f32' or 'i32' for each (part of the program: it types the reads)."""

    def __init__(self, statements, result, tensor_kinds=(), tensors=()):
        self.statements = tuple(statements)
        self.result = result
        self.tensor_kinds = tuple(tensor_kinds)
        self.tensors = tuple(tensors)
        self._check()

    def with_tensors(self, *tensors):
        return ScoreProgram(self.statements, self.result, self.tensor_kinds, tensors)

    @property
    def tensor_ranks(self):
        return tuple(self._ranks[i] for i in range(len(self._ranks)))

    # ---- text forms ----------------------------------------------------------------------------------------
    @property
    def text(self):
        """'v0 = read t0 h; v1 = sub k q; v2 = itof v1; v3 = mulf v0 v2; v4 = addf s v3; yield v4 | f32' (the
        tensors' kinds after '|')."""
        parts = ["%s = %s %s" % (n, op, " ".join(_arg_text(a) for a in args)) for n, op, args in self.statements]
        text = "; ".join(parts + ["yield " + _arg_text(self.result)])
        return text + (" | " + " ".join(self.tensor_kinds) if self.tensor_kinds else "")

    @classmethod
    def parse(cls, text):
        if not isinstance(text, str) or not text.strip():
            raise InvalidArgumentError("score_mod: expected a score program ('v0 = addf s f:0x1p+0; yield v0'), "
                                       "got %r" % (text,))
        body, _, kinds = text.partition("|")
        statements, result = _mm.parse_statements(body, "score_mod", _parse_arg)
        return cls(statements, result, kinds.split())

    def tensor_types(self):
        """The MLIR type of each tensor the program reads: tensor<?x..xf32> or tensor<?x..xi32>."""
        return tuple("tensor<%s%s>" % ("?x" * r, k) for r, k in zip(self.tensor_ranks, self.tensor_kinds))

    def region_text(self, indent="    "):
        """The body of flash.attention's score_mod region: arguments (s, b, h, q_idx, kv_idx), then one tensor per
        tensor the program reads (the op's score_mod operands)."""
        types = self.tensor_types()
        tensor_args = "".join(", %%t%d: %s" % (i, t) for i, t in enumerate(types))
        lines = ["^bb0(%%s: f32, %%b: index, %%h: index, %%q_idx: index, %%kv_idx: index%s):" % tensor_args]
        constants = {}

        def operand(a):
            if isinstance(a, Float32):
                key = ("f32", a)
                if key not in constants:
                    constants[key] = "%%cf%d" % len(constants)
                    bits = struct.unpack("<I", struct.pack("<f", a.value))[0]
                    lines.append("%s%s = arith.constant 0x%08X : f32" % (indent, constants[key], bits))
                return constants[key]
            constant = _mm.constant_operand(a, constants, lines, indent)
            if constant is not None:
                return constant
            return {"s": "%s", "b": "%b", "h": "%h", "q": "%q_idx", "k": "%kv_idx"}.get(a, "%v_" + a)

        for name, op, args in self.statements:
            out = "%%v_%s" % name
            if op == "read":
                t = int(args[0][1:])
                element = "%s.e" % out if self.tensor_kinds[t] == "i32" else out
                lines.append("%s%s = tensor.extract %%%s[%s] : %s" % (
                    indent, element, args[0], ", ".join(operand(a) for a in args[1:]), types[t]))
                if self.tensor_kinds[t] == "i32":
                    lines.append("%s%s = arith.index_cast %s : i32 to index" % (indent, out, element))
                continue
            ops = [operand(a) for a in args]
            if op == "itof":
                lines.append("%s%s.i = arith.index_cast %s : index to i64" % (indent, out, ops[0]))
                lines.append("%s%s = arith.sitofp %s.i : i64 to f32" % (indent, out, out))
            elif op in _FLOAT_BINARY:
                lines.append("%s%s = arith.%s %s, %s : f32" % (indent, out, _MLIR_FLOAT[op], ops[0], ops[1]))
            elif op in _FLOAT_UNARY:
                lines.append("%s%s = %s %s : f32" % (indent, out, _MLIR_FLOAT[op], ops[0]))
            elif op in _FLOAT_CMP:
                lines.append("%s%s = arith.cmpf %s, %s, %s : f32" % (indent, out, _MLIR_FLOAT[op], ops[0], ops[1]))
            elif op == "select":
                kind = {"bool": "i1", "int": "index", "float": "f32"}[self._kind_of(args[1])]
                lines.append("%s%s = arith.select %s, %s, %s : %s" % (indent, out, ops[0], ops[1], ops[2], kind))
            elif op in _mm._CMP_OPS:
                lines.append("%s%s = arith.%s, %s, %s : index" % (indent, out, _mm._ARITH[op], ops[0], ops[1]))
            else:
                kind = "i1" if op in _mm._BOOL_OPS else "index"
                lines.append("%s%s = arith.%s %s, %s : %s" % (indent, out, _mm._ARITH[op], ops[0], ops[1], kind))
        lines.append("%sflash.yield %s : f32" % (indent, operand(self.result)))
        return "\n".join(lines)

    def _kind_of(self, a):
        if isinstance(a, Float32):
            return "float"
        if isinstance(a, bool):
            return "bool"
        return "int" if isinstance(a, int) else self._kinds[a]

    # ---- evaluation (float64 torch: the reference, differentiable in s) ----------------------------------------
    def evaluate(self, s, q, k, b=0, h=0, tensors=None):
        """The modified scores at s (a float64 torch tensor) for query rows q and key rows k (batch b, query head h),
        broadcastable int64 torch tensors or ints; index arithmetic by the compiler's rules, float math in float64,
        reads 0 outside a tensor. Differentiable in s (torch autograd)."""
        import torch
        tensors = self.tensors if tensors is None else tuple(tensors)
        if len(tensors) < len(self._ranks):
            raise InvalidArgumentError("score_mod: the program reads %d tensor(s), %d given"
                                       % (len(self._ranks), len(tensors)))
        device = s.device
        as_index = lambda x: x if isinstance(x, torch.Tensor) else torch.tensor(x, dtype=torch.int64, device=device)
        values = {"s": s, "b": as_index(b), "h": as_index(h), "q": as_index(q), "k": as_index(k)}
        ints = _mm._TensorOps(values["q"])

        def get(a):
            if isinstance(a, Float32):
                return torch.tensor(a.value, dtype=torch.float64, device=device)
            if isinstance(a, bool):
                return ints.boolean(a)
            if isinstance(a, int):
                return ints.constant(a)
            return values[a]

        floats = {"addf": torch.add, "subf": torch.sub, "mulf": torch.mul, "divf": torch.div,
                  "maxf": torch.maximum, "minf": torch.minimum, "negf": torch.neg, "tanh": torch.tanh,
                  "exp": torch.exp, "log": torch.log, "sqrt": torch.sqrt, "absf": torch.abs,
                  "eqf": torch.eq, "nef": torch.ne, "ltf": torch.lt, "lef": torch.le, "gtf": torch.gt, "gef": torch.ge}
        for name, op, args in self.statements:
            if op == "read":
                t = tensors[int(args[0][1:])]
                if self.tensor_kinds[int(args[0][1:])] == "f32":  # (as the kernels read it: f32, then widened)
                    values[name] = ints.read(t.to(torch.float32), [get(a) for a in args[1:]], torch.float64)
                else:
                    values[name] = ints.read(t, [get(a) for a in args[1:]])
            elif op == "itof":
                values[name] = get(args[0]).to(torch.float64)
            elif op == "nef":  # ordered: false where either is NaN
                x, y = get(args[0]), get(args[1])
                values[name] = (x != y) & (x == x) & (y == y)
            elif op in floats:
                values[name] = floats[op](*[get(a) for a in args])
            elif op == "select":
                values[name] = torch.where(*[get(a) for a in args])
            else:
                values[name] = getattr(ints, op)(*[get(a) for a in args])
        return get(self.result) + torch.zeros_like(s)

    def __eq__(self, other):
        return isinstance(other, ScoreProgram) and other.text == self.text

    def __hash__(self):
        return hash(self.text)

    def __repr__(self):
        return "ScoreProgram(%r)" % self.text

    # ---- checks -------------------------------------------------------------------------------------------------
    def _check(self):
        kinds = {"s": "float", "b": "int", "h": "int", "q": "int", "k": "int"}
        self._ranks = {}

        def kind(a, where):
            if isinstance(a, Float32):
                return "float"
            if isinstance(a, bool):
                return "bool"
            if isinstance(a, int):
                if not _mm._INT64_MIN <= a <= _mm._INT64_MAX:
                    raise InvalidArgumentError("score_mod: constant %d does not fit 64 bits (%s)" % (a, where))
                return "int"
            if a not in kinds:
                raise InvalidArgumentError("score_mod: %r is used before it is defined (%s)" % (a, where))
            return kinds[a]

        for kind_name in self.tensor_kinds:
            if kind_name not in ("f32", "i32"):
                raise InvalidArgumentError("score_mod: a tensor is read as f32 or i32, got %r" % (kind_name,))
        for name, op, args in self.statements:
            where = "statement %s = %s" % (name, op)
            if op not in _OPS:
                raise InvalidArgumentError("score_mod: unknown op %r (known: %s)" % (op, " ".join(_OPS)))
            if (name in kinds or name in ("yield", "true", "false") or not name.isidentifier()
                    or _mm._tensor_index(name) is not None):
                raise InvalidArgumentError("score_mod: %r cannot name a value (%s)" % (name, where))
            if op == "read":
                t = _mm._tensor_index(args[0]) if args and isinstance(args[0], str) else None
                if t is None or not 2 <= len(args) <= 5:
                    raise InvalidArgumentError("score_mod: read takes a tensor (t0, t1, ...) and 1 to 4 positions "
                                               "(%s)" % where)
                if t >= len(self.tensor_kinds):
                    raise InvalidArgumentError("score_mod: t%d's kind (f32 / i32) is not given (%s)" % (t, where))
                if any(kind(a, where) != "int" for a in args[1:]):
                    raise InvalidArgumentError("score_mod: read's positions are integers (%s)" % where)
                if self._ranks.setdefault(t, len(args) - 1) != len(args) - 1:
                    raise InvalidArgumentError("score_mod: tensor t%d is read with %d and %d positions" % (
                        t, self._ranks[t], len(args) - 1))
                kinds[name] = "float" if self.tensor_kinds[t] == "f32" else "int"
                continue
            arg_kinds = [kind(a, where) for a in args]
            want = 3 if op == "select" else (1 if op in _FLOAT_UNARY or op == "itof" else 2)
            if len(args) != want:
                raise InvalidArgumentError("score_mod: %s takes %d values, got %d" % (op, want, len(args)))
            if op == "itof":
                if arg_kinds != ["int"]:
                    raise InvalidArgumentError("score_mod: itof takes an integer (%s)" % where)
                kinds[name] = "float"
            elif op in _FLOAT_BINARY or op in _FLOAT_UNARY or op in _FLOAT_CMP:
                if any(k != "float" for k in arg_kinds):
                    raise InvalidArgumentError("score_mod: %s takes floats (%s)" % (op, where))
                kinds[name] = "bool" if op in _FLOAT_CMP else "float"
            elif op in _mm._INT_OPS or op in _mm._CMP_OPS:
                if arg_kinds != ["int", "int"]:
                    raise InvalidArgumentError("score_mod: %s takes two integers (%s)" % (op, where))
                kinds[name] = "int" if op in _mm._INT_OPS else "bool"
            elif op in _mm._BOOL_OPS:
                if arg_kinds != ["bool", "bool"]:
                    raise InvalidArgumentError("score_mod: %s takes two conditions (%s)" % (op, where))
                kinds[name] = "bool"
            else:
                if arg_kinds[0] != "bool" or arg_kinds[1] != arg_kinds[2]:
                    raise InvalidArgumentError("score_mod: select takes a condition and two values of one kind (%s)"
                                               % where)
                kinds[name] = arg_kinds[1]
        if kind(self.result, "yield") != "float":
            raise InvalidArgumentError("score_mod: the modifier must give a score (a float), not %s"
                                       % ("a condition" if kind(self.result, "yield") == "bool" else "an integer"))
        if sorted(self._ranks) != list(range(len(self._ranks))) or len(self._ranks) != len(self.tensor_kinds):
            raise InvalidArgumentError("score_mod: the tensors read must be t0, t1, ... without gaps, each with a "
                                       "kind, got reads of %s and kinds %s"
                                       % (", ".join("t%d" % t for t in sorted(self._ranks)) or "none",
                                          " ".join(self.tensor_kinds) or "none"))
        self._kinds = kinds


def _arg_text(a):
    if isinstance(a, Float32):
        return a.text
    return _mm._arg_text(a)


def _parse_arg(word, text):
    if word.startswith("f:"):
        try:
            value = float.fromhex(word[2:]) if "0x" in word else float(word[2:])
        except (ValueError, OverflowError):
            raise InvalidArgumentError("score_mod %r: %r is not an f32 constant (f:<hex float>)" % (text, word))
        return Float32(value)
    if word == "s":
        return word
    return _mm._parse_arg(word, text)


# ---------------------------------------------------------------------------------------------- tracing
def _is_float_like(v):
    return isinstance(v, (_Float, float))


class _ScoreTracer(_mm._Tracer):
    floats = True  # (flashc.mask_mod: indices meeting floats become floats in this trace)

    def __init__(self):
        super().__init__()
        self.kinds = []  # 'f32' / 'i32' of each tensor read

    def read(self, tensor, positions):
        dtype = str(getattr(tensor, "dtype", ""))
        floating = "float" in dtype or "bfloat" in dtype
        if not floating:
            value = super().read(tensor, positions)
            index = next(i for i, t in enumerate(self.tensors) if t is tensor)
        else:
            rank = tensor.dim()
            if len(positions) != rank:
                raise InvalidArgumentError("score_mod: a tensor of rank %d is read with %d position(s)"
                                           % (rank, len(positions)))
            if not 1 <= rank <= 4:
                raise InvalidArgumentError("score_mod: tensors read by a modifier have rank 1 to 4, got %d" % rank)
            index = next((i for i, t in enumerate(self.tensors) if t is tensor), None)
            if index is None:
                index = len(self.tensors)
                self.tensors.append(tensor)
            args = ("t%d" % index,) + tuple(_mm._operand(self, p, "int") for p in positions)
            value = _Float(self, self._emit("read", args))
        while len(self.kinds) < len(self.tensors):
            self.kinds.append(None)
        self.kinds[index] = "f32" if floating else "i32"
        return value


def _float_operand(tracer, v):
    """The program argument of v as a float: a traced float, a traced index (converted), or a Python number."""
    if isinstance(v, _Float):
        return v._ref
    if isinstance(v, _mm._Int):
        return tracer.emit("itof", (v._ref,))
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return Float32(v)
    if isinstance(v, _mm._Cond):
        raise InvalidArgumentError("score_mod: a float was expected, got a condition (use torch.where(cond, a, b))")
    raise InvalidArgumentError("score_mod: expected a float expression or a number, got %r (%s)"
                               % (v, type(v).__name__))


class _Float(_mm._Traced):
    """A traced f32 value (the score, a float read, an index met by a float)."""
    _is_float = True

    def _bin(self, op, other, reverse=False, result=None):
        a, b = _float_operand(self._tracer, self), _float_operand(self._tracer, other)
        ref = self._tracer.emit(op, (b, a) if reverse else (a, b))
        return (result or _Float)(self._tracer, ref)

    __add__ = lambda self, o: self._bin("addf", o)
    __radd__ = lambda self, o: self._bin("addf", o, True)
    __sub__ = lambda self, o: self._bin("subf", o)
    __rsub__ = lambda self, o: self._bin("subf", o, True)
    __mul__ = lambda self, o: self._bin("mulf", o)
    __rmul__ = lambda self, o: self._bin("mulf", o, True)
    __truediv__ = lambda self, o: self._bin("divf", o)
    __rtruediv__ = lambda self, o: self._bin("divf", o, True)
    __lt__ = lambda self, o: self._bin("ltf", o, result=_mm._Cond)
    __le__ = lambda self, o: self._bin("lef", o, result=_mm._Cond)
    __gt__ = lambda self, o: self._bin("gtf", o, result=_mm._Cond)
    __ge__ = lambda self, o: self._bin("gef", o, result=_mm._Cond)
    __eq__ = lambda self, o: self._bin("eqf", o, result=_mm._Cond)
    # Python's and torch's != is true where either side is NaN: not (a == b), not the ordered nef.
    __ne__ = lambda self, o: ~self._bin("eqf", o, result=_mm._Cond)
    __hash__ = _mm._Traced._unhashable

    def _unary(self, op):
        return _Float(self._tracer, self._tracer.emit(op, (self._ref,)))

    __neg__ = lambda self: self._unary("negf")
    __pos__ = lambda self: self
    __abs__ = lambda self: self._unary("absf")

    def __floordiv__(self, o):
        raise InvalidArgumentError("score_mod: '//' is integer division; a float takes '/'")

    __rfloordiv__ = __mod__ = __rmod__ = __floordiv__

    def __pow__(self, o):
        raise InvalidArgumentError("score_mod: ** is not supported on a traced score (write s * s, or torch.exp / "
                                   "torch.log)")

    __rpow__ = __pow__

    def __bool__(self):
        raise InvalidArgumentError("score_mod: a traced score has no Python truth value: use torch.where")

    def __float__(self):
        raise InvalidArgumentError("score_mod: a traced score is not a Python float (it stands for every score); "
                                   "use torch functions on it (torch.tanh, not math.tanh)")

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        return _float_torch_function(func, args, kwargs or {})


def _float_torch_function(func, args, kwargs):
    import torch
    unary = {torch.tanh: "tanh", torch.exp: "exp", torch.log: "log", torch.sqrt: "sqrt", torch.abs: "absf",
             torch.neg: "negf"}
    if func in unary and len(args) == 1 and not kwargs:
        tracer = _mm._tracer_of(*args)
        return _Float(tracer, tracer.emit(unary[func], (_float_operand(tracer, args[0]),)))
    if func is torch.where and len(args) == 3 and not kwargs:
        return _float_where(*args)
    if func in (torch.minimum, torch.maximum, torch.min, torch.max) and len(args) == 2 and not kwargs:
        tracer = _mm._tracer_of(*args)
        op = "minf" if func in (torch.minimum, torch.min) else "maxf"
        return _Float(tracer, tracer.emit(op, tuple(_float_operand(tracer, a) for a in args)))
    if func is torch.clamp and len(args) >= 1:
        x = args[0]
        lo = args[1] if len(args) > 1 else kwargs.get("min")
        hi = args[2] if len(args) > 2 else kwargs.get("max")
        if lo is not None:
            x = _float_torch_function(torch.maximum, (x, lo), {})
        if hi is not None:
            x = _float_torch_function(torch.minimum, (x, hi), {})
        return x
    raise InvalidArgumentError("score_mod: %s is not supported on a traced score (supported: + - * / unary -, abs, "
                               "comparisons, torch.where, torch.minimum, torch.maximum, torch.clamp, torch.tanh, "
                               "torch.exp, torch.log, torch.sqrt)" % getattr(func, "__name__", func))


def _float_where(cond, a, b):
    tracer = _mm._tracer_of(cond, a, b)
    c = _mm._operand(tracer, cond, "bool")
    ref = tracer.emit("select", (c, _float_operand(tracer, a), _float_operand(tracer, b)))
    return _Float(tracer, ref)


def _plain(torch_name, x):
    """torch_name of a plain number (a modifier's constant), with IEEE results where Python's math raises, as the
    kernel's floats have them: log(0) = -inf, the log or square root of a negative number NaN, exp past the range inf."""
    try:
        return getattr(math, torch_name)(x)
    except ValueError:
        return -math.inf if torch_name == "log" and x == 0 else math.nan
    except OverflowError:
        return math.inf


def _unary_function(op, torch_name):
    def function(x):
        tracer = _mm._tracer_of(x)
        if tracer is None:
            return _plain(torch_name, x)
        return _Float(tracer, tracer.emit(op, (_float_operand(tracer, x),)))
    function.__name__ = torch_name
    function.__doc__ = "%s of a traced score (torch.%s works too)." % (torch_name, torch_name)
    return function


tanh = _unary_function("tanh", "tanh")
exp = _unary_function("exp", "exp")
log = _unary_function("log", "log")
sqrt = _unary_function("sqrt", "sqrt")


def where(cond, a, b):
    """cond ? a : b where a or b is a float (torch.where works too)."""
    if _mm._tracer_of(cond, a, b) is None:
        return a if cond else b
    return _float_where(cond, a, b)


def minimum(a, b):
    tracer = _mm._tracer_of(a, b)
    if tracer is None:
        return min(a, b)
    return _Float(tracer, tracer.emit("minf", (_float_operand(tracer, a), _float_operand(tracer, b))))


def maximum(a, b):
    tracer = _mm._tracer_of(a, b)
    if tracer is None:
        return max(a, b)
    return _Float(tracer, tracer.emit("maxf", (_float_operand(tracer, a), _float_operand(tracer, b))))


def read(tensor, *positions):
    """tensor[positions] in a traced modifier (where the tensor is not a global or closure variable of it)."""
    return _mm.read(tensor, *positions)


def _readable(x):
    """A torch tensor a score modifier may read: floating or integer."""
    dtype = str(getattr(x, "dtype", ""))
    return (callable(getattr(x, "dim", None)) and type(x).__module__.split(".")[0] == "torch"
            and ("int" in dtype or "float" in dtype) and "complex" not in dtype)


def trace(fn):
    """The ScoreProgram of score modifier `fn`: fn(score, b, h, q_idx, kv_idx) (FlexAttention's signature) or
    fn(score, q_idx, kv_idx), returning the score the softmax sees. A ScoreProgram or its text is returned parsed."""
    if isinstance(fn, ScoreProgram):
        return fn
    if isinstance(fn, str):
        return ScoreProgram.parse(fn)
    if not callable(fn):
        raise InvalidArgumentError("score_mod: expected a function of (score, b, h, q_idx, kv_idx), a ScoreProgram "
                                   "or its text, got %s" % type(fn).__name__)
    arity = _mm._positional_arity(fn)
    tracer = _ScoreTracer()
    s, q, k = _Float(tracer, "s"), _mm._Int(tracer, "q"), _mm._Int(tracer, "k")
    traced_fn = _mm._with_traced_tensors(fn, tracer, readable=_readable)
    if arity == 5:
        with _mm._active(tracer):
            result = traced_fn(s, _mm._Int(tracer, "b"), _mm._Int(tracer, "h"), q, k)
    elif arity == 3:
        with _mm._active(tracer):
            result = traced_fn(s, q, k)
    else:
        raise InvalidArgumentError("score_mod: the function takes (score, b, h, q_idx, kv_idx) or (score, q_idx, "
                                   "kv_idx), got %d parameters" % arity)
    if isinstance(result, (_mm._Int, int, float)) and not isinstance(result, bool):
        result = _Float(tracer, _float_operand(tracer, result)) if isinstance(result, _mm._Int) else result
    if isinstance(result, float) or (isinstance(result, int) and not isinstance(result, bool)):
        result_ref = Float32(result)
    elif isinstance(result, _Float) and result._tracer is tracer:
        result_ref = result._ref
    else:
        raise InvalidArgumentError("score_mod: the function must return the modified score (a float expression of "
                                   "the score), got %r" % (result,))
    statements, result_name, order = _mm.prune(tracer, result_ref)
    tensors = [tracer.tensors[i] for i in order]
    kinds = [tracer.kinds[i] for i in order]
    return ScoreProgram(statements, result_name, kinds, tensors)


# An index meeting a float (flashc.mask_mod's _Int ops in a score trace): the float op on both as floats.
_PROMOTED = {"add": "addf", "sub": "subf", "mul": "mulf", "truediv": "divf", "lt": "ltf", "le": "lef", "gt": "gtf",
             "ge": "gef", "eq": "eqf", "ne": "nef"}


def _promote(op, index, other, reverse):
    if op not in _PROMOTED:
        raise InvalidArgumentError("score_mod: %s of an index and a float is not supported (+ - * / and "
                                   "comparisons are)" % op)
    tracer = index._tracer
    a = _Float(tracer, _float_operand(tracer, index))
    if op == "ne":  # (unordered, as _Float's !=)
        return ~a._bin("eqf", other, reverse, result=_mm._Cond)
    return a._bin(_PROMOTED[op], other, reverse, result=_mm._Cond if op in _mm._CMP_OPS else None)


_mm._float_promotion = _promote
_mm._float_torch_function = _float_torch_function
