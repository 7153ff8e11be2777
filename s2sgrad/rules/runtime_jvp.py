"""Forward-mode (JVP) rules of the ``rt.*`` helpers that generated gradient code calls.

With these, a generated value-and-gradient function is itself differentiable in forward
mode (``compiler/pipeline_higher.py``: Hessian-vector products as forward over reverse).  Most
helpers are linear in the incoming adjoint ``g`` (undoing broadcasts and reductions,
reshapes, copies): their tangent is the helper on ``g``'s tangent.  The adjoints of
products (``matmul_left``...) are bilinear in ``g`` and the other operand.  Helpers that
give constants or shapes (``ones_like``, ``reduction_count``, a mask) have no tangent: a
template with no term.  The forward spellings (``rt.sum(x, axis, keepdims)``, ``rt.einsum``...) follow
numpy's own rules.  Tapes are written with plain indexing in differentiable code (see
``compiler/pipeline_higher.py``), so ``rt.push`` needs no rule; ``rt.reserve`` copies a tape into
a larger one, which is linear.  The adjoint helpers of the rule tables (``roll_adjoint``,
``select_adjoints``...) are declared linear in ``g`` where they read their other operands
for shapes, indices or masks only (``jvp_linear_in``); the adjoints of one operand of a
product are bilinear; where a helper depends smoothly on a primal operand
(``det_adjoint``, ``eigh_adjoint``, ``norm_adjoint``...) its rule adds that term, computed
by ``runtime/second.py``.  ``tests/test_higher.py`` checks the rules of the tape and
broadcast helpers against central differences of the helpers, and
``tests/test_second_order_rules.py`` every rule-table case's ``hvp`` against differences
of its gradient.
"""
import numpy as np

from .. import primitives as prims
from .. import runtime as rt
from .jvp_registry import jvp_linear_in, jvp_multilinear, jvp_rule, t

# ---------------------------------------------------------------- constants


@jvp_rule(rt.ones_like, rt.zeros_like, rt.zeros_list, rt.reduction_count, rt.section_length,
          rt.extremum_mask, rt.trip_count, rt.tangent_size, rt.basis_tangent, rt.jacobian_rows,
          rt.nan_extremum_mask)
def _(ans, *args):
    """A seed, a count, a mask or a shape: no tangent."""


# ---------------------------------------------------------------- linear in the adjoint


@jvp_rule(rt.unbroadcast)
def _(ans, g, like):
    t[ans] = rt.unbroadcast(t[g], like)


@jvp_rule(rt.unreduce)
def _(ans, g, like, axis, keepdims):
    # unreduce gives a read-only broadcast view: its tangent may be updated in place later
    # (an adjoint array's tangent, where the adjoint itself is a fresh sum), so a copy
    t[ans] = rt.copy_value(rt.unreduce(t[g], like, axis, keepdims))


@jvp_rule(rt.reshape_like)
def _(ans, g, like):
    t[ans] = rt.reshape_like(t[g], like)


@jvp_rule(rt.cast_like)
def _(ans, g, like):
    t[ans] = rt.cast_like(t[g], like)


@jvp_rule(rt.transpose_adjoint)
def _(ans, g, axes):
    t[ans] = rt.transpose_adjoint(t[g], axes)


@jvp_rule(rt.unstack)
def _(ans, g, count, axis):
    t[ans] = rt.unstack(t[g], count, axis)


@jvp_rule(rt.split_like)
def _(ans, g, parts, axis):
    t[ans] = rt.split_like(t[g], parts, axis)


@jvp_rule(rt.reverse_cumsum)
def _(ans, g, axis):
    t[ans] = rt.reverse_cumsum(t[g], axis)


@jvp_rule(rt.spread_sum)
def _(ans, g, items):
    t[ans] = rt.spread_sum(t[g], items)


@jvp_rule(rt.written_adjoint)
def _(ans, dx, index):
    t[ans] = rt.written_adjoint(t[dx], index)


@jvp_rule(rt.writable)
def _(ans, g, like):
    t[ans] = rt.writable(t[g], like)


@jvp_rule(rt.copy_value)
def _(ans, value):
    t[ans] = rt.copy_value(t[value])


@jvp_rule(rt.copy_list)
def _(ans, items):
    t[ans] = rt.copy_list(t[items])


@jvp_rule(rt.item_added)
def _(ans, items, index, g):
    t[ans] = rt.item_added(t[items], index, t[g])


@jvp_rule(rt.add_lists)
def _(ans, a, b):
    t[ans] = rt.add_lists(t[a], t[b])


@jvp_rule(rt.add_at)
def _(ans, target, index, g):
    # add_at updates its target in place: the target's tangent may be another's array
    t[ans] = rt.add_at(rt.copy_value(t[target]), index, t[g])


@jvp_rule(prims.method("pop"))
def _(ans, items):
    # an adjoint list taken back item by item: its tangent list, built in step, too
    t[ans] = t[items].pop()


@jvp_rule(rt.reserve)
def _(ans, tape, top, count):
    t[ans] = rt.reserve(t[tape], top, count)


# ---------------------------------------------------------------- bilinear adjoints


@jvp_rule(rt.matmul_left)
def _(ans, g, a, b):
    t[ans] = rt.matmul_left(t[g], a, b)
    t[ans] += rt.matmul_left(g, a, t[b])


@jvp_rule(rt.matmul_right)
def _(ans, g, a, b):
    t[ans] = rt.matmul_right(t[g], a, b)
    t[ans] += rt.matmul_right(g, t[a], b)


@jvp_rule(rt.dot_left)
def _(ans, g, a, b):
    t[ans] = rt.dot_left(t[g], a, b)
    t[ans] += rt.dot_left(g, a, t[b])


@jvp_rule(rt.dot_right)
def _(ans, g, a, b):
    t[ans] = rt.dot_right(t[g], a, b)
    t[ans] += rt.dot_right(g, t[a], b)


@jvp_rule(rt.divide_or_zero)
def _(ans, g, d):
    t[ans] = rt.divide_or_zero(t[g], d)
    t[ans] += -rt.divide_or_zero(ans * t[d], d)


# ---------------------------------------------------------------- forward spellings


@jvp_rule(rt.sum)
def _(ans, x, axis, keepdims):
    t[ans] = rt.sum(t[x], axis, keepdims)


@jvp_rule(rt.mean)
def _(ans, x, axis, keepdims):
    t[ans] = rt.mean(t[x], axis, keepdims)


@jvp_rule(rt.amax, rt.amin)
def _(ans, x, axis, keepdims):
    t[ans] = rt.sum(t[x] * rt.extremum_mask(x, ans, axis, keepdims), axis, keepdims)


@jvp_rule(rt.prod)
def _(ans, x, axis, keepdims):
    t[ans] = ans * rt.sum(t[x] / x, axis, keepdims)


@jvp_rule(rt.squeeze)
def _(ans, x, axis):
    t[ans] = rt.squeeze(t[x], axis)


@jvp_rule(rt.expand_dims)
def _(ans, x, axis):
    t[ans] = rt.expand_dims(t[x], axis)


@jvp_rule(rt.atleast_1d)
def _(ans, x):
    t[ans] = rt.atleast_1d(t[x])


# rt.var / rt.std take (x, axis, keepdims, ddof), numpy's (a, axis, ddof, keepdims): rules
# of their own, with np.var's and np.std's terms (jvp_rules.py)


@jvp_rule(rt.var)
def _(ans, x, axis, keepdims, ddof=0):
    t[ans] = (rt.sum((x - rt.mean(x, axis, True)) * t[x], axis, keepdims) * 2
              / (rt.reduction_count(x, axis) - ddof))


@jvp_rule(rt.std)
def _(ans, x, axis, keepdims, ddof=0):
    t[ans] = rt.divide_or_zero(rt.sum((x - rt.mean(x, axis, True)) * t[x], axis, keepdims)
                               / (rt.reduction_count(x, axis) - ddof), ans)


jvp_linear_in("a", rt.tile, constant=("reps",))
# the mask of where x attains ans is constant almost everywhere, like rt.extremum_mask's
jvp_linear_in("g", rt.extremum_adjoint, constant=("x", "ans", "axis", "keepdims"))
# forward-mode code differentiated again (a derivative of jacfwd(f)): a tangent broadcast
# to its result's shape is linear in the tangent (``like`` gives only the shape)
jvp_linear_in("t", rt.broadcast_like, constant=("like",))
# the forward spelling of a two-operand np.einsum (a matmul where it pays): np.einsum's rule
jvp_multilinear(rt.einsum)

# ---------------------------------------------------------------- adjoints linear in g
# Each adjoint helper below is linear in the incoming adjoint ``g`` and reads its other
# operands only for shapes, axes, indices, masks or an order (a sort, a quantile's two
# neighbours: piecewise constant), so its tangent is the helper on ``g``'s tangent.

jvp_linear_in(
    "g", rt.roll_adjoint, rt.rollaxis_adjoint, rt.diag_adjoint, rt.diagonal_adjoint,
    rt.trace_adjoint, rt.diff_adjoint, rt.pad_adjoint, rt.repeat_adjoint, rt.take_adjoint,
    rt.take_along_axis_adjoint, rt.split_adjoint, rt.stacked_adjoints,
    rt.index_trick_adjoints, rt.select_adjoints, rt.select_default_adjoint,
    rt.append_adjoint, rt.item_adjoint, rt.sort_adjoint, rt.permutation_adjoint,
    rt.tile_adjoint, rt.linspace_adjoints, rt.arange_adjoints, rt.block_adjoints,
    rt.broadcast_arrays_adjoints, rt.meshgrid_adjoints, rt.compress_adjoint,
    rt.choose_adjoints, rt.resize_adjoint, rt.delete_adjoint, rt.insert_adjoint,
    rt.trim_zeros_adjoint, rt.right_aligned, rt.drop_initial, rt.affine_adjoint,
    # read for shapes, axes, sizes, indices, masks or an order only; a quantile's ``q``
    # moves its weights (smoothly) and is not among them: a tangent reaching it is refused
    constant=("shift", "axis", "start", "v", "k", "a", "offset", "axis1", "axis2", "n",
              "array", "pad_width", "mode", "repeats", "indices", "arr", "ary", "arrays",
              "how", "items", "which", "condlist", "choicelist", "default", "values", "wrt",
              "like", "index", "ans", "reps", "stop", "num", "endpoint", "bounds", "xi",
              "indexing", "condition", "choices", "obj", "filt", "trim", "include_initial",
              "fn", "p", "args", "method", "keepdims"),
)

@jvp_rule(rt.quantile_adjoint)
def _(res, g, a, q, axis, method, keepdims):
    # linear in g; a gives the order only; q moves the two weights
    t[res] = rt.quantile_adjoint(t[g], a, q, axis, method, keepdims)
    t[res] += rt.quantile_adjoint_q_tangent(g, a, q, axis, keepdims, False, t[q])


@jvp_rule(rt.nan_quantile_adjoint)
def _(res, g, a, q, axis, method, keepdims):
    t[res] = rt.nan_quantile_adjoint(t[g], a, q, axis, method, keepdims)
    t[res] += rt.quantile_adjoint_q_tangent(g, a, q, axis, keepdims, True, t[q])


@jvp_rule(rt.quantile_q_adjoint)
def _(res, g, a, q, axis, keepdims, nan):
    # linear in g and in the sorted values; piecewise constant in q
    t[res] = rt.quantile_q_adjoint(t[g], a, q, axis, keepdims, nan)
    t[res] += rt.quantile_q_adjoint_tangent(g, a, q, axis, keepdims, nan, t[a])


# ---------------------------------------------------------------- bilinear adjoints
# The adjoint of one operand of a product (``wrt``) is linear in ``g`` and in the other
# operand, and reads its own operand for the shape only: the second term, with every
# operand replaced by its tangent, is the other operand's term (the own operand's
# tangent, or zeros, only gives the shape).


@jvp_rule(rt.inner_adjoint)
def _(ans, g, a, b, wrt):
    t[ans] = rt.inner_adjoint(t[g], a, b, wrt)
    t[ans] += rt.inner_adjoint(g, t[a], t[b], wrt)


@jvp_rule(rt.kron_adjoint)
def _(ans, g, a, b, wrt):
    t[ans] = rt.kron_adjoint(t[g], a, b, wrt)
    t[ans] += rt.kron_adjoint(g, t[a], t[b], wrt)


@jvp_rule(rt.cross_adjoint)
def _(ans, g, a, b, axisa, axisb, axisc, axis, wrt):
    t[ans] = rt.cross_adjoint(t[g], a, b, axisa, axisb, axisc, axis, wrt)
    t[ans] += rt.cross_adjoint(g, t[a], t[b], axisa, axisb, axisc, axis, wrt)


@jvp_rule(rt.matvec_adjoint)
def _(ans, g, x1, x2, wrt):
    t[ans] = rt.matvec_adjoint(t[g], x1, x2, wrt)
    t[ans] += rt.matvec_adjoint(g, t[x1], t[x2], wrt)


@jvp_rule(rt.tensordot_adjoint)
def _(ans, g, a, b, axes, wrt):
    t[ans] = rt.tensordot_adjoint(t[g], a, b, axes, wrt)
    t[ans] += rt.tensordot_adjoint(g, t[a], t[b], axes, wrt)


@jvp_rule(rt.vecdot_adjoint)
def _(ans, g, x1, x2, axis, wrt):
    t[ans] = rt.vecdot_adjoint(t[g], x1, x2, axis, wrt)
    t[ans] += rt.vecdot_adjoint(g, t[x1], t[x2], axis, wrt)


@jvp_rule(rt.convolve_adjoint)
def _(ans, g, a, v, mode, wrt):
    t[ans] = rt.convolve_adjoint(t[g], a, v, mode, wrt)
    t[ans] += rt.convolve_adjoint(g, t[a], t[v], mode, wrt)


@jvp_rule(rt.correlate_adjoint)
def _(ans, g, a, v, mode, wrt):
    t[ans] = rt.correlate_adjoint(t[g], a, v, mode, wrt)
    t[ans] += rt.correlate_adjoint(g, t[a], t[v], mode, wrt)


@jvp_rule(rt.solve_a_adjoint)
def _(ans, gb, x, b):
    t[ans] = rt.solve_a_adjoint(t[gb], x, b)
    t[ans] += rt.solve_a_adjoint(gb, t[x], b)


@jvp_rule(rt.einsum_adjoints)
def _(ans, g, operands):
    t[ans] = rt.operand_adjoints_tangent(rt.einsum_adjoints, g, operands, t[g], t[operands])


@jvp_rule(rt.multi_dot_adjoints)
def _(ans, g, arrays):
    t[ans] = rt.operand_adjoints_tangent(rt.multi_dot_adjoints, g, arrays, t[g], t[arrays])


# ---------------------------------------------------------------- smooth in a primal


@jvp_rule(rt.sinc_derivative)
def _(ans, x):
    t[ans] = t[x] * rt.sinc_second_derivative(x)


@jvp_rule(rt.det_adjoint)
def _(res, g, ans, a):
    t[res] = rt.det_adjoint(t[g], ans, a)
    t[res] += rt.det_adjoint(g, t[ans], a)
    t[res] += np.asarray(g * ans)[..., None, None] * np.swapaxes(rt.inv_tangent(a, t[a]), -1, -2)


@jvp_rule(rt.slogdet_adjoint)
def _(res, g, a):
    t[res] = rt.slogdet_adjoint(t[g], a)
    t[res] += np.asarray(g[1])[..., None, None] * np.swapaxes(rt.inv_tangent(a, t[a]), -1, -2)


@jvp_rule(rt.solve_adjoint)
def _(res, a, g, b):
    t[res] = rt.solve_adjoint(a, t[g], b)
    t[res] += -rt.solve_adjoint(a, np.swapaxes(t[a], -1, -2) @ res, b)


@jvp_rule(rt.logsumexp_adjoint)
def _(res, g, ans, a, axis, b, keepdims, wrt):
    t[res] = rt.logsumexp_adjoint(t[g], ans, a, axis, b, keepdims, wrt)
    t[res] += rt.logsumexp_adjoint_tangent(g, ans, a, axis, b, keepdims, wrt, t[ans], t[a],
                                           t[b])


@jvp_rule(rt.norm_adjoint)
def _(res, g, ans, x, ord, axis, keepdims):
    t[res] = rt.norm_adjoint(t[g], ans, x, ord, axis, keepdims)
    t[res] += rt.norm_adjoint_tangent(g, ans, x, ord, axis, keepdims, t[ans], t[x])


@jvp_rule(rt.vector_norm_adjoint)
def _(res, g, ans, x, ord, axis, keepdims):
    t[res] = rt.vector_norm_adjoint(t[g], ans, x, ord, axis, keepdims)
    t[res] += rt.vector_norm_adjoint_tangent(g, ans, x, ord, axis, keepdims, t[ans], t[x])


@jvp_rule(rt.cholesky_adjoint)
def _(res, g, L):
    t[res] = rt.cholesky_adjoint(t[g], L)
    t[res] += rt.cholesky_adjoint_tangent(g, L, t[L])


@jvp_rule(rt.eigh_adjoint)
def _(res, g, ans, a):
    t[res] = rt.eigh_adjoint(t[g], ans, a)
    t[res] += rt.eigh_adjoint_tangent(g, ans, t[ans], t[a])


@jvp_rule(rt.eigvalsh_adjoint)
def _(res, g, a):
    t[res] = rt.eigvalsh_adjoint(t[g], a)
    t[res] += rt.eigvalsh_adjoint_tangent(g, a, t[a])


@jvp_rule(rt.pinv_adjoint)
def _(res, g, ans, a):
    t[res] = rt.pinv_adjoint(t[g], ans, a)
    t[res] += rt.pinv_adjoint_tangent(g, ans, a, t[ans], t[a])


@jvp_rule(rt.matrix_power_adjoint)
def _(res, g, a, n):
    t[res] = rt.matrix_power_adjoint(t[g], a, n)
    t[res] += rt.matrix_power_adjoint_tangent(g, a, n, t[a])
