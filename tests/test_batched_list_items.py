"""Batched forward-mode Jacobians of a loop that reads a list before it appends to it,
and of the list stacked and contracted by ``np.einsum`` (GradBench's ht with its
skinning as einsum, in small: ``benchmarks/gradbench/heldout_loops.ht_objective_einsum``).

``absolutes.append(tr if parents[i] == -1 else absolutes[parents[i]] @ tr)`` reads an
item of ``absolutes`` in the code before any append tells its items' rank: the batched
sweep builds the loop under a hypothesis on that rank, kept only when every append
agrees (``compiler/forward/item_ranks.py``); it was refused ("the rank of
`absolutes[t]` is not known") and ran one pass per direction.  The items are then
stacked from a list comprehension and contracted by two einsums, whose batched tangents
are ``rt.einsum`` (one BLAS product, not numpy's unblocked loop), the second reading a
slice of the first: one ``rt.einsum_chain`` (the moved points never made).  Each
Jacobian is the batched sweep and equals central finite differences in float64; a list
whose items change rank, and a name the branches give values of two ranks (whose rank
the lowering took from the first branch: a wrong batched Jacobian), are refused and
right.  Compositions: under ``jit`` (its module, run as Python for want of a Numba
``rt.einsum``, gives way to the jacfwd's own call), ``vmap`` of it, ``grad`` of the
function.
"""
import numpy as np
import pytest

import s2sgrad
from test_batched_loops import hand_args

PARENTS = (-1, 0, 1, 0, 3)


def rotation(a, b):
    c, s = np.cos(a), np.sin(a)
    return np.array([[c, -s * b, 0.0], [s, c, b], [0.0, 0.0, 1.0]])


def skinned(theta, parents, points, weights):
    """Bones chained through a list read before its append, stacked, then einsum."""
    absolutes = []
    for i in range(len(parents)):
        tr = np.eye(3)
        tr[:2, :2] = rotation(theta[2 * i], theta[2 * i + 1])[:2, :2] * 1.5
        absolutes.append(tr if parents[i] == -1 else np.matmul(absolutes[parents[i]], tr))
    transforms = np.stack([absolutes[i] * 0.5 for i in range(len(parents))])
    moved = np.einsum("vk,bjk->bvj", points, transforms)[:, :, :2]
    return np.einsum("vb,bvj->vj", weights, moved).ravel()


def read_first(theta, parents, points, weights):
    """The same chain with the branch that reads the list first."""
    absolutes = []
    for i in range(len(parents)):
        tr = rotation(theta[2 * i], theta[2 * i + 1])
        if parents[i] != -1:
            absolutes.append(absolutes[parents[i]] @ tr)
        else:
            absolutes.append(tr)
    return np.sum(np.stack(absolutes)[:, None] * points[None, :, :, None], axis=2).ravel()


def changing_rank(theta, parents, points, weights):
    """Items of two ranks in one list: no hypothesis holds."""
    items = []
    for i in range(len(parents)):
        items.append(theta[:2] * 1.0 if i % 2 == 0 else np.sum(items[i - 1]) * theta[0])
    return points[:, :2] @ items[0] + items[1] * points[:, 0]


def energy(theta, parents, points, weights):
    return np.sum(skinned(theta, parents, points, weights) ** 2)


def two_ranks(theta, parents, points, weights):
    """A name the branches give values of two ranks (its rank was the first branch's)."""
    if parents[1] > 0:
        y = theta * 1.0
    else:
        y = np.sum(theta) * theta[0]
    return theta + y * theta


def args(n=40, seed=0):
    theta, (parents, points, weights, _) = hand_args(n, seed=seed, parents=PARENTS)
    return theta, parents, points, weights


def central_differences(f, a, eps=1e-6):
    base = np.asarray(a[0], dtype=float)
    out = np.asarray(f(*a))
    jac = np.zeros(out.shape + base.shape)
    for k in range(base.size):
        step = np.zeros_like(base)
        step[k] = eps
        hi = f(base + step, *a[1:])
        lo = f(base - step, *a[1:])
        jac[..., k] = (np.asarray(hi) - np.asarray(lo)) / (2 * eps)
    return jac


@pytest.mark.parametrize("f", [skinned, read_first])
def test_a_list_read_before_its_append_is_batched(f):
    a = args()
    jac = s2sgrad.jacfwd(f)
    got = jac(*a)
    assert jac.last is jac.batched and not jac.not_batched, jac.fallback_reason
    np.testing.assert_allclose(got, central_differences(f, a), rtol=1e-6, atol=1e-7)
    b = args(n=70, seed=1)                        # other sizes and values, same build
    np.testing.assert_allclose(jac(*b), central_differences(f, b), rtol=1e-6, atol=1e-7)


def contracted(theta, parents, points, weights):
    """One einsum of an active stack, its result read twice (no chain to make)."""
    stack = np.stack([theta[i:i + 3, None] * theta[None, i + 1:i + 4]
                      for i in range(len(parents))])
    moved = np.einsum("vk,bjk->bvj", points, stack)
    return (np.sin(moved) + moved * 2.0).ravel()


def test_the_batched_einsum_tangents_are_blas_contractions():
    a = args()
    jac = s2sgrad.jacfwd(contracted)
    got = jac(*a)
    assert jac.last is jac.batched, jac.fallback_reason
    code = [line for line in jac.source.splitlines() if not line.strip().startswith("#")]
    assert any("rt.einsum('vk,Zbjk->Zbvj', points, stack_dot)" in line for line in code)
    assert not any("np.einsum(" in line for line in code)
    np.testing.assert_allclose(got, central_differences(contracted, a), rtol=1e-6, atol=1e-7)


def test_an_einsum_of_a_slice_of_an_einsum_is_one_chain():
    """The skinning's moved points are never made: the weights and the points are
    contracted first, then with the stacked transforms (``optimize/einsum_chains.py``)."""
    jac = s2sgrad.jacfwd(skinned)
    jac(*args())
    code = " ".join(line.strip() for line in jac.source.splitlines()
                    if not line.strip().startswith("#"))
    assert "rt.einsum_chain('vb,Zbvj->Zvj', 1, weights, 'vk,Zbjk->Zbvj', points, " \
        "transforms_dot, np.s_[:, :, :, :2])" in code, jac.source
    assert "rt.einsum_chain('vb,bvj->vj', 1, weights, 'vk,bjk->bvj', points, transforms, " \
        "np.s_[:, :, :2])" in code
    assert "rt.einsum(" not in code


@pytest.mark.parametrize("f, why", [(changing_rank, "the rank of `items[i_minus1]` is not known"),
                                    (two_ranks, "takes values of ranks 1 and 0")])
def test_values_of_two_ranks_are_refused_and_right(f, why):
    a = args()
    if f is two_ranks:
        a = (np.linspace(0.1, 1.0, 200), np.array([0, -1]), *a[2:])
    jac = s2sgrad.jacfwd(f)
    got = jac(*a)
    assert jac.last is not jac.batched and why in jac.fallback_reason, jac.fallback_reason
    np.testing.assert_allclose(got, central_differences(f, a), rtol=1e-6, atol=1e-7)


def test_compositions_of_the_list_jacobian():
    a = args()
    jac = s2sgrad.jacfwd(skinned)
    first = jac(*a)
    inner = s2sgrad.jacfwd(skinned)
    jitted = s2sgrad.jit(inner)
    np.testing.assert_allclose(jitted(*a), first, rtol=1e-12, atol=1e-14)
    # its module runs as Python (Numba has no rt.einsum): the jacfwd's own batched call
    assert jitted.backend == "python" and "rt.einsum" in jitted.fallback_reason
    np.testing.assert_allclose(jitted(*a), first, rtol=1e-12, atol=1e-14)
    assert inner.last is inner.batched
    rows = np.stack([a[0], a[0][::-1] * 0.5])
    mapped = s2sgrad.vmap(jac, in_axes=(0, None, None, None))(rows, *a[1:])
    np.testing.assert_allclose(mapped[0], first, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(mapped[1], jac(rows[1], *a[1:]), rtol=1e-12, atol=1e-14)
    grad = s2sgrad.grad(energy)(*a)
    np.testing.assert_allclose(grad, 2 * first.T @ skinned(*a), rtol=1e-10, atol=1e-12)
