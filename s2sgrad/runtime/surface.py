"""Adjoint helpers of the rules in ``s2sgrad/rules/numpy_surface.py`` (read as ``rt.<name>``).

``s2sgrad.runtime`` re-exports every public name here.  Each takes the incoming
adjoint ``g`` (the result's adjoint; a list of the items' adjoints for a function
returning a tuple) and the call's operands, and gives the adjoint of one operand
(``wrt`` names which when there are several) in that operand's shape.
"""
import numpy as np

from .core import divide_or_zero, unbroadcast, unreduce
from .arrays import per_quantile
from .linalg import matrix_norm_adjoint, pinv_adjoint, svdvals_adjoint

__all__ = ["marker_adjoint", "insert_adjoint", "delete_adjoint", "compress_adjoint",
           "drop_initial", "resize_adjoint", "trim_zeros_adjoint", "choose_adjoints",
           "meshgrid_adjoints", "broadcast_arrays_adjoints", "vander_adjoint",
           "polyval_adjoint", "affine_adjoint", "right_aligned", "interp_adjoint",
           "cov_adjoint", "corrcoef_adjoint", "nan_moments_adjoint", "cond_adjoint",
           "tensorinv_adjoint", "tensorsolve_adjoint", "multigammaln_adjoint",
           "nan_quantile_adjoint", "lstsq_adjoint", "block_adjoints"]


def _unbroadcast(g, like):
    return unbroadcast(g, like)


def marker_adjoint(g, like, markers):
    """The adjoint of ``like`` from ``markers``: an integer array of the result's shape
    holding, where the result copies an element of ``like``, that element's flat index
    (-1 elsewhere).  Elements copied several times get the sum of their adjoints."""
    out = np.zeros(np.size(like), dtype=np.result_type(g, like, np.float32))
    hit = markers >= 0
    np.add.at(out, markers[hit], np.broadcast_to(g, markers.shape)[hit])
    return out.reshape(np.shape(like)) if np.ndim(like) else out[0]


def insert_adjoint(g, arr, obj, values, axis, wrt):
    """The adjoint of ``arr`` (``wrt`` 0) or ``values`` (1) in ``np.insert(arr, obj, values,
    axis)``: the same insert run on the flat indices of each operand (-1 standing for the
    other) says which element of the result came from where."""
    arr_ids = np.arange(np.size(arr)).reshape(np.shape(arr))
    val_ids = np.arange(np.size(values)).reshape(np.shape(values))
    if wrt == 0:
        markers = np.insert(arr_ids, obj, np.full(np.shape(values), -1), axis=axis)
        return marker_adjoint(g, arr, markers)
    markers = np.insert(np.full(np.shape(arr), -1), obj, val_ids, axis=axis)
    return marker_adjoint(g, values, markers)


def delete_adjoint(g, arr, obj, axis):
    """The adjoint of ``arr`` in ``np.delete(arr, obj, axis)``: ``g`` at the kept places."""
    ids = np.arange(np.size(arr)).reshape(np.shape(arr))
    return marker_adjoint(g, arr, np.delete(ids, obj, axis=axis))


def compress_adjoint(g, condition, a, axis):
    """The adjoint of ``a`` in ``np.compress(condition, a, axis)`` (and ``np.extract``)."""
    ids = np.arange(np.size(a)).reshape(np.shape(a))
    return marker_adjoint(g, a, np.compress(condition, ids, axis=axis))


def drop_initial(g, axis, include_initial):
    """``g`` without its first entry along ``axis`` (None: the only axis) when the result
    started with the initial value (``np.cumulative_sum(..., include_initial=True)``)."""
    if not include_initial:
        return g
    g = np.asarray(g)
    return np.take(g, np.arange(1, g.shape[axis or 0]), axis=axis or 0)


def resize_adjoint(g, a):
    """The adjoint of ``a`` in ``np.resize(a, shape)``: the result repeats ``a``'s flat
    elements cyclically, so each gets the sum of its copies' adjoints."""
    n = np.size(a)
    flat = np.ravel(g)
    padded = np.zeros(-(-flat.size // n) * n, dtype=np.result_type(g, np.float32))
    padded[:flat.size] = flat
    return padded.reshape(-1, n).sum(axis=0).reshape(np.shape(a))


def trim_zeros_adjoint(g, filt, trim):
    """The adjoint of ``filt`` (1-D) in ``np.trim_zeros(filt, trim)``: ``g`` where the kept
    part was."""
    nonzero = np.flatnonzero(np.asarray(filt))
    start = nonzero[0] if nonzero.size and "f" in trim.lower() else 0
    out = np.zeros(np.shape(filt), dtype=np.result_type(g, filt, np.float32))
    out[start:start + np.size(g)] = g
    return out


def choose_adjoints(g, a, choices):
    """The adjoints of the choices of ``np.choose(a, choices)``: ``g`` where ``a`` picks
    that choice (a list)."""
    return [_unbroadcast(np.where(np.asarray(a) == i, g, 0.0), c)
            for i, c in enumerate(choices)]


def meshgrid_adjoints(g, xi, indexing):
    """The adjoints of the vectors of ``np.meshgrid(*xi, indexing=indexing)``: output
    ``k`` varies along one axis only (``k``, or ``1 - k`` for the first two with 'xy'),
    so ``x_k``'s adjoint is ``g[k]`` summed over the other axes."""
    out = []
    for k, (gk, x) in enumerate(zip(g, xi)):
        axis = k
        if indexing == "xy" and len(xi) > 1 and k < 2:
            axis = 1 - k
        gk = np.asarray(gk)
        total = np.sum(gk, axis=tuple(i for i in range(gk.ndim) if i != axis))
        out.append(np.reshape(total, np.shape(x)))
    return out


def broadcast_arrays_adjoints(g, args):
    """The adjoints of ``np.broadcast_arrays(*args)``: each item's adjoint summed back to
    its argument's shape (a list)."""
    return [_unbroadcast(gk, a) for gk, a in zip(g, args)]


def vander_adjoint(g, x, N, increasing):
    """The adjoint of ``x`` (1-D) in ``np.vander(x, N, increasing)``: column ``j`` is
    ``x ** p_j``, so ``dx = sum_j g[:, j] p_j x ** (p_j - 1)``."""
    x = np.asarray(x)
    n = x.shape[0] if N is None else N
    powers = np.arange(n) if increasing else np.arange(n - 1, -1, -1)
    slope = np.where(powers > 0, powers * x[:, None] ** np.maximum(powers - 1, 0), 0.0)
    return np.sum(np.asarray(g) * slope, axis=1)


def polyval_adjoint(g, p, x, wrt):
    """The adjoint of the coefficients ``p`` (``wrt`` 0, 1-D, highest power first) or of
    ``x`` (1) in ``np.polyval(p, x)``."""
    p = np.asarray(p)
    if wrt == 1:
        slope = np.polyval(np.polyder(p), x) if p.size > 1 else np.zeros(np.shape(x))
        return _unbroadcast(g * slope, x)
    xs = np.ravel(np.broadcast_to(x, np.shape(g)))
    return np.vander(xs, p.size).T @ np.ravel(g)


def affine_adjoint(g, fn, p, *args):
    """The adjoint of the 1-D ``p`` in ``fn(p, *args)`` for ``fn`` affine in ``p``
    (``np.polyder``, ``np.polyint``): ``J^T g`` with ``J``'s columns ``fn(e_k) - fn(0)``."""
    p = np.asarray(p, dtype=np.result_type(p, np.float32))
    base = np.asarray(fn(np.zeros_like(p), *args))
    g = np.ravel(g)
    out = np.empty(p.shape, dtype=p.dtype)
    for k in range(p.size):
        unit = np.zeros_like(p)
        unit[k] = 1.0
        column = np.ravel(np.asarray(fn(unit, *args)) - base)
        out[k] = np.dot(g[g.size - column.size:], column) if column.size <= g.size else \
            np.dot(g, column[column.size - g.size:])
    return out


def right_aligned(g, like):
    """The adjoint of the coefficients ``like`` in ``np.polyadd`` / ``np.polysub``: the
    result lines the coefficients up at the lowest power, so ``like`` gets ``g``'s last
    ``len(like)`` entries."""
    g = np.ravel(g)
    return g[g.size - np.size(like):].reshape(np.shape(like))


def interp_adjoint(g, x, xp, fp, wrt):
    """The adjoint of ``x`` (``wrt`` 0), ``xp`` (1) or ``fp`` (2) in ``np.interp(x, xp,
    fp)``.  Inside ``[xp[0], xp[-1]]``, ``y = fp_i + s (x - xp_i)`` on segment ``i`` with
    slope ``s``: ``dy/dx = s``, ``dy/dxp_i = s (t - 1)``, ``dy/dxp_{i+1} = -s t``,
    ``dy/dfp_i = 1 - t``, ``dy/dfp_{i+1} = t`` (``t`` the position in the segment); outside,
    ``y`` is ``fp[0]`` or ``fp[-1]``."""
    xa, xp, fp = np.asarray(x, dtype=float), np.asarray(xp, dtype=float), \
        np.asarray(fp, dtype=float)
    n = xp.size
    idx = np.clip(np.searchsorted(xp, xa, side="right") - 1, 0, n - 2)
    h = xp[idx + 1] - xp[idx]
    t = (xa - xp[idx]) / h
    slope = (fp[idx + 1] - fp[idx]) / h
    inside = (xa >= xp[0]) & (xa <= xp[-1])
    gi = np.where(inside, g, 0.0)
    if wrt == 0:
        return _unbroadcast(gi * slope, x)
    out = np.zeros(n)
    if wrt == 1:
        np.add.at(out, idx, np.ravel(np.broadcast_to(gi * slope * (t - 1.0), xa.shape)))
        np.add.at(out, idx + 1, np.ravel(np.broadcast_to(-gi * slope * t, xa.shape)))
        return out
    np.add.at(out, idx, np.ravel(np.broadcast_to(gi * (1.0 - t), xa.shape)))
    np.add.at(out, idx + 1, np.ravel(np.broadcast_to(gi * t, xa.shape)))
    out[0] += np.sum(np.where(xa < xp[0], g, 0.0))
    out[-1] += np.sum(np.where(xa > xp[-1], g, 0.0))
    return out


def as_observations(m, rowvar):
    """``m`` as (variables, observations) and how to give an adjoint back in ``m``'s shape."""
    x = np.atleast_2d(np.asarray(m, dtype=np.result_type(m, np.float64)))
    if not rowvar and x.shape[0] != 1:
        x = x.T
    return x


def cov_adjoint(g, m, rowvar, bias, ddof):
    """The adjoint of ``m`` in ``np.cov(m, rowvar=, bias=, ddof=)``: with centred ``xc``
    (variables x observations) and ``C = xc xc^T / f``, ``dm = (G + G^T) xc / f``."""
    x = as_observations(m, rowvar)
    f = x.shape[1] - (ddof if ddof is not None else (0 if bias else 1))
    xc = x - x.mean(axis=1, keepdims=True)
    gm = np.reshape(g, (x.shape[0], x.shape[0]))
    dx = (gm + gm.T) @ xc / f
    if not rowvar and np.ndim(m) == 2 and np.shape(m)[0] != 1:
        dx = dx.T
    return dx.reshape(np.shape(m))


def corrcoef_adjoint(g, ans, x, rowvar):
    """The adjoint of ``x`` in ``np.corrcoef(x, rowvar=)``: ``R = C_ij s_i s_j`` with
    ``s = 1 / sqrt(diag C)``, so ``dC = G s s^T`` plus, on the diagonal,
    ``-s_k^2 / 2 sum_j (G_kj + G_jk) R_kj``; then ``cov_adjoint``."""
    xs = as_observations(x, rowvar)
    c = np.cov(xs)
    c = np.reshape(c, (xs.shape[0], xs.shape[0]))
    s = 1.0 / np.sqrt(np.diag(c))
    gm = np.reshape(g, c.shape)
    r = np.reshape(ans, c.shape)
    dc = gm * np.outer(s, s)
    dc[np.diag_indices_from(dc)] -= 0.5 * s * s * np.sum((gm + gm.T) * r, axis=1)
    dx = cov_adjoint(dc, xs, True, False, None)
    if not rowvar and np.ndim(x) == 2 and np.shape(x)[0] != 1:
        dx = dx.T
    return dx.reshape(np.shape(x))


def nan_moments_adjoint(g, ans, a, axis, ddof, keepdims, std):
    """The adjoint of ``a`` in ``np.nanvar`` (``std`` False) / ``np.nanstd`` (True) of
    ``(a, axis, ddof=, keepdims=)``: the moments of the non-NaN entries; NaNs get 0."""
    a = np.asarray(a)
    ok = ~np.isnan(a)
    count = np.sum(ok, axis=axis, keepdims=True)
    centred = np.where(ok, a - np.nanmean(a, axis=axis, keepdims=True), 0.0)
    scale = divide_or_zero(g, ans) / 2.0 if std else g
    return unreduce(scale, a, axis, keepdims) * 2.0 / (count - ddof) * centred


def cond_adjoint(g, ans, x, p):
    """The adjoint of ``x`` in ``np.linalg.cond(x, p)``: for ``p`` None, 2 or -2 the ratio
    of extreme singular values (``u_k v_k^T`` are their adjoints), else
    ``norm(x, p) norm(inv(x), p)`` by the product rule and the adjoint of the inverse."""
    g = np.asarray(g)
    if p in (None, 2, -2):
        u, s, vh = np.linalg.svd(x)
        hi, lo = s[..., :1, None], s[..., -1:, None]
        top = u[..., :, :1] @ vh[..., :1, :]
        bottom = u[..., :, -1:] @ vh[..., -1:, :]
        dx = top / lo - hi / lo ** 2 * bottom
        if p == -2:
            dx = bottom / hi - lo / hi ** 2 * top
        return g[..., None, None] * dx
    inv = np.linalg.inv(x)
    n_x, n_inv = np.linalg.norm(x, p, axis=(-2, -1)), np.linalg.norm(inv, p, axis=(-2, -1))
    d_inv = matrix_norm_adjoint(g * n_x, inv, p)
    inv_t = np.swapaxes(inv, -1, -2)
    return matrix_norm_adjoint(g * n_inv, x, p) - inv_t @ d_inv @ inv_t


def tensorinv_adjoint(g, ans, a, ind):
    """The adjoint of ``a`` in ``np.linalg.tensorinv(a, ind)``: the inverse of ``a`` seen
    as a square matrix, ``-B^T G B^T`` with ``B`` the inverse as a matrix."""
    rows = int(np.prod(np.shape(a)[:ind]))
    b = np.reshape(ans, (-1, rows))
    gm = np.reshape(g, b.shape)
    return np.reshape(-b.T @ gm @ b.T, np.shape(a))


def tensorsolve_adjoint(g, ans, a, b, wrt):
    """The adjoint of ``a`` (``wrt`` 0) or ``b`` (1) in ``x = np.linalg.tensorsolve(a,
    b)``: as matrices ``A x = b``, ``db = A^-T g`` and ``dA = -db x^T``."""
    b_size = np.size(b)
    am = np.reshape(a, (b_size, -1))
    db = np.linalg.solve(am.T, np.ravel(g))
    if wrt == 1:
        return db.reshape(np.shape(b))
    return np.reshape(-np.outer(db, np.ravel(ans)), np.shape(a))


def multigammaln_adjoint(g, a, d):
    """The adjoint of ``a`` in ``scipy.special.multigammaln(a, d)``: ``sum_j digamma(a - j
    / 2)`` for ``j`` in ``0 .. d-1``."""
    from scipy.special import digamma
    a = np.asarray(a, dtype=float)
    return g * sum(digamma(a - j / 2.0) for j in range(int(d)))


def nan_quantile_adjoint(g, a, q, axis, method, keepdims):
    """The adjoint of ``a`` in ``np.nanquantile(a, q, axis, method="linear", keepdims=)`` (for
    an array ``q``, summed over ``rt.per_quantile``; for one ``q``: ``np.nanmedian``: 0.5; ``np.nanpercentile``: q / 100): on each lane, the
    two order statistics of the non-NaN values it interpolates get ``g`` times their
    weights; NaNs get 0 (a lane of NaNs only: all 0)."""
    if method != "linear":
        raise NotImplementedError("gradient of np.nanquantile / nanpercentile: s2sgrad has "
                                  "method='linear'")
    if np.ndim(q):
        return per_quantile(nan_quantile_adjoint, g, a, q, axis, method, keepdims)
    arr = np.asarray(a, dtype=np.result_type(a, np.float64))
    if axis is None:
        lanes, gl = arr.reshape(1, -1), np.reshape(g, (1,))
    else:
        ax = axis % arr.ndim
        moved = np.moveaxis(arr, ax, -1)
        lanes = moved.reshape(-1, arr.shape[ax])
        gk = np.squeeze(np.asarray(g), axis=ax) if keepdims else np.asarray(g)
        gl = np.broadcast_to(gk, moved.shape[:-1]).reshape(-1)
    out = np.zeros(lanes.shape)
    for k in range(lanes.shape[0]):
        valid = np.flatnonzero(~np.isnan(lanes[k]))
        if valid.size == 0:
            continue
        order = valid[np.argsort(lanes[k, valid], kind="stable")]
        pos = float(q) * (valid.size - 1)
        lo = int(np.floor(pos))
        hi = min(lo + 1, valid.size - 1)
        if hi == lo:
            out[k, order[lo]] += gl[k]
        else:
            out[k, order[lo]] += gl[k] * (hi - pos)
            out[k, order[hi]] += gl[k] * (pos - lo)
    if axis is None:
        return out.reshape(arr.shape)
    return np.moveaxis(out.reshape(np.moveaxis(arr, ax, -1).shape), -1, ax)


def lstsq_adjoint(g, ans, a, b, wrt):
    """The adjoint of ``a`` (``wrt`` 0) or ``b`` (1) in ``x, residuals, rank, s =
    np.linalg.lstsq(a, b)`` for ``a`` of full column rank (constant rank).

    ``x = pinv(a) b``: ``b`` gets ``pinv(a)^T gx`` and ``a`` the pinv adjoint of
    ``gx b^T``.  The residuals ``||b - a x||^2`` (given when ``m > n``) are minimal in
    ``x``, so their adjoint is ``-2 r x^T`` for ``a`` and ``2 r`` for ``b`` (``r = b - a x``).
    The singular values' adjoint is ``u diag(gs) vh``."""
    gx, gres, _, gs = g
    a = np.asarray(a)
    x = ans[0]
    b2, x2, gx2 = (np.asarray(b)[:, None], x[:, None], np.asarray(gx)[:, None]) \
        if np.ndim(b) == 1 else (np.asarray(b), x, np.asarray(gx))
    p = np.linalg.pinv(a)
    r = b2 - a @ x2
    gres = np.reshape(gres, (1, -1)) if np.size(gres) else np.zeros((1, b2.shape[1]))
    if wrt == 1:
        return np.reshape(p.T @ gx2 + 2.0 * r * gres, np.shape(b))
    return (pinv_adjoint(gx2 @ b2.T, p, a) - 2.0 * (r * gres) @ x2.T
            + svdvals_adjoint(gs, a))


def block_adjoints(g, arrays):
    """The adjoints of the blocks of ``np.block(arrays)`` (nested lists), in the same
    nesting: ``np.block`` run on each block's flat indices (offset to be unique) says
    where each element of each block went."""
    leaves = []

    def markers(item):
        if isinstance(item, (list, tuple)):
            return [markers(x) for x in item]
        size = np.size(item)
        start = sum(np.size(x) for x in leaves)
        leaves.append(item)
        return np.arange(start, start + size).reshape(np.shape(item))

    where = np.block(markers(arrays))
    gm = np.broadcast_to(g, where.shape)
    starts = np.cumsum([0] + [np.size(x) for x in leaves])

    def adjoints(item, counter=[0]):
        if isinstance(item, (list, tuple)):
            return [adjoints(x, counter) for x in item]
        k = counter[0]
        counter[0] += 1
        hit = (where >= starts[k]) & (where < starts[k + 1])
        out = np.zeros(np.size(item), dtype=np.result_type(g, np.float32))
        out[where[hit] - starts[k]] = gm[hit]
        return out.reshape(np.shape(item)) if np.ndim(item) else out[0]

    return adjoints(arrays, [0])
