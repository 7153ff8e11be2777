"""The public entry points: grad, value_and_grad, show, and the gradient function object.

``grad(fn, grad_position=0, weights=None, has_aux=False, return_ids=False)``
checks its arguments as the reference does (see docs/mindspore-semantics.md),
and returns a ``GradFunction``.  On its first call the function's source is
differentiated (``s2sgrad.compiler.pipeline``), the result is written to the
cache directory and imported, and Numba compiles it where it can.  The
object then picks the return structure: one gradient, a tuple, weights'
gradients, ``(id, grad)`` pairs, ``(value, grads)``, ``(grads, aux)``.
"""
import inspect
import os
import traceback
import types
import weakref

import numpy as np

from ..backend import cache
from ..backend.numba_backend import Compiled, undecided_state
from ..compiler.analysis.shapes import unit_dimensions
from ..compiler.front.custom import custom_vjp  # noqa: F401  (public)
from ..compiler.pipeline import build
from ..errors import GradientArgumentError, GradientTypeError
from ..nn import Cell
from ..tensor import Parameter, Tensor
from ..trees import flatten, is_tree, leaf_paths, unflatten
from .call_plan import GradientPlan, free_units_changed, plan_key


#: what ``s2sgrad/api/higher.py`` adds: ``grad_of_gradient`` (``grad(grad(f))``) and
#: ``gradient_rule`` (the rule of a gradient object called inside a differentiated function)
HIGHER_ORDER = {}


def grad(fn=None, grad_position=0, weights=None, has_aux=False, return_ids=False):
    """The gradient function of ``fn`` (a function, a method or a Cell) w.r.t. positions
    and weights.

    Also a decorator: ``@grad`` bare, or ``@grad(grad_position=1, ...)`` with options
    (called without a function it gives the decorator).  On a method the gradient
    binds like a function: ``obj.method(x)`` differentiates w.r.t. the method's own
    arguments with ``self`` bound; ``weights`` may then be a function of the instance
    (``weights=nn.Cell.trainable_params``), read each time the method is looked up.
    """
    if fn is None:
        return _decorator(grad, grad_position, weights, has_aux, return_ids)
    _check_function(fn, "grad")
    if isinstance(fn, GradFunction) and "grad_of_gradient" in HIGHER_ORDER:
        return HIGHER_ORDER["grad_of_gradient"](fn, grad_position, weights, has_aux,
                                                return_ids, False)
    return GradFunction(fn, grad_position, weights, has_aux, return_ids, with_value=False)


def value_and_grad(fn=None, grad_position=0, weights=None, has_aux=False, return_ids=False):
    """Like ``grad``, but the function returns ``(value, grads)``; a decorator too."""
    if fn is None:
        return _decorator(value_and_grad, grad_position, weights, has_aux, return_ids)
    _check_function(fn, "value_and_grad")
    if isinstance(fn, GradFunction) and "grad_of_gradient" in HIGHER_ORDER:
        return HIGHER_ORDER["grad_of_gradient"](fn, grad_position, weights, has_aux,
                                                return_ids, True)
    return GradFunction(fn, grad_position, weights, has_aux, return_ids, with_value=True)


def _decorator(make, grad_position, weights, has_aux, return_ids):
    """``@grad(...)`` / ``@value_and_grad(...)``: the options checked now, the function
    given later."""
    GradFunction._check_options(grad_position, weights, has_aux, return_ids)

    def decorate(fn):
        return make(fn, grad_position, weights, has_aux, return_ids)
    decorate.__name__ = f"{make.__name__}_decorator"
    return decorate


def _check_function(fn, api):
    """``fn`` must be callable; an int or tuple there is a grad_position passed as the
    function (``@grad(1)``)."""
    if callable(fn):
        return
    if isinstance(fn, (int, tuple)) and not isinstance(fn, bool):
        raise TypeError(
            f"{api}'s first argument is the function to differentiate, got {fn!r}; as a "
            f"decorator with options, name them: @{api}(grad_position={fn!r})")
    raise TypeError(f"{api} differentiates a function, a method or a Cell, got "
                    f"{_a(type(fn).__name__)}: {fn!r}")


def show(fn, *example_args, grad_position=0, weights=None, has_aux=False, mode="grad",
         **example_kwargs):
    """Print the generated value-and-gradient source of ``fn`` and return it.

    With example arguments (``show(loss, x, y)``), the code built for arguments like
    them: exactly the module a call with such arguments runs.  Without, the generic
    build (not specialised on the arguments' dtypes, ranks and options), which the
    printed header says.  ``fn`` may be a function, a method, a Cell or a gradient
    object (``grad(...)``/``value_and_grad(...)``: its options are used, and
    ``grad_position``/``weights``/``has_aux`` must be left out).  Prints a one-line
    header, then the source; returns the source alone.

    ``mode="jvp"`` shows the forward-mode code ``s2sgrad.jvp`` runs (tangents of every
    argument), ``mode="jacfwd"`` the code of ``s2sgrad.jacfwd(fn, grad_position)``.
    """
    if mode != "grad":
        if mode not in SHOW_MODES:
            raise ValueError(f"show's mode is one of {', '.join(['grad', *SHOW_MODES])}, "
                             f"got {mode!r}")
        return SHOW_MODES[mode](fn, example_args, example_kwargs, grad_position, has_aux, mode)
    if isinstance(fn, GradFunction):
        if (grad_position, weights, has_aux) != (0, None, False):
            raise TypeError("show(gradient_object, ...) uses the gradient object's own "
                            "grad_position, weights and has_aux; leave them out")
        g = fn
    else:
        _check_function(fn, "show")
        g = GradFunction(fn, grad_position, weights, has_aux, False, True)
    if example_args or example_kwargs:
        # the gradient object's last call stays what its source and path report
        kept = (g._last, g._generated, g._compiled, g.path)
        generated = g._prepare(example_args, example_kwargs)[0]
        path = g.path
        if kept[0] is not None:
            g._last, g._generated, g._compiled, g.path = kept
        source = generated.source
        header = (f"# s2sgrad.show: the code that runs for arguments like "
                  f"({_describe_args(example_args, example_kwargs)}); module {path}")
    else:
        generated, options = g._build_generic()
        source = generated.source
        defaults = (", options at their defaults: " + ", ".join(
            f"{k}={v!r}" for k, v in options.items())) if options else ""
        header = ("# s2sgrad.show: generic build, not specialised on the arguments' dtypes "
                  f"and ranks{defaults} (a call builds code for its own arguments); pass "
                  "example arguments (show(fn, x, ...); on the command line --arg) to see "
                  "the code that runs for them")
    print(header)
    print(source)
    return source


#: show's other modes: name -> show function (``api.forward`` adds "jvp" and "jacfwd")
SHOW_MODES = {}


def every_position(fn, example_args, example_kwargs):
    """grad_position naming every argument of ``fn`` (of the example call, else of its
    signature): what ``jvp``, ``vjp`` and ``hvp`` differentiate, for ``show``."""
    probe = GradFunction(fn, 0, None, False, False, False)
    count = len(example_args) + len(example_kwargs) if (example_args or example_kwargs) \
        else len(probe._complete((), {}, bind=False) or ()) or \
        len(probe._signature.parameters if probe._signature else ())
    return tuple(range(max(count, 1)))


def print_built(f, mode, example_args, example_kwargs):
    """Print the ``mode`` code the derivative object ``f`` runs for the example arguments
    (or its generic build without them) under a header saying which; returns the source."""
    if example_args or example_kwargs:
        generated = f._prepare(example_args, example_kwargs)[0]
        header = (f"# s2sgrad.show: the {mode} code that runs for arguments like "
                  f"({_describe_args(example_args, example_kwargs)}); module {f.path}")
    else:
        generated = f._build_generic()[0]
        header = (f"# s2sgrad.show: generic {mode} build, not specialised on the arguments' "
                  "dtypes and ranks; pass example arguments to see the code that runs for them")
    print(header)
    print(generated.source)
    return generated.source


def _describe_args(args, kwargs):
    """``float32[5], float32[3], y=float32`` for a header line."""
    def one(a):
        if isinstance(a, (Tensor, np.ndarray)):
            arr = np.asarray(a)
            return f"{arr.dtype}[{', '.join(str(n) for n in arr.shape)}]"
        if is_tree(a):
            return type(a).__name__ + "(...)"
        return type(a).__name__ if not _is_option(a) else repr(a)
    return ", ".join([one(a) for a in args] + [f"{k}={one(v)}" for k, v in kwargs.items()])


def _check_positions(grad_position):
    if grad_position is None:
        return None
    if isinstance(grad_position, bool) or not isinstance(grad_position, (int, tuple)):
        raise TypeError(f"grad_position must be an int or a tuple of ints, got "
                        f"{type(grad_position).__name__}: {grad_position!r}")
    positions = (grad_position,) if isinstance(grad_position, int) else grad_position
    for p in positions:
        if not isinstance(p, int):
            raise TypeError(f"every element of grad_position must be an int, got "
                            f"{type(p).__name__}: {p!r}")
        if p < 0:
            raise ValueError(f"grad_position must be non-negative, got {p}")
    if len(set(positions)) != len(positions):
        raise ValueError(f"grad_position must not repeat a position, got {grad_position!r}")
    return positions


def _check_weights(weights):
    if weights is None:
        return None
    if isinstance(weights, Parameter):
        return weights
    if isinstance(weights, (list, tuple)):
        for w in weights:
            if not isinstance(w, Parameter):
                raise TypeError(f"weights must hold Parameters, got {_a(type(w).__name__)} "
                                f"({w!r}); wrap the value as Parameter(Tensor(...), name=...)")
        return tuple(weights)
    raise TypeError(f"weights must be a Parameter, a list or a tuple of Parameters, got "
                    f"{type(weights).__name__}")


class GradFunction:
    """A differentiated function: call it like the original.

    ``source`` is the generated Python text, ``path`` the file it lives in,
    ``backend`` 'numba' or 'python' and ``fallback_reason`` why not Numba.
    """

    def __init__(self, fn, grad_position, weights, has_aux, return_ids, with_value):
        self._check_options(grad_position, weights, has_aux, return_ids)
        self.fn = fn
        self.grad_position = grad_position
        self.positions = _check_positions(grad_position)
        # weights given as a function of the instance: read when the method is bound
        self._weights_of = weights if _is_weights_function(weights) else None
        self.weights = None if self._weights_of is not None else _check_weights(weights)
        self.has_aux = has_aux
        self.return_ids = return_ids
        self.with_value = with_value
        self._generated = None
        self._compiled = None
        self._variants = {}   # argument signature -> (Generated, Compiled, path)
        self._plans = {}      # plan_key of a call's arguments -> CallPlan
        self._last = None     # the signature of the last call
        self._signature = None  # the differentiated function's signature (its own params)
        self._bound = {}      # id(instance) -> (weights' ids, bound GradFunction)
        self.path = None
        self.__name__ = getattr(fn, "__name__", type(fn).__name__) + "_grad"
        self.__qualname__ = getattr(fn, "__qualname__", self.__name__[:-5]) + "_grad"
        self.__doc__ = f"Gradient of {self.__name__[:-5]} generated by s2sgrad."
        self.__wrapped__ = fn
        self.__module__ = getattr(fn, "__module__", None) or __name__

    @property
    def __s2sgrad_custom_vjp__(self):
        """Called inside a function being differentiated, a gradient's rule: the Hessian
        times the cotangent (``s2sgrad/api/higher.py``); None without one."""
        rule = HIGHER_ORDER.get("gradient_rule")
        if rule is None:
            return None
        if getattr(self, "_rule", None) is None:
            self._rule = rule(self)
        return self._rule

    def __repr__(self):
        what = "value_and_grad" if self.with_value else "grad"
        wrt = [f"grad_position={self.grad_position!r}"] if self.positions is not None else []
        if self._weights_of is not None:
            wrt.append(f"weights={getattr(self._weights_of, '__qualname__', '?')}")
        elif self.weights is not None:
            wrt.append(f"weights=[{', '.join(w.name for w in self._weight_list())}]")
        if self.has_aux:
            wrt.append("has_aux=True")
        return (f"<s2sgrad {what} of {self.__name__[:-5]} ({', '.join(wrt)}), backend "
                f"{self.backend!r}>")

    @staticmethod
    def _check_options(grad_position, weights, has_aux, return_ids):
        """The reference's checks of the options, before any function is seen."""
        if grad_position is None and weights is None:
            raise ValueError("grad_position and weights can not both be None")
        if not isinstance(has_aux, bool):
            raise TypeError(f"has_aux must be a bool, got {type(has_aux).__name__}")
        if not isinstance(return_ids, bool):
            raise TypeError(f"return_ids must be a bool, got {type(return_ids).__name__}")
        _check_positions(grad_position)
        if not _is_weights_function(weights):
            _check_weights(weights)

    # ------------------------------------------------------------ binding

    def __get__(self, instance, owner=None):
        """A gradient defined on a class binds like a method: ``obj.loss`` is the gradient
        of ``loss`` with ``self`` bound to ``obj`` (built once per instance, and again
        only when a weights function gives other Parameters)."""
        if instance is None:
            return self
        weights = self.weights
        if self._weights_of is not None:
            weights = self._weights_of(instance)
            if isinstance(weights, (list, tuple)):
                weights = tuple(weights)
        key = tuple(id(w) for w in weights) if isinstance(weights, tuple) else id(weights)
        cached = self._bound.get(id(instance))
        if cached is not None and cached[0] == key and cached[1].fn.__self__ is instance:
            return cached[1]
        bound = GradFunction(_bind(self.fn, instance), self.grad_position, weights,
                             self.has_aux, self.return_ids, self.with_value)
        self._bound[id(instance)] = (key, bound)
        try:
            weakref.finalize(instance, self._bound.pop, id(instance), None)
        except TypeError:       # not weak-referenceable: kept until the class goes
            pass
        return bound

    # ------------------------------------------------------------ building

    def _signature_target(self):
        """The function whose signature calls follow (a gradient's: its function's)."""
        if isinstance(self.fn, GradFunction):
            return self.fn._signature_target()
        return self._target()

    def _target(self):
        if isinstance(self.fn, GradFunction) and "gradient_as_function" in HIGHER_ORDER:
            # a derivative of a gradient: differentiate the gradient's own generated code
            building = getattr(self, "_building", (None, None))
            return HIGHER_ORDER["gradient_as_function"](self.fn, self, building), None
        if isinstance(self.fn, Cell):
            return type(self.fn).construct, self.fn
        if inspect.ismethod(self.fn):
            return self.fn.__func__, self.fn.__self__
        return self.fn, None

    def _weight_list(self):
        if self._weights_of is not None:
            raise GradientArgumentError(
                f"the gradient of {self.__name__[:-5]} takes its weights from the instance "
                f"(weights={getattr(self._weights_of, '__qualname__', self._weights_of)}), "
                f"so it must be a method called on an instance: obj.{self.__name__[:-5]}(...)")
        if self.weights is None:
            return ()
        return (self.weights,) if isinstance(self.weights, Parameter) else self.weights

    def _variant(self, key, arrays=None, trees=None, arg_types=None):
        """The (Generated, Compiled, path) for argument signature ``key``, built once
        (``arg_types``: as ``_types`` gives, when there are no arrays)."""
        if key not in self._variants:
            fn, bound_self = self._target()
            generated = build(fn, self.positions or (), self._weight_list(),
                              self.has_aux, bound_self,
                              arg_types=_types(arrays) if arrays is not None else arg_types,
                              arg_trees=trees)
            py_func, path, on_disk = cache.materialise(
                generated.function_name, generated.source, generated.function_name)
            unsupported = [f.path for f in generated.free if not _numba_argument(f.obj)]
            compiled = Compiled(py_func, allow_numba=not unsupported, path=path,
                                source=generated.source, on_disk=on_disk,
                                python_reason=_python_objects_reason(unsupported))
            self._variants[key] = (generated, compiled, path)
        return self._variants[key]

    def _build(self, arrays=None, trees=None):
        """Generate, store and load the gradient code for arguments like ``arrays``.

        ``arrays`` are the leaves of the arguments and ``trees`` each argument's
        structure (``s2sgrad.trees``; None for a plain value).  The code is
        specialised on the structures and on the leaves' dtypes and ranks (so that
        branches on ``x.dtype`` or ``x.ndim`` fold while building); each signature
        is built once.  Without arguments: the code the last call ran, or before
        any call an unspecialised build.
        """
        key = None if arrays is None else (tuple(trees or ()),
                                           tuple(_signature(a) for a in arrays))
        if arrays is not None:
            self._last = key
        elif self._last is not None:
            key = self._last
        self._building = (arrays, trees)    # read by _target for a gradient of a gradient
        self._generated, self._compiled, self.path = self._variant(key, arrays, trees)
        return self._generated

    def _build_generic(self):
        """The build for no argument types (dtypes and ranks unknown), with the options
        that have defaults (None, bools, strings) at their defaults, as a call leaving
        them out gets.  Gives (Generated, {name: default}); ``source`` stays the code of
        the last call."""
        self._complete((), {}, bind=False)
        options, types_ = {}, []
        for p in (self._signature.parameters.values() if self._signature else ()):
            if p.default is not inspect.Parameter.empty and _is_option(p.default):
                options[p.name] = p.default
                types_.append(("const", p.default))
            else:
                types_.append(None)
        key = ("generic", tuple(options.items()))
        return self._variant(key, arg_types=types_ if options else None)[0], options

    @property
    def source(self):
        """The generated Python source of the value-and-gradient function (the code the
        last call ran; before any call, a build for unspecified argument types)."""
        return self._build().source

    @property
    def backend(self):
        """What ran the last call: 'numba' (compiled), 'numpy' (loop-free code, run as numpy
        calls without a compile) or 'python' (not compilable; see ``fallback_reason``);
        before the first call 'undecided' (or 'python' when S2SGRAD_BACKEND=python)."""
        if self._last is None:
            return undecided_state()[0]
        return self._variants[self._last][1].backend

    @property
    def fallback_reason(self):
        """Why the last call did not run compiled by Numba (None when it did)."""
        if self._last is None:
            return undecided_state()[1]
        return self._variants[self._last][1].fallback_reason

    # ------------------------------------------------------------ calling

    def _prepare(self, args, kwargs):
        """Check the arguments of a call, flatten them and build (once) the code for
        their signature; gives (Generated, leaf arrays, leaves, trees)."""
        self._weight_list()          # an unbound gradient with a weights function: refused
        args = self._complete(args, kwargs)
        positions = self.positions or ()
        if self.positions is not None and len(positions) == 0:
            raise GradientArgumentError(
                f"grad_position is an empty tuple; name at least one of the {len(args)} "
                f"argument positions, or pass grad_position=None with weights")
        for p in positions:
            if p >= len(args):
                raise GradientArgumentError(
                    f"grad_position {p} is out of range: the gradient of {self.__name__[:-5]} "
                    f"was called with {_count(len(args), 'argument')}, so the positions are "
                    f"{_positions_text(len(args))}; pass a position that names an argument, "
                    f"or call it with more arguments")
        self._check_count(args)
        # tuples, lists and dicts are flattened: the generated function takes their leaves
        trees, leaves = [], []
        for a in args:
            items, tree = flatten(a) if is_tree(a) else ([a], None)
            trees.append(tree)
            leaves.extend(items)
        for p in positions:
            items, tree = flatten(args[p]) if trees[p] is not None else ([args[p]], None)
            for item, path in zip(items, leaf_paths(tree)):
                _check_differentiable(p, _to_array(item), path)
        arrays = [_to_array(a) for a in leaves]
        generated = self._build(arrays, trees)
        if free_units_changed(generated.free, free_values(generated)):
            self._forget_builds()          # built when an array read from outside had
            generated = self._build(arrays, trees)     # other unit dimensions
        if len(arrays) != generated.n_params:
            raise GradientArgumentError(
                f"the generated gradient of {self.__name__[:-5]} takes "
                f"{_count(generated.n_params, 'value')}, but the call gave {len(arrays)}; pass "
                f"one value per parameter of {self.__name__[:-5]}")
        return generated, arrays, leaves, trees

    def __call__(self, *args, **kwargs):
        if self._plans and not kwargs:
            plan = self._plans.get(plan_key(args))
            if plan is not None:
                result = self._call_planned(plan, args)
                if result is not None:
                    return result
        generated, arrays, leaves, trees = self._prepare(args, kwargs)
        inputs = [*arrays, *free_values(generated)]
        value, computed = self._run(generated, inputs)
        self._remember_plan(None if kwargs else plan_key(args), GradientPlan, args, leaves,
                            inputs, self._weight_list())
        return self._finish(generated, value, computed, leaves, trees)

    def _remember_plan(self, key, kind, args, leaves, inputs, *more):
        """After a full call: a ``kind`` plan (``call_plan``) kept under ``key`` (a
        ``plan_key``; None: the call cannot be planned) for later calls like it, when each
        argument was a single value; ``more``: what ``kind`` takes besides."""
        if key is not None and len(leaves) == len(args):
            self._plans[key] = kind(self._last, self._variants[self._last], args, inputs,
                                    *more)

    def _planned_inputs(self, plan, arrays):
        """Make the code of ``plan`` the current one and give its inputs: ``arrays`` (the
        arguments' arrays), then the values it reads from outside, read now; None when
        one of those no longer has the unit dimensions the code was built for (the builds
        are dropped: the caller takes the full path, which builds again)."""
        if self._last is not plan.signature:
            self._last = plan.signature
            self._generated, self._compiled, self.path = plan.variant
        if not plan.free:
            return arrays
        free = free_values(plan.generated)
        if free_units_changed(plan.free, free):
            self._forget_builds()
            return None
        return [*arrays, *free]

    def _run_plan(self, plan, arrays, extra=()):
        """Run the code of ``plan`` on ``arrays``, the values it reads from outside and
        ``extra``; None when it must be built again (``_planned_inputs``)."""
        # (the common case inline: the plan's code is the current one and reads nothing
        # from outside)
        inputs = arrays if self._last is plan.signature and not plan.free else \
            self._planned_inputs(plan, arrays)
        if inputs is None:
            return None
        compiled = plan.variant[1]
        # a later call that Numba could not compile for made the code run as Python
        run = plan.run if compiled.backend == plan.backend else compiled
        try:
            return run(*inputs, *extra)
        except Exception as exc:
            raise self._noted(exc, plan.generated, [*inputs, *extra])

    def _call_planned(self, plan, args):
        """A call whose arguments have the types an earlier call's had (a ``GradientPlan``):
        the checks that call passed hold again, so the arrays are only taken out of
        Tensors, the code run and the results put in the form of the arguments; None when
        the code must be built again (``_run_plan``)."""
        result = self._run_plan(plan, [_to_array(a) for a in args] if plan.tensor_args
                                else args)
        if result is None:
            return None
        value, computed = result
        grads = []
        for i, slot in plan.positions:
            grads.append(_finish_gradient(None if slot is None else computed[slot], args[i]))
        for i, slot in plan.weights:
            grads.append(_finish_gradient(None if slot is None else computed[slot],
                                          plan.weight_list[i]))
        if plan.tensor_args or plan.tensor_free:
            tensors = [a for a in args if isinstance(a, Tensor)] + [
                f.obj for f in plan.free if isinstance(f.obj, Tensor)]
            value = _wrap_output(value, _float_dtype(tensors))
        return self._structure(grads, value, plan.weight_list)

    def _forget_builds(self):
        """Drop the code built so far: an array it reads from outside (a global, a
        Parameter) no longer has the unit dimensions it was specialised on."""
        self._variants.clear()
        self._plans.clear()
        self._last = None

    def _run(self, generated, inputs):
        """Run the loaded code on ``inputs``; an error raised in it gets a note naming the
        user's line."""
        try:
            return self._compiled(*inputs)
        except Exception as exc:
            raise self._noted(exc, generated, inputs)

    def _noted(self, exc, generated, inputs, compiled=None):
        """``exc``, raised by the loaded code of ``generated`` (``compiled``, by default the
        last call's) run on ``inputs``, with a note naming the user's line it came from."""
        compiled = self._compiled if compiled is None else compiled
        if compiled.backend == "numba":
            # compiled code keeps no line numbers: run the same code as Python to find
            # the user's line (the error is the same; this costs only on failure)
            try:
                compiled.py_func(*inputs)
            except type(exc) as again:
                exc = again
            except Exception:  # noqa: BLE001 - keep the original error
                pass
        exc.add_note(_user_line_of(exc, self.path, generated))
        return exc

    def shaped_gradients(self, generated, computed, leaves, trees):
        """(per differentiated position its gradient in the structure of its argument,
        per weight its gradient), each in the type of what it is the gradient of (zeros
        where the code computes none)."""
        computed = list(computed)
        weights = self._weight_list()
        leaf_grads, weight_grads = {}, []
        for (kind, i), has in zip(generated.wrt, generated.computed):
            like = leaves[i] if kind == "position" else weights[i]
            g = _finish_gradient(computed.pop(0) if has else None, like)
            if kind == "position":
                leaf_grads[i] = g
            else:
                weight_grads.append(g)
        inputs = [unflatten(trees[p], [leaf_grads[k] for k in generated.arg_leaves[p]])
                  for p in self.positions or ()]
        return inputs, weight_grads

    def _finish(self, generated, value, computed, leaves, trees):
        """The gradients in the structure and types of their arguments, with the value."""
        inputs, weight_grads = self.shaped_gradients(generated, computed, leaves, trees)
        grads = inputs + weight_grads
        weights = self._weight_list()
        tensors = [a for a in leaves if isinstance(a, Tensor)] + [
            f.obj for f in generated.free if isinstance(f.obj, Tensor)]
        value = _wrap_output(value, _float_dtype(tensors) if tensors else None)
        return self._structure(grads, value, weights)

    def _check_count(self, args):
        """More arguments than the function takes is an error naming both counts."""
        if self._signature is None:
            return
        params = self._signature.parameters
        if len(args) <= len(params):
            return
        if any(p.kind is inspect.Parameter.VAR_POSITIONAL for p in params.values()):
            return
        if len(args) > len(params):
            raise GradientArgumentError(
                f"{self.__name__[:-5]} takes {_count(len(params), 'argument')}, but its "
                f"gradient was called with {len(args)}; pass one value per parameter")

    def _complete(self, args, kwargs, bind=True):
        """The positional arguments with keywords placed and defaults filled in, as the
        function itself would see them (``bind`` False: only read the signature)."""
        if self._signature is None:
            fn, bound_self = self._signature_target()
            try:
                sig = inspect.signature(fn)
            except (TypeError, ValueError):
                return args
            params = list(sig.parameters.values())[1 if bound_self is not None else 0:]
            self._signature = sig.replace(parameters=params)
        if not bind:
            return args
        if len(args) >= len(self._signature.parameters) and not kwargs:
            return args
        try:
            bound = self._signature.bind(*args, **kwargs)
        except TypeError as exc:
            raise GradientArgumentError(
                f"the gradient of {self.__name__[:-5]} was called with arguments that do not "
                f"fit {self.__name__[:-5]}{self._signature} ({exc}); call it as you would "
                f"call {self.__name__[:-5]}") from None
        bound.apply_defaults()
        return tuple(bound.args) + tuple(bound.kwargs.values())

    def _structure(self, grads, value, weights):
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


def _is_weights_function(weights):
    """A function giving the weights from the instance (``nn.Cell.trainable_params``)."""
    return callable(weights) and not isinstance(weights, (Parameter, list, tuple))


def _bind(fn, instance):
    """``fn`` bound to ``instance`` as a method (a Cell's construct stays the Cell)."""
    return types.MethodType(fn, instance)


def _a(noun):
    """``noun`` with its indefinite article: 'a float', 'an int'."""
    return ("an " if noun[:1].lower() in "aeiou" or noun == "ndarray" else "a ") + noun


def _count(n, noun):
    """'1 argument', '2 arguments'."""
    return f"{n} {noun}{'s' if n != 1 else ''}"


def _positions_text(n):
    return "none" if n == 0 else "0" if n == 1 else f"0 to {n - 1}"


def _user_line_of(exc, path, generated):
    """A note for an error raised inside generated code: the user's line it came from,
    read from the generated module's line map."""
    frames = [f for f in traceback.extract_tb(exc.__traceback__)
              if os.path.abspath(f.filename) == os.path.abspath(path or "")]
    if not frames:
        return f"s2sgrad: raised while running the generated gradient code in {path}"
    lineno = frames[-1].lineno
    origin = generated.line_map.get(lineno)
    if origin is None:
        return f"s2sgrad: raised at line {lineno} of the generated code in {path}"
    part = "adjoint" if generated.adjoint_from is not None and \
        lineno >= generated.adjoint_from else "forward"
    where = f"{os.path.basename(origin.filename or '?')}:{origin.lineno}"
    text = (origin.text or "").strip()
    return (f"s2sgrad: raised by the generated code ({part} sweep) for {text!r} ({where}), "
            f"line {lineno} of {path}")


def _is_option(value):
    """None, a bool or a string argument: an option the code is built for, by value (so
    ``if mask is None`` and ``if mode == 'sum'`` fold while building)."""
    return value is None or isinstance(value, (bool, np.bool_, str))


def _signature(value):
    """What the code is specialised on: an array's dtype, rank and which dimensions are 1
    (so broadcasting is decided while building), an option's value, else the type."""
    if isinstance(value, np.ndarray):
        return (value.dtype.str, value.ndim, unit_dimensions(value))
    if _is_option(value):
        return ("option", type(value), value)
    return type(value)


def _types(arrays):
    """Per argument: (numpy dtype, ndim, which dimensions are 1) for arrays, ("const",
    value) for options (None,
    bools, strings), None for anything else."""
    if arrays is None:
        return None
    out = []
    for a in arrays:
        if _is_option(a):
            out.append(("const", a))
        elif isinstance(a, np.ndarray):
            out.append((a.dtype, a.ndim, unit_dimensions(a)))
        elif isinstance(a, (int, np.integer)) and not isinstance(a, bool):
            out.append(("int", 0))
        elif isinstance(a, np.floating):
            out.append((a.dtype, 0))
        elif isinstance(a, float):
            out.append((None, 0))
        else:
            out.append(None)
    return out


def _is_array(obj):
    return isinstance(obj, (np.ndarray, Tensor))


def free_values(generated):
    """The values the code of ``generated`` reads from outside (Parameters, globals), read
    now: arrays out of Tensors, other objects as they are."""
    return [_to_array(f.obj) if _is_array(f.obj) else f.obj for f in generated.free]


def _to_array(obj):
    return np.asarray(obj) if isinstance(obj, Tensor) else obj


def _python_objects_reason(paths):
    """Why code reading the Python objects at ``paths`` runs as Python (None if none)."""
    if not paths:
        return None
    return (f"The function reads {', '.join(paths)}, which compiled code cannot take as "
            f"{'an argument' if len(paths) == 1 else 'arguments'} (only arrays, Tensors and "
            f"numbers), so the gradient runs as Python (correct, slower). To run it "
            f"compiled, read arrays or numbers there instead.")


def _numba_argument(obj):
    return _is_array(obj) or isinstance(obj, (int, float, bool, np.generic))


def _check_differentiable(position, value, path=""):
    """Refuse a value at a differentiated position (``path``: where it sits inside a tuple,
    list or dict argument, e.g. ``[1]``) that is not floating point, saying what to pass."""
    what = f"the argument at grad_position {position}" + (f", item {path}," if path else "")
    if isinstance(value, (bool, np.bool_)):
        raise GradientTypeError(
            f"{what} is a bool ({bool(value)!r}); only floating-point values can be "
            f"differentiated: pass a float (e.g. 1.0) or a float array")
    if isinstance(value, (int, np.integer)):
        raise GradientTypeError(
            f"{what} is an integer ({int(value)!r}); only floating-point values can be "
            f"differentiated: pass a float (e.g. {float(value)!r}) or a float array")
    if isinstance(value, np.ndarray) and value.dtype.kind not in "fc":
        raise GradientTypeError(
            f"{what} is an array of dtype {value.dtype}; only floating-point arrays can be "
            f"differentiated: cast it with .astype(np.float32) or .astype(np.float64)")
    if not isinstance(value, (float, complex, np.floating, np.complexfloating, np.ndarray)):
        raise GradientTypeError(
            f"{what} is {_a(type(value).__name__)}; s2sgrad differentiates floats, float "
            f"arrays and Tensors, and tuples, lists and dicts of them: pass one of those")


def _finish_gradient(g, like):
    """The gradient in the form of its input: same shape, dtype, Tensor-ness; zeros if None."""
    # the common cases first (every planned call finishes its gradients): an array's
    # gradient as the code gives it, a Python float's as a Python float, a numpy float's
    # (a jvp's tangent of one) as it is
    kind = type(like)
    if kind is np.ndarray:
        if type(g) is np.ndarray and g.dtype == like.dtype and g.shape == like.shape:
            return g
    elif kind is float:
        if type(g) is np.float64 or type(g) is float:
            return float(g)
    elif kind is type(g) and isinstance(g, np.floating):
        return g
    base = np.asarray(like) if isinstance(like, Tensor) else like
    if g is None:
        g = np.zeros_like(base) if isinstance(base, np.ndarray) else 0.0
    if isinstance(base, np.ndarray):
        g = np.asarray(g)
        if g.shape != base.shape:
            g = np.broadcast_to(g, base.shape).copy()
        if base.dtype.kind in "fc" and g.dtype != base.dtype:
            g = g.astype(base.dtype)
    elif isinstance(base, np.generic):
        g = base.dtype.type(g) if base.dtype.kind in "fc" and np.ndim(g) == 0 else g
    else:
        g = float(g) if np.ndim(g) == 0 else g
    return Tensor(g) if isinstance(like, Tensor) else g


def _float_dtype(tensors):
    """The float dtype a Tensor computation on ``tensors`` gives (float32 by default)."""
    floats = [np.asarray(t).dtype for t in tensors if np.asarray(t).dtype.kind == "f"]
    return np.result_type(*floats) if floats else np.dtype(np.float32)


def _wrap_output(value, dtype):
    """Outputs as the function gives them: arrays and numbers become Tensors when the
    function ran on Tensors (``dtype``: the float dtype of a bare number; compiled code
    returns Python floats where numpy has float32 scalars)."""
    if isinstance(value, tuple):
        return tuple(_wrap_output(v, dtype) for v in value)
    if isinstance(value, list):
        return [_wrap_output(v, dtype) for v in value]
    if dtype is not None and isinstance(value, (np.ndarray, np.generic)):
        return Tensor(np.asarray(value))
    if dtype is not None and isinstance(value, float):
        return Tensor(np.asarray(value, dtype=dtype))
    return value


# ---------------------------------------------------------------- shared with api/forward.py
# the argument checks and result shaping forward mode uses as gradients do
check_function = _check_function
check_positions = _check_positions
describe_args = _describe_args
float_dtype = _float_dtype
finish_gradient = _finish_gradient
to_array = _to_array
argument_types = _types
wrap_output = _wrap_output
numba_argument = _numba_argument
python_objects_reason = _python_objects_reason
with_article = _a
# and what vjp, jacrev, hvp and hessian read besides (s2sgrad/api/split.py, api/higher.py)
check_weights = _check_weights
