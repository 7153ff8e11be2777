"""What the generated code took from outside the function while it was built, and how to
look at it again at a later call: sources and guards.

Lowering reads names from a function's globals and closure, and attributes of objects
it reached that way (``self.k``, a Cell's sub-cells and settings, ``config.LR``).  What
it reads is built into the code (a number as a literal, a sub-cell inlined, a branch on
``self.training`` decided) or passed in as an extra argument (an array).  ``Guards``
records each such read as a ``Guard``: where the value was read (a ``Source``: a
global name, a closure cell, an attribute of an object) and how a later value must
compare for the code to be still right (``Guard.kind``):

- ``"same"``: the same object (functions, classes, Cells, Parameters, user objects,
  arrays reached in more than one way);
- ``"equal"``: an equal value of the same type (numbers, strings, None, dtypes, and
  tuples of them);
- ``"method"``: a bound method (``self.rhs``, ``obj.items.append``): the same function
  bound to the same object.  Reading it makes a new method object every time, so an
  identity check never held: a solver class calling its own methods built its code
  again at every call;
- ``"snapshot"``: a container (list, dict, set, a tuple holding objects) equal item by
  item to a copy taken when the code was built (``freeze``), objects in it compared by
  identity;
- ``"array"``: an ndarray passed to the code as an argument.  It is not fixed: the
  caller reads it again from its source at each call (``FreeValue.source``), so a
  global rebound to a new array is seen; only its type, dtype, rank and unit
  dimensions must stay those the code was specialised on (``array_spec``).

Library modules and what is read from them (``np.exp``, ``math.pi``, ``ops.matmul``),
builtins, and attributes of immutable values are not guarded: they do not change.  A
ufunc's attributes neither (``np.power.outer``: a new bound method at each read, never
the same object, so a guard of it failed at every call and the code was loaded again).
``s2sgrad/api/guards.py`` turns a list of guards into one check run at every call.
"""
import importlib
import math
import types

import numpy as np

from ..analysis.shapes import unit_dimensions

#: top-level packages whose modules, functions and constants are taken as fixed
LIBRARIES = frozenset({
    "numpy", "math", "cmath", "scipy", "s2sgrad", "builtins", "operator", "functools",
    "itertools", "collections", "typing", "numba", "random", "abc", "enum", "dataclasses"})

#: values compared by value (and type): immutable scalars
SCALARS = (bool, int, float, complex, str, bytes, type(None), np.generic, np.dtype,
           type(Ellipsis), range)


class GlobalName:
    """A name read from a module's globals (``namespace``: the function's ``__globals__``)."""

    def __init__(self, namespace, name):
        self.namespace, self.name = namespace, name
        self.key = ("global", id(namespace), name)
        self.owner = namespace

    def read(self):
        return self.namespace.get(self.name, GONE)

    def __reduce__(self):
        # pickled as the module's name (the namespace is found again by importing it,
        # as pickle finds a function), never as a copy of the module's globals
        return (global_name, (self.namespace.get("__name__"), self.name))

    def expression(self, owner):
        """Python text reading this source, the owner (namespace) being named ``owner``."""
        return f"{owner}.get({self.name!r}, GONE)"

    def describe(self):
        return f"the global {self.name}"


class ClosureName:
    """A name read from a closure cell of the function."""

    def __init__(self, cell, name):
        self.cell, self.name = cell, name
        self.key = ("closure", id(cell))
        self.owner = cell

    def __reduce__(self):
        # a cell does not pickle: its value does, in a new cell (the unpickled code's
        # closure is a copy, as a function pickled by value has)
        return (closure_name, (cell_value(self.cell), self.name))

    def read(self):
        return cell_value(self.cell)

    def expression(self, owner):
        return f"cell_value({owner})"

    def describe(self):
        return f"the closure variable {self.name}"


class AttributeOf:
    """An attribute read from an object that is itself guarded or fixed: ``self.k``,
    ``self.fc1``, ``config.LR``.  ``path``: how the function reached it.  Where the
    attribute lives in a dict that any rebinding of it changes (``attribute_home``: the
    instance's ``__dict__``, a Cell's Parameters or sub-cells), that dict is read (as
    fast as a global); otherwise ``getattr``."""

    def __init__(self, obj, attr, path):
        self.obj, self.attr, self.path = obj, attr, path
        self.key = ("attribute", id(obj), attr)
        self.home = attribute_home(obj, attr)
        self.owner = obj if self.home is None else self.home

    def __reduce__(self):
        # (the home dict is found again on the unpickled object, never copied)
        return (AttributeOf, (self.obj, self.attr, self.path))

    def read(self):
        if self.home is not None:
            return self.home.get(self.attr, GONE)
        return getattr(self.obj, self.attr, GONE)

    def expression(self, owner):
        if self.home is not None:
            return f"{owner}.get({self.attr!r}, GONE)"
        return f"getattr({owner}, {self.attr!r}, GONE)"

    def describe(self):
        return self.path or f".{self.attr}"


def attribute_home(obj, attr):
    """The dict whose entry ``attr`` is what ``obj.attr`` gives, such that rebinding or
    deleting ``obj.attr`` changes that entry; None when there is none to rely on (a
    property or other data descriptor, a class with its own ``__getattribute__``, an
    attribute found on the class).  An object may say where with
    ``__s2sgrad_attribute_home__(attr)`` (``nn.Cell``: its Parameters and sub-cells)."""
    descriptor = getattr(type(obj), attr, None)
    if descriptor is not None and hasattr(type(descriptor), "__set__"):
        return None
    hook = getattr(type(obj), "__s2sgrad_attribute_home__", None)
    if hook is not None:
        return hook(obj, attr)
    namespace = getattr(obj, "__dict__", None)
    plain = type(obj).__getattribute__ is object.__getattribute__ or \
        isinstance(obj, types.ModuleType)
    if plain and type(namespace) is dict and attr in namespace:
        return namespace
    return None


def closure_name(value, name):
    """A ``ClosureName`` of a new cell holding ``value``, for unpickling."""
    return ClosureName(types.CellType(value), name)


def global_name(module, name):
    """A ``GlobalName`` of module ``module`` (imported), for unpickling."""
    return GlobalName(vars(importlib.import_module(module)), name)


class _Gone:
    """What a source reads when its name no longer exists (never equal to a value)."""

    def __repr__(self):
        return "<deleted>"

    def __reduce__(self):
        return "GONE"


GONE = _Gone()


def cell_value(cell):
    """The contents of closure ``cell``, or GONE when it is empty (the name was deleted
    in the enclosing function)."""
    try:
        return cell.cell_contents
    except ValueError:
        return GONE


class Guard:
    """One read from outside (``source``), what it gave (``value``) and how a later value
    must compare (``kind``, see the module doc); ``expected`` is what it is compared to
    (the value, its frozen copy, or an array's spec)."""

    def __init__(self, source, kind, value):
        self.source, self.kind, self.value = source, kind, value
        if kind == "snapshot":
            self.expected = freeze(value)
        elif kind == "array":
            self.expected = array_spec(value)
        else:
            self.expected = value

    def __repr__(self):
        return f"<guard {self.kind} {self.source.describe()}>"


def same_scalar(now, then):
    """``now`` equals ``then`` and has its type (NaN equals NaN)."""
    if now is then:
        return True
    if type(now) is not type(then):
        return False
    try:
        equal = now == then
        return bool(equal) or (isinstance(then, float) and math.isnan(then) and
                               math.isnan(now))
    except (TypeError, ValueError):
        return False


class Identity:
    """An object inside a frozen container: equal only to a wrapper of the same object."""

    __slots__ = ("obj",)

    def __init__(self, obj):
        self.obj = obj

    def __eq__(self, other):
        return isinstance(other, Identity) and other.obj is self.obj

    def __hash__(self):
        return id(self.obj)


def freeze(value):
    """A comparable copy of ``value``: scalars as (type, value), containers item by item,
    anything else (arrays, objects) by identity."""
    if isinstance(value, SCALARS):
        return (type(value), value)
    if isinstance(value, (list, tuple)):
        return (type(value), tuple(freeze(v) for v in value))
    if isinstance(value, dict):
        return (type(value), tuple((freeze(k), freeze(v)) for k, v in value.items()))
    if isinstance(value, (set, frozenset)):
        try:
            return (type(value), frozenset(freeze(v) for v in value))
        except TypeError:
            return Identity(value)
    return Identity(value)


def array_spec(value):
    """What code built for an array argument depends on: its type, dtype, rank and which
    dimensions are 1 (None for a value that is not an ndarray)."""
    if type(value) is not np.ndarray:
        return None
    return (value.dtype, value.ndim, unit_dimensions(value))


def is_library(obj):
    """True for modules, classes and functions of the fixed libraries (``LIBRARIES``)."""
    name = obj.__name__ if isinstance(obj, types.ModuleType) else \
        getattr(obj, "__module__", None)
    return isinstance(name, str) and name.split(".", 1)[0] in LIBRARIES


def _all_scalars(value):
    if isinstance(value, SCALARS):
        return True
    return isinstance(value, (tuple, frozenset)) and all(_all_scalars(v) for v in value)


def kind_of(value):
    """How a value read from outside is guarded (module doc), or None: not at all."""
    if isinstance(value, types.ModuleType) and is_library(value):
        return None
    if type(value) is np.ndarray:
        return "array"
    if _all_scalars(value):
        return "equal"
    if isinstance(value, (list, tuple, dict, set, frozenset)):
        return "snapshot"
    if is_bound_method(value):
        return "method"
    return "same"


def is_bound_method(value):
    """Whether ``value`` is a method bound to an object (a new object at each read:
    compared by its function and the object it is bound to, which ``==`` does)."""
    return isinstance(value, types.MethodType) or (
        isinstance(value, types.BuiltinMethodType) and
        not isinstance(getattr(value, "__self__", None), (types.ModuleType, type(None))))


class Guards:
    """The guards recorded while lowering one function, once per source, in the order
    the reads happened (an owner's own guard before those of its attributes)."""

    def __init__(self):
        self.by_key = {}

    def __iter__(self):
        return iter(self.by_key.values())

    def read_name(self, source, value):
        """Record that a name was read from ``source`` (None: a builtin, not guarded)."""
        if source is not None:
            self._record(source, value)

    def read_attribute(self, owner, attr, value, path):
        """Record that ``owner.attr`` gave ``value`` (``path``: how the function names
        it), unless ``owner`` is fixed: a library module or class, an immutable value, a
        numpy ufunc."""
        if isinstance(owner, (*SCALARS, tuple, np.ufunc)) or (
                isinstance(owner, (types.ModuleType, type)) and is_library(owner)):
            return None
        return self._record(AttributeOf(owner, attr, path), value)

    def _record(self, source, value):
        kind = kind_of(value)
        if kind is None or source.key in self.by_key:
            return self.by_key.get(source.key)
        guard = self.by_key[source.key] = Guard(source, kind, value)
        return guard

    def same_object(self, source, value):
        """Make the guard of ``source`` an identity check (an array reached in a second
        way: the code passes one value for both, so both must stay that object)."""
        guard = self.by_key.get(source.key)
        if guard is not None and guard.kind == "array":
            self.by_key[source.key] = Guard(source, "same", value)

    def extend(self, guards):
        """Add guards recorded elsewhere (a derivative object's code inlined here)."""
        for guard in guards:
            self.by_key.setdefault(guard.source.key, guard)


def fixed_objects(guards):
    """``guards`` for code that holds the arrays it read as fixed objects (a derivative
    made into a function, ``api/nested.py``): each array must stay the same object."""
    return [Guard(g.source, "same", g.value) if g.kind == "array" else g for g in guards]
