"""Tensor, Parameter and ParameterTuple: MindSpore-style wrappers of numpy arrays.

A ``Tensor`` holds exactly one numpy ndarray (``self._data``). Arithmetic,
comparisons, indexing and numpy functions (``np.exp(t)``, ``np.sum(t)``,
``np.concatenate([t, t])``) unwrap the data, run numpy and wrap ndarray
results back into a plain ``Tensor``. ``np.asarray(t)`` is zero-copy.

A ``Parameter`` is a named, trainable Tensor that owns its storage.
``set_seed`` seeds numpy's global RNG and the module RNG (``module_rng()``) that
initialisers and dropout draw from.
"""
import itertools
import numbers
import re

import numpy as np

from .dtype import DType, dtype_to_numpy

__all__ = ["Tensor", "Parameter", "ParameterTuple", "set_seed", "wrap", "unwrap",
           "no_scalar_widening"]


# --------------------------------------------------------------------------
# random state

_RANDOM_STATE = np.random.RandomState()


def module_rng():
    """Give the module's random generator (a numpy RandomState) that
    ``set_seed`` seeds; initialisers and Dropout2D draw from it."""
    return _RANDOM_STATE


def set_seed(seed):
    """Seed numpy's global RNG and the module RNG with the int ``seed`` (>= 0).

    Raises TypeError for a non-int seed and ValueError for a negative one.
    """
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral):
        raise TypeError(f"set_seed: seed must be an int, got {type(seed).__name__} {seed!r}")
    if seed < 0:
        raise ValueError(f"set_seed: seed must be >= 0, got {seed}")
    np.random.seed(int(seed))
    _RANDOM_STATE.seed(int(seed))


# --------------------------------------------------------------------------
# wrapping and unwrapping

def _wrap_array(arr):
    """Wrap one ndarray (or numpy scalar) in a new plain Tensor, no copy."""
    t = Tensor.__new__(Tensor)
    t._data = arr if type(arr) is np.ndarray else np.asarray(arr)
    return t


def wrap(value):
    """Turn ndarrays and numpy scalars in ``value`` (also inside tuples and
    lists, recursively) into plain Tensors; everything else is kept as is."""
    if isinstance(value, (np.ndarray, np.generic)):
        return _wrap_array(value)
    if isinstance(value, tuple):
        items = [wrap(v) for v in value]
        return type(value)(*items) if hasattr(value, "_fields") else tuple(items)
    if isinstance(value, list):
        return [wrap(v) for v in value]
    return value


def unwrap(value):
    """Turn Tensors in ``value`` (also inside tuples and lists, recursively)
    into their ndarrays (no copy); everything else is kept as is."""
    if isinstance(value, Tensor):
        return value._data
    if isinstance(value, tuple):
        return tuple(unwrap(v) for v in value)
    if isinstance(value, list):
        return [unwrap(v) for v in value]
    return value


def _to_array(input_data, dtype=None):
    """Give the ndarray a Tensor built from ``input_data`` holds.

    Tensors and ndarrays are used without a copy (unless ``dtype`` casts);
    python data (numbers, nested lists) go through np.asarray, and python
    floats become float32 as in MindSpore.
    """
    np_dtype = dtype_to_numpy(dtype)
    if isinstance(input_data, Tensor):
        arr = input_data._data
    elif isinstance(input_data, (np.ndarray, np.generic)):
        arr = np.asarray(input_data)
    elif input_data is None:
        raise TypeError("Tensor: input_data is None; give a number, a (nested) list, "
                        "a numpy array or a Tensor")
    else:
        arr = np.asarray(input_data)
        if np_dtype is None and arr.dtype == np.float64:
            np_dtype = np.dtype(np.float32)
    if arr.dtype == object:
        raise TypeError(f"Tensor: cannot make a numeric tensor from {input_data!r}; "
                        "give numbers of one nesting depth")
    if np_dtype is not None:
        arr = arr.astype(np_dtype, copy=False)
    return arr


def _axis(axis):
    """Numpy form of an axis argument: lists become tuples."""
    return tuple(axis) if isinstance(axis, list) else axis


def _shape_args(shape):
    """``reshape(2, 3)`` and ``reshape((2, 3))`` both give ``(2, 3)``."""
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        return tuple(shape[0])
    return shape


def _keepdims(keepdims, keep_dims):
    """Merge the numpy (keepdims) and MindSpore (keep_dims) spellings."""
    return keepdims if keep_dims is None else keep_dims


# --------------------------------------------------------------------------
# repr, following MindSpore's TensorStringifier (ir/tensor.cc)

_THRESHOLD = 6          # a dimension longer than this is summarised (ndim > 1)
_THRESHOLD_1D = 1000    # a 1-D tensor longer than this is summarised
_EDGE = _THRESHOLD // 2  # items shown at each edge of a summarised dimension
_HASH_RUN = re.compile("#+")


def _element_formatter(np_dtype):
    """Give (format_one, linefeed_every) for elements of ``np_dtype``.

    Floats: scientific, 8 decimals, width 15 (float16: 4 decimals, width 11).
    Bools: right-aligned in width 5. Integers: '#' * len + digits, a
    placeholder that ``_align_ints`` turns into right-alignment.
    """
    if np_dtype.kind == "f":
        width, prec = (11, 4) if np_dtype == np.float16 else (15, 8)
        return (lambda v: "%*.*e" % (width, prec, float(v))), 12
    if np_dtype.kind == "b":
        return (lambda v: "%5s" % ("True" if v else "False")), 12
    if np_dtype.kind in "iu":
        def fmt_int(v):
            s = str(int(v))
            return "#" * len(s) + s
        return fmt_int, 24
    return str, 12


def _format_scalar(value, np_dtype):
    """A 0-d value the way C++ ``ostream << value`` prints it (6 significant digits)."""
    if np_dtype.kind == "f":
        return "%g" % float(value)
    if np_dtype.kind == "b":
        return "True" if value else "False"
    return str(value.item() if hasattr(value, "item") else value)


class _Stringifier:
    """Builds the value part of a Tensor repr, element by element."""

    def __init__(self, arr):
        self.flat = arr.reshape(-1)
        self.shape = arr.shape
        self.ndim = arr.ndim
        self.fmt, self.linefeed = _element_formatter(arr.dtype)
        self.out = []
        self.cursor = 0

    def items(self, start, end):
        """Write elements start..end-1 of the current row."""
        out, fmt, base = self.out, self.fmt, self.cursor
        for i in range(start, min(end, self.flat.size - base)):
            out.append(fmt(self.flat[base + i]))
            if i != end - 1:
                out.append(", ")
            if self.ndim == 1 and end - start > _EDGE and (i + 1) % self.linefeed == 0:
                out.append("\n ")

    def dimension(self, depth):
        """Write the sub-array at ``depth`` that starts at the cursor."""
        out, num = self.out, self.shape[depth]
        out.append("[")
        if depth == self.ndim - 1:
            limit = _THRESHOLD_1D if self.ndim == 1 else _THRESHOLD
            if num > limit:
                self.items(0, _EDGE)
                out.append(" ... ")
                self.items(num - _EDGE, num)
            else:
                self.items(0, num)
            self.cursor += num
        else:
            indent = ",\n" + " " * (depth + 1)
            for i in range(min(_EDGE, num)):
                if i > 0:
                    out.append(indent)
                self.dimension(depth + 1)
            if num > _THRESHOLD:
                out.append(indent + "...")
                self.cursor += int(np.prod(self.shape[depth + 1:])) * (num - _THRESHOLD)
            if num > _EDGE:
                for i in range(min(num - _EDGE, _EDGE)):
                    out.append(indent if (i != 0 or num <= _THRESHOLD) else indent[1:])
                    self.dimension(depth + 1)
        out.append("]")

    def text(self):
        """The finished string; integer placeholders replaced by alignment."""
        self.dimension(0)
        return _align_ints("".join(self.out))


def _align_ints(text):
    """Right-align integers written as '#' * len + digits to the widest one."""
    runs = _HASH_RUN.findall(text)
    if not runs:
        return text
    widest = max(len(r) for r in runs)
    return _HASH_RUN.sub(lambda m: " " * (widest - len(m.group())), text)


def _value_string(arr):
    """MindSpore's string for the values of ``arr`` (no 'Tensor(...)' around)."""
    if arr.size == 0:
        return ""
    if arr.ndim == 0:
        return _format_scalar(arr[()], arr.dtype)
    return _Stringifier(arr).text()


def _tensor_repr(arr, dtype_name):
    """``Tensor(shape=[...], dtype=..., value=...)`` as MindSpore prints it."""
    shape = "[" + ", ".join(str(n) for n in arr.shape) + "]"
    sep = "\n" if arr.ndim > 1 else " "
    return f"Tensor(shape={shape}, dtype={dtype_name}, value={sep}{_value_string(arr)})"


# --------------------------------------------------------------------------
# operators

def no_scalar_widening(result, operands):
    """``result`` as MindSpore types it: Python (and numpy) scalars never widen to Float64.

    Takes a numpy result and the ndarray operands and scalars it was computed from.  When
    numpy made a float64 result but no operand is a float64 array (an int Tensor with a
    Python float, an int64 with a float32 Tensor, an int Tensor divided), gives it as
    float32 (``Tensor([1, 2]) + 1.5`` is Float32); otherwise gives ``result`` unchanged.
    """
    if getattr(result, "dtype", None) != np.float64:
        return result
    if any(isinstance(op, np.ndarray) and op.dtype == np.float64 for op in operands):
        return result
    return result.astype(np.float32)


def _binary(ufunc):
    """Give the (forward, reflected) operator methods that apply ``ufunc``."""
    def forward(self, other):
        other = unwrap(other)
        return _wrap_array(no_scalar_widening(ufunc(self._data, other), (self._data, other)))

    def reflected(self, other):
        other = unwrap(other)
        return _wrap_array(no_scalar_widening(ufunc(other, self._data), (other, self._data)))
    forward.__name__ = reflected.__name__ = ufunc.__name__
    return forward, reflected


def _unary(ufunc):
    """Give the operator method that applies the one-argument ``ufunc``."""
    def method(self):
        return _wrap_array(ufunc(self._data))
    method.__name__ = ufunc.__name__
    return method


_NOT_ARRAY_LIKE = (type(None), str, bytes, dict, set, DType)


class Tensor:
    """An n-dimensional array of one dtype, backed by a numpy ndarray.

    ``Tensor(input_data, dtype=None)``: ``input_data`` is a number, a nested
    list, a numpy array (used without a copy) or a Tensor (its data is shared
    unless ``dtype`` casts). Without ``dtype``: python ints give Int64, python
    floats Float32, bools Bool; numpy arrays keep their dtype.
    """

    __array_priority__ = 1000
    __hash__ = object.__hash__          # hashable by identity; == is elementwise

    def __init__(self, input_data=None, dtype=None):
        self._data = _to_array(input_data, dtype)

    @classmethod
    def from_numpy(cls, array):
        """A Tensor sharing the memory of the numpy ``array``."""
        return _wrap_array(np.asarray(array))

    # ---- numpy interop ---------------------------------------------------
    def __array__(self, dtype=None, copy=None):
        """The data itself (zero-copy) unless a cast or copy is asked for."""
        arr = self._data
        if dtype is not None and np.dtype(dtype) != arr.dtype:
            if copy is False:
                raise ValueError(f"Tensor of {self.dtype} cannot become {np.dtype(dtype)} "
                                 "without a copy; allow a copy")
            return arr.astype(dtype)
        return arr.copy() if copy else arr

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        out = kwargs.get("out")
        if out is not None:
            kwargs["out"] = unwrap(tuple(out))
        result = getattr(ufunc, method)(*unwrap(inputs), **kwargs)
        if out is not None:
            return out[0] if len(out) == 1 else tuple(out)
        return wrap(result)

    def __array_function__(self, func, types, args, kwargs):
        return wrap(func(*unwrap(args), **{k: unwrap(v) for k, v in kwargs.items()}))

    # ---- attributes ------------------------------------------------------
    @property
    def shape(self):
        """The shape, a tuple of ints."""
        return self._data.shape

    @property
    def ndim(self):
        """The number of dimensions."""
        return self._data.ndim

    @property
    def size(self):
        """The number of elements."""
        return self._data.size

    @property
    def itemsize(self):
        """Bytes per element."""
        return self._data.itemsize

    @property
    def nbytes(self):
        """Bytes of all elements."""
        return self._data.nbytes

    @property
    def dtype(self):
        """The element type, a DType (prints as e.g. Float32)."""
        return DType.from_numpy(self._data.dtype)

    @property
    def T(self):
        """The transpose (axes reversed)."""
        return _wrap_array(self._data.T)

    # ---- conversions -----------------------------------------------------
    def asnumpy(self):
        """The underlying ndarray itself (no copy)."""
        return self._data

    numpy = asnumpy

    def copy(self):
        """A Tensor with a copy of the data."""
        return _wrap_array(self._data.copy())

    def astype(self, dtype):
        """A Tensor of the data cast to ``dtype`` (a DType or numpy dtype)."""
        return _wrap_array(self._data.astype(dtype_to_numpy(dtype)))

    def item(self, *index):
        """The element at ``index`` (none: the only element) as a python number."""
        return self._data.item(*index)

    def tolist(self):
        """The data as (nested) python lists."""
        return self._data.tolist()

    def init_data(self):
        """MindSpore compatibility: data is always initialised; gives self."""
        return self

    def __float__(self):
        return float(self._data)

    def __int__(self):
        return int(self._data)

    def __index__(self):
        return self._data.__index__()

    def __bool__(self):
        return bool(self._data)

    def __format__(self, spec):
        if not spec:
            return str(self)
        value = self._data.item() if self._data.size == 1 else self._data
        return format(value, spec)

    # ---- shape and reductions --------------------------------------------
    def reshape(self, *shape):
        """A Tensor of the data in ``shape`` (``reshape(2, 3)`` or ``reshape((2, 3))``)."""
        return _wrap_array(self._data.reshape(_shape_args(shape)))

    view = reshape

    def transpose(self, *axes):
        """A Tensor with axes permuted (none given: reversed)."""
        return _wrap_array(self._data.transpose(*_shape_args(axes)))

    def flatten(self):
        """A 1-D Tensor of the data."""
        return _wrap_array(self._data.reshape(-1))

    def squeeze(self, axis=None):
        """A Tensor without the size-1 dimensions (or only ``axis``)."""
        return _wrap_array(np.squeeze(self._data, _axis(axis)))

    def expand_dims(self, axis):
        """A Tensor with a size-1 dimension inserted at ``axis``."""
        return _wrap_array(np.expand_dims(self._data, axis))

    def sum(self, axis=None, keepdims=False, *, dtype=None, keep_dims=None):
        """Sum over ``axis`` (None: all elements)."""
        return _wrap_array(np.sum(self._data, axis=_axis(axis), dtype=dtype_to_numpy(dtype),
                                  keepdims=_keepdims(keepdims, keep_dims)))

    def mean(self, axis=None, keepdims=False, *, keep_dims=None):
        """Mean over ``axis`` (None: all elements)."""
        return _wrap_array(np.mean(self._data, axis=_axis(axis),
                                   keepdims=_keepdims(keepdims, keep_dims)))

    def max(self, axis=None, keepdims=False, *, keep_dims=None):
        """Largest value over ``axis`` (None: all elements)."""
        return _wrap_array(np.max(self._data, axis=_axis(axis),
                                  keepdims=_keepdims(keepdims, keep_dims)))

    def min(self, axis=None, keepdims=False, *, keep_dims=None):
        """Smallest value over ``axis`` (None: all elements)."""
        return _wrap_array(np.min(self._data, axis=_axis(axis),
                                  keepdims=_keepdims(keepdims, keep_dims)))

    def argmax(self, axis=None, keepdims=False):
        """Index of the largest value along ``axis`` (None: flattened), Int64."""
        return _wrap_array(np.argmax(self._data, axis=axis, keepdims=keepdims).astype(np.int64))

    def argmin(self, axis=None, keepdims=False):
        """Index of the smallest value along ``axis`` (None: flattened), Int64."""
        return _wrap_array(np.argmin(self._data, axis=axis, keepdims=keepdims).astype(np.int64))

    def abs(self):
        """Elementwise absolute value."""
        return _wrap_array(np.abs(self._data))

    # ---- container protocol ----------------------------------------------
    def __len__(self):
        return len(self._data)

    def __iter__(self):
        return (_wrap_array(row) for row in self._data)

    def __getitem__(self, index):
        return _wrap_array(self._data[unwrap(index)])

    def __setitem__(self, index, value):
        if not self._data.flags.writeable:
            self._data = self._data.copy()
        self._data[unwrap(index)] = unwrap(value)

    # ---- printing --------------------------------------------------------
    def __repr__(self):
        return _tensor_repr(self._data, self.dtype.name)

    def __str__(self):
        return str(self._data)

    # ---- operators -------------------------------------------------------
    __add__, __radd__ = _binary(np.add)
    __sub__, __rsub__ = _binary(np.subtract)
    __mul__, __rmul__ = _binary(np.multiply)
    __truediv__, __rtruediv__ = _binary(np.true_divide)
    __floordiv__, __rfloordiv__ = _binary(np.floor_divide)
    __mod__, __rmod__ = _binary(np.remainder)
    __pow__, __rpow__ = _binary(np.power)
    __matmul__, __rmatmul__ = _binary(np.matmul)
    __and__, __rand__ = _binary(np.bitwise_and)
    __or__, __ror__ = _binary(np.bitwise_or)
    __xor__, __rxor__ = _binary(np.bitwise_xor)
    __lt__, __gt__ = _binary(np.less)
    __le__, __ge__ = _binary(np.less_equal)
    __neg__ = _unary(np.negative)
    __pos__ = _unary(np.positive)
    __abs__ = _unary(np.abs)
    __invert__ = _unary(np.invert)

    def __eq__(self, other):
        if isinstance(other, _NOT_ARRAY_LIKE):
            return False
        return _wrap_array(np.equal(self._data, unwrap(other)))

    def __ne__(self, other):
        if isinstance(other, _NOT_ARRAY_LIKE):
            return True
        return _wrap_array(np.not_equal(self._data, unwrap(other)))


class Parameter(Tensor):
    """A named Tensor that a Cell trains; it owns (copies) its data.

    ``Parameter(default_input, name=None, requires_grad=True)``:
    ``default_input`` is anything Tensor accepts. ``name`` None gives
    ``'Parameter#N'`` from a global counter. Operations on a Parameter give
    plain Tensors; ``set_data`` changes the values in place.
    """

    _counter = itertools.count()

    def __init__(self, default_input, name=None, requires_grad=True):
        self._data = np.array(_to_array(default_input), copy=True)
        self.name = name
        self.requires_grad = requires_grad

    @property
    def name(self):
        """The parameter's name (a str)."""
        return self._name

    @name.setter
    def name(self, value):
        if value is None:
            value = f"Parameter#{next(Parameter._counter)}"
        if not isinstance(value, str):
            raise TypeError(f"Parameter name must be a str, got {type(value).__name__} {value!r}")
        self._name = value

    @property
    def requires_grad(self):
        """Whether gradients are taken for this parameter (a bool)."""
        return self._requires_grad

    @requires_grad.setter
    def requires_grad(self, value):
        if not isinstance(value, bool):
            raise TypeError(f"Parameter '{self._name}': requires_grad must be a bool, "
                            f"got {type(value).__name__} {value!r}")
        self._requires_grad = value

    @property
    def data(self):
        """The parameter itself (MindSpore's ``Parameter.data``)."""
        return self

    def set_data(self, data):
        """Overwrite the values with ``data`` (same shape; cast to this dtype).

        The Parameter object and its array stay the same objects; gives self.
        Raises ValueError when the shape differs.
        """
        new = _to_array(data)
        if new.shape != self._data.shape:
            raise ValueError(f"Parameter '{self._name}': set_data got shape {new.shape}, "
                             f"but the parameter has shape {self._data.shape}; "
                             "give data of the same shape")
        if not self._data.flags.writeable:
            self._data = self._data.copy()
        np.copyto(self._data, new, casting="unsafe")
        return self

    def __repr__(self):
        return (f"Parameter (name={self._name}, shape={self.shape}, dtype={self.dtype}, "
                f"requires_grad={self._requires_grad})")

    __str__ = __repr__


class ParameterTuple(tuple):
    """A tuple of Parameters with distinct names (the same object may repeat)."""

    def __new__(cls, iterable=()):
        items = tuple(iterable)
        names = {}
        for p in items:
            if not isinstance(p, Parameter):
                raise TypeError("ParameterTuple: every element must be a Parameter, got "
                                f"{type(p).__name__}")
            if names.setdefault(p.name, p) is not p:
                raise ValueError(f"ParameterTuple: two different Parameters are named "
                                 f"'{p.name}'; give each parameter a unique name")
        return super().__new__(cls, items)
