"""A derivative object as a Python function, for a derivative of it (``jvp(grad(f), ...)``,
``jacfwd(jacrev(f))``).

Takes the inner derivative (a plain ``grad(f, grad_position)`` or a ``jacrev``), the
outer one being built and the arguments it is built for; gives a Python function with
source, written to the cache, that calls the inner one's generated code in the
differentiable spelling (``compiler/pipeline_higher.py``, ``compiler/pipeline_split.py``)
and shapes its results as the inner object does: what the outer derivative's lowering
reads and differentiates.  Derivative objects are told apart by their
``derivative_mode``, so this module needs none of their classes.

``gradient_inlined`` gives the same function for a plain gradient called inside a
function being differentiated, built for the argument types the front end knows there
(``compiler/front/derivative_calls.py`` lowers it as a callee), or None where the call
keeps its rule (``api/inside.py``).
"""
import re

from .. import runtime as rt
from ..backend import cache
from ..compiler.batch.loops import structure_text
from ..compiler.front.guards import fixed_objects
from ..compiler.pipeline import build
from ..compiler.pipeline_higher import differentiable_gradient, refuse_inner_derivatives
from ..compiler.pipeline_split import build_split
from ..compiler.syntax.origins import remember
from ..errors import DerivativeCompositionError, GradientArgumentError
from ..rules import lookup
from ..trees import leaf_paths, unflatten
from .arguments import argument_types


_GRADIENT_SOURCE = '''"""A gradient object as a function of its arguments, for forward mode over it (generated
by s2sgrad.api.higher: jvp and jacfwd of grad(f))."""
import numpy as np


def make(value_and_grad{free}):
    def {name}({params}):
        value, grads = value_and_grad({leaves}{free})
        return {result}

    return {name}
'''


def derivative_as_function(inner, outer, building):
    """A Python function (with source, so the lowering can read it) computing what the
    derivative ``inner`` computes, for the arguments ``building`` of ``outer``, the
    derivative of it being built (their leaves and trees, as ``Derivative._build`` has
    them): ``inner.as_function(building)``, its generated code in the differentiable
    spelling, called and shaped as ``inner`` shapes its result.  Forward mode takes it
    (the generated code's helpers have forward rules); reverse mode over a derivative
    object is built as forward mode over it (``api/composed.py``), so ``outer`` is a
    forward-mode derivative."""
    if outer.derivative_mode != "forward":
        raise DerivativeCompositionError(
            f"{type(outer).__name__} of the derivative object {inner.__name__}: s2sgrad "
            f"differentiates a derivative object in forward mode (jvp, jacfwd); call "
            f"s2sgrad.grad, jacrev, hessian, hvp or vjp on it, which build that for you")
    if building[0] is None:
        raise GradientArgumentError(
            f"the code of a derivative of {inner.__name__} is built for arguments: call "
            f"it (or show it with example arguments) first")
    if outer.has_aux:
        _refuse_one_output(inner, outer, building)
    return inner.as_function(building)


def _refuse_one_output(inner, outer, building):
    """``has_aux`` on a transform of ``inner`` needs ``inner`` to give ``(output,
    *aux)`` at ``building``'s arguments: refused, naming the object, where it gives one
    value (the error would name the cache module of its code)."""
    args = [unflatten(tree, items) if tree is not None else items[0]
            for tree, items in _split_leaves(*building)]
    value = inner(*args)
    if not isinstance(value, tuple) or len(value) < 2:
        raise DerivativeCompositionError(
            f"has_aux=True on {type(outer).__name__} of {inner!r}, which returns one "
            f"value: has_aux takes a derivative object returning (output, *aux) (one "
            f"made with has_aux=True, or a gradient over several positions); leave out "
            f"has_aux")


def gradient_as_function(inner, fn, positions, bound_self, building):
    """What ``derivative_as_function`` gives for ``grad(fn, positions)`` or
    ``value_and_grad(fn, positions)`` (``inner``, for its name and options;
    ``bound_self``: the instance ``fn`` is bound to): its differentiable value-and-gradient
    code, the gradients shaped as ``grad`` shapes them, after the value for
    ``value_and_grad``."""
    plain = (inner is None or inner.weights is None and not inner.return_ids) and positions
    if not plain:
        raise DerivativeCompositionError(
            f"a derivative of the gradient object {inner.__name__} (it has weights or "
            f"return_ids): s2sgrad differentiates grad(f, grad_position) and "
            f"value_and_grad(f, grad_position) (has_aux too) only; take the weights "
            f"out of the function you differentiate twice, or write hessian(f) / "
            f"hvp(f, x, v)")
    has_aux = inner is not None and inner.has_aux
    arrays, trees = building
    gradient = differentiable_gradient(fn, positions, bound_self,
                                       argument_types(arrays), trees, has_aux)
    refuse_inner_derivatives(gradient.free, gradient.source, gradient.line_map,
                             "a derivative of the gradient")
    return _gradient_written(_module_of(gradient), fn, positions, trees,
                             inner is not None and inner.with_value, has_aux)


def gradient_inlined(inner, arg_types, primal=False):
    """A plain gradient object ``inner`` (``grad(f, positions)`` or
    ``value_and_grad(f, positions)``) called inside a function being differentiated,
    with arguments of ``arg_types`` (as ``argument_types`` gives them, one per argument):
    the function ``gradient_as_function`` writes, for the front end to lower as a callee
    (``compiler/front/derivative_calls.py``); None where the call keeps its custom rule
    (``api/inside.py``): a gradient with weights or ids, of a derivative, built by sizes, or
    whose code calls a helper with no reverse rule (``rules/runtime_vjp.py``; with
    ``primal``, for a function compiled by ``s2sgrad.jit``, the code is not
    differentiated again: any helper will do).  The
    function carries ``__s2sgrad_result_like__`` (the argument position of each
    gradient: one int for one) and ``__s2sgrad_with_value__`` (its result is ``(value,
    gradients)``)."""
    plain = (inner.weights is None and not inner.return_ids and inner.positions and
             not inner.differentiates_a_derivative and
             max(inner.positions) < len(arg_types))
    if not plain:
        return None
    fn, bound_self = inner._target()
    return gradient_code_inlined(fn, inner.positions, bound_self, arg_types, primal,
                                 inner.with_value, inner.has_aux)


def gradient_code_inlined(fn, positions, bound_self, arg_types, primal=False,
                          with_value=False, has_aux=False):
    """What ``gradient_inlined`` gives for ``grad(fn, positions)`` (``value_and_grad``
    with ``with_value``; ``bound_self``: the instance ``fn`` is bound to), with no
    gradient object: None where its code is built by sizes or (not ``primal``) calls a
    helper with no reverse rule.  ``has_aux``: ``(gradients, aux)`` as the object gives
    them, ``((value, *aux), gradients)`` for ``value_and_grad`` (under ``s2sgrad.jit``,
    or differentiated as they are by the outer transform: ``grad(lambda x:
    g(x)[0].sum())``, the aux's derivative its own, as JAX gives it)."""
    if primal:          # not differentiated again: the gradient's own (faster) spelling
        gradient = _fast_module(fn, positions, bound_self, arg_types, has_aux)
    else:
        gradient = _module_of(differentiable_gradient(fn, positions, bound_self,
                                                      arg_types, None, has_aux))
    if gradient.by_shape or not primal and (any(
            getattr(value.obj, "__s2sgrad_opaque__", False) for value in gradient.free) or
            not all(hasattr(rt, name) and lookup(getattr(rt, name)) is not None
                    for name in set(_HELPER.findall(gradient.source)))):
        return None
    function = _gradient_written(gradient, fn, positions, None, with_value, has_aux)
    function.__s2sgrad_has_aux__ = has_aux
    function.__s2sgrad_result_like__ = positions[0] if len(positions) == 1 else positions
    function.__s2sgrad_with_value__ = with_value
    return function


#: a call of a runtime helper in generated code
_HELPER = re.compile(r"\brt\.(\w+)\(")


class _Module:
    """What ``_gradient_written`` reads of a loaded value-and-gradient module, whichever
    pipeline wrote it: ``function`` (the leaves, then the values ``free`` read from
    outside -> ``(value, (the gradients computed,))``), ``source``, ``path``,
    ``line_map``, ``guards``, ``wrt`` / ``computed`` / ``arg_leaves`` (as ``Generated``
    has them) and ``by_shape``."""

    def __init__(self, function, source, path, line_map, free, guards, wrt, computed,
                 arg_leaves, by_shape):
        self.function, self.source, self.path, self.line_map = function, source, path, \
            line_map
        self.free, self.guards, self.wrt, self.computed = free, guards, wrt, computed
        self.arg_leaves, self.by_shape = arg_leaves, by_shape


def _module_of(gradient):
    """The ``_Module`` of a ``differentiable_gradient``."""
    d = gradient.differentiated
    remember(gradient.path, gradient.line_map, gradient.adjoint_from)
    return _Module(gradient.function, gradient.source, gradient.path, gradient.line_map,
                   gradient.free, gradient.guards, d.wrt, [r is not None for r in d.returned],
                   d.lowered.arg_leaves, d.lowered.by_shape)


def _fast_module(fn, positions, bound_self, arg_types, has_aux=False):
    """The ``_Module`` of ``fn``'s value and gradient w.r.t. ``positions`` as ``grad``
    builds it (``compiler/pipeline.py``: its tape a list of tuples, no constants table or
    kept arrays), for a function compiled by ``s2sgrad.jit`` to inline: the front end
    reads that spelling, which it cannot differentiate again."""
    generated = build(fn, positions, (), has_aux, bound_self, arg_types=arg_types)
    function, path, _ = cache.materialise(generated.function_name, generated.source,
                                          generated.function_name)
    remember(path, generated.line_map, generated.adjoint_from)
    return _Module(function, generated.source, path, generated.line_map, generated.free,
                   generated.guards, generated.wrt, generated.computed,
                   generated.arg_leaves, generated.by_shape)


def _gradient_written(gradient, fn, positions, trees, with_value=False, has_aux=False):
    """The function of ``gradient`` (a ``_Module``) that ``gradient_as_function`` gives
    (``(value, gradients)`` with ``with_value``; ``(gradients, aux)`` with ``has_aux``
    alone: the module's value is then ``(output, *aux)``)."""
    free = [f"free_{k}" for k in range(len(gradient.free))]
    params = [f"a{i}" for i in range(len(gradient.arg_leaves))]
    leaves = [f"a{i}{path}" for i, tree in enumerate(trees or [None] * len(params))
              for path in leaf_paths(tree)]
    grads, k = {}, 0
    for (kind, leaf), has in zip(gradient.wrt, gradient.computed):
        grads[leaf] = f"grads[{k}]" if has else f"np.zeros_like({leaves[leaf]})"
        k += has
    per_position = [_structure_text((trees or [None] * len(params))[p],
                                    [grads[leaf] for leaf in gradient.arg_leaves[p]])
                    for p in positions]
    result = per_position[0] if len(per_position) == 1 else \
        "(" + ", ".join(per_position) + ")"
    if with_value:
        result = f"value, {result}"
    elif has_aux:
        result = f"{result}, value[1:]"
    name = f"{_identifier(fn)}_{'value_and_grad' if with_value else 'grad'}"
    source = _GRADIENT_SOURCE.format(
        name=name, params=", ".join(params), leaves=", ".join(leaves),
        free="".join(", " + f for f in free), result=result)
    make = cache.materialise(f"{name}_as_function", source, "make")[0]
    return _with_origins(made(make, gradient.function, gradient, gradient.by_shape), fn,
                         gradient.path, gradient.line_map)


_FORWARD_SOURCE = '''"""A jacfwd object as a function of its arguments, for a derivative of it (generated
by s2sgrad.api.nested: transforms of jacfwd, hessian and grad of a derivative)."""
import numpy as np

from s2sgrad import runtime as rt


def make(jacobian{free}):
    def {name}({params}):
        value, columns = jacobian({leaves}{free})
{body}
    return {name}
'''


def forward_as_function(forward, building, summed=False, with_value=False, aux="jacfwd"):
    """What ``derivative_as_function`` gives for a forward-mode Jacobian object
    ``forward`` (a ``ForwardFunction`` with ``jacobian``): its generated code, called as
    a plain function, the columns stacked into blocks of shape ``out.shape + in.shape``
    as ``jacfwd`` shapes them; with ``summed`` each block summed over the output's
    elements and the outputs (what ``grad`` of a derivative object gives), after the
    function's value with ``with_value`` (``value_and_grad``).  With ``forward.has_aux``
    the blocks are the first output's, and the other outputs follow undifferentiated as
    the object gives them: ``aux="jacfwd"`` the second output, or the tuple of the others
    when there are more (``jacfwd``'s aux), ``"tuple"`` their tuple (``grad``'s)."""
    arrays, trees = building
    forward._building = building
    fn, bound_self = forward._target()
    generated = forward.build_code(fn, bound_self, argument_types(arrays), trees)
    refuse_inner_derivatives(generated.free, generated.source, generated.line_map,
                             "a derivative of the Jacobian")
    jacobian, path, _ = cache.materialise(generated.function_name, generated.source,
                                          generated.function_name)
    trees, params, leaves = _parameters(len(generated.arg_leaves), trees)
    pad = " " * 8
    body = [f"{pad}sizes = [{', '.join(f'rt.tangent_size({leaves[k]})' for k in generated.wrt)}]"]
    starts, stop = [], "0"
    for i, k in enumerate(generated.wrt):
        starts.append((stop, f"{stop} + sizes[{i}]" if stop != "0" else f"sizes[{i}]"))
        stop = starts[-1][1]
    start_of = dict(zip(generated.wrt, starts))
    outputs, others = _output_count(forward, building)
    _refuse_nested(forward, outputs is not None and not summed)
    first = "value[0]" if forward.has_aux else "value"
    per_output = []
    for o in range(outputs or 1):
        column = "column" if outputs is None else f"column[{o}]"
        out = first if outputs is None else f"{first}[{o}]"
        body.append(f"{pad}stacked_{o} = np.stack([{column} for column in columns], axis=-1)")
        per_position = []
        for p in forward.positions:
            items = []
            for leaf in generated.arg_leaves[p]:
                a, b = start_of[leaf]
                # one input: every column; else its columns, made contiguous to reshape
                part = f"stacked_{o}" if len(generated.wrt) == 1 else \
                    f"np.ascontiguousarray(stacked_{o}[..., {a}:{b}])"
                block = f"np.reshape({part}, np.shape({out}) + np.shape({leaves[leaf]}))"
                if summed:
                    block = (f"np.sum(np.reshape({part}, (-1,) + np.shape({leaves[leaf]})), "
                             f"axis=0)")
                items.append(block)
            per_position.append(items)
        per_output.append(per_position)
    if summed:          # the sum over the outputs too
        per_output = [[[" + ".join(out[p][j] for out in per_output)
                        for j in range(len(per_output[0][p]))]
                       for p in range(len(forward.positions))]]
    texts = []
    for per_position in per_output:
        shaped = [_structure_text(trees[p], items)
                  for p, items in zip(forward.positions, per_position)]
        texts.append(shaped[0] if isinstance(forward.grad_position, int) or len(shaped) == 1
                     else "(" + ", ".join(shaped) + ")")
    result = texts[0] if outputs is None or summed else \
        "(" + ", ".join(texts) + ("," if len(texts) == 1 else "") + ")"
    if with_value:
        result = f"value, {result}"
    elif forward.has_aux:
        result += ", value[1]" if aux == "jacfwd" and others == 1 else ", value[1:]"
    body.append(f"{pad}return {result}")
    name = f"{_identifier(fn)}_{'grad' if summed else 'jacfwd'}"
    return _with_origins(_written(_FORWARD_SOURCE, name, params, leaves, body, jacobian,
                                  generated), fn, path, generated.line_map)


def _refuse_nested(inner, several_outputs):
    """A derivative of ``inner`` whose result nests tuples (several outputs, several
    positions: a tuple of tuples) is refused: forward mode takes flat results."""
    if several_outputs and not isinstance(inner.grad_position, int) and \
            len(inner.positions) > 1:
        raise DerivativeCompositionError(
            f"a derivative of {inner.__name__}, whose result is a tuple of tuples (several "
            f"outputs, several positions {inner.grad_position!r}): take one position at a "
            f"time (hessian(f, 0), jacfwd(f, 1)...) and differentiate each")


def _output_count(forward, building):
    """(None when ``forward``'s function returns one array or number, else how many
    outputs its tuple has; how many aux outputs follow, with ``has_aux``), read from one
    run of the function at ``building``'s arguments."""
    arrays, trees = building
    args = [unflatten(tree, items) if tree is not None else items[0]
            for tree, items in _split_leaves(arrays, trees)]
    value = forward.call_function(args)
    others = None
    if forward.has_aux:
        if not isinstance(value, tuple) or len(value) < 2:
            raise DerivativeCompositionError(
                f"a derivative of {forward.__name__}, a jacfwd with has_aux of a function "
                f"returning one value: leave out has_aux")
        value, others = value[0], len(value) - 1
    return _count(forward, value), others


def _count(forward, value):
    if isinstance(value, (tuple, list)):
        if any(isinstance(v, (tuple, list, dict)) for v in value):
            raise DerivativeCompositionError(
                f"a derivative of {forward.__name__}, whose function returns nested "
                f"structures: return a flat tuple of arrays")
        return len(value)
    if isinstance(value, dict):
        raise DerivativeCompositionError(
            f"a derivative of {forward.__name__}, whose function returns a dict: return "
            f"a tuple of arrays")
    return None


def _split_leaves(arrays, trees):
    """Per argument (its tree, its leaves) from the flat ``arrays``."""
    trees = trees or [None] * len(arrays)
    out, i = [], 0
    for tree in trees:
        n = len(leaf_paths(tree))
        out.append((tree, list(arrays[i:i + n])))
        i += n
    return out


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
    refuse_inner_derivatives(generated.free, generated.source,
                             getattr(generated, "line_map", {}), "a derivative of the Jacobian")
    jacobian = cache.materialise(generated.forward_name, generated.source,
                                 generated.jacobian_name)[0]
    trees, params, leaves = _parameters(len(generated.arg_leaves), trees)
    out = "value[0]" if inner.has_aux else "value"
    outputs = ([f"{out}[{k}]" for k in range(generated.n_cotangents)]
               if generated.output_is_tuple else [out])
    _refuse_nested(inner, generated.output_is_tuple)
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
    if inner.has_aux:   # the aux after the Jacobian, as the object gives it
        result += f", {_aux_of_value(inner, building)}"
    body.append(f"{pad}return {result}")
    name = f"{_identifier(fn)}_jacrev"
    return _written(_JACOBIAN_SOURCE, name, params, leaves, body, jacobian, generated)


def _aux_of_value(inner, building):
    """The aux a ``has_aux`` Jacobian object gives, as an expression of its code's value
    ``(output, *aux)``: the second item, or the tuple of the others when there are more
    (their number read from one run of the function at ``building``'s arguments)."""
    args = [unflatten(tree, items) if tree is not None else items[0]
            for tree, items in _split_leaves(*building)]
    return "value[1]" if len(inner.call_function(args)) == 2 else "value[1:]"


def _identifier(fn):
    """``fn``'s name as a Python identifier (``<lambda>`` gives ``lambda``)."""
    name = re.sub(r"\W", "", getattr(fn, "__name__", "f") or "f")
    return name if name.isidentifier() else "f"


def _parameters(n_args, trees):
    """(the trees, one per argument; the parameters ``a0, a1...``; the text of each leaf
    of them, ``a0[1]['w']``) of a function of ``n_args`` arguments."""
    trees = trees or [None] * n_args
    params = [f"a{i}" for i in range(n_args)]
    leaves = [f"a{i}{path}" for i, tree in enumerate(trees) for path in leaf_paths(tree)]
    return trees, params, leaves


def _with_origins(function, target, path, line_map):
    """``function`` (a derivative as a plain function, calling the generated code at
    ``path``) knowing, for an error raised while differentiating it, the user's line of
    each generated line (``line_map``, and those ``target``, the function the code was
    generated from, knows): ``at_user_line`` reads them."""
    function.__s2sgrad_origins__ = {**getattr(target, "__s2sgrad_origins__", {}),
                                    path: line_map}
    return function


def at_user_line(exc, function):
    """``exc`` (a UserCodeError raised while differentiating ``function``, a derivative as a
    plain function) at the user's line its generated line came from, followed through
    the generated modules of every level; unchanged when it names none of them."""
    origins = getattr(function, "__s2sgrad_origins__", {})
    where, seen = exc.location, 0
    while where is not None and where.filename in origins and seen < 16:
        line_map = origins[where.filename]
        found = [line_map[k] for k in range(where.lineno, 0, -1) if k in line_map]
        if not found:
            break
        where, seen = found[0], seen + 1
    if where is exc.location:
        return exc
    return type(exc)(exc.what + " (in the code generated for a derivative of this line: "
                     "take one derivative fewer of it, or write that derivative out)",
                     where, exc.construct, exc.hint)


def _written(template, name, params, leaves, body, code, generated):
    """The function ``name`` of ``template`` (a module whose ``make(code, *free)`` gives
    it), written to the cache and made with the generated ``code`` and the values
    ``generated.free`` it reads from outside, carrying ``generated``'s guards
    (``made``)."""
    names = [f"free_{k}" for k in range(len(generated.free))]
    source = template.format(name=name, params=", ".join(params), leaves=", ".join(leaves),
                             free="".join(", " + f for f in names), body="\n".join(body))
    make = cache.materialise(f"{name}_as_function", source, "make")[0]
    return made(make, code, generated, getattr(generated, "by_shape", False))


def _structure_text(tree, items):
    """Source text of ``items`` in the structure ``tree`` (``s2sgrad.trees``)."""
    try:
        return structure_text(tree, iter(items))
    except TypeError:
        raise GradientArgumentError("forward mode over a gradient taking a namedtuple: pass "
                                    "a tuple or a dict instead") from None


def made(make, function, generated, by_shape):
    """``make(function, *free values)``: the derivative as a function, its free values
    fixed (those of this build); it carries the guards of ``generated``
    (``__s2sgrad_guards__``, arrays as fixed objects) for the derivative built over it
    to check: what the inner code read from outside is checked by the outer one; and
    ``__s2sgrad_by_shape__``, true when the inner code holds only for the argument sizes
    it was built for (``front/recursion.py``), as the code built over it does."""
    fn = make(function, *[f.obj for f in generated.free])
    fn.__s2sgrad_guards__ = fixed_objects(generated.guards)
    fn.__s2sgrad_by_shape__ = by_shape      # so is the code built over it
    return fn
