"""Every transform of every transform, to depth 3: a derivative or a clear refusal, never
a derivative of a lower order (issue 19, item 1).

``grad(grad(grad(s)))`` once returned s' (the front end followed the derivative object's
``__wrapped__`` back to the user's function); ``jacfwd(jacfwd(F))`` returned F's
gradient.  Here every chain of grad, jacfwd, jacrev and hessian to depth 3 (and jvp and
value_and_grad over depth-2 chains) is applied to scalar functions whose derivatives of
every order are known in closed form; each result must equal the closed form, or the
chain must raise DerivativeCompositionError / GradientArgumentError.  The chains s2sgrad
builds today must keep being built (a test that passes by refusing everything fails).
"""
import itertools

import numpy as np
import pytest

import s2sgrad as ms
from s2sgrad.errors import DerivativeCompositionError, GradientArgumentError

T = 0.4
ORDER = {"grad": 1, "jacfwd": 1, "jacrev": 1, "hessian": 2}
TRANSFORMS = {"grad": ms.grad, "jacfwd": ms.jacfwd, "jacrev": ms.jacrev, "hessian": ms.hessian}


def exp2(t):
    return np.exp(2.0 * t)


def sin3(t):
    return np.sin(3.0 * t)


#: the n-th derivative of each function, in closed form
DERIVATIVE = {exp2: lambda n, t: 2.0 ** n * np.exp(2.0 * t),
              sin3: lambda n, t: 3.0 ** n * np.sin(3.0 * t + n * np.pi / 2)}
CHAINS = [c for depth in (1, 2, 3) for c in itertools.product(TRANSFORMS, repeat=depth)]
#: chains s2sgrad must build (they were right before this test and must stay so)
BUILT = {("grad",), ("jacfwd",), ("jacrev",), ("hessian",), ("grad", "grad"),
         ("jacfwd", "grad"), ("jacfwd", "jacrev"), ("hessian",)}


def _apply(chain, f):
    for name in reversed(chain):           # the last named is applied first
        f = TRANSFORMS[name](f)
    return f


def _outcome(run, want):
    """'built' when ``run()`` gives ``want``, 'refused' on a clear refusal; a wrong value
    fails the test."""
    try:
        got = run()
    except (DerivativeCompositionError, GradientArgumentError):
        return "refused"
    np.testing.assert_allclose(np.ravel(np.asarray(got, dtype=float)), np.ravel(want),
                               rtol=1e-7, atol=1e-9)
    return "built"


@pytest.mark.parametrize("f", [exp2, sin3], ids=["exp2", "sin3"])
@pytest.mark.parametrize("chain", CHAINS, ids=["(".join(c) for c in CHAINS])
def test_a_chain_is_its_derivative_or_refused(chain, f):
    want = DERIVATIVE[f](sum(ORDER[c] for c in chain), T)
    outcome = _outcome(lambda: _apply(chain, f)(T), want)
    if chain in BUILT:
        assert outcome == "built"


@pytest.mark.parametrize("chain", [c for c in CHAINS if len(c) <= 2],
                         ids=["(".join(c) for c in CHAINS if len(c) <= 2])
def test_jvp_and_value_and_grad_over_a_chain(chain):
    order = sum(ORDER[c] for c in chain)
    want = DERIVATIVE[sin3](order + 1, T)
    _outcome(lambda: ms.jvp(_apply(chain, sin3), (T,), (1.0,))[1], want)
    _outcome(lambda: ms.value_and_grad(_apply(chain, sin3))(T)[1], want)


def test_a_decorator_that_does_more_than_call_is_differentiated_as_written():
    import functools

    def doubled(f):
        @functools.wraps(f)
        def wrapper(t):
            return 2.0 * f(t)
        return wrapper

    @doubled
    def square(t):
        return t * t
    assert ms.grad(square)(1.5) == pytest.approx(6.0)      # not 3.0: the wrapper counts


@pytest.mark.parametrize("make, words", [
    (lambda: ms.grad(ms.grad(ms.grad(sin3)))(T), ["sin3_grad_grad", "GradOfGradFunction",
                                                  "hessian(f)"]),
    (lambda: ms.jacfwd(ms.jacfwd(sin3))(T), ["sin3_jacfwd", "JacfwdFunction",
                                             "jacfwd(jacrev(f))"]),
    (lambda: ms.grad(ms.hessian(sin3))(T), ["HessianFunction", "grad(grad(f))"]),
])
def test_a_refused_composition_names_the_object_and_what_to_write(make, words):
    with pytest.raises(DerivativeCompositionError) as info:
        make()
    for word in words:
        assert word in str(info.value), (word, str(info.value))
