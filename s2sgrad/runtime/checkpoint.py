"""The driver of a loop differentiated under ``memory_limit``: binomial checkpointing.

Generated code calls these as ``rt.*`` for a loop it wrote as three step functions
(``compiler/reverse/checkpoint.py``): ``step(t, state, consts)`` runs one iteration on
the loop-carried ``state`` (a tuple) and gives the next; ``taped(t, state, consts)``
runs it keeping what its adjoint reads, giving ``(next state, tape, tape bytes)``;
``adjoint(t, tape, consts, carry)`` runs that iteration's adjoint on the one-step tape,
giving the next ``carry`` (the adjoints and restored values the reversed loop passes on).

``checkpoint_slots`` decides, once the trip count is known, whether the whole tape fits
in the limit (0: run the loop as usual) or how many snapshots of the state it holds;
``checkpoint_forward`` runs the loop storing the first snapshots, and
``checkpoint_reverse`` runs the adjoint steps last first, recomputing the states between
snapshots (revolve: Griewank & Walther, ACM TOMS 26(1), 2000): with ``c`` snapshots no
step is run forward more than ``r`` times, ``r`` the least with C(c + r, c) >= n.
The bytes kept (snapshots with their step numbers, and one step's tape) never pass the
limit; the Python version records them in ``LAST`` (the Numba one,
``backend/numba_checkpoint.py``, runs the same code without the record).
"""
import numpy as np

from ..errors import MemoryLimitError

#: what the last checkpointed loop run as Python kept: ``slots``, ``state_bytes``,
#: ``tape_bytes``, ``peak_bytes`` (snapshots and tape at most), ``forward_steps``
#: (steps run forward, the taped ones included), ``limit``
LAST = {}


def nbytes(value):
    """The bytes of one value kept: an array's data, 8 for a number."""
    if isinstance(value, np.ndarray):
        return value.nbytes
    return 8


def state_bytes(state):
    """The bytes of a tuple of loop-carried values."""
    return sum(nbytes(v) for v in state)


def tape_bytes(tape):
    """The bytes a one-step tape keeps: a tuple of lists (their values), arrays (their
    data) and numbers (the counts of array tapes)."""
    return sum(sum(nbytes(v) for v in t) if isinstance(t, list) else nbytes(t)
               for t in tape)


def binomial(c, r):
    """C(c + r, c): how many steps ``c`` snapshots reverse running none forward more than
    ``r`` times."""
    b = 1
    for k in range(1, r + 1):
        b = b * (c + k) // k
    return b


def repetitions(n, c):
    """The least ``r`` with C(c + r, c) >= n."""
    r, b = 0, 1
    while b < n:
        r += 1
        b = b * (c + r) // r
    return r


def split(n, c):
    """Where to put the next snapshot in ``n`` >= 2 steps with ``c`` >= 2 snapshots (the
    first at the start): the right part, reversed with ``c - 1``, is as long as ``r``
    repetitions allow, the left part keeps ``c`` with one fewer (revolve's bound)."""
    r = repetitions(n, c)
    return max(1, n - binomial(c - 1, r))


def slots_for(n, limit, state, tape, where):
    """0 when ``n`` steps of ``tape`` bytes fit in ``limit``, else the snapshots that fit
    beside one step's tape (at most ``n``), each ``state`` bytes and 8 for its step
    number; too few for one: ``MemoryLimitError`` naming ``where`` (the user's loop)."""
    if n * tape <= limit:
        return 0
    slots = (limit - tape) // (state + 8)
    if slots < 1:
        raise MemoryLimitError(where, limit, state + 8, tape)
    return min(slots, n)


def checkpoint_slots(taped, start, stride, n, state, consts, limit, where):
    """The plan for a loop of ``n`` steps from ``state``: 0 (the whole tape fits in
    ``limit`` bytes) or the number of snapshots (see ``slots_for``).  One step's tape is
    measured by running the first step taped."""
    if n <= 0:
        return 0
    _, _, tape = taped(start, state, consts)
    slots = slots_for(n, limit, state_bytes(state), tape, where)
    LAST.clear()
    LAST.update(slots=slots, state_bytes=state_bytes(state), tape_bytes=tape, limit=limit,
                peak_bytes=0, forward_steps=0)
    return slots


def no_snapshots(state):
    """The snapshots of a loop run with its whole tape: the first state only (typed as
    ``checkpoint_forward``'s)."""
    return [0], [state]


def checkpoint_forward(step, start, stride, n, slots, state, consts):
    """(the state after ``n`` steps, the snapshots): see ``forward_sweep``."""
    state, snapshots, _ = forward_sweep(step, start, stride, n, slots, state, consts)
    LAST["forward_steps"] = LAST.get("forward_steps", 0) + n
    return state, snapshots


def forward_sweep(step, start, stride, n, slots, state, consts):
    """Run ``n`` steps from ``state``, storing snapshots where the schedule first puts
    them: ((positions, states), steps run)."""
    return forward_sweep_of(step)(start, stride, n, slots, state, consts)


def forward_sweep_of(step):
    """``forward_sweep`` with its step function bound: Numba compiles this closure, which
    calls ``step`` directly (compiled code that passes a function as a value cannot be
    kept in Numba's cache: ``backend/numba_checkpoint.py``)."""
    def sweep(start, stride, n, slots, state, consts):
        positions, states = [0], [state]
        lo = 0
        while n - lo > 1 and len(states) < slots:
            m = lo + split(n - lo, slots - len(states) + 1)
            for k in range(lo, m):
                state = step(start + k * stride, state, consts)
            positions.append(m)
            states.append(state)
            lo = m
        for k in range(lo, n):
            state = step(start + k * stride, state, consts)
        return state, (positions, states), n
    return sweep


def checkpoint_reverse(step, taped, adjoint, start, stride, n, slots, snapshots, consts,
                       adjoint_consts, carry, limit, where):
    """The carry after the adjoint steps ``n - 1`` .. 0: see ``reverse_sweep``."""
    carry, peak, steps = reverse_sweep(step, taped, adjoint, start, stride, n, slots,
                                       snapshots, consts, adjoint_consts, carry, limit, where)
    LAST["peak_bytes"] = max(LAST.get("peak_bytes", 0), peak)
    LAST["forward_steps"] = LAST.get("forward_steps", 0) + steps
    return carry


def reverse_sweep(step, taped, adjoint, start, stride, n, slots, snapshots, consts,
                  adjoint_consts, carry, limit=-1, where=""):
    """Run the adjoint steps last first from the snapshots ``checkpoint_forward`` left:
    the segment above the last snapshot is split again while a snapshot is free,
    recomputed from it step by step when none is.  Gives (carry, the most bytes
    kept, steps run forward).  Each step's tape is measured as it is kept: one that,
    with the snapshots kept then, passes ``limit`` (>= 0; the plan measured the first
    step's only) raises ``MemoryLimitError`` naming ``where`` and that step."""
    return reverse_sweep_of(step, taped, adjoint)(start, stride, n, slots, snapshots, consts,
                                                  adjoint_consts, carry, limit, where)


def reverse_sweep_of(step, taped, adjoint):
    """``reverse_sweep`` with its step functions bound (as ``forward_sweep_of``)."""
    def sweep(start, stride, n, slots, snapshots, consts, adjoint_consts, carry, limit, where):
        positions, states = snapshots
        size = state_bytes(states[0]) + 8             # a snapshot and its step number
        peak, steps, hi = 0, 0, n
        while len(positions) > 0:
            lo, state = positions[-1], states[-1]
            if hi - lo > 1 and len(states) < slots:   # a free snapshot: split the segment
                m = lo + split(hi - lo, slots - len(states) + 1)
                for k in range(lo, m):
                    state = step(start + k * stride, state, consts)
                steps += m - lo
                positions.append(m)
                states.append(state)
                continue
            for k in range(lo, hi - 1):               # none free: up to the last step
                state = step(start + k * stride, state, consts)
            steps += hi - 1 - lo
            t = start + (hi - 1) * stride
            _, tape, kept = taped(t, state, consts)
            steps += 1
            if 0 <= limit < len(states) * size + kept:   # a step keeps more than the first
                raise MemoryLimitError(where, limit, len(states) * size, kept,
                                       (t - start) // stride)
            peak = max(peak, len(states) * size + kept)
            carry = adjoint(t, tape, adjoint_consts, carry)
            hi -= 1
            if hi == lo:
                positions.pop()
                states.pop()
        return carry, peak, steps
    return sweep
