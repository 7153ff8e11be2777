"""vmap of a grad object of a loop-free function: one gradient call of the sum of the
function's vectorised form (api/vmap_grad.py), each example's gradient in its row (an
unmapped differentiated argument copied per example), equal to the loop of grad calls
and to central differences, for later calls of other sizes, and under other transforms."""
import numpy as np
import pytest

import s2sgrad as ms
from s2sgrad.testing import check_grad, numerical_grad

RNG = np.random.default_rng(21)
W = RNG.standard_normal((3, 2))
X = RNG.standard_normal((4, 3))
Y = RNG.standard_normal((4, 2))


def loss(w, x, y):
    z = np.tanh(x @ w)
    m = np.max(z)
    return np.sum((z - y) ** 2) + m * np.mean(x)


def per_example(grad, args, in_axes):
    """The loop of ``grad`` calls and central differences, per example, stacked."""
    n = [a.shape[ax] for a, ax in zip(args, in_axes) if ax is not None][0]
    rows, fd = [], []
    for b in range(n):
        example = [a if ax is None else np.take(a, b, axis=ax) for a, ax in zip(args, in_axes)]
        got = grad(*example)
        rows.append(got if isinstance(got, tuple) else (got,))
        fd.append(tuple(numerical_grad(loss, example, p) for p in grad.positions))
    return [np.stack(r) for r in zip(*rows)], [np.stack(r) for r in zip(*fd)]


CASES = {       # grad positions, in_axes
    "weights (unmapped: copied per example)": ((0,), (None, 0, 0)),
    "mapped inputs, x along axis 1": ((1, 2), (None, 1, 0)),
    "all": ((0, 1, 2), (None, 0, 0)),
}
VMAPS = {name: ms.vmap(ms.grad(loss, pos), in_axes=axes) for name, (pos, axes) in
         CASES.items()}


@pytest.mark.parametrize("name", sorted(CASES))
def test_per_example_gradients_are_one_batched_gradient(name):
    positions, axes = CASES[name]
    v = VMAPS[name]
    for w, x, y in [(W, X, Y), (W[:2], X[:3, :2], Y[:3])]:     # another batch and shape
        x = x.T.copy() if axes[1] == 1 else x
        got = v(w, x, y)
        got = got if isinstance(got, tuple) else (got,)    # grad(loss, (0,)): one array
        assert v.form == "vectorised" and "Batched gradient form" in v.source
        loop, fd = per_example(ms.grad(loss, positions), (w, x, y), axes)
        for g, want, diff in zip(got, loop, fd):
            np.testing.assert_allclose(g, want, rtol=1e-12, atol=1e-12)
            np.testing.assert_allclose(g, diff, rtol=1e-6, atol=1e-8)


def test_out_axes_and_transforms_of_it():
    v = ms.vmap(ms.grad(loss, 1), in_axes=(None, 0, 0), out_axes=1)
    want = np.stack([ms.grad(loss, 1)(W, X[b], Y[b]) for b in range(4)], axis=1)
    np.testing.assert_allclose(v(W, X, Y), want, rtol=1e-12, atol=1e-12)
    batched = VMAPS["weights (unmapped: copied per example)"]
    # grad of a function of the per-example gradients (the loop form, differentiated)
    check_grad(lambda w: np.sum(batched(w, X, Y) ** 2), (W,))
    np.testing.assert_allclose(ms.jit(lambda w: batched(w, X, Y))(W), batched(W, X, Y),
                               rtol=1e-12, atol=1e-12)
    twice = ms.vmap(lambda xs, ys: batched(W, xs, ys))(X.reshape(2, 2, 3), Y.reshape(2, 2, 2))
    np.testing.assert_allclose(twice.reshape(4, 3, 2), batched(W, X, Y), rtol=1e-12,
                               atol=1e-12)


def two_sums(w, x):
    return np.sum(np.sin(w * x)), np.sum(x * w, axis=0) * 2.0


def test_a_function_of_several_outputs_keeps_the_loop():
    v = ms.vmap(ms.grad(two_sums, 1), in_axes=(None, 0))
    want = np.stack([ms.grad(two_sums, 1)(W[:, 0], x) for x in X])
    np.testing.assert_allclose(v(W[:, 0], X), want, rtol=1e-12, atol=1e-12)
    assert v.form == "python" and "returns a tuple" in v.not_vectorised


GRADIENT = ms.grad(loss)


def per_example_by_closure(w, xs, ys):
    """JAX's spelling: the gradient called in a lambda, the weights read from here."""
    return ms.vmap(lambda x, y: ms.grad(loss, 0)(w, x, y))(xs, ys)


def test_a_gradient_called_in_the_mapped_function_is_batched():
    for w in (W, 2.0 * W):          # a new lambda per call, reading this call's w
        want = np.stack([GRADIENT(w, X[b], Y[b]) for b in range(4)])
        np.testing.assert_allclose(per_example_by_closure(w, X, Y), want, rtol=1e-12,
                                   atol=1e-12)
    v = ms.vmap(lambda x, y: GRADIENT(W, x, y))
    np.testing.assert_allclose(v(X, Y), np.stack([GRADIENT(W, X[b], Y[b]) for b in range(4)]),
                               rtol=1e-12, atol=1e-12)
    assert v.form == "vectorised" and "Batched gradient form" in v.source
    jac = ms.vmap(lambda x, y: ms.jacfwd(loss, 1)(W, x, y))     # not a gradient: the loop
    np.testing.assert_allclose(jac(X, Y), np.stack([ms.jacfwd(loss, 1)(W, X[b], Y[b])
                                                    for b in range(4)]), rtol=1e-12)
    assert jac.form == "python"


# ---------------------------------------------------------------- vmap of jacfwd

def features(w, x):
    return np.tanh(x @ w) * np.sum(x ** 2)


# w copied per example: a batched matrix times a batched vector (np.einsum in the
# vectorised form); x along axis 1: np.moveaxis there
@pytest.mark.parametrize("position, in_axes", [(1, (None, 0)), (0, (None, 1))])
def test_per_example_jacobians_are_one_batched_sweep(position, in_axes):
    from s2sgrad.testing import numerical_jacobian
    jac = ms.jacfwd(features, position)
    v = ms.vmap(jac, in_axes=in_axes)
    for xs in (X, X[:2]):                      # another batch size: the same code
        args = (W, xs if in_axes[1] == 0 else xs.T.copy())
        got = v(*args)
        assert v.form == "vectorised" and "Batched Jacobian form" in v.source
        want = np.stack([jac(W, x) for x in xs])
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
        fd = np.stack([numerical_jacobian(features, (W, x), position) for x in xs])
        np.testing.assert_allclose(got, fd, rtol=1e-6, atol=1e-8)


def test_per_example_values_and_gradients():
    vg = ms.value_and_grad(loss, (0, 1))
    v = ms.vmap(vg, in_axes=(None, 0, 0))
    values, (gw, gx) = v(W, X, Y)
    assert v.form == "vectorised"
    rows = [vg(W, X[b], Y[b]) for b in range(4)]
    np.testing.assert_allclose(values, [r[0] for r in rows], rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(gw, np.stack([r[1][0] for r in rows]), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(gx, np.stack([r[1][1] for r in rows]), rtol=1e-12, atol=1e-12)


def test_the_recognised_functions_are_kept_in_a_bounded_cache(monkeypatch):
    from s2sgrad.api import vmap_body, vmap_grad, vmap_jvp
    monkeypatch.setattr(vmap_body, "KEPT_CODES", 3)
    made = [eval(f"lambda x, y: GRADIENT(W, x, y) * {k}") for k in range(6)]   # 6 codes
    for fn in made:
        vmap_grad.recognised_call(fn)
        vmap_jvp.recognised(fn)
    assert len(vmap_grad._CALLS) <= 3 and len(vmap_jvp._RECOGNISED) <= 3
    v = ms.vmap(lambda x, y: GRADIENT(W, x, y))        # read again after the evictions
    np.testing.assert_allclose(v(X, Y), np.stack([GRADIENT(W, X[b], Y[b]) for b in range(4)]),
                               rtol=1e-12, atol=1e-12)
    assert v.form == "vectorised"



ACT = np.tanh
XA = np.random.default_rng(5).normal(size=(4, 3))
SLOPE = {np.tanh: lambda x: 1 - np.tanh(x) ** 2, np.sin: np.cos}


def acted(x):
    return np.sum(ACT(x) * x)


def acted_tangent(v):
    return ms.jvp(lambda t: acted(t), (XA[0],), (v,))[1]


def acted_gradient(x):
    return ms.grad(acted)(x)


def _acted_grad(x, act):
    return SLOPE[act](x) * x + act(x)


@pytest.mark.parametrize("make, want", [
    (lambda: ms.vmap(acted), lambda act: np.sum(act(XA) * XA, axis=1)),
    (lambda: ms.vmap(ms.grad(acted)), lambda act: _acted_grad(XA, act)),
    (lambda: ms.vmap(ms.jacfwd(acted)), lambda act: _acted_grad(XA, act)),
    (lambda: ms.vmap(ms.jacrev(acted)), lambda act: _acted_grad(XA, act)),
    (lambda: ms.vmap(acted_gradient), lambda act: _acted_grad(XA, act)),
    (lambda: ms.vmap(acted_tangent), lambda act: XA @ _acted_grad(XA[0], act))],
    ids=["fn", "grad", "jacfwd", "jacrev", "grad_call", "jvp"])
def test_a_rebound_global_the_function_calls_is_read_at_the_next_call(make, want):
    # the vectorised form writes what a name called was at its build (np.tanh for ACT):
    # a later ACT = np.sin was not seen by vmap(f) nor, once batched, by vmap(grad(f))
    global ACT
    v = make()
    try:
        for act in (np.tanh, np.sin, np.tanh):
            ACT = act
            np.testing.assert_allclose(v(XA), want(act), rtol=1e-12, err_msg=str(act))
            # (the jvp spelling, a primal read from outside, is the loop: values only)
            assert v.form == "vectorised" or v.name == "acted_tangent", v.not_vectorised
    finally:
        ACT = np.tanh


def test_vmap_of_a_library_functions_gradient_is_the_loop_of_it():
    # grad(scipy.special.logsumexp) is the gradient of a wrapper whose body calls the
    # library function: vmap read that call as a batched form and differentiated vmap's
    # own helper (UnsupportedConstructError naming s2sgrad's api/vmap_body.py)
    from scipy.special import logsumexp
    xs = np.random.default_rng(3).normal(size=(4, 3))
    for fn in (ms.grad(logsumexp), ms.jacfwd(np.sin)):
        got = ms.vmap(fn)(xs)
        np.testing.assert_allclose(got, np.stack([fn(x) for x in xs]), rtol=1e-12)


PARAMS = {"w": W}       # the weights read from a module global, not an argument
SCALE = 1.0


@pytest.mark.parametrize("spelling", ["global subscript", "global expression"])
def test_a_gradient_called_on_an_expression_of_globals_is_batched(spelling):
    """Before: an argument other than a (dotted) name (``PARAMS["w"]``, ``W * SCALE``)
    was not recognised: the loop ran (form 'python').  Read at every call: a global
    changed between calls gives the new weights' gradients."""
    global SCALE
    v = ms.vmap(lambda x, y: GRADIENT(PARAMS["w"], x, y)) if spelling == "global subscript" \
        else ms.vmap(lambda x, y: GRADIENT(W * SCALE, x, y))
    try:
        for scale in (1.0, 2.5):
            SCALE, PARAMS["w"] = scale, W * scale
            got = v(X, Y)
            assert v.form == "vectorised", spelling
            w = W * scale
            np.testing.assert_allclose(got, np.stack([GRADIENT(w, X[b], Y[b])
                                                      for b in range(4)]),
                                       rtol=1e-12, atol=1e-12)
            np.testing.assert_allclose(got[1], numerical_grad(loss, (w, X[1], Y[1]), 0),
                                       rtol=1e-6, atol=1e-8)
    finally:
        SCALE, PARAMS["w"] = 1.0, W
