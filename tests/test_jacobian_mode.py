"""``s2sgrad.jacobian`` picks forward mode for a tall Jacobian (fewer inputs than outputs)
and reverse mode for a wide one, per call signature: a later call with other sizes is
decided again, never by what the first call saw; every Jacobian equals central finite
differences in float64 and the named modes' results."""
import numpy as np
import pytest

import s2sgrad
from s2sgrad.testing import numerical_jacobian


def spread(x, a):
    """Tall for a short ``x``, wide for a long one: ``x`` (n,) -> (3,)."""
    return np.array([np.sum(np.sin(x) * a), np.sum(x * x), np.prod(np.cos(x[:2]))])


def curve(t, a):
    """Tall: a number or 2 numbers -> 6 values."""
    return np.concatenate([np.sin(t * a), np.cos(t) * a])


@pytest.fixture
def python_backend(monkeypatch):
    monkeypatch.setenv("S2SGRAD_BACKEND", "python")


def test_one_jacobian_object_decides_per_call_sizes(python_backend):
    jac = s2sgrad.jacobian(spread)
    a = 0.7
    for n, mode in [(2, "forward"), (8, "reverse"), (3, "forward"), (8, "reverse")]:
        x = np.linspace(-1.0, 1.0, n)
        got = jac(x, a)
        assert jac.last is (jac.forward if mode == "forward" else jac.reverse), n
        np.testing.assert_allclose(got, numerical_jacobian(spread, (x, a), 0),
                                   rtol=1e-7, atol=1e-8)
        np.testing.assert_allclose(got, s2sgrad.jacrev(spread)(x, a), rtol=1e-12)
        np.testing.assert_allclose(got, s2sgrad.jacfwd(spread)(x, a), rtol=1e-12)


def test_positions_aux_and_numbers_keep_jacrev_shapes(python_backend):
    def with_aux(t, a):
        return curve(t, a), "aux"
    x, a = np.array([0.3, -0.4]), np.array([1.5, 2.0, -1.0])
    jac = s2sgrad.jacobian(curve, (0, 1))
    got = jac(x[:1].reshape(()), a)                    # a 0-d array and 3 values: tall
    assert jac.last is jac.forward
    want = s2sgrad.jacrev(curve, (0, 1))(x[:1].reshape(()), a)
    assert len(got) == len(want) == 2
    for g, w in zip(got, want):
        assert np.shape(g) == np.shape(w)
        np.testing.assert_allclose(g, w, rtol=1e-12)
    (j, aux) = s2sgrad.jacobian(with_aux, has_aux=True)(0.3, a)
    assert aux == "aux"
    np.testing.assert_allclose(j, numerical_jacobian(curve, (0.3, a), 0), rtol=1e-7)


def test_a_jacobian_object_composes_as_its_jacfwd(python_backend):
    """Transforms of a jacobian object, and one called inside a differentiated function,
    give what they give for jacfwd(f) (the same Jacobian)."""
    jac, x = s2sgrad.jacobian(spread), np.array([0.3, -0.4])
    np.testing.assert_allclose(s2sgrad.jacfwd(jac)(x, 0.5),
                               s2sgrad.jacfwd(s2sgrad.jacfwd(spread))(x, 0.5), rtol=1e-12)
    np.testing.assert_allclose(s2sgrad.grad(jac)(x, 0.5),
                               s2sgrad.grad(s2sgrad.jacfwd(spread))(x, 0.5), rtol=1e-12)

    def uses(x, a):
        return np.sum(jac(x, a) ** 2)
    want = numerical_jacobian(uses, (x, 0.5), 0)
    np.testing.assert_allclose(s2sgrad.grad(uses)(x, 0.5), want, rtol=1e-6, atol=1e-8)


def test_the_tall_choice_runs_compiled_like_jacfwd(monkeypatch):
    monkeypatch.setenv("S2SGRAD_BACKEND", "numba")
    x = np.array([0.2, -0.7])
    jac = s2sgrad.jacobian(curve)
    got = jac(x, 1.3)
    assert jac.last is jac.forward and jac.backend == "numba", jac.fallback_reason
    np.testing.assert_allclose(got, numerical_jacobian(curve, (x, 1.3), 0), rtol=1e-7)
