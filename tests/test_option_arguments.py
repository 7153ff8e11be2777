"""None, bools and strings passed as arguments are options the code is built for, by value:
``if mask is None``, ``if training`` and ``if mode == 'sum'`` fold while building, each
value gets its own build, and a None never takes the "not None" branch."""
import numpy as np
import pytest

import s2sgrad as ms

X = np.array([1.0, 2.0, 3.0])


@pytest.fixture(autouse=True, params=["python", "numba"])
def backend(request, monkeypatch):
    monkeypatch.setenv("S2SGRAD_BACKEND", request.param)
    return request.param


def masked(x, mask=None):
    scale = 2.0 if mask is None else 3.0
    if mask is not None:
        x = x * mask
    return np.sum(x * scale)


def moded(x, mode, training=False):
    y = x * x
    if mode == "sum":
        out = np.sum(y)
    else:
        out = np.mean(y)
    if training:
        out = out * 10.0
    return out


def test_none_default_and_explicit_none_take_the_none_branch():
    g = ms.grad(masked)
    assert np.allclose(g(X), 2.0)
    assert np.allclose(g(X, None), 2.0)
    assert np.allclose(g(X, np.full(3, 5.0)), 15.0)
    assert np.allclose(g(X, None), 2.0)     # the None build is kept apart


def test_none_inside_a_tuple_argument():
    def f(x, opts):
        scale = 2.0 if opts[1] is None else opts[1]
        return np.sum(x * scale * opts[0])
    assert np.allclose(ms.grad(f)(X, (1.5, None)), 3.0)
    assert np.allclose(ms.grad(f)(X, (1.5, 4.0)), 6.0)


@pytest.mark.parametrize("mode, training, expected", [
    ("sum", False, 2 * X), ("mean", False, 2 * X / 3), ("sum", True, 20 * X),
    ("mean", True, 20 * X / 3)])
def test_strings_and_bools_fold(mode, training, expected):
    g = ms.grad(moded)
    assert np.allclose(g(X, mode, training), expected)
    assert "==" not in g.source.split("def ")[1]   # the comparison was decided while building
