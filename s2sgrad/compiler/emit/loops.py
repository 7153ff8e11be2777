"""The text of fused loops (``compiler/optimize/loops.py`` finds the runs of array
statements they replace).

``loop_lines(passes)`` takes the ``Pass``es of one generated function and gives the
(line, origin) pairs to write before it: per pass, a comment naming the user's lines the
statements come from and a function that runs them as one explicit loop over the
elements ``i`` of arrays of one length ``n`` where it is compiled (``rt.compiled()``) and
the arrays are of the length the loop takes, and as the numpy statements themselves
otherwise (run as Python: the first call's reference run, code Numba cannot compile; or
arrays of other lengths, which numpy broadcasts)::

    def _y_1_pass(ones1, y_1, x, h_over2):
        n = y_1.shape[0]
        if not rt.compiled() or n < 1 or x.shape[0] != n:
            # numpy's statements: run as Python, or arrays not of the one length (at
            # least 1) the loop below takes
            t2 = np.concatenate((ones1, y_1[:-1]))
            ...
            return t2, ...
        t2 = np.empty(n)
        ...
        for i in range(n):
            t2_i = ones1[i] if i < 1 else y_1[i - 1]
            ...
            t2[i] = t2_i
        return t2, ...
"""
from ..syntax.source import INDENT
from .layout import render_mapped, wrap


def loop_lines(passes):
    """The (line, origin) pairs of ``passes``' functions (module doc)."""
    lines = []
    for fused in passes:
        lines += _function(fused)
    return lines


def _function(fused):
    where = f" of {', '.join(fused.where)}" if fused.where else ""
    order = "" if not fused.shifted else \
        ", down from n - 1: a read of i + k is an earlier iteration's" if fused.down else \
        ", up from 0: a read of i - k is an earlier iteration's"
    head = wrap(f"# the {fused.count} array statements{where} in one pass over their "
                f"elements i{order}")
    head += wrap(f"def {fused.name}({', '.join(fused.params)}):")
    first, others = fused.arrays[0], fused.arrays[1:]
    head.append(f"{INDENT}n = {first}.shape[0]")
    tests = ["not rt.compiled()"] + ([f"n < {fused.least}"] if fused.least else []) + [
        f"{a}.shape[0] != n" for a in others]
    head += _condition(tests)
    at_least = f" (at least {fused.least})" if fused.least else ""
    head += wrap(f"{INDENT * 2}# numpy's statements: run as Python, or arrays not of the "
                 f"one length{at_least} the loop below takes")
    lines = [(line, None) for line in head] + render_mapped(fused.statements, 2)
    loop = wrap(f"{INDENT * 2}return {_tuple(fused.outputs)}")
    for array in fused.temporaries:
        loop.append(f"{INDENT}{array} = np.empty(n)")
    span = "range(n - 1, -1, -1)" if fused.down else "range(n)"
    loop.append(f"{INDENT}for i in {span}:")
    for line in fused.body + [f"{a}[i] = {local}" for a, local in fused.stores]:
        loop += wrap(f"{INDENT * 2}{line}")
    loop += wrap(f"{INDENT}return {_tuple(fused.results)}")
    return lines + [(line, None) for line in loop + ["", ""]]


def _condition(tests):
    """``if a or b ...:`` over as many lines as it needs."""
    rows, row = [], []
    for test in tests:
        if row and len(INDENT * 2 + " or ".join(row + [test])) > 88:
            rows.append(" or ".join(row))
            row = []
        row.append(test)
    rows.append(" or ".join(row))
    if len(rows) == 1:
        return [f"{INDENT}if {rows[0]}:"]
    lines = [f"{INDENT}if ({rows[0]}"]
    lines += [f"{INDENT * 3}or {r}" for r in rows[1:-1]]
    return lines + [f"{INDENT * 3}or {rows[-1]}):"]


def _tuple(names):
    if not names:
        return "None"
    return ", ".join(names) + ("," if len(names) == 1 else "")
