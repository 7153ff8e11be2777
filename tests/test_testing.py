"""Tests of s2sgrad.testing: numerical_grad against known derivatives, and
check_grad passing on correct gradients and failing, with a readable message,
on wrong ones (a wrong rule in the table, a wrong custom_vjp)."""
import numpy as np
import pytest

import s2sgrad
from s2sgrad import Tensor
from s2sgrad.rules import registry
from s2sgrad.testing import check_grad, numerical_grad, numerical_jacobian

rng = np.random.default_rng(7)


@pytest.fixture(autouse=True)
def _python_backend(tmp_path, monkeypatch):
    monkeypatch.setenv("S2SGRAD_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("S2SGRAD_BACKEND", "python")


# ------------------------------------------------------------ numerical_grad

def test_numerical_grad_matches_analytic_derivatives():
    x = rng.uniform(-1, 1, (3, 4))
    np.testing.assert_allclose(numerical_grad(lambda x: np.sum(np.sin(x)), (x,)), np.cos(x),
                               rtol=1e-7, atol=1e-9)
    y = rng.uniform(0.5, 2, 4)
    g = numerical_grad(lambda x, y: np.sum(x * np.log(y)), (x, y), position=1)
    np.testing.assert_allclose(g, np.sum(x, axis=0) / y, rtol=1e-7)


def test_numerical_grad_sums_every_output_element():
    x = rng.uniform(-1, 1, 5)
    np.testing.assert_allclose(numerical_grad(lambda x: x ** 2, (x,)), 2 * x, rtol=1e-7)
    # a tuple of outputs: the sensitivity is ones on each of them
    np.testing.assert_allclose(numerical_grad(lambda x: (x ** 2, np.exp(x)), (x,)),
                               2 * x + np.exp(x), rtol=1e-7)


def test_numerical_grad_of_a_python_float_is_a_float():
    g = numerical_grad(lambda x, y: x * x * y, (1.5, 2.0), position=0)
    assert isinstance(g, float)
    assert g == pytest.approx(6.0, rel=1e-8)


def test_numerical_grad_works_in_float64_for_float32_inputs():
    x = rng.uniform(-1, 1, 4).astype(np.float32)
    g = numerical_grad(lambda x: np.sum(np.exp(x)), (x,), eps=1e-6)
    assert g.dtype == np.float64
    np.testing.assert_allclose(g, np.exp(x.astype(np.float64)), rtol=1e-7)


def test_numerical_grad_accepts_tensors():
    x = Tensor(rng.uniform(-1, 1, 3))
    g = numerical_grad(lambda x: s2sgrad.ops.sum(s2sgrad.ops.exp(x)), (x,))
    np.testing.assert_allclose(g, np.exp(x.asnumpy()), rtol=1e-7)


def test_numerical_grad_rejects_integer_arguments():
    with pytest.raises(TypeError, match="not floating"):
        numerical_grad(lambda x: np.sum(x), (np.arange(3),))


# ------------------------------------------------------------ check_grad


def test_check_grad_passes_and_returns_the_grad_function():
    def f(x, w):
        return np.sum(np.tanh(x @ w))

    g = check_grad(f, (rng.uniform(-1, 1, (3, 4)), rng.uniform(-1, 1, (4, 2))),
                   grad_position=(0, 1))
    assert g.backend == "python"
    assert "def f_value_and_grad" in g.source


def test_check_grad_on_scalars_and_integer_side_arguments():
    def f(x, idx):
        return np.sum(np.exp(x[idx]))

    check_grad(f, (rng.uniform(-1, 1, 4), np.array([0, 0, 3])))
    check_grad(lambda a, b: a * a * b, (1.5, -0.5), grad_position=(0, 1))


def _wrong_square(x):
    return x * x


def test_check_grad_fails_on_a_wrong_rule():
    @registry.vjp(_wrong_square)
    def _(ans, x):
        d[x] = d[ans] * 3 * x  # noqa: F821 - a template: d is never evaluated

    try:
        def f(x):
            return np.sum(_wrong_square(x))

        x = np.array([[0.5, -1.0], [2.0, 0.25]])
        with pytest.raises(AssertionError) as info:
            check_grad(f, (x,))
    finally:
        del registry._RULES[registry._key(_wrong_square)]
    msg = str(info.value)
    assert "argument 0" in msg
    assert "max abs error" in msg and "max rel error" in msg
    # 3x vs 2x: the worst element is the largest |x|, at (1, 0)
    assert "at index (1, 0)" in msg and "analytic 6.0, numerical 4.0" in msg
    assert registry.lookup(_wrong_square) is None


def test_check_grad_fails_on_a_wrong_custom_vjp():
    @s2sgrad.custom_vjp
    def cube(x):
        return x * x * x

    @cube.defvjp
    def _(x, out, dout):
        return (dout * 3 * x,)          # should be 3 x**2

    def f(x):
        return np.sum(cube(x))

    with pytest.raises(AssertionError, match="argument 0"):
        check_grad(f, (rng.uniform(0.5, 2.0, 3),))


def test_check_grad_names_the_failing_position():
    @s2sgrad.custom_vjp
    def mul(a, b):
        return a * b

    @mul.defvjp
    def _(a, b, out, dout):
        return dout * b, dout * b       # b's gradient is wrong

    def f(a, b):
        return np.sum(mul(a, b))

    with pytest.raises(AssertionError, match="argument 1"):
        check_grad(f, (rng.uniform(0.5, 1, 3), rng.uniform(1.5, 2, 3)), grad_position=(0, 1))


def test_check_grad_tolerances_are_used():
    @s2sgrad.custom_vjp
    def almost(x):
        return 2.0 * x

    @almost.defvjp
    def _(x, out, dout):
        return (dout * 2.0001,)

    def f(x):
        return np.sum(almost(x))

    x = rng.uniform(-1, 1, 3)
    with pytest.raises(AssertionError):
        check_grad(f, (x,))
    check_grad(f, (x,), rtol=1e-3)


# -------------------------------------------------------- numerical_jacobian

def test_numerical_jacobian_is_shaped_output_then_argument():
    x = rng.uniform(-1, 1, (2, 3))
    w = rng.uniform(-1, 1, (4, 3))
    jac = numerical_jacobian(lambda x, w: np.tanh(x @ w.T), (x, w), position=1)
    assert jac.shape == (2, 4, 4, 3)
    want = np.zeros((2, 4, 4, 3))
    for i in range(2):
        for j in range(4):
            want[i, j, j] = (1 - np.tanh(x[i] @ w[j]) ** 2) * x[i]
    np.testing.assert_allclose(jac, want, rtol=1e-7, atol=1e-9)


def test_numerical_jacobian_of_tuples_floats_and_tensors():
    sin_cos = numerical_jacobian(lambda t: (np.sin(t), np.cos(t) * np.ones(3)), (0.4,))
    assert isinstance(sin_cos, tuple) and sin_cos[0].shape == () and sin_cos[1].shape == (3,)
    np.testing.assert_allclose(sin_cos[0], np.cos(0.4), rtol=1e-8)
    np.testing.assert_allclose(sin_cos[1], -np.sin(0.4) * np.ones(3), rtol=1e-8)
    x = np.array([0.3, -0.2], dtype=np.float32)
    jac = numerical_jacobian(lambda x: x * x, (Tensor(x),))
    np.testing.assert_allclose(jac, np.diag(2 * x.astype(np.float64)), rtol=1e-6)
    with pytest.raises(TypeError, match="argument 0"):
        numerical_jacobian(lambda n: n * 2.0, (3,))


def test_numerical_jacobian_of_a_gradient_checks_a_hessian():
    x = rng.uniform(-1, 1, 3)
    h = s2sgrad.hessian(lambda x: np.sum(np.sin(x)) * np.sum(x * x))(x)
    fd = numerical_jacobian(s2sgrad.grad(lambda x: np.sum(np.sin(x)) * np.sum(x * x)), (x,))
    np.testing.assert_allclose(h, fd, rtol=1e-5, atol=1e-7)
