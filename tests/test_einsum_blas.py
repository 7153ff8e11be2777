"""np.einsum contractions run through BLAS (runtime/einsum.py, compiler/front/spellings.py).

A two-operand ``np.einsum`` is written ``rt.einsum`` in the generated forward sweep, and
``rt.einsum`` -- for every contraction at least ``MATMUL_WORK`` multiply-adds large --
runs as one ``np.matmul`` instead of numpy's unblocked einsum loop; its adjoints
(``rt.einsum_adjoints``) contract through it too.  Checked here: the generated code
says ``rt.einsum``; the matmul path is taken (``np.einsum`` is never called) and agrees
with ``np.einsum`` for every class of two-operand subscripts (batch, free and summed
letters in any order), and the other forms still agree by falling back; gradients
and Hessian-vector products through it match finite differences under both backends;
and a gradient object first called below the size threshold is still right above it
(and the other way round).
"""
import importlib

import numpy as np
import pytest

import s2sgrad
from s2sgrad import runtime as rt
from s2sgrad.testing import check_grad, numerical_grad

einsum_module = importlib.import_module("s2sgrad.runtime.einsum")

#: subscripts of every class: matmul, batched (batch letter first, last, in the middle),
#: transposed output, outer product, dot, a row-wise dot, several letters per class
CONTRACTIONS = [
    ("ij,jk->ik", (40, 30), (30, 20)),
    ("ij,jk->ki", (40, 30), (30, 20)),
    ("ijk,mik->mij", (5, 8, 8), (60, 5, 8)),      # GradBench gmm's
    ("mij,mik->ijk", (60, 5, 8), (60, 5, 8)),      # its adjoint w.r.t. the factors
    ("mij,ijk->mik", (60, 5, 8), (5, 8, 8)),       # its adjoint w.r.t. the points
    ("bij,bjk->bik", (6, 20, 10), (6, 10, 12)),
    ("ibj,jbk->kib", (20, 6, 10), (10, 6, 12)),
    ("abcd,cdef->fbea", (4, 5, 6, 7), (6, 7, 3, 8)),
    ("vk,Zbjk->Zbvj", (300, 4), (5, 6, 4, 4)),     # ht's skinning tangent: a stack
    ("ij,bjk->bik", (40, 50), (6, 50, 12)),        # a matrix times a stack
    ("aij,bjk->abik", (3, 40, 50), (4, 50, 12)),   # two stacks, each broadcast
]

#: contractions large enough for BLAS that np.einsum's own loop still runs faster
#: (``_pays_as_matmul``): outer products (BLAS with an inner size of one: 1,253 against
#: 283 us for 1,000 x 1,000), stacks of dot products (kmeans' distances by rows,
#: ``"nd,nd->n"``, and their adjoints: 88 against 47 us), stacks of small matrix-vector
#: products; each comes back C-ordered, as the matmul path's
NUMPY_LOOP_FORMS = [
    ("i,j->ij", (80,), (70,)),
    ("ij,kl->ilkj", (6, 8), (10, 12)),
    ("ij,ij->i", (300, 40), (300, 40)),
    ("nd,nd->n", (10000, 8), (10000, 8)),
    ("n,nd->nd", (10000,), (10000, 8)),
    ("bij,bij->b", (2000, 3, 3), (2000, 3, 3)),
    ("bij,bj->bi", (2000, 3, 3), (2000, 3)),
    ("bj,bij->bi", (2000, 4), (2000, 4, 4)),
]

#: contractions whose output is a stack of products as it is laid out: each runs as one
#: np.matmul of the operands' stacks (broadcast where one lacks an axis), no copy into the
#: output's order (``_stacked_plan``)
STACKED = [c for c in CONTRACTIONS if c[0] in ("vk,Zbjk->Zbvj", "ij,bjk->bik",
                                               "aij,bjk->abik")]

#: forms that are not such a contraction: numpy's einsum runs them, with the same result
OTHER_FORMS = [
    ("ij,kj->", (60, 70), (80, 70)),        # a letter summed in both and over the output
    ("ii,ij->j", (70, 70), (70, 60)),       # a diagonal
    ("ij,jk", (60, 70), (70, 80)),          # implicit output
    ("...ij,...jk->...ik", (3, 30, 40), (3, 40, 20)),
]


def _operands(shapes, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(s) for s in shapes]


@pytest.mark.parametrize("spec,a_shape,b_shape", CONTRACTIONS, ids=[c[0] for c in CONTRACTIONS])
def test_a_large_contraction_runs_as_matmul_and_agrees(spec, a_shape, b_shape, monkeypatch):
    a, b = _operands((a_shape, b_shape))
    want = np.einsum(spec, a, b)

    def refuse(*args, **kwargs):
        raise AssertionError(f"np.einsum{args[:1]} ran instead of the matmul path")
    monkeypatch.setattr(einsum_module.np, "einsum", refuse)
    try:
        got = rt.einsum(spec, a, b)
    finally:
        monkeypatch.undo()
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("spec,a_shape,b_shape", NUMPY_LOOP_FORMS,
                         ids=[c[0] for c in NUMPY_LOOP_FORMS])
def test_outer_products_and_stacks_of_dots_keep_numpys_loop(spec, a_shape, b_shape,
                                                            monkeypatch):
    a, b = _operands((a_shape, b_shape))
    want = np.einsum(spec, a, b)

    def refuse(*args, **kwargs):
        raise AssertionError("np.matmul ran where np.einsum's loop is faster")
    monkeypatch.setattr(einsum_module.np, "matmul", refuse)
    try:
        got = rt.einsum(spec, a, b)
    finally:
        monkeypatch.undo()
    assert got.flags.c_contiguous
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


def test_a_stack_of_larger_matrix_vector_products_keeps_blas(monkeypatch):
    """16 x 16 matrix-vector products, 2,000 of them: np.matmul 104 us, np.einsum 179."""
    a, b = _operands(((2000, 16, 16), (2000, 16)))
    monkeypatch.setattr(einsum_module.np, "einsum", None)
    got = rt.einsum("bij,bj->bi", a, b)
    monkeypatch.undo()
    np.testing.assert_allclose(got, np.einsum("bij,bj->bi", a, b), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("spec,a_shape,b_shape", STACKED, ids=[c[0] for c in STACKED])
def test_a_stack_of_products_is_written_in_the_outputs_order(spec, a_shape, b_shape,
                                                             monkeypatch):
    """ht's ``"vk,Zbjk->Zbvj"`` took 4-7 ms as one (544, 4) @ (4, 2288) product copied
    into the output's order, 0.8 ms as a stack of products."""
    a, b = _operands((a_shape, b_shape))
    want = np.einsum(spec, a, b)

    def copied(*args, **kwargs):
        raise AssertionError("the product was made in another order and copied")
    monkeypatch.setattr(einsum_module, "_product_in_order", copied)
    got = rt.einsum(spec, a, b)
    assert got.flags.c_contiguous
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    out = np.empty_like(want)
    assert einsum_module.einsum_into(out, spec, a, b) is out
    np.testing.assert_allclose(out, want, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("spec,a_shape,b_shape", OTHER_FORMS, ids=[c[0] for c in OTHER_FORMS])
def test_other_forms_fall_back_to_numpy_with_the_same_result(spec, a_shape, b_shape):
    a, b = _operands((a_shape, b_shape))
    np.testing.assert_allclose(rt.einsum(spec, a, b), np.einsum(spec, a, b), rtol=1e-12)


def test_small_contractions_keep_numpy_and_large_adjoints_use_matmul(monkeypatch):
    """Below MATMUL_WORK, np.einsum (cheaper there); above it, the adjoints of a gmm-sized
    contraction never call np.einsum."""
    calls = []
    real = np.einsum
    monkeypatch.setattr(einsum_module.np, "einsum",
                        lambda *a, **k: calls.append(a[0]) or real(*a, **k))
    a, b = _operands(((3, 4), (4, 5)))
    rt.einsum("ij,jk->ik", a, b)
    assert calls == ["ij,jk->ik"]
    calls.clear()
    Ls, x = _operands(((5, 8, 8), (60, 5, 8)))
    g = np.ones((60, 5, 8))
    parts = rt.einsum_adjoints(g, ("ijk,mik->mij", Ls, x))
    assert calls == [], calls
    np.testing.assert_allclose(parts[1], real("mij,mik->ijk", g, x), rtol=1e-12)
    np.testing.assert_allclose(parts[2], real("mij,ijk->mik", g, Ls), rtol=1e-12)


def mixture_term(Ls, x):
    y = np.einsum("ijk,mik->mij", Ls, x)
    return np.sum(np.tanh(y) ** 2)


def batched(a, b):
    return np.sum(np.sin(np.einsum("bij,bjk->bik", a, b)))


def test_generated_forward_says_rt_einsum():
    g = s2sgrad.grad(mixture_term, (0, 1))
    g(*_operands(((5, 8, 8), (60, 5, 8))))
    assert "rt.einsum('ijk,mik->mij', Ls, x)" in g.source, g.source
    assert "np.einsum" not in g.source.replace('np.einsum("ijk', "")   # comments aside


@pytest.mark.parametrize("backend", ["python", "numba"])
@pytest.mark.parametrize("fn,shapes", [(mixture_term, ((5, 8, 8), (60, 5, 8))),
                                        (batched, ((6, 20, 10), (6, 10, 12)))],
                         ids=["gmm-like", "batched"])
def test_gradients_through_the_matmul_path_match_differences(fn, shapes, backend, monkeypatch):
    monkeypatch.setenv("S2SGRAD_BACKEND", backend)
    check_grad(fn, tuple(0.3 * a for a in _operands(shapes, 1)), (0, 1))


def test_hvp_through_rt_einsum_matches_differences_of_the_gradient():
    Ls, x = (0.3 * a for a in _operands(((5, 8, 8), (60, 5, 8)), 2))
    v = _operands(((5, 8, 8),), 3)[0]
    got = s2sgrad.hvp(mixture_term, (Ls, x), (v, np.zeros_like(x)))[0]
    gradient = s2sgrad.grad(mixture_term, 0)
    eps = 1e-6
    want = (gradient(Ls + eps * v, x) - gradient(Ls - eps * v, x)) / (2 * eps)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-7)


def test_the_size_at_the_first_call_does_not_fix_the_path():
    """One gradient object, called below the threshold, then above it, then below."""
    g = s2sgrad.grad(batched, (0, 1))
    for shapes in (((2, 3, 2), (2, 2, 3)), ((6, 20, 10), (6, 10, 12)), ((2, 3, 2), (2, 2, 3))):
        args = tuple(0.3 * a for a in _operands(shapes, 4))
        got = g(*args)
        for position in (0, 1):
            np.testing.assert_allclose(got[position], numerical_grad(batched, args, position),
                                       rtol=1e-5, atol=1e-7)


#: (outer spec, position of the inner result, inner spec, index, shapes of c, a, b):
#: ht's skinning (a batch of tangents first, or not), the inner result first, an outer
#: letter named like an inner summed one, a slice of a letter of both inner operands
CHAINS = [
    ("vb,bvj->vj", 1, "vk,bjk->bvj", np.s_[:, :, :3], (60, 5), (60, 4), (5, 4, 4)),
    ("vb,Zbvj->Zvj", 1, "vk,Zbjk->Zbvj", np.s_[:, :, :, :3], (60, 5), (60, 4), (7, 5, 4, 4)),
    ("ik,kj->ji", 0, "ij,jk->ik", (), (8, 9), (6, 7), (7, 8)),
    ("jk,ik->ij", 1, "ij,jk->ik", np.s_[1:4], (9, 8), (6, 7), (7, 8)),
    ("bk,bij->bik", 1, "bij,bj->bij", np.s_[::2, 1:], (3, 5), (6, 4, 5), (6, 5)),
]


@pytest.mark.parametrize("spec,at,inner,index,c_shape,a_shape,b_shape", CHAINS,
                         ids=[c[0] + " of " + c[2] for c in CHAINS])
def test_an_einsum_of_a_slice_of_an_einsum_agrees(spec, at, inner, index, c_shape, a_shape,
                                                  b_shape):
    c, a, b = _operands((c_shape, a_shape, b_shape))
    y = np.einsum(inner, a, b)[index]
    want = np.einsum(spec, *((y, c) if at == 0 else (c, y)))
    np.testing.assert_allclose(rt.einsum_chain(spec, at, c, inner, a, b, index), want,
                               rtol=1e-12, atol=1e-12)
    if index != ():
        np.testing.assert_allclose(rt.einsum_sliced(inner, a, b, index), y, rtol=1e-12,
                                   atol=1e-12)


def test_an_einsum_chain_never_makes_the_inner_result(monkeypatch):
    """ht's weights and points are contracted first: no call makes the (v, b, j) stack."""
    c, a, b = _operands(((60, 5), (60, 4), (7, 5, 4, 4)))
    made = []
    real = einsum_module.einsum

    def recorded(spec, *operands):
        made.append(spec)
        return real(spec, *operands)
    monkeypatch.setattr(einsum_module, "einsum", recorded)
    rt.einsum_chain("vb,Zbvj->Zvj", 1, c, "vk,Zbjk->Zbvj", a, b, np.s_[:, :, :, :3])
    assert made == ["vk,vb->vkb", "vkb,Zbjk->Zvj"], made
