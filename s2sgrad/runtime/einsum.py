"""The adjoints of ``np.einsum`` in all its forms, for ``s2sgrad.runtime``.

``einsum_adjoints(g, operands)`` takes the output adjoint and the call's
positional arguments as written: ``("ij,jk->ki", a, b)`` (subscripts) or
``(a, [0, 1], b, [1, 2])`` / ``(a, [0, 1], b, [1, 2], [2, 0])`` (sublists).
It gives one entry per positional argument: the adjoint of each array
operand, None for the subscripts string and for the sublists.

Every form is first made explicit (``explicit_spec``): sublists become
letters, ``...`` becomes letters for the broadcast axes, an implicit output
is written out.  Each operand's adjoint is then one einsum of the output
adjoint with the other operands; letters repeated in one operand (a diagonal,
``"ii->i"``) are written back onto the diagonal, and axes the operand
broadcast (size 1 against a longer axis) are summed back to size 1.
"""
import string

import numpy as np

_LETTERS = string.ascii_uppercase + string.ascii_lowercase   # numpy's sublist numbering


def _sublist_term(sublist):
    """A sublist (ints, ``Ellipsis``) as a subscripts term."""
    return "".join("..." if s is Ellipsis else _LETTERS[int(s)] for s in sublist)


def _parse(operands):
    """(input terms, output term or None, arrays, positions of the arrays among operands)."""
    if isinstance(operands[0], str):
        spec = operands[0].replace(" ", "")
        inputs, output = spec.split("->") if "->" in spec else (spec, None)
        return inputs.split(","), output, list(operands[1:]), list(range(1, len(operands)))
    items = list(operands)
    output = _sublist_term(items.pop()) if len(items) % 2 else None
    return ([_sublist_term(s) for s in items[1::2]], output, items[0::2],
            list(range(0, len(items), 2)))


def explicit_spec(operands):
    """The einsum call ``operands`` as (input terms, output term, arrays) with every letter
    explicit: no ``...``, an output term even when the call left it implicit."""
    terms, output, arrays = _parse(operands)[:3]
    used = set("".join(terms) + (output or "")) - {"."}
    free = [c for c in _LETTERS if c not in used]
    widths = [np.ndim(a) - (len(t) - 3) if "..." in t else 0 for t, a in zip(terms, arrays)]
    width = max(widths, default=0)
    pool = "".join(free[:width])
    terms = [t.replace("...", pool[width - w:]) if "..." in t else t
             for t, w in zip(terms, widths)]
    if output is None:
        letters = "".join(terms)
        output = pool + "".join(sorted(c for c in set(letters) - set(pool)
                                       if letters.count(c) == 1))
    else:
        output = output.replace("...", pool)
    return terms, output, arrays


def einsum_adjoint(g, terms, output, arrays, index):
    """The adjoint of ``arrays[index]`` in the explicit einsum ``terms -> output``."""
    target = terms[index]
    others = [t for i, t in enumerate(terms) if i != index]
    rest = [a for i, a in enumerate(arrays) if i != index]
    unique = "".join(dict.fromkeys(target))
    kept = "".join(c for c in unique if c in output or any(c in t for t in others))
    partial = np.einsum(",".join([output] + others) + "->" + kept, g, *rest)
    partial = np.expand_dims(partial, tuple(i for i, c in enumerate(unique) if c not in kept))
    shape = np.shape(arrays[index])
    sizes = {}
    for c, n in zip(target, shape):
        sizes[c] = n
    # axes the operand broadcast (size 1 against a longer axis elsewhere) are summed back
    wide = tuple(i for i, c in enumerate(unique) if sizes[c] == 1 and partial.shape[i] > 1)
    if wide:
        partial = np.sum(partial, axis=wide, keepdims=True)
    full = np.broadcast_to(partial, tuple(sizes[c] for c in unique))
    if len(unique) == len(target):
        return np.array(full, dtype=np.result_type(g, arrays[index], 0.0))
    out = np.zeros(shape, dtype=np.result_type(g, arrays[index], 0.0))
    np.einsum(target + "->" + unique, out)[...] = full    # the diagonal, a writeable view
    return out


def einsum_adjoints(g, operands):
    """One entry per positional argument of ``np.einsum(*operands)``: the adjoint of each
    array operand, None for the subscripts and the sublists."""
    terms, output, arrays = explicit_spec(operands)
    positions = _parse(operands)[3]
    result = [None] * len(operands)
    for index, position in enumerate(positions):
        result[position] = einsum_adjoint(g, terms, output, arrays, index)
    return result
