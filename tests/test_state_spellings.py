"""The same stencil spelled with another way of making the next state array gets the same
generated code (issue 9: ``un = np.array(u)`` or ``np.zeros_like(u)`` instead of
``u.copy()`` lost the arrays' ranks, so every scalar of the loop went on a Python list
and every adjoint through ``rt.unbroadcast``: several times slower), and the gradients
stay those of central finite differences."""
import importlib.util
import re
import textwrap

import numpy as np
import pytest

import s2sgrad
from s2sgrad.errors import UnsupportedConstructError
from s2sgrad.testing import check_grad


@pytest.fixture(autouse=True)
def python_backend(monkeypatch):
    monkeypatch.setenv("S2SGRAD_BACKEND", "python")


#: ways of making the array a time step writes into (boundaries copied where needed)
SPELLINGS = {
    "copy_method": "un = u.copy()",
    "np_copy": "un = np.copy(u)",
    "np_array": "un = np.array(u)",
    "np_array_dtype": "un = np.array(u, dtype=np.float64)",
    "astype": "un = u.astype(np.float64)",
    "slice_copy": "un = u[:].copy()",
    "zeros_like": "un = np.zeros_like(u)\nun[0] = u[0]\nun[-1] = u[-1]",
    "full_like": "un = np.full_like(u, 0.0)\nun[0] = u[0]\nun[-1] = u[-1]",
    "empty_like_fill": "un = np.empty_like(u)\nun[:] = u",
    "zeros_int": "un = np.zeros(u.shape[0])\nun[0] = u[0]\nun[-1] = u[-1]",
    "zeros_shape": "un = np.zeros(u.shape)\nun[0] = u[0]\nun[-1] = u[-1]",
    "zeros_tuple": "un = np.zeros((n,))\nun[0] = u[0]\nun[-1] = u[-1]",
    "ones_times": "un = np.ones(n) * u",
}


def stencil(spelling, folder):
    make = textwrap.indent(SPELLINGS[spelling], " " * 8).lstrip()
    source = (
        "import numpy as np\n\n\n"
        "def stencil(u0, k):\n"
        "    u = u0.copy()\n"
        "    n = u0.shape[0]\n"
        "    for step in range(3):\n"
        f"        {make}\n"
        "        for i in range(1, n - 1):\n"
        "            un[i] = u[i] + k * (u[i - 1] - 2.0 * u[i] + u[i + 1])\n"
        "        u = un\n"
        "    return np.sum(u ** 2)\n")
    path = folder / f"stencil_{spelling}.py"       # s2sgrad reads the source from a file
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(f"stencil_{spelling}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.stencil


@pytest.mark.parametrize("spelling", sorted(SPELLINGS))
def test_every_spelling_keeps_scalars_off_lists(spelling, tmp_path):
    fn = stencil(spelling, tmp_path)
    args = (np.random.default_rng(2).random(8), 0.2)
    check_grad(fn, args, grad_position=(0, 1))
    g = s2sgrad.value_and_grad(fn, (0, 1))
    g(*args)
    backward = g.source.split("# sensitivity of the output")[1]
    inner = backward.split("for i in range(")[1].split("# grad of: un = ")[0]
    # the cell's scalars are read again from the states, not popped off Python lists;
    # their adjoints are scalars (no broadcasting to undo)
    assert ".pop()" not in inner and "_tape[" not in inner, g.source
    assert "rt.unbroadcast" not in inner, g.source
    # the state array goes on a list tape (its own, or with the loop's other values in
    # one record: ``tape.append((u_1, t6))``)
    assert re.search(r"\.append\(\(?(\w+, )*u_1\b", g.source), g.source


def heat_chained(u0, k):
    u = u0.copy()
    for step in range(2):
        un = u.copy()
        for i in range(1, u.shape[0] - 1):
            for j in range(1, u.shape[1] - 1):
                un[i][j] = u[i][j] + k * (u[i - 1][j] + u[i + 1][j] + u[i][j - 1]
                                          + u[i][j + 1] - 4.0 * u[i][j])
        u = un
    return np.sum(u ** 2)


def slices_and_rows(x, w):
    total = 0.0
    for i in range(x.shape[0] - 1):
        total += np.sum(x[i][1:] * w) + np.sum(x[1:][i][:2] * w)   # row, slice; slice, row
    return total


def test_chained_indexing_is_one_subscript():
    """``u[i][j]`` (read or written, i an int) is ``u[i, j]``: an element, not a row view
    per element (whose adjoint was a row of zeros per element read: 2,000x slower)."""
    args = (np.random.default_rng(1).random((5, 4)), 0.1)
    check_grad(heat_chained, args, grad_position=(0, 1))
    g = s2sgrad.grad(heat_chained, (0, 1))
    g(*args)
    assert "rt.add_into" not in g.source and "u_1[i, j]" in g.source, g.source


def test_chained_indexing_with_slices_keeps_numpys_meaning():
    args = (np.random.default_rng(2).random((4, 3)), np.array([0.3, 0.7]))
    check_grad(slices_and_rows, args, grad_position=(0, 1))


def write_through_a_slice_then_row(x, v):
    m = x * 1.0
    m[1:][0] = v        # m[1:] is a view, [0] its first row: not m[1:, 0]
    return np.sum(m * m)


def test_a_nested_write_that_is_not_one_subscript_is_refused_saying_what_to_write():
    with pytest.raises(UnsupportedConstructError) as info:
        s2sgrad.grad(write_through_a_slice_then_row, (0, 1))(np.ones((3, 2)), 2.0)
    text = str(info.value)
    assert "nested subscript" in text and "write one subscript: a[i, j] = v" in text
    assert "test_state_spellings.py" in text and "m[1:][0]" in text
