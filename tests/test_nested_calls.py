"""Nested derivative calls, inlined and called often (issue 20: saddle and particle).

- ``grad`` and ``value_and_grad`` objects called inside a differentiated function, in a
  loop and in both arms of a branch on the inner value, are inlined: the outer code holds
  their statements and no rule call, and the result equals central differences under
  Numba and under Python, in reverse and forward mode;
- a global the inner function reads changes between calls: the outer gradient and the
  inner object called from Python both give the new derivative (never the first call's);
- a repeated call of a gradient runs its last plan at once (``GradientPlan.hot_call``):
  no key built, no argument checks, the Numba dispatcher without the restorer of the
  value a ``grad`` drops; arguments of other types take the full path and come back.

One outer gradient is compiled (module-level, shared by the tests); the rest runs as
Python or numpy.
"""
import re
import sys

import numpy as np
import pytest

import s2sgrad as ms
from s2sgrad.api import reverse
from s2sgrad.api.derivative import Derivative
from s2sgrad.testing import numerical_grad

HERE = sys.modules[__name__]
RATE = 1.0          # read by the inner function: changed by a test


def payoff(x, y):
    return RATE * np.sum(x * y * y) - y[1] ** 2


PAYOFF_VALUE_AND_GRAD = ms.value_and_grad(payoff, 1)
PAYOFF_GRAD = ms.grad(payoff, 1)


def ascent(x, y0):
    y = y0
    total = 0.0
    for _ in range(3):
        v, g = PAYOFF_VALUE_AND_GRAD(x, y)
        if v > 0.0:
            y = y + 0.1 * g
        else:
            y = y - 0.05 * g
        total = total + v
    return total + np.sum(PAYOFF_GRAD(x, y) * y)


#: the two arms of the branch: v > 0 at every step, v < 0 at every step
POINTS = [(np.array([0.9, -0.2]), np.array([0.5, 0.3])),
          (np.array([0.1, 0.8]), np.array([0.2, -0.9]))]
OUTER = ms.grad(ascent, (0, 1))       # auto: the loop runs compiled by Numba


def _differences(x, y0):
    return numerical_grad(ascent, (x, y0), 0), numerical_grad(ascent, (x, y0), 1)


def _code_lines(source):
    return "\n".join(line.split("#")[0] for line in source.splitlines())


@pytest.mark.parametrize("backend", ["auto", "python"])
def test_grad_and_value_and_grad_inside_a_loop_and_a_branch(backend, monkeypatch):
    monkeypatch.setenv("S2SGRAD_BACKEND", backend)
    outer = OUTER if backend == "auto" else ms.grad(ascent, (0, 1))
    assert (outer is OUTER) == (backend == "auto")
    for x, y0 in POINTS:
        got = outer(x, y0)
        for g, want in zip(got, _differences(x, y0)):
            np.testing.assert_allclose(g, want, rtol=1e-6, atol=1e-8)
    assert outer.backend == ("numba" if backend == "auto" else "python")
    code = _code_lines(outer.source)
    # the inner code's lines, its adjoint in the outer forward sweep, commented with the
    # user's line it differentiates (not the cache file's)
    forward = outer.source.split("# sensitivity of the output")[0]
    assert "# grad of: return RATE * np.sum(x * y * y) - y[1] ** 2  (test_nested_calls.py:" \
        in forward
    assert not re.search(r"_value_and_grad_[0-9a-f]+\.py", outer.source)
    for rule in ("derivative(", "hessian_times", "cotangent_times", "PAYOFF"):
        assert rule not in code, rule                      # no Python call per use
    if backend == "python":      # forward mode over the inlined code (no compile)
        x, y0 = POINTS[0]
        np.testing.assert_allclose(ms.jacfwd(ascent, 0)(x, y0), _differences(x, y0)[0],
                                   rtol=1e-6, atol=1e-8)


def test_a_global_the_inner_function_reads_changes_between_calls(monkeypatch):
    """(Run as Python: a compile per value of RATE is the same check, slower.)"""
    monkeypatch.setenv("S2SGRAD_BACKEND", "python")
    outer = ms.grad(ascent, (0, 1))
    x, y0 = POINTS[0]
    for _ in range(3):                    # planned, then hot
        before, inner_before = outer(x, y0), PAYOFF_GRAD(x, y0)
    assert outer._hot is not None and outer._hot.guarded
    monkeypatch.setattr(HERE, "RATE", 2.5)
    after, inner_after = outer(x, y0), PAYOFF_GRAD(x, y0)
    assert not np.allclose(after[0], before[0]) and not np.allclose(inner_after, inner_before)
    for g, want in zip(after, _differences(x, y0)):
        np.testing.assert_allclose(g, want, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(inner_after, numerical_grad(payoff, (x, y0), 1), rtol=1e-6)
    monkeypatch.setattr(HERE, "RATE", 1.0)         # and back: the first build again
    np.testing.assert_allclose(outer(x, y0)[0], before[0], rtol=1e-12)


def test_a_repeated_call_runs_its_plan_at_once(monkeypatch):
    x, y0 = POINTS[1]
    want = OUTER(x, y0)
    OUTER(x, y0)
    hot = OUTER._hot
    assert hot is not None and hot.compiled.backend == "numba"
    # the compiled code itself, no restorer for a dropped value (its copy without the fused
    # loops' numpy else-branches: not ``compiled.dispatcher``, which keeps them for callers
    # that cannot run a call again)
    from numba.core.registry import CPUDispatcher
    assert isinstance(hot.run_grads, CPUDispatcher)
    assert hot.run_grads.py_func.__name__ == "ascent_value_and_grad"
    seen = []
    monkeypatch.setattr(reverse, "plan_key", lambda args: seen.append(args) or None)
    monkeypatch.setattr(Derivative, "_prepare", lambda *a: seen.append(a) or 1 / 0)
    again = OUTER(x, y0 + 0.0)          # a new array of the same type: the hot plan
    assert seen == [] and type(again) is tuple
    for g, w in zip(again, want):
        np.testing.assert_array_equal(g, w)


def test_arguments_of_other_types_miss_the_hot_plan_and_come_back():
    x, y0 = POINTS[1]
    want = PAYOFF_GRAD(x, y0)             # one position: one array back
    assert type(PAYOFF_GRAD(x, y0)) is np.ndarray and PAYOFF_GRAD._hot.matches((x, y0))
    # loop-free, run as numpy: the generated function itself, no scalar conversion
    assert PAYOFF_GRAD._hot.run_grads is PAYOFF_GRAD._hot.compiled.py_func
    as_f32 = PAYOFF_GRAD(x.astype(np.float32), y0.astype(np.float32))
    assert as_f32.dtype == np.float32
    np.testing.assert_allclose(as_f32, want, rtol=1e-5)
    readonly, column = y0.copy(), y0[:1].copy()
    readonly.flags.writeable = False
    np.testing.assert_array_equal(PAYOFF_GRAD(x, readonly), want)
    np.testing.assert_array_equal(PAYOFF_GRAD(x, y0), want)
    hot = PAYOFF_GRAD._hot
    assert hot.matches((x, y0)) and not hot.matches((x, column))       # a unit dimension
    assert not hot.matches((x, y0, y0)) and not hot.matches((x, list(y0)))
    np.testing.assert_allclose(PAYOFF_GRAD(x, 2.0 * y0), numerical_grad(payoff, (x, 2.0 * y0), 1),
                               rtol=1e-6)
