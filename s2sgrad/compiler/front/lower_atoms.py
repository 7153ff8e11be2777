"""Atoms in generated code, and values captured from outside the function: arrays
read from globals, closures and Cell attributes, and objects that have no literal
form, become extra arguments of the generated function (``FreeValue``)."""
import gast
import numpy as np

from ..analysis.shapes import unit_dimensions
from ..ir import Const, FreeValue, Var
from . import literals
from .lower_state import identifier


class Atoms:
    """Atoms -> gast, captured objects -> atoms.  Writes the captured values into
    ``state`` (a ``LoweringState``: ``free``, ``paths``, ``names``) and what is known of
    a captured array into ``types`` (a ``TypeInfo``)."""

    def __init__(self, state, types):
        self.state = state
        self.types = types

    @property
    def names(self):
        """The name allocator (``literals.atom_node`` imports names through it)."""
        return self.state.names

    def capture(self, obj, path=None, source=None):
        """The name of the extra argument that passes ``obj`` (read from outside) to the
        generated function, registered once per object (``self.state.free``).  It is named after
        a Parameter's own name, else ``path`` (how the function reached it), else the
        path recorded for it, its ``__name__`` or its type; an array's dtype, rank and
        dimensions of length 1 are recorded as known (the code is specialised on them).
        ``source``: where an ndarray was read (``guards``), read again at each call; an
        array reached in two ways is passed as the one object both must stay."""
        key = id(obj)
        if key in self.state.free:
            self.pin(self.state.free[key], source)
        else:
            path = path or self.state.paths.get(key) or getattr(obj, "__name__", None) or \
                type(obj).__name__
            array = literals.is_array_like(obj)
            label = getattr(obj, "name", None) if array else None   # a Parameter's name
            label = label if isinstance(label, str) and "#" not in label else path
            name = self.state.names.variable(identifier(label))
            self.state.free_objects.append(obj)   # keeps the object alive while its id is a key
            if not array:
                self.state.free[key] = FreeValue(name, obj, path)
                return name
            data = np.asarray(obj)
            source = source if type(obj) is np.ndarray else None
            self.state.free[key] = FreeValue(name, obj, path, unit_dimensions(data), source)
            self.types.param_types[name] = (data.dtype, data.ndim)
            self.types.ndims[name] = data.ndim
            self.types.shapes.argument(name, data.ndim, unit_dimensions(data))
            if data.dtype.kind == "f":
                self.types.dtypes[name] = data.dtype
        return self.state.free[key].name

    def pin(self, free, source):
        """``free`` (an array already passed in) was reached again from ``source``: the
        code passes one value for both, so each source must keep giving that object."""
        if free.source is not None and (source is None or source.key != free.source.key):
            self.state.guards.same_object(free.source, free.obj)
            free.source = None
        if source is not None and (free.source is None or source.key != free.source.key):
            self.state.guards.same_object(source, free.obj)

    def const_or_free(self, obj, path, source=None):
        """An atom for an object read from outside (from ``source``, a ``guards`` source,
        when known): arrays and Tensors become free arguments (Vars); everything else is
        a Const."""
        if literals.is_array_like(obj):
            return Var(self.capture(obj, path, source))
        return Const(obj)

    def call_expr(self, func, args, kwargs):
        """``func(*args, **kwargs)`` as a gast Call on atoms."""
        return gast.Call(func=func, args=[self.atom_node(a) for a in args],
                         keywords=[gast.keyword(arg=k, value=self.atom_node(v))
                                   for k, v in kwargs.items()])

    def atom_node(self, atom):
        """The gast expression that reads an atom in generated code (``literals.atom_node``,
        capturing what has no literal form)."""
        return literals.atom_node(atom, self)
