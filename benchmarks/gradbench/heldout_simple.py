"""Held-out spellings of the loop-free gradient evals (lse, llsq, gmm, kmeans, ba).

Each ``SPELLINGS[eval]`` maps a name to a builder: a function of no arguments giving a
callable of the eval's own arguments (``<eval>.inputs()``) whose result has the
structure of the eval's JAX tool, so heldout.py can check it against JAX and time it.
The functions are what a user plausibly writes from the eval's README when not
writing the eval module's spelling: other numpy calls for the same contraction,
loops where ours is vectorised, helpers split differently, keepdims and axis=-1,
in-place updates, method calls, value_and_grad, s2sgrad.jit.  ``FORWARDS[eval]``
gives, where a spelling changes the objective's code, that code's numpy forward, so
the gradient can be compared with its own forward too.
"""
import functools

import numpy as np
from scipy.special import logsumexp, multigammaln

import s2sgrad
from s2sgrad import nn, Parameter, Tensor
import ba
import gmm
import kmeans
import llsq

# --------------------------------------------------------------------------- lse


def lse_keepdims(x):
    m = np.max(x, axis=-1, keepdims=True)
    return (m + np.log(np.sum(np.exp(x - m), axis=-1, keepdims=True)))[0]


def lse_methods(x):
    a = x.max()
    return a + np.log(np.exp(x - a).sum())


def lse_loop(x):
    a = x[0]
    for i in range(1, x.shape[0]):
        if x[i] > a:
            a = x[i]
    total = 0.0
    for i in range(x.shape[0]):
        total += np.exp(x[i] - a)
    return a + np.log(total)


def lse_unshifted(x):
    return np.log(np.sum(np.exp(x)))


def lse_scipy(x):
    return logsumexp(x)


def lse_softmax_aux(x):
    a = np.amax(x)
    e = np.exp(x - a)
    total = e.sum()
    return a + np.log(total), e / total


def lse_while_where(x):
    a = x[0]
    i = 1
    while i < x.shape[0]:
        a = np.where(x[i] > a, x[i], a)
        i += 1
    return a + np.log(np.sum(np.exp(x - a)))


def _first(fn):
    return lambda *args: fn(*args)[0]


def _second(fn):
    return lambda *args: fn(*args)[1]


# --------------------------------------------------------------------------- llsq


def llsq_accumulate(x, n):
    t = np.linspace(-1, 1, n)
    s = np.sign(t)
    y = np.zeros(n)
    for j in range(x.shape[0]):
        y += x[j] * t ** j
    r = s - y
    return 0.5 * np.dot(r, r)


def llsq_horner(x, n):
    t = np.linspace(-1.0, 1.0, n)
    m = x.shape[0]
    y = x[m - 1] * np.ones(n)
    for j in range(m - 2, -1, -1):
        y = y * t + x[j]
    return 0.5 * np.sum((np.sign(t) - y) ** 2)


def llsq_vander(x, n):
    t = np.linspace(-1, 1, n)
    A = np.vander(t, x.shape[0], increasing=True)
    r = A @ x - np.sign(t)
    return np.sum(r ** 2) / 2


def llsq_scalar_loops(x, n):
    total = 0.0
    for i in range(n):
        t = -1.0 + 2.0 * i / (n - 1)
        p = 0.0
        for j in range(x.shape[0]):
            p += x[j] * t ** j
        total += (np.sign(t) - p) ** 2
    return 0.5 * total


def llsq_norm(x, n):
    t = np.linspace(-1, 1, n)
    A = np.power.outer(t, np.arange(len(x)))
    return np.linalg.norm(np.sign(t) - np.matmul(A, x)) ** 2 / 2


def llsq_while(x, n):
    t = np.linspace(-1.0, 1.0, n)
    y = np.zeros(n)
    p = np.ones(n)
    j = 0
    while j < x.shape[0]:
        y = y + x[j] * p
        p = p * t
        j += 1
    r = np.sign(t) - y
    return 0.5 * r.dot(r)


class PolyFit:
    """The sample points and targets held as constants of an instance."""

    def __init__(self, n):
        self.t = np.linspace(-1.0, 1.0, n)
        self.s = np.sign(self.t)

    def loss(self, x):
        A = self.t[:, np.newaxis] ** np.arange(x.size)
        r = A @ x - self.s
        return 0.5 * np.sum(np.square(r))


def _llsq_class():
    fit = PolyFit(llsq.inputs()[1])
    gradient = s2sgrad.grad(fit.loss)
    return lambda x, n: gradient(x)


#: the sample points as a module's data, read by the loss
SAMPLES = np.linspace(-1.0, 1.0, llsq.inputs()[1])


def llsq_global_multiply_outer(x, n):
    powers = np.cumprod(np.hstack((np.ones((n, 1)), np.multiply.outer(
        SAMPLES, np.ones(len(x) - 1)))), axis=1)
    return 0.5 * np.sum((np.sign(SAMPLES) - powers @ x) ** 2)


def llsq_data_argument(x, t):
    return 0.5 * np.sum((np.sign(t) - np.power.outer(t, np.arange(x.size)) @ x) ** 2)


def _llsq_data_argument():
    gradient = s2sgrad.grad(llsq_data_argument, 0)
    return lambda x, n: gradient(x, SAMPLES)


# --------------------------------------------------------------------------- gmm


def logsumexp_last(a):
    top = np.max(a, axis=-1, keepdims=True)
    return np.log(np.sum(np.exp(a - top), axis=-1)) + top[..., 0]


def gmm_tail(alpha, q, l, Qdiags, sum_qs, inner, n, d, k, gamma, m):
    """The log-sum-exps and the Wishart prior, from the n x k inner terms."""
    slse = np.sum(logsumexp_last(inner))
    constant = -n * d * 0.5 * np.log(2 * np.pi)
    wn = d + m + 1
    out = 0.5 * gamma ** 2 * (np.sum(Qdiags ** 2) + np.sum(l ** 2)) - m * np.sum(sum_qs)
    C = wn * d * np.log(gamma / np.sqrt(2))
    prior = -out + k * (C - multigammaln(0.5 * wn, d))
    return constant + slse - n * logsumexp_last(alpha) + prior


def gmm_einsum_letters(alpha, mu, q, l, x, gamma, m):
    n, d = x.shape
    k = alpha.shape[0]
    Qdiags = np.exp(q)
    sum_qs = q.sum(axis=-1)
    Ls = gmm.lower_factors(l, k, d)
    xc = x[:, None, :] - mu
    Lxc = Qdiags * xc + np.einsum("kij,nkj->nki", Ls, xc)
    inner = alpha + sum_qs - 0.5 * np.sum(Lxc * Lxc, axis=-1)
    return gmm_tail(alpha, q, l, Qdiags, sum_qs, inner, n, d, k, gamma, m)


def gmm_matmul(alpha, mu, q, l, x, gamma, m):
    n, d = x.shape
    k = alpha.shape[0]
    Qdiags = np.exp(q)
    sum_qs = np.sum(q, axis=1)
    Ls = gmm.lower_factors(l, k, d)
    xc = x[:, None, :] - mu[None, :, :]
    Lxc = Qdiags * xc + (Ls @ xc[..., None])[..., 0]
    inner = alpha + sum_qs - 0.5 * np.sum(Lxc ** 2, axis=2)
    return gmm_tail(alpha, q, l, Qdiags, sum_qs, inner, n, d, k, gamma, m)


def lower_factors_loop(l, k, d):
    Ls = np.zeros((k, d, d))
    j = 0
    for col in range(d):
        for row in range(col + 1, d):
            Ls[:, row, col] = l[:, j]
            j += 1
    return Ls


def gmm_component_loop(alpha, mu, q, l, x, gamma, m):
    n, d = x.shape
    k = alpha.shape[0]
    Qdiags = np.exp(q)
    sum_qs = np.sum(q, axis=1)
    Ls = lower_factors_loop(l, k, d)
    inner = np.zeros((n, k))
    for c in range(k):
        xc = x - mu[c]
        Lx = Qdiags[c] * xc + xc @ Ls[c].T
        inner[:, c] = alpha[c] + sum_qs[c] - 0.5 * np.sum(Lx ** 2, axis=1)
    return gmm_tail(alpha, q, l, Qdiags, sum_qs, inner, n, d, k, gamma, m)


def gmm_log_likelihood(alpha, mu, q, l, x):
    """The data term: each point's log-sum-exp over the components (scipy's)."""
    k, d = mu.shape
    Ls = gmm.lower_factors(l, k, d)
    xc = x[:, None, :] - mu[None, :, :]
    Lxc = np.exp(q) * xc + np.matmul(xc[:, :, None, :], np.swapaxes(Ls, 1, 2))[:, :, 0, :]
    inner = alpha + q.sum(axis=1) - 0.5 * np.linalg.norm(Lxc, axis=2) ** 2
    return np.sum(logsumexp(inner, axis=1)) - x.shape[0] * logsumexp(alpha)


def gmm_log_prior(q, l, gamma, m):
    """The Wishart prior."""
    k, d = q.shape
    wn = d + m + 1
    C = wn * d * np.log(gamma / np.sqrt(2))
    out = 0.5 * gamma ** 2 * (np.sum(np.exp(2 * q)) + np.sum(l * l)) - m * np.sum(q)
    return k * (C - multigammaln(0.5 * wn, d)) - out


def gmm_helpers(alpha, mu, q, l, x, gamma, m):
    n, d = x.shape
    constant = -n * d * 0.5 * np.log(2 * np.pi)
    return constant + gmm_log_likelihood(alpha, mu, q, l, x) + gmm_log_prior(q, l, gamma, m)


class GMM(nn.Cell):
    """The mixture as a MindSpore-style Cell: its parameters Parameters, the objective
    its construct."""

    def __init__(self, alpha, mu, q, l):
        super().__init__()
        self.alpha = Parameter(Tensor(alpha), name="alpha")
        self.mu = Parameter(Tensor(mu), name="mu")
        self.q = Parameter(Tensor(q), name="q")
        self.l = Parameter(Tensor(l), name="l")

    def construct(self, x, gamma, m):
        return gmm.gmm_objective(self.alpha, self.mu, self.q, self.l, x, gamma, m)


def _gmm_cell():
    net = GMM(*gmm.inputs()[:4])
    gradient = s2sgrad.grad(net, None, net.trainable_params())

    def call(alpha, mu, q, l, x, gamma, m):
        for p, v in zip((net.alpha, net.mu, net.q, net.l), (alpha, mu, q, l)):
            p.set_data(Tensor(v))
        return tuple(np.asarray(g) for g in gradient(x, gamma, m))
    return call


# --------------------------------------------------------------------------- kmeans


def kmeans_broadcast(centroids, points):
    diff = points[:, None, :] - centroids[None, :, :]
    dists = np.sum(diff ** 2, axis=-1)
    return np.min(dists, axis=-1).sum()


def kmeans_dot(centroids, points):
    a = (points * points).sum(axis=1, keepdims=True)
    b = (centroids * centroids).sum(axis=1)
    dists = a + b - 2.0 * np.dot(points, centroids.T)
    return dists.min(axis=1).sum()


def _newton_hvp():
    gradient = s2sgrad.grad(kmeans.kmeans_cost)

    def direction(centroids, points):
        h = s2sgrad.hvp(lambda c: kmeans.kmeans_cost(c, points), centroids,
                        np.ones_like(centroids))
        return gradient(centroids, points) / h
    return direction


def _newton_closure():
    def direction(centroids, points):
        j, h = s2sgrad.jvp(s2sgrad.grad(lambda c: kmeans.kmeans_cost(c, points)),
                           (centroids,), (np.ones_like(centroids),))
        return j / h
    return direction


def _newton_gradient_closure():
    gradient = s2sgrad.grad(kmeans.kmeans_cost)

    def direction(centroids, points):
        j, h = s2sgrad.jvp(lambda c: gradient(c, points), (centroids,),
                           (np.ones_like(centroids),))
        return j / h
    return direction


def kmeans_argmin(centroids, points):
    dists = (np.einsum("nd,nd->n", points, points)[:, None]
             - 2 * np.einsum("nd,kd->nk", points, centroids)
             + np.einsum("kd,kd->k", centroids, centroids))
    nearest = np.argmin(dists, axis=1)
    return np.sum((points - centroids[nearest]) ** 2)


def kmeans_where_loop(centroids, points):
    best = np.sum((points - centroids[0]) ** 2, axis=1)
    j = 1
    while j < centroids.shape[0]:
        d = np.sum((points - centroids[j]) ** 2, axis=1)
        best = np.where(d < best, d, best)
        j += 1
    return best.sum()


def kmeans_range_minimum(centroids, points):
    best = np.full(points.shape[0], np.inf)
    for j in range(len(centroids)):
        best = np.minimum(best, ((points - centroids[j]) ** 2).sum(axis=1))
    return np.sum(best)


def kmeans_while_count(centroids, points):
    diff = points - centroids[0]
    best = np.einsum("nd,nd->n", diff, diff)
    k = 1
    while k < len(centroids):
        diff = points - centroids[k]
        d = np.einsum("nd,nd->n", diff, diff)
        best = np.where(d < best, d, best)
        k = k + 1
    return best.sum()


def _newton_partial_hvp(cost):
    def direction(centroids, points):
        f = functools.partial(cost, points=points)
        return s2sgrad.grad(f)(centroids) / s2sgrad.hvp(f, (centroids,),
                                                         (np.ones_like(centroids),))[0]
    return direction


# --------------------------------------------------------------------------- ba


def reprojection_by_components(cams, X, w, feats):
    rot = cams[:, :3]
    theta = np.linalg.norm(rot, axis=-1)
    c = np.cos(theta)
    s = np.sin(theta)
    k0, k1, k2 = rot[:, 0] / theta, rot[:, 1] / theta, rot[:, 2] / theta
    x0, x1, x2 = X[:, 0] - cams[:, 3], X[:, 1] - cams[:, 4], X[:, 2] - cams[:, 5]
    dot = (k0 * x0 + k1 * x1 + k2 * x2) * (1 - c)
    y0 = x0 * c + (k1 * x2 - k2 * x1) * s + k0 * dot
    y1 = x1 * c + (k2 * x0 - k0 * x2) * s + k1 * dot
    y2 = x2 * c + (k0 * x1 - k1 * x0) * s + k2 * dot
    p0, p1 = y0 / y2, y1 / y2
    rsq = p0 ** 2 + p1 ** 2
    L = 1 + cams[:, 9] * rsq + cams[:, 10] * rsq ** 2
    e0 = w * (p0 * L * cams[:, 6] + cams[:, 7] - feats[:, 0])
    e1 = w * (p1 * L * cams[:, 6] + cams[:, 8] - feats[:, 1])
    return e0, e1


def ba_x_components(cams, X, w, feats):
    return np.sum(reprojection_by_components(cams, X, w, feats)[0])


def ba_y_components(cams, X, w, feats):
    return np.sum(reprojection_by_components(cams, X, w, feats)[1])


def ba_x_column(cams, X, w, feats):
    return ba.reprojection_error(cams, X, w, feats)[:, 0].sum()


def ba_y_column(cams, X, w, feats):
    return ba.reprojection_error(cams, X, w, feats)[:, 1].sum()


def _ba_pair(fx, fy):
    gx = s2sgrad.grad(fx, (0, 1, 2))
    gy = s2sgrad.grad(fy, (0, 1, 2))
    return lambda cams, X, w, feats: ba._blocks(gx(cams, X, w, feats), gy(cams, X, w, feats), w)


def _ba_vjp():
    def jacobian(cams, X, w, feats):
        _, pullback = s2sgrad.vjp(lambda c, p, v: ba.reprojection_error(c, p, v, feats),
                                  cams, X, w)
        ex = np.zeros_like(feats)
        ex[:, 0] = 1.0
        return ba._blocks(pullback(ex), pullback(1.0 - ex), w)
    return jacobian


def reprojection_one(cam, X, w, feat):
    """One observation's two errors, as a user writes it for vmap."""
    rot = cam[:3]
    theta = np.linalg.norm(rot)
    axis = rot / theta
    Xc = X - cam[3:6]
    Xcam = (Xc * np.cos(theta) + np.cross(axis, Xc) * np.sin(theta)
            + axis * np.dot(axis, Xc) * (1.0 - np.cos(theta)))
    proj = Xcam[:2] / Xcam[2]
    rsq = np.dot(proj, proj)
    distortion = 1.0 + cam[9] * rsq + cam[10] * rsq ** 2
    return w * (proj * distortion * cam[6] + cam[7:9] - feat)


def _ba_vmap(jac):
    per_obs = s2sgrad.vmap(jac(reprojection_one, (0, 1, 2)), in_axes=(0, 0, 0, 0))

    def jacobian(cams, X, w, feats):
        jc, jx, jw = per_obs(cams, X, w, feats)
        return np.concatenate([jc, jx, jw[:, :, None]], axis=2), -2.0 * w
    return jacobian


SPELLINGS = {
    "lse": {
        "keepdims, axis=-1": lambda: s2sgrad.grad(lse_keepdims),
        "methods, value_and_grad": lambda: _second(s2sgrad.value_and_grad(lse_methods)),
        "loops": lambda: s2sgrad.grad(lse_loop),
        "no max shift": lambda: s2sgrad.grad(lse_unshifted),
        "jit(grad)": lambda: s2sgrad.jit(s2sgrad.grad(lse_methods)),
        "scipy.special.logsumexp": lambda: s2sgrad.grad(logsumexp),
        "grad has_aux (softmax aux)": lambda: _first(s2sgrad.grad(lse_softmax_aux,
                                                                  has_aux=True)),
        "while loop, np.where max": lambda: s2sgrad.grad(lse_while_where),
    },
    "llsq": {
        "y += x[j] * t**j, np.dot": lambda: s2sgrad.grad(llsq_accumulate, 0),
        "Horner": lambda: s2sgrad.grad(llsq_horner, 0),
        "np.vander": lambda: s2sgrad.grad(llsq_vander, 0),
        "scalar loops": lambda: s2sgrad.grad(llsq_scalar_loops, 0),
        "np.power.outer, np.linalg.norm": lambda: s2sgrad.grad(llsq_norm, 0),
        "while loop, r.dot(r)": lambda: s2sgrad.grad(llsq_while, 0),
        "class holding t, s": _llsq_class,
        "global t, np.multiply.outer, cumprod": lambda: s2sgrad.grad(
            llsq_global_multiply_outer, 0),
        "t as an argument, np.power.outer": _llsq_data_argument,
    },
    "gmm": {
        "einsum kij,nkj, helper lse": lambda: s2sgrad.grad(gmm_einsum_letters, (0, 1, 2, 3)),
        "batched @": lambda: s2sgrad.grad(gmm_matmul, (0, 1, 2, 3)),
        "component loop": lambda: s2sgrad.grad(gmm_component_loop, (0, 1, 2, 3)),
        "value_and_grad": lambda: _second(s2sgrad.value_and_grad(gmm.gmm_objective,
                                                                 (0, 1, 2, 3))),
        "helper per term, scipy logsumexp, np.matmul, norm": lambda: s2sgrad.grad(
            gmm_helpers, (0, 1, 2, 3)),
        "nn.Cell with Parameters": _gmm_cell,
    },
    "kmeans": {
        "broadcast distances": lambda: kmeans.newton_direction(kmeans_broadcast),
        "np.dot, methods": lambda: kmeans.newton_direction(kmeans_dot),
        "hvp": _newton_hvp,
        "jvp(grad(lambda))": _newton_closure,
        "jvp(lambda: gradient(c, points))": _newton_gradient_closure,
        "argmin assignment, einsum": lambda: kmeans.newton_direction(kmeans_argmin),
        "while over centroids, np.where": lambda: kmeans.newton_direction(kmeans_where_loop),
        "partial, grad / hvp": lambda: _newton_partial_hvp(kmeans.kmeans_cost),
        "for over centroids, np.minimum": lambda: kmeans.newton_direction(
            kmeans_range_minimum),
        "while k < len, einsum rows": lambda: kmeans.newton_direction(kmeans_while_count),
    },
    "ba": {
        "by components": lambda: _ba_pair(ba_x_components, ba_y_components),
        "[:, 0].sum()": lambda: _ba_pair(ba_x_column, ba_y_column),
        "vjp, two cotangents": _ba_vjp,
        "vmap(jacfwd) per observation": lambda: _ba_vmap(s2sgrad.jacfwd),
        "vmap(jacrev) per observation": lambda: _ba_vmap(s2sgrad.jacrev),
    },
}

FORWARDS = {
    "lse": {"keepdims, axis=-1": lse_keepdims, "methods, value_and_grad": lse_methods,
            "loops": lse_loop, "no max shift": lse_unshifted, "jit(grad)": lse_methods,
            "scipy.special.logsumexp": logsumexp, "grad has_aux (softmax aux)": lse_softmax_aux,
            "while loop, np.where max": lse_while_where},
    "llsq": {"y += x[j] * t**j, np.dot": llsq_accumulate, "Horner": llsq_horner,
             "np.vander": llsq_vander, "scalar loops": llsq_scalar_loops,
             "np.power.outer, np.linalg.norm": llsq_norm, "while loop, r.dot(r)": llsq_while,
             "global t, np.multiply.outer, cumprod": llsq_global_multiply_outer},
    "gmm": {"einsum kij,nkj, helper lse": gmm_einsum_letters, "batched @": gmm_matmul,
            "component loop": gmm_component_loop,
            "helper per term, scipy logsumexp, np.matmul, norm": gmm_helpers},
    "kmeans": {"broadcast distances": kmeans_broadcast, "np.dot, methods": kmeans_dot,
               "argmin assignment, einsum": kmeans_argmin,
               "while over centroids, np.where": kmeans_where_loop,
               "for over centroids, np.minimum": kmeans_range_minimum,
               "while k < len, einsum rows": kmeans_while_count},
}
