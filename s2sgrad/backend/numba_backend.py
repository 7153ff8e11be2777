"""Compile generated functions with Numba, falling back to Python with a reason.

``Compiled(py_func, ...)`` wraps one generated function.  Which backend runs
it is decided on its first call, for the types of that call's arguments:
``numba.njit(cache=True)`` compiles it (and the other functions of its module that it
calls: the step functions of a checkpointed loop), or, if Numba cannot type the code
(the user's code is outside Numba's subset), it runs as plain Python from
then on and ``fallback_reason`` says why.  A global or module attribute the code reads
that Numba has no type for (``scipy.special.multigammaln``) is found before the compile
starts (``precheck.unresolved``), not at the end of a compile of everything before it.  A failed compile is remembered
beside the module (``cache.remember_fallback``) so later processes do not try
it again.  A corrupt or unwritable Numba cache is dropped, never fatal.

Which code Numba gets is set by ``S2SGRAD_BACKEND``: ``auto`` (the default)
compiles gradients that loop (the function itself or a function of its module it calls:
``cache.has_loops(source, name)``, so a split module's loop-free forward and backward
sweeps are not compiled for its ``_jacobian``'s loop) and runs loop-free ones as numpy (backend
'numpy': no compile, and numpy's own kernels are as fast as Numba's on array
code); ``numba`` compiles every gradient; ``python`` compiles none.

Both backends return the same types: scalars come back as numpy scalars of
their dtype (Numba would give Python floats and ints), and the compiled
results take the types and dtypes the same code gives run as Python (learnt
by one Python run per argument types, on the first call, and recorded beside the
cached module by ``result_types``: a later process that loads Numba's cached code
reads the record and never runs the code as Python).

The first call that runs Numba's code sets glibc's malloc thresholds for the process
(``heap.keep_freed_memory``): a call's tapes then come from memory the last call freed,
not from fresh pages of the kernel.
"""
import os
import warnings

import numpy as np

from . import cache, heap, precheck, result_types
from ..runtime import SKIP_ELSE
from .reasons import explain, explain_unresolved
from .result_types import restorer_like  # noqa: F401 - the restorer of a reference

UNDECIDED = "undecided"
UNDECIDED_REASON = ("Not decided yet: s2sgrad tries Numba on the first call, for the types "
                    "of that call's arguments.")
ENV_REASON = "S2SGRAD_BACKEND=python is set, so the gradient code runs as Python."
LOOP_FREE_REASON = ("The gradient has no loops, so it runs as numpy calls: no compile, and "
                    "numpy is as fast as Numba on array code. Set S2SGRAD_BACKEND=numba to "
                    "compile it with Numba anyway.")
MODES = ("auto", "numba", "python")


def backend_mode():
    """``S2SGRAD_BACKEND``: 'auto' (default), 'numba' or 'python' (read on every call: it
    is part of the key ``jvp`` finds its code by)."""
    raw = os.environ.get("S2SGRAD_BACKEND", "auto")
    mode = _MODE_OF.get(raw)
    if mode is None:
        mode = raw.strip().lower() or "auto"
        if mode not in MODES:
            raise ValueError(f"S2SGRAD_BACKEND={mode!r} is not one of {', '.join(MODES)}: "
                             "'auto' compiles gradients with loops, 'numba' every gradient, "
                             "'python' none.")
        _MODE_OF[raw] = mode
    return mode


_MODE_OF = {}       # S2SGRAD_BACKEND as set -> the mode it names


_numba_version = None


class Compiled:
    """A generated function and the backend that runs it.

    ``backend`` is 'undecided' before the first call, then 'numba' or 'python';
    or 'numpy' from the start for loop-free code (``S2SGRAD_BACKEND=auto``);
    ``fallback_reason`` says why it is not (yet) 'numba'.  ``path`` and
    ``source`` are the module's file and text (``on_disk`` False: kept in
    memory), used to remember failed compiles and to name the user's line.
    """

    def __init__(self, py_func, allow_numba=True, python_reason=None, path=None,
                 source=None, on_disk=False):
        self.py_func = py_func
        self.name = getattr(py_func, "__name__", "?")    # one of the module's functions
        self.path, self.source, self.on_disk = path, source, on_disk
        self.digest = cache.digest_of(source) if source is not None else None
        self.backend = UNDECIDED
        self.fallback_reason = UNDECIDED_REASON
        self._jitted = None
        self._ready = {}           # argument types it is compiled for -> result restorer
        self.reference_runs = 0    # Python runs made to learn the compiled results' types
        self._with_else = None     # the same code compiled with its else-branches
        self._complete = None      # its dispatcher as other compiled code calls it
        mode = backend_mode()
        if mode == "python":
            self._use_python(ENV_REASON)
        elif not allow_numba:
            self._use_python(python_reason or "The gradient code calls Python objects that "
                             "Numba cannot compile, so it runs as Python.")
        elif mode == "auto" and not cache.has_loops(source, self.name):
            self._use_python(LOOP_FREE_REASON, backend="numpy")

    def _use_python(self, reason, backend="python"):
        self.backend = backend
        self.fallback_reason = reason
        self._jitted = None
        self._ready = {}

    def __call__(self, *args):
        if self.backend in ("python", "numpy"):
            return as_numpy_scalars(self.py_func(*args))
        key = argument_key(args)
        restore = self._ready.get(key)
        if restore is not None:
            return restore(self._jitted(*args))
        return self._first_call(key, args)

    #: whether Numba compiles the code without the numpy statements of its fused loops'
    #: else-branches (``rt.SKIP_ELSE``): set by a caller that runs a call again where a
    #: guard failed (``Derivative._recovered``: ``with_else``), not for code that may
    #: write into its arguments (``s2sgrad.jit``) or whose parts pass tapes (``vjp``)
    skips_else = False
    #: whether Numba's disk cache holds this code's machine code (not ``with_else``'s:
    #: its index is keyed by the signature alone and would be read for the other)
    disk_cached = True

    def with_else(self):
        """The same code as a ``Compiled`` whose Numba copy keeps its fused loops' numpy
        else-branches (for calls after a guard failed in this one's: each runs compiled
        again), compiled at its first call; made once."""
        if self._with_else is None:
            import copy
            full = copy.copy(self)
            full._jitted, full._ready, full._complete = None, {}, None
            full.skips_else, full.disk_cached, full._with_else = False, False, full
            self._with_else = full
        return self._with_else

    def python_call(self, *args):
        """The code run as Python on ``args``, its results as a compiled call gives them
        (where compiled code cannot finish a call: ``rt.RowsOfSeveralLengths``)."""
        return as_numpy_scalars(self.py_func(*args))

    def runner(self, args):
        """What runs the code on arguments of the types of ``args`` (already run with them)
        without looking their types up again: the Numba dispatcher, wrapped in the
        restorer when there is one; ``self`` when the code runs as Python or numpy or was
        not compiled for these types.  Valid only for arguments whose ``argument_key`` is
        that of ``args`` (a caller keys what it keeps at least as finely)."""
        restore = self._ready.get(argument_key(args)) if self.backend == "numba" else None
        if restore is None:
            return self
        jitted = self._jitted
        if restore is result_types.identity:
            return jitted
        return lambda *values: restore(jitted(*values))

    def gradients_runner(self, args):
        """``runner(args)`` for a caller that uses only the second item of the result (a
        gradient's call drops the value of ``(value, gradients)``) and gives each
        gradient the type of its argument itself (``api/results.finish_gradient``): the
        Numba dispatcher itself where the restorer changes nothing but the value's type;
        the Python function itself for code run as numpy or Python (the scalars it
        returns are made numpy scalars only to be made the argument's type again)."""
        if self.backend in ("python", "numpy"):
            return self.py_func
        restore = self._ready.get(argument_key(args)) if self.backend == "numba" else None
        parts = getattr(restore, "parts", None)
        if parts is not None and parts[1] is result_types.identity:
            return self._jitted
        return self.runner(args)

    @property
    def dispatcher(self):
        """The Numba dispatcher compiled for the argument types run so far (None unless
        the backend is 'numba'): what another compiled function calls in its place (its
        results are the code's own, without the restorer's types).  Where the code was
        compiled without its else-branches (``skips_else``), a dispatcher of the code
        with them, compiled for what the caller passes (nothing reruns a call there)."""
        if self.backend != "numba":
            return None
        if not self.skips_else or SKIP_ELSE not in self.py_func.__globals__:
            return self._jitted             # (no fused loop: the one compiled code)
        if self._complete is None:
            import numba
            self._complete = numba.njit(cache=False)(
                with_compiled_helpers(self.py_func, False, skip_else=False))
        return self._complete

    def _first_call(self, key, args):
        """Compile for the types of ``args`` (or recall that it cannot be) and run."""
        remembered_as = f"{self.name}: numba {numba_version()}; {key_text(key)}"
        if self.on_disk:
            reason = cache.recall_fallback(self.path, self.digest, remembered_as)
            if reason is not None:
                self._use_python(reason)
                return as_numpy_scalars(self.py_func(*args))
        import numba
        from . import (numba_batched, numba_checkpoint, numba_forward, numba_split,
                       numba_indexing, numba_linalg, numba_lists, numba_more, numba_rules,
                       numba_special, numba_support, numba_surface)
        from .numba_compile import generated_code
        # (a function Numba compiled before, its cache index on disk, is not read again)
        missing = None if self.on_disk and cache.has_numba_index(self.path, self.name) \
            else precheck.unresolved(self.py_func, self.source)
        if missing is not None:           # decided before a compile that would fail late
            return self._fall_back(remembered_as, explain_unresolved(*missing, self.path,
                                                                     self.source), args)
        notice = slow_compile_notice(self.path)
        try:
            with warnings.catch_warnings(), generated_code():
                # (compile-time hints are not the user's concern; numba_compile: what differs)
                warnings.simplefilter("ignore", numba.NumbaWarning)
                self._compile(args)
        except Exception as exc:  # noqa: BLE001 - decided below
            if not _is_typing_failure(exc):
                raise
            return self._fall_back(remembered_as, explain(exc, self.path, self.source),
                                   args)
        finally:
            notice.cancel()
        self.backend, self.fallback_reason = "numba", None
        heap.keep_freed_memory()        # a call's tapes reuse what the last one freed
        restore, compiled = self._restorer(key, args)
        self._ready[key] = restore
        return restore(compiled)

    def _fall_back(self, remembered_as, reason, args):
        """Run as Python from now on (and in later processes: remembered beside the
        module), for ``reason``; the result of running it on ``args``."""
        if self.on_disk:
            cache.remember_fallback(self.path, self.digest, remembered_as, reason)
        self._use_python(reason)
        return as_numpy_scalars(self.py_func(*args))

    def _restorer(self, key, args):
        """(the function giving compiled results the types the same code gives as Python,
        the compiled result for ``args``): from the record beside the module when it is
        trusted (it fits the compiled result), else from one Python run (the reference),
        then recorded for later processes."""
        record_key = result_types.record_key(self.name, numba_version(), key)
        skeleton = result_types.recall(self.path, self.digest, record_key) \
            if self.on_disk else None
        if skeleton is not None:
            compiled = self._jitted(*args)
            try:
                return result_types.restorer_from(skeleton, compiled), compiled
            except result_types.StaleSkeleton:
                pass
        reference = self._reference(args)           # an error here names its line
        compiled = self._jitted(*args)
        skeleton = result_types.skeleton_of(reference)
        if skeleton is None:
            return result_types.restorer_like(reference, compiled), compiled
        restore = result_types.restorer_from(skeleton, compiled, strict=False)
        if self.on_disk and result_types.complete(skeleton):
            result_types.remember(self.path, self.digest, record_key, skeleton)
        return restore, compiled

    #: whether the Python reference run takes copies of the arrays (code that writes into
    #: its arguments, as a function compiled by ``s2sgrad.jit`` may: the compiled run that
    #: follows must find them as the caller gave them)
    copies_inputs = False

    def _reference(self, args):
        """The result of the code run as Python on ``args`` (its types are the reference
        for the compiled results)."""
        self.reference_runs += 1
        if self.copies_inputs:
            args = [np.copy(a) if isinstance(a, np.ndarray) else a for a in args]
        return as_numpy_scalars(self.py_func(*args))

    def _compile(self, args):
        """Compile the dispatcher for the Numba types of ``args``; returns the signature.

        A Numba cache beside the module that cannot be read or written (corrupt
        index or data file, read-only folder) is dropped and the code compiled
        afresh; typing failures propagate.
        """
        if self._jitted is None:
            self._jitted = self._dispatcher(cache_it=self.on_disk)
        signature = tuple(self._jitted.typeof_pyval(a) for a in args)
        try:
            self._jitted.compile(signature)
            return signature
        except Exception as exc:  # noqa: BLE001 - a typing failure is the user's code
            if _is_typing_failure(exc):
                raise
            first = exc
        _drop_numba_cache(self._jitted)
        self._jitted = self._dispatcher(cache_it=True)
        try:
            self._jitted.compile(signature)
            return signature
        except Exception as exc:  # noqa: BLE001
            if _is_typing_failure(exc):
                raise
        cache.warn_once(("numba-cache", os.path.dirname(self.path or "")),
                        f"s2sgrad could not use Numba's cache beside {self.path} "
                        f"({type(first).__name__}: {first}); the gradient is compiled "
                        f"without it, again in every process.")
        self._jitted = self._dispatcher(cache_it=False)
        self._jitted.compile(signature)
        return signature

    def _dispatcher(self, cache_it):
        import numba
        skip = self.skips_else
        if cache_it and self.disk_cached:
            try:
                return numba.njit(cache=True)(with_compiled_helpers(self.py_func, True, skip))
            except RuntimeError as exc:    # no folder Numba can write its cache to
                cache.warn_once(("numba-cache", os.path.dirname(self.path or "")),
                                f"Numba cannot cache compiled code for {self.path} ({exc}); "
                                f"the gradient is compiled again in every process.")
        return numba.njit(cache=False)(with_compiled_helpers(self.py_func, False, skip))


def with_compiled_helpers(py_func, cache_it, skip_else=False):
    """``py_func`` itself, or, when it reads other functions of its module (the step
    functions of a checkpointed loop, fused loops), a copy of it reading Numba-compiled
    versions of them: the module keeps its Python functions for the Python runs.  A
    helper the code only passes on as a value (to ``rt.checkpoint_*``) is read as its token
    (``numba_checkpoint.step_token``): Numba cannot cache code holding a function value.
    Where the module defines ``rt.SKIP_ELSE``, the copy reads ``skip_else`` there: True,
    Numba prunes the numpy else-branches of the fused loops (module ``rt.SKIP_ELSE``)."""
    import types

    import numba

    from .numba_checkpoint import step_token
    module = py_func.__globals__
    helpers = [name for name in py_func.__code__.co_names
               if isinstance(module.get(name), types.FunctionType)
               and module[name] is not py_func and module[name].__module__ == py_func.__module__]
    if not helpers and SKIP_ELSE not in module:
        return py_func
    called = _called_globals(py_func)
    scope = dict(module)
    if SKIP_ELSE in module:
        scope[SKIP_ELSE] = skip_else
    for name in helpers:
        fn = module[name]
        scope[name] = numba.njit(cache=cache_it)(
            types.FunctionType(fn.__code__, scope, fn.__name__, fn.__defaults__))
        if called is not None and name not in called:
            scope[name] = step_token(scope[name])
    copied = types.FunctionType(py_func.__code__, scope, py_func.__name__,
                                py_func.__defaults__)
    copied.__qualname__ = py_func.__qualname__
    return copied


def _called_globals(py_func):
    """The global names ``py_func`` calls (Python 3.11 on: a LOAD_GLOBAL that pushes the
    NULL of a call), or None where the bytecode does not tell calls from other reads."""
    import dis
    import sys
    if sys.version_info < (3, 11):
        return None
    return {ins.argval for ins in dis.get_instructions(py_func)
            if ins.opname == "LOAD_GLOBAL" and ins.arg & 1}


#: seconds a first call may compile before s2sgrad says on stderr that it is compiling
COMPILE_NOTICE_AFTER_S = 1.0


def slow_compile_notice(path):
    """A started timer that prints one line to stderr if the compile it guards is still
    running after ``COMPILE_NOTICE_AFTER_S`` seconds (a cached load is quicker and says
    nothing); ``S2SGRAD_QUIET=1`` silences it.  Cancel it when the compile ends."""
    import sys
    import threading
    what = os.path.basename(path) if path else "the gradient"

    def say():
        print(f"s2sgrad: compiling {what} with Numba (first call for these argument "
              f"types; later calls and processes reuse it; S2SGRAD_QUIET=1 silences this)",
              file=sys.stderr, flush=True)

    timer = threading.Timer(COMPILE_NOTICE_AFTER_S, say)
    timer.daemon = True
    if os.environ.get("S2SGRAD_QUIET", "").strip() not in ("", "0"):
        return timer            # never started: cancel() is harmless
    timer.start()
    return timer


def _drop_numba_cache(dispatcher):
    """Delete the Numba index and data files of ``dispatcher``'s function (if it has any)."""
    files = getattr(getattr(dispatcher, "_cache", None), "_cache_file", None)
    index = getattr(files, "_index_path", None)
    if index is None:
        return
    folder, stem = os.path.split(index)
    stem = stem[:-len(".nbi")]
    try:
        names = os.listdir(folder)
    except OSError:
        return
    for name in names:
        if name.startswith(stem) and name.endswith((".nbi", ".nbc")):
            try:
                os.unlink(os.path.join(folder, name))
            except OSError:
                pass


def numba_version():
    """Numba's version, read without importing Numba (which costs a second)."""
    global _numba_version
    if _numba_version is None:
        from importlib import metadata
        try:
            _numba_version = metadata.version("numba")
        except metadata.PackageNotFoundError:
            import numba
            _numba_version = numba.__version__
    return _numba_version


def argument_key(args):
    """A key naming the types of ``args`` at least as finely as Numba types them (cheap to
    compute: it is looked up on every call); ``key_text`` writes it for people."""
    return tuple(_describe(a) for a in args)


def key_text(key):
    """``argument_key``'s key as text: ``array(<f8, 1d, C), float``."""
    return ", ".join(_text(part) for part in key)


def _describe(value):
    if type(value) is np.ndarray:
        flags = value.flags
        layout = "C" if flags.c_contiguous else "F" if flags.f_contiguous else "A"
        return (value.dtype, value.ndim, layout, flags.writeable)
    if isinstance(value, list):    # Numba types a list by its first item (lists are uniform)
        return (list, (_describe(value[0]),) if value else ())
    if isinstance(value, tuple):
        return (tuple, tuple(_describe(v) for v in value))
    if isinstance(value, np.ndarray):       # a subclass: described as Numba sees it
        return _describe(np.asarray(value))
    return type(value)


def _text(part):
    if isinstance(part, type):
        return part.__name__
    if len(part) == 2:
        return f"{part[0].__name__}({', '.join(_text(p) for p in part[1])})"
    dtype, ndim, layout, writeable = part
    return f"array({dtype.str}, {ndim}d, {layout}" + ("" if writeable else ", readonly") + ")"


def as_numpy_scalars(result):
    """``result`` with every Python number in it (in tuples and lists) made the numpy
    scalar of its dtype (Python floats become np.float64, ints np.int64, bools np.bool_)."""
    if isinstance(result, tuple):
        return tuple(as_numpy_scalars(v) for v in result)
    if isinstance(result, list):
        return [as_numpy_scalars(v) for v in result]
    if isinstance(result, (bool, int, float, complex)) and not isinstance(result, np.generic):
        try:
            return np.asarray(result)[()]
        except OverflowError:
            return result
    return result


def _is_typing_failure(exc):
    import numba.core.errors as nerr
    return isinstance(exc, (nerr.TypingError, nerr.UnsupportedError, nerr.LoweringError,
                            nerr.NumbaError, NotImplementedError))


def undecided_state():
    """(backend, fallback_reason) of a gradient not called yet."""
    if backend_mode() == "python":
        return "python", ENV_REASON
    return UNDECIDED, UNDECIDED_REASON
