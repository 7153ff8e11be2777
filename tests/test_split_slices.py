"""``np.split(x, k)`` written as k slices of ``x`` (``front/lower_calls.split_as_slices``).

LSTM gates written ``f, i, o, c = np.split(gates, 4)`` went through ``np.split``'s rule
(a list made per step, its adjoint a concatenation), which the fused loops do not read:
GradBench lstm's held-out spelling ran 10.5 ms against 4.7-5.8 for the same cell with
slices, 6.0 now.  Checked: the generated code slices (no ``np.split`` call) with
``rt.section_length``; gradients, Hessian-vector products and Jacobians against central
differences under both backends; numpy's error for pieces that are not equal (in Python
and in Numba's code, whatever the first call's length was); the forms left to the rule
(sections given as a list, a run-time count, another axis) still right; vmap and jit of
it.
"""
import numpy as np
import pytest

from scipy.special import expit, log_expit

import s2sgrad as ms
from s2sgrad.testing import check_grad, numerical_grad

RNG = np.random.default_rng(5)


def gates(x, w):
    z = x * w
    f, i, o, c = np.split(z, 4)
    return np.sum(np.tanh(c) * f + i * o ** 2)


def rows(m):
    top, bottom = np.split(m, 2, axis=0)
    return np.sum(np.sin(top) * bottom)


def looped(x, w):
    h = np.zeros(len(x) // 4)
    total = 0.0
    for t in range(3):
        z = np.concatenate((h, h, h, h)) * w + x
        f, i, o, c = np.split(z, 4)
        h = np.tanh(c) * f + i * np.tanh(o)
        total = total + np.sum(h)
    return total


def uneven_left_to_rule(x):
    a, b = np.split(x, [2])              # indices: numpy's own call, by its rule
    return np.sum(a ** 2) + np.sum(np.cos(b))


def other_axis(m):
    a, b = np.split(m, 2, axis=1)
    return np.sum(a * b)


def _code(source):
    """The generated lines without their comments (which quote the user's line)."""
    return "\n".join(line.split("#")[0] for line in source.splitlines())


X, W = RNG.standard_normal(8), RNG.standard_normal(8)
M = RNG.standard_normal((4, 3))


@pytest.mark.parametrize("backend", ["python", "numba"])
def test_split_is_slices_and_gradients_match_differences(backend, monkeypatch):
    monkeypatch.setenv("S2SGRAD_BACKEND", backend)
    for fn, args, positions in [(gates, (X, W), (0, 1)), (rows, (M,), 0),
                                (looped, (X, W), (0, 1))]:
        g = ms.grad(fn, positions)
        check_grad(fn, args, positions)
        code = _code(g.source)
        assert "rt.section_length(" in code and "np.split(" not in code, fn.__name__


def test_forms_left_to_the_rule_are_still_right():
    check_grad(uneven_left_to_rule, (RNG.standard_normal(5),))
    check_grad(other_axis, (RNG.standard_normal((3, 4)),))
    assert "np.split(" in _code(ms.grad(uneven_left_to_rule).source)


@pytest.mark.parametrize("backend", ["python", "numba"])
def test_pieces_that_are_not_equal_raise_numpys_error(backend, monkeypatch):
    monkeypatch.setenv("S2SGRAD_BACKEND", backend)
    g = ms.grad(gates, (0, 1))
    g(X, W)                                  # built for length 8 first
    with pytest.raises(ValueError, match="equal division"):
        g(RNG.standard_normal(10), RNG.standard_normal(10))
    with pytest.raises(ValueError, match="equal division"):
        ms.grad(rows)(RNG.standard_normal((5, 2)))


def test_second_order_and_jacobians_through_the_slices():
    def at_w(x):
        return gates(x, W)
    hvp = ms.hvp(at_w, (X,), (np.ones(8),))
    gradient = ms.grad(gates, 0)
    want = numerical_grad(lambda x: gradient(x, W) @ np.ones(8), (X,), 0)
    np.testing.assert_allclose(hvp[0] if isinstance(hvp, tuple) else hvp, want,
                               rtol=1e-6, atol=1e-7)

    def pieces(x):
        a, b = np.split(x, 2)
        return np.sin(a) * b
    for jac in (ms.jacfwd(pieces), ms.jacrev(pieces)):
        got = jac(X)
        for k in range(4):
            np.testing.assert_allclose(got[k], numerical_grad(lambda v: pieces(v)[k], (X,), 0),
                                       rtol=1e-6, atol=1e-8)


def test_vmap_and_jit_of_a_split():
    per_example = ms.vmap(ms.grad(gates), in_axes=(0, None))
    xs = RNG.standard_normal((3, 8))
    got = per_example(xs, W)
    np.testing.assert_allclose(got, np.stack([ms.grad(gates)(x, W) for x in xs]),
                               rtol=1e-12)
    np.testing.assert_allclose(ms.jit(looped)(X, W), looped(X, W), rtol=1e-12)


# ---------------------------------------------------------------- scipy's expit in a loop

def split_expit_cell(params, state, seq):
    """GradBench lstm's held-out spelling: gates by np.split, scipy's expit."""
    hidden = state[0::2].copy()
    cell = state[1::2].copy()
    total = 0.0
    for t in range(seq.shape[0] - 1):
        x = seq[t]
        for j in range(hidden.shape[0]):
            gates = np.concatenate((x, hidden[j], x, hidden[j])) * params[j]
            f, i, o, c = np.split(gates, 4)
            cell[j] = cell[j] * expit(f) + expit(i) * np.tanh(c)
            hidden[j] = expit(o) * np.tanh(cell[j]) + log_expit(c)
            x = hidden[j]
        total = total + np.sum(seq[t + 1] * x)
    return total


def _cell_args(layers, b, c, seed=0):
    rng = np.random.default_rng(seed)
    return (rng.uniform(-1, 1, (layers, 4 * b)), rng.uniform(-1, 1, (2 * layers, b)),
            rng.uniform(-1, 1, (c, b)))


def test_expit_and_split_gates_are_one_fused_loop_and_match_differences(monkeypatch):
    """The gate chain (slices of the split, ``special.expit``, ``np.tanh``) is a fused
    loop's element expression, not an array call per gate; the compiled gradient equals
    the numpy statements run as Python (a scalar expit within an ulp) and central
    differences, for sizes that change after the first call."""
    g = ms.grad(split_expit_cell, (0, 1))
    for layers, b, c in [(2, 5, 4), (3, 7, 3)]:
        args = _cell_args(layers, b, c)
        got = g(*args)
        assert g.backend == "numba"
        passes = [line for line in g.source.splitlines() if "def _" in line and "_pass" in line]
        assert passes, "no fused loop"
        assert any("special.expit(" in line for line in g.source.splitlines()
                   if "[i]" in line), "expit not computed per element"
        monkeypatch.setenv("S2SGRAD_BACKEND", "python")
        want = ms.grad(split_expit_cell, (0, 1))(*args)
        monkeypatch.setenv("S2SGRAD_BACKEND", "auto")
        for a, b_ in zip(got, want):
            np.testing.assert_allclose(a, b_, rtol=1e-13, atol=1e-14)
        for k in (0, 1):
            np.testing.assert_allclose(got[k], numerical_grad(split_expit_cell, args, k),
                                       rtol=1e-6, atol=1e-8)
