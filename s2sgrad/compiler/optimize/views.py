"""A block of columns read by several elementwise passes, made contiguous once.

``contiguous_blocks(statements, keep, rank)`` takes the straight-line statements of a
loop-free gradient or tangent function run as numpy (gast statements and ``Comment``s),
``keep`` (the names it returns) and ``rank(name)`` (a name's number of dimensions, or
None).  ``rot = cams[:, 0:3]`` of a matrix ``cams`` is a view whose rows are 3 numbers
apart from the next row's: numpy runs an operation on it row by row, a loop of 3 numbers
per row (ba's 31,843 x 3: ``rot ** 2`` 0.26 ms, against 0.04 ms on the same numbers laid
out contiguously).  Where such a view is an operand of two or more elementwise
operations (operators, numpy's ufuncs), it is written ``np.ascontiguousarray(cams[:,
0:3])``: one pass of that kind, then passes over contiguous numbers.

Left alone: a view anything may write through, or that shares memory with something
written in place or returned (``shared.py``'s may-share relation: a copy would not see
the write, or the caller would get a copy for a view); a slice of a matrix of unknown
rank; loops and branches.
"""
import gast

from .shared import PURE_UFUNCS, may_be_written

#: the fewest elementwise reads a copy pays for (the copy is one such pass itself)
READS = 2


def contiguous_blocks(statements, keep, rank):
    """``statements`` with column blocks read by ``READS`` or more elementwise operations
    copied contiguous once (module doc), as a new list."""
    blocks = {item.targets[0].id: item for item in statements
              if isinstance(item, gast.Assign) and len(item.targets) == 1 and
              isinstance(item.targets[0], gast.Name) and _column_block(item.value, rank)}
    if not blocks:
        return statements
    counts = dict.fromkeys(blocks, 0)
    for item in statements:
        if isinstance(item, gast.AST):
            for node in gast.walk(item):
                for operand in _elementwise_operands(node):
                    if isinstance(operand, gast.Name) and operand.id in counts:
                        counts[operand.id] += 1
    wanted = {n for n, k in counts.items() if k >= READS}
    if not wanted:
        return statements
    unsafe = may_be_written(statements, keep)
    copied = {id(blocks[name]) for name in wanted - unsafe}
    out = []
    for item in statements:
        if id(item) in copied:
            call = gast.parse("np.ascontiguousarray(x)").body[0].value
            call.args[0] = item.value
            item = gast.Assign(targets=item.targets, value=call, type_comment=None)
        out.append(item)
    return out


def _column_block(value, rank):
    """True for ``x[:, a:b]`` of a name ``x`` of rank 2, ``a`` and ``b`` numbers at least
    two apart (a single column's passes run along ``x``'s other operands' rows anyway)."""
    if not (isinstance(value, gast.Subscript) and isinstance(value.value, gast.Name) and
            rank(value.value.id) == 2 and isinstance(value.slice, gast.Tuple) and
            len(value.slice.elts) == 2):
        return False
    rows, cols = value.slice.elts
    bounds = [b.value if isinstance(b, gast.Constant) and type(b.value) is int else None
              for b in (getattr(cols, "lower", None), getattr(cols, "upper", None))]
    return isinstance(rows, gast.Slice) and rows.lower is None and rows.upper is None and \
        rows.step is None and isinstance(cols, gast.Slice) and cols.step is None and \
        None not in bounds and 0 <= bounds[0] and bounds[1] - bounds[0] >= 2


def _elementwise_operands(node):
    """The operands ``node`` reads element by element: of an arithmetic operator or a
    numpy ufunc (of ``kept.f`` and ``rt.Fused`` kernels too)."""
    if isinstance(node, gast.BinOp) and not isinstance(node.op, gast.MatMult):
        return [node.left, node.right]
    if isinstance(node, gast.UnaryOp):
        return [node.operand]
    if isinstance(node, gast.Call) and isinstance(node.func, gast.Attribute) and \
            isinstance(node.func.value, gast.Name) and (
                (node.func.value.id == "np" and node.func.attr in PURE_UFUNCS)):
        return list(node.args)
    return []
