"""The value-and-gradient code split in two, for ``vjp`` and ``jacrev``.

``build_split(fn, positions, weights, has_aux, ...)`` differentiates ``fn`` as
``pipeline.build`` does, with the output's adjoints started from cotangent
parameters instead of ones, and writes one module with three functions:

- ``<f>_forward(args)``: the forward sweep (tape pushes included); returns
  ``(output, residuals)``, the residuals being exactly the names the adjoint sweep
  reads that the forward sweep defines (tapes and their tops, iteration counts,
  forward values), found by ``liveness.exposed_reads``;
- ``<f>_backward(residuals, cotangents)``: the adjoint sweep; returns the gradients.
  It copies the residuals it updates in place (a list tape it pops, an array it
  restores), so it can run any number of times on one forward sweep;
- ``<f>_jacobian(args)``: the forward sweep once, then the adjoint sweep once per
  element of the output, seeded with each basis cotangent in turn; returns
  ``(output, jacobians)``, one ``(rows,) + input.shape`` array per gradient.

Beside it, ``build_split`` writes ``vjp`` (a ``VjpModule``): ``<f>_vjp(args,
cotangents)``, the forward and adjoint sweeps in one function (differentiable spelling,
the adjoint lists' pops read by index) returning ``(gradients..., output)``, which
``jacrev`` differentiates w.r.t. the cotangents in batched forward mode: every row in one
adjoint sweep (``api/batched_rows.py``); the per-row jacobian is its fallback
(``vjp_reason``: why no such module was written).

A residual that some path of the forward sweep leaves unassigned (a value of one
branch) travels in a one-item "box" list: the forward sweep appends it where it is
assigned, the adjoint sweep takes it back where there is one.
"""
import copy

import gast

from ..errors import OutputStructureError
from .analysis.liveness import (assigned_anywhere, exposed_reads, rebound_and_changed,
                                surely_assigned)
from .emit.layout import INDENT, module_header, render_mapped, wrap
from .front.literals import atom_node
from .ir import Const, Seq, Var
from .pipeline import differentiate, title_of
from .forward.batched import NotBatchable
from .pipeline_higher import (before_loops, differentiable_sweeps, pop_of, pops_as_reads,
                              pops_of)
from .syntax.imports import import_lines
from .syntax.nodes import Comment, assign, name_node
from .syntax.source import to_source


class SplitGenerated:
    """A generated forward/backward/jacobian module, before it is loaded.

    ``source``, ``free``, ``wrt``, ``computed``, ``n_params``, ``arg_leaves``: as in
    ``pipeline.Generated``; ``forward_name``, ``backward_name``, ``jacobian_name``: the
    three functions; ``residuals``: the backward's residual parameters in order (a boxed
    one by its box's name); ``boxed``: those that are boxes; ``n_cotangents``: how many
    output leaves (cotangent parameters) the backward takes after the residuals.
    """

    #: True when the code holds only for arguments of the sizes it was built for (a
    #: recursion that ends by shapes unrolled: ``LoweredFunction.by_shape``)
    by_shape = False

    def __init__(self, source, names, free, wrt, computed, n_params, arg_leaves, residuals,
                 boxed, n_cotangents):
        self.source = source
        self.forward_name, self.backward_name, self.jacobian_name = names
        self.function_name = self.forward_name
        self.free, self.wrt, self.computed = free, wrt, computed
        self.n_params, self.arg_leaves = n_params, arg_leaves
        self.residuals, self.boxed = residuals, boxed
        self.n_cotangents = n_cotangents
        self.line_map, self.adjoint_from = {}, None   # set by the writer
        #: what the code took from outside, to check at each call (``front/guards.py``)
        self.guards = []


class VjpModule:
    """The module of ``<f>_vjp`` (``_Writer.vjp_module``): ``source``, ``name`` (its
    function's), ``line_map`` (its lines -> the user's), ``adjoint_from`` (its first line
    of the adjoint sweep) and ``title`` (what it differentiates)."""

    def __init__(self, source, name, line_map, adjoint_from, title):
        self.source, self.name, self.line_map = source, name, line_map
        self.adjoint_from, self.title = adjoint_from, title


def output_leaves(atom, where):
    """The leaves (Var or Const atoms) of the differentiated output ``atom``, tuples and
    lists flattened in order; a dict output is refused (``where``: the function's origin)."""
    if isinstance(atom, Seq):
        return [leaf for item in atom.items for leaf in output_leaves(item, where)]
    if isinstance(atom, (Var, Const)):
        return [atom]
    raise OutputStructureError(
        "vjp and jacrev take functions that return arrays, numbers, or tuples and lists of "
        "them, but this one returns a dict", where, None,
        "return a tuple of the values instead")


def build_split(fn, positions, weights, has_aux, bound_self=None, arg_types=None,
                arg_trees=None, differentiable=False):
    """The split module of ``fn`` (see the module doc) as a ``SplitGenerated``;
    ``differentiable``: with its tapes in the differentiable spelling
    (``higher.differentiable_sweeps``), to run forward mode over it."""
    leaves, cotangents = [], []

    def seeds(lowered, names):
        out = lowered.output
        if has_aux:
            out = out.items[0]   # pipeline's checks have passed: (loss, aux...)
        leaves.extend(output_leaves(out, lowered.origin))
        cotangents.extend(names.fresh("ct") for _ in leaves)
        pairs = [(leaf.name, name_node(ct)) for leaf, ct in zip(leaves, cotangents)
                 if isinstance(leaf, Var)]
        return [p[0] for p in pairs], [p[1] for p in pairs]

    d = differentiate(fn, positions, weights, has_aux, bound_self, arg_types, arg_trees,
                      seed_values=seeds)
    if differentiable:
        d.sweeps = differentiable_sweeps(d)
    generated = _Writer(d, leaves, cotangents, positions, weights, differentiable).write()
    if not differentiable:     # the function jacrev's batched sweep differentiates
        together = copy.copy(d)
        together.sweeps = differentiable_sweeps(d)
        try:
            generated.vjp = _Writer(together, leaves, cotangents, positions, weights,
                                    True).vjp_module()
        except NotBatchable as exc:
            generated.vjp_reason = str(exc)
    generated.guards = d.lowered.guards
    generated.output_is_tuple = isinstance(
        d.lowered.output.items[0] if has_aux else d.lowered.output, Seq)
    return generated


class _Writer:
    """Writes the three functions of one ``Differentiated`` (see ``build_split``)."""

    def __init__(self, d, leaves, cotangents, positions, weights, differentiable=False):
        self.d, self.leaves, self.cotangents = d, leaves, cotangents
        self.names = d.names
        lowered = d.lowered
        self.args = lowered.params + [f.name for f in lowered.free]
        self.mutated = [a for a in self.args if a in lowered.mutated]
        self.decls = [line for tape in d.sweeps.stacks for line in tape.declaration()]
        declared = {tape.name for tape in d.sweeps.stacks} | {
            tape.top for tape in d.sweeps.stacks if tape.top}
        forward, backward = d.sweeps.forward, d.sweeps.backward
        defined = set(self.args) | declared | assigned_anywhere(forward)
        self.residuals = [n for n in exposed_reads(backward) if n in defined]
        surely = surely_assigned(forward, set(self.args) | declared)
        self.boxes = {r: self.names.fresh(r + "_box") for r in self.residuals
                      if r not in surely}
        rebound, arrays, lists = rebound_and_changed(backward)
        self.copied = {r: ("list" if r in lists else "array") for r in self.residuals
                       if r in arrays or r in lists}
        self.rebound = [r for r in self.residuals if r in rebound or r in self.copied]
        self.grads = [g for g in d.returned if g is not None]
        # list tapes cross to the backward packed (rt.pack_tape): a few arrays, not a list
        self.packed = [] if differentiable else [
            tape.name for tape in d.sweeps.stacks
            if tape.dtype is None and tape.name in self.residuals and tape.name not in self.boxes]
        base = lowered.name
        self.fnames = (self.names.fresh(f"{base}_forward"), self.names.fresh(f"{base}_backward"),
                       self.names.fresh(f"{base}_jacobian"))
        self.title = title_of(lowered, positions, weights)
        self.differentiable = differentiable
        self.weights = weights

    # ------------------------------------------------------------ the module

    def write(self):
        d = self.d
        bodies = [self._forward(), self._backward(), self._jacobian()]
        code = [line for body in bodies for line, _ in body]
        about = ["# Generated code: edits are overwritten. The forward sweep returns what the "
                 "adjoint sweep reads;",
                 "# the backward takes it with cotangents of the output; the jacobian runs the "
                 "adjoint sweep per output element",
                 "# (jacrev's fallback: it runs all rows in one batched adjoint sweep where "
                 "every operation has a",
                 "# batched rule, api/batched_rows.py; jacrev.not_batched says why not)."]
        lines = module_header(f"{self.title}, split for vjp and jacrev", about, code,
                              import_lines(self.names.modules), blanks=1)
        adjoint_from = None
        for k, body in enumerate(bodies):
            lines += [("", None)] * (2 if k else 1)
            if k == 1:    # the backward function: the adjoint sweep (the jacobian's too)
                adjoint_from = len(lines) + 1
            lines += body
        source = "\n".join(line for line, _ in lines) + "\n"
        line_map = {k: origin for k, (_, origin) in enumerate(lines, 1) if origin is not None}
        generated = SplitGenerated(source, self.fnames, d.lowered.free, d.wrt,
                                   [r is not None for r in d.returned], len(d.lowered.params),
                                   d.lowered.arg_leaves,
                                   [self.boxes.get(r, r) for r in self.residuals],
                                   set(self.boxes.values()), len(self.cotangents))
        generated.line_map, generated.adjoint_from = line_map, adjoint_from
        generated.by_shape = d.lowered.by_shape
        return generated

    def _function(self, name, params, body):
        """(line, the user's line it was generated for or None) pairs of a function from
        its body's pairs."""
        return [*((line, None) for line in wrap(f"def {name}({', '.join(params)}):")),
                *((wrapped, origin) for line, origin in body for wrapped in wrap(line))]

    def _forward_lines(self, boxes):
        """The forward sweep's lines (depth 1), boxes filled where their value is set."""
        body = [f"{name} = np.copy({name})  # updated in place below; the caller's array is kept"
                for name in self.mutated]
        body += self.decls
        body += [f"{box} = []  # {r} is set on some paths only" for r, box in boxes.items()]
        body = [(INDENT + line, None) for line in body]
        return body + render_mapped(_with_boxes(self.d.sweeps.forward, boxes), 1)

    def _output(self):
        return to_source(_atom_node(self.d.lowered.output))

    def _forward(self):
        body = self._forward_lines(self.boxes)
        residuals = [f"rt.pack_tape({r})" if r in self.packed else self.boxes.get(r, r)
                     for r in self.residuals]
        body.append((f"{INDENT}return {self._output()}, {_tuple(residuals)}", None))
        return self._function(self.fnames[0], self.args, body)

    def _takeback(self, depth, boxes, source=None, packed=()):
        """Lines making the residuals ready for one adjoint sweep: copies of those it updates
        in place, boxes opened.  ``source``: per residual, the name holding its value."""
        pad = INDENT * depth
        source = source or {}
        out = []
        for r in self.residuals:
            if r in boxes:
                box = boxes[r]
                out.append(f"{pad}if len({box}) > 0:")
                out.append(f"{pad}{INDENT}{r} = {box}[len({box}) - 1]")
                if r in self.copied:
                    out.append(f"{pad}{INDENT}{r} = {_copy(r, self.copied[r])}")
            elif r in self.copied and r not in packed:
                out.append(f"{pad}{r} = {_copy(source.get(r, r), self.copied[r])}")
            elif r in source:
                out.append(f"{pad}{r} = {source[r]}")
        return out

    def _backward(self):
        params = [self.boxes.get(r, r) for r in self.residuals] + self.cotangents
        body = []
        takeback = self._takeback(1, self.boxes, packed=self.packed)
        if takeback:
            body.append((f"{INDENT}# the forward sweep's values: copies of those updated in "
                         f"place below", None))
            body += [(line, None) for line in takeback]
        backward = self.d.sweeps.backward
        if self.packed:
            tops = {name: self.names.fresh(name + "_top") for name in self.packed}
            body.append((f"{INDENT}# the packed tapes (rt.pack_tape): read by index, last "
                         f"first", None))
            body += [(f"{INDENT}{top} = rt.tape_length({name})", None)
                     for name, top in tops.items()]
            backward = pops_as_reads(backward, tops, packed=True)
        body += render_mapped(backward, 1)
        body.append((f"{INDENT}return {_tuple(self.grads)}", None))
        return self._function(self.fnames[1], params, body)

    def _jacobian(self):
        names = self.names
        # one function: the boxes that carry a value set on some paths only across to the
        # backward are needed here only to start each adjoint sweep from it again (the
        # differentiable spelling gives such values names of their own in the adjoint sweep)
        boxes = {} if self.differentiable else self.boxes
        body = self._forward_lines(boxes)
        text = []      # lines of s2sgrad's own, for no user line
        value = names.fresh("value")
        text.append(f"{INDENT}{value} = {self._output()}")
        # what each adjoint sweep changes starts from the forward sweep's value again
        saved = {r: names.fresh(r + "_saved") for r in self.rebound if r not in boxes}
        text += [f"{INDENT}{s} = {r}" for r, s in saved.items()]
        likes, sizes = [], []
        for leaf in self.leaves:
            like = names.fresh("out")
            text.append(f"{INDENT}{like} = {to_source(_atom_node(leaf))}")
            likes.append(like)
            sizes.append(f"rt.tangent_size({like})")
        rows, row = names.fresh("rows"), names.fresh("row")
        text.append(f"{INDENT}{rows} = {' + '.join(sizes)}")
        jacs = {}
        for g, (kind, k) in zip(self.d.returned, self.d.wrt):
            if g is None:
                continue
            jacs[g] = names.fresh("jac_" + g)
            like = self.args[k] if kind == "position" else self._weight_arg(k)
            text.append(f"{INDENT}{jacs[g]} = rt.jacobian_rows({rows}, {like})")
        text.append(f"{INDENT}for {row} in range({rows}):")
        inner = INDENT * 2
        text.append(f"{inner}# the cotangent: 1 at this row's output element, 0 elsewhere")
        offset = "0"
        for like, ct in zip(likes, self.cotangents):
            at = row if offset == "0" else f"{row} - ({offset})"
            text.append(f"{inner}{ct} = rt.basis_tangent({like}, {at})")
            offset = f"rt.tangent_size({like})" if offset == "0" else \
                f"{offset} + rt.tangent_size({like})"
        text += self._takeback(2, boxes, saved)
        body += [(line, None) for line in text] + render_mapped(self.d.sweeps.backward, 2)
        body += [(f"{inner}{jacs[g]}[{row}] = {g}", None) for g in self.grads]
        body.append((f"{INDENT}return {value}, {_tuple([jacs[g] for g in self.grads])}",
                     None))
        return self._function(self.fnames[2], self.args, body)

    def vjp_module(self):
        """The ``VjpModule`` of a module with one function, in the differentiable spelling:
        ``<f>_vjp(args, cotangents)``, the forward sweep then the adjoint sweep from the
        cotangents, returning ``(gradients..., output)``.  It is linear in the cotangents,
        so its batched forward-mode Jacobian w.r.t. them (``compiler/forward/batched.py``)
        is every row of ``f``'s Jacobian in one adjoint sweep: JAX's ``vmap`` of the
        pullback over the basis cotangents, the residuals unbatched (``api/split.py``)."""
        name = self.names.fresh(f"{self.d.lowered.name}_vjp")
        backward = _adjoint_pops(_first_adds_as_writes(self.d.sweeps.backward), self.names)
        forward = self._forward_lines({})
        body = forward + render_mapped(backward, 1)
        body.append((f"{INDENT}return {_tuple(self.grads + [self._output()])}", None))
        code = self._function(name, self.args + self.cotangents, body)
        adjoint_at = len(code) - len(body) + len(forward)     # (in ``code``, from 0)
        about = ["# Generated code: edits are overwritten. The forward sweep, then the "
                 "adjoint sweep from the",
                 "# cotangents (differentiable spelling): jacrev differentiates it w.r.t. "
                 "the cotangents, all rows in one sweep."]
        lines = module_header(f"{self.title}, vjp for jacrev's batched sweep", about,
                              [line for line, _ in code], import_lines(self.names.modules),
                              blanks=1)
        lines += [("", None)]
        adjoint_from = len(lines) + adjoint_at + 1
        lines += code
        line_map = {k: origin for k, (_, origin) in enumerate(lines, 1) if origin is not None}
        return VjpModule("\n".join(line for line, _ in lines) + "\n", name, line_map,
                         adjoint_from, self.title)

    def _weight_arg(self, j):
        """The argument name of the j-th weight (its free value)."""
        return next(f.name for f in self.d.lowered.free if f.obj is self.weights[j])


def _first_adds_as_writes(items):
    """``dx = np.zeros_like(x)`` then, next, ``dx[i] += e`` -> ``dx[i] = e`` (the same
    values: ``dx[i]`` is zero), in every block: the batched sweep then writes ``e``'s
    batch into the zeros instead of copying ``dx[:, i]``, adding and writing back (ht:
    a (300, 544, 3) batch three times per bone)."""
    out, zeros = [], None
    for item in items:
        if isinstance(item, Comment):
            out.append(item)
            continue
        if isinstance(item, (gast.If, gast.For, gast.While)):
            item = copy.copy(item)
            item.body = _first_adds_as_writes(item.body)
            item.orelse = _first_adds_as_writes(item.orelse)
        elif zeros is not None and isinstance(item, gast.AugAssign) and \
                isinstance(item.op, gast.Add) and isinstance(item.target, gast.Subscript) \
                and isinstance(item.target.value, gast.Name) and item.target.value.id == zeros:
            target = copy.deepcopy(item.target)
            item = gast.Assign(targets=[target], value=item.value, type_comment=None)
        zeros = _zeros_named(item)
        out.append(item)
    return out


def _zeros_named(item):
    """The name ``item`` assigns ``np.zeros_like(...)`` to, or None."""
    if isinstance(item, gast.Assign) and len(item.targets) == 1 and \
            isinstance(item.targets[0], gast.Name) and isinstance(item.value, gast.Call):
        func = item.value.func
        if isinstance(func, gast.Attribute) and func.attr == "zeros_like" and \
                isinstance(func.value, gast.Name) and func.value.id == "np":
            return item.targets[0].id
    return None


def _adjoint_pops(backward, names):
    """The adjoint sweep with the pops of lists of its own (``drows.pop()``: the adjoint
    of a list appended to in a loop) read by index from a top set before the loop, as
    ``differentiable_sweeps`` does for the tapes: forward mode takes no pop.  Refused
    (``NotBatchable``) where such a list is assigned inside a loop or branch."""
    popped = []
    for item in backward:
        if isinstance(item, Comment):
            continue
        for node in gast.walk(item):
            name = pop_of(node)
            if name is not None and name not in popped:
                popped.append(name)
    if not popped:
        return backward
    for item in backward:
        if isinstance(item, (gast.For, gast.While, gast.If)) and set(popped) & set(
                _stored([n for s in gast.walk(item) if isinstance(s, gast.Assign)
                         for n in s.targets])):
            raise NotBatchable("a list of adjoints made inside a loop or branch")
    whole = _read_whole_after_pops(backward, popped)
    if whole:
        raise NotBatchable(f"the list {whole} read whole after items were popped from it")
    tops = {name: names.fresh(name + "_top") for name in popped}
    backward = _pops_taken_first(backward, names)
    backward = before_loops(backward, set(tops), pops_of, lambda name: assign(
        tops[name], gast.Call(func=name_node("len"), args=[name_node(name)], keywords=[])))
    return pops_as_reads(backward, tops)


def _read_whole_after_pops(backward, popped):
    """A list of ``popped`` (or a name given it: ``d_parts = drows``) read other than by
    item or pop from its first pop on, where reads by index would see the popped items
    still there (its length, the list passed whole); None when there is none."""
    watched, started = set(popped), set()
    for item in backward:
        if isinstance(item, Comment):
            continue
        started |= pops_of(item) & watched
        if not started:
            continue
        if isinstance(item, gast.Assign) and isinstance(item.value, gast.Name) and \
                item.value.id in watched and all(isinstance(t, gast.Name) for t in item.targets):
            watched |= {t.id for t in item.targets}
            started |= {t.id for t in item.targets}
            continue
        parents = {id(child): node for node in gast.walk(item)
                   for child in gast.iter_child_nodes(node)}
        for node in gast.walk(item):
            if not (isinstance(node, gast.Name) and node.id in started and
                    isinstance(node.ctx, gast.Load)):
                continue
            parent = parents.get(id(node))
            if isinstance(parent, gast.Subscript) and parent.value is node:
                continue
            if isinstance(parent, gast.Attribute) and parent.attr == "pop":
                continue
            return node.id
    return None


def _pops_taken_first(items, names):
    """``x += xs.pop()`` as ``p = xs.pop()`` then ``x += p`` (``pops_as_reads`` reads
    an assigned pop), in every block."""
    out = []
    for item in items:
        if isinstance(item, (gast.If, gast.For, gast.While)):
            item = copy.copy(item)
            item.body = _pops_taken_first(item.body, names)
            item.orelse = _pops_taken_first(item.orelse, names)
        elif isinstance(item, gast.AugAssign) and pop_of(item.value) is not None:
            popped = names.fresh("popped")
            out.append(assign(popped, item.value))
            item = copy.copy(item)
            item.value = name_node(popped)
        out.append(item)
    return out


def _tuple(names):
    return "(" + ", ".join(names) + ("," if len(names) == 1 else "") + ")"


def _copy(name, kind):
    return f"list({name})" if kind == "list" else f"np.copy({name})"


def _atom_node(atom):
    if isinstance(atom, Seq):
        return gast.Tuple(elts=[_atom_node(a) for a in atom.items], ctx=gast.Load())
    if isinstance(atom, Var):
        return name_node(atom.name)
    return atom_node(atom)


def _with_boxes(items, boxes):
    """``items`` with ``box.append(r)`` after each statement that assigns a boxed ``r``
    (at the start of a loop body whose target it is)."""
    if not boxes:
        return items
    out = []
    for item in items:
        if isinstance(item, gast.If):
            item = copy.copy(item)
            item.body = _with_boxes(item.body, boxes)
            item.orelse = _with_boxes(item.orelse, boxes)
            out.append(item)
            continue
        if isinstance(item, (gast.For, gast.While)):
            item = copy.copy(item)
            body = _with_boxes(item.body, boxes)
            if isinstance(item, gast.For):
                body = _appends(_stored([item.target]), boxes) + body
            item.body = body
            out.append(item)
            continue
        out.append(item)
        if isinstance(item, gast.Assign):
            out.extend(_appends(_stored(item.targets), boxes))
        elif isinstance(item, gast.AugAssign):
            out.extend(_appends(_stored([item.target]), boxes))
    return out


def _stored(targets):
    names = []
    for t in targets:
        if isinstance(t, gast.Name):
            names.append(t.id)
        elif isinstance(t, (gast.Tuple, gast.List)):
            names.extend(_stored(t.elts))
    return names


def _appends(names, boxes):
    return [gast.Expr(value=gast.Call(func=gast.Attribute(value=name_node(boxes[n]),
                                                          attr="append", ctx=gast.Load()),
                                      args=[name_node(n)], keywords=[]))
            for n in names if n in boxes]

