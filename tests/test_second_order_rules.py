"""Second derivatives of every rule: ``hvp`` on each case of tests/test_rules.py against
central differences of s2sgrad's own gradient.

``hvp`` runs the forward-mode transform over the generated value-and-gradient code
(``compiler/pipeline_higher.py``), so each case exercises the JVP rules of the
primitives it calls and of the ``rt.*`` adjoint helpers its gradient calls
(``rules/runtime_jvp.py``).  Every case with a scalar result and float inputs runs under
the Python backend; ``NUMBA_IDS`` under Numba too (compiles dominate the suite's time).
A case in ``NO_SECOND_ORDER`` must be refused with an error naming the user's line (the
case's own file, never a generated module) and saying what to do instead.
"""
import os

import numpy as np
import pytest

import s2sgrad as ms
from s2sgrad.api.higher import HvpFunction
from test_rules import CASES

#: cases whose second derivative is refused, and why (each a rule still missing)
NO_SECOND_ORDER = {}

#: cases whose gradient is not differentiable where the case evaluates it
NOT_TWICE_DIFFERENTIABLE = {}

#: cases refused at run time (DerivativeNotAvailableError, naming the case's line): the
#: second derivative does not exist as the rules compute it at the case's values
REFUSED_AT_THESE_VALUES = {
    "svd_repeated_singular_value": "svd's singular vectors at a repeated singular value",
    # a repeated eigenvalue: the eigenvectors are not functions of the matrix; the
    # adjoint's tangent would leave out the tied pairs' terms (a wrong Hessian)
    "eigh_repeated_eigenvalue": "eigh at a repeated eigenvalue",
}

#: a representative subset under Numba: elementwise, products, loops, linear helpers
NUMBA_IDS = {"mul_outer", "matmul_2d_2d", "list_append", "branch_assign_then", "exp",
             "math_pow"}


def _scalar(value):
    return not isinstance(value, (tuple, list)) and np.ndim(value) == 0


def _float(value):
    return isinstance(value, float) or (isinstance(value, np.ndarray) and value.dtype.kind == "f")


def _positions(case):
    return (case.pos,) if isinstance(case.pos, int) else tuple(case.pos)


SECOND = [c for c in CASES if not c.xfail and _scalar(c.fn(*c.args))
          and all(_float(c.args[p]) for p in _positions(c))]
PARAMS = [pytest.param(c, "python", id=c.id + "-python") for c in SECOND]
PARAMS += [pytest.param(c, "numba", id=c.id + "-numba") for c in SECOND if c.id in NUMBA_IDS]


def test_the_lists_name_cases():
    ids = {c.id for c in SECOND}
    assert set(NO_SECOND_ORDER) <= ids and set(NOT_TWICE_DIFFERENTIABLE) <= ids
    assert set(REFUSED_AT_THESE_VALUES) <= ids
    assert NUMBA_IDS <= ids
    assert len(SECOND) > 450


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory):
    return os.environ.get("S2SGRAD_CACHE_DIR") or str(tmp_path_factory.mktemp("hvp_cache"))


@pytest.mark.parametrize("case,backend", PARAMS)
def test_hvp_rule(case, backend, cache_dir, monkeypatch):
    monkeypatch.setenv("S2SGRAD_CACHE_DIR", cache_dir)
    monkeypatch.setenv("S2SGRAD_BACKEND", backend)
    if case.id in NOT_TWICE_DIFFERENTIABLE:
        pytest.skip(NOT_TWICE_DIFFERENTIABLE[case.id])
    positions = _positions(case)
    args = list(case.args)
    rng = np.random.default_rng(11)
    v = [rng.uniform(-1.0, 1.0, size=np.shape(args[p])) if np.ndim(args[p])
         else float(rng.uniform(-1.0, 1.0)) for p in positions]
    if case.id in NO_SECOND_ORDER or case.id in REFUSED_AT_THESE_VALUES:
        with pytest.raises((ms.errors.MissingRuleError, NotImplementedError)) as info:
            HvpFunction(case.fn, positions).tangents_of_gradient(tuple(args), tuple(v))
        message = str(info.value)
        assert "grad" in message
        assert isinstance(info.value, ms.errors.MissingRuleError), message   # names a line
        assert str(info.value.location).startswith(case.fn.__code__.co_filename), message
        return
    hv = HvpFunction(case.fn, positions).tangents_of_gradient(tuple(args), tuple(v))
    gradient = ms.grad(case.fn, positions)

    def at(s):
        moved = list(args)
        for p, t in zip(positions, v):
            moved[p] = args[p] + s * case.eps * t
        out = gradient(*moved)
        return out if len(positions) > 1 else (out,)
    fd = [(np.asarray(a) - np.asarray(b)) / (2 * case.eps) for a, b in zip(at(1.0), at(-1.0))]
    for got, want in zip(hv, fd):
        np.testing.assert_allclose(got, want, rtol=max(case.rtol, 1e-4) * 10,
                                   atol=max(case.atol, 1e-6) * 10)
