"""Tangents of the linear-algebra adjoint helpers that depend smoothly on a primal
operand and that ``runtime/second.py`` leaves out: the singular-value norms,
``svdvals``, ``cond``, ``qr``, ``svd``, ``lstsq``, ``tensorinv`` and ``tensorsolve``.
What forward mode over generated gradient code calls, as ``rt.<name>``, from the JVP
rules of ``rules/second_rules.py``.

As in ``second.py``, each ``<helper>_tangent`` gives the part of ``<helper>``'s tangent
that comes from its primal operands (the incoming adjoint's own tangent is the helper on
it, written in the rule), with the operands' tangents after the helper's own arguments;
the formulas are the product rule on each helper's (``runtime/linalg.py``,
``runtime/surface.py``), with the factorisations' tangents of
``runtime/linalg_tangents.py``.  The singular vectors are differentiable where the
singular values are distinct and nonzero; tied pairs get no term, as in the adjoints.
"""
import numpy as np

from .forward import pinv_tangent
from .linalg import inverse_gaps, matrix_norm_adjoint, pinv_adjoint
from .second import matrix_norm_adjoint_tangent, pinv_adjoint_tangent, reduced_svd_tangent

__all__ = ["svdvals_adjoint_tangent",
           "cond_adjoint_tangent", "qr_adjoint_tangent", "svd_adjoint_tangent",
           "lstsq_adjoint_tangent", "tensorinv_adjoint_tangent", "tensorsolve_adjoint_tangent"]


def _t(x):
    return np.swapaxes(x, -1, -2)


def svdvals_adjoint_tangent(g, a, a_dot):
    """The tangent of ``rt.svdvals_adjoint(g, a)`` = ``u diag(g) vh`` along ``a_dot``."""
    (u, _, vh), (du, _, dvh) = reduced_svd_tangent(a, a_dot)
    gk = np.asarray(g)[..., None, :]
    return (du * gk) @ vh + (u * gk) @ dvh


def _extreme_pair(u, s, vh, k):
    return u[..., :, k:k + 1] @ vh[..., k:k + 1, :], s[..., k:k + 1, None]


def cond_adjoint_tangent(g, ans, x, p, ans_dot, x_dot):
    """The tangent of ``rt.cond_adjoint(g, ans, x, p)`` along ``x_dot``: for ``p`` None, 2
    or -2 the product rule on ``top / lo - hi / lo^2 bottom`` (the extreme singular pairs,
    by the SVD's tangent); else on ``norm(x) norm(inv(x))``'s adjoint, through the
    inverse's tangent ``-inv x_dot inv``."""
    g = np.asarray(g)
    if p in (None, 2, -2):
        (u, s, vh), (du, ds, dvh) = reduced_svd_tangent(x, x_dot)
        top, hi = _extreme_pair(u, s, vh, 0)
        bottom, lo = _extreme_pair(u, s, vh, -1 + s.shape[-1])
        top_dot = du[..., :, :1] @ vh[..., :1, :] + u[..., :, :1] @ dvh[..., :1, :]
        bottom_dot = du[..., :, -1:] @ vh[..., -1:, :] + u[..., :, -1:] @ dvh[..., -1:, :]
        hi_dot, lo_dot = ds[..., :1, None], ds[..., -1:, None]
        if p == -2:
            top, bottom, hi, lo = bottom, top, lo, hi
            top_dot, bottom_dot, hi_dot, lo_dot = bottom_dot, top_dot, lo_dot, hi_dot
        out = top_dot / lo - top * lo_dot / lo ** 2 - hi_dot / lo ** 2 * bottom \
            + 2.0 * hi * lo_dot / lo ** 3 * bottom - hi / lo ** 2 * bottom_dot
        return g[..., None, None] * out
    x_dot = np.broadcast_to(x_dot, np.shape(x))
    inv = np.linalg.inv(x)
    inv_dot = -(inv @ x_dot @ inv)
    n_x, n_inv = np.linalg.norm(x, p, axis=(-2, -1)), np.linalg.norm(inv, p, axis=(-2, -1))
    ones = np.ones(np.shape(n_x))
    n_x_dot = np.sum(matrix_norm_adjoint(ones, x, p) * x_dot, axis=(-2, -1))
    n_inv_dot = np.sum(matrix_norm_adjoint(ones, inv, p) * inv_dot, axis=(-2, -1))
    d_inv = matrix_norm_adjoint(g * n_x, inv, p)
    d_inv_dot = matrix_norm_adjoint(g * n_x_dot, inv, p) + \
        matrix_norm_adjoint_tangent(g * n_x, inv, p, inv_dot)
    return (matrix_norm_adjoint(g * n_inv_dot, x, p)
            + matrix_norm_adjoint_tangent(g * n_inv, x, p, x_dot)
            - _t(inv_dot) @ d_inv @ _t(inv) - _t(inv) @ d_inv_dot @ _t(inv)
            - _t(inv) @ d_inv @ _t(inv_dot))


def _copyltu(m):
    return np.tril(m) + _t(np.tril(m, -1))


def qr_adjoint_tangent(g, ans, a, ans_dot):
    """The tangent of ``rt.qr_adjoint(g, ans, a)`` = ``b r^-T`` (``b = gq + q
    copyltu(r gr^T - gq^T q)``) along the tangent ``(dq, dr)`` of ``ans = (q, r)``."""
    gq, gr = g
    q, r = ans
    dq, dr = ans_dot
    mm = r @ _t(gr) - _t(gq) @ q
    mm_dot = dr @ _t(gr) - _t(gq) @ dq
    b = gq + q @ _copyltu(mm)
    b_dot = dq @ _copyltu(mm) + q @ _copyltu(mm_dot)
    out = _t(np.linalg.solve(r, _t(b)))                      # b r^-T
    return _t(np.linalg.solve(r, _t(b_dot))) - _t(np.linalg.solve(r, _t(out @ _t(dr))))


def svd_adjoint_tangent(g, ans, a, full_matrices, ans_dot):
    """The tangent of ``rt.svd_adjoint(g, ans, a, full_matrices)`` along the tangent
    ``(du, ds, dvh)`` of ``ans``: the product rule on ``u mid v^T`` (and the tall or wide
    completion), ``mid``'s gap factors ``F_ij = 1 / (s_j^2 - s_i^2)`` moving by ``-F_ij^2
    (2 s_j ds_j - 2 s_i ds_i)`` (0 for tied pairs, as ``F``)."""
    u, s, vh = ans
    du, ds, dvh = ans_dot
    m, n = np.shape(a)[-2:]
    gu, gs, gvh = g
    v, gv, dv = _t(vh), _t(gvh), _t(dvh)
    f = inverse_gaps(s[..., None, :] ** 2 - s[..., :, None] ** 2,
                     np.max(s, axis=-1) ** 2, s.dtype)
    tied = np.sum(f == 0) > f.size // s.shape[-1]
    if tied and (np.any(gu) or np.any(gvh)):
        raise NotImplementedError(
            "second derivatives through np.linalg.svd's singular vectors at a repeated "
            "singular value: the vectors are no function of the matrix there, and s2sgrad "
            "has the Hessian only where the singular values are distinct; use grad for this "
            "function")
    sq_dot = 2.0 * s * ds
    f_dot = -f * f * (sq_dot[..., None, :] - sq_dot[..., :, None])
    utgu, vtgv = _t(u) @ gu, _t(v) @ gv
    utgu_dot, vtgv_dot = _t(du) @ gu, _t(dv) @ gv
    skew_u, skew_v = utgu - _t(utgu), vtgv - _t(vtgv)
    skew_u_dot, skew_v_dot = utgu_dot - _t(utgu_dot), vtgv_dot - _t(vtgv_dot)
    mid = (f * skew_u) * s[..., None, :] + np.eye(s.shape[-1]) * np.asarray(gs)[..., :, None] \
        + s[..., :, None] * (f * skew_v)
    mid_dot = (f_dot * skew_u + f * skew_u_dot) * s[..., None, :] \
        + (f * skew_u) * ds[..., None, :] + ds[..., :, None] * (f * skew_v) \
        + s[..., :, None] * (f_dot * skew_v + f * skew_v_dot)
    out = du @ mid @ _t(v) + u @ mid_dot @ _t(v) + u @ mid @ _t(dv)
    if m > n:
        proj = np.eye(m) - u @ _t(u)
        proj_dot = -(du @ _t(u) + u @ _t(du))
        w = v / s[..., None, :]
        w_dot = dv / s[..., None, :] - v * ds[..., None, :] / s[..., None, :] ** 2
        out = out + _t(w_dot @ _t(gu) @ proj + w @ _t(gu) @ proj_dot)
    elif m < n:
        proj = np.eye(n) - v @ _t(v)
        proj_dot = -(dv @ _t(v) + v @ _t(dv))
        w = u / s[..., None, :]
        w_dot = du / s[..., None, :] - u * ds[..., None, :] / s[..., None, :] ** 2
        out = out + w_dot @ _t(gv) @ proj + w @ _t(gv) @ proj_dot
    return out


def lstsq_adjoint_tangent(g, ans, a, b, wrt, ans_dot, a_dot, b_dot):
    """The tangent of ``rt.lstsq_adjoint(g, ans, a, b, wrt)`` along the tangents of ``x``
    (``ans[0]``), ``a`` and ``b``: the product rule on ``p^T gx + 2 r gres`` (``b``) and
    ``pinv_adjoint(gx b^T, p, a) - 2 r gres x^T + u diag(gs) vh`` (``a``), with ``p =
    pinv(a)`` and ``r = b - a x``."""
    gx, gres, _, gs = g
    a = np.asarray(a)
    a_dot = np.broadcast_to(a_dot, a.shape)
    column = np.ndim(b) == 1
    b2, x2, gx2 = (np.asarray(b)[:, None], ans[0][:, None], np.asarray(gx)[:, None]) \
        if column else (np.asarray(b), ans[0], np.asarray(gx))
    bd2 = np.reshape(np.broadcast_to(b_dot, np.shape(b)), b2.shape)
    xd2 = np.reshape(ans_dot[0], x2.shape)
    p = np.linalg.pinv(a)
    p_dot = pinv_tangent(a_dot, p, a)
    r = b2 - a @ x2
    r_dot = bd2 - a_dot @ x2 - a @ xd2
    gres = np.reshape(gres, (1, -1)) if np.size(gres) else np.zeros((1, b2.shape[1]))
    if wrt == 1:
        return np.reshape(_t(p_dot) @ gx2 + 2.0 * r_dot * gres, np.shape(b))
    return (pinv_adjoint_tangent(gx2 @ b2.T, p, a, p_dot, a_dot) + pinv_adjoint(gx2 @ bd2.T, p, a)
            - 2.0 * (r_dot * gres) @ x2.T - 2.0 * (r * gres) @ xd2.T
            + svdvals_adjoint_tangent(gs, a, a_dot))


def tensorinv_adjoint_tangent(g, ans, a, ind, ans_dot):
    """The tangent of ``rt.tensorinv_adjoint(g, ans, a, ind)`` = ``-B^T G B^T`` along the
    tangent of ``ans`` (``B`` as a matrix)."""
    rows = int(np.prod(np.shape(a)[:ind]))
    b = np.reshape(ans, (-1, rows))
    b_dot = np.reshape(ans_dot, b.shape)
    gm = np.reshape(g, b.shape)
    return np.reshape(-(b_dot.T @ gm @ b.T + b.T @ gm @ b_dot.T), np.shape(a))


def tensorsolve_adjoint_tangent(g, ans, a, b, wrt, ans_dot, a_dot):
    """The tangent of ``rt.tensorsolve_adjoint(g, ans, a, b, wrt)`` along the tangents of
    ``ans`` and ``a``: as matrices, ``db = A^-T g`` moves by ``-A^-T A_dot^T db`` and ``dA =
    -db x^T`` by the product rule."""
    b_size = np.size(b)
    am = np.reshape(a, (b_size, -1))
    am_dot = np.reshape(np.broadcast_to(a_dot, np.shape(a)), am.shape)
    db = np.linalg.solve(am.T, np.ravel(g))
    db_dot = -np.linalg.solve(am.T, am_dot.T @ db)
    if wrt == 1:
        return db_dot.reshape(np.shape(b))
    return np.reshape(-(np.outer(db_dot, np.ravel(ans)) + np.outer(db, np.ravel(ans_dot))),
                      np.shape(a))
