"""s2sgrad.vjp: the forward sweep once, the adjoint sweep per cotangent.

Values against central finite differences (float64) of the cotangent-weighted output,
under the default backend (Numba where the code loops) and plain Python; the reference's return structures; the errors; and that
``vjp_fn`` runs the stored adjoint sweep only, never the forward sweep again."""
import ast

import numpy as np
import pytest

import s2sgrad as ms
from s2sgrad import nn
from s2sgrad.backend import numba_backend
from s2sgrad.errors import GradientArgumentError, GradientTypeError, OutputStructureError
from s2sgrad.testing import numerical_grad
from test_control_flow import CASES

RNG = np.random.default_rng(11)
BACKENDS = ["auto", "python"]


def _weighted(fn, cts):
    """x -> sum over outputs of <ct, output>: the function whose gradient vjp gives."""
    def weighted(*args):
        out = fn(*args)
        outs = out if isinstance(out, tuple) else (out,)
        return sum(float(np.sum(np.asarray(c) * np.asarray(o))) for c, o in zip(cts, outs))
    return weighted


def _cotangent_like(out):
    if isinstance(out, tuple):
        return tuple(_cotangent_like(o) for o in out)
    if np.ndim(out) == 0:
        return float(RNG.normal())
    return RNG.normal(size=np.shape(out))


def _all_float(args):
    return all(isinstance(a, float) or (isinstance(a, np.ndarray) and a.dtype.kind == "f")
               for a in args)


VJP_CASES = [c for c in CASES if _all_float(c[1])]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("fn, args, positions", VJP_CASES,
                         ids=[f"{c[0].__name__}-{i}" for i, c in enumerate(VJP_CASES)])
def test_vjp_matches_finite_differences(fn, args, positions, backend, monkeypatch):
    monkeypatch.setenv("S2SGRAD_BACKEND", backend)
    out, vjp_fn = ms.vjp(fn, *args)
    expected_out = fn(*args)
    np.testing.assert_allclose(np.asarray(out, dtype=float) if not isinstance(out, tuple)
                               else np.concatenate([np.ravel(o) for o in out]),
                               np.asarray(expected_out, dtype=float)
                               if not isinstance(expected_out, tuple)
                               else np.concatenate([np.ravel(o) for o in expected_out]))
    # two cotangents on one forward sweep: the stored values are not used up
    for _ in range(2):
        ct = _cotangent_like(expected_out)
        grads = vjp_fn(ct)
        assert isinstance(grads, tuple) and len(grads) == len(args)
        cts = ct if isinstance(ct, tuple) else (ct,)
        for p, g in enumerate(grads):
            want = numerical_grad(_weighted(fn, cts), args, position=p)
            np.testing.assert_allclose(g, want, rtol=1e-5, atol=1e-7,
                                       err_msg=f"{fn.__name__}: input {p}")


def cubic(x, y):
    return x ** 3 + y


def two_outputs(x, y):
    return 2 * x + y, y ** 3


def three_outputs(x, y):
    return x * y, np.sin(x), np.sum(y)


def test_reference_example_values_and_structure():
    x = ms.Tensor(np.array([[1, 2], [3, 4]]).astype(np.float32))
    y = ms.Tensor(np.array([[1, 2], [3, 4]]).astype(np.float32))
    v = ms.Tensor(np.array([[1, 1], [1, 1]]).astype(np.float32))
    outputs, vjp_fn = ms.vjp(cubic, x, y)
    assert isinstance(outputs, ms.Tensor)
    np.testing.assert_allclose(outputs.asnumpy(), [[2, 10], [30, 68]])
    gx, gy = vjp_fn(v)
    assert isinstance(gx, ms.Tensor) and gx.dtype == ms.float32
    np.testing.assert_allclose(gx.asnumpy(), [[3, 12], [27, 48]])
    np.testing.assert_allclose(gy.asnumpy(), np.ones((2, 2)))


def test_has_aux_gives_output_vjp_fn_and_aux():
    x, y = np.array([[1.0, 2.0], [3.0, 4.0]]), np.array([[1.0, 2.0], [3.0, 4.0]])
    outputs, vjp_fn, aux = ms.vjp(two_outputs, x, y, has_aux=True)
    np.testing.assert_allclose(outputs, [[3, 6], [9, 12]])
    np.testing.assert_allclose(aux, [[1, 8], [27, 64]])        # one aux: bare
    gx, gy = vjp_fn(np.ones((2, 2)))
    np.testing.assert_allclose(gx, 2 * np.ones((2, 2)))
    np.testing.assert_allclose(gy, np.ones((2, 2)))           # aux carries no gradient
    out, _, aux = ms.vjp(three_outputs, x, y, has_aux=True)
    assert isinstance(aux, tuple) and len(aux) == 2            # several: a tuple


def test_tuple_outputs_take_tuple_cotangents():
    x, y = RNG.normal(size=3), RNG.normal(size=3)
    out, vjp_fn = ms.vjp(three_outputs, x, y)
    assert isinstance(out, tuple) and len(out) == 3
    c0, c1, c2 = RNG.normal(size=3), RNG.normal(size=3), 0.7
    gx, gy = vjp_fn((c0, c1, c2))
    np.testing.assert_allclose(gx, c0 * y + c1 * np.cos(x))
    np.testing.assert_allclose(gy, c0 * x + c2)
    again = vjp_fn(c0, c1, c2)      # the reference's vjp_fn(*v) form
    np.testing.assert_allclose(again[0], gx)


def test_tree_inputs_give_gradients_in_their_structure():
    def f(p, x):
        return np.tanh(x @ p["w"] + p["b"])

    p = {"w": RNG.normal(size=(3, 2)), "b": RNG.normal(size=2)}
    x = RNG.normal(size=(4, 3))
    out, vjp_fn = ms.vjp(f, p, x)
    ct = RNG.normal(size=out.shape)
    gp, gx = vjp_fn(ct)
    assert set(gp) == {"w", "b"} and gp["w"].shape == (3, 2)
    np.testing.assert_allclose(gp["b"], np.sum(ct * (1 - out ** 2), axis=0))


class SmallNetwork(nn.Cell):
    """The tutorial's Network (Flatten, Dense-ReLU-Dense-ReLU-Dense), made small."""

    def __init__(self):
        super().__init__()
        self.flatten = nn.Flatten()
        self.dense_relu_sequential = nn.SequentialCell(
            nn.Dense(4 * 2, 6, weight_init="normal", bias_init="zeros"),
            nn.ReLU(),
            nn.Dense(6, 5, weight_init="normal", bias_init="zeros"),
            nn.ReLU(),
            nn.Dense(5, 3, weight_init="normal", bias_init="zeros"))

    def construct(self, x):
        return self.dense_relu_sequential(self.flatten(x))


def _as_float64(model):
    for p in model.trainable_params():
        p.set_data(p.asnumpy().astype(np.float64) + 0.1)
        p._data = p._data.astype(np.float64)
    return model


def _numerical_weight_grad(fn, param, eps=1e-6):
    base = param.asnumpy().copy()
    out = np.zeros_like(base)
    for i in np.ndindex(base.shape):
        for sign in (1, -1):
            moved = base.copy()
            moved[i] += sign * eps
            param.set_data(moved)
            out[i] += sign * fn() / (2 * eps)
    param.set_data(base)
    return out


@pytest.mark.parametrize("backend", BACKENDS)
def test_tutorial_network_inputs_and_weights(backend, monkeypatch):
    monkeypatch.setenv("S2SGRAD_BACKEND", backend)
    ms.set_seed(3)
    model = _as_float64(SmallNetwork())
    params = model.trainable_params()
    x = RNG.normal(size=(2, 4, 2))

    def forward_fn(x):
        return model(x)

    out, vjp_fn = ms.vjp(forward_fn, x, weights=params)
    ct = RNG.normal(size=np.shape(out))
    (gx,), gw = vjp_fn(ct)
    assert isinstance(gw, tuple) and len(gw) == len(params)

    def weighted():
        return float(np.sum(ct * model(ms.Tensor(x)).asnumpy()))

    np.testing.assert_allclose(gx, numerical_grad(_weighted(forward_fn, (ct,)), (x,)),
                               rtol=1e-5, atol=1e-7)
    for p, g in zip(params, gw):
        np.testing.assert_allclose(np.asarray(g), _numerical_weight_grad(weighted, p),
                                   rtol=1e-5, atol=1e-7, err_msg=p.name)


def sine_loop(x, a):
    s = 0.0
    for i in range(x.shape[0]):
        s = s * a + np.sin(x[i])
    return s


@pytest.mark.parametrize("backend", BACKENDS)
def test_vjp_fn_runs_no_forward_sweep(backend, monkeypatch):
    monkeypatch.setenv("S2SGRAD_BACKEND", backend)
    ran = []
    call = numba_backend.Compiled.__call__

    def counting(self, *args):
        ran.append(self.py_func.__name__)
        return call(self, *args)

    monkeypatch.setattr(numba_backend.Compiled, "__call__", counting)
    x = RNG.normal(size=5)
    out, vjp_fn = ms.vjp(sine_loop, x, 0.5)
    assert ran == ["sine_loop_forward"]
    for k in range(3):
        vjp_fn(float(k + 1))
    assert ran == ["sine_loop_forward"] + ["sine_loop_backward"] * 3
    # and the backward's code holds no primal operation of the loop (np.sin is forward only)
    source = ms.jacrev(sine_loop).source
    backward = next(n for n in ast.parse(source).body
                    if isinstance(n, ast.FunctionDef) and n.name == "sine_loop_backward")
    called = {ast.unparse(n.func) for n in ast.walk(backward) if isinstance(n, ast.Call)}
    assert "np.cos" in called and "np.sin" not in called


def test_caller_may_change_the_output_without_changing_the_gradient():
    def inplace(x):
        y = x * 2.0
        for i in range(x.shape[0]):
            y[i] = y[i] * x[i]
        return y

    x = RNG.normal(size=4)
    out, vjp_fn = ms.vjp(inplace, x)
    ct = RNG.normal(size=4)
    first = vjp_fn(ct)[0]
    out += 100.0
    np.testing.assert_allclose(vjp_fn(ct)[0], first)
    np.testing.assert_allclose(first, ct * 4 * x)


def test_errors():
    x = RNG.normal(size=3)
    with pytest.raises(GradientTypeError, match="input 1 is int"):
        ms.vjp(sine_loop, x, 2)
    with pytest.raises(GradientTypeError, match="input 0 is an array of dtype int64"):
        ms.vjp(lambda v: v * 2.0, np.arange(3))
    with pytest.raises(GradientArgumentError, match="needs the inputs"):
        ms.vjp(sine_loop)
    with pytest.raises(TypeError, match="has_aux must be a bool"):
        ms.vjp(sine_loop, x, 0.5, has_aux=1)
    with pytest.raises(OutputStructureError, match="has_aux=True needs a function that "
                                                   "returns a tuple"):
        ms.vjp(sine_loop, x, 0.5, has_aux=True)
    _, vjp_fn = ms.vjp(cubic, x, x)
    with pytest.raises(GradientArgumentError, match=r"shape \(2,\), but output 0 of cubic "
                                                    r"has shape \(3,\)"):
        vjp_fn(np.ones(2))
    with pytest.raises(GradientTypeError, match="dtype int64"):
        vjp_fn(np.ones(3, dtype=np.int64))
    with pytest.raises(GradientArgumentError, match="returns one output"):
        vjp_fn((np.ones(3), np.ones(3)))
    _, vjp_fn = ms.vjp(three_outputs, x, x)
    with pytest.raises(GradientArgumentError, match="returns 3 outputs, so vjp_fn takes 3"):
        vjp_fn((np.ones(3), np.ones(3)))


def ragged(x, a):
    s = 0.0
    for i in range(x.shape[0]):
        v = np.sin(x[: i + 1] * a)
        s = s + np.sum(v * v) * a
    return s


@pytest.mark.parametrize("backend", BACKENDS)
def test_list_tapes_cross_packed_ragged_and_empty(backend, monkeypatch):
    """A list tape of arrays of different sizes (and an empty one) crosses from the forward
    to the backward packed (rt.pack_tape) and is read back item by item."""
    monkeypatch.setenv("S2SGRAD_BACKEND", backend)
    x, a = RNG.normal(size=5), 0.8
    out, vjp_fn = ms.vjp(ragged, x, a)
    assert "rt.pack_tape(" in ms.show(ragged, x, a, mode="vjp")
    for ct in (1.0, -0.5):
        gx, ga = vjp_fn(ct)
        np.testing.assert_allclose(gx, ct * numerical_grad(ragged, (x, a), 0), rtol=1e-6)
        np.testing.assert_allclose(ga, ct * numerical_grad(ragged, (x, a), 1), rtol=1e-6)
    _, vjp_fn = ms.vjp(ragged, np.zeros(0), a)          # the loop never runs
    gx, ga = vjp_fn(1.0)
    assert gx.shape == (0,) and ga == 0.0


def test_pack_tape_helpers_agree_with_numba():
    import numba
    from s2sgrad import runtime as rt
    from s2sgrad.backend import numba_split  # noqa: F401  (the Numba versions)

    @numba.njit
    def compiled(items, numbers):
        a, b = rt.pack_tape(items), rt.pack_tape(numbers)
        total = 0.0
        for k in range(rt.tape_length(a)):
            total += np.sum(rt.tape_item(a, k) * (k + 1)) + rt.tape_item(b, k)
        return total

    items = [RNG.normal(size=(k + 1, 2)) for k in range(4)]
    numbers = [0.5 * k for k in range(4)]
    packed, packed_numbers = rt.pack_tape(items), rt.pack_tape(numbers)
    assert rt.tape_length(packed) == 4
    for k in range(4):
        np.testing.assert_array_equal(rt.tape_item(packed, k), items[k])
        assert rt.tape_item(packed_numbers, k) == numbers[k]
    expected = sum(np.sum(v * (k + 1)) + numbers[k] for k, v in enumerate(items))
    np.testing.assert_allclose(compiled(numba.typed.List(items), numba.typed.List(numbers)),
                               expected)
    assert rt.pack_tape([(1.0, 2.0)]) == [(1.0, 2.0)]     # other items: the list itself
    assert rt.tape_length(rt.pack_tape([])) == 0
