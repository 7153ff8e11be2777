"""Runs of elementwise array statements made one explicit loop (code Numba compiles).

``fused_loops(statements, context)`` takes a generated function's statement list (gast
statements and ``Comment``s; loops are entered) and gives ``(statements, passes)``:
every run of at least ``MIN_STATEMENTS`` consecutive elementwise statements over one
1-D index space that saves at least ``MIN_SAVED`` arrays written as

    if rt.compiled() and rt.one_length((a.shape, b.shape, ...), least):
        out1, out2 = _f_pass(a, b, ..., numbers...)
    else:
        <the statements as they were>

(the else: a run as Python, or arrays not of the one length, at least ``least``, the
loop takes, which numpy broadcasts), and per call a ``Pass`` (``compiler/emit/loops.py``
writes its loop function).

A run's statements, per element ``i`` of arrays of one length ``n`` (``Context.space``
says which arrays have it: ``analysis/shapes.py`` facts spread through the statements):

- ``a = <tree>`` of ``+ - * /``, ``** 2``, unary ``-``, ``np.sqrt``/``abs``/``square``/
  ``exp``/``log``/``tanh``/``sin``/``cos``, ``special.expit``/``log_expit`` (Numba's
  versions of scipy's) over the space's arrays and numbers, and
  ``rt.unbroadcast(g, x)`` of an ``x`` from before the run (of the loop's length: ``g``);
  ``a += <tree>`` (an array from before the run is written in place: ``a[i] += ...``);
  ``a = b`` of a value of the run, ``np.copy(b)``, ``np.zeros_like(b)``;
- ``np.concatenate((p, a[:-k]))`` (``p`` an ``np.ones(k)``/``np.zeros(k)``) read as
  ``p[i] if i < k else a[i - k]``, and ``np.concatenate((a[k:], p))`` likewise;
- a slice's adjoint: ``z = np.zeros_like(b)``, ``parts = rt.split_like(d, (p, q), 0)``,
  ``v = parts[1]``, ``rt.add_into(z[:-k], v)`` read as ``if i < n - k: z += d[i + k]``.

Slice writes (``_Statement._piece``): ``r = np.empty_like(b)`` (``np.zeros_like``,
``np.empty(m)``/``np.zeros(m)`` of ``m`` an array's length: ``loop_space``) is a value
of the run, and each ``r[lo:hi] = <tree>`` / ``r[k] = <number>`` after it sets its
element where ``lo <= i < hi`` (``if i >= 1: r_i = x[i] * y_1[i - 1]``: the tree's
element ``i - lo``, each slice ``a[c:]``/``a[:-c]`` of it read where it lies, at
``a[i + c - lo]``); an ``np.empty_like`` is read only once its pieces have covered it
in order (``r[0]``, ``r[1:]``; ``r[:-1]``, ``r[-1]``).  The bounds are int literals,
from the start or the end (``k``, ``-k``), and the guard's least length is the one that
puts every bound in order.  In the adjoint a slice's value (``dt = rt.copy_value(
dr[1:])``, ``dt0 = dr[0]``, a tree of them and of slices) is a value of those elements
only (``dt_i = dr_i if i >= 1 else 0.0``), read by pieces of its length
(``rt.add_into(dy[:-1], dt)`` reads ``dt[i + 1]``, ``dx[0] += dt0``) and added in
place into a value or an array from before the run (``dx[i] += ...``); one read after
the run is returned as all n elements and sliced after the call (``dt = dt[1:]``).
Not fused (the run ends before): a piece whose tree reads an array of all n elements
(numpy broadcasts it), a slice with a step or bounds that are not literals, a view of
two cuts (``a[1:-1]``), a piece of an array that has an alias or was read shifted, a
value of a slice read by a statement of another length, an array from before the run
written in place while another is read shifted unless no other name can hold it
(``loop_space.exclusive``: a ``zeros_like`` accumulator), shifted reads in both
directions (``y[:-1]``'s adjoint reads ``i + 1``, ``y[1:]``'s ``i - 1``: two runs), and
``rt.unbroadcast`` to an array of a slice's length that the tape holds (its length is
not among the guard's).

A run also takes ``v = base[...]``, a 1-D slice or row of an array from before it (moved
before, its length among those the guard compares: spaces are lengths by name, compared
at run time), and in the adjoint the rows of a 2-D accumulator (``rt.add_into(dc[j], v)``,
``rt.copy_value(dc[j])``, ``dc[j] = 0``) and slices of an ``np.zeros_like`` it moved before
(``rt.add_into(z[lo:hi], v)``), each bound to a name before the run and written in the
loop; ``a[j] = tape.pop()`` of an array the run does not read moves before it.  (After
this pass, ``loop_views.py`` has a loop take the base and bounds of such a view, not the
view, where it can.)  Two or
more values read after the run are the rows of one array the loop makes (``Pass.block``;
``loop_tapes.py`` puts it on the tape in their place).

A value a later statement reads shifted (``t5[i - 1]``) is carried from iteration to
iteration in a local (``t5_prev``; no array unless it is read after the run), and the
loop runs the way that makes the read an earlier iteration's (up for ``i - k``, down
for ``i + k``); an array from before the run read shifted is never also
written in place by it (the run would read its own writes).  Numbers (``h / 2``), the
``np.ones(k)`` of a concatenate, an alias or a slice of an array from before the run
(``dy_1 = dy_2``, ``t2 = y_1[2:]``) and a tape's ``append`` inside a run move before or
after it.  Each element is computed by the same operations in the same order as numpy
computes it: arithmetic gives numpy's bits (``tanh``/``exp``... are libm's, within an
ulp of numpy's vectorised ones).  Runs are 1-D and of float64 arguments only.
"""
import copy

import gast

from ... import runtime as rt
from ..syntax.nodes import Comment, name_uses
from ..syntax.source import to_source
from .kernels import operation
from .loop_space import SPECIAL_FUNCTIONS, module_call

#: the fewest array statements worth a loop of their own (one is one pass already; two
#: save one array at most, and the function costs Numba a compile: measured on the lstm
#: eval, its four runs of two statements fused took 1.5-3 s more to compile and ran no
#: faster)
MIN_STATEMENTS = 3
#: the fewest arrays a loop must save (statements less the arrays it writes): a loop
#: that writes every value its statements make saves only passes, and costs a function
#: for Numba to compile (0.2-0.4 s).  Measured: a 6-statement forward step over 10,000
#: elements that saves none, 3-8% faster fused; the lstm eval's three sigmoid statements
#: (each value taped, 14 elements) left as numpy's
MIN_SAVED = 1
#: ``np.<name>(x)`` a loop computes per element (the function Numba runs on arrays too)
FUNCTIONS = frozenset({"exp", "log", "tanh", "sin", "cos"})
ZEROS = ("zeros_like",)
#: an array of the space's length whose elements slice writes set (``_Statement._piece``)
EMPTY = ("empty_like",)
#: the bounds of a piece ``a[lo:hi]``: ``(k, False)`` is element k, ``(k, True)`` is n - k
START, END = (0, False), (0, True)


class NotFused(Exception):
    """A statement a run cannot take (the run ends before it)."""


class Context:
    """What the passes know of the function: ``space(name)`` (the shape class of a 1-D
    array, or None), ``numbers`` (``kernels.Numbers``), ``small`` (name -> k of the
    ``np.ones(k)``/``np.zeros(k)`` arrays), ``reads`` (name -> reads in the whole
    function), ``keep`` (names returned), ``fresh`` (the name allocator's), ``same``
    (whether two shapes are equal) and ``modules`` (the names of imported modules)."""

    def __init__(self, space, numbers, small, reads, keep, fresh, same, modules):
        self.space, self.numbers, self.small = space, numbers, small
        self.reads, self.keep, self.fresh, self.same = reads, keep, fresh, same
        self.modules = modules
        self.slices = {}            # name -> cut c of the views base[c:]/base[:-c]
        self.rank = lambda name: None   # an array's rank where known (adjoints: their primal's)
        self.stores = {}            # name -> how often the sweep binds it
        self.pieced = set()         # names of lengths a concatenate's piece decides
        self.exclusive = set()      # names whose array no other name holds

    def length(self, name):
        """``("small", k)``: ``name`` has k elements; ``("cut", c)``: ``n - c``; None."""
        if name in self.small:
            return "small", self.small[name]
        if name in self.slices:
            return "cut", self.slices[name]
        return ("cut", 0) if self.space(name) is not None else None


class Pass:
    """One fused run: ``name`` (the function the call calls), ``params`` (in call
    order), ``outputs`` (the names the call binds), ``results`` (the arrays the loop
    function returns for them), ``arrays`` (params of the index space, the first one's
    length is ``n``), ``written`` (params written in place), ``body`` (the loop body's
    lines, over ``i``), ``stores`` ((array, element) pairs written at the end of each
    iteration), ``temporaries`` (every array the loop makes: its results), ``carries``
    ((locals, local) of each value read shifted: ``locals[k - 1]`` holds its element of
    k iterations ago, set from ``local`` at the end of each iteration), ``down`` (the
    loop runs from ``n - 1`` to 0), ``least`` (the fewest elements it takes),
    ``statements`` (the original statements with their comments),
    ``origins`` and ``aliases`` ((name, output) bound after the call), ``block`` and
    ``rows`` (where two or more outputs are not returned: one array of their rows, made
    once per call, the call binds ``block`` and unpacks it into ``rows``: one allocation
    and one value to keep for them all; not where the loop takes a least length or
    reads an array a concatenate's piece made, ``loop_space.pieced``: where its guard
    fails, numpy's values may be of several lengths, which rows cannot hold),
    ``branch`` (the ``if`` of the call), ``tails`` ((name, view) bound after the call:
    a view of an output read after the run, ``t7 = t4[:-1]``, or a slice's value returned
    as all n elements, ``dt = dt[1:]``), ``blocks`` (a param that is a block of rows
    the loop reads as ``block[k, i]``, -> {row name: k}: ``loop_rows.py``), ``views``
    (an array in ``arrays`` the loop reads from the array it is a slice or row of, ->
    (its shape in the guard, its length in the loop): ``loop_views.py``)."""

    def __init__(self):
        self.name, self.params, self.outputs = None, [], []
        self.arrays, self.written, self.body, self.stores = [], [], [], []
        self.temporaries, self.down, self.statements, self.origins = [], False, [], []
        self.results, self.aliases = [], []   # the arrays returned; (name, output) kept
        self.row_arrays = []                  # the loop function's names of the rows
        self.count, self.where = 0, []        # statements fused; "file.py:12" of each line
        self.shifted = False                  # whether a value is read at i - k or i + k
        self.least = 0                        # the fewest elements the loop takes
        self.block, self.rows = None, []      # one array holding these outputs as rows
        self.branch = None                    # the ``if`` the call is in
        self.numpy = None                     # its else's statements as numpy (a list)
        self.tails = []                       # (name, "a[1:]") views of outputs read after
        self.blocks = {}                      # a param block -> {row name: k} read as rows
        self.carries = []                     # ([lag 1, lag 2...], local) of shifted reads
        self.views = {}                       # an array read from its base -> (guard's shape, n)


def fused_loops(statements, context):
    """``(statements, passes)``: see the module doc."""
    passes = []
    return _in_list(statements, context, passes), passes


def _in_list(items, context, passes):
    out, k = [], 0
    items = [_entered(item, context, passes) for item in items]
    while k < len(items):
        run = _Run(context)
        end, used = run.grow(items, k)
        replacement = run.replacement(passes) if run.count >= MIN_STATEMENTS else None
        if replacement is not None:
            out += replacement
            k = end
        else:
            out.append(items[k])
            k += 1
    return out


def _entered(item, context, passes):
    if isinstance(item, (gast.For, gast.While)):
        item = copy.copy(item)
        item.body = _in_list(item.body, context, passes)
    elif isinstance(item, gast.If):
        item = copy.copy(item)
        item.body = _in_list(item.body, context, passes)
        item.orelse = _in_list(item.orelse, context, passes)
    return item


class _Value:
    """A name bound in the run: its element's local name, the identity it shares with
    its aliases, whether it is read shifted (``shifted``: then written to ``array``)."""

    def __init__(self, local, identity):
        self.local, self.identity = local, identity
        self.shifted, self.array, self.kind = False, None, "value"
        self.view = None            # (d, offset) of ``rt.split_like(...)[k]``
        self.parts = None           # (d, (k0, k1)) of ``rt.split_like``
        self.cover = None           # an ``np.empty_like`` not yet covered: its next bound
        self.range = (START, END)   # the elements i it has (a slice's value: fewer)
        self.reads = 0              # its reads in the run so far
        self.carries = []           # locals of its element 1, 2... iterations ago


class _State:
    """What a run holds so far (copied before each statement: a statement it cannot
    take leaves it as it was)."""

    def __init__(self):
        self.values = {}            # name -> _Value of its binding in the run
        self.outer = []             # names read from before the run, in first-use order
        self.shifted_outer, self.written = set(), []
        self.numbers, self.direction, self.body = [], 0, []
        self.space, self.identities, self.count = None, 0, 0
        self.read_after = set()     # names a moved-after statement read
        self.slices = {}            # name -> (base, low, cut) of a view moved before
        self.least = 0              # the loop takes n >= least (a slice of k: n >= k)
        self.taken = set()
        self.views = []             # (name, source) of the views written, bound before
        self.fresh = set()          # arrays the run's ``np.zeros_like`` made (moved before)
        self.cuts = {}              # name -> (base, identity, low, cut, source): a value's view


class _Run:
    """Grows one run from a statement on (``grow``) and writes its call
    (``replacement``)."""

    def __init__(self, context):
        self.context, self.state = context, _State()
        self.statements, self.before, self.after, self.origins = [], [], [], []
        self.count = 0

    def grow(self, items, k):
        """Take statements from ``items[k]`` on while they fuse; gives (the index after
        the run's last statement, the statements taken).  The run ends where every
        part of a ``split_like`` it took has been added where it goes (a part is no
        array the code after it could read)."""
        end, pending, committed = k, [], self._snapshot()
        for j in range(k, len(items)):
            item = items[j]
            if isinstance(item, Comment):
                pending.append(item)
                continue
            kept = copy.deepcopy(self.state, {id(self.state.space): self.state.space})
            try:
                _Statement(self.context, self.state).take(item)
            except NotFused:
                self.state = kept
                if self._moved(item):
                    pending.append(item)
                    continue
                break
            self.statements += pending + [item]
            self.origins += [c.origin for c in pending if isinstance(c, Comment) and
                             c.origin is not None]
            pending = []
            if not any(v.view or v.parts or v.cover or self._open(name, v)
                       for name, v in self.state.values.items()):
                end, committed = j + 1, self._snapshot()
        self.state, self.statements, self.origins, self.before, self.after = committed
        self.count = self.state.count
        self.before = [s for s in self.before if _index(items, s) < end]
        self.after = [s for s in self.after if _index(items, s) < end]
        self.statements = [s for s in self.statements if s not in self.before and
                           s not in self.after]
        return end, self.statements

    def _open(self, name, value):
        """Whether ``value`` is a slice's (``_Statement._ranged``) read after this point
        that no array of the loop can hold (the run ends before it): one of elements
        ``lo`` to ``n - c`` is returned as all n and sliced after the call."""
        (low, low_end), (_, high_end) = value.range
        return value.range != (START, END) and (low_end or not high_end) and (
            name in self.context.keep or self.context.reads.get(name, 0) > value.reads)

    def _snapshot(self):
        return (copy.deepcopy(self.state, {id(self.state.space): self.state.space}),
                list(self.statements), list(self.origins), list(self.before),
                list(self.after))

    def _moved(self, item):
        """Whether ``item`` can move out of the run: a number, a small constant array, an
        alias or a slice of an array from before the run (before it), a tape's
        ``append`` (after it); recorded in ``before``/``after``."""
        state = self.state
        reads = _reads(item)
        if _assigned(item) is not None and (_np_call(item.value, ZEROS) or
                                            _np_call(item.value, ZEROS, "rt")):
            return self._zeros_before(item, reads)
        if _element(item, self.context) and not reads & set(state.values) and \
                not _element(item, self.context) & (set(state.written) | self._bases() -
                                                    set(state.outer)):
            self.before.append(item)        # ``x0 = x[0]``: read before the run's writes
            return True
        if _assigned(item) is not None and not reads & set(state.values):
            name = _assigned(item)
            if name in state.values or name in state.outer or name in state.read_after:
                return False
            if name in self.context.small and reads & set(state.written):
                return False        # (a piece computed from what the run writes)
            if self.context.numbers.number(item.value) or name in self.context.small or \
                    isinstance(item.value, gast.Name) and self.context.space(name) or \
                    _length(item.value):
                self.before.append(item)
                return True
            if isinstance(item.value, gast.Subscript) and \
                    isinstance(item.value.value, gast.Name) and \
                    self.context.space(item.value.value.id):
                try:
                    state.slices[name] = (item.value.value.id, *_cut(item.value.slice))
                except NotFused:
                    return self._view_before(item, name)
                self.before.append(item)
                return True
            return self._view_before(item, name)
        if _stored_row(item) and not reads & set(state.values) and \
                not _stored_row(item) & (self._bases() | state.read_after):
            self.before.append(item)        # ``cell[j] = tape.pop()``: the run never reads it
            return True
        if _is_append(item) and not any(state.values.get(n) and state.values[n].view
                                        for n in reads):
            state.read_after |= reads
            self.after.append(item)
            return True
        return False

    def _bases(self):
        """The arrays the run reads or writes so far, and the bases of its views."""
        state = self.state
        return set(state.outer) | {_base_name(source) for _, source in state.views} | \
            set(state.values)

    def _zeros_before(self, item, reads):
        """``z = np.zeros_like(x)`` of an ``x`` from before the run: a fresh array, made
        before (the run may add into slices of it, ``_Statement._add_into``)."""
        name = _assigned(item)
        state = self.state
        if name is None or reads & set(state.values) or name in self._bases() or \
                name in state.read_after or self.context.rank(name) != 1:
            return False
        self.before.append(item)
        state.fresh.add(name)
        return True

    def _view_before(self, item, name):
        """``v = base[...]``, a 1-D view of the run's kind (a slice or a row of an array
        from before the run, ``Context.space`` knows it): moved before, read as an array
        of the run (its length is among those the guard compares)."""
        if isinstance(item.value, gast.Subscript) and \
                isinstance(item.value.value, gast.Name) and self.context.space(name):
            self.before.append(item)
            return True
        return False

    def replacement(self, passes):
        """The statements that replace the run (None where the loop would save no
        array, ``MIN_SAVED``): the moved numbers, a comment naming
        the user's lines, ``if rt.compiled() and rt.one_length((a.shape, ...), least):``
        the call (and the aliases it keeps), ``elif SKIP_ELSE: raise rt.FusedGuardFailed``
        (Numba's copy of the code: the call runs again, ``rt.SKIP_ELSE``), ``else:`` the
        statements as they were (a run as Python, or arrays numpy broadcasts), then the
        moved appends."""
        fused = _Pass(self.context, self.state).finished(self.statements, self.origins)
        made = len(fused.temporaries) - len(fused.rows) + (fused.block is not None)
        if fused.count - made < MIN_SAVED:
            return None
        passes.append(fused)
        where = ", ".join(fused.where)
        comment = Comment(f"{fused.count} array statements in one loop ({fused.name}, above)"
                          + (f": {where}" if where else ""),
                          self.origins[0] if self.origins else None)
        bound = ([fused.block] if fused.block else []) + \
            [n for n in fused.outputs if n not in fused.rows]
        outputs = ", ".join(bound) + ("," if len(bound) == 1 else "")
        call = f"{fused.name}({', '.join(fused.params)})"
        text = f"{outputs} = {call}" if bound else call
        aliases = [gast.parse(f"{', '.join(fused.rows)} = {fused.block}").body[0]] \
            if fused.block else []
        aliases += [gast.parse(f"{a} = {b}").body[0] for a, b in fused.aliases + fused.tails]
        test = guard(fused)
        skip = gast.parse(f"if {rt.SKIP_ELSE}:\n"
                          f"    raise rt.FusedGuardFailed(\"s2sgrad: {fused.name}'s arrays "
                          f"of several lengths\")").body[0]
        skip.orelse = list(self.statements)     # (Numba's copy prunes them: rt.SKIP_ELSE)
        branch = gast.If(test=test, body=[gast.parse(text).body[0]] + aliases, orelse=[skip])
        fused.branch, fused.numpy = branch, skip.orelse
        views = [gast.parse(f"{name} = {source}").body[0] for name, source in
                 self.state.views]
        return self.before + [comment] + views + [branch] + self.after


def guard(fused):
    """The test of ``fused``'s call: ``rt.compiled() and rt.one_length((a.shape, ...),
    least)`` over its arrays (a block read by rows, ``Pass.blocks``: its rows' shape,
    ``block.shape[1:]``; a view read from its base, ``Pass.views``: its shape from the
    base's, ``rt.cut_shape(base.shape, lo, hi)``)."""
    shapes = ", ".join(fused.views[a][0] if a in fused.views else
                       f"{a}.shape[1:]" if a in fused.blocks else f"{a}.shape"
                       for a in fused.arrays) + ("," if len(fused.arrays) == 1 else "")
    return gast.parse(f"rt.compiled() and rt.one_length(({shapes}), {fused.least})",
                      mode="eval").body


def _stored_row(item):
    """The base of ``a[...] = value`` (a set), else an empty set."""
    if isinstance(item, gast.Assign) and len(item.targets) == 1 and \
            isinstance(item.targets[0], gast.Subscript) and \
            isinstance(item.targets[0].value, gast.Name):
        return {item.targets[0].value.id}
    return set()


def _length(node):
    """Whether ``node`` is ``len(a)`` of a name (a number, moved before the run)."""
    return isinstance(node, gast.Call) and isinstance(node.func, gast.Name) and \
        node.func.id == "len" and len(node.args) == 1 and \
        isinstance(node.args[0], gast.Name) and not node.keywords


def _element(item, context):
    """The base of ``v = base[k]`` (an int literal) of a 1-D array, a set, else empty."""
    if _assigned(item) is None or not isinstance(item.value, gast.Subscript) or \
            not isinstance(item.value.value, gast.Name) or \
            context.space(item.value.value.id) is None:
        return set()
    try:
        _literal(item.value.slice)
    except NotFused:
        return set()
    return {item.value.value.id}


def _base_name(source):
    return source.split("[", 1)[0]


def _index(items, item):
    return next(k for k, s in enumerate(items) if s is item)


def _assigned(item):
    if isinstance(item, gast.Assign) and len(item.targets) == 1 and \
            isinstance(item.targets[0], gast.Name):
        return item.targets[0].id
    return None


def _reads(item):
    return {n.id for n in gast.walk(item) if isinstance(n, gast.Name) and
            isinstance(n.ctx, gast.Load)}


def _is_append(item):
    return isinstance(item, gast.Expr) and isinstance(item.value, gast.Call) and \
        isinstance(item.value.func, gast.Attribute) and item.value.func.attr == "append" \
        and isinstance(item.value.func.value, gast.Name)


def _np_call(node, names, module="np"):
    return module_call(node, module, names)


class _Statement:
    """Takes one statement into a run's ``_State`` (raises ``NotFused``)."""

    def __init__(self, context, state):
        self.context, self.state = context, state

    def take(self, item):
        name = _assigned(item)
        if name is not None:
            return self._assign(name, item.value)
        if isinstance(item, gast.AugAssign) and isinstance(item.target, gast.Name) and \
                isinstance(item.op, (gast.Add, gast.Sub, gast.Mult, gast.Div)):
            op = to_source(gast.BinOp(gast.Name("a", gast.Load(), None, None), item.op,
                                      gast.Name("b", gast.Load(), None, None)))[2]
            return self._update(item.target.id, op, self.element(item.value), True)
        if isinstance(item, gast.Expr) and _np_call(item.value, ("add_into",), "rt"):
            return self._add_into(*item.value.args)
        if _stored_row(item) and self._pieced(item.targets[0].value.id):
            return self._piece(item.targets[0], item.value)
        if isinstance(item, gast.AugAssign) and isinstance(item.op, gast.Add) and \
                isinstance(item.target, gast.Subscript) and \
                isinstance(item.target.value, gast.Name) and \
                self._pieced(item.target.value.id):
            return self._piece(item.target, item.value, "+")
        if _stored_row(item) and isinstance(item.value, gast.Constant) and \
                isinstance(item.value.value, (int, float)):
            view = self._written_view(item.targets[0])
            return self._line(f"{view}[i] = {item.value.value!r}", False)
        raise NotFused

    def _written_view(self, target):
        """The name of the 1-D view ``a[j]`` (a row of a 2-D ``a``) or ``z[lo:hi]`` (of a
        1-D ``z`` the run made with ``np.zeros_like``) the run writes, bound before it
        (an element ``a[j]`` of a 1-D ``a``, a view of an array the run reads: NotFused)."""
        state = self.state
        if not (isinstance(target, gast.Subscript) and isinstance(target.value, gast.Name)):
            raise NotFused
        base, index = target.value.id, target.slice
        if base in state.values or base in state.outer or base in state.read_after:
            raise NotFused
        row = self.context.rank(base) == 2 and not isinstance(index, (gast.Slice, gast.Tuple))
        part = base in state.fresh and isinstance(index, gast.Slice) and index.step is None
        if not (row or part):
            raise NotFused
        source = to_source(target)
        for name, seen in state.views:
            if seen == source:
                return name
        if any(_base_name(seen) == base for _, seen in state.views) and row:
            raise NotFused          # two rows of one array: which rows is not known
        if _reads(target.slice) & set(state.values):
            raise NotFused
        name = self.context.fresh(f"{base}_part")
        state.taken.add(name)
        state.views.append((name, source))
        state.outer.append(name)
        state.written.append(name)
        return name

    def _assign(self, name, value):
        state, context = self.state, self.context
        if name in context.small:
            raise NotFused          # a concatenate's piece of k elements: moved before
        self._rebinding(name)
        if _np_call(value, ZEROS) or _np_call(value, ZEROS, "rt"):
            if len(value.args) != 1 or not isinstance(value.args[0], gast.Name):
                raise NotFused
            self._space_of(value.args[0].id)
            self._bind(name).kind = "zeros"
            return self._line(f"{state.values[name].local} = 0.0", True)
        if _np_call(value, EMPTY) or _np_call(value, ("empty", "zeros")):
            return self._fresh_array(name, value)
        if isinstance(value, gast.Subscript) and isinstance(value.value, gast.Name) and \
                value.value.id in state.values and isinstance(value.slice, gast.Slice):
            return self._cut_view(name, value)
        if _np_call(value, ("copy",)) and len(value.args) == 1 and \
                isinstance(value.args[0], gast.Name):
            element = self._read(value.args[0].id, 0)
            self._space_of(name, defined=True)
            return self._line(f"{self._bind(name).local} = {element}", True)
        if _np_call(value, ("split_like",), "rt"):
            return self._split(name, value)
        if isinstance(value, gast.Subscript) and isinstance(value.value, gast.Name) and \
                value.value.id in state.values and state.values[value.value.id].parts:
            return self._view(name, value)
        if isinstance(value, gast.Name):
            if value.id not in state.values or state.values[value.id].view:
                raise NotFused     # an alias of an array from before: left to numpy
            source = state.values[value.id]
            bound = self._bind(name, source.identity)
            return self._line(f"{bound.local} = {source.local}", False)
        if context.numbers.number(value):
            raise NotFused
        if isinstance(value, gast.Subscript) and not (isinstance(value.value, gast.Name) and
                                                      value.value.id in state.values):
            raise NotFused          # a view of an array from before: moved (``_Run._moved``)
        span = self._span(value)
        if span != (START, END):
            return self._ranged(name, value, span)
        element = self.element(value)
        if context.space(name) is None:
            raise NotFused
        self._space_of(name, defined=True)
        bound = self._bind(name)
        return self._line(f"{bound.local} = {element}", True)

    def _fresh_array(self, name, value):
        """``a = np.empty_like(b)``, or ``np.empty(m)``/``np.zeros(m)`` of the space's
        length (``loop_space``): a value whose elements the slice writes after it set
        (``_piece``); an empty one is read only once they cover it, in order."""
        if len(value.args) != 1:
            raise NotFused
        if _np_call(value, EMPTY):
            if not isinstance(value.args[0], gast.Name):
                raise NotFused
            self._space_of(value.args[0].id)
        elif self.context.space(name) is None:
            raise NotFused
        else:
            self._space_of(name, defined=True)
        bound = self._bind(name)
        bound.kind = "zeros" if value.func.attr == "zeros" else "empty"
        bound.cover = START if bound.kind == "empty" else None
        return self._line(f"{bound.local} = 0.0", True)

    def _cut_view(self, name, value):
        """``v = a[lo:-c]`` of a value ``a`` of the run: read by a piece of the same
        length (``_aligned``) at its offset; ``a`` is not bound again in the run, and
        where ``v`` is read after it, bound again after the call (``Pass.tails``)."""
        base = value.value.id
        low, cut = _cut(value.slice)
        source = self.state.values[base]
        if source.view or source.parts or source.cover:
            raise NotFused
        self.state.cuts[name] = (base, source.identity, low, cut, to_source(value))

    def _pieced(self, base):
        """Whether ``base[...] = v`` is a piece ``_piece`` writes: ``base`` a value of the
        run, or a 1-D array from before it of the run's space (not a view it made)."""
        state = self.state
        if base in state.values:
            return True
        space = self.context.space(base)
        return space is not None and base not in state.fresh and \
            self.context.rank(base) == 1 and base not in dict(state.views) and \
            (state.space is None or self.context.same(state.space, space))

    def _piece(self, target, value, op=""):
        """``a[lo:hi] = tree`` / ``a[k] = number`` (``op``: ``+=``, ``rt.add_into``) into
        a value ``a`` of the run or an array from before it: its element is the tree's
        element ``i - lo`` where ``lo <= i < hi`` (``_aligned``), as numpy writes it; a
        value has no alias and no shifted read (they would see it)."""
        state = self.state
        name = target.value.id
        low, high = _bounds(target.slice)
        element = self._aligned(value, low, high)
        if isinstance(value, gast.Constant) and type(value.value) is int:
            element = repr(float(value.value))      # (the element's type: float64)
        state.least = max(state.least, _least(low, high))
        test = _test(low, high)
        old = state.values.get(name)
        if old is None:
            self._update(name, op, element, True)
            line = state.body.pop()
        else:
            if old.view or old.parts or old.shifted or old.range != (START, END) or \
                    name in state.read_after or (op and old.cover) or \
                    sum(v.identity == old.identity for v in state.values.values()) > 1:
                raise NotFused
            if old.cover is not None:
                if old.cover != low:
                    raise NotFused      # an empty array's pieces in order, from 0 to n
                old.cover = None if high == END else high
            line = f"{old.local} {op}= {element}"
        one = (low[0] + (1, -1)[low[1]], low[1]) == high     # one element: no pass saved
        self._line(f"if {test}:" if test else line, not one)
        if test:
            state.body.append(f"    {line}")

    def _ranged(self, name, value, span):
        """``v = tree`` of slices (``a[1:]``, ``a[0]``, a value of them): a value of the
        elements ``span`` only, ``v_i = <element> if <test of i> else 0.0``; read only by
        pieces of its length, and within the run (``_Run._open``)."""
        element = self._aligned(value, *span)
        self._rebinding(name)
        bound = self._bind(name)
        bound.range = span
        return self._line(f"{bound.local} = {element} if {_test(*span)} else 0.0", True)

    def _span(self, node):
        """The elements ``(low, high)`` of a tree's value: a slice's value's, or the first
        slice's it reads (not within a ``concatenate``), else every element."""
        state = self.state
        if _np_call(node, ("concatenate",)):
            return START, END
        if isinstance(node, gast.Name) and node.id in state.values:
            return state.values[node.id].range
        if isinstance(node, (gast.Name, gast.Subscript)) and \
                not self.context.numbers.number(node):
            if isinstance(node, gast.Subscript) and not isinstance(node.slice, gast.Slice) \
                    and not (isinstance(node.value, gast.Name) and
                             node.value.id in state.values):
                return START, END   # ``x[0]`` of an array from before: a number before
            view = self._piece_view(node) if isinstance(node, gast.Subscript) or \
                node.id in state.cuts or node.id in state.slices else None
            return view[1] if view is not None else (START, END)
        spans = [self._span(child) for child in gast.iter_child_nodes(node)]
        return next((span for span in spans if span != (START, END)), (START, END))

    def _aligned(self, node, low, high):
        """The source of ``node``'s element for the piece ``[low, high)`` at ``i``: a
        number, or a tree of slices of the piece's length read where they are, ``a[lo:]``
        as ``a[i + lo - low]`` (views of arrays from before the run, ``Context.slices``,
        of the run's values, ``_cut_view``, or a slice's value, ``_ranged``)."""
        if (low, high) == (START, END) and self._span(node) == (START, END):
            return self.element(node)
        if self.context.numbers.number(node):
            return self.element(node)
        saved = self._tree
        self._tree = lambda child: self._piece_tree(child, low, high, saved)
        try:
            return to_source(self._tree(node))
        finally:
            del self._tree

    def _piece_tree(self, node, low, high, tree):
        """``_tree`` within a piece: a slice's element, or ``tree`` of an operation."""
        if _np_call(node, ("copy_value",), "rt") and len(node.args) == 1:
            return self._tree(node.args[0])
        if _np_call(node, ("unbroadcast",), "rt") and len(node.args) == 2 and \
                self.context.numbers.number(node.args[1]) and \
                (low[0] + (1, -1)[low[1]], low[1]) == high:
            return self._tree(node.args[0])                 # one element to a number
        if _np_call(node, ("unbroadcast",), "rt") and len(node.args) == 2 and \
                self._span(node.args[1]) != (START, END):
            _shift(self._span(node.args[1]), (low, high))   # of the piece's length
            return self._tree(node.args[0])
        if _np_call(node, ("concatenate",)) or _np_call(node, ("unbroadcast",), "rt"):
            raise NotFused          # reads of the whole space's elements
        if self.context.numbers.number(node) or not isinstance(node, (gast.Name,
                                                                       gast.Subscript)):
            return tree(node)
        value = self.state.values.get(node.id) if isinstance(node, gast.Name) else None
        if value is not None and node.id not in self.state.cuts:
            shift = _shift(value.range, (low, high))
            return _text(self._read(node.id, shift, ranged=True))
        view = self._piece_view(node)
        if view is None:
            raise NotFused          # an array of all n elements: numpy broadcasts
        base, span = view
        return _text(self._read(base, _shift(span, (low, high))))

    def _piece_view(self, node):
        """``(base, (low, high))`` of a slice or element ``base[...]`` of an array of all
        n elements (or a name bound to one): ``base``'s elements it has, else None."""
        state = self.state
        if isinstance(node, gast.Subscript) and isinstance(node.value, gast.Name):
            return node.value.id, _bounds(node.slice)
        if isinstance(node, gast.Subscript):
            raise NotFused          # a view of a view (``x[0][1:]``): not a piece here
        if node.id in state.cuts:
            base, identity, lo, cut, _ = state.cuts[node.id]
            if base not in state.values or state.values[base].identity != identity:
                raise NotFused      # bound again since: the view is of the value before
            return base, ((lo, False), (cut, True))
        if node.id in state.slices:
            base, lo, cut = self._sliced(node)
            return base, ((lo, False), (cut, True))
        return None

    def _rebinding(self, name):
        """A name bound again: never one read shifted or by a moved append."""
        old = self.state.values.get(name)
        if old is not None and (old.shifted or old.view or old.parts) or \
                name in self.state.read_after or \
                any(cut[0] == name for cut in self.state.cuts.values()):
            raise NotFused          # (a view of it is bound again after the call)

    def _bind(self, name, identity=None):
        state = self.state
        if identity is None:
            state.identities += 1
            identity = state.identities
        old = state.values.get(name)
        local = old.local if old is not None else \
            _fresh(f"{name}_i", state.taken | set(self.context.reads))
        state.taken.add(local)
        state.values[name] = _Value(local, identity)
        return state.values[name]

    def _line(self, text, counts):
        self.state.body.append(text)
        if counts:
            self.state.count += 1

    def _space_of(self, name, defined=False):
        """Check ``name`` is an array of the run's index space (the first sets it)."""
        space = self.context.space(name)
        if space is None and not (name in self.state.values and not defined):
            raise NotFused
        if space is None:
            return
        if self.state.space is None:
            self.state.space = space
        elif not self.context.same(self.state.space, space):
            raise NotFused
        if not defined and name not in self.state.values and name not in self.state.outer:
            self.state.outer.append(name)

    def _update(self, name, op, element, counts):
        state = self.state
        value = state.values.get(name)
        if value is not None:
            shared = [n for n, v in state.values.items() if v.identity == value.identity]
            if len(shared) > 1 or value.shifted or value.view or value.parts or \
                    value.cover or name in state.read_after:
                raise NotFused      # an update an alias or a shifted read would see
            return self._line(f"{value.local} {op}= {element}", counts)
        if name in state.shifted_outer or self.context.space(name) is None:
            raise NotFused
        self._space_of(name)
        if state.shifted_outer and name not in self.context.exclusive or \
                name in state.read_after:
            raise NotFused          # the loop would read what it wrote
        if name not in state.written:
            state.written.append(name)
        return self._line(f"{name}[i] {op}= {element}", counts)

    def _split(self, name, value):
        """``parts = rt.split_like(d, (p, q), 0)`` of a 1-D ``d`` (only ``p``'s length
        counts): remembered for the ``parts[k]`` after it."""
        args = value.args
        if len(args) != 3 or not isinstance(args[0], gast.Name) or \
                not isinstance(args[1], gast.Tuple) or len(args[1].elts) != 2 or \
                to_source(args[2]) != "0" or self.context.reads.get(name, 0) not in (1, 2) or \
                not isinstance(args[1].elts[0], gast.Name):
            raise NotFused
        first = self.context.length(args[1].elts[0].id)
        if first is None:
            raise NotFused
        self._read(args[0].id, 0, check=True)
        self._bind(name).parts = (args[0].id, first)

    def _view(self, name, value):
        """``v = parts[k]``: a part of ``d`` of the space's length less a few elements,
        as ``(d, offset, fewer)``: ``v[j] = d[j + offset]``, ``fewer`` than ``n``."""
        d, (kind, k) = self.state.values[value.value.id].parts
        index = to_source(value.slice)
        if self.context.reads.get(name, 0) != 1:
            raise NotFused
        if index == "1" and kind == "small":
            view = (d, k, k)              # after the first k elements
        elif index == "0" and kind == "cut":
            view = (d, 0, k)              # all but the last k
        elif index == "0" and kind == "small":
            # the adjoint of a piece of k elements computed from arrays (x[:1] * 0 + 1):
            # d's first k elements, a value of those elements only (``_ranged``)
            span = (START, (k, False))
            element = self._read(d, 0)
            self._rebinding(name)
            bound = self._bind(name)
            bound.range = span
            return self._line(f"{bound.local} = {element} if {_test(*span)} else 0.0", True)
        else:
            raise NotFused
        self._bind(name).view = view

    def _add_into(self, target, part):
        """``rt.add_into(a[:-k], v)`` / ``rt.add_into(a[k:], v)`` of a view ``v``, or of
        any value into a view ``_written_view`` takes."""
        state = self.state
        if isinstance(target, gast.Subscript) and isinstance(target.value, gast.Name) and \
                self._pieced(target.value.id) and not (isinstance(part, gast.Name) and
                                                      part.id in state.values and
                                                      state.values[part.id].view):
            return self._piece(target, part, "+")
        if not (isinstance(target, gast.Subscript) and isinstance(target.value, gast.Name)
                and isinstance(part, gast.Name) and part.id in state.values and
                state.values[part.id].view):
            element = self.element(part)
            view = self._written_view(target)
            return self._line(f"{view}[i] += {element}", True)
        d, offset, fewer = state.values[part.id].view
        low, cut = _cut(target.slice)
        if low + cut != fewer:
            raise NotFused
        state.least = max(state.least, fewer)
        element = self._read(d, offset - low, check=True)
        test = f"i >= {low}" if low else f"i < n - {cut}"
        self._update(target.value.id, "+", element, True)
        line = self.state.body.pop()
        self.state.body += [f"if {test}:", f"    {line}"]
        parts = [n for n, v in state.values.items() if v.parts and v.parts[0] == d]
        for name in [part.id] + parts[:1]:
            del state.values[name]          # taken: nothing reads a part twice

    def element(self, node):
        """The source of ``node``'s element ``i`` (raises ``NotFused``)."""
        return to_source(self._tree(node))

    def _tree(self, node):
        """``node`` with each leaf an element read (a gast tree: its text keeps the
        operators' precedence)."""
        numbers = self.context.numbers
        if numbers.number(node):
            for name in sorted(_reads(node) - self.context.modules):
                if name in self.state.values:
                    raise NotFused
                self._numbers(name)
            return copy.deepcopy(node)
        if isinstance(node, gast.Name):
            return _text(self._read(node.id, 0))
        if _np_call(node, ("concatenate",)):
            return _text(self._concatenate(node))
        if _np_call(node, ("copy_value",), "rt") and len(node.args) == 1 and \
                isinstance(node.args[0], gast.Subscript):
            return _text(f"{self._written_view(node.args[0])}[i]")   # read before written
        if _np_call(node, ("unbroadcast",), "rt") and len(node.args) == 2 and \
                isinstance(node.args[1], gast.Name) and \
                node.args[1].id not in self.state.values:
            self._space_of(node.args[1].id)     # its length is the guard's: g as it is
            return self._tree(node.args[0])
        if (_np_call(node, FUNCTIONS) or _np_call(node, SPECIAL_FUNCTIONS, "special")) and \
                len(node.args) == 1:
            node = copy.copy(node)
            node.args = [self._tree(node.args[0])]
            return node
        if not operation(node):
            raise NotFused
        node = copy.copy(node)
        if isinstance(node, gast.BinOp):
            node.left = self._tree(node.left)
            if not isinstance(node.op, gast.Pow):
                node.right = self._tree(node.right)
        elif isinstance(node, gast.UnaryOp):
            node.operand = self._tree(node.operand)
        else:
            node.args = [self._tree(node.args[0])]
        return node

    def _concatenate(self, node):
        """``np.concatenate((p, a[:-k]))`` / ``((a[k:], p))`` (module doc)."""
        if len(node.args) != 1 or not isinstance(node.args[0], gast.Tuple) or \
                len(node.args[0].elts) != 2:
            raise NotFused
        first, second = (self._sliced(e) for e in node.args[0].elts)
        for part in (first, second):
            if isinstance(part, tuple):
                self.state.least = max(self.state.least, part[1] + part[2])
        small = self.context.small
        if isinstance(first, gast.Name) and first.id in small and isinstance(second, tuple):
            k = small[first.id]
            base, low, cut = second
            if low or cut != k:
                raise NotFused
            self._numbers(first.id)
            return f"({first.id}[i] if i < {k} else {self._read(base, -k)})"
        if isinstance(second, gast.Name) and second.id in small and isinstance(first, tuple):
            k = small[second.id]
            base, low, cut = first
            if cut or low != k:
                raise NotFused
            self._numbers(second.id)
            return f"({self._read(base, k)} if i < n - {k} else {second.id}[i - (n - {k})])"
        raise NotFused

    def _sliced(self, node):
        """``(base, low, cut)`` of ``base[low:]``/``base[:-cut]`` (or a name the run
        moved such a view into), else ``node``."""
        if isinstance(node, gast.Subscript) and isinstance(node.value, gast.Name):
            return (node.value.id, *_cut(node.slice))
        if isinstance(node, gast.Name) and node.id in self.state.slices:
            base, low, cut = self.state.slices[node.id]
            if base in self.state.values:
                raise NotFused        # bound again since: the view is of the array before
            return base, low, cut
        return node

    def _numbers(self, name):
        if name not in self.state.numbers:
            self.state.numbers.append(name)

    def _read(self, name, shift, check=False, ranged=False):
        """The element ``i + shift`` of ``name`` (a binding of the run: its local, or its
        array for a shifted read, which sets the loop's direction)."""
        state = self.state
        value = state.values.get(name)
        if value is not None:
            if value.view or value.parts or value.cover or \
                    value.range != (START, END) and not ranged:
                raise NotFused
            value.reads += 1
            if shift == 0:
                return value.local
            direction = 1 if shift < 0 else -1
            if state.direction not in (0, direction) or \
                    sum(v.identity == value.identity for v in state.values.values()) > 1:
                raise NotFused
            state.direction = direction
            value.shifted = True
            return self._carried(name, value, abs(shift))
        self._space_of(name)
        if shift:
            if set(state.written) - self.context.exclusive or name in state.written or \
                    name in state.read_after:
                raise NotFused      # the loop would read what it wrote
            state.shifted_outer.add(name)
            return f"{name}[i {'-' if shift < 0 else '+'} {abs(shift)}]"
        return f"{name}[i]"


    def _carried(self, name, value, k):
        """The local that holds ``name``'s element of ``k`` iterations ago (``t5_prev``,
        ``t5_prev2``; ``_next`` down): carried in a register from one iteration to the
        next instead of written to an array and read back (a store and a load in a chain
        from one iteration to the next, which also kept the loop from vectorising)."""
        state = self.state
        word = "prev" if state.direction > 0 else "next"
        while len(value.carries) < k:
            lag = len(value.carries) + 1
            carry = _fresh(f"{name}_{word}{lag if lag > 1 else ''}", state.taken |
                           set(state.outer) | set(state.numbers) | set(self.context.reads))
            state.taken.add(carry)
            value.carries.append(carry)
        return value.carries[k - 1]


def _cut(node):
    """``(low, cut)`` of a slice ``[low:]`` or ``[:-cut]`` with int literals."""
    if not isinstance(node, gast.Slice) or node.step is not None:
        raise NotFused
    low = _literal(node.lower) if node.lower is not None else 0
    cut = -_literal(node.upper) if node.upper is not None else 0
    if low < 0 or cut < 0 or (low and cut):
        raise NotFused
    return low, cut


def _bounds(node):
    """``(low, high)`` bounds (``START``/``END``) of an index ``[k]`` or a slice
    ``[lo:hi]`` of int literals."""
    if isinstance(node, gast.Slice):
        if node.step is not None:
            raise NotFused
        low = _literal(node.lower) if node.lower is not None else 0
        high = _literal(node.upper) if node.upper is not None else None
        return ((low, False) if low >= 0 else (-low, True),
                END if high is None else (high, False) if high >= 0 else (-high, True))
    k = _literal(node)
    return ((k, False), (k + 1, False)) if k >= 0 else \
        ((-k, True), (-k - 1, True))


def _shift(span, piece):
    """``k`` such that element ``j`` of a slice of the elements ``span`` is at
    ``i + k`` for ``i`` the piece's element ``j`` (NotFused where their lengths differ:
    numpy broadcasts or raises)."""
    if span == piece:
        return 0
    (a, a_end), (b, b_end) = span
    (c, c_end), (d, d_end) = piece
    if (a_end, b_end) != (c_end, d_end):
        raise NotFused
    if not a_end and b_end and a + b == c + d or not a_end and not b_end and b - a == d - c:
        return a - c
    if a_end and b_end and a - b == c - d:
        return c - a
    raise NotFused


def _least(low, high):
    """The fewest elements an array needs for numpy's piece ``[low, high)`` to be the
    loop's: every bound within it, in order."""
    if low[1] == high[1]:
        return max(low[0], high[0])
    return low[0] + high[0] if not low[1] else max(low[0], high[0])


def _test(low, high):
    """The loop's test of ``i`` for ``[low, high)`` ("" for every element)."""
    tests = []
    if low != START:
        tests.append(f"i >= n - {low[0]}" if low[1] else f"i >= {low[0]}")
    if high != END:
        tests.append(f"i < n - {high[0]}" if high[1] else f"i < {high[0]}")
    if len(tests) == 2 and not low[1] and not high[1] and high[0] == low[0] + 1:
        return f"i == {low[0]}"
    return " and ".join(tests)


def _literal(node):
    if isinstance(node, gast.UnaryOp) and isinstance(node.op, gast.USub):
        return -_literal(node.operand)
    if isinstance(node, gast.Constant) and type(node.value) is int:
        return node.value
    raise NotFused


def _text(source):
    return gast.Name(id=source, ctx=gast.Load(), annotation=None, type_comment=None)


def _fresh(name, taken):
    while name in taken:
        name += "_"
    return name


class _Pass:
    """A grown run's ``Pass``: its parameters, results and the arrays its loop writes."""

    def __init__(self, context, state):
        self.context, self.state = context, state

    def finished(self, statements, origins):
        state, context = self.state, self.context
        fused = Pass()
        fused.name = context.fresh(f"_{_base(statements)}_pass")
        inside = [s for s in statements if not isinstance(s, Comment)]
        reads_inside = {}
        for item in inside:
            for name in _reads(item) | _augmented(item):
                reads_inside[name] = reads_inside.get(name, 0) + sum(
                    1 for n in gast.walk(item) if isinstance(n, gast.Name) and n.id == name
                    and isinstance(n.ctx, gast.Load)) + (name in _augmented(item))
        tails = [(name, cut[4]) for name, cut in state.cuts.items()
                 if name in context.keep or
                 context.reads.get(name, 0) > reads_inside.get(name, 0)]
        viewed = {source.split("[", 1)[0] for _, source in tails}
        live = [name for name in state.values if self._live(name, reads_inside) or
                name in viewed]
        fused.tails = tails
        fused.outputs, fused.aliases, seen = [], [], {}
        for name in live:
            value = state.values[name]
            if value.identity in seen:
                fused.aliases.append((name, seen[value.identity]))
                continue
            seen[value.identity] = name
            fused.outputs.append(name)
        fused.arrays = list(state.outer)
        fused.written = list(state.written)
        fused.params = list(dict.fromkeys(fused.arrays + state.numbers))
        fused.body = list(state.body)
        out_arrays = {}
        for name in fused.outputs:
            value = state.values[name]
            array = value.array or (name if name not in fused.params else
                                    _fresh(f"{name}_new", state.taken |
                                           set(context.reads) | set(fused.params)))
            value.array = array
            state.taken.add(array)
            out_arrays[name] = array
        fused.stores = [(v.array, v.local) for v in state.values.values()
                        if v.array is not None]
        fused.temporaries = [v.array for v in state.values.values() if v.array is not None]
        fused.carries = [(v.carries, v.local) for v in state.values.values() if v.carries]
        stores = name_uses(inside)[1]
        rows = [n for n in fused.outputs if n not in context.keep and
                context.stores.get(n, 0) <= stores.get(n, 0) and   # not bound outside the run
                state.values[n].range == (START, END)]
        for name in fused.outputs:
            (low, _), (cut, _) = state.values[name].range
            if (low, cut) != (0, 0):
                fused.tails.append((name, f"{name}[{low}:{-cut if cut else ''}]"))
        if len(rows) >= 2 and not state.least and not set(state.outer) & context.pieced:
            fused.block = context.fresh(f"{rows[-1]}_rows")
            fused.rows = rows
        fused.results = ([fused.block] if fused.block else []) + \
            [out_arrays[n] for n in fused.outputs if n not in fused.rows]
        fused.row_arrays = [out_arrays[n] for n in fused.rows]
        fused.down, fused.shifted = state.direction < 0, state.direction != 0
        fused.least = state.least
        fused.statements, fused.origins = list(statements), list(origins)
        fused.count = len(inside)
        fused.where = list(dict.fromkeys(f"{o.filename.rsplit('/', 1)[-1]}:{o.lineno}"
                                         for o in origins))
        return fused

    def _live(self, name, reads_inside):
        """Whether the run's last binding of ``name`` is read after it: by the rest of
        the function, a later iteration, or the return."""
        value = self.state.values[name]
        if value.view or value.parts:
            return False
        return name in self.context.keep or name in self.state.outer or \
            self.context.reads.get(name, 0) > reads_inside.get(name, 0)


def _free(statements, modules):
    """The names ``statements`` read before they bind them, in first-read order."""
    bound, free = set(), []
    for item in statements:
        value = item.value if isinstance(item, (gast.Assign, gast.AugAssign, gast.Expr)) \
            else item
        names = [n.id for n in gast.walk(value) if isinstance(n, gast.Name) and
                 isinstance(n.ctx, gast.Load)] + sorted(_augmented(item))
        for name in names:
            if name not in bound and name not in free and name not in modules:
                free.append(name)
        for node in gast.walk(item):
            if isinstance(node, gast.Name) and isinstance(node.ctx, gast.Store):
                bound.add(node.id)
    return free


def _augmented(item):
    if isinstance(item, gast.AugAssign) and isinstance(item.target, gast.Name):
        return {item.target.id}
    return set()


def _base(statements):
    for item in reversed(statements):
        name = _assigned(item)
        if name is not None:
            return name
    return "array"
