"""Second derivatives through integer-array indexing (issue 19, item 2).

The gradient of ``x[idx]`` scatters with ``rt.add_at(dx, idx, g)``, an update in place.
Differentiated again (forward over reverse), the scatter must be seen as making ``dx``:
its Hessian was all zeros.  Each program is checked by ``hessian``, ``hvp`` and
``jacfwd(jacrev)`` against central differences of the gradient; ``grad(grad)`` on a
scalar input; and once under Numba.
"""
import numpy as np
import pytest

import s2sgrad as ms

IDX = np.array([0, 2, 5, 2])
ROWS = np.array([1, 0, 1])
LABELS = np.array([0, 2, 1, 2])


def literal_list(x):
    return np.sum(x[[0, 2, 5]] ** 3)


def repeated_index_array(x):
    return np.sum(x[IDX] ** 3)


def mixed_index(x):
    t = x.reshape(4, 3, 2)
    return np.sum(np.sin(t[3, 1:, [1, 0]]) * t[3, 1:, [0, 1]])


def index_of_a_slice(x):
    w = x.reshape(3, 4)
    return np.sum(np.exp(w[:, :-1][ROWS]))


def cross_entropy(x):
    p = np.exp(x.reshape(4, 3))
    p = p / np.sum(p, axis=1, keepdims=True)
    return -np.mean(np.log(p[np.arange(4), LABELS]))


PROGRAMS = [(literal_list, 6), (repeated_index_array, 6), (mixed_index, 24),
            (index_of_a_slice, 12), (cross_entropy, 12)]
IDS = [p[0].__name__ for p in PROGRAMS]


def _hessian_by_differences(f, x, eps=1e-5):
    g = ms.grad(f)
    return np.array([(g(x + eps * e) - g(x - eps * e)) / (2 * eps) for e in np.eye(x.size)])


@pytest.mark.parametrize("f, n", PROGRAMS, ids=IDS)
def test_second_derivatives_through_index_arrays(f, n):
    x = np.linspace(0.3, 1.1, n)
    v = np.linspace(-1.0, 1.0, n)
    want = _hessian_by_differences(f, x)
    assert np.max(np.abs(want)) > 0.05             # not a zero Hessian by construction
    np.testing.assert_allclose(ms.hessian(f)(x), want, atol=1e-6)
    (hv,) = ms.hvp(f, (x,), (v,))
    np.testing.assert_allclose(hv, want @ v, atol=1e-6)
    np.testing.assert_allclose(ms.jacfwd(ms.jacrev(f))(x), want, atol=1e-6)


def test_grad_of_grad_through_an_index_array():
    def f(t):
        return np.sum(np.array([t, t * t, 3.0])[[0, 1, 1]] ** 3)
    t = 0.7
    second = ms.grad(ms.grad(f))(t)
    want = (ms.grad(f)(t + 1e-5) - ms.grad(f)(t - 1e-5)) / 2e-5
    np.testing.assert_allclose(second, want, rtol=1e-6)


def test_hessian_through_an_index_array_in_a_loop_under_numba(monkeypatch):
    monkeypatch.setenv("S2SGRAD_BACKEND", "numba")

    def f(x):
        total = 0.0
        for k in range(3):
            total = total + np.sum(x[IDX] ** 3) * (k + 1.0)
        return total
    x = np.linspace(0.3, 1.1, 6)
    np.testing.assert_allclose(ms.hessian(f)(x), _hessian_by_differences(f, x), atol=1e-6)
