"""The primal pipeline: a function -> the source of the same function, compiled (``s2sgrad.jit``).

``build_primal(fn, bound_self, arg_types, arg_trees)`` runs the front end as every
transform does (parsing, lowering to SSA with callees inlined: the user's own functions,
and the plain ``grad`` / ``value_and_grad`` objects it calls, whose generated code is
lowered as a callee, so the module makes no Python-level call of them), then the
forward sweep alone (nothing is differentiated: no tape, no adjoint), dead-code
removal, the inlining of single-use temporaries and the spelling passes, and writes
the module: one function taking the leaves of the arguments, then the values read
from outside, returning what ``fn`` returns, each line under a comment naming the
user's line.  Gives a ``Generated`` (``pipeline.py``) with no gradients (``wrt`` empty).

Unlike a gradient, the function updates an argument it writes into in place, as the
Python function does (a gradient copies it first: its adjoint needs the old values).
"""
import os

from .emit.layout import INDENT, module_header, render_mapped, wrap
from .front.literals import atom_node
from .front.lower import lower_function
from .ir import atom_vars
from .optimize.spelling import rolls_as_runtime, sums_as_runtime
from .optimize.substitute import fused_forward
from .pipeline import Differentiated, Generated, inline_sweeps, rank_of
from .reverse.transform import reverse
from .syntax.imports import import_lines
from .syntax.nodes import name_uses
from .syntax.source import to_source


def build_primal(fn, bound_self=None, arg_types=None, arg_trees=None):
    """The compiled form of ``fn`` (module doc); ``bound_self``, ``arg_types`` and
    ``arg_trees`` as ``pipeline.build`` takes them."""
    lowerer, lowered = lower_function(fn, bound_self, arg_types, arg_trees, primal=True)
    names = lowerer.state.names
    d = Differentiated(lowered, reverse(lowered, [], [], names), [], [], names)
    inline_sweeps(d)
    forward = d.sweeps.forward
    reads = name_uses(forward)[0]
    for name in atom_vars(lowered.output):
        reads[name] = reads.get(name, 0) + 1
    arrays = {name for name, rank in lowered.ndims.items() if rank and rank >= 1}
    forward = rolls_as_runtime(sums_as_runtime(
        fused_forward(forward, reads, arrays, names.modules.values()),
        lambda name: rank_of(lowered, name)))
    fname = names.fresh(f"{lowered.name}_jit")
    where = f"{os.path.basename(lowered.origin.filename)}:{lowered.origin.lineno}"
    lines = emit_primal(lowered, forward, fname, f"{lowered.name} ({where}) compiled",
                        import_lines(names.modules))
    source = "\n".join(line for line, _ in lines) + "\n"
    line_map = {k: origin for k, (_, origin) in enumerate(lines, 1) if origin is not None}
    generated = Generated(source, fname, lowered.free, [], [], len(lowered.params),
                          lowered.arg_leaves, line_map)
    generated.guards = lowered.guards
    generated.by_shape = lowered.by_shape
    return generated


def emit_primal(lowered, forward, fname, title, imports=()):
    """The module as (line, the user's SourceLocation it was generated for or None) pairs:
    the header, then ``def fname(leaves..., free values...)`` running the statements
    ``forward`` and returning ``lowered``'s output."""
    args = lowered.params + [f.name for f in lowered.free]
    body = render_mapped(forward, 1)
    body.append((f"{INDENT}return {to_source(atom_node(lowered.output))}", lowered.origin))
    code = [line for line, _ in body]
    lines = module_header(title, ["# Generated code: edits are overwritten. The function as "
                                  "written, its calls inlined."], code, imports)
    lines += [(line, None) for line in wrap(f"def {fname}({', '.join(args)}):")]
    for line, origin in body:
        lines.extend((wrapped, origin) for wrapped in wrap(line))
    return lines
