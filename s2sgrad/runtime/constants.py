"""``rt.Constants``: the values a gradient computes from sizes and plain numbers only,
computed once per value of them (``compiler/optimize/constants.py`` writes the calls).

``Constants(fn)`` wraps the generated function of those values; ``constants(*inputs)``
gives ``fn(*inputs)``, from a small table keyed by the inputs exactly (a number by its
type and bits, so ``0.0`` and ``-0.0``, ``1`` and ``True`` differ; a shape by its
sizes).  The arrays it hands out are read-only: the generated code never writes into
them, and anything that tried would fail loudly rather than change what later calls
read.  An input that is not an immutable number, string, None or tuple of them (a 0-d
array: its value could change in place) is not looked up: ``fn`` runs afresh.
"""
import struct

import numpy as np

__all__ = ["Constants"]

#: how many input values a table keeps (the oldest goes first)
KEPT = 8


class Constants:
    """Compute-once table of one generated constants function (see the module doc)."""

    def __init__(self, fn):
        self.fn = fn
        self.table = {}
        self.computed = 0           # how many times ``fn`` ran (a test reads it)

    def __call__(self, *inputs):
        key = _key(inputs)
        if key is None:
            self.computed += 1
            return self.fn(*inputs)
        values = self.table.get(key)
        if values is None:
            self.computed += 1
            values = _read_only(self.fn(*inputs))
            if len(self.table) >= KEPT:
                del self.table[next(iter(self.table))]
            self.table[key] = values
        return values


def _key(value):
    """An exact, hashable key for ``value``, or None when it is not immutable."""
    if isinstance(value, tuple):
        parts = tuple(_key(v) for v in value)
        return None if any(p is None for p in parts) else ("tuple", parts)
    if value is None or isinstance(value, (bool, int, str)):
        return (type(value), value)
    if isinstance(value, float):
        return (type(value), struct.pack("<d", value))
    if isinstance(value, complex):
        return (type(value), struct.pack("<dd", value.real, value.imag))
    if isinstance(value, np.generic):
        return (type(value), value.tobytes())
    return None


def _read_only(values):
    items = values if isinstance(values, tuple) else (values,)
    for item in items:
        if isinstance(item, np.ndarray):
            item.setflags(write=False)
    return values
