"""Which values may be complex, and the refusal of gradients through them.

s2sgrad's rules are written for real values: a product's adjoint has no complex
conjugate, and ``no_gradient.py`` gives ``np.imag``, ``np.angle`` and ``np.sign`` no
gradient, right for real input (the imaginary part is 0, the angle 0 or pi, the sign
piecewise constant) but not for complex input, where each is smooth.  A differentiated
value that may be complex would get a silently wrong (often zero) gradient, so
``check_real_values`` refuses it, naming the user's line.

``maybe_complex(lowered)`` takes a ``LoweredFunction`` and gives the set of its Var names
that may hold complex values: arguments and captured values of a complex dtype, results
of operations on complex constants (``1j``, a complex array, a complex dtype) or on such
values, except the real-valued parts (``np.real``, ``np.abs``...).  Loops are followed to
a fixed point.
"""
import numpy as np

from ... import primitives as prims
from ...errors import MissingRuleError
from ...rules.registry import display_name
from ..ir import Const, LoweredFunction, Op, Seq, walk_ops
from .activity import active_names, differentiable_operands

#: primitives without a gradient for real input that are smooth for complex input
REAL_ONLY = (np.imag, np.angle, np.sign)
#: primitives that give a real result from a complex operand
_REAL_RESULTS = (np.real, np.imag, np.abs, np.absolute, np.angle, abs, np.isreal,
                 np.iscomplex, prims.attribute("real"), prims.attribute("imag"))


def _complex_constant(value):
    if isinstance(value, (complex, np.complexfloating)):
        return True
    if isinstance(value, np.ndarray):
        return value.dtype.kind == "c"
    if isinstance(value, (list, tuple)):
        return any(_complex_constant(v) for v in value)
    try:            # a dtype argument: astype(np.complex128), dtype=complex
        return isinstance(value, (type, np.dtype)) and np.dtype(value).kind == "c"
    except TypeError:
        return False


def _complex_atom(atom, complex_vars):
    if isinstance(atom, Const):
        return _complex_constant(atom.value)
    if isinstance(atom, Seq):
        return any(_complex_atom(item, complex_vars) for item in atom.items)
    return getattr(atom, "name", None) in complex_vars


def maybe_complex(lowered: LoweredFunction):
    """The Var names of ``lowered`` that may hold complex values (see module doc)."""
    found = {name for name, (dtype, _) in lowered.param_types.items()
             if getattr(dtype, "kind", None) == "c"}
    ops = [s for s in walk_ops(lowered.body) if isinstance(s, Op)]
    if not found and not any(_complex_atom(a, found) for op in ops
                             for a in op.operand_atoms()):
        return found         # the common case: nothing complex anywhere
    changed = True
    while changed:           # loop-carried values: until nothing new is found
        changed = False
        for op in ops:
            if _is(op.primitive, _REAL_RESULTS):
                continue
            if any(_complex_atom(a, found) for a in op.operand_atoms()):
                new = set(op.targets) - found
                if new:
                    found |= new
                    changed = True
    return found


def check_real_values(lowered, wrt, seeds, operands=differentiable_operands):
    """Raise ``MissingRuleError`` at the first call that reads a value which may be
    complex, depends on a differentiated value and passes a gradient on to an output
    (with ``REAL_ONLY`` calls counted as passing one: their zero is wrong for complex
    input).  ``operands`` is the activity analysis' (forward mode passes its own)."""
    complex_vars = maybe_complex(lowered)
    if not complex_vars:
        return

    def smooth_operands(op):
        return op.operand_vars() if _real_only(op) else operands(op)

    active = active_names(lowered, wrt, seeds, smooth_operands)
    for op in walk_ops(lowered.body):
        if isinstance(op, Op) and any(v in active and v in complex_vars
                                      for v in op.operand_vars()):
            raise _complex_error(op)


def _is(primitive, listed):
    return any(p is primitive or (isinstance(p, str) and p == primitive) for p in listed)


def _real_only(op):
    return op.custom is None and _is(op.primitive, REAL_ONLY)


def _complex_error(op):
    name = op.primitive if isinstance(op.primitive, str) else display_name(op.primitive)
    if name.startswith("attr."):
        name = f"the .{name[5:]} attribute"
    elif name.startswith("_operator."):
        name = f"the operator {name[10:]}"
    why = (f"s2sgrad gives {name} no gradient, which holds for real input only (for "
           f"complex input it is smooth); " if _real_only(op) else "")
    return MissingRuleError(
        f"a differentiated value that may be complex reaches {name}: {why}s2sgrad "
        f"differentiates real values only (its rules have no complex conjugates), so the "
        f"gradient would be wrong", op.origin, None,
        "carry the real and imaginary parts as two real arrays and differentiate those; "
        "or wrap the complex value in ops.stop_gradient if no gradient should flow "
        "through it")
