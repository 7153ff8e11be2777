"""A scaled operand added to a contraction of the same operand, folded into the
contraction's matrix: ``a * x + np.einsum("ijk,mik->mij", P, x)`` ->
``np.einsum("ijk,mik->mij", P + np.einsum("ij,jk->ijk", a, np.eye(n)), x)``.

``diagonal_folds(lowered, names)`` takes a lowered function (before the reverse pass)
and rewrites its top-level statements in place; it gives the number of folds.

``a * x`` is the contraction of ``x`` with ``a`` on a diagonal: ``D x + P x = (D + P) x``
(the diagonal written ``a[:, :, None] * eye`` where the letters allow).
The folded form makes one pass over the contraction's output instead of three (the
product, the contraction, the sum), and its adjoint one contraction instead of three
passes (``d(a * x)``'s two and the sum of ``dx``'s parts): ``a``'s adjoint is the
diagonal of the matrix's, a contraction of the small matrix.  Only plain numpy
primitives are written (``np.eye``, ``np.einsum``, ``+``), so every transform of the
result (grad of grad, jvp, vmap) goes through their rules.

It applies where, in the order of the statements with nothing between them but Ops:
``t = a * x`` (or ``x * a``), ``c = np.einsum(spec, P, x)`` (either operand order) and
``y = t + c`` (or ``c + t``), ``t`` and ``c`` read nowhere else, and

- ``spec`` is explicit, two terms, no ``...``, no letter twice in a term; ``x``'s term and
  the output's differ at one position only: ``x`` has the summed letter ``k`` where the
  output has ``j`` (a matrix-vector product along that axis);
- ``a``'s axes (aligned with the output's last ones, as broadcasting aligns them) have
  letters of ``P``'s term, and ``P``'s term has no letter other than those, ``j`` and ``k``
  (so ``P + E`` with ``E[..j..k] = a[..j..] * (j == k)`` is the whole matrix);
- ``x`` has a letter ``P`` has not (a batch of products: the fold then writes a matrix of
  ``P``'s size to save passes over the larger output);
- the ranks and shapes of ``a``, ``x`` and ``P`` are known and none of their dimensions may
  be 1 (broadcasting along a size-1 axis would give another sum), and all are float64.
"""
import operator

import gast
import numpy as np

from ... import primitives as prims
from ...rules import lookup
from ..ir import Const, Op, Seq, Var
from .spellings import forward_expression
from . import literals

_PRODUCTS = (operator.mul, np.multiply)
_SUMS = (operator.add, np.add)


def diagonal_folds(lowered, names):
    """Fold each ``a * x + einsum(spec, P, x)`` of ``lowered``'s top-level statements
    (module doc); ``names``: the function's name allocator.  Gives how many it folded."""
    uses = _uses(lowered)
    body, folded = lowered.body, 0
    index = 0
    while index < len(body):
        plan = _plan(lowered, body, index, uses)
        if plan is None:
            index += 1
            continue
        first, dropped, made = plan
        kept = [s for s in body[first:index] if s.targets[0] not in dropped]
        new = made(names)
        body[first:index + 1] = kept + new
        index = first + len(kept) + len(new)
        folded += 1
    return folded


def _plan(lowered, body, index, uses):
    """``(position of the first statement replaced, the names dropped, the new Ops as a
    function of the name allocator)`` for the sum at ``body[index]``, or None when it is
    not a fold (module doc)."""
    add = body[index]
    if not (isinstance(add, Op) and add.primitive in _SUMS and len(add.args) == 2
            and not add.kwargs and all(isinstance(a, Var) for a in add.args)):
        return None
    producers = {}
    for position in range(index - 1, -1, -1):
        stmt = body[position]
        if not isinstance(stmt, Op):
            break
        producers[stmt.targets[0]] = (position, stmt)
    parts = [producers.get(a.name) for a in add.args]
    if None in parts or any(uses.get(a.name, 0) != 1 for a in add.args):
        return None
    (_, first_op), (_, second_op) = parts
    product, contraction = (first_op, second_op) if first_op.primitive in _PRODUCTS else \
        (second_op, first_op)
    if product.primitive not in _PRODUCTS or contraction.primitive is not np.einsum or \
            len(product.args) != 2 or product.kwargs or contraction.kwargs:
        return None
    terms = _terms(contraction.args)
    if terms is None:
        return None
    (p_term, p), (x_term, x), out = terms
    scale = [a for a in product.args if a != x]
    if len(scale) != 1 or x not in product.args or not isinstance(scale[0], Var):
        return None
    a = scale[0]
    a_term = _scale_term(lowered, a, p_term, x_term, out, p, x)
    if a_term is None:
        return None
    j, k = next((o, c) for o, c in zip(out, x_term) if o != c)
    first = min(parts[0][0], parts[1][0])
    target = add.targets[0]

    def ops(names):
        shape = names.temp(None, f"{x.name}_shape")
        size = names.temp(None, f"{x.name}_{k}")
        eye, diagonal, matrix = (names.temp(None, w) for w in ("eye", "diagonal", "matrix"))
        made = [_op(shape, prims.SHAPE, (x,), gast.Attribute(
                    value=gast.Name(x.name, gast.Load(), None, None), attr="shape",
                    ctx=gast.Load()), add),
                _op(size, prims.GETITEM, (Var(shape), Const(x_term.index(k))), gast.Subscript(
                    value=gast.Name(shape, gast.Load(), None, None),
                    slice=gast.Constant(x_term.index(k), None), ctx=gast.Load()), add),
                _op(eye, np.eye, (Var(size),), None, add)]
        made += _diagonal(names, diagonal, a, a_term, p_term, j, k, Var(eye), add, lowered)
        made.append(_op(matrix, operator.add, (p, Var(diagonal)), None, add))
        operands = (Var(matrix), x) if contraction.args[1] == p else (x, Var(matrix))
        made.append(_op(target, np.einsum, (contraction.args[0],) + operands, None, add))
        lowered.int_vars.add(size)
        for name, rank in ((size, 0), (eye, 2), (diagonal, len(p_term)),
                           (matrix, len(p_term)), (target, len(out))):
            lowered.ndims[name] = rank
        for name in (eye, diagonal, matrix, target):
            lowered.dtypes[name] = lowered.dtypes[x.name]
        # P + E: E broadcasts to P's shape (no dimension of either may be 1)
        lowered.shapes.of[matrix] = lowered.shapes.of[p.name]
        return made
    return first, {product.targets[0], contraction.targets[0]}, ops


def _diagonal(names, diagonal, a, a_term, p_term, j, k, eye, like, lowered):
    """The Ops of ``diagonal``, ``a`` on the diagonal of ``p_term``'s letters ``j`` and
    ``k``: ``a[:, :, None] * eye`` where ``a``'s letters are in ``p_term``'s order and ``j``
    and ``k`` are its last two (the identity is symmetric: either order), else
    ``np.einsum("ij,jk->ijk", a, eye)`` (whose adjoint contracts the identity too)."""
    if [c for c in p_term if c in a_term] != list(a_term) or set(p_term[-2:]) != {j, k}:
        return [_op(diagonal, np.einsum, (Const(f"{a_term},{j}{k}->{p_term}"), a, eye),
                    None, like)]
    index = tuple(slice(None) if c in a_term else None for c in p_term)
    expanded = names.temp(None, f"{a.name}_expanded")
    view = _op(expanded, prims.GETITEM, (a, Const(index)), gast.Subscript(
        value=gast.Name(a.name, gast.Load(), None, None), slice=gast.Tuple(
            [gast.Slice(None, None, None) if i is not None else gast.Constant(None, None)
             for i in index], gast.Load()), ctx=gast.Load()), like)
    view.basic_index = True
    lowered.ndims[expanded] = len(p_term)
    lowered.dtypes[expanded] = lowered.dtypes[a.name]
    product = _op(diagonal, operator.mul, (Var(expanded), eye), gast.BinOp(
        left=gast.Name(expanded, gast.Load(), None, None), op=gast.Mult(),
        right=gast.Name(eye.name, gast.Load(), None, None)), like)
    return [view, product]


def _terms(args):
    """``((P's term, P), (x's term, x), output term)`` for each way of reading a two-operand
    einsum as a matrix applied to ``x`` (the first that fits), or None."""
    if len(args) != 3 or not isinstance(args[0], Const) or not isinstance(args[0].value, str):
        return None
    spec = args[0].value.replace(" ", "")
    if "->" not in spec or "." in spec:
        return None
    inputs, out = spec.split("->")
    terms = inputs.split(",")
    if len(terms) != 2 or not all(isinstance(a, Var) for a in args[1:]) or \
            any(len(set(t)) != len(t) for t in terms + [out]):
        return None
    for x_at in (1, 0):
        x_term, p_term = terms[x_at], terms[1 - x_at]
        if len(x_term) != len(out):
            continue
        changed = [(o, c) for o, c in zip(out, x_term) if o != c]
        if len(changed) != 1:
            continue
        j, k = changed[0]
        if k in out or j in x_term or j not in p_term or k not in p_term:
            continue
        return (p_term, args[2 - x_at]), (x_term, args[1 + x_at]), out
    return None


def _scale_term(lowered, a, p_term, x_term, out, p, x):
    """The letters of ``a``'s axes (aligned with the output's last ones) where the fold
    holds (module doc), else None."""
    rank = lowered.ndims.get(a.name)
    if rank is None or rank > len(out):
        return None
    a_term = out[len(out) - rank:]
    j, k = next((o, c) for o, c in zip(out, x_term) if o != c)
    if not set(a_term) <= set(p_term) or not set(p_term) <= set(a_term) | {j, k} or \
            set(x_term) <= set(p_term):
        return None
    shapes = lowered.shapes
    for atom, term in ((a, a_term), (p, p_term), (x, x_term)):
        shape = shapes.of.get(atom.name) if shapes is not None else None
        if lowered.ndims.get(atom.name) != len(term) or not isinstance(shape, tuple) or \
                len(shape) != len(term) or not shapes.no_unit_dims(shape) or \
                lowered.dtypes.get(atom.name) != np.dtype(np.float64):
            return None
    return a_term


def _op(target, prim, args, expr, like):
    """An Op of ``prim`` on ``args`` tagged with ``like``'s line; ``expr`` None: the call
    as lowering writes it."""
    rule = lookup(prim)
    if expr is None and prim is operator.add:
        expr = gast.BinOp(left=literals.atom_node(args[0]), op=gast.Add(),
                          right=literals.atom_node(args[1]))
    if expr is None:
        expr = forward_expression(prim, args, {}, literals.atom_node) or gast.Call(
            func=literals.reference_node(prim, None),
            args=[literals.atom_node(a) for a in args], keywords=[])
    if rule is not None and rule.differentiable:
        rule.bind(args, {})
    return Op((target,), prim, tuple(args), {}, expr, like.origin, rule)


def _uses(lowered):
    """How many times each name is read anywhere in ``lowered`` (its output included):
    every Var and every string naming a variable in a statement's fields, conservatively."""
    counts = {}

    def scan(value):
        if isinstance(value, Var):
            counts[value.name] = counts.get(value.name, 0) + 1
        elif isinstance(value, str):
            counts[value] = counts.get(value, 0) + 1
        elif isinstance(value, (list, tuple)):
            for item in value:
                scan(item)
        elif isinstance(value, dict):
            for item in value.values():
                scan(item)
        elif isinstance(value, Seq):
            scan(value.items)
        elif hasattr(value, "__dataclass_fields__") and not isinstance(value, Const):
            for field in value.__dataclass_fields__:
                if field not in ("targets", "expr", "origin", "index_node", "primitive",
                                 "rule"):
                    scan(getattr(value, field))

    for stmt in lowered.body:
        scan(stmt)
    scan(lowered.output)
    scan(sorted(lowered.mutated))
    return counts
