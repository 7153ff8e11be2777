"""saddle (GradBench evals/saddle, Pearlmutter and Siskind): min over x of max over y of
f(x, y) = (x0^2 + y0^2) - (x1^2 + y1^2) by nested gradient descent, "rr" (reverse over
reverse), from start (1, 1).

GradBench's solver adapts its step in a data-dependent while loop, which JAX cannot
differentiate in reverse mode; here both solvers take a fixed number of fixed-size
steps (``STEPS``, ``ETA``), the same for every tool, so that every tool runs the same
nested program: the outer gradient differentiates through the inner ascent, whose
steps call the inner gradient."""
import numpy as np

import s2sgrad
from common import nested_tools, rebind

SIZE = "start=(1, 1), 8 x 8 fixed steps"
STEPS = 8
ETA = 0.1


def saddle_f(x, y):
    return (x[0] ** 2 + y[0] ** 2) - (x[1] ** 2 + y[1] ** 2)


grad_y = s2sgrad.grad(saddle_f, 1)


def inner_max(x, start):
    y = start
    for i in range(STEPS):
        y = y + ETA * grad_y(x, y)
    return saddle_f(x, y)


grad_x = s2sgrad.grad(inner_max, 0)


def saddle(start):
    x = start
    for i in range(STEPS):
        x = x - ETA * grad_x(x, start)
    y = start
    for i in range(STEPS):
        y = y + ETA * grad_y(x, y)
    return np.concatenate((x, y))


def inputs():
    return (np.array([1.0, 1.0]),)


def _with(module, grad):
    """``saddle`` run with ``module``'s numpy and ``grad`` (jax.grad, autograd.grad)."""
    f = rebind(saddle_f, module)
    gy = grad(f, 1)
    inner = rebind(inner_max, module, saddle_f=f, grad_y=gy)
    return rebind(saddle, module, grad_x=grad(inner, 0), grad_y=gy)


forward = None    # the eval is the nested derivative itself: no forward to time apart
# s2sgrad's tool compiles the driver as JAX's does (jax.jit of the whole ``saddle``):
# s2sgrad.jit inlines both gradients' code into one compiled function; the driver run as
# plain Python (16 calls of the gradient objects, numpy steps) is measured beside it
tools = {"s2sgrad": lambda: s2sgrad.jit(saddle), **nested_tools(_with)}
extra_tools = {"s2sgrad without jit": lambda: saddle}
