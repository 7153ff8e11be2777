"""The source of a function vmap runs, read for the calls it batches as a whole.

Takes a plain function (a def or a lambda); gives what ``vmap_jvp`` and ``vmap_grad``
recognise in it: ``returned_expression(fn)`` (its parameters and the expression its
whole body returns), ``dotted_name(node)`` (``['np', 'linalg']`` of a name or dotted
name) and ``value_of(fn, names, params, args)``: what a dotted name of ``fn``'s source
is at a call (a parameter's argument, a closure cell, a global or a builtin), read at
every call so that nothing is kept from an earlier one; ``value_spec(node)`` and
``spec_value(fn, spec, params, args)`` the same for an expression with no call in it
(``PARAMS["theta"]``, ``theta * scale``, ``x.T``: evaluated at every call).  ``read_once(cache, fn, read)``:
what ``read(fn)`` gives, kept per code object in an LRU of ``KEPT_CODES`` entries.
"""
import builtins
import collections

import gast

#: what ``value_of`` gives for a name it cannot read
UNKNOWN = object()

#: code objects whose reading ``read_once`` keeps (the least recently used goes first: a
#: program making many functions from distinct code does not grow without end)
KEPT_CODES = 256


def code_cache():
    """An empty cache for ``read_once``."""
    return collections.OrderedDict()


def read_once(cache, fn, read):
    """``read(fn)`` (None where it raises: the caller's loop form), read once per code
    object of ``fn`` and kept in ``cache`` (``code_cache()``), an LRU of ``KEPT_CODES``."""
    code = fn.__code__
    if code in cache:
        cache.move_to_end(code)
        return cache[code]
    try:
        found = read(fn)
    except Exception:  # noqa: BLE001 - any source it cannot read: the loop form
        found = None
    cache[code] = found
    while len(cache) > KEPT_CODES:
        cache.popitem(last=False)
    return found


def returned_expression(fn):
    """(parameter names, the gast expression returned) where ``fn``'s whole body (its
    docstring aside) is ``return <expression>`` and its parameters are plain positional
    ones without defaults; None otherwise."""
    from ..compiler.front.frontend import parse_function
    fdef = parse_function(fn).node
    args = fdef.args
    if args.vararg or args.kwarg or args.kwonlyargs or args.defaults or \
            getattr(args, "posonlyargs", None):
        return None
    body = fdef.body
    if body and isinstance(body[0], gast.Expr) and isinstance(body[0].value, gast.Constant):
        body = body[1:]
    if len(body) != 1 or not isinstance(body[0], gast.Return) or body[0].value is None:
        return None
    return [a.id for a in args.args], body[0].value


def dotted_name(node):
    """``['np', 'linalg']`` of a name or dotted name, or None."""
    if isinstance(node, gast.Name):
        return [node.id]
    if isinstance(node, gast.Attribute):
        owner = dotted_name(node.value)
        return None if owner is None else owner + [node.attr]
    return None


def value_of(fn, names, params=(), args=()):
    """The value of the dotted name ``names`` of ``fn``'s source now: a parameter's
    argument (``params``, ``args``), a closure cell, a global or a builtin; UNKNOWN."""
    first = names[0]
    if first in params:
        value = args[list(params).index(first)]
    else:
        cells = dict(zip(fn.__code__.co_freevars, fn.__closure__ or ()))
        try:
            value = cells[first].cell_contents if first in cells else \
                fn.__globals__[first] if first in fn.__globals__ else \
                getattr(builtins, first)
        except (ValueError, AttributeError):
            return UNKNOWN
    for name in names[1:]:
        value = getattr(value, name, UNKNOWN)
        if value is UNKNOWN:
            return UNKNOWN
    return value


#: the nodes an expression ``value_spec`` takes may hold: nothing that calls (a call may
#: give another value per row of the loop it stands for: ``rng.normal()``)
_PURE = (gast.Name, gast.Attribute, gast.Subscript, gast.Slice, gast.Tuple, gast.Constant,
         gast.BinOp, gast.UnaryOp, gast.operator, gast.unaryop, gast.expr_context)


def value_spec(node):
    """How to read the value ``node`` of ``fn``'s source at each call: its dotted name (a
    list), or ``("expr", code, names it reads)`` for an expression of names, attributes,
    subscripts, constants and arithmetic (no call); None for anything else."""
    names = dotted_name(node)
    if names is not None:
        return names
    if not all(isinstance(n, _PURE) for n in gast.walk(node)):
        return None
    from ..compiler.syntax.source import to_source
    read = sorted({n.id for n in gast.walk(node) if isinstance(n, gast.Name)})
    return ("expr", compile(to_source(node).strip(), "<vmap value>", "eval"), read)


def spec_reads(spec):
    """The first names ``spec`` (``value_spec``) reads."""
    return spec[2] if isinstance(spec, tuple) else spec[:1]


def spec_value(fn, spec, params=(), args=()):
    """What ``spec`` (``value_spec``) is now, its names read as ``value_of`` reads them;
    UNKNOWN where one cannot be read or the expression raises."""
    if isinstance(spec, list):
        return value_of(fn, spec, params, args)
    _, code, read = spec
    names = {name: value_of(fn, [name], params, args) for name in read}
    if any(value is UNKNOWN for value in names.values()):
        return UNKNOWN
    try:
        return eval(code, {"__builtins__": builtins}, names)
    except Exception:           # the loop's call says what is wrong
        return UNKNOWN


def callable_spec(node, params):
    """How to read the function or derivative object ``node`` names at each call: its
    dotted name (a list), or ``(transform's dotted name, options)`` for a transform
    called with dotted names and constants (``grad(f, 1)``; a constant as ("const",
    value)); None for anything else or where it reads a parameter of the function."""
    names = dotted_name(node)
    if names is not None:
        return None if names[0] in params else names
    if not isinstance(node, gast.Call) or node.keywords or dotted_name(node.func) is None:
        return None
    options = []
    for item in node.args:
        names = dotted_name(item)
        if names is not None:
            options.append(names)
            continue
        try:
            options.append(("const", gast.literal_eval(item)))
        except ValueError:
            return None
    transform = dotted_name(node.func)
    if any(names[0] in params for names in [transform] + [o for o in options
                                                          if isinstance(o, list)]):
        return None
    return transform, options


def callable_of(fn, spec):
    """What ``spec`` (``callable_spec``) reads now: the object, or the transform (one
    that makes derivative objects: ``__s2sgrad_transform__ == "makes"``) called with its
    options; UNKNOWN where a name cannot be read or the transform is another thing."""
    if isinstance(spec, list):
        return value_of(fn, spec)
    transform, options = spec
    make = value_of(fn, transform)
    items = [value_of(fn, o) if isinstance(o, list) else o[1] for o in options]
    if getattr(make, "__s2sgrad_transform__", None) != "makes" or \
            any(i is UNKNOWN for i in items):
        return UNKNOWN
    return make(*items)
