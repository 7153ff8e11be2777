"""``SequentialCell``: an ordered container that feeds each cell's output to the next."""
from collections import OrderedDict

from .cell import Cell


def _check_cell(cell, where):
    """Raise TypeError unless ``cell`` is a Cell; ``where`` names the slot."""
    if not isinstance(cell, Cell):
        raise TypeError(f"SequentialCell {where} must be a Cell, but got "
                        f"{type(cell).__name__}: {cell!r}")


class SequentialCell(Cell):
    """Run sub-cells in order: ``SequentialCell(*cells)``, ``SequentialCell([cells])``
    or ``SequentialCell(OrderedDict(name=cell, ...))`` (keys become the names).

    Children are named ``'0'``, ``'1'``, ... unless given by the dict. Supports
    ``len``, int and negative indexing, slicing (a new SequentialCell) and
    ``append``. An empty SequentialCell is the identity.
    """

    def __init__(self, *args):
        """Register the cells given (see the class docstring)."""
        super().__init__()
        self.cell_list = []
        if len(args) == 1 and isinstance(args[0], dict):
            items = list(args[0].items())
            for key, _ in items:
                if not isinstance(key, str):
                    raise TypeError(f"SequentialCell dict keys must be str, but got "
                                    f"{type(key).__name__}: {key!r}")
        else:
            cells = args[0] if len(args) == 1 and isinstance(args[0], list) else args
            items = [(str(i), cell) for i, cell in enumerate(cells)]
        for key, cell in items:
            _check_cell(cell, f"element '{key}'")
            self.insert_child_to_cell(key, cell)
        self._sync()

    def _sync(self):
        """Refresh ``cell_list`` (the cells ``construct`` runs) from the registry."""
        self.cell_list = list(self._cells.values())

    def __len__(self):
        return len(self._cells)

    def __getitem__(self, index):
        """An int (negative too) gives that cell; a slice gives a new SequentialCell."""
        if isinstance(index, slice):
            return SequentialCell(OrderedDict(list(self._cells.items())[index]))
        return self.cell_list[self._position(index)]

    def __setitem__(self, index, cell):
        """Replace the cell at int ``index``, keeping its name."""
        _check_cell(cell, f"item {index}")
        key = list(self._cells)[self._position(index)]
        self.insert_child_to_cell(key, cell)
        self._sync()

    def _position(self, index):
        """Turn an int index (negative allowed) into a position; IndexError if out of range."""
        if isinstance(index, bool) or not isinstance(index, int):
            raise TypeError(f"SequentialCell indices must be int or slice, but got "
                            f"{type(index).__name__}")
        if not -len(self) <= index < len(self):
            raise IndexError(f"index {index} is out of range for SequentialCell of length {len(self)}")
        return index % len(self)

    def append(self, cell):
        """Add ``cell`` at the end, named ``str(len(self))``."""
        _check_cell(cell, "append argument")
        self.insert_child_to_cell(str(len(self)), cell)
        self._sync()

    def construct(self, x):
        for cell in self.cell_list:
            x = cell(x)
        return x
