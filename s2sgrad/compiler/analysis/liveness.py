"""Which names a generated statement list reads before it assigns them, which it surely
assigns, and which it rebinds or changes in place.

The statement lists are the reverse pass's (gast statements and ``Comment``s).
``exposed_reads(items)`` gives, in order of first read, the names some path reads
before assigning them: for the adjoint sweep, the forward sweep's values it needs.
Paths follow the branches' tests: the adjoint sweep mirrors the forward's branches
(``if t2:`` restores a value that a later ``if t2:`` reads), so a name assigned under
a test (by name) counts as assigned in later branches under the same test, until the
test's name is assigned again.  ``surely_assigned(items)`` gives the names every path
assigns (loops may run zero times); ``assigned_anywhere`` any assignment;
``rebound_and_changed(items)`` the names the statements assign, and apart the names
whose object they update in place (``x[i] = v``, ``xs.pop()``), telling lists (method
updates) from arrays.
"""
import gast

from ..syntax.nodes import Comment

#: list methods that change the list they are called on
LIST_UPDATES = frozenset({"pop", "append", "extend", "clear", "insert", "remove"})


class _State:
    """Names surely assigned (``defs``) and, per set of branch conditions (a frozenset of
    (test name, taken)), the names assigned under those conditions (``facts``)."""

    def __init__(self, defs=(), facts=None):
        self.defs = set(defs)
        self.facts = dict(facts or {})

    def copy(self):
        return _State(self.defs, {k: set(v) for k, v in self.facts.items()})

    def available(self, context):
        out = set(self.defs)
        for key, names in self.facts.items():
            if key <= context:
                out |= names
        return out

    def assign(self, name, context):
        self.defs.add(name)
        # conditions on ``name``'s old value no longer hold
        self.facts = {k: v for k, v in self.facts.items()
                      if not any(test == name for test, _ in k)}

    def forget_tests(self, names):
        self.facts = {k: v for k, v in self.facts.items()
                      if not any(test in names for test, _ in k)}


def exposed_reads(items, available=()):
    """The names ``items`` read on some path before assigning them (first read first);
    ``available``: names assigned before ``items``."""
    out = []
    _walk(items, _State(available), frozenset(), out)
    return out


def surely_assigned(items, available=()):
    """The names every path through ``items`` assigns (plus ``available``)."""
    state = _State(available)
    _walk(items, state, frozenset(), [])
    return state.defs


def assigned_anywhere(items):
    """Every name some statement of ``items`` assigns."""
    rebound, _, _ = rebound_and_changed(items)
    return rebound


def rebound_and_changed(items):
    """(names assigned, arrays updated in place, lists updated in place) in ``items``."""
    rebound, arrays, lists = set(), set(), set()
    for node in _nodes(items):
        if isinstance(node, gast.Name) and isinstance(node.ctx, gast.Store):
            rebound.add(node.id)
        elif isinstance(node, gast.Subscript) and isinstance(node.ctx, gast.Store):
            base = _base_name(node)
            if base is not None:
                arrays.add(base)
        elif (isinstance(node, gast.Call) and isinstance(node.func, gast.Attribute)
              and node.func.attr in LIST_UPDATES and isinstance(node.func.value, gast.Name)):
            lists.add(node.func.value.id)
    return rebound, arrays - lists, lists


def _nodes(items):
    for item in items:
        if isinstance(item, Comment):
            continue
        yield from gast.walk(item)


def _base_name(node):
    while isinstance(node, (gast.Subscript, gast.Attribute)):
        node = node.value
    return node.id if isinstance(node, gast.Name) else None


def _reads(node, state, context, out):
    """Record the names ``node`` (an expression, or a store target's index) reads."""
    have = None
    for sub in gast.walk(node):
        if isinstance(sub, gast.Name) and isinstance(sub.ctx, gast.Load):
            if have is None:
                have = state.available(context)
            if sub.id not in have and sub.id not in out:
                out.append(sub.id)


def _target(target, state, context, out):
    """A store target: a name is assigned; a subscript or attribute reads its parts."""
    if isinstance(target, gast.Name):
        state.assign(target.id, context)
    elif isinstance(target, (gast.Tuple, gast.List)):
        for elt in target.elts:
            _target(elt, state, context, out)
    elif isinstance(target, gast.Starred):
        _target(target.value, state, context, out)
    else:   # x[i] = v, obj.attr = v: x (obj) and i are read
        load = _as_load(target)
        _reads(load, state, context, out)


def _as_load(target):
    import copy
    node = copy.deepcopy(target)
    for sub in gast.walk(node):
        if hasattr(sub, "ctx"):
            sub.ctx = gast.Load()
    return node


def _walk(items, state, context, out):
    for item in items:
        if isinstance(item, Comment):
            continue
        if isinstance(item, gast.Assign):
            _reads(item.value, state, context, out)
            for target in item.targets:
                _target(target, state, context, out)
        elif isinstance(item, gast.AugAssign):
            _reads(_as_load(item.target), state, context, out)
            _reads(item.value, state, context, out)
            _target(item.target, state, context, out)
        elif isinstance(item, gast.If):
            _branch(item, state, context, out)
        elif isinstance(item, (gast.For, gast.While)):
            _loop(item, state, context, out)
        elif isinstance(item, (gast.Break, gast.Continue, gast.Pass)):
            continue
        else:   # an expression statement, a return
            _reads(item, state, context, out)


def _branch(item, state, context, out):
    _reads(item.test, state, context, out)
    test = item.test.id if isinstance(item.test, gast.Name) else None
    sides = []
    for taken, body in ((True, item.body), (False, item.orelse)):
        inner = state.copy()
        where = context | {(test, taken)} if test is not None else context
        _walk(body, inner, where, out)
        sides.append((where, inner))
    (where_a, a), (where_b, b) = sides
    before = set(state.defs)
    state.defs = a.defs & b.defs
    facts = {k: set(v) for k, v in state.facts.items()}
    for where, side in sides if test is not None else ():
        for key, names in side.facts.items():
            facts.setdefault(key, set()).update(names)
        if test is not None:
            facts.setdefault(where, set()).update(side.defs - before)
    # a fact holds after the branch only if its test names were not assigned in it
    changed = (a.defs | b.defs) - before
    state.facts = {k: v for k, v in facts.items()
                   if not any(t in changed for t, _ in k)}
    if test is not None and test in changed:
        state.forget_tests({test})


def _loop(item, state, context, out):
    body_assigns = assigned_anywhere(item.body)
    if isinstance(item, gast.For):
        _reads(item.iter, state, context, out)
        body_assigns |= assigned_anywhere([gast.Assign(targets=[item.target],
                                                        value=gast.Constant(None, None))])
    else:
        _reads(item.test, state, context, out)
    # from the second iteration on, tests assigned in the body may differ
    state.forget_tests(body_assigns)
    inner = state.copy()
    if isinstance(item, gast.For):
        _target(item.target, inner, context, out)
    _walk(item.body, inner, context, out)
    if isinstance(item, gast.While):
        _reads(item.test, inner, context, out)
    # the body may run zero times: nothing it assigns is sure after it
