"""Held-out loop workloads: s2sgrad's value-and-gradient against Numba (run by hand).

    python benchmarks/bench_heldout.py              # all programs
    python benchmarks/bench_heldout.py gru wave     # those whose name contains a word

bench_workloads.py holds the loop workloads the generator was tuned on; these are
other programs of the same classes (ODE integrators, stencils, RNNs, pairwise loops,
while-loop solvers, branches in loops), written the way a user would, to check that
issue 9's target -- every loop workload <= 5x its Numba forward -- holds beyond the
tuned set.  For every program, in one run, with threads pinned to 1 and medians of
repeated calls: the user's function compiled by Numba (the forward alone) and
s2sgrad's generated value-and-gradient (whatever backend it chose; the table says
which, and the first call's time, compile included).  Before timing, every gradient
is checked against central finite differences and the value against Numba's.
The generated code goes to a fresh temporary cache folder, so that the first call's
time includes generating and compiling it (S2SGRAD_CACHE_DIR is overridden).
"""
import math
import os
import sys
import tempfile

import harness  # noqa: F401  (pins threads before numpy is imported)
import numpy as np

from harness import table, time_gradient


# ------------------------------------------------------------ ODE integrators

def euler_vdp(mu, y0):
    # Van der Pol oscillator, explicit Euler, scalar state
    x = y0[0]
    v = y0[1]
    h = 0.005
    for step in range(2000):
        ax = v
        av = mu * (1.0 - x * x) * v - x
        x = x + h * ax
        v = v + h * av
    return x * x + v * v


def euler_array(A, y0):
    # y' = A y - y**3 on a vector, explicit Euler on arrays
    y = y0.copy()
    h = 0.01
    for step in range(200):
        y = y + h * (A @ y - y ** 3)
    return np.sum(y ** 2)


def verlet_array(k, x0, v0):
    # velocity Verlet of independent anharmonic oscillators (array state)
    x = x0.copy()
    v = v0.copy()
    dt = 0.01
    a = -k * x - x ** 3
    for step in range(300):
        v = v + 0.5 * dt * a
        x = x + dt * v
        a = -k * x - x ** 3
        v = v + 0.5 * dt * a
    return np.sum(x * x) + 0.5 * np.sum(v * v)


def pendulum(g, damping, theta0):
    # damped pendulum, semi-implicit Euler, math.sin on scalars
    theta = theta0
    omega = 0.0
    dt = 0.002
    for step in range(3000):
        omega = omega - dt * (g * math.sin(theta) + damping * omega)
        theta = theta + dt * omega
    return theta


# ------------------------------------------------------------ stencils

def wave_2d(u0, c):
    # 2-D wave equation, leapfrog in time: two time levels
    u_prev = u0.copy()
    u = u0.copy()
    n, m = u0.shape
    for step in range(15):
        un = u.copy()
        for i in range(1, n - 1):
            for j in range(1, m - 1):
                lap = u[i - 1, j] + u[i + 1, j] + u[i, j - 1] + u[i, j + 1] - 4.0 * u[i, j]
                un[i, j] = 2.0 * u[i, j] - u_prev[i, j] + c * lap
        u_prev = u
        u = un
    return np.sum(u ** 2)


def advection_upwind(u0, vel):
    # 1-D advection, first-order upwind: the difference taken depends on the sign
    u = u0.copy()
    n = u.shape[0]
    for step in range(40):
        un = u.copy()
        for i in range(1, n - 1):
            if vel[i] > 0.0:
                un[i] = u[i] - 0.4 * vel[i] * (u[i] - u[i - 1])
            else:
                un[i] = u[i] - 0.4 * vel[i] * (u[i + 1] - u[i])
        u = un
    return np.sum(u * u)


def gauss_seidel(f, u0):
    # Gauss-Seidel sweeps for -u'' = f, in place: each update reads updated neighbours
    u = u0.copy()
    n = u.shape[0]
    h2 = 1.0 / (n * n)
    for sweep in range(30):
        for i in range(1, n - 1):
            u[i] = 0.5 * (u[i - 1] + u[i + 1] + h2 * f[i])
    return np.sum(u * u)


def heat_slices(u0, k):
    # 1-D heat equation written with slices: the whole interior updated per time step
    u = u0.copy()
    for step in range(100):
        un = u.copy()
        un[1:-1] = u[1:-1] + k * (u[:-2] - 2.0 * u[1:-1] + u[2:])
        u = un
    return np.sum(u ** 2)


def lorenz96(F, y0):
    # Lorenz-96: periodic indices with %, the tendency built element by element
    y = y0.copy()
    n = y.shape[0]
    h = 0.005
    for step in range(100):
        dy = np.empty(n)
        for i in range(n):
            dy[i] = (y[(i + 1) % n] - y[i - 2]) * y[i - 1] - y[i] + F
        y = y + h * dy
    return np.sum(y * y)


# ------------------------------------------------------------ RNNs

def gru(Wz, Wr, Wh, xs):
    # GRU-like cell on vectors, numpy, sigmoid gates
    H = Wz.shape[0]
    h = np.zeros(H)
    for t in range(xs.shape[0]):
        hx = np.concatenate((h, xs[t]))
        z = 1.0 / (1.0 + np.exp(-(Wz @ hx)))
        r = 1.0 / (1.0 + np.exp(-(Wr @ hx)))
        hc = np.tanh(Wh @ np.concatenate((r * h, xs[t])))
        h = (1.0 - z) * h + z * hc
    return np.sum(h * h)


def elman_loops(W, U, xs):
    # Elman RNN written with scalar loops over the matrices' rows
    H = W.shape[0]
    D = U.shape[1]
    h = np.zeros(H)
    for t in range(xs.shape[0]):
        hn = np.zeros(H)
        for i in range(H):
            a = 0.0
            for j in range(H):
                a += W[i, j] * h[j]
            for k in range(D):
                a += U[i, k] * xs[t, k]
            hn[i] = math.tanh(a)
        h = hn
    return np.sum(h)


def sgd_logistic(w0, X, y):
    # plain SGD on a logistic loss, one sample per step: the weights are the loop state
    w = w0.copy()
    lr = 0.1
    for epoch in range(3):
        for i in range(X.shape[0]):
            p = 1.0 / (1.0 + np.exp(-np.dot(X[i], w)))
            w = w - lr * (p - y[i]) * X[i]
    return np.sum(w * w)


# ------------------------------------------------------------ pairwise

def nbody_2d(pos, vel):
    # softened gravity in 2-D, forces accumulated pairwise, 3 Euler steps
    x = pos.copy()
    v = vel.copy()
    n = x.shape[0]
    dt = 0.01
    for step in range(3):
        f = np.zeros_like(x)
        for i in range(n):
            for j in range(i + 1, n):
                dx = x[j, 0] - x[i, 0]
                dy = x[j, 1] - x[i, 1]
                r2 = dx * dx + dy * dy + 0.01
                inv = 1.0 / (r2 * np.sqrt(r2))
                f[i, 0] += dx * inv
                f[i, 1] += dy * inv
                f[j, 0] -= dx * inv
                f[j, 1] -= dy * inv
        v = v + dt * f
        x = x + dt * v
    return np.sum(x * x) + np.sum(v * v)


# ------------------------------------------------------------ while-loop / break solvers

def fixed_point_break(c):
    # z = 0.5 cos(z) + c[i] by fixed-point iteration, stopped by break
    total = 0.0
    for i in range(c.shape[0]):
        z = 0.0
        for it in range(200):
            zn = 0.5 * math.cos(z) + c[i]
            if abs(zn - z) < 1e-13:
                z = zn
                break
            z = zn
        total = total + z * z
    return total


def sqrt_while(a):
    # Heron's method under a while loop, per element
    total = 0.0
    for i in range(a.shape[0]):
        x = a[i]
        while abs(x * x - a[i]) > 1e-12 * a[i]:
            x = 0.5 * (x + a[i] / x)
        total = total + x
    return total


# ------------------------------------------------------------ branches in loops

def clipped_loss(w, x, y):
    # piecewise loss with if / elif / else per element
    loss = 0.0
    for i in range(x.shape[0]):
        r = w * x[i] - y[i]
        if r < -1.0:
            loss = loss - r - 0.5
        elif r > 2.0:
            loss = loss + 2.0 * r - 2.0
        else:
            loss = loss + 0.5 * r * r
    return loss


def running_max(x):
    # running maximum and minimum, summed: a branch picks which element flows
    hi = x[0]
    lo = x[0]
    total = 0.0
    for i in range(1, x.shape[0]):
        if x[i] > hi:
            hi = x[i]
        if x[i] < lo:
            lo = x[i]
        total = total + hi - lo
    return total


def ema_cumsum(a, x):
    # cumulative recurrence written into an array
    c = np.zeros_like(x)
    c[0] = x[0]
    for i in range(1, x.shape[0]):
        c[i] = a * c[i - 1] + x[i]
    return np.sum(c * c)


def logsumexp_rows(X):
    # log-sum-exp of every row, max found with a branch, math.exp / math.log
    total = 0.0
    for i in range(X.shape[0]):
        m = X[i, 0]
        for j in range(1, X.shape[1]):
            if X[i, j] > m:
                m = X[i, j]
        s = 0.0
        for j in range(X.shape[1]):
            s += math.exp(X[i, j] - m)
        total += m + math.log(s)
    return total


def programs():
    rng = np.random.default_rng(0)
    H, D = 16, 8
    return [
        ("euler Van der Pol, scalar (2000 steps)", euler_vdp, (1.3, np.array([1.0, 0.5])), (0, 1)),
        ("euler on arrays y+h*(A@y-y**3) (16, 200 steps)", euler_array,
         (rng.normal(size=(16, 16)) / 4 - np.eye(16), rng.normal(size=16)), (0, 1)),
        ("velocity Verlet, array state (64, 300 steps)", verlet_array,
         (1.5, rng.normal(size=64), rng.normal(size=64)), (0, 1, 2)),
        ("damped pendulum math.sin (3000 steps)", pendulum, (9.81, 0.3, 1.2), (0, 1, 2)),
        ("wave 2-D, two time levels (32x32x15)", wave_2d, (rng.normal(size=(32, 32)), 0.2), (0, 1)),
        ("advection upwind, if on sign (200x40)", advection_upwind,
         (rng.normal(size=200), rng.normal(size=200)), (0, 1)),
        ("heat 1-D with slices (500x100)", heat_slices, (rng.normal(size=500), 0.2), (0, 1)),
        ("Lorenz-96 periodic indices (40, 100 steps)", lorenz96, (8.0, rng.normal(size=40)),
         (0, 1)),
        ("Gauss-Seidel in place (100x30)", gauss_seidel, (rng.normal(size=100), rng.normal(size=100)),
         (0, 1)),
        ("GRU-like numpy cell H=16 T=100", gru,
         (rng.normal(size=(H, H + D)) / 4, rng.normal(size=(H, H + D)) / 4,
          rng.normal(size=(H, H + D)) / 4, rng.normal(size=(100, D))), (0, 1, 2, 3)),
        ("Elman scalar loops H=16 T=50", elman_loops,
         (rng.normal(size=(H, H)) / 4, rng.normal(size=(H, D)) / 4, rng.normal(size=(50, D))),
         (0, 1, 2)),
        ("SGD logistic, weights carried (200x10, 3 epochs)", sgd_logistic,
         (rng.normal(size=10) / 3, rng.normal(size=(200, 10)), (rng.random(200) > 0.5) * 1.0),
         (0, 1)),
        ("n-body 2-D pairwise forces (n=60, 3 steps)", nbody_2d,
         (rng.normal(size=(60, 2)), rng.normal(size=(60, 2))), (0, 1)),
        ("fixed point with break (n=500)", fixed_point_break, (rng.normal(size=500),), (0,)),
        ("Heron sqrt while loop (n=2000)", sqrt_while, (rng.uniform(0.5, 4.0, size=2000),), (0,)),
        ("clipped loss if/elif/else (n=10,000)", clipped_loss,
         (0.9, rng.normal(size=10_000), rng.normal(size=10_000)), (0, 1, 2)),
        ("running max/min with branch (n=10,000)", running_max, (rng.normal(size=10_000),), (0,)),
        ("EMA recurrence into an array (n=10,000)", ema_cumsum, (0.9, rng.normal(size=10_000)), (0, 1)),
        ("logsumexp rows with math.exp (100x50)", logsumexp_rows, (rng.normal(size=(100, 50)),), (0,)),
    ]


def main(words):
    os.environ["S2SGRAD_CACHE_DIR"] = tempfile.mkdtemp(prefix="s2sgrad_heldout_")
    rows = []
    for name, fn, args, positions in programs():
        if words and not any(w in name or w in fn.__name__ for w in words):
            continue
        generated, first, _, _, t_fwd, t_gen = time_gradient(fn, args, positions)
        backend = generated.backend
        if generated.fallback_reason and backend != "numpy":
            backend += " (" + generated.fallback_reason.splitlines()[0][:60] + ")"
        rows.append([name, backend, f"{first:.1f} s", f"{t_fwd * 1e3:.3f}", f"{t_gen * 1e3:.3f}",
                     f"{t_gen / t_fwd:.2f}x"])
        print(f"done: {name}", file=sys.stderr)
    table(rows, ["program", "backend", "first call", "numba fwd ms", "s2sgrad ms", "vs fwd"])


if __name__ == "__main__":
    main(sys.argv[1:])
