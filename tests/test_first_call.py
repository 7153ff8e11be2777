"""What a first call hands to Numba: nothing Numba would reject late, nothing that does not
loop (issue 20's held-out first calls: gmm's component loop compiled 41-55 s before failing
on ``multigammaln``; ba's ``vjp`` compiled its loop-free sweeps for 82-146 s because the
module's ``_jacobian`` loops)."""
import numpy as np
import pytest
from scipy import special

import s2sgrad as ms
from s2sgrad.testing import fresh_function
from s2sgrad.backend import cache, precheck
from s2sgrad.api.split import split_function
from s2sgrad.backend import numba_backend as nb


@pytest.fixture
def no_numba_compile(monkeypatch):
    """Fails the test if any generated function is handed to Numba's compile."""
    def refuse(self, args):
        raise AssertionError(f"{self.name} was handed to Numba")
    monkeypatch.setattr(nb.Compiled, "_compile", refuse)


def prior_in_a_loop(x, d):
    total = 0.0
    for i in range(x.shape[0]):
        total = total + np.sin(x[i]) * x[i]
    return total + special.multigammaln(0.5 * d, 3) * np.sum(x)


def test_a_name_numba_has_no_type_for_decides_python_before_any_compile(no_numba_compile):
    g = ms.grad(prior_in_a_loop)
    x = np.linspace(0.1, 1.0, 5)
    dx = g(x, 7.0)
    assert g.backend == "python"
    reason = g.fallback_reason
    line = prior_in_a_loop.__code__.co_firstlineno + 4
    assert f"test_first_call.py:{line}" in reason, reason
    assert "Numba does not support scipy.special.multigammaln" in reason, reason
    assert "runs as Python" in reason and reason.endswith("."), reason
    expected = (np.sin(x) + x * np.cos(x)) + special.multigammaln(3.5, 3)
    np.testing.assert_allclose(dx, expected, rtol=1e-12)
    # remembered beside the module: a later process does not even read the code again
    remembered = cache.read_sidecar(cache.fallback_path(g.path)).get("failed", {})
    assert [v for v in remembered.values() if "scipy.special.multigammaln" in v], remembered


def test_jit_of_such_a_function_decides_the_same_way(no_numba_compile):
    f = ms.jit(prior_in_a_loop)
    x = np.linspace(0.1, 1.0, 5)
    assert f(x, 7.0) == pytest.approx(prior_in_a_loop(x, 7.0), rel=1e-14)
    assert f.backend == "python" and "scipy.special.multigammaln" in f.fallback_reason


SOURCE = '''\
import numpy as np
from scipy import special

from s2sgrad import runtime as rt


def f(x, n):
    s = np.zeros(n)
    for i in range(n):
        s[i] = _helper(x, i)
    y = rt.unbroadcast(np.sum(s) + np.linalg.norm(x), x)
    return y * np.float64(2.0)


def _helper(x, i):
    z = x[i] + np.pi
    return {call}
'''


@pytest.mark.parametrize("call, flagged", [
    ("np.exp(z)", None),                              # numpy and rt: Numba has them
    ("special.multigammaln(z, 2)", "scipy.special.multigammaln"),   # read in a called helper
    ("special.i0e(z)", "scipy.special.i0e"),        # a scipy ufunc: no Numba version
    ("_kernel(z)", "_kernel"),                        # a global object: no Numba type
])
def test_unresolved_reads_globals_module_attributes_and_called_helpers(call, flagged):
    source = SOURCE.format(call=call)
    scope = {"_kernel": object()}
    exec(compile(source, "<generated>", "exec"), scope)   # noqa: S102 - the test's code
    found = precheck.unresolved(scope["f"], source)
    if flagged is None:
        assert found is None
    else:
        assert found == (flagged, source.splitlines().index(f"    return {call}") + 1)


def loop_free(x, w):
    return np.sum(np.tanh(x * w) ** 2)


def test_a_split_modules_loop_free_sweeps_are_not_compiled_for_its_jacobians_loop(
        no_numba_compile, monkeypatch):
    monkeypatch.setenv("S2SGRAD_BACKEND", "auto")
    x, w = np.linspace(-1.0, 1.0, 4), np.linspace(0.5, 2.0, 4)
    value, pullback = ms.vjp(loop_free, x, w)
    dx, dw = pullback(2.0)
    t = np.tanh(x * w)
    np.testing.assert_allclose(dx, 2.0 * 2 * t * (1 - t * t) * w, rtol=1e-12)
    split = split_function(loop_free, 2, None, False)
    parts, generated = split._compiled, split._generated
    assert parts.forward.backend == "numpy" and parts.backward.backend == "numpy"
    assert cache.has_loops(generated.source)             # the module: its _jacobian loops
    assert cache.has_loops(generated.source, generated.jacobian_name)
    assert not cache.has_loops(generated.source, generated.backward_name)


def running_sum(x):
    total = 0.0
    for i in range(x.shape[0]):
        total = total + x[i] * x[i]
    return total


def test_a_function_numba_compiled_before_is_not_read_again(monkeypatch):
    """A later process (here: a fresh build of the same code) finds Numba's cache index
    beside the module and goes straight to it: the warm start pays no check."""
    x = np.linspace(-1.0, 1.0, 6)
    first = ms.grad(running_sum)
    np.testing.assert_allclose(first(x), 2 * x, rtol=1e-14)
    assert first.backend == "numba"
    assert cache.has_numba_index(first.path, "running_sum_value_and_grad")

    def refuse(py_func, source):
        raise AssertionError("read again")
    monkeypatch.setattr(precheck, "unresolved", refuse)
    again = ms.grad(fresh_function(running_sum))
    np.testing.assert_allclose(again(x), 2 * x, rtol=1e-14)
    assert again.backend == "numba" and again.path == first.path
