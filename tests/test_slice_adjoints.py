"""The adjoint of a basic slice read (``y[:-1]``, ``y[::2]``, ``y[k:-k]``, a slice of a
slice, ``np.concatenate`` pieces) is added in place into the base's adjoint,
``rt.add_into(dy[:-1], g)``, with no copy when that adjoint was made fresh by the
generated code's own arithmetic (issue 20: ``dy = g * np.cos(y)`` was copied,
``dy = np.copy(dy)``, before the slice write).  An adjoint that shares another's array (``dy = da``, ``dc = da`` from
``a = y + c``) is still copied first.  Every case is checked against central finite
differences under both backends, and called twice with the same result."""
import numpy as np
import pytest

from s2sgrad.testing import check_grad


def slices(y, w, k):
    z = y * 2.0
    e = np.sum(z[1:][::-2] ** 3)           # a slice of a slice, negative step
    b = np.sum(y[:-1] * w[1:])             # negative bound
    c = np.sum(y[::2] ** 2)                # a step
    d = np.sum(y[k:-k] * y[k:-k])          # run-time bounds, read twice
    a = np.sum(np.sin(y) * w)              # the base read whole: first in reverse
    return a + b + c + d + e


def slices_in_a_loop(y, w, s):
    for _ in range(s):
        k = y * w
        m = np.concatenate((np.ones(1), k[:-1]))   # read before k's whole use below
        y = y + 0.1 * np.sin(k) + 0.5 * m * np.concatenate((y[1:], y[-1:]))
        y = y - 0.05 * y[::-1]
    return np.sum(y ** 2) + np.sum(y[2:-1] * w[1:-2])


def shared_adjoint(y, c):
    b = np.sum(y[1:] ** 2)
    a = y + c                              # dy and dc both start as da
    return b + np.sum(a * a)


RNG = np.random.default_rng(20)
Y, W = RNG.normal(size=9), RNG.normal(size=9)
CASES = {slices: (Y, W, 2), slices_in_a_loop: (Y * 0.5, W * 0.5, 3),
         shared_adjoint: (Y, W)}
POSITIONS = {slices: (0, 1), slices_in_a_loop: (0, 1), shared_adjoint: (0, 1)}


@pytest.mark.parametrize("backend", ["numba", "python"])
@pytest.mark.parametrize("fn", list(CASES), ids=lambda f: f.__name__)
def test_slice_adjoints_match_finite_differences(fn, backend, monkeypatch):
    monkeypatch.setenv("S2SGRAD_BACKEND", backend)
    args = CASES[fn]
    before = [np.copy(a) for a in args]
    g = check_grad(fn, args, grad_position=POSITIONS[fn])
    first = g(*args)
    again = g(*args)
    for one, two in zip(first, again):
        np.testing.assert_array_equal(one, two)
    for arg, kept in zip(args, before):
        np.testing.assert_array_equal(arg, kept)
    if backend == "numba" and fn is slices_in_a_loop:
        assert g.backend == "numba", g.fallback_reason


def _source(fn, monkeypatch):
    monkeypatch.setenv("S2SGRAD_BACKEND", "python")
    return check_grad(fn, CASES[fn], grad_position=POSITIONS[fn]).source


def test_fresh_adjoint_takes_slice_writes_in_place(monkeypatch):
    source = _source(slices, monkeypatch)
    assert "rt.add_into(dy[:-1]" in source and "rt.add_into(dy[::2]" in source, source
    assert "np.copy(dy)" not in source, source


def test_loop_adjoint_accumulates_in_place(monkeypatch):
    source = _source(slices_in_a_loop, monkeypatch)
    body = source.split("in range(n_iter)")[1]
    # the adjoint of k starts as arithmetic, then takes the concatenate piece's adjoint
    assert "rt.add_into(dk_1[:-1]" in body, source
    assert "np.copy(dk" not in body, source


def test_shared_adjoint_is_copied_before_a_slice_write(monkeypatch):
    source = _source(shared_adjoint, monkeypatch)
    lines = [line.strip() for line in source.splitlines()]
    write = next(i for i, line in enumerate(lines) if line.startswith("rt.add_into(dy["))
    assert any(line.startswith("dy = np.copy(dy)") for line in lines[:write]), source



def halved_and_first(x):
    head = x[:1]
    return np.sum(x * 0.5) + np.sum(head * head)


def quartered_and_last(x):
    tail = x[-1:]
    return np.sum(np.sin(tail)) + np.sum(x / 4.0)


def doubled_and_steps(x, w):
    evens = x[::2]
    middle = x[1:3]
    return np.sum(evens ** 2) + np.sum(2.0 * x) * w + np.sum(middle * w)


@pytest.mark.parametrize("fn, args", [
    (halved_and_first, (np.linspace(0.3, 1.7, 5),)),
    (quartered_and_last, (np.linspace(0.3, 1.7, 5),)),
    (doubled_and_steps, (np.linspace(0.3, 1.7, 5), 0.7))])
def test_a_scaled_spread_adjoint_is_written_into_by_a_slice(fn, args):
    # the whole read's adjoint, rt.unreduce(g, t, ...) * 0.5, was spelled
    # rt.unreduce(g * 0.5, t, ...): a read-only broadcast that the slice read's
    # rt.add_into(dx[:1], ...) then wrote into ("output array is read-only")
    check_grad(fn, args, grad_position=tuple(range(len(args))))
