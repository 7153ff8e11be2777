"""Higher order: the generated value-and-gradient code, differentiated again in forward mode.

``build_hvp(fn, positions, bound_self, arg_types, arg_trees, jacobian)`` differentiates
``fn`` in reverse mode (``pipeline.differentiate``), writes the value-and-gradient
function in its *differentiable spelling* and stores it as a module of its own (the
gradient), then runs the forward-mode transform (``forward_mode.build_jvp``) on that
function w.r.t. the same inputs.  The result is forward over reverse:

- ``<f>_value_and_grad_jvp(args, free values, tangents)`` returns ``((value, grads),
  (value tangent, grads' tangents))``: the grads' tangents along ``v`` are the
  Hessian-vector product ``H v``;
- with ``jacobian=True``, ``<f>_value_and_grad_jacfwd(args, free values)`` loops over the
  basis directions of the inputs (in the generated, compiled code) and returns the
  columns: the Hessian; with ``batched=True`` too, its tangents carry a batch of
  directions first (``forward/batched.py``: all of them in one sweep where memory
  allows) and it returns the blocks of columns (``NotBatchable`` where an operation
  of the gradient has no batched rule).

The differentiable spelling differs from the code ``grad`` runs only in its tapes: a
push onto an array tape is ``tape[top] = v; top = top + 1`` instead of ``rt.push`` (an
in-place write the forward transform must see), and a list is taken back by index,
``top = top - 1; v = tape[top]`` from ``top = len(tape)`` at the start of the adjoint
sweep, instead of ``tape.pop()``.  Every ``rt.*`` helper the adjoint sweep calls has a
JVP rule (``rules/runtime_jvp.py``).
"""
import copy
import os
import re

import gast
import numpy as np

from ..backend import cache
from ..errors import DerivativeCompositionError, SourceLocation, UserCodeError
from .analysis.shapes import unit_dimensions
from .analysis.liveness import (assigned_anywhere, exposed_reads, rebound_and_changed,
                                surely_assigned)
from .emit.layout import wrap
from .pipeline import differentiate, emit_value_and_grad, title_of
from .pipeline_forward import build_jvp
from .syntax.imports import import_lines
from .syntax.nodes import Comment, assign, call, name_node
from .syntax.source import location_comment


class GeneratedHigher:
    """A forward-over-reverse module, before it is loaded: ``gradient_source`` and
    ``gradient_path`` (the differentiable gradient it differentiates, stored in the
    cache), ``jvp`` (forward_mode's GeneratedJvp: ``source``, ``function_name``, ``wrt``,
    ``jacobian``...), ``free``, ``n_params``, ``arg_leaves`` and ``n_grads`` (how many
    gradients the differentiated gradient returns, in ``wrt`` order)."""

    #: True when the code holds only for arguments of the sizes it was built for (a
    #: recursion that ends by shapes unrolled: ``LoweredFunction.by_shape``)
    by_shape = False

    @property
    def batched(self):
        """Whether every tangent carries a batch of directions first (``build_jvp``)."""
        return self.jvp.batched

    @property
    def loops(self):
        """Whether the gradient's statements loop (a Hessian's loop over the directions
        aside)."""
        return self.jvp.loops

    def __init__(self, gradient_source, gradient_path, jvp, free, n_params, arg_leaves,
                 computed):
        self.gradient_source, self.gradient_path = gradient_source, gradient_path
        self.jvp = jvp
        self.source = jvp.source
        self.function_name = jvp.function_name
        self.free, self.n_params, self.arg_leaves = free, n_params, arg_leaves
        self.computed = computed
        #: what the code took from outside, to check at each call (``front/guards.py``)
        self.guards = []
        # no map from this module's lines to the user's: errors name the generated line
        self.line_map, self.adjoint_from = {}, None


def build_hvp(fn, positions, bound_self=None, arg_types=None, arg_trees=None,
              jacobian=False, batched=False):
    """Forward over reverse of scalar ``fn`` w.r.t. argument ``positions`` (module doc);
    ``batched`` with ``jacobian``: the batched sweep."""
    gradient = differentiable_gradient(fn, positions, bound_self, arg_types, arg_trees)
    refuse_inner_derivatives(gradient.free, gradient.source, gradient.line_map,
                             "a second derivative")
    d, fname = gradient.differentiated, gradient.function_name
    n_args = len(d.lowered.params) + len(d.lowered.free)
    wrt_leaves = [k for i in positions for k in d.lowered.arg_leaves[i]]
    # the gradient takes the leaves and the free values as plain arguments (an array's
    # dtype, rank and unit dimensions known: the gradient was specialised on them)
    arg_types = list(arg_types) + free_types(d.lowered.free)[:n_args - len(arg_types)] \
        if arg_types else None
    what = "Hessian" if jacobian else "Hessian-vector product"
    where = title_of(d.lowered, positions, ()).split("value and gradient of ", 1)[-1]
    try:
        jvp = build_jvp(gradient.function, wrt_leaves, has_aux=False, arg_types=arg_types,
                        jacobian=jacobian, batched=batched,
                        title=f"{what} of {where}: forward mode over its gradient {fname}")
    except UserCodeError as exc:
        raise at_user_line(exc, gradient) from None
    user_comments(jvp, gradient)
    generated = GeneratedHigher(gradient.source, gradient.path, jvp, d.lowered.free,
                                len(d.lowered.params), d.lowered.arg_leaves,
                                [r is not None for r in d.returned])
    generated.guards = list(d.lowered.guards) + list(jvp.guards)
    generated.by_shape = d.lowered.by_shape
    generated.line_map = {k: gradient.line_map[origin.lineno]
                          for k, origin in jvp.line_map.items()
                          if origin.filename == gradient.path
                          and origin.lineno in gradient.line_map}
    return generated


def free_types(free):
    """Per value ``free`` (``FreeValue``s) a function reads from outside, the type its
    generated code was specialised on, as ``arg_types`` gives one: an array's (dtype,
    rank, unit dimensions; its guard holds them at each call, ``front/guards.py``), a
    float's, else None (not known)."""
    out = []
    for value in free:
        obj = value.obj
        if isinstance(obj, np.ndarray) or (hasattr(obj, "__array__") and
                                           hasattr(obj, "shape") and hasattr(obj, "dtype")):
            array = np.asarray(obj)
            units = value.units if value.units is not None else unit_dimensions(array)
            out.append((array.dtype, array.ndim, tuple(units)))
        elif type(obj) is float:
            out.append((None, 0))
        else:
            out.append(None)
    return out


#: what a refusal met while differentiating generated gradient code advises
SECOND_ORDER_HINT = (
    "second derivatives (hessian, hvp, grad of grad, jacfwd of a gradient) need a "
    "forward-mode rule for each function the gradient calls: use grad / value_and_grad "
    "for this function, or compute the Hessian by differences of the gradient, or "
    "register a forward rule with s2sgrad.rules.jvp_registry.jvp_rule(<function>) (see "
    "s2sgrad/rules/runtime_jvp.py); or wrap the value in ops.stop_gradient if no "
    "derivative should flow")


def refuse_inner_derivatives(free, source, line_map, what):
    """Raise DerivativeCompositionError when generated code (``source``, its ``line_map``
    to the user's lines, the values ``free`` it reads from outside) calls the rule of a
    derivative object called inside the user's function (``api/inside.py``: a Python
    call, which ``what``, a derivative of that code, cannot differentiate)."""
    for value in free:
        if not getattr(value.obj, "__s2sgrad_opaque__", False):
            continue
        lines = source.splitlines()
        called = next((k for k, line in enumerate(lines, 1) if f"{value.name}(" in line),
                      None)
        origin = _user_origin(line_map, called) if called is not None else None
        if origin is None and called is not None:   # the nearest user's line below it
            origin = next((o for o in (_user_origin(line_map, k) for k in range(
                called, len(lines) + 1)) if o is not None), None)
        where = f"{origin}: " if origin is not None else ""
        raise DerivativeCompositionError(
            f"{where}{what} of a function that calls the derivative object "
            f"{value.obj.__name__} inside it is not built (the object runs as a Python "
            f"call there); take one derivative of the function (grad, value_and_grad, "
            f"jacfwd, jvp), or write the inner derivative out in the function "
            f"(its gradient by hand)")


def _user_origin(line_map, lineno):
    """The user's line nearest above generated line ``lineno`` (an origin outside the
    cache folder: the rule's own inlined lines are skipped)."""
    folder = os.path.abspath(cache.cache_dir())
    for k in range(lineno, 0, -1):
        origin = line_map.get(k)
        if origin is not None and origin.filename and \
                not os.path.abspath(origin.filename).startswith(folder):
            return origin
    return None


def at_user_line(exc, gradient):
    """``exc`` (a UserCodeError raised while differentiating ``gradient``'s generated
    code) at the user's line that the generated statement came from, with the advice of
    second order; unchanged when it names no line of the gradient module."""
    where = exc.location
    if where is None or where.filename != gradient.path:
        return exc
    origin = gradient.line_map.get(where.lineno)
    if origin is None:
        origin = SourceLocation(f"{gradient.function_name} (generated gradient)",
                                where.lineno, where.text)
    adjoint = where.lineno >= gradient.adjoint_from
    what = exc.what + (" (in the gradient of this line)" if adjoint else "")
    return type(exc)(what, origin, exc.construct, SECOND_ORDER_HINT)


def user_comments(jvp, gradient):
    """Rewrite ``jvp``'s comments (each names a statement of the gradient module) to name
    the user's line that statement came from, once per run of statements from one user
    line (``grad of:`` in the adjoint part); a statement of the gradient's own keeps its
    line, named by the gradient's function.  ``jvp.source`` and ``jvp.line_map`` change."""
    pattern = re.compile(r"^(\s*)# (.*)  \(" + re.escape(os.path.basename(gradient.path))
                         + r":(\d+)\)$")
    kept, renumbered, last = [], {}, None
    for number, line in enumerate(jvp.source.split("\n"), 1):
        match = pattern.match(line)
        if match:
            indent, text, at = match.group(1), match.group(2), int(match.group(3))
            origin = gradient.line_map.get(at)
            if origin is None:
                line, last = f"{indent}# {text}  ({gradient.function_name}.py:{at})", None
            elif (origin.filename, origin.lineno, at >= gradient.adjoint_from) == last:
                continue          # the same user line as the comment above
            else:
                last = (origin.filename, origin.lineno, at >= gradient.adjoint_from)
                grad_of = "grad of: " if at >= gradient.adjoint_from else ""
                line = wrap(indent + location_comment(origin).replace("# ", "# " + grad_of, 1))[0]
        renumbered[number] = len(kept) + 1
        kept.append(line)
    jvp.source = "\n".join(kept)
    jvp.line_map = {renumbered[k]: origin for k, origin in jvp.line_map.items()
                    if k in renumbered}


class DifferentiableGradient:
    """A value-and-gradient function in the differentiable spelling, stored and loaded:
    ``function`` (it takes the leaf arguments, then the free values ``free``),
    ``function_name``, ``source``, ``path`` and the ``differentiated`` pipeline result."""

    def __init__(self, function, function_name, source, path, differentiated, line_map,
                 adjoint_from):
        self.function, self.function_name = function, function_name
        self.source, self.path = source, path
        self.line_map = line_map     # line of ``source`` -> the user's SourceLocation
        self.adjoint_from = adjoint_from   # the first line of the adjoint sweep
        self.differentiated = differentiated
        self.free = differentiated.lowered.free
        self.guards = differentiated.lowered.guards


def differentiable_gradient(fn, positions, bound_self=None, arg_types=None, arg_trees=None,
                            has_aux=False):
    """``fn``'s value-and-gradient function w.r.t. ``positions``, written in the
    differentiable spelling (module doc), stored in the cache and loaded; with
    ``has_aux`` its value is ``(output, *aux)``, the gradient that of the output."""
    d = differentiate(fn, positions, (), has_aux, bound_self, arg_types, arg_trees)
    names = d.names
    sweeps = differentiable_sweeps(d)
    fname = names.fresh(f"{d.lowered.name}_value_and_grad")
    title = title_of(d.lowered, positions, ()) + ", differentiable spelling"
    lines, adjoint_from = emit_value_and_grad(d.lowered, sweeps, d.returned, fname, title,
                                              names, import_lines(names.modules))
    source = "\n".join(line for line, _ in lines) + "\n"
    py_func, path, _ = cache.materialise(fname, source, fname)
    line_map = {k: origin for k, (_, origin) in enumerate(lines, 1) if origin is not None}
    return DifferentiableGradient(py_func, fname, source, path, d, line_map,
                                  adjoint_from if adjoint_from is not None else len(lines) + 1)


def differentiable_sweeps(d):
    """A copy of the ``Differentiated`` ``d``'s sweeps in the differentiable spelling
    (module doc): pushes as writes; list tapes made right before the outermost loop that
    fills them and read back by index from their tops, set right before the outermost
    adjoint loop that reads them (read again, a list made at the top and filled on one
    branch's path only would be a list of two lengths); and the adjoint sweep's own names
    for what the forward sweep sets on some paths only."""
    names = d.names
    sweeps = copy.copy(d.sweeps)
    tapes = {tape.name for tape in d.sweeps.stacks if tape.dtype is None}
    sweeps.stacks = [tape for tape in d.sweeps.stacks if tape.dtype is not None]
    forward = _pushes_as_writes(d.sweeps.forward)
    sweeps.forward = before_loops(forward, tapes, _appends_to,
                                   lambda name: assign(name, gast.List(elts=[],
                                                                       ctx=gast.Load())))
    popped = _popped_lists(d.sweeps.backward, d.sweeps.stacks, d.lowered.lists)
    tops = {name: names.fresh(name + "_top") for name in popped}
    backward = before_loops(_pushes_as_writes(d.sweeps.backward), set(tops), pops_of,
                             lambda name: assign(tops[name], gast.Call(
                                 func=name_node("len"), args=[name_node(name)], keywords=[])))
    backward = pops_as_reads(backward, tops)
    sweeps.backward = _own_locals(d, backward)
    return sweeps


def _appends_to(node):
    """The list names ``node`` appends to."""
    return {n.func.value.id for n in gast.walk(node)
            if isinstance(n, gast.Call) and isinstance(n.func, gast.Attribute)
            and n.func.attr == "append" and isinstance(n.func.value, gast.Name)}


def pops_of(node):
    """The names of the lists popped anywhere in ``node`` (``pop_of`` of each node)."""
    return {name for n in gast.walk(node) for name in [pop_of(n)] if name is not None}


def before_loops(items, names, used_in, make):
    """``items`` with ``make(name)`` right before the outermost loop (or statement outside
    any loop) that ``used_in`` finds using ``name``, for each of ``names``; a list only
    used outside loops is made at the top."""
    pending = set(names)

    def block(statements):
        out = []
        for item in statements:
            if isinstance(item, Comment):
                out.append(item)
                continue
            if isinstance(item, gast.If):
                item = copy.copy(item)
                item.body, item.orelse = block(item.body), block(item.orelse)
                out.append(item)
                continue
            found = sorted(used_in(item) & pending)
            out.extend(make(name) for name in found)
            pending.difference_update(found)
            out.append(item)
        return out

    return block(items)


def _own_locals(d, backward):
    """The adjoint sweep with its own names for the values it assigns that the forward
    sweep assigns on some paths only (a loop's index and the values restored in a
    reversed loop, where the loop may have run zero times): read again by the lowering,
    such a name would be carried into the adjoint loop from a forward sweep that may
    never have set it."""
    lowered = d.lowered
    known = set(lowered.params) | {f.name for f in lowered.free} | {
        tape.name for tape in d.sweeps.stacks} | {
        tape.top for tape in d.sweeps.stacks if tape.top}
    forward = d.sweeps.forward
    surely = surely_assigned(forward, known)
    maybe = assigned_anywhere(forward) - surely
    exposed = set(exposed_reads(backward))
    # and an array the adjoint sweep restores in place: it works on a copy of its own
    _, changed, _ = rebound_and_changed(backward)
    copied = changed & maybe & exposed
    renamed = {n: d.names.fresh(n) for n in sorted((assigned_anywhere(backward) & maybe)
                                                   | copied)}
    if not renamed:
        return backward
    out = []
    for item in backward:
        if isinstance(item, Comment):
            out.append(item)
            continue
        item = copy.deepcopy(item)
        for node in gast.walk(item):
            if isinstance(node, gast.Name) and node.id in renamed:
                node.id = renamed[node.id]
        out.append(item)
    # a name the adjoint sweep reads before assigning it (a loop-carried value, read as
    # the reversed loop starts) gets the forward sweep's value where it is first read
    taken = {renamed[n]: n for n in renamed if n in exposed}
    return _taken_over(out, taken, {renamed[n] for n in copied}) if taken else out


def _taken_over(items, taken, copies=frozenset()):
    """``items`` with ``new = old`` (``taken``: new -> old name; ``new = np.copy(old)``
    for the names in ``copies``) right before the first statement reading ``new`` in each
    block path (inside the branches of an ``if``, before a loop or any other statement)."""
    def reads(node, name):
        return any(isinstance(n, gast.Name) and n.id == name for n in gast.walk(node))

    def block(statements, pending):
        out = []
        pending = dict(pending)
        for item in statements:
            if isinstance(item, Comment):
                out.append(item)
                continue
            wanted = {new: old for new, old in pending.items() if reads(item, new)}
            if isinstance(item, gast.If) and wanted and not any(
                    reads(item.test, new) for new in wanted):
                item = copy.copy(item)
                item.body = block(item.body, wanted)
                item.orelse = block(item.orelse, wanted)
            else:
                out.extend(assign(new, call("np", "copy", [name_node(old)]) if new in copies
                                  else name_node(old)) for new, old in wanted.items())
            for new in wanted:
                pending.pop(new)
            out.append(item)
        return out

    return block(items, taken)


def _is_push(stmt):
    """``top = rt.push(tape, top, value)``."""
    if not isinstance(stmt, gast.Assign):
        return False
    value = stmt.value
    return (isinstance(value, gast.Call)
            and isinstance(value.func, gast.Attribute) and value.func.attr == "push"
            and isinstance(value.func.value, gast.Name) and value.func.value.id == "rt")


def _runtime_call(stmt, helper):
    """``rt.<helper>(...)`` as a statement of its own: the call, else None."""
    value = stmt.value if isinstance(stmt, gast.Expr) else None
    if (isinstance(value, gast.Call) and isinstance(value.func, gast.Attribute)
            and value.func.attr == helper and isinstance(value.func.value, gast.Name)
            and value.func.value.id == "rt"):
        return value
    return None


def _pushes_as_writes(items):
    """``top = rt.push(tape, top, v)`` -> ``tape[top] = v; top = top + 1``,
    ``rt.add_into(dx[j], g)`` -> ``dx[j] += g`` and ``rt.add_at(dx, index, g)`` -> ``dx =
    rt.add_at(dx, index, g)`` (updates the forward transform sees: the scatter's result
    is the adjoint from there on), in nested blocks too."""
    out = []
    for item in items:
        if isinstance(item, (gast.If, gast.For, gast.While)):
            item = copy.copy(item)
            item.body = _pushes_as_writes(item.body)
            item.orelse = _pushes_as_writes(item.orelse)
            out.append(item)
        elif _runtime_call(item, "add_at") and isinstance(item.value.args[0], gast.Name):
            out.append(assign(item.value.args[0].id, copy.deepcopy(item.value)))
        elif _runtime_call(item, "add_into"):
            view, value = item.value.args
            target = copy.deepcopy(view)
            target.ctx = gast.Store()
            out.append(gast.AugAssign(target=target, op=gast.Add(), value=copy.deepcopy(value)))
        elif _is_push(item):
            tape, top, value = item.value.args
            out.append(assign(gast.Subscript(value=copy.deepcopy(tape),
                                             slice=copy.deepcopy(top), ctx=gast.Store()),
                              copy.deepcopy(value)))
            out.append(assign(top.id, gast.BinOp(left=name_node(top.id), op=gast.Add(),
                                                 right=gast.Constant(value=1, kind=None))))
        else:
            out.append(item)
    return out


def pop_of(node):
    """The list name of ``name.pop()``, or None."""
    if isinstance(node, gast.Call) and isinstance(node.func, gast.Attribute) and \
            node.func.attr == "pop" and not node.args and \
            isinstance(node.func.value, gast.Name):
        return node.func.value.id
    return None


def _popped_lists(backward, stacks, lists):
    """The lists the adjoint sweep pops that the forward sweep built: list tapes and the
    function's own lists (their restores)."""
    candidates = {tape.name for tape in stacks if tape.dtype is None} | set(lists)
    found = []
    for item in backward:
        if isinstance(item, Comment):
            continue
        for node in gast.walk(item):
            name = pop_of(node)
            if name in candidates and name not in found:
                found.append(name)
    return found


def pops_as_reads(items, tops, packed=False):
    """``v = xs.pop()`` -> ``top = top - 1; v = xs[top]`` and ``xs.pop()`` alone ->
    ``top = top - 1``, for the lists in ``tops`` (name -> its top's name); ``packed``:
    the lists are packed tapes (``rt.pack_tape``), read with ``rt.tape_item(xs, top)``."""
    out = []
    for item in items:
        if isinstance(item, (gast.If, gast.For, gast.While)):
            item = copy.copy(item)
            item.body = pops_as_reads(item.body, tops, packed)
            item.orelse = pops_as_reads(item.orelse, tops, packed)
            out.append(item)
            continue
        name = pop_of(item.value) if isinstance(item, (gast.Assign, gast.Expr)) else None
        if name not in tops:
            out.append(item)
            continue
        top = tops[name]
        out.append(assign(top, gast.BinOp(left=name_node(top), op=gast.Sub(),
                                          right=gast.Constant(value=1, kind=None))))
        if isinstance(item, gast.Assign):
            read = call("rt", "tape_item", [name_node(name), name_node(top)]) if packed else \
                gast.Subscript(value=name_node(name), slice=name_node(top), ctx=gast.Load())
            out.append(assign(copy.deepcopy(item.targets[0]), read))
    return out
