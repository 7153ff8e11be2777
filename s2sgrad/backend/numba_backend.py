"""Compile generated functions with Numba, falling back to Python with a reason.

``Compiled(py_func)`` wraps one generated function.  Its first call tries
``numba.njit(cache=True)`` on the argument types of that call; if Numba
cannot type the code (the user's code is outside Numba's subset) the
function runs as plain Python from then on, and ``fallback_reason`` says
why.  Set ``S2SGRAD_BACKEND=python`` to skip Numba altogether.
"""
import os
import warnings


class Compiled:
    """A generated function and the backend that runs it ('numba' or 'python')."""

    def __init__(self, py_func, allow_numba=True):
        self.py_func = py_func
        self.fallback_reason = None
        self._jitted = None
        self._ready = False    # compiled for the arguments it is called with
        self.backend = "numba"
        if os.environ.get("S2SGRAD_BACKEND", "numba").lower() == "python":
            self._use_python("S2SGRAD_BACKEND=python")
        elif not allow_numba:
            self._use_python("the generated code calls Python objects Numba cannot compile")

    def _use_python(self, reason):
        self.backend = "python"
        self.fallback_reason = reason
        self._jitted = None

    def __call__(self, *args):
        if self.backend == "python":
            return self.py_func(*args)
        if self._ready:
            try:
                return self._jitted(*args)
            except Exception as exc:  # noqa: BLE001 - e.g. new array layouts Numba cannot type
                if not _is_typing_failure(exc):
                    raise
                self._ready = False
        import numba
        from . import numba_lists, numba_more, numba_support  # noqa: F401  (register rt.* for Numba)
        try:
            with warnings.catch_warnings():   # compile-time hints are not the user's concern
                warnings.simplefilter("ignore", numba.NumbaWarning)
                if self._jitted is None:
                    self._jitted = numba.njit(cache=True)(self.py_func)
                result = self._jitted(*args)
            self._ready = True
            return result
        except Exception as exc:  # noqa: BLE001 - decided below
            if not _is_typing_failure(exc):
                raise
            self._use_python(_summarise(exc))
            return self.py_func(*args)


def _is_typing_failure(exc):
    import numba.core.errors as nerr
    return isinstance(exc, (nerr.TypingError, nerr.UnsupportedError, nerr.LoweringError,
                            nerr.NumbaError, NotImplementedError))


def _summarise(exc):
    text = str(exc).strip().splitlines()
    keep = [line for line in text if line.strip() and not line.startswith("During:")]
    return "Numba could not compile the generated code: " + " ".join(keep[:3])[:400]
