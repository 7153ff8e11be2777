"""Transforms of functions written inside the function being lowered, by lambda lifting.

``grad(lambda y: f(x, y))(y)`` and ``grad(functools.partial(f, x))(y)`` written inside a
function that is differentiated (or compiled by ``s2sgrad.jit``) name a function that
reads the enclosing function's values (``x``).  ``lifted_transform(frame, node,
transform, args, kwargs)`` makes, while building, a real Python function from that one's
syntax with every value it reads from the enclosing function as an extra parameter
after its own (``def lambda_at_152(y, x): return f(x, y)``; constants it reads are its
closure), applies the transform to it (``grad(lifted, 0)``: the same positions; a
transform whose options are per parameter extends them for the read values:
``__s2sgrad_lifted_options__``, vmap's in_axes None for each), and
gives ``Lifted``: an object whose calls the call lowerer turns into calls of that
derivative with the read values appended, looked up where the call is made (what Python
reads for a closure).  The derivative's code is then inlined like that of one made at
module level, and the outer transform differentiates it along the read values too.
``partial_of(func, args, kwargs)`` is ``functools.partial`` of a function known while
building: a call of it is a call of ``func`` with the bound arguments first.

The lifted function's syntax is registered with the frontend (``register_lifted``) so
that its messages name the user's file and line; the function is built with the
enclosing function's globals dict, so its guards see later changes of the module.
"""
import ast
import copy
import inspect
import symtable
import types

import gast

from ..ir import Const, Seq, Var
from .frontend import register_lifted
from .lower_state import LocalFunction


class Lifted:
    """A derivative of a lifted function and where its extra arguments are read: called
    with ``args``, it is ``derivative(*args, *defaults, *[env[n] for n in names])``, the
    defaults (atoms evaluated where the function was defined) of the ``own`` parameters
    that ``args`` leaves out."""

    def __init__(self, derivative, env, names, own=0, defaults=()):
        self.derivative = derivative
        self.env = env
        self.names = names
        self.own, self.defaults = own, tuple(defaults)

    def arguments(self, args):
        missing = self.own - len(args)
        filled = self.defaults[len(self.defaults) - missing:] if missing > 0 else ()
        return tuple(args) + filled + tuple(self.env[n] for n in self.names)

    def __repr__(self):
        return f"<{getattr(self.derivative, '__name__', 'derivative')} of a lifted function>"


class Partial:
    """``functools.partial(func, *args, **kwargs)`` made while building (``func`` known)."""

    def __init__(self, func, args, kwargs):
        self.func, self.args, self.kwargs = func, tuple(args), dict(kwargs)

    def __repr__(self):
        return f"<functools.partial of {getattr(self.func, '__name__', self.func)!r}>"


def partial_of(args, kwargs):
    """The ``Partial`` that ``functools.partial(*args, **kwargs)`` is, or None when its
    function is not known while building."""
    if not args or not isinstance(args[0], Const) or not callable(args[0].value) or \
            isinstance(args[0].value, LocalFunction):
        return None
    return Partial(args[0].value, args[1:], kwargs)


def lifted_transform(frame, node, transform, target, options, keywords):
    """``Lifted`` for ``transform(target, *options, **keywords)`` (the options' values
    known while building) where ``target`` is a LocalFunction or a ``Partial``, or None
    (another target, or one that cannot be lifted: the caller refuses the call)."""
    if isinstance(target, LocalFunction):
        lifted = _lift_local(target)
    elif isinstance(target, Partial):
        lifted = _lift_partial(target, frame, node)
    else:
        return None
    if lifted is None:
        return None
    fn, env, names = lifted
    own = len(target.node.args.args) if isinstance(target, LocalFunction) else 0
    defaults = target.defaults if isinstance(target, LocalFunction) else ()
    extend = getattr(transform, "__s2sgrad_lifted_options__", None)
    if extend is not None:      # options per parameter (vmap's in_axes): the read values'
        options, keywords = extend(options, keywords, own, len(defaults), len(names))
    return Lifted(transform(fn, *options, **keywords), env, names, own, defaults)


def _lift_local(local):
    """(function, env, extra names) of a local def or lambda, or None."""
    params = local.node.args
    if params.vararg or params.kwarg or params.kwonlyargs or params.posonlyargs:
        return None
    name = local.node.name if local.node.name != "lambda" else \
        f"lambda_at_{local.node.lineno}"
    return _lift(local.node, name, local.frame.env, local.frame.parsed)


def _lift_partial(partial, frame, node):
    """(function, env, extra names) of ``functools.partial(func, ...)``: a function of
    ``func``'s parameters not bound by the partial, calling ``func`` with them."""
    func = partial.func
    try:
        params = list(inspect.signature(func).parameters.values())
    except (TypeError, ValueError):
        return None
    if any(p.kind not in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) for p in params) or \
            len(partial.args) > len(params):
        return None
    env = {"partial_function": Const(func)}
    call_args, own = [], []
    for i, atom in enumerate(partial.args):
        env[f"bound_{i}"] = atom
        call_args.append(gast.Name(f"bound_{i}", gast.Load(), None, None))
    keywords = []
    for key, atom in partial.kwargs.items():
        env[f"bound_{key}"] = atom
        keywords.append(gast.keyword(key, gast.Name(f"bound_{key}", gast.Load(), None, None)))
    for p in params[len(partial.args):]:
        if p.name not in partial.kwargs:
            own.append(gast.Name(p.name, gast.Param(), None, None))
            call_args.append(gast.Name(p.name, gast.Load(), None, None))
    call = gast.Call(gast.Name("partial_function", gast.Load(), None, None), call_args,
                     keywords)
    fdef = gast.FunctionDef(
        name=f"partial_{getattr(func, '__name__', 'function')}",
        args=gast.arguments(own, [], None, [], [], None, []),
        body=[gast.Return(call)], decorator_list=[], returns=None, type_comment=None,
        type_params=[])
    fdef = gast.fix_missing_locations(gast.copy_location(fdef, node))
    for child in gast.walk(fdef):
        if hasattr(child, "lineno"):
            child.lineno, child.end_lineno = node.lineno, getattr(node, "end_lineno",
                                                                  node.lineno)
    return _lift(fdef, fdef.name, env, frame.parsed)


def _lift(fdef, name, env, parsed):
    """(function, env, extra names): ``fdef`` as a Python function named ``name`` whose
    parameters are its own then the names it reads from ``env`` that are values computed
    at run time (Vars, tuples of them); its closure holds the constants it reads from
    ``env`` and the enclosing function's own cells of the names it reads from there.  None when it reads a function defined
    inside (not a value a function can receive)."""
    fdef = copy.deepcopy(fdef)
    fdef.name = name
    own = [p.id for p in fdef.args.args]
    free = [n for n in _free_names(fdef) if n not in own]
    extra, cells = [], {}
    for n in free:
        atom = env.get(n)
        if atom is None:
            if n in parsed.scope.cells:     # the enclosing function's own cell: a later
                cells[n] = parsed.scope.cells[n]    # rebinding is seen by the guards
            continue
        if isinstance(atom, Const) and not isinstance(atom.value, (LocalFunction, Lifted)):
            cells[n] = types.CellType(atom.value)
        elif isinstance(atom, (Var, Seq)) and _values_only(atom):
            extra.append(n)
        else:
            return None
    lifted = fdef
    lifted.args = gast.arguments([gast.Name(n, gast.Param(), None, None) for n in own + extra],
                                 [], None, [], [], None, [])
    lifted.decorator_list = []
    fn = _function(lifted, cells, parsed)
    register_lifted(fn, lifted, parsed)
    return fn, env, extra


def _values_only(atom):
    if isinstance(atom, Seq):
        return all(_values_only(a) for a in atom.items)
    return isinstance(atom, (Var, Const)) and not (
        isinstance(atom, Const) and isinstance(atom.value, (LocalFunction, Lifted, Partial)))


def _free_names(fdef):
    """The names ``fdef`` reads that it does not bind (its free and global names)."""
    source = _source(fdef)
    table = symtable.symtable(source, "<lifted>", "exec").get_children()[0]
    return [s.get_name() for s in table.get_symbols()
            if s.is_referenced() and (s.is_global() or s.is_free()) and not s.is_local()]


def _source(fdef):
    module = gast.gast_to_ast(gast.Module(body=[copy.deepcopy(fdef)], type_ignores=[]))
    return ast.unparse(ast.fix_missing_locations(module))


def _function(fdef, cells, parsed):
    """A Python function of ``fdef``'s code with ``cells`` (name -> cell) as its closure
    and the enclosing function's globals (the same dict: later module changes are seen)."""
    names = sorted(cells)
    maker = gast.FunctionDef(
        name="make_lifted", args=gast.arguments(
            [gast.Name(n, gast.Param(), None, None) for n in names], [], None, [], [], None,
            []),
        body=[copy.deepcopy(fdef), gast.Return(gast.Name(fdef.name, gast.Load(), None, None))],
        decorator_list=[], returns=None, type_comment=None, type_params=[])
    module = gast.gast_to_ast(gast.Module(body=[maker], type_ignores=[]))
    ast.fix_missing_locations(module)
    for child in ast.walk(module):     # the lifted code's lines are the user's
        if hasattr(child, "lineno") and child.lineno is None:
            child.lineno = fdef.lineno
    code = compile(module, parsed.filename or "<lifted>", "exec")
    space = {}
    exec(code, parsed.scope.globals, space)  # noqa: S102 - the user's own code, lifted
    made = space["make_lifted"](*[None for _ in names])
    return types.FunctionType(made.__code__, parsed.scope.globals, made.__name__, None,
                              tuple(cells[n] for n in made.__code__.co_freevars))
