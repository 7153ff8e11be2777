"""vmap of functions that index (batch/indexing.py): the vectorised form indexes past
the batch axis, so per-example gradients and Jacobians of such functions are one batched
gradient call or sweep (api/vmap_grad.py, vmap_jacobian.py), equal to the loop of calls
(1e-12) and to central differences, for later calls of other sizes, and under other
transforms; a mask, or an array index beside ``...``, keeps the loop."""
import numpy as np
import pytest

import s2sgrad as ms
from s2sgrad.testing import check_grad, numerical_grad, numerical_jacobian

RNG = np.random.default_rng(20)


def first_items(w, x, y):
    """y[0], features x[:, 1:], x[..., 0], x[0, 0]."""
    p = x[:, 1:] @ w
    return np.sum((p - y[0]) ** 2) + x[0, 0] * np.sum(w[:, None] * x[..., 0][None])


def gathered(w, x, labels):
    """A gather by labels: z[np.arange(n), labels] (labels mapped, a batched index)."""
    z = x @ w
    return -np.sum(z[np.arange(z.shape[0]), labels]) + np.sum(np.log(np.sum(np.exp(z), 1)))


def cross_entropy(w, x, label):
    """One example's label, a number: z[label]; w[-1], x[::2]."""
    z = np.tanh(x @ w[:-1]) + w[-1]
    return -z[label] + np.log(np.sum(np.exp(z))) + np.sum(x[::2] ** 2)


IDX = np.array([0, 2, 2])


def examples(batch, n=6, d=3, c=4):
    return {"first_items": (first_items, (RNG.standard_normal(d),
                                          RNG.standard_normal((batch, d + 1, d + 1)),
                                          RNG.standard_normal((batch, 2)))),
            "gathered": (gathered, (RNG.standard_normal((d, c)),
                                    RNG.standard_normal((batch, n, d)),
                                    RNG.integers(0, c, (batch, n)))),
            "cross_entropy": (cross_entropy, (RNG.standard_normal((d + 1, c)),
                                              RNG.standard_normal((batch, d)),
                                              RNG.integers(0, c, batch)))}


NAMES = ("first_items", "gathered", "cross_entropy")
VMAPS = {name: ms.vmap(ms.grad(examples(1)[name][0]), in_axes=(None, 0, 0))
         for name in NAMES}


def rows(fn, args, axes=(None, 0, 0)):
    n = [a.shape[0] for a, ax in zip(args, axes) if ax is not None][0]
    return [[a if ax is None else a[b] for a, ax in zip(args, axes)] for b in range(n)]


@pytest.mark.parametrize("name", NAMES)
def test_per_example_gradients_of_a_loss_that_indexes_are_batched(name):
    v = VMAPS[name]
    for batch, size in ((5, 6), (2, 4)):      # another batch size and example shape
        fn, args = examples(batch, n=size, d=size // 2)[name]
        got = v(*args)
        assert v.form == "vectorised" and "Batched gradient form" in v.source
        loop = np.stack([ms.grad(fn)(*example) for example in rows(fn, args)])
        np.testing.assert_allclose(got, loop, rtol=1e-12, atol=1e-12)
        fd = np.stack([numerical_grad(fn, example, 0) for example in rows(fn, args)])
        np.testing.assert_allclose(got, fd, rtol=1e-6, atol=1e-7)


def test_transforms_of_batched_gradients_that_index():
    fn, (w, x, labels) = examples(3)["gathered"]
    v = VMAPS["gathered"]
    want = v(w, x, labels)
    check_grad(lambda w: np.sum(v(w, x, labels) ** 2), (w,))       # grad of it
    # (jit of it compiles the differentiable loop: test_vmap_grad's composition, 3 s cold)
    twice = ms.vmap(lambda xs, ls: v(w, xs, ls))(x.reshape((3, 1) + x.shape[1:]),
                                                 labels.reshape(3, 1, -1))
    np.testing.assert_allclose(twice.reshape(want.shape), want, rtol=1e-12, atol=1e-12)
    by_closure = ms.vmap(lambda x, label: ms.grad(gathered)(w, x, label))
    np.testing.assert_allclose(by_closure(x, labels), want, rtol=1e-12, atol=1e-12)
    assert by_closure.form == "vectorised"


def shifted(x, w):
    return np.tanh(x[1:] * w[0]) + x[:-1, None][:, 0] ** 2


def picked(x, idx):
    return np.exp(x[idx]) * x[0]


def gather(x, labels):
    """A mapped index: x[np.arange(len(x))[:, None], np.arange(n), labels] vectorised."""
    return np.exp(x[np.arange(x.shape[0]), labels]) * x[0, 0]


@pytest.mark.parametrize("fn, w, axis", [(shifted, RNG.standard_normal(3), None),
                                         (picked, np.array([3, 0, 1]), None),
                                         (gather, RNG.integers(0, 3, (3, 2)), 0)])
def test_per_example_jacobians_of_a_function_that_indexes_are_one_sweep(fn, w, axis):
    v = ms.vmap(ms.jacfwd(fn), in_axes=(0, axis))
    shapes = ((3, 5), (2, 4)) if fn is not gather else ((3, 2, 3), (3, 2, 4))
    for shape in shapes:                    # another batch size or example shape
        xs = RNG.standard_normal(shape)
        got = v(xs, w)
        assert v.form == "vectorised" and "Batched Jacobian form" in v.source
        ws = [w if axis is None else w[b] for b in range(len(xs))]
        np.testing.assert_allclose(got, np.stack([ms.jacfwd(fn)(x, u) for x, u in zip(xs, ws)]),
                                   rtol=1e-12, atol=1e-12)
        fd = np.stack([numerical_jacobian(fn, (x, u), 0) for x, u in zip(xs, ws)])
        np.testing.assert_allclose(got, fd, rtol=1e-6, atol=1e-8)


def spellings(x, i, idx):
    a = x[..., 0] + x[-1, :][:, None][:, 0]         # x[..., 0], a negative index, None
    b = x[idx][:, 1] + x[i, 0] * x.shape[-1]        # an unmapped array, a mapped number
    return np.sum(a[1:3]) * b[:2] + x[1:, 1:].T @ x[0, ::2]


def mapped_after(x, i):
    return x[:, i] * 2.0 + x[None, :, i][0]    # a mapped index after the first axis


def masked(x, i):
    return np.sum(x[x > 0.0]) * x[i]


def with_ellipsis(x, i):
    return x[..., i]              # an array index with ...: the loop


def arrays_placed(y, w, j, j2, idx):
    """Where numpy puts an index's arrays' axes: apart (first), next to each other after
    the first axes (in place), x mapped or not, the index mapped or not."""
    return (y[idx, :, 0], y[j, :, idx], y[:, j2, 0], y[None, :, j2], y[:, None, j, idx],
            w[:, j2], w[j, idx], y[1:, :, j2] * w[j, 0])


@pytest.mark.parametrize("fn, form", [(spellings, "vectorised"), (mapped_after, "vectorised"),
                                      (masked, "python"), (with_ellipsis, "python"),
                                      (arrays_placed, "vectorised")])
def test_the_vectorised_index_is_the_loop(fn, form):
    x, i = RNG.standard_normal((4, 3, 3)), RNG.integers(0, 3, 4)
    args, axes = ((x, i, IDX), (0, 0, None)) if fn is spellings else ((x, i), (0, 0))
    if fn is arrays_placed:
        args = (RNG.standard_normal((4, 3, 3, 3)), x[0], i, RNG.integers(0, 3, (4, 2)), IDX)
        axes = (0, None, 0, 0, None)
    v = ms.vmap(fn, in_axes=axes)
    got = v(*args)
    assert v.form == form, v.not_vectorised
    loop = [fn(*r) for r in rows(fn, args, axes)]
    for k, want in enumerate(zip(*loop) if isinstance(got, tuple) else [loop]):
        np.testing.assert_array_equal((got if isinstance(got, tuple) else [got])[k],
                                      np.stack(want))


# ---------------------------------------------------------------- vmap of jacrev, hessian

def rows_of(w, x):
    return np.tanh(x[1:] * w) * np.sum(x ** 2) + x[0]


def curved(w, x):
    return np.sum(np.sin(x[:-1] * x[1:])) * np.sum(w * x[1:]) + x[0] ** 3


@pytest.mark.parametrize("transform, fn", [(ms.jacrev, rows_of), (ms.hessian, curved)])
@pytest.mark.parametrize("position, in_axes, out_axes", [(1, (None, 0), 0), (1, (None, 1), 1),
                                                         (0, (None, 0), 0)])
def test_per_example_jacrev_and_hessian_are_batched(transform, fn, position, in_axes,
                                                    out_axes):
    d = transform(fn, position)
    v = ms.vmap(d, in_axes=in_axes, out_axes=out_axes)
    w = RNG.standard_normal(3)
    for xs in (RNG.standard_normal((3, 4)), RNG.standard_normal((2, 4))):   # another batch
        got = v(w, xs if in_axes[1] == 0 else xs.T.copy())
        assert v.form == "vectorised" and "Batched" in v.source, v.not_vectorised
        want = np.stack([d(w, x) for x in xs], axis=out_axes)
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
        inner = (lambda *a: ms.grad(fn, position)(*a)) if transform is ms.hessian else fn
        fd = np.stack([numerical_jacobian(inner, (w, x), position) for x in xs], out_axes)
        np.testing.assert_allclose(got, fd, rtol=1e-6, atol=1e-7)


def reprojected(cam, x, w):
    # (GradBench ba's per-observation spelling: a vector's norm, a cross product)
    axis = cam[:3] / np.linalg.norm(cam[:3])
    moved = x - cam[3:6] + np.cross(axis, x) * 0.1
    proj = moved[:2] / moved[2]
    return w * (proj * (1.0 + cam[6] * np.sum(proj * proj)) + cam[7:9])


def test_per_example_jacobians_of_several_positions_are_one_sweep_each():
    # vmap(jacfwd(f, (0, 1, 2))): a tuple of Jacobians per example (was the Python loop
    # of jacfwd calls: GradBench ba's held-out per-observation spelling, 36 s a call;
    # np.linalg.norm of a vector and np.cross were not vectorised nor batched either)
    cams = RNG.standard_normal((6, 9)) * 0.1 + np.array([0.3, 0.2, 0.1, 0.0, 0.0, -5.0,
                                                          0.1, 0.0, 0.0])
    xs, ws = RNG.standard_normal((6, 3)), RNG.uniform(0.5, 1.5, 6)
    v = ms.vmap(ms.jacfwd(reprojected, (0, 1, 2)))
    for n in (6, 4):                                    # another batch size
        got = v(cams[:n], xs[:n], ws[:n])
        assert v.form == "vectorised" and "Batched Jacobian form" in v.source
        for i in range(n):
            want = ms.jacfwd(reprojected, (0, 1, 2))(cams[i], xs[i], ws[i])
            for g, wnt in zip(got, want):
                np.testing.assert_allclose(g[i], wnt, rtol=1e-12, atol=1e-12)
    one = ms.vmap(ms.jacfwd(reprojected, 1))(cams, xs, ws)
    np.testing.assert_allclose(one, numerical_jacobian_rows(reprojected, cams, xs, ws),
                               rtol=1e-6, atol=1e-8)


def numerical_jacobian_rows(fn, cams, xs, ws):
    return np.stack([numerical_jacobian(fn, (c, x, w), 1) for c, x, w in zip(cams, xs, ws)])
