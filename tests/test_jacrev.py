"""s2sgrad.jacrev: one forward sweep, the adjoint sweep per output element.

Jacobians against central finite differences (float64) under Numba and plain Python,
the reference's shapes and tuple structures, has_aux, dtypes, and the errors."""
import numpy as np
import pytest

import s2sgrad as ms
from s2sgrad.errors import GradientArgumentError, GradientTypeError
from s2sgrad.testing import numerical_jacobian
from test_control_flow import CASES

RNG = np.random.default_rng(5)
BACKENDS = ["auto", "python"]


def _positions(positions):
    return (positions,) if isinstance(positions, int) else positions


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("fn, args, positions", CASES,
                         ids=[f"{c[0].__name__}-{i}" for i, c in enumerate(CASES)])
def test_jacrev_matches_finite_differences(fn, args, positions, backend, monkeypatch):
    monkeypatch.setenv("S2SGRAD_BACKEND", backend)
    jac = ms.jacrev(fn, grad_position=positions)(*args)
    several = isinstance(fn(*args), tuple)
    for j, p in enumerate(_positions(positions)):
        want = numerical_jacobian(fn, args, p)
        if several:
            got = tuple(per_output[j] if not isinstance(positions, int) else per_output
                        for per_output in jac)
            for g, w in zip(got, want):
                np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-7)
        else:
            got = jac if isinstance(positions, int) else jac[j]
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-7,
                                       err_msg=f"{fn.__name__}: position {p}")


def squares_and_product(x, y, z):
    return x ** 2 + y ** 2 + z ** 2, x * y * z


def test_reference_example_with_aux():
    x = ms.Tensor(np.array([[1, 2], [3, 4]]).astype(np.float32))
    y = ms.Tensor(np.array([[1, 2], [3, 4]]).astype(np.float32))
    z = ms.Tensor(np.array([[1, 1], [1, 1]]).astype(np.float32))
    jac, aux = ms.jacrev(squares_and_product, grad_position=0, has_aux=True)(x, y, z)
    assert isinstance(jac, ms.Tensor) and jac.shape == (2, 2, 2, 2)
    assert jac.dtype == ms.float32
    want = np.zeros((2, 2, 2, 2))
    for i in np.ndindex(2, 2):
        want[i + i] = 2 * x.asnumpy()[i]
    np.testing.assert_allclose(jac.asnumpy(), want)
    np.testing.assert_allclose(aux.asnumpy(), [[1, 4], [9, 16]])


def test_structures_over_outputs_and_positions():
    x, y, z = RNG.normal(size=2), RNG.normal(size=3), RNG.normal(size=(2, 3))

    def one_out(x, y, z):
        return np.sin(x)[:, None] * y * z

    def two_out(x, y, z):
        return np.sum(x) * y, x[0] * z

    single = ms.jacrev(one_out, 0)(x, y, z)
    assert single.shape == (2, 3, 2)
    assert ms.jacrev(one_out, (0,))(x, y, z).shape == (2, 3, 2)   # (0,) is bare too
    by_position = ms.jacrev(one_out, (2, 1))(x, y, z)
    assert [j.shape for j in by_position] == [(2, 3, 2, 3), (2, 3, 3)]
    by_output = ms.jacrev(two_out, 0)(x, y, z)
    assert [j.shape for j in by_output] == [(3, 2), (2, 3, 2)]
    both = ms.jacrev(two_out, (0, 1))(x, y, z)
    assert [[j.shape for j in row] for row in both] == [[(3, 2), (3, 3)], [(2, 3, 2),
                                                                           (2, 3, 3)]]
    np.testing.assert_allclose(both[0][1], np.sum(x) * np.eye(3))


def test_scalar_in_scalar_out_and_dtypes():
    def f(a, x):
        return a * np.sum(x * x)

    x32 = RNG.normal(size=3).astype(np.float32)
    j = ms.jacrev(f, (0, 1))(1.5, x32)
    assert np.ndim(j[0]) == 0 and np.isclose(j[0], np.sum(x32 * x32), rtol=1e-5)
    assert j[1].dtype == np.float32 and j[1].shape == (3,)
    np.testing.assert_allclose(j[1], 3.0 * x32, rtol=1e-5)


def test_jacobian_loop_is_compiled_with_numba(monkeypatch):
    monkeypatch.setenv("S2SGRAD_BACKEND", "auto")

    def rnn(w, x):
        h = np.zeros(3)
        for t in range(x.shape[0]):
            h = np.tanh(w @ h + x[t])
        return h

    jf = ms.jacrev(rnn, (0, 1))
    w, x = 0.5 * RNG.normal(size=(3, 3)), RNG.normal(size=(4, 3))
    jw, jx = jf(w, x)
    assert jf.backend == "numba" and jw.shape == (3, 3, 3) and jx.shape == (3, 4, 3)
    np.testing.assert_allclose(jx, numerical_jacobian(rnn, (w, x), 1), rtol=1e-5, atol=1e-7)
    source = jf.source
    assert "def rnn_jacobian(" in source and "rt.basis_tangent(" in source


def test_errors():
    def f(x, n):
        return x * n

    x = RNG.normal(size=3)
    with pytest.raises(GradientArgumentError, match="grad_position 2 is out of range"):
        ms.jacrev(f, 2)(x, 3)
    with pytest.raises(GradientTypeError, match="grad_position 1 is an integer"):
        ms.jacrev(f, 1)(x, 3)
    with pytest.raises(TypeError, match="grad_position must be an int or a tuple"):
        ms.jacrev(f, None)
    with pytest.raises(TypeError, match="grad_position must be an int or a tuple"):
        ms.jacrev(f, 1.0)
    with pytest.raises(ValueError, match="must not repeat"):
        ms.jacrev(f, (0, 0))
    with pytest.raises(TypeError, match="has_aux must be a bool"):
        ms.jacrev(f, 0, has_aux="yes")
    np.testing.assert_allclose(ms.jacrev(f, 0)(x, 3), 3 * np.eye(3))
