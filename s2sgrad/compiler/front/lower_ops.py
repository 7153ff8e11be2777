"""Appending one Op (``Emitter``): its rule, reuse of a repeated pure operation (common
subexpressions), view tracking, and what is known of its result (rank, dtype, int);
and the Ops lowering makes itself (integer arithmetic on loop bounds, the copies
that merge branches and carry loop values)."""
import operator

import gast
import numpy as np

from ... import primitives as prims
from ... import runtime as rt
from ...rules import lookup
from ..analysis.typeinfo import INTEGER_OPS, basic_index
from ..ir import Const, Op, Seq, Var
from ..syntax.source import unsupported
from . import literals


#: primitives never reused: effects, run-time objects, fresh containers
NOT_REUSED = {prims.EFFECT, prims.OPAQUE, prims.LIST, prims.COPY}


class Emitter:
    """Builds Ops into ``state.ops`` (a ``LoweringState``); records what is known of
    each result in ``types`` (``TypeInfo``) and what memory it shares in ``aliases``
    (``AliasTracking``), which refuses reads of stale values; writes operands with
    ``atoms`` (``Atoms``)."""

    def __init__(self, state, types, aliases, atoms):
        self.state = state
        self.types = types
        self.aliases = aliases
        self.atoms = atoms

    def emit(self, frame, node, prim, args, kwargs, expr, hint, custom=None):
        """Append an Op computing ``expr``; returns the Var it assigns."""
        self.aliases.check_fresh(frame, node, list(args) + list(kwargs.values()))
        self.aliases.check_call(frame, node, prim, args, kwargs)
        rule = lookup(prim) if custom is None else None
        if custom is None and _integer_result(prim, args, kwargs):
            rule = lookup(prims.INTEGER_DTYPE)   # piecewise constant: it carries no gradient
        key = _cse_key(prim, args, kwargs) if rule is not None and custom is None else None
        if key is not None and key in self.state.cse:
            return self.state.cse[key]      # the same pure operation on the same values: reuse it
        name = self.state.names.variable(hint) if hint else \
            self.state.names.temp(expr, self.state.words.get(node))
        bind_error = None
        if rule is not None and rule.differentiable:
            try:
                rule.bind(args, kwargs)
            except TypeError as exc:   # a form of the call the rule does not cover
                rule, bind_error = None, f"s2sgrad's rule takes {rule.signature}: {exc}"
        op = Op((name,), prim, tuple(args), dict(kwargs), expr, frame.location(node), rule,
                custom, bind_error=bind_error)
        if prim == prims.GETITEM:
            base, index = args
            op.basic_index = basic_index(index, self.types.int_vars)
            op.list_base = isinstance(base, Var) and base.name in self.types.lists
            if op.list_base and is_slice(index):
                self.list_slice(frame, node, name, base)
        self.state.ops.append(op)
        self.state.producers[name] = prim
        if rule is not None and rule.tuple_result:
            self.types.lists.add(name)   # read by index like a list; its adjoint is a list
            self.types.tuples.add(name)  # updated by rt.item_added (Numba gives many a tuple)
        self.aliases.record_memory(name, prim, args, kwargs)
        if prim == prims.GETITEM:
            self.item_structure(name, *args)
        # a tuple (divmod's, eigh's...) has no rank, shape or dtype of its own
        tuple_valued = name in self.types.tuples or (isinstance(prim, np.ufunc) and prim.nout > 1)
        ndim = None if tuple_valued else self.types.infer_ndim(prim, args, kwargs)
        if ndim is not None:
            self.types.ndims[name] = ndim
        shape = None if tuple_valued else self.types.infer_shape(prim, args, kwargs,
                                                                 self.state.nesting == 0)
        if shape is not None:
            self.types.shapes.of[name] = shape
            self.types.ndims.setdefault(name, len(shape))
        if prim == prims.GETITEM and self.state.producers.get(getattr(args[0], "name", None)) == \
                prims.SHAPE and isinstance(args[1], Const) and type(args[1].value) is int:
            self.types.int_vars.add(name)      # x.shape[k]: a Python int
            self.types.ndims[name] = 0
            dims = self.types.shapes.tuples.get(args[0].name)
            if dims is not None and -len(dims) <= args[1].value < len(dims):
                self.types.shapes.ints[name] = dims[args[1].value]
        if prim is len and len(args) == 1 and isinstance(args[0], Var) and not kwargs and \
                args[0].name not in self.types.lists:
            dims = self.types.shape_of(args[0])    # len(x) of an array: x.shape[0]
            if dims:
                self.types.int_vars.add(name)
                self.types.ndims[name] = 0
                self.types.shapes.ints[name] = dims[0]
        if prim is rt.section_length:          # np.split's pieces' length: an int
            self.types.int_vars.add(name)
            self.types.ndims[name] = 0
        if prim == prims.SHAPE and isinstance(args[0], Var) and not kwargs:
            if self.types.shape_of(args[0]) is not None:
                self.types.shapes.tuples[name] = self.types.shape_of(args[0])
        dtype = None if tuple_valued else self.types.infer_dtype(prim, args, kwargs)
        if dtype is not None:
            self.types.dtypes[name] = dtype
        if prim in INTEGER_OPS and all(self.types.is_int(a) for a in args):
            self.types.int_vars.add(name)
            self.types.ndims[name] = 0
        if key is not None and (self.types.ndims.get(name) == 0 or name in self.types.int_vars):
            # scalars only: an array result could be updated in place
            self.state.cse[key] = Var(name)
        return Var(name)

    def declare_tuple(self, name, structure):
        """``name`` holds a tuple nested as ``structure`` (a tuple of children, None for
        an array): read by index like a list, its adjoint a tuple (``rt.item_added``)."""
        if isinstance(structure, tuple):
            self.types.lists.add(name)
            self.types.tuples.add(name)
            self.types.structures[name] = structure

    def _same_sequence(self, target, source):
        """``target`` holds the list or tuple ``source`` holds (a loop-carried copy)."""
        self.types.lists.add(target)
        if source in self.types.tuples:
            self.types.tuples.add(target)
            if source in self.types.structures:
                self.types.structures[target] = self.types.structures[source]
        ranks = self.aliases.item_ranks
        if source in ranks and target not in ranks:
            ranks[target] = ranks[source]

    def list_slice(self, frame, node, name, base):
        """``xs[a:b:c]`` of a run-time list is a list (of the same items): read by index
        and looped over with ``len``; its adjoint is a list added item by item into the
        sliced positions of the list's adjoint.  A tuple result's slice is refused."""
        if base.name in self.types.tuples:
            raise unsupported(frame, node, "a slice of a tuple a call returned",
                              "read its items by constant index: t[0], t[1]")
        self.types.lists.add(name)
        ranks = self.aliases.item_ranks
        if base.name in ranks:
            ranks[name] = ranks[base.name]

    def item_structure(self, name, base, index):
        """An item read at a constant index from a declared tuple is declared as its
        structure says."""
        structure = self.types.structures.get(getattr(base, "name", None))
        if structure is not None and isinstance(index, Const) and type(index.value) is int \
                and -len(structure) <= index.value < len(structure):
            self.declare_tuple(name, structure[index.value])

    def emit_getitem(self, frame, node, value, index, hint):
        expr = gast.Subscript(value=self.atoms.atom_node(value), slice=self.atoms.atom_node(index),
                              ctx=gast.Load())
        return self.emit(frame, node, prims.GETITEM, (value, index), {}, expr, hint)

    def int_arith(self, frame, node, op, a, b):
        """``a <op> b`` on integers (loop bounds): folded when both are constants, else an
        Op whose result is known to be an int."""
        if isinstance(a, Const) and isinstance(b, Const):
            return Const(op(a.value, b.value))
        if op is operator.add and isinstance(b, Const) and b.value == 0:
            return a
        if op is operator.mul and isinstance(b, Const) and b.value == 1:
            return a
        if op is operator.floordiv and isinstance(b, Const) and b.value == 1:
            return a
        binop = {operator.add: gast.Add, operator.sub: gast.Sub, operator.mul: gast.Mult,
                 operator.floordiv: gast.FloorDiv}[op]()
        result = self.emit(frame, node, op, (a, b), {}, gast.BinOp(
            left=self.atoms.atom_node(a), op=binop, right=self.atoms.atom_node(b)), None)
        self.types.int_vars.add(result.name)
        self.types.ndims[result.name] = 0
        return result

    def assign_op(self, target, atom, location):
        """``target = atom``: a copy that passes the gradient through."""
        if self.types.ndim_of(atom) is not None and target not in self.types.ndims:
            self.types.ndims[target] = self.types.ndim_of(atom)
        if isinstance(atom, Var) and atom.name in self.types.dtypes and \
                target not in self.types.dtypes:
            self.types.dtypes[target] = self.types.dtypes[atom.name]
        self.aliases.record_alias(target, atom)   # the same array in generated code
        if isinstance(atom, Var) and atom.name in self.types.lists:
            self._same_sequence(target, atom.name)   # a list's copy: its adjoint a list too
        return Op((target,), prims.ASSIGN, (atom,), {}, self.atoms.atom_node(atom), location,
                  lookup(prims.ASSIGN))


def is_slice(index):
    """True for a slice index (``a:b:c``, constant or made at run time)."""
    return isinstance(index, Seq) and index.kind == "slice" or (
        isinstance(index, Const) and isinstance(index.value, slice))


def _cse_key(prim, args, kwargs):
    """A key that identifies a pure operation on the same values, or None."""
    if isinstance(prim, str) and prim in NOT_REUSED:
        return None
    try:
        key = (prim if isinstance(prim, str) else id(prim),
               tuple(_atom_key(a) for a in args),
               tuple(sorted((k, _atom_key(v)) for k, v in kwargs.items())))
        hash(key)
        return key
    except TypeError:
        return None


def _atom_key(atom):
    if isinstance(atom, Var):
        return ("v", atom.name)
    if isinstance(atom, Seq):
        return ("s", atom.kind, tuple(_atom_key(a) for a in atom.items))
    if isinstance(atom, Const):
        value = atom.value
        if literals.is_literal(value) and not isinstance(value, float) or isinstance(
                value, float) and value == value:
            return ("c", type(value).__name__, value)
        return ("o", id(value))
    raise TypeError(atom)


def _integer_result(prim, args, kwargs):
    """True for a conversion to an integer or boolean dtype known while building:
    ``x.astype(int)``, ``np.array(v, dtype=np.int32)``, ``np.sum(x, dtype=int)``."""
    dtype = args[1] if prim == prims.ASTYPE and len(args) > 1 else kwargs.get("dtype")
    if not isinstance(dtype, Const) or dtype.value is None:
        return False
    try:
        return np.dtype(literals.as_numpy_dtype(dtype.value)).kind in "biu"
    except TypeError:
        return False
