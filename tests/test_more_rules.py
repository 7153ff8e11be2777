"""How the rules of numpy_more / linalg_rules / scipy_rules meet the compiler: modules a
template reads are imported by the generated module under names that cannot clash,
another library's function is named (not passed in), tuple results, and the forms a
rule does not cover are refused loudly."""
import colorsys   # a standard-library module no rule of s2sgrad reads (a template below does)
import os
import subprocess
import sys

import numpy as np
import pytest
import scipy.special

import s2sgrad
from s2sgrad.errors import MissingRuleError, UnsupportedConstructError
from s2sgrad.rules import d, vjp
from s2sgrad.testing import check_grad


@pytest.fixture(autouse=True)
def python_backend(monkeypatch):
    monkeypatch.setenv("S2SGRAD_BACKEND", "python")


def test_template_module_gets_a_name_the_function_does_not_use():
    """A user variable called `special` and a rule reading scipy's `special`: the generated
    module imports scipy.special under another name."""
    def f(x):
        special = x * 2.0
        return np.sum(scipy.special.gammaln(special) + special)

    g = check_grad(f, (np.array([0.7, 1.3, 2.1]),))
    assert "import scipy.special as special_1" in g.source
    assert "special_1.gammaln(special)" in g.source
    assert "special_1.digamma(special)" in g.source


def test_library_function_is_named_not_passed_in():
    def f(x):
        return np.sum(scipy.special.expit(x) * x)

    g = s2sgrad.grad(f)
    g(np.array([0.1, -0.4]))
    assert "from scipy import special" in g.source
    assert "def f_value_and_grad(x):" in g.source   # no extra argument for expit


def test_generated_text_is_deterministic():
    def f(x):
        return np.sum(scipy.special.erf(x) + scipy.special.xlogy(x, x + 2.0))

    sources = {s2sgrad.grad(f).source for _ in range(2)}
    assert len(sources) == 1


#: a function generated code could not import by name (a lambda has no importable name)
doubler = (lambda v: v * 2.0)


def spaced(x):
    return x


def test_template_reading_what_cannot_be_imported_is_refused():
    def template(ans, x):
        d[x] = d[ans] * doubler(x)

    with pytest.raises(TypeError, match="reads `doubler`.*cannot import by name"):
        vjp(spaced)(template)


def test_importing_s2sgrad_parses_no_template_and_a_rule_parses_on_first_use(tmp_path):
    """s2sgrad's own tables (some 500 templates) are parsed when a rule is first used, not
    at import (half of the import's time); a user's template is parsed at registration
    (above: its mistake raises there)."""
    probe = ("import s2sgrad\n"
             "from s2sgrad.rules import registry, jvp_registry\n"
             "import numpy as np\n"
             "before = registry._parsed_template.cache_info().currsize\n"
             "pending = sum(isinstance(r, jvp_registry._Pending)\n"
             "              for _, r in jvp_registry._RULES.values())\n"
             "s2sgrad.grad(lambda x: np.sum(np.sin(x)))(np.ones(3))\n"
             "after = registry._parsed_template.cache_info().currsize\n"
             "print(before, pending > 100, 0 < after < 20)\n")
    (tmp_path / "probe.py").write_text(probe)
    done = subprocess.run([sys.executable, str(tmp_path / "probe.py")], capture_output=True,
                          text=True,
                          env={**os.environ, "S2SGRAD_BACKEND": "python"})
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["0", "True", "True"], done.stdout


@pytest.mark.parametrize("fn,args,what", [
    # (np.cross(a, b, axis=0) was one: its rule takes the axes now, tests/rule_cases_more.py)
    (lambda a: np.sum(np.linalg.svd(a, compute_uv=False)), (np.eye(3),), "svd called this way"),
    (lambda a: np.sum(np.pad(a, 1, constant_values=2.0)), (np.ones(3),), "pad called this way"),
    (lambda a: np.sum(np.linalg.eigh(a, UPLO="U")[0]), (np.eye(3),), "eigh called this way"),
])
def test_forms_a_rule_does_not_cover_are_refused(fn, args, what):
    with pytest.raises(MissingRuleError, match=what):
        s2sgrad.grad(fn)(*args)


def test_unsupported_modes_raise_when_the_gradient_runs():
    with pytest.raises(NotImplementedError, match="linear_ramp"):
        s2sgrad.grad(lambda a: np.sum(np.pad(a, 1, mode="linear_ramp")))(np.ones(3))
    with pytest.raises(NotImplementedError, match="full_matrices"):
        s2sgrad.grad(lambda a: np.sum(np.linalg.svd(a)[1]))(np.ones((3, 2)))


def test_index_tricks_refuse_slices():
    def f(x):
        return np.sum(np.r_[x, 0:3])

    with pytest.raises(UnsupportedConstructError, match=r"np\.r_\[\.\.\.\] with a slice"):
        s2sgrad.grad(f)(np.ones(2))


def test_eigh_result_indexed_without_unpacking():
    def f(a):
        result = np.linalg.eigh(a)
        return np.sum(result[0] * np.arange(1.0, 4.0))

    a = np.diag([1.0, 2.0, 3.5]) + 0.1
    check_grad(f, (a,))


def test_rule_registered_inside_a_function():
    """The decorator may name a local primitive: only the template's body is resolved."""
    def local_double(x):
        return 2.0 * x

    @vjp(local_double)
    def _(ans, x):
        d[x] = d[ans] * 2.0

    from s2sgrad.rules.registry import _RULES
    try:
        assert _RULES[id(local_double)][1].differentiable
    finally:
        del _RULES[id(local_double)]


B34 = np.arange(12.0).reshape(3, 4) / 10.0


def kron_left(a):
    return np.sum(np.sin(np.kron(a, B34)))


def tensordot_right(b):
    return np.sum(np.sin(np.tensordot(B34, b, 1)))


def logsumexp_values(a):
    return scipy.special.logsumexp(a, b=np.arange(1.0, 5.0))


@pytest.mark.parametrize("fn,arg,call", [
    (kron_left, np.ones((2, 2)), "rt.kron_adjoint(dkron_a_B34, a, B34, 0)"),
    (tensordot_right, np.ones((4, 2)), "rt.tensordot_adjoint(dtensordot_B34_b1, B34, b, 1, 1)"),
    (logsumexp_values, np.ones(4), ", 0)"),
])
def test_only_the_active_operands_adjoint_is_computed(fn, arg, call):
    """A rule of two operands computes the adjoint of the differentiated one only: the
    helper is called once, for that operand (``wrt``)."""
    g = check_grad(fn, (arg,))
    helper = call.split("(")[0] if call.startswith("rt.") else "rt.logsumexp_adjoint"
    assert g.source.count(helper) == 1, g.source
    assert call in g.source, g.source


def gammainc_of_shape(a):
    return np.sum(scipy.special.gammainc(a, 1.5))


def bessel_of_order(v):
    return np.sum(scipy.special.jv(v, 2.0))


@pytest.mark.parametrize("fn,arg", [(gammainc_of_shape, np.array([1.5, 2.5])),
                                    (bessel_of_order, np.array([0.5, 1.5]))])
def test_a_parameter_without_a_derivative_is_refused_not_zero(fn, arg):
    """``a`` of gammainc and a Bessel order have no closed-form derivative: refused at the
    user's line, never a silent zero (the same calls differentiate w.r.t. x)."""
    with pytest.raises(MissingRuleError, match=r"with respect to its argument `(a|v)`"):
        s2sgrad.grad(fn)(arg)


def test_refuse_names_a_parameter_of_the_template():
    def template(ans, x):
        d[x] = d[ans]

    with pytest.raises(TypeError, match=r"\['y'\] are not parameters"):
        vjp(spaced, refuse=("y",))(template)


@pytest.mark.parametrize("fn,args,what", [
    (lambda m, y: np.sum(np.cov(m, y)), (np.ones((2, 3)), np.ones((2, 3))), "cov called"),
    (lambda x: np.sum(np.interp(x, [0.0, 1.0], [1.0, 2.0], left=0.0)), (np.ones(3),),
     "interp called"),
    (lambda x: np.sum(np.meshgrid(x, x, sparse=True)[0]), (np.ones(3),), "meshgrid called"),
])
def test_surface_forms_a_rule_does_not_cover_are_refused(fn, args, what):
    with pytest.raises(MissingRuleError, match=what):
        s2sgrad.grad(fn)(*args)


def soft_abs(x):
    """A primitive of this test module: sqrt(x^2 + 1)."""
    return np.sqrt(x * x + 1.0)


def test_a_template_calls_any_importable_function():
    """A rule registered outside s2sgrad whose template calls a standard-library module
    (``colorsys``) and this test module's own ``soft_abs``: the generated module imports
    each by name and the gradient is right."""
    @vjp(soft_abs)
    def _(ans, x):
        d[x] = d[ans] * x / soft_abs(x) + colorsys.rgb_to_hsv(0.0, 0.0, 0.0)[2]

    def f(x):
        return np.sum(np.sin(soft_abs(x)))

    from s2sgrad.rules.registry import _RULES
    try:
        g = check_grad(f, (np.array([0.3, -1.2, 2.0]),))
    finally:
        del _RULES[id(soft_abs)]
    assert "import colorsys" in g.source
    assert "soft_abs(" in g.source and "test_more_rules" in g.source
