"""Loop workloads: s2sgrad's value-and-gradient against Numba (run by hand).

    python benchmarks/bench_workloads.py            # all workloads
    python benchmarks/bench_workloads.py rk4 heat   # those whose name contains a word

For every workload, in one run, with threads pinned to 1 and medians of
repeated calls: the user's function compiled by Numba (the forward alone),
a hand-written Numba adjoint where one is given (value and gradient, storing
what it needs), and s2sgrad's generated value-and-gradient (whatever backend
it chose; the table says which).  Ratios are against the Numba forward and
against the hand-written adjoint of the same run.  Before timing, every
gradient is checked against central finite differences, so a fast wrong
answer cannot pass.

Issue 9's targets: recurrence <= 1.0x the hand adjoint, both stencil
spellings <= 1.2x it, every other loop workload <= 5x its Numba forward.
"""
import sys

import harness  # noqa: F401  (pins threads before numpy is imported)
import numba
import numpy as np

from harness import median_time, table, time_gradient


# ------------------------------------------------------------ recurrence

def recurrence(w, x):
    h = 0.0
    for i in range(x.shape[0]):
        h = np.tanh(w * h + x[i])
    return h


@numba.njit(cache=True)
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


# ------------------------------------------------------------ 1-D heat stencil, two spellings

def heat_copy_after(u0, k):
    u = u0.copy()
    un = u0.copy()
    for step in range(100):
        for i in range(1, u.shape[0] - 1):
            un[i] = u[i] + k * (u[i - 1] - 2.0 * u[i] + u[i + 1])
        u = un.copy()
    return np.sum(u ** 2)


def heat_copy_top(u0, k):
    u = u0.copy()
    for step in range(100):
        un = u.copy()
        for i in range(1, u.shape[0] - 1):
            un[i] = u[i] + k * (u[i - 1] - 2.0 * u[i] + u[i + 1])
        u = un
    return np.sum(u ** 2)


@numba.njit(cache=True)
def heat_adjoint(u0, k):
    steps = 100
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


# ------------------------------------------------------------ 2-D heat stencil

def heat_2d(u0, k):
    u = u0.copy()
    for step in range(20):
        un = u.copy()
        for i in range(1, u.shape[0] - 1):
            for j in range(1, u.shape[1] - 1):
                un[i, j] = u[i, j] + k * (u[i - 1, j] + u[i + 1, j] + u[i, j - 1]
                                          + u[i, j + 1] - 4.0 * u[i, j])
        u = un
    return np.sum(u ** 2)


@numba.njit(cache=True)
def heat_2d_adjoint(u0, k):
    steps = 20
    n, m = u0.shape
    traj = np.empty((steps + 1, n, m))
    traj[0] = u0
    for s in range(steps):
        u = traj[s]
        un = traj[s + 1]
        un[:, :] = u
        for i in range(1, n - 1):
            for j in range(1, m - 1):
                un[i, j] = u[i, j] + k * (u[i - 1, j] + u[i + 1, j] + u[i, j - 1]
                                          + u[i, j + 1] - 4.0 * u[i, j])
    loss = np.sum(traj[steps] ** 2)
    du = 2.0 * traj[steps]
    dk = 0.0
    for s in range(steps - 1, -1, -1):
        u = traj[s]
        dprev = du.copy()
        for i in range(1, n - 1):
            for j in range(1, m - 1):
                g = du[i, j]
                dprev[i, j] += g * (-4.0 * k)
                dprev[i - 1, j] += g * k
                dprev[i + 1, j] += g * k
                dprev[i, j - 1] += g * k
                dprev[i, j + 1] += g * k
                dk += g * (u[i - 1, j] + u[i + 1, j] + u[i, j - 1] + u[i, j + 1]
                           - 4.0 * u[i, j])
        du = dprev
    return loss, (du, dk)


# ------------------------------------------------------------ vector RNN

def rnn(W, U, xs):
    h = np.zeros(W.shape[0])
    for t in range(xs.shape[0]):
        h = np.tanh(W @ h + U @ xs[t])
    return np.sum(h ** 2)


@numba.njit(cache=True)
def rnn_adjoint(W, U, xs):
    T = xs.shape[0]
    H = W.shape[0]
    hs = np.zeros((T + 1, H))
    for t in range(T):
        hs[t + 1] = np.tanh(W @ hs[t] + U @ xs[t])
    loss = np.sum(hs[T] ** 2)
    dh = 2.0 * hs[T]
    dW = np.zeros_like(W)
    dU = np.zeros_like(U)
    dxs = np.zeros_like(xs)
    for t in range(T - 1, -1, -1):
        da = dh * (1.0 - hs[t + 1] ** 2)
        dW += np.outer(da, hs[t])
        dU += np.outer(da, xs[t])
        dxs[t] = U.T @ da
        dh = W.T @ da
    return loss, (dW, dU, dxs)


# ------------------------------------------------------------ RK4 integrator

def rk4(a, b, y0):
    # Lotka-Volterra predator-prey, 500 steps of classical Runge-Kutta
    x = y0[0]
    y = y0[1]
    h = 0.01
    for step in range(500):
        k1x = a * x - b * x * y
        k1y = b * x * y - y
        x2 = x + 0.5 * h * k1x
        y2 = y + 0.5 * h * k1y
        k2x = a * x2 - b * x2 * y2
        k2y = b * x2 * y2 - y2
        x3 = x + 0.5 * h * k2x
        y3 = y + 0.5 * h * k2y
        k3x = a * x3 - b * x3 * y3
        k3y = b * x3 * y3 - y3
        x4 = x + h * k3x
        y4 = y + h * k3y
        k4x = a * x4 - b * x4 * y4
        k4y = b * x4 * y4 - y4
        x = x + h / 6.0 * (k1x + 2.0 * k2x + 2.0 * k3x + k4x)
        y = y + h / 6.0 * (k1y + 2.0 * k2y + 2.0 * k3y + k4y)
    return x * x + y * y


# ------------------------------------------------------------ branch per element

def huber_path(x, delta):
    total = 0.0
    prev = 0.0
    for i in range(x.shape[0]):
        r = x[i] - prev
        if abs(r) <= delta:
            total = total + 0.5 * r * r
        else:
            total = total + delta * (abs(r) - 0.5 * delta)
        prev = x[i]
    return total


# ------------------------------------------------------------ while-loop solver

def newton_roots(c):
    # solve z**3 + z = c[i] for every element by Newton's method
    total = 0.0
    for i in range(c.shape[0]):
        z = 0.0
        step = 1.0
        while abs(step) > 1e-12:
            step = (z ** 3 + z - c[i]) / (3.0 * z ** 2 + 1.0)
            z = z - step
        total = total + z * z
    return total


# ------------------------------------------------------------ pairwise loop

def pairwise(x):
    # soft-sphere energy of points on a line, O(n^2)
    energy = 0.0
    n = x.shape[0]
    for i in range(n):
        for j in range(i + 1, n):
            d = x[i] - x[j]
            energy = energy + 1.0 / (1.0 + d * d)
    return energy


def workloads():
    rng = np.random.default_rng(0)
    u1 = rng.normal(size=500)
    return [
        ("recurrence n=10,000", recurrence, recurrence_adjoint, (0.7, rng.normal(size=10_000)), (0, 1)),
        ("heat 1-D, copy after the loop (500x100)", heat_copy_after, heat_adjoint, (u1, 0.2), (0, 1)),
        ("heat 1-D, copy at the top (500x100)", heat_copy_top, heat_adjoint, (u1, 0.2), (0, 1)),
        ("heat 2-D (48x48x20)", heat_2d, heat_2d_adjoint, (rng.normal(size=(48, 48)), 0.1), (0, 1)),
        ("vector rnn H=32 T=200", rnn, rnn_adjoint,
         (0.3 * rng.normal(size=(32, 32)) / 4, rng.normal(size=(32, 8)) / 4, rng.normal(size=(200, 8))),
         (0, 1, 2)),
        ("rk4 Lotka-Volterra 500 steps", rk4, None, (1.1, 0.4, np.array([1.0, 0.5])), (0, 1, 2)),
        ("branch per element (Huber path, n=10,000)", huber_path, None, (rng.normal(size=10_000), 0.5), (0, 1)),
        ("while-loop Newton solver (n=2,000)", newton_roots, None, (rng.normal(size=2_000),), (0,)),
        ("pairwise O(n^2) (n=300)", pairwise, None, (rng.normal(size=300),), (0,)),
    ]


def main(words):
    rows = []
    for name, fn, hand, args, positions in workloads():
        if words and not any(w in name or w in fn.__name__ for w in words):
            continue
        generated, first, value, grads, t_fwd, t_gen = time_gradient(fn, args, positions)
        if hand is not None:
            hand_value, hand_grads = hand(*args)
            np.testing.assert_allclose(value, hand_value, rtol=1e-10)
            for g, h in zip(grads, hand_grads):
                np.testing.assert_allclose(g, h, rtol=1e-8, atol=1e-12)
        t_hand = median_time(hand, *args) if hand is not None else None
        rows.append([name, generated.backend, f"{first:.1f} s", f"{t_fwd * 1e3:.3f}",
                     "-" if t_hand is None else f"{t_hand * 1e3:.3f}", f"{t_gen * 1e3:.3f}",
                     f"{t_gen / t_fwd:.2f}x",
                     "-" if t_hand is None else f"{t_gen / t_hand:.2f}x"])
        print(f"done: {name}", file=sys.stderr)
    table(rows, ["workload", "backend", "first call", "numba fwd ms", "hand adjoint ms",
                 "s2sgrad ms", "vs fwd", "vs hand"])


if __name__ == "__main__":
    main(sys.argv[1:])
