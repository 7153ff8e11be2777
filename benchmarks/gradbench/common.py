"""What the GradBench evals share: one user function run by every tool.

Each eval module (lse.py, llsq.py, ...) writes its function once, in plain numpy, the
way a user writes it from the eval's README.  JAX and autograd run *that same source*
with ``np`` bound to ``jax.numpy`` / ``autograd.numpy`` (``rebind``), so the four
columns of the table time one spelling; an eval whose numpy spelling JAX cannot trace
(a Python loop over data-dependent steps, in-place writes) gives JAX its idiomatic
spelling instead (``lax.scan``), and says so in its docstring.

``gradient_tools(fn, argnums)`` gives the three derivative builders of a scalar
function's gradient: s2sgrad's ``grad``, ``jax.jit(jax.grad)`` and ``autograd.grad``.
"""
import types

import numpy as np


def rebind(fn, module, **names):
    """``fn`` with its global ``np`` (and ``names``) replaced: the same code object,
    run against ``module`` (jax.numpy, autograd.numpy) instead of numpy."""
    scope = dict(fn.__globals__)
    scope["np"] = module
    scope.update(names)
    return types.FunctionType(fn.__code__, scope, fn.__name__, fn.__defaults__,
                              fn.__closure__)


def jax_modules():
    """``(jax, jax.numpy)`` with float64 on."""
    import jax
    import jax.numpy as jnp
    jax.config.update("jax_enable_x64", True)
    return jax, jnp


def s2sgrad_gradient(fn, argnums):
    import s2sgrad
    return s2sgrad.grad(fn, argnums)


def jax_gradient(fn, argnums, static=()):
    jax, jnp = jax_modules()
    compiled = jax.jit(jax.grad(rebind(fn, jnp), argnums), static_argnums=static)
    return lambda *args: jax.block_until_ready(compiled(*args))


def autograd_gradient(fn, argnums):
    import autograd
    import autograd.numpy as anp
    return autograd.grad(rebind(fn, anp), argnums)


def gradient_tools(fn, argnums, static=()):
    """The derivative builders (tool name -> function of no arguments giving a callable
    of the eval's arguments) of the gradient of scalar ``fn`` w.r.t. ``argnums``;
    ``static``: the arguments JAX must see as Python values (sizes)."""
    return {
        "s2sgrad": lambda: s2sgrad_gradient(fn, argnums),
        "jax": lambda: jax_gradient(fn, argnums, static),
        "autograd": lambda: autograd_gradient(fn, argnums),
    }


def nested_tools(program):
    """The JAX and autograd builders of a nested-derivative eval: ``program(module, grad)``
    gives the eval's function written with ``module``'s numpy and ``grad`` (jax.grad,
    jit-compiled whole; autograd.grad)."""
    def jax_tool():
        jax, jnp = jax_modules()
        compiled = jax.jit(program(jnp, jax.grad))
        return lambda *args: jax.block_until_ready(compiled(*args))

    def autograd_tool():
        import autograd
        import autograd.numpy as anp
        return program(anp, autograd.grad)
    return {"jax": jax_tool, "autograd": autograd_tool}


def as_arrays(result):
    """A derivative result (array, float or nested tuple) as a flat list of float64 arrays."""
    if isinstance(result, (tuple, list)):
        return [a for r in result for a in as_arrays(r)]
    return [np.asarray(result, dtype=np.float64)]
