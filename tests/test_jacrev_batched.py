"""jacrev as one batched adjoint sweep (``api/batched_rows.py``): every adjoint carries the
basis cotangents first, the forward sweep's values unbatched (JAX's vmap of the pullback).

Small programs (broadcasting, reductions and extrema, ``@``, slices and fancy indexing
with repeated indices, ``np.where``, tuple outputs, several positions, has_aux, a loop of
array work, a loop of scalar work run as Python, values whose ranks a run tells, sort,
cumsum, roll, partition, norm, the builtin sum, a list popped in a loop): the batched
Jacobian runs (the object says so), equals the per-row sweeps' (1e-12) and central
differences (float64); a call with other shapes gives that shape's Jacobian (and the
first shape's again after it); an operation without a batched rule runs per row and says
why, naming the user's line; the sweep's width is capped by every array argument;
compositions over jacrev (the Hessian's spellings, batched too; vmap; grad through it)
give the same numbers.
"""
import numpy as np
import pytest

import s2sgrad
from s2sgrad.api.batched_rows import BatchedRows

X = np.array([[0.3, -0.7, 1.1], [0.5, 0.2, -0.4]])
Y = np.array([[1.2, 0.4, -0.3], [0.9, -1.5, 0.6]])
PICK = np.array([2, 0, 2, 1])


def broadcasting(x, y):
    return np.sin(x) * y[0] + np.exp(-x) / (1.0 + y ** 2)


def reductions(x, y):
    return np.concatenate([np.sum(x * y, axis=0), np.mean(x ** 2, axis=1),
                           np.max(x * y, axis=0), np.sum(y)[None] * x[0, 0]])


def matmuls(x, y):
    return (np.tanh(x @ y.T) @ x + (x[0] @ y.T) @ y + (y @ x[1])[:, None] * x
            + x[0] @ y[1])


def indexing(x, y):
    return x[:, PICK] * y[1, PICK] + x[1, ::2].sum() * y[0, :1]


def where(x, y):
    return np.where(x > 0.1, x * y, -y ** 2)


def tuple_output(x, y):
    return x * y, np.sum(x ** 2 * y), np.cos(x[1])


def array_loop(x, y):
    h = x
    for i in range(3):
        h = np.tanh(h * y + 0.1 * i)
    return h


def scalar_loop(x, y):
    s = x[0, 0]
    for i in range(x.shape[1]):
        s = np.sin(s) * y[0, i] + x[1, i]
    return x[0] * s


def ranks_from_a_run(x, y):
    """Forward values no rule tells the rank of (inv, max over an axis, ravel, a cast):
    their ranks are seen in a run of the vjp code."""
    a = np.linalg.inv(x @ y.T + 3.0 * np.eye(2))
    return a @ np.max(x * y, axis=1) + np.sum(np.ravel(x)[:2] * np.float64(y[0, :2]))


def orders(x, y):
    """Adjoint helpers batched per direction (sort's, roll's, partition's, norm's, dot's)
    and ``reverse_cumsum``'s batched spelling; sort over the flattened array."""
    return (np.sort(x * y, axis=None)[::-1] * np.cumsum(y)
            + np.roll(np.sort(x, axis=0), 1, axis=1).ravel() * np.cumsum(x * x, axis=1).ravel()
            + np.partition(y.ravel() * x.ravel(), 2) * np.linalg.norm(x, axis=0).sum()
            + np.dot(x, y[0]).sum())


def builtin_sums(x, y):
    """The builtin ``sum`` of a list, of a generator and of an array (their adjoints:
    ``rt.spread_sum``, ``rt.add_lists``)."""
    squares = [x[i] * y[i] for i in range(2)]
    return sum(squares) + sum(np.sin(v) for v in squares) + sum(x * y)


def list_of_states(x, y):
    """A list appended in a loop and read in another: its adjoint list is popped."""
    hs, h = [], x[0]
    for i in range(x.shape[0]):
        h = np.tanh(y[i] * h + x[i])
        hs.append(h)
    total = 0.0
    for i in range(len(hs)):
        total = total + hs[i] * (i + 1.0)
    return total + hs[-1]


PROGRAMS = [broadcasting, reductions, matmuls, indexing, where, tuple_output, array_loop,
            scalar_loop, ranks_from_a_run, orders, builtin_sums, list_of_states]


def central_differences(f, args, k, eps=1e-6):
    """d f / d args[k] (float64), shaped out.shape + arg.shape (a tuple for tuple outputs)."""
    base = f(*args)
    many = isinstance(base, tuple)
    outs = base if many else (base,)
    jac = [np.zeros(np.shape(o) + np.shape(args[k])) for o in outs]
    for idx in np.ndindex(*np.shape(args[k])):
        hi, lo = [list(args), list(args)]
        for sign, which in ((1, hi), (-1, lo)):
            a = np.array(args[k], dtype=float)
            a[idx] += sign * eps
            which[k] = a
        up, down = f(*hi), f(*lo)
        up, down = (up, down) if many else ((up,), (down,))
        for j, (a, b) in enumerate(zip(up, down)):
            jac[j][(...,) + idx] = (np.asarray(a) - np.asarray(b)) / (2 * eps)
    return tuple(jac) if many else jac[0]


def leaves(result):
    if isinstance(result, tuple):
        return [a for r in result for a in leaves(r)]
    return [np.asarray(result)]


def per_row(f, args, monkeypatch, **options):
    """jacrev's per-row sweeps (the batched code refused), run as Python (no compile)."""
    with monkeypatch.context() as m:
        m.setattr(BatchedRows, "run", lambda self, code_args, outputs: None)
        m.setenv("S2SGRAD_BACKEND", "python")
        return s2sgrad.jacrev(f, **options)(*args)


@pytest.fixture(scope="module")
def built():
    """Each program's jacrev w.r.t. both inputs (run as Python: a loop over small arrays
    is batched there, not compiled per row), called once, and its result."""
    out = {}
    with pytest.MonkeyPatch.context() as m:
        m.setenv("S2SGRAD_BACKEND", "python")
        for f in PROGRAMS:
            jac = s2sgrad.jacrev(f, grad_position=(0, 1))
            out[f.__name__] = (jac, jac(X, Y))
    return out


@pytest.mark.parametrize("f", PROGRAMS, ids=lambda f: f.__name__)
def test_batched_rows_equal_per_row_sweeps_and_differences(f, built, monkeypatch):
    jac, result = built[f.__name__]
    assert jac.not_batched is None and jac.backend == "numpy", jac.not_batched
    reference = per_row(f, (X, Y), monkeypatch, grad_position=(0, 1))
    for a, b in zip(leaves(result), leaves(reference)):
        assert a.shape == b.shape
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)
    many = isinstance(f(X, Y), tuple)
    for k in (0, 1):
        expected = central_differences(f, (X, Y), k)
        got = tuple(r[k] for r in result) if many else result[k]
        for a, b in zip(leaves(got), leaves(expected)):
            np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)


def test_a_second_shape_then_the_first_again():
    """The cotangents are shaped by each call's output: no result keeps the first call's."""
    jac = s2sgrad.jacrev(indexing)
    wider = (np.hstack([X, 0.5 * X[:, :1]]), np.hstack([Y, -Y[:, 1:2]]))
    for x, y in ((X, Y), wider, (X, Y)):
        got = jac(x, y)
        assert jac.not_batched is None
        np.testing.assert_allclose(got, central_differences(indexing, (x, y), 0),
                                   rtol=1e-6, atol=1e-7)


def with_aux(x, y):
    return np.sin(x) * y, np.sum(x ** 2)


def test_has_aux_and_a_single_position(monkeypatch):
    jac = s2sgrad.jacrev(with_aux, grad_position=1, has_aux=True)
    got, aux = jac(X, Y)
    assert jac.not_batched is None
    want, want_aux = per_row(with_aux, (X, Y), monkeypatch, grad_position=1, has_aux=True)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    assert np.isclose(aux, want_aux) and np.isclose(aux, np.sum(X ** 2))
    np.testing.assert_allclose(got, central_differences(lambda x, y: with_aux(x, y)[0],
                                                        (X, Y), 1), rtol=1e-6, atol=1e-7)


def not_batchable(x):            # the adjoint of a tuple's item: rt.item_added
    return np.linalg.slogdet(np.outer(x, x) + np.eye(3))[1] * x[::-1]


def test_an_operation_without_a_batched_rule_runs_per_row(monkeypatch):
    monkeypatch.setenv("S2SGRAD_BACKEND", "python")
    jac = s2sgrad.jacrev(not_batchable)
    got = jac(X[0])
    assert "item_added" in jac.not_batched and "Not batched" in jac.fallback_reason
    # the message names the user's line and file, and what runs instead
    assert "test_jacrev_batched.py:" in jac.not_batched and "Var(" not in jac.not_batched
    assert "jacrev runs one adjoint sweep per row instead" in jac.not_batched
    np.testing.assert_allclose(got, central_differences(not_batchable, (X[0],), 0),
                               rtol=1e-6, atol=1e-7)


def scalar_out(x):
    return np.sum(np.sin(x) * x[::-1]) + x[0] * x[1]


def test_compositions_over_jacrev():
    """jacrev(jacrev), jacfwd(jacrev) and jacrev(grad): the Hessian, in one batched sweep;
    vmap of jacrev: each example's Jacobian; grad of a function calling jacrev inside."""
    x = X[0]
    hess = s2sgrad.hessian(scalar_out)(x)
    jac = s2sgrad.jacrev(broadcasting)
    for outer, inner in ((s2sgrad.jacrev, s2sgrad.jacrev), (s2sgrad.jacfwd, s2sgrad.jacrev),
                         (s2sgrad.jacrev, s2sgrad.grad)):
        second = outer(inner(scalar_out))
        np.testing.assert_allclose(second(x), hess, rtol=1e-10, atol=1e-12)
        # every direction in one batched forward sweep over the derivative's code
        assert second.last is second.batched, second.fallback_reason
    per_example = s2sgrad.vmap(jac, (0, None))(X, Y[0])
    for k in range(2):
        np.testing.assert_allclose(per_example[k], jac(X[k], Y[0]), rtol=1e-12)

    def through(x):
        return np.sum(s2sgrad.jacrev(broadcasting)(x, Y[0]) ** 2)
    np.testing.assert_allclose(s2sgrad.grad(through)(X[0]),
                               central_differences(through, (X[0],), 0), rtol=1e-6, atol=1e-7)


def wide_intermediate(x, a):
    return np.sum(np.tanh(a * x[:, None]), axis=1) * x


def test_the_sweep_width_is_capped_by_every_array_argument(monkeypatch):
    """A batch of a value as large as ``a`` per row: the rows run in blocks sized by
    ``a``, not by the output alone (``rt.sweep_width``), with the same Jacobian."""
    from s2sgrad import runtime as rt
    widths = []
    real = rt.sweep_width

    def recorded(total, *inputs):
        widths.append(real(total, *inputs))
        return widths[-1]
    monkeypatch.setattr(rt, "sweep_width", recorded)
    monkeypatch.setattr("s2sgrad.runtime.batched.BATCH_NUMBERS", 24)
    a = np.arange(12.0).reshape(3, 4) / 10
    jac = s2sgrad.jacrev(wide_intermediate)
    got = jac(X[0], a)
    assert jac.not_batched is None and widths == [2]        # 24 // a.size, of 3 rows
    np.testing.assert_allclose(got, central_differences(wide_intermediate, (X[0], a), 0),
                               rtol=1e-6, atol=1e-7)


def normed(x):
    return x / np.linalg.norm(x)


def test_a_helper_run_per_direction_is_batched_only_as_python(monkeypatch):
    """``rt.per_direction`` (norm's adjoint, once per row) beats the per-row sweeps run as
    Python, not those Numba compiles: under the auto backend the rows run per row."""
    for backend, batched in (("python", True), ("auto", False)):
        monkeypatch.setenv("S2SGRAD_BACKEND", backend)
        jac = s2sgrad.jacrev(normed)
        got = jac(X[0])
        assert (jac.not_batched is None) is batched, jac.not_batched
        assert batched or "rt.per_direction" in jac.not_batched
        np.testing.assert_allclose(got, central_differences(normed, (X[0],), 0),
                                   rtol=1e-6, atol=1e-7)


def sorted_sums(x):
    return np.sum(np.cumsum(np.sort(x)) ** 2) + sum(x * x[::-1])


def test_compositions_over_the_new_rules():
    """Second derivatives through sort, cumsum and the builtin sum (the batched rules of
    np.sort, np.cumsum and of their adjoints', with the forward values differentiated
    too): every spelling of the Hessian runs batched and agrees with differences of the
    gradient; vmap of jacrev gives each example's Jacobian."""
    x = X[0] * np.array([1.0, 0.9, 1.3])
    g = s2sgrad.grad(sorted_sums)
    eps = 1e-6
    want = np.array([(g(x + eps * e) - g(x - eps * e)) / (2 * eps) for e in np.eye(3)])
    hess = s2sgrad.hessian(sorted_sums)
    np.testing.assert_allclose(hess(x), want, rtol=1e-6, atol=1e-6)
    assert hess.ran_batched, hess.fallback_reason
    for second in (s2sgrad.jacrev(s2sgrad.jacrev(sorted_sums)),
                   s2sgrad.jacfwd(s2sgrad.jacrev(sorted_sums)), s2sgrad.jacrev(g)):
        np.testing.assert_allclose(second(x), want, rtol=1e-6, atol=1e-6)
        assert second.last is second.batched, second.fallback_reason
    jac = s2sgrad.jacrev(lambda v: np.cumsum(np.sort(v)) * v)
    per_example = s2sgrad.vmap(jac)(X)
    for k in range(2):
        np.testing.assert_allclose(per_example[k], jac(X[k]), rtol=1e-12)
