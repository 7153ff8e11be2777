"""Nested derivatives: a gradient called inside a function being differentiated (issue 19,
item 6; issue 20 wants them within 2x of JAX).

    python benchmarks/bench_nested.py [steps]

Two workloads written as GradBench's particle and saddle evals write them:

- particle: a particle pushed for ``steps`` steps by the force ``-grad(potential)(x, w)``
  of a potential whose parameter ``w`` is the outer variable; the outer derivative is
  ``grad(particle)(w)`` (and ``jacfwd``);
- saddle: ``min_x max_y payoff(x, y)``, ``y`` found by ``steps`` ascent steps of
  ``grad(payoff, 1)(x, y)``; the outer derivative is ``grad(saddle)(x, y0)``.

Each is timed against a hand-written numpy derivative of the same computation (forward
propagation of the Jacobians, timed in the same run) and against the function itself;
the table gives medians per call and the ratios.  The inner gradient's code is inlined
into the outer generated code (``compiler/front/derivative_calls.py``): one module,
compiled by Numba, with no Python-level call per step.  (Before, it was called through
its rule, ``api/inside.py``, a Python call per use: 1347 / 19032 / 17914 us.)
"""
import sys

import harness  # noqa: F401  (pins threads before numpy is imported)
import numpy as np

import s2sgrad as ms
from harness import median_time, table


def potential(p, w):
    d = p - w
    return 1.0 / np.sqrt(np.sum(d * d) + 0.5)


STEPS = int(sys.argv[1]) if len(sys.argv) > 1 else 20
DT = 0.1


def particle(w):
    x = np.array([1.0, 0.5])
    v = np.array([0.0, 0.3])
    for _ in range(STEPS):
        a = -ms.grad(potential)(x, w)
        v = v + DT * a
        x = x + DT * v
    return np.sum(x * x)


def particle_by_hand(w):
    """d particle / d w: the Jacobians of x and v w.r.t. w carried through the steps."""
    x, v = np.array([1.0, 0.5]), np.array([0.0, 0.3])
    jx, jv, eye = np.zeros((2, 2)), np.zeros((2, 2)), np.eye(2)
    for _ in range(STEPS):
        d = x - w
        s = d @ d + 0.5
        a = d * s ** -1.5                     # -grad of the potential
        da = s ** -1.5 * eye - 3.0 * s ** -2.5 * np.outer(d, d)
        ja = da @ (jx - eye)
        v = v + DT * a
        jv = jv + DT * ja
        x = x + DT * v
        jx = jx + DT * jv
    return 2.0 * x @ jx


def payoff(x, y):
    return np.sum(x * y) - 0.5 * np.sum(y * y) + np.sum(np.sin(x)) + 0.1 * np.sum(x * x * y)


ASCENT = ms.grad(payoff, 1)


def saddle(x, y0):
    y = y0
    for _ in range(STEPS):
        y = y + 0.5 * ASCENT(x, y)
    return payoff(x, y)


def saddle_by_hand(x, y0):
    """d saddle / d x: dy/dx (diagonal: every term is elementwise) carried through."""
    y, jy = y0.copy(), np.zeros_like(x)
    for _ in range(STEPS):
        g = x - y + 0.1 * x * x
        jy = jy + 0.5 * ((1.0 + 0.2 * x) - jy)
        y = y + 0.5 * g
    dfdx = y + np.cos(x) + 0.2 * x * y
    dfdy = x - y + 0.1 * x * x
    return dfdx + dfdy * jy


def main():
    w = np.array([0.2, -0.1])
    x, y0 = np.array([0.3, 0.7]), np.array([0.1, -0.2])
    grad_particle, jac_particle = ms.grad(particle), ms.jacfwd(particle)
    grad_saddle = ms.grad(saddle)
    np.testing.assert_allclose(grad_particle(w), particle_by_hand(w), rtol=1e-10)
    np.testing.assert_allclose(jac_particle(w), particle_by_hand(w), rtol=1e-10)
    np.testing.assert_allclose(grad_saddle(x, y0), saddle_by_hand(x, y0), rtol=1e-10)
    rows = []
    for name, ours, hand, plain, args in [
            ("particle grad", grad_particle, particle_by_hand, particle, (w,)),
            ("particle jacfwd", jac_particle, particle_by_hand, particle, (w,)),
            ("saddle grad", grad_saddle, saddle_by_hand, saddle, (x, y0))]:
        t_ours = median_time(ours, *args)
        t_hand = median_time(hand, *args)
        t_plain = median_time(plain, *args)
        rows.append([name, STEPS, f"{t_ours * 1e6:.0f}", f"{t_hand * 1e6:.0f}",
                     f"{t_plain * 1e6:.0f}", f"{t_ours / t_hand:.1f}",
                     f"{grad_particle.backend if 'particle' in name else grad_saddle.backend}"])
    table(rows, ["workload", "steps", "s2sgrad us", "hand numpy us", "function us",
                 "s2sgrad / hand", "backend"])


if __name__ == "__main__":
    main()
