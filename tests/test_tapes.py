"""What a loop's adjoint keeps from the forward sweep (issue 9): each value stored once,
cheap scalar values (in branches too) computed again instead of stored, scalars of a known
type on preallocated arrays (room reserved before each run of a range loop, nested and
broken-off loops included), lists only for arrays, values of unknown type and while
loops; and the gradients stay those of central finite differences under both backends."""
import re

import numpy as np
import pytest

import s2sgrad
from s2sgrad.testing import check_grad


def huber_path(x, delta):
    total = 0.0
    prev = 0.0
    for i in range(x.shape[0]):
        r = x[i] - prev
        if abs(r) <= delta:
            total = total + 0.5 * r * r
        else:
            total = total + delta * (abs(r) - 0.5 * delta)
        prev = x[i]
    return total


def triangular(x):
    s = 0.0
    for i in range(x.shape[0]):
        for j in range(i):
            s = s + np.tanh(x[i] * x[j] + s * 0.1)
    return s


def until_large(x, limit):
    s = 0.0
    for i in range(x.shape[0]):
        s = np.sin(s) + x[i]
        if s > limit:
            break
    return s


def strided_backwards(x):
    s = 0.0
    for i in range(x.shape[0] - 1, 0, -2):
        s = np.tanh(s * x[i] + x[i - 1])
    return s


def damped_while(x):
    s = x
    k = 0
    while k < 6:
        s = np.sin(s) * 0.9 + x
        k += 1
    return s


def branch_on_transcendental(x):
    s = 0.0
    for i in range(x.shape[0]):
        t = np.tanh(x[i] + s)
        if t > 0.2:
            s = s + t * x[i]
        else:
            s = s - np.exp(t)
    return s


RNG = np.random.default_rng(7)
def newton_roots(c):
    total = 0.0
    for i in range(c.shape[0]):
        z = 0.0
        step = 1.0
        while abs(step) > 1e-12:
            step = (z ** 3 + z - c[i]) / (3.0 * z ** 2 + 1.0)
            z = z - step
        total = total + z * z
    return total


CASES = [
    ("huber_path", huber_path, (RNG.normal(size=9), 0.5), (0, 1)),
    ("triangular", triangular, (RNG.normal(size=6) * 0.5,), 0),
    ("until_large", until_large, (np.array([0.3, 0.4, 0.9, 0.5, 0.2]), 1.2), 0),
    ("until_never", until_large, (np.array([0.1, -0.2, 0.3]), 10.0), (0, 1)),
    ("strided_backwards", strided_backwards, (RNG.normal(size=8),), 0),
    ("damped_while", damped_while, (0.7,), 0),
    ("newton_roots", newton_roots, (RNG.normal(size=5),), 0),
    ("branch_on_transcendental", branch_on_transcendental, (RNG.normal(size=7),), 0),
]


@pytest.mark.parametrize("backend", ["python", "numba"])
@pytest.mark.parametrize("fn, args, positions", [c[1:] for c in CASES],
                         ids=[c[0] for c in CASES])
def test_taped_loops_match_finite_differences(fn, args, positions, backend, monkeypatch):
    monkeypatch.setenv("S2SGRAD_BACKEND", backend)
    g = check_grad(fn, args, grad_position=positions)
    if backend == "numba":
        assert g.backend == "numba", g.fallback_reason


def _source(fn, *args, positions=0):
    g = s2sgrad.grad(fn, positions)
    g(*args)
    return g.source


def _tapes(src):
    """The tapes the generated function creates: (name, 'list' or the array dtype)."""
    lists = [(m, "list") for m in re.findall(r"^    (\w+) = \[\]$", src, re.M)]
    arrays = re.findall(r"^    (\w+) = np\.empty\(0, np\.(\w+)\)$", src, re.M)
    return lists + arrays


def test_branch_values_are_recomputed_and_scalars_go_on_arrays():
    src = _source(huber_path, *CASES[0][2], positions=(0, 1))
    # only prev (not computable from x[i] alone) is stored; r, abs(r) <= delta and the
    # values inside the branches are computed again from it in the reversed loop
    assert _tapes(src) == [("prev_tape", "float64")], src
    assert "rt.reserve(prev_tape" in src and ".append(" not in src and ".pop()" not in src
    backward = src.split("# sensitivity of the output")[1]
    assert re.search(r"if \w+:\n\s+\w+ = 0\.5 \* r\n", backward), backward


def test_a_value_is_stored_once_and_a_branch_test_on_a_stored_value_is_computed_again():
    src = _source(branch_on_transcendental, CASES[-1][2][0])
    kinds = dict(_tapes(src))
    assert "list" not in kinds.values(), src
    # tanh and exp are stored; the test t > 0.2 is computed again from the stored t (a
    # comparison costs less than a flag's push and pop), not stored as a flag
    assert sorted(kinds.values()) == ["float64", "float64"], src
    assert "bool_" not in src, src


def test_small_integer_powers_are_recomputed_not_stored():
    """Newton's step (z ** 3 + z - c) / (3 z ** 2 + 1) is computed again from the restored
    z in the reversed while loop: only z goes on a tape (and the trip counts)."""
    src = _source(newton_roots, RNG.normal(size=4))
    assert [name for name, kind in _tapes(src) if kind != "int64"] == ["z_stack", "z_tape"], src


def test_nested_loops_reserve_room_before_each_inner_run():
    src = _source(triangular, CASES[1][2][0])
    outer, inner = src.split("\n    for i in range(", 1)[1].split("        for j in range(", 1)
    assert "rt.reserve(" in outer.splitlines()[-1] or "rt.reserve(" in outer
    assert "list" not in dict(_tapes(src)).values(), src


def sine_chain(x):
    s = x[0]
    for i in range(1, x.shape[0]):
        s = np.sin(s) + x[i]
    return s


def test_while_loops_keep_lists_and_float32_stays_float32(monkeypatch):
    assert ("s_stack", "list") in _tapes(_source(damped_while, 0.7))
    monkeypatch.setenv("S2SGRAD_BACKEND", "numba")
    x = RNG.normal(size=6).astype(np.float32)
    for fn, tape in ((sine_chain, "float32"), (until_large, "float64")):   # s = 0.0: float64
        g = s2sgrad.grad(fn, 0)
        dx = g(x, np.float32(10.0)) if fn is until_large else g(x)
        assert g.backend == "numba", g.fallback_reason
        assert dx.dtype == np.float32
        assert tape in dict(_tapes(g.source)).values(), g.source
        x64 = x.astype(np.float64)
        expected = s2sgrad.grad(fn, 0)(*((x64, 10.0) if fn is until_large else (x64,)))
        np.testing.assert_allclose(dx, expected, rtol=1e-4)
