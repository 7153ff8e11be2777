"""Numba implementations of the adjoints of ``np.linalg``'s tuple-returning functions
(``slogdet``, ``eigh``, ``qr``, ``svd``, ``lstsq``) and of forward mode's tangents of
``cholesky``, ``eigh``, ``eigvalsh``, ``matrix_power`` and ``pinv``, for one matrix (2-D
``a``; a stack of matrices runs as Python and says why).

Under Numba the decompositions return tuples and their adjoint ``g`` is a tuple (see
``numba_lists.py``: ``rt.zeros_list`` and ``rt.item_added`` of a tuple).  The formulas
and contracts are the Python versions' in ``s2sgrad/runtime/linalg.py``,
``runtime/surface.py`` and ``runtime/forward.py``; these follow them line by line with explicit 2-D shapes.
Numba's matrix products want contiguous operands, hence the ``np.ascontiguousarray``.
"""
import numpy as np
from numba import types
from numba.extending import overload, register_jitable

from .. import runtime as rt


def _pair(t, n):
    """``t`` is a tuple (or list) of ``n`` adjoints or results."""
    return isinstance(t, types.BaseTuple) and len(t) == n


def _matrix(t):
    return isinstance(t, types.Array) and t.ndim == 2


def _tie_tolerance(dtype):
    """100 ulps of ``dtype`` (at least float32's), as ``runtime.linalg.inverse_gaps``."""
    eps = np.finfo(np.result_type(getattr(dtype, "name", "float64"), np.float32)).eps
    return 100.0 * float(eps)


@register_jitable
def _c(x):
    return np.ascontiguousarray(x)


@register_jitable
def _inverse_gaps(values, tol):
    """``f[i, j] = 1 / (values[j] - values[i])`` off the diagonal; 0 on it and where the
    gap is within ``tol`` (a repeated value: the pair is left out)."""
    n = values.shape[0]
    f = np.zeros((n, n))
    for i in range(n):
        for j in range(n):
            gap = values[j] - values[i]
            if i != j and abs(gap) > tol:
                f[i, j] = 1.0 / gap
    return f


@register_jitable
def lower_only(j):
    """The diagonal of ``j`` and, below it, ``j + j^T`` (see ``runtime.linalg``)."""
    n = j.shape[0]
    out = np.zeros((n, n), dtype=j.dtype)
    for i in range(n):
        out[i, i] = j[i, i]
        for k in range(i):
            out[i, k] = j[i, k] + j[k, i]
    return out


@overload(rt.slogdet_adjoint)
def _slogdet_adjoint(g, a):
    if not (_pair(g, 2) and _matrix(a)):
        return None

    def impl(g, a):
        return g[1] * _c(np.linalg.inv(_c(a)).T)
    return impl


@overload(rt.eigh_adjoint)
def _eigh_adjoint(g, ans, a):
    if not (_pair(g, 2) and _pair(ans, 2) and _matrix(a)
            and isinstance(g[0], types.Array) and isinstance(g[1], types.Array)):
        return None
    scale_tol = _tie_tolerance(ans[0].dtype)

    def impl(g, ans, a):
        gw, gv = _c(g[0]), _c(g[1])
        w, v = ans[0], _c(ans[1])
        vt = _c(v.T)
        j = _c(v * gw.reshape(1, w.shape[0])) @ vt
        if np.any(gv != 0):
            f = _inverse_gaps(w, scale_tol * np.max(np.abs(w)))
            j = j + v @ _c(f * (vt @ gv)) @ vt
        return lower_only(j)
    return impl


@overload(rt.qr_adjoint)
def _qr_adjoint(g, ans, a):
    if not (_pair(g, 2) and _pair(ans, 2) and _matrix(a)
            and isinstance(g[0], types.Array) and isinstance(g[1], types.Array)):
        return None

    def impl(g, ans, a):
        gq, gr = _c(g[0]), _c(g[1])
        q, r = _c(ans[0]), _c(ans[1])
        if a.shape[0] < a.shape[1]:
            raise NotImplementedError("gradient of np.linalg.qr for a wide matrix (m < n)")
        mm = r @ _c(gr.T) - _c(gq.T) @ q
        b = gq + q @ _c(np.tril(mm) + np.tril(mm, -1).T)
        return _times_inverse_transpose(b, r)
    return impl


@register_jitable
def _times_inverse_transpose(b, r):
    """``b r^-T`` (``(r^-1 b^T)^T``) for an upper triangular ``r``, by substitution
    (``np.linalg.solve`` would cost seconds of compile time)."""
    n = r.shape[0]
    x = np.zeros(b.shape)
    for j in range(n - 1, -1, -1):   # x r^T = b: b[:, j] = sum over k >= j of x[:, k] r[j, k]
        col = b[:, j].copy()
        for k in range(j + 1, n):
            col -= r[j, k] * x[:, k]
        x[:, j] = col / r[j, j]
    return x


@overload(rt.svd_adjoint)
def _svd_adjoint(g, ans, a, full_matrices):
    if not (_pair(g, 3) and _pair(ans, 3) and _matrix(a)
            and all(isinstance(t, types.Array) for t in g)):
        return None
    tol = _tie_tolerance(ans[1].dtype)

    def impl(g, ans, a, full_matrices):
        u, s, vh = _c(ans[0]), ans[1], ans[2]
        gu, gs = _c(g[0]), g[1]
        m, n = a.shape
        if full_matrices and m != n:
            raise NotImplementedError("gradient of np.linalg.svd with full_matrices=True "
                                      "for a non-square matrix: pass full_matrices=False")
        v, gv = _c(vh.T), _c(g[2].T)
        k = s.shape[0]
        f = _inverse_gaps(s * s, tol * np.max(s) ** 2)
        utgu = _c(u.T) @ gu
        vtgv = _c(v.T) @ gv
        mid = (f * (utgu - utgu.T)) * s.reshape(1, k) + np.diag(gs) \
            + s.reshape(k, 1) * (f * (vtgv - vtgv.T))
        out = u @ _c(mid) @ _c(v.T)
        if m > n:
            out = out + _c((_c(v / s.reshape(1, k)) @ _c(gu.T)
                            @ (np.eye(m) - u @ _c(u.T))).T)
        elif m < n:
            out = out + _c(u / s.reshape(1, k)) @ _c(gv.T) @ (np.eye(n) - v @ _c(v.T))
        return out
    return impl


@register_jitable
def _pinv_adjoint(g, p, a):
    """``runtime.linalg.pinv_adjoint`` for 2-D contiguous operands."""
    m, n = a.shape
    pt = _c(p.T)
    return (-pt @ g @ pt + (np.eye(m) - a @ p) @ _c(g.T) @ p @ pt
            + pt @ p @ _c(g.T) @ (np.eye(n) - p @ a))


@overload(rt.lstsq_adjoint)
def _lstsq_adjoint(g, ans, a, b, wrt):
    if not (_pair(g, 4) and _pair(ans, 4) and _matrix(a) and isinstance(b, types.Array)
            and b.ndim in (1, 2) and isinstance(wrt, types.IntegerLiteral)
            and isinstance(g[0], types.Array) and isinstance(g[1], types.Array)
            and isinstance(g[3], types.Array)):
        return None

    def of_b(g, ans, a, b, wrt):
        p, r, gres, b2, x2, gx2, u, vh = _lstsq_parts(g, ans, a, b)
        return (_c(p.T) @ gx2 + 2.0 * r * gres).reshape(b.shape)

    def of_a(g, ans, a, b, wrt):
        p, r, gres, b2, x2, gx2, u, vh = _lstsq_parts(g, ans, a, b)
        return (_pinv_adjoint(gx2 @ _c(b2.T), p, _c(a)) - 2.0 * _c(r * gres) @ _c(x2.T)
                + _c(u * _c(g[3]).reshape(1, -1)) @ vh)
    return of_b if wrt.literal_value == 1 else of_a


@register_jitable
def _lstsq_parts(g, ans, a, b):
    """pinv(a), the residual r = b - a x, the residuals' adjoint as a row; b, x and x's
    adjoint as 2-D arrays (a 1-D b as one column); a's reduced SVD's u and vh.  ``a`` has
    full column rank: ``pinv(a) = v diag(1 / s) u^T`` (no second SVD inside np.linalg.pinv)."""
    a2 = _c(a)
    b2 = _c(b).reshape(b.shape[0], -1)
    x2 = _c(ans[0]).reshape(a.shape[1], -1)
    gx2 = _c(g[0]).reshape(a.shape[1], -1)
    u, s, vh = np.linalg.svd(a2, full_matrices=False)
    p = _c(vh.T) @ _c((u / s.reshape(1, -1)).T)
    r = b2 - a2 @ x2
    gres = np.zeros((1, b2.shape[1]))
    if g[1].size:
        gres[0, :] = _c(g[1]).ravel()
    return p, r, gres, b2, x2, gx2, u, vh


# ---------------------------------------------------------------- forward mode (tangents)
# ``s2sgrad/runtime/forward.py``'s linear-algebra tangents, for one matrix.


@register_jitable
def _from_lower(t):
    """The symmetric matrix ``cholesky`` / ``eigh`` read in ``t``: its lower triangle,
    mirrored."""
    return np.tril(t) + _c(np.tril(t, -1).T)


@register_jitable
def _solve_lower(L, b):
    """``L^-1 b`` for a lower triangular ``L``, by forward substitution."""
    n = L.shape[0]
    x = np.zeros(b.shape)
    for i in range(n):
        row = b[i].copy()
        for k in range(i):
            row -= L[i, k] * x[k]
        x[i] = row / L[i, i]
    return x


@overload(rt.cholesky_tangent)
def _cholesky_tangent(t, L):
    if not (_matrix(t) and _matrix(L)):
        return None

    def impl(t, L):
        lc = _c(L)
        x = _solve_lower(lc, _c(_solve_lower(lc, _from_lower(t)).T))   # L^-1 t L^-T
        return lc @ _c(np.tril(x) - 0.5 * x * np.eye(x.shape[0]))
    return impl


@overload(rt.eigh_tangent)
def _eigh_tangent(t, ans):
    if not (_matrix(t) and _pair(ans, 2)):
        return None
    tol = _tie_tolerance(ans[0].dtype)

    def impl(t, ans):
        w, v = ans[0], _c(ans[1])
        m = _c(v.T) @ _c(_from_lower(t)) @ v
        f = _inverse_gaps(w, tol * np.max(np.abs(w)))
        return np.diag(m).copy(), v @ _c(f * m)
    return impl


@overload(rt.eigvalsh_tangent)
def _eigvalsh_tangent(t, a):
    if not (_matrix(t) and _matrix(a)):
        return None

    def impl(t, a):
        _, v = np.linalg.eigh(_c(a))
        v = _c(v)
        return np.diag(_c(v.T) @ _c(_from_lower(t)) @ v).copy()
    return impl


@overload(rt.matrix_power_tangent)
def _matrix_power_tangent(t, a, n):
    if not (_matrix(t) and _matrix(a) and isinstance(n, types.Integer)):
        return None

    def impl(t, a, n):
        base, tb = _c(a), _c(t)
        if n < 0:
            base = _c(np.linalg.inv(base))
            tb = -(base @ tb @ base)
        k = abs(n)
        powers = [np.eye(base.shape[0])]
        for _ in range(k - 1):
            powers.append(powers[-1] @ base)
        out = np.zeros(base.shape)
        for i in range(k):
            out += powers[i] @ tb @ powers[k - 1 - i]
        return out
    return impl


@overload(rt.pinv_tangent)
def _pinv_tangent(t, ans, a):
    if not (_matrix(t) and _matrix(ans) and _matrix(a)):
        return None

    def impl(t, ans, a):
        p, tc, ac = _c(ans), _c(t), _c(a)
        tt = _c(tc.T)
        m, n = ac.shape
        return (-(p @ tc @ p) + p @ _c(p.T) @ tt @ (np.eye(m) - ac @ p)
                + (np.eye(n) - p @ ac) @ tt @ _c(p.T) @ p)
    return impl
