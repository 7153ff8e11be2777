"""Reverse mode: ``grad``, ``value_and_grad``, ``custom_vjp`` and ``GradFunction``.

``grad(fn, grad_position=0, weights=None, has_aux=False, return_ids=False)``
checks its arguments as the reference does (see docs/mindspore-semantics.md),
and returns a ``GradFunction``; ``memory_limit=`` (keyword only, ``api/memory.py``) bounds
what a loop's tape keeps (``compiler/reverse/checkpoint.py``).  On its first call the function's source is
differentiated (``s2sgrad.compiler.pipeline``), the result is written to the
cache directory and imported, and Numba compiles it where it can (``Derivative``
does that for every mode).  The object then picks the return structure: one
gradient, a tuple, weights' gradients, ``(id, grad)`` pairs, ``(value, grads)``,
``(grads, aux)``.  The gradient of a derivative object (``grad(grad(f))``) is
``api.higher``'s.
"""
from ..backend import cache
from ..backend.numba_backend import backend_mode
from ..compiler.front.custom import custom_vjp  # noqa: F401  (public)
from ..compiler.pipeline import build
from ..errors import DerivativeCompositionError
from ..tensor import Parameter, Tensor
from .arguments import check_function, check_options, free_values, to_array
from .call_plan import GradientPlan, plan_key
from .composed import reverse_of_derivative
from .derivative import Derivative, derivative_for
from .forward import derivative_rule, forward_function
from .higher import HvpFunction, grad_of_gradient
from .inside import gradient_rule
from .memory import memory_limit_bytes
from .nested import gradient_as_function, gradient_inlined
from .results import finish_gradient, float_dtype, wrap_output


def grad(fn=None, grad_position=0, weights=None, has_aux=False, return_ids=False, *,
         memory_limit=None):
    """The gradient function of ``fn`` (a function, a method or a Cell) w.r.t. positions
    and weights.

    Also a decorator: ``@grad`` bare, or ``@grad(grad_position=1, ...)`` with options
    (called without a function it gives the decorator).  On a method the gradient
    binds like a function: ``obj.method(x)`` differentiates w.r.t. the method's own
    arguments with ``self`` bound; ``weights`` may then be a function of the instance
    (``weights=nn.Cell.trainable_params``), read each time the method is looked up.

    ``memory_limit`` (bytes, or a string such as ``"2GB"``): a loop whose tape would keep
    more is differentiated with binomial checkpointing (the README's "Long loops under a
    memory budget").
    """
    if fn is None:
        return _decorator(grad, grad_position, weights, has_aux, return_ids, memory_limit)
    fn = check_function(fn, "grad")
    limit = _limit_for(fn, memory_limit)
    if limit is not None:
        return GradFunction(fn, grad_position, weights, has_aux, return_ids, False, limit)
    if _plain_gradient(fn) and not has_aux:
        return grad_of_gradient(fn, grad_position, weights, has_aux, return_ids, False)
    if getattr(fn, "derivative_mode", None) is not None:
        return reverse_of_derivative(fn, grad_position, weights, has_aux, return_ids, False)
    return _kept(fn, grad_position, weights, has_aux, return_ids, False)


def value_and_grad(fn=None, grad_position=0, weights=None, has_aux=False, return_ids=False,
                   *, memory_limit=None):
    """Like ``grad``, but the function returns ``(value, grads)``; a decorator too."""
    if fn is None:
        return _decorator(value_and_grad, grad_position, weights, has_aux, return_ids,
                          memory_limit)
    fn = check_function(fn, "value_and_grad")
    limit = _limit_for(fn, memory_limit)
    if limit is not None:
        return GradFunction(fn, grad_position, weights, has_aux, return_ids, True, limit)
    if _plain_gradient(fn) and not has_aux:
        return grad_of_gradient(fn, grad_position, weights, has_aux, return_ids, True)
    if getattr(fn, "derivative_mode", None) is not None:
        return reverse_of_derivative(fn, grad_position, weights, has_aux, return_ids, True)
    return _kept(fn, grad_position, weights, has_aux, return_ids, True)


def _kept(fn, grad_position, weights, has_aux, return_ids, with_value):
    """The ``GradFunction`` of ``fn`` and these options: one per function and options
    and backend setting and cache folder while ``fn`` lives (``derivative_for``), so
    ``grad(f)(x)`` written in a loop builds once; with weights, or options that are not
    hashable, a new one."""
    def make():
        return GradFunction(fn, grad_position, weights, has_aux, return_ids, with_value)
    key = ("grad", with_value, grad_position, has_aux, return_ids, backend_mode(),
           cache.cache_dir())
    try:
        hash(key)
    except TypeError:
        return make()
    return make() if weights is not None else derivative_for(fn, key, make)


def _plain_gradient(fn):
    """Whether ``fn`` is a plain gradient object of a function (its gradient is forward
    over reverse of that function: ``api.higher``); a value_and_grad object, or one with
    has_aux (or differentiated with has_aux), is differentiated as any other derivative
    object (``api.composed``)."""
    return isinstance(fn, GradFunction) and not fn.differentiates_a_derivative and \
        not fn.with_value and not fn.has_aux


def _limit_for(fn, memory_limit):
    """``memory_limit`` in bytes (None: none); refused for a derivative object, whose
    loops are its generated code's."""
    limit = memory_limit_bytes(memory_limit)
    if limit is not None and getattr(fn, "derivative_mode", None) is not None:
        raise DerivativeCompositionError(
            f"memory_limit applies to the loops of a function; {fn!r} is a derivative, "
            "whose gradient s2sgrad builds without a tape to bound: leave out memory_limit, "
            "or give it to the innermost grad")
    return limit


def _decorator(make, grad_position, weights, has_aux, return_ids, memory_limit=None):
    """``@grad(...)`` / ``@value_and_grad(...)``: the options checked now, the function
    given later."""
    check_options(grad_position, weights, has_aux, return_ids)
    memory_limit_bytes(memory_limit)

    def decorate(fn):
        return make(fn, grad_position, weights, has_aux, return_ids,
                    memory_limit=memory_limit)
    decorate.__name__ = f"{make.__name__}_decorator"
    return decorate


class GradFunction(Derivative):
    """What ``grad`` and ``value_and_grad`` give: call it like the original.

    The code is the value-and-gradient module (``compiler/pipeline.py``); a call gives
    the gradients in the reference's structure (``return_ids``, ``with_value``,
    ``has_aux``, weights).  Binds as a method, and called inside a function being
    differentiated its rule is the Hessian times the cotangent (``api.higher``).
    """

    derivative_mode = "grad"
    name_suffix = "_grad"
    by_size_class = True        # large arguments: arrays kept between calls

    #: bytes a loop's tape may keep (``grad(..., memory_limit=...)``); None: no bound
    memory_limit = None

    def __init__(self, fn, grad_position, weights, has_aux, return_ids, with_value,
                 memory_limit=None):
        check_options(grad_position, weights, has_aux, return_ids)
        super().__init__(fn, grad_position, weights, has_aux)
        self.return_ids = return_ids
        self.with_value = with_value
        self.memory_limit = memory_limit_bytes(memory_limit)

    def __repr__(self):
        what = "value_and_grad" if self.with_value else "grad"
        wrt = [f"grad_position={self.grad_position!r}"] if self.positions is not None else []
        if self._weights_of is not None:
            wrt.append(f"weights={getattr(self._weights_of, '__qualname__', '?')}")
        elif self.weights is not None:
            wrt.append(f"weights=[{', '.join(w.name for w in self._weight_list())}]")
        if self.has_aux:
            wrt.append("has_aux=True")
        if self.memory_limit is not None:
            wrt.append(f"memory_limit={self.memory_limit}")
        return (f"<s2sgrad {what} of {self.name} ({', '.join(wrt)}), backend "
                f"{self.backend!r}>")

    # ------------------------------------------------------------ hooks

    def build_code(self, fn, bound_self, arg_types, trees):
        return build(fn, self.positions or (), self._weight_list(), self.has_aux, bound_self,
                     arg_types=arg_types, arg_trees=trees, memory_limit=self.memory_limit,
                     hoist=backend_mode() != "numba", kept=self.kept_arrays(arg_types))

    def bind_to(self, method, weights):
        return GradFunction(method, self.grad_position, weights, self.has_aux,
                            self.return_ids, self.with_value, self.memory_limit)

    def rule_inside(self):
        """A plain gradient's rule is a Hessian-vector product; a value_and_grad's is the
        Jacobian of its code (value and gradient) by forward mode."""
        self._refuse_under_limit("called inside a function being differentiated")
        rule = gradient_rule(self, lambda floats: HvpFunction(self.fn, floats),
                             lambda floats: forward_function(self, floats, False, False))
        if rule is None and self.weights is None and not self.has_aux and \
                not self.return_ids and self.positions:
            return derivative_rule(self)
        return rule

    def as_function(self, building):
        self._refuse_under_limit("differentiated again (jvp, jacfwd, vmap of it...)")
        fn, bound_self = self._target()
        return gradient_as_function(self, fn, self.positions, bound_self, building)

    def _refuse_under_limit(self, how):
        """A gradient under memory_limit is not a function s2sgrad differentiates again:
        its checkpointing is decided at run time, outside the code a transform reads."""
        if self.memory_limit is not None:
            raise DerivativeCompositionError(
                f"{self!r} is {how}, but a gradient under memory_limit runs its loop through "
                "the checkpointing driver (rt.checkpoint_*), which s2sgrad does not "
                "differentiate: use a gradient without memory_limit there (the derivative "
                "of a gradient keeps its tape whole)")

    def __s2sgrad_inline_call__(self, arg_types, primal=False):
        """This gradient's code for a call inside a function being differentiated (or,
        ``primal``, compiled by ``s2sgrad.jit``), or None (``api/nested.py``'s
        ``gradient_inlined``)."""
        if self.memory_limit is not None:
            return None     # its rule refuses it, saying why
        return gradient_inlined(self, arg_types, primal)

    def flat_result_count(self):
        """How many arrays a call returns when they are one array (1) or a flat tuple
        (k); None when the result nests or depends on Parameters (weights, has_aux,
        return_ids, a value with several gradients): what a vmap of this object needs to
        be differentiated (``api/vmap.py``)."""
        if self.weights is not None or self.has_aux or self.return_ids or \
                self.positions is None:
            return None
        grads = len(self.positions)      # one position: one array, not a tuple of one
        if self.with_value:
            return 2 if grads == 1 else None
        return grads

    def compiled_picks(self, generated, compiled):
        """(the ``Compiled`` of ``generated``, per leaf of this object's result its pick of
        the code's result ``{r}``, what the code returns) for a compiled loop calling the
        code (``api/compiled_call.py``); a str saying why the result is not a pick."""
        if self.weights is not None or self.has_aux or self.return_ids:
            return "its results are shaped in Python (weights, has_aux or return_ids)"
        slots, index = {}, 0
        for (kind, i), has in zip(generated.wrt, generated.computed):
            if has and kind == "position":
                slots[i] = index
            index += has
        picks = ["{r}[0]"] if self.with_value else []
        for p in self.positions:
            leaves = generated.arg_leaves[p]
            if len(leaves) != 1 or leaves[0] not in slots:
                return (f"the gradient for argument {p} is not one array the code returns "
                        f"(a container, or zeros)")
            picks.append(f"{{r}}[1][{slots[leaves[0]]}]")
        return compiled, picks, "(value, (the gradients it computes,))"

    # ------------------------------------------------------------ calling

    def __call__(self, *args, **kwargs):
        hot = self._hot
        if hot is not None and not kwargs:
            result = hot.hot_call(self, args)      # the last plan, its key not rebuilt
            if result is not None:
                return result
        if self._plans and not kwargs:
            plan = self._plans.get(plan_key(args))
            if plan is not None:
                result = self._call_planned(plan, args)
                if result is not None:
                    self._hot = plan if plan.hot_call is not None else None
                    return result
        generated, arrays, leaves, trees = self._prepare(args, kwargs)
        inputs = [*arrays, *free_values(generated)]
        value, computed = self._run(generated, inputs)
        key = None if kwargs else plan_key(args)
        plain = self.weights is None and not self.has_aux and not self.return_ids
        self._remember_plan(key, GradientPlan, args, leaves, inputs, self._weight_list(),
                            key, self.with_value if plain else None)
        return self._finish(generated, value, computed, leaves, trees)

    def _call_planned(self, plan, args):
        """A call whose arguments have the types an earlier call's had (a ``GradientPlan``):
        the checks that call passed hold again, so the arrays are only taken out of
        Tensors, the code run and the results put in the form of the arguments; None when
        the code must be built again (``_run_plan``)."""
        result = self._run_plan(plan, [to_array(a) for a in args] if plan.tensor_args
                                else args)
        if result is None:
            return None
        value, computed = result
        grads = []
        for i, slot in plan.positions:
            grads.append(finish_gradient(None if slot is None else computed[slot], args[i]))
        for i, slot in plan.weights:
            grads.append(finish_gradient(None if slot is None else computed[slot],
                                         plan.weight_list[i]))
        if plan.tensor_args or plan.tensor_free:
            tensors = [a for a in args if isinstance(a, Tensor)] + [
                f.obj for f in plan.free if isinstance(f.obj, Tensor)]
            value = wrap_output(value, float_dtype(tensors))
        return self._structure(grads, value, plan.weight_list)

    def _finish(self, generated, value, computed, leaves, trees):
        """The gradients in the structure and types of their arguments, with the value."""
        inputs, weight_grads = self.shaped_gradients(generated, computed, leaves, trees)
        grads = inputs + weight_grads
        weights = self._weight_list()
        tensors = [a for a in leaves if isinstance(a, Tensor)] + [
            f.obj for f in generated.free if isinstance(f.obj, Tensor)]
        value = wrap_output(value, float_dtype(tensors) if tensors else None)
        return self._structure(grads, value, weights)

    def _structure(self, grads, value, weights):
        """The reference's return structure of ``grads`` (positions', then weights') and
        the function's ``value``."""
        positions = self.positions or ()
        pos_grads, weight_grads = grads[:len(positions)], grads[len(positions):]
        if self.return_ids:
            pos_grads = [(p, g) for p, g in zip(positions, pos_grads)]
            weight_grads = [(w.name, g) for w, g in zip(weights, weight_grads)]
        inputs = pos_grads[0] if len(pos_grads) == 1 else tuple(pos_grads)
        if self.weights is None:
            result = inputs
        elif isinstance(self.weights, Parameter) and self.positions is None:
            result = weight_grads[0]
        elif self.positions is None:
            result = tuple(weight_grads)
        else:
            result = (inputs, tuple(weight_grads))
        if self.has_aux:
            aux = tuple(value[1:])
            return (value, result) if self.with_value else (result, aux)
        return (value, result) if self.with_value else result


#: what the front end does with a call written inside a differentiated function
#: (``compiler/front/lower_calls.made_inside``): a maker of a derivative object, or refused
grad.__s2sgrad_transform__ = "makes"
value_and_grad.__s2sgrad_transform__ = "makes"
