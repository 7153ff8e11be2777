"""particle (GradBench evals/particle, Pearlmutter and Siskind): the control w that makes
a charged particle, pushed by the field of two fixed charges, hit the origin; "rr"
(reverse over reverse), from w = 0.

The particle's naive Euler path takes the force as the gradient of the potential (the
inner gradient); the outer gradient descent differentiates the squared miss distance
through that path.  GradBench's integrator stops where the path crosses the x axis (a
data-dependent while loop, which JAX cannot differentiate in reverse mode); here it
takes a fixed number of steps (``STEPS``) and the miss is measured at the last one,
and the outer descent takes ``OUTER`` fixed steps: the same program for every tool,
JAX's with its two loops as ``lax.fori_loop`` (``_jax_tool``)."""
import numpy as np

import s2sgrad
from common import nested_tools, rebind

SIZE = "w=0, 60 Euler steps, 8 descent steps"
STEPS = 60
OUTER = 8


def potential(x, w):
    return (1.0 / np.sqrt((x[0] - 10.0) ** 2 + (x[1] - (10.0 - w)) ** 2)
            + 1.0 / np.sqrt((x[0] - 10.0) ** 2 + x[1] ** 2))


force_gradient = s2sgrad.grad(potential, 0)


def miss(w):
    x = np.array([0.0, 8.0])
    xdot = np.array([0.75, 0.0])
    dt = 0.1
    for i in range(STEPS):
        xddot = -force_gradient(x, w)
        x = x + dt * xdot
        xdot = xdot + dt * xddot
    return x[0] ** 2


miss_gradient = s2sgrad.grad(miss, 0)


def particle(w):
    for i in range(OUTER):
        w = w - 0.01 * miss_gradient(w)
    return w


def inputs():
    return (0.0,)


def _with(module, grad):
    """``particle`` run with ``module``'s numpy and ``grad`` (jax.grad, autograd.grad)."""
    force = grad(rebind(potential, module), 0)
    return rebind(particle, module,
                  miss_gradient=grad(rebind(miss, module, force_gradient=force), 0))


def _jax_tool():
    """JAX's spelling: the same functions, the two loops as ``lax.fori_loop`` (JAX's
    idiomatic loop: traced once; the Python loops unrolled 8 x 60 steps of a nested
    gradient, which XLA had not compiled after 5 minutes on this machine)."""
    from common import jax_modules
    jax, jnp = jax_modules()
    force = jax.grad(rebind(potential, jnp), 0)

    def miss_jax(w):
        def step(i, state):
            x, xdot = state
            xddot = -force(x, w)
            return x + 0.1 * xdot, xdot + 0.1 * xddot
        x, _ = jax.lax.fori_loop(0, STEPS, step, (jnp.array([0.0, 8.0]),
                                                  jnp.array([0.75, 0.0])))
        return x[0] ** 2

    gradient = jax.grad(miss_jax, 0)
    compiled = jax.jit(lambda w: jax.lax.fori_loop(
        0, OUTER, lambda i, w: w - 0.01 * gradient(w), w))
    return lambda *args: jax.block_until_ready(compiled(*args))


forward = None    # the eval is the nested derivative itself: no forward to time apart
# s2sgrad's tool compiles the driver as JAX's does (jax.jit of the whole descent); the
# driver run as plain Python (8 calls of the gradient object) is measured beside it
tools = {"s2sgrad": lambda: s2sgrad.jit(particle), **nested_tools(_with), "jax": _jax_tool}
extra_tools = {"s2sgrad without jit": lambda: particle}
