"""``Cell``: the base class of every layer and network.

A Cell registers the sub-cells and Parameters assigned to its attributes, in
assignment order, and ``__call__`` runs its ``construct``. Parameters of a
sub-cell are renamed to their dotted path (``dense.weight``) when the sub-cell
is attached; a Cell's own Parameters keep the name they were given.
"""
from collections import OrderedDict

from ..tensor import Parameter


class Cell:
    """Base class of layers and networks.

    Subclasses call ``super().__init__()`` first, assign sub-cells and
    Parameters as attributes, and define ``construct(*inputs)``. A subclass may
    also define ``bprop(self, *inputs, out, dout)`` to give its own backward
    rule (see the semantics doc); ``internal_params`` lists the Parameters that
    such a bprop differentiates.
    """

    def __init__(self, auto_prefix=True):
        """Set up empty registries; ``auto_prefix`` renames sub-cell Parameters."""
        object.__setattr__(self, "_params", OrderedDict())
        object.__setattr__(self, "_cells", OrderedDict())
        object.__setattr__(self, "_auto_prefix", bool(auto_prefix))
        object.__setattr__(self, "_bprop_debug", False)
        object.__setattr__(self, "training", False)
        object.__setattr__(self, "internal_params", [])

    # ------------------------------------------------------------------
    # attribute registration
    # ------------------------------------------------------------------
    def __setattr__(self, name, value):
        """Register a Cell or Parameter value under ``name``; plain values are
        stored as ordinary attributes (replacing a registered one)."""
        if isinstance(value, (Cell, Parameter)) and "_params" not in self.__dict__:
            raise AttributeError(
                f"cannot assign {type(value).__name__} to '{name}' before "
                f"{type(self).__name__}.__init__ has called super().__init__()")
        if isinstance(value, Parameter):
            self._cells.pop(name, None)
            self.__dict__.pop(name, None)
            self._params[name] = value      # a replaced Parameter keeps its place
        elif isinstance(value, Cell):
            self.insert_child_to_cell(name, value)
        else:
            if "_params" in self.__dict__:
                self._params.pop(name, None)
                self._cells.pop(name, None)
            object.__setattr__(self, name, value)

    def __s2sgrad_attribute_home__(self, name):
        """The dict holding attribute ``name`` (the Cell's own attributes, its Parameters,
        its sub-cells; None when it is none of them): assigning or deleting ``name``
        replaces or removes its entry there, so s2sgrad's check that a gradient's Cell is
        unchanged reads that dict (``s2sgrad/compiler/front/guards.py``)."""
        for home in (self.__dict__, self._params, self._cells):
            if name in home:
                return home
        return None

    def __getattr__(self, name):
        """Find a registered Parameter or sub-cell (called only when normal
        attribute lookup fails)."""
        registry = self.__dict__
        if name in registry.get("_params", ()):
            return registry["_params"][name]
        if name in registry.get("_cells", ()):
            return registry["_cells"][name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __delattr__(self, name):
        """Remove a registered Parameter or sub-cell, or a plain attribute."""
        if name in self._params:
            del self._params[name]
        elif name in self._cells:
            del self._cells[name]
        else:
            object.__delattr__(self, name)

    def insert_child_to_cell(self, child_name, child_cell):
        """Register ``child_cell`` (a Cell) as the sub-cell ``child_name`` (str)
        and rename its Parameters to ``child_name.<path>``."""
        if not isinstance(child_name, str) or not child_name or "." in child_name:
            raise KeyError(f"child cell name must be a non-empty str without '.', got {child_name!r}")
        if not isinstance(child_cell, Cell):
            raise TypeError(f"child cell '{child_name}' must be a Cell, but got "
                            f"{type(child_cell).__name__}")
        self._params.pop(child_name, None)
        self.__dict__.pop(child_name, None)
        self._cells[child_name] = child_cell    # a replaced child keeps its place
        if self._auto_prefix:
            child_cell.update_parameters_name(child_name + ".")

    def update_parameters_name(self, prefix=""):
        """Set ``Parameter.name`` of every Parameter under this cell to
        ``prefix + dotted path``."""
        for path, param in self.parameters_and_names():
            param.name = prefix + path

    # ------------------------------------------------------------------
    # running
    # ------------------------------------------------------------------
    def construct(self, *inputs, **kwargs):
        """The forward computation; subclasses override it."""
        raise NotImplementedError(f"{type(self).__name__} must define construct()")

    def __call__(self, *args, **kwargs):
        """Run ``construct`` on the arguments as given."""
        return self.construct(*args, **kwargs)

    def set_train(self, mode=True):
        """Set ``training`` to ``mode`` on this cell and every sub-cell; returns self."""
        for _, cell in self.cells_and_names():
            object.__setattr__(cell, "training", bool(mode))
        return self

    @property
    def bprop_debug(self):
        """Bool flag kept for compatibility: bprop always runs as Python here."""
        return self._bprop_debug

    @bprop_debug.setter
    def bprop_debug(self, value):
        if not isinstance(value, bool):
            raise TypeError(f"bprop_debug must be bool, but got {type(value).__name__}")
        object.__setattr__(self, "_bprop_debug", value)

    # ------------------------------------------------------------------
    # traversal
    # ------------------------------------------------------------------
    def cells_and_names(self, cells=None, name_prefix=""):
        """Yield ``(dotted_name, cell)``: ``(name_prefix, self)`` first, then
        every descendant depth-first in registration order, each once."""
        seen = cells if cells is not None else set()
        if id(self) in seen:
            return
        seen.add(id(self))
        yield name_prefix, self
        for name, cell in self._cells.items():
            path = f"{name_prefix}.{name}" if name_prefix else name
            yield from cell.cells_and_names(seen, path)

    def name_cells(self):
        """Give an OrderedDict ``{name: cell}`` of the direct sub-cells."""
        return OrderedDict(self._cells)

    def cells(self):
        """Give the direct sub-cells, in registration order."""
        return self.name_cells().values()

    def parameters_and_names(self, name_prefix="", expand=True):
        """Yield ``(dotted_path, Parameter)``: own Parameters first, then each
        sub-cell's (if ``expand``), in registration order, each once."""
        cells = self.cells_and_names(name_prefix=name_prefix) if expand else [(name_prefix, self)]
        seen = set()
        for cell_name, cell in cells:
            for name, param in cell._params.items():
                if id(param) in seen:
                    continue
                seen.add(id(param))
                yield (f"{cell_name}.{name}" if cell_name else name), param

    def get_parameters(self, expand=True):
        """Yield every Parameter (see ``parameters_and_names``)."""
        for _, param in self.parameters_and_names(expand=expand):
            yield param

    def trainable_params(self, recurse=True):
        """Give a list of the Parameters with ``requires_grad=True``."""
        return [p for p in self.get_parameters(expand=recurse) if p.requires_grad]

    def untrainable_params(self, recurse=True):
        """Give a list of the Parameters with ``requires_grad=False``."""
        return [p for p in self.get_parameters(expand=recurse) if not p.requires_grad]

    # ------------------------------------------------------------------
    # printing
    # ------------------------------------------------------------------
    def extend_repr(self):
        """The text between the parentheses of a leaf's repr (override it)."""
        return ""

    def __repr__(self):
        """``Name(extra)`` for a leaf; otherwise one indented line per sub-cell."""
        extra = self.extend_repr()
        lines = [extra] if extra else []
        for name, cell in self._cells.items():
            lines.append(f"({name}): {cell!r}")
        if not self._cells:
            return f"{type(self).__name__}({extra})"
        body = "\n".join(lines).replace("\n", "\n  ")
        return f"{type(self).__name__}(\n  {body}\n)"
