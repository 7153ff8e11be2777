"""Numba implementations of the checkpointing driver (``s2sgrad/runtime/checkpoint.py``):
the same code, compiled with the step functions it is given, without the Python-only
record of what it kept (``checkpoint.LAST``).  A function that passes the step functions
here holds them as values, which Numba does not cache on disk: the gradient function is
compiled again in each process (the step functions themselves are cached)."""
from numba import literal_unroll, types
from numba.extending import overload, register_jitable

from ..runtime import checkpoint as ck

for _helper in (ck.binomial, ck.repetitions, ck.split, ck.slots_for, ck.forward_sweep,
                ck.reverse_sweep, ck.no_snapshots):
    register_jitable(_helper)


@overload(ck.nbytes)
def _nbytes(value):
    if isinstance(value, types.Array):
        return lambda value: value.nbytes
    if isinstance(value, types.List):
        if isinstance(value.dtype, types.Array):
            def arrays(value):
                total = 0
                for v in value:
                    total += v.nbytes
                return total
            return arrays
        return lambda value: 8 * len(value)
    if isinstance(value, (types.Number, types.Boolean)):
        return lambda value: 8


@overload(ck.state_bytes)
def _state_bytes(state):
    def total(state):
        n = 0
        for v in literal_unroll(state):
            n += ck.nbytes(v)
        return n
    return total


@overload(ck.tape_bytes)
def _tape_bytes(tape):
    return lambda tape: ck.state_bytes(tape)


@overload(ck.checkpoint_slots)
def _checkpoint_slots(taped, start, stride, n, state, consts, limit, where):
    def plan(taped, start, stride, n, state, consts, limit, where):
        if n <= 0:
            return 0
        _, _, tape = taped(start, state, consts)
        return ck.slots_for(n, limit, ck.state_bytes(state), tape, where)
    return plan


@overload(ck.checkpoint_forward)
def _checkpoint_forward(step, start, stride, n, slots, state, consts):
    def forward(step, start, stride, n, slots, state, consts):
        state, snapshots, _ = ck.forward_sweep(step, start, stride, n, slots, state, consts)
        return state, snapshots
    return forward


@overload(ck.checkpoint_reverse)
def _checkpoint_reverse(step, taped, adjoint, start, stride, n, slots, snapshots, consts,
                        adjoint_consts, carry):
    def reverse(step, taped, adjoint, start, stride, n, slots, snapshots, consts,
                adjoint_consts, carry):
        carry, _, _ = ck.reverse_sweep(step, taped, adjoint, start, stride, n, slots,
                                       snapshots, consts, adjoint_consts, carry)
        return carry
    return reverse
