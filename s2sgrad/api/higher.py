"""Second derivatives, as forward mode over the generated reverse-mode code.

- ``hvp(fn, inputs, v)``: the Hessian of scalar ``fn`` at ``inputs`` times ``v`` (the
  gradient's directional derivative along ``v``), by one run of the build
  ``jvp(grad(fn), inputs, v)`` runs (``hvp_forward``: forward mode, w.r.t. the inputs
  whose tangent is not exactly zero, over the gradient as a function,
  ``HvpFunction.as_function``): no tangent of the value, kept arrays.
- ``hessian(fn, grad_position=0)``: the Hessian function (jacfwd of the gradient, as in
  JAX); shape ``in.shape + in.shape``, a tuple of tuples ``H[i][j]`` for several
  positions.  Its code sweeps every basis direction of the inputs at once (the batched
  forward mode of the gradient's code, run as numpy) where ``jacfwd`` would
  (``forward.BatchedChoice``: every operation of the gradient has a batched rule, and
  the code is loop-free or loops over an argument of ``LOOP_BATCH_NUMBERS`` numbers),
  else loops over them, one pass per direction (compiled by Numba where the gradient
  loops; ``fallback_reason`` says why it is not batched).
- ``grad(grad(f))``: the gradient of a gradient object (``grad`` and ``value_and_grad``
  hand it here): the gradient of the sum of the inner gradient's elements, which by the
  symmetry of second derivatives is the inner gradient's directional derivative along
  ones (``H @ 1``) -- forward over reverse again.
- ``hessian`` and ``hvp`` of a derivative object are ``api.composed``'s (forward mode
  over it); a Hessian object's rule inside a differentiated function is
  ``api.inside``'s, and ``as_function`` gives it as a plain function (the Jacobian of
  the gradient's code) for a derivative of it.

``fn`` must return a scalar (the Hessian of a loss); the arguments are checked as for
``grad``.  ``HvpFunction`` is the derivative object of the forward-over-reverse code
of the value-and-gradient function (``compiler/pipeline_higher.py``; what a gradient of a
gradient and a gradient's rule inside a differentiated function run),
``HessianFunction`` what ``hessian`` gives, ``GradOfGradFunction`` what ``grad`` gives
for a gradient object.  A derivative of a
gradient in forward mode (``jvp(grad(f), ...)``) is ``api.nested``'s.
"""
import inspect

import numpy as np

from ..backend.numba_backend import backend_mode
from ..compiler.pipeline_higher import build_hvp
from ..errors import DerivativeCompositionError, GradientArgumentError, GradientTypeError
from ..tensor import Tensor
from ..trees import flatten, is_tree, leaf_paths, unflatten
from .arguments import (check_function, check_has_aux, check_positions, free_values, to_array,
                        zero_tangent)
from .call_plan import CallPlan, plan_key
from .composed import hessian_of_derivative, hvp_of_derivative
from .derivative import Derivative, derivative_for
from .evaluated import hvp_inside
from .forward import (BatchedChoice, ForwardFunction, batched_tangents, derivative_rule,
                      jacobian_backend, numba_ready)
from .loading import load_function
from .nested import forward_as_function, gradient_as_function


def hvp(fn, inputs, v):
    """``H v``: the Hessian of scalar ``fn`` at ``inputs`` times ``v`` (module doc).

    ``inputs`` is one value (an array, a Tensor, a float) or a tuple of them; ``v`` has
    the same structure and shapes.  Gives ``H v`` in that structure (every input is
    differentiated: the Hessian is over all of them together)."""
    fn = check_function(fn, "hvp")
    single = not isinstance(inputs, (tuple, list))
    args = (inputs,) if single else tuple(inputs)
    vs = (v,) if single else (tuple(v) if isinstance(v, (tuple, list)) else None)
    if vs is None or len(vs) != len(args):
        raise GradientArgumentError(
            f"hvp's v must have the structure of inputs: {len(args)} values in a tuple, "
            f"got {type(v).__name__}")
    if not args:
        raise GradientArgumentError("hvp needs at least one input to differentiate at")
    if getattr(fn, "derivative_mode", None) is not None:
        out = hvp_of_derivative(fn, args, vs)
        return out[0] if single and isinstance(out, tuple) else out
    # forward mode over the gradient as ``jvp(grad(fn), inputs, v)`` runs it: the same
    # build (no tangent of the value, kept arrays), an input whose tangent is exactly
    # zero left out of the forward pass (decided at every call)
    moving = tuple(p for p in range(len(args)) if not zero_tangent(args[p], vs[p]))
    out = hvp_forward(fn, len(args), moving or (0,)).jvp_call(args, vs)[1]
    out = [_like_input(t, a) for t, a in zip((out,) if len(args) == 1 else out, args)]
    return out[0] if single else tuple(out)


def hvp_forward(fn, count, moving):
    """The ``ForwardFunction`` ``hvp`` runs for ``fn``, ``count`` inputs and the
    positions ``moving`` of the nonzero tangents: forward mode w.r.t. ``moving`` over
    the gradient of ``fn`` w.r.t. every input (``HvpFunction.as_function``), kept on
    ``fn`` as ``hvp_function`` is (a fresh lambda per call starts with the builds of
    the last one with its code and closure contents)."""
    return derivative_for(fn, ("hvp", count, moving), lambda: ForwardFunction(
        HvpFunction(fn, tuple(range(count))), moving, False, False))


def _like_input(tangent, arg):
    """``tangent`` (the gradient's tangent for ``arg``, in its structure) in the kind and
    floating dtype of ``arg``'s leaves, as ``grad`` gives a gradient."""
    if not is_tree(arg):
        return _finish(tangent, arg)
    leaves, tree = flatten(arg)
    return unflatten(tree, [_finish(t, a) for t, a in zip(flatten(tangent)[0], leaves)])


def hvp_function(fn, count):
    """The HvpFunction ``hvp`` runs for ``fn`` and ``count`` inputs, kept while ``fn``
    lives (so repeated ``hvp`` calls build once)."""
    return derivative_for(fn, ("hvp", count),
                          lambda: HvpFunction(fn, tuple(range(count))))


def hessian(fn=None, grad_position=0, has_aux=False):
    """The Hessian function of scalar ``fn`` w.r.t. the arguments at ``grad_position``
    (module doc).  A decorator too.  With ``has_aux`` ``fn`` returns ``(output, *aux)``
    and the function gives ``(Hessian, aux)``, aux as ``jacfwd`` gives it (the second
    output, or the tuple of the others), never differentiated: ``jacfwd(jacfwd(fn,
    has_aux=True), has_aux=True)``, forward over forward (a pass per pair of
    directions)."""
    if fn is None:
        return lambda f: hessian(f, grad_position, has_aux)
    fn = check_function(fn, "hessian")
    if grad_position is None:
        raise TypeError("hessian's grad_position must be an int or a tuple of ints, got None")
    check_positions(grad_position)
    check_has_aux(has_aux)
    if getattr(fn, "derivative_mode", None) is not None or has_aux:
        return hessian_of_derivative(fn, grad_position, has_aux)
    return HessianFunction(fn, grad_position)


class HvpFunction(Derivative):
    """Forward over reverse of ``fn`` w.r.t. ``grad_position`` (``compiler/pipeline_higher.py``),
    built per argument signature like a gradient (``tangents_of_gradient``); as a
    function (``as_function``), the gradient ``hvp``'s forward mode differentiates."""

    derivative_mode = "hvp"
    #: whether the code loops over the basis directions (a Hessian) or takes one tangent
    jacobian = False

    #: whether the Hessian's tangents carry every direction at once (``HessianFunction``)
    batched = False

    def __init__(self, fn, grad_position):
        super().__init__(fn, grad_position)

    def __call__(self, *args, **kwargs):
        raise TypeError("call s2sgrad.hvp(fn, inputs, v) for a Hessian-vector product")

    def as_function(self, building):
        """The gradient of ``fn`` w.r.t. the positions as a plain function (as
        ``grad(fn, positions)`` gives it, ``api/nested.py``): what ``hvp`` runs forward
        mode over (``jvp``); a Hessian's is ``HessianFunction``'s."""
        target, bound_self = self._target()
        gradient = gradient_as_function(None, target, self.positions, bound_self, building)
        # the code returns no value and its gradient is that of the sum of the outputs:
        # the output is checked by a run of fn, once per build (per argument types)
        arrays, trees = building
        args, k = [], 0
        for tree in trees:
            n = len(leaf_paths(tree))
            args.append(unflatten(tree, list(arrays[k:k + n])) if tree is not None
                        else arrays[k])
            k += n
        _check_scalar(self.call_function(args), self.name)
        return gradient

    def build_code(self, fn, bound_self, arg_types, trees):
        return build_hvp(fn, self.positions, bound_self, arg_types=arg_types,
                         arg_trees=trees, jacobian=self.jacobian, batched=self.batched)

    def load_code(self, generated):
        """The module's function, taking the values both the gradient and its forward
        mode read from outside (``generated.all_free``); a Hessian's as numpy where
        ``jacfwd``'s would be (``forward.jacobian_backend``)."""
        free = list(generated.free) + list(generated.jvp.free)
        generated.all_free = free
        compiled, path = load_function(generated.function_name, generated.source,
                                       generated.function_name, free)
        return (jacobian_backend(compiled, generated) if self.jacobian else compiled), path

    def _run_code(self, args, extra):
        """Check and flatten ``args``, build, run the code with ``extra(leaves)`` appended:
        (generated, leaves, trees, result).  Arguments of the types of an earlier call
        reuse what it found (its ``CallPlan``, for code reading nothing from outside)."""
        key = plan_key(args) if self._plans else None
        plan = self._plans.get(key) if key is not None else None
        if plan is not None:
            arrays = [to_array(a) for a in args] if plan.tensor_args else args
            result = self._run_plan(plan, arrays, extra(plan.generated, arrays))
            if result is not None:
                return plan.generated, args, [None] * len(args), result
        generated, arrays, leaves, trees = self._prepare(args, {})
        objects = free_values(generated, generated.all_free)
        call = [*arrays, *objects, *extra(generated, arrays)]
        result = self._run(generated, call)
        if not generated.all_free:      # (a plan reads ``generated.free`` alone)
            self._remember_plan(plan_key(args), CallPlan, args, leaves, call)
        return generated, leaves, trees, result

    def _wrt_leaves(self, generated):
        return [k for p in self.positions for k in generated.arg_leaves[p]]

    def tangents_of_gradient(self, args, vs):
        """The gradient's tangent along ``vs`` (one per position, in its argument's
        structure; None: zeros), per position in the argument's structure."""
        def tangents(generated, arrays):
            out = []
            for p, v in zip(self.positions, vs):
                idx = generated.arg_leaves[p]
                if v is None:
                    out += [_zeros_like(arrays[k]) for k in idx]
                    continue
                items = flatten(v)[0] if is_tree(v) else [v]
                if len(items) != len(idx):
                    raise GradientArgumentError(
                        f"the tangent for argument {p} has {len(items)} values, the "
                        f"argument {len(idx)}: give it the argument's structure")
                out += [_tangent_like(item, arrays[k], p) for item, k in zip(items, idx)]
            return out

        generated, leaves, trees, result = self._run_code(args, tangents)
        (value, _), (_, grads_dot) = result
        _check_scalar(value, self.name)
        by_leaf = dict(zip(self._wrt_leaves(generated), _per_wrt(generated, grads_dot)))
        return [unflatten(trees[p], [_finish(by_leaf[k], leaves[k])
                                     for k in generated.arg_leaves[p]])
                for p in self.positions]


class HessianFunction(HvpFunction):
    """The Hessian function ``hessian`` gives: call it like the original.  It runs its
    ``batched_twin`` (the same Hessian, ``batched``: every direction in one sweep; one
    per backend policy) where its ``BatchedChoice`` lets it (module doc), else its own
    code, one pass per direction; ``source``, ``backend`` and ``fallback_reason`` are
    the last call's (``ran_batched``: whether the twin ran it)."""

    derivative_mode = "hessian"
    name_suffix = "_hess"
    jacobian = True

    def __init__(self, fn, grad_position, batched=False):
        self.batched = batched
        super().__init__(fn, grad_position)
        self.choice = None if batched else BatchedChoice()
        self._twins = {}        # per backend policy (S2SGRAD_BACKEND, read at each call)
        self.ran_batched = False

    @property
    def batched_twin(self):
        """The batched Hessian this one runs under the current backend policy."""
        mode = backend_mode()
        if mode not in self._twins:
            self._twins[mode] = HessianFunction(self.fn, self.grad_position, True)
        return self._twins[mode]

    def __repr__(self):
        return (f"<s2sgrad hessian of {self.name} (grad_position="
                f"{self.grad_position!r}), backend {self.backend!r}>")

    def bind_to(self, method, weights):
        return HessianFunction(method, self.grad_position, self.batched)

    @staticmethod
    def hvp_of_tangents(fn, primals, tangents, positions):
        """``hvp_of_tangents`` (H v along a batch of tangents): what vmap of a Hessian
        runs (``api/vmap_rows.py``), reached from the object."""
        return hvp_of_tangents(fn, primals, tangents, positions)

    def rule_inside(self):
        return derivative_rule(self)

    def as_function(self, building):
        """The Hessian as a plain function: the Jacobian (forward mode) of the gradient's
        differentiable code (``api/nested.py``); refused for several positions (a tuple of
        tuples)."""
        if not isinstance(self.grad_position, int) and len(self.positions) > 1:
            raise DerivativeCompositionError(
                f"a derivative of {self.__name__}, a Hessian over positions "
                f"{self.grad_position!r} (a tuple of tuples): take the Hessian of one "
                f"position at a time (hessian(f, 0)) and differentiate it")
        return forward_as_function(_jacobian_of_gradient(self.fn, self.grad_position,
                                                         self.positions, building), building)

    @property
    def source(self):
        return self.batched_twin.source if self.ran_batched else super().source

    @property
    def backend(self):
        return self.batched_twin.backend if self.ran_batched else super().backend

    @property
    def fallback_reason(self):
        if self.ran_batched:
            return self.batched_twin.fallback_reason
        return (self.choice.reason() if self.choice is not None else None) or \
            super().fallback_reason

    def __call__(self, *args, **kwargs):
        if self.choice is not None:
            self.ran_batched, result = self.choice.run(self.batched_twin, args, kwargs)
            if self.ran_batched:
                return result
        if kwargs:
            args = self._complete(args, kwargs)
        generated, leaves, trees, (value_and_grads, columns) = self._run_code(
            args, lambda generated, arrays: [])
        _check_scalar(value_and_grads[0], self.name)
        wrt = self._wrt_leaves(generated)
        sizes = [int(np.size(leaves[k])) for k in wrt]
        starts = np.cumsum([0] + sizes)
        rows = _gradient_tangents(generated, columns, [np.shape(leaves[k]) for k in wrt],
                                  int(starts[-1]))
        blocks = {}
        for i, ki in enumerate(wrt):
            for j, kj in enumerate(wrt):
                shape_i, shape_j = np.shape(leaves[ki]), np.shape(leaves[kj])
                block = np.moveaxis(rows[i][starts[j]:starts[j + 1]], 0, -1)
                blocks[ki, kj] = _finish(block.reshape(shape_i + shape_j), leaves[ki],
                                         leaves[kj])
        rows = [[unflatten(trees[p], [unflatten(trees[q], [blocks[ki, kj] for kj in
                                                          generated.arg_leaves[q]])
                                      for ki in generated.arg_leaves[p]])
                 for q in self.positions] for p in self.positions]
        if isinstance(self.grad_position, int) or len(self.positions) == 1:
            return rows[0][0]
        return tuple(tuple(row) for row in rows)


def _gradient_tangents(generated, columns, shapes, total):
    """Per differentiated leaf ``i`` (of shape ``shapes[i]``), its gradient's tangents
    along every basis direction, stacked: shape ``(total,) + shapes[i]``.  ``columns``:
    the code's tangents of (value, grads), one per direction, or with a batched sweep
    (``generated.batched``) one per block of directions, the directions first."""
    if not generated.batched:
        per = [_per_wrt(generated, column[1]) for column in columns]
        return [np.stack([np.broadcast_to(np.asarray(c[i], dtype=float), shape)
                          for c in per], axis=0) if per else np.zeros((0,) + shape)
                for i, shape in enumerate(shapes)]
    parts, done = [[] for _ in shapes], 0
    for block in columns:
        grads = _per_wrt(generated, block[1])
        # the block's width: the leading axis of a batched tangent (all zeros: the rest)
        widths = [np.shape(g)[0] for g, shape in zip(grads, shapes)
                  if np.ndim(g) == len(shape) + 1]
        width = widths[0] if widths else total - done
        for i, (g, shape) in enumerate(zip(grads, shapes)):
            parts[i].append(np.broadcast_to(np.asarray(g, dtype=float), (width,) + shape))
        done += width
    return [np.concatenate(p, axis=0) if p else np.zeros((0,) + shape)
            for p, shape in zip(parts, shapes)]


def _jacobian_of_gradient(fn, grad_position, positions, building, inner=None):
    """The forward-mode Jacobian object, w.r.t. ``grad_position``, of the gradient of
    ``fn`` w.r.t. ``positions`` as a plain function for ``building``'s arguments."""
    target, bound_self = (fn.__func__, fn.__self__) if inspect.ismethod(fn) else (fn, None)
    gradient = gradient_as_function(inner, target, positions, bound_self, building)
    return ForwardFunction(gradient, grad_position, False, True)


def _per_wrt(generated, grads_dot):
    """The gradient tangents per differentiated leaf (zeros where the code returns no
    gradient: ``generated.computed``)."""
    grads_dot = list(grads_dot)
    return [grads_dot.pop(0) if has else 0.0 for has in generated.computed]


def _zeros_like(array):
    return np.zeros_like(array) if isinstance(array, np.ndarray) else 0.0


def _tangent_like(v, like, position):
    v = np.asarray(v) if isinstance(v, Tensor) else v
    if np.shape(v) != np.shape(like):
        raise GradientArgumentError(
            f"the tangent for argument {position} has shape {np.shape(v)}, the argument "
            f"{np.shape(like)}: give v the inputs' shapes")
    if isinstance(like, np.ndarray):     # (one Numba type for every tangent of an input)
        return numba_ready(np.asarray(v), like.dtype if like.dtype.kind == "f" else
                           np.dtype(float))
    return float(v)


def _check_scalar(value, name):
    if np.ndim(value) != 0:
        raise GradientTypeError(
            f"hvp, hessian and gradients of gradients take a function with a scalar "
            f"output, but {name} returns shape {np.shape(value)}; reduce it (np.sum) or "
            f"use jacrev/jacfwd")


def _finish(value, like, other=None):
    """``value`` in the kind and floating dtype of ``like`` (a Tensor for a Tensor)."""
    base = np.asarray(like) if isinstance(like, Tensor) else like
    out = np.asarray(value, dtype=float)
    if np.shape(out) == () and other is None and np.shape(base) != ():
        out = np.zeros(np.shape(base))
    if isinstance(base, np.ndarray) and base.dtype.kind == "f":
        out = out.astype(base.dtype)
    if out.ndim == 0:
        out = out[()]
        if isinstance(base, np.floating):
            out = base.dtype.type(out)
    return Tensor(np.asarray(out)) if isinstance(like, Tensor) else out


# ---------------------------------------------------------------- gradients of gradients


class GradOfGradFunction:
    """``grad(grad(f), q)`` (``value_and_grad`` too): the gradient of the sum of the inner
    gradient's elements w.r.t. the arguments at ``q`` (module doc)."""

    #: a derivative object: the front end never reads the function it wraps
    derivative_mode = "grad_of_grad"

    def __init__(self, inner, grad_position, with_value):
        self.inner = inner
        self.positions = check_positions(grad_position)
        self.grad_position = grad_position
        self.with_value = with_value
        both = tuple(sorted(set(inner.positions) | set(self.positions)))
        self._function = HvpFunction(inner.fn, both)
        self.__name__ = inner.__name__ + "_grad"
        self.__wrapped__ = inner

    def _signature_target(self):
        return self.inner._signature_target()

    @property
    def __s2sgrad_custom_vjp__(self):
        return derivative_rule(self)

    def as_function(self, building):
        """The gradient of the inner gradient's sum as a plain function: the Jacobian of
        the inner gradient's code, summed over its outputs (``api/nested.py``), after the
        inner gradient itself for ``value_and_grad``."""
        forward = _jacobian_of_gradient(self.inner.fn, self.grad_position,
                                        self.inner.positions, building, self.inner)
        return forward_as_function(forward, building, summed=True,
                                   with_value=self.with_value)

    def __call__(self, *args):
        for p in self.positions:
            if p >= len(args):
                raise GradientArgumentError(
                    f"grad_position {p} is out of range: {self.__name__[:-5]} was called "
                    f"with {len(args)} arguments")
        f = self._function
        ones = [_ones_tree(args[p]) if p in self.inner.positions else None
                for p in f.positions]
        tangents = f.tangents_of_gradient(args, ones)
        by_position = dict(zip(f.positions, tangents))
        grads = [by_position[q] for q in self.positions]
        result = grads[0] if isinstance(self.grad_position, int) or len(grads) == 1 \
            else tuple(grads)
        return (self.inner(*args), result) if self.with_value else result


def _ones_tree(value):
    items, tree = flatten(value) if is_tree(value) else ([value], None)
    ones = [np.ones_like(np.asarray(i), dtype=float) if np.ndim(i) else 1.0 for i in items]
    return unflatten(tree, ones) if tree is not None else ones[0]


def grad_of_gradient(inner, grad_position, weights, has_aux, return_ids, with_value):
    """What ``grad``/``value_and_grad`` give for a gradient object ``inner``."""
    if getattr(inner, "derivative_mode", None) != "grad" or inner.differentiates_a_derivative:
        raise DerivativeCompositionError(
            f"the gradient of {inner.name if hasattr(inner, 'name') else inner!r} "
            f"({type(inner).__name__}) is not supported: s2sgrad takes the gradient of a "
            f"plain gradient (grad(grad(f))) only; write the derivative you want directly "
            f"(hessian(f), jacfwd(jacrev(f)), hvp(f, x, v))")
    plain = (not inner.with_value and inner.weights is None and not inner.has_aux and
             not inner.return_ids and inner.positions)
    if not plain or weights is not None or has_aux or return_ids or grad_position is None:
        raise GradientArgumentError(
            "the gradient of a gradient takes a plain inner gradient (grad(f, "
            "grad_position)) and positions only (no weights, has_aux or return_ids); "
            "write the second derivative as hvp(f, x, v) or hessian(f)")
    return GradOfGradFunction(inner, grad_position, with_value)


#: what the front end does with a call written inside a differentiated function
#: (``compiler/front/lower_calls.made_inside``): a maker of a derivative object, or refused
def hvp_of_tangents(fn, primals, tangents, positions=None):
    """``H v`` of scalar ``fn`` at ``primals`` (arrays and numbers) for a batch of ``v``
    (per primal an array ``(n,) + its shape``), batch first: one batched forward sweep
    over ``fn``'s gradient code (``ForwardFunction.jvps_call``), what ``vmap`` of a
    function returning ``hvp(f, (x,), (v,))`` with only ``v`` mapped runs
    (``api/vmap_jvp.py``).  None (the loop) for a derivative object, or where the code
    has an operation without a batched rule (kept per argument signature).
    ``positions``: the primals differentiated, a tangent each (default: all; a
    Hessian's columns for vmap, ``api/vmap_rows.py``)."""
    if getattr(fn, "derivative_mode", None) is not None:
        return None
    every = positions is None
    positions = tuple(range(len(primals))) if every else tuple(positions)
    what = ("hvp batched", len(primals)) if every else ("hvp batched", len(primals), positions)
    forward = derivative_for(fn, what, lambda: ForwardFunction(
        HvpFunction(fn, positions), positions, False, False, True))
    return batched_tangents(forward, primals, tangents)


hessian.__s2sgrad_transform__ = "makes"
hvp.__s2sgrad_transform__ = "evaluates"
hvp.__s2sgrad_vmap_tangents__ = hvp_of_tangents
hvp.__s2sgrad_returns_tangent__ = True      # hvp(f, x, v) is the tangent itself
hvp.__s2sgrad_evaluate_inside__ = hvp_inside      # its code, inlined there
