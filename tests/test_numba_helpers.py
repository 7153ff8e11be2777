"""Every runtime helper generated code can call has a Numba version, and the indexing
adjoints compile under Numba for every index form the generator passes.

The helpers are found by reading s2sgrad's own source: ``rt.<name>`` in the rule
templates, and the names the code generator passes to ``call("rt", ...)`` and its
other spellings (any string constant naming a helper in ``s2sgrad/compiler``).  A
new helper without a Numba version fails here, not by a silent Python fallback.
"""
import ast
import inspect
import pathlib

import numba
import numpy as np
import pytest
import scipy.special

import s2sgrad as ms
from s2sgrad import runtime as rt
from s2sgrad.backend import (numba_forward, numba_split, numba_indexing, numba_linalg,
                             numba_lists, numba_more, numba_rules, numba_special, numba_support,
                             numba_surface)
from s2sgrad.testing import check_grad, numerical_grad, numerical_jacobian

PACKAGE = pathlib.Path(ms.__file__).resolve().parent
HELPERS = {name for name, f in vars(rt).items()
           if inspect.isfunction(f) and f.__module__ == rt.__name__ and not name.startswith("_")}
#: helpers whose forward call has no Numba version either (the code runs as Python, and the
#: fallback reason names that call): checked below to be truly outside Numba's subset
FORWARD_NOT_IN_NUMBA = {"inner_adjoint": "np.inner", "einsum_adjoints": "np.einsum",
                        "einsum": "np.einsum",
                        "block_adjoints": "np.block",
                        "affine_adjoint": "np.polyder / np.polyint",
                        "right_aligned": "np.polyadd / np.polysub",
                        "polyval_adjoint": "np.polyval", "meshgrid_adjoints": "np.meshgrid",
                        "choose_adjoints": "np.choose", "compress_adjoint": "np.compress",
                        "multigammaln_adjoint": "scipy.special.multigammaln",
                        "tensorinv_adjoint": "np.linalg.tensorinv",
                        "tensorsolve_adjoint": "np.linalg.tensorsolve",
                        "diagonal_adjoint": "np.diagonal / np.linalg.diagonal",
                        "pad_adjoint": "np.pad",
                        "rollaxis_adjoint": "np.rollaxis", "tensordot_adjoint": "np.tensordot",
                        "gradient_adjoint": "np.gradient",
                        "gradient_spacing_adjoints": "np.gradient",
                        "matvec_adjoint": "np.matvec / np.vecmat", "vecdot_adjoint": "np.vecdot",
                        "multi_dot_adjoints": "np.linalg.multi_dot",
                        "svdvals_adjoint": "np.linalg.svdvals",
                        "svdvals_tangent": "np.linalg.svdvals",
                        "vector_norm_adjoint": "np.linalg.vector_norm",
                        "matrix_norm_axes_adjoint": "np.linalg.matrix_norm",
                        "logsumexp_adjoint": "scipy.special.logsumexp",
                        "index_trick_adjoints": "np.r_ / np.c_",
                        "drop_initial": "np.cumulative_sum / np.cumulative_prod",
                        "operand_adjoints_tangent": "np.einsum / np.linalg.multi_dot",
                        "vector_norm_adjoint_tangent": "np.linalg.vector_norm",
                        "logsumexp_adjoint_tangent": "scipy.special.logsumexp",
                        "gradient_tangent": "np.gradient",
                        "gradient_adjoint_tangent": "np.gradient",
                        "gradient_spacing_adjoints_tangent": "np.gradient",
                        "polyval_adjoint_tangent": "np.polyval",
                        "svdvals_adjoint_tangent": "np.linalg.svdvals",
                        "matrix_norm_axes_adjoint_tangent": "np.linalg.matrix_norm",
                        "tensorinv_tangent": "np.linalg.tensorinv",
                        "tensorinv_adjoint_tangent": "np.linalg.tensorinv",
                        "tensorsolve_adjoint_tangent": "np.linalg.tensorsolve",
                        "cumulative_prod_tangent": "np.cumulative_sum / np.cumulative_prod",
                        "multigammaln_curvature": "scipy.special.multigammaln",
                        "spherical_bessel_derivative": "scipy.special.spherical_jn ..."}

#: helpers with no Numba version yet although their forward call compiles: gradients
#: using them run as Python with a fallback reason.  Known debt; a NEW helper still fails.
NO_NUMBA_VERSION_YET = frozenset({
    # the tangents of smooth adjoint helpers (runtime/second.py): hessian / hvp through
    # det, slogdet, norm, cholesky, eigh, eigvalsh, pinv, matrix_power and sinc run as
    # Python (issue 19, item 7 gave them forward rules; their Numba versions are to come)
    "inv_tangent", "norm_adjoint_tangent", "cholesky_adjoint_tangent",
    "eigh_adjoint_tangent", "eigvalsh_adjoint_tangent", "pinv_adjoint_tangent",
    "matrix_power_adjoint_tangent", "sinc_second_derivative",
    # the forward rules of the primitives that had none and the second-order rules of
    # their adjoints (issue 19, item 7, branch 'rules'): jvp / hessian through quantiles,
    # partition, average, cov, corrcoef, arange, trim_zeros, vander, cumprod, trapezoid,
    # interp, nanvar/nanstd, cond, qr, svd and lstsq run as Python, with the reason
    "arange_tangent", "average_weights_tangent", "order_tangent", "quantile_tangent",
    "quantile_q_tangent", "quantile_q_adjoint", "quantile_q_adjoint_tangent",
    "quantile_adjoint_q_tangent", "trim_zeros_tangent", "vander_tangent", "cov_tangent",
    "corrcoef_tangent", "qr_tangent", "svd_tangent", "lstsq_tangent",
    "cumprod_adjoint_tangent", "average_adjoint_tangent", "trapezoid_adjoint_tangent",
    "vander_adjoint_tangent", "interp_adjoint_tangent", "nan_moments_adjoint_tangent",
    "corrcoef_adjoint_tangent", "cond_adjoint_tangent", "qr_adjoint_tangent",
    "svd_adjoint_tangent", "lstsq_adjoint_tangent",
})


def _helpers_generated_code_calls():
    found = {}
    for path in sorted((PACKAGE / "rules").glob("*.py")) + sorted(
            (PACKAGE / "compiler").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and \
                    node.value.id == "rt" and path.parent.name == "rules":
                found.setdefault(node.attr, path.name)
            if path.parent.name == "compiler" and isinstance(node, ast.Constant) and \
                    node.value in HELPERS:
                found.setdefault(node.value, path.name)
    return found


CALLED = _helpers_generated_code_calls()


def test_the_scan_finds_the_helpers_of_rules_templates_and_generator():
    for name in ("unbroadcast", "add_at", "unreduce", "zeros_like", "ones_like", "writable",
                 "written_adjoint", "copy_value", "zeros_list", "add_lists", "mean", "squeeze"):
        assert name in CALLED, name
    missing = set(CALLED) - HELPERS - set(vars(rt))
    assert not missing, missing


@pytest.mark.parametrize("name", sorted(CALLED))
def test_every_helper_generated_code_calls_has_a_numba_version(name):
    if name in FORWARD_NOT_IN_NUMBA:
        pytest.skip(f"{FORWARD_NOT_IN_NUMBA[name]} itself does not compile under Numba")
    if name in NO_NUMBA_VERSION_YET:
        pytest.skip(f"rt.{name} has no Numba version yet (its gradients run as Python)")
    helper = getattr(rt, name)
    context = numba.core.registry.cpu_target.typing_context
    context.refresh()
    try:
        typed = context.resolve_value_type(helper)   # a Function type once overloaded
    except ValueError:
        typed = None
    assert isinstance(typed, numba.core.types.Function), (f"rt.{name} (called from {CALLED[name]}) has no Numba version in "
                       f"s2sgrad/backend; generated code calling it falls back to Python")


#: a call of each forward function FORWARD_NOT_IN_NUMBA names (numpy's 2-D float array x)
FORWARD_CALLS = {
    "np.pad": lambda x: np.pad(x, 1),
    "np.diagonal / np.linalg.diagonal": lambda x: np.diagonal(x),
    "np.rollaxis": lambda x: np.rollaxis(x, 1), "np.tensordot": lambda x: np.tensordot(x, x),
    "np.gradient": lambda x: np.gradient(x[0]), "np.matvec / np.vecmat": lambda x: np.matvec(x, x[0]),
    "np.vecdot": lambda x: np.vecdot(x, x), "np.linalg.multi_dot": lambda x: np.linalg.multi_dot(
        [x, x, x]), "np.linalg.svdvals": lambda x: np.linalg.svdvals(x),
    "np.linalg.vector_norm": lambda x: np.linalg.vector_norm(x[0]),
    "np.linalg.matrix_norm": lambda x: np.linalg.matrix_norm(x),
    "scipy.special.logsumexp": lambda x: scipy.special.logsumexp(x),
    "np.r_ / np.c_": lambda x: np.r_[x[0], x[1]],
    "np.cumulative_sum / np.cumulative_prod": lambda x: np.cumulative_sum(x[0]),
    "np.meshgrid": lambda x: np.meshgrid(x[0], x[1]), "np.choose": lambda x: np.choose(0, x),
    "np.inner": lambda x: np.inner(x, x), "np.polyval": lambda x: np.polyval(x[0], x[1]),
}


@pytest.mark.parametrize("function", sorted(FORWARD_CALLS))
def test_forward_calls_said_to_be_outside_numba_are(function):
    """A helper is exempt only while Numba cannot compile its forward call: when a Numba
    release adds it, this fails and the helper needs a Numba version."""
    assert function in FORWARD_NOT_IN_NUMBA.values()
    x = np.arange(1.0, 5.0).reshape(2, 2)
    with pytest.raises(numba.core.errors.TypingError):
        numba.njit(FORWARD_CALLS[function])(x)


# ---------------------------------------------------------------- index forms, end to end

def slice_from_shape(w):
    H = w.shape[0] // 2
    return np.sum(np.tanh(w[H:]))


def head_from_shape(w):
    H = w.shape[0] // 2
    return np.sum(w[:H] * w[:H])


def negative_step(w):
    n = w.shape[0]
    return np.sum(np.sin(w[n - 2::-2]))


def both_bounds_and_step(w):
    n = w.shape[0]
    return np.sum(w[1:n - 1:2] ** 2)


def int_from_shape(w):
    last = w.shape[0] - 1
    return np.exp(w[last]) + w[0]


def rows_and_columns(W):
    H = W.shape[0] // 2
    k = W.shape[1] - 1
    return np.sum(np.tanh(W[H:, :k])) + np.sum(W[0, 1:] * W[H, :k])


def reversed_rows(W):
    n = W.shape[0]
    return np.sum(W[n - 1::-1, 1] * np.arange(n))


def integer_array(w):
    idx = np.array([0, 2, 2, 1])
    return np.sum(w[idx] ** 2)


def pairs_of_indices(W):
    rows = np.array([0, 1, 1])
    cols = np.array([2, 0, 0])
    return np.sum(np.sin(W[rows, cols]))


def array_and_slice(W):
    cols = np.array([1, 1, 0])
    return np.sum(W[:, cols] ** 2) + np.sum(W[np.array([1, 0]), 1:] * 3.0)


def boolean_mask(w):
    return np.sum(w[w > 0.1] ** 2)


@pytest.mark.parametrize("fn,shape", [
    (slice_from_shape, (8,)), (head_from_shape, (6,)), (negative_step, (7,)),
    (both_bounds_and_step, (9,)), (int_from_shape, (5,)), (rows_and_columns, (4, 3)),
    (reversed_rows, (3, 4)), (integer_array, (4,)), (pairs_of_indices, (2, 3)),
    (array_and_slice, (2, 3)), (boolean_mask, (6,))])
def test_index_forms_compile_under_numba_with_correct_gradients(fn, shape, monkeypatch):
    monkeypatch.setenv("S2SGRAD_BACKEND", "numba")
    x = np.random.default_rng(1).standard_normal(shape)
    g = ms.grad(fn)
    got = g(x)
    assert g.backend == "numba", g.fallback_reason
    check_grad(fn, (x,))
    monkeypatch.setenv("S2SGRAD_BACKEND", "python")
    np.testing.assert_allclose(got, ms.grad(fn)(x), rtol=1e-12)


@pytest.mark.parametrize("index", [
    3, -1, slice(1, 6, 2), slice(6, None, -2), slice(None, 3), np.array([1, 1, 5]),
    np.array([[0, 2], [2, 2]]), "mask", (1, 2), (slice(0, 2), -1), (1, slice(None, None, -2)),
    (np.array([0, 2, 2]), np.array([1, 1, 1])), (slice(None), np.array([3, 3, 0])),
    (np.array([2, 2]), slice(1, 3)), (np.array([1]), np.array([0, 3, 3]))])
def test_add_at_under_numba_matches_numpy_add_at(index):
    @numba.njit
    def compiled(target, index, g):
        return rt.add_at(target, index, g)
    target = np.arange(12.0).reshape(3, 4) if isinstance(index, tuple) or (
        isinstance(index, np.ndarray) and index.ndim == 2) else np.arange(8.0)
    if isinstance(index, str):
        index = target > 2.5
    g = np.random.default_rng(0).standard_normal(np.shape(target[index]))
    g = float(g) if g.ndim == 0 else g     # generated code passes a scalar's adjoint as one
    expected = np.zeros_like(target)
    np.add.at(expected, index, g)
    np.testing.assert_allclose(compiled(np.zeros_like(target), index, g), expected)
    np.testing.assert_allclose(rt.add_at(np.zeros_like(target), index, g), expected)


def special_in_a_loop(x):
    """scipy.special's elementwise functions, in a loop (an LSTM's ``expit`` gates)."""
    total = 0.0
    for i in range(x.shape[0]):
        p = scipy.special.expit(x[i])
        total += np.sum(p * scipy.special.erf(x[i]) + scipy.special.log_expit(x[i])
                        + scipy.special.ndtr(x[i]))
        total += scipy.special.logit(0.25 + 0.5 * p[0]) * scipy.special.erfc(x[i, 0])
    return total


SPECIAL_GRAD = ms.grad(special_in_a_loop)
SPECIAL = (scipy.special.expit, scipy.special.log_expit, scipy.special.erf,
           scipy.special.erfc, scipy.special.ndtr, scipy.special.gammaln)


@numba.njit
def _special_compiled(v):
    s = scipy.special
    return s.expit(v), s.log_expit(v), s.erf(v), s.erfc(v), s.ndtr(v), s.gammaln(v)


@pytest.mark.parametrize("x", [np.linspace(-2.0, 3.0, 12).reshape(4, 3),
                               np.linspace(-40.0, 30.0, 6).reshape(3, 2)],
                         ids=["moderate", "large: log_expit's tails"])
def test_scipy_special_elementwise_functions_compile_under_numba(x):
    """Before: 'Numba does not support scipy.special.expit', the gradient ran as Python."""
    np.testing.assert_allclose(SPECIAL_GRAD(x), numerical_grad(special_in_a_loop, (x,)),
                               rtol=1e-6, atol=1e-8)
    assert SPECIAL_GRAD.backend == "numba", SPECIAL_GRAD.fallback_reason
    for value in (x, x[0, 0]):
        for fn, got in zip(SPECIAL, _special_compiled(value)):
            np.testing.assert_allclose(got, fn(value), rtol=1e-12, atol=1e-300)
    y = 0.5 + x / 100.0
    np.testing.assert_allclose(numba.njit(lambda v: scipy.special.logit(v))(y),
                               scipy.special.logit(y), rtol=1e-13)


def gammaln_in_a_loop(x):
    """gammaln in a loop: its gradient calls digamma, its Hessian polygamma(1, x)."""
    s = 0.0
    for i in range(x.shape[0]):
        s = s + scipy.special.gammaln(x[i] * x[i] + 1.0) + scipy.special.digamma(x[i] + 2.0)
    return s


GAMMALN_GRAD = ms.grad(gammaln_in_a_loop)
GAMMALN_HESSIAN = ms.hessian(gammaln_in_a_loop)


@numba.njit
def _gamma_family_compiled(v, n):
    return scipy.special.digamma(v), scipy.special.psi(v), scipy.special.polygamma(n, v)


def test_digamma_and_polygamma_compile_under_numba_to_scipys_values():
    """Before: 'Numba does not support scipy.special.digamma': a gradient through
    gammaln (and a Hessian, which calls polygamma) ran as Python."""
    rng = np.random.default_rng(0)
    x = np.concatenate([rng.uniform(-30.0, 30.0, 500), rng.uniform(1e-3, 3.0, 300),
                        np.exp(rng.uniform(-20.0, 40.0, 300)), np.arange(-5.0, 12.0),
                        [0.0, -0.0, np.inf, -np.inf, np.nan, 1.4616321449683622, -2.5]])
    for n in range(5):
        got = _gamma_family_compiled(x, n)
        expected = (scipy.special.digamma(x), scipy.special.digamma(x),
                    scipy.special.polygamma(n, x))
        for a, b in zip(got, expected):     # poles as scipy's: inf, -inf, nan
            np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)
        for v in (2.5, -0.75, 1e-3):
            scalar = _gamma_family_compiled(v, n)
            np.testing.assert_allclose(scalar[2], scipy.special.polygamma(n, v), rtol=1e-12)
            assert isinstance(scalar[0], float)


@pytest.mark.parametrize("x", [np.array([0.3, 1.7, 2.5]), np.array([-0.4, 0.9])])
def test_gradient_and_hessian_through_gammaln_compile(x):
    np.testing.assert_allclose(GAMMALN_GRAD(x), numerical_grad(gammaln_in_a_loop, (x,)),
                               rtol=1e-6, atol=1e-8)
    assert GAMMALN_GRAD.backend == "numba", GAMMALN_GRAD.fallback_reason
    hessian = GAMMALN_HESSIAN(x)
    np.testing.assert_allclose(hessian, numerical_jacobian(GAMMALN_GRAD, (x,)),
                               rtol=1e-6, atol=1e-7)
    assert GAMMALN_HESSIAN.backend == "numba", GAMMALN_HESSIAN.fallback_reason


def running_max_by_where(x):
    """A number a loop carries through ``np.where`` (numpy's 0-d array; a number else)."""
    a = x[0]
    i = 1
    while i < x.shape[0]:
        a = np.where(x[i] > a, x[i], a)
        i += 1
    return a + np.log(np.sum(np.exp(x - a))) + np.where(x[0] > 0.0, x[1], 2.0) * a


WHERE_GRAD = ms.grad(running_max_by_where)


def test_where_of_numbers_in_a_loop_compiles_under_numba():
    """Before: 'Cannot unify float64 and array(float64, 0d, C)', the gradient ran as Python."""
    for x in (np.array([0.3, -1.2, 2.5, 0.7, 2.4]), np.array([-0.5, 1.5, 0.2, -2.0])):
        np.testing.assert_allclose(WHERE_GRAD(x), numerical_grad(running_max_by_where, (x,)),
                                   rtol=1e-6, atol=1e-8)
    assert WHERE_GRAD.backend == "numba", WHERE_GRAD.fallback_reason
    assert "rt.where(" in WHERE_GRAD.source
