"""The user's line behind a line of generated code that is lowered again.

A gradient object called inside a function being differentiated (or compiled by
``s2sgrad.jit``) is inlined: its generated module is parsed and lowered like the user's
own code, so the ops made from it would name the cache file's lines in their comments
(``f_value_and_grad_30cd9a6a.py:18``), a name nobody can read.  The module's line map
(generated line -> the user's ``SourceLocation``) is recorded here when the module is
handed out for inlining (``remember``), and ``user_location`` gives an op's location
in the user's words instead: the user's file and line, its text marked ``grad of:`` where
the generated line belongs to the adjoint sweep.  Locations of other files pass through.
"""
from ...errors import SourceLocation

#: path of a generated module -> (its line map, the first line of its adjoint sweep, its
#: last mapped line); at most ``KEPT`` modules, the oldest dropped first
_GENERATED = {}
KEPT = 1024


def remember(path, line_map, adjoint_from=None):
    """Record ``line_map`` (line of the module at ``path`` -> the user's SourceLocation)
    and ``adjoint_from`` (the first line of its adjoint sweep; None: it has none)."""
    if path and line_map:
        if len(_GENERATED) >= KEPT:
            del _GENERATED[next(iter(_GENERATED))]
        _GENERATED[path] = (dict(line_map), adjoint_from, max(line_map))


def user_location(location, depth=0):
    """``location``, or where it is a line of a remembered generated module, the user's
    line it was generated from (the nearest mapped line at or above it, followed through
    a module generated from another remembered one: the gradient of a vjp's pullback),
    its text marked ``grad of:`` in the adjoint sweep; a line past the function's last
    mapped line (a helper the module defines after it) is left as it is."""
    known = _GENERATED.get(location.filename) if depth < 8 else None
    if known is None:
        return location
    line_map, adjoint_from, last = known
    if location.lineno > last + 1:
        return location     # a helper written after the function (a fused loop's body)
    for k in range(location.lineno, 0, -1):
        origin = line_map.get(k)
        if origin is not None:
            break
    else:
        return location
    if origin.filename in _GENERATED and origin.filename != location.filename:
        origin = user_location(origin, depth + 1)
    if adjoint_from is None or location.lineno < adjoint_from or \
            (origin.text or "").lstrip().startswith("grad of:"):
        return origin
    return SourceLocation(origin.filename, origin.lineno,
                          "grad of: " + (origin.text or "").strip())
