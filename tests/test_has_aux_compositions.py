"""Transforms of a derivative object that has an aux (``grad(f, has_aux=True)``...), with
``has_aux`` on the outer transform too, as JAX composes them: the first output is
differentiated, the aux passed out as it is, never differentiated (``grad`` gives its
aux as the tuple of the other outputs, ``jacfwd``/``jacrev``/``jvp``/``vjp``/``hessian``
the second output).  Each is checked against closed forms, central differences and the
hand-composed spelling, at two points with a global changed between calls (nothing is
kept from the first call).  Before, every one was refused ("a derivative of the
gradient object f_grad (it has weights, has_aux or return_ids)"; hessian took no
has_aux; ``grad(lambda x: g(x)[0].sum())`` raised MissingRuleError)."""
import numpy as np
import pytest

import s2sgrad as ms
from s2sgrad.testing import numerical_grad, numerical_jacobian

SCALE = 1.0     # read by f: a changed value must reach every built derivative


def f(x):
    y = np.sin(x) * x * SCALE
    return np.sum(y * y), np.cos(x) * SCALE


def f_value(x):
    return f(x)[0]


def closed_hessian(x):
    """d2/dx2 of sum((s x sin x)**2): 2 s**2 (u'**2 + u u'') on the diagonal."""
    u, du = np.sin(x) * x, np.cos(x) * x + np.sin(x)
    ddu = 2 * np.cos(x) - x * np.sin(x)
    return np.diag(2 * SCALE ** 2 * (du * du + u * ddu))


def aux_at(x):
    return np.cos(x) * SCALE


G = ms.grad(f, has_aux=True)
POINTS = [np.array([0.3, 0.7, 1.1]), np.array([-0.4, 1.3, 2.0, 0.5])]


@pytest.fixture(params=[(POINTS[0], 1.0), (POINTS[1], 1.7)], ids=["first", "changed"])
def point(request):
    """Two calls of the same objects: another x, another SCALE."""
    global SCALE
    x, SCALE = request.param
    yield x
    SCALE = 1.0


def gradient_of_value(x):
    return ms.grad(f_value)(x)


def test_grad_and_value_and_grad_of_a_grad_with_aux(point):
    x = point
    second, aux = ms.grad(G, has_aux=True)(x)
    want = closed_hessian(x).sum(axis=0)
    np.testing.assert_allclose(second, want, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(second, numerical_grad(lambda t: np.sum(gradient_of_value(t)),
                                                      (x,)), rtol=1e-6, atol=1e-7)
    assert type(aux) is tuple and len(aux) == 1 and type(aux[0]) is tuple
    np.testing.assert_allclose(aux[0][0], aux_at(x), rtol=1e-14)
    (first, inner_aux), again = ms.value_and_grad(G, has_aux=True)(x)
    np.testing.assert_allclose(first, gradient_of_value(x), rtol=1e-12)
    np.testing.assert_allclose(inner_aux[0], aux_at(x), rtol=1e-14)
    np.testing.assert_allclose(again, want, rtol=1e-10, atol=1e-12)
    # the hand-composed spelling: a function calling the gradient, differentiated alike
    hand, hand_aux = ms.grad(lambda t: (G(t)[0], G(t)[1]), has_aux=True)(x)
    np.testing.assert_allclose(hand, second, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(hand_aux[0][0], aux_at(x), rtol=1e-14)


@pytest.mark.parametrize("transform", ["jacfwd", "jacrev"])
def test_jacobians_of_a_grad_with_aux(point, transform):
    x = point
    jac, aux = getattr(ms, transform)(G, has_aux=True)(x)
    np.testing.assert_allclose(jac, closed_hessian(x), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(jac, numerical_jacobian(gradient_of_value, (x,)),
                               rtol=1e-6, atol=1e-7)
    assert type(aux) is tuple and len(aux) == 1      # grad's aux, passed out as it is
    np.testing.assert_allclose(aux[0], aux_at(x), rtol=1e-14)


def test_jvp_and_vjp_of_a_grad_with_aux(point):
    x = point
    v = np.linspace(0.5, 1.5, x.size)
    out, tangent, aux = ms.jvp(G, (x,), (v,), has_aux=True)
    np.testing.assert_allclose(out, gradient_of_value(x), rtol=1e-12)
    np.testing.assert_allclose(tangent, closed_hessian(x) @ v, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(aux[0], aux_at(x), rtol=1e-14)
    out, pullback, aux = ms.vjp(G, x, has_aux=True)
    np.testing.assert_allclose(out, gradient_of_value(x), rtol=1e-12)
    (pulled,) = pullback(v)         # a gradient per input, as vjp gives them
    np.testing.assert_allclose(pulled, v @ closed_hessian(x), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(aux[0], aux_at(x), rtol=1e-14)


def test_hessian_with_aux(point):
    x = point
    hess, aux = ms.hessian(f, has_aux=True)(x)
    np.testing.assert_allclose(hess, closed_hessian(x), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(hess, ms.hessian(f_value)(x), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(aux, aux_at(x), rtol=1e-14)     # jacfwd's aux: f's second
    third, aux = ms.hessian(G, has_aux=True)(x)        # of the gradient: third derivative
    np.testing.assert_allclose(
        third, numerical_jacobian(lambda t: ms.hessian(f_value)(t), (x,)),
        rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(aux[0], aux_at(x), rtol=1e-14)


def test_a_grad_with_aux_called_inside_and_vmapped(point):
    x = point
    inside = ms.grad(lambda t: G(t)[0].sum())(x)
    np.testing.assert_allclose(inside, closed_hessian(x).sum(axis=0), rtol=1e-10,
                               atol=1e-12)
    # the aux read inside is differentiated as the function it is (JAX's semantics)
    read = ms.grad(lambda t: np.sum(G(t)[1][0] * G(t)[0]))(x)
    np.testing.assert_allclose(read, numerical_grad(
        lambda t: np.sum(aux_at(t) * gradient_of_value(t)), (x,)), rtol=1e-6, atol=1e-7)
    rows = np.stack([x, x + 0.25])
    grads, (auxes,) = ms.vmap(G)(rows)
    for k, r in enumerate(rows):
        np.testing.assert_allclose(grads[k], gradient_of_value(r), rtol=1e-12)
        np.testing.assert_allclose(auxes[k], aux_at(r), rtol=1e-14)


def test_three_deep_with_aux_at_each_level(point):
    x = point
    gg = ms.grad(G, has_aux=True)
    third, aux = ms.grad(gg, has_aux=True)(x)
    want = numerical_grad(lambda t: np.sum(ms.hessian(f_value)(t)), (x,))
    np.testing.assert_allclose(third, want, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(aux[0][0][0], aux_at(x), rtol=1e-14)


def test_jit_and_vmap_of_a_has_aux_composition(point):
    x = point
    gg = ms.grad(G, has_aux=True)
    want, _ = gg(x)
    jitted, aux = ms.jit(lambda t: ms.grad(G, has_aux=True)(t))(x)
    np.testing.assert_allclose(jitted, want, rtol=1e-12)
    np.testing.assert_allclose(aux[0][0], aux_at(x), rtol=1e-14)
    rows = np.stack([x, x - 0.5])
    batched, ((auxes,),) = ms.vmap(gg)(rows)
    for k, r in enumerate(rows):
        np.testing.assert_allclose(batched[k], closed_hessian(r).sum(axis=0), rtol=1e-10,
                                   atol=1e-12)
        np.testing.assert_allclose(auxes[k], aux_at(r), rtol=1e-14)


def test_has_aux_over_an_object_of_one_output_names_it():
    from s2sgrad.errors import DerivativeCompositionError
    plain = ms.grad(f_value)
    for make in (lambda: ms.grad(plain, has_aux=True)(POINTS[0]),
                 lambda: ms.jacfwd(plain, has_aux=True)(POINTS[0]),
                 lambda: ms.vjp(plain, POINTS[0], has_aux=True)):
        with pytest.raises(DerivativeCompositionError, match="returns one value") as info:
            make()
        assert "f_value" in str(info.value) and "leave out has_aux" in str(info.value)


@pytest.mark.parametrize("inner", ["jacfwd", "jacrev"])
def test_jacobian_objects_with_aux_differentiated_again(point, inner):
    """A has_aux Jacobian is the function x -> (J, aux): with has_aux outside the aux
    passes out; without, it is differentiated too (a jacrev's code dropped its aux:
    jacfwd(jacrev(f, has_aux=True)) gave the Hessian alone)."""
    x = point
    jac = getattr(ms, inner)(f, has_aux=True)
    hess, aux = ms.jacfwd(jac, has_aux=True)(x)
    np.testing.assert_allclose(hess, closed_hessian(x), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(aux, aux_at(x), rtol=1e-14)
    hess, aux_jacobian = ms.jacfwd(jac)(x)
    np.testing.assert_allclose(hess, closed_hessian(x), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(aux_jacobian, numerical_jacobian(aux_at, (x,)), rtol=1e-6,
                               atol=1e-8)
    summed, (aux,) = ms.grad(jac, has_aux=True)(x)
    np.testing.assert_allclose(summed, closed_hessian(x).sum(axis=0), rtol=1e-10,
                               atol=1e-12)
    np.testing.assert_allclose(aux, aux_at(x), rtol=1e-14)
