"""The GradBench evals' gradients (benchmarks/gradbench/, the code the README's table
times) against central differences of the evals' own numpy functions, at small sizes, under
plain Python and the default backend (Numba compiles what loops): the benchmark runner
checks s2sgrad against JAX only when run by hand, and an lstm gradient went wrong between
two such runs (a view of a row written in the loop, tests/test_aliasing.py)."""
import pathlib
import sys

import numpy as np
import pytest

import s2sgrad
from s2sgrad.testing import numerical_grad

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "benchmarks"
                       / "gradbench"))
import lstm  # noqa: E402
import ode  # noqa: E402

EVALS = {
    "lstm": (lstm.lstm_objective, lambda: lstm.inputs(l=2, c=4, b=3), (0, 1)),
    "ode": (ode.ode_last, lambda: (np.linspace(0.5, 1.5, 6), 4), (0,)),
}


@pytest.mark.parametrize("backend", ["python", "auto"])
@pytest.mark.parametrize("name", list(EVALS))
def test_eval_gradient_matches_central_differences(name, backend, monkeypatch):
    monkeypatch.setenv("S2SGRAD_BACKEND", backend)
    fn, make, positions = EVALS[name]
    args = make()
    got = s2sgrad.grad(fn, positions)(*args)
    got = got if isinstance(got, tuple) else (got,)
    for g, p in zip(got, positions):
        np.testing.assert_allclose(g, numerical_grad(fn, args, p), rtol=1e-6, atol=1e-9,
                                   err_msg=f"{name}: argument {p}")
