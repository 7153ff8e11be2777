"""Chains fused through values read only for their shape, and sums of chains as one loop
(``compiler/optimize/kernels.py``: ``rt.shaped``, ``rt.FusedSum``; ``runtime/fused_sum.py``):
what the generated code holds, that the gradient through it matches finite differences
and the unfused code whatever shapes came before, and that a compiled sum is numpy's
``np.sum`` of the chain whatever it is given: any axis,
keepdims, operands broadcast along any axis, views, float32, numbers, 0-d (bit for bit
where numpy adds one after the other too: any axis but the last, rows under 8).

One gradient is built for the module and its three sums compiled once (the threshold is
lowered here, ``FUSE_NUMBERS`` 8,192, and the compile runs on the caller's thread; the
elementwise kernels stay numpy's); the runtime tests call two of them directly."""
import sys

import numpy as np
import pytest

import s2sgrad
from s2sgrad.backend.cache import has_loops, load
from s2sgrad.compiler import pipeline
from s2sgrad.runtime import fused, fused_sum
from s2sgrad.runtime.fused import shaped
from s2sgrad.testing import numerical_grad

R = np.random.default_rng(11)


@pytest.fixture(autouse=True, scope="module")
def compiled_above_a_lower_threshold():
    """Sums compiled from 8,192 numbers saved; the elementwise kernels left to numpy
    (``test_fused_kernels`` compiles theirs): three compiles for the module."""
    saved = fused.FUSE_NUMBERS, fused.BACKGROUND, fused._plan
    fused.FUSE_NUMBERS, fused.BACKGROUND = 8192, False
    fused._plan = lambda args, saved: None
    yield
    fused.FUSE_NUMBERS, fused.BACKGROUND, fused._plan = saved


def mixture(q, mu, x):
    """gmm's shape of work: a square summed over the last axis (read later for its shape
    only, by its adjoint), a product of the adjoint summed over the first."""
    xc = x[:, None, :] - mu[None, :, :]
    lx = np.exp(q) * xc + 0.5 * xc
    s = np.sum(lx ** 2, axis=2)
    return np.sum(np.log(np.sum(np.exp(-0.1 * s), axis=1)))


GRAD = s2sgrad.grad(mixture, (0, 1))


def sizes(n, k, d, dtype=np.float64):
    r = np.random.default_rng(n * 100 + k * 10 + d)
    return (r.normal(size=(k, d)).astype(dtype) * 0.3, r.random((k, d)).astype(dtype),
            r.normal(size=(n, d)).astype(dtype))


LARGE = sizes(1000, 4, 10)      # x of 80 KB: the build of kept arrays and kernels


def sum_kernels():
    """The ``rt.FusedSum``s of ``GRAD``'s module, by their chain's source."""
    GRAD(*LARGE)
    module = sys.modules[load(GRAD.path, GRAD._generated.function_name).__module__]
    kernels = [v for v in vars(module).values() if isinstance(v, fused_sum.FusedSum)]
    return {k.loops.__name__: k for k in kernels}


def test_the_generated_code_fuses_through_shape_reads_and_into_sums():
    GRAD(*LARGE)
    code = GRAD.source
    # lx ** 2, read later by rt.unreduce for its shape, joins the sum and stays as a shape
    assert "= rt.shaped(lambda " in code and "its values are computed in the fused call" in code
    # lx ** 2 is never an array: np.sum(lx ** 2, axis=2) is one loop over lx
    assert "kept.power(lx, 2)" not in code and "rt.FusedSum(" in code
    assert "kept.fused_sum(_s_fused, lx, axis=2, keepdims=False)" in code, code
    # the adjoint's sum over the first axis of a product (exp(q)'s adjoint) is one loop
    assert "axis=0, keepdims=False)" in code
    # the kernels' loops are not the code's: the gradient runs as numpy, never Numba
    assert not has_loops(code)
    kernels = sum_kernels()
    assert len(kernels) == 3 and all(k.compiled is not None for k in kernels.values())
    # dxc (two statements) is summed where the code reads it, in rt.add_into: never stored
    assert "kept.negative(kept.fused_sum(_sum_fused, dlx, exp_q, axis=0, keepdims=True))" in code


def test_the_gradient_matches_differences_and_the_unfused_code_whatever_came_before(
        tmp_path):
    calls = [LARGE, sizes(30, 3, 3), sizes(2000, 4, 10, np.float32), sizes(1, 1, 1), LARGE]
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(pipeline, "fused_chains", lambda s, keep, fresh, scalar: (s, []))
        patch.setenv("S2SGRAD_CACHE_DIR", str(tmp_path))
        plain = s2sgrad.grad(mixture, (0, 1))
        wants = [plain(*args) for args in calls]
        assert "rt.FusedSum" not in plain.source and "rt.shaped" not in plain.source
    for args, want in zip(calls, wants):
        got = GRAD(*args)
        for g, w, a in zip(got, want, args):
            assert g.dtype == w.dtype == a.dtype and g.shape == a.shape
            tol = 1e-5 if a.dtype == np.float32 else 1e-13
            np.testing.assert_allclose(g, w, rtol=tol, atol=tol * np.max(np.abs(w)))
        if args[0].dtype == np.float64:
            for position in (0, 1):
                numeric = numerical_grad(mixture, args, position)
                np.testing.assert_allclose(got[position], numeric, rtol=1e-6, atol=1e-8)


def test_forward_mode_over_the_gradient():
    """jvp of the gradient (its tangent code fuses and sums the same way) against
    differences of the gradient."""
    q, mu, x = LARGE
    v = R.normal(size=q.shape)
    _, tangent = s2sgrad.jvp(lambda q: GRAD(q, mu, x)[0], (q,), (v,))
    assert "rt.FusedSum(" in s2sgrad.show(GRAD, q, mu, x, mode="jvp")
    h = 1e-6
    numeric = (GRAD(q + h * v, mu, x)[0] - GRAD(q - h * v, mu, x)[0]) / (2 * h)
    np.testing.assert_allclose(tangent, numeric, rtol=1e-5, atol=1e-7)


def row(*shape):
    return R.normal(size=shape)


# (a, b, axis, keepdims, whether the compiled loop takes it) for the product's sum
PRODUCTS = {
    "same shapes, last axis": (row(300, 40), row(300, 40), -1, False, True),
    "same shapes, first axis": (row(300, 40), row(300, 40), 0, True, True),
    "3 axes, middle": (row(40, 30, 9), row(40, 30, 9), 1, False, True),
    "a row spread, axis 0": (row(5, 10), row(1000, 5, 10), 0, False, True),
    "a column spread, last axis": (row(900, 1), row(900, 12), 1, True, True),
    "rows of 6": (row(3000, 6), row(3000, 1), 1, False, True),
    "rows of 300": (row(100, 300), row(100, 300), 1, False, True),
    "a view, not contiguous": (row(40, 600)[::2].T, row(600, 20), 1, False, True),
    "stride 0 (rt.unreduce)": (np.broadcast_to(row(300, 1), (300, 30)), row(300, 30), 1,
                               False, True),
    "a number": (2.5, row(700, 14), 0, False, True),
    "mixed merge": (row(40, 1, 9), row(1, 30, 9), 2, False, False),
    "float32": (row(300, 40).astype(np.float32), row(300, 40).astype(np.float32), 1, False,
                False),
    "integers": (np.arange(12000).reshape(300, 40), row(300, 40), 1, False, False),
    "0-d and small": (np.array(3.0), row(4, 3), 1, False, False),
    "a list": ([[1.0, 2.0]], row(5000, 2), 0, False, False),
}


@pytest.mark.parametrize("order", [list(PRODUCTS), list(reversed(PRODUCTS))])
def test_a_compiled_sum_is_numpys_whatever_it_is_given(order):
    kernels = sum_kernels()
    product, square = kernels["_dq_loops"], kernels["_s_loops"]       # dlx * xc, lx ** 2
    for name in order:
        a, b, axis, keepdims, taken = PRODUCTS[name]
        got = product(a, b, axis=axis, keepdims=keepdims)
        want = np.sum(np.multiply(a, b), axis=axis, keepdims=keepdims)
        assert (fused_sum._plan((a, b), axis, 1) is not None) == taken, name
        assert got.shape == want.shape and got.dtype == want.dtype, name
        shape = np.broadcast_shapes(np.shape(a), np.shape(b))
        if taken and (axis % len(shape) < len(shape) - 1 or shape[-1] < 8):
            np.testing.assert_array_equal(got, want, err_msg=name)
        else:        # rt.sum's BLAS rows, numpy's eight partial sums of a row
            np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-12, err_msg=name)
    x = row(2000, 7)
    for axis in (0, 1, -2):
        np.testing.assert_array_equal(square(x, axis=axis, keepdims=True),
                                      np.sum(x ** 2, axis=axis, keepdims=True))
    assert square(x, axis=None, keepdims=False) == pytest.approx(np.sum(x ** 2), rel=1e-14)


def test_a_shape_stand_in_has_the_shape_dtype_and_kind_of_the_value():
    for fn, args in [(lambda a, b: a * b, (row(3, 1), row(4))),
                     (lambda a, b: a / b, (np.arange(6).reshape(2, 3), 2)),
                     (lambda a: -a, (np.float32(2.0),)),
                     (lambda a, b: a + b, (np.array(1.0), np.array(2.0))),
                     (lambda a, b: a - b, (3, 4.0)),
                     (lambda a, b: a * b, (row(0, 3), row(1, 3))),
                     (lambda a, b: a + b, ([1.0, 2.0], row(2)))]:
        value, stand_in = fn(*args), shaped(fn, *args)
        assert type(stand_in) is type(value) and np.shape(stand_in) == np.shape(value)
        assert np.result_type(stand_in) == np.result_type(value)


def chained(x, mu, q):
    """Chains over broadcasts joined across statements and summed in the adjoint (x of
    64 KiB or more: the kept build)."""
    xc = x[:, None, :] - mu[None, :, :]
    t = q * xc
    u = t + xc * 0.5
    w = u * q
    return np.sum(np.sqrt(w * w + 1.0))


CHAINED = s2sgrad.grad(chained, (0, 1, 2))


@pytest.mark.parametrize("n, k, d", [(1000, 3, 10), (1, 2, 9000), (1200, 4, 7)])
def test_chains_over_broadcasts_give_the_gradient_whatever_came_before(n, k, d,
                                                                       monkeypatch):
    """Run as numpy (no compile here: the sums' kept arrays, ``into``), the gradient
    against differences along a direction, each size after the others."""
    monkeypatch.setattr(fused, "FUSE_NUMBERS", 2 ** 62)
    r = np.random.default_rng(n + k + d)
    args = (r.normal(size=(n, d)), r.normal(size=(k, d)), r.normal(size=(k, d)))
    for _ in range(2):                   # the second call: into the kept arrays
        got = CHAINED(*args)
    assert "kept.fused_sum(" in CHAINED.source, CHAINED.source
    for position in range(3):
        v = r.normal(size=args[position].shape)
        h = 1e-6
        moved = [list(args), list(args)]
        moved[0][position] = args[position] + h * v
        moved[1][position] = args[position] - h * v
        numeric = (chained(*moved[0]) - chained(*moved[1])) / (2 * h)
        np.testing.assert_allclose(np.sum(got[position] * v), numeric, rtol=1e-6)
