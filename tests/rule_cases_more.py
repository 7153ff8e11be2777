"""Finite-difference cases for the rules of ``s2sgrad/rules/numpy_more.py``,
``linalg_rules.py`` and ``scipy_rules.py`` (and ``np.linalg.norm``'s ords), added to
``tests/test_rules.py``'s ``CASES``.

``more_cases(C)`` builds them with that file's ``Case`` constructor.  Cases marked
``numba=True`` also run under Numba (grouped: each Numba compile costs about a
second).  Linear algebra inputs are well conditioned; eigh/svd cases have distinct
eigen/singular values and losses that do not depend on the vectors' signs.
"""
import numpy as np
from scipy import special

rng = np.random.default_rng(4321)


def R(*shape, lo=-1.0, hi=1.0):
    return rng.uniform(lo, hi, size=shape)


def P(*shape):
    return rng.uniform(0.5, 2.0, size=shape)


def NZ(*shape):
    return rng.uniform(0.3, 2.0, size=shape) * rng.choice([-1.0, 1.0], size=shape)


def SPD(n, batch=()):
    """Symmetric positive definite with distinct, well separated eigenvalues."""
    q, _ = np.linalg.qr(R(*batch, n, n))
    w = np.arange(1.0, n + 1.0) * 0.7 + 0.5
    return (q * w[..., None, :]) @ np.swapaxes(q, -1, -2)


def WC(*shape):
    return np.eye(shape[-1]) * 2.0 + R(*shape) * 0.3


def W(*shape):
    """Fixed weights: a loss that is not symmetric in the elements."""
    return np.arange(1.0, np.prod(shape) + 1.0).reshape(shape) / np.prod(shape)


# fixed weights read from globals (free arguments of the generated code: Numba compiles
# those, not the np.prod in W)
W33, W34, W44 = W(3, 3), W(3, 4), W(4, 4)
HOLES = np.zeros((3, 4), dtype=bool)      # where the nan-reduction cases hold NaNs
HOLES[0, 1] = HOLES[2, 3] = HOLES[1, 0] = True


def sign_free_eigh(a):
    """A loss of eigh's eigenvectors that does not depend on their signs."""
    w, v = np.linalg.eigh(a)
    return np.sum(w * w) + np.sum((v * v) * W(3, 3))


def sign_free_svd(a):
    u, s, vh = np.linalg.svd(a, full_matrices=False)
    return np.sum(s * s * s) + np.sum((u * u) * np.arange(1.0, 4.0)) \
        + np.sum((vh * vh) * np.arange(1.0, 4.0)[:, None])


def sign_free_svd_square(a):
    u, s, vh = np.linalg.svd(a)
    return np.sum(np.sin(s)) + np.sum(np.abs(u[:, 0] * vh[0, :]))


def REPEATED(values):
    """Symmetric with the given (repeated) eigenvalues."""
    q, _ = np.linalg.qr(R(len(values), len(values)))
    return (q * np.asarray(values)) @ q.T


def eigh_repeated_projector(a):
    """A loss of the eigenspace of a repeated eigenvalue (its projector), and of the
    eigenvalues: defined although the eigenvectors are not."""
    w, v = np.linalg.eigh(a)
    low = v[:, :2]
    return np.sum(low @ low.T * W(3, 3)) + np.sum(w * w)


def svd_repeated_projector(a):
    u, s, vh = np.linalg.svd(a)
    top = u[:, :2]
    return np.sum(top @ top.T * W(3, 3)) + np.sum(s * s)


def qr_loss(a):
    q, r = np.linalg.qr(a)
    return np.sum(np.sin(q) * np.arange(1.0, 4.0)) + np.sum(np.sin(r) * W(3, 3))


def slogdet_loss(a):
    sign, logdet = np.linalg.slogdet(a)
    return sign * logdet


def unpacked_slogdet_batched(a):
    return np.sum(np.sin(np.linalg.slogdet(a)[1]))


def gradient_2d(f):
    gy, gx = np.gradient(f, 0.5, 2.0)
    return np.sum(np.sin(gy) * W(3, 4) + gx * gx)


def array_split_loss(x):
    a, b, c = np.array_split(x, 3)
    return np.sum(np.sin(a) * 2.0) + np.sum(c * c)


def gradient_2d_spacings(f, hy, hx):
    gy, gx = np.gradient(f, hy, hx)
    return np.sum(np.sin(gy) * W(3, 4) + gx * gx)


def select_loss(x, y):
    return np.sum(np.sin(np.select([x > 0.5, x < -0.5], [x * y, np.sin(x)], y)) * W(3, 4))


def elementwise_group(x, y):
    """Several elementwise rules in one function (one Numba compile)."""
    return np.sum(np.sin(np.radians(x)) + np.degrees(y) * 0.01 + np.arcsinh(x) * y
                  + np.arctanh(x * 0.5) + np.fabs(y) * x + np.reciprocal(y) * x
                  + np.logaddexp(x, y) * x + np.logaddexp2(x, y) + np.fmax(x, y) * 2.0
                  + np.fmin(x, y) * x + np.nan_to_num(x * y) + np.deg2rad(y) * x
                  + np.rad2deg(x) * 0.01 + np.cbrt(y) * x)


def more_cases(C):
    """The cases, built with ``Case`` (``C``) of tests/test_rules.py."""
    return [
        # ------------------------------------------------------------ elementwise
        C("elementwise_more", elementwise_group, [R(3, 4) * 0.9, NZ(3, 4)], (0, 1), numba=True),
        C("radians", lambda x: np.sum(np.sin(np.radians(x * 100))), [R(3, 4)]),
        C("arccosh", lambda x: np.sum(np.sin(np.arccosh(x))), [P(3, 4) + 1.0], numba=True),
        C("sinc", lambda x: np.sum(np.sin(np.sinc(x))), [NZ(3, 4)], numba=True),
        C("sinc_scalar", lambda x: np.sinc(x) * x, [0.3]),
        C("logaddexp_bcast", lambda x, y: np.sum(np.sin(np.logaddexp(x, y))), [R(3, 4), R(4)],
          (0, 1)),
        C("fmax_nan", lambda x, y: np.sum(np.fmax(x, y * np.nan) * W(3, 4)), [R(3, 4), R(3, 4)]),
        C("fmin_bcast", lambda x, y: np.sum(np.sin(np.fmin(x, y))), [R(3, 4), R(4)], (0, 1)),
        C("nan_to_num_nan", lambda x: np.sum(np.sin(np.nan_to_num(np.log(x))) * W(3, 4)),
          [NZ(3, 4)]),
        C("float_power", lambda x, y: np.sum(np.sin(np.float_power(x, y))), [P(3, 4), R(3, 4)],
          (0, 1)),
        C("np_fmod", lambda x, y: np.sum(np.fmod(x, y) * x), [P(3) + 2.0, P(3) + 0.5], (0, 1)),
        C("copysign", lambda x, y: np.sum(np.sin(np.copysign(x, y))), [NZ(3, 4), NZ(3, 4)]),
        C("conj_real", lambda x: np.sum(np.sin(np.conj(x)) + np.real(x) * np.conjugate(x)),
          [R(3, 4)]),
        # ------------------------------------------------------------ cumulative products
        C("cumprod_none", lambda x: np.sum(np.sin(np.cumprod(x))), [P(3, 4) * 0.8]),
        C("cumprod_axis_zero", lambda x: np.sum(np.sin(np.cumprod(x, axis=1)) * W(3, 4)),
          [np.where(np.arange(12).reshape(3, 4) == 5, 0.0, P(3, 4))]),
        C("method_cumprod", lambda x: np.sum(x.cumprod(axis=0) * W(3, 4)), [P(3, 4)]),
        # ------------------------------------------------------------ reductions
        C("nansum_nanmean", lambda x: np.sum(np.sin(np.nansum(x, axis=0)) * W(4))
          + np.nanmean(x * W(3, 4)), [np.where(HOLES, np.nan, R(3, 4))]),
        C("nanmax_nanmin", lambda x: np.sum(np.sin(np.nanmax(x, axis=1)) * W(3))
          + np.nanmin(x), [np.where(HOLES, np.nan, rng.permutation(12).reshape(3, 4) * 0.1)]),
        C("ptp", lambda x: np.sum(np.sin(np.ptp(x, axis=0)) * W(4)) + np.ptp(x),
          [rng.permutation(12).reshape(3, 4) * 0.1]),
        C("median", lambda x: np.sum(np.sin(np.median(x, axis=1)) * W(3)) + np.median(x),
          [rng.permutation(12).reshape(3, 4) * 0.1]),
        C("median_odd_keep", lambda x: np.sum(np.sin(np.median(x, axis=0, keepdims=True))
                                              * W(1, 4)), [rng.permutation(12).reshape(3, 4)
                                                          * 0.1]),
        C("quantile_percentile", lambda x: np.sum(np.sin(np.quantile(x, 0.3, axis=1)) * W(3))
          + np.percentile(x, 80.0), [rng.permutation(12).reshape(3, 4) * 0.1]),
        # a differentiated q (was silently dropped: a constant in both modes)
        C("quantile_q_active", lambda x, q: np.sum(np.sin(np.quantile(x, q, axis=1)) * W(3)),
          [rng.permutation(12).reshape(3, 4) * 0.1, 0.3], (0, 1)),
        C("percentile_q_vector", lambda x, q: np.sum(np.sin(np.percentile(x * 2.0, q * 10.0))
                                                     * W(2)),
          [rng.permutation(12).reshape(3, 4) * 0.1, np.array([3.5, 6.2])], (0, 1)),
        C("nanquantile_q_active", lambda x, q: np.sum(np.sin(np.nanquantile(x, q, axis=0))
                                                      * W(4)),
          [np.where(HOLES, np.nan, rng.permutation(12).reshape(3, 4) * 0.1), 0.6], (0, 1)),
        C("average", lambda x: np.sum(np.sin(np.average(x, axis=1)) * W(3)), [R(3, 4)]),
        C("average_weights", lambda x, w: np.sum(np.sin(np.average(x, axis=1, weights=w))
                                                 * W(3)), [R(3, 4), P(4)], (0, 1)),
        C("average_weights_full", lambda x, w: np.average(x, weights=w), [R(3, 4), P(3, 4)],
          (0, 1)),
        C("trapezoid_dx", lambda y: np.sum(np.sin(np.trapezoid(y, dx=0.3)) * W(3)), [R(3, 4)]),
        C("trapezoid_dx_active", lambda y, h: np.sin(np.trapezoid(y, dx=h)), [R(5), 0.4],
          (0, 1)),
        C("trapezoid_x", lambda y, x: np.sin(np.trapezoid(y, x)), [R(5), np.cumsum(P(5))],
          (0, 1)),
        C("trapezoid_x_axis0", lambda y, x: np.sum(np.sin(np.trapezoid(y, x, axis=0)) * W(4)),
          [R(3, 4), np.cumsum(P(3))], (0, 1)),
        # ------------------------------------------------------------ products
        C("matvec_vecmat", lambda a, v, u: np.sum(np.sin(np.matvec(a, v)) * W(2, 3))
          + np.sum(np.vecmat(u, a) * W(2, 4)), [R(2, 3, 4), R(4), R(3)], (0, 1, 2)),
        C("vecdot", lambda a, b: np.sum(np.sin(np.vecdot(a, b)) * W(3)), [R(3, 4), R(4)],
          (0, 1)),
        C("linalg_vecdot_axis0", lambda a, b: np.sum(np.sin(np.linalg.vecdot(a, b, axis=0))),
          [R(3, 4), R(3, 4)], (0, 1)),
        C("convolve", lambda a, v: np.sum(np.sin(np.convolve(a, v)) * W(7)), [R(5), R(3)],
          (0, 1)),
        C("convolve_same", lambda a, v: np.sum(np.sin(np.convolve(a, v, "same")) * W(5)),
          [R(5), R(4)], (0, 1)),
        C("convolve_valid_short_a", lambda a, v: np.sum(np.sin(np.convolve(a, v, "valid"))
                                                        * W(3)), [R(3), R(5)], (0, 1)),
        C("correlate", lambda a, v: np.sum(np.sin(np.correlate(a, v, "full")) * W(7)),
          [R(5), R(3)], (0, 1)),
        C("correlate_valid", lambda a, v: np.sum(np.sin(np.correlate(a, v)) * W(3)),
          [R(5), R(3)], (0, 1)),
        C("cross", lambda a, b: np.sum(np.sin(np.cross(a, b))), [R(4, 3), R(4, 3)], (0, 1),
          numba=True),
        C("cross_bcast", lambda a, b: np.sum(np.sin(np.cross(a, b))), [R(4, 3), R(3)], (0, 1)),
        # the vectors along other axes (autograd's suite calls np.cross this way)
        C("cross_axes", lambda a, b: np.sum(np.sin(np.cross(a, b, axisa=0, axisb=1, axisc=0))
                                            * W(3, 4)), [R(3, 4), R(4, 3)], (0, 1)),
        C("cross_axis", lambda a, b: np.sum(np.sin(np.cross(a, b, axis=0)) * W(3, 2)),
          [R(3, 2), R(3, 1)], (0, 1)),
        C("cross_2d", lambda a, b: np.sum(np.sin(np.cross(a, b, axisb=0)) * W(4)),
          [R(4, 2), R(2, 4)], (0, 1)),
        C("cross_2d_3d", lambda a, b: np.sum(np.sin(np.cross(a, b, axisc=0)) * W(3, 4)),
          [R(4, 2), R(4, 3)], (0, 1)),
        C("linalg_cross_axis", lambda a, b: np.sum(np.sin(np.linalg.cross(a, b, axis=0))
                                                   * W(3, 4)), [R(3, 4), R(3, 4)], (0, 1)),
        C("kron", lambda a, b: np.sum(np.sin(np.kron(a, b)) * W(6, 8)), [R(2, 4), R(3, 2)],
          (0, 1)),
        C("kron_1d_2d", lambda a, b: np.sum(np.sin(np.kron(a, b))), [R(3), R(2, 2)], (0, 1)),
        C("tensordot_int", lambda a, b: np.sum(np.sin(np.tensordot(a, b))),
          [R(2, 3, 4), R(3, 4, 2)], (0, 1)),
        C("tensordot_axes", lambda a, b: np.sum(np.sin(np.tensordot(a, b, axes=([0, 2], [2, 0])))
                                                * W(3, 3)), [R(2, 3, 4), R(4, 3, 2)], (0, 1)),
        C("tensordot_1", lambda a, b: np.sum(np.sin(np.tensordot(a, b, 1))), [R(3, 4), R(4, 2)],
          (0, 1)),
        C("vdot", lambda a, b: np.sin(np.vdot(a, b)), [R(3, 2), R(6)], (0, 1)),
        # ------------------------------------------------------------ diagonals, triangles
        C("trace_offset", lambda a: np.sin(np.trace(a, 1)), [R(3, 4)], numba=True),
        C("trace_axes", lambda a: np.sum(np.sin(np.trace(a, -1, axis1=1, axis2=2))),
          [R(2, 3, 4)]),
        C("method_trace_offset", lambda a: np.sin(a.trace(offset=-1)), [R(4, 3)]),
        C("diagonal", lambda a: np.sum(np.sin(np.diagonal(a, 1, 0, 2)) * W(2, 3)), [R(3, 2, 4)]),
        C("diag_vec", lambda v: np.sum(np.sin(np.diag(v, 1)) * W44), [R(3)], numba=True),
        C("diag_mat", lambda m: np.sum(np.sin(np.diag(m, -1))), [R(4, 3)]),
        C("triu", lambda m: np.sum(np.sin(np.triu(m, 1)) * W34), [R(3, 4)], numba=True),
        C("tril", lambda m: np.sum(np.sin(np.tril(m)) * W(3, 4)), [R(3, 4)]),
        C("tril_1d", lambda v: np.sum(np.tril(v, -1) * W(3, 3)), [R(3)]),
        # ------------------------------------------------------------ copies, rearrangements
        C("take", lambda x: np.sum(np.sin(np.take(x, [0, 2, 2, 1], axis=1)) * W(3, 4)),
          [R(3, 4)]),
        C("take_flat", lambda x: np.sum(np.sin(np.take(x, np.array([[5, 0], [5, 11]])))
                                        * W(2, 2)), [R(3, 4)]),
        C("take_along_axis", lambda x: np.sum(np.sin(np.take_along_axis(
            x, np.array([[0, 0], [3, 1], [2, 2]]), axis=1)) * W(3, 2)), [R(3, 4)]),
        C("split", lambda x: np.sum(np.sin(np.split(x, 2, axis=1)[1]) * W(3, 2)), [R(3, 4)]),
        C("array_split_unpacked", array_split_loss, [R(5, 2)]),
        C("repeat_int", lambda x: np.sum(np.sin(np.repeat(x, 2)) * W(24)), [R(3, 4)]),
        C("repeat_axis", lambda x: np.sum(np.sin(np.repeat(x, 3, axis=1)) * W(3, 12)), [R(3, 4)]),
        C("repeat_array", lambda x: np.sum(np.sin(np.repeat(x, [1, 0, 2], axis=0)) * W(3, 4)),
          [R(3, 4)]),
        C("tile", lambda x: np.sum(np.sin(np.tile(x, (2, 1, 3))) * W(2, 3, 12)), [R(3, 4)]),
        C("tile_int", lambda x: np.sum(np.sin(np.tile(x, 2)) * W(8)), [R(4)]),
        C("diff", lambda x: np.sum(np.sin(np.diff(x)) * W33), [R(3, 4)], numba=True),
        C("diff_n2_axis0", lambda x: np.sum(np.sin(np.diff(x, n=2, axis=0)) * W(2, 4)),
          [R(4, 4)]),
        C("gradient_1d", lambda f: np.sum(np.sin(np.gradient(f)) * W(5)), [R(5)]),
        C("gradient_edge2", lambda f: np.sum(np.sin(np.gradient(f, 0.3, edge_order=2)) * W(5)),
          [R(5)]),
        C("gradient_2d", gradient_2d, [R(3, 4)]),
        C("gradient_spacing_active", lambda f, h: np.sum(np.sin(np.gradient(f, h)) * W(5)),
          [R(5), 0.7], (0, 1)),
        C("gradient_2d_spacings_active", gradient_2d_spacings, [R(3, 4), 0.5, 2.0], (0, 1, 2)),
        C("gradient_axis_coords", lambda f: np.sum(np.sin(np.gradient(
            f, np.array([0.0, 0.5, 1.5, 1.7]), axis=1)) * W(3, 4)), [R(3, 4)]),
        C("moveaxis", lambda x: np.sum(np.sin(np.moveaxis(x, 0, -1)) * W(3, 4, 2)), [R(2, 3, 4)]),
        C("rollaxis", lambda x: np.sum(np.sin(np.rollaxis(x, 2, 0)) * W(4, 2, 3)), [R(2, 3, 4)]),
        C("rollaxis_start", lambda x: np.sum(np.sin(np.rollaxis(x, 0, 3)) * W(3, 4, 2)),
          [R(2, 3, 4)]),
        C("roll", lambda x: np.sum(np.sin(np.roll(x, 2)) * W34), [R(3, 4)], numba=True),
        C("roll_axis", lambda x: np.sum(np.sin(np.roll(x, (1, -1), axis=(0, 1))) * W(3, 4)),
          [R(3, 4)]),
        C("rot90", lambda x: np.sum(np.sin(np.rot90(x)) * W(4, 3)), [R(3, 4)]),
        C("rot90_k", lambda x: np.sum(np.sin(np.rot90(x, 3, axes=(1, 2))) * W(2, 4, 3)),
          [R(2, 3, 4)]),
        C("flipud_fliplr", lambda x: np.sum(np.sin(np.flipud(x) + np.fliplr(x) * 2.0) * W34),
          [R(3, 4)], numba=True),
        C("pad_constant", lambda x: np.sum(np.sin(np.pad(x, ((1, 2), (0, 1)))) * W(6, 5)),
          [R(3, 4)]),
        C("pad_reflect", lambda x: np.sum(np.sin(np.pad(x, 2, mode="reflect")) * W(7, 8)),
          [R(3, 4)]),
        C("pad_edge_wrap", lambda x: np.sum(np.sin(np.pad(x, 1, "edge") + np.pad(x, 1, "wrap"))
                                            * W(5, 6)), [R(3, 4)]),
        C("partition", lambda x: np.sum(np.sin(np.partition(x, 2)) * W(3, 5)),
          [rng.permutation(15).reshape(3, 5) * 0.1]),
        C("partition_none", lambda x: np.sum(np.partition(x, 3, axis=None)[:4]),
          [rng.permutation(12).reshape(3, 4) * 0.1]),
        # ------------------------------------------------------------ joining, choosing
        C("vstack", lambda x, y: np.sum(np.sin(np.vstack([x, y])) * W(4, 4)), [R(3, 4), R(4)],
          (0, 1)),
        C("row_stack", lambda x, y: np.sum(np.sin(np.row_stack((x, y))) * W(4, 4)),
          [R(3, 4), R(1, 4)], (0, 1)),
        C("hstack", lambda x, y: np.sum(np.sin(np.hstack([x, y])) * W(7)), [R(3), R(4)], (0, 1)),
        C("hstack_2d", lambda x, y: np.sum(np.sin(np.hstack((x, y))) * W(3, 6)),
          [R(3, 4), R(3, 2)], (0, 1)),
        C("column_stack", lambda x, y: np.sum(np.sin(np.column_stack([x, y])) * W(3, 3)),
          [R(3), R(3, 2)], (0, 1)),
        C("dstack", lambda x, y: np.sum(np.sin(np.dstack([x, y])) * W(3, 4, 2)),
          [R(3, 4), R(3, 4)], (0, 1)),
        C("append_flat", lambda x, y: np.sum(np.sin(np.append(x, y)) * W(16)), [R(3, 4), R(2, 2)],
          (0, 1)),
        C("append_axis", lambda x, y: np.sum(np.sin(np.append(x, y, axis=0)) * W(5, 4)),
          [R(3, 4), R(2, 4)], (0, 1)),
        C("r_", lambda x, y, z: np.sum(np.sin(np.r_[x, y, 2.0, z]) * W(8)), [R(3), R(3), 0.4],
          (0, 1, 2)),
        C("c_", lambda x, y: np.sum(np.sin(np.c_[x, y]) * W(3, 3)), [R(3), R(3, 2)], (0, 1)),
        C("select", select_loss, [R(3, 4) * 1.5, R(3, 4)], (0, 1)),
        # ------------------------------------------------------------ linear algebra
        C("slogdet", slogdet_loss, [WC(3, 3)]),
        C("slogdet_batched", unpacked_slogdet_batched, [WC(2, 3, 3)]),
        C("cholesky", lambda a: np.sum(np.sin(np.linalg.cholesky(a)) * W(3, 3)), [SPD(3)]),
        C("cholesky_batched", lambda a: np.sum(np.linalg.cholesky(a) * W(2, 3, 3)),
          [SPD(3, (2,))]),
        C("eigh", sign_free_eigh, [SPD(3)]),
        C("eigh_repeated_eigenvalue", eigh_repeated_projector, [REPEATED([1.0, 1.0, 3.0])]),
        C("svd_repeated_singular_value", svd_repeated_projector,
          [REPEATED([2.0, 2.0, 0.5])]),
        C("eigh_values", lambda a: np.sum(np.sin(np.linalg.eigh(a)[0])), [SPD(3, (2,))]),
        C("eigvalsh", lambda a: np.sum(np.sin(np.linalg.eigvalsh(a)) * W(3)), [SPD(3)]),
        C("qr_square", qr_loss, [WC(3, 3)]),
        C("qr_tall", qr_loss, [np.eye(4, 3) * 2.0 + R(4, 3) * 0.3]),
        C("svd_reduced_tall", sign_free_svd, [np.eye(4, 3) @ np.diag([3.0, 2.0, 1.0])
                                               + R(4, 3) * 0.2]),
        C("svd_reduced_wide", sign_free_svd, [np.diag([3.0, 2.0, 1.0]) @ np.eye(3, 4)
                                               + R(3, 4) * 0.2]),
        C("svd_square", sign_free_svd_square, [np.diag([3.0, 2.0, 1.0]) + R(3, 3) * 0.2]),
        C("svdvals", lambda a: np.sum(np.sin(np.linalg.svdvals(a))),
          [np.diag([3.0, 2.0, 1.0]) @ np.eye(3, 4) + R(3, 4) * 0.2]),
        C("vector_norm", lambda x: np.linalg.vector_norm(x) + np.sum(np.linalg.vector_norm(
            x, axis=0, ord=1) * W(4)) + np.linalg.vector_norm(x, ord=np.inf), [NZ(3, 4)]),
        C("matrix_norm", lambda x: np.linalg.matrix_norm(x) + np.sum(np.linalg.matrix_norm(
            x, ord="nuc", keepdims=True)), [np.diag([3.0, 2.0, 1.0]) + R(3, 3) * 0.2]),
        C("linalg_trace_diagonal", lambda x: np.sum(np.sin(np.linalg.trace(x, offset=1)) * W(2))
          + np.sum(np.linalg.diagonal(x) * W(2, 3)), [R(2, 3, 4)]),
        C("linalg_matrix_transpose_matmul", lambda a, b: np.sum(np.sin(np.linalg.matmul(
            np.linalg.matrix_transpose(a), b)) * W(4, 2)), [R(3, 4), R(3, 2)], (0, 1)),
        C("linalg_outer_cross_tensordot", lambda a, b: np.sum(np.sin(np.linalg.outer(a, b))
                                                             * W(3, 3))
          + np.sum(np.linalg.cross(a, b) * W(3)) + np.sin(np.linalg.tensordot(a, b, axes=1)),
          [R(3), R(3)], (0, 1)),
        C("pinv_tall", lambda a: np.sum(np.sin(np.linalg.pinv(a)) * W(3, 4)),
          [np.eye(4, 3) * 2.0 + R(4, 3) * 0.3]),
        C("pinv_square", lambda a: np.sum(np.sin(np.linalg.pinv(a))), [WC(3, 3)]),
        C("matrix_power", lambda a: np.sum(np.sin(np.linalg.matrix_power(a, 3))), [R(3, 3)]),
        C("matrix_power_neg", lambda a: np.sum(np.sin(np.linalg.matrix_power(a, -2))),
          [WC(3, 3)]),
        C("multi_dot", lambda a, b, c: np.sum(np.sin(np.linalg.multi_dot([a, b, c]))),
          [R(4), R(4, 3), R(3, 2)], (0, 1, 2)),
        C("multi_dot_vec_end", lambda a, b, c: np.sin(np.linalg.multi_dot([a, b, c])),
          [R(2, 4), R(4, 3), R(3)], (0, 1, 2)),
        C("norm_nuc", lambda x: np.linalg.norm(x, "nuc"), [np.diag([3.0, 2.0, 1.0]) + R(3, 3)
                                                            * 0.2]),
        C("norm_fro_str", lambda x: np.linalg.norm(x, "fro"), [R(3, 4)]),
        C("norm_mat2", lambda x: np.linalg.norm(x, 2), [np.diag([3.0, 2.0, 1.0]) @ np.eye(3, 4)
                                                        + R(3, 4) * 0.2]),
        C("norm_mat_neg2", lambda x: np.linalg.norm(x, -2), [np.diag([3.0, 2.0, 1.0])
                                                             + R(3, 3) * 0.2]),
        C("norm_mat1_inf", lambda x: np.linalg.norm(x, 1) + np.linalg.norm(x, np.inf) * 0.5
          + np.linalg.norm(x, -1) * 0.3 + np.linalg.norm(x, -np.inf) * 0.2,
          [np.arange(1.0, 13.0).reshape(3, 4) * np.array([1, -1, 1, 1.1]) / 10]),
        C("norm_axes_keep", lambda x: np.sum(np.sin(np.linalg.norm(x, "nuc", axis=(0, 2),
                                                                   keepdims=True))),
          [R(3, 2, 3) + np.eye(3)[:, None, :]]),
        C("norm_vec_p3", lambda x: np.linalg.norm(x, 3), [NZ(5)], numba=True),
        C("norm_vec_axis_p", lambda x: np.sum(np.sin(np.linalg.norm(x, 1.5, axis=1))),
          [NZ(3, 4)]),
        C("norm_vec_neg_inf", lambda x: np.linalg.norm(x, -np.inf),
          [np.array([0.5, -0.3, 1.2, -2.0])]),
        # ------------------------------------------------------------ scipy.special
        C("gammaln_digamma", lambda x: np.sum(np.sin(special.gammaln(x))
                                              + special.digamma(x) * 0.3), [P(3, 4)]),
        C("gamma_polygamma", lambda x: np.sum(special.gamma(x) + special.polygamma(1, x)),
          [P(3, 4) + 0.5]),
        C("erf_erfc", lambda x: np.sum(np.sin(special.erf(x) + special.erfc(x * 2.0) * x)),
          [R(3, 4)]),
        C("erfinv", lambda x: np.sum(np.sin(special.erfinv(x))), [R(3, 4) * 0.8]),
        C("ndtr", lambda x: np.sum(np.sin(special.ndtr(x)) + special.log_ndtr(x)), [R(3, 4) * 2]),
        C("expit", lambda x: np.sum(np.sin(special.expit(x))), [R(3, 4) * 3], numba=True),
        C("log_expit_logit", lambda x: np.sum(special.log_expit(x * 3.0) + special.logit(
            x * 0.4 + 0.5)), [R(3, 4)]),
        C("xlogy", lambda x, y: np.sum(np.sin(special.xlogy(x, y))), [R(3, 4), P(4)], (0, 1)),
        C("xlog1py", lambda x, y: np.sum(special.xlog1py(x, y)), [R(3, 4), P(3, 4)], (0, 1)),
        C("logsumexp", lambda x: special.logsumexp(x), [R(3, 4)]),
        C("logsumexp_axis_keep", lambda x: np.sum(np.sin(special.logsumexp(x, axis=1,
                                                                           keepdims=True))),
          [R(3, 4)]),
        C("logsumexp_b", lambda x, b: np.sum(np.sin(special.logsumexp(x, axis=0, b=b))),
          [R(3, 4), P(4)], (0, 1)),
        C("softmax", lambda x: np.sum(np.sin(special.softmax(x, axis=1)) * W(3, 4)), [R(3, 4)]),
        C("log_softmax", lambda x: np.sum(np.sin(special.log_softmax(x)) * W(3, 4)), [R(3, 4)]),
    ]
