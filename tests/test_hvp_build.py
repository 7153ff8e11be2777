"""``hvp(f, x, v)`` runs the build ``jvp(grad(f), x, v)`` runs (issue 20, kmeans' held-out
Newton direction: hvp was 7x ``jvp(grad(cost))``).

hvp is forward mode over the gradient as a function (``api/higher.hvp_forward``): the
value's tangent, which nothing reads, is never computed (kmeans: no ``rt.broadcast_like``
of the points-by-centroids tangent, no ``rt.extremum_mask``, no product ``p @ c_dot``),
large results go into kept arrays, and an input whose tangent is exactly zero is left
out of the forward pass, decided at every call.  Here: the effect on the code it runs;
``H v`` of a min (extremum) function and of a broadcasting one against central finite
differences of the function (float64); the results of calls whose vector, zero
tangents and closed-over arrays differ from the first call's; hvp under vmap and of a
jitted function.  Loop-free, small, python backend: no Numba compile.
"""
import numpy as np
import pytest

import s2sgrad as ms

RNG = np.random.default_rng(7)
POINTS = RNG.random((9, 2))
CENTROIDS = RNG.random((3, 2))
A = np.array([0.3, -0.7, 1.1])
B = np.array([2.0, 0.5, -1.5, 0.8])


@pytest.fixture(autouse=True)
def python_backend(monkeypatch):
    monkeypatch.setenv("S2SGRAD_BACKEND", "python")


def cost(centroids, points):           # kmeans: a min over the centroids
    dists = np.sum(points ** 2, axis=1)[:, None] + np.sum(centroids ** 2, axis=1)[None, :] \
        - 2 * (points @ centroids.T)
    return np.sum(np.min(dists, axis=1))


def peaks(a, b):                         # broadcasting, and a max over an axis
    grid = np.sin(a[:, None] * b[None, :]) * a[:, None] + b ** 2
    return np.sum(np.max(grid, axis=0) ** 2) + np.sum(np.exp(a[:, None] - b) * b)


def fd_hvp(f, args, vs, e=1e-4):
    """Central finite differences of ``f`` (float64): per input ``i``, element ``j``,
    d/dt of the central difference of ``f`` along ``e_ij`` at ``args + t vs``."""
    def moved(t, i=None, j=None, h=0.0):
        out = [a + t * v for a, v in zip(args, vs)]
        if i is not None:
            out[i] = out[i].copy()
            out[i].flat[j] += h
        return f(*out)
    result = []
    for i, a in enumerate(args):
        r = np.zeros(a.shape)
        for j in range(a.size):
            r.flat[j] = (moved(e, i, j, e) - moved(e, i, j, -e) - moved(-e, i, j, e)
                         + moved(-e, i, j, -e)) / (4 * e * e)
        result.append(r)
    return result


def test_hvp_runs_the_gradients_jvp_build_with_no_tangent_of_the_value(capsys):
    code = ms.show(lambda c: cost(c, POINTS), CENTROIDS, mode="hvp")
    assert "extremum_mask" not in code and "dists_dot" not in code
    h = ms.hvp(lambda c: cost(c, POINTS), CENTROIDS, np.ones_like(CENTROIDS))
    _, want = ms.jvp(ms.grad(cost), (CENTROIDS, POINTS),
                     (np.ones_like(CENTROIDS), np.zeros_like(POINTS)))
    np.testing.assert_allclose(h, want, rtol=1e-12, atol=1e-12)


def test_hvp_of_a_min_and_of_a_broadcasting_max_against_finite_differences():
    v = RNG.normal(size=CENTROIDS.shape)
    got = ms.hvp(lambda c: cost(c, POINTS), CENTROIDS, v)
    want = fd_hvp(lambda c: cost(c, POINTS), [CENTROIDS], [v])[0]
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)
    vs = (RNG.normal(size=A.shape), RNG.normal(size=B.shape))
    got = ms.hvp(peaks, (A, B), vs)
    for g, w in zip(got, fd_hvp(peaks, [A, B], list(vs))):
        np.testing.assert_allclose(g, w, rtol=1e-6, atol=1e-6)


def test_hvp_is_fresh_for_other_vectors_zero_tangents_and_closed_over_arrays():
    cases = [(np.zeros(3), RNG.normal(size=4)), (RNG.normal(size=3), RNG.normal(size=4)),
             (RNG.normal(size=3), np.zeros(4)), (np.zeros(3), np.zeros(4)),
             (RNG.normal(size=3), RNG.normal(size=4))]
    for vs in cases:       # a tangent zero, then not, then the other one zero...
        got = ms.hvp(peaks, (A, B), vs)
        for g, w in zip(got, fd_hvp(peaks, [A, B], list(vs))):
            np.testing.assert_allclose(g, w, rtol=1e-6, atol=1e-6)
    for points in (POINTS, POINTS[::-1] * 2.0, POINTS + 0.5):   # a fresh lambda each
        v = np.ones_like(CENTROIDS)
        got = ms.hvp(lambda c: cost(c, points), CENTROIDS, v)
        want = fd_hvp(lambda c: cost(c, points), [CENTROIDS], [v])[0]
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)


def test_hvp_composes_with_vmap_and_jit():
    vs = RNG.normal(size=(2, 3))
    batched = ms.vmap(lambda v: ms.hvp(lambda a: peaks(a, B), A, v))(vs)
    for v, row in zip(vs, batched):
        np.testing.assert_allclose(row, fd_hvp(lambda a: peaks(a, B), [A], [v])[0],
                                   rtol=1e-6, atol=1e-6)
    jitted = ms.jit(peaks)
    got = ms.hvp(jitted, (A, B), (vs[0], np.zeros(4)))
    for g, w in zip(got, fd_hvp(peaks, [A, B], [vs[0], np.zeros(4)])):
        np.testing.assert_allclose(g, w, rtol=1e-6, atol=1e-6)


def test_hvp_of_a_function_with_an_array_output_is_refused():
    # the code returns no value: the output's shape is checked once per build
    from s2sgrad.errors import GradientTypeError
    for _ in range(2):
        with pytest.raises(GradientTypeError, match="scalar output"):
            ms.hvp(lambda a: np.sin(a) * B[:3], A, np.ones(3))
