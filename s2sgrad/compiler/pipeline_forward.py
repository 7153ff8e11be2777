"""Forward mode end to end: a function -> the source of its JVP (or forward Jacobian) function.

``build_jvp(fn, positions, has_aux, bound_self, arg_types, arg_trees, jacobian)``
lowers ``fn`` as ``pipeline.build`` does (``Lowerer``), runs the tangent
pass (``tangents.tangent_sweep``) and writes a module with one function:

- ``<name>_jvp(<args>, <free values>, <tangents>)`` returning ``(outputs,
  output tangents)``, the tangents in the outputs' structure (with
  ``has_aux``, the tangent of the first output only); a tangent argument is
  ``x_dot`` for each leaf parameter ``x`` of the differentiated positions;
- or, with ``jacobian=True``, ``<name>_jacfwd(<args>, <free values>)``
  returning ``(outputs, columns)``: one loop over the basis directions of
  all differentiated leaves runs the same statements once per direction, in
  the generated (and compiled) code, and ``columns[k]`` is the output
  tangent of direction ``k`` (leaves in order, each flattened C-wise);
- or, with ``batched=True`` and not ``jacobian``, ``<name>_jvps(<args>, <free values>,
  <tangents>)``: the JVP along a batch of tangents, each ``x_dot`` of shape ``(width,) +
  x.shape`` (row ``k``: the ``k``-th tangent; ``forward/batched.py``), returning the
  outputs and their tangents with the batch first: what ``vmap`` of a function calling
  ``jvp`` with only the tangents mapped computes (``api/vmap_jvp.py``).

With ``kept`` (a jvp run as numpy), its elementwise chains are fused kernel calls and its
large elementwise results go into arrays kept between calls (``optimize/kernels.py``,
``optimize/buffers.py``, as ``pipeline.keep_buffers`` writes them).  In a batched
Jacobian, the single-use elementwise temporaries of loop bodies are written into their
reader (``optimize/substitute.fused_forward``, as a gradient's forward sweep has them):
numpy then updates the unnamed batch in place instead of making another; run as numpy, a
loop that adds a matrix product to an accumulator each step makes their sum as one
product after it (``optimize/product_sums.py``).

The result is a ``GeneratedJvp``: the module text and what the caller needs
to run it (free values, which leaves are differentiated).  Higher-order code
(forward over reverse) can call ``build_jvp`` on any Python function whose
source is readable, such as a generated gradient.
"""
import os

import gast

from .emit.layout import INDENT, after_the_function, module_header, render_mapped, wrap
from .forward.batched import BatchedTangents, own_loops
from .forward.transform import tangent_sweep
from .front.literals import atom_node
from .front.lower import lower_function
from .ir import Seq, Var, atom_vars
from .optimize.product_sums import product_sums
from .optimize.einsum_chains import einsum_chains
from .optimize.products import sliced_products
from .optimize.shared import shared_values
from .optimize.spelling import signs_onto_values
from .optimize.substitute import fused_forward
from .pipeline import keep_buffers, output_seeds
from .syntax.imports import import_lines
from .syntax.nodes import call, name_node, name_uses
from .syntax.source import to_source


class GeneratedJvp:
    """A generated forward-mode function, before it is loaded.

    ``source``: the module text; ``function_name``; ``free``: the FreeValues
    passed after the user's arguments; ``wrt``: the indices of the leaf parameters
    whose tangents the function takes (or spans, for a Jacobian); ``n_params``;
    ``arg_leaves``: per argument, the indices of its leaf parameters; ``jacobian``;
    ``line_map``: line number in ``source`` -> the user's source line (SourceLocation) it
    was generated for (as ``pipeline.Generated``'s; there is no adjoint sweep).
    """

    adjoint_from = None
    #: True when every tangent carries a batch of directions first (``forward/batched.py``)
    batched = False
    #: what the code took from outside, to check at each call (``front/guards.py``)
    guards = ()
    #: True when the code holds only for arguments of the sizes it was built for (a
    #: recursion that ends by shapes unrolled: ``LoweredFunction.by_shape``)
    by_shape = False
    #: True when the function returns a tuple (or list) of values
    output_is_tuple = False

    def __init__(self, source, function_name, free, wrt, n_params, arg_leaves, jacobian,
                 loops=True, line_map=None):
        self.line_map = line_map or {}
        #: whether the function's own statements loop (a Jacobian's loop over the
        #: directions aside): loop-free code runs as numpy under the auto backend policy
        self.loops = loops
        self.source = source
        self.function_name = function_name
        self.free = free
        self.wrt = wrt
        self.n_params = n_params
        self.arg_leaves = arg_leaves
        self.jacobian = jacobian


def build_jvp(fn, positions, has_aux=False, bound_self=None, arg_types=None, arg_trees=None,
              jacobian=False, title=None, batched=False, kept=False, as_numpy=False,
              pullback=False, ranks=None):
    """The forward-mode function of ``fn`` w.r.t. argument ``positions`` (module doc).

    ``arg_types`` and ``arg_trees`` as for ``pipeline.build``: per leaf parameter
    (dtype, ndim) or ("const", value), and per argument its treedef.  ``batched`` (with
    ``jacobian``): sweeps whose tangents carry a batch of directions first
    (``forward/batched.py``; raises ``NotBatchable`` naming an operation without a
    batched rule).  ``kept`` (a jvp run as numpy): large elementwise results of
    straight-line code go into arrays kept between calls (``optimize/buffers.py``).
    ``as_numpy`` (or ``kept``): the code runs as numpy, never compiled by Numba: a slice
    of a product's columns makes only those (``optimize/products.py``).  ``ranks`` (a
    batched pullback): the ranks of the function's locals seen in a run of it with
    arguments of these types, for values whose rank the rules do not tell."""
    lowerer, lowered = lower_function(fn, bound_self, arg_types, arg_trees)
    params = lowered.params
    wrt = [k for i in positions for k in lowered.arg_leaves[i]]
    wrt_vars = [params[k] for k in wrt]
    seeds = output_seeds(lowered, has_aux)
    names = lowerer.state.names
    tangent_args = {v: names.fresh(v + "_dot") for v in wrt_vars}
    width = names.fresh("width") if batched else None
    make = None if width is None else (
        lambda lowered, active, names: BatchedTangents(lowered, active, names, width,
                                                       scalar_loops=pullback,
                                                       seen_ranks=ranks))
    sweep = tangent_sweep(lowered, wrt_vars, seeds, names, tangent_args, make)
    if width is not None:
        sweep.statements = _fused_loop_bodies(lowered, sweep, names, has_aux)
    outputs = set(atom_vars(lowered.output)) | set(lowered.mutated)
    outputs |= {sweep.tangents[v] for v in outputs if v in sweep.tangents}
    sequences = set(lowered.lists) | set(lowered.tuples)
    sequences |= {sweep.tangents[v] for v in sequences if v in sweep.tangents}
    sweep.statements = shared_values(sweep.statements, outputs, sequences)
    if width is not None:
        sweep.statements = signs_onto_values(sweep.statements, set(sweep.tangents.values()))
    if as_numpy or kept:
        sweep.statements = sliced_products(sweep.statements, outputs)
        sweep.statements = einsum_chains(sweep.statements, outputs)
    if as_numpy and width is not None:
        sweep.statements = product_sums(sweep.statements, outputs, names.fresh)
    lowered.free = list(lowerer.state.free.values())
    kind = "jacfwd" if jacobian else "jvps" if batched else "jvp"
    fname = names.fresh(f"{lowered.name}_{kind}")
    where = f"{os.path.basename(lowered.origin.filename)}:{lowered.origin.lineno}"
    what = "forward-mode Jacobian" if jacobian else \
        "Jacobian-vector products along a batch of tangents" if batched else \
        "Jacobian-vector product"
    title = title or (f"{what} of {lowered.name} ({where}) w.r.t. "
                      f"{', '.join(wrt_vars) or 'nothing'}")
    emitter = _Emitter(lowered, sweep, names, wrt_vars, tangent_args, has_aux, width)
    emitter.kept = kept and not jacobian and width is None
    lines = emitter.module(fname, title, jacobian)
    source = "\n".join(line for line, _ in lines) + "\n"
    line_map = {k: origin for k, (_, origin) in enumerate(lines, 1) if origin is not None}
    loops = own_loops(lowered.body)
    generated = GeneratedJvp(source, fname, lowered.free, wrt, len(params),
                             lowered.arg_leaves, jacobian, loops, line_map)
    generated.guards = lowered.guards
    generated.by_shape = lowered.by_shape
    generated.batched = width is not None
    generated.output_is_tuple = isinstance(lowered.output, Seq)
    return generated


def _fused_loop_bodies(lowered, sweep, names, has_aux):
    """A batched sweep's statements with the single-use elementwise temporaries of its
    loop bodies written into their reader (``optimize/substitute.fused_forward``):
    ``positions_3_dot = positions_1_dot + t32 * t33_dot``, where numpy adds into the
    unnamed product instead of making a third batch of the sweep's size per step (on
    GradBench's ht, a (26, 544, 3) batch: the page faults of the fresh arrays were most
    of the loop's time).  Tangents are arrays (a batch, even of a number's directions)
    but those of lists; values are arrays by their rank."""
    out = lowered.output.items[0] if has_aux else lowered.output
    reads = name_uses(sweep.statements)[0]
    for name in atom_vars(out):
        for read in (name, sweep.tangents.get(name)):
            reads[read] = reads.get(read, 0) + 1
    arrays = {name for name, rank in lowered.ndims.items() if rank and rank >= 1 and
              name not in lowered.lists}
    arrays |= {t for v, t in sweep.tangents.items() if v not in lowered.lists}
    return fused_forward(sweep.statements, reads, arrays, names.modules.values())


class _Emitter:
    """Writes the module text of a forward-mode function."""

    def __init__(self, lowered, sweep, names, wrt_vars, tangent_args, has_aux, width=None):
        self.batched = width is not None
        self.width = width
        self.lowered = lowered
        self.sweep = sweep
        self.names = names
        self.wrt_vars = wrt_vars
        self.tangent_args = tangent_args
        self.has_aux = has_aux
        self.kept = False       # large results into kept arrays (``_kept_statements``)

    def _output_tangent(self):
        out = self.lowered.output
        if self.has_aux:
            out = out.items[0]
        return to_source(self._tangent_atom(out))

    def _tangent_atom(self, atom):
        sweep = self.sweep
        if isinstance(atom, Var):
            if atom.name in sweep.active:
                return name_node(sweep.tangents[atom.name])
            return self._zeros(atom.name)
        if isinstance(atom, Seq):
            elts = [self._tangent_atom(a) for a in atom.items]
            return (gast.List(elts=elts, ctx=gast.Load()) if atom.kind == "list"
                    else gast.Tuple(elts=elts, ctx=gast.Load()))
        if self.batched:
            return call("rt", "zeros_batch", [atom_node(atom), name_node(self.width)])
        return gast.Constant(value=0.0, kind=None)

    def _zeros(self, name):
        """The zero tangent of ``name`` (of a batch of directions in a batched sweep)."""
        if self.batched:
            return call("rt", "zeros_batch", [name_node(name), name_node(self.width)])
        return call("rt", "zeros_list" if name in self.lowered.lists else "zeros_like",
                    [name_node(name)])

    def _prologue(self, copies_of=None):
        """Copies of arrays updated in place, and zero tangents of active arguments that
        are not differentiated (an array of the caller's the function writes into)."""
        lowered, sweep = self.lowered, self.sweep
        args = lowered.params + [f.name for f in lowered.free]
        lines = []
        for name in args:
            if name in lowered.mutated:
                source = (copies_of or {}).get(name, name)
                lines.append(f"{name} = np.copy({source})  # updated in place below; the "
                             "caller's array is kept")
        for name in args:
            if name in sweep.active and name not in self.tangent_args:
                lines.append(f"{sweep.tangents[name]} = {to_source(self._zeros(name)).strip()}")
            elif name in sweep.active and name in lowered.mutated:
                t = sweep.tangents[name]
                lines.append(f"{t} = np.copy({t})  # updated in place below")
        return lines

    def module(self, fname, title, jacobian):
        """The module as (line, the user's SourceLocation it was generated for or None)."""
        lowered = self.lowered
        out = lowered.output
        value_src = to_source(atom_node(out)) if not isinstance(out, Var) else out.name
        args = lowered.params + [f.name for f in lowered.free]
        prelude = []
        if not jacobian:
            signature = args + [self.tangent_args[v] for v in self.wrt_vars]
            body = []
            if self.batched:      # the tangents' batch, first in each of them
                first = self.tangent_args[self.wrt_vars[0]]
                body.append((f"{INDENT}{self.width} = np.shape({first})[0]", None))
            body += [(INDENT + line, None) for line in self._prologue()]
            result = f"{value_src}, {self._output_tangent()}"
            statements, prelude, give = self._kept_statements(result)
            body += render_mapped(statements, 1)
            if give is not None:
                result = f"{give[0]}.give({give[1]}, ({result}))"
            body.append((f"{INDENT}return {result}", None))
            header = ("# Generated code: edits are overwritten. Each value, then its tangent\n"
                      "# (x_dot: the derivative of x along the input tangents).")
            if self.batched:
                header = ("# Generated code: edits are overwritten. Each value, then its tangent\n"
                          "# x_dot along a batch of input tangents (row k of x_dot: along the\n"
                          "# k-th tangent of each input).")
        elif self.batched:
            signature, body = self._batched_body(args, value_src)
            header = ("# Generated code: edits are overwritten. Each value, then its tangent\n"
                      "# x_dot along a batch of basis directions of the inputs (row k of\n"
                      "# x_dot: along direction start + k), in as few sweeps as memory allows.")
        else:
            signature, body = self._jacobian_body(args, value_src)
            header = ("# Generated code: edits are overwritten. One pass per basis direction\n"
                      "# of the inputs; each value, then its tangent (x_dot).")
        code = [line for line, _ in body]
        lines = module_header(title, header.split("\n"), code,
                              import_lines(self.names.modules)) + [
            (line, None) for line in wrap(f"def {fname}({', '.join(signature)}):")]
        return lines + [(wrapped, origin) for line, origin in body for wrapped in wrap(line)] \
            + after_the_function(prelude)

    def _kept_statements(self, result):
        """The sweep's statements, the prelude lines and the ``give`` names of
        ``pipeline.keep_buffers`` (when ``self.kept``; ``result``: the returned source)."""
        statements = self.sweep.statements
        if not self.kept:
            return statements, [], None
        keep = {n.id for n in gast.walk(gast.parse(result)) if isinstance(n, gast.Name)}
        keep |= set(self.lowered.mutated)
        numbers = {n for n, rank in self.lowered.ndims.items() if rank == 0}
        numbers |= {self.sweep.tangents[n] for n in numbers if n in self.sweep.tangents}
        head, statements, prelude, give = keep_buffers(
            statements, keep, numbers.__contains__, self.names, self.lowered.name,
            self.lowered.ndims.get)
        return head + statements, prelude, give

    def _jacobian_body(self, args, value_src):
        names, lowered = self.names, self.lowered
        # an argument updated in place is copied afresh for each direction
        renamed = {a: names.fresh(a + "_arg") for a in args if a in lowered.mutated}
        signature = [renamed.get(a, a) for a in args]
        counts, offsets = [], []
        body = []
        for v in self.wrt_vars:
            n = names.fresh("n_" + v)
            counts.append(n)
            body.append(f"{INDENT}{n} = rt.tangent_size({renamed.get(v, v)})")
        columns = names.fresh("columns")
        k = names.fresh("k")
        total = " + ".join(counts) if counts else "0"
        body.append(f"{INDENT}{columns} = []")
        body.append(f"{INDENT}# one pass per basis direction of {', '.join(self.wrt_vars)}")
        body.append(f"{INDENT}for {k} in range({total}):")
        inner = INDENT * 2
        offset = ""
        for v, n in zip(self.wrt_vars, counts):
            shift = f"{k} - {offset[3:]}" if offset else k
            if offset and "+" in offset[3:]:
                shift = f"{k} - ({offset[3:]})"
            body.append(f"{inner}{self.tangent_args[v]} = rt.basis_tangent("
                        f"{renamed.get(v, v)}, {shift})")
            offset += f" + {n}"
            offsets.append(offset)
        body += [inner + line for line in self._prologue(renamed)]
        return signature, [(line, None) for line in body] + render_mapped(
            self.sweep.statements, 2) + [
            (f"{inner}{columns}.append({self._output_tangent()})", None),
            (f"{INDENT}return {value_src}, {columns}", None)]

    def _batched_body(self, args, value_src):
        """The body of a batched Jacobian: sweeps over blocks of ``width`` directions."""
        names, lowered = self.names, self.lowered
        renamed = {a: names.fresh(a + "_arg") for a in args if a in lowered.mutated}
        signature = [renamed.get(a, a) for a in args]
        counts = [names.fresh("n_" + v) for v in self.wrt_vars]
        body = [f"{INDENT}{n} = rt.tangent_size({renamed.get(v, v)})"
                for v, n in zip(self.wrt_vars, counts)]
        total = " + ".join(counts) if counts else "0"
        blocks, start, step = names.fresh("blocks"), names.fresh("start"), names.fresh("step")
        width = self.width
        # the sweep's width is capped by its inputs' sizes and by every array argument's
        # (a batch of a value as large as one: ``rt.sweep_width``)
        sized = list(self.wrt_vars) + [p for p in lowered.params if p not in self.wrt_vars
                                       and (lowered.param_types.get(p) or (0, 0))[1]]
        inputs = ", ".join(renamed.get(v, v) for v in sized)
        body += [f"{INDENT}{step} = rt.sweep_width({total}, {inputs})",
                 f"{INDENT}{blocks} = []",
                 f"{INDENT}# directions start .. start + width - 1 of "
                 f"{', '.join(self.wrt_vars)} in each sweep",
                 f"{INDENT}for {start} in range(0, {total}, {step}):",
                 f"{INDENT * 2}{width} = min({step}, {total} - {start})"]
        offset = []
        for v, n in zip(self.wrt_vars, counts):
            shift = start if not offset else f"{start} - " + (
                offset[0] if len(offset) == 1 else f"({' + '.join(offset)})")
            body.append(f"{INDENT * 2}{self.tangent_args[v]} = rt.basis_batch("
                        f"{renamed.get(v, v)}, {shift}, {width})")
            offset.append(n)
        body += [INDENT * 2 + line for line in self._prologue(renamed)]
        return signature, [(line, None) for line in body] + render_mapped(
            self.sweep.statements, 2) + [
            (f"{INDENT * 2}{blocks}.append({self._output_tangent()})", None),
            (f"{INDENT}return {value_src}, {blocks}", None)]
