"""The text of fused loops (``compiler/optimize/loops.py`` finds the runs of array
statements; ``backend/numba_backend.py`` compiles the loop function in place of its twin).

``loop_lines(passes)`` takes the ``Pass``es of one generated function and gives the
(line, origin) pairs to write before it: per pass, a comment naming the statements it
fuses and the user's lines they come from, the loop function (one explicit loop over the
elements ``i`` of arrays of one length ``n``, which Numba compiles), its twin (the same
statements as numpy, which a run as Python takes: the first call's reference run, or
code Numba cannot compile) and the attribute that pairs them::

    def _y_1_pass1_loops(x, y_1, ones1, h_over2):
        n = x.shape[0]
        if y_1.shape[0] != n:
            raise ValueError("_y_1_pass1_loops: its arrays are not of one length")
        t5 = np.empty(n)
        ...
        for i in range(n):
            t2_i = (ones1[i] if i < 1 else y_1[i - 1])
            ...
            t5[i] = t5_i
        return t2, ...


    def _y_1_pass1(x, y_1, ones1, h_over2):
        # numpy's statements: what _y_1_pass1_loops computes, run as Python
        t2 = np.concatenate((ones1, y_1[:-1]))
        ...
        return t2, ...


    _y_1_pass1.numba_loops = _y_1_pass1_loops
"""
from ..syntax.source import INDENT
from .layout import render_mapped, wrap


def loop_lines(passes):
    """The (line, origin) pairs of ``passes``' functions (module doc)."""
    lines = []
    for fused in passes:
        lines += [(line, None) for line in _loops(fused)]
        lines += _twin(fused)
    return lines


def _loops(fused):
    where = f" of {', '.join(fused.where)}" if fused.where else ""
    order = "" if not fused.shifted else \
        ", down from n - 1: a read of i + k is an earlier iteration's" if fused.down else \
        ", up from 0: a read of i - k is an earlier iteration's"
    lines = wrap(f"# the {fused.count} array statements{where} ({fused.name} below) in "
                 f"one pass over their elements i{order}")
    params = ", ".join(fused.params)
    lines += wrap(f"def {fused.name}_loops({params}):")
    first, others = fused.arrays[0], fused.arrays[1:]
    lines.append(f"{INDENT}n = {first}.shape[0]")
    if others:
        tests = [f"{a}.shape[0] != n" for a in others]
        lines += _condition(tests)
        lines.append(f'{INDENT * 2}raise ValueError("{fused.name}_loops: its arrays are '
                     f'not of one length")')
    for array in fused.temporaries:
        lines.append(f"{INDENT}{array} = np.empty(n)")
    span = "range(n - 1, -1, -1)" if fused.down else "range(n)"
    lines.append(f"{INDENT}for i in {span}:")
    for line in fused.body + [f"{a}[i] = {local}" for a, local in fused.stores]:
        lines += wrap(f"{INDENT * 2}{line}")
    lines += wrap(f"{INDENT}return {_tuple(fused.results)}")
    return lines + ["", ""]


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


def _twin(fused):
    params = ", ".join(fused.params)
    lines = [(line, None) for line in wrap(f"def {fused.name}({params}):")]
    lines += [(line, None) for line in wrap(
        f"{INDENT}# numpy's statements: what {fused.name}_loops computes, run as Python")]
    lines += render_mapped(fused.statements, 1)
    lines += [(line, None) for line in wrap(f"{INDENT}return {_tuple(fused.outputs)}")]
    lines += [("", None), ("", None),
              (f"{fused.name}.numba_loops = {fused.name}_loops", None), ("", None),
              ("", None)]
    return lines


def _tuple(names):
    if not names:
        return "None"
    return ", ".join(names) + ("," if len(names) == 1 else "")
