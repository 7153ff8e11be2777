"""Benchmarks of s2sgrad on scalar loops, against hand-written Numba adjoints (run by hand).

    python benchmarks/bench_loops.py

Two computations, each timed in one run (medians of repeated calls, BLAS and
Numba threads pinned to 1) for: the Numba forward alone, a hand-written Numba
adjoint (value and gradient), and s2sgrad's generated value-and-gradient.
Ratios are against the hand-written adjoint of the same run.

- recurrence: h = tanh(w*h + x[i]), n = 10,000; gradient w.r.t. w and x
- heat: 1-D explicit stencil, 1000 cells x 200 steps, two nested loops
  un[i] = u[i] + k*(u[i-1] - 2*u[i] + u[i+1]); loss sum(u**2); gradient
  w.r.t. the initial state and k. The hand-written adjoint stores the
  trajectory (the straightforward one).
"""
import os

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")
os.environ.setdefault("NUMBA_NUM_THREADS", "1")

import statistics  # noqa: E402
import time  # noqa: E402

import numba  # noqa: E402
import numpy as np  # noqa: E402

import s2sgrad  # noqa: E402


# ------------------------------------------------------------ recurrence

def recurrence(w, x):
    h = 0.0
    for i in range(x.shape[0]):
        h = np.tanh(w * h + x[i])
    return h


recurrence_forward = numba.njit(recurrence)


@numba.njit
def recurrence_adjoint(w, x):
    n = x.shape[0]
    hs = np.empty(n + 1)
    hs[0] = 0.0
    for i in range(n):
        hs[i + 1] = np.tanh(w * hs[i] + x[i])
    dh = 1.0
    dw = 0.0
    dx = np.zeros_like(x)
    for i in range(n - 1, -1, -1):
        da = dh * (1.0 - hs[i + 1] ** 2)
        dw += da * hs[i]
        dx[i] += da
        dh = da * w
    return hs[n], (dw, dx)


# ------------------------------------------------------------ heat stencil

def heat(u0, k):
    u = u0.copy()
    un = u0.copy()
    for step in range(200):
        for i in range(1, u.shape[0] - 1):
            un[i] = u[i] + k * (u[i - 1] - 2.0 * u[i] + u[i + 1])
        u = un.copy()
    return np.sum(u ** 2)


heat_forward = numba.njit(heat)


@numba.njit
def heat_adjoint(u0, k):
    steps = 200
    n = u0.shape[0]
    traj = np.empty((steps + 1, n))
    traj[0] = u0
    for s in range(steps):
        u = traj[s]
        un = traj[s + 1]
        un[0] = u[0]
        un[n - 1] = u[n - 1]
        for i in range(1, n - 1):
            un[i] = u[i] + k * (u[i - 1] - 2.0 * u[i] + u[i + 1])
    loss = np.sum(traj[steps] ** 2)
    du = 2.0 * traj[steps]
    dk = 0.0
    for s in range(steps - 1, -1, -1):
        u = traj[s]
        dprev = np.zeros(n)
        dprev[0] = du[0]
        dprev[n - 1] = du[n - 1]
        for i in range(1, n - 1):
            g = du[i]
            dprev[i] += g * (1.0 - 2.0 * k)
            dprev[i - 1] += g * k
            dprev[i + 1] += g * k
            dk += g * (u[i - 1] - 2.0 * u[i] + u[i + 1])
        du = dprev
    return loss, (du, dk)


def median_time(fn, *args, repeat=15):
    fn(*args)
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn(*args)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def run(name, fn, forward, adjoint, args, positions):
    generated = s2sgrad.value_and_grad(fn, positions)
    value, grads = generated(*args)
    ref_value, ref_grads = adjoint(*args)
    for g, r in zip(grads, ref_grads):
        np.testing.assert_allclose(g, r, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(value, ref_value, rtol=1e-12)
    t_fwd = median_time(forward, *args)
    t_hand = median_time(adjoint, *args)
    t_gen = median_time(generated, *args)
    print(f"{name}: backend {generated.backend}")
    print(f"  numba forward            {t_fwd * 1e3:9.3f} ms   {t_fwd / t_hand:6.2f}x")
    print(f"  hand-written adjoint     {t_hand * 1e3:9.3f} ms   {1.0:6.2f}x")
    print(f"  s2sgrad value_and_grad   {t_gen * 1e3:9.3f} ms   {t_gen / t_hand:6.2f}x")
    return t_gen / t_hand


def main():
    rng = np.random.default_rng(0)
    run("recurrence (n=10,000)", recurrence, recurrence_forward, recurrence_adjoint,
        (0.7, rng.normal(size=10_000)), (0, 1))
    run("heat stencil (1000 cells x 200 steps)", heat, heat_forward, heat_adjoint,
        (rng.normal(size=1000), 0.2), (0, 1))


if __name__ == "__main__":
    main()
