"""``np.<ufunc>.outer(a, b)`` is the ufunc of ``a`` with new axes and ``b``
(``compiler/front/ufunc_outer.py``).

GradBench llsq's held-out ``np.power.outer(t, np.arange(len(x)))`` was an opaque value
handed to the generated function as a parameter: never differentiated, never hoisted
with the other constants of the sizes, 295x the eval's spelling.  Each spelling of the
class (power/multiply/subtract/add/arctan2, ranks 1x1, 2x1, 1x2, a number operand) is
checked against central differences w.r.t. both operands and must be written as the
ufunc in the generated code; an outer product of sizes and numbers only is computed once
per their values (``rt.Constants``), ``len(x)`` read as ``x``'s first size.
"""
import numpy as np
import pytest

import s2sgrad
from s2sgrad import runtime as rt
from s2sgrad.testing import check_grad


@pytest.fixture(params=["auto", "numba"])
def backend(request, monkeypatch):
    monkeypatch.setenv("S2SGRAD_BACKEND", request.param)
    return request.param


def power_outer(a, b):
    return np.sum(np.sin(np.power.outer(a, b)))


def multiply_outer_of_a_matrix(a, b):
    return np.sum(np.multiply.outer(a.reshape(2, 3), b) ** 2)


def subtract_outer_into_a_matrix(a, b):
    return np.sum(np.cos(np.subtract.outer(a, b.reshape(2, 3))))


def add_outer_of_a_number(a, b):
    return np.sum(np.exp(np.add.outer(a, b[0] * 1.0)) + np.add.outer(2.0 * b[1], a))


def arctan2_outer(a, b):
    return np.sum(np.arctan2.outer(a, b) * a[0])


OUTERS = [power_outer, multiply_outer_of_a_matrix, subtract_outer_into_a_matrix,
          add_outer_of_a_number, arctan2_outer]


@pytest.mark.parametrize("fn", OUTERS, ids=lambda f: f.__name__)
def test_outer_of_a_ufunc_has_the_gradient_of_finite_differences(fn, backend):
    a = np.array([1.3, 0.8, 1.2, 0.5, 1.1, 0.9])
    b = np.array([1.1, 0.4, 0.7, 0.2, 1.5, 0.3])
    gradient = check_grad(fn, (a, b), (0, 1))
    code = "\n".join(line.split("#")[0] for line in s2sgrad.show(gradient, a, b).splitlines())
    assert ".outer" not in code and "_outer(" not in code, code


def test_outer_written_as_the_ufunc_of_new_axes():
    a, b = np.array([1.3, 0.8, 1.2]), np.array([1.1, 0.4])
    code = s2sgrad.show(s2sgrad.grad(power_outer, 0), a, b)
    assert "= a[:, None]" in code and "np.power(t1, b)" in code, code
    code = s2sgrad.show(s2sgrad.grad(multiply_outer_of_a_matrix, 0), np.ones(6), b)
    assert "[:, :, None]" in code, code


def polynomial_fit(x, n):
    t = np.linspace(-1, 1, n)
    A = np.power.outer(t, np.arange(len(x)))
    return np.linalg.norm(np.sign(t) - np.matmul(A, x)) ** 2 / 2


def test_outer_powers_of_sizes_are_constants(backend):
    x = np.array([0.3, -0.2, 0.5, 0.1])
    g = s2sgrad.grad(polynomial_fit, 0)
    t = np.linspace(-1, 1, 9)
    A = t[:, None] ** np.arange(4)
    for _ in range(2):
        np.testing.assert_allclose(g(x, 9), -A.T @ (np.sign(t) - A @ x), rtol=1e-12)
    if backend == "numba":      # Numba compiles the gradient as written: no table
        return
    source = g.source
    body = source[source.index("_value_and_grad("):source.index("# What the function above")]
    assert "np.power" not in body and "np_power_outer" not in body, source
    constants = source[source.index("# What the function above"):]
    assert "np.power(t[:, None], np.arange(x_shape[0]))" in constants, source
    table = next(v for v in g._compiled.py_func.__globals__.values()
                 if isinstance(v, rt.Constants))
    assert table.computed == 1
    y = np.array([0.3, -0.2, 0.5, 0.1, 0.7])          # another len(x): computed again
    B = t[:, None] ** np.arange(5)
    np.testing.assert_allclose(g(y, 9), -B.T @ (np.sign(t) - B @ y), rtol=1e-12)
    assert table.computed == 2


def test_outer_under_vmap_of_grad_and_jacfwd():
    a = np.array([[1.3, 0.8, 1.2], [0.5, 1.1, 0.9]])
    b = np.array([1.1, 0.4])
    batched = s2sgrad.vmap(s2sgrad.grad(power_outer, 0), in_axes=(0, None))(a, b)
    for row, got in zip(a, batched):
        np.testing.assert_allclose(got, np.sum(np.cos(row[:, None] ** b) * b *
                                               row[:, None] ** (b - 1), axis=1), rtol=1e-12)
    jac = s2sgrad.jacfwd(lambda v: np.multiply.outer(v, b).ravel())(a[0])
    np.testing.assert_allclose(jac, np.kron(np.eye(3), b[:, None]), rtol=1e-12)


def test_a_ufunc_method_read_is_not_guarded():
    """``np.power.outer`` is a new bound method at each read: a guard of it by identity
    failed at every call, and the code was set aside and loaded again each time."""
    a, b = np.array([1.3, 0.8, 1.2]), np.array([1.1, 0.4])
    g = s2sgrad.grad(power_outer, 0)
    first = g(a, b)
    for _ in range(2):
        np.testing.assert_allclose(g(a, b), first, rtol=0)
        assert g.backend in ("numpy", "numba"), g.backend    # the last call's code kept
    assert not any("outer" in repr(guard) for guard in g._generated.guards)
