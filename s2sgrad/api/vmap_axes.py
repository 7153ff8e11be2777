"""The axes of a vmap checked against a call: ``in_axes`` per argument leaf, the mapped
size, ``out_axes`` per output leaf.

Takes ``vmap``'s options and a call's arguments (or one example's result); gives each
leaf's axis (an int counted from 0, or None) or raises ``VmapAxisError`` with the
user's line (``where``: the vmap's creation and the call site) and what to write instead.
"""
import os
import sys

import numpy as np

from ..errors import VmapAxisError
from ..trees import flatten, is_tree, leaf_paths

_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def user_line(skip_package=True):
    """``file:line`` of the innermost frame outside s2sgrad (the user's call)."""
    frame = sys._getframe(1)
    while frame is not None:
        path = os.path.abspath(frame.f_code.co_filename)
        if not (skip_package and path.startswith(_PACKAGE + os.sep)):
            return f"{os.path.basename(path)}:{frame.f_lineno}"
        frame = frame.f_back
    return "?"


def check_axes_option(axes, what, where):
    """``in_axes``/``out_axes`` must be an int, None, or a tuple/list/dict of them."""
    if axes is None or isinstance(axes, int) and not isinstance(axes, bool):
        return
    if isinstance(axes, (tuple, list)):
        for a in axes:
            check_axes_option(a, what, where)
        return
    if isinstance(axes, dict):
        for a in axes.values():
            check_axes_option(a, what, where)
        return
    raise VmapAxisError(f"{where}: {what} must be an int, None, or a tuple, list or dict of "
                        f"them, got {type(axes).__name__}: {axes!r}")


def _leaf_axes(axes, value, tree, what, where):
    """Per leaf of ``value`` (structure ``tree``) the axis ``axes`` gives it."""
    if axes is None or isinstance(axes, int):
        return [axes] * len(leaf_paths(tree))
    if isinstance(axes, dict) and tree is not None and tree[0] == "dict" and \
            set(axes) != {k for k, _ in tree[1]}:
        raise VmapAxisError(f"{where}: {what} has the keys {sorted(axes)}, but the dict it "
                            f"maps has {sorted(k for k, _ in tree[1])}; give one axis per key")
    if tree is None or tree[0] not in ("tuple", "list", "dict", "namedtuple") or \
            (tree[0] == "dict") != isinstance(axes, dict) or len(axes) != len(tree[1]):
        shape = "a leaf" if tree is None else f"a {tree[0]} of {len(tree[1])}"
        raise VmapAxisError(f"{where}: {what} is {axes!r}, but the value it maps is {shape}; "
                            f"give an int or None there, or a structure like the value's")
    if tree[0] == "dict":
        return [a for k, child in tree[1] for a in _leaf_axes(axes[k], None, child,
                                                             f"{what}[{k!r}]", where)]
    return [a for i, (sub, child) in enumerate(zip(axes, tree[1]))
            for a in _leaf_axes(sub, None, child, f"{what}[{i}]", where)]


def _normalised(axis, rank, what, where, shape=None):
    if axis is None:
        return None
    if not -rank <= axis < rank:
        got = f"an array of shape {shape}" if shape is not None else f"rank {rank}"
        raise VmapAxisError(f"{where}: {what} is {axis}, out of range for {got} (axes "
                            f"{-rank}..{rank - 1}); map an axis it has, or None to pass it "
                            f"whole to every call")
    return axis % rank


def argument_axes(in_axes, args, where):
    """(per argument its structure, per argument per leaf its axis, the mapped size)."""
    if isinstance(in_axes, (tuple, list)):
        if len(in_axes) != len(args):
            raise VmapAxisError(
                f"{where}: in_axes has {len(in_axes)} entries but the function was called "
                f"with {len(args)} arguments; give one axis (int or None) per argument")
        per_arg = list(in_axes)
    elif isinstance(in_axes, dict):
        raise VmapAxisError(f"{where}: in_axes is a dict; give an int, None, or a tuple "
                            f"with one entry per argument")
    else:
        per_arg = [in_axes] * len(args)
    trees, axes, sizes = [], [], []
    for i, (arg, axis) in enumerate(zip(args, per_arg)):
        leaves, tree = flatten(arg) if is_tree(arg) else ([arg], None)
        leaf_axes = _leaf_axes(axis, arg, tree, f"in_axes[{i}]", where)
        normal = []
        for path, leaf, a in zip(leaf_paths(tree), leaves, leaf_axes):
            shape = np.shape(leaf)
            a = _normalised(a, len(shape), f"the in_axis of argument {i}{path}", where, shape)
            if a is not None:
                sizes.append((f"argument {i}{path} (axis {a} of shape {shape})", shape[a]))
            normal.append(a)
        trees.append(tree)
        axes.append(normal)
    if not sizes:
        raise VmapAxisError(f"{where}: in_axes maps no argument (every axis is None); map "
                            f"at least one argument's axis")
    if len({s for _, s in sizes}) > 1:
        listed = ", ".join(f"{what}: {size}" for what, size in sizes)
        raise VmapAxisError(f"{where}: the mapped axes differ in size ({listed}); every "
                            f"mapped axis must have the same size")
    if sizes[0][1] == 0:
        raise VmapAxisError(f"{where}: the mapped axis has size 0 ({sizes[0][0]}); vmap "
                            f"needs at least one index")
    return trees, axes, sizes[0][1]


def output_axes(out_axes, result, where):
    """(the result's structure, per leaf its rank, dtype name and out axis)."""
    leaves, tree = flatten(result) if is_tree(result) else ([result], None)
    if isinstance(out_axes, (tuple, list)) and (tree is None or tree[0] == "dict"):
        raise VmapAxisError(f"{where}: out_axes is {out_axes!r}, but the function returns "
                            f"one {'dict' if tree else 'array'}; give one int or None")
    axes = _leaf_axes(out_axes, result, tree, "out_axes", where)
    ranks, dtypes, normal = [], [], []
    for path, leaf, axis in zip(leaf_paths(tree), leaves, axes):
        array = np.asarray(leaf)
        ranks.append(array.ndim)
        dtypes.append(array.dtype.name)
        normal.append(_normalised(axis, array.ndim + 1, f"the out_axis of output{path}",
                                  where))
    return tree, ranks, dtypes, normal


def same_rows(rows, k, where):
    """Row 0 of ``rows`` (output ``k``, out_axes None), after checking that every row is
    the same: an output left unmapped must not vary along the mapped axis."""
    rows = np.asarray(rows)
    same = rows == rows[0]
    if rows.dtype.kind in "fc":
        same |= np.isnan(rows) & np.isnan(rows[0])
    if not same.all():
        raise VmapAxisError(
            f"{where}: output {k} has out_axes None, but it differs along the mapped axis; "
            f"give it an out axis (0 stacks it)")
    return rows[0]
