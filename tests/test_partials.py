"""Every transform of a ``functools.partial`` made outside any differentiated function
(``grad(partial(loss, data=X))``, JAX's spelling for fixing data): the partial's own
positions, keyword-bound values as arguments (overridable, read at each call), bound
values read at each call, and compositions (grad of grad, jvp of grad, vmap, jit),
checked against central finite differences."""
import functools

import numpy as np
import pytest

import s2sgrad
from s2sgrad.testing import numerical_grad, numerical_jacobian

RNG = np.random.default_rng(0)
X = RNG.normal(size=4)
W = RNG.normal(size=4)
DATA = RNG.normal(size=4)


def loss(w, data, scale=2.0):
    return scale * np.sum(np.tanh(w * data) ** 2) + np.sum(w ** 3)


def loop_loss(w, data):
    total = 0.0
    for i in range(w.shape[0]):
        total = total + np.sin(w[i] * data[i]) * w[i]
    return total


SPELLINGS = {
    "keyword": (functools.partial(loss, data=DATA), lambda w: loss(w, DATA)),
    "keyword and default": (functools.partial(loss, data=DATA, scale=0.5),
                            lambda w: loss(w, DATA, 0.5)),
    "positional, the data first": (functools.partial(lambda d, w: loss(w, d), DATA),
                                   lambda w: loss(w, DATA)),
    "nested partials": (functools.partial(functools.partial(loss, scale=3.0), data=DATA),
                        lambda w: loss(w, DATA, 3.0)),
}


@pytest.mark.parametrize("spelling", SPELLINGS)
def test_grad_of_a_partial_is_the_gradient_of_what_it_calls(spelling):
    partial, plain = SPELLINGS[spelling]
    got = s2sgrad.grad(partial)(W)
    np.testing.assert_allclose(got, numerical_grad(plain, (W,)), rtol=1e-6, atol=1e-8)
    value, again = s2sgrad.value_and_grad(partial)(W)
    np.testing.assert_allclose(value, plain(W), rtol=1e-12)
    np.testing.assert_allclose(again, got, rtol=1e-12)


def test_positions_count_as_for_the_partial():
    """partial(f, a) differentiates f's second argument at position 0."""
    partial = functools.partial(loss, W)       # w bound: position 0 is data
    got = s2sgrad.grad(partial)(DATA)
    np.testing.assert_allclose(got, numerical_grad(lambda d: loss(W, d), (DATA,)),
                               rtol=1e-6, atol=1e-8)
    both = s2sgrad.grad(functools.partial(loss, scale=1.5), (0, 1))(W, DATA)
    np.testing.assert_allclose(both[1], numerical_grad(lambda d: loss(W, d, 1.5), (DATA,)),
                               rtol=1e-6, atol=1e-8)


def test_keyword_bound_values_are_read_at_each_call_and_can_be_overridden():
    data = DATA.copy()
    partial = functools.partial(loss, data=data)
    g = s2sgrad.grad(partial)
    first = g(W)
    data *= 2.0                                  # the bound array changed in place
    np.testing.assert_allclose(g(W), numerical_grad(lambda w: loss(w, 2 * DATA), (W,)),
                               rtol=1e-6, atol=1e-8)
    assert not np.allclose(first, g(W))
    other = RNG.normal(size=4)
    np.testing.assert_allclose(g(W, data=other),
                               numerical_grad(lambda w: loss(w, other), (W,)),
                               rtol=1e-6, atol=1e-8)


def test_positionally_bound_values_are_read_at_each_call():
    data = DATA.copy()
    g = s2sgrad.grad(functools.partial(lambda d, w: loss(w, d), data))
    g(W)
    data[:] = -1.0
    np.testing.assert_allclose(g(W), numerical_grad(lambda w: loss(w, -np.ones(4)), (W,)),
                               rtol=1e-6, atol=1e-8)


def test_a_fresh_partial_per_call_gets_its_own_values():
    """A new partial object each step (a training loop's spelling) with new data: each
    call's gradient is of its own data, never the first call's."""
    for step in range(3):
        data = DATA + step
        got = s2sgrad.grad(functools.partial(loss, data=data))(W)
        np.testing.assert_allclose(got, numerical_grad(lambda w: loss(w, data), (W,)),
                                   rtol=1e-6, atol=1e-8)


def test_forward_modes_vmap_and_jit_of_a_partial():
    partial = functools.partial(loss, data=DATA)
    plain = lambda w: loss(w, DATA)  # noqa: E731
    v = RNG.normal(size=4)
    value, tangent = s2sgrad.jvp(partial, (W,), (v,))
    np.testing.assert_allclose(value, plain(W), rtol=1e-12)
    np.testing.assert_allclose(tangent, numerical_grad(plain, (W,)) @ v, rtol=1e-6)
    value, pullback = s2sgrad.vjp(partial, W)
    np.testing.assert_allclose(pullback(1.0)[0], numerical_grad(plain, (W,)), rtol=1e-6)
    hessian = s2sgrad.hessian(partial)(W)
    expected = numerical_jacobian(lambda w: s2sgrad.grad(plain)(w), (W,))
    np.testing.assert_allclose(hessian, expected, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(s2sgrad.hvp(partial, (W,), (v,))[0], expected @ v,
                               rtol=1e-5, atol=1e-7)
    elementwise = functools.partial(np.multiply, 3.0)
    np.testing.assert_allclose(s2sgrad.jacfwd(lambda w: np.sin(elementwise(w)))(W),
                               np.diag(3 * np.cos(3 * W)), rtol=1e-12)
    rows = s2sgrad.vmap(partial)(np.stack([W, 2 * W]))
    np.testing.assert_allclose(rows, [plain(W), plain(2 * W)], rtol=1e-12)
    np.testing.assert_allclose(s2sgrad.jit(partial)(W), plain(W), rtol=1e-12)


def test_derivatives_of_derivatives_of_a_partial():
    partial = functools.partial(loss, data=DATA, scale=0.7)
    plain = lambda w: loss(w, DATA, 0.7)  # noqa: E731
    g = s2sgrad.grad(partial)
    hessian = numerical_jacobian(s2sgrad.grad(plain), (W,))
    np.testing.assert_allclose(s2sgrad.jacfwd(g)(W), hessian, rtol=1e-5, atol=1e-7)
    v = RNG.normal(size=4)
    np.testing.assert_allclose(s2sgrad.jvp(g, (W,), (v,))[1], hessian @ v,
                               rtol=1e-5, atol=1e-7)
    # a partial of a derivative object, and grad of that (third order along v)
    directional = functools.partial(lambda v, w: s2sgrad.grad(plain)(w) @ v, v)
    np.testing.assert_allclose(s2sgrad.grad(directional)(W), hessian @ v,
                               rtol=1e-5, atol=1e-7)


def test_a_partial_of_a_loop_under_numba():
    partial = functools.partial(loop_loss, data=DATA)
    g = s2sgrad.grad(partial)
    np.testing.assert_allclose(g(W), numerical_grad(lambda w: loop_loss(w, DATA), (W,)),
                               rtol=1e-6, atol=1e-8)
    assert g.backend == "numba", g.fallback_reason


class Model:
    def __init__(self, scale):
        self.scale = scale

    def loss(self, w, data):
        return self.scale * np.sum(np.cos(w) * data)


def test_a_partial_of_a_method_and_one_called_inside_a_differentiated_function():
    model = Model(1.5)
    got = s2sgrad.grad(functools.partial(model.loss, data=DATA))(W)
    np.testing.assert_allclose(got, -1.5 * np.sin(W) * DATA, rtol=1e-12)
    data = DATA.copy()
    inner = functools.partial(loss, data=data)
    g = s2sgrad.grad(lambda w: 2.0 * inner(w) + np.sum(w))
    g(W)
    data += 1.0                        # read at each call, also through the inner partial
    np.testing.assert_allclose(
        g(W), numerical_grad(lambda w: 2.0 * loss(w, DATA + 1.0) + np.sum(w), (W,)),
        rtol=1e-6, atol=1e-8)


def keyword_only(w, *, data=DATA, scale=2.0):
    return scale * np.sum(np.sin(w * data))


@pytest.mark.parametrize("transform", ["grad", "jvp", "hvp", "hessian", "jacfwd", "vmap"])
def test_every_transform_of_a_function_with_keyword_only_parameters(transform):
    """What a keyword-bound partial gives (its bound values as keyword-only parameters),
    written by hand: hvp called the function with them positionally."""
    plain = lambda w: 2.0 * np.sum(np.sin(w * DATA))  # noqa: E731
    gradient = numerical_grad(plain, (W,))
    hessian = numerical_jacobian(s2sgrad.grad(plain), (W,))
    got, expected = {
        "grad": lambda: (s2sgrad.grad(keyword_only)(W), gradient),
        "jvp": lambda: (s2sgrad.jvp(keyword_only, (W,), (W,))[1], gradient @ W),
        "hvp": lambda: (s2sgrad.hvp(keyword_only, W, W), hessian @ W),
        "hessian": lambda: (s2sgrad.hessian(keyword_only)(W), hessian),
        "jacfwd": lambda: (s2sgrad.jacfwd(keyword_only)(W), gradient),
        "vmap": lambda: (s2sgrad.vmap(keyword_only)(np.stack([W, W])),
                         [plain(W), plain(W)]),
    }[transform]()
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-7)


def test_a_derivative_of_a_partial_pickles():
    import pickle
    g = s2sgrad.grad(functools.partial(loss, data=DATA))
    expected = g(W)
    np.testing.assert_allclose(pickle.loads(pickle.dumps(g))(W), expected, rtol=1e-12)


def test_a_partial_whose_source_cannot_be_read_names_what_it_wraps():
    with pytest.raises(s2sgrad.errors.S2sgradError, match="partial"):
        s2sgrad.grad(functools.partial(max, 1.0))(2.0)


def test_a_partial_made_outside_transformed_inside_a_differentiated_or_jitted_function():
    """jvp/grad of a partial written inside the function being differentiated or jitted:
    the partial's keyword-bound values are its closure there (the call passes the
    primals only), read at each call."""
    data = DATA.copy()
    partial = functools.partial(loss, data=data)
    v = RNG.normal(size=4)
    reverse_over_forward = s2sgrad.grad(lambda w: s2sgrad.jvp(partial, (w,), (v,))[1])
    expected = s2sgrad.hvp(lambda w: loss(w, data), W, v)
    np.testing.assert_allclose(reverse_over_forward(W), expected, rtol=1e-10, atol=1e-12)
    jitted = s2sgrad.jit(lambda w: s2sgrad.grad(partial)(w))
    np.testing.assert_allclose(jitted(W), s2sgrad.grad(lambda w: loss(w, data))(W),
                               rtol=1e-12)
    data *= -0.5
    np.testing.assert_allclose(jitted(W), numerical_grad(lambda w: loss(w, data), (W,)),
                               rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(reverse_over_forward(W),
                               s2sgrad.hvp(lambda w: loss(w, data), W, v),
                               rtol=1e-10, atol=1e-12)


def with_default(w, scale=2.0):
    return scale * np.sum(np.sin(w) ** 2)


def test_derivatives_of_a_function_with_defaults_called_inside_take_the_defaults():
    """grad(f)(w) and jvp(f, (w,), (v,)) inside a jitted or differentiated function, of
    an f with a parameter left to its default: its code takes every parameter (was: "a
    call that does not match f_grad(a0, a1)")."""
    gradient = s2sgrad.grad(with_default)
    np.testing.assert_allclose(s2sgrad.jit(lambda w: gradient(w))(W), gradient(W),
                               rtol=1e-12)
    v = RNG.normal(size=4)
    np.testing.assert_allclose(
        s2sgrad.grad(lambda w: s2sgrad.jvp(with_default, (w,), (v,))[1])(W),
        s2sgrad.hvp(with_default, W, v), rtol=1e-10, atol=1e-12)
