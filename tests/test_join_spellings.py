"""Joins spelled several ways are one join (``compiler/front/stacking.py``).

GradBench's ode right-hand side written ``np.hstack(([1.0], y[:-1]))`` or
``np.concatenate(([1.0], y[:-1]))`` instead of ``np.concatenate((np.ones(1), y[:-1]))``
could not be compiled by Numba (a list of numbers inside the tuple; ``np.hstack``), so the
whole loop ran as numpy, 6.6x slower.  Each spelling of the class (hstack/vstack/
concatenate, number lists among the items, ranks 1 and 2) is checked against central
differences and must be written as ``np.concatenate`` in the generated code; joins whose
items' ranks differ or are 0-d keep their own spelling and their values.
"""
import re

import numpy as np
import pytest

import s2sgrad as ms
from s2sgrad.testing import check_grad


@pytest.fixture(autouse=True)
def _python_backend(monkeypatch):
    monkeypatch.setenv("S2SGRAD_BACKEND", "python")


def hstack_of_a_number_list(y, a):
    return np.sum(np.sin(a * np.hstack(([1.0], y[:-1]))))


def concatenate_of_a_number_list(y, a):
    return np.sum(np.sin(a * np.concatenate(([1.0], y[:-1]))))


def concatenate_of_other_numbers(y, a):
    return np.sum(np.sin(a * np.concatenate((y[2:], [2.0, -1.5]))))


def hstack_of_matrices(y, a):
    m = np.reshape(y, (2, 3))
    return np.sum(np.cos(np.hstack((m, m * m))) * np.hstack((a[:2, None], m)).sum())


def vstack_of_matrices(y, a):
    m = np.reshape(y, (2, 3))
    return np.sum(np.tanh(np.vstack((m, 2.0 * m, a[None, :3]))))


def hstack_of_a_number_and_a_vector(y, a):     # a 0-d item: left as np.hstack
    return np.sum(np.sin(np.hstack((y[0], a * y))))


JOINED = [hstack_of_a_number_list, concatenate_of_a_number_list,
          concatenate_of_other_numbers, hstack_of_matrices, vstack_of_matrices]


@pytest.mark.parametrize("fn", JOINED + [hstack_of_a_number_and_a_vector],
                         ids=lambda f: f.__name__)
def test_every_spelling_of_a_join_has_the_gradient_of_finite_differences(fn):
    y = np.array([0.3, -0.8, 1.2, 0.5, -0.1, 0.9])
    a = np.array([1.1, -0.4, 0.7, 0.2, 1.5, -0.9])
    gradient = check_grad(fn, (y, a), (0, 1))
    code = "\n".join(line.split("#")[0] for line in ms.show(gradient, y, a).splitlines())
    if fn in JOINED:
        assert "np.concatenate(" in code and "stack(" not in code, code
        # no list of numbers among a join's items (Numba compiles only arrays there)
        assert not re.search(r"np\.concatenate\(\([^)]*\[", code), code
    else:
        assert "np.hstack(" in code, code
