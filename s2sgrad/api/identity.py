"""What a function object holds from outside, as the reuse of builds sees it.

Takes a plain function, or a derivative object ``derivative_for`` made for one (its
``_reuse``); gives

- ``function_identity(fn)``: (what makes two function objects compute the same thing
  with the same build, the closure cells its guards and free values read): its code, its
  globals dict, its closure's contents and its defaults; numbers and strings by value,
  a function or such a derivative object held there by its own identity (a lambda per
  call calling another lambda made per call: ``LOOK_DEPTH`` levels), an ndarray held in
  a closure cell by its type (``array_type``: dtype, rank, unit dimensions, layout, size
  class; the build reads it from the cell at each call, as a free value, and a build
  that holds it otherwise has a guard that fails on another array), a tuple by its
  items (arrays by ``id``: the build holds them, ``f(t, *rest)``), every other object
  by ``id``; the cells of the functions held there follow its own, in order;
  ``strict``: arrays by ``id`` too (what a guard compares: a function read from outside
  whose cells the code does not read);
- ``same_code(value, expected)``: whether two such objects have one strict identity
  (the guard of a function read from outside, ``api/guards.py``: another object with
  the same code and contents computes the same thing);
- ``reads_large_array(fn)``: whether it holds a large array (the size class of its
  builds, ``Derivative._signature_of``).
"""
import types

import numpy as np

from ..compiler.front.guards import array_spec, cell_value
from .arguments import large_array

#: how deep an identity, and ``reads_large_array``, look through functions and
#: derivative objects held in closures (further down: by ``id``)
LOOK_DEPTH = 4

#: values an identity holds by type and value
_SCALARS = (bool, int, float, str, type(None))


def function_identity(fn, depth=LOOK_DEPTH, strict=False):
    """(identity, closure cells) of ``fn`` (module doc; ``strict``: arrays by ``id``), or
    None for anything else than a plain function (not one made by
    ``testing.fresh_function``, built afresh) or a derivative object ``derivative_for``
    made for one."""
    if depth <= 0:
        return None
    if isinstance(fn, types.FunctionType):
        if "__s2sgrad_fresh__" in fn.__dict__:
            return None
        cells = list(fn.__closure__ or ())
        contents = tuple(_content(cell_value(c), depth, cells, strict)
                         for c in fn.__closure__ or ())
        # (defaults by id: a function inlined in the code takes its defaults as fixed
        # values, never read again)
        defaults = tuple(_content(d, depth, cells, True) for d in fn.__defaults__ or ())
        keywords = tuple((k, _content(v, depth, cells, True))
                         for k, v in (fn.__kwdefaults__ or {}).items())
        return (fn.__code__, id(fn.__globals__), contents, defaults, keywords), tuple(cells)
    reuse = getattr(fn, "_reuse", None)
    if isinstance(reuse, tuple) and getattr(fn, "derivative_mode", None) is not None:
        inner = function_identity(fn.fn, depth - 1, strict)
        if inner is not None:       # (its options in reuse[0][0])
            return ("derivative", type(fn), reuse[0][0], inner[0]), inner[1]
    return None


def _content(value, depth, cells, strict):
    """``value`` in the identity of a function ``depth`` levels down: by value, by type
    (an array, unless ``strict``), by its own identity (its cells added to ``cells``), or
    by ``id``."""
    kind = type(value)
    if kind in _SCALARS and value == value:
        return (kind, value)
    if kind is np.ndarray and not strict:
        return array_type(value)
    if kind is tuple and depth > 1:     # (a closure's ``*rest``): its items, arrays by id
        return ("tuple",) + tuple(_content(v, depth - 1, cells, True) for v in value)
    if depth > 1 and (isinstance(value, types.FunctionType) or
                      getattr(value, "_reuse", None) is not None):
        found = function_identity(value, depth - 1, strict)
        if found is not None:
            cells.extend(found[1])
            return found[0]
    return id(value)


def array_type(value):
    """What an ndarray held in a closure counts in an identity by: what its guard checks
    (``array_spec``: dtype, rank, unit dimensions), its layout and writeability (the
    types Numba compiles for) and its size class (``large_array``: the build keeps
    arrays between calls or not)."""
    flags = value.flags
    return ("array", array_spec(value), flags.c_contiguous, flags.f_contiguous,
            flags.writeable, large_array(value))


def same_code(value, expected, strict=True):
    """Whether ``value`` (read now where a function or derivative object ``expected`` was
    read when the code was built) has ``expected``'s identity (``strict``: arrays by
    ``id``): the code built for one is right for the other."""
    if value is expected:
        return True
    mine = function_identity(value, strict=strict)
    return mine is not None and mine[0] == _key(expected, strict)


def _key(fn, strict):
    found = function_identity(fn, strict=strict)
    return None if found is None else found[0]


def is_identified(value):
    """Whether ``value`` is a function or derivative object with an identity."""
    return isinstance(value, types.FunctionType) or (
        getattr(value, "_reuse", None) is not None and
        getattr(value, "derivative_mode", None) is not None)


#: how many functions ``reads_large_array`` reads at most (a full call of a function
#: whose arguments are containers takes it at every call)
LOOK_FUNCTIONS = 16


def reads_large_array(fn, depth=LOOK_DEPTH):
    """Whether ``fn`` (through the derivative objects and bound methods it wraps) holds a
    large array (``arguments.large_array``) in its closure or defaults, or names one
    among its globals, or a function it holds or names does (``depth`` levels down, at
    most ``LOOK_FUNCTIONS`` functions): what the size class of its builds counts besides
    the arguments, so that ``grad(lambda c: cost(c, points))`` is built as
    ``grad(cost)`` called with the points is."""
    todo, seen = [(fn, depth)], set()
    while todo and len(seen) < LOOK_FUNCTIONS:
        fn, level = todo.pop()
        for _ in range(LOOK_DEPTH):     # a derivative object's function, a method's
            if isinstance(fn, types.FunctionType) or fn is None:
                break
            fn = getattr(fn, "__func__", None) or getattr(fn, "__wrapped__", None)
        if not isinstance(fn, types.FunctionType) or id(fn) in seen:
            continue
        seen.add(id(fn))
        values = [cell_value(c) for c in fn.__closure__ or ()] + list(fn.__defaults__ or ())
        namespace = fn.__globals__
        values += [namespace.get(name) for name in fn.__code__.co_names]
        for v in values:
            if large_array(v):
                return True
            if level > 1 and callable(v) and not isinstance(v, (type, types.ModuleType)):
                todo.append((v, level - 1))
    return False
