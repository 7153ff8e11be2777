"""Tangents of the adjoint helpers that depend smoothly on a primal operand: what
forward mode over generated gradient code (``hessian``, ``hvp``, ``grad(grad)``) calls,
as ``rt.<name>``, from the JVP rules of ``rules/runtime_jvp.py``.

Each ``<helper>_tangent`` gives the part of ``<helper>``'s tangent that comes from its
primal operands (the adjoint's own tangent ``g_dot`` is the helper on ``g_dot``, written
in the rule); the operands' tangents come after the helper's own arguments.  Plain
numpy, by the product rule on each helper's formula (``runtime/linalg.py``,
``runtime/arrays.py``); ``tests/test_second_order_rules.py`` checks them against
central differences of the gradients.
"""
import numpy as np

from .core import unbroadcast, unreduce
from .einsum import einsum_adjoints, einsum_operand_positions
from .linalg import inverse_gaps, lower_only, is_matrix_norm
from .linalg_tangents import svd_tangent

__all__ = ["inv_tangent", "sinc_second_derivative", "logsumexp_adjoint_tangent",
           "norm_adjoint_tangent", "vector_norm_adjoint_tangent",
           "matrix_norm_axes_adjoint_tangent", "cholesky_adjoint_tangent",
           "eigh_adjoint_tangent", "eigvalsh_adjoint_tangent", "pinv_adjoint_tangent",
           "matrix_power_adjoint_tangent", "operand_adjoints_tangent"]


def _t(x):
    return np.swapaxes(x, -1, -2)


def inv_tangent(a, a_dot):
    """The tangent of ``inv(a)`` along ``a_dot``: ``-inv(a) a_dot inv(a)``."""
    b = np.linalg.inv(a)
    return -(b @ a_dot @ b)


def sinc_second_derivative(x):
    """d/dx of ``rt.sinc_derivative``: ``(-pi sin(pi x) - 2 sinc'(x)) / x``, ``-pi^2 / 3``
    at 0."""
    arr = np.asarray(x, dtype=np.result_type(x, np.float64))
    safe = np.where(arr == 0, 1.0, arr)
    first = (np.cos(np.pi * safe) - np.sinc(safe)) / safe
    out = np.where(arr == 0, -np.pi ** 2 / 3.0,
                   (-np.pi * np.sin(np.pi * safe) - 2.0 * first) / safe)
    return out if isinstance(x, np.ndarray) else out[()]


def logsumexp_adjoint_tangent(g, ans, a, axis, b, keepdims, wrt, ans_dot, a_dot, b_dot):
    """The tangent of ``rt.logsumexp_adjoint(g, ans, a, axis, b, keepdims, wrt)`` along the
    tangents of ``ans``, ``a`` and ``b`` (``b`` None: no weights)."""
    full = np.broadcast_shapes(np.shape(a), np.shape(b)) if b is not None else np.shape(a)
    like = np.empty(full)
    spread = np.broadcast_to(unreduce(g, like, axis, keepdims), full)
    weights = np.exp(np.asarray(a) - unreduce(ans, like, axis, keepdims))
    moved = np.asarray(a_dot) - unreduce(ans_dot, like, axis, keepdims)
    if b is None:
        return unbroadcast(spread * weights * moved, a)
    if wrt == 0:
        return unbroadcast(spread * weights * (b * moved + b_dot), a)
    return unbroadcast(spread * weights * moved, b)


def vector_norm_adjoint_tangent(g, ans, x, ord, axis, keepdims, ans_dot, x_dot):
    """The tangent of ``rt.vector_norm_adjoint`` along the tangents of ``ans`` and ``x``
    (p-norms; inf and -inf pick elements, whose weights do not move)."""
    spread = unreduce(g, x, axis, keepdims)
    if ord in (np.inf, -np.inf):
        return np.zeros(np.shape(x), dtype=np.result_type(x, np.float32))
    full = unreduce(ans, x, axis, keepdims)
    full_dot = unreduce(ans_dot, x, axis, keepdims)
    ratio = np.abs(x) / full
    ratio_dot = np.sign(x) * x_dot / full - np.abs(x) * full_dot / full ** 2
    return spread * np.sign(x) * (ord - 1) * ratio ** (ord - 2) * ratio_dot


def norm_adjoint_tangent(g, ans, x, ord, axis, keepdims, ans_dot, x_dot):
    """The tangent of ``rt.norm_adjoint(g, ans, x, ord, axis, keepdims)`` along the
    tangents of ``ans`` and ``x``: the 2-norm and Frobenius norm, ord 1 and the p-norms of
    vectors, and the matrix norms (``matrix_norm_axes_adjoint_tangent``)."""
    if is_matrix_norm(x, ord, axis) and ord not in (None, "fro"):
        return matrix_norm_axes_adjoint_tangent(g, x, ord, axis, keepdims, x_dot)
    if ord is None or ord == 2 or ord == "fro":
        scale = unreduce(g / ans, x, axis, keepdims)
        return scale * x_dot - unreduce(g * ans_dot / ans ** 2, x, axis, keepdims) * x
    if ord == 1:
        return np.zeros(np.shape(x), dtype=np.result_type(x, np.float32))
    return vector_norm_adjoint_tangent(g, ans, x, ord, axis, keepdims, ans_dot, x_dot)


def reduced_svd_tangent(x, x_dot):
    """``(u, s, vh), (du, ds, dvh)``: the reduced SVD of ``x`` and its tangent along ``x_dot``."""
    ans = np.linalg.svd(x, full_matrices=False)
    return ans, svd_tangent(np.broadcast_to(x_dot, np.shape(x)), ans, x, False)


def matrix_norm_adjoint_tangent(g, x, ord, x_dot):
    """The tangent of ``rt.matrix_norm_adjoint(g, x, ord)`` (over the last two axes) along
    ``x_dot``: Frobenius ``g (x_dot / n - x <x, x_dot> / n^3)``; the singular-value norms
    (``u vh``, or the extreme pair's ``u_k v_k^T``) by the SVD's tangent; the norms that
    pick elements (1, -1, inf, -inf) have weights and signs that do not move: zero."""
    g = np.asarray(g)[..., None, None]
    x, x_dot = np.asarray(x), np.broadcast_to(x_dot, np.shape(x))
    if ord is None or ord == "fro":
        n = np.sqrt(np.sum(x * x, axis=(-2, -1), keepdims=True))
        return g * (x_dot / n - x * np.sum(x * x_dot, axis=(-2, -1), keepdims=True) / n ** 3)
    if ord in ("nuc", 2, -2):
        (u, _, vh), (du, _, dvh) = reduced_svd_tangent(x, x_dot)
        k = slice(None) if ord == "nuc" else slice(0, 1) if ord == 2 else slice(-1, None)
        return g * (du[..., :, k] @ vh[..., k, :] + u[..., :, k] @ dvh[..., k, :])
    return np.zeros(x.shape, dtype=np.result_type(x, np.float32))


def matrix_norm_axes_adjoint_tangent(g, x, ord, axis, keepdims, x_dot):
    """The tangent of ``rt.matrix_norm_axes_adjoint(g, x, ord, axis, keepdims)`` along
    ``x_dot`` (the axes moved last, as the adjoint does)."""
    rows, cols = (0, 1) if axis is None else (axis[0] % np.ndim(x), axis[1] % np.ndim(x))
    if keepdims:
        g = np.squeeze(np.asarray(g), axis=(rows, cols))
    moved = np.moveaxis(x, (rows, cols), (-2, -1))
    moved_dot = np.moveaxis(np.broadcast_to(x_dot, np.shape(x)), (rows, cols), (-2, -1))
    return np.moveaxis(matrix_norm_adjoint_tangent(g, moved, ord, moved_dot), (-2, -1),
                       (rows, cols))


def cholesky_adjoint_tangent(g, L, L_dot):
    """The tangent of ``rt.cholesky_adjoint(g, L)`` along ``L_dot``: with ``S = L^-T Phi
    L^-1`` and ``Phi`` the lower triangle of ``L^T g`` (diagonal halved), ``dS = -L^-T
    dL^T S + L^-T dPhi L^-1 - S dL L^-1``; the adjoint's tangent is the lower part of
    ``dS``'s symmetric part."""
    n = L.shape[-1]
    li = np.linalg.inv(L)
    half = 1.0 + np.eye(n)
    phi = np.tril(_t(L) @ g) / half
    phi_dot = np.tril(_t(L_dot) @ g) / half
    s = _t(li) @ phi @ li
    s_dot = -_t(li) @ _t(L_dot) @ s + _t(li) @ phi_dot @ li - s @ L_dot @ li
    return lower_only((s_dot + _t(s_dot)) / 2.0)


def _symmetric_lower(t):
    """The symmetric matrix whose lower triangle is ``t``'s (what eigh and eigvalsh read)."""
    t = np.asarray(t)
    return np.tril(t) + _t(np.tril(t, -1))


def refuse_tied_coupling(w, m, name):
    """Raise NotImplementedError (the user's line is added where it is caught) when ``m``
    (``v^T a_dot v``) couples two eigenvectors of a repeated eigenvalue of ``w``: the
    second derivative there needs how those eigenvectors turn, which is not a function of
    the matrix (the rule's gap factors leave the tied pairs out, which would drop the
    terms of the second derivative along them: a wrong Hessian)."""
    scale = np.max(np.abs(w), axis=-1)[..., None, None]
    gap = w[..., None, :] - w[..., :, None]
    tied = (np.abs(gap) <= 100.0 * np.finfo(np.result_type(w, np.float32)).eps * scale) & \
        ~np.eye(w.shape[-1], dtype=bool)
    size = np.max(np.abs(m)) if np.size(m) else 0.0
    if np.any(tied & (np.abs(m) > 1e-10 * max(size, 1e-300))):
        raise NotImplementedError(
            f"second derivatives through np.linalg.{name} at a repeated eigenvalue, along a "
            f"direction that turns its eigenvectors into each other: they are no function of "
            f"the matrix there, and s2sgrad has the Hessian only where the eigenvalues are "
            f"distinct; use grad for this function, or evaluate it where the eigenvalues "
            f"differ")


def _eigen_gaps(w):
    gap = w[..., None, :] - w[..., :, None]
    return inverse_gaps(gap, np.max(np.abs(w), axis=-1), w.dtype)


def eigh_adjoint_tangent(g, ans, ans_dot, a_dot=None):
    """The tangent of ``rt.eigh_adjoint(g, ans, a)`` along the tangent ``(w_dot, v_dot)``
    of ``ans = (w, v)``: the product rule on ``v diag(gw) v^T + v (F * v^T gv) v^T``, with
    ``dF_ij = -F_ij^2 (w_dot_j - w_dot_i)`` (0 for equal eigenvalues, as ``F``).  Refused
    (``refuse_tied_coupling``) where ``a_dot`` turns eigenvectors of a repeated eigenvalue
    into each other."""
    gw, gv = g
    w, v = ans
    w_dot, v_dot = ans_dot
    if a_dot is not None:
        refuse_tied_coupling(w, _t(v) @ _symmetric_lower(a_dot) @ v, "eigh")
    gw = np.asarray(gw)[..., None, :]
    j = (v_dot * gw) @ _t(v) + (v * gw) @ _t(v_dot)
    if np.any(gv):
        f = _eigen_gaps(w)
        f_dot = -f * f * (w_dot[..., None, :] - w_dot[..., :, None])
        m = f * (_t(v) @ gv)
        m_dot = f_dot * (_t(v) @ gv) + f * (_t(v_dot) @ gv)
        j = j + v_dot @ m @ _t(v) + v @ m_dot @ _t(v) + v @ m @ _t(v_dot)
    return lower_only(j)


def eigvalsh_adjoint_tangent(g, a, a_dot):
    """The tangent of ``rt.eigvalsh_adjoint(g, a)`` along ``a_dot`` (``a``'s lower triangle
    read, as eigvalsh does): ``v`` moves by ``v (F * v^T a_dot v)``; refused where that
    turns eigenvectors of a repeated eigenvalue into each other."""
    w, v = np.linalg.eigh(a)
    sym = _symmetric_lower(a_dot)
    refuse_tied_coupling(w, _t(v) @ sym @ v, "eigvalsh")
    v_dot = v @ (_eigen_gaps(w) * (_t(v) @ sym @ v))
    gw = np.asarray(g)[..., None, :]
    return lower_only((v_dot * gw) @ _t(v) + (v * gw) @ _t(v_dot))


def pinv_adjoint_tangent(g, ans, a, ans_dot, a_dot):
    """The tangent of ``rt.pinv_adjoint(g, ans, a)`` along the tangents of ``ans`` (``p``)
    and ``a``: the product rule on its three terms."""
    p, pd = ans, ans_dot
    m, n = np.shape(a)[-2:]
    left, right = np.eye(m) - a @ p, np.eye(n) - p @ a
    gt = _t(g)
    return (-(_t(pd) @ g @ _t(p) + _t(p) @ g @ _t(pd))
            - (a_dot @ p + a @ pd) @ gt @ p @ _t(p)
            + left @ gt @ (pd @ _t(p) + p @ _t(pd))
            + (_t(pd) @ p + _t(p) @ pd) @ gt @ right
            - _t(p) @ p @ gt @ (pd @ a + p @ a_dot))


def _power_terms_tangent(g, b, b_dot, n):
    """The tangent along ``b_dot`` of ``sum_k (b^T)^k g (b^T)^(n-1-k)``, n >= 1."""
    bt, bt_dot = _t(np.asarray(b)), _t(np.asarray(b_dot))
    powers = [np.broadcast_to(np.eye(bt.shape[-1]), bt.shape)]
    tangents = [np.zeros(bt.shape)]
    for _ in range(n - 1):
        tangents.append(tangents[-1] @ bt + powers[-1] @ bt_dot)
        powers.append(powers[-1] @ bt)
    out = np.zeros(np.shape(b), dtype=np.result_type(g, b, np.float32))
    for k in range(n):
        out = out + tangents[k] @ g @ powers[n - 1 - k] + powers[k] @ g @ tangents[n - 1 - k]
    return out


def matrix_power_adjoint_tangent(g, a, n, a_dot):
    """The tangent of ``rt.matrix_power_adjoint(g, a, n)`` along ``a_dot`` (negative ``n``:
    through the inverse, as the adjoint)."""
    from .linalg import matrix_power_adjoint
    if n == 0:
        return np.zeros(np.shape(a), dtype=np.result_type(g, a, np.float32))
    if n > 0:
        return _power_terms_tangent(g, a, a_dot, n)
    b = np.linalg.inv(a)
    b_dot = -(b @ a_dot @ b)
    inner = matrix_power_adjoint(g, b, -n)
    inner_dot = _power_terms_tangent(g, b, b_dot, -n)
    return -(_t(b_dot) @ inner @ _t(b) + _t(b) @ inner_dot @ _t(b) + _t(b) @ inner @ _t(b_dot))


def operand_adjoints_tangent(adjoints, g, operands, g_dot, operands_dot):
    """The tangent of ``adjoints(g, operands)`` (``rt.einsum_adjoints``,
    ``rt.multi_dot_adjoints``: one adjoint per operand, each linear in ``g`` and in every
    other operand, None for an operand that is not an array) along ``g_dot`` and the
    operands' tangents: ``adjoints(g_dot, operands)`` plus, for each operand ``k``, the
    adjoints of the others with ``k`` replaced by its tangent.  A zero tangent (``g``'s
    under a Hessian-vector product, an operand that is not differentiated) adds no
    contraction, and the contraction for ``k`` makes no adjoint of ``k`` itself:
    kmeans' ``einsum("nd,nd->n", diff, diff)`` under forward over reverse, two
    contractions per use instead of six."""
    operands, operands_dot = list(operands), list(operands_dot)
    positions = einsum_operand_positions(operands) if adjoints is einsum_adjoints else \
        tuple(range(len(operands)))
    out = [None] * len(operands)

    inputs = [x for x in [g, g_dot, *operands, *operands_dot] if isinstance(x, np.ndarray)]

    def add(i, d):
        if out[i] is None:      # kept where it is a new array (not a view of an input)
            dtype = np.result_type(d, np.float32)
            fresh = isinstance(d, np.ndarray) and d.dtype == dtype and d.flags.writeable \
                and not any(np.may_share_memory(d, x) for x in inputs)
            out[i] = d if fresh else np.array(d, dtype=dtype)
        else:
            out[i] = out[i] + d

    if np.any(g_dot):
        for i, d in enumerate(adjoints(g_dot, operands)):
            if d is not None:
                add(i, d)
    for k, tangent in enumerate(operands_dot):
        if k not in positions or not np.any(tangent):
            continue
        moved = operands[:k] + [np.broadcast_to(tangent, np.shape(operands[k]))] + \
            operands[k + 1:]
        others = tuple(i for i in positions if i != k)
        for i, d in enumerate(adjoints(g, moved, only=others)):
            if d is not None:
                add(i, d)
    for i in positions:
        if out[i] is None:
            out[i] = np.zeros(np.shape(operands[i]),
                              np.result_type(g, g_dot, operands[i], np.float32))
    return out
