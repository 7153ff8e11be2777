"""``rt.ProductSum``: a loop's sum of matrix products, made as one product after the loop.

Generated code (``compiler/optimize/product_sums.py``) writes a loop that accumulates
``acc = acc + c * (a @ b)[index]`` as::

    acc_sum = rt.ProductSum(acc)
    for i in ...:
        acc_sum.add(c, a, b, index)      # c: a column (m, 1), a number or None
    acc = acc_sum.total()

Each step's product is one small BLAS call, and its sum a pass over the whole
accumulator (on GradBench's ht: 22 bones, each a (544, 4) @ (26, 4, 3) product
weighted by a column of skinning weights and added to a (26, 544, 3) batch of
tangents).  ``ProductSum`` keeps the steps' operands instead, the column folded into
the left operand (``c * (a @ b) == (c * a) @ b`` for a column ``c`` of ``a``'s rows),
copies of them (the loop may write into an operand after the step), and ``total``
makes them as one product of the operands stacked along the summed axis:
``[c_1 a_1, c_2 a_2, ...] @ [b_1; b_2; ...]`` (the sum over steps is the product's
inner sum).  The numbers equal the loop's up to the order of the additions.

Each step's left operand is kept transposed, ``(c a).T`` (``k`` rows of ``m`` numbers),
so that the stacked one is one contiguous copy of the steps' blocks, whose transpose is
the product's left operand (ht's (88, 544): 6 against 44 us stacked column blocks).  A
loop that adds the products of the same ``c`` and ``a`` to two sums (a value and its
tangent: ht's ``positions`` and ``positions_dot``) writes the second step
``acc_dot_sum.add_as(acc_sum, b_dot, index)``: the block ``acc_sum.add`` has just made
is kept by both, and the stacked blocks, made once, are the left operand of both
products.

A step that does not fit (``a`` not a float matrix, ``b`` not one or a stack of them of
its dtype, ``c`` not a column or a number of it, an ``index`` taking more than columns,
shapes unlike the earlier steps') is made and added as the loop would (``c * (a @
b)[index]``), so any operands give the loop's result; the stacked operands are made into
their product whenever they would hold over ``STACKED_NUMBERS`` numbers.
"""
import numpy as np

from .batched import matmul_batch

__all__ = ["ProductSum", "STACKED_NUMBERS"]

#: the most numbers the stacked operands of a ``ProductSum`` hold before they are
#: multiplied (16 MiB of float64)
STACKED_NUMBERS = 2 ** 21


class ProductSum:
    """``start`` plus the products ``add`` is given, made by ``total`` (module doc)."""

    def __init__(self, start):
        self.start = start
        self.left, self.right = [], []     # (c * a).T, b[..., columns] of the stacked steps
        self.shape = None                  # (rows, b.ndim, b.shape[0], columns, dtype)
        self.numbers = 0
        self.last = None                   # (c, a, the block kept or None) of the last step
        self.shared = None                 # [blocks, their stack], with the sums add_as ties

    def add(self, c, a, b, index=None):
        """Add ``c * (a @ b)[index]`` (``c`` None: ``(a @ b)[index]``)."""
        self._step(c, a, b, index, None)

    def add_as(self, other, b, index=None):
        """Add ``c * (a @ b)[index]`` of the ``c`` and ``a`` of ``other``'s last ``add``,
        which the code made just before (nothing between them), sharing its block and
        its stacked blocks (module doc)."""
        c, a, block = other.last
        if other.shared is None:
            other.shared = [None, None]
        self.shared = other.shared
        self._step(c, a, b, index, block)

    def _step(self, c, a, b, index, block):
        columns = _columns(a, b, c, index)
        if columns is None:
            self.last = (c, a, None)
            self.start = self.start + _product(c, a, b, index)
            return
        right = np.array(b[..., columns])       # copies: the loop may write into b
        shape = (a.shape[0], b.ndim, b.shape[0], right.shape[-1], a.dtype)
        if self.shape is not None and shape != self.shape:
            self.last = (c, a, None)
            self.start = self.start + _product(c, a, b, index)
            return
        size = a.size + right.size
        if self.left and self.numbers + size > STACKED_NUMBERS:
            self._made()
        self.shape = shape
        if block is None:
            block = a.T.copy() if c is None else np.multiply(
                a.T, c.T if type(c) is np.ndarray else c, order="C")
        self.last = (c, a, block)
        self.left.append(block)
        self.right.append(right)
        self.numbers += size

    def total(self):
        """``start`` plus every product added."""
        self._made()
        return self.start

    def _made(self):
        """The stacked steps made into one product and added to ``start``."""
        if not self.left:
            return
        left = self._stacked_left().T
        right = np.concatenate(self.right, axis=-2) if len(self.right) > 1 else \
            self.right[0]
        product = matmul_batch(left, right) if right.ndim == 3 else left @ right
        self.start = self.start + product
        self.left, self.right, self.shape, self.numbers = [], [], None, 0

    def _stacked_left(self):
        """The steps' blocks one under the other, or the same stack a sum sharing them
        (``add_as``) made of the same blocks."""
        shared = self.shared
        if shared is not None and shared[0] is not None and len(shared[0]) == len(
                self.left) and all(x is y for x, y in zip(shared[0], self.left)):
            return shared[1]
        stack = np.concatenate(self.left, axis=0) if len(self.left) > 1 else self.left[0]
        if shared is not None:
            shared[0], shared[1] = list(self.left), stack
        return stack


def _product(c, a, b, index):
    """``c * (a @ b)[index]`` as the loop wrote it."""
    product = a @ b
    if index is not None:
        product = product[index]
    return product if c is None else c * product


def _columns(a, b, c, index):
    """The slice of the product's columns ``index`` takes (``slice(None)`` for all) where
    the step can be stacked: ``a`` a float matrix, ``b`` a matrix or a stack of them of
    its dtype and inner size, ``c`` None, a number or a column of ``a``'s rows of its
    dtype, ``index`` None or ``:`` on every axis but the last; else None.  (Called every
    step: written for speed.)"""
    if type(a) is not np.ndarray or type(b) is not np.ndarray:
        return None
    dtype, ndim = a.dtype, b.ndim
    if a.ndim != 2 or (ndim != 2 and ndim != 3) or b.dtype != dtype or \
            dtype.kind != "f" or a.shape[1] != b.shape[-2]:
        return None
    if c is not None and type(c) is not float and type(c) is not int:
        if type(c) is np.ndarray:
            if c.dtype != dtype or (c.ndim != 0 and (c.ndim != 2 or c.shape[1] != 1 or
                                                     c.shape[0] != a.shape[0])):
                return None
        elif not isinstance(c, np.generic) or c.dtype != dtype:
            return None
    if index is None:
        return _ALL
    if type(index) is not tuple or len(index) != ndim:
        return None
    for i in index[:-1]:
        if type(i) is not slice or i != _ALL:
            return None
    return index[-1] if type(index[-1]) is slice else None


_ALL = slice(None)
