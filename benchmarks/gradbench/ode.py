"""ode (GradBench evals/ode): the gradient of the last component of a fourth-order
Runge-Kutta solution, n = 10,000, s = 100 steps.

    y' = f(y), f(y)_0 = x_0, f(y)_i = x_i y_{i-1};  y(0) = 0, t_f = 2

A Python loop over the steps (s2sgrad compiles it with Numba).  JAX runs GradBench's
own spelling, ``lax.scan`` over the steps (a Python loop would be unrolled by jit)."""
import numpy as np

from common import jax_modules, rebind, s2sgrad_gradient

SIZE = "n=10000, s=100"


def ode_rhs(x, y):
    return x * np.concatenate((np.ones(1), y[:-1]))


def ode_solution(x, s):
    h = 2.0 / s
    y = np.zeros_like(x)
    for step in range(s):
        k1 = ode_rhs(x, y)
        k2 = ode_rhs(x, y + h / 2 * k1)
        k3 = ode_rhs(x, y + h / 2 * k2)
        k4 = ode_rhs(x, y + h * k3)
        y = y + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
    return y


def ode_last(x, s):
    return ode_solution(x, s)[-1]


def inputs():
    np.random.seed(31337)
    return (np.random.rand(10000), 100)


def _jax():
    jax, jnp = jax_modules()
    rhs = rebind(ode_rhs, jnp)

    def last(x, s):
        h = 2.0 / s

        def step(y, _):
            k1 = rhs(x, y)
            k2 = rhs(x, y + h / 2 * k1)
            k3 = rhs(x, y + h / 2 * k2)
            k4 = rhs(x, y + h * k3)
            return y + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4), None
        y, _ = jax.lax.scan(step, jnp.zeros_like(x), None, length=s)
        return y[-1]
    compiled = jax.jit(jax.grad(last), static_argnums=(1,))
    return lambda *args: jax.block_until_ready(compiled(*args))


def _autograd():
    import autograd
    import autograd.numpy as anp
    solution = rebind(ode_solution, anp, ode_rhs=rebind(ode_rhs, anp))
    return autograd.grad(rebind(ode_last, anp, ode_solution=solution), 0)


forward = ode_last
tools = {"s2sgrad": lambda: s2sgrad_gradient(ode_last, 0), "jax": _jax,
         "autograd": _autograd}
