"""gmm (GradBench evals/gmm): the gradient of a Gaussian mixture's log posterior with a
Wishart prior, d = 10, k = 25, n = 1000, w.r.t. alpha, mu, q and l.

Loop-free numpy from the README: the lower-triangular factors filled column by column
(``Ls[:, rows, cols] = l``), the centred points for every component (n x k x d), an
einsum, two log-sum-exps.  JAX and autograd cannot trace the in-place fill, so they run
the same objective with ``lower_factors`` replaced by a scatter-matrix product."""
import math

import numpy
import numpy as np
from scipy.special import multigammaln

from common import jax_modules, rebind, s2sgrad_gradient

SIZE = "d=10, k=25, n=1000"


def lower_factors(l, k, d):
    # the strictly lower triangle of each factor, column by column
    cols, rows = np.triu_indices(d, 1)
    Ls = np.zeros((k, d, d))
    Ls[:, rows, cols] = l
    return Ls


def gmm_objective(alpha, mu, q, l, x, gamma, m):
    n, d = x.shape
    k = alpha.shape[0]
    Qdiags = np.exp(q)
    sum_qs = np.sum(q, axis=1)
    Ls = lower_factors(l, k, d)
    xcentered = x[:, None, :] - mu[None, :, :]
    Lxcentered = Qdiags * xcentered + np.einsum("ijk,mik->mij", Ls, xcentered)
    sqsum_Lxcentered = np.sum(Lxcentered ** 2, axis=2)
    inner_term = alpha + sum_qs - 0.5 * sqsum_Lxcentered
    top = np.max(inner_term, axis=1)
    slse = np.sum(top + np.log(np.sum(np.exp(inner_term - top[:, None]), axis=1)))
    amax = np.max(alpha)
    lse_alpha = amax + np.log(np.sum(np.exp(alpha - amax)))
    constant = -n * d * 0.5 * math.log(2 * math.pi)
    wn = d + m + 1
    out = np.sum(0.5 * gamma * gamma * (np.sum(Qdiags ** 2, axis=1) + np.sum(l ** 2, axis=1))
                 - m * sum_qs)
    C = wn * d * math.log(gamma / math.sqrt(2))
    prior = -out + k * (C - multigammaln(0.5 * wn, d))
    return constant + slse - n * lse_alpha + prior


def inputs(d=10, k=25, n=1000):
    """GradBench's generator (evals/gmm/run.py), seed 31337, m = 0, gamma = 1."""
    rng = np.random.default_rng(seed=31337)
    x = np.array([rng.normal(size=d) for _ in range(n)])
    alpha = rng.normal(size=k)
    mu = np.array([rng.uniform(size=d) for _ in range(k)])
    q = np.array([rng.normal(size=d) for _ in range(k)])
    l = np.array([rng.normal(size=d * (d - 1) // 2) for _ in range(k)])
    return (alpha, mu, q, l, x, 1.0, 0)


def lower_factors_functional(l, k, d):
    """``lower_factors`` without an in-place write, for JAX and autograd (which cannot
    trace one): a constant 0/1 matrix scatters each l_k into its d x d factor."""
    cols, rows = numpy.triu_indices(d, 1)
    scatter = numpy.zeros((l.shape[1], d * d))
    scatter[numpy.arange(l.shape[1]), rows * d + cols] = 1.0
    return (l @ scatter).reshape(k, d, d)


def _jax():
    jax, jnp = jax_modules()
    from jax.scipy.special import multigammaln as jax_multigammaln
    fn = rebind(gmm_objective, jnp, lower_factors=lower_factors_functional,
                multigammaln=jax_multigammaln)
    compiled = jax.jit(jax.grad(fn, (0, 1, 2, 3)), static_argnums=(5, 6))
    return lambda *args: jax.block_until_ready(compiled(*args))


def _autograd():
    import autograd
    import autograd.numpy as anp
    fn = rebind(gmm_objective, anp, lower_factors=lower_factors_functional)
    return autograd.grad(fn, (0, 1, 2, 3))


forward = gmm_objective
tools = {"s2sgrad": lambda: s2sgrad_gradient(gmm_objective, (0, 1, 2, 3)),
         "jax": _jax, "autograd": _autograd}
