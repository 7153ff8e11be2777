"""Forward-mode tangents of the matrix factorisations and solvers of the rule table
(``np.linalg.qr``, ``svd``, ``lstsq``, ``tensorinv``), as ``rt.<name>``, called from the
JVP rules of ``rules/jvp_linalg.py``.

Each takes the operand's tangent first, then the primitive's result and operands, and
gives the result's tangent (a tuple where the primitive returns one).  The formulas are
JAX's (``jax/_src/lax/linalg.py``: ``qr_jvp_rule``, ``_svd_jvp_rule``) in numpy;
``tests/test_jvp_rules.py`` checks each against central differences.
"""
import numpy as np

from .forward import pinv_tangent, svdvals_tangent

__all__ = ["qr_tangent", "svd_tangent", "lstsq_tangent", "tensorinv_tangent"]


def _t(x):
    return np.swapaxes(x, -1, -2)


def _tall_qr_tangent(t, q, r):
    """``(dq, dr)`` of the reduced QR of a matrix with ``m >= n`` (JAX's rule): with
    ``X = q^T t r^-1``, ``dO`` the skew part of X's strict lower triangle, ``dq = q (dO -
    X) + t r^-1`` and ``dr = (X - dO) r``."""
    t_rinv = _t(np.linalg.solve(_t(r), _t(t)))               # t r^-1
    x = _t(q) @ t_rinv
    lower = np.tril(x, -1)
    skew = lower - _t(lower)
    return q @ (skew - x) + t_rinv, (x - skew) @ r


def qr_tangent(t, ans):
    """The tangent ``(dq, dr)`` of ``q, r = np.linalg.qr(a)`` (reduced mode) along ``t``,
    for ``a`` of full rank.  A wide ``a = [X | Y]`` (``m < n``) has ``q, r_X = qr(X)`` and
    ``r = [r_X | q^T Y]``: X's tangent as above, then ``dr_Y = dq^T Y + q^T dY``."""
    q, r = ans
    m, n = np.shape(r)[-2], np.shape(t)[-1]
    if m >= n:
        return _tall_qr_tangent(t, q, r)
    dq, dr_x = _tall_qr_tangent(t[..., :m], q, r[..., :m])
    y = q @ r[..., m:]
    return dq, np.concatenate([dr_x, _t(dq) @ y + _t(q) @ t[..., m:]], axis=-1)


def svd_tangent(t, ans, a, full_matrices):
    """The tangent ``(du, ds, dvh)`` of ``u, s, vh = np.linalg.svd(a, full_matrices)`` along
    ``t`` (JAX's rule).  Defined for distinct, nonzero singular values (the singular
    vectors are functions of ``a`` only there; tied pairs get no term, as in
    ``rt.svd_adjoint``) and for square matrices or ``full_matrices=False`` (the completed
    basis of a non-square matrix is not unique): NotImplementedError otherwise."""
    u, s, vh = ans
    m, n = np.shape(a)[-2:]
    if full_matrices and m != n:
        raise NotImplementedError("the derivative of np.linalg.svd with full_matrices=True "
                                  "for a non-square matrix: pass full_matrices=False")
    v = _t(vh)
    ds_mat = _t(u) @ t @ v
    ds = np.diagonal(ds_mat, axis1=-2, axis2=-1).copy()
    s_row = s[..., None, :]
    diffs = (s_row + _t(s_row)) * (s_row - _t(s_row))
    eye = np.eye(s.shape[-1])
    tol = 100.0 * np.finfo(np.result_type(s, np.float32)).eps * \
        np.max(s, axis=-1)[..., None, None] ** 2
    tied = (np.abs(diffs) <= tol) | (eye > 0)
    f = np.where(tied, 0.0, 1.0 / np.where(tied, 1.0, diffs))
    s_inv = np.where(s == 0, 0.0, 1.0 / np.where(s == 0, 1.0, s))
    du = u @ (f * (s_row * ds_mat + _t(s_row * ds_mat)) + 0.5 * (ds_mat - _t(ds_mat))
              * (eye * s_inv[..., None, :]))
    dv = v @ (f * (_t(s_row) * ds_mat + _t(_t(s_row) * ds_mat)))
    if m > n:
        t_v = t @ v
        du = du + (t_v - u @ (_t(u) @ t_v)) / s_row
    if n > m:
        tt_u = _t(t) @ u
        dv = dv + (tt_u - v @ (vh @ tt_u)) / s_row
    return du, ds, _t(dv)


def lstsq_tangent(t_a, t_b, ans, a, b):
    """The tangent of ``x, residuals, rank, s = np.linalg.lstsq(a, b)`` along ``t_a`` and
    ``t_b`` (``a`` of full column rank, constant rank): ``x = pinv(a) b`` by the product
    rule; the residuals ``sum((b - a x)^2)`` are minimal in ``x``, so ``2 sum(r (t_b - t_a
    x))``; the rank none; the singular values ``diag(u^T t_a v)``."""
    x, res, rank, _ = ans
    a = np.asarray(a)
    t_a = np.broadcast_to(t_a, a.shape)
    t_b = np.broadcast_to(t_b, np.shape(b))
    p = np.linalg.pinv(a)
    x_dot = pinv_tangent(t_a, p, a) @ b + p @ t_b
    res_dot = np.zeros(np.shape(res), dtype=np.result_type(res, np.float64))
    if np.size(res):
        r = b - a @ x
        res_dot = res_dot + 2.0 * np.sum(r * (t_b - t_a @ x), axis=0)
    return x_dot, res_dot, 0 * rank, svdvals_tangent(t_a, a)


def tensorinv_tangent(t, ans, a, ind):
    """The tangent of ``np.linalg.tensorinv(a, ind)`` along ``t``: as matrices, ``-B t B``
    with ``B`` the inverse."""
    rows = int(np.prod(np.shape(a)[:ind]))
    b = np.reshape(ans, (-1, rows))
    tm = np.reshape(np.broadcast_to(t, np.shape(a)), (rows, -1))
    return np.reshape(-(b @ tm @ b), np.shape(ans))
