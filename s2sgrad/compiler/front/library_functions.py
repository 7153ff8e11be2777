"""A library function handed to a transform itself, as a Python function with source.

``grad(scipy.special.logsumexp)``, ``grad(np.sum)``, ``jacobian(np.linalg.norm)``,
``hvp(np.prod, ...)``: s2sgrad reads no library's source (scipy's own ``logsumexp`` is
a ``with np.errstate`` block, numpy's functions are C), but it has a rule for the call.
``library_as_function(fn)`` gives a function with source whose body is that call::

    def logsumexp_of(a):
        return logsumexp(a)

Its parameters are ``fn``'s positional parameters without a default (a ufunc's
``x1, x2, ...``: ``nin`` of them), so grad_position counts as for ``fn``; the options
keep their defaults.  ``fn`` is the wrapper's closure, read as every closure function
is.  One wrapper per library function, kept here, so every transform of it shares the
builds; ``fn`` itself where its signature cannot be read (the frontend then says what
it can differentiate).
"""
import inspect

import numpy as np

from .frontend import is_user_code
from .partials import wrapper_factory, fresh_name

#: library function -> its wrapper
_WRAPPERS = {}


def is_package_function(fn):
    """True for numpy's, scipy's and other installed packages' functions and ufuncs (what
    the frontend calls by a rule rather than reading)."""
    if isinstance(fn, np.ufunc) or inspect.isbuiltin(fn) or \
            type(fn).__name__ == "_ArrayFunctionDispatcher":
        return True
    return inspect.isfunction(fn) and not is_user_code(fn)


def library_as_function(fn):
    """The function with source calling ``fn`` (module doc), or ``fn`` itself."""
    try:
        wrapper = _WRAPPERS.get(fn)
    except TypeError:               # unhashable: not a plain function
        return fn
    if wrapper is not None:
        return wrapper
    names = _required_positional(fn)
    if not names:
        return fn
    taken = set(names)
    func_name = fresh_name(getattr(fn, "__name__", "func"), taken)
    taken.add(func_name)
    name = fresh_name(func_name + "_of", taken)
    source = (f"def make({func_name}):\n"
              f"    def {name}({', '.join(names)}):\n"
              f"        return {func_name}({', '.join(names)})\n"
              f"    return {name}\n")
    wrapper = wrapper_factory(source, f"{getattr(fn, '__module__', '')}.{func_name}",
                       "a library function as a function")(fn)
    wrapper.__qualname__ = wrapper.__name__
    wrapper.__module__ = __name__
    wrapper.__doc__ = f"{fn!r} as a function (s2sgrad)"
    _WRAPPERS[fn] = wrapper
    return wrapper


def _required_positional(fn):
    """The names of ``fn``'s positional parameters without a default (module doc)."""
    if isinstance(fn, np.ufunc):
        return [f"x{i + 1}" for i in range(fn.nin)] if fn.nin > 1 else ["x"]
    try:
        parameters = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return []
    positional = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    return [p.name for p in parameters
            if p.kind in positional and p.default is inspect.Parameter.empty]
