"""vmap's vectorised form of indexing: ``x[...]`` of one example as an index of the batch.

Takes a gast ``Subscript`` read (never a target) and ``evaluate(node)``, the
(text, batched, rank) of an expression (``vectorise._expr``); gives the (text, batched,
rank) of the batched index, or raises ``NotVectorisable``.  Which names hold integers is
``env[INTS]`` (the int parameters, names assigned an int expression: ``is_int``); an
index by an array of any other dtype (a boolean mask, a float array) is not vectorised.
Numpy's rules decide where the axes of an index's arrays go, so the rules are:

- ``x`` batched, every index unbatched, its ints and arrays next to each other (or no
  array at all): the index after a ``:`` for the batch (``x[:, 0]``, ``x[:, 1:]``,
  ``x[:, idx]``, ``x[:, ..., 0]``, ``x[:, :, None]``);
- ``x`` batched and an array index batched, or its arrays apart: ``np.arange(n)`` with
  unit axes as the first index (``x[np.arange(n), labels]``, ``x[np.arange(n)[:, None],
  idx_b]``): numpy puts the arrays' axes first, the batch's first of them; where an
  example's arrays are next to each other after its first axes (``x[:, idx_b]``), their
  axes are moved back there (``np.moveaxis``);
- ``x`` unbatched and an array index batched: the index as it is (each batched array
  with unit axes after the batch up to the arrays' broadcast rank); where the arrays are
  next to each other after the example's first axes, the batch's axis (first of theirs)
  is moved first;
- ``x.shape[k]`` and ``len(x)``: the example's size (``x.shape[k + 1]``), an int.
"""
import builtins

import gast
import numpy as np

#: the key of ``env`` holding the set of names known to hold integers
INTS = "<ints>"


class NotVectorisable(Exception):
    """The function has a construct without a batching rule (the message names it;
    ``batch/vectorise.py`` raises it too)."""


def is_int(node, env, namespace):
    """True for an expression known to give integers: int constants, names in
    ``env[INTS]``, ``len``, ``x.shape[k]``, ``np.arange``, their items, sums and
    products."""
    ints = env.get(INTS, set())
    if isinstance(node, gast.Constant):
        return type(node.value) is int
    if isinstance(node, gast.Name):
        return node.id in ints or (node.id not in env and type(namespace.get(node.id)) is int)
    if isinstance(node, gast.BinOp) and isinstance(
            node.op, (gast.Add, gast.Sub, gast.Mult, gast.FloorDiv, gast.Mod)):
        return is_int(node.left, env, namespace) and is_int(node.right, env, namespace)
    if isinstance(node, gast.UnaryOp) and isinstance(node.op, gast.USub):
        return is_int(node.operand, env, namespace)
    if _shape_item(node) is not None:
        return True
    if isinstance(node, gast.Subscript):           # an item of integers: np.arange(n)[:, None]
        return is_int(node.value, env, namespace)
    if isinstance(node, gast.Call) and not node.keywords:
        fn = _called(node.func, namespace)
        return fn is len or (fn is np.arange and all(is_int(a, env, namespace)
                                                        for a in node.args))
    return False


def size(node, evaluate):
    """(text, False, 0) of ``x.shape[k]`` or ``len(x)`` (the example's size), or None."""
    found = _shape_item(node)
    if found is not None:
        value, k = found
        text, batched, rank = evaluate(value)
        if not -rank <= k < rank:
            raise NotVectorisable(f"{_source(value)}.shape[{k}] of an array of rank {rank}")
        return (f"{text}.shape[{k % rank + 1}]" if batched else f"{text}.shape[{k}]"), \
            False, 0
    return None


def length(arg, evaluate):
    """(text, False, 0) of ``len(arg)``: its example's first size."""
    text, batched, rank = evaluate(arg)
    if rank == 0:
        raise NotVectorisable("len of a number")
    return (f"{text}.shape[1]" if batched else f"len({text})"), False, 0


def subscript(node, env, namespace, evaluate, padded):
    """(text, batched, rank) of ``node`` (a gast Subscript read); see the module doc.
    ``padded(value, rank)`` gives a batched value's text with unit axes up to ``rank``."""
    text, batched, rank = evaluate(node.value)
    items = list(node.slice.elts) if isinstance(node.slice, gast.Tuple) else [node.slice]
    parts, arrays, advanced, ellipsis = [], [], [], False
    consumed = dropped = added = 0     # axes indexed, of them removed; axes added
    for at, item in enumerate(items):
        if isinstance(item, gast.Slice):
            parts.append(("slice", _slice(item, evaluate)))
            consumed += 1
        elif isinstance(item, gast.Constant) and item.value is Ellipsis:
            parts.append(("text", "..."))
            ellipsis = True
        elif isinstance(item, gast.Constant) and item.value is None:
            parts.append(("text", "None"))
            added += 1
        else:
            value = evaluate(item)
            if not is_int(item, env, namespace):
                raise NotVectorisable(f"an index by {_source(item)!r}, not known to be "
                                      f"integers (a mask or an array of unknown dtype)")
            parts.append(("index", value))
            advanced.append(at)
            consumed += 1
            dropped += 1
            if value[1] or value[2]:
                arrays.append(value)
    if consumed > rank or (ellipsis and sum(p == ("text", "...") for p in parts) > 1):
        raise NotVectorisable(f"the index of {_source(node)!r} (more indices than axes)")
    any_batched = any(v[1] for _, v in parts if _ == "index")
    together = not advanced or advanced == list(range(advanced[0], advanced[-1] + 1))
    if not arrays:                # ints only (basic indexing): the axes stay in place
        together, broadcast = True, 0
    else:
        broadcast = max(v[2] for v in arrays)
        if ellipsis:
            raise NotVectorisable(f"the index {_source(node)!r}: an array index with ...")
    out_rank = rank - dropped + added + broadcast
    if not batched and not any_batched:
        return f"{text}[{_joined(parts, padded, broadcast)}]", False, out_rank
    if batched and not any_batched and together:
        return f"{text}[:, {_joined(parts, padded, broadcast)}]", True, out_rank
    index = _joined(parts, padded, broadcast)
    before = advanced[0] if together else 0       # the example's axes before its arrays'
    if not batched:
        # the arrays' axes, the batch's first, come first, or in the arrays' place
        out = f"{text}[{index}]"
        return (f"np.moveaxis({out}, {before}, 0)" if before else out), True, out_rank
    rows = padded(("np.arange(len(" + text + "))", True, 0), broadcast)
    out = f"{text}[{rows}, {index}]"                # batch, arrays' axes, the others
    if before and broadcast:                        # the arrays' axes to their place
        out = (f"np.moveaxis({out}, {tuple(range(1, 1 + broadcast))}, "
               f"{tuple(range(1 + before, 1 + before + broadcast))})")
    return out, True, out_rank


def _joined(parts, padded, broadcast):
    texts = []
    for kind, value in parts:
        if kind == "index":
            texts.append(padded(value, broadcast) if value[1] else value[0])
        else:
            texts.append(value)
    return ", ".join(texts)


def _slice(item, evaluate):
    """The text of a slice whose bounds are unbatched numbers."""
    bounds = []
    for part in (item.lower, item.upper, item.step):
        if part is None:
            bounds.append("")
            continue
        text, batched, rank = evaluate(part)
        if batched or rank:
            raise NotVectorisable("a slice whose bounds are mapped or arrays")
        bounds.append(text)
    return f"{bounds[0]}:{bounds[1]}" + (f":{bounds[2]}" if bounds[2] else "")


def _shape_item(node):
    """(the gast value, k) of ``x.shape[k]`` with a constant int k (``-1`` too), else
    None."""
    if not isinstance(node, gast.Subscript) or not isinstance(node.value, gast.Attribute) \
            or node.value.attr != "shape":
        return None
    k, sign = node.slice, 1
    if isinstance(k, gast.UnaryOp) and isinstance(k.op, gast.USub):
        k, sign = k.operand, -1
    if isinstance(k, gast.Constant) and type(k.value) is int:
        return node.value.value, sign * k.value
    return None


def _called(func, namespace):
    """The object a called name or dotted name refers to (a builtin too), or None."""
    if isinstance(func, gast.Name):
        return namespace.get(func.id, getattr(builtins, func.id, None))
    if isinstance(func, gast.Attribute):
        owner = _called(func.value, namespace)
        return getattr(owner, func.attr, None) if owner is not None else None
    return None


def _source(node):
    from ..syntax.source import to_source
    return to_source(node).strip()
