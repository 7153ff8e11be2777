"""The check run at every call that what generated code took from outside is unchanged.

Takes the guards lowering recorded (``compiler/front/guards.py``: a global, closure or
attribute read, and how its value must compare); gives ``check_of(guards)``: one Python
function of no arguments, True while every guard holds, compiled from source so that
each guard costs a dictionary or attribute read and a comparison (about 50-80 ns; see
benchmarks/bench_guards.py), or None when there is nothing to check.  A failed
check makes the derivative build its code again for the new values
(``Derivative._variant``; the build it replaces is kept aside for a change back).
``retargeted(generated, cells)`` gives the same build reading another function
object's closure cells (a fresh lambda with the code of one built before), whose check
is made by the maker the original's was made by (``guard_maker``, kept on the build:
the guards moved are tested alike, so neither their source text is written again nor
``_MAKERS`` searched).  A function or
derivative object read from outside holds when it is the same object or has the same
identity (``identity.same_code``: a lambda made per call, read by a lambda made per call).
"""
import collections
import dataclasses

from ..compiler.front.guards import (GONE, ClosureName, Guard, array_spec, cell_value, freeze,
                                     same_scalar)
from .identity import is_identified, same_code

#: types compared inline as ``type(v) is T and v == e`` (others through ``same_scalar``)
_PLAIN = (bool, int, float, str, type(None))


def _test(guard, k):
    """The Python expression testing ``guard`` (its owner is ``o<k>``, its expected value
    ``e<k>``, the type of that value ``t<k>``)."""
    read = guard.source.expression(f"o{k}")
    if guard.kind == "same" and is_identified(guard.expected):
        # a function or derivative object: another with its code and contents is right
        # too (a lambda made per call, read by a lambda made per call)
        return f"(v{k} := {read}) is e{k} or same_code(v{k}, e{k})"
    if guard.kind == "same":
        return f"{read} is e{k}"
    if guard.kind == "method":
        # a new object at each read: the same function bound to the same object (a
        # method's ``==`` compares its ``__self__`` by identity)
        return f"(v{k} := {read}) is e{k} or (type(v{k}) is t{k} and v{k} == e{k})"
    if guard.kind == "snapshot":
        return f"freeze({read}) == e{k}"
    if guard.kind == "array":
        return f"array_spec({read}) == e{k}"
    value = guard.expected
    if type(value) in _PLAIN and value == value:      # (not NaN)
        return f"type(v{k} := {read}) is t{k} and v{k} == e{k}"
    return f"same_scalar({read}, e{k})"


def check_of(guards, make=None):
    """A function of no arguments that is True while every one of ``guards`` holds (in
    order: an owner's guard comes before its attributes'), or None for no guards;
    ``make``: the maker of the check of guards tested alike (``maker_of``)."""
    guards = list(guards)
    if not guards:
        return None
    make = maker_of(guards) if make is None else make
    values = []
    for g in guards:
        values += [getattr(g.source, "owner", None), g.expected, type(g.expected)]
    return make(*values)


def maker_of(guards):
    """The compiled maker of the check of ``guards`` (a list, not empty): a function of
    each guard's owner, expected value and its type."""
    tests = " and\n            ".join(f"({_test(g, k)})" for k, g in enumerate(guards))
    params = ", ".join(f"o{k}, e{k}, t{k}" for k in range(len(guards)))
    source = (f"def make({params}):\n"
              f"    def holds():\n"
              f"        return ({tests})\n"
              f"    return holds\n")
    make = _MAKERS.pop(source, None)
    if make is None:
        namespace = {"GONE": GONE, "cell_value": cell_value, "freeze": freeze,
                     "array_spec": array_spec, "same_scalar": same_scalar,
                     "same_code": same_code}
        exec(compile(source, "<s2sgrad guards>", "exec"), namespace)   # noqa: S102
        make = namespace["make"]
    _MAKERS[source] = make
    while len(_MAKERS) > MAKERS_KEPT:
        _MAKERS.popitem(last=False)
    return make


#: the compiled makers of checks by their source, most recently used last (the tests
#: name no value: the owners and expected values are the maker's arguments), so that
#: the same guards read from other owners (``retargeted``: a fresh lambda's cells) make
#: their check without compiling it again; at most ``MAKERS_KEPT``
_MAKERS = collections.OrderedDict()
MAKERS_KEPT = 256


def unchecked(generated):
    """A shallow copy of ``generated`` without its compiled check and its maker (for
    pickling: the check is compiled again where it is unpickled)."""
    if "guard_check" not in vars(generated) and "guard_maker" not in vars(generated):
        return generated
    copy = object.__new__(type(generated))
    copy.__dict__.update(vars(generated))
    copy.__dict__.pop("guard_check", None)
    copy.__dict__.pop("guard_maker", None)
    return copy


def holds(generated):
    """Whether what the code of ``generated`` took from outside is unchanged (its check,
    compiled once and kept on it)."""
    check = getattr(generated, "guard_check", False)
    if check is False:
        guards = list(getattr(generated, "guards", ()))
        make = getattr(generated, "guard_maker", None)
        if make is None and guards:
            make = generated.guard_maker = maker_of(guards)
        check = generated.guard_check = check_of(guards, make)
    if check is None:
        return True
    try:
        return check()
    except Exception:   # noqa: BLE001 - a property that raises now: build again (and
        return False    # meet the error where the function reads it)


def retargeted(generated, cells):
    """A shallow copy of ``generated`` (and of the generated modules it holds, a
    forward-over-reverse module's ``jvp``) whose guards and values read from outside read
    the closure cells ``cells`` maps to ({id(old cell): new cell}) instead of the old ones:
    the code built for one function object, checked against another with the same code
    (``derivative.derivative_for``: a fresh lambda per call).  Its check is compiled
    again for the new cells at its first use (``holds``)."""
    copy = object.__new__(type(generated))
    copy.__dict__.update(vars(generated))
    copy.__dict__.pop("guard_check", None)      # (its maker kept: the guards moved are
    for name, value in vars(generated).items():
        if name in ("guards", "free", "all_free") and isinstance(value, (list, tuple)):
            setattr(copy, name, type(value)(_moved(item, cells) for item in value))
        elif hasattr(value, "guards") and hasattr(value, "free") and \
                hasattr(value, "__dict__") and not isinstance(value, type):
            setattr(copy, name, retargeted(value, cells))
    return copy


def _moved(item, cells):
    """A guard or FreeValue ``item`` reading the cell ``cells`` maps its cell to (itself
    when it reads no mapped cell); a guard keeps what it compares to."""
    source = getattr(item, "source", None)
    if not isinstance(source, ClosureName) or id(source.cell) not in cells:
        return item
    moved = ClosureName(cells[id(source.cell)], source.name)
    if isinstance(item, Guard):
        copy = object.__new__(Guard)
        copy.__dict__.update(vars(item))
        copy.source = moved
        now = moved.read()
        if item.kind == "same" and is_identified(item.expected) and \
                same_code(now, item.expected, strict=False):
            # a function held in the new function's closure, its cells mapped too (it has
            # the old one's identity, its arrays by type): the code reads its cells, so it
            # is the object to compare with from now on (another one is built again for)
            copy.value = copy.expected = now
        return copy
    return dataclasses.replace(item, source=moved)
