"""Fused loops that take the array a slice or row is of, not a view of it per call.

``views_read_in_place(sweep, passes, number)`` takes a sweep (a statement list, changed
in place), its fused ``Pass``es (``loops.fused_loops``, changed in place) and
``number(node)`` (whether a node is a number: ``kernels.Numbers.number``).  A loop's
array bound once in the sweep, before its call in the same statement list, as a slice
``v = a[lo:hi]`` (bounds numbers or left out, no step) or a row ``v = a[k]`` (``k`` a
number) of a name, that the loop reads or writes only at indices, becomes ``a`` (and
``lo`` or ``k``) in the call's arguments, read as ``a[lo + i]`` or ``a[k, i]`` where the
loop read ``v[i]``; the guard compares the view's length without making it
(``rt.cut_shape(a.shape, lo, hi)``, ``rt.row_shape(a.shape, k)``: -1 for bounds out of
order or range, which numpy clips or refuses, so the call's else runs them as numpy),
and where nothing but the guard, the call and its else reads ``v``, its binding moves
into that else::

    t47 = gates_1[b:t46]                          if rt.compiled() and rt.one_length((
    dcell_part = dcell[j]                             rt.cut_shape(gates_1.shape, b, t46),
    if rt.compiled() and rt.one_length((              rt.row_shape(dcell.shape, j)), 0):
            t47.shape, dcell_part.shape), 0):         _f_pass(gates_1, b, dcell, j)
        _f_pass(t47, dcell_part)                  else:
                                                      t47 = gates_1[b:t46]
        t49_i = np.exp(-t47[i])                       dcell_part = dcell[j]
        dcell_part[i] += dt63_i                   ...
                                                      t49_i = np.exp(-gates_1[b + i])
                                                      dcell[j, i] += dt63_i

(a slice from 0 is read as ``a[i]``; where every array the loop takes is a view, its
length ``n`` is the first one's: ``hi - lo``, ``a.shape[1]``).

Why: Numba counts the references of every array a function binds or passes (an atomic
add and subtract each, ``loop_rows.py``), and a view is a fresh array object each time
it is made; the lstm eval's gradient passed 11 a step to its two loops (its gates'
slices, the rows of its state and of their adjoints) and made 10 of them only for that.
A view read elsewhere is still made where it was (the tape keeps ``cell[j]``), the loop
taking its base all the same.  Left as they are: a view bound more than once, of a base
or bounds rebound between it and the call, or a call whose arguments are not its
parameters.
"""
import re

import gast

from ..syntax.nodes import name_uses
from ..syntax.source import to_source
from .loop_rows import fused_call, read_at_indices_only
from .loops import guard

#: names a loop function binds itself (``emit/loops.py``): no bound or index may be one
LOOP_NAMES = frozenset({"n", "i"})


def views_read_in_place(sweep, passes, number):
    """Have ``passes`` read the slices and rows they take from their arrays (module doc)."""
    reads, stores = name_uses(sweep)
    for fused in passes:
        call = fused_call(fused)
        where = _statement_list(sweep, fused.branch) if call is not None else None
        if where is None:
            continue
        items, at = where
        moved = []
        for name in list(fused.arrays):
            found = _binding(items, at, name, stores, number)
            if found is None or not _indexed_only(fused, name):
                continue
            k, base, index = found
            _take_view(fused, name, base, index)
            inside = name_uses([fused.branch.test, call] + fused.numpy)[0].get(name, 0)
            if reads.get(name, 0) == inside:     # only the guard, the call and its else
                moved.append(items[k])
        fused.numpy[:0] = [item for item in items[:at] if any(item is m for m in moved)]
        items[:] = [item for item in items if not any(item is m for m in moved)]
        fused.params += [n for n in _length_names(fused) if n not in fused.params]
        call.args = [gast.Name(p, gast.Load(), None, None) for p in fused.params]
        fused.branch.test = guard(fused)


def _statement_list(items, target):
    """``(list, index)`` of the statement list holding ``target`` (loops and branches
    entered), or None."""
    for k, item in enumerate(items):
        if item is target:
            return items, k
        for field in ("body", "orelse"):
            inner = getattr(item, field, None)
            if isinstance(inner, list) and not isinstance(item, gast.Expr):
                found = _statement_list(inner, target)
                if found is not None:
                    return found
    return None


def _binding(items, at, name, stores, number):
    """``(k, base, index)`` of ``name = base[...]`` at ``items[k]``, k < at, a slice
    (``index``: ("cut", lo, hi) source texts, hi None to the end) or a row (("row", k))
    of numbers, with nothing it reads rebound before ``items[at]``; else None."""
    if stores.get(name) != 1:
        return None
    for k in range(at - 1, -1, -1):
        item = items[k]
        if not (isinstance(item, gast.Assign) and len(item.targets) == 1 and
                isinstance(item.targets[0], gast.Name) and item.targets[0].id == name):
            continue
        value = item.value
        if not isinstance(value, gast.Subscript) or not isinstance(value.value, gast.Name):
            return None
        index = _index(value.slice, number)
        between = name_uses(items[k + 1:at])[1]
        used = {n.id for n in gast.walk(value) if isinstance(n, gast.Name)}
        if index is None or used & set(between) or used & LOOP_NAMES:
            return None
        return k, value.value.id, index
    return None


def _index(node, number):
    """("cut", lo, hi) of a slice ``lo:hi`` (``hi`` None: to the end), ("row", k) of a
    number ``k``, else None."""
    if isinstance(node, gast.Slice):
        if node.step is not None or any(b is not None and not _simple(b, number)
                                        for b in (node.lower, node.upper)):
            return None
        low = "0" if node.lower is None else to_source(node.lower)
        return "cut", low, None if node.upper is None else to_source(node.upper)
    if _simple(node, number):
        return "row", to_source(node)
    return None


def _simple(node, number):
    """Whether ``node`` is an int literal or a name of a number (an argument as it is)."""
    return isinstance(node, gast.Constant) and type(node.value) is int or \
        isinstance(node, gast.Name) and number(node)


def _indexed_only(fused, name):
    """Whether ``fused`` reads or writes ``name`` only at indices (a param of its space,
    not a block, a temporary or an output)."""
    if name not in fused.params or name in fused.blocks or name in fused.temporaries or \
            name in fused.outputs or name in fused.views or \
            any(array == name for array, _ in fused.stores):
        return False
    return read_at_indices_only(fused, name)


def _length_names(fused):
    """The names the loop's length ``n`` reads where every array it takes is a view
    (``emit/loops.py``: the first one's length, a slice's ``hi - lo``)."""
    first = fused.arrays[0]
    if first not in fused.views:
        return []
    return [n for n in re.findall(r"[A-Za-z_]\w*", fused.views[first][1]) if n != "shape"]


def _take_view(fused, name, base, index):
    """Make ``fused`` take ``base`` and the view's bounds in place of ``name``."""
    if index[0] == "cut":
        _, low, high = index
        shape = f"rt.cut_shape({base}.shape, {low}, {high})"
        length = f"{base}.shape[0]" if high is None else high
        length += "" if low == "0" else f" - {low}"
        read = f"{base}[" if low == "0" else f"{base}[{low} + "
        extra = [low]
    else:
        shape = f"rt.row_shape({base}.shape, {index[1]})"
        length, read, extra = f"{base}.shape[1]", f"{base}[{index[1]}, ", [index[1]]
    fused.views[name] = (shape, length)
    extra = [e for e in extra if e.isidentifier()]
    at = fused.params.index(name)
    params = fused.params[:at] + [base] + extra + fused.params[at + 1:]
    fused.params = list(dict.fromkeys(params))
    pattern = re.compile(rf"\b{name}\[")
    fused.body = [pattern.sub(read, line) for line in fused.body]
