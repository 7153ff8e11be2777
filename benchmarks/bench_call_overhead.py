"""What a repeated gradient or jvp call costs above the compiled code it runs.

    python benchmarks/bench_call_overhead.py [huber] [huber16] [rk4] [heat]
    python benchmarks/bench_call_overhead.py modes [huber16] [rk4]

For each loop workload of bench_workloads.py, three levels of the same computation:
the public call (``value_and_grad(fn, positions)(*args)``, ``s2sgrad.jvp(fn, args, v)``),
the loaded code called through ``Compiled`` (argument key, restorer) and the raw Numba
dispatcher, and the user's function compiled by Numba (the forward alone).  Each level runs
blocks of 3000 calls, the levels alternating, several rounds; the table gives the best
per-call (CPU) time of each level, the API's overhead above the raw dispatcher (issue 9: a
repeated call should cost <= 2 us above it) and the API's time over the forward's.

``modes``: the per-call time of every public transform of the workload (value_and_grad,
grad, jvp, vjp and its function, jacrev, jacfwd, hessian of the first argument, hvp,
jit, vmap over 4 copies of the arguments), the same alternating blocks: where one stands
against value_and_grad (the Jacobians and the Hessian do more work: one pass per
direction, or a batched sweep).
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


def mode_calls(fn, args):
    """(name, a call of the public transform) for each transform of ``fn`` at ``args``."""
    positions = tuple(range(len(args)))
    v = tuple(np.ones_like(a) if np.ndim(a) else 1.0 for a in args)
    made = {"value_and_grad": s2sgrad.value_and_grad(fn, positions),
            "grad": s2sgrad.grad(fn, positions), "jacrev": s2sgrad.jacrev(fn, positions),
            "jacfwd": s2sgrad.jacfwd(fn, positions), "hessian": s2sgrad.hessian(fn, 0),
            "jit": s2sgrad.jit(fn)}
    batch = tuple(np.stack([a] * 4) if np.ndim(a) else np.full(4, a) for a in args)
    mapped = s2sgrad.vmap(fn)

    def vjp():
        return s2sgrad.vjp(fn, *args)[1](1.0)
    calls = [(name, lambda f=f: f(*args)) for name, f in made.items()]
    return calls + [("jvp", lambda: s2sgrad.jvp(fn, args, v)), ("vjp", vjp),
                    ("hvp", lambda: s2sgrad.hvp(fn, args, v)),
                    ("vmap", lambda: mapped(*batch))]


def modes(words):
    rows = []
    for name, fn, args, _ in workloads():
        if name not in (words or ["huber16", "rk4"]):
            continue
        calls = mode_calls(fn, args)
        for _, call in calls:
            call()
            call()
        times = best_per_call([call for _, call in calls])
        rows += [[name, what, f"{t * 1e6:.1f}", f"{(t - times[0]) * 1e6:+.1f}"]
                 for (what, _), t in zip(calls, times)]
        print(f"done: {name}", file=sys.stderr)
    table(rows, ["workload", "call", "API us", "- value_and_grad us"])


def main(words):
    if "modes" in words:
        return modes([w for w in words if w != "modes"])
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
