"""Every derivative rule has every order: the rule table's forward rules and second
derivatives as a class, beside the per-case checks of tests/test_jvp_rules.py (jvp
against central differences) and tests/test_second_order_rules.py (hvp against
differences of the gradient).

- Each ``rt.*`` helper that a VJP template calls has a forward-mode rule, so the
  gradient code of every rule is differentiable again (second order).  (The helpers of
  the forward rules themselves, ``rt.*_tangent``, have none: a third derivative through
  one is refused at the user's line.)
- A helper declared linear in some operands (``jvp_linear_in``) refuses a tangent that
  reaches an operand it neither differentiates nor declares constant, never drops it.
- A runtime helper's refusal (a derivative that does not exist at these values) names the
  user's file and line.
- The new rules compose (``jacfwd(grad)``, ``grad(grad)``, ``hessian``) and give the same
  results whatever the first call's values were (one object called at points in
  different pieces: another quantile segment, another singular-value order).
"""
import numpy as np
import pytest

import s2sgrad as ms
from s2sgrad import runtime as rt
from s2sgrad.errors import DerivativeNotAvailableError, MissingRuleError
from s2sgrad.rules import all_rules
from s2sgrad.rules.jvp_registry import jvp_linear_in, jvp_lookup
import gast


def _rt_calls(statements):
    """The names ``rt.<name>`` called in template statements (gast)."""
    names = set()
    for stmt in statements:
        for node in gast.walk(stmt if not isinstance(stmt, tuple) else stmt[-1]):
            if isinstance(node, gast.Call) and isinstance(node.func, gast.Attribute) and \
                    isinstance(node.func.value, gast.Name) and node.func.value.id == "rt":
                names.add(node.func.attr)
    return names


def test_every_helper_of_a_rule_has_a_forward_rule():
    """(helpers that give no derivative by design, a seed, a count, a mask, have a
    registered forward rule with no term)"""
    called = set()
    for _, rule in all_rules():
        if rule.differentiable:
            called |= _rt_calls(rule.statements)
    missing = sorted(n for n in called if jvp_lookup(getattr(rt, n)) is None)
    assert not missing, (f"rt helpers of derivative rules without a forward rule (their "
                         f"second derivative is refused): {missing}")
    assert len(called) > 80


def scaled(g, s):
    """A helper linear in ``g``, smooth in ``s`` (the class: quantile's q, a spacing)."""
    return g * s


def scaled_user(x):
    return np.sum(scaled(np.sin(x), x[0] * 2.0))


def test_an_undeclared_operand_with_a_tangent_is_refused(monkeypatch, tmp_path):
    monkeypatch.setenv("S2SGRAD_CACHE_DIR", str(tmp_path))
    from s2sgrad.rules import jvp_registry
    monkeypatch.setattr(jvp_registry, "_RULES", dict(jvp_registry._RULES))
    jvp_linear_in("g", scaled)
    x = np.array([0.4, -0.3, 1.1])
    with pytest.raises(MissingRuleError) as info:
        ms.jvp(scaled_user, (x,), (np.ones(3),))
    assert "`s`" in str(info.value) and str(info.value.location).startswith(__file__)
    # declared constant: the tangent reaching it is taken as zero, as declared
    jvp_linear_in("g", scaled, constant=("s",))
    out, tangent = ms.jvp(scaled_user, (x,), (np.array([1.0, 0.0, 0.0]),))
    assert np.isclose(tangent, np.cos(x[0]) * x[0] * 2.0)


def svd_vectors_loss(a):
    u, s, vh = np.linalg.svd(a)
    return np.sum(u[:, :2] @ u[:, :2].T * np.arange(9.0).reshape(3, 3)) + np.sum(s)


def test_a_refusal_at_these_values_names_the_users_line(monkeypatch, tmp_path):
    monkeypatch.setenv("S2SGRAD_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("S2SGRAD_BACKEND", "python")
    q, _ = np.linalg.qr(np.array([[1.0, 0.2, 0.1], [0.3, 1.0, 0.4], [0.2, 0.5, 1.0]]))
    tied = q @ np.diag([2.0, 2.0, 1.0]) @ q.T
    with pytest.raises(DerivativeNotAvailableError) as info:
        ms.hessian(svd_vectors_loss)(tied)
    assert isinstance(info.value, NotImplementedError)          # as the helper raised it
    assert str(info.value.location).startswith(__file__), str(info.value)
    assert "repeated singular value" in str(info.value) and "grad" in str(info.value)
    assert ".cache" not in str(info.value).splitlines()[0]


def eigenvalue_energy(a):
    w, v = np.linalg.eigh(a)
    return np.sum(w ** 2) + np.sum(np.linalg.eigvalsh(a) ** 3)


def test_a_hessian_through_eigh_at_a_repeated_eigenvalue_is_refused_not_wrong(monkeypatch,
                                                                             tmp_path):
    """The tangent of eigh's adjoint left out the tied pairs' terms: at a repeated
    eigenvalue hvp of sum(w ** 2) (which is ||a||^2, smooth) lost its off-diagonal
    entries, silently.  Refused there, naming the line; right where they differ."""
    monkeypatch.setenv("S2SGRAD_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("S2SGRAD_BACKEND", "python")
    v = np.array([[0.3, 0.2, -0.1], [0.2, -0.5, 0.4], [-0.1, 0.4, 0.7]])
    with pytest.raises(DerivativeNotAvailableError) as info:
        ms.hvp(eigenvalue_energy, np.eye(3), v)
    assert "repeated eigenvalue" in str(info.value) and "grad" in str(info.value)
    assert str(info.value.location).startswith(__file__), str(info.value)
    a = np.diag([1.0, 2.0, 3.5]) + 0.1 * v
    gradient, eps = ms.grad(eigenvalue_energy), 1e-6
    want = (gradient(a + eps * v) - gradient(a - eps * v)) / (2 * eps)
    np.testing.assert_allclose(ms.hvp(eigenvalue_energy, a, v), want, rtol=1e-5, atol=1e-7)


def quantile_loss(x, q):
    return np.sum(np.sin(np.quantile(x * x, q, axis=1)) * np.array([1.0, 2.0]))


def cross_loss(a, b):
    return np.sum(np.sin(np.cross(a, b, axisa=0, axisc=0)) * np.arange(12.0).reshape(3, 4))


def qr_loss(a):
    q, r = np.linalg.qr(a)
    return np.sum(np.sin(r)) + np.sum(q[:, 0] * np.array([1.0, -2.0, 0.5, 1.5]))


def _fd_gradient(fn, args, pos, v, eps=1e-6):
    gradient = ms.grad(fn, pos)

    def at(s):
        moved = list(args)
        moved[pos] = args[pos] + s * eps * v
        return np.asarray(gradient(*moved))
    return (at(1.0) - at(-1.0)) / (2 * eps)


RNG = np.random.default_rng(5)
X = RNG.uniform(-1.0, 1.0, (2, 5))
A = RNG.uniform(-1.0, 1.0, (3, 4))
B = RNG.uniform(-1.0, 1.0, (4, 3))
M = np.eye(4, 3) * 2.0 + RNG.uniform(-0.3, 0.3, (4, 3))

#: (function, arguments, position): each new rule's class, with two points where the
#: pieces differ (another quantile segment; other vectors and signs)
COMPOSED = [
    ("quantile_q", quantile_loss, [(X, 0.3), (X * 1.5, 0.8)], 1),
    ("quantile_x", quantile_loss, [(X, 0.3), (-X, 0.55)], 0),
    ("cross_axes", cross_loss, [(A, B), (-B.T * 2.0, A.T)], 0),
    ("qr_tall", qr_loss, [(M,), (M[::-1] * 1.3,)], 0),
]


@pytest.mark.parametrize("name,fn,points,pos", COMPOSED, ids=[c[0] for c in COMPOSED])
def test_compositions_and_later_calls(name, fn, points, pos, monkeypatch, tmp_path):
    """grad(grad), jacfwd(grad) and hessian-vector products of one object each, called at
    two points: each call against differences of the gradient at its own point."""
    monkeypatch.setenv("S2SGRAD_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("S2SGRAD_BACKEND", "python")
    jac = ms.jacfwd(ms.grad(fn, pos), pos)
    for args in points:
        x = np.asarray(args[pos], dtype=float)
        v = np.linspace(-1.0, 1.0, x.size).reshape(x.shape) if x.ndim else 1.0
        want = _fd_gradient(fn, list(args), pos, v)
        hv = np.tensordot(np.asarray(jac(*args)), v, axes=np.ndim(x))
        np.testing.assert_allclose(hv, want, rtol=1e-5, atol=1e-6)
        if not x.ndim:
            np.testing.assert_allclose(ms.grad(ms.grad(fn, pos), pos)(*args), want,
                                       rtol=1e-5, atol=1e-6)
