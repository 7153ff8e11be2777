"""Fused loops that keep their values (compiler/optimize/loops.py, loop_tapes.py): the
lstm eval's kind of step, whose gate chains are taped for the adjoint.  Checked on one
gated recurrence (a cell and a hidden row per layer, sigmoid and tanh gates of slices of a
concatenate, rows written in place): the forward chain is one loop writing its values as
the rows of one array, the list tape keeps that array (not each row), the adjoint's chain
(rows of accumulators, slices of a fresh ``np.zeros_like``, ``rt.unbroadcast``) is one
loop; under Numba the same bits as the numpy statements run as Python and central
differences, for lengths and layer counts that change between calls of one compiled
gradient (the first call's sizes are not the later ones'), zero-trip inner loops, and
rows of another length than the concatenate they are slices of.
"""
import numpy as np
import pytest

import s2sgrad
from s2sgrad.runtime import stacked_rows
from s2sgrad.testing import numerical_grad


def gated(params, state, seq):
    b = seq.shape[1]
    hidden = state[0::2].copy()
    cell = state[1::2].copy()
    total = 0.0
    for t in range(seq.shape[0] - 1):
        x = seq[t]
        for j in range(hidden.shape[0]):
            gates = np.concatenate((x, hidden[j])) * params[j]
            forget = 1.0 / (1.0 + np.exp(-gates[0:b]))
            change = np.tanh(gates[b:])
            cell[j] = cell[j] * forget + change
            hidden[j] = forget * np.tanh(cell[j])
            x = hidden[j]
        total = total + np.sum(seq[t + 1] * x)
    return total


GRAD = s2sgrad.grad(gated, (0, 1))
PYTHON = []


def _args(layers, b, c, seed=0):
    rng = np.random.default_rng(seed)
    return (rng.uniform(-1, 1, (layers, 2 * b)), rng.uniform(-1, 1, (2 * layers, b)),
            rng.uniform(-1, 1, (c, b)))


def _python(args, monkeypatch):
    monkeypatch.setenv("S2SGRAD_BACKEND", "python")
    if not PYTHON:
        PYTHON.append(s2sgrad.grad(gated, (0, 1)))
    got = PYTHON[0](*args)
    monkeypatch.setenv("S2SGRAD_BACKEND", "auto")
    return got


def _body(source, start):
    """The lines of the loop that opens with ``start`` (its indented block)."""
    lines = source.splitlines()
    k = next(k for k, line in enumerate(lines) if line.strip().startswith(start))
    indent = len(lines[k]) - len(lines[k].lstrip())
    end = next(j for j in range(k + 1, len(lines))
               if lines[j].strip() and len(lines[j]) - len(lines[j].lstrip()) <= indent)
    return lines[k:end]


def test_the_taped_chains_are_loops_and_the_tape_keeps_their_rows():
    source = s2sgrad.show(GRAD, *_args(2, 3, 5))
    forward = _body(source, "for j in range(hidden_shape0)")
    compiled = [line for line in forward if line.startswith(" " * 16) and "_pass(" in line]
    assert len(compiled) == 1                    # the gates and cell (the hidden row's
    append = next(line for line in forward if "tape.append((" in line)    # two: numpy's)
    assert append.count("_rows") == 1 and append.count(",") == 5    # 6 values, not 11
    text = "\n".join(forward)
    # the saved cell row is taken before the row is written (not moved past it)
    assert text.index("cell_saved_1.append(") < text.index("cell[j] = t")
    adjoint = _body(source, "for j in range(n_iter_1 - 1, -1, -1)")
    pop = next(k for k, line in enumerate(adjoint) if "= tape.pop()" in line)
    assert "_rows" in adjoint[pop]
    calls = [line for line in adjoint if "_pass(" in line and "def " not in line]
    assert len(calls) == 1                       # the adjoint's chain: one loop
    loops = source.split("\ndef ")
    chain = next(f for f in loops if f.startswith(calls[0].split("_pass(")[0].split()[-1]))
    assert chain.count("] += ") == 4 and chain.count("] = 0") == 2 and "np." not in chain
    # numpy's statements stay as the else, and rebuild the block the tape keeps
    assert "rt.stacked_rows((" in source


def test_the_adjoint_loop_reads_the_taped_block_s_rows_by_index():
    """The adjoint's loop takes the popped block, not its rows one array each (Numba
    counts each array's references: loop_rows.py), and the block is unpacked only where
    its statements run as numpy."""
    source = s2sgrad.show(GRAD, *_args(2, 3, 5))
    adjoint = _body(source, "for j in range(n_iter_1 - 1, -1, -1)")
    block = next(line for line in adjoint if "= tape.pop()" in line).split("_rows")[0]
    block = block.split()[-1] + "_rows"
    header = next(f for f in source.split("\ndef ") if f.startswith("_dt"))
    params = header[header.index("(") + 1:header.index(")")].replace("\n", " ").split(", ")
    assert block in params and len(params) == 9   # 13 before: 6 rows, 5 read; then 8
    # the rows and slices of accumulators come from their arrays and indices
    assert "dcell" in params and "dgates_1" in params and "j" in params  # (loop_views.py)
    assert f"{block}[2, i]" in header and f"{block}.shape[1:]" in "\n".join(adjoint)
    text = "\n".join(adjoint)
    unpack = next(k for k, line in enumerate(adjoint) if line.strip().endswith(f"= {block}"))
    assert text.index("elif SKIP_ELSE:") < text.index(adjoint[unpack])     # in the else


def test_the_rows_loop_composes_with_vmap_and_jit():
    """vmap of the gradient (one build per example's sizes) and jit of a function that
    calls it give the gradient of each example."""
    params, state, seq = _args(2, 3, 4, seed=7)
    grad = s2sgrad.grad(gated, 0)
    batch = np.stack([params, params * 0.5, -params])
    mapped = s2sgrad.vmap(lambda p: grad(p, state, seq))(batch)
    jitted = s2sgrad.jit(lambda p: grad(p, state, seq) * 2.0)
    for k in range(3):
        want = numerical_grad(gated, (batch[k], state, seq), 0)
        np.testing.assert_allclose(mapped[k], want, rtol=1e-6, atol=1e-9)
        np.testing.assert_allclose(jitted(batch[k]), 2.0 * want, rtol=1e-6, atol=1e-9)


@pytest.mark.parametrize("layers, b, c", [(2, 3, 5), (3, 5, 4), (0, 4, 3), (2, 4, 2)])
def test_rows_on_the_tape_match_numpy_and_central_differences(layers, b, c, monkeypatch):
    """One compiled gradient for every size (no dimension of 1: one build): the first
    call's (2, 3, 5) is not the later ones'; no layers: zero-trip inner loops."""
    args = _args(layers, b, c, seed=layers * 10 + b)
    got = GRAD(*args)
    want = _python(args, monkeypatch)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-14)
    for k in (0, 1):
        np.testing.assert_allclose(got[k], numerical_grad(gated, args, k), rtol=1e-6,
                                   atol=1e-9)
    assert GRAD.backend == "numba"


def test_stacked_rows_keeps_rows_of_several_lengths_as_they_are():
    rows = stacked_rows((np.arange(3.0), np.ones(3)))
    assert rows.shape == (2, 3) and rows[0, 2] == 2.0
    short = np.ones(1)
    kept = stacked_rows((np.arange(3.0), short))
    assert isinstance(kept, tuple) and kept[1] is short


def broadcast_slices(x, y, k):
    total = 0.0
    for i in range(3):
        a = x[i:i + k]
        b = np.sin(a) * y
        c = b * a + y
        d = np.tanh(c) * b
        total = total + np.sum(d * d)
    return total


BROADCAST = s2sgrad.grad(broadcast_slices, (0, 1))


def test_a_fused_loop_whose_run_time_slices_broadcast_gives_numpy_s_gradient():
    """The loop's lengths are compared at run time: with k = 1 the slice broadcasts
    against y, the guard fails and numpy's values (of two lengths) are kept as they are;
    compiled code cannot hold them and the call runs as Python.  Before: an error
    ("please report this program") where the unfused code gave the gradient.  The guard
    fails at the first call: the code Numba compiled without the else (``rt.SKIP_ELSE``)
    gives way to the code compiled with it, from then on (the other order:
    test_cold_compile.py)."""
    x, y = np.linspace(0.1, 1.0, 8), np.linspace(1.0, 2.0, 4)
    for k in (1, 4, 1, 4):
        got = BROADCAST(x, y, k)
        for position in (0, 1):
            np.testing.assert_allclose(
                got[position], numerical_grad(broadcast_slices, (x, y, k), position),
                rtol=1e-6, atol=1e-9)
    assert BROADCAST.backend == "numba" and not BROADCAST._compiled.skips_else
    assert "_pass(" in s2sgrad.show(BROADCAST, x, y, 4)      # still fused where it can