"""What a repeated call of a derivative can skip: the checks and flattening its first call did.

A derivative's first call with arguments of some types checks them (positions in range,
floating-point values where it differentiates), flattens containers, builds or finds
the code for their signature and learns which results are gradients of what.  A later
call whose arguments have the same ``plan_key`` passes the same checks and runs the same
code, so a derivative (``api.derivative.Derivative``: ``GradFunction``, and
``ForwardFunction`` for ``jvp`` and ``jacfwd``, ``SplitFunction`` for ``vjp`` and
``jacrev``) keeps a ``CallPlan`` per key and, on a hit,
only takes the arrays out of Tensors, reads the values the code reads from outside, runs
the code (for gradients and jvp the Numba dispatcher itself, ``Compiled.runner``) and
shapes the results: microseconds less per call, which matters for small derivatives
called in a loop (``benchmarks/bench_call_overhead.py``).

Only calls with positional arguments that are each a single value (an array, a Tensor, a
number, an option such as None or a string) are planned; containers, keywords and
defaults filled in take the full path every time.

A gradient also keeps its last plan *hot* where nothing of the call needs Python-side
shaping (no Tensors, weights, aux, ids or values read from outside): the plan's
``hot_call`` (``hot_function_of``: one function compiled from source) tests each
argument's type, dtype, rank, layout, unit dimensions and size class against the plan's
(what ``plan_key`` reads, without building and hashing a key; ``matcher_of`` gives the
test alone), checks that the code is still the derivative's current one and that what
it read from outside is unchanged (``api/guards.py``), runs it and finishes the
gradients; a ``grad``'s call runs the code without converting the value it drops
(``Compiled.gradients_runner``: the Numba dispatcher, or the Python function of code
run as numpy).  Where a test fails it gives None and the call takes the path above.
A ``jvp`` keeps its last call's plan hot the same way (``JvpPlan``, kept on the function
by ``forward.jvp``), its tangents tested too: of the code's types, and exactly zero
where the code leaves their input out, not zero where it takes them (a tangent's first
number read first: no pass over a tangent that is not zero there).
"""
import numpy as np

from ..compiler.analysis.shapes import unit_dimensions
from ..runtime import buffers
from ..tensor import Tensor
from .guards import holds
from .arguments import zero_tangent
from .results import finish_gradient, like_outputs

#: the bits of ``ndarray.flags.num`` that Numba types an array by (NumPy's C API values):
#: C-contiguous 0x1, Fortran-contiguous 0x2, aligned 0x100, writeable 0x400
NUMBA_FLAGS = 0x1 | 0x2 | 0x100 | 0x400
#: those of a C-ordered, aligned, writeable array (what Numba types as a plain C array)
C_ALIGNED_WRITEABLE = 0x1 | 0x100 | 0x400


def plan_key(args):
    """A key at least as fine as the signature the code is built for (dtype, rank, unit
    dimensions and size class of each array, the value of each option) and as the types
    Numba compiles for (an array's layout and writeability), telling Tensors and
    Parameters from arrays; None when the call cannot be planned (an argument is a
    tuple, list or dict)."""
    key = []
    for a in args:
        kind = type(a)
        if kind is np.ndarray:
            key.append(_array_key(kind, a))
        elif kind is float or kind is int:
            key.append(kind)
        elif kind is Tensor:
            key.append(_array_key(kind, a._data))
        elif a is None or kind is bool or kind is str or kind is np.bool_:
            key.append(("option", kind, a))
        elif isinstance(a, (tuple, list, dict)):    # a namedtuple too: flattened
            return None
        elif isinstance(a, Tensor):          # a Parameter
            key.append(_array_key(kind, a._data))
        elif isinstance(a, np.ndarray):      # a subclass: built as its base class
            key.append(_array_key(kind, a))
        else:
            key.append(kind)
    return tuple(key)


def _array_key(kind, array):
    """What ``plan_key`` keeps of an array (``kind``: the argument's type)."""
    return (kind, array.dtype, array.ndim, array.flags.num & NUMBA_FLAGS,
            1 in array.shape and unit_dimensions(array),
            array.nbytes >= buffers.KEEP_BYTES)     # its size class (``large_array``)


def matcher_of(key):
    """A function of a call's argument tuple that is True only when ``plan_key`` of it is
    ``key`` (each argument's test as ``plan_key`` reads it, compiled from source), or
    None for a key with Tensors or array subclasses (the full ``plan_key`` then)."""
    tests = _argument_tests(key)
    if tests is None:
        return None
    test, values = tests
    return _compiled("matches(args)", f"return {test}", "False", len(key), values)


def _argument_tests(key):
    """(the Python expression over ``a0``, ``a1``... true only for arguments whose
    ``plan_key`` is ``key``, the names it reads), or None (``matcher_of``)."""
    tests, values = [], {"ndarray": np.ndarray, "unit_dimensions": unit_dimensions,
                         "KEEP": buffers.KEEP_BYTES, "M": NUMBA_FLAGS}
    for k, part in enumerate(key):
        a = f"a{k}"
        if isinstance(part, tuple) and part[0] is np.ndarray:
            _, dtype, ndim, flags, units, large = part
            values[f"d{k}"], values[f"u{k}"] = dtype, units
            tests.append(f"type({a}) is ndarray and {a}.dtype is d{k} and {a}.ndim == {ndim} "
                         f"and {a}.flags.num & M == {flags} and " +
                         (f"1 not in {a}.shape" if units is False else
                          f"unit_dimensions({a}) == u{k}") +
                         f" and {a}.nbytes {'>=' if large else '<'} KEEP")
        elif isinstance(part, tuple) and part[0] == "option":
            values[f"t{k}"], values[f"v{k}"] = part[1], part[2]
            tests.append(f"{a} is None" if part[2] is None else
                         f"type({a}) is t{k} and {a} == v{k}")
        elif isinstance(part, type) and not issubclass(part, (np.ndarray, Tensor)):
            values[f"t{k}"] = part
            tests.append(f"type({a}) is t{k}")
        else:
            return None
    return " and ".join(f"({t})" for t in tests) or "True", values


def _compiled(head, body, miss, arity, values):
    """The function ``def {head}`` whose ``args`` (a tuple of ``arity``) are unpacked into
    ``a0``, ``a1``... before ``body`` runs (``miss`` for another count), compiled
    from source with ``values`` as its globals."""
    names = "".join(f"a{k}, " for k in range(arity))
    source = (f"def {head}:\n"
              f"    if len(args) != {arity}:\n"
              f"        return {miss}\n"
              f"    ({names}) = args\n" +
              "".join(f"    {line}\n" for line in body.splitlines()))
    exec(compile(source, "<s2sgrad call plan>", "exec"), values)   # noqa: S102
    return values[head.split("(")[0]]


def hot_function_of(plan, key):
    """``plan.hot_call`` (``GradientPlan``): one function, compiled from source, of the
    derivative and a call's argument tuple giving its result, or None where the full
    path must decide (the arguments' ``plan_key`` is not ``key``, the code is no longer
    the derivative's current one, a value it read from outside changed, or it now runs
    as Python); None for a key ``matcher_of`` cannot test."""
    tests = _argument_tests(key)
    if tests is None:
        return None
    test, values = tests
    arity = len(key)
    names = ", ".join(f"a{k}" for k in range(arity))
    grads = [f"finish(computed[{slot}], a{i})" if slot is not None else f"finish(None, a{i})"
             for i, slot in plan.positions]
    result = grads[0] if plan.one else f"({', '.join(grads)},)"
    values.update(finish=finish_gradient, holds=holds, signature=plan.signature,
                  compiled=plan.compiled, backend=plan.backend, generated=plan.generated,
                  run=plan.run if plan.with_value else plan.run_grads)
    body = _hot_body(test, plan.guarded, "None", names, f"value, computed = run({names})") + \
        "return " + (f"value, {result}" if plan.with_value else result)
    return _compiled("hot_call(derivative, args)", body, "None", arity, values)


def free_units_changed(free_values, arrays):
    """True when an array the code reads from outside (a Parameter, a global) no longer
    has 1s where it had them when the code was built: the code must be built again."""
    for value, array in zip(free_values, arrays):
        units = value.units
        if units is not None and (1 in array.shape or True in units or
                                  len(units) != array.ndim) and unit_dimensions(array) != units:
            return True
    return False


class CallPlan:
    """What calls with one ``plan_key`` reuse: the code built for them (``signature``, the
    key of ``Derivative._variants``, and its ``variant``: Generated, Compiled, path),
    whether Tensors are among the arguments or the values the code reads from outside
    (``free``), and ``run``: what runs the code for these argument types.

    ``inputs`` are the code's arguments at the call that made the plan.  Without free
    values ``run`` is the Numba dispatcher itself (``Compiled.runner``: the plan key
    fixes the types Numba sees); with them, whose types may change between calls, the
    ``Compiled`` that looks them up (and the ``Compiled`` too once its ``backend`` is no
    longer ``backend``: a later call that Numba could not compile made it run as Python).
    """

    def __init__(self, signature, variant, args, inputs):
        self.signature, self.variant = signature, variant
        generated, compiled, _ = variant
        self.generated = generated
        self.free = tuple(generated.free)
        #: whether the code took values from outside that are checked at each call
        self.guarded = bool(getattr(generated, "guards", ()))
        self.tensor_args = any(isinstance(a, Tensor) for a in args)
        self.tensor_free = any(isinstance(f.obj, Tensor) for f in self.free)
        self.run = compiled if self.free else compiled.runner(inputs)
        self.backend = compiled.backend     # what ``run`` runs the code with


class GradientPlan(CallPlan):
    """A ``CallPlan`` of a gradient, with where each gradient the code returns goes:
    ``positions``, per differentiated position in order, (the argument's index, the index
    of its gradient among the code's computed results or None: not computed, zeros);
    ``weights`` the same per weight, and ``weight_list`` the Parameters themselves; and,
    for a plain gradient, ``matches`` and ``hot_call`` (module doc)."""

    def __init__(self, signature, variant, args, inputs, weight_list, key=None,
                 shaping=None):
        """``key``: the ``plan_key`` of ``args``; ``shaping``: None where the gradients are
        shaped in Python (weights, has_aux, return_ids), else whether the result carries
        the value (``value_and_grad``)."""
        super().__init__(signature, variant, args, inputs)
        self.weight_list = weight_list
        self.positions, self.weights = [], []
        index = 0
        for (kind, i), has in zip(self.generated.wrt, self.generated.computed):
            slot = index if has else None
            index += has
            (self.positions if kind == "position" else self.weights).append((i, slot))
        #: the test a call's arguments pass to be planned by this plan, and the call
        #: run at once where they do (``hot_function_of``); None: never hot
        self.matches = self.hot_call = None
        #: whether the result is ``(value, gradients)``; one position: one gradient
        self.with_value, self.one = bool(shaping), len(self.positions) == 1
        self.compiled = variant[1]
        self.run_grads = self.run if self.with_value or self.free else \
            self.compiled.gradients_runner(inputs)
        plain = shaping is not None and not (self.free or self.tensor_args or
                                             self.tensor_free or self.weights)
        if plain and key is not None:
            self.matches = matcher_of(key)
            self.hot_call = hot_function_of(self, key)


class JvpPlan(CallPlan):
    """A ``CallPlan`` of a JVP (``ForwardFunction.jvp_call``), with, for ``jvp`` calls that
    need no Python-side shaping (no Tensors, aux or values read from outside),
    ``hot_call(derivative, args, tangents)``: one function, compiled from source at its
    first use (``jvp_hot_function_of``), that tests the arguments as ``plan_key`` reads
    them and each tangent as the code takes it, checks that the code is still the
    derivative's current one and that what it read from outside is unchanged, runs it
    and gives ``(outputs, tangents)``; None where a test fails (the full path decides)."""

    def __init__(self, signature, variant, args, inputs, key=None, has_aux=False):
        super().__init__(signature, variant, args, inputs)
        self.compiled = variant[1]
        self.key = None if has_aux or self.free or self.tensor_args else key
        self._hot = {}

    def hot_call_for(self, moving, count):
        """``hot_call`` for ``jvp`` calls of ``count`` inputs whose tangents are exactly
        zero at the inputs not in ``moving`` (the positions the code takes tangents
        for); None where the plan is never hot."""
        if self.key is None:
            return None
        found = self._hot.get((moving, count), False)
        if found is False:
            found = self._hot[moving, count] = jvp_hot_function_of(self, moving, count)
        return found


def jvp_hot_function_of(plan, moving, count):
    """``JvpPlan.hot_call`` for jvp calls of ``count`` inputs along tangents that are not
    zero at ``moving`` and zero elsewhere, as ``forward.jvp`` chooses its code
    (``zero_tangent``; ``moving`` (0,) also where every tangent is zero); None where
    ``plan``'s key has arguments the tests do not cover."""
    tests = _argument_tests(plan.key)
    if tests is None or len(plan.key) != count:
        return None
    test, values = tests
    checks = []
    for k, part in enumerate(plan.key):
        a, t = f"a{k}", f"tan{k}"
        if k not in moving:
            if not (isinstance(part, tuple) and part[0] is np.ndarray):
                return None
            checks.append(f"zero_tangent({a}, {t})")
        elif isinstance(part, tuple) and part[0] is np.ndarray:
            # as the code takes it (``forward._numba_ready`` gives it unchanged)
            check = (f"type({t}) is ndarray and {t}.dtype is d{k} and {t}.shape == {a}.shape "
                     f"and {t}.flags.num & CAW == CAW")
            if moving != (0,):      # (0,): its tangent zero or not, this code
                check += (f" and ({t}.size != 0 and {t}.item(0) != 0 or "
                          f"not zero_tangent({a}, {t}))")
            checks.append(check)
        elif part is float:
            checks.append(f"type({t}) is float")
        else:
            return None
    names = ", ".join(f"a{k}" for k in range(count))
    taken = "".join(f"tan{k}, " for k in moving)
    values.update(zero_tangent=zero_tangent, CAW=C_ALIGNED_WRITEABLE, like=like_outputs,
                  holds=holds, signature=plan.signature, compiled=plan.compiled,
                  backend=plan.backend, generated=plan.generated, run=plan.run)
    unpack = "".join(f"tan{k}, " for k in range(count))
    body = (f"if len(tangents) != {count}:\n"
            f"    return None\n"
            f"({unpack}) = tangents\n" +
            _hot_body(f"{test} and " + " and ".join(f"({c})" for c in checks), plan.guarded,
                      "None", f"{names}, {taken}",
                      f"value, tangent = run({names}, {taken})") +
            "return value, like(tangent, value)")
    return _compiled("hot_call(derivative, args, tangents)", body, "None", count, values)


#: what a ``JitPlan``'s ``hot_call`` gives where the full path must decide (a compiled
#: function may return None)
MISS = object()


class JitPlan(CallPlan):
    """A ``CallPlan`` of a compiled function (``api/jit.py``), with, for calls that need
    no Python-side shaping (no Tensors, no values read from outside), ``hot_call``: one
    function of the ``Jit`` object and a call's argument tuple that tests the arguments
    as ``plan_key`` reads them, checks that the code is still the object's current one
    and that what it read from outside is unchanged, and runs it; ``MISS`` where a test
    fails."""

    def __init__(self, signature, variant, args, inputs, key=None):
        super().__init__(signature, variant, args, inputs)
        self.compiled = variant[1]
        self.hot_call = None
        if key is not None and not (self.free or self.tensor_args):
            self.hot_call = _hot_run_of(self, key)


def _hot_run_of(plan, key):
    """``JitPlan.hot_call`` for the ``plan_key`` ``key`` (None for a key ``matcher_of``
    cannot test)."""
    tests = _argument_tests(key)
    if tests is None:
        return None
    test, values = tests
    names = ", ".join(f"a{k}" for k in range(len(key)))
    values.update(MISS=MISS, holds=holds, signature=plan.signature, compiled=plan.compiled,
                  backend=plan.backend, generated=plan.generated, run=plan.run)
    body = _hot_body(test, plan.guarded, "MISS", names, f"return run({names})")
    return _compiled("hot_call(derivative, args)", body, "MISS", len(key), values)


def _hot_body(test, guarded, miss, names, run):
    """The lines of a hot call: ``return {miss}`` unless the arguments pass ``test`` and
    the plan's code is still the derivative's current one (with ``guarded``, what it read
    from outside unchanged); then ``run`` (a statement running the code on ``names``), an
    error raised in it noted with the user's line (or the call run as Python where only
    Python can finish it: ``Derivative._recovered``)."""
    target, assigns, _ = run.partition(" = ")
    recover = f"{target} =" if assigns else "return"   # run's result, where Python ran it
    return (f"if not ({test}):\n"
            f"    return {miss}\n"
            f"if derivative._last is not signature or derivative._compiled is not compiled "
            f"or compiled.backend != backend" +
            (" or not holds(generated)" if guarded else "") + ":\n"
            f"    return {miss}\n"
            f"try:\n"
            f"    {run}\n"
            f"except Exception as exc:\n"
            f"    {recover} derivative._recovered(exc, generated, [{names}], compiled)\n")
