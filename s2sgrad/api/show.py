"""``show``: print the generated code of a derivative, and return it.

Takes a function (or a gradient object), a mode and optionally example arguments; makes
the derivative object of that mode (``MODES``: every mode's is declared here, the
gradient's by ``show`` itself) and prints the code it builds for arguments like the
examples, or its generic build without them, under a one-line header saying which.
"""
import numpy as np

from ..tensor import Tensor
from ..trees import is_tree
from .arguments import check_function, is_option
from .derivative import Derivative
from .forward import ForwardFunction
from .higher import HessianFunction, HvpFunction
from .reverse import GradFunction
from .split import JacrevFunction, SplitFunction
from .vmap import Vmap

#: show's modes besides "grad": name -> the derivative object whose code it prints, made
#: from (fn, grad_position, has_aux)
MODES = {
    "jvp": lambda fn, grad_position, has_aux: ForwardFunction(fn, grad_position, has_aux,
                                                              False),
    "jacfwd": lambda fn, grad_position, has_aux: ForwardFunction(fn, grad_position, has_aux,
                                                                 True),
    "vjp": lambda fn, grad_position, has_aux: SplitFunction(fn, grad_position, None, has_aux),
    "jacrev": lambda fn, grad_position, has_aux: JacrevFunction(fn, grad_position, has_aux),
    "hvp": lambda fn, grad_position, has_aux: ForwardFunction(
        HvpFunction(fn, grad_position), grad_position, False, False),
    "hessian": lambda fn, grad_position, has_aux: HessianFunction(fn, grad_position),
}
#: the modes whose transforms differentiate w.r.t. every argument (``jvp(fn, inputs, v)``)
EVERY_ARGUMENT = ("jvp", "vjp", "hvp")
#: the modes of a scalar function's second derivatives: no has_aux
SCALAR = ("hvp", "hessian")


def show(fn, *example_args, grad_position=0, weights=None, has_aux=False, mode="grad",
         **example_kwargs):
    """Print the generated value-and-gradient source of ``fn`` and return it.

    With example arguments (``show(loss, x, y)``), the code built for arguments like
    them: exactly the module a call with such arguments runs.  Without, the generic
    build (not specialised on the arguments' dtypes, ranks and options), which the
    printed header says.  ``fn`` may be a function, a method, a Cell, a vmap (its batched code) or a gradient
    object (``grad(...)``/``value_and_grad(...)``: its options are used, and
    ``grad_position``/``weights``/``has_aux`` must be left out).  Prints a one-line
    header, then the source; returns the source alone.

    ``mode="jvp"`` shows the forward-mode code ``s2sgrad.jvp`` runs (tangents of every
    argument), ``mode="jacfwd"`` the code of ``s2sgrad.jacfwd(fn, grad_position)``;
    ``"vjp"``, ``"jacrev"``, ``"hvp"`` and ``"hessian"`` those of their transforms.
    """
    if isinstance(fn, Vmap):
        source = fn.show_for(example_args, example_kwargs).source
        print(f"# s2sgrad.show: the batched code that runs for arguments like "
              f"({describe_args(example_args, example_kwargs)}); module {fn.path}")
        print(source)
        return source
    if mode != "grad":
        if mode not in MODES:
            raise ValueError(f"show's mode is one of {', '.join(['grad', *MODES])}, "
                             f"got {mode!r}")
        return _show_mode(fn, example_args, example_kwargs, grad_position, has_aux, mode)
    if isinstance(fn, Derivative):
        if (grad_position, weights, has_aux) != (0, None, False):
            raise TypeError("show(gradient_object, ...) uses the gradient object's own "
                            "grad_position, weights and has_aux; leave them out")
        g = fn
    else:
        fn = check_function(fn, "show")
        g = GradFunction(fn, grad_position, weights, has_aux, False, True)
    if example_args or example_kwargs:
        # the gradient object's last call stays what its source and path report
        kept = (g._last, g._generated, g._compiled, g.path)
        generated = g._prepare(example_args, example_kwargs)[0]
        path = g.path
        if kept[0] is not None:
            g._last, g._generated, g._compiled, g.path = kept
        source = generated.source
        header = (f"# s2sgrad.show: the code that runs for arguments like "
                  f"({describe_args(example_args, example_kwargs)}); module {path}")
    else:
        generated, options = g._build_generic()
        source = generated.source
        defaults = (", options at their defaults: " + ", ".join(
            f"{k}={v!r}" for k, v in options.items())) if options else ""
        header = ("# s2sgrad.show: generic build, not specialised on the arguments' dtypes "
                  f"and ranks{defaults} (a call builds code for its own arguments); pass "
                  "example arguments (show(fn, x, ...); on the command line --arg) to see "
                  "the code that runs for them")
    print(header)
    print(source)
    return source


def _show_mode(fn, example_args, example_kwargs, grad_position, has_aux, mode):
    """``show(fn, ..., mode=mode)`` for a mode of ``MODES``: its transform's code, w.r.t.
    every argument for ``EVERY_ARGUMENT``'s, as they build it."""
    fn = check_function(fn, "show")
    if has_aux and mode in SCALAR:
        raise TypeError(f"show(mode={mode!r}) takes no has_aux: {mode} differentiates a "
                        f"scalar function")
    if mode in EVERY_ARGUMENT:
        grad_position = every_position(fn, example_args, example_kwargs)
    f = MODES[mode](fn, grad_position, has_aux)
    return print_built(f, mode, example_args, example_kwargs)


def every_position(fn, example_args, example_kwargs):
    """grad_position naming every argument of ``fn`` (of the example call, else of its
    signature): what ``jvp``, ``vjp`` and ``hvp`` differentiate, for ``show``."""
    probe = GradFunction(fn, 0, None, False, False, False)
    count = len(example_args) + len(example_kwargs) if (example_args or example_kwargs) \
        else len(probe._complete((), {}, bind=False) or ()) or \
        len(probe._signature.parameters if probe._signature else ())
    return tuple(range(max(count, 1)))


def print_built(f, mode, example_args, example_kwargs):
    """Print the ``mode`` code the derivative object ``f`` runs for the example arguments
    (or its generic build without them) under a header saying which; returns the source."""
    if example_args or example_kwargs:
        generated = f._prepare(example_args, example_kwargs)[0]
        header = (f"# s2sgrad.show: the {mode} code that runs for arguments like "
                  f"({describe_args(example_args, example_kwargs)}); module {f.path}")
    else:
        generated = f._build_generic()[0]
        header = (f"# s2sgrad.show: generic {mode} build, not specialised on the arguments' "
                  "dtypes and ranks; pass example arguments to see the code that runs for them")
    print(header)
    print(generated.source)
    return generated.source


def describe_args(args, kwargs):
    """``float32[5], float32[3], y=float32`` for a header line."""
    def one(a):
        if isinstance(a, (Tensor, np.ndarray)):
            arr = np.asarray(a)
            return f"{arr.dtype}[{', '.join(str(n) for n in arr.shape)}]"
        if is_tree(a):
            return type(a).__name__ + "(...)"
        return type(a).__name__ if not is_option(a) else repr(a)
    return ", ".join([one(a) for a in args] + [f"{k}={one(v)}" for k, v in kwargs.items()])
