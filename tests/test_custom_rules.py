"""Custom backwards (``custom_vjp``, ``Cell.bprop``) are lowered with their call into
``ir.CustomBackward`` and spliced in by the reverse pass: the IR holds no lowerer, the
incoming gradient is a placeholder renamed to the result's adjoint, what the backward
reads from outside is captured while lowering, and its mistakes are reported as it is
built, naming the call."""
import dataclasses

import numpy as np
import pytest

import s2sgrad as ms
from s2sgrad import nn
from s2sgrad.compiler.ir import CustomBackward, Op, walk_statements
from s2sgrad.compiler.front.lower import Lowerer
from s2sgrad.errors import UnsupportedConstructError, UserCodeError
from s2sgrad.testing import check_grad

X = np.linspace(-0.7, 0.9, 4)
W = np.linspace(-0.5, 0.6, 16).reshape(4, 4) / 2.0
SCALE = np.array([1.0, 2.0, 3.0, 4.0])


@ms.custom_vjp
def square(x):
    return x * x


@square.defvjp
def _(x, out, dout):
    return (2.0 * x * dout,)


@ms.custom_vjp
def passthrough(x):
    return x


@passthrough.defvjp
def _(x, out, dout):
    return (dout,)


@ms.custom_vjp
def scaled(x):
    return x * SCALE


@scaled.defvjp
def _(x, out, dout):
    return (dout * SCALE,)        # SCALE: a global array the backward reads


@ms.custom_vjp
def pair(x):
    return np.sin(x), np.cos(x)


@pair.defvjp
def _(x, out, dout):
    ds, dc = dout
    return (ds * np.cos(x) - dc * np.sin(x),)


@ms.custom_vjp
def too_few(x, y):
    return x * y


@too_few.defvjp
def _(x, y, out, dout):
    return (dout * y,)


def in_a_loop(x, w):
    h = x
    for _ in range(3):
        h = square(passthrough(np.tanh(h @ w)))
    return np.sum(h)


def one_result_used(x):
    s, c = pair(x)
    return np.sum(s * 3.0)


def both_results(x):
    s, c = pair(x)
    return np.sum(s * c + scaled(x))


@pytest.mark.parametrize("backend", ["python", "numba"])
def test_custom_rules_in_a_loop_match_finite_differences(backend, monkeypatch):
    # the link Op of passthrough (whose result is a copy of its input) once made the
    # loop tape that copy twice: the reversed loop popped an empty list
    monkeypatch.setenv("S2SGRAD_BACKEND", backend)
    g = check_grad(in_a_loop, (X.reshape(1, 4), W), grad_position=(0, 1))
    assert g.backend == backend
    popped = [line.split("=")[0].strip() for line in g.source.splitlines()
              if ".pop()" in line]
    assert popped and len(popped) == len(set(popped)), g.source   # each value taken once


@pytest.mark.parametrize("fn", [one_result_used, both_results])
def test_incoming_gradients_of_tuple_results_and_captured_arrays(fn):
    g = check_grad(fn, (X,))
    assert "_incoming" not in g.source     # the placeholders were renamed away


def _lowered(fn, *args):
    lowerer = Lowerer([(np.dtype(float), np.ndim(a)) for a in args])
    return lowerer, lowerer.lower(fn)


def _reachable(obj, seen):
    """Every object reachable from an IR object through fields, lists, dicts, tuples."""
    if id(obj) in seen:
        return
    seen.add(id(obj))
    yield obj
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        for f in dataclasses.fields(obj):
            yield from _reachable(getattr(obj, f.name), seen)
    elif isinstance(obj, (list, tuple, set, frozenset)):
        for item in obj:
            yield from _reachable(item, seen)
    elif isinstance(obj, dict):
        for key, value in obj.items():
            yield from _reachable(key, seen)
            yield from _reachable(value, seen)


def test_the_ir_holds_the_lowered_backward_and_no_lowerer():
    lowerer, lowered = _lowered(both_results, X)
    links = [s for s in walk_statements(lowered.body) if isinstance(s, Op) and s.custom]
    assert [link.custom.name for link in links] == ["pair", "scaled"]
    for link in links:
        assert isinstance(link.custom, CustomBackward) and link.expr is None
        assert link.custom.body and all(isinstance(op, Op) for op in link.custom.body)
        assert set(link.custom.incoming.values()) == set(link.targets)
    reachable = list(_reachable(lowered, set()))
    assert not any(isinstance(obj, Lowerer) for obj in reachable)
    # the backward's global array was captured while lowering, like the forward's
    assert any(f.obj is SCALE for f in lowered.free)


def test_the_walk_would_find_a_lowerer():
    lowerer, lowered = _lowered(one_result_used, X)
    lowered.body.append(Op(("z",), "effect", (), {}, None, None, custom=lowerer))
    assert any(isinstance(obj, Lowerer) for obj in _reachable(lowered, set()))


def test_a_backward_with_too_few_gradients_is_refused_at_build_naming_the_call():
    def f(x, y):
        return np.sum(too_few(x, y))
    with pytest.raises(UserCodeError, match="the backward of too_few returned 1 gradient "
                                            "for 2 inputs") as info:
        ms.grad(f)(X, X)
    assert "test_custom_rules.py:" in str(info.value)


class Doubler(nn.Cell):
    def construct(self, x):
        return x * 2.0

    def bprop(self, x, out, dout):
        if np.sum(dout) > 0:     # run-time control flow: a custom rule cannot hold it
            return (dout * 2.0,)
        return (dout,)


def test_a_backward_with_run_time_branches_is_refused_naming_it():
    cell = Doubler()

    def f(x):
        return np.sum(cell(x))
    with pytest.raises(UnsupportedConstructError, match="the backward of Doubler.bprop"):
        ms.grad(f)(X)
