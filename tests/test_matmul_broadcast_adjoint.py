"""The adjoint of an operand of ``a @ b`` broadcast over batch dimensions
(``runtime.matmul_left`` / ``matmul_right``) is one contraction over those dimensions,
not the stack of per-batch products summed afterwards.

gmm written with a batched product, ``(Ls @ xc[..., None])[..., 0]`` (25 factors
broadcast over 1,000 points), made a 1,000 x 25 x 10 x 10 stack to sum: 4.5 ms of a
10.5 ms gradient, 0.2 ms as one contraction.  Every broadcast pattern numpy's matmul
accepts (a missing or size-1 batch dimension on either side, 1-D operands) is checked
against central differences; the memory a broadcast adjoint takes is bounded by its
operands' size, not the stack's.
"""
import tracemalloc

import numpy as np
import pytest

from s2sgrad import runtime as rt
from s2sgrad.testing import check_grad


@pytest.fixture(autouse=True)
def _python_backend(monkeypatch):
    monkeypatch.setenv("S2SGRAD_BACKEND", "python")


def product_loss(a, b):
    return np.sum(np.sin(a @ b))


SHAPES = [((3, 2, 3), (4, 3, 3, 2)), ((2, 3), (4, 3, 3, 2)), ((1, 2, 3), (4, 1, 3, 2)),
          ((4, 1, 2, 3), (3, 3, 2)), ((3,), (4, 3, 2)), ((4, 2, 3), (3,)),
          ((2, 1, 2, 3), (1, 3, 3, 2))]


@pytest.mark.parametrize("shape_a, shape_b", SHAPES, ids=str)
def test_broadcast_matmul_adjoints_match_differences(shape_a, shape_b):
    rng = np.random.default_rng(len(shape_a) * 10 + len(shape_b))
    check_grad(product_loss, (rng.normal(size=shape_a), rng.normal(size=shape_b)), (0, 1))


def test_a_broadcast_adjoint_does_not_make_the_stack_it_sums():
    rng = np.random.default_rng(0)
    a, b = rng.normal(size=(4, 16, 16)), rng.normal(size=(2000, 4, 16, 1))
    g = rng.normal(size=(2000, 4, 16, 1))
    want = np.einsum("nkia,nkja->kij", g, b)
    tracemalloc.start()
    try:
        got = rt.matmul_left(g, a, b)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    # sums of 2000 products: an element that cancels to 0.1 of terms ~1 differs by
    # ~1e-13 between summation orders (BLAS's and einsum's), so the bound is the largest's
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12 * np.abs(want).max())
    stack = 2000 * 4 * 16 * 16 * 8
    assert peak < stack / 2, (peak, stack)     # the stack is 8x g's and b's size
