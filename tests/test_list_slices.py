"""A slice of a run-time list (one the function extends with ``append``) is a list: every
start/stop/step (negative, reversed ``xs[::-1]``, bounds known only at run time), looped
over (plain, ``reversed``, ``enumerate``/``zip``), stacked, concatenated, summed, read by
index, measured with ``len``, sliced again and passed to an inlined helper.  Its adjoint is
a list added item by item into the sliced positions of the list's adjoint (a ``+`` would
concatenate lists: a silent wrong gradient).  Checked against central differences in
float64 for grad, jacfwd and hvp, under the Python backend per spelling and under Numba on
one program using them all; a slice of a tuple result is refused naming the user's line."""
import numpy as np
import pytest

import s2sgrad
from s2sgrad.errors import UnsupportedConstructError
from s2sgrad.testing import numerical_grad


def build(x):
    parts = []
    for i in range(x.shape[0]):
        parts.append(np.sin(x * (i + 1.0)))
    return parts


def total_squares(items):
    s = 0.0
    for p in items:
        s = s + np.sum(p * p)
    return s


def loop_plain(x):
    parts = build(x)
    s = 0.0
    for p in parts[1:]:
        s = s + np.sum(p * p)
    return s


def loop_negative_step(x):
    parts = build(x)
    s = 0.0
    for p in parts[::-2]:
        s = s * 0.5 + np.sum(p * x)
    return s


def loop_reversed(x):
    parts = build(x)
    s = 0.0
    for p in reversed(parts[:-1]):
        s = np.tanh(s) + np.sum(p * p)
    return s


def loop_reversed_slice(x):
    parts = build(x)
    s = 0.0
    for p in parts[::-1]:
        s = np.tanh(s) + np.sum(p * x)
    return s


def loop_enumerate(x):
    parts = build(x)
    s = 0.0
    for k, p in enumerate(parts[1:3]):
        s = s + (k + 1.0) * np.sum(p * p)
    return s


def loop_enumerate_reversed(x):
    parts = build(x)
    s = 0.0
    for k, p in enumerate(reversed(parts[1:])):
        s = s + (k + 1.0) * np.sum(p * p)
    return s


def loop_zip(x):
    parts = build(x)
    s = 0.0
    for p, q in zip(parts[1:], parts[:-1]):
        s = s + np.sum(p * q)
    return s


def loop_runtime_bounds(x):
    parts = build(x)
    n = x.shape[0]
    s = 0.0
    for p in parts[n - 2:n]:
        s = s + np.sum(p * p)
    return s


def loop_slice_per_iteration(x):
    parts = build(x)
    s = 0.0
    for i in range(3):
        for p in parts[i:]:
            s = s + np.sum(p) * (i + 1.0)
    return s


def stacked(x):
    parts = build(x)
    return np.sum(np.stack(parts[-2:]) ** 2) + np.sum(np.stack(parts[::-1])[0] * x)


def concatenated(x):
    parts = build(x)
    return np.sum(np.concatenate(parts[::2]) ** 3)


def builtin_sum(x):
    parts = build(x)
    return np.sum(sum(parts[1:]) ** 2)


def item_and_len(x):
    parts = build(x)
    tail = parts[1:]
    return np.sum(tail[0] * tail[-1]) * len(tail)


def slice_of_slice(x):
    parts = build(x)
    inner = parts[1:][::-1]
    return np.sum(inner[0] ** 2) + 2.0 * np.sum(inner[-1]) + np.sum(np.stack(inner[1:]) ** 2)


def to_helper(x):
    parts = build(x)
    return total_squares(parts[1:]) + total_squares(parts[:1])


def appended_to(x):
    parts = build(x)
    tail = parts[2:]
    for i in range(2):
        tail.append(tail[-1] * x)
    return total_squares(tail)


X = np.array([0.3, 0.7, -0.4])
V = np.array([1.0, -0.5, 0.25])


def under_numba_reverse(x):
    """What the reverse sweep needs Numba versions of (a slice's adjoint added into a
    slice of the list's adjoint, the builtin sum of a list) in one program: one compile."""
    parts = build(x)
    s = 0.0
    for p in parts[::-2]:
        s = s + np.sum(p * p)
    tail = parts[1:]
    return s + np.sum(sum(tail) * x) + np.sum(tail[-1] ** 3)


def under_numba_forward(x):
    """What the forward sweep needs Numba versions of (np.concatenate of a list)."""
    parts = build(x)
    s = 0.0
    for p in reversed(parts[1:]):
        s = np.tanh(s) + np.sum(p * x)
    return s + np.sum(np.concatenate(parts[::-2]) ** 3)


PROGRAMS = [under_numba_reverse, under_numba_forward, loop_plain, loop_negative_step,
            loop_reversed, loop_reversed_slice, loop_enumerate, loop_enumerate_reversed, loop_zip,
            loop_runtime_bounds, loop_slice_per_iteration, stacked, concatenated, builtin_sum,
            item_and_len, slice_of_slice, to_helper, appended_to]


def _hvp_by_differences(fn, x, v, h=1e-6):
    """Central differences of the gradient (itself checked against them) along ``v``."""
    g = s2sgrad.grad(fn)
    return (g(x + h * v) - g(x - h * v)) / (2 * h)


@pytest.mark.parametrize("fn", PROGRAMS, ids=lambda f: f.__name__)
def test_list_slices_match_central_differences(fn, monkeypatch):
    monkeypatch.setenv("S2SGRAD_BACKEND", "python")
    want = numerical_grad(fn, (X,), 0)
    np.testing.assert_allclose(s2sgrad.grad(fn)(X), want, atol=1e-7)
    np.testing.assert_allclose(s2sgrad.jacfwd(fn)(X), want, atol=1e-7)
    np.testing.assert_allclose(s2sgrad.hvp(fn, X, V), _hvp_by_differences(fn, X, V), rtol=1e-6,
                               atol=1e-7)


def test_the_adjoint_of_a_slice_is_added_item_by_item(monkeypatch):
    monkeypatch.setenv("S2SGRAD_BACKEND", "python")
    g = s2sgrad.grad(loop_plain)
    g(X)
    assert "rt.add_lists(dparts[1:], " in g.source
    assert "len(" in g.source and ".shape[0]" not in g.source.split("parts[1:]")[1]


@pytest.mark.parametrize("transform, fn", [("grad", under_numba_reverse),
                                           ("jacfwd", under_numba_forward)])
def test_slices_under_numba_for_lists_of_any_length(transform, fn, monkeypatch):
    """One compile per transform; a second call with a longer input (a longer list, other
    slice lengths) reuses it and is still right: nothing depends on the first call."""
    monkeypatch.setenv("S2SGRAD_BACKEND", "numba")
    d = getattr(s2sgrad, transform)(fn)
    for x in (X, np.array([0.2, -0.9, 0.5, 0.1, 0.8])):
        np.testing.assert_allclose(d(x), numerical_grad(fn, (x,), 0), atol=1e-6)
    assert d.backend == "numba", d.fallback_reason


def test_a_slice_of_a_tuple_result_is_refused_naming_the_line():
    def f(a):
        parts = np.linalg.eigh(a)[:1]
        return np.sum(parts[0])

    with pytest.raises(UnsupportedConstructError, match=r"test_list_slices.py:\d+.*slice of a "
                                                        r"tuple"):
        s2sgrad.grad(f)(np.eye(2))
