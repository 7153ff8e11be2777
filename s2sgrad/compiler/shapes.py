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

What it is for: ``rt.unbroadcast(g, x)`` sums ``g`` down to the shape of ``x``; in an
elementwise rule ``g`` has the shape of the result, so where ``x`` and the result have the
same shape (``same``) the call is dropped from the generated code.
"""


def unit_dimensions(array):
    """Which dimensions of ``array`` are 1 (what the code is specialised on besides dtype
    and rank: whether an operation broadcasts is then known while building)."""
    return tuple(d == 1 for d in array.shape)


class Dim:
    """A dimension known by name only (``x.shape[0]``); ``not_one``: known to differ from 1
    (an argument's dimension under the specialisation) or not known."""

    __slots__ = ("label", "not_one")

    def __init__(self, label, not_one):
        self.label = label
        self.not_one = not_one

    def __repr__(self):
        return self.label


class ShapeTable:
    """Var name -> shape (a tuple of ints and ``Dim``s) where it is known, and which
    symbols are known equal (a union-find over ``Dim``s; a class may resolve to an int)."""

    def __init__(self):
        self.of = {}
        self._parent = {}
        #: True when every adjoint has its variable's shape (no branch or loop may leave
        #: one a plain 0.0, no custom rule or cotangent gives one): ``rt.unbroadcast``
        #: may then be written as the sum over the axes it would sum (set by the pipeline)
        self.adjoints_shaped = False

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
