"""Both backends return the same types: the value (a numpy scalar of its dtype, an array,
a Tensor, tuples with has_aux) and every gradient (like its input), for float32 and
float64, scalars and arrays, plain functions and Tensor inputs, every return structure.

Each case runs once as Python and once compiled by Numba; the two results must have
the same structure, types, dtypes and shapes, and the same numbers.
"""
import numpy as np
import pytest

import s2sgrad as ms
from s2sgrad import Tensor


def scaled_sum(x, y):
    return np.sum(x * y) * 2.0


def elementwise(x, y):
    return np.tanh(x) * y


def with_aux(x, y):
    s = np.sum(x * x)
    return s + y, s, x * 2.0


def scalar_only(x, y):
    return x * y + 1.0


def _describe(value):
    """The structure, types, dtypes and shapes of ``value`` (numbers left out)."""
    if isinstance(value, (tuple, list)):
        return (type(value).__name__, tuple(_describe(v) for v in value))
    if isinstance(value, Tensor):
        return ("Tensor", str(value.dtype), tuple(value.shape))
    if isinstance(value, np.ndarray):
        return ("ndarray", str(value.dtype), value.shape)
    return (type(value).__name__,)


def _flat(value):
    if isinstance(value, (tuple, list)):
        return [v for item in value for v in _flat(item)]
    return [np.asarray(value.asnumpy() if isinstance(value, Tensor) else value, dtype=float)]


def _inputs(kind, dtype):
    rng = np.random.default_rng(3)
    x, y = rng.standard_normal(3).astype(dtype), rng.standard_normal(3).astype(dtype)
    if kind == "arrays":
        return x, y
    if kind == "tensors":
        return Tensor(x), Tensor(y)
    if kind == "numpy-scalars":
        return dtype(0.7), dtype(-1.3)
    return 0.7, -1.3                      # Python floats


CASES = [(fn, kind) for fn in (scaled_sum, elementwise, with_aux)
         for kind in ("arrays", "tensors")] + [
    (scalar_only, "numpy-scalars"), (scalar_only, "python-floats")]
STRUCTURES = {
    "grad": dict(grad_position=0), "grad-both": dict(grad_position=(0, 1)),
    "value_and_grad": dict(grad_position=(0, 1), value=True)}


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["float32", "float64"])
@pytest.mark.parametrize("structure", sorted(STRUCTURES))
@pytest.mark.parametrize("fn,kind", CASES, ids=[f"{f.__name__}-{k}" for f, k in CASES])
def test_both_backends_return_the_same_types(monkeypatch, fn, kind, structure, dtype):
    options = dict(STRUCTURES[structure])
    make = ms.value_and_grad if options.pop("value", False) else ms.grad
    if fn is with_aux:
        options["has_aux"] = True
    args = _inputs(kind, dtype)
    results = {}
    for backend in ("python", "numba"):
        monkeypatch.setenv("S2SGRAD_BACKEND", backend)
        g = make(fn, **options)
        results[backend] = g(*args)
        assert g.backend == backend, g.fallback_reason
    assert _describe(results["numba"]) == _describe(results["python"])
    for a, b in zip(_flat(results["numba"]), _flat(results["python"])):
        np.testing.assert_allclose(a, b, rtol=1e-5 if dtype == np.float32 else 1e-12)
