"""The whole differentiator: a function -> the source of its value-and-gradient function.

``build(fn, positions, weights, has_aux, bound_self)`` runs the passes in
order (frontend+lowering, activity, reverse, dead-code removal, emission) and
gives a ``Generated``: the module source text and what the caller needs to
run it (the order of its arguments, which gradients it returns).
"""
import gast

from ..errors import OutputStructureError
from .emit import location_comment, to_source
from .ir import Seq, Var, atom_vars
from .lower import Lowerer
from .reverse import reverse

INDENT = "    "


class Generated:
    """A generated value-and-gradient function, before it is loaded.

    ``source``: the module text; ``function_name``; ``free``: the FreeValues
    passed after the user's arguments; ``wrt``: what each gradient is for, as
    ('position', i) or ('weight', j); ``computed``: for each wrt, whether the
    generated code returns its gradient (otherwise it is zeros).
    """

    def __init__(self, source, function_name, free, wrt, computed, n_params):
        self.source = source
        self.function_name = function_name
        self.free = free
        self.wrt = wrt
        self.computed = computed
        self.n_params = n_params


def build(fn, positions, weights, has_aux, bound_self=None, title=None, arg_types=None):
    """Differentiate ``fn`` w.r.t. argument ``positions`` and the Parameters ``weights``.

    ``arg_types`` (optional): per positional argument, (dtype, ndim) or None;
    the code is then specialised on them (``x.dtype``/``x.ndim`` fold).
    """
    lowerer = Lowerer(arg_types)
    lowered = lowerer.lower(fn, bound_self)
    params = lowered.params
    wrt_vars, wrt = [], []
    for i in positions:
        wrt_vars.append(params[i])
        wrt.append(("position", i))
    for j, w in enumerate(weights):
        free = lowerer.free.get(id(w))
        wrt_vars.append(free.name if free is not None and getattr(w, "requires_grad", True)
                        else None)
        wrt.append(("weight", j))
    lowered.free = list(lowerer.free.values())
    seeds = _seed_names(lowered, has_aux)
    names = lowerer.names
    rev = reverse(lowered, [v for v in wrt_vars if v is not None], seeds, names)
    grad_of = dict(zip([v for v in wrt_vars if v is not None], rev.grads))
    returned = [grad_of.get(v) if v is not None else None for v in wrt_vars]
    fname = names.fresh(f"{lowered.name}_value_and_grad")
    source = _emit(lowered, rev, returned, fname, title or _title(lowered, positions, weights))
    return Generated(source, fname, lowered.free, wrt, [r is not None for r in returned],
                     len(params))


def _seed_names(lowered, has_aux):
    out = lowered.output
    if has_aux:
        if not isinstance(out, Seq) or len(out.items) < 2:
            raise OutputStructureError(
                "has_aux=True needs a function that returns a tuple (loss, aux...), "
                f"but {lowered.name} returns a single value", lowered.origin, None,
                "return (loss, aux) or call grad with has_aux=False")
        return atom_vars(out.items[0])
    return atom_vars(out)


def _title(lowered, positions, weights):
    parts = [lowered.params[i] for i in positions] + [
        f"weight {getattr(w, 'name', '?')}" for w in weights]
    import os as _os
    where = f"{_os.path.basename(lowered.origin.filename)}:{lowered.origin.lineno}"
    return f"value and gradient of {lowered.name} ({where}) w.r.t. {', '.join(parts) or 'nothing'}"


def _emit(lowered, rev, returned, fname, title):
    backward = [s for b in rev.blocks for s in b.statements]
    needed = set(atom_vars(lowered.output))
    for stmt in backward:
        needed.update(n.id for n in gast.walk(stmt) if isinstance(n, gast.Name))
    kept = []
    for op in reversed(lowered.body):
        if any(t in needed for t in op.targets):
            kept.append(op)
            needed.update(op.operand_vars())
            if op.expr is not None:
                needed.update(n.id for n in gast.walk(op.expr) if isinstance(n, gast.Name))
    kept.reverse()
    emitted = [op for op in kept if op.expr is not None]  # link Ops of custom rules emit nothing

    lines = [f"# s2sgrad: {title}",
             "# Generated code: edits are overwritten. Forward sweep, then adjoints in reverse.",
             "import math", "", "import numpy as np", "", "from s2sgrad import runtime as rt",
             "", ""]
    args = lowered.params + [f.name for f in lowered.free]
    lines.append(f"def {fname}({', '.join(args)}):")
    body = []
    last_origin = None
    for op in emitted:
        if op.origin != last_origin:
            body.append(location_comment(op.origin))
            last_origin = op.origin
        target = op.targets[0] if len(op.targets) == 1 else ", ".join(op.targets)
        body.append(f"{target} = {to_source(op.expr)}")
    from .reverse import _atom_node
    from .literals import literal_node
    value_src = to_source(_atom_node(lowered.output, literal_node)) if not isinstance(
        lowered.output, Var) else lowered.output.name
    if rev.blocks:
        body.append("")
    for block in rev.blocks:
        if block.origin is None:
            body.append("# sensitivity of the output")
        else:
            body.append("# grad of: " + location_comment(block.origin)[2:])
        body.extend(to_source(s) for s in block.statements)
    grads = [g for g in returned if g is not None]
    grads_src = "(" + ", ".join(grads) + ("," if len(grads) == 1 else "") + ")"
    body.append(f"return {value_src}, {grads_src}")
    lines.extend(INDENT + line if line else "" for line in body)
    return "\n".join(lines) + "\n"

