"""Shapes known while building: each dimension an int or a symbol, with broadcasting.

The generated code is specialised on the rank of each argument and on which of its
dimensions are 1 (``GradFunction`` builds once per such signature), not on sizes.  So
an argument ``x`` of rank 2 whose dimensions are not 1 has the shape
``(x.shape[0], x.shape[1])`` as two symbols known to differ from 1, and a dimension that
is 1 is the int 1.  Shapes then follow through the operations whose shape rule is plain
(elementwise with broadcasting, full reductions, scalar indexing, ``@``, ``.T``,
``*_like``, transposes with constant axes, reshapes to constant sizes: a -1 there is a
new symbol, known equal to nothing else).

Broadcasting two dimensions that are both known not to be 1 succeeds only when they are
equal; the forward sweep has run without error before any adjoint is computed, so after
an operation that was certainly executed (not inside a branch or a loop body, which may
not run) the two symbols are *unified*: known equal from then on.  Inside a branch or a
loop body such a broadcast gives an unknown shape instead.

Such a broadcast in code that may not run gives the first operand's dimension, not
unified with the second's (whenever the value exists, its statement ran, so the
broadcast succeeded and both were equal: ``y + w * k`` in a loop body has ``y``'s shape),
and a loop-carried variable is assumed to keep what is known of its shape on entry:
first its entry's very dimensions (the body must end with the shape it started with),
then rank and which dimensions differ from 1 in fresh dimensions of sizes that may
change (``assumed``); the lowering checks the assumption at the end of the body
(``same``, ``covers``) and lowers the loop again with the weaker one, or none, where it
fails.

What it is for: ``rt.unbroadcast(g, x)`` sums ``g`` down to the shape of ``x``; in an
elementwise rule ``g`` has the shape of the result, so where ``x`` and the result have the
same shape the call is dropped from the generated code: provably equal shapes (``same``),
or ``x`` of the result's rank with no dimension that may be 1 (``no_unit_dims``:
broadcasting leaves such an operand's shape as it is).
"""
from ..ir import Const, Seq, Var



def unit_dimensions(array):
    """Which dimensions of ``array`` are 1 (what the code is specialised on besides dtype
    and rank: whether an operation broadcasts is then known while building)."""
    return tuple(d == 1 for d in array.shape)


class Dim:
    """A dimension known by name only (``x.shape[0]``); ``not_one``: known to differ from 1
    (an argument's dimension under the specialisation) or not known."""

    __slots__ = ("label", "not_one", "varies")

    def __init__(self, label, not_one, varies=False):
        self.label = label
        self.not_one = not_one
        self.varies = varies    # a loop-carried dimension: its size may change between
                                # iterations (slices of it are not compared)

    def __repr__(self):
        return self.label


class ShapeTable:
    """Var name -> shape (a tuple of ints and ``Dim``s) where it is known, and which
    symbols are known equal (a union-find over ``Dim``s; a class may resolve to an int)."""

    def __init__(self):
        self.of = {}
        self._parent = {}
        self.tuples = {}   # Var name of a shape (``x.shape``) -> that shape
        self.ints = {}     # Var name of an int read from a shape (``x.shape[0]``) -> its Dim
        self._slices = {}  # (Dim, slice) -> the Dim of that slice's length
        self._offsets = {}  # the Dim of a slice ``[a:-b]`` -> (its dimension, -a - b)
        #: True when every adjoint has its variable's shape (no branch or loop may leave
        #: one a plain 0.0, no custom rule or cotangent gives one): ``rt.unbroadcast``
        #: may then be written as the sum over the axes it would sum (set by the pipeline)
        self.adjoints_shaped = False
        #: True when the build is specialised on the arguments' sizes (a recursion that
        #: ends by shapes, ``front/recursion.py``): a shape made of ints only is then
        #: read as a constant (``x.shape``, ``len(x)``), so branches on it fold
        self.exact = False

    def constant(self, shape):
        """``shape`` as a tuple of ints when the build is specialised on sizes and every
        dimension is known as an int, else None."""
        if not self.exact or shape is None:
            return None
        dims = tuple(self.find(d) for d in shape)
        return dims if all(type(d) is int for d in dims) else None

    def made(self, size, ints):
        """The shape of ``np.zeros(size)``: ``size`` an int (a constant, an int from a
        shape, another int: a dimension nothing is known of), a shape, or a tuple of
        them (``ints``: the names of Python ints); None when it cannot be told."""
        if isinstance(size, Const) and type(size.value) is int:
            return (size.value,)
        if isinstance(size, Const) and isinstance(size.value, tuple) and all(
                type(v) is int for v in size.value):
            return size.value
        if isinstance(size, Var) and size.name in self.tuples:
            return self.tuples[size.name]
        if isinstance(size, Var) and size.name in ints:
            dim = self.ints.get(size.name)
            return (dim if dim is not None else Dim(size.name, None),)
        if isinstance(size, Seq) and size.kind == "tuple":
            parts = [self.made(item, ints) for item in size.items]
            if all(p is not None and len(p) == 1 for p in parts) and not any(
                    isinstance(item, Var) and item.name in self.tuples for item in size.items):
                return tuple(p[0] for p in parts)
        return None

    def indexed(self, base, index, ints):
        """The shape of ``x[index]`` for ``x`` of shape ``base`` and a basic index: ints
        (the dimension goes), constant slices (``sliced``), other slices (a dimension
        nothing is known of) and None (a new dimension of 1); None for any other index."""
        if base is None:
            return None
        items = index.items if isinstance(index, Seq) and index.kind == "index" else (index,)
        flat = []
        for item in items:
            if isinstance(item, Const) and isinstance(item.value, tuple):
                flat.extend(Const(v) for v in item.value)
            else:
                flat.append(item)
        out, k = [], 0
        for item in flat:
            if isinstance(item, Const) and item.value is None:
                out.append(1)
                continue
            if k >= len(base):
                return None
            if (isinstance(item, Const) and type(item.value) is int) or (
                    isinstance(item, Var) and item.name in ints):
                pass
            elif isinstance(item, Const) and isinstance(item.value, slice):
                out.append(self.sliced(base[k], item.value))
            elif isinstance(item, Seq) and item.kind == "slice":
                out.append(Dim("?", None))
            else:
                return None
            k += 1
        return tuple(out) + tuple(self.find(d) for d in base[k:])

    def sliced(self, dim, part):
        """The length of ``part`` (a constant slice) of a dimension ``dim``: exact for an
        int; for a symbol, 1 for a slice of one element whatever the length (``[:1]``,
        ``[-1:]``), else the same Dim for slices of the same length (``[1:-1]``, ``[:-2]``
        and ``[2:]`` of one dimension), not known to differ from 1."""
        dim = self.find(dim)
        bounds = (part.start, part.stop, part.step)
        if not all(v is None or type(v) is int for v in bounds):
            return Dim("?", None)
        if not isinstance(dim, Dim):
            return len(range(*part.indices(dim)))
        if all(len(range(*part.indices(n))) == 1 for n in (1, 2, 3, 7, 1 << 40)):
            return 1        # x[:1], x[-1:], x[0:1]: one element of any dimension that has one
        start = 0 if part.start is None else part.start
        if part.step not in (None, 1) or dim.varies:
            return Dim("?", None)
        if start >= 0 and (part.stop is None or part.stop < 0):
            key = (dim, (part.stop or 0) - start)     # the length is dim + offset
            if key[1] == 0:
                return dim
        else:
            key = (dim, start, part.stop)
        if key not in self._slices:
            self._slices[key] = Dim(f"{dim}[{start}:{part.stop}]", None)
            if len(key) == 2:
                self._offsets[self._slices[key]] = key
        return self._slices[key]

    def joined(self, shapes, axis=0):
        """The shape of ``np.concatenate(parts, axis)`` from the parts' shapes: their other
        dimensions equal; along ``axis`` the sum when all are ints, else a symbol, not 1
        when no part's is."""
        if not shapes or any(s is None or len(s) != len(shapes[0]) or len(s) == 0
                             for s in shapes) or not -len(shapes[0]) <= axis < len(shapes[0]):
            return None
        k = axis % len(shapes[0])
        if not all(self.same(s[:k] + s[k + 1:], shapes[0][:k] + shapes[0][k + 1:])
                   for s in shapes[1:]):
            return None
        sizes = [self.find(s[k]) for s in shapes]
        joined = sum(sizes) if all(type(d) is int for d in sizes) else self._undone(sizes)
        if joined is None:
            joined = Dim("+".join(map(str, sizes)), True if all(map(self._not_one, sizes))
                         else None)
        return tuple(self.find(d) for d in shapes[0][:k]) + (joined,) + tuple(
            self.find(d) for d in shapes[0][k + 1:])

    def _undone(self, sizes):
        """The dimension whose slice the ints in ``sizes`` make whole again
        (``np.concatenate((np.ones(1), y[:-1]))`` has ``y``'s length), or None."""
        symbols = [d for d in sizes if isinstance(d, Dim)]
        if len(symbols) != 1 or symbols[0] not in self._offsets:
            return None
        dim, offset = self._offsets[symbols[0]]
        return self.find(dim) if offset + sum(d for d in sizes if type(d) is int) == 0 \
            else None

    # ------------------------------------------------------------ dimensions

    def find(self, dim):
        """The representative of ``dim``'s class (an int when the class is known to be one)."""
        while isinstance(dim, Dim) and dim in self._parent:
            dim = self._parent[dim]
        return dim

    def _unify(self, a, b):
        a, b = self.find(a), self.find(b)
        if a is b or not (isinstance(a, Dim) or isinstance(b, Dim)):
            return
        if isinstance(a, Dim):
            self._parent[a] = b
        else:
            self._parent[b] = a

    def _not_one(self, dim):
        return dim.not_one if isinstance(dim, Dim) else dim != 1

    def broadcast_dims(self, a, b, certain):
        """The broadcast of dimensions ``a`` and ``b``, or None when it cannot be told."""
        a, b = self.find(a), self.find(b)
        if a is b or (not isinstance(a, Dim) and a == b):
            return a
        if a == 1 and not isinstance(a, Dim):
            return b
        if b == 1 and not isinstance(b, Dim):
            return a
        if self._not_one(a) and self._not_one(b):
            if not (isinstance(a, Dim) or isinstance(b, Dim)):
                return None       # two different sizes: numpy raises; nothing to infer
            if certain:
                self._unify(a, b)
                return self.find(a)
            # in code that may not run: equal whenever it runs, so the value has a's
            # (not unified: where it does not run, a and b may differ)
            return a
        return None

    # ------------------------------------------------------------ shapes

    def argument(self, name, ndim, ones):
        """Record the shape of argument ``name``: ``ones[k]`` True where dimension k is 1,
        False where it is not, None where it is not known."""
        ones = ones if ones is not None else (None,) * ndim
        self.of[name] = tuple(1 if one else Dim(f"{name}.shape[{k}]", one is False)
                              for k, one in enumerate(ones))

    def reshaped(self, sizes):
        """The shape ``np.reshape(x, sizes)`` gives for constant ``sizes`` (ints, at most
        one -1: a dimension known by name only, equal to itself alone), or None."""
        if sizes is None or sum(n == -1 for n in sizes) > 1 or any(n < -1 for n in sizes):
            return None
        return tuple(Dim("reshaped", None) if n == -1 else n for n in sizes)

    def broadcast(self, shapes, certain):
        """numpy's broadcast of ``shapes`` (right-aligned), or None if any is unknown or a
        dimension cannot be told."""
        if any(s is None for s in shapes):
            return None
        rank = max((len(s) for s in shapes), default=0)
        result = []
        for k in range(rank):
            dims = [s[len(s) - rank + k] for s in shapes if len(s) - rank + k >= 0]
            dim = dims[0]
            for other in dims[1:]:
                dim = self.broadcast_dims(dim, other, certain)
                if dim is None:
                    return None
            result.append(self.find(dim))
        return tuple(result)

    def no_unit_dims(self, shape):
        """True when ``shape`` is known and none of its dimensions may be 1."""
        return shape is not None and all(self._not_one(self.find(d)) for d in shape)

    def assumed(self, name, entry, varies):
        """The shape a loop-carried ``name`` is assumed to keep, from its ``entry`` shape:
        the entry's own dimensions (the body must then end with the very shape it
        started with: ``same``); or, with ``varies`` (sizes that may change from one
        iteration to the next), fresh dimensions, known not to be 1 where the entry's
        are not, 1 where it is 1."""
        if entry is None:
            return None
        dims = [self.find(d) for d in entry]
        if not all(d == 1 or self._not_one(d) for d in dims):
            return None     # a dimension that may be 1 or not: nothing to keep
        if not varies:      # the body ends with the shape it started with: by induction,
            return tuple(dims)   # every iteration has the entry's (``y = y + x * k``)
        return tuple(1 if (d == 1 and not isinstance(d, Dim)) else
                     Dim(f"{name}.shape[{k}]", True, varies=varies)
                     for k, d in enumerate(dims))

    def covers(self, assumed, shape):
        """True when ``shape`` (a loop-carried value at the end of an iteration) keeps what
        ``assumed`` says: the rank, the dimensions that are 1 and those that are not."""
        if shape is None or len(shape) != len(assumed):
            return False
        for want, got in zip(assumed, shape):
            got = self.find(got)
            if isinstance(want, Dim):
                if want.not_one and not self._not_one(got):
                    return False
            elif isinstance(got, Dim) or got != want:
                return False
        return True

    def same(self, a, b):
        """True when shapes ``a`` and ``b`` are known and provably equal."""
        if a is None or b is None or len(a) != len(b):
            return False
        return all(self.find(x) is self.find(y) or (
            not isinstance(self.find(x), Dim) and self.find(x) == self.find(y))
            for x, y in zip(a, b))

    def matmul(self, a, b, certain):
        """The shape of ``a @ b`` for operands of rank 1 or 2, or None.  The inner
        dimensions must be equal (they do not broadcast): unified when ``certain``."""
        if a is None or b is None or not (1 <= len(a) <= 2 and 1 <= len(b) <= 2):
            return None
        if certain:
            self._unify(a[-1], b[0] if len(b) == 1 else b[-2])
        return tuple(self.find(d) for d in a[:-1]) + (
            (self.find(b[-1]),) if len(b) == 2 else ())
