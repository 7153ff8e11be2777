"""What the statements of a loop's step read and write, on generated code (gast).

For ``checkpoint``: ``stores`` (names assigned), ``live_in`` (names read before being
assigned, in order: what a block takes from before it), ``ordered`` (names in the order
statements first mention them), ``written_base`` (the array or list an element store or
a list method writes into) and ``without`` (statements less those touching some names).
"""
import gast

from .tape import value_reads


def stores(items):
    """The names the statements ``items`` assign (anywhere in them)."""
    return {n.id for item in items if isinstance(item, gast.AST) for n in gast.walk(item)
            if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Store)}


def ordered(items, among):
    """The names of ``among`` in the order ``items`` first mention them."""
    seen = []
    for item in items:
        for n in gast.walk(item) if isinstance(item, gast.AST) else ():
            if isinstance(n, gast.Name) and n.id in among and n.id not in seen:
                seen.append(n.id)
    return seen


def live_in(items):
    """The names ``items`` read before assigning them, in order (a name assigned in a
    loop or on one side of a branch only counts as assigned after it on both sides)."""
    live, defined = [], set()
    _scan(items, defined, live)
    return live


def _scan(items, defined, live):
    for item in items:
        if not isinstance(item, gast.AST):
            continue
        if isinstance(item, gast.If):
            for v in value_reads(item.test):
                _read(v, defined, live)
            body, orelse = set(defined), set(defined)
            _scan(item.body, body, live)
            _scan(item.orelse, orelse, live)
            defined |= body & orelse
        elif isinstance(item, (gast.For, gast.While)):
            for v in value_reads(item.iter if isinstance(item, gast.For) else item.test):
                _read(v, defined, live)
            inner = set(defined) | stores([item.target] if isinstance(item, gast.For) else [])
            _scan(item.body, inner, live)
        else:
            for v in _reads_in_order(item):
                _read(v, defined, live)
            defined |= stores([item])


def _reads_in_order(item):
    reads = value_reads(item)
    return [n.id for n in gast.walk(item) if isinstance(n, gast.Name) and n.id in reads]


def _read(name, defined, live):
    if name not in defined and name not in live:
        live.append(name)


def written_base(node):
    """The name an element store, augmented assignment or list method call writes into."""
    target = None
    if isinstance(node, (gast.Assign, gast.AugAssign)):
        targets = node.targets if isinstance(node, gast.Assign) else [node.target]
        target = next((t for t in targets if isinstance(t, gast.Subscript)), None)
        if target is None and isinstance(node, gast.AugAssign):
            return None
    elif isinstance(node, gast.Call) and isinstance(node.func, gast.Attribute) and \
            node.func.attr in ("append", "extend", "insert", "pop", "fill", "sort"):
        target = node.func
    while isinstance(target, (gast.Subscript, gast.Attribute)):
        target = target.value
    return target.id if isinstance(target, gast.Name) else None


def without(items, names):
    """``items`` less the statements that touch ``names`` (tapes, iteration counters)."""
    out = []
    for item in items:
        if isinstance(item, gast.AST) and not isinstance(item, (gast.If, gast.For, gast.While)):
            if any(isinstance(n, gast.Name) and n.id in names for n in gast.walk(item)):
                continue
        if isinstance(item, gast.If):
            item.body = without(item.body, names) or [gast.Pass()]
            item.orelse = without(item.orelse, names)
        elif isinstance(item, (gast.For, gast.While)):
            item.body = without(item.body, names) or [gast.Pass()]
        out.append(item)
    return out
