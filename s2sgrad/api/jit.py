"""``jit(fn)``: a function compiled as written, not differentiated (``Jit``).

Takes a function, a method, a Cell, or a derivative object; gives an object called like
``fn`` that, on its first call with arguments of some types, has the compiler's front end
read ``fn`` (``compiler/pipeline_primal.py``): the user's functions it calls are inlined,
and so is the generated code of every plain ``grad(f, positions)`` and
``value_and_grad(f, positions)`` it calls (as the front end inlines them into a
differentiated function), so the module makes no Python-level call of them.  The module
(one function of the arguments' leaves, each line under its user line) is cached on disk
like a gradient and run by the same backend policy (``S2SGRAD_BACKEND=auto``: Numba when
it has loops, numpy calls otherwise; ``backend`` and ``fallback_reason`` say what ran);
``s2sgrad.show(jitted, *args)`` prints it.  A derivative object the front end does not
inline (a jacfwd, a grad with has_aux...) is called from the module as it is: Numba
cannot compile that call, so the module then runs as Python, saying why.  A jit of a
derivative object whose module can only run as Python (Numba has no version of a call
in it: ``rt.einsum``...) is the object's own call, never slower than without ``jit``
(its batched numpy sweep: ht's einsum spelling's ``jit(jacfwd)`` ran its inlined
per-direction loop as Python, 18 ms, now the jacfwd's own 2 ms).

What ``Derivative`` (the base) gives a ``Jit`` too: a build per argument signature (dtypes,
ranks, unit dimensions, structures, options' values), the values read from outside checked
at each call (a global, a closure or an attribute the function or an inlined callee read
that changed builds again: ``api/guards.py``), arrays read from outside passed at each
call, call plans (``call_plan.JitPlan``: a repeated call tests its arguments and runs the
code), binding as a method (``@jit`` on a Cell's ``construct``), errors naming the user's
line, pickling.

Composition: ``jit`` is transparent.  Every transform of a ``Jit`` is that of the function
it compiles (``grad(jit(f))`` is ``grad(f)``: ``arguments.check_function`` reads
``__s2sgrad_transparent__``), and a ``Jit`` called inside a function being differentiated
or compiled is lowered as a call of its function.  ``jit(grad(f))`` compiles a call of
the derivative object (``_derivative_driver``).
"""
import inspect

from ..backend import cache
from ..backend.numba_backend import backend_mode
from ..compiler.pipeline_primal import build_primal
from ..errors import GradientArgumentError, S2sgradError
from ..nn import Cell
from ..tensor import Tensor
from .arguments import check_function, free_values, to_array
from .call_plan import MISS, JitPlan, plan_key
from .derivative import Derivative, derivative_for
from .results import float_dtype, wrap_output


def jit(fn=None):
    """``fn`` compiled as written (module doc); a decorator too (``@jit`` or ``@jit()``).
    Kept per function while it lives: ``jit(f)(x)`` written in a loop builds once."""
    if fn is None:
        return jit
    fn = check_function(fn, "jit")      # jit(jit(f)) is jit(f)
    if isinstance(fn, Jit):
        return fn
    try:
        hash(fn)
    except TypeError:
        return Jit(fn)
    return derivative_for(fn, ("jit", backend_mode(), cache.cache_dir()), lambda: Jit(fn))


class Jit(Derivative):
    """What ``jit`` gives: call it like the function (module doc).

    ``source`` is the generated module, ``path`` its file, ``backend`` 'numba', 'numpy' or
    'python' and ``fallback_reason`` why not Numba, for the last call.
    """

    name_suffix = "_jit"
    #: the function a jit of a derivative object compiles is made again where unpickled
    _NOT_PICKLED = Derivative._NOT_PICKLED + ("_driver",)

    def __init__(self, fn):
        super().__init__(fn, ())
        self.__doc__ = f"{self.name} compiled by s2sgrad."

    def __repr__(self):
        return f"<s2sgrad jit of {self.name}, backend {self.backend!r}>"

    @property
    def __s2sgrad_transparent__(self):
        """What a transform of this object transforms, and what a call of it inside a
        function being differentiated or compiled is lowered as: the function itself."""
        return self.fn

    # ------------------------------------------------------------ hooks

    def build_code(self, fn, bound_self, arg_types, trees):
        try:
            return build_primal(fn, bound_self, arg_types, trees)
        except S2sgradError as exc:
            exc.add_note(f"s2sgrad: raised while compiling {self.name} for s2sgrad.jit, whose "
                         f"front end is the one gradients are built with (what it refuses in "
                         f"a differentiated function, it refuses here)")
            raise

    def load_code(self, generated):
        compiled, path = super().load_code(generated)
        compiled.copies_inputs = True     # the function may write into its arguments
        compiled.skips_else = False       # (so a call is never run again after a write)
        return compiled, path

    def bind_to(self, method, weights):
        return Jit(method)

    def _target(self):
        if getattr(self.fn, "derivative_mode", None) is not None or not (
                inspect.isfunction(self.fn) or inspect.ismethod(self.fn) or
                isinstance(self.fn, Cell)):
            if "_driver" not in self.__dict__:
                self._driver = _derivative_driver(self.fn, self.name)
            return self._driver, None
        return super()._target()

    def _check_positions(self, args):
        """Nothing is differentiated: no positions to check."""

    # ------------------------------------------------------------ calling

    def __call__(self, *args, **kwargs):
        if "_driver" in self.__dict__ and getattr(self._compiled, "backend", None) == "python":
            return self.fn(*args, **kwargs)     # the object's own call (module doc)
        hot = self._hot
        if hot is not None and not kwargs:
            result = hot.hot_call(self, args)      # the last plan, its key not rebuilt
            if result is not MISS:
                return result
        if self._plans and not kwargs:
            plan = self._plans.get(plan_key(args))
            if plan is not None:
                inputs = [to_array(a) for a in args] if plan.tensor_args else args
                result = self._run_plan(plan, inputs)
                if result is not None or self._last is plan.signature:
                    self._hot = plan if plan.hot_call is not None else None
                    return self._shaped(result, plan.tensor_args, args, plan.free)
        generated, arrays, leaves, trees = self._prepare(args, kwargs)
        inputs = [*arrays, *free_values(generated)]
        result = self._run(generated, inputs)
        self._remember_plan(None if kwargs else plan_key(args), JitPlan, args, leaves,
                            inputs, None if kwargs else plan_key(args))
        tensors = any(isinstance(a, Tensor) for a in leaves)
        return self._shaped(result, tensors, leaves, generated.free)

    @staticmethod
    def _shaped(result, tensors, leaves, free):
        """The result as the function gives it: Tensors where it ran on Tensors (an
        argument, or a value read from outside, is one)."""
        held = [a for a in leaves if isinstance(a, Tensor)] + [
            f.obj for f in free if isinstance(f.obj, Tensor)]
        if not tensors and not held:
            return result
        return wrap_output(result, float_dtype(held))


_DRIVER_SOURCE = '''"""A derivative object called as a function, for s2sgrad.jit to compile (generated by
s2sgrad.api.jit)."""


def make(derivative):
    def {name}({params}):
        return derivative({params})

    return {name}
'''


def _derivative_driver(obj, name):
    """A Python function (with source, so that the front end reads it) of ``obj``'s
    parameters that calls ``obj``: what ``jit`` of a derivative object (or another
    callable object) compiles."""
    try:
        params = list(inspect.signature(obj).parameters.values())
    except (TypeError, ValueError):
        params = None
    if params is None or any(p.kind not in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
                             for p in params):
        raise GradientArgumentError(
            f"jit of {obj!r}: s2sgrad compiles a callable whose parameters it can read "
            f"(a function, a method, a Cell, a derivative object of one) and that takes "
            f"named positional parameters; jit the function it calls instead")
    names = ", ".join(f"a{k}" for k in range(len(params)))
    ident = "".join(c if c.isalnum() else "_" for c in name) or "f"
    source = _DRIVER_SOURCE.format(name=f"{ident}_call", params=names)
    return cache.materialise(f"{ident}_jit_driver", source, "make")[0](obj)


#: a jit written inside a function being differentiated or compiled is made while building
jit.__s2sgrad_transform__ = "makes"
