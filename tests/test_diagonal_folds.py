"""``a * x + np.einsum(spec, P, x)`` folded into one contraction with ``P`` plus ``a`` on
its diagonal before the reverse pass (compiler/front/diagonal_folds.py): the generated
code has no product ``a * x``; gradients match central differences, through every
operand order the fold reads, and composed (a Hessian-vector product, vmap of grad);
forms outside its conditions are left as written.  Sizes are small: seconds in all."""
import gast
import numpy as np
import pytest

import s2sgrad
from s2sgrad.testing import check_grad, numerical_grad


def mixture(a, P, x):        # GradBench gmm's line: factors applied to centred points
    y = a * x + np.einsum("ijk,mik->mij", P, x)
    return np.sum(y ** 2)


def mixture_swapped(a, P, x):    # the sum and the operands the other way round
    y = np.einsum("mik,ijk->mij", x, P) + x * a
    return np.sum(np.sin(y))


def matvec_rows(a, W, x):        # x @ W.T + a * x as an einsum: a 2-D matrix
    return np.sum(np.tanh(np.einsum("jk,mk->mj", W, x) + a * x))


def single_matvec(a, W, v):      # no batch letter: the fold would not pay, left alone
    return np.sum((a * v + np.einsum("jk,k->j", W, v)) ** 2)


def reused_product(a, P, x):     # a * x read twice: left alone
    t = a * x
    y = t + np.einsum("ijk,mik->mij", P, x)
    return np.sum(y ** 2) + np.sum(t)


def _code(g):
    """The generated lines without their comments (which quote the user's line)."""
    return "\n".join(line for line in g.source.splitlines() if not line.lstrip().startswith("#"))


def _args(seed=0, k=3, d=4, n=5):
    rng = np.random.default_rng(seed)
    return rng.normal(size=(k, d)), rng.normal(size=(k, d, d)), rng.normal(size=(n, k, d))


mixture_grad = s2sgrad.grad(mixture, (0, 1, 2))


def test_the_product_is_folded_into_the_contraction():
    args = _args()
    mixture_grad(*args)
    source = _code(mixture_grad)
    assert "a * x" not in source and "np.eye(" in source, source
    assert "a[:, :, None]" in source      # a on the diagonal of P's last two letters


@pytest.mark.parametrize("fn", [mixture, mixture_swapped])
def test_folded_gradients_match_central_differences(fn):
    check_grad(fn, _args(1), (0, 1, 2))


def test_a_matrix_applied_to_rows_is_folded_and_right():
    rng = np.random.default_rng(2)
    args = (rng.normal(size=4), rng.normal(size=(4, 4)), rng.normal(size=(6, 4)))
    g = s2sgrad.grad(matvec_rows, (0, 1, 2))
    g(*args)
    assert "np.eye(" in _code(g)
    check_grad(matvec_rows, args, (0, 1, 2))


@pytest.mark.parametrize("fn", [single_matvec, reused_product])
def test_forms_outside_the_conditions_are_left_as_written(fn):
    rng = np.random.default_rng(3)
    args = (rng.normal(size=4), rng.normal(size=(4, 4)), rng.normal(size=4)) \
        if fn is single_matvec else _args(3)
    g = s2sgrad.grad(fn, (0, 1, 2))
    g(*args)
    assert "np.eye(" not in _code(g)
    check_grad(fn, args, (0, 1, 2))


def test_new_sizes_after_the_first_call_are_right():
    small, large = _args(4), _args(5, k=2, d=6, n=7)
    for args in (small, large, small):
        got = mixture_grad(*args)
        for position in range(3):
            np.testing.assert_allclose(got[position], numerical_grad(mixture, args, position),
                                       rtol=1e-5, atol=1e-7)


def test_composed_hvp_and_vmap_of_the_folded_gradient():
    a, P, x = _args(6)
    v = np.random.default_rng(7).normal(size=P.shape)
    hv = s2sgrad.hvp(mixture, (a, P, x), (np.zeros_like(a), v, np.zeros_like(x)))[1]
    grad_p = s2sgrad.grad(mixture, 1)
    eps = 1e-5
    want = (grad_p(a, P + eps * v, x) - grad_p(a, P - eps * v, x)) / (2 * eps)
    np.testing.assert_allclose(hv, want, rtol=1e-5, atol=1e-7)
    xs = np.stack([x, 2 * x])
    batched = s2sgrad.vmap(s2sgrad.grad(mixture, 0), (None, None, 0))(a, P, xs)
    for row, xb in zip(batched, xs):
        np.testing.assert_allclose(row, numerical_grad(mixture, (a, P, xb), 0),
                                   rtol=1e-5, atol=1e-7)


# ------------------------------------------- an einsum adjoint summed: contracted summed
# (compiler/optimize/summed_adjoints.py)

def centred_factors(P, mu, x):     # gmm's centred points: mu's adjoint is summed over m
    xc = x[:, None, :] - mu[None, :, :]
    return np.sum(np.einsum("ijk,mik->mij", P, xc) ** 2)


def shared_batch(a, B, c):         # a broadcast over b, b a batch letter of the product
    return np.sum(np.sin(np.einsum("bij,bjk->bik", a[None, :, :] + c, B)))


@pytest.mark.parametrize("fn, shapes, summed", [
    (centred_factors, ((3, 4, 4), (3, 4), (5, 4)), "rt.einsum('ij,ijk->ik', rt.sum("),
    (shared_batch, ((3, 4), (5, 4, 2), (5, 3, 4)), "rt.einsum('bik,bjk->ij', ")],
    ids=["summed_letter", "batch_letter"])
def test_a_summed_einsum_adjoint_is_contracted_summed(fn, shapes, summed):
    rng = np.random.default_rng(9)
    args = tuple(rng.normal(size=s) for s in shapes)
    g = s2sgrad.grad(fn, (0, 1))
    g(*args)
    code = _code(g)
    assert "einsum_adjoints" not in code and summed in code, code
    check_grad(fn, args, (0, 1))


CENTRED_GRAD = s2sgrad.grad(centred_factors, 1)


def centred_slope(P, mu, x):        # a gradient object inside: its generated code, inlined
    return np.sum(CENTRED_GRAD(P, mu, x) ** 2)


def test_grad_of_the_summed_gradient_and_its_hvp_match_differences():
    rng = np.random.default_rng(10)
    args = (rng.normal(size=(3, 4, 4)), rng.normal(size=(3, 4)), rng.normal(size=(5, 4)))
    CENTRED_GRAD(*args)
    assert "rt.einsum('ij,ijk->ik', rt.sum(" in _code(CENTRED_GRAD)
    check_grad(centred_slope, args, (0, 1))
    v = rng.normal(size=args[1].shape)
    hv = s2sgrad.hvp(centred_factors, args, (np.zeros_like(args[0]), v, np.zeros_like(args[2])))
    eps = 1e-5
    want = (CENTRED_GRAD(args[0], args[1] + eps * v, args[2]) -
            CENTRED_GRAD(args[0], args[1] - eps * v, args[2])) / (2 * eps)
    np.testing.assert_allclose(hv[1], want, rtol=1e-5, atol=1e-7)


def _summed(text):
    from s2sgrad.compiler.optimize.summed_adjoints import summed_adjoints
    from s2sgrad.compiler.syntax.source import to_source
    statements = gast.parse(text).body
    names = iter(["n1", "n2", "n3"])
    return "".join(to_source(s) for s in summed_adjoints(statements, lambda name: True,
                                                          lambda base: next(names)))


def test_a_summed_adjoint_written_in_place_before_its_sum_is_left_alone():
    head = "parts = rt.einsum_adjoints(g, ('ijk,mik->mij', P, x))\nv = parts[2]\n"
    tail = "s = rt.sum(v, 0, True)\n"
    assert "einsum_adjoints" not in _summed(head + tail)
    for write in ("v[0] = 0.0\n", "w = v\nw += 1.0\n", "rt.add_into(v, h)\n", "v.fill(0.0)\n"):
        assert "einsum_adjoints" in _summed(head + write + tail), write
