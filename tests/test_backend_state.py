"""What ``g.backend`` and ``g.fallback_reason`` say: 'undecided' before the first call,
then what ran the last call; reasons are whole sentences that name the user's line and
what to do, without memory addresses or s2sgrad's internal file paths."""
import os
import re

import numpy as np
import s2sgrad as ms
from s2sgrad.testing import fresh_function


def uses_einsum(x):
    y = x * 2.0
    return np.einsum("i,i->", y, y)


def plain(x):
    return np.sum(np.sin(x) * x)


def _is_whole_and_clean(reason):
    assert reason.endswith("."), reason
    assert not re.search(r"0x[0-9a-f]{6,}", reason), reason
    assert "s2sgrad/" not in reason and os.sep + "backend" not in reason, reason
    assert "/tmp" not in reason and str(os.path.dirname(ms.__file__)) not in reason, reason


def test_before_the_first_call_the_backend_is_undecided(monkeypatch):
    monkeypatch.setenv("S2SGRAD_BACKEND", "numba")
    g = ms.grad(plain)
    assert g.backend == "undecided" and "first call" in g.fallback_reason
    g.source  # noqa: B018 - building the code decides nothing either
    assert g.backend == "undecided"
    monkeypatch.setenv("S2SGRAD_BACKEND", "python")
    g = ms.grad(plain)
    assert g.backend == "python" and "S2SGRAD_BACKEND=python" in g.fallback_reason


def test_after_a_call_backend_says_what_ran_even_after_reading_the_source(monkeypatch):
    monkeypatch.setenv("S2SGRAD_BACKEND", "numba")
    g = ms.grad(uses_einsum)
    g(np.array([1.0, 2.0]))
    assert g.backend == "python"
    assert "def uses_einsum_value_and_grad" in g.source
    assert g.backend == "python" and g.fallback_reason is not None
    assert open(g.path).read() == g.source     # the code that ran


def test_fallback_reason_names_the_user_line_and_what_to_do(monkeypatch):
    monkeypatch.setenv("S2SGRAD_BACKEND", "numba")
    g = ms.grad(uses_einsum)
    g(np.array([1.0, 2.0]))
    reason = g.fallback_reason
    assert 'np.einsum("i,i->", y, y)' in reason or "np.einsum('i,i->', y, y)" in reason, reason
    line = uses_einsum.__code__.co_firstlineno + 2
    assert f"test_backend_state.py:{line}" in reason, reason
    assert "einsum" in reason.split(":", 2)[-1]           # what Numba lacks
    assert "S2SGRAD_BACKEND=python" in reason and "runs as Python" in reason
    _is_whole_and_clean(reason)


def test_compiled_call_reports_numba_and_no_reason(monkeypatch):
    monkeypatch.setenv("S2SGRAD_BACKEND", "numba")
    g = ms.value_and_grad(plain)
    g(np.array([0.5, 1.0]))
    assert g.backend == "numba" and g.fallback_reason is None


def test_reason_for_python_objects_is_a_whole_sentence(monkeypatch):
    monkeypatch.setenv("S2SGRAD_BACKEND", "numba")
    drop = ms.ops.Dropout2D(keep_prob=0.75)

    def with_dropout(x):
        out, mask = drop(x)
        return np.sum(out * 1.0)
    g = ms.grad(with_dropout)
    g(np.ones((1, 2, 2, 2)))
    assert g.backend == "python"
    _is_whole_and_clean(g.fallback_reason)


def looping(x):
    total = 0.0
    for i in range(x.shape[0]):
        total = total + np.sin(x[i]) * x[i]
    return total


def test_auto_mode_runs_loop_free_code_as_numpy_and_compiles_loops(monkeypatch):
    monkeypatch.delenv("S2SGRAD_BACKEND", raising=False)   # the default: auto
    x = np.array([0.5, 1.0, -0.3])
    g = ms.grad(plain)
    got = g(x)
    assert g.backend == "numpy"
    assert "no loops" in g.fallback_reason and "S2SGRAD_BACKEND=numba" in g.fallback_reason
    _is_whole_and_clean(g.fallback_reason)
    np.testing.assert_allclose(got, np.sin(x) + x * np.cos(x))
    g_loop = ms.grad(looping)
    np.testing.assert_allclose(g_loop(x), np.sin(x) + x * np.cos(x))
    assert g_loop.backend == "numba" and g_loop.fallback_reason is None
    monkeypatch.setenv("S2SGRAD_BACKEND", "numba")          # compile loop-free code too
    g_forced = ms.grad(plain)
    np.testing.assert_allclose(g_forced(x), got)
    assert g_forced.backend == "numba"


def test_unknown_backend_setting_is_refused_with_the_choices(monkeypatch):
    import pytest
    monkeypatch.setenv("S2SGRAD_BACKEND", "cuda")
    with pytest.raises(ValueError, match="auto, numba, python"):
        ms.grad(plain)(np.ones(2))


def counted_loop(x):
    s = 0.0
    for i in range(x.shape[0]):
        s = s + np.cos(x[i]) * x[i]
    return s


def test_a_slow_first_compile_says_so_once_on_stderr_unless_quiet(monkeypatch, capfd):
    import time
    from s2sgrad.backend import numba_backend
    monkeypatch.setenv("S2SGRAD_BACKEND", "numba")
    monkeypatch.setattr(numba_backend, "COMPILE_NOTICE_AFTER_S", 0.0)   # any compile is slow
    monkeypatch.setenv("S2SGRAD_QUIET", "1")
    ms.grad(counted_loop)(np.ones(3))
    time.sleep(0.2)
    assert "s2sgrad: compiling" not in capfd.readouterr().err
    monkeypatch.delenv("S2SGRAD_QUIET")
    g = ms.grad(fresh_function(counted_loop))      # a new object: grad(counted_loop) is kept
    g(np.ones(3))
    g(np.ones(4))                       # same types: no compile, no second line
    time.sleep(0.2)
    err = capfd.readouterr().err
    assert err.count("s2sgrad: compiling") == 1 and "S2SGRAD_QUIET=1" in err, err


def test_a_helper_numba_does_not_know_at_all_is_reported_as_s2sgrads_gap():
    """Numba's "Unknown attribute 'x' of type Module(s2sgrad.runtime)" (a helper with no
    Numba version at all) reads as s2sgrad's gap, naming the helper and the user's line."""
    from s2sgrad.backend.reasons import explain
    source = ("def f_value_and_grad(x):\n"
              "    # grad of: w, v = np.linalg.eigh(a)  (model.py:7)\n"
              "    da = rt.made_up_adjoint(dw, a)\n")
    numba_text = ("Failed in nopython mode pipeline (step: nopython frontend)\n"
                  "Unknown attribute 'made_up_adjoint' of type Module(<module "
                  "'s2sgrad.runtime' from '/x/s2sgrad/runtime.py'>)\n"
                  "During: typing of get attribute at /tmp/c/f_value_and_grad.py (3)")
    reason = explain(Exception(numba_text), "/tmp/c/f_value_and_grad.py", source)
    assert "s2sgrad has no Numba version of rt.made_up_adjoint" in reason, reason
    assert "gradient of `w, v = np.linalg.eigh(a)` (model.py:7)" in reason, reason
    assert "gap in s2sgrad's Numba support" in reason, reason
    _is_whole_and_clean(reason)
