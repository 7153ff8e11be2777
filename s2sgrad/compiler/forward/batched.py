"""The batched forward-mode transform: every tangent carries a batch of directions first.

``BatchedTangents`` builds the statements ``transform.tangent_sweep`` writes (its
``make``), for tangents shaped ``(width,) + value.shape``: row ``k`` of ``x_dot`` is
``x``'s tangent along direction ``k``, so one sweep gives ``width`` columns of a
Jacobian (JAX's ``vmap`` of ``jvp``).  ``width`` is the name the generated code gives
the number of directions of the sweep.  The primal statements are the per-direction
sweep's; each tangent is written so that it holds for any number of leading directions:

- elementwise rules (operators, ufuncs, ``np.where``, ``np.clip``): the rule's terms as
  they are (a value broadcasts against a tangent's trailing axes), with a tangent of
  lower rank than the result given unit axes after the directions (``a_dot[:, None]``)
  and ``rt.broadcast_like`` written ``rt.broadcast_batch``;
- indexing and ``x[i] = v``: the index after a ``:`` for the directions
  (``x_dot[:, i]``; integer arrays next to each other too, ``x_dot[:, rows, idx]`` with
  ``rows`` an ``np.arange``: vmap's mapped index); a list of tangents is indexed as it is;
- ``@`` / ``np.matmul`` / ``np.dot`` (ranks 1 and 2, and stacks on the left): numpy's
  stacking batches ``a_dot @ b`` and ``a @ b_dot``, a batched vector on the right is
  ``b_dot @ a.T``, a matrix times a batch of matrices is ``rt.matmul_batch(a, b_dot)``
  (one BLAS product laid out for long elementwise passes after it) and a batch of
  matrices times a matrix ``rt.batch_matmul(a_dot, b)`` (keeping such a layout), both
  at once ``rt.matmul_both(a_dot, b, a, b_dot)`` (one call, the sum made in place);
- sums and means (the axis shifted past the directions), reshapes, ravels and squeezes
  (``np.reshape(x_dot, (width,) + np.shape(x))``), transposes, ``np.stack`` and
  ``np.concatenate`` (the axis shifted), ``np.array`` of a nested list of numbers
  (``rt.array_batch``), copies and negations (the call itself);
- zeros of an active value: ``rt.zeros_batch(x, width)``;
- the adjoint helpers a generated gradient calls (a Hessian's sweep differentiates
  one): ``rt.unbroadcast``, ``rt.unreduce`` and ``rt.reshape_like`` of an adjoint's
  batch as ``rt.unbroadcast_batch``... (``runtime/batched.py``), ``rt.cast_like`` and
  ``rt.copy_value`` as they are, ``rt.transpose_adjoint`` as a transpose past the
  directions, ``rt.extremum_adjoint`` (and the forward ``rt.amax``/``rt.amin``) through
  ``rt.extremum_mask``, ``rt.matmul_left``/``rt.matmul_right`` of matrices as a term per
  operand with a batch (``_HELPER_RULES``), seeds, masks and counts (``rt.ones_like``...)
  with no tangent; each result has the rank of the value it is shaped like;
- ``np.cumsum``, ``np.sort`` and the builtin ``sum``, and the adjoints of cumsum, sort,
  the builtin sum and ``list.append`` (``rt.reverse_cumsum``, ``rt.sort_adjoint``,
  ``rt.spread_sum``, ``rt.add_lists``, a list's ``pop``) by batched spellings
  (``runtime/batched.py``); any other adjoint helper linear in its cotangent ``g``
  alone (``jvp_linear_in``, ``rt.*_adjoint``) where only ``g`` has a tangent, as
  ``rt.per_direction``: the call once per direction, stacked (exact by linearity; run
  only under ``S2SGRAD_BACKEND=python``: ``api/forward.BatchedChoice``);
- ranks learnt from the code: a reshape to a tuple of sizes made at run time
  (``x.shape[:1] + (-1,)``: the lengths of shapes, their slices and sums are followed),
  and in a pullback the ranks of locals seen in a traced run (``seen_ranks``: names
  assigned under an ``if`` left out).

Loops run as they are, each tangent carrying the directions through them: a
loop-carried value must keep one rank (else refused where it is assigned), an ``np.array``
of a nested list of scalars gets its tangent written item by item (a batch of zeros,
``x_dot[:, i, j] = c_dot``; Numba compiles that, and numpy runs it faster than stacking
rows), an empty list's tangent is an empty list (one the loop reads before it appends
to it is built under a hypothesis on its items' rank: ``item_ranks.py``), a name the
branches of an ``if`` give values of two ranks is refused.  ``own_loops`` says whether
code loops for the caller's choice, a ``jacrev``'s loop over its rows aside.  A loop of scalar work
(under a quarter of its active operations compute arrays: ``scalar_loop``) is refused:
numpy's per-call cost on a batch of numbers outweighs the per-direction sweeps Numba
compiles.  Which of
the batched and the per-direction code runs a call (by backend and argument sizes) is
``api/forward.py``'s ``JacfwdFunction``'s choice.  Any other operation (a
rule written for one direction: a reduction template, a linear
algebra helper, a custom rule, an index whose array parts could move the directions'
axis, a value of unknown rank) raises ``NotBatchable`` naming it, and the caller writes
the per-direction sweep instead: never a wrong column.
"""
import copy
import inspect
import operator

import gast
import numpy as np

from ... import primitives as prims
from ... import runtime as rt
from ...rules.jvp_registry import is_elementwise, jvp_lookup
from ...rules.registry import display_name
from ..front.literals import atom_node
from ..ir import Const, If, Loop, Op, Seq, Var, walk_ops, walk_statements
from ..syntax.nodes import assign, name_node
from ..syntax.source import to_source
from .item_ranks import build_loop
from .transform import Tangents, is_broadcast_like, sum_terms

#: registered elementwise templates (derived rules of ufuncs are elementwise by their
#: primitive: ``is_elementwise``)
_ELEMENTWISE_TEMPLATES = (np.clip, np.where, rt.where)
#: elementwise operations without a derivative, whose results' ranks later rules read
_LOGIC = (operator.gt, operator.ge, operator.lt, operator.le, operator.eq, operator.ne,
          operator.and_, operator.or_, operator.xor, operator.invert)
#: linear primitives of one operand whose call on a batch of tangents is the batch of calls
_PER_ELEMENT = (operator.neg, np.negative, operator.pos, np.positive, np.copy,
                np.ascontiguousarray, np.real, prims.ASTYPE)
_RESHAPES = (np.reshape, np.ravel, np.squeeze, np.expand_dims, np.atleast_1d,
             prims.method("ravel"), prims.method("flatten"), prims.method("reshape"))
_MATMUL = (operator.matmul, np.matmul, np.dot)
#: operations that only name or gather values (not counted as a loop's work)
_SYNTAX = (prims.ASSIGN, prims.LIST, prims.GETITEM)
#: the options a batched linear rule reads (any other must have its default)
_OPTIONS = {np.transpose: ("axes",), np.swapaxes: ("axis1", "axis2"),
            prims.ASTYPE: ("dtype",),
            **{r: ("shape", "newshape", "order", "axis") for r in _RESHAPES}}


class NotBatchable(Exception):
    """An operation without a batched tangent (the message names it and its line)."""


def _parse(text):
    return gast.parse(text).body[0].value


def _prepend_slice(index):
    """A subscript's index with ``:`` first (the directions' axis)."""
    items = list(index.elts) if isinstance(index, gast.Tuple) else [index]
    full = gast.Slice(lower=None, upper=None, step=None)
    return gast.Tuple(elts=[full] + items, ctx=gast.Load())


class BatchedTangents(Tangents):
    """``transform.Tangents`` for tangents with the directions first (module doc)."""

    def __init__(self, lowered, active, names, width, scalar_loops=False, seen_ranks=None):
        super().__init__(lowered, active, names)
        self.width = width
        #: the ranks of locals seen in a run with arguments of these types (a pullback's
        #: forward values: ``api/batched_rows.py``), bar those assigned under an ``if``
        #: (a run may take the other branch)
        branched = _assigned_under_if(lowered.body)
        self.seen_ranks = {n: r for n, r in (seen_ranks or {}).items() if n not in branched}
        self.made_by = {}       # a name -> the Op that assigned it (for messages)
        self.at = None          # the origin of the statement being transformed
        #: batch loops of scalar work too (``jacrev``'s pullback: the other choice is a
        #: sweep per row, not a compiled pass per direction)
        self.scalar_loops = scalar_loops
        self.ndims = dict(lowered.ndims)      # learnt ranks are added as ops are met
        self.item_ranks = {}                  # a list's name -> the ranks of its items
        self.int_arrays = set()               # arrays of int literals (indices)
        self.carried = {n for s in walk_statements(lowered.body) if isinstance(s, Loop)
                        for n in s.carried}   # the loops' carried names
        self.align_to = None
        self.lengths = {}                     # a tuple's name -> its length (shapes)
        #: the arrays written in place, and whatever shared their memory at a write
        #: (``analysis/aliasing.py``): a number read from one of them is copied
        self.written = set(lowered.mutated).union(*lowered.shared_at_write.values())

    def refuse(self, what, origin=None):
        where = f" (line {origin.lineno})" if getattr(origin, "lineno", None) else ""
        raise NotBatchable(f"{what}{where}")

    def rank(self, atom):
        """The rank of an atom (a number's is 0), or refused when not known."""
        if isinstance(atom, Const):
            return int(np.ndim(atom.value))
        if isinstance(atom, Var) and self.ndims.get(atom.name) is not None and \
                atom.name not in self.lists:
            return self.ndims[atom.name]
        if isinstance(atom, Var) and atom.name in self.seen_ranks and \
                atom.name not in self.lists:
            return self.seen_ranks[atom.name]
        self.refuse(f"the rank of {self.described(atom)} is not known", self.at)

    def described(self, atom):
        """An atom as the code that made it: ``np.sort(x)``, else its name."""
        made = self.made_by.get(getattr(atom, "name", None))
        text = to_source(made.expr).strip() if made is not None and made.expr is not None \
            else getattr(atom, "name", None) or repr(atom)
        return f"`{text}`" if len(text) <= 60 else f"`{text[:57]}...`"

    # ------------------------------------------------------------ statements

    def custom_tangent(self, op, with_value=False):
        self.refuse(f"a custom rule ({op.custom.name})", op.origin)

    def zeros(self, var):
        return _parse(f"rt.zeros_batch({var}, {self.width})")

    def loop(self, stmt):
        """The loop as it is, each tangent carrying the directions through it (refused for
        a loop of scalar work: ``scalar_loop``; a loop-carried value of changing or
        unknown rank is refused where it is assigned, ``op``; a list it reads before it
        appends to it: ``item_ranks.build_loop``)."""
        self.at = stmt.origin
        if not self.scalar_loops and scalar_loop(stmt, self.active, self.lowered.ndims):
            self.refuse("a loop of scalar work: its per-direction sweeps compile with Numba",
                        stmt.origin)
        return build_loop(self, stmt, super().loop, NotBatchable)


    def list_append(self, stmt):
        self.at = stmt.origin
        self.item_ranks.setdefault(stmt.target, set()).add(self.known_rank(stmt.value))
        return super().list_append(stmt)

    def known_rank(self, atom):
        """The rank of an atom, or None where it is not known."""
        try:
            return self.rank(atom)
        except NotBatchable:
            return None

    def learn_rank(self, op):
        """The rank of ``op``'s result where its form tells it (a copy, a list's items, an
        array made by shape), for the operations after it."""
        target, first = op.targets[0], op.args[0] if op.args else None
        if len(op.targets) == 1:
            self.learn_length(op, target, first)
            _learn_index(self, op, target, first)
        if target in self.ndims or len(op.targets) != 1:
            return
        if op.primitive in (rt.copy_value, np.copy, rt.reserve) and len(op.args) >= 1 and \
                self.known_rank(first) is not None:
            self.ndims[target] = self.known_rank(first)
            return
        if op.primitive in _SCALAR_HELPERS or op.primitive is len:
            self.ndims[target] = 0
            return
        if op.primitive in (np.reshape, prims.method("reshape")) and len(op.args) == 2 and \
                self.length(op.args[1]) is not None:         # to a tuple of sizes
            self.ndims[target] = self.length(op.args[1])
            return
        if op.primitive in _FORWARD_REDUCTIONS and len(op.args) == 3 and not op.kwargs:
            rank, axis = self.known_rank(first), op.args[1]
            if rank is not None and isinstance(axis, (Const, Seq)):
                bound = dict(zip(("x", "axis", "keepdims"), op.args))
                self.ndims[target] = _reduced_rank(op, bound, rank)
            return
        if op.primitive is rt.jacobian_rows and len(op.args) == 2:   # rows of ``like``
            rank = self.known_rank(op.args[1])
            if rank is not None:
                self.ndims[target] = rank + 1
            return
        if op.primitive in _SHAPED_LIKE and len(op.args) > _SHAPED_LIKE[op.primitive]:
            rank = self.known_rank(op.args[_SHAPED_LIKE[op.primitive]])
            if rank is not None:
                self.ndims[target] = rank
            return
        self.learn_value_rank(op, target, first)

    def learn_value_rank(self, op, target, first):
        """``learn_rank`` for what is not made by shape or copied: a list's items, an
        assignment, an item, an elementwise result, a literal array, a value made like
        another, a reduction, an einsum, an array made from a shape, and in a pullback an
        inactive value (``inactive_rank``)."""
        if op.primitive in (rt.zeros_list, rt.copy_list, list) and isinstance(first, Var) \
                and first.name in self.lists:
            self.item_ranks[target] = set(self.item_ranks.get(first.name, {None}))
        elif op.primitive == prims.ASSIGN and isinstance(first, Var) and first.name in self.lists:
            self.item_ranks[target] = self.item_ranks.get(first.name, {None})
        elif op.primitive == prims.ASSIGN:
            rank = self.known_rank(first)
            if rank is not None:
                self.ndims[target] = rank
        elif op.primitive == prims.LIST:
            self.item_ranks[target] = {self.known_rank(a) for a in op.args}
        elif op.primitive == prims.GETITEM and isinstance(first, Var) and \
                first.name in self.lists and first.name not in self.active:
            ranks = self.item_ranks.get(first.name, {None})     # an item of a list (a tape)
            if len(ranks) == 1 and None not in ranks and isinstance(op.expr, gast.Subscript) \
                    and self.scalar_index(op.expr.slice):
                self.ndims[target] = next(iter(ranks))
        elif op.primitive == prims.GETITEM and isinstance(op.expr, gast.Subscript) and \
                isinstance(first, Var) and first.name not in self.active:
            base = self.known_rank(first)          # a constant's item (``points[picks]``)
            try:
                rank = None if base is None else self.index_rank(base, op.expr.slice, None,
                                                                 True)
            except NotBatchable:
                rank = None
            if rank is not None:
                self.ndims[target] = rank
        elif is_elementwise(op.primitive) or op.primitive in _ELEMENTWISE_TEMPLATES + _LOGIC:
            ranks = [self.known_rank(a) for a in op.operand_atoms()]
            if ranks and None not in ranks:
                self.ndims[target] = max(ranks)
        elif op.primitive in (np.array, np.asarray) and isinstance(first, Seq) and all(
                isinstance(i, Const) and type(i.value) is int for i in first.items):
            self.ndims[target] = 1
            self.int_arrays.add(target)
        elif op.primitive in (np.zeros_like, np.ones_like, np.empty_like, np.full_like) and \
                len(op.args) >= 1 and not op.kwargs and self.known_rank(first) is not None:
            self.ndims[target] = self.known_rank(first)
        elif op.primitive in (np.eye, np.identity):
            self.ndims[target] = 2
        elif op.primitive in (np.cross, np.linalg.cross) and not op.kwargs and \
                None not in [self.known_rank(a) for a in op.args]:
            self.ndims[target] = max(self.known_rank(a) for a in op.args)   # vectors
        elif op.primitive in (np.moveaxis, np.transpose, np.swapaxes) and \
                self.known_rank(first) is not None:        # the axes moved: the rank kept
            self.ndims[target] = self.known_rank(first)
        elif op.primitive in _NUMPY_REDUCTIONS and self.known_rank(first) is not None:
            # a value's reduction (``np.sum(x ** 2, axis=(1,))`` of a vectorised form)
            bound = dict(zip(("x", "axis", "keepdims"), op.args), **op.kwargs)
            if all(isinstance(v, Const) or isinstance(v, Seq) and
                   all(isinstance(i, Const) for i in v.items)
                   for k, v in bound.items() if k != "x") and \
                    set(bound) <= {"x", "axis", "keepdims"}:
                self.ndims[target] = _reduced_rank(op, bound, self.known_rank(first))
        elif op.primitive is np.einsum and isinstance(first, Const) and \
                isinstance(first.value, str) and "->" in first.value and \
                "..." not in first.value:
            self.ndims[target] = len(first.value.replace(" ", "").split("->")[1])
        elif op.primitive in (np.zeros, np.ones, np.empty, np.full) and first is not None:
            shape = first
            self.ndims[target] = len(shape.items) if isinstance(shape, Seq) else \
                1 if self.known_rank(shape) == 0 else None
        elif self.scalar_loops and not any(t in self.active for t in op.targets):
            rank = self.inactive_rank(op)
            if rank is not None:
                self.ndims[target] = rank

    def inactive_rank(self, op):
        """The rank of the result of an operation without a tangent, where the ranks of its
        operands tell it (matrix products, stacks, literals, transposes, reshapes,
        reductions with a known axis), or None: a pullback's forward sweep has no tangents
        whose rules would learn them, and its adjoint sweep's rules read them."""
        prim, first = op.primitive, op.args[0] if op.args else None
        try:
            if prim in _MATMUL and len(op.args) == 2 and not op.kwargs:
                ra, rb = self.rank(op.args[0]), self.rank(op.args[1])
                if ra and rb and (prim is not np.dot or max(ra, rb) <= 2):
                    return max(ra, rb) - (ra == 1) - (rb == 1) if min(ra, rb) <= 2 else \
                        max(ra, rb)
                return None
            rule = jvp_lookup(prim) if not isinstance(prim, str) or prim.startswith(
                prims.METHOD_PREFIX) else None
            if rule is None or rule.kind != "linear":
                return None
            bound = rule.bind(op.args, op.kwargs)
            first = next(iter(bound.values()))
            if prim in _PER_ELEMENT:
                return self.rank(first)
            if prim in (np.array, np.asarray):
                return self.literal_rank(first) if isinstance(first, Seq) else \
                    self.rank(first) if first.name not in self.lists else None
            if prim in (np.stack, np.concatenate):
                ranks = {self.rank(i) for i in first.items} if isinstance(first, Seq) else \
                    self.item_ranks.get(first.name, {None})
                if len(ranks) != 1 or None in ranks or _const(op, bound, "axis", 0) is None:
                    return None
                return ranks.pop() + (prim is np.stack)
            if prim in (np.transpose, np.swapaxes):
                return self.rank(first)
            if prim in (np.sum, np.mean):
                return _reduced_rank(op, bound, self.rank(first))
            if prim in (np.ravel, prims.method("ravel"), prims.method("flatten")):
                return 1
            shape = bound.get("shape", bound.get("newshape"))
            if prim in _RESHAPES and isinstance(shape, Seq):
                return len(shape.items)
            if prim in _RESHAPES and isinstance(shape, Const):
                return 1 if isinstance(shape.value, int) else len(shape.value)
        except (NotBatchable, TypeError, AttributeError):
            return None
        return None

    def learn_length(self, op, target, first):
        """The length of a tuple of sizes (``x.shape``, a slice of one, a sum of such
        tuples and literals), for the rank of a reshape to it (``_reshape``)."""
        if op.primitive == prims.SHAPE and self.known_rank(first) is not None:
            self.lengths[target] = self.known_rank(first)
        elif op.primitive == prims.ASSIGN and self.length(first) is not None:
            self.lengths[target] = self.length(first)
        elif op.primitive == prims.GETITEM and self.length(first) is not None and \
                len(op.args) == 2 and isinstance(op.args[1], Const) and \
                isinstance(op.args[1].value, slice):
            self.lengths[target] = len(range(self.length(first))[op.args[1].value])
        elif op.primitive is operator.add and len(op.args) == 2 and None not in (
                self.length(op.args[0]), self.length(op.args[1])):
            self.lengths[target] = self.length(op.args[0]) + self.length(op.args[1])

    def length(self, atom):
        """The length of a tuple atom where known (a literal, a learnt tuple), or None."""
        if isinstance(atom, Seq):
            return len(atom.items)
        return self.lengths.get(atom.name) if isinstance(atom, Var) else None

    def op(self, op):
        self.at = op.origin
        for target in op.targets:
            self.made_by[target] = op
        if op.primitive == prims.ASSIGN and self.lowered.ndims.get(op.targets[0]) is None \
                and op.targets[0] not in self.carried:      # (those: checked below)
            # a name the branches give values of two ranks (its tangent's shape differs)
            have, want = self.known_rank(op.args[0]), self.ndims.get(op.targets[0])
            if None not in (have, want) and have != want:
                self.refuse(f"`{op.targets[0]}` takes values of ranks {want} and {have}",
                            op.origin)
        if op.expr is not None and op.targets:
            self.learn_rank(op)
        if op.primitive == prims.ASSIGN and op.targets[0] in self.carried and \
                op.targets[0] in self.active:
            # a loop-carried value keeps one rank (its tangent one shape), else refused
            have, want = self.known_rank(op.args[0]), self.known_rank(Var(op.targets[0]))
            if have is None or have != want:
                self.refuse(f"`{op.targets[0]}` changes rank in a loop (or its rank is not "
                            "known)", op.origin)
        written = self.literal_items(op)
        if written is not None:
            return written
        out = super().op(op)
        for stmt in out:       # s = 0.0: the zero tangent of every direction
            if isinstance(stmt, gast.Assign) and isinstance(stmt.value, gast.Constant) and \
                    isinstance(stmt.targets[0], gast.Name) and stmt.targets[0].id in \
                    (self.of.get(t) for t in op.targets):
                stmt.value = _parse(f"np.zeros({self.width})")
        return out

    def literal_items(self, op):
        """``np.array`` of a nested list of numbers and scalars, or an empty list, whose
        result is active: the value, then its tangent written item by item (a batch of
        zeros, each active item's tangent after a ``:``), as Numba compiles it; None for
        any other operation."""
        target = op.targets[0] if len(op.targets) == 1 else None
        if target not in self.active or op.expr is None:
            return None
        if op.primitive == prims.LIST and not op.args:
            return [assign(target, op.expr), assign(self.name(target), gast.List(
                elts=[], ctx=gast.Load()))]
        if op.primitive not in (np.array, np.asarray) or len(op.args) != 1 or op.kwargs or \
                not isinstance(op.args[0], Seq):
            return None
        items = _literal_leaves(op.args[0], ())
        if items is None or any(self.known_rank(a) != 0 for _, a in items):
            return None
        self.ndims[target] = len(items[0][0]) if items else 1
        tangent = self.name(target)
        out = [assign(target, op.expr), assign(tangent, self.zeros(target))]
        for index, atom in items:
            if isinstance(atom, Var) and atom.name in self.active:
                where = _parse(f"{tangent}[:, {', '.join(map(str, index))}]")
                where.ctx = gast.Store()
                out.append(assign(where, name_node(self.of[atom.name])))
        return out

    def setitem(self, stmt):
        self.at = stmt.origin
        out = super().setitem(stmt)
        if stmt.target in self.lists:          # xs[i] = v: an item of a list of batches
            if not self.scalar_index(stmt.index_node):
                self.refuse("a slice of a list assigned to", stmt.origin)
            self.item_ranks.setdefault(stmt.target, set()).add(self.known_rank(stmt.value))
            value = stmt.value
            if stmt.target in self.active and not (isinstance(value, Var) and
                                                   value.name in self.active):
                out[-1].value = _parse(f"rt.zeros_batch({atom_text(value)}, {self.width})")
            return out
        if stmt.target not in self.active:
            return out
        tangent = out[-1]
        index = stmt.index_node
        rank = self.index_rank(self.rank(Var(stmt.target)), index, stmt.origin)
        tangent.targets[0].slice = _prepend_slice(copy_node(index))
        value = stmt.value
        if isinstance(value, Var) and value.name in self.active:
            tangent.value = self.aligned(tangent.value, self.rank(value), rank, stmt.origin)
        return out

    def index_rank(self, base_rank, index, origin, one_array=False):
        """The rank of ``x[index]`` for ``x`` of ``base_rank`` (None: not known); refused
        where an array in the index could put its axes before the directions' (any
        array, or with ``one_array`` an array beside an int or another array)."""
        items = list(index.elts) if isinstance(index, gast.Tuple) else [index]
        rank, arrays, advanced = base_rank, 0, []
        for at, item in enumerate(items):
            if isinstance(item, gast.Slice) or (isinstance(item, gast.Constant) and
                                                item.value is Ellipsis):
                continue
            if isinstance(item, gast.Constant) and item.value is None:
                rank += 1
            elif self.scalar_index(item):
                rank = rank - 1
                advanced.append(at)
            else:
                arrays, array = arrays + 1, item
                advanced.append(at)
        # advanced indices next to each other keep their axes in place, after the ':'
        several = _several_arrays(self, items, advanced, one_array, arrays)
        if several is not None:
            return rank - arrays + several
        if arrays > (1 if one_array else 0) or (
                arrays and advanced != list(range(advanced[0], advanced[-1] + 1))):
            self.refuse("an index with an array in it", origin)
        if not arrays:
            return rank
        name = getattr(array, "id", None)
        dtype, ndim = self.lowered.param_types.get(name, (None, None))
        if name in self.int_arrays:
            return rank - 1 + self.ndims[name]
        return rank - 1 + ndim if dtype is not None and dtype.kind in "iu" else None

    def scalar_index(self, node):
        """True for an int expression: numbers and names known to be numbers only."""
        for n in gast.walk(node):
            if isinstance(n, (gast.List, gast.Tuple, gast.Subscript, gast.Call)):
                return False
            if isinstance(n, gast.Constant) and not isinstance(n.value, int):
                return False
            if isinstance(n, gast.Name) and self.ndims.get(n.id) != 0:
                return False
        return True

    def aligned(self, node, have, want, origin):
        """A tangent of rank ``have`` with unit axes after the directions up to ``want``."""
        if have > want:
            self.refuse("a tangent of higher rank than its result", origin)
        if have == want:
            return node
        nones = [gast.Constant(value=None, kind=None)] * (want - have)
        full = gast.Slice(lower=None, upper=None, step=None)
        return gast.Subscript(value=node, slice=gast.Tuple(elts=[full] + nones,
                                                           ctx=gast.Load()), ctx=gast.Load())

    # ------------------------------------------------------------ tangents of values

    def tangent_node(self, atom):
        node = super().tangent_node(atom)
        if self.align_to is None or isinstance(atom, Const):
            return node
        if isinstance(atom, Seq):
            self.refuse("a tuple operand of an elementwise rule")
        return self.aligned(node, self.rank(atom), self.align_to, None)

    def tangent_of(self, op, out):
        if op.primitive == prims.GETITEM:
            return self.getitem(op)
        if op.primitive in (prims.ASSIGN, prims.LIST):
            return super().tangent_of(op, out)
        if op.rule is not None and not op.rule.differentiable:
            return None
        if op.primitive in _NO_TANGENT:
            return None
        if op.primitive in _ADJOINT_HELPERS:
            return self.adjoint_helper(op)
        if op.primitive in _HELPER_RULES and not op.kwargs:
            return _HELPER_RULES[op.primitive](self, op, *op.args)
        if op.primitive in _FORWARD_REDUCTIONS and len(op.args) == 3 and not op.kwargs:
            return _reduce(self, op, dict(zip(("x", "axis", "keepdims"), op.args)))
        rule = jvp_lookup(op.primitive)
        if rule is None:
            return super().tangent_of(op, out)      # refused, as for one direction
        if rule.kind == "linear":
            return self.linear(op, rule)
        if rule.kind == "multilinear":
            return self.matmul(op)
        if not (is_elementwise(op.primitive) or op.primitive in _ELEMENTWISE_TEMPLATES):
            if _adjoint_of_g(op.primitive):        # linear in its cotangent ``g``
                return self.per_direction(op, None, f"{_name(op)} has no batched rule")
            self.refuse(f"{_name(op)} has no batched rule", op.origin)
        rank = max([self.rank(a) for a in op.operand_atoms()] + [0])
        self.ndims.setdefault(op.targets[0], rank)
        self.align_to = rank
        try:
            expr = super().tangent_of(op, out)
        finally:
            self.align_to = None
        return _BatchBroadcast().visit(expr) if expr is not None else None

    def adjoint_helper(self, op):
        """``rt.unbroadcast(g, like)`` and its kin (module doc): the batched helper on
        ``g``'s tangent, the other operands as they are."""
        g = op.args[0] if op.args else None
        if op.kwargs or not isinstance(g, Var):
            self.refuse(f"{_name(op)} of these operands has no batched rule", op.origin)
        if g.name not in self.active:
            return None
        self.ndims.setdefault(op.targets[0], self.rank(op.args[1]))
        rest = ", ".join(atom_text(a) for a in op.args[1:])
        return _parse(f"{_ADJOINT_HELPERS[op.primitive]}({self.of[g.name]}, {rest})")

    def getitem(self, op):
        if not isinstance(op.expr, gast.Subscript) or not isinstance(op.args[0], Var):
            self.refuse("an item of a value that is not an array", op.origin)
        base = op.args[0].name
        if base not in self.active:
            return None
        expr = copy_node(op.expr)
        expr.value = name_node(self.of[base])
        if base in self.lists:                 # a list of tangents, indexed as it is
            ranks = self.item_ranks.get(base, {None})
            if len(ranks) == 1 and None not in ranks:
                self.ndims.setdefault(op.targets[0], next(iter(ranks)))
            return expr
        rank = self.index_rank(self.rank(op.args[0]), expr.slice, op.origin, True)
        if rank is not None:
            self.ndims.setdefault(op.targets[0], rank)
        expr.slice = _prepend_slice(expr.slice)
        if rank == 0 and base in self.written:     # a number is a copy, the batch of
            # numbers a view: copied too where the array is written later (x[i] = 0); a
            # view of one nothing writes costs no copy (ht's 86 angles: ~50 us a call)
            return gast.Call(func=_parse("np.copy"), args=[expr], keywords=[])
        return expr

    def linear(self, op, rule):
        """The batched tangent of a linear primitive (module doc), or refused."""
        bound = rule.bind(op.args, op.kwargs)
        prim, target = op.primitive, op.targets[0]
        first = next(iter(bound.values()))
        params = rule.signature.parameters
        try:
            options = [p for p in list(bound)[1:] if p not in _OPTIONS.get(
                prim, ("axis", "keepdims")) and _const(op, bound, p) is not params[p].default]
        except NotBatchable as exc:      # an option computed at run time
            return self.per_direction(op, rule, str(exc))
        if options and not (prim in (np.array, np.asarray) and options == ["copy"]):
            return self.per_direction(op, rule, f"{_name(op)} with {', '.join(options)}")
        listed = isinstance(first, Var) and first.name in self.lists
        if prim in _PER_ELEMENT or (prim in (np.array, np.asarray) and isinstance(first, Var)
                                    and not listed):
            if isinstance(first, Var) and first.name in self.ndims:
                self.ndims.setdefault(target, self.ndims[first.name])
            return self._linear(op, set(op.operand_vars()), rule)
        if prim in (np.array, np.asarray) and (isinstance(first, Seq) or listed):
            if isinstance(first, Seq):
                self.ndims.setdefault(target, self.literal_rank(first))
            literal = self._operand_tangent(atom_node(first), set(op.operand_vars()))
            return gast.Call(func=_parse("rt.array_batch"),
                             args=[literal, name_node(self.width)], keywords=[])
        if not isinstance(first, Var) and prim not in (np.stack, np.concatenate):
            self.refuse(f"{_name(op)} of a value that is not a variable", op.origin)
        handler = _LINEAR.get(prim) or (_reshape if prim in _RESHAPES else None)
        if handler is None:
            return self.per_direction(op, rule, f"{_name(op)} has no batched rule")
        return handler(self, op, bound)

    def per_direction(self, op, rule, why):
        """A helper linear in its first operand alone (``jvp_linear_in``: an adjoint
        helper whose other operands are shapes, axes, an order...) without a batched rule:
        ``rt.per_direction(helper, g_dot, ...)``, the call on each direction's tangent,
        stacked (exact: the call is linear in ``g``); refused (``why``) for any other."""
        if rule is None:                 # an adjoint helper: linear in its first, ``g``
            tangent, params = ("g",), ["g"]
            rule = jvp_lookup(op.primitive)
        else:
            tangent = getattr(rule, "tangent_params", None)
            params = list(rule.signature.parameters)
        if not getattr(op.primitive, "__module__", "").startswith(rt.__name__):
            self.refuse(why, op.origin)          # numpy's own: batched rules above only
        g = op.args[0] if op.args else None
        if tangent != tuple(params[:1]) or len(op.targets) != 1 or \
                not isinstance(op.expr, gast.Call) or _active_name(self, g) is None or \
                g.name in self.lists or any(v != g.name and v in self.active
                                            for v in op.operand_vars()):
            self.refuse(why, op.origin)
        like = _RESULT_LIKE.get(op.primitive)
        if like is not None:
            bound = inspect.signature(op.primitive).bind_partial(*op.args, **op.kwargs)
            rank = self.known_rank(bound.arguments[like]) if like in bound.arguments else None
            if rank is not None:
                self.ndims.setdefault(op.targets[0], rank)
        call = copy_node(op.expr)
        call.args = [call.func, name_node(self.of[g.name])] + call.args[1:]
        call.func = _parse("rt.per_direction")
        return call

    def literal_rank(self, seq):
        """The rank of ``np.array`` of a nested list (its items of equal ranks), or None."""
        ranks = {self.literal_rank(i) if isinstance(i, Seq) else
                 self.ndims.get(i.name) if isinstance(i, Var) else int(np.ndim(i.value))
                 for i in seq.items}
        return 1 + ranks.pop() if len(ranks) == 1 and None not in ranks else None

    def matmul(self, op):
        """``a @ b``'s batched tangent (module doc), or refused."""
        if op.primitive is np.einsum:
            return _einsum(self, op)
        if op.primitive in (np.cross, np.linalg.cross) and len(op.args) == 2 and \
                not op.kwargs:
            return _cross(self, op)
        if op.primitive not in _MATMUL or len(op.args) != 2 or op.kwargs:
            self.refuse(f"{_name(op)} has no batched rule", op.origin)
        a, b = op.args
        ra, rb = self.rank(a), self.rank(b)
        if ra == 0 or rb == 0 or (op.primitive is np.dot and max(ra, rb) > 2):
            self.refuse(f"{_name(op)} of these ranks has no batched rule", op.origin)
        self.ndims.setdefault(op.targets[0], max(ra, rb) - (ra == 1) - (rb == 1))
        if ra == 2 and rb == 2 and self.is_active(a) and self.is_active(b):
            return _parse(f"rt.matmul_both({self.of[a.name]}, {atom_text(b)}, "
                          f"{atom_text(a)}, {self.of[b.name]})")
        terms = []
        if self.is_active(a):    # a batch times a matrix: laid out as the batch is
            helper = "rt.batch_matmul({}, {})" if ra == 2 and rb == 2 else "{} @ {}"
            terms.append(_parse(helper.format(self.of[a.name], atom_text(b))))
        if self.is_active(b):
            if rb == 2 and ra == 2:        # a matrix times a batch: one BLAS product
                terms.append(_parse(f"rt.matmul_batch({atom_text(a)}, {self.of[b.name]})"))
            elif rb > 1:
                terms.append(_parse(f"{atom_text(a)} @ {self.of[b.name]}"))
            elif ra <= 2:
                transposed = atom_text(a) + (".T" if ra == 2 else "")
                terms.append(_parse(f"{self.of[b.name]} @ {transposed}"))
            else:
                self.refuse("a stack of matrices times a vector", op.origin)
        return sum_terms(terms) if terms else None


def _cross(sweep, op):
    """``np.cross(a, b)``'s batched tangent (vectors along the last axis, the other axes
    broadcast): ``np.cross(a_dot, b) + np.cross(a, b_dot)``, a tangent of the lower rank
    given unit axes after its directions."""
    a, b = op.args
    ra, rb = sweep.rank(a), sweep.rank(b)
    if min(ra, rb) < 1:
        sweep.refuse(f"{_name(op)} of a number", op.origin)
    rank = max(ra, rb)

    def tangent(x, r):
        return sweep.of[x.name] + (f"[:{', None' * (rank - r)}]" if rank > r else "")
    terms = []
    if sweep.is_active(a):
        terms.append(_parse(f"np.cross({tangent(a, ra)}, {atom_text(b)})"))
    if sweep.is_active(b):
        terms.append(_parse(f"np.cross({atom_text(a)}, {tangent(b, rb)})"))
    sweep.ndims.setdefault(op.targets[0], rank)
    return sum_terms(terms) if terms else None


def _literal_leaves(seq, index):
    """(index, atom) of each leaf of a nested list literal of equal lengths, or None."""
    lengths = {len(i.items) for i in seq.items if isinstance(i, Seq)}
    if lengths and (len(lengths) > 1 or len(lengths) == 1 and
                    not all(isinstance(i, Seq) for i in seq.items)):
        return None
    out = []
    for k, item in enumerate(seq.items):
        if isinstance(item, Seq):
            inner = _literal_leaves(item, index + (k,))
            if inner is None:
                return None
            out += inner
        else:
            out.append((index + (k,), item))
    return out if out else None


def _assigned_under_if(statements):
    """The names assigned anywhere inside an ``If`` of ``statements``."""
    names = set()
    for stmt in walk_statements(statements):
        if isinstance(stmt, If):
            for inner in walk_statements(stmt.body + stmt.orelse):
                names.update(getattr(inner, "targets", None) or ())
                target = getattr(inner, "target", None)
                if isinstance(target, str):
                    names.add(target)
    return names


def scalar_loop(loop, active, ndims, share=0.25):
    """True when under ``share`` of the active operations a loop runs (its test's and
    nested loops' included) compute arrays (a result of rank >= 1, or of unknown rank):
    numpy's per-call cost on a batch of numbers would outweigh the per-direction sweeps
    compiled by Numba (measured in ``benchmarks/bench_jacobian.py``)."""
    ops = [s for s in walk_ops(loop.test_ops + loop.body) if isinstance(s, Op) and
           any(t in active for t in s.targets) and s.primitive not in _SYNTAX]
    arrays = [op for op in ops if ndims.get(op.targets[0]) != 0]
    return not ops or len(arrays) < share * len(ops)


def own_loops(statements):
    """Whether ``statements`` loop, a Jacobian's loop over its rows aside (``jacrev``'s
    code: a loop whose body seeds an adjoint sweep with ``rt.basis_tangent``, each row a
    sweep with no loop of its own): ``jacfwd(jacrev(f))`` of a loop-free ``f`` is then
    batched as loop-free code is, not compiled by Numba per direction (75 s)."""
    return any(isinstance(s, Loop) and not any(
        isinstance(op, Op) and op.primitive is rt.basis_tangent for op in s.body)
        for s in walk_statements(statements))


def copy_node(node):
    """A copy of a gast node (the operation's own stays as the primal writes it)."""
    return copy.deepcopy(node)


def atom_text(atom):
    """The source of an atom (a name, a number)."""
    return to_source(atom_node(atom)).strip()


def _name(op):
    return op.primitive if isinstance(op.primitive, str) else display_name(op.primitive)


def _const(op, bound, name, default=None):
    """The value of an option known while building (a default where not given)."""
    value = bound.get(name, default)
    if isinstance(value, Const):
        return value.value
    if isinstance(value, Seq) and all(isinstance(i, Const) for i in value.items):
        return tuple(i.value for i in value.items)
    if isinstance(value, (Var, Seq)):
        raise NotBatchable(f"{_name(op)} with `{name}` computed at run time")
    return value


def _shifted(axis, rank):
    """An axis (or tuple of axes, or None: all ``rank`` of them) past the directions."""
    if axis is None:
        return tuple(range(1, rank + 1))
    if isinstance(axis, tuple):
        return tuple(_shifted(a, rank) for a in axis)
    return axis + 1 if axis >= 0 else axis


def _reduced_rank(op, bound, rank):
    """The rank of a sum or mean of a value of ``rank`` over ``bound``'s axis."""
    axis = _const(op, bound, "axis")
    if bool(_const(op, bound, "keepdims", False)):
        return rank
    return rank - len(range(rank) if axis is None else axis if isinstance(axis, tuple)
                      else (axis,))


def _reduce(sweep, op, bound):
    """``np.sum`` / ``np.mean`` (``rt.sum`` / ``rt.mean``) of a batch: the axes shifted
    past the directions."""
    x = next(iter(bound.values()))
    rank = sweep.rank(x)
    axis = _const(op, bound, "axis")
    keepdims = bool(_const(op, bound, "keepdims", False))
    sweep.ndims.setdefault(op.targets[0], _reduced_rank(op, bound, rank))
    if axis is None and rank == 0:
        return name_node(sweep.of[x.name])
    func = "np.mean" if op.primitive in (np.mean, rt.mean) else "np.sum"
    shifted = _shifted(axis, rank)
    shifted = shifted[0] if isinstance(shifted, tuple) and len(shifted) == 1 else shifted
    kept = ", keepdims=True" if keepdims else ""
    return _parse(f"{func}({sweep.of[x.name]}, axis={shifted!r}{kept})")


def _cumsum(sweep, op, bound):
    """``np.cumsum(x, axis)`` of a batch: along the axis shifted past the directions,
    each direction's values flattened for ``axis=None``."""
    x = next(iter(bound.values()))
    rank, axis = sweep.rank(x), _const(op, bound, "axis")
    if not isinstance(axis, (int, type(None))):
        sweep.refuse(f"{_name(op)} over a tuple of axes", op.origin)
    sweep.ndims.setdefault(op.targets[0], 1 if axis is None else rank)
    t = sweep.of[x.name]
    if axis is None:
        return _parse(f"np.cumsum(np.reshape({t}, (np.shape({t})[0], -1)), axis=1)")
    return _parse(f"np.cumsum({t}, axis={_shifted(axis, rank)!r})")


def _reshape(sweep, op, bound):
    """A reshape (ravel, squeeze, ...): the batch reshaped to the directions and the
    result's shape (C order only)."""
    x = next(iter(bound.values()))
    if _const(op, bound, "order", "C") not in ("C", None):
        sweep.refuse(f"{_name(op)} in an order other than C", op.origin)
    if x.name not in sweep.active:
        return None
    target = op.targets[0]
    shape = bound.get("shape", bound.get("newshape"))
    if op.primitive in (np.ravel, prims.method("ravel"), prims.method("flatten")):
        sweep.ndims.setdefault(target, 1)
    elif isinstance(shape, Seq):
        sweep.ndims.setdefault(target, len(shape.items))
    elif isinstance(shape, Const) and isinstance(shape.value, (int, tuple)):
        sweep.ndims.setdefault(target, 1 if isinstance(shape.value, int) else len(shape.value))
    return _parse(f"np.reshape({sweep.of[x.name]}, ({sweep.width},) + np.shape({target}))")


def _transpose(sweep, op, bound):
    """``np.transpose`` / ``.T`` / ``np.swapaxes`` of a batch: the directions stay first."""
    x = next(iter(bound.values()))
    rank = sweep.rank(x)
    if op.primitive is np.swapaxes:
        order = list(range(rank))
        i, j = (_const(op, bound, n) % max(rank, 1) for n in ("axis1", "axis2"))
        order[i], order[j] = order[j], order[i]
    else:
        axes = _const(op, bound, "axes")
        order = list(reversed(range(rank))) if axes is None else [a % rank for a in axes]
    sweep.ndims.setdefault(op.targets[0], rank)
    axes = tuple([0] + [a + 1 for a in order])
    return _parse(f"np.transpose({sweep.of[x.name]}, {axes!r})")


def _join(sweep, op, bound):
    """``np.stack`` / ``np.concatenate`` of batches: the axis shifted past the directions."""
    items = next(iter(bound.values()))
    axis = _const(op, bound, "axis", 0)
    if axis is None:
        sweep.refuse(f"{_name(op)} with axis=None", op.origin)
    if isinstance(items, Seq):
        if any(isinstance(i, Const) for i in items.items):
            sweep.refuse(f"{_name(op)} of a constant", op.origin)
        ranks = {sweep.rank(i) for i in items.items}
        if len(ranks) == 1:
            sweep.ndims.setdefault(op.targets[0], ranks.pop() + (op.primitive is np.stack))
        parts = gast.Tuple(elts=[sweep.tangent_node(i) for i in items.items], ctx=gast.Load())
    elif isinstance(items, Var) and items.name in sweep.active and items.name in sweep.lists:
        parts = name_node(sweep.of[items.name])
        ranks = sweep.item_ranks.get(items.name, {None})
        if len(ranks) == 1 and None not in ranks:
            sweep.ndims.setdefault(op.targets[0], next(iter(ranks)) + (op.primitive is np.stack))
    elif isinstance(items, Var) and items.name in sweep.active and op.primitive is np.stack:
        rank = sweep.rank(items)         # an array: its rows stacked, its first axis moved
        sweep.ndims.setdefault(op.targets[0], rank)
        axis = axis % rank + 1
        if axis == 1:
            return name_node(sweep.of[items.name])
        return _parse(f"np.moveaxis({sweep.of[items.name]}, 1, {axis})")
    else:
        sweep.refuse(f"{_name(op)} of these operands", op.origin)
    func = "np.stack" if op.primitive is np.stack else "np.concatenate"
    return gast.Call(func=_parse(func), args=[parts], keywords=[gast.keyword(
        arg="axis", value=gast.Constant(value=axis + 1 if axis >= 0 else axis, kind=None))])


def _active_name(sweep, atom):
    return atom.name if isinstance(atom, Var) and atom.name in sweep.active else None


def _extremum(sweep, op, x, axis, keepdims):
    """``rt.amax(x, axis, keepdims)`` (or amin): the batch times where ``x`` attains it,
    summed over the axis shifted past the directions (its per-direction rule)."""
    bound = {"x": x, "axis": axis, "keepdims": keepdims}
    sweep.ndims.setdefault(op.targets[0], _reduced_rank(op, bound, sweep.rank(x)))
    if _active_name(sweep, x) is None:
        return None
    axes, kept = _const(op, bound, "axis"), bool(_const(op, bound, "keepdims", False))
    shifted = _shifted(axes, sweep.rank(x))
    shifted = shifted[0] if isinstance(shifted, tuple) and len(shifted) == 1 else shifted
    mask = f"rt.extremum_mask({atom_text(x)}, {op.targets[0]}, {atom_text(axis)}, {kept})"
    return _parse(f"np.sum({sweep.of[x.name]} * {mask}, axis={shifted!r}, keepdims={kept})")


def _extremum_adjoint(sweep, op, g, x, ans, axis, keepdims):
    """``rt.extremum_adjoint(g, ...)``, linear in ``g`` (the mask is constant almost
    everywhere): ``g``'s batch spread over ``x``'s shape, times the mask."""
    sweep.ndims.setdefault(op.targets[0], sweep.rank(x))
    if _active_name(sweep, g) is None:
        return None
    rest = f"{atom_text(x)}, {atom_text(axis)}, {atom_text(keepdims)}"
    return _parse(f"rt.unreduce_batch({sweep.of[g.name]}, {rest}) * rt.extremum_mask("
                  f"{atom_text(x)}, {atom_text(ans)}, {atom_text(axis)}, "
                  f"{atom_text(keepdims)})")


def _transpose_adjoint(sweep, op, g, axes):
    """``rt.transpose_adjoint(g, axes)``: the batch transposed back, directions first."""
    rank = sweep.rank(g)
    sweep.ndims.setdefault(op.targets[0], rank)
    if _active_name(sweep, g) is None:
        return None
    order = _const(op, {"axes": axes}, "axes")
    order = list(reversed(range(rank))) if order is None else \
        list(np.argsort([a % rank for a in order]))
    return _parse(f"np.transpose({sweep.of[g.name]}, {(0,) + tuple(int(a) + 1 for a in order)!r})")


def _matmul_adjoint(sweep, op, g, a, b):
    """``rt.matmul_left(g, a, b)`` (``g @ b.T``) and ``rt.matmul_right`` (``a.T @ g``) of
    matrices, bilinear: a term per operand with a batch, a matrix times a batch as one
    BLAS product (``rt.matmul_batch``); other ranks are refused (per direction)."""
    left = op.primitive is rt.matmul_left
    other = b if left else a          # the operand the adjoint is bilinear in, with g
    if not (_active_name(sweep, g) or _active_name(sweep, other)):
        rank = sweep.known_rank(a if left else b)
        if rank is not None:
            sweep.ndims.setdefault(op.targets[0], rank)
        return None
    ra, rb = sweep.rank(a), sweep.rank(b)
    if not _active_name(sweep, other) and (ra, rb) != (2, 2) and {ra, rb} <= {1, 2}:
        return _vector_adjoint(sweep, op, g, a, b, left, ra, rb)
    if (sweep.rank(g), ra, rb) != (2, 2, 2):
        sweep.refuse(f"{_name(op)} of operands that are not matrices", op.origin)
    sweep.ndims.setdefault(op.targets[0], 2)
    terms = []
    if _active_name(sweep, g):
        terms.append(f"{sweep.of[g.name]} @ {atom_text(b)}.T" if left else
                     f"rt.matmul_batch({atom_text(a)}.T, {sweep.of[g.name]})")
    if _active_name(sweep, other):
        t = sweep.of[other.name]
        terms.append(f"rt.matmul_batch({atom_text(g)}, np.swapaxes({t}, 1, 2))" if left else
                     f"np.swapaxes({t}, 1, 2) @ {atom_text(g)}")
    return _parse(" + ".join(terms)) if terms else None


def _vector_adjoint(sweep, op, g, a, b, left, ra, rb):
    """``rt.matmul_left`` / ``rt.matmul_right`` of ``a @ b`` with a vector operand, linear
    in ``g`` alone (a pullback: ``a`` and ``b`` are the forward sweep's): per direction
    ``g @ b.T`` or ``outer(g, b)`` for ``a``, ``a.T @ g``, ``g @ a`` or ``outer(a, g)``
    for ``b``, written for ``g``'s batch."""
    sweep.ndims.setdefault(op.targets[0], ra if left else rb)
    t, at, bt = sweep.of[g.name], atom_text(a), atom_text(b)
    if left:
        text = f"{t} @ {bt}.T" if rb == 2 else f"{t}[..., None] * {bt}"
    elif ra == 2:
        text = f"np.matmul({at}.T, {t})" if rb == 2 else f"{t} @ {at}"
    else:
        text = f"{at}[:, None] * {t}[:, None, :]" if rb == 2 else f"{t}[:, None] * {at}"
    return _parse(text)


#: runtime helpers linear in their first parameter ``g`` besides the ``*_adjoint`` ones
_LINEAR_IN_G = ("dot_left", "dot_right", "divide_or_zero")


def _adjoint_of_g(helper):
    """Whether ``helper`` is a runtime adjoint helper giving one array, linear in its
    first parameter ``g`` (a cotangent): ``rt.norm_adjoint``, ``rt.dot_left``..."""
    name = getattr(helper, "__name__", "")
    if not getattr(helper, "__module__", "").startswith(rt.__name__) or not (
            name.endswith("_adjoint") or name in _LINEAR_IN_G):
        return False
    try:
        return next(iter(inspect.signature(helper).parameters)) == "g"
    except (TypeError, ValueError, StopIteration):
        return False


def _reverse_cumsum(sweep, op, g, axis):
    """``rt.reverse_cumsum(g, axis)`` (the adjoint of ``np.cumsum``): along the axis
    shifted past the directions, each direction's values flattened for ``axis=None``."""
    at = _const(op, {"axis": axis}, "axis")
    sweep.ndims.setdefault(op.targets[0], 1 if at is None else sweep.rank(g))
    if _active_name(sweep, g) is None:
        return None
    return _parse(f"rt.reverse_cumsum_batch({sweep.of[g.name]}, {at!r})")


def _copy_value(sweep, op, value):
    """``rt.copy_value(x)``: a copy of the batch."""
    if _active_name(sweep, value) is None:
        return None
    if sweep.known_rank(value) is not None:
        sweep.ndims.setdefault(op.targets[0], sweep.rank(value))
    return _parse(f"rt.copy_value({sweep.of[value.name]})")


def _add_at(sweep, op, target, index, g):
    """``rt.add_at(target, index, g)`` (``target[index] += g``, in place): on a copy of
    the target's batch (zeros where it has none), ``rt.add_at_batch`` of ``g``'s."""
    rank = sweep.known_rank(target)
    if rank is not None:
        sweep.ndims.setdefault(op.targets[0], rank)
    if _active_name(sweep, target) is None and _active_name(sweep, g) is None:
        return None
    base = f"rt.copy_value({sweep.of[target.name]})" if _active_name(sweep, target) else \
        f"rt.zeros_batch({atom_text(target)}, {sweep.width})"
    if _active_name(sweep, g) is None:
        return _parse(base)
    return _parse(f"rt.add_at_batch({base}, {atom_text(index)}, {sweep.of[g.name]})")


def _unstack(sweep, op, g, count, axis):
    """``rt.unstack(g, count, axis)`` (the adjoint of ``np.stack``): the batch's slices
    along the axis shifted past the directions, a list of batches."""
    rank, at = sweep.rank(g), _const(op, {"axis": axis}, "axis")
    sweep.item_ranks[op.targets[0]] = {rank - 1}
    sweep.lists.add(op.targets[0])
    if _active_name(sweep, g) is None:
        return None
    at = at + 1 if at >= 0 else at
    return _parse(f"rt.unstack({sweep.of[g.name]}, {atom_text(count)}, {at})")


def _sort(sweep, op, a, axis=Const(-1)):
    """``np.sort(a, axis)``'s tangent: each direction's tangent taken in ``a``'s order
    (``rt.sort_tangent_batch``; ``axis=None``: of the flattened values)."""
    at = _const(op, {"axis": axis}, "axis")
    sweep.ndims.setdefault(op.targets[0], 1 if at is None else sweep.rank(a))
    if _active_name(sweep, a) is None:
        return None
    return _parse(f"rt.sort_tangent_batch({sweep.of[a.name]}, {atom_text(a)}, {at!r})")


def _builtin_sum(sweep, op, items, *start):
    """The builtin ``sum(items)`` of an array (over its first axis: the batch's second)
    or of a list of batches (the batches added)."""
    if start or not isinstance(items, Var):
        sweep.refuse("the builtin sum of these operands has no batched rule", op.origin)
    if items.name in sweep.lists:
        ranks = sweep.item_ranks.get(items.name, {None})
        if len(ranks) != 1 or None in ranks:
            sweep.refuse(f"the rank of the items of {sweep.described(items)} is not known",
                         op.origin)
        sweep.ndims.setdefault(op.targets[0], next(iter(ranks)))
        return None if _active_name(sweep, items) is None else \
            _parse(f"sum({sweep.of[items.name]})")
    rank = sweep.rank(items)
    if rank == 0:
        sweep.refuse("the builtin sum of a number", op.origin)
    sweep.ndims.setdefault(op.targets[0], rank - 1)
    return None if _active_name(sweep, items) is None else \
        _parse(f"np.sum({sweep.of[items.name]}, axis=1)")


def _sort_adjoint(sweep, op, g, a, axis=Const(-1)):
    """``rt.sort_adjoint(g, a, axis)``, linear in ``g`` (the order is constant almost
    everywhere): the batch put back in one order (``rt.sort_adjoint_batch``)."""
    sweep.ndims.setdefault(op.targets[0], sweep.rank(a))
    if _active_name(sweep, g) is None:
        return None
    return _parse(f"rt.sort_adjoint_batch({sweep.of[g.name]}, {atom_text(a)}, "
                  f"{atom_text(axis)})")


def _spread_sum(sweep, op, g, items):
    """``rt.spread_sum(g, items)`` (the adjoint of the builtin ``sum``): for a list or
    tuple of items, a list holding ``g``'s batch once per item; for an array, the batch
    spread over the array's rows (``rt.spread_sum_batch``)."""
    listed = isinstance(items, Seq) or items.name in sweep.lists or \
        items.name in sweep.lowered.tuples
    if listed:
        sweep.lists.add(op.targets[0])
        sweep.item_ranks[op.targets[0]] = {sweep.known_rank(g)}
    else:
        sweep.ndims.setdefault(op.targets[0], sweep.rank(items))
    if _active_name(sweep, g) is None:
        return None
    return _parse(f"rt.spread_sum_batch({sweep.of[g.name]}, {atom_text(items)})")


def _add_lists(sweep, op, a, b):
    """``rt.add_lists(a, b)`` (two adjoint lists added item by item; ``a`` may be the
    0.0 an adjoint starts as): the lists of batches added, or ``b``'s copied where ``a``
    is not a list; refused where either list has no tangent (a zero batch per item is
    not written here)."""
    listed = [isinstance(x, Var) and x.name in sweep.lists for x in (a, b)]
    if not listed[1] or not _active_name(sweep, b) or (listed[0] and not _active_name(
            sweep, a)):
        sweep.refuse(f"{_name(op)} of these operands has no batched rule", op.origin)
    sweep.lists.add(op.targets[0])
    sweep.item_ranks[op.targets[0]] = set(sweep.item_ranks.get(b.name, {None}))
    if not listed[0]:
        return _parse(f"list({sweep.of[b.name]})")
    return _parse(f"rt.add_lists({sweep.of[a.name]}, {sweep.of[b.name]})")


def _pop(sweep, op, items):
    """``items.pop()`` of an adjoint list taken back item by item: its list of batches
    popped in step."""
    if not (isinstance(items, Var) and items.name in sweep.lists):
        sweep.refuse(f"{_name(op)} of a value that is not a list", op.origin)
    ranks = sweep.item_ranks.get(items.name, {None})
    if len(ranks) == 1 and None not in ranks:
        sweep.ndims.setdefault(op.targets[0], next(iter(ranks)))
    if _active_name(sweep, items) is None:
        return None
    return _parse(f"{sweep.of[items.name]}.pop()")


def _split_like(sweep, op, g, parts, axis):
    """``rt.split_like(g, parts, axis)`` (the adjoint of ``np.concatenate``): the batch
    split along the axis shifted past the directions (``rt.split_like_batch``)."""
    sweep.item_ranks[op.targets[0]] = {sweep.rank(g)}
    sweep.lists.add(op.targets[0])
    _const(op, {"axis": axis}, "axis")        # known while building, else refused
    if _active_name(sweep, g) is None:
        return None
    return _parse(f"rt.split_like_batch({sweep.of[g.name]}, {atom_text(parts)}, "
                  f"{atom_text(axis)})")


def _copy_list(sweep, op, items):
    """``rt.copy_list(xs)``: a copy of the list of batches."""
    if isinstance(items, Var):
        sweep.item_ranks[op.targets[0]] = set(sweep.item_ranks.get(items.name, {None}))
    sweep.lists.add(op.targets[0])
    if _active_name(sweep, items) is None:
        return None
    return _parse(f"rt.copy_list({sweep.of[items.name]})")


#: helpers of gradient code (a Hessian's sweep differentiates them) with a batched rule
_HELPER_RULES = {rt.amax: _extremum, rt.amin: _extremum,
                 rt.extremum_adjoint: _extremum_adjoint,
                 rt.transpose_adjoint: _transpose_adjoint, rt.matmul_left: _matmul_adjoint,
                 rt.matmul_right: _matmul_adjoint, rt.copy_value: _copy_value,
                 rt.add_at: _add_at, rt.unstack: _unstack, rt.copy_list: _copy_list,
                 rt.split_like: _split_like, rt.reverse_cumsum: _reverse_cumsum,
                 rt.spread_sum: _spread_sum, rt.add_lists: _add_lists,
                 prims.method("pop"): _pop, rt.sort_adjoint: _sort_adjoint, np.sort: _sort,
                 sum: _builtin_sum}

#: the adjoint helpers linear in their first operand -> their batched spelling
_ADJOINT_HELPERS = {rt.unbroadcast: "rt.unbroadcast_batch", rt.unreduce: "rt.unreduce_batch",
                    rt.reshape_like: "rt.reshape_like_batch", rt.cast_like: "rt.cast_like"}
#: helpers batched ``per_direction`` whose result has the rank of an operand -> its name
_RESULT_LIKE = {rt.sort_adjoint: "a", rt.permutation_adjoint: "a", rt.roll_adjoint: "g",
                rt.norm_adjoint: "x", rt.dot_left: "a", rt.dot_right: "b",
                rt.det_adjoint: "a"}
#: helpers giving seeds, masks and counts: no tangent
_NO_TANGENT = (rt.ones_like, rt.zeros_like, rt.reduction_count, rt.extremum_mask,
               rt.nan_extremum_mask, rt.trip_count, rt.tangent_size, rt.basis_tangent,
               rt.jacobian_rows)
#: helpers giving a number
_SCALAR_HELPERS = (rt.reduction_count, rt.trip_count, rt.tangent_size)
#: the forward spellings of reductions in gradient code: ``rt.sum(x, axis, keepdims)``
_FORWARD_REDUCTIONS = (rt.sum, rt.mean)
#: helpers whose result has the rank of one operand -> that operand's index
_SHAPED_LIKE = {**{helper: 1 for helper in _ADJOINT_HELPERS}, rt.ones_like: 0,
                rt.zeros_like: 0, rt.extremum_mask: 0, rt.nan_extremum_mask: 0,
                rt.basis_tangent: 0, rt.spread_sum: 1, rt.sort_adjoint: 1}

# ---------------------------------------------------------------- rules for vmap's batched
# forms (api/vmap_jacobian.py: a vectorised function's forward sweep moves its mapped axes
# and contracts batched vectors by einsum)

def _moveaxis(sweep, op, bound):
    """``np.moveaxis(x, source, destination)`` of a batch: both shifted past the
    directions (negative axes count from the end, as they are)."""
    x = next(iter(bound.values()))
    rank = sweep.rank(x)
    source, destination = (_const(op, bound, n) for n in ("source", "destination"))
    if not all(isinstance(a, int) or (isinstance(a, tuple) and
                                      all(isinstance(i, int) for i in a))
               for a in (source, destination)):
        sweep.refuse(f"{_name(op)} with axes not known while building", op.origin)
    sweep.ndims.setdefault(op.targets[0], rank)
    return _parse(f"np.moveaxis({sweep.of[x.name]}, {_shifted(source, rank)!r}, "
                  f"{_shifted(destination, rank)!r})")


def _einsum(sweep, op):
    """``np.einsum(spec, a, b...)`` with an explicit ``->`` and no ``...``, known while
    building (its result's rank: the output's letters, ``learn_rank``): one term
    per active operand, its batch under a letter the spec does not use, first in that
    operand and in the result; of two operands ``rt.einsum`` (one BLAS product where
    the contraction is one, as the forward's call: ht's ``"vk,Zbjk->Zbvj"`` on a
    (26, 22, 4, 4) batch is a (544, 4) @ (4, 2288) product, where ``np.einsum`` runs
    its own unblocked loop)."""
    spec = op.args[0].value if op.args and isinstance(op.args[0], Const) else None
    if op.kwargs or not isinstance(spec, str) or "->" not in spec or "..." in spec:
        sweep.refuse(f"{_name(op)} without a subscripts string with '->' (and no '...')",
                     op.origin)
    inputs, output = spec.replace(" ", "").split("->")
    subscripts = inputs.split(",")
    letter = next((c for c in "ZYXWVUTSRQPONMLKJIHGFEDCBAzyxwvutsrqponmlkjihgfedcba"
                   if c not in spec), None)
    if letter is None or len(subscripts) != len(op.args) - 1:
        sweep.refuse(f"{_name(op)} of these subscripts has no batched rule", op.origin)
    terms = []
    contract = "rt.einsum" if len(subscripts) == 2 else "np.einsum"   # BLAS where it can
    for k, atom in enumerate(op.args[1:]):
        if not sweep.is_active(atom):
            continue
        parts = [letter + sub if i == k else sub for i, sub in enumerate(subscripts)]
        operands = [sweep.of[a.name] if i == k else atom_text(a)
                    for i, a in enumerate(op.args[1:])]
        batched = ",".join(parts) + "->" + letter + output
        terms.append(_parse(f"{contract}({batched!r}, {', '.join(operands)})"))
    sweep.ndims.setdefault(op.targets[0], len(output))
    return sum_terms(terms) if terms else None


_OPTIONS[np.moveaxis] = ("source", "destination")
#: reductions whose result's rank ``learn_rank`` reads from ``axis`` and ``keepdims``
_NUMPY_REDUCTIONS = (np.sum, np.mean, np.max, np.min, np.amax, np.amin, np.prod)

_LINEAR = {np.sum: _reduce, np.mean: _reduce, np.transpose: _transpose,
           np.swapaxes: _transpose, np.stack: _join, np.concatenate: _join,
           np.moveaxis: _moveaxis, np.cumsum: _cumsum, prims.method("cumsum"): _cumsum}


class _BatchBroadcast(gast.NodeTransformer):
    """``rt.broadcast_like(e, ans)`` -> ``rt.broadcast_batch(e, ans)``."""

    def visit_Call(self, node):
        self.generic_visit(node)
        if is_broadcast_like(node):
            node.func.attr = "broadcast_batch"
        return node


# ---------------------------------------------------------------- vmap's indexed rows
# (batch/indexing.py: a mapped index is vectorised as x[np.arange(n)[:, None], idx], an
# index of integer arrays next to each other; their tangent x_dot[:, rows, idx] keeps the
# directions first)

def _learn_index(sweep, op, target, first):
    """``np.arange(n)`` of numbers, and an item of one (``np.arange(n)[:, None]``), known
    as integer index arrays (``_index_array``), whether or not their rank was known
    already (a traced run's, a constant's)."""
    if op.primitive == np.arange:
        _index_array(sweep, op, target)             # np.arange(n): an index (vmap's rows)
    elif op.primitive == prims.GETITEM and isinstance(first, Var) and \
            first.name in sweep.int_arrays and first.name not in sweep.active:
        sweep.int_arrays.add(target)


def _index_array(sweep, op, target):
    """Learn ``np.arange(...)`` of numbers as a rank-1 integer array (an index); False
    where it is not one (keywords, an array argument)."""
    if op.kwargs or not op.args or any(sweep.known_rank(a) != 0 for a in op.args):
        return False
    sweep.ndims[target] = 1
    sweep.int_arrays.add(target)
    return True


def _several_arrays(sweep, items, advanced, one_array, arrays):
    """The broadcast rank of an index's integer arrays where a tangent's index (``:``
    first) keeps the directions first: several arrays, each known to hold integers and
    of known rank, next to each other (with the index's numbers); else None (the one-
    array rule, or refused)."""
    if not one_array or arrays < 2 or \
            advanced != list(range(advanced[0], advanced[-1] + 1)):
        return None
    ranks = []
    for at in advanced:
        item = items[at]
        if sweep.scalar_index(item):
            continue
        name = getattr(item, "id", None)
        dtype, ndim = sweep.lowered.param_types.get(name, (None, None))
        if name in sweep.int_arrays and sweep.ndims.get(name) is not None:
            ranks.append(sweep.ndims[name])
        elif dtype is not None and dtype.kind in "iu":
            ranks.append(ndim)
        else:
            return None
    return max(ranks)
