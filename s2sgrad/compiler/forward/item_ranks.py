"""The rank of the items of a list a loop reads before it appends to it, for the batched
sweep (``batched.BatchedTangents.loop``).

Takes a ``Loop`` and the ``BatchedTangents`` building it; gives the loop's statements,
built under a hypothesis on the rank of the items of each list that starts the loop
empty and that the loop both appends to and reads (``absolutes.append(relative if
parents[i] == -1 else absolutes[parents[i]] @ relative)``: the read comes before the
append in the code, so the rules meet an item whose rank nothing has told yet).

The loop is first built as it is; only where that is refused are hypotheses tried,
ranks 0, 1, 2... up to one more than the largest rank known (a product over the
lists, at most ``TRIES`` of them).  A hypothesis is kept when the loop builds under it
and every item it appends has the rank assumed: the list starts empty, so by induction
over the appends every item a read can meet has that rank, and the reads' ranks were
right.  A refused attempt leaves nothing behind (the names it took and what it learnt
are restored); when none holds, the first refusal stands.
"""
import copy
import itertools

from ... import primitives as prims
from ..ir import ListAppend, Op, Var, walk_ops

#: the most hypotheses tried for one loop
TRIES = 64


def pending_lists(sweep, loop):
    """The active lists that enter ``loop`` empty (items of no rank yet) and that it both
    appends to and reads an item of, in the order the loop first names them."""
    appended, read = [], set()
    for stmt in walk_ops(loop.body):
        if isinstance(stmt, ListAppend) and stmt.target not in appended:
            appended.append(stmt.target)
        elif isinstance(stmt, Op) and stmt.args and isinstance(stmt.args[0], Var) and \
                stmt.primitive == prims.GETITEM:
            read.add(stmt.args[0].name)
    return [n for n in appended if n in read and n in sweep.active and n in sweep.lists
            and sweep.item_ranks.get(n) == set()]


def build_loop(sweep, loop, build, refused):
    """``build(loop)`` (the loop's statements), under the first hypothesis on the ranks of
    ``pending_lists``' items that holds where the plain build raises ``refused``."""
    state = _state(sweep)
    try:
        return build(loop)
    except refused as first:
        pending = pending_lists(sweep, loop)
        if not pending:
            raise
        _restore(sweep, state)
        largest = max((r for r in sweep.ndims.values() if r is not None), default=0)
        ranks = range(largest + 2)
        for guess in itertools.islice(itertools.product(ranks, repeat=len(pending)), TRIES):
            for name, rank in zip(pending, guess):
                sweep.item_ranks[name] = {rank}
            try:
                out = build(loop)
            except refused:
                out = None
            if out is not None and all(sweep.item_ranks.get(n) == {r}
                                       for n, r in zip(pending, guess)):
                return out
            _restore(sweep, state)
        raise first


def _state(sweep):
    """What building a loop may change: the names taken, and a copy of every dict and set
    the sweep holds (a list's item ranks copied too)."""
    held = {k: copy.copy(v) for k, v in vars(sweep).items() if isinstance(v, (dict, set))}
    held["item_ranks"] = {k: set(v) for k, v in sweep.item_ranks.items()}
    return sweep.names.snapshot(), held, sweep.at, sweep.align_to


def _restore(sweep, state):
    """Undo what an attempt changed (each dict and set restored in place: the lowered
    function shares some of them with the sweep)."""
    names, held, sweep.at, sweep.align_to = state
    sweep.names.restore(names)
    for key, value in held.items():
        current = getattr(sweep, key)
        current.clear()
        current.update({k: set(v) for k, v in value.items()} if key == "item_ranks"
                       else value)
