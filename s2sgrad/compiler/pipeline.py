"""The whole differentiator: a function -> the source of its value-and-gradient function.

``build(fn, positions, weights, has_aux, bound_self)`` runs the passes in
order (frontend+lowering, activity, reverse, dead-code removal, inlining of single-use
temporaries, a loop's list tapes merged into one; for code run as numpy, constants
computed once and, for large arguments, chains of elementwise operations made fused
kernel calls and elementwise results written into arrays kept between calls; emission) and
gives a ``Generated``: the module source text, which user line each of its
lines was generated for, and what the caller needs to run it (the order of its
arguments, which gradients it returns).
"""
import copy
import os

import gast
import numpy as np

from ..errors import OutputStructureError
from .emit.layout import INDENT, after_the_function, module_header, render_mapped, wrap
from .front.literals import atom_node
from .front.diagonal_folds import diagonal_folds
from .front.lower import lower_function
from .ir import Const, If, Loop, Op, Seq, Var, atom_vars, walk_statements
from .optimize.accumulate import products_in_place
from .emit.kernels import kernel_lines
from .emit.loops import loop_lines
from .optimize.buffers import by_columns, kept_results
from .optimize.constants import hoisted_constants
from .optimize.kernels import Numbers, fused_chains
from .optimize.loop_space import (array_ranks, exclusive, index_spaces, nodes, pieced,
                                  slice_cuts)
from .analysis.shapes import Dim
from .optimize.loop_rows import rows_read_in_place
from .optimize.loop_views import views_read_in_place
from .optimize.loop_tapes import rows_on_tapes
from .optimize.loops import Context, fused_loops
from .optimize.products import scaled_products
from .optimize.shared import shared_values
from .optimize.views import contiguous_blocks
from .optimize.spelling import as_operators, rolls_as_runtime, sums_as_runtime, without_negations
from .optimize.substitute import fused_forward, inline_temporaries
from .optimize.summed_adjoints import summed_adjoints
from .reverse.checkpoint import checkpointed
from .reverse.records import merged_tapes
from .reverse.transform import reverse
from .syntax.imports import import_lines
from .syntax.nodes import Comment, name_uses
from .syntax.source import to_source


class Generated:
    """A generated value-and-gradient function, before it is loaded.

    ``source``: the module text; ``function_name``; ``free``: the FreeValues
    passed after the user's arguments; ``wrt``: what each gradient is for, as
    ('position', k) with k the index of a leaf parameter (an argument that is a
    tuple, list or dict has one per leaf) or ('weight', j); ``computed``: for
    each wrt, whether the generated code returns its gradient (otherwise it is
    zeros); ``n_params``: the number of leaf parameters; ``arg_leaves``: per
    argument, the indices of its leaf parameters; ``line_map``: line number in
    ``source`` -> the user's source line (``SourceLocation``) it was generated for;
    ``adjoint_from``: the first line of the adjoint sweep (None: there is none).
    """

    #: True when the code holds only for arguments of the sizes it was built for (a
    #: recursion that ends by shapes unrolled: ``LoweredFunction.by_shape``)
    by_shape = False

    def __init__(self, source, function_name, free, wrt, computed, n_params, arg_leaves=None,
                 line_map=None, adjoint_from=None):
        self.source = source
        self.line_map = line_map or {}
        self.adjoint_from = adjoint_from
        self.function_name = function_name
        self.free = free
        #: what the code took from outside, to check at each call (``front/guards.py``)
        self.guards = []
        self.wrt = wrt
        self.computed = computed
        self.n_params = n_params
        self.arg_leaves = arg_leaves if arg_leaves is not None else [[k] for k in
                                                                       range(n_params)]


def build(fn, positions, weights, has_aux, bound_self=None, title=None, arg_types=None,
          arg_trees=None, memory_limit=None, hoist=False, kept=False):
    """Differentiate ``fn`` w.r.t. argument ``positions`` and the Parameters ``weights``.

    ``arg_trees`` (optional): per argument, its treedef (``s2sgrad.trees``) when it is a
    tuple, list or dict: the generated function then takes its leaves as separate
    parameters.  ``arg_types`` (optional): per leaf parameter, (dtype, ndim) or (dtype,
    ndim, unit dimensions: per dimension whether it is 1), ("const", value) for an option
    (None, a bool, a string: folded as that value) or None; the code is then specialised
    on them (``x.dtype``/``x.ndim`` fold, broadcasting is decided while building).
    ``memory_limit`` (bytes, optional): the top-level loops are written as step functions
    run under binomial checkpointing when their tape would not fit
    (``compiler/reverse/checkpoint.py``).
    ``hoist``: compute the arrays of a loop-free gradient that depend only on sizes and
    plain numbers once per their values (``optimize/constants.py``); ``kept``: write its
    elementwise results into arrays kept between calls (``optimize/buffers.py``: the
    caller asks for it where arrays are large, ``api.derivative``'s ``kept_arrays``).
    Both for code run as numpy: Numba cannot compile the tables.
    """
    d = differentiate(fn, positions, weights, has_aux, bound_self, arg_types, arg_trees)
    inline_sweeps(d)
    share_values(d)
    fname = d.names.fresh(f"{d.lowered.name}_value_and_grad")
    sweeps = copy.copy(d.sweeps)
    returned = set(atom_vars(d.lowered.output)) | {g for g in d.returned if g is not None}
    sweeps.backward = summed_adjoints(products_in_place(d.sweeps.backward),
                                      lambda name: simple_array(d.lowered, name), d.names.fresh,
                                      returned | set(d.lowered.mutated))
    reads = name_uses(d.sweeps.forward + d.sweeps.backward)[0]
    for name in atom_vars(d.lowered.output) + [r for r in d.returned if r is not None]:
        reads[name] = reads.get(name, 0) + 1
    arrays = {name for name, rank in d.lowered.ndims.items() if rank and rank >= 1}
    sweeps.forward = rolls_as_runtime(sums_as_runtime(
        fused_forward(d.sweeps.forward, reads, arrays, d.names.modules.values()),
        lambda name: rank_of(d.lowered, name)))
    steps = [] if memory_limit is None else checkpointed(d.lowered, sweeps, d.names,
                                                         d.returned, memory_limit)
    if memory_limit is None:   # one list tape per loop (the checkpointed steps keep theirs)
        merged_tapes(sweeps, d.names.fresh)
    prelude = hoist_constants(d, sweeps, fname) if hoist else []
    if not steps:
        prelude += loop_sweeps(d, sweeps)
    give = None
    if kept and not steps:
        more, give = kept_sweeps(d, sweeps)
        prelude += more
    lines, adjoint_from = emit_value_and_grad(
        d.lowered, sweeps, d.returned, fname,
        title or title_of(d.lowered, positions, weights), d.names,
        import_lines(d.names.modules), steps, prelude, give)
    source = "\n".join(line for line, _ in lines) + "\n"
    line_map = {k: origin for k, (_, origin) in enumerate(lines, 1) if origin is not None}
    generated = Generated(source, fname, d.lowered.free, d.wrt,
                          [r is not None for r in d.returned], len(d.lowered.params),
                          d.lowered.arg_leaves, line_map, adjoint_from)
    generated.guards = d.lowered.guards
    generated.by_shape = d.lowered.by_shape
    return generated


def simple_array(lowered, name):
    """True when ``name`` is known a float64 array none of whose dimensions may be 1."""
    shapes = lowered.shapes
    shape = shapes.of.get(name) if shapes is not None else None
    return isinstance(shape, tuple) and len(shape) >= 1 and shapes.no_unit_dims(shape) and \
        lowered.dtypes.get(name) == np.dtype(np.float64)


def rank_of(lowered, name):
    """``name``'s rank where the lowering knows it (its ranks, else its shape table), or
    None."""
    rank = lowered.ndims.get(name)
    if rank is None and lowered.shapes is not None:
        shape = lowered.shapes.of.get(name)
        rank = len(shape) if isinstance(shape, tuple) else None
    return rank


class Differentiated:
    """What ``differentiate`` gives, before any source is written: the LoweredFunction
    ``lowered``, the ``sweeps``, ``wrt`` (as in ``Generated``), ``returned`` (per wrt, its
    adjoint's name or None) and the function's name allocator ``names``."""

    def __init__(self, lowered, sweeps, wrt, returned, names):
        self.lowered, self.sweeps = lowered, sweeps
        self.wrt, self.returned, self.names = wrt, returned, names


def differentiate(fn, positions, weights, has_aux, bound_self=None, arg_types=None,
                  arg_trees=None, seed_values=None):
    """Lower ``fn`` and build both sweeps (see ``build``).  ``seed_values`` (optional):
    a function of (LoweredFunction, names) giving ``(seed names, nodes)``: the output
    adjoints start from those nodes instead of ones (see ``reverse``)."""
    lowerer, lowered = lower_function(fn, bound_self, arg_types, arg_trees)
    diagonal_folds(lowered, lowerer.state.names)
    if lowered.shapes is not None:
        lowered.shapes.adjoints_shaped = seed_values is None and not any(
            isinstance(s, (If, Loop)) or (isinstance(s, Op) and s.custom is not None)
            for s in walk_statements(lowered.body))
    params = lowered.params
    wrt_vars, wrt = [], []
    for i in positions:
        for k in lowered.arg_leaves[i]:
            wrt_vars.append(params[k])
            wrt.append(("position", k))
    for j, w in enumerate(weights):
        free = next((f for f in lowered.free if f.obj is w), None)
        wrt_vars.append(free.name if free is not None and getattr(w, "requires_grad", True)
                        else None)
        wrt.append(("weight", j))
    seeds = output_seeds(lowered, has_aux)
    names = lowerer.state.names
    values = None
    if seed_values is not None:
        seeds, values = seed_values(lowered, names)
    sweeps = reverse(lowered, [v for v in wrt_vars if v is not None], seeds, names, values)
    grad_of = dict(zip([v for v in wrt_vars if v is not None], sweeps.grads))
    returned = [grad_of.get(v) if v is not None else None for v in wrt_vars]
    return Differentiated(lowered, sweeps, wrt, returned, names)


def inline_sweeps(d):
    """Inline the single-use temporaries of ``d``'s sweeps (``compiler/optimize/substitute.py``): all
    but the names read outside them (the output, the parameters, the gradients returned);
    ``np.add(a, b)`` of arrays written ``a + b`` first, signs moved onto sums and numbers
    after (``without_negations``)."""
    lowered, sweeps = d.lowered, d.sweeps
    keep = set(atom_vars(lowered.output)) | set(lowered.params) | set(lowered.mutated) | {
        f.name for f in lowered.free} | {g for g in d.returned if g is not None}
    shapes = lowered.shapes

    def same_shape(a, b):
        return shapes.same(shapes.of.get(a), shapes.of.get(b))

    def is_array(name):
        return (lowered.ndims.get(name) or 0) >= 1 and name not in lowered.lists \
            and name not in lowered.tuples

    forward, backward = inline_temporaries(
        as_operators(sweeps.forward, is_array), as_operators(sweeps.backward, is_array),
        d.names.invented, keep, d.names.modules.values(), same_shape)
    sweeps.forward, sweeps.backward = (
        [item if isinstance(item, Comment) else without_negations(item) for item in sweep]
        for sweep in (forward, backward))


def share_values(d):
    """Read a value computed again by the same expression from its first name, in both
    sweeps of ``d`` (``optimize/shared.py``: the adjoint's ``np.cos(theta)`` of the
    forward's ``costheta``)."""
    keep = set(atom_vars(d.lowered.output)) | set(d.lowered.mutated) | {
        g for g in d.returned if g is not None}
    split = len(d.sweeps.forward)
    sequences = set(d.lowered.lists) | set(d.lowered.tuples)
    both = shared_values(d.sweeps.forward + d.sweeps.backward, keep, sequences)
    d.sweeps.forward, d.sweeps.backward = both[:split], both[split:]


def output_seeds(lowered, has_aux):
    """The output Var names whose derivatives are wanted: the whole output's, or the first
    item's with ``has_aux`` (which needs a tuple ``(out, aux...)``).  An output that is no
    number or array (``None`` from a forgotten ``return``, a string) is refused, naming the
    function: its derivative would be silently zero."""
    out = lowered.output
    if has_aux:
        if not isinstance(out, Seq) or out.kind != "tuple" or len(out.items) < 2:
            what = ("a list" if isinstance(out, Seq) and out.kind != "tuple"
                    else "a single value")
            raise OutputStructureError(
                "has_aux=True needs a function that returns a tuple (out, aux...), "
                f"but {lowered.name} returns {what}", lowered.origin, None,
                "return (out, aux) or pass has_aux=False")
        out = out.items[0]
    for path, leaf in _leaves(out):
        if isinstance(leaf, Const) and (leaf.value is None or isinstance(leaf.value,
                                                                         (str, bytes))):
            what = "None" if leaf.value is None else \
                f"a {type(leaf.value).__name__} ({leaf.value!r})"
            whose = f"{lowered.name} returns" if not path else \
                f"item {']['.join(map(str, path))} of what {lowered.name} returns is"
            raise OutputStructureError(
                f"{whose} {what}, which has no derivative: a function to differentiate "
                "returns numbers or arrays (or tuples and lists of them)",
                lowered.origin, None,
                "add the missing `return`" if leaf.value is None and not path else
                "return the numbers or arrays to differentiate (and the rest as aux, with "
                "has_aux=True)")
    return atom_vars(out)


def _leaves(atom, path=()):
    """(index path, atom) of each leaf of an output, Seqs flattened."""
    if not isinstance(atom, Seq):
        return [(path, atom)]
    return [leaf for k, item in enumerate(atom.items) for leaf in _leaves(item, path + (k,))]


def title_of(lowered, positions, weights):
    """The first line of a generated module: what is differentiated, where, w.r.t. what."""
    parts = [lowered.params[k] for i in positions for k in lowered.arg_leaves[i]] + [
        f"weight {getattr(w, 'name', '?')}" for w in weights]
    where = f"{os.path.basename(lowered.origin.filename)}:{lowered.origin.lineno}"
    return f"value and gradient of {lowered.name} ({where}) w.r.t. {', '.join(parts) or 'nothing'}"


def hoist_constants(d, sweeps, fname):
    """Move what ``d``'s forward sweep computes from sizes and plain numbers only (and
    outer products of array arguments not differentiated) into a function of them,
    called through an ``rt.Constants`` table (``optimize/constants.py``):
    ``sweeps.forward`` is replaced; gives the (line, origin) pairs of that function and
    table, to write before the gradient's (none when nothing is moved)."""
    lowered = d.lowered
    wrt = {lowered.params[k] for kind, k in d.wrt if kind == "position"}
    fixed = [p for p in lowered.params if p not in wrt and p not in lowered.mutated
             and p not in lowered.lists and p not in lowered.tuples]
    roots = {p for p in fixed if lowered.ndims.get(p) == 0}
    arrays = {p for p in fixed if (lowered.ndims.get(p) or 0) >= 1} | {
        f.name for f in lowered.free if type(f.obj) is np.ndarray and f.obj.ndim >= 1
        and f.name not in lowered.mutated}
    keep = set(atom_vars(lowered.output)) | set(lowered.mutated) | {
        g for g in d.returned if g is not None}
    hoisted = hoisted_constants(sweeps.forward, sweeps.backward, roots, lowered.params, keep,
                                lambda n: None if lowered.ndims.get(n) is None
                                else lowered.ndims[n] >= 1, d.names.fresh,
                                arrays, lowered.ndims.get)
    if hoisted is None:
        return []
    function = d.names.fresh(f"{lowered.name}_constants")
    table = d.names.fresh(f"_{lowered.name}_constants")
    inputs = [name for name, _ in hoisted.inputs]
    outputs = ", ".join(hoisted.outputs) + ("," if len(hoisted.outputs) == 1 else "")
    said = " and ".join(to_source(e) for _, e in hoisted.inputs)
    per = "once per their values"
    if hoisted.arrays:
        per += f" ({', '.join(hoisted.arrays)} compared by contents)"
    if not said:            # literals only (np.ones(3)): one set of values
        said, per = "numbers written in the code", "once"
    lines = [(line, None) for line in wrap(
        f"# what {fname} computes from {said} only: run {per} "
        "(rt.Constants keeps the results, read-only)")]
    lines += [(line, None) for line in wrap(f"def {function}({', '.join(inputs)}):")]
    lines += render_mapped(hoisted.function, 1)
    lines += [(f"{INDENT}return {outputs}", None), ("", None), ("", None),
              (f"{table} = rt.Constants({function})", None), ("", None), ("", None)]
    call = f"{outputs} = {table}({', '.join(to_source(e) for _, e in hoisted.inputs)})"
    sweeps.forward = [Comment(f"{', '.join(hoisted.outputs)}: from {said} only, computed "
                              f"{per} ({function} above)"),
                      gast.parse(call).body[0]] + hoisted.forward
    return lines


def loop_sweeps(d, sweeps):
    """Runs of elementwise array statements in the loops of ``d``'s sweeps (changed in
    place) made one explicit loop each (``optimize/loops.py``), for float64 arguments:
    gives the (line, origin) pairs of the functions the runs are called as."""
    lowered = d.lowered
    everything = sweeps.forward + sweeps.backward
    arrays = [t for t in map(lowered.param_types.get, lowered.params) if t and t[1]]
    if not any(isinstance(item, (gast.For, gast.While)) for item in everything) or \
            not arrays or any(str(dtype) != "float64" for dtype, _ in arrays):
        return []
    numbers = Numbers(lambda name: lowered.ndims.get(name) == 0)
    small = {}
    for node in nodes(everything):
        if isinstance(node, gast.Assign):
            numbers.see(node)
            for target in node.targets:
                for name in (n.id for n in gast.walk(target) if isinstance(n, gast.Name)):
                    small.setdefault(name, set()).add(_small_length(node.value))
    small = {name: ks.pop() for name, ks in small.items() if len(ks) == 1 and None not in ks}
    shapes = lowered.shapes
    if shapes is None:
        return []
    small.update(_known_pieces(everything, small, shapes, lowered.ndims))
    floats = {p for p in lowered.params if (lowered.param_types.get(p) or (None,))[0] is not
              None and str(lowered.param_types[p][0]) == "float64"}

    def known(name):       # the float64 arguments' shapes: the roots of every index space
        return shapes.of.get(name) if name in floats else None

    def view(name):        # a 1-D slice or row: the lowering's shape of it
        return shapes.of.get(name) if lowered.ndims.get(name) == 1 else None

    def one_length(a, b):  # 1-D of one length, or two sizes by name that the loop's
        # guard compares (rt.one_length: else the statements as numpy)
        return shapes.same(a, b) or a is not None and b is not None and \
            len(a) == len(b) == 1 and all(
                isinstance(shapes.find(dim), Dim) for dim in (a[0], b[0]))
    same = one_length
    spaces = index_spaces(everything, known, same, numbers.number, small, view)
    reads = name_uses(everything)[0]
    keep = set(atom_vars(lowered.output)) | {g for g in d.returned if g is not None}

    def space(name):
        shape = spaces.get(name) or known(name)
        return shape if isinstance(shape, tuple) and len(shape) == 1 and \
            lowered.ndims.get(name, 1) == 1 else None
    context = Context(space, numbers, small, reads, keep, d.names.fresh, same,
                      set(d.names.modules.values()) | {"np", "rt", "math"})
    context.slices = slice_cuts(everything, space)
    context.rank = array_ranks(everything, lowered.ndims)
    context.pieced = pieced(everything, small)
    context.exclusive = exclusive(everything)
    context.stores = name_uses(sweeps.forward)[1]
    sweeps.forward, passes = fused_loops(sweeps.forward, context)
    context.stores = name_uses(sweeps.backward)[1]
    sweeps.backward, more = fused_loops(sweeps.backward, context)
    unpacked = rows_on_tapes(sweeps.forward, sweeps.backward, passes)
    rows_read_in_place(sweeps.backward, more, unpacked)
    views_read_in_place(sweeps.forward, passes, numbers.number)
    views_read_in_place(sweeps.backward, more, numbers.number)
    return loop_lines(passes + more)


def _known_pieces(statements, small, shapes, ndims):
    """name -> k of each name joined by ``np.concatenate((a, b))`` in ``statements``,
    bound once, that the lowering's shapes give k elements (an int): ``x[:1] * 0 + 1``,
    ``x[:1]``, ``np.array([1.0])`` join as ``np.ones(1)`` does (``small``, which it
    adds to: ``optimize/loops.py`` reads it as ``t3[i] if i < 1``)."""
    joined = {e.id for node in nodes(statements) if isinstance(node, gast.Call) and
              to_source(node.func) == "np.concatenate" and len(node.args) == 1 and
              isinstance(node.args[0], gast.Tuple)
              for e in node.args[0].elts if isinstance(e, gast.Name)}
    stores = name_uses(statements)[1]
    known = {}
    for name in joined - set(small):
        shape = shapes.of.get(name)
        if isinstance(shape, tuple) and len(shape) == 1 and type(shape[0]) is int and \
                ndims.get(name) == 1 and stores.get(name) == 1:
            known[name] = shape[0]
    return known


def _small_length(value):
    """k of ``np.ones(k)``/``np.zeros(k)`` (an int literal), else None."""
    if isinstance(value, gast.Call) and isinstance(value.func, gast.Attribute) and \
            isinstance(value.func.value, gast.Name) and value.func.value.id == "np" and \
            value.func.attr in ("ones", "zeros") and len(value.args) == 1 and \
            not value.keywords and isinstance(value.args[0], gast.Constant) and \
            type(value.args[0].value) is int:
        return value.args[0].value
    return None


def kept_sweeps(d, sweeps):
    """``keep_buffers`` on both of ``sweeps`` (changed in place) of the ``Differentiated``
    ``d``: gives the prelude lines and the ``give`` names (None: nothing kept)."""
    keep = set(atom_vars(d.lowered.output)) | set(d.lowered.mutated) | {
        g for g in d.returned if g is not None}
    numbers = {n for n, rank in d.lowered.ndims.items() if rank == 0}
    # the sweeps' boundary, found again by identity (kernels remove and add statements)
    boundary = Comment("the adjoint sweep")
    matrices = [p for p in d.lowered.params if d.lowered.ndims.get(p) == 2]
    head, both, prelude, give = keep_buffers(sweeps.forward + [boundary] + sweeps.backward,
                                             keep, numbers.__contains__, d.names,
                                             d.lowered.name, d.lowered.ndims.get, matrices)
    split = both.index(boundary)
    sweeps.forward, sweeps.backward = head + both[:split], both[split + 1:]
    return prelude, give


def keep_buffers(statements, keep, scalar, names, base, rank=lambda name: None, matrices=()):
    """Make the elementwise chains of the straight-line ``statements`` fused kernel calls
    (``optimize/kernels.py``) and write their large elementwise results into arrays kept
    between calls (``optimize/buffers.py``).  Gives ``(head, statements, prelude,
    give)``: the statements to start the function with (taking the kept arrays), the
    rewritten ``statements``, the (line, origin) pairs of the kernels and the
    ``rt.Buffers`` table to write after the function, and the ``(table, kept)`` names
    the return hands the result through; ``give`` is None when nothing is kept.
    ``keep``: the names returned; ``scalar(name)``: a name known to be a number;
    ``rank(name)``: its number of dimensions or None (column blocks read by several
    passes are copied contiguous: ``optimize/views.py``); ``matrices``: the arguments
    known to be matrices, laid out by columns for a call where they are narrow
    (``optimize/buffers.by_columns``)."""
    statements = contiguous_blocks(scaled_products(statements, keep), keep, rank)
    statements, chains = fused_chains(statements, keep, names.fresh, scalar)
    kept = names.fresh("kept")
    rewritten, count = kept_results(statements, keep, scalar, kept,
                                    {chain.name for chain in chains})
    if not count:
        return [], statements, kernel_lines(chains), None
    table = names.fresh(f"_{base}_buffers")
    layout, rewritten = by_columns(rewritten, matrices, kept, {c.name for c in chains})
    head = [Comment(f"{kept}.f(...): np.f (rt.f) written into the array this operation "
                    f"made last call, when the arguments are alike (rt.Buffers: no fresh "
                    f"pages to fault)"),
            gast.parse(f"{kept} = {table}.take()").body[0], *layout]
    prelude = [(line, None) for line in wrap(
        f"# the arrays the function below writes its {count} elementwise results into "
        "(the large ones), kept from one call to the next")]
    prelude += [(f"{table} = rt.Buffers()", None), ("", None), ("", None)]
    return head, rewritten, kernel_lines(chains) + prelude, (table, kept)


def emit_value_and_grad(lowered, sweeps, returned, fname, title, names, imports=(), steps=(),
                        prelude=(), give=None):
    """The generated module as (line, the user's SourceLocation it was generated for or
    None) pairs, and the number of the adjoint sweep's first line (None: no sweep).
    ``steps``: the ``StepFunction``s of checkpointed loops, and ``prelude``: (line,
    origin) pairs, both written after the function (``layout.after_the_function``);
    ``give``: the ``(table, kept)`` names of kept arrays (``keep_buffers``), handed the
    result at the return."""
    args = lowered.params + [f.name for f in lowered.free]
    body = [(f"{INDENT}{name} = np.copy({name})  # updated in place below; the caller's "
             f"array is kept", None) for name in args if name in lowered.mutated]
    body += [(INDENT + line, None) for tape in sweeps.stacks for line in tape.declaration()]
    body += render_mapped(sweeps.forward, 1)
    output = lowered.output
    value_src = to_source(atom_node(output)) if not isinstance(output, Var) else output.name
    if lowered.mutated & set(atom_vars(output)) or sweeps.restored:
        # the adjoint sweep changes what the forward sweep left: keep the value first
        value_src = names.fresh("value")
        body.append((f"{INDENT}{value_src} = {_snapshot(output, lowered.mutated)}",
                     lowered.origin))
    adjoint_at = None
    if sweeps.backward:
        body.append(("", None))
        adjoint_at = len(body)
        body += render_mapped(sweeps.backward, 1)
    grads = [g for g in returned if g is not None]
    grads_src = "(" + ", ".join(grads) + ("," if len(grads) == 1 else "") + ")"
    result = f"{value_src}, {grads_src}"
    if give is not None:
        result = f"{give[0]}.give({give[1]}, ({result}))"
    body.append((f"{INDENT}return {result}", None))
    helpers = []
    for step in steps:
        helpers += [(line, None) for line in wrap(f"def {step.name}({', '.join(step.params)}):")]
        helpers += [(line, None) for line in wrap(f"{INDENT}# {step.doc}")]
        helpers += [*render_mapped(step.body, 1), ("", None), ("", None)]
    code = [line for line, _ in list(prelude) + body + helpers]
    lines = module_header(title, ["# Generated code: edits are overwritten. Forward sweep, "
                                  "then adjoints in reverse."], code, imports)
    lines += [(line, None) for line in wrap(f"def {fname}({', '.join(args)}):")]
    adjoint_from = None
    for k, (line, origin) in enumerate(body):
        if k == adjoint_at:
            adjoint_from = len(lines) + 1
        lines.extend((wrapped, origin) for wrapped in wrap(line))
    return lines + after_the_function(list(prelude) + helpers), adjoint_from


def _snapshot(atom, mutated):
    """The output as it is at the end of the forward sweep (copies of arrays the adjoint
    sweep restores in place)."""
    if isinstance(atom, Seq):
        inner = ", ".join(_snapshot(a, mutated) for a in atom.items)
        return "(" + inner + ("," if len(atom.items) == 1 else "") + ")"
    if isinstance(atom, Var):
        return f"np.copy({atom.name})" if atom.name in mutated else atom.name
    return to_source(atom_node(atom))
