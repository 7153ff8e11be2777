"""A derivative object as a Python function, for a derivative of it (``jvp(grad(f), ...)``,
``jacfwd(jacrev(f))``).

Takes the inner derivative (a plain ``grad(f, grad_position)`` or a ``jacrev``), the
outer one being built and the arguments it is built for; gives a Python function with
source, written to the cache, that calls the inner one's generated code in the
differentiable spelling (``compiler/pipeline_higher.py``, ``compiler/pipeline_split.py``)
and shapes its results as the inner object does: what the outer derivative's lowering
reads and differentiates.  Derivative objects are told apart by their
``derivative_mode``, so this module needs none of their classes.
"""
from ..backend import cache
from ..compiler.pipeline_higher import differentiable_gradient
from ..compiler.pipeline_split import build_split
from ..errors import GradientArgumentError
from ..trees import leaf_paths
from .arguments import argument_types


_GRADIENT_SOURCE = '''"""A gradient object as a function of its arguments, for forward mode over it (generated
by s2sgrad.api.higher: jvp and jacfwd of grad(f))."""
import numpy as np


def make(value_and_grad{free}):
    def {name}({params}):
        grads = value_and_grad({leaves}{free})[1]
        return {result}

    return {name}
'''


def derivative_as_function(inner, outer, building):
    """A Python function (with source, so the lowering can read it) computing what the
    derivative ``inner`` computes, for the arguments ``building`` of ``outer``, the
    derivative of it being built (their leaves and trees, as ``Derivative._build`` has
    them): its generated code in the differentiable spelling, called and shaped as
    ``inner`` shapes its result.  Only forward mode can take it (the generated code's
    helpers have forward rules), and only of a plain gradient or of a jacrev."""
    forward = outer.derivative_mode == "forward"
    if inner.derivative_mode == "jacrev" and forward and building[0] is not None and \
            not inner.differentiates_a_derivative:
        return jacobian_as_function(inner, building)
    plain = (not inner.with_value and inner.weights is None and not inner.has_aux and
             not inner.return_ids and inner.positions and
             not inner.differentiates_a_derivative and inner.derivative_mode == "grad")
    if not forward or not plain:
        raise GradientArgumentError(
            f"{type(outer).__name__} of the gradient object {inner.__name__}: a gradient can "
            f"be differentiated again in forward mode only (jvp, jacfwd, hvp, hessian, "
            f"grad(grad(f))), and only a plain grad(f, grad_position) (no weights, has_aux, "
            f"return_ids or value); use s2sgrad.hvp(f, ...) or s2sgrad.hessian(f) for "
            f"second derivatives")
    arrays, trees = building
    if arrays is None:
        raise GradientArgumentError(
            f"the code of a derivative of the gradient {inner.__name__} is built for "
            f"arguments: call it (or show it with example arguments) first")
    fn, bound_self = inner._target()
    gradient = differentiable_gradient(fn, inner.positions, bound_self,
                                       argument_types(arrays), trees)
    d = gradient.differentiated
    free = [f"free_{k}" for k in range(len(gradient.free))]
    params = [f"a{i}" for i in range(len(d.lowered.arg_leaves))]
    leaves = [f"a{i}{path}" for i, tree in enumerate(trees or [None] * len(params))
              for path in leaf_paths(tree)]
    grads, k = {}, 0
    for (kind, leaf), has in zip(d.wrt, [r is not None for r in d.returned]):
        grads[leaf] = f"grads[{k}]" if has else f"np.zeros_like({leaves[leaf]})"
        k += has
    per_position = [_structure_text((trees or [None] * len(params))[p],
                                    [grads[leaf] for leaf in d.lowered.arg_leaves[p]])
                    for p in inner.positions]
    result = per_position[0] if len(per_position) == 1 else \
        "(" + ", ".join(per_position) + ")"
    name = f"{getattr(fn, '__name__', 'f')}_grad"
    source = _GRADIENT_SOURCE.format(
        name=name, params=", ".join(params), leaves=", ".join(leaves),
        free="".join(", " + f for f in free), result=result)
    make = cache.materialise(f"{name}_as_function", source, "make")[0]
    function = make(gradient.function, *[f.obj for f in gradient.free])
    function.__s2sgrad_by_shape__ = d.lowered.by_shape   # so is the code built over it
    return function


_JACOBIAN_SOURCE = '''"""A jacrev object as a function of its arguments, for forward mode over it (generated
by s2sgrad.api.higher: jacfwd(jacrev(f)))."""
import numpy as np

from s2sgrad import runtime as rt


def make(jacobian{free}):
    def {name}({params}):
        value, rows = jacobian({leaves}{free})
{body}
    return {name}
'''


def jacobian_as_function(inner, building):
    """What ``derivative_as_function`` gives for a ``jacrev`` object: its split module's
    jacobian function (``compiler/pipeline_split.py``, differentiable spelling), its rows shaped
    ``out.shape + in.shape`` as the jacrev object shapes them."""
    arrays, trees = building
    fn, bound_self = inner._target()
    generated = build_split(fn, inner.positions, (), inner.has_aux, bound_self,
                            argument_types(arrays), trees, differentiable=True)
    jacobian = cache.materialise(generated.forward_name, generated.source,
                                 generated.jacobian_name)[0]
    n_args = len(generated.arg_leaves)
    trees = trees or [None] * n_args
    free = [f"free_{k}" for k in range(len(generated.free))]
    params = [f"a{i}" for i in range(n_args)]
    leaves = [f"a{i}{path}" for i, tree in enumerate(trees) for path in leaf_paths(tree)]
    out = "value[0]" if inner.has_aux else "value"
    outputs = ([f"{out}[{k}]" for k in range(generated.n_cotangents)]
               if generated.output_is_tuple else [out])
    if generated.output_is_tuple and inner.has_aux:
        raise GradientArgumentError("jacfwd of a jacrev with has_aux and a tuple first "
                                    "output: differentiate a function returning one array")
    pad = " " * 8
    body = []
    starts = ["0"]
    for k, o in enumerate(outputs):
        body.append(f"{pad}out_{k} = {o}")
        starts.append(f"{starts[-1]} + rt.tangent_size(out_{k})" if k else
                      f"rt.tangent_size(out_{k})")
    rows, slot = {}, 0
    for (kind, leaf), has in zip(generated.wrt, generated.computed):
        rows[leaf] = f"rows[{slot}]" if has else None
        slot += has
    per_output = []
    for k in range(len(outputs)):
        per_position = []
        for p in inner.positions:
            items = []
            for leaf in generated.arg_leaves[p]:
                shape = f"np.shape(out_{k}) + np.shape({leaves[leaf]})"
                items.append(f"np.reshape({rows[leaf]}[{starts[k]}:{starts[k + 1]}], {shape})"
                             if rows[leaf] else f"np.zeros({shape})")
            per_position.append(_structure_text(trees[p], items))
        per_output.append(per_position[0] if isinstance(inner.grad_position, int) or
                          len(per_position) == 1 else "(" + ", ".join(per_position) + ")")
    result = per_output[0] if not generated.output_is_tuple else \
        "(" + ", ".join(per_output) + ("," if len(per_output) == 1 else "") + ")"
    body.append(f"{pad}return {result}")
    name = f"{getattr(fn, '__name__', 'f')}_jacrev"
    source = _JACOBIAN_SOURCE.format(name=name, params=", ".join(params),
                                     leaves=", ".join(leaves),
                                     free="".join(", " + f for f in free),
                                     body="\n".join(body))
    make = cache.materialise(f"{name}_as_function", source, "make")[0]
    function = make(jacobian, *[f.obj for f in generated.free])
    function.__s2sgrad_by_shape__ = generated.by_shape
    return function


def _structure_text(tree, items):
    """Source text of ``items`` in the structure ``tree`` (``s2sgrad.trees``)."""
    if tree is None:
        return items[0]
    return _unflatten_text(tree, iter(items))


def _unflatten_text(tree, items):
    if tree is None:
        return next(items)
    kind, children = tree[0], tree[1]
    if kind == "dict":
        return "{" + ", ".join(f"{k!r}: {_unflatten_text(c, items)}" for k, c in children) + "}"
    if kind == "namedtuple":
        raise GradientArgumentError("forward mode over a gradient taking a namedtuple: pass "
                                    "a tuple or a dict instead")
    inner = [_unflatten_text(c, items) for c in children]
    if kind == "list":
        return "[" + ", ".join(inner) + "]"
    return "(" + ", ".join(inner) + ("," if len(inner) == 1 else "") + ")"
