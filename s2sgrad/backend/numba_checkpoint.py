"""Numba implementations of the checkpointing driver (``s2sgrad/runtime/checkpoint.py``):
the same code, compiled with the step functions it is given, without the Python-only
record of what it kept (``checkpoint.LAST``).

The sweeps are compiled per set of step functions (``forward_sweep_of`` /
``reverse_sweep_of``: closures calling them directly), never with a step function
passed on as a value: Numba embeds such a value's address in the machine code and then
refuses to keep it in its on-disk cache, so the gradient function was compiled again in
every process.  Compiled this way, a second process loads the whole gradient from the
cache beside its module."""
import numba
from numba import literal_unroll, types
from numba.extending import overload, register_jitable

from ..runtime import checkpoint as ck

for _helper in (ck.binomial, ck.repetitions, ck.split, ck.slots_for, ck.no_snapshots):
    register_jitable(_helper)

_SWEEPS = {}    # (which sweep, its step dispatchers) -> the sweep compiled for them
_STEPS = {}     # token -> the step function's dispatcher


def step_token(dispatcher):
    """A string that stands for the step function ``dispatcher`` where compiled code passes
    it to ``rt.checkpoint_*`` (``numba_backend.with_compiled_helpers``): a constant Numba
    caches, which the overloads below turn back into the function (the token names the
    generated module, whose name holds a digest of its source)."""
    fn = dispatcher.py_func
    token = f"s2sgrad step function {fn.__module__}.{fn.__qualname__}"
    _STEPS[token] = dispatcher
    return token


def _dispatcher_of(step):
    """The dispatcher a step argument's Numba type stands for, or None."""
    if isinstance(step, types.Dispatcher):
        return step.dispatcher
    if isinstance(step, types.StringLiteral):
        return _STEPS.get(step.literal_value)
    return None


def _sweep(make, steps):
    """``make(*dispatchers)`` compiled by Numba, once per step functions (``steps``: their
    Numba types: jitted functions or their tokens), or None when one is neither."""
    dispatchers = [_dispatcher_of(s) for s in steps]
    if any(d is None for d in dispatchers):
        return None
    key = (make, *dispatchers)
    if key not in _SWEEPS:
        _SWEEPS[key] = numba.njit(make(*dispatchers))
    return _SWEEPS[key]


@overload(ck.forward_sweep)
def _forward_sweep(step, start, stride, n, slots, state, consts):
    sweep = _sweep(ck.forward_sweep_of, (step,))
    if sweep is not None:
        return lambda step, start, stride, n, slots, state, consts: sweep(
            start, stride, n, slots, state, consts)


@overload(ck.reverse_sweep)
def _reverse_sweep(step, taped, adjoint, start, stride, n, slots, snapshots, consts,
                   adjoint_consts, carry, limit=-1, where=""):
    sweep = _sweep(ck.reverse_sweep_of, (step, taped, adjoint))
    if sweep is not None:
        def reverse(step, taped, adjoint, start, stride, n, slots, snapshots, consts,
                    adjoint_consts, carry, limit=-1, where=""):
            return sweep(start, stride, n, slots, snapshots, consts, adjoint_consts, carry,
                         limit, where)
        return reverse


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


def _first_tape_bytes_of(taped):
    """The bytes of the tape of one step of ``taped`` (bound, as the sweeps' steps)."""
    def first(start, state, consts):
        return taped(start, state, consts)[2]
    return first


@overload(ck.checkpoint_slots, prefer_literal=True)
def _checkpoint_slots(taped, start, stride, n, state, consts, limit, where):
    first = _sweep(_first_tape_bytes_of, (taped,))
    if first is None:
        return None

    def plan(taped, start, stride, n, state, consts, limit, where):
        if n <= 0:
            return 0
        return ck.slots_for(n, limit, ck.state_bytes(state), first(start, state, consts),
                            where)
    return plan


@overload(ck.checkpoint_forward, prefer_literal=True)
def _checkpoint_forward(step, start, stride, n, slots, state, consts):
    sweep = _sweep(ck.forward_sweep_of, (step,))
    if sweep is None:
        return None

    def forward(step, start, stride, n, slots, state, consts):
        state, snapshots, _ = sweep(start, stride, n, slots, state, consts)
        return state, snapshots
    return forward


@overload(ck.checkpoint_reverse, prefer_literal=True)
def _checkpoint_reverse(step, taped, adjoint, start, stride, n, slots, snapshots, consts,
                        adjoint_consts, carry, limit, where):
    sweep = _sweep(ck.reverse_sweep_of, (step, taped, adjoint))
    if sweep is None:
        return None

    def reverse(step, taped, adjoint, start, stride, n, slots, snapshots, consts,
                adjoint_consts, carry, limit, where):
        carry, _, _ = sweep(start, stride, n, slots, snapshots, consts, adjoint_consts,
                            carry, limit, where)
        return carry
    return reverse
