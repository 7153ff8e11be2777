"""The derivative object every mode builds on: ``Derivative``, and ``derivative_for``.

A derivative of ``fn`` (a function, a method, a Cell, or another derivative) w.r.t. the
arguments at ``grad_position`` (and ``weights``) is called like ``fn``.  What every
mode gets from this base:

- the options, checked as the reference checks them (``arguments.check_options``), and
  a name after ``fn`` (``name``; ``__name__`` adds the mode's ``name_suffix``);
- a call's arguments completed against ``fn``'s signature (keywords placed, defaults
  filled in), checked (positions in range, floats where it differentiates) and flattened
  (``_prepare``);
- the code built once per argument signature (``_build``; ``_variants`` keeps each as
  (Generated, loaded code, path)), written to the cache directory and loaded; the
  generic build ``show`` prints without example arguments (``_build_generic``);
- a ``CallPlan`` per ``plan_key`` (``call_plan``), so that a call like an earlier one
  skips the checks (``_remember_plan``, ``_run_plan``);
- the loaded code run, an error raised in it noted with the user's line (``_run``);
- what the last call ran: ``source``, ``path``, ``backend``, ``fallback_reason``;
- binding as a method when defined on a class (``__get__``), and a custom rule when
  called inside a function being differentiated (``__s2sgrad_custom_vjp__``);
- pickling (``__getstate__``/``__setstate__``): the function (by reference, as pickle
  takes functions; a Cell by value), the options and each built variant's generated
  code, never the loaded code: unpickled, the code is written to that process's cache
  folder and loaded there (Numba compiles it, or loads its own cache of it), so a worker
  never runs the compiler for a signature built before pickling.

What a mode provides (the hooks below, and nothing else of the base is overridden):
``derivative_mode`` and ``name_suffix`` (class attributes), ``build_code`` (the
compiler pipeline it runs), ``load_code`` (how the module is loaded: by default its one
function, compiled by Numba where it can), ``bind_to`` (the same derivative of a method
bound to an instance; None: not bound), ``rule_inside`` (its rule inside a
differentiated function; None: none), and its own ``__init__`` (its options),
``__call__`` and ``__repr__``.

A derivative of a derivative (``jvp(grad(f), ...)``) differentiates the inner one's
generated code, as ``api.nested`` writes it.

``api/jit.py``'s ``Jit`` (a function compiled, not differentiated) is built on this base
too: its ``derivative_mode`` stays None (it is no derivative object), it checks no
positions (``_check_positions``) and runs its own ``__call__``.
"""
import collections
import inspect
import types
import weakref

from ..backend.numba_backend import backend_mode, undecided_state
from ..errors import (DerivativeCompositionError, DerivativeNotAvailableError,
                      GradientArgumentError, S2sgradError)
from .. import runtime as rt
from ..nn import Cell
from ..tensor import Parameter
from ..trees import flatten, is_tree, leaf_paths, unflatten
from .arguments import (argument_signature, argument_types, check_differentiable,
                        check_options, check_positions, check_weights, count_text,
                        free_values, is_option, is_weights_function, large_array,
                        large_arguments, positions_text, to_array)
from .binding import instance_of, kept_on
from .call_plan import free_units_changed
from ..compiler.front.guards import cell_value
from ..compiler.front.partials import partial_as_function
from .guards import holds, retargeted, unchecked
from .identity import function_identity, reads_large_array
from .loading import load_function, user_line_of, user_origin_of
from .nested import derivative_as_function
from .results import finish_gradient


#: where ``jvp`` keeps its last call's hot path on the function or derivative object it
#: differentiates (``forward.HotJvp``; never pickled)
HOT_JVP = "__s2sgrad_hot_jvp__"


#: how many earlier builds of one signature a derivative keeps for values that change
#: back (``net.set_train(True)`` / ``set_train(False)`` alternating)
KEPT_VERSIONS = 8


class Derivative:
    """A differentiated function: call it like the original (see the module doc).

    ``source`` is the generated Python text, ``path`` the file it lives in,
    ``backend`` 'numba', 'numpy' or 'python' and ``fallback_reason`` why not Numba.
    """

    #: the mode's name ("grad", "forward", "split", "jacrev", "hvp", "hessian")
    derivative_mode = None
    #: what ``__name__`` adds to the function's name
    name_suffix = "_grad"
    #: whether the mode builds code per size class of the arguments too (``kept_arrays``)
    by_size_class = False
    #: ``grad``'s options, the same for every other mode
    with_value = False
    return_ids = False

    def __init__(self, fn, grad_position, weights=None, has_aux=False):
        check_options(grad_position, weights, has_aux, False)
        self.fn = fn
        self.grad_position = grad_position
        self.positions = check_positions(grad_position)
        # weights given as a function of the instance: read when the method is bound
        self._weights_of = weights if is_weights_function(weights) else None
        self.weights = None if self._weights_of is not None else check_weights(weights)
        self.has_aux = has_aux
        self._generated = None
        self._compiled = None
        self._variants = {}   # argument signature -> (Generated, loaded code, path)
        self._earlier = {}    # argument signature -> variants whose guards failed, newest first
        self._plans = {}      # plan_key of a call's arguments -> CallPlan
        self._last = None     # the signature of the last call
        self._hot = None      # the last plan a call ran, tried first (``call_plan``)
        # the code unrolls a recursion by the arguments' shapes: each signature has them
        self._by_shape = False
        self._signature = None  # the differentiated function's signature (its own params)
        self._bound = {}      # id(instance) -> (weights' ids, bound derivative)
        self._rule = None
        self.path = None
        self.name = getattr(fn, "__name__", type(fn).__name__)
        self.__name__ = self.name + self.name_suffix
        self.__qualname__ = getattr(fn, "__qualname__", self.name) + self.name_suffix
        self.__doc__ = f"Gradient of {self.name} generated by s2sgrad."
        self.__wrapped__ = fn
        self.__module__ = getattr(fn, "__module__", None) or __name__

    # ------------------------------------------------------------ hooks of a mode

    def build_code(self, fn, bound_self, arg_types, trees):
        """The mode's Generated module for ``fn`` (``bound_self``: the instance a method is
        bound to) and arguments of ``arg_types`` (``arguments.argument_types``) and
        structures ``trees``."""
        raise NotImplementedError

    def load_code(self, generated):
        """(what runs the code, its path): by default the module's one function
        ``generated.function_name``, compiled by Numba where it can, without the numpy
        else-branches of its fused loops (``Compiled.skips_else``: a call whose guard
        fails runs again, ``_recovered``)."""
        compiled, path = load_function(generated.function_name, generated.source,
                                       generated.function_name, generated.free)
        compiled.skips_else = True
        return compiled, path

    def bind_to(self, method, weights):
        """The same derivative of ``method`` (the function bound to an instance) with
        ``weights``; None: this mode does not bind, the object is used as it is."""
        return None

    def rule_inside(self):
        """The custom rule of this derivative called inside a function being
        differentiated (``compiler/front/custom.py``), or None."""
        return None

    # ------------------------------------------------------------ pickling

    #: what a pickle leaves out: loaded code, call plans (which hold it), per-instance
    #: bindings (by ``id``), the rule inside, what a build in progress reads
    _NOT_PICKLED = ("_compiled", "_generated", "path", "_plans", "_bound", "_rule",
                    "_building", "_earlier", "_hot", "_reuse", "_reuse_held", HOT_JVP,
                    "__s2sgrad_derivatives__")

    def __getstate__(self):
        """The options, the function and, per argument signature, the generated code
        (``Generated``: source, line map, the values it reads from outside)."""
        state = {k: v for k, v in self.__dict__.items() if k not in self._NOT_PICKLED}
        state["_variants"] = {key: unchecked(variant[0])
                              for key, variant in self._variants.items()}
        if inspect.ismethod(self.fn):
            # a bound method pickles as getattr(instance, name), which gives this
            # derivative again when it is defined on the class under the method's name
            state["fn"] = _MethodReference(self.fn.__self__, self.fn.__name__)
        partial = getattr(self.fn, "__s2sgrad_partial__", None)
        if partial is not None:         # front/partials.py's wrapper: made again there
            state["fn"] = _PartialReference(partial)
            state.pop("__wrapped__", None)     # the same function: set again from fn
        return state

    def __setstate__(self, state):
        """Load each pickled variant's code here (``load_code``: written to this process's
        cache folder, compiled by Numba on its first call), without generating it."""
        built = state.pop("_variants")
        if isinstance(state["fn"], (_MethodReference, _PartialReference)):
            state["fn"] = state["fn"].method()
        state.setdefault("__wrapped__", state["fn"])
        self.__dict__.update(state)
        self._plans, self._bound, self._rule, self._earlier = {}, {}, None, {}
        self._hot = None
        self._variants = {key: (generated, *self.load_code(generated))
                          for key, generated in built.items()}
        self._generated, self._compiled, self.path = self._variants.get(
            self._last, (None, None, None))

    def as_function(self, building):
        """This derivative as a plain Python function with source, for the arguments
        ``building`` (leaves and trees): what a forward-mode derivative of it
        differentiates (``api/nested.py``)."""
        raise DerivativeCompositionError(
            f"a derivative of {self.__name__} ({type(self).__name__}) is not supported; "
            f"write the derivative you want of the function itself (hessian(f), "
            f"jacfwd(jacrev(f)), grad(grad(f)))")

    # ------------------------------------------------------------ binding

    @property
    def __s2sgrad_custom_vjp__(self):
        if self._rule is None:
            self._rule = self.rule_inside()
        return self._rule

    def __get__(self, instance, owner=None):
        """A derivative defined on a class binds like a method: ``obj.loss`` is the
        derivative of ``loss`` with ``self`` bound to ``obj`` (built once per instance,
        and again only when a weights function gives other Parameters)."""
        if instance is None:
            return self
        weights = self.weights
        if self._weights_of is not None:
            weights = self._weights_of(instance)
            if isinstance(weights, (list, tuple)):
                weights = tuple(weights)
        key = tuple(id(w) for w in weights) if isinstance(weights, tuple) else id(weights)
        # kept on the instance (``binding``): a cache here would keep every instance alive
        kept = kept_on(instance)
        store, slot = (kept, self) if kept is not None else (self._bound, id(instance))
        cached = store.get(slot)
        if cached is not None and cached[0] == key and cached[1].fn.__self__ is instance:
            return cached[1]
        bound = self.bind_to(types.MethodType(self.fn, instance), weights)
        if bound is None:
            return self
        store[slot] = (key, bound)
        if kept is None:
            try:
                weakref.finalize(instance, self._bound.pop, id(instance), None)
            except TypeError:       # neither a __dict__ nor weak references: kept until
                pass                # the class goes
        return bound

    # ------------------------------------------------------------ building

    def _signature_target(self):
        """The function whose signature calls follow (a derivative's: its function's)."""
        if hasattr(self.fn, "_signature_target"):
            return self.fn._signature_target()
        return self._target()

    def _target(self):
        """(the function to differentiate, the instance it is bound to or None)."""
        if self.differentiates_a_derivative:
            # a derivative of a derivative: differentiate the inner one's generated code
            building = getattr(self, "_building", (None, None))
            return derivative_as_function(self.fn, self, building), None
        inline = getattr(self.fn, "__s2sgrad_inline__", None)
        if inline is not None:      # a vmap: its differentiable loop (api/vmap.py)
            return inline, None
        if isinstance(self.fn, Cell):
            return type(self.fn).construct, self.fn
        if inspect.ismethod(self.fn):
            return self.fn.__func__, self.fn.__self__
        return self.fn, None

    @property
    def differentiates_a_derivative(self):
        """Whether ``fn`` is itself a derivative object (``api.nested`` asks)."""
        return getattr(self.fn, "derivative_mode", None) is not None

    def _weight_list(self):
        if self._weights_of is not None:
            raise GradientArgumentError(
                f"the gradient of {self.name} takes its weights from the instance "
                f"(weights={getattr(self._weights_of, '__qualname__', self._weights_of)}), "
                f"so it must be a method called on an instance: obj.{self.name}(...)")
        if self.weights is None:
            return ()
        return (self.weights,) if isinstance(self.weights, Parameter) else self.weights

    def _variant(self, key, arrays=None, trees=None, arg_types=None):
        """The (Generated, loaded code, path) for argument signature ``key``, built once
        (``arg_types``: as ``argument_types`` gives, when there are no arrays)."""
        variant = self._variants.get(key)
        if variant is not None and not holds(variant[0]):
            self._set_aside(key)
            variant = None
        if variant is None:
            variant = next((v for v in self._earlier.get(key, ()) if holds(v[0])), None)
        if variant is None:
            fn, bound_self = self._target()
            generated = self.build_code(
                fn, bound_self, argument_types(arrays) if arrays is not None else arg_types,
                trees)
            variant = (generated, *self.load_code(generated))
        self._variants[key] = variant
        return variant

    def adopt(self, earlier, cells):
        """Take the builds of the derivative ``earlier`` (of a function object with this
        one's code, ``derivative_for``), reading this function's closure cells (``cells``:
        {id(its cell): this function's}) instead of its own."""
        def moved(variant):
            return (retargeted(variant[0], cells), *variant[1:])
        self._variants = {k: moved(v) for k, v in earlier.variants.items()}
        self._earlier = {k: [moved(v) for v in vs] for k, vs in earlier.earlier.items()}
        self._by_shape = any(getattr(v[0], "by_shape", False)
                             for v in self._variants.values())
        self._signature = earlier.signature

    def _set_aside(self, key):
        """The code built for signature ``key`` read a value from outside that has changed
        since (a global, ``self.k``, a sub-cell: ``api/guards.py``): keep it aside (a
        change back finds it again; at most ``KEPT_VERSIONS``), and forget the call plans
        that run it."""
        earlier = self._earlier.setdefault(key, [])
        earlier.insert(0, self._variants.pop(key))
        del earlier[KEPT_VERSIONS:]
        self._plans = {k: p for k, p in self._plans.items() if p.signature != key}
        self._hot = None
        if self._last == key:
            self._last = None

    def _build(self, arrays=None, trees=None):
        """Generate, store and load the code for arguments like ``arrays``.

        ``arrays`` are the leaves of the arguments and ``trees`` each argument's
        structure (``s2sgrad.trees``; None for a plain value).  The code is
        specialised on the structures and on the leaves' dtypes and ranks (so that
        branches on ``x.dtype`` or ``x.ndim`` fold while building); each signature
        is built once.  Without arguments: the code the last call ran, or before
        any call an unspecialised build.
        """
        key = None if arrays is None else self._signature_of(arrays, trees)
        if arrays is None and self._last is not None:
            key = self._last
        self._building = (arrays, trees)    # read by _target for a derivative of a derivative
        self._generated, self._compiled, self.path = self._variant(key, arrays, trees)
        if arrays is not None:      # (after: a build whose guards failed is set aside)
            self._last = key
        if arrays is not None and self._generated.by_shape and not self._by_shape:
            # a recursion unrolled by these shapes: from now on every build is keyed by them
            self._by_shape = True
            self._variants[self._signature_of(arrays, trees)] = self._variants.pop(key)
            self._last = self._signature_of(arrays, trees)
        return self._generated

    def _signature_of(self, arrays, trees):
        """The key of ``_variants`` for arguments of leaves ``arrays`` and structures
        ``trees``: each leaf's ``argument_signature``, and its shape once a build has
        unrolled a recursion by shapes (``Generated.by_shape``); with ``by_size_class``,
        whether an array is large (``arguments.large_arguments``: the build keeps arrays
        between calls, and a call of the other class gets the other build)."""
        sizes = tuple(getattr(a, "shape", None) for a in arrays) if self._by_shape else ()
        if self.by_size_class:
            sizes += (any(large_array(a) for a in arrays) or reads_large_array(self.fn),)
        return (tuple(trees or ()), tuple(argument_signature(a) for a in arrays)) + sizes

    def kept_arrays(self, arg_types):
        """Whether code built for ``arg_types`` writes its large elementwise results into
        arrays kept between calls (``rt.Buffers``): run as numpy, for arguments of the
        large size class, or a function reading a large array from outside
        (``reads_large_array``: a lambda closing over the points); ``by_size_class``
        keys the builds by it."""
        return backend_mode() != "numba" and (large_arguments(arg_types) or
                                              reads_large_array(self.fn))

    def _build_generic(self):
        """The build for no argument types (dtypes and ranks unknown), with the options
        that have defaults (None, bools, strings) at their defaults, as a call leaving
        them out gets.  Gives (Generated, {name: default}); ``source`` stays the code of
        the last call."""
        self._complete((), {}, bind=False)
        options, types_ = {}, []
        for p in (self._signature.parameters.values() if self._signature else ()):
            if p.default is not inspect.Parameter.empty and is_option(p.default):
                options[p.name] = p.default
                types_.append(("const", p.default))
            else:
                types_.append(None)
        key = ("generic", tuple(options.items()))
        return self._variant(key, arg_types=types_ if options else None)[0], options

    def _forget_builds(self):
        """Drop the code built so far: an array it reads from outside (a global, a
        Parameter) no longer has the unit dimensions it was specialised on."""
        self._variants.clear()
        self._earlier.clear()
        self._plans.clear()
        self._hot = None
        self._last = None

    @property
    def source(self):
        """The generated Python source (the code the last call ran; before any call, a
        build for unspecified argument types)."""
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
        self._check_positions(args)
        self._check_count(args)
        # tuples, lists and dicts are flattened: the generated function takes their leaves
        trees, leaves = [], []
        for a in args:
            items, tree = flatten(a) if is_tree(a) else ([a], None)
            trees.append(tree)
            leaves.extend(items)
        for p in self.positions or ():
            items, tree = flatten(args[p]) if trees[p] is not None else ([args[p]], None)
            for item, path in zip(items, leaf_paths(tree)):
                check_differentiable(p, to_array(item), path)
        arrays = [to_array(a) for a in leaves]
        generated = self._build(arrays, trees)
        if free_units_changed(generated.free, free_values(generated)):
            self._forget_builds()          # built when an array read from outside had
            generated = self._build(arrays, trees)     # other unit dimensions
        if len(arrays) != generated.n_params:
            raise GradientArgumentError(
                f"the generated gradient of {self.name} takes "
                f"{count_text(generated.n_params, 'value')}, but the call gave {len(arrays)}; "
                f"pass one value per parameter of {self.name}")
        return generated, arrays, leaves, trees

    def _check_positions(self, args):
        """The differentiated positions name arguments of the call ``args``."""
        positions = self.positions or ()
        if self.positions is not None and len(positions) == 0:
            raise GradientArgumentError(
                f"grad_position is an empty tuple; name at least one of the {len(args)} "
                f"argument positions, or pass grad_position=None with weights")
        for p in positions:
            if p >= len(args):
                raise GradientArgumentError(
                    f"grad_position {p} is out of range: the gradient of {self.name} "
                    f"was called with {count_text(len(args), 'argument')}, so the positions "
                    f"are {positions_text(len(args))}; pass a position that names an "
                    f"argument, or call it with more arguments")

    def _check_count(self, args):
        """More arguments than the function takes is an error naming both counts."""
        if self._signature is None:
            return
        params = self._signature.parameters
        if len(args) <= len(params):
            return
        if any(p.kind is inspect.Parameter.VAR_POSITIONAL for p in params.values()):
            return
        raise GradientArgumentError(
            f"{self.name} takes {count_text(len(params), 'argument')}, but its "
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
                f"the gradient of {self.name} was called with arguments that do not "
                f"fit {self.name}{self._signature} ({exc}); call it as you would "
                f"call {self.name}") from None
        bound.apply_defaults()
        return tuple(bound.args) + tuple(bound.kwargs.values())

    def call_function(self, args):
        """``fn`` called with ``args`` as ``_complete`` gives them: its keyword-only
        parameters (last there) passed by name."""
        self._complete((), {}, bind=False)         # reads the signature once
        params = self._signature.parameters.values() if self._signature else ()
        names = [p.name for p in params if p.kind is inspect.Parameter.KEYWORD_ONLY]
        if not names or len(args) < len(names):
            return self.fn(*args)
        split = len(args) - len(names)
        return self.fn(*args[:split], **dict(zip(names, args[split:])))

    def _remember_plan(self, key, kind, args, leaves, inputs, *more):
        """After a full call: a ``kind`` plan (``call_plan``) kept under ``key`` (a
        ``plan_key``; None: the call cannot be planned) for later calls like it, when each
        argument was a single value; ``more``: what ``kind`` takes besides."""
        if key is not None and len(leaves) == len(args) and \
                not self._variants[self._last][0].by_shape:   # (plans are not keyed by sizes)
            self._plans[key] = kind(self._last, self._variants[self._last], args, inputs,
                                    *more)

    def _planned_inputs(self, plan, arrays):
        """Make the code of ``plan`` the current one and give its inputs: ``arrays`` (the
        arguments' arrays), then the values it reads from outside, read now; None when
        one of those no longer has the unit dimensions the code was built for (the builds
        are dropped: the caller takes the full path, which builds again)."""
        if plan.guarded and not holds(plan.generated):
            self._set_aside(plan.signature)
            return None
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
        inputs = arrays if self._last is plan.signature and not plan.free and \
            not plan.guarded else self._planned_inputs(plan, arrays)
        if inputs is None:
            return None
        compiled = plan.variant[1]
        # a later call that Numba could not compile for made the code run as Python
        run = plan.run if compiled.backend == plan.backend else compiled
        try:
            return run(*inputs, *extra)
        except Exception as exc:
            return self._recovered(exc, plan.generated, [*inputs, *extra], compiled)

    def _run(self, generated, inputs):
        """Run the loaded code on ``inputs``; an error raised in it gets a note naming the
        user's line."""
        try:
            return self._compiled(*inputs)
        except Exception as exc:
            return self._recovered(exc, generated, inputs)

    def _recovered(self, exc, generated, inputs, compiled=None):
        """The call's result where the compiled code stopped where Python goes on
        (``rt.RunAsPython``): a fused loop's guard failed in code compiled without its
        else-branches (``rt.FusedGuardFailed``): the code compiled with them
        (``Compiled.with_else``, from now on in its place: the plans running the other
        are dropped); or only Python can hold its values (``rt.RowsOfSeveralLengths``):
        the same code run as Python on ``inputs``.  Any other error is raised, noted with
        the user's line (``_noted``)."""
        compiled = self._compiled if compiled is None else compiled
        if not (isinstance(exc, rt.RunAsPython) and compiled.backend == "numba"):
            raise self._noted(exc, generated, inputs, compiled)
        if isinstance(exc, rt.FusedGuardFailed) and compiled.skips_else:
            full = self._put_with_else(compiled)
            try:
                return full(*inputs)
            except rt.RunAsPython:
                pass
        return compiled.python_call(*inputs)

    def _put_with_else(self, compiled):
        """``compiled.with_else()``, put where ``compiled`` was (the builds, the current
        code); the plans and hot call that ran ``compiled`` dropped (their checks of
        the current code fail from now on)."""
        full = compiled.with_else()
        for signature, variant in list(self._variants.items()):
            if variant[1] is compiled:
                self._variants[signature] = (variant[0], full, *variant[2:])
        if self._compiled is compiled:
            self._compiled = full
        self._plans = {k: p for k, p in self._plans.items() if p.variant[1] is not compiled}
        self._hot = None
        return full

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
        exc.add_note(user_line_of(exc, self.path, generated))
        return _located(exc, self.path, generated)

    def shaped_gradients(self, generated, computed, leaves, trees):
        """(per differentiated position its gradient in the structure of its argument,
        per weight its gradient), each in the type of what it is the gradient of (zeros
        where the code computes none)."""
        computed = list(computed)
        weights = self._weight_list()
        leaf_grads, weight_grads = {}, []
        for (kind, i), has in zip(generated.wrt, generated.computed):
            like = leaves[i] if kind == "position" else weights[i]
            g = finish_gradient(computed.pop(0) if has else None, like)
            if kind == "position":
                leaf_grads[i] = g
            else:
                weight_grads.append(g)
        inputs = [unflatten(trees[p], [leaf_grads[k] for k in generated.arg_leaves[p]])
                  for p in self.positions or ()]
        return inputs, weight_grads


class _MethodReference:
    """A bound method in a pickle: its instance and name; ``method()`` finds the function
    on the class, under a derivative defined there by that name (``@grad def loss``)."""

    def __init__(self, instance, name):
        self.instance, self.name = instance, name

    def method(self):
        found = inspect.getattr_static(type(self.instance), self.name)
        if isinstance(found, Derivative):
            return types.MethodType(found.fn, self.instance)
        return getattr(self.instance, self.name)


_KEPT = weakref.WeakKeyDictionary()


class _PartialReference:
    """What a derivative of a ``functools.partial`` pickles its function as: the partial,
    whose wrapper with source (``front/partials.py``) is made again where unpickled."""

    def __init__(self, partial):
        self.partial = partial

    def method(self):
        return partial_as_function(self.partial)


def derivative_for(fn, key, make):
    """The derivative ``make()`` gives for ``fn`` (a function, a bound method, a Cell) and
    ``key`` (its mode and options), kept while ``fn`` lives, so that repeated calls
    (``vjp(f, x)`` in a loop) build the code once: a bound method's or a Cell's on its
    instance (``binding.kept_on``: the derivative holds the instance, so a cache beside
    it would keep it alive), a plain function's on the function (``_on_function``),
    another callable's while it can be weakly referenced (else it is made for this call
    only; an instance without a ``__dict__`` keeps its derivatives here, and lives as
    long as they do).  A derivative made for a new plain function object with the code,
    globals, closure contents and defaults of one made before (a lambda written inside
    a function called in a loop) starts with that one's builds, checked against its own
    closure cells (``_made_like_before``)."""
    instance = instance_of(fn)
    kept = kept_on(instance) if instance is not None else None
    key = (key, getattr(fn, "__func__", None))   # a bound method: a new object per access
    if kept is not None:
        if key not in kept:
            kept[key] = make()
        return kept[key]
    owner = instance if instance is not None else fn
    per_owner = _on_function(fn) if instance is None else None
    try:
        # a get first: setdefault makes a weak reference with a callback, and a dict
        per_owner = per_owner if per_owner is not None else _KEPT.get(owner)
        if per_owner is None:
            per_owner = _KEPT.setdefault(owner, {})
    except TypeError:
        return make()
    found = per_owner.get(key)
    if found is None:
        found = per_owner[key] = _made_like_before(fn, key, make)
    return found


#: per (mode and options, function identity: ``identity.function_identity``), the
#: builds of the latest derivative made for such a function (``_Builds``), most recently used last, at most
#: ``SAME_CODE_KEPT``: what a derivative of a new function object with the same code
#: starts with
_SAME_CODE = collections.OrderedDict()
SAME_CODE_KEPT = 64


class _Builds:
    """A derivative's builds (its own dicts: what it builds later is seen), the
    signature its calls follow (``Derivative._complete``) and the closure cells its
    guards read, holding the objects its function's identity names
    (so their ids are not those of new objects), never the function or the derivative:
    they go when the user drops them."""

    def __init__(self, made, fn, cells):
        self.variants, self.earlier, self.cells = made._variants, made._earlier, cells
        made._complete((), {}, bind=False)
        self.signature = made._signature    # (the code's: a fresh function's is the same)
        self.held = (fn.__globals__, fn.__defaults__, fn.__kwdefaults__,
                     [cell_value(c) for c in cells]) \
            if isinstance(fn, types.FunctionType) else fn._reuse_held


def _made_like_before(fn, key, make):
    """``make()``, given the builds of the derivative last made for a function object
    with ``fn``'s identity (``identity.function_identity``: a fresh lambda per call,
    ``grad`` of one, a lambda calling a lambda made per call) and
    options ``key``, their guards and free values moved to ``fn``'s closure cells
    (``guards.retargeted``): checked at each call against ``fn``'s own cells, globals
    and attributes as that derivative's were against its function's, so a value that
    differs, or changes later, builds again."""
    made = make()
    identity = function_identity(fn)
    if identity is None:
        return made
    shared = (key, identity[0])
    made._reuse = (shared, identity[1])
    earlier = _SAME_CODE.pop(shared, None)
    if earlier is not None:
        made.adopt(earlier, {id(old): new for old, new in zip(earlier.cells, identity[1])})
    built = _SAME_CODE[shared] = _Builds(made, fn, identity[1])
    made._reuse_held = built.held
    while len(_SAME_CODE) > SAME_CODE_KEPT:
        _SAME_CODE.popitem(last=False)
    return made


def _on_function(fn):
    """The derivatives kept for the plain function or derivative object ``fn`` (``jvp(grad(
    f))``), in its own ``__dict__`` (they hold ``fn``: kept beside it in a weak-keyed
    table, they would keep it alive for ever; on it, they go with it; never pickled), or
    None for anything else.  The table names its
    function: ``functools.wraps`` copies a ``__dict__`` into the wrapper, which then
    gets its own."""
    if not isinstance(fn, (types.FunctionType, Derivative)):
        return None
    found = fn.__dict__.get("__s2sgrad_derivatives__")
    if found is None or found[0]() is not fn:
        found = fn.__s2sgrad_derivatives__ = (weakref.ref(fn), {})
    return found[1]


def _located(exc, path, generated):
    """``exc`` as raised; a NotImplementedError of a runtime helper (a derivative it has no
    formula for at these values) as a DerivativeNotAvailableError naming the user's line."""
    origin = user_origin_of(exc, path, generated)
    if not isinstance(exc, NotImplementedError) or isinstance(exc, S2sgradError) or \
            origin is None:
        return exc
    what = str(exc)
    hint = None if "use " in what else (
        "use a lower-order derivative of this function (grad / value_and_grad, or jvp), or "
        "wrap the value in ops.stop_gradient if no derivative should flow")
    located = DerivativeNotAvailableError(what, origin, None, hint)
    located.__cause__ = exc
    for note in getattr(exc, "__notes__", ()):
        located.add_note(note)
    return located
