"""Tuples, lists and dicts of arrays as arguments ("pytrees"): the generated function takes
their leaves, the function's ``p[0]``, ``p['w']``, ``a, b = p``, loops over them and
``p.items()`` resolve while building, and each gradient comes back in its argument's
structure (tuple -> tuple, list -> list, dict -> dict with the same keys, nested),
checked against central finite differences over every leaf."""
import collections

import numpy as np
import pytest

import s2sgrad as ms
from s2sgrad import Tensor
from s2sgrad.errors import GradientTypeError, UnsupportedConstructError
from s2sgrad.testing import numerical_grad

RNG = np.random.default_rng(0)
A, B, C = (RNG.normal(size=3) for _ in range(3))
X = RNG.normal(size=3)
M = RNG.normal(size=(3, 3))


@pytest.fixture(autouse=True, params=["python", "auto"])
def backend(request, monkeypatch):
    monkeypatch.setenv("S2SGRAD_BACKEND", request.param)
    return request.param


def assert_tree_close(got, want, path="grad"):
    assert type(got) is type(want), f"{path}: {type(got).__name__} != {type(want).__name__}"
    if isinstance(want, dict):
        assert list(got) == list(want), f"{path}: keys {list(got)} != {list(want)}"
        for k in want:
            assert_tree_close(got[k], want[k], f"{path}[{k!r}]")
    elif isinstance(want, (tuple, list)):
        assert len(got) == len(want), f"{path}: length {len(got)} != {len(want)}"
        for i, (g, w) in enumerate(zip(got, want)):
            assert_tree_close(g, w, f"{path}[{i}]")
    else:
        assert np.shape(got) == np.shape(want), f"{path}: shape {np.shape(got)}"
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7, err_msg=path)


def by_index(p, x):
    return np.sum(p[0] * x + p[1] ** 2)


def by_unpacking(p, x):
    w, c = p
    return np.sum(np.tanh(w * x) + c * x)


def by_key(params, x):
    return np.sum(np.tanh(params["w"] * x + params["b"]))


def by_items(params, x):
    total = 0.0
    for name, value in params.items():
        total = total + np.sum(value * x)
    return total + sum(np.sum(v ** 2) for v in params.values()) + len(params)


def layers(ps, x):
    h = x
    for w, c in ps:
        h = np.tanh(w @ h + c)
    return np.sum(h)


def layers_enumerated(ps, x):
    h = x
    for i, (w, c) in enumerate(ps):
        h = np.tanh(w @ h + c) * (i + 1.0)
    return np.sum(h)


def zipped(ws, cs, x):
    h = x
    for w, c in zip(ws, cs):
        h = np.sin(w * h + c)
    return np.sum(h)


def nested(p, x):
    return np.sum(p[0][1] * p[1]["k"] * x + p[0][0] ** 2)


def helper(q):
    return q[0] * q[1]


def through_a_helper(p, x):
    return np.sum(helper(p) * x)


def stacked(p):
    return np.sum(np.stack(p) ** 2)


def scalars(p, x):
    return np.sum(p[0] * x) * p[1]


def in_a_loop(p, x):
    s = 0.0
    for i in range(x.shape[0]):
        s = s + p[0] * x[i] + p[1][i] ** 2
    return s


CASES = [
    ("tuple, indexed", by_index, ((A, B), X), 0),
    ("list, indexed", by_index, ([A, B], X), 0),
    ("same-shape tuple stays a tuple", by_unpacking, ((A, B), X), 0),
    ("dict, by key", by_key, ({"w": A, "b": B}, X), 0),
    ("dict, items and values", by_items, ({"w": A, "b": B, "c": C}, X), 0),
    ("list of (W, b) layers", layers, ([(M, A), (M.T, B)], X), 0),
    ("enumerate over layers", layers_enumerated, ([(M, A), (M.T, B)], X), 0),
    ("zip of a list and a tuple", zipped, ([A, B], (B, C), X), (0, 1)),
    ("nested tuple and dict", nested, (((A, B), {"k": C}), X), 0),
    ("passed to a helper", through_a_helper, ((A, B), X), 0),
    ("np.stack of a tuple", stacked, ((A, B),), 0),
    ("Python floats in a tuple", scalars, ((2.0, 3.0), X), 0),
    ("read in a run-time loop", in_a_loop, ((1.5, B), X), 0),
    ("plain array next to a tree", by_key, ({"w": A, "b": B}, X), (0, 1)),
]


@pytest.mark.parametrize("fn, args, position", [c[1:] for c in CASES],
                         ids=[c[0] for c in CASES])
def test_tree_gradients_match_finite_differences(fn, args, position):
    got = ms.grad(fn, position)(*args)
    positions = (position,) if isinstance(position, int) else position
    want = [numerical_grad(fn, args, p) for p in positions]
    assert_tree_close(got, want[0] if isinstance(position, int) else tuple(want))


def test_value_and_grad_return_ids_and_has_aux_keep_the_structure():
    def f(p, x):
        return np.sum(p["w"] * x), p["b"] * 2.0
    (loss, aux), (pos, g) = ms.value_and_grad(f, (0,), has_aux=True, return_ids=True)(
        {"w": A, "b": B}, X)
    assert np.isclose(loss, np.sum(A * X)) and np.allclose(aux, B * 2.0)
    assert pos == 0 and type(g) is dict and list(g) == ["w", "b"]
    assert np.allclose(g["w"], X) and np.allclose(g["b"], 0.0)
    (pos, g), (aux,) = ms.grad(f, 0, has_aux=True, return_ids=True)({"w": A, "b": B}, X)
    assert pos == 0 and np.allclose(g["w"], X) and np.allclose(aux, B * 2.0)


Pair = collections.namedtuple("Pair", "w b")


def test_namedtuple_fields_are_read_and_the_gradient_keeps_its_type():
    def f(p, x):
        return np.sum(p.w * x + p[1] ** 2)
    g = ms.grad(f)
    got = g(Pair(A, B), X)
    assert type(got) is Pair
    assert_tree_close(tuple(got), (X, 2 * B))
    assert "def f_value_and_grad(p_w, p_b, x):" in g.source


def test_a_tree_that_is_not_differentiated_is_read_as_is():
    assert np.allclose(ms.grad(by_index, 1)((A, B), X), A)


def test_tensor_leaves_give_tensor_gradients():
    p = (Tensor(A.astype(np.float32)), Tensor(B.astype(np.float32)))
    g = ms.grad(by_index)(p, Tensor(X.astype(np.float32)))
    assert type(g) is tuple and all(isinstance(t, Tensor) for t in g)
    assert g[0].dtype == ms.float32 and np.allclose(g[1].asnumpy(), 2 * B, rtol=1e-5)


def test_each_structure_gets_its_own_build():
    g = ms.grad(lambda p: np.sum(p[0] * p[-1]))
    assert_tree_close(g((A, B)), (B, A))
    assert_tree_close(g([A, B, C]), [C, np.zeros(3), A])
    # a plain array: p[0] and p[-1] are its first and last elements
    assert_tree_close(g(A), np.array([A[2], 0.0, A[0]]))


def test_generated_code_takes_the_leaves():
    g = ms.grad(by_key)
    g({"w": A, "b": B}, X)
    assert "def by_key_value_and_grad(params_w, params_b, x):" in g.source


def test_an_integer_leaf_at_a_grad_position_is_refused_naming_the_item():
    with pytest.raises(GradientTypeError) as info:
        ms.grad(by_index)((A, 3), X)
    text = str(info.value)
    assert "grad_position 0, item [1], is an integer (3)" in text and "3.0" in text


def test_reading_a_dict_in_an_unsupported_way_names_the_construct():
    def f(params):
        return np.sum(params.get("w"))
    with pytest.raises(UnsupportedConstructError) as info:
        ms.grad(f)({"w": A})
    assert "`.get` of a dict" in str(info.value) and "params['w']" not in str(info.value)
    assert "p['w']" in str(info.value)
