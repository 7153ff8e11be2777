"""Arguments that are tuples, lists and dicts of arrays ("pytrees", as JAX calls them).

``flatten(value)`` gives ``(leaves, treedef)``: the leaves in order (depth first; a
dict's items in its own order) and a hashable description of the structure;
``unflatten(treedef, leaves)`` builds the same structure around new leaves, so a
gradient comes back as a tuple for a tuple, a list for a list, a dict with the same
keys for a dict, nested as the argument was.

A treedef is ``None`` for a leaf, ``("tuple", children)``, ``("list", children)``,
``("dict", ((key, child), ...))`` or ``("namedtuple", children, type)``.
Anything that is not a tuple, list or dict is a leaf.
"""

__all__ = ["flatten", "unflatten", "leaf_paths", "is_tree"]


def is_tree(value):
    """True when ``value`` is a container whose items become separate leaves."""
    return isinstance(value, (tuple, list, dict))


def flatten(value):
    """``(leaves, treedef)`` of ``value``."""
    leaves = []
    return leaves, _flatten(value, leaves)


def _flatten(value, leaves):
    if isinstance(value, dict):
        return ("dict", tuple((k, _flatten(v, leaves)) for k, v in value.items()))
    if isinstance(value, tuple) and hasattr(type(value), "_fields"):
        return ("namedtuple", tuple(_flatten(v, leaves) for v in value), type(value))
    if isinstance(value, (tuple, list)):
        kind = "list" if isinstance(value, list) else "tuple"
        return (kind, tuple(_flatten(v, leaves) for v in value))
    leaves.append(value)
    return None


def unflatten(treedef, leaves):
    """The structure ``treedef`` describes, with ``leaves`` (an iterable) in order."""
    return _unflatten(treedef, iter(leaves))


def _unflatten(treedef, leaves):
    if treedef is None:
        return next(leaves)
    kind, children = treedef[0], treedef[1]
    if kind == "dict":
        return {k: _unflatten(child, leaves) for k, child in children}
    items = [_unflatten(child, leaves) for child in children]
    if kind == "namedtuple":
        return treedef[2](*items)
    return items if kind == "list" else tuple(items)


def leaf_paths(treedef, prefix=""):
    """The path of each leaf, as Python would index it: ``[0]``, ``['w']``, ``[1][0]``..."""
    if treedef is None:
        return [prefix]
    kind, children = treedef[0], treedef[1]
    if kind == "dict":
        return [p for k, child in children for p in leaf_paths(child, f"{prefix}[{k!r}]")]
    return [p for i, child in enumerate(children) for p in leaf_paths(child, f"{prefix}[{i}]")]
