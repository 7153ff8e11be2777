"""kmeans (GradBench evals/kmeans): the Newton direction J / diag(H) of the k-means cost
w.r.t. the centroids, k = 100, n = 10,000, d = 8.

    cost(C) = sum_i min_j |C_j - P_i|^2

The gradient J, then the Hessian's diagonal as the gradient's directional derivative
along ones (the Hessian is diagonal): forward over reverse, ``jvp(grad(cost))``, as
GradBench's JAX tool does.  Loop-free: the pairwise squared distances by ``@``, a min."""
import numpy as np

import s2sgrad
from common import jax_modules, rebind

SIZE = "k=100, n=10000, d=8"


def kmeans_cost(centroids, points):
    a_sqr = np.sum(points ** 2, axis=1)[:, None]
    b_sqr = np.sum(centroids ** 2, axis=1)[None, :]
    dists = a_sqr + b_sqr - 2 * (points @ centroids.T)
    return np.sum(np.min(dists, axis=1))


def inputs():
    """GradBench's generator: uniform points, the last k of them as the centroids."""
    np.random.seed(31337)
    points = np.random.rand(10000, 8)
    return (points[-100:].copy(), points)


def newton_direction(cost):
    """s2sgrad's J / diag(H) of ``cost(centroids, points)``: ``jvp(grad(cost))`` along ones
    (heldout.py reuses it for other spellings of the cost)."""
    gradient = s2sgrad.grad(cost, 0)

    def direction(centroids, points):
        j, h = s2sgrad.jvp(gradient, (centroids, points),
                                (np.ones_like(centroids), np.zeros_like(points)))
        return j / h
    return direction


def _s2sgrad():
    return newton_direction(kmeans_cost)


def _jax():
    jax, jnp = jax_modules()
    cost = rebind(kmeans_cost, jnp)

    @jax.jit
    def direction(centroids, points):
        j, h = jax.jvp(jax.grad(lambda c: cost(c, points)), [centroids],
                       [jnp.ones_like(centroids)])
        return j / h
    return lambda *args: jax.block_until_ready(direction(*args))


def _autograd():
    import autograd
    import autograd.numpy as anp
    cost = rebind(kmeans_cost, anp)
    gradient = autograd.grad(cost, 0)
    hessian_diagonal = autograd.grad(lambda c, p: anp.sum(gradient(c, p)), 0)
    return lambda c, p: gradient(c, p) / hessian_diagonal(c, p)


forward = kmeans_cost
tools = {"s2sgrad": _s2sgrad, "jax": _jax, "autograd": _autograd}
