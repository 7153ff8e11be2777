"""vmap of ``jacrev(f, (p, q, ...))``: every example's Jacobians w.r.t. several arguments
from one ``jacrev`` of the sum over the examples of ``f``'s vectorised form
(``api/vmap_rows.py``).

Before, a tuple of positions ran ``jacrev`` once per example (ba's per-observation
reprojection Jacobian, 31,843 observations: 1.89 s, 113x JAX; now 19 ms).  Checked: the
batched form is taken (``form == "vectorised"``) and agrees with the loop of the
``jacrev`` and with central differences, for mapped and unmapped differentiated
arguments, ``out_axes``, a position given twice in a different order; it reads a
rebound global at the next call; and jit of it, and a jacrev of one position, still run.
"""
import numpy as np
import pytest

import s2sgrad as ms
from s2sgrad.testing import numerical_jacobian

RNG = np.random.default_rng(11)
ACT = np.tanh       # a global function called: a rebinding reaches a built vmap


def project(cam, point, w):
    # one observation's two residuals: a rotation about z, a perspective division
    c, s = np.cos(cam[0]), np.sin(cam[0])
    x = c * point[0] - s * point[1] + cam[1]
    y = s * point[0] + c * point[1] + cam[2]
    z = point[2] + cam[3]
    return w * np.array([ACT(x / z), ACT(y / z)])


CAMS = RNG.normal(size=(6, 4)) * 0.3
POINTS = RNG.normal(size=(6, 3)) + np.array([0.0, 0.0, 4.0])
WEIGHTS = RNG.uniform(0.5, 1.5, size=6)


def _loop(fn, args, axes):
    n = next(a.shape[ax] for a, ax in zip(args, axes) if ax is not None)
    rows = [fn(*[a if ax is None else np.take(a, b, axis=ax) for a, ax in zip(args, axes)])
            for b in range(n)]
    return tuple(np.stack([r[k] for r in rows]) for k in range(len(rows[0])))


def _agrees_with_the_loop(v, got, args, message=""):
    """``got`` (``v``'s result on ``args``, every one mapped along its first axis) is the
    stack of ``v.fn`` called per example (a tuple of stacks for a tuple result)."""
    rows = [v.fn(*(a[b] for a in args)) for b in range(len(args[0]))]
    several = isinstance(rows[0], tuple)
    want = tuple(np.stack(column) for column in zip(*rows)) if several else (np.stack(rows),)
    got = got if several else (got,)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-12, err_msg=message)


@pytest.mark.parametrize("positions, axes", [
    ((0, 1, 2), (0, 0, 0)),
    ((1, 0), (0, 0, 0)),
    ((0, 1), (None, 0, 0)),            # the camera shared: repeated per example
])
def test_batched_and_equal_to_the_loop_and_to_differences(positions, axes):
    inner = ms.jacrev(project, positions)
    args = (CAMS[0] if axes[0] is None else CAMS, POINTS, WEIGHTS)
    v = ms.vmap(inner, in_axes=axes)
    got = v(*args)
    assert v.form == "vectorised", v.not_vectorised
    want = _loop(inner, args, axes)
    assert isinstance(got, tuple) and len(got) == len(positions)
    for g, w in zip(got, want):
        assert g.shape == w.shape
        np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-12)
    b = 2                                      # one example against central differences
    example = [a if ax is None else a[b] for a, ax in zip(args, axes)]
    for g, p in zip(got, positions):
        np.testing.assert_allclose(g[b], numerical_jacobian(project, example, p),
                                   rtol=1e-6, atol=1e-8)


def test_out_axes_places_each_jacobians_example_axis():
    v = ms.vmap(ms.jacrev(project, (0, 1)), in_axes=(0, 0, 0), out_axes=1)
    jc, jp = v(CAMS, POINTS, WEIGHTS)
    assert v.form == "vectorised"
    assert jc.shape == (2, 6, 4) and jp.shape == (2, 6, 3)
    want = _loop(ms.jacrev(project, (0, 1)), (CAMS, POINTS, WEIGHTS), (0, 0, 0))
    np.testing.assert_allclose(np.moveaxis(jc, 1, 0), want[0], rtol=1e-12)
    np.testing.assert_allclose(np.moveaxis(jp, 1, 0), want[1], rtol=1e-12)


def test_a_rebound_global_is_read_at_the_next_call():
    global ACT
    v = ms.vmap(ms.jacrev(project, (0, 1)))
    inner = ms.jacrev(project, (0, 1))
    try:
        for act in (np.tanh, np.sin, np.tanh):
            ACT = act
            got = v(CAMS, POINTS, WEIGHTS)
            assert v.form == "vectorised"
            want = _loop(inner, (CAMS, POINTS, WEIGHTS), (0, 0, 0))
            for g, w in zip(got, want):
                np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-12, err_msg=str(act))
    finally:
        ACT = np.tanh


def test_composes_with_jit_and_matches_jacfwd():
    positions = (0, 1, 2)
    rev = ms.jit(ms.vmap(ms.jacrev(project, positions)))(CAMS, POINTS, WEIGHTS)
    fwd = ms.vmap(ms.jacfwd(project, positions))(CAMS, POINTS, WEIGHTS)
    for a, b in zip(rev, fwd):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)


def homogeneous(point, w):
    # an example's vector made of batched and constant components
    h = np.array([point[0] * w, point[1], 1.0])
    return np.stack([h * point[2], h], axis=-1)


def homogeneous_loss(point, w):
    h = np.array([point[0] * w, point[1], 1.0])
    return np.sum(np.stack([h * point[2], h], axis=-1) ** 2)


@pytest.mark.parametrize("make", [
    lambda: ms.vmap(homogeneous),
    lambda: ms.vmap(ms.jacrev(homogeneous, (0, 1))),
    lambda: ms.vmap(ms.jacfwd(homogeneous, (0, 1))),
    lambda: ms.vmap(ms.grad(homogeneous_loss, (0, 1))),
], ids=["fn", "jacrev", "jacfwd", "grad"])
def test_vectors_made_of_components_are_vectorised(make):
    v = make()
    got = v(POINTS, WEIGHTS)
    assert v.form == "vectorised", v.not_vectorised
    _agrees_with_the_loop(v, got, (POINTS, WEIGHTS))


def test_a_wide_per_example_jacfwd_runs_as_rows_and_agrees():
    """Two residuals of 8 parameters per example: the rows form (one adjoint sweep per
    residual for all examples; ba's: 100 -> 20 ms), the same Jacobians as the loop."""
    inner = ms.jacfwd(project, (0, 1, 2))
    v = ms.vmap(inner)
    got = v(CAMS, POINTS, WEIGHTS)
    assert v.form == "vectorised" and "Jacobian rows" in v.source
    for g, w in zip(got, _loop(inner, (CAMS, POINTS, WEIGHTS), (0, 0, 0))):
        np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-12)
    tall = ms.vmap(ms.jacfwd(homogeneous, 1))      # 6 outputs of 1 weight: columns
    tall(POINTS, WEIGHTS)
    assert tall.form == "vectorised" and "Jacobian columns" in tall.source


SCALE = 2.0        # numbers read from outside: written into the form, rebuilt on rebinding
PICK = 1


def scaled(point, w):
    return SCALE * w * point[PICK] + point


@pytest.mark.parametrize("make", [
    lambda: ms.vmap(scaled),
    lambda: ms.vmap(ms.jacrev(scaled, (0, 1))),
    lambda: ms.vmap(ms.grad(scaled_loss, (0, 1))),
], ids=["fn", "jacrev", "grad"])
def test_numbers_read_from_outside_are_vectorised_and_fresh(make):
    global SCALE, PICK
    v = make()
    try:
        for scale, pick in [(2.0, 1), (-0.5, 1), (-0.5, 2), (3, 0)]:
            SCALE, PICK = scale, pick
            got = v(POINTS, WEIGHTS)
            assert v.form == "vectorised", v.not_vectorised
            _agrees_with_the_loop(v, got, (POINTS, WEIGHTS), f"{scale}, {pick}")
    finally:
        SCALE, PICK = 2.0, 1


def scaled_loss(point, w):
    return np.sum((SCALE * w * point[PICK] + point) ** 2)


def test_a_number_that_is_not_finite_keeps_the_loop():
    global SCALE
    v = ms.vmap(scaled)
    try:
        SCALE = float("inf")
        got = v(POINTS, WEIGHTS)
        assert v.form != "vectorised"
        np.testing.assert_array_equal(got, np.stack([scaled(p, w) for p, w in
                                                     zip(POINTS, WEIGHTS)]))
    finally:
        SCALE = 2.0


# ---------------------------------------------------------------- helpers inlined

OFFSET = 0.25       # read by a helper: a rebinding reaches the vmap


def rotate(v, angle):
    c, s = np.cos(angle), np.sin(angle)
    return np.array([c * v[0] - s * v[1], s * v[0] + c * v[1], v[2] + OFFSET])


def perspective(p):
    return p[:2] / p[2]


def observe(cam, point, w):
    moved = rotate(point, cam[0]) + cam[1:4]
    return w * perspective(moved) + rotate(point, cam[0])[:2]


def first_level(x):
    return second_level(x * 2.0) + 1.0


def second_level(x):
    y = np.sin(x)
    return perspective(np.array([y[0], y[1], y[2] + 3.0]))


@pytest.mark.parametrize("make", [
    lambda: ms.vmap(observe),
    lambda: ms.vmap(ms.jacrev(observe, (0, 1, 2))),
    lambda: ms.vmap(ms.jacfwd(observe, (0, 1))),
], ids=["fn", "jacrev", "jacfwd"])
def test_a_function_calling_helpers_is_vectorised_and_reads_their_globals(make):
    global OFFSET
    v = make()
    cams = np.concatenate([CAMS, np.zeros((6, 1))], axis=1)
    try:
        for offset in (0.25, 1.5):
            OFFSET = offset
            got = v(cams, POINTS, WEIGHTS)
            assert v.form == "vectorised", v.not_vectorised
            if v.name == "observe":
                assert "rotate_" in v.source and "return p[:2] / p[2]" in v.source
            _agrees_with_the_loop(v, got, (cams, POINTS, WEIGHTS), str(offset))
    finally:
        OFFSET = 0.25


def test_helpers_calling_helpers_are_inlined_and_library_functions_are_not():
    from scipy.special import logsumexp
    v = ms.vmap(first_level)
    np.testing.assert_allclose(v(POINTS), np.stack([first_level(p) for p in POINTS]),
                               rtol=1e-12)
    assert v.form == "vectorised", v.not_vectorised

    def library(x):
        return logsumexp(x)
    lib = ms.vmap(library)
    np.testing.assert_allclose(lib(POINTS), [logsumexp(p) for p in POINTS], rtol=1e-12)
    assert lib.form != "vectorised"
