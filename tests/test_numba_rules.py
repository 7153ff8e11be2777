"""The Numba versions of the newer rules' helpers (``s2sgrad/backend/numba_rules.py``):
grouped functions, each one Numba compile, must run compiled (``g.backend == 'numba'``),
match central finite differences and give the Python backend's values."""
import numpy as np
import pytest

import s2sgrad
from s2sgrad.testing import check_grad

rng = np.random.default_rng(2468)
B23 = rng.uniform(-1.0, 1.0, (2, 3))
W6 = np.arange(1.0, 7.0) / 6.0
W12 = np.arange(1.0, 13.0) / 12.0
W34 = np.arange(1.0, 13.0).reshape(3, 4) / 12.0
W43 = np.arange(1.0, 13.0).reshape(4, 3) / 12.0
W44 = np.arange(1.0, 17.0).reshape(4, 4) / 16.0
W66 = np.arange(1.0, 37.0).reshape(6, 6) / 36.0
COUNTS = np.array([1, 0, 2, 1, 3, 1])
PICK = np.array([5, 0, 5, 2, 3])
XP = np.array([0.0, 0.5, 1.25, 2.0])
AT = np.array([-0.3, 0.2, 0.7, 1.4, 1.9, 2.5])
MASK6 = np.array([0.0, 1.0, 1.0, 1.0, 1.0, 0.0])


def array_helpers(x, y, v):
    """cumprod, kron, repeat, append, take, resize, trim_zeros, vander, convolve,
    correlate: the Numba-compiled adjoints of each."""
    return (np.sum(np.sin(np.cumprod(x)) * W6)
            + np.sum(np.sin(np.kron(y, B23)) * W66[:4, :])
            + np.sum(np.sin(np.repeat(x, 2)) * np.repeat(W6, 2))
            + np.sum(np.sin(np.repeat(x, COUNTS)))
            + np.sum(np.sin(np.append(x, y)) * W12[:10])
            + np.sum(np.sin(np.take(x, PICK)))
            + np.sum(np.sin(np.resize(y, (3, 3))))
            + np.sum(np.sin(np.trim_zeros(x * MASK6)))
            + np.sum(np.sin(np.vander(v)) * W44[:3, :3])
            + np.sum(np.sin(np.convolve(x, v)) * W12[:8])
            + np.sum(np.sin(np.correlate(x, v)) * W6[:4]))


def interp_helpers(x, xp, fp):
    """interp, and the joins and choices: stacks, select, partition of a vector."""
    return (np.sum(np.sin(np.interp(x, xp, fp)) * W6)
            + np.sum(np.sin(np.vstack((x, x * 2.0))) * W12.reshape(2, 6))
            + np.sum(np.sin(np.hstack((fp, xp))) * W12[:8])
            + np.sum(np.sin(np.column_stack((fp, xp))) * W12[:8].reshape(4, 2))
            + np.sum(np.sin(np.select([x > 1.0, x < 0.0], [x * 2.0, np.sin(x)], fp[0])) * W6)
            + np.sum(np.sin(np.partition(x, 2)) * W6)
            + np.sin(np.nanmax(x)) + np.sin(np.average(x)) + np.average(x, weights=x * x)
            + np.sin(np.median(x)) + np.quantile(fp, 0.3)
            + np.sum(np.sin(np.take_along_axis(x, PICK, 0)))
            + split_pieces(x))


def split_pieces(x):
    first, second, third = np.split(x, 3)
    return np.sum(np.sin(first) * third) + np.sum(second * second)


def linalg_helpers(a, m):
    spd = a @ a.T + np.eye(3)
    return (np.sum(np.sin(np.linalg.cholesky(spd)) * W44[:3, :3])
            + np.sum(np.sin(np.linalg.pinv(m)) * W43)
            + np.sum(np.sin(np.linalg.matrix_power(a, 3)))
            + np.sum(np.sin(np.linalg.matrix_power(spd, -2)))
            + np.sum(np.sin(np.cov(m)) * W44[:3, :3])
            + np.sum(np.cov(m, rowvar=False, bias=True) * W44)
            + np.sum(np.sin(np.linalg.eigvalsh(spd)) * W6[:3]))


@pytest.mark.parametrize("fn,args,pos", [
    (array_helpers, (rng.uniform(0.5, 1.5, 6), rng.uniform(-1, 1, (2, 2)),
                     rng.uniform(-1, 1, 3)), (0, 1, 2)),
    (interp_helpers, (AT, XP, rng.uniform(-1, 1, 4)), (0, 1, 2)),
    (linalg_helpers, (rng.uniform(-1, 1, (3, 3)), np.eye(3, 4) * 2.0
                      + rng.uniform(-0.3, 0.3, (3, 4))), (0, 1)),
], ids=["arrays", "interp", "linalg"])
def test_newer_helpers_run_compiled(fn, args, pos, monkeypatch):
    monkeypatch.setenv("S2SGRAD_BACKEND", "numba")
    g = check_grad(fn, args, grad_position=pos)
    assert g.backend == "numba", g.fallback_reason
    compiled = g(*args)
    monkeypatch.setenv("S2SGRAD_BACKEND", "python")
    for got, want in zip(compiled, s2sgrad.grad(fn, grad_position=pos)(*args)):
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)
