"""Which programs of a bundle flashc.torch launches, and how their parameters are named.

The binding speaks logical names (attention: q, k, v, o, lse, do, dq, dk, dv; FFN: x, w1, b1, w2, b2, y, dy,
dx, ...). Compilers name things their own way: program `attention0_forward` or the spec function's name
`attention`, parameters `o` or `out` or `result0`, `do` or `d_out`. Names are resolved once per bundle
and program; a bundle whose parameters do not map one-to-one onto the logical set is refused with a
message listing both. The inputs a program may leave out are the FFN biases b1 and b2 in the backward (it reads
the training forward's saved pre = x·w1 + b1, and no gradient depends on b2).
"""

import re

from .errors import InvalidBundleError
from .spec import AttentionConfig

# Logical name -> other spellings (besides input<i>/result<i> by position).
_ALIASES = {
    "o": ("out", "output"), "lse": ("lse0",), "do": ("d_out", "dout", "d_o"), "y": ("out", "output"),
    "dq": ("d_q",), "dk": ("d_k",), "dv": ("d_v",), "dy": ("d_y",), "dx": ("d_x",), "dw1": ("d_w1",),
    "db1": ("d_b1",), "dw2": ("d_w2",), "db2": ("d_b2",), "dw_up": ("d_w_up",),
    # flash.ffn's gated form calls its gate projection w1 (the operand the activation applies to).
    "w_gate": ("w1",), "dw_gate": ("d_w_gate", "dw1", "d_w1"),
}

_UNREAD_IN_BACKWARD = {"b1", "b2"}


def program_candidates(config, direction):
    """Program names to look for, in order of preference (direction: forward, forward_train or backward)."""
    func = "attention" if isinstance(config, AttentionConfig) else "ffn"
    if direction == "forward":
        return (config.forward_program, func, func + "_forward")
    if direction == "forward_train":  # the FFN's: it also writes what the backward reads (FfnConfig.saved_names)
        return (config.forward_train_program, func + "_forward_train")
    return (config.backward_program, func + "_backward")


def logical_params(config, direction):
    if direction == "forward_train":
        return config.forward_train_params()
    return config.forward_params() if direction == "forward" else config.backward_params()


def _canonical(name, config, logical):
    if name in logical:
        return name
    for key, spellings in _ALIASES.items():
        if key in logical and name in spellings:
            return key
    m = re.fullmatch(r"(input|result)(\d+)", name)
    if m:
        names = config.input_names() if m.group(1) == "input" else config.output_names()
        index = int(m.group(2))
        if index < len(names) and names[index] in logical:
            return names[index]
    return None


def resolve(bundle, config, direction):
    """(program name in the bundle, {logical name: bundle parameter name}) for `direction` ('forward',
    'forward_train' or 'backward'); InvalidBundleError when the bundle has no such program or its parameters do not match."""
    available = list(bundle.programs) + list(bundle.kernels)
    candidates = program_candidates(config, direction)
    program = next((c for c in candidates if c in available), None)
    if program is None:
        raise InvalidBundleError("bundle %s (for %s) has no %s program: looked for %s; it has %s" % (
            bundle.path, config.describe(), direction, ", ".join(candidates), ", ".join(available) or "nothing"))
    logical = logical_params(config, direction)
    names = [p.name for p in bundle.params(program)]
    mapping = {}
    for name in names:
        key = _canonical(name, config, logical)
        if key is None or key in mapping:
            mapping = None
            break
        mapping[key] = name
    unread = set(logical) - set(mapping or ())
    if mapping is None or not unread <= (_UNREAD_IN_BACKWARD if direction == "backward" else set()):
        raise InvalidBundleError("bundle %s: program '%s' has parameters (%s) but flashc.torch passes (%s)" % (
            bundle.path, program, ", ".join(names), ", ".join(logical)))
    return program, mapping
