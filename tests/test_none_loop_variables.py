"""A variable that is None before a loop (or on one branch) and a value after it.

The front end folds ``x is None`` while building, since a run-time value is an array or
a number.  A loop variable started as None broke that: ``if flag is None:`` was folded
to False for every iteration, and the first iteration's branch vanished -- a wrong value
and a wrong gradient without an error (5.5 computed as 2.8).  Such a test is now refused,
naming the line and what to write instead; the spelling it advises gives the right
gradient; tests of a value that is never None (a None default, a None constant) still
fold as before.
"""
import numpy as np
import pytest

import s2sgrad as ms
from s2sgrad.errors import UnsupportedConstructError
from s2sgrad.testing import check_grad

X = np.array([0.3, 2.0, -1.0, 1.5])


def first_scaled(x):
    flag = None
    total = 0.0
    for v in x:
        if flag is None:
            total = total + 10.0 * v
            flag = 1.0
        else:
            total = total + v
    return total


def squared_steps(x):
    prev = None
    total = 0.0
    for v in x:
        if prev is not None:
            total = total + (v - prev) ** 2
        prev = v
    return total


def chosen(x, c):
    y = None if c > 0 else x * 2.0       # None on one branch only, known at run time
    if y is None:
        return np.sum(x)
    return np.sum(y)


def first_scaled_flag(x):
    first = True
    total = 0.0
    for v in x:
        if first:
            total = total + 10.0 * v
            first = False
        else:
            total = total + v
    return total


def with_default(x, axis=None):
    if axis is None:
        return np.sum(x ** 2)
    return np.sum(x ** 2, axis=axis)


@pytest.mark.parametrize("fn, args", [(first_scaled, (X,)), (squared_steps, (X,)),
                                      (chosen, (X, 1.0))])
@pytest.mark.parametrize("transform", ["grad", "jit"])
def test_a_test_of_a_value_that_may_be_none_is_refused_naming_the_line(fn, args, transform):
    make = ms.grad if transform == "grad" else ms.jit
    with pytest.raises(UnsupportedConstructError) as info:
        make(fn)(*args)
    message = str(info.value)
    assert "test_none_loop_variables.py:" in message and "is None" in message
    assert "first = True" in message        # what to write instead


def test_the_advised_spelling_is_right():
    assert first_scaled_flag(X) == 5.5
    value, gradient = ms.value_and_grad(first_scaled_flag)(X)
    assert value == 5.5
    np.testing.assert_array_equal(gradient, [10.0, 1.0, 1.0, 1.0])
    check_grad(first_scaled_flag, (X,))


def test_a_value_that_is_never_none_still_folds():
    check_grad(with_default, (X,))
    g = ms.grad(lambda x: with_default(x, None))
    np.testing.assert_allclose(g(X), 2 * X)
