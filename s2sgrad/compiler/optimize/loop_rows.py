"""Adjoint loops that take a popped block of rows, not one array per row.

``rows_read_in_place(backward, passes, unpacked)`` takes the adjoint sweep (a statement
list, changed in place), its fused ``Pass``es (``loops.fused_loops``, changed in place)
and where it unpacks the blocks it pops (``loop_tapes.Unpacked``).  A loop that reads two
or more rows of one block takes the block in their place, reads ``block[k, i]`` where it
read ``row[i]``, and its guard compares the rows' length, ``block.shape[1:]``::

    _dt41_pass(t65, t57, t64, t56, ...)          _dt41_pass(t65, t62_rows, t64, ...)
        dt56_i = -dt57_i * t57[i] / t56[i]           dt56_i = -dt57_i * t62_rows[8, i] / t62_rows[7, i]

Where the rows are read nowhere else but in that call's else (its statements as numpy),
their unpacking (``t43, t44, ... = t62_rows``) moves into that else.  Why: Numba counts
the references of every array a function binds or passes, an atomic add and subtract
each, and its pruning of those pairs stops at branches and calls; the lstm eval's
gradient spent about 40% of its time in them (``perf``), its adjoint loop taking 22
arrays a step, 13 of them rows of one block.  Left as they are: a row the loop writes,
makes or reads other than at an index (``t57.shape``), a block or row bound more than
once in the sweep, a call whose arguments are not its parameters.
"""
import re

import gast

from ..syntax.nodes import name_uses
from .loop_space import nodes
from .loops import guard


def rows_read_in_place(backward, passes, unpacked):
    """Have ``passes`` read the rows of the ``unpacked`` blocks by index (module doc)."""
    stores = name_uses(backward)[1]
    for block in unpacked:
        if stores.get(block.block) != 1 or any(stores.get(n) != 1 for n in block.rows):
            continue
        readers = [fused for fused in passes if _take_block(fused, block)]
        if len(readers) == 1:
            _move_unpacking(backward, block, readers[0])


def _take_block(fused, block):
    """Make ``fused`` read the rows of ``block`` it takes (two or more) as ``block[k, i]``;
    whether it did."""
    names = [p for p in fused.params if _row_read(fused, block, p)]
    call = fused_call(fused)
    if len(names) < 2 or block.block in fused.params or call is None:
        return False
    swap = {names[0]: block.block}
    fused.params = [swap.get(p, p) for p in fused.params if p not in names[1:]]
    fused.arrays = [swap.get(a, a) for a in fused.arrays if a not in names[1:]]
    fused.blocks[block.block] = {name: block.rows[name] for name in names}
    for name in names:
        index = re.compile(rf"\b{name}\[")
        fused.body = [index.sub(f"{block.block}[{block.rows[name]}, ", line)
                      for line in fused.body]
    call.args = [gast.Name(p, gast.Load(), None, None) for p in fused.params]
    fused.branch.test = guard(fused)
    return True


def _row_read(fused, block, name):
    """Whether ``name`` is a row of ``block`` that ``fused`` only reads, at indices."""
    if name not in block.rows or name not in fused.arrays or name in fused.written or \
            name in fused.temporaries or name in fused.outputs or \
            any(array == name for array, _ in fused.stores):
        return False
    return read_at_indices_only(fused, name)


def read_at_indices_only(fused, name):
    """Whether every use of ``name`` in ``fused``'s body is at an index (``name[...]``)."""
    bare = re.compile(rf"\b{name}\b(?!\[)")
    return not any(bare.search(line) for line in fused.body)


def fused_call(fused):
    """The call of ``fused`` in its branch, where its arguments are its parameters."""
    first = fused.branch.body[0] if fused.branch is not None else None
    call = getattr(first, "value", None)
    if not isinstance(call, gast.Call) or call.keywords or \
            [getattr(a, "id", None) for a in call.args] != fused.params:
        return None
    return call


def _move_unpacking(backward, block, fused):
    """Move ``block``'s unpacking into the else of ``fused`` where nothing else reads the
    rows (the call no longer does)."""
    inside = {id(node) for node in nodes(block.statements + fused.numpy)}
    for node in nodes(backward):
        if isinstance(node, gast.Name) and node.id in block.rows and \
                isinstance(node.ctx, gast.Load) and id(node) not in inside:
            return
    moved = {id(statement) for statement in block.statements}
    block.where[:] = [item for item in block.where if id(item) not in moved]
    fused.numpy[:0] = block.statements
