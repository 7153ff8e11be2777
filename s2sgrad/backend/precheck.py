"""What Numba cannot type in a generated function, found before its compile starts.

Numba types a function statement by statement and compiles every helper a statement
calls as it goes, so a name it has no type for (``special.multigammaln``: a module
function with no Numba version; a global object such as an ``rt.Fused`` kernel) ends the
compile with a typing error only after everything typed before it was compiled:
GradBench's gmm written with a loop over its components compiled for 41-55 s before
failing on ``multigammaln`` in its last lines, then ran as Python anyway.

``unresolved(py_func, source)`` reads the generated function's text (``source``: its
module) and the functions of its module it reads (compiled with it), finds every global
it reads and every chain of attributes of a module (``np.linalg.norm``, ``rt.unreduce``),
and asks Numba's typing context whether each value has a Numba type, by the rule Numba's
own typing applies to a global (``resolve_value_type``: a value ``typeof`` knows, or a
function registered with ``@overload`` or as a Numba global).  It gives the first value
without one as ``(dotted name, line of the generated module)``, or None; the name starts
with the module's own name (``scipy.special.multigammaln``, whatever the generated code
calls the module), or ``rt.`` for s2sgrad's runtime.  It judges only
those: an attribute of a local, a method, a builtin, the types of arguments are left to
Numba's compile, so a function it passes may still fail there (and falls back then, as
before), but one it flags would have failed.
"""
import ast
import builtins
import types

__all__ = ["unresolved"]
#: the builtins (by identity), left to Numba
_BUILTINS = {id(v) for v in vars(builtins).values()}


def unresolved(py_func, source):
    """``(dotted name, generated line)`` of the first global or module attribute the
    function ``py_func`` (or a function of its module it reads) reads that Numba has no
    type for; None when every one has one (or ``source`` cannot be read)."""
    if source is None:
        return None
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return None
    functions = {node.name: node for node in tree.body if isinstance(node, ast.FunctionDef)}
    scope = py_func.__globals__
    first = functions.get(getattr(py_func, "__name__", None))
    if first is None:
        return None
    resolve = _resolver()
    todo, seen = [first], {first.name}
    while todo:
        fdef = todo.pop()
        bound = _bound_names(fdef)
        for node in ast.walk(fdef):
            chain = _global_chain(node, bound)
            if chain is None:
                continue
            root = chain[0]
            if root in functions:
                if root not in seen:
                    seen.add(root)
                    todo.append(functions[root])
                continue
            if root not in scope:
                continue                      # a builtin: left to Numba
            value = scope[root]
            if isinstance(value, types.ModuleType) and value.__name__ != "s2sgrad.runtime":
                chain = [value.__name__, *chain[1:]]    # the module's name, not its alias
            for k, attr in enumerate(chain[1:], 1):
                if not isinstance(value, types.ModuleType):
                    chain = chain[:k]         # an attribute of a value: Numba's to type
                    break
                if not hasattr(value, attr):
                    return ".".join(chain[:k + 1]), node.lineno
                value = getattr(value, attr)
            if not isinstance(value, types.ModuleType) and not resolve(value):
                return ".".join(chain), node.lineno
    return None


def _global_chain(node, bound):
    """``[name, attr, attr...]`` when ``node`` is the outermost of a chain of attributes
    (or a lone name) read from a name not bound in the function; else None."""
    if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
        return None if node.id in bound else [node.id]
    if not isinstance(node, ast.Attribute) or not isinstance(node.ctx, ast.Load):
        return None
    attrs = []
    while isinstance(node, ast.Attribute):
        attrs.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name) or node.id in bound:
        return None
    return [node.id, *reversed(attrs)]


def _bound_names(fdef):
    """The names ``fdef`` binds: its parameters and every name it assigns."""
    args = fdef.args
    names = {a.arg for a in [*args.posonlyargs, *args.args, *args.kwonlyargs]}
    names |= {a.arg for a in (args.vararg, args.kwarg) if a is not None}
    names |= {node.id for node in ast.walk(fdef)
              if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del))}
    return names


def _resolver():
    """A predicate: does Numba's CPU typing context give this value a type?"""
    from numba.core.registry import cpu_target

    from . import (numba_batched, numba_checkpoint, numba_forward, numba_indexing,  # noqa: F401
                   numba_linalg, numba_lists, numba_more, numba_rules, numba_special,
                   numba_split, numba_support, numba_surface)   # (their @overloads)
    cpu_target.target_context.refresh()      # loads numpy's implementations (np.sum...)
    context = cpu_target.typing_context
    context.refresh()                        # and the @overload registrations since

    known = {}                               # id(value) -> has a type (one function's)

    def resolve(value):
        if isinstance(value, (bool, int, float, complex, str)) or value is None or \
                id(value) in _BUILTINS:
            return True
        if id(value) not in known:
            try:
                context.resolve_value_type(value)
                known[id(value)] = True
            except Exception:  # noqa: BLE001 - Numba's ValueError or TypingError: no type
                known[id(value)] = False
        return known[id(value)]
    return resolve
