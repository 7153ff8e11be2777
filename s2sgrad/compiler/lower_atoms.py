"""Atoms in generated code, and values captured from outside the function: arrays
read from globals, closures and Cell attributes become extra arguments (``FreeValue``),
everything else a constant."""
import gast
import numpy as np

from ..errors import UnsupportedConstructError
from . import literals
from .ir import Const, DictAtom, FreeValue, Seq, Var
from .lower_state import LoweringState, identifier
from .shapes import unit_dimensions
from .syntax import name_node


class AtomLowering(LoweringState):
    """Atoms -> gast, captured objects -> atoms (a LoweringState mixin)."""

    def const_or_free(self, obj, path):
        """An atom for an object read from outside: arrays and Tensors become free
        arguments (Vars); everything else is a Const."""
        if literals.is_array_like(obj):
            key = id(obj)
            if key not in self.free:
                label = getattr(obj, "name", None)   # a Parameter's dotted name, if it has one
                label = label if isinstance(label, str) and "#" not in label else path
                name = self.names.variable(identifier(label))
                data = np.asarray(obj)
                self.free[key] = FreeValue(name, obj, path, unit_dimensions(data))
                self.param_types[name] = (data.dtype, data.ndim)
                self.ndims[name] = data.ndim
                self.shapes.argument(name, data.ndim, unit_dimensions(data))
                if data.dtype.kind == "f":
                    self.dtypes[name] = data.dtype
                self.free_objects.append(obj)
            self.names.claim(self.free[key].name)   # kept across a discarded reverse attempt
            return Var(self.free[key].name)
        return Const(obj)

    def call_expr(self, func, args, kwargs):
        """``func(*args, **kwargs)`` as a gast Call on atoms."""
        return gast.Call(func=func, args=[self.atom_node(a) for a in args],
                         keywords=[gast.keyword(arg=k, value=self.atom_node(v))
                                   for k, v in kwargs.items()])

    def atom_node(self, atom):
        """The gast expression that reads an atom in generated code."""
        if isinstance(atom, DictAtom):
            raise UnsupportedConstructError(
                "a dict used as a whole value (s2sgrad reads dicts by constant keys only)",
                None, None, "read its items with constant keys (d['w']) and pass or return "
                "those")
        if isinstance(atom, Var):
            return name_node(atom.name)
        if isinstance(atom, Seq):
            if atom.kind == "slice":
                return gast.Call(func=name_node("slice"),
                                 args=[self.atom_node(a) for a in atom.items], keywords=[])
            nodes = [self.atom_node(a) for a in atom.items]
            if atom.kind == "list":
                return gast.List(elts=nodes, ctx=gast.Load())
            return gast.Tuple(elts=nodes, ctx=gast.Load())
        return literals.literal_node(atom.value, self)
