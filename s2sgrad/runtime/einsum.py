"""``np.einsum`` through BLAS, and its adjoints in all its forms, for ``s2sgrad.runtime``.

``einsum(subscripts, a, b)`` is ``np.einsum`` with the same arguments; a contraction
of two operands whose letters each appear once per operand (a batch letter in both
operands and the output, a free letter in one operand and the output, a summed
letter in both operands only: ``"ijk,mik->mij"``) runs as one ``np.matmul`` of the
operands transposed and reshaped to (batch, free, summed) x (batch, summed, free),
which is BLAS, where ``np.einsum`` without ``optimize`` runs its own unblocked loop
(10-50x slower on GradBench's gmm); any other call is ``np.einsum``'s.  The generated
forward sweep writes the user's two-operand ``np.einsum`` calls as ``rt.einsum``
(compiler/front/spellings.py), and every adjoint below contracts through it.

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
import functools
import math
import string

import numpy as np

_LETTERS = string.ascii_uppercase + string.ascii_lowercase   # numpy's sublist numbering

# the multiply-adds from which a contraction runs as a matmul: below it, np.einsum's
# own loop beats the transposes and reshapes (measured: benchmarks/bench_einsum.py)
MATMUL_WORK = 4096

# the multiply-adds per matrix-vector product of a stack below which np.einsum's loop
# beats np.matmul's (a 6 x 6 stack: 52 against 69 us, 8 x 8 even, 16 x 16: 179 against 104)
STACKED_MATVEC_WORK = 64


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


@functools.lru_cache(maxsize=256)
def _matmul_plan(spec, a_ndim, b_ndim):
    """How ``np.einsum(spec, a, b)`` runs as a matmul: (a's axes in (batch, free, summed)
    order, b's in (batch, summed, free) order, the letters of the matmul's result
    (batch, a's free, b's free), the output's order of those letters), or None when
    ``spec`` is not such a contraction (a repeated letter, a letter in one operand only,
    ``...``, not two operands)."""
    if "->" not in spec or "." in spec:
        return None
    inputs, output = spec.split("->")
    terms = inputs.split(",")
    if len(terms) != 2 or (len(terms[0]), len(terms[1])) != (a_ndim, b_ndim):
        return None
    a, b = terms
    if any(len(set(t)) != len(t) for t in (a, b, output)) or set(output) - set(a + b) \
            or (set(a) ^ set(b)) - set(output):
        return None
    batch = [c for c in output if c in a and c in b]
    left = [c for c in a if c in output and c not in b]
    right = [c for c in b if c in output and c not in a]
    summed = [c for c in a if c in b and c not in output]
    a_axes = tuple(a.index(c) for c in batch + left + summed)
    b_axes = tuple(b.index(c) for c in batch + summed + right)
    letters = batch + left + right
    return a_axes, b_axes, (len(batch), len(left), len(summed), len(right)), \
        tuple(letters.index(c) for c in output)


def einsum(*operands):
    """``np.einsum(*operands)``, as one BLAS matmul where the call is a two-operand
    contraction of at least ``MATMUL_WORK`` multiply-adds (module doc)."""
    return einsum_into(None, *operands)


def einsum_into(out, *operands):
    """``einsum(*operands)`` written into ``out`` (a C-ordered array of the result's shape
    and dtype: ``rt.Kept``), or a new array when ``out`` is None."""
    if len(operands) != 3 or not isinstance(operands[0], str):
        return np.einsum(*operands, out=out)
    spec, a, b = operands
    if not (isinstance(a, np.ndarray) and isinstance(b, np.ndarray)) \
            or a.dtype.kind not in "fc" or b.dtype.kind not in "fc":
        return np.einsum(*operands, out=out)
    spec, a, b = _oriented(spec, a, b)
    plan = _matmul_plan(spec, a.ndim, b.ndim)
    stacked = None if plan is not None and plan[3] == tuple(range(len(plan[3]))) else \
        _stacked_plan(spec, a.shape, b.shape)       # (the product in the output's order)
    if stacked is not None:
        return _stacked_product(a, b, stacked, out)
    if plan is None:
        return np.einsum(*operands, out=out)
    a_axes, b_axes, (nb, nl, ns, nr), order = plan
    at, bt = a.transpose(a_axes), b.transpose(b_axes)
    batch, left, right = at.shape[:nb], at.shape[nb:nb + nl], bt.shape[nb + ns:]
    summed = at.shape[nb + nl:]
    if bt.shape[:nb] != batch or bt.shape[nb:nb + ns] != summed:
        return np.einsum(*operands, out=out)    # sizes numpy would broadcast or refuse
    rows, inner, cols = math.prod(left), math.prod(summed), math.prod(right)
    if math.prod(batch) * rows * inner * cols < MATMUL_WORK:
        return np.einsum(*operands, out=out)
    if not _pays_as_matmul(math.prod(batch), rows, inner, cols):
        return np.einsum(*operands, out=out, order="C")     # (an outer product's is not)
    size = math.prod(batch) * rows * cols
    return _product_in_order(_rows_contiguous(at.reshape(batch + (rows, inner)), size),
                             _rows_contiguous(bt.reshape(batch + (inner, cols)), size),
                             batch + left + right, order, out)


@functools.lru_cache(maxsize=256)
def _stacked_letters(spec):
    """``spec`` as a stack of products laid out as its output: (the output's leading
    letters, each a stack axis of one operand or both, broadcast where one lacks it;
    ``a``'s letters in ``a @ b``'s order: stack, free, summed; ``b``'s: stack, summed,
    free), the fewest leading letters that leave the rest of the output ``a``'s free
    letters then ``b``'s; or None (no such split, a repeated letter, ``...``)."""
    if "->" not in spec or "." in spec:
        return None
    inputs, output = spec.split("->")
    terms = inputs.split(",")
    if len(terms) != 2:
        return None
    a, b = terms
    if any(len(set(t)) != len(t) for t in (a, b, output)) or set(output) - set(a + b) \
            or (set(a) ^ set(b)) - set(output):
        return None
    summed = [c for c in a if c in b and c not in output]
    for p in range(len(output) + 1):
        stack, rest = output[:p], output[p:]
        left = rest[:len([c for c in rest if c in a])]
        right = rest[len(left):]
        if all(c in a and c not in b for c in left) and all(c in b and c not in a
                                                            for c in right):
            return stack, left, right, "".join(summed)
    return None


def _stacked_plan(spec, a_shape, b_shape):
    """How ``np.einsum(spec, a, b)`` runs as ``np.matmul`` of a stack of matrices whose
    product is the output as it is laid out (no copy into the output's order): ht's
    ``"vk,Zbjk->Zbvj"`` is (544, 4) @ each (4, 4) of a (26, 22) stack, 0.8 ms, where
    one (544, 4) @ (4, 2288) product then copied into that order took 4-7 ms.  None
    where there is no such split, no stack, or where each product is under
    ``MATMUL_WORK`` multiply-adds (gmm's ``"ijk,mik->mij"``: a (1 x 10) @ (10 x 10) per
    stack entry) or a matrix times a vector."""
    letters = _stacked_letters(spec)
    if letters is None:
        return None
    stack, left, right, summed = letters
    inputs = spec.split("->")[0].split(",")
    sizes = dict(zip(inputs[0], a_shape))
    sizes.update(zip(inputs[1], b_shape))
    if any(sizes[c] != n for t, shape in zip(inputs, (a_shape, b_shape))
           for c, n in zip(t, shape)):
        return None         # sizes numpy would broadcast or refuse
    rows, inner, cols = (math.prod(sizes[c] for c in part) for part in (left, summed, right))
    if not stack or rows * inner * cols < MATMUL_WORK or min(rows, cols) < 2:
        return None         # no stack (``_matmul_plan``'s), or small or thin products
    return inputs, letters, sizes


def _stacked_product(a, b, plan, out):
    """``np.einsum`` of ``a`` and ``b`` by ``_stacked_plan``'s ``plan``: each operand's
    stack axes first (a unit axis where it lacks one), its matrix axes merged."""
    (ta, tb), (stack, left, right, summed), sizes = plan

    def arranged(x, term, first, second):
        axes = [term.index(c) for c in stack + first + second if c in term]
        shape = tuple(sizes[c] if c in term else 1 for c in stack) + (
            math.prod(sizes[c] for c in first), math.prod(sizes[c] for c in second))
        return x.transpose(axes).reshape(shape)
    shape = tuple(sizes[c] for c in stack + left + right)
    if out is None or not out.flags.c_contiguous:
        out = np.empty(shape, np.result_type(a, b))
    target = out.reshape(tuple(sizes[c] for c in stack) +
                         (math.prod(sizes[c] for c in left), math.prod(sizes[c] for c in right)))
    size = target.size
    np.matmul(_rows_contiguous(arranged(a, ta, left, summed), size),
              _rows_contiguous(arranged(b, tb, summed, right), size), out=target)
    return out


def _oriented(spec, a, b):
    """``(spec, a, b)`` with the operands swapped when the output's last letter is a free
    letter of ``a``: the product's columns are then the output's last axis, and BLAS
    writes its rows with unit stride (gmm's ``"ijk,mik->mij"``: 0.50 -> 0.19 ms; the
    other way numpy leaves BLAS for its own loop).  The same sums, in BLAS's order."""
    if "->" not in spec or "." in spec:
        return spec, a, b
    inputs, output = spec.split("->")
    terms = inputs.split(",")
    if len(terms) != 2 or not output or output[-1] not in terms[0] or output[-1] in terms[1]:
        return spec, a, b
    return f"{terms[1]},{terms[0]}->{output}", b, a


def _pays_as_matmul(stacked, rows, inner, cols):
    """Whether a contraction of ``stacked`` products of (rows x inner) @ (inner x cols)
    runs faster as ``np.matmul`` than as ``np.einsum``'s loop, its total work aside
    (benchmarks/bench_einsum.py, 2-core Zen 5): not an outer product (nothing summed:
    ``"i,j->ij"`` of 1,000 each 1,253 against 283 us, ``"n,nd->nd"`` 108 against 57:
    BLAS with an inner size of one), not a stack of dot products (``"nd,nd->n"``, 10,000
    x 8: 88 against 47 us, kmeans' distances by rows and their adjoints), and not a
    stack of small matrix-vector products (``STACKED_MATVEC_WORK``)."""
    if inner == 1:
        return False
    if stacked > 1 and min(rows, cols) == 1:
        return rows * inner * cols >= STACKED_MATVEC_WORK and max(rows, cols) > 1
    return True


def _rows_contiguous(m, size):
    """The stack of matrices ``m`` C-ordered when its rows are not contiguous and it is no
    larger than the product (``size`` numbers): numpy's matmul takes BLAS only for
    matrices of unit-stride rows (or columns) in every batch, and a copy of a small
    operand costs less than its loop (gmm's transposed 25 x 10 x 10 factors)."""
    if m.ndim < 2 or m.strides[-1] == m.itemsize or m.size > size:
        return m
    return np.ascontiguousarray(m)


def _product_in_order(a, b, shape, order, out=None):
    """``np.matmul(a, b).reshape(shape).transpose(order)`` as a C-ordered array: BLAS
    writes the product straight into the output's layout where its axes allow, else it
    is copied there once.  A transposed view would cost far more than the copy in every
    elementwise pass that reads it next to C-ordered arrays (gmm: 5 ms against 0.2)."""
    if out is None or not out.flags.c_contiguous:
        out = np.empty(tuple(shape[k] for k in order), np.result_type(a, b))
    target = out.transpose(np.argsort(order))
    try:
        target = target.view()
        target.shape = a.shape[:-1] + b.shape[-1:]
    except AttributeError:      # the axes merged for the product are not adjacent there
        out[...] = np.matmul(a, b).reshape(shape).transpose(order)
        return out
    np.matmul(a, b, out=target)
    return out


def einsum_adjoint(g, terms, output, arrays, index, contract=einsum):
    """The adjoint of ``arrays[index]`` in the explicit einsum ``terms -> output``;
    ``contract``: how the contraction with the output adjoint runs (``rt.Kept``'s
    ``einsum``: into the array it made last call)."""
    target = terms[index]
    others = [t for i, t in enumerate(terms) if i != index]
    rest = [a for i, a in enumerate(arrays) if i != index]
    unique = "".join(dict.fromkeys(target))
    kept = "".join(c for c in unique if c in output or any(c in t for t in others))
    partial = contract(",".join([output] + others) + "->" + kept, g, *rest)
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
    dtype = np.result_type(g, arrays[index], 0.0)
    if len(unique) == len(target):
        if rest and full.shape == partial.shape and partial.dtype == dtype:
            return partial    # a new array (einsum of g with other operands): no copy
        return np.array(full, dtype=dtype)
    out = np.zeros(shape, dtype=dtype)
    np.einsum(target + "->" + unique, out)[...] = full    # the diagonal, a writeable view
    return out


def einsum_adjoints(g, operands, contract=einsum, only=None):
    """One entry per positional argument of ``np.einsum(*operands)``: the adjoint of each
    array operand, None for the subscripts and the sublists (``contract``:
    ``einsum_adjoint``'s); ``only``: the positions whose adjoints are wanted (None for the
    others; ``rt.operand_adjoints_tangent``'s)."""
    terms, output, arrays = explicit_spec(operands)
    positions = _parse(operands)[3]
    result = [None] * len(operands)
    for index, position in enumerate(positions):
        if only is None or position in only:
            result[position] = einsum_adjoint(g, terms, output, arrays, index, contract)
    return result


def einsum_operand_positions(operands):
    """The positions of ``np.einsum(*operands)``'s array operands among its arguments."""
    return tuple(_parse(operands)[3])


# ------------------------------------------------- an einsum of (a slice of) an einsum

def _letter_slices(term, index):
    """{letter: slice} of a tuple of basic slices ``index`` over ``term``'s leading axes,
    or None for any other index (an int, ``None``, ``...``, a slice of a repeated letter)."""
    items = index if isinstance(index, tuple) else (index,)
    if len(items) > len(term) or not all(isinstance(i, slice) for i in items) or \
            len(set(term)) != len(term):
        return None
    return {c: s for c, s in zip(term, items) if s != slice(None)}


def _sliced(x, term, cuts):
    """``x`` with each axis of a letter of ``cuts`` sliced by it."""
    if not any(c in cuts for c in term):
        return x
    return x[tuple(cuts.get(c, slice(None)) for c in term)]


def einsum_sliced(spec, a, b, index):
    """``einsum(spec, a, b)[index]`` for an ``index`` of basic slices: the operands' axes
    of the sliced letters are sliced instead, and only the kept part of the product is
    made (ht's ``np.einsum("vk,bjk->bvj", p, t)[:, :, :3]``: three of four columns)."""
    terms, output = (spec.split("->")[0].split(","), spec.split("->")[1]) \
        if "->" in spec and "." not in spec else (None, None)
    cuts = _letter_slices(output, index) if output is not None else None
    if cuts is None or len(terms) != 2:
        return einsum(spec, a, b)[index]
    return einsum(spec, _sliced(a, terms[0], cuts), _sliced(b, terms[1], cuts))


def einsum_chain(spec, at, c, inner, a, b, index=()):
    """``einsum(spec, *operands)`` where operand ``at`` (0 or 1) is ``einsum(inner, a,
    b)[index]`` and the other is ``c``: the three operands contracted two at a time in
    the cheaper order (ht's ``einsum("vb,bvj->vj", w, einsum("vk,bjk->bvj", p, t)[:, :,
    :3])`` is ``w`` and ``p`` made one (v, b, k) operand, then one product with ``t``,
    never the (22, 544, 4) stack of moved points; with a batch of 26 tangents first:
    11 -> 0.3 ms).  The sums are the same up to their order."""
    plan = _chain_plan(spec, at, inner, np.ndim(c), np.ndim(a), np.ndim(b), index)
    if plan is None or not all(isinstance(x, np.ndarray) and x.dtype.kind in "fc"
                               for x in (a, b, c)):
        y = einsum_sliced(inner, a, b, index) if index != () else einsum(inner, a, b)
        return einsum(spec, *((y, c) if at == 0 else (c, y)))
    (ta, tb, tc), output, cuts = plan
    operands = [(_sliced(a, ta, cuts), ta), (_sliced(b, tb, cuts), tb), (c, tc)]
    first, second = _cheaper_pair(operands, output)
    (x, tx), (y, ty) = operands[first], operands[second]
    (z, tz), = [operands[k] for k in range(3) if k not in (first, second)]
    kept = "".join(dict.fromkeys(ch for ch in tx + ty if ch in tz + output))
    xy = einsum(f"{tx},{ty}->{kept}", x, y)
    return einsum(f"{kept},{tz}->{output}", xy, z)


@functools.lru_cache(maxsize=256)
def _chain_letters(spec, at, inner):
    """(a's, b's and c's terms, the output) of ``einsum_chain`` in one alphabet: the
    outer term of the inner result takes the inner output's letters, the outer's other
    letters fresh ones; or None (``...``, an implicit output, a repeated letter, not two
    operands each)."""
    if any("->" not in s or "." in s for s in (spec, inner)):
        return None
    (outer, output), (inputs, made) = spec.split("->"), inner.split("->")
    outer, inputs = outer.split(","), inputs.split(",")
    if len(outer) != 2 or len(inputs) != 2 or len(outer[at]) != len(made) or any(
            len(set(t)) != len(t) for t in outer + inputs + [made, output]):
        return None
    names = dict(zip(outer[at], made))
    free = (ch for ch in _LETTERS if ch not in inner)
    for ch in outer[1 - at] + output:
        if ch not in names:
            names[ch] = next(free)
    rename = "".join
    return inputs[0], inputs[1], rename(names[ch] for ch in outer[1 - at]), \
        rename(names[ch] for ch in output), made


def _chain_plan(spec, at, inner, c_ndim, a_ndim, b_ndim, index):
    """``_chain_letters`` and the letters the index slices, or None."""
    letters = _chain_letters(spec, at, inner)
    if letters is None:
        return None
    ta, tb, tc, output, made = letters
    cuts = _letter_slices(made, index) if index != () else {}
    if cuts is None or (len(ta), len(tb), len(tc)) != (a_ndim, b_ndim, c_ndim):
        return None
    return (ta, tb, tc), output, cuts


def _cheaper_pair(operands, output):
    """The positions of the two of three ``(array, term)`` operands to contract first:
    the fewest multiply-adds over both contractions."""
    sizes = {}
    for x, term in operands:
        sizes.update(zip(term, np.shape(x)))

    def work(letters):
        return math.prod(sizes[ch] for ch in set(letters))
    best = None
    for first, second in ((0, 1), (0, 2), (1, 2)):
        tx, ty = operands[first][1], operands[second][1]
        tz = [operands[k][1] for k in range(3) if k not in (first, second)][0]
        kept = [ch for ch in tx + ty if ch in tz + output]
        cost = work(tx + ty) + work(kept + list(tz))
        if best is None or cost < best[0]:
            best = (cost, first, second)
    return best[1], best[2]
