"""Work the generated code no longer does twice or at all (GradBench's kmeans, ba, ht):

- ``optimize/shared.py``: a value computed again by the same pure expression is read
  from its first name (the adjoint's ``np.cos(theta)`` of the forward's ``costheta``),
  never where anything may have written one of them in place in between;
- ``jvp`` along a tangent of zeros for an input builds the code without that tangent
  (checked at every call);
- ``optimize/products.py``: ``a @ (-2 * g)`` scaled after the product where that is
  smaller (``rt.matmul_scaled``), and a product read through a slice of its last axis
  makes only those columns (``rt.matmul_sliced``, ``rt.matmul_batch_sliced``);
- ``optimize/views.py``: a block of columns read by several elementwise passes is
  copied contiguous once.

Each against central differences in float64 (float32 where it differs), with calls
whose arguments change between them; the passes on statements directly for the cases
that must be left alone."""
import gast
import numpy as np
import pytest

import s2sgrad
from s2sgrad import runtime as rt
from s2sgrad.api.forward import forward_function
from s2sgrad.compiler.optimize.products import scaled_products, sliced_products
from s2sgrad.compiler.optimize.shared import shared_values
from s2sgrad.compiler.optimize.views import contiguous_blocks
from s2sgrad.compiler.syntax.source import to_source
from s2sgrad.runtime import buffers

rng = np.random.default_rng(7)


def central(f, x, v, eps=1e-6):
    return (f(x + eps * v) - f(x - eps * v)) / (2 * eps)


def code(source):
    """``source`` without its comments."""
    return "\n".join(line.split("#")[0] for line in source.splitlines())


def rewritten(pass_, source, *extra):
    statements = gast.parse(source).body
    return "\n".join(to_source(s).strip() for s in pass_(statements, *extra))


# ------------------------------------------------------------- shared values: the pass

@pytest.mark.parametrize("source, shared", [
    ("c = np.cos(t)\nd = g * np.cos(t)", "d = g * c"),
    ("c = np.cos(t)\ne = np.cos(t)", "e = c"),
    ("m = np.zeros((4, 3))\ns = -u * np.sin(t)\nm[:, 1] = -u * np.sin(t)", "m[:, 1] = s"),
    ("a = x * y\nfor i in range(3):\n    b = x * y + i", "b = a + i"),
])
def test_a_repeated_pure_expression_reads_its_first_name(source, shared):
    assert shared in rewritten(shared_values, source, set())


@pytest.mark.parametrize("source", [
    "c = np.cos(t)\nc[0] = 1.0\nd = g * np.cos(t)",               # written in place
    "c = np.cos(t)\nv = c[1:]\nv += 1.0\nd = g * np.cos(t)",      # through a view
    "c = np.cos(t)\nt[0] = 2.0\nd = g * np.cos(t)",               # its operand written
    "c = np.cos(x)\ny[0] = 1.0\nd = g * np.cos(x)",               # parameters may share
    "c = np.cos(t)\nrt.add_into(c[1:], g)\nd = g * np.cos(t)",    # a runtime writer
    "c = np.cos(t)\nlst = [c]\nlst[0] += 1.0\nd = g * np.cos(t)",  # an item of a list
    "c = np.cos(t)\nfoo(c)\nd = g * np.cos(t)",                    # a call of anything else
    "c = np.cos(t)\ne = np.cos(t)\ne += 1.0",                      # the copy is written
    "c = np.cos(t)\nd = rt.unbroadcast(np.cos(t), x)\nd += 1.0",   # may give its argument
    "t = x + 1\nc = np.cos(t)\nt = x + 2\nd = np.cos(t)",          # rebound
    "for i in range(3):\n    c = np.cos(t)\nd = np.cos(t)",        # not after its loop
])
def test_a_value_that_may_have_changed_is_computed_again(source):
    out = rewritten(shared_values, source, set())
    assert out.count("np.cos(") == source.count("np.cos("), out


def test_a_value_returned_is_never_shared_with_another():
    source = "c = np.cos(t)\nd = np.cos(t)"
    assert rewritten(shared_values, source, {"c", "d"}).count("np.cos(") == 2


def rotation_error(rot, x):
    theta = np.sqrt(np.sum(rot ** 2, axis=1))
    c = np.cos(theta)
    s = np.sin(theta)
    return np.sum(x * c[:, None] + np.cross(rot / theta[:, None], x) * s[:, None])


def test_the_adjoint_reads_the_forward_sweeps_cosine_and_sine():
    g = s2sgrad.grad(rotation_error, (0, 1))
    rot, x = rng.normal(size=(6, 3)), rng.normal(size=(6, 3))
    dr, dx = g(rot, x)
    assert code(g.source).count("np.cos(") == 1 and code(g.source).count("np.sin(") == 1
    for arg, grad in ((0, dr), (1, dx)):
        v = rng.normal(size=(6, 3))
        along = (lambda y: rotation_error(y, x)) if arg == 0 else (
            lambda y: rotation_error(rot, y))
        assert np.isclose(np.sum(grad * v), central(along, (rot, x)[arg], v), rtol=1e-6)


def written_between(x):
    a = np.cos(x)
    a[0] = 5.0                       # the first cosine is changed before the second
    b = np.cos(x)
    return np.sum(a * b * np.cos(x))


def test_gradients_through_values_written_in_place_match_finite_differences():
    g = s2sgrad.grad(written_between)
    for n in (5, 9):                 # shapes that change between calls
        x = rng.normal(size=n)
        v = rng.normal(size=n)
        assert np.isclose(g(x) @ v, central(written_between, x, v), rtol=1e-6)


# ---------------------------------------------------------------- jvp along zeros

def cost(c, p):
    d = np.sum(p ** 2, axis=1)[:, None] + np.sum(c ** 2, axis=1)[None, :] - 2 * (p @ c.T)
    return np.sum(np.min(d, axis=1))


GRAD = s2sgrad.grad(cost, 0)


def test_jvp_along_zeros_for_an_input_builds_no_tangent_of_it():
    c, p = rng.random((4, 3)), rng.random((40, 6))[:, ::2]
    ones = np.ones_like(c)
    # a tangent of p that is not zero, zeros (not contiguous), then not zero again
    for tp in (rng.random(p.shape), np.zeros((40, 6))[:, ::2], rng.random(p.shape)):
        j, h = s2sgrad.jvp(GRAD, (c, p), (ones, tp))
        eps = 1e-6
        expect = (GRAD(c + eps * ones, p + eps * tp) - GRAD(c - eps * ones, p - eps * tp)) \
            / (2 * eps)
        assert np.allclose(h, expect, rtol=1e-6, atol=1e-6)
        # float32 gives float32, of the float64 numbers
        j32, h32 = s2sgrad.jvp(GRAD, (c.astype(np.float32), p.astype(np.float32)),
                               (ones.astype(np.float32), tp.astype(np.float32)))
        assert h32.dtype == np.float32 and np.allclose(h32, h, rtol=1e-4)
    alone = forward_function(GRAD, (0,), False, False)
    assert alone._generated is not None and "a1_dot" not in alone._generated.source


def test_jvp_with_every_tangent_zero_gives_zeros():
    c, p = rng.random((4, 3)), rng.random((20, 3))
    out, t = s2sgrad.jvp(cost, (c, p), (np.zeros_like(c), np.zeros_like(p)))
    assert np.isclose(out, cost(c, p)) and t == 0.0


# ---------------------------------------------------- products: scaled, and sliced

def test_matmul_scaled_scales_the_smallest_and_gives_numpys_numbers():
    for a_shape, b_shape in [((3, 50), (50, 4)), ((50, 1), (1, 40)), ((2, 5, 6), (6, 3)),
                             ((6,), (6, 7)), ((4, 6), (6,))]:
        for dtype in (np.float64, np.float32):
            a = rng.normal(size=a_shape).astype(dtype)
            b = rng.normal(size=b_shape).astype(dtype)
            got, expect = rt.matmul_scaled(a, b, -2), a @ (b * -2)
            assert got.dtype == expect.dtype and got.shape == expect.shape
            assert np.allclose(got, expect, rtol=1e-5)
    mask = np.array([[True, True]])
    assert np.array_equal(rt.matmul_scaled(mask.T, mask, 2), mask.T @ (mask * 2))


def test_a_scaled_operand_of_a_product_is_scaled_after_it():
    out = rewritten(scaled_products, "t = -g\nu = t * 2\nd = p.T @ u", set())
    assert out == "d = rt.matmul_scaled(p.T, g, -2)"
    # read twice, or returned: left as it is
    assert "u = t * 2" in rewritten(scaled_products, "t = -g\nu = t * 2\nd = p @ u\ne = u",
                                    set())
    assert "u = t * 2" in rewritten(scaled_products, "t = -g\nu = t * 2\nd = p @ u", {"u"})


def test_the_large_gradient_scales_its_small_product():
    p = rng.random((buffers.KEEP_BYTES // 32, 4))     # the large size class: kept arrays
    c = rng.random((10, 4))
    g = GRAD(c, p)
    assert "rt.matmul_scaled(" in GRAD.source
    v = rng.normal(size=c.shape)
    assert np.isclose(np.sum(g * v), central(lambda y: cost(y, p), c, v), rtol=1e-5)


def test_matmul_sliced_is_the_slice_of_the_product():
    a, b3 = rng.normal(size=(7, 4)), rng.normal(size=(5, 4, 4))
    for index in (np.s_[:, :3], np.s_[:, 1:], np.s_[:, -2:], np.s_[1:, :3]):
        b = b3[0]
        assert np.array_equal(rt.matmul_sliced(a, b, index), (a @ b)[index])
    for index in (np.s_[:, :, :3], np.s_[:, :3]):      # [:, :3] of a stack: rows, not columns
        assert np.allclose(rt.matmul_batch_sliced(a, b3, index),
                           rt.matmul_batch(a, b3)[index])
    assert np.array_equal(rt.matmul_sliced(np.arange(4.0), b3[0], np.s_[1:]),
                          (np.arange(4.0) @ b3[0])[1:])
    assert "s = rt.matmul_sliced(a, b, np.s_[:, :3])" == rewritten(
        sliced_products, "p = a @ b\ns = p[:, :3]", set())


def blend(theta, points, weights):
    out = np.zeros((points.shape[0], 3))
    for i in range(weights.shape[1]):
        t = np.array([[np.cos(theta[i]), -np.sin(theta[i]), 0.0, theta[i]],
                      [np.sin(theta[i]), np.cos(theta[i]), 0.0, 0.0],
                      [0.0, 0.0, 1.0, theta[i] * theta[i]], [0.0, 0.0, 0.0, 1.0]])
        moved = points @ t.T
        out = out + weights[:, i:i + 1] * moved[:, :3]
    return out.ravel()


def test_a_batched_jacobian_makes_only_the_columns_it_reads():
    jac = s2sgrad.jacfwd(blend)
    for n in (40, 33):                # shapes that change between calls (and batched:
        #                               an argument of LOOP_BATCH_NUMBERS numbers)
        theta = rng.normal(size=3)
        points = np.concatenate([rng.normal(size=(n, 3)), np.ones((n, 1))], axis=1)
        weights = rng.random((n, 3))
        J = jac(theta, points, weights)
        for k in range(3):
            e = np.eye(3)[k]
            assert np.allclose(J[:, k], central(lambda y: blend(y, points, weights), theta, e),
                               rtol=1e-6, atol=1e-8)
    # only the 3 columns read: the loop's products are summed as one after it
    # (rt.ProductSum, tests/test_product_sums.py), each step's b sliced to them
    assert "_dot_sum.add_as(" in jac.source and "np.s_[:, :, :3])" in jac.source
    assert code(jac.source).count("np.cos(") == 1    # the sine's tangent reads the cosine


# ------------------------------------------------ column blocks made contiguous once

def blocks(cams, x):
    rot = cams[:, 0:3]
    theta = np.sqrt(np.sum(rot ** 2, axis=1))
    return np.sum((rot / theta[:, None]) * (x - cams[:, 3:6]) * cams[:, 6:7])


def test_a_column_block_read_by_several_passes_is_copied_once():
    g = s2sgrad.grad(blocks, (0, 1))
    n = buffers.KEEP_BYTES // 64           # the large size class: the kept build
    for dtype, make in ((np.float64, lambda a: a), (np.float32, lambda a: a),
                        (np.float64, lambda a: np.asfortranarray(a))):   # not C-ordered
        cams = make(rng.normal(size=(n, 9)).astype(dtype))
        x = rng.normal(size=(n, 3)).astype(dtype)
        dc, dx = g(cams, x)
        assert dc.dtype == dtype and dx.dtype == dtype
        if dtype == np.float64:
            v = rng.normal(size=cams.shape)
            assert np.isclose(np.sum(dc * v), central(lambda y: blocks(y, x), cams, v),
                              rtol=1e-6)
    # written kept.contiguous where the matrices may be laid out by columns (test_columns)
    assert "rot = kept.contiguous(cams[:, 0:3])" in g.source
    assert "contiguous(cams[:, 3:6])" not in g.source      # read once
    assert "contiguous(cams[:, 6:7])" not in g.source      # one column


@pytest.mark.parametrize("source", [
    "v = x[:, 0:3]\na = v * 2\nb = v + 1\nv[0] = 1.0",        # written through it
    "v = x[:, 0:3]\na = v * 2\nb = v + 1\nx[0] = 1.0",        # its matrix written
    "v = x[:, 0:3]\na = v * 2\nb = v + 1\nc = v",             # returned (keep c)
    "v = y[:, 0:3]\na = v * 2\nb = v + 1",                     # y's rank not known
    "v = x[:, i:3]\na = v * 2\nb = v + 1",                     # a bound not a number
])
def test_a_column_block_that_may_be_written_or_returned_stays_a_view(source):
    out = rewritten(contiguous_blocks, source, {"c"}, lambda n: 2 if n == "x" else None)
    assert "ascontiguousarray" not in out
