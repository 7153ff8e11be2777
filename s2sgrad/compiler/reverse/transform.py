"""The reverse transform: the lowered IR -> forward statements + adjoint statements.

``reverse(lowered, wrt, seeds, names)`` takes the LoweredFunction, the Var
names to differentiate, the output Var names that get a sensitivity of ones
and the function's name allocator, and gives ``Sweeps``: the forward sweep
(the lowered statements, pushing on tapes what loops overwrite), the backward
sweep (adjoint statements under a ``grad of:`` comment per source line, in
reverse order, loops run backwards), the tapes, for each name in ``wrt`` the
name of its adjoint (None when no gradient reaches it), and the forward
variables the backward sweep assigns again.  Comments carry the user's line
they stand for, so the layout can map every generated line to it.

Each active op's adjoint is its rule template with operands substituted:
``d[x] = e`` becomes ``dx = e`` for the first contribution and
``dx = dx + e`` after it; a template temporary is named from what it holds; a
contribution to an inactive operand is dropped with everything only it used.
A custom rule's backward was lowered with its call (``ir.CustomBackward``): it is
spliced in as it is, its placeholders renamed to the adjoints of the results.
"""
import copy

import gast
import numpy as np

from ... import primitives as prims
from ..analysis.activity import active_names
from ..analysis.complex_values import check_real_values
from ..analysis.typeinfo import basic_index
from ..front.literals import Captured, atom_node
from ..ir import Const, If, ListAppend, Loop, Op, Seq, SetItem, Var, walk_statements
from ..syntax.nodes import Comment, assign, assign_targets, call, name_node, renamed
from ..syntax.source import location_comment
from .adjoints import Adjoints
from .ownership import drop_moved_copies
from .tape import (Tape, assigned_targets, carried_copies, contributed, level_assigned, level_ops,
                   loop_results, nested_carried, pop, push, recomputable, reserve, restores,
                   reversed_range, short_range, trip_count, use_counts, value_reads,
                   without_dead_ops)
from .tape_types import tape_dtypes
from .templates import getitem_adjoint, index_expression, instantiate, missing_rule
from .witnesses import shape_witnesses


class Sweeps:
    """The two sweeps of a generated function, as statement lists (gast nodes, Comments).

    ``stacks``: the tapes (``Tape``) to create before the forward sweep;
    ``grads``: for each differentiated name, its adjoint's name (None: no gradient);
    ``restored``: the forward variables the adjoint sweep gives other values again
    (taken back from tapes, recomputed, restored in place after an in-place update):
    what the forward sweep left in them is gone once the adjoint sweep has run.
    """

    def __init__(self, forward, backward, stacks, grads, active, restored=frozenset()):
        self.restored = restored
        self.forward = forward
        self.backward = backward
        self.stacks = stacks
        self.grads = grads
        self.active = active


def reverse(lowered, wrt, seeds, names, seed_values=None):
    """Both sweeps of ``lowered``: see the module doc and ``_Reverser``.

    ``seed_values`` (optional): per name in ``seeds``, the node its adjoint starts from
    (a cotangent parameter) instead of ``rt.ones_like(name)``; a name listed twice gets
    the sum of its values."""
    check_real_values(lowered, wrt, seeds)   # no gradient through complex values
    active = active_names(lowered, wrt, seeds)
    ndims = lowered.ndims
    state = names.snapshot()
    rev, backward = _backward(lowered, wrt, seeds, active, names, ndims, frozenset(),
                              seed_values)
    unneeded = rev.unneeded_restores(backward)
    if unneeded:   # build again without saving what no adjoint reads
        names.restore(state)
        rev, backward = _backward(lowered, wrt, seeds, active, names, ndims, unneeded,
                                  seed_values)
    body = without_dead_ops(lowered.body, backward, lowered.output)
    forward = rev.forward(body, None)
    grads = [rev.adj.of.get(w) if w in rev.adj.defined else None for w in wrt]
    return Sweeps(forward, backward, rev.stacks, grads, active, rev.restored())


def _backward(lowered, wrt, seeds, active, names, ndims, skip_restores, seed_values=None):
    single_use, rebound = use_counts(lowered)
    rev = _Reverser(active, names, ndims, skip_restores, lowered.int_vars,
                    lowered.mutated, lowered.lists,
                    single_use - set(wrt), rebound, lowered.shapes, lowered.tuples)
    rev.tape_types = tape_dtypes(lowered)
    rev.dtypes = lowered.dtypes
    rev.shared_at_write = lowered.shared_at_write
    rev.tape_types.update({s.counter: np.dtype(np.int64) for s in walk_statements(lowered.body)
                           if isinstance(s, Loop)})
    rev.assigned_before = frozenset(lowered.params) | {f.name for f in lowered.free}
    rev.captured = Captured(lowered.free, names)
    backward = []
    for k, s in enumerate(seeds):
        if s in active:
            seed = (copy.deepcopy(seed_values[k]) if seed_values is not None
                    else call("rt", "ones_like", [name_node(s)]))
            rev.adj.accumulate(s, seed, backward)
    if backward:
        backward.insert(0, Comment("sensitivity of the output"))
    backward.extend(rev.block(lowered.body, None))
    drop_moved_copies(backward, rev.adj.move_copies)
    return rev, backward


class _Reverser:
    """Builds the adjoint sweep statement by statement, in reverse, and then the forward
    sweep with the tape pushes the adjoint sweep needs.

    Values that loops overwrite are kept on per-variable stacks: a loop's
    body is in SSA form within one iteration, so the adjoint of an iteration
    only needs each of its variables as that iteration left it.  The forward
    sweep pushes, right after its assignment, every variable of the body that
    the body's adjoint reads (a loop-carried variable: its value on entry_tapes
    the iteration; a nested loop's variables: their values when it ends); the
    adjoint loop pops them all at the start of each reversed iteration.
    """

    def __init__(self, active, names, ndims, skip_restores, int_vars=frozenset(),
                 mutated=frozenset(), lists=frozenset(), single_use=frozenset(),
                 rebound=frozenset(), shapes=None, tuples=frozenset()):
        self.active = active
        self.tuples = tuples      # the tuple results among ``lists`` (see _list_item_adjoint)
        self.shapes = shapes      # symbolic shapes (compiler/analysis/shapes.py), where known
        self.dtypes = {}          # the float dtypes known while building (lowered.dtypes)
        self.mutated = mutated
        self.int_vars = int_vars
        self.names = names
        self.ndims = ndims
        self.skip_restores = skip_restores   # arrays whose in-place updates need no undo
        self.restores = {}        # id(restore statement) -> array name
        self.captured = None      # constants passed in as arguments (literals.Captured)
        #: id(statement of a reversed loop) -> the forward variables it assigns again
        self.reassigns = {}
        #: loop variables whose adjoint came from after the loop
        self.adjoints_from_after_loop = frozenset()
        #: variables surely assigned before the statement at hand
        self.assigned_before = frozenset()
        self.adj = Adjoints(names, lists, single_use, rebound)
        self.stacks = []          # the tapes (Tape) to create at the top of the function
        self.tape_types = {}      # Var name -> dtype of a scalar that can go on an array
        self.taped = {}           # id(Loop) -> {variable: stack name}
        #: id(Loop) -> {carried variable: the tape of its value entering each iteration}
        self.entry_tapes = {}
        self.saves = {}           # id(SetItem) -> (stack or variable name, in_loop)
        #: array -> the variables that shared its memory when it was updated in place
        self.shared_at_write = {}

    # ------------------------------------------------------------ adjoint sweep

    def block(self, statements, loop):
        out = []
        last = None
        outer = self.assigned_before
        before = [set()]          # names the statements before each one surely assign
        for stmt in statements:
            before.append(before[-1] | (set(stmt.targets) if isinstance(stmt, Op) else set()))
        for k in range(len(statements) - 1, -1, -1):
            stmt = statements[k]
            self.assigned_before = outer | before[k]
            if isinstance(stmt, Op):
                items = self.op(stmt, loop)
            elif isinstance(stmt, SetItem):
                items = self.setitem(stmt, loop)
            elif isinstance(stmt, ListAppend):
                items = self.list_append(stmt)
            elif isinstance(stmt, If):
                items = self.branch(stmt, loop)
            else:
                items = self.loop(stmt, loop)
            if not items:
                continue
            if stmt.origin != last or isinstance(stmt, (If, Loop)):
                out.append(Comment("grad of: " + location_comment(stmt.origin)[2:], stmt.origin))
                last = stmt.origin if isinstance(stmt, (Op, SetItem, ListAppend)) else None
            out.extend(items)
        self.assigned_before = outer
        return out

    def op(self, op, loop):
        if not any(t in self.active and t in self.adj.defined for t in op.targets):
            return []
        out = []
        if op.custom is not None:
            self._custom_adjoint(op.custom, out)
        elif op.primitive == prims.GETITEM and op.list_base:
            self._list_item_adjoint(op, out)
        elif op.primitive == prims.GETITEM and isinstance(op.args[0], Var):
            getitem_adjoint(op, self.adj, self.active, out, self.ndims)
        else:
            if op.rule is None:
                raise missing_rule(op)
            if not op.rule.differentiable:
                return []  # carries no gradient (comparisons, shapes, a custom rule's forward)
            instantiate(op, self.adj, self.active, self.names, out, self.ndims,
                        self.shapes, self.captured)
        if loop is not None and op.targets[0] in loop.carried:
            # the end of an iteration overwrote a loop-carried variable: its adjoint
            # restarts, from the reversed iteration's first contribution (no zeroed
            # buffer to add it to; see _rezero_carried for an iteration that makes none)
            self.adj.restart(op.targets[0])
        elif op.targets[0] in self.adjoints_from_after_loop:
            # a loop variable read after the loop: only its last iteration had that gradient
            self.adj.zero(op.targets[0], out)
        return out

    def _custom_adjoint(self, custom, out):
        """A custom rule's lowered backward (``CustomBackward``), its placeholders renamed to
        the adjoints of the call's results, and the gradients it gives added to the
        adjoints of the inputs and Parameters."""
        adj = self.adj
        renames = {}
        for placeholder, var in custom.incoming.items():
            if var not in adj.defined:     # a result no gradient reached: its zeros
                adj.accumulate(var, call("rt", "zeros_like", [name_node(var)]), out)
            renames[placeholder] = adj.name(var)
        for bop in custom.body:
            out.append(assign_targets(bop.targets, renamed(bop.expr, renames)))
        grads = list(zip(custom.inputs, custom.input_grads)) + [
            (Var(name), g) for name, g in custom.param_grads]
        for atom, g in grads:
            if isinstance(atom, Var) and atom.name in self.active and not (
                    isinstance(g, Const) and g.value is None):
                adj.accumulate(atom.name, renamed(atom_node(g), renames), out)

    def _list_item_adjoint(self, op, out):
        """``dxs[i] = dxs[i] + d(xs[i])``: the adjoint of a list is a list of adjoints; of a
        slice ``xs[a:b]`` (a list too): ``dxs[a:b] = rt.add_lists(dxs[a:b], d(xs[a:b]))``,
        item by item into the sliced positions (``+`` would concatenate).  Of a
        tuple result, read at a constant index: ``dt = rt.item_added(dt, 0, dw)`` (Numba
        gives eigh, qr, svd... tuples, whose items differ in type: a tuple adjoint cannot
        be assigned into, so it is rebuilt; a list is updated in place)."""
        base = op.args[0].name
        if base not in self.active:
            return
        dbase = self.adj.name(base)
        if base not in self.adj.defined:
            out.append(assign(dbase, call("rt", "zeros_list", [name_node(base)])))
            self.adj.defined.add(base)
        elif base not in self.adj.owned:
            out.append(assign(dbase, call("rt", "copy_list", [name_node(dbase)])))
        self.adj.owned.add(base)
        index = op.args[1]
        if base in self.tuples and isinstance(index, Const) and type(index.value) is int:
            out.append(assign(dbase, call("rt", "item_added", [
                name_node(dbase), gast.Constant(value=index.value, kind=None),
                name_node(self.adj.name(op.targets[0]))])))
            return
        item = gast.Subscript(value=name_node(dbase), slice=copy.deepcopy(op.expr.slice),
                              ctx=gast.Load())
        target = copy.deepcopy(item)
        target.ctx = gast.Store()
        g = name_node(self.adj.name(op.targets[0]))
        if op.targets[0] in self.adj.lists:   # a slice: its adjoint list, added item by item
            out.append(assign(target, call("rt", "add_lists", [item, g])))
        else:
            out.append(assign(target, gast.BinOp(left=item, op=gast.Add(), right=g)))

    def list_append(self, stmt):
        """The adjoint of ``xs.append(v)``: the last adjoint of the list is v's; the list
        itself shrinks back (when an adjoint reads it)."""
        out = []
        xs = stmt.target
        if xs in self.active and xs in self.adj.defined:
            dxs = self.adj.name(xs)
            if xs not in self.adj.owned:
                out.append(assign(dxs, call("rt", "copy_list", [name_node(dxs)])))
                self.adj.owned.add(xs)
            popped = gast.Call(func=gast.Attribute(value=name_node(dxs), attr="pop", ctx=gast.Load()),
                               args=[], keywords=[])
            value = stmt.value
            if isinstance(value, Var) and value.name in self.active:
                self.adj.accumulate(value.name, popped, out)
            else:
                out.append(gast.Expr(value=popped))
        if xs not in self.skip_restores:
            restore = gast.Expr(value=gast.Call(func=gast.Attribute(
                value=name_node(xs), attr="pop", ctx=gast.Load()), args=[], keywords=[]))
            self.restores[id(restore)] = xs
            out.append(restore)
        return out

    def setitem(self, stmt, loop):
        out = []
        x = stmt.target
        dx_index = gast.Subscript(value=name_node(self.adj.name(x)),
                                  slice=copy.deepcopy(stmt.index_node), ctx=gast.Load())
        if x in self.active and x in self.adj.defined:
            if x not in self.adj.owned:
                self.adj.own(x, out)
            value = stmt.value
            if isinstance(value, Var) and value.name in self.active:
                if self._scalar_element(stmt) and self.ndims.get(value.name) == 0:
                    contribution = dx_index
                elif not basic_index(stmt.index, self.int_vars):
                    # an index array may name a position twice: the last write wins
                    contribution = call("rt", "unbroadcast", [
                        call("rt", "written_adjoint", [name_node(self.adj.name(x)),
                                                        index_expression(copy.deepcopy(
                                                            stmt.index_node))]),
                        name_node(value.name)])
                else:   # a copy: the slice of dx is zeroed next
                    contribution = call("rt", "copy_value", [dx_index])
                    if not self._fills_region(stmt, value.name):   # v was broadcast
                        contribution = call("rt", "unbroadcast", [contribution,
                                                                   name_node(value.name)])
                self.adj.accumulate(value.name, contribution, out)
            target = copy.deepcopy(dx_index)
            target.ctx = gast.Store()
            out.append(assign(target, gast.Constant(value=0, kind=None)))
        if x in self.skip_restores:
            return out
        saved = self.names.fresh(x + ("_saved" if loop is not None else "_old"))
        self.saves[id(stmt)] = (saved, loop is not None)
        where = gast.Subscript(value=name_node(x), slice=copy.deepcopy(stmt.index_node),
                               ctx=gast.Store())
        if loop is not None:
            dtype = self._dtype_source(self.tape_types.get(x)) if self._scalar_element(stmt) \
                else None
            tape = self._new_tape(saved, loop, dtype)
            self.saves[id(stmt)] = (tape, True)
            restore = pop(tape, where)
        else:
            restore = [assign(where, name_node(saved))]
        for item in restore:
            self.restores[id(item)] = x
        out.extend(restore)
        return out

    def _fills_region(self, stmt, value):
        """True when ``value`` provably has the shape of the region ``stmt`` writes
        (``un[1:-1] = t`` with ``t`` of ``un[1:-1]``'s shape): nothing was broadcast."""
        if self.shapes is None:
            return False
        region = self.shapes.indexed(self.shapes.of.get(stmt.target), stmt.index,
                                     self.int_vars)
        shape = () if self.ndims.get(value) == 0 else self.shapes.of.get(value)
        return self.shapes.same(region, shape)

    def _scalar_element(self, stmt):
        """True when ``stmt`` writes one element: as many integer indices as the rank."""
        index = stmt.index
        items = index.items if isinstance(index, Seq) and index.kind == "index" else (index,)
        ints = all((isinstance(i, Const) and isinstance(i.value, int)
                    and not isinstance(i.value, bool)) or
                   (isinstance(i, Var) and i.name in self.int_vars) for i in items)
        return ints and self.ndims.get(stmt.target) == len(items)

    def unneeded_restores(self, backward):
        """Arrays updated in place whose values no adjoint statement reads: their updates
        need not be undone (nor their old values saved)."""
        read = set()

        def visit(items):
            for item in items:
                if isinstance(item, Comment) or id(item) in self.restores:
                    continue
                if isinstance(item, (gast.If, gast.For, gast.While)):
                    read.update(n.id for n in gast.walk(item.test if isinstance(item, (gast.If, gast.While)) else item.iter)
                                if isinstance(n, gast.Name))
                    visit(item.body)
                    visit(item.orelse)
                else:
                    read.update(value_reads(item))
        visit(backward)
        # a view of the array (or the same array under another name) read by an adjoint
        # needs the array's updates undone too
        return frozenset(x for x in self.restores.values()
                         if x not in read and not self.shared_at_write.get(x, set()) & read)

    def restored(self):
        """The forward variables the adjoint sweep assigns again or restores in place (see
        ``Sweeps.restored``).  ``restores`` and ``reassigns`` hold exactly the statements
        of the sweep built last: a block built again first restores them (``_restore``)."""
        return frozenset(self.restores.values()).union(*self.reassigns.values())

    def branch(self, stmt, loop):
        out = []
        inside = set(assigned_targets(stmt.body) + assigned_targets(stmt.orelse))
        for v in contributed([stmt], self.active):
            if v not in inside and v not in self.adj.defined:
                self.adj.zero(v, out, v in self.assigned_before)
        defined, owned = set(self.adj.defined), set(self.adj.owned)
        self.adj.fresh.clear()    # fresh adjoints hold within straight-line code only
        body = self.block(stmt.body, loop)
        owned_body = set(self.adj.owned)
        self.adj.defined, self.adj.owned = set(defined), set(owned)
        self.adj.fresh.clear()
        orelse = self.block(stmt.orelse, loop)
        self.adj.fresh.clear()
        self.adj.defined = defined
        # owned after the branch: owned at the end of both paths (a copy made in both
        # counts, so that a loop can hoist it), among the adjoints defined before it
        self.adj.owned = owned_body & self.adj.owned & defined
        if not any(not isinstance(s, Comment) for s in body + orelse):
            return out
        out.append(gast.If(test=atom_node(stmt.test), body=body or [gast.Pass()],
                           orelse=orelse))
        return out

    def loop(self, stmt, parent):
        out = []
        inside = set(assigned_targets(stmt.body)) | set(assigned_targets(stmt.test_ops))
        for v in contributed([stmt], self.active):
            if (v not in inside or v in stmt.carried) and v not in self.adj.defined:
                self.adj.zero(v, out, v in self.assigned_before)
            elif v in self.adj.lists and v in self.adj.defined and v not in self.adj.owned:
                # popped and updated inside the loop: a list of our own, once
                out.append(assign(self.adj.name(v), call("rt", "copy_list",
                                                           [name_node(self.adj.name(v))])))
                self.adj.owned.add(v)
        defined, owned = set(self.adj.defined), set(self.adj.owned)
        self.adj.fresh.clear()    # fresh adjoints hold within straight-line code only
        body, owned = self._loop_body(stmt, inside, defined, owned, out)
        self.adj.fresh.clear()
        self.adj.defined = defined
        self.adj.owned = owned & self.adj.owned
        if not any(not isinstance(s, Comment) for s in body):
            return out
        # names whose shape never changes: a shape-only read of one needs no tape
        scalars = {v for v, n in self.ndims.items() if n == 0} | set(self.int_vars) | \
            _constant_shapes(self.shapes)
        shape_witnesses(body, inside, self.shapes, self.dtypes)
        referenced = set()
        for item in body:
            if not isinstance(item, Comment):
                referenced |= value_reads(item, scalars)
        recomputed = recomputable(stmt, self.int_vars, self.ndims, self.mutated, referenced)
        referenced |= {v for op in level_ops(stmt.body) if set(op.targets) & recomputed
                       for v in op.operand_vars()}
        shifted = {v: h for h, v in carried_copies(stmt).items()
                   if h in referenced and v in referenced and v not in recomputed}
        entry_tapes = {h: self._stack(h, stmt) for h in stmt.carried if h in referenced}
        taped = {v: self._stack(v, stmt) for v in level_assigned(stmt.body)
                 if v in referenced and v not in stmt.carried and v not in recomputed
                 and v not in shifted}
        self.entry_tapes[id(stmt)] = entry_tapes
        self.taped[id(stmt)] = taped
        # what the iteration left in h_1 is what the next one started h with (h = h_1)
        prologue = [assign(v, name_node(h)) for v, h in shifted.items()]
        for h, tape in entry_tapes.items():
            prologue.extend(pop(tape, h))
        prologue.extend(restores(stmt.body, taped, recomputed))
        for item in prologue:
            self.reassigns[id(item)] = {n.id for n in gast.walk(item) if isinstance(n, gast.Name)
                                        and isinstance(n.ctx, gast.Store)}
        if stmt.kind == "range" and stmt.target in referenced:
            # the range's values again, last first: nothing to tape
            target, bounds = stmt.target, reversed_range(stmt.bounds, stmt.counter)
        else:
            target, bounds = self.names.fresh("_"), [name_node(stmt.counter)]
        reversed_loop = gast.For(target=name_node(target, gast.Store()),
                                 iter=gast.Call(func=name_node("range"), args=bounds,
                                                keywords=[]),
                                 body=prologue + body, orelse=[], type_comment=None)
        self.reassigns[id(reversed_loop)] = {target}
        out.append(reversed_loop)
        return out

    def _loop_body(self, stmt, inside, defined, owned, out):
        """The reversed body of loop ``stmt``, and the adjoints owned when it starts.

        An adjoint that the body copies to update it in place (``dx = np.copy(dx)``),
        that was defined before the loop and is still owned when the body ends, is
        copied once before the loop instead of in every iteration: the body is built
        again with that adjoint owned from its start.  (An element-wise update of an
        adjoint array in a loop would otherwise copy the whole array per element.)"""
        saved_exports = self.adjoints_from_after_loop
        self.adjoints_from_after_loop = saved_exports | {v for v in inside if v in defined
                                        and v not in stmt.carried}
        state = self._state()
        copied_before = self.adj.copied
        self.adj.copied = set()
        body = self.block(stmt.body, stmt)
        self._rezero_carried(stmt, defined, body)
        # (a copy on one path of a branch counts: the body built again decides)
        hoist = sorted(v for v in self.adj.copied if v in defined and v not in owned)
        if hoist:
            first_try = self._state()
            self._restore(state)
            self.adj.owned = owned | set(hoist)
            self.adj.copied = set()
            hoisted = self.block(stmt.body, stmt)
            self._rezero_carried(stmt, defined, hoisted)
            if set(hoist) <= self.adj.owned:
                for v in hoist:
                    self.adj.own(v, out)
                owned = owned | set(hoist)
                body = hoisted
            else:   # ownership does not survive an iteration: keep the copy in the body
                self._restore(first_try)
        self.adj.copied = copied_before | self.adj.copied   # for a loop around this one
        self.adjoints_from_after_loop = saved_exports
        return body, owned

    def _rezero_carried(self, stmt, defined, body):
        """A loop-carried variable's adjoint that the reversed iteration gave no
        contribution (on the paths that reach its end) starts the next one at zero."""
        for h in stmt.carried:
            if h in defined and h not in self.adj.defined:
                self.adj.zero(h, body)

    def _state(self):
        """What building adjoint statements changes, to build a block a second time."""
        adj = self.adj
        return (self.names.snapshot(), list(self.stacks), dict(self.saves), dict(self.restores),
                dict(self.reassigns),
                dict(self.taped), dict(self.entry_tapes), dict(adj.of), set(adj.defined),
                set(adj.owned), set(adj.plain_zero), set(adj.copied), dict(adj.moved))

    def _restore(self, state):
        (names, stacks, saves, restores, reassigns, taped, entry_tapes, of, defined, owned,
         plain_zero, copied, moved) = state
        self.names.restore(names)
        self.stacks[:] = stacks
        self.saves, self.restores = dict(saves), dict(restores)
        self.reassigns = dict(reassigns)
        self.taped, self.entry_tapes = dict(taped), dict(entry_tapes)
        adj = self.adj
        adj.of, adj.defined, adj.owned = dict(of), set(defined), set(owned)
        adj.fresh.clear()
        adj.plain_zero, adj.copied, adj.moved = set(plain_zero), set(copied), dict(moved)

    def _stack(self, var, loop):
        """A new tape for ``var``'s values in ``loop``: an array for scalars of a known
        type in a range loop, else a list."""
        dtype = None
        known = self.tape_types.get(var)
        if var in self.int_vars or self.ndims.get(var) == 0 or (
                known is not None and known.kind in "bi"):   # a flag, a loop's counter
            dtype = self._dtype_source(known)
        if loop.kind != "range":
            dtype = None
        return self._new_tape(var + ("_tape" if dtype else "_stack"), loop, dtype)

    @staticmethod
    def _dtype_source(dtype):
        if dtype is None:
            return None
        return "np.bool_" if dtype.kind == "b" else f"np.{np.dtype(dtype).name}"

    def _new_tape(self, base, loop, dtype):
        if loop.kind != "range":
            dtype = None
        tape = Tape(self.names.fresh(base), dtype,
                    self.names.fresh(base + "_top") if dtype else None, loop)
        self.stacks.append(tape)
        return tape

    # ------------------------------------------------------------ forward sweep

    def forward(self, statements, loop):
        out = []
        last = None
        taped = self.taped.get(id(loop), {}) if loop is not None else {}
        nested = nested_carried(statements)
        for k, stmt in enumerate(statements):
            if isinstance(stmt, (Op, SetItem, ListAppend)) and stmt.origin != last:
                out.append(Comment(location_comment(stmt.origin)[2:], stmt.origin))
                last = stmt.origin
            if isinstance(stmt, Op):
                if stmt.expr is None:
                    continue  # the link of a custom rule: nothing to run
                out.append(assign_targets(stmt.targets, stmt.expr))
                for t, tape in taped.items():
                    if t in stmt.targets and t not in nested:
                        out.extend(push(tape, t))
            elif isinstance(stmt, SetItem):
                out.extend(self._forward_setitem(stmt))
            elif isinstance(stmt, ListAppend):
                out.append(gast.Expr(value=gast.Call(
                    func=gast.Attribute(value=name_node(stmt.target), attr="append", ctx=gast.Load()),
                    args=[atom_node(stmt.value)], keywords=[])))
            elif isinstance(stmt, If):
                last = None
                out.append(gast.If(test=atom_node(stmt.test),
                                   body=self.forward(stmt.body, loop) or [gast.Pass()],
                                   orelse=self.forward(stmt.orelse, loop)))
            else:
                last = None
                out.extend(self._forward_loop(stmt))
                for v in loop_results(stmt, statements[k + 1:]):
                    if v in taped:
                        out.extend(push(taped[v], v))
        return out

    def _forward_setitem(self, stmt):
        out = []
        saved, in_loop = self.saves.get(id(stmt), (None, False))
        if saved is not None:
            current = gast.Subscript(value=name_node(stmt.target),
                                     slice=copy.deepcopy(stmt.index_node), ctx=gast.Load())
            value = call("rt", "copy_value", [current])
            out.extend(push(saved, value) if in_loop else [assign(saved, value)])
        target = gast.Subscript(value=name_node(stmt.target), slice=copy.deepcopy(stmt.index_node),
                                ctx=gast.Store())
        out.append(assign(target, atom_node(stmt.value)))
        return out

    def _forward_loop(self, stmt):
        out = [Comment(location_comment(stmt.origin)[2:], stmt.origin),
               assign(stmt.counter, gast.Constant(value=0, kind=None))]
        body = [gast.AugAssign(target=name_node(stmt.counter, gast.Store()), op=gast.Add(),
                               value=gast.Constant(value=1, kind=None))]
        for h, tape in self.entry_tapes.get(id(stmt), {}).items():
            body.extend(push(tape, h))
        body += self.forward(stmt.body, stmt)
        if stmt.break_flag is not None:
            body.append(gast.If(test=atom_node(stmt.break_flag), body=[gast.Break()],
                                orelse=[]))
        if stmt.kind == "range":
            out.extend(reserve(tape, trip_count(stmt.bounds)) for tape in self.stacks
                       if tape.loop is stmt and tape.dtype is not None)
            out.append(gast.For(target=name_node(stmt.target, gast.Store()),
                                iter=gast.Call(func=name_node("range"),
                                               args=[atom_node(b) for b in
                                                     short_range(stmt.bounds)], keywords=[]),
                                body=body, orelse=[], type_comment=None))
        else:
            check = self.forward(stmt.test_ops, None) + [gast.If(
                test=gast.UnaryOp(op=gast.Not(), operand=atom_node(stmt.test)),
                body=[gast.Break()], orelse=[])]
            out.append(gast.While(test=gast.Constant(value=True, kind=None),
                                  body=[s for s in check if not isinstance(s, Comment)] + body,
                                  orelse=[]))
        return out


def _constant_shapes(shapes):
    """The names ``shapes`` (a ShapeTable or None) knows to have a shape of ints only
    (``np.ones(1)``)."""
    if shapes is None:
        return set()
    return {v for v, shape in shapes.of.items()
            if all(type(shapes.find(d)) is int for d in shape)}
