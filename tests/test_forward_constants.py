"""Forward mode never takes a constant for a tangent (issue 19, item 3).

A linear primitive's tangent is the call itself on the tangents (``np.sum(x_dot)``).  Its
differentiable operands may be written with constants among them: a constant row of a
nested ``np.array``, ``np.linspace``'s constant endpoint, ``np.select``'s ``default``, a
number appended or inserted.  A constant's tangent is zero, whatever its depth in the
call; the other arguments (sizes, axes, indices, conditions) stay as written.  Each case
is checked against a central difference of the function, by ``jvp`` and by ``jacfwd``,
and ``jvp`` under Numba once.
"""
import numpy as np
import pytest

import s2sgrad as ms


def nested_rows(t):
    return np.array([[1.0, 0.5], [np.cos(t), np.sin(t)]])


def nested_three_deep(t):
    return np.array([[[2.0, t], [3.0, 4.0]], [[t * t, 1.0], [5.0, 6.0]]])


def column_of_constants(t):
    return np.array([[t, 2.0], [np.sin(t), -1.5]]) @ np.array([1.0, 2.0])


def constant_endpoint(a):
    return np.linspace(a, 3.4, 5)


def constant_start(b):
    return np.linspace(-1.0, b * b, 4)


def select_default(x):
    return np.select([x > 0.5, x < -0.5], [x, 2 * x], default=7.0)


def select_constant_choice(x):
    return np.select([x > 0.5, x < -0.5], [3.0, 2 * x], default=x)


def appended_number(x):
    return np.append(x, 2.5) * np.append(3.0, x)


def inserted_number(x):
    return np.insert(x, 1, 9.0)


def stacked_with_tuple(x):
    return np.stack([x, (1.0, 2.0, 3.0)])


def concatenated_with_constant(x):
    return np.concatenate([x, (4.0,), x * x])


def python_list_of_rows(t):
    rows = [[1.0, t], [t * 2.0, 7.0]]
    return np.array(rows)


def full_of_constant_times(t):
    return np.full((2, 3), 2.0) * t + np.full(3, t)


CASES = [
    (nested_rows, 0.3), (nested_three_deep, 0.7), (column_of_constants, 0.4),
    (constant_endpoint, 0.3), (constant_start, 1.2),
    (select_default, np.array([0.9, 0.1, -0.9])),
    (select_constant_choice, np.array([0.9, 0.1, -0.9])),
    (appended_number, np.array([0.5, -1.0])), (inserted_number, np.array([0.5, -1.0])),
    (stacked_with_tuple, np.array([0.5, -1.0, 2.0])),
    (concatenated_with_constant, np.array([0.5, -1.0])),
    (python_list_of_rows, 0.6), (full_of_constant_times, 0.6),
]


def _difference(fn, x, v, eps=1e-6):
    return (np.asarray(fn(x + eps * v)) - np.asarray(fn(x - eps * v))) / (2 * eps)


@pytest.mark.parametrize("fn, x", CASES, ids=[c[0].__name__ for c in CASES])
def test_jvp_of_a_constant_is_zero(fn, x):
    v = np.linspace(0.5, 1.5, np.size(x)).reshape(np.shape(x)) if np.ndim(x) else 1.3
    out, tangent = ms.jvp(fn, (x,), (v,))
    np.testing.assert_allclose(out, fn(x))
    np.testing.assert_allclose(tangent, _difference(fn, x, v), rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("fn, x", CASES[:6], ids=[c[0].__name__ for c in CASES[:6]])
def test_jacfwd_of_a_constant_is_zero(fn, x):
    jac = np.asarray(ms.jacfwd(fn)(x))
    if np.ndim(x) == 0:
        np.testing.assert_allclose(jac, _difference(fn, x, 1.0), rtol=1e-6, atol=1e-8)
    else:
        for k in range(np.size(x)):
            e = np.zeros_like(x)
            e[k] = 1.0
            np.testing.assert_allclose(jac[..., k], _difference(fn, x, e), rtol=1e-6, atol=1e-8)


def test_the_generated_tangent_keeps_sizes_and_zeroes_constants():
    source = ms.show(constant_endpoint, 0.3, mode="jvp")
    assert "np.linspace(a_dot, 0.0, 5)" in source, source
    source = ms.show(nested_rows, 0.3, mode="jvp")
    assert "[0.0, 0.0]" in source and "[1.0, 0.5]" in source.split("_dot =")[0], source


def test_jvp_of_a_constant_is_zero_under_numba(monkeypatch):
    monkeypatch.setenv("S2SGRAD_BACKEND", "numba")

    def loop(x):
        total = np.zeros(2)
        for i in range(3):
            total = total + np.array([x[i], 2.0]) * np.linspace(x[i], 3.0, 2)
        return total
    x = np.array([0.3, 0.5, 0.7])
    v = np.array([1.0, -0.5, 2.0])
    out, tangent = ms.jvp(loop, (x,), (v,))
    np.testing.assert_allclose(tangent, _difference(loop, x, v), rtol=1e-6, atol=1e-8)
