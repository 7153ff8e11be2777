"""Forward-mode (JVP) rules of the ``rt.*`` helpers that generated gradient code calls.

With these, a generated value-and-gradient function is itself differentiable in forward
mode (``compiler/pipeline_higher.py``: Hessian-vector products as forward over reverse).  Most
helpers are linear in the incoming adjoint ``g`` (undoing broadcasts and reductions,
reshapes, copies): their tangent is the helper on ``g``'s tangent.  The adjoints of
products (``matmul_left``...) are bilinear in ``g`` and the other operand.  Helpers that
give constants or shapes (``ones_like``, ``reduction_count``, a mask) have no tangent: a
template with no term.  The forward spellings (``rt.sum(x, axis, keepdims)``...) follow
numpy's own rules.  Tapes are written with plain indexing in differentiable code (see
``compiler/pipeline_higher.py``), so ``rt.push`` needs no rule; ``rt.reserve`` copies a tape into
a larger one, which is linear.  ``tests/test_higher.py`` checks these rules against
central finite differences of the helpers.
"""
from .. import primitives as prims
from .. import runtime as rt
from .jvp_registry import jvp_rule, t

# ---------------------------------------------------------------- constants


@jvp_rule(rt.ones_like, rt.zeros_like, rt.zeros_list, rt.reduction_count, rt.extremum_mask,
          rt.trip_count, rt.tangent_size, rt.basis_tangent, rt.jacobian_rows)
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
