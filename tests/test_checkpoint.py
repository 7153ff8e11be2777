"""grad(f, memory_limit=...): loops under binomial checkpointing (README: "Long loops under
a memory budget").

Every checkpointed gradient is compared bit for bit with the full-tape gradient of the
same function, with a limit chosen from the loop's own sizes so that checkpointing runs
(the bytes ``MemoryLimitError`` reports for a limit of 1); the bytes the driver kept are
checked against the limit, and the steps it ran against revolve's bound.  The Numba runs
(heat stencil, scalar recurrence) reuse one compiled gradient for every trip count.
"""
import pickle

import numpy as np
import pytest

import s2sgrad
from s2sgrad.errors import (CheckpointError, DerivativeCompositionError,
                            GradientArgumentError, MemoryLimitError)
from s2sgrad.runtime import checkpoint as ck


# ------------------------------------------------------------ programs

def heat(u, alpha, steps):
    for t in range(steps):
        un = u.copy()
        for i in range(1, u.shape[0] - 1):
            un[i] = u[i] + alpha * (u[i - 1] - 2.0 * u[i] + u[i + 1])
        u = un
    return np.sum(u * u)


def recurrence(x, w):
    h = 0.0
    for i in range(x.shape[0]):
        h = np.tanh(w * h + x[i])
    return h


def euler_array(A, y0):
    y = y0.copy()
    for step in range(30):
        y = y + 0.05 * (A @ y - y ** 3)
    return np.sum(y ** 2)


def branches(w, x):
    loss = 0.0
    for i in range(x.shape[0]):
        r = w * x[i]
        if r < -0.5:
            loss = loss - r
        elif r > 0.5:
            loss = loss + np.sin(r * loss)
        else:
            loss = loss + r * r
    return loss


def two_loops_strided(x, w):
    s = 0.0
    for i in range(1, x.shape[0], 3):
        s = s * w + np.exp(x[i] - s)
    t = x[0]
    for j in range(x.shape[0] - 1, 0, -2):
        t = np.cos(t) * w + x[j] * i
    return s + t


def rows_and_while(W, x):
    h = x.copy()
    for t in range(12):
        k = 0
        while k < 2:
            h = np.tanh(W @ h) + 0.1 * h
            k += 1
        h = h / (1.0 + np.sum(h * h))
    return np.sum(h)


RNG = np.random.default_rng(3)
PROGRAMS = {
    "heat": (heat, (np.linspace(0.0, 1.0, 9) ** 2, 0.2, 25), (0, 1)),
    "recurrence": (recurrence, (RNG.normal(size=60), 0.7), (0, 1)),
    "euler_array": (euler_array, (RNG.normal(size=(5, 5)) / 4 - np.eye(5), RNG.normal(size=5)),
                    (0, 1)),
    "branches": (branches, (0.9, RNG.normal(size=40)), (0, 1)),
    "two_loops_strided": (two_loops_strided, (RNG.normal(size=40) / 3, 0.6), (0, 1)),
    "rows_and_while": (rows_and_while, (RNG.normal(size=(4, 4)) / 2, RNG.normal(size=4)),
                       (0, 1)),
}


def sizes(fn, args, pos):
    """(snapshot bytes, one step's tape bytes) of the first loop, from the error a limit
    of one byte gives."""
    with pytest.raises(MemoryLimitError) as info:
        s2sgrad.value_and_grad(fn, grad_position=pos, memory_limit=1)(*args)
    return info.value.state_bytes, info.value.tape_bytes


def same(a, b):
    """Bit for bit, through tuples."""
    if isinstance(a, tuple):
        return all(same(p, q) for p, q in zip(a, b, strict=True))
    return np.array_equal(np.asarray(a), np.asarray(b))


# ------------------------------------------------------------ the driver alone

@pytest.mark.parametrize("n,slots", [(1, 1), (2, 1), (7, 1), (10, 2), (33, 3), (100, 4),
                                     (57, 57), (64, 9)])
def test_schedule_reverses_every_step_from_its_state_within_the_slots(n, slots):
    """A toy loop whose state is the step count: each adjoint step gets the state its
    step started from, last first; no more than ``slots`` snapshots; no step run forward
    more than ``r`` times (r: revolve's repetition number) besides its taped run."""
    seen = []

    def step(t, state, consts):
        return (state[0] + 1,)

    def taped(t, state, consts):
        return (state[0] + 1,), (state[0],), 8

    def adjoint(t, tape, consts, carry):
        seen.append((t, tape[0]))
        return (carry[0] + 1,)

    final, snapshots = ck.checkpoint_forward(step, 5, 2, n, slots, (0,), ())
    assert final == (n,) and len(snapshots[1]) <= slots
    carry, peak, steps = ck.reverse_sweep(step, taped, adjoint, 5, 2, n, slots, snapshots,
                                          (), (), (0,))
    assert seen == [(5 + 2 * k, k) for k in range(n - 1, -1, -1)] and carry == (n,)
    assert peak <= slots * (8 + 8) + 8       # snapshots with their step numbers, a tape
    r = ck.repetitions(n, slots)
    assert steps - n <= r * n          # recomputations (the taped runs apart)


def test_slots_fit_the_limit_and_too_small_a_limit_is_refused():
    assert ck.slots_for(10, 1000, 100, 50, "f.py:3") == 0            # 500 bytes: whole tape
    assert ck.slots_for(100, 1000, 100, 50, "f.py:3") == 8           # 8 * (100 + 8) + 50
    assert ck.slots_for(5, 10_000, 100, 500, "f.py:3") == 0
    with pytest.raises(MemoryLimitError, match="f.py:3: memory_limit=120 bytes is too small"):
        ck.slots_for(100, 120, 100, 50, "f.py:3")


# ------------------------------------------------------------ gradients, Python

@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_checkpointed_gradient_is_the_full_tape_gradient_bit_for_bit(name, monkeypatch):
    monkeypatch.setenv("S2SGRAD_BACKEND", "python")
    fn, args, pos = PROGRAMS[name]
    state, tape = sizes(fn, args, pos)
    limit = 3 * state + tape
    full = s2sgrad.value_and_grad(fn, grad_position=pos)(*args)
    ck.LAST.clear()
    checkpointed = s2sgrad.value_and_grad(fn, grad_position=pos, memory_limit=limit)(*args)
    assert same(full, checkpointed)
    assert ck.LAST["slots"] >= 1 and 0 < ck.LAST["peak_bytes"] <= limit


def test_a_new_trip_count_plans_again(monkeypatch):
    """The same gradient keeps the whole tape for a short run, checkpoints a long one and
    keeps the whole tape again for a short one."""
    monkeypatch.setenv("S2SGRAD_BACKEND", "python")
    u = np.linspace(0.0, 1.0, 9) ** 2
    g = s2sgrad.grad(heat, memory_limit=80 * 4 + 200)   # four snapshots and a tape
    full = s2sgrad.grad(heat)
    for steps, checkpoints in ((3, False), (40, True), (2, False), (41, True)):
        ck.LAST.clear()
        assert same(g(u, 0.3, steps), full(u, 0.3, steps))
        assert (ck.LAST["slots"] > 0) == checkpoints


# ------------------------------------------------------------ gradients, Numba

@pytest.fixture(scope="module")
def numba_gradients():
    """(full tape, checkpointed) Numba value_and_grad of heat and of the recurrence,
    built once for the module."""
    mp = pytest.MonkeyPatch()
    mp.setenv("S2SGRAD_BACKEND", "numba")
    made = {"heat": (s2sgrad.value_and_grad(heat), s2sgrad.value_and_grad(
        heat, memory_limit=8 * 9 * 3 + 8 * 9 + 8)),
            "recurrence": (s2sgrad.value_and_grad(recurrence, grad_position=(0, 1)),
                           s2sgrad.value_and_grad(recurrence, grad_position=(0, 1),
                                                  memory_limit="100B"))}
    yield made
    mp.undo()


@pytest.mark.parametrize("steps", [3, 30, 200])
def test_numba_heat_stencil_checkpointed_equals_full_tape(numba_gradients, steps):
    full, checkpointed = numba_gradients["heat"]
    u = np.linspace(0.0, 1.0, 9) ** 2
    assert same(full(u, 0.2, steps), checkpointed(u, 0.2, steps))
    assert checkpointed.backend == "numba" and full.backend == "numba"


@pytest.mark.parametrize("n", [5, 300])
def test_numba_scalar_recurrence_checkpointed_equals_full_tape(numba_gradients, n):
    full, checkpointed = numba_gradients["recurrence"]
    x = np.sin(np.arange(float(n)))
    assert same(full(x, 0.8), checkpointed(x, 0.8))
    assert checkpointed.backend == "numba"


def test_numba_driver_counts_the_same_bytes():
    """The driver compiled by Numba keeps what the Python one keeps (its count of bytes
    is the same code: compared on a toy loop)."""
    import numba

    from s2sgrad.backend import numba_checkpoint  # noqa: F401  (the overloads)

    @numba.njit
    def step(t, state, consts):
        return (state[0] * consts[0] + t,)

    @numba.njit
    def taped(t, state, consts):
        return (state[0] * consts[0] + t,), (state[0],), 8

    @numba.njit
    def adjoint(t, tape, consts, carry):
        return (carry[0] * consts[0] + tape[0],)

    @numba.njit
    def run(n, slots):
        state, snaps = ck.checkpoint_forward(step, 0, 1, n, slots, (np.float64(1.0),),
                                             (np.float64(0.5),))
        return ck.reverse_sweep(step, taped, adjoint, 0, 1, n, slots, snaps,
                                (np.float64(0.5),), (np.float64(0.5),), (np.float64(1.0),))

    snaps = ck.checkpoint_forward(step.py_func, 0, 1, 50, 4, (1.0,), (0.5,))[1]
    expected = ck.reverse_sweep(step.py_func, taped.py_func, adjoint.py_func, 0, 1, 50, 4,
                                snaps, (0.5,), (0.5,), (1.0,))
    assert run(50, 4) == expected and expected[1] <= 4 * 16 + 8


COMPILES_IN_A_NEW_PROCESS = r"""
import json, sys
import numpy as np
import numba.core.compiler as compiler
compiles = []
compile_extra = compiler.compile_extra
def counted(*args, **kwargs):
    compiles.append(args[3] if len(args) > 3 else "?")
    return compile_extra(*args, **kwargs)
compiler.compile_extra = counted            # what every Numba compile runs
import s2sgrad
from test_checkpoint import recurrence
g = s2sgrad.value_and_grad(recurrence, grad_position=(0, 1), memory_limit="100B")
value, (dx, dw) = g(np.sin(np.arange(300.0)), 0.8)
print(json.dumps({"compiles": len(compiles), "backend": g.backend,
                  "result": [float(value), dx.tolist(), float(dw)]}))
"""


def test_a_new_process_loads_the_checkpointed_gradient_from_numbas_cache(numba_gradients,
                                                                          tmp_path):
    """The checkpointed gradient is kept in Numba's on-disk cache like any other: a new
    process with the same cache folder runs it without compiling anything (it passed its
    step functions to the driver as values, which Numba does not cache: ~6 s a process).
    Both processes compile at Numba's default optimisation level, the users' (the suite's
    ``NUMBA_OPT=0`` leaves the step functions' addresses in the driver's code, which Numba
    then does not cache: a compile in every process, never a wrong result)."""
    import json
    import os
    import pathlib
    import subprocess
    import sys
    _, checkpointed = numba_gradients["recurrence"]
    x = np.sin(np.arange(300.0))
    value, (dx, dw) = checkpointed(x, 0.8)
    tests = pathlib.Path(__file__).resolve().parent
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_OPT"}
    env.update(S2SGRAD_BACKEND="numba", S2SGRAD_QUIET="1", S2SGRAD_CACHE_DIR=str(tmp_path),
               PYTHONPATH=os.pathsep.join([str(tests.parent), str(tests)]))
    children = []
    for _ in range(2):                      # the first fills the cache, the second loads it
        done = subprocess.run([sys.executable, "-c", COMPILES_IN_A_NEW_PROCESS], env=env,
                              capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, done.stderr
        children.append(json.loads(done.stdout.strip().splitlines()[-1]))
    assert [child["backend"] for child in children] == ["numba", "numba"]
    assert children[0]["compiles"] > 0
    assert children[1]["compiles"] == 0, children[1]["compiles"]
    for child in children:
        assert child["result"] == [float(value), dx.tolist(), float(dw)]


# ------------------------------------------------------------ what it refuses

def while_loop(x):
    s = 0.0
    k = 0
    while k < x.shape[0]:
        s = np.sin(s + x[k])
        k += 1
    return s


def with_break(x):
    s = 0.0
    for i in range(x.shape[0]):
        s = np.sin(s + x[i])
        if s > 0.9:
            break
    return s


def in_place(u, f):
    for sweep in range(5):
        for i in range(1, u.shape[0] - 1):
            u[i] = 0.5 * (u[i - 1] + u[i + 1] + f[i])
    return np.sum(u * u)


def under_branch(x):
    s = 0.0
    if x[0] > 0.0:
        for i in range(x.shape[0]):
            s = np.sin(s + x[i])
    return s


@pytest.mark.parametrize("fn,args,what", [
    (while_loop, (np.ones(5),), "this is a while loop"),
    (with_break, (np.ones(5),), "this is a loop with `break`"),
    (in_place, (np.ones(6), np.ones(6)), "its body writes into `u`"),
    (under_branch, (np.ones(5),), "under an `if`"),
])
def test_loops_it_cannot_checkpoint_are_refused_naming_their_line(fn, args, what,
                                                                  monkeypatch):
    monkeypatch.setenv("S2SGRAD_BACKEND", "python")
    with pytest.raises(CheckpointError, match=what) as info:
        s2sgrad.grad(fn, memory_limit="1MB")(*args)
    assert "test_checkpoint.py:" in str(info.value)


def growing_tape(x, w):
    s = 0.0
    for t in range(x.shape[0]):
        acc = s
        for k in range(t + 1):          # a step's tape grows with t
            acc = np.sin(acc * w + x[k])
        s = acc
    return s


def test_a_later_step_whose_tape_passes_the_limit_is_refused_naming_it(monkeypatch):
    """The snapshots are planned from the first step's tape; every step's is measured
    again as the adjoint keeps it, and one that passes the limit with the snapshots kept
    then is refused, naming the loop and the step (never more kept than the limit)."""
    monkeypatch.setenv("S2SGRAD_BACKEND", "python")
    x = np.linspace(0.1, 1.0, 12)
    with pytest.raises(MemoryLimitError, match="step 11 keeps a tape of") as info:
        s2sgrad.grad(growing_tape, 1, memory_limit=200)(x, 0.7)
    assert "test_checkpoint.py:" in str(info.value) and info.value.step == 11
    assert pickle.loads(pickle.dumps(info.value)).step == 11
    # a limit that holds every step's tape: the same gradient as the full tape, within it
    full = s2sgrad.grad(growing_tape, 1)(x, 0.7)
    assert same(s2sgrad.grad(growing_tape, 1, memory_limit=320)(x, 0.7), full)
    assert ck.LAST["slots"] > 0 and 0 < ck.LAST["peak_bytes"] <= 320


def test_too_small_a_limit_names_the_loop_and_the_bytes_needed(monkeypatch):
    monkeypatch.setenv("S2SGRAD_BACKEND", "python")
    with pytest.raises(MemoryLimitError) as info:
        s2sgrad.grad(recurrence, memory_limit=12)(np.ones(30), 0.5)
    text = str(info.value)
    line = recurrence.__code__.co_firstlineno + 2          # the for statement
    assert f"test_checkpoint.py:{line}:" in text and "memory_limit=12 bytes" in text
    assert info.value.state_bytes == 8 + 8 and "at least" in text


@pytest.mark.parametrize("text,expected", [("2GB", 2 * 10**9), ("512 MB", 512 * 10**6),
                                           ("1.5GiB", 3 * 2**29), ("100kB", 10**5),
                                           (4096, 4096), ("1e6", 10**6)])
def test_memory_limit_spellings(text, expected):
    assert s2sgrad.grad(recurrence, memory_limit=text).memory_limit == expected


@pytest.mark.parametrize("bad", ["2 parsecs", "", -1, 0, True, [1], float("nan"), "GB"])
def test_memory_limit_that_is_no_size_is_refused(bad):
    with pytest.raises(GradientArgumentError, match="is not a size"):
        s2sgrad.grad(recurrence, memory_limit=bad)
    with pytest.raises(GradientArgumentError, match="is not a size"):
        s2sgrad.value_and_grad(memory_limit=bad)


# ------------------------------------------------------------ with the other transforms

def test_compositions(monkeypatch):
    monkeypatch.setenv("S2SGRAD_BACKEND", "python")
    x = np.sin(np.arange(40.0))
    g = s2sgrad.grad(recurrence, memory_limit=120)
    plain = s2sgrad.grad(recurrence)
    assert same(g(x, 0.5), plain(x, 0.5))
    # a decorator, value_and_grad with aux, a pickle, vmap: the same numbers
    decorated = s2sgrad.value_and_grad(grad_position=1, has_aux=True, memory_limit=120)(
        lambda x, w: (recurrence(x, w), w))
    assert same(decorated(x, 0.5), s2sgrad.value_and_grad(
        lambda x, w: (recurrence(x, w), w), grad_position=1, has_aux=True)(x, 0.5))
    assert same(pickle.loads(pickle.dumps(g))(x, 0.5), plain(x, 0.5))
    batch = np.stack([x, 2 * x])
    assert same(s2sgrad.vmap(g)(batch, np.array([0.5, 0.6])),
                np.stack([plain(batch[0], 0.5), plain(batch[1], 0.6)]))
    # differentiated again: refused, never a derivative of lower order
    with pytest.raises(DerivativeCompositionError, match="memory_limit"):
        s2sgrad.grad(lambda x, w: np.sum(g(x, w)))(x, 0.5)
    with pytest.raises(DerivativeCompositionError, match="memory_limit"):
        s2sgrad.jvp(g, (x, 0.5), (x, 1.0))
    with pytest.raises(DerivativeCompositionError, match="memory_limit"):
        s2sgrad.grad(plain, memory_limit=100)
