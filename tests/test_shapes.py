"""Symbolic shapes (s2sgrad/compiler/analysis/shapes.py): ``rt.unbroadcast`` is dropped where an
operand provably has the result's shape, written as the sum over the axes it sums where
the shapes tell them (straight-line code), and kept wherever it may not; gradients stay
right when the shapes a build assumed change."""
import re

import numpy as np
import pytest

import s2sgrad
from s2sgrad.compiler.analysis.shapes import Dim, ShapeTable
from s2sgrad.testing import numerical_grad


# ---------------------------------------------------------------- the table itself

def test_broadcasting_symbols_known_not_one_unifies_them_only_when_certain():
    table = ShapeTable()
    table.argument("x", 2, (False, False))
    table.argument("b", 1, (False,))
    x, b = table.of["x"], table.of["b"]
    maybe = table.broadcast([x, b], certain=False)             # may not have run:
    assert not table.same(x[1:], b)                             # nothing unified,
    # the first operand's dimensions (equal to b's whenever the value exists), not 1
    assert table.same(maybe, x) and table.no_unit_dims(maybe) and not table.same(x[1:], b)
    result = table.broadcast([x, b], certain=True)              # ran: x.shape[1] == b.shape[0]
    assert table.same(result, x) and table.same(x[1:], b)


def test_a_unit_dimension_broadcasts_and_an_unknown_one_gives_no_shape():
    table = ShapeTable()
    table.argument("x", 2, (False, True))        # (n, 1)
    table.argument("y", 2, (False, False))       # (n', m)
    table.argument("u", 1, None)                 # a dimension nothing is known of
    x, y, u = table.of["x"], table.of["y"], table.of["u"]
    assert x[1] == 1
    result = table.broadcast([x, y], certain=True)
    assert table.same(result, y) and not table.same(result, x)
    assert table.broadcast([u, y], certain=True) is None
    assert table.same(table.broadcast([(), y], certain=True), y)


def test_matmul_shapes():
    table = ShapeTable()
    for name, ndim in (("a", 2), ("b", 2), ("v", 1)):
        table.argument(name, ndim, (False,) * ndim)
    a, b, v = table.of["a"], table.of["b"], table.of["v"]
    assert table.same(table.matmul(a, b, True), (a[0], b[1]))
    assert table.same(table.matmul(v, b, True), (b[1],))
    assert table.same(table.matmul(a, v, True), (a[0],))
    assert table.same(table.matmul(v, v, True), ())
    assert isinstance(table.find(a[1]), Dim) and table.find(a[1]) is table.find(v[0])


def test_a_reshape_to_constant_sizes_gives_a_new_symbol_for_its_minus_one():
    table = ShapeTable()
    first, second = table.reshaped((-1, 30)), table.reshaped((-1, 30))
    assert first[1] == 30 and isinstance(first[0], Dim) and first[0].not_one is None
    assert table.same(first, first) and not table.same(first, second)
    assert table.reshaped((2, 15)) == (2, 15)
    assert table.reshaped((-1, -1)) is None and table.reshaped(None) is None


# ---------------------------------------------------------------- the generated code

def bias_tanh(x, b):
    return np.sum(np.tanh(x + b) * x)


def _check(gradient, fn, args):
    got = gradient(*args)
    got = got if isinstance(got, tuple) else (got,)
    for k, g in enumerate(got):
        want = numerical_grad(fn, args, position=k)
        np.testing.assert_allclose(g, want, rtol=1e-6, atol=1e-8)
        assert np.shape(g) == np.shape(args[k])


@pytest.mark.parametrize("x_shape, b_shape, unbroadcasts", [
    ((4, 3), (3,), 1),        # b is broadcast over the rows: summed; x is not
    ((4, 3), (1, 3), 1),      # the same with a unit dimension
    ((4, 1), (3,), 3),        # both broadcast (x twice: in x + b and in the product)
    ((4, 3), (4, 3), 0),      # nothing broadcast
    ((3,), (3,), 0),
])
def test_unbroadcast_only_where_an_operand_is_broadcast(x_shape, b_shape, unbroadcasts):
    rng = np.random.default_rng(0)
    args = (rng.standard_normal(x_shape), rng.standard_normal(b_shape))
    gradient = s2sgrad.grad(bias_tanh, (0, 1))
    _check(gradient, bias_tanh, args)
    # straight-line code: each is the sum over the axes the shapes tell
    code = gradient.source.split("# sensitivity of the output")[1]
    assert "rt.unbroadcast" not in code, code
    assert code.count("rt.sum(") == unbroadcasts, code


def branch_bias_tanh(x, b, flag):
    if flag > 0:
        t = np.tanh(x + b) * x
    else:
        t = x * 2.0
    return np.sum(t)


def test_with_a_branch_the_sums_stay_rt_unbroadcast():
    # an adjoint may be a plain 0.0 after a branch: rt.unbroadcast takes that, a sum
    # over an axis would not
    rng = np.random.default_rng(0)
    x, b = rng.standard_normal((4, 3)), rng.standard_normal(3)
    gradient = s2sgrad.grad(branch_bias_tanh, (0, 1))
    for flag in (1.0, -1.0):
        dx, db = gradient(x, b, flag)
        for k, g in enumerate((dx, db)):
            want = numerical_grad(branch_bias_tanh, (x, b, flag), position=k)
            np.testing.assert_allclose(g, want, rtol=1e-6, atol=1e-8)
    assert "rt.unbroadcast(" in gradient.source and "rt.sum(" not in gradient.source


def test_the_code_is_built_again_when_a_dimension_becomes_one():
    gradient = s2sgrad.grad(bias_tanh, (0, 1))
    rng = np.random.default_rng(1)
    wide = (rng.standard_normal((4, 3)), rng.standard_normal((4, 3)))
    narrow = (rng.standard_normal((4, 3)), rng.standard_normal((1, 3)))
    _check(gradient, bias_tanh, wide)
    _check(gradient, bias_tanh, narrow)
    _check(gradient, bias_tanh, wide)


def test_the_tutorial_gradient_has_no_unbroadcast():
    from examples_loader import load_functional_autodiff
    ex = load_functional_autodiff()
    gradient = s2sgrad.grad(ex.function, (2, 3))
    gradient(ex.x, ex.y, ex.w, ex.b)
    assert "rt.unbroadcast" not in gradient.source


BIAS = np.array([0.5, -1.0, 2.0])


def with_global_bias(x):
    return np.sum(np.sin(x + BIAS))


def test_an_array_read_from_outside_that_changes_shape_rebuilds_the_code():
    gradient = s2sgrad.grad(with_global_bias)
    x = np.random.default_rng(2).standard_normal(3)
    _check(gradient, with_global_bias, (x,))        # (3,) + (3,): nothing broadcast
    try:
        BIAS.shape = (3, 1)             # the same array, now (3, 1): x is broadcast
        _check(gradient, with_global_bias, (x,))
        BIAS.shape = (1, 3)
        _check(gradient, with_global_bias, (x,))
    finally:
        BIAS.shape = (3,)
    _check(gradient, with_global_bias, (x,))


def branch_with_other_shapes(x, y, flag):
    if flag > 0:
        t = x + y            # would fail for these shapes: never runs here
    else:
        t = x * 2.0
    return np.sum(t * t) + np.sum(np.cos(y))


def test_a_broadcast_in_a_branch_that_does_not_run_decides_nothing():
    x, y = np.arange(3.0), np.arange(4.0)
    gradient = s2sgrad.grad(branch_with_other_shapes, (0, 1))
    got = gradient(x, y, -1.0)
    np.testing.assert_allclose(got[0], 8 * x)
    np.testing.assert_allclose(got[1], -np.sin(y))


def loop_bias(x, b):
    s = 0.0
    for i in range(x.shape[0]):
        s = s + np.sum(np.tanh(x[i] + b))
    return s


@pytest.mark.parametrize("b_shape", [(3,), (1,)])
def test_loops_keep_gradients_right(b_shape):
    rng = np.random.default_rng(4)
    args = (rng.standard_normal((5, 3)), rng.standard_normal(b_shape))
    _check(s2sgrad.grad(loop_bias, (0, 1)), loop_bias, args)


def log_softmax_mean(z, onehot):
    m = np.max(z, axis=1, keepdims=True)
    logp = z - m - np.log(np.sum(np.exp(z - m), axis=1, keepdims=True))
    return -np.sum(onehot * logp) / z.shape[0]


def test_reductions_with_an_axis_keep_their_shapes():
    rng = np.random.default_rng(5)
    z = rng.standard_normal((4, 3))
    onehot = np.eye(3)[[0, 2, 1, 1]]
    gradient = s2sgrad.grad(log_softmax_mean, 0)
    np.testing.assert_allclose(gradient(z, onehot),
                               numerical_grad(log_softmax_mean, (z, onehot)), rtol=1e-6)
    code = gradient.source.split("# sensitivity of the output")[1]
    # the (4, 1)-shaped m and log-sum are broadcast: summed back over axis 1; z, logp
    # and the division by z.shape[0] (a Python int) are not
    assert "rt.unbroadcast" not in code, code
    sums = [line for line in code.splitlines() if "rt.sum(" in line]
    assert len(sums) == 3 and all(", 1, True)" in line for line in sums), code


def test_every_kind_of_derivative_follows_an_outside_array_that_changes_shape():
    x = np.random.default_rng(6).standard_normal(3)
    v = np.random.default_rng(7).standard_normal(3)
    jvp_before = s2sgrad.jvp(with_global_bias, (x,), (v,))[1]
    _, vjp_fn = s2sgrad.vjp(with_global_bias, x)
    vjp_before = vjp_fn(1.0)
    try:
        BIAS.shape = (3, 1)
        want = numerical_grad(with_global_bias, (x,))
        np.testing.assert_allclose(s2sgrad.jvp(with_global_bias, (x,), (v,))[1],
                                   want @ v, rtol=1e-6)
        _, vjp_fn = s2sgrad.vjp(with_global_bias, x)
        got = vjp_fn(1.0)
        got = got[0] if isinstance(got, tuple) else got
        np.testing.assert_allclose(got, want, rtol=1e-6)
    finally:
        BIAS.shape = (3,)
    assert np.ndim(jvp_before) == 0 and vjp_before is not None


def dense_layer(x, w, b):
    h = np.reshape(x, (-1, 3)) @ np.transpose(w, (1, 0)) + b
    return np.sum(np.tanh(h))


def reshaped_times(x, y):
    return np.sum(np.sin(np.reshape(x, (-1, 3)) * y))


def reshaped_column_plus(x, b):
    return np.sum(np.sin(np.reshape(x, (-1, 1)) + b))


def test_reshapes_and_transposes_keep_shapes_known():
    rng = np.random.default_rng(5)
    args = (rng.standard_normal((2, 2, 3)), rng.standard_normal((4, 3)),
            rng.standard_normal(4))
    gradient = s2sgrad.grad(dense_layer, (0, 1, 2))
    _check(gradient, dense_layer, args)
    # only the bias is broadcast; the product is read once, inside the sum with b
    assert "rt.unbroadcast" not in gradient.source and "db = rt.sum(dh, 0, False)" in \
        gradient.source, gradient.source
    assert "h = t1 @ t2 + b" in gradient.source, gradient.source


@pytest.mark.parametrize("fn, args, unbroadcasts", [
    # the -1 is 1 here: nothing may be assumed about it (y, with no unit dimension,
    # keeps its shape: its sum is dropped)
    (reshaped_times, ((1, 3), (5, 3)), 1),
    (reshaped_times, ((5, 3), (5, 3)), 1),
    # (n, 1) + (3,): both broadcast (known: the 1 is a constant, 3 is b's)
    (reshaped_column_plus, ((4,), (3,)), 2),
])
def test_a_reshaped_dimension_is_assumed_nothing_of(fn, args, unbroadcasts):
    rng = np.random.default_rng(6)
    args = tuple(rng.standard_normal(shape) for shape in args)
    gradient = s2sgrad.grad(fn, (0, 1))
    _check(gradient, fn, args)
    summed = gradient.source.count("rt.unbroadcast") + gradient.source.count("rt.sum(")
    assert summed == unbroadcasts, gradient.source


# ---------------------------------------------------------------- loop-carried shapes

def vector_rnn(W, U, xs):
    h = np.zeros(W.shape[0])
    for t in range(xs.shape[0]):
        h = np.tanh(W @ h + U @ xs[t])
    return np.sum(h ** 2)


def euler_array_state(a, b, y0):
    y = y0.copy()
    for step in range(6):
        f = np.array([a * y[0] - b * y[0] * y[1], b * y[0] * y[1] - y[1]])
        y = y + 0.1 * f
    return np.sum(y ** 2)


def growing_state(x):
    h = x[:1]
    for i in range(1, x.shape[0]):
        h = np.concatenate([h * 0.5, x[i:i + 1]])
    return np.sum(np.sin(h))


def scalar_then_array(x, w):
    s = 0.0
    for i in range(3):
        s = s + w * x
    return np.sum(s ** 2)


def body_that_may_not_run(x, z, k):
    total = np.sum(x ** 2) + np.sum(z ** 3)
    for i in range(k):
        total = total + np.sum(np.sin(x + z))   # runs only when x and z match
    return total


def test_a_carried_state_keeps_its_shape_and_the_body_its_broadcasts():
    """The RNN's h enters and leaves each iteration with W.shape[0]; the body's ``+`` shows
    W.shape[0] == U.shape[0] where it runs: no rt.unbroadcast and nothing stored for its
    shape alone (only h itself goes on a tape)."""
    rng = np.random.default_rng(0)
    args = (rng.normal(size=(4, 4)) / 3, rng.normal(size=(4, 3)) / 3, rng.normal(size=(5, 3)))
    g = s2sgrad.value_and_grad(vector_rnn, (0, 1, 2))
    g(*args)
    assert "rt.unbroadcast" not in g.source, g.source
    assert re.findall(r"^    (\w+) = \[\]$", g.source, re.M) == ["h_1_stack"], g.source
    _check(s2sgrad.grad(vector_rnn, (0, 1, 2)), vector_rnn, args)


def test_an_array_state_built_with_np_array_has_a_rank_and_a_shape():
    args = (1.1, 0.4, np.array([1.0, 0.5]))
    g = s2sgrad.value_and_grad(euler_array_state, (0, 1, 2))
    g(*args)
    backward = g.source.split("# sensitivity of the output")[1]
    assert "_stack.pop()" in backward and backward.count(".pop()") == 1, g.source  # y only
    _check(s2sgrad.grad(euler_array_state, (0, 1, 2)), euler_array_state, args)


@pytest.mark.parametrize("fn, args", [
    (growing_state, (np.linspace(0.1, 0.9, 5),)),
    (scalar_then_array, (np.linspace(0.1, 0.9, 4), 0.7)),
    (body_that_may_not_run, (np.linspace(0.1, 0.9, 3), np.linspace(0.2, 0.5, 4), 0)),
    (body_that_may_not_run, (np.linspace(0.1, 0.9, 3), np.linspace(0.2, 0.5, 3), 2)),
], ids=["growing", "scalar_then_array", "zero_trips_other_shapes", "two_trips"])
def test_states_that_change_shape_and_bodies_that_do_not_run(fn, args):
    k = args[2] if fn is body_that_may_not_run else None
    positions = (0, 1) if len(args) > 1 else 0
    gradient = s2sgrad.grad(fn, positions)
    if k is None:
        _check(gradient, fn, args)
        return
    got = gradient(*args)
    for p, g in zip(positions, got):
        np.testing.assert_allclose(g, numerical_grad(fn, args, p), rtol=1e-6, atol=1e-8)
