"""How a primitive call is written in the forward sweep, where numpy's own spelling is not
what Numba compiles.

``forward_expression(prim, args, kwargs, atom_node)`` gives the gast
expression to emit for a call of ``prim`` on atoms, or None to keep the
plain call (``np.exp(x)``, ``x.sum(axis=0)``).  Each entry of ``REWRITES``
takes (args, kwargs, atom_node) and returns an expression or None (None:
this call is fine as it is).  The rewritten forms compute the same values
as numpy, so the Python backend runs them too.

A call is rewritten only where Numba would not compile it, so the generated
code keeps numpy's spelling wherever it can:

- reductions given an axis or keepdims (Numba has ``np.sum(x, axis=1)`` only):
  ``np.max(x, axis=1, keepdims=True)`` -> ``rt.amax(x, 1, True)``,
  ``x.mean(axis=0)`` -> ``rt.mean(x, 0, False)``, ``np.var(x, ddof=1)`` ->
  ``rt.var(x, None, False, ddof=1)``;
- ``np.stack([a, b])`` / ``np.concatenate([a, b], axis=1)``: the list becomes a tuple;
- ``np.squeeze(x, axis)``, ``np.expand_dims(x, (0, 2))``, ``np.atleast_1d(x)``:
  ``rt.squeeze`` / ``rt.expand_dims`` / ``rt.atleast_1d``;
- ``np.array(x)`` -> ``np.copy(x)``, ``abs(x)`` -> ``np.abs(x)``;
- ``np.einsum("ijk,mik->mij", a, b)`` (subscripts and two operands) -> ``rt.einsum(...)``,
  the same call, run as one BLAS matmul where it is a contraction large enough to pay
  (runtime/einsum.py; Numba has no einsum at all, and numpy's is unblocked);
- ``np.frexp(x)`` / ``np.modf(x)`` / ``np.tile(x, reps)`` -> ``rt.frexp(x)`` /
  ``rt.modf(x)`` / ``rt.tile(x, reps)`` (Numba has none of them);
- the array methods Numba lacks: ``x.swapaxes(0, 1)`` -> ``np.swapaxes(x, 0, 1)``,
  ``x.squeeze(1)``, ``x.round(2)``, ``x.trace()``, ``x.clip(lo, hi)`` (of a number too).

Method calls arrive as their numpy function with the receiver first
(``x.max(axis=1)`` as ``np.max`` on ``(x,)`` with ``axis=1``).
"""
import inspect

import gast
import numpy as np

from ..ir import Const, Seq
from ..syntax.nodes import call


def _rt(name, nodes, keywords=()):
    return call("rt", name, nodes, keywords)


def _constant(value):
    return gast.Constant(value=value, kind=None)


def _is(atom, *values):
    """True when ``atom`` is a constant equal to one of ``values`` (compared by identity
    for None and numpy's no-value marker, by == otherwise)."""
    if not isinstance(atom, Const):
        return False
    v = atom.value
    return any(v is w if w is None or w is np._NoValue else
               (type(v) is type(w) and v == w) for w in values)


def _bind(prim, args, kwargs):
    """``prim``'s parameters bound to the atoms (name -> atom), or None when they do not
    fit its signature."""
    try:
        return inspect.signature(prim).bind(*args, **kwargs).arguments
    except (TypeError, ValueError):
        return None


def _matmul(args, kwargs, atom_node):
    """``np.matmul(a, b)`` -> ``a @ b`` (Numba has the operator, not the function)."""
    if len(args) == 2 and not kwargs:
        return gast.BinOp(left=atom_node(args[0]), op=gast.MatMult(), right=atom_node(args[1]))
    return None


# ---------------------------------------------------------------- reductions

#: the parameters of a reduction the runtime helpers take; any other one given
#: (dtype=, out=, where=, initial=...) keeps numpy's call
_REDUCTION_PARAMS = ("a", "axis", "keepdims", "ddof")


def _reduction(prim, helper):
    """A rewrite of the reduction ``prim`` into ``rt.<helper>(x, axis, keepdims)`` when it is
    given an axis or keepdims (or, for var/std, a ddof).  ``np.sum`` with an int axis and
    no keepdims stays: Numba compiles that one."""
    def rewrite(args, kwargs, atom_node):
        bound = _bind(prim, args, kwargs)
        if bound is None or "a" not in bound:
            return None
        if any(k not in _REDUCTION_PARAMS and not _is(v, None, np._NoValue)
               for k, v in bound.items()):
            return None
        axis = bound.get("axis", Const(None))
        keepdims = bound.get("keepdims", Const(False))
        ddof = bound.get("ddof", Const(0))
        plain_keepdims = _is(keepdims, False, 0, np._NoValue)
        plain_ddof = _is(ddof, 0)
        tuple_axis = isinstance(axis, Seq) or (isinstance(axis, Const) and
                                               isinstance(axis.value, tuple))
        if helper == "sum":
            needed = not plain_keepdims or tuple_axis
        else:
            needed = not (_is(axis, None) and plain_keepdims and plain_ddof)
        if not needed:
            return None
        keep_node = _constant(False) if plain_keepdims else (
            _constant(bool(keepdims.value)) if isinstance(keepdims, Const)
            else atom_node(keepdims))
        axis_node = _constant(None) if _is(axis, None) else atom_node(axis)
        keywords = [] if plain_ddof else [("ddof", atom_node(ddof))]
        return _rt(helper, [atom_node(bound["a"]), axis_node, keep_node], keywords)
    return rewrite


# ---------------------------------------------------------------- arrays and shapes


def _sequence_as_tuple(name):
    """``np.stack([a, b], axis)`` -> ``np.stack((a, b), axis)``: Numba takes a tuple of
    arrays, not a list."""
    def rewrite(args, kwargs, atom_node):
        if not args or not isinstance(args[0], Seq) or args[0].kind != "list" or \
                set(kwargs) - {"axis"} or len(args) > 2:
            return None
        items = gast.Tuple(elts=[atom_node(a) for a in args[0].items], ctx=gast.Load())
        return call("np", name, [items] + [atom_node(a) for a in args[1:]],
                     [(k, atom_node(v)) for k, v in kwargs.items()])
    return rewrite


def _squeeze(args, kwargs, atom_node):
    """``np.squeeze(x, axis)`` / ``x.squeeze(axis)`` -> ``rt.squeeze(x, axis)``.  Without
    an axis the result's rank depends on the shape, which Numba must know while
    compiling: that call stays numpy's."""
    bound = _bind(np.squeeze, args, kwargs)
    if bound is None or _is(bound.get("axis", Const(None)), None):
        return None
    return _rt("squeeze", [atom_node(bound["a"]), atom_node(bound["axis"])])


def _expand_dims(args, kwargs, atom_node):
    """``np.expand_dims(x, (0, 2))`` -> ``rt.expand_dims(x, (0, 2))`` (Numba has the int
    axis only)."""
    bound = _bind(np.expand_dims, args, kwargs)
    if bound is None:
        return None
    axis = bound.get("axis")
    if not (isinstance(axis, Seq) or (isinstance(axis, Const) and isinstance(axis.value, tuple))):
        return None
    return _rt("expand_dims", [atom_node(bound["a"]), atom_node(axis)])


def _atleast_1d(args, kwargs, atom_node):
    """``np.atleast_1d(x)`` -> ``rt.atleast_1d(x)`` (Numba's takes arrays, not numbers)."""
    if len(args) == 1 and not kwargs and not isinstance(args[0], Seq):
        return _rt("atleast_1d", [atom_node(args[0])])
    return None


def _array(args, kwargs, atom_node):
    """``np.array(x)`` of an array or number -> ``np.copy(x)`` (the same copy; Numba's
    np.array takes lists and numbers only)."""
    if len(args) == 1 and not isinstance(args[0], (Seq, Const)) and \
            all(k == "copy" and _is(v, True) for k, v in kwargs.items()):
        return call("np", "copy", [atom_node(args[0])])
    return None


def _einsum(args, kwargs, atom_node):
    """``np.einsum("...", a, b)`` -> ``rt.einsum("...", a, b)`` (runtime/einsum.py: a
    matmul where the contraction pays; the other forms keep numpy's call)."""
    if len(args) == 3 and not kwargs and isinstance(args[0], Const) \
            and isinstance(args[0].value, str) \
            and not any(isinstance(a, (Seq, Const)) for a in args[1:]):
        return _rt("einsum", [atom_node(a) for a in args])
    return None


def _abs(args, kwargs, atom_node):
    """``abs(x)`` -> ``np.abs(x)`` (Numba's builtin abs takes numbers only)."""
    if len(args) == 1 and not kwargs:
        return call("np", "abs", [atom_node(args[0])])
    return None


def _as_helper(name, count=1):
    """A numpy function Numba lacks, of ``count`` positional arguments -> the ``rt`` helper
    of that name: ``np.frexp(x)`` -> ``rt.frexp(x)``."""
    def rewrite(args, kwargs, atom_node):
        if len(args) == count and not kwargs:
            return _rt(name, [atom_node(a) for a in args])
        return None
    return rewrite


def _as_function(name):
    """A method Numba lacks -> numpy's function on the receiver: ``x.swapaxes(0, 1)`` ->
    ``np.swapaxes(x, 0, 1)`` (the function form is written the same way)."""
    def rewrite(args, kwargs, atom_node):
        return call("np", name, [atom_node(a) for a in args],
                     [(k, atom_node(v)) for k, v in kwargs.items()])
    return rewrite


REWRITES = {
    np.matmul: _matmul,
    np.sum: _reduction(np.sum, "sum"),
    np.mean: _reduction(np.mean, "mean"),
    np.max: _reduction(np.max, "amax"),
    np.amax: _reduction(np.amax, "amax"),
    np.min: _reduction(np.min, "amin"),
    np.amin: _reduction(np.amin, "amin"),
    np.prod: _reduction(np.prod, "prod"),
    np.var: _reduction(np.var, "var"),
    np.std: _reduction(np.std, "std"),
    np.stack: _sequence_as_tuple("stack"),
    np.concatenate: _sequence_as_tuple("concatenate"),
    np.squeeze: _squeeze,
    np.expand_dims: _expand_dims,
    np.atleast_1d: _atleast_1d,
    np.array: _array,
    np.einsum: _einsum,
    abs: _abs,
    np.swapaxes: _as_function("swapaxes"),
    np.round: _as_function("round"),
    np.trace: _as_function("trace"),
    np.clip: _as_function("clip"),
    np.frexp: _as_helper("frexp"),
    np.modf: _as_helper("modf"),
    np.tile: _as_helper("tile", 2),
}


def forward_expression(prim, args, kwargs, atom_node):
    """The expression for ``prim(*args, **kwargs)`` in generated code, or None for the
    ordinary call."""
    rewrite = REWRITES.get(prim) if not isinstance(prim, str) else None
    try:
        return rewrite(args, kwargs, atom_node) if rewrite is not None else None
    except TypeError:   # an unhashable or odd primitive: keep the ordinary call
        return None
