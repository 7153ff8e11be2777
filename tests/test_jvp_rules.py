"""Every forward-mode (JVP) rule against central finite differences, on the cases of
tests/test_rules.py.

``test_jvp_rule`` runs ``s2sgrad.jvp`` on each case (one primitive or a few, float64
inputs in the primitive's domain) along a random direction and compares the output
tangent with a central difference of the function: every case under the Python backend,
``NUMBA_IDS`` under Numba too.  The cases use every differentiable rule of the table
(``tests/test_rules.py::test_every_rule_is_covered``), so this is the forward-mode check
of the whole table.  A case that reaches a primitive with
a VJP rule but no JVP rule must raise MissingRuleError naming it; ``MISSING`` lists
those primitives, and ``test_missing_jvp_rules_are_listed`` keeps the list exact (a rule
added must leave it, a rule lost shows up).
"""
import numpy as np
import pytest

import s2sgrad
from s2sgrad.api.forward import forward_function
from s2sgrad.errors import MissingRuleError
from s2sgrad.rules import all_rules
from s2sgrad.rules.jvp_registry import jvp_lookup
from test_rules import CASES

#: differentiable VJP rules without a forward-mode rule (registered or derived):
#: jvp / jacfwd through them raise MissingRuleError and say to use grad
MISSING = []

#: forward rules that give no tangent for some arguments the VJP rule differentiates:
#: a differentiated value reaching one raises MissingRuleError naming the argument
PARTIAL = {}

#: primitives the forward pass differentiates itself (no rule looked up)
BUILT_IN = {"assign", "list", "getitem"}


def test_missing_jvp_rules_are_listed():
    missing = sorted(r.name for p, r in all_rules() if r.differentiable
                     and jvp_lookup(p) is None and r.name not in BUILT_IN)
    assert missing == MISSING, (
        f"new JVP rules: remove {sorted(set(MISSING) - set(missing))} from MISSING; "
        f"VJP rules without a JVP rule: add {sorted(set(missing) - set(MISSING))}")
    partial = {}
    for p, r in all_rules():
        rule = jvp_lookup(p) if r.differentiable and r.name not in BUILT_IN else None
        lacking = sorted(set(r.diff_params) - set(r.refused) - set(rule.tangent_params)) \
            if rule is not None else []
        if lacking:
            partial[r.name] = lacking
    assert partial == PARTIAL


def _direction(value, rng):
    if isinstance(value, np.ndarray):
        return rng.uniform(-1.0, 1.0, size=value.shape)
    return float(rng.uniform(-1.0, 1.0))


def _leaves(value):
    if isinstance(value, (tuple, list)):
        return [leaf for item in value for leaf in _leaves(item)]
    return [np.asarray(value, dtype=np.float64)]


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory):
    import os
    return os.environ.get("S2SGRAD_CACHE_DIR") or str(tmp_path_factory.mktemp("jvp_cache"))


#: a representative subset under Numba too (each a compile): elementwise, products,
#: reductions, loops, linear algebra, the forward helpers with Numba forms
NUMBA_IDS = {"mul_outer", "matmul_2d_2d", "list_append", "det", "cross"}
PARAMS = [pytest.param(c, "python", id=c.id) for c in CASES]
PARAMS += [pytest.param(c, "numba", id=c.id + "-numba") for c in CASES if c.id in NUMBA_IDS]


def test_the_numba_subset_names_cases():
    assert NUMBA_IDS <= {c.id for c in CASES}


@pytest.mark.parametrize("case,backend", PARAMS)
def test_jvp_rule(case, backend, cache_dir, monkeypatch):
    monkeypatch.setenv("S2SGRAD_CACHE_DIR", cache_dir)
    monkeypatch.setenv("S2SGRAD_BACKEND", backend)
    if case.xfail:
        pytest.skip(case.xfail)
    positions = (case.pos,) if isinstance(case.pos, int) else tuple(case.pos)
    rng = np.random.default_rng(7)
    args = list(case.args)
    v = [_direction(args[p], rng) for p in positions]

    tangents = [None] * len(args)
    for p, t in zip(positions, v):
        tangents[p] = t
    forward = forward_function(case.fn, positions, False, False)
    try:
        out, tangent = forward.jvp_call(tuple(args), tuple(tangents))
    except MissingRuleError as exc:
        partly = any(f"no tangent for the argument `{a}`" in str(exc)
                     for a in PARTIAL.get(exc.construct, ()))
        assert exc.construct in MISSING or partly, f"{exc.construct} has no JVP rule: {exc}"
        assert "grad" in str(exc) and "jvp_rule" in str(exc)
        return

    def at(s):
        moved = list(args)
        for p, t in zip(positions, v):
            moved[p] = args[p] + s * case.eps * t
        return case.fn(*moved)
    fd = [(a - b) / (2 * case.eps) for a, b in zip(_leaves(at(1.0)), _leaves(at(-1.0)))]
    for got, want in zip(_leaves(tangent), fd):
        np.testing.assert_allclose(got, want, rtol=max(case.rtol, 1e-5), atol=max(case.atol, 1e-6))
    for got, want in zip(_leaves(out), _leaves(case.fn(*args))):
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
