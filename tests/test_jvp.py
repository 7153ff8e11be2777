"""Forward mode: s2sgrad.jvp and s2sgrad.jacfwd against central finite differences in
float64, under both backends; return structures; errors; the generated code.

The control-flow functions are those of tests/test_control_flow.py (branches, for and
while loops, break/continue, in-place updates, lists, returns inside loops); each is
differentiated along a random direction of its differentiated arguments.
"""
import re

import numpy as np
import pytest

import s2sgrad
from s2sgrad import nn, ops
from s2sgrad.api.forward import forward_function
from s2sgrad.errors import GradientArgumentError, GradientTypeError, MissingRuleError
from examples_loader import load_functional_autodiff
from test_control_flow import CASES as FLOW_CASES

EPS = 1e-6


def _positions(positions):
    return (positions,) if isinstance(positions, int) else tuple(positions)


def _direction(value, rng):
    if isinstance(value, np.ndarray):
        return rng.uniform(-1.0, 1.0, size=value.shape)
    return float(rng.uniform(-1.0, 1.0))


def _leaves(value):
    if isinstance(value, (tuple, list)):
        return [leaf for item in value for leaf in _leaves(item)]
    return [np.asarray(value, dtype=np.float64)]


def _moved(args, positions, v, step):
    moved = list(args)
    for p, t in zip(positions, v):
        moved[p] = args[p] + step * t
    return moved


def central(fn, args, positions, v):
    """The directional derivative of fn at args along v by central differences."""
    plus = _leaves(fn(*_moved(args, positions, v, EPS)))
    minus = _leaves(fn(*_moved(args, positions, v, -EPS)))
    return [(a - b) / (2 * EPS) for a, b in zip(plus, minus)]


def run_jvp(fn, args, positions, v):
    tangents = [None] * len(args)
    for p, t in zip(positions, v):
        tangents[p] = t
    forward = forward_function(fn, positions, False, False)
    return forward, forward.jvp_call(tuple(args), tuple(tangents))


@pytest.fixture(params=["auto", "python"])
def backend(request, monkeypatch):
    monkeypatch.setenv("S2SGRAD_BACKEND", request.param)
    return request.param


# ------------------------------------------------------------ values


@pytest.mark.parametrize("fn, args, positions", FLOW_CASES,
                         ids=[f"{c[0].__name__}-{i}" for i, c in enumerate(FLOW_CASES)])
def test_control_flow_jvp_matches_finite_differences(fn, args, positions, backend):
    positions = _positions(positions)
    rng = np.random.default_rng(3)
    v = [_direction(args[p], rng) for p in positions]
    before = [np.copy(a) if isinstance(a, np.ndarray) else a for a in args]
    forward, (out, tangent) = run_jvp(fn, args, positions, v)
    for got, want in zip(_leaves(tangent), central(fn, args, positions, v)):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-7)
    for got, want in zip(_leaves(out), _leaves(fn(*args))):
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    for a, b in zip(args, before):   # the caller's arrays are never written
        np.testing.assert_array_equal(a, b)


def scalar_loop(x, a):
    """An R^n -> R^n scalar loop with a branch and a while loop with break."""
    out = np.zeros(x.shape[0])
    s = 0.0
    for i in range(x.shape[0]):
        if x[i] > 0.0:
            s = s * a + np.sin(x[i])
        else:
            s = s - x[i] * x[i]
        k = 0
        while True:
            s = 0.5 * s + 0.1 * a
            k += 1
            if k >= 2:
                break
        out[i] = s * x[i]
    return out


def array_code(w, x):
    h = np.tanh(x @ w)
    z = np.concatenate([h, h ** 2], axis=1)
    m = np.max(z, axis=1, keepdims=True)
    p = np.exp(z - m) / np.sum(np.exp(z - m), axis=1, keepdims=True)
    return np.mean(p * np.log(p + 1.0)) + np.linalg.norm(w) + np.var(z, axis=0).sum()


def test_scalar_loop_jvp_and_jacfwd(backend):
    rng = np.random.default_rng(0)
    x, a = rng.normal(size=6), 0.7
    v = rng.normal(size=6)
    out, tangent = s2sgrad.jvp(scalar_loop, (x, a), (v, 0.0))
    np.testing.assert_allclose(out, scalar_loop(x, a), rtol=1e-12)
    np.testing.assert_allclose(tangent, central(scalar_loop, (x, a), (0,), [v])[0],
                               rtol=1e-5, atol=1e-8)
    jac = s2sgrad.jacfwd(scalar_loop)(x, a)
    assert jac.shape == (6, 6)
    fd = np.stack([central(scalar_loop, (x, a), (0,), [e])[0] for e in np.eye(6)], axis=-1)
    np.testing.assert_allclose(jac, fd, rtol=1e-5, atol=1e-8)
    forward = forward_function(scalar_loop, 0, False, True)
    if backend == "auto":
        assert forward.backend == "numba", forward.fallback_reason


def test_numpy_array_code_jvp(backend):
    rng = np.random.default_rng(1)
    w, x = rng.normal(size=(4, 3)), rng.normal(size=(5, 4))
    vw, vx = rng.normal(size=(4, 3)), rng.normal(size=(5, 4))
    out, tangent = s2sgrad.jvp(array_code, (w, x), (vw, vx))
    np.testing.assert_allclose(tangent, central(array_code, (w, x), (0, 1), [vw, vx])[0],
                               rtol=1e-5, atol=1e-8)


def running_product(a):
    return np.sum(np.sin(np.cumprod(a)))


def test_cumprod_tangent_compiles_and_allows_zeros(backend):
    a, v = np.array([0.5, 0.0, 2.0, -1.5]), np.array([1.0, 2.0, -0.5, 0.25])
    _, tangent = s2sgrad.jvp(running_product, a, v)
    np.testing.assert_allclose(tangent, central(running_product, (a,), (0,), [v])[0],
                               rtol=1e-6, atol=1e-9)


def test_tutorial_function_and_network(backend):
    tutorial = load_functional_autodiff()
    x, y = np.ones(5), np.zeros(3)
    rng = np.random.default_rng(2)
    w, b = rng.normal(size=(5, 3)), rng.normal(size=3)
    vw, vb = rng.normal(size=(5, 3)), rng.normal(size=3)
    fn = tutorial.function
    forward, (loss, tangent) = run_jvp(fn, (x, y, w, b), (2, 3), [vw, vb])
    np.testing.assert_allclose(tangent, central(fn, (x, y, w, b), (2, 3), [vw, vb])[0],
                               rtol=1e-5, atol=1e-8)
    jw, jb = s2sgrad.jacfwd(fn, (2, 3))(x, y, w, b)
    gw, gb = s2sgrad.grad(fn, (2, 3))(x, y, w, b)
    np.testing.assert_allclose(jw, gw, rtol=1e-6)
    np.testing.assert_allclose(jb, gb, rtol=1e-6)


class Network(nn.Cell):
    def __init__(self):
        super().__init__()
        self.flatten = nn.Flatten()
        self.dense_relu_sequential = nn.SequentialCell(
            nn.Dense(12, 8, weight_init="normal"), nn.ReLU(),
            nn.Dense(8, 4, weight_init="normal"))

    def construct(self, x):
        return self.dense_relu_sequential(self.flatten(x))


def test_cell_with_cross_entropy_loss(backend):
    s2sgrad.set_seed(0)
    net = Network()
    loss_fn = nn.CrossEntropyLoss()
    labels = s2sgrad.Tensor(np.array([1, 3]))

    def loss(x):
        return loss_fn(net(x), labels)

    rng = np.random.default_rng(4)
    x = rng.normal(size=(2, 3, 4))
    v = rng.normal(size=(2, 3, 4))
    out, tangent = s2sgrad.jvp(loss, x, v)
    f = lambda z: np.asarray(loss(s2sgrad.Tensor(z)))  # noqa: E731 - finite differences only
    fd = (f(x + EPS * v) - f(x - EPS * v)) / (2 * EPS)
    np.testing.assert_allclose(np.asarray(tangent), fd, rtol=1e-4, atol=1e-6)
    logits_jac = s2sgrad.jacfwd(net)(x)
    assert logits_jac.shape == (2, 4, 2, 3, 4)


# ------------------------------------------------------------ structures


def two_outputs(x, y):
    return x * y, np.sin(x) + y


def with_aux(x, y):
    return np.sum(x * y), x + 1.0


def test_tuple_inputs_and_outputs():
    x, y = np.array([0.5, 1.5]), np.array([2.0, -1.0])
    vx, vy = np.array([1.0, 0.0]), np.array([0.5, 2.0])
    out, tangent = s2sgrad.jvp(two_outputs, (x, y), (vx, vy))
    assert isinstance(out, tuple) and isinstance(tangent, tuple) and len(tangent) == 2
    np.testing.assert_allclose(tangent[0], vx * y + x * vy)
    np.testing.assert_allclose(tangent[1], np.cos(x) * vx + vy)
    jac = s2sgrad.jacfwd(two_outputs, grad_position=(0, 1))(x, y)
    assert isinstance(jac, tuple) and len(jac) == 2 and len(jac[0]) == 2
    np.testing.assert_allclose(jac[0][0], np.diag(y))
    np.testing.assert_allclose(jac[1][1], np.eye(2))
    single = s2sgrad.jacfwd(two_outputs, grad_position=1)(x, y)
    np.testing.assert_allclose(single[0], np.diag(x))


def test_has_aux():
    x, y = np.array([0.5, 1.5]), np.array([2.0, -1.0])
    out, tangent, aux = s2sgrad.jvp(with_aux, (x, y), (np.ones(2), np.zeros(2)), has_aux=True)
    np.testing.assert_allclose(out, np.sum(x * y))
    np.testing.assert_allclose(tangent, np.sum(y))
    np.testing.assert_allclose(aux, x + 1.0)
    jac, aux = s2sgrad.jacfwd(with_aux, has_aux=True)(x, y)
    np.testing.assert_allclose(jac, y)
    np.testing.assert_allclose(aux, x + 1.0)


def test_tensors_in_tensors_out_and_scalars():
    x = s2sgrad.Tensor(np.array([1.0, 2.0], dtype=np.float32))
    out, tangent = s2sgrad.jvp(lambda x: x * x, x, s2sgrad.Tensor(np.ones(2, np.float32)))
    assert isinstance(out, s2sgrad.Tensor) and isinstance(tangent, s2sgrad.Tensor)
    np.testing.assert_allclose(np.asarray(tangent), [2.0, 4.0])
    out, tangent = s2sgrad.jvp(lambda a: a * a * a, 2.0, 1.0)
    assert tangent == pytest.approx(12.0)
    jac = s2sgrad.jacfwd(lambda a, b: a * b, grad_position=(0, 1))(2.0, 3.0)
    assert jac == pytest.approx((3.0, 2.0))


def test_tree_argument():
    def f(p, x):
        return p["w"] * x + p["b"]
    p = {"w": np.array([1.0, 2.0]), "b": 0.5}
    x = np.array([3.0, 4.0])
    jac = s2sgrad.jacfwd(f)(p, x)
    np.testing.assert_allclose(jac["w"], np.diag(x))
    np.testing.assert_allclose(jac["b"], np.ones(2))


# ------------------------------------------------------------ errors


def uses_svd_values(x):
    m = np.linalg.svd(x, compute_uv=False)
    return np.sum(m)


@s2sgrad.custom_vjp
def clipped(x):
    return x * 1.0


@clipped.defvjp
def _(x, out, dout):
    return (np.clip(dout, -1.0, 1.0),)


def uses_custom(x):
    return np.sum(clipped(x) * 2.0)


class WithBprop(nn.Cell):
    def construct(self, x):
        return x * 2.0

    def bprop(self, x, out, dout):
        return (dout * 2.0,)


def test_missing_jvp_rule_names_the_primitive_and_line():
    with pytest.raises(MissingRuleError) as info:
        s2sgrad.jvp(uses_svd_values, np.eye(2), np.eye(2))      # a form no rule covers
    text = str(info.value)
    assert "numpy.linalg.svd" in text and "test_jvp.py" in text
    assert "m = np.linalg.svd(x, compute_uv=False)" in text and "s2sgrad.grad" in text


def test_custom_vjp_and_bprop_without_forward_rule():
    with pytest.raises(MissingRuleError, match="clipped has a custom backward") as info:
        s2sgrad.jvp(uses_custom, np.ones(2), np.ones(2))
    assert "test_jvp.py" in str(info.value)
    cell = WithBprop()
    with pytest.raises(MissingRuleError, match="custom backward"):
        s2sgrad.jacfwd(lambda x: cell(x))(np.ones(2))


def sine(x):
    return np.sin(x)


def test_argument_errors():
    x = np.ones(3)
    with pytest.raises(GradientArgumentError, match=r"v\[0\] has shape \(2,\)"):
        s2sgrad.jvp(sine, x, np.ones(2))
    with pytest.raises(GradientArgumentError, match="2 inputs but 1 tangent"):
        s2sgrad.jvp(two_outputs, (x, x), (x,))
    with pytest.raises(GradientTypeError, match="integer"):
        s2sgrad.jvp(lambda a: a * 2.0, (3,), (1.0,))
    with pytest.raises(GradientArgumentError, match="out of range"):
        s2sgrad.jacfwd(two_outputs, grad_position=2)(x, x)
    with pytest.raises(ValueError, match="non-negative"):
        s2sgrad.jacfwd(two_outputs, grad_position=-1)
    with pytest.raises(TypeError, match="grad_position"):
        s2sgrad.jacfwd(two_outputs, grad_position="0")
    with pytest.raises(TypeError, match="has_aux"):
        s2sgrad.jvp(sine, x, x, has_aux=1)
    with pytest.raises(ValueError, match="has_aux=True needs a function that returns a tuple"):
        s2sgrad.jvp(lambda a: a * 2.0, x, x, has_aux=True)


# ------------------------------------------------------------ the generated code


def partly_active(x, y):
    a = np.sin(y) * 3.0       # y is not differentiated: no tangent code
    b = x * a
    for i in range(2):
        b = b + np.cos(b) * y
    return np.sum(b)


def test_generated_code_reads_like_the_reverse_code():
    jac = s2sgrad.jacfwd(partly_active)
    x, y = np.array([0.1, 0.2]), np.array([0.3, 0.4])
    jac(x, y)
    source = jac.source
    assert re.search(r"# a = np\.sin\(y\) \* 3\.0 .*\(test_jvp\.py:\d+\)", source)
    assert re.search(r"# b = b \+ np\.cos\(b\) \* y  \(test_jvp\.py:\d+\)", source)
    assert not re.search(r"\b(y|a)_dot\b", source)     # inactive: no tangent
    assert "x_dot = rt.basis_tangent(x, k)" in source
    assert "for k in range(n_x):" in source
    forward, _ = run_jvp(partly_active, (x, y), (0,), [np.ones(2)])
    jvp_source = forward.source
    assert "def partly_active_jvp(x, y, x_dot):" in jvp_source
    assert "b_dot = x_dot * a" in jvp_source


def test_show_and_command_line_print_jvp_code(capsys):
    from s2sgrad.cli import main
    source = s2sgrad.show(partly_active, np.ones(2), np.ones(2), mode="jvp")
    assert "def partly_active_jvp(x, y, x_dot, y_dot):" in source
    source = s2sgrad.show(partly_active, np.ones(2), np.ones(2), mode="jacfwd")
    assert "def partly_active_jacfwd(x, y):" in source
    assert "def partly_active_jvp(x, y, x_dot, y_dot):" in s2sgrad.show(partly_active,
                                                                       mode="jvp")
    capsys.readouterr()
    assert main(["show", f"{__file__}:partly_active", "--mode", "jvp", "--arg",
                 "float64[3]", "--arg", "float64[3]"]) == 0
    printed = capsys.readouterr().out
    assert "the jvp code that runs for arguments like (float64[3], float64[3])" in printed
    assert "b_dot = x_dot * a + x * a_dot" in printed


# ------------------------------------------------------------ the tangent-style functions

import test_tangent_style as style  # noqa: E402  (the cases of tests/test_tangent_style.py)
from test_jvp_rules import MISSING  # noqa: E402

STYLE_CASES = [c for c in style.CASES if c[0] not in style.UNSUPPORTED and c[0] not in
               style.BUGS]


@pytest.mark.parametrize("case", STYLE_CASES, ids=[c[0] for c in STYLE_CASES])
def test_tangent_style_functions_jvp(case, monkeypatch):
    monkeypatch.setenv("S2SGRAD_BACKEND", "python")
    name, fn, args = case[:3]
    positions = _positions(case[3] if len(case) > 3 else 0)
    rng = np.random.default_rng(5)
    v = [_direction(args[p], rng) for p in positions]
    try:
        _, (out, tangent) = run_jvp(fn, style._fresh(args), positions, v)
    except MissingRuleError as exc:
        assert exc.construct in MISSING, str(exc)
        return
    want = central(lambda *a: fn(*style._fresh(a)), args, positions, v)
    for got, expected in zip(_leaves(tangent), want):
        np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-7)


def test_backend_policy(monkeypatch):
    """Loops -> Numba, loop-free -> numpy, for jvp and for jacfwd (whose own loop over the
    directions does not count)."""
    monkeypatch.setenv("S2SGRAD_BACKEND", "auto")
    x = np.array([0.3, 0.6])
    jac = s2sgrad.jacfwd(sine)
    np.testing.assert_allclose(jac(x), np.diag(np.cos(x)))
    assert jac.backend == "numpy"
    loop = s2sgrad.jacfwd(scalar_loop)
    loop(x, 0.5)
    assert loop.backend == "numba", loop.fallback_reason
    s2sgrad.jvp(sine, x, x)
    assert forward_function(sine, (0,), False, False).backend == "numpy"


class Model:
    def __init__(self, scale):
        self.scale = scale

    def energy(self, x):
        return np.sum(self.scale * x * x)


def test_bound_method_is_built_once():
    model = Model(np.array([1.0, 2.0]))
    x, v = np.array([0.5, -1.0]), np.array([1.0, 1.0])
    out, tangent = s2sgrad.jvp(model.energy, x, v)
    assert tangent == pytest.approx(np.sum(2 * model.scale * x * v))
    first = forward_function(model.energy, (0,), False, False)
    assert forward_function(model.energy, (0,), False, False) is first
