"""MindSpore-style data types backed by numpy dtypes.

Each ``DType`` (``float32``, ``int64``, ``bool_`` ...) prints like MindSpore:
``str`` gives ``Float32``, ``Int64``, ``Bool``; ``repr`` gives ``mindspore.float32``
(a dtype inside a tuple or a list shows as the reference shows it).  It behaves like
the numpy dtype it wraps: ``np.dtype(float32)`` and ``np.zeros(3, dtype=float32)`` work, and a DType
compares equal to ``np.float32``, ``np.dtype('float32')`` and ``'float32'``.
"""
import numpy as np

__all__ = ["DType", "float16", "float32", "float64", "int8", "int16", "int32",
           "int64", "uint8", "uint16", "uint32", "uint64", "bool_",
           "dtype_to_numpy"]


class DType:
    """A named data type wrapping one numpy dtype.

    Attributes:
        name: the MindSpore name, e.g. ``'Float32'`` (what repr/str print).
        np: the numpy dtype.
        dtype: the same numpy dtype (lets numpy accept a DType as a dtype).
    """

    __slots__ = ("name", "np", "dtype")

    _by_numpy = {}          # np.dtype -> DType, filled by _register

    def __init__(self, name, np_dtype):
        self.name = name
        self.np = np.dtype(np_dtype)
        self.dtype = self.np

    @classmethod
    def _register(cls, name, np_dtype):
        """Create the DType ``name`` for ``np_dtype`` and remember it."""
        dt = cls(name, np_dtype)
        cls._by_numpy[dt.np] = dt
        return dt

    @classmethod
    def from_numpy(cls, np_dtype):
        """Give the DType for a numpy dtype (or anything np.dtype accepts).

        Types with no predefined DType (e.g. complex64) get one named after
        numpy's name, capitalised (``Complex64``), created once.
        """
        key = np.dtype(np_dtype)
        found = cls._by_numpy.get(key)
        if found is None:
            found = cls._register(key.name.capitalize(), key)
        return found

    def __str__(self):
        return self.name

    def __repr__(self):
        """``mindspore.float32`` style: the module-level name (``s2sgrad.float32``)
        under MindSpore's spelling, as the reference's repr shows it."""
        return f"mindspore.{self.np.name if self.np != np.bool_ else 'bool_'}"

    def __eq__(self, other):
        if isinstance(other, DType):
            return self.np == other.np
        if isinstance(other, str) and other == self.name:
            return True
        try:
            return self.np == np.dtype(other)
        except (TypeError, ValueError):
            return False

    def __ne__(self, other):
        return not self.__eq__(other)

    def __hash__(self):
        return hash(self.np)

    def __reduce__(self):
        return (DType.from_numpy, (self.np,))


float16 = DType._register("Float16", np.float16)
float32 = DType._register("Float32", np.float32)
float64 = DType._register("Float64", np.float64)
int8 = DType._register("Int8", np.int8)
int16 = DType._register("Int16", np.int16)
int32 = DType._register("Int32", np.int32)
int64 = DType._register("Int64", np.int64)
uint8 = DType._register("UInt8", np.uint8)
uint16 = DType._register("UInt16", np.uint16)
uint32 = DType._register("UInt32", np.uint32)
uint64 = DType._register("UInt64", np.uint64)
bool_ = DType._register("Bool", np.bool_)


def dtype_to_numpy(x):
    """Convert a dtype given in any accepted form to a numpy dtype.

    Takes a DType, a numpy dtype, a numpy scalar type (``np.float32``), a
    python type (``float``, ``int``, ``bool``), a string (``'float32'``) or
    None. Gives an ``np.dtype``; None stays None. Anything numpy cannot read
    as a dtype raises TypeError.
    """
    if x is None:
        return None
    if isinstance(x, DType):
        return x.np
    if isinstance(x, str):
        for dt in DType._by_numpy.values():
            if dt.name == x:
                return dt.np
    try:
        return np.dtype(x)
    except TypeError:
        raise TypeError(
            f"dtype_to_numpy: {x!r} is not a data type; give an s2sgrad DType "
            f"(e.g. s2sgrad.float32), a numpy dtype or a dtype name") from None
