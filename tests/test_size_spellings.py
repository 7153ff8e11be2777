"""A size spelled ``len(x)`` or a one-element slice ``x[:1]`` is known while building as
``x.shape[0]`` and 1 are (``front/lower_ops.py``, ``analysis/shapes.py``).

ode's held-out spelling ``y = np.zeros(len(x))`` (a solver class) left ``y``'s length a
size nothing was known of: every elementwise adjoint kept its ``rt.unbroadcast``, the
fused loops were not fused, and the tape saved every temporary: 35x the time of
``np.zeros_like(x)``.  ``x[:1] * 0 + 1`` in a join (for ``np.ones(1)``) likewise left
the joined length unknown.  Each spelling must give the code of the plain one (no
``rt.unbroadcast``, the tape of the plain spelling) and the gradient of differences.
"""
import re

import numpy as np
import pytest

import s2sgrad as ms
from s2sgrad.testing import check_grad


@pytest.fixture(autouse=True)
def _python_backend(monkeypatch):
    monkeypatch.setenv("S2SGRAD_BACKEND", "python")


def plain(x, s):
    y = np.zeros_like(x)
    for _ in range(s):
        y = y + 0.1 * x * np.concatenate((np.ones(1), y[:-1]))
    return y[-1] + np.sum(y * y)


def by_len(x, s):
    y = np.zeros(len(x))
    for _ in range(s):
        y = y + 0.1 * x * np.concatenate((np.ones(1), y[:-1]))
    return y[-1] + np.sum(y * y)


def by_first_element(x, s):
    y = np.zeros_like(x)
    for _ in range(s):
        y = y + 0.1 * x * np.concatenate((x[:1] * 0 + 1, y[:-1]))
    return y[-1] + np.sum(y * y)


def by_last_element(x, s):
    y = np.zeros(len(x))
    for _ in range(s):
        y = y + 0.1 * x * np.concatenate((y[1:], x[-1:] * 0 + 1))
    return y[0] + np.sum(y * y)


def taped(source):
    return [len(m.split(",")) for m in re.findall(r"tape\.append\(\((.*?)\)\)", source, re.S)]


@pytest.mark.parametrize("fn", [by_len, by_first_element, by_last_element],
                         ids=lambda f: f.__name__)
def test_a_size_spelled_otherwise_gives_the_plain_code(fn):
    x = np.array([0.3, -0.8, 1.2, 0.5, -0.1])
    check_grad(fn, (x, 4))
    gradient = ms.grad(fn)
    gradient(x, 4)
    want = ms.grad(plain)
    want(x, 4)
    assert "rt.unbroadcast" not in gradient.source, gradient.source
    if fn is not by_last_element:       # (its join's other order keeps y for its split)
        assert taped(gradient.source) == taped(want.source), gradient.source


def by_where_and_roll(x, s):
    y = np.zeros_like(x)
    for _ in range(s):
        rhs = np.where(np.arange(x.shape[0]) == 0, x, x * np.roll(y, 1))
        y = y + 0.1 * np.where(y > x, rhs, 2.0 * rhs)
    return y[-1] + np.sum(y * y)


def test_comparisons_where_roll_and_arange_keep_their_shapes():
    """ode's held-out ``np.where(np.arange(n) == 0, x, x * np.roll(y, 1))``: the mask, the
    roll and the where had no shape while building, so every adjoint kept its
    ``rt.unbroadcast`` and the loop taped 26 temporaries (8 now)."""
    x = np.array([0.3, -0.8, 1.2, 0.5, -0.1])
    check_grad(by_where_and_roll, (x, 4))
    gradient = ms.grad(by_where_and_roll)
    gradient(x, 4)
    assert "rt.unbroadcast" not in gradient.source, gradient.source
