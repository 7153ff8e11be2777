"""What s2sgrad changes in Numba's compile of generated code (issue 20's cold compile).

``generated_code()`` is a context manager; the Numba compiles run inside it (a generated
function and everything it pulls in) differ from Numba's own in three ways, none of
which changes a computed bit:

- **A plain slice-assignment check.** ``a[i] = b`` (an array written into a row or a
  slice) raises ``ValueError("cannot assign slice from input of different size")`` when
  ``b`` has another shape, the message Numba raises on targets without strings, instead
  of its CPU message, which formats both shapes in compiled code: the first such write in
  a process made Numba compile ``str``/``repr`` of integers, ``hasattr``, string joins and
  concatenation (18 of the 42 functions of GradBench's lstm eval, ~2.5 s).  Users never
  see either message: an error raised in compiled code is raised again by the same code
  run as Python (``api/derivative.Derivative._noted``), with numpy's message and the
  user's line.
- **One scalar kernel per array-expression form.** Numba lowers each array expression
  (``t6 = 1.0 + t5``, ``dt = -g * y / x``) as a loop around a scalar kernel it compiles
  anew for every statement; generated code repeats a few forms (the 15-step LSTM: 37
  expressions of 11 forms, GradBench's lstm 47 of 13, ode 23 of 7).  Here a kernel is
  compiled once per form and argument types (``_kernel``) and reused, with the error model
  and flags Numba uses; the loop around it is Numba's own.  Forms it does not spell
  (comparisons, constants that are not plain numbers, ufuncs outside numpy) go to Numba's
  lowering unchanged.

- **One build of a helper per process.**  Numba keys the implementation of an
  ``@overload`` (an ``rt`` helper, ``np.zeros``, ``np.empty``...) by its argument types
  *and the caller's whole compile flags*; generated code and a helper's implementation
  differ in flags that do not reach the callee (wrapper options), so a helper called from
  both (``np.zeros_like`` from the gradient and from ``rt.zeros_like``) was typed,
  lowered and optimised twice.  Here (``_shared_impl``) it is keyed by the options an
  implementation inherits from its caller (``INHERITED``: fast-math, error model, NRT...)
  and built without the Python and C entry points it never uses (it is only called from
  compiled code, as Numba's own internal functions are: ``CALLED_FROM_COMPILED_CODE``).
  The 15-step LSTM: 34 -> 31 functions compiled, 83 -> 58 functions through LLVM's
  per-function passes, 1.38 -> 1.26 MB of IR made machine code (issue 20).

- (Measured and not kept: skipping Numba's per-function LLVM pre-pass for generated
  functions, leaving them to the module pipeline, cut LLVM's time by 0.25-0.6 s on the
  LSTMs but made bench_workloads' heat stencils' loops 1.5-2x slower: heat 1-D copy after
  the loop 0.138 -> 0.279 ms, 2-D 0.195 -> 0.296 ms.  Nor loop unrolling off in the
  generated function's pipelines: half the optimised IR (7,755 -> 3,739 instructions for
  the 15-step LSTM) and 0.4-0.8 s less CPU for the LSTMs and ode, but heat 2-D 0.136 ->
  0.152 ms and the recurrence 0.330 -> 0.342 ms, best of three alternating runs.)

The swaps hold Numba's compiler lock, so no other thread compiles while they are in
place, and Numba's own behaviour is back when the compile ends (a user's ``@njit`` code
compiled later gets Numba's message and lowering).  A Numba without these hooks is used
as it is.
"""
import contextlib
import hashlib
import math
import operator
from types import SimpleNamespace

import numpy as np
from numba.core import compiler, ir, targetconfig, types
from numba.core.compiler_lock import global_compiler_lock
from numba.core.registry import cpu_target
from numba.core.typing import templates
from numba.extending import overload
import numba.np.arrayobj as _arrayobj
import numba.np.ufunc.array_exprs as _array_exprs

#: what a slice assignment of the wrong shape raises in code s2sgrad compiled
MESSAGE = "cannot assign slice from input of different size"


def shape_mismatch(src_shapes, index_shape):
    """Raise the ``ValueError`` of a slice assignment whose shapes differ (the stand-in
    for ``numba.np.arrayobj.raise_with_shape_context`` during s2sgrad's compiles)."""
    raise ValueError(MESSAGE)


@overload(shape_mismatch)
def _shape_mismatch(src_shapes, index_shape):
    def impl(src_shapes, index_shape):
        raise ValueError(MESSAGE)
    return impl


@contextlib.contextmanager
def generated_code():
    """Compiles inside get the plain message and shared kernels (module doc)."""
    special = cpu_target.target_context.special_ops
    with global_compiler_lock:
        message = getattr(_arrayobj, "raise_with_shape_context", None)
        installed = special.get("arrayexpr")     # (Numba installs it on its first compile)
        lowering = installed or getattr(_array_exprs, "_lower_array_expr", None)
        if message is not None:
            _arrayobj.raise_with_shape_context = shape_mismatch
        if lowering is not None:
            special["arrayexpr"] = _shared_kernel_lowering(lowering)
        builds = templates._OverloadFunctionTemplate.__dict__.get("_get_impl")
        if builds is not None:
            templates._OverloadFunctionTemplate._get_impl = _shared_impl
        try:
            yield
        finally:
            if builds is not None:
                templates._OverloadFunctionTemplate._get_impl = builds
            if message is not None:
                _arrayobj.raise_with_shape_context = message
            if installed is not None:
                special["arrayexpr"] = installed
            else:
                special.pop("arrayexpr", None)


#: the options a function Numba compiles takes from its caller's (``CPUTargetOptions.finalize``)
INHERITED = ("nrt", "fastmath", "error_model", "forceinline", "boundscheck", "debuginfo")


#: an overload's implementation is only ever called from compiled code: no Python or C
#: entry point (what Numba's own ``compile_subroutine`` sets for its internal functions)
CALLED_FROM_COMPILED_CODE = {"no_cpython_wrapper": True, "no_cfunc_wrapper": True}


def _inherited(flags):
    """What of a caller's compile ``flags`` reaches an overload's implementation."""
    if flags is None:
        return None
    values = [getattr(flags, name, None) for name in INHERITED]
    values[1] = tuple(sorted(getattr(values[1], "flags", ()) or ()))
    return ("s2sgrad: inherited options", *values)


def _shared_impl(self, args, kws):
    """``_OverloadFunctionTemplate._get_impl``, its build keyed by the options the
    implementation inherits rather than by the caller's whole flags (module doc)."""
    flags = targetconfig.ConfigStack.top_or_none()
    key = self.context, tuple(args), tuple(kws.items()), _inherited(flags)
    built = self._impl_cache.get(key)
    if built is not None:
        return built
    self._jit_options = dict(self._jit_options, **CALLED_FROM_COMPILED_CODE)
    return self._build_impl(key, args, kws)


_BINARY = {operator.add: "+", operator.sub: "-", operator.mul: "*", operator.truediv: "/",
           operator.floordiv: "//", operator.mod: "%", operator.pow: "**"}
_UNARY = {operator.neg: "-", operator.pos: "+"}
_KERNELS = {}     # (form, flags) -> the kernel function (one code object per form)


class _Unspelt(Exception):
    """An array expression ``_form`` does not write (Numba's lowering takes it)."""


def _form(node, names):
    """The Python text of an array expression's tree, its variables named ``a0, a1, ...``
    in ``names`` (variable name -> parameter) by first appearance."""
    if isinstance(node, tuple):
        op, args = node
        parts = [_form(arg, names) for arg in args]
        if op in _BINARY and len(parts) == 2:
            return f"({parts[0]} {_BINARY[op]} {parts[1]})"
        if op in _UNARY and len(parts) == 1:
            return f"({_UNARY[op]}{parts[0]})"
        if isinstance(op, np.ufunc) and getattr(np, op.__name__, None) is op:
            return f"np.{op.__name__}({', '.join(parts)})"
        raise _Unspelt
    if isinstance(node, ir.Var):
        return names.setdefault(node.name, f"a{len(names)}")
    if isinstance(node, ir.Const) and type(node.value) in (int, float, bool) \
            and (type(node.value) is not float or math.isfinite(node.value)):
        return repr(node.value)
    raise _Unspelt


def _kernel(form, params, flags):
    """The scalar kernel of ``form`` (one function per form, parameters and flags).

    Its name holds a hash of all three: Numba names a compiled function by its name and
    a counter of the process (``array_expression_kernel$12``), and machine code loaded
    from Numba's disk cache brings the kernels it was compiled with under the names they
    had in *that* process; a kernel of another form compiled here under the same name
    and argument types was linked in its place (a gradient loaded from the cache after
    other compiles computed another expression: silently wrong).  With the hash, one
    name is one form."""
    key = (form, params, str(flags.fastmath), flags.boundscheck)
    impl = _KERNELS.get(key)
    if impl is None:
        name = "array_expression_kernel_" + hashlib.sha1(repr(key).encode()).hexdigest()[:16]
        scope = {"np": np}
        exec(compile(f"def {name}({', '.join(params)}):\n"
                     f"    return {form}\n", "<s2sgrad array expression>", "exec"), scope)
        impl = _KERNELS[key] = scope[name]
    return impl


def _shared_kernel_lowering(numba_lowering):
    """Numba's lowering of an ``arrayexpr`` (``numba.np.ufunc.array_exprs``), with its
    scalar kernel compiled once per form (``_kernel``) instead of once per statement."""
    from numba.np import npyimpl

    def lower(lowerer, expr):
        names = {}
        try:
            form = _form(expr.expr, names)
        except _Unspelt:
            return numba_lowering(lowerer, expr)
        outer = [lowerer.typeof(name) for name in names]
        if not all(isinstance(t, (types.Array, types.Number, types.Boolean)) for t in outer):
            return numba_lowering(lowerer, expr)
        context, builder = lowerer.context, lowerer.builder
        outer_sig = expr.ty(*outer)
        inner_sig = outer_sig.return_type.dtype(
            *[t.dtype if isinstance(t, types.Array) else t for t in outer])
        flags = targetconfig.ConfigStack().top_or_none()
        flags = compiler.Flags() if flags is None else flags.copy()
        flags.error_model = "numpy"        # as Numba compiles an array expression's kernel
        cres = context.compile_subroutine(builder, _kernel(form, tuple(names.values()), flags),
                                          inner_sig, flags=flags, caching=True)

        class Kernel(npyimpl._Kernel):
            def generate(self, *args):
                cast = [self.cast(value, have, want)
                        for value, have, want in zip(args, self.outer_sig.args, inner_sig.args)]
                result = self.context.call_internal(builder, cres.fndesc, inner_sig, cast)
                return self.cast(result, inner_sig.return_type, self.outer_sig.return_type)

        ufunc = SimpleNamespace(nin=len(names), nout=1, nargs=len(names) + 1,
                                __name__="array_expression_kernel")
        args = [lowerer.loadvar(name) for name in names]
        return npyimpl.numpy_ufunc_kernel(context, builder, outer_sig, args, ufunc, Kernel)
    return lower
