"""Every combination of grad_position x weights x has_aux x return_ids x grad/value_and_grad
returns the reference's structure (docs/mindspore-semantics.md, "Return structure").

The expected result is built here from the reference's rules, independently of
``s2sgrad.api.reverse``, and compared leaf by leaf (type of every container, values of every
gradient, ids)."""
import itertools

import numpy as np
import pytest

import s2sgrad as ms
from s2sgrad import Parameter, Tensor


@pytest.fixture(autouse=True)
def python_backend(monkeypatch):
    """Structures, not compilation: the generated code runs as Python."""
    monkeypatch.setenv("S2SGRAD_BACKEND", "python")


X = np.array([1.0, 2.0, 3.0])
Y = np.array([0.5, -1.0, 2.0])
PW = Parameter(Tensor(np.array([2.0, 3.0, 4.0])), name="pw")
PB = Parameter(Tensor(np.array([0.25, 0.5, 0.75])), name="pb")
FROZEN = Parameter(Tensor(np.array([1.0, 1.0, 1.0])), name="frozen", requires_grad=False)


def plain(x, y):
    return np.sum(x * PW * y + PB * FROZEN)


def with_aux(x, y):
    loss = np.sum(x * PW * y + PB * FROZEN)
    return loss, x * 2.0, (y, x + y)


#: the exact gradient of the loss w.r.t. each input and weight
EXACT = {0: Y * np.asarray(PW), 1: X * np.asarray(PW), "pw": X * Y, "pb": np.ones(3),
         "frozen": np.zeros(3)}

POSITIONS = [None, 0, 1, (0,), (1,), (0, 1), (1, 0)]
WEIGHTS = {"none": None, "bare": PW, "list": [PW, PB], "tuple1": (PB,), "empty": [],
           "frozen": [PW, FROZEN]}


def expected(position, weights, has_aux, return_ids, with_value):
    """The reference's result for this call, built from the rules in the semantics doc."""
    def one(key):
        g = EXACT[key]
        return (key, g) if return_ids else g

    if position is not None:
        ps = (position,) if isinstance(position, int) else position
        inputs = one(ps[0]) if len(ps) == 1 else tuple(one(p) for p in ps)
    if weights is None:
        result = inputs
    else:
        ws = [weights] if isinstance(weights, Parameter) else list(weights)
        wgrads = tuple(one(w.name) for w in ws)
        if position is None:
            result = wgrads[0] if isinstance(weights, Parameter) else wgrads
        else:
            result = (inputs, wgrads)
    fn = with_aux if has_aux else plain
    value = fn(X, Y)
    if has_aux:
        return (value, result) if with_value else (result, tuple(value[1:]))
    return (value, result) if with_value else result


def assert_same(got, want, path="result"):
    """Same containers (tuple stays tuple), same ids, same values, everywhere."""
    if isinstance(want, tuple):
        assert type(got) is tuple, f"{path}: expected a tuple, got {type(got).__name__}"
        assert len(got) == len(want), f"{path}: expected {len(want)} items, got {len(got)}"
        for i, (g, w) in enumerate(zip(got, want)):
            assert_same(g, w, f"{path}[{i}]")
    elif isinstance(want, str):
        assert got == want, f"{path}: id {got!r} != {want!r}"
    elif isinstance(want, int) and not isinstance(want, bool):
        assert type(got) is int and got == want, f"{path}: id {got!r} != {want!r}"
    else:
        assert not isinstance(got, (tuple, list)), f"{path}: expected a value, got {got!r}"
        np.testing.assert_allclose(np.asarray(got, dtype=float),
                                   np.asarray(want, dtype=float), err_msg=path)


CASES = [c for c in itertools.product(POSITIONS, WEIGHTS, [False, True], [False, True],
                                      [False, True])
         if not (c[0] is None and c[1] == "none")]


@pytest.mark.parametrize("position, weights, has_aux, return_ids, with_value", CASES)
def test_return_structure(position, weights, has_aux, return_ids, with_value):
    w = WEIGHTS[weights]
    fn = with_aux if has_aux else plain
    make = ms.value_and_grad if with_value else ms.grad
    got = make(fn, position, w, has_aux=has_aux, return_ids=return_ids)(X, Y)
    assert_same(got, expected(position, w, has_aux, return_ids, with_value))


@pytest.mark.parametrize("with_value", [False, True])
def test_both_none_is_refused_for_every_other_option(with_value):
    make = ms.value_and_grad if with_value else ms.grad
    for has_aux, return_ids in itertools.product([False, True], repeat=2):
        with pytest.raises(ValueError, match="grad_position and weights can not both be None"):
            make(plain, None, None, has_aux=has_aux, return_ids=return_ids)
