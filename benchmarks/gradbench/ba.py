"""ba (GradBench evals/ba, ADBench's bundle adjustment): the Jacobian of the
reprojection errors, ba1 (n = 49 cameras, m = 7,776 points, p = 31,843 observations).

GradBench sends one camera, point, weight and feature and tiles them (its
evals/ba/run.py and tools/pytorch/ba.py); the observations cycle through the cameras
and points.  The reprojection error is written loop-free over all observations (each
row of ``cams``/``X`` is the camera and point of one observation, gathered by index
before the call): Rodrigues' rotation, the perspective division, the radial
distortion.  Observation j's error depends only on row j, so the Jacobian's 2 x 15
block of observation j is row j of the gradients of the summed x and y errors: two
reverse sweeps (one per error coordinate), the same for every tool.  The weight
error 1 - w**2 has the Jacobian -2 w, written by hand by every tool alike."""
import numpy as np

from common import jax_modules, rebind, s2sgrad_gradient

SIZE = "ba1: n=49, m=7776, p=31843"

CAM = [-0.758453, -1.109613, -0.845551, 34.556073, 39.676747, 53.881673, 419.194514,
       5.864426, -8.518870, 0.087812, 0.002739]
POINT = [7.203245, 0.001144, 3.023326]
WEIGHT = 0.417022
FEATURE = [271.760969, 834.209256]


def reprojection_error(cams, X, w, feats):
    rot = cams[:, 0:3]
    theta = np.sqrt(np.sum(rot ** 2, axis=1))
    costheta = np.cos(theta)
    sintheta = np.sin(theta)
    axis = rot / theta[:, None]
    Xc = X - cams[:, 3:6]
    w_cross_X = np.cross(axis, Xc)
    tmp = np.sum(axis * Xc, axis=1) * (1.0 - costheta)
    Xcam = Xc * costheta[:, None] + w_cross_X * sintheta[:, None] + axis * tmp[:, None]
    proj = Xcam[:, 0:2] / Xcam[:, 2:3]
    rsq = np.sum(proj ** 2, axis=1)
    L = 1.0 + cams[:, 9] * rsq + cams[:, 10] * rsq * rsq
    projected = proj * L[:, None] * cams[:, 6:7] + cams[:, 7:9]
    return w[:, None] * (projected - feats)


def error_x(cams, X, w, feats):
    return np.sum(reprojection_error(cams, X, w, feats)[:, 0])


def error_y(cams, X, w, feats):
    return np.sum(reprojection_error(cams, X, w, feats)[:, 1])


def inputs(n=49, m=7776, p=31843):
    cams = np.tile(CAM, (n, 1))
    points = np.tile(POINT, (m, 1))
    j = np.arange(p)
    return (cams[j % n], points[j % m], np.full(p, WEIGHT), np.tile(FEATURE, (p, 1)))


def forward(cams, X, w, feats):
    return reprojection_error(cams, X, w, feats), 1.0 - w ** 2


def _blocks(gx, gy, w):
    """The per-observation Jacobian blocks (p x 2 x 15) and the weight errors' (-2 w)."""
    rows = [np.concatenate([np.asarray(a).reshape(w.shape[0], -1) for a in g], axis=1)
            for g in (gx, gy)]
    return np.stack(rows, axis=1), -2.0 * w


def _s2sgrad():
    gx = s2sgrad_gradient(error_x, (0, 1, 2))
    gy = s2sgrad_gradient(error_y, (0, 1, 2))
    return lambda cams, X, w, feats: _blocks(gx(cams, X, w, feats), gy(cams, X, w, feats), w)


def _jax():
    jax, jnp = jax_modules()
    scope = {"reprojection_error": rebind(reprojection_error, jnp)}
    gx = jax.grad(rebind(error_x, jnp, **scope), (0, 1, 2))
    gy = jax.grad(rebind(error_y, jnp, **scope), (0, 1, 2))
    both = jax.jit(lambda *args: (gx(*args), gy(*args)))

    def jacobian(cams, X, w, feats):
        a, b = jax.block_until_ready(both(cams, X, w, feats))
        return _blocks(a, b, w)
    return jacobian


def _autograd():
    import autograd
    import autograd.numpy as anp
    scope = {"reprojection_error": rebind(reprojection_error, anp)}
    gx = autograd.grad(rebind(error_x, anp, **scope), (0, 1, 2))
    gy = autograd.grad(rebind(error_y, anp, **scope), (0, 1, 2))
    return lambda cams, X, w, feats: _blocks(gx(cams, X, w, feats), gy(cams, X, w, feats), w)


tools = {"s2sgrad": _s2sgrad, "jax": _jax, "autograd": _autograd}
