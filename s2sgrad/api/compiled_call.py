"""A derivative object's compiled code as another compiled function calls it (vmap's prange).

``compiled_call(derivative)`` takes a derivative object right after a call (``grad``,
``value_and_grad``, ``jacrev``: ``Derivative.compiled_picks``) and gives a
``CompiledCall``: the Numba dispatcher of the code that call ran, per leaf of the
object's result the source text that picks it out of the code's own result (``{r}``
stands for that result: ``{r}[1][0]`` is the first gradient of ``(value, (da,))``), a
line saying what the code is and returns, and ``holds()``: whether that code is still the
one the object runs (a value it read from outside changed: ``api/guards.py``).  Where
the object's results are not a pick of its code's (weights, ``has_aux``, a gradient not
computed, containers), or its code does not run compiled, it gives the reason as a str.
"""
import os
from dataclasses import dataclass
from typing import Callable

from .guards import holds


@dataclass
class CompiledCall:
    """What a compiled loop calls in place of a derivative object (see the module doc)."""
    dispatcher: object          # the Numba dispatcher of the derivative's generated code
    picks: list                 # per result leaf, source text over "{r}" (the code's result)
    what: str                   # one line: what the code is, its file, what it returns
    holds: Callable[[], bool]   # whether the derivative still runs that code


def compiled_call(derivative):
    """The ``CompiledCall`` of the code ``derivative``'s last call ran, or why there is
    none (a str)."""
    hook = getattr(derivative, "compiled_picks", None)
    last = getattr(derivative, "_last", None)
    if hook is None:
        return (f"{type(derivative).__name__} assembles its results in Python from its "
                f"code's (grad, value_and_grad and jacrev objects are called from a "
                f"compiled loop)")
    variant = derivative._variants.get(last) if last is not None else None
    if variant is None:
        return "it has not run for these arguments"
    generated, loaded, path = variant
    found = hook(generated, loaded)
    if isinstance(found, str):
        return found
    compiled, picks, returns = found
    if compiled.backend != "numba":
        return f"its code runs as {compiled.backend}: {compiled.fallback_reason}"
    if generated.free:
        names = ", ".join(f.path for f in generated.free)
        return f"its code reads values from outside ({names}), looked up at each call"
    if getattr(generated, "by_shape", False):
        return "its code is built per argument shape (a recursion unrolled by shapes)"
    what = "value_and_grad" if getattr(derivative, "with_value", False) else \
        derivative.derivative_mode
    return CompiledCall(compiled.dispatcher, picks,
                        f"the Numba-compiled code of {what}({derivative.name}) "
                        f"({os.path.basename(path or '?')}), which returns {returns}",
                        lambda: holds(generated) and derivative._variants.get(last) is variant)
