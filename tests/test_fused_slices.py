"""Slice writes into a fresh array fused (compiler/optimize/loops.py): a right-hand side
spelled ``r = np.empty(len(y)); r[0] = ...; r[1:] = <elementwise of slices>`` (or
``np.zeros_like`` with ``r[:-1]`` then ``r[-1]``) is part of the loop of the statements
around it, forward (each piece's element under its test of ``i``) and adjoint (a slice's
adjoint read where it lies, added into ``dx`` in place).  Checked: the generated code, the
same values as the numpy statements (Python backend) and central differences, a length
other than the first call's, lengths that differ at run time (the guard fails: numpy's
result, or numpy's error), and a Hessian-vector product of a program of the class.
"""
import numpy as np
import pytest

import s2sgrad
from s2sgrad.testing import numerical_grad


def rhs_front(x, y):
    r = np.empty(len(y))
    r[0] = x[0]
    r[1:] = x[1:] * y[:-1]
    return r


def rhs_like(x, y):
    r = np.empty_like(y)
    r[0] = x[0]
    r[1:] = x[1:] * y[:-1]
    return r


def rhs_back(x, y):
    r = np.zeros_like(y)
    r[:-1] = x[:-1] * y[1:]
    r[-1] = 0.5 * x[-1]
    return r


def stepped(x, s):
    """y of x's length: the pieces' adjoints fuse too."""
    y = np.zeros(x.shape[0])
    for _ in range(s):
        k1 = rhs_like(x, y)
        k2 = rhs_back(x, y + 0.05 * k1)
        y = y + 0.1 * (k1 + 2 * k2)
    return y[-1] + 0.5 * np.sum(y * y)


def two(x, y, s):
    """x and y of lengths known only at run time (the loop's guard compares them)."""
    for _ in range(s):
        k1 = rhs_front(x, y)
        k2 = rhs_back(x, y + 0.05 * k1)
        y = y + 0.1 * (k1 + 2 * k2)
    return np.sum(y * y)


GRADS = {"stepped": s2sgrad.grad(stepped, 0), "two": s2sgrad.grad(two, (0, 1))}
PYTHON = {}


def _python(fn, positions, args, monkeypatch):
    """The gradient the numpy statements give (the code run as Python)."""
    monkeypatch.setenv("S2SGRAD_BACKEND", "python")
    got = PYTHON.setdefault(fn.__name__, s2sgrad.grad(fn, positions))(*args)
    monkeypatch.setenv("S2SGRAD_BACKEND", "auto")
    return got


def _passes(source):
    """name -> body text of each loop function ``_..._pass`` in ``source``."""
    found, lines = {}, source.splitlines()
    for k, line in enumerate(lines):
        if line.startswith("def _") and "_pass(" in line:
            end = next((j for j in range(k + 1, len(lines)) if lines[j] and
                        not lines[j].startswith(" ")), len(lines))
            found[line[4:line.index("(")]] = "\n".join(lines[k + 1:end])
    return found


def test_the_slice_writes_are_inside_one_forward_and_one_adjoint_pass():
    source = s2sgrad.show(GRADS["stepped"], np.linspace(0.5, 1.5, 6), 3)
    passes = _passes(source.split("\n# s2sgrad: ")[0])
    forward = [b for b in passes.values() if "if i < 1:" in b and "if i >= n - 1:" in b]
    assert len(forward) == 1, source            # r[0], r[1:], r[:-1], r[-1]: one loop
    assert "r_i = x[i] * y_1[i - 1]" in forward[0]          # r[1:] = x[1:] * y[:-1]
    assert "r_1_i = x[i] * t5_next" in forward[0]    # r[:-1] = x[:-1] * y[1:]: t5[i + 1], carried
    adjoint = [b for b in passes.values() if "dx[i] +=" in b]
    assert len(adjoint) == 1, source            # the pieces' adjoints, added into dx
    assert "if i >= n - 1:\n            dx[i] += " in adjoint[0]    # of r[-1] = 0.5 * x[-1]
    assert "if i < n - 1:\n            dx[i] += " in adjoint[0]     # of r[:-1] = ...
    assert "dt5_i += dt7_prev" in adjoint[0]         # y[1:]'s adjoint: dt7[i - 1], carried
    body = source.split("def stepped_value_and_grad", 1)[1].split("\ndef ", 1)[0]
    assert body.count("rt.one_length(") == 3    # the forward step, the adjoint step, dy


@pytest.mark.parametrize("n", [6, 1, 2, 11])  # 6 first: then lengths the first call had not
def test_the_same_values_as_numpy_and_central_differences(n, monkeypatch):
    x = np.linspace(0.5, 1.5, n)
    got = GRADS["stepped"](x, 4)
    np.testing.assert_allclose(got, _python(stepped, 0, (x, 4), monkeypatch), rtol=1e-13,
                               atol=1e-15)
    np.testing.assert_allclose(got, numerical_grad(stepped, (x, 4), 0), rtol=1e-6,
                               atol=1e-9)


@pytest.mark.parametrize("n,m", [(5, 5), (2, 5)])  # (2, 5): x[1:] broadcasts against y[:-1]
def test_lengths_that_differ_at_run_time_give_numpys_result(n, m, monkeypatch):
    args = (np.linspace(0.5, 1.5, n), np.linspace(-0.3, 0.4, m), 3)
    got = GRADS["two"](*args)
    want = _python(two, (0, 1), args, monkeypatch)
    for k in range(2):
        np.testing.assert_allclose(got[k], want[k], rtol=1e-13, atol=1e-15)
        np.testing.assert_allclose(got[k], numerical_grad(two, args, k), rtol=1e-6,
                                   atol=1e-9)


def test_a_length_numpy_cannot_take_raises_numpys_error():
    with pytest.raises(ValueError, match="broadcast"):       # x[1:] of 0 against y[:-1] of 3
        GRADS["two"](np.ones(1), np.ones(4), 2)


def test_a_hessian_vector_product_through_the_fused_pieces():
    x, v = np.linspace(0.5, 1.5, 5), np.linspace(1.0, -1.0, 5)
    got = s2sgrad.jvp(lambda x: GRADS["stepped"](x, 3), (x,), (v,))[1]
    h = 1e-6
    want = (GRADS["stepped"](x + h * v, 3) - GRADS["stepped"](x - h * v, 3)) / (2 * h)
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-8)


def test_only_an_array_no_other_name_holds_is_written_in_place_beside_shifted_reads():
    """``loop_space.exclusive``: the arrays a loop may write in place while it reads
    others at ``i - 1`` (an alias, a view, a tape or a call could see the write)."""
    import gast
    from s2sgrad.compiler.optimize.loop_space import exclusive
    source = """
a = np.zeros_like(x)
rt.add_into(a[1:], g)
a[0] += g0
b = np.zeros_like(x)
c = b
d = np.zeros_like(x)
t = d[1:]
e = np.zeros_like(x)
tape.append(e)
f = x * 2.0
u = f.T
h = np.zeros_like(x)
h = h + np.exp(h)
"""
    assert exclusive(gast.parse(source).body) == {"a", "h"}
