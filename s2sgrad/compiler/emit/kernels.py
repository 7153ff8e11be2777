"""The text of fused elementwise kernels (``compiler/optimize/kernels.py`` finds the
chains; ``runtime/fused.py`` runs them).

``kernel_lines(chains)`` takes the ``Chain``s of one generated function and gives the
(line, None) pairs to write after it (``layout.after_the_function``): per chain, a comment with the statements it
fuses and the user's lines they come from, a function of explicit loops over 2-D
operands (``out[i, j] = <chain>``; an operand of one row or column is read at row or
column 0: ``i * a_r`` with ``a_r = a.shape[0] > 1``), which ``rt.Fused`` compiles with
``numba.njit(cache=True)`` when a call takes it, and the ``rt.Fused`` that pairs it with
the chain as numpy operators (for what the loops do not take: module doc of
``runtime/fused.py``)::

    def _dists_loops(out, a_sqr, b_sqr, t3):
        a_sqr_r, a_sqr_c = a_sqr.shape[0] > 1, a_sqr.shape[1] > 1
        ...
        for i in range(out.shape[0]):
            a_sqr_i = a_sqr[i * a_sqr_r]
            ...
            out_i = out[i]
            for j in range(out.shape[1]):
                out_i[j] = a_sqr_i[j * a_sqr_c] + b_sqr_i[j * b_sqr_c] - 2 * t3_i[j * t3_c]


    _dists_fused = rt.Fused(_dists_loops, lambda a_sqr, b_sqr, t3: a_sqr + b_sqr - 2 * t3, 3)

(the last number: how many operations the chain holds, for ``rt.Fused``'s choice).
A chain summed over an axis (``Chain.reduce``) is a function of loops over 3-D operands,
``out[i, k] += <chain>`` at ``(i, j, k)`` one ``j`` after the other (a row's sum in a
register), and ``rt.FusedSum(loops, numpy, operations, into=...)``, ``into`` writing
the chain's last numpy operation into a kept array (``runtime/fused_sum.py``).
"""
import copy
import os

import gast

from ..optimize.kernels import count
from ..syntax.source import INDENT, to_source
from .layout import wrap


def kernel_lines(chains):
    """The (line, None) pairs of ``chains``' kernels (module doc)."""
    lines = []
    for chain in chains:
        kernel = _kernel if chain.reduce is None else _sum_kernel
        lines += [(line, None) for line in kernel(chain)]
    return lines


def _kernel(chain):
    params = chain.params
    base = chain.name[:-len("_fused")] if chain.name.endswith("_fused") else chain.name
    loops = f"{base}_loops"
    # the output and loop indices named apart from the operands (a user's ``out``, ``i``)
    taken = set(params)
    out, out_i, i, j = (_fresh(name, taken) for name in ("out", "out_i", "i", "j"))
    local = {}
    for p in params:
        local[p] = tuple(_fresh(f"{p}_{suffix}", taken) for suffix in ("r", "c", "i"))
    numpy = to_source(chain.expression)
    inner = to_source(_indexed(copy.deepcopy(chain.expression),
                               {p: f"{row}[{j} * {c}]" for p, (_, c, row) in local.items()}))
    where = "" if chain.where is None else \
        f" ({os.path.basename(chain.where.filename)}:{chain.where.lineno})"
    lines = wrap(f"# {'; '.join(chain.what)}{where}: {count(chain.expression)} operations "
                 f"in one pass over the elements")
    lines += wrap(f"def {loops}({out}, {', '.join(params)}):")
    lines += wrap(f"{INDENT}# {out}[{i}, {j}] = {numpy} at ({i}, {j}); an operand of one row "
                  f"(column) is read at row (column) 0")
    for p in params:
        r, c, _ = local[p]
        lines.append(f"{INDENT}{r}, {c} = {p}.shape[0] > 1, {p}.shape[1] > 1")
    lines.append(f"{INDENT}for {i} in range({out}.shape[0]):")
    for p in params:
        r, _, row = local[p]
        lines.append(f"{INDENT * 2}{row} = {p}[{i} * {r}]")
    lines += [f"{INDENT * 2}{out_i} = {out}[{i}]",
              f"{INDENT * 2}for {j} in range({out}.shape[1]):"]
    lines += wrap(f"{INDENT * 3}{out_i}[{j}] = {inner}")
    lines += ["", ""]
    lines += wrap(f"{chain.name} = rt.Fused({loops}, lambda {', '.join(params)}: {numpy}, "
                  f"{count(chain.expression)})")
    return lines + ["", ""]


def _sum_kernel(chain):
    """The lines of a ``rt.FusedSum``'s loops (``runtime/fused_sum.py``): ``out[i, k]``
    the sum over ``j`` of the chain at ``(i, j, k)`` of 3-D operands."""
    params = chain.params
    base = chain.name[:-len("_fused")] if chain.name.endswith("_fused") else chain.name
    taken = set(params)
    out, out_i, i, j, k, n, total = (_fresh(name, taken) for name in (
        "out", "out_i", "i", "j", "k", "n", "total"))
    local = {p: tuple(_fresh(f"{p}_{suffix}", taken) for suffix in ("r", "s", "c", "i"))
             for p in params}
    numpy = to_source(chain.expression)

    def element(across):
        """The chain at (i, j, k) (``across``) or at (i, j, 0)."""
        return to_source(_indexed(copy.deepcopy(chain.expression), {
            p: f"{row}[{j} * {s}, {f'{k} * {c}' if across else 0}]"
            for p, (_, s, c, row) in local.items()}))
    axis, _ = chain.reduce
    operations = count(chain.expression)
    where = "" if chain.where is None else \
        f" ({os.path.basename(chain.where.filename)}:{chain.where.lineno})"
    lines = wrap(f"# {'; '.join(chain.what)}{where}: the sum over axis {axis} of "
                 f"{operations} operation{'s' if operations > 1 else ''} on the elements, "
                 f"made and added in one pass")
    lines += wrap(f"def {base}_loops({out}, {', '.join(params)}):")
    lines += wrap(f"{INDENT}# {out}[{i}, {k}] = the sum over {j} of {numpy} at ({i}, {j}, {k}), "
                  f"one {j} after the other; an operand of length 1 along an axis is read at "
                  f"0 there")
    for p in params:
        r, s, c, _ = local[p]
        lines.append(f"{INDENT}{r}, {s}, {c} = {p}.shape[0] > 1, {p}.shape[1] > 1, "
                     f"{p}.shape[2] > 1")
    lengths = [f"{p}.shape[1]" for p in params]
    lines += wrap(f"{INDENT}{n} = " + (f"max({', '.join(lengths)})" if len(params) > 1 else
                                       lengths[0]))
    lines.append(f"{INDENT}for {i} in range({out}.shape[0]):")
    for p in params:
        r, _, _, row = local[p]
        lines.append(f"{INDENT * 2}{row} = {p}[{i} * {r}]")
    lines += [f"{INDENT * 2}{out_i} = {out}[{i}]",
              f"{INDENT * 2}if {out}.shape[1] == 1:        # a row: its sum in a register",
              f"{INDENT * 3}{total} = 0.0",
              f"{INDENT * 3}for {j} in range({n}):"]
    lines += wrap(f"{INDENT * 4}{total} += {element(False)}")
    lines += [f"{INDENT * 3}{out_i}[0] = {total}",
              f"{INDENT * 2}else:",
              f"{INDENT * 3}{out_i}[:] = 0.0",
              f"{INDENT * 3}for {j} in range({n}):",
              f"{INDENT * 4}for {k} in range({out}.shape[1]):"]
    lines += wrap(f"{INDENT * 5}{out_i}[{k}] += {element(True)}")
    lines += ["", ""]
    lines += wrap(f"{chain.name} = rt.FusedSum({base}_loops, lambda {', '.join(params)}: "
                  f"{numpy}, {operations}, into=lambda {out}, {', '.join(params)}: "
                  f"{_into(chain.expression, out)})")
    return lines + ["", ""]


#: the ufunc of each operator of a chain
UFUNCS = {gast.Add: "add", gast.Sub: "subtract", gast.Mult: "multiply",
          gast.Div: "true_divide"}


def _into(node, out):
    """The numpy source of the chain ``node`` with its last operation written into
    ``out`` (``x ** 2`` as ``np.square``, numpy's own spelling of it: the same bits)."""
    if isinstance(node, gast.BinOp) and type(node.op) in UFUNCS:
        return (f"np.{UFUNCS[type(node.op)]}({to_source(node.left)}, "
                f"{to_source(node.right)}, out={out})")
    if isinstance(node, gast.BinOp):                     # ** 2 (kernels.operation)
        return f"np.square({to_source(node.left)}, out={out})"
    if isinstance(node, gast.UnaryOp):
        return f"np.negative({to_source(node.operand)}, out={out})"
    return f"np.{node.func.attr}({to_source(node.args[0])}, out={out})"


def _indexed(node, local):
    """``node`` with each parameter read as its element (``local``: per parameter the
    element's source, ``a_i[j * a_c]``)."""
    for parent in gast.walk(node):
        for field, value in gast.iter_fields(parent):
            if isinstance(value, gast.Name) and value.id in local:
                setattr(parent, field, _element(value.id, local))
            elif isinstance(value, list):
                setattr(parent, field, [_element(v.id, local) if isinstance(v, gast.Name) and
                                        v.id in local else v for v in value])
    if isinstance(node, gast.Name) and node.id in local:
        return _element(node.id, local)
    return node


def _element(name, local):
    return gast.parse(local[name], mode="eval").body


def _fresh(name, taken):
    while name in taken:
        name += "_"
    taken.add(name)
    return name
