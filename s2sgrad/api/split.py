"""``vjp`` and ``jacrev``: reverse mode with the forward and adjoint sweeps apart.

``vjp(fn, *inputs, weights=None, has_aux=False)`` runs the forward sweep once and
gives ``(outputs, vjp_fn)`` (``(outputs, vjp_fn, aux)`` with ``has_aux``), as the
reference does; ``vjp_fn(cotangent)`` runs only the adjoint sweep, on the values the
forward sweep stored, and gives the gradients w.r.t. every input (a tuple), and
``(input gradients, weight gradients)`` with ``weights``.

``jacrev(fn, grad_position=0, has_aux=False)`` gives the Jacobian function, each
Jacobian shaped ``output.shape + input.shape``; tuples over outputs and positions as the
reference gives them.  It runs one forward sweep and one batched adjoint sweep whose
adjoints carry every basis cotangent first (``api/batched_rows.py``), or, where that
sweep has no rule for an operation or the batched choice says so (``not_batched`` says
why), the module's per-row jacobian: the forward sweep, then the adjoint sweep once per
output element, in one compiled function.

The code is ``compiler/pipeline_split.py``'s module (forward, backward, jacobian), cached and
compiled like ``grad``'s (``Derivative``'s checks, builds and argument handling):
``SplitFunction`` is what ``vjp`` runs, ``JacrevFunction`` what ``jacrev`` gives.
"""
import numpy as np

from ..compiler.pipeline_split import build_split
from ..errors import GradientArgumentError, GradientTypeError
from ..tensor import Tensor
from ..trees import flatten, is_tree, unflatten
from .batched_rows import PULLBACK_REASON, BatchedRows
from .arguments import (check_function, check_has_aux, check_positions, check_weights,
                        free_values, to_array)
from .call_plan import CallPlan, plan_key
from .composed import jacobian_of_derivative, vjp_of_derivative
from .derivative import Derivative, derivative_for
from .evaluated import vjp_inside
from .forward import derivative_rule
from .loading import load_function
from .nested import jacobian_as_function
from .results import float_dtype, wrap_output
from . import vmap_rows


def vjp(fn, *inputs, weights=None, has_aux=False):
    """``(outputs, vjp_fn)`` of ``fn`` at ``inputs`` (``(outputs[0], vjp_fn, aux)`` with
    ``has_aux``): see the module doc.  Every input is differentiated, so each must be a
    float, a float array or Tensor, or a tuple, list or dict of them."""
    fn = check_function(fn, "vjp")
    check_has_aux(has_aux)
    check_weights(weights)
    if not inputs:
        raise GradientArgumentError(
            "vjp needs the inputs to differentiate at: vjp(fn, x, ...) (every input is "
            "differentiated; close over the others: vjp(lambda x: fn(x, n), x))")
    if getattr(fn, "derivative_mode", None) is not None:
        return vjp_of_derivative(fn, inputs, weights, has_aux)
    for p, x in enumerate(inputs):
        _check_input(p, x)
    return split_function(fn, len(inputs), weights, has_aux).vjp(inputs)


def split_function(fn, count, weights, has_aux):
    """The SplitFunction ``vjp`` runs for ``fn``, ``count`` inputs and these options, kept
    while ``fn`` lives (so repeated ``vjp`` calls, in a loop, build once)."""
    key = ("split", count, _weights_key(weights), has_aux)
    return derivative_for(fn, key, lambda: SplitFunction(fn, tuple(range(count)), weights,
                                                         has_aux))


def _weights_key(weights):
    if weights is None:
        return None
    items = weights if isinstance(weights, (list, tuple)) else (weights,)
    return tuple(id(w) for w in items)


def jacrev(fn=None, grad_position=0, has_aux=False):
    """The Jacobian function of ``fn`` w.r.t. the arguments at ``grad_position`` (an int
    or a tuple of ints), by reverse mode: see the module doc.  A decorator too."""
    if fn is None:
        return lambda f: jacrev(f, grad_position, has_aux)
    fn = check_function(fn, "jacrev")
    if grad_position is None:
        raise TypeError("jacrev's grad_position must be an int or a tuple of ints, got None")
    check_positions(grad_position)
    check_has_aux(has_aux)
    if getattr(fn, "derivative_mode", None) is not None:
        return jacobian_of_derivative(fn, grad_position, has_aux)
    return JacrevFunction(fn, grad_position, has_aux)


def _check_input(position, value):
    """vjp's inputs are all differentiated: refuse one that is not floating point."""
    items = flatten(value)[0] if is_tree(value) else [value]
    for item in items:
        item = np.asarray(item) if isinstance(item, Tensor) else item
        if isinstance(item, (bool, np.bool_, int, np.integer)) or (
                isinstance(item, np.ndarray) and item.dtype.kind not in "fc"):
            what = (f"an array of dtype {item.dtype}" if isinstance(item, np.ndarray)
                    else f"{type(item).__name__} {item!r}")
            raise GradientTypeError(
                f"vjp differentiates every input, and input {position} is {what}; pass a "
                f"float value or array, or close over it: vjp(lambda x: fn(x, n), x)")


class SplitParts:
    """The three loaded functions of a split module, each a ``Compiled``; ``main`` names
    the one whose backend the owner reports (vjp: the forward; jacrev: the jacobian)."""

    def __init__(self, forward, backward, jacobian, main):
        self.forward, self.backward, self.jacobian = forward, backward, jacobian
        self.main = main

    @property
    def backend(self):
        return getattr(self, self.main).backend

    def runner(self, inputs):
        """What a ``CallPlan`` keeps to run the code: the parts themselves (their owner runs
        them one by one, each a ``Compiled``)."""
        return self

    @property
    def fallback_reason(self):
        return getattr(self, self.main).fallback_reason


class SplitFunction(Derivative):
    """What ``vjp`` runs: a derivative whose code is the split module
    (``compiler/pipeline_split.py``): ``vjp`` runs its forward sweep and gives the
    function running its adjoint sweep."""

    derivative_mode = "split"
    #: the part whose backend the object reports
    reported_part = "forward"

    def build_code(self, fn, bound_self, arg_types, trees):
        return build_split(fn, self.positions or (), self._weight_list(), self.has_aux,
                           bound_self, arg_types=arg_types, arg_trees=trees)

    def load_code(self, generated):
        """The module's forward, backward and jacobian functions (``SplitParts``)."""
        parts = [load_function(generated.forward_name, generated.source, name,
                               generated.free)
                 for name in (generated.forward_name, generated.backward_name,
                              generated.jacobian_name)]
        return SplitParts(*[c for c, _ in parts], self.reported_part), parts[-1][1]

    def _run_part(self, part, generated, args):
        """Run one loaded function; an error gets a note naming the user's line."""
        try:
            return part(*args)
        except Exception as exc:
            raise self._noted(exc, generated, args, part)

    def _start(self, args, kwargs):
        """Check and flatten the arguments, build the code (or, for arguments of the types
        of an earlier call, reuse what it found: its ``CallPlan``): (generated, parts,
        arrays and free values for the code, leaves, trees, Tensors among the values)."""
        key = None if kwargs else plan_key(args)
        plan = self._plans.get(key) if key is not None else None
        inputs = None
        if plan is not None:
            inputs = self._planned_inputs(plan, [to_array(a) for a in args])
        if inputs is not None:
            generated, leaves, trees = plan.generated, args, [None] * len(args)
        else:
            generated, arrays, leaves, trees = self._prepare(args, kwargs)
            inputs = [*arrays, *free_values(generated)]
            self._remember_plan(key, CallPlan, args, leaves, inputs)
        tensors = [a for a in leaves if isinstance(a, Tensor)] + [
            f.obj for f in generated.free if isinstance(f.obj, Tensor)]
        return generated, self._compiled, list(inputs), leaves, trees, tensors

    def _split_output(self, value, generated):
        """(differentiated output, its leaves, its tree, aux or None)."""
        aux = None
        if self.has_aux:
            aux = value[1] if len(value) == 2 else tuple(value[1:])
            value = value[0]
        leaves, tree = flatten(value) if is_tree(value) else ([value], None)
        if len(leaves) != generated.n_cotangents:   # cannot happen: the code gave it
            raise AssertionError("output leaves and cotangents differ")
        return value, leaves, tree, aux

    # ------------------------------------------------------------ vjp

    def vjp(self, inputs):
        generated, parts, args, leaves, trees, tensors = self._start(inputs, {})
        value, residuals = self._run_part(parts.forward, generated, args)
        residuals = _ready_for_numba(parts, args, list(residuals))
        out, out_leaves, out_tree, aux = self._split_output(value, generated)
        kept = {id(r) for r in residuals if isinstance(r, np.ndarray)}
        out = _unshared(out, kept)   # the caller may change the output; the residuals stay
        dtype = float_dtype(tensors) if tensors else None
        structure = _OutputStructure(out_leaves, out_tree, self.name)

        def vjp_fn(*cotangent):
            cts = structure.cotangents(cotangent[0] if len(cotangent) == 1 else cotangent)
            computed = self._run_part(parts.backward, generated, [*residuals, *cts])
            return self._gradients(generated, list(computed), leaves, trees)

        vjp_fn.__name__ = f"{self.name}_vjp"
        vjp_fn.__doc__ = (f"The cotangent of {self.name}'s output (shape and dtype "
                          "of the output) times the Jacobian, from the stored forward sweep.")
        out = wrap_output(out, dtype)
        if self.has_aux:
            return out, vjp_fn, wrap_output(_unshared(aux, kept), dtype)
        return out, vjp_fn

    def _gradients(self, generated, computed, leaves, trees):
        """A tuple with each input's gradient (in its structure), and with weights
        ``(input gradients, weight gradients)``."""
        inputs, weight_grads = self.shaped_gradients(generated, computed, leaves, trees)
        inputs = tuple(inputs)
        return inputs if self.weights is None else (inputs, tuple(weight_grads))


class JacrevFunction(SplitFunction):
    """The Jacobian function ``jacrev`` gives: call it like the original."""

    derivative_mode = "jacrev"
    name_suffix = "_jacrev"
    reported_part = "jacobian"

    def __init__(self, fn, grad_position, has_aux):
        super().__init__(fn, grad_position, None, has_aux)

    def _rows_of(self, generated, parts):
        """The ``BatchedRows`` of the split module ``generated`` (made once per build)."""
        rows = getattr(generated, "batched_rows", None)
        if rows is None:
            rows = generated.batched_rows = BatchedRows(generated, self.has_aux)
        return rows

    def _batched_last(self):
        rows = getattr(self._generated, "batched_rows", None) if self._last is not None \
            else None
        return rows is not None and rows.reason is None and rows.shapes

    @property
    def backend(self):
        """'numpy' where the last call ran the batched adjoint sweep, else the per-row
        code's backend (``Derivative.backend``)."""
        return "numpy" if self._batched_last() else super().backend

    @property
    def fallback_reason(self):
        """Why the last call did not run compiled by Numba: the batched sweep ran it
        (numpy), or the per-row code ran it ("Not batched: ..." first, then why that did
        not run compiled)."""
        if self._batched_last():
            return PULLBACK_REASON
        rows, reason = self.not_batched, super().fallback_reason
        if rows is None:
            return reason
        rows = rows if rows.startswith("Not batched") else f"Not batched: {rows}."
        return rows if reason is None else f"{rows} {reason}"

    @property
    def not_batched(self):
        """Why the last call ran one adjoint sweep per row (None: it ran the batched
        sweep, ``api/batched_rows.py``)."""
        rows = getattr(self._generated, "batched_rows", None) if self._last is not None \
            else None
        return rows.reason if rows is not None else None

    def __repr__(self):
        return (f"<s2sgrad jacrev of {self.name} (grad_position="
                f"{self.grad_position!r}), backend {self.backend!r}>")

    def bind_to(self, method, weights):
        return JacrevFunction(method, self.grad_position, self.has_aux)

    def rule_inside(self):
        return derivative_rule(self)

    def as_function(self, building):
        return jacobian_as_function(self, building)

    def compiled_picks(self, generated, parts):
        """(the jacobian part's ``Compiled``, the pick of this Jacobian from the code's
        result ``{r}`` = (value, (rows by input,)), what that returns) for a compiled loop
        calling the code (``api/compiled_call.py``); a str saying why it is not a pick."""
        if not isinstance(self.grad_position, int) or self.has_aux or \
                generated.n_cotangents != 1:
            return "its Jacobian is assembled in Python (a tuple of positions or outputs, " \
                   "or has_aux)"
        leaves = generated.arg_leaves[self.grad_position]
        slots = [k for (_, k), has in zip(generated.wrt, generated.computed) if has]
        if len(leaves) != 1 or slots != [leaves[0]]:
            return "its Jacobian is not one array the code returns (a container, or zeros)"
        # the rows (one per output element) shaped output shape + input shape
        return (parts.jacobian, ["{r}[1][0].reshape(np.shape({r}[0]) + {r}[1][0].shape[1:])"],
                "(value, (Jacobian rows,))")

    def __call__(self, *args, **kwargs):
        generated, parts, code_args, leaves, trees, tensors = self._start(args, kwargs)
        def outputs(code_args):      # the forward sweep as Python: no compile
            return self._split_output(parts.forward.py_func(*code_args)[0], generated)[1]
        batched = self._rows_of(generated, parts).run(code_args, outputs)
        if batched is None:            # one adjoint sweep per row (``not_batched`` says why)
            value, jacs = self._run_part(parts.jacobian, generated, code_args)
        else:
            value, jacs = batched
        out, out_leaves, out_tree, aux = self._split_output(value, generated)
        jacs = list(jacs)
        rows = sum(int(np.size(o)) for o in out_leaves)
        by_leaf = {}
        for (kind, k), has in zip(generated.wrt, generated.computed):
            jac = jacs.pop(0) if has else np.zeros((rows,) + np.shape(leaves[k]))
            by_leaf[k] = jac
        per_output, offset = [], 0
        for o in out_leaves:
            size, shape = int(np.size(o)), np.shape(o)
            per_position = []
            for p in self.positions:
                items = [_jacobian_block(by_leaf[k][offset:offset + size], shape, leaves[k])
                         for k in generated.arg_leaves[p]]
                per_position.append(unflatten(trees[p], items))
            offset += size
            per_output.append(per_position[0] if isinstance(self.grad_position, int) or
                              len(per_position) == 1 else tuple(per_position))
        result = per_output[0] if out_tree is None else tuple(per_output)
        if self.has_aux:
            dtype = float_dtype(tensors) if tensors else None
            return result, wrap_output(aux, dtype)
        return result


def _jacobian_block(rows, out_shape, like):
    """One output's rows of one input's Jacobian, shaped ``out_shape + like.shape``, in
    ``like``'s floating dtype and kind (a Tensor for a Tensor, a number for two numbers)."""
    base = np.asarray(like) if isinstance(like, Tensor) else like
    block = np.asarray(rows).reshape(tuple(out_shape) + np.shape(base))
    if isinstance(base, np.ndarray) and base.dtype.kind == "f":
        block = block.astype(base.dtype, copy=False)
    elif isinstance(base, np.floating):
        block = block.astype(base.dtype, copy=False)
    if block.ndim == 0:
        block = block[()]
    return Tensor(block) if isinstance(like, Tensor) else block


class _OutputStructure:
    """The differentiated output's leaves and tree, to check and flatten cotangents."""

    def __init__(self, leaves, tree, name):
        self.leaves, self.tree, self.name = leaves, tree, name

    def cotangents(self, given):
        if self.tree is None:
            if is_tree(given):
                raise GradientArgumentError(
                    f"{self.name} returns one output, so vjp_fn takes one cotangent of its "
                    f"shape {np.shape(self.leaves[0])}, got {type(given).__name__} of "
                    f"{len(given)}")
            items = [given]
        else:
            items, tree = flatten(given) if is_tree(given) else ([given], None)
            if len(items) != len(self.leaves):
                raise GradientArgumentError(
                    f"{self.name} returns {len(self.leaves)} outputs, so vjp_fn takes "
                    f"{len(self.leaves)} cotangents in the same structure (a tuple: "
                    f"vjp_fn((v1, v2)) or vjp_fn(v1, v2)), got {len(items)}")
        return [self._one(k, ct, out) for k, (ct, out) in enumerate(zip(items, self.leaves))]

    def _one(self, k, ct, out):
        which = "the cotangent" if len(self.leaves) == 1 else f"cotangent {k}"
        ct = np.asarray(ct) if isinstance(ct, Tensor) else ct
        shape = np.shape(out)
        kind = np.asarray(ct).dtype.kind if not isinstance(ct, (int, float)) else "f"
        if isinstance(ct, bool) or kind not in "fci" or (kind == "i" and np.ndim(ct) > 0):
            raise GradientTypeError(
                f"{which} has dtype {np.asarray(ct).dtype}, but it multiplies output "
                f"{k} of {self.name} ({_describe(out)}): pass a float value of that shape")
        if np.shape(ct) != shape:
            raise GradientArgumentError(
                f"{which} has shape {np.shape(ct)}, but output {k} of {self.name} has shape "
                f"{shape}: the cotangent has the output's shape and dtype")
        if isinstance(out, np.ndarray):
            dtype = out.dtype if out.dtype.kind in "fc" else np.float64
            return np.ascontiguousarray(ct, dtype=dtype)
        if isinstance(out, np.floating):
            return out.dtype.type(ct)
        return float(np.asarray(ct))


def _describe(value):
    if isinstance(value, np.ndarray):
        return f"{value.dtype}{list(value.shape)}"
    return type(value).__name__


def _unshared(value, kept):
    """``value`` with every array that is also a residual (``kept``: their ids) copied."""
    if isinstance(value, tuple):
        return tuple(_unshared(v, kept) for v in value)
    if isinstance(value, list):
        return [_unshared(v, kept) for v in value]
    if isinstance(value, np.ndarray) and id(value) in kept:
        return value.copy()
    return value


def _ready_for_numba(parts, args, residuals):
    """Residuals as the compiled backward takes them: an empty list (a tape of a loop
    that ran zero times) has no item to type it by, so it becomes an empty typed list of
    the item type the compiled forward sweep gave it."""
    if parts.forward.backend != "numba":
        return residuals
    empty = [i for i, r in enumerate(residuals) if isinstance(r, list) and not r]
    if not empty:
        return residuals
    import numba
    dispatcher = parts.forward._jitted
    signature = tuple(dispatcher.typeof_pyval(a) for a in args)
    compiled = dispatcher.overloads.get(signature)
    if compiled is None and len(dispatcher.overloads) == 1:
        compiled = next(iter(dispatcher.overloads.values()))
    if compiled is None:
        return residuals
    types_ = compiled.signature.return_type[1]
    for i in empty:
        residuals[i] = numba.typed.List.empty_list(types_[i].dtype)
    return residuals


#: what the front end does with a call written inside a differentiated function
#: (``compiler/front/lower_calls.made_inside``): a maker of a derivative object, or refused
jacrev.__s2sgrad_transform__ = "makes"
vjp.__s2sgrad_transform__ = "evaluates"
vjp.__s2sgrad_evaluate_inside__ = vjp_inside      # its code, inlined there


#: vmap of a jacfwd runs as the rows of this jacrev where they are fewer (``vmap_rows``,
#: which cannot import this module: the derivative objects import what imports it)
vmap_rows.REVERSE = jacrev
