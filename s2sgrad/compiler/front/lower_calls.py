"""Lowering calls: folding calls on constants, finding what a call reaches (a rule's
primitive, an s2sgrad op, a Cell, a custom rule, the user's own or a local
function) and inlining the body of what has no rule (``CallLowering``)."""
import functools
import inspect
import math

import gast
import numpy as np

from ... import primitives as prims
from ... import runtime as rt
from ...dtype import dtype_to_numpy
from ...errors import DerivativeCompositionError, UnsupportedConstructError
from ...nn import Cell
from ...ops import stop_gradient
from ...rules import lookup
from ...rules.jvp_registry import registered as jvp_registered
from ..ir import Const, DictAtom, Seq, Var
from ..syntax.nodes import call as call_node
from ..syntax.source import source_segment, unsupported
from . import literals
from .custom import lower_custom_call
from .derivative_calls import inlined_derivative
from .evaluations import Pullback, evaluated_inside
from .frontend import is_user_code, parse_function
from .jumps import structured_body
from .lifting import Lifted, Partial, lifted_transform, partial_of
from .partials import is_partial, partial_as_function
from .lower_expressions import DICT_VIEWS
from .lower_state import Frame, LocalFunction
from .spellings import forward_expression
from .stacking import canonical_join
from .ufunc_outer import canonical_outer

#: the most pieces of an ``np.split`` written as slices (each a statement of its own)
SPLIT_SLICES = 16
#: ``inline_of``'s answer for an object compiled as an opaque call
OPAQUE = object()


#: calls folded while building when every argument is a plain constant
FOLDABLE = {len, int, float, bool, abs, min, max, round, isinstance, tuple, str, range,
            math.sqrt, math.exp, math.log, getattr, hasattr, type, dtype_to_numpy, np.dtype,
            np.issubdtype}


class CallLowering:
    """Calls -> Ops, or the inlined callee's Ops.  Reads and writes ``state``
    (``LoweringState``: the inlining stacks, paths, ops), reads ``types``
    (``TypeInfo``), captures with ``atoms``, appends Ops with ``emitter``; lowers the
    arguments with ``expressions`` and an inlined body with the statement lowerer given
    to ``connect``."""

    def __init__(self, state, types, atoms, emitter, expressions):
        self.state = state
        self.types = types
        self.atoms = atoms
        self.emitter = emitter
        self.expressions = expressions
        self.statements = None

    def connect(self, statements):
        """The lowerer of an inlined callee's body (``StatementLowering``)."""
        self.statements = statements

    def lower_call(self, frame, node, hint):
        if any(k.arg is None for k in node.keywords):
            raise unsupported(frame, node, "**kwargs in a call", "pass each keyword by "
                              "name: f(x, axis=0)")
        # a method call on a run-time value: x.sum(axis=0)
        if isinstance(node.func, gast.Attribute):
            receiver = self.expressions.lower_expr(frame, node.func.value)
            if isinstance(receiver, Var):
                return self.expressions.method_call(frame, node, receiver, hint)
            if isinstance(receiver, DictAtom) and node.func.attr in DICT_VIEWS and \
                    not node.args and not node.keywords:
                return DICT_VIEWS[node.func.attr](receiver.pairs)
        func = self.expressions.lower_expr(frame, node.func)
        words = _parameter_words(func.value, node) if isinstance(func, Const) else {}
        self.state.words.update(words)   # a temporary passed in may be named after its parameter
        try:
            args = tuple(self.expressions.splice(frame, node.args))
            kwargs = {k.arg: self.expressions.lower_expr(frame, k.value) for k in node.keywords}
        finally:
            for arg in words:
                self.state.words.pop(arg, None)
        if not isinstance(func, Const):
            raise unsupported(frame, node, "a call of a value computed at run time",
                              "call functions by their names (a function chosen at run "
                              "time cannot be differentiated)")
        return self.call_object(frame, node, func.value, args, kwargs, hint)

    def lower_lambda(self, frame, node, hint):
        fdef = gast.FunctionDef(name="lambda", args=node.args,
                                body=[gast.copy_location(gast.Return(value=node.body), node)],
                                decorator_list=[], returns=None, type_comment=None,
                                type_params=[])
        return self.local_function(frame, gast.copy_location(fdef, node))

    def inline_of(self, obj):
        """What a derivative transform reads in place of ``obj`` (a vmap's differentiable
        loop), None, or ``OPAQUE`` where compiling (not differentiating) a vmap that has
        none (of a Jacobian object): it is then called as it is, its batched form."""
        try:
            return getattr(obj, "__s2sgrad_inline__", None)
        except DerivativeCompositionError:
            if not self.state.primal:
                raise
            return OPAQUE

    def split_as_slices(self, frame, node, args, kwargs):
        """``np.split(x, k)`` (k an int written in the code, at most ``SPLIT_SLICES``; along
        the first axis; ``x`` of a known rank) as the list of its k slices
        ``x[j * n:(j + 1) * n]``, ``n = rt.section_length(x, k)`` (numpy's error where the
        pieces would not be equal): LSTM gates written ``f, i, o, c = np.split(gates, 4)``
        are then read in place, as slices are, by the fused loops (10.5 against 4.7 ms
        for the slices).  None: the call as it is (its rule)."""
        if len(args) != 2 or not isinstance(args[1], Const) or \
                type(args[1].value) is not int or not 1 <= args[1].value <= SPLIT_SLICES or \
                set(kwargs) - {"axis"} or (kwargs and not (
                    isinstance(kwargs["axis"], Const) and kwargs["axis"].value == 0)) or \
                not isinstance(args[0], Var) or not self.types.ndim_of(args[0]):
            return None
        x, k = args[0], args[1].value
        operands = (x, args[1])
        expr = self.atoms.call_expr(literals.reference_node(rt.section_length, self.atoms),
                                    operands, {})
        n = self.emitter.emit(frame, node, rt.section_length, operands, {}, expr, "n_piece")
        x_key, n_key = self.state.names.fresh("split_x"), self.state.names.fresh("split_n")
        frame.env[x_key], frame.env[n_key] = x, n

        def bound(j):
            if j == 0:
                return None
            n_node = gast.Name(id=n_key, ctx=gast.Load(), annotation=None, type_comment=None)
            return n_node if j == 1 else gast.BinOp(
                left=gast.Constant(value=j, kind=None), op=gast.Mult(), right=n_node)
        try:
            pieces = []
            for j in range(k):
                piece = gast.Subscript(
                    value=gast.Name(id=x_key, ctx=gast.Load(), annotation=None,
                                    type_comment=None),
                    slice=gast.Slice(lower=bound(j), upper=bound(j + 1), step=None),
                    ctx=gast.Load())
                for part in gast.walk(piece):     # (the user's line, for comments)
                    gast.copy_location(part, node)
                pieces.append(self.expressions.lower_expr(frame, piece))
        finally:
            del frame.env[x_key], frame.env[n_key]
        return Seq(tuple(pieces), "list")

    def local_function(self, frame, node):
        """A def/lambda inside the function: its defaults are evaluated where it is defined."""
        if node.decorator_list:
            raise unsupported(frame, node, "a decorated local function",
                              "define it at module level")
        local = LocalFunction(node, frame)
        local.defaults = [self.expressions.lower_expr(frame, d) for d in node.args.defaults]
        return Const(local)

    def call_object(self, frame, node, obj, args, kwargs, hint):
        if obj is stop_gradient:
            return self.stop_gradient(frame, node, args, hint)
        folded = self.folded_call(frame, node, obj, args, kwargs)
        if folded is not None:
            return folded
        if isinstance(obj, (LocalFunction, Lifted, Partial, Pullback)) or \
                obj is functools.partial:
            made = self.made_here_call(frame, node, obj, args, kwargs, hint)
            if made is not None:
                return made
        if is_partial(obj):     # a functools.partial made outside: what it calls
            return self.outside_partial_call(frame, node, obj, args, kwargs, hint)
        transparent = getattr(obj, "__s2sgrad_transparent__", None)
        if transparent is not None:     # s2sgrad.jit(f): a call of f, lowered as one
            return self.call_object(frame, node, transparent, args, kwargs, hint)
        inline = self.inline_of(obj)
        if inline is OPAQUE:        # compiled, not differentiated: called as it is
            return self.opaque_call(frame, node, obj, args, kwargs, hint)
        if inline is not None:      # a vmap: differentiated through its differentiable loop
            return self.inline(frame, node, inline, args, kwargs, None)
        if getattr(obj, "__s2sgrad_transform__", None) == "evaluates":
            # jvp, hvp, vjp: their derivative code, inlined (front/evaluations.py)
            return evaluated_inside(self, frame, node, obj, args, kwargs)
        if getattr(obj, "__s2sgrad_transform__", None) is not None:
            return made_inside(frame, node, obj, args, kwargs)
        inlined = inlined_derivative(self, frame, node, obj, args, kwargs)
        if inlined is not None:     # a gradient object: its code, lowered as a callee
            return inlined
        if self.state.primal and getattr(obj, "derivative_mode", None) is not None:
            # compiled, not differentiated: a derivative object not inlined is called
            return self.opaque_call(frame, node, obj, args, kwargs, hint)
        custom = getattr(obj, "__s2sgrad_custom_vjp__", None)
        if custom is not None and self.state.primal and \
                inspect.isfunction(getattr(custom, "forward", None)):
            return self.inline(frame, node, custom.forward, args, kwargs, None)
        if custom is not None and hasattr(custom, "with_arity") and not kwargs:
            custom = custom.with_arity(len(args))     # a derivative object's rule
        if custom is not None:
            return lower_custom_call(self, frame, node, custom.forward, custom.backward, args,
                                     kwargs, hint, name=custom.__name__,
                                     tangent=getattr(custom, "tangent", None))
        if getattr(obj, "__s2sgrad_opaque__", False):
            return self.opaque_call(frame, node, obj, args, kwargs, hint)
        if obj is np.split and (pieces := self.split_as_slices(frame, node, args, kwargs)):
            return pieces
        obj, args, kwargs = canonical_join(self, frame, node, obj, args, kwargs)
        obj, args, kwargs = canonical_outer(self, frame, node, obj, args, kwargs)
        rule = lookup(obj)
        if rule is not None or is_library_function(obj):
            kwargs = _without_defaults(obj, kwargs)
            args, kwargs = self.scalar_lists_as_arrays(frame, node, obj, rule, args, kwargs)
            expr = self.numbers_where(obj, args, kwargs) or \
                forward_expression(obj, args, kwargs, self.atoms.atom_node) or \
                self.atoms.call_expr(literals.reference_node(obj, self.atoms), args, kwargs)
            out = self.emitter.emit(frame, node, obj, args, kwargs, expr, hint)
            if obj is rt.zeros_list and isinstance(out, Var):
                # generated code differentiated again: the tangent list of a list that a
                # loop appends to is appended to as well
                self.types.lists.add(out.name)
            return out
        raw = getattr(obj, "raw", None)
        if getattr(obj, "__s2sgrad_op__", False) and raw is not None:
            kwargs = obj.canonical_kwargs(kwargs)    # alias keywords (dim=) renamed (axis=)
            return self.inline(frame, node, raw, args, kwargs, None)
        if isinstance(obj, Cell):
            return self.cell_call(frame, node, obj, args, kwargs, hint)
        if inspect.ismethod(obj) and inspect.isfunction(obj.__func__):
            return self.inline(frame, node, obj.__func__, args, kwargs, obj.__self__)
        if inspect.isfunction(obj) and is_user_code(obj):
            return self.inline(frame, node, obj, args, kwargs, None)
        construct = getattr(type(obj), "construct", None)
        if inspect.isfunction(construct):   # a primitive object such as Dropout2D
            return self.inline(frame, node, construct, args, kwargs, obj)
        expr = self.atoms.call_expr(literals.reference_node(obj, self.atoms), args, kwargs)
        return self.emitter.emit(frame, node, obj, args, kwargs, expr, hint)

    def numbers_where(self, obj, args, kwargs):
        """``np.where(c, x, y)`` with no operand known to be an array as ``rt.where(c, x,
        y)``: numpy's np.where, but of three numbers a number under Numba, not a 0-d
        array (a loop-carried ``a = np.where(x[i] > a, x[i], a)`` kept two types and the
        gradient ran as Python); None for any other call."""
        if obj is not np.where or kwargs or len(args) != 3 or \
                any(self.types.ndim_of(a) not in (0, None) for a in args):
            return None
        return call_node("rt", "where", [self.atoms.atom_node(a) for a in args])

    def folded_call(self, frame, node, obj, args, kwargs):
        """A builtin's call known while building (a foldable function of constants,
        ``len``/``np.shape`` of a known size) or ``max``/``min`` of several values made
        pairwise; None for every other call."""
        if (obj in FOLDABLE or isinstance(obj, type) and obj in (slice,)) and \
                all(isinstance(a, Const) for a in list(args) + list(kwargs.values())):
            try:
                return Const(obj(*[a.value for a in args], **{k: v.value for k, v in kwargs.items()}))
            except Exception:  # noqa: BLE001 - fall through to a run-time call
                pass
        if obj is len and len(args) == 1 and isinstance(args[0], (Seq, DictAtom)):
            return Const(len(args[0].items if isinstance(args[0], Seq) else args[0].pairs))
        shape = self.types.shapes.constant(self.types.shape_of(args[0])) \
            if obj in (len, np.shape) and len(args) == 1 and not kwargs else None
        if shape:      # a build specialised on sizes: len(x) is a number
            return Const(shape[0] if obj is len else shape)
        if obj in (max, min) and not kwargs and (len(args) > 2 or len(args) == 1 and isinstance(
                args[0], Seq) and len(args[0].items) > 1):
            return self.chained_extremum(frame, node, obj, args)
        return None

    def outside_partial_call(self, frame, node, partial, args, kwargs, hint):
        """A call of a ``functools.partial`` object made outside the function: a call of
        its wrapper with source (``front/partials.py``: the bound values its closure,
        read at each call); of ``partial.func`` with the bound numbers as constants where
        that function has no signature to write one from (``partial(np.multiply, 3.0)``)."""
        wrapper = partial_as_function(partial)
        if wrapper is not partial:
            return self.call_object(frame, node, wrapper, args, kwargs, hint)
        bound = list(partial.args) + list(partial.keywords.values())
        if not all(isinstance(v, (int, float, complex, bool, str, type(None)))
                   for v in bound):
            raise unsupported(frame, node, f"a call of {partial!r}, whose function has no "
                              f"signature, with arrays bound", "write a def or a lambda "
                              "that calls the function with those values")
        return self.call_object(
            frame, node, partial.func, tuple(Const(v) for v in partial.args) + tuple(args),
            {**{k: Const(v) for k, v in partial.keywords.items()}, **kwargs}, hint)

    def chained_extremum(self, frame, node, obj, args):
        """max(a, b, c) and max([a, b, c]) are max(max(a, b), c): the two-argument rule."""
        items = args if len(args) > 2 else args[0].items
        value = items[0]
        for item in items[1:]:
            value = self.call_object(frame, node, obj, (value, item), {}, None)
        return value

    def made_here_call(self, frame, node, obj, args, kwargs, hint):
        """A call of a function made in the function being lowered (a def or lambda, a
        transform of one: ``front/lifting.py``, a ``functools.partial``, a ``vjp``'s
        pullback: ``front/evaluations.py``), or of ``functools.partial`` itself; None
        where it is not one of those."""
        if isinstance(obj, Pullback):      # its gradient code
            return obj.call(self, frame, node, args, kwargs)
        if isinstance(obj, LocalFunction):
            return self.inline_local(frame, node, obj, args, kwargs)
        if isinstance(obj, Lifted):     # grad(lambda y: f(x, y)): grad(lifted)(y, x)
            return self.call_object(frame, node, obj.derivative, obj.arguments(args), kwargs,
                                    hint)
        if isinstance(obj, Partial):
            return self.call_object(frame, node, obj.func, obj.args + tuple(args),
                                    {**obj.kwargs, **kwargs}, hint)
        partial = partial_of(args, kwargs)
        return Const(partial) if partial is not None else None

    def opaque_call(self, frame, node, obj, args, kwargs, hint):
        """A call of ``obj`` that generated code makes as it is (no derivative of its own)."""
        expr = self.atoms.call_expr(literals.reference_node(obj, self.atoms), args, kwargs)
        result = self.emitter.emit(frame, node, prims.OPAQUE, args, kwargs, expr, hint)
        self.emitter.declare_tuple(result.name, getattr(obj, "structure", None))
        return result

    def scalar_lists_as_arrays(self, frame, node, prim, rule, args, kwargs):
        """``np.max([x, y])``: a list or tuple of numbers given where a numpy rule
        differentiates an array becomes ``np.array([x, y])`` first (what numpy does with
        it), so the rule's adjoint reads an array and ``np.array``'s rule hands each number
        its part.  Gives the (args, kwargs) to call ``prim`` with."""
        if rule is None or not rule.differentiable or not is_library_function(prim) or \
                prim in (np.array, np.asarray):
            return args, kwargs
        try:
            bound = rule.signature.bind(*args, **kwargs).arguments
        except TypeError:
            return args, kwargs
        params = rule.signature.parameters
        arrays = {}
        for pname in sorted(rule.diff_params):
            value = bound.get(pname)
            if params[pname].kind is not inspect.Parameter.VAR_POSITIONAL and \
                    self._list_of_numbers(value):
                expr = self.atoms.call_expr(literals.reference_node(np.array, self.atoms),
                                            (value,), {})
                arrays[id(value)] = self.emitter.emit(frame, node, np.array, (value,), {}, expr,
                                                      None)
        if not arrays:
            return args, kwargs
        return (tuple(arrays.get(id(a), a) for a in args),
                {k: arrays.get(id(v), v) for k, v in kwargs.items()})

    def _list_of_numbers(self, atom):
        """True for a (nested) tuple or list whose items are all numbers, some of them
        float variables of this function."""
        def leaves(a):
            if isinstance(a, Seq):
                return None if a.kind not in ("tuple", "list") else [
                    x for item in a.items for x in (leaves(item) or [None])]
            return [a]
        if not isinstance(atom, Seq):
            return False
        items = leaves(atom)
        if not items or any(x is None for x in items):
            return False
        numbers = all(
            isinstance(x, Const) and isinstance(x.value, (int, float, np.number))
            and not isinstance(x.value, bool)
            or isinstance(x, Var) and self.types.ndims.get(x.name) == 0 for x in items)
        return numbers and any(isinstance(x, Var) and x.name not in self.types.int_vars
                               for x in items)

    def cell_call(self, frame, node, cell, args, kwargs, hint):
        construct = type(cell).construct
        bprop = getattr(type(cell), "bprop", None)
        if bprop is not None and not self.state.primal:
            return lower_custom_call(self, frame, node, construct, bprop, args, kwargs, hint,
                                     bound_self=cell, name=f"{type(cell).__name__}.bprop",
                                     internal_params=tuple(getattr(cell, "internal_params", ())
                                                           or ()))
        return self.inline(frame, node, construct, args, kwargs, cell)

    def stop_gradient(self, frame, node, args, hint):
        if len(args) != 1:
            value = Seq(tuple(args))
        else:
            value = args[0]
        if isinstance(value, Seq):
            return Seq(tuple(self.stop_gradient(frame, node, (item,), None)
                             for item in value.items),
                       value.kind)
        if isinstance(value, Const):
            return value
        return self.emitter.emit(frame, node, prims.STOP_GRADIENT, (value,), {},
                                 self.atoms.atom_node(value),
                                 hint or value.name + "_stopped")

    def inline_local(self, frame, node, local, args, kwargs):
        """A call to a function defined inside the one being differentiated: its body is
        lowered with the enclosing function's variables as they are at the call."""
        params = local.node.args
        if params.vararg or params.kwarg or params.kwonlyargs or params.posonlyargs:
            raise unsupported(frame, node, "a local function with *args, **kwargs or "
                              "keyword-only parameters", "name its parameters")
        names = [p.id for p in params.args]
        defaults = local.defaults
        values = dict(zip(names, args))
        for name, value in kwargs.items():
            if name not in names or name in values:
                raise unsupported(frame, node, f"a call of {local.node.name} with "
                                  f"argument `{name}`, which it does not take or already "
                                  f"got", f"pass each of its parameters once: "
                                  f"{', '.join(names)}")
            values[name] = value
        for name, default in zip(names[len(names) - len(defaults):], defaults):
            values.setdefault(name, default)
        missing = [n for n in names if n not in values]
        if missing or len(args) > len(names):
            raise unsupported(frame, node, f"a call of {local.node.name} with the wrong "
                              f"number of arguments", f"pass one value per parameter: "
                              f"{', '.join(names)}")
        callee = Frame(local.frame.parsed, {**local.frame.env, **values}, frame.call_site)
        callee.caller, callee.closure = frame, local.frame
        self.state.stack.push(frame, node, local.node, local.node.name)
        self.statements.lower_body(callee, structured_body(local.node, callee.env))
        self.state.stack.pop()
        return callee.output if callee.output is not None else Const(None)

    def inline(self, frame, node, fn, args, kwargs, bound_self):
        """Lower a call to a Python function by lowering its body with the arguments bound."""
        self.state.stack.push(frame, node, fn, fn.__qualname__)
        try:
            return self.inline_body(frame, node, fn, args, kwargs, bound_self)
        finally:
            self.state.stack.pop()

    def inline_body(self, frame, node, fn, args, kwargs, bound_self):
        """``inline``'s work, with ``fn`` entered on the stack of inlined functions."""
        parsed = parse_function(fn)
        self.state.names.claim_source(parsed.node)
        sig = inspect.signature(fn)
        call_args = ((Const(bound_self),) if bound_self is not None else ()) + tuple(args)
        try:
            bound = sig.bind(*call_args, **kwargs)
        except TypeError as exc:
            raise unsupported(frame, node, f"a call that does not match "
                              f"{fn.__qualname__}{sig} ({exc})", f"call {fn.__qualname__} "
                              f"with the arguments its signature takes") from None
        bound.apply_defaults()
        env = {}
        for name, value in bound.arguments.items():
            kind = sig.parameters[name].kind
            if kind is inspect.Parameter.VAR_POSITIONAL:
                env[name] = Seq(tuple(value))
            elif kind is inspect.Parameter.VAR_KEYWORD:
                if value:
                    raise unsupported(frame, node, "a call that fills **kwargs",
                                      "pass the values as named parameters")
                env[name] = Const({})
            elif isinstance(value, (Var, Const, Seq)):
                env[name] = value
            else:
                env[name] = self.atoms.const_or_free(value, name)
        if bound_self is not None:
            paths = self.state.paths
            paths.setdefault(id(bound_self), paths.get(id(bound_self), "self"))
        library = (getattr(fn, "__module__", "") or "").startswith("s2sgrad.")
        callee = Frame(parsed, env, frame.location(node) if library else None)
        callee.caller, callee.word = frame, self.state.words.pop(node, None)
        self.statements.lower_body(callee, structured_body(parsed.node))
        return callee.output if callee.output is not None else Const(None)


def made_inside(frame, node, transform, args, kwargs):
    """``grad(f, 1)`` (jacfwd, jacrev, hessian, value_and_grad) written inside the function
    being differentiated: made now, while building, when its arguments are known here (a
    function defined at module level, positions); the object is then called as one made
    outside (its rule: ``api/inside.py``).  A transform of a function defined inside (a
    def, a lambda, ``functools.partial``) is made of that function lifted to take what
    it reads from here as arguments (``front/lifting.py``).  A transform of a value
    computed here is refused.  (``jvp``/``vjp``/``hvp`` called inside are inlined by
    ``front/evaluations.py``.)"""
    name = getattr(transform, "__name__", "transform")
    values = [_known_value(a) for a in list(args) + list(kwargs.values())]
    if values and is_partial(values[0]):    # made outside: its bound values its closure
        values[0] = partial_as_function(values[0], closed=True)
    options = values[1:len(args)], dict(zip(kwargs, values[len(args):]))
    try:
        lifted = None if not args or not isinstance(args[0], Const) or \
            any(v is _UNKNOWN for v in values[1:]) else \
            lifted_transform(frame, node, transform, args[0].value, *options)
        if lifted is not None:      # a function defined inside: lifted (front/lifting.py)
            return Const(lifted)
        if not any(v is _UNKNOWN for v in values):
            return Const(transform(*values[:len(args)], **options[1]))
    except (TypeError, ValueError) as exc:
        raise UnsupportedConstructError(f"s2sgrad.{name} refused its arguments: {exc}",
                                        frame.location(node), source_segment(node),
                                        "call it as you would outside") from None
    raise DerivativeCompositionError(str(unsupported(
            frame, node, f"s2sgrad.{name} of a value computed in the function being "
                         f"differentiated, of a function defined in it that reads another "
                         f"function defined in it, or with options computed in it",
            f"define the function at module level and pass what it reads from here as "
            f"arguments: {name}(potential, 0)(x, theta) instead of "
            f"{name}(lambda x: potential(x, theta))(x)")))


_UNKNOWN = object()


def _known_value(atom):
    """The Python value of an atom known while building (a constant, or a tuple or list
    of them), or ``_UNKNOWN``; a function defined inside is not known (it reads the
    function's values)."""
    if isinstance(atom, Const):
        return _UNKNOWN if isinstance(atom.value, LocalFunction) else atom.value
    if isinstance(atom, Seq):
        items = [_known_value(a) for a in atom.items]
        if any(i is _UNKNOWN for i in items):
            return _UNKNOWN
        return list(items) if atom.kind == "list" else tuple(items)
    return _UNKNOWN


def _parameter_words(obj, node):
    """For a call ``node`` of ``obj`` that is inlined (the user's function or method, an
    s2sgrad op or Cell), each argument expression -> the parameter it is passed to (the
    name the callee knows its value by); {} for a primitive (numpy's parameter names,
    ``x1``, ``a``, say nothing of the value) or where the signature is unknown."""
    if getattr(obj, "__s2sgrad_op__", False):
        obj = getattr(obj, "raw", None)
    elif isinstance(obj, Cell):
        obj = getattr(obj, "construct", None)
    if not (inspect.isfunction(obj) or inspect.ismethod(obj)) or lookup(obj) is not None \
            or is_library_function(obj):
        return {}
    try:
        params = list(inspect.signature(obj).parameters.values())
    except (TypeError, ValueError):
        return {}
    positional = [p.name for p in params if p.kind in (inspect.Parameter.POSITIONAL_ONLY,
                                                       inspect.Parameter.POSITIONAL_OR_KEYWORD)]
    words = {}
    for arg, name in zip(node.args, positional):
        if isinstance(arg, gast.Starred):
            break
        words[arg] = name
    words.update((k.value, k.arg) for k in node.keywords if k.arg is not None)
    return words


def _without_defaults(fn, kwargs):
    """Drop keyword operands that repeat the callee's default (``axis=None``): shorter code."""
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return kwargs
    def is_default(k, v):
        if k not in params or not isinstance(v, Const) or not literals.is_literal(v.value):
            return False
        default = params[k].default
        if default is np._NoValue:  # numpy's "not given": keepdims=False, initial=None...
            return v.value is False or v.value is None
        return type(v.value) is type(default) and v.value == default
    return {k: v for k, v in kwargs.items() if not is_default(k, v)}


def is_library_function(obj):
    """numpy and math callables, callables with a forward-mode rule only, and the
    ``rt.*`` helpers of generated code (read when a generated gradient is differentiated
    again): primitives even without a VJP rule (an error only if active)."""
    if isinstance(obj, np.ufunc) or jvp_registered(obj) is not None:
        return True
    module = getattr(obj, "__module__", None) or ""
    return module.split(".")[0] in ("numpy", "math") or obj is math or \
        module.startswith("s2sgrad.runtime")
