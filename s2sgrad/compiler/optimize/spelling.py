"""Spellings of generated expressions that give the same numbers with fewer arrays, on
gast statements: ``as_operators`` (``np.add(a, b)`` of arrays written ``a + b``),
``Broadcasting`` (``rt.unreduce(g, x, axis, True) * y`` written ``g * y`` where ``y``
has ``x``'s shape) and ``without_negations`` (``a + -b`` written ``a - b``, ``-b * 2``
written ``b * -2``), ``signs_onto_values`` (a batched tangent's ``-(t_dot * c)``
written ``t_dot * -c``); ``sums_as_runtime`` and ``rolls_as_runtime`` (``np.sum``/``np.roll``
written as the runtime's, which Numba runs faster).
"""
import gast

from ..syntax.nodes import Comment

#: numpy's functions of two arrays that an operator calls (``a + b`` is ``np.add(a, b)``)
_OPERATOR_OF = {"add": gast.Add, "subtract": gast.Sub, "multiply": gast.Mult,
                "divide": gast.Div, "true_divide": gast.Div, "matmul": gast.MatMult}


def as_operators(items, is_array):
    """``items`` (a sweep, blocks too) with ``np.add(a, b)`` written ``a + b`` (also
    subtract, multiply, divide, matmul) where ``is_array(name)`` says an operand is an
    array: the same call, which numpy may do in place on a result no variable holds."""
    return _each(items, _Operators(is_array))


def _each(items, transformer):
    """``items`` (statements and comments) with ``transformer`` run over each statement."""
    return [transformer.visit(item) if not isinstance(item, Comment) else item
            for item in items]


class _Operators(gast.NodeTransformer):
    def __init__(self, is_array):
        self.is_array = is_array

    def visit_Call(self, node):
        self.generic_visit(node)
        func = node.func
        if isinstance(func, gast.Attribute) and isinstance(func.value, gast.Name) \
                and func.value.id == "np" and func.attr in _OPERATOR_OF \
                and len(node.args) == 2 and not node.keywords \
                and not any(isinstance(a, gast.Starred) for a in node.args) \
                and any(isinstance(a, gast.Name) and self.is_array(a.id) for a in node.args):
            return gast.BinOp(left=node.args[0], op=_OPERATOR_OF[func.attr](),
                              right=node.args[1])
        return node


class Broadcasting(gast.NodeTransformer):
    """``rt.unreduce(g, x, axis, True) * y`` -> ``g * y`` (also ``/``, either side, and
    through a number: ``rt.unreduce(...) * 2 * y``; and ``rt.unreduce(g, x, None,
    False)``, ``g`` then a scalar) where ``y`` has ``x``'s
    shape: numpy's broadcasting spreads ``g`` over ``x``'s shape as ``rt.unreduce``
    would, without the call.  ``y`` is ``x`` itself, a variable of the same shape
    (``same_shape``) or ``rt.extremum_mask(x, ...)``.  A number multiplies the adjoint
    before it is spread: ``rt.unreduce(g, x, 2, False) * 2`` -> ``rt.unreduce(g * 2, x,
    2, False)``.  The value assigned to a name in ``written`` (one the code writes into in
    place: ``rt.add_into(dx[-1:], g)``) keeps its arithmetic at the top: it must be a fresh
    array, and ``rt.unreduce`` gives a read-only broadcast ("output array is read-only")."""

    def __init__(self, same_shape, written=frozenset()):
        self.same_shape = same_shape
        self.written = written

    def visit_Assign(self, node):
        if isinstance(node.value, gast.BinOp) and any(
                isinstance(t, gast.Name) and t.id in self.written for t in node.targets):
            self.generic_visit(node.value)      # inside the arithmetic only
            return node
        return self.generic_visit(node)

    def visit_BinOp(self, node):
        self.generic_visit(node)
        if not isinstance(node.op, (gast.Mult, gast.Div)):
            return node
        scaled = _scaled_before_spreading(node)
        if scaled is not None:
            return scaled
        for side, other in (("left", node.right), ("right", node.left)):
            spread = _unreduce_over(getattr(node, side))
            if spread is not None and self._shape_of(other, spread[1]):
                setattr(node, side, spread[0])
                break
        return node

    def _shape_of(self, other, like):
        """True when ``other`` has the shape of the variable ``like``: it is ``like``, a
        variable of its shape, ``rt.extremum_mask(like, ...)``, or arithmetic on such
        values and numbers with at least one of them (``1 - t * t``)."""
        if isinstance(other, gast.Name):
            return other.id == like or self.same_shape(other.id, like)
        if isinstance(other, gast.Call):
            return _is_rt(other.func, "extremum_mask") and bool(other.args) \
                and isinstance(other.args[0], gast.Name) and other.args[0].id == like
        if isinstance(other, gast.UnaryOp):
            return self._shape_of(other.operand, like)
        if isinstance(other, gast.BinOp) and not isinstance(other.op, gast.MatMult):
            parts = [p for p in (other.left, other.right) if _number(p) is None]
            return bool(parts) and all(self._shape_of(p, like) for p in parts)
        return False


def _scaled_before_spreading(node):
    """``rt.unreduce(g, x, axis, keepdims) * 2`` (``/ 2``, ``2 * ...``) -> ``rt.unreduce(g *
    2, x, axis, keepdims)``: the number multiplies the reduced adjoint, not its spread
    over ``x`` (a pass over ``x``'s shape fewer; the same numbers), or None."""
    for side, other in (("left", "right"), ("right", "left")):
        spread, number = getattr(node, side), getattr(node, other)
        if _number(number) is not None and isinstance(spread, gast.Call) \
                and _is_rt(spread.func, "unreduce") and len(spread.args) == 4 \
                and (side == "left" or isinstance(node.op, gast.Mult)):
            g = spread.args[0]
            scaled = gast.BinOp(left=g, op=node.op, right=number) if side == "left" else \
                gast.BinOp(left=number, op=node.op, right=g)
            return gast.Call(func=spread.func, args=[scaled] + spread.args[1:],
                             keywords=spread.keywords)
    return None


def _unreduce_over(node):
    """(``g``, the name ``x``) for ``rt.unreduce(g, x, axis, True)`` or ``rt.unreduce(g,
    x, None, False)``; (``g * 2``, ``x``) for that times (or over) a number; else None."""
    if isinstance(node, gast.BinOp) and isinstance(node.op, (gast.Mult, gast.Div)) \
            and _number(node.right) is not None:
        inner = _unreduce_over(node.left)
        return None if inner is None else (
            gast.BinOp(left=inner[0], op=node.op, right=node.right), inner[1])
    if not (isinstance(node, gast.Call) and _is_rt(node.func, "unreduce")
            and len(node.args) == 4 and not node.keywords
            and isinstance(node.args[1], gast.Name)):
        return None
    axis, keepdims = node.args[2], node.args[3]
    if not isinstance(keepdims, gast.Constant):
        return None
    if keepdims.value is True or (keepdims.value is False and isinstance(axis, gast.Constant)
                                  and axis.value is None):
        return node.args[0], node.args[1].id
    return None


def _number(node):
    value = node.value if isinstance(node, gast.Constant) else None
    return value if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _is_rt(func, name):
    return isinstance(func, gast.Attribute) and func.attr == name \
        and isinstance(func.value, gast.Name) and func.value.id == "rt"


def without_negations(statement):
    """``statement`` (changed in place, and given back) with ``a + -b`` written ``a -
    b``, ``a += -b * c`` written ``a -= b * c`` and ``-b * 2`` written ``b * -2``: the
    same numbers; ``rt.unbroadcast(-b, x)`` (``rt.sum``, ``np.sum``) written
    ``-rt.unbroadcast(b, x)``, so that the sign goes on the smaller sum (exact: rounding
    is symmetric) and into a ``-`` above it."""
    statement = _SumsOfNegations().visit(statement)
    if isinstance(statement, gast.AugAssign) and isinstance(statement.op, gast.Add):
        positive = _negated(statement.value)
        if positive is not None:
            statement.op, statement.value = gast.Sub(), positive
    for node in gast.walk(statement):
        if isinstance(node, gast.BinOp) and isinstance(node.op, gast.Add):
            positive = _negated(node.right)
            if positive is not None:
                node.op, node.right = gast.Sub(), positive
        if isinstance(node, gast.BinOp) and isinstance(node.op, (gast.Mult, gast.Div)):
            _sign_into_number(node)
    return statement


#: sums whose first operand's sign can go outside them: (module name, function)
_SUMS = {("rt", "unbroadcast"), ("rt", "sum"), ("np", "sum")}


class _SumsOfNegations(gast.NodeTransformer):
    def visit_Call(self, node):
        self.generic_visit(node)
        func = node.func
        if isinstance(func, gast.Attribute) and isinstance(func.value, gast.Name) \
                and (func.value.id, func.attr) in _SUMS and node.args \
                and isinstance(node.args[0], gast.UnaryOp) \
                and isinstance(node.args[0].op, gast.USub) \
                and not any(k.arg in ("out", "dtype", "initial", "where")
                            for k in node.keywords):
            node.args[0] = node.args[0].operand
            return gast.UnaryOp(op=gast.USub(), operand=node)
        return node


def _sign_into_number(node):
    """``-b * 2`` -> ``b * -2`` (also ``2 * -b``, ``-b / 2``) in place: a pass over ``b``
    fewer, and the same numbers (a product's sign is exact)."""
    for side, other in (("left", "right"), ("right", "left")):
        negated, number = getattr(node, side), getattr(node, other)
        if isinstance(negated, gast.UnaryOp) and isinstance(negated.op, gast.USub) \
                and isinstance(number, gast.Constant) and type(number.value) in (int, float) \
                and (side == "left" or isinstance(node.op, gast.Mult)):
            setattr(node, side, negated.operand)
            setattr(node, other, gast.Constant(value=-number.value, kind=None))
            return


def _negated(node):
    """``b`` for ``-b``, ``b * c`` for ``-b * c``; else None."""
    if isinstance(node, gast.UnaryOp) and isinstance(node.op, gast.USub):
        return node.operand
    if isinstance(node, gast.BinOp) and isinstance(node.op, (gast.Mult, gast.Div)):
        left = _negated(node.left)
        if left is not None and isinstance(node.left, gast.UnaryOp):
            return gast.BinOp(left=left, op=node.op, right=node.right)
    return None


def signs_onto_values(items, tangents):
    """``items`` (a batched forward sweep's statements, blocks too, changed in place) with
    the sign of a product of a tangent and a value moved onto the value: ``-(t_dot *
    c)``, ``-t_dot * c`` and ``c * -t_dot`` written ``t_dot * -c`` (``/`` too), where
    ``t_dot`` reads a name of ``tangents`` and ``c`` none.  A batched tangent holds a
    batch of directions of its value, so ``-c`` is a pass over a value (often a number:
    the ``-sin(x)`` of ``cos``'s rule), not over a batch: GradBench's ht negates 132
    tangents of 26 directions a call.  The same numbers: a product's sign is exact."""
    mover = _SignsOntoValues(tangents)
    for item in items:
        if not isinstance(item, Comment):
            mover.visit(item)
    return items


class _SignsOntoValues(gast.NodeTransformer):
    def __init__(self, tangents):
        self.tangents = tangents

    def _reads_tangent(self, node):
        return any(isinstance(n, gast.Name) and n.id in self.tangents for n in gast.walk(node))

    def visit_UnaryOp(self, node):
        self.generic_visit(node)
        inner = node.operand
        if isinstance(node.op, gast.USub) and isinstance(inner, gast.BinOp) and \
                isinstance(inner.op, (gast.Mult, gast.Div)):
            moved = self._onto_value(inner.left, inner.op, inner.right)
            if moved is not None:
                return moved
        return node

    def visit_BinOp(self, node):
        self.generic_visit(node)
        if not isinstance(node.op, (gast.Mult, gast.Div)):
            return node
        for side in ("left", "right"):
            negated = getattr(node, side)
            if isinstance(negated, gast.UnaryOp) and isinstance(negated.op, gast.USub):
                left, right = (negated.operand, node.right) if side == "left" else \
                    (node.left, negated.operand)
                moved = self._onto_value(left, node.op, right)
                if moved is not None:
                    return moved
        return node

    def _onto_value(self, left, op, right):
        """``-(left op right)`` with the sign on the operand that reads no tangent, where
        the other reads one (a number is ``_sign_into_number``'s); else None."""
        left_reads, right_reads = self._reads_tangent(left), self._reads_tangent(right)
        if left_reads == right_reads:
            return None
        if left_reads and _number(right) is None:
            return gast.BinOp(left=left, op=op, right=_minus(right))
        if right_reads and _number(left) is None and isinstance(op, gast.Mult):
            return gast.BinOp(left=_minus(left), op=op, right=right)
        return None


def _minus(node):
    """``-node``, without a double negation."""
    if isinstance(node, gast.UnaryOp) and isinstance(node.op, gast.USub):
        return node.operand
    return gast.UnaryOp(op=gast.USub(), operand=node)


def sums_as_runtime(items, ndim_of):
    """``items`` (a sweep, blocks too) with ``np.sum(x, axis=1)`` over the last axis of a
    variable ``x`` of known rank 2 or more, or over an axis that may be the last (-1, or
    1 and up) of a value of unknown rank (``ndim_of(name)``: the rank or None; an int
    axis, keepdims a bool or absent, nothing else) written ``rt.sum(x, 1, False)``: the
    same sum, which goes to BLAS for short trailing rows (``rt.summed_over``, which
    checks the axes at run time: numpy loops once per row there).  Any other sum keeps
    numpy's spelling.  For the code ``grad`` runs (Numba has ``rt.sum`` too)."""
    return _each(items, _RuntimeSums(ndim_of))


def rolls_as_runtime(items):
    """``items`` (a sweep, blocks too) with ``np.roll(a, shift)`` (two arguments, no axis)
    written ``rt.roll(a, shift)``: the same values, which Numba computes with two slice
    copies instead of its own element-by-element roll (``runtime/arrays.roll``)."""
    return _each(items, _RuntimeRolls())


class _RuntimeRolls(gast.NodeTransformer):
    def visit_Call(self, node):
        self.generic_visit(node)
        func = node.func
        if isinstance(func, gast.Attribute) and isinstance(func.value, gast.Name) and \
                func.value.id == "np" and func.attr == "roll" and len(node.args) == 2 and \
                not node.keywords and not any(isinstance(a, gast.Starred) for a in node.args):
            node.func = gast.Attribute(value=gast.Name(id="rt", ctx=gast.Load(), annotation=None,
                                                       type_comment=None),
                                       attr="roll", ctx=gast.Load())
        return node


class _RuntimeSums(gast.NodeTransformer):
    def __init__(self, ndim_of):
        self.ndim_of = ndim_of

    def visit_Call(self, node):
        self.generic_visit(node)
        func = node.func
        if not (isinstance(func, gast.Attribute) and isinstance(func.value, gast.Name)
                and func.value.id == "np" and func.attr == "sum" and len(node.args) in (1, 2)
                and not any(isinstance(a, gast.Starred) for a in node.args)):
            return node
        options = {k.arg: k.value for k in node.keywords}
        if len(node.args) == 2:
            if "axis" in options:
                return node
            options["axis"] = node.args[1]
        axis, keepdims = options.pop("axis", None), options.pop("keepdims", None)
        if options or _number(axis) is None or not isinstance(axis.value, int) or (
                keepdims is not None and not (isinstance(keepdims, gast.Constant)
                                              and isinstance(keepdims.value, bool))):
            return node
        x = node.args[0]
        rank = self.ndim_of(x.id) if isinstance(x, gast.Name) else None
        if rank is None:        # rt.sum checks at run time whether the axis is the last
            if axis.value == 0 or axis.value < -1:
                return node
        elif rank < 2 or axis.value not in (-1, rank - 1):
            return node
        keepdims = keepdims or gast.Constant(value=False, kind=None)
        return gast.Call(func=gast.Attribute(value=gast.Name(id="rt", ctx=gast.Load(),
                                                             annotation=None,
                                                             type_comment=None),
                                             attr="sum", ctx=gast.Load()),
                         args=[node.args[0], axis, keepdims], keywords=[])
