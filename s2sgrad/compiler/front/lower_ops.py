"""Appending one Op: its rule, reuse of a repeated pure operation (common
subexpressions), view tracking, and what is known of its result (rank, dtype, int)."""
import gast
import numpy as np

from ... import primitives as prims
from ...rules import lookup
from ..analysis.typeinfo import INTEGER_OPS, basic_index
from ..ir import Const, Op, Seq, Var
from . import literals
from .lower_state import LoweringState


#: primitives never reused: effects, run-time objects, fresh containers
NOT_REUSED = {prims.EFFECT, prims.OPAQUE, prims.LIST, prims.COPY}


class OpEmission(LoweringState):
    """Appends Ops to ``self.ops`` (a LoweringState mixin)."""

    def emit(self, frame, node, prim, args, kwargs, expr, hint, custom=None):
        """Append an Op computing ``expr``; returns the Var it assigns."""
        self.check_fresh(frame, node, list(args) + list(kwargs.values()))
        self.check_call(frame, node, prim, args, kwargs)
        rule = lookup(prim) if custom is None else None
        if custom is None and _integer_result(prim, args, kwargs):
            rule = lookup(prims.INTEGER_DTYPE)   # piecewise constant: it carries no gradient
        key = _cse_key(prim, args, kwargs) if rule is not None and custom is None else None
        if key is not None and key in self.cse:
            return self.cse[key]      # the same pure operation on the same values: reuse it
        name = self.names.variable(hint) if hint else self.names.temp(expr, self.words.get(node))
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
            op.basic_index = basic_index(index, self.int_vars)
            op.list_base = isinstance(base, Var) and base.name in self.lists
        self.ops.append(op)
        self.producers[name] = prim
        if rule is not None and rule.tuple_result:
            self.lists.add(name)   # read by index like a list; its adjoint is a list
            self.tuples.add(name)  # updated by rt.item_added (Numba gives many a tuple)
        self.record_memory(name, prim, args, kwargs)
        # a tuple (divmod's, eigh's...) has no rank, shape or dtype of its own
        tuple_valued = name in self.tuples or (isinstance(prim, np.ufunc) and prim.nout > 1)
        ndim = None if tuple_valued else self.infer_ndim(prim, args, kwargs)
        if ndim is not None:
            self.ndims[name] = ndim
        shape = None if tuple_valued else self.infer_shape(prim, args, kwargs)
        if shape is not None:
            self.shapes.of[name] = shape
            self.ndims.setdefault(name, len(shape))
        if prim == prims.GETITEM and self.producers.get(getattr(args[0], "name", None)) == \
                prims.SHAPE and isinstance(args[1], Const) and type(args[1].value) is int:
            self.int_vars.add(name)      # x.shape[k]: a Python int
            self.ndims[name] = 0
            dims = self.shapes.tuples.get(args[0].name)
            if dims is not None and -len(dims) <= args[1].value < len(dims):
                self.shapes.ints[name] = dims[args[1].value]
        if prim == prims.SHAPE and isinstance(args[0], Var) and not kwargs:
            if self.shape_of(args[0]) is not None:
                self.shapes.tuples[name] = self.shape_of(args[0])
        dtype = None if tuple_valued else self.infer_dtype(prim, args, kwargs)
        if dtype is not None:
            self.dtypes[name] = dtype
        if prim in INTEGER_OPS and all(self.is_int(a) for a in args):
            self.int_vars.add(name)
            self.ndims[name] = 0
        if key is not None and (self.ndims.get(name) == 0 or name in self.int_vars):
            self.cse[key] = Var(name)   # scalars only: an array result could be updated in place
        return Var(name)

    def emit_getitem(self, frame, node, value, index, hint):
        expr = gast.Subscript(value=self.atom_node(value), slice=self.atom_node(index),
                              ctx=gast.Load())
        return self.emit(frame, node, prims.GETITEM, (value, index), {}, expr, hint)


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
