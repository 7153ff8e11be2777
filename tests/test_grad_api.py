"""grad / value_and_grad: the argument checks and return structures of
docs/mindspore-semantics.md, has_aux, stop_gradient, weights, dtypes, errors."""
import numpy as np
import pytest

import s2sgrad as ms
from s2sgrad import Parameter, Tensor, nn, ops
from s2sgrad.errors import (GradientArgumentError, GradientTypeError, MissingRuleError,
                            S2sgradError, UnsupportedConstructError)


@pytest.fixture(autouse=True)
def python_backend(monkeypatch):
    """Structure tests run the generated code as Python: no Numba compile per test."""
    monkeypatch.setenv("S2SGRAD_BACKEND", "python")


def f2(x, y):
    return x * y + x


def f3(x, y, z):
    return x * y * z


X = np.array([1.0, 2.0])
Y = np.array([3.0, 5.0])
Z = np.array([7.0, 11.0])

# ------------------------------------------------------------ checks at grad() time


@pytest.mark.parametrize("kwargs, error, message", [
    (dict(grad_position=None, weights=None), ValueError,
     "grad_position and weights can not both be None"),
    (dict(grad_position=1.0), TypeError, "grad_position must be an int or a tuple"),
    (dict(grad_position=[0, 1]), TypeError, "grad_position must be an int or a tuple"),
    (dict(grad_position=(0, "1")), TypeError, "every element of grad_position must be an int"),
    (dict(grad_position=-1), ValueError, "non-negative"),
    (dict(grad_position=(0, 0)), ValueError, "must not repeat"),
    (dict(has_aux=1), TypeError, "has_aux must be a bool"),
    (dict(weights=3.0), TypeError, "weights must be a Parameter"),
    (dict(weights=[np.ones(2)]), TypeError, "weights must hold Parameters"),
])
@pytest.mark.parametrize("transform", [ms.grad, ms.value_and_grad])
def test_argument_errors_at_grad_time(transform, kwargs, error, message):
    with pytest.raises(error, match=message):
        transform(f2, **kwargs)


def test_bool_counts_as_int_position():
    g = ms.grad(f2, (0, True))
    assert np.allclose(g(X, Y)[1], X)


@pytest.mark.parametrize("position", [2, (0, 5)])
def test_position_out_of_range_names_position_and_count(position):
    with pytest.raises(GradientArgumentError, match=r"grad_position \d is out of range.*"
                                                    r"called with 2 arguments"):
        ms.grad(f2, position)(X, Y)


def test_empty_positions_error_at_call():
    g = ms.grad(f2, ())
    with pytest.raises(GradientArgumentError, match="empty tuple"):
        g(X, Y)

# ------------------------------------------------------------ return structure


def test_int_position_gives_bare_gradient():
    assert np.allclose(ms.grad(f2, 0)(X, Y), Y + 1)


def test_one_element_tuple_gives_bare_gradient():
    g = ms.grad(f2, (1,))(X, Y)
    assert isinstance(g, np.ndarray) and np.allclose(g, X)


def test_positions_in_the_order_asked():
    g2, g0 = ms.grad(f3, (2, 0))(X, Y, Z)
    assert np.allclose(g2, X * Y) and np.allclose(g0, Y * Z)


def test_unused_input_gets_zeros_of_its_shape_and_dtype():
    def f(x, y):
        return np.sum(x * 2.0)
    y = np.ones((2, 3), np.float32)
    gx, gy = ms.grad(f, (0, 1))(X, y)
    assert np.allclose(gx, 2.0)
    assert gy.shape == (2, 3) and gy.dtype == np.float32 and not gy.any()


def test_weights_only_and_positions_with_weights():
    w = Parameter(Tensor(np.array([2.0, 3.0], np.float32)), name="w")
    b = Parameter(Tensor(np.array([1.0], np.float32)), name="b")

    def f(x):
        return ops.sum(x * w + b)

    x = Tensor(np.array([5.0, 7.0], np.float32))
    gw = ms.grad(f, None, w)(x)
    assert isinstance(gw, Tensor) and np.allclose(gw.asnumpy(), [5.0, 7.0])
    gws = ms.grad(f, None, [w, b])(x)
    assert isinstance(gws, tuple) and len(gws) == 2 and np.allclose(gws[1].asnumpy(), [2.0])
    assert ms.grad(f, None, [])(x) == ()
    gx, (gw1,) = ms.grad(f, 0, [w])(x)
    assert np.allclose(gx.asnumpy(), [2.0, 3.0]) and np.allclose(gw1.asnumpy(), [5.0, 7.0])


def test_unused_and_frozen_weights_get_zeros():
    w = Parameter(Tensor(np.array([2.0], np.float32)), name="w")
    frozen = Parameter(Tensor(np.array([4.0], np.float32)), name="frozen", requires_grad=False)
    unused = Parameter(Tensor(np.zeros((2, 2), np.float32)), name="unused")

    def f(x):
        return ops.sum(x * w * frozen)

    gw, gf, gu = ms.grad(f, None, [w, frozen, unused])(Tensor(np.array([3.0], np.float32)))
    assert np.allclose(gw.asnumpy(), [12.0])
    assert np.allclose(gf.asnumpy(), [0.0])
    assert gu.shape == (2, 2) and not gu.asnumpy().any()


def test_return_ids():
    w = Parameter(Tensor(np.array([2.0], np.float32)), name="w")

    def f(x, y):
        return ops.sum(x * y * w)

    x, y = Tensor(np.array([3.0], np.float32)), Tensor(np.array([5.0], np.float32))
    (i1, g1), ((name, gw),) = ms.grad(f, 1, [w], return_ids=True)(x, y)
    assert i1 == 1 and np.allclose(g1.asnumpy(), [6.0])
    assert name == "w" and np.allclose(gw.asnumpy(), [15.0])
    pairs = ms.grad(f, (0, 1), return_ids=True)(x, y)
    assert [p for p, _ in pairs] == [0, 1]


def test_several_outputs_each_get_ones():
    def f(x):
        return x * x, np.sum(3.0 * x)
    assert np.allclose(ms.grad(f)(X), 2 * X + 3.0)


def test_list_output_behaves_like_tuple():
    def f(x):
        return [x * x, x]
    assert np.allclose(ms.grad(f)(X), 2 * X + 1)


def test_non_scalar_output_gets_ones():
    assert np.allclose(ms.grad(lambda x: x * x)(X), 2 * X)


def test_has_aux_returns_aux_untouched_and_ignores_it():
    def f(x):
        return np.sum(x * x), x * 10.0, (x, 1.0)
    grads, aux = ms.grad(f, has_aux=True)(X)
    assert np.allclose(grads, 2 * X)
    assert isinstance(aux, tuple) and len(aux) == 2
    assert np.allclose(aux[0], X * 10.0) and isinstance(aux[1], tuple)
    value, grads = ms.value_and_grad(f, has_aux=True)(X)
    assert np.isclose(value[0], np.sum(X * X)) and np.allclose(grads, 2 * X)


def test_has_aux_with_single_output_is_an_error():
    with pytest.raises(ValueError, match="has_aux=True needs a function that returns a tuple"):
        ms.grad(lambda x: x * x, has_aux=True)(X)


def test_value_and_grad_returns_value():
    value, g = ms.value_and_grad(f2, (0, 1))(X, Y)
    assert np.allclose(value, X * Y + X) and np.allclose(g[0], Y + 1)

# ------------------------------------------------------------ stop_gradient and activity


def test_stop_gradient_semantics_doc_example():
    g = ms.grad(lambda x, y: ops.stop_gradient(x * y) + x * x, (0, 1))
    gx, gy = g(X, Y)
    assert np.allclose(gx, 2 * X) and np.allclose(gy, 0.0) and gy.shape == Y.shape


def test_stop_gradient_accepts_a_tuple():
    def f(x, y):
        a, b = ops.stop_gradient((x * y, y))
        return a + b + x
    assert np.allclose(ms.grad(f, 0)(X, Y), 1.0)


def test_no_adjoint_code_for_stopped_aux_or_constant_paths():
    def f(x, y):
        c = np.exp(y)               # does not depend on x: no adjoint
        s = ops.stop_gradient(np.sin(x))   # stopped: no adjoint
        return np.sum(x * c) + np.sum(s), np.cos(x)
    src = ms.grad(f, 0, has_aux=True).source
    backward = src.split("# sensitivity of the output")[1]
    assert "dc" not in backward.split("return")[0].replace("dc =", "")
    assert "np.cos(np.sin" not in backward and "ds =" not in backward
    assert "dy" not in backward and "sin(" not in backward.split("return")[0]
    grads, _ = ms.grad(f, 0, has_aux=True)(X, Y)
    assert np.allclose(grads, np.exp(Y))

# ------------------------------------------------------------ dtypes


def test_float32_in_float32_out():
    x = np.array([1.0, 2.0], np.float32)
    g = ms.grad(lambda x: np.sum(np.exp(x) * 2.0))(x)
    assert g.dtype == np.float32 and np.allclose(g, 2 * np.exp(x))


@pytest.mark.parametrize("backend", ["numba", "python"])
def test_float32_forward_values_stay_float32(backend, monkeypatch):
    monkeypatch.setenv("S2SGRAD_BACKEND", backend)

    def f(x):
        y = x * 2.0 + 1.0
        return np.sum(y * y), y

    x = np.ones(3, np.float32)
    (loss, y), g = ms.value_and_grad(f)(x)
    assert y.dtype == np.float32 and g.dtype == np.float32
    np.testing.assert_allclose(g, 4 * (2 * x + 1) + 2)   # both outputs get ones


def test_tensor_in_tensor_out():
    x = Tensor(np.array([1.0, 2.0], np.float32))
    g = ms.grad(lambda x: ops.sum(x * x))(x)
    assert isinstance(g, Tensor) and g.dtype == ms.float32


def test_python_float_is_differentiable():
    def f(a, x):
        return a * a * np.sum(x)
    ga = ms.grad(f, 0)(3.0, X)
    assert isinstance(ga, float) and np.isclose(ga, 2 * 3.0 * X.sum())


@pytest.mark.parametrize("value, what", [(3, "int"), (True, "bool"),
                                          (np.array([1, 2]), "int64"),
                                          (Tensor([1, 2]), "int64")])
def test_integer_input_at_requested_position_is_a_type_error(value, what):
    with pytest.raises(GradientTypeError, match=f"grad_position 1 .*{what}"):
        ms.grad(f2, 1)(X, value)

# ------------------------------------------------------------ errors name the user's line


def helper_with_try(x):
    try:
        y = x * 2.0
    except ValueError:
        y = x
    return y


def test_unsupported_construct_names_file_line_and_construct():
    with pytest.raises(UnsupportedConstructError) as info:
        ms.grad(helper_with_try)(X)
    message = str(info.value)
    assert "test_grad_api.py:" in message and "a try statement" in message
    assert "try:" in message
    assert isinstance(info.value, S2sgradError)


def test_missing_rule_names_call_and_says_how_to_register():
    def f(x):
        return np.sum(np.fft.fft(x).real)
    with pytest.raises(MissingRuleError) as info:
        ms.grad(f)(X)
    message = str(info.value)
    assert "fft" in message and "test_grad_api.py:" in message and "vjp" in message


def test_call_without_rule_on_constant_values_is_fine():
    def f(x):
        n = np.fft.fft(np.ones(4)).real     # no rule, but nothing to differentiate
        return np.sum(x) * n[0]
    assert np.allclose(ms.grad(f)(X), 4.0)

# ------------------------------------------------------------ Cells


class NetWithParam(nn.Cell):
    def __init__(self):
        super(NetWithParam, self).__init__()
        self.w = Parameter(Tensor(np.array([2.0], dtype=np.float32)), name='weight')
        self.internal_params = [self.w]

    def construct(self, x):
        output = self.w * x
        return output

    def bprop(self, *args):
        return (self.w * args[-1],), {self.w: args[0] * args[-1]}


def test_cell_bprop_with_internal_params_semantics_example():
    net = NetWithParam()
    gx, (gw,) = ms.grad(net, 0, net.trainable_params())(Tensor(np.array([3.0], np.float32)))
    assert np.allclose(gx.asnumpy(), [2.0]) and np.allclose(gw.asnumpy(), [3.0])


def test_cell_bprop_without_internal_params_gives_zero_weight_grads():
    net = NetWithParam()
    net.internal_params = []
    gx, (gw,) = ms.grad(net, 0, net.trainable_params())(Tensor(np.array([3.0], np.float32)))
    assert np.allclose(gx.asnumpy(), [2.0]) and np.allclose(gw.asnumpy(), [0.0])


class Square(nn.Cell):
    def construct(self, x):
        return x * x

    def bprop(self, x, out, dout):
        return 10.0 * dout


SQUARE = Square()


def test_bprop_is_used_as_returned_not_multiplied():
    def f(x):
        return np.sum(SQUARE(x) * 3.0)
    assert np.allclose(ms.grad(f)(X), 30.0)


class TooFew(nn.Cell):
    def construct(self, x, y):
        return x * y

    def bprop(self, x, y, out, dout):
        return (dout,)


def test_bprop_with_too_few_gradients_names_both_counts():
    cell = TooFew()
    with pytest.raises(S2sgradError, match="returned 1 gradient for 2 inputs"):
        ms.grad(lambda x, y: cell(x, y), (0, 1))(X, Y)


def test_cell_parameters_are_weights():
    dense = nn.Dense(3, 2, weight_init="ones", bias_init="zeros")

    def loss(x):
        return ops.sum(dense(x) ** 2)

    x = Tensor(np.array([[1.0, 2.0, 3.0]], np.float32))
    gw, gb = ms.grad(loss, None, dense.trainable_params())(x)
    out = x.asnumpy() @ np.ones((3, 2))
    assert np.allclose(gb.asnumpy(), 2 * out[0])
    assert np.allclose(gw.asnumpy(), 2 * out.T @ x.asnumpy())


def test_custom_vjp_is_inlined_and_used():
    @ms.custom_vjp
    def clip_gradient(x):
        return x

    @clip_gradient.defvjp
    def _(x, out, dout):
        return (np.clip(dout, -1.0, 1.0),)

    def f(x):
        return np.sum(clip_gradient(x) * 5.0)
    g = ms.grad(f)
    assert np.allclose(g(X), 1.0)
    assert "np.clip" in g.source


def with_defaults(x, scale=3.0, *, shift=1.0):
    return np.sum(x * scale + shift)


def test_defaults_and_keywords_are_filled_in_like_a_call():
    np.testing.assert_allclose(ms.grad(with_defaults)(X), 3.0)
    np.testing.assert_allclose(ms.grad(with_defaults, 1)(X, scale=2.0), np.sum(X))
    value, g = ms.value_and_grad(with_defaults)(X, shift=5.0)
    assert np.isclose(value, np.sum(X * 3.0 + 5.0))


def test_show_prints_the_generated_source_and_the_object_says_where_it_lives(capsys):
    source = ms.show(f2, grad_position=(0, 1))
    assert "def f2_value_and_grad(x, y):" in source and source in capsys.readouterr().out
    g = ms.grad(f2, (0, 1))
    g(X, Y)
    assert g.backend == "python" and "S2SGRAD_BACKEND=python" in g.fallback_reason
    assert open(g.path).read() == g.source


@ms.custom_vjp
def branchy_forward(x):
    if np.sum(x) > 0:
        return x * 2.0
    return x


@branchy_forward.defvjp
def _(x, out, dout):
    return (dout,)


def test_custom_rule_with_run_time_branches_is_refused_naming_the_call():
    def f(x):
        return np.sum(branchy_forward(x))
    with pytest.raises(UnsupportedConstructError, match="the forward of branchy_forward") as info:
        ms.grad(f)(X)
    assert "test_grad_api.py:" in str(info.value)


def sum_with_where(x):
    return np.sum(x * x, where=x > 0)


def test_a_call_form_the_rule_does_not_cover_is_a_missing_rule_naming_the_keyword():
    with pytest.raises(MissingRuleError, match="numpy.sum called this way .*'where'") as info:
        ms.grad(sum_with_where)(X)
    assert "test_grad_api.py:" in str(info.value)
