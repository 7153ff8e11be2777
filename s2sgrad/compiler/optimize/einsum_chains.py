"""An einsum read once, by a slice or by another einsum: one call that makes only what
is read.

``einsum_chains(statements, keep)`` takes the statements of a function run as numpy
(gast statements and ``Comment``s; a forward sweep, a batched Jacobian's) and ``keep``
(the names it returns), and gives them with (GradBench's ht with its skinning as einsum,
and its batched tangent)::

    t20_dot = rt.einsum('vk,Zbjk->Zbvj', base_positions, transforms_dot)
    moved_dot = t20_dot[:, :, :, :3]
    positions_dot = rt.einsum('vb,Zbvj->Zvj', weights, moved_dot)

written as::

    positions_dot = rt.einsum_chain('vb,Zbvj->Zvj', 1, weights, 'vk,Zbjk->Zbvj',
                                    base_positions, transforms_dot, np.s_[:, :, :, :3])

in two steps of the substitution engine (``substitute.py``), each for a name assigned
once and read once in the whole function (not one of ``keep``): a two-operand
``rt.einsum`` read by a subscript of basic slices is ``rt.einsum_sliced`` (the slices
taken of the operands' axes of those letters: only the kept part is made); an
``rt.einsum`` or ``rt.einsum_sliced`` read as an operand of a two-operand ``rt.einsum``
is ``rt.einsum_chain``, which contracts the three operands two at a time in the cheaper
order (``runtime/einsum.py``): ht's weights and base positions first, one (544, 88)
operand, then one product with the (26, 22, 3, 4) batch, never the (26, 22, 544, 4)
batch of moved points.  The numbers are the same up to the order of the sums.
"""
import gast

from .products import IntoReader, merged_into_readers


def einsum_chains(statements, keep):
    """``statements`` with each einsum read once by a slice or an einsum merged into its
    reader (module doc), as a new list."""
    return merged_into_readers(statements, keep, _Einsums)


class _Einsums(IntoReader):
    """The substitution policy of ``einsum_chains``."""
    enters = (gast.For, gast.While, gast.If)

    def candidate(self, name, value):
        return name in self.once and _einsum(value, ("einsum", "einsum_sliced")) is not None

    def reads_in(self, item, name):
        value = item.value if _assigns_one_name(item) else None
        if isinstance(value, gast.Subscript):
            return isinstance(value.value, gast.Name) and value.value.id == name and \
                _basic_slices(value.slice)
        operands = _einsum(value, ("einsum",))
        return operands is not None and [isinstance(a, gast.Name) and a.id == name
                                         for a in operands[1:]].count(True) == 1

    def merged(self, reader, name, value, depth):
        inner = _einsum(value, ("einsum", "einsum_sliced"))
        if isinstance(reader.value, gast.Subscript):
            if value.func.attr != "einsum":
                return None                 # a slice of a slice: left as it is
            call = gast.parse("rt.einsum_sliced(s, a, b, np.s_[i])").body[0].value
            call.args[:3] = inner
            call.args[3].slice = reader.value.slice
        else:
            spec, x, y = _einsum(reader.value, ("einsum",))
            at = 0 if isinstance(x, gast.Name) and x.id == name else 1
            call = gast.parse(f"rt.einsum_chain(s, {at}, c)").body[0].value
            call.args[0], call.args[2] = spec, (y if at == 0 else x)
            call.args += inner[:3] + ([value.args[3]] if len(value.args) == 4 else [])
        return gast.Assign(targets=reader.targets, value=call, type_comment=None)


def _assigns_one_name(item):
    return isinstance(item, gast.Assign) and len(item.targets) == 1 and \
        isinstance(item.targets[0], gast.Name)


def _einsum(expr, helpers):
    """``[spec, a, b]`` of ``rt.<helper>('...', a, b)`` (``rt.einsum_sliced``: and its
    index, not listed) of a constant subscripts string, else None."""
    if not (isinstance(expr, gast.Call) and isinstance(expr.func, gast.Attribute) and
            isinstance(expr.func.value, gast.Name) and expr.func.value.id == "rt" and
            expr.func.attr in helpers and not expr.keywords):
        return None
    count = 4 if expr.func.attr == "einsum_sliced" else 3
    if len(expr.args) != count or not (isinstance(expr.args[0], gast.Constant) and
                                       isinstance(expr.args[0].value, str)):
        return None
    return expr.args[:3]


def _basic_slices(index):
    """True for a slice or a tuple of slices whose bounds are constants or names."""
    items = index.elts if isinstance(index, gast.Tuple) else [index]
    return all(isinstance(i, gast.Slice) and all(
        b is None or isinstance(b, (gast.Constant, gast.Name)) or (
            isinstance(b, gast.UnaryOp) and isinstance(b.operand, gast.Constant))
        for b in (i.lower, i.upper, i.step)) for i in items)
