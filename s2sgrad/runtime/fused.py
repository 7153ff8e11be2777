"""``rt.Fused``: a chain of elementwise operations run as one loop compiled by Numba
(``compiler/optimize/kernels.py`` finds the chains, ``compiler/emit/kernels.py`` writes
them).

The generated module holds, per chain, a plain Python function of explicit loops over
2-D operands (``loops(out, a, b, ...)``: ``out[i, j] = <the chain>`` with an operand of
one row or one column read at row or column 0) and the chain as a numpy expression;
``_x_fused = rt.Fused(loops, numpy)`` sits beside it.  A call ``_x_fused(a, b, ...)`` (or
``kept.fused(_x_fused, a, b, ...)``, which adds ``out=``) runs

- the loops, compiled once by ``numba.njit(cache=True)`` (on disk: a later process loads
  them; not at another level of LLVM optimisation than Numba's default, ``_compiled``; in a thread of its own, started by the first call that would take them, which
  runs numpy's expression, as every call does until the compile is done), when every
  array operand is an exact float64 ``np.ndarray``, the other operands
  are Python or numpy numbers, the passes the loop saves (its operations less one, and
  ``BROADCAST_PASSES`` per operand of two axes or more broadcast) times the broadcast
  result's size reach ``FUSE_NUMBERS`` (and the result's size ``FUSE_NUMBERS / LEAST_SHARE``), and the operands' broadcast merges
  into two axes (adjacent axes on which every
  operand is either whole or of length 1 merge; ``(n, 1) + (1, k) - (n, k)`` is 2-D
  already, ``(n, k, d) * (k, d)`` is ``(n, k*d) * (1, k*d)``).  Each operand is passed
  reshaped to 2-D C order (a view of a C-ordered array, a copy of another);
- the numpy expression otherwise (small arrays, float32, integers, lists, a broadcast
  that does not merge into two axes, ``S2SGRAD_BACKEND=python``).

Every call decides afresh, so no result depends on what an earlier call was given, nor
on whether the compile has finished: both ways give the same numbers.  ``rt.shaped``
stands for a chain's value where only its shape is read once its values are fused into
a later chain (``compiler/optimize/kernels.py``); ``rt.FusedSum``
(``runtime/fused_sum.py``) is a chain summed over an axis.
Results are those of numpy's operators in float64, bit for bit: each number goes
through the same IEEE operations in the same order (the chains hold only ``+ - * /``,
negation, ``** 2`` and ``np.sqrt``/``np.abs``, never a reduction).  numpy's warnings
(division by zero, overflow) are not raised by the compiled loops; the infinities and
NaNs are the same.
"""
import os

import numpy as np

__all__ = ["Fused", "FUSE_NUMBERS", "wait_all", "shaped"]

#: the least (passes saved) x (result size) run compiled: 2**19 numbers, 4 MiB of float64
#: not written and read again (arrays past the caches), about 0.5 ms of numpy passes on
#: a 2-core machine, so one compile (0.3-1 s) pays within a few thousand calls; below it
#: numpy's expression runs.  Measured on GradBench (README, "GradBench"): kmeans' 10,000 x
#: 100 chains (2 and 1 passes saved) took its Newton step from 8.8 to 6.8 ms; gmm's
#: 1,000 x 25 x 10 and ba's 31,843 x 3 chains (1 pass saved: 2 MiB and 0.7 MiB, in cache)
#: gained nothing measurable and cost 2-3 s of compiles at the first call.
#: ``$S2SGRAD_FUSED_MIN`` sets another (the test suite one no array reaches, and
#: ``tests/test_fused_kernels.py`` its own).
FUSE_NUMBERS = int(os.environ.get("S2SGRAD_FUSED_MIN", 2 ** 19))
#: the passes numpy spends, beyond one, on an operand of two axes or more spread over
#: the result (a broadcast): its inner loops run over the operand's short rows, measured
#: 2.2x (``(k, d) * (n, k, d)``) to 6x (``(n, 1, d) - (1, k, d)``) a contiguous pass at
#: gmm's 1,000 x 25 x 10, so the loops count it as two passes saved (gmm's broadcast
#: adjoints, ``g[:, :, None] * 2 * a`` and ``a + b * q``: 0.48 -> 0.25 and 0.53 -> 0.18 ms)
BROADCAST_PASSES = 2
#: the least result size run compiled, whatever the passes saved, as a share of
#: ``FUSE_NUMBERS``: a quarter (2**17 numbers, 1 MiB of float64 at the default): a smaller result
#: stays in the caches, where numpy's extra passes are cheap (ba's (31843, 3) chains of 4
#: passes saved: no faster compiled, and 1.4-4 s of kernel compiles at the first call;
#: gmm's (1000, 25, 10) ones: 0.25 -> 0.13 ms)
LEAST_SHARE = 4
_FLOAT64 = np.dtype(np.float64)
_NUMBERS = (float, int, np.floating, np.integer)
#: the compiled loops of this process, by their code (``_compiled``)
_COMPILED = {}
#: compile in a thread of its own, the calls meanwhile running numpy's expression (the
#: first call stays as quick as without kernels); ``$S2SGRAD_FUSED_BACKGROUND=0``: at the
#: first call that takes the loops
BACKGROUND = os.environ.get("S2SGRAD_FUSED_BACKGROUND", "1") != "0"
_WORKER = None


class Fused:
    """One fused elementwise chain (module doc): ``loops`` (the Python loops, compiled at
    the first call that takes them), ``numpy`` (the chain as numpy operators) and
    ``operations`` (how many it holds)."""

    def __init__(self, loops, numpy, operations, ranks=None):
        self.loops, self.numpy, self.saved = loops, numpy, max(1, operations - 1)
        #: the rank of each of the loops' parameters (float64, C order): 2 for a chain's
        self.ranks = ranks or (2,) * loops.__code__.co_argcount
        self.compiled = None
        self.compiling = None           # the compile in flight: (process id, Future)
        self.__name__ = getattr(numpy, "__name__", "fused")

    def __call__(self, *args, out=None):
        plan = _plan(args, self.saved) if allowed() else None
        if plan is not None and self.compiled is None:
            self.start()
        if plan is None or self.compiled is None:
            result = self.numpy(*args)
            if out is None:
                return result
            out[...] = result
            return out
        shape, grid, operands = plan
        target = out if out is not None and out.flags.c_contiguous else np.empty(shape)
        self.compiled(target.reshape(grid), *operands)
        if out is not None and target is not out:
            out[...] = target
            return out
        return target

    def start(self):
        """Start compiling the loops (once): in a thread of its own unless
        ``BACKGROUND`` is off; until it is done, calls run the numpy expression."""
        loaded = _COMPILED.get(_code_key(self.loops))
        if loaded is not None:
            self.compiled = loaded
        elif not BACKGROUND:
            self.compiled = _compiled(self.loops, self.ranks)
        elif self.compiling is None or self.compiling[0] != os.getpid():
            self.compiling = (os.getpid(), _worker().submit(_compiled, self.loops, self.ranks))
            self.compiling[1].add_done_callback(self._done)

    def _done(self, future):
        if future.exception() is None:
            self.compiled = future.result()

    def ready(self):
        """The compiled loops, or None while they compile (the first call that asks
        starts the compile: ``start``)."""
        if self.compiled is None:
            self.start()
        return self.compiled

    def wait(self):
        """Wait for a compile in flight (tests; nothing needs it for its results)."""
        if self.compiling is not None:
            self.compiled = self.compiling[1].result()


def shaped(expression, *operands):
    """What ``expression(*operands)`` would be, for a reader of its shape, dtype and kind
    only (``rt.unbroadcast(g, t3)``, ``rt.unreduce``): the expression of ones of the
    operands' ranks and dtypes, spread over their broadcast shape as a read-only view
    (no pass over the elements); a number where the expression gives one.  The
    generated code binds it where a chain's result is fused into a later kernel
    (``compiler/optimize/kernels.py``).  Made once per expression and operand types,
    shapes and dtypes in a process (``_SHAPED``: ~14 us to make, ~2 to find, at ba's
    sizes).  An operand other than an array or a number (a list): the expression
    itself."""
    key = [expression.__code__]
    for arg in operands:
        kind = type(arg)
        if kind is np.ndarray:
            key.append((arg.shape, arg.dtype))
        elif isinstance(arg, np.generic) or kind in (int, float, complex, bool):
            key.append(kind)
        else:
            return expression(*operands)
    key = tuple(key)
    value = _SHAPED.get(key)
    if value is None:
        value = _stand_in(expression, operands)
        if len(_SHAPED) >= 4096:
            _SHAPED.clear()
        _SHAPED[key] = value
    return value


#: ``shaped``'s values, by the expression's code and its operands' types, shapes, dtypes
_SHAPED = {}


def _stand_in(expression, operands):
    """``shaped``'s value, made."""
    units = [np.ones((1,) * arg.ndim, arg.dtype) if type(arg) is np.ndarray else
             type(arg)(1) for arg in operands]
    value = expression(*units)
    if type(value) is not np.ndarray:
        return value
    return np.broadcast_to(value, np.broadcast_shapes(*(np.shape(a) for a in operands)))


def _worker():
    """The one thread that compiles kernels, one after the other (joined at exit; a
    forked child, which has no thread, starts its own)."""
    global _WORKER
    if _WORKER is None or _WORKER[0] != os.getpid():
        from concurrent.futures import ThreadPoolExecutor
        _WORKER = (os.getpid(), ThreadPoolExecutor(1, thread_name_prefix="s2sgrad-fused"))
    return _WORKER[1]


def wait_all():
    """Wait for every compile started so far (a benchmark's steady state; nothing needs
    it for its results)."""
    if _WORKER is not None and _WORKER[0] == os.getpid():
        _WORKER[1].submit(int).result()


def _code_key(loops):
    code = loops.__code__
    return code.co_code, code.co_consts, code.co_names, code.co_varnames


def _compiled(loops, ranks):
    """``numba.njit(cache=True)`` of ``loops`` compiled for float64 C arrays of ``ranks``
    (rank 0: an int64 number),
    one per code in the process (ba's two gradients fuse the same chains: one compile); without
    the disk cache when its module has no file Numba can cache beside (a cache folder
    that could not be written), or when Numba optimises at another level than its
    default (``NUMBA_OPT=0``, as the test suite runs): Numba's cache key does not hold
    the level, and a loop compiled unoptimised and cached there was loaded by every later
    process (a broadcast of gmm's: 16 ms instead of 0.12)."""
    key = _code_key(loops)
    compiled = _COMPILED.get(key)
    if compiled is None:
        import numba
        from numba.core import config
        try:         # numpy's errors: x / 0 is an infinity or a NaN, never an exception
            compiled = numba.njit(cache=int(config.OPT) == 3, error_model="numpy")(loops)
        except RuntimeError:
            compiled = numba.njit(error_model="numpy")(loops)
        arrays = {0: numba.int64, 1: numba.float64[::1], 2: numba.float64[:, ::1],
                  3: numba.float64[:, :, ::1]}
        compiled.compile(tuple(arrays[rank] for rank in ranks))
        _COMPILED[key] = compiled
    return compiled


def c_operand(arg, shape):
    """The array ``arg`` reshaped to ``shape``, C-ordered and writeable, as the loops
    were compiled for (a read-only view, ``np.broadcast_to``'s, would be another type to
    Numba: a compile on the caller's thread at the call)."""
    arg = np.ascontiguousarray(arg.reshape(shape))
    return arg if arg.flags.writeable else arg.copy()


def float64_out(out, shape):
    """Where a kernel of a helper writes a float64 result of ``shape``: ``out`` when it is
    a C-ordered float64 array of that shape, a new array when it is None; None when it
    is anything else (the helper leaves the call to numpy)."""
    if out is None:
        return np.empty(shape)
    if type(out) is not np.ndarray or out.shape != shape or out.dtype != _FLOAT64 or \
            not out.flags.c_contiguous:
        return None
    return out


def allowed():
    """Whether kernels may run compiled: not under ``S2SGRAD_BACKEND=python`` (no Numba
    at all), read at every call as the backend reads it."""
    return os.environ.get("S2SGRAD_BACKEND", "auto").strip().lower() != "python"


def _plan(args, saved):
    """``(shape, (rows, columns), operands in 2-D)`` when the loops run (module doc),
    else None."""
    shape = float64_broadcast(args)
    if shape is None:
        return None
    size = 1
    for n in shape:
        size *= n
    args = [collapsed(arg) for arg in args]
    if size * (saved + spread_passes(args, shape)) < FUSE_NUMBERS or size == 0 or \
            size * LEAST_SHARE < FUSE_NUMBERS:
        return None
    grid, dims = merged(shape, args)
    if grid is None:
        return None
    operands = []
    for arg, (r, c) in zip(args, dims):
        if type(arg) is np.ndarray:
            operands.append(c_operand(arg, (r, c)))
        else:
            operands.append(np.full((1, 1), float(arg)))
    return shape, grid, operands


def float64_broadcast(args):
    """The broadcast shape of ``args`` when every array among them is an exact float64
    ``np.ndarray``, the others Python or numpy numbers (not bools) and one at least is
    an array; else None (numpy runs the call, and raises its own errors)."""
    shapes = []
    for arg in args:
        if type(arg) is np.ndarray:
            if arg.dtype != _FLOAT64:
                return None
            shapes.append(arg.shape)
        elif not isinstance(arg, _NUMBERS) or isinstance(arg, (bool, np.bool_)):
            return None
    if not shapes:
        return None
    try:
        return np.broadcast_shapes(*shapes)
    except ValueError:
        return None


def spread_passes(args, shape):
    """The passes numpy spends beyond one on the operands of ``args`` (collapsed) that
    have two axes or more and are spread over ``shape`` (``BROADCAST_PASSES`` each)."""
    return sum(BROADCAST_PASSES for arg in args
               if type(arg) is np.ndarray and arg.ndim > 1 and arg.shape != shape)


def collapsed(arg):
    """``arg`` with each axis it repeats (stride 0, as ``np.broadcast_to`` and
    ``rt.unreduce`` make) cut to length 1: an operand the loops read at index 0 there,
    never copied out to the full shape; anything else as it is."""
    if type(arg) is not np.ndarray or 0 not in arg.strides or arg.size == 0:
        return arg
    return arg[tuple(slice(0, 1) if step == 0 else slice(None) for step in arg.strides)]


def merged(shape, args, most=2):
    """``((rows, columns), per operand its (rows, columns))`` of the broadcast ``shape``
    merged into two axes, or ``(None, None)`` when it needs more; with ``most=3``, three
    axes (``runtime/broadcast.py``) the same way."""
    rank = len(shape)
    masks = []                        # per axis: which operands are whole along it
    for axis, n in enumerate(shape):
        if n == 1:
            continue
        whole = []
        for arg in args:
            if type(arg) is np.ndarray:
                k = axis - (rank - arg.ndim)
                whole.append(k >= 0 and arg.shape[k] != 1)
            else:
                whole.append(False)
        masks.append((tuple(whole), n))
    groups = []                       # runs of adjacent axes with one mask
    for whole, n in masks:
        if groups and groups[-1][0] == whole:
            groups[-1][1] *= n
        else:
            groups.append([whole, n])
    if len(groups) > most:
        return None, None
    while len(groups) < most:
        groups.insert(0, [tuple(False for _ in args), 1])
    grid = tuple(n for _, n in groups)
    dims = [tuple(n if whole[k] else 1 for whole, n in groups) for k in range(len(args))]
    return grid, dims
