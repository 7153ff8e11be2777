"""Loops differentiated under ``memory_limit``: each as step functions run by the driver.

``checkpointed(lowered, sweeps, names, returned, limit)`` takes the finished sweeps of a
gradient (after the passes over them) and, for each range loop at the top level of the
function, moves the loop's body into three functions of one iteration: ``<f>_step``
(the forward step, no tape), ``<f>_step_taped`` (the same keeping a one-step tape) and
``<f>_step_adjoint`` (the reversed iteration, reading that tape).  In the function
itself the loop becomes a choice made once its trip count is known
(``rt.checkpoint_slots``, ``runtime/checkpoint.py``): the loop as before when its whole
tape fits in the limit, else ``rt.checkpoint_forward`` / ``rt.checkpoint_reverse``,
which run the steps under binomial checkpointing.  The steps run the same statements as
the loop, so both give the same numbers.  Gives the ``StepFunction``s to write before
the gradient function; the sweeps are changed in place.

A loop it cannot run step by step is refused with ``CheckpointError`` naming its line:
a while loop, a ``break``, a loop under a branch, a body that writes into an array or
list it did not make, a value of the last iteration read after the loop.
"""
import copy
import os
from dataclasses import dataclass

import gast

from ...errors import CheckpointError
from ..front.literals import atom_node
from ..ir import Const, If, Loop, atom_vars, walk_statements
from ..syntax.nodes import Comment, assign, call, name_node
from .step_reads import live_in, ordered, stores, without, written_base
from .step_tapes import one_step_declaration, single_values
from .tape import trip_count, value_reads


@dataclass
class StepFunction:
    """One generated function: ``name(params)``, the comment saying what it does and its
    body (gast statements and Comments)."""
    name: str
    params: list
    doc: str
    body: list


def checkpointed(lowered, sweeps, names, returned, limit):
    """The step functions of the top-level loops of ``lowered`` (see the module doc)."""
    functions = []
    for loop in _checkpointable(lowered.body):
        functions += _LoopSteps(lowered, sweeps, names, returned, loop, limit).rewrite()
    return functions


def _checkpointable(body):
    """The range loops at the top level of ``body``; any other loop that is not inside one
    of them is refused."""
    loops = []
    for stmt in body:
        if isinstance(stmt, Loop):
            if stmt.kind != "range" or stmt.break_flag is not None:
                what = "a while loop" if stmt.kind != "range" else "a loop with `break`"
                raise CheckpointError(
                    f"memory_limit checkpoints range loops run to their end; this is {what}, "
                    "whose trip count is known only once it has run", stmt.origin, None,
                    "write it as `for k in range(n)` (with the test inside, as an `if`), "
                    "or leave out memory_limit to keep its whole tape")
            loops.append(stmt)
        elif isinstance(stmt, If):
            inner = [s for s in walk_statements(stmt.body + stmt.orelse) if isinstance(s, Loop)]
            if inner:
                raise CheckpointError(
                    "memory_limit checkpoints loops at the top level of the function; this "
                    "one is under an `if`", inner[0].origin, None,
                    "move the loop out of the branch (into a function of its own called "
                    "there, differentiated separately), or leave out memory_limit")
    return loops


def where_text(origin):
    """``file.py:12``: the loop's place as the generated comments write it."""
    return f"{os.path.basename(origin.filename or '?')}:{origin.lineno}"


class _LoopSteps:
    """The rewrite of one loop (see the module doc)."""

    def __init__(self, lowered, sweeps, names, returned, loop, limit):
        self.lowered, self.sweeps, self.names = lowered, sweeps, names
        self.returned, self.loop, self.limit = returned, loop, limit
        nested = {id(s) for s in walk_statements(loop.body) if isinstance(s, Loop)}
        self.tapes = [t for t in sweeps.stacks if t.loop is loop or id(t.loop) in nested]
        self.tape_names = {t.name for t in self.tapes} | {t.top for t in self.tapes if t.top}
        self.counters = {loop.counter} | {s.counter for s in walk_statements(loop.body)
                                          if isinstance(s, Loop)}
        #: the gradient function's own names (the rest a step reads are modules, builtins)
        self.known = set(lowered.params) | {f.name for f in lowered.free} | stores(
            sweeps.forward) | stores(sweeps.backward)

    def rewrite(self):
        forward, backward = self.sweeps.forward, self.sweeps.backward
        f_at = _loop_index(forward, lambda s: _counts(s, self.loop.counter))
        b_at = _loop_index(backward, lambda s: self.loop.counter in value_reads(s.iter))
        if f_at is None or b_at is None:
            return []      # no adjoint runs through the loop: nothing is taped
        start_at = next(k for k in range(f_at, -1, -1) if _assigns(forward[k],
                                                                  self.loop.counter))
        body = [s for s in forward[f_at].body[1:]]
        reversed_loop = backward[b_at]
        self._check_writes(body)
        # what the code after the loop reads as the loop left it (before assigning it)
        after_b = set(live_in(backward[b_at + 1:])) | {g for g in self.returned if g}
        rtarget = reversed_loop.target.id
        stored_b = stores(reversed_loop.body)
        # (a value the reversed body restores on some path is read on those paths only:
        # its branches mirror the forward body's)
        carried = set(live_in(body)) & stores(body)
        live_b = [v for v in live_in(reversed_loop.body) if v != rtarget and (
            v not in stored_b or v not in stores(body) or v in carried)]
        after_f = set(live_in(forward[f_at + 1:] + backward[:b_at])) | after_b | set(
            atom_vars(self.lowered.output)) | set(live_b)
        state, consts = self._interface(body, forward[f_at].target.id, after_f)
        self.target_read_after = forward[f_at].target.id in after_f
        restored = stores(body) - set(state)
        carry = [v for v in ordered(reversed_loop.body, stored_b - self.tape_names - restored)
                 if v in live_b or v in after_b]
        adjoint_consts = [v for v in live_b if v not in stored_b and v not in self.tape_names
                          and v != rtarget and v in self.known]
        self._check_adjoint_reads(body, live_b, state)
        fns = self._functions(body, forward[f_at].target.id, reversed_loop, state, consts,
                              carry, adjoint_consts)
        self._replace(forward, start_at, f_at, backward, b_at, fns, state, consts, carry,
                      adjoint_consts)
        return fns

    # ------------------------------------------------------------ what a step reads

    def _interface(self, body, target, after):
        """(the loop-carried state, the values the step reads that the loop never sets)."""
        stored = stores(body)
        live = live_in(body)
        state = [v for v in live if v in stored and v not in self.tape_names
                 and v not in self.counters]
        results = sorted(v for v in stored if v in after and v not in live
                         and v not in self.tape_names and v not in self.counters)
        if results:
            raise CheckpointError(
                f"memory_limit cannot checkpoint this loop: the code after it reads "
                f"`{results[0]}` as the last iteration left it", self.loop.origin, None,
                "assign it before the loop too (so that each iteration carries it on), or "
                "leave out memory_limit")
        consts = [v for v in live if v not in stored and v != target and v in self.known
                  and v not in self.tape_names]
        return state, consts

    def _check_writes(self, body):
        """Refuse a body that writes into an array or list made before the loop: a snapshot
        of the state would change under it."""
        before = set(live_in(body))     # what the iteration reads from before it
        for stmt in body:
            for node in gast.walk(stmt) if isinstance(stmt, gast.AST) else ():
                base = written_base(node)
                if base is None or base in self.tape_names:
                    continue
                if base not in before:   # made in the iteration, but maybe a view of one
                    base = next((v for v in sorted(
                        self.lowered.shared_at_write.get(base, ())) if v in before), None)
                if base is not None:
                    raise CheckpointError(
                        f"memory_limit cannot checkpoint this loop: its body writes into "
                        f"`{base}`, which the iteration did not make, so a snapshot taken "
                        f"before would change", self.loop.origin, None,
                        f"make a new array each iteration (`{base} = {base}.copy()` before "
                        "writing into it), or leave out memory_limit")

    def _check_adjoint_reads(self, body, live_b, state):
        """The reversed body reads what the forward body sets only through the tape or the
        state; anything else would be the last iteration's value in every step."""
        stray = sorted(v for v in live_b if v in stores(body) and v not in state
                       and v not in self.tape_names and v not in self.counters)
        if stray:
            raise CheckpointError(
                f"memory_limit cannot checkpoint this loop: its adjoint reads `{stray[0]}` "
                "as the last iteration left it", self.loop.origin, None,
                "leave out memory_limit for this function")

    # ------------------------------------------------------------ the functions

    def _functions(self, body, target, reversed_loop, state, consts, carry, adjoint_consts):
        base = self.lowered.name
        where = where_text(self.loop.origin)
        p_state, p_consts, p_tape, p_carry = (self.names.fresh(n) for n in (
            "state", "consts", "tape", "carry"))
        self.param_names = (p_state, p_consts)
        unpack = [*_unpack(state, p_state), *_unpack(consts, p_consts)]
        plain = without(copy.deepcopy(body), self.tape_names | self.counters)
        step = StepFunction(self.names.fresh(f"{base}_step"), [target, p_state, p_consts],
                            f"one iteration of the loop at {where}, no tape: the state "
                            f"{_tuple_text(state)} after it", unpack + plain +
                            [gast.Return(value=_tuple(state))])
        taped_body, adjoint_body = copy.deepcopy(body), copy.deepcopy(reversed_loop.body)
        single = single_values(taped_body, adjoint_body, self.tapes, self.loop)
        # (a value kept on one path of a branch only needs a typed start)
        assigned = stores([s for s in taped_body if isinstance(s, gast.Assign)])
        declared = [line for t in self.tapes
                    for line in one_step_declaration(t, self.loop, single, assigned)]
        tape_names = [n for t in self.tapes for n in (
            [t.name] if t.name in single else [t.name, t.top] if t.top else [t.name])]
        taped = StepFunction(
            self.names.fresh(f"{base}_step_taped"), [target, p_state, p_consts],
            "the same, keeping what its adjoint reads: (state after, tape, tape bytes)",
            unpack + declared + taped_body + [
                assign(p_tape, _tuple(tape_names)),
                gast.Return(value=gast.Tuple(elts=[
                    _tuple(state), name_node(p_tape),
                    call("rt", "tape_bytes", [name_node(p_tape)])], ctx=gast.Load()))])
        adjoint = StepFunction(
            self.names.fresh(f"{base}_step_adjoint"),
            [reversed_loop.target.id, p_tape, p_consts, p_carry],
            f"the adjoint of that iteration, from its tape: {_tuple_text(carry)} before and "
            "after it",
            [*_unpack(tape_names, p_tape),
             *_unpack(adjoint_consts, p_consts), *_unpack(carry, p_carry),
             *adjoint_body, gast.Return(value=_tuple(carry))])
        return [step, taped, adjoint]

    def _replace(self, forward, start_at, f_at, backward, b_at, fns, state, consts, carry,
                 adjoint_consts):
        """The loop in the function: as it was when its tape fits, else the driver."""
        step, taped, adjoint = (name_node(f.name) for f in fns)
        loop, n = self.loop, self.loop.counter
        slots = self.names.fresh("loop_slots")
        snapshots = self.names.fresh("loop_snapshots")
        start, stride = atom_node(loop.bounds[0]), atom_node(loop.bounds[2])
        where = gast.Constant(value=where_text(loop.origin), kind=None)
        limit = gast.Constant(value=self.limit, kind=None)
        plan = [assign(n, trip_count(loop.bounds)),
                Comment(f"memory_limit={self.limit} bytes: the whole tape if it fits, else "
                        "snapshots of the state (revolve)"),
                assign(slots, call("rt", "checkpoint_slots", [
                    copy.deepcopy(taped), start, stride, name_node(n), _tuple(state),
                    _tuple(consts), limit, where]))]
        whole = forward[start_at:f_at + 1] + [assign(snapshots, call(
            "rt", "no_snapshots", [_tuple(state)]))]
        stepped = [assign(gast.Tuple(elts=[_tuple(state, gast.Store()),
                                           name_node(snapshots, gast.Store())],
                                     ctx=gast.Store()),
                          call("rt", "checkpoint_forward", [
                              step, copy.deepcopy(start), copy.deepcopy(stride), name_node(n),
                              name_node(slots), _tuple(state), _tuple(consts)]))]
        if self.target_read_after:    # what the loop variable was last, as Python leaves it
            last = gast.BinOp(left=name_node(n), op=gast.Sub(),
                              right=gast.Constant(value=1, kind=None))
            if not (isinstance(loop.bounds[2], Const) and loop.bounds[2].value == 1):
                last = gast.BinOp(left=last, op=gast.Mult(), right=copy.deepcopy(stride))
            if not (isinstance(loop.bounds[0], Const) and loop.bounds[0].value == 0):
                last = gast.BinOp(left=copy.deepcopy(start), op=gast.Add(), right=last)
            stepped.append(gast.If(test=gast.Compare(
                left=name_node(n), ops=[gast.Gt()], comparators=[gast.Constant(value=0,
                                                                              kind=None)]),
                body=[assign(loop.target, last)], orelse=[]))
        forward[start_at:f_at + 1] = plan + [_branch(slots, whole, stepped)]
        reverse = [assign(_tuple(carry, gast.Store()), call("rt", "checkpoint_reverse", [
            copy.deepcopy(step), copy.deepcopy(taped), adjoint, copy.deepcopy(start),
            copy.deepcopy(stride), name_node(n), name_node(slots), name_node(snapshots),
            _tuple(consts), _tuple(adjoint_consts), _tuple(carry), copy.deepcopy(limit),
            copy.deepcopy(where)]))]
        backward[b_at:b_at + 1] = [_branch(slots, [backward[b_at]], reverse)]


def _branch(slots, whole, stepped):
    """``if slots == 0: whole`` (the tape fits) ``else: stepped``."""
    test = gast.Compare(left=name_node(slots), ops=[gast.Eq()],
                        comparators=[gast.Constant(value=0, kind=None)])
    return gast.If(test=test, body=whole, orelse=stepped)


def _loop_index(statements, match):
    return next((k for k, s in enumerate(statements) if isinstance(s, gast.For) and match(s)),
                None)


def _counts(loop, counter):
    """Whether a forward loop's body starts with ``counter += 1``."""
    first = loop.body[0] if loop.body else None
    return isinstance(first, gast.AugAssign) and isinstance(first.target, gast.Name) \
        and first.target.id == counter


def _assigns(stmt, name):
    return isinstance(stmt, gast.Assign) and any(
        isinstance(t, gast.Name) and t.id == name for t in stmt.targets)


def _tuple(names, ctx=None):
    return gast.Tuple(elts=[name_node(n, ctx) for n in names], ctx=ctx or gast.Load())


def _tuple_text(names):
    return "(" + ", ".join(names) + ("," if len(names) == 1 else "") + ")"


def _unpack(names, source):
    """``a, b = source`` (nothing for no names)."""
    if not names:
        return []
    return [assign(_tuple(names, gast.Store()), name_node(source))]
