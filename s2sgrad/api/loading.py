"""Generated code as a derivative loads and runs it.

``load_function`` takes a generated module's name, source and one function's name, and
the values the code reads from outside; it writes the module to the cache directory
(``backend/cache.py``), loads it and gives the function as a ``Compiled`` (Numba where
it can) with its path.  ``user_line_of`` takes an error raised in loaded code and gives
the note naming the user's line it came from (the module's line map); ``user_origin_of``
that line itself.
"""
import os
import traceback

from ..backend import cache
from ..backend.numba_backend import Compiled
from .arguments import numba_argument, python_objects_reason


def load_function(module_name, source, name, free):
    """(the function ``name`` of the generated module ``module_name`` with ``source``,
    written to the cache and loaded as a ``Compiled``, its path): compiled by Numba where
    it can, run as Python when it reads a value from outside (``free``) Numba cannot take."""
    py_func, path, on_disk = cache.materialise(module_name, source, name)
    unsupported = [f.path for f in free if not numba_argument(f.obj)]
    compiled = Compiled(py_func, allow_numba=not unsupported, path=path, source=source,
                        on_disk=on_disk, python_reason=python_objects_reason(unsupported))
    return compiled, path


def _generated_lineno(exc, path):
    frames = [f for f in traceback.extract_tb(exc.__traceback__)
              if os.path.abspath(f.filename) == os.path.abspath(path or "")]
    return frames[-1].lineno if frames else None


def user_origin_of(exc, path, generated):
    """The user's line (a SourceLocation) an error raised inside generated code came
    from, read from the generated module's line map; None when it is not known."""
    lineno = _generated_lineno(exc, path)
    return None if lineno is None else generated.line_map.get(lineno)


def user_line_of(exc, path, generated):
    """A note for an error raised inside generated code: the user's line it came from,
    read from the generated module's line map."""
    lineno = _generated_lineno(exc, path)
    if lineno is None:
        return f"s2sgrad: raised while running the generated gradient code in {path}"
    origin = generated.line_map.get(lineno)
    if origin is None:
        return f"s2sgrad: raised at line {lineno} of the generated code in {path}"
    part = "adjoint" if generated.adjoint_from is not None and \
        lineno >= generated.adjoint_from else "forward"
    where = f"{os.path.basename(origin.filename or '?')}:{origin.lineno}"
    text = (origin.text or "").strip()
    return (f"s2sgrad: raised by the generated code ({part} sweep) for {text!r} ({where}), "
            f"line {lineno} of {path}")
