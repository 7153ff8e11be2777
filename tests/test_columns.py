"""Narrow matrices laid out by columns for a call of loop-free gradient code
(``kept.columns``: ``runtime/columns.py``, ``compiler/optimize/buffers.by_columns``).

The class: GradBench's ba, a function of row-wise work on matrices of many rows and few
columns (column blocks ``cams[:, 0:3]``, broadcast columns ``theta[:, None]``, sums over
the columns, ``np.cross``), whose C-ordered passes numpy runs as one loop of a few
numbers per row.  Checked: the generated code (the layout line, ``kept.cross``, left out
where a reshape could lose a write), the gradient against central differences and bit
for bit against the same code on C-ordered arrays, results laid out C-ordered, no result
depending on what an earlier call was given, and a composition (forward mode over the
gradient).  ``N`` rows: the fewest laid out by columns (``columns.LEAST_ROWS``), with
``cams`` of ``KEEP_BYTES`` or more (the size class that gets kept arrays)."""
import numpy as np
import pytest

import s2sgrad
from s2sgrad.runtime import broadcast, buffers, columns
from s2sgrad.runtime.arrays import cross_adjoint

N = max(columns.LEAST_ROWS, buffers.KEEP_BYTES // 40 + 1)


def rows(cams, X):
    rot = cams[:, 0:3]
    theta = np.sqrt(np.sum(rot ** 2, axis=1))
    axis = rot / theta[:, None]
    Xc = X - cams[:, 2:5]
    turned = np.cross(axis, Xc) * np.sin(theta)[:, None]
    tmp = np.sum(axis * Xc, axis=1) * np.cos(theta)
    y = turned + axis * tmp[:, None]
    proj = y[:, 0:2] / (y[:, 2:3] + 4.0)
    return np.sum(proj ** 2 * cams[:, 4:5])


def rows_summed_by_method(cams, X):
    rot = cams[:, 0:3]
    axis = rot / np.linalg.norm(rot, axis=1)[:, None]
    return (np.cross(axis, X)[:, 0:2] * cams[:, 4:5]).sum()


def with_aux(cams, X):
    return rows(cams, X), cams[:, 1:3] * 2.0


def whole(cams, X):
    return np.sum(np.sin(cams) * cams + X @ cams[:3])


def reshaped(cams, X):
    flat = cams[:, 0:3].reshape(-1)
    return np.sum(np.sin(flat) * X.reshape(-1))


GRAD = s2sgrad.grad(rows, (0, 1))


def data(n=N, seed=0):
    rng = np.random.default_rng(seed)
    return rng.uniform(0.5, 1.5, size=(n, 5)), rng.normal(size=(n, 3))


@pytest.fixture(scope="module")
def reference():
    """The gradient at ``data()`` with nothing laid out by columns (C-ordered passes)."""
    saved = columns.LEAST_ROWS
    columns.LEAST_ROWS = 10 ** 9
    try:
        return s2sgrad.grad(rows, (0, 1))(*data())
    finally:
        columns.LEAST_ROWS = saved


def test_the_generated_code_lays_narrow_matrices_out_by_columns():
    source = s2sgrad.show(GRAD, *data())
    assert "cams, X = kept.columns(cams, X)" in source
    code = [line for line in source.splitlines() if not line.lstrip().startswith("#")]
    assert any("kept.cross(axis, Xc)" in line for line in code)
    assert not any("np.cross" in line for line in code)
    assert any("kept.unreduce(" in line for line in code)        # the row sums' adjoints
    # an array's reading methods and np.linalg.norm read into new values
    other = s2sgrad.show(s2sgrad.grad(rows_summed_by_method, (0, 1)), *data())
    assert "cams, X = kept.columns(cams, X)" in other
    # a reshape of a matrix laid out by columns is a copy: such code keeps numpy's layout
    other = s2sgrad.show(s2sgrad.grad(reshaped, (0, 1)), *data())
    assert "kept." in other and "columns(" not in other
    # passes over whole matrices only: numpy runs them as fast in rows, the copies would cost
    other = s2sgrad.show(s2sgrad.grad(whole, (0, 1)), *data())
    assert "kept." in other and "columns(" not in other


def test_the_gradient_is_the_row_layouts_bit_for_bit_and_matches_differences(reference):
    cams, X = data()
    got = GRAD(cams, X)
    for g, want in zip(got, reference):
        assert g.flags.c_contiguous and np.array_equal(g, want)
    rng = np.random.default_rng(1)
    h = 1e-6
    for _ in range(2):          # central differences along random directions
        dc, dx = rng.normal(size=cams.shape), rng.normal(size=X.shape)
        slope = (rows(cams + h * dc, X + h * dx) - rows(cams - h * dc, X - h * dx)) / (2 * h)
        assert np.isclose(np.sum(got[0] * dc) + np.sum(got[1] * dx), slope, rtol=1e-6)


def test_no_result_depends_on_what_an_earlier_call_was_given(reference):
    grad = s2sgrad.grad(rows, (0, 1))
    small = data(64, seed=3)
    small_want = s2sgrad.grad(rows, (0, 1))(*small)
    cams, X = data()
    wide = np.zeros((N, 8))
    wide[:, 1:6] = cams
    for args in [small, (cams, X), (np.asfortranarray(cams), X), small,
                 (wide[:, 1:6], X), (cams, X)]:
        want = small_want if args[0].shape[0] == 64 else reference
        for g, w in zip(grad(*args), want):
            assert np.array_equal(g, w)


def test_forward_mode_over_the_gradient(reference):
    cams, X = data()
    dc = np.random.default_rng(2).normal(size=cams.shape)
    _, tangent = s2sgrad.jvp(lambda c: GRAD(c, X)[0], (cams,), (dc,))
    h = 1e-6
    slope = (GRAD(cams + h * dc, X)[0] - GRAD(cams - h * dc, X)[0]) / (2 * h)
    assert np.allclose(tangent, slope, rtol=1e-5, atol=1e-7 * np.abs(slope).max())


def test_the_runtime_keeps_numpys_bits_and_the_layout():
    a, b, g = (np.asfortranarray(x) for x in np.random.default_rng(4).normal(size=(3, N, 3)))
    c = columns.cross(a, b)
    assert c.flags.f_contiguous and np.array_equal(c, np.cross(a, b))
    assert np.array_equal(columns.cross(a[:5], b[:5]), np.cross(a[:5], b[:5]))
    for wrt in (0, 1):      # the (n, 3) case against the general one (axes spelled 1)
        fast = cross_adjoint(g, a, b, -1, -1, -1, None, wrt)
        assert fast.flags.f_contiguous
        assert np.array_equal(fast, cross_adjoint(g, a, b, 1, 1, 1, None, wrt))
    # a row sum's adjoint spread over the columns: written out by columns once the call
    # laid matrices out so (a stride-0 view makes numpy's passes run along rows)
    kept = buffers.Buffers().take()
    spread = kept.unreduce(a[:, 0], a, 1, False)
    assert spread.strides[1] == 0 and np.array_equal(spread, np.repeat(a[:, :1], 3, axis=1))
    kept.columns(np.ones((N, 3)))
    spread = kept.unreduce(a[:, 0], a, 1, False)
    assert spread.flags.f_contiguous and np.array_equal(spread, np.repeat(a[:, :1], 3, axis=1))
    # the compiled broadcast loop writes C order: operands laid out by columns stay numpy's
    assert broadcast.binary(np.multiply, a, np.ones((N, 1)), None) is None
    assert columns.contiguous(a[:, 0:2]) is not None and columns.narrow(np.ones((N, 3)))
    assert not columns.narrow(a) and not columns.narrow(np.ones((N, 1)))


def test_value_and_grad_with_aux_and_a_jitted_caller(reference):
    cams, X = data()
    (value, aux), grads = s2sgrad.value_and_grad(with_aux, (0, 1), has_aux=True)(cams, X)
    assert value == rows(cams, X)
    for g, want in zip(grads, reference):
        assert g.flags.c_contiguous and np.array_equal(g, want)
    assert aux.flags.c_contiguous and np.array_equal(aux, cams[:, 1:3] * 2.0)
    twice = s2sgrad.jit(lambda c, x: GRAD(c, x)[0] * 2.0)(cams, X)
    assert np.array_equal(twice, 2.0 * reference[0])
