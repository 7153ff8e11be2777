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
        lines += [(line, None) for line in _kernel(chain)]
    return lines


def _kernel(chain):
    params = chain.params
    base = chain.name[:-len("_fused")] if chain.name.endswith("_fused") else chain.name
    loops = f"{base}_loops"
    taken = set(params) | {"out", "out_i", "i", "j"}
    local = {}
    for p in params:
        local[p] = tuple(_fresh(f"{p}_{suffix}", taken) for suffix in ("r", "c", "i"))
    numpy = to_source(chain.expression)
    inner = to_source(_indexed(copy.deepcopy(chain.expression), local))
    where = "" if chain.where is None else \
        f" ({os.path.basename(chain.where.filename)}:{chain.where.lineno})"
    lines = wrap(f"# {'; '.join(chain.what)}{where}: {count(chain.expression)} operations "
                 f"in one pass over the elements")
    lines += wrap(f"def {loops}(out, {', '.join(params)}):")
    lines += wrap(f"{INDENT}# out[i, j] = {numpy} at (i, j); an operand of one row (column) "
                  f"is read at row (column) 0")
    for p in params:
        r, c, _ = local[p]
        lines.append(f"{INDENT}{r}, {c} = {p}.shape[0] > 1, {p}.shape[1] > 1")
    lines.append(f"{INDENT}for i in range(out.shape[0]):")
    for p in params:
        r, _, row = local[p]
        lines.append(f"{INDENT * 2}{row} = {p}[i * {r}]")
    lines += [f"{INDENT * 2}out_i = out[i]",
              f"{INDENT * 2}for j in range(out.shape[1]):"]
    lines += wrap(f"{INDENT * 3}out_i[j] = {inner}")
    lines += ["", ""]
    lines += wrap(f"{chain.name} = rt.Fused({loops}, lambda {', '.join(params)}: {numpy}, "
                  f"{count(chain.expression)})")
    return lines + ["", ""]


def _indexed(node, local):
    """``node`` with each parameter ``a`` read as ``a_i[j * a_c]``."""
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
    _, c, row = local[name]
    return gast.parse(f"{row}[j * {c}]", mode="eval").body


def _fresh(name, taken):
    while name in taken:
        name += "_"
    taken.add(name)
    return name
