"""Finite-difference cases for the rules of ``s2sgrad/rules/numpy_surface.py`` and the
scipy.special rules added with them, added to ``tests/test_rules.py``'s ``CASES`` (built
with its ``Case`` constructor, ``C``)."""
import numpy as np
from scipy import special

rng = np.random.default_rng(9876)


def R(*shape, lo=-1.0, hi=1.0):
    return rng.uniform(lo, hi, size=shape)


def P(*shape):
    return rng.uniform(0.5, 2.0, size=shape)


def W(*shape):
    return np.arange(1.0, np.prod(shape) + 1.0).reshape(shape) / np.prod(shape)


W34 = W(3, 4)
PICK = np.array([[0, 1, 1, 0], [1, 1, 0, 0], [0, 0, 0, 1]])
NAN_AT = np.zeros((3, 4), dtype=bool)
NAN_AT[0, 2] = NAN_AT[2, 0] = True


def modf_divmod_frexp(x, y):
    frac, whole = np.modf(x * 3.0)
    q, r = np.divmod(x * 5.0, y)
    mant, expo = np.frexp(x * 7.0)
    return np.sum(np.sin(frac) * W34) + np.sum(np.sin(r) * W34) + np.sum(mant * W34)


def broadcast_pair(x, y):
    bx, by = np.broadcast_arrays(x, y)
    return np.sum(np.sin(bx) * by * W34)


def meshgrid_loss(x, y):
    gx, gy = np.meshgrid(x, y)
    hx, hy = np.meshgrid(x, y, indexing="ij")
    return np.sum(np.sin(gx * gy) * W(3, 4)) + np.sum(hx * np.cos(hy) * W(4, 3))


def splits(x):
    a, b = np.hsplit(x, 2)
    c, e = np.vsplit(x, [1])
    return np.sum(np.sin(a) * b) + np.sum(c * 2.0) + np.sum(np.sin(e))


def dsplit_loss(x):
    a, b = np.dsplit(x, 2)
    return np.sum(np.sin(a) * b)


def unstack_loss(x):
    a, b, c = np.unstack(x)
    return np.sum(np.sin(a) * c) + np.sum(b * b)


def insert_delete(x, v):
    grown = np.insert(x, [1, 3], v[:, None], axis=1)
    return np.sum(np.sin(grown) * W(3, 6)) + np.sum(np.delete(x, 1, axis=0) * W(2, 4)) \
        + np.sum(np.sin(np.insert(x, 2, v[0])) * W(13)) + np.sum(np.delete(x, [0, 5]) ** 2)


def polys(p, q, x):
    return (np.sum(np.sin(np.polyval(p, x)) * W(5)) + np.sum(np.polyder(p, 2) * W(1))
            + np.sum(np.sin(np.polyint(q)) * W(5)) + np.sum(np.polyadd(p, q) * W(4))
            + np.sum(np.polysub(q, p) ** 2) + np.sum(np.sin(np.polymul(p, q)) * W(6)))


def special_exp_log(x, y):
    return np.sum(np.sin(special.exp2(x) + special.exp10(x * 0.3) + special.expm1(x)
                         + special.log1p(y) + special.cbrt(y) + special.cosm1(x)
                         + special.exprel(x) + special.softplus(x) + special.entr(y)
                         + special.dawsn(x) + special.erfcx(x) + special.erfi(x * 0.5)
                         + special.exp1(y) + special.expi(y) + special.loggamma(y)
                         + special.rgamma(y) + special.wrightomega(x) + special.spence(y)
                         + special.sindg(x * 40.0) + special.cosdg(x * 40.0)
                         + special.tandg(x * 30.0) + special.cotdg(y * 30.0)) * W34)


def special_two_args(x, y):
    return np.sum(np.sin(special.powm1(y, x) + special.boxcox(y, x) + special.boxcox1p(y, x)
                         + special.rel_entr(y, y * 0.5 + 0.3) + special.kl_div(y, y + x * 0.1)
                         + special.huber(0.5, x) + special.pseudo_huber(y, x)
                         + special.beta(y, y + 0.5) + special.betaln(y + 0.2, y)
                         + special.binom(y + 3.0, y) + special.poch(y, x)
                         + special.owens_t(x, y)) * W34)


def special_inverses(p):
    return np.sum(np.sin(special.erfcinv(p * 1.5 + 0.1) + special.ndtri(p)
                         + special.ndtri_exp(np.log(p)) + special.gammaincinv(2.5, p)
                         + special.gammainccinv(1.5, p)) * W34)


def special_bessel(x):
    return np.sum(np.sin(special.i0(x) + special.i1(x) + special.i0e(x) + special.i1e(x)
                         + special.j0(x) + special.j1(x) + special.y0(x) + special.y1(x)
                         + special.k0(x) + special.k1(x) + special.k0e(x) + special.k1e(x)
                         + special.jv(1.5, x) + special.jn(2, x) + special.yv(0.5, x)
                         + special.yn(1, x) + special.iv(2.5, x) + special.kv(0.3, x)
                         + special.kn(2, x) + special.spherical_jn(1, x)
                         + special.spherical_yn(2, x) + special.spherical_in(1, x)
                         + special.spherical_kn(1, x)) * W34)


def special_tuples(x):
    s, c = special.sici(x)
    sh, ch = special.shichi(x)
    fs, fc = special.fresnel(x)
    ai, aip, bi, bip = special.airy(x)
    return np.sum(np.sin(s + c * sh + ch + fs * fc + ai + aip * bi + bip) * W34)


def special_families(x, m):
    return np.sum(np.sin(special.gammainc(2.5, x) + special.gammaincc(1.5, x)
                         + special.expn(2, x) + special.zeta(3.0, x)
                         + special.multigammaln(x + 2.0, 3) + special.ellipk(m)
                         + special.ellipe(m) + special.eval_hermite(3, m)
                         + special.eval_hermitenorm(2, m) + special.eval_chebyt(3, m)
                         + special.eval_legendre(3, m) + special.eval_laguerre(3, m)) * W34)


def lstsq_loss(a, b):
    x, res, rank, s = np.linalg.lstsq(a, b)
    return np.sum(np.sin(x) * W(3, 2)) + np.sum(res * W(2)) + np.sum(np.sin(s))


def lstsq_vector(a, b):
    x, res, rank, s = np.linalg.lstsq(a, b)
    return np.sum(np.sin(x) * W(3)) + np.sum(res)


def block_loss(a, b, c):
    top = np.block([[a, b], [c, np.eye(2)]])
    row = np.block([a[0], c[1], 2.0, c[0, 0] * 3.0])   # a 0-d block among vectors
    return np.sum(np.sin(top) * W(4, 5)) + np.sum(np.sin(row) * W(8))


def more_surface_cases(C):
    return [
        C("block", block_loss, [R(2, 3), R(2, 2), R(2, 3)], (0, 1, 2)),
        C("nanmedian_nanquantile", lambda x: np.sum(np.sin(np.nanmedian(x, axis=1)) * W(3))
          + np.nanmedian(x) + np.sum(np.nanquantile(x, 0.3, axis=0, keepdims=True) * W(1, 4))
          + np.nanpercentile(x, 70.0),
          [np.where(NAN_AT, np.nan, rng.permutation(12).reshape(3, 4) * 0.1)]),
        C("lstsq", lstsq_loss, [np.eye(5, 3) * 2.0 + R(5, 3) * 0.3, R(5, 2)], (0, 1)),
        C("lstsq_vector", lstsq_vector, [np.eye(4, 3) * 2.0 + R(4, 3) * 0.3, R(4)], (0, 1)),
        C("special_exp_log", special_exp_log, [R(3, 4), P(3, 4)], (0, 1)),
        C("special_two_args", special_two_args, [R(3, 4), P(3, 4)], (0, 1)),
        C("special_inverses", special_inverses, [rng.uniform(0.2, 0.8, (3, 4))]),
        C("special_bessel", special_bessel, [P(3, 4)]),
        C("special_tuples", special_tuples, [P(3, 4)]),
        C("special_families", special_families, [P(3, 4), rng.uniform(0.1, 0.9, (3, 4))],
          (0, 1)),
        # the derivatives of eval_chebyt / eval_laguerre call these (second order)
        C("special_chebyu_genlaguerre", lambda x: np.sum(np.sin(
            special.eval_chebyu(3, x) + special.eval_genlaguerre(2, 1.5, x)) * W34),
          [rng.uniform(-0.9, 0.9, (3, 4))]),
        C("conversions_views", lambda x: np.sum(np.sin(np.asanyarray(x) + np.asfortranarray(x)
                                                       + np.asarray_chkfinite(x)
                                                       + np.require(x) + np.real_if_close(x))
                                                * W34), [R(3, 4)]),
        C("matrix_transpose_diagflat", lambda x, v: np.sum(np.sin(np.matrix_transpose(x))
                                                           * W(4, 3))
          + np.sum(np.sin(np.diagflat(v, 1)) * W(5, 5)), [R(3, 4), R(2, 2)], (0, 1)),
        C("unwrap", lambda p: np.sum(np.sin(np.unwrap(p)) * W(6)),
          [np.array([0.1, 3.0, 6.0, -0.2, 2.9, 6.5])]),
        C("ldexp_heaviside_i0", lambda x, y: np.sum(np.ldexp(x, np.array([1, -2, 3, 0]))
                                                    * W(3, 4))
          + np.sum(np.heaviside(np.array([0.0, 1.0, -1.0, 0.0]), y) * W(3, 4))
          + np.sum(np.sin(np.i0(x))), [R(3, 4), R(3, 4)], (0, 1)),
        C("modf_divmod_frexp", modf_divmod_frexp, [P(3, 4), P(3, 4) + 0.3], (0, 1)),
        C("broadcast_arrays", broadcast_pair, [R(3, 1), R(4)], (0, 1)),
        C("meshgrid", meshgrid_loss, [R(4), R(3)], (0, 1)),
        C("hsplit_vsplit", splits, [R(3, 4)]),
        C("dsplit", dsplit_loss, [R(2, 3, 4)]),
        C("unstack", unstack_loss, [R(3, 4)]),
        C("insert_delete", insert_delete, [R(3, 4), R(3)], (0, 1)),
        C("compress_extract", lambda x: np.sum(np.sin(np.compress([True, False, True], x,
                                                                  axis=0)) * W(2, 4))
          + np.sum(np.extract(x > 0.0, x) ** 2), [R(3, 4)]),
        C("choose", lambda x, y: np.sum(np.sin(np.choose(PICK,
                                                         [x, y])) * W34),
          [R(3, 4), R(4)], (0, 1)),
        C("resize", lambda x: np.sum(np.sin(np.resize(x, (3, 5))) * W(3, 5)), [R(2, 3)]),
        C("trim_zeros", lambda x: np.sum(np.sin(np.trim_zeros(x * np.array(
            [0.0, 0.0, 1.0, 1.0, 1.0, 0.0]))) * W(3)), [R(6)]),
        C("ediff1d", lambda x: np.sum(np.sin(np.ediff1d(x)) * W(11)), [R(3, 4)]),
        C("vander", lambda x: np.sum(np.sin(np.vander(x)) * W(4, 4))
          + np.sum(np.vander(x, 3, increasing=True) * W(4, 3)), [R(4)]),
        C("cumulative_sum_prod", lambda x: np.sum(np.sin(np.cumulative_sum(x, axis=1,
                                                                          include_initial=True))
                                                  * W(3, 5))
          + np.sum(np.cumulative_prod(x[0]) * W(4)), [P(3, 4)]),
        C("nancumsum_nancumprod_nanprod", lambda x: np.sum(np.sin(np.nancumsum(x, axis=0))
                                                           * W34)
          + np.sum(np.nancumprod(x * 0.8) * W(12)) + np.sum(np.nancumprod(x, axis=1) * W34)
          + np.sum(np.nanprod(x, axis=1) * W(3)),
          [np.where(NAN_AT, np.nan, P(3, 4))]),
        C("nanvar_nanstd", lambda x: np.sum(np.sin(np.nanvar(x, axis=0)) * W(4))
          + np.nanstd(x) + np.sum(np.nanstd(x, axis=1, ddof=1, keepdims=True)),
          [np.where(NAN_AT, np.nan, R(3, 4))]),
        C("logspace_geomspace", lambda a, b, base: np.sum(np.sin(np.logspace(a, b, 5))
                                                          * W(5))
          + np.sum(np.logspace(a, b, 4, base=base) * W(4))
          + np.sum(np.sin(np.geomspace(base, b + 2.0, 6)) * W(6)),
          [0.2, 0.7, 2.5], (0, 1, 2)),
        C("polynomials", polys, [R(3), R(4), R(5)], (0, 1, 2)),
        C("interp", lambda x, xp, fp: np.sum(np.sin(np.interp(x, xp, fp)) * W(6)),
          [np.array([-0.5, 0.25, 0.9, 1.6, 2.2, 3.5]), np.array([0.0, 0.7, 1.5, 3.0]),
           R(4)], (0, 1, 2)),
        C("cov", lambda m: np.sum(np.sin(np.cov(m)) * W(3, 3))
          + np.sum(np.cov(m, rowvar=False, bias=True) * W(4, 4)) + np.cov(m[0], ddof=0),
          [R(3, 4)]),
        C("corrcoef", lambda x: np.sum(np.corrcoef(x) * W(3, 3))
          + np.sum(np.sin(np.corrcoef(x, rowvar=False)) * W(3, 3)), [R(3, 5)[:, :3]
                                                                    .repeat(1, 0)]),
        C("linalg_cond", lambda a: np.linalg.cond(a) + np.linalg.cond(a, -2) * 0.5
          + np.linalg.cond(a, "fro") * 0.3 + np.linalg.cond(a, 1) * 0.2,
          [np.diag([3.0, 2.0, 1.0]) + R(3, 3) * 0.2]),
        C("tensorinv_tensorsolve", lambda a, b: np.sum(np.sin(np.linalg.tensorinv(a, 1))
                                                       * W(2, 3, 6))
          + np.sum(np.sin(np.linalg.tensorsolve(a, b)) * W(2, 3)),
          [(np.eye(6) * 2.0 + R(6, 6) * 0.3).reshape(6, 2, 3), R(6)], (0, 1)),
    ]
