"""Forward mode: s2sgrad.jvp against the Numba forward, and jacfwd against ten jvps (by hand).

    python benchmarks/bench_forward.py

Threads pinned to 1, medians of repeated calls, in one run.  For each loop workload of
bench_workloads.py: the user's function compiled by Numba (the forward alone), and
s2sgrad's generated JVP (primal and tangent in one pass) called through ``s2sgrad.jvp``
and called directly (the compiled function, without the argument checks).  Issue 11's
target: jvp <= 2x the Numba forward.  Then jacfwd of an R^10 -> R^10 loop function
against ten direct jvp calls (target: <= 3x).  Every tangent is checked against central
finite differences first.
"""
import sys

import harness  # noqa: F401  (pins threads before numpy is imported)
import numba
import numpy as np

import s2sgrad
from harness import median_time, table
from bench_workloads import huber_path, newton_roots, pairwise, recurrence, rk4
from s2sgrad.api.forward import forward_function


def mix(x):
    """An R^10 -> R^10 loop: 200 sweeps of coupled tanh updates, in place."""
    n = x.shape[0]
    y = np.zeros(n)
    for step in range(200):
        for i in range(n):
            j = (i + 1) % n
            y[i] = np.tanh(0.5 * y[j] + x[i] * x[j] + 0.1 * y[i])
    return y


def workloads():
    rng = np.random.default_rng(0)
    return [
        ("recurrence n=10,000", recurrence, (0.7, rng.normal(size=10_000))),
        ("rk4 Lotka-Volterra 500 steps", rk4, (1.1, 0.4, np.array([1.0, 0.5]))),
        ("branch per element (Huber path, n=10,000)", huber_path,
         (rng.normal(size=10_000), 0.5)),
        ("while-loop Newton solver (n=2,000)", newton_roots, (rng.normal(size=2_000),)),
        ("pairwise O(n^2) (n=300)", pairwise, (rng.normal(size=300),)),
    ]


def _direction(value, rng):
    return rng.normal(size=np.shape(value)) if np.ndim(value) else float(rng.normal())


def _central(fn, args, v, eps=1e-6):
    plus = fn(*[a + eps * t for a, t in zip(args, v)])
    minus = fn(*[a - eps * t for a, t in zip(args, v)])
    return (np.asarray(plus) - np.asarray(minus)) / (2 * eps)


def main(words):
    rng = np.random.default_rng(1)
    rows = []
    for name, fn, args in workloads():
        if words and not any(w in name or w in fn.__name__ for w in words):
            continue
        v = tuple(_direction(a, rng) for a in args)
        forward = numba.njit(fn)
        value, tangent = s2sgrad.jvp(fn, args, v)
        np.testing.assert_allclose(value, forward(*args), rtol=1e-10)
        np.testing.assert_allclose(tangent, _central(fn, args, v), rtol=1e-5, atol=1e-8)
        compiled = forward_function(fn, tuple(range(len(args))), False, False)
        direct = compiled._compiled
        t_fwd = median_time(forward, *args)
        t_api = median_time(s2sgrad.jvp, fn, args, v)
        t_direct = median_time(direct, *args, *v)
        rows.append([name, compiled.backend, f"{t_fwd * 1e3:.3f}", f"{t_api * 1e3:.3f}",
                     f"{t_direct * 1e3:.3f}", f"{t_api / t_fwd:.2f}x",
                     f"{t_direct / t_fwd:.2f}x"])
        print(f"done: {name}", file=sys.stderr)
    table(rows, ["workload", "backend", "numba fwd ms", "jvp ms", "jvp direct ms",
                 "jvp / fwd", "direct / fwd"])

    x = rng.normal(size=10)
    jac = s2sgrad.jacfwd(mix)
    J = jac(x)
    fd = np.stack([_central(mix, (x,), (e,)) for e in np.eye(10)], axis=-1)
    np.testing.assert_allclose(J, fd, rtol=1e-5, atol=1e-8)
    forward = numba.njit(mix)
    one = forward_function(mix, (0,), False, False)
    s2sgrad.jvp(mix, x, np.ones(10))
    direct = one._compiled
    basis = list(np.eye(10))
    t_fwd = median_time(forward, x)
    t_jac = median_time(jac, x)
    t_ten = median_time(lambda: [direct(x, e) for e in basis])
    t_ten_api = median_time(lambda: [s2sgrad.jvp(mix, x, e) for e in basis])
    print()
    table([["jacfwd R^10 -> R^10 loop (mix)", jac.backend, f"{t_fwd * 1e3:.3f}",
            f"{t_ten * 1e3:.3f}", f"{t_ten_api * 1e3:.3f}", f"{t_jac * 1e3:.3f}",
            f"{t_jac / t_ten:.2f}x", f"{t_jac / t_fwd:.1f}x"]],
          ["workload", "backend", "numba fwd ms", "10 jvps direct ms", "10 jvps api ms",
           "jacfwd ms", "jacfwd / 10 jvps", "jacfwd / fwd"])


if __name__ == "__main__":
    main(sys.argv[1:])
