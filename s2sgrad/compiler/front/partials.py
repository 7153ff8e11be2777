"""A ``functools.partial`` object as a Python function with source, for the transforms.

``grad(functools.partial(loss, data=X))`` and ``jvp(partial(f, a), (x,), (v,))`` made
outside any differentiated function name no source s2sgrad can read: a partial object
is no function.  ``partial_as_function(p)`` gives a function that does what ``p`` does,
written as source (registered with ``linecache``, so the frontend reads it like a
file's): its parameters are ``p``'s own (``inspect.signature(p)``: the unbound ones, then
the keyword-bound ones as keyword-only parameters whose defaults are the bound values),
and its body calls ``p.func`` with the positionally bound values first::

    def loss_partial(w, *, data=data):     # from functools.partial(loss, data=X)
        return loss(w, data=data)

The positionally bound values and ``p.func`` are its closure, named after the parameters
they fill and the function (``partial(loss, X)``: ``return loss(X_bound..., w)``), so the
generated gradient reads like a hand-written wrapper.  Positions count as for ``p``
(``grad(partial(f, a))`` differentiates ``f``'s second argument), keyword-bound values
are arguments (read at each call, overridable: ``g(w, data=Y)``), closure values are the
closure's (read at each call, as every closure is).  One code object per form (the
names and kinds of the parameters), shared by every partial of that form, so a fresh
``partial`` of the same function per call reuses the builds (``api/identity.py``).
The function is kept on the partial object (partials are immutable but for their
``keywords`` dict, whose contents are checked).
"""
import functools
import inspect
import keyword
import linecache

import numpy as np

from .frontend import is_user_code

#: the form of a wrapper (its source text) -> its factory (``wrapper_factory``)
_FACTORIES = {}

_KEPT = "__s2sgrad_function__"


def partial_as_function(partial, closed=False):
    """The function with source that does what ``partial`` (a ``functools.partial``) does,
    or ``partial`` itself where its function is a library's (``np.multiply``: a call of
    it is lowered with the bound values as constants) or its signature cannot be read
    (the caller's error then says what it can differentiate).  ``closed``: the
    keyword-bound values are its closure too, not parameters (what ``jvp(partial, ...)``
    called inside a differentiated function takes: the primals only)."""
    if not _reads_source(partial.func):
        return partial
    kept = partial.__dict__.get(_KEPT + "_closed" * closed)
    if kept is not None and kept.key == _keywords_key(partial):
        return kept.function
    try:
        signature = inspect.signature(partial)
        wrapped = inspect.signature(partial.func)
    except (TypeError, ValueError):
        return partial
    source, values = _wrapper_source(partial, signature, wrapped, closed)
    factory = _FACTORIES.get(source)
    if factory is None:
        factory = _FACTORIES[source] = wrapper_factory(source, len(_FACTORIES))
    function = factory(*values)
    function.__qualname__ = function.__name__
    function.__module__ = __name__       # made here (a library function's would not be read)
    function.__doc__ = f"{partial!r} as a function (s2sgrad)"
    function.__s2sgrad_partial__ = partial      # what a derivative of it pickles
    partial.__dict__[_KEPT + "_closed" * closed] = _Kept(_keywords_key(partial), function)
    return function


class _Kept:
    """The wrapper kept on its partial, for the keywords it was written for; pickled
    empty (a pickled partial carries its ``__dict__``: the wrapper is made again)."""

    def __init__(self, key=None, function=None):
        self.key, self.function = key, function

    def __reduce__(self):
        return _Kept, ()


def _reads_source(func):
    """True where s2sgrad reads ``func``'s source (a user's function or method) or
    differentiates it as an object (a Cell, a derivative, a jit): a wrapper writing
    every default of a library function out (``np.multiply``'s ``out=None, where=True``)
    would call it otherwise than the partial does."""
    func = getattr(func, "__func__", func)
    if inspect.isfunction(func):
        return is_user_code(func)
    return not (inspect.isbuiltin(func) or isinstance(func, np.ufunc) or
                inspect.isclass(func))


def _keywords_key(partial):
    return tuple((k, id(v)) for k, v in partial.keywords.items())


def _wrapper_source(partial, signature, wrapped, closed=False):
    """(the factory's source for ``partial``'s form, the values its parameters take: the
    function, the bound positional values, the keyword-bound values, the defaults)."""
    taken = set(signature.parameters)
    func_name = fresh_name(getattr(partial.func, "__name__", "func"), taken)
    taken.add(func_name)
    free = list(wrapped.parameters.values())
    bound = []
    for index, _ in enumerate(partial.args):
        param = free[index] if index < len(free) and free[index].kind in (
            inspect.Parameter.POSITIONAL_ONLY,
            inspect.Parameter.POSITIONAL_OR_KEYWORD) else None
        name = fresh_name((param.name if param is not None else "arg") + "_bound", taken)
        taken.add(name)
        bound.append(name)
    params, call = [], list(bound)
    keyword_only = False
    for p in signature.parameters.values():
        if p.name in partial.keywords and closed:
            call.append(f"{p.name}={p.name}")
        elif p.name in partial.keywords:
            if not keyword_only and p.kind is not inspect.Parameter.VAR_POSITIONAL:
                params.append("*")
                keyword_only = True
            params.append(f"{p.name}={p.name}")
            call.append(f"{p.name}={p.name}")
        elif p.kind is inspect.Parameter.VAR_POSITIONAL:
            params.append(f"*{p.name}")
            call.append(f"*{p.name}")
            keyword_only = True
        elif p.kind is inspect.Parameter.VAR_KEYWORD:
            params.append(f"**{p.name}")
            call.append(f"**{p.name}")
        elif p.kind is inspect.Parameter.KEYWORD_ONLY:
            if not keyword_only:
                params.append("*")
                keyword_only = True
            params.append(p.name if p.default is inspect.Parameter.empty
                          else f"{p.name}={p.name}_default")
            call.append(f"{p.name}={p.name}")
        else:
            params.append(p.name if p.default is inspect.Parameter.empty
                          else f"{p.name}={p.name}_default")
            call.append(p.name)
    defaults = [p for p in signature.parameters.values() if p.name not in
                partial.keywords and p.default is not inspect.Parameter.empty]
    keywords = [p for p in signature.parameters.values() if p.name in partial.keywords]
    outer = [func_name, *bound, *[p.name for p in keywords],
             *[f"{p.name}_default" for p in defaults]]
    values = [partial.func, *partial.args, *[p.default for p in keywords],
              *[p.default for p in defaults]]
    name = fresh_name(func_name + "_partial", taken)
    source = (f"def make({', '.join(outer)}):\n"
              f"    def {name}({', '.join(params)}):\n"
              f"        return {func_name}({', '.join(call)})\n"
              f"    return {name}\n")
    return source, values


def fresh_name(name, taken):
    """``name`` (or ``func`` where it is no identifier) with ``_`` added until it is not in
    ``taken``."""
    name = name if name.isidentifier() and not keyword.iskeyword(name) else "func"
    while name in taken:
        name += "_"
    return name


def wrapper_factory(source, number, what="functools.partial as a function"):
    """The ``make`` function of the wrapper module ``source``, compiled under a file name
    of its own (``number``, ``what``) whose lines ``inspect`` can read."""
    filename = f"<s2sgrad: {what} #{number}>"
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    namespace = {}
    exec(compile(source, filename, "exec"), namespace)     # noqa: S102 (our own source)
    return namespace["make"]


def is_partial(fn):
    """True for a ``functools.partial`` object (not a subclass with its own ``__call__``)."""
    return isinstance(fn, functools.partial) and \
        type(fn).__call__ is functools.partial.__call__
