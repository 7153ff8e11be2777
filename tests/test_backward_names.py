"""A custom backward resolves every free name it reads as the forward does: names of the
backward's own module (imports, functions, globals), closure variables and Cell
attributes, whichever module differentiates it."""
import numpy as np
import pytest
from scipy import special

import s2sgrad as ms
import backward_names as bn

X = np.array([0.5, 1.5, 2.5])
ONES = np.ones(3)


@pytest.fixture(autouse=True, params=["python", "numba"])
def backend(request, monkeypatch):
    monkeypatch.setenv("S2SGRAD_BACKEND", request.param)
    return request.param


@pytest.mark.parametrize("rule, expected", [
    (bn.with_import, special.digamma(X)),
    (bn.with_module_attr, np.pi * np.cos(X)),
    (bn.with_function, 2.0 * ONES),
    (bn.with_globals, 3.0 * bn.WEIGHTS),
    (bn.make_closure(4.0, np.array([0.0, 1.0, 2.0])), 4.0 + np.array([0.0, 1.0, 2.0])),
], ids=["from-import", "module-attribute", "module-function", "globals", "closure"])
def test_custom_vjp_backward_reads_its_free_names(rule, expected):
    def f(x):
        return np.sum(rule(x))
    assert np.allclose(ms.grad(f)(X), expected)


def test_cell_bprop_reads_self_attributes_and_module_names():
    cell = bn.Scaled(0.5, np.array([1.0, 2.0, 3.0]))

    def f(x):
        return np.sum(cell(x))
    assert np.allclose(ms.grad(f)(X), 2.0 * 0.5 + np.array([1.0, 2.0, 3.0]) + special.digamma(X))


def test_backward_free_arrays_are_arguments_of_the_generated_function():
    """An array a backward reads is passed in, like the forward's, not baked in."""
    def f(x):
        return np.sum(bn.with_globals(x))
    g = ms.grad(f)
    header = [line for line in g.source.splitlines() if line.startswith("def ")][0]
    assert "WEIGHTS" in header
    assert np.allclose(g(X), 3.0 * bn.WEIGHTS)
