"""Forward-mode entry points: ``jvp`` and ``jacfwd``, with the reference's semantics.

``jvp(fn, inputs, v, has_aux=False)`` gives ``(outputs, jvp_out)`` (and
``aux`` with ``has_aux``): the outputs of ``fn(*inputs)`` and their
directional derivatives along ``v``, computed by one run of generated
forward-mode code (``compiler/pipeline_forward.py``).  ``jacfwd(fn,
grad_position=0, has_aux=False)`` gives a function computing the Jacobian
(shape ``out.shape + in.shape``; a tuple over positions for a tuple
``grad_position``, a tuple over outputs for a function of several): one
batched sweep whose tangents carry the directions first, or generated code
that loops over the inputs' basis directions itself, compiled with the rest
(``JacfwdFunction`` says which runs a call).  The code is built once per argument signature, cached on
disk and run by the same backends as gradients (loops -> Numba, loop-free ->
numpy).  Arguments are checked as for ``grad``.  A ``jvp`` call like the last one of its
function (argument types, which tangents are exactly zero, backend) runs that call's plan
at once (``HotJvp``, kept on the function; ``call_plan.JvpPlan``).

``ForwardFunction`` is the derivative object of the forward-mode code (of a JVP, or of
a Jacobian's loop over directions), kept per function and options
(``forward_function``); ``JacfwdFunction`` is what ``jacfwd`` gives (of a function or of
a derivative object: ``jacfwd(grad(f))``); ``BatchedChoice`` which of the batched and the
per-direction code runs a call, for ``jacfwd`` and ``hessian`` alike; ``jacobian_backend``
what runs a Jacobian's loaded code (numpy where the auto policy says so).
"""
import types

import numpy as np

from ..backend import heap
from ..backend.numba_backend import UNDECIDED, backend_mode
from ..compiler.forward.batched import NotBatchable
from ..compiler.pipeline_forward import build_jvp
from ..errors import (GradientArgumentError, GradientTypeError, OutputStructureError,
                      UserCodeError)
from ..tensor import Tensor
from ..trees import flatten, is_tree, unflatten
from .arguments import (check_function, check_has_aux, check_positions, free_values, to_array,
                        with_article, zero_tangent)
from .call_plan import C_ALIGNED_WRITEABLE, CallPlan, JvpPlan, plan_key
from .derivative import HOT_JVP, Derivative, derivative_for
from .evaluated import jacobian_inside, jvp_inside
from .inside import jacobian_rule
from .nested import at_user_line, forward_as_function
from .results import float_dtype, like_outputs, wrap_output


JACOBIAN_LOOP_FREE_REASON = (
    "The function has no loops, so its forward-mode Jacobian runs as numpy calls, one pass "
    "per input direction: no compile. Set S2SGRAD_BACKEND=numba to compile it with Numba "
    "anyway.")


JACOBIAN_BATCHED_REASON = (
    "The Jacobian runs as one batched sweep of numpy calls (every tangent carries a batch "
    "of directions first), not one compiled pass per direction.")


class ForwardFunction(Derivative):
    """The forward-mode code of ``fn`` w.r.t. ``grad_position``: ``jvp_call`` runs a
    JVP, calling the object computes the Jacobian (``jacfwd``).  Bound as a method like
    every derivative (``bind_to``; ``JacfwdFunction.__get__``); no rule inside a
    differentiated function."""

    derivative_mode = "forward"

    def __init__(self, fn, grad_position, has_aux, jacobian, batched=False):
        self.jacobian = jacobian
        self.batched = batched and jacobian
        #: a JVP along a batch of tangents (``jvps_call``: vmap of a jvp over its tangents)
        self.tangent_batch = batched and not jacobian
        self.name_suffix = "_jacfwd" if jacobian else "_jvps" if batched else "_jvp"
        # a jvp keeps large arrays between calls
        self.by_size_class = not jacobian and not batched
        super().__init__(fn, grad_position, None, has_aux)

    def __repr__(self):
        what = "jacfwd" if self.jacobian else "jvp"
        return (f"<s2sgrad {what} of {self.name} (grad_position="
                f"{self.grad_position!r}{', has_aux=True' if self.has_aux else ''}), "
                f"backend {self.backend!r}>")

    def bind_to(self, method, weights):
        return ForwardFunction(method, self.grad_position, self.has_aux, self.jacobian,
                               self.batched or self.tangent_batch)

    def build_code(self, fn, bound_self, arg_types, trees):
        try:
            return build_jvp(fn, self.positions, self.has_aux, bound_self,
                             arg_types=arg_types, arg_trees=trees, jacobian=self.jacobian,
                             batched=self.batched or self.tangent_batch,
                             kept=not self.tangent_batch and self.kept_arrays(arg_types),
                             as_numpy=(self.batched or self.tangent_batch) and
                             backend_mode() != "numba")
        except UserCodeError as exc:      # in the generated code of a derivative object
            raise at_user_line(exc, fn) from None

    def rule_inside(self):
        if not self.jacobian or self.tangent_batch:
            return None
        return derivative_rule(JacfwdFunction(self))

    def as_function(self, building):
        if not self.jacobian:
            return super().as_function(building)
        return forward_as_function(self, building)

    def load_code(self, generated):
        compiled, path = super().load_code(generated)
        return jacobian_backend(compiled, generated), path

    # ------------------------------------------------------------ running

    def _run_forward(self, args, extra, key):
        """Check and flatten ``args`` (or, for arguments of the types of an earlier call,
        reuse what it found: its ``CallPlan`` under ``key``, the arguments' ``plan_key``),
        run the code with the free values and the leaves ``extra(arrays)`` after the
        arguments (their types must follow from the arguments'); gives (Generated,
        leaves, result, the float dtype of Tensor arguments or None)."""
        plan = self._plans.get(key) if self._plans and key is not None else None
        if plan is not None:
            arrays = [to_array(a) for a in args] if plan.tensor_args else args
            result = self._run_plan(plan, arrays, extra(arrays))
            if result is not None:
                dtype = float_dtype([a for a in args if isinstance(a, Tensor)]) \
                    if plan.tensor_args else None
                return plan.generated, args, result, dtype
        generated, arrays, leaves, _ = self._prepare(args, {})
        inputs = [*arrays, *free_values(generated), *extra(arrays)]
        result = self._run(generated, inputs)
        if self.jacobian or self.tangent_batch:
            self._remember_plan(key, CallPlan, args, leaves, inputs)
        else:
            self._remember_plan(key, JvpPlan, args, leaves, inputs, key, self.has_aux)
        tensors = [a for a in leaves if isinstance(a, Tensor)]
        return generated, leaves, result, (float_dtype(tensors) if tensors else None)

    def jvp_call(self, args, tangents):
        """``(outputs, jvp_out)`` or ``(outputs, jvp_out, aux)`` at ``args`` along
        ``tangents`` (one per argument, in the arguments' structures)."""
        def tangent_leaves(arrays):
            out = []
            for p in self.positions:
                out += _tangent_leaves(args[p], tangents[p], p)
            return out
        # the arguments' types fix those of the tangent leaves too (``_tangent_leaves``)
        _, _, (value, tangent), dtype = self._run_forward(args, tangent_leaves,
                                                          plan_key(args))
        first = value[0] if self.has_aux else value
        tangent = like_outputs(tangent, first)
        aux = (_aux(value),) if self.has_aux else ()
        if dtype is None:         # no Tensor arguments: nothing is wrapped
            return (first, tangent, *aux)
        return tuple(wrap_output(part, dtype) for part in (first, tangent, *aux))

    def jvps_call(self, args, tangents):
        """``(outputs, tangents)`` at ``args`` along a batch of tangents (``tangents``: per
        differentiated position an array of shape ``(n,) + the argument's shape``, row
        ``k`` its ``k``-th tangent): the output tangents carry the batch first.  Arrays
        and numbers only (``api/vmap_jvp.py`` checks)."""
        def tangent_leaves(arrays):
            out = []
            for p, t in zip(self.positions, tangents):
                dtype = arrays[p].dtype if isinstance(arrays[p], np.ndarray) else np.float64
                out.append(numba_ready(np.asarray(t), dtype))
            return out
        generated, _, (value, tangent), _ = self._run_forward(args, tangent_leaves,
                                                              plan_key(args))
        return value, tangent

    def __call__(self, *args, **kwargs):
        if not self.jacobian:
            raise TypeError("call s2sgrad.jvp(fn, inputs, v) for a Jacobian-vector product")
        args = self._complete(args, kwargs)
        generated, leaves, (value, columns), dtype = self._run_forward(
            args, lambda arrays: [], plan_key(args))
        first = value[0] if self.has_aux else value
        jac = _jacobian(first, list(columns), generated, leaves, self.positions,
                        self._trees_of(args), isinstance(self.grad_position, int),
                        generated.batched)
        jac = wrap_output(jac, dtype)
        if self.has_aux:
            return jac, wrap_output(_aux(value), dtype)
        return jac

    def _trees_of(self, args):
        return [flatten(a)[1] if is_tree(a) else None for a in self._complete(args, {})]


def jacobian_backend(compiled, generated):
    """``compiled`` (the loaded code of a forward-mode Jacobian, ``generated``'s) run as
    numpy where the auto policy says so: a batched sweep of loop-free code (any backend
    but python) or of code with loops (auto), and the per-direction passes of loop-free
    code (auto: the loop over the directions is the only loop, and numpy's own kernels
    run each pass, as for the function's gradient, with no compile).  A batched sweep run
    as numpy sets glibc's malloc thresholds as a compiled call does (``backend/heap.py``):
    its batches (ht's (26, 544, 3) tangents) are fresh arrays over the mmap threshold
    every call, 200 page faults a call on ht (2.4 ms against 3.1 ms) where nothing
    compiled ran before in the process."""
    batched = generated.batched and (not generated.loops or backend_mode() == "auto")
    if batched:         # each call makes batches of the sweep's size: from freed memory
        heap.keep_freed_memory()
    if compiled.backend != UNDECIDED:
        return compiled
    if batched:
        compiled._use_python(JACOBIAN_BATCHED_REASON, backend="numpy")
    elif not generated.loops and backend_mode() == "auto":
        compiled._use_python(JACOBIAN_LOOP_FREE_REASON, backend="numpy")
    return compiled


def _aux(value):
    """What ``has_aux`` returns beside the derivative: the second output, or the tuple of
    the outputs after the first when there are more."""
    rest = tuple(value[1:])
    return rest[0] if len(rest) == 1 else rest


def _tangent_leaves(arg, tangent, position):
    """The leaves of the tangent ``tangent`` of argument ``arg``, checked against its
    structure and shapes, in the argument's dtype."""
    if type(arg) is np.ndarray and type(tangent) is np.ndarray and arg.shape == tangent.shape:
        return [numba_ready(tangent, arg.dtype)]
    if type(arg) is float and type(tangent) in (float, int):
        return [float(tangent)]
    arg_leaves, arg_tree = flatten(arg) if is_tree(arg) else ([arg], None)
    t_leaves, t_tree = flatten(tangent) if is_tree(tangent) else ([tangent], None)
    if arg_tree != t_tree:
        raise GradientArgumentError(
            f"v[{position}] does not have the structure of inputs[{position}] "
            f"({_kind(tangent)} for {_kind(arg)}); pass one tangent per input, shaped "
            "like it")
    out = []
    for a, t in zip(arg_leaves, t_leaves):
        a, t = to_array(a), to_array(t)
        if isinstance(t, (bool, np.bool_)) or not isinstance(
                t, (int, float, np.number, np.ndarray)):
            raise GradientTypeError(
                f"v[{position}] is {with_article(type(t).__name__)}; a tangent is a float, a float "
                "array or a Tensor shaped like its input")
        if np.shape(a) != np.shape(t):
            raise GradientArgumentError(
                f"v[{position}] has shape {np.shape(t)} but inputs[{position}] has shape "
                f"{np.shape(a)}; each tangent must have its input's shape")
        if isinstance(a, np.ndarray):
            out.append(numba_ready(np.asarray(t), a.dtype))
        elif isinstance(a, np.floating):
            out.append(a.dtype.type(t))
        else:
            out.append(float(t))
    return out


def numba_ready(tangent, dtype):
    """An array tangent as the code takes it: of its input's ``dtype``, C-ordered, aligned
    and writeable (copied if not), so that Numba sees one type for every tangent of an
    input and the plan key of the inputs alone fixes the types the code runs on."""
    if tangent.dtype == dtype and \
            tangent.flags.num & C_ALIGNED_WRITEABLE == C_ALIGNED_WRITEABLE:
        return tangent
    return np.array(tangent, dtype=dtype, order="C")


def _kind(value):
    return type(value).__name__


def _jacobian(output, columns, generated, leaves, positions, trees, single, batched=False):
    """Per output (a tuple for several, nested as the output is), per position (a tuple
    for a tuple grad_position), the Jacobian block of shape ``out.shape + in.shape``.
    ``columns``: the output tangent of each direction, or with ``batched`` of each block
    of directions (the directions first)."""
    sizes = [int(np.size(to_array(leaves[k]))) for k in generated.wrt]
    shapes = [np.shape(to_array(leaves[k])) for k in generated.wrt]

    def blocks(out_index, like):
        cols = [c if out_index is None else _pick(c, out_index) for c in columns]
        out_shape = np.shape(like)
        dtype = np.result_type(np.asarray(like).dtype, np.float32) if \
            isinstance(like, (np.ndarray, np.generic)) else np.float64
        if batched and cols:
            joined = np.concatenate([np.asarray(c, dtype=dtype) for c in cols], axis=0)
            stacked = np.moveaxis(joined.reshape((-1,) + out_shape), 0, -1)
        else:
            stacked = (np.stack([np.asarray(c, dtype=dtype) for c in cols], axis=-1) if cols
                       else np.zeros(out_shape + (0,), dtype=dtype))
        per_leaf, start = [], 0
        for size, shape in zip(sizes, shapes):
            block = stacked[..., start:start + size].reshape(out_shape + shape)
            start += size
            per_leaf.append(block if block.ndim else float(block[()]))
        per_position, i = [], 0
        for p in positions:
            n = len(generated.arg_leaves[p])
            per_position.append(unflatten(trees[p], per_leaf[i:i + n]) if trees[p] is not None
                                else per_leaf[i])
            i += n
        return per_position[0] if single else tuple(per_position)

    def nested(value, index):
        """The blocks of each output, in the output's nesting (a tuple of tuples for
        ``value_and_grad`` of ``value_and_grad``)."""
        if isinstance(value, (tuple, list)):
            return tuple(nested(item, index + (i,)) for i, item in enumerate(value))
        return blocks(index or None, value)
    return nested(output, ())


def _pick(column, index):
    for i in index:
        column = column[i]
    return column


# ---------------------------------------------------------------- public functions

def forward_function(fn, grad_position, has_aux, jacobian, batched=False):
    """The ForwardFunction of ``fn`` for these options, kept while ``fn`` lives (so repeated
    ``jvp`` calls build once; a bound method: while its instance lives)."""
    key = ("forward", grad_position, has_aux, jacobian, batched, backend_mode())
    return derivative_for(fn, key, lambda: ForwardFunction(fn, grad_position, has_aux,
                                                           jacobian, batched))


def jvp(fn, inputs, v, has_aux=False):
    """The Jacobian-vector product of ``fn`` at ``inputs`` along ``v``.

    ``inputs`` and ``v``: a Tensor (array, float) or a tuple/list of them, ``v`` with one
    tangent per input of the input's shape.  Returns ``(outputs, jvp_out)``, the
    tangents in the outputs' structure; with ``has_aux=True``, ``fn`` returns
    ``(out, aux...)``, only ``out`` is differentiated and the result is
    ``(out, jvp_out, aux)``.
    """
    fn = check_function(fn, "jvp")
    args = tuple(inputs) if isinstance(inputs, (tuple, list)) else (inputs,)
    tangents = tuple(v) if isinstance(v, (tuple, list)) else (v,)
    hot = getattr(fn, "__dict__", _NO_ENTRIES).get(HOT_JVP)
    if hot is not None and hot.fn is fn and hot.has_aux is has_aux and \
            hot.mode == backend_mode():
        result = hot.call(hot.forward, args, tangents)   # the last call's plan, tested
        if result is not None:
            return result
    check_has_aux(has_aux)
    if len(args) != len(tangents):
        raise GradientArgumentError(
            f"jvp got {len(args)} input{'s' if len(args) != 1 else ''} but {len(tangents)} "
            f"tangent{'s' if len(tangents) != 1 else ''} in v; pass one tangent per input, "
            "shaped like it")
    if not args:
        raise GradientArgumentError("jvp needs at least one input to differentiate")
    positions = tuple(range(len(args)))
    moving = tuple(p for p in positions if not zero_tangent(args[p], tangents[p]))
    # an input whose tangent is all zeros moves nothing: the code built without its
    # tangent (kmeans' jvp of grad along (ones, zeros): no product of the zero tangent);
    # decided at every call (the hot call's tests too), so no result depends on an
    # earlier call's tangents
    moving = moving or positions[:1]
    f = forward_function(fn, moving, has_aux, False)
    result = f.jvp_call(args, tangents)
    _keep_hot(fn, has_aux, f, moving, args)
    return result


def jvp_of_tangents(fn, primals, tangents, positions=None):
    """The tangents of ``fn``'s output at ``primals`` (a tuple of arrays and numbers)
    along a batch of tangents (per primal an array ``(n,) + its shape``), batch first,
    by one batched sweep (``ForwardFunction.jvps_call``): what ``vmap`` of a function
    calling ``jvp`` with only its tangents mapped runs (``api/vmap_jvp.py``).  None where
    the code has an operation without a batched rule (kept per argument signature, so it
    is not built again).  ``positions``: the primals ``tangents`` are for (default: all)."""
    positions = tuple(range(len(primals))) if positions is None else tuple(positions)
    forward = forward_function(fn, positions, False, False, True)
    return batched_tangents(forward, primals, tangents)


def batched_tangents(forward, primals, tangents):
    """``forward.jvps_call``'s tangents (a ``ForwardFunction`` built batched), or None
    where its code has an operation without a batched rule: remembered per argument
    signature on ``forward``, so that build is not tried again."""
    refused = forward.__dict__.setdefault("_refused_signatures", set())
    key = plan_key(primals)
    if key in refused:
        return None
    try:
        return forward.jvps_call(primals, tangents)[1]
    except NotBatchable:
        refused.add(key)
        return None


#: what ``jvp`` reads in place of the ``__dict__`` of an object without one
_NO_ENTRIES = {}


class HotJvp:
    """The last ``jvp`` call of ``fn`` with ``has_aux`` under backend ``mode``: its
    ``ForwardFunction`` (``forward``) and the ``JvpPlan.hot_call`` (``call``) of the
    plan it ran, which a later call runs at once when its arguments and tangents pass
    the plan's tests (so ``forward_function``, ``zero_tangent`` over every tangent,
    ``plan_key`` and the tangents' conversion are skipped)."""

    __slots__ = ("fn", "has_aux", "mode", "forward", "call")

    def __init__(self, fn, has_aux, mode, forward, call):
        self.fn, self.has_aux, self.mode, self.forward, self.call = \
            fn, has_aux, mode, forward, call


def _keep_hot(fn, has_aux, forward, moving, args):
    """After a full ``jvp`` call: its hot call kept on ``fn`` (a plain function or a
    ``Derivative``, whose ``__dict__`` is its own, left out of its pickle; not a bound
    method, made anew at each access), where its plan has one."""
    if not (type(fn) is types.FunctionType or isinstance(fn, Derivative)):
        return
    plan = forward._plans.get(plan_key(args)) if forward._plans else None
    call = plan.hot_call_for(moving, len(args)) if isinstance(plan, JvpPlan) else None
    if call is None:
        fn.__dict__.pop(HOT_JVP, None)
    else:
        fn.__dict__[HOT_JVP] = HotJvp(fn, has_aux, backend_mode(), forward, call)


def jacfwd(fn, grad_position=0, has_aux=False):
    """A function computing the Jacobian of ``fn`` by forward mode.

    Called with ``fn``'s arguments it returns the Jacobian, of shape ``out.shape +
    in.shape``: a tuple over positions for a tuple ``grad_position``, a tuple over
    outputs when ``fn`` returns several; with ``has_aux=True`` ``(jacobian, aux)``, the
    Jacobian of the first output.  The generated code runs every basis direction of
    the inputs in one batched sweep, or one forward-mode pass per direction in one
    compiled loop (``JacfwdFunction``).
    """
    fn = check_function(fn, "jacfwd")
    check_has_aux(has_aux)
    if grad_position is None:
        raise TypeError("jacfwd's grad_position must be an int or a tuple of ints, not None")
    check_positions(grad_position)
    f = forward_function(fn, grad_position, has_aux, True)
    # a derivative object too (jacfwd(grad(f)), jacfwd(jacrev(f))): its code as a plain
    # function, batched where jacfwd of that function would be
    return JacfwdFunction(f, forward_function(fn, grad_position, has_aux, True, True))


class JacfwdFunction:
    """What ``jacfwd`` returns: call it with ``fn``'s arguments.  A new one per ``jacfwd``
    call, running the ``ForwardFunction``s kept for ``fn``'s options: ``batched`` (all
    directions in one sweep) or ``forward`` (one pass per direction, compiled where it
    loops), as ``BatchedChoice`` (``choice``) decides per call signature; ``not_batched``
    (the choice's): why the batched code does not run a signature; ``last``: the one
    that ran the last call."""

    #: a derivative object: the front end never reads the function it wraps
    derivative_mode = "jacfwd"
    #: JVPs along a batch of tangents (``api/vmap_jacobian.py``: vmap of a Jacobian)
    jvp_of_tangents = staticmethod(jvp_of_tangents)

    def __init__(self, forward, batched=None):
        self.forward, self.batched = forward, batched
        self.choice = BatchedChoice()
        self.not_batched = self.choice.not_batched
        self.last = None
        self.__name__ = forward.name + "_jacfwd"
        self.__wrapped__ = forward.fn

    def __call__(self, *args, **kwargs):
        self.last = self.forward
        if self.batched is not None:
            ran, result = self.choice.run(self.batched, args, kwargs)
            if ran:
                self.last = self.batched
                return result
        return self.forward(*args, **kwargs)

    def __get__(self, instance, owner=None):
        """``jacfwd`` on a method binds as ``grad`` and ``jacrev`` do: ``obj.jac`` is the
        Jacobian of the method bound to ``obj``, built once per instance and kept on it
        (``Derivative.__get__``, ``binding``)."""
        if instance is None:
            return self
        bound = self.forward.__get__(instance, owner)
        if bound.__dict__.get("_as_jacfwd") is None:
            batched = self.batched.__get__(instance, owner) if self.batched else None
            bound._as_jacfwd = JacfwdFunction(bound, batched)
        return bound._as_jacfwd

    @property
    def __s2sgrad_custom_vjp__(self):
        return self.forward.__s2sgrad_custom_vjp__

    def __s2sgrad_inline_call__(self, arg_types, primal=False):
        """The Jacobian's code for a call inside a function being differentiated or
        jitted (``api/evaluated.py``'s ``jacobian_inside``), or None: its rule."""
        return jacobian_inside(self.forward, arg_types)

    def as_function(self, building):
        """The Jacobian as a plain function (``api/nested.py``)."""
        return self.forward.as_function(building)

    def _signature_target(self):
        return self.forward._signature_target()

    @property
    def source(self):
        return (self.last or self.forward).source

    @property
    def backend(self):
        return (self.last or self.forward).backend

    @property
    def fallback_reason(self):
        if self.last is self.forward and self.not_batched:
            return self.choice.reason()
        return (self.last or self.forward).fallback_reason

    def __repr__(self):
        return repr(self.last or self.forward)


class BatchedChoice:
    """Which of a batched derivative (``batched``: a Derivative whose code sweeps every
    direction at once, ``generated.batched``) and its per-direction twin runs a call:
    the batched sweep, where every operation has a batched rule, as numpy; with loops,
    under the auto backend where an argument holds at least ``LOOP_BATCH_NUMBERS``
    numbers, and compiled by Numba under ``S2SGRAD_BACKEND=numba`` (which runs loop-free
    code per direction): ``_check``.  ``not_batched``: per call signature (``plan_key``,
    whether an argument is that large, the backend), why the batched code does not run
    it; ``batched_keys``: the signatures it runs.  Used by ``jacfwd``
    (``JacfwdFunction``) and ``hessian`` (``api/higher.py``)."""

    def __init__(self):
        self.not_batched = {}
        self.batched_keys = set()

    def run(self, batched, args, kwargs):
        """(True, ``batched(*args, **kwargs)``) where the batched code runs this call, else
        (False, None): the caller runs its per-direction code."""
        key = self.key(args) if not kwargs else None
        if key in self.not_batched:
            return False, None
        try:
            if key is None or key not in self.batched_keys:
                self._check(batched, args, kwargs, key)
            return True, batched(*args, **kwargs)
        except NotBatchable as exc:   # an operation without a batched rule
            self.not_batched[key] = str(exc)
            return False, None

    @staticmethod
    def key(args):
        """The signature ``run`` decides per: (``plan_key``, whether an argument holds
        ``LOOP_BATCH_NUMBERS`` numbers, the backend)."""
        return plan_key(args), _largest(args) >= LOOP_BATCH_NUMBERS, backend_mode()

    def reason(self):
        """Why the last signature refused ran per direction (None: none was refused)."""
        if not self.not_batched:
            return None
        return "Not batched: " + next(reversed(self.not_batched.values())) + "."

    def _check(self, batched, args, kwargs, key):
        """Build the batched code for these arguments (``NotBatchable`` where an operation
        has no batched rule) and refuse it where the per-direction sweeps are the faster
        choice: loop-free code under ``S2SGRAD_BACKEND=numba``; code with loops over
        small arrays (no argument of ``LOOP_BATCH_NUMBERS`` numbers) under the auto
        policy, where numpy's per-call cost on a batch would outweigh Numba's compiled
        passes (module doc of ``compiler/forward/batched.py``); code calling a helper
        once per direction (``rt.per_direction``) but under ``S2SGRAD_BACKEND=python``
        (on sort's adjoint, 300 rows: 5.7 ms batched, 1.2 ms per row compiled)."""
        generated = batched._prepare(args, kwargs)[0]
        mode = backend_mode()
        if not generated.loops and mode == "numba":
            raise NotBatchable("S2SGRAD_BACKEND=numba compiles one pass per direction of "
                               "loop-free code")
        if mode != "python" and "rt.per_direction(" in generated.source:
            raise NotBatchable("an adjoint helper without a batched rule runs once per "
                               "direction in the batched code (rt.per_direction): the "
                               "per-direction sweeps compile with Numba")
        if generated.loops and mode == "auto" and not (key is not None and key[1]):
            raise NotBatchable(f"loops over small arrays (no argument holds "
                               f"{LOOP_BATCH_NUMBERS} numbers): the per-direction sweeps "
                               "compile with Numba")
        self.batched_keys.add(key)


#: the numbers the largest argument must hold for a batched sweep of code with loops to run
#: as numpy (auto backend), from measurements (README, "Which mode"): on two loops of 2 x 2
#: rotations applied to n points (8 directions) the batched numpy sweep took 1.3x the
#: per-direction passes compiled by Numba at 8 numbers, 0.72x at 128 and 0.33x at 1,024;
#: on GradBench's ht (11,968 numbers) 0.6x
LOOP_BATCH_NUMBERS = 128


def _largest(args):
    """How many numbers the largest array among ``args`` (and their leaves) holds."""
    sizes = [_largest(flatten(a)[0]) if is_tree(a) else
             int(np.size(to_array(a))) if hasattr(a, "shape") else 1 for a in args]
    return max(sizes, default=1)


def derivative_rule(derivative):
    """The rule of a derivative object (not a plain gradient) called inside a function
    being differentiated: ``api/inside.py``'s ``jacobian_rule``, its Jacobian and JVP by
    forward mode over its generated code."""
    return jacobian_rule(
        derivative, lambda floats: JacfwdFunction(forward_function(derivative, floats,
                                                                   False, True)),
        lambda floats: forward_function(derivative, floats, False, False))


#: what the front end does with a call written inside a differentiated function
#: (``compiler/front/lower_calls.made_inside``): a maker of a derivative object, or refused
jacfwd.__s2sgrad_transform__ = "makes"
jvp.__s2sgrad_transform__ = "evaluates"
jvp.__s2sgrad_vmap_tangents__ = jvp_of_tangents
#: its code, inlined where it is called inside (``api/evaluated.py``)
jvp.__s2sgrad_evaluate_inside__ = jvp_inside


__all__ = ["jvp", "jacfwd", "ForwardFunction", "JacfwdFunction", "OutputStructureError"]
