"""What a repeated gradient or jvp call costs above the compiled code it runs.

    python benchmarks/bench_call_overhead.py [huber] [huber16] [rk4] [heat]

For each loop workload of bench_workloads.py, three levels of the same computation:
the public call (``value_and_grad(fn, positions)(*args)``, ``s2sgrad.jvp(fn, args, v)``),
the loaded code called through ``Compiled`` (argument key, restorer) and the raw Numba
dispatcher, and the user's function compiled by Numba (the forward alone).  Each level runs
blocks of 3000 calls, the levels alternating, several rounds; the table gives the best
per-call (CPU) time of each level, the API's overhead above the raw dispatcher (issue 9: a
repeated call should cost <= 2 us above it) and the API's time over the forward's.
"""
import sys
import time

import harness  # noqa: F401  (pins threads before numpy is imported)
import numba
import numpy as np

import s2sgrad
from harness import table
from bench_workloads import heat_copy_after, huber_path, rk4
from s2sgrad.api.forward import forward_function

CALLS, ROUNDS = 3000, 15


def workloads():
    rng = np.random.default_rng(0)
    return [
        ("huber", huber_path, (rng.normal(size=10_000), 0.5), (0, 1)),
        # the same code on 16 elements: the run is short, the overhead stands out
        ("huber16", huber_path, (rng.normal(size=16), 0.5), (0, 1)),
        ("rk4", rk4, (1.1, 0.4, np.array([1.0, 0.5])), (0, 1, 2)),
        ("heat", heat_copy_after, (rng.normal(size=500), 0.2), (0, 1)),
    ]


def best_per_call(levels):
    """Per level, the best (over rounds) mean seconds of one call, levels alternating;
    CPU time of this process, so that other processes sharing the cores count less."""
    best = [float("inf")] * len(levels)
    for _ in range(ROUNDS):
        for i, call in enumerate(levels):
            t0 = time.process_time()
            for _ in range(CALLS):
                call()
            best[i] = min(best[i], (time.process_time() - t0) / CALLS)
    return best


def grad_levels(fn, args, positions):
    g = s2sgrad.value_and_grad(fn, positions)
    g(*args)
    g(*args)
    free = [np.asarray(f.obj) for f in g._generated.free]
    code = [*args, *free]
    compiled, raw = g._compiled, g._compiled._jitted
    return [lambda: g(*args), lambda: compiled(*code), lambda: raw(*code)]


def jvp_levels(fn, args):
    v = tuple(np.ones_like(a) if np.ndim(a) else 1.0 for a in args)
    s2sgrad.jvp(fn, args, v)
    s2sgrad.jvp(fn, args, v)
    f = forward_function(fn, tuple(range(len(args))), False, False)
    code = [*args, *v]
    compiled, raw = f._compiled, f._compiled._jitted
    return [lambda: s2sgrad.jvp(fn, args, v), lambda: compiled(*code), lambda: raw(*code)]


def main(words):
    rows = []
    for name, fn, args, positions in workloads():
        if words and name not in words:
            continue
        forward = numba.njit(fn)
        forward(*args)
        for what, levels in (("value_and_grad", grad_levels(fn, args, positions)),
                             ("jvp", jvp_levels(fn, args))):
            api, compiled, raw, fwd = best_per_call(levels + [lambda: forward(*args)])
            rows.append([name, what, f"{fwd * 1e6:.1f}", f"{raw * 1e6:.1f}",
                         f"{compiled * 1e6:.1f}", f"{api * 1e6:.1f}",
                         f"{(api - raw) * 1e6:.1f}", f"{api / fwd:.2f}x"])
            print(f"done: {name} {what}", file=sys.stderr)
    table(rows, ["workload", "call", "numba forward us", "raw dispatcher us", "Compiled us",
                 "API us", "API - raw us", "API / forward"])


if __name__ == "__main__":
    main(sys.argv[1:])
