"""The text of fused loops (``compiler/optimize/loops.py`` finds the runs of array
statements they replace).

``loop_lines(passes)`` takes the ``Pass``es of one generated function and gives the
(line, origin) pairs to write after it (``layout.after_the_function``): per pass, a
comment naming the user's lines the statements come from and a function of one explicit
loop over the elements ``i`` of arrays of one length ``n``, which the generated function calls where it runs compiled
and the arrays have the length the loop takes (``optimize/loops.py``: else it runs the
statements as numpy)::

    def _y_1_pass(ones1, y_1, x, h_over2):
        n = y_1.shape[0]
        t2 = np.empty(n)
        ...
        # earlier iterations' elements (read where i - k >= 0)
        t5_prev = t11_prev = 0.0
        for i in range(n):
            t2_i = ones1[i] if i < 1 else y_1[i - 1]
            t3_i = x[i] * t2_i
            t5_i = y_1[i] + h_over2 * t3_i
            t8_i = t6[i] if i < 1 else t5_prev
            ...
            t2[i] = t2_i
            t5_prev = t5_i
        return t2, ...

A value read at ``i - k`` (``i + k`` down) is not stored: it is carried in ``k`` locals
from one iteration to the next.
"""
from ..syntax.source import INDENT
from .layout import wrap


def loop_lines(passes):
    """The (line, origin) pairs of ``passes``' functions (module doc)."""
    lines = []
    for fused in passes:
        lines += _function(fused)
    return lines


def _function(fused):
    where = f" of {', '.join(fused.where)}" if fused.where else ""
    order = "" if not fused.shifted else \
        ", down from n - 1: a read of i + k is an earlier iteration's, carried" \
        if fused.down else ", up from 0: a read of i - k is an earlier iteration's, carried"
    lines = wrap(f"# the {fused.count} array statements{where} in one pass over their "
                 f"elements i{order} (the call's else: the statements as numpy)")
    lines += wrap(f"def {fused.name}({', '.join(fused.params)}):")
    lines.append(f"{INDENT}n = {_length(fused)}")
    if fused.block:
        lines.append(f"{INDENT}{fused.block} = np.empty(({len(fused.rows)}, n))")
        lines += wrap(f"{INDENT}{', '.join(fused.row_arrays)} = {fused.block}")
    for array in fused.temporaries:
        if array not in fused.row_arrays:
            lines.append(f"{INDENT}{array} = np.empty(n)")
    carried = [carry for carries, _ in fused.carries for carry in carries]
    if carried:
        lines.append(f"{INDENT}# earlier iterations' elements (read where "
                     f"{'i + k < n' if fused.down else 'i - k >= 0'})")
        lines += wrap(f"{INDENT}{' = '.join(carried)} = 0.0")
    span = "range(n - 1, -1, -1)" if fused.down else "range(n)"
    lines.append(f"{INDENT}for i in {span}:")
    for line in fused.body + [f"{a}[i] = {local}" for a, local in fused.stores] + \
            _carry_lines(fused.carries):
        lines += wrap(f"{INDENT * 2}{line}")
    lines += wrap(f"{INDENT}return {_tuple(fused.results)}")
    return [(line, None) for line in lines + ["", ""]]


def _length(fused):
    """The loop's ``n``: its first array's length (a block's rows: its axis 1; a view
    read from its base, ``loop_views.py``: from the base's shape or the slice's bounds)."""
    first = fused.arrays[0]
    if first in fused.views:
        return fused.views[first][1]
    return f"{first}.shape[{1 if first in fused.blocks else 0}]"


def _carry_lines(carries):
    """A shifted read's locals moved on by one iteration: ``t5_prev2 = t5_prev``, then
    ``t5_prev = t5_i``."""
    lines = []
    for locals_, local in carries:
        for k in range(len(locals_) - 1, 0, -1):
            lines.append(f"{locals_[k]} = {locals_[k - 1]}")
        lines.append(f"{locals_[0]} = {local}")
    return lines


def _tuple(names):
    if not names:
        return "None"
    return ", ".join(names) + ("," if len(names) == 1 else "")
