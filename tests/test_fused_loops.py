"""Fused loops (compiler/optimize/loops.py): in code Numba compiles, a run of elementwise
array statements over one 1-D index space, forward and adjoint, is one explicit loop, the
shifted reads of a concatenate with a slice and a slice's adjoint written as index
arithmetic.  Checked: the loops the ode eval's step becomes (one forward, one adjoint,
none of the adjoint's temporaries left in the gradient function), the same bits as the
numpy statements they replace, and central differences through shifted reads at both
ends, numbers broadcast, tanh/sqrt (to 1e-12: numpy's vectorised tanh is not libm's in the last
bit), an ``np.copy`` and in-place updates, for sizes that
change between calls of one compiled gradient (0, 1, 2, 5...), views that are not
contiguous, float32 (not fused) and a first call of another size.
"""
import pathlib
import re
import sys

import numpy as np
import pytest

import s2sgrad
from s2sgrad.testing import numerical_grad

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "benchmarks"
                       / "gradbench"))
import ode  # noqa: E402


def stepped(x, w, s):
    y = x * 0.5
    for step in range(s):
        a = np.concatenate((np.ones(1), y[:-1]))
        b = np.concatenate((y[2:], np.zeros(2)))
        y = y + w * np.tanh(a * x + 0.5 * b) - 0.25 * b + 0.1 * np.sqrt(x * x + 1.0)
    return np.sum(y * y)


#: one gradient object per program, built and compiled once for the module
GRADS = {"stepped": s2sgrad.grad(stepped, (0, 1)), "ode": s2sgrad.grad(ode.ode_last, 0)}


#: the same gradients run as Python (the numpy statements), made on first use
PYTHON = {}


def _python_grad(fn, positions, args, monkeypatch):
    """The gradient the numpy statements give (the code run as Python)."""
    monkeypatch.setenv("S2SGRAD_BACKEND", "python")
    got = PYTHON.setdefault(fn.__name__, s2sgrad.grad(fn, positions))(*args)
    monkeypatch.setenv("S2SGRAD_BACKEND", "auto")
    return got


def _loop_body(source, function):
    """The lines of ``function``'s body in ``source``."""
    lines = source.splitlines()
    start = next(k for k, line in enumerate(lines) if line.startswith(f"def {function}("))
    end = next((k for k in range(start + 1, len(lines)) if lines[k] and
                not lines[k].startswith(" ")), len(lines))
    return lines[start + 1:end]


def _functions(source):
    """name -> body lines of each function the module defines."""
    lines = source.splitlines()
    starts = [k for k, line in enumerate(lines) if line.startswith("def ")]
    return {lines[k][4:lines[k].index("(")]: _loop_body(source, lines[k][4:lines[k].index("(")])
            for k in starts}


def test_the_ode_step_is_one_forward_loop_and_one_adjoint_loop():
    source = s2sgrad.show(GRADS["ode"], np.linspace(0.5, 1.5, 6), 4)
    functions = _functions(source)
    main = functions.pop("ode_last_value_and_grad")
    assert len(functions) == 2                          # one loop per sweep's step
    calls = [k for k, line in enumerate(main) if "if rt.compiled() and rt.one_length(" in line]
    assert len(calls) == 2
    for k in calls:                                     # compiled: the call, nothing else
        branch = main[k:next(j for j in range(k, len(main)) if main[j].strip() == "else:")]
        assert sum("_pass(" in line for line in branch) == 1, branch
        assert not any(" = np." in line or "rt.add_into" in line for line in branch), branch
    (forward, forward_body), (adjoint, adjoint_body) = sorted(
        functions.items(), key=lambda item: "range(n - 1, -1, -1)" in "\n".join(item[1]))
    for body in (forward_body, adjoint_body):
        text = "\n".join(body)
        assert text.count("for i in range(n") == 1
        for call in ("np.concatenate", "split_like", "add_into", "np.zeros"):
            assert call not in text
    # the arrays each loop makes: the tape's four and the carried one (no block of rows:
    # the loop takes a least length, where its values' lengths differ); the values read
    # shifted (k2's y + h / 2 * k1 at i - 1, the adjoint's at i + 1) are carried in locals
    # from one iteration to the next, not stored and loaded back (which kept LLVM from
    # vectorising the loops: GradBench ode 5.1 -> 2.4 ms)
    forward_text, adjoint_text = "\n".join(forward_body), "\n".join(adjoint_body)
    assert forward_text.count("np.empty(n)") == 5
    assert adjoint_text.count("np.empty(n)") == 1     # of 33 statements' arrays
    assert "t8_i = t6[i] if i < 1 else t5_prev" in forward_text
    assert "        t5_prev = t5_i" in forward_text
    assert "dt17_i += dt20_next" in adjoint_text
    assert "        dt20_next = dt20_i" in adjoint_text
    for text in (forward_text, adjoint_text):
        assert "[i - 1]" not in text.replace("y_1[i - 1]", "") and "[i + 1]" not in text


# (no last element of 0 elements: y[-1]; 1 element: a build of its own, see the stepped
# program's cases)
@pytest.mark.parametrize("n", [2, 6])
def test_ode_fused_is_the_numpy_statements_bit_for_bit(n, monkeypatch):
    x = np.linspace(0.5, 1.5, n)
    got = GRADS["ode"](x, 5)
    np.testing.assert_array_equal(got, _python_grad(ode.ode_last, 0, (x, 5), monkeypatch))
    np.testing.assert_allclose(got, numerical_grad(ode.ode_last, (x, 5), 0), rtol=1e-6,
                               atol=1e-9)


def _stepped_args(n, contiguous=True):
    x = np.linspace(-0.8, 0.9, 2 * n)[::2] if not contiguous else np.linspace(-0.8, 0.9, n)
    return x, 0.7, 3


def test_a_length_the_program_cannot_take_raises_numpys_error():
    with pytest.raises(ValueError, match="broadcast"):   # np.zeros(2) against 0 elements
        GRADS["stepped"](*_stepped_args(0))


# 1 element: y[2:] is empty, b has 2 elements and y broadcasts to 2 (numpy's statements run)
@pytest.mark.parametrize("n", [1, 2, 5])
def test_shifted_reads_at_both_ends_match_central_differences(n, monkeypatch):
    args = _stepped_args(n)
    gx, gw = GRADS["stepped"](*args)
    want = _python_grad(stepped, (0, 1), args, monkeypatch)
    # tanh and the sum: numpy's vectorised functions differ from libm's in the last bit
    np.testing.assert_allclose(gx, want[0], rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(gw, want[1], rtol=1e-12)
    if n:
        np.testing.assert_allclose(gx, numerical_grad(stepped, args, 0), rtol=1e-6,
                                   atol=1e-9)
        np.testing.assert_allclose(gw, numerical_grad(stepped, args, 1), rtol=1e-6,
                                   atol=1e-9)


def test_the_stepped_program_fuses_both_sweeps():
    source = s2sgrad.show(GRADS["stepped"], *_stepped_args(5))
    assert source.count("if rt.compiled() and rt.one_length(") >= 2
    assert "y_1[i + 2] if i < n - 2 else" in source     # np.concatenate((y[2:], zeros))
    assert "ones1[i] if i < 1 else y_1[i - 1]" in source
    assert "if i >= 2:" in source                          # its adjoint into dy[2:]


def test_views_and_a_first_call_of_another_size(monkeypatch):
    fresh = s2sgrad.grad(stepped, (0, 1))
    fresh(*_stepped_args(4))                               # first call: 4 elements
    for args in (_stepped_args(7, contiguous=False), _stepped_args(13)):
        got = fresh(*args)
        want = _python_grad(stepped, (0, 1), args, monkeypatch)
        np.testing.assert_allclose(got[0], want[0], rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(got[0], numerical_grad(stepped, args, 0), rtol=1e-6,
                                   atol=1e-9)


def test_float32_arguments_keep_numpys_statements(monkeypatch):
    """Not fused (a loop writes float64 arrays): the code for float32 is numpy's."""
    x32 = np.linspace(-0.8, 0.9, 6).astype(np.float32)
    assert "rt.compiled()" not in s2sgrad.show(stepped, x32, 0.7, 3)
    assert "rt.compiled()" in s2sgrad.show(stepped, x32.astype(np.float64), 0.7, 3)


def _rhs_sliced_piece(x, y):
    return x * np.concatenate((x[:1] * 0 + 1, y[:-1]))      # (GradBench ode's RK4 class)


def _rhs_view_piece(x, y):
    return x * np.concatenate((x[:1], y[:-1]))


def _rhs_array_piece(x, y):
    return x * np.concatenate((np.array([1.0]), y[:-1]))


def _rhs_ones_like_piece(x, y):
    return x * np.concatenate((np.ones_like(x[:1]), y[:-1]))


def _stepper(rhs):
    def solve(x, s):
        y = np.zeros(len(x))
        for _ in range(s):
            k1 = rhs(x, y)
            k2 = rhs(x, y + 0.1 * k1)
            y = y + 0.05 * (k1 + k2)
        return y[-1] + 0.5 * np.sum(y * y)
    return solve


@pytest.mark.parametrize("rhs", [_rhs_sliced_piece, _rhs_view_piece, _rhs_array_piece,
                                 _rhs_ones_like_piece], ids=lambda f: f.__name__[5:])
def test_a_joined_piece_of_a_known_length_fuses_like_np_ones(rhs, monkeypatch):
    """A concatenate's piece of any length the lowering knows (``x[:1] * 0 + 1``,
    ``x[:1]``, ``np.array([1.0])``), not only ``np.ones(k)``, is computed before the loop
    and read as ``t3[i] if i < 1``; its adjoint (d's first element, added into
    ``dx[:1]``) is a value of that element in the adjoint loop.  Before, the step stayed
    numpy statements (the RK4 class spelling of GradBench ode: 18 -> 2.6 ms)."""
    solve = _stepper(rhs)
    g = s2sgrad.grad(solve, 0)
    x = np.linspace(0.5, 1.5, 6)
    source = s2sgrad.show(g, x, 3)
    functions = _functions(source.split("\n# s2sgrad: ")[0])
    main = functions.pop("solve_value_and_grad")
    steps = [body for name, body in functions.items() if name != "_dx_pass"]
    assert len(steps) == 2, list(functions)   # one forward, one adjoint loop (+ the sum's)
    forward, adjoint = ("\n".join(b) for b in sorted(steps, key=lambda b: "n - 1, -1" in "\n".join(b)))
    assert re.search(r"t\d+_i = t\d+\[i\] if i < 1 else y_1\[i - 1\]", forward), forward
    if rhs in (_rhs_sliced_piece, _rhs_view_piece):      # a piece x's gradient flows through
        assert re.search(r"dt\d+_i = dt\d+_i if i < 1 else 0.0", adjoint), adjoint
        assert "if i < 1:\n            dx[i] += dt" in adjoint, adjoint
    outside = "\n".join(line for line in main if not line.startswith(" " * 12))
    assert "np.concatenate" not in outside and "split_like" not in outside
    got = g(x, 3)
    monkeypatch.setenv("S2SGRAD_BACKEND", "python")       # the numpy statements' bits
    np.testing.assert_array_equal(got, s2sgrad.grad(solve, 0)(x, 3))
    monkeypatch.setenv("S2SGRAD_BACKEND", "auto")
    np.testing.assert_allclose(got, numerical_grad(solve, (x, 3), 0), rtol=1e-7, atol=1e-10)
    for n in (1, 2, 9):                                   # other lengths, one build
        x = np.linspace(0.5, 1.5, n)
        np.testing.assert_allclose(g(x, 3), numerical_grad(solve, (x, 3), 0), rtol=1e-7,
                                   atol=1e-10)


@pytest.mark.parametrize("transform", ["jit_grad", "vmap_grad", "grad_jit"])
def test_a_joined_piece_of_a_known_length_under_other_transforms(transform):
    solve = _stepper(_rhs_sliced_piece)
    xs = np.stack([np.linspace(0.5, 1.5, 6), np.linspace(-1.0, 0.7, 6)])
    if transform == "vmap_grad":
        got = s2sgrad.vmap(s2sgrad.grad(solve, 0), in_axes=(0, None))(xs, 3)
    else:
        g = s2sgrad.jit(s2sgrad.grad(solve, 0)) if transform == "jit_grad" else \
            s2sgrad.grad(s2sgrad.jit(solve), 0)
        got = np.stack([g(x, 3) for x in xs])
    want = np.stack([numerical_grad(solve, (x, 3), 0) for x in xs])
    np.testing.assert_allclose(got, want, rtol=1e-7, atol=1e-10)


def two_lags(x, s):
    y = x * 0.5
    for _ in range(s):
        a = y * x + 0.25
        b = np.concatenate((np.zeros(2), a[:-2])) * 0.5 + np.concatenate((np.ones(1), a[:-1]))
        y = y + 0.1 * np.sin(b) * a
    return np.sum(y * y)


def test_a_value_read_two_and_one_elements_back_is_carried_in_two_locals(monkeypatch):
    """``a`` read at ``i - 2`` and ``i - 1`` in one loop: ``a_prev2 = a_prev`` then
    ``a_prev = a_i`` at the end of each iteration, not read back from an array."""
    g = s2sgrad.grad(two_lags, 0)
    x = np.linspace(-0.8, 0.9, 7)
    source = s2sgrad.show(g, x, 3).split("\n# s2sgrad: ")[0]
    forward = next(b for name, b in _functions(source).items()
                   if name.endswith("_pass") and "_prev2" in "\n".join(b))
    text = "\n".join(forward)
    local = re.search(r"(\w+)_prev2 if i", text) or re.search(r"else (\w+)_prev2", text)
    name = local.group(1)
    assert f"{name}_prev2 = {name}_prev\n        {name}_prev = {name}_i" in text, text
    assert f"{name}[i - " not in text         # (stored only as a value the tape keeps)
    for n in (7, 1, 2, 3):
        x = np.linspace(-0.8, 0.9, n)
        got = g(x, 3)
        monkeypatch.setenv("S2SGRAD_BACKEND", "python")
        np.testing.assert_array_equal(got, s2sgrad.grad(two_lags, 0)(x, 3))
        monkeypatch.setenv("S2SGRAD_BACKEND", "auto")
        np.testing.assert_allclose(got, numerical_grad(two_lags, (x, 3), 0), rtol=1e-7,
                                   atol=1e-10)
