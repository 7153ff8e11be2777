"""Repeated calls take the planned path (no re-checking), and it gives what the full path
gives whenever the arguments' types change between calls."""
import numpy as np
import pytest

import s2sgrad
from s2sgrad import Tensor
from s2sgrad.errors import GradientTypeError


def scaled_sum(x, w, mode=None):
    y = x * w
    if mode is None:
        return np.sum(y * y)
    return np.sum(y)


def loop_sum(x, w):
    s = 0.0
    for i in range(x.shape[0]):
        s = s + np.sin(w * x[i])
    return s


def _full_path(gradient, *args):
    """The gradient a fresh GradFunction gives (always the full path)."""
    fresh = type(gradient)(gradient.fn, gradient.grad_position, gradient.weights,
                           gradient.has_aux, gradient.return_ids, gradient.with_value)
    return fresh(*args)


def _same(a, b):
    if isinstance(a, tuple):
        assert isinstance(b, tuple) and len(a) == len(b)
        for p, q in zip(a, b):
            _same(p, q)
        return
    assert type(a) is type(b)
    np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    assert np.asarray(a).dtype == np.asarray(b).dtype
    assert np.shape(a) == np.shape(b)


CALLS = [
    (np.arange(3.0), 2.0),
    (np.arange(3.0), 2.0),                                  # a repeat: planned
    (np.arange(5.0), 0.5),                                  # other shape, same types
    (np.arange(4, dtype=np.float32), np.float32(2.0)),      # other dtypes
    (Tensor(np.arange(3.0)), 2.0),                          # a Tensor
    (Tensor(np.arange(3.0)), 2.0),
    (np.arange(6.0).reshape(2, 3), 2.0),                    # other rank
    (np.arange(3.0), np.arange(3.0)),                       # w an array now
    (np.arange(3.0), 2.0),                                  # back to the first types
]


@pytest.mark.parametrize("fn", [scaled_sum, loop_sum])
def test_planned_calls_match_the_full_path_as_types_change(fn):
    grad = s2sgrad.value_and_grad(fn, (0, 1))
    for args in CALLS:
        if fn is loop_sum and np.ndim(args[1]) > 0:
            continue
        _same(grad(*args), _full_path(grad, *args))


def test_an_option_value_is_part_of_the_plan():
    grad = s2sgrad.grad(scaled_sum, 0)
    x = np.arange(3.0)
    full = grad(x, 2.0, None)
    summed = grad(x, 2.0, "sum")
    again = grad(x, 2.0, None)
    np.testing.assert_allclose(full, 2 * x * 4.0)
    np.testing.assert_allclose(summed, np.full(3, 2.0))
    np.testing.assert_allclose(again, full)


def test_a_repeated_call_skips_the_checks_and_a_new_signature_does_not(monkeypatch):
    grad = s2sgrad.grad(loop_sum, 0)
    x = np.arange(3.0)
    first = grad(x, 2.0)
    calls = []
    prepare = type(grad)._prepare

    def counting(self, args, kwargs):
        calls.append(args)
        return prepare(self, args, kwargs)

    monkeypatch.setattr(type(grad), "_prepare", counting)
    np.testing.assert_array_equal(grad(x, 2.0), first)
    assert calls == []
    grad(x.astype(np.float32), 2.0)
    assert len(calls) == 1
    with pytest.raises(GradientTypeError):
        grad(np.arange(3), 2.0)         # integers at a differentiated position: checked


def test_a_planned_call_still_names_the_users_line_on_a_runtime_error():
    def take(x, i):
        return x[i] * 2.0

    grad = s2sgrad.grad(take, 0)
    x = np.arange(3.0)
    grad(x, 1)
    with pytest.raises(IndexError) as info:
        grad(x, 7)
    assert any("test_call_plan.py" in note for note in getattr(info.value, "__notes__", []))


def test_weights_gradients_follow_updated_parameters():
    w = s2sgrad.Parameter(Tensor(np.array([1.0, 2.0])), name="w")

    def loss(x):
        return s2sgrad.ops.sum(x * w * w)

    grad = s2sgrad.grad(loss, None, [w])
    x = Tensor(np.array([3.0, 4.0]))
    (g1,) = grad(x)
    w.set_data(Tensor(np.array([2.0, 3.0])))
    (g2,) = grad(x)
    np.testing.assert_allclose(np.asarray(g1), 2 * np.array([3.0, 4.0]) * [1.0, 2.0])
    np.testing.assert_allclose(np.asarray(g2), 2 * np.array([3.0, 4.0]) * [2.0, 3.0])
